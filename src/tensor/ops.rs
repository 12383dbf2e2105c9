//! Element-wise and row-wise operations: softmax, the SIMD-friendly `exp`, LayerNorm, RMSNorm,
//! and the activations (GELU in both forms, ReLU, sigmoid, SiLU).

use super::mat::Mat;

/// Numerically stable softmax of one row, in place (max subtracted; masked entries are −∞ and
/// become exactly 0). The exponentials in a loop of their own, so they compile to SIMD lanes
/// ([`exp_lanes`]); the sum stays in order.
pub fn softmax_in_place(row: &mut [f32]) {
    softmax_max_sum(row);
}

/// [`softmax_in_place`], returning the row's Shannon entropy in nats for one logarithm per row
/// instead of one per weight: with e_j = e^(s_j − max) and Z = Σ e_j, −Σ p_j ln p_j =
/// ln Z − Σ e_j (s_j − max) / Z, two non-negative terms (s_j ≤ max, Z ≥ 1), so nothing cancels; a
/// masked key (e_j = 0) adds nothing. `scores` is scratch space for the row's scores (kept
/// apart so that the exponentials stay one SIMD loop).
pub fn softmax_with_entropy(row: &mut [f32], scores: &mut Vec<f32>) -> f32 {
    scores.clear();
    scores.extend_from_slice(row);
    let Some((max, sum)) = softmax_max_sum(row) else { return row.first().copied().unwrap_or(0.0) };
    // Σ e_j·(s_j − max) in four running sums, so that it is SIMD.
    let term = |e: f32, s: f32| if e > 0.0 { e * (s - max) } else { 0.0 };
    let mut sums = [0.0f32; 4];
    let (mut p, mut s) = (row.chunks_exact(4), scores.chunks_exact(4));
    for (pc, sc) in (&mut p).zip(&mut s) {
        for l in 0..4 {
            sums[l] += term(pc[l], sc[l]);
        }
    }
    let tail: f32 = p.remainder().iter().zip(s.remainder()).map(|(&e, &s)| term(e, s)).sum();
    // The row now holds e_j / Z: Σ p_j (s_j − max) = Σ e_j (s_j − max) / Z.
    let weighted = (sums[0] + sums[1]) + (sums[2] + sums[3]) + tail;
    (sum.ln() - weighted).max(0.0)
}

/// The softmax of [`softmax_in_place`]; its row's max and Σ e^(s − max), or `None` when every
/// key is masked (the row is then 0, or NaN when a score was).
fn softmax_max_sum(row: &mut [f32]) -> Option<(f32, f32)> {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        // Every key masked: no weight anywhere. A row of NaN scores (f32::max skips NaN) stays
        // NaN, so that the forward's check names it instead of drawing zeros.
        let fill = if row.iter().any(|x| x.is_nan()) { f32::NAN } else { 0.0 };
        row.iter_mut().for_each(|x| *x = fill);
        return None;
    }
    row.iter_mut().for_each(|x| *x = exp_lanes(*x - max));
    let sum: f32 = row.iter().sum();
    let inv = 1.0 / sum;
    row.iter_mut().for_each(|x| *x *= inv);
    Some((max, sum))
}

/// `e^x` without a branch or a call, so that a loop over a slice becomes 4-lane SIMD: libm's
/// scalar `expf` took 18 % of a 512-token MiniLM forward in wasm (18.9 M exponentials in the
/// softmaxes). Cephes' `expf`: x = n·ln 2 + r (ln 2 split in two for an exact r), e^r by a
/// degree-7 polynomial on |r| ≤ ln 2 / 2, 2^n put into the exponent bits. Within 2 ulp of
/// `f32::exp` (tested); under −87.3 (e^x subnormal) it is 0, so −∞ gives exactly 0.
#[inline(always)]
pub fn exp_lanes(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let xc = if x > 88.37 { 88.37 } else { x }; // a NaN stays NaN
    let n = (xc * LOG2E + 0.5).floor();
    let r = xc - n * LN2_HI - n * LN2_LO;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let er = p * r * r + r + 1.0;
    // 2^n from the exponent field; n ∈ [−126, 127] for x ∈ [−87.3, 88.37].
    let two_n = f32::from_bits(((n as i32 + 127).max(1) as u32) << 23);
    if x < -87.33 {
        0.0
    } else {
        er * two_n
    }
}

/// `ln x` for a positive normal `x`, without a branch or a call, so that a loop over a slice
/// becomes 4-lane SIMD (the head scores' entropies with libm's scalar `logf` per weight: MiniLM's
/// 128-token attend in wasm ran 0.955× its time without them, 0.98× at 16). Cephes' `logf`: x = m·2^e with m ∈ [√½, √2), ln m by a
/// degree-8 polynomial in m − 1, e·ln 2 added in two parts. Within 2 ulp of `f32::ln` (tested).
#[inline(always)]
pub fn ln_lanes(x: f32) -> f32 {
    const SQRT_HALF: f32 = std::f32::consts::FRAC_1_SQRT_2;
    let bits = x.to_bits();
    // x = m·2^e with m ∈ [½, 1), then m ∈ [√½, √2) (one exponent moved where m < √½).
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f00_0000);
    let small = m < SQRT_HALF;
    let e = ((bits >> 23) & 0xff) as i32 - 126 - i32::from(small);
    let f = if small { m + m - 1.0 } else { m - 1.0 };
    let z = f * f;
    let p = ((((((((7.037_683_6e-2 * f - 1.151_461_e-1) * f + 1.167_699_9e-1) * f
        - 1.242_014_1e-1)
        * f
        + 1.424_932_3e-1)
        * f
        - 1.666_805_8e-1)
        * f
        + 2.000_071_4e-1)
        * f
        - 2.499_999_4e-1)
        * f
        + 3.333_333e-1)
        * f
        * z;
    let e = e as f32;
    let y = p + e * -2.121_944_4e-4 - 0.5 * z;
    f + y + e * 0.693_359_4
}

/// Shannon entropy of a row of probabilities, in nats: −Σ p·ln p over its p > 0 (a zero adds
/// nothing: 0 · ln of the smallest normal is 0). Four running sums, so that it is SIMD.
pub fn entropy(row: &[f32]) -> f32 {
    let term = |p: f32| -p * ln_lanes(p.max(f32::MIN_POSITIVE));
    let mut sums = [0.0f32; 4];
    let mut chunks = row.chunks_exact(4);
    for c in &mut chunks {
        for (s, &p) in sums.iter_mut().zip(c) {
            *s += term(p);
        }
    }
    let tail: f32 = chunks.remainder().iter().map(|&p| term(p)).sum();
    (sums[0] + sums[1]) + (sums[2] + sums[3]) + tail
}

/// LayerNorm over each row: `(x − mean) / sqrt(var + eps) · gamma + beta` (biased variance,
/// as PyTorch and Marian compute it).
pub fn layer_norm(x: &mut Mat, gamma: &[f32], beta: &[f32], eps: f32) {
    let c = x.cols();
    for row in x.as_mut_slice().chunks_exact_mut(c) {
        let mean = row.iter().sum::<f32>() / c as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / c as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

/// RMSNorm over each row: `x / sqrt(mean(x²) + eps) · gamma` (Llama).
pub fn rms_norm(x: &mut Mat, gamma: &[f32], eps: f32) {
    let c = x.cols();
    for row in x.as_mut_slice().chunks_exact_mut(c) {
        let ms = row.iter().map(|v| v * v).sum::<f32>() / c as f32;
        let inv = 1.0 / (ms + eps).sqrt();
        for (v, g) in row.iter_mut().zip(gamma) {
            *v = *v * inv * g;
        }
    }
}

/// Exact GELU, `x · Φ(x)` with Φ the normal CDF (BERT's "gelu"; the tanh form is measurably
/// off). Φ(x) = erfc(−x/√2)/2, with erfc from Numerical Recipes' `erfcc` (a Chebyshev fit,
/// relative error < 1.2e-7 for every argument, so the far negative tail keeps its precision)
/// over [`exp_lanes`]: branch-free, so `map_in_place(gelu)` runs in SIMD lanes (libm's `erff`
/// took 7 % of a 512-token MiniLM forward in wasm).
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    let z = x.abs() * std::f32::consts::FRAC_1_SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -1.265_512_2
        + t * (1.000_023_7
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_204
                                + t * (1.488_515_9 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let half_erfc = 0.5 * t * exp_lanes(poly - z * z); // Φ(−|x|)
    x * if x >= 0.0 { 1.0 - half_erfc } else { half_erfc }
}

/// GELU's tanh approximation, `x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))` (GPT-2's
/// "gelu_new", PyTorch's `gelu(approximate="tanh")`).
pub fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)).tanh())
}

pub fn relu(x: f32) -> f32 {
    x.max(0.0)
}

pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// SiLU (swish), `x · σ(x)`: the gate of Llama's SwiGLU feed-forward.
pub fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// Whether no value is NaN or ∞.
pub fn all_finite(v: &[f32]) -> bool {
    v.iter().all(|x| x.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_is_stable_and_sums_to_one() {
        let mut row = vec![1000.0, 1001.0, f32::NEG_INFINITY, 999.0];
        softmax_in_place(&mut row);
        assert_eq!(row[2], 0.0);
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(row[1] > row[0] && row[0] > row[3]);
    }

    #[test]
    fn softmax_returns_the_entropy_of_its_row() {
        let mut x = 7u32;
        for len in [1usize, 2, 3, 5, 8, 33, 512] {
            for spread in [0.01f32, 1.0, 8.0, 40.0] {
                let mut row: Vec<f32> = (0..len)
                    .map(|i| {
                        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                        if i % 7 == 3 && len > 1 {
                            f32::NEG_INFINITY
                        } else {
                            spread * ((x >> 8) as f32 / (1u32 << 24) as f32 - 0.5)
                        }
                    })
                    .collect();
                let h = softmax_with_entropy(&mut row, &mut Vec::new());
                let direct: f64 =
                    row.iter().filter(|&&p| p > 0.0).map(|&p| -(p as f64) * (p as f64).ln()).sum();
                assert!(
                    (h as f64 - direct).abs() <= 1e-5 * direct.max(1.0),
                    "len {len}, spread {spread}: {h} vs {direct}"
                );
            }
        }
        let mut masked = vec![f32::NEG_INFINITY; 3];
        assert_eq!(softmax_with_entropy(&mut masked, &mut Vec::new()), 0.0);
    }

    #[test]
    fn exp_lanes_is_within_two_ulp_of_exp() {
        let ulp = |v: f32| f32::from_bits(v.to_bits() + 1) - v;
        let mut worst = 0.0f32;
        for i in 0..=200_000 {
            let x = -87.0 + 175.0 * i as f32 / 200_000.0;
            let (got, want) = (exp_lanes(x), (x as f64).exp() as f32);
            worst = worst.max((got - want).abs() / ulp(want));
        }
        assert!(worst <= 2.0, "worst error {worst} ulp");
        assert_eq!(exp_lanes(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_lanes(-100.0), 0.0);
        assert_eq!(exp_lanes(0.0), 1.0);
        assert!(exp_lanes(f32::NAN).is_nan());
    }

    #[test]
    fn ln_lanes_is_within_two_ulp_of_ln() {
        let ulp = |v: f32| f32::from_bits(v.abs().to_bits() + 1) - v.abs();
        let mut worst = 0.0f32;
        // Every exponent of a normal f32, and a dense sweep of [2⁻¹⁰, 2) where weights live.
        let sweep = (0..=200_000).map(|i| 2f32.powf(-10.0 + 11.0 * i as f32 / 200_000.0));
        let octaves = (-126..=127).map(|e| 1.37 * 2f32.powi(e)).filter(|x| x.is_normal());
        for x in sweep.chain(octaves).chain([f32::MIN_POSITIVE, 1.0, 0.5, 2.0, f32::MAX]) {
            let (got, want) = (ln_lanes(x), (x as f64).ln() as f32);
            // (ln 1 = 0: an absolute error there, in ulp of 1)
            worst = worst.max((got - want).abs() / ulp(if want == 0.0 { 1.0 } else { want }));
        }
        assert!(worst <= 2.0, "worst error {worst} ulp");
        assert_eq!(ln_lanes(1.0), 0.0);
    }

    #[test]
    fn entropy_is_the_sum_of_minus_p_ln_p() {
        let row: Vec<f32> =
            (0..37).map(|i| if i % 5 == 0 { 0.0 } else { (i as f32).sqrt() }).collect();
        let total: f32 = row.iter().sum();
        let row: Vec<f32> = row.iter().map(|v| v / total).collect();
        let want: f64 =
            row.iter().filter(|&&p| p > 0.0).map(|&p| -(p as f64) * (p as f64).ln()).sum();
        assert!((entropy(&row) as f64 - want).abs() < 1e-6, "{} vs {want}", entropy(&row));
        assert_eq!(entropy(&[0.0, 1.0, 0.0]), 0.0);
        assert!((entropy(&[0.25; 4]) - 4f32.ln()).abs() < 1e-6);
    }

    #[test]
    fn gelu_keeps_its_relative_precision_in_both_tails() {
        // libm's erff form, x/2 · (1 + erf(x/√2)), loses every digit below x ≈ −5 (1 + erf cancels).
        let (mut worst_rel, mut worst_abs) = (0.0f64, 0.0f64);
        for i in 0..=40_000 {
            let x = -12.0 + 24.0 * i as f64 / 40_000.0;
            let want = 0.5 * x * libm::erfc(-x / std::f64::consts::SQRT_2);
            let got = gelu(x as f32) as f64;
            worst_abs = worst_abs.max((got - want).abs() / want.abs().max(1.0));
            if want.abs() > 1e-30 {
                worst_rel = worst_rel.max(((got - want) / want).abs());
            }
        }
        assert!(worst_abs < 5e-7, "worst error relative to max(1, |gelu|): {worst_abs}");
        assert!(worst_rel < 3e-5, "worst relative error {worst_rel}");
    }

    #[test]
    fn gelu_tanh_is_gpt2s_gelu_new() {
        // 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))) computed in f64.
        assert!((gelu_tanh(1.0) - 0.841_191_97).abs() < 1e-6);
        assert!((gelu_tanh(-0.5) - (-0.154_286)).abs() < 1e-6);
    }

    #[test]
    fn gelu_is_the_exact_erf_form() {
        // Reference values of x·Φ(x).
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!((gelu(-0.5) - (-0.154_268_58)).abs() < 1e-6);
    }
}

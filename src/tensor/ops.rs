//! Element-wise and row-wise operations: softmax, the SIMD-friendly `exp`, LayerNorm, RMSNorm,
//! and the activations (GELU in both forms, ReLU, sigmoid, SiLU).

use super::mat::Mat;

/// Numerically stable softmax of one row, in place (max subtracted; masked entries are −∞ and
/// become exactly 0). The exponentials in a loop of their own, so they compile to SIMD lanes
/// ([`exp_lanes`]); the sum stays in order.
pub fn softmax_in_place(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        // Every key masked: no weight anywhere. A row of NaN scores (f32::max skips NaN) stays
        // NaN, so that the forward's check names it instead of drawing zeros.
        let fill = if row.iter().any(|x| x.is_nan()) { f32::NAN } else { 0.0 };
        row.iter_mut().for_each(|x| *x = fill);
        return;
    }
    row.iter_mut().for_each(|x| *x = exp_lanes(*x - max));
    let sum: f32 = row.iter().sum();
    let inv = 1.0 / sum;
    row.iter_mut().for_each(|x| *x *= inv);
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

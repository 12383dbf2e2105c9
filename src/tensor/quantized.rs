//! Weights as a model holds them ([`WeightMatrix`]): f32, int8 with per-row scales
//! ([`QuantizedMat`]), or GGML blocks inside a GGUF file's bytes ([`BlockMat`], whose formats are
//! in [`crate::weights::ggml`]), and their products through the one kernel: int8 and blocks
//! are widened or decoded next to it, never dequantised at load.

use super::gemm::{linear, linear_by_panels, matmul_bt, OutPtr, PANEL_FROM_ROWS};
use super::lanes::F4;
use super::mat::{Mat, View};
use crate::weights::ggml::{BlockFormat, BlockMat};

/// An int8 matrix `[rows, cols]` whose real values are `data[r] · scales[r]`: one f32 scale per
/// row (an output of `x · Wᵀ`, or an embedding). Marian's intgemm models have one scale per
/// matrix, which is the same scale repeated ([`QuantizedMat::per_matrix`]); MiniLM's int8 file has
/// one per row. Kept quantised so the GEMM streams a quarter of the bytes (the translator's
/// 32000-row output projection: 8 MB instead of 33 MB per decode step); products are still f32
/// (`scale · Σ a·q`), activations are never quantised.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizedMat {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<i8>,
    pub scales: Vec<f32>,
}

impl QuantizedMat {
    pub fn per_matrix(rows: usize, cols: usize, data: Vec<i8>, scale: f32) -> QuantizedMat {
        QuantizedMat { rows, cols, data, scales: vec![scale; rows] }
    }

    /// Row `r` dequantised into `out` (an embedding lookup: only the rows used are decoded).
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) {
        let scale = self.scales[r];
        for (o, &q) in out.iter_mut().zip(&self.data[r * self.cols..(r + 1) * self.cols]) {
            *o = q as f32 * scale;
        }
    }
}

impl<'a> View<'a, i8> {
    pub fn of_quantized(m: &'a QuantizedMat) -> View<'a, i8> {
        View { data: &m.data, offset: 0, rows: m.rows, cols: m.cols, stride: m.cols }
    }
}

/// `x · (scales ⊙ Q)ᵀ (+ bias)` for an int8 weight `[out, in]`, through the one kernel. Few rows
/// of `x` (a short text, a decode step): int8 widened to f32 in registers, each output column
/// scaled once after its dot products, bias in the same pass. From `PANEL_FROM_ROWS` rows on,
/// the widening would be repeated for every four rows of `x`, so rows are decoded (scaled) a
/// panel at a time as for GGUF blocks (measured in wasm at 128 tokens: the in-register path ran
/// at 0.80× the f32 weights' speed). The two orders differ by float rounding only.
pub fn linear_quantized(x: &Mat, weight: &QuantizedMat, bias: Option<&[f32]>) -> Mat {
    if x.rows() >= PANEL_FROM_ROWS {
        let mut y =
            linear_by_panels(x, weight.rows, weight.cols, |r, out| weight.dequantize_row(r, out));
        if let Some(b) = bias {
            y.add_row_vector(b);
        }
        return y;
    }
    let mut y = Mat::zeros(x.rows(), weight.rows);
    let stride = y.cols();
    matmul_bt(View::of(x), View::of_quantized(weight), y.as_mut_slice(), 0, stride);
    for r in 0..y.rows() {
        let row = y.row_mut(r);
        match bias {
            Some(b) => {
                row.iter_mut().zip(&weight.scales).zip(b).for_each(|((v, s), b)| *v = *v * s + b)
            }
            None => row.iter_mut().zip(&weight.scales).for_each(|(v, s)| *v *= s),
        }
    }
    y
}

/// `x · Wᵀ` for a block-format weight `[out, in]`. Few rows (a generated token): quantised
/// blocks are decoded in registers ([`block_dots`]). Many rows, or f32/f16 weights: rows are
/// decoded a panel at a time and handed to the one GEMM kernel. The two orders of summation
/// differ by float rounding only (≤ 1e-6 relative).
pub fn linear_blocks(x: &Mat, w: &BlockMat) -> Mat {
    assert_eq!(x.cols(), w.cols, "linear_blocks: inner dimensions differ");
    if w.format.block_len() == 32 && x.rows() < PANEL_FROM_ROWS {
        let mut y = Mat::zeros(x.rows(), w.rows);
        quantized_gemm(x, w, y.as_mut_slice());
        return y;
    }
    linear_by_panels(x, w.rows, w.cols, |r, out| w.dequantize_row(r, out))
}

/// Weight rows a thread takes at a time in [`quantized_gemm`] (enough to amortise waking a helper).
const QUANTIZED_ROWS_PER_CHUNK: usize = 256;

/// `out = x · Wᵀ` for a weight in 32-value blocks (Q4_0, Q4_1, Q8_0): each weight row's blocks
/// are decoded once for up to four rows of `x` (a group of 4, then the last 1–3 together: typing
/// feeds 1–3 new tokens, which then cost about one). Weight rows go to the pool's threads in
/// chunks; every value is computed as on one thread.
fn quantized_gemm(x: &Mat, w: &BlockMat, out: &mut [f32]) {
    let (m, n, blocks) = (x.rows(), w.rows, w.cols / 32);
    assert!(out.len() >= m * n, "quantized_gemm: output too small");
    // Σ of each 32-value block of each row of x: the offset term (m·Σx) of every block.
    let sums: Vec<f32> = x.as_slice().chunks_exact(32).map(|c| c.iter().sum()).collect();
    let sums_of = |i: usize| &sums[i * blocks..(i + 1) * blocks];
    let out = OutPtr(out.as_mut_ptr());
    let threads = crate::pool::threads();
    let chunks = if threads > 1 { n.div_ceil(QUANTIZED_ROWS_PER_CHUNK) } else { 1 };
    let per_chunk = n.div_ceil(chunks);
    crate::pool::for_each_chunk(chunks, &|c| {
        for j in c * per_chunk..((c + 1) * per_chunk).min(n) {
            let row = w.row_bytes_of(j);
            let put = |i: usize, values: &[f32]| {
                for (d, &v) in values.iter().enumerate() {
                    // SAFETY: (i + d, j) < (m, n) and chunks own disjoint columns j.
                    unsafe { *out.at((i + d) * n + j) = v };
                }
            };
            let mut i = 0;
            while i + 4 <= m {
                let rows = std::array::from_fn(|d| x.row(i + d));
                put(
                    i,
                    &block_dots::<4>(w.format, row, rows, std::array::from_fn(|d| sums_of(i + d))),
                );
                i += 4;
            }
            match m - i {
                3 => put(
                    i,
                    &block_dots::<3>(
                        w.format,
                        row,
                        [x.row(i), x.row(i + 1), x.row(i + 2)],
                        [sums_of(i), sums_of(i + 1), sums_of(i + 2)],
                    ),
                ),
                2 => put(
                    i,
                    &block_dots::<2>(
                        w.format,
                        row,
                        [x.row(i), x.row(i + 1)],
                        [sums_of(i), sums_of(i + 1)],
                    ),
                ),
                1 => put(i, &block_dots::<1>(w.format, row, [x.row(i)], [sums_of(i)])),
                _ => {}
            }
        }
    });
}

/// IEEE half → single for a finite half (every block's scale and offset: a GGUF's tensors are
/// checked finite as they load), without the branches of [`crate::weights::ggml::f16_to_f32`]: exponent and mantissa
/// shifted into an f32's place, rescaled by 2^112 (exact, subnormals included), the sign put back.
#[inline(always)]
fn finite_half(h: u16) -> f32 {
    let two_pow_112 = f32::from_bits(0x7780_0000); // (a const fn only since Rust 1.83)
    let magnitude = f32::from_bits(u32::from(h & 0x7fff) << 13) * two_pow_112;
    f32::from_bits(magnitude.to_bits() | (u32::from(h & 0x8000) << 16))
}

/// `R` dot products of activation rows with one weight row of 32-value blocks. Per block:
/// Σ a·q in 4-lane accumulators, scaled by the block's d after the sum, plus its offset
/// (Q4_1's m, Q4_0's −8d) times the block's Σ a. Each row's order of operations is the same
/// whatever `R`.
#[inline(always)]
fn block_dots<const R: usize>(
    format: BlockFormat,
    w: &[u8],
    a: [&[f32]; R],
    sums: [&[f32]; R],
) -> [f32; R] {
    let bb = format.block_bytes();
    let blocks = w.len() / bb;
    assert!(a.iter().all(|r| r.len() >= blocks * 32) && sums.iter().all(|s| s.len() >= blocks));
    let half = |b: &[u8]| finite_half(u16::from_le_bytes([b[0], b[1]]));
    let mut total = [F4::zero(); R];
    let mut offsets = [0.0f32; R];
    for (b, blk) in w.chunks_exact(bb).enumerate() {
        let d = half(blk);
        // SAFETY: a block holds its 2–4 header bytes then 16 (Q4) or 32 (Q8) bytes of values.
        let (q, offset) = unsafe {
            match format {
                BlockFormat::Q4_0 => (F4::nibbles32(blk.as_ptr().add(2)), -8.0 * d),
                BlockFormat::Q4_1 => (F4::nibbles32(blk.as_ptr().add(4)), half(&blk[2..])),
                _ => (F4::int8x32(blk.as_ptr().add(2)), 0.0),
            }
        };
        let ds = F4::splat(d);
        for r in 0..R {
            let mut acc = F4::zero();
            for (v, qv) in q.iter().enumerate() {
                // SAFETY: the row holds blocks·32 ≥ b·32 + 32 values (asserted above).
                acc = acc.mul_add(unsafe { F4::load(a[r].as_ptr().add(b * 32 + 4 * v)) }, *qv);
            }
            total[r] = total[r].mul_add(acc, ds);
            offsets[r] += offset * sums[r][b];
        }
    }
    std::array::from_fn(|r| total[r].sum() + offsets[r])
}

/// A weight matrix as a model holds it: f32 (safetensors, any float dtype converted at load),
/// int8 with per-row scales (MiniLM's int8 file, Marian) or in its file's block format (GGUF).
/// Every product goes through the one GEMM kernel whatever the storage.
#[derive(Clone, Debug)]
pub enum WeightMatrix {
    F32(Mat),
    Int8(QuantizedMat),
    Blocks(BlockMat),
}

impl WeightMatrix {
    pub fn rows(&self) -> usize {
        match self {
            WeightMatrix::F32(m) => m.rows(),
            WeightMatrix::Int8(q) => q.rows,
            WeightMatrix::Blocks(b) => b.rows,
        }
    }

    pub fn cols(&self) -> usize {
        match self {
            WeightMatrix::F32(m) => m.cols(),
            WeightMatrix::Int8(q) => q.cols,
            WeightMatrix::Blocks(b) => b.cols,
        }
    }

    /// `x · Wᵀ (+ bias)`
    pub fn linear(&self, x: &Mat, bias: Option<&[f32]>) -> Mat {
        match self {
            WeightMatrix::F32(m) => linear(x, m, bias),
            WeightMatrix::Int8(q) => linear_quantized(x, q, bias),
            WeightMatrix::Blocks(b) => {
                let mut y = linear_blocks(x, b);
                if let Some(bias) = bias {
                    y.add_row_vector(bias);
                }
                y
            }
        }
    }

    /// `x · W[:, start .. start + x.cols]ᵀ` into `out` `[x.rows, self.rows]` (one head's
    /// values through its slice of Wᴼ). Blocks cannot be sliced by column: they are decoded
    /// first (the value norms' rare path).
    pub fn matmul_cols(&self, x: &Mat, start: usize, out: &mut [f32]) {
        let (n, len) = (self.rows(), x.cols());
        match self {
            WeightMatrix::F32(m) => matmul_bt(View::of(x), View::cols_of(m, start, len), out, 0, n),
            WeightMatrix::Int8(q) => {
                let b =
                    View { data: &q.data, offset: start, rows: q.rows, cols: len, stride: q.cols };
                matmul_bt(View::of(x), b, out, 0, n);
                out.chunks_exact_mut(n)
                    .for_each(|row| row.iter_mut().zip(&q.scales).for_each(|(v, s)| *v *= s));
            }
            WeightMatrix::Blocks(_) => WeightMatrix::F32(self.to_mat()).matmul_cols(x, start, out),
        }
    }

    /// The whole matrix as f32 (a copy, decoded).
    pub fn to_mat(&self) -> Mat {
        match self {
            WeightMatrix::F32(m) => m.clone(),
            _ => {
                let (rows, cols) = (self.rows(), self.cols());
                let mut data = vec![0.0; rows * cols];
                data.chunks_exact_mut(cols).enumerate().for_each(|(r, row)| self.row_into(r, row));
                Mat::from_vec(rows, cols, data)
            }
        }
    }

    /// Row `r` as f32 (an embedding lookup).
    pub fn row_into(&self, r: usize, out: &mut [f32]) {
        match self {
            WeightMatrix::F32(m) => out.copy_from_slice(m.row(r)),
            WeightMatrix::Int8(q) => q.dequantize_row(r, out),
            WeightMatrix::Blocks(b) => b.dequantize_row(r, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::pseudo_random;

    #[test]
    fn quantized_gemm_equals_dequantized_product() {
        // Per-row scales; a per-matrix scale is the same path with the scale repeated.
        let scales = (0..9).map(|r| 0.01 + 0.003 * r as f32).collect();
        let q = QuantizedMat {
            rows: 9,
            cols: 13,
            data: (0..117).map(|i| ((i * 37) % 255) as u8 as i8).collect(),
            scales,
        };
        let deq = Mat::from_vec(
            9,
            13,
            q.data.iter().enumerate().map(|(i, &v)| v as f32 * q.scales[i / 13]).collect(),
        );
        // 5 rows: scaled after the sum in registers; 20 rows: decoded a panel at a time.
        for rows in [5, 20] {
            let x = pseudo_random(rows, 13, 9);
            let a = linear_quantized(&x, &q, Some(&[0.5; 9]));
            let b = linear(&x, &deq, Some(&[0.5; 9]));
            for (u, v) in a.as_slice().iter().zip(b.as_slice()) {
                assert!((u - v).abs() < 1e-5, "{u} vs {v}");
            }
        }
        let mut row = vec![0.0; 13];
        q.dequantize_row(2, &mut row);
        assert_eq!(row, deq.row(2));
    }

    #[test]
    fn finite_halves_decode_as_the_general_decoder_does() {
        use crate::weights::ggml::f16_to_f32;
        for h in 0..=u16::MAX {
            let want = f16_to_f32(h);
            if want.is_finite() {
                assert_eq!(finite_half(h).to_bits(), want.to_bits(), "half {h:#06x}");
            }
        }
    }

    #[test]
    fn block_gemm_equals_the_f32_gemm_on_decoded_rows() {
        let (rows, cols) = (37, 64);
        let bytes: Vec<u8> = (0..rows * 40).map(|i| ((i * 73 + 11) % 251) as u8).collect();
        // Keep the f16 scales finite and small: byte pairs 0..4 of each block.
        let mut bytes = bytes;
        for blk in bytes.chunks_exact_mut(20) {
            blk[..4].copy_from_slice(&[0x00, 0x30, 0x00, 0xb0]);
        }
        let shared = std::sync::Arc::new(bytes);
        let w = BlockMat::new(rows, cols, BlockFormat::Q4_1, shared.clone(), 0).unwrap();
        let mut dense = vec![0.0; rows * cols];
        for (r, row) in dense.chunks_exact_mut(cols).enumerate() {
            w.dequantize_row(r, row);
        }
        let dense = Mat::from_vec(rows, cols, dense);
        for m in [2, 3, 5, 7, 9] {
            // 2–7 rows: decoded in registers (groups of 4, then the last 1–3 together); 9: panels.
            let x = pseudo_random(m, cols, 21);
            let (fast, exact) = (linear_blocks(&x, &w), linear(&x, &dense, None));
            for (u, v) in fast.as_slice().iter().zip(exact.as_slice()) {
                assert!((u - v).abs() <= 1e-5 * v.abs().max(1.0), "{m} rows: {u} vs {v}");
            }
            // A row alone gives what it gives in a batch of fewer than PANEL_FROM_ROWS.
            let one = linear_blocks(&Mat::from_vec(1, cols, x.row(m - 1).to_vec()), &w);
            if m < PANEL_FROM_ROWS {
                assert_eq!(one.row(0), fast.row(m - 1));
                assert_eq!(
                    linear_blocks(&Mat::from_vec(1, cols, x.row(0).to_vec()), &w).row(0),
                    fast.row(0)
                );
            }
        }
        for format in [BlockFormat::Q4_0, BlockFormat::Q8_0] {
            let rb = format.row_bytes(cols).unwrap();
            let mut bytes: Vec<u8> = (0..rows * rb).map(|i| ((i * 31 + 7) % 253) as u8).collect();
            for blk in bytes.chunks_exact_mut(format.block_bytes()) {
                blk[..2].copy_from_slice(&[0x00, 0x2c]);
            }
            let w = BlockMat::new(rows, cols, format, std::sync::Arc::new(bytes), 0).unwrap();
            let mut dense = vec![0.0; rows * cols];
            for (r, row) in dense.chunks_exact_mut(cols).enumerate() {
                w.dequantize_row(r, row);
            }
            let x = pseudo_random(3, cols, 5);
            let (fast, exact) =
                (linear_blocks(&x, &w), linear(&x, &Mat::from_vec(rows, cols, dense), None));
            for (u, v) in fast.as_slice().iter().zip(exact.as_slice()) {
                assert!((u - v).abs() <= 1e-5 * v.abs().max(1.0), "{format:?}: {u} vs {v}");
            }
        }
        assert!(BlockMat::new(rows + 1, cols, BlockFormat::Q4_1, shared, 0).is_none());
    }
}

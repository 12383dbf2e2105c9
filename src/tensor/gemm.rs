//! The one GEMM kernel every layer uses (projections, attention scores, attention × V,
//! logits): `out = A · Bᵀ` with both operands row-major, so each output element is a dot
//! product of two contiguous rows. That shape vectorises without any re-association tricks:
//! the kernel keeps independent 4-lane accumulators ([`super::lanes`]), with the same lane
//! split and reduction order whatever the block, so a value never depends on the block that
//! computed it (tested bit for bit). nalgebra's own `tr_mul` reduces each dot product in one
//! scalar chain; `benches/forward.rs` measures the difference.

use super::lanes::{Element, F4};
use super::mat::{Mat, View};

/// Register-tiled micro-kernel: the `R × C` dot products of `R` rows of A with `C` rows of B,
/// all of length `n`, sharing every load. Each dot product uses one 4-lane accumulator, the
/// same lane split and the same reduction order whatever `R` and `C` are, so a value never
/// depends on the block that computed it (a one-row decode step equals the batched row bit
/// for bit).
#[inline(always)]
fn dots<const R: usize, const C: usize, T: Element>(
    a: [&[f32]; R],
    b: [&[T]; C],
    n: usize,
) -> [[f32; C]; R] {
    assert!(a.iter().all(|r| r.len() >= n) && b.iter().all(|r| r.len() >= n));
    let main = n - n % 4;
    let mut acc = [[F4::zero(); C]; R];
    let mut p = 0;
    while p < main {
        // SAFETY: every row holds at least n ≥ p + 4 values (asserted above).
        let bv: [F4; C] = std::array::from_fn(|c| unsafe { T::load4(b[c].as_ptr().add(p)) });
        for r in 0..R {
            let av = unsafe { F4::load(a[r].as_ptr().add(p)) };
            for c in 0..C {
                acc[r][c] = acc[r][c].mul_add(av, bv[c]);
            }
        }
        p += 4;
    }
    let mut out = [[0.0f32; C]; R];
    for r in 0..R {
        for c in 0..C {
            let mut s = acc[r][c].sum();
            for q in main..n {
                s += a[r][q] * b[c][q].to_f32();
            }
            out[r][c] = s;
        }
    }
    out
}

/// The one GEMM: `out[i, j] = Σ_p a[i, p] · b[j, p]` (i.e. `A · Bᵀ`), written into the strided
/// view `out` (`out_offset + i * out_stride + j`). Shapes are the caller's contract.
///
/// B (usually the weight) is the outer loop: a block of its rows stays in L1 while every row
/// of A (a handful of tokens) streams past, so each weight is read from memory once per call.
/// Rows of A go four at a time against two rows of B (8 independent accumulators); the last
/// `m mod 4` rows — all of them in a one-token decode step — go one at a time against eight
/// rows of B, again 8 accumulators, so neither case waits on a single add chain.
pub fn matmul_bt<T: Element>(
    a: View,
    b: View<T>,
    out: &mut [f32],
    out_offset: usize,
    out_stride: usize,
) {
    assert_eq!(a.cols, b.cols, "matmul_bt: inner dimensions differ");
    let (m, n, k) = (a.rows, b.rows, a.cols);
    if m == 0 || n == 0 {
        return;
    }
    assert!(out_offset + (m - 1) * out_stride + n <= out.len(), "matmul_bt: output too small");
    let out = OutPtr(out.as_mut_ptr());
    // Column blocks of B go to the pool's threads; every value is computed exactly as on one
    // thread (the split never changes which rows or lanes a dot product uses).
    let threads = crate::pool::threads();
    let blocks = n.div_ceil(8);
    let chunks =
        if threads > 1 && m * n * k >= PARALLEL_FROM_MACS { blocks.min(4 * threads) } else { 1 };
    let per_chunk = blocks.div_ceil(chunks);
    crate::pool::for_each_chunk(chunks, &|c| {
        let cols = (c * per_chunk * 8).min(n)..((c + 1) * per_chunk * 8).min(n);
        // SAFETY: chunks write disjoint columns of rows inside `out` (checked above).
        unsafe { matmul_bt_cols(a, b, out, out_offset, out_stride, cols) }
    });
}

/// Bytes of A's rows that [`matmul_bt_cols`] keeps together (see there): measured in wasm.
const A_BLOCK_BYTES: usize = 128 * 1024;

/// Multiply-adds below which a GEMM stays on one thread (waking helpers costs microseconds).
pub(crate) const PARALLEL_FROM_MACS: usize = 1 << 20;

/// The output of a GEMM shared by the threads that each write their own columns of it.
#[derive(Clone, Copy)]
pub(crate) struct OutPtr<T = f32>(pub(crate) *mut T);
// SAFETY: used only where the chunks write disjoint elements (matmul_bt, linear_by_panels,
// nn::attention).
unsafe impl<T> Sync for OutPtr<T> {}
unsafe impl<T> Send for OutPtr<T> {}

impl<T> OutPtr<T> {
    /// The element `i` places on (a method, so closures capture the `Sync` wrapper, not the pointer).
    pub(crate) fn at(self, i: usize) -> *mut T {
        self.0.wrapping_add(i)
    }
}

/// Columns `cols` of [`matmul_bt`]'s output.
///
/// # Safety
/// Every `out_offset + i * out_stride + j` (i < a.rows, j in cols) is inside the caller's
/// output, and no other thread writes those elements meanwhile.
pub(crate) unsafe fn matmul_bt_cols<T: Element>(
    a: View,
    b: View<T>,
    out: OutPtr,
    out_offset: usize,
    out_stride: usize,
    cols: std::ops::Range<usize>,
) {
    let (m, k) = (a.rows, a.cols);
    let m4 = m - m % 4;
    let put = |i: usize, j: usize, v: f32| *out.0.add(out_offset + i * out_stride + j) = v;
    // Rows 0..m4 a block at a time, the block small enough to stay in L2 while every column
    // of B passes it: at 512 tokens all of A (768 KiB) did not, and was read again from L3
    // for every pair of B rows.
    let block = (A_BLOCK_BYTES / (4 * k.max(1)) / 4 * 4).max(4);
    for i0 in (0..m4).step_by(block) {
        let i1 = (i0 + block).min(m4);
        let mut j = cols.start;
        while j < cols.end {
            let width = (cols.end - j).min(8);
            // Four rows at a time, against B rows j..j+width in pairs.
            let mut c = j;
            while c < j + width {
                let mut i = i0;
                while i < i1 {
                    let ar = [a.row(i), a.row(i + 1), a.row(i + 2), a.row(i + 3)];
                    if c + 1 < j + width {
                        let r = dots(ar, [b.row(c), b.row(c + 1)], k);
                        for (di, rr) in r.iter().enumerate() {
                            put(i + di, c, rr[0]);
                            put(i + di, c + 1, rr[1]);
                        }
                    } else {
                        let r = dots(ar, [b.row(c)], k);
                        for (di, rr) in r.iter().enumerate() {
                            put(i + di, c, rr[0]);
                        }
                    }
                    i += 4;
                }
                c += 2;
            }
            j += width;
        }
    }
    // The remaining rows one at a time, against eight B rows at once.
    let mut j = cols.start;
    while j < cols.end {
        let width = (cols.end - j).min(8);
        for i in m4..m {
            if width == 8 {
                let r = dots([a.row(i)], std::array::from_fn::<_, 8, _>(|d| b.row(j + d)), k);
                for (d, v) in r[0].iter().enumerate() {
                    put(i, j + d, *v);
                }
            } else {
                for c in j..j + width {
                    put(i, c, dots([a.row(i)], [b.row(c)], k)[0][0]);
                }
            }
        }
        j += width;
    }
}

/// `x · Wᵀ (+ bias)` for a PyTorch-layout weight `[out, in]`.
pub fn linear(x: &Mat, weight: &Mat, bias: Option<&[f32]>) -> Mat {
    let mut y = Mat::zeros(x.rows(), weight.rows());
    let stride = y.cols();
    matmul_bt(View::of(x), View::of(weight), y.as_mut_slice(), 0, stride);
    if let Some(b) = bias {
        y.add_row_vector(b);
    }
    y
}

/// Rows of a block-format weight decoded per call of the kernel: 16 rows × up to 1,536 values
/// is 96 KiB, in L2, reused by every row of the activations.
pub(super) const BLOCK_PANEL_ROWS: usize = 16;

/// From this many rows of activations on, decoding a panel of weight rows once and running the
/// f32 kernel beats decoding each block in registers for every four rows (measured in wasm:
/// a 28-token SmolLM2 prompt 600 → 260 ms; one generated token 70 → 36 ms the other way).
pub(super) const PANEL_FROM_ROWS: usize = 8;

thread_local! {
    /// Each thread's decoded panel, reused: a fresh one per panel (96 per int8 linear) was an
    /// allocation and a zeroing each, 3 % of a 16-token forward.
    static PANEL: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `x · Wᵀ` for a weight `[rows, cols]` stored in a compact form: `decode_row` writes row r as
/// f32, a panel of [`BLOCK_PANEL_ROWS`] rows at a time, each panel then handed to the one GEMM
/// kernel, so the decoding is paid once per weight row whatever the number of rows of `x`.
pub(super) fn linear_by_panels(
    x: &Mat,
    rows: usize,
    cols: usize,
    decode_row: impl Fn(usize, &mut [f32]) + Sync,
) -> Mat {
    let mut y = Mat::zeros(x.rows(), rows);
    let stride = y.cols();
    let out = OutPtr(y.as_mut_slice().as_mut_ptr());
    // Panels go to the pool's threads whole: each decodes its rows and writes its columns.
    crate::pool::for_each_chunk(rows.div_ceil(BLOCK_PANEL_ROWS), &|p| {
        let start = p * BLOCK_PANEL_ROWS;
        let n = (rows - start).min(BLOCK_PANEL_ROWS);
        PANEL.with_borrow_mut(|buf| {
            if buf.len() < n * cols {
                buf.resize(n * cols, 0.0);
            }
            let panel = &mut buf[..n * cols];
            for (i, row) in panel.chunks_exact_mut(cols).enumerate() {
                decode_row(start + i, row);
            }
            let b = View { data: panel, offset: 0, rows: n, cols, stride: cols };
            // SAFETY: panel p writes columns start..start + n of every row of y, and no other.
            unsafe { matmul_bt_cols(View::of(x), b, out, start, stride, 0..n) }
        })
    });
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::pseudo_random;

    fn naive_bt(a: &Mat, b: &Mat) -> Mat {
        let mut out = Mat::zeros(a.rows(), b.rows());
        for i in 0..a.rows() {
            for j in 0..b.rows() {
                let s: f64 =
                    a.row(i).iter().zip(b.row(j)).map(|(x, y)| *x as f64 * *y as f64).sum();
                out.row_mut(i)[j] = s as f32;
            }
        }
        out
    }

    #[test]
    fn gemm_matches_naive_for_odd_shapes() {
        for &(m, n, k) in &[(1, 1, 1), (3, 5, 7), (4, 9, 8), (17, 13, 33), (2, 64, 384)] {
            let a = pseudo_random(m, k, 1 + m as u32);
            let b = pseudo_random(n, k, 7 + n as u32);
            let fast = linear(&a, &b, None);
            let slow = naive_bt(&a, &b);
            for (x, y) in fast.as_slice().iter().zip(slow.as_slice()) {
                assert!((x - y).abs() < 1e-4, "{m}x{n}x{k}: {x} vs {y}");
            }
        }
    }

    #[test]
    fn single_rows_equal_batched_rows_bit_for_bit() {
        let a = pseudo_random(6, 40, 3);
        let b = pseudo_random(11, 40, 4);
        let all = linear(&a, &b, None);
        for r in 0..6 {
            let one = linear(&Mat::from_vec(1, 40, a.row(r).to_vec()), &b, None);
            assert_eq!(one.row(0), all.row(r));
        }
    }
}

//! The bottom of the numeric stack: a row-major matrix on nalgebra storage, the one GEMM
//! kernel every layer uses (projections, attention scores, attention × V, logits), the one
//! scaled-dot-product attention routine, and the element-wise pieces (softmax, LayerNorm,
//! GELU, ReLU).
//!
//! Every product in the models is `out = A · Bᵀ` with both operands row-major, so each output
//! element is a dot product of two contiguous rows. That shape vectorises without any
//! re-association tricks: the kernel keeps independent 4-lane accumulators that map to one
//! `f32x4` each under wasm SIMD128 (explicit intrinsics) and to SSE on native (LLVM's SLP
//! vectoriser on `[f32; 4]`). nalgebra's own `tr_mul` reduces each dot product in one scalar
//! chain; `benches/forward.rs` measures the difference.

use nalgebra::DMatrix;

/// A row-major `[rows, cols]` f32 matrix. nalgebra is column-major, so the matrix is stored as
/// its transpose (`cols × rows`): each nalgebra column is one of our rows, and rows are
/// contiguous — which is what the dot-product kernel wants.
#[derive(Clone, Debug, PartialEq)]
pub struct Mat {
    storage: DMatrix<f32>,
}

impl Mat {
    pub fn zeros(rows: usize, cols: usize) -> Mat {
        Mat { storage: DMatrix::zeros(cols, rows) }
    }

    /// `data` is row-major and must hold exactly `rows * cols` values (checked by callers that
    /// parse files; a mismatch here is a programming error).
    pub fn from_vec(rows: usize, cols: usize, data: Vec<f32>) -> Mat {
        assert_eq!(data.len(), rows * cols, "Mat::from_vec: {rows}x{cols} needs {} values", rows * cols);
        Mat { storage: DMatrix::from_vec(cols, rows, data) }
    }

    pub fn rows(&self) -> usize {
        self.storage.ncols()
    }

    pub fn cols(&self) -> usize {
        self.storage.nrows()
    }

    pub fn as_slice(&self) -> &[f32] {
        self.storage.as_slice()
    }

    pub fn as_mut_slice(&mut self) -> &mut [f32] {
        self.storage.as_mut_slice()
    }

    pub fn into_vec(self) -> Vec<f32> {
        self.storage.data.into()
    }

    pub fn row(&self, r: usize) -> &[f32] {
        let c = self.cols();
        &self.as_slice()[r * c..(r + 1) * c]
    }

    pub fn row_mut(&mut self, r: usize) -> &mut [f32] {
        let c = self.cols();
        &mut self.as_mut_slice()[r * c..(r + 1) * c]
    }

    /// Columns `[start, start + len)` of every row, as a new `[rows, len]` matrix (one head's
    /// slice of a `[T, heads·d_k]` projection).
    pub fn cols_range(&self, start: usize, len: usize) -> Mat {
        let mut out = Vec::with_capacity(self.rows() * len);
        for r in 0..self.rows() {
            out.extend_from_slice(&self.row(r)[start..start + len]);
        }
        Mat::from_vec(self.rows(), len, out)
    }

    pub fn transpose(&self) -> Mat {
        // Our transpose is nalgebra's transpose too: storage (cols × rows) becomes (rows × cols).
        Mat { storage: self.storage.transpose() }
    }

    /// `self += other`, element-wise (residual connections).
    pub fn add_assign(&mut self, other: &Mat) {
        self.storage += &other.storage;
    }

    /// Adds `bias` to every row.
    pub fn add_row_vector(&mut self, bias: &[f32]) {
        let c = self.cols();
        for row in self.as_mut_slice().chunks_exact_mut(c) {
            for (x, b) in row.iter_mut().zip(bias) {
                *x += b;
            }
        }
    }

    /// `f` on every element, over the contiguous storage: a branch-free `f` ([`gelu`]) then
    /// compiles to SIMD lanes.
    pub fn map_in_place(&mut self, f: impl Fn(f32) -> f32) {
        self.as_mut_slice().iter_mut().for_each(|x| *x = f(*x));
    }

    pub fn storage(&self) -> &DMatrix<f32> {
        &self.storage
    }
}

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

/// A strided row-major view: row `r` starts at `offset + r * stride` and holds `cols` values.
#[derive(Clone, Copy)]
pub struct View<'a, T = f32> {
    pub data: &'a [T],
    pub offset: usize,
    pub rows: usize,
    pub cols: usize,
    pub stride: usize,
}

impl<'a, T: Copy> View<'a, T> {
    #[inline]
    pub fn row(&self, r: usize) -> &'a [T] {
        let s = self.offset + r * self.stride;
        &self.data[s..s + self.cols]
    }

    /// Columns `[start, start + len)` of every row.
    pub fn cols(&self, start: usize, len: usize) -> View<'a, T> {
        View { offset: self.offset + start, cols: len, ..*self }
    }

    /// Rows `[start, start + len)`.
    pub fn rows_range(&self, start: usize, len: usize) -> View<'a, T> {
        View { offset: self.offset + start * self.stride, rows: len, ..*self }
    }

    /// The rows, concatenated: `# [rows, cols]` row-major.
    pub fn to_vec(&self) -> Vec<T> {
        (0..self.rows).flat_map(|r| self.row(r).iter().copied()).collect()
    }

    /// The transpose, `# [cols, rows]` row-major.
    pub fn transposed(&self) -> Vec<T> {
        (0..self.cols).flat_map(|c| (0..self.rows).map(move |r| self.data[self.offset + r * self.stride + c])).collect()
    }
}

impl<'a> View<'a, i8> {
    pub fn of_quantized(m: &'a QuantizedMat) -> View<'a, i8> {
        View { data: &m.data, offset: 0, rows: m.rows, cols: m.cols, stride: m.cols }
    }
}

impl<'a> View<'a> {
    pub fn of(m: &'a Mat) -> View<'a> {
        View { data: m.as_slice(), offset: 0, rows: m.rows(), cols: m.cols(), stride: m.cols() }
    }

    /// Columns `[start, start + len)` of `m` (one attention head's slice).
    pub fn cols_of(m: &'a Mat, start: usize, len: usize) -> View<'a> {
        View { data: m.as_slice(), offset: start, rows: m.rows(), cols: len, stride: m.cols() }
    }
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod lanes {
    use core::arch::wasm32::*;

    /// Four f32 lanes in one wasm `v128`.
    #[derive(Clone, Copy)]
    pub struct F4(v128);

    impl F4 {
        #[inline(always)]
        pub fn zero() -> F4 {
            F4(f32x4_splat(0.0))
        }
        /// # Safety
        /// `p` must point to 4 readable f32 values.
        #[inline(always)]
        pub unsafe fn load(p: *const f32) -> F4 {
            F4(v128_load(p as *const v128))
        }
        /// # Safety
        /// `p` must point to 4 readable i8 values.
        #[inline(always)]
        pub unsafe fn load_i8(p: *const i8) -> F4 {
            let bytes = v128_load32_zero(p as *const u32);
            F4(f32x4_convert_i32x4(i32x4_extend_low_i16x8(i16x8_extend_low_i8x16(bytes))))
        }
        #[inline(always)]
        pub fn splat(x: f32) -> F4 {
            F4(f32x4_splat(x))
        }
        /// # Safety
        /// `p` must point to 16 readable bytes. Their low nibbles then their high nibbles, as
        /// 32 values 0..15 (a Q4 block's order).
        #[inline(always)]
        pub unsafe fn nibbles32(p: *const u8) -> [F4; 8] {
            let bytes = v128_load(p as *const v128);
            let widen = |v: v128| {
                let (l, h) = (u16x8_extend_low_u8x16(v), u16x8_extend_high_u8x16(v));
                [l, h].map(|w| [u32x4_extend_low_u16x8(w), u32x4_extend_high_u16x8(w)].map(|x| F4(f32x4_convert_u32x4(x))))
            };
            let ([a, b], [c, d]) = (widen(v128_and(bytes, u8x16_splat(0x0f)))[0], widen(u8x16_shr(bytes, 4))[0]);
            let ([e, f], [g, h]) = (widen(v128_and(bytes, u8x16_splat(0x0f)))[1], widen(u8x16_shr(bytes, 4))[1]);
            [a, b, e, f, c, d, g, h]
        }
        /// # Safety
        /// `p` must point to 32 readable bytes, taken as int8.
        #[inline(always)]
        pub unsafe fn int8x32(p: *const u8) -> [F4; 8] {
            let widen = |v: v128| {
                let (l, h) = (i16x8_extend_low_i8x16(v), i16x8_extend_high_i8x16(v));
                [l, h].map(|w| [i32x4_extend_low_i16x8(w), i32x4_extend_high_i16x8(w)].map(|x| F4(f32x4_convert_i32x4(x))))
            };
            let [[a, b], [c, d]] = widen(v128_load(p as *const v128));
            let [[e, f], [g, h]] = widen(v128_load(p.add(16) as *const v128));
            [a, b, c, d, e, f, g, h]
        }
        /// `self + a·b`. The relaxed-SIMD build (`+relaxed-simd`, pkg/relaxed/) lets the engine fuse
        /// it into one FMA (one rounding instead of two; which one is the engine's choice, fixed
        /// for a given machine, so a value still never depends on the block that computed it).
        #[inline(always)]
        pub fn mul_add(self, a: F4, b: F4) -> F4 {
            // Stable since Rust 1.82: only this build needs it (the crate's rust-version, 1.80,
            // is what the plain builds need).
            #[cfg(target_feature = "relaxed-simd")]
            #[allow(clippy::incompatible_msrv)]
            let sum = f32x4_relaxed_madd(a.0, b.0, self.0);
            #[cfg(not(target_feature = "relaxed-simd"))]
            let sum = f32x4_add(self.0, f32x4_mul(a.0, b.0));
            F4(sum)
        }
        #[inline(always)]
        pub fn sum(self) -> f32 {
            let v = self.0;
            (f32x4_extract_lane::<0>(v) + f32x4_extract_lane::<1>(v)) + (f32x4_extract_lane::<2>(v) + f32x4_extract_lane::<3>(v))
        }
    }
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
mod lanes {
    /// Four independent f32 lanes; LLVM's SLP vectoriser turns these into SSE/NEON ops.
    #[derive(Clone, Copy)]
    pub struct F4([f32; 4]);

    impl F4 {
        #[inline(always)]
        pub fn zero() -> F4 {
            F4([0.0; 4])
        }
        /// # Safety
        /// `p` must point to 4 readable f32 values.
        #[inline(always)]
        pub unsafe fn load(p: *const f32) -> F4 {
            F4([*p, *p.add(1), *p.add(2), *p.add(3)])
        }
        /// # Safety
        /// `p` must point to 4 readable i8 values.
        #[inline(always)]
        pub unsafe fn load_i8(p: *const i8) -> F4 {
            F4([*p as f32, *p.add(1) as f32, *p.add(2) as f32, *p.add(3) as f32])
        }
        #[inline(always)]
        pub fn splat(x: f32) -> F4 {
            F4([x; 4])
        }
        /// # Safety
        /// `p` must point to 16 readable bytes. Their low nibbles then their high nibbles, as
        /// 32 values 0..15 (a Q4 block's order).
        #[inline(always)]
        pub unsafe fn nibbles32(p: *const u8) -> [F4; 8] {
            std::array::from_fn(|v| {
                let (byte, shift) = ((v % 4) * 4, if v < 4 { 0 } else { 4 });
                F4(std::array::from_fn(|l| ((*p.add(byte + l) >> shift) & 0x0f) as f32))
            })
        }
        /// # Safety
        /// `p` must point to 32 readable bytes, taken as int8.
        #[inline(always)]
        pub unsafe fn int8x32(p: *const u8) -> [F4; 8] {
            std::array::from_fn(|v| F4(std::array::from_fn(|l| *p.add(4 * v + l) as i8 as f32)))
        }
        #[inline(always)]
        pub fn mul_add(self, a: F4, b: F4) -> F4 {
            let (x, a, b) = (self.0, a.0, b.0);
            F4([x[0] + a[0] * b[0], x[1] + a[1] * b[1], x[2] + a[2] * b[2], x[3] + a[3] * b[3]])
        }
        #[inline(always)]
        pub fn sum(self) -> f32 {
            let v = self.0;
            (v[0] + v[1]) + (v[2] + v[3])
        }
    }
}

use lanes::F4;

/// Element types the right-hand GEMM operand may hold: f32, or int8 (scaled after the sum).
pub trait Element: Copy + Sync {
    /// # Safety
    /// `p` must point to 4 readable values.
    unsafe fn load4(p: *const Self) -> F4;
    fn to_f32(self) -> f32;
}

impl Element for f32 {
    #[inline(always)]
    unsafe fn load4(p: *const f32) -> F4 {
        F4::load(p)
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
}

impl Element for i8 {
    #[inline(always)]
    unsafe fn load4(p: *const i8) -> F4 {
        F4::load_i8(p)
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
}

/// Register-tiled micro-kernel: the `R × C` dot products of `R` rows of A with `C` rows of B,
/// all of length `n`, sharing every load. Each dot product uses one 4-lane accumulator, the
/// same lane split and the same reduction order whatever `R` and `C` are, so a value never
/// depends on the block that computed it (a one-row decode step equals the batched row bit
/// for bit).
#[inline(always)]
fn dots<const R: usize, const C: usize, T: Element>(a: [&[f32]; R], b: [&[T]; C], n: usize) -> [[f32; C]; R] {
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
pub fn matmul_bt<T: Element>(a: View, b: View<T>, out: &mut [f32], out_offset: usize, out_stride: usize) {
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
    let chunks = if threads > 1 && m * n * k >= PARALLEL_FROM_MACS { blocks.min(4 * threads) } else { 1 };
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
pub(crate) struct OutPtr(pub(crate) *mut f32);
// SAFETY: used only where the chunks write disjoint elements (matmul_bt, linear_by_panels,
// nn::attention).
unsafe impl Sync for OutPtr {}
unsafe impl Send for OutPtr {}

impl OutPtr {
    /// The element `i` places on (a method, so closures capture the `Sync` wrapper, not the pointer).
    pub(crate) fn at(self, i: usize) -> *mut f32 {
        self.0.wrapping_add(i)
    }
}

/// Columns `cols` of [`matmul_bt`]'s output.
///
/// # Safety
/// Every `out_offset + i * out_stride + j` (i < a.rows, j in cols) is inside the caller's
/// output, and no other thread writes those elements meanwhile.
pub(crate) unsafe fn matmul_bt_cols<T: Element>(a: View, b: View<T>, out: OutPtr, out_offset: usize, out_stride: usize, cols: std::ops::Range<usize>) {
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

/// `x · (scales ⊙ Q)ᵀ (+ bias)` for an int8 weight `[out, in]`, through the one kernel. Few rows
/// of `x` (a short text, a decode step): int8 widened to f32 in registers, each output column
/// scaled once after its dot products, bias in the same pass. From [`PANEL_FROM_ROWS`] rows on,
/// the widening would be repeated for every four rows of `x`, so rows are decoded (scaled) a
/// panel at a time as for GGUF blocks (measured in wasm at 128 tokens: the in-register path ran
/// at 0.80× the f32 weights' speed). The two orders differ by float rounding only.
pub fn linear_quantized(x: &Mat, weight: &QuantizedMat, bias: Option<&[f32]>) -> Mat {
    if x.rows() >= PANEL_FROM_ROWS {
        let mut y = linear_by_panels(x, weight.rows, weight.cols, |r, out| weight.dequantize_row(r, out));
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
            Some(b) => row.iter_mut().zip(&weight.scales).zip(b).for_each(|((v, s), b)| *v = *v * s + b),
            None => row.iter_mut().zip(&weight.scales).for_each(|(v, s)| *v *= s),
        }
    }
    y
}

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
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r + 1.666_666_5e-1) * r + 0.5;
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
            + t * (0.374_091_96 + t * (0.096_784_18 + t * (-0.186_288_06 + t * (0.278_868_07 + t * (-1.135_204 + t * (1.488_515_9 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
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

/// IEEE half → single, including subnormals, infinities and NaN.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let frac = (h & 0x3ff) as u32;
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: value = frac · 2^-24.
            let v = frac as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, _) => sign | 0x7f80_0000 | (frac << 13),
        _ => sign | ((exp + 112) << 23) | (frac << 13),
    };
    f32::from_bits(bits)
}

/// Whether no value is NaN or ∞.
pub fn all_finite(v: &[f32]) -> bool {
    v.iter().all(|x| x.is_finite())
}

/// How a row of a [`BlockMat`] is stored: GGML's formats, `block_len` values in `block_bytes`.
/// Q4_0: f16 d, 16 bytes of nibbles, value = d·(q − 8). Q4_1: f16 d, f16 m, 16 bytes of
/// nibbles, value = d·q + m. Q8_0: f16 d, 32 int8, value = d·q. In the nibble formats value j
/// of a block is the low nibble of byte j, value j + 16 the high nibble of byte j.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockFormat {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q8_0,
}

impl BlockFormat {
    pub fn block_len(self) -> usize {
        match self {
            BlockFormat::F32 | BlockFormat::F16 => 1,
            BlockFormat::Q4_0 | BlockFormat::Q4_1 | BlockFormat::Q8_0 => 32,
        }
    }

    pub fn block_bytes(self) -> usize {
        match self {
            BlockFormat::F32 => 4,
            BlockFormat::F16 => 2,
            BlockFormat::Q4_0 => 18,
            BlockFormat::Q4_1 => 20,
            BlockFormat::Q8_0 => 34,
        }
    }

    /// Bytes of a row of `cols` values; `None` when `cols` is not a whole number of blocks or
    /// the size overflows.
    pub fn row_bytes(self, cols: usize) -> Option<usize> {
        (cols % self.block_len() == 0).then(|| (cols / self.block_len()).checked_mul(self.block_bytes())).flatten()
    }

    /// Whether every value that `bytes` (whole blocks) decodes to is finite: a float whose
    /// exponent bits are all ones (NaN, ∞) is the only way to get one that is not, so the f16
    /// scales (and f32/f16 values) are read as bits, without decoding.
    pub fn all_finite(self, bytes: &[u8]) -> bool {
        let f16_ok = |b: &[u8]| u16::from_le_bytes([b[0], b[1]]) & 0x7c00 != 0x7c00;
        match self {
            BlockFormat::F32 => bytes.chunks_exact(4).all(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & 0x7f80_0000 != 0x7f80_0000),
            BlockFormat::F16 => bytes.chunks_exact(2).all(f16_ok),
            BlockFormat::Q4_0 | BlockFormat::Q8_0 => bytes.chunks_exact(self.block_bytes()).all(f16_ok),
            BlockFormat::Q4_1 => bytes.chunks_exact(20).all(|b| f16_ok(b) && f16_ok(&b[2..])),
        }
    }

    /// Decodes one row (`bytes.len() == row_bytes(out.len())`) into `out`.
    pub fn dequantize(self, bytes: &[u8], out: &mut [f32]) {
        let half = |b: &[u8]| f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        match self {
            BlockFormat::F32 => out.iter_mut().zip(bytes.chunks_exact(4)).for_each(|(o, b)| *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            BlockFormat::F16 => out.iter_mut().zip(bytes.chunks_exact(2)).for_each(|(o, b)| *o = half(b)),
            BlockFormat::Q4_0 | BlockFormat::Q4_1 => {
                let q_at = if self == BlockFormat::Q4_0 { 2 } else { 4 };
                for (o, b) in out.chunks_exact_mut(32).zip(bytes.chunks_exact(self.block_bytes())) {
                    let d = half(b);
                    let m = if self == BlockFormat::Q4_0 { -8.0 * d } else { half(&b[2..]) };
                    let (lo, hi) = o.split_at_mut(16);
                    for ((l, h), &q) in lo.iter_mut().zip(hi.iter_mut()).zip(&b[q_at..q_at + 16]) {
                        *l = (q & 0x0f) as f32 * d + m;
                        *h = (q >> 4) as f32 * d + m;
                    }
                }
            }
            BlockFormat::Q8_0 => {
                for (o, b) in out.chunks_exact_mut(32).zip(bytes.chunks_exact(34)) {
                    let d = half(b);
                    for (v, &q) in o.iter_mut().zip(&b[2..34]) {
                        *v = q as i8 as f32 * d;
                    }
                }
            }
        }
    }
}

/// A `[rows, cols]` weight kept in its file's block format (GGUF), inside the file's bytes
/// (shared, not copied: SmolLM2's 98 MB of Q4_1 stay 98 MB instead of 540 MB as f32). The GEMM
/// decodes a panel of rows at a time next to the kernel ([`linear_blocks`]).
#[derive(Clone, Debug)]
pub struct BlockMat {
    pub rows: usize,
    pub cols: usize,
    pub format: BlockFormat,
    bytes: std::sync::Arc<Vec<u8>>,
    offset: usize,
    row_bytes: usize,
}

impl BlockMat {
    /// `None` when the rows do not fit in `bytes` from `offset` or `cols` is not whole blocks.
    pub fn new(rows: usize, cols: usize, format: BlockFormat, bytes: std::sync::Arc<Vec<u8>>, offset: usize) -> Option<BlockMat> {
        let row_bytes = format.row_bytes(cols)?;
        let end = row_bytes.checked_mul(rows)?.checked_add(offset)?;
        (end <= bytes.len()).then_some(BlockMat { rows, cols, format, bytes, offset, row_bytes })
    }

    /// Whether every value of the matrix is finite (see [`BlockFormat::all_finite`]).
    pub fn all_finite(&self) -> bool {
        self.format.all_finite(&self.bytes[self.offset..self.offset + self.rows * self.row_bytes])
    }

    /// Row `r` decoded into `out` (`cols` values): an embedding lookup.
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) {
        let s = self.offset + r * self.row_bytes;
        self.format.dequantize(&self.bytes[s..s + self.row_bytes], &mut out[..self.cols]);
    }
}

/// Rows of a block-format weight decoded per call of the kernel: 16 rows × up to 1,536 values
/// is 96 KiB, in L2, reused by every row of the activations.
const BLOCK_PANEL_ROWS: usize = 16;

/// From this many rows of activations on, decoding a panel of weight rows once and running the
/// f32 kernel beats decoding each block in registers for every four rows (measured in wasm:
/// a 28-token SmolLM2 prompt 600 → 260 ms; one generated token 70 → 36 ms the other way).
const PANEL_FROM_ROWS: usize = 8;

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

thread_local! {
    /// Each thread's decoded panel, reused: a fresh one per panel (96 per int8 linear) was an
    /// allocation and a zeroing each, 3 % of a 16-token forward.
    static PANEL: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `x · Wᵀ` for a weight `[rows, cols]` stored in a compact form: `decode_row` writes row r as
/// f32, a panel of [`BLOCK_PANEL_ROWS`] rows at a time, each panel then handed to the one GEMM
/// kernel, so the decoding is paid once per weight row whatever the number of rows of `x`.
fn linear_by_panels(x: &Mat, rows: usize, cols: usize, decode_row: impl Fn(usize, &mut [f32]) + Sync) -> Mat {
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

/// `out = x · Wᵀ` for a weight in 32-value blocks (Q4_0, Q4_1, Q8_0), rows of `x` four at a
/// time against one weight row, each block decoded once for the four.
fn quantized_gemm(x: &Mat, w: &BlockMat, out: &mut [f32]) {
    let (m, n, blocks) = (x.rows(), w.rows, w.cols / 32);
    // Σ of each 32-value block of each row of x: the offset term (m·Σx) of every block.
    let sums: Vec<f32> = x.as_slice().chunks_exact(32).map(|c| c.iter().sum()).collect();
    let m4 = m - m % 4;
    for j in 0..n {
        let s = w.offset + j * w.row_bytes;
        let row = &w.bytes[s..s + w.row_bytes];
        let mut i = 0;
        while i < m4 {
            let r = block_dots(w.format, row, [x.row(i), x.row(i + 1), x.row(i + 2), x.row(i + 3)], std::array::from_fn(|d| &sums[(i + d) * blocks..(i + d + 1) * blocks]));
            for (d, v) in r.into_iter().enumerate() {
                out[(i + d) * n + j] = v;
            }
            i += 4;
        }
        for i in m4..m {
            out[i * n + j] = block_dots(w.format, row, [x.row(i)], [&sums[i * blocks..(i + 1) * blocks]])[0];
        }
    }
}

/// `R` dot products of activation rows with one weight row of 32-value blocks. Per block:
/// Σ a·q in 4-lane accumulators, scaled by the block's d after the sum, plus its offset
/// (Q4_1's m, Q4_0's −8d) times the block's Σ a. Each row's order of operations is the same
/// whatever `R`.
#[inline(always)]
fn block_dots<const R: usize>(format: BlockFormat, w: &[u8], a: [&[f32]; R], sums: [&[f32]; R]) -> [f32; R] {
    let bb = format.block_bytes();
    let blocks = w.len() / bb;
    assert!(a.iter().all(|r| r.len() >= blocks * 32) && sums.iter().all(|s| s.len() >= blocks));
    let half = |b: &[u8]| f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
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
                let b = View { data: &q.data, offset: start, rows: q.rows, cols: len, stride: q.cols };
                matmul_bt(View::of(x), b, out, 0, n);
                out.chunks_exact_mut(n).for_each(|row| row.iter_mut().zip(&q.scales).for_each(|(v, s)| *v *= s));
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

/// SiLU (swish), `x · σ(x)`: the gate of Llama's SwiGLU feed-forward.
pub fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_bt(a: &Mat, b: &Mat) -> Mat {
        let mut out = Mat::zeros(a.rows(), b.rows());
        for i in 0..a.rows() {
            for j in 0..b.rows() {
                let s: f64 = a.row(i).iter().zip(b.row(j)).map(|(x, y)| *x as f64 * *y as f64).sum();
                out.row_mut(i)[j] = s as f32;
            }
        }
        out
    }

    fn pseudo_random(rows: usize, cols: usize, seed: u32) -> Mat {
        let mut s = seed.wrapping_mul(2654435761).max(1);
        let data = (0..rows * cols)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s % 2000) as f32 / 1000.0 - 1.0
            })
            .collect();
        Mat::from_vec(rows, cols, data)
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

    #[test]
    fn quantized_gemm_equals_dequantized_product() {
        // Per-row scales; a per-matrix scale is the same path with the scale repeated.
        let scales = (0..9).map(|r| 0.01 + 0.003 * r as f32).collect();
        let q = QuantizedMat { rows: 9, cols: 13, data: (0..117).map(|i| ((i * 37) % 255) as u8 as i8).collect(), scales };
        let deq = Mat::from_vec(9, 13, q.data.iter().enumerate().map(|(i, &v)| v as f32 * q.scales[i / 13]).collect());
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
    fn block_formats_decode_as_ggml_defines_them() {
        // One Q4_1 block: d = 0.5, m = -1, nibbles 0..15 low, 15..0 high.
        let mut b = Vec::new();
        b.extend_from_slice(&0x3800u16.to_le_bytes()); // 0.5
        b.extend_from_slice(&0xbc00u16.to_le_bytes()); // -1.0
        b.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
        let mut out = [0.0f32; 32];
        BlockFormat::Q4_1.dequantize(&b, &mut out);
        assert_eq!(out[0], -1.0);
        assert_eq!(out[15], 6.5);
        assert_eq!(out[16], 6.5);
        assert_eq!(out[31], -1.0);
        // Q8_0: d = 2, q = j - 16.
        let mut q8 = 0x4000u16.to_le_bytes().to_vec();
        q8.extend((0..32i32).map(|j| (j - 16) as i8 as u8));
        BlockFormat::Q8_0.dequantize(&q8, &mut out);
        assert_eq!((out[0], out[16], out[31]), (-32.0, 0.0, 30.0));
        // Q4_0: d = 1, value = q - 8.
        let mut q4 = 0x3c00u16.to_le_bytes().to_vec();
        q4.extend([0x80u8; 16]);
        BlockFormat::Q4_0.dequantize(&q4, &mut out);
        assert_eq!((out[0], out[16]), (-8.0, 0.0));
        assert_eq!(BlockFormat::Q4_1.row_bytes(64), Some(40));
        assert_eq!(BlockFormat::Q4_1.row_bytes(33), None);
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
        let w = BlockMat::new(rows, cols, BlockFormat::Q4_1, std::sync::Arc::new(bytes), 0).unwrap();
        let mut dense = vec![0.0; rows * cols];
        for (r, row) in dense.chunks_exact_mut(cols).enumerate() {
            w.dequantize_row(r, row);
        }
        let dense = Mat::from_vec(rows, cols, dense);
        for m in [5, 9] {
            // 5 rows: decoded in registers; 9: panel path.
            let x = pseudo_random(m, cols, 21);
            let (fast, exact) = (linear_blocks(&x, &w), linear(&x, &dense, None));
            for (u, v) in fast.as_slice().iter().zip(exact.as_slice()) {
                assert!((u - v).abs() <= 1e-5 * v.abs().max(1.0), "{m} rows: {u} vs {v}");
            }
            // A row alone gives what it gives in a batch of fewer than PANEL_FROM_ROWS.
            let one = linear_blocks(&Mat::from_vec(1, cols, x.row(m - 1).to_vec()), &w);
            if m < PANEL_FROM_ROWS {
                assert_eq!(one.row(0), fast.row(m - 1));
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
            let (fast, exact) = (linear_blocks(&x, &w), linear(&x, &Mat::from_vec(rows, cols, dense), None));
            for (u, v) in fast.as_slice().iter().zip(exact.as_slice()) {
                assert!((u - v).abs() <= 1e-5 * v.abs().max(1.0), "{format:?}: {u} vs {v}");
            }
        }
        assert!(BlockMat::new(rows + 1, cols, BlockFormat::Q4_1, w.bytes.clone(), 0).is_none());
    }

    #[test]
    fn half_precision_decodes() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
        assert!(f16_to_f32(0x7c00).is_infinite());
    }

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

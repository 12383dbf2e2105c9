//! The matrix type: a row-major `[rows, cols]` f32 matrix on nalgebra storage, and strided
//! row-major views into any buffer (a head's columns, a KV cache's rows) that the GEMM reads.

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
        assert_eq!(
            data.len(),
            rows * cols,
            "Mat::from_vec: {rows}x{cols} needs {} values",
            rows * cols
        );
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

    /// `f` on every element, over the contiguous storage: a branch-free `f` ([`crate::tensor::gelu`]) then
    /// compiles to SIMD lanes.
    pub fn map_in_place(&mut self, f: impl Fn(f32) -> f32) {
        self.as_mut_slice().iter_mut().for_each(|x| *x = f(*x));
    }

    pub fn storage(&self) -> &DMatrix<f32> {
        &self.storage
    }
}

/// `a + b`, element-wise, into a new matrix (a residual connection: `x + &attn`).
impl std::ops::Add<&Mat> for &Mat {
    type Output = Mat;

    fn add(self, other: &Mat) -> Mat {
        self.clone() + other
    }
}

/// `a + b`, element-wise, in `a`'s storage (`h + &mlp`).
impl std::ops::Add<&Mat> for Mat {
    type Output = Mat;

    fn add(mut self, other: &Mat) -> Mat {
        self.add_assign(other);
        self
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
        (0..self.cols)
            .flat_map(|c| (0..self.rows).map(move |r| self.data[self.offset + r * self.stride + c]))
            .collect()
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

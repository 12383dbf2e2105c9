//! Weight readers, one per file format: safetensors and Marian .bin yield a [`TensorStore`] of
//! named tensors (f32, or int8 with scales, kept int8 for the GEMM); a GGUF's tensors stay in
//! the file's bytes in their GGML block formats ([`ggml`]). Nothing quantised is dequantised at
//! load, except where a model asks for an f32 matrix; activations are never quantised.
//! Models look their tensors up through a [`Scope`], by module path, whatever the file.

pub mod ggml;
pub mod gguf;
pub mod marian_bin;
pub mod safetensors_file;
mod scope;

pub use scope::Scope;

use crate::error::{invalid_model, Result};
use crate::tensor::{all_finite, Mat, QuantizedMat, WeightMatrix};
use std::collections::HashMap;

/// A named tensor with its shape: f32, or int8 with scales (real = q · scale of its row), which is
/// dequantised when a model asks for a float matrix.
#[derive(Debug, Clone)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: TensorData,
}

#[derive(Debug, Clone)]
pub enum TensorData {
    F32(Vec<f32>),
    /// `scales`: one for the whole tensor, or one per row (`shape[0]` rows); readers check it.
    Int8 {
        values: Vec<i8>,
        scales: Vec<f32>,
    },
}

impl TensorData {
    fn len(&self) -> usize {
        match self {
            TensorData::F32(v) => v.len(),
            TensorData::Int8 { values, .. } => values.len(),
        }
    }
}

/// Named tensors from one model file. Models take tensors out by name with the shape they
/// expect, so a file that does not match its config fails at load with a clear message and
/// never later with an out-of-bounds index.
#[derive(Debug, Default)]
pub struct TensorStore {
    tensors: HashMap<String, Tensor>,
    /// The file the tensors came from, named in errors.
    file: String,
}

impl TensorStore {
    /// Names the file the tensors came from in every error about them.
    pub fn set_file(&mut self, name: &str) {
        self.file = format!("{name}: ");
    }

    pub fn insert(&mut self, name: String, tensor: Tensor) {
        self.tensors.insert(name, tensor);
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    pub fn shape(&self, name: &str) -> Option<&[usize]> {
        self.tensors.get(name).map(|t| t.shape.as_slice())
    }

    fn take_checked(&mut self, name: &str, numel: Option<usize>, want: &str) -> Result<TensorData> {
        // `numel` is None when the expected size itself overflows usize (32-bit in wasm): no
        // tensor can have it, and a wrapped product must never pass for a small one.
        let t = self
            .tensors
            .remove(name)
            .ok_or_else(|| invalid_model(format!("{}tensor `{name}` is missing", self.file)))?;
        let has = t.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if numel.is_none() || has != numel || Some(t.data.len()) != numel {
            return Err(invalid_model(format!(
                "{}tensor `{name}` has shape {:?}, expected {want}",
                self.file, t.shape
            )));
        }
        let finite = match &t.data {
            TensorData::F32(v) => all_finite(v),
            TensorData::Int8 { scales, .. } => all_finite(scales),
        };
        if !finite {
            return Err(invalid_model(format!(
                "{}tensor `{name}` holds NaN or infinite values",
                self.file
            )));
        }
        Ok(t.data)
    }

    fn take_f32(&mut self, name: &str, numel: Option<usize>, want: &str) -> Result<Vec<f32>> {
        Ok(match self.take_checked(name, numel, want)? {
            TensorData::F32(v) => v,
            TensorData::Int8 { values, scales } => {
                WeightMatrix::Int8(int8_matrix(values, scales, 1, numel.unwrap_or(0)))
                    .to_mat()
                    .into_vec()
            }
        })
    }

    /// An int8 matrix kept quantised (see [`QuantizedMat`]); an f32 tensor is an error.
    pub fn quantized_matrix(
        &mut self,
        name: &str,
        rows: usize,
        cols: usize,
    ) -> Result<QuantizedMat> {
        match self.weight_matrix(name, rows, cols)? {
            WeightMatrix::Int8(q) => Ok(q),
            _ => {
                Err(invalid_model(format!("{}tensor `{name}` is float, expected int8", self.file)))
            }
        }
    }

    /// A weight matrix `[rows, cols]` as stored: int8 stays int8 (the GEMM reads it directly),
    /// floats become f32.
    pub fn weight_matrix(&mut self, name: &str, rows: usize, cols: usize) -> Result<WeightMatrix> {
        Ok(match self.take_checked(name, rows.checked_mul(cols), &format!("[{rows}, {cols}]"))? {
            TensorData::F32(v) => WeightMatrix::F32(Mat::from_vec(rows, cols, v)),
            TensorData::Int8 { values, scales } => {
                WeightMatrix::Int8(int8_matrix(values, scales, rows, cols))
            }
        })
    }

    /// A matrix `[rows, cols]` (a leading 1 in the file's shape is accepted: Marian stores
    /// vectors as `[1, n]`).
    pub fn matrix(&mut self, name: &str, rows: usize, cols: usize) -> Result<Mat> {
        let data = self.take_f32(name, rows.checked_mul(cols), &format!("[{rows}, {cols}]"))?;
        Ok(Mat::from_vec(rows, cols, data))
    }

    /// A float tensor of any shape, flattened, taken out (an int8 tensor's scales); None when
    /// absent or not float.
    pub fn vector_any(&mut self, name: &str) -> Option<Vec<f32>> {
        match self.tensors.remove(name)?.data {
            TensorData::F32(v) => Some(v),
            TensorData::Int8 { .. } => None,
        }
    }

    pub fn vector(&mut self, name: &str, len: usize) -> Result<Vec<f32>> {
        self.take_f32(name, Some(len), &format!("[{len}]"))
    }
}

/// Int8 values with one scale per row of `[rows, cols]`, or one for all (repeated). The
/// readers guarantee `scales.len()` is 1 or the tensor's first dimension; a tensor asked for
/// with another row split (a vector) falls back to one row per scale.
fn int8_matrix(values: Vec<i8>, scales: Vec<f32>, rows: usize, cols: usize) -> QuantizedMat {
    match scales.len() {
        1 => QuantizedMat::per_matrix(rows, cols, values, scales[0]),
        n if n == rows => QuantizedMat { rows, cols, data: values, scales },
        n => QuantizedMat { rows: n, cols: values.len() / n.max(1), data: values, scales },
    }
}

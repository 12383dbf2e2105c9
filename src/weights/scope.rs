//! [`Scope`]: how every model names the tensors it loads. A scope is a file's tensors and a
//! module path (`encoder.layer.3.attention`); [`Scope::pp`] goes one module down and the
//! lookups take the last name, so a loader says `layer.pp("attention").pp("self")` once and
//! then `query.weight`, `key.weight`, … instead of spelling each tensor's full name.

use super::gguf::Gguf;
use super::TensorStore;
use crate::error::Result;
use crate::tensor::{Mat, WeightMatrix};
use std::cell::RefCell;
use std::fmt::Display;

/// The file a scope reads: named tensors (safetensors, Marian .bin), taken out as they are
/// loaded, or a GGUF, whose tensors stay in its bytes.
#[derive(Clone, Copy)]
enum Source<'a> {
    Store(&'a RefCell<TensorStore>),
    Gguf(&'a Gguf),
}

/// A module path into one file's tensors. Cheap to clone; every scope made from one root reads
/// the same file.
#[derive(Clone)]
pub struct Scope<'a> {
    source: Source<'a>,
    prefix: String,
    /// Between a module and what is below it: `.` (Hugging Face, GGUF), `_` (Marian .bin).
    separator: char,
}

impl<'a> Scope<'a> {
    /// The root of a store's tensors, names joined by `.`.
    pub fn new(store: &'a RefCell<TensorStore>) -> Scope<'a> {
        Scope { source: Source::Store(store), prefix: String::new(), separator: '.' }
    }

    /// The root of a GGUF's tensors, names joined by `.`.
    pub fn gguf(file: &'a Gguf) -> Scope<'a> {
        Scope { source: Source::Gguf(file), prefix: String::new(), separator: '.' }
    }

    /// The same scope with names joined by `separator` (Marian's `encoder_l1_self_Wq`).
    pub fn separated_by(self, separator: char) -> Scope<'a> {
        Scope { separator, ..self }
    }

    /// The module `name` below this one (`pp("layer").pp(3)`).
    pub fn pp(&self, name: impl Display) -> Scope<'a> {
        Scope { prefix: self.name(&name.to_string()), ..self.clone() }
    }

    /// The full name of the tensor `name` in this module.
    pub fn name(&self, name: &str) -> String {
        match self.prefix.is_empty() {
            true => name.to_string(),
            false => format!("{}{}{name}", self.prefix, self.separator),
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        let name = self.name(name);
        match self.source {
            Source::Store(s) => s.borrow().contains(&name),
            Source::Gguf(g) => g.tensors.contains_key(&name),
        }
    }

    /// The tensor's shape, outermost dimension first (a GGUF states it innermost first), if it
    /// is there.
    pub fn shape(&self, name: &str) -> Option<Vec<usize>> {
        let name = self.name(name);
        match self.source {
            Source::Store(s) => s.borrow().shape(&name).map(<[usize]>::to_vec),
            Source::Gguf(g) => g.tensors.get(&name).map(|t| t.dims.iter().rev().copied().collect()),
        }
    }

    /// A weight matrix `[rows, cols]` as the file stores it (f32, int8 or GGML blocks).
    pub fn weight_matrix(&self, name: &str, rows: usize, cols: usize) -> Result<WeightMatrix> {
        let name = self.name(name);
        match self.source {
            Source::Store(s) => s.borrow_mut().weight_matrix(&name, rows, cols),
            Source::Gguf(g) => Ok(WeightMatrix::Blocks(g.matrix(&name, rows, cols)?)),
        }
    }

    /// An f32 matrix `[rows, cols]` (a quantised one is dequantised).
    pub fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Mat> {
        match self.source {
            Source::Store(s) => s.borrow_mut().matrix(&self.name(name), rows, cols),
            Source::Gguf(_) => Ok(self.weight_matrix(name, rows, cols)?.to_mat()),
        }
    }

    /// An f32 vector `[len]`.
    pub fn vector(&self, name: &str, len: usize) -> Result<Vec<f32>> {
        let name = self.name(name);
        match self.source {
            Source::Store(s) => s.borrow_mut().vector(&name, len),
            Source::Gguf(g) => g.vector(&name, len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weights::{Tensor, TensorData};

    #[test]
    fn nested_modules_name_their_tensors() {
        let store = RefCell::new(TensorStore::default());
        let f32s = |shape: Vec<usize>| {
            let n = shape.iter().product();
            Tensor { shape, data: TensorData::F32(vec![1.0; n]) }
        };
        store.borrow_mut().insert("encoder.layer.3.query.weight".into(), f32s(vec![2, 2]));
        store.borrow_mut().insert("encoder_l4_self_bq".into(), f32s(vec![2]));
        let root = Scope::new(&store);
        let query = root.pp("encoder").pp("layer").pp(3).pp("query");
        assert_eq!(query.name("weight"), "encoder.layer.3.query.weight");
        assert_eq!(root.name("weight"), "weight");
        assert_eq!(query.shape("weight"), Some(vec![2, 2]));
        assert!(query.weight_matrix("weight", 2, 2).is_ok());
        assert!(!query.contains("weight"), "a loaded tensor is taken out of the store");
        let marian = root.separated_by('_').pp("encoder").pp("l4").pp("self");
        assert_eq!(marian.name("bq"), "encoder_l4_self_bq");
        assert_eq!(marian.vector("bq", 2).unwrap(), vec![1.0, 1.0]);
    }
}

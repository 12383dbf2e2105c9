//! attnviz: real pretrained Transformers whose attention is a first-class output, for a live
//! browser visualiser (through the wasm facade) and a CLI.
//!
//! Layers, each using only the ones below it:
//! 1. entry points: [`wasm`] (the `#[wasm_bindgen]` facade) and `src/bin/attnviz/` (the CLI,
//!    with `serve.rs`, the static server of `attnviz serve`, which is the binary's alone), and
//!    [`output`], the one wire form of the results both serialise
//! 2. [`models`]: one file per family, chosen from a manifest
//! 3. [`nn`]: the layers the families share (attention with its KV cache and probe, Linear,
//!    LayerNorm, RMSNorm)
//! 4. [`result`]: the result types every model returns (one sampling type among them), and
//!    small analyses; [`heads`]: head scores and labels; [`pca`]: the query/key space's PCA
//! 5. [`tensor`] (GEMM, norms, activations), [`weights`] (file readers), [`tokenize`]

// The shared-memory build (built with -Zbuild-std, see Makefile) sleeps helper threads in
// memory.atomic.wait32, whose core::arch intrinsics are not stable yet.
#![cfg_attr(
    all(target_arch = "wasm32", target_feature = "atomics"),
    feature(stdarch_wasm_atomic_wait)
)]

pub mod error;
pub mod heads;
pub mod limits;
pub mod models;
pub mod nn;
pub mod output;
pub mod pca;
pub mod pool;
pub mod result;
pub mod tensor;
pub mod tokenize;
pub mod weights;

#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use error::{Error, Result};

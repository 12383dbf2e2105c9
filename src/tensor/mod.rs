//! The bottom of the numeric stack, one file a part: [`Mat`] and strided views (`mat`), the
//! SIMD lanes (`lanes`), the one GEMM kernel (`gemm`), the weights as a model holds them, f32,
//! int8 or GGML blocks (`quantized`), and element-wise operations (`ops`). The attention built
//! on them is [`crate::nn::attention`].

mod gemm;
mod lanes;
mod mat;
mod ops;
mod quantized;

pub use gemm::{linear, matmul_bt};
pub(crate) use gemm::{matmul_bt_cols, OutPtr, PARALLEL_FROM_MACS};
pub use lanes::Element;
pub use mat::{Mat, View};
pub use ops::{
    all_finite, entropy, exp_lanes, gelu, gelu_tanh, layer_norm, relu, rms_norm, sigmoid, silu,
    softmax_in_place, softmax_with_entropy,
};
pub use quantized::{linear_blocks, linear_quantized, QuantizedMat, WeightMatrix};

/// A deterministic pseudo-random matrix in [−1, 1) (xorshift), for the kernels' tests.
#[cfg(test)]
pub(crate) fn pseudo_random(rows: usize, cols: usize, seed: u32) -> Mat {
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

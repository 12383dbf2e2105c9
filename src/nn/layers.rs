//! The layers every family builds from besides attention: `Linear`, `LayerNorm`, `RmsNorm`,
//! each loaded from its module's [`Scope`] (by the Hugging Face names, or the family's own)
//! and with its own `forward`.

use crate::error::Result;
use crate::tensor::{layer_norm, rms_norm, Mat, WeightMatrix};
use crate::weights::Scope;

/// `y = x · Wᵀ + b` with a PyTorch-layout weight `# [out, in]`, f32, int8 or GGML blocks as the
/// file has it.
pub struct Linear {
    pub weight: WeightMatrix,
    pub bias: Option<Vec<f32>>,
}

impl Linear {
    /// `weight` `[out, in]` and `bias` `[out]` in module `w` (Hugging Face naming).
    pub fn load(w: &Scope, out: usize, inp: usize) -> Result<Linear> {
        Linear::load_named(w, "weight", "bias", out, inp)
    }

    /// The weight and bias under other names in module `w` (Marian's `Wq`, `bq`).
    pub fn load_named(
        w: &Scope,
        weight: &str,
        bias: &str,
        out: usize,
        inp: usize,
    ) -> Result<Linear> {
        Ok(Linear { weight: w.weight_matrix(weight, out, inp)?, bias: Some(w.vector(bias, out)?) })
    }

    /// A projection without a bias.
    pub fn no_bias(weight: WeightMatrix) -> Linear {
        Linear { weight, bias: None }
    }

    /// x `# [T, in]` → `# [T, out]`
    pub fn forward(&self, x: &Mat) -> Mat {
        self.weight.linear(x, self.bias.as_deref())
    }
}

/// LayerNorm with a learned gain and bias (biased variance, as PyTorch and Marian compute it).
pub struct LayerNorm {
    pub weight: Vec<f32>, // [d]
    pub bias: Vec<f32>,   // [d]
    pub eps: f32,
}

impl LayerNorm {
    /// `weight` and `bias` `[d]` in module `w` (Hugging Face naming).
    pub fn load(w: &Scope, d: usize, eps: f32) -> Result<LayerNorm> {
        LayerNorm::load_named(w, "weight", "bias", d, eps)
    }

    /// The gain and bias under other names in module `w` (Marian's `scale`, `bias`).
    pub fn load_named(
        w: &Scope,
        weight: &str,
        bias: &str,
        d: usize,
        eps: f32,
    ) -> Result<LayerNorm> {
        Ok(LayerNorm { weight: w.vector(weight, d)?, bias: w.vector(bias, d)?, eps })
    }

    /// Normalises every row of `x` `# [T, d]` in place.
    pub fn apply(&self, x: &mut Mat) {
        layer_norm(x, &self.weight, &self.bias, self.eps);
    }

    /// LayerNorm(x) as a new matrix                                              # [T, d]
    pub fn forward(&self, x: &Mat) -> Mat {
        let mut y = x.clone();
        self.apply(&mut y);
        y
    }

    /// Parts of LayerNorm(Σ parts) that sum to it, `# [T, d]` each: with each row's mean and
    /// deviation σ of the sum fixed, the norm is linear, part ↦ γ ⊙ (part − mean(part)) / σ;
    /// β joins the last part.
    pub fn split(&self, parts: &[Mat]) -> Vec<Mat> {
        let Some(first) = parts.first() else { return Vec::new() };
        let (rows, d) = (first.rows(), first.cols());
        let mut inv = Vec::with_capacity(rows); // 1/σ of each row of the sum
        for r in 0..rows {
            let sum: Vec<f32> = (0..d).map(|j| parts.iter().map(|p| p.row(r)[j]).sum()).collect();
            let mean = sum.iter().sum::<f32>() / d as f32;
            let var = sum.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / d as f32;
            inv.push(1.0 / (var + self.eps).sqrt());
        }
        let last = parts.len() - 1;
        parts
            .iter()
            .enumerate()
            .map(|(i, part)| {
                let mut out = part.clone();
                for (r, &inv) in inv.iter().enumerate() {
                    let row = out.row_mut(r);
                    let mean = row.iter().sum::<f32>() / d as f32;
                    for (j, v) in row.iter_mut().enumerate() {
                        let beta = if i == last { self.bias[j] } else { 0.0 };
                        *v = (*v - mean) * inv * self.weight[j] + beta;
                    }
                }
                out
            })
            .collect()
    }
}

/// RMSNorm with a learned gain (Llama's `*_layernorm`, `model.norm`).
pub struct RmsNorm {
    pub weight: Vec<f32>, // [d]
    pub eps: f32,
}

impl RmsNorm {
    /// `weight` `[d]` in module `w`.
    pub fn load(w: &Scope, d: usize, eps: f32) -> Result<RmsNorm> {
        Ok(RmsNorm { weight: w.vector("weight", d)?, eps })
    }

    /// RMSNorm(x) as a new matrix                                                # [T, d]
    pub fn forward(&self, x: &Mat) -> Mat {
        let mut y = x.clone();
        rms_norm(&mut y, &self.weight, self.eps);
        y
    }
}

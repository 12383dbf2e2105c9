//! GPT-2 family causal decoder (Hugging Face `GPT2LMHeadModel`, `model_type: gpt2`): learned
//! absolute positions (`wpe`) added to the token embeddings (`wte`), pre-LayerNorm blocks,
//! causal self-attention with one fused q/k/v projection, gelu_new feed-forward, a final
//! LayerNorm, and the output head tied to `wte`. The projections are Conv1D modules stored
//! `[in, out]`; they are transposed once at load into the `[out, in]` layout of the one GEMM
//! path. Weight names with or without the `transformer.` prefix. Records `decoder_self`
//! attention for every layer; generation (KV cache, greedy or sampled) is the one in
//! [`super::decoder`]. Each struct mirrors one PyTorch module (named like its weights) and has
//! its own `forward`.

use super::decoder::{CausalLm, DecoderSpec, PreviousForward, MAX_POSITIONS};
use super::family::{
    no_own_files, Architecture, Family, ModelFiles, PositionKind, PositionTable, Sizes,
};
use crate::error::{invalid_model, Error, Result};
use crate::nn::attention::{KvCache, Mask, MultiHead};
use crate::nn::layers::{LayerNorm, Linear};
use crate::nn::probe::{Probe, Site};
use crate::result::{AttentionKind, BlockNorm};
use crate::tensor::{gelu, gelu_tanh, Mat, WeightMatrix};
use crate::tokenize::TextTokenizer;
use crate::weights::{Scope, TensorStore};
use serde::Deserialize;
use std::cell::RefCell;

/// The GPT-2 family to loading, inspection and messages.
pub const ARCHITECTURE: Architecture = Architecture {
    model_types: &["gpt2"],
    display_name: |_| "GPT-2",
    hf_alternative: "",
    hf_hint: "",
    own_files: no_own_files,
    load,
    sizes,
    gguf_sizes: None,
};

/// From a Hugging Face folder's config.json, safetensors and tokenizer.json.
fn load(files: &mut ModelFiles) -> Result<Box<dyn Family>> {
    let (config, weights, tokenizer) = files.hugging_face()?;
    Ok(Box::new(Gpt2Model::load(config, weights, tokenizer)?))
}

fn sizes(config_json: &[u8]) -> Result<Sizes> {
    let c = Gpt2Config::from_json(config_json)?;
    Ok(Sizes {
        layers: c.n_layer,
        heads: c.n_head,
        kv_heads: c.n_head,
        hidden: c.n_embd,
        max_positions: c.max_positions(),
        decoder: None,
    })
}

#[derive(Clone, Debug)]
pub struct Gpt2Config {
    pub vocab_size: usize,
    /// The model's own context length (the viewer runs at most [`MAX_POSITIONS`]).
    pub n_positions: usize,
    pub n_embd: usize,
    pub n_layer: usize,
    pub n_head: usize,
    /// Feed-forward width (4 · n_embd when config.json leaves `n_inner` null).
    pub n_inner: usize,
    pub layer_norm_epsilon: f32,
    /// gelu_new (tanh approximation) or the exact erf form.
    pub exact_gelu: bool,
    pub eos_token_ids: Vec<u32>,
    pub bos_token_id: Option<u32>,
}

impl Gpt2Config {
    pub fn head_dim(&self) -> usize {
        self.n_embd / self.n_head
    }

    pub fn max_positions(&self) -> usize {
        self.n_positions.clamp(1, MAX_POSITIONS)
    }

    pub fn from_json(bytes: &[u8]) -> Result<Gpt2Config> {
        #[derive(Deserialize)]
        struct Hf {
            vocab_size: usize,
            #[serde(default = "positions")]
            n_positions: usize,
            n_embd: usize,
            n_layer: usize,
            n_head: usize,
            #[serde(default)]
            n_inner: Option<usize>,
            #[serde(default = "eps")]
            layer_norm_epsilon: f64,
            #[serde(default = "gelu_new")]
            activation_function: String,
            #[serde(default = "yes")]
            scale_attn_weights: bool,
            #[serde(default)]
            scale_attn_by_inverse_layer_idx: bool,
            #[serde(default)]
            add_cross_attention: bool,
            #[serde(default)]
            eos_token_id: Option<u32>,
            #[serde(default)]
            bos_token_id: Option<u32>,
        }
        fn positions() -> usize {
            1024
        }
        fn eps() -> f64 {
            1e-5
        }
        fn gelu_new() -> String {
            "gelu_new".into()
        }
        fn yes() -> bool {
            true
        }
        let c: Hf = serde_json::from_slice(bytes)
            .map_err(|e| invalid_model(format!("config.json is not a GPT-2 config ({e})")))?;
        let exact_gelu = match c.activation_function.as_str() {
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => false,
            "gelu" => true,
            other => {
                return Err(Error::UnsupportedArchitecture(format!(
                    "config.json: GPT-2 activation_function `{other}` (gelu_new or gelu)"
                )))
            }
        };
        if !c.scale_attn_weights || c.scale_attn_by_inverse_layer_idx {
            return Err(Error::UnsupportedArchitecture("config.json: GPT-2 attention scaled other than by 1/√d_k (scale_attn_weights, scale_attn_by_inverse_layer_idx)".into()));
        }
        if c.add_cross_attention {
            return Err(Error::UnsupportedArchitecture(
                "config.json: GPT-2 with cross-attention (add_cross_attention)".into(),
            ));
        }
        let sizes = [
            ("vocab_size", c.vocab_size),
            ("n_positions", c.n_positions),
            ("n_embd", c.n_embd),
            ("n_layer", c.n_layer),
            ("n_head", c.n_head),
            ("n_inner", c.n_inner.unwrap_or(1)),
        ];
        if let Some((key, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Err(invalid_model(format!("gpt2 config: {key} is 0 (it must be at least 1)")));
        }
        if c.n_embd % c.n_head != 0 {
            return Err(invalid_model(format!(
                "gpt2 config: n_embd {} is not a multiple of n_head {}",
                c.n_embd, c.n_head
            )));
        }
        if !(c.layer_norm_epsilon >= 0.0 && c.layer_norm_epsilon.is_finite()) {
            return Err(invalid_model(format!(
                "gpt2 config: layer_norm_epsilon {} is out of range",
                c.layer_norm_epsilon
            )));
        }
        let n_inner = match c.n_inner {
            Some(n) => n,
            None => c
                .n_embd
                .checked_mul(4)
                .ok_or_else(|| invalid_model("gpt2 config: n_embd is too large"))?,
        };
        let config = Gpt2Config {
            vocab_size: c.vocab_size,
            n_positions: c.n_positions,
            n_embd: c.n_embd,
            n_layer: c.n_layer,
            n_head: c.n_head,
            n_inner,
            layer_norm_epsilon: c.layer_norm_epsilon as f32,
            exact_gelu,
            eos_token_ids: c.eos_token_id.into_iter().collect(),
            bos_token_id: c.bos_token_id,
        };
        // Every layer's maps for the longest input, as the viewer keeps them.
        let t = config.max_positions();
        super::family::check_attention_budget(
            "this model",
            &[(config.n_layer, config.n_head, t, t)],
        )?;
        // And one forward's activations at that length (x, q, k, v, context: n_embd wide; the
        // fused qkv 3 · n_embd; the feed-forward n_inner), f32.
        let (d, ffn) = (config.n_embd as u64, config.n_inner as u64);
        let bytes = d
            .checked_mul(8)
            .and_then(|a| a.checked_add(ffn))
            .and_then(|w| w.checked_mul(4 * t as u64));
        if !bytes.is_some_and(|b| b <= crate::limits::MEMORY_BUDGET_BYTES) {
            let need =
                bytes.map_or_else(|| "too much to count".to_string(), crate::limits::human_bytes);
            return Err(invalid_model(format!("gpt2 config: n_embd {d} and n_inner {ffn} need {need} of activations for {t} positions, more than {}", crate::limits::budget())));
        }
        Ok(config)
    }
}

/// A Conv1D module `w` (`weight` stored `[in, out]`, `bias` `[out]`) as a [`Linear`]
/// `[out, in]`: transposed once here.
/// The shape itself is checked, not only the element count: a weight saved in nn.Linear's
/// `[out, in]` would otherwise load silently transposed.
fn conv1d(w: &Scope, inp: usize, out: usize) -> Result<Linear> {
    if let Some(shape) = w.shape("weight").filter(|s| *s != [inp, out]) {
        let name = w.name("weight");
        return Err(invalid_model(format!("tensor `{name}` has shape {shape:?}, expected [{inp}, {out}] (a GPT-2 Conv1D weight is stored [in, out])")));
    }
    let weight = w.matrix("weight", inp, out)?.transpose(); // [out, in]
    Ok(Linear { weight: WeightMatrix::F32(weight), bias: Some(w.vector("bias", out)?) })
}

/// `h.N.attn.*`
struct Gpt2Attention {
    c_attn: Linear, // [3d, d]: q, k, v stacked
    c_proj: Linear, // [d, d]
    attn: MultiHead,
}

impl Gpt2Attention {
    /// h `[T, d]` (normed), rows at positions `start..` → the attention's output `[T, d]`
    /// (through c_proj), and the heads' outputs concatenated before it `[T, d]` (the step
    /// view's); keys and values are written into `cache`.
    fn forward(&self, h: &Mat, start: usize, cache: &mut KvCache, probe: &mut Probe) -> (Mat, Mat) {
        let d = h.cols();
        if let Some(bias) = &self.c_attn.bias {
            self.attn.offer_bias_split(probe, &bias[..d], &bias[d..2 * d]);
        }
        let qkv = self.c_attn.forward(h); // [T, 3d]
        let (q, k, v) = (qkv.cols_range(0, d), qkv.cols_range(d, d), qkv.cols_range(2 * d, d)); // [T, d] each
        cache.append(&k, &v);
        // # [heads, T, start + T]
        let mask = Mask::Causal { first_query_position: start };
        let heads = self.attn.attend(&q, cache, mask, &self.c_proj.weight, probe); // [T, d]
        (self.c_proj.forward(&heads), heads)
    }
}

/// `h.N.mlp.*`: c_proj(gelu_new(c_fc(x))).
struct Gpt2Mlp {
    c_fc: Linear,   // [ffn, d]
    c_proj: Linear, // [d, ffn]
    exact_gelu: bool,
}

impl Gpt2Mlp {
    fn forward(&self, x: &Mat) -> Mat {
        let mut ff = self.c_fc.forward(x); // [T, ffn]
        ff.map_in_place(if self.exact_gelu { gelu } else { gelu_tanh });
        self.c_proj.forward(&ff) // [T, d]
    }
}

/// `h.N`: x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)).
struct Gpt2Block {
    ln_1: LayerNorm,
    attn: Gpt2Attention,
    ln_2: LayerNorm,
    mlp: Gpt2Mlp,
}

impl Gpt2Block {
    /// `w`: the module `h.N`.
    fn load(w: &Scope, c: &Gpt2Config, layer: usize) -> Result<Gpt2Block> {
        let (d, ffn, eps) = (c.n_embd, c.n_inner, c.layer_norm_epsilon);
        let (attn, mlp) = (w.pp("attn"), w.pp("mlp"));
        Ok(Gpt2Block {
            ln_1: LayerNorm::load(&w.pp("ln_1"), d, eps)?,
            attn: Gpt2Attention {
                c_attn: conv1d(&attn.pp("c_attn"), d, 3 * d)?,
                c_proj: conv1d(&attn.pp("c_proj"), d, d)?,
                attn: MultiHead::new(
                    Site { kind: AttentionKind::DecoderSelf, layer },
                    c.n_head,
                    c.n_head,
                    c.head_dim(),
                ),
            },
            ln_2: LayerNorm::load(&w.pp("ln_2"), d, eps)?,
            mlp: Gpt2Mlp {
                c_fc: conv1d(&mlp.pp("c_fc"), d, ffn)?,
                c_proj: conv1d(&mlp.pp("c_proj"), ffn, d)?,
                exact_gelu: c.exact_gelu,
            },
        })
    }

    /// x `[T, d]` at positions `start..` → `[T, d]`.
    fn forward(&self, x: &Mat, start: usize, cache: &mut KvCache, probe: &mut Probe) -> Mat {
        // x = x + attn(ln_1(x)), and h = ln_2(x)
        let (attn, heads) = self.attn.forward(&self.ln_1.forward(x), start, cache, probe);
        let ln_2 = (BlockNorm::PreLayerNorm, |x: &Mat| self.ln_2.forward(x));
        let (x, h) = self.attn.attn.pre_norm_residual(x, &heads, &attn, ln_2, probe);
        x + &self.mlp.forward(&h) // x = x + mlp(ln_2(x))
    }
}

pub struct Gpt2Model {
    pub config: Gpt2Config,
    wte: WeightMatrix, // [vocab, d], also the output head (tied)
    wpe: WeightMatrix, // [n_positions, d]
    h: Vec<Gpt2Block>,
    ln_f: LayerNorm,
    tokenizer: TextTokenizer,
    /// The last forward, which the next text starts from.
    previous: PreviousForward,
}

impl Gpt2Model {
    /// From a Hugging Face folder's config.json, model.safetensors and tokenizer.json.
    pub fn load(
        config_json: &[u8],
        weights: TensorStore,
        tokenizer_json: &[u8],
    ) -> Result<Gpt2Model> {
        let c = Gpt2Config::from_json(config_json)?;
        let weights = RefCell::new(weights);
        let root = Scope::new(&weights);
        // `GPT2LMHeadModel` checkpoints keep the model under `transformer`; `GPT2Model`'s do not.
        let w = match root.pp("transformer").pp("wte").contains("weight") {
            true => root.pp("transformer"),
            false => root,
        };
        let d = c.n_embd;
        let wte = w.pp("wte").weight_matrix("weight", c.vocab_size, d)?;
        let wpe = w.pp("wpe").weight_matrix("weight", c.n_positions, d)?;
        let h = (0..c.n_layer)
            .map(|i| Gpt2Block::load(&w.pp("h").pp(i), &c, i))
            .collect::<Result<Vec<_>>>()?;
        let ln_f = LayerNorm::load(&w.pp("ln_f"), d, c.layer_norm_epsilon)?;
        let tokenizer = TextTokenizer::from_bytes(tokenizer_json, c.max_positions())?;
        Ok(Gpt2Model {
            config: c,
            wte,
            wpe,
            h,
            ln_f,
            tokenizer,
            previous: PreviousForward::default(),
        })
    }

    /// The learned position embeddings of positions `0..n` (at most the viewer's positions):
    /// `# [n, n_embd]` row-major.
    pub fn position_table(&self, n: usize) -> Vec<f32> {
        let (rows, d) = (n.min(self.config.max_positions()), self.config.n_embd);
        let mut out = vec![0.0; rows * d];
        out.chunks_exact_mut(d).enumerate().for_each(|(i, row)| self.wpe.row_into(i, row));
        out
    }

    /// x = wte[id] + wpe[start + i]                                              # [T, d]
    fn embed(&self, ids: &[u32], start: usize) -> Result<Mat> {
        let d = self.config.n_embd;
        if start + ids.len() > self.config.max_positions() {
            return Err(Error::InvalidInput(format!(
                "{} positions, more than the {} this model runs",
                start + ids.len(),
                self.config.max_positions()
            )));
        }
        let mut x = Mat::zeros(ids.len(), d);
        let mut pe = vec![0.0; d];
        for (i, &id) in ids.iter().enumerate() {
            if id as usize >= self.config.vocab_size {
                return Err(invalid_model(format!(
                    "token id {id} is outside the vocabulary ({})",
                    self.config.vocab_size
                )));
            }
            self.wpe.row_into(start + i, &mut pe);
            let row = x.row_mut(i);
            self.wte.row_into(id as usize, row);
            row.iter_mut().zip(&pe).for_each(|(v, p)| *v += p);
        }
        Ok(x)
    }
}

impl CausalLm for Gpt2Model {
    /// The learned position embeddings (`wpe`).
    fn positions(&self, n: usize) -> PositionTable {
        let dims = self.config.n_embd;
        let data = self.position_table(n);
        PositionTable {
            kind: PositionKind::Learned,
            positions: data.len() / dims.max(1),
            dims,
            data,
            wave: None,
        }
    }

    fn previous_forward(&self) -> &PreviousForward {
        &self.previous
    }

    fn spec(&self) -> DecoderSpec<'_> {
        let c = &self.config;
        DecoderSpec {
            tokenizer: &self.tokenizer,
            layers: self.h.len(),
            heads: c.n_head,
            kv_heads: c.n_head,
            head_dim: c.head_dim(),
            max_positions: c.max_positions(),
            vocab_size: c.vocab_size,
            eos_token_ids: &c.eos_token_ids,
            bos_token_id: c.bos_token_id,
            // GPT-2 is trained without a BOS before the text.
            add_bos: false,
        }
    }

    fn step(
        &self,
        ids: &[u32],
        start: usize,
        cache: &mut [KvCache],
        probe: &mut Probe,
    ) -> Result<Vec<f32>> {
        let mut x = self.embed(ids, start)?;
        let mut lens = probe.wants_lens().then(Vec::new); // each block's output, for the logit lens
        for (block, c) in self.h.iter().zip(cache.iter_mut()) {
            x = block.forward(&x, start, c, probe);
            if let Some(outputs) = &mut lens {
                outputs.push(x.clone());
            }
        }
        if let Some(outputs) = lens {
            let through = |h: &Mat| self.wte.linear(&self.ln_f.forward(h), None);
            probe.record_lens_through(&outputs, through, |id| self.tokenizer.id_to_token(id));
        }
        let mut last = Mat::from_vec(1, x.cols(), x.row(x.rows() - 1).to_vec());
        self.ln_f.apply(&mut last);
        Ok(self.wte.linear(&last, None).into_vec()) // [1, vocab]
    }
}

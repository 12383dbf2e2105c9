//! Llama-family causal decoder (SmolLM2, TinyLlama, Llama 2/3 layouts): pre-RMSNorm blocks,
//! rotary positions, grouped-query attention (several query heads share one key/value head),
//! SwiGLU feed-forward, tied or separate output head. Loads from GGUF (weights stay in their
//! quantised blocks, tokenizer from the metadata) or from a Hugging Face folder (config.json,
//! model.safetensors, tokenizer.json). Records `decoder_self` attention for every layer; a KV
//! cache makes each generated token one step, not a re-run of the prefix. Each struct mirrors
//! one module of Hugging Face's `LlamaForCausalLM` (named like its weights) and has its own
//! `forward`.

use super::decoder::{CausalLm, DecoderSpec, PreviousForward};
use super::family::{Architecture, Family, ModelFiles, PositionKind, PositionTable, Sizes, Wave};
use crate::error::{invalid_model, Error, Result};
use crate::nn::attention::{KvCache, Mask, MultiHead};
use crate::nn::layers::RmsNorm;
use crate::nn::probe::{Probe, Site};
use crate::result::{AttentionKind, BlockNorm};
use crate::tensor::{silu, Mat, WeightMatrix};
use crate::tokenize::TextTokenizer;
use crate::weights::gguf::Gguf;
use crate::weights::{Scope, TensorStore};
use serde::Deserialize;
use std::cell::RefCell;

pub use super::decoder::MAX_POSITIONS;

/// The Llama family to loading, inspection and messages: a Hugging Face folder or one GGUF.
pub const ARCHITECTURE: Architecture = Architecture {
    model_types: &["llama"],
    display_name: |_| "Llama",
    hf_alternative: " (or one .gguf file)",
    hf_hint: "",
    own_files: gguf_file,
    load,
    sizes: |config_json| Ok(sizes(&LlamaConfig::from_hf_json(config_json)?)),
    gguf_sizes: Some(|g| Ok(sizes(&LlamaConfig::from_gguf(g)?))),
};

/// A folder without config.json: its .gguf file.
fn gguf_file(names: &[String]) -> Option<Result<Vec<String>>> {
    names.iter().find(|n| n.ends_with(".gguf")).map(|g| Ok(vec![g.clone()]))
}

/// From one GGUF file (its weights stay in the file's bytes) or a Hugging Face folder.
fn load(files: &mut ModelFiles) -> Result<Box<dyn Family>> {
    if let Some(g) = files.gguf()? {
        return Ok(Box::new(LlamaModel::load_gguf(&g)?));
    }
    let weights = files
        .safetensors()?
        .ok_or_else(|| invalid_model("no .safetensors or .gguf file in the manifest"))?;
    Ok(Box::new(LlamaModel::load_hf(
        files.get("config.json")?,
        weights,
        files.get("tokenizer.json")?,
    )?))
}

fn sizes(c: &LlamaConfig) -> Sizes {
    Sizes {
        layers: c.num_hidden_layers,
        heads: c.num_attention_heads,
        kv_heads: c.num_key_value_heads,
        hidden: c.hidden_size,
        max_positions: c.max_positions(),
        decoder: None,
    }
}

/// How the two halves of each rotated pair sit in a head's vector: llama.cpp's GGUF
/// converter permutes q/k rows so that pairs are adjacent `(2i, 2i+1)`; Hugging Face
/// checkpoints pair `(i, i + d/2)` (`rotate_half`). Attention is the same either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RopeLayout {
    Adjacent,
    Halves,
}

#[derive(Clone, Debug)]
pub struct LlamaConfig {
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub vocab_size: usize,
    pub rms_norm_eps: f32,
    pub rope_theta: f64,
    pub rope_layout: RopeLayout,
    /// The model's own context length (the viewer runs at most [`MAX_POSITIONS`]).
    pub max_position_embeddings: usize,
    pub eos_token_ids: Vec<u32>,
    pub bos_token_id: Option<u32>,
    pub add_bos: bool,
}

impl LlamaConfig {
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    fn check(self) -> Result<LlamaConfig> {
        let sizes = [
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("num_key_value_heads", self.num_key_value_heads),
            ("vocab_size", self.vocab_size),
        ];
        if let Some((key, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Err(invalid_model(format!("llama config: {key} is 0 (it must be at least 1)")));
        }
        if self.hidden_size % self.num_attention_heads != 0 || self.head_dim() % 2 != 0 {
            return Err(invalid_model(format!("llama config: hidden_size {} is not an even head size times num_attention_heads {}", self.hidden_size, self.num_attention_heads)));
        }
        if self.num_attention_heads % self.num_key_value_heads != 0 {
            return Err(invalid_model(format!(
                "llama config: {} query heads cannot share {} key/value heads evenly",
                self.num_attention_heads, self.num_key_value_heads
            )));
        }
        if !(self.rope_theta > 1.0
            && self.rope_theta.is_finite()
            && self.rms_norm_eps >= 0.0
            && self.rms_norm_eps.is_finite())
        {
            return Err(invalid_model(format!(
                "llama config: rope base {} or RMSNorm eps {} is out of range",
                self.rope_theta, self.rms_norm_eps
            )));
        }
        // Every layer's maps for the longest input, as the viewer keeps them.
        let t = self.max_positions();
        super::family::check_attention_budget(
            "this model",
            &[(self.num_hidden_layers, self.num_attention_heads, t, t)],
        )?;
        // And one forward's activations at that length (x, q, k, v, context: hidden_size wide;
        // gate, up: intermediate_size wide), f32: a tiny file can declare an FFN whose
        // activations a long text would make huge.
        let (d, ffn) = (self.hidden_size as u64, self.intermediate_size as u64);
        let bytes = d
            .checked_mul(5)
            .zip(ffn.checked_mul(2))
            .and_then(|(a, b)| a.checked_add(b))
            .and_then(|w| w.checked_mul(4 * t as u64));
        if !bytes.is_some_and(|b| b <= crate::limits::MEMORY_BUDGET_BYTES) {
            let need =
                bytes.map_or_else(|| "too much to count".to_string(), crate::limits::human_bytes);
            return Err(invalid_model(format!(
                "llama config: hidden_size {d} and intermediate_size {ffn} need {need} of activations for {t} positions, more than {}",
                crate::limits::budget()
            )));
        }
        Ok(self)
    }

    pub fn max_positions(&self) -> usize {
        self.max_position_embeddings.clamp(1, MAX_POSITIONS)
    }

    pub(crate) fn from_gguf(g: &Gguf) -> Result<LlamaConfig> {
        let arch = g.str("general.architecture")?;
        if arch != "llama" {
            return Err(Error::UnsupportedArchitecture(format!(
                "GGUF architecture `{arch}` (this build runs llama)"
            )));
        }
        let size = |key: &str| -> Result<usize> {
            usize::try_from(g.u64(&format!("llama.{key}"))?)
                .map_err(|_| invalid_model(format!("{}: llama.{key} is too large", g.file())))
        };
        let heads = size("attention.head_count")?;
        if g.metadata.contains_key("llama.rope.scaling.type")
            && g.str("llama.rope.scaling.type").unwrap_or("none") != "none"
        {
            return Err(Error::UnsupportedArchitecture(
                "scaled rotary positions (llama.rope.scaling.type)".into(),
            ));
        }
        let id = |key: &str| g.u64(key).ok().and_then(|v| u32::try_from(v).ok());
        let eos_token_ids = [id("tokenizer.ggml.eos_token_id"), id("tokenizer.ggml.eot_token_id")]
            .into_iter()
            .flatten()
            .collect();
        let config = LlamaConfig {
            hidden_size: size("embedding_length")?,
            intermediate_size: size("feed_forward_length")?,
            num_hidden_layers: size("block_count")?,
            num_attention_heads: heads,
            num_key_value_heads: size("attention.head_count_kv").unwrap_or(heads),
            vocab_size: g.array("tokenizer.ggml.tokens")?.len(),
            rms_norm_eps: g.f64("llama.attention.layer_norm_rms_epsilon")? as f32,
            rope_theta: g.f64("llama.rope.freq_base").unwrap_or(10_000.0),
            rope_layout: RopeLayout::Adjacent,
            max_position_embeddings: size("context_length").unwrap_or(MAX_POSITIONS),
            eos_token_ids,
            bos_token_id: id("tokenizer.ggml.bos_token_id"),
            add_bos: g
                .metadata
                .get("tokenizer.ggml.add_bos_token")
                .is_some_and(|v| *v == crate::weights::gguf::Value::Bool(true)),
        }
        .check()?;
        // After `check`: the head size is only meaningful once the head count is.
        if let Ok(rot) = g.u64("llama.rope.dimension_count") {
            if rot != config.head_dim() as u64 {
                return Err(Error::UnsupportedArchitecture(format!(
                    "rotary positions on {rot} of {} head dimensions (only full rotation)",
                    config.head_dim()
                )));
            }
        }
        Ok(config)
    }

    pub(crate) fn from_hf_json(bytes: &[u8]) -> Result<LlamaConfig> {
        #[derive(Deserialize)]
        struct Hf {
            hidden_size: usize,
            intermediate_size: usize,
            num_hidden_layers: usize,
            num_attention_heads: usize,
            num_key_value_heads: Option<usize>,
            vocab_size: usize,
            #[serde(default = "eps")]
            rms_norm_eps: f64,
            #[serde(default = "theta")]
            rope_theta: f64,
            #[serde(default = "positions")]
            max_position_embeddings: usize,
            #[serde(default)]
            rope_scaling: Option<serde_json::Value>,
            #[serde(default)]
            head_dim: Option<usize>,
            #[serde(default = "silu_name")]
            hidden_act: String,
            #[serde(default)]
            eos_token_id: Option<serde_json::Value>,
            #[serde(default)]
            bos_token_id: Option<u32>,
        }
        fn eps() -> f64 {
            1e-6
        }
        fn theta() -> f64 {
            10_000.0
        }
        fn positions() -> usize {
            2048
        }
        fn silu_name() -> String {
            "silu".into()
        }
        let c: Hf = serde_json::from_slice(bytes)
            .map_err(|e| invalid_model(format!("config.json is not a llama config ({e})")))?;
        if c.rope_scaling.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(Error::UnsupportedArchitecture(
                "config.json: scaled rotary positions (rope_scaling)".into(),
            ));
        }
        if c.hidden_act != "silu" {
            return Err(Error::UnsupportedArchitecture(format!(
                "config.json: llama hidden_act `{}` (only silu)",
                c.hidden_act
            )));
        }
        if c.head_dim.is_some_and(|d| d * c.num_attention_heads != c.hidden_size) {
            return Err(Error::UnsupportedArchitecture(
                "config.json: head_dim × num_attention_heads differs from hidden_size".into(),
            ));
        }
        let eos_token_ids = match c.eos_token_id {
            Some(serde_json::Value::Array(a)) => {
                a.iter().filter_map(|v| v.as_u64().and_then(|v| u32::try_from(v).ok())).collect()
            }
            Some(v) => v.as_u64().and_then(|v| u32::try_from(v).ok()).into_iter().collect(),
            None => Vec::new(),
        };
        LlamaConfig {
            hidden_size: c.hidden_size,
            intermediate_size: c.intermediate_size,
            num_hidden_layers: c.num_hidden_layers,
            num_attention_heads: c.num_attention_heads,
            num_key_value_heads: c.num_key_value_heads.unwrap_or(c.num_attention_heads),
            vocab_size: c.vocab_size,
            rms_norm_eps: c.rms_norm_eps as f32,
            rope_theta: c.rope_theta,
            rope_layout: RopeLayout::Halves,
            max_position_embeddings: c.max_position_embeddings,
            eos_token_ids,
            bos_token_id: c.bos_token_id,
            // tokenizer.json's post-processor adds a BOS where the checkpoint wants one.
            add_bos: false,
        }
        .check()
    }
}

/// Where the weights come from: a GGUF, which names the modules as llama.cpp does
/// (`blk.N.attn_q`), or a Hugging Face folder (`model.layers.N.self_attn.q_proj`), whose
/// config.json says whether the output head is tied to the embedding.
struct Source<'a> {
    root: Scope<'a>,
    gguf: bool,
    tied: bool,
}

impl<'a> Source<'a> {
    /// The module `names` = (GGUF name, Hugging Face name) below `w`, as this file names it.
    fn module(&self, w: &Scope<'a>, names: (&str, &str)) -> Scope<'a> {
        w.pp(if self.gguf { names.0 } else { names.1 })
    }

    /// A separate output head `[rows, cols]`, or `None` when the embedding is tied to it.
    fn lm_head(&self, rows: usize, cols: usize) -> Result<Option<WeightMatrix>> {
        let head = self.module(&self.root, ("output", "lm_head"));
        // A GGUF holds `output.weight` when the head is separate; a Hugging Face folder whose
        // config.json says it is not tied must hold `lm_head.weight`.
        match head.contains("weight") || !(self.gguf || self.tied) {
            true => Ok(Some(head.weight_matrix("weight", rows, cols)?)),
            false => Ok(None),
        }
    }
}

/// cos and sin of every rotation angle, `# [positions, d_k / 2]`.
struct RotaryTable {
    cos: Vec<f32>,
    sin: Vec<f32>,
    half: usize,
    layout: RopeLayout,
    /// The dimensions of each pair that turns together, and its θ_i (the score parts').
    pairs: Vec<(usize, usize)>,
    frequencies: Vec<f64>,
}

impl LlamaConfig {
    /// Pair i of a head turns by θ_i = base^(−i/(d_k/2)) = base^(−2i/d_k) radians per position.
    pub fn rotary_wave(&self) -> Wave {
        Wave { base: self.rope_theta, denominator: (self.head_dim() / 2) as f64 }
    }
}

impl RotaryTable {
    fn new(c: &LlamaConfig) -> RotaryTable {
        let half = c.head_dim() / 2;
        let wave = c.rotary_wave();
        let (mut cos, mut sin) = (Vec::new(), Vec::new());
        for pos in 0..c.max_positions() {
            for i in 0..half {
                // Computed in f64 as the references do.
                let angle = pos as f64 * wave.frequency(i);
                cos.push(angle.cos() as f32);
                sin.push(angle.sin() as f32);
            }
        }
        let layout = c.rope_layout;
        let pairs = (0..half).map(|i| RotaryTable::pair(layout, half, i)).collect();
        let frequencies = (0..half).map(|i| wave.frequency(i)).collect();
        RotaryTable { cos, sin, half, layout, pairs, frequencies }
    }

    /// The two dimensions of a head that pair `i` turns.
    fn pair(layout: RopeLayout, half: usize, i: usize) -> (usize, usize) {
        match layout {
            RopeLayout::Adjacent => (2 * i, 2 * i + 1),
            RopeLayout::Halves => (i, i + half),
        }
    }

    /// Rotates every head of `x` `# [T, heads·d_k]` whose row `r` sits at position `start + r`.
    fn apply(&self, x: &mut Mat, start: usize) {
        let d_k = 2 * self.half;
        for r in 0..x.rows() {
            let at = (start + r) * self.half;
            let (cos, sin) = (&self.cos[at..at + self.half], &self.sin[at..at + self.half]);
            for head in x.row_mut(r).chunks_exact_mut(d_k) {
                for i in 0..self.half {
                    let (a, b) = RotaryTable::pair(self.layout, self.half, i);
                    let (x0, x1) = (head[a], head[b]);
                    head[a] = x0 * cos[i] - x1 * sin[i];
                    head[b] = x0 * sin[i] + x1 * cos[i];
                }
            }
        }
    }
}

/// `model.layers.N.self_attn.*`
struct LlamaAttention {
    q_proj: WeightMatrix, // [heads·d_k, d]
    k_proj: WeightMatrix, // [kv_heads·d_k, d]
    v_proj: WeightMatrix, // [kv_heads·d_k, d]
    o_proj: WeightMatrix, // [d, heads·d_k]
    attn: MultiHead,
}

impl LlamaAttention {
    /// h `[T, d]` (normed), rows at positions `start..` → the attention's output `[T, d]`
    /// (through o_proj), and the heads' outputs concatenated before it `[T, heads·d_k]` (the
    /// step view's); keys and values are written into `cache`.
    fn forward(
        &self,
        h: &Mat,
        start: usize,
        rope: &RotaryTable,
        cache: &mut KvCache,
        probe: &mut Probe,
    ) -> (Mat, Mat) {
        let mut q = self.q_proj.linear(h, None); // [T, heads·d_k]
        let mut k = self.k_proj.linear(h, None); // [T, kv·d_k]
        let v = self.v_proj.linear(h, None); // [T, kv·d_k]
        rope.apply(&mut q, start);
        rope.apply(&mut k, start);
        self.attn.offer_rotary_split(probe, &rope.pairs, &rope.frequencies);
        cache.append(&k, &v);
        // # [heads, T, start + T]
        let mask = Mask::Causal { first_query_position: start };
        let heads = self.attn.attend(&q, cache, mask, &self.o_proj, probe); // [T, heads·d_k]
        (self.o_proj.linear(&heads, None), heads)
    }
}

/// `model.layers.N.mlp.*`: down(silu(gate(x)) ⊙ up(x)).
struct LlamaMlp {
    gate_proj: WeightMatrix, // [ffn, d]
    up_proj: WeightMatrix,   // [ffn, d]
    down_proj: WeightMatrix, // [d, ffn]
}

impl LlamaMlp {
    fn forward(&self, x: &Mat) -> Mat {
        let mut gate = self.gate_proj.linear(x, None); // [T, ffn]
        let up = self.up_proj.linear(x, None); // [T, ffn]
        for (g, u) in gate.as_mut_slice().iter_mut().zip(up.as_slice()) {
            *g = silu(*g) * u;
        }
        self.down_proj.linear(&gate, None) // [T, d]
    }
}

/// `model.layers.N`: x = x + self_attn(input_layernorm(x)); x = x + mlp(post_attention_layernorm(x)).
struct LlamaDecoderLayer {
    input_layernorm: RmsNorm,
    self_attn: LlamaAttention,
    post_attention_layernorm: RmsNorm,
    mlp: LlamaMlp,
}

impl LlamaDecoderLayer {
    fn load(src: &Source, i: usize, c: &LlamaConfig) -> Result<LlamaDecoderLayer> {
        let (d, ffn, dk) = (c.hidden_size, c.intermediate_size, c.head_dim());
        let kv = c.num_key_value_heads * dk;
        let layer = src.module(&src.root, ("blk", "model.layers")).pp(i);
        let m = |names, rows, cols| src.module(&layer, names).weight_matrix("weight", rows, cols);
        let norm = |names| RmsNorm::load(&src.module(&layer, names), d, c.rms_norm_eps);
        let self_attn = LlamaAttention {
            q_proj: m(("attn_q", "self_attn.q_proj"), d, d)?,
            k_proj: m(("attn_k", "self_attn.k_proj"), kv, d)?,
            v_proj: m(("attn_v", "self_attn.v_proj"), kv, d)?,
            o_proj: m(("attn_output", "self_attn.o_proj"), d, d)?,
            attn: MultiHead::new(
                Site { kind: AttentionKind::DecoderSelf, layer: i },
                c.num_attention_heads,
                c.num_key_value_heads,
                dk,
            ),
        };
        let mlp = LlamaMlp {
            gate_proj: m(("ffn_gate", "mlp.gate_proj"), ffn, d)?,
            up_proj: m(("ffn_up", "mlp.up_proj"), ffn, d)?,
            down_proj: m(("ffn_down", "mlp.down_proj"), d, ffn)?,
        };
        let input_layernorm = norm(("attn_norm", "input_layernorm"))?;
        let post_attention_layernorm = norm(("ffn_norm", "post_attention_layernorm"))?;
        Ok(LlamaDecoderLayer { input_layernorm, self_attn, post_attention_layernorm, mlp })
    }

    /// x `[T, d]` at positions `start..` → `[T, d]`.
    fn forward(
        &self,
        x: &Mat,
        start: usize,
        rope: &RotaryTable,
        cache: &mut KvCache,
        probe: &mut Probe,
    ) -> Mat {
        // x = x + self_attn(input_layernorm(x)), and h = post_attention_layernorm(x)
        let h = self.input_layernorm.forward(x);
        let (attn, heads) = self.self_attn.forward(&h, start, rope, cache, probe);
        let norm = (BlockNorm::PreRmsNorm, |x: &Mat| self.post_attention_layernorm.forward(x));
        let (x, h) = self.self_attn.attn.pre_norm_residual(x, &heads, &attn, norm, probe);
        x + &self.mlp.forward(&h) // x = x + mlp(post_attention_layernorm(x))
    }
}

pub struct LlamaModel {
    pub config: LlamaConfig,
    embed_tokens: WeightMatrix, // [vocab, d]
    layers: Vec<LlamaDecoderLayer>,
    norm: RmsNorm,
    /// `None`: tied to `embed_tokens`.
    lm_head: Option<WeightMatrix>, // [vocab, d]
    rope: RotaryTable,
    tokenizer: TextTokenizer,
    /// The last forward, which the next text starts from.
    previous: PreviousForward,
}

impl LlamaModel {
    /// From a GGUF file (weights, config and tokenizer all inside).
    pub fn load_gguf(g: &Gguf) -> Result<LlamaModel> {
        let config = LlamaConfig::from_gguf(g)?;
        let tokenizer = crate::tokenize::gguf_bpe::from_gguf(g, config.max_positions())?;
        LlamaModel::load(
            config,
            Source { root: Scope::gguf(g), gguf: true, tied: false },
            tokenizer,
        )
    }

    /// From a Hugging Face folder's config.json, model.safetensors and tokenizer.json.
    pub fn load_hf(
        config_json: &[u8],
        weights: TensorStore,
        tokenizer_json: &[u8],
    ) -> Result<LlamaModel> {
        let config = LlamaConfig::from_hf_json(config_json)?;
        let tied = serde_json::from_slice::<serde_json::Value>(config_json)
            .ok()
            .and_then(|v| v.get("tie_word_embeddings").and_then(|t| t.as_bool()))
            .unwrap_or(false);
        let tokenizer = TextTokenizer::from_bytes(tokenizer_json, config.max_positions())?;
        let weights = RefCell::new(weights);
        LlamaModel::load(
            config,
            Source { root: Scope::new(&weights), gguf: false, tied },
            tokenizer,
        )
    }

    fn load(config: LlamaConfig, src: Source, tokenizer: TextTokenizer) -> Result<LlamaModel> {
        let (vocab, d) = (config.vocab_size, config.hidden_size);
        let embed_tokens = src
            .module(&src.root, ("token_embd", "model.embed_tokens"))
            .weight_matrix("weight", vocab, d)?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| LlamaDecoderLayer::load(&src, i, &config))
            .collect::<Result<Vec<_>>>()?;
        let norm = RmsNorm::load(
            &src.module(&src.root, ("output_norm", "model.norm")),
            d,
            config.rms_norm_eps,
        )?;
        let lm_head = src.lm_head(vocab, d)?;
        Ok(LlamaModel {
            rope: RotaryTable::new(&config),
            config,
            embed_tokens,
            layers,
            norm,
            lm_head,
            tokenizer,
            previous: PreviousForward::default(),
        })
    }

    /// cos(p·θ_i) then sin(p·θ_i), i < d_k/2, for positions `0..n`: the rotations applied to
    /// queries and keys.                                                       # [n, d_k]
    pub fn rotary_table(&self, n: usize) -> Vec<f32> {
        let half = self.rope.half;
        (0..n.min(self.config.max_positions()))
            .flat_map(|p| {
                self.rope.cos[p * half..(p + 1) * half]
                    .iter()
                    .chain(&self.rope.sin[p * half..(p + 1) * half])
                    .copied()
            })
            .collect()
    }

    /// x = embed_tokens[id]                                                      # [T, d]
    fn embed(&self, ids: &[u32]) -> Result<Mat> {
        let d = self.config.hidden_size;
        let mut x = Mat::zeros(ids.len(), d);
        for (i, &id) in ids.iter().enumerate() {
            if id as usize >= self.config.vocab_size {
                return Err(invalid_model(format!(
                    "token id {id} is outside the vocabulary ({})",
                    self.config.vocab_size
                )));
            }
            self.embed_tokens.row_into(id as usize, x.row_mut(i));
        }
        Ok(x)
    }
}

impl CausalLm for LlamaModel {
    /// Nothing is added: the rotations of queries and keys, cos then sin.
    fn positions(&self, n: usize) -> PositionTable {
        PositionTable {
            kind: PositionKind::Rotary,
            positions: n,
            dims: self.config.head_dim(),
            data: self.rotary_table(n),
            wave: Some(self.config.rotary_wave()),
        }
    }

    fn previous_forward(&self) -> &PreviousForward {
        &self.previous
    }

    fn spec(&self) -> DecoderSpec<'_> {
        let c = &self.config;
        DecoderSpec {
            tokenizer: &self.tokenizer,
            layers: self.layers.len(),
            heads: c.num_attention_heads,
            kv_heads: c.num_key_value_heads,
            head_dim: c.head_dim(),
            max_positions: c.max_positions(),
            vocab_size: c.vocab_size,
            eos_token_ids: &c.eos_token_ids,
            bos_token_id: c.bos_token_id,
            add_bos: c.add_bos,
        }
    }

    fn step(
        &self,
        ids: &[u32],
        start: usize,
        cache: &mut [KvCache],
        probe: &mut Probe,
    ) -> Result<Vec<f32>> {
        let mut x = self.embed(ids)?;
        let mut lens = probe.wants_lens().then(Vec::new); // each layer's output, for the logit lens
        for (layer, c) in self.layers.iter().zip(cache.iter_mut()) {
            x = layer.forward(&x, start, &self.rope, c, probe);
            if let Some(outputs) = &mut lens {
                outputs.push(x.clone());
            }
        }
        let unembed = self.lm_head.as_ref().unwrap_or(&self.embed_tokens);
        if let Some(outputs) = lens {
            let through = |h: &Mat| unembed.linear(&self.norm.forward(h), None);
            probe.record_lens_through(&outputs, through, |id| self.tokenizer.id_to_token(id));
        }
        let last = Mat::from_vec(1, x.cols(), x.row(x.rows() - 1).to_vec());
        let h = self.norm.forward(&last);
        Ok(unembed.linear(&h, None).into_vec())
    }
}

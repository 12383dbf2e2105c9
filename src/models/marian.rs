//! Marian transformer with an SSRU decoder (Bergamot "tiny" student models, e.g. en→pt).
//! Encoder: post-norm self-attention + FFN layers. Decoder: per layer an SSRU recurrent cell
//! (there is no decoder self-attention), cross-attention to the encoder (`context`), FFN.
//! Greedy decoding, one step per target token, with the SSRU state and the encoder-side K/V
//! cached. Returns `encoder_self` attention per encoder layer and `cross` attention per
//! decoder layer, `[heads, T_tgt, T_src]`, where row t is the step that produced target token t.
//! Sizes come from the tensor shapes and the embedded `model.yml`. Each struct is one group of
//! weights (named like them: `encoder_l1_self_*`, `decoder_l1_rnn_*`) with its own `forward`.

use super::family::{
    Architecture, Family, FamilyShape, ModelFiles, PositionKind, PositionTable, Sizes, Wave,
};
use crate::error::{invalid_model, Error, Result};
use crate::nn::attention::{KvCache, Mask, MultiHead};
use crate::nn::layers::{LayerNorm, Linear};
use crate::nn::probe::{Probe, Site};
use crate::result::{AttentionKind, ForwardOutput, GenerateOptions, StopReason};
use crate::tensor::{gelu, relu, sigmoid, silu, Mat, WeightMatrix};
use crate::tokenize::TextTokenizer;
use crate::weights::marian_bin::{self, yml_value};
use crate::weights::TensorStore;
use serde::Deserialize;

/// What an opus-mt folder must hold: Hugging Face ships its tokenizer as source.spm,
/// target.spm and vocab.json, which the page cannot read.
pub const MARIAN_HF_FILES: &str = "a Marian (opus-mt) folder needs config.json, model.safetensors and tokenizer.json; opus-mt ships source.spm, target.spm and vocab.json instead of tokenizer.json: make one with scripts/opus_mt_tokenizer.py (the `tokenizers` library; its ids are vocab.json's) and put it beside the others";

/// The Marian family to loading, inspection and messages: a Bergamot .bin or a Hugging Face
/// opus-mt folder.
pub const ARCHITECTURE: Architecture = Architecture {
    model_types: &["marian"],
    display_name: |_| "Marian",
    hf_alternative: "",
    hf_hint: MARIAN_HF_FILES,
    own_files: bergamot_files,
    load,
    sizes,
    gguf_sizes: None,
};

/// A folder without config.json: a Bergamot `model*.bin` and its tokenizer.json.
fn bergamot_files(names: &[String]) -> Option<Result<Vec<String>>> {
    let bin = names.iter().find(|n| n.ends_with(".bin") && n.starts_with("model"))?;
    Some(match names.iter().any(|n| n == "tokenizer.json") {
        true => Ok(vec![bin.clone(), "tokenizer.json".into()]),
        false => Err(invalid_model("a Marian folder needs tokenizer.json beside the model .bin")),
    })
}

/// From a Hugging Face opus-mt folder, or a Bergamot .bin and tokenizer.json.
fn load(files: &mut ModelFiles) -> Result<Box<dyn Family>> {
    if let Some(weights) = files.safetensors()? {
        return Ok(Box::new(MarianModel::load_hf(
            files.get("config.json")?,
            weights,
            files.get("tokenizer.json")?,
        )?));
    }
    let bin = files
        .listed(".bin")
        .ok_or_else(|| invalid_model("no Marian .bin or .safetensors file in the manifest"))?;
    Ok(Box::new(MarianModel::load(files.get(&bin)?, &bin, files.get("tokenizer.json")?)?))
}

/// An opus-mt config's sizes, with the decoder's layers and maps (self- and cross-attention).
fn sizes(config_json: &[u8]) -> Result<Sizes> {
    let m = MarianConfig::from_hf_json(config_json)?;
    let (ts, tt) = (m.max_source as u64, m.max_target as u64);
    let per_layer =
        (m.heads as u64).saturating_mul(tt).saturating_mul(tt.saturating_add(ts)).saturating_mul(4);
    let decoder = Some((m.dec_depth, per_layer.saturating_mul(m.dec_depth as u64)));
    Ok(Sizes {
        layers: m.enc_depth,
        heads: m.heads,
        kv_heads: m.heads,
        hidden: m.dim_emb,
        max_positions: m.max_source,
        decoder,
    })
}

/// Bergamot's `</s>`: appended to the source, and the end of decoding.
const BERGAMOT_EOS_ID: u32 = 0;
/// Longest source we encode (the sinusoidal positions have no limit; this bounds the work).
const MAX_SOURCE_TOKENS: usize = 256;
/// Bergamot's `max-length-factor`: the target may be at most this many times the source.
const MAX_LENGTH_FACTOR: f32 = 2.5;

/// Which Marian convention a model follows: tensor names, positions, decoder, special ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarianFlavor {
    /// A Bergamot .bin: SSRU decoder, LayerNorm eps 1e-9, sinusoid frequencies
    /// 10000^(−i/(d/2−1)), the first decoder input a zero vector.
    Bergamot,
    /// A Hugging Face opus-mt folder: decoder self-attention, LayerNorm eps 1e-5, sinusoid
    /// frequencies 10000^(−2i/d) (`MarianSinusoidalPositionalEmbedding`), the first decoder
    /// input the embedding of `decoder_start_token_id`.
    HuggingFace,
}

/// The FFN's activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    Relu,
    Gelu,
    Swish,
}

impl Activation {
    fn apply(self, x: f32) -> f32 {
        match self {
            Activation::Relu => relu(x),
            Activation::Gelu => gelu(x),
            Activation::Swish => silu(x),
        }
    }
}

#[derive(Clone, Debug)]
pub struct MarianConfig {
    pub flavor: MarianFlavor,
    pub dim_emb: usize,
    pub heads: usize,
    pub enc_depth: usize,
    pub dec_depth: usize,
    pub dim_ffn: usize,
    pub vocab: usize,
    pub activation: Activation,
    pub layer_norm_eps: f32,
    /// Embeddings × √d_model.
    pub scale_embedding: bool,
    /// Appended to the source; decoding stops there.
    pub eos_id: u32,
    /// The first decoder input's token (opus-mt: pad); `None`: a zero vector (Bergamot).
    pub decoder_start_id: Option<u32>,
    /// A token never generated (opus-mt's pad, as its `bad_words_ids` say).
    pub banned_id: Option<u32>,
    /// Longest source, `</s>` included, and longest target.
    pub max_source: usize,
    pub max_target: usize,
}

impl MarianConfig {
    fn from_file(yml: Option<&str>, w: &TensorStore) -> Result<MarianConfig> {
        let yml = yml.unwrap_or("");
        let opt = |k: &str| yml_value(yml, k);
        if let Some(autoreg) = opt("transformer-decoder-autoreg") {
            if autoreg != "rnn" || opt("dec-cell").is_some_and(|c| c != "ssru") {
                return Err(Error::UnsupportedArchitecture(format!("Marian decoder `{autoreg}` (only the SSRU decoder of Bergamot tiny models is supported)")));
            }
        }
        if opt("transformer-postprocess").is_some_and(|p| p != "dan")
            || opt("transformer-preprocess").is_some_and(|p| !p.is_empty() && p != "\"\"")
        {
            return Err(Error::UnsupportedArchitecture(
                "Marian pre-norm transformer (only post-norm `dan` is supported)".into(),
            ));
        }
        let (vocab, dim_emb) = match w.shape("Wemb") {
            Some([v, d]) => (*v, *d),
            _ => return Err(invalid_model("Marian model has no `Wemb` [vocab, dim] tensor")),
        };
        let count =
            |prefix: &str| (1..).take_while(|i| w.contains(&format!("{prefix}{i}_ffn_W1"))).count();
        let dim_ffn = match w.shape("encoder_l1_ffn_W1") {
            Some([ffn, _]) => *ffn,
            _ => return Err(invalid_model("Marian model has no `encoder_l1_ffn_W1`")),
        };
        let heads: usize = opt("transformer-heads").and_then(|h| h.parse().ok()).unwrap_or(8);
        let act = opt("transformer-ffn-activation").unwrap_or("relu");
        if act != "relu" {
            return Err(Error::UnsupportedArchitecture(format!(
                "Marian FFN activation `{act}` (only relu)"
            )));
        }
        MarianConfig {
            flavor: MarianFlavor::Bergamot,
            dim_emb,
            heads,
            enc_depth: count("encoder_l"),
            dec_depth: count("decoder_l"),
            dim_ffn,
            vocab,
            activation: Activation::Relu,
            layer_norm_eps: 1e-9,
            scale_embedding: true,
            eos_id: BERGAMOT_EOS_ID,
            decoder_start_id: None,
            banned_id: None,
            max_source: MAX_SOURCE_TOKENS,
            max_target: (MAX_SOURCE_TOKENS as f32 * MAX_LENGTH_FACTOR).ceil() as usize,
        }
        .checked()
    }

    /// A Hugging Face `MarianConfig` (config.json of an opus-mt folder).
    pub(crate) fn from_hf_json(bytes: &[u8]) -> Result<MarianConfig> {
        #[derive(Deserialize)]
        struct Hf {
            d_model: usize,
            encoder_layers: usize,
            decoder_layers: usize,
            encoder_attention_heads: usize,
            decoder_attention_heads: usize,
            encoder_ffn_dim: usize,
            decoder_ffn_dim: usize,
            vocab_size: usize,
            #[serde(default)]
            decoder_vocab_size: Option<usize>,
            #[serde(default = "swish")]
            activation_function: String,
            #[serde(default)]
            scale_embedding: bool,
            #[serde(default = "positions")]
            max_position_embeddings: usize,
            #[serde(default)]
            max_length: Option<usize>,
            #[serde(default)]
            eos_token_id: u32,
            pad_token_id: u32,
            #[serde(default)]
            decoder_start_token_id: Option<u32>,
            #[serde(default)]
            normalize_before: bool,
            #[serde(default = "yes")]
            share_encoder_decoder_embeddings: bool,
            #[serde(default = "yes")]
            tie_word_embeddings: bool,
        }
        fn swish() -> String {
            "swish".into()
        }
        fn positions() -> usize {
            1024
        }
        fn yes() -> bool {
            true
        }
        let c: Hf = serde_json::from_slice(bytes)
            .map_err(|e| invalid_model(format!("config.json is not a marian config ({e})")))?;
        let unsupported =
            |what: String| Err(Error::UnsupportedArchitecture(format!("config.json: {what}")));
        if c.encoder_attention_heads != c.decoder_attention_heads
            || c.encoder_ffn_dim != c.decoder_ffn_dim
        {
            return unsupported(format!(
                "encoder and decoder of different widths ({} / {} heads, FFN {} / {})",
                c.encoder_attention_heads,
                c.decoder_attention_heads,
                c.encoder_ffn_dim,
                c.decoder_ffn_dim
            ));
        }
        if c.normalize_before {
            return unsupported(
                "a pre-norm Marian (normalize_before: true); only post-norm is supported".into(),
            );
        }
        if !c.share_encoder_decoder_embeddings
            || !c.tie_word_embeddings
            || c.decoder_vocab_size.is_some_and(|v| v != c.vocab_size)
        {
            return unsupported("separate source/target embeddings or output projection; only the shared `model.shared.weight` is supported".into());
        }
        let activation = match c.activation_function.as_str() {
            "swish" | "silu" => Activation::Swish,
            "gelu" => Activation::Gelu,
            "relu" => Activation::Relu,
            other => {
                return unsupported(format!(
                    "activation_function `{other}` (supported: swish, gelu, relu)"
                ))
            }
        };
        let positions = c.max_position_embeddings;
        let max_source = positions.min(MAX_SOURCE_TOKENS);
        let max_target = (max_source as f32 * MAX_LENGTH_FACTOR).ceil() as usize;
        MarianConfig {
            flavor: MarianFlavor::HuggingFace,
            dim_emb: c.d_model,
            heads: c.encoder_attention_heads,
            enc_depth: c.encoder_layers,
            dec_depth: c.decoder_layers,
            dim_ffn: c.encoder_ffn_dim,
            vocab: c.vocab_size,
            activation,
            layer_norm_eps: 1e-5,
            scale_embedding: c.scale_embedding,
            eos_id: c.eos_token_id,
            decoder_start_id: Some(c.decoder_start_token_id.unwrap_or(c.pad_token_id)),
            banned_id: Some(c.pad_token_id),
            max_source,
            max_target: max_target.min(positions).min(c.max_length.unwrap_or(usize::MAX)),
        }
        .checked()
    }

    fn checked(self) -> Result<MarianConfig> {
        let (d, heads) = (self.dim_emb, self.heads);
        // Named as each convention names it.
        let d_name = if self.flavor == MarianFlavor::Bergamot { "dim-emb" } else { "d_model" };
        if self.vocab == 0
            || d == 0
            || self.dim_ffn == 0
            || self.max_source < 2
            || self.max_target == 0
        {
            return Err(invalid_model(format!(
                "Marian model has an empty dimension (vocabulary {}, {d_name} {d}, FFN {}, {} positions)",
                self.vocab, self.dim_ffn, self.max_source
            )));
        }
        if heads == 0 || d % heads != 0 || d % 2 != 0 {
            return Err(invalid_model(format!("{d_name} {d} does not split into {heads} heads")));
        }
        if self.enc_depth == 0 || self.dec_depth == 0 {
            return Err(invalid_model("Marian model has no encoder or no decoder layers"));
        }
        let ids = [Some(self.eos_id), self.decoder_start_id, self.banned_id];
        if let Some(id) = ids.into_iter().flatten().find(|&id| id as usize >= self.vocab) {
            return Err(invalid_model(format!(
                "config.json: special token id {id} is outside the vocabulary of {}",
                self.vocab
            )));
        }
        Ok(self)
    }

    /// The longest target, for a source of `source_len` tokens.
    fn max_target_for(&self, source_len: usize) -> usize {
        ((source_len as f32 * MAX_LENGTH_FACTOR).ceil() as usize).max(4).min(self.max_target)
    }
}

/// The tensor names of one attention block (`W{q,k,v,o}`, `b{q,k,v,o}`, LayerNorm).
struct AttentionNames {
    weights: [String; 4],
    biases: [String; 4],
    ln: [String; 2],
}

/// The tensor names of one FFN block (`W1`, `b1`, `W2`, `b2`, LayerNorm).
struct FfnNames {
    w1: [String; 2],
    w2: [String; 2],
    ln: [String; 2],
}

/// Which attention of a layer.
#[derive(Clone, Copy, PartialEq)]
enum Block {
    EncoderSelf,
    DecoderSelf,
    Cross,
}

impl MarianFlavor {
    /// Bergamot `encoder_l1_self_Wq` …; Hugging Face `model.encoder.layers.0.self_attn.q_proj.weight` ….
    fn attention_names(self, block: Block, layer: usize) -> AttentionNames {
        match self {
            MarianFlavor::Bergamot => {
                let p = match block {
                    Block::EncoderSelf => format!("encoder_l{}_self", layer + 1),
                    Block::DecoderSelf => format!("decoder_l{}_self", layer + 1),
                    Block::Cross => format!("decoder_l{}_context", layer + 1),
                };
                AttentionNames {
                    weights: ["q", "k", "v", "o"].map(|m| format!("{p}_W{m}")),
                    biases: ["q", "k", "v", "o"].map(|m| format!("{p}_b{m}")),
                    ln: [format!("{p}_Wo_ln_scale"), format!("{p}_Wo_ln_bias")],
                }
            }
            MarianFlavor::HuggingFace => {
                let (stack, attn) = match block {
                    Block::EncoderSelf => ("encoder", "self_attn"),
                    Block::DecoderSelf => ("decoder", "self_attn"),
                    Block::Cross => ("decoder", "encoder_attn"),
                };
                let p = format!("model.{stack}.layers.{layer}.{attn}");
                AttentionNames {
                    weights: ["q", "k", "v", "out"].map(|m| format!("{p}.{m}_proj.weight")),
                    biases: ["q", "k", "v", "out"].map(|m| format!("{p}.{m}_proj.bias")),
                    ln: [format!("{p}_layer_norm.weight"), format!("{p}_layer_norm.bias")],
                }
            }
        }
    }

    fn ffn_names(self, decoder: bool, layer: usize) -> FfnNames {
        let stack = if decoder { "decoder" } else { "encoder" };
        match self {
            MarianFlavor::Bergamot => {
                let p = format!("{stack}_l{}_ffn", layer + 1);
                FfnNames {
                    w1: [format!("{p}_W1"), format!("{p}_b1")],
                    w2: [format!("{p}_W2"), format!("{p}_b2")],
                    ln: [format!("{p}_ffn_ln_scale"), format!("{p}_ffn_ln_bias")],
                }
            }
            MarianFlavor::HuggingFace => {
                let p = format!("model.{stack}.layers.{layer}");
                FfnNames {
                    w1: [format!("{p}.fc1.weight"), format!("{p}.fc1.bias")],
                    w2: [format!("{p}.fc2.weight"), format!("{p}.fc2.bias")],
                    ln: [
                        format!("{p}.final_layer_norm.weight"),
                        format!("{p}.final_layer_norm.bias"),
                    ],
                }
            }
        }
    }

    /// The tied embedding `[vocab, d]` and the output bias `[vocab]`.
    fn embedding_names(self) -> [&'static str; 2] {
        match self {
            MarianFlavor::Bergamot => ["Wemb", "decoder_ff_logit_out_b"],
            MarianFlavor::HuggingFace => ["model.shared.weight", "final_logits_bias"],
        }
    }

    /// The sinusoid's frequencies, 10000^(−i/denominator) for i < d/2: Bergamot divides by
    /// d/2 − 1, Hugging Face's opus-mt by d/2 (the paper's 10000^(−2i/d)).
    pub fn sinusoid(self, d: usize) -> Wave {
        let half = d / 2;
        let denominator = match self {
            MarianFlavor::Bergamot => (half as f64 - 1.0).max(1.0),
            MarianFlavor::HuggingFace => half as f64,
        };
        Wave { base: 10000.0, denominator }
    }
}

/// Encoder `self` or decoder `context` attention (and opus-mt's decoder `self_attn`), post-norm.
struct MarianAttention {
    wq: Linear, // [d, d]
    wk: Linear, // [d, d]
    wv: Linear, // [d, d]
    wo: Linear, // [d, d]
    wo_ln: LayerNorm,
    attn: MultiHead,
}

impl MarianAttention {
    fn load(
        w: &mut TensorStore,
        names: &AttentionNames,
        c: &MarianConfig,
        site: Site,
    ) -> Result<MarianAttention> {
        let d = c.dim_emb;
        let lin = |w: &mut TensorStore, i: usize| {
            Linear::load_named(w, &names.weights[i], &names.biases[i], d, d)
        };
        Ok(MarianAttention {
            wq: lin(w, 0)?,
            wk: lin(w, 1)?,
            wv: lin(w, 2)?,
            wo: lin(w, 3)?,
            wo_ln: LayerNorm::load_named(w, &names.ln[0], &names.ln[1], d, c.layer_norm_eps)?,
            attn: MultiHead::new(site, c.heads, c.heads, d / c.heads),
        })
    }

    /// Keys and values of `memory` `[Tk, d]`, each `[Tk, d]`.
    fn keys_values(&self, memory: &Mat) -> KvCache {
        KvCache::of(self.wk.forward(memory), &self.wv.forward(memory))
    }

    /// x `[Tq, d]` attends to the keys/values of `kv` `[Tk, d]`: LN(x + Wo·attention + bo)
    /// `[Tq, d]`. The probe gets `[heads, Tq, Tk]`.
    fn forward(&self, x: &Mat, kv: &KvCache, probe: &mut Probe) -> Mat {
        let q = self.wq.forward(x); // [Tq, d]
        let context = self.attn.attend(&q, kv, Mask::None, &self.wo.weight, probe); // [Tq, d]
        self.attn.post_norm_output(&context, x, &self.wo, &self.wo_ln, probe)
    }

    /// One decode step of masked self-attention: y `[1, d]` (the newest position) attends to
    /// itself and every earlier position, whose keys and values `cache` holds; y's are written
    /// after them. No mask is needed: later positions are not there yet.
    fn forward_cached(&self, y: &Mat, cache: &mut KvCache, probe: &mut Probe) -> Mat {
        cache.append(&self.wk.forward(y), &self.wv.forward(y));
        self.forward(y, cache, probe)
    }
}

/// `W1`, `b1`, `W2`, `b2` and the LayerNorm after them.
struct MarianFfn {
    w1: Linear, // [ffn, d]
    w2: Linear, // [d, ffn]
    ffn_ln: LayerNorm,
    activation: Activation,
}

impl MarianFfn {
    fn load(w: &mut TensorStore, names: &FfnNames, c: &MarianConfig) -> Result<MarianFfn> {
        let (d, ffn) = (c.dim_emb, c.dim_ffn);
        Ok(MarianFfn {
            w1: Linear::load_named(w, &names.w1[0], &names.w1[1], ffn, d)?,
            w2: Linear::load_named(w, &names.w2[0], &names.w2[1], d, ffn)?,
            ffn_ln: LayerNorm::load_named(w, &names.ln[0], &names.ln[1], d, c.layer_norm_eps)?,
            activation: c.activation,
        })
    }

    /// x = LN(x + W2·act(W1·x + b1) + b2)                                        # [T, d]
    fn forward(&self, x: &Mat) -> Mat {
        let mut h = self.w1.forward(x); // [T, ffn]
        let act = self.activation;
        h.map_in_place(|v| act.apply(v));
        let mut out = self.w2.forward(&h);
        out.add_assign(x);
        self.ffn_ln.apply(&mut out);
        out
    }
}

/// `decoder_lN_rnn_*`: Marian's SSRU, f = σ(x·Wf + bf); c = f·c + (1−f)·(x·W); h = LN(x + ReLU(c)).
struct Ssru {
    w: Linear,  // [d, d], no bias
    wf: Linear, // [d, d]
    ffn_ln: LayerNorm,
}

impl Ssru {
    /// One step: y `[1, d]` → `[1, d]`, updating the cell state `c` `[d]`.
    fn forward(&self, y: &Mat, c: &mut [f32]) -> Mat {
        let f = self.wf.forward(y); // [1, d]
        let xw = self.w.forward(y); // [1, d]
        let mut h = Mat::zeros(1, c.len());
        for (j, cj) in c.iter_mut().enumerate() {
            let fj = sigmoid(f.row(0)[j]);
            *cj = fj * *cj + (1.0 - fj) * xw.row(0)[j];
            h.row_mut(0)[j] = y.row(0)[j] + relu(*cj);
        }
        self.ffn_ln.apply(&mut h);
        h
    }
}

/// Encoder layer: self-attention, FFN.
struct MarianEncoderLayer {
    self_attention: MarianAttention,
    ffn: MarianFfn,
}

impl MarianEncoderLayer {
    /// x `[Ts, d]` → `[Ts, d]`
    fn forward(&self, x: &Mat, probe: &mut Probe) -> Mat {
        let kv = self.self_attention.keys_values(x); // [Ts, d] each
        let h = self.self_attention.forward(x, &kv, probe);
        self.ffn.forward(&h)
    }
}

/// What a decoder layer runs over the target before cross-attention.
#[allow(clippy::large_enum_variant)] // one per decoder layer, built once at load: no box needed
enum Autoregressive {
    /// Bergamot: an SSRU cell.
    Ssru(Ssru),
    /// opus-mt: masked self-attention.
    SelfAttention(MarianAttention),
}

/// What a decoder layer carries from one decode step to the next.
struct DecoderState {
    /// The SSRU's cell `[d]`.
    cell: Vec<f32>,
    /// The self-attention's keys and values so far, `[t, d]` each (empty for an SSRU).
    cache: KvCache,
}

/// Decoder layer: SSRU or self-attention, cross-attention (`context`), FFN.
struct MarianDecoderLayer {
    autoregressive: Autoregressive,
    context: MarianAttention,
    ffn: MarianFfn,
}

impl MarianDecoderLayer {
    /// One decode step: y `[1, d]` → `[1, d]`; `state` is this layer's SSRU cell or K/V cache,
    /// `memory` the encoder-side keys and values of its `context` attention.
    fn forward(
        &self,
        y: &Mat,
        state: &mut DecoderState,
        memory: &KvCache,
        probe: &mut Probe,
    ) -> Mat {
        let h = match &self.autoregressive {
            Autoregressive::Ssru(rnn) => rnn.forward(y, &mut state.cell),
            Autoregressive::SelfAttention(a) => a.forward_cached(y, &mut state.cache, probe),
        };
        let o = self.context.forward(&h, memory, probe);
        self.ffn.forward(&o)
    }
}

pub struct MarianModel {
    pub config: MarianConfig,
    /// `# [vocab, d]` tied: source and target embeddings and the output projection. Bergamot's
    /// stays int8: it is streamed once per decode step, and 8 MB read beats 33 MB.
    wemb: WeightMatrix,
    logits_bias: Vec<f32>,
    encoder: Vec<MarianEncoderLayer>,
    decoder: Vec<MarianDecoderLayer>,
    tokenizer: TextTokenizer,
}

/// The sinusoid at `pos`, added to `row`: sin half first, then cos; frequencies
/// 10000^(−i/`denominator`). The angle is computed in f64: in f32, `pos · freq` at position
/// 100 is already 4e-6 off, so the values added (and the positions view's table) would drift
/// from the formula.
fn add_position(row: &mut [f32], pos: usize, flavor: MarianFlavor) {
    let half = row.len() / 2;
    let wave = flavor.sinusoid(row.len());
    for i in 0..half {
        let angle = pos as f64 * wave.frequency(i);
        row[i] += angle.sin() as f32;
        row[half + i] += angle.cos() as f32;
    }
}

/// The sinusoid `add_position` adds, for positions `0..n` of width `d`: `# [n, d]` row-major.
pub fn position_table(n: usize, d: usize, flavor: MarianFlavor) -> Vec<f32> {
    let mut data = vec![0.0f32; n * d];
    for (pos, row) in data.chunks_exact_mut(d.max(1)).enumerate() {
        add_position(row, pos, flavor);
    }
    data
}

impl MarianModel {
    /// A Bergamot .bin; `name` is its file name, for error messages.
    pub fn load(model_bin: &[u8], name: &str, tokenizer_json: &[u8]) -> Result<MarianModel> {
        let file = marian_bin::read(model_bin)?;
        let mut w = file.tensors;
        w.set_file(name);
        let c = MarianConfig::from_file(file.model_yml.as_deref(), &w)?;
        MarianModel::build(c, w, name, tokenizer_json)
    }

    /// A Hugging Face opus-mt folder: config.json, the safetensors' tensors, tokenizer.json.
    pub fn load_hf(
        config_json: &[u8],
        weights: TensorStore,
        tokenizer_json: &[u8],
    ) -> Result<MarianModel> {
        let c = MarianConfig::from_hf_json(config_json)?;
        MarianModel::build(c, weights, "config.json", tokenizer_json)
    }

    fn build(
        c: MarianConfig,
        mut w: TensorStore,
        name: &str,
        tokenizer_json: &[u8],
    ) -> Result<MarianModel> {
        let (d, heads, flavor) = (c.dim_emb, c.heads, c.flavor);
        let what = format!(
            "{name}: {} encoder and {} decoder layers × {heads} heads",
            c.enc_depth, c.dec_depth
        );
        let mut blocks = vec![
            (c.enc_depth, heads, c.max_source, c.max_source),
            (c.dec_depth, heads, c.max_target, c.max_source),
        ];
        if flavor == MarianFlavor::HuggingFace {
            blocks.push((c.dec_depth, heads, c.max_target, c.max_target));
        }
        super::family::check_attention_budget(&what, &blocks)?;
        let [emb, bias] = flavor.embedding_names();
        let wemb = w.weight_matrix(emb, c.vocab, d)?;
        let logits_bias = w.vector(bias, c.vocab)?;
        let mut encoder = Vec::with_capacity(c.enc_depth);
        for layer in 0..c.enc_depth {
            let site = Site { kind: AttentionKind::EncoderSelf, layer };
            let self_attention = MarianAttention::load(
                &mut w,
                &flavor.attention_names(Block::EncoderSelf, layer),
                &c,
                site,
            )?;
            encoder.push(MarianEncoderLayer {
                self_attention,
                ffn: MarianFfn::load(&mut w, &flavor.ffn_names(false, layer), &c)?,
            });
        }
        let mut decoder = Vec::with_capacity(c.dec_depth);
        for layer in 0..c.dec_depth {
            let autoregressive = match flavor {
                MarianFlavor::Bergamot => {
                    let p = format!("decoder_l{}", layer + 1);
                    Autoregressive::Ssru(Ssru {
                        w: Linear {
                            weight: w.weight_matrix(&format!("{p}_rnn_W"), d, d)?,
                            bias: None,
                        },
                        wf: Linear::load_named(
                            &mut w,
                            &format!("{p}_rnn_Wf"),
                            &format!("{p}_rnn_bf"),
                            d,
                            d,
                        )?,
                        ffn_ln: LayerNorm::load_named(
                            &mut w,
                            &format!("{p}_rnn_ffn_ln_scale"),
                            &format!("{p}_rnn_ffn_ln_bias"),
                            d,
                            c.layer_norm_eps,
                        )?,
                    })
                }
                MarianFlavor::HuggingFace => {
                    let site = Site { kind: AttentionKind::DecoderSelf, layer };
                    Autoregressive::SelfAttention(MarianAttention::load(
                        &mut w,
                        &flavor.attention_names(Block::DecoderSelf, layer),
                        &c,
                        site,
                    )?)
                }
            };
            let site = Site { kind: AttentionKind::Cross, layer };
            let context = MarianAttention::load(
                &mut w,
                &flavor.attention_names(Block::Cross, layer),
                &c,
                site,
            )?;
            decoder.push(MarianDecoderLayer {
                autoregressive,
                context,
                ffn: MarianFfn::load(&mut w, &flavor.ffn_names(true, layer), &c)?,
            });
        }
        let tokenizer = TextTokenizer::from_bytes(tokenizer_json, c.max_source - 1)?;
        if tokenizer.id_to_token_opt(c.eos_id).as_deref() != Some("</s>") {
            return Err(invalid_model(format!(
                "tokenizer.json does not map `</s>` to id {}, the model's end of sentence",
                c.eos_id
            )));
        }
        Ok(MarianModel { config: c, wemb, logits_bias, encoder, decoder, tokenizer })
    }

    /// Whether the decoder has self-attention (opus-mt) rather than an SSRU (Bergamot).
    pub fn has_decoder_self_attention(&self) -> bool {
        self.config.flavor == MarianFlavor::HuggingFace
    }

    /// The special tokens the tokenizer knows.
    pub fn special_tokens(&self) -> Vec<String> {
        let ids = [Some(self.config.eos_id), self.config.banned_id];
        let mut special: Vec<String> =
            ids.into_iter().flatten().filter_map(|id| self.tokenizer.id_to_token_opt(id)).collect();
        special.extend(
            ["<unk>".to_string()].into_iter().filter(|t| self.tokenizer.token_to_id(t).is_some()),
        );
        special.dedup();
        special
    }

    /// `row` = the embedding of `id` (× √d when the model scales) + the sinusoid at `pos`.
    fn embed(&self, id: u32, pos: usize, row: &mut [f32]) -> Result<()> {
        if id as usize >= self.wemb.rows() {
            return Err(invalid_model(format!("token id {id} is outside the vocabulary")));
        }
        self.wemb.row_into(id as usize, row);
        if self.config.scale_embedding {
            let scale = (row.len() as f32).sqrt();
            row.iter_mut().for_each(|r| *r *= scale);
        }
        add_position(row, pos, self.config.flavor);
        Ok(())
    }
}

impl Family for MarianModel {
    fn shape(&self) -> FamilyShape {
        let c = &self.config;
        let mut kinds =
            vec![(AttentionKind::EncoderSelf, c.enc_depth), (AttentionKind::Cross, c.dec_depth)];
        if self.has_decoder_self_attention() {
            kinds.insert(1, (AttentionKind::DecoderSelf, c.dec_depth));
        }
        let max_positions = self.tokenizer.max_tokens() + 1;
        FamilyShape {
            kinds,
            heads: c.heads,
            kv_heads: c.heads,
            head_dim: c.dim_emb / c.heads,
            max_positions,
            special_tokens: self.special_tokens(),
            generates: false,
        }
    }

    fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// The sinusoid the forward adds (sin half, then cos half).
    fn positions(&self, n: usize) -> PositionTable {
        let (dims, flavor) = (self.config.dim_emb, self.config.flavor);
        PositionTable {
            kind: PositionKind::Sinusoidal,
            positions: n,
            dims,
            data: position_table(n, dims, flavor),
            wave: Some(flavor.sinusoid(dims)),
        }
    }

    /// `encoder_self` attention of every encoder layer, and `decoder_self` (opus-mt) and
    /// `cross` attention of every decoder layer (one query row per decode step) go to `probe`.
    fn forward(
        &self,
        text: &str,
        _generate: &GenerateOptions,
        probe: &mut Probe,
    ) -> Result<ForwardOutput> {
        let (d, eos) = (self.config.dim_emb, self.config.eos_id);
        let mut enc = self.tokenizer.encode(text)?;
        // A tokenizer.json whose post-processor appends `</s>` already did.
        if enc.ids.last() != Some(&eos) {
            enc.ids.push(eos);
            enc.tokens.push(self.tokenizer.id_to_token(eos));
            enc.word_ids.push(None);
        }
        let ts = enc.ids.len();

        // ---- encoder ---------------------------------------------------------------
        let mut x = Mat::zeros(ts, d); // [Ts, d]
        for (i, &id) in enc.ids.iter().enumerate() {
            self.embed(id, i, x.row_mut(i))?;
        }
        for layer in &self.encoder {
            x = layer.forward(&x, probe);
        }

        // ---- greedy decoding ---------------------------------------------------------
        // Encoder-side keys and values of every decoder layer, computed once.  # [Ts, d] each
        let memory: Vec<KvCache> = self.decoder.iter().map(|l| l.context.keys_values(&x)).collect();
        let max_target = self.config.max_target_for(ts);
        let positions = if self.has_decoder_self_attention() { max_target } else { 0 };
        let mut states: Vec<DecoderState> = self
            .decoder
            .iter()
            .map(|_| DecoderState { cell: vec![0.0; d], cache: KvCache::new(positions, d) })
            .collect();
        let mut target_ids = Vec::new();
        let mut stop = StopReason::MaxLength;
        for step in 0..max_target {
            let mut y = Mat::zeros(1, d); // [1, d]
            match (target_ids.last(), self.config.decoder_start_id) {
                (Some(&id), _) | (None, Some(id)) => self.embed(id, step, y.row_mut(0))?,
                // Bergamot: the first decoder input is a zero vector (plus position 0).
                (None, None) => add_position(y.row_mut(0), step, self.config.flavor),
            }
            for ((layer, state), kv) in self.decoder.iter().zip(&mut states).zip(&memory) {
                y = layer.forward(&y, state, kv, probe);
            }
            // logits = y · Wembᵀ + b                                               # [1, vocab]
            let mut logits = self.wemb.linear(&y, Some(&self.logits_bias));
            if let Some(banned) =
                self.config.banned_id.and_then(|id| logits.row_mut(0).get_mut(id as usize))
            {
                *banned = f32::NEG_INFINITY;
            }
            let next = argmax(logits.row(0)) as u32;
            target_ids.push(next);
            if next == eos {
                stop = StopReason::Eos;
                break;
            }
        }

        let target_tokens: Vec<String> =
            target_ids.iter().map(|&id| self.tokenizer.id_to_token(id)).collect();
        let target_word_ids = word_ids_from_pieces(&target_tokens);
        let text_ids: Vec<u32> = target_ids.iter().copied().filter(|&id| id != eos).collect();
        let output_text = self.tokenizer.decode(&text_ids)?;
        Ok(ForwardOutput {
            source_tokens: enc.tokens,
            source_word_ids: enc.word_ids,
            target_tokens,
            target_word_ids,
            output_text: Some(output_text),
            truncated: enc.truncated,
            stop_reason: Some(stop),
            sentence_embedding: None,
            generation: None,
        })
    }
}

fn argmax(row: &[f32]) -> usize {
    row.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |best, (i, &v)| if v > best.1 { (i, v) } else { best })
        .0
}

/// SentencePiece pieces start a new word with `▁`; `</s>` belongs to no word.
fn word_ids_from_pieces(tokens: &[String]) -> Vec<Option<u32>> {
    let mut word: i64 = -1;
    tokens
        .iter()
        .map(|t| {
            if t == "</s>" {
                return None;
            }
            if t.starts_with('▁') || word < 0 {
                word += 1;
            }
            Some(word as u32)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_sin_then_cos() {
        let mut row = vec![0.0f32; 8];
        add_position(&mut row, 0, MarianFlavor::Bergamot);
        assert_eq!(row, vec![0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
        let mut row = vec![0.0f32; 8];
        add_position(&mut row, 1, MarianFlavor::Bergamot);
        assert!((row[0] - 1f32.sin()).abs() < 1e-6 && (row[4] - 1f32.cos()).abs() < 1e-6);
        // Last frequency is 1/10000.
        assert!((row[3] - (1e-4f32).sin()).abs() < 1e-7);
    }

    #[test]
    fn position_table_is_the_sinusoid_formula() {
        // Computed here independently (f64, Marian's layout: sin of every frequency, then cos).
        let (n, d) = (300, 256);
        let table = position_table(n, d, MarianFlavor::Bergamot);
        assert_eq!(table.len(), n * d);
        let half = d / 2;
        for pos in 0..n {
            for i in 0..half {
                let freq = 10000f64.powf(-(i as f64) / (half as f64 - 1.0));
                let (s, c) = ((pos as f64 * freq).sin(), (pos as f64 * freq).cos());
                let (ts, tc) = (table[pos * d + i] as f64, table[pos * d + half + i] as f64);
                assert!(
                    (ts - s).abs() <= 1e-6 && (tc - c).abs() <= 1e-6,
                    "pos {pos} i {i}: {ts} {tc} vs {s} {c}"
                );
            }
        }
    }

    #[test]
    fn the_wave_shipped_is_the_one_added() {
        // The positions view reads periods off `Wave::column_frequencies`: they must be the
        // table's own, for Bergamot (÷ (d/2 − 1)) and for opus-mt (÷ d/2, the paper's).
        let d = 16;
        for (flavor, denominator) in
            [(MarianFlavor::Bergamot, 7.0), (MarianFlavor::HuggingFace, 8.0)]
        {
            let wave = flavor.sinusoid(d);
            assert_eq!(wave, Wave { base: 10000.0, denominator });
            let freqs = wave.column_frequencies(d);
            let table = position_table(50, d, flavor);
            for pos in 0..50 {
                for c in 0..d {
                    let angle = pos as f64 * freqs[c];
                    let want = if c < d / 2 { angle.sin() } else { angle.cos() };
                    assert!(
                        (table[pos * d + c] as f64 - want).abs() < 1e-6,
                        "{flavor:?} pos {pos} column {c}"
                    );
                }
            }
        }
    }

    #[test]
    fn pieces_group_into_words() {
        let t: Vec<String> = ["▁O", "▁gato", "▁sent", "ou", "-", "se", "</s>"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            word_ids_from_pieces(&t),
            vec![Some(0), Some(1), Some(2), Some(2), Some(2), Some(2), None]
        );
    }
}

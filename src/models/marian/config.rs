//! A Marian model's sizes and conventions: from a Bergamot .bin's tensor shapes and embedded
//! `model.yml`, or from a Hugging Face opus-mt config.json; the limits of decoding.

use crate::error::{invalid_model, Error, Result};
use crate::models::family::Wave;
use crate::tensor::{gelu, relu, silu};
use crate::weights::marian_bin::yml_value;
use crate::weights::Scope;
use serde::Deserialize;

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
    pub(super) fn apply(self, x: f32) -> f32 {
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
    /// A Bergamot .bin's: `w` is the root of its tensors (see [`MarianFlavor::layer`]), `yml`
    /// its embedded `model.yml`.
    pub(super) fn from_file(yml: Option<&str>, w: &Scope) -> Result<MarianConfig> {
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
        let (vocab, dim_emb) = match w.shape("Wemb").as_deref() {
            Some(&[v, d]) => (v, d),
            _ => return Err(invalid_model("Marian model has no `Wemb` [vocab, dim] tensor")),
        };
        // Layers are counted by their FFN: `encoder_l1_ffn_W1`, `encoder_l2_ffn_W1`, …
        let ffn =
            |stack: &str, layer: usize| MarianFlavor::Bergamot.layer(w, stack, layer).pp("ffn");
        let count = |stack: &str| (0..).take_while(|&i| ffn(stack, i).contains("W1")).count();
        let dim_ffn = match ffn("encoder", 0).shape("W1").as_deref() {
            Some(&[ffn, _]) => ffn,
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
            enc_depth: count("encoder"),
            dec_depth: count("decoder"),
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
    pub(super) fn max_target_for(&self, source_len: usize) -> usize {
        ((source_len as f32 * MAX_LENGTH_FACTOR).ceil() as usize).max(4).min(self.max_target)
    }
}

impl MarianFlavor {
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

//! BERT encoder (Hugging Face `BertModel`, e.g. sentence-transformers/all-MiniLM-L6-v2),
//! post-LayerNorm, exact GELU. Sizes come from `config.json`; weight names are the HF ones
//! (with or without a `bert.` prefix). Returns `encoder_self` attention for every layer and,
//! as sentence-transformers does, the mean-pooled L2-normalised sentence embedding.

use super::{LayerNorm, Linear};
use crate::attention::{AttentionBlock, AttentionKind, ForwardOutput, HeadInternals, HeadRequest};
use crate::error::{invalid_model, Result};
use crate::tensor::{gelu, multi_head_attention, Mask, Mat};
use crate::tokenize::TextTokenizer;
use crate::weights::TensorStore;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "default_act")]
    pub hidden_act: String,
}

fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}
fn default_act() -> String {
    "gelu".into()
}

impl BertConfig {
    pub fn from_json(bytes: &[u8]) -> Result<BertConfig> {
        let c: BertConfig = serde_json::from_slice(bytes).map_err(|e| invalid_model(format!("config.json is not a BERT config ({e})")))?;
        if c.hidden_size == 0 || c.num_attention_heads == 0 || c.hidden_size % c.num_attention_heads != 0 {
            return Err(invalid_model(format!("hidden_size {} is not a multiple of num_attention_heads {}", c.hidden_size, c.num_attention_heads)));
        }
        if !matches!(c.hidden_act.as_str(), "gelu" | "gelu_python") {
            return Err(crate::Error::UnsupportedArchitecture(format!("BERT hidden_act `{}` (only exact gelu)", c.hidden_act)));
        }
        Ok(c)
    }
}

struct BertEmbeddings {
    word_embeddings: Mat,       // [vocab, d]
    position_embeddings: Mat,   // [max_pos, d]
    token_type_embeddings: Mat, // [type_vocab, d]
    layer_norm: LayerNorm,
}

struct BertSelfAttention {
    query: Linear,
    key: Linear,
    value: Linear,
}

struct BertSelfOutput {
    dense: Linear,
    layer_norm: LayerNorm,
}

struct BertAttention {
    self_attention: BertSelfAttention,
    output: BertSelfOutput,
}

struct BertIntermediate {
    dense: Linear, // [ffn, d]
}

struct BertOutput {
    dense: Linear, // [d, ffn]
    layer_norm: LayerNorm,
}

struct BertLayer {
    attention: BertAttention,
    intermediate: BertIntermediate,
    output: BertOutput,
}

pub struct BertModel {
    pub config: BertConfig,
    embeddings: BertEmbeddings,
    layers: Vec<BertLayer>,
    tokenizer: TextTokenizer,
}

impl BertModel {
    pub fn load(config_json: &[u8], mut weights: TensorStore, tokenizer_json: &[u8]) -> Result<BertModel> {
        let c = BertConfig::from_json(config_json)?;
        let prefix = if weights.contains("bert.embeddings.word_embeddings.weight") { "bert." } else { "" };
        let (d, eps) = (c.hidden_size, c.layer_norm_eps as f32);
        let w = &mut weights;
        let embeddings = BertEmbeddings {
            word_embeddings: w.matrix(&format!("{prefix}embeddings.word_embeddings.weight"), c.vocab_size, d)?,
            position_embeddings: w.matrix(&format!("{prefix}embeddings.position_embeddings.weight"), c.max_position_embeddings, d)?,
            token_type_embeddings: w.matrix(&format!("{prefix}embeddings.token_type_embeddings.weight"), c.type_vocab_size, d)?,
            layer_norm: LayerNorm::load(w, &format!("{prefix}embeddings.LayerNorm"), d, eps)?,
        };
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for i in 0..c.num_hidden_layers {
            let p = format!("{prefix}encoder.layer.{i}");
            layers.push(BertLayer {
                attention: BertAttention {
                    self_attention: BertSelfAttention {
                        query: Linear::load(w, &format!("{p}.attention.self.query"), d, d)?,
                        key: Linear::load(w, &format!("{p}.attention.self.key"), d, d)?,
                        value: Linear::load(w, &format!("{p}.attention.self.value"), d, d)?,
                    },
                    output: BertSelfOutput {
                        dense: Linear::load(w, &format!("{p}.attention.output.dense"), d, d)?,
                        layer_norm: LayerNorm::load(w, &format!("{p}.attention.output.LayerNorm"), d, eps)?,
                    },
                },
                intermediate: BertIntermediate { dense: Linear::load(w, &format!("{p}.intermediate.dense"), c.intermediate_size, d)? },
                output: BertOutput {
                    dense: Linear::load(w, &format!("{p}.output.dense"), d, c.intermediate_size)?,
                    layer_norm: LayerNorm::load(w, &format!("{p}.output.LayerNorm"), d, eps)?,
                },
            });
        }
        let tokenizer = TextTokenizer::from_bytes(tokenizer_json, c.max_position_embeddings)?;
        Ok(BertModel { config: c, embeddings, layers, tokenizer })
    }

    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    pub fn forward(&self, text: &str, request: Option<HeadRequest>) -> Result<ForwardOutput> {
        let enc = self.tokenizer.encode(text)?;
        let c = &self.config;
        let (t, d, heads) = (enc.ids.len(), c.hidden_size, c.num_attention_heads);

        // x = LN(word[id] + position[i] + token_type[0])          # [T, d]
        let mut x = Mat::zeros(t, d);
        for (i, &id) in enc.ids.iter().enumerate() {
            let id = id as usize;
            if id >= c.vocab_size {
                return Err(invalid_model(format!("tokenizer produced id {id} outside the vocabulary ({})", c.vocab_size)));
            }
            let row = x.row_mut(i);
            let (we, pe, te) = (self.embeddings.word_embeddings.row(id), self.embeddings.position_embeddings.row(i), self.embeddings.token_type_embeddings.row(0));
            for j in 0..d {
                row[j] = we[j] + pe[j] + te[j];
            }
        }
        self.embeddings.layer_norm.apply(&mut x);

        let mut attentions = Vec::with_capacity(self.layers.len());
        let mut trace = None;
        for (l, layer) in self.layers.iter().enumerate() {
            let sa = &layer.attention.self_attention;
            let q = sa.query.forward(&x); // [T, d]
            let k = sa.key.forward(&x);
            let v = sa.value.forward(&x);
            let want = request.filter(|r| r.kind == AttentionKind::EncoderSelf && r.layer == l).map(|r| r.head);
            let att = multi_head_attention(&q, &k, &v, heads, Mask::None, want); // probs [heads, T, T]
            if att.trace.is_some() {
                trace = att.trace;
            }
            attentions.push(AttentionBlock { kind: AttentionKind::EncoderSelf, layer: l, heads, query_len: t, key_len: t, probs: att.probs });

            let mut h = layer.attention.output.dense.forward(&att.context);
            h.add_assign(&x);
            layer.attention.output.layer_norm.apply(&mut h); // [T, d]

            let mut ff = layer.intermediate.dense.forward(&h); // [T, ffn]
            ff.map_in_place(gelu);
            let mut out = layer.output.dense.forward(&ff); // [T, d]
            out.add_assign(&h);
            layer.output.layer_norm.apply(&mut out);
            x = out;
        }

        let head_internals = match (request, trace) {
            (Some(r), Some(tr)) => Some(HeadInternals {
                request: r,
                query_tokens: enc.tokens.clone(),
                key_tokens: enc.tokens.clone(),
                q_source: "encoder",
                kv_source: "encoder",
                trace: tr,
            }),
            (Some(r), None) => return Err(super::bad_head_request(r, self.layers.len(), heads, &[AttentionKind::EncoderSelf])),
            _ => None,
        };

        Ok(ForwardOutput {
            sentence_embedding: Some(mean_pool_normalised(&x)),
            source_tokens: enc.tokens,
            source_word_ids: enc.word_ids,
            target_tokens: Vec::new(),
            target_word_ids: Vec::new(),
            output_text: None,
            truncated: enc.truncated,
            stop_reason: None,
            hidden: x,
            attentions,
            head_internals,
        })
    }
}

/// Mean over tokens (no padding here, so every token counts), then L2 normalisation.
fn mean_pool_normalised(hidden: &Mat) -> Vec<f32> {
    let mut mean = vec![0.0f32; hidden.cols()];
    for r in 0..hidden.rows() {
        for (m, v) in mean.iter_mut().zip(hidden.row(r)) {
            *m += v;
        }
    }
    let n = hidden.rows().max(1) as f32;
    mean.iter_mut().for_each(|m| *m /= n);
    let norm = mean.iter().map(|m| m * m).sum::<f32>().sqrt().max(1e-12);
    mean.iter_mut().for_each(|m| *m /= norm);
    mean
}


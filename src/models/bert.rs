//! BERT encoder (Hugging Face `BertModel`, e.g. sentence-transformers/all-MiniLM-L6-v2),
//! post-LayerNorm, exact GELU. Sizes come from `config.json`; weight names are the HF ones
//! (with or without a `bert.` prefix). Returns `encoder_self` attention for every layer and,
//! as sentence-transformers does, the mean-pooled L2-normalised sentence embedding. Each struct
//! mirrors one PyTorch module (named like its weights) and has its own `forward`.

use super::{post_norm_output, value_output_norms, LayerNorm, Linear};
use crate::attention::{AttentionKind, ForwardOutput, Probe, Site};
use crate::error::{invalid_model, Result};
use crate::tensor::{gelu, multi_head_attention, Mask, Mat, WeightMatrix};
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
        let sizes = [
            ("vocab_size", c.vocab_size),
            ("hidden_size", c.hidden_size),
            ("num_hidden_layers", c.num_hidden_layers),
            ("intermediate_size", c.intermediate_size),
            ("max_position_embeddings", c.max_position_embeddings),
            ("type_vocab_size", c.type_vocab_size),
        ];
        if let Some((key, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Err(invalid_model(format!("config.json: {key} is 0 (it must be at least 1)")));
        }
        if c.hidden_size == 0 || c.num_attention_heads == 0 || c.hidden_size % c.num_attention_heads != 0 {
            return Err(invalid_model(format!("config.json: hidden_size {} is not a multiple of num_attention_heads {}", c.hidden_size, c.num_attention_heads)));
        }
        if !matches!(c.hidden_act.as_str(), "gelu" | "gelu_python") {
            return Err(crate::Error::UnsupportedArchitecture(format!("config.json: BERT hidden_act `{}` (only exact gelu)", c.hidden_act)));
        }
        Ok(c)
    }
}

/// `embeddings.*` (f32, or int8 with a scale per row: a lookup decodes only the rows it uses)
struct BertEmbeddings {
    word_embeddings: WeightMatrix,       // [vocab, d]
    position_embeddings: WeightMatrix,   // [max_pos, d]
    token_type_embeddings: WeightMatrix, // [type_vocab, d]
    layer_norm: LayerNorm,
}

impl BertEmbeddings {
    /// The learned position embeddings of positions `0..n`: `# [n, d]` row-major.
    fn position_rows(&self, n: usize) -> Vec<f32> {
        let (rows, d) = (n.min(self.position_embeddings.rows()), self.position_embeddings.cols());
        let mut out = vec![0.0; rows * d];
        out.chunks_exact_mut(d).enumerate().for_each(|(i, row)| self.position_embeddings.row_into(i, row));
        out
    }

    fn load(w: &mut TensorStore, p: &str, c: &BertConfig) -> Result<BertEmbeddings> {
        let d = c.hidden_size;
        Ok(BertEmbeddings {
            word_embeddings: w.weight_matrix(&format!("{p}.word_embeddings.weight"), c.vocab_size, d)?,
            position_embeddings: w.weight_matrix(&format!("{p}.position_embeddings.weight"), c.max_position_embeddings, d)?,
            token_type_embeddings: w.weight_matrix(&format!("{p}.token_type_embeddings.weight"), c.type_vocab_size, d)?,
            layer_norm: LayerNorm::load(w, &format!("{p}.LayerNorm"), d, c.layer_norm_eps as f32)?,
        })
    }

    /// x = LN(word[id] + position[i] + token_type[0])                          # [T, d]
    fn forward(&self, ids: &[u32]) -> Result<Mat> {
        let (vocab, d) = (self.word_embeddings.rows(), self.word_embeddings.cols());
        let mut x = Mat::zeros(ids.len(), d);
        let (mut pe, mut te) = (vec![0.0; d], vec![0.0; d]);
        self.token_type_embeddings.row_into(0, &mut te);
        for (i, &id) in ids.iter().enumerate() {
            let id = id as usize;
            if id >= vocab {
                return Err(invalid_model(format!("tokenizer produced id {id} outside the vocabulary ({vocab})")));
            }
            self.position_embeddings.row_into(i, &mut pe);
            let row = x.row_mut(i);
            self.word_embeddings.row_into(id, row);
            for j in 0..d {
                row[j] += pe[j] + te[j];
            }
        }
        self.layer_norm.apply(&mut x);
        Ok(x)
    }
}

/// `encoder.layer.N.attention.self.*`
struct BertSelfAttention {
    query: Linear, // [d, d]
    key: Linear,   // [d, d]
    value: Linear, // [d, d]
    num_attention_heads: usize,
    site: Site,
}

impl BertSelfAttention {
    /// x `[T, d]` → the heads' outputs, concatenated `[T, d]`; the probe gets `[heads, T, T]`
    /// (and, when it asks, the value norms through the block's output projection `wo`).
    fn forward(&self, x: &Mat, wo: &Linear, probe: &mut Probe) -> Mat {
        let q = self.query.forward(x); // [T, d]
        let k = self.key.forward(x); // [T, d]
        let v = self.value.forward(x); // [T, d]
        if probe.wants_value_norms() {
            probe.record_value_norms(self.site, value_output_norms(&v, &wo.weight, self.num_attention_heads));
        }
        let att = multi_head_attention(&q, &k, &v, self.num_attention_heads, Mask::None, probe.traced_head(self.site));
        probe.record(self.site, self.num_attention_heads, att)
    }
}

/// `encoder.layer.N.attention.output.*`
struct BertSelfOutput {
    dense: Linear, // [d, d]
    layer_norm: LayerNorm,
    site: Site,
}

impl BertSelfOutput {
    /// LN(context · Wᵀ + b + x)                                                  # [T, d]
    fn forward(&self, context: &Mat, x: &Mat, probe: &mut Probe) -> Mat {
        post_norm_output(context, x, &self.dense, &self.layer_norm, self.site, probe)
    }
}

/// `encoder.layer.N.attention.*`
struct BertAttention {
    self_attention: BertSelfAttention,
    output: BertSelfOutput,
}

impl BertAttention {
    fn forward(&self, x: &Mat, probe: &mut Probe) -> Mat {
        let context = self.self_attention.forward(x, &self.output.dense, probe); // [T, d]
        self.output.forward(&context, x, probe)
    }
}

/// `encoder.layer.N.intermediate.*`
struct BertIntermediate {
    dense: Linear, // [ffn, d]
}

impl BertIntermediate {
    /// GELU(h · Wᵀ + b)                                                         # [T, ffn]
    fn forward(&self, h: &Mat) -> Mat {
        let mut ff = self.dense.forward(h);
        ff.map_in_place(gelu);
        ff
    }
}

/// `encoder.layer.N.output.*`
struct BertOutput {
    dense: Linear, // [d, ffn]
    layer_norm: LayerNorm,
}

impl BertOutput {
    /// LN(ff · Wᵀ + b + h)                                                      # [T, d]
    fn forward(&self, ff: &Mat, h: &Mat) -> Mat {
        let mut out = self.dense.forward(ff);
        out.add_assign(h);
        self.layer_norm.apply(&mut out);
        out
    }
}

/// `encoder.layer.N.*`
struct BertLayer {
    attention: BertAttention,
    intermediate: BertIntermediate,
    output: BertOutput,
}

impl BertLayer {
    fn load(w: &mut TensorStore, p: &str, c: &BertConfig, layer: usize) -> Result<BertLayer> {
        let (d, eps) = (c.hidden_size, c.layer_norm_eps as f32);
        Ok(BertLayer {
            attention: BertAttention {
                self_attention: BertSelfAttention {
                    query: Linear::load(w, &format!("{p}.attention.self.query"), d, d)?,
                    key: Linear::load(w, &format!("{p}.attention.self.key"), d, d)?,
                    value: Linear::load(w, &format!("{p}.attention.self.value"), d, d)?,
                    num_attention_heads: c.num_attention_heads,
                    site: Site { kind: AttentionKind::EncoderSelf, layer },
                },
                output: BertSelfOutput {
                    dense: Linear::load(w, &format!("{p}.attention.output.dense"), d, d)?,
                    layer_norm: LayerNorm::load(w, &format!("{p}.attention.output.LayerNorm"), d, eps)?,
                    site: Site { kind: AttentionKind::EncoderSelf, layer },
                },
            },
            intermediate: BertIntermediate { dense: Linear::load(w, &format!("{p}.intermediate.dense"), c.intermediate_size, d)? },
            output: BertOutput {
                dense: Linear::load(w, &format!("{p}.output.dense"), d, c.intermediate_size)?,
                layer_norm: LayerNorm::load(w, &format!("{p}.output.LayerNorm"), d, eps)?,
            },
        })
    }

    /// x `[T, d]` → `[T, d]`
    fn forward(&self, x: &Mat, probe: &mut Probe) -> Mat {
        let h = self.attention.forward(x, probe); // [T, d]
        let ff = self.intermediate.forward(&h); // [T, ffn]
        self.output.forward(&ff, &h)
    }
}

/// `encoder.*`
struct BertEncoder {
    layer: Vec<BertLayer>,
}

impl BertEncoder {
    fn forward(&self, mut x: Mat, probe: &mut Probe) -> Mat {
        for layer in &self.layer {
            x = layer.forward(&x, probe);
        }
        x
    }
}

pub struct BertModel {
    pub config: BertConfig,
    embeddings: BertEmbeddings,
    encoder: BertEncoder,
    tokenizer: TextTokenizer,
}

impl BertModel {
    pub fn load(config_json: &[u8], mut weights: TensorStore, tokenizer_json: &[u8]) -> Result<BertModel> {
        let c = BertConfig::from_json(config_json)?;
        let (layers, heads, positions) = (c.num_hidden_layers, c.num_attention_heads, c.max_position_embeddings);
        let what = format!("config.json: {layers} layers × {heads} heads at max_position_embeddings {positions}");
        super::check_attention_budget(&what, &[(layers, heads, positions, positions)])?;
        let prefix = if weights.contains("bert.embeddings.word_embeddings.weight") { "bert." } else { "" };
        let w = &mut weights;
        let embeddings = BertEmbeddings::load(w, &format!("{prefix}embeddings"), &c)?;
        let layer = (0..c.num_hidden_layers).map(|i| BertLayer::load(w, &format!("{prefix}encoder.layer.{i}"), &c, i)).collect::<Result<_>>()?;
        let tokenizer = TextTokenizer::from_bytes(tokenizer_json, c.max_position_embeddings)?;
        Ok(BertModel { config: c, embeddings, encoder: BertEncoder { layer }, tokenizer })
    }

    /// The learned position embeddings of positions `0..n` (at most `max_position_embeddings`):
    /// `# [n, hidden_size]` row-major.
    pub fn position_table(&self, n: usize) -> Vec<f32> {
        self.embeddings.position_rows(n)
    }

    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// `encoder_self` attention of every layer goes to `probe`.
    pub fn forward(&self, text: &str, probe: &mut Probe) -> Result<ForwardOutput> {
        let enc = self.tokenizer.encode(text)?;
        let x = self.embeddings.forward(&enc.ids)?; // [T, d]
        let x = self.encoder.forward(x, probe); // [T, d]
        Ok(ForwardOutput {
            sentence_embedding: Some(mean_pool_normalised(&x)),
            generation: None,
            source_tokens: enc.tokens,
            source_word_ids: enc.word_ids,
            target_tokens: Vec::new(),
            target_word_ids: Vec::new(),
            output_text: None,
            truncated: enc.truncated,
            stop_reason: None,
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

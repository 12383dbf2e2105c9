//! BERT-family encoders, post-LayerNorm, exact GELU: Hugging Face `BertModel` (e.g.
//! sentence-transformers/all-MiniLM-L6-v2), `RobertaModel` / `XLMRobertaModel` (positions from
//! `padding_idx + 1`, one token type) and `DistilBertModel` (its own config keys and weight
//! names, mapped onto the same modules; no token types). Sizes come from `config.json`; weight
//! names are the HF ones (with or without the `bert.`, `roberta.` or `distilbert.` prefix).
//! Returns `encoder_self` attention for every layer and, as sentence-transformers does, the
//! mean-pooled L2-normalised sentence embedding. Each struct mirrors one PyTorch module (named
//! like its weights, BERT's) and has its own `forward`.

use super::family::{
    no_own_files, Architecture, Family, FamilyShape, ModelFiles, PositionKind, PositionTable, Sizes,
};
use crate::error::{invalid_model, Error, Result};
use crate::nn::attention::{KvCache, Mask, MultiHead};
use crate::nn::layers::{LayerNorm, Linear};
use crate::nn::probe::{Probe, Site};
use crate::nn::score_parts::InputSplit;
use crate::result::{AttentionKind, ForwardOutput, GenerateOptions};
use crate::tensor::{gelu, Mat, WeightMatrix};
use crate::tokenize::TextTokenizer;
use crate::weights::{Scope, TensorStore};
use serde::Deserialize;
use std::cell::RefCell;

/// The `model_type`s of config.json this file runs (each is also the manifest's `architecture`).
pub const MODEL_TYPES: &[&str] = &["bert", "roberta", "xlm-roberta", "distilbert"];

/// The BERT family to loading, inspection and messages.
pub const ARCHITECTURE: Architecture = Architecture {
    model_types: MODEL_TYPES,
    display_name: family_name,
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
    Ok(Box::new(BertModel::load(config, weights, tokenizer)?))
}

fn sizes(config_json: &[u8]) -> Result<Sizes> {
    let c = BertConfig::from_json(config_json)?;
    c.check_attention_budget()?;
    let heads = c.num_attention_heads;
    Ok(Sizes {
        layers: c.num_hidden_layers,
        heads,
        kv_heads: heads,
        hidden: c.hidden_size,
        max_positions: c.max_tokens(),
        decoder: None,
    })
}

/// How messages name a `model_type` of [`MODEL_TYPES`].
pub fn family_name(model_type: &str) -> &'static str {
    match model_type {
        "roberta" => "RoBERTa",
        "xlm-roberta" => "XLM-RoBERTa",
        "distilbert" => "DistilBERT",
        _ => "BERT",
    }
}

/// Which member of the family a config.json describes: the one forward, three ways of naming
/// and positioning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BertFlavor {
    /// `model_type: bert`: positions 0, 1, 2, … and token type embeddings.
    #[default]
    Bert,
    /// `model_type: roberta` or `xlm-roberta`: positions count the non-pad tokens from
    /// `padding_idx + 1` (`pad_token_id`), one token type; weights under `roberta.`.
    Roberta,
    /// `model_type: distilbert`: other config keys and weight names, no token types.
    DistilBert,
}

/// config.json of `BertModel` and `RobertaModel`, and of `DistilBertModel` through its own
/// keys (the aliases; its LayerNorms have eps 1e-12, not in the config, and a
/// `sinusoidal_pos_embds` table is stored in the weights like a learned one).
#[derive(Clone, Debug, Deserialize)]
pub struct BertConfig {
    #[serde(skip)]
    pub flavor: BertFlavor,
    pub vocab_size: usize,
    #[serde(alias = "dim")]
    pub hidden_size: usize,
    #[serde(alias = "n_layers")]
    pub num_hidden_layers: usize,
    #[serde(alias = "n_heads")]
    pub num_attention_heads: usize,
    #[serde(alias = "hidden_dim")]
    pub intermediate_size: usize,
    #[serde(default = "default_positions")]
    pub max_position_embeddings: usize,
    /// Rows of `token_type_embeddings`; 0 when the model has none (DistilBERT).
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "default_act", alias = "activation")]
    pub hidden_act: String,
    /// RoBERTa's `padding_idx` (1 when absent, as in `RobertaConfig`).
    #[serde(default)]
    pub pad_token_id: Option<u32>,
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
fn default_positions() -> usize {
    512
}

impl BertConfig {
    pub fn from_json(bytes: &[u8]) -> Result<BertConfig> {
        #[derive(Deserialize)]
        struct ModelType {
            #[serde(default)]
            model_type: Option<String>,
        }
        let not_config =
            |e: serde_json::Error| invalid_model(format!("config.json is not a BERT config ({e})"));
        let flavor = match serde_json::from_slice::<ModelType>(bytes)
            .map_err(not_config)?
            .model_type
            .as_deref()
        {
            None | Some("bert") => BertFlavor::Bert,
            Some("roberta" | "xlm-roberta") => BertFlavor::Roberta,
            Some("distilbert") => BertFlavor::DistilBert,
            Some(other) => {
                return Err(crate::Error::UnsupportedArchitecture(format!(
                    "config.json: model_type `{other}` is not of the BERT family"
                )))
            }
        };
        let mut c: BertConfig = serde_json::from_slice(bytes).map_err(not_config)?;
        c.flavor = flavor;
        // The keys of vocab_size, hidden_size, num_hidden_layers, num_attention_heads,
        // intermediate_size and hidden_act in this flavour's config.json, for messages.
        let k = match flavor {
            BertFlavor::DistilBert => {
                (c.type_vocab_size, c.layer_norm_eps) = (0, 1e-12);
                ["vocab_size", "dim", "n_layers", "n_heads", "hidden_dim", "activation"]
            }
            _ => [
                "vocab_size",
                "hidden_size",
                "num_hidden_layers",
                "num_attention_heads",
                "intermediate_size",
                "hidden_act",
            ],
        };
        let mut sizes = vec![
            (k[0], c.vocab_size),
            (k[1], c.hidden_size),
            (k[2], c.num_hidden_layers),
            (k[4], c.intermediate_size),
            ("max_position_embeddings", c.max_position_embeddings),
        ];
        if flavor != BertFlavor::DistilBert {
            sizes.push(("type_vocab_size", c.type_vocab_size));
        }
        if let Some((key, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Err(invalid_model(format!("config.json: {key} is 0 (it must be at least 1)")));
        }
        if c.num_attention_heads == 0 || c.hidden_size % c.num_attention_heads != 0 {
            return Err(invalid_model(format!(
                "config.json: {} {} is not a multiple of {} {}",
                k[1], c.hidden_size, k[3], c.num_attention_heads
            )));
        }
        if !matches!(c.hidden_act.as_str(), "gelu" | "gelu_python") {
            return Err(crate::Error::UnsupportedArchitecture(format!(
                "config.json: {} `{}` (only exact gelu)",
                k[5], c.hidden_act
            )));
        }
        if c.max_tokens() == 0 {
            return Err(invalid_model(format!(
                "config.json: max_position_embeddings {} leaves no position after padding_idx {} (pad_token_id)",
                c.max_position_embeddings,
                c.padding_idx().unwrap_or(0)
            )));
        }
        Ok(c)
    }

    /// RoBERTa's `padding_idx`: a pad token sits at this row of `position_embeddings`, the
    /// other tokens after it. None where positions are the token indices.
    pub fn padding_idx(&self) -> Option<u32> {
        (self.flavor == BertFlavor::Roberta).then(|| self.pad_token_id.unwrap_or(1))
    }

    /// Row of `position_embeddings` the first token takes: `padding_idx + 1` for RoBERTa, 0 else.
    pub fn first_position(&self) -> usize {
        self.padding_idx().map_or(0, |p| p as usize + 1)
    }

    /// Tokens the model reads at most (special tokens included): the position rows from
    /// [`Self::first_position`] on.
    pub fn max_tokens(&self) -> usize {
        self.max_position_embeddings.saturating_sub(self.first_position())
    }

    /// Refuses a model whose attention maps at [`Self::max_tokens`] do not fit in the budget.
    pub fn check_attention_budget(&self) -> Result<()> {
        let (layers, heads, t) =
            (self.num_hidden_layers, self.num_attention_heads, self.max_tokens());
        let what = format!(
            "config.json: {layers} layers × {heads} heads at max_position_embeddings {}",
            self.max_position_embeddings
        );
        super::family::check_attention_budget(&what, &[(layers, heads, t, t)])
    }
}

/// Where a checkpoint keeps each module's weights: `{base}.embeddings.*` and
/// `{base}.{layers}.N.{…}`, with `base` the model's own module (`bert`, `roberta`,
/// `distilbert`) or none. DistilBERT's modules are BERT's under other names.
struct WeightNames {
    base: &'static str,
    layers: &'static str,
    query: &'static str,
    key: &'static str,
    value: &'static str,
    attention_output: &'static str,
    attention_layer_norm: &'static str,
    intermediate: &'static str,
    output: &'static str,
    output_layer_norm: &'static str,
}

const BERT_NAMES: WeightNames = WeightNames {
    base: "bert",
    layers: "encoder.layer",
    query: "attention.self.query",
    key: "attention.self.key",
    value: "attention.self.value",
    attention_output: "attention.output.dense",
    attention_layer_norm: "attention.output.LayerNorm",
    intermediate: "intermediate.dense",
    output: "output.dense",
    output_layer_norm: "output.LayerNorm",
};

impl WeightNames {
    fn of(flavor: BertFlavor) -> WeightNames {
        match flavor {
            BertFlavor::Bert => BERT_NAMES,
            BertFlavor::Roberta => WeightNames { base: "roberta", ..BERT_NAMES },
            BertFlavor::DistilBert => WeightNames {
                base: "distilbert",
                layers: "transformer.layer",
                query: "attention.q_lin",
                key: "attention.k_lin",
                value: "attention.v_lin",
                attention_output: "attention.out_lin",
                attention_layer_norm: "sa_layer_norm",
                intermediate: "ffn.lin1",
                output: "ffn.lin2",
                output_layer_norm: "output_layer_norm",
            },
        }
    }
}

/// `embeddings.*` (f32, or int8 with a scale per row: a lookup decodes only the rows it uses)
struct BertEmbeddings {
    word_embeddings: WeightMatrix,     // [vocab, d]
    position_embeddings: WeightMatrix, // [max_pos, d]
    /// None in DistilBERT.
    token_type_embeddings: Option<WeightMatrix>, // [type_vocab, d]
    layer_norm: LayerNorm,
    /// RoBERTa's `padding_idx`; None where positions are the token indices.
    padding_idx: Option<u32>,
}

impl BertEmbeddings {
    /// The position embeddings added to the tokens at `0..n` (no pad token among them):
    /// `# [n, d]` row-major.
    fn position_rows(&self, n: usize) -> Vec<f32> {
        let first = self.padding_idx.map_or(0, |p| p as usize + 1);
        let (rows, d) = (
            n.min(self.position_embeddings.rows().saturating_sub(first)),
            self.position_embeddings.cols(),
        );
        let mut out = vec![0.0; rows * d];
        out.chunks_exact_mut(d)
            .enumerate()
            .for_each(|(i, row)| self.position_embeddings.row_into(first + i, row));
        out
    }

    /// The row of `position_embeddings` each token takes: its index, or for RoBERTa what
    /// Hugging Face's `create_position_ids_from_input_ids` gives: `padding_idx` for a pad
    /// token, else `padding_idx` + the number of non-pad tokens up to it.
    fn position_ids(&self, ids: &[u32]) -> Vec<usize> {
        match self.padding_idx {
            None => (0..ids.len()).collect(),
            Some(pad) => ids
                .iter()
                .scan(pad as usize, |count, &id| {
                    *count += (id != pad) as usize;
                    Some(if id == pad { pad as usize } else { *count })
                })
                .collect(),
        }
    }

    /// `w`: the `embeddings` module.
    fn load(w: &Scope, c: &BertConfig) -> Result<BertEmbeddings> {
        let d = c.hidden_size;
        let table = |name: &str, rows| w.pp(name).weight_matrix("weight", rows, d);
        Ok(BertEmbeddings {
            word_embeddings: table("word_embeddings", c.vocab_size)?,
            position_embeddings: table("position_embeddings", c.max_position_embeddings)?,
            token_type_embeddings: match c.flavor {
                BertFlavor::DistilBert => None,
                _ => Some(table("token_type_embeddings", c.type_vocab_size)?),
            },
            layer_norm: LayerNorm::load(&w.pp("LayerNorm"), d, c.layer_norm_eps as f32)?,
            padding_idx: c.padding_idx(),
        })
    }

    /// x = LN(word[id] + position[position id] + token_type[0])                # [T, d]
    fn forward(&self, ids: &[u32]) -> Result<Mat> {
        let (vocab, d) = (self.word_embeddings.rows(), self.word_embeddings.cols());
        let mut x = Mat::zeros(ids.len(), d);
        let (mut pe, mut te) = (vec![0.0; d], vec![0.0; d]);
        if let Some(t) = &self.token_type_embeddings {
            t.row_into(0, &mut te);
        }
        for (i, (&id, pos)) in ids.iter().zip(self.position_ids(ids)).enumerate() {
            let id = id as usize;
            if id >= vocab {
                return Err(invalid_model(format!(
                    "tokenizer produced id {id} outside the vocabulary ({vocab})"
                )));
            }
            if pos >= self.position_embeddings.rows() {
                return Err(Error::InvalidInput(format!(
                    "token {i} takes position {pos}, past the model's {} position embeddings",
                    self.position_embeddings.rows()
                )));
            }
            self.position_embeddings.row_into(pos, &mut pe);
            let row = x.row_mut(i);
            self.word_embeddings.row_into(id, row);
            for j in 0..d {
                row[j] += pe[j] + te[j];
            }
        }
        self.layer_norm.apply(&mut x);
        Ok(x)
    }

    /// `forward`'s output split into its token part, its position part and the rest (the
    /// segment embedding and the LayerNorm's bias), which sum to it: the first layer's input
    /// for the score parts. `ids` passed `forward`.
    fn split(&self, ids: &[u32]) -> InputSplit {
        let d = self.word_embeddings.cols();
        let mut parts =
            [Mat::zeros(ids.len(), d), Mat::zeros(ids.len(), d), Mat::zeros(ids.len(), d)];
        let mut te = vec![0.0; d];
        if let Some(t) = &self.token_type_embeddings {
            t.row_into(0, &mut te);
        }
        for (i, (&id, pos)) in ids.iter().zip(self.position_ids(ids)).enumerate() {
            self.word_embeddings.row_into(id as usize, parts[0].row_mut(i));
            self.position_embeddings.row_into(pos, parts[1].row_mut(i));
            parts[2].row_mut(i).copy_from_slice(&te);
        }
        InputSplit {
            names: vec!["token", "position", "bias"],
            parts: self.layer_norm.split(&parts),
            first_key: 0,
        }
    }
}

/// `encoder.layer.N.attention.self.*`
struct BertSelfAttention {
    query: Linear, // [d, d]
    key: Linear,   // [d, d]
    value: Linear, // [d, d]
    attn: MultiHead,
}

impl BertSelfAttention {
    /// x `[T, d]` → the heads' outputs, concatenated `[T, d]`; the probe gets `[heads, T, T]`
    /// (and, when it asks, the value norms through the block's output projection `wo`).
    fn forward(&self, x: &Mat, wo: &Linear, probe: &mut Probe) -> Mat {
        self.attn.offer_split(probe, &self.query, &self.key);
        let q = self.query.forward(x); // [T, d]
        let k = self.key.forward(x); // [T, d]
        let v = self.value.forward(x); // [T, d]
        self.attn.attend(&q, &KvCache::of(k, &v), Mask::None, &wo.weight, probe)
    }
}

/// `encoder.layer.N.attention.output.*`
struct BertSelfOutput {
    dense: Linear, // [d, d]
    layer_norm: LayerNorm,
}

/// `encoder.layer.N.attention.*`
struct BertAttention {
    self_attention: BertSelfAttention,
    output: BertSelfOutput,
}

impl BertAttention {
    /// x = LN(x + output.dense(self(x)))                                         # [T, d]
    fn forward(&self, x: &Mat, probe: &mut Probe) -> Mat {
        let context = self.self_attention.forward(x, &self.output.dense, probe); // [T, d]
        let BertSelfOutput { dense, layer_norm } = &self.output;
        self.self_attention.attn.post_norm_output(&context, x, dense, layer_norm, probe)
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
    /// LN(h + ff · Wᵀ + b)                                                      # [T, d]
    fn forward(&self, ff: &Mat, h: &Mat) -> Mat {
        let mut out = self.dense.forward(ff) + h;
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
    /// `w`: the module `{base}.{layers}.N`; `n` names its modules (BERT's or DistilBERT's).
    fn load(w: &Scope, n: &WeightNames, c: &BertConfig, layer: usize) -> Result<BertLayer> {
        let (d, ffn, heads) = (c.hidden_size, c.intermediate_size, c.num_attention_heads);
        let eps = c.layer_norm_eps as f32;
        let site = Site { kind: AttentionKind::EncoderSelf, layer };
        Ok(BertLayer {
            attention: BertAttention {
                self_attention: BertSelfAttention {
                    query: Linear::load(&w.pp(n.query), d, d)?,
                    key: Linear::load(&w.pp(n.key), d, d)?,
                    value: Linear::load(&w.pp(n.value), d, d)?,
                    attn: MultiHead::new(site, heads, heads, d / heads),
                },
                output: BertSelfOutput {
                    dense: Linear::load(&w.pp(n.attention_output), d, d)?,
                    layer_norm: LayerNorm::load(&w.pp(n.attention_layer_norm), d, eps)?,
                },
            },
            intermediate: BertIntermediate { dense: Linear::load(&w.pp(n.intermediate), ffn, d)? },
            output: BertOutput {
                dense: Linear::load(&w.pp(n.output), d, ffn)?,
                layer_norm: LayerNorm::load(&w.pp(n.output_layer_norm), d, eps)?,
            },
        })
    }

    /// x `[T, d]` → `[T, d]`: x = LN(x + attention(x)); x = LN(x + output(intermediate(x))).
    fn forward(&self, x: &Mat, probe: &mut Probe) -> Mat {
        let x = self.attention.forward(x, probe); // [T, d]
        let ff = self.intermediate.forward(&x); // [T, ffn]
        self.output.forward(&ff, &x)
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
    pub fn load(
        config_json: &[u8],
        weights: TensorStore,
        tokenizer_json: &[u8],
    ) -> Result<BertModel> {
        let c = BertConfig::from_json(config_json)?;
        c.check_attention_budget()?;
        let (layers, tokens) = (c.num_hidden_layers, c.max_tokens());
        let names = WeightNames::of(c.flavor);
        let weights = RefCell::new(weights);
        let root = Scope::new(&weights);
        // Task-head checkpoints (…ForMaskedLM) keep the base model under its own module (`bert`);
        // the base model's own checkpoints do not.
        let base = root.pp(names.base);
        let w = match base.pp("embeddings").pp("word_embeddings").contains("weight") {
            true => base,
            false => root,
        };
        let embeddings = BertEmbeddings::load(&w.pp("embeddings"), &c)?;
        let layer = (0..layers)
            .map(|i| BertLayer::load(&w.pp(names.layers).pp(i), &names, &c, i))
            .collect::<Result<_>>()?;
        let tokenizer = TextTokenizer::from_bytes(tokenizer_json, tokens)?;
        Ok(BertModel { config: c, embeddings, encoder: BertEncoder { layer }, tokenizer })
    }

    /// The learned position embeddings added to the tokens at `0..n` (at most
    /// [`BertConfig::max_tokens`]; RoBERTa's from row `padding_idx + 1`): `# [n, hidden_size]`
    /// row-major.
    pub fn position_table(&self, n: usize) -> Vec<f32> {
        self.embeddings.position_rows(n)
    }

    /// The special tokens of a BERT (`[CLS]` …) or RoBERTa (`<s>` …) vocabulary that the
    /// tokenizer knows.
    pub fn special_tokens(&self) -> Vec<String> {
        let known = |t: &&str| self.tokenizer.token_to_id(t).is_some();
        ["[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]", "<s>", "</s>", "<pad>", "<unk>", "<mask>"]
            .into_iter()
            .filter(known)
            .map(String::from)
            .collect()
    }
}

impl Family for BertModel {
    fn shape(&self) -> FamilyShape {
        let c = &self.config;
        let kinds = vec![(AttentionKind::EncoderSelf, c.num_hidden_layers)];
        let heads = c.num_attention_heads;
        FamilyShape {
            kinds,
            heads,
            kv_heads: heads,
            head_dim: c.hidden_size / heads,
            max_positions: c.max_tokens(),
            special_tokens: self.special_tokens(),
            generates: false,
        }
    }

    fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// The learned position embeddings added to the tokens (RoBERTa's from `padding_idx + 1`).
    fn positions(&self, n: usize) -> PositionTable {
        let dims = self.config.hidden_size;
        let data = self.position_table(n);
        PositionTable {
            kind: PositionKind::Learned,
            positions: data.len() / dims.max(1),
            dims,
            data,
            wave: None,
        }
    }

    /// `encoder_self` attention of every layer goes to `probe`.
    fn forward(
        &self,
        text: &str,
        _generate: &GenerateOptions,
        probe: &mut Probe,
    ) -> Result<ForwardOutput> {
        let enc = self.tokenizer.encode(text)?;
        let x = self.embeddings.forward(&enc.ids)?; // [T, d]
        let first = Site { kind: AttentionKind::EncoderSelf, layer: 0 };
        probe.split_input(first, || self.embeddings.split(&enc.ids));
        probe.tokens_fed(AttentionKind::EncoderSelf, 0, &enc.ids, &self.tokenizer);
        let x = self.encoder.forward(x, probe); // [T, d]
        Ok(ForwardOutput {
            sentence_embedding: Some(mean_pool_normalised(&x)),
            generation: None,
            decode_top: None,
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

//! What a model family is to the rest of the crate: the [`Family`] trait its model implements,
//! the [`Architecture`] its file declares (names, loader, sizes for inspection), the files its
//! loader reads ([`ModelFiles`], one reader per file format), and the position tables and size
//! checks it shares. A family's file imports from here; nothing here imports a family.

use crate::error::{invalid_model, Result};
use crate::limits::{budget, human_bytes, MEMORY_BUDGET_BYTES};
use crate::nn::probe::Probe;
use crate::result::{AttentionBlock, AttentionKind, ForwardOutput, GenerateOptions};
use crate::tokenize::TextTokenizer;
use crate::weights::gguf::Gguf;
use crate::weights::TensorStore;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::HashMap;

/// What a model family provides (its file implements it for its model); [`super::Model`] dispatches
/// to it once. A new family needs its file (its model implementing this trait, or
/// [`super::decoder::CausalLm`] for a causal decoder, and its [`Architecture`]) and one line in
/// [`super::manifest::ARCHITECTURES`].
pub trait Family: Send + Sync {
    /// Its attention and sizes, for [`super::ModelInfo`].
    fn shape(&self) -> FamilyShape;
    fn tokenizer(&self) -> &TextTokenizer;
    /// One forward over `text`; `generate` says what a decoder-only model generates after it
    /// (others ignore it); `probe` says what to record.
    fn forward(
        &self,
        text: &str,
        generate: &GenerateOptions,
        probe: &mut Probe,
    ) -> Result<ForwardOutput>;
    /// The position vectors (or rotations) of positions `0..n`, `n` in 1..=max_positions.
    fn positions(&self, n: usize) -> PositionTable;
    /// A decoder-only model's maps of one full run over `ids` (no cache, no generation);
    /// `None` for the others.
    fn attend_ids(&self, _ids: &[u32]) -> Option<Result<Vec<AttentionBlock>>> {
        None
    }
    /// A decoder-only model's maps of a random sequence of `n` tokens repeated (what induction
    /// heads are found on); `None` for the others.
    fn repeated_random_maps(&self, _n: usize) -> Option<Result<Vec<AttentionBlock>>> {
        None
    }
    /// Drops what a model kept of its last forward for the next one to start from (a causal
    /// decoder's KV cache and rows); the next forward starts from position 0.
    fn forget_previous(&self) {}
}

/// What [`super::ModelInfo`] takes from the family.
pub struct FamilyShape {
    /// Its kinds of attention with their layers, in the order the viewer lists them.
    pub kinds: Vec<(AttentionKind, usize)>,
    pub heads: usize,
    /// Key/value heads (fewer than `heads` when query heads share them: GQA).
    pub kv_heads: usize,
    pub head_dim: usize,
    pub max_positions: usize,
    pub special_tokens: Vec<String>,
    /// Whether it continues a text (decoder-only).
    pub generates: bool,
}

/// A family as loading, inspection and the messages see it.
pub struct Architecture {
    /// The manifest's `architecture` values it runs, as config.json's `model_type` says them.
    pub model_types: &'static [&'static str],
    /// How messages name the family of a model type (`RoBERTa`).
    pub display_name: fn(&str) -> &'static str,
    /// What a Hugging Face folder may hold instead of model.safetensors, for messages
    /// (` (or one .gguf file)`), or nothing.
    pub hf_alternative: &'static str,
    /// Added to the message when a Hugging Face folder of it lacks a file, or nothing.
    pub hf_hint: &'static str,
    /// A folder without config.json: the files to load when `names` hold this family's own
    /// format (one .gguf, a Marian .bin), an error when they hold it incomplete.
    pub own_files: fn(&[String]) -> Option<Result<Vec<String>>>,
    /// Builds the model from the manifest's files.
    pub load: fn(&mut ModelFiles) -> Result<Box<dyn Family>>,
    /// Sizes for inspection, from config.json.
    pub sizes: fn(&[u8]) -> Result<Sizes>,
    /// Sizes for inspection, from a GGUF's metadata, when the family reads GGUF files.
    pub gguf_sizes: Option<fn(&Gguf) -> Result<Sizes>>,
}

/// For an [`Architecture`] whose files are Hugging Face folders only.
pub fn no_own_files(_: &[String]) -> Option<Result<Vec<String>>> {
    None
}

/// What inspection reads from a config (or GGUF metadata) before loading.
pub struct Sizes {
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub hidden: usize,
    pub max_positions: usize,
    /// An encoder-decoder's decoder layers and the bytes of their attention maps.
    pub decoder: Option<(usize, u64)>,
}

/// The files a manifest lists, by name, as a family's loader reads them.
pub struct ModelFiles<'a> {
    files: HashMap<String, Cow<'a, [u8]>>,
    listed: Vec<String>,
}

impl<'a> ModelFiles<'a> {
    pub(super) fn new(listed: &[String], files: HashMap<String, Cow<'a, [u8]>>) -> ModelFiles<'a> {
        ModelFiles { files, listed: listed.to_vec() }
    }

    /// The bytes of `name`.
    pub fn get(&self, name: &str) -> Result<&[u8]> {
        self.files
            .get(name)
            .map(|v| v.as_ref())
            .ok_or_else(|| invalid_model(format!("file `{name}` was not provided")))
    }

    /// The bytes of `name`, taken (copied only when they were lent).
    pub fn take(&mut self, name: &str) -> Result<Vec<u8>> {
        self.files
            .remove(name)
            .map(Cow::into_owned)
            .ok_or_else(|| invalid_model(format!("file `{name}` was not provided")))
    }

    /// The first file the manifest lists whose name ends with `suffix`.
    pub fn listed(&self, suffix: &str) -> Option<String> {
        self.listed.iter().find(|f| f.ends_with(suffix)).cloned()
    }

    /// A Hugging Face folder: its config.json, its safetensors weights as one store, and its
    /// tokenizer.json.
    pub fn hugging_face(&self) -> Result<(&[u8], TensorStore, &[u8])> {
        let weights = self
            .safetensors()?
            .ok_or_else(|| invalid_model("no .safetensors file in the manifest"))?;
        Ok((self.get("config.json")?, weights, self.get("tokenizer.json")?))
    }

    /// The safetensors weights the manifest lists (one file, or the shards of one checkpoint)
    /// as one store, or `None` when it lists none.
    pub fn safetensors(&self) -> Result<Option<TensorStore>> {
        let names: Vec<&str> = self
            .listed
            .iter()
            .map(String::as_str)
            .filter(|f| f.ends_with(".safetensors"))
            .collect();
        if names.is_empty() {
            return Ok(None);
        }
        let shards = names.iter().map(|n| Ok((*n, self.get(n)?))).collect::<Result<Vec<_>>>()?;
        crate::weights::safetensors_file::read_shards(&shards).map(Some)
    }

    /// The GGUF file the manifest lists, parsed (its weights stay in its bytes), or `None`.
    pub fn gguf(&mut self) -> Result<Option<Gguf>> {
        let Some(name) = self.listed(".gguf") else { return Ok(None) };
        let bytes = self.take(&name)?;
        crate::weights::gguf::read(bytes, &name).map(Some)
    }
}

/// How a model tells positions apart: a fixed sinusoid (Marian) or a learned table (BERT, GPT-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PositionKind {
    Sinusoidal,
    Learned,
    /// Nothing is added: queries and keys are rotated by position (Llama). The table holds
    /// cos(p·θ_i) for the first d_k/2 columns and sin(p·θ_i) for the rest.
    Rotary,
}

/// The frequencies of a computed position table: pair i turns by θ_i = base^(−i/denominator)
/// radians per position (one sin and one cos column per pair).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Wave {
    pub base: f64,
    pub denominator: f64,
}

impl Wave {
    /// θ_i in radians per position.
    pub fn frequency(&self, i: usize) -> f64 {
        self.base.powf(-(i as f64) / self.denominator)
    }

    /// θ of each of `dims` columns laid out as two halves (column i and column d/2 + i share pair i).
    pub fn column_frequencies(&self, dims: usize) -> Vec<f64> {
        let half = (dims / 2).max(1);
        (0..dims).map(|c| self.frequency(c % half)).collect()
    }
}

/// The vectors a model adds to the token embeddings for positions `0..positions`.
pub struct PositionTable {
    pub kind: PositionKind,
    pub positions: usize,
    pub dims: usize,
    /// `# [positions, dims]` row-major.
    pub data: Vec<f32>,
    /// A computed table's frequencies (`None` for a learned one).
    pub wave: Option<Wave>,
}

/// Refuses a model whose attention for its longest input would not fit in the memory budget:
/// what the viewer keeps of a long text, the maps of two layers of each kind (the one drawn and
/// the next asked for: `2 × heads × queries × keys` f32) and every row's statistics of every
/// layer and head (the head scores'). `blocks` are `(layers, heads, queries, keys)`; `what`
/// names the sizes in the message.
pub(crate) fn check_attention_budget(
    what: &str,
    blocks: &[(usize, usize, usize, usize)],
) -> Result<()> {
    let row_stats = std::mem::size_of::<crate::heads::RowStats>() as u64;
    let product =
        |n: [usize; 3], bytes: u64| n.iter().try_fold(bytes, |a, &n| a.checked_mul(n as u64));
    let bytes = blocks.iter().try_fold(0u64, |total, &(layers, heads, queries, keys)| {
        let maps = product([layers.min(2), heads, queries], 4)?.checked_mul(keys as u64)?;
        let stats = product([layers, heads, queries], row_stats)?;
        total.checked_add(maps)?.checked_add(stats)
    });
    match bytes {
        Some(b) if b <= MEMORY_BUDGET_BYTES => Ok(()),
        Some(b) => Err(invalid_model(format!(
            "{what}: its attention maps at full length need {}, more than {}",
            human_bytes(b),
            budget()
        ))),
        None => Err(invalid_model(format!(
            "{what}: its attention maps at full length are too large to count, far more than {}",
            budget()
        ))),
    }
}

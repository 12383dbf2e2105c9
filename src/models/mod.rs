//! Model families (one file each) and the choice between them from a manifest or from the
//! files themselves. Their shared layers are in [`crate::nn`].

pub mod bert;
pub mod decoder;
pub mod gpt2;
pub mod inspect;
pub mod llama;
pub mod marian;

use crate::attention::{Attended, AttentionKind, ForwardOutput, GenerateOptions, HeadInternals, HeadRequest};
use crate::error::{invalid_model, Error, Result};
use crate::heads::{induction_scores, score_block, HeadScores};
use crate::limits::{budget, human_bytes, MEMORY_BUDGET_BYTES};
use crate::nn::probe::Probe;
use crate::weights::TensorStore;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// `models/<dir>/manifest.json`, written by the setup script (or inferred for a user's folder).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub id: String,
    #[serde(default)]
    pub name: String,
    pub architecture: String,
    pub files: Vec<String>,
    #[serde(default)]
    pub license: String,
    #[serde(default)]
    pub credit: String,
    #[serde(default)]
    pub example: String,
    /// Other file sets of the same model, by name: `int8` lists MiniLM's int8 weights in place of
    /// the f32 ones (`files`, the exact weights).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub variants: std::collections::BTreeMap<String, Vec<String>>,
}

impl Manifest {
    pub fn from_json(bytes: &[u8]) -> Result<Manifest> {
        serde_json::from_slice(bytes).map_err(|e| invalid_model(format!("manifest.json is not valid ({e})")))
    }

    /// The manifest loading the file set `variant` instead of `files`.
    pub fn with_variant(mut self, variant: &str) -> Result<Manifest> {
        let files = self.variants.get(variant).ok_or_else(|| {
            let known: Vec<&str> = self.variants.keys().map(String::as_str).collect();
            invalid_model(format!("model `{}` has no `{variant}` weights (it has: f32{})", self.id, known.iter().map(|k| format!(", {k}")).collect::<String>()))
        })?;
        self.files = files.clone();
        Ok(self)
    }

    /// For a folder without a manifest (a Hugging Face checkout or a Marian export), decide from
    /// the files themselves.
    pub fn infer(id: &str, names: &[String], config_json: Option<&[u8]>) -> Result<Manifest> {
        let has = |n: &str| names.iter().any(|x| x == n);
        let architecture = if let Some(cfg) = config_json {
            let v: serde_json::Value = serde_json::from_slice(cfg).map_err(|e| invalid_model(format!("config.json is not JSON ({e})")))?;
            let model_type = v.get("model_type").and_then(|t| t.as_str()).unwrap_or("");
            match model_type {
                known if inspect::CONFIG_MODEL_TYPES.contains(&known) => known.to_string(),
                other => {
                    let supported = inspect::CONFIG_MODEL_TYPES.join(", ");
                    return Err(Error::UnsupportedArchitecture(format!("config.json has model_type `{other}` (supported model_types: {supported}; or one Llama .gguf file)")));
                }
            }
        } else if let Some(gguf) = names.iter().find(|n| n.ends_with(".gguf")) {
            return Ok(Manifest {
                id: id.to_string(),
                name: id.to_string(),
                architecture: "llama".into(),
                files: vec![gguf.clone()],
                license: String::new(),
                credit: String::new(),
                example: String::new(),
                variants: Default::default(),
            });
        } else if names.iter().any(|n| n.ends_with(".bin") && n.starts_with("model")) {
            "marian".to_string()
        } else {
            return Err(invalid_model("no manifest.json, config.json or Marian model .bin found"));
        };
        // The weights: model.safetensors or a whole sharded checkpoint; else what is there instead.
        let weights = crate::weights::safetensors_file::weight_files(names)?;
        let family = match architecture.as_str() {
            a if bert::MODEL_TYPES.contains(&a) => bert::family_name(a).to_string(),
            "llama" => "Llama".into(),
            "gpt2" => "GPT-2".into(),
            _ => "Marian".into(),
        };
        let hf_files = |weights: Option<Vec<String>>, also: &str| -> Result<Vec<String>> {
            let lacking: Vec<&str> = ["config.json", "tokenizer.json"].into_iter().filter(|n| !has(n)).collect();
            let Some(weights) = weights else {
                let pytorch = names.iter().find(|n| n.starts_with("pytorch_model") && n.ends_with(".bin"));
                return Err(invalid_model(match pytorch {
                    Some(p) => format!("this {family} folder holds its weights as {p} (a PyTorch pickle), which attnviz does not read: it reads model.safetensors (or model-00001-of-0000N.safetensors shards); Hugging Face's `save_pretrained(dir, safe_serialization=True)` or the Hub's safetensors files give them"),
                    None => format!("this {family} folder has no model.safetensors (nor its shards): it needs config.json, model.safetensors and tokenizer.json{also}"),
                }));
            };
            if !lacking.is_empty() {
                return Err(invalid_model(format!("this {family} folder has no {}: it needs config.json, model.safetensors and tokenizer.json{also}", lacking.join(" and "))));
            }
            Ok(["config.json".to_string()].into_iter().chain(weights).chain(["tokenizer.json".to_string()]).collect())
        };
        let files = match architecture.as_str() {
            a if bert::MODEL_TYPES.contains(&a) => hf_files(weights, "")?,
            "llama" => hf_files(weights, " (or one .gguf file)")?,
            "gpt2" => hf_files(weights, "")?,
            "marian" if config_json.is_some() => hf_files(weights, "").map_err(|e| match e {
                Error::InvalidModel(m) => invalid_model(format!("{m}. {}", inspect::MARIAN_HF_FILES)),
                e => e,
            })?,
            _ => {
                let bin = names.iter().find(|n| n.ends_with(".bin") && n.starts_with("model")).cloned().unwrap_or_default();
                if !has("tokenizer.json") {
                    return Err(invalid_model("a Marian folder needs tokenizer.json beside the model .bin"));
                }
                vec![bin, "tokenizer.json".into()]
            }
        };
        Ok(Manifest {
            id: id.to_string(),
            name: id.to_string(),
            architecture,
            files,
            license: String::new(),
            credit: String::new(),
            example: String::new(),
            variants: Default::default(),
        })
    }
}

/// A file a manifest names must be a plain file inside the model folder: a relative path of
/// ordinary components (no `..`, no absolute path), that resolves (symbolic links followed)
/// inside the folder, and is a regular file (not a device such as `/dev/zero`, nor a FIFO
/// that would block the read forever). Returns its size.
fn plain_file_in(dir: &std::path::Path, name: &str) -> Result<u64> {
    use std::path::Component;
    let bad = |why: &str| invalid_model(format!("manifest.json names `{name}`, which {why}"));
    let rel = std::path::Path::new(name);
    if name.is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(bad("is not a plain file name inside the model folder"));
    }
    let path = dir.join(rel);
    let real = path.canonicalize().map_err(|e| invalid_model(format!("cannot read {}: {e}", path.display())))?;
    let root = dir.canonicalize().map_err(|e| invalid_model(format!("cannot read {}: {e}", dir.display())))?;
    if !real.starts_with(&root) {
        return Err(bad("lies outside the model folder"));
    }
    let meta = std::fs::metadata(&real).map_err(|e| invalid_model(format!("cannot read {}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(bad("is not a regular file"));
    }
    Ok(meta.len())
}

/// Refuses a model whose attention maps for its longest input (every layer and head kept, as
/// the viewer does: `layers × heads × queries × keys` f32) would not fit in the memory budget.
/// `what` names the sizes in the message.
pub(crate) fn check_attention_budget(what: &str, blocks: &[(usize, usize, usize, usize)]) -> Result<()> {
    let bytes = blocks.iter().try_fold(0u64, |total, &(layers, heads, queries, keys)| {
        [layers, heads, queries, keys].iter().try_fold(4u64, |a, &n| a.checked_mul(n as u64)).and_then(|b| total.checked_add(b))
    });
    match bytes {
        Some(b) if b <= MEMORY_BUDGET_BYTES => Ok(()),
        Some(b) => Err(invalid_model(format!("{what}: its attention maps at full length need {}, more than {}", human_bytes(b), budget()))),
        None => Err(invalid_model(format!("{what}: its attention maps at full length are too large to count, far more than {}", budget()))),
    }
}

/// Length of the random sequence that is repeated to find induction heads.
pub const INDUCTION_TOKENS: usize = 20;

/// Architectures this build runs.
pub const SUPPORTED: &[&str] = &["bert", "roberta", "xlm-roberta", "distilbert", "marian", "llama", "gpt2"];

pub enum Family {
    Bert(bert::BertModel),
    Marian(marian::MarianModel),
    Llama(llama::LlamaModel),
    Gpt2(gpt2::Gpt2Model),
}

pub struct Model {
    pub manifest: Manifest,
    pub family: Family,
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

/// Positions a table holds when none are asked for: enough to see the slow dimensions turn.
pub const DEFAULT_POSITIONS: usize = 128;

/// What a viewer needs to know about a loaded model before the first forward.
#[derive(Clone, Debug, Serialize)]
pub struct ModelInfo {
    pub id: String,
    pub name: String,
    pub architecture: String,
    pub kinds: Vec<AttentionKind>,
    pub layers: HashMap<AttentionKind, usize>,
    pub heads: HashMap<AttentionKind, usize>,
    /// Key/value heads per kind: fewer than `heads` when query heads share them (GQA).
    pub kv_heads: HashMap<AttentionKind, usize>,
    /// Whether the model continues a text (decoder-only): `attend` then takes generation options.
    pub generates: bool,
    pub head_dim: usize,
    pub max_positions: usize,
    pub special_tokens: Vec<String>,
    pub credit: String,
    pub license: String,
    pub example: String,
}

/// The safetensors weights a manifest lists (one file, or the shards of one checkpoint) as one
/// store, or None when it lists none.
fn safetensors_weights<'a>(manifest: &Manifest, file: impl Fn(&str) -> Result<&'a [u8]>) -> Result<Option<TensorStore>> {
    let names: Vec<&str> = manifest.files.iter().map(String::as_str).filter(|f| f.ends_with(".safetensors")).collect();
    if names.is_empty() {
        return Ok(None);
    }
    let shards = names.iter().map(|n| Ok((*n, file(n)?))).collect::<Result<Vec<_>>>()?;
    crate::weights::safetensors_file::read_shards(&shards).map(Some)
}

impl Model {
    /// Builds the model from the bytes of the files its manifest lists.
    pub fn load(manifest: Manifest, files: &HashMap<String, Vec<u8>>) -> Result<Model> {
        if manifest.architecture == "llama" {
            return Model::load_owned(manifest, files.clone());
        }
        Model::load_borrowed(manifest, files)
    }

    /// As [`Model::load`], taking the bytes: a GGUF model's weights stay in its file's bytes
    /// instead of a copy.
    pub fn load_owned(manifest: Manifest, mut files: HashMap<String, Vec<u8>>) -> Result<Model> {
        if manifest.architecture != "llama" {
            return Model::load_borrowed(manifest, &files);
        }
        let file = |name: &str| files.get(name).map(|v| v.as_slice()).ok_or_else(|| invalid_model(format!("file `{name}` was not provided")));
        let model = if let Some(name) = manifest.files.iter().find(|f| f.ends_with(".gguf")) {
            let bytes = files.remove(name).ok_or_else(|| invalid_model(format!("file `{name}` was not provided")))?;
            llama::LlamaModel::load_gguf(&crate::weights::gguf::read(bytes, name)?)?
        } else {
            let weights = safetensors_weights(&manifest, file)?.ok_or_else(|| invalid_model("no .safetensors or .gguf file in the manifest"))?;
            llama::LlamaModel::load_hf(file("config.json")?, weights, file("tokenizer.json")?)?
        };
        Ok(Model { manifest, family: Family::Llama(model) })
    }

    fn load_borrowed(manifest: Manifest, files: &HashMap<String, Vec<u8>>) -> Result<Model> {
        let file = |name: &str| files.get(name).map(|v| v.as_slice()).ok_or_else(|| invalid_model(format!("file `{name}` was not provided")));
        let family = match manifest.architecture.as_str() {
            a if bert::MODEL_TYPES.contains(&a) => {
                let weights = safetensors_weights(&manifest, file)?.ok_or_else(|| invalid_model("no .safetensors file in the manifest"))?;
                Family::Bert(bert::BertModel::load(file("config.json")?, weights, file("tokenizer.json")?)?)
            }
            "gpt2" => {
                let weights = safetensors_weights(&manifest, file)?.ok_or_else(|| invalid_model("no .safetensors file in the manifest"))?;
                Family::Gpt2(gpt2::Gpt2Model::load(file("config.json")?, weights, file("tokenizer.json")?)?)
            }
            "marian" => {
                if let Some(weights) = safetensors_weights(&manifest, file)? {
                    // A Hugging Face opus-mt folder.
                    Family::Marian(marian::MarianModel::load_hf(file("config.json")?, weights, file("tokenizer.json")?)?)
                } else {
                    let bin = manifest.files.iter().find(|f| f.ends_with(".bin")).ok_or_else(|| invalid_model("no Marian .bin or .safetensors file in the manifest"))?;
                    Family::Marian(marian::MarianModel::load(file(bin)?, bin, file("tokenizer.json")?)?)
                }
            }
            other => return Err(Error::UnsupportedArchitecture(format!("`{other}` (this build runs: {})", SUPPORTED.join(", ")))),
        };
        Ok(Model { manifest, family })
    }

    /// Reads `manifest.json` (or infers one) and the listed files from a folder (native; in
    /// the browser the worker fetches the files and calls [`Model::load`]).
    pub fn load_dir(dir: &std::path::Path) -> Result<Model> {
        Model::load_dir_variant(dir, None)
    }

    /// As [`Model::load_dir`], with the manifest's file set `variant` (e.g. `int8`) when given.
    /// `path` may also be one `.gguf` file, as the page accepts one.
    pub fn load_dir_variant(path: &std::path::Path, variant: Option<&str>) -> Result<Model> {
        let gguf = path.is_file() && path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gguf"));
        let dir = if gguf { path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new(".")) } else { path };
        let read = |name: &str| std::fs::read(dir.join(name)).map_err(|e| invalid_model(format!("cannot read {}: {e}", dir.join(name).display())));
        if !gguf && !dir.is_dir() {
            return Err(invalid_model(format!("{} is neither a model folder nor a .gguf file", path.display())));
        }
        let manifest = if gguf {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let id = path.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "model".into());
            Manifest::infer(&id, &[name], None)?
        } else if dir.join("manifest.json").is_file() {
            Manifest::from_json(&read("manifest.json")?)?
        } else {
            let names: Vec<String> = std::fs::read_dir(dir)
                .map_err(|e| invalid_model(format!("cannot list {}: {e}", dir.display())))?
                .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect();
            let config = if dir.join("config.json").is_file() { Some(read("config.json")?) } else { None };
            let id = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "model".into());
            Manifest::infer(&id, &names, config.as_deref())?
        };
        let manifest = match variant {
            Some(v) => manifest.with_variant(v)?,
            None => manifest,
        };
        let sizes = manifest.files.iter().map(|name| Ok((name.as_str(), plain_file_in(dir, name)?))).collect::<Result<Vec<_>>>()?;
        crate::limits::check_file_sizes(sizes)?;
        let mut files = HashMap::new();
        for name in &manifest.files {
            files.insert(name.clone(), read(name)?);
        }
        Model::load_owned(manifest, files)
    }

    /// One forward; `probe` says what to record besides the outputs, and holds it afterwards.
    /// `generate` says what a decoder-only model generates after the text (others ignore it).
    /// A forward whose attention or outputs came out NaN or infinite is an error naming the layer.
    pub fn forward(&self, text: &str, generate: &GenerateOptions, probe: &mut Probe) -> Result<ForwardOutput> {
        let output = match &self.family {
            Family::Bert(m) => m.forward(text, probe),
            Family::Marian(m) => m.forward(text, probe),
            Family::Llama(m) => decoder::generate(m, text, generate, probe),
            Family::Gpt2(m) => decoder::generate(m, text, generate, probe),
        }?;
        probe.check_finite()?;
        output.check_finite()?;
        Ok(output)
    }

    /// One forward with every attention map.
    pub fn attend(&self, text: &str) -> Result<Attended> {
        self.attend_generating(text, &GenerateOptions::default())
    }

    /// One forward with every attention map, generating after the text as `generate` says
    /// (decoder-only models).
    pub fn attend_generating(&self, text: &str, generate: &GenerateOptions) -> Result<Attended> {
        self.attend_with(text, generate, false)
    }

    /// One forward with every attention map, generating after the text as `generate` says
    /// (decoder-only models), and, when `value_norms`, the value-weighted norms of every map.
    pub fn attend_with(&self, text: &str, generate: &GenerateOptions, value_norms: bool) -> Result<Attended> {
        let mut probe = if value_norms { Probe::attention_maps_and_value_norms() } else { Probe::attention_maps() };
        let output = self.forward(text, generate, &mut probe)?;
        let (attentions, value_norms) = probe.into_maps_and_norms();
        Ok(Attended { output, attentions, value_norms })
    }

    /// Every head's scores and label on `text` (see [`crate::heads`]); causal models also get
    /// their induction score from a repeated random sequence of [`INDUCTION_TOKENS`] tokens.
    pub fn heads(&self, text: &str, generate: &GenerateOptions) -> Result<(Attended, Vec<HeadScores>)> {
        let a = self.attend_generating(text, generate)?;
        let special = self.info().special_tokens;
        let induction = match &self.family {
            Family::Llama(l) => Some(decoder::repeated_random_maps(l, INDUCTION_TOKENS)?),
            Family::Gpt2(g) => Some(decoder::repeated_random_maps(g, INDUCTION_TOKENS)?),
            _ => None,
        };
        let mut scores = Vec::new();
        for b in &a.attentions {
            let (_, keys) = a.output.tokens_of(b.kind);
            let ind = induction
                .as_ref()
                .and_then(|maps| maps.iter().find(|m| m.kind == b.kind && m.layer == b.layer))
                .map(|m| induction_scores(m, INDUCTION_TOKENS.min(m.query_len / 2)));
            scores.extend(score_block(b, &keys, &special, ind.as_deref()));
        }
        Ok((a, scores))
    }

    /// Tokenisation alone (what the forward does first), for benchmarks and token previews.
    pub fn tokenize(&self, text: &str) -> Result<crate::tokenize::Encoded> {
        match &self.family {
            Family::Bert(m) => m.tokenizer().encode(text),
            Family::Marian(m) => m.tokenizer().encode(text),
            Family::Llama(m) => m.tokenizer().encode(text),
            Family::Gpt2(m) => m.tokenizer().encode(text),
        }
    }

    pub fn info(&self) -> ModelInfo {
        let m = &self.manifest;
        let (mut kv_heads, mut generates) = (None, false);
        let (kinds, heads, head_dim, max_positions, special) = match &self.family {
            Family::Bert(b) => {
                let c = &b.config;
                (vec![(AttentionKind::EncoderSelf, c.num_hidden_layers)], c.num_attention_heads, c.hidden_size / c.num_attention_heads, c.max_tokens(), b.special_tokens())
            }
            Family::Marian(mm) => {
                let c = &mm.config;
                let mut kinds = vec![(AttentionKind::EncoderSelf, c.enc_depth), (AttentionKind::Cross, c.dec_depth)];
                if mm.has_decoder_self_attention() {
                    kinds.insert(1, (AttentionKind::DecoderSelf, c.dec_depth));
                }
                (kinds, c.heads, c.dim_emb / c.heads, mm.tokenizer().max_tokens() + 1, mm.special_tokens())
            }
            Family::Llama(l) => {
                let c = &l.config;
                kv_heads = Some(c.num_key_value_heads);
                generates = true;
                let special: Vec<String> = c.eos_token_ids.iter().chain(&c.bos_token_id).filter_map(|&id| l.tokenizer().id_to_token_opt(id)).collect();
                (vec![(AttentionKind::DecoderSelf, c.num_hidden_layers)], c.num_attention_heads, c.head_dim(), c.max_positions(), special)
            }
            Family::Gpt2(g) => {
                let c = &g.config;
                generates = true;
                let special: Vec<String> = c.eos_token_ids.iter().chain(&c.bos_token_id).filter_map(|&id| g.tokenizer().id_to_token_opt(id)).collect();
                (vec![(AttentionKind::DecoderSelf, c.n_layer)], c.n_head, c.head_dim(), c.max_positions(), special)
            }
        };
        ModelInfo {
            id: m.id.clone(),
            name: if m.name.is_empty() { m.id.clone() } else { m.name.clone() },
            architecture: m.architecture.clone(),
            kinds: kinds.iter().map(|k| k.0).collect(),
            layers: kinds.iter().copied().collect(),
            heads: kinds.iter().map(|k| (k.0, heads)).collect(),
            kv_heads: kinds.iter().map(|k| (k.0, kv_heads.unwrap_or(heads))).collect(),
            generates,
            head_dim,
            max_positions,
            special_tokens: special,
            credit: m.credit.clone(),
            license: m.license.clone(),
            example: m.example.clone(),
        }
    }

    /// The position vectors this model adds to its token embeddings, for positions
    /// `0..count` (`count` is clamped to 1..=`max_positions`): Marian's sinusoid (the one its
    /// forward adds, sin half then cos half) or the BERT family's learned `position_embeddings`
    /// rows (RoBERTa's from `padding_idx + 1`).
    pub fn positions(&self, count: usize) -> PositionTable {
        let n = count.clamp(1, self.info().max_positions.max(1));
        match &self.family {
            Family::Bert(b) => {
                let dims = b.config.hidden_size;
                let data = b.position_table(n);
                PositionTable { kind: PositionKind::Learned, positions: data.len() / dims.max(1), dims, data, wave: None }
            }
            Family::Marian(m) => {
                let dims = m.config.dim_emb;
                PositionTable {
                    kind: PositionKind::Sinusoidal,
                    positions: n,
                    dims,
                    data: marian::position_table(n, dims, m.config.flavor),
                    wave: Some(m.config.flavor.sinusoid(dims)),
                }
            }
            Family::Gpt2(g) => {
                let dims = g.config.n_embd;
                let data = g.position_table(n);
                PositionTable { kind: PositionKind::Learned, positions: data.len() / dims.max(1), dims, data, wave: None }
            }
            Family::Llama(l) => PositionTable { kind: PositionKind::Rotary, positions: n, dims: l.config.head_dim(), data: l.rotary_table(n), wave: Some(l.config.rotary_wave()) },
        }
    }

    /// The intermediates of one head (the step view), or an error naming what exists.
    pub fn head_internals(&self, text: &str, request: HeadRequest) -> Result<HeadInternals> {
        self.head_internals_generating(text, &GenerateOptions::default(), request)
    }

    /// As [`Model::head_internals`], over the text and what a decoder-only model generates
    /// after it.
    pub fn head_internals_generating(&self, text: &str, generate: &GenerateOptions, request: HeadRequest) -> Result<HeadInternals> {
        let info = self.info();
        let layers = info.layers.get(&request.kind).copied().unwrap_or(0);
        let heads = info.heads.get(&request.kind).copied().unwrap_or(0);
        let bad = || {
            let kinds: Vec<&str> = info.kinds.iter().map(|k| k.as_str()).collect();
            Error::InvalidInput(format!(
                "no {} attention at layer {} head {} (this model has kinds [{}], {layers} layers, {heads} heads)",
                request.kind.as_str(),
                request.layer,
                request.head,
                kinds.join(", ")
            ))
        };
        if request.layer >= layers || request.head >= heads {
            return Err(bad());
        }
        let mut probe = Probe::head(request);
        let out = self.forward(text, generate, &mut probe)?;
        let (trace, block) = probe.into_trace().ok_or_else(bad)?;
        let (query_tokens, key_tokens) = out.tokens_of(request.kind);
        Ok(HeadInternals { request, query_tokens, key_tokens, trace, block })
    }
}

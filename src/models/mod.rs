//! Model families (one file each) and the choice between them from a manifest or from the
//! files themselves. Shared building blocks (`Linear`, `LayerNorm`) live here.

pub mod bert;
pub mod marian;

use crate::attention::{Attended, AttentionKind, ForwardOutput, HeadInternals, HeadRequest, OutputTrace, Probe, Site};
use crate::error::{invalid_model, Error, Result};
use crate::limits::{budget, human_bytes, MEMORY_BUDGET_BYTES};
use crate::tensor::{layer_norm, linear, Mat};
use crate::weights::TensorStore;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// `y = x · Wᵀ + b` with a PyTorch-layout weight `# [out, in]`.
pub struct Linear {
    pub weight: Mat,
    pub bias: Option<Vec<f32>>,
}

impl Linear {
    /// `<prefix>.weight` `[out, in]` and `<prefix>.bias` `[out]` (Hugging Face naming).
    pub fn load(w: &mut TensorStore, prefix: &str, out: usize, inp: usize) -> Result<Linear> {
        Linear::load_named(w, &format!("{prefix}.weight"), &format!("{prefix}.bias"), out, inp)
    }

    pub fn load_named(w: &mut TensorStore, weight: &str, bias: &str, out: usize, inp: usize) -> Result<Linear> {
        Ok(Linear { weight: w.matrix(weight, out, inp)?, bias: Some(w.vector(bias, out)?) })
    }

    pub fn forward(&self, x: &Mat) -> Mat {
        linear(x, &self.weight, self.bias.as_deref())
    }
}

pub struct LayerNorm {
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
    pub eps: f32,
}

impl LayerNorm {
    /// `<prefix>.weight` and `<prefix>.bias` (Hugging Face naming).
    pub fn load(w: &mut TensorStore, prefix: &str, d: usize, eps: f32) -> Result<LayerNorm> {
        LayerNorm::load_named(w, &format!("{prefix}.weight"), &format!("{prefix}.bias"), d, eps)
    }

    pub fn load_named(w: &mut TensorStore, weight: &str, bias: &str, d: usize, eps: f32) -> Result<LayerNorm> {
        Ok(LayerNorm { weight: w.vector(weight, d)?, bias: w.vector(bias, d)?, eps })
    }

    pub fn apply(&self, x: &mut Mat) {
        layer_norm(x, &self.weight, &self.bias, self.eps);
    }
}

/// The end of a post-norm attention block, LN(x + context · Wᴼᵀ + bᴼ)          # [Tq, d]
/// (BERT's `attention.output`, Marian's `Wo` + `Wo_ln`). When `site`'s head is traced, the
/// probe keeps every stage for the step view.
pub fn post_norm_output(context: &Mat, x: &Mat, wo: &Linear, ln: &LayerNorm, site: Site, probe: &mut Probe) -> Mat {
    let traced = probe.traced_head(site).is_some();
    let mut h = wo.forward(context); // [Tq, d]
    let projected = traced.then(|| h.clone());
    h.add_assign(x);
    let residual = traced.then(|| h.clone());
    ln.apply(&mut h);
    if let (Some(projected), Some(residual)) = (projected, residual) {
        probe.record_block(site, || OutputTrace {
            d_model: x.cols(),
            query_len: x.rows(),
            concat: context.as_slice().to_vec(),
            projected: projected.into_vec(),
            input: x.as_slice().to_vec(),
            residual: residual.into_vec(),
            normed: h.as_slice().to_vec(),
        });
    }
    h
}

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
}

impl Manifest {
    pub fn from_json(bytes: &[u8]) -> Result<Manifest> {
        serde_json::from_slice(bytes).map_err(|e| invalid_model(format!("manifest.json is not valid ({e})")))
    }

    /// For a folder without a manifest (a Hugging Face checkout or a Marian export), decide from
    /// the files themselves.
    pub fn infer(id: &str, names: &[String], config_json: Option<&[u8]>) -> Result<Manifest> {
        let has = |n: &str| names.iter().any(|x| x == n);
        let architecture = if let Some(cfg) = config_json {
            let v: serde_json::Value = serde_json::from_slice(cfg).map_err(|e| invalid_model(format!("config.json is not JSON ({e})")))?;
            let model_type = v.get("model_type").and_then(|t| t.as_str()).unwrap_or("");
            match model_type {
                "bert" => "bert".to_string(),
                other => return Err(Error::UnsupportedArchitecture(format!("model_type `{other}` (supported: {})", SUPPORTED.join(", ")))),
            }
        } else if names.iter().any(|n| n.ends_with(".bin") && n.starts_with("model")) {
            "marian".to_string()
        } else {
            return Err(invalid_model("no manifest.json, config.json or Marian model .bin found"));
        };
        let files = match architecture.as_str() {
            "bert" if has("model.safetensors") && has("tokenizer.json") => vec!["config.json".into(), "model.safetensors".into(), "tokenizer.json".into()],
            "bert" => return Err(invalid_model("a BERT folder needs config.json, model.safetensors and tokenizer.json")),
            _ => {
                let bin = names.iter().find(|n| n.ends_with(".bin") && n.starts_with("model")).cloned().unwrap_or_default();
                if !has("tokenizer.json") {
                    return Err(invalid_model("a Marian folder needs tokenizer.json beside the model .bin"));
                }
                vec![bin, "tokenizer.json".into()]
            }
        };
        Ok(Manifest { id: id.to_string(), name: id.to_string(), architecture, files, license: String::new(), credit: String::new(), example: String::new() })
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

/// Architectures this build runs.
pub const SUPPORTED: &[&str] = &["bert", "marian"];

pub enum Family {
    Bert(bert::BertModel),
    Marian(marian::MarianModel),
}

pub struct Model {
    pub manifest: Manifest,
    pub family: Family,
}

/// How a model tells positions apart: a fixed sinusoid (Marian) or a learned table (BERT).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PositionKind {
    Sinusoidal,
    Learned,
}

/// The vectors a model adds to the token embeddings for positions `0..positions`.
pub struct PositionTable {
    pub kind: PositionKind,
    pub positions: usize,
    pub dims: usize,
    /// `# [positions, dims]` row-major.
    pub data: Vec<f32>,
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
    pub head_dim: usize,
    pub max_positions: usize,
    pub special_tokens: Vec<String>,
    pub credit: String,
    pub license: String,
    pub example: String,
}

impl Model {
    /// Builds the model from the bytes of the files its manifest lists.
    pub fn load(manifest: Manifest, files: &HashMap<String, Vec<u8>>) -> Result<Model> {
        let file = |name: &str| files.get(name).map(|v| v.as_slice()).ok_or_else(|| invalid_model(format!("file `{name}` was not provided")));
        let family = match manifest.architecture.as_str() {
            "bert" => {
                let weights_name = manifest.files.iter().find(|f| f.ends_with(".safetensors")).ok_or_else(|| invalid_model("no .safetensors file in the manifest"))?;
                let mut weights = crate::weights::safetensors_file::read(file(weights_name)?)?;
                weights.set_file(weights_name);
                Family::Bert(bert::BertModel::load(file("config.json")?, weights, file("tokenizer.json")?)?)
            }
            "marian" => {
                let bin = manifest.files.iter().find(|f| f.ends_with(".bin")).ok_or_else(|| invalid_model("no Marian .bin file in the manifest"))?;
                Family::Marian(marian::MarianModel::load(file(bin)?, bin, file("tokenizer.json")?)?)
            }
            other => return Err(Error::UnsupportedArchitecture(format!("`{other}` (this build runs: {})", SUPPORTED.join(", ")))),
        };
        Ok(Model { manifest, family })
    }

    /// Reads `manifest.json` (or infers one) and the listed files from a folder (native; in
    /// the browser the worker fetches the files and calls [`Model::load`]).
    pub fn load_dir(dir: &std::path::Path) -> Result<Model> {
        let read = |name: &str| std::fs::read(dir.join(name)).map_err(|e| invalid_model(format!("cannot read {}: {e}", dir.join(name).display())));
        if !dir.is_dir() {
            return Err(invalid_model(format!("{} is not a folder", dir.display())));
        }
        let manifest = if dir.join("manifest.json").is_file() {
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
        let sizes = manifest.files.iter().map(|name| Ok((name.as_str(), plain_file_in(dir, name)?))).collect::<Result<Vec<_>>>()?;
        crate::limits::check_file_sizes(sizes)?;
        let mut files = HashMap::new();
        for name in &manifest.files {
            files.insert(name.clone(), read(name)?);
        }
        Model::load(manifest, &files)
    }

    /// One forward; `probe` says what to record besides the outputs, and holds it afterwards.
    pub fn forward(&self, text: &str, probe: &mut Probe) -> Result<ForwardOutput> {
        match &self.family {
            Family::Bert(m) => m.forward(text, probe),
            Family::Marian(m) => m.forward(text, probe),
        }
    }

    /// One forward with every attention map.
    pub fn attend(&self, text: &str) -> Result<Attended> {
        let mut probe = Probe::attention_maps();
        let output = self.forward(text, &mut probe)?;
        Ok(Attended { output, attentions: probe.into_attentions() })
    }

    /// Tokenisation alone (what the forward does first), for benchmarks and token previews.
    pub fn tokenize(&self, text: &str) -> Result<crate::tokenize::Encoded> {
        match &self.family {
            Family::Bert(m) => m.tokenizer().encode(text),
            Family::Marian(m) => m.tokenizer().encode(text),
        }
    }

    pub fn info(&self) -> ModelInfo {
        let m = &self.manifest;
        let (kinds, heads, head_dim, max_positions, special) = match &self.family {
            Family::Bert(b) => {
                let c = &b.config;
                (
                    vec![(AttentionKind::EncoderSelf, c.num_hidden_layers)],
                    c.num_attention_heads,
                    c.hidden_size / c.num_attention_heads,
                    c.max_position_embeddings,
                    vec!["[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]"],
                )
            }
            Family::Marian(mm) => {
                let c = &mm.config;
                (
                    vec![(AttentionKind::EncoderSelf, c.enc_depth), (AttentionKind::Cross, c.dec_depth)],
                    c.heads,
                    c.dim_emb / c.heads,
                    mm.tokenizer().max_tokens() + 1,
                    vec!["</s>", "<unk>"],
                )
            }
        };
        ModelInfo {
            id: m.id.clone(),
            name: if m.name.is_empty() { m.id.clone() } else { m.name.clone() },
            architecture: m.architecture.clone(),
            kinds: kinds.iter().map(|k| k.0).collect(),
            layers: kinds.iter().copied().collect(),
            heads: kinds.iter().map(|k| (k.0, heads)).collect(),
            head_dim,
            max_positions,
            special_tokens: special.into_iter().map(String::from).collect(),
            credit: m.credit.clone(),
            license: m.license.clone(),
            example: m.example.clone(),
        }
    }

    /// The position vectors this model adds to its token embeddings, for positions
    /// `0..count` (`count` is clamped to 1..=`max_positions`): Marian's sinusoid (the one its
    /// forward adds, sin half then cos half) or BERT's learned `position_embeddings` rows.
    pub fn positions(&self, count: usize) -> PositionTable {
        let n = count.clamp(1, self.info().max_positions.max(1));
        match &self.family {
            Family::Bert(b) => {
                let dims = b.config.hidden_size;
                let data = b.position_table(n);
                PositionTable { kind: PositionKind::Learned, positions: data.len() / dims.max(1), dims, data }
            }
            Family::Marian(m) => {
                let dims = m.config.dim_emb;
                PositionTable { kind: PositionKind::Sinusoidal, positions: n, dims, data: marian::position_table(n, dims) }
            }
        }
    }

    /// The intermediates of one head (the step view), or an error naming what exists.
    pub fn head_internals(&self, text: &str, request: HeadRequest) -> Result<HeadInternals> {
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
        let out = self.forward(text, &mut probe)?;
        let (trace, block) = probe.into_trace().ok_or_else(bad)?;
        let (queries, keys) = out.tokens_of(request.kind);
        Ok(HeadInternals { request, query_tokens: queries.to_vec(), key_tokens: keys.to_vec(), trace, block })
    }
}

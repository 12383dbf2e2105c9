//! The manifest (`models/<dir>/manifest.json`, or one inferred from a folder's files) and the
//! one list of architectures this build runs, [`ARCHITECTURES`]: loading, inspection and the
//! error messages all read it. Each family's file defines its [`Architecture`] (see
//! [`super::family`]); adding a family is its file and one line in that list.

use super::family::{Architecture, Sizes};
use super::{bert, gpt2, llama, marian};
use crate::error::{invalid_model, Error, Result};
use crate::weights::gguf::Gguf;
use serde::{Deserialize, Serialize};

/// Every architecture this build runs: the one list.
pub const ARCHITECTURES: &[&Architecture] =
    &[&bert::ARCHITECTURE, &llama::ARCHITECTURE, &marian::ARCHITECTURE, &gpt2::ARCHITECTURE];

/// The architecture that runs `model_type` (a manifest's `architecture`).
pub fn architecture(model_type: &str) -> Option<&'static Architecture> {
    ARCHITECTURES.iter().copied().find(|a| a.model_types.contains(&model_type))
}

/// Every `architecture` (config.json `model_type`) this build runs, in [`ARCHITECTURES`] order.
pub fn supported() -> Vec<&'static str> {
    ARCHITECTURES.iter().flat_map(|a| a.model_types.iter().copied()).collect()
}

/// How the architecture that reads GGUF files sizes one (for inspection).
pub fn gguf_sizes() -> Option<fn(&Gguf) -> Result<Sizes>> {
    ARCHITECTURES.iter().find_map(|a| a.gguf_sizes)
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
    /// Other file sets of the same model, by name: `int8` lists MiniLM's int8 weights in place of
    /// the f32 ones (`files`, the exact weights).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub variants: std::collections::BTreeMap<String, Vec<String>>,
}

impl Manifest {
    pub fn from_json(bytes: &[u8]) -> Result<Manifest> {
        serde_json::from_slice(bytes)
            .map_err(|e| invalid_model(format!("manifest.json is not valid ({e})")))
    }

    /// The manifest loading the file set `variant` instead of `files`.
    pub fn with_variant(mut self, variant: &str) -> Result<Manifest> {
        let files = self.variants.get(variant).ok_or_else(|| {
            let known: Vec<&str> = self.variants.keys().map(String::as_str).collect();
            invalid_model(format!(
                "model `{}` has no `{variant}` weights (it has: f32{})",
                self.id,
                known.iter().map(|k| format!(", {k}")).collect::<String>()
            ))
        })?;
        self.files = files.clone();
        Ok(self)
    }

    /// For a folder without a manifest (a Hugging Face checkout, one .gguf file or a Marian
    /// export), decide from the files themselves.
    pub fn infer(id: &str, names: &[String], config_json: Option<&[u8]>) -> Result<Manifest> {
        let has = |n: &str| names.iter().any(|x| x == n);
        let manifest = |architecture: &str, files: Vec<String>| Manifest {
            id: id.to_string(),
            name: id.to_string(),
            architecture: architecture.to_string(),
            files,
            license: String::new(),
            credit: String::new(),
            example: String::new(),
            variants: Default::default(),
        };
        let Some(cfg) = config_json else {
            // A family's own format: the first family that recognises the files.
            return match ARCHITECTURES
                .iter()
                .find_map(|a| Some((a.model_types[0], (a.own_files)(names)?)))
            {
                Some((architecture, files)) => Ok(manifest(architecture, files?)),
                None => {
                    Err(invalid_model("no manifest.json, config.json or Marian model .bin found"))
                }
            };
        };
        let v: serde_json::Value = serde_json::from_slice(cfg)
            .map_err(|e| invalid_model(format!("config.json is not JSON ({e})")))?;
        let model_type = v.get("model_type").and_then(|t| t.as_str()).unwrap_or("");
        let Some(arch) = architecture(model_type) else {
            let supported = supported().join(", ");
            return Err(Error::UnsupportedArchitecture(format!("config.json has model_type `{model_type}` (supported model_types: {supported}; or one Llama .gguf file)")));
        };
        // The weights: model.safetensors or a whole sharded checkpoint; else what is there instead.
        let family = (arch.display_name)(model_type);
        let also = arch.hf_alternative;
        let lacking: Vec<&str> =
            ["config.json", "tokenizer.json"].into_iter().filter(|n| !has(n)).collect();
        let problem = match crate::weights::safetensors_file::weight_files(names)? {
            None => {
                let pytorch = names.iter().find(|n| n.starts_with("pytorch_model") && n.ends_with(".bin"));
                match pytorch {
                    Some(p) => format!("this {family} folder holds its weights as {p} (a PyTorch pickle), which attnviz does not read: it reads model.safetensors (or model-00001-of-0000N.safetensors shards); Hugging Face's `save_pretrained(dir, safe_serialization=True)` or the Hub's safetensors files give them"),
                    None => format!("this {family} folder has no model.safetensors (nor its shards): it needs config.json, model.safetensors and tokenizer.json{also}"),
                }
            }
            Some(_) if !lacking.is_empty() => format!("this {family} folder has no {}: it needs config.json, model.safetensors and tokenizer.json{also}", lacking.join(" and ")),
            Some(weights) => {
                let files = ["config.json".to_string()].into_iter().chain(weights).chain(["tokenizer.json".to_string()]).collect();
                return Ok(manifest(model_type, files));
            }
        };
        Err(invalid_model(if arch.hf_hint.is_empty() {
            problem
        } else {
            format!("{problem}. {}", arch.hf_hint)
        }))
    }
}

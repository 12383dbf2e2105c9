//! Loading a model from the bytes of the files its manifest lists (the page) or from a folder
//! (native), through its family's loader.

use super::family::ModelFiles;
use super::manifest::{architecture, supported, Manifest};
use super::Model;
use crate::error::{invalid_model, Error, Result};
use std::borrow::Cow;
use std::collections::HashMap;

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
    let real = path
        .canonicalize()
        .map_err(|e| invalid_model(format!("cannot read {}: {e}", path.display())))?;
    let root = dir
        .canonicalize()
        .map_err(|e| invalid_model(format!("cannot read {}: {e}", dir.display())))?;
    if !real.starts_with(&root) {
        return Err(bad("lies outside the model folder"));
    }
    let meta = std::fs::metadata(&real)
        .map_err(|e| invalid_model(format!("cannot read {}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(bad("is not a regular file"));
    }
    Ok(meta.len())
}

impl Model {
    /// Builds the model from the bytes of the files its manifest lists.
    pub fn load(manifest: Manifest, files: &HashMap<String, Vec<u8>>) -> Result<Model> {
        let files = files.iter().map(|(n, b)| (n.clone(), Cow::Borrowed(b.as_slice()))).collect();
        Model::from_files(manifest, files)
    }

    /// As [`Model::load`], taking the bytes: a GGUF model's weights stay in its file's bytes
    /// instead of a copy.
    pub fn load_owned(manifest: Manifest, files: HashMap<String, Vec<u8>>) -> Result<Model> {
        let files = files.into_iter().map(|(n, b)| (n, Cow::Owned(b))).collect();
        Model::from_files(manifest, files)
    }

    fn from_files(manifest: Manifest, files: HashMap<String, Cow<[u8]>>) -> Result<Model> {
        let Some(arch) = architecture(&manifest.architecture) else {
            return Err(Error::UnsupportedArchitecture(format!(
                "`{}` (this build runs: {})",
                manifest.architecture,
                supported().join(", ")
            )));
        };
        let family = (arch.load)(&mut ModelFiles::new(&manifest.files, files))?;
        Ok(Model::new(manifest, family))
    }

    /// Reads `manifest.json` (or infers one) and the listed files from a folder (native; in
    /// the browser the worker fetches the files and calls [`Model::load`]).
    pub fn load_dir(dir: &std::path::Path) -> Result<Model> {
        Model::load_dir_variant(dir, None)
    }

    /// As [`Model::load_dir`], with the manifest's file set `variant` (e.g. `int8`) when given.
    /// `path` may also be one `.gguf` file, as the page accepts one.
    pub fn load_dir_variant(path: &std::path::Path, variant: Option<&str>) -> Result<Model> {
        let gguf =
            path.is_file() && path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gguf"));
        let dir = if gguf {
            path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."))
        } else {
            path
        };
        let read = |name: &str| {
            std::fs::read(dir.join(name)).map_err(|e| {
                invalid_model(format!("cannot read {}: {e}", dir.join(name).display()))
            })
        };
        if !gguf && !dir.is_dir() {
            return Err(invalid_model(format!(
                "{} is neither a model folder nor a .gguf file",
                path.display()
            )));
        }
        let manifest = if gguf {
            let name =
                path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let id = path
                .file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "model".into());
            Manifest::infer(&id, &[name], None)?
        } else if dir.join("manifest.json").is_file() {
            Manifest::from_json(&read("manifest.json")?)?
        } else {
            let names: Vec<String> = std::fs::read_dir(dir)
                .map_err(|e| invalid_model(format!("cannot list {}: {e}", dir.display())))?
                .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect();
            let config =
                if dir.join("config.json").is_file() { Some(read("config.json")?) } else { None };
            let id = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "model".into());
            Manifest::infer(&id, &names, config.as_deref())?
        };
        let manifest = match variant {
            Some(v) => manifest.with_variant(v)?,
            None => manifest,
        };
        let sizes = manifest
            .files
            .iter()
            .map(|name| Ok((name.as_str(), plain_file_in(dir, name)?)))
            .collect::<Result<Vec<_>>>()?;
        crate::limits::check_file_sizes(sizes)?;
        let mut files = HashMap::new();
        for name in &manifest.files {
            files.insert(name.clone(), read(name)?);
        }
        Model::load_owned(manifest, files)
    }
}

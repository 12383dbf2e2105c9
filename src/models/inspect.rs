//! What a user's model files are, from their headers alone (config.json, the safetensors JSON
//! header, the GGUF metadata and tensor table): no weight is decoded, so the page can say what
//! it found, and refuse what will not load or not fit, before it reads gigabytes.

use super::manifest::{architecture, gguf_sizes, Manifest};
use crate::error::{invalid_model, Error, Result};
use crate::limits::{budget, check_file_sizes, human_bytes, MEMORY_BUDGET_BYTES};
use serde::Serialize;

/// Largest safetensors JSON header read (the safetensors crate's own limit).
pub const MAX_SAFETENSORS_HEADER: u64 = 100_000_000;

/// Bytes of a GGUF file the page hands to [`inspect`]: its metadata and tensor table (SmolLM2's
/// take 2.7 MB, vocabularies of 256k tokens about 12 MB).
pub const GGUF_HEAD_BYTES: u64 = 32 << 20;

/// One of the user's files: its name, its size, and its first bytes (all of config.json; the
/// whole safetensors header; the first [`GGUF_HEAD_BYTES`] of a GGUF; nothing of the others).
pub struct FileHead<'a> {
    pub name: &'a str,
    pub size: u64,
    pub head: &'a [u8],
}

/// What [`inspect`] found, for the page to show before loading.
#[derive(Clone, Debug, Serialize)]
pub struct Inspection {
    /// bert | roberta | xlm-roberta | distilbert | llama | marian | gpt2
    pub architecture: String,
    /// e.g. `safetensors F32`, `GGUF Q4_1 + Q8_0`
    pub format: String,
    pub layers: usize,
    /// Marian: the decoder's layers (`layers` are the encoder's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decoder_layers: Option<usize>,
    pub heads: usize,
    pub kv_heads: usize,
    pub hidden_size: usize,
    pub max_positions: usize,
    pub parameters: u64,
    /// The files that will be read, together.
    pub file_bytes: u64,
    /// Estimated wasm memory: the weights as the model keeps them (f32, or the GGUF file) and
    /// the tokenizer, plus the larger of the files held while loading and every layer's
    /// attention maps for its longest input.
    pub memory_bytes: u64,
    pub memory_budget: u64,
    /// The manifest the load will use (its `files` are the ones to read).
    pub manifest: Manifest,
}

/// Reads what `files` describe; an error says what is wrong or unsupported, and which limit.
pub fn inspect(id: &str, files: &[FileHead]) -> Result<Inspection> {
    let names: Vec<String> = files.iter().map(|f| f.name.to_string()).collect();
    let file = |name: &str| files.iter().find(|f| f.name == name);
    let config = file("config.json").map(|f| f.head);
    let mut manifest = Manifest::infer(id, &names, config)?;
    let gguf_file = manifest.files.iter().any(|f| f.ends_with(".gguf"));
    if config.is_none() && !gguf_file {
        let name = architecture(&manifest.architecture)
            .map_or("these", |a| (a.display_name)(&manifest.architecture));
        return Err(Error::UnsupportedArchitecture(format!("{name} folders without config.json can be read by the command line, not yet opened in the page")));
    }
    let used: Vec<&FileHead> = manifest.files.iter().filter_map(|n| file(n)).collect();
    check_file_sizes(used.iter().map(|f| (f.name, f.size)))?;
    let file_bytes: u64 = used.iter().map(|f| f.size).sum();
    let mut cut_short = Ok(());
    // `working`: what the load holds besides the weights and then frees (wasm memory never
    // shrinks, so it counts): the safetensors file.
    let (c, format, parameters, weight_bytes, working) = if let Some(g) =
        used.iter().find(|f| f.name.ends_with(".gguf"))
    {
        // A header longer than the bytes read is an error of its own, told apart from a fault
        // in what was read (which the CLI, reading the whole file, names in the same words).
        let gguf = crate::weights::gguf::read_header(g.head.to_vec(), g.size, g.name)?;
        let sizes =
            gguf_sizes().ok_or_else(|| Error::UnsupportedArchitecture("GGUF files".into()))?;
        let c = sizes(&gguf)?;
        let mut formats: Vec<String> =
            gguf.tensors.values().map(|t| format!("{:?}", t.format)).collect();
        formats.sort();
        formats.dedup();
        let parameters = gguf
            .tensors
            .values()
            .map(|t| t.dims.iter().fold(1u64, |a, &d| a.saturating_mul(d as u64)))
            .fold(0u64, u64::saturating_add);
        // The weights stay in the file's bytes. The copy of its start made for this inspection
        // is freed before the file is copied in, but the file does not fit in the hole it
        // leaves (SmolLM2: measured 193 MiB after 256 tokens, this says 193).
        (
            c,
            format!("GGUF {}", formats.join(" + ")),
            parameters,
            g.size.saturating_add(g.head.len() as u64),
            0,
        )
    } else {
        let config = config.ok_or_else(|| invalid_model("config.json is missing"))?;
        // One file, or the shards of one checkpoint: all are in memory while the model loads.
        let shards: Vec<&FileHead> =
            used.iter().copied().filter(|f| f.name.ends_with(".safetensors")).collect();
        if shards.is_empty() {
            return Err(invalid_model("no .safetensors file"));
        }
        let arch = architecture(&manifest.architecture).ok_or_else(|| {
            Error::UnsupportedArchitecture(format!("`{}`", manifest.architecture))
        })?;
        let c = (arch.sizes)(config)?;
        let (mut parameters, mut dtypes, mut working) = (0u64, Vec::<String>::new(), 0u64);
        for st in &shards {
            let h = safetensors_header(st)?;
            if cut_short.is_ok() {
                cut_short = h.check_length(st);
            }
            parameters = parameters.saturating_add(h.parameters);
            dtypes.extend(h.dtypes.into_iter().filter(|d| !dtypes.contains(d)).collect::<Vec<_>>());
            working = working.saturating_add(st.size);
        }
        let sharded =
            if shards.len() > 1 { format!(" in {} shards", shards.len()) } else { String::new() };
        // Every float weight becomes f32 at load; the parsed tokenizer takes about 10× its
        // JSON (measured on MiniLM's).
        let tokenizer = file("tokenizer.json").map_or(0, |f| f.size.saturating_mul(10));
        (
            c,
            format!("safetensors {}{sharded}", dtypes.join(" + ")),
            parameters,
            parameters.saturating_mul(4).saturating_add(tokenizer),
            working,
        )
    };
    let t = c.max_positions as u64;
    // The configs have been checked against the budget already; saturate all the same.
    let product = |n: &[u64]| n.iter().try_fold(4u64, |a, &n| a.checked_mul(n)).unwrap_or(u64::MAX);
    let layer_maps = product(&[c.heads as u64, t, t]);
    let all_maps =
        layer_maps.saturating_mul(c.layers as u64).saturating_add(c.decoder.map_or(0, |d| d.1));
    // A long text's forward in the page keeps the maps of the layer drawn (two while the next is
    // asked for) and what every map is made of: each layer's queries and keys, and K and V in a
    // decoder's cache (queries are `hidden` wide, keys and values `hidden·kv_heads/heads`).
    let layers = c.layers as u64 + c.decoder.map_or(0, |d| d.0 as u64);
    let kv_width = (c.hidden * c.kv_heads / c.heads.max(1)) as u64;
    let per_position = product(&[layers, c.hidden as u64 + 3 * kv_width]);
    let on_demand = layer_maps.saturating_mul(2).saturating_add(per_position.saturating_mul(t));
    let maps = all_maps.min(on_demand);
    // The files are freed before the first forward: its maps can reuse their memory.
    let memory_bytes = weight_bytes.saturating_add(working.max(maps));
    if memory_bytes > MEMORY_BUDGET_BYTES {
        return Err(invalid_model(format!(
            "this model needs about {} of memory in the page ({} of weights and tokenizer, then {} of files while loading or {} of attention maps for {t} tokens), more than {}",
            human_bytes(memory_bytes),
            human_bytes(weight_bytes),
            human_bytes(working),
            human_bytes(maps),
            budget()
        )));
    }
    // After the budget: a header that claims more than fits says so, not merely that it is cut.
    cut_short?;
    manifest.name = id.to_string();
    Ok(Inspection {
        architecture: manifest.architecture.clone(),
        format,
        layers: c.layers,
        decoder_layers: c.decoder.map(|d| d.0),
        heads: c.heads,
        kv_heads: c.kv_heads,
        hidden_size: c.hidden,
        max_positions: c.max_positions,
        parameters,
        file_bytes,
        memory_bytes,
        memory_budget: MEMORY_BUDGET_BYTES,
        manifest,
    })
}

struct SafetensorsHeader {
    parameters: u64,
    dtypes: Vec<String>,
    /// Where the last tensor's bytes end, from the start of the data.
    data_end: u64,
    header_len: u64,
}

impl SafetensorsHeader {
    fn check_length(&self, f: &FileHead) -> Result<()> {
        let have = f.size.saturating_sub(8 + self.header_len);
        if self.data_end > have {
            return Err(invalid_model(format!(
                "{} is cut short (an incomplete download?): its header describes {} of tensors, the file holds {}",
                f.name,
                human_bytes(self.data_end),
                human_bytes(have)
            )));
        }
        Ok(())
    }
}

/// The safetensors layout: u64 header length, a JSON object name → {dtype, shape,
/// data_offsets}, then the data.
fn safetensors_header(f: &FileHead) -> Result<SafetensorsHeader> {
    let bad = |why: String| invalid_model(format!("{} is not a safetensors file ({why})", f.name));
    let len_bytes: [u8; 8] = f
        .head
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| bad("shorter than 8 bytes".into()))?;
    let header_len = u64::from_le_bytes(len_bytes);
    if header_len > MAX_SAFETENSORS_HEADER || header_len.saturating_add(8) > f.size {
        return Err(bad(format!("its header length {header_len} is past the end of the file or over {MAX_SAFETENSORS_HEADER} bytes")));
    }
    let json = f
        .head
        .get(8..8 + header_len as usize)
        .ok_or_else(|| bad("the header was not read whole".into()))?;
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(json)
        .map_err(|e| bad(format!("its header is not a JSON object: {e}")))?;
    let (mut parameters, mut data_end, mut dtypes) = (0u64, 0u64, Vec::new());
    for (name, t) in map.iter().filter(|(k, _)| *k != "__metadata__") {
        let dtype = t
            .get("dtype")
            .and_then(|d| d.as_str())
            .ok_or_else(|| bad(format!("tensor `{name}` has no dtype")))?;
        let shape = t
            .get("shape")
            .and_then(|s| s.as_array())
            .ok_or_else(|| bad(format!("tensor `{name}` has no shape")))?;
        let numel = shape
            .iter()
            .try_fold(1u64, |a, d| d.as_u64().and_then(|d| a.checked_mul(d)))
            .ok_or_else(|| bad(format!("tensor `{name}` has a bad shape")))?;
        let end = t
            .get("data_offsets")
            .and_then(|o| o.get(1))
            .and_then(|e| e.as_u64())
            .ok_or_else(|| bad(format!("tensor `{name}` has no data_offsets")))?;
        data_end = data_end.max(end);
        // Integer tensors (BERT's position_ids) are buffers, not weights: the loader skips them;
        // so are GPT-2's causal-mask buffers (`h.N.attn.bias`, `attn.masked_bias`), float or not.
        let buffer = name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
        if matches!(dtype, "F32" | "F16" | "BF16") && !buffer {
            parameters = parameters.saturating_add(numel);
            if !dtypes.iter().any(|d| d == dtype) {
                dtypes.push(dtype.to_string());
            }
        }
    }
    Ok(SafetensorsHeader { parameters, dtypes, data_end, header_len })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(header: &str, data: usize) -> Vec<u8> {
        let mut b = (header.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(header.as_bytes());
        b.resize(b.len() + data, 0);
        b
    }

    const CONFIG: &str = r#"{"model_type":"bert","vocab_size":10,"hidden_size":4,"num_hidden_layers":2,"num_attention_heads":2,"intermediate_size":8,"max_position_embeddings":16}"#;

    fn run(config: &str, weights: &[u8], size: u64) -> Result<Inspection> {
        let files = [
            FileHead { name: "config.json", size: config.len() as u64, head: config.as_bytes() },
            FileHead { name: "model.safetensors", size, head: weights },
            FileHead { name: "tokenizer.json", size: 100, head: &[] },
        ];
        inspect("mine", &files)
    }

    #[test]
    fn counts_from_headers() {
        let w = st(
            r#"{"a":{"dtype":"F16","shape":[10,4],"data_offsets":[0,80]},"p":{"dtype":"I64","shape":[16],"data_offsets":[80,208]}}"#,
            208,
        );
        let i = run(CONFIG, &w, w.len() as u64).unwrap();
        assert_eq!(
            (i.architecture.as_str(), i.layers, i.heads, i.hidden_size, i.parameters),
            ("bert", 2, 2, 4, 40)
        );
        assert_eq!(i.format, "safetensors F16");
        // f32 weights + 10 × tokenizer.json + the larger of the file and the maps (here the maps).
        assert_eq!(i.memory_bytes, 160 + 1000 + 2 * 2 * 16 * 16 * 4);
    }

    #[test]
    fn refuses_what_does_not_fit_or_is_cut_short() {
        let huge =
            st(r#"{"a":{"dtype":"F32","shape":[1342177280],"data_offsets":[0,5368709120]}}"#, 16);
        let e = run(CONFIG, &huge, huge.len() as u64).unwrap_err().to_string();
        assert!(e.contains("the 1 GiB memory budget"), "{e}");
        let w = st(r#"{"a":{"dtype":"F32","shape":[10,4],"data_offsets":[0,160]}}"#, 100);
        let e = run(CONFIG, &w, w.len() as u64).unwrap_err().to_string();
        assert!(e.contains("cut short"), "{e}");
        let e = run(&CONFIG.replace("bert", "t5"), &w, w.len() as u64).unwrap_err().to_string();
        assert!(
            e.contains("`t5`")
                && e.contains("bert, roberta, xlm-roberta, distilbert, llama, marian, gpt2"),
            "{e}"
        );
        assert!(run(CONFIG, b"\xff\xff\xff\xff\xff\xff\xff\xff", 8).is_err());
    }

    #[test]
    fn reads_a_gpt2_config_and_skips_its_mask_buffers() {
        let cfg = r#"{"model_type":"gpt2","vocab_size":10,"n_embd":4,"n_layer":3,"n_head":2,"n_positions":32}"#;
        let w = st(
            r#"{"wte.weight":{"dtype":"F32","shape":[10,4],"data_offsets":[0,160]},"h.0.attn.bias":{"dtype":"F32","shape":[1,1,2,2],"data_offsets":[160,176]}}"#,
            176,
        );
        let i = run(cfg, &w, w.len() as u64).unwrap();
        assert_eq!(
            (
                i.architecture.as_str(),
                i.layers,
                i.heads,
                i.kv_heads,
                i.hidden_size,
                i.max_positions,
                i.parameters
            ),
            ("gpt2", 3, 2, 2, 4, 32, 40)
        );
        let e = run(&cfg.replace(r#""n_head":2"#, r#""n_head":3"#), &w, w.len() as u64)
            .unwrap_err()
            .to_string();
        assert!(e.contains("n_embd 4 is not a multiple of n_head 3"), "{e}");
    }
}

//! `inspect` (what the page reads before loading a user's model) on the real default models'
//! files, given what the worker gives it: all of config.json, the safetensors header, the first
//! `GGUF_HEAD_BYTES` of a GGUF.

use attnviz::models::inspect::{inspect, FileHead, GGUF_HEAD_BYTES};
use attnviz::models::Model;
use std::io::Read;
use std::path::{Path, PathBuf};

fn path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models").join(rel)
}

/// The first bytes of a file that the worker reads (www/worker/own-model.js `readHeads`).
fn head(p: &Path) -> (u64, Vec<u8>) {
    let size = std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e} — run `make models` first", p.display()))
        .len();
    let name = p.file_name().unwrap().to_string_lossy();
    let mut f = std::fs::File::open(p).unwrap();
    let want = match () {
        _ if name == "config.json" => size,
        _ if name.ends_with(".safetensors") => {
            let mut len = [0u8; 8];
            f.read_exact(&mut len).unwrap();
            f = std::fs::File::open(p).unwrap();
            8 + u64::from_le_bytes(len)
        }
        _ if name.ends_with(".gguf") => size.min(GGUF_HEAD_BYTES),
        _ => 0,
    };
    let mut buf = Vec::new();
    f.take(want).read_to_end(&mut buf).unwrap();
    (size, buf)
}

fn run(files: &[PathBuf]) -> attnviz::Result<attnviz::models::inspect::Inspection> {
    let heads: Vec<(String, u64, Vec<u8>)> = files
        .iter()
        .map(|p| {
            let (size, h) = head(p);
            (p.file_name().unwrap().to_string_lossy().into_owned(), size, h)
        })
        .collect();
    let fh: Vec<FileHead> =
        heads.iter().map(|(n, s, h)| FileHead { name: n, size: *s, head: h }).collect();
    inspect("mine", &fh)
}

#[test]
fn minilm_folder_is_recognised_from_its_headers() {
    let files: Vec<PathBuf> =
        ["config.json", "model.safetensors", "tokenizer.json", "manifest.json"]
            .iter()
            .map(|n| path(&format!("minilm/{n}")))
            .collect();
    let i = run(&files).unwrap();
    assert_eq!((i.architecture.as_str(), i.format.as_str()), ("bert", "safetensors F32"));
    assert_eq!((i.layers, i.heads, i.hidden_size, i.max_positions), (6, 12, 384, 512));
    assert_eq!(i.parameters, 22_713_216);
    assert_eq!(i.manifest.files, ["config.json", "model.safetensors", "tokenizer.json"]);
    // Measured with scripts/measure-own-model.mjs: 180.6 MiB of wasm memory after 512 tokens.
    let mib = i.memory_bytes as f64 / 1048576.0;
    assert!((170.0..190.0).contains(&mib), "{mib} MiB");
    // What the model loaded from the same files says.
    let info = Model::load_dir(&path("minilm")).unwrap().info();
    assert_eq!(info.max_positions, i.max_positions);
}

#[test]
fn smollm2_gguf_is_recognised_from_its_first_bytes() {
    let i = run(&[path("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")]).unwrap();
    assert_eq!((i.architecture.as_str(), i.format.as_str()), ("llama", "GGUF F32 + Q4_1 + Q8_0"));
    assert_eq!(
        (i.layers, i.heads, i.kv_heads, i.hidden_size, i.max_positions),
        (30, 9, 3, 576, 256)
    );
    assert_eq!(i.parameters, 134_515_008);
    // Measured: 193.3 MiB of wasm memory after 256 tokens.
    let mib = i.memory_bytes as f64 / 1048576.0;
    assert!((180.0..200.0).contains(&mib), "{mib} MiB");
}

#[test]
fn a_gguf_start_without_its_whole_tensor_table_is_an_error() {
    let p = path("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
    let (size, h) = head(&p);
    let short = &h[..1 << 20];
    let e =
        inspect("mine", &[FileHead { name: "m.gguf", size, head: short }]).unwrap_err().to_string();
    assert!(e.contains("longer than the first 1 MiB read for inspection"), "{e}");
}

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
        (30, 9, 3, 576, 512)
    );
    assert_eq!(i.parameters, 134_515_008);
    // Measured (the page's maps option, scripts/measure-own-model.mjs): 207.6 MiB of wasm
    // memory after 512 tokens.
    let mib = i.memory_bytes as f64 / 1048576.0;
    assert!((200.0..220.0).contains(&mib), "{mib} MiB");
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

/// What the CLI says when it refuses `model`: its one line on stderr, without the `attnviz: `.
fn cli_refusal(model: &Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_attnviz"))
        .args(["attend", "--text", "Hi", "--model"])
        .arg(model)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err.trim_end().strip_prefix("attnviz: ").unwrap_or(&err).to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Issue 44, item 8: a refusal names its real cause, in the same words in the page (this
/// inspection is what the wasm facade runs on a user's files) and in the CLI (which reads them
/// whole). A tensor dimension of 2^40 was blamed on a header "longer than the first 32 MiB"
/// (SmolLM2's is 1.8 MB); a 128.5 MiB tokenizer.json on "1.3 GiB of weights".
#[test]
fn a_refusal_names_its_real_cause_in_the_page_and_the_cli_alike() {
    // One dimension of SmolLM2's `blk.0.attn_q.weight` set to 2^40: past its name, n_dims (u32).
    let mut gguf = std::fs::read(path("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")).unwrap();
    let name = b"blk.0.attn_q.weight";
    let entry = [&(name.len() as u64).to_le_bytes()[..], name].concat();
    let at = gguf.windows(entry.len()).position(|w| w == entry).unwrap() + entry.len() + 4;
    gguf[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let dir = scratch("refusal-gguf");
    std::fs::write(dir.join("huge.gguf"), &gguf).unwrap();
    let first = &gguf[..GGUF_HEAD_BYTES as usize];
    let size = gguf.len() as u64;
    let page = inspect("mine", &[FileHead { name: "huge.gguf", size, head: first }]).unwrap_err();
    let page = page.to_string();
    assert!(
        page.contains("has a dimension of 1099511627776") && !page.contains("32 MiB"),
        "{page}"
    );
    assert_eq!(page, cli_refusal(&dir.join("huge.gguf")));

    // MiniLM with a 128.5 MiB tokenizer.json (sparse files: refused from their sizes alone).
    let dir = scratch("refusal-tokenizer");
    std::fs::copy(path("minilm/config.json"), dir.join("config.json")).unwrap();
    let weights = path("minilm/model.safetensors");
    let tokenizer_size = (128 << 20) + (1 << 19);
    for (name, size) in [
        ("model.safetensors", std::fs::metadata(&weights).unwrap().len()),
        ("tokenizer.json", tokenizer_size),
    ] {
        std::fs::File::create(dir.join(name)).unwrap().set_len(size).unwrap();
    }
    let config = std::fs::read(dir.join("config.json")).unwrap();
    let (weights_size, weights_head) = head(&weights);
    let page = inspect(
        "mine",
        &[
            FileHead { name: "config.json", size: config.len() as u64, head: &config },
            FileHead { name: "model.safetensors", size: weights_size, head: &weights_head },
            FileHead { name: "tokenizer.json", size: tokenizer_size, head: &[] },
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(page.contains("tokenizer.json is 128.5 MiB, more than the 48 MiB accepted"), "{page}");
    assert_eq!(page, cli_refusal(&dir));
}

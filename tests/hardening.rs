//! Regression cases of issue 13 ("Panics and hangs"): each input below panicked, wrapped an
//! integer, allocated without bound or hung before the loaders checked it. Every one must now
//! be an `Err` whose message says what is wrong (and, for a size, what the limit is).
//! Inputs are the real default models under models/, mutated here, or small files built here.

use attnviz::models::{Manifest, Model};
use attnviz::tokenize::TextTokenizer;
use attnviz::weights::marian_bin;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

// The tiny models of the fuzzers; here for their base64 helpers.
use crate::fuzz_models;
use fuzz_models::{b64_decode, b64_encode};

fn models_dir(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models").join(dir)
}

fn read(dir: &str, name: &str) -> Vec<u8> {
    std::fs::read(models_dir(dir).join(name))
        .unwrap_or_else(|e| panic!("{dir}/{name}: {e} — run `make models` first"))
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Texts that walk many paths of a normaliser's trie (NFKC-affected characters among them).
const TEXTS: [&str; 4] = [
    "The cat sat on the mat.",
    "ﬁ Ⅻ ｶ ① é ñ ß ẞ 𝔘 ㈱ ㎏ ＡＢＣ Ǆ",
    "\u{7f}\u{85}\u{a0}\u{feff}\u{200b} x y",
    "Olá, tudo bem? ½ ² ™ … –",
];

/// Loads a tokenizer and, when it loads, encodes and decodes with it: a panic fails the test.
fn load_and_use(json: &[u8]) -> Result<(), String> {
    let t = TextTokenizer::from_bytes(json, 255).map_err(|e| e.to_string())?;
    for text in TEXTS {
        if let Ok(enc) = t.encode(text) {
            let _ = t.decode(&enc.ids);
        }
    }
    Ok(())
}

fn en_pt_tokenizer() -> Value {
    serde_json::from_slice(&read("en-pt", "tokenizer.json")).unwrap()
}

/// The same tokenizer with the first `pieces` of its 32,000 vocabulary pieces: what a flip in the
/// charsmap reaches is the normaliser, and building the whole Unigram trie for each of 400 flips
/// was most of this suite's time.
fn with_vocab_cut(mut tok: Value, pieces: usize) -> Value {
    tok["model"]["vocab"].as_array_mut().unwrap().truncate(pieces);
    tok
}

fn charsmap(tok: &Value) -> &str {
    tok["normalizer"]["normalizers"][0]["precompiled_charsmap"].as_str().unwrap()
}

fn with_charsmap(tok: &Value, map: &str) -> Vec<u8> {
    let mut t = tok.clone();
    t["normalizer"]["normalizers"][0]["precompiled_charsmap"] = Value::String(map.into());
    serde_json::to_vec(&t).unwrap()
}

// ---- 1. a corrupt tokenizer.json never panics inside the `tokenizers` crate -----------------

#[test]
fn bit_flips_in_the_translators_charsmap_are_errors_not_panics() {
    // Flips in the JSON text of the charsmap (most make its base64 invalid, on which the crate
    // `expect`ed), then flips in the decoded trie and replacement bytes (on which it indexed
    // out of bounds while normalising).
    let tok = with_vocab_cut(en_pt_tokenizer(), 2000);
    assert_eq!(
        load_and_use(&serde_json::to_vec(&tok).unwrap()),
        Ok(()),
        "the cut tokenizer must load"
    );
    let json = serde_json::to_vec(&tok).unwrap();
    let text = String::from_utf8(json.clone()).unwrap();
    let start = text.find(charsmap(&tok)).unwrap();
    let len = charsmap(&tok).len();
    let mut rng = XorShift(0x5DEE_CE66_D1CE_4E5B);
    let mut errors = 0;
    for _ in 0..200 {
        let mut j = json.clone();
        j[start + rng.below(len)] ^= 1 << rng.below(8);
        errors += load_and_use(&j).is_err() as usize;
    }
    assert!(errors > 0, "no flip was rejected: the test no longer reaches the charsmap");
    let bytes = b64_decode(charsmap(&tok));
    let trie_len = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
    for _ in 0..200 {
        let mut b = bytes.clone();
        // Mostly in the trie, where a flip changes where lookups go.
        let i = if rng.below(4) == 0 { rng.below(b.len()) } else { 4 + rng.below(trie_len) };
        b[i] ^= 1 << rng.below(8);
        let _ = load_and_use(&with_charsmap(&tok, &b64_encode(&b)));
    }
}

#[test]
fn a_charsmap_that_is_not_base64_or_points_outside_itself_is_named_in_the_error() {
    let tok = en_pt_tokenizer();
    let one_unit_trie = |unit: u32| [4u32.to_le_bytes(), unit.to_le_bytes()].concat();
    let cases: [(&str, String); 4] = [
        ("not base64", "ALQC!AAC".to_string()),
        ("length prefix beyond the data", b64_encode(&[0xff, 0xff, 0, 0, 1, 2, 3, 4])),
        // A one-unit trie whose root sends every byte of the text to units that do not exist.
        ("trie pointing outside itself", b64_encode(&one_unit_trie(0))),
        // A leaf whose replacement starts inside a two-byte character: unit 0 (offset 0),
        // `a` → unit 97 with a leaf at 97 ^ 0, value 1 into "é".
        ("replacement inside a character", {
            let mut trie = vec![0u32; 256];
            trie[97] = 97 | 1 << 8;
            trie[0] = 0;
            let mut b = ((trie.len() * 4) as u32).to_le_bytes().to_vec();
            trie.iter().for_each(|u| b.extend_from_slice(&u.to_le_bytes()));
            b.extend_from_slice("é\0".as_bytes());
            b64_encode(&b)
        }),
    ];
    for (what, map) in cases {
        let err = load_and_use(&with_charsmap(&tok, &map)).expect_err(what);
        assert!(err.contains("precompiled_charsmap"), "{what}: `{err}` does not name the charsmap");
    }
    // The same through the whole translator, as the page loads it.
    let manifest = Manifest::from_json(&read("en-pt", "manifest.json")).unwrap();
    let files: HashMap<String, Vec<u8>> = [
        (
            "model.enpt.intgemm.alphas.bin".to_string(),
            read("en-pt", "model.enpt.intgemm.alphas.bin"),
        ),
        ("tokenizer.json".to_string(), with_charsmap(&tok, "ALQC!AAC")),
    ]
    .into();
    let err = Model::load(manifest, &files).err().expect("a bad charsmap must not load");
    assert!(err.to_string().contains("precompiled_charsmap"), "{err}");
}

// ---- safetensors and Marian .bin writers for the size cases -----------------------------

/// The MiniLM weights with `edit(name, shape, data)` applied to every tensor.
fn minilm_weights_with(edit: impl Fn(&str, &mut Vec<usize>, &mut Vec<u8>)) -> Vec<u8> {
    let file = read("minilm", "model.safetensors");
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    let header: serde_json::Map<String, Value> = serde_json::from_slice(&file[8..8 + n]).unwrap();
    let data = &file[8 + n..];
    let (mut out_header, mut out_data) = (serde_json::Map::new(), Vec::new());
    for (name, info) in header {
        if name == "__metadata__" {
            continue;
        }
        let offs: Vec<usize> = serde_json::from_value(info["data_offsets"].clone()).unwrap();
        let mut shape: Vec<usize> = serde_json::from_value(info["shape"].clone()).unwrap();
        let mut bytes = data[offs[0]..offs[1]].to_vec();
        edit(&name, &mut shape, &mut bytes);
        let start = out_data.len();
        out_data.extend_from_slice(&bytes);
        out_header.insert(name, json!({"dtype": info["dtype"], "shape": shape, "data_offsets": [start, out_data.len()]}));
    }
    let h = serde_json::to_vec(&out_header).unwrap();
    [&(h.len() as u64).to_le_bytes()[..], &h, &out_data].concat()
}

fn minilm_config_with(changes: Value) -> Vec<u8> {
    let mut c: Value = serde_json::from_slice(&read("minilm", "config.json")).unwrap();
    for (k, v) in changes.as_object().unwrap() {
        c[k] = v.clone();
    }
    serde_json::to_vec(&c).unwrap()
}

fn load_minilm(config: Vec<u8>, weights: Vec<u8>) -> attnviz::Result<Model> {
    let manifest = Manifest::from_json(&read("minilm", "manifest.json")).unwrap();
    let files: HashMap<String, Vec<u8>> = [
        ("config.json", config),
        ("model.safetensors", weights),
        ("tokenizer.json", read("minilm", "tokenizer.json")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Model::load(manifest, &files)
}

/// A Marian .bin of named tensors: `(name, int8?, shape)`, all zeros (int8 with alpha 1).
fn marian_file(tensors: &[(String, bool, Vec<i32>)]) -> Vec<u8> {
    let mut f = Vec::new();
    let put = |f: &mut Vec<u8>, v: u64| f.extend_from_slice(&v.to_le_bytes());
    put(&mut f, 1);
    put(&mut f, tensors.len() as u64);
    let data_len = |int8: bool, shape: &[i32]| {
        let n: usize = shape.iter().map(|&d| d as usize).product();
        if int8 {
            n + 4
        } else {
            4 * n
        }
    };
    for (name, int8, shape) in tensors {
        put(&mut f, name.len() as u64 + 1);
        put(&mut f, if *int8 { 0x4101 } else { 0x404 });
        put(&mut f, shape.len() as u64);
        put(&mut f, data_len(*int8, shape) as u64);
    }
    for (name, ..) in tensors {
        f.extend_from_slice(name.as_bytes());
        f.push(0);
    }
    for (_, _, shape) in tensors {
        shape.iter().for_each(|d| f.extend_from_slice(&d.to_le_bytes()));
    }
    put(&mut f, 0);
    for (_, int8, shape) in tensors {
        let mut blob = vec![0u8; data_len(*int8, shape)];
        if *int8 {
            let n = blob.len();
            blob[n - 4..].copy_from_slice(&1f32.to_le_bytes());
        }
        f.extend_from_slice(&blob);
    }
    f
}

/// A one-encoder-layer, one-decoder-layer Marian model with embedding size `d` and FFN size
/// `ffn`, over the translator's 32,000-piece vocabulary.
fn tiny_marian(d: i32, ffn: i32) -> Vec<u8> {
    let vocab = 32000;
    let mut t = vec![
        ("Wemb".to_string(), true, vec![vocab, d]),
        ("decoder_ff_logit_out_b".to_string(), false, vec![1, vocab]),
    ];
    let mut attention = |p: &str| {
        for m in ["q", "k", "v", "o"] {
            t.push((format!("{p}_W{m}"), false, vec![d, d]));
            t.push((format!("{p}_b{m}"), false, vec![1, d]));
        }
        t.push((format!("{p}_Wo_ln_scale"), false, vec![1, d]));
        t.push((format!("{p}_Wo_ln_bias"), false, vec![1, d]));
    };
    attention("encoder_l1_self");
    attention("decoder_l1_context");
    for p in ["encoder_l1", "decoder_l1"] {
        t.push((format!("{p}_ffn_W1"), false, vec![ffn, d]));
        t.push((format!("{p}_ffn_b1"), false, vec![1, ffn]));
        t.push((format!("{p}_ffn_W2"), false, vec![d, ffn]));
        t.push((format!("{p}_ffn_b2"), false, vec![1, d]));
        t.push((format!("{p}_ffn_ffn_ln_scale"), false, vec![1, d]));
        t.push((format!("{p}_ffn_ffn_ln_bias"), false, vec![1, d]));
    }
    for n in ["rnn_W", "rnn_Wf"] {
        t.push((format!("decoder_l1_{n}"), false, vec![d, d]));
    }
    for n in ["rnn_bf", "rnn_ffn_ln_scale", "rnn_ffn_ln_bias"] {
        t.push((format!("decoder_l1_{n}"), false, vec![1, d]));
    }
    marian_file(&t)
}

fn load_marian(bin: Vec<u8>) -> attnviz::Result<Model> {
    let manifest = Manifest::from_json(&read("en-pt", "manifest.json")).unwrap();
    let files: HashMap<String, Vec<u8>> = [
        ("model.enpt.intgemm.alphas.bin".to_string(), bin),
        ("tokenizer.json".to_string(), read("en-pt", "tokenizer.json")),
    ]
    .into();
    Model::load(manifest, &files)
}

/// A model that loads must also run: a panic later fails the test as surely as one at load.
fn must_refuse(what: &str, loaded: attnviz::Result<Model>, needles: &[&str]) {
    match loaded {
        Ok(model) => {
            let long = "word ".repeat(600);
            for text in ["The cat sat on the mat.", long.as_str()] {
                let _ = model.attend(text);
            }
            panic!("{what}: loaded (and ran without panicking), but should have been refused");
        }
        Err(e) => {
            let msg = e.to_string();
            for n in needles {
                assert!(msg.contains(n), "{what}: the error `{msg}` does not say `{n}`");
            }
        }
    }
}

// ---- 2. shape arithmetic never wraps ---------------------------------------------------------

#[test]
fn a_position_table_whose_size_wraps_is_refused() {
    // In wasm (32-bit usize) `max_position_embeddings: 33554944` makes 33554944 × 384 wrap to
    // 512 × 384, the size of the real table, so the model loaded and panicked on a long text.
    // 2^57 + 512 does the same with a 64-bit usize. (Its attention maps are also over budget,
    // which is now checked first.)
    let config = minilm_config_with(json!({"max_position_embeddings": (1u64 << 57) + 512}));
    must_refuse(
        "max_position_embeddings 2^57+512",
        load_minilm(config, read("minilm", "model.safetensors")),
        &["max_position_embeddings", "memory budget"],
    );
    let config = minilm_config_with(json!({"max_position_embeddings": 33554944}));
    must_refuse(
        "max_position_embeddings 33554944",
        load_minilm(config, read("minilm", "model.safetensors")),
        &["max_position_embeddings", "memory budget"],
    );
    // The tensor-shape check itself: vocab_size 2^57 + 30522 times 384 wrapped to the real
    // table's 30522 × 384, so a config that contradicts its weights was accepted.
    let config = minilm_config_with(json!({"vocab_size": (1u64 << 57) + 30522}));
    must_refuse(
        "vocab_size 2^57+30522",
        load_minilm(config, read("minilm", "model.safetensors")),
        &["word_embeddings", "[30522, 384]", "[144115188075886394, 384]"],
    );
}

#[test]
fn a_marian_tensor_whose_size_wraps_is_refused() {
    // In wasm an int8 tensor [4, 1073741823] has 2^32 − 4 values, so `values + 4 bytes of
    // alpha` wrapped to 0 and the reader sliced backwards; [4, 3, 715827883, 2147483647] has
    // 2^64 − 4 values and did the same natively.
    for shape in [vec![4, 1073741823], vec![4, 3, 715827883, 2147483647]] {
        let mut f = marian_file(&[("W".into(), true, vec![1, 1])]);
        // Rewrite the header: shape_len and the shape itself, no data at all.
        f.truncate(16);
        for v in [2u64, 0x4101, shape.len() as u64, 0] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f.extend_from_slice(b"W\0");
        shape.iter().for_each(|d: &i32| f.extend_from_slice(&d.to_le_bytes()));
        f.extend_from_slice(&0u64.to_le_bytes());
        let err = marian_bin::read(&f)
            .err()
            .unwrap_or_else(|| panic!("{shape:?} with no data was accepted"));
        assert!(err.to_string().contains("`W`"), "{err}");
    }
}

// ---- 3. zero and tiny sizes --------------------------------------------------------------

#[test]
fn zero_and_tiny_bert_sizes_are_refused() {
    let rows = |keep: usize| {
        move |name: &str, shape: &mut Vec<usize>, data: &mut Vec<u8>, target: &str| {
            if name == target {
                data.truncate(keep * shape[1] * 4);
                shape[0] = keep;
            }
        }
    };
    let positions = |p: usize| {
        minilm_weights_with(move |n, s, d| {
            rows(p)(n, s, d, "embeddings.position_embeddings.weight")
        })
    };
    // One position: the tokenizer's [CLS] and [SEP] already fill it (the truncation length
    // wrapped below zero and the text ran past the table).
    must_refuse(
        "max_position_embeddings 1",
        load_minilm(minilm_config_with(json!({"max_position_embeddings": 1})), positions(1)),
        &["at most 1 tokens", "2 special tokens"],
    );
    must_refuse(
        "max_position_embeddings 0",
        load_minilm(minilm_config_with(json!({"max_position_embeddings": 0})), positions(0)),
        &["config.json", "max_position_embeddings is 0"],
    );
    let types = minilm_weights_with(move |n, s, d| {
        rows(0)(n, s, d, "embeddings.token_type_embeddings.weight")
    });
    must_refuse(
        "type_vocab_size 0",
        load_minilm(minilm_config_with(json!({"type_vocab_size": 0})), types),
        &["config.json", "type_vocab_size is 0"],
    );
    let no_ffn = minilm_weights_with(|name, shape, data| {
        if name.ends_with("intermediate.dense.weight") || name.ends_with("intermediate.dense.bias")
        {
            shape[0] = 0;
            data.clear();
        } else if name.contains(".output.dense.weight") && !name.contains("attention") {
            shape[1] = 0;
            data.clear();
        }
    });
    must_refuse(
        "intermediate_size 0",
        load_minilm(minilm_config_with(json!({"intermediate_size": 0})), no_ffn),
        &["config.json", "intermediate_size is 0"],
    );
}

#[test]
fn zero_marian_dimensions_are_refused() {
    must_refuse("Marian dim-emb 0", load_marian(tiny_marian(0, 16)), &["dim-emb 0"]);
    must_refuse("Marian FFN 0", load_marian(tiny_marian(8, 0)), &["FFN 0"]);
}

// ---- 4. absurd sizes: refused before allocating, with the budget in the message ----------

#[test]
fn absurd_layer_counts_and_lengths_are_refused_with_the_budget() {
    // A billion layers: refused from the config alone, before any layer is built.
    let err = load_minilm(
        minilm_config_with(json!({ "num_hidden_layers": 1_000_000_000u64 })),
        read("minilm", "model.safetensors"),
    )
    .err()
    .expect("a billion layers loaded");
    assert!(
        err.to_string().contains("config.json") && err.to_string().contains("1 GiB memory budget"),
        "{err}"
    );
    // `1e9` is a float: not a layer count at all.
    let err = load_minilm(
        minilm_config_with(json!({ "num_hidden_layers": 1e9 })),
        read("minilm", "model.safetensors"),
    )
    .err()
    .expect("1e9 layers loaded");
    assert!(err.to_string().contains("config.json"), "{err}");
    // 8192 positions backed by a real (zero-padded) table: the file is consistent, but the two
    // layers × 12 heads of 8192 × 8192 maps a long text keeps need 6 GiB.
    let long_table = minilm_weights_with(|name, shape, data| {
        if name == "embeddings.position_embeddings.weight" {
            data.resize(8192 * shape[1] * 4, 0);
            shape[0] = 8192;
        }
    });
    must_refuse(
        "max_position_embeddings 8192",
        load_minilm(minilm_config_with(json!({"max_position_embeddings": 8192})), long_table),
        &["max_position_embeddings 8192", "6.0 GiB", "1 GiB memory budget"],
    );
}

#[test]
fn model_files_beyond_the_memory_budget_are_refused_before_reading() {
    // A (sparse) weights file one byte over the budget: refused from its size alone, and the
    // message states the budget.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hardening-budget");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["config.json", "tokenizer.json", "manifest.json"] {
        std::fs::write(dir.join(name), read("minilm", name)).unwrap();
    }
    let big = std::fs::File::create(dir.join("model.safetensors")).unwrap();
    big.set_len((1u64 << 30) + 1).unwrap();
    drop(big);
    let err = Model::load_dir(&dir).err().expect("a file over the budget loaded");
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    assert!(err.to_string().contains("1 GiB memory budget"), "{err}");
}

// ---- 5. bounded tokenizer.json -----------------------------------------------------------

fn minilm_tokenizer() -> Value {
    serde_json::from_slice(&read("minilm", "tokenizer.json")).unwrap()
}

#[test]
fn oversized_tokenizer_json_fails_fast_with_the_limit() {
    // Deep nesting inside a section the crate buffers.
    let mut deep = minilm_tokenizer();
    let nested = format!("{}{}", "[".repeat(40), "]".repeat(40));
    deep["normalizer"]["junk"] = serde_json::from_str(&nested).unwrap();
    let err = load_and_use(&serde_json::to_vec(&deep).unwrap()).expect_err("40 levels of nesting");
    assert!(err.contains("nests deeper than the 16 levels"), "{err}");

    // 5 MB of shallow nested arrays (the crate spent seconds and hundreds of MB on them).
    let mut bulk = minilm_tokenizer();
    let unit = Value::from(vec![Value::from(vec![Value::from(Vec::<Value>::new()); 3]); 2]);
    bulk["post_processor"]["junk"] = Value::from(vec![unit; 5_000_000 / 16]);
    let err = load_and_use(&serde_json::to_vec(&bulk).unwrap()).expect_err("5 MB of arrays");
    assert!(err.contains("section `post_processor`") && err.contains("100000 items"), "{err}");

    // 50,000 added tokens.
    let mut added = minilm_tokenizer();
    let tokens: Vec<Value> = (0..50_000)
        .map(|i| json!({"id": 30522 + i, "content": format!("<x{i}>"), "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}))
        .collect();
    added["added_tokens"] = Value::from(tokens);
    let err = load_and_use(&serde_json::to_vec(&added).unwrap()).expect_err("50,000 added tokens");
    assert!(err.contains("50000 added tokens") && err.contains("20000"), "{err}");

    // Over the size limit (valid JSON, padded with whitespace).
    let mut big = read("minilm", "tokenizer.json");
    big.resize((48 << 20) + 1, b' ');
    let err = load_and_use(&big).expect_err("a 48 MiB tokenizer.json");
    assert!(err.contains("48 MiB"), "{err}");

    // The real files still load.
    load_and_use(&read("minilm", "tokenizer.json")).unwrap();
    load_and_use(&read("en-pt", "tokenizer.json")).unwrap();
}

// ---- 7. the CLI ----------------------------------------------------------------------------

fn cli(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_attnviz")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_help_exits_zero_and_bad_utf8_is_an_error() {
    for flag in ["--help", "-h"] {
        let (code, out, _) = cli(&[flag.as_ref()]);
        assert_eq!(code, 0, "{flag}");
        assert!(out.contains("usage: attnviz attend"), "{flag}: {out}");
    }
    use std::os::unix::ffi::OsStrExt;
    let model = models_dir("minilm");
    let bad = std::ffi::OsStr::from_bytes(b"caf\xe9 \xff");
    let (code, _, err) =
        cli(&["attend".as_ref(), "--model".as_ref(), model.as_os_str(), "--text".as_ref(), bad]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("argument 5") && err.contains("not valid UTF-8") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn manifest_files_must_be_plain_files_inside_the_model_folder() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hardening-manifest");
    let fifo = base.join("model").join("fifo");
    std::fs::create_dir_all(base.join("model")).unwrap();
    std::fs::write(base.join("outside.json"), b"{}").unwrap();
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let outside = base.join("outside.json");
    for (name, why) in [
        ("../outside.json", "not a plain file name"),
        (outside.to_str().unwrap(), "not a plain file name"),
        ("/dev/zero", "not a plain file name"),
        ("fifo", "not a regular file"),
        ("", "not a plain file name"),
    ] {
        let manifest = json!({"id": "x", "architecture": "bert", "files": [name, "config.json"]});
        std::fs::write(base.join("model").join("manifest.json"), manifest.to_string()).unwrap();
        let err =
            Model::load_dir(&base.join("model")).err().unwrap_or_else(|| panic!("`{name}` loaded"));
        assert!(
            err.to_string().contains("manifest.json names") && err.to_string().contains(why),
            "`{name}`: {err}"
        );
    }
    // A symbolic link inside the folder that leads out of it.
    let link = base.join("model").join("link.json");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    std::fs::write(
        base.join("model").join("manifest.json"),
        json!({"id": "x", "architecture": "bert", "files": ["link.json"]}).to_string(),
    )
    .unwrap();
    let err = Model::load_dir(&base.join("model")).err().expect("a link out of the folder loaded");
    assert!(err.to_string().contains("outside the model folder"), "{err}");
}

/// Issue 21, item 18: what a model cannot do is refused with one line and exit status 2, before
/// any work; a `.gguf` file is a model as the page takes it.
#[test]
fn cli_refuses_out_of_range_values_and_takes_a_gguf_file() {
    let arg = |s: &str| std::ffi::OsString::from(s);
    let run =
        |args: &[std::ffi::OsString]| cli(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
    let minilm = models_dir("minilm").into_os_string();
    let smol = models_dir("smollm2").into_os_string();
    let gguf = models_dir("smollm2").join("SmolLM2-135M-Instruct.Q4_1.gguf").into_os_string();
    for (args, needle) in [
        (
            vec![
                arg("attend"),
                arg("--model"),
                smol.clone(),
                arg("--text"),
                arg("Hi"),
                arg("--generate"),
                arg("1000000"),
            ],
            "--generate 1000000 is out of range",
        ),
        (
            vec![
                arg("attend"),
                arg("--model"),
                minilm.clone(),
                arg("--text"),
                arg("Hi"),
                arg("--generate"),
                arg("3"),
            ],
            "does not generate text",
        ),
        (
            vec![arg("positions"), arg("--model"), minilm.clone(), arg("--count"), arg("100000")],
            "--count 100000 is out of range",
        ),
        (
            vec![arg("positions"), arg("--model"), minilm.clone(), arg("--count"), arg("0")],
            "--count 0 is out of range",
        ),
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle) && err.lines().count() == 1, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?} printed {} bytes", out.len());
    }
    // The largest count and a .gguf path work.
    let (code, out, err) =
        run(&[arg("positions"), arg("--model"), minilm, arg("--count"), arg("512")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"positions\""), "{}", &out[..out.len().min(200)]);
    let (code, out, err) = run(&[
        arg("attend"),
        arg("--model"),
        gguf,
        arg("--text"),
        arg("Once upon a time"),
        arg("--generate"),
        arg("2"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"decoder_self\""), "{}", &out[..out.len().min(200)]);
}

//! Tiny valid model folders (a BERT, a GPT-2, a Hugging Face opus-mt translator, a Bergamot
//! Marian translator and a Llama GGUF, a few KB each) and the page's load path over them, for the coverage-guided fuzzers in fuzz/ and for the replay of their seeds
//! and regression inputs in tests/fuzz_regressions.rs. One fuzz input replaces one file of a
//! folder; everything else stays valid, so the fuzzer spends its time in the parser it targets
//! and a file that parses goes on through `Model::load` and a forward, as in the page.

use attnviz::models::inspect::{inspect, FileHead};
use attnviz::models::{Manifest, Model};
use attnviz::output::AttendResult;
use attnviz::result::{GenerateOptions, Sampling};
use attnviz::weights::gguf::{write, Value as GgufValue};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::OnceLock;

/// The parsers a user's file reaches, one fuzz target each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `model.safetensors` of the tiny BERT, GPT-2 or opus-mt folder (picked by its tensor names).
    Safetensors,
    /// The tiny Marian `.bin`.
    MarianBin,
    /// `config.json` of the tiny BERT, GPT-2 or opus-mt folder (picked by its `model_type`; a
    /// folder without a manifest: the page infers one from it, so each reaches its own loader).
    ConfigJson,
    /// `manifest.json` text, tried on the BERT folder and on the Marian folder.
    ManifestJson,
    /// `tokenizer.json`: of the GPT-2 folder when it mentions `BPE`, of the opus-mt one when it
    /// mentions `Unigram` and `<pad>`, of the Bergamot Marian one when `Unigram` alone, else of
    /// the BERT one.
    TokenizerJson,
    /// The tiny Llama's `.gguf` (weights, config and tokenizer in one file), loaded, attended
    /// and generating.
    Gguf,
}

impl Target {
    pub const ALL: [Target; 6] = [
        Target::Safetensors,
        Target::MarianBin,
        Target::ConfigJson,
        Target::ManifestJson,
        Target::TokenizerJson,
        Target::Gguf,
    ];

    /// Directory name under fuzz/corpus, fuzz/regressions and fuzz/artifacts, and binary name.
    pub fn name(self) -> &'static str {
        match self {
            Target::Safetensors => "safetensors",
            Target::MarianBin => "marian_bin",
            Target::ConfigJson => "config_json",
            Target::ManifestJson => "manifest_json",
            Target::TokenizerJson => "tokenizer_json",
            Target::Gguf => "gguf",
        }
    }

    /// Valid starting inputs for this target (the files of the tiny folders, and variants).
    pub fn seeds(self) -> Vec<Vec<u8>> {
        match self {
            Target::Safetensors => vec![
                bert_safetensors(&BertShape::DEFAULT),
                bert_safetensors(&BertShape { layers: 1, ..BertShape::DEFAULT }),
                gpt2::safetensors(&gpt2::tensors("transformer.")),
                gpt2::safetensors(&gpt2::tensors("")),
                opus_mt::safetensors(None),
            ],
            Target::MarianBin => vec![marian_bin(true), marian_bin(false)],
            Target::ConfigJson => vec![
                bert_config(&BertShape::DEFAULT),
                bert_config(&BertShape { layers: 1, ..BertShape::DEFAULT }),
                gpt2::config_json(),
                opus_mt::config(|_| {}),
            ],
            Target::ManifestJson => vec![
                bert_manifest(),
                marian_manifest(),
                Vec::new(),
                br#"{"id":"x","architecture":"gpt2","files":["config.json"]}"#.to_vec(),
            ],
            Target::TokenizerJson => vec![
                bert_tokenizer(),
                marian_tokenizer(),
                gpt2::tokenizer_json(),
                opus_mt::tokenizer(),
            ],
            Target::Gguf => vec![llama_gguf(&LlamaShape::DEFAULT), llama_gguf(&LlamaShape::SMALL)],
        }
    }
}

/// What happened to one input; a panic is the only failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Refused with an error (the message the page would show).
    Refused(String),
    /// Loaded, and the forward returned an error.
    ForwardFailed(String),
    /// Loaded and attended.
    Attended,
}

/// The text attended when a model loads: known words, unknown ones, and characters a
/// normaliser changes.
pub const TEXT: &str = "The cat sat on the mat, A ﬁ é 𝔘!";

/// Runs one fuzz input through the page's path (see `run_page`); for `ManifestJson` on both
/// folders, giving the first outcome that got furthest.
pub fn run(target: Target, data: &[u8]) -> Outcome {
    // Built once per process: the fuzzers run this millions of times.
    static BERT: OnceLock<HashMap<String, Vec<u8>>> = OnceLock::new();
    static MARIAN: OnceLock<HashMap<String, Vec<u8>>> = OnceLock::new();
    static GPT2: OnceLock<HashMap<String, Vec<u8>>> = OnceLock::new();
    static OPUS_MT: OnceLock<HashMap<String, Vec<u8>>> = OnceLock::new();
    let bert = || BERT.get_or_init(bert_files);
    let marian = || MARIAN.get_or_init(marian_files);
    let gpt2 = || GPT2.get_or_init(gpt2::files);
    let opus_mt = || OPUS_MT.get_or_init(opus_mt::files);
    let replace = |folder: &HashMap<String, Vec<u8>>, name: &str| {
        let mut files = folder.clone();
        files.insert(name.to_string(), data.to_vec());
        files
    };
    // The folder a file belongs in, from what it says (the page dispatches on config.json's
    // model_type): each family's loader sees its own files mutated, not only BERT's.
    match target {
        Target::Safetensors => run_page(
            "",
            &replace(
                pick(data, &[(b"c_attn", gpt2()), (b"_proj.", opus_mt())], bert()),
                "model.safetensors",
            ),
        ),
        Target::ConfigJson => run_page(
            "",
            &replace(
                pick(data, &[(b"gpt2", gpt2()), (b"marian", opus_mt())], bert()),
                "config.json",
            ),
        ),
        Target::MarianBin => run_page("", &replace(marian(), MARIAN_BIN)),
        Target::Gguf => run_page(LLAMA_MANIFEST, &[(LLAMA_GGUF.to_string(), data.to_vec())].into()),
        Target::TokenizerJson => {
            let folder = pick(
                data,
                &[(b"BPE", gpt2()), (b"<pad>", opus_mt()), (b"Unigram", marian())],
                bert(),
            );
            run_page("", &replace(folder, "tokenizer.json"))
        }
        Target::ManifestJson => {
            // The page gets the manifest as a JS string: invalid UTF-8 arrives as U+FFFD.
            let text = String::from_utf8_lossy(data);
            let a = run_page(&text, bert());
            let b = run_page(&text, marian());
            if matches!(a, Outcome::Refused(_)) {
                b
            } else {
                a
            }
        }
    }
}

/// A model folder: file name → bytes.
type Folder = HashMap<String, Vec<u8>>;

/// The first folder whose marker `data` holds, else `or`.
fn pick<'a>(data: &[u8], folders: &[(&[u8], &'a Folder)], or: &'a Folder) -> &'a Folder {
    folders
        .iter()
        .find(|(marker, _)| data.windows(marker.len()).any(|w| w == *marker))
        .map_or(or, |(_, folder)| folder)
}

/// What `AttnModel::load`, `info` and `attend` in src/wasm/mod.rs do, natively: the manifest
/// (inferred from the files when `manifest_json` is blank), `Model::load`, then the model's info
/// and a forward over [`TEXT`] turned into the page's result; for a model that generates, a
/// greedy and a sampled continuation of a few tokens instead.
pub fn run_page(manifest_json: &str, files: &HashMap<String, Vec<u8>>) -> Outcome {
    // What the page does first with a user's files: inspect them (here with every byte as the
    // head, a superset of what the worker reads). It may refuse what loads, never panic.
    let heads: Vec<FileHead> = files
        .iter()
        .map(|(name, bytes)| FileHead { name, size: bytes.len() as u64, head: bytes })
        .collect();
    std::hint::black_box(&inspect("custom", &heads));
    let manifest = if manifest_json.trim().is_empty() {
        let names: Vec<String> = files.keys().cloned().collect();
        Manifest::infer("custom", &names, files.get("config.json").map(|v| v.as_slice()))
    } else {
        Manifest::from_json(manifest_json.as_bytes())
    };
    let model = match manifest.and_then(|m| Model::load(m, files)) {
        Ok(m) => m,
        Err(e) => return Outcome::Refused(e.to_string()),
    };
    let info = model.info();
    std::hint::black_box(&info);
    // A model that generates attends to the prompt in each continuation (the fuzzers run
    // millions of these: no separate prompt-only run).
    let runs = if info.generates {
        vec![
            GenerateOptions { max_new_tokens: 3, ..GenerateOptions::default() },
            GenerateOptions {
                max_new_tokens: 3,
                sampling: Sampling { temperature: 0.8, top_k: 5, seed: 7 },
            },
        ]
    } else {
        vec![GenerateOptions::default()]
    };
    for options in runs {
        match model.attend_generating(TEXT, &options) {
            Ok(a) => {
                let result = AttendResult::new(&model.manifest.id, TEXT, &a, 0.0, |v| v);
                serde_json::to_writer(std::io::sink(), &result)
                    .expect("an attend result serialises");
            }
            Err(e) => return Outcome::ForwardFailed(e.to_string()),
        }
    }
    Outcome::Attended
}

thread_local! {
    static PANICKED: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f`, failing with the message of any panic inside it, caught or not (the library
/// catches those of the `tokenizers` crate natively; in wasm a panic aborts the module).
pub fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> T {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.with(|p| *p.borrow_mut() = Some(info.to_string()));
            default(info);
        }));
    });
    PANICKED.with(|p| p.borrow_mut().take());
    let out = f();
    if let Some(message) = PANICKED.with(|p| p.borrow_mut().take()) {
        panic!("{what}: panicked (in wasm this kills the module): {message}");
    }
    out
}

// ---- deterministic small weights -------------------------------------------------------------

/// `n` values in [-0.5, 0.5) from a xorshift seeded by `seed`.
pub fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

// ---- the tiny BERT ---------------------------------------------------------------------------

pub struct BertShape {
    pub hidden: usize,
    pub heads: usize,
    pub layers: usize,
    pub ffn: usize,
    pub positions: usize,
}

impl BertShape {
    pub const DEFAULT: BertShape =
        BertShape { hidden: 8, heads: 2, layers: 2, ffn: 16, positions: 16 };
}

const BERT_SPECIAL: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
const BERT_WORDS: [&str; 24] = [
    "the", "cat", "sat", "on", "mat", "a", ",", ".", "!", "fi", "e", "s", "t", "c", "m", "##s",
    "##t", "##e", "##a", "##at", "##i", "##h", "h", "o",
];

fn bert_vocab() -> Vec<&'static str> {
    BERT_SPECIAL.iter().chain(BERT_WORDS.iter()).copied().collect()
}

pub fn bert_config(s: &BertShape) -> Vec<u8> {
    let c = json!({
        "architectures": ["BertModel"], "model_type": "bert", "vocab_size": bert_vocab().len(), "hidden_size": s.hidden,
        "num_hidden_layers": s.layers, "num_attention_heads": s.heads, "intermediate_size": s.ffn,
        "max_position_embeddings": s.positions, "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu"
    });
    serde_json::to_vec_pretty(&c).unwrap()
}

/// F32 tensors, with the layer norms in F16 and the FFN input weights in BF16 (so every float
/// type the reader converts is present), and the integer `position_ids` buffer it skips.
pub fn bert_safetensors(s: &BertShape) -> Vec<u8> {
    let (d, v) = (s.hidden, bert_vocab().len());
    let mut tensors: Vec<(String, &str, Vec<usize>, Vec<u8>)> = Vec::new();
    let f32s = |seed: u64, shape: &[usize]| {
        values(seed, shape.iter().product())
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<u8>>()
    };
    let mut seed = 0;
    let mut f32_tensor =
        |t: &mut Vec<(String, &str, Vec<usize>, Vec<u8>)>, name: String, shape: Vec<usize>| {
            seed += 1;
            let data = f32s(seed, &shape);
            t.push((name, "F32", shape, data));
        };
    let layer_norm = |t: &mut Vec<(String, &str, Vec<usize>, Vec<u8>)>, prefix: &str| {
        // F16 1.0 and 0.0.
        t.push((format!("{prefix}.weight"), "F16", vec![d], 0x3c00u16.to_le_bytes().repeat(d)));
        t.push((format!("{prefix}.bias"), "F16", vec![d], vec![0; 2 * d]));
    };
    f32_tensor(&mut tensors, "embeddings.word_embeddings.weight".into(), vec![v, d]);
    f32_tensor(&mut tensors, "embeddings.position_embeddings.weight".into(), vec![s.positions, d]);
    f32_tensor(&mut tensors, "embeddings.token_type_embeddings.weight".into(), vec![2, d]);
    layer_norm(&mut tensors, "embeddings.LayerNorm");
    tensors.push((
        "embeddings.position_ids".into(),
        "I64",
        vec![1, s.positions],
        (0..s.positions as i64).flat_map(|i| i.to_le_bytes()).collect(),
    ));
    for l in 0..s.layers {
        let p = format!("encoder.layer.{l}");
        for m in ["query", "key", "value"] {
            f32_tensor(&mut tensors, format!("{p}.attention.self.{m}.weight"), vec![d, d]);
            f32_tensor(&mut tensors, format!("{p}.attention.self.{m}.bias"), vec![d]);
        }
        f32_tensor(&mut tensors, format!("{p}.attention.output.dense.weight"), vec![d, d]);
        f32_tensor(&mut tensors, format!("{p}.attention.output.dense.bias"), vec![d]);
        layer_norm(&mut tensors, &format!("{p}.attention.output.LayerNorm"));
        let bf16: Vec<u8> = values(100 + l as u64, s.ffn * d)
            .iter()
            .flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes())
            .collect();
        tensors.push((format!("{p}.intermediate.dense.weight"), "BF16", vec![s.ffn, d], bf16));
        f32_tensor(&mut tensors, format!("{p}.intermediate.dense.bias"), vec![s.ffn]);
        f32_tensor(&mut tensors, format!("{p}.output.dense.weight"), vec![d, s.ffn]);
        f32_tensor(&mut tensors, format!("{p}.output.dense.bias"), vec![d]);
        layer_norm(&mut tensors, &format!("{p}.output.LayerNorm"));
    }
    let mut header = serde_json::Map::new();
    header.insert("__metadata__".into(), json!({"format": "pt"}));
    let mut data = Vec::new();
    for (name, dtype, shape, bytes) in tensors {
        let start = data.len();
        data.extend_from_slice(&bytes);
        header.insert(
            name,
            json!({"dtype": dtype, "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let header = serde_json::to_vec(&Value::Object(header)).unwrap();
    [&(header.len() as u64).to_le_bytes()[..], &header, &data].concat()
}

fn added_token(id: usize, content: &str) -> Value {
    json!({"id": id, "content": content, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
}

/// WordPiece with the BERT normaliser, pre-tokeniser, `[CLS] … [SEP]` template and decoder.
pub fn bert_tokenizer() -> Vec<u8> {
    let vocab: serde_json::Map<String, Value> =
        bert_vocab().iter().enumerate().map(|(i, t)| (t.to_string(), json!(i))).collect();
    let special = |t: &str, id: usize| json!({"id": t, "ids": [id], "tokens": [t]});
    let t = json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": BERT_SPECIAL.iter().enumerate().map(|(i, t)| added_token(i, t)).collect::<Vec<_>>(),
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": special("[CLS]", 2), "[SEP]": special("[SEP]", 3)}
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab}
    });
    serde_json::to_vec_pretty(&t).unwrap()
}

pub fn bert_manifest() -> Vec<u8> {
    let m = json!({"id": "tiny-bert", "name": "Tiny BERT", "architecture": "bert", "files": ["config.json", "model.safetensors", "tokenizer.json"], "license": "MIT", "credit": "", "example": "The cat sat."});
    serde_json::to_vec_pretty(&m).unwrap()
}

/// The tiny BERT folder as the page hands it over (no manifest: inferred from config.json).
pub fn bert_files() -> HashMap<String, Vec<u8>> {
    let s = BertShape::DEFAULT;
    [
        ("config.json", bert_config(&s)),
        ("model.safetensors", bert_safetensors(&s)),
        ("tokenizer.json", bert_tokenizer()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

// ---- the tiny GPT-2 (a GPT2LMHeadModel folder; also tests/gpt2.rs) ---------------------------

/// Conv1D weights stored `[in, out]`, a byte-level tokenizer.json with every byte a token.
pub mod gpt2 {
    use std::collections::HashMap;

    pub const D: usize = 16;
    pub const HEADS: usize = 4;
    pub const LAYERS: usize = 2;
    pub const POSITIONS: usize = 40;
    /// 256 byte tokens, then `<|endoftext|>`.
    pub const VOCAB: usize = 257;
    pub const EOT: u32 = 256;

    pub fn tokenizer_json() -> Vec<u8> {
        let vocab: serde_json::Map<String, serde_json::Value> = super::byte_symbols()
            .enumerate()
            .map(|(i, c)| (c.to_string(), i.into()))
            .chain([("<|endoftext|>".to_string(), EOT.into())])
            .collect();
        let byte_level = serde_json::json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true});
        serde_json::to_vec(&serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null,
            "added_tokens": [{"id": EOT, "content": "<|endoftext|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
            "normalizer": null, "pre_tokenizer": byte_level, "post_processor": byte_level, "decoder": byte_level,
            "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "vocab": vocab, "merges": []}
        }))
        .unwrap()
    }

    pub fn config_json() -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "model_type": "gpt2", "vocab_size": VOCAB, "n_positions": POSITIONS, "n_embd": D, "n_layer": LAYERS, "n_head": HEADS,
            "n_inner": null, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "bos_token_id": EOT, "eos_token_id": EOT
        }))
        .unwrap()
    }

    /// Seeded values in [-scale, scale).
    pub fn random(n: usize, seed: &mut u64, scale: f32) -> Vec<f32> {
        (0..n)
            .map(|_| {
                *seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((*seed >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
            })
            .collect()
    }

    /// GPT2LMHeadModel's tensors with `prefix` (`transformer.` or none), Conv1D weights `[in, out]`.
    pub fn tensors(prefix: &str) -> Vec<(String, Vec<usize>, Vec<f32>)> {
        let mut seed = 2u64;
        let mut t = Vec::new();
        let mut add = |name: String, shape: Vec<usize>, scale: f32, offset: f32, seed: &mut u64| {
            let data = random(shape.iter().product(), seed, scale)
                .into_iter()
                .map(|v| v + offset)
                .collect();
            t.push((format!("{prefix}{name}"), shape, data));
        };
        add("wte.weight".into(), vec![VOCAB, D], 1.0, 0.0, &mut seed);
        add("wpe.weight".into(), vec![POSITIONS, D], 0.5, 0.0, &mut seed);
        for i in 0..LAYERS {
            for ln in ["ln_1", "ln_2"] {
                add(format!("h.{i}.{ln}.weight"), vec![D], 0.3, 1.0, &mut seed);
                add(format!("h.{i}.{ln}.bias"), vec![D], 0.2, 0.0, &mut seed);
            }
            for (name, inp, out, scale) in [
                ("attn.c_attn", D, 3 * D, 1.0),
                ("attn.c_proj", D, D, 0.4),
                ("mlp.c_fc", D, 4 * D, 0.4),
                ("mlp.c_proj", 4 * D, D, 0.4),
            ] {
                add(format!("h.{i}.{name}.weight"), vec![inp, out], scale, 0.0, &mut seed);
                add(format!("h.{i}.{name}.bias"), vec![out], 0.2, 0.0, &mut seed);
            }
        }
        add("ln_f.weight".into(), vec![D], 0.3, 1.0, &mut seed);
        add("ln_f.bias".into(), vec![D], 0.2, 0.0, &mut seed);
        t
    }

    pub fn safetensors(tensors: &[(String, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
        let (mut header, mut data) = (serde_json::Map::new(), Vec::new());
        for (name, shape, values) in tensors {
            let start = data.len();
            values.iter().for_each(|v| data.extend_from_slice(&v.to_le_bytes()));
            header.insert(name.clone(), serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}));
        }
        let head = serde_json::to_vec(&header).unwrap();
        let mut out = (head.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(&head);
        out.extend_from_slice(&data);
        out
    }

    /// The folder as the page hands it over (no manifest: inferred from config.json).
    pub fn files() -> HashMap<String, Vec<u8>> {
        [
            ("config.json", config_json()),
            ("model.safetensors", safetensors(&tensors("transformer."))),
            ("tokenizer.json", tokenizer_json()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

// ---- the tiny opus-mt (a Hugging Face MarianMTModel folder; also tests/opus_mt.rs) -----------

pub mod opus_mt {
    use super::values;
    use serde_json::{json, Value};
    use std::collections::HashMap;

    pub const PIECES: [&str; 16] = [
        "</s>", "<unk>", "▁the", "▁cat", "▁sat", "▁on", "▁mat", "▁o", "▁gato", "a", "t", "e", "s",
        ".", "▁", "<pad>",
    ];
    pub const D: usize = 8;
    pub const FFN: usize = 16;
    pub const LAYERS: usize = 2;
    pub const HEADS: usize = 2;

    pub fn config(edit: impl FnOnce(&mut Value)) -> Vec<u8> {
        let pad = PIECES.len() - 1;
        let mut c = json!({
            "model_type": "marian", "vocab_size": PIECES.len(), "d_model": D, "encoder_layers": LAYERS, "decoder_layers": LAYERS,
            "encoder_attention_heads": HEADS, "decoder_attention_heads": HEADS, "encoder_ffn_dim": FFN, "decoder_ffn_dim": FFN,
            "activation_function": "swish", "max_position_embeddings": 32, "scale_embedding": true, "eos_token_id": 0,
            "pad_token_id": pad, "decoder_start_token_id": pad
        });
        edit(&mut c);
        serde_json::to_vec(&c).unwrap()
    }

    /// Every tensor of MarianMTModel, `[out, in]`, f32; `skip`/`reshape` break one on purpose.
    pub fn safetensors(broken: Option<&str>) -> Vec<u8> {
        let mut tensors: Vec<(String, Vec<usize>)> = vec![
            ("model.shared.weight".into(), vec![PIECES.len(), D]),
            ("final_logits_bias".into(), vec![1, PIECES.len()]),
        ];
        for (stack, attns) in
            [("encoder", &["self_attn"][..]), ("decoder", &["self_attn", "encoder_attn"][..])]
        {
            for l in 0..LAYERS {
                let p = format!("model.{stack}.layers.{l}");
                for a in attns {
                    for m in ["q", "k", "v", "out"] {
                        tensors.push((format!("{p}.{a}.{m}_proj.weight"), vec![D, D]));
                        tensors.push((format!("{p}.{a}.{m}_proj.bias"), vec![D]));
                    }
                    tensors.push((format!("{p}.{a}_layer_norm.weight"), vec![D]));
                    tensors.push((format!("{p}.{a}_layer_norm.bias"), vec![D]));
                }
                tensors.extend([
                    (format!("{p}.fc1.weight"), vec![FFN, D]),
                    (format!("{p}.fc1.bias"), vec![FFN]),
                    (format!("{p}.fc2.weight"), vec![D, FFN]),
                    (format!("{p}.fc2.bias"), vec![D]),
                ]);
                tensors.extend([
                    (format!("{p}.final_layer_norm.weight"), vec![D]),
                    (format!("{p}.final_layer_norm.bias"), vec![D]),
                ]);
            }
        }
        let mut header = serde_json::Map::new();
        let mut data = Vec::new();
        for (i, (name, mut shape)) in tensors.into_iter().enumerate() {
            if broken == Some(name.as_str()) {
                shape[0] += 1;
            }
            // Layer norms near 1 and everything else in [-1, 1): peaked maps, no degenerate rows.
            let ln = name.ends_with("norm.weight");
            let v: Vec<f32> = values(i as u64 + 1, shape.iter().product())
                .iter()
                .map(|x| if ln { 1.0 + x } else { 2.0 * x })
                .collect();
            let start = data.len();
            data.extend(v.iter().flat_map(|x| x.to_le_bytes()));
            header.insert(
                name,
                json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
            );
        }
        let header = serde_json::to_vec(&Value::Object(header)).unwrap();
        [&(header.len() as u64).to_le_bytes()[..], &header, &data].concat()
    }

    /// Unigram over [`PIECES`], Metaspace word starts, no post-processor (the model appends `</s>`).
    pub fn tokenizer() -> Vec<u8> {
        let special = |id: usize| json!({"id": id, "content": PIECES[id], "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true});
        let vocab: Vec<Value> =
            PIECES.iter().map(|p| json!([p, if p.len() > 3 { -2.0 } else { -6.0 }])).collect();
        let t = json!({
            "version": "1.0", "truncation": null, "padding": null,
            "added_tokens": [special(0), special(1), special(PIECES.len() - 1)],
            "normalizer": null,
            "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
            "post_processor": null,
            "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
            "model": {"type": "Unigram", "unk_id": 1, "vocab": vocab, "byte_fallback": false}
        });
        serde_json::to_vec(&t).unwrap()
    }

    /// The folder as the page hands it over (no manifest: inferred from config.json).
    pub fn files() -> HashMap<String, Vec<u8>> {
        [
            ("config.json", config(|_| {})),
            ("model.safetensors", safetensors(None)),
            ("tokenizer.json", tokenizer()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

// ---- the tiny Marian translator ---------------------------------------------------------------

pub const MARIAN_BIN: &str = "model.tiny.bin";
const MARIAN_DIM: usize = 8;
const MARIAN_FFN: usize = 8;
const MARIAN_VOCAB: [&str; 16] = [
    "</s>", "<unk>", "▁", "▁the", "▁cat", "▁sat", "▁on", "▁mat", "a", "e", "t", "s", ".", ",", "c",
    "m",
];
const MARIAN_YML: &str =
    "type: transformer\ntransformer-heads: 2\ntransformer-decoder-autoreg: rnn\ndec-cell: ssru\n\
transformer-postprocess: dan\ntransformer-preprocess: \"\"\ntransformer-ffn-activation: relu\n";

const TYPE_F32: u64 = 0x404;
const TYPE_INT8: u64 = 0x4101;
const TYPE_CHAR: u64 = 0x101;

/// A Marian `.bin` (see src/weights/marian_bin.rs) of `(name, type, shape, data)`.
fn marian_file(tensors: &[(String, u64, Vec<i32>, Vec<u8>)]) -> Vec<u8> {
    let mut f = Vec::new();
    let put = |f: &mut Vec<u8>, v: u64| f.extend_from_slice(&v.to_le_bytes());
    put(&mut f, 1);
    put(&mut f, tensors.len() as u64);
    for (name, kind, shape, data) in tensors {
        for v in [name.len() as u64 + 1, *kind, shape.len() as u64, data.len() as u64] {
            put(&mut f, v);
        }
    }
    for (name, ..) in tensors {
        f.extend_from_slice(name.as_bytes());
        f.push(0);
    }
    for (_, _, shape, _) in tensors {
        shape.iter().for_each(|d| f.extend_from_slice(&d.to_le_bytes()));
    }
    put(&mut f, 0);
    for (.., data) in tensors {
        f.extend_from_slice(data);
    }
    f
}

/// One encoder and one decoder layer, `Wemb` int8, the other matrices int8 (`quantized`) or
/// f32, vectors f32, with the embedded model.yml and a `_QuantMultA` the reader skips.
pub fn marian_bin(quantized: bool) -> Vec<u8> {
    let (d, ffn, vocab) = (MARIAN_DIM as i32, MARIAN_FFN as i32, MARIAN_VOCAB.len() as i32);
    let mut seed = 0u64;
    let mut t: Vec<(String, u64, Vec<i32>, Vec<u8>)> = Vec::new();
    let mut int8 =
        |t: &mut Vec<(String, u64, Vec<i32>, Vec<u8>)>, name: String, shape: Vec<i32>| {
            seed += 1;
            let n: i32 = shape.iter().product();
            let mut data: Vec<u8> =
                values(seed, n as usize).iter().map(|x| (x * 254.0) as i8 as u8).collect();
            data.extend_from_slice(&127f32.to_le_bytes());
            t.push((name, TYPE_INT8, shape, data));
        };
    let f32s = |seed: u64, shape: &[i32]| {
        values(seed, shape.iter().product::<i32>() as usize)
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<u8>>()
    };
    let ones = |n: i32| 1f32.to_le_bytes().repeat(n as usize);
    let mut yml = MARIAN_YML.as_bytes().to_vec();
    yml.push(0);
    t.push(("special:model.yml".into(), TYPE_CHAR, vec![yml.len() as i32], yml));
    int8(&mut t, "Wemb".into(), vec![vocab, d]);
    let mut matrix =
        |t: &mut Vec<(String, u64, Vec<i32>, Vec<u8>)>, name: String, shape: Vec<i32>, s: u64| {
            if quantized {
                int8(t, name, shape);
            } else {
                t.push((name, TYPE_F32, shape.clone(), f32s(s, &shape)));
            }
        };
    let vector = |t: &mut Vec<(String, u64, Vec<i32>, Vec<u8>)>, name: String, n: i32, s: u64| {
        t.push((name, TYPE_F32, vec![1, n], f32s(s, &[n])))
    };
    let layer_norm =
        |t: &mut Vec<(String, u64, Vec<i32>, Vec<u8>)>, scale: String, bias: String| {
            t.push((scale, TYPE_F32, vec![1, d], ones(d)));
            t.push((bias, TYPE_F32, vec![1, d], vec![0; 4 * d as usize]));
        };
    let mut s = 1000;
    for p in ["encoder_l1_self", "decoder_l1_context"] {
        for m in ["q", "k", "v", "o"] {
            s += 2;
            matrix(&mut t, format!("{p}_W{m}"), vec![d, d], s);
            vector(&mut t, format!("{p}_b{m}"), d, s + 1);
        }
        layer_norm(&mut t, format!("{p}_Wo_ln_scale"), format!("{p}_Wo_ln_bias"));
    }
    for p in ["encoder_l1", "decoder_l1"] {
        // Int8 matrices are stored [out, in] under a header that says [in, out].
        matrix(
            &mut t,
            format!("{p}_ffn_W1"),
            if quantized { vec![d, ffn] } else { vec![ffn, d] },
            s + 10,
        );
        vector(&mut t, format!("{p}_ffn_b1"), ffn, s + 11);
        matrix(
            &mut t,
            format!("{p}_ffn_W2"),
            if quantized { vec![ffn, d] } else { vec![d, ffn] },
            s + 12,
        );
        vector(&mut t, format!("{p}_ffn_b2"), d, s + 13);
        layer_norm(&mut t, format!("{p}_ffn_ffn_ln_scale"), format!("{p}_ffn_ffn_ln_bias"));
        s += 20;
    }
    matrix(&mut t, "decoder_l1_rnn_W".into(), vec![d, d], 2000);
    matrix(&mut t, "decoder_l1_rnn_Wf".into(), vec![d, d], 2001);
    vector(&mut t, "decoder_l1_rnn_bf".into(), d, 2002);
    layer_norm(&mut t, "decoder_l1_rnn_ffn_ln_scale".into(), "decoder_l1_rnn_ffn_ln_bias".into());
    vector(&mut t, "decoder_ff_logit_out_b".into(), vocab, 2003);
    t.push((
        "encoder_l1_self_Wq_QuantMultA".into(),
        TYPE_F32,
        vec![1],
        1f32.to_le_bytes().to_vec(),
    ));
    marian_file(&t)
}

/// A `Precompiled` charsmap (the SentencePiece normaliser of Marian vocabularies) that maps `A`
/// to `a`: a 256-unit double-array trie whose root (unit 0, offset 0) has at unit 65 the label
/// `A` with a leaf and offset 3, whose leaf at 65 ^ 3 = 66 holds replacement offset 0, `a\0`.
fn tiny_charsmap() -> String {
    let mut trie = [0u32; 256];
    trie[65] = (3 << 10) | (1 << 8) | 65;
    trie[66] = 0;
    let mut bytes = ((trie.len() * 4) as u32).to_le_bytes().to_vec();
    trie.iter().for_each(|u| bytes.extend_from_slice(&u.to_le_bytes()));
    bytes.extend_from_slice(b"a\0");
    b64_encode(&bytes)
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (a `precompiled_charsmap` is stored so).
pub fn b64_encode(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                B64[(n >> (18 - 6 * i)) as usize & 63] as char
            } else {
                '='
            });
        }
    }
    out
}

/// The inverse of [`b64_encode`] (padding ignored); for tests/hardening.rs.
#[allow(dead_code)]
pub fn b64_decode(s: &str) -> Vec<u8> {
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0);
    for c in s.bytes().take_while(|&c| c != b'=') {
        acc = acc << 6 | B64.iter().position(|&b| b == c).unwrap() as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// Unigram over [`MARIAN_VOCAB`] with the normaliser, pre-tokeniser and decoder of the
/// Bergamot vocabularies (`</s>` is id 0).
pub fn marian_tokenizer() -> Vec<u8> {
    let vocab: Vec<Value> = MARIAN_VOCAB
        .iter()
        .enumerate()
        .map(|(i, p)| json!([p, if i < 2 { 0.0 } else { -1.0 - i as f64 / 4.0 }]))
        .collect();
    let t = json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [added_token(0, "</s>"), added_token(1, "<unk>")],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap": tiny_charsmap()},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}
        ]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
        "post_processor": null,
        "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
        "model": {"type": "Unigram", "unk_id": 1, "vocab": vocab, "byte_fallback": false}
    });
    serde_json::to_vec_pretty(&t).unwrap()
}

pub fn marian_manifest() -> Vec<u8> {
    let m = json!({"id": "tiny-marian", "name": "Tiny Marian", "architecture": "marian", "files": [MARIAN_BIN, "tokenizer.json"], "license": "MIT", "credit": "", "example": "The cat sat."});
    serde_json::to_vec_pretty(&m).unwrap()
}

/// The tiny Marian folder as the page hands it over (no manifest: inferred from the `.bin`).
pub fn marian_files() -> HashMap<String, Vec<u8>> {
    [(MARIAN_BIN, marian_bin(true)), ("tokenizer.json", marian_tokenizer())]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

// ---- the tiny Llama (one GGUF file) -----------------------------------------------------------

pub const LLAMA_GGUF: &str = "tiny-llama.gguf";
pub const LLAMA_MANIFEST: &str = r#"{"id": "tiny-llama", "name": "Tiny Llama", "architecture": "llama", "files": ["tiny-llama.gguf"], "license": "MIT", "credit": "", "example": "The cat sat."}"#;

pub struct LlamaShape {
    pub layers: usize,
    pub d: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub ffn: usize,
    /// No `output.weight`: the head is the embedding.
    pub tied: bool,
    pub add_bos: bool,
}

impl LlamaShape {
    pub const DEFAULT: LlamaShape =
        LlamaShape { layers: 2, d: 64, heads: 4, kv_heads: 2, ffn: 96, tied: false, add_bos: true };
    pub const SMALL: LlamaShape =
        LlamaShape { layers: 1, d: 32, heads: 2, kv_heads: 1, ffn: 64, tied: true, add_bos: false };
}

/// GGUF metadata value types (gguf.h's GGUF_TYPE_*) as llama.cpp writes the keys below.
pub const GGUF_U32: u32 = 4;
pub const GGUF_I32: u32 = 5;
pub const GGUF_F32: u32 = 6;
pub const GGUF_BOOL: u32 = 7;
pub const GGUF_STR: u32 = 8;

/// ggml tensor types.
pub const GGML_F32: u32 = 0;
pub const GGML_F16: u32 = 1;
pub const GGML_Q4_0: u32 = 2;
pub const GGML_Q4_1: u32 = 3;
pub const GGML_Q8_0: u32 = 8;

/// Control tokens (ids 0 and 1: BOS and EOS), then GPT-2's 256 byte symbols, then the merges'
/// results.
const LLAMA_CONTROL: [&str; 2] = ["<|endoftext|>", "<|im_end|>"];
const LLAMA_MERGES: [&str; 12] =
    ["Ġ t", "h e", "Ġt he", "a t", "Ġ c", "Ġc at", "Ġ s", "Ġs at", "Ġ m", "Ġm at", "o n", "Ġ on"];

/// GPT-2's `bytes_to_unicode`: printable bytes stand for themselves, the others for U+0100 on.
fn byte_symbols() -> impl Iterator<Item = char> {
    let printable =
        |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let mut shifted = 255;
    (0..256u32).map(move |b| {
        if !printable(b) {
            shifted += 1;
        }
        char::from_u32(if printable(b) { b } else { shifted }).unwrap()
    })
}

pub fn llama_tokens() -> Vec<String> {
    let merged = LLAMA_MERGES.iter().map(|m| m.replace(' ', ""));
    LLAMA_CONTROL
        .iter()
        .map(|t| t.to_string())
        .chain(byte_symbols().map(String::from))
        .chain(merged)
        .collect()
}

/// f32 → f16 bits, truncating (values here are small and normal; tinier ones become 0).
fn f16_bits(x: f32) -> [u8; 2] {
    let b = x.to_bits();
    let sign = (b >> 16) & 0x8000;
    let exp = ((b >> 23) & 0xff) as i32 - 112;
    let bits = if exp <= 0 { sign } else { sign | (exp as u32) << 10 | (b >> 13) & 0x3ff };
    (bits as u16).to_le_bytes()
}

/// `v` in ggml type `ty`: its bytes as a GGUF stores them (the quantised formats by the rules
/// of src/weights/ggml.rs `BlockFormat`).
pub fn ggml_bytes(ty: u32, v: &[f32]) -> Vec<u8> {
    // The scale as the file holds it (f16), so that values round against it.
    let half = |x: f32| attnviz::weights::ggml::f16_to_f32(u16::from_le_bytes(f16_bits(x)));
    let mut out = Vec::new();
    match ty {
        GGML_F32 => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        GGML_F16 => v.iter().for_each(|x| out.extend_from_slice(&f16_bits(*x))),
        _ => {
            for b in v.chunks(32) {
                let (lo, hi) =
                    b.iter().fold((f32::MAX, f32::MIN), |(l, h), &x| (l.min(x), h.max(x)));
                let amax = lo.abs().max(hi.abs());
                match ty {
                    GGML_Q8_0 => {
                        let d = half(amax / 127.0);
                        out.extend_from_slice(&f16_bits(d));
                        out.extend(
                            b.iter().map(|x| (x / d).round().clamp(-127.0, 127.0) as i8 as u8),
                        );
                    }
                    GGML_Q4_0 => {
                        let d = half(amax / 7.0);
                        out.extend_from_slice(&f16_bits(d));
                        let q = |x: f32| ((x / d).round() + 8.0).clamp(0.0, 15.0) as u8;
                        out.extend((0..16).map(|j| q(b[j]) | q(b[j + 16]) << 4));
                    }
                    _ => {
                        let (d, m) = (half((hi - lo) / 15.0), half(lo));
                        out.extend_from_slice(&f16_bits(d));
                        out.extend_from_slice(&f16_bits(m));
                        let q = |x: f32| ((x - m) / d).round().clamp(0.0, 15.0) as u8;
                        out.extend((0..16).map(|j| q(b[j]) | q(b[j + 16]) << 4));
                    }
                }
            }
        }
    }
    out
}

/// The metadata keys and types llama.cpp's converter writes for a Llama (those of
/// SmolLM2-135M-Instruct.Q4_1.gguf), `(key, GGUF type, value)`.
pub fn llama_metadata(s: &LlamaShape) -> Vec<(&'static str, u32, GgufValue)> {
    let u = |v: usize| GgufValue::Uint(v as u64);
    let strs = |v: Vec<String>| GgufValue::Array(v.into_iter().map(GgufValue::Str).collect());
    let tokens = llama_tokens();
    let types = tokens
        .iter()
        .enumerate()
        .map(|(i, _)| GgufValue::Int(if i < LLAMA_CONTROL.len() { 3 } else { 1 }))
        .collect();
    vec![
        ("general.architecture", GGUF_STR, GgufValue::Str("llama".into())),
        ("general.type", GGUF_STR, GgufValue::Str("model".into())),
        ("general.name", GGUF_STR, GgufValue::Str("Tiny Llama".into())),
        ("llama.block_count", GGUF_U32, u(s.layers)),
        ("llama.context_length", GGUF_U32, u(128)),
        ("llama.embedding_length", GGUF_U32, u(s.d)),
        ("llama.feed_forward_length", GGUF_U32, u(s.ffn)),
        ("llama.attention.head_count", GGUF_U32, u(s.heads)),
        ("llama.attention.head_count_kv", GGUF_U32, u(s.kv_heads)),
        ("llama.rope.freq_base", GGUF_F32, GgufValue::Float(10000.0)),
        ("llama.attention.layer_norm_rms_epsilon", GGUF_F32, GgufValue::Float(1e-5)),
        ("general.file_type", GGUF_U32, u(3)),
        ("llama.vocab_size", GGUF_U32, u(tokens.len())),
        ("llama.rope.dimension_count", GGUF_U32, u(s.d / s.heads)),
        ("tokenizer.ggml.add_space_prefix", GGUF_BOOL, GgufValue::Bool(false)),
        ("tokenizer.ggml.add_bos_token", GGUF_BOOL, GgufValue::Bool(s.add_bos)),
        ("tokenizer.ggml.model", GGUF_STR, GgufValue::Str("gpt2".into())),
        ("tokenizer.ggml.pre", GGUF_STR, GgufValue::Str("smollm".into())),
        ("tokenizer.ggml.tokens", GGUF_STR, strs(tokens)),
        ("tokenizer.ggml.token_type", GGUF_I32, GgufValue::Array(types)),
        (
            "tokenizer.ggml.merges",
            GGUF_STR,
            strs(LLAMA_MERGES.iter().map(|m| m.to_string()).collect()),
        ),
        ("tokenizer.ggml.bos_token_id", GGUF_U32, u(0)),
        ("tokenizer.ggml.eos_token_id", GGUF_U32, u(1)),
        ("tokenizer.ggml.unknown_token_id", GGUF_U32, u(0)),
        ("tokenizer.ggml.padding_token_id", GGUF_U32, u(1)),
        ("general.quantization_version", GGUF_U32, u(2)),
    ]
}

/// The tensors, `(name, dims fastest first, ggml type, bytes)`, in every type the reader
/// decodes: Q8_0 embedding, Q4_1 / Q4_0 / Q8_0 / F16 projections (varying by layer), F32 and
/// F16 norms, a Q4_0 output head unless tied.
pub fn llama_tensors(s: &LlamaShape) -> Vec<(String, Vec<usize>, u32, Vec<u8>)> {
    let (d, kv, vocab) = (s.d, s.kv_heads * (s.d / s.heads), llama_tokens().len());
    let mut seed = 5000;
    let mut t = Vec::new();
    let mut push = |name: String, dims: Vec<usize>, ty: u32| {
        seed += 1;
        let n = dims.iter().product();
        let v: Vec<f32> = if dims.len() == 1 {
            values(seed, n).iter().map(|x| 1.0 + x / 4.0).collect()
        } else {
            values(seed, n)
        };
        t.push((name, dims, ty, ggml_bytes(ty, &v)));
    };
    push("token_embd.weight".into(), vec![d, vocab], GGML_Q8_0);
    for i in 0..s.layers {
        let odd = i % 2 == 1;
        let b = |m: &str| format!("blk.{i}.{m}.weight");
        push(b("attn_norm"), vec![d], GGML_F32);
        push(b("ffn_down"), vec![s.ffn, d], if odd { GGML_Q4_1 } else { GGML_F16 });
        push(b("ffn_gate"), vec![d, s.ffn], GGML_Q4_0);
        push(b("ffn_up"), vec![d, s.ffn], GGML_Q8_0);
        push(b("ffn_norm"), vec![d], if odd { GGML_F16 } else { GGML_F32 });
        push(b("attn_k"), vec![d, kv], GGML_Q4_0);
        push(b("attn_output"), vec![d, d], if odd { GGML_Q8_0 } else { GGML_Q4_1 });
        push(b("attn_q"), vec![d, d], GGML_Q4_1);
        push(b("attn_v"), vec![d, kv], if odd { GGML_F16 } else { GGML_Q8_0 });
    }
    push("output_norm.weight".into(), vec![d], GGML_F32);
    if !s.tied {
        push("output.weight".into(), vec![d, vocab], GGML_Q4_0);
    }
    t
}

/// A GGUF file of `metadata` and `tensors` (see [`llama_metadata`], [`llama_tensors`]).
pub fn gguf_file(
    metadata: &[(&str, u32, GgufValue)],
    tensors: &[(String, Vec<usize>, u32, Vec<u8>)],
) -> Vec<u8> {
    let tensors: Vec<(&str, Vec<usize>, u32, Vec<u8>)> =
        tensors.iter().map(|(n, d, ty, b)| (n.as_str(), d.clone(), *ty, b.clone())).collect();
    write::gguf_typed(metadata, &tensors)
}

/// The tiny Llama as one GGUF file.
pub fn llama_gguf(s: &LlamaShape) -> Vec<u8> {
    gguf_file(&llama_metadata(s), &llama_tensors(s))
}

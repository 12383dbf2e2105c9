//! Issue 9: a malformed GGUF (truncated, bit-flipped, absurd counts, shapes, types or
//! hyperparameters) is an `Err` whose message names the problem, never a panic, a huge
//! allocation or a hang. Inputs are the real SmolLM2 GGUF (fetched by `make models`), cut and
//! flipped, and the tiny Llama of the fuzzer (tests/support/fuzz_models.rs) with one thing
//! made absurd. A file that still loads must also attend and generate.
#![cfg(not(target_arch = "wasm32"))]

use crate::fuzz_models;

use attnviz::models::{Manifest, Model};
use attnviz::result::{GenerateOptions, Sampling};
use attnviz::weights::gguf::{Value, MAX_METADATA_VALUES, MAX_TENSORS};
use fuzz_models::*;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// CPU time this thread has used so far. "Refused quickly" is a bound on the work a bad file
/// costs: wall time would also count whatever else the machine runs meanwhile (a parallel test,
/// a busy neighbour), and failed under load although the loader did no more work.
fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes one timespec into `t`, which lives for the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

const GGUF_U64: u32 = 10;

fn smollm2() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
        std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} — run `make models` first", path.display()))
    })
}

/// The page's path for a GGUF: load, then (if it loads) attend to `text` and generate with
/// each of `options`. `Err` is the load's message; a panic anywhere fails the test.
fn load_and_run_with(
    what: &str,
    bytes: Vec<u8>,
    text: &str,
    options: &[GenerateOptions],
) -> Result<(), String> {
    no_panic(what, || {
        let manifest = Manifest::from_json(LLAMA_MANIFEST.as_bytes()).unwrap();
        let model = Model::load_owned(manifest, [(LLAMA_GGUF.to_string(), bytes)].into())
            .map_err(|e| e.to_string())?;
        let _ = model.info();
        for o in options {
            let _ = model.attend_generating(text, o);
        }
        Ok(())
    })
}

/// Two tokens generated greedily, two sampled.
fn load_and_run(what: &str, bytes: Vec<u8>) -> Result<(), String> {
    let options = [
        GenerateOptions { max_new_tokens: 2, ..GenerateOptions::default() },
        GenerateOptions {
            max_new_tokens: 2,
            sampling: Sampling { temperature: 0.7, top_k: 4, seed: 3 },
        },
    ];
    load_and_run_with(what, bytes, "The cat sat on the mat, é 𝔘!", &options)
}

/// `bytes` must be refused, quickly (under 1 s of this thread's CPU time), with a message that
/// says each of `needles`.
fn must_refuse(what: &str, bytes: Vec<u8>, needles: &[&str]) {
    let start = thread_cpu_time();
    let err = load_and_run(what, bytes)
        .err()
        .unwrap_or_else(|| panic!("{what}: loaded, but should have been refused"));
    for n in needles {
        assert!(err.contains(n), "{what}: the error `{err}` does not say `{n}`");
    }
    let took = thread_cpu_time() - start;
    assert!(took < Duration::from_secs(1), "{what}: took {took:?} of CPU time");
}

/// Where `key`'s value starts in a GGUF (just after the key and its type).
fn value_at(file: &[u8], key: &str) -> usize {
    let mut pattern = (key.len() as u64).to_le_bytes().to_vec();
    pattern.extend_from_slice(key.as_bytes());
    let at = file
        .windows(pattern.len())
        .position(|w| w == pattern)
        .unwrap_or_else(|| panic!("no key {key}"));
    at + pattern.len() + 4
}

fn put_u64(file: &mut [u8], at: usize, v: u64) {
    file[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// The tiny Llama with `edit` applied to its metadata and tensors.
fn tiny_with(
    edit: impl FnOnce(
        &mut Vec<(&'static str, u32, Value)>,
        &mut Vec<(String, Vec<usize>, u32, Vec<u8>)>,
    ),
) -> Vec<u8> {
    let (mut metadata, mut tensors) =
        (llama_metadata(&LlamaShape::DEFAULT), llama_tensors(&LlamaShape::DEFAULT));
    edit(&mut metadata, &mut tensors);
    gguf_file(&metadata, &tensors)
}

/// The tiny Llama with metadata `key` set to `value` of GGUF type `ty` (added if absent).
fn tiny_with_key(key: &'static str, ty: u32, value: Value) -> Vec<u8> {
    tiny_with(|m, _| match m.iter_mut().find(|(k, ..)| *k == key) {
        Some(entry) => *entry = (key, ty, value),
        None => m.push((key, ty, value)),
    })
}

/// The tiny Llama with one more tensor.
fn tiny_with_tensor(name: &str, dims: Vec<usize>, ty: u32, data: Vec<u8>) -> Vec<u8> {
    tiny_with(|_, t| t.push((name.to_string(), dims, ty, data)))
}

#[test]
fn the_tiny_llama_loads_and_generates() {
    assert_eq!(load_and_run("tiny llama", llama_gguf(&LlamaShape::DEFAULT)), Ok(()));
    assert_eq!(load_and_run("small tiny llama", llama_gguf(&LlamaShape::SMALL)), Ok(()));
}

// ---- the real file, cut and flipped ------------------------------------------------------------

/// The real file's regions: header `[0, 24)`, metadata `[24, table)`, tensor table
/// `[table, data)`, data `[data, len)`.
fn regions(file: &[u8]) -> (usize, usize) {
    let mut first = 17u64.to_le_bytes().to_vec();
    first.extend_from_slice(b"token_embd.weight");
    let table =
        file.windows(first.len()).position(|w| w == first).expect("the first tensor's name");
    let full = attnviz::weights::gguf::read(file.to_vec(), "smollm2").unwrap();
    let data = full.tensors.values().map(|t| t.start).min().unwrap();
    (table, data)
}

#[test]
fn the_real_gguf_cut_anywhere_is_an_error() {
    let file = smollm2();
    let (table, data) = regions(file);
    let mut cuts: Vec<usize> = (0..=24).collect();
    cuts.extend((1..12).map(|i| 24 + (table - 24) * i / 12));
    cuts.extend((0..12).map(|i| table + (data - table) * i / 12));
    cuts.extend((0..8).map(|i| data + (file.len() - data) * i / 8));
    cuts.extend([data - 1, file.len() - 1]);
    let mut slowest = Duration::ZERO;
    for cut in cuts {
        let start = thread_cpu_time();
        let err = load_and_run(&format!("cut at {cut}"), file[..cut].to_vec())
            .err()
            .unwrap_or_else(|| panic!("cut at {cut}: loaded"));
        slowest = slowest.max(thread_cpu_time() - start);
        assert!(
            ["ends inside", "remaining bytes", "does not fit", "not a GGUF"]
                .iter()
                .any(|n| err.contains(n)),
            "cut at {cut}: `{err}`"
        );
    }
    assert!(slowest < Duration::from_secs(1), "the slowest cut took {slowest:?} of CPU time");
}

#[test]
fn bit_flips_in_the_real_gguf_header_metadata_and_tensor_table_are_errors_or_work() {
    // Deterministic positions: the header, the scalar keys around the vocabulary, the
    // vocabulary and merges, and the tensor table. A flip may leave a valid file (a changed
    // token, a shifted tensor): it must then load and run without panicking.
    let file = smollm2();
    let (table, _) = regions(file);
    let tokens = value_at(file, "tokenizer.ggml.tokens");
    // The key after the merges starts with its length (8 bytes): `value_at` minus key, type
    // and length.
    let bos_key = "tokenizer.ggml.bos_token_id";
    let after_merges = value_at(file, bos_key) - 4 - bos_key.len() - 8;
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: usize| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s % n as u64) as usize
    };
    // (A flip that leaves the file valid costs a load and two forwards of the real model:
    // few of those, where most flips leave it valid: the vocabulary, the tensor offsets.)
    let mut spots: Vec<usize> = (0..24).collect();
    spots.extend((0..64).map(|_| 24 + next(tokens - 24)));
    spots.extend((0..12).map(|_| tokens + next(after_merges - tokens)));
    spots.extend((0..36).map(|_| after_merges + next(table - after_merges)));
    spots.extend((0..88).map(|_| table + next(file.len().min(table + 20_000) - table)));
    let (mut refused, mut loaded) = (0, 0);
    let started = Instant::now();
    for (i, &at) in spots.iter().enumerate() {
        let mut bad = file.to_vec();
        bad[at] ^= 1 << (i % 8);
        // The real model is slow to run: a short text and one greedy token (the tiny Llama's
        // tests and fuzzer sample).
        let greedy = GenerateOptions { max_new_tokens: 1, ..GenerateOptions::default() };
        match load_and_run_with(&format!("bit {} of byte {at}", i % 8), bad, "Hi é", &[greedy]) {
            Ok(()) => loaded += 1,
            Err(e) => {
                assert!(!e.is_empty());
                refused += 1;
            }
        }
    }
    eprintln!(
        "{} flips: {refused} refused, {loaded} loaded and ran, in {:?}",
        spots.len(),
        started.elapsed()
    );
    assert!(refused > spots.len() / 4, "only {refused} of {} flips were refused", spots.len());
}

// ---- absurd counts and sizes -------------------------------------------------------------------

#[test]
fn absurd_counts_are_refused_before_allocating() {
    let good = llama_gguf(&LlamaShape::DEFAULT);
    let mut f = good.clone();
    put_u64(&mut f, 8, 1 << 40);
    must_refuse("tensor count 2^40", f, &["1099511627776 tensors"]);
    let mut f = good.clone();
    put_u64(&mut f, 16, 1 << 60);
    must_refuse("metadata count 2^60", f, &["metadata entries"]);
    // An array of 2^60 token strings: after its key, its type (9) and item type (8), the count.
    let mut f = good.clone();
    put_u64(&mut f, value_at(&good, "tokenizer.ggml.tokens") + 4, 1 << 60);
    must_refuse("array count 2^60", f, &["1152921504606846976 array items"]);
    let mut f = good.clone();
    put_u64(&mut f, value_at(&good, "general.architecture"), good.len() as u64);
    must_refuse("a string longer than the file", f, &["metadata string bytes"]);
    // Counts the file could hold but that are beyond any real model: each metadata value costs
    // 32 bytes in memory and as little as 1 in the file.
    let bytes = Value::Array(vec![Value::Uint(0); MAX_METADATA_VALUES + 1]);
    must_refuse(
        "2M + 1 u8 values",
        tiny_with_key("general.padding", 0, bytes),
        &["more than 2097152 values"],
    );
    let mut f = good.clone();
    put_u64(&mut f, 8, MAX_TENSORS as u64 + 1);
    f.resize(f.len() + 32 * (MAX_TENSORS + 1), 0);
    must_refuse("65537 tensors", f, &["65537 tensors", "65536 accepted"]);
}

#[test]
fn absurd_tensor_shapes_and_types_are_refused() {
    // 65536 × 65537 f32 is 2^34 + 2^18 bytes: natively more than the file; in wasm (32-bit
    // usize) the product wraps to 2^18, so it must be (and is) computed with checked arithmetic.
    must_refuse(
        "dims [65536, 65537]",
        tiny_with_tensor("huge", vec![65536, 65537], GGML_F32, vec![]),
        &["`huge`", "does not fit"],
    );
    // 2^64 values: wraps even natively.
    must_refuse(
        "dims 65536^4",
        tiny_with_tensor("huge", vec![65536; 4], GGML_Q8_0, vec![]),
        &["`huge`", "does not fit"],
    );
    must_refuse(
        "a dimension beyond the file",
        tiny_with_tensor("long", vec![64, 1 << 40], GGML_F32, vec![]),
        &["`long`", "dimension of 1099511627776"],
    );
    must_refuse(
        "rows beyond the file",
        tiny_with_tensor("long", vec![64, 4096], GGML_Q8_0, vec![]),
        &["`long`", "does not fit"],
    );
    must_refuse(
        "a row of half a block",
        tiny_with_tensor("odd", vec![48, 2], GGML_Q4_0, vec![0; 64]),
        &["`odd`", "does not fit"],
    );
    must_refuse(
        "ggml type 99",
        tiny_with_tensor("odd", vec![4], 99, vec![0; 16]),
        &["`odd`", "ggml type 99"],
    );
    must_refuse(
        "ggml type 12 (Q4_K)",
        tiny_with_tensor("odd", vec![256], 12, vec![0; 144]),
        &["ggml type 12", "Q4_0, Q4_1 and Q8_0"],
    );
    must_refuse(
        "n_dims 0",
        tiny_with_tensor("flat", vec![], GGML_F32, vec![]),
        &["`flat`", "0 dimensions"],
    );
    must_refuse(
        "n_dims 9",
        tiny_with_tensor("deep", vec![1; 9], GGML_F32, vec![0; 4]),
        &["`deep`", "9 dimensions"],
    );
    let twice = tiny_with(|_, t| {
        let first = t[1].clone();
        t.push(first);
    });
    must_refuse("a tensor named twice", twice, &["`blk.0.attn_norm.weight` appears twice"]);
    // A tensor the model needs, with another shape than the config says.
    let wrong = tiny_with(|_, t| {
        t.iter_mut().filter(|t| t.0 == "blk.1.attn_q.weight").for_each(|t| t.1 = vec![32, 128])
    });
    must_refuse(
        "attn_q [32, 128]",
        wrong,
        &["blk.1.attn_q.weight", "[32, 128]", "expected [64, 64]"],
    );
    let missing = tiny_with(|_, t| t.retain(|t| t.0 != "blk.1.ffn_up.weight"));
    must_refuse("no ffn_up in layer 1", missing, &["blk.1.ffn_up.weight", "missing"]);
}

#[test]
fn bad_metadata_is_refused_with_its_key() {
    for alignment in [0u64, 3, 1 << 20] {
        must_refuse(
            &format!("alignment {alignment}"),
            tiny_with_key("general.alignment", GGUF_U32, Value::Uint(alignment)),
            &["general.alignment"],
        );
    }
    let twice = tiny_with(|m, _| m.push(("general.name", GGUF_STR, Value::Str("again".into()))));
    must_refuse("a key twice", twice, &["`general.name` appears twice"]);
    let numbers = Value::Array((0..270).map(Value::Int).collect());
    must_refuse(
        "tokens that are numbers",
        tiny_with_key("tokenizer.ggml.tokens", GGUF_I32, numbers),
        &["token is not a string"],
    );
    let merges =
        Value::Array(["Ġ t", "he", "a t"].iter().map(|m| Value::Str(m.to_string())).collect());
    must_refuse(
        "a merge without a space",
        tiny_with_key("tokenizer.ggml.merges", GGUF_STR, merges),
        &["merge `he` is not two tokens"],
    );
    let unknown = Value::Array(["Ġ t", "x yz"].iter().map(|m| Value::Str(m.to_string())).collect());
    must_refuse(
        "a merge of unknown tokens",
        tiny_with_key("tokenizer.ggml.merges", GGUF_STR, unknown),
        &["BPE tokenizer could not be built"],
    );
    // An empty control token (the `tokenizers` crate skips empty added tokens) and a token
    // type list shorter than the vocabulary: odd but harmless, so the model loads and runs.
    let mut tokens = llama_tokens();
    tokens[1].clear();
    let odd = tiny_with(|m, _| {
        for (k, _, v) in m.iter_mut() {
            match *k {
                "tokenizer.ggml.tokens" => {
                    *v = Value::Array(tokens.iter().cloned().map(Value::Str).collect())
                }
                "tokenizer.ggml.token_type" => *v = Value::Array(vec![Value::Int(3); 5]),
                _ => {}
            }
        }
    });
    assert_eq!(load_and_run("an empty control token", odd), Ok(()));
    must_refuse(
        "tokenizer model llama",
        tiny_with_key("tokenizer.ggml.model", GGUF_STR, Value::Str("llama".into())),
        &["tokenizer model `llama`"],
    );
    must_refuse(
        "pre-tokenizer qwen2",
        tiny_with_key("tokenizer.ggml.pre", GGUF_STR, Value::Str("qwen2".into())),
        &["pre-tokenizer `qwen2`"],
    );
    must_refuse(
        "architecture gpt2",
        tiny_with_key("general.architecture", GGUF_STR, Value::Str("gpt2".into())),
        &["architecture `gpt2`"],
    );
    must_refuse(
        "no block_count",
        tiny_with(|m, _| m.retain(|(k, ..)| *k != "llama.block_count")),
        &["llama.block_count", "missing"],
    );
}

#[test]
fn absurd_hyperparameters_are_refused_before_building_layers() {
    // A billion layers: refused by the attention budget from the metadata alone (building a
    // billion layer structs first would take minutes and gigabytes).
    must_refuse(
        "block_count 1e9",
        tiny_with_key("llama.block_count", GGUF_U32, Value::Uint(1_000_000_000)),
        &["1 GiB memory budget"],
    );
    must_refuse(
        "block_count 1e9 as a float",
        tiny_with_key("llama.block_count", GGUF_F32, Value::Float(1e9)),
        &["llama.block_count", "not the expected type"],
    );
    // Within the budget (one position, one head) but with only two layers in the file: the
    // third is missing, found without building the rest.
    let many = tiny_with(|m, _| {
        for (k, _, v) in m.iter_mut() {
            match *k {
                "llama.block_count" => *v = Value::Uint(5_000_000),
                "llama.context_length" => *v = Value::Uint(1),
                _ => {}
            }
        }
    });
    must_refuse("block_count 5e6", many, &["blk.2.", "missing"]);
    // An FFN of 2^26 declared in the metadata: 128 positions of it are 64 GiB of activations.
    must_refuse(
        "feed_forward_length 2^26",
        tiny_with_key("llama.feed_forward_length", GGUF_U32, Value::Uint(1 << 26)),
        &["intermediate_size 67108864", "1 GiB memory budget"],
    );
    must_refuse(
        "head_count 0",
        tiny_with_key("llama.attention.head_count", GGUF_U32, Value::Uint(0)),
        &["num_attention_heads is 0"],
    );
    must_refuse(
        "head_count_kv 0",
        tiny_with_key("llama.attention.head_count_kv", GGUF_U32, Value::Uint(0)),
        &["num_key_value_heads is 0"],
    );
    must_refuse(
        "head_count_kv 3 of 4",
        tiny_with_key("llama.attention.head_count_kv", GGUF_U32, Value::Uint(3)),
        &["4 query heads cannot share 3 key/value heads"],
    );
    must_refuse(
        "head_count 3 of 64",
        tiny_with_key("llama.attention.head_count", GGUF_U32, Value::Uint(3)),
        &["hidden_size 64", "num_attention_heads 3"],
    );
    must_refuse(
        "rope dimensions 8 of 16",
        tiny_with_key("llama.rope.dimension_count", GGUF_U32, Value::Uint(8)),
        &["rotary positions on 8 of 16"],
    );
    must_refuse(
        "rope base NaN",
        tiny_with_key("llama.rope.freq_base", GGUF_F32, Value::Float(f64::NAN)),
        &["rope base"],
    );
    let wide = tiny_with(|m, _| {
        m.retain(|(k, ..)| *k != "llama.rope.dimension_count");
        m.iter_mut()
            .filter(|(k, ..)| *k == "llama.embedding_length")
            .for_each(|e| *e = (e.0, GGUF_U64, Value::Uint(1 << 40)));
    });
    must_refuse(
        "embedding_length 2^40",
        wide,
        &["hidden_size 1099511627776", "activations", "1 GiB memory budget"],
    );
}

#[test]
fn a_gguf_beyond_the_memory_budget_is_refused_before_reading() {
    // A sparse file one byte over the budget, in a folder without a manifest (the GGUF is
    // found by its extension): refused from its size, before anything is read or allocated.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gguf-budget");
    std::fs::create_dir_all(&dir).unwrap();
    let big = std::fs::File::create(dir.join("big.gguf")).unwrap();
    big.set_len((1u64 << 30) + 1).unwrap();
    drop(big);
    let err = Model::load_dir(&dir).err().expect("a GGUF over the budget loaded");
    std::fs::remove_file(dir.join("big.gguf")).unwrap();
    assert!(
        err.to_string().contains("1 GiB memory budget") && err.to_string().contains("big.gguf"),
        "{err}"
    );
}

// ---- numbers that are not numbers ------------------------------------------------------------

/// Issue 21, item 4: the real file's metadata with random bytes for its tensor data (as a broken
/// download or a wrong converter gives) loads nothing: some f16 scale is NaN or ∞, and the
/// error names its tensor instead of drawing "NaN" top-5s and ".00" cells.
#[test]
fn random_tensor_data_behind_valid_metadata_is_refused_naming_the_tensor() {
    let (_, data) = regions(smollm2());
    let mut file = smollm2().to_vec();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for b in &mut file[data..] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    must_refuse("random tensor data", file, &["tensor `", "holds NaN or infinite values"]);
}

/// A tiny Llama whose tensor `name` has every value set to `v` (its type kept).
fn tiny_with_values(name: &str, v: f32) -> Vec<u8> {
    tiny_with(|_, tensors| {
        let t =
            tensors.iter_mut().find(|t| t.0 == name).unwrap_or_else(|| panic!("no tensor {name}"));
        let n = t.1.iter().product();
        t.3 = ggml_bytes(t.2, &vec![v; n]);
    })
}

/// A tiny Llama whose tensor `name` holds a NaN in the last place its type can: the last f32 or
/// f16 value, or the last block's f16 scale (written as bits: no converter makes a NaN scale).
fn tiny_with_a_nan(name: &str) -> Vec<u8> {
    tiny_with(|_, tensors| {
        let t =
            tensors.iter_mut().find(|t| t.0 == name).unwrap_or_else(|| panic!("no tensor {name}"));
        let block = match t.2 {
            GGML_F32 => 4,
            GGML_F16 => 2,
            GGML_Q4_0 => 18,
            GGML_Q4_1 => 20,
            GGML_Q8_0 => 34,
            ty => panic!("type {ty}"),
        };
        let at = t.3.len() - block;
        if t.2 == GGML_F32 {
            t.3[at..].copy_from_slice(&f32::NAN.to_le_bytes());
        } else {
            t.3[at..at + 2].copy_from_slice(&0x7e00u16.to_le_bytes()); // an f16 NaN
        }
    })
}

#[test]
fn a_nan_weight_is_refused_naming_its_tensor() {
    // One tensor of each storage type: f32, f16, Q4_0, Q4_1 and Q8_0.
    for name in [
        "blk.0.attn_norm.weight",
        "blk.1.ffn_norm.weight",
        "blk.0.attn_k.weight",
        "blk.0.attn_q.weight",
        "token_embd.weight",
    ] {
        must_refuse(
            name,
            tiny_with_a_nan(name),
            &[&format!("tensor `{name}` holds NaN or infinite values")],
        );
    }
}

/// Finite weights whose activations overflow: the forward is an error naming where, never a
/// map of NaN.
#[test]
fn activations_that_overflow_are_an_error_naming_the_layer() {
    let manifest = Manifest::from_json(LLAMA_MANIFEST.as_bytes()).unwrap();
    // RMSNorm's weight 1e20: queries and keys of ~1e20, scores past f32's range.
    let bytes = tiny_with_values("blk.0.attn_norm.weight", 1.0e20);
    let model = Model::load_owned(manifest, [(LLAMA_GGUF.to_string(), bytes)].into())
        .expect("finite weights load");
    let err = model.attend("The cat sat on the mat").unwrap_err().to_string();
    assert!(err.contains("decoder_self attention of layer 1 is NaN or infinite"), "{err}");
}

//! Deterministic mutation fuzzing of every parser a user's file reaches (Marian .bin,
//! safetensors, tokenizer.json, config.json, manifest.json): thousands of bit flips, byte
//! overwrites, truncations and splices of the real default files must give `Err`, or a model
//! that still works, and never a panic (in wasm a panic kills the module).

use attnviz::models::{Manifest, Model};
use attnviz::result::AttentionKind;
use attnviz::weights::{marian_bin, safetensors_file};
use attnviz::Error;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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

/// One random mutation of `base` (only within its first `window` bytes, where the structure is).
fn mutate(rng: &mut XorShift, base: &[u8], window: usize) -> Vec<u8> {
    let mut v = base.to_vec();
    let w = window.min(v.len()).max(1);
    match rng.below(5) {
        0 => {
            let i = rng.below(w);
            v[i] ^= 1 << rng.below(8);
        }
        1 => {
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(w);
                v[i] = rng.next() as u8;
            }
        }
        2 => v.truncate(rng.below(v.len())),
        3 => {
            // Overwrite a u64-sized field with an extreme value.
            let i = rng.below(w.saturating_sub(8).max(1));
            let extreme = [u64::MAX, 1 << 40, 0, i64::MAX as u64][rng.below(4)];
            if i + 8 <= v.len() {
                v[i..i + 8].copy_from_slice(&extreme.to_le_bytes());
            }
        }
        _ => {
            // Duplicate or drop a span.
            let a = rng.below(w);
            let b = (a + rng.below(64)).min(v.len());
            if rng.below(2) == 0 {
                let span = v[a..b].to_vec();
                v.splice(a..a, span);
            } else {
                v.drain(a..b);
            }
        }
    }
    v
}

#[test]
fn marian_bin_never_panics() {
    // The header, names, shapes and the first blobs: everything structural.
    let full = read("en-pt", "model.enpt.intgemm.alphas.bin");
    let base = &full[..64 * 1024];
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    for _ in 0..4000 {
        let _ = marian_bin::read(&mutate(&mut rng, base, 12_544));
    }
}

#[test]
fn safetensors_never_panics() {
    let full = read("minilm", "model.safetensors");
    let header_len = u64::from_le_bytes(full[..8].try_into().unwrap()) as usize;
    let base = &full[..(8 + header_len + 4096).min(full.len())];
    let mut rng = XorShift(0xD1B5_4A32_D192_ED03);
    for _ in 0..4000 {
        let _ = safetensors_file::read(&mutate(&mut rng, base, 8 + header_len));
    }
}

#[test]
fn model_files_never_panic() {
    // Mutated config.json / tokenizer.json / manifest with otherwise real files: a load that
    // succeeds must also run a forward without panicking.
    let manifest = Manifest::from_json(&read("minilm", "manifest.json")).unwrap();
    let config = read("minilm", "config.json");
    let tokenizer = read("minilm", "tokenizer.json");
    let weights = read("minilm", "model.safetensors");
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let mut attended = 0;
    for round in 0..120 {
        let mut files = HashMap::new();
        files.insert("model.safetensors".to_string(), weights.clone());
        let mutated = if round % 2 == 0 { "config.json" } else { "tokenizer.json" };
        let (c, t) = if round % 2 == 0 {
            (mutate(&mut rng, &config, config.len()), tokenizer.clone())
        } else {
            (config.clone(), mutate(&mut rng, &tokenizer, 4096))
        };
        files.insert("config.json".to_string(), c);
        files.insert("tokenizer.json".to_string(), t);
        match Model::load(manifest.clone(), &files) {
            // A refusal names the file at fault (what the page shows the user).
            Err(e) => assert!(
                e.to_string().contains(mutated),
                "round {round}: `{e}` does not name {mutated}"
            ),
            // A model that loads attends (a mutated tokenizer may change the tokens, not this):
            // one block per layer, [heads, T, T] over its T tokens, every row a probability
            // distribution.
            Ok(model) => {
                let info = model.info();
                let a = model.attend("The cat sat on the mat.").unwrap_or_else(|e| {
                    panic!("round {round}: loaded, but the forward failed: {e}")
                });
                let t = a.output.source_tokens.len();
                assert!(t > 0, "round {round}: no tokens");
                assert_eq!(
                    a.attentions.len(),
                    info.layers[&AttentionKind::EncoderSelf],
                    "round {round}"
                );
                for b in &a.attentions {
                    assert_eq!(
                        (b.query_len, b.key_len, b.probs.len()),
                        (t, t, b.heads * t * t),
                        "round {round}, layer {}",
                        b.layer
                    );
                    for row in b.probs.chunks(t) {
                        assert!(
                            row.iter().all(|p| p.is_finite() && *p >= 0.0)
                                && (row.iter().sum::<f32>() - 1.0).abs() < 1e-4,
                            "round {round}, layer {}: row {row:?}",
                            b.layer
                        );
                    }
                }
                attended += 1;
            }
        }
    }
    // Some mutations leave a folder that loads (18 of the 120 today): without them the forward
    // above would never be reached.
    assert!(attended >= 10, "only {attended} of 120 mutated folders loaded");
    for text in [
        "{}",
        "{\"id\":1}",
        "[]",
        "",
        "{\"id\":\"x\",\"architecture\":\"bert\",\"files\":[\"nope\"]}",
    ] {
        if let Ok(m) = Manifest::from_json(text.as_bytes()) {
            assert!(Model::load(m, &HashMap::new()).is_err());
        }
    }
}

#[test]
fn hostile_bert_configs_are_errors_that_say_what_is_wrong() {
    // Each config is rejected with the kind of error and a message naming the file or tensor
    // and the value at fault (what a user needs to fix their folder).
    let weights = read("minilm", "model.safetensors");
    let tokenizer = read("minilm", "tokenizer.json");
    let manifest = Manifest::from_json(&read("minilm", "manifest.json")).unwrap();
    let base = r#""hidden_size":384,"intermediate_size":1536,"max_position_embeddings":512"#;
    let cases: [(&str, bool, &[&str]); 6] = [
        (
            r#""vocab_size":30522,"num_hidden_layers":6,"num_attention_heads":0"#,
            false,
            &["config.json", "hidden_size 384", "num_attention_heads 0"],
        ),
        (
            r#""vocab_size":30522,"num_hidden_layers":6,"num_attention_heads":7"#,
            false,
            &["config.json", "hidden_size 384", "num_attention_heads 7"],
        ),
        (
            r#""vocab_size":30522,"num_hidden_layers":60,"num_attention_heads":12"#,
            false,
            &["model.safetensors", "encoder.layer.6.", "is missing"],
        ),
        (
            r#""vocab_size":99,"num_hidden_layers":6,"num_attention_heads":12"#,
            false,
            &[
                "model.safetensors",
                "embeddings.word_embeddings.weight",
                "[30522, 384]",
                "[99, 384]",
            ],
        ),
        (
            r#""vocab_size":30522,"num_hidden_layers":6,"num_attention_heads":12,"hidden_act":"swish""#,
            true,
            &["config.json", "hidden_act `swish`"],
        ),
        (
            r#""vocab_size":30522,"num_hidden_layers":"six","num_attention_heads":12"#,
            false,
            &["config.json", "invalid type: string \"six\""],
        ),
    ];
    for (fields, unsupported, needles) in cases {
        let cfg = format!("{{{base},{fields}}}");
        let files: HashMap<String, Vec<u8>> = [
            ("config.json", cfg.as_bytes().to_vec()),
            ("model.safetensors", weights.clone()),
            ("tokenizer.json", tokenizer.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let err = Model::load(manifest.clone(), &files)
            .err()
            .unwrap_or_else(|| panic!("config should be rejected: {cfg}"));
        assert_eq!(matches!(err, Error::UnsupportedArchitecture(_)), unsupported, "{cfg}: {err:?}");
        assert_eq!(matches!(err, Error::InvalidModel(_)), !unsupported, "{cfg}: {err:?}");
        let msg = err.to_string();
        for needle in needles {
            assert!(msg.contains(needle), "{cfg}: the error `{msg}` does not say `{needle}`");
        }
    }
}

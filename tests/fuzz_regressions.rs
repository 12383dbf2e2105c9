//! Replays, through the page's load path (`Manifest`, `Model::load`, `attend`), the seeds of the
//! coverage-guided fuzzers in fuzz/, their committed corpus (fuzz/corpus/<target>/: the inputs
//! `make fuzz-merge` kept because each reached code no other did) and every input they found a
//! panic with (fuzz/regressions/<target>/). This replay is what `make test` runs on every
//! landing; the instrumented build and timed fuzzing are `make fuzz` / `make fuzz-smoke`. A panic fails the test even where the library catches it
//! natively (around the `tokenizers` crate): in wasm a panic aborts the module. Needs no
//! downloaded model: the folders are the tiny ones of tests/support/fuzz_models.rs.

use crate::fuzz_models;

use fuzz_models::{no_panic, run, Outcome, Target};
use std::path::Path;

#[test]
fn the_fuzzers_seeds_load_and_attend() {
    // Each target's first seed is a valid file of its folder: if it stopped loading, the
    // fuzzers would only explore error paths.
    for target in Target::ALL {
        for (i, seed) in target.seeds().iter().enumerate() {
            let outcome = no_panic(&format!("{} seed {i}", target.name()), || run(target, seed));
            if i == 0 {
                assert_eq!(outcome, Outcome::Attended, "{} seed 0", target.name());
            }
        }
    }
    let marian =
        no_panic("marian manifest", || run(Target::ManifestJson, &fuzz_models::marian_manifest()));
    assert_eq!(marian, Outcome::Attended);
    let unigram = no_panic("marian tokenizer", || {
        run(Target::TokenizerJson, &fuzz_models::marian_tokenizer())
    });
    assert_eq!(unigram, Outcome::Attended);
    // The GPT-2 and opus-mt files go into their own folders, so their own loaders (dispatched on
    // config.json's model_type) load them: refused, they would leave gpt2.rs and marian/ unfuzzed.
    let (gpt2, opus) = (fuzz_models::gpt2::files(), fuzz_models::opus_mt::files());
    for (folder, files) in [("gpt2", &gpt2), ("opus-mt", &opus)] {
        for (target, name) in [
            (Target::ConfigJson, "config.json"),
            (Target::Safetensors, "model.safetensors"),
            (Target::TokenizerJson, "tokenizer.json"),
        ] {
            let outcome = no_panic(&format!("{folder} {name}"), || run(target, &files[name]));
            assert_eq!(outcome, Outcome::Attended, "{folder} {name}");
        }
    }
}

/// The fewest inputs fuzz/corpus/<target>/ holds for any target today (`make fuzz-merge` keeps
/// them): fewer means the corpus was lost or moved, and the replay would pass on nothing.
const KNOWN_CORPUS_PER_TARGET: usize = 100;

#[test]
fn the_fuzzers_corpus_replays_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join("corpus");
    let mut counts = Vec::new();
    for target in Target::ALL {
        let dir = root.join(target.name());
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e} (the committed corpus)", dir.display()));
        let mut paths: Vec<_> =
            entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
        paths.sort();
        for path in &paths {
            let data = std::fs::read(path).unwrap();
            no_panic(&path.display().to_string(), || run(target, &data));
        }
        counts.push((target.name(), paths.len()));
    }
    eprintln!("replayed the fuzz corpus: {counts:?}");
    for (name, n) in counts {
        assert!(
            n >= KNOWN_CORPUS_PER_TARGET,
            "fuzz/corpus/{name} holds {n} inputs, fewer than the {KNOWN_CORPUS_PER_TARGET} it held"
        );
    }
}

/// How many inputs fuzz/regressions/ holds today: replaying fewer means the folder or a target's
/// subfolder moved, or files were lost, and the test would otherwise pass on nothing.
const KNOWN_REGRESSIONS: usize = 2;

#[test]
fn inputs_the_fuzzers_found_panics_with_are_errors_now() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join("regressions");
    assert!(root.is_dir(), "{} is missing: no regression input would be replayed", root.display());
    // Every subfolder is a target's: inputs under any other name would be skipped unseen.
    for entry in std::fs::read_dir(&root).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            Target::ALL.iter().any(|t| t.name() == name),
            "fuzz/regressions/{name} is no fuzz target's folder"
        );
    }
    let mut replayed = 0;
    for target in Target::ALL {
        let Ok(dir) = std::fs::read_dir(root.join(target.name())) else { continue };
        let mut paths: Vec<_> =
            dir.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
        paths.sort();
        for path in paths {
            let data = std::fs::read(&path).unwrap();
            let outcome = no_panic(&path.display().to_string(), || run(target, &data));
            assert!(
                !matches!(outcome, Outcome::Attended),
                "{}: loaded and attended, not an error",
                path.display()
            );
            replayed += 1;
        }
    }
    eprintln!("replayed {replayed} regression inputs");
    assert!(
        replayed >= KNOWN_REGRESSIONS,
        "replayed {replayed} regression inputs, but fuzz/regressions/ held {KNOWN_REGRESSIONS}"
    );
}

#[test]
fn template_post_processors_that_the_tokenizers_crate_would_index_past_are_refused() {
    // Found by fuzz/ (tokenizer_json): the crate checks a template only when it is built in
    // code, and panicked encoding the first text with one read from tokenizer.json.
    let base: serde_json::Value = serde_json::from_slice(&fuzz_models::bert_tokenizer()).unwrap();
    let cases: [(&str, serde_json::Value, &str); 3] = [
        (
            "/post_processor/single/0/SpecialToken/id",
            "[SLS]".into(),
            "special token `[SLS]` in its `single` template without defining it",
        ),
        (
            "/post_processor/single/1/Sequence/id",
            "B".into(),
            "sequence `B` in its `single` template",
        ),
        (
            "/post_processor/special_tokens/[CLS]/ids",
            serde_json::json!([2, 2]),
            "special token `[CLS]` with Some(2) ids but Some(1) tokens",
        ),
    ];
    for (pointer, value, needle) in cases {
        let mut t = base.clone();
        *t.pointer_mut(pointer).unwrap() = value;
        let outcome =
            no_panic(pointer, || run(Target::TokenizerJson, &serde_json::to_vec(&t).unwrap()));
        match outcome {
            Outcome::Refused(msg) => assert!(
                msg.contains("TemplateProcessing") && msg.contains(needle),
                "{pointer}: `{msg}` does not say `{needle}`"
            ),
            other => panic!("{pointer}: {other:?}"),
        }
    }
}

#[test]
fn a_decoder_section_the_tokenizers_crate_cannot_lex_is_refused() {
    // Found by fuzz/ (tokenizer_json): the crate `expect`s its decoder section to lex, so bytes
    // that are not UTF-8 there (skipped unchecked by everything before it) panicked at load.
    let base = String::from_utf8(fuzz_models::marian_tokenizer()).unwrap();
    let cases: [(&str, &[u8]); 3] = [
        ("\"type\": \"Meta\u{fffd}ace\"", b"\"type\": \"Meta\xff\xfface\""),
        ("\"split\": 1e400", b"\"split\": 1e400"),
        ("\"type\": \"\\ud800\"", b"\"type\": \"\\ud800\""),
    ];
    for (what, bytes) in cases {
        let decoder = base.find("\"decoder\"").unwrap();
        let at = decoder + base[decoder..].find("\"split\": true").unwrap();
        let json = [&base.as_bytes()[..at], bytes, b",", &base.as_bytes()[at..]].concat();
        let outcome = no_panic(what, || run(Target::TokenizerJson, &json));
        assert!(
            matches!(&outcome, Outcome::Refused(m) if m.contains("tokenizer.json")),
            "{what}: {outcome:?}"
        );
    }
}

//! Every integration suite, as one module each of one test binary: `cargo test --test all`, or
//! one suite by its name, e.g. `cargo test --profile test-release --test all hardening::`.
#![cfg(not(target_arch = "wasm32"))]

// What the suites share: the fuzzers' tiny models and panic check, the schema check.
#[allow(dead_code)]
#[path = "support/fuzz_models.rs"]
mod fuzz_models;
#[path = "support/schema.rs"]
mod schema_check;

#[path = "bert_family.rs"]
mod bert_family;
#[path = "cli.rs"]
mod cli;
#[path = "fuzz_parsers.rs"]
mod fuzz_parsers;
#[path = "fuzz_regressions.rs"]
mod fuzz_regressions;
#[path = "gguf_hardening.rs"]
mod gguf_hardening;
#[path = "gpt2.rs"]
mod gpt2;
#[path = "hardening.rs"]
mod hardening;
#[path = "inspect.rs"]
mod inspect;
#[path = "int8.rs"]
mod int8;
#[path = "llama.rs"]
mod llama;
#[path = "map_sources.rs"]
mod map_sources;
#[path = "models.rs"]
mod models;
#[path = "opus_mt.rs"]
mod opus_mt;
#[path = "schema.rs"]
mod schema;

#![no_main]
//! See tests/support/fuzz_models.rs, `Target::Gguf`.
use attnviz_fuzz::models::{run, Target};
use attnviz_fuzz::write_seeds;
use libfuzzer_sys::fuzz_target;

fuzz_target!(init: write_seeds(Target::Gguf), |data: &[u8]| {
    run(Target::Gguf, data);
});

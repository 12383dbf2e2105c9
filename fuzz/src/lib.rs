//! The fuzz targets' shared code: the tiny model folders and the page's load path, from
//! tests/support/fuzz_models.rs (also used by tests/fuzz_regressions.rs, which replays the
//! inputs found here with a plain `cargo test`).

#[path = "../../tests/support/fuzz_models.rs"]
pub mod models;

use models::Target;

/// Run once before fuzzing: writes `target`'s seeds (`seed-<n>`) into the first corpus directory
/// named on the command line (the one libFuzzer adds to), so a fuzzer always starts from valid
/// tiny models and no model file needs committing. (A file argument, e.g. a crash to
/// reproduce, is left alone.)
pub fn write_seeds(target: Target) {
    if let Some(dir) = std::env::args().skip(1).find(|a| !a.starts_with('-')).map(std::path::PathBuf::from) {
        if dir.is_dir() {
            for (i, seed) in target.seeds().iter().enumerate() {
                let path = dir.join(format!("seed-{i}"));
                std::fs::write(&path, seed).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            }
        }
    }
}

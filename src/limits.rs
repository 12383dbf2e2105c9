//! What the loaders accept from a user's files. Every size read from a file is checked against
//! these before anything is allocated for it, so a corrupt or hostile file is an error that
//! names the limit, never an allocation failure or a panic (in wasm both kill the module).

/// Bytes the model may hold in memory at once: the model files plus their weights as f32.
/// wasm32 addresses at most 4 GiB and browsers often grant less.
pub const MEMORY_BUDGET_BYTES: u64 = 1 << 30;

/// Largest `tokenizer.json` accepted (real ones are 0.5–35 MB).
pub const MAX_TOKENIZER_JSON_BYTES: usize = 48 << 20;

/// Deepest nesting of arrays and objects accepted in `tokenizer.json` (real files nest 5–7
/// levels; the deepest legitimate shape is a `Sequence` of `Sequence`s).
pub const MAX_TOKENIZER_JSON_DEPTH: usize = 16;

/// Most `added_tokens` accepted in `tokenizer.json` (real files have up to a few thousand).
pub const MAX_ADDED_TOKENS: usize = 20_000;

/// Human-readable byte count for messages (`1 GiB`, `48 MiB`, `3.2 GiB`).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// Refuses a `tokenizer.json` of `size` bytes over [`MAX_TOKENIZER_JSON_BYTES`]: the one
/// message for it, whether the size or the bytes are at hand.
pub fn check_tokenizer_json_size(size: u64) -> crate::Result<()> {
    if size > MAX_TOKENIZER_JSON_BYTES as u64 {
        return Err(crate::error::invalid_model(format!(
            "tokenizer.json is {}, more than the {} accepted",
            human_bytes(size),
            human_bytes(MAX_TOKENIZER_JSON_BYTES as u64)
        )));
    }
    Ok(())
}

/// Refuses model files whose sizes together exceed the memory budget, from their sizes alone:
/// call it before reading or copying them (the CLI before `fs::read`, the wasm facade before
/// copying each `Uint8Array`, the page's inspection before estimating memory). A file over its
/// own limit is named for that first: it is the cause, whatever the total.
pub fn check_file_sizes<'a>(files: impl IntoIterator<Item = (&'a str, u64)>) -> crate::Result<()> {
    let files: Vec<(&str, u64)> = files.into_iter().collect();
    for &(name, size) in &files {
        if name == "tokenizer.json" {
            check_tokenizer_json_size(size)?;
        }
    }
    let mut total: u64 = 0;
    for (name, size) in files {
        total = total.saturating_add(size);
        if total > MEMORY_BUDGET_BYTES {
            return Err(crate::error::invalid_model(format!(
                "the model's files take more than {} ({name} alone is {})",
                budget(),
                human_bytes(size)
            )));
        }
    }
    Ok(())
}

/// The budget as said in messages.
pub fn budget() -> String {
    format!("the {} memory budget", human_bytes(MEMORY_BUDGET_BYTES))
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_read_well() {
        assert_eq!(super::human_bytes(1 << 30), "1 GiB");
        assert_eq!(super::human_bytes(48 << 20), "48 MiB");
        assert_eq!(super::human_bytes(12), "12 bytes");
        assert_eq!(super::human_bytes(3 << 29), "1.5 GiB");
    }
}

//! Checks a `tokenizer.json` before the `tokenizers` crate sees it, for the inputs on which that
//! crate panics, allocates without bound or runs for minutes (issue 13):
//! - a file over [`MAX_TOKENIZER_JSON_BYTES`](crate::limits::MAX_TOKENIZER_JSON_BYTES),
//!   nesting deeper than [`MAX_TOKENIZER_JSON_DEPTH`], more than [`MAX_ADDED_TOKENS`] added
//!   tokens, or bulk outside the vocabulary (the crate buffers every section in memory several
//!   times over);
//! - a `Precompiled` normaliser whose `precompiled_charsmap` is not base64, does not parse (the
//!   crate `expect`s it to), or whose trie points outside itself or into the middle of a UTF-8
//!   character (the crate indexes it unchecked while normalising text);
//! - a `TemplateProcessing` post-processor whose template names a special token it does not
//!   define, puts the second sequence (`B`) in the single-sequence template, or defines a special
//!   token with a different number of `ids` and `tokens` (the crate checks these only when a template is built in
//!   code, and indexes without checking when it encodes a text: found by fuzz/);
//! - a `decoder` section the crate cannot lex (bytes that are not UTF-8, a number out of range, a
//!   lone surrogate escape): it `expect`s that section to parse (found by fuzz/).
//!
//! Everything here is one pass over the bytes plus a parse of the `normalizer` section alone.

use crate::error::{invalid_model, Result};
use crate::limits::{MAX_ADDED_TOKENS, MAX_TOKENIZER_JSON_DEPTH};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use tokenizers::normalizers::Precompiled;

/// Items (values and separators) a section other than `model` and `added_tokens` may hold: the
/// normaliser, pre-tokeniser, post-processor and decoder of real files have at most a few
/// hundred; a charsmap is one string.
const MAX_SECTION_ITEMS: usize = 100_000;

pub fn check(json: &[u8]) -> Result<()> {
    crate::limits::check_tokenizer_json_size(json.len() as u64)?;
    scan(json)?;
    // Skipped sections are not checked for UTF-8 by serde; the crate reads all of them as text.
    std::str::from_utf8(json)
        .map_err(|e| invalid_model(format!("tokenizer.json is not UTF-8 text ({e})")))?;
    #[derive(Deserialize)]
    struct Sections {
        #[serde(default)]
        normalizer: Option<Value>,
        #[serde(default)]
        added_tokens: Option<Vec<IgnoredAny>>,
        #[serde(default)]
        post_processor: Option<Value>,
        // Parsed (not just skipped) so that what the crate would `expect` to lex is an error here.
        #[serde(default, rename = "decoder")]
        _decoder: Option<Value>,
    }
    let sections: Sections = serde_json::from_slice(json)
        .map_err(|e| invalid_model(format!("tokenizer.json could not be read ({e})")))?;
    let added = sections.added_tokens.map_or(0, |a| a.len());
    if added > MAX_ADDED_TOKENS {
        return Err(invalid_model(format!(
            "tokenizer.json has {added} added tokens, more than the {MAX_ADDED_TOKENS} accepted"
        )));
    }
    if let Some(n) = &sections.normalizer {
        check_normalizer(n)?;
    }
    if let Some(p) = &sections.post_processor {
        check_post_processor(p)?;
    }
    Ok(())
}

/// Every template post-processor in the (possibly nested `Sequence`) post-processor. The crate
/// does not check a post-processor's `type` tag, so any object with a template's fields is one.
fn check_post_processor(v: &Value) -> Result<()> {
    match v {
        Value::Array(items) => items.iter().try_for_each(check_post_processor),
        Value::Object(map) => {
            if ["single", "pair", "special_tokens"].iter().any(|k| map.contains_key(*k)) {
                check_template(map)?;
            }
            map.values().try_for_each(check_post_processor)
        }
        _ => Ok(()),
    }
}

fn bad_template(why: String) -> crate::Error {
    invalid_model(format!("tokenizer.json: the TemplateProcessing post-processor {why}"))
}

/// What `TemplateProcessing::apply_template` indexes without checking: the special tokens the
/// templates name, the sequences they use (one in `single`), and each token's `ids` beside its
/// `tokens`. (Shapes the crate would not deserialize are left for it to refuse.)
fn check_template(map: &serde_json::Map<String, Value>) -> Result<()> {
    let defined = map.get("special_tokens").and_then(Value::as_object);
    if let Some(tokens) = defined {
        for (key, token) in tokens {
            let len = |k: &str| token.get(k).and_then(Value::as_array).map(Vec::len);
            if len("ids") != len("tokens") {
                return Err(bad_template(format!(
                    "defines special token `{key}` with {:?} ids but {:?} tokens",
                    len("ids"),
                    len("tokens")
                )));
            }
        }
    }
    for (name, sequences) in [("single", &["A"][..]), ("pair", &["A", "B"][..])] {
        let Some(pieces) = map.get(name).and_then(Value::as_array) else { continue };
        for piece in pieces {
            if let Some(id) =
                piece.get("SpecialToken").and_then(|t| t.get("id")).and_then(Value::as_str)
            {
                if !defined.is_some_and(|d| d.contains_key(id)) {
                    return Err(bad_template(format!("uses special token `{id}` in its `{name}` template without defining it in special_tokens")));
                }
            }
            if let Some(id) =
                piece.get("Sequence").and_then(|t| t.get("id")).and_then(Value::as_str)
            {
                if !sequences.contains(&id) {
                    return Err(bad_template(format!(
                        "uses sequence `{id}` in its `{name}` template, which has only {}",
                        sequences.join(" and ")
                    )));
                }
            }
        }
    }
    Ok(())
}

/// One pass over the bytes: nesting depth, and the bulk of each top-level section.
fn scan(json: &[u8]) -> Result<()> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    // The top-level key being read or last read, and whether the next string at depth 1 is a key.
    let (mut key_start, mut key, mut expect_key) = (0usize, &b""[..], false);
    let mut items = 0usize;
    for (i, &b) in json.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
                if depth == 1 && expect_key {
                    key = &json[key_start..i];
                    expect_key = false;
                    items = 0;
                }
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                key_start = i + 1;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_TOKENIZER_JSON_DEPTH {
                    return Err(invalid_model(format!("tokenizer.json nests deeper than the {MAX_TOKENIZER_JSON_DEPTH} levels accepted")));
                }
                expect_key = depth == 1 && b == b'{';
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => expect_key = true,
            _ => {}
        }
        if depth >= 2
            && matches!(b, b'[' | b'{' | b',')
            && key != b"model"
            && key != b"added_tokens"
        {
            items += 1;
            if items > MAX_SECTION_ITEMS {
                let name = String::from_utf8_lossy(key);
                return Err(invalid_model(format!("tokenizer.json: section `{name}` holds more than the {MAX_SECTION_ITEMS} items accepted")));
            }
        }
    }
    Ok(())
}

/// Every `Precompiled` normaliser in the (possibly nested `Sequence`) normaliser.
fn check_normalizer(v: &Value) -> Result<()> {
    match v {
        Value::Array(items) => items.iter().try_for_each(check_normalizer),
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("Precompiled")
                || map.contains_key("precompiled_charsmap")
            {
                check_precompiled(v)?;
            }
            map.values().try_for_each(check_normalizer)
        }
        _ => Ok(()),
    }
}

fn bad_charsmap(why: &str) -> crate::Error {
    invalid_model(format!(
        "tokenizer.json: the Precompiled normaliser's precompiled_charsmap {why}"
    ))
}

fn check_precompiled(v: &Value) -> Result<()> {
    // The crate's own parser (base64, length prefix, UTF-8 of the replacements) as an error
    // instead of its `expect`.
    let mut tagged = v.clone();
    if let Value::Object(m) = &mut tagged {
        m.insert("type".into(), Value::String("Precompiled".into()));
    }
    // As the crate does it: from a string (its base64 field is borrowed, which a `Value` is not).
    let reserialized = serde_json::to_string(&tagged)
        .map_err(|e| bad_charsmap(&format!("cannot be read ({e})")))?;
    serde_json::from_str::<Precompiled>(&reserialized).map_err(|e| {
        let why: String = e.to_string().chars().take(160).collect();
        bad_charsmap(&format!("cannot be read ({why})"))
    })?;
    let text = v
        .get("precompiled_charsmap")
        .and_then(Value::as_str)
        .ok_or_else(|| bad_charsmap("is missing"))?;
    let bytes = base64_decode(text).ok_or_else(|| bad_charsmap("is not base64"))?;
    check_charsmap(&bytes).map_err(bad_charsmap)
}

/// Standard base64 (the crate has already accepted `s`, so only decoding is needed).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in s.as_bytes().iter().take_while(|&&c| c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// The longest key `spm_precompiled` looks up: a grapheme shorter than 6 bytes.
const MAX_KEY_BYTES: usize = 5;

/// `[u32 trie bytes][trie: u32 units][replacements: UTF-8, NUL-separated]`, walked exactly as
/// `spm_precompiled::DoubleArray::common_prefix_search` and `Precompiled::transform` do, for
/// every key they can be given: every unit they would read must exist, and every replacement
/// they would slice must start on a character boundary inside the replacements.
fn check_charsmap(bytes: &[u8]) -> std::result::Result<(), &'static str> {
    let trie_bytes = bytes
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or("is too short")?;
    let units = trie_bytes / 4;
    let body = &bytes[4..];
    let trie: Vec<u32> = body
        .get(..units.checked_mul(4).ok_or("is too long")?)
        .ok_or("is truncated")?
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let normalized = std::str::from_utf8(&body[units * 4..])
        .map_err(|_| "has replacements that are not UTF-8")?;
    let offset = |u: u32| ((u >> 10) << ((u & (1 << 9)) >> 6)) as usize;
    let label = |u: u32| (u & ((1 << 31) | 0xff)) as usize;
    let has_leaf = |u: u32| (u >> 8) & 1 == 1;
    let value = |u: u32| (u & ((1 << 31) - 1)) as usize;
    let root = *trie.first().ok_or("has an empty trie")?;
    // Breadth first over the positions a key can reach; a position seen at a smaller depth has
    // at least as many key bytes left, so it is never walked again.
    let mut seen = vec![false; trie.len()];
    let mut frontier = vec![offset(root)];
    for _ in 0..MAX_KEY_BYTES {
        let mut next = Vec::new();
        for &node in &frontier {
            for c in 1..=255usize {
                let pos = node ^ c;
                let unit = *trie.get(pos).ok_or("has a trie that points outside itself")?;
                if label(unit) != c {
                    continue;
                }
                let child = pos ^ offset(unit);
                if has_leaf(unit) {
                    let start =
                        value(*trie.get(child).ok_or("has a trie that points outside itself")?);
                    if start > normalized.len() || !normalized.is_char_boundary(start) {
                        return Err("has a replacement outside the replacement text");
                    }
                }
                if child < seen.len() && !seen[child] {
                    seen[child] = true;
                    next.push(child);
                } else if child >= seen.len() {
                    // Never read unless a further key byte follows; `node ^ c` is then checked.
                    next.push(child);
                }
            }
        }
        frontier = next;
    }
    Ok(())
}

//! Tokenisation with the `tokenizers` crate from a `tokenizer.json`. Padding is always off (a
//! padded sequence would make every attention map 128×128) and truncation is at the model's
//! maximum length, reported to the caller rather than silent.

use crate::error::{invalid_model, Error, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};
use tokenizers::{
    PostProcessor, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy,
};

pub mod gguf_bpe;
mod guard;

/// Texts longer than this many bytes are cut before tokenisation: no model here sees more than
/// 512 tokens, and a token covers at least one byte, so nothing visible is lost while a pasted
/// novel cannot stall the tokenizer.
const MAX_TEXT_BYTES: usize = 64 * 1024;

pub struct TextTokenizer {
    inner: Tokenizer,
    max_tokens: usize,
}

/// One tokenised text.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded {
    pub ids: Vec<u32>,
    /// Token strings exactly as the tokenizer gives them (`[CLS]`, `##ing`, `▁The`).
    pub tokens: Vec<String>,
    /// Index of the word each token belongs to (`None` for special tokens).
    pub word_ids: Vec<Option<u32>>,
    pub truncated: bool,
}

impl TextTokenizer {
    /// `max_tokens` counts everything the tokenizer emits, special tokens included.
    /// The file is checked first (size, nesting, added tokens, any `Precompiled` normaliser's
    /// charsmap; see `guard`) so that the `tokenizers` crate never sees input that makes it
    /// panic: in wasm a panic aborts the module. Natively a panic the checks missed is also
    /// caught and becomes an error.
    pub fn from_bytes(json: &[u8], max_tokens: usize) -> Result<TextTokenizer> {
        guard::check(json)?;
        let loaded = catch_unwind(|| Tokenizer::from_bytes(json)).map_err(|_| {
            invalid_model("tokenizer.json could not be read (the tokenizers library failed on it)")
        })?;
        let inner =
            loaded.map_err(|e| invalid_model(format!("tokenizer.json could not be read ({e})")))?;
        TextTokenizer::from_tokenizer(inner, max_tokens)
    }

    /// Wraps a tokenizer built in code (from a GGUF file's metadata): padding off, truncation
    /// at `max_tokens`.
    pub fn from_tokenizer(mut inner: Tokenizer, max_tokens: usize) -> Result<TextTokenizer> {
        let special = inner.get_post_processor().map_or(0, |p| p.added_tokens(false));
        if max_tokens <= special {
            return Err(invalid_model(format!("the model takes at most {max_tokens} tokens, leaving no room for text beside the tokenizer's {special} special tokens")));
        }
        inner.with_padding(None);
        let params = TruncationParams {
            max_length: max_tokens,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        };
        inner
            .with_truncation(Some(params))
            .map_err(|e| invalid_model(format!("tokenizer truncation ({e})")))?;
        Ok(TextTokenizer { inner, max_tokens })
    }

    /// The tokenizer as a Hugging Face `tokenizer.json` (e.g. one built from GGUF metadata).
    pub fn to_json(&self) -> Result<String> {
        self.inner
            .to_string(false)
            .map_err(|e| invalid_model(format!("the tokenizer could not be written as JSON ({e})")))
    }

    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    pub fn encode(&self, text: &str) -> Result<Encoded> {
        let mut cut = text.len().min(MAX_TEXT_BYTES);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let enc = catch_unwind(AssertUnwindSafe(|| self.inner.encode(&text[..cut], true)))
            .map_err(|_| {
                Error::InvalidInput(
                    "the text could not be tokenised (the tokenizers library failed on it)".into(),
                )
            })?;
        let enc =
            enc.map_err(|e| Error::InvalidInput(format!("the text could not be tokenised ({e})")))?;
        Ok(Encoded {
            ids: enc.get_ids().to_vec(),
            tokens: enc.get_tokens().to_vec(),
            word_ids: enc.get_word_ids().to_vec(),
            truncated: cut < text.len() || !enc.get_overflowing().is_empty(),
        })
    }

    pub fn id_to_token(&self, id: u32) -> String {
        self.inner.id_to_token(id).unwrap_or_else(|| format!("<{id}>"))
    }

    /// The token's string, or `None` for an id outside the vocabulary.
    pub fn id_to_token_opt(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        let decoded =
            catch_unwind(AssertUnwindSafe(|| self.inner.decode(ids, true))).map_err(|_| {
                Error::InvalidInput(
                    "could not decode the output (the tokenizers library failed on it)".into(),
                )
            })?;
        decoded.map_err(|e| Error::InvalidInput(format!("could not decode the output ({e})")))
    }
}

//! Tokenisation with the `tokenizers` crate from a `tokenizer.json`. Padding is always off (a
//! padded sequence would make every attention map 128×128) and truncation is at the model's
//! maximum length, reported to the caller rather than silent.

use crate::error::{invalid_model, Error, Result};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

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
    pub fn from_bytes(json: &[u8], max_tokens: usize) -> Result<TextTokenizer> {
        let mut inner = Tokenizer::from_bytes(json).map_err(|e| invalid_model(format!("tokenizer.json could not be read ({e})")))?;
        inner.with_padding(None);
        let params = TruncationParams { max_length: max_tokens, strategy: TruncationStrategy::LongestFirst, stride: 0, direction: TruncationDirection::Right };
        inner.with_truncation(Some(params)).map_err(|e| invalid_model(format!("tokenizer truncation ({e})")))?;
        Ok(TextTokenizer { inner, max_tokens })
    }

    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    pub fn encode(&self, text: &str) -> Result<Encoded> {
        let mut cut = text.len().min(MAX_TEXT_BYTES);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let enc = self.inner.encode(&text[..cut], true).map_err(|e| Error::InvalidInput(format!("the text could not be tokenised ({e})")))?;
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

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner.decode(ids, true).map_err(|e| Error::InvalidInput(format!("could not decode the output ({e})")))
    }
}

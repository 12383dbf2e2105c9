//! A byte-level BPE tokenizer (GPT-2 style, as Llama-family GGUF files describe theirs) built
//! with the `tokenizers` crate from GGUF metadata: `tokenizer.ggml.tokens` (id → string),
//! `tokenizer.ggml.merges` (`"a b"`, by rank), `tokenizer.ggml.token_type` (3 = control tokens,
//! matched whole in text like Hugging Face's added special tokens) and `tokenizer.ggml.pre`
//! (the pre-tokenizer: how text is split before the merges).

use super::TextTokenizer;
use crate::error::{invalid_model, Result};
use crate::weights::gguf::{Gguf, Value};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{AddedToken, Tokenizer};

/// Most tokens and merges accepted (real vocabularies: 32k–256k tokens).
const MAX_VOCAB: usize = 1 << 20;
/// Longest token string accepted, in bytes.
const MAX_TOKEN_BYTES: usize = 1 << 10;
/// `token_type` of control tokens (llama.cpp's LLAMA_TOKEN_TYPE_CONTROL).
const CONTROL: u64 = 3;

/// Pre-tokenizers this build knows by their GGUF name: GPT-2's byte-level regex, with digits
/// split one by one first where llama.cpp's pre-tokenizer of that name does (`\p{N}`).
fn pre_tokenizer(pre: &str) -> Result<PreTokenizerWrapper> {
    let byte_level = ByteLevel::new(false, true, true);
    match pre {
        "gpt2" | "default" => Ok(byte_level.into()),
        "smollm" | "starcoder" | "refact" | "codeshell" => Ok(Sequence::new(vec![Digits::new(true).into(), byte_level.into()]).into()),
        other => Err(invalid_model(format!("the tokenizer's pre-tokenizer `{other}` is not supported (supported: gpt2, smollm, starcoder)"))),
    }
}

fn text<'a>(g: &Gguf, v: &'a Value, what: &str) -> Result<&'a str> {
    v.as_str().filter(|s| s.len() <= MAX_TOKEN_BYTES).ok_or_else(|| {
        invalid_model(format!(
            "{}: a {what} is not a string of at most {MAX_TOKEN_BYTES} bytes",
            g.file()
        ))
    })
}

pub fn from_gguf(g: &Gguf, max_tokens: usize) -> Result<TextTokenizer> {
    let model = g.str("tokenizer.ggml.model")?;
    if model != "gpt2" {
        return Err(invalid_model(format!("{}: tokenizer model `{model}` is not supported (this build reads byte-level BPE, `gpt2`)", g.file())));
    }
    let tokens = g.array("tokenizer.ggml.tokens")?;
    let merges = g.array("tokenizer.ggml.merges")?;
    if tokens.len() > MAX_VOCAB || merges.len() > MAX_VOCAB {
        return Err(invalid_model(format!(
            "{}: {} tokens and {} merges, more than the {MAX_VOCAB} accepted",
            g.file(),
            tokens.len(),
            merges.len()
        )));
    }
    let mut vocab = Vocab::default();
    for (id, t) in tokens.iter().enumerate() {
        if vocab.insert(text(g, t, "token")?.to_string(), id as u32).is_some() {
            return Err(invalid_model(format!(
                "{}: token {id} appears twice in the vocabulary",
                g.file()
            )));
        }
    }
    let merges = merges
        .iter()
        .map(|m| {
            let m = text(g, m, "merge")?;
            let (a, b) = m.split_once(' ').ok_or_else(|| {
                invalid_model(format!("{}: merge `{m}` is not two tokens", g.file()))
            })?;
            Ok((a.to_string(), b.to_string()))
        })
        .collect::<Result<Vec<_>>>()?;
    let bpe = BPE::builder().vocab_and_merges(vocab, merges).build().map_err(|e| {
        invalid_model(format!("{}: the BPE tokenizer could not be built ({e})", g.file()))
    })?;
    let mut tokenizer = Tokenizer::new(bpe);
    tokenizer
        .with_pre_tokenizer(Some(pre_tokenizer(g.str("tokenizer.ggml.pre").unwrap_or("gpt2"))?));
    tokenizer.with_decoder(Some(ByteLevelDecoder::default()));
    let types = g.array("tokenizer.ggml.token_type").unwrap_or(&[]);
    let specials: Vec<AddedToken> = tokens
        .iter()
        .zip(types)
        .filter(|(_, ty)| ty.as_u64() == Some(CONTROL))
        .filter_map(|(t, _)| t.as_str())
        .map(|t| AddedToken::from(t.to_string(), true))
        .collect();
    tokenizer.add_special_tokens(&specials);
    TextTokenizer::from_tokenizer(tokenizer, max_tokens)
}

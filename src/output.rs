//! The CLI's JSON document for one forward (the schema the parity tests and the page's tests
//! compare against).

use crate::attention::ForwardOutput;
use serde::Serialize;

#[derive(Serialize)]
pub struct TokensJson<'a> {
    pub source: &'a [String],
    pub target: &'a [String],
}

#[derive(Serialize)]
pub struct AttentionJson<'a> {
    pub kind: &'static str,
    pub layer: usize,
    pub heads: usize,
    pub shape: [usize; 3],
    pub data: &'a [f32],
}

#[derive(Serialize)]
pub struct AttendJson<'a> {
    pub model: &'a str,
    pub text: &'a str,
    pub tokens: TokensJson<'a>,
    pub output_text: Option<&'a str>,
    pub truncated: bool,
    pub attentions: Vec<AttentionJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sentence_embedding: Option<&'a [f32]>,
}

impl<'a> AttendJson<'a> {
    pub fn new(model_id: &'a str, text: &'a str, out: &'a ForwardOutput) -> AttendJson<'a> {
        AttendJson {
            model: model_id,
            text,
            tokens: TokensJson { source: &out.source_tokens, target: &out.target_tokens },
            output_text: out.output_text.as_deref(),
            truncated: out.truncated,
            attentions: out
                .attentions
                .iter()
                .map(|b| AttentionJson { kind: b.kind.as_str(), layer: b.layer, heads: b.heads, shape: [b.heads, b.query_len, b.key_len], data: &b.probs })
                .collect(),
            sentence_embedding: out.sentence_embedding.as_deref(),
        }
    }
}

//! What every model returns: tokens, optional output text, and attention blocks tagged by kind,
//! layer and heads — attention is the product here, not a by-product. Plus, on demand, every
//! intermediate of one head (the step view) and small analyses used by the CLI table.

use crate::tensor::{HeadTrace, Mat};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionKind {
    /// Encoder tokens attending to encoder tokens (BERT, Marian encoder).
    EncoderSelf,
    /// Decoder tokens attending to earlier decoder tokens (causal).
    DecoderSelf,
    /// Decoder (target) tokens attending to encoder (source) tokens.
    Cross,
}

impl AttentionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AttentionKind::EncoderSelf => "encoder_self",
            AttentionKind::DecoderSelf => "decoder_self",
            AttentionKind::Cross => "cross",
        }
    }

    pub fn parse(s: &str) -> Option<AttentionKind> {
        match s {
            "encoder_self" => Some(AttentionKind::EncoderSelf),
            "decoder_self" => Some(AttentionKind::DecoderSelf),
            "cross" => Some(AttentionKind::Cross),
            _ => None,
        }
    }
}

/// One layer's attention probabilities for every head.
#[derive(Clone, Debug)]
pub struct AttentionBlock {
    pub kind: AttentionKind,
    /// 0-based within its kind.
    pub layer: usize,
    pub heads: usize,
    pub query_len: usize,
    pub key_len: usize,
    /// `# [heads, query_len, key_len]`, each row sums to 1.
    pub probs: Vec<f32>,
}

impl AttentionBlock {
    pub fn row(&self, head: usize, query: usize) -> &[f32] {
        let s = (head * self.query_len + query) * self.key_len;
        &self.probs[s..s + self.key_len]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The decoder produced `</s>`.
    Eos,
    /// The decoder reached the maximum target length without `</s>`.
    MaxLength,
}

/// The result of one forward pass (for a translator: encoding plus greedy decoding).
#[derive(Clone, Debug)]
pub struct ForwardOutput {
    pub source_tokens: Vec<String>,
    pub source_word_ids: Vec<Option<u32>>,
    pub target_tokens: Vec<String>,
    pub target_word_ids: Vec<Option<u32>>,
    pub output_text: Option<String>,
    pub truncated: bool,
    pub stop_reason: Option<StopReason>,
    /// `# [T, d_model]` the last hidden state (encoder for BERT, decoder for translators).
    pub hidden: Mat,
    pub attentions: Vec<AttentionBlock>,
    /// Mean-pooled, L2-normalised sentence embedding (sentence-transformers encoders).
    pub sentence_embedding: Option<Vec<f32>>,
    /// Every intermediate of the head asked for with [`HeadRequest`], if any.
    pub head_internals: Option<HeadInternals>,
}

/// Which head's intermediates to keep during a forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadRequest {
    pub kind: AttentionKind,
    pub layer: usize,
    pub head: usize,
}

/// The step view of one head: Q, K, V, QKᵀ, ÷√d_k, mask, softmax, ×V, with provenance.
#[derive(Clone, Debug)]
pub struct HeadInternals {
    pub request: HeadRequest,
    pub query_tokens: Vec<String>,
    pub key_tokens: Vec<String>,
    /// Where Q comes from (`decoder` for cross-attention) and where K and V come from.
    pub q_source: &'static str,
    pub kv_source: &'static str,
    pub trace: HeadTrace,
}

/// Shannon entropy (nats) of each query row of one head, `# [Tq]`.
pub fn row_entropies(block: &AttentionBlock, head: usize) -> Vec<f32> {
    (0..block.query_len)
        .map(|q| block.row(head, q).iter().filter(|&&p| p > 0.0).map(|&p| -p * p.ln()).sum())
        .collect()
}

/// The `n` largest weights of one row as `(key index, weight)`, largest first.
pub fn top_keys(row: &[f32], n: usize) -> Vec<(usize, f32)> {
    let mut idx: Vec<(usize, f32)> = row.iter().copied().enumerate().collect();
    idx.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    idx.truncate(n);
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_and_top_keys() {
        let block = AttentionBlock { kind: AttentionKind::EncoderSelf, layer: 0, heads: 1, query_len: 2, key_len: 2, probs: vec![1.0, 0.0, 0.5, 0.5] };
        let e = row_entropies(&block, 0);
        assert_eq!(e[0], 0.0);
        assert!((e[1] - std::f32::consts::LN_2).abs() < 1e-6);
        assert_eq!(top_keys(&[0.1, 0.7, 0.2], 2), vec![(1, 0.7), (2, 0.2)]);
        assert_eq!(AttentionKind::parse(AttentionKind::Cross.as_str()), Some(AttentionKind::Cross));
    }
}

//! What every model returns: tokens, optional output text, and attention blocks tagged by kind,
//! layer and heads — attention is the product here, not a by-product — and one head's
//! intermediates for the step view. A [`crate::nn::probe::Probe`] passed into each forward
//! collects them. Plus small analyses used by the CLI table.

use crate::error::{invalid_model, Result};
use crate::nn::score_parts::{QkSplit, ScoreParts};
use crate::tensor::{all_finite, entropy, exp_lanes, matmul_bt, View};
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

    /// Where the queries come from (`encoder` or `decoder`).
    pub fn query_side(self) -> &'static str {
        match self {
            AttentionKind::EncoderSelf => "encoder",
            AttentionKind::DecoderSelf | AttentionKind::Cross => "decoder",
        }
    }

    /// Where the keys and values come from.
    pub fn key_side(self) -> &'static str {
        match self {
            AttentionKind::EncoderSelf | AttentionKind::Cross => "encoder",
            AttentionKind::DecoderSelf => "decoder",
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

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Eos => "eos",
            StopReason::MaxLength => "max_length",
        }
    }
}

/// What one forward computes (for a translator: encoding plus greedy decoding). The attention
/// it went through is in the [`crate::nn::probe::Probe`] that was passed in.
#[derive(Clone, Debug)]
pub struct ForwardOutput {
    pub source_tokens: Vec<String>,
    pub source_word_ids: Vec<Option<u32>>,
    pub target_tokens: Vec<String>,
    pub target_word_ids: Vec<Option<u32>>,
    pub output_text: Option<String>,
    pub truncated: bool,
    /// Why decoding stopped (translators); `None` for encoders.
    pub stop_reason: Option<StopReason>,
    /// Mean-pooled, L2-normalised sentence embedding (sentence-transformers encoders).
    pub sentence_embedding: Option<Vec<f32>>,
    /// What a decoder-only model predicted and generated (its prompt is `source_tokens`, its
    /// continuation `target_tokens`); `None` for encoders and translators.
    pub generation: Option<Generation>,
    /// A translator's candidates at each decode step: the [`TOP_N`] most probable tokens of the
    /// step that chose `target_tokens[t]`, most probable first; `None` for the others.
    pub decode_top: Option<Vec<Vec<TopToken>>>,
}

impl ForwardOutput {
    /// The embedding and the next-token probabilities must be numbers (NaN logits give a top-5
    /// of "NaN": an error instead, saying where).
    pub fn check_finite(&self) -> Result<()> {
        if self.sentence_embedding.as_deref().is_some_and(|e| !all_finite(e)) {
            return Err(invalid_model("the sentence embedding is NaN or infinite: the model's weights make its activations overflow"));
        }
        let generated =
            self.generation.iter().flat_map(|g| g.steps.iter().flat_map(|s| &s.top).chain(&g.next));
        let decoded = self.decode_top.iter().flatten().flatten();
        if generated.chain(decoded).map(|t| t.p).any(|p| !p.is_finite()) {
            return Err(invalid_model("the next-token probabilities are NaN or infinite: the model's weights make its logits overflow"));
        }
        Ok(())
    }
}

/// One candidate for the next token, with the model's probability (softmax at temperature 1).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopToken {
    pub token: String,
    pub id: u32,
    pub p: f32,
}

/// How many candidates a generation step or a decode step lists.
pub const TOP_N: usize = 5;

/// The [`TOP_N`] most probable tokens of one row of logits (softmax at temperature 1; a logit
/// of −∞, a banned token, has probability 0), named by `token`. The exponentials are
/// [`exp_lanes`] in a loop of their own (SIMD), summed in f64: libm's scalar `exp` over a
/// 32,000-token vocabulary cost the translator about 0.5 ms per decode step in wasm.
pub fn top_tokens(logits: &[f32], token: impl Fn(u32) -> String) -> Vec<TopToken> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exps: Vec<f32> = logits.iter().map(|&l| exp_lanes(l - max)).collect();
    let sum: f64 = exps.iter().map(|&e| e as f64).sum();
    top_keys(logits, TOP_N)
        .into_iter()
        .map(|(id, _)| TopToken {
            token: token(id as u32),
            id: id as u32,
            p: (exps[id] as f64 / sum) as f32,
        })
        .collect()
}

/// One generated token: chosen from the distribution at query `position`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GenerationStep {
    pub position: usize,
    pub token: String,
    pub id: u32,
    /// The five most probable next tokens at that position, most probable first.
    pub top: Vec<TopToken>,
}

/// How the next token is chosen: greedy (`temperature` 0, or anything but a finite positive
/// number) or sampled from the softmax of logits ÷ temperature over the `top_k` most probable
/// (0: all), with a seeded generator. The one sampling type: asked for in [`GenerateOptions`],
/// stated in [`Generation`] (serialised with its [`SamplingMethod`], a greedy one at
/// temperature 0).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sampling {
    pub temperature: f64,
    pub top_k: usize,
    pub seed: u32,
}

impl Sampling {
    pub fn method(&self) -> SamplingMethod {
        if self.temperature > 0.0 && self.temperature.is_finite() {
            SamplingMethod::Sample
        } else {
            SamplingMethod::Greedy
        }
    }

    /// As a result states it: a greedy choice at temperature 0.
    pub fn normalised(self) -> Sampling {
        match self.method() {
            SamplingMethod::Greedy => Sampling { temperature: 0.0, ..self },
            SamplingMethod::Sample => self,
        }
    }
}

impl Serialize for Sampling {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Stated {
            method: SamplingMethod,
            temperature: f64,
            top_k: usize,
            seed: u32,
        }
        let n = self.normalised();
        Stated { method: n.method(), temperature: n.temperature, top_k: n.top_k, seed: n.seed }
            .serialize(s)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplingMethod {
    #[default]
    Greedy,
    Sample,
}

/// What to generate after the text (decoder-only models; others ignore it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GenerateOptions {
    pub max_new_tokens: usize,
    pub sampling: Sampling,
}

/// A decoder-only model's prompt, continuation and predictions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Generation {
    pub prompt_len: usize,
    /// Every position fed through the model: the prompt's ids, then the generated ones.
    pub token_ids: Vec<u32>,
    pub steps: Vec<GenerationStep>,
    /// The five most probable tokens after the last position fed.
    pub next: Vec<TopToken>,
    pub sampling: Sampling,
}

/// Which tokens a block's queries (or keys) are: the source's, the target's, or every position
/// fed through a decoder-only model (its prompt in the source, then what it generated).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSide {
    Source,
    Target,
    SourceThenTarget,
}

impl ForwardOutput {
    /// Which tokens the queries and the keys of attention of `kind` are: the one rule every
    /// viewer reads (the result ships it per block). A decoder-only model's self-attention runs
    /// over the prompt and then its continuation.
    pub fn sides_of(&self, kind: AttentionKind) -> (TokenSide, TokenSide) {
        if kind == AttentionKind::DecoderSelf && self.generation.is_some() {
            return (TokenSide::SourceThenTarget, TokenSide::SourceThenTarget);
        }
        let side = |s: &str| if s == "encoder" { TokenSide::Source } else { TokenSide::Target };
        (side(kind.query_side()), side(kind.key_side()))
    }

    /// The query tokens and the key tokens of attention of `kind` (see [`ForwardOutput::sides_of`]).
    pub fn tokens_of(&self, kind: AttentionKind) -> (Vec<String>, Vec<String>) {
        let (q, k) = self.sides_of(kind);
        (self.tokens_on(q), self.tokens_on(k))
    }

    fn tokens_on(&self, side: TokenSide) -> Vec<String> {
        match side {
            TokenSide::Source => self.source_tokens.clone(),
            TokenSide::Target => self.target_tokens.clone(),
            TokenSide::SourceThenTarget => {
                self.source_tokens.iter().chain(&self.target_tokens).cloned().collect()
            }
        }
    }
}

/// A forward's outputs and every attention map it went through.
#[derive(Clone, Debug)]
pub struct Attended {
    pub output: ForwardOutput,
    pub attentions: Vec<AttentionBlock>,
    /// When asked for: per block, α_ij·‖f_h(x_j)‖ (see [`crate::nn::probe::Probe::attention_maps_and_value_norms`]), laid out
    /// like `attentions` (rows do not sum to 1).
    pub value_norms: Option<Vec<AttentionBlock>>,
    /// Every head's scores, block by block ([`crate::heads::score_block`] on `stats`).
    pub scores: Vec<crate::heads::HeadScores>,
    /// Length of the random sequence repeated for the heads' induction scores (causal models).
    pub induction_tokens: Option<usize>,
    /// When asked for: the logit lens.
    pub logit_lens: Option<LogitLens>,
    /// When asked for: what each site's maps are made of, to compute any rows again.
    pub sources: Option<Vec<crate::nn::attention::MapSources>>,
    /// Every site's rows' statistics, and its shape: one per layer of every kind, whether or
    /// not its map is in `attentions`.
    pub stats: Vec<crate::heads::BlockStats>,
    /// Whether some maps were left out of `attentions` ([`crate::nn::probe::KeepMaps`]).
    pub maps_left_out: bool,
}

/// The logit lens (nostalgebraist 2020): what the residual stream after each layer would
/// predict if the network stopped there, through the model's own final norm and unembedding
/// (the last layer's is the model's prediction).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogitLens {
    /// Whose rows the positions are: `decoder_self` (a decoder-only model: each position of the
    /// text, predicting the token after it) or `cross` (a translator: each decode step, the one
    /// that chose `tokens.target[t]`).
    pub kind: AttentionKind,
    /// `[layer][position]` the [`TOP_N`] most probable tokens, most probable first.
    pub top: Vec<Vec<Vec<TopToken>>>,
}

/// Which head's intermediates to keep during a forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadRequest {
    pub kind: AttentionKind,
    pub layer: usize,
    pub head: usize,
}

/// The step view of one head: Q, K, V, QKᵀ, ÷√d_k, mask, softmax, ×V, with provenance; and
/// the end of its attention block, where all heads meet: concatenation, ×Wᴼ, + x, LayerNorm.
#[derive(Clone, Debug)]
pub struct HeadInternals {
    pub request: HeadRequest,
    pub query_tokens: Vec<String>,
    pub key_tokens: Vec<String>,
    pub trace: HeadTrace,
    pub block: BlockTrace,
    /// The head's queries and keys on their two principal components (the qk view).
    pub qk: crate::pca::QkProjection,
    /// The head's scaled scores split into where they come from (the score parts view); None
    /// where the model offers no exact split (no projection biases, no rotary positions).
    pub score_parts: Option<ScoreParts>,
}

/// Where the block's normalisation sits, which says what `normed` is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockNorm {
    /// LayerNorm(x + attention) is the block's output (BERT, Marian: the paper's Add & Norm).
    #[default]
    PostLayerNorm,
    /// x + attention is the block's output; RMSNorm of it is the feed-forward's input (Llama).
    PreRmsNorm,
    /// x + attention is the block's output; LayerNorm of it is the feed-forward's input (GPT-2).
    PreLayerNorm,
}

/// The end of a post-norm attention block (BERT, Marian): every head's output concatenated,
/// projected by Wᴼ, added to the block's input, normalised. Each `# [query_len, d_model]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockTrace {
    pub d_model: usize,
    pub query_len: usize,
    pub norm: BlockNorm,
    /// The heads' outputs side by side: head h is columns h·d_k .. (h+1)·d_k.
    pub concat: Vec<f32>,
    /// concat · Wᴼᵀ + bᴼ
    pub projected: Vec<f32>,
    /// The block's input x (the residual stream).
    pub input: Vec<f32>,
    /// x + projected
    pub residual: Vec<f32>,
    /// LayerNorm(residual): the block's output.
    pub normed: Vec<f32>,
}

impl BlockTrace {
    /// Keeps the rows of queries `0..n`.
    pub(crate) fn keep_first_queries(&mut self, n: usize) {
        let n = n.min(self.query_len);
        let len = n * self.d_model;
        for rows in [
            &mut self.concat,
            &mut self.projected,
            &mut self.input,
            &mut self.residual,
            &mut self.normed,
        ] {
            rows.truncate(len);
        }
        self.query_len = n;
    }

    pub(crate) fn append_queries(&mut self, later: BlockTrace) {
        self.query_len += later.query_len;
        self.concat.extend(later.concat);
        self.projected.extend(later.projected);
        self.input.extend(later.input);
        self.residual.extend(later.residual);
        self.normed.extend(later.normed);
    }
}

/// Every intermediate of one head of one attention call, for the step view.
#[derive(Clone, Debug)]
pub struct HeadTrace {
    pub d_k: usize,
    pub query_len: usize,
    pub key_len: usize,
    /// `# [Tq, d_k]`
    pub q: Vec<f32>,
    /// `# [Tk, d_k]`
    pub k: Vec<f32>,
    /// `# [Tk, d_k]`
    pub v: Vec<f32>,
    /// `# [Tq, Tk]` raw `q · kᵀ`
    pub scores: Vec<f32>,
    /// `# [Tq, Tk]` scores ÷ √d_k
    pub scaled: Vec<f32>,
    /// `# [Tq, Tk]` 1 = visible, 0 = masked
    pub mask: Vec<f32>,
    /// `# [Tq, Tk]`
    pub probs: Vec<f32>,
    /// `# [Tq, d_k]` probs · v
    pub output: Vec<f32>,
    /// How q and k split into parts whose products sum to `scaled` (see [`crate::nn::score_parts`]).
    pub split: Option<QkSplit>,
}

impl HeadTrace {
    /// Keeps queries `0..n` over keys `0..n` of a causal call: what the first `n` positions of
    /// the same tokens give (their later keys were masked).
    pub(crate) fn keep_first_positions(&mut self, n: usize) {
        let (q, tk) = (n.min(self.query_len), n.min(self.key_len));
        for rows in [&mut self.scores, &mut self.scaled, &mut self.mask, &mut self.probs] {
            let kept: Vec<f32> = rows
                .chunks_exact(self.key_len.max(1))
                .take(q)
                .flat_map(|row| row[..tk].iter().copied())
                .collect();
            *rows = kept;
        }
        if let Some(split) = &mut self.split {
            split.keep_first(q, tk, self.d_k);
        }
        self.q.truncate(q * self.d_k);
        self.output.truncate(q * self.d_k);
        self.k.truncate(tk * self.d_k);
        self.v.truncate(tk * self.d_k);
        (self.query_len, self.key_len) = (q, tk);
    }

    /// Appends the query rows of a later call (incremental decoding) over the same keys, or over
    /// more of them (a KV cache that grew, its first keys the earlier ones): the earlier rows
    /// then get the new keys' raw scores q_i·k_j and ÷√d_k, as one call over every key computes
    /// them before the mask (the step view shows a masked key's score), masked, probability 0.
    pub fn append_queries(&mut self, mut later: HeadTrace) {
        self.split = match (self.split.take(), later.split.take()) {
            (Some(split), Some(more)) => split.append(more, self.d_k),
            _ => None,
        };
        let tk = self.key_len.max(later.key_len);
        if later.key_len > self.key_len {
            let (rows, from, d_k) = (self.query_len, self.key_len, self.d_k);
            let added = tk - from;
            // # [rows, added] = Q_earlier · K_addedᵀ
            let mut scores = vec![0.0f32; rows * added];
            if rows > 0 && later.k.len() >= tk * d_k && self.q.len() >= rows * d_k {
                let q = View { data: &self.q, offset: 0, rows, cols: d_k, stride: d_k };
                let k = View {
                    data: &later.k,
                    offset: from * d_k,
                    rows: added,
                    cols: d_k,
                    stride: d_k,
                };
                matmul_bt(q, k, &mut scores, 0, added);
            }
            let scale = 1.0 / (d_k as f32).sqrt();
            let scaled: Vec<f32> = scores.iter().map(|s| s * scale).collect();
            self.scores = join_columns(&self.scores, from, &scores, added);
            self.scaled = join_columns(&self.scaled, from, &scaled, added);
            for rows in [&mut self.mask, &mut self.probs] {
                *rows = widen(rows, from, tk);
            }
            (self.k, self.v, self.key_len) = (later.k, later.v, later.key_len);
        } else if later.key_len < tk {
            for rows in [&mut later.scores, &mut later.scaled, &mut later.mask, &mut later.probs] {
                *rows = widen(rows, later.key_len, tk);
            }
        }
        self.query_len += later.query_len;
        self.q.extend(later.q);
        self.scores.extend(later.scores);
        self.scaled.extend(later.scaled);
        self.mask.extend(later.mask);
        self.probs.extend(later.probs);
        self.output.extend(later.output);
    }
}

/// Rows of `from` columns padded with zeros to `to` columns.
fn widen(rows: &[f32], from: usize, to: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows.len() / from.max(1) * to);
    for row in rows.chunks_exact(from.max(1)) {
        out.extend_from_slice(row);
        out.resize(out.len() + to - from, 0.0);
    }
    out
}

/// Rows of `from` columns, each followed by the same row of `right` (`added` columns).
fn join_columns(left: &[f32], from: usize, right: &[f32], added: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    for (row, more) in left.chunks_exact(from.max(1)).zip(right.chunks_exact(added.max(1))) {
        out.extend_from_slice(row);
        out.extend_from_slice(more);
    }
    out
}

/// Shannon entropy (nats) of each query row of one head, `# [Tq]`.
pub fn row_entropies(block: &AttentionBlock, head: usize) -> Vec<f32> {
    (0..block.query_len).map(|i| entropy(block.row(head, i))).collect()
}

/// The `n` largest weights of one row as `(key index, weight)`, largest first (the lower index
/// first on a tie).
pub fn top_keys(row: &[f32], n: usize) -> Vec<(usize, f32)> {
    let order = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if n == 0 {
        return Vec::new();
    }
    if n <= 8 {
        // One pass keeping the n best sorted: almost every entry of a 32,000- or 49,152-token
        // vocabulary loses to the n-th at one comparison (a decode step's candidates, each step).
        let mut best: Vec<(usize, f32)> = Vec::with_capacity(n + 1);
        for (i, &v) in row.iter().enumerate() {
            if best.len() == n && v.total_cmp(&best[n - 1].1) != std::cmp::Ordering::Greater {
                continue; // not larger than the n-th, and a later index loses a tie
            }
            let at = best.partition_point(|b| order(b, &(i, v)) == std::cmp::Ordering::Less);
            best.insert(at, (i, v));
            best.truncate(n);
        }
        return best;
    }
    // A selection first, then a sort of the n chosen.
    let mut idx: Vec<(usize, f32)> = row.iter().copied().enumerate().collect();
    if n < idx.len() {
        if n > 0 {
            idx.select_nth_unstable_by(n - 1, order);
        }
        idx.truncate(n);
    }
    idx.sort_by(order);
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_and_top_keys() {
        let block = AttentionBlock {
            kind: AttentionKind::EncoderSelf,
            layer: 0,
            heads: 1,
            query_len: 2,
            key_len: 2,
            probs: vec![1.0, 0.0, 0.5, 0.5],
        };
        let e = row_entropies(&block, 0);
        assert_eq!(e[0], 0.0);
        assert!((e[1] - std::f32::consts::LN_2).abs() < 1e-6);
        assert_eq!(top_keys(&[0.1, 0.7, 0.2], 2), vec![(1, 0.7), (2, 0.2)]);
        assert_eq!(AttentionKind::parse(AttentionKind::Cross.as_str()), Some(AttentionKind::Cross));
    }

    #[test]
    fn top_keys_in_one_pass_equals_a_full_sort() {
        let mut x = 12_345u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for len in [0usize, 1, 3, 7, 50, 1000] {
            // Many ties, and −∞ and NaN (ordered by total_cmp: NaN above everything).
            let mut row: Vec<f32> = (0..len).map(|_| (next() % 9) as f32 - 4.0).collect();
            if len > 3 {
                row[1] = f32::NEG_INFINITY;
                row[2] = f32::NAN;
            }
            for n in 0..=10 {
                let mut all: Vec<(usize, f32)> = row.iter().copied().enumerate().collect();
                all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                all.truncate(n);
                let got = top_keys(&row, n);
                let bits = |v: &[(usize, f32)]| {
                    v.iter().map(|&(i, w)| (i, w.to_bits())).collect::<Vec<_>>()
                };
                assert_eq!(bits(&got), bits(&all), "len {len}, n {n}");
            }
        }
    }
}

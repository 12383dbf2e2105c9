//! What every model returns and what a forward records: tokens, optional output text, and
//! attention blocks tagged by kind, layer and heads — attention is the product here, not a
//! by-product. A [`Probe`] passed into each forward says what to record (every attention map,
//! every intermediate of one head for the step view) and collects it; the models only hand
//! each attention call's results to it. Plus small analyses used by the CLI table.

use crate::error::{invalid_model, Error, Result};
use crate::tensor::{all_finite, AttentionOutput, HeadTrace, Mat};
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

/// Where one attention call sits in a model: its kind and its 0-based layer within that kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    pub kind: AttentionKind,
    pub layer: usize,
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
/// it went through is in the [`Probe`] that was passed in.
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
}

impl ForwardOutput {
    /// The embedding and the next-token probabilities must be numbers (NaN logits give a top-5
    /// of "NaN": an error instead, saying where).
    pub fn check_finite(&self) -> Result<()> {
        if self.sentence_embedding.as_deref().is_some_and(|e| !all_finite(e)) {
            return Err(invalid_model("the sentence embedding is NaN or infinite: the model's weights make its activations overflow"));
        }
        if let Some(g) = &self.generation {
            let tops = g.steps.iter().flat_map(|s| &s.top).chain(&g.next);
            if tops.map(|t| t.p).any(|p| !p.is_finite()) {
                return Err(invalid_model("the next-token probabilities are NaN or infinite: the model's weights make its logits overflow"));
            }
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

/// One generated token: chosen from the distribution at query `position`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GenerationStep {
    pub position: usize,
    pub token: String,
    pub id: u32,
    /// The five most probable next tokens at that position, most probable first.
    pub top: Vec<TopToken>,
}

/// How the next token is chosen: greedy (`temperature` 0) or sampled from the softmax of
/// logits ÷ temperature over the `top_k` most probable (0: all), with a seeded generator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Sampling {
    pub method: SamplingMethod,
    pub temperature: f64,
    pub top_k: usize,
    pub seed: u32,
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
    pub temperature: f64,
    pub top_k: usize,
    pub seed: u32,
}

impl GenerateOptions {
    pub fn sampling(&self) -> Sampling {
        let sample = self.temperature > 0.0 && self.temperature.is_finite();
        Sampling {
            method: if sample { SamplingMethod::Sample } else { SamplingMethod::Greedy },
            temperature: if sample { self.temperature } else { 0.0 },
            top_k: self.top_k,
            seed: self.seed,
        }
    }
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
            TokenSide::SourceThenTarget => self.source_tokens.iter().chain(&self.target_tokens).cloned().collect(),
        }
    }
}

/// A forward's outputs and every attention map it went through.
#[derive(Clone, Debug)]
pub struct Attended {
    pub output: ForwardOutput,
    pub attentions: Vec<AttentionBlock>,
    /// When asked for: per block, α_ij·‖f_h(x_j)‖ (see [`Probe::record_value_norms`]), laid out
    /// like `attentions` (rows do not sum to 1).
    pub value_norms: Option<Vec<AttentionBlock>>,
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
    pub block: OutputTrace,
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
pub struct OutputTrace {
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

impl OutputTrace {
    fn append_queries(&mut self, later: OutputTrace) {
        self.query_len += later.query_len;
        self.concat.extend(later.concat);
        self.projected.extend(later.projected);
        self.input.extend(later.input);
        self.residual.extend(later.residual);
        self.normed.extend(later.normed);
    }
}

/// One attention call's maps: `(key_len, # [heads, q, key_len])`.
type Chunk = (usize, Vec<f32>);

fn non_finite(kind: AttentionKind, layer: usize) -> Error {
    invalid_model(format!("the {} attention of layer {} is NaN or infinite: the model's weights make its activations overflow", kind.as_str(), layer + 1))
}

/// What a forward records, passed down to every attention call. Each attention layer asks
/// [`Probe::traced_head`] which of its heads to trace, runs the one attention kernel, and hands
/// the result to [`Probe::record`]; several calls at one site (one per decode step) add query
/// rows to the same block.
#[derive(Debug, Default)]
pub struct Probe {
    maps: bool,
    /// Also record value-weighted norms (Kobayashi et al. 2020) beside every map.
    value_norms: bool,
    head: Option<HeadRequest>,
    /// Per site in first-call order: `(site, heads, chunks)`, each chunk `(key_len_i,
    /// # [heads, q_i, key_len_i])`; keys grow from call to call with a KV cache.
    recorded: Vec<(Site, usize, Vec<Chunk>)>,
    /// The same for α_ij·‖f_h(x_j)‖.
    recorded_norms: Vec<(Site, usize, Vec<Chunk>)>,
    /// ‖f_h(x_j)‖ `# [heads, Tk]` of the attention call about to be recorded at this site.
    pending_norms: Option<(Site, Vec<f32>)>,
    trace: Option<HeadTrace>,
    block: Option<OutputTrace>,
}

impl Probe {
    /// Records every attention map.
    pub fn attention_maps() -> Probe {
        Probe { maps: true, ..Probe::default() }
    }

    /// Records every attention map and, beside each, the value-weighted norms.
    pub fn attention_maps_and_value_norms() -> Probe {
        Probe { maps: true, value_norms: true, ..Probe::default() }
    }

    /// Whether the attention calls should hand ‖f_h(x_j)‖ to [`Probe::record_value_norms`].
    pub fn wants_value_norms(&self) -> bool {
        self.value_norms
    }

    /// Takes ‖f_h(x_j)‖ `# [heads, Tk]` for the next call of [`Probe::record`] at `site`:
    /// f_h(x_j) = (x_j W_V^h + b_V^h) W_O^h is what key j sends through head h (its value,
    /// through the head's slice of the output projection, without the output bias); the
    /// recorded norm of query i, key j is α_ij·‖f_h(x_j)‖ = ‖α_ij f_h(x_j)‖ (Kobayashi et al.,
    /// "Attention is Not Only a Weight", EMNLP 2020).
    pub fn record_value_norms(&mut self, site: Site, norms: Vec<f32>) {
        if self.value_norms {
            self.pending_norms = Some((site, norms));
        }
    }

    /// Records every intermediate of one head, and no maps.
    pub fn head(request: HeadRequest) -> Probe {
        Probe { head: Some(request), ..Probe::default() }
    }

    /// Whether one head's intermediates are being traced (the step view).
    pub fn is_tracing(&self) -> bool {
        self.head.is_some()
    }

    /// The head whose intermediates the attention call at `site` should keep, if any.
    pub fn traced_head(&self, site: Site) -> Option<usize> {
        self.head.filter(|r| r.kind == site.kind && r.layer == site.layer).map(|r| r.head)
    }

    /// Takes what one attention call at `site` computed; returns its context `# [Tq, D]`.
    pub fn record(&mut self, site: Site, heads: usize, att: AttentionOutput) -> Mat {
        let AttentionOutput { context, probs, trace } = att;
        if self.maps {
            let key_len = probs.len() / (heads * context.rows()).max(1);
            if let Some((_, norms)) = self.pending_norms.take().filter(|p| p.0 == site) {
                // [heads, Tq, Tk] · [heads, 1, Tk]
                let weighted: Vec<f32> = probs.iter().enumerate().map(|(i, p)| p * norms[(i / (key_len * context.rows()).max(1)) * key_len + i % key_len.max(1)]).collect();
                push_chunk(&mut self.recorded_norms, site, heads, (key_len, weighted));
            }
            push_chunk(&mut self.recorded, site, heads, (key_len, probs));
        }
        if let Some(t) = trace {
            match &mut self.trace {
                Some(prev) => prev.append_queries(t),
                None => self.trace = Some(t),
            }
        }
        context
    }

    /// Takes the end of the attention block at `site` when its head is traced (`make` runs only
    /// then); successive calls (decode steps) add query rows.
    pub fn record_block(&mut self, site: Site, make: impl FnOnce() -> OutputTrace) {
        if self.traced_head(site).is_none() {
            return;
        }
        let t = make();
        match &mut self.block {
            Some(prev) => prev.append_queries(t),
            None => self.block = Some(t),
        }
    }

    /// The recorded maps, one block per site, queries of successive calls concatenated. Rows
    /// of earlier calls, which saw fewer keys (a KV cache), end in zeros: keys that did not
    /// exist yet get no attention, as under a causal mask.
    pub fn into_attentions(self) -> Vec<AttentionBlock> {
        assemble(self.recorded)
    }

    /// An error naming the first layer whose recorded attention (or traced head) holds NaN or
    /// ∞: weights that overflow the activations give a map of NaN, never one to draw.
    pub fn check_finite(&self) -> Result<()> {
        let bad_site = self.recorded.iter().chain(&self.recorded_norms).find(|(_, _, chunks)| chunks.iter().any(|(_, probs)| !all_finite(probs)));
        if let Some((site, _, _)) = bad_site {
            return Err(non_finite(site.kind, site.layer));
        }
        match (&self.head, &self.trace) {
            (Some(h), Some(t)) if ![&t.q, &t.k, &t.v, &t.scores, &t.probs, &t.output].iter().all(|v| all_finite(v)) => Err(non_finite(h.kind, h.layer)),
            _ => Ok(()),
        }
    }

    /// The maps and, when asked for, the value-weighted norms, laid out alike.
    pub fn into_maps_and_norms(self) -> (Vec<AttentionBlock>, Option<Vec<AttentionBlock>>) {
        let norms = self.value_norms.then(|| assemble(self.recorded_norms));
        (assemble(self.recorded), norms)
    }

    /// The traced head's intermediates and its block's end, all calls' queries concatenated.
    pub fn into_trace(self) -> Option<(HeadTrace, OutputTrace)> {
        Some((self.trace?, self.block.unwrap_or_default()))
    }
}

fn push_chunk(list: &mut Vec<(Site, usize, Vec<Chunk>)>, site: Site, heads: usize, chunk: Chunk) {
    match list.iter_mut().find(|r| r.0 == site) {
        Some(r) => r.2.push(chunk),
        None => list.push((site, heads, vec![chunk])),
    }
}

/// One block per site from its calls' chunks: `[call][heads, q_i, Tk_i]` → `[heads, Σq_i, Tk]`,
/// the rows of calls with fewer keys padded with zeros.
fn assemble(recorded: Vec<(Site, usize, Vec<Chunk>)>) -> Vec<AttentionBlock> {
    recorded
        .into_iter()
        .map(|(site, heads, mut chunks)| {
            let rows = |(tk, c): &(usize, Vec<f32>)| c.len() / (heads * tk).max(1);
            let query_len: usize = chunks.iter().map(rows).sum();
            let key_len = chunks.iter().map(|c| c.0).max().unwrap_or(0);
            let probs = if chunks.len() == 1 {
                chunks.pop().map(|c| c.1).unwrap_or_default()
            } else {
                // [call][heads, q_i, Tk_i] → [heads, Σq_i, Tk]
                let mut probs = Vec::with_capacity(heads * query_len * key_len);
                for h in 0..heads {
                    for chunk in &chunks {
                        let (tk, c) = chunk;
                        let q = rows(chunk);
                        for row in c[h * q * tk..(h + 1) * q * tk].chunks_exact((*tk).max(1)) {
                            probs.extend_from_slice(row);
                            probs.resize(probs.len() + key_len - tk, 0.0);
                        }
                    }
                }
                probs
            };
            AttentionBlock { kind: site.kind, layer: site.layer, heads, query_len, key_len, probs }
        })
        .collect()
}

/// Shannon entropy (nats) of each query row of one head, `# [Tq]`.
pub fn row_entropies(block: &AttentionBlock, head: usize) -> Vec<f32> {
    (0..block.query_len).map(|q| block.row(head, q).iter().filter(|&&p| p > 0.0).map(|&p| -p * p.ln()).sum()).collect()
}

/// The `n` largest weights of one row as `(key index, weight)`, largest first.
pub fn top_keys(row: &[f32], n: usize) -> Vec<(usize, f32)> {
    // A selection first, then a sort of the n chosen: a 49,152-token vocabulary is read once.
    let order = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
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
    use crate::tensor::{multi_head_attention, Mask};

    #[test]
    fn entropy_and_top_keys() {
        let block = AttentionBlock { kind: AttentionKind::EncoderSelf, layer: 0, heads: 1, query_len: 2, key_len: 2, probs: vec![1.0, 0.0, 0.5, 0.5] };
        let e = row_entropies(&block, 0);
        assert_eq!(e[0], 0.0);
        assert!((e[1] - std::f32::consts::LN_2).abs() < 1e-6);
        assert_eq!(top_keys(&[0.1, 0.7, 0.2], 2), vec![(1, 0.7), (2, 0.2)]);
        assert_eq!(AttentionKind::parse(AttentionKind::Cross.as_str()), Some(AttentionKind::Cross));
    }

    fn mat(rows: usize, cols: usize, seed: f32) -> Mat {
        Mat::from_vec(rows, cols, (0..rows * cols).map(|i| (i as f32 * 0.37 + seed).sin()).collect())
    }

    #[test]
    fn probe_concatenates_one_query_per_call_like_a_single_call() {
        // Three one-query calls at one site (incremental decoding) must give the block, and the
        // traced head, that one three-query call gives.
        let (q, k, v) = (mat(3, 8, 0.1), mat(5, 8, 0.2), mat(5, 8, 0.3));
        let site = Site { kind: AttentionKind::Cross, layer: 1 };
        let request = HeadRequest { kind: AttentionKind::Cross, layer: 1, head: 1 };
        let mut whole = Probe::attention_maps();
        let mut whole_head = Probe::head(request);
        let mut steps = Probe::attention_maps();
        let mut steps_head = Probe::head(request);
        whole.record(site, 2, multi_head_attention(&q, &k, &v, 2, Mask::None, None));
        whole_head.record(site, 2, multi_head_attention(&q, &k, &v, 2, Mask::None, whole_head.traced_head(site)));
        for t in 0..3 {
            let qt = Mat::from_vec(1, 8, q.row(t).to_vec());
            steps.record(site, 2, multi_head_attention(&qt, &k, &v, 2, Mask::None, None));
            let other = Site { kind: AttentionKind::EncoderSelf, layer: 1 };
            assert_eq!(steps_head.traced_head(other), None);
            steps_head.record(site, 2, multi_head_attention(&qt, &k, &v, 2, Mask::None, steps_head.traced_head(site)));
        }
        let (a, b) = (whole.into_attentions(), steps.into_attentions());
        assert_eq!(a.len(), 1);
        assert_eq!((b[0].heads, b[0].query_len, b[0].key_len), (2, 3, 5));
        assert_eq!(a[0].probs, b[0].probs);
        let (x, y) = (whole_head.into_trace().unwrap().0, steps_head.into_trace().unwrap().0);
        assert_eq!((y.query_len, y.key_len), (3, 5));
        assert_eq!((x.q, x.scores, x.probs, x.output), (y.q, y.scores, y.probs, y.output));
    }
}

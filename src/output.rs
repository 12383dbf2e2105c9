//! The one result of `attend`, of `step` and of `positions`, as the CLI prints it (JSON) and the wasm facade
//! returns it (a JS object). Its schema is `schema/attend.schema.json`, checked against both
//! by the tests. `F` is how an array of floats goes out: a slice (a JSON array) from the CLI,
//! a `Float32Array` from the wasm facade; everything else is the same.

use crate::heads::HeadScores;
use crate::models::{PositionKind, PositionTable};
use crate::pca::QkProjection;
use crate::result::{
    Attended, AttentionBlock, AttentionKind, BlockNorm, ForwardOutput, Generation, HeadInternals,
    LogitLens, StopReason, TokenSide, TopToken,
};
use serde::Serialize;

/// A value for the source and one for the target side.
#[derive(Serialize)]
pub struct Sides<T> {
    pub source: T,
    pub target: T,
}

/// One layer's attention of one kind, every head.
#[derive(Serialize)]
pub struct AttentionResult<F> {
    pub kind: AttentionKind,
    pub layer: usize,
    pub heads: usize,
    pub query_len: usize,
    pub key_len: usize,
    /// Which tokens the queries are: `source`, `target`, or `source_then_target` (a
    /// decoder-only model's prompt, then what it generated).
    pub query_side: TokenSide,
    /// Which tokens the keys are (as `query_side`).
    pub key_side: TokenSide,
    /// `[heads, query_len, key_len]`: the layout of `data`.
    pub shape: [usize; 3],
    /// `# [heads, query_len, key_len]` row-major, each row sums to 1. Absent from the blocks a
    /// wasm `attend` with the `maps` option left in the worker (`AttnModel.maps` gives them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<F>,
    /// Every head's scores on this map (entropy, attention-sink and pattern shares, induction
    /// for causal models, label: [`crate::heads::score_block`]): what the views read instead of
    /// deriving them again. Absent from value-norm blocks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<Vec<HeadScores>>,
    /// When only some heads are kept (the CLI's `--heads`): which, in the order of `data`'s
    /// first axis. Absent: heads 0 to `heads` − 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_ids: Option<Vec<usize>>,
}

/// What `attend` returns.
#[derive(Serialize)]
pub struct AttendResult<'a, F> {
    pub model: &'a str,
    pub text: &'a str,
    pub tokens: Sides<&'a [String]>,
    /// For each token, the index of the word it belongs to (`null` for special tokens).
    pub word_ids: Sides<&'a [Option<u32>]>,
    pub output_text: Option<&'a str>,
    pub truncated: bool,
    pub stop_reason: Option<StopReason>,
    pub attentions: Vec<AttentionResult<F>>,
    /// When asked for (`--measure value-norm`): per block, ‖α_ij f_h(x_j)‖ with f_h(x_j) key
    /// j's value sent through head h's slice of the output projection (Kobayashi et al. 2020),
    /// laid out like `attentions`; raw norms (rows do not sum to 1). Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_norms: Option<Vec<AttentionResult<F>>>,
    pub sentence_embedding: Option<F>,
    /// A decoder-only model's prompt length, fed ids, generated steps with their top-5
    /// candidates, and its next-token prediction; `null` for encoders and translators.
    pub generation: Option<&'a Generation>,
    /// A translator's top-5 candidates at each decode step (the step of `tokens.target[t]`),
    /// most probable first; `null` for encoders and decoder-only models.
    pub decode_top: Option<&'a [Vec<TopToken>]>,
    /// Time of the forward alone (tokenisation included), in milliseconds.
    pub forward_ms: f64,
    /// Length of the random sequence repeated for the heads' induction scores (causal models),
    /// else null.
    pub induction_tokens: Option<usize>,
    /// When asked for: one head's intermediates (the step view) from the same forward.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<StepResult<'a, F>>,
    /// When asked for (`--lens`, the `lens` option): what each layer would predict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logit_lens: Option<&'a LogitLens>,
    /// Which forward of its model this is, when the maps it left out can be asked for
    /// (`AttnModel.maps(forward, kind, layer)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forward: Option<u32>,
}

impl<'a, F> AttendResult<'a, F> {
    /// `floats` turns each array of floats into its wire form.
    pub fn new(
        model: &'a str,
        text: &'a str,
        a: &'a Attended,
        forward_ms: f64,
        floats: impl Fn(&'a [f32]) -> F,
    ) -> AttendResult<'a, F> {
        Self::sending(model, text, a, forward_ms, floats, None, &|_, _| true)
    }

    /// [`Self::new`] with the maps of only the blocks `sent` picks; with `forward`, the others
    /// stay with the caller as its `forward`-th (the wasm facade's maps on demand). No wire
    /// form is made of a map left out.
    pub fn sending(
        model: &'a str,
        text: &'a str,
        a: &'a Attended,
        forward_ms: f64,
        floats: impl Fn(&'a [f32]) -> F,
        forward: Option<u32>,
        sent: &dyn Fn(AttentionKind, usize) -> bool,
    ) -> AttendResult<'a, F> {
        let out = &a.output;
        AttendResult {
            model,
            text,
            tokens: Sides { source: &out.source_tokens, target: &out.target_tokens },
            word_ids: Sides { source: &out.source_word_ids, target: &out.target_word_ids },
            output_text: out.output_text.as_deref(),
            truncated: out.truncated,
            stop_reason: out.stop_reason,
            attentions: attention_blocks(a, &floats, sent),
            value_norms: a.value_norms.as_ref().map(|norms| {
                let shape = |b: &AttentionBlock| (b.kind, b.layer, b.heads, b.query_len, b.key_len);
                norms.iter().map(|b| block(out, shape(b), Some(floats(&b.probs)), None)).collect()
            }),
            sentence_embedding: out.sentence_embedding.as_deref().map(&floats),
            generation: out.generation.as_ref(),
            decode_top: out.decode_top.as_deref(),
            forward_ms,
            induction_tokens: a.induction_tokens,
            step: None,
            logit_lens: a.logit_lens.as_ref(),
            forward,
        }
    }
}

/// One block in its wire form: the shape `(kind, layer, heads, query_len, key_len)`, its
/// `data` when sent, its heads' `scores` (attention maps, not value norms).
fn block<F>(
    out: &ForwardOutput,
    (kind, layer, heads, query_len, key_len): (AttentionKind, usize, usize, usize, usize),
    data: Option<F>,
    scores: Option<Vec<HeadScores>>,
) -> AttentionResult<F> {
    let (query_side, key_side) = out.sides_of(kind);
    AttentionResult {
        kind,
        layer,
        heads,
        query_len,
        key_len,
        query_side,
        key_side,
        shape: [heads, query_len, key_len],
        data,
        scores,
        head_ids: None,
    }
}

/// The attention blocks in their wire form: one per site the forward went through (its shape
/// and scores from its rows' statistics), with the map when it was kept and `sent` picks it.
fn attention_blocks<'a, F>(
    a: &'a Attended,
    floats: &impl Fn(&'a [f32]) -> F,
    sent: &dyn Fn(AttentionKind, usize) -> bool,
) -> Vec<AttentionResult<F>> {
    a.stats
        .iter()
        .map(|s| {
            let map = a.attentions.iter().find(|b| (b.kind, b.layer) == (s.kind, s.layer));
            let data = map.filter(|_| sent(s.kind, s.layer)).map(|b| floats(&b.probs));
            let scores = a.scores.iter().filter(|h| (h.kind, h.layer) == (s.kind, s.layer));
            let shape = (s.kind, s.layer, s.heads, s.query_len, s.key_len);
            block(&a.output, shape, data, Some(scores.cloned().collect()))
        })
        .collect()
}

/// What `step` returns: every intermediate of one head (the step view).
#[derive(Serialize)]
pub struct StepResult<'a, F> {
    pub model: &'a str,
    pub text: &'a str,
    pub kind: AttentionKind,
    pub layer: usize,
    pub head: usize,
    pub d_k: usize,
    pub query_len: usize,
    pub key_len: usize,
    pub query_tokens: &'a [String],
    pub key_tokens: &'a [String],
    /// Where Q comes from (`encoder` or `decoder`), and where K and V come from.
    pub q_source: &'static str,
    pub kv_source: &'static str,
    /// `# [query_len, d_k]`
    pub q: F,
    /// `# [key_len, d_k]`
    pub k: F,
    /// `# [key_len, d_k]`
    pub v: F,
    /// `# [query_len, key_len]` raw q · kᵀ
    pub scores: F,
    /// `# [query_len, key_len]` scores ÷ √d_k
    pub scaled: F,
    /// `# [query_len, key_len]` 1 = visible, 0 = masked
    pub mask: F,
    /// `# [query_len, key_len]` softmax
    pub probs: F,
    /// `# [query_len, d_k]` probs · v
    pub output: F,
    /// Width of the residual stream (all heads side by side).
    pub d_model: usize,
    /// `post_layer_norm`: `normed` = LayerNorm(residual) is the block's output (BERT, Marian);
    /// `pre_rms_norm`: `residual` is the block's output and `normed` = RMSNorm(residual) the
    /// feed-forward's input (Llama); `pre_layer_norm`: the same with LayerNorm (GPT-2).
    pub block_norm: BlockNorm,
    /// `# [query_len, d_model]` every head's output side by side: head h is columns h·d_k…
    pub concat: F,
    /// `# [query_len, d_model]` concat · Wᴼᵀ + bᴼ
    pub projected: F,
    /// `# [query_len, d_model]` the block's input x (the residual stream)
    pub block_input: F,
    /// `# [query_len, d_model]` x + projected
    pub residual: F,
    /// `# [query_len, d_model]` LayerNorm(residual): the block's output
    pub normed: F,
    /// The queries and keys on their two principal components (plain arrays: a few hundred
    /// numbers).
    pub qk_pca: &'a QkProjection,
    /// The scaled scores split into where they come from (`null` where the model offers no
    /// exact split): see [`ScorePartsResult`].
    pub score_parts: Option<ScorePartsResult<'a, F>>,
}

/// Each scaled score q_i·k_j/√d_k of the head as a sum of parts (src/nn/score_parts.rs).
#[derive(Serialize)]
pub struct ScorePartsResult<'a, F> {
    /// `embedding` (first layer: token, position, bias parts of q and k), `bias` (input and
    /// bias parts) or `rotary` (one part per rotated dimension pair).
    pub basis: &'static str,
    /// Part p's name: `token·position` is the query's token part · the key's position part.
    pub names: &'a [String],
    /// `# [parts, query_len, key_len]`: summed over the parts, `scaled`.
    pub values: F,
    /// `rotary`: each pair's θ in radians per position; empty otherwise.
    pub frequencies: &'a [f64],
}

impl<'a, F> StepResult<'a, F> {
    pub fn new(
        model: &'a str,
        text: &'a str,
        hi: &'a HeadInternals,
        floats: impl Fn(&'a [f32]) -> F,
    ) -> StepResult<'a, F> {
        let (r, t) = (hi.request, &hi.trace);
        StepResult {
            model,
            text,
            kind: r.kind,
            layer: r.layer,
            head: r.head,
            d_k: t.d_k,
            query_len: t.query_len,
            key_len: t.key_len,
            query_tokens: &hi.query_tokens,
            key_tokens: &hi.key_tokens,
            q_source: r.kind.query_side(),
            kv_source: r.kind.key_side(),
            q: floats(&t.q),
            k: floats(&t.k),
            v: floats(&t.v),
            scores: floats(&t.scores),
            scaled: floats(&t.scaled),
            mask: floats(&t.mask),
            probs: floats(&t.probs),
            output: floats(&t.output),
            d_model: hi.block.d_model,
            block_norm: hi.block.norm,
            concat: floats(&hi.block.concat),
            projected: floats(&hi.block.projected),
            block_input: floats(&hi.block.input),
            residual: floats(&hi.block.residual),
            normed: floats(&hi.block.normed),
            qk_pca: &hi.qk,
            score_parts: hi.score_parts.as_ref().map(|p| ScorePartsResult {
                basis: p.basis,
                names: &p.names,
                values: floats(&p.values),
                frequencies: &p.frequencies,
            }),
        }
    }
}

/// What `heads` returns: every head's scores and label on the text (see `attnviz::heads`).
#[derive(Serialize)]
pub struct HeadsResult<'a> {
    pub model: &'a str,
    pub text: &'a str,
    pub tokens: Sides<&'a [String]>,
    /// Length of the random sequence repeated for the induction scores (causal models), else null.
    pub induction_tokens: Option<usize>,
    pub heads: &'a [HeadScores],
}

impl<'a> HeadsResult<'a> {
    pub fn new(
        model: &'a str,
        text: &'a str,
        a: &'a Attended,
        heads: &'a [HeadScores],
        induction_tokens: Option<usize>,
    ) -> HeadsResult<'a> {
        HeadsResult {
            model,
            text,
            tokens: Sides { source: &a.output.source_tokens, target: &a.output.target_tokens },
            induction_tokens,
            heads,
        }
    }
}

/// What `positions` returns: the vectors the model adds to its token embeddings, per position.
#[derive(Serialize)]
pub struct PositionsResult<'a, F> {
    pub model: &'a str,
    /// `sinusoidal` (computed, Marian), `learned` (a weight table, BERT) or `rotary` (cos and sin
    /// of the rotation angles, Llama).
    pub kind: PositionKind,
    pub positions: usize,
    pub dims: usize,
    /// `[positions, dims]`: the layout of `data`.
    pub shape: [usize; 2],
    /// `# [positions, dims]` row-major: row `p` is what is added to the token at position `p`.
    pub data: F,
    /// A computed table's (sinusoidal, rotary) frequencies: pair i turns by
    /// θ_i = base^(−i/denominator) radians per position; `frequencies[c]` is column c's θ
    /// (columns i and dims/2 + i are one pair). `null` for a learned table.
    pub wave: Option<WaveResult>,
}

/// See [`PositionsResult::wave`].
#[derive(Serialize)]
pub struct WaveResult {
    pub base: f64,
    pub denominator: f64,
    pub frequencies: Vec<f64>,
}

impl<'a, F> PositionsResult<'a, F> {
    pub fn new(
        model: &'a str,
        t: &'a PositionTable,
        floats: impl Fn(&'a [f32]) -> F,
    ) -> PositionsResult<'a, F> {
        let wave = t.wave.map(|w| WaveResult {
            base: w.base,
            denominator: w.denominator,
            frequencies: w.column_frequencies(t.dims),
        });
        PositionsResult {
            model,
            kind: t.kind,
            positions: t.positions,
            dims: t.dims,
            shape: [t.positions, t.dims],
            data: floats(&t.data),
            wave,
        }
    }
}

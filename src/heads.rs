//! Head analytics: what each head's attention does on a text, as scores in [0, 1] and one
//! dominant label, for the page's head overview and `attnviz heads`. Each score is a mean over
//! the query rows of the head's map α (rows sum to 1):
//! - `entropy`: Shannon entropy of a row, in nats; `broad`: the same ÷ ln(keys the row can
//!   see), 1 = uniform (Clark et al. 2019, "What Does BERT Look At?", §3 "broad attention").
//! - `first`: weight on the first key — the "attention sink" of causal models (Xiao et al.
//!   2023, "Efficient Streaming Language Models with Attention Sinks"); `special`: weight on the
//!   model's special tokens ([CLS], [SEP], </s>, …), where BERT heads park attention (Clark et
//!   al. 2019, §3.2).
//! - `previous`, `next`, `self`: weight on key i − 1, i + 1, i (Clark et al. 2019, §3.1); only
//!   where queries and keys are one sequence (not cross-attention).
//! - `delimiter`: weight on [SEP]/</s> and punctuation tokens (Clark et al. 2019, §3.2).
//! - `induction` (causal models): on a random token sequence repeated twice, the weight a
//!   token of the second copy puts on the token that followed its first occurrence (Olsson et
//!   al. 2022, "In-context Learning and Induction Heads").
//!
//! The label is `induction` when that score reaches [`PATTERN_MIN`]; else the largest of sink
//! (max of first, special), previous, next (not in causal heads), self and delimiter when it
//! reaches [`PATTERN_MIN`]; otherwise `broad` when the normalised entropy reaches [`BROAD_MIN`],
//! else `mixed`.

use crate::result::{AttentionBlock, AttentionKind};
use crate::tensor::entropy;
use serde::Serialize;

/// A pattern names a head when at least this share of its weight follows it.
pub const PATTERN_MIN: f32 = 0.4;
/// A head without a pattern is `broad` from this normalised entropy on.
pub const BROAD_MIN: f32 = 0.6;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadLabel {
    Sink,
    Previous,
    Next,
    #[serde(rename = "self")]
    SelfToken,
    Delimiter,
    Induction,
    Broad,
    Mixed,
}

/// One head's scores on one text.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeadScores {
    pub kind: AttentionKind,
    pub layer: usize,
    pub head: usize,
    pub entropy: f32,
    pub broad: f32,
    pub first: f32,
    pub special: f32,
    pub previous: Option<f32>,
    pub next: Option<f32>,
    #[serde(rename = "self")]
    pub self_token: Option<f32>,
    pub delimiter: f32,
    pub induction: Option<f32>,
    pub label: HeadLabel,
    /// The score behind the label.
    pub score: f32,
}

/// Whether a token is punctuation once its word-start/continuation marks are removed.
fn is_punctuation(token: &str) -> bool {
    let core = token.trim_start_matches(['Ġ', '▁', 'Ċ']).trim_start_matches("##");
    !core.is_empty() && core.chars().all(|c| c.is_ascii_punctuation() || "—–…“”‘’«»¿¡".contains(c))
}

/// [`token_class`] bit: one of the model's special tokens.
pub const SPECIAL: u8 = 1;
/// [`token_class`] bit: [SEP], </s> or punctuation.
pub const DELIMITER: u8 = 2;

/// What a key token counts towards (`special`, `delimiter`): [`SPECIAL`] | [`DELIMITER`] bits.
pub fn token_class(token: &str, special: &[String]) -> u8 {
    let is_special = special.iter().any(|s| s == token);
    let is_delimiter = is_punctuation(token) || matches!(token, "[SEP]" | "</s>");
    (if is_special { SPECIAL } else { 0 }) | (if is_delimiter { DELIMITER } else { 0 })
}

/// What the head scores need of one query row of a map, taken while the forward has the row
/// (the maps of a long text are not kept): its entropy and the weights on a few keys.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RowStats {
    /// Nats, from the row's softmax.
    pub entropy: f32,
    /// On key 0.
    pub first: f32,
    /// On keys i − 1, i, i + 1 for the query at position i (0 where there is none).
    pub previous: f32,
    pub self_token: f32,
    pub next: f32,
    /// On the keys of class [`SPECIAL`], and of class [`DELIMITER`].
    pub special: f32,
    pub delimiter: f32,
}

impl RowStats {
    /// The statistics of `row` (one query's weights over the keys), the query at `position` of
    /// its sequence.
    pub fn of(row: &[f32], entropy: f32, position: usize, keys: &ClassedKeys) -> RowStats {
        let at = |j: Option<usize>| j.and_then(|j| row.get(j)).copied().unwrap_or(0.0);
        let sum = |keys: &[usize]| keys.iter().map(|&j| at(Some(j))).sum();
        RowStats {
            entropy,
            first: at(Some(0)),
            previous: at(position.checked_sub(1)),
            self_token: at(Some(position)),
            next: at(Some(position + 1)),
            special: sum(&keys.special),
            delimiter: sum(&keys.delimiter),
        }
    }

    /// Counts the row's weight on its own key (`self_token`) towards the key's class `class`,
    /// learnt after the row was computed.
    pub fn add_own_key(&mut self, class: u8) {
        if class & SPECIAL != 0 {
            self.special += self.self_token;
        }
        if class & DELIMITER != 0 {
            self.delimiter += self.self_token;
        }
    }
}

/// The keys of each class by index (few in a text: a row's share of them is a short sum).
#[derive(Debug, Default)]
pub struct ClassedKeys {
    special: Vec<usize>,
    delimiter: Vec<usize>,
}

impl ClassedKeys {
    /// Keys `0..key_len` whose [`token_class`] is `classes[j]` (past its end: neither).
    pub fn of(classes: &[u8], key_len: usize) -> ClassedKeys {
        let with = |bit: u8| {
            let keys = classes.iter().take(key_len).enumerate();
            keys.filter(|(_, &c)| c & bit != 0).map(|(j, _)| j).collect()
        };
        ClassedKeys { special: with(SPECIAL), delimiter: with(DELIMITER) }
    }
}

/// The row statistics of one layer's attention, every head: what [`score_block`] reads.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockStats {
    pub kind: AttentionKind,
    pub layer: usize,
    pub heads: usize,
    pub query_len: usize,
    pub key_len: usize,
    /// `# [heads, query_len]`
    pub rows: Vec<RowStats>,
}

impl BlockStats {
    /// The statistics of every row of `block`, whose keys have the classes `classes`; each row's
    /// entropy computed again (a forward takes its rows' from their softmax instead).
    pub fn of_block(block: &AttentionBlock, classes: &[u8]) -> BlockStats {
        let same_sequence = block.kind != AttentionKind::Cross;
        let classes = &ClassedKeys::of(classes, block.key_len);
        let rows = (0..block.heads)
            .flat_map(|h| (0..block.query_len).map(move |i| (h, i)))
            .map(|(h, i)| {
                let row = block.row(h, i);
                RowStats::of(row, entropy(row), if same_sequence { i } else { 0 }, classes)
            })
            .collect();
        let AttentionBlock { kind, layer, heads, query_len, key_len, .. } = *block;
        BlockStats { kind, layer, heads, query_len, key_len, rows }
    }

    fn head(&self, h: usize) -> &[RowStats] {
        let q = self.query_len;
        self.rows.get(h * q..(h + 1) * q).unwrap_or_default()
    }
}

fn mean(values: impl Iterator<Item = f32>) -> Option<f32> {
    let (sum, n) = values.fold((0.0f64, 0usize), |(s, n), v| (s + v as f64, n + 1));
    (n > 0).then(|| (sum / n as f64) as f32)
}

/// Scores of every head of a block from its rows' statistics; `induction` the heads' induction
/// scores from [`induction_scores`] when the model is causal.
pub fn score_block(block: &BlockStats, induction: Option<&[f32]>) -> Vec<HeadScores> {
    let (tq, tk) = (block.query_len, block.key_len);
    let same_sequence = block.kind != AttentionKind::Cross && tq == tk;
    let causal = block.kind == AttentionKind::DecoderSelf;
    (0..block.heads)
        .map(|h| {
            let rows = block.head(h);
            let visible = |i: usize| if causal && same_sequence { i + 1 } else { tk };
            let entropy = mean(rows.iter().map(|r| r.entropy)).unwrap_or(0.0);
            let broad = mean(
                rows.iter()
                    .enumerate()
                    .filter(|&(i, _)| visible(i) > 1)
                    .map(|(i, r)| (r.entropy / (visible(i) as f32).ln()).min(1.0)),
            )
            .unwrap_or(0.0);
            // (clamped: a share of weights is at most 1, whatever the sums' rounding)
            let share =
                |of: fn(&RowStats) -> f32| mean(rows.iter().map(of)).unwrap_or(0.0).clamp(0.0, 1.0);
            let first = share(|r| r.first);
            let special = share(|r| r.special);
            let delimiter = share(|r| r.delimiter);
            // Over the rows whose query has such a key: i − 1 from row 1, i + 1 up to row tk − 2.
            let offset = |of: fn(&RowStats) -> f32, from: usize, to: usize| {
                same_sequence.then(|| {
                    mean(rows.get(from..to.max(from)).unwrap_or_default().iter().map(of))
                        .unwrap_or(0.0)
                })
            };
            let previous = offset(|r| r.previous, 1, tq);
            let next = offset(|r| r.next, 0, tk.saturating_sub(1));
            let self_token = offset(|r| r.self_token, 0, tq);
            let induction = induction.and_then(|s| s.get(h).copied());
            let candidates = [
                (HeadLabel::Sink, Some(first.max(special))),
                (HeadLabel::Previous, previous),
                (HeadLabel::Next, next.filter(|_| !causal)),
                (HeadLabel::SelfToken, self_token),
                (HeadLabel::Delimiter, Some(delimiter)),
            ];
            let best = candidates
                .iter()
                .filter_map(|&(l, s)| Some((l, s?)))
                .fold((HeadLabel::Mixed, f32::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
            // Induction is measured on its own input (a repeated sequence) and is what marks an
            // induction head whatever else it does on the text (Olsson et al. 2022).
            let (label, score) = if let Some(i) = induction.filter(|&i| i >= PATTERN_MIN) {
                (HeadLabel::Induction, i)
            } else if best.1 >= PATTERN_MIN {
                best
            } else if broad >= BROAD_MIN {
                (HeadLabel::Broad, broad)
            } else {
                (HeadLabel::Mixed, best.1.max(0.0))
            };
            HeadScores {
                kind: block.kind,
                layer: block.layer,
                head: h,
                entropy,
                broad,
                first,
                special,
                previous,
                next,
                self_token,
                delimiter,
                induction,
                label,
                score,
            }
        })
        .collect()
}

/// Induction score of each head of a block computed on `2n` tokens, a random sequence of `n`
/// repeated: for queries i ≥ n, the weight on key i − n + 1 (what followed the query's token
/// the first time).                                                              # [heads]
pub fn induction_scores(block: &AttentionBlock, n: usize) -> Vec<f32> {
    (0..block.heads)
        .map(|h| {
            mean(
                (n..block.query_len.min(2 * n))
                    .map(|i| block.row(h, i).get(i + 1 - n).copied().unwrap_or(0.0)),
            )
            .unwrap_or(0.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-head block of `t` queries and keys whose row i is `row(i)`.
    fn block(kind: AttentionKind, t: usize, row: impl Fn(usize) -> Vec<f32>) -> AttentionBlock {
        AttentionBlock {
            kind,
            layer: 0,
            heads: 1,
            query_len: t,
            key_len: t,
            probs: (0..t).flat_map(row).collect(),
        }
    }

    fn one_hot(t: usize, j: usize) -> Vec<f32> {
        (0..t).map(|k| if k == j { 1.0 } else { 0.0 }).collect()
    }

    fn tokens(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// The scores of `block` whose keys are `keys`, the model's special tokens `special`.
    fn score_block(
        block: &AttentionBlock,
        keys: &[String],
        special: &[String],
        induction: Option<&[f32]>,
    ) -> Vec<HeadScores> {
        let classes: Vec<u8> = keys.iter().map(|k| token_class(k, special)).collect();
        super::score_block(&BlockStats::of_block(block, &classes), induction)
    }

    #[test]
    fn constructed_patterns_get_their_labels_and_exact_scores() {
        let keys = tokens(&["[CLS]", "the", "cat", ",", "sat", "[SEP]"]);
        let special = tokens(&["[CLS]", "[SEP]"]);
        let t = keys.len();
        let prev = &score_block(
            &block(AttentionKind::EncoderSelf, t, |i| one_hot(t, i.saturating_sub(1))),
            &keys,
            &special,
            None,
        )[0];
        // Row 0 has no previous key and is left out of the mean.
        assert_eq!((prev.label, prev.previous), (HeadLabel::Previous, Some(1.0)));
        assert_eq!(prev.entropy, 0.0);
        let next = &score_block(
            &block(AttentionKind::EncoderSelf, t, |i| one_hot(t, (i + 1).min(t - 1))),
            &keys,
            &special,
            None,
        )[0];
        assert_eq!((next.label, next.next), (HeadLabel::Next, Some(1.0)));
        let own = &score_block(
            &block(AttentionKind::EncoderSelf, t, |i| one_hot(t, i)),
            &keys,
            &special,
            None,
        )[0];
        assert_eq!((own.label, own.self_token, own.score), (HeadLabel::SelfToken, Some(1.0), 1.0));
        let sep = &score_block(
            &block(AttentionKind::EncoderSelf, t, |_| one_hot(t, 5)),
            &keys,
            &special,
            None,
        )[0];
        assert_eq!(
            (sep.label, sep.special, sep.delimiter, sep.first),
            (HeadLabel::Sink, 1.0, 1.0, 0.0)
        );
        let comma = &score_block(
            &block(AttentionKind::EncoderSelf, t, |_| one_hot(t, 3)),
            &keys,
            &special,
            None,
        )[0];
        assert_eq!((comma.label, comma.delimiter, comma.special), (HeadLabel::Delimiter, 1.0, 0.0));
        let uniform = &score_block(
            &block(AttentionKind::EncoderSelf, t, |_| vec![1.0 / t as f32; t]),
            &keys,
            &special,
            None,
        )[0];
        assert_eq!(uniform.label, HeadLabel::Broad);
        assert!(
            (uniform.broad - 1.0).abs() < 1e-6 && (uniform.entropy - (t as f32).ln()).abs() < 1e-5
        );
    }

    #[test]
    fn causal_sink_and_cross_attention() {
        let keys = tokens(&["The", "Ġcat", "Ġsat", "."]);
        // Causal: row i sees keys 0..=i; everything on the first key is a sink, and row 0's
        // single visible key does not count towards "broad".
        let sink = &score_block(
            &block(AttentionKind::DecoderSelf, 4, |_| one_hot(4, 0)),
            &keys,
            &[],
            None,
        )[0];
        assert_eq!(
            (sink.label, sink.first, sink.broad, sink.next),
            (HeadLabel::Sink, 1.0, 0.0, Some(0.0))
        );
        // A causal uniform head: each row uniform over what it can see is fully broad.
        let uniform = &score_block(
            &block(AttentionKind::DecoderSelf, 4, |i| {
                (0..4).map(|j| if j <= i { 1.0 / (i + 1) as f32 } else { 0.0 }).collect()
            }),
            &keys,
            &[],
            None,
        )[0];
        assert!((uniform.broad - 1.0).abs() < 1e-6, "{}", uniform.broad);
        // Cross-attention has no previous/next/self: its queries are another sequence.
        let cross = AttentionBlock {
            kind: AttentionKind::Cross,
            layer: 1,
            heads: 1,
            query_len: 2,
            key_len: 4,
            probs: [one_hot(4, 1), one_hot(4, 2)].concat(),
        };
        let c = &score_block(&cross, &keys, &[], None)[0];
        assert_eq!((c.previous, c.next, c.self_token, c.layer), (None, None, None, 1));
    }

    #[test]
    fn an_induction_head_is_found_on_a_repeated_sequence() {
        // n = 3: tokens a b c a b c; query 3 (second a) looks at key 1 (b), query 4 at key 2, 5 at 3.
        let n = 3;
        let b = block(AttentionKind::DecoderSelf, 6, |i| {
            if i >= n {
                one_hot(6, i + 1 - n)
            } else {
                one_hot(6, 0)
            }
        });
        assert_eq!(induction_scores(&b, n), vec![1.0]);
        let keys = tokens(&["a", "b", "c", "a", "b", "c"]);
        let scores = &score_block(&b, &keys, &[], Some(&[0.5]))[0];
        // On the text this head is a sink (rows 0–2); its induction score decides from 0.4 on.
        assert_eq!((scores.label, scores.induction), (HeadLabel::Induction, Some(0.5)));
        assert_eq!(score_block(&b, &keys, &[], Some(&[0.3]))[0].label, HeadLabel::Sink);
        let prev = block(AttentionKind::DecoderSelf, 6, |i| one_hot(6, i.saturating_sub(1)));
        assert_eq!(induction_scores(&prev, n), vec![0.0]);
    }
}

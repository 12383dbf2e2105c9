//! Model families, one module each (`bert`, `marian`, `llama`, `gpt2`; `decoder` holds what the
//! causal ones share; `marian`, the largest, is a folder split by job), each implementing
//! [`Family`] and declaring its [`family::Architecture`]; [`manifest`] lists the
//! architectures, [`load`] loads one,
//! [`inspect`] reads a user's files before loading, and [`Model`] dispatches to its family.
//! Their shared layers are in [`crate::nn`]; each loads its tensors through a
//! [`crate::weights::Scope`], by module path.
//!
//! A new family needs: `models/<family>.rs` with its model (`impl Family`, or for a causal
//! decoder `impl decoder::CausalLm`, which gives it `Family` with generation) and its
//! `pub const ARCHITECTURE: Architecture` (model types, loader, sizes), `pub mod <family>;`
//! here, and its line in [`manifest::ARCHITECTURES`].

pub mod bert;
pub mod decoder;
pub mod family;
pub mod gpt2;
pub mod inspect;
pub mod llama;
pub mod load;
pub mod manifest;
pub mod marian;

pub use family::{Family, FamilyShape, PositionKind, PositionTable, Wave};
pub use manifest::Manifest;

use crate::error::{Error, Result};
use crate::heads::{induction_scores, score_block, BlockStats, HeadScores};
use crate::nn::probe::{KeepMaps, Probe, Recordings};
use crate::nn::score_parts::score_parts;
use crate::result::{
    Attended, AttentionBlock, AttentionKind, ForwardOutput, GenerateOptions, HeadInternals,
    HeadRequest, LogitLens,
};
use crate::tokenize::TextTokenizer;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Length of the random sequence that is repeated to find induction heads.
pub const INDUCTION_TOKENS: usize = 20;

/// Each head's induction score per causal self-attention site (kind, layer).
type InductionScores = Vec<(AttentionKind, usize, Vec<f32>)>;

/// A loaded model: its manifest and its family's model.
pub struct Model {
    pub manifest: Manifest,
    pub family: Box<dyn Family>,
    /// Its heads' induction scores (causal models; `None` for the others): they do not depend
    /// on the text, so the probe runs on the first forward and every later one reads them.
    induction: OnceLock<Option<InductionScores>>,
    /// Its special tokens, which the head scores tell apart among the keys.
    special_tokens: OnceLock<Arc<[String]>>,
}

/// Positions a table holds when none are asked for: enough to see the slow dimensions turn.
pub const DEFAULT_POSITIONS: usize = 128;

/// What a viewer needs to know about a loaded model before the first forward.
#[derive(Clone, Debug, Serialize)]
pub struct ModelInfo {
    pub id: String,
    pub name: String,
    pub architecture: String,
    pub kinds: Vec<AttentionKind>,
    pub layers: HashMap<AttentionKind, usize>,
    pub heads: HashMap<AttentionKind, usize>,
    /// Key/value heads per kind: fewer than `heads` when query heads share them (GQA).
    pub kv_heads: HashMap<AttentionKind, usize>,
    /// Whether the model continues a text (decoder-only): `attend` then takes generation options.
    pub generates: bool,
    pub head_dim: usize,
    pub max_positions: usize,
    pub special_tokens: Vec<String>,
    pub credit: String,
    pub license: String,
    pub example: String,
}

/// What a forward records besides the attention maps.
#[derive(Clone, Debug, Default)]
pub struct Asks {
    /// α_ij·‖f_h(x_j)‖ beside every map (the value-weighted measure).
    pub value_norms: bool,
    /// One head's intermediates (the step, query/key and score parts views).
    pub head: Option<HeadRequest>,
    /// The logit lens: what each layer would predict.
    pub lens: bool,
    /// What every map is made of, to compute any head's rows again ([`MapSources`]).
    pub sources: bool,
    /// Which maps to keep (all by default).
    pub keep_maps: KeepMaps,
}

impl Model {
    pub fn new(manifest: Manifest, family: Box<dyn Family>) -> Model {
        Model { manifest, family, induction: OnceLock::new(), special_tokens: OnceLock::new() }
    }

    /// One forward; `probe` says what to record besides the outputs, and holds it afterwards.
    /// `generate` says what a decoder-only model generates after the text (others ignore it).
    /// A forward whose attention or outputs came out NaN or infinite is an error naming the layer.
    pub fn forward(
        &self,
        text: &str,
        generate: &GenerateOptions,
        probe: &mut Probe,
    ) -> Result<ForwardOutput> {
        let output = self.family.forward(text, generate, probe)?;
        probe.check_finite()?;
        output.check_finite()?;
        Ok(output)
    }

    /// The next forward starts from position 0, whatever the last one computed (a causal
    /// decoder otherwise reuses the positions the last text shares with the next).
    pub fn forget_previous_forward(&self) {
        self.family.forget_previous();
    }

    /// One forward with every attention map.
    pub fn attend(&self, text: &str) -> Result<Attended> {
        self.attend_generating(text, &GenerateOptions::default())
    }

    /// One forward with every attention map, generating after the text as `generate` says
    /// (decoder-only models).
    pub fn attend_generating(&self, text: &str, generate: &GenerateOptions) -> Result<Attended> {
        self.attend_with(text, generate, false)
    }

    /// One forward with every attention map and every head's scores, generating after the text
    /// as `generate` says (decoder-only models), and, when `value_norms`, the value-weighted
    /// norms of every map.
    pub fn attend_with(
        &self,
        text: &str,
        generate: &GenerateOptions,
        value_norms: bool,
    ) -> Result<Attended> {
        Ok(self.attend_tracing(text, generate, value_norms, None)?.0)
    }

    /// As [`Model::attend_with`], and when `head` is given that head's intermediates (the step
    /// view) from the same forward: one forward feeds every view of a text.
    pub fn attend_tracing(
        &self,
        text: &str,
        generate: &GenerateOptions,
        value_norms: bool,
        head: Option<HeadRequest>,
    ) -> Result<(Attended, Option<HeadInternals>)> {
        self.attend_asking(text, generate, Asks { value_norms, head, ..Asks::default() })
    }

    /// One forward with every attention map and what `asks` adds: the value norms, one head's
    /// intermediates, the logit lens (decoder-only models and translators).
    pub fn attend_asking(
        &self,
        text: &str,
        generate: &GenerateOptions,
        asks: Asks,
    ) -> Result<(Attended, Option<HeadInternals>)> {
        let Asks { value_norms, head, lens, sources, keep_maps } = asks;
        if let Some(request) = head {
            self.check_head(request)?;
        }
        let shape = self.family.shape();
        let lens_kind = if shape.generates {
            AttentionKind::DecoderSelf
        } else if shape.kinds.iter().any(|k| k.0 == AttentionKind::Cross) {
            AttentionKind::Cross
        } else {
            if lens {
                return Err(Error::InvalidInput(format!(
                    "{} predicts no tokens, so it has no logit lens (decoder-only models and translators have one)",
                    self.manifest.name
                )));
            }
            AttentionKind::EncoderSelf
        };
        let mut probe = Probe::maps_and_head(value_norms, head)
            .with_lens(lens)
            .with_sources(sources)
            .keeping_maps(keep_maps)
            .with_token_classes(self.special_tokens());
        let output = self.forward(text, generate, &mut probe)?;
        let Recordings {
            maps: attentions,
            value_norms,
            trace,
            lens,
            sources,
            stats,
            maps_left_out,
        } = probe.into_parts();
        let internals = match head {
            Some(request) => Some(self.internals(&output, request, trace)?),
            None => None,
        };
        let (scores, induction_tokens) = self.score_heads(&stats)?;
        let logit_lens = lens.map(|top| LogitLens { kind: lens_kind, top });
        let a = Attended {
            output,
            attentions,
            value_norms,
            scores,
            induction_tokens,
            logit_lens,
            sources,
            stats,
            maps_left_out,
        };
        Ok((a, internals))
    }

    /// Every head's scores from its rows' statistics (see [`crate::heads`]); causal models'
    /// include their induction score from a repeated random sequence of [`INDUCTION_TOKENS`]
    /// tokens, whose length is returned beside them.
    fn score_heads(&self, stats: &[BlockStats]) -> Result<(Vec<HeadScores>, Option<usize>)> {
        let induction = self.induction()?;
        let mut scores = Vec::new();
        for b in stats {
            let ind = induction.and_then(|sites| {
                sites.iter().find(|(kind, layer, _)| *kind == b.kind && *layer == b.layer)
            });
            scores.extend(score_block(b, ind.map(|(_, _, s)| s.as_slice())));
        }
        Ok((scores, induction.map(|_| INDUCTION_TOKENS)))
    }

    /// The model's special tokens (made once).
    fn special_tokens(&self) -> Arc<[String]> {
        let special = self.special_tokens.get_or_init(|| self.family.shape().special_tokens.into());
        special.clone()
    }

    /// The heads' induction scores, probed on the first call and kept (they do not depend on
    /// the text); `None` for models that are not causal.
    fn induction(&self) -> Result<Option<&InductionScores>> {
        if let Some(kept) = self.induction.get() {
            return Ok(kept.as_ref());
        }
        let maps = self.family.repeated_random_maps(INDUCTION_TOKENS).transpose()?;
        let scores = maps.map(|maps| {
            maps.iter()
                .map(|m| {
                    let n = INDUCTION_TOKENS.min(m.query_len / 2);
                    (m.kind, m.layer, induction_scores(m, n))
                })
                .collect()
        });
        Ok(self.induction.get_or_init(|| scores).as_ref())
    }

    /// Every head's scores and label on `text` (see [`crate::heads`]): the scores every
    /// forward's [`Attended`] carries.
    pub fn heads(
        &self,
        text: &str,
        generate: &GenerateOptions,
    ) -> Result<(Attended, Vec<HeadScores>)> {
        let a = self.attend_generating(text, generate)?;
        let scores = a.scores.clone();
        Ok((a, scores))
    }

    /// Tokenisation alone (what the forward does first), for benchmarks and token previews.
    pub fn tokenize(&self, text: &str) -> Result<crate::tokenize::Encoded> {
        self.family.tokenizer().encode(text)
    }

    pub fn tokenizer(&self) -> &TextTokenizer {
        self.family.tokenizer()
    }

    /// A decoder-only model's maps of one full run over `ids` (no cache, no generation): what a
    /// KV-cache generation's maps must equal.
    pub fn attend_ids(&self, ids: &[u32]) -> Result<Vec<AttentionBlock>> {
        self.family.attend_ids(ids).unwrap_or_else(|| {
            Err(Error::InvalidInput(format!(
                "`{}` is not a decoder-only model: it does not run token ids alone",
                self.manifest.architecture
            )))
        })
    }

    pub fn info(&self) -> ModelInfo {
        let m = &self.manifest;
        let FamilyShape {
            kinds,
            heads,
            kv_heads,
            head_dim,
            max_positions,
            special_tokens,
            generates,
        } = self.family.shape();
        ModelInfo {
            id: m.id.clone(),
            name: if m.name.is_empty() { m.id.clone() } else { m.name.clone() },
            architecture: m.architecture.clone(),
            kinds: kinds.iter().map(|k| k.0).collect(),
            layers: kinds.iter().copied().collect(),
            heads: kinds.iter().map(|k| (k.0, heads)).collect(),
            kv_heads: kinds.iter().map(|k| (k.0, kv_heads)).collect(),
            generates,
            head_dim,
            max_positions,
            special_tokens,
            credit: m.credit.clone(),
            license: m.license.clone(),
            example: m.example.clone(),
        }
    }

    /// The position vectors this model adds to its token embeddings (or its rotations), for
    /// positions `0..count` (`count` is clamped to 1..=`max_positions`).
    pub fn positions(&self, count: usize) -> PositionTable {
        self.family.positions(count.clamp(1, self.family.shape().max_positions.max(1)))
    }

    /// The intermediates of one head (the step view), or an error naming what exists.
    pub fn head_internals(&self, text: &str, request: HeadRequest) -> Result<HeadInternals> {
        self.head_internals_generating(text, &GenerateOptions::default(), request)
    }

    /// As [`Model::head_internals`], over the text and what a decoder-only model generates
    /// after it.
    pub fn head_internals_generating(
        &self,
        text: &str,
        generate: &GenerateOptions,
        request: HeadRequest,
    ) -> Result<HeadInternals> {
        self.check_head(request)?;
        let mut probe = Probe::head(request);
        let out = self.forward(text, generate, &mut probe)?;
        self.internals(&out, request, probe.into_trace())
    }

    /// An error naming what exists when the model has no such kind, layer or head.
    fn check_head(&self, request: HeadRequest) -> Result<()> {
        let info = self.info();
        let layers = info.layers.get(&request.kind).copied().unwrap_or(0);
        let heads = info.heads.get(&request.kind).copied().unwrap_or(0);
        if request.layer < layers && request.head < heads {
            return Ok(());
        }
        let kinds: Vec<&str> = info.kinds.iter().map(|k| k.as_str()).collect();
        Err(Error::InvalidInput(format!(
            "no {} attention at layer {} head {} (this model has kinds [{}], {layers} layers, {heads} heads)",
            request.kind.as_str(),
            request.layer,
            request.head,
            kinds.join(", ")
        )))
    }

    /// The step view's data of `request` from what its forward traced.
    fn internals(
        &self,
        output: &ForwardOutput,
        request: HeadRequest,
        traced: Option<(crate::result::HeadTrace, crate::result::BlockTrace)>,
    ) -> Result<HeadInternals> {
        let Some((trace, block)) = traced else {
            self.check_head(request)?;
            return Err(Error::InvalidInput(format!(
                "the forward ran no {} attention at layer {}",
                request.kind.as_str(),
                request.layer
            )));
        };
        let (query_tokens, key_tokens) = output.tokens_of(request.kind);
        let qk = crate::pca::qk_projection(&trace.q, &trace.k, trace.d_k);
        let score_parts = trace.split.as_ref().and_then(|split| {
            score_parts(split, &trace.q, &trace.k, trace.d_k, trace.query_len, trace.key_len)
        });
        Ok(HeadInternals { request, query_tokens, key_tokens, trace, block, qk, score_parts })
    }
}

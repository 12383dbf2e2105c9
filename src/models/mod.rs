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
use crate::heads::{induction_scores, score_block, HeadScores};
use crate::nn::probe::Probe;
use crate::result::{
    Attended, AttentionBlock, AttentionKind, ForwardOutput, GenerateOptions, HeadInternals,
    HeadRequest,
};
use crate::tokenize::TextTokenizer;
use serde::Serialize;
use std::collections::HashMap;

/// Length of the random sequence that is repeated to find induction heads.
pub const INDUCTION_TOKENS: usize = 20;

/// A loaded model: its manifest and its family's model.
pub struct Model {
    pub manifest: Manifest,
    pub family: Box<dyn Family>,
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

impl Model {
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

    /// One forward with every attention map.
    pub fn attend(&self, text: &str) -> Result<Attended> {
        self.attend_generating(text, &GenerateOptions::default())
    }

    /// One forward with every attention map, generating after the text as `generate` says
    /// (decoder-only models).
    pub fn attend_generating(&self, text: &str, generate: &GenerateOptions) -> Result<Attended> {
        self.attend_with(text, generate, false)
    }

    /// One forward with every attention map, generating after the text as `generate` says
    /// (decoder-only models), and, when `value_norms`, the value-weighted norms of every map.
    pub fn attend_with(
        &self,
        text: &str,
        generate: &GenerateOptions,
        value_norms: bool,
    ) -> Result<Attended> {
        let mut probe = if value_norms {
            Probe::attention_maps_and_value_norms()
        } else {
            Probe::attention_maps()
        };
        let output = self.forward(text, generate, &mut probe)?;
        let (attentions, value_norms) = probe.into_maps_and_norms();
        Ok(Attended { output, attentions, value_norms })
    }

    /// Every head's scores and label on `text` (see [`crate::heads`]); causal models also get
    /// their induction score from a repeated random sequence of [`INDUCTION_TOKENS`] tokens.
    pub fn heads(
        &self,
        text: &str,
        generate: &GenerateOptions,
    ) -> Result<(Attended, Vec<HeadScores>)> {
        let a = self.attend_generating(text, generate)?;
        let special = self.info().special_tokens;
        let induction = self.family.repeated_random_maps(INDUCTION_TOKENS).transpose()?;
        let mut scores = Vec::new();
        for b in &a.attentions {
            let (_, keys) = a.output.tokens_of(b.kind);
            let ind = induction
                .as_ref()
                .and_then(|maps| maps.iter().find(|m| m.kind == b.kind && m.layer == b.layer))
                .map(|m| induction_scores(m, INDUCTION_TOKENS.min(m.query_len / 2)));
            scores.extend(score_block(b, &keys, &special, ind.as_deref()));
        }
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
        let info = self.info();
        let layers = info.layers.get(&request.kind).copied().unwrap_or(0);
        let heads = info.heads.get(&request.kind).copied().unwrap_or(0);
        let bad = || {
            let kinds: Vec<&str> = info.kinds.iter().map(|k| k.as_str()).collect();
            Error::InvalidInput(format!(
                "no {} attention at layer {} head {} (this model has kinds [{}], {layers} layers, {heads} heads)",
                request.kind.as_str(),
                request.layer,
                request.head,
                kinds.join(", ")
            ))
        };
        if request.layer >= layers || request.head >= heads {
            return Err(bad());
        }
        let mut probe = Probe::head(request);
        let out = self.forward(text, generate, &mut probe)?;
        let (trace, block) = probe.into_trace().ok_or_else(bad)?;
        let (query_tokens, key_tokens) = out.tokens_of(request.kind);
        let qk = crate::pca::qk_projection(&trace.q, &trace.k, trace.d_k);
        Ok(HeadInternals { request, query_tokens, key_tokens, trace, block, qk })
    }
}

//! A Marian model's modules, each one group of weights (named like Bergamot's: `self`,
//! `context`, `ffn`, `rnn`) with its own `forward`: attention and FFN blocks, post-norm
//! (x = LN(x + sublayer(x))), the SSRU cell, and the encoder and decoder layers built from them.

use super::weights::{AttentionParams, FfnParams};
use super::{Activation, MarianConfig};
use crate::error::Result;
use crate::nn::attention::{KvCache, Mask, MultiHead};
use crate::nn::layers::{LayerNorm, Linear};
use crate::nn::probe::{Probe, Site};
use crate::tensor::{relu, sigmoid, Mat};
use crate::weights::Scope;

/// Encoder `self` or decoder `context` attention (and opus-mt's decoder `self_attn`), post-norm.
pub(super) struct MarianAttention {
    wq: Linear, // [d, d]
    wk: Linear, // [d, d]
    wv: Linear, // [d, d]
    wo: Linear, // [d, d]
    wo_ln: LayerNorm,
    attn: MultiHead,
}

impl MarianAttention {
    pub(super) fn load(
        p: AttentionParams,
        c: &MarianConfig,
        site: Site,
    ) -> Result<MarianAttention> {
        let d = c.dim_emb;
        Ok(MarianAttention {
            wq: p.wq.linear(d, d)?,
            wk: p.wk.linear(d, d)?,
            wv: p.wv.linear(d, d)?,
            wo: p.wo.linear(d, d)?,
            wo_ln: p.wo_ln.layer_norm(d, c.layer_norm_eps)?,
            attn: MultiHead::new(site, c.heads, c.heads, d / c.heads),
        })
    }

    /// Keys and values of `memory` `[Tk, d]`, each `[Tk, d]`.
    pub(super) fn keys_values(&self, memory: &Mat) -> KvCache {
        KvCache::of(self.wk.forward(memory), &self.wv.forward(memory))
    }

    /// x `[Tq, d]` attends to the keys/values of `kv` `[Tk, d]`: x = LN(x + Wo·attention + bo)
    /// `[Tq, d]`. The probe gets `[heads, Tq, Tk]`.
    fn forward(&self, x: &Mat, kv: &KvCache, probe: &mut Probe) -> Mat {
        self.attn.offer_split(probe, &self.wq, &self.wk);
        let q = self.wq.forward(x); // [Tq, d]
        let context = self.attn.attend(&q, kv, Mask::None, &self.wo.weight, probe); // [Tq, d]
        self.attn.post_norm_output(&context, x, &self.wo, &self.wo_ln, probe)
    }

    /// One decode step of masked self-attention: y `[1, d]` (the newest position) attends to
    /// itself and every earlier position, whose keys and values `cache` holds; y's are written
    /// after them. No mask is needed: later positions are not there yet.
    fn forward_cached(&self, y: &Mat, cache: &mut KvCache, probe: &mut Probe) -> Mat {
        cache.append(&self.wk.forward(y), &self.wv.forward(y));
        self.forward(y, cache, probe)
    }
}

/// `W1`, `b1`, `W2`, `b2` and the LayerNorm after them.
pub(super) struct MarianFfn {
    w1: Linear, // [ffn, d]
    w2: Linear, // [d, ffn]
    ffn_ln: LayerNorm,
    activation: Activation,
}

impl MarianFfn {
    pub(super) fn load(p: FfnParams, c: &MarianConfig) -> Result<MarianFfn> {
        let (d, ffn) = (c.dim_emb, c.dim_ffn);
        Ok(MarianFfn {
            w1: p.w1.linear(ffn, d)?,
            w2: p.w2.linear(d, ffn)?,
            ffn_ln: p.ffn_ln.layer_norm(d, c.layer_norm_eps)?,
            activation: c.activation,
        })
    }

    /// x = LN(x + W2·act(W1·x + b1) + b2)                                        # [T, d]
    fn forward(&self, x: &Mat) -> Mat {
        let mut h = self.w1.forward(x); // [T, ffn]
        let act = self.activation;
        h.map_in_place(|v| act.apply(v));
        let mut out = self.w2.forward(&h) + x;
        self.ffn_ln.apply(&mut out);
        out
    }
}

/// `decoder_lN_rnn_*`: Marian's SSRU, f = σ(x·Wf + bf); c = f·c + (1−f)·(x·W); h = LN(x + ReLU(c)).
pub(super) struct Ssru {
    w: Linear,  // [d, d], no bias
    wf: Linear, // [d, d]
    ffn_ln: LayerNorm,
}

impl Ssru {
    /// `w`: the module `decoder_lN_rnn` (`W`, `Wf`, `bf`, `ffn_ln_scale`, `ffn_ln_bias`).
    pub(super) fn load(w: &Scope, c: &MarianConfig) -> Result<Ssru> {
        let d = c.dim_emb;
        Ok(Ssru {
            w: Linear::no_bias(w.weight_matrix("W", d, d)?),
            wf: Linear::load_named(w, "Wf", "bf", d, d)?,
            ffn_ln: LayerNorm::load_named(&w.pp("ffn_ln"), "scale", "bias", d, c.layer_norm_eps)?,
        })
    }

    /// One step: y `[1, d]` → `[1, d]`, updating the cell state `c` `[d]`.
    fn forward(&self, y: &Mat, c: &mut [f32]) -> Mat {
        let f = self.wf.forward(y); // [1, d]
        let xw = self.w.forward(y); // [1, d]
        let mut h = Mat::zeros(1, c.len());
        for (j, cj) in c.iter_mut().enumerate() {
            let fj = sigmoid(f.row(0)[j]);
            *cj = fj * *cj + (1.0 - fj) * xw.row(0)[j];
            h.row_mut(0)[j] = y.row(0)[j] + relu(*cj);
        }
        self.ffn_ln.apply(&mut h);
        h
    }
}

/// Encoder layer: self-attention, FFN.
pub(super) struct MarianEncoderLayer {
    pub self_attention: MarianAttention,
    pub ffn: MarianFfn,
}

impl MarianEncoderLayer {
    /// x `[Ts, d]` → `[Ts, d]`: x = LN(x + self_attention(x)); x = LN(x + ffn(x)).
    pub(super) fn forward(&self, x: &Mat, probe: &mut Probe) -> Mat {
        let kv = self.self_attention.keys_values(x); // [Ts, d] each
        let x = self.self_attention.forward(x, &kv, probe);
        self.ffn.forward(&x)
    }
}

/// What a decoder layer runs over the target before cross-attention.
#[allow(clippy::large_enum_variant)] // one per decoder layer, built once at load: no box needed
pub(super) enum Autoregressive {
    /// Bergamot: an SSRU cell.
    Ssru(Ssru),
    /// opus-mt: masked self-attention.
    SelfAttention(MarianAttention),
}

/// What a decoder layer carries from one decode step to the next.
pub(super) struct DecoderState {
    /// The SSRU's cell `[d]`.
    pub cell: Vec<f32>,
    /// The self-attention's keys and values so far, `[t, d]` each (empty for an SSRU).
    pub cache: KvCache,
}

/// Decoder layer: SSRU or self-attention, cross-attention (`context`), FFN.
pub(super) struct MarianDecoderLayer {
    pub autoregressive: Autoregressive,
    pub context: MarianAttention,
    pub ffn: MarianFfn,
}

impl MarianDecoderLayer {
    /// One decode step: y `[1, d]` → `[1, d]`: y = SSRU or LN(y + self_attention(y));
    /// y = LN(y + context(y, memory)); y = LN(y + ffn(y)). `state` is this layer's SSRU cell or
    /// K/V cache, `memory` the encoder-side keys and values of its `context` attention.
    pub(super) fn forward(
        &self,
        y: &Mat,
        state: &mut DecoderState,
        memory: &KvCache,
        probe: &mut Probe,
    ) -> Mat {
        let y = match &self.autoregressive {
            Autoregressive::Ssru(rnn) => rnn.forward(y, &mut state.cell),
            Autoregressive::SelfAttention(a) => a.forward_cached(y, &mut state.cache, probe),
        };
        let y = self.context.forward(&y, memory, probe);
        self.ffn.forward(&y)
    }
}

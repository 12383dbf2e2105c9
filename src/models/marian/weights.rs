//! Where a Marian model's tensors are, in each convention, and the model built from them.
//! A Bergamot .bin names a layer's modules `encoder_l1_self_Wq`, `decoder_l2_rnn_W`, … (layers
//! from 1, `_` between names); a Hugging Face opus-mt checkpoint
//! `model.encoder.layers.0.self_attn.q_proj.weight`, …. Both load into the same structs.

use super::layers::{
    Autoregressive, MarianAttention, MarianDecoderLayer, MarianEncoderLayer, MarianFfn, Ssru,
};
use super::{MarianConfig, MarianFlavor, MarianModel};
use crate::error::{invalid_model, Result};
use crate::nn::layers::{LayerNorm, Linear};
use crate::nn::probe::Site;
use crate::result::AttentionKind;
use crate::tokenize::TextTokenizer;
use crate::weights::{Scope, TensorStore};
use std::cell::RefCell;

/// One Linear's or LayerNorm's tensors: the module they are in and their two names there
/// (`Wq`, `bq` in Bergamot's `encoder_l1_self`; `weight`, `bias` in Hugging Face's
/// `model.encoder.layers.0.self_attn.q_proj`).
pub(super) struct Param<'a> {
    at: Scope<'a>,
    names: [&'static str; 2],
}

impl Param<'_> {
    pub(super) fn linear(&self, out: usize, inp: usize) -> Result<Linear> {
        Linear::load_named(&self.at, self.names[0], self.names[1], out, inp)
    }

    pub(super) fn layer_norm(&self, d: usize, eps: f32) -> Result<LayerNorm> {
        LayerNorm::load_named(&self.at, self.names[0], self.names[1], d, eps)
    }
}

const WEIGHT_BIAS: [&str; 2] = ["weight", "bias"];
const SCALE_BIAS: [&str; 2] = ["scale", "bias"];

/// Where one attention's tensors are: its `W{q,k,v,o}` and the LayerNorm after them.
pub(super) struct AttentionParams<'a> {
    pub wq: Param<'a>,
    pub wk: Param<'a>,
    pub wv: Param<'a>,
    pub wo: Param<'a>,
    pub wo_ln: Param<'a>,
}

/// Where one FFN's tensors are: `W1`, `W2` and the LayerNorm after them.
pub(super) struct FfnParams<'a> {
    pub w1: Param<'a>,
    pub w2: Param<'a>,
    pub ffn_ln: Param<'a>,
}

impl MarianFlavor {
    /// The root of a checkpoint's tensors, names joined as this convention joins them.
    pub(super) fn root(self, store: &RefCell<TensorStore>) -> Scope<'_> {
        match self {
            MarianFlavor::Bergamot => Scope::new(store).separated_by('_'),
            MarianFlavor::HuggingFace => Scope::new(store),
        }
    }

    /// Layer `layer` (from 0) of the `encoder` or `decoder`: Bergamot's `encoder_l1`, Hugging
    /// Face's `model.encoder.layers.0`.
    pub(super) fn layer<'a>(self, root: &Scope<'a>, stack: &str, layer: usize) -> Scope<'a> {
        match self {
            MarianFlavor::Bergamot => root.pp(stack).pp(format_args!("l{}", layer + 1)),
            MarianFlavor::HuggingFace => root.pp("model").pp(stack).pp("layers").pp(layer),
        }
    }

    /// The attention of `kind` in `layer`: Bergamot's `self` or `context` (`Wq`, `bq`, …,
    /// `Wo_ln_scale`); Hugging Face's `self_attn` or `encoder_attn` (`q_proj.weight`, …) with
    /// the LayerNorm beside it (`self_attn_layer_norm`).
    fn attention<'a>(self, layer: &Scope<'a>, kind: AttentionKind) -> AttentionParams<'a> {
        let cross = kind == AttentionKind::Cross;
        match self {
            MarianFlavor::Bergamot => {
                let at = layer.pp(if cross { "context" } else { "self" });
                let p = |names| Param { at: at.clone(), names };
                AttentionParams {
                    wq: p(["Wq", "bq"]),
                    wk: p(["Wk", "bk"]),
                    wv: p(["Wv", "bv"]),
                    wo: p(["Wo", "bo"]),
                    wo_ln: Param { at: at.pp("Wo_ln"), names: SCALE_BIAS },
                }
            }
            MarianFlavor::HuggingFace => {
                let attn = if cross { "encoder_attn" } else { "self_attn" };
                let p = |module| Param { at: layer.pp(attn).pp(module), names: WEIGHT_BIAS };
                AttentionParams {
                    wq: p("q_proj"),
                    wk: p("k_proj"),
                    wv: p("v_proj"),
                    wo: p("out_proj"),
                    wo_ln: Param {
                        at: layer.pp(format_args!("{attn}_layer_norm")),
                        names: WEIGHT_BIAS,
                    },
                }
            }
        }
    }

    /// The FFN of `layer`: Bergamot's `ffn` (`W1`, `b1`, …, `ffn_ln_scale`); Hugging Face's
    /// `fc1`, `fc2` and `final_layer_norm`.
    fn ffn<'a>(self, layer: &Scope<'a>) -> FfnParams<'a> {
        match self {
            MarianFlavor::Bergamot => {
                let at = layer.pp("ffn");
                FfnParams {
                    w1: Param { at: at.clone(), names: ["W1", "b1"] },
                    w2: Param { at: at.clone(), names: ["W2", "b2"] },
                    ffn_ln: Param { at: at.pp("ffn_ln"), names: SCALE_BIAS },
                }
            }
            MarianFlavor::HuggingFace => FfnParams {
                w1: Param { at: layer.pp("fc1"), names: WEIGHT_BIAS },
                w2: Param { at: layer.pp("fc2"), names: WEIGHT_BIAS },
                ffn_ln: Param { at: layer.pp("final_layer_norm"), names: WEIGHT_BIAS },
            },
        }
    }

    /// The tied embedding `[vocab, d]` and the output bias `[vocab]`, at the root.
    fn embedding_names(self) -> [&'static str; 2] {
        match self {
            MarianFlavor::Bergamot => ["Wemb", "decoder_ff_logit_out_b"],
            MarianFlavor::HuggingFace => ["model.shared.weight", "final_logits_bias"],
        }
    }
}

impl MarianModel {
    /// The model of config `c` from the tensors in `store` and its tokenizer; `name` is the
    /// file that sized it, for messages.
    pub(super) fn build(
        c: MarianConfig,
        store: &RefCell<TensorStore>,
        name: &str,
        tokenizer_json: &[u8],
    ) -> Result<MarianModel> {
        let (d, heads, flavor) = (c.dim_emb, c.heads, c.flavor);
        let what = format!(
            "{name}: {} encoder and {} decoder layers × {heads} heads",
            c.enc_depth, c.dec_depth
        );
        let mut blocks = vec![
            (c.enc_depth, heads, c.max_source, c.max_source),
            (c.dec_depth, heads, c.max_target, c.max_source),
        ];
        if flavor == MarianFlavor::HuggingFace {
            blocks.push((c.dec_depth, heads, c.max_target, c.max_target));
        }
        crate::models::family::check_attention_budget(&what, &blocks)?;
        let root = flavor.root(store);
        let [emb, bias] = flavor.embedding_names();
        let wemb = root.weight_matrix(emb, c.vocab, d)?;
        let logits_bias = root.vector(bias, c.vocab)?;
        let attention = |layer: &Scope, kind, i| {
            MarianAttention::load(flavor.attention(layer, kind), &c, Site { kind, layer: i })
        };
        let encoder = (0..c.enc_depth)
            .map(|i| {
                let layer = flavor.layer(&root, "encoder", i);
                Ok(MarianEncoderLayer {
                    self_attention: attention(&layer, AttentionKind::EncoderSelf, i)?,
                    ffn: MarianFfn::load(flavor.ffn(&layer), &c)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let decoder = (0..c.dec_depth)
            .map(|i| {
                let layer = flavor.layer(&root, "decoder", i);
                let autoregressive = match flavor {
                    MarianFlavor::Bergamot => {
                        Autoregressive::Ssru(Ssru::load(&layer.pp("rnn"), &c)?)
                    }
                    MarianFlavor::HuggingFace => Autoregressive::SelfAttention(attention(
                        &layer,
                        AttentionKind::DecoderSelf,
                        i,
                    )?),
                };
                Ok(MarianDecoderLayer {
                    autoregressive,
                    context: attention(&layer, AttentionKind::Cross, i)?,
                    ffn: MarianFfn::load(flavor.ffn(&layer), &c)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let tokenizer = TextTokenizer::from_bytes(tokenizer_json, c.max_source - 1)?;
        if tokenizer.id_to_token_opt(c.eos_id).as_deref() != Some("</s>") {
            return Err(invalid_model(format!(
                "tokenizer.json does not map `</s>` to id {}, the model's end of sentence",
                c.eos_id
            )));
        }
        Ok(MarianModel { config: c, wemb, logits_bias, encoder, decoder, tokenizer })
    }
}

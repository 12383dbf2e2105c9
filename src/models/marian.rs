//! Marian transformer with an SSRU decoder (Bergamot "tiny" student models, e.g. en→pt).
//! Encoder: post-norm self-attention + FFN layers. Decoder: per layer an SSRU recurrent cell
//! (there is no decoder self-attention), cross-attention to the encoder (`context`), FFN.
//! Greedy decoding, one step per target token, with the SSRU state and the encoder-side K/V
//! cached. Returns `encoder_self` attention per encoder layer and `cross` attention per
//! decoder layer, `[heads, T_tgt, T_src]`, where row t is the step that produced target token t.
//! Sizes come from the tensor shapes and the embedded `model.yml`.

use super::{LayerNorm, Linear};
use crate::attention::{AttentionBlock, AttentionKind, ForwardOutput, HeadInternals, HeadRequest, StopReason};
use crate::error::{invalid_model, Error, Result};
use crate::tensor::{linear_quantized, multi_head_attention, relu, sigmoid, HeadTrace, Mask, Mat, QuantizedMat};
use crate::tokenize::TextTokenizer;
use crate::weights::marian_bin::{self, yml_value};

/// Marian's `</s>`: appended to the source, and the end of decoding.
const EOS_ID: u32 = 0;
/// Longest source we encode (the sinusoidal positions have no limit; this bounds the work).
const MAX_SOURCE_TOKENS: usize = 256;
/// Bergamot's `max-length-factor`: the target may be at most this many times the source.
const MAX_LENGTH_FACTOR: f32 = 2.5;

#[derive(Clone, Debug)]
pub struct MarianConfig {
    pub dim_emb: usize,
    pub heads: usize,
    pub enc_depth: usize,
    pub dec_depth: usize,
    pub dim_ffn: usize,
    pub vocab: usize,
}

impl MarianConfig {
    fn from_file(yml: Option<&str>, w: &crate::weights::TensorStore) -> Result<MarianConfig> {
        let yml = yml.unwrap_or("");
        let opt = |k: &str| yml_value(yml, k);
        if let Some(autoreg) = opt("transformer-decoder-autoreg") {
            if autoreg != "rnn" || opt("dec-cell").is_some_and(|c| c != "ssru") {
                return Err(Error::UnsupportedArchitecture(format!("Marian decoder `{autoreg}` (only the SSRU decoder of Bergamot tiny models is supported)")));
            }
        }
        if opt("transformer-postprocess").is_some_and(|p| p != "dan") || opt("transformer-preprocess").is_some_and(|p| !p.is_empty() && p != "\"\"") {
            return Err(Error::UnsupportedArchitecture("Marian pre-norm transformer (only post-norm `dan` is supported)".into()));
        }
        let (vocab, dim_emb) = match w.shape("Wemb") {
            Some([v, d]) => (*v, *d),
            _ => return Err(invalid_model("Marian model has no `Wemb` [vocab, dim] tensor")),
        };
        let count = |prefix: &str| (1..).take_while(|i| w.contains(&format!("{prefix}{i}_ffn_W1"))).count();
        let dim_ffn = match w.shape("encoder_l1_ffn_W1") {
            Some([ffn, _]) => *ffn,
            _ => return Err(invalid_model("Marian model has no `encoder_l1_ffn_W1`")),
        };
        let heads: usize = opt("transformer-heads").and_then(|h| h.parse().ok()).unwrap_or(8);
        if heads == 0 || dim_emb % heads != 0 || dim_emb % 2 != 0 {
            return Err(invalid_model(format!("dim-emb {dim_emb} does not split into {heads} heads")));
        }
        let act = opt("transformer-ffn-activation").unwrap_or("relu");
        if act != "relu" {
            return Err(Error::UnsupportedArchitecture(format!("Marian FFN activation `{act}` (only relu)")));
        }
        Ok(MarianConfig { dim_emb, heads, enc_depth: count("encoder_l"), dec_depth: count("decoder_l"), dim_ffn, vocab })
    }
}

/// `self` / `context` attention: Wq, Wk, Wv, Wo (+ biases) and the post-norm `Wo_ln`.
struct MarianAttention {
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
    wo_ln: LayerNorm,
}

struct MarianFfn {
    w1: Linear, // [ffn, d]
    w2: Linear, // [d, ffn]
    ffn_ln: LayerNorm,
}

/// Simple Recurrent Unit as Marian's SSRU: f = σ(x·Wf + bf); c = f·c + (1−f)·(x·W); h = LN(x + ReLU(c)).
struct Ssru {
    w: Linear,
    wf: Linear,
    ffn_ln: LayerNorm,
}

struct EncoderLayer {
    self_attn: MarianAttention,
    ffn: MarianFfn,
}

struct DecoderLayer {
    rnn: Ssru,
    context: MarianAttention,
    ffn: MarianFfn,
}

pub struct MarianModel {
    pub config: MarianConfig,
    /// `# [vocab, d]` tied: source and target embeddings and the output projection. Kept int8:
    /// it is streamed once per decode step, and 8 MB read beats 33 MB.
    wemb: QuantizedMat,
    decoder_ff_logit_out_b: Vec<f32>,
    encoder: Vec<EncoderLayer>,
    decoder: Vec<DecoderLayer>,
    tokenizer: TextTokenizer,
}

impl MarianAttention {
    fn load(w: &mut crate::weights::TensorStore, p: &str, d: usize) -> Result<MarianAttention> {
        let lin = |w: &mut crate::weights::TensorStore, m: &str| Linear::load_named(w, &format!("{p}_W{m}"), &format!("{p}_b{m}"), d, d);
        Ok(MarianAttention {
            wq: lin(w, "q")?,
            wk: lin(w, "k")?,
            wv: lin(w, "v")?,
            wo: lin(w, "o")?,
            wo_ln: LayerNorm::load_named(w, &format!("{p}_Wo_ln_scale"), &format!("{p}_Wo_ln_bias"), d, LN_EPS)?,
        })
    }
}

impl MarianFfn {
    fn load(w: &mut crate::weights::TensorStore, p: &str, d: usize, ffn: usize) -> Result<MarianFfn> {
        Ok(MarianFfn {
            w1: Linear::load_named(w, &format!("{p}_ffn_W1"), &format!("{p}_ffn_b1"), ffn, d)?,
            w2: Linear::load_named(w, &format!("{p}_ffn_W2"), &format!("{p}_ffn_b2"), d, ffn)?,
            ffn_ln: LayerNorm::load_named(w, &format!("{p}_ffn_ffn_ln_scale"), &format!("{p}_ffn_ffn_ln_bias"), d, LN_EPS)?,
        })
    }

    /// x = LN(x + W2·relu(W1·x + b1) + b2)
    fn forward(&self, x: &Mat) -> Mat {
        let mut h = self.w1.forward(x);
        h.map_in_place(relu);
        let mut out = self.w2.forward(&h);
        out.add_assign(x);
        self.ffn_ln.apply(&mut out);
        out
    }
}

const LN_EPS: f32 = 1e-9;

/// Marian's sinusoidal position: sin half first, then cos; inv freq = exp(−ln 10000/(d/2−1)·i).
fn add_position(row: &mut [f32], pos: usize) {
    let half = row.len() / 2;
    let step = (10000f32).ln() / (half as f32 - 1.0).max(1.0);
    for i in 0..half {
        let angle = pos as f32 * (-step * i as f32).exp();
        row[i] += angle.sin();
        row[half + i] += angle.cos();
    }
}

impl MarianModel {
    pub fn load(model_bin: &[u8], tokenizer_json: &[u8]) -> Result<MarianModel> {
        let file = marian_bin::read(model_bin)?;
        let mut w = file.tensors;
        let c = MarianConfig::from_file(file.model_yml.as_deref(), &w)?;
        let (d, ffn) = (c.dim_emb, c.dim_ffn);
        let wemb = w.quantized_matrix("Wemb", c.vocab, d)?;
        let decoder_ff_logit_out_b = w.vector("decoder_ff_logit_out_b", c.vocab)?;
        let mut encoder = Vec::with_capacity(c.enc_depth);
        for i in 1..=c.enc_depth {
            let p = format!("encoder_l{i}");
            encoder.push(EncoderLayer { self_attn: MarianAttention::load(&mut w, &format!("{p}_self"), d)?, ffn: MarianFfn::load(&mut w, &p, d, ffn)? });
        }
        let mut decoder = Vec::with_capacity(c.dec_depth);
        for i in 1..=c.dec_depth {
            let p = format!("decoder_l{i}");
            let rnn = Ssru {
                w: Linear { weight: w.matrix(&format!("{p}_rnn_W"), d, d)?, bias: None },
                wf: Linear::load_named(&mut w, &format!("{p}_rnn_Wf"), &format!("{p}_rnn_bf"), d, d)?,
                ffn_ln: LayerNorm::load_named(&mut w, &format!("{p}_rnn_ffn_ln_scale"), &format!("{p}_rnn_ffn_ln_bias"), d, LN_EPS)?,
            };
            decoder.push(DecoderLayer { rnn, context: MarianAttention::load(&mut w, &format!("{p}_context"), d)?, ffn: MarianFfn::load(&mut w, &p, d, ffn)? });
        }
        if c.enc_depth == 0 || c.dec_depth == 0 {
            return Err(invalid_model("Marian model has no encoder or no decoder layers"));
        }
        let tokenizer = TextTokenizer::from_bytes(tokenizer_json, MAX_SOURCE_TOKENS - 1)?;
        if tokenizer.token_to_id("</s>") != Some(EOS_ID) {
            return Err(invalid_model("tokenizer.json does not map `</s>` to id 0 as Marian vocabularies do"));
        }
        Ok(MarianModel { config: c, wemb, decoder_ff_logit_out_b, encoder, decoder, tokenizer })
    }

    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    fn embed(&self, id: u32, pos: usize, row: &mut [f32]) -> Result<()> {
        if id as usize >= self.wemb.rows {
            return Err(invalid_model(format!("token id {id} is outside the vocabulary")));
        }
        self.wemb.dequantize_row(id as usize, row);
        let scale = (row.len() as f32).sqrt();
        row.iter_mut().for_each(|r| *r *= scale);
        add_position(row, pos);
        Ok(())
    }

    pub fn forward(&self, text: &str, request: Option<HeadRequest>) -> Result<ForwardOutput> {
        let c = &self.config;
        let (d, heads) = (c.dim_emb, c.heads);
        let mut enc = self.tokenizer.encode(text)?;
        enc.ids.push(EOS_ID);
        enc.tokens.push("</s>".into());
        enc.word_ids.push(None);
        let ts = enc.ids.len();

        // ---- encoder ---------------------------------------------------------------
        let mut x = Mat::zeros(ts, d); // [Ts, d]
        for (i, &id) in enc.ids.iter().enumerate() {
            self.embed(id, i, x.row_mut(i))?;
        }
        let mut attentions = Vec::with_capacity(c.enc_depth + c.dec_depth);
        let mut trace: Option<HeadTrace> = None;
        for (l, layer) in self.encoder.iter().enumerate() {
            let a = &layer.self_attn;
            let want = request.filter(|r| r.kind == AttentionKind::EncoderSelf && r.layer == l).map(|r| r.head);
            let att = multi_head_attention(&a.wq.forward(&x), &a.wk.forward(&x), &a.wv.forward(&x), heads, Mask::None, want);
            if att.trace.is_some() {
                trace = att.trace;
            }
            attentions.push(AttentionBlock { kind: AttentionKind::EncoderSelf, layer: l, heads, query_len: ts, key_len: ts, probs: att.probs });
            let mut h = a.wo.forward(&att.context);
            h.add_assign(&x);
            a.wo_ln.apply(&mut h);
            x = layer.ffn.forward(&h);
        }
        let encoded = x;

        // ---- greedy decoding ---------------------------------------------------------
        // Encoder-side keys and values of every decoder layer, computed once.  # [Ts, d] each
        let memory: Vec<(Mat, Mat)> = self.decoder.iter().map(|l| (l.context.wk.forward(&encoded), l.context.wv.forward(&encoded))).collect();
        let mut cell_state = vec![vec![0.0f32; d]; self.decoder.len()];
        let max_target = ((ts as f32 * MAX_LENGTH_FACTOR).ceil() as usize).max(4);
        let mut step_probs: Vec<Vec<Vec<f32>>> = vec![Vec::new(); self.decoder.len()]; // [layer][step] → [heads, 1, Ts]
        let mut target_ids = Vec::new();
        let mut states = Vec::new(); // final decoder state per step
        let mut stop = StopReason::MaxLength;
        let cross_want = request.filter(|r| r.kind == AttentionKind::Cross);
        let mut cross_trace = HeadTrace::default();
        let mut prev: Option<u32> = None;
        for step in 0..max_target {
            let mut y = Mat::zeros(1, d); // [1, d]
            match prev {
                // The first decoder input is a zero vector (plus position 0), not an embedding.
                None => add_position(y.row_mut(0), step),
                Some(id) => self.embed(id, step, y.row_mut(0))?,
            }
            for (l, layer) in self.decoder.iter().enumerate() {
                // SSRU: f = σ(y·Wf + bf); c = f·c + (1−f)·(y·W); h = LN(y + ReLU(c))
                let f = layer.rnn.wf.forward(&y);
                let xw = layer.rnn.w.forward(&y);
                let mut h = Mat::zeros(1, d);
                for j in 0..d {
                    let fj = sigmoid(f.row(0)[j]);
                    let cj = fj * cell_state[l][j] + (1.0 - fj) * xw.row(0)[j];
                    cell_state[l][j] = cj;
                    h.row_mut(0)[j] = y.row(0)[j] + relu(cj);
                }
                layer.rnn.ffn_ln.apply(&mut h);

                let ctx = &layer.context;
                let want = cross_want.filter(|r| r.layer == l).map(|r| r.head);
                let att = multi_head_attention(&ctx.wq.forward(&h), &memory[l].0, &memory[l].1, heads, Mask::None, want);
                if let Some(t) = att.trace {
                    cross_trace.append_queries(t);
                }
                step_probs[l].push(att.probs);
                let mut o = ctx.wo.forward(&att.context);
                o.add_assign(&h);
                ctx.wo_ln.apply(&mut o);
                y = layer.ffn.forward(&o);
            }
            // logits = y · Wembᵀ + b                                               # [1, vocab]
            let logits = linear_quantized(&y, &self.wemb, Some(&self.decoder_ff_logit_out_b));
            let next = argmax(logits.row(0)) as u32;
            states.extend_from_slice(y.row(0));
            target_ids.push(next);
            if next == EOS_ID {
                stop = StopReason::Eos;
                break;
            }
            prev = Some(next);
        }
        let tt = target_ids.len();
        for (l, steps) in step_probs.into_iter().enumerate() {
            // [step][heads, 1, Ts] → [heads, Tt, Ts]
            let mut probs = vec![0.0f32; heads * tt * ts];
            for (t, p) in steps.iter().enumerate() {
                for h in 0..heads {
                    probs[(h * tt + t) * ts..(h * tt + t + 1) * ts].copy_from_slice(&p[h * ts..(h + 1) * ts]);
                }
            }
            attentions.push(AttentionBlock { kind: AttentionKind::Cross, layer: l, heads, query_len: tt, key_len: ts, probs });
        }

        let target_tokens: Vec<String> = target_ids.iter().map(|&id| self.tokenizer.id_to_token(id)).collect();
        let target_word_ids = word_ids_from_pieces(&target_tokens);
        let text_ids: Vec<u32> = target_ids.iter().copied().filter(|&id| id != EOS_ID).collect();
        let output_text = self.tokenizer.decode(&text_ids)?;

        let head_internals = match request {
            None => None,
            Some(r) => {
                let (q_source, query_tokens, tr) = match r.kind {
                    AttentionKind::Cross if cross_trace.query_len > 0 => ("decoder", target_tokens.clone(), cross_trace),
                    AttentionKind::EncoderSelf if trace.is_some() => ("encoder", enc.tokens.clone(), trace.unwrap_or_default()),
                    _ => return Err(super::bad_head_request(r, c.enc_depth.max(c.dec_depth), heads, &[AttentionKind::EncoderSelf, AttentionKind::Cross])),
                };
                Some(HeadInternals { request: r, query_tokens, key_tokens: enc.tokens.clone(), q_source, kv_source: "encoder", trace: tr })
            }
        };

        Ok(ForwardOutput {
            source_tokens: enc.tokens,
            source_word_ids: enc.word_ids,
            target_tokens,
            target_word_ids,
            output_text: Some(output_text),
            truncated: enc.truncated,
            stop_reason: Some(stop),
            hidden: Mat::from_vec(tt, d, states),
            attentions,
            sentence_embedding: None,
            head_internals,
        })
    }
}

fn argmax(row: &[f32]) -> usize {
    row.iter().enumerate().fold((0, f32::NEG_INFINITY), |best, (i, &v)| if v > best.1 { (i, v) } else { best }).0
}

/// SentencePiece pieces start a new word with `▁`; `</s>` belongs to no word.
fn word_ids_from_pieces(tokens: &[String]) -> Vec<Option<u32>> {
    let mut word: i64 = -1;
    tokens
        .iter()
        .map(|t| {
            if t == "</s>" {
                return None;
            }
            if t.starts_with('▁') || word < 0 {
                word += 1;
            }
            Some(word as u32)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_sin_then_cos() {
        let mut row = vec![0.0f32; 8];
        add_position(&mut row, 0);
        assert_eq!(row, vec![0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
        let mut row = vec![0.0f32; 8];
        add_position(&mut row, 1);
        assert!((row[0] - 1f32.sin()).abs() < 1e-6 && (row[4] - 1f32.cos()).abs() < 1e-6);
        // Last frequency is 1/10000.
        assert!((row[3] - (1e-4f32).sin()).abs() < 1e-7);
    }

    #[test]
    fn pieces_group_into_words() {
        let t: Vec<String> = ["▁O", "▁gato", "▁sent", "ou", "-", "se", "</s>"].iter().map(|s| s.to_string()).collect();
        assert_eq!(word_ids_from_pieces(&t), vec![Some(0), Some(1), Some(2), Some(2), Some(2), Some(2), None]);
    }
}

//! Marian transformer with an SSRU decoder (Bergamot "tiny" student models, e.g. en→pt).
//! Encoder: post-norm self-attention + FFN layers. Decoder: per layer an SSRU recurrent cell
//! (there is no decoder self-attention), cross-attention to the encoder (`context`), FFN.
//! Greedy decoding, one step per target token, with the SSRU state and the encoder-side K/V
//! cached. Returns `encoder_self` attention per encoder layer and `cross` attention per
//! decoder layer, `[heads, T_tgt, T_src]`, where row t is the step that produced target token t.
//! Sizes come from the tensor shapes and the embedded `model.yml`. Each struct is one group of
//! weights (named like them: `encoder_l1_self_*`, `decoder_l1_rnn_*`) with its own `forward`.

use super::{post_norm_output, value_output_norms, LayerNorm, Linear};
use crate::attention::{AttentionKind, ForwardOutput, Probe, Site, StopReason};
use crate::error::{invalid_model, Error, Result};
use crate::tensor::{linear_quantized, multi_head_attention, relu, sigmoid, Mask, Mat, QuantizedMat};
use crate::tokenize::TextTokenizer;
use crate::weights::marian_bin::{self, yml_value};
use crate::weights::TensorStore;

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
    fn from_file(yml: Option<&str>, w: &TensorStore) -> Result<MarianConfig> {
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
        if vocab == 0 || dim_emb == 0 || dim_ffn == 0 {
            return Err(invalid_model(format!("Marian model has an empty dimension (vocabulary {vocab}, dim-emb {dim_emb}, FFN {dim_ffn})")));
        }
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

const LN_EPS: f32 = 1e-9;

/// `<p>_W{q,k,v,o}`, `<p>_b{q,k,v,o}`, `<p>_Wo_ln_{scale,bias}`: encoder `self` or decoder
/// `context` attention, post-norm.
struct MarianAttention {
    wq: Linear, // [d, d]
    wk: Linear, // [d, d]
    wv: Linear, // [d, d]
    wo: Linear, // [d, d]
    wo_ln: LayerNorm,
    heads: usize,
    site: Site,
}

impl MarianAttention {
    fn load(w: &mut TensorStore, p: &str, d: usize, heads: usize, site: Site) -> Result<MarianAttention> {
        let lin = |w: &mut TensorStore, m: &str| Linear::load_named(w, &format!("{p}_W{m}"), &format!("{p}_b{m}"), d, d);
        Ok(MarianAttention {
            wq: lin(w, "q")?,
            wk: lin(w, "k")?,
            wv: lin(w, "v")?,
            wo: lin(w, "o")?,
            wo_ln: LayerNorm::load_named(w, &format!("{p}_Wo_ln_scale"), &format!("{p}_Wo_ln_bias"), d, LN_EPS)?,
            heads,
            site,
        })
    }

    /// Keys and values of `memory` `[Tk, d]`: `([Tk, d], [Tk, d])`.
    fn keys_values(&self, memory: &Mat) -> (Mat, Mat) {
        (self.wk.forward(memory), self.wv.forward(memory))
    }

    /// x `[Tq, d]` attends to keys/values `[Tk, d]`: LN(x + Wo·attention + bo)    # [Tq, d]
    /// The probe gets `[heads, Tq, Tk]`.
    fn forward(&self, x: &Mat, (k, v): (&Mat, &Mat), probe: &mut Probe) -> Mat {
        let q = self.wq.forward(x); // [Tq, d]
        if probe.wants_value_norms() {
            probe.record_value_norms(self.site, value_output_norms(v, &self.wo.weight, self.heads));
        }
        let att = multi_head_attention(&q, k, v, self.heads, Mask::None, probe.traced_head(self.site));
        let context = probe.record(self.site, self.heads, att); // [Tq, d]
        post_norm_output(&context, x, &self.wo, &self.wo_ln, self.site, probe)
    }
}

/// `<p>_ffn_W1`, `_b1`, `_W2`, `_b2`, `_ffn_ln_{scale,bias}`
struct MarianFfn {
    w1: Linear, // [ffn, d]
    w2: Linear, // [d, ffn]
    ffn_ln: LayerNorm,
}

impl MarianFfn {
    fn load(w: &mut TensorStore, p: &str, d: usize, ffn: usize) -> Result<MarianFfn> {
        Ok(MarianFfn {
            w1: Linear::load_named(w, &format!("{p}_ffn_W1"), &format!("{p}_ffn_b1"), ffn, d)?,
            w2: Linear::load_named(w, &format!("{p}_ffn_W2"), &format!("{p}_ffn_b2"), d, ffn)?,
            ffn_ln: LayerNorm::load_named(w, &format!("{p}_ffn_ffn_ln_scale"), &format!("{p}_ffn_ffn_ln_bias"), d, LN_EPS)?,
        })
    }

    /// x = LN(x + W2·relu(W1·x + b1) + b2)                                       # [T, d]
    fn forward(&self, x: &Mat) -> Mat {
        let mut h = self.w1.forward(x); // [T, ffn]
        h.map_in_place(relu);
        let mut out = self.w2.forward(&h);
        out.add_assign(x);
        self.ffn_ln.apply(&mut out);
        out
    }
}

/// `decoder_lN_rnn_*`: Marian's SSRU, f = σ(x·Wf + bf); c = f·c + (1−f)·(x·W); h = LN(x + ReLU(c)).
struct Ssru {
    w: Linear,  // [d, d], no bias
    wf: Linear, // [d, d]
    ffn_ln: LayerNorm,
}

impl Ssru {
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

/// `encoder_lN_*`
struct MarianEncoderLayer {
    self_attention: MarianAttention,
    ffn: MarianFfn,
}

impl MarianEncoderLayer {
    /// x `[Ts, d]` → `[Ts, d]`
    fn forward(&self, x: &Mat, probe: &mut Probe) -> Mat {
        let kv = self.self_attention.keys_values(x);
        let h = self.self_attention.forward(x, (&kv.0, &kv.1), probe);
        self.ffn.forward(&h)
    }
}

/// `decoder_lN_*`
struct MarianDecoderLayer {
    rnn: Ssru,
    context: MarianAttention,
    ffn: MarianFfn,
}

impl MarianDecoderLayer {
    /// One decode step: y `[1, d]` → `[1, d]`; `cell` is this layer's SSRU state, `memory` the
    /// encoder-side keys and values of its `context` attention.
    fn forward(&self, y: &Mat, cell: &mut [f32], memory: &(Mat, Mat), probe: &mut Probe) -> Mat {
        let h = self.rnn.forward(y, cell);
        let o = self.context.forward(&h, (&memory.0, &memory.1), probe);
        self.ffn.forward(&o)
    }
}

pub struct MarianModel {
    pub config: MarianConfig,
    /// `# [vocab, d]` tied: source and target embeddings and the output projection. Kept int8:
    /// it is streamed once per decode step, and 8 MB read beats 33 MB.
    wemb: QuantizedMat,
    decoder_ff_logit_out_b: Vec<f32>,
    encoder: Vec<MarianEncoderLayer>,
    decoder: Vec<MarianDecoderLayer>,
    tokenizer: TextTokenizer,
}

/// Marian's sinusoidal position: sin half first, then cos; inv freq = exp(−ln 10000/(d/2−1)·i).
/// The angle is computed in f64: in f32, `pos · freq` at position 100 is already 4e-6 off, so
/// the values added (and the positions view's table) would drift from the formula.
fn add_position(row: &mut [f32], pos: usize) {
    let half = row.len() / 2;
    let step = (10000f64).ln() / (half as f64 - 1.0).max(1.0);
    for i in 0..half {
        let angle = pos as f64 * (-step * i as f64).exp();
        row[i] += angle.sin() as f32;
        row[half + i] += angle.cos() as f32;
    }
}

/// The sinusoid `add_position` adds, for positions `0..n` of width `d`: `# [n, d]` row-major.
pub fn position_table(n: usize, d: usize) -> Vec<f32> {
    let mut data = vec![0.0f32; n * d];
    for (pos, row) in data.chunks_exact_mut(d.max(1)).enumerate() {
        add_position(row, pos);
    }
    data
}

impl MarianModel {
    /// `name` is the .bin's file name, for error messages.
    pub fn load(model_bin: &[u8], name: &str, tokenizer_json: &[u8]) -> Result<MarianModel> {
        let file = marian_bin::read(model_bin)?;
        let mut w = file.tensors;
        w.set_file(name);
        let c = MarianConfig::from_file(file.model_yml.as_deref(), &w)?;
        let (d, ffn, heads) = (c.dim_emb, c.dim_ffn, c.heads);
        let (src, tgt) = (MAX_SOURCE_TOKENS, (MAX_SOURCE_TOKENS as f32 * MAX_LENGTH_FACTOR).ceil() as usize);
        let what = format!("{name}: {} encoder and {} decoder layers × {heads} heads", c.enc_depth, c.dec_depth);
        super::check_attention_budget(&what, &[(c.enc_depth, heads, src, src), (c.dec_depth, heads, tgt, src)])?;
        let wemb = w.quantized_matrix("Wemb", c.vocab, d)?;
        let decoder_ff_logit_out_b = w.vector("decoder_ff_logit_out_b", c.vocab)?;
        let mut encoder = Vec::with_capacity(c.enc_depth);
        for layer in 0..c.enc_depth {
            let p = format!("encoder_l{}", layer + 1);
            let site = Site { kind: AttentionKind::EncoderSelf, layer };
            encoder.push(MarianEncoderLayer { self_attention: MarianAttention::load(&mut w, &format!("{p}_self"), d, heads, site)?, ffn: MarianFfn::load(&mut w, &p, d, ffn)? });
        }
        let mut decoder = Vec::with_capacity(c.dec_depth);
        for layer in 0..c.dec_depth {
            let p = format!("decoder_l{}", layer + 1);
            let rnn = Ssru {
                w: Linear { weight: w.weight_matrix(&format!("{p}_rnn_W"), d, d)?, bias: None },
                wf: Linear::load_named(&mut w, &format!("{p}_rnn_Wf"), &format!("{p}_rnn_bf"), d, d)?,
                ffn_ln: LayerNorm::load_named(&mut w, &format!("{p}_rnn_ffn_ln_scale"), &format!("{p}_rnn_ffn_ln_bias"), d, LN_EPS)?,
            };
            let site = Site { kind: AttentionKind::Cross, layer };
            decoder.push(MarianDecoderLayer { rnn, context: MarianAttention::load(&mut w, &format!("{p}_context"), d, heads, site)?, ffn: MarianFfn::load(&mut w, &p, d, ffn)? });
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

    /// `encoder_self` attention of every encoder layer and `cross` attention of every decoder
    /// layer (one query row per decode step) go to `probe`.
    pub fn forward(&self, text: &str, probe: &mut Probe) -> Result<ForwardOutput> {
        let d = self.config.dim_emb;
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
        for layer in &self.encoder {
            x = layer.forward(&x, probe);
        }

        // ---- greedy decoding ---------------------------------------------------------
        // Encoder-side keys and values of every decoder layer, computed once.  # [Ts, d] each
        let memory: Vec<(Mat, Mat)> = self.decoder.iter().map(|l| l.context.keys_values(&x)).collect();
        let mut cells = vec![vec![0.0f32; d]; self.decoder.len()];
        let max_target = ((ts as f32 * MAX_LENGTH_FACTOR).ceil() as usize).max(4);
        let mut target_ids = Vec::new();
        let mut stop = StopReason::MaxLength;
        for step in 0..max_target {
            let mut y = Mat::zeros(1, d); // [1, d]
            match target_ids.last() {
                // The first decoder input is a zero vector (plus position 0), not an embedding.
                None => add_position(y.row_mut(0), step),
                Some(&id) => self.embed(id, step, y.row_mut(0))?,
            }
            for ((layer, cell), kv) in self.decoder.iter().zip(&mut cells).zip(&memory) {
                y = layer.forward(&y, cell, kv, probe);
            }
            // logits = y · Wembᵀ + b                                               # [1, vocab]
            let logits = linear_quantized(&y, &self.wemb, Some(&self.decoder_ff_logit_out_b));
            let next = argmax(logits.row(0)) as u32;
            target_ids.push(next);
            if next == EOS_ID {
                stop = StopReason::Eos;
                break;
            }
        }

        let target_tokens: Vec<String> = target_ids.iter().map(|&id| self.tokenizer.id_to_token(id)).collect();
        let target_word_ids = word_ids_from_pieces(&target_tokens);
        let text_ids: Vec<u32> = target_ids.iter().copied().filter(|&id| id != EOS_ID).collect();
        let output_text = self.tokenizer.decode(&text_ids)?;
        Ok(ForwardOutput {
            source_tokens: enc.tokens,
            source_word_ids: enc.word_ids,
            target_tokens,
            target_word_ids,
            output_text: Some(output_text),
            truncated: enc.truncated,
            stop_reason: Some(stop),
            sentence_embedding: None,
            generation: None,
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
    fn position_table_is_the_sinusoid_formula() {
        // Computed here independently (f64, Marian's layout: sin of every frequency, then cos).
        let (n, d) = (300, 256);
        let table = position_table(n, d);
        assert_eq!(table.len(), n * d);
        let half = d / 2;
        for pos in 0..n {
            for i in 0..half {
                let freq = 10000f64.powf(-(i as f64) / (half as f64 - 1.0));
                let (s, c) = ((pos as f64 * freq).sin(), (pos as f64 * freq).cos());
                let (ts, tc) = (table[pos * d + i] as f64, table[pos * d + half + i] as f64);
                assert!((ts - s).abs() <= 1e-6 && (tc - c).abs() <= 1e-6, "pos {pos} i {i}: {ts} {tc} vs {s} {c}");
            }
        }
    }

    #[test]
    fn pieces_group_into_words() {
        let t: Vec<String> = ["▁O", "▁gato", "▁sent", "ou", "-", "se", "</s>"].iter().map(|s| s.to_string()).collect();
        assert_eq!(word_ids_from_pieces(&t), vec![Some(0), Some(1), Some(2), Some(2), Some(2), Some(2), None]);
    }
}

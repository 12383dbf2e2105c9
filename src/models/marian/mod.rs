//! Marian encoder-decoder translation models: Bergamot "tiny" students (e.g. en→pt; a .bin
//! whose decoder is an SSRU recurrent cell, no decoder self-attention) and Hugging Face opus-mt
//! folders (masked decoder self-attention). Encoder: post-norm self-attention + FFN layers.
//! Decoder: per layer an SSRU cell or masked self-attention, cross-attention to the encoder
//! (`context`), FFN. Greedy decoding, one step per target token, with the SSRU state (or the
//! self-attention's K/V) and the encoder-side K/V cached. Returns `encoder_self` attention per
//! encoder layer, and `decoder_self` (opus-mt) and `cross` attention per decoder layer,
//! `[heads, T_tgt, T_src]`, where row t is the step that produced target token t.
//!
//! Split by job: `config` (sizes and conventions, from a .bin's `model.yml` and shapes or an
//! opus-mt config.json), `weights` (where each convention keeps each tensor, and the model built
//! from them), `layers` (the modules, each one group of weights named like them, with its own
//! `forward`), and here the family: loading, the forward (encode, then decode greedily) and the
//! sinusoidal positions.

mod config;
mod layers;
mod weights;

pub use config::{Activation, MarianConfig, MarianFlavor};

use super::family::{
    Architecture, Family, FamilyShape, ModelFiles, PositionKind, PositionTable, Sizes,
};
use crate::error::{invalid_model, Result};
use crate::nn::attention::KvCache;
use crate::nn::probe::{Probe, Site};
use crate::nn::score_parts::InputSplit;
use crate::result::{top_tokens, AttentionKind, ForwardOutput, GenerateOptions, StopReason};
use crate::tensor::{Mat, WeightMatrix};
use crate::tokenize::TextTokenizer;
use crate::weights::marian_bin;
use layers::{DecoderState, MarianDecoderLayer, MarianEncoderLayer};
use std::cell::RefCell;

/// What an opus-mt folder must hold: Hugging Face ships its tokenizer as source.spm,
/// target.spm and vocab.json, which the page cannot read.
pub const MARIAN_HF_FILES: &str = "a Marian (opus-mt) folder needs config.json, model.safetensors and tokenizer.json; opus-mt ships source.spm, target.spm and vocab.json instead of tokenizer.json: make one with scripts/opus_mt_tokenizer.py (the `tokenizers` library; its ids are vocab.json's) and put it beside the others";

/// The Marian family to loading, inspection and messages: a Bergamot .bin or a Hugging Face
/// opus-mt folder.
pub const ARCHITECTURE: Architecture = Architecture {
    model_types: &["marian"],
    display_name: |_| "Marian",
    hf_alternative: "",
    hf_hint: MARIAN_HF_FILES,
    own_files: bergamot_files,
    load,
    sizes,
    gguf_sizes: None,
};

/// A folder without config.json: a Bergamot `model*.bin` and its tokenizer.json.
fn bergamot_files(names: &[String]) -> Option<Result<Vec<String>>> {
    let bin = names.iter().find(|n| n.ends_with(".bin") && n.starts_with("model"))?;
    Some(match names.iter().any(|n| n == "tokenizer.json") {
        true => Ok(vec![bin.clone(), "tokenizer.json".into()]),
        false => Err(invalid_model("a Marian folder needs tokenizer.json beside the model .bin")),
    })
}

/// From a Hugging Face opus-mt folder, or a Bergamot .bin and tokenizer.json.
fn load(files: &mut ModelFiles) -> Result<Box<dyn Family>> {
    if files.listed(".safetensors").is_some() {
        let (config_json, weights, tokenizer_json) = files.hugging_face()?;
        let config = MarianConfig::from_hf_json(config_json)?;
        let store = RefCell::new(weights);
        return Ok(Box::new(MarianModel::build(config, &store, "config.json", tokenizer_json)?));
    }
    let bin = files
        .listed(".bin")
        .ok_or_else(|| invalid_model("no Marian .bin or .safetensors file in the manifest"))?;
    Ok(Box::new(MarianModel::load(files.get(&bin)?, &bin, files.get("tokenizer.json")?)?))
}

/// An opus-mt config's sizes, with the decoder's layers and maps (self- and cross-attention).
fn sizes(config_json: &[u8]) -> Result<Sizes> {
    let m = MarianConfig::from_hf_json(config_json)?;
    let (ts, tt) = (m.max_source as u64, m.max_target as u64);
    let per_layer =
        (m.heads as u64).saturating_mul(tt).saturating_mul(tt.saturating_add(ts)).saturating_mul(4);
    let decoder = Some((m.dec_depth, per_layer.saturating_mul(m.dec_depth as u64)));
    Ok(Sizes {
        layers: m.enc_depth,
        heads: m.heads,
        kv_heads: m.heads,
        hidden: m.dim_emb,
        max_positions: m.max_source,
        decoder,
    })
}

pub struct MarianModel {
    pub config: MarianConfig,
    /// `# [vocab, d]` tied: source and target embeddings and the output projection. Bergamot's
    /// stays int8: it is streamed once per decode step, and 8 MB read beats 33 MB.
    wemb: WeightMatrix,
    logits_bias: Vec<f32>,
    encoder: Vec<MarianEncoderLayer>,
    decoder: Vec<MarianDecoderLayer>,
    tokenizer: TextTokenizer,
}

/// The sinusoid at `pos`, added to `row`: sin half first, then cos; frequencies
/// 10000^(−i/`denominator`). The angle is computed in f64: in f32, `pos · freq` at position
/// 100 is already 4e-6 off, so the values added (and the positions view's table) would drift
/// from the formula.
fn add_position(row: &mut [f32], pos: usize, flavor: MarianFlavor) {
    let half = row.len() / 2;
    let wave = flavor.sinusoid(row.len());
    for i in 0..half {
        let angle = pos as f64 * wave.frequency(i);
        row[i] += angle.sin() as f32;
        row[half + i] += angle.cos() as f32;
    }
}

/// The sinusoid `add_position` adds, for positions `0..n` of width `d`: `# [n, d]` row-major.
pub fn position_table(n: usize, d: usize, flavor: MarianFlavor) -> Vec<f32> {
    let mut data = vec![0.0f32; n * d];
    for (pos, row) in data.chunks_exact_mut(d.max(1)).enumerate() {
        add_position(row, pos, flavor);
    }
    data
}

impl MarianModel {
    /// A Bergamot .bin; `name` is its file name, for error messages.
    pub fn load(model_bin: &[u8], name: &str, tokenizer_json: &[u8]) -> Result<MarianModel> {
        let file = marian_bin::read(model_bin)?;
        let mut w = file.tensors;
        w.set_file(name);
        let store = RefCell::new(w);
        let root = MarianFlavor::Bergamot.root(&store);
        let c = MarianConfig::from_file(file.model_yml.as_deref(), &root)?;
        MarianModel::build(c, &store, name, tokenizer_json)
    }

    /// Whether the decoder has self-attention (opus-mt) rather than an SSRU (Bergamot).
    pub fn has_decoder_self_attention(&self) -> bool {
        self.config.flavor == MarianFlavor::HuggingFace
    }

    /// The special tokens the tokenizer knows.
    pub fn special_tokens(&self) -> Vec<String> {
        let ids = [Some(self.config.eos_id), self.config.banned_id];
        let mut special: Vec<String> =
            ids.into_iter().flatten().filter_map(|id| self.tokenizer.id_to_token_opt(id)).collect();
        special.extend(
            ["<unk>".to_string()].into_iter().filter(|t| self.tokenizer.token_to_id(t).is_some()),
        );
        special.dedup();
        special
    }

    /// `row` = the embedding of `id` (× √d when the model scales) + the sinusoid at `pos`.
    fn embed(&self, id: u32, pos: usize, row: &mut [f32]) -> Result<()> {
        if id as usize >= self.wemb.rows() {
            return Err(invalid_model(format!("token id {id} is outside the vocabulary")));
        }
        self.token_row(id, row);
        add_position(row, pos, self.config.flavor);
        Ok(())
    }

    /// `row` = the embedding of `id` (in the vocabulary), × √d when the model scales.
    fn token_row(&self, id: u32, row: &mut [f32]) {
        self.wemb.row_into(id as usize, row);
        if self.config.scale_embedding {
            let scale = (row.len() as f32).sqrt();
            row.iter_mut().for_each(|r| *r *= scale);
        }
    }

    /// logits = y · Wembᵀ + b, the banned token (`<pad>`) at −∞                # [T, vocab]
    fn logits(&self, y: &Mat) -> Mat {
        let mut logits = self.wemb.linear(y, Some(&self.logits_bias));
        if let Some(id) =
            self.config.banned_id.map(|id| id as usize).filter(|&id| id < logits.cols())
        {
            for r in 0..logits.rows() {
                logits.row_mut(r)[id] = f32::NEG_INFINITY;
            }
        }
        logits
    }

    /// What `embed` gives the rows of `ids` (None: Bergamot's zero start vector) at positions
    /// `first..`, split into the token's part and the position's (the bias part, zero here,
    /// takes the projections' biases): a first layer's input for the score parts.
    fn split(&self, ids: &[Option<u32>], first: usize) -> InputSplit {
        let d = self.config.dim_emb;
        let (mut token, mut position) = (Mat::zeros(ids.len(), d), Mat::zeros(ids.len(), d));
        for (i, id) in ids.iter().enumerate() {
            if let Some(id) = id.filter(|&id| (id as usize) < self.wemb.rows()) {
                self.token_row(id, token.row_mut(i));
            }
            add_position(position.row_mut(i), first + i, self.config.flavor);
        }
        InputSplit {
            names: vec!["token", "position", "bias"],
            parts: vec![token, position, Mat::zeros(ids.len(), d)],
            first_key: first,
        }
    }
}

impl Family for MarianModel {
    fn shape(&self) -> FamilyShape {
        let c = &self.config;
        let mut kinds =
            vec![(AttentionKind::EncoderSelf, c.enc_depth), (AttentionKind::Cross, c.dec_depth)];
        if self.has_decoder_self_attention() {
            kinds.insert(1, (AttentionKind::DecoderSelf, c.dec_depth));
        }
        let max_positions = self.tokenizer.max_tokens() + 1;
        FamilyShape {
            kinds,
            heads: c.heads,
            kv_heads: c.heads,
            head_dim: c.dim_emb / c.heads,
            max_positions,
            special_tokens: self.special_tokens(),
            generates: false,
        }
    }

    fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// The sinusoid the forward adds (sin half, then cos half).
    fn positions(&self, n: usize) -> PositionTable {
        let (dims, flavor) = (self.config.dim_emb, self.config.flavor);
        PositionTable {
            kind: PositionKind::Sinusoidal,
            positions: n,
            dims,
            data: position_table(n, dims, flavor),
            wave: Some(flavor.sinusoid(dims)),
        }
    }

    /// `encoder_self` attention of every encoder layer, and `decoder_self` (opus-mt) and
    /// `cross` attention of every decoder layer (one query row per decode step) go to `probe`.
    fn forward(
        &self,
        text: &str,
        _generate: &GenerateOptions,
        probe: &mut Probe,
    ) -> Result<ForwardOutput> {
        let (d, eos) = (self.config.dim_emb, self.config.eos_id);
        let mut enc = self.tokenizer.encode(text)?;
        // A tokenizer.json whose post-processor appends `</s>` already did.
        if enc.ids.last() != Some(&eos) {
            enc.ids.push(eos);
            enc.tokens.push(self.tokenizer.id_to_token(eos));
            enc.word_ids.push(None);
        }
        let ts = enc.ids.len();

        // ---- encoder ---------------------------------------------------------------
        let mut x = Mat::zeros(ts, d); // [Ts, d]
        for (i, &id) in enc.ids.iter().enumerate() {
            self.embed(id, i, x.row_mut(i))?;
        }
        let source: Vec<Option<u32>> = enc.ids.iter().map(|&id| Some(id)).collect();
        probe.split_input(first_layer(AttentionKind::EncoderSelf), || self.split(&source, 0));
        probe.tokens_fed(AttentionKind::EncoderSelf, 0, &enc.ids, &self.tokenizer);
        for layer in &self.encoder {
            x = layer.forward(&x, probe);
        }

        // ---- greedy decoding ---------------------------------------------------------
        // Encoder-side keys and values of every decoder layer, computed once.  # [Ts, d] each
        let memory: Vec<KvCache> = self.decoder.iter().map(|l| l.context.keys_values(&x)).collect();
        let max_target = self.config.max_target_for(ts);
        let positions = if self.has_decoder_self_attention() { max_target } else { 0 };
        let mut states: Vec<DecoderState> = self
            .decoder
            .iter()
            .map(|_| DecoderState { cell: vec![0.0; d], cache: KvCache::new(positions, d) })
            .collect();
        let mut target_ids = Vec::new();
        let mut decode_top = Vec::new(); // each step's candidates
        let mut stop = StopReason::MaxLength;
        for step in 0..max_target {
            let mut y = Mat::zeros(1, d); // [1, d]
            let input = target_ids.last().copied().or(self.config.decoder_start_id);
            match input {
                Some(id) => self.embed(id, step, y.row_mut(0))?,
                // Bergamot: the first decoder input is a zero vector (plus position 0).
                None => add_position(y.row_mut(0), step, self.config.flavor),
            }
            probe.split_input(first_layer(AttentionKind::DecoderSelf), || {
                self.split(&[input], step)
            });
            let mut lens = probe.wants_lens().then(Vec::new); // each layer's output
            for ((layer, state), kv) in self.decoder.iter().zip(&mut states).zip(&memory) {
                y = layer.forward(&y, state, kv, probe);
                if let Some(outputs) = &mut lens {
                    outputs.push(y.clone());
                }
            }
            let logits = self.logits(&y); // [1, vocab]
            let next = argmax(logits.row(0)) as u32;
            let token = |id| self.tokenizer.id_to_token(id);
            let top = top_tokens(logits.row(0), token);
            if let Some(outputs) = lens {
                // The decoder ends in no norm of its own: each layer's (post-norm) output is what
                // the output matrix could read. The last layer's is the step's own prediction.
                let earlier = &outputs[..outputs.len().saturating_sub(1)];
                probe.record_lens_through(earlier, |h| self.logits(h), token);
                probe.record_lens(earlier.len(), [top.clone()]);
            }
            decode_top.push(top);
            // The decoder's keys are named by the tokens it outputs: this step's, now chosen.
            probe.tokens_fed(AttentionKind::DecoderSelf, step, &[next], &self.tokenizer);
            target_ids.push(next);
            if next == eos {
                stop = StopReason::Eos;
                break;
            }
        }

        let target_tokens: Vec<String> =
            target_ids.iter().map(|&id| self.tokenizer.id_to_token(id)).collect();
        let target_word_ids = word_ids_from_pieces(&target_tokens);
        let text_ids: Vec<u32> = target_ids.iter().copied().filter(|&id| id != eos).collect();
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
            decode_top: Some(decode_top),
        })
    }
}

/// The first layer's attention of `kind`.
fn first_layer(kind: AttentionKind) -> Site {
    Site { kind, layer: 0 }
}

fn argmax(row: &[f32]) -> usize {
    row.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |best, (i, &v)| if v > best.1 { (i, v) } else { best })
        .0
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
    use crate::models::family::Wave;

    #[test]
    fn positions_are_sin_then_cos() {
        let mut row = vec![0.0f32; 8];
        add_position(&mut row, 0, MarianFlavor::Bergamot);
        assert_eq!(row, vec![0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
        let mut row = vec![0.0f32; 8];
        add_position(&mut row, 1, MarianFlavor::Bergamot);
        assert!((row[0] - 1f32.sin()).abs() < 1e-6 && (row[4] - 1f32.cos()).abs() < 1e-6);
        // Last frequency is 1/10000.
        assert!((row[3] - (1e-4f32).sin()).abs() < 1e-7);
    }

    #[test]
    fn position_table_is_the_sinusoid_formula() {
        // Computed here independently (f64, Marian's layout: sin of every frequency, then cos).
        let (n, d) = (300, 256);
        let table = position_table(n, d, MarianFlavor::Bergamot);
        assert_eq!(table.len(), n * d);
        let half = d / 2;
        for pos in 0..n {
            for i in 0..half {
                let freq = 10000f64.powf(-(i as f64) / (half as f64 - 1.0));
                let (s, c) = ((pos as f64 * freq).sin(), (pos as f64 * freq).cos());
                let (ts, tc) = (table[pos * d + i] as f64, table[pos * d + half + i] as f64);
                assert!(
                    (ts - s).abs() <= 1e-6 && (tc - c).abs() <= 1e-6,
                    "pos {pos} i {i}: {ts} {tc} vs {s} {c}"
                );
            }
        }
    }

    #[test]
    fn the_wave_shipped_is_the_one_added() {
        // The positions view reads periods off `Wave::column_frequencies`: they must be the
        // table's own, for Bergamot (÷ (d/2 − 1)) and for opus-mt (÷ d/2, the paper's).
        let d = 16;
        for (flavor, denominator) in
            [(MarianFlavor::Bergamot, 7.0), (MarianFlavor::HuggingFace, 8.0)]
        {
            let wave = flavor.sinusoid(d);
            assert_eq!(wave, Wave { base: 10000.0, denominator });
            let freqs = wave.column_frequencies(d);
            let table = position_table(50, d, flavor);
            for pos in 0..50 {
                for c in 0..d {
                    let angle = pos as f64 * freqs[c];
                    let want = if c < d / 2 { angle.sin() } else { angle.cos() };
                    assert!(
                        (table[pos * d + c] as f64 - want).abs() < 1e-6,
                        "{flavor:?} pos {pos} column {c}"
                    );
                }
            }
        }
    }

    #[test]
    fn pieces_group_into_words() {
        let t: Vec<String> = ["▁O", "▁gato", "▁sent", "ou", "-", "se", "</s>"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            word_ids_from_pieces(&t),
            vec![Some(0), Some(1), Some(2), Some(2), Some(2), Some(2), None]
        );
    }
}

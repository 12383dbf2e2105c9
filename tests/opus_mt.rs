//! A Hugging Face opus-mt (Marian) folder with tiny seeded weights (tests/support/fuzz_models.rs): it loads from
//! the folder alone, runs the paper's encoder-decoder (encoder self-attention, masked decoder
//! self-attention, cross-attention), is recognised from its headers, and is refused with a
//! message that names what is wrong. Parity with numpy: tests/reference/test_own_models.py.

use crate::fuzz_models;

use attnviz::models::inspect::{inspect, FileHead};
use attnviz::models::{Manifest, Model, PositionKind};
use attnviz::result::{AttentionKind, HeadRequest};
use fuzz_models::opus_mt::{config, safetensors, tokenizer, D, FFN, HEADS, LAYERS, PIECES};
use serde_json::json;
use std::collections::HashMap;

fn files(config: Vec<u8>, weights: Vec<u8>) -> HashMap<String, Vec<u8>> {
    [("config.json", config), ("model.safetensors", weights), ("tokenizer.json", tokenizer())]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// What the page does: a manifest inferred from the file names and config.json, then the load.
fn load(files: &HashMap<String, Vec<u8>>) -> attnviz::Result<Model> {
    let names: Vec<String> = files.keys().cloned().collect();
    let manifest =
        Manifest::infer("tiny-opus-mt", &names, files.get("config.json").map(|c| c.as_slice()))?;
    Model::load(manifest, files)
}

fn good() -> Model {
    load(&files(config(|_| {}), safetensors(None))).unwrap()
}

#[test]
fn runs_encoder_self_decoder_self_and_cross_attention() {
    let m = good();
    let info = m.info();
    assert_eq!(info.architecture, "marian");
    assert_eq!(
        info.kinds,
        [AttentionKind::EncoderSelf, AttentionKind::DecoderSelf, AttentionKind::Cross]
    );
    assert!(info.kinds.iter().all(|k| info.layers[k] == LAYERS && info.heads[k] == HEADS));
    assert!(
        info.special_tokens.contains(&"<pad>".to_string())
            && info.special_tokens.contains(&"</s>".to_string())
    );
    let a = m.attend("the cat sat on the mat.").unwrap();
    let (ts, tt) = (a.output.source_tokens.len(), a.output.target_tokens.len());
    assert_eq!(a.output.source_tokens.last().map(String::as_str), Some("</s>"));
    assert!(
        tt >= 1 && !a.output.target_tokens.iter().any(|t| t == "<pad>"),
        "the pad token is never generated"
    );
    assert_eq!(a.attentions.len(), 3 * LAYERS);
    for b in &a.attentions {
        let (q, k) = match b.kind {
            AttentionKind::EncoderSelf => (ts, ts),
            AttentionKind::DecoderSelf => (tt, tt),
            _ => (tt, ts),
        };
        assert_eq!((b.heads, b.query_len, b.key_len), (HEADS, q, k), "{:?} {}", b.kind, b.layer);
        for h in 0..b.heads {
            for i in 0..b.query_len {
                let row = b.row(h, i);
                assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
                if b.kind == AttentionKind::DecoderSelf {
                    assert!(
                        row[i + 1..].iter().all(|&p| p == 0.0),
                        "decoder step {i} sees a later position"
                    );
                }
            }
        }
    }
}

#[test]
fn the_step_view_traces_decoder_self_attention() {
    let m = good();
    let a = m.attend("the cat").unwrap();
    let block =
        a.attentions.iter().find(|b| b.kind == AttentionKind::DecoderSelf && b.layer == 1).unwrap();
    let h = m
        .head_internals(
            "the cat",
            HeadRequest { kind: AttentionKind::DecoderSelf, layer: 1, head: 1 },
        )
        .unwrap();
    assert_eq!(h.trace.query_len, block.query_len);
    // The traced softmax rows are the map's rows (the trace's keys grow with the steps).
    for i in 0..block.query_len {
        let traced = &h.trace.probs[i * h.trace.key_len..][..i + 1];
        let row = &block.row(1, i)[..i + 1];
        assert!(
            traced.iter().zip(row).all(|(a, b)| (a - b).abs() < 1e-6),
            "row {i}: {traced:?} vs {row:?}"
        );
    }
}

#[test]
fn positions_are_the_transformers_sinusoid() {
    // MarianSinusoidalPositionalEmbedding: θ = p / 10000^(2i/d), sin in the first half, cos in the second.
    let t = good().positions(5);
    assert_eq!((t.kind, t.positions, t.dims), (PositionKind::Sinusoidal, 5, D));
    for p in 0..5 {
        for i in 0..D / 2 {
            let theta = p as f64 / 10000f64.powf(2.0 * i as f64 / D as f64);
            assert!(
                (t.data[p * D + i] as f64 - theta.sin()).abs() < 1e-6
                    && (t.data[p * D + D / 2 + i] as f64 - theta.cos()).abs() < 1e-6,
                "p {p} i {i}"
            );
        }
    }
}

#[test]
fn inspect_recognises_an_opus_mt_folder() {
    let (c, w, t) = (config(|_| {}), safetensors(None), tokenizer());
    let head_len = 8 + u64::from_le_bytes(w[..8].try_into().unwrap()) as usize;
    let heads = [
        FileHead { name: "config.json", size: c.len() as u64, head: &c },
        FileHead { name: "model.safetensors", size: w.len() as u64, head: &w[..head_len] },
        FileHead { name: "tokenizer.json", size: t.len() as u64, head: &[] },
        FileHead { name: "source.spm", size: 10, head: &[] },
    ];
    let i = inspect("tiny-opus-mt", &heads).unwrap();
    assert_eq!(
        (i.architecture.as_str(), i.layers, i.decoder_layers, i.heads, i.hidden_size),
        ("marian", LAYERS, Some(LAYERS), HEADS, D)
    );
    let v = PIECES.len() as u64;
    let per_layer = |attns: u64| {
        attns * (4 * (D * D + D) as u64 + 2 * D as u64) + (2 * FFN * D + FFN + D + 2 * D) as u64
    };
    assert_eq!(i.parameters, v * D as u64 + v + LAYERS as u64 * (per_layer(1) + per_layer(2)));
    assert_eq!(i.manifest.files, ["config.json", "model.safetensors", "tokenizer.json"]);
    assert!(i.memory_bytes > i.parameters * 4);
    // opus-mt as published: no tokenizer.json.
    let e = inspect(
        "tiny-opus-mt",
        &[heads[0].clone_ref(), heads[1].clone_ref(), heads[3].clone_ref()],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("tokenizer.json")
            && e.contains("scripts/opus_mt_tokenizer.py")
            && e.contains("vocab.json"),
        "{e}"
    );
}

trait CloneRef<'a> {
    fn clone_ref(&self) -> FileHead<'a>;
}

impl<'a> CloneRef<'a> for FileHead<'a> {
    fn clone_ref(&self) -> FileHead<'a> {
        FileHead { name: self.name, size: self.size, head: self.head }
    }
}

#[test]
fn refuses_what_it_cannot_run_and_says_why() {
    let refuse =
        |f: HashMap<String, Vec<u8>>| load(&f).err().map(|e| e.to_string()).unwrap_or_default();
    let e = refuse(files(config(|c| c["activation_function"] = json!("tanh")), safetensors(None)));
    assert!(e.contains("activation_function `tanh`") && e.contains("swish, gelu, relu"), "{e}");
    let e = refuse(files(config(|c| c["normalize_before"] = json!(true)), safetensors(None)));
    assert!(e.contains("pre-norm"), "{e}");
    let e = refuse(files(
        config(|c| c["share_encoder_decoder_embeddings"] = json!(false)),
        safetensors(None),
    ));
    assert!(e.contains("model.shared.weight"), "{e}");
    let e = refuse(files(config(|c| c["eos_token_id"] = json!(99)), safetensors(None)));
    assert!(e.contains("99") && e.contains("outside the vocabulary"), "{e}");
    let e = refuse(files(config(|c| c["encoder_attention_heads"] = json!(3)), safetensors(None)));
    assert!(e.contains("heads"), "{e}");
    let name = "model.decoder.layers.1.encoder_attn.k_proj.weight";
    let e = refuse(files(config(|_| {}), safetensors(Some(name))));
    assert!(e.contains(name), "{e}");
}

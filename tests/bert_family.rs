//! RoBERTa and DistilBERT run BERT's forward under other names and positions. Built here from
//! the tiny BERT of tests/support (f32, f16 and bf16 tensors), renamed: a DistilBERT folder
//! whose weights are the BERT's (token type row zeroed) and a RoBERTa folder whose position rows
//! after `padding_idx` are the BERT's give the BERT's maps to the last bit; `xlm-roberta` is the
//! same path; the page's inspection names the family; a bad config or a missing tensor is an
//! error naming the key or tensor. Parity with numpy: tests/reference/test_own_models.py.
#![cfg(not(target_arch = "wasm32"))]

use crate::fuzz_models;

use attnviz::models::inspect::{inspect, FileHead};
use attnviz::models::{Manifest, Model, PositionKind};
use attnviz::result::{Attended, GenerateOptions};
use fuzz_models::{bert_config, bert_safetensors, bert_tokenizer, BertShape};
use safetensors::tensor::{Dtype, TensorView};
use serde_json::{json, Value};
use std::collections::HashMap;

const S: BertShape = BertShape::DEFAULT;
const TEXT: &str = "the cat sat on the mat.";

/// The tiny BERT's tensors, each renamed (or dropped, or replaced) by `edit`.
fn rewrite(
    edit: impl Fn(&str, Dtype, &[usize], &[u8]) -> Option<(String, Dtype, Vec<usize>, Vec<u8>)>,
) -> Vec<u8> {
    let bytes = bert_safetensors(&S);
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let tensors: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = st
        .tensors()
        .into_iter()
        .filter_map(|(name, t)| edit(&name, t.dtype(), t.shape(), t.data()))
        .collect();
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .map(|(n, d, s, b)| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap()))
        .collect();
    safetensors::serialize(views, None).unwrap()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The tiny BERT's config.json with `edit` applied.
fn config(edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Vec<u8> {
    let mut c: Value = serde_json::from_slice(&bert_config(&S)).unwrap();
    edit(c.as_object_mut().unwrap());
    serde_json::to_vec(&c).unwrap()
}

fn load(config: Vec<u8>, weights: Vec<u8>) -> attnviz::Result<Model> {
    let names: Vec<String> =
        ["config.json", "model.safetensors", "tokenizer.json"].map(String::from).to_vec();
    let manifest = Manifest::infer("mine", &names, Some(&config))?;
    let files = HashMap::from([
        ("config.json".to_string(), config),
        ("model.safetensors".to_string(), weights),
        ("tokenizer.json".to_string(), bert_tokenizer()),
    ]);
    Model::load(manifest, &files)
}

/// The BERT with its token type row zeroed (DistilBERT has none).
fn bert_without_token_types() -> Model {
    let zero = |n: &str, d: Dtype, s: &[usize], b: &[u8]| {
        let b = if n.contains("token_type") { vec![0; b.len()] } else { b.to_vec() };
        Some((n.to_string(), d, s.to_vec(), b))
    };
    load(bert_config(&S), rewrite(zero)).unwrap()
}

/// DistilBertForMaskedLM's names for the BERT's tensors.
fn distilbert_name(bert: &str) -> Option<String> {
    if bert.contains("token_type") {
        return None;
    }
    let mut n = bert.replace("encoder.layer.", "transformer.layer.");
    for (old, new) in [
        ("attention.self.query", "attention.q_lin"),
        ("attention.self.key", "attention.k_lin"),
        ("attention.self.value", "attention.v_lin"),
        ("attention.output.dense", "attention.out_lin"),
        ("attention.output.LayerNorm", "sa_layer_norm"),
        ("intermediate.dense", "ffn.lin1"),
        ("output.dense", "ffn.lin2"),
        ("output.LayerNorm", "output_layer_norm"),
    ] {
        if n.contains(old) {
            n = n.replace(old, new);
            break;
        }
    }
    Some(format!("distilbert.{n}"))
}

fn distilbert_config(edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let bert: Value = serde_json::from_slice(&bert_config(&S)).unwrap();
    let mut c = json!({
        "model_type": "distilbert", "vocab_size": bert["vocab_size"], "dim": S.hidden, "n_layers": S.layers, "n_heads": S.heads,
        "hidden_dim": S.ffn, "max_position_embeddings": S.positions, "activation": "gelu", "sinusoidal_pos_embds": false
    });
    edit(&mut c);
    serde_json::to_vec(&c).unwrap()
}

fn distilbert_weights() -> Vec<u8> {
    rewrite(|n, d, s, b| distilbert_name(n).map(|n| (n, d, s.to_vec(), b.to_vec())))
}

/// RoBERTa with `padding_idx` 0 (the tokenizer's `[PAD]`): position row 0 is the pad's (large,
/// so that a token put there shows), rows 1.. are the BERT's; one token type, the BERT's first.
fn roberta_weights(prefix: &str) -> Vec<u8> {
    rewrite(|n, d, s, b| {
        let name = format!("{prefix}{n}");
        Some(match n {
            "embeddings.position_embeddings.weight" => {
                let mut rows = vec![5.0f32; S.hidden];
                rows.extend(
                    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                );
                (name, Dtype::F32, vec![S.positions + 1, S.hidden], f32_bytes(&rows))
            }
            "embeddings.token_type_embeddings.weight" => {
                (name, d, vec![1, S.hidden], b[..b.len() / 2].to_vec())
            }
            _ => (name, d, s.to_vec(), b.to_vec()),
        })
    })
}

fn roberta_config(model_type: &str) -> Vec<u8> {
    config(|c| {
        c.insert("model_type".into(), json!(model_type));
        c.insert("max_position_embeddings".into(), json!(S.positions + 1));
        c.insert("type_vocab_size".into(), json!(1));
        c.insert("pad_token_id".into(), json!(0));
    })
}

fn maps(a: &Attended) -> Vec<Vec<f32>> {
    a.attentions.iter().map(|b| b.probs.clone()).collect()
}

#[test]
fn distilbert_is_bert_without_token_types_under_other_names() {
    let m = load(distilbert_config(|_| ()), distilbert_weights()).unwrap();
    let info = m.info();
    assert_eq!(
        (info.architecture.as_str(), info.max_positions, info.head_dim),
        ("distilbert", S.positions, S.hidden / S.heads)
    );
    let (a, b) = (m.attend(TEXT).unwrap(), bert_without_token_types().attend(TEXT).unwrap());
    assert_eq!(a.output.source_tokens, b.output.source_tokens);
    assert_eq!(maps(&a), maps(&b));
    assert_eq!(a.output.sentence_embedding, b.output.sentence_embedding);
    // Names as DistilBertModel saves them (no `distilbert.` prefix) load too.
    let bare = rewrite(|n, d, s, bytes| {
        distilbert_name(n)
            .map(|n| (n["distilbert.".len()..].to_string(), d, s.to_vec(), bytes.to_vec()))
    });
    assert_eq!(
        maps(&load(distilbert_config(|_| ()), bare).unwrap().attend(TEXT).unwrap()),
        maps(&b)
    );
}

#[test]
fn roberta_positions_start_after_padding_idx() {
    let bert = load(bert_config(&S), bert_safetensors(&S)).unwrap();
    let want = bert.attend(TEXT).unwrap();
    for (model_type, prefix) in
        [("roberta", "roberta."), ("roberta", ""), ("xlm-roberta", "roberta.")]
    {
        let m = load(roberta_config(model_type), roberta_weights(prefix)).unwrap();
        let got = m.attend(TEXT).unwrap();
        assert_eq!(maps(&got), maps(&want), "{model_type} {prefix:?}");
        let info = m.info();
        assert_eq!((info.architecture.as_str(), info.max_positions), (model_type, S.positions));
        // The positions view shows the rows the tokens take, from padding_idx + 1.
        let (p, b) = (m.positions(S.positions), bert.positions(S.positions));
        assert_eq!((p.kind, p.positions, &p.data), (PositionKind::Learned, S.positions, &b.data));
    }
    // A typed [PAD] (the pad token) takes row padding_idx and is not counted: the tokens after
    // it keep the positions they have without it, so row 0's large vector only moves the pad.
    let m = load(roberta_config("roberta"), roberta_weights("roberta.")).unwrap();
    let with_pad = m.attend("the cat [PAD] sat").unwrap();
    assert_eq!(with_pad.output.source_tokens, ["[CLS]", "the", "cat", "[PAD]", "sat", "[SEP]"]);
    assert_ne!(maps(&with_pad), maps(&bert.attend("the cat [PAD] sat").unwrap()));
}

#[test]
fn value_norms_and_head_scores_cover_both() {
    for m in [
        load(distilbert_config(|_| ()), distilbert_weights()).unwrap(),
        load(roberta_config("roberta"), roberta_weights("roberta.")).unwrap(),
    ] {
        let a = m.attend_with(TEXT, &GenerateOptions::default(), true).unwrap();
        let norms = a.value_norms.unwrap();
        assert_eq!(norms.len(), S.layers);
        assert!(norms.iter().zip(&a.attentions).all(|(n, b)| n.probs.len() == b.probs.len()
            && n.probs.iter().all(|v| v.is_finite() && *v >= 0.0)));
        let (_, scores) = m.heads(TEXT, &GenerateOptions::default()).unwrap();
        assert_eq!(scores.len(), S.layers * S.heads);
        assert!(m.info().special_tokens.contains(&"[SEP]".to_string()));
    }
}

#[test]
fn inspection_names_the_family_and_counts_from_headers() {
    let cases = [
        ("roberta", roberta_config("roberta"), roberta_weights("roberta."), S.positions),
        ("distilbert", distilbert_config(|_| ()), distilbert_weights(), S.positions),
    ];
    for (family, config, weights, max_positions) in cases {
        let header_len = u64::from_le_bytes(weights[..8].try_into().unwrap()) as usize;
        let tok = bert_tokenizer();
        let files = [
            FileHead { name: "config.json", size: config.len() as u64, head: &config },
            FileHead {
                name: "model.safetensors",
                size: weights.len() as u64,
                head: &weights[..8 + header_len],
            },
            FileHead { name: "tokenizer.json", size: tok.len() as u64, head: &[] },
        ];
        let i = inspect("mine", &files).unwrap();
        assert_eq!(
            (i.architecture.as_str(), i.layers, i.heads, i.hidden_size, i.max_positions),
            (family, S.layers, S.heads, S.hidden, max_positions)
        );
        assert!(
            i.format.starts_with("safetensors ")
                && ["F32", "F16", "BF16"].iter().all(|d| i.format.contains(d)),
            "{}",
            i.format
        );
        assert!(i.parameters > 0 && i.memory_bytes > i.file_bytes);
    }
}

#[test]
fn bad_configs_and_missing_tensors_are_named() {
    let e = |r: attnviz::Result<Model>| r.err().expect("must not load").to_string();
    let msg = e(load(distilbert_config(|c| c["activation"] = json!("relu")), distilbert_weights()));
    assert!(msg.contains("activation `relu`"), "{msg}");
    let msg = e(load(distilbert_config(|c| c["n_heads"] = json!(3)), distilbert_weights()));
    assert!(msg.contains("dim 8 is not a multiple of n_heads 3"), "{msg}");
    let msg = e(load(distilbert_config(|c| c["n_layers"] = json!(0)), distilbert_weights()));
    assert!(msg.contains("n_layers is 0"), "{msg}");
    let weights = rewrite(|n, d, s, b| {
        distilbert_name(n)
            .filter(|n| n != "distilbert.transformer.layer.1.ffn.lin2.weight")
            .map(|n| (n, d, s.to_vec(), b.to_vec()))
    });
    let msg = e(load(distilbert_config(|_| ()), weights));
    assert!(msg.contains("`distilbert.transformer.layer.1.ffn.lin2.weight` is missing"), "{msg}");
    let cut = config(|c| {
        c.insert("model_type".into(), json!("roberta"));
        c.insert("max_position_embeddings".into(), json!(2));
        c.insert("pad_token_id".into(), json!(1));
    });
    let msg = e(load(cut, roberta_weights("roberta.")));
    assert!(
        msg.contains("max_position_embeddings 2 leaves no position after padding_idx 1"),
        "{msg}"
    );
    // A BERT checkpoint given as RoBERTa: the position table is one row short, and says so.
    let msg = e(load(roberta_config("roberta"), bert_safetensors(&S)));
    assert!(
        msg.contains("position_embeddings.weight")
            && msg.contains(&format!("expected [{}, {}]", S.positions + 1, S.hidden)),
        "{msg}"
    );
}

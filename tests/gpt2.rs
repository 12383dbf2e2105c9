//! The GPT-2 family on a tiny random GPT2LMHeadModel folder built here (Conv1D weights stored
//! `[in, out]`, a byte-level tokenizer.json with every byte a token): what the model says it
//! is, causal maps, KV-cache generation against a full re-run, seeded sampling, the heads'
//! induction scores, both weight-name layouts, and the load's shape checks. Parity with an
//! independent numpy reference is in tests/reference/test_own_models.py.
#![cfg(not(target_arch = "wasm32"))]

use crate::fuzz_models;

use attnviz::models::{Manifest, Model, PositionKind};
use attnviz::result::{AttentionKind, GenerateOptions, Sampling, StopReason};
use fuzz_models::gpt2::{
    config_json, safetensors, tensors, tokenizer_json, D, HEADS, LAYERS, POSITIONS,
};
use std::collections::HashMap;

fn load_with(tensors: &[(String, Vec<usize>, Vec<f32>)]) -> attnviz::Result<Model> {
    let names: Vec<String> =
        ["config.json", "model.safetensors", "tokenizer.json"].map(String::from).to_vec();
    let config = config_json();
    let manifest = Manifest::infer("tiny-gpt2", &names, Some(&config))?;
    let files = HashMap::from([
        ("config.json".to_string(), config),
        ("model.safetensors".to_string(), safetensors(tensors)),
        ("tokenizer.json".to_string(), tokenizer_json()),
    ]);
    Model::load(manifest, &files)
}

fn tiny() -> Model {
    load_with(&tensors("transformer.")).unwrap()
}

fn greedy(n: usize) -> GenerateOptions {
    GenerateOptions { max_new_tokens: n, ..GenerateOptions::default() }
}

#[test]
fn info_describes_a_causal_decoder_with_learned_positions() {
    let m = tiny();
    let info = m.info();
    assert_eq!(info.architecture, "gpt2");
    assert_eq!(info.kinds, vec![AttentionKind::DecoderSelf]);
    assert_eq!(
        (
            info.layers[&AttentionKind::DecoderSelf],
            info.heads[&AttentionKind::DecoderSelf],
            info.kv_heads[&AttentionKind::DecoderSelf]
        ),
        (LAYERS, HEADS, HEADS)
    );
    assert_eq!((info.head_dim, info.max_positions), (D / HEADS, POSITIONS));
    assert!(info.generates);
    assert_eq!(info.special_tokens, vec!["<|endoftext|>".to_string(); 2]);
    let p = m.positions(8);
    assert_eq!((p.kind, p.positions, p.dims, p.data.len()), (PositionKind::Learned, 8, D, 8 * D));
    // Row 0 of the table is wpe's row 0 as stored.
    let wpe = &tensors("transformer.")[1];
    assert_eq!(&p.data[..D], &wpe.2[..D]);
}

#[test]
fn maps_are_causal_and_rows_sum_to_one() {
    let a = tiny().attend("Hi there, GPT!").unwrap();
    let t = "Hi there, GPT!".len();
    assert_eq!(a.output.source_tokens.len(), t, "one token per byte: {:?}", a.output.source_tokens);
    assert_eq!(a.output.source_tokens[2], "Ġ");
    assert_eq!(a.attentions.len(), LAYERS);
    for b in &a.attentions {
        assert_eq!(
            (b.kind, b.heads, b.query_len, b.key_len),
            (AttentionKind::DecoderSelf, HEADS, t, t)
        );
        for h in 0..HEADS {
            for q in 0..t {
                let row = b.row(h, q);
                assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
                assert!(
                    row[q + 1..].iter().all(|&p| p == 0.0),
                    "layer {} head {h}: query {q} sees the future",
                    b.layer
                );
            }
        }
    }
    let g = a.output.generation.as_ref().unwrap();
    assert_eq!((g.prompt_len, g.steps.len(), g.next.len()), (t, 0, 5));
}

#[test]
fn kv_cache_generation_equals_a_full_rerun() {
    let m = tiny();
    let a = m.attend_generating("The cat", &greedy(6)).unwrap();
    let g = a.output.generation.as_ref().unwrap();
    assert_eq!(g.token_ids.len(), 7 + g.steps.len());
    assert!(!g.steps.is_empty());
    if g.steps.len() < 6 {
        assert_eq!(a.output.stop_reason, Some(StopReason::Eos));
    } else {
        assert_eq!(a.output.stop_reason, Some(StopReason::MaxLength));
    }
    // Greedy: each step took its most probable candidate.
    assert!(g.steps.iter().all(|s| s.id == s.top[0].id));
    let full = m.attend_ids(&g.token_ids).unwrap();
    for (got, want) in a.attentions.iter().zip(&full) {
        assert_eq!((got.query_len, got.key_len), (want.query_len, want.key_len));
        let worst =
            got.probs.iter().zip(&want.probs).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        assert!(worst < 1e-5, "layer {}: KV cache differs from a full run by {worst}", got.layer);
    }
}

#[test]
fn sampling_is_seeded_and_the_context_is_bounded() {
    let m = tiny();
    let sampled = |seed| GenerateOptions {
        max_new_tokens: 8,
        sampling: Sampling { temperature: 1.5, top_k: 50, seed },
    };
    let ids = |o: &GenerateOptions| {
        m.attend_generating("abc", o).unwrap().output.generation.unwrap().token_ids
    };
    assert_eq!(ids(&sampled(7)), ids(&sampled(7)));
    assert_ne!(ids(&sampled(7)), ids(&sampled(8)));
    // A prompt longer than the context is cut to leave room for what is asked.
    let long = "x".repeat(3 * POSITIONS);
    let a = m.attend_generating(&long, &greedy(5)).unwrap();
    let g = a.output.generation.unwrap();
    assert!(a.output.truncated);
    assert!(g.token_ids.len() <= POSITIONS && g.prompt_len == POSITIONS - 5);
}

#[test]
fn heads_get_an_induction_score() {
    let (_, scores) = tiny().heads("one two one two", &GenerateOptions::default()).unwrap();
    assert_eq!(scores.len(), LAYERS * HEADS);
    assert!(
        scores.iter().all(|s| s.induction.is_some_and(|v| (0.0..=1.0).contains(&v))),
        "{scores:?}"
    );
}

#[test]
fn names_without_the_transformer_prefix_give_the_same_maps() {
    let text = "same maps";
    let (a, b) =
        (tiny().attend(text).unwrap(), load_with(&tensors("")).unwrap().attend(text).unwrap());
    assert_eq!(
        a.attentions.iter().map(|b| b.probs.clone()).collect::<Vec<_>>(),
        b.attentions.iter().map(|b| b.probs.clone()).collect::<Vec<_>>()
    );
}

#[test]
fn a_linear_shaped_conv1d_or_a_missing_tensor_is_refused_by_name() {
    let mut t = tensors("transformer.");
    let fc = t.iter_mut().find(|(n, ..)| n == "transformer.h.1.mlp.c_fc.weight").unwrap();
    fc.1 = vec![4 * D, D]; // nn.Linear's [out, in], not Conv1D's [in, out]
    let e = load_with(&t).err().expect("a transposed c_fc must not load").to_string();
    assert!(
        e.contains("transformer.h.1.mlp.c_fc.weight")
            && e.contains(&format!("expected [{D}, {}]", 4 * D)),
        "{e}"
    );
    let t: Vec<_> = tensors("transformer.")
        .into_iter()
        .filter(|(n, ..)| n != "transformer.ln_f.bias")
        .collect();
    let e = load_with(&t).err().expect("no ln_f.bias").to_string();
    assert!(e.contains("transformer.ln_f.bias") && e.contains("missing"), "{e}");
}

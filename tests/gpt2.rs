//! The GPT-2 family on a tiny random GPT2LMHeadModel folder built here (Conv1D weights stored
//! `[in, out]`, a byte-level tokenizer.json with every byte a token): what the model says it
//! is, causal maps, KV-cache generation against a full re-run, seeded sampling, the heads'
//! induction scores, both weight-name layouts, and the load's shape checks. Parity with an
//! independent numpy reference is in tests/reference/test_own_models.py.
#![cfg(not(target_arch = "wasm32"))]

use attnviz::attention::{AttentionKind, GenerateOptions, StopReason};
use attnviz::models::{Family, Manifest, Model, PositionKind};
use std::collections::HashMap;

const D: usize = 16;
const HEADS: usize = 4;
const LAYERS: usize = 2;
const POSITIONS: usize = 40;
/// 256 byte tokens, then `<|endoftext|>`.
const VOCAB: usize = 257;
const EOT: u32 = 256;

/// GPT-2's byte → printable character table (bytes_to_unicode).
fn byte_chars() -> Vec<char> {
    let printable = |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let mut n = 0;
    (0u32..256)
        .map(|b| {
            if printable(b) {
                char::from_u32(b).unwrap()
            } else {
                n += 1;
                char::from_u32(255 + n).unwrap()
            }
        })
        .collect()
}

fn tokenizer_json() -> Vec<u8> {
    let vocab: serde_json::Map<String, serde_json::Value> =
        byte_chars().iter().enumerate().map(|(i, c)| (c.to_string(), i.into())).chain([("<|endoftext|>".to_string(), EOT.into())]).collect();
    let byte_level = serde_json::json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true});
    serde_json::to_vec(&serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [{"id": EOT, "content": "<|endoftext|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
        "normalizer": null, "pre_tokenizer": byte_level, "post_processor": byte_level, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "vocab": vocab, "merges": []}
    }))
    .unwrap()
}

fn config_json() -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "model_type": "gpt2", "vocab_size": VOCAB, "n_positions": POSITIONS, "n_embd": D, "n_layer": LAYERS, "n_head": HEADS,
        "n_inner": null, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "bos_token_id": EOT, "eos_token_id": EOT
    }))
    .unwrap()
}

/// Seeded values in [-scale, scale).
fn random(n: usize, seed: &mut u64, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((*seed >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

/// GPT2LMHeadModel's tensors with `prefix` (`transformer.` or none), Conv1D weights `[in, out]`.
fn tensors(prefix: &str) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let mut seed = 2u64;
    let mut t = Vec::new();
    let mut add = |name: String, shape: Vec<usize>, scale: f32, offset: f32, seed: &mut u64| {
        let data = random(shape.iter().product(), seed, scale).into_iter().map(|v| v + offset).collect();
        t.push((format!("{prefix}{name}"), shape, data));
    };
    add("wte.weight".into(), vec![VOCAB, D], 1.0, 0.0, &mut seed);
    add("wpe.weight".into(), vec![POSITIONS, D], 0.5, 0.0, &mut seed);
    for i in 0..LAYERS {
        for ln in ["ln_1", "ln_2"] {
            add(format!("h.{i}.{ln}.weight"), vec![D], 0.3, 1.0, &mut seed);
            add(format!("h.{i}.{ln}.bias"), vec![D], 0.2, 0.0, &mut seed);
        }
        for (name, inp, out, scale) in [("attn.c_attn", D, 3 * D, 1.0), ("attn.c_proj", D, D, 0.4), ("mlp.c_fc", D, 4 * D, 0.4), ("mlp.c_proj", 4 * D, D, 0.4)] {
            add(format!("h.{i}.{name}.weight"), vec![inp, out], scale, 0.0, &mut seed);
            add(format!("h.{i}.{name}.bias"), vec![out], 0.2, 0.0, &mut seed);
        }
    }
    add("ln_f.weight".into(), vec![D], 0.3, 1.0, &mut seed);
    add("ln_f.bias".into(), vec![D], 0.2, 0.0, &mut seed);
    t
}

fn safetensors(tensors: &[(String, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
    let (mut header, mut data) = (serde_json::Map::new(), Vec::new());
    for (name, shape, values) in tensors {
        let start = data.len();
        values.iter().for_each(|v| data.extend_from_slice(&v.to_le_bytes()));
        header.insert(name.clone(), serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}));
    }
    let head = serde_json::to_vec(&header).unwrap();
    let mut out = (head.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&head);
    out.extend_from_slice(&data);
    out
}

fn load_with(tensors: &[(String, Vec<usize>, Vec<f32>)]) -> attnviz::Result<Model> {
    let names: Vec<String> = ["config.json", "model.safetensors", "tokenizer.json"].map(String::from).to_vec();
    let config = config_json();
    let manifest = Manifest::infer("tiny-gpt2", &names, Some(&config))?;
    let files = HashMap::from([("config.json".to_string(), config), ("model.safetensors".to_string(), safetensors(tensors)), ("tokenizer.json".to_string(), tokenizer_json())]);
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
    assert_eq!((info.layers[&AttentionKind::DecoderSelf], info.heads[&AttentionKind::DecoderSelf], info.kv_heads[&AttentionKind::DecoderSelf]), (LAYERS, HEADS, HEADS));
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
        assert_eq!((b.kind, b.heads, b.query_len, b.key_len), (AttentionKind::DecoderSelf, HEADS, t, t));
        for h in 0..HEADS {
            for q in 0..t {
                let row = b.row(h, q);
                assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
                assert!(row[q + 1..].iter().all(|&p| p == 0.0), "layer {} head {h}: query {q} sees the future", b.layer);
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
    let Family::Gpt2(gpt2) = &m.family else { panic!("not a gpt2") };
    let full = gpt2.attend_ids(&g.token_ids).unwrap();
    for (got, want) in a.attentions.iter().zip(&full) {
        assert_eq!((got.query_len, got.key_len), (want.query_len, want.key_len));
        let worst = got.probs.iter().zip(&want.probs).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        assert!(worst < 1e-5, "layer {}: KV cache differs from a full run by {worst}", got.layer);
    }
}

#[test]
fn sampling_is_seeded_and_the_context_is_bounded() {
    let m = tiny();
    let sampled = |seed| GenerateOptions { max_new_tokens: 8, temperature: 1.5, top_k: 50, seed };
    let ids = |o: &GenerateOptions| m.attend_generating("abc", o).unwrap().output.generation.unwrap().token_ids;
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
    assert!(scores.iter().all(|s| s.induction.is_some_and(|v| (0.0..=1.0).contains(&v))), "{scores:?}");
}

#[test]
fn names_without_the_transformer_prefix_give_the_same_maps() {
    let text = "same maps";
    let (a, b) = (tiny().attend(text).unwrap(), load_with(&tensors("")).unwrap().attend(text).unwrap());
    assert_eq!(a.attentions.iter().map(|b| b.probs.clone()).collect::<Vec<_>>(), b.attentions.iter().map(|b| b.probs.clone()).collect::<Vec<_>>());
}

#[test]
fn a_linear_shaped_conv1d_or_a_missing_tensor_is_refused_by_name() {
    let mut t = tensors("transformer.");
    let fc = t.iter_mut().find(|(n, ..)| n == "transformer.h.1.mlp.c_fc.weight").unwrap();
    fc.1 = vec![4 * D, D]; // nn.Linear's [out, in], not Conv1D's [in, out]
    let e = load_with(&t).err().expect("a transposed c_fc must not load").to_string();
    assert!(e.contains("transformer.h.1.mlp.c_fc.weight") && e.contains(&format!("expected [{D}, {}]", 4 * D)), "{e}");
    let t: Vec<_> = tensors("transformer.").into_iter().filter(|(n, ..)| n != "transformer.ln_f.bias").collect();
    let e = load_with(&t).err().expect("no ln_f.bias").to_string();
    assert!(e.contains("transformer.ln_f.bias") && e.contains("missing"), "{e}");
}

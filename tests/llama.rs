//! The Llama family on the real SmolLM2-135M-Instruct GGUF (fetched by `make models`): causal
//! structure, KV-cache generation against a full re-run, the step view's mask, GQA, sampling,
//! and the same model loaded from a Hugging Face folder. Parity with an independent float
//! reference is in tests/reference/test_llama_parity.py.
#![cfg(not(target_arch = "wasm32"))]

use attnviz::models::inspect::{inspect, FileHead};
use attnviz::models::{Asks, Manifest, Model};
use attnviz::nn::attention::kv_caches_allocated;
use attnviz::nn::probe::{KeepMaps, Site};
use attnviz::result::{
    AttentionBlock, AttentionKind, GenerateOptions, HeadRequest, Sampling, StopReason,
};
use attnviz::weights::gguf;
use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

fn smollm2() -> &'static Model {
    static M: OnceLock<Model> = OnceLock::new();
    M.get_or_init(|| {
        Model::load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("models/smollm2"))
            .unwrap_or_else(|e| panic!("{e} — run `make models` first"))
    })
}

fn greedy(n: usize) -> GenerateOptions {
    GenerateOptions { max_new_tokens: n, ..GenerateOptions::default() }
}

#[test]
fn info_describes_a_causal_gqa_decoder() {
    let info = smollm2().info();
    assert_eq!(info.architecture, "llama");
    assert_eq!(info.kinds, vec![AttentionKind::DecoderSelf]);
    assert_eq!(
        (
            info.layers[&AttentionKind::DecoderSelf],
            info.heads[&AttentionKind::DecoderSelf],
            info.kv_heads[&AttentionKind::DecoderSelf]
        ),
        (30, 9, 3)
    );
    assert_eq!((info.head_dim, info.max_positions), (64, 512));
    assert!(info.generates);
    assert!(info.special_tokens.contains(&"<|im_end|>".to_string()), "{:?}", info.special_tokens);
}

#[test]
fn prompt_maps_are_causal_and_rows_sum_to_one() {
    let a = smollm2().attend("The capital of France is").unwrap();
    assert_eq!(a.output.source_tokens, ["The", "Ġcapital", "Ġof", "ĠFrance", "Ġis"]);
    assert!(
        a.output.target_tokens.is_empty()
            && a.output.output_text.is_none()
            && a.output.stop_reason.is_none()
    );
    let g = a.output.generation.as_ref().unwrap();
    assert_eq!((g.prompt_len, g.token_ids.len(), g.steps.len(), g.next.len()), (5, 5, 0, 5));
    assert_eq!(a.attentions.len(), 30);
    for b in &a.attentions {
        assert_eq!(
            (b.kind, b.heads, b.query_len, b.key_len),
            (AttentionKind::DecoderSelf, 9, 5, 5)
        );
        for h in 0..9 {
            for q in 0..5 {
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
    // The first token takes no attention from itself alone but is the sink: averaged over the
    // later layers and heads, most of the last query's mass lands on it.
    let sink: f32 =
        a.attentions[10..].iter().flat_map(|b| (0..9).map(move |h| b.row(h, 4)[0])).sum::<f32>()
            / (20.0 * 9.0);
    assert!(sink > 0.5, "mean attention on the first token {sink}");
}

#[test]
fn greedy_continuation_names_paris_and_kv_cache_equals_full_rerun() {
    let m = smollm2();
    let a = m.attend_generating("The capital of France is", &greedy(8)).unwrap();
    let g = a.output.generation.as_ref().unwrap();
    assert_eq!(a.output.target_tokens.first().map(String::as_str), Some("ĠParis"));
    assert!(a.output.output_text.as_deref().unwrap().starts_with(" Paris"));
    // The continuation's words go on from the prompt's: " Paris" is word 5, "." word 6.
    assert_eq!(a.output.source_word_ids.last(), Some(&Some(4)));
    assert_eq!(&a.output.target_word_ids[..2], &[Some(5), Some(6)]);
    assert_eq!(
        (g.steps.len(), g.token_ids.len(), a.output.stop_reason),
        (8, 13, Some(StopReason::MaxLength))
    );
    for (i, s) in g.steps.iter().enumerate() {
        assert_eq!((s.position, s.id), (4 + i, g.token_ids[5 + i]));
        // Greedy: the chosen token is the most probable one, and probabilities are sorted.
        assert_eq!(s.top[0].id, s.id);
        assert!(s.top.windows(2).all(|w| w[0].p >= w[1].p));
    }
    let full = m.attend_ids(&g.token_ids).unwrap();
    let mut worst = 0.0f32;
    for (cached, whole) in a.attentions.iter().zip(&full) {
        assert_eq!((cached.query_len, cached.key_len), (13, 13));
        for (x, y) in cached.probs.iter().zip(&whole.probs) {
            worst = worst.max((x - y).abs());
        }
    }
    assert!(worst <= 1e-5, "KV-cache maps differ from a full re-run by {worst}");
}

#[test]
fn generation_allocates_its_kv_cache_once_whatever_the_number_of_tokens() {
    // One cache per layer per forward, preallocated for every position and written in place
    // (tested in nn::attention: its buffers never move): 1 or 24 generated tokens allocate
    // the same, and no step copies the cache.
    let m = smollm2();
    let layers = m.info().layers[&AttentionKind::DecoderSelf];
    let allocated = |n: usize| {
        m.forget_previous_forward(); // or the second forward would reuse the first's cache
        let before = kv_caches_allocated();
        let a = m
            .attend_generating(
                "Once upon a time, in a small village by the sea, there lived",
                &greedy(n),
            )
            .unwrap();
        assert_eq!(a.output.generation.unwrap().steps.len(), n);
        kv_caches_allocated() - before
    };
    assert_eq!((allocated(1), allocated(24)), (layers, layers));
}

/// The largest difference between two lists of blocks laid out alike.
fn worst_difference(a: &[AttentionBlock], b: &[AttentionBlock]) -> f32 {
    assert_eq!(a.len(), b.len());
    let mut worst = 0.0f32;
    for (x, y) in a.iter().zip(b) {
        assert_eq!(
            (x.kind, x.layer, x.query_len, x.key_len),
            (y.kind, y.layer, y.query_len, y.key_len)
        );
        worst = x.probs.iter().zip(&y.probs).map(|(p, q)| (p - q).abs()).fold(worst, f32::max);
    }
    worst
}

#[test]
fn a_text_sharing_its_first_tokens_with_the_last_computes_only_the_rest_and_equals_a_fresh_forward()
{
    // Typing, deleting and editing in the middle, as the page asks while the user types: each
    // forward starts from the previous one's KV cache and rows where their tokens agree, and
    // must give what a forward from position 0 gives.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/smollm2");
    let (live, fresh) = (Model::load_dir(&path).unwrap(), smollm2());
    let layers = live.info().layers[&AttentionKind::DecoderSelf];
    let request = HeadRequest { kind: AttentionKind::DecoderSelf, layer: 2, head: 4 };
    let steps: [(&str, usize, bool); 9] = [
        ("The cat sat", 0, true),
        ("The cat sat on the", 0, true), // typed at the end
        ("The cat sat on the mat", 0, true),
        ("The cat sat on", 0, true),      // deleted at the end
        ("The dog sat on", 0, true),      // edited in the middle
        ("The dog sat on", 0, true),      // unchanged
        ("The dog sat on the", 4, true),  // with Generate: the continuation is cached too
        ("The dog sat on the", 6, false), // a longer continuation of the same prompt
        ("The dog sat on the rug", 3, false),
    ];
    for (i, (text, generate, trace)) in steps.into_iter().enumerate() {
        let options = greedy(generate);
        let head = trace.then_some(request);
        let before = kv_caches_allocated();
        let (a, inside) = live.attend_tracing(text, &options, true, head).unwrap();
        let allocated = kv_caches_allocated() - before;
        // A text after one recorded alike starts where they differ: no new cache (the first
        // allocates the forward's, and the induction probe's on a model's first forward; one
        // that records another head starts from position 0).
        if i > 0 && steps[i - 1].2 == trace {
            assert_eq!(allocated, 0, "{text}: caches allocated");
        } else {
            assert!(allocated >= layers);
        }
        fresh.forget_previous_forward();
        let (b, whole) = fresh.attend_tracing(text, &options, true, head).unwrap();
        assert_eq!(a.output.source_tokens, b.output.source_tokens, "{text}");
        let (ga, gb) = (a.output.generation.unwrap(), b.output.generation.unwrap());
        assert_eq!(ga.token_ids, gb.token_ids, "{text}: the same continuation");
        let next = ga.next.iter().zip(&gb.next).map(|(x, y)| (x.p - y.p).abs()).fold(0.0, f32::max);
        assert!(next <= 1e-5, "{text}: next-token probabilities differ by {next}");
        for s in ga.steps.iter().zip(&gb.steps) {
            let worst =
                s.0.top.iter().zip(&s.1.top).map(|(x, y)| (x.p - y.p).abs()).fold(0.0, f32::max);
            assert!(worst <= 1e-5, "{text}: a step's candidates differ by {worst}");
        }
        let maps = worst_difference(&a.attentions, &b.attentions);
        assert!(maps <= 1e-5, "{text}: maps differ from a fresh forward by {maps}");
        let norms = worst_difference(&a.value_norms.unwrap(), &b.value_norms.unwrap());
        assert!(norms <= 1e-4, "{text}: value norms differ by {norms}");
        if let Some(x) = &inside {
            // The traced head's rows, generated ones included, are its map's rows.
            let block = a.attentions.iter().find(|b| b.layer == request.layer).unwrap();
            assert_eq!((x.trace.query_len, x.trace.key_len), (block.query_len, block.key_len));
            for q in 0..block.query_len {
                let row = &x.trace.probs[q * block.key_len..(q + 1) * block.key_len];
                let worst = row
                    .iter()
                    .zip(block.row(request.head, q))
                    .map(|(p, m)| (p - m).abs())
                    .fold(0.0, f32::max);
                assert!(
                    worst <= 1e-5,
                    "{text}: the step view's row {q} differs from the map by {worst}"
                );
            }
        }
        if let (Some(x), Some(y)) = (inside, whole) {
            assert_eq!((x.trace.query_len, x.trace.key_len), (y.trace.query_len, y.trace.key_len));
            for (u, v) in [
                (&x.trace.q, &y.trace.q),
                (&x.trace.k, &y.trace.k),
                (&x.trace.probs, &y.trace.probs),
                (&x.trace.mask, &y.trace.mask),
                // Every score, a masked key's too (the step view shows them): relative to its size.
                (&x.trace.scores, &y.trace.scores),
                (&x.trace.scaled, &y.trace.scaled),
                (&x.block.normed, &y.block.normed),
            ] {
                assert_eq!(u.len(), v.len(), "{text}");
                let worst = u
                    .iter()
                    .zip(v)
                    .map(|(p, q)| (p - q).abs() / q.abs().max(1.0))
                    .fold(0.0, f32::max);
                assert!(worst <= 1e-4, "{text}: the step view's head differs by {worst}");
            }
        }
    }
}

#[test]
fn generation_stops_at_end_of_text_and_sampling_follows_the_seed() {
    let m = smollm2();
    // The instruct model ends its answer with <|im_end|> (EOS).
    let chat = "<|im_start|>user\nSay OK.<|im_end|>\n<|im_start|>assistant\n";
    let a = m.attend_generating(chat, &greedy(40)).unwrap();
    assert_eq!(
        a.output.source_tokens[0], "<|im_start|>",
        "control tokens typed in the text are matched whole"
    );
    assert_eq!(a.output.stop_reason, Some(StopReason::Eos), "{:?}", a.output.target_tokens);
    assert_eq!(a.output.target_tokens.last().map(String::as_str), Some("<|im_end|>"));
    assert!(
        !a.output.output_text.unwrap().contains("<|im_end|>"),
        "special tokens are left out of the decoded text"
    );
    let sample = |seed| GenerateOptions {
        max_new_tokens: 6,
        sampling: Sampling { temperature: 1.5, top_k: 50, seed },
    };
    let ids = |o: &GenerateOptions| {
        m.attend_generating("Once upon a time", o).unwrap().output.generation.unwrap().token_ids
    };
    assert_eq!(ids(&sample(7)), ids(&sample(7)));
    assert!(
        (1..6).any(|s| ids(&sample(s)) != ids(&sample(0))),
        "different seeds always gave the same sample"
    );
}

#[test]
fn step_view_masks_the_future_and_matches_the_maps() {
    let m = smollm2();
    let request = HeadRequest { kind: AttentionKind::DecoderSelf, layer: 3, head: 7 };
    let hi = m.head_internals_generating("The capital of France is", &greedy(3), request).unwrap();
    let t = &hi.trace;
    assert_eq!((t.query_len, t.key_len, t.d_k, hi.query_tokens.len()), (8, 8, 64, 8));
    let a = m.attend_generating("The capital of France is", &greedy(3)).unwrap();
    let block = &a.attentions[3];
    for q in 0..8 {
        for k in 0..8 {
            assert_eq!(t.mask[q * 8 + k], if k > q { 0.0 } else { 1.0 });
            assert!((t.probs[q * 8 + k] - block.row(7, q)[k]).abs() <= 1e-5);
        }
    }
    // Heads 6, 7, 8 share KV head 2: the traced head's K is that KV head's rotated keys.
    let other = m
        .head_internals_generating(
            "The capital of France is",
            &greedy(3),
            HeadRequest { head: 6, ..request },
        )
        .unwrap();
    assert_eq!(other.trace.k, t.k);
    assert_eq!(other.trace.v, t.v);
    assert_ne!(other.trace.q, t.q);
    assert_eq!(hi.block.norm, attnviz::result::BlockNorm::PreRmsNorm);
}

#[test]
fn one_forward_gives_the_maps_the_induction_scores_and_a_heads_step() {
    let m = smollm2();
    let text = "The capital of France is";
    let request = HeadRequest { kind: AttentionKind::DecoderSelf, layer: 3, head: 7 };
    for generate in [GenerateOptions::default(), greedy(3)] {
        let (a, inside) = m.attend_tracing(text, &generate, false, Some(request)).unwrap();
        let inside = inside.unwrap();
        let alone = m.attend_generating(text, &generate).unwrap();
        assert_eq!(
            a.output.generation.as_ref().map(|g| &g.token_ids),
            alone.output.generation.as_ref().map(|g| &g.token_ids)
        );
        for (x, y) in a.attentions.iter().zip(&alone.attentions) {
            assert_eq!((x.query_len, x.key_len), (y.query_len, y.key_len));
            let worst =
                x.probs.iter().zip(&y.probs).map(|(p, q)| (p - q).abs()).fold(0.0, f32::max);
            assert!(worst <= 1e-5, "layer {}: {worst}", x.layer);
        }
        let step = m.head_internals_generating(text, &generate, request).unwrap();
        assert_eq!(
            (&inside.trace.q, &inside.trace.k, &inside.trace.probs),
            (&step.trace.q, &step.trace.k, &step.trace.probs)
        );
        // Every forward's scores carry the induction score, probed once per model.
        assert_eq!(a.induction_tokens, Some(attnviz::models::INDUCTION_TOKENS));
        assert!(a.scores.iter().all(|s| s.induction.is_some()));
        assert_eq!(a.scores.len(), 30 * 9);
    }
}

#[test]
fn errors_are_values() {
    let m = smollm2();
    assert!(m.attend("").is_err());
    let long = "word ".repeat(2000);
    // As the page runs a long text: the maps of one layer kept (all 30 would be 283 MB).
    let one_layer = || Asks {
        keep_maps: KeepMaps::Within {
            bytes: 0,
            sites: vec![Site { kind: AttentionKind::DecoderSelf, layer: 0 }],
        },
        ..Asks::default()
    };
    let a = m.attend_asking(&long, &greedy(0), one_layer()).unwrap().0;
    assert!(a.output.truncated);
    assert_eq!(a.output.source_tokens.len(), 512);
    assert_eq!((a.attentions.len(), a.stats.len(), a.scores.len()), (1, 30, 30 * 9));
    // Asked for 4 tokens, a long prompt leaves room for them.
    let a = m.attend_asking(&long, &greedy(4), one_layer()).unwrap().0;
    assert!(a.output.truncated);
    assert_eq!(
        (a.output.source_tokens.len(), a.output.target_tokens.len(), a.output.stop_reason),
        (508, 4, Some(StopReason::MaxLength))
    );
    assert!(m
        .head_internals("hi", HeadRequest { kind: AttentionKind::Cross, layer: 0, head: 0 })
        .is_err());
    assert!(m
        .head_internals("hi", HeadRequest { kind: AttentionKind::DecoderSelf, layer: 30, head: 0 })
        .is_err());
}

/// llama.cpp's converter reorders each head's q/k rows so rotated pairs are adjacent; a
/// Hugging Face checkpoint pairs dimension i with i + d/2. Row `2i + s` of a GGUF head is row
/// `s·d/2 + i` of the Hugging Face head.
fn unpermute(rows: Vec<f32>, heads: usize, d_k: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; rows.len()];
    for h in 0..heads {
        for i in 0..d_k / 2 {
            for s in 0..2 {
                let (from, to) = (h * d_k + 2 * i + s, h * d_k + s * d_k / 2 + i);
                out[to * cols..(to + 1) * cols]
                    .copy_from_slice(&rows[from * cols..(from + 1) * cols]);
            }
        }
    }
    out
}

#[test]
fn a_hugging_face_folder_of_the_same_weights_gives_the_same_attention() {
    // The first two layers of SmolLM2, written as a Hugging Face llama folder (f32 safetensors,
    // rotate_half layout, tokenizer.json): its maps equal the GGUF model's first two layers.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/smollm2");
    let g = gguf::read(
        std::fs::read(dir.join("SmolLM2-135M-Instruct.Q4_1.gguf")).unwrap(),
        "smollm2.gguf",
    )
    .unwrap();
    let dense = |name: &str| {
        let t = &g.tensors[name];
        let (cols, rows) = (t.dims[0], t.dims.get(1).copied().unwrap_or(1));
        if t.dims.len() == 1 {
            return (g.vector(name, cols).unwrap(), vec![1, cols], 1);
        }
        let m = g.matrix(name, rows, cols).unwrap();
        let mut out = vec![0.0f32; rows * cols];
        out.chunks_exact_mut(cols).enumerate().for_each(|(r, row)| m.dequantize_row(r, row));
        (out, vec![rows, cols], t.dims.len())
    };
    let mut tensors: Vec<(String, Vec<f32>, Vec<usize>)> = Vec::new();
    let mut put = |hf: &str, gg: &str, permute: Option<usize>| {
        let (data, shape, n) = dense(gg);
        let shape = if n == 1 { vec![shape[1]] } else { shape };
        let data = match permute {
            Some(heads) => unpermute(data, heads, 64, 576),
            None => data,
        };
        tensors.push((hf.to_string(), data, shape));
    };
    put("model.embed_tokens.weight", "token_embd.weight", None);
    put("model.norm.weight", "output_norm.weight", None);
    for l in 0..2 {
        let (h, b) = (format!("model.layers.{l}"), format!("blk.{l}"));
        for (hf, gg, permute) in [
            ("self_attn.q_proj", "attn_q", Some(9)),
            ("self_attn.k_proj", "attn_k", Some(3)),
            ("self_attn.v_proj", "attn_v", None),
            ("self_attn.o_proj", "attn_output", None),
            ("mlp.gate_proj", "ffn_gate", None),
            ("mlp.up_proj", "ffn_up", None),
            ("mlp.down_proj", "ffn_down", None),
            ("input_layernorm", "attn_norm", None),
            ("post_attention_layernorm", "ffn_norm", None),
        ] {
            put(&format!("{h}.{hf}.weight"), &format!("{b}.{gg}.weight"), permute);
        }
    }
    let bytes: Vec<(String, Vec<u8>, Vec<usize>)> = tensors
        .into_iter()
        .map(|(n, d, s)| (n, d.iter().flat_map(|v| v.to_le_bytes()).collect(), s))
        .collect();
    let views = bytes.iter().map(|(n, d, s)| {
        (
            n.clone(),
            safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), d).unwrap(),
        )
    });
    let weights = safetensors::serialize(views, None).unwrap();
    let config = serde_json::json!({
        "model_type": "llama", "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 2,
        "num_attention_heads": 9, "num_key_value_heads": 3, "vocab_size": 49152, "rms_norm_eps": 1e-5,
        "rope_theta": 100000.0, "max_position_embeddings": 8192, "tie_word_embeddings": true, "hidden_act": "silu",
        "eos_token_id": 2, "bos_token_id": 1
    });
    let mut files = HashMap::new();
    files.insert("config.json".to_string(), config.to_string().into_bytes());
    files.insert("model.safetensors".to_string(), weights);
    files.insert(
        "tokenizer.json".to_string(),
        smollm2().tokenizer().to_json().unwrap().into_bytes(),
    );
    let names: Vec<String> = files.keys().cloned().collect();
    let manifest =
        Manifest::infer("smollm2-hf", &names, files.get("config.json").map(|v| v.as_slice()))
            .unwrap();
    assert_eq!(manifest.architecture, "llama");
    // What the page reads first: the folder's headers.
    let heads: Vec<FileHead> =
        files.iter().map(|(n, b)| FileHead { name: n, size: b.len() as u64, head: b }).collect();
    let i = inspect("smollm2-hf", &heads).unwrap();
    assert_eq!(
        (i.architecture.as_str(), i.format.as_str(), i.layers, i.heads, i.kv_heads, i.hidden_size),
        ("llama", "safetensors F32", 2, 9, 3, 576)
    );
    let hf = Model::load_owned(manifest, files).unwrap();
    let text = "Ich möchte café crème — naïve façade, 2024 🎉";
    let (a, b) = (hf.attend(text).unwrap(), smollm2().attend(text).unwrap());
    assert_eq!(a.output.source_tokens, b.output.source_tokens);
    assert_eq!(a.attentions.len(), 2);
    let worst = a
        .attentions
        .iter()
        .zip(&b.attentions)
        .flat_map(|(x, y)| x.probs.iter().zip(&y.probs).map(|(p, q)| (p - q).abs()))
        .fold(0.0f32, f32::max);
    assert!(worst <= 1e-5, "HF folder vs GGUF: attention differs by {worst}");
}

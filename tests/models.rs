//! Native tests against the real default models (fetched by `make models` into models/).
//! Published numbers: sentence-transformers' README for all-MiniLM-L6-v2; the translations are
//! the raw greedy outputs of the Bergamot en→pt tiny model (see shared notes).

use attnviz::models::Model;
use attnviz::result::{Attended, AttentionKind, HeadRequest};
use std::path::Path;
use std::sync::OnceLock;

fn model(dir: &str) -> &'static Model {
    static MINILM: OnceLock<Model> = OnceLock::new();
    static EN_PT: OnceLock<Model> = OnceLock::new();
    let cell = match dir {
        "minilm" => &MINILM,
        "en-pt" => &EN_PT,
        _ => unreachable!(),
    };
    cell.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("models").join(dir);
        Model::load_dir(&path).unwrap_or_else(|e| panic!("{e} — run `make models` first"))
    })
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>()
}

fn assert_well_formed(a: &Attended) {
    for b in &a.attentions {
        let (queries, keys) = a.output.tokens_of(b.kind);
        let (tq, tk) = (queries.len(), keys.len());
        assert_eq!((b.query_len, b.key_len), (tq, tk), "{:?} layer {}", b.kind, b.layer);
        assert_eq!(b.probs.len(), b.heads * tq * tk);
        for h in 0..b.heads {
            for q in 0..tq {
                let s: f32 = b.row(h, q).iter().sum();
                assert!(
                    (s - 1.0).abs() < 1e-5,
                    "{:?} l{} h{h} q{q}: row sums to {s}",
                    b.kind,
                    b.layer
                );
                assert!(b.row(h, q).iter().all(|p| (0.0..=1.0).contains(p)));
            }
        }
    }
}

#[test]
fn minilm_reproduces_published_similarities() {
    let m = model("minilm");
    let e: Vec<Vec<f32>> =
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
            .iter()
            .map(|t| m.attend(t).unwrap().output.sentence_embedding.unwrap())
            .collect();
    let sims = [cosine(&e[0], &e[1]), cosine(&e[0], &e[2]), cosine(&e[1], &e[2])];
    for (got, want) in sims.iter().zip([0.6660f32, 0.1046, 0.1411]) {
        assert!((got - want).abs() < 5e-5, "similarity {got:.5} vs published {want}");
    }
}

#[test]
fn minilm_attention_is_well_formed() {
    let out = model("minilm")
        .attend("Attention visualisers should handle naïve café text, 日本語 and emoji 🎉.")
        .unwrap();
    assert_eq!(out.attentions.len(), 6);
    assert!(out.attentions.iter().all(|b| b.kind == AttentionKind::EncoderSelf && b.heads == 12));
    assert_eq!(out.output.source_tokens.first().map(String::as_str), Some("[CLS]"));
    assert_eq!(out.output.source_tokens.last().map(String::as_str), Some("[SEP]"));
    assert_well_formed(&out);
}

#[test]
fn translator_reproduces_reference_translations() {
    let m = model("en-pt");
    for (src, want, pieces) in [
        (
            "How are you today?",
            "Como você está hoje?",
            &["▁How", "▁are", "▁you", "▁today", "?", "</s>"][..],
        ),
        (
            "The cat sat on the mat.",
            "O gato sentou-se no tapete.",
            &["▁The", "▁cat", "▁sat", "▁on", "▁the", "▁mat", ".", "</s>"][..],
        ),
    ] {
        let out = m.attend(src).unwrap();
        assert_eq!(out.output.output_text.as_deref(), Some(want));
        assert_eq!(out.output.source_tokens, pieces);
        assert_eq!(out.output.target_tokens.last().map(String::as_str), Some("</s>"));
        assert_well_formed(&out);
        let cross: Vec<_> =
            out.attentions.iter().filter(|b| b.kind == AttentionKind::Cross).collect();
        assert_eq!(cross.len(), 2);
        assert!(cross.iter().all(|b| b.query_len == out.output.target_tokens.len()));
    }
}

#[test]
fn cross_attention_aligns_words() {
    // "cat" → "gato": summed over heads of the last decoder layer, the target piece "▁gato"
    // attends to "▁cat" more than to any other source token.
    let out = model("en-pt").attend("The cat sat on the mat.").unwrap();
    let block = out.attentions.iter().rfind(|b| b.kind == AttentionKind::Cross).unwrap();
    let t = out.output.target_tokens.iter().position(|t| t == "▁gato").expect("gato in output");
    let mut sums = vec![0.0f32; block.key_len];
    for h in 0..block.heads {
        for (s, p) in sums.iter_mut().zip(block.row(h, t)) {
            *s += p;
        }
    }
    let best = sums.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap().0;
    assert_eq!(out.output.source_tokens[best], "▁cat");
}

/// Heads whose step internals the tests trace: an encoder's, a translator's cross and self.
const TRACED_HEADS: [(&str, AttentionKind, usize, usize); 3] = [
    ("minilm", AttentionKind::EncoderSelf, 2, 5),
    ("en-pt", AttentionKind::Cross, 1, 3),
    ("en-pt", AttentionKind::EncoderSelf, 0, 7),
];

#[test]
fn step_internals_match_the_attention_blocks() {
    for (dir, kind, layer, head) in TRACED_HEADS {
        let m = model(dir);
        let text = "The cat sat on the mat.";
        let full = m.attend(text).unwrap();
        let inside = m.head_internals(text, HeadRequest { kind, layer, head }).unwrap();
        let block = full.attentions.iter().find(|b| b.kind == kind && b.layer == layer).unwrap();
        let t = &inside.trace;
        assert_eq!((t.query_len, t.key_len), (block.query_len, block.key_len));
        for q in 0..t.query_len {
            assert_eq!(&t.probs[q * t.key_len..(q + 1) * t.key_len], block.row(head, q));
        }
        // scaled = scores / √d_k, and output = probs · V.
        let scale = 1.0 / (t.d_k as f32).sqrt();
        assert!(t.scores.iter().zip(&t.scaled).all(|(s, c)| (s * scale - c).abs() < 1e-5));
        for q in 0..t.query_len {
            for c in 0..t.d_k {
                let e: f32 =
                    (0..t.key_len).map(|k| t.probs[q * t.key_len + k] * t.v[k * t.d_k + c]).sum();
                assert!((e - t.output[q * t.d_k + c]).abs() < 1e-4);
            }
        }
        // Keys are the source tokens; queries are the target tokens for cross-attention.
        assert_eq!(inside.key_tokens, full.output.source_tokens);
        assert_eq!(
            &inside.query_tokens,
            if kind == AttentionKind::Cross {
                &full.output.target_tokens
            } else {
                &full.output.source_tokens
            }
        );
    }
}

/// What the step view of one head shows, field by field.
fn same_trace(a: &attnviz::result::HeadInternals, b: &attnviz::result::HeadInternals) -> bool {
    let (x, y) = (&a.trace, &b.trace);
    [(&x.q, &y.q), (&x.k, &y.k), (&x.v, &y.v), (&x.scores, &y.scores), (&x.probs, &y.probs)]
        .iter()
        .chain([(&x.output, &y.output)].iter())
        .all(|(p, q)| p == q)
        && a.query_tokens == b.query_tokens
        && a.key_tokens == b.key_tokens
}

#[test]
fn one_forward_gives_the_maps_the_head_scores_and_a_heads_step() {
    for (dir, kind, layer, head) in TRACED_HEADS {
        let m = model(dir);
        let text = "The cat sat on the mat.";
        let request = HeadRequest { kind, layer, head };
        let generate = Default::default();
        let (a, inside) = m.attend_tracing(text, &generate, false, Some(request)).unwrap();
        let alone = m.attend(text).unwrap();
        assert_eq!(a.attentions.len(), alone.attentions.len());
        for (x, y) in a.attentions.iter().zip(&alone.attentions) {
            assert_eq!((x.kind, x.layer, &x.probs), (y.kind, y.layer, &y.probs), "{dir}");
        }
        assert_eq!(a.scores, alone.scores);
        let heads = m.heads(text, &generate).unwrap().1;
        assert_eq!(a.scores, heads, "{dir}: attend's scores are heads()'s");
        let step = m.head_internals(text, request).unwrap();
        assert!(
            same_trace(&inside.unwrap(), &step),
            "{dir} {kind:?}: the step from attend is step()'s"
        );
        // A head that does not exist is the same error either way.
        let bad = HeadRequest { layer: 99, ..request };
        let (e1, e2) = (
            m.attend_tracing(text, &generate, false, Some(bad)).err().unwrap().to_string(),
            m.head_internals(text, bad).err().unwrap().to_string(),
        );
        assert_eq!(e1, e2);
    }
}

#[test]
fn bad_requests_are_errors() {
    let m = model("minilm");
    let err = m
        .head_internals("hi", HeadRequest { kind: AttentionKind::Cross, layer: 0, head: 0 })
        .unwrap_err();
    assert!(err.to_string().contains("no cross attention"), "{err}");
    assert!(m
        .head_internals("hi", HeadRequest { kind: AttentionKind::EncoderSelf, layer: 6, head: 0 })
        .is_err());
    assert!(m
        .head_internals("hi", HeadRequest { kind: AttentionKind::EncoderSelf, layer: 0, head: 12 })
        .is_err());
}

#[test]
fn empty_and_huge_texts_never_panic() {
    let b = model("minilm").attend("").unwrap();
    assert_eq!(b.output.source_tokens, ["[CLS]", "[SEP]"]);
    assert!(!b.output.truncated);
    let long = "word ".repeat(20_000); // 100 000 characters
    let b = model("minilm").attend(&long).unwrap();
    assert!(b.output.truncated);
    assert_eq!(b.output.source_tokens.len(), 512);
    assert_well_formed(&b);
    let t = model("en-pt").attend("").unwrap();
    assert_eq!(t.output.source_tokens, ["</s>"]);
    let t = model("en-pt").attend(&long).unwrap();
    assert!(t.output.truncated);
    assert_eq!(t.output.source_tokens.len(), 256);
}

#[test]
fn other_bert_checkpoints_load_with_sizes_from_their_files() {
    // A different BertModel (2 layers, 4 heads, hidden 32, `bert.` prefix as in
    // BertForMaskedLM checkpoints) written with the safetensors crate: sizes must come from
    // config.json and the tensors, not from MiniLM's numbers.
    use safetensors::tensor::{Dtype, TensorView};
    let (vocab, d, ffn, layers, heads, positions) =
        (30522usize, 32usize, 64usize, 2usize, 4usize, 40usize);
    let mut shapes: Vec<(String, Vec<usize>)> = vec![
        ("bert.embeddings.word_embeddings.weight".into(), vec![vocab, d]),
        ("bert.embeddings.position_embeddings.weight".into(), vec![positions, d]),
        ("bert.embeddings.token_type_embeddings.weight".into(), vec![2, d]),
        ("bert.embeddings.LayerNorm.weight".into(), vec![d]),
        ("bert.embeddings.LayerNorm.bias".into(), vec![d]),
    ];
    for l in 0..layers {
        let p = format!("bert.encoder.layer.{l}");
        for (name, shape) in [
            ("attention.self.query", vec![d, d]),
            ("attention.self.key", vec![d, d]),
            ("attention.self.value", vec![d, d]),
            ("attention.output.dense", vec![d, d]),
            ("intermediate.dense", vec![ffn, d]),
            ("output.dense", vec![d, ffn]),
        ] {
            shapes.push((format!("{p}.{name}.bias"), vec![shape[0]]));
            shapes.push((format!("{p}.{name}.weight"), shape));
        }
        for ln in ["attention.output.LayerNorm", "output.LayerNorm"] {
            shapes.push((format!("{p}.{ln}.weight"), vec![d]));
            shapes.push((format!("{p}.{ln}.bias"), vec![d]));
        }
    }
    let mut seed = 12345u32;
    let buffers: Vec<Vec<u8>> = shapes
        .iter()
        .map(|(name, shape)| {
            let n: usize = shape.iter().product();
            (0..n)
                .flat_map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    let v = if name.contains("LayerNorm.weight") {
                        1.0
                    } else {
                        (seed % 1000) as f32 / 5000.0 - 0.1
                    };
                    v.to_le_bytes()
                })
                .collect()
        })
        .collect();
    let views: Vec<(String, TensorView)> = shapes
        .iter()
        .zip(&buffers)
        .map(|((n, s), b)| (n.clone(), TensorView::new(Dtype::F32, s.clone(), b).unwrap()))
        .collect();
    let weights = safetensors::serialize(views, None).unwrap();
    let config = format!(
        r#"{{"model_type":"bert","vocab_size":{vocab},"hidden_size":{d},"num_hidden_layers":{layers},"num_attention_heads":{heads},"intermediate_size":{ffn},"max_position_embeddings":{positions}}}"#
    );

    let dir = std::env::temp_dir().join(format!("attnviz-small-bert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), config).unwrap();
    std::fs::write(dir.join("model.safetensors"), weights).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models/minilm/tokenizer.json"),
        dir.join("tokenizer.json"),
    )
    .unwrap();
    // No manifest.json: the folder is recognised from config.json, as a user's own folder is.
    let m = Model::load_dir(&dir).unwrap();
    let out = m.attend(&"a sentence long enough to be cut at forty positions. ".repeat(5)).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.output.truncated);
    assert_eq!(out.output.source_tokens.len(), positions);
    assert_eq!(out.attentions.len(), layers);
    assert!(out.attentions.iter().all(|b| b.heads == heads && b.query_len == positions));
    assert_eq!(out.output.sentence_embedding.as_ref().map(Vec::len), Some(d));
    assert_well_formed(&out);
}

#[test]
fn position_tables_are_what_the_models_add() {
    use attnviz::models::PositionKind;
    // BERT: the rows of the safetensors tensor itself, read here with the safetensors crate.
    let t = model("minilm").positions(40);
    assert_eq!(
        (t.kind, t.positions, t.dims, t.data.len()),
        (PositionKind::Learned, 40, 384, 40 * 384)
    );
    let bytes = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models/minilm/model.safetensors"),
    )
    .unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let name =
        ["embeddings.position_embeddings.weight", "bert.embeddings.position_embeddings.weight"]
            .into_iter()
            .find(|n| st.tensor(n).is_ok())
            .unwrap();
    let tensor = st.tensor(name).unwrap();
    assert_eq!(tensor.dtype(), safetensors::Dtype::F32);
    let want: Vec<f32> = tensor
        .data()
        .chunks_exact(4)
        .take(40 * 384)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(t.data, want);
    // At most max_position_embeddings rows.
    assert_eq!(model("minilm").positions(100_000).positions, 512);

    // The translator: Marian's sinusoid (sin half, then cos half; freq 10000^(−i/(d/2−1))), the
    // formula computed here in f64.
    let t = model("en-pt").positions(128);
    assert_eq!((t.kind, t.positions, t.dims), (PositionKind::Sinusoidal, 128, 256));
    let half = t.dims / 2;
    for pos in 0..t.positions {
        for i in 0..half {
            let angle = pos as f64 * 10000f64.powf(-(i as f64) / (half as f64 - 1.0));
            assert!(
                (t.data[pos * t.dims + i] as f64 - angle.sin()).abs() <= 1e-6,
                "pos {pos} dim {i}"
            );
            assert!(
                (t.data[pos * t.dims + half + i] as f64 - angle.cos()).abs() <= 1e-6,
                "pos {pos} dim {}",
                half + i
            );
        }
    }
}

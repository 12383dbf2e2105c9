//! `make bench` (native part): medians over repeated runs, printed as a table. Timings on a
//! shared 2-core machine drift by ±30 %, so compare rows of one run, never across runs.
//!
//! 1. The GEMM kernel (`tensor::linear`) against nalgebra's own `tr_mul` on the FFN shape of
//!    MiniLM (16 tokens × 384 → 1536), to justify owning the kernel.
//! 2. One forward of each default model on a 16-token sentence.
//! 3. What the score parts view adds to a forward (its traced head's intermediates and their
//!    score parts, src/nn/score_parts.rs): the forward with the maps alone against the same with
//!    a head of the first layer (token/position/bias split) and of a later one traced.
//! 4. SmolLM2's time per generated token through the KV cache: (a 14-token prompt plus 64
//!    generated tokens − the prompt alone) ÷ 64, each a median. `ATTNVIZ_BENCH_ONLY=generate`
//!    runs this row alone (to compare two builds side by side).

use attnviz::models::{Asks, Model};
use attnviz::result::{AttentionKind, GenerateOptions, HeadRequest};
use attnviz::tensor::{linear, linear_quantized, Mat, QuantizedMat};
use std::path::Path;
use std::time::Instant;

fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    f(); // warm-up
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// The median of what `f` measured itself (milliseconds), after one warm-up run.
fn median_of(runs: usize, mut f: impl FnMut() -> f64) -> f64 {
    f();
    let mut t: Vec<f64> = (0..runs).map(|_| f()).collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

fn filled(rows: usize, cols: usize) -> Mat {
    Mat::from_vec(
        rows,
        cols,
        (0..rows * cols).map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5).collect(),
    )
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    if std::env::var("ATTNVIZ_BENCH_ONLY").as_deref() == Ok("generate") {
        generation(&root);
        return;
    }
    let (t, d, ffn) = (16, 384, 1536);
    let x = filled(t, d);
    let w = filled(ffn, d);
    let flops = 2.0 * (t * d * ffn) as f64;
    let ours = median_ms(200, || {
        std::hint::black_box(linear(&x, &w, None));
    });
    // nalgebra orientation: W as (d × ffn) column-major = our [ffn, d]; X as (d × t).
    let (wn, xn) = (w.storage().clone(), x.storage().clone());
    let theirs = median_ms(200, || {
        std::hint::black_box(wn.tr_mul(&xn));
    });
    println!(
        "gemm 16x384x1536   attnviz kernel {ours:8.3} ms ({:5.1} GFLOP/s)   nalgebra tr_mul {theirs:8.3} ms ({:5.1} GFLOP/s)   ratio {:.2}x",
        flops / ours / 1e6,
        flops / theirs / 1e6,
        theirs / ours
    );

    // The translator's per-step output projection: one decoder state against the tied
    // embedding [32000, 256] (32.8 MB of f32: memory-bound).
    let (y, wemb) = (filled(1, 256), filled(32000, 256));
    let logits = median_ms(50, || {
        std::hint::black_box(linear(&y, &wemb, None));
    });
    let wemb_q = QuantizedMat::per_matrix(
        32000,
        256,
        (0..32000 * 256).map(|i| (i % 251) as u8 as i8).collect(),
        0.01,
    );
    let logits_q = median_ms(50, || {
        std::hint::black_box(linear_quantized(&y, &wemb_q, None));
    });
    println!("logits 1x256x32000 f32 weights {logits:8.3} ms   int8 weights {logits_q:8.3} ms   ratio {:.2}x", logits / logits_q);

    // 16 tokens for each model, counting [CLS]/[SEP] and </s>.
    for (dir, text) in [
        ("minilm", "The animal didn't cross the street because it was too tired to walk."),
        ("en-pt", "The animal didn't cross the street because it was too tired to walk."),
    ] {
        let model = match Model::load_dir(&root.join(dir)) {
            Ok(m) => m,
            Err(e) => {
                println!("{dir}: skipped ({e})");
                continue;
            }
        };
        let out = model.attend(text).expect("forward");
        let ms = median_ms(30, || {
            std::hint::black_box(model.attend(text).expect("forward"));
        });
        let tok_ms = median_ms(30, || {
            std::hint::black_box(model.tokenize(text).expect("tokenize"));
        });
        println!("tokenize {dir:<7} median {tok_ms:8.3} ms");
        println!(
            "forward {dir:<7} {:>3} source tokens, {:>3} target tokens   median {ms:8.2} ms",
            out.output.source_tokens.len(),
            out.output.target_tokens.len()
        );
    }
    score_parts(&root);
    logit_lens(&root);
    generation(&root);
}

/// The forward with the maps alone, and with the logit lens (every layer's output through the
/// unembedding): from scratch, and for one token typed at the end of the text (a causal model
/// reuses the rows of the positions it shares with the last text).
fn logit_lens(root: &Path) {
    let text = "The black cat sees a red ball on the table.";
    for dir in ["en-pt", "paper", "smollm2"] {
        let Ok(model) = Model::load_dir(&root.join(dir)) else { continue };
        let options = GenerateOptions::default();
        let time = |lens: bool, typed: bool| {
            median_of(9, || {
                model.forget_previous_forward();
                let asks = Asks { lens, ..Asks::default() };
                if typed {
                    model
                        .attend_asking(&text[..text.len() - 1], &options, asks.clone())
                        .expect("forward");
                    let s = Instant::now();
                    std::hint::black_box(
                        model.attend_asking(text, &options, asks).expect("forward"),
                    );
                    return s.elapsed().as_secs_f64() * 1e3;
                }
                let s = Instant::now();
                std::hint::black_box(model.attend_asking(text, &options, asks).expect("forward"));
                s.elapsed().as_secs_f64() * 1e3
            })
        };
        let (maps, lens) = (time(false, false), time(true, false));
        let (maps_typed, lens_typed) = (time(false, true), time(true, true));
        println!(
            "logit lens  {dir:<7} forward {maps:8.2} ms, with the lens {lens:8.2} ms ({:+.0} %)   one character typed: {maps_typed:8.2} ms, with the lens {lens_typed:8.2} ms ({:+.0} %)",
            100.0 * (lens / maps - 1.0),
            100.0 * (lens_typed / maps_typed - 1.0)
        );
    }
}

/// The forward with the maps alone, and with one head traced (the step, query/key and score
/// parts views' data, the score parts included) in the first layer and in a later one.
fn score_parts(root: &Path) {
    let text = "The animal didn't cross the street because it was too tired to walk.";
    for (dir, kind, later) in [
        ("minilm", AttentionKind::EncoderSelf, 3),
        ("en-pt", AttentionKind::EncoderSelf, 1),
        ("smollm2", AttentionKind::DecoderSelf, 15),
    ] {
        let Ok(model) = Model::load_dir(&root.join(dir)) else { continue };
        let options = GenerateOptions::default();
        // A causal model keeps its last forward: forget it so that every run computes the text.
        let time = |head: Option<HeadRequest>| {
            median_ms(15, || {
                model.forget_previous_forward();
                let (a, hi) = model.attend_tracing(text, &options, false, head).expect("forward");
                assert!(head.is_none() || hi.is_some_and(|hi| hi.score_parts.is_some()));
                std::hint::black_box(a);
            })
        };
        let maps = time(None);
        let first = time(Some(HeadRequest { kind, layer: 0, head: 0 }));
        let deeper = time(Some(HeadRequest { kind, layer: later, head: 0 }));
        println!(
            "score parts {dir:<7} forward {maps:8.2} ms   + a traced head with its parts: layer 1 {first:8.2} ms ({:+.1} %), layer {} {deeper:8.2} ms ({:+.1} %)",
            100.0 * (first / maps - 1.0),
            later + 1,
            100.0 * (deeper / maps - 1.0)
        );
    }
}

/// SmolLM2's per-token generation time: what a KV cache written in place (not copied per
/// step) is for.
fn generation(root: &Path) {
    let model = match Model::load_dir(&root.join("smollm2")) {
        Ok(m) => m,
        Err(e) => {
            println!("smollm2: skipped ({e})");
            return;
        }
    };
    let prompt = "Once upon a time, in a small village by the sea, there lived";
    let new_tokens = 64;
    let run = |n: usize| {
        let options = GenerateOptions { max_new_tokens: n, ..GenerateOptions::default() };
        let out = model.attend_generating(prompt, &options).expect("generate");
        // Greedy: every run generates the same tokens; the bench needs all of them (no end of text).
        assert_eq!(
            out.output.generation.as_ref().map_or(0, |g| g.steps.len()),
            n,
            "generation stopped early"
        );
        std::hint::black_box(out);
    };
    let prompt_ms = median_ms(5, || run(0));
    let total_ms = median_ms(5, || run(new_tokens));
    println!("generate smollm2 prompt median {prompt_ms:8.2} ms   +{new_tokens} tokens median {total_ms:8.2} ms   per token {:6.2} ms", (total_ms - prompt_ms) / new_tokens as f64);
}

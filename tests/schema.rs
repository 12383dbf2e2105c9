//! The CLI's JSON (`attnviz attend`, `attnviz step`, `attnviz positions`) satisfies the checked-in
//! schema/attend.schema.json — the same schema tests/wasm/facade.test.mjs checks the wasm facade's objects
//! against — and reports why decoding stopped.
#![cfg(not(target_arch = "wasm32"))]

use crate::schema_check::Checker;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn cli(args: &[&str]) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // ATTNVIZ_BIN runs another build (as tests/reference does), e.g. to check an older one.
    let bin =
        std::env::var("ATTNVIZ_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_attnviz").to_string());
    let out = Command::new(bin).args(args).current_dir(root).output().expect("run attnviz");
    assert!(
        out.status.success(),
        "attnviz {args:?} exited {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("attnviz {args:?} did not print JSON ({e})"))
}

fn attend(dir: &str, text: &str) -> Value {
    cli(&["attend", "--model", &format!("models/{dir}"), "--text", text])
}

#[test]
fn cli_attend_json_satisfies_the_schema() {
    let checker = Checker::new();
    for (dir, text) in [
        ("minilm", "The cat sat on the mat."),
        ("minilm", ""),
        ("en-pt", "The cat sat on the mat."),
        ("en-pt", "日本語のテキストと emoji 🎉"),
    ] {
        let v = attend(dir, text);
        checker.attend(&v).unwrap_or_else(|e| panic!("{dir} {text:?}: {e}"));
        assert_eq!(v["text"], text);
        assert_eq!(v["generation"], Value::Null);
        if dir == "en-pt" {
            // One list of candidates per target token; greedy: the first is the token chosen.
            let target = v["tokens"]["target"].as_array().unwrap();
            let steps = v["decode_top"].as_array().expect("a translator's decode steps");
            assert_eq!(steps.len(), target.len());
            for (step, chosen) in steps.iter().zip(target) {
                assert_eq!(&step[0]["token"], chosen);
                let p: Vec<f64> =
                    step.as_array().unwrap().iter().map(|c| c["p"].as_f64().unwrap()).collect();
                assert!(p.windows(2).all(|w| w[0] >= w[1]) && p.iter().sum::<f64>() <= 1.0 + 1e-6);
            }
        } else {
            assert_eq!(v["decode_top"], Value::Null);
        }
    }
    // A decoder-only model, with and without a continuation.
    for extra in [
        &[][..],
        &["--generate", "4"][..],
        &["--generate", "3", "--temperature", "0.8", "--top-k", "20", "--seed", "5"][..],
        &["--generate", "2", "--lens"][..],
    ] {
        let mut args =
            vec!["attend", "--model", "models/smollm2", "--text", "The capital of France is"];
        args.extend(extra);
        let v = cli(&args);
        checker.attend(&v).unwrap_or_else(|e| panic!("smollm2 {extra:?}: {e}"));
        assert_eq!(v["decode_top"], Value::Null);
        let g = &v["generation"];
        assert_eq!(g["prompt_len"], 5);
        assert_eq!(
            v["tokens"]["target"].as_array().unwrap().len(),
            g["steps"].as_array().unwrap().len()
        );
        assert_eq!(
            g["sampling"]["method"],
            if extra.contains(&"--temperature") { "sample" } else { "greedy" }
        );
        // The logit lens only when asked: 30 layers over the positions the maps' queries are.
        if extra.contains(&"--lens") {
            let top = v["logit_lens"]["top"].as_array().expect("the logit lens");
            let rows = v["attentions"][0]["query_len"].as_u64().unwrap() as usize;
            assert_eq!((top.len(), top[0].as_array().unwrap().len()), (30, rows));
        } else {
            assert!(v.get("logit_lens").is_none(), "no lens unless asked");
        }
    }
}

#[test]
fn cli_value_norms_mirror_the_attention_blocks() {
    let checker = Checker::new();
    for dir in ["minilm", "en-pt", "smollm2"] {
        let v = cli(&[
            "attend",
            "--model",
            &format!("models/{dir}"),
            "--text",
            "The cat sat on the mat.",
            "--measure",
            "value-norm",
        ]);
        checker.attend(&v).unwrap_or_else(|e| panic!("{dir}: {e}"));
        let (norms, maps) =
            (v["value_norms"].as_array().unwrap(), v["attentions"].as_array().unwrap());
        assert_eq!(norms.len(), maps.len());
        // Zero weight gives zero norm; some norm differs from its weight (it is not a copy).
        let pairs: Vec<(f64, f64)> = norms
            .iter()
            .zip(maps)
            .flat_map(|(n, a)| {
                n["data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .zip(a["data"].as_array().unwrap())
                    .map(|(x, y)| (x.as_f64().unwrap(), y.as_f64().unwrap()))
            })
            .collect();
        assert!(pairs.iter().all(|&(n, a)| a > 0.0 || n == 0.0), "{dir}: a norm without weight");
        assert!(
            pairs.iter().any(|&(n, a)| (n - a).abs() > 1e-3),
            "{dir}: the norms equal the weights"
        );
        assert!(
            attend(dir, "The cat sat on the mat.").get("value_norms").is_none(),
            "{dir}: value norms without being asked"
        );
    }
    let mut broken =
        cli(&["attend", "--model", "models/minilm", "--text", "Hi", "--measure", "value-norm"]);
    broken["value_norms"].as_array_mut().unwrap().pop();
    assert!(checker.attend(&broken).is_err(), "a missing value-norm block passed the check");
}

#[test]
fn cli_heads_json_satisfies_the_schema_and_finds_known_heads() {
    let checker = Checker::new();
    let head = |v: &Value, layer: u64, h: u64| {
        v["heads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["layer"] == layer && s["head"] == h)
            .unwrap()
            .clone()
    };
    // MiniLM layer 0 head 2 attends to the previous token (Clark et al. found such heads in BERT).
    let v = cli(&[
        "heads",
        "--model",
        "models/minilm",
        "--text",
        "The cat sat on the mat, and the dog slept.",
    ]);
    checker.heads(&v).unwrap_or_else(|e| panic!("minilm: {e}"));
    assert_eq!(v["heads"].as_array().unwrap().len(), 72);
    assert_eq!(v["induction_tokens"], Value::Null);
    let prev = head(&v, 0, 2);
    assert_eq!(prev["label"], "previous");
    assert!(prev["previous"].as_f64().unwrap() > 0.9, "{prev}");
    // The translator's cross-attention has no previous/next/self.
    let v = cli(&["heads", "--model", "models/en-pt", "--text", "The cat sat on the mat."]);
    checker.heads(&v).unwrap_or_else(|e| panic!("en-pt: {e}"));
    assert!(v["heads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "cross")
        .all(|s| s["previous"].is_null() && s["self"].is_null()));
    // SmolLM2: most heads are sinks on the first token; some are induction heads.
    let v =
        cli(&["heads", "--model", "models/smollm2", "--text", "The capital of France is Paris."]);
    checker.heads(&v).unwrap_or_else(|e| panic!("smollm2: {e}"));
    let labels: Vec<&str> =
        v["heads"].as_array().unwrap().iter().map(|s| s["label"].as_str().unwrap()).collect();
    assert_eq!(labels.len(), 270);
    assert!(labels.iter().filter(|&&l| l == "sink").count() > 135, "{labels:?}");
    assert!(labels.contains(&"induction"), "{labels:?}");
    assert_eq!(v["induction_tokens"], 20);
}

#[test]
fn the_schema_check_rejects_a_generation_that_does_not_add_up() {
    let checker = Checker::new();
    let good = cli(&["attend", "--model", "models/smollm2", "--text", "Hello", "--generate", "2"]);
    checker.attend(&good).unwrap();
    let breakages: [Breakage; 4] = [
        ("one id short", |v| {
            v["generation"]["token_ids"].as_array_mut().unwrap().pop();
        }),
        ("a step too many", |v| {
            let s = v["generation"]["steps"][0].clone();
            v["generation"]["steps"].as_array_mut().unwrap().push(s);
        }),
        ("an unknown sampling method", |v| v["generation"]["sampling"]["method"] = "beam".into()),
        ("a probability above 1", |v| v["generation"]["next"][0]["p"] = 2.into()),
    ];
    for (what, breakage) in breakages {
        let mut v = good.clone();
        breakage(&mut v);
        assert!(checker.attend(&v).is_err(), "{what} passed the check");
    }
}

#[test]
fn cli_step_json_satisfies_the_schema() {
    let checker = Checker::new();
    let text = "The cat sat on the mat.";
    for (dir, kind, layer, head, q_source, kv_source) in [
        ("minilm", "encoder_self", 2usize, 5usize, "encoder", "encoder"),
        ("en-pt", "cross", 1, 3, "decoder", "encoder"),
        ("smollm2", "decoder_self", 4, 2, "decoder", "decoder"),
    ] {
        let (l, h) = (layer.to_string(), head.to_string());
        let v = cli(&[
            "step",
            "--model",
            &format!("models/{dir}"),
            "--text",
            text,
            "--kind",
            kind,
            "--layer",
            &l,
            "--head",
            &h,
        ]);
        checker.step(&v).unwrap_or_else(|e| panic!("{dir} {kind}: {e}"));
        assert_eq!(
            (v["kind"].as_str(), v["q_source"].as_str(), v["kv_source"].as_str()),
            (Some(kind), Some(q_source), Some(kv_source))
        );
        assert_eq!(
            v["block_norm"],
            if dir == "smollm2" { "pre_rms_norm" } else { "post_layer_norm" }
        );
        // The step view's probabilities are that head's rows of the attend() block.
        let a = attend(dir, text);
        let block = a["attentions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["kind"] == kind && b["layer"] == layer)
            .unwrap();
        let n = v["probs"].as_array().unwrap().len();
        assert_eq!(
            v["probs"].as_array().unwrap()[..],
            block["data"].as_array().unwrap()[head * n..(head + 1) * n]
        );
    }
}

#[test]
fn cli_positions_json_satisfies_the_schema() {
    let checker = Checker::new();
    for (dir, count, kind, positions, dims) in [
        ("minilm", None, "learned", 128, 384),
        // (each model's largest count: a larger one is refused, tests/hardening.rs)
        ("minilm", Some("512"), "learned", 512, 384),
        ("en-pt", Some("7"), "sinusoidal", 7, 256),
        ("smollm2", Some("512"), "rotary", 512, 64),
    ] {
        let mut args = vec!["positions", "--model"];
        let m = format!("models/{dir}");
        args.push(&m);
        if let Some(c) = count {
            args.extend(["--count", c]);
        }
        let v = cli(&args);
        checker.positions(&v).unwrap_or_else(|e| panic!("{dir}: {e}"));
        assert_eq!(
            (v["kind"].as_str(), v["positions"].as_u64(), v["dims"].as_u64()),
            (Some(kind), Some(positions), Some(dims))
        );
        // A computed table says its frequencies: column c's angle at position 1 is θ_c
        // (Marian: sin θ in the first half; rotary: cos θ first, sin θ in the second half).
        if kind == "learned" {
            assert!(v["wave"].is_null(), "{dir}: a learned table has no frequencies");
            continue;
        }
        let freq = v["wave"]["frequencies"].as_array().unwrap();
        assert_eq!(freq.len(), dims as usize);
        let at1 = |c: usize| v["data"][dims as usize + c].as_f64().unwrap();
        for c in [0, 5, dims as usize / 2 - 1] {
            let theta = freq[c].as_f64().unwrap();
            let sin = if kind == "rotary" { at1(dims as usize / 2 + c) } else { at1(c) };
            assert!(
                (sin - theta.sin()).abs() < 1e-6,
                "{dir}: column {c}: sin at position 1 is {sin}, θ {theta}"
            );
        }
    }
    let mut broken = cli(&["positions", "--model", "models/en-pt", "--count", "3"]);
    broken["data"].as_array_mut().unwrap().pop();
    assert!(checker.positions(&broken).is_err(), "a short table passed the check");
}

/// A named change to a valid result.
type Breakage = (&'static str, fn(&mut Value));

#[test]
fn the_schema_check_rejects_what_the_page_could_not_use() {
    // Each change below must fail the check: it can fail, so passing means something.
    let checker = Checker::new();
    let good = attend("en-pt", "How are you today?");
    checker.attend(&good).unwrap();
    let breakages: [Breakage; 9] = [
        ("no stop_reason", |v| {
            v.as_object_mut().unwrap().remove("stop_reason");
        }),
        ("unknown stop_reason", |v| v["stop_reason"] = "tired".into()),
        ("no word_ids", |v| {
            v.as_object_mut().unwrap().remove("word_ids");
        }),
        ("an extra field", |v| v["attend_meta"] = true.into()),
        ("an unknown kind", |v| v["attentions"][0]["kind"] = "self".into()),
        ("a probability above 1", |v| v["attentions"][0]["data"][0] = 1.5.into()),
        ("data as a string", |v| v["attentions"][0]["data"] = "0.1,0.9".into()),
        ("data one value short", |v| {
            v["attentions"][1]["data"].as_array_mut().unwrap().pop();
        }),
        ("a block with the wrong query length", |v| {
            let b = &mut v["attentions"][6];
            b["query_len"] = 1.into();
            b["shape"][1] = 1.into();
            let keep =
                b["key_len"].as_u64().unwrap() as usize * b["heads"].as_u64().unwrap() as usize;
            b["data"].as_array_mut().unwrap().truncate(keep);
        }),
    ];
    for (what, breakage) in breakages {
        let mut v = good.clone();
        breakage(&mut v);
        assert!(checker.attend(&v).is_err(), "{what} passed the check");
    }
}

#[test]
fn cli_reports_why_decoding_stopped() {
    // The translator stops at </s> for a normal sentence and at the length limit when it
    // repeats itself; an encoder has no decoding, so no reason.
    let v = attend("en-pt", "How are you today?");
    assert_eq!(v["stop_reason"], "eos");
    assert_eq!(v["tokens"]["target"].as_array().unwrap().last().unwrap(), "</s>");
    let v = attend("en-pt", MAX_LENGTH_TEXT);
    assert_eq!(v["stop_reason"], "max_length", "{}", v["output_text"]);
    assert_ne!(v["tokens"]["target"].as_array().unwrap().last().unwrap(), "</s>");
    assert_eq!(attend("minilm", "How are you today?")["stop_reason"], Value::Null);
}

/// A text whose greedy translation never produces `</s>` within max(⌈2.5 · T_src⌉, 4) steps.
const MAX_LENGTH_TEXT: &str = "o o o o o o o o o o o o o";

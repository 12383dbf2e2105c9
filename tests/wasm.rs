//! The wasm build in headless Chromium (`make test-wasm`): the `#[wasm_bindgen]` facade with the
//! real default models must give the same numbers as the native build (fixtures written by
//! `target/release/attnviz` before this suite is compiled; see scripts/wasm-fixtures.sh), and
//! bad input must come back as JS errors, never as a panic (which would kill the module).
#![cfg(target_arch = "wasm32")]

#[path = "support/schema.rs"]
mod schema;

use attnviz::wasm::{build_info, AttnModel};
use js_sys::{Array, Float32Array, Object, Reflect, Uint8Array};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

macro_rules! model_file {
    ($dir:literal, $name:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/models/", $dir, "/", $name))
    };
}
macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/target/wasm-fixtures/", $name))
    };
}

const MINILM_MANIFEST: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/models/minilm/manifest.json"));
const EN_PT_MANIFEST: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/models/en-pt/manifest.json"));

fn files(list: &[(&str, &[u8])]) -> Object {
    let obj = Object::new();
    for (name, bytes) in list {
        Reflect::set(&obj, &JsValue::from_str(name), &Uint8Array::from(*bytes)).unwrap();
    }
    obj
}

fn minilm() -> AttnModel {
    let f = files(&[
        ("config.json", model_file!("minilm", "config.json")),
        ("model.safetensors", model_file!("minilm", "model.safetensors")),
        ("tokenizer.json", model_file!("minilm", "tokenizer.json")),
    ]);
    AttnModel::load(MINILM_MANIFEST, &f).unwrap_or_else(|_| panic!("MiniLM did not load"))
}

fn en_pt() -> AttnModel {
    let f = files(&[("model.enpt.intgemm.alphas.bin", model_file!("en-pt", "model.enpt.intgemm.alphas.bin")), ("tokenizer.json", model_file!("en-pt", "tokenizer.json"))]);
    AttnModel::load(EN_PT_MANIFEST, &f).unwrap_or_else(|_| panic!("en-pt did not load"))
}

fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).unwrap()
}

/// Compares a wasm `attend` result with the native CLI's JSON for the same text.
fn assert_same_as_native(result: &JsValue, native_json: &str) {
    let native: serde_json::Value = serde_json::from_str(native_json).unwrap();
    let tokens: Vec<String> = serde_wasm_bindgen::from_value(get(&get(result, "tokens"), "source")).unwrap();
    let native_tokens: Vec<String> = serde_json::from_value(native["tokens"]["source"].clone()).unwrap();
    assert_eq!(tokens, native_tokens);
    assert_eq!(get(result, "output_text").as_string(), native["output_text"].as_str().map(String::from));
    let blocks: Array = get(result, "attentions").unchecked_into();
    let native_blocks = native["attentions"].as_array().unwrap();
    assert_eq!(blocks.length() as usize, native_blocks.len());
    let mut worst = 0.0f32;
    for (b, n) in blocks.iter().zip(native_blocks) {
        assert_eq!(get(&b, "kind").as_string().unwrap(), n["kind"].as_str().unwrap());
        let data = get(&b, "data").unchecked_into::<Float32Array>().to_vec();
        let want: Vec<f32> = serde_json::from_value(n["data"].clone()).unwrap();
        assert_eq!(data.len(), want.len());
        for (x, y) in data.iter().zip(&want) {
            worst = worst.max((x - y).abs());
        }
    }
    assert!(worst <= 1e-5, "wasm vs native max abs diff {worst}");
}

/// `make test-wasm` runs this suite on both builds: pkg/'s flags, then pkg/relaxed/'s, telling the
/// second one so (ATTNVIZ_EXPECT_RELAXED_SIMD=1) — the relaxed flags must have reached the code.
#[wasm_bindgen_test]
fn this_is_the_build_make_asked_for() {
    let info = build_info().unwrap_or_else(|_| panic!("buildInfo failed"));
    assert_eq!(get(&info, "simd").as_bool(), Some(true));
    let relaxed = option_env!("ATTNVIZ_EXPECT_RELAXED_SIMD") == Some("1");
    assert_eq!(get(&info, "relaxed_simd").as_bool(), Some(relaxed));
}

#[wasm_bindgen_test]
fn translator_matches_native() {
    let m = en_pt();
    let r = m.attend("The cat sat on the mat.", None, None, None, None, None).unwrap_or_else(|_| panic!("attend failed"));
    assert_eq!(get(&r, "output_text").as_string().as_deref(), Some("O gato sentou-se no tapete."));
    assert_same_as_native(&r, fixture!("en-pt-cat.json"));
    let r = m.attend("Ich möchte café crème — naïve façade.", None, None, None, None, None).unwrap_or_else(|_| panic!("attend failed"));
    assert_same_as_native(&r, fixture!("en-pt-accents.json"));
    // Step view of a cross-attention head: Q from the decoder, K and V from the encoder.
    let s = m.step("The cat sat on the mat.", "cross", 1, 2, None, None, None, None).unwrap_or_else(|_| panic!("step failed"));
    assert_eq!(get(&s, "q_source").as_string().as_deref(), Some("decoder"));
    assert_eq!(get(&s, "kv_source").as_string().as_deref(), Some("encoder"));
}

#[wasm_bindgen_test]
fn minilm_matches_native() {
    let m = minilm();
    let r = m.attend("The cat sat on the mat.", None, None, None, None, None).unwrap_or_else(|_| panic!("attend failed"));
    assert_same_as_native(&r, fixture!("minilm-cat.json"));
    let r = m.attend("日本語のテキストと emoji 🎉, naïve café", None, None, None, None, None).unwrap_or_else(|_| panic!("attend failed"));
    assert_same_as_native(&r, fixture!("minilm-cjk.json"));
}

#[wasm_bindgen_test]
fn bad_input_is_an_error_not_a_panic() {
    // Truncated and bit-flipped model files.
    let bin = model_file!("en-pt", "model.enpt.intgemm.alphas.bin");
    let tok = model_file!("en-pt", "tokenizer.json");
    for cut in [0usize, 7, 100, 12_544, bin.len() / 2, bin.len() - 1] {
        assert!(AttnModel::load(EN_PT_MANIFEST, &files(&[("model.enpt.intgemm.alphas.bin", &bin[..cut]), ("tokenizer.json", tok)])).is_err(), "cut {cut}");
    }
    let mut flipped = bin.to_vec();
    flipped[20] ^= 0x40; // a header length field
    assert!(AttnModel::load(EN_PT_MANIFEST, &files(&[("model.enpt.intgemm.alphas.bin", &flipped), ("tokenizer.json", tok)])).is_err());
    assert!(AttnModel::load(EN_PT_MANIFEST, &files(&[("model.enpt.intgemm.alphas.bin", bin), ("tokenizer.json", b"{not json")])).is_err());
    assert!(AttnModel::load(EN_PT_MANIFEST, &files(&[("tokenizer.json", tok)])).is_err());
    assert!(AttnModel::load("{\"id\":\"x\",\"architecture\":\"gpt-j\",\"files\":[]}", &Object::new()).is_err());

    let m = en_pt();
    assert!(m.attend("", None, None, None, None, None).is_ok());
    let long = "word ".repeat(20_000);
    let r = m.attend(&long, None, None, None, None, None).unwrap_or_else(|_| panic!("long text must truncate, not fail"));
    assert_eq!(get(&r, "truncated").as_bool(), Some(true));
    assert!(m.step("hi", "decoder_self", 0, 0, None, None, None, None).is_err());
    assert!(m.step("hi", "cross", 9, 0, None, None, None, None).is_err());
    assert!(m.step("hi", "nonsense", 0, 0, None, None, None, None).is_err());
}

/// Issue 13 in the module itself, where a panic aborts (no unwinding to contain it): sizes that
/// wrap in 32-bit arithmetic and a charsmap the `tokenizers` crate `expect`s to parse must be
/// refused at load. More cases natively in tests/hardening.rs.
#[wasm_bindgen_test]
fn wasm32_size_wraps_and_bad_charsmaps_are_load_errors() {
    // 33554944 × 384 wraps to 512 × 384 in u32: this loaded, then panicked on a long text.
    let mut config: Value = serde_json::from_slice(model_file!("minilm", "config.json")).unwrap();
    config["max_position_embeddings"] = Value::from(33554944u64);
    let config = serde_json::to_vec(&config).unwrap();
    let f = files(&[("config.json", &config), ("model.safetensors", model_file!("minilm", "model.safetensors")), ("tokenizer.json", model_file!("minilm", "tokenizer.json"))]);
    assert!(AttnModel::load(MINILM_MANIFEST, &f).is_err(), "max_position_embeddings 33554944 loaded");
    let mut tok: Value = serde_json::from_slice(model_file!("en-pt", "tokenizer.json")).unwrap();
    tok["normalizer"]["normalizers"][0]["precompiled_charsmap"] = Value::from("ALQC!AAC");
    let tok = serde_json::to_vec(&tok).unwrap();
    let f = files(&[("model.enpt.intgemm.alphas.bin", model_file!("en-pt", "model.enpt.intgemm.alphas.bin")), ("tokenizer.json", &tok)]);
    assert!(AttnModel::load(EN_PT_MANIFEST, &f).is_err(), "a charsmap that is not base64 loaded");
}

/// The JSON value of a result object, as JSON.stringify would see it but with Float32Arrays as
/// arrays; their paths go to `typed`. Anything JSON has no word for (undefined, a Map, a class
/// instance) fails here, naming where it is.
fn to_json(v: &JsValue, path: &str, typed: &mut Vec<String>) -> Value {
    if v.is_null() {
        Value::Null
    } else if let Some(b) = v.as_bool() {
        Value::Bool(b)
    } else if let Some(n) = v.as_f64() {
        if n.fract() == 0.0 && n.abs() < 9e15 {
            Value::from(n as i64)
        } else {
            Value::from(n)
        }
    } else if let Some(s) = v.as_string() {
        Value::String(s)
    } else if v.is_instance_of::<Float32Array>() {
        typed.push(path.to_string());
        Value::Array(v.unchecked_ref::<Float32Array>().to_vec().into_iter().map(|x| Value::from(x as f64)).collect())
    } else if Array::is_array(v) {
        Value::Array(v.unchecked_ref::<Array>().iter().enumerate().map(|(i, x)| to_json(&x, &format!("{path}/{i}"), typed)).collect())
    } else if v.is_object() && Object::get_prototype_of(v) == Object::get_prototype_of(&Object::new()) {
        let mut map = serde_json::Map::new();
        for entry in Object::entries(v.unchecked_ref()).iter() {
            let pair: Array = entry.unchecked_into();
            let key = pair.get(0).as_string().unwrap();
            map.insert(key.clone(), to_json(&pair.get(1), &format!("{path}/{key}"), typed));
        }
        Value::Object(map)
    } else {
        panic!("{path}: {v:?} is not a JSON value, a plain object or a Float32Array");
    }
}

#[wasm_bindgen_test]
fn attend_and_step_objects_satisfy_the_schema() {
    // The same schema (and the same checker) as the CLI's JSON in tests/schema.rs; every array
    // of floats is a Float32Array (the worker transfers them), and nothing else is.
    let checker = schema::Checker::new();
    let (minilm, en_pt) = (minilm(), en_pt());
    for (m, text, embedding) in [(&minilm, "The cat sat on the mat.", true), (&en_pt, "The cat sat on the mat.", false), (&en_pt, "o o o o o o o o o o o o o", false)] {
        let r = m.attend(text, None, None, None, None, None).unwrap_or_else(|_| panic!("attend failed"));
        let mut typed = Vec::new();
        let v = to_json(&r, "", &mut typed);
        checker.attend(&v).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        let mut want: Vec<String> = (0..v["attentions"].as_array().unwrap().len()).map(|i| format!("/attentions/{i}/data")).collect();
        if embedding {
            want.push("/sentence_embedding".into());
        }
        typed.sort();
        want.sort();
        assert_eq!(typed, want);
    }
    assert_eq!(
        to_json(&en_pt.attend("o o o o o o o o o o o o o", None, None, None, None, None).unwrap_or_else(|_| panic!("attend failed")), "", &mut Vec::new())["stop_reason"],
        "max_length"
    );
    for (m, kind, layer, head) in [(&minilm, "encoder_self", 2, 5), (&en_pt, "cross", 1, 3)] {
        let s = m.step("The cat sat on the mat.", kind, layer, head, None, None, None, None).unwrap_or_else(|_| panic!("step failed"));
        let mut typed = Vec::new();
        let v = to_json(&s, "", &mut typed);
        checker.step(&v).unwrap_or_else(|e| panic!("{kind}: {e}"));
        typed.sort();
        let want = ["/block_input", "/concat", "/k", "/mask", "/normed", "/output", "/probs", "/projected", "/q", "/residual", "/scaled", "/scores", "/v"];
        assert_eq!(typed, want);
    }
    for (m, kind) in [(&minilm, "learned"), (&en_pt, "sinusoidal")] {
        let p = m.positions(16).unwrap_or_else(|_| panic!("positions failed"));
        let mut typed = Vec::new();
        let v = to_json(&p, "", &mut typed);
        checker.positions(&v).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!((v["kind"].as_str(), v["positions"].as_u64()), (Some(kind), Some(16)));
        assert_eq!(typed, ["/data"]);
    }
}

#[wasm_bindgen_test]
fn files_past_the_memory_budget_are_refused_before_they_are_copied() {
    // 3 × 1.5 GiB of (lazily allocated, untouched) JS memory: copying them into wasm32 memory
    // (at most 4 GiB) aborted the module; their sizes alone must refuse them, naming the budget.
    let big = || Uint8Array::new_with_length(3 << 29);
    let f = Object::new();
    for name in ["config.json", "model.safetensors", "tokenizer.json"] {
        Reflect::set(&f, &JsValue::from_str(name), &big()).unwrap();
    }
    let e = match AttnModel::load(MINILM_MANIFEST, &f) {
        Ok(_) => panic!("4.5 GiB of model files loaded"),
        Err(e) => JsValue::from(e),
    };
    let message = get(&e, "message").as_string().unwrap_or_default();
    assert!(message.contains("1 GiB memory budget"), "{message}");
}

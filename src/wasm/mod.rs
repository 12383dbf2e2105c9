//! The thin `#[wasm_bindgen]` facade the page's worker uses. Everything here converts between
//! JS values and the Rust API; every failure becomes a JS `Error` with the library's message.
//! Attention probabilities cross the boundary as one `Float32Array` per block (no JSON on the
//! hot path).

use crate::attention::{AttentionKind, ForwardOutput, HeadRequest};
use crate::models::{Manifest, Model, SUPPORTED};
use crate::output::TokensJson;
use js_sys::{Array, Float32Array, Object, Reflect, Uint8Array};
use serde::Serialize;
use std::collections::HashMap;
use wasm_bindgen::prelude::*;

fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsError> {
    value.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).map_err(|e| JsError::new(&format!("internal: cannot convert a result ({e})")))
}

fn set(obj: &Object, key: &str, value: &JsValue) -> Result<(), JsError> {
    Reflect::set(obj, &JsValue::from_str(key), value).map(|_| ()).map_err(|_| JsError::new("internal: cannot build the result object"))
}

fn err(e: crate::Error) -> JsError {
    JsError::new(&e.to_string())
}

fn now_ms() -> f64 {
    // `performance` exists in windows and workers; fall back to Date where it does not.
    let perf = Reflect::get(&js_sys::global(), &JsValue::from_str("performance")).ok();
    perf.and_then(|p| {
        let now = Reflect::get(&p, &JsValue::from_str("now")).ok()?.dyn_into::<js_sys::Function>().ok()?;
        now.call0(&p).ok()?.as_f64()
    })
    .unwrap_or_else(js_sys::Date::now)
}

#[derive(Serialize)]
struct BuildInfo {
    version: &'static str,
    simd: bool,
}

/// `{ version, simd }` of this wasm build.
#[wasm_bindgen(js_name = buildInfo)]
pub fn build_info() -> Result<JsValue, JsError> {
    to_js(&BuildInfo { version: env!("CARGO_PKG_VERSION"), simd: cfg!(target_feature = "simd128") })
}

/// The `architecture` values of manifests this build can run.
#[wasm_bindgen(js_name = supportedArchitectures)]
pub fn supported_architectures() -> Array {
    SUPPORTED.iter().map(|s| JsValue::from_str(s)).collect()
}

#[wasm_bindgen]
pub struct AttnModel {
    model: Model,
}

#[derive(Serialize)]
struct AttendMeta<'a> {
    model: &'a str,
    text: &'a str,
    tokens: TokensJson<'a>,
    word_ids: WordIds<'a>,
    output_text: Option<&'a str>,
    truncated: bool,
    stop_reason: Option<crate::attention::StopReason>,
}

#[derive(Serialize)]
struct WordIds<'a> {
    source: &'a [Option<u32>],
    target: &'a [Option<u32>],
}

#[derive(Serialize)]
struct BlockMeta {
    kind: AttentionKind,
    layer: usize,
    heads: usize,
    query_len: usize,
    key_len: usize,
}

#[derive(Serialize)]
struct StepMeta<'a> {
    kind: AttentionKind,
    layer: usize,
    head: usize,
    d_k: usize,
    query_tokens: &'a [String],
    key_tokens: &'a [String],
    q_source: &'a str,
    kv_source: &'a str,
}

#[wasm_bindgen]
impl AttnModel {
    /// `files`: `{ "<file name>": Uint8Array }` for every name in `manifest.files`.
    /// `manifest_json` may be empty for a user's own folder: the architecture is then inferred
    /// from the files (config.json, a Marian .bin).
    pub fn load(manifest_json: &str, files: &Object) -> Result<AttnModel, JsError> {
        let mut bytes = HashMap::new();
        for entry in Object::entries(files).iter() {
            let pair: Array = entry.unchecked_into();
            let name = pair.get(0).as_string().ok_or_else(|| JsError::new("file names must be strings"))?;
            let data = pair.get(1);
            if !data.is_instance_of::<Uint8Array>() {
                return Err(JsError::new(&format!("file `{name}` must be a Uint8Array")));
            }
            bytes.insert(name, data.unchecked_into::<Uint8Array>().to_vec());
        }
        let manifest = if manifest_json.trim().is_empty() {
            let names: Vec<String> = bytes.keys().cloned().collect();
            Manifest::infer("custom", &names, bytes.get("config.json").map(|v| v.as_slice())).map_err(err)?
        } else {
            Manifest::from_json(manifest_json.as_bytes()).map_err(err)?
        };
        Ok(AttnModel { model: Model::load(manifest, &bytes).map_err(err)? })
    }

    /// `{ id, name, architecture, kinds, layers, heads, head_dim, max_positions, special_tokens, credit, license, example }`
    pub fn info(&self) -> Result<JsValue, JsError> {
        to_js(&self.model.info())
    }

    /// One forward: tokens, output text, and `attentions: [{ kind, layer, heads, query_len,
    /// key_len, data: Float32Array [heads, Tq, Tk] }]`, `sentence_embedding`, `forward_ms`.
    pub fn attend(&self, text: &str) -> Result<JsValue, JsError> {
        let start = now_ms();
        let out = self.model.forward(text, None).map_err(err)?;
        let ms = now_ms() - start;
        self.result_object(text, &out, ms)
    }

    /// Every intermediate of one head: `{ kind, layer, head, d_k, query_tokens, key_tokens,
    /// q_source, kv_source, q, k, v, scores, scaled, mask, probs, output }` (Float32Arrays).
    pub fn step(&self, text: &str, kind: &str, layer: usize, head: usize) -> Result<JsValue, JsError> {
        let kind = AttentionKind::parse(kind).ok_or_else(|| JsError::new(&format!("unknown attention kind `{kind}` (encoder_self, decoder_self or cross)")))?;
        let hi = self.model.head_internals(text, HeadRequest { kind, layer, head }).map_err(err)?;
        let t = &hi.trace;
        let obj: Object = to_js(&StepMeta {
            kind,
            layer,
            head,
            d_k: t.d_k,
            query_tokens: &hi.query_tokens,
            key_tokens: &hi.key_tokens,
            q_source: hi.q_source,
            kv_source: hi.kv_source,
        })?
        .unchecked_into();
        for (name, values) in [("q", &t.q), ("k", &t.k), ("v", &t.v), ("scores", &t.scores), ("scaled", &t.scaled), ("mask", &t.mask), ("probs", &t.probs), ("output", &t.output)] {
            set(&obj, name, &Float32Array::from(values.as_slice()))?;
        }
        Ok(obj.into())
    }
}

impl AttnModel {
    fn result_object(&self, text: &str, out: &ForwardOutput, forward_ms: f64) -> Result<JsValue, JsError> {
        let meta = AttendMeta {
            model: &self.model.manifest.id,
            text,
            tokens: TokensJson { source: &out.source_tokens, target: &out.target_tokens },
            word_ids: WordIds { source: &out.source_word_ids, target: &out.target_word_ids },
            output_text: out.output_text.as_deref(),
            truncated: out.truncated,
            stop_reason: out.stop_reason,
        };
        let obj: Object = to_js(&meta)?.unchecked_into();
        let blocks = Array::new();
        for b in &out.attentions {
            let block: Object = to_js(&BlockMeta { kind: b.kind, layer: b.layer, heads: b.heads, query_len: b.query_len, key_len: b.key_len })?.unchecked_into();
            set(&block, "data", &Float32Array::from(b.probs.as_slice()))?;
            blocks.push(&block);
        }
        set(&obj, "attentions", &blocks)?;
        let embedding = out.sentence_embedding.as_ref().map(|e| JsValue::from(Float32Array::from(e.as_slice()))).unwrap_or(JsValue::NULL);
        set(&obj, "sentence_embedding", &embedding)?;
        set(&obj, "forward_ms", &JsValue::from_f64(forward_ms))?;
        Ok(obj.into())
    }
}

mod charts;
pub use charts::draw_bar_chart;

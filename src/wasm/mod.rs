//! The thin `#[wasm_bindgen]` facade the page's worker uses. Everything here converts between
//! JS values and the Rust API; every failure becomes a JS `Error` with the library's message.
//! Attention probabilities cross the boundary as one `Float32Array` per block (no JSON on the
//! hot path).

use crate::models::inspect::{inspect, FileHead, GGUF_HEAD_BYTES};
use crate::models::manifest::supported;
use crate::models::{Asks, Manifest, Model};
use crate::nn::attention::MapSources;
use crate::nn::probe::{KeepMaps, Site};
use crate::output::{AttendResult, HeadsResult, PositionsResult, StepResult};
use crate::result::{AttentionKind, GenerateOptions, HeadRequest, Sampling};
use js_sys::{Array, Float32Array, Object, Reflect, Uint8Array};
use serde::{Deserialize, Serialize, Serializer};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use wasm_bindgen::prelude::*;

fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&format!("internal: cannot convert a result ({e})")))
}

fn err(e: crate::Error) -> JsError {
    JsError::new(&e.to_string())
}

fn now_ms() -> f64 {
    // `performance` exists in windows and workers; fall back to Date where it does not.
    let perf = Reflect::get(&js_sys::global(), &JsValue::from_str("performance")).ok();
    perf.and_then(|p| {
        let now = Reflect::get(&p, &JsValue::from_str("now"))
            .ok()?
            .dyn_into::<js_sys::Function>()
            .ok()?;
        now.call0(&p).ok()?.as_f64()
    })
    .unwrap_or_else(js_sys::Date::now)
}

/// Where the panic hook leaves the message of a panic: `globalThis.attnvizPanic`. In wasm a panic
/// aborts (a `RuntimeError: unreachable` trap in JS), so the worker reads the message from here
/// after the trap, reports it and starts a fresh instance.
pub const PANIC_GLOBAL: &str = "attnvizPanic";

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error(message: &str);
}

/// Run by wasm-bindgen when an instance starts: installs a panic hook, so a panic that remains
/// reports its message (`panicked at src/…:line:col: message`) to the console and to
/// [`PANIC_GLOBAL`] instead of a bare "unreachable". No panic is expected: every failure should be
/// an `Err`; this only makes a bug say what it is.
#[wasm_bindgen(start)]
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info.to_string();
        let _ = Reflect::set(
            &js_sys::global(),
            &JsValue::from_str(PANIC_GLOBAL),
            &JsValue::from_str(&message),
        );
        console_error(&format!("attnviz wasm panicked: {message}"));
    }));
}

/// TEST HOOK, not an API: panics on purpose with `message`. It exists so that the end-to-end test
/// tests/e2e/robust-page.test.mjs can check, on the real build, that a panic reports its message
/// and that the worker recovers from it (no input of the real API is known to panic, and those
/// that did are being fixed). Calling it kills only this wasm instance; the page never calls it.
#[wasm_bindgen(js_name = __panicForTest)]
pub fn panic_for_test(message: &str) {
    panic!("{message}");
}

/// A GEMM helper thread's body, for the build with shared memory: the worker that runs the
/// model starts `threads − 1` helper workers on its memory, and each calls this once; it never
/// returns. In the one-thread builds there is nothing to help with, so it returns at once.
#[wasm_bindgen(js_name = poolHelper)]
pub fn pool_helper() {
    #[cfg(target_feature = "atomics")]
    crate::pool::helper_loop();
}

/// Threads a GEMM runs on now: 1 + the helpers that joined.
#[wasm_bindgen(js_name = poolThreads)]
pub fn pool_threads() -> usize {
    crate::pool::threads()
}

#[derive(Serialize)]
struct BuildInfo {
    version: &'static str,
    simd: bool,
    relaxed_simd: bool,
    /// Built with shared memory: GEMMs run on the pool (see [`pool_helper`]).
    threads: bool,
}

/// `{ version, simd, relaxed_simd, threads }` of this wasm build (relaxed_simd: the GEMM's
/// multiply-adds are `f32x4.relaxed_madd`; threads: the pkg/threads/ build on shared memory).
#[wasm_bindgen(js_name = buildInfo)]
pub fn build_info() -> Result<JsValue, JsError> {
    to_js(&BuildInfo {
        version: env!("CARGO_PKG_VERSION"),
        simd: cfg!(target_feature = "simd128"),
        relaxed_simd: cfg!(target_feature = "relaxed-simd"),
        threads: cfg!(target_feature = "atomics"),
    })
}

/// The `architecture` values of manifests this build can run.
#[wasm_bindgen(js_name = supportedArchitectures)]
pub fn supported_architectures() -> Array {
    supported().into_iter().map(JsValue::from_str).collect()
}

/// The `(name, value)` pairs of a `{ "<file name>": … }` object.
fn named_files(files: &Object) -> Result<Vec<(String, JsValue)>, JsError> {
    Object::entries(files)
        .iter()
        .map(|entry| {
            let pair: Array = entry.unchecked_into();
            Ok((
                pair.get(0)
                    .as_string()
                    .ok_or_else(|| JsError::new("file names must be strings"))?,
                pair.get(1),
            ))
        })
        .collect()
}

/// What a user's files are, from their first bytes alone (no weight decoded): `files` is
/// `{ "<file name>": { size, head: Uint8Array } }`, `head` being all of config.json, the whole
/// safetensors header, the first `ggufHeadBytes()` of a GGUF, empty for the others. Returns an
/// [`crate::models::inspect::Inspection`] or throws an Error that says what will not load.
#[wasm_bindgen(js_name = inspectModel)]
pub fn inspect_model(id: &str, files: &Object) -> Result<JsValue, JsError> {
    let mut heads = Vec::new();
    for (name, f) in named_files(files)? {
        let size = Reflect::get(&f, &JsValue::from_str("size"))
            .ok()
            .and_then(|v| v.as_f64())
            .filter(|s| *s >= 0.0)
            .ok_or_else(|| JsError::new(&format!("file `{name}` has no size")))?;
        let head = Reflect::get(&f, &JsValue::from_str("head"))
            .ok()
            .filter(|h| h.is_instance_of::<Uint8Array>())
            .map(|h| h.unchecked_into::<Uint8Array>().to_vec())
            .unwrap_or_default();
        heads.push((name, size as u64, head));
    }
    let files: Vec<FileHead> =
        heads.iter().map(|(name, size, head)| FileHead { name, size: *size, head }).collect();
    to_js(&inspect(id, &files).map_err(err)?)
}

/// How many first bytes of a GGUF file `inspectModel` needs (its metadata and tensor table).
#[wasm_bindgen(js_name = ggufHeadBytes)]
pub fn gguf_head_bytes() -> f64 {
    GGUF_HEAD_BYTES as f64
}

#[wasm_bindgen]
pub struct AttnModel {
    model: Model,
    /// Forwards so far (each `attend` with `maps` is named by its count).
    forwards: Cell<u32>,
    /// What the maps of the last `attend` with `maps` of each `keep` name are made of (its
    /// queries and keys: a fraction of the maps' size), for [`AttnModel::maps`]: one forward's
    /// per name (the next of that name replaces them).
    kept: RefCell<HashMap<String, (u32, Vec<MapSources>)>>,
}

impl AttnModel {
    /// What `attend`'s `forward`-th kept under `keep`, or an error (for `what`, a request's
    /// name) once a newer forward of that name replaced it.
    fn kept_sources<'k>(
        &self,
        kept: &'k HashMap<String, (u32, Vec<MapSources>)>,
        keep: &str,
        forward: u32,
        what: &str,
    ) -> Result<&'k [MapSources], JsError> {
        match kept.get(keep).filter(|(f, _)| *f == forward) {
            Some((_, sources)) => Ok(sources),
            None => Err(JsError::new(&format!(
                "{what}: forward {forward} of {} is no longer kept (a newer forward replaced it)",
                self.model.manifest.id
            ))),
        }
    }
}

/// An array of floats as a `Float32Array` (a copy, owned by JS, so the worker can transfer it).
struct F32s(Float32Array);

impl Serialize for F32s {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serde_wasm_bindgen::preserve::serialize(&self.0, s)
    }
}

fn f32s(values: &[f32]) -> F32s {
    F32s(Float32Array::from(values))
}

/// What `attend`, `step` and `heads` take after their required arguments: one options object,
/// every field optional (`undefined` or `{}`, or a field set to `undefined`: no generation,
/// greedy, raw weights only). An unknown field is an error, so a misspelt option is never
/// silently ignored.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct CallOptions {
    /// Tokens a decoder-only model generates after the text (other models ignore it).
    generate: Option<u32>,
    /// 0: greedy; > 0: sampled from softmax(logits / temperature).
    temperature: Option<f64>,
    /// Sample among the k most probable tokens (0: all of them).
    top_k: Option<u32>,
    seed: Option<u32>,
    /// `attend` only: also return the value-weighted norms.
    value_norms: Option<bool>,
    /// `attend` only: also return this head's intermediates (`step`), from the same forward.
    step: Option<StepOption>,
    /// `attend` only: also return the logit lens (`logit_lens`).
    lens: Option<bool>,
    /// `attend` only: send the maps of some layers only; the others stay, to be asked for.
    maps: Option<MapsOption>,
}

/// `attend`'s `maps` option: `{ keep, layers: [{ kind, layer }], wholeUpTo }`: when every map
/// together takes more than `wholeUpTo` bytes (default 0), only the maps of `layers` go out with
/// the result and the others are kept under the name `keep` (the caller's: a page's and a
/// widget's forwards of one model keep theirs apart) until its next such forward.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MapsOption {
    keep: String,
    layers: Vec<MapLayer>,
    #[serde(default)]
    whole_up_to: f64,
}

#[derive(Deserialize)]
struct MapLayer {
    kind: String,
    layer: usize,
}

fn parse_kind(kind: &str) -> Result<AttentionKind, JsError> {
    AttentionKind::parse(kind).ok_or_else(|| {
        JsError::new(&format!(
            "unknown attention kind `{kind}` (encoder_self, decoder_self or cross)"
        ))
    })
}

/// The head whose intermediates `attend` returns beside the maps (the step view's).
#[derive(Deserialize)]
struct StepOption {
    kind: String,
    layer: usize,
    head: usize,
}

impl StepOption {
    fn request(&self) -> Result<HeadRequest, JsError> {
        Ok(HeadRequest { kind: parse_kind(&self.kind)?, layer: self.layer, head: self.head })
    }
}

impl CallOptions {
    /// The fields, as JS spells them.
    const FIELDS: [&'static str; 8] =
        ["generate", "temperature", "topK", "seed", "valueNorms", "step", "lens", "maps"];

    fn read(options: JsValue, call: &str) -> Result<CallOptions, JsError> {
        if options.is_undefined() || options.is_null() {
            return Ok(CallOptions::default());
        }
        // serde-wasm-bindgen reads only the fields a struct names: the others are checked here.
        if let Some(object) = options.dyn_ref::<Object>() {
            for key in Object::keys(object).iter() {
                let key = key.as_string().unwrap_or_default();
                if !Self::FIELDS.contains(&key.as_str()) {
                    return Err(JsError::new(&format!(
                        "{call} options: unknown field `{key}` (the options are {})",
                        Self::FIELDS.join(", ")
                    )));
                }
            }
        }
        let o: CallOptions = serde_wasm_bindgen::from_value(options).map_err(|e| {
            let why = e.to_string();
            JsError::new(&format!(
                "{call} options: {}",
                why.strip_prefix("Error: ").unwrap_or(&why)
            ))
        })?;
        let t = o.temperature.unwrap_or(0.0);
        if !(t.is_finite() && t >= 0.0) {
            return Err(JsError::new(&format!(
                "{call} options: temperature must be a number ≥ 0, not {t}"
            )));
        }
        if call != "attend" {
            for (given, name) in [
                (o.value_norms == Some(true), "valueNorms"),
                (o.step.is_some(), "step"),
                (o.lens == Some(true), "lens"),
                (o.maps.is_some(), "maps"),
            ] {
                if given {
                    return Err(JsError::new(&format!(
                        "{call} options: {name} is an option of attend only"
                    )));
                }
            }
        }
        Ok(o)
    }

    fn generate(&self) -> GenerateOptions {
        GenerateOptions {
            max_new_tokens: self.generate.unwrap_or(0) as usize,
            sampling: Sampling {
                temperature: self.temperature.unwrap_or(0.0),
                top_k: self.top_k.unwrap_or(0) as usize,
                seed: self.seed.unwrap_or(0),
            },
        }
    }
}

#[wasm_bindgen]
impl AttnModel {
    /// `files`: `{ "<file name>": Uint8Array }` for every name in `manifest.files`.
    /// `manifest_json` may be empty for a user's own folder: the architecture is then inferred
    /// from the files (config.json, a Marian .bin).
    pub fn load(manifest_json: &str, files: &Object) -> Result<AttnModel, JsError> {
        let mut arrays = Vec::new();
        for (name, data) in named_files(files)? {
            if !data.is_instance_of::<Uint8Array>() {
                return Err(JsError::new(&format!("file `{name}` must be a Uint8Array")));
            }
            arrays.push((name, data.unchecked_into::<Uint8Array>()));
        }
        // Sizes first: copying a file past the budget into wasm memory would abort the module.
        crate::limits::check_file_sizes(
            arrays.iter().map(|(name, a)| (name.as_str(), u64::from(a.length()))),
        )
        .map_err(err)?;
        let bytes: HashMap<String, Vec<u8>> =
            arrays.into_iter().map(|(name, a)| (name, a.to_vec())).collect();
        // Owned: a GGUF model's weights stay in the copied bytes (no second copy).
        let manifest = if manifest_json.trim().is_empty() {
            let names: Vec<String> = bytes.keys().cloned().collect();
            Manifest::infer("custom", &names, bytes.get("config.json").map(|v| v.as_slice()))
                .map_err(err)?
        } else {
            Manifest::from_json(manifest_json.as_bytes()).map_err(err)?
        };
        let model = Model::load_owned(manifest, bytes).map_err(err)?;
        Ok(AttnModel { model, forwards: Cell::new(0), kept: RefCell::new(HashMap::new()) })
    }

    /// `{ id, name, architecture, kinds, layers, heads, kv_heads, generates, head_dim, max_positions, special_tokens, credit, license, example }`
    pub fn info(&self) -> Result<JsValue, JsError> {
        to_js(&self.model.info())
    }

    /// One forward: [`AttendResult`] (`schema/attend.schema.json`), attention data as
    /// `Float32Array`s `[heads, Tq, Tk]`. `options` (all optional): `{ generate, temperature,
    /// topK, seed }`: a decoder-only model (`info().generates`) then generates `generate` tokens
    /// (greedy, or sampled at `temperature` > 0 from the `topK` most probable with `seed`; other
    /// models ignore them); `valueNorms: true`: also `value_norms`, ‖α_ij f_h(x_j)‖ per block
    /// (the "value-weighted" measure), laid out like `attentions`; `step: { kind, layer, head }`:
    /// also `step`, that head's intermediates ([`AttnModel::step`]'s answer) from the same
    /// forward, so the step and query/key views cost no second forward of a text; `lens: true`:
    /// also `logit_lens`, what each layer would predict (decoder-only models and translators).
    /// `progress` (optional): called `(kind, layer, queryRows)` after every attention call of the
    /// forward (each layer of a prompt, then of each generated token), while it runs.
    pub fn attend(
        &self,
        text: &str,
        options: JsValue,
        progress: Option<js_sys::Function>,
    ) -> Result<JsValue, JsError> {
        let o = CallOptions::read(options, "attend")?;
        let head = o.step.as_ref().map(StepOption::request).transpose()?;
        // The layers whose maps are sent when not all of them are.
        let sent: Vec<Site> = (o.maps.iter().flat_map(|m| &m.layers))
            .map(|m| Ok(Site { kind: parse_kind(&m.kind)?, layer: m.layer }))
            .collect::<Result<_, JsError>>()?;
        // Every map is sent unless `maps` asks for some and all would be more than its
        // wholeUpTo: the forward then keeps only those (it takes every map's statistics).
        let keep_maps = match &o.maps {
            Some(m) => KeepMaps::Within { bytes: m.whole_up_to.max(0.0) as usize, sites: sent },
            None => KeepMaps::All,
        };
        let asks = Asks {
            value_norms: o.value_norms.unwrap_or(false),
            head,
            lens: o.lens == Some(true),
            sources: o.maps.is_some(),
            keep_maps,
        };
        // A new forward of a `keep` name replaces what its last one kept: dropped first, so
        // that the two are never in memory together.
        if let Some(MapsOption { keep, .. }) = &o.maps {
            self.forget(keep);
        }
        let start = now_ms();
        let forward = || self.model.attend_asking(text, &o.generate(), asks);
        let (a, internals) = match progress {
            // What the function throws is its caller's; the forward goes on.
            Some(f) => crate::nn::progress::reporting(
                Box::new(move |site, rows| {
                    let (kind, layer) = (JsValue::from_str(site.kind.as_str()), site.layer.into());
                    let _ = f.call3(&JsValue::NULL, &kind, &layer, &JsValue::from(rows as u32));
                }),
                forward,
            ),
            None => forward(),
        }
        .map_err(err)?;
        let ms = now_ms() - start;
        let id = &self.model.manifest.id;
        let kept_as = o.maps.as_ref().filter(|_| a.maps_left_out).map(|m| {
            self.forwards.set(self.forwards.get() + 1);
            (m.keep.clone(), self.forwards.get())
        });
        let forward = kept_as.as_ref().map(|(_, f)| *f);
        let mut result = AttendResult::sending(id, text, &a, ms, f32s, forward, &|_, _| true);
        result.step = internals.as_ref().map(|hi| StepResult::new(id, text, hi, f32s));
        let js = to_js(&result)?;
        drop(result);
        if let Some((keep, forward)) = kept_as {
            self.kept.borrow_mut().insert(keep, (forward, a.sources.unwrap_or_default()));
        }
        Ok(js)
    }

    /// Thumbnails of every layer's maps of `kind` that `attend` (its `forward`-th, with the
    /// `maps` option) left out under `keep`: `Float32Array` `[layers, heads, rows, cols]` with
    /// rows = min(size, query_len) and cols = min(size, key_len), each map pooled as the views
    /// pool it (MapSources::thumbnails), so the model view of a long text needs no layer's maps.
    pub fn thumbnails(
        &self,
        keep: &str,
        forward: u32,
        kind: &str,
        size: usize,
    ) -> Result<Float32Array, JsError> {
        let kind = parse_kind(kind)?;
        let kept = self.kept.borrow();
        let sources = self.kept_sources(&kept, keep, forward, "thumbnails")?;
        let mut layers: Vec<&MapSources> =
            sources.iter().filter(|s| s.attention.site.kind == kind).collect();
        layers.sort_by_key(|s| s.attention.site.layer);
        if layers.is_empty() {
            return Err(JsError::new(&format!(
                "thumbnails: {} has no {}",
                self.model.manifest.id,
                kind.as_str()
            )));
        }
        let size = size.clamp(1, 4096);
        let out: Vec<f32> = layers
            .iter()
            .flat_map(|s| s.thumbnails(size.min(s.query_len()), size.min(s.key_len())))
            .collect();
        Ok(Float32Array::from(out.as_slice()))
    }

    /// Drops the maps kept under `keep` (its caller now draws another model's).
    pub fn forget(&self, keep: &str) {
        self.kept.borrow_mut().remove(keep);
    }

    /// The maps of one layer that `attend` (its `forward`-th, with the `maps` option) left out
    /// under `keep`: `Float32Array` `[heads, query_len, key_len]`, computed again from the
    /// queries and keys that forward kept, bit for bit its own (tests/map_sources.rs). An error
    /// once a newer forward of that name replaced it.
    pub fn maps(
        &self,
        keep: &str,
        forward: u32,
        kind: &str,
        layer: usize,
    ) -> Result<Float32Array, JsError> {
        let kind = parse_kind(kind)?;
        let kept = self.kept.borrow();
        let sources = self.kept_sources(&kept, keep, forward, "maps")?;
        let site = sources
            .iter()
            .find(|s| (s.attention.site.kind, s.attention.site.layer) == (kind, layer));
        let site = site.ok_or_else(|| {
            JsError::new(&format!(
                "maps: {} has no {} layer {layer}",
                self.model.manifest.id,
                kind.as_str()
            ))
        })?;
        // # [heads, query_len, key_len], each head's rows as the forward computed them
        let q = site.query_len();
        let maps: Vec<f32> =
            (0..site.attention.heads).flat_map(|h| site.head_rows(h, 0..q)).collect();
        Ok(Float32Array::from(maps.as_slice()))
    }

    /// Every intermediate of one head: [`StepResult`] (`schema/attend.schema.json`), arrays as
    /// `Float32Array`s. `options`: the generation options of [`AttnModel::attend`] (the step
    /// view of a decoder-only model covers the text and its continuation).
    pub fn step(
        &self,
        text: &str,
        kind: &str,
        layer: usize,
        head: usize,
        options: JsValue,
    ) -> Result<JsValue, JsError> {
        let kind = parse_kind(kind)?;
        let o = CallOptions::read(options, "step")?;
        let hi = self
            .model
            .head_internals_generating(text, &o.generate(), HeadRequest { kind, layer, head })
            .map_err(err)?;
        to_js(&StepResult::new(&self.model.manifest.id, text, &hi, f32s))
    }

    /// Every head's scores and label on the text (and its continuation): [`HeadsResult`]
    /// (`#/$defs/heads` in `schema/attend.schema.json`). `options`: as [`AttnModel::step`]'s.
    pub fn heads(&self, text: &str, options: JsValue) -> Result<JsValue, JsError> {
        let o = CallOptions::read(options, "heads")?;
        let (a, scores) = self.model.heads(text, &o.generate()).map_err(err)?;
        to_js(&HeadsResult::new(&self.model.manifest.id, text, &a, &scores, a.induction_tokens))
    }

    /// The position vectors the model adds to its token embeddings, positions `0..count`
    /// (clamped to 1..=max_positions): [`PositionsResult`] (`#/$defs/positions` in
    /// `schema/attend.schema.json`), `data` a `Float32Array` `[positions, dims]`.
    pub fn positions(&self, count: usize) -> Result<JsValue, JsError> {
        let table = self.model.positions(count);
        to_js(&PositionsResult::new(&self.model.manifest.id, &table, f32s))
    }
}

mod charts;
pub use charts::{draw_bar_chart, draw_positions_chart};

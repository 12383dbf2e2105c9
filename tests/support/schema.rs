//! Checks a result of `attend` or `step` against the checked-in schema/attend.schema.json
//! (validated by `boon`, JSON Schema 2020-12), and what a schema cannot say: the lengths that
//! follow from other fields. Used by the native test of the CLI (tests/schema.rs); the wasm
//! facade's objects are checked against the same schema, with the same length checks, by
//! tests/wasm/facade.test.mjs.

use serde_json::Value;

pub const SCHEMA: &str = include_str!("../../schema/attend.schema.json");
const URL: &str = "file:///attnviz/schema/attend.schema.json";

pub struct Checker {
    schemas: boon::Schemas,
    attend: boon::SchemaIndex,
    step: boon::SchemaIndex,
    positions: boon::SchemaIndex,
    heads: boon::SchemaIndex,
}

fn len(v: &Value, key: &str) -> usize {
    v[key].as_array().map_or(usize::MAX, Vec::len)
}

fn num(v: &Value, key: &str) -> usize {
    v[key].as_u64().map_or(usize::MAX, |n| n as usize)
}

fn expect(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

impl Checker {
    pub fn new() -> Checker {
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource(
                URL,
                serde_json::from_str(SCHEMA).expect("schema/attend.schema.json is JSON"),
            )
            .expect("schema resource");
        let attend = compiler
            .compile(URL, &mut schemas)
            .unwrap_or_else(|e| panic!("schema does not compile: {e:#}"));
        let step = compiler
            .compile(&format!("{URL}#/$defs/step"), &mut schemas)
            .unwrap_or_else(|e| panic!("step schema does not compile: {e:#}"));
        let positions = compiler
            .compile(&format!("{URL}#/$defs/positions"), &mut schemas)
            .unwrap_or_else(|e| panic!("positions schema does not compile: {e:#}"));
        let heads = compiler
            .compile(&format!("{URL}#/$defs/heads"), &mut schemas)
            .unwrap_or_else(|e| panic!("heads schema does not compile: {e:#}"));
        Checker { schemas, attend, step, positions, heads }
    }

    fn validate(&self, v: &Value, index: boon::SchemaIndex) -> Result<(), String> {
        self.schemas.validate(v, index).map_err(|e| format!("{e}"))
    }

    /// An `attend` result: the schema, then every array's length.
    pub fn attend(&self, v: &Value) -> Result<(), String> {
        self.validate(v, self.attend)?;
        let (ts, tt) = (len(&v["tokens"], "source"), len(&v["tokens"], "target"));
        expect(len(&v["word_ids"], "source") == ts && len(&v["word_ids"], "target") == tt, || {
            "word_ids and tokens differ in length".into()
        })?;
        // A decoder-only model's self-attention runs over its prompt and then its continuation.
        let generation = &v["generation"];
        if !generation.is_null() {
            expect(
                num(generation, "prompt_len") == ts
                    && len(generation, "token_ids") == ts + tt
                    && len(generation, "steps") == tt,
                || {
                    format!(
                    "generation: prompt_len {}, {} ids and {} steps for {ts} prompt and {tt} generated tokens",
                    generation["prompt_len"],
                    len(generation, "token_ids"),
                    len(generation, "steps")
                )
                },
            )?;
        }
        let decoder_len = if generation.is_null() { tt } else { ts + tt };
        for b in v["attentions"].as_array().into_iter().flatten() {
            let (h, q, k) = (num(b, "heads"), num(b, "query_len"), num(b, "key_len"));
            let at = format!("{} layer {}", b["kind"], b["layer"]);
            expect(b["shape"] == serde_json::json!([h, q, k]), || {
                format!("{at}: shape {} is not [heads, query_len, key_len]", b["shape"])
            })?;
            expect(len(b, "data") == h * q * k, || {
                format!("{at}: data holds {} values, not {h}×{q}×{k}", len(b, "data"))
            })?;
            let (want_q, want_k) = match b["kind"].as_str() {
                Some("cross") => (tt, ts),
                Some("decoder_self") => (decoder_len, decoder_len),
                _ => (ts, ts),
            };
            expect((q, k) == (want_q, want_k), || {
                format!("{at}: {q}×{k} attention for {ts} source and {tt} target tokens")
            })?;
        }
        // Value norms, when present, mirror the attention blocks one for one.
        if let Some(norms) = v["value_norms"].as_array() {
            let maps = v["attentions"].as_array().map_or(&[][..], Vec::as_slice);
            expect(norms.len() == maps.len(), || {
                format!("{} value-norm blocks for {} attention blocks", norms.len(), maps.len())
            })?;
            for (n, a) in norms.iter().zip(maps) {
                let same = ["kind", "layer", "heads", "query_len", "key_len", "shape"]
                    .iter()
                    .all(|k| n[k] == a[k])
                    && len(n, "data") == len(a, "data");
                expect(same, || {
                    format!(
                        "value norms of {} layer {} are not laid out like its attention",
                        a["kind"], a["layer"]
                    )
                })?;
                expect(
                    n["data"]
                        .as_array()
                        .is_some_and(|d| d.iter().all(|x| x.as_f64().is_some_and(|x| x >= 0.0))),
                    || "a value norm is negative".into(),
                )?;
            }
        }
        Ok(())
    }

    /// A `heads` result: the schema.
    pub fn heads(&self, v: &Value) -> Result<(), String> {
        self.validate(v, self.heads)
    }

    /// A `step` result: the schema, then every array's length.
    pub fn step(&self, v: &Value) -> Result<(), String> {
        self.validate(v, self.step)?;
        let (q, k, d) = (num(v, "query_len"), num(v, "key_len"), num(v, "d_k"));
        expect(len(v, "query_tokens") == q && len(v, "key_tokens") == k, || {
            "query/key tokens differ from query_len/key_len".into()
        })?;
        let m = num(v, "d_model");
        let head = [
            ("q", q * d),
            ("k", k * d),
            ("v", k * d),
            ("scores", q * k),
            ("scaled", q * k),
            ("mask", q * k),
            ("probs", q * k),
            ("output", q * d),
        ];
        let block = [
            ("concat", q * m),
            ("projected", q * m),
            ("block_input", q * m),
            ("residual", q * m),
            ("normed", q * m),
        ];
        for (name, want) in head.into_iter().chain(block) {
            expect(len(v, name) == want, || {
                format!("{name} holds {} values, not {want}", len(v, name))
            })?;
        }
        Ok(())
    }

    /// A `positions` result: the schema, then the data's length.
    pub fn positions(&self, v: &Value) -> Result<(), String> {
        self.validate(v, self.positions)?;
        let (p, d) = (num(v, "positions"), num(v, "dims"));
        expect(v["shape"] == serde_json::json!([p, d]), || {
            format!("shape {} is not [positions, dims]", v["shape"])
        })?;
        expect(len(v, "data") == p * d, || {
            format!("data holds {} values, not {p}×{d}", len(v, "data"))
        })
    }
}

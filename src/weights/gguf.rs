//! GGUF (llama.cpp's single-file format, versions 2 and 3): metadata key–values, tensor
//! descriptions, and the tensors as [`BlockMat`]s that stay in the file's bytes (quantised
//! blocks are decoded inside the GEMM, never all at once).
//!
//! Layout: `"GGUF"`, u32 version, u64 tensor count, u64 key–value count; key–values (string key,
//! u32 type, value); tensor infos (string name, u32 n_dims, u64 dims[n_dims] fastest first,
//! u32 ggml type, u64 offset into the data section); padding to `general.alignment` (32); data.
//! All little-endian. Every count and size read here is checked against the bytes that remain
//! before anything is allocated for it, so a corrupt file is an error, never a huge allocation.

use super::ggml::{BlockFormat, BlockMat};
use crate::error::{invalid_model, Result};
use std::collections::HashMap;
use std::sync::Arc;

/// Deepest nesting of arrays accepted in metadata (real files nest 1).
const MAX_ARRAY_DEPTH: usize = 3;
/// Most dimensions a tensor may have (ggml's GGML_MAX_DIMS).
const MAX_DIMS: usize = 4;
/// Most tensors accepted (real files: a few hundred to a few thousand).
pub const MAX_TENSORS: usize = 1 << 16;
/// Most metadata values accepted, counting every array item (SmolLM2: 150k, mostly its
/// vocabulary; the largest real vocabularies need under 1M). A value takes 32 bytes in memory
/// but as little as 1 in the file: without this cap a 1 GiB file of u8 arrays would ask for
/// 32 GiB.
pub const MAX_METADATA_VALUES: usize = 1 << 21;

/// A metadata value. Integers of every width are kept as i64/u64, floats as f64.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Uint(u64),
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    Array(Vec<Value>),
}

impl Value {
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Uint(v) => Some(v),
            Value::Int(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Float(v) => Some(v),
            Value::Uint(v) => Some(v as f64),
            Value::Int(v) => Some(v as f64),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// One tensor's description: name, ggml type, dims (fastest first: `[cols, rows]` for a
/// matrix), and where its bytes start in the file.
#[derive(Clone, Debug)]
pub struct TensorInfo {
    pub name: String,
    pub dims: Vec<usize>,
    pub format: BlockFormat,
    pub start: usize,
}

/// A parsed GGUF file; it owns the file's bytes, which its tensors point into.
pub struct Gguf {
    pub version: u32,
    pub metadata: HashMap<String, Value>,
    pub tensors: HashMap<String, TensorInfo>,
    bytes: Arc<Vec<u8>>,
    file: String,
}

struct Reader<'a> {
    /// The file, or its first bytes (what the page reads for inspection).
    bytes: &'a [u8],
    /// The whole file's length: more than `bytes` when only its start was read.
    file_size: usize,
    file: &'a str,
    pos: usize,
    /// Metadata values still accepted (see [`MAX_METADATA_VALUES`]).
    values_left: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.pos.saturating_add(n);
        if end > self.bytes.len() {
            return Err(self.past_the_bytes(end).unwrap_or_else(|| {
                invalid_model(format!(
                    "the GGUF file ends inside {what} (at byte {} of {})",
                    self.pos,
                    self.file_size.max(self.bytes.len())
                ))
            }));
        }
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// Reading up to `end` runs past the bytes given but not past the file: the start read
    /// for inspection was too short, which says nothing against the file (and must not be
    /// mistaken for its fault, nor hide a fault it has).
    fn past_the_bytes(&self, end: usize) -> Option<crate::Error> {
        (end > self.bytes.len() && end <= self.file_size).then(|| {
            invalid_model(format!(
                "{}'s header (metadata and tensor table) is longer than the first {} read for inspection",
                self.file,
                crate::limits::human_bytes(self.bytes.len() as u64)
            ))
        })
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    /// A count that must fit in what is left, each item taking at least `min_item` bytes.
    /// Bounded by the bytes given, so what is allocated for it is too.
    fn count(&mut self, min_item: usize, what: &str) -> Result<usize> {
        let n = self.u64(what)?;
        let needs = usize::try_from(n).ok().and_then(|n| n.checked_mul(min_item));
        match needs {
            Some(b) if b <= self.remaining() => Ok(n as usize),
            _ => Err(needs
                .and_then(|b| self.past_the_bytes(self.pos.saturating_add(b)))
                .unwrap_or_else(|| {
                    invalid_model(format!(
                    "the GGUF file declares {n} {what}, more than its {} remaining bytes can hold",
                    self.file_size.max(self.bytes.len()) - self.pos
                ))
                })),
        }
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let len = self.count(1, what)?;
        let b = self.take(len, what)?;
        String::from_utf8(b.to_vec())
            .map_err(|_| invalid_model(format!("a GGUF {what} is not UTF-8 text")))
    }

    fn value(&mut self, ty: u32, depth: usize) -> Result<Value> {
        let what = "a metadata value";
        Ok(match ty {
            0 => Value::Uint(self.u8(what)? as u64),
            1 => Value::Int(self.u8(what)? as i8 as i64),
            2 => {
                let b = self.take(2, what)?;
                Value::Uint(u16::from_le_bytes([b[0], b[1]]) as u64)
            }
            3 => {
                let b = self.take(2, what)?;
                Value::Int(i16::from_le_bytes([b[0], b[1]]) as i64)
            }
            4 => Value::Uint(self.u32(what)? as u64),
            5 => Value::Int(self.u32(what)? as i32 as i64),
            6 => Value::Float(f32::from_bits(self.u32(what)?) as f64),
            7 => match self.u8(what)? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(invalid_model(format!("a GGUF boolean holds {b}"))),
            },
            8 => Value::Str(self.string("metadata string bytes")?),
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(invalid_model(format!(
                        "GGUF metadata nests arrays deeper than {MAX_ARRAY_DEPTH}"
                    )));
                }
                let item = self.u32("an array type")?;
                let min = match item {
                    0 | 1 | 7 => 1,
                    2 | 3 => 2,
                    4..=6 => 4,
                    8..=12 => 8,
                    other => {
                        return Err(invalid_model(format!(
                            "GGUF metadata has an array of unknown type {other}"
                        )))
                    }
                };
                let n = self.count(min, "array items")?;
                self.values_left = self.values_left.checked_sub(n).ok_or_else(|| {
                    invalid_model(format!(
                        "GGUF metadata holds more than {MAX_METADATA_VALUES} values"
                    ))
                })?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(item, depth + 1)?);
                }
                Value::Array(items)
            }
            10 => Value::Uint(self.u64(what)?),
            11 => Value::Int(self.u64(what)? as i64),
            12 => Value::Float(f64::from_bits(self.u64(what)?)),
            other => {
                return Err(invalid_model(format!(
                    "GGUF metadata has a value of unknown type {other}"
                )))
            }
        })
    }
}

fn format_of(ggml_type: u32, name: &str) -> Result<BlockFormat> {
    Ok(match ggml_type {
        0 => BlockFormat::F32,
        1 => BlockFormat::F16,
        2 => BlockFormat::Q4_0,
        3 => BlockFormat::Q4_1,
        8 => BlockFormat::Q8_0,
        other => return Err(invalid_model(format!("GGUF tensor `{name}` has ggml type {other}; this build reads F32, F16, Q4_0, Q4_1 and Q8_0"))),
    })
}

/// Parses the header, metadata and tensor table, and checks that every tensor's bytes lie
/// inside the file. Takes the bytes: tensors are read from them in place.
pub fn read(bytes: Vec<u8>, file: &str) -> Result<Gguf> {
    let size = bytes.len() as u64;
    read_header(bytes, size, file)
}

/// As [`read`] from the first bytes of a file of `file_size` bytes (at least up to the end of
/// its tensor table): what the page inspects before reading a whole file. Tensors are checked
/// against `file_size`; reading one past `bytes` is an error, never an out-of-bounds index.
pub fn read_header(bytes: Vec<u8>, file_size: u64, file: &str) -> Result<Gguf> {
    let file_size = usize::try_from(file_size).unwrap_or(usize::MAX);
    let mut r = Reader { bytes: &bytes, file_size, file, pos: 0, values_left: MAX_METADATA_VALUES };
    if r.take(4, "the header").ok() != Some(b"GGUF".as_slice()) {
        return Err(invalid_model(format!("{file} is not a GGUF file (no `GGUF` magic)")));
    }
    let version = r.u32("the header")?;
    if !(2..=3).contains(&version) {
        return Err(invalid_model(format!(
            "{file} is GGUF version {version}; this build reads versions 2 and 3"
        )));
    }
    // A tensor info takes at least 8 + 4 + 8 + 4 + 8 bytes; a key–value at least 8 + 4 + 1.
    let tensor_count = r.count(32, "tensors")?;
    if tensor_count > MAX_TENSORS {
        return Err(invalid_model(format!(
            "{file} declares {tensor_count} tensors, more than the {MAX_TENSORS} accepted"
        )));
    }
    let kv_count = r.count(13, "metadata entries")?;
    r.values_left =
        r.values_left.checked_sub(kv_count).ok_or_else(|| invalid_model(format!("{file} declares {kv_count} metadata entries, more than the {MAX_METADATA_VALUES} accepted")))?;
    let mut metadata = HashMap::with_capacity(kv_count);
    for _ in 0..kv_count {
        let key = r.string("metadata key")?;
        let ty = r.u32("a metadata type")?;
        let value = r.value(ty, 0)?;
        if metadata.insert(key.clone(), value).is_some() {
            return Err(invalid_model(format!("{file}: metadata key `{key}` appears twice")));
        }
    }
    let mut infos = Vec::with_capacity(tensor_count);
    for _ in 0..tensor_count {
        let name = r.string("tensor name")?;
        let n_dims = r.u32("a tensor's dimension count")? as usize;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(invalid_model(format!(
                "{file}: tensor `{name}` has {n_dims} dimensions (1 to {MAX_DIMS} accepted)"
            )));
        }
        let mut dims = Vec::with_capacity(n_dims);
        for _ in 0..n_dims {
            let d = r.u64("tensor dimensions")?;
            dims.push(
                usize::try_from(d)
                    .ok()
                    .filter(|&d| d <= file_size.saturating_mul(2))
                    .ok_or_else(|| invalid_model(format!("{file}: tensor `{name}` has a dimension of {d}, more than the file can hold")))?,
            );
        }
        let format = format_of(r.u32("a tensor type")?, &name)?;
        let offset = r.u64("a tensor offset")?;
        infos.push((name, dims, format, offset));
    }
    let alignment = match metadata.get("general.alignment") {
        None => 32,
        Some(v) => v
            .as_u64()
            .filter(|a| (1..=1 << 16).contains(a) && a.is_power_of_two())
            .ok_or_else(|| {
                invalid_model(format!(
                    "{file}: general.alignment is not a power of two up to 65536"
                ))
            })? as usize,
    };
    let data_start = r.pos.div_ceil(alignment) * alignment;
    let mut tensors = HashMap::with_capacity(infos.len());
    for (name, dims, format, offset) in infos {
        let cols = dims[0];
        let rows = dims[1..].iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        let size = rows.zip(format.row_bytes(cols)).and_then(|(rows, rb)| rows.checked_mul(rb));
        let start = usize::try_from(offset).ok().and_then(|o| o.checked_add(data_start));
        let end = start.zip(size).and_then(|(s, n)| s.checked_add(n));
        match end {
            Some(end) if end <= file_size => {}
            _ => return Err(invalid_model(format!("{file}: tensor `{name}` ({format:?} {dims:?} at offset {offset}) does not fit in the file's {file_size} bytes"))),
        }
        let start = start.unwrap_or_default();
        if tensors
            .insert(name.clone(), TensorInfo { name: name.clone(), dims, format, start })
            .is_some()
        {
            return Err(invalid_model(format!("{file}: tensor `{name}` appears twice")));
        }
    }
    Ok(Gguf { version, metadata, tensors, bytes: Arc::new(bytes), file: file.to_string() })
}

impl Gguf {
    pub fn file(&self) -> &str {
        &self.file
    }

    fn missing(&self, key: &str) -> crate::Error {
        invalid_model(format!(
            "{}: metadata `{key}` is missing or not the expected type",
            self.file
        ))
    }

    pub fn u64(&self, key: &str) -> Result<u64> {
        self.metadata.get(key).and_then(Value::as_u64).ok_or_else(|| self.missing(key))
    }

    pub fn f64(&self, key: &str) -> Result<f64> {
        self.metadata.get(key).and_then(Value::as_f64).ok_or_else(|| self.missing(key))
    }

    pub fn str(&self, key: &str) -> Result<&str> {
        self.metadata.get(key).and_then(Value::as_str).ok_or_else(|| self.missing(key))
    }

    pub fn array(&self, key: &str) -> Result<&[Value]> {
        self.metadata.get(key).and_then(Value::as_array).ok_or_else(|| self.missing(key))
    }

    /// A matrix `[rows, cols]` (GGUF dims `[cols, rows]`) kept in its block format.
    pub fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<BlockMat> {
        let t = self
            .tensors
            .get(name)
            .ok_or_else(|| invalid_model(format!("{}: tensor `{name}` is missing", self.file)))?;
        if t.dims != [cols, rows] {
            return Err(invalid_model(format!(
                "{}: tensor `{name}` has dims {:?}, expected [{cols}, {rows}]",
                self.file, t.dims
            )));
        }
        let m =
            BlockMat::new(rows, cols, t.format, self.bytes.clone(), t.start).ok_or_else(|| {
                invalid_model(format!("{}: tensor `{name}` does not fit in the file", self.file))
            })?;
        self.finite(name, m)
    }

    /// `m`, unless tensor `name` holds NaN or ∞ (a corrupt or random file).
    fn finite(&self, name: &str, m: BlockMat) -> Result<BlockMat> {
        if m.all_finite() {
            Ok(m)
        } else {
            Err(invalid_model(format!(
                "{}: tensor `{name}` holds NaN or infinite values",
                self.file
            )))
        }
    }

    /// A vector of `len` values, decoded to f32 (norm weights).
    pub fn vector(&self, name: &str, len: usize) -> Result<Vec<f32>> {
        let t = self
            .tensors
            .get(name)
            .ok_or_else(|| invalid_model(format!("{}: tensor `{name}` is missing", self.file)))?;
        if t.dims != [len] {
            return Err(invalid_model(format!(
                "{}: tensor `{name}` has dims {:?}, expected [{len}]",
                self.file, t.dims
            )));
        }
        let m = BlockMat::new(1, len, t.format, self.bytes.clone(), t.start).ok_or_else(|| {
            invalid_model(format!("{}: tensor `{name}` does not fit in the file", self.file))
        })?;
        let m = self.finite(name, m)?;
        let mut out = vec![0.0; len];
        m.dequantize_row(0, &mut out);
        Ok(out)
    }
}

/// Writes a GGUF v3 file (tests and fuzzing build small models with it).
pub mod write {
    use super::Value;

    fn put_str(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }

    fn type_of(v: &Value) -> u32 {
        match v {
            Value::Uint(_) => 10,
            Value::Int(_) => 11,
            Value::Float(_) => 12,
            Value::Bool(_) => 7,
            Value::Str(_) => 8,
            Value::Array(_) => 9,
        }
    }

    /// The type [`put_value`] writes `v` as by default: 64-bit numbers; an array's items as its
    /// first item.
    fn default_type(v: &Value) -> u32 {
        match v {
            Value::Array(items) => items.first().map_or(10, type_of),
            other => type_of(other),
        }
    }

    /// `v` as GGUF type `ty` (for an array: of its items; nested arrays take their default).
    fn put_value(out: &mut Vec<u8>, ty: u32, v: &Value) {
        let int = match v {
            Value::Uint(x) => *x,
            Value::Int(x) => *x as u64,
            Value::Bool(b) => *b as u64,
            _ => 0,
        };
        let float = v.as_f64().unwrap_or(0.0);
        match (v, ty) {
            (Value::Str(s), _) => put_str(out, s),
            (Value::Array(items), _) => {
                out.extend_from_slice(&ty.to_le_bytes());
                out.extend_from_slice(&(items.len() as u64).to_le_bytes());
                items.iter().for_each(|i| {
                    put_value(
                        out,
                        if matches!(i, Value::Array(_)) { default_type(i) } else { ty },
                        i,
                    )
                });
            }
            (_, 0 | 1 | 7) => out.push(int as u8),
            (_, 2 | 3) => out.extend_from_slice(&(int as u16).to_le_bytes()),
            (_, 4 | 5) => out.extend_from_slice(&(int as u32).to_le_bytes()),
            (_, 6) => out.extend_from_slice(&(float as f32).to_le_bytes()),
            (_, 12) => out.extend_from_slice(&float.to_le_bytes()),
            _ => out.extend_from_slice(&int.to_le_bytes()),
        }
    }

    /// `tensors`: (name, dims fastest first, ggml type, raw bytes).
    pub fn gguf(
        metadata: &[(&str, Value)],
        tensors: &[(&str, Vec<usize>, u32, Vec<u8>)],
    ) -> Vec<u8> {
        let typed: Vec<(&str, u32, Value)> =
            metadata.iter().map(|(k, v)| (*k, default_type(v), v.clone())).collect();
        gguf_typed(&typed, tensors)
    }

    /// As [`gguf`], with each value's GGUF type given (for an array, its items' type), as
    /// llama.cpp writes them: `(key, type, value)`, e.g. u32 (4) counts and f32 (6) floats.
    pub fn gguf_typed(
        metadata: &[(&str, u32, Value)],
        tensors: &[(&str, Vec<usize>, u32, Vec<u8>)],
    ) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
        for (k, ty, v) in metadata {
            put_str(&mut out, k);
            out.extend_from_slice(
                &(if matches!(v, Value::Array(_)) { 9 } else { *ty }).to_le_bytes(),
            );
            put_value(&mut out, *ty, v);
        }
        let mut offset = 0u64;
        for (name, dims, ty, data) in tensors {
            put_str(&mut out, name);
            out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
            dims.iter().for_each(|d| out.extend_from_slice(&(*d as u64).to_le_bytes()));
            out.extend_from_slice(&ty.to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            offset += (data.len() as u64).div_ceil(32) * 32;
        }
        while out.len() % 32 != 0 {
            out.push(0);
        }
        for (_, _, _, data) in tensors {
            out.extend_from_slice(data);
            while out.len() % 32 != 0 {
                out.push(0);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Vec<u8> {
        let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        write::gguf(
            &[
                ("general.architecture", Value::Str("llama".into())),
                ("llama.block_count", Value::Uint(1)),
                ("tokens", Value::Array(vec![Value::Str("a".into()), Value::Str("b".into())])),
            ],
            &[
                ("norm.weight", vec![4], 0, f32s(&[1.0, 2.0, 3.0, 4.0])),
                ("w", vec![4, 2], 0, f32s(&[1., 2., 3., 4., 5., 6., 7., 8.])),
            ],
        )
    }

    #[test]
    fn reads_what_it_writes() {
        let g = read(tiny(), "tiny.gguf").unwrap();
        assert_eq!(g.version, 3);
        assert_eq!(g.str("general.architecture").unwrap(), "llama");
        assert_eq!(g.u64("llama.block_count").unwrap(), 1);
        assert_eq!(g.array("tokens").unwrap().len(), 2);
        assert_eq!(g.vector("norm.weight", 4).unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
        let w = g.matrix("w", 2, 4).unwrap();
        let mut row = [0.0; 4];
        w.dequantize_row(1, &mut row);
        assert_eq!(row, [5.0, 6.0, 7.0, 8.0]);
        assert!(g.matrix("w", 4, 2).is_err());
        assert!(g.vector("missing", 4).is_err());
    }

    #[test]
    fn every_truncation_and_many_bit_flips_are_errors() {
        let good = tiny();
        // tiny()'s layout: a 24-byte header (magic, version, two counts); three key–values
        // (45 + 37 + 48 bytes) end at 154; the two tensor infos (43 + 41) at 238; the data
        // section starts at 256: norm.weight's 16 bytes, padding to 288, w's 32 bytes.
        const TABLE_END: usize = 238;
        const DATA: usize = 256;
        const NORM_END: usize = DATA + 16;
        const W: usize = 288;
        assert_eq!(good.len(), W + 32);
        let original = read(good.clone(), "tiny.gguf").unwrap();
        assert_eq!((original.tensors["norm.weight"].start, original.tensors["w"].start), (DATA, W));
        let message = |r: Result<Gguf>, what: &str| match r {
            Err(e @ crate::Error::InvalidModel(_)) => e.to_string(),
            Err(e) => panic!("{what}: not an invalid-model error: {e:?}"),
            Ok(_) => panic!("{what}: read as a valid file"),
        };
        // Every truncation is refused, by the part it cuts into.
        for cut in 0..good.len() {
            let msg = message(read(good[..cut].to_vec(), "cut.gguf"), &format!("cut at {cut}"));
            let says = |needles: &[&str]| needles.iter().all(|n| msg.contains(n));
            let ok = match cut {
                0..4 => says(&["cut.gguf is not a GGUF file (no `GGUF` magic)"]),
                // Inside the header and tables: where the bytes ran out, or a count that cannot fit.
                4..TABLE_END => {
                    says(&["the GGUF file ends inside", &format!(" of {cut})")])
                        || says(&["the GGUF file declares", "remaining bytes can hold"])
                }
                TABLE_END..NORM_END => says(&[
                    "cut.gguf: tensor `norm.weight` (F32 [4] at offset 0)",
                    &format!("does not fit in the file's {cut} bytes"),
                ]),
                _ => says(&[
                    "cut.gguf: tensor `w` (F32 [4, 2] at offset 32)",
                    &format!("does not fit in the file's {cut} bytes"),
                ]),
            };
            assert!(ok, "cut at {cut}: `{msg}`");
        }
        let flip = |i: usize, bit: u32| {
            let mut bad = good.clone();
            bad[i] ^= 1 << bit;
            read(bad, "flip.gguf")
        };
        let values = |g: &Gguf| {
            let mut v = g.vector("norm.weight", 4).unwrap();
            let w = g.matrix("w", 2, 4).unwrap();
            let mut row = [0.0; 4];
            for r in 0..2 {
                w.dequantize_row(r, &mut row);
                v.extend_from_slice(&row);
            }
            v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>()
        };
        let want = values(&original);
        // Bytes inside the header's strings (keys and a tensor name): with bit 7 set they are no
        // longer UTF-8.
        let texts: Vec<std::ops::Range<usize>> =
            [b"general.architecture".as_slice(), b"llama.block_count", b"tokens", b"norm.weight"]
                .iter()
                .map(|s| {
                    let at = good.windows(s.len()).position(|w| w == *s).unwrap();
                    at..at + s.len()
                })
                .collect();
        for i in 0..good.len() {
            for bit in [0, 3, 7] {
                let what = format!("bit {bit} of byte {i} flipped");
                match i {
                    0..4 => assert!(
                        message(flip(i, bit), &what).contains("flip.gguf is not a GGUF file"),
                        "{what}"
                    ),
                    4..8 => match flip(i, bit) {
                        // 3 → 2: a version this build reads too.
                        Ok(g) => assert!(
                            i == 4 && bit == 0 && g.version == 2 && values(&g) == want,
                            "{what}"
                        ),
                        Err(e) => assert!(
                            e.to_string().contains("flip.gguf is GGUF version"),
                            "{what}: {e}"
                        ),
                    },
                    // The tensor and key–value counts, and the first key's length.
                    8..32 => {
                        message(flip(i, bit), &what);
                    }
                    _ if bit == 7 && texts.iter().any(|t| t.contains(&i)) => assert!(
                        message(flip(i, bit), &what).contains("is not UTF-8 text"),
                        "{what}"
                    ),
                    // The data: a valid file whose values differ in the one float the byte is part of.
                    DATA.. => {
                        let got = values(&flip(i, bit).unwrap_or_else(|e| panic!("{what}: {e}")));
                        let changed: Vec<usize> =
                            (0..want.len()).filter(|&k| got[k] != want[k]).collect();
                        let expect = match i {
                            DATA..NORM_END => vec![(i - DATA) / 4],
                            W.. => vec![4 + (i - W) / 4],
                            _ => vec![], // padding between the tensors
                        };
                        assert_eq!(changed, expect, "{what}");
                    }
                    // Elsewhere (values, types, dims, offsets): an error or a file whose tensors
                    // still read without a panic.
                    _ => {
                        if let Ok(g) = flip(i, bit) {
                            let _ = g.matrix("w", 2, 4);
                            let _ = g.vector("norm.weight", 4);
                        }
                    }
                }
            }
        }
        // Absurd counts fail before allocating.
        let mut huge = good.clone();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(message(read(huge, "huge.gguf"), "huge")
            .contains("declares 18446744073709551615 tensors"));
    }
}

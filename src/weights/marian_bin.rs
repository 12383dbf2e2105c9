//! Marian's binary model format (`.bin`, as shipped by Bergamot):
//! `u64 version, u64 n`, then `n` headers of four u64 (`name_len, type, shape_len, data_len`),
//! the NUL-padded names, the shapes (i32 each), `u64 pad` + `pad` bytes, then the data blobs in
//! header order. Types: `0x404` f32, `0x4101` int8 (intgemm, kept as int8 + scale until a model
//! asks for floats) whose bytes are the matrix stored
//! `[out, in]` row-major (the header says `[in, out]`) followed by an f32 quantisation factor
//! alpha: real = int8 / alpha. `Wemb` is the exception: its int8 rows are `[vocab, dim]` as the
//! header says. `*_QuantMultA` (activation quantisation factors) are skipped: we run float math.
//! The text blob `special:model.yml` carries the architecture options.

use super::{Tensor, TensorData, TensorStore};
use crate::error::{invalid_model, Result};
use crate::limits::{budget, human_bytes, MEMORY_BUDGET_BYTES};

const TYPE_F32: u64 = 0x404;
const TYPE_INT8: u64 = 0x4101;
const TYPE_CHAR: u64 = 0x101;

pub struct MarianFile {
    pub tensors: TensorStore,
    /// The embedded `special:model.yml` text (architecture options), if present.
    pub model_yml: Option<String>,
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| {
            invalid_model(format!("Marian .bin is truncated (while reading {what})"))
        })?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    fn len(&mut self, what: &str) -> Result<usize> {
        let v = self.u64(what)?;
        usize::try_from(v)
            .ok()
            .filter(|&v| v <= self.bytes.len())
            .ok_or_else(|| invalid_model(format!("Marian .bin has an impossible {what} ({v})")))
    }
}

pub fn read(bytes: &[u8]) -> Result<MarianFile> {
    let mut c = Cursor { bytes, pos: 0 };
    let version = c.u64("version")?;
    if version != 1 {
        return Err(invalid_model(format!(
            "not a Marian .bin model (version field {version}, expected 1)"
        )));
    }
    let n = c.len("tensor count")?;
    let mut headers = Vec::with_capacity(n.min(4096));
    for _ in 0..n {
        let name_len = c.len("name length")?;
        let kind = c.u64("type")?;
        let shape_len = c.len("shape length")?;
        let data_len = c.len("data length")?;
        headers.push((name_len, kind, shape_len, data_len));
    }
    let mut names = Vec::with_capacity(headers.len());
    for &(name_len, ..) in &headers {
        let raw = c.take(name_len, "names")?;
        let raw = raw.split(|&b| b == 0).next().unwrap_or_default();
        names.push(
            String::from_utf8(raw.to_vec())
                .map_err(|_| invalid_model("Marian .bin has a tensor name that is not UTF-8"))?,
        );
    }
    let mut shapes = Vec::with_capacity(headers.len());
    for &(_, _, shape_len, _) in &headers {
        let raw = c.take(
            shape_len.checked_mul(4).ok_or_else(|| invalid_model("shape too long"))?,
            "shapes",
        )?;
        let dims: Vec<usize> = raw
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .map(|d| {
                usize::try_from(d).map_err(|_| invalid_model(format!("negative dimension {d}")))
            })
            .collect::<Result<_>>()?;
        shapes.push(dims);
    }
    let pad = c.len("padding")?;
    c.take(pad, "padding")?;

    // What the tensors will take in memory besides the file (f32 as 4 bytes, int8 as 1), summed
    // from the headers and checked against the budget before any tensor is decoded. A
    // declared size beyond its blob is caught below, also before decoding.
    let mut decoded: u64 = bytes.len() as u64;
    for ((&(_, kind, _, data_len), name), shape) in headers.iter().zip(&names).zip(&shapes) {
        let numel = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64));
        let size = match kind {
            TYPE_F32 => numel.and_then(|n| n.checked_mul(4)),
            TYPE_INT8 => numel,
            _ => Some(0),
        };
        let size = size.filter(|&s| s <= data_len as u64).ok_or_else(|| {
            invalid_model(format!(
                "`{name}` declares shape {shape:?}, more than its {data_len} bytes of data"
            ))
        })?;
        decoded = decoded.saturating_add(size);
    }
    if decoded > MEMORY_BUDGET_BYTES {
        return Err(invalid_model(format!(
            "Marian .bin needs {} in memory, more than {}",
            human_bytes(decoded),
            budget()
        )));
    }

    let mut store = TensorStore::default();
    let mut model_yml = None;
    for (((_, kind, _, data_len), name), shape) in headers.into_iter().zip(names).zip(shapes) {
        let blob = c.take(data_len, &format!("data of `{name}`"))?;
        if name.ends_with("_QuantMultA") {
            continue;
        }
        let numel = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| invalid_model(format!("`{name}` is too large")))?;
        let short = || invalid_model(format!("`{name}` has fewer bytes than its shape"));
        match kind {
            TYPE_CHAR if name == "special:model.yml" => {
                let text = blob.split(|&b| b == 0).next().unwrap_or_default();
                model_yml = Some(String::from_utf8_lossy(text).into_owned());
            }
            TYPE_F32 => {
                let raw = blob.get(..numel.checked_mul(4).ok_or_else(short)?).ok_or_else(short)?;
                let data = raw
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                store.insert(name, Tensor { shape, data: TensorData::F32(data) });
            }
            TYPE_INT8 => {
                let raw = blob.get(..numel.checked_add(4).ok_or_else(short)?).ok_or_else(short)?;
                let (values, alpha) = raw.split_at(numel);
                let alpha = f32::from_le_bytes(alpha.try_into().map_err(|_| short())?);
                if !(alpha.is_finite() && alpha != 0.0) {
                    return Err(invalid_model(format!(
                        "`{name}` has an invalid quantisation factor {alpha}"
                    )));
                }
                let values = values.iter().map(|&b| b as i8).collect();
                // Stored [out, in] although the header says [in, out]; Wemb is stored as declared.
                let shape = if name == "Wemb" || shape.len() != 2 {
                    shape
                } else {
                    vec![shape[1], shape[0]]
                };
                store.insert(
                    name,
                    Tensor { shape, data: TensorData::Int8 { values, scales: vec![1.0 / alpha] } },
                );
            }
            _ => {}
        }
    }
    Ok(MarianFile { tensors: store, model_yml })
}

/// The value of a top-level `key: value` line in Marian's model.yml.
pub fn yml_value<'a>(yml: &'a str, key: &str) -> Option<&'a str> {
    yml.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny_file() -> Vec<u8> {
        // One f32 tensor "b" [1,2] and one int8 tensor "W" declared [3,2] (stored [2,3]).
        let mut f = Vec::new();
        let put = |f: &mut Vec<u8>, v: u64| f.extend_from_slice(&v.to_le_bytes());
        put(&mut f, 1);
        put(&mut f, 2);
        for (nl, t, sl, dl) in [(2u64, TYPE_F32, 2u64, 8u64), (2, TYPE_INT8, 2, 10)] {
            put(&mut f, nl);
            put(&mut f, t);
            put(&mut f, sl);
            put(&mut f, dl);
        }
        f.extend_from_slice(b"b\0W\0");
        for d in [1i32, 2, 3, 2] {
            f.extend_from_slice(&d.to_le_bytes());
        }
        put(&mut f, 0);
        f.extend_from_slice(&1.5f32.to_le_bytes());
        f.extend_from_slice(&(-2.0f32).to_le_bytes());
        f.extend_from_slice(&[1u8, 2, 3, 0xff, 0xfe, 0xfd]);
        f.extend_from_slice(&2.0f32.to_le_bytes());
        f
    }

    #[test]
    fn reads_and_dequantises() {
        let mut m = read(&tiny_file()).unwrap();
        assert_eq!(m.tensors.vector("b", 2).unwrap(), vec![1.5, -2.0]);
        let w = m.tensors.matrix("W", 2, 3).unwrap();
        assert_eq!(w.as_slice(), &[0.5, 1.0, 1.5, -0.5, -1.0, -1.5]);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let f = tiny_file();
        for cut in 0..f.len() {
            assert!(read(&f[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn bit_flips_never_panic() {
        let f = tiny_file();
        for i in 0..f.len() {
            for bit in 0..8 {
                let mut g = f.clone();
                g[i] ^= 1 << bit;
                let _ = read(&g);
            }
        }
    }
}

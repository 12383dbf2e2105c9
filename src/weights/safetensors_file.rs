//! Hugging Face `.safetensors` via the `safetensors` crate. F32, F16 and BF16 tensors become
//! f32. An I8 tensor `<name>` is an int8 weight whose F32 `<name>_scale` holds one scale per row
//! (`[rows]` or `[rows, 1]`) or one for all (`[1]`): real = q · scale (what `make models` writes
//! as MiniLM's `model.int8.safetensors`). Other integer tensors (e.g. BERT's `position_ids`
//! buffer) are not weights and are skipped.

use super::ggml::f16_to_f32;
use super::{Tensor, TensorData, TensorStore};
use crate::error::{invalid_model, Result};
use crate::limits::{budget, human_bytes, MEMORY_BUDGET_BYTES};
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;

pub fn read(bytes: &[u8]) -> Result<TensorStore> {
    read_shards(&[("", bytes)])
}

/// The tensors of one model stored in one file or sharded over several
/// (`model-00001-of-00002.safetensors`, …: Hugging Face splits checkpoints over about 5 GB), as
/// one store. `shards`: (file name, bytes). A tensor in two shards is an error naming both.
pub fn read_shards(shards: &[(&str, &[u8])]) -> Result<TensorStore> {
    let named = |name: &str, e: String| if name.is_empty() { e } else { format!("{name}: {e}") };
    let files = shards
        .iter()
        .map(|(name, bytes)| {
            SafeTensors::deserialize(bytes)
                .map_err(|e| invalid_model(named(name, format!("not a safetensors file ({e})"))))
        })
        .collect::<Result<Vec<_>>>()?;
    // The files plus their float tensors as f32, before any is converted (the crate has checked
    // that every tensor's bytes lie inside its file).
    let mut needed = 0u64;
    for ((_, bytes), file) in shards.iter().zip(&files) {
        let floats = file.tensors().into_iter().map(|(_, v)| match v.dtype() {
            Dtype::F32 => v.data().len() as u64,
            Dtype::F16 | Dtype::BF16 => 2 * v.data().len() as u64,
            Dtype::I8 => v.data().len() as u64,
            _ => 0,
        });
        needed = floats.fold(needed.saturating_add(bytes.len() as u64), u64::saturating_add);
    }
    if needed > MEMORY_BUDGET_BYTES {
        return Err(invalid_model(format!(
            "the safetensors weights need {} in memory as f32, more than {}",
            human_bytes(needed),
            budget()
        )));
    }
    let mut store = TensorStore::default();
    let mut from: HashMap<String, &str> = HashMap::new();
    let mut int8 = Vec::new();
    for ((file_name, _), file) in shards.iter().zip(&files) {
        for (name, view) in file.tensors() {
            if let Some(other) = from.insert(name.clone(), file_name) {
                return Err(invalid_model(format!(
                    "tensor `{name}` is in both {other} and {file_name}"
                )));
            }
            let raw = view.data();
            let data: Vec<f32> = match view.dtype() {
                Dtype::F32 => raw
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
                Dtype::F16 => raw
                    .chunks_exact(2)
                    .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                    .collect(),
                Dtype::BF16 => raw
                    .chunks_exact(2)
                    .map(|b| f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16))
                    .collect(),
                Dtype::I8 => {
                    int8.push((
                        name,
                        view.shape().to_vec(),
                        raw.iter().map(|&b| b as i8).collect::<Vec<i8>>(),
                    ));
                    continue;
                }
                _ => continue,
            };
            store
                .insert(name, Tensor { shape: view.shape().to_vec(), data: TensorData::F32(data) });
        }
    }
    // Each int8 tensor takes its scales out of the float tensors (of any shard).
    for (name, shape, values) in int8 {
        let scales = store.vector_any(&format!("{name}_scale")).ok_or_else(|| {
            invalid_model(format!("int8 tensor `{name}` has no F32 `{name}_scale`"))
        })?;
        let rows = shape.first().copied().unwrap_or(1);
        if !(scales.len() == 1 || scales.len() == rows) || scales.iter().any(|s| !s.is_finite()) {
            return Err(invalid_model(format!("`{name}_scale` has {} values, expected 1 or {rows} finite ones (one per row of {shape:?})", scales.len())));
        }
        store.insert(name, Tensor { shape, data: TensorData::Int8 { values, scales } });
    }
    let names: Vec<&str> = shards.iter().map(|(n, _)| *n).filter(|n| !n.is_empty()).collect();
    if !names.is_empty() {
        store.set_file(&names.join(" + "));
    }
    Ok(store)
}

/// `name` as a shard of a sharded checkpoint, from `<prefix>-00001-of-00003.safetensors`.
#[derive(Debug, PartialEq)]
pub struct Shard<'a> {
    pub prefix: &'a str,
    pub index: usize,
    pub total: usize,
    /// How many digits the numbers are written with (5 in Hugging Face's names).
    pub digits: usize,
}

pub fn shard_of(name: &str) -> Option<Shard<'_>> {
    let stem = name.strip_suffix(".safetensors")?;
    let (rest, total) = stem.rsplit_once("-of-")?;
    let (prefix, index) = rest.rsplit_once('-')?;
    let number = |s: &str| {
        if s.len() >= 5 && s.bytes().all(|b| b.is_ascii_digit()) {
            s.parse::<usize>().ok()
        } else {
            None
        }
    };
    let shard = Shard { prefix, index: number(index)?, total: number(total)?, digits: total.len() };
    (1..=shard.total).contains(&shard.index).then_some(shard)
}

/// The weight files of a folder holding `names`: `model.safetensors`, or every shard of one
/// sharded checkpoint in order. `Err` names the shards that are missing; `Ok(None)`: neither.
pub fn weight_files(names: &[String]) -> Result<Option<Vec<String>>> {
    if names.iter().any(|n| n == "model.safetensors") {
        return Ok(Some(vec!["model.safetensors".into()]));
    }
    let Some(s) = names.iter().filter_map(|n| shard_of(n)).min_by_key(|s| s.index) else {
        return Ok(None);
    };
    let width = s.digits;
    let all: Vec<String> = (1..=s.total)
        .map(|i| format!("{}-{i:0width$}-of-{:0width$}.safetensors", s.prefix, s.total))
        .collect();
    let missing: Vec<&str> =
        all.iter().filter(|n| !names.contains(n)).map(String::as_str).collect();
    if !missing.is_empty() {
        let verb = if missing.len() == 1 { "is" } else { "are" };
        return Err(invalid_model(format!(
            "the checkpoint is sharded over {} files and {} of them {verb} missing: {}",
            s.total,
            missing.len(),
            missing.join(", ")
        )));
    }
    Ok(Some(all))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bytes in [&b""[..], &b"\x08\0\0\0\0\0\0\0{}"[..], &[0xffu8; 64][..]] {
            assert!(read(bytes).is_err() || read(bytes).unwrap().is_empty());
        }
    }

    fn file(tensors: &[(&str, Dtype, Vec<usize>, Vec<u8>)]) -> Vec<u8> {
        let views: Vec<_> = tensors
            .iter()
            .map(|(n, d, s, b)| {
                (n.to_string(), safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap())
            })
            .collect();
        safetensors::serialize(views, None).unwrap()
    }

    #[test]
    fn shards_load_as_one_store_and_a_tensor_in_two_is_an_error() {
        let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let a = file(&[("a", Dtype::F32, vec![2], f32s(&[1.0, 2.0]))]);
        let b = file(&[
            ("b", Dtype::F16, vec![1], vec![0x00, 0x3c]),
            ("a_twice", Dtype::F32, vec![1], f32s(&[3.0])),
        ]);
        let mut store = read_shards(&[
            ("m-00001-of-00002.safetensors", &a),
            ("m-00002-of-00002.safetensors", &b),
        ])
        .unwrap();
        assert_eq!(
            (store.vector("a", 2).unwrap(), store.vector("b", 1).unwrap()),
            (vec![1.0, 2.0], vec![1.0])
        );
        let err = store.vector("c", 1).unwrap_err().to_string();
        assert!(
            err.contains("m-00001-of-00002.safetensors + m-00002-of-00002.safetensors"),
            "{err}"
        );
        let err =
            read_shards(&[("x.safetensors", &a), ("y.safetensors", &a)]).unwrap_err().to_string();
        assert!(err.contains("tensor `a` is in both x.safetensors and y.safetensors"), "{err}");
        let err = read_shards(&[("x.safetensors", &a), ("y.safetensors", b"garbage")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("y.safetensors: not a safetensors file"), "{err}");
    }

    #[test]
    fn a_sharded_checkpoint_is_found_whole_or_its_missing_shards_named() {
        let names = |ns: &[&str]| ns.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            weight_files(&names(&["config.json", "model.safetensors"])).unwrap(),
            Some(vec!["model.safetensors".to_string()])
        );
        let two = names(&[
            "model-00002-of-00002.safetensors",
            "model.safetensors.index.json",
            "model-00001-of-00002.safetensors",
        ]);
        assert_eq!(
            weight_files(&two).unwrap(),
            Some(names(&["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]))
        );
        let err = weight_files(&names(&[
            "model-00001-of-00003.safetensors",
            "model-00003-of-00003.safetensors",
        ]))
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(
                "sharded over 3 files and 1 of them is missing: model-00002-of-00003.safetensors"
            ),
            "{err}"
        );
        assert_eq!(weight_files(&names(&["pytorch_model.bin", "config.json"])).unwrap(), None);
        assert_eq!(shard_of("model-00000-of-00002.safetensors"), None);
        assert_eq!(
            shard_of("a-b-00002-of-00002.safetensors"),
            Some(Shard { prefix: "a-b", index: 2, total: 2, digits: 5 })
        );
        assert_eq!(shard_of("model-1-of-2.safetensors"), None);
    }

    #[test]
    fn int8_with_per_row_scales_stays_quantised_and_dequantises_by_row() {
        let scales: Vec<u8> = [0.5f32, 2.0].iter().flat_map(|s| s.to_le_bytes()).collect();
        let bytes = file(&[
            ("w", Dtype::I8, vec![2, 3], vec![1, 2, 3, 0xff, 0xfe, 0xfd]),
            ("w_scale", Dtype::F32, vec![2], scales),
        ]);
        let mut store = read(&bytes).unwrap();
        assert!(!store.contains("w_scale"));
        let q = store.quantized_matrix("w", 2, 3).unwrap();
        assert_eq!(
            (q.scales.as_slice(), q.data.as_slice()),
            (&[0.5, 2.0][..], &[1i8, 2, 3, -1, -2, -3][..])
        );
        let mut store = read(&bytes).unwrap();
        assert_eq!(store.matrix("w", 2, 3).unwrap().as_slice(), &[0.5, 1.0, 1.5, -2.0, -4.0, -6.0]);
    }

    #[test]
    fn int8_without_or_with_wrong_scales_is_an_error() {
        let no_scale = file(&[("w", Dtype::I8, vec![2, 2], vec![1, 2, 3, 4])]);
        assert!(read(&no_scale).unwrap_err().to_string().contains("w_scale"));
        let three = file(&[
            ("w", Dtype::I8, vec![2, 2], vec![1, 2, 3, 4]),
            ("w_scale", Dtype::F32, vec![3], vec![0; 12]),
        ]);
        assert!(read(&three).is_err());
    }
}

//! Hugging Face `.safetensors` via the `safetensors` crate. F32, F16 and BF16 tensors become
//! f32. An I8 tensor `<name>` is an int8 weight whose F32 `<name>_scale` holds one scale per row
//! (`[rows]` or `[rows, 1]`) or one for all (`[1]`): real = q · scale (what `make models` writes
//! as MiniLM's `model.int8.safetensors`). Other integer tensors (e.g. BERT's `position_ids`
//! buffer) are not weights and are skipped.

use super::{Tensor, TensorData, TensorStore};
use crate::error::{invalid_model, Result};
use crate::limits::{budget, human_bytes, MEMORY_BUDGET_BYTES};
use crate::tensor::f16_to_f32;
use safetensors::{Dtype, SafeTensors};

pub fn read(bytes: &[u8]) -> Result<TensorStore> {
    let file = SafeTensors::deserialize(bytes).map_err(|e| invalid_model(format!("not a safetensors file ({e})")))?;
    // The file plus its float tensors as f32, before any is converted (the crate has checked
    // that every tensor's bytes lie inside the file).
    let tensors = file.tensors();
    let floats = tensors.iter().map(|(_, v)| match v.dtype() {
        Dtype::F32 => v.data().len() as u64,
        Dtype::F16 | Dtype::BF16 => 2 * v.data().len() as u64,
        Dtype::I8 => v.data().len() as u64,
        _ => 0,
    });
    let needed = floats.fold(bytes.len() as u64, u64::saturating_add);
    if needed > MEMORY_BUDGET_BYTES {
        return Err(invalid_model(format!("the safetensors weights need {} in memory as f32, more than {}", human_bytes(needed), budget())));
    }
    let mut store = TensorStore::default();
    let mut int8 = Vec::new();
    for (name, view) in tensors {
        let raw = view.data();
        let data: Vec<f32> = match view.dtype() {
            Dtype::F32 => raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
            Dtype::F16 => raw.chunks_exact(2).map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]]))).collect(),
            Dtype::BF16 => raw.chunks_exact(2).map(|b| f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16)).collect(),
            Dtype::I8 => {
                int8.push((name, view.shape().to_vec(), raw.iter().map(|&b| b as i8).collect::<Vec<i8>>()));
                continue;
            }
            _ => continue,
        };
        store.insert(name, Tensor { shape: view.shape().to_vec(), data: TensorData::F32(data) });
    }
    // Each int8 tensor takes its scales out of the float tensors.
    for (name, shape, values) in int8 {
        let scales = store.vector_any(&format!("{name}_scale")).ok_or_else(|| invalid_model(format!("int8 tensor `{name}` has no F32 `{name}_scale`")))?;
        let rows = shape.first().copied().unwrap_or(1);
        if !(scales.len() == 1 || scales.len() == rows) || scales.iter().any(|s| !s.is_finite()) {
            return Err(invalid_model(format!("`{name}_scale` has {} values, expected 1 or {rows} finite ones (one per row of {shape:?})", scales.len())));
        }
        store.insert(name, Tensor { shape, data: TensorData::Int8 { values, scales } });
    }
    Ok(store)
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
        let views: Vec<_> = tensors.iter().map(|(n, d, s, b)| (n.to_string(), safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap())).collect();
        safetensors::serialize(views, None).unwrap()
    }

    #[test]
    fn int8_with_per_row_scales_stays_quantised_and_dequantises_by_row() {
        let scales: Vec<u8> = [0.5f32, 2.0].iter().flat_map(|s| s.to_le_bytes()).collect();
        let bytes = file(&[("w", Dtype::I8, vec![2, 3], vec![1, 2, 3, 0xff, 0xfe, 0xfd]), ("w_scale", Dtype::F32, vec![2], scales)]);
        let mut store = read(&bytes).unwrap();
        assert!(!store.contains("w_scale"));
        let q = store.quantized_matrix("w", 2, 3).unwrap();
        assert_eq!((q.scales.as_slice(), q.data.as_slice()), (&[0.5, 2.0][..], &[1i8, 2, 3, -1, -2, -3][..]));
        let mut store = read(&bytes).unwrap();
        assert_eq!(store.matrix("w", 2, 3).unwrap().as_slice(), &[0.5, 1.0, 1.5, -2.0, -4.0, -6.0]);
    }

    #[test]
    fn int8_without_or_with_wrong_scales_is_an_error() {
        let no_scale = file(&[("w", Dtype::I8, vec![2, 2], vec![1, 2, 3, 4])]);
        assert!(read(&no_scale).unwrap_err().to_string().contains("w_scale"));
        let three = file(&[("w", Dtype::I8, vec![2, 2], vec![1, 2, 3, 4]), ("w_scale", Dtype::F32, vec![3], vec![0; 12])]);
        assert!(read(&three).is_err());
    }
}

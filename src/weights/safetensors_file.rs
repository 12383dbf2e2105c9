//! Hugging Face `.safetensors` via the `safetensors` crate. F32, F16 and BF16 tensors become
//! f32; integer tensors (e.g. BERT's `position_ids` buffer) are not weights and are skipped.

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
        _ => 0,
    });
    let needed = floats.fold(bytes.len() as u64, u64::saturating_add);
    if needed > MEMORY_BUDGET_BYTES {
        return Err(invalid_model(format!("the safetensors weights need {} in memory as f32, more than {}", human_bytes(needed), budget())));
    }
    let mut store = TensorStore::default();
    for (name, view) in tensors {
        let raw = view.data();
        let data: Vec<f32> = match view.dtype() {
            Dtype::F32 => raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
            Dtype::F16 => raw.chunks_exact(2).map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]]))).collect(),
            Dtype::BF16 => raw.chunks_exact(2).map(|b| f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16)).collect(),
            _ => continue,
        };
        store.insert(name, Tensor { shape: view.shape().to_vec(), data: TensorData::F32(data) });
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
}

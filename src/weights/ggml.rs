//! GGML's block formats (F32, F16, Q4_0, Q4_1, Q8_0) as GGUF files store tensors: their sizes,
//! their decoding, and [`BlockMat`], a weight kept in its file's bytes. The GEMM over blocks is
//! in [`crate::tensor`] (`linear_blocks`); the GGUF reader is [`super::gguf`].

/// IEEE half → single, including subnormals, infinities and NaN.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let frac = (h & 0x3ff) as u32;
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: value = frac · 2^-24.
            let v = frac as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, _) => sign | 0x7f80_0000 | (frac << 13),
        _ => sign | ((exp + 112) << 23) | (frac << 13),
    };
    f32::from_bits(bits)
}

/// How a row of a [`BlockMat`] is stored: GGML's formats, `block_len` values in `block_bytes`.
/// Q4_0: f16 d, 16 bytes of nibbles, value = d·(q − 8). Q4_1: f16 d, f16 m, 16 bytes of
/// nibbles, value = d·q + m. Q8_0: f16 d, 32 int8, value = d·q. In the nibble formats value j
/// of a block is the low nibble of byte j, value j + 16 the high nibble of byte j.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockFormat {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q8_0,
}

impl BlockFormat {
    pub fn block_len(self) -> usize {
        match self {
            BlockFormat::F32 | BlockFormat::F16 => 1,
            BlockFormat::Q4_0 | BlockFormat::Q4_1 | BlockFormat::Q8_0 => 32,
        }
    }

    pub fn block_bytes(self) -> usize {
        match self {
            BlockFormat::F32 => 4,
            BlockFormat::F16 => 2,
            BlockFormat::Q4_0 => 18,
            BlockFormat::Q4_1 => 20,
            BlockFormat::Q8_0 => 34,
        }
    }

    /// Bytes of a row of `cols` values; `None` when `cols` is not a whole number of blocks or
    /// the size overflows.
    pub fn row_bytes(self, cols: usize) -> Option<usize> {
        (cols % self.block_len() == 0)
            .then(|| (cols / self.block_len()).checked_mul(self.block_bytes()))
            .flatten()
    }

    /// Whether every value that `bytes` (whole blocks) decodes to is finite: a float whose
    /// exponent bits are all ones (NaN, ∞) is the only way to get one that is not, so the f16
    /// scales (and f32/f16 values) are read as bits, without decoding.
    pub fn all_finite(self, bytes: &[u8]) -> bool {
        let f16_ok = |b: &[u8]| u16::from_le_bytes([b[0], b[1]]) & 0x7c00 != 0x7c00;
        match self {
            BlockFormat::F32 => bytes
                .chunks_exact(4)
                .all(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & 0x7f80_0000 != 0x7f80_0000),
            BlockFormat::F16 => bytes.chunks_exact(2).all(f16_ok),
            BlockFormat::Q4_0 | BlockFormat::Q8_0 => {
                bytes.chunks_exact(self.block_bytes()).all(f16_ok)
            }
            BlockFormat::Q4_1 => bytes.chunks_exact(20).all(|b| f16_ok(b) && f16_ok(&b[2..])),
        }
    }

    /// Decodes one row (`bytes.len() == row_bytes(out.len())`) into `out`.
    pub fn dequantize(self, bytes: &[u8], out: &mut [f32]) {
        let half = |b: &[u8]| f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        match self {
            BlockFormat::F32 => out
                .iter_mut()
                .zip(bytes.chunks_exact(4))
                .for_each(|(o, b)| *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            BlockFormat::F16 => {
                out.iter_mut().zip(bytes.chunks_exact(2)).for_each(|(o, b)| *o = half(b))
            }
            BlockFormat::Q4_0 | BlockFormat::Q4_1 => {
                let q_at = if self == BlockFormat::Q4_0 { 2 } else { 4 };
                for (o, b) in out.chunks_exact_mut(32).zip(bytes.chunks_exact(self.block_bytes())) {
                    let d = half(b);
                    let m = if self == BlockFormat::Q4_0 { -8.0 * d } else { half(&b[2..]) };
                    let (lo, hi) = o.split_at_mut(16);
                    for ((l, h), &q) in lo.iter_mut().zip(hi.iter_mut()).zip(&b[q_at..q_at + 16]) {
                        *l = (q & 0x0f) as f32 * d + m;
                        *h = (q >> 4) as f32 * d + m;
                    }
                }
            }
            BlockFormat::Q8_0 => {
                for (o, b) in out.chunks_exact_mut(32).zip(bytes.chunks_exact(34)) {
                    let d = half(b);
                    for (v, &q) in o.iter_mut().zip(&b[2..34]) {
                        *v = q as i8 as f32 * d;
                    }
                }
            }
        }
    }
}

/// A `[rows, cols]` weight kept in its file's block format (GGUF), inside the file's bytes
/// (shared, not copied: SmolLM2's 98 MB of Q4_1 stay 98 MB instead of 540 MB as f32). The GEMM
/// decodes a panel of rows at a time next to the kernel ([`crate::tensor::linear_blocks`]).
#[derive(Clone, Debug)]
pub struct BlockMat {
    pub rows: usize,
    pub cols: usize,
    pub format: BlockFormat,
    bytes: std::sync::Arc<Vec<u8>>,
    offset: usize,
    row_bytes: usize,
}

impl BlockMat {
    /// `None` when the rows do not fit in `bytes` from `offset` or `cols` is not whole blocks.
    pub fn new(
        rows: usize,
        cols: usize,
        format: BlockFormat,
        bytes: std::sync::Arc<Vec<u8>>,
        offset: usize,
    ) -> Option<BlockMat> {
        let row_bytes = format.row_bytes(cols)?;
        let end = row_bytes.checked_mul(rows)?.checked_add(offset)?;
        (end <= bytes.len()).then_some(BlockMat { rows, cols, format, bytes, offset, row_bytes })
    }

    /// Whether every value of the matrix is finite (see [`BlockFormat::all_finite`]).
    pub fn all_finite(&self) -> bool {
        self.format.all_finite(&self.bytes[self.offset..self.offset + self.rows * self.row_bytes])
    }

    /// The bytes of row `r`, still in blocks.
    pub fn row_bytes_of(&self, r: usize) -> &[u8] {
        let s = self.offset + r * self.row_bytes;
        &self.bytes[s..s + self.row_bytes]
    }

    /// Row `r` decoded into `out` (`cols` values): an embedding lookup.
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) {
        let s = self.offset + r * self.row_bytes;
        self.format.dequantize(&self.bytes[s..s + self.row_bytes], &mut out[..self.cols]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_formats_decode_as_ggml_defines_them() {
        // One Q4_1 block: d = 0.5, m = -1, nibbles 0..15 low, 15..0 high.
        let mut b = Vec::new();
        b.extend_from_slice(&0x3800u16.to_le_bytes()); // 0.5
        b.extend_from_slice(&0xbc00u16.to_le_bytes()); // -1.0
        b.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
        let mut out = [0.0f32; 32];
        BlockFormat::Q4_1.dequantize(&b, &mut out);
        assert_eq!(out[0], -1.0);
        assert_eq!(out[15], 6.5);
        assert_eq!(out[16], 6.5);
        assert_eq!(out[31], -1.0);
        // Q8_0: d = 2, q = j - 16.
        let mut q8 = 0x4000u16.to_le_bytes().to_vec();
        q8.extend((0..32i32).map(|j| (j - 16) as i8 as u8));
        BlockFormat::Q8_0.dequantize(&q8, &mut out);
        assert_eq!((out[0], out[16], out[31]), (-32.0, 0.0, 30.0));
        // Q4_0: d = 1, value = q - 8.
        let mut q4 = 0x3c00u16.to_le_bytes().to_vec();
        q4.extend([0x80u8; 16]);
        BlockFormat::Q4_0.dequantize(&q4, &mut out);
        assert_eq!((out[0], out[16]), (-8.0, 0.0));
        assert_eq!(BlockFormat::Q4_1.row_bytes(64), Some(40));
        assert_eq!(BlockFormat::Q4_1.row_bytes(33), None);
    }

    #[test]
    fn half_precision_decodes() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
        assert!(f16_to_f32(0x7c00).is_infinite());
    }
}

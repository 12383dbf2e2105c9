//! Four f32 lanes, the unit of every kernel: one wasm `v128` under SIMD128 (explicit
//! intrinsics), four independent floats elsewhere (LLVM's SLP vectoriser turns them into
//! SSE/NEON). [`Element`] is what the right-hand GEMM operand may hold.

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod imp {
    use core::arch::wasm32::*;

    /// Four f32 lanes in one wasm `v128`.
    #[derive(Clone, Copy)]
    pub struct F4(v128);

    impl F4 {
        #[inline(always)]
        pub fn zero() -> F4 {
            F4(f32x4_splat(0.0))
        }
        /// # Safety
        /// `p` must point to 4 readable f32 values.
        #[inline(always)]
        pub unsafe fn load(p: *const f32) -> F4 {
            F4(v128_load(p as *const v128))
        }
        /// # Safety
        /// `p` must point to 4 readable i8 values.
        #[inline(always)]
        pub unsafe fn load_i8(p: *const i8) -> F4 {
            let bytes = v128_load32_zero(p as *const u32);
            F4(f32x4_convert_i32x4(i32x4_extend_low_i16x8(i16x8_extend_low_i8x16(bytes))))
        }
        #[inline(always)]
        pub fn splat(x: f32) -> F4 {
            F4(f32x4_splat(x))
        }
        /// # Safety
        /// `p` must point to 16 readable bytes. Their low nibbles then their high nibbles, as
        /// 32 values 0..15 (a Q4 block's order).
        #[inline(always)]
        pub unsafe fn nibbles32(p: *const u8) -> [F4; 8] {
            let bytes = v128_load(p as *const v128);
            let widen = |v: v128| {
                let (l, h) = (u16x8_extend_low_u8x16(v), u16x8_extend_high_u8x16(v));
                [l, h].map(|w| {
                    [u32x4_extend_low_u16x8(w), u32x4_extend_high_u16x8(w)]
                        .map(|x| F4(f32x4_convert_u32x4(x)))
                })
            };
            let ([a, b], [c, d]) =
                (widen(v128_and(bytes, u8x16_splat(0x0f)))[0], widen(u8x16_shr(bytes, 4))[0]);
            let ([e, f], [g, h]) =
                (widen(v128_and(bytes, u8x16_splat(0x0f)))[1], widen(u8x16_shr(bytes, 4))[1]);
            [a, b, e, f, c, d, g, h]
        }
        /// # Safety
        /// `p` must point to 32 readable bytes, taken as int8.
        #[inline(always)]
        pub unsafe fn int8x32(p: *const u8) -> [F4; 8] {
            let widen = |v: v128| {
                let (l, h) = (i16x8_extend_low_i8x16(v), i16x8_extend_high_i8x16(v));
                [l, h].map(|w| {
                    [i32x4_extend_low_i16x8(w), i32x4_extend_high_i16x8(w)]
                        .map(|x| F4(f32x4_convert_i32x4(x)))
                })
            };
            let [[a, b], [c, d]] = widen(v128_load(p as *const v128));
            let [[e, f], [g, h]] = widen(v128_load(p.add(16) as *const v128));
            [a, b, c, d, e, f, g, h]
        }
        /// `self + a·b`. The relaxed-SIMD build (`+relaxed-simd`, pkg/relaxed/) lets the engine fuse
        /// it into one FMA (one rounding instead of two; which one is the engine's choice, fixed
        /// for a given machine, so a value still never depends on the block that computed it).
        #[inline(always)]
        pub fn mul_add(self, a: F4, b: F4) -> F4 {
            // Stable since Rust 1.82: only this build needs it (the crate's rust-version, 1.80,
            // is what the plain builds need).
            #[cfg(target_feature = "relaxed-simd")]
            #[allow(clippy::incompatible_msrv)]
            let sum = f32x4_relaxed_madd(a.0, b.0, self.0);
            #[cfg(not(target_feature = "relaxed-simd"))]
            let sum = f32x4_add(self.0, f32x4_mul(a.0, b.0));
            F4(sum)
        }
        #[inline(always)]
        pub fn sum(self) -> f32 {
            let v = self.0;
            (f32x4_extract_lane::<0>(v) + f32x4_extract_lane::<1>(v))
                + (f32x4_extract_lane::<2>(v) + f32x4_extract_lane::<3>(v))
        }
    }
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
mod imp {
    /// Four independent f32 lanes; LLVM's SLP vectoriser turns these into SSE/NEON ops.
    #[derive(Clone, Copy)]
    pub struct F4([f32; 4]);

    impl F4 {
        #[inline(always)]
        pub fn zero() -> F4 {
            F4([0.0; 4])
        }
        /// # Safety
        /// `p` must point to 4 readable f32 values.
        #[inline(always)]
        pub unsafe fn load(p: *const f32) -> F4 {
            F4([*p, *p.add(1), *p.add(2), *p.add(3)])
        }
        /// # Safety
        /// `p` must point to 4 readable i8 values.
        #[inline(always)]
        pub unsafe fn load_i8(p: *const i8) -> F4 {
            F4([*p as f32, *p.add(1) as f32, *p.add(2) as f32, *p.add(3) as f32])
        }
        #[inline(always)]
        pub fn splat(x: f32) -> F4 {
            F4([x; 4])
        }
        /// # Safety
        /// `p` must point to 16 readable bytes. Their low nibbles then their high nibbles, as
        /// 32 values 0..15 (a Q4 block's order).
        #[inline(always)]
        pub unsafe fn nibbles32(p: *const u8) -> [F4; 8] {
            std::array::from_fn(|v| {
                let (byte, shift) = ((v % 4) * 4, if v < 4 { 0 } else { 4 });
                F4(std::array::from_fn(|l| ((*p.add(byte + l) >> shift) & 0x0f) as f32))
            })
        }
        /// # Safety
        /// `p` must point to 32 readable bytes, taken as int8.
        #[inline(always)]
        pub unsafe fn int8x32(p: *const u8) -> [F4; 8] {
            std::array::from_fn(|v| F4(std::array::from_fn(|l| *p.add(4 * v + l) as i8 as f32)))
        }
        #[inline(always)]
        pub fn mul_add(self, a: F4, b: F4) -> F4 {
            let (x, a, b) = (self.0, a.0, b.0);
            F4([x[0] + a[0] * b[0], x[1] + a[1] * b[1], x[2] + a[2] * b[2], x[3] + a[3] * b[3]])
        }
        #[inline(always)]
        pub fn sum(self) -> f32 {
            let v = self.0;
            (v[0] + v[1]) + (v[2] + v[3])
        }
    }
}

pub use imp::F4;

/// Element types the right-hand GEMM operand may hold: f32, or int8 (scaled after the sum).
pub trait Element: Copy + Sync {
    /// # Safety
    /// `p` must point to 4 readable values.
    unsafe fn load4(p: *const Self) -> F4;
    fn to_f32(self) -> f32;
}

impl Element for f32 {
    #[inline(always)]
    unsafe fn load4(p: *const f32) -> F4 {
        F4::load(p)
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
}

impl Element for i8 {
    #[inline(always)]
    unsafe fn load4(p: *const i8) -> F4 {
        F4::load_i8(p)
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
}

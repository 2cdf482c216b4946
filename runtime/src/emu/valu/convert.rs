//! Conversions between the vector ALU's number formats, with the hardware's rules: float to
//! integer truncates and saturates with NaN giving 0 (Rust's `as` has exactly these rules),
//! integer to float rounds to nearest even, `rpi`/`flr` variants, normalised (snorm/unorm) and
//! packed forms, the f16 round-toward-zero pack, and gfx942's 8-bit float formats (FP8 = E4M3 and
//! BF8 = E5M2, both "FNUZ": no infinities, no negative zero, 0x80 is the only NaN).

use super::half;

/// `v_cvt_i32_f32`: truncate, saturate, NaN -> 0.
#[inline(always)]
pub fn f32_to_i32(x: f32) -> i32 {
    x as i32
}

/// `v_cvt_u32_f32`: truncate, saturate (negatives -> 0), NaN -> 0.
#[inline(always)]
pub fn f32_to_u32(x: f32) -> u32 {
    x as u32
}

/// `v_cvt_i32_f64`.
#[inline(always)]
pub fn f64_to_i32(x: f64) -> i32 {
    x as i32
}

/// `v_cvt_u32_f64`.
#[inline(always)]
pub fn f64_to_u32(x: f64) -> u32 {
    x as u32
}

/// `v_cvt_rpi_i32_f32`: `floor(x + 0.5)` (the addition rounds in f32, as the pseudo-code says).
#[inline(always)]
pub fn f32_to_i32_rpi(x: f32) -> i32 {
    (x + 0.5).floor() as i32
}

/// `v_cvt_flr_i32_f32`: `floor(x)`.
#[inline(always)]
pub fn f32_to_i32_flr(x: f32) -> i32 {
    x.floor() as i32
}

/// `v_cvt_off_f32_i4`: the low 4 bits as a signed fixed-point number in sixteenths.
#[inline(always)]
pub fn off_f32_i4(x: u32) -> f32 {
    (((x & 0xf) as i32) << 28 >> 28) as f32 * 0.0625
}

/// `v_cvt_u16_f16`: truncate, saturate, NaN -> 0.
#[inline(always)]
pub fn f16_to_u16(x: u16) -> u16 {
    half::to_f32(x) as u16
}

/// `v_cvt_i16_f16`.
#[inline(always)]
pub fn f16_to_i16(x: u16) -> u16 {
    half::to_f32(x) as i16 as u16
}

/// `v_cvt_f16_u16`: round to nearest even (65520 and above become infinity).
#[inline(always)]
pub fn u16_to_f16(x: u16) -> u16 {
    half::from_f32(x as f32)
}

/// `v_cvt_f16_i16`.
#[inline(always)]
pub fn i16_to_f16(x: u16) -> u16 {
    half::from_f32(x as i16 as f32)
}

/// Signed normalised: `round(clamp(x, -1, 1) * 32767)` (ties to even), NaN -> 0.
#[inline(always)]
pub fn f32_to_snorm16(x: f32) -> u16 {
    if x.is_nan() {
        return 0;
    }
    (x.clamp(-1.0, 1.0) * 32767.0).round_ties_even() as i16 as u16
}

/// Unsigned normalised: `round(clamp(x, 0, 1) * 65535)`, NaN -> 0.
#[inline(always)]
pub fn f32_to_unorm16(x: f32) -> u16 {
    if x.is_nan() {
        return 0;
    }
    (x.clamp(0.0, 1.0) * 65535.0).round_ties_even() as u16
}

/// `f32_to_u8` of `v_cvt_pk_u8_f32`: round to nearest even, saturate to [0, 255], NaN -> 0.
#[inline(always)]
pub fn f32_to_u8(x: f32) -> u32 {
    if x.is_nan() {
        return 0;
    }
    x.round_ties_even().clamp(0.0, 255.0) as u32
}

/// `v_cvt_pk_u8_f32 D, S0, S1, S2`: converts S0 to a byte and inserts it at byte `S1[1:0]` of S2.
#[inline(always)]
pub fn pk_u8_f32(s0: f32, s1: u32, s2: u32) -> u32 {
    let sh = (s1 & 3) * 8;
    (s2 & !(0xff << sh)) | (f32_to_u8(s0) << sh)
}

/// `v_cvt_pk_u16_u32`: both sources saturated to u16, packed.
#[inline(always)]
pub fn pk_u16_u32(a: u32, b: u32) -> u32 {
    a.min(0xffff) | (b.min(0xffff) << 16)
}

/// `v_cvt_pk_i16_i32`: both sources saturated to i16, packed.
#[inline(always)]
pub fn pk_i16_i32(a: u32, b: u32) -> u32 {
    let s = |v: u32| (v as i32).clamp(-32768, 32767) as i16 as u16 as u32;
    s(a) | (s(b) << 16)
}

/// `v_sat_pk_u8_i16`: two i16 halves saturated to u8, packed into the low 16 bits.
#[inline(always)]
pub fn sat_pk_u8_i16(x: u32) -> u32 {
    let s = |v: u16| (v as i16).clamp(0, 255) as u32;
    s(x as u16) | (s((x >> 16) as u16) << 8)
}

/// An 8-bit float format of gfx942 (OCP-like but "FNUZ": bias one larger, no inf, no -0,
/// 0x80 = NaN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp8 {
    /// FP8: E4M3, bias 8, largest finite 240.
    E4M3,
    /// BF8: E5M2, bias 16, largest finite 57344.
    E5M2,
}

impl Fp8 {
    fn mant_bits(self) -> u32 {
        match self {
            Fp8::E4M3 => 3,
            Fp8::E5M2 => 2,
        }
    }
    fn bias(self) -> i32 {
        match self {
            Fp8::E4M3 => 8,
            Fp8::E5M2 => 16,
        }
    }

    /// Decodes an 8-bit value to f32 (exact).
    pub fn to_f32(self, x: u8) -> f32 {
        if x == 0x80 {
            return f32::NAN;
        }
        let m = self.mant_bits();
        let sign = if x & 0x80 != 0 { -1.0 } else { 1.0 };
        let e = ((x & 0x7f) >> m) as i32;
        let f = (x & ((1 << m) - 1)) as f32;
        let mag = if e == 0 {
            f * 2f32.powi(1 - self.bias() - m as i32)
        } else {
            (1.0 + f / (1 << m) as f32) * 2f32.powi(e - self.bias())
        };
        sign * mag
    }

    /// Largest finite magnitude.
    fn max_finite(self) -> f32 {
        self.to_f32(0x7f)
    }

    /// Encodes an f32 with round-to-nearest-even. Out-of-range values and NaN give 0x80 (NaN)
    /// unless `saturate`, which clamps finite overflow to the largest finite value.
    pub fn from_f32(self, x: f32, saturate: bool) -> u8 {
        if x.is_nan() {
            return 0x80;
        }
        let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
        let a = x.abs();
        let max = self.max_finite();
        // Smallest denormal step and exponent range.
        let m = self.mant_bits() as i32;
        let min_exp = 1 - self.bias(); // exponent of the smallest normal
                                       // Pick the quantum of a's binade (denormals share min_exp).
        let e = if a == 0.0 {
            min_exp
        } else {
            (a.log2().floor() as i32).max(min_exp)
        };
        let e = if a != 0.0 && 2f32.powi(e) > a {
            e - 1
        } else {
            e
        }
        .max(min_exp);
        let quantum = 2f32.powi(e - m);
        let q = (a / quantum).round_ties_even() * quantum; // exact: power-of-two scaling
        if q > max || a.is_infinite() {
            if saturate {
                return sign | 0x7f;
            }
            return 0x80;
        }
        if q == 0.0 {
            return 0; // no negative zero in FNUZ formats
        }
        // Search the 127 positive codes (few enough to keep this obviously right).
        let code = (1u8..=0x7f).find(|&c| self.to_f32(c) == q).unwrap_or(0x7f);
        sign | code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_to_int_saturates_and_maps_nan_to_zero() {
        assert_eq!(f32_to_i32(f32::NAN), 0);
        assert_eq!(f32_to_i32(3e9), i32::MAX);
        assert_eq!(f32_to_i32(-3e9), i32::MIN);
        assert_eq!(f32_to_i32(-2.7), -2);
        assert_eq!(f32_to_u32(-5.0), 0);
        assert_eq!(f32_to_u32(5e9), u32::MAX);
        assert_eq!(f64_to_i32(-1e300), i32::MIN);
        assert_eq!(f32_to_i32_rpi(2.5), 3);
        assert_eq!(f32_to_i32_rpi(-2.5), -2);
        assert_eq!(f32_to_i32_flr(-2.5), -3);
        assert_eq!(f16_to_u16(0xbc00), 0);
        assert_eq!(f16_to_i16(0xfc00), 0x8000); // -inf saturates to i16::MIN
        assert_eq!(f16_to_u16(0x7e00), 0);
    }

    #[test]
    fn small_formats_pack_and_saturate() {
        assert_eq!(off_f32_i4(0x7), 0.4375);
        assert_eq!(off_f32_i4(0x8), -0.5);
        assert_eq!(off_f32_i4(0xf), -0.0625);
        assert_eq!(f32_to_snorm16(-2.0), 0x8001);
        assert_eq!(f32_to_snorm16(0.5), 16384); // 16383.5 ties to even
        assert_eq!(f32_to_unorm16(1.5), 0xffff);
        assert_eq!(pk_u8_f32(300.0, 2, 0x1122_3344), 0x11ff_3344);
        assert_eq!(pk_u16_u32(0x1_0000, 5), 0x0005_ffff);
        assert_eq!(pk_i16_i32(-40000i32 as u32, 40000), 0x7fff_8000);
        assert_eq!(sat_pk_u8_i16(0xff00_0120), 0x00ff);
        assert_eq!(u16_to_f16(65535), 0x7c00);
        assert_eq!(i16_to_f16(0xffff), 0xbc00);
    }

    #[test]
    fn fp8_round_trips_every_code_and_rounds_to_nearest_even() {
        for f in [Fp8::E4M3, Fp8::E5M2] {
            for c in 0u8..=255 {
                if c == 0x80 {
                    assert!(f.to_f32(c).is_nan());
                    continue;
                }
                let v = f.to_f32(c);
                let back = f.from_f32(v, false);
                // 0x00 is the only zero; every other code decodes to a distinct value.
                assert_eq!(back, c, "{f:?} code {c:#x} = {v}");
            }
        }
        assert_eq!(Fp8::E4M3.to_f32(0x7f), 240.0);
        assert_eq!(Fp8::E5M2.to_f32(0x7f), 57344.0);
        assert_eq!(Fp8::E4M3.from_f32(1000.0, false), 0x80);
        assert_eq!(Fp8::E4M3.from_f32(1000.0, true), 0x7f);
        assert_eq!(Fp8::E4M3.from_f32(-1000.0, true), 0xff);
        // 1 + 1/16 lies halfway between 1.0 and 1.125 in E4M3: ties to even gives 1.0.
        assert_eq!(Fp8::E4M3.to_f32(Fp8::E4M3.from_f32(1.0625, false)), 1.0);
        assert_eq!(Fp8::E4M3.to_f32(Fp8::E4M3.from_f32(1.0626, false)), 1.125);
        assert_eq!(Fp8::E4M3.from_f32(-0.0, false), 0);
    }
}

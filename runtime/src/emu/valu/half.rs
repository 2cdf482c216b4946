//! f16 lane math (VOP1/VOP2/VOP3 `_f16` opcodes and the halves of packed VOP3P math) and the
//! 16-bit halves of a 32-bit lane. Values travel as `u16` bit patterns; arithmetic is done in f32
//! (add, sub, mul: exact before the one rounding to f16, since 24 >= 2*11 + 2) or in f64 with
//! round-to-odd (fma), so every result is the correctly rounded IEEE f16 value.

use ::half::f16;

/// The NaN, denormal and min/max rules are the width-generic ones of `float.rs`.
pub use super::float::{flush, is_nan, is_snan, max, med3, min};

/// f16 sign bit.
pub const F16_SIGN: u16 = 0x8000;

/// Widens an f16 bit pattern to f32 (exact).
#[inline(always)]
pub fn to_f32(x: u16) -> f32 {
    f16::from_bits(x).to_f32()
}

/// Rounds an f32 to the nearest f16 (ties to even), as `v_cvt_f16_f32` does.
#[inline(always)]
pub fn from_f32(x: f32) -> u16 {
    f16::from_f32(x).to_bits()
}

/// Rounds an f64 to the nearest f16 (ties to even) with a single rounding. (`half`'s `from_f64`
/// goes through f32 and can double-round, e.g. 10468 + 2^-11 becomes 10464 instead of 10472.)
pub fn from_f64(x: f64) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 48) & 0x8000) as u16;
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let man = bits & 0x000f_ffff_ffff_ffff;
    if exp == 0x7ff {
        // Infinity, or NaN quietened with the top payload bits kept.
        return if man == 0 {
            sign | 0x7c00
        } else {
            sign | 0x7e00 | (man >> 42) as u16
        };
    }
    if exp == 0 {
        return sign; // f64 denormals are far below the f16 range
    }
    let e = exp - 1023;
    if e > 15 {
        return sign | 0x7c00;
    }
    let sig = man | (1u64 << 52);
    let shift = if e >= -14 { 42 } else { 42 + (-14 - e) } as u32;
    if shift >= 64 {
        return sign;
    }
    let half_ulp = 1u64 << (shift - 1);
    let rem = sig & ((1u64 << shift) - 1);
    let mut q = sig >> shift;
    if rem > half_ulp || (rem == half_ulp && q & 1 == 1) {
        q += 1;
    }
    // A carry out of the significand moves into the exponent field naturally.
    let r = if e >= -14 {
        (((e + 15) as u64) << 10) + q - 1024
    } else {
        q
    };
    if r >= 0x7c00 {
        sign | 0x7c00
    } else {
        sign | r as u16
    }
}

/// `a + b` in f16.
#[inline(always)]
pub fn add(a: u16, b: u16) -> u16 {
    from_f32(to_f32(a) + to_f32(b))
}

/// `a - b` in f16.
#[inline(always)]
pub fn sub(a: u16, b: u16) -> u16 {
    from_f32(to_f32(a) - to_f32(b))
}

/// `a * b` in f16.
#[inline(always)]
pub fn mul(a: u16, b: u16) -> u16 {
    from_f32(to_f32(a) * to_f32(b))
}

/// Fused `a * b + c` in f16, rounded once: the product is exact in f64, the sum is rounded to odd
/// in f64 (TwoSum) and then to f16.
#[inline(always)]
pub fn fma(a: u16, b: u16, c: u16) -> u16 {
    let p = to_f32(a) as f64 * to_f32(b) as f64;
    let cc = to_f32(c) as f64;
    let s = p + cc;
    if !s.is_finite() {
        return from_f64(s);
    }
    let bv = s - p;
    let err = (p - (s - bv)) + (cc - bv);
    let mut bits = s.to_bits();
    if err != 0.0 && bits & 1 == 0 {
        if (err > 0.0) == (s > 0.0) {
            bits += 1;
        } else {
            bits -= 1;
        }
    }
    from_f64(f64::from_bits(bits))
}

/// Unfused `a * b + c` (`v_mad_f16`, `v_mac_f16`, `v_mad_legacy_f16`): two roundings.
#[inline(always)]
pub fn mad(a: u16, b: u16, c: u16) -> u16 {
    add(mul(a, b), c)
}

/// `v_ldexp_f16`: `x * 2^e` rounded once (the f16 result is exact in f64 before rounding).
#[inline]
pub fn ldexp(x: u16, e: i32) -> u16 {
    let e = e.clamp(-100, 100);
    from_f64(to_f32(x) as f64 * 2f64.powi(e))
}

/// `v_fract_f16`: `x - floor(x)` kept below 1.0; infinities give NaN.
pub fn fract(x: u16) -> u16 {
    let f = to_f32(x);
    if f.is_infinite() {
        return 0x7e00;
    }
    if f.is_nan() {
        return x | 0x0200;
    }
    let r = f - f.floor(); // exact in f32 for an f16 input
    let r16 = from_f32(r);
    if r16 == 0x3c00 {
        0x3bff // largest f16 below 1.0
    } else {
        r16
    }
}

/// Applies a per-lane f32 function to an f16 through f32 and rounds back (used for unary ops whose
/// f32 result is exact or correctly rounded: floor, ceil, trunc, rndne, sqrt).
#[inline(always)]
pub fn via_f32(x: u16, f: impl Fn(f32) -> f32) -> u16 {
    from_f32(f(to_f32(x)))
}

/// `v_frexp_mant_f16`.
pub fn frexp_mant(x: u16) -> u16 {
    let f = to_f32(x);
    if f == 0.0 || !f.is_finite() {
        return x;
    }
    from_f32(super::float::frexp_f32(f).0)
}

/// `v_frexp_exp_i16_f16`: the exponent as an i16 pattern; 0 for 0, inf, NaN.
pub fn frexp_exp(x: u16) -> u16 {
    let f = to_f32(x);
    if f == 0.0 || !f.is_finite() {
        return 0;
    }
    super::float::frexp_f32(f).1 as i16 as u16
}

/// Output modifiers of VOP3 f16 results: omod and clamp to [0, 1] (NaN -> 0 in DX10 mode).
#[inline(always)]
pub fn omod_clamp(x: u16, omod: u8, clamp: bool, dx10: bool) -> u16 {
    if omod == 0 && !clamp {
        return x;
    }
    let y = match omod {
        1 => from_f32(to_f32(x) * 2.0),
        2 => from_f32(to_f32(x) * 4.0),
        3 => from_f32(to_f32(x) * 0.5),
        _ => x,
    };
    if clamp {
        if is_nan(y) {
            return if dx10 { 0 } else { y };
        }
        from_f32(to_f32(y).clamp(0.0, 1.0))
    } else {
        y
    }
}

/// Rounds an f32 to f16 towards zero (`v_cvt_pkrtz_f16_f32`): the nearest-even result, stepped one
/// ulp towards zero when it rounded away from zero (which also turns overflow into 65504).
#[inline]
pub fn from_f32_rtz(x: f32) -> u16 {
    let r = from_f32(x);
    if x.is_nan() || x.is_infinite() {
        return r;
    }
    if to_f32(r).abs() > x.abs() {
        r - 1 // magnitude one ulp smaller, same sign (never crosses zero: |r| > |x| >= 0)
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact reference: f16 values are integers times 2^-24, so `a*b + c` is an integer times
    /// 2^-48 that fits an i128; round it to f16 by hand (ties to even).
    fn fma_reference(a: u16, b: u16, c: u16) -> u16 {
        let (fa, fb, fc) = (to_f32(a), to_f32(b), to_f32(c));
        if !(fa.is_finite() && fb.is_finite() && fc.is_finite()) {
            return from_f64(fa as f64 * fb as f64 + fc as f64);
        }
        let units = |f: f32| (f as f64 * 2f64.powi(24)) as i128; // exact
        let exact: i128 = units(fa) * units(fb) + units(fc) * (1i128 << 24); // units of 2^-48
        if exact == 0 {
            // Sign of an exact zero sum: -0 only if both addends are -0 (round to nearest).
            let prod_neg = (fa * fb).is_sign_negative()
                || (fa * fb == 0.0 && (fa.is_sign_negative() != fb.is_sign_negative()));
            return if prod_neg && fc.is_sign_negative() {
                0x8000
            } else {
                0
            };
        }
        let neg = exact < 0;
        let mag = exact.unsigned_abs();
        // value = mag * 2^-48; find the f16 grid: exponent e with 2^e <= value < 2^(e+1).
        let top = 127 - mag.leading_zeros() as i32; // value in [2^(top-48), 2^(top-47))
        let e = (top - 48).max(-14); // f16 denormals share exponent -14
        let ulp_shift = e - 10 + 48; // ulp = 2^(e-10) = 2^(ulp_shift) units
        let (q, rem, half) = if ulp_shift > 0 {
            let s = ulp_shift as u32;
            (mag >> s, mag & ((1u128 << s) - 1), 1u128 << (s - 1))
        } else {
            (mag << (-ulp_shift) as u32, 0, 1)
        };
        let mut q = q;
        if rem > half || (rem == half && q & 1 == 1) {
            q += 1;
        }
        let v = q as f64 * 2f64.powi(e - 10);
        let r = from_f64(v); // exact: q fits 11 bits (or overflows to the next binade exactly)
        if neg {
            r | 0x8000
        } else {
            r
        }
    }

    #[test]
    fn f16_fma_is_rounded_once() {
        let mut s = 12345u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for _ in 0..300_000 {
            let r = next();
            let (a, b, c) = (r as u16, (r >> 16) as u16, (r >> 32) as u16);
            if is_nan(a) || is_nan(b) || is_nan(c) {
                continue;
            }
            let want = fma_reference(a, b, c);
            let got = fma(a, b, c);
            assert!(
                got == want || (is_nan(got) && is_nan(want)),
                "fma({a:#x}, {b:#x}, {c:#x}) = {got:#x}, want {want:#x}"
            );
        }
    }

    #[test]
    fn f64_to_f16_rounds_once() {
        assert_eq!(from_f64(10468.0 + 2f64.powi(-11)), 0x711d);
        assert_eq!(from_f64(65519.99), 0x7bff);
        assert_eq!(from_f64(65520.0), 0x7c00);
        assert_eq!(from_f64(2f64.powi(-25)), 0); // half the smallest denormal: ties to even
        assert_eq!(from_f64(2f64.powi(-25) * 1.0001), 1);
        assert_eq!(from_f64(-1.5 * 2f64.powi(-24)), 0x8002);
        assert_eq!(from_f64(f64::NAN) & 0x7e00, 0x7e00);
        // Agrees with half's conversion wherever f32 is exact (every f32 value).
        let mut s = 7u64;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let f = f32::from_bits(s as u32);
            if f.is_nan() {
                continue;
            }
            assert_eq!(from_f64(f as f64), from_f32(f), "{f:e}");
        }
    }

    #[test]
    fn f16_arithmetic_matches_half() {
        for a in (0u16..=0xffff).step_by(97) {
            for b in (0u16..=0xffff).step_by(89) {
                let (ha, hb) = (f16::from_bits(a), f16::from_bits(b));
                let add_ok =
                    add(a, b) == (ha + hb).to_bits() || (is_nan(add(a, b)) && (ha + hb).is_nan());
                let mul_ok =
                    mul(a, b) == (ha * hb).to_bits() || (is_nan(mul(a, b)) && (ha * hb).is_nan());
                assert!(add_ok && mul_ok, "{a:#x} {b:#x}");
            }
        }
    }

    #[test]
    fn min_max_med3_and_rtz() {
        assert_eq!(min(0x3c00u16, 0x4000, true), 0x3c00);
        assert_eq!(max(0x0000u16, 0x8000, true), 0x0000);
        assert_eq!(min(0x0000u16, 0x8000, true), 0x8000);
        assert_eq!(min(0x7c01u16, 0x3c00, true), 0x7e01);
        assert_eq!(min(0x7e00u16, 0x3c00, true), 0x3c00);
        assert_eq!(med3(0x4200u16, 0x3c00, 0x4000, true), 0x4000);
        assert_eq!(from_f32_rtz(1.0e6), 0x7bff);
        assert_eq!(from_f32_rtz(-1.0e6), 0xfbff);
        assert_eq!(from_f32_rtz(f32::INFINITY), 0x7c00);
        assert_eq!(from_f32_rtz(1.0 + 1.0 / 1024.0 * 0.75), 0x3c00);
        assert_eq!(from_f32(1.0 + 1.0 / 1024.0 * 0.75), 0x3c01);
        assert_eq!(fract(0xbc01), from_f32(1.0 - 1.0009765625 + 1.0));
        assert_eq!(ldexp(0x3c00, -24), 0x0001);
        assert_eq!(ldexp(0x3c00, 16), 0x7c00);
        assert_eq!(frexp_exp(0x4800), 4); // 8.0 = 0.5 * 2^4
        assert_eq!(frexp_mant(0x4800), 0x3800);
        assert_eq!(omod_clamp(0x4000, 0, true, true), 0x3c00);
    }
}

//! f32 and f64 lane math with the rules of the gfx9 vector ALU: fused multiply-add rounded once,
//! IEEE-mode `min`/`max` (signalling NaNs quietened, -0 below +0), `med3`, `fract`, `ldexp`,
//! `frexp`, the division macro helpers (`v_div_scale/fmas/fixup`), `v_trig_preop_f64`, and the
//! denormal flushing selected by the MODE register.
//!
//! Every function is pure and works on one lane; the dispatcher in `mod.rs` runs them over 64-lane
//! arrays. Rounding is round-to-nearest-even (the MODE round bits are not modelled; see
//! `docs/emulator-valu.md`). Semantics follow the pseudo-code of AMD's CDNA3 ISA guide.

/// Sign bit of an f32 in its bit pattern.
pub const F32_SIGN: u32 = 0x8000_0000;
/// Sign bit of an f64 in its bit pattern.
pub const F64_SIGN: u64 = 0x8000_0000_0000_0000;

/// MODE register fields the vector ALU reads: IEEE mode (NaN rules of min/max), DX10 clamp (clamp
/// turns NaN into 0) and the denormal controls (`FP_DENORM`, MODE[7:4]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloatMode {
    /// MODE.IEEE: min/max quieten signalling NaNs.
    pub ieee: bool,
    /// MODE.DX10_CLAMP: the clamp modifier turns a NaN result into 0.
    pub dx10_clamp: bool,
    /// f32 input denormals are kept (not flushed to zero).
    pub f32_denorm_in: bool,
    /// f32 output denormals are kept.
    pub f32_denorm_out: bool,
    /// f64/f16 input denormals are kept.
    pub f64_denorm_in: bool,
    /// f64/f16 output denormals are kept.
    pub f64_denorm_out: bool,
}

impl FloatMode {
    /// Decodes the 32-bit MODE hardware register (FP_ROUND [3:0], FP_DENORM [7:4], DX10_CLAMP [8],
    /// IEEE [9]). FP_DENORM's two-bit fields: bit 0 keeps input denormals, bit 1 keeps output ones.
    pub fn from_mode_register(mode: u32) -> FloatMode {
        let d32 = (mode >> 4) & 3;
        let d64 = (mode >> 6) & 3;
        FloatMode {
            ieee: mode & (1 << 9) != 0,
            dx10_clamp: mode & (1 << 8) != 0,
            f32_denorm_in: d32 & 1 != 0,
            f32_denorm_out: d32 & 2 != 0,
            f64_denorm_in: d64 & 1 != 0,
            f64_denorm_out: d64 & 2 != 0,
        }
    }

    /// The mode HIP kernels start in (all denormals kept, IEEE and DX10 clamp on): MODE = 0x3f0.
    pub fn kernel_default() -> FloatMode {
        FloatMode::from_mode_register(0x3f0)
    }

    /// Whether f32 arithmetic needs any flushing at all (the fast path skips it).
    #[inline]
    pub fn f32_flushes(&self) -> bool {
        !(self.f32_denorm_in && self.f32_denorm_out)
    }

    /// Whether f64/f16 arithmetic needs any flushing at all.
    #[inline]
    pub fn f64_flushes(&self) -> bool {
        !(self.f64_denorm_in && self.f64_denorm_out)
    }
}

/// A float's bit pattern (`u16` f16, `u32` f32, `u64` f64): the field masks the NaN, denormal
/// and min/max rules read, so one generic function serves all three widths.
pub trait FloatBits:
    Copy
    + PartialEq
    + std::ops::BitAnd<Output = Self>
    + std::ops::BitOr<Output = Self>
    + std::ops::BitXor<Output = Self>
{
    /// The sign bit.
    const SIGN: Self;
    /// The exponent field.
    const EXP: Self;
    /// The mantissa field.
    const MANT: Self;
    /// The mantissa's top bit (set in a quiet NaN).
    const QUIET: Self;
    /// Zero.
    const ZERO: Self;
    /// Width of the mantissa field (where the exponent field starts).
    const MANT_BITS: u32;
    /// The biased exponent field.
    fn exponent(self) -> i32;
    /// A type whose `<` and `==` order these values exactly.
    type Value: PartialOrd;
    /// The value, for ordering.
    fn value(self) -> Self::Value;
}

macro_rules! float_bits {
    ($bits:ty, $exp:expr, $quiet:expr, $value:ty, $to:expr) => {
        impl FloatBits for $bits {
            const SIGN: $bits = 1 << (<$bits>::BITS - 1);
            const EXP: $bits = $exp;
            const MANT: $bits = !(Self::SIGN | Self::EXP);
            const QUIET: $bits = $quiet;
            const ZERO: $bits = 0;
            const MANT_BITS: u32 = Self::EXP.trailing_zeros();
            #[inline(always)]
            fn exponent(self) -> i32 {
                ((self & Self::EXP) >> Self::MANT_BITS) as i32
            }
            type Value = $value;
            #[inline(always)]
            fn value(self) -> $value {
                $to(self)
            }
        }
    };
}
float_bits!(u16, 0x7c00, 0x0200, f32, super::half::to_f32);
float_bits!(u32, 0x7f80_0000, 0x0040_0000, f32, f32::from_bits);
float_bits!(
    u64,
    0x7ff0_0000_0000_0000,
    0x0008_0000_0000_0000,
    f64,
    f64::from_bits
);

/// Replaces a denormal by a zero of the same sign.
#[inline(always)]
pub fn flush<T: FloatBits>(x: T) -> T {
    if x & T::EXP == T::ZERO {
        x & T::SIGN
    } else {
        x
    }
}

/// Whether the pattern is a NaN (exponent all ones, non-zero mantissa).
#[inline(always)]
pub fn is_nan<T: FloatBits>(x: T) -> bool {
    x & T::EXP == T::EXP && x & T::MANT != T::ZERO
}

/// Whether the pattern is a signalling NaN (a NaN with the quiet bit clear).
#[inline(always)]
pub fn is_snan<T: FloatBits>(x: T) -> bool {
    is_nan(x) && x & T::QUIET == T::ZERO
}

/// Quietens a NaN by setting its quiet bit (hardware returns the input NaN quietened).
#[inline(always)]
pub fn quiet<T: FloatBits>(x: T) -> T {
    x | T::QUIET
}

/// `v_min_f16/f32/f64` (CDNA3 pseudo-code): in IEEE mode a signalling NaN operand gives that
/// NaN quietened; otherwise a NaN operand yields the other operand; -0 counts as below +0.
#[inline(always)]
pub fn min<T: FloatBits>(a: T, b: T, ieee: bool) -> T {
    if is_nan(a) || is_nan(b) {
        return nan_select(a, b, ieee);
    }
    let (fa, fb) = (a.value(), b.value());
    if fa == fb {
        // Equal values (including +0 == -0): prefer the negative sign.
        return if a & T::SIGN != T::ZERO { a } else { b };
    }
    if fa < fb {
        a
    } else {
        b
    }
}

/// `v_max_f16/f32/f64`: as [`min`], with +0 above -0.
#[inline(always)]
pub fn max<T: FloatBits>(a: T, b: T, ieee: bool) -> T {
    if is_nan(a) || is_nan(b) {
        return nan_select(a, b, ieee);
    }
    let (fa, fb) = (a.value(), b.value());
    if fa == fb {
        return if a & T::SIGN == T::ZERO { a } else { b };
    }
    if fa > fb {
        a
    } else {
        b
    }
}

#[inline(always)]
fn nan_select<T: FloatBits>(a: T, b: T, ieee: bool) -> T {
    if ieee && is_snan(a) {
        quiet(a)
    } else if ieee && is_snan(b) {
        quiet(b)
    } else if is_nan(a) {
        b
    } else {
        a
    }
}

/// `v_med3_f16/f32`: with any NaN operand, `min3`; otherwise the middle value, chosen as the
/// ISA pseudo-code does (max of the two operands that are not the max3).
#[inline]
pub fn med3<T: FloatBits>(a: T, b: T, c: T, ieee: bool) -> T {
    if is_nan(a) || is_nan(b) || is_nan(c) {
        return min(min(a, b, ieee), c, ieee);
    }
    let m = max(max(a, b, ieee), c, ieee);
    if m == a {
        max(b, c, ieee)
    } else if m == b {
        max(a, c, ieee)
    } else {
        max(a, b, ieee)
    }
}

/// Fused multiply-add of f32 values, rounded once. The product is exact in f64 (24+24 bits);
/// the sum is formed in f64 with round-to-odd (TwoSum plus a sticky bit), which makes the final
/// rounding to f32 exact (53 >= 24 + 2). Portable, vectorisable, and equal to `f32::mul_add`.
#[inline(always)]
pub fn fma_f32(a: f32, b: f32, c: f32) -> f32 {
    let p = a as f64 * b as f64;
    let cc = c as f64;
    let s = p + cc;
    if !s.is_finite() {
        // Infinities and NaNs: the f64 sum already has the IEEE result (f64 cannot overflow
        // here, so an infinity came from an infinite input).
        return s as f32;
    }
    let bv = s - p;
    let err = (p - (s - bv)) + (cc - bv);
    let mut bits = s.to_bits();
    if err != 0.0 && bits & 1 == 0 {
        // Round to odd: step one ulp towards the discarded part.
        if (err > 0.0) == (s > 0.0) {
            bits += 1;
        } else {
            bits -= 1;
        }
    }
    f64::from_bits(bits) as f32
}

/// [`fma_f32`] over 64 lanes of bit patterns. Uses the host's FMA instruction when the CPU has
/// one (detected once; x86-64 baseline builds cannot assume it), else the portable version.
pub fn fma_f32_lanes(a: &[u32; 64], b: &[u32; 64], c: &[u32; 64]) -> [u32; 64] {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static HAS_FMA: OnceLock<bool> = OnceLock::new();
        if *HAS_FMA.get_or_init(|| std::is_x86_feature_detected!("fma")) {
            // SAFETY: the CPU supports FMA (checked above).
            return unsafe { fma_f32_lanes_hw(a, b, c) };
        }
    }
    let mut o = [0u32; 64];
    for l in 0..64 {
        o[l] = fma_f32(
            f32::from_bits(a[l]),
            f32::from_bits(b[l]),
            f32::from_bits(c[l]),
        )
        .to_bits();
    }
    o
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn fma_f32_lanes_hw(a: &[u32; 64], b: &[u32; 64], c: &[u32; 64]) -> [u32; 64] {
    let mut o = [0u32; 64];
    for l in 0..64 {
        o[l] = f32::from_bits(a[l])
            .mul_add(f32::from_bits(b[l]), f32::from_bits(c[l]))
            .to_bits();
    }
    o
}

/// Fused multiply-add of f64 values (std's `mul_add` is the correctly rounded libm `fma`).
#[inline(always)]
pub fn fma_f64(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}

/// `v_fract_f32`: `x - floor(x)`, kept below 1.0 (hardware clamps to 0x3f7fffff so that tiny
/// negative inputs do not round up to 1.0); NaN stays NaN, infinities give NaN.
#[inline]
pub fn fract_f32(x: f32) -> f32 {
    if x.is_infinite() {
        return f32::NAN;
    }
    let r = x - x.floor();
    r.min(f32::from_bits(0x3f7f_ffff))
}

/// `v_fract_f64`, as [`fract_f32`].
#[inline]
pub fn fract_f64(x: f64) -> f64 {
    if x.is_infinite() {
        return f64::NAN;
    }
    let r = x - x.floor();
    r.min(f64::from_bits(0x3fef_ffff_ffff_ffff))
}

/// `v_rndne_f32`: round half to even.
#[inline]
pub fn rndne_f32(x: f32) -> f32 {
    x.round_ties_even()
}

/// `v_rndne_f64`: round half to even.
#[inline]
pub fn rndne_f64(x: f64) -> f64 {
    x.round_ties_even()
}

/// `2^e` as an f64 for `-1022 <= e <= 1023`.
#[inline(always)]
fn pow2_f64(e: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// `v_ldexp_f32`: `x * 2^e` rounded once. Computed in f64, where the scaling is exact for every
/// f32 and clamped exponent, so the only rounding is the final conversion.
#[inline]
pub fn ldexp_f32(x: f32, e: i32) -> f32 {
    let e = e.clamp(-400, 400);
    let (e1, e2) = (e / 2, e - e / 2);
    (x as f64 * pow2_f64(e1) * pow2_f64(e2)) as f32
}

/// `v_ldexp_f64`: `x * 2^e` rounded once, also into the denormal range.
pub fn ldexp_f64(x: f64, e: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let e = e.clamp(-2200, 2200);
    // Normalise x to m * 2^ex with m in [1, 2).
    let (m, ex) = frexp_f64(x); // m in [0.5, 1)
    let (m, ex) = (m * 2.0, ex - 1);
    let t = ex + e;
    if t > 1023 {
        return f64::INFINITY.copysign(x);
    }
    if t >= -1022 {
        return m * pow2_f64(t);
    }
    if t < -1080 {
        return 0.0f64.copysign(x);
    }
    // Denormal result: one exact scaling into the normal range, then one rounding multiply.
    m * pow2_f64(t + 60) * pow2_f64(-60)
}

/// C `frexp` for f32 values: `x = m * 2^e` with `0.5 <= |m| < 1` for finite non-zero x.
pub fn frexp_f32(x: f32) -> (f32, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let (m, e) = frexp_f64(x as f64);
    (m as f32, e)
}

/// C `frexp` for f64 values, denormals included.
pub fn frexp_f64(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        // Denormal: scale into the normal range first (exact).
        let (m, e) = frexp_f64(x * pow2_f64(64));
        return (m, e - 64);
    }
    let m = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (m, exp - 1022)
}

/// `v_frexp_mant_f32`: the mantissa in [0.5, 1) with the sign; infinities and NaNs pass through.
#[inline]
pub fn frexp_mant_f32(x: f32) -> f32 {
    frexp_f32(x).0
}

/// `v_frexp_exp_i32_f32`: the exponent such that `x = mant * 2^exp`; 0 for 0, inf and NaN.
#[inline]
pub fn frexp_exp_f32(x: f32) -> i32 {
    frexp_f32(x).1
}

/// `v_frexp_mant_f64`.
#[inline]
pub fn frexp_mant_f64(x: f64) -> f64 {
    frexp_f64(x).0
}

/// `v_frexp_exp_i32_f64`.
#[inline]
pub fn frexp_exp_f64(x: f64) -> i32 {
    frexp_f64(x).1
}

fn is_denorm_f32(x: f32) -> bool {
    x != 0.0 && x.is_subnormal()
}

/// `v_div_scale_f32 D, VCC, S0, S1(denominator), S2(numerator)`: scales the value being prepared
/// (S0 is S1 or S2) so that the Newton-Raphson steps of the division macro see no denormals;
/// returns the scaled value and whether the quotient needs post-scaling (VCC bit).
/// Cases as in the CDNA3 ISA pseudo-code; the value is S0 unchanged when no case applies.
pub fn div_scale_f32(s0: f32, s1: f32, s2: f32) -> (f32, bool) {
    if s2 == 0.0 || s1 == 0.0 {
        return (f32::NAN, false);
    }
    if s1.is_nan() || s2.is_nan() || s0.is_nan() {
        return (s0, false);
    }
    let (e1, e2) = (s1.to_bits().exponent(), s2.to_bits().exponent());
    if e2 - e1 >= 96 {
        // Quotient near the f32 maximum: scale only the denominator.
        return (if s0 == s1 { ldexp_f32(s0, 64) } else { s0 }, true);
    }
    if is_denorm_f32(s1) {
        return (ldexp_f32(s0, 64), false);
    }
    // 1/S1 in f64 is never an f64 denormal for an f32 S1, so that case cannot occur.
    let q = s2 as f64 / s1 as f64;
    if q != 0.0 && q.abs() < f32::MIN_POSITIVE as f64 {
        // The quotient is an f32 denormal: scale the numerator, post-scale the quotient down.
        return (if s0 == s2 { ldexp_f32(s0, 64) } else { s0 }, true);
    }
    if e2 <= 23 {
        // Tiny numerator: scale both operands alike (no post-scaling).
        return (ldexp_f32(s0, 64), false);
    }
    (s0, false)
}

/// `v_div_scale_f64`, as [`div_scale_f32`] with the f64 thresholds (768, 2^128, 53).
pub fn div_scale_f64(s0: f64, s1: f64, s2: f64) -> (f64, bool) {
    if s2 == 0.0 || s1 == 0.0 {
        return (f64::NAN, false);
    }
    if s1.is_nan() || s2.is_nan() || s0.is_nan() {
        return (s0, false);
    }
    let (e1, e2) = (s1.to_bits().exponent(), s2.to_bits().exponent());
    if e2 - e1 >= 768 {
        return (if s0 == s1 { ldexp_f64(s0, 128) } else { s0 }, true);
    }
    if s1.is_subnormal() {
        return (ldexp_f64(s0, 128), false);
    }
    let recip_denorm = s1.abs() > 2f64.powi(1022);
    let q = s2 / s1;
    let quot_denorm = q != 0.0 && q.abs() < f64::MIN_POSITIVE || (q == 0.0 && s2 != 0.0);
    if recip_denorm && quot_denorm {
        // Huge denominator and tiny quotient. The ISA guide prints ldexp(S0, 128) here, which
        // overflows a denominator above 2^1022; scaling it down by 2^-128 is what the post-scale
        // of v_div_fmas (2^-128 for a small quotient) undoes.
        return (if s0 == s1 { ldexp_f64(s0, -128) } else { s0 }, true);
    }
    if recip_denorm {
        return (ldexp_f64(s0, -128), false);
    }
    if quot_denorm {
        return (if s0 == s2 { ldexp_f64(s0, 128) } else { s0 }, true);
    }
    if e2 <= 53 {
        return (ldexp_f64(s0, 128), false);
    }
    (s0, false)
}

/// `v_div_fmas_f32`: `fma(S0, S1, S2)`, post-scaled when VCC is set. The direction of the scale
/// undoes what `v_div_scale_f32` did: a large quotient (exponent(S2) > 127, the denominator was
/// scaled up) is scaled by 2^64, a small one (the numerator was scaled up) by 2^-64. The ISA
/// guide's pseudo-code prints a single 2^32 factor, which cannot undo either case.
#[inline]
pub fn div_fmas_f32(s0: f32, s1: f32, s2: f32, vcc: bool) -> f32 {
    if !vcc {
        return fma_f32(s0, s1, s2);
    }
    let scale = if s2.to_bits().exponent() > 127 {
        64
    } else {
        -64
    };
    // Scale in f64 so that the fma result is rounded only once to f32.
    let p = s0 as f64 * s1 as f64;
    let exact = fma_f64_odd(p, s2 as f64);
    (exact * pow2_f64(scale)) as f32
}

/// f64 sum `p + c` rounded to odd (see [`fma_f32`]), used where one more exact scaling follows.
#[inline]
fn fma_f64_odd(p: f64, c: f64) -> f64 {
    let s = p + c;
    if !s.is_finite() {
        return s;
    }
    let bv = s - p;
    let err = (p - (s - bv)) + (c - bv);
    let mut bits = s.to_bits();
    if err != 0.0 && bits & 1 == 0 {
        if (err > 0.0) == (s > 0.0) {
            bits += 1;
        } else {
            bits -= 1;
        }
    }
    f64::from_bits(bits)
}

/// `v_div_fmas_f64`: as [`div_fmas_f32`] with 2^±128 (exponent(S2) > 1023 scales up).
#[inline]
pub fn div_fmas_f64(s0: f64, s1: f64, s2: f64, vcc: bool) -> f64 {
    let r = s0.mul_add(s1, s2);
    if !vcc {
        return r;
    }
    let scale = if s2.to_bits().exponent() > 1023 {
        128
    } else {
        -128
    };
    if scale > 0 {
        // Scaling up is exact unless it overflows (then infinity is the right answer).
        r * pow2_f64(128)
    } else {
        // Scaling down may land in the denormal range: round once from the exact fma.
        scaled_fma_f64(s0, s1, s2, -128)
    }
}

/// `fma(a, b, c) * 2^e` rounded once, for a result that may be denormal (`e < 0`). The fma is
/// carried as `r + resid` (its rounded value and residual); a denormal rounding of `r * 2^e` can
/// only go wrong when `r * 2^e` sits exactly on a midpoint, and then the residual's sign decides.
fn scaled_fma_f64(a: f64, b: f64, c: f64, e: i32) -> f64 {
    let r = a.mul_add(b, c);
    if !r.is_finite() || r == 0.0 {
        return r * pow2_f64(e);
    }
    let scaled = ldexp_f64(r, e);
    if !scaled.is_subnormal() && scaled != 0.0 {
        return scaled;
    }
    // exact = a*b + c = p + pe + c, with p + pe exact (fma) and p + c = sh + sl exact (TwoSum).
    let p = a * b;
    let pe = a.mul_add(b, -p);
    let sh = p + c;
    let bv = sh - p;
    let sl = (p - (sh - bv)) + (c - bv);
    let resid = (sh - r) + (sl + pe);
    let back = ldexp_f64(scaled, -e); // exact: scaling a denormal up loses nothing
    let half_ulp = pow2_f64(-1075 - e);
    let off = r - back; // exact (Sterbenz)
    if resid == 0.0 || off.abs() != half_ulp {
        return scaled;
    }
    // r is a midpoint: the exact value lies on resid's side of it.
    if (resid > 0.0) == (off > 0.0) {
        // The exact value is further from `back` than the midpoint: take the other neighbour.
        let step = f64::from_bits(1).copysign(off);
        scaled + step
    } else {
        scaled
    }
}

/// `v_div_fixup_f32/f64 D, S0(quotient), S1(denominator), S2(numerator)` on the bit patterns: the
/// IEEE special cases of `S2 / S1` (NaN, 0/0, inf/inf, x/0, inf/y, x/inf, 0/y, underflow below
/// 2^-(bias + mantissa bits), i.e. -150 for f32 and -1075 for f64), else the quotient's
/// magnitude with the sign of the division.
pub fn div_fixup<T: FloatBits>(s0: T, s1: T, s2: T) -> T {
    let sign = (s1 ^ s2) & T::SIGN;
    let magnitude = |x: T| x & (T::EXP | T::MANT);
    let (m1, m2, inf) = (magnitude(s1), magnitude(s2), T::EXP);
    if is_nan(s2) {
        return quiet(s2);
    }
    if is_nan(s1) {
        return quiet(s1);
    }
    if (m1 == T::ZERO && m2 == T::ZERO) || (m1 == inf && m2 == inf) {
        return T::SIGN | T::EXP | T::QUIET;
    }
    if m1 == T::ZERO || m2 == inf {
        return sign | inf;
    }
    if m1 == inf || m2 == T::ZERO {
        return sign;
    }
    let underflow = T::EXP.exponent() / 2 + T::MANT_BITS as i32;
    if s2.exponent() - s1.exponent() < -underflow {
        return sign;
    }
    if is_nan(s0) {
        // A NaN estimate with ordinary operands comes from an overflowed macro: infinity.
        return sign | inf;
    }
    sign | magnitude(s0)
}

/// [`div_fixup`] of f32 values.
pub fn div_fixup_f32(s0: f32, s1: f32, s2: f32) -> f32 {
    f32::from_bits(div_fixup(s0.to_bits(), s1.to_bits(), s2.to_bits()))
}

/// [`div_fixup`] of f64 values.
pub fn div_fixup_f64(s0: f64, s1: f64, s2: f64) -> f64 {
    f64::from_bits(div_fixup(s0.to_bits(), s1.to_bits(), s2.to_bits()))
}

/// Bits of 2/pi after the binary point, 24 per entry (1584 bits; the hardware table holds 1201).
const TWO_OVER_PI_24: [u32; 66] = [
    0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62, 0x95993C, 0x439041, 0xFE5163,
    0xABDEBB, 0xC561B7, 0x246E3A, 0x424DD2, 0xE00649, 0x2EEA09, 0xD1921C, 0xFE1DEB, 0x1CB129,
    0xA73EE8, 0x8235F5, 0x2EBB44, 0x84E99C, 0x7026B4, 0x5F7E41, 0x3991D6, 0x398353, 0x39F49C,
    0x845F8B, 0xBDF928, 0x3B1FF8, 0x97FFDE, 0x05980F, 0xEF2F11, 0x8B5A0A, 0x6D1F6D, 0x367ECF,
    0x27CB09, 0xB74F46, 0x3F669E, 0x5FEA2D, 0x7527BA, 0xC7EBE5, 0xF17B3D, 0x0739F7, 0x8A5292,
    0xEA6BFB, 0x5FB11F, 0x8D5D08, 0x560330, 0x46FC7B, 0x6BABF0, 0xCFBC20, 0x9AF436, 0x1DA9E3,
    0x91615E, 0xE61B08, 0x659985, 0x5F14A0, 0x68408D, 0xFFD880, 0x4D7327, 0x310606, 0x1556CA,
    0x73A8C9, 0x60E27B, 0xC08C6B,
];

/// Bit `i` (0 = first bit after the binary point) of 2/pi; zero past the 1201 bits the hardware
/// holds.
fn two_over_pi_bit(i: u32) -> u64 {
    if i >= 1201 {
        return 0;
    }
    let word = TWO_OVER_PI_24[(i / 24) as usize];
    ((word >> (23 - i % 24)) & 1) as u64
}

/// `v_trig_preop_f64 D, S0, S1`: the 53-bit segment of 2/pi starting at bit `53*S1[4:0]` (moved
/// further by large exponents of S0), scaled so that the segments sum to 2/pi; large inputs
/// (exponent >= 1968) get the extra 2^128 the pseudo-code adds.
pub fn trig_preop_f64(x: f64, seg: u32) -> f64 {
    let e = x.to_bits().exponent();
    let mut shift = (seg & 31) as i32 * 53;
    if e > 1077 {
        shift += e - 1077;
    }
    let mut mant: u64 = 0;
    for k in 0..53 {
        mant = (mant << 1) | two_over_pi_bit((shift + k) as u32);
    }
    let mut scale = -53 - shift;
    if e >= 1968 {
        scale += 128;
    }
    ldexp_f64(mant as f64, scale)
}

/// The f32 output modifier (VOP3 `omod`: 1 = *2, 2 = *4, 3 = /2) and clamp to [0, 1].
/// Clamp of NaN gives 0 in DX10 clamp mode (the HIP default), NaN otherwise.
#[inline(always)]
pub fn omod_clamp_f32(x: f32, omod: u8, clamp: bool, dx10: bool) -> f32 {
    let y = match omod {
        1 => x * 2.0,
        2 => x * 4.0,
        3 => x * 0.5,
        _ => x,
    };
    if clamp {
        if y.is_nan() {
            return if dx10 { 0.0 } else { y };
        }
        y.clamp(0.0, 1.0)
    } else {
        y
    }
}

/// [`omod_clamp_f32`] for f64 results.
#[inline(always)]
pub fn omod_clamp_f64(x: f64, omod: u8, clamp: bool, dx10: bool) -> f64 {
    let y = match omod {
        1 => x * 2.0,
        2 => x * 4.0,
        3 => x * 0.5,
        _ => x,
    };
    if clamp {
        if y.is_nan() {
            return if dx10 { 0.0 } else { y };
        }
        y.clamp(0.0, 1.0)
    } else {
        y
    }
}

/// `v_mul_legacy_f32`: DX9 rule, `0 * anything` (even inf or NaN) is +0.
#[inline(always)]
pub fn mul_legacy_f32(a: f32, b: f32) -> f32 {
    if a == 0.0 || b == 0.0 {
        0.0
    } else {
        a * b
    }
}

/// `v_mad_f32`/`v_mac_f32` (gfx900 only): unfused `a * b + c` with both roundings; the hardware
/// flushes f32 denormals for these opcodes whatever the mode says.
#[inline(always)]
pub fn mad_f32(a: f32, b: f32, c: f32) -> f32 {
    let a = f32::from_bits(flush(a.to_bits()));
    let b = f32::from_bits(flush(b.to_bits()));
    let c = f32::from_bits(flush(c.to_bits()));
    f32::from_bits(flush((a * b + c).to_bits()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small deterministic generator (xorshift64*) so tests need no RNG crate.
    pub(crate) struct Rng(u64);
    impl Rng {
        pub(crate) fn new(seed: u64) -> Rng {
            Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
        }
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        /// f32 bit patterns biased towards interesting exponents.
        pub(crate) fn f32(&mut self) -> f32 {
            let r = self.next();
            match r % 8 {
                0 => f32::from_bits((r >> 32) as u32),
                1 => ((r >> 8) as i32 as f32) * 1e-3,
                2 => f32::from_bits((r >> 16) as u32 & 0x807f_ffff), // denormals
                _ => f32::from_bits((r >> 20) as u32),
            }
        }
        pub(crate) fn f64(&mut self) -> f64 {
            let r = self.next();
            match r % 8 {
                0 => f64::from_bits(r & 0x800f_ffff_ffff_ffff),
                1 => ((r >> 8) as i64 as f64) * 1e-9,
                _ => f64::from_bits(self.next()),
            }
        }
    }

    #[test]
    fn fma_f32_matches_the_correctly_rounded_libm_fma() {
        let mut rng = Rng::new(1);
        for _ in 0..300_000 {
            let (a, b, c) = (rng.f32(), rng.f32(), rng.f32());
            let want = a.mul_add(b, c);
            let got = fma_f32(a, b, c);
            assert!(
                want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                "fma({a:e}, {b:e}, {c:e}) = {got:e}, want {want:e}"
            );
        }
        // A double-rounding trap: a*b + c lands just beside an f32 midpoint.
        let (a, b, c) = (1.0 + f32::EPSILON, 1.0 + f32::EPSILON, -1.0);
        assert_eq!(fma_f32(a, b, c).to_bits(), a.mul_add(b, c).to_bits());
    }

    #[test]
    fn lane_fma_agrees_with_the_portable_one() {
        let mut rng = Rng::new(11);
        for _ in 0..2000 {
            let a: [u32; 64] = std::array::from_fn(|_| rng.f32().to_bits());
            let b: [u32; 64] = std::array::from_fn(|_| rng.f32().to_bits());
            let c: [u32; 64] = std::array::from_fn(|_| rng.f32().to_bits());
            let got = fma_f32_lanes(&a, &b, &c);
            for l in 0..64 {
                let want = fma_f32(
                    f32::from_bits(a[l]),
                    f32::from_bits(b[l]),
                    f32::from_bits(c[l]),
                );
                let g = f32::from_bits(got[l]);
                assert!(g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()));
            }
        }
    }

    #[test]
    fn min_max_follow_ieee_mode_nan_and_signed_zero_rules() {
        let snan = 0x7f80_0001u32;
        let qnan = 0x7fc0_0000u32;
        let one = 1.0f32.to_bits();
        assert_eq!(min(snan, one, true), 0x7fc0_0001);
        assert_eq!(min(snan, one, false), one);
        assert_eq!(max(one, qnan, true), one);
        assert_eq!(min(0.0f32.to_bits(), (-0.0f32).to_bits(), true), F32_SIGN);
        assert_eq!(max((-0.0f32).to_bits(), 0.0f32.to_bits(), true), 0);
        assert_eq!(min(one, 2.0f32.to_bits(), true), one);
        assert_eq!(
            max(1.0f64.to_bits(), 2.0f64.to_bits(), true),
            2.0f64.to_bits()
        );
        assert_eq!(
            min(0x7ff0_0000_0000_0001, 3.0f64.to_bits(), true),
            0x7ff8_0000_0000_0001
        );
        let m = |a: f32, b: f32, c: f32| {
            f32::from_bits(med3(a.to_bits(), b.to_bits(), c.to_bits(), true))
        };
        assert_eq!(m(3.0, 1.0, 2.0), 2.0);
        assert_eq!(m(1.0, 3.0, 2.0), 2.0);
        assert_eq!(m(2.0, 2.0, 1.0), 2.0);
        assert_eq!(m(f32::NAN, 5.0, 2.0), 2.0);
    }

    #[test]
    fn ldexp_rounds_once_into_denormals() {
        let mut rng = Rng::new(2);
        for _ in 0..100_000 {
            let x = rng.f32();
            let e = (rng.next() % 600) as i32 - 300;
            let want = (x as f64 * 2f64.powi(e)) as f32;
            let got = ldexp_f32(x, e);
            assert!(
                want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                "{x:e} {e}"
            );
        }
        assert_eq!(ldexp_f64(1.5, -1074), f64::from_bits(2)); // 1.5 * 2^-1074 ties to even -> 2 ulps
        assert_eq!(ldexp_f64(1.0, -1075), 0.0); // exactly half the smallest denormal: even is 0
        assert_eq!(ldexp_f64(1.0 + f64::EPSILON, -1075), f64::from_bits(1));
        assert_eq!(ldexp_f64(f64::from_bits(1), 1074), 1.0);
        assert_eq!(ldexp_f64(1.0, 1024), f64::INFINITY);
        assert_eq!(ldexp_f64(-3.0, 2), -12.0);
        assert_eq!(ldexp_f32(1.0, i32::MIN), 0.0);
    }

    #[test]
    fn frexp_splits_mantissa_and_exponent_like_c() {
        assert_eq!(frexp_f32(8.0), (0.5, 4));
        assert_eq!(frexp_f32(-3.0), (-0.75, 2));
        assert_eq!(frexp_f32(f32::from_bits(1)), (0.5, -148));
        assert_eq!(frexp_exp_f32(f32::INFINITY), 0);
        assert!(frexp_mant_f32(f32::NAN).is_nan());
        assert_eq!(frexp_f64(f64::from_bits(1)), (0.5, -1073));
        let mut rng = Rng::new(3);
        for _ in 0..10_000 {
            let x = rng.f64();
            if x == 0.0 || !x.is_finite() {
                continue;
            }
            let (m, e) = frexp_f64(x);
            assert!((0.5..1.0).contains(&m.abs()));
            assert_eq!(ldexp_f64(m, e), x);
        }
    }

    #[test]
    fn fract_stays_below_one() {
        assert_eq!(fract_f32(-1e-10), f32::from_bits(0x3f7f_ffff));
        assert_eq!(fract_f32(2.25), 0.25);
        assert_eq!(fract_f32(-2.25), 0.75);
        assert!(fract_f32(f32::INFINITY).is_nan());
        assert_eq!(fract_f64(-1e-300), f64::from_bits(0x3fef_ffff_ffff_ffff));
    }

    /// LLVM's f32 fdiv expansion (SITargetLowering::LowerFDIV32, denormals on), run on the
    /// modelled macro instructions.
    fn llvm_fdiv32(n: f32, d: f32) -> f32 {
        let (den, _) = div_scale_f32(d, d, n);
        let (num, vcc) = div_scale_f32(n, d, n);
        let rcp = crate_rcp_f32(den);
        let neg = -den;
        let fma0 = fma_f32(neg, rcp, 1.0);
        let fma1 = fma_f32(fma0, rcp, rcp);
        let mul = num * fma1;
        let fma2 = fma_f32(neg, mul, num);
        let fma3 = fma_f32(fma2, fma1, mul);
        let fma4 = fma_f32(neg, fma3, num);
        let fmas = div_fmas_f32(fma4, fma1, fma3, vcc);
        div_fixup_f32(fmas, d, n)
    }

    /// A 1-ulp reciprocal approximation like the hardware's: correctly rounded, then nudged by
    /// one ulp on some inputs so the test does not depend on an exact reciprocal.
    fn crate_rcp_f32(x: f32) -> f32 {
        let r = (1.0 / x as f64) as f32;
        if r.is_finite() && r != 0.0 && x.to_bits() % 3 == 0 {
            f32::from_bits(r.to_bits() + 1)
        } else {
            r
        }
    }

    fn llvm_fdiv64(n: f64, d: f64) -> f64 {
        let (den, _) = div_scale_f64(d, d, n);
        let (num, vcc) = div_scale_f64(n, d, n);
        let rcp = {
            let r = 1.0 / den;
            if r.is_finite() && r != 0.0 && den.to_bits() % 3 == 0 {
                f64::from_bits(r.to_bits() + 1)
            } else {
                r
            }
        };
        let neg = -den;
        let fma0 = neg.mul_add(rcp, 1.0);
        let fma1 = rcp.mul_add(fma0, rcp);
        let fma2 = neg.mul_add(fma1, 1.0);
        let fma3 = fma1.mul_add(fma2, fma1);
        let mul = num * fma3;
        let fma4 = neg.mul_add(mul, num);
        let fmas = div_fmas_f64(fma4, fma3, mul, vcc);
        div_fixup_f64(fmas, d, n)
    }

    #[test]
    fn division_macro_gives_correctly_rounded_f32_quotients() {
        let mut rng = Rng::new(4);
        let specials = [
            0.0f32,
            -0.0,
            1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            3.0e-39,
            1e30,
            7.0,
        ];
        let mut cases: Vec<(f32, f32)> = Vec::new();
        for &a in &specials {
            for &b in &specials {
                cases.push((a, b));
            }
        }
        for _ in 0..200_000 {
            cases.push((rng.f32(), rng.f32()));
        }
        for (n, d) in cases {
            let want = n / d;
            let got = llvm_fdiv32(n, d);
            assert!(
                want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                "{n:e} / {d:e}: got {got:e} ({:#x}), want {want:e} ({:#x})",
                got.to_bits(),
                want.to_bits()
            );
        }
    }

    #[test]
    fn division_macro_gives_correctly_rounded_f64_quotients() {
        let mut rng = Rng::new(5);
        let specials = [
            0.0f64,
            -0.0,
            1.0,
            f64::INFINITY,
            f64::NAN,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            1e-310,
            1e300,
            3.0,
        ];
        let mut cases: Vec<(f64, f64)> = Vec::new();
        for &a in &specials {
            for &b in &specials {
                cases.push((a, b));
            }
        }
        for _ in 0..200_000 {
            cases.push((rng.f64(), rng.f64()));
        }
        for (n, d) in cases {
            let want = n / d;
            let got = llvm_fdiv64(n, d);
            assert!(
                want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                "{n:e} / {d:e}: got {got:e}, want {want:e}"
            );
        }
    }

    #[test]
    fn trig_preop_segments_sum_to_two_over_pi() {
        let first = trig_preop_f64(1.0, 0);
        assert_eq!(first, 0.6366197723675813); // 2/pi truncated to 53 bits equals its rounding
        let sum = first + trig_preop_f64(1.0, 1) + trig_preop_f64(1.0, 2);
        assert!((sum - std::f64::consts::FRAC_2_PI).abs() < 1e-17);
        // Segment 1 continues exactly where segment 0 stops: 0 < seg1 < 2^-53.
        let s1 = trig_preop_f64(1.0, 1);
        assert!(s1 > 0.0 && s1 < 2f64.powi(-53));
    }

    #[test]
    fn mode_register_decodes_denormal_fields() {
        let m = FloatMode::from_mode_register(0x3f0);
        assert!(m.ieee && m.dx10_clamp && !m.f32_flushes() && !m.f64_flushes());
        let m = FloatMode::from_mode_register(0x3c0);
        assert!(m.f32_flushes() && !m.f64_flushes());
        assert_eq!(flush(0x8000_0001), F32_SIGN);
        assert_eq!(flush(0x0080_0000u32), 0x0080_0000);
        assert_eq!(flush(1u32), 0);
    }

    #[test]
    fn omod_and_clamp_apply_in_order() {
        assert_eq!(omod_clamp_f32(0.3, 1, false, true), 0.6);
        assert_eq!(omod_clamp_f32(0.3, 2, true, true), 1.0);
        assert_eq!(omod_clamp_f32(-3.0, 3, true, true), 0.0);
        assert_eq!(omod_clamp_f32(f32::NAN, 0, true, true), 0.0);
        assert!(omod_clamp_f32(f32::NAN, 0, true, false).is_nan());
        assert_eq!(mul_legacy_f32(0.0, f32::INFINITY), 0.0);
        assert_eq!(mad_f32(f32::from_bits(1), 1.0, 0.0), 0.0);
    }
}

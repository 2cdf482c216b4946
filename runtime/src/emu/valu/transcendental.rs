//! The transcendental unit: `v_exp`, `v_log`, `v_rcp`, `v_rsq`, `v_sqrt`, `v_sin`, `v_cos` in
//! f32, f16 and (rcp/rsq/sqrt) f64.
//!
//! What is modelled (see `docs/emulator-valu.md`):
//! - Accuracy: the hardware documents about 1 ulp for these opcodes. The device returns the
//!   correctly rounded value (computed in f64 and rounded once for f32/f16; exact IEEE for f64
//!   sqrt and rcp), which is within the documented bound, so code that relies on the documented
//!   accuracy (LLVM's Newton-Raphson refinements) behaves as on hardware.
//! - Denormals: the f32 and f64 forms flush denormal inputs and outputs to signed zero, whatever
//!   MODE says, except the result of `v_rcp_f32`, which follows MODE (see [`rcp_f32`]). LLVM relies on this behaviour: it scales inputs below 2^-126 around `v_log_f32`,
//!   `v_sqrt_f32`, `v_rsq_f32` and `v_rcp_f32`, and the outputs of `v_exp_f32`. A compiler that
//!   forgets the scaling sees the flushed result on this device, as on hardware.
//! - `v_sin/v_cos` take revolutions (`sin(2*pi*x)`); the argument is reduced exactly with
//!   `x - round(x)` before the f64 evaluation. Hardware is only specified for |x| < 256.
//! - Special values follow IEEE: `rcp(±0) = ±inf`, `rsq(-x) = NaN`, `log(0) = -inf`,
//!   `log(-x) = NaN`, `exp(-inf) = 0`, `sqrt(-0) = -0`.

use super::float::flush;
use super::half;

#[inline(always)]
fn in32(x: f32) -> f64 {
    f32::from_bits(flush(x.to_bits())) as f64
}

#[inline(always)]
fn out32(x: f64) -> f32 {
    f32::from_bits(flush((x as f32).to_bits()))
}

/// `v_exp_f32`: `2^x`.
#[inline]
pub fn exp_f32(x: f32) -> f32 {
    out32(in32(x).exp2())
}

/// `v_log_f32`: `log2(x)`.
#[inline]
pub fn log_f32(x: f32) -> f32 {
    out32(in32(x).log2())
}

/// `v_rcp_f32` (and `v_rcp_iflag_f32`): `1/x`. Denormal inputs are flushed; a denormal result is
/// kept (the dispatcher then applies MODE's output flush): LLVM's f32 division macro relies on it,
/// since `v_div_scale_f32` never scales a denominator above 2^126 whose reciprocal is denormal.
#[inline]
pub fn rcp_f32(x: f32) -> f32 {
    (1.0 / in32(x)) as f32
}

/// `v_rsq_f32`: `1/sqrt(x)`.
#[inline]
pub fn rsq_f32(x: f32) -> f32 {
    let v = in32(x);
    // 1/sqrt in f64 has two roundings (sqrt, divide) both far below f32 precision.
    out32(1.0 / v.sqrt())
}

/// `v_sqrt_f32`.
#[inline]
pub fn sqrt_f32(x: f32) -> f32 {
    out32(in32(x).sqrt())
}

/// `sin(2*pi*x)` in f64, exact at multiples of a quarter revolution (where the f64 value of
/// 2*pi would otherwise leave a 1e-16 residue instead of 0).
#[inline(always)]
fn sin_rev(x: f64) -> f64 {
    if x.is_infinite() {
        return f64::NAN;
    }
    let r = x - x.round();
    let q = r * 4.0;
    if q == q.round() {
        return [0.0f64, 1.0, 0.0, -1.0][q.rem_euclid(4.0) as usize].copysign(if q == 0.0 {
            x
        } else {
            1.0
        });
    }
    (r * std::f64::consts::TAU).sin()
}

/// `cos(2*pi*x)` in f64, exact at quarter revolutions.
#[inline(always)]
fn cos_rev(x: f64) -> f64 {
    if x.is_infinite() {
        return f64::NAN;
    }
    let r = x - x.round();
    let q = r * 4.0;
    if q == q.round() {
        return [1.0, 0.0, -1.0, 0.0][q.rem_euclid(4.0) as usize];
    }
    (r * std::f64::consts::TAU).cos()
}

/// `v_sin_f32`: `sin(2*pi*x)`.
#[inline]
pub fn sin_f32(x: f32) -> f32 {
    out32(sin_rev(in32(x)))
}

/// `v_cos_f32`: `cos(2*pi*x)`.
#[inline]
pub fn cos_f32(x: f32) -> f32 {
    out32(cos_rev(in32(x)))
}

#[inline(always)]
fn in64(x: f64) -> f64 {
    f64::from_bits(flush(x.to_bits()))
}

#[inline(always)]
fn out64(x: f64) -> f64 {
    f64::from_bits(flush(x.to_bits()))
}

/// `v_rcp_f64`.
#[inline]
pub fn rcp_f64(x: f64) -> f64 {
    out64(1.0 / in64(x))
}

/// `v_rsq_f64`.
#[inline]
pub fn rsq_f64(x: f64) -> f64 {
    out64(1.0 / in64(x).sqrt())
}

/// `v_sqrt_f64`.
#[inline]
pub fn sqrt_f64(x: f64) -> f64 {
    out64(in64(x).sqrt())
}

/// The f16 forms: computed in f64 from the exact f16 value and rounded once to f16; f16
/// denormals are kept (the f16 unit supports them).
#[inline]
pub fn f16_unary(op: TransOp, x: u16) -> u16 {
    let v = half::to_f32(x) as f64;
    let r = match op {
        TransOp::Exp => v.exp2(),
        TransOp::Log => v.log2(),
        TransOp::Rcp => 1.0 / v,
        TransOp::Rsq => 1.0 / v.sqrt(),
        TransOp::Sqrt => v.sqrt(),
        TransOp::Sin => sin_rev(v),
        TransOp::Cos => cos_rev(v),
    };
    half::from_f64(r)
}

/// Which transcendental function (used by the f16 forms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransOp {
    /// `2^x`.
    Exp,
    /// `log2(x)`.
    Log,
    /// `1/x`.
    Rcp,
    /// `1/sqrt(x)`.
    Rsq,
    /// `sqrt(x)`.
    Sqrt,
    /// `sin(2*pi*x)`.
    Sin,
    /// `cos(2*pi*x)`.
    Cos,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f64) -> f64 {
        let ulp = f32::from_bits((a.abs().to_bits() & 0x7f80_0000).max(0x0080_0000)) as f64
            * f32::EPSILON as f64;
        (a as f64 - b).abs() / ulp
    }

    #[test]
    fn f32_functions_are_within_one_ulp_of_the_exact_value() {
        let mut s = 99u64;
        for _ in 0..100_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let x = f32::from_bits((s >> 8) as u32 & 0x7fff_ffff);
            if !x.is_normal() {
                continue;
            }
            let xd = x as f64;
            for (got, want) in [
                (rcp_f32(x), 1.0 / xd),
                (sqrt_f32(x), xd.sqrt()),
                (rsq_f32(x), 1.0 / xd.sqrt()),
                (log_f32(x), xd.log2()),
            ] {
                if want.abs() < f32::MIN_POSITIVE as f64 || want.abs() > f32::MAX as f64 {
                    continue;
                }
                assert!(ulps(got, want) <= 0.5 + 1e-9, "{x:e}: {got:e} vs {want:e}");
            }
            let e = (xd % 200.0) - 100.0;
            let want = e.exp2();
            if want > f32::MIN_POSITIVE as f64 {
                assert!(ulps(exp_f32(e as f32), (e as f32 as f64).exp2()) <= 0.5 + 1e-9);
            }
        }
    }

    #[test]
    fn denormals_are_flushed_and_specials_follow_ieee() {
        let tiny = f32::from_bits(0x0000_1000);
        assert_eq!(rcp_f32(tiny), f32::INFINITY);
        assert_eq!(
            rcp_f32(2.0e38),
            (1.0f64 / 2.0e38) as f32,
            "denormal result kept"
        );
        assert_eq!(log_f32(tiny), f32::NEG_INFINITY);
        assert_eq!(sqrt_f32(-tiny).to_bits(), 0x8000_0000);
        assert_eq!(exp_f32(-130.0), 0.0); // 2^-130 is an f32 denormal: flushed
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert!(rsq_f32(-1.0).is_nan());
        assert!(log_f32(-1.0).is_nan());
        assert_eq!(rcp_f32(-0.0), f32::NEG_INFINITY);
        assert_eq!(rcp_f64(f64::from_bits(1)), f64::INFINITY);
        assert_eq!(sqrt_f64(4.0), 2.0);
    }

    #[test]
    fn sin_and_cos_take_revolutions() {
        assert_eq!(sin_f32(0.25), 1.0);
        assert_eq!(cos_f32(0.5), -1.0);
        assert_eq!(sin_f32(0.5), 0.0); // exact reduction: sin(pi) would be 1.2e-16 in radians
        assert!((sin_f32(1.0 / 12.0) - 0.5).abs() <= f32::EPSILON);
        assert_eq!(sin_f32(100.25), 1.0);
        assert!(sin_f32(f32::INFINITY).is_nan());
        assert_eq!(f16_unary(TransOp::Cos, 0x0000), 0x3c00);
        assert_eq!(f16_unary(TransOp::Rcp, 0x4000), 0x3800);
        assert_eq!(f16_unary(TransOp::Exp, 0x4400), 0x4c00); // 2^4 = 16
        assert_eq!(
            f16_unary(TransOp::Sqrt, 0x0001),
            half::from_f64(2f64.powi(-12))
        ); // f16 denormal kept
    }
}

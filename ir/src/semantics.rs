//! The meaning of every pure operation, on representation bits.
//!
//! Values are `u64`s holding the type's bits zero-extended (bool is 0 or 1). The interpreter and
//! the optimizer's constant folding both evaluate through these functions, so a folded constant
//! is exactly what the interpreter would have computed.
//!
//! Floats follow IEEE 754 with round-to-nearest-even and denormals kept: add, sub, mul, div,
//! sqrt and fma are correctly rounded; `rcp` is `1/x` correctly rounded; `exp2`, `log2`, `sin`,
//! `cos` use the host's libm (within 1 ulp; the hardware's `v_exp_f32` and friends are also
//! within about 1 ulp, and `v_sin_f32`/`v_cos_f32` lose accuracy for large arguments). f16
//! arithmetic is done in f32 and rounded once (exact for add/sub/mul/div/sqrt), f16 fma in f64.
//! min/max are IEEE minNum/maxNum with `-0 < +0`.

use crate::instructions::{AtomicOp, BinaryOp, CmpOp, ReduceOp, TernaryOp, UnaryOp};
use crate::types::Type;
use half::f16;

fn sext(x: u64, bits: u32) -> i64 {
    if bits >= 64 {
        x as i64
    } else {
        ((x << (64 - bits)) as i64) >> (64 - bits)
    }
}

/// Reads float bits of type `ty` as f64 (exact for every float type).
pub fn float_value(ty: Type, bits: u64) -> f64 {
    match ty {
        Type::F16 => f16::from_bits(bits as u16).to_f64(),
        Type::F32 => f32::from_bits(bits as u32) as f64,
        _ => f64::from_bits(bits),
    }
}

/// Rounds an f64 to float type `ty` and returns its bits.
pub fn float_bits(ty: Type, x: f64) -> u64 {
    match ty {
        Type::F16 => f16_from_f64(x).to_bits() as u64,
        Type::F32 => (x as f32).to_bits() as u64,
        _ => x.to_bits(),
    }
}

/// `x` rounded once to the nearest f16 (ties to even). `half::f16::from_f64` goes through f32
/// and can round twice: an f64 just above an f16 tie becomes the tie in f32 and then rounds to
/// even (e.g. 2209.00001 → 2208 instead of 2210). Rounding to odd in f32 first (24 bits ≥ 11 + 2)
/// keeps the final rounding exact.
pub fn f16_from_f64(x: f64) -> f16 {
    if !x.is_finite() {
        return f16::from_f64(x);
    }
    let mut r = x as f32;
    if r as f64 != x {
        if (r as f64).abs() > x.abs() {
            // Rounded away from zero: step back to the truncation.
            r = f32::from_bits(r.to_bits() - 1);
        }
        r = f32::from_bits(r.to_bits() | 1);
    }
    f16::from_f32(r)
}

fn f32_op(ty: Type, a: u64, f: impl Fn(f32) -> f32) -> u64 {
    match ty {
        Type::F16 => f16::from_f32(f(f16::from_bits(a as u16).to_f32())).to_bits() as u64,
        _ => f(f32::from_bits(a as u32)).to_bits() as u64,
    }
}

fn f32_op2(ty: Type, a: u64, b: u64, f: impl Fn(f32, f32) -> f32) -> u64 {
    match ty {
        Type::F16 => {
            let (x, y) = (
                f16::from_bits(a as u16).to_f32(),
                f16::from_bits(b as u16).to_f32(),
            );
            f16::from_f32(f(x, y)).to_bits() as u64
        }
        _ => f(f32::from_bits(a as u32), f32::from_bits(b as u32)).to_bits() as u64,
    }
}

fn min_num(a: f64, b: f64, ab: u64, bb: u64) -> u64 {
    if a.is_nan() {
        bb
    } else if b.is_nan() || a < b {
        ab
    } else if b < a {
        bb
    } else if a.is_sign_negative() {
        ab
    } else {
        bb
    }
}

fn max_num(a: f64, b: f64, ab: u64, bb: u64) -> u64 {
    if a.is_nan() {
        bb
    } else if b.is_nan() || a > b {
        ab
    } else if b > a {
        bb
    } else if a.is_sign_positive() {
        ab
    } else {
        bb
    }
}

/// Evaluates a unary operation.
pub fn eval_unary(op: UnaryOp, ty: Type, a: u64) -> u64 {
    let m = ty.mask();
    if ty.is_float() {
        let sign = 1u64 << (ty.bits() - 1);
        return match op {
            UnaryOp::Neg => a ^ sign,
            UnaryOp::Abs => a & !sign,
            UnaryOp::Not => !a & m,
            _ if ty == Type::F64 => {
                let x = f64::from_bits(a);
                let r = match op {
                    UnaryOp::Sqrt => x.sqrt(),
                    UnaryOp::Rcp => 1.0 / x,
                    UnaryOp::Exp2 => x.exp2(),
                    UnaryOp::Log2 => x.log2(),
                    UnaryOp::Sin => x.sin(),
                    UnaryOp::Floor => x.floor(),
                    UnaryOp::Ceil => x.ceil(),
                    UnaryOp::Trunc => x.trunc(),
                    UnaryOp::RoundEven => x.round_ties_even(),
                    UnaryOp::Rsqrt => 1.0 / x.sqrt(),
                    _ => x.cos(),
                };
                r.to_bits()
            }
            _ => f32_op(ty, a, |x| match op {
                UnaryOp::Sqrt => x.sqrt(),
                UnaryOp::Rcp => 1.0 / x,
                UnaryOp::Exp2 => x.exp2(),
                UnaryOp::Log2 => x.log2(),
                UnaryOp::Sin => x.sin(),
                UnaryOp::Floor => x.floor(),
                UnaryOp::Ceil => x.ceil(),
                UnaryOp::Trunc => x.trunc(),
                UnaryOp::RoundEven => x.round_ties_even(),
                // Through f64: one rounding, as `v_rsq_f32` on kjit's device.
                UnaryOp::Rsqrt => (1.0 / (x as f64).sqrt()) as f32,
                _ => x.cos(),
            }),
        };
    }
    match op {
        UnaryOp::Neg => a.wrapping_neg() & m,
        UnaryOp::Not => !a & m,
        UnaryOp::Abs if ty.is_signed() => (sext(a, ty.bits()).wrapping_abs() as u64) & m,
        _ => a,
    }
}

/// Evaluates a binary operation.
pub fn eval_binary(op: BinaryOp, ty: Type, a: u64, b: u64) -> u64 {
    if ty.is_float() {
        if ty == Type::F64 {
            let (x, y) = (f64::from_bits(a), f64::from_bits(b));
            return match op {
                BinaryOp::Add => (x + y).to_bits(),
                BinaryOp::Sub => (x - y).to_bits(),
                BinaryOp::Mul => (x * y).to_bits(),
                BinaryOp::Div => (x / y).to_bits(),
                BinaryOp::Min => min_num(x, y, a, b),
                BinaryOp::Max => max_num(x, y, a, b),
                _ => 0,
            };
        }
        return match op {
            BinaryOp::Add => f32_op2(ty, a, b, |x, y| x + y),
            BinaryOp::Sub => f32_op2(ty, a, b, |x, y| x - y),
            BinaryOp::Mul => f32_op2(ty, a, b, |x, y| x * y),
            BinaryOp::Div => f32_op2(ty, a, b, |x, y| x / y),
            BinaryOp::Min => min_num(float_value(ty, a), float_value(ty, b), a, b),
            BinaryOp::Max => max_num(float_value(ty, a), float_value(ty, b), a, b),
            _ => 0,
        };
    }
    let bits = ty.bits();
    let m = ty.mask();
    let signed = ty.is_signed();
    let (sa, sb) = (sext(a, bits), sext(b, bits));
    let amt = (b & (bits.max(1) as u64 - 1)) as u32;
    let r = match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Div => {
            if b & m == 0 {
                m
            } else if signed {
                sa.wrapping_div(sb) as u64
            } else {
                a / b
            }
        }
        BinaryOp::Rem => {
            if b & m == 0 {
                a
            } else if signed {
                sa.wrapping_rem(sb) as u64
            } else {
                a % b
            }
        }
        BinaryOp::Min => {
            if signed {
                sa.min(sb) as u64
            } else {
                a.min(b)
            }
        }
        BinaryOp::Max => {
            if signed {
                sa.max(sb) as u64
            } else {
                a.max(b)
            }
        }
        BinaryOp::And => a & b,
        BinaryOp::Or => a | b,
        BinaryOp::Xor => a ^ b,
        BinaryOp::Shl => a << amt,
        BinaryOp::Shr => {
            if signed {
                (sa >> amt) as u64
            } else {
                a >> amt
            }
        }
    };
    r & m
}

/// Evaluates a ternary operation.
pub fn eval_ternary(op: TernaryOp, ty: Type, a: u64, b: u64, c: u64) -> u64 {
    let m = ty.mask();
    match op {
        TernaryOp::Fma => match ty {
            Type::F64 => f64::from_bits(a)
                .mul_add(f64::from_bits(b), f64::from_bits(c))
                .to_bits(),
            Type::F32 => f32::from_bits(a as u32)
                .mul_add(f32::from_bits(b as u32), f32::from_bits(c as u32))
                .to_bits() as u64,
            _ => {
                let r = float_value(ty, a).mul_add(float_value(ty, b), float_value(ty, c));
                float_bits(ty, r)
            }
        },
        TernaryOp::LshlAdd => ((a << (b & 31)) & m).wrapping_add(c) & m,
        TernaryOp::Add3 => a.wrapping_add(b).wrapping_add(c) & m,
        TernaryOp::LshlOr => ((a << (b & 31)) | c) & m,
    }
}

/// Evaluates a comparison.
pub fn eval_cmp(op: CmpOp, ty: Type, a: u64, b: u64) -> bool {
    if ty.is_float() {
        let (x, y) = (float_value(ty, a), float_value(ty, b));
        return match op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => x < y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::Ge => x >= y,
        };
    }
    let ord = if ty.is_signed() {
        sext(a, ty.bits()).cmp(&sext(b, ty.bits()))
    } else {
        a.cmp(&b)
    };
    match op {
        CmpOp::Eq => ord.is_eq(),
        CmpOp::Ne => ord.is_ne(),
        CmpOp::Lt => ord.is_lt(),
        CmpOp::Le => ord.is_le(),
        CmpOp::Gt => ord.is_gt(),
        CmpOp::Ge => ord.is_ge(),
    }
}

/// Evaluates a conversion from `from` to `to`.
pub fn eval_convert(from: Type, to: Type, a: u64) -> u64 {
    if from == to {
        return a;
    }
    if to == Type::Bool {
        return if from.is_float() {
            (float_value(from, a) != 0.0) as u64
        } else {
            (a != 0) as u64
        };
    }
    if from == Type::Bool {
        return if to.is_float() {
            float_bits(to, a as f64)
        } else {
            a
        };
    }
    if from.is_int() {
        let wide = if from.is_signed() {
            sext(a, from.bits()) as u64
        } else {
            a
        };
        if to.is_int() {
            return wide & to.mask();
        }
        let x = if from.is_signed() {
            wide as i64 as f64
        } else {
            wide as f64
        };
        return match to {
            // f32 from a 64-bit integer: round once, directly.
            Type::F32 if from.is_signed() => (wide as i64 as f32).to_bits() as u64,
            Type::F32 => (wide as f32).to_bits() as u64,
            _ => float_bits(to, x),
        };
    }
    // From a float.
    let x = float_value(from, a);
    match to {
        Type::I32 => (x as i32) as u32 as u64,
        Type::U32 => (x as u32) as u64,
        Type::I64 => (x as i64) as u64,
        Type::U64 => x as u64,
        Type::F16 if from == Type::F32 => f16::from_f32(f32::from_bits(a as u32)).to_bits() as u64,
        _ => float_bits(to, x),
    }
}

/// Combines two values for a wave reduction or scan.
pub fn eval_reduce(op: ReduceOp, ty: Type, a: u64, b: u64) -> u64 {
    let bop = match op {
        ReduceOp::Add => BinaryOp::Add,
        ReduceOp::Min => BinaryOp::Min,
        ReduceOp::Max => BinaryOp::Max,
    };
    eval_binary(bop, ty, a, b)
}

/// The identity of a wave reduction (what an empty set of lanes reduces to). A float min or
/// max takes a quiet NaN, not ±inf: under minNum/maxNum a NaN operand yields the other one, so
/// a quiet NaN leaves every set unchanged, while ±inf would turn a set of NaNs (every lane's
/// `0 * inf`, say) into ±inf where the lanes alone reduce to NaN (the compiled code fills the
/// lanes outside EXEC with this value before its DPP tree, which then meets the lanes' NaNs).
pub fn reduce_identity(op: ReduceOp, ty: Type) -> u64 {
    match (op, ty.is_float()) {
        (ReduceOp::Add, false) => 0,
        (ReduceOp::Add, true) => float_bits(ty, -0.0),
        (ReduceOp::Min | ReduceOp::Max, true) => float_bits(ty, f64::NAN),
        (ReduceOp::Min, false) => {
            if ty.is_signed() {
                ty.mask() >> 1
            } else {
                ty.mask()
            }
        }
        (ReduceOp::Max, false) => {
            if ty.is_signed() {
                (ty.mask() >> 1) + 1
            } else {
                0
            }
        }
    }
}

/// The new memory value of an atomic operation; the instruction returns `old`.
pub fn eval_atomic(op: AtomicOp, ty: Type, old: u64, args: &[u64]) -> u64 {
    match op {
        AtomicOp::Add => eval_binary(BinaryOp::Add, ty, old, args[0]),
        AtomicOp::Min => eval_binary(BinaryOp::Min, ty, old, args[0]),
        AtomicOp::Max => eval_binary(BinaryOp::Max, ty, old, args[0]),
        AtomicOp::Xchg => args[0],
        AtomicOp::Cas => {
            if old == args[0] {
                args[1]
            } else {
                old
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f16 results are rounded once from their exact (f64) value: found by random_programs
    /// (seed 0x839a16b7eff04e53, gfx900), where `fma(47, 47, 1.0e-5)` in f16 gave 2208 (the f32
    /// tie rounded to even) instead of 2210, and the device was right.
    #[test]
    fn f16_rounds_once_from_f64() {
        let h = |x: f64| f16_from_f64(x).to_f64();
        assert_eq!(h(2209.0000100135803), 2210.0);
        assert_eq!(h(2209.0), 2208.0);
        assert_eq!(h(-2209.0000100135803), -2210.0);
        assert_eq!(h(2210.9999), 2210.0);
        assert_eq!(h(1e6), f64::INFINITY);
        assert_eq!(h(-1e300), f64::NEG_INFINITY);
        assert!(h(f64::NAN).is_nan());
        assert_eq!(h(1e-30), 0.0);
        let fma = eval_ternary(
            TernaryOp::Fma,
            Type::F16,
            f16::from_f32(47.0).to_bits() as u64,
            f16::from_f32(47.0).to_bits() as u64,
            0x00a8,
        );
        assert_eq!(f16::from_bits(fma as u16).to_f64(), 2210.0);
        // Every f16 value and every midpoint between neighbours round as the f16 grid says.
        for bits in 0u16..0x7bff {
            let a = f16::from_bits(bits).to_f64();
            let b = f16::from_bits(bits + 1).to_f64();
            let mid = (a + b) / 2.0;
            assert_eq!(h(a), a);
            let even = if bits % 2 == 0 { a } else { b };
            assert_eq!(h(mid), even, "tie between {a} and {b}");
            assert_eq!(h(mid + (b - a) * 1e-6), b);
            assert_eq!(h(mid - (b - a) * 1e-6), a);
        }
    }

    #[test]
    fn integer_edge_cases_follow_the_documented_rules() {
        let i = |x: i32| x as u32 as u64;
        assert_eq!(eval_binary(BinaryOp::Div, Type::I32, i(-7), i(2)), i(-3));
        assert_eq!(eval_binary(BinaryOp::Rem, Type::I32, i(-7), i(2)), i(-1));
        assert_eq!(
            eval_binary(BinaryOp::Div, Type::I32, i(i32::MIN), i(-1)),
            i(i32::MIN)
        );
        assert_eq!(eval_binary(BinaryOp::Div, Type::U32, 5, 0), u32::MAX as u64);
        assert_eq!(eval_binary(BinaryOp::Rem, Type::U32, 5, 0), 5);
        assert_eq!(eval_binary(BinaryOp::Shr, Type::I32, i(-8), 1), i(-4));
        assert_eq!(eval_binary(BinaryOp::Shr, Type::U32, i(-8), 1), 0x7fff_fffc);
        assert_eq!(eval_binary(BinaryOp::Shl, Type::U32, 1, 33), 2);
        assert_eq!(eval_binary(BinaryOp::Min, Type::I32, i(-1), 1), i(-1));
        assert_eq!(eval_binary(BinaryOp::Min, Type::U32, i(-1), 1), 1);
        assert_eq!(
            eval_unary(UnaryOp::Abs, Type::I32, i(i32::MIN)),
            i(i32::MIN)
        );
        assert_eq!(eval_convert(Type::I32, Type::I64, i(-2)), (-2i64) as u64);
        assert_eq!(eval_convert(Type::U32, Type::I64, i(-2)), 0xffff_fffe);
        assert_eq!(eval_convert(Type::I64, Type::U32, 0x1_0000_0005), 5);
    }

    #[test]
    fn float_edge_cases_follow_the_documented_rules() {
        let f = |x: f32| x.to_bits() as u64;
        assert_eq!(
            eval_binary(BinaryOp::Min, Type::F32, f(-0.0), f(0.0)),
            f(-0.0)
        );
        assert_eq!(
            eval_binary(BinaryOp::Min, Type::F32, f(0.0), f(-0.0)),
            f(-0.0)
        );
        assert_eq!(
            eval_binary(BinaryOp::Max, Type::F32, f(f32::NAN), f(2.0)),
            f(2.0)
        );
        assert_eq!(eval_convert(Type::F32, Type::I32, f(f32::NAN)), 0);
        assert_eq!(
            eval_convert(Type::F32, Type::I32, f(3e10)),
            i32::MAX as u32 as u64
        );
        assert_eq!(eval_convert(Type::F32, Type::U32, f(-5.0)), 0);
        assert_eq!(eval_convert(Type::F32, Type::F16, f(1.0)), 0x3c00);
        assert!(!eval_cmp(CmpOp::Eq, Type::F32, f(f32::NAN), f(f32::NAN)));
        assert!(eval_cmp(CmpOp::Ne, Type::F32, f(f32::NAN), f(f32::NAN)));
        // fma rounds once: (1+2^-23)^2 - 1 keeps the 2^-46 term.
        let a = f(1.0 + f32::EPSILON);
        let r = eval_ternary(TernaryOp::Fma, Type::F32, a, a, f(-1.0));
        assert_eq!(
            f32::from_bits(r as u32),
            2.0 * f32::EPSILON + f32::EPSILON * f32::EPSILON
        );
        // f16 arithmetic rounds to f16.
        let h = |x: f32| f16::from_f32(x).to_bits() as u64;
        assert_eq!(
            eval_binary(BinaryOp::Add, Type::F16, h(1.0), h(0.0004)),
            h(1.0)
        );
    }
}

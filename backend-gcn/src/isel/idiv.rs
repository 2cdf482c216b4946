//! 32-bit integer division and remainder (IR rules: `x / 0` is all ones, `x % 0` is `x`).
//!
//! Takes an IR `Div`/`Rem` on `i32`/`u32` and gives the quotient or remainder in a register:
//! - an unsigned division by a constant is a multiply by its magic number and shifts
//!   (Granlund and Montgomery), on the SALU when the dividend is uniform;
//! - otherwise a reciprocal estimate refined once (VALU: gfx9 has no scalar float ops),
//!   `q = mulhi(a, 1/b)`, and two correction steps. With uniform operands everything after the
//!   reciprocal runs on the SALU, and the reciprocal of a uniform divisor defined in the entry
//!   block is made once there (a loop's invariant divisor costs nothing per iteration).
//!   A divisor that cannot be 0 by its definition (`max(x, k)`, `x | k`, constant `k > 0`)
//!   skips the division-by-zero choice.
//!
//! One expansion gives both results, so a `/` and a `%` of the same operands in one block share
//! it (`divrem_cache`; isel DCE drops the half nobody reads).

use kjit_ir::{BinaryOp, Function, InstData, Type, Uniformity, Value, ValueDef};
use rustc_hash::FxHashSet;

use crate::mir::{RegClass, VReg};

use super::valu::Src;
use super::Isel;

/// `(m, shift, add)` with `x / d == mulhi(x, m) >> shift` for every `u32` x (`add` false), or,
/// when the multiplier needs 33 bits, `t = mulhi(x, m)`, `x / d == (((x - t) >> 1) + t) >> shift`.
/// For `d >= 2` not a power of two.
pub(crate) fn magic_u32(d: u32) -> (u32, u32, bool) {
    debug_assert!(d >= 2 && !d.is_power_of_two());
    let d = d as u128;
    // Smallest p with 2^p <= m*d <= 2^p + 2^(p-32), m = ceil(2^p / d): then
    // floor(x * m / 2^p) == floor(x / d) for all x < 2^32 (Granlund-Montgomery, theorem 4.2).
    for p in 32..=64u32 {
        let m = (1u128 << p).div_ceil(d);
        if m * d - (1u128 << p) <= 1u128 << (p - 32) {
            return if m < 1u128 << 32 {
                (m as u32, p - 32, false)
            } else {
                ((m - (1u128 << 32)) as u32, p - 33, true)
            };
        }
    }
    unreachable!("p = 32 + ceil(log2 d) always satisfies the bound")
}

/// Values that are the uniform, non-constant divisor of some 32-bit unsigned `Div`/`Rem`: their
/// reciprocal is made where they are defined if that is the entry block.
pub(crate) fn uniform_divisors(func: &Function, uni: &Uniformity) -> FxHashSet<Value> {
    let mut out = FxHashSet::default();
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            if let InstData::Binary {
                op: BinaryOp::Div | BinaryOp::Rem,
                args,
            } = func.insts[i]
            {
                let constant = match func.values[args[1]].def {
                    ValueDef::Result(d, _) => matches!(func.insts[d], InstData::Const { .. }),
                    _ => false,
                };
                if func.value_type(args[0]) == Type::U32 && uni.is_uniform(args[1]) && !constant {
                    out.insert(args[1]);
                }
            }
        }
    }
    out
}

impl Isel<'_> {
    /// After lowering the instruction defining `v`: its reciprocal, if `v` is a uniform divisor
    /// defined in the entry block (which dominates every use).
    pub(crate) fn hoist_reciprocal(&mut self, v: Value) {
        if self.cur != self.mf.entry() || !self.divisors.contains(&v) {
            return;
        }
        if self.class_of(v) != RegClass::Sgpr || self.recips.contains_key(&v) {
            return;
        }
        let b = self.val(v);
        let r = self.reciprocal(Src::R(b), true);
        self.recips.insert(v, r);
    }

    /// `a / b` or `a % b` on 32-bit integers.
    pub(crate) fn lower_divrem(
        &mut self,
        rem: bool,
        t: Type,
        args: [Value; 2],
        u: bool,
    ) -> Result<VReg, super::IselError> {
        let signed = t.is_signed();
        let key = (args[0], args[1], signed);
        if let Some(&(q, r)) = self.divrem_cache.get(&key) {
            return Ok(if rem { r } else { q });
        }
        let a = self.src(args[0]);
        let b = self.src(args[1]);
        let scalar = u && self.is_sgpr_src(a) && self.is_sgpr_src(b);
        let (q, r) = match b {
            Src::Imm(d) if !signed && d >= 2 => self.udivrem_const(a, d, scalar),
            _ if signed => self.sdivrem(a, b),
            _ => {
                let recip = self.recips.get(&args[1]).copied();
                let (q, r) = self.udivrem(a, b, recip, scalar);
                if self.nonzero(args[1]) {
                    (q, r)
                } else {
                    self.zero_divisor(b, q, r, scalar)
                }
            }
        };
        self.divrem_cache.insert(key, (q, r));
        Ok(if rem { r } else { q })
    }

    /// Whether `v` is never 0 by its definition: `max(x, k)` or `x | k` with a constant `k > 0`
    /// (as its type reads it), so a division by it needs no division-by-zero choice.
    fn nonzero(&self, v: Value) -> bool {
        let ValueDef::Result(i, _) = self.func.values[v].def else {
            return false;
        };
        let InstData::Binary {
            op: BinaryOp::Max | BinaryOp::Or,
            args,
        } = self.func.insts[i]
        else {
            return false;
        };
        args.iter().any(|&a| match self.const_of(a) {
            Some((Type::I32, bits)) => bits as u32 as i32 > 0,
            Some((Type::U32, bits)) => bits as u32 != 0,
            _ => false,
        })
    }

    /// The scaled reciprocal `ri ≈ 2^32 / b` (from below), refined once: in an SGPR when
    /// `scalar` (the float part on the VALU, then `v_readfirstlane_b32`).
    fn reciprocal(&mut self, b: Src, scalar: bool) -> VReg {
        let fb = self.v("v_cvt_f32_u32", &[b]);
        let r = self.v("v_rcp_iflag_f32", &[Src::R(fb)]);
        let r = self.v("v_mul_f32", &[Src::Imm(0x4f7f_fffe), Src::R(r)]);
        let ri = self.v("v_cvt_u32_f32", &[Src::R(r)]);
        let (sub, mul, mulhi, add) = ops(scalar);
        let ri = if scalar {
            self.to_class(ri, RegClass::Sgpr)
        } else {
            ri
        };
        let nb = self.arith(sub, Src::Imm(0), b);
        let t = self.arith(mul, Src::R(nb), Src::R(ri));
        let h = self.arith(mulhi, Src::R(ri), Src::R(t));
        self.arith(add, Src::R(ri), Src::R(h))
    }

    /// Unsigned quotient and remainder (wrong for `b == 0`: see [`Isel::zero_divisor`]).
    fn udivrem(&mut self, a: Src, b: Src, recip: Option<VReg>, scalar: bool) -> (VReg, VReg) {
        let (a, b) = if scalar {
            (a, b)
        } else {
            (
                Src::R(self.reg(a, RegClass::Vgpr)),
                Src::R(self.reg(b, RegClass::Vgpr)),
            )
        };
        let ri = match recip {
            Some(r) => r,
            None => self.reciprocal(b, scalar),
        };
        let (sub, mul, mulhi, add) = ops(scalar);
        let mut q = self.arith(mulhi, a, Src::R(ri));
        let p = self.arith(mul, Src::R(q), b);
        let mut rm = self.arith(sub, a, Src::R(p));
        // The estimate is low by at most 2.
        for _ in 0..2 {
            let q1 = self.arith(add, Src::Imm(1), Src::R(q));
            let r1 = self.arith(sub, Src::R(rm), b);
            let ge = self.compare("ge_u32", Src::R(rm), b, scalar);
            q = self.choose(ge, Src::R(q1), Src::R(q), scalar);
            rm = self.choose(ge, Src::R(r1), Src::R(rm), scalar);
        }
        (q, rm)
    }

    /// Both results with the IR's division-by-zero values: all ones and the dividend. Only the
    /// quotient needs the choice: with `b == 0` the remainder already is the dividend (the
    /// product `q * b` is 0 and neither correction step changes it, whatever the reciprocal
    /// gave; the signed form puts the dividend's sign back on `|a|`).
    fn zero_divisor(&mut self, b: Src, q: VReg, r: VReg, scalar: bool) -> (VReg, VReg) {
        let z = self.compare("eq_u32", Src::Imm(0), b, scalar);
        let q = self.choose(z, Src::Imm(u32::MAX), Src::R(q), scalar);
        (q, r)
    }

    /// Signed division (on the VALU): the unsigned one on magnitudes, signs put back.
    fn sdivrem(&mut self, a: Src, b: Src) -> (VReg, VReg) {
        let a = Src::R(self.reg(a, RegClass::Vgpr));
        let b = Src::R(self.reg(b, RegClass::Vgpr));
        let na = self.v("v_sub_u32", &[Src::Imm(0), a]);
        let ua = self.v("v_max_i32", &[a, Src::R(na)]);
        let nb = self.v("v_sub_u32", &[Src::Imm(0), b]);
        let ub = self.v("v_max_i32", &[b, Src::R(nb)]);
        let (q, r) = self.udivrem(Src::R(ua), Src::R(ub), None, false);
        // Quotient sign: the operands' signs differ; remainder sign: the dividend's.
        let x = self.v("v_xor_b32", &[a, b]);
        let qs = self.v("v_ashrrev_i32", &[Src::Imm(31), Src::R(x)]);
        let rs = self.v("v_ashrrev_i32", &[Src::Imm(31), a]);
        let q = self.v("v_xor_b32", &[Src::R(q), Src::R(qs)]);
        let q = self.v("v_sub_u32", &[Src::R(q), Src::R(qs)]);
        let r = self.v("v_xor_b32", &[Src::R(r), Src::R(rs)]);
        let r = self.v("v_sub_u32", &[Src::R(r), Src::R(rs)]);
        self.zero_divisor(b, q, r, false)
    }

    /// Unsigned division by the constant `d >= 2`.
    fn udivrem_const(&mut self, a: Src, d: u32, scalar: bool) -> (VReg, VReg) {
        let (_, mul, mulhi, add) = ops(scalar);
        let shr = |s: &mut Self, x: VReg, k: u32| -> VReg {
            if k == 0 {
                x
            } else if scalar {
                s.sop2("s_lshr_b32", &[Src::R(x), Src::Imm(k)])
            } else {
                s.v("v_lshrrev_b32", &[Src::Imm(k), Src::R(x)])
            }
        };
        let sub = if scalar { "s_sub_u32" } else { "v_sub_u32" };
        let a = if scalar {
            a
        } else {
            Src::R(self.reg(a, RegClass::Vgpr))
        };
        if d.is_power_of_two() {
            let a = self.reg(
                a,
                if scalar {
                    RegClass::Sgpr
                } else {
                    RegClass::Vgpr
                },
            );
            let q = shr(self, a, d.trailing_zeros());
            let and = if scalar { "s_and_b32" } else { "v_and_b32" };
            let r = self.arith(and, Src::R(a), Src::Imm(d - 1));
            return (q, r);
        }
        let (m, shift, add_step) = magic_u32(d);
        let t = self.arith(mulhi, a, Src::Imm(m));
        let q = if add_step {
            let x = self.arith(sub, a, Src::R(t));
            let x = shr(self, x, 1);
            let x = self.arith(add, Src::R(x), Src::R(t));
            shr(self, x, shift)
        } else {
            shr(self, t, shift)
        };
        let p = self.arith(mul, Src::R(q), Src::Imm(d));
        let r = self.arith(sub, a, Src::R(p));
        (q, r)
    }

    /// A two-source SALU (`s_*`) or VALU (`v_*`) instruction.
    fn arith(&mut self, name: &str, a: Src, b: Src) -> VReg {
        if name.starts_with("s_") {
            self.sop2(name, &[a, b])
        } else {
            self.v(name, &[a, b])
        }
    }

    /// `a OP b` as SCC (`s_cmp_*`, `None`) or as a lane mask (`v_cmp_*`).
    fn compare(&mut self, cond: &str, a: Src, b: Src, scalar: bool) -> Option<VReg> {
        if scalar {
            self.salu(&format!("s_cmp_{cond}"), None, &[a, b]);
            None
        } else {
            Some(self.vcmp(&format!("v_cmp_{cond}"), a, b))
        }
    }

    /// `cond ? yes : no` after [`Isel::compare`]: `s_cselect_b32` of SCC or `v_cndmask_b32`.
    fn choose(&mut self, cond: Option<VReg>, yes: Src, no: Src, scalar: bool) -> VReg {
        match cond {
            None if scalar => self.sop2("s_cselect_b32", &[yes, no]),
            Some(m) => {
                let no = Src::R(self.reg(no, RegClass::Vgpr));
                let d = self.new_vreg(RegClass::Vgpr, 1);
                self.vop("v_cndmask_b32", &[d], &[no, yes, Src::R(m)]);
                d
            }
            None => unreachable!("a VALU choice has a lane mask"),
        }
    }
}

/// The subtract, multiply, high multiply and add of the scalar or vector expansion.
fn ops(scalar: bool) -> (&'static str, &'static str, &'static str, &'static str) {
    if scalar {
        ("s_sub_u32", "s_mul_i32", "s_mul_hi_u32", "s_add_u32")
    } else {
        ("v_sub_u32", "v_mul_lo_u32", "v_mul_hi_u32", "v_add_u32")
    }
}

#[cfg(test)]
mod tests {
    use super::magic_u32;

    /// The emitted sequence of [`super::Isel::udivrem_const`], evaluated.
    fn quotient(x: u32, d: u32) -> u32 {
        let (m, shift, add) = magic_u32(d);
        let t = ((x as u64 * m as u64) >> 32) as u32;
        if add {
            (((x - t) >> 1) + t) >> shift
        } else {
            t >> shift
        }
    }

    #[test]
    fn magic_numbers_divide_exactly_at_the_edges_and_at_random() {
        let mut ds: Vec<u32> = vec![3, 5, 6, 7, 10, 11, 25, 125, 254, 255, 641, 1000, 65_535];
        ds.extend([0x7fff_ffff, 0x8000_0001, 0xffff_fffe, 0xffff_ffff, 3 << 30]);
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u32
        };
        for _ in 0..200 {
            ds.push(next() >> (next() % 31));
        }
        for &d in ds.iter().filter(|d| **d >= 2 && !d.is_power_of_two()) {
            let mut xs = vec![0, 1, d - 1, d, d.wrapping_add(1), u32::MAX, u32::MAX - 1];
            xs.extend((1..=(u32::MAX / d).min(4)).map(|k| k * d - 1));
            xs.push((u32::MAX / d) * d);
            xs.extend((0..300).map(|_| next()));
            for x in xs {
                assert_eq!(quotient(x, d), x / d, "{x} / {d}");
            }
        }
    }

    #[test]
    fn a_divisor_with_a_33_bit_multiplier_takes_the_add_step() {
        // 7's multiplier is 2^32 + 0x24924925 (Hacker's Delight, table 10-2).
        assert_eq!(magic_u32(7), (0x2492_4925, 2, true));
        assert_eq!(magic_u32(3), (0xaaaa_aaab, 1, false));
    }
}

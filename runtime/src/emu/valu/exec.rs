//! The vector-ALU dispatcher: reads operands for all 64 lanes (applying DPP, SDWA, `op_sel`,
//! `abs`/`neg` once per instruction), runs one lane function over the arrays, and writes the
//! lanes allowed by EXEC (narrowed by DPP masks), with the output modifiers, SDWA destination
//! select and 16-bit high-half rules applied.

use super::compare::{class, IntPred};
use super::convert::{self, Fp8};
use super::float::{self as fl, FloatMode};
use super::half as h;
use super::int;
use super::lanes;
use super::mfma;
use super::ops::{CmpKind, CmpType, Op, ValuOp};
use super::transcendental::{self as tr, TransOp};
use super::{Form, ValuInst};
use crate::emu::wave::{code, EmuError, Lanes, SrcType, Wave, LANES};

type L64 = [u64; LANES];

/// How a 32-bit source is interpreted (decides inline constants and abs/neg).
#[derive(Clone, Copy, PartialEq, Eq)]
enum T {
    /// Raw bits / integer.
    B,
    /// f32.
    F,
    /// f16 in the low half.
    H,
    /// 16-bit integer in the low half.
    S,
}

struct X<'a> {
    w: &'a mut Wave,
    i: &'a ValuInst,
    mode: FloatMode,
    /// Lanes that will be written (EXEC, narrowed by DPP row/bank masks and invalid sources).
    write: u64,
    /// DPP source map for src0, computed once.
    dpp: Option<[Option<u8>; 64]>,
}

/// Executes one vector-ALU instruction on `wave`. Errors (an unsupported modifier or operand) are
/// returned unlocated; the scheduler adds wave, pc and instruction text.
pub fn execute(wave: &mut Wave, inst: &ValuInst) -> Result<(), EmuError> {
    let mode = FloatMode::from_mode_register(wave.mode);
    let mut write = wave.exec;
    let mut dpp = None;
    if let Form::Dpp(d) = inst.form {
        write &= lanes::dpp_write_mask(wave.exec, d.row_mask, d.bank_mask);
        dpp = Some(lanes::dpp_map(d.ctrl).map_err(EmuError::illegal)?);
    }
    let mut x = X {
        w: wave,
        i: inst,
        mode,
        write,
        dpp,
    };
    match inst.op {
        ValuOp::Op(op) => x.op(op),
        ValuOp::Cmp(c) => x.cmp(c),
        ValuOp::Mfma(s) => x.mfma(&s),
    }
}

/// Replaces each lane's denormal by a signed zero, unless the MODE keeps denormals.
#[inline(always)]
fn flush_lanes<T: fl::FloatBits>(v: &mut [T], keep_denormals: bool) {
    if !keep_denormals {
        for x in v.iter_mut() {
            *x = fl::flush(*x);
        }
    }
}

#[inline(always)]
fn map1(a: &Lanes, f: impl Fn(u32) -> u32) -> Lanes {
    let mut o = [0u32; LANES];
    for l in 0..LANES {
        o[l] = f(a[l]);
    }
    o
}

#[inline(always)]
fn map2(a: &Lanes, b: &Lanes, f: impl Fn(u32, u32) -> u32) -> Lanes {
    let mut o = [0u32; LANES];
    for l in 0..LANES {
        o[l] = f(a[l], b[l]);
    }
    o
}

#[inline(always)]
fn map3(a: &Lanes, b: &Lanes, c: &Lanes, f: impl Fn(u32, u32, u32) -> u32) -> Lanes {
    let mut o = [0u32; LANES];
    for l in 0..LANES {
        o[l] = f(a[l], b[l], c[l]);
    }
    o
}

#[inline(always)]
fn f(x: u32) -> f32 {
    f32::from_bits(x)
}

#[inline(always)]
fn d(x: u64) -> f64 {
    f64::from_bits(x)
}

/// f32 lanes (`u32`) or f64 lanes (`u64`): how a float loop reads, flushes, finishes and writes
/// each width, so that one generic loop ([`X::float_1`], [`X::float_3`], ...) serves both.
trait FloatLane: fl::FloatBits + Default {
    type F: Copy;
    fn float(self) -> Self::F;
    fn from_float(v: Self::F) -> Self;
    /// MODE's denormal switches for this width: (inputs kept, outputs kept).
    fn denormals(mode: &FloatMode) -> (bool, bool);
    fn omod_clamp(v: Self::F, omod: u8, clamp: bool, dx10: bool) -> Self::F;
    /// Source `n` with its modifiers (see [`X::rd`], [`X::rd64`]).
    fn read(x: &mut X, n: usize) -> Result<[Self; LANES], EmuError>;
    fn write(x: &mut X, r: &[Self; LANES]) -> Result<(), EmuError>;
}

impl FloatLane for u32 {
    type F = f32;
    fn float(self) -> f32 {
        f32::from_bits(self)
    }
    fn from_float(v: f32) -> u32 {
        v.to_bits()
    }
    fn denormals(mode: &FloatMode) -> (bool, bool) {
        (mode.f32_denorm_in, mode.f32_denorm_out)
    }
    fn omod_clamp(v: f32, omod: u8, clamp: bool, dx10: bool) -> f32 {
        fl::omod_clamp_f32(v, omod, clamp, dx10)
    }
    fn read(x: &mut X, n: usize) -> Result<Lanes, EmuError> {
        x.rd(n, T::F)
    }
    fn write(x: &mut X, r: &Lanes) -> Result<(), EmuError> {
        x.wr(r)
    }
}

impl FloatLane for u64 {
    type F = f64;
    fn float(self) -> f64 {
        f64::from_bits(self)
    }
    fn from_float(v: f64) -> u64 {
        v.to_bits()
    }
    fn denormals(mode: &FloatMode) -> (bool, bool) {
        (mode.f64_denorm_in, mode.f64_denorm_out)
    }
    fn omod_clamp(v: f64, omod: u8, clamp: bool, dx10: bool) -> f64 {
        fl::omod_clamp_f64(v, omod, clamp, dx10)
    }
    fn read(x: &mut X, n: usize) -> Result<L64, EmuError> {
        x.rd64(n, SrcType::F64)
    }
    fn write(x: &mut X, r: &L64) -> Result<(), EmuError> {
        x.wr64(r)
    }
}

fn unsupported(what: String) -> EmuError {
    EmuError::unsupported(what)
}

/// A 32-bit source seen in place: a VGPR borrowed from the wave, or a broadcast scalar. The
/// common operand forms (no DPP/SDWA/op_sel/abs/neg, no AGPR) are read this way instead of being
/// copied into a fresh 64-lane array per source.
#[derive(Clone, Copy)]
enum S32<'a> {
    V(&'a Lanes),
    K(u32),
}

impl S32<'_> {
    #[inline(always)]
    fn at(&self, l: usize) -> u32 {
        match self {
            S32::V(v) => v[l],
            S32::K(k) => *k,
        }
    }
}

/// A 64-bit source seen in place: a VGPR pair or a broadcast scalar pair/constant.
#[derive(Clone, Copy)]
enum S64<'a> {
    V(&'a Lanes, &'a Lanes),
    K(u64),
}

impl S64<'_> {
    #[inline(always)]
    fn at(&self, l: usize) -> u64 {
        match self {
            S64::V(lo, hi) => lo[l] as u64 | (hi[l] as u64) << 32,
            S64::K(k) => *k,
        }
    }
}

impl X<'_> {
    fn vop3(&self) -> bool {
        matches!(self.i.form, Form::Vop3 | Form::Vop3p)
    }

    // ---------------------------------------------------------------- operand reading

    /// Source `n` in place when nothing transforms it (see [`S32`]); `None` sends the caller to
    /// the general path ([`X::rd`]), which also reports bad operands.
    #[inline(always)]
    fn plain(&self, n: usize, ty: SrcType) -> Option<S32<'_>> {
        let i = self.i;
        if !matches!(i.form, Form::E32 | Form::Vop3)
            || (i.abs | i.neg) >> n & 1 != 0
            || i.acc >> (n + 1) & 1 != 0
        {
            return None;
        }
        // op_sel only matters for 16-bit types, which never come here.
        let c = i.src[n];
        if c >= code::VGPR0 {
            self.w.vgpr.get((c - code::VGPR0) as usize).map(S32::V)
        } else {
            self.w.read_scalar(c, i.literal, ty).ok().map(S32::K)
        }
    }

    /// 64-bit source `n` in place (see [`X::plain`]); for raw-bit types only (no abs/neg).
    #[inline(always)]
    fn plain64(&self, n: usize, ty: SrcType) -> Option<S64<'_>> {
        let i = self.i;
        if !matches!(i.form, Form::E32 | Form::Vop3) || i.acc >> (n + 1) & 1 != 0 {
            return None;
        }
        if ty == SrcType::F64 && (i.abs | i.neg) >> n & 1 != 0 {
            return None;
        }
        let c = i.src[n];
        if c >= code::VGPR0 {
            let r = (c - code::VGPR0) as usize;
            match (self.w.vgpr.get(r), self.w.vgpr.get(r + 1)) {
                (Some(lo), Some(hi)) => Some(S64::V(lo, hi)),
                _ => None,
            }
        } else {
            self.w.read_scalar64(c, i.literal, ty).ok().map(S64::K)
        }
    }

    /// Raw 32-bit source `n` (VGPR, AGPR or broadcast scalar), before any modifier.
    fn raw(&self, n: usize, ty: SrcType) -> Result<Lanes, EmuError> {
        let c = self.i.src[n];
        let mut out = [0u32; LANES];
        if c >= code::VGPR0 && self.i.acc >> (n + 1) & 1 != 0 {
            let r = (c - code::VGPR0) as usize;
            let a = self.w.agpr.get(r).ok_or_else(|| {
                EmuError::illegal(format!("a{r} does not exist on {}", self.w.target))
            })?;
            out = *a;
        } else {
            self.w.read_vsrc(c, self.i.literal, ty, &mut out)?;
        }
        Ok(out)
    }

    /// Source `n` as the operation sees it: DPP-gathered (src0), SDWA-selected (src0/1),
    /// `op_sel` high half (16-bit VOP3), then `abs`/`neg` for float types.
    fn rd(&mut self, n: usize, t: T) -> Result<Lanes, EmuError> {
        let st = match t {
            T::B | T::S => SrcType::B32,
            T::F => SrcType::F32,
            T::H => SrcType::F16,
        };
        let mut v = self.raw(n, st)?;
        if n == 0 {
            if let (Some(map), Form::Dpp(dp)) = (&self.dpp, self.i.form) {
                let src = v;
                lanes::dpp_gather(
                    &src,
                    map,
                    self.w.exec,
                    dp.bound_ctrl,
                    &mut self.write,
                    &mut v,
                );
            }
        }
        if let Form::Sdwa(sd) = self.i.form {
            if n < 2 {
                let (sel, sext) = (sd.src_sel[n], sd.sext[n]);
                for x in v.iter_mut() {
                    *x = sel.extract(*x, sext);
                }
            }
        }
        if matches!(t, T::H | T::S) && self.i.form == Form::Vop3 && self.i.op_sel >> n & 1 != 0 {
            for x in v.iter_mut() {
                *x >>= 16;
            }
        }
        let (abs, neg) = (self.i.abs >> n & 1 != 0, self.i.neg >> n & 1 != 0);
        if abs || neg {
            let sign = match t {
                T::F => 0x8000_0000u32,
                T::H => 0x8000,
                _ => 0,
            };
            if sign != 0 {
                for x in v.iter_mut() {
                    if abs {
                        *x &= !sign;
                    }
                    if neg {
                        *x ^= sign;
                    }
                }
            }
        }
        Ok(v)
    }

    /// 64-bit source `n` with DPP (src0) and `abs`/`neg` on bit 63 when `float`.
    fn rd64(&mut self, n: usize, ty: SrcType) -> Result<L64, EmuError> {
        let mut v = [0u64; LANES];
        self.w
            .read_vsrc64(self.i.src[n], self.i.literal, ty, &mut v)?;
        if n == 0 {
            if let (Some(map), Form::Dpp(dp)) = (&self.dpp, self.i.form) {
                let src = v;
                lanes::dpp_gather(
                    &src,
                    map,
                    self.w.exec,
                    dp.bound_ctrl,
                    &mut self.write,
                    &mut v,
                );
            }
        }
        if ty == SrcType::F64 {
            let (abs, neg) = (self.i.abs >> n & 1 != 0, self.i.neg >> n & 1 != 0);
            for x in v.iter_mut() {
                if abs {
                    *x &= !fl::F64_SIGN;
                }
                if neg {
                    *x ^= fl::F64_SIGN;
                }
            }
        }
        Ok(v)
    }

    /// A scalar (per-wave) mask operand: VCC for E32/DPP/SDWA forms, the src2 scalar pair in VOP3.
    fn mask_in(&self) -> Result<u64, EmuError> {
        if self.vop3() {
            self.w
                .read_scalar64(self.i.src[2], self.i.literal, SrcType::B64)
        } else {
            Ok(self.w.vcc)
        }
    }

    // ---------------------------------------------------------------- result writing

    /// The destination register's current value (for preserved bits and accumulating forms).
    fn dst_old(&self) -> Result<Lanes, EmuError> {
        self.check_dst(1)?;
        let r = self.i.vdst as usize;
        Ok(if self.i.acc & 1 != 0 {
            self.w.agpr[r]
        } else {
            self.w.vgpr[r]
        })
    }

    fn check_dst(&self, regs: usize) -> Result<(), EmuError> {
        let r = self.i.vdst as usize;
        let (limit, kind) = if self.i.acc & 1 != 0 {
            (self.w.agpr_limit as usize, "a")
        } else {
            (self.w.vgpr_limit as usize, "v")
        };
        let file = if self.i.acc & 1 != 0 {
            self.w.agpr.len()
        } else {
            self.w.vgpr.len()
        };
        let limit = limit.min(file);
        if r + regs > limit {
            return Err(EmuError::illegal(format!(
                "writes {kind}{}, beyond the {limit} registers the kernel descriptor allocates",
                r + regs - 1
            )));
        }
        Ok(())
    }

    /// Writes a 32-bit result (SDWA destination select applied).
    fn wr(&mut self, vals: &Lanes) -> Result<(), EmuError> {
        self.check_dst(1)?;
        let sdwa;
        let v = if let Form::Sdwa(sd) = self.i.form {
            let old = self.dst_old()?;
            let mut x = *vals;
            for l in 0..LANES {
                x[l] = lanes::sdwa_insert(x[l], old[l], sd.dst_sel, sd.dst_unused);
            }
            sdwa = x;
            &sdwa
        } else {
            vals
        };
        let r = self.i.vdst as usize;
        if self.i.acc & 1 != 0 {
            let dst = &mut self.w.agpr[r];
            for l in 0..LANES {
                if self.write >> l & 1 != 0 {
                    dst[l] = v[l];
                }
            }
        } else {
            self.w.write_vgpr(r, v, self.write);
        }
        Ok(())
    }

    /// Writes a 16-bit result: `zero_high` ops clear bits [31:16] (gfx9 rule for most 16-bit
    /// opcodes); the others preserve them, and VOP3 `op_sel[3]` writes the high half instead.
    fn wr16(&mut self, vals: &Lanes, zero_high: bool) -> Result<(), EmuError> {
        if matches!(self.i.form, Form::Sdwa(_)) {
            return self.wr(&map1(vals, |x| x & 0xffff));
        }
        let old = self.dst_old()?;
        let hi = self.i.form == Form::Vop3 && self.i.op_sel & 8 != 0;
        let mut v = [0u32; LANES];
        for l in 0..LANES {
            let x = vals[l] & 0xffff;
            v[l] = if hi {
                (old[l] & 0xffff) | (x << 16)
            } else if zero_high {
                x
            } else {
                (old[l] & 0xffff_0000) | x
            };
        }
        self.wr(&v)
    }

    fn wr64(&mut self, vals: &L64) -> Result<(), EmuError> {
        self.check_dst(2)?;
        let r = self.i.vdst as usize;
        self.w.write_vgpr64(r, vals, self.write)
    }

    /// Writes a lane mask to the scalar destination (inactive lanes read 0).
    fn wr_mask(&mut self, m: u64) -> Result<(), EmuError> {
        let m = m & self.w.exec;
        let c = if self.vop3() {
            self.i.sdst
        } else if let Form::Sdwa(_) = self.i.form {
            self.i.sdst
        } else {
            code::VCC_LO
        };
        self.w.write_scalar64(c, m)
    }

    // ---------------------------------------------------------------- typed lane loops

    /// Flushes input denormals of a float source unless MODE keeps them.
    fn flush_in<L: FloatLane>(&self, v: &mut [L; LANES]) {
        flush_lanes(v, L::denormals(&self.mode).0);
    }

    /// Finishes a float result (output denormals, `omod`, `clamp`) and writes it.
    fn float_fin<L: FloatLane>(&mut self, mut r: [L; LANES]) -> Result<(), EmuError> {
        flush_lanes(&mut r, L::denormals(&self.mode).1);
        if self.i.omod != 0 || self.i.clamp {
            let (om, cl, dx) = (self.i.omod, self.i.clamp, self.mode.dx10_clamp);
            for x in r.iter_mut() {
                *x = L::from_float(L::omod_clamp(x.float(), om, cl, dx));
            }
        }
        L::write(self, &r)
    }

    /// Float source `n`, input denormals flushed.
    fn float_in<L: FloatLane>(&mut self, n: usize) -> Result<[L; LANES], EmuError> {
        let mut v = L::read(self, n)?;
        self.flush_in(&mut v);
        Ok(v)
    }

    fn float_1<L: FloatLane>(&mut self, op: impl Fn(L::F) -> L::F) -> Result<(), EmuError> {
        let a = self.float_in::<L>(0)?;
        let r = std::array::from_fn(|l| L::from_float(op(a[l].float())));
        self.float_fin(r)
    }

    fn float_2<L: FloatLane>(&mut self, op: impl Fn(L::F, L::F) -> L::F) -> Result<(), EmuError> {
        let a = self.float_in::<L>(0)?;
        let b = self.float_in::<L>(1)?;
        let r = std::array::from_fn(|l| L::from_float(op(a[l].float(), b[l].float())));
        self.float_fin(r)
    }

    /// Three float sources; `c` given for VOP2 accumulate forms (`v_fmac`: D is the addend).
    fn float_3<L: FloatLane>(
        &mut self,
        c: Option<[L; LANES]>,
        op: impl Fn(L::F, L::F, L::F) -> L::F,
    ) -> Result<(), EmuError> {
        let a = self.float_in::<L>(0)?;
        let b = self.float_in::<L>(1)?;
        let c = match c {
            Some(mut c) => {
                self.flush_in(&mut c);
                c
            }
            None => self.float_in::<L>(2)?,
        };
        let r =
            std::array::from_fn(|l| L::from_float(op(a[l].float(), b[l].float(), c[l].float())));
        self.float_fin(r)
    }

    /// `v_div_scale_f32/f64`: the scaled value to D, the post-scale flags to the scalar
    /// destination (no denormal flushing or output modifiers).
    fn div_scale<L: FloatLane>(
        &mut self,
        op: impl Fn(L::F, L::F, L::F) -> (L::F, bool),
    ) -> Result<(), EmuError> {
        let a = L::read(self, 0)?;
        let b = L::read(self, 1)?;
        let c = L::read(self, 2)?;
        let mut r = [L::default(); LANES];
        let mut m = 0u64;
        for l in 0..LANES {
            let (v, s) = op(a[l].float(), b[l].float(), c[l].float());
            r[l] = L::from_float(v);
            m |= (s as u64) << l;
        }
        L::write(self, &r)?;
        let m = m & self.write;
        self.w.write_scalar64(self.i.sdst, m)
    }

    /// `v_div_fmas_f32/f64`: a fused multiply-add post-scaled in the lanes VCC selects.
    fn div_fmas<L: FloatLane>(
        &mut self,
        op: impl Fn(L::F, L::F, L::F, bool) -> L::F,
    ) -> Result<(), EmuError> {
        let vcc = self.w.vcc;
        let a = L::read(self, 0)?;
        let b = L::read(self, 1)?;
        let c = L::read(self, 2)?;
        let r = std::array::from_fn(|l| {
            L::from_float(op(
                a[l].float(),
                b[l].float(),
                c[l].float(),
                vcc >> l & 1 != 0,
            ))
        });
        self.float_fin(r)
    }

    fn f32_2(&mut self, op: impl Fn(f32, f32) -> f32) -> Result<(), EmuError> {
        if let (Some(a), Some(b)) = (self.plain(0, SrcType::F32), self.plain(1, SrcType::F32)) {
            let fl_in = !self.mode.f32_denorm_in;
            let inp = |x: u32| if fl_in { fl::flush(x) } else { x };
            let mut r = [0u32; LANES];
            for l in 0..LANES {
                r[l] = op(f(inp(a.at(l))), f(inp(b.at(l)))).to_bits();
            }
            return self.float_fin(r);
        }
        self.float_2::<u32>(op)
    }

    fn f32_2b(&mut self, op: impl Fn(u32, u32) -> u32) -> Result<(), EmuError> {
        let mut a = self.rd(0, T::F)?;
        let mut b = self.rd(1, T::F)?;
        self.flush_in(&mut a);
        self.flush_in(&mut b);
        let r = map2(&a, &b, op);
        self.float_fin(r)
    }

    fn f32_3b(&mut self, op: impl Fn(u32, u32, u32) -> u32) -> Result<(), EmuError> {
        let mut a = self.rd(0, T::F)?;
        let mut b = self.rd(1, T::F)?;
        let mut c = self.rd(2, T::F)?;
        self.flush_in(&mut a);
        self.flush_in(&mut b);
        self.flush_in(&mut c);
        let r = map3(&a, &b, &c, op);
        self.float_fin(r)
    }

    fn u32_1(&mut self, op: impl Fn(u32) -> u32) -> Result<(), EmuError> {
        if let Some(a) = self.plain(0, SrcType::B32) {
            let mut r = [0u32; LANES];
            for l in 0..LANES {
                r[l] = op(a.at(l));
            }
            return self.wr(&r);
        }
        let a = self.rd(0, T::B)?;
        self.wr(&map1(&a, op))
    }

    fn u32_2(&mut self, op: impl Fn(u32, u32) -> u32) -> Result<(), EmuError> {
        if let (Some(a), Some(b)) = (self.plain(0, SrcType::B32), self.plain(1, SrcType::B32)) {
            let mut r = [0u32; LANES];
            for l in 0..LANES {
                r[l] = op(a.at(l), b.at(l));
            }
            return self.wr(&r);
        }
        let a = self.rd(0, T::B)?;
        let b = self.rd(1, T::B)?;
        self.wr(&map2(&a, &b, op))
    }

    fn u32_3(&mut self, op: impl Fn(u32, u32, u32) -> u32) -> Result<(), EmuError> {
        if let (Some(a), Some(b), Some(c)) = (
            self.plain(0, SrcType::B32),
            self.plain(1, SrcType::B32),
            self.plain(2, SrcType::B32),
        ) {
            let mut r = [0u32; LANES];
            for l in 0..LANES {
                r[l] = op(a.at(l), b.at(l), c.at(l));
            }
            return self.wr(&r);
        }
        let a = self.rd(0, T::B)?;
        let b = self.rd(1, T::B)?;
        let c = self.rd(2, T::B)?;
        self.wr(&map3(&a, &b, &c, op))
    }

    fn flush16(&self, v: &mut Lanes) {
        if !self.mode.f64_denorm_in {
            for x in v.iter_mut() {
                *x = h::flush(*x as u16) as u32;
            }
        }
    }

    fn fin16(&mut self, mut r: Lanes, zero_high: bool) -> Result<(), EmuError> {
        if !self.mode.f64_denorm_out {
            for x in r.iter_mut() {
                *x = h::flush(*x as u16) as u32;
            }
        }
        if self.i.omod != 0 || self.i.clamp {
            let (om, cl, dx) = (self.i.omod, self.i.clamp, self.mode.dx10_clamp);
            r = map1(&r, |x| h::omod_clamp(x as u16, om, cl, dx) as u32);
        }
        self.wr16(&r, zero_high)
    }

    fn f16_1(&mut self, op: impl Fn(u16) -> u16) -> Result<(), EmuError> {
        let mut a = self.rd(0, T::H)?;
        self.flush16(&mut a);
        let r = map1(&a, |x| op(x as u16) as u32);
        self.fin16(r, true)
    }

    fn f16_2(&mut self, op: impl Fn(u16, u16) -> u16) -> Result<(), EmuError> {
        let mut a = self.rd(0, T::H)?;
        let mut b = self.rd(1, T::H)?;
        self.flush16(&mut a);
        self.flush16(&mut b);
        let r = map2(&a, &b, |x, y| op(x as u16, y as u16) as u32);
        self.fin16(r, true)
    }

    fn f16_3(
        &mut self,
        c: Option<Lanes>,
        zero_high: bool,
        op: impl Fn(u16, u16, u16) -> u16,
    ) -> Result<(), EmuError> {
        let mut a = self.rd(0, T::H)?;
        let mut b = self.rd(1, T::H)?;
        let mut cc = match c {
            Some(c) => c,
            None => self.rd(2, T::H)?,
        };
        self.flush16(&mut a);
        self.flush16(&mut b);
        self.flush16(&mut cc);
        let r = map3(&a, &b, &cc, |x, y, z| {
            op(x as u16, y as u16, z as u16) as u32
        });
        self.fin16(r, zero_high)
    }

    fn u16_2(&mut self, op: impl Fn(u16, u16) -> u16) -> Result<(), EmuError> {
        let a = self.rd(0, T::S)?;
        let b = self.rd(1, T::S)?;
        let r = map2(&a, &b, |x, y| op(x as u16, y as u16) as u32);
        self.wr16(&r, true)
    }

    fn u16_3(
        &mut self,
        zero_high: bool,
        op: impl Fn(u16, u16, u16) -> u16,
    ) -> Result<(), EmuError> {
        let a = self.rd(0, T::S)?;
        let b = self.rd(1, T::S)?;
        let c = self.rd(2, T::S)?;
        let r = map3(&a, &b, &c, |x, y, z| {
            op(x as u16, y as u16, z as u16) as u32
        });
        self.wr16(&r, zero_high)
    }

    /// f64 result from a 32-bit source (conversions).
    fn to64(&mut self, t: T, op: impl Fn(u32) -> f64) -> Result<(), EmuError> {
        let a = self.rd(0, t)?;
        let mut r = [0u64; LANES];
        for l in 0..LANES {
            r[l] = op(a[l]).to_bits();
        }
        self.float_fin(r)
    }

    /// 32-bit result from an f64 source.
    fn from64(&mut self, op: impl Fn(f64) -> u32) -> Result<(), EmuError> {
        let mut a = self.rd64(0, SrcType::F64)?;
        self.flush_in(&mut a);
        let mut r = [0u32; LANES];
        for l in 0..LANES {
            r[l] = op(d(a[l]));
        }
        self.wr(&r)
    }

    /// Carry-chain adds: `op(a, b, carry_in) -> (value, carry_out)`, carry out to VCC or sdst.
    fn carry(
        &mut self,
        cin: bool,
        op: impl Fn(u32, u32, bool) -> (u32, bool),
    ) -> Result<(), EmuError> {
        let a = self.rd(0, T::B)?;
        let b = self.rd(1, T::B)?;
        let m = if cin { self.mask_in()? } else { 0 };
        let mut r = [0u32; LANES];
        let mut co = 0u64;
        for l in 0..LANES {
            let (v, c) = op(a[l], b[l], m >> l & 1 != 0);
            r[l] = v;
            co |= (c as u64) << l;
        }
        if self.i.clamp {
            // Unsigned saturation of the 32-bit result on carry (add) or borrow (sub).
            return Err(unsupported("clamp on a carry-out add/sub".into()));
        }
        let co = co & self.write;
        self.wr(&r)?;
        let c = if self.vop3() {
            self.i.sdst
        } else {
            code::VCC_LO
        };
        self.w.write_scalar64(c, co)
    }

    // ---------------------------------------------------------------- the opcode switch

    fn op(&mut self, op: Op) -> Result<(), EmuError> {
        use Op::*;
        let ieee = self.mode.ieee;
        let clamp = self.i.clamp;
        match op {
            Nop | Clrexcp => Ok(()),
            MovB32 => self.u32_1(|x| x),
            ReadfirstlaneB32 => {
                let v = self.raw(0, SrcType::B32)?;
                let lane = if self.w.exec == 0 {
                    0
                } else {
                    self.w.exec.trailing_zeros() as usize
                };
                self.w.write_scalar(self.i.sdst, v[lane])
            }
            ReadlaneB32 => {
                let v = self.raw(0, SrcType::B32)?;
                let lane = self
                    .w
                    .read_scalar(self.i.src[1], self.i.literal, SrcType::B32)?
                    as usize
                    & 63;
                self.w.write_scalar(self.i.sdst, v[lane])
            }
            WritelaneB32 => {
                let v = self
                    .w
                    .read_scalar(self.i.src[0], self.i.literal, SrcType::B32)?;
                let lane = self
                    .w
                    .read_scalar(self.i.src[1], self.i.literal, SrcType::B32)?
                    as usize
                    & 63;
                self.check_dst(1)?;
                self.w.vgpr[self.i.vdst as usize][lane] = v;
                Ok(())
            }
            CvtI32F64 => self.from64(|x| convert::f64_to_i32(x) as u32),
            CvtU32F64 => self.from64(convert::f64_to_u32),
            CvtF32F64 => {
                let out_flush = !self.mode.f32_denorm_out;
                self.from64(|x| {
                    let r = (x as f32).to_bits();
                    if out_flush {
                        fl::flush(r)
                    } else {
                        r
                    }
                })
            }
            CvtF64I32 => self.to64(T::B, |x| x as i32 as f64),
            CvtF64U32 => self.to64(T::B, |x| x as f64),
            CvtF64F32 => {
                let in_flush = !self.mode.f32_denorm_in;
                self.to64(T::F, |x| f(if in_flush { fl::flush(x) } else { x }) as f64)
            }
            CvtF32I32 => self.f32_1b(|x| (x as i32 as f32).to_bits()),
            CvtF32U32 => self.f32_1b(|x| (x as f32).to_bits()),
            CvtU32F32 => self.f32_to_int(|x| convert::f32_to_u32(x)),
            CvtI32F32 => self.f32_to_int(|x| convert::f32_to_i32(x) as u32),
            CvtRpiI32F32 => self.f32_to_int(|x| convert::f32_to_i32_rpi(x) as u32),
            CvtFlrI32F32 => self.f32_to_int(|x| convert::f32_to_i32_flr(x) as u32),
            CvtOffF32I4 => self.f32_1b(|x| convert::off_f32_i4(x).to_bits()),
            CvtF32Ubyte0 => self.f32_1b(|x| ((x & 0xff) as f32).to_bits()),
            CvtF32Ubyte1 => self.f32_1b(|x| (((x >> 8) & 0xff) as f32).to_bits()),
            CvtF32Ubyte2 => self.f32_1b(|x| (((x >> 16) & 0xff) as f32).to_bits()),
            CvtF32Ubyte3 => self.f32_1b(|x| ((x >> 24) as f32).to_bits()),
            CvtF16F32 => {
                let mut a = self.rd(0, T::F)?;
                self.flush_in(&mut a);
                let r = map1(&a, |x| h::from_f32(f(x)) as u32);
                self.fin16(r, true)
            }
            CvtF32F16 => {
                let mut a = self.rd(0, T::H)?;
                self.flush16(&mut a);
                let r = map1(&a, |x| h::to_f32(x as u16).to_bits());
                self.float_fin(r)
            }
            TruncF64 => self.float_1::<u64>(f64::trunc),
            CeilF64 => self.float_1::<u64>(f64::ceil),
            RndneF64 => self.float_1::<u64>(fl::rndne_f64),
            FloorF64 => self.float_1::<u64>(f64::floor),
            FractF64 => self.float_1::<u64>(fl::fract_f64),
            FrexpMantF64 => self.float_1::<u64>(fl::frexp_mant_f64),
            FrexpExpI32F64 => self.from64(|x| fl::frexp_exp_f64(x) as u32),
            FractF32 => self.float_1::<u32>(fl::fract_f32),
            TruncF32 => self.float_1::<u32>(f32::trunc),
            CeilF32 => self.float_1::<u32>(f32::ceil),
            RndneF32 => self.float_1::<u32>(fl::rndne_f32),
            FloorF32 => self.float_1::<u32>(f32::floor),
            FrexpMantF32 => self.float_1::<u32>(fl::frexp_mant_f32),
            FrexpExpI32F32 => self.f32_to_int(|x| fl::frexp_exp_f32(x) as u32),
            ExpF32 | ExpLegacyF32 => self.float_1::<u32>(tr::exp_f32),
            LogF32 | LogLegacyF32 => self.float_1::<u32>(tr::log_f32),
            RcpF32 | RcpIflagF32 => self.float_1::<u32>(tr::rcp_f32),
            RsqF32 => self.float_1::<u32>(tr::rsq_f32),
            SqrtF32 => self.float_1::<u32>(tr::sqrt_f32),
            SinF32 => self.float_1::<u32>(tr::sin_f32),
            CosF32 => self.float_1::<u32>(tr::cos_f32),
            RcpF64 => self.float_1::<u64>(tr::rcp_f64),
            RsqF64 => self.float_1::<u64>(tr::rsq_f64),
            SqrtF64 => self.float_1::<u64>(tr::sqrt_f64),
            NotB32 => self.u32_1(|x| !x),
            BfrevB32 => self.u32_1(u32::reverse_bits),
            FfbhU32 => self.u32_1(int::ffbh_u32),
            FfblB32 => self.u32_1(int::ffbl_b32),
            FfbhI32 => self.u32_1(int::ffbh_i32),
            MovB64 => {
                let a = self.rd64(0, SrcType::B64)?;
                self.wr64(&a)
            }
            CvtF16U16 => {
                let a = self.rd(0, T::S)?;
                self.fin16(map1(&a, |x| convert::u16_to_f16(x as u16) as u32), true)
            }
            CvtF16I16 => {
                let a = self.rd(0, T::S)?;
                self.fin16(map1(&a, |x| convert::i16_to_f16(x as u16) as u32), true)
            }
            CvtU16F16 => self.f16_to_int(convert::f16_to_u16),
            CvtI16F16 => self.f16_to_int(convert::f16_to_i16),
            CvtNormI16F16 => self.f16_to_int(|x| convert::f32_to_snorm16(h::to_f32(x))),
            CvtNormU16F16 => self.f16_to_int(|x| convert::f32_to_unorm16(h::to_f32(x))),
            RcpF16 => self.f16_1(|x| tr::f16_unary(TransOp::Rcp, x)),
            SqrtF16 => self.f16_1(|x| tr::f16_unary(TransOp::Sqrt, x)),
            RsqF16 => self.f16_1(|x| tr::f16_unary(TransOp::Rsq, x)),
            LogF16 => self.f16_1(|x| tr::f16_unary(TransOp::Log, x)),
            ExpF16 => self.f16_1(|x| tr::f16_unary(TransOp::Exp, x)),
            SinF16 => self.f16_1(|x| tr::f16_unary(TransOp::Sin, x)),
            CosF16 => self.f16_1(|x| tr::f16_unary(TransOp::Cos, x)),
            FrexpMantF16 => self.f16_1(h::frexp_mant),
            FrexpExpI16F16 => self.f16_to_int(h::frexp_exp),
            FloorF16 => self.f16_1(|x| h::via_f32(x, f32::floor)),
            CeilF16 => self.f16_1(|x| h::via_f32(x, f32::ceil)),
            TruncF16 => self.f16_1(|x| h::via_f32(x, f32::trunc)),
            RndneF16 => self.f16_1(|x| h::via_f32(x, f32::round_ties_even)),
            FractF16 => self.f16_1(h::fract),
            SatPkU8I16 => self.u32_1(convert::sat_pk_u8_i16),
            SwapB32 => {
                let s = self.i.src[0];
                if s < code::VGPR0 {
                    return Err(EmuError::illegal("v_swap_b32 needs a VGPR source"));
                }
                let (a, b) = ((s - code::VGPR0) as usize, self.i.vdst as usize);
                self.check_dst(1)?;
                if a >= self.w.vgpr.len() {
                    return Err(self.w.beyond(a, 1));
                }
                let (va, vb) = (self.w.vgpr[a], self.w.vgpr[b]);
                self.w.write_vgpr(b, &va, self.write);
                self.w.write_vgpr(a, &vb, self.write);
                Ok(())
            }
            MovrelsB32 | MovreldB32 | MovrelsdB32 => self.movrel(op),
            AccvgprMovB32 | AccvgprReadB32 | AccvgprWriteB32 => {
                if !self.w.target.has_agprs() {
                    return Err(unsupported(format!(
                        "{} needs AGPRs (gfx90a/gfx942)",
                        op.name()
                    )));
                }
                let v = self.raw(0, SrcType::B32)?;
                self.wr(&v)
            }
            CvtF32Fp8 | CvtF32Bf8 => {
                let fmt = if op == CvtF32Fp8 {
                    Fp8::E4M3
                } else {
                    Fp8::E5M2
                };
                let raw = self.raw(0, SrcType::B32)?;
                // The byte is chosen by the SDWA src0_sel (byte 0 without SDWA).
                let sel = match self.i.form {
                    Form::Sdwa(s) => s.src_sel[0],
                    _ => lanes::SdwaSel::Byte0,
                };
                let r = map1(&raw, |x| fmt.to_f32(sel.extract(x, false) as u8).to_bits());
                self.check_dst(1)?;
                let r0 = self.i.vdst as usize;
                self.w.write_vgpr(r0, &r, self.write);
                Ok(())
            }
            CvtPkF32Fp8 | CvtPkF32Bf8 => {
                let fmt = if op == CvtPkF32Fp8 {
                    Fp8::E4M3
                } else {
                    Fp8::E5M2
                };
                let raw = self.raw(0, SrcType::B32)?;
                let hi =
                    matches!(self.i.form, Form::Sdwa(s) if s.src_sel[0] == lanes::SdwaSel::Word1);
                let mut r = [0u64; LANES];
                for l in 0..LANES {
                    let w16 = if hi { raw[l] >> 16 } else { raw[l] & 0xffff };
                    let lo = fmt.to_f32(w16 as u8).to_bits() as u64;
                    let hv = fmt.to_f32((w16 >> 8) as u8).to_bits() as u64;
                    r[l] = lo | hv << 32;
                }
                self.wr64(&r)
            }
            // ---- VOP2
            CndmaskB32 => {
                let a = self.rd(0, T::F)?;
                let b = self.rd(1, T::F)?;
                let m = self.mask_in()?;
                let mut r = [0u32; LANES];
                for l in 0..LANES {
                    r[l] = if m >> l & 1 != 0 { b[l] } else { a[l] };
                }
                self.wr(&r)
            }
            AddF32 => self.f32_2(|a, b| a + b),
            SubF32 => self.f32_2(|a, b| a - b),
            SubrevF32 => self.f32_2(|a, b| b - a),
            MulF32 => self.f32_2(|a, b| a * b),
            MulLegacyF32 => self.f32_2(fl::mul_legacy_f32),
            MinF32 => self.f32_2b(|a, b| fl::min(a, b, ieee)),
            MaxF32 => self.f32_2b(|a, b| fl::max(a, b, ieee)),
            LdexpF32 => {
                let mut a = self.rd(0, T::F)?;
                let b = self.rd(1, T::B)?;
                self.flush_in(&mut a);
                let r = map2(&a, &b, |x, e| fl::ldexp_f32(f(x), e as i32).to_bits());
                self.float_fin(r)
            }
            MulI32I24 => self.u32_2(int::mul_i24),
            MulHiI32I24 => self.u32_2(int::mul_hi_i24),
            MulU32U24 => self.u32_2(int::mul_u24),
            MulHiU32U24 => self.u32_2(int::mul_hi_u24),
            MinI32 => self.u32_2(|a, b| (a as i32).min(b as i32) as u32),
            MaxI32 => self.u32_2(|a, b| (a as i32).max(b as i32) as u32),
            MinU32 => self.u32_2(u32::min),
            MaxU32 => self.u32_2(u32::max),
            LshrrevB32 => self.u32_2(|s, x| x >> (s & 31)),
            AshrrevI32 => self.u32_2(|s, x| ((x as i32) >> (s & 31)) as u32),
            LshlrevB32 => self.u32_2(|s, x| x << (s & 31)),
            AndB32 => self.u32_2(|a, b| a & b),
            OrB32 => self.u32_2(|a, b| a | b),
            XorB32 => self.u32_2(|a, b| a ^ b),
            XnorB32 => self.u32_2(|a, b| !(a ^ b)),
            MacF32 => {
                let c = self.dst_old()?;
                self.float_3::<u32>(Some(c), fl::mad_f32)
            }
            MadF32 | MadLegacyF32 => self.float_3::<u32>(None, fl::mad_f32),
            MadmkF32 => {
                // D = S0 * K + S1
                let k = [self.i.literal; LANES];
                let a = self.rd(0, T::F)?;
                let b = self.rd(1, T::F)?;
                self.float_fin(map3(&a, &k, &b, |x, y, z| {
                    fl::mad_f32(f(x), f(y), f(z)).to_bits()
                }))
            }
            MadakF32 => {
                let k = [self.i.literal; LANES];
                self.float_3::<u32>(Some(k), fl::mad_f32)
            }
            FmacF32 => {
                let c = self.dst_old()?;
                let a = self.rd(0, T::F)?;
                let b = self.rd(1, T::F)?;
                self.f32_fma(a, b, c)
            }
            FmamkF32 => {
                let k = [self.i.literal; LANES];
                let mut a = self.rd(0, T::F)?;
                let mut b = self.rd(1, T::F)?;
                self.flush_in(&mut a);
                self.flush_in(&mut b);
                self.float_fin(map3(&a, &k, &b, |x, y, z| {
                    fl::fma_f32(f(x), f(y), f(z)).to_bits()
                }))
            }
            FmaakF32 => {
                let k = [self.i.literal; LANES];
                self.float_3::<u32>(Some(k), fl::fma_f32)
            }
            FmaF32 => {
                let a = self.rd(0, T::F)?;
                let b = self.rd(1, T::F)?;
                let c = self.rd(2, T::F)?;
                self.f32_fma(a, b, c)
            }
            FmacF64 => {
                self.check_dst(2)?;
                let r = self.i.vdst as usize;
                let mut c = [0u64; LANES];
                for l in 0..LANES {
                    c[l] = self.w.vgpr[r][l] as u64 | (self.w.vgpr[r + 1][l] as u64) << 32;
                }
                self.float_3::<u64>(Some(c), fl::fma_f64)
            }
            AddCoU32 => self.carry(false, |a, b, _| int::add_carry(a, b, false)),
            SubCoU32 => self.carry(false, |a, b, _| int::sub_borrow(a, b, false)),
            SubrevCoU32 => self.carry(false, |a, b, _| int::sub_borrow(b, a, false)),
            AddcCoU32 => self.carry(true, int::add_carry),
            SubbCoU32 => self.carry(true, int::sub_borrow),
            SubbrevCoU32 => self.carry(true, |a, b, c| int::sub_borrow(b, a, c)),
            AddU32 => self.u32_2(|a, b| int::add_u32_clamp(a, b, clamp)),
            SubU32 => self.u32_2(|a, b| int::sub_u32_clamp(a, b, clamp)),
            SubrevU32 => self.u32_2(|a, b| int::sub_u32_clamp(b, a, clamp)),
            AddF16 => self.f16_2(h::add),
            SubF16 => self.f16_2(h::sub),
            SubrevF16 => self.f16_2(|a, b| h::sub(b, a)),
            MulF16 => self.f16_2(h::mul),
            MaxF16 => self.f16_2(|a, b| h::max(a, b, ieee)),
            MinF16 => self.f16_2(|a, b| h::min(a, b, ieee)),
            LdexpF16 => {
                let mut a = self.rd(0, T::H)?;
                let b = self.rd(1, T::S)?;
                self.flush16(&mut a);
                let r = map2(&a, &b, |x, e| {
                    h::ldexp(x as u16, e as u16 as i16 as i32) as u32
                });
                self.fin16(r, true)
            }
            MacF16 => {
                let c = map1(&self.dst_old()?, |x| x & 0xffff);
                self.f16_3(Some(c), false, h::mad)
            }
            MadmkF16 => {
                let k = [self.i.literal & 0xffff; LANES];
                let a = self.rd(0, T::H)?;
                let b = self.rd(1, T::H)?;
                let r = map3(&a, &k, &b, |x, y, z| {
                    h::mad(x as u16, y as u16, z as u16) as u32
                });
                self.fin16(r, false)
            }
            MadakF16 => {
                let k = [self.i.literal & 0xffff; LANES];
                self.f16_3(Some(k), false, h::mad)
            }
            AddU16 => self.u16_2(|a, b| {
                if clamp {
                    a.saturating_add(b)
                } else {
                    a.wrapping_add(b)
                }
            }),
            SubU16 => self.u16_2(|a, b| {
                if clamp {
                    a.saturating_sub(b)
                } else {
                    a.wrapping_sub(b)
                }
            }),
            SubrevU16 => self.u16_2(|a, b| {
                if clamp {
                    b.saturating_sub(a)
                } else {
                    b.wrapping_sub(a)
                }
            }),
            MulLoU16 => self.u16_2(u16::wrapping_mul),
            LshlrevB16 => self.u16_2(|s, x| x << (s & 15)),
            LshrrevB16 => self.u16_2(|s, x| x >> (s & 15)),
            AshrrevI16 => self.u16_2(|s, x| ((x as i16) >> (s & 15)) as u16),
            MaxU16 => self.u16_2(u16::max),
            MinU16 => self.u16_2(u16::min),
            MaxI16 => self.u16_2(|a, b| (a as i16).max(b as i16) as u16),
            MinI16 => self.u16_2(|a, b| (a as i16).min(b as i16) as u16),
            AddI16 => self.u16_2(|a, b| {
                if clamp {
                    (a as i16).saturating_add(b as i16) as u16
                } else {
                    a.wrapping_add(b)
                }
            }),
            SubI16 => self.u16_2(|a, b| {
                if clamp {
                    (a as i16).saturating_sub(b as i16) as u16
                } else {
                    a.wrapping_sub(b)
                }
            }),
            AddI32 => self.u32_2(|a, b| int::add_i32_clamp(a, b, clamp)),
            SubI32 => self.u32_2(|a, b| int::sub_i32_clamp(a, b, clamp)),
            Dot2cF32F16 | Dot2cI32I16 | Dot4cI32I8 | Dot8cI32I4 => {
                let c = self.dst_old()?;
                self.dot(op, Some(c))
            }
            PkFmacF16 => {
                let a = self.rd(0, T::B)?;
                let b = self.rd(1, T::B)?;
                let c = self.dst_old()?;
                let r = map3(&a, &b, &c, |x, y, z| {
                    let lo = h::fma(x as u16, y as u16, z as u16) as u32;
                    let hi = h::fma((x >> 16) as u16, (y >> 16) as u16, (z >> 16) as u16) as u32;
                    lo | hi << 16
                });
                self.wr(&r)
            }
            // ---- VOP3 only
            MadI32I24 => self.u32_3(|a, b, c| int::mul_i24(a, b).wrapping_add(c)),
            MadU32U24 => self.u32_3(|a, b, c| int::mul_u24(a, b).wrapping_add(c)),
            BfeU32 => self.u32_3(int::bfe_u32),
            BfeI32 => self.u32_3(int::bfe_i32),
            BfiB32 => self.u32_3(int::bfi),
            BfmB32 => self.u32_2(int::bfm),
            LerpU8 => self.u32_3(int::lerp_u8),
            AlignbitB32 => self.u32_3(int::alignbit),
            AlignbyteB32 => self.u32_3(int::alignbyte),
            PermB32 => self.u32_3(int::perm),
            Min3F32 => self.f32_3b(|a, b, c| fl::min(fl::min(a, b, ieee), c, ieee)),
            Max3F32 => self.f32_3b(|a, b, c| fl::max(fl::max(a, b, ieee), c, ieee)),
            Med3F32 => self.f32_3b(|a, b, c| fl::med3(a, b, c, ieee)),
            Min3I32 => self.u32_3(|a, b, c| (a as i32).min(b as i32).min(c as i32) as u32),
            Max3I32 => self.u32_3(|a, b, c| (a as i32).max(b as i32).max(c as i32) as u32),
            Med3I32 => self.u32_3(|a, b, c| int::med3(a as i32, b as i32, c as i32) as u32),
            Min3U32 => self.u32_3(|a, b, c| a.min(b).min(c)),
            Max3U32 => self.u32_3(|a, b, c| a.max(b).max(c)),
            Med3U32 => self.u32_3(int::med3),
            Min3F16 => self.f16_3(None, false, |a, b, c| h::min(h::min(a, b, ieee), c, ieee)),
            Max3F16 => self.f16_3(None, false, |a, b, c| h::max(h::max(a, b, ieee), c, ieee)),
            Med3F16 => self.f16_3(None, false, |a, b, c| h::med3(a, b, c, ieee)),
            Min3I16 => self.u16_3(false, |a, b, c| {
                (a as i16).min(b as i16).min(c as i16) as u16
            }),
            Max3I16 => self.u16_3(false, |a, b, c| {
                (a as i16).max(b as i16).max(c as i16) as u16
            }),
            Med3I16 => self.u16_3(false, |a, b, c| {
                int::med3(a as i16, b as i16, c as i16) as u16
            }),
            Min3U16 => self.u16_3(false, |a, b, c| a.min(b).min(c)),
            Max3U16 => self.u16_3(false, |a, b, c| a.max(b).max(c)),
            Med3U16 => self.u16_3(false, int::med3),
            SadU8 => self.u32_3(int::sad_u8),
            SadHiU8 => self.u32_3(int::sad_hi_u8),
            SadU16 => self.u32_3(int::sad_u16),
            SadU32 => self.u32_3(int::sad_u32),
            MsadU8 => self.u32_3(int::msad_u8),
            CvtPkU8F32 => {
                let a = self.rd(0, T::F)?;
                let b = self.rd(1, T::B)?;
                let c = self.rd(2, T::B)?;
                self.wr(&map3(&a, &b, &c, |x, y, z| convert::pk_u8_f32(f(x), y, z)))
            }
            CvtPkaccumU8F32 => {
                let a = self.rd(0, T::F)?;
                let b = self.rd(1, T::B)?;
                let old = self.dst_old()?;
                self.wr(&map3(&a, &b, &old, |x, y, z| {
                    convert::pk_u8_f32(f(x), y, z)
                }))
            }
            DivFixupF32 => self.float_3::<u32>(None, fl::div_fixup_f32),
            DivFixupF64 => self.float_3::<u64>(None, fl::div_fixup_f64),
            DivFmasF32 => self.div_fmas::<u32>(fl::div_fmas_f32),
            DivFmasF64 => self.div_fmas::<u64>(fl::div_fmas_f64),
            DivScaleF32 => self.div_scale::<u32>(fl::div_scale_f32),
            DivScaleF64 => self.div_scale::<u64>(fl::div_scale_f64),
            QsadPkU16U8 | MqsadPkU16U8 => {
                let a = self.rd64(0, SrcType::B64)?;
                let b = self.rd(1, T::B)?;
                let c = self.rd64(2, SrcType::B64)?;
                let masked = op == MqsadPkU16U8;
                let mut r = [0u64; LANES];
                for l in 0..LANES {
                    let mut t = 0u64;
                    for k in 0..4 {
                        let win = (a[l] >> (8 * k)) as u32;
                        let acc = ((c[l] >> (16 * k)) & 0xffff) as u32;
                        let s = if masked {
                            int::msad_u8(win, b[l], acc)
                        } else {
                            int::sad_u8(win, b[l], acc)
                        };
                        t |= ((s & 0xffff) as u64) << (16 * k);
                    }
                    r[l] = t;
                }
                self.wr64(&r)
            }
            MqsadU32U8 => Err(unsupported("v_mqsad_u32_u8 (128-bit result)".into())),
            MadU64U32 | MadI64I32 => {
                let a = self.rd(0, T::B)?;
                let b = self.rd(1, T::B)?;
                let c = self.rd64(
                    2,
                    if op == MadI64I32 {
                        SrcType::I64
                    } else {
                        SrcType::B64
                    },
                )?;
                let mut r = [0u64; LANES];
                let mut m = 0u64;
                for l in 0..LANES {
                    let (v, co) = if op == MadU64U32 {
                        int::mad_u64_u32(a[l], b[l], c[l])
                    } else {
                        int::mad_i64_i32(a[l], b[l], c[l])
                    };
                    r[l] = v;
                    m |= (co as u64) << l;
                }
                if clamp {
                    return Err(unsupported(format!("clamp on {}", op.name())));
                }
                self.wr64(&r)?;
                let m = m & self.write;
                self.w.write_scalar64(self.i.sdst, m)
            }
            MadLegacyF16 => self.f16_3(None, true, h::mad),
            MadF16 => self.f16_3(None, false, h::mad),
            FmaLegacyF16 => self.f16_3(None, true, h::fma),
            FmaF16 => self.f16_3(None, false, h::fma),
            DivFixupLegacyF16 | DivFixupF16 => {
                let zero = op == DivFixupLegacyF16;
                self.f16_3(None, zero, |q, den, num| {
                    let r = fl::div_fixup_f32(h::to_f32(q), h::to_f32(den), h::to_f32(num));
                    h::from_f32(r)
                })
            }
            MadLegacyU16 => self.u16_3(true, |a, b, c| a.wrapping_mul(b).wrapping_add(c)),
            MadLegacyI16 => self.u16_3(true, |a, b, c| a.wrapping_mul(b).wrapping_add(c)),
            MadU16 => self.u16_3(false, |a, b, c| {
                if clamp {
                    (a as u32 * b as u32 + c as u32).min(0xffff) as u16
                } else {
                    a.wrapping_mul(b).wrapping_add(c)
                }
            }),
            MadI16 => self.u16_3(false, |a, b, c| {
                if clamp {
                    (a as i16 as i32 * b as i16 as i32 + c as i16 as i32).clamp(-32768, 32767)
                        as i16 as u16
                } else {
                    a.wrapping_mul(b).wrapping_add(c)
                }
            }),
            MadU32U16 => {
                let a = self.rd(0, T::S)?;
                let b = self.rd(1, T::S)?;
                let c = self.rd(2, T::B)?;
                self.wr(&map3(&a, &b, &c, |x, y, z| (x & 0xffff) * (y & 0xffff) + z))
            }
            MadI32I16 => {
                let a = self.rd(0, T::S)?;
                let b = self.rd(1, T::S)?;
                let c = self.rd(2, T::B)?;
                self.wr(&map3(&a, &b, &c, |x, y, z| {
                    ((x as u16 as i16 as i32) * (y as u16 as i16 as i32)).wrapping_add(z as i32)
                        as u32
                }))
            }
            XadU32 => self.u32_3(|a, b, c| (a ^ b).wrapping_add(c)),
            LshlAddU32 => self.u32_3(|a, b, c| (a << (b & 31)).wrapping_add(c)),
            AddLshlU32 => self.u32_3(|a, b, c| a.wrapping_add(b) << (c & 31)),
            Add3U32 => self.u32_3(|a, b, c| a.wrapping_add(b).wrapping_add(c)),
            LshlOrB32 => self.u32_3(|a, b, c| (a << (b & 31)) | c),
            AndOrB32 => self.u32_3(|a, b, c| (a & b) | c),
            Or3B32 => self.u32_3(|a, b, c| a | b | c),
            LshlAddU64 => {
                if let (Some(a), Some(b), Some(c)) = (
                    self.plain64(0, SrcType::B64),
                    self.plain(1, SrcType::B32),
                    self.plain64(2, SrcType::B64),
                ) {
                    let mut r = [0u64; LANES];
                    for l in 0..LANES {
                        r[l] = (a.at(l) << (b.at(l) & 7)).wrapping_add(c.at(l));
                    }
                    return self.wr64(&r);
                }
                let a = self.rd64(0, SrcType::B64)?;
                let b = self.rd(1, T::B)?;
                let c = self.rd64(2, SrcType::B64)?;
                let mut r = [0u64; LANES];
                for l in 0..LANES {
                    r[l] = (a[l] << (b[l] & 7)).wrapping_add(c[l]);
                }
                self.wr64(&r)
            }
            AddF64 => self.float_2::<u64>(|a, b| a + b),
            MulF64 => self.float_2::<u64>(|a, b| a * b),
            MinF64 | MaxF64 => {
                let a = self.rd64(0, SrcType::F64)?;
                let b = self.rd64(1, SrcType::F64)?;
                let mut r = [0u64; LANES];
                for l in 0..LANES {
                    r[l] = if op == MinF64 {
                        fl::min(a[l], b[l], ieee)
                    } else {
                        fl::max(a[l], b[l], ieee)
                    };
                }
                self.float_fin(r)
            }
            FmaF64 => self.float_3::<u64>(None, fl::fma_f64),
            LdexpF64 => {
                let mut a = self.rd64(0, SrcType::F64)?;
                let b = self.rd(1, T::B)?;
                self.flush_in(&mut a);
                let mut r = [0u64; LANES];
                for l in 0..LANES {
                    r[l] = fl::ldexp_f64(d(a[l]), b[l] as i32).to_bits();
                }
                self.float_fin(r)
            }
            TrigPreopF64 => {
                let a = self.rd64(0, SrcType::F64)?;
                let b = self.rd(1, T::B)?;
                let mut r = [0u64; LANES];
                for l in 0..LANES {
                    r[l] = fl::trig_preop_f64(d(a[l]), b[l]).to_bits();
                }
                self.float_fin(r)
            }
            MulLoU32 => self.u32_2(u32::wrapping_mul),
            MulHiU32 => self.u32_2(int::mul_hi_u32),
            MulHiI32 => self.u32_2(int::mul_hi_i32),
            BcntU32B32 => self.u32_2(|a, b| a.count_ones().wrapping_add(b)),
            MbcntLoU32B32 | MbcntHiU32B32 => {
                let a = self.rd(0, T::B)?;
                let b = self.rd(1, T::B)?;
                let mut r = [0u32; LANES];
                for l in 0..LANES {
                    r[l] = if op == MbcntLoU32B32 {
                        int::mbcnt_lo(a[l], b[l], l)
                    } else {
                        int::mbcnt_hi(a[l], b[l], l)
                    };
                }
                self.wr(&r)
            }
            LshlrevB64 | LshrrevB64 | AshrrevI64 => {
                if let (Some(s), Some(x)) =
                    (self.plain(0, SrcType::B32), self.plain64(1, SrcType::B64))
                {
                    let mut r = [0u64; LANES];
                    for l in 0..LANES {
                        let (sh, x) = (s.at(l) & 63, x.at(l));
                        r[l] = match op {
                            LshlrevB64 => x << sh,
                            LshrrevB64 => x >> sh,
                            _ => ((x as i64) >> sh) as u64,
                        };
                    }
                    return self.wr64(&r);
                }
                let s = self.rd(0, T::B)?;
                let x = self.rd64(1, SrcType::B64)?;
                let mut r = [0u64; LANES];
                for l in 0..LANES {
                    let sh = s[l] & 63;
                    r[l] = match op {
                        LshlrevB64 => x[l] << sh,
                        LshrrevB64 => x[l] >> sh,
                        _ => ((x[l] as i64) >> sh) as u64,
                    };
                }
                self.wr64(&r)
            }
            CvtPknormI16F32 => self.f32_pack(|a, b| {
                convert::f32_to_snorm16(a) as u32 | (convert::f32_to_snorm16(b) as u32) << 16
            }),
            CvtPknormU16F32 => self.f32_pack(|a, b| {
                convert::f32_to_unorm16(a) as u32 | (convert::f32_to_unorm16(b) as u32) << 16
            }),
            CvtPkrtzF16F32 => {
                self.f32_pack(|a, b| h::from_f32_rtz(a) as u32 | (h::from_f32_rtz(b) as u32) << 16)
            }
            CvtPkU16U32 => self.u32_2(convert::pk_u16_u32),
            CvtPkI16I32 => self.u32_2(convert::pk_i16_i32),
            CvtPknormI16F16 | CvtPknormU16F16 => {
                let a = self.rd(0, T::H)?;
                let b = self.rd(1, T::H)?;
                let s = op == CvtPknormI16F16;
                let cv = move |x: u32| {
                    let v = h::to_f32(x as u16);
                    (if s {
                        convert::f32_to_snorm16(v)
                    } else {
                        convert::f32_to_unorm16(v)
                    }) as u32
                };
                self.wr(&map2(&a, &b, |x, y| cv(x) | cv(y) << 16))
            }
            PackB32F16 => {
                let a = self.rd(0, T::H)?;
                let b = self.rd(1, T::H)?;
                self.wr(&map2(&a, &b, |x, y| (x & 0xffff) | (y & 0xffff) << 16))
            }
            CvtPkFp8F32 | CvtPkBf8F32 => {
                let fmt = if op == CvtPkFp8F32 {
                    Fp8::E4M3
                } else {
                    Fp8::E5M2
                };
                let a = self.rd(0, T::F)?;
                let b = self.rd(1, T::F)?;
                let old = self.dst_old()?;
                let hi = self.i.op_sel & 8 != 0;
                let r = map3(&a, &b, &old, |x, y, o| {
                    let p =
                        fmt.from_f32(f(x), clamp) as u32 | (fmt.from_f32(f(y), clamp) as u32) << 8;
                    if hi {
                        (o & 0xffff) | p << 16
                    } else {
                        (o & 0xffff_0000) | p
                    }
                });
                self.wr(&r)
            }
            CvtSrFp8F32 | CvtSrBf8F32 => {
                Err(unsupported(format!("{} (stochastic rounding)", op.name())))
            }
            // ---- VOP3P
            PkAddF16 => self.pk16(true, |a, b, _| h::add(a, b)),
            PkMulF16 => self.pk16(true, |a, b, _| h::mul(a, b)),
            PkFmaF16 => self.pk16(true, h::fma),
            PkMinF16 => self.pk16(true, |a, b, _| h::min(a, b, ieee)),
            PkMaxF16 => self.pk16(true, |a, b, _| h::max(a, b, ieee)),
            PkAddU16 => self.pk16(false, |a, b, _| {
                if clamp {
                    a.saturating_add(b)
                } else {
                    a.wrapping_add(b)
                }
            }),
            PkSubU16 => self.pk16(false, |a, b, _| {
                if clamp {
                    a.saturating_sub(b)
                } else {
                    a.wrapping_sub(b)
                }
            }),
            PkAddI16 => self.pk16(false, |a, b, _| {
                if clamp {
                    (a as i16).saturating_add(b as i16) as u16
                } else {
                    a.wrapping_add(b)
                }
            }),
            PkSubI16 => self.pk16(false, |a, b, _| {
                if clamp {
                    (a as i16).saturating_sub(b as i16) as u16
                } else {
                    a.wrapping_sub(b)
                }
            }),
            PkMulLoU16 => self.pk16(false, |a, b, _| a.wrapping_mul(b)),
            PkMadU16 => self.pk16(false, |a, b, c| {
                if clamp {
                    (a as u32 * b as u32 + c as u32).min(0xffff) as u16
                } else {
                    a.wrapping_mul(b).wrapping_add(c)
                }
            }),
            PkMadI16 => self.pk16(false, |a, b, c| {
                if clamp {
                    (a as i16 as i32 * b as i16 as i32 + c as i16 as i32).clamp(-32768, 32767)
                        as i16 as u16
                } else {
                    a.wrapping_mul(b).wrapping_add(c)
                }
            }),
            PkLshlrevB16 => self.pk16(false, |s, x, _| x << (s & 15)),
            PkLshrrevB16 => self.pk16(false, |s, x, _| x >> (s & 15)),
            PkAshrrevI16 => self.pk16(false, |s, x, _| ((x as i16) >> (s & 15)) as u16),
            PkMaxI16 => self.pk16(false, |a, b, _| (a as i16).max(b as i16) as u16),
            PkMinI16 => self.pk16(false, |a, b, _| (a as i16).min(b as i16) as u16),
            PkMaxU16 => self.pk16(false, |a, b, _| a.max(b)),
            PkMinU16 => self.pk16(false, |a, b, _| a.min(b)),
            MadMixF32 | MadMixloF16 | MadMixhiF16 | FmaMixF32 | FmaMixloF16 | FmaMixhiF16 => {
                self.mix(op)
            }
            Dot2F32F16 | Dot2I32I16 | Dot2U32U16 | Dot4I32I8 | Dot4U32U8 | Dot8I32I4
            | Dot8U32U4 => self.dot(op, None),
            PkFmaF32 | PkMulF32 | PkAddF32 => self.pk32(op),
            PkMovB32 => {
                let a = self.rd64(0, SrcType::B64)?;
                let b = self.rd64(1, SrcType::B64)?;
                let (s0, s1) = (self.i.op_sel & 1 != 0, self.i.op_sel & 2 != 0);
                let mut r = [0u64; LANES];
                for l in 0..LANES {
                    let lo = if s0 { a[l] >> 32 } else { a[l] & 0xffff_ffff };
                    let hi = if s1 { b[l] >> 32 } else { b[l] & 0xffff_ffff };
                    r[l] = lo | hi << 32;
                }
                self.wr64(&r)
            }
        }
    }

    /// `a * b + c` fused over f32 lanes (`v_fma_f32` family), on the host FMA when present.
    fn f32_fma(&mut self, a: Lanes, b: Lanes, c: Lanes) -> Result<(), EmuError> {
        let (mut a, mut b, mut c) = (a, b, c);
        self.flush_in(&mut a);
        self.flush_in(&mut b);
        self.flush_in(&mut c);
        let r = fl::fma_f32_lanes(&a, &b, &c);
        self.float_fin(r)
    }

    /// f32 result from bits (integer to float conversions: rounding only, no input flush).
    fn f32_1b(&mut self, op: impl Fn(u32) -> u32) -> Result<(), EmuError> {
        let a = self.rd(0, T::B)?;
        self.float_fin(map1(&a, op))
    }

    /// Integer result from an f32 (input denormals flushed per MODE, no output modifiers).
    fn f32_to_int(&mut self, op: impl Fn(f32) -> u32) -> Result<(), EmuError> {
        let mut a = self.rd(0, T::F)?;
        self.flush_in(&mut a);
        let r = map1(&a, |x| op(f(x)));
        self.wr(&r)
    }

    fn f16_to_int(&mut self, op: impl Fn(u16) -> u16) -> Result<(), EmuError> {
        let mut a = self.rd(0, T::H)?;
        self.flush16(&mut a);
        let r = map1(&a, |x| op(x as u16) as u32);
        self.wr16(&r, true)
    }

    /// Two f32 sources packed into one 32-bit result (`v_cvt_pk*_f32`).
    fn f32_pack(&mut self, op: impl Fn(f32, f32) -> u32) -> Result<(), EmuError> {
        let mut a = self.rd(0, T::F)?;
        let mut b = self.rd(1, T::F)?;
        self.flush_in(&mut a);
        self.flush_in(&mut b);
        self.wr(&map2(&a, &b, |x, y| op(f(x), f(y))))
    }

    fn movrel(&mut self, op: Op) -> Result<(), EmuError> {
        let m0 = self.w.m0 as usize;
        let limit = self.w.vgpr_limit as usize;
        let src_reg = |c: u16, rel: bool| -> Result<Option<usize>, EmuError> {
            if c < code::VGPR0 {
                return Ok(None);
            }
            let r = (c - code::VGPR0) as usize + if rel { m0 } else { 0 };
            if r >= limit {
                return Err(EmuError::illegal(format!(
                    "{} reads v{r}, beyond the allocation",
                    op.name()
                )));
            }
            Ok(Some(r))
        };
        let v = match src_reg(self.i.src[0], op != Op::MovreldB32)? {
            Some(r) => self.w.vgpr[r],
            None => {
                [self.w
                    .read_scalar(self.i.src[0], self.i.literal, SrcType::B32)?;
                    LANES]
            }
        };
        let dst = self.i.vdst as usize + if op == Op::MovrelsB32 { 0 } else { m0 };
        if dst >= limit {
            return Err(EmuError::illegal(format!(
                "{} writes v{dst}, beyond the allocation",
                op.name()
            )));
        }
        self.w.write_vgpr(dst, &v, self.write);
        Ok(())
    }

    /// VOP3P half selection: source `n`'s low and high operand halves per `op_sel`/`op_sel_hi`,
    /// negated per `neg_lo`/`neg_hi` when `float`.
    fn pk_src(&mut self, n: usize, float: bool) -> Result<(Lanes, Lanes), EmuError> {
        let v = self.raw(n, SrcType::F16)?;
        let (sl, sh) = (self.i.op_sel >> n & 1 != 0, self.i.op_sel_hi >> n & 1 != 0);
        let (nl, nh) = (
            float && self.i.neg >> n & 1 != 0,
            float && self.i.neg_hi >> n & 1 != 0,
        );
        let mut lo = [0u32; LANES];
        let mut hi = [0u32; LANES];
        for l in 0..LANES {
            let x = v[l];
            lo[l] = (if sl { x >> 16 } else { x & 0xffff }) ^ if nl { 0x8000 } else { 0 };
            hi[l] = (if sh { x >> 16 } else { x & 0xffff }) ^ if nh { 0x8000 } else { 0 };
        }
        Ok((lo, hi))
    }

    fn pk16(&mut self, float: bool, op: impl Fn(u16, u16, u16) -> u16) -> Result<(), EmuError> {
        let (a0, a1) = self.pk_src(0, float)?;
        let (b0, b1) = self.pk_src(1, float)?;
        let three = matches!(
            self.i.op,
            ValuOp::Op(Op::PkFmaF16 | Op::PkMadU16 | Op::PkMadI16)
        );
        let (c0, c1) = if three {
            self.pk_src(2, float)?
        } else {
            ([0; LANES], [0; LANES])
        };
        let (clamp, dx) = (float && self.i.clamp, self.mode.dx10_clamp);
        let flush_in = float && !self.mode.f64_denorm_in;
        let fix = |x: u32| {
            if flush_in {
                h::flush(x as u16)
            } else {
                x as u16
            }
        };
        let post = |x: u16| {
            if clamp {
                h::omod_clamp(x, 0, true, dx)
            } else {
                x
            }
        };
        let mut r = [0u32; LANES];
        for l in 0..LANES {
            let lo = post(op(fix(a0[l]), fix(b0[l]), fix(c0[l])));
            let hi = post(op(fix(a1[l]), fix(b1[l]), fix(c1[l])));
            r[l] = lo as u32 | (hi as u32) << 16;
        }
        self.wr(&r)
    }

    fn pk32(&mut self, op: Op) -> Result<(), EmuError> {
        if !self.w.target.has_agprs() {
            return Err(unsupported(format!("{} needs gfx90a or gfx942", op.name())));
        }
        let n = if op == Op::PkFmaF32 { 3 } else { 2 };
        let mut lo = [[0u32; LANES]; 3];
        let mut hi = [[0u32; LANES]; 3];
        for s in 0..n {
            let v = self.rd64(s, SrcType::F32)?;
            let (sl, sh) = (self.i.op_sel >> s & 1 != 0, self.i.op_sel_hi >> s & 1 != 0);
            let (nl, nh) = (self.i.neg >> s & 1 != 0, self.i.neg_hi >> s & 1 != 0);
            for l in 0..LANES {
                let pick = |hi: bool| if hi { (v[l] >> 32) as u32 } else { v[l] as u32 };
                lo[s][l] = pick(sl) ^ if nl { 0x8000_0000 } else { 0 };
                hi[s][l] = pick(sh) ^ if nh { 0x8000_0000 } else { 0 };
            }
        }
        let (clamp, dx) = (self.i.clamp, self.mode.dx10_clamp);
        let ev = |a: u32, b: u32, c: u32| -> u32 {
            let r = match op {
                Op::PkFmaF32 => fl::fma_f32(f(a), f(b), f(c)),
                Op::PkMulF32 => f(a) * f(b),
                _ => f(a) + f(b),
            };
            fl::omod_clamp_f32(r, 0, clamp, dx).to_bits()
        };
        let mut r = [0u64; LANES];
        for l in 0..LANES {
            let x = ev(lo[0][l], lo[1][l], lo[2][l]) as u64;
            let y = ev(hi[0][l], hi[1][l], hi[2][l]) as u64;
            r[l] = x | y << 32;
        }
        self.wr64(&r)
    }

    /// `v_mad_mix*` / `v_fma_mix*`: each source is an f32, or an f16 half (op_sel_hi set) widened;
    /// `neg` negates, `neg_hi` takes the absolute value.
    fn mix(&mut self, op: Op) -> Result<(), EmuError> {
        let mut s = [[0f32; LANES]; 3];
        for n in 0..3 {
            let v = self.raw(n, SrcType::F32)?;
            let (f16, hi) = (self.i.op_sel_hi >> n & 1 != 0, self.i.op_sel >> n & 1 != 0);
            let (neg, abs) = (self.i.neg >> n & 1 != 0, self.i.neg_hi >> n & 1 != 0);
            for l in 0..LANES {
                let mut x = if f16 {
                    h::to_f32(if hi { (v[l] >> 16) as u16 } else { v[l] as u16 })
                } else {
                    f(v[l])
                };
                if abs {
                    x = x.abs();
                }
                if neg {
                    x = -x;
                }
                s[n][l] = x;
            }
        }
        let fused = matches!(op, Op::FmaMixF32 | Op::FmaMixloF16 | Op::FmaMixhiF16);
        let (clamp, dx) = (self.i.clamp, self.mode.dx10_clamp);
        let old = self.dst_old()?;
        let mut r = [0u32; LANES];
        for l in 0..LANES {
            let (a, b, c) = (s[0][l], s[1][l], s[2][l]);
            match op {
                Op::MadMixF32 | Op::FmaMixF32 => {
                    let v = if fused {
                        fl::fma_f32(a, b, c)
                    } else {
                        a * b + c
                    };
                    r[l] = fl::omod_clamp_f32(v, 0, clamp, dx).to_bits();
                }
                _ => {
                    // The f16 result is rounded once from the exact (fused) or f32 (mad) value.
                    let v = if fused {
                        h::from_f64(a as f64 * b as f64 + c as f64)
                    } else {
                        h::from_f32(a * b + c)
                    };
                    let v = h::omod_clamp(v, 0, clamp, dx) as u32;
                    r[l] = if matches!(op, Op::MadMixhiF16 | Op::FmaMixhiF16) {
                        (old[l] & 0xffff) | v << 16
                    } else {
                        (old[l] & 0xffff_0000) | v
                    };
                }
            }
        }
        self.wr(&r)
    }

    /// Dot products (VOP3P `v_dot*` with S2 as accumulator, VOP2 `v_dot*c` with D).
    fn dot(&mut self, op: Op, acc: Option<Lanes>) -> Result<(), EmuError> {
        use Op::*;
        let a = self.rd(0, T::B)?;
        let b = self.rd(1, T::B)?;
        let c = match acc {
            Some(c) => c,
            None => self.rd(2, T::B)?,
        };
        if self.i.form == Form::Vop3p
            && (self.i.op_sel != 0
                || self.i.op_sel_hi & 3 != 3
                || self.i.neg != 0
                || self.i.neg_hi != 0)
        {
            return Err(unsupported(format!(
                "{} with op_sel/neg modifiers",
                op.name()
            )));
        }
        let clamp = self.i.clamp;
        let sat = |v: i64, signed: bool| -> u32 {
            if !clamp {
                v as u32
            } else if signed {
                v.clamp(i32::MIN as i64, i32::MAX as i64) as i32 as u32
            } else {
                v.clamp(0, u32::MAX as i64) as u32
            }
        };
        let lane = |x: u32, y: u32, z: u32| -> u32 {
            match op {
                Dot2F32F16 | Dot2cF32F16 => {
                    let mut t = f(z);
                    t += h::to_f32(x as u16) * h::to_f32(y as u16);
                    t += h::to_f32((x >> 16) as u16) * h::to_f32((y >> 16) as u16);
                    fl::omod_clamp_f32(t, 0, clamp, true).to_bits()
                }
                Dot2I32I16 | Dot2cI32I16 => {
                    let p = |s: u32| (x >> s) as u16 as i16 as i64 * (y >> s) as u16 as i16 as i64;
                    sat(z as i32 as i64 + p(0) + p(16), true)
                }
                Dot2U32U16 => {
                    let p = |s: u32| ((x >> s) & 0xffff) as i64 * ((y >> s) & 0xffff) as i64;
                    sat(z as i64 + p(0) + p(16), false)
                }
                Dot4I32I8 | Dot4cI32I8 => {
                    let p = |s: u32| (x >> s) as u8 as i8 as i64 * (y >> s) as u8 as i8 as i64;
                    sat(z as i32 as i64 + p(0) + p(8) + p(16) + p(24), true)
                }
                Dot4U32U8 => {
                    let p = |s: u32| ((x >> s) & 0xff) as i64 * ((y >> s) & 0xff) as i64;
                    sat(z as i64 + p(0) + p(8) + p(16) + p(24), false)
                }
                Dot8I32I4 | Dot8cI32I4 => {
                    let p = |s: u32| {
                        (((x >> s) << 28) as i32 >> 28) as i64
                            * (((y >> s) << 28) as i32 >> 28) as i64
                    };
                    sat(
                        z as i32 as i64 + (0..8).map(|k| p(4 * k)).sum::<i64>(),
                        true,
                    )
                }
                _ => {
                    let p = |s: u32| ((x >> s) & 0xf) as i64 * ((y >> s) & 0xf) as i64;
                    sat(z as i64 + (0..8).map(|k| p(4 * k)).sum::<i64>(), false)
                }
            }
        };
        self.wr(&map3(&a, &b, &c, lane))
    }

    // ---------------------------------------------------------------- compares

    fn cmp(&mut self, c: super::ops::CmpOp) -> Result<(), EmuError> {
        let exec = self.w.exec;
        let m = match (c.kind, c.ty) {
            (CmpKind::Class, CmpType::F32) => {
                let a = self.rd(0, T::F)?;
                let b = self.rd(1, T::B)?;
                super::compare::lane_mask(&a, &b, exec, class::<u32>)
            }
            (CmpKind::Class, CmpType::F16) => {
                let a = self.rd(0, T::H)?;
                let b = self.rd(1, T::B)?;
                super::compare::lane_mask(&a, &b, exec, |x, y| class(x as u16, y))
            }
            (CmpKind::Class, CmpType::F64) => {
                let a = self.rd64(0, SrcType::F64)?;
                let b = self.rd(1, T::B)?;
                super::compare::lane_mask(&a, &b, exec, class::<u64>)
            }
            (CmpKind::Float(p), CmpType::F32) => {
                let mut a = self.rd(0, T::F)?;
                let mut b = self.rd(1, T::F)?;
                self.flush_in(&mut a);
                self.flush_in(&mut b);
                super::compare::lane_mask(&a, &b, exec, |x, y| p.eval(f(x), f(y)))
            }
            (CmpKind::Float(p), CmpType::F16) => {
                let a = self.rd(0, T::H)?;
                let b = self.rd(1, T::H)?;
                super::compare::lane_mask(&a, &b, exec, |x, y| {
                    p.eval(h::to_f32(x as u16), h::to_f32(y as u16))
                })
            }
            (CmpKind::Float(p), CmpType::F64) => {
                let a = self.rd64(0, SrcType::F64)?;
                let b = self.rd64(1, SrcType::F64)?;
                super::compare::lane_mask(&a, &b, exec, |x, y| p.eval(d(x), d(y)))
            }
            (CmpKind::Int(p), ty) => self.icmp(p, ty, exec)?,
            (CmpKind::Float(_), _) | (CmpKind::Class, _) => {
                return Err(EmuError::illegal("float compare on an integer type"));
            }
        };
        let m = m & self.write;
        self.wr_mask(m)?;
        if c.writes_exec {
            self.w.exec = m;
        }
        Ok(())
    }

    fn icmp(&mut self, p: IntPred, ty: CmpType, exec: u64) -> Result<u64, EmuError> {
        use super::compare::lane_mask;
        Ok(match ty {
            CmpType::I16 | CmpType::U16 => {
                let a = self.rd(0, T::S)?;
                let b = self.rd(1, T::S)?;
                if ty == CmpType::I16 {
                    lane_mask(&a, &b, exec, |x, y| {
                        p.eval(x as u16 as i16, y as u16 as i16)
                    })
                } else {
                    lane_mask(&a, &b, exec, |x, y| p.eval(x as u16, y as u16))
                }
            }
            CmpType::I32 | CmpType::U32 => {
                let a = self.rd(0, T::B)?;
                let b = self.rd(1, T::B)?;
                if ty == CmpType::I32 {
                    lane_mask(&a, &b, exec, |x, y| p.eval(x as i32, y as i32))
                } else {
                    lane_mask(&a, &b, exec, |x, y| p.eval(x, y))
                }
            }
            _ => {
                let st = if ty == CmpType::I64 {
                    SrcType::I64
                } else {
                    SrcType::B64
                };
                let a = self.rd64(0, st)?;
                let b = self.rd64(1, st)?;
                if ty == CmpType::I64 {
                    lane_mask(&a, &b, exec, |x, y| p.eval(x as i64, y as i64))
                } else {
                    lane_mask(&a, &b, exec, |x, y| p.eval(x, y))
                }
            }
        })
    }

    // ---------------------------------------------------------------- MFMA

    fn regs(&self, n: usize, count: u32) -> Result<Vec<Lanes>, EmuError> {
        let c = self.i.src[n];
        if c < code::VGPR0 {
            // An inline constant or SGPR broadcast to every register (C = 0 is common).
            let v = self.w.read_scalar(c, self.i.literal, SrcType::F32)?;
            return Ok(vec![[v; LANES]; count as usize]);
        }
        let r = (c - code::VGPR0) as usize;
        let agpr = self.i.acc >> (n + 1) & 1 != 0;
        let file = if agpr { &self.w.agpr } else { &self.w.vgpr };
        if r + count as usize > file.len() {
            return Err(EmuError::illegal(format!(
                "MFMA operand {n} runs past the register file"
            )));
        }
        Ok(file[r..r + count as usize].to_vec())
    }

    fn mfma(&mut self, s: &mfma::MfmaShape) -> Result<(), EmuError> {
        if !self.w.target.has_agprs() {
            return Err(unsupported("MFMA needs gfx90a or gfx942".into()));
        }
        let (cbsz, abid) = (self.i.cbsz as u32, self.i.abid as u32);
        if cbsz != 0 && (1u32 << cbsz > s.blocks || abid >= 1 << cbsz) || cbsz == 0 && abid != 0 {
            return Err(EmuError::illegal(format!(
                "MFMA cbsz:{cbsz} abid:{abid} does not fit {} blocks",
                s.blocks
            )));
        }
        let blgp = self.i.blgp;
        if blgp == 3 {
            return Err(unsupported("MFMA blgp:3 (B lane rotation)".into()));
        }
        let a = self.regs(0, s.a_regs())?;
        let mut b = self.regs(1, s.a_regs())?;
        if blgp != 0 {
            // B lane-group patterns: broadcast one half (1, 2) or one quarter (4-7) of the lanes.
            let src = |l: usize| -> usize {
                match blgp {
                    1 => l % 32,
                    2 => 32 + l % 32,
                    q => 16 * (q as usize - 4) + l % 16,
                }
            };
            for r in b.iter_mut() {
                let old = *r;
                for l in 0..LANES {
                    r[l] = old[src(l)];
                }
            }
        }
        let c = self.regs(2, s.d_regs())?;
        let mut dd = c.clone();
        mfma::execute_bcast(s, cbsz, abid, &a, &b, &c, &mut dd);
        let nd = s.d_regs() as usize;
        let r = self.i.vdst as usize;
        self.check_dst(nd)?;
        let file = if self.i.acc & 1 != 0 {
            &mut self.w.agpr
        } else {
            &mut self.w.vgpr
        };
        file[r..r + nd].copy_from_slice(&dd);
        Ok(())
    }
}

#[cfg(test)]
mod tests;

//! Building machine instructions with legal operands: the encoding (`_e32` when its operand
//! rules hold, `_e64` otherwise), inline constants versus literals, and gfx9's constant bus
//! (one SGPR or literal per VALU instruction; no literal in VOP3). Operands that break a rule
//! are copied to VGPRs first; classes are never left for the allocator to change.

use smallvec::SmallVec;

use crate::isa::{self, Encoding, Format, InlineFloat, Kind, Opcode, Operand, Slot};
use crate::mir::{implicit, MInst, MOpcode, MOperand, RegClass, VReg};

use super::{op, Isel};

/// A source operand before legalization.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Src {
    /// A virtual register.
    R(VReg),
    /// 32-bit bits for a 32-bit operand (inline constant when one matches, else a literal).
    Imm(u32),
    /// 64-bit bits for a 64-bit operand.
    Imm64(u64),
}

/// The inline constant for the 32-bit pattern `bits`, if one exists.
pub(crate) fn inline32(bits: u32) -> Option<Operand> {
    let i = bits as i32;
    if (-16..=64).contains(&i) {
        return Some(Operand::InlineInt(i as i8));
    }
    InlineFloat::ALL
        .iter()
        .find(|c| (c.value() as f32).to_bits() == bits && **c != InlineFloat::InvTwoPi)
        .map(|c| Operand::InlineFloat(*c))
}

/// The inline constant for the 64-bit pattern `bits` (integers only; floats as f64).
pub(crate) fn inline64(bits: u64) -> Option<Operand> {
    let i = bits as i64;
    if (-16..=64).contains(&i) {
        return Some(Operand::InlineInt(i as i8));
    }
    InlineFloat::ALL
        .iter()
        .find(|c| c.value().to_bits() == bits && **c != InlineFloat::InvTwoPi)
        .map(|c| Operand::InlineFloat(*c))
}

fn commutative(name: &str) -> bool {
    const C: &[&str] = &[
        "v_add_f32",
        "v_mul_f32",
        "v_add_u32",
        "v_and_b32",
        "v_or_b32",
        "v_xor_b32",
        "v_min_f32",
        "v_max_f32",
        "v_min_i32",
        "v_max_i32",
        "v_min_u32",
        "v_max_u32",
        "v_add_f16",
        "v_mul_f16",
        "v_min_f16",
        "v_max_f16",
        "v_mul_u32_u24",
        "v_mul_i32_i24",
    ];
    C.contains(&name)
}

/// Whether the SALU instruction `name` writes SCC.
pub(crate) fn salu_writes_scc(name: &str) -> bool {
    if name.starts_with("s_mov")
        || name.starts_with("s_cselect")
        || name.starts_with("s_cmov")
        || name.starts_with("s_mul_")
        || name.starts_with("s_bfm")
        || name.starts_with("s_brev")
        || name.starts_with("s_ff")
        || name.starts_with("s_flbit")
        || name.starts_with("s_sext")
        || name.starts_with("s_pack")
        || name.starts_with("s_movk")
        || name.starts_with("s_bitset")
        || name.starts_with("s_load")
    {
        return false;
    }
    true
}

/// Whether the SALU instruction `name` reads SCC.
pub(crate) fn salu_reads_scc(name: &str) -> bool {
    name.starts_with("s_cselect")
        || name.starts_with("s_addc")
        || name.starts_with("s_subb")
        || name.starts_with("s_cmov")
}

impl Isel<'_> {
    pub(crate) fn is_vgpr(&self, s: Src) -> bool {
        matches!(s, Src::R(v) if self.mf.vregs[v].class == RegClass::Vgpr)
    }

    /// `v` in `class` (copies per dword: `v_mov_b32` to VGPRs, `v_readfirstlane_b32` to SGPRs).
    pub(crate) fn to_class(&mut self, v: VReg, class: RegClass) -> VReg {
        let d = self.mf.vregs[v];
        if d.class == class {
            return v;
        }
        let parts: Vec<VReg> = if d.dwords == 1 {
            vec![v]
        } else {
            (0..d.dwords).map(|k| self.extract(v, k, 1)).collect()
        };
        let mut out = Vec::new();
        for p in parts {
            // An SGPR read from a VGPR under this EXEC: the VGPR already holds it in every
            // active lane (the value is uniform), so no `v_mov_b32` back.
            if let (RegClass::Vgpr, Some(&src)) = (class, self.lane_copies.get(&p)) {
                out.push(src);
                continue;
            }
            let r = self.new_vreg(class, 1);
            let opc = if class == RegClass::Vgpr {
                Opcode::VMovB32
            } else {
                Opcode::VReadfirstlaneB32
            };
            let mut i = MInst::isa(opc, &[MOperand::Def(r), MOperand::Use(p)]);
            i.implicit_uses = implicit::EXEC;
            self.push(i);
            if class == RegClass::Sgpr {
                self.lane_copies.insert(r, p);
            }
            out.push(r);
        }
        if out.len() == 1 {
            out[0]
        } else {
            self.build(class, &out)
        }
    }

    /// Dwords `k..k+n` of tuple `v`.
    pub(crate) fn extract(&mut self, v: VReg, k: u8, n: u8) -> VReg {
        let class = self.mf.vregs[v].class;
        let r = self.new_vreg(class, n);
        self.push(MInst::pseudo(
            MOpcode::Extract(k),
            &[MOperand::Def(r), MOperand::Use(v)],
        ));
        r
    }

    /// A tuple from parts (all converted to `class`).
    pub(crate) fn build(&mut self, class: RegClass, parts: &[VReg]) -> VReg {
        let parts: Vec<VReg> = parts.iter().map(|&p| self.to_class(p, class)).collect();
        let n: u8 = parts.iter().map(|&p| self.mf.vregs[p].dwords).sum();
        let r = self.new_vreg(class, n);
        let mut ops = vec![MOperand::Def(r)];
        ops.extend(parts.iter().map(|&p| MOperand::Use(p)));
        self.push(MInst::pseudo(MOpcode::Build, &ops));
        r
    }

    /// A register holding 32-bit `bits` in `class`.
    pub(crate) fn imm_reg(&mut self, bits: u32, class: RegClass) -> VReg {
        if class == RegClass::Sgpr {
            return self.s_mov32(bits);
        }
        let r = self.new_vreg(RegClass::Vgpr, 1);
        let src = inline32(bits).unwrap_or(Operand::Literal(bits));
        let mut i = MInst::isa(Opcode::VMovB32, &[MOperand::Def(r), MOperand::Phys(src)]);
        i.implicit_uses = implicit::EXEC;
        self.push(i);
        r
    }

    /// A register pair holding 64-bit `bits` in `class`.
    pub(crate) fn imm_reg64(&mut self, bits: u64, class: RegClass) -> VReg {
        if class == RegClass::Sgpr {
            if let Some(c) = inline64(bits) {
                let r = self.new_vreg(RegClass::Sgpr, 2);
                self.push(MInst::isa(
                    Opcode::SMovB64,
                    &[MOperand::Def(r), MOperand::Phys(c)],
                ));
                return r;
            }
        }
        let lo = self.imm_reg(bits as u32, class);
        let hi = self.imm_reg((bits >> 32) as u32, class);
        self.build(class, &[lo, hi])
    }

    /// `s_mov_b32 r, bits`.
    pub(crate) fn s_mov32(&mut self, bits: u32) -> VReg {
        let r = self.new_vreg(RegClass::Sgpr, 1);
        let src = inline32(bits).unwrap_or(Operand::Literal(bits));
        self.push(MInst::isa(
            Opcode::SMovB32,
            &[MOperand::Def(r), MOperand::Phys(src)],
        ));
        r
    }

    fn scalar_src(&mut self, s: Src, dwords: u8, lit_ok: &mut bool) -> MOperand {
        match s {
            Src::R(v) => {
                let v = self.to_class(v, RegClass::Sgpr);
                MOperand::Use(v)
            }
            Src::Imm(b) => match inline32(b) {
                Some(c) if dwords == 1 => MOperand::Phys(c),
                _ if dwords == 1 && *lit_ok => {
                    *lit_ok = false;
                    MOperand::Phys(Operand::Literal(b))
                }
                _ => MOperand::Use(self.s_mov32(b)),
            },
            Src::Imm64(b) => match inline64(b) {
                Some(c) => MOperand::Phys(c),
                None => MOperand::Use(self.imm_reg64(b, RegClass::Sgpr)),
            },
        }
    }

    /// A SALU instruction with a new SGPR destination (its width from the table).
    pub(crate) fn sop2(&mut self, name: &str, srcs: &[Src]) -> VReg {
        let opc = op(name);
        let forms = opc.info().operands;
        let dw = forms[0].dwords.max(1);
        let r = self.new_vreg(RegClass::Sgpr, dw);
        self.salu(name, Some(r), srcs);
        r
    }

    /// A SALU instruction (SOP1/SOP2/SOPC) with an optional destination.
    pub(crate) fn salu(&mut self, name: &str, dst: Option<VReg>, srcs: &[Src]) {
        let opc = op(name);
        let forms = opc.info().operands;
        let mut ops = Vec::new();
        let mut lit_ok = true;
        let mut k = 0;
        for f in forms {
            if f.access.writes() && f.slot == Slot::Dst {
                ops.push(MOperand::Def(dst.expect("SALU destination")));
            } else if k < srcs.len() {
                ops.push(self.scalar_src(srcs[k], f.dwords.max(1), &mut lit_ok));
                k += 1;
            }
        }
        let mut i = MInst::isa(opc, &ops);
        if salu_writes_scc(name) {
            i.implicit_defs |= implicit::SCC;
        }
        if salu_reads_scc(name) {
            i.implicit_uses |= implicit::SCC;
        }
        self.push(i);
    }

    /// A VALU instruction with one new VGPR destination (width from the table).
    pub(crate) fn v(&mut self, name: &str, srcs: &[Src]) -> VReg {
        let opc = op(name);
        let dw = opc.info().operands[0].dwords.max(1);
        let r = self.new_vreg(RegClass::Vgpr, dw);
        self.vop_of(opc, name, &[r], srcs);
        r
    }

    /// A VALU instruction with destination `dst`.
    pub(crate) fn vop3(&mut self, name: &str, dst: VReg, srcs: &[Src]) {
        self.vop(name, &[dst], srcs);
    }

    /// A VALU compare giving a lane mask (SGPR pair).
    pub(crate) fn vcmp(&mut self, name: &str, a: Src, b: Src) -> VReg {
        let m = self.new_vreg(RegClass::Sgpr, 2);
        self.vop(name, &[m], &[a, b]);
        m
    }

    /// A VALU instruction with legal operands: `defs` fill the written slots in order, `srcs`
    /// the read slots.
    pub(crate) fn vop(&mut self, name: &str, defs: &[VReg], srcs: &[Src]) {
        self.vop_of(op(name), name, defs, srcs);
    }

    /// [`Isel::vop`] of `opc`, the opcode named `name` (looked up once by the caller). The
    /// operand lists are held inline: this runs for every VALU instruction isel makes.
    fn vop_of(&mut self, opc: Opcode, name: &str, defs: &[VReg], srcs: &[Src]) {
        let info = opc.info();
        let native_vop = matches!(info.format, Format::Vop1 | Format::Vop2 | Format::Vopc);
        let has_vcc = info.operands.iter().any(|o| o.kind == Kind::FixedVcc);
        let mut srcs: SmallVec<[Src; 4]> = SmallVec::from_slice(srcs);
        let enc = if native_vop && !has_vcc && info.format != Format::Vopc {
            if info.format == Format::Vop2
                && srcs.len() >= 2
                && !self.is_vgpr(srcs[1])
                && self.is_vgpr(srcs[0])
                && commutative(name)
            {
                srcs.swap(0, 1);
            }
            if info.format != Format::Vop2 || (srcs.len() >= 2 && self.is_vgpr(srcs[1])) {
                Encoding::Native
            } else {
                Encoding::E64
            }
        } else if native_vop {
            Encoding::E64
        } else {
            Encoding::Native
        };
        let forms = isa::operand_infos(opc, enc, false);
        let vop3 = enc == Encoding::E64 || matches!(info.format, Format::Vop3 | Format::Vop3p);
        // Asked only of an immediate source.
        let f16 = || name.contains("_f16") || name.contains("_b16") || name.contains("_u16");
        // First pass: which slot each source goes to.
        let mut slots: SmallVec<[isa::OperandInfo; 4]> = SmallVec::new();
        for f in forms {
            if f.access.reads() && !f.access.writes() && f.kind != Kind::FixedVcc {
                slots.push(*f);
            }
        }
        // Constant bus: SGPRs that cannot move (SReg slots) first.
        let mut bus: SmallVec<[VReg; 2]> = SmallVec::new();
        for (f, s) in slots.iter().zip(&srcs) {
            if f.kind == Kind::SReg {
                if let Src::R(v) = s {
                    if !bus.contains(v) {
                        bus.push(*v);
                    }
                }
            }
        }
        // A source read from an SGPR besides a literal: the literal cannot take the bus.
        let scalar_srcs = srcs
            .iter()
            .filter(|s| matches!(s, Src::R(v) if self.mf.vregs[*v].class != RegClass::Vgpr))
            .count();
        let mut lit_used = false;
        let mut src_ops: SmallVec<[MOperand; 4]> = SmallVec::new();
        for (f, s) in slots.iter().zip(srcs.iter()) {
            let dwords = f.dwords.max(1);
            let o = match (f.kind, *s) {
                (Kind::SReg, Src::R(v)) => MOperand::Use(self.to_class(v, RegClass::Sgpr)),
                (Kind::SReg, imm) => {
                    let mut t = true;
                    self.scalar_src(imm, dwords, &mut t)
                }
                (Kind::VReg, Src::R(v)) => MOperand::Use(self.to_class(v, RegClass::Vgpr)),
                (Kind::VReg, Src::Imm(b)) => MOperand::Use(self.imm_reg(b, RegClass::Vgpr)),
                (Kind::VReg, Src::Imm64(b)) => MOperand::Use(self.imm_reg64(b, RegClass::Vgpr)),
                (_, Src::R(v)) => {
                    if self.mf.vregs[v].class == RegClass::Vgpr {
                        MOperand::Use(v)
                    } else if bus.contains(&v) {
                        MOperand::Use(v)
                    } else if bus.is_empty() && !lit_used {
                        bus.push(v);
                        MOperand::Use(v)
                    } else {
                        MOperand::Use(self.to_class(v, RegClass::Vgpr))
                    }
                }
                (_, Src::Imm(b)) => {
                    let inl = if f16() {
                        let i = b as i32;
                        (-16..=64)
                            .contains(&i)
                            .then_some(Operand::InlineInt(i as i8))
                    } else if dwords == 1 {
                        inline32(b)
                    } else {
                        inline64(b as i32 as i64 as u64)
                    };
                    match inl {
                        Some(c) => MOperand::Phys(c),
                        None if !vop3
                            && f.slot == Slot::Src0
                            && bus.is_empty()
                            && !lit_used
                            && dwords == 1 =>
                        {
                            lit_used = true;
                            MOperand::Phys(Operand::Literal(b))
                        }
                        // gfx9's VOP3 takes no literal: with the constant bus free, an SGPR
                        // holds it (`s_mov_b32`), not a VGPR that adds to the VGPR pressure
                        // (hash_chain's 56 `seed * k` of its prologue held 6 VGPRs).
                        None if vop3
                            && bus.is_empty()
                            && !lit_used
                            && scalar_srcs == 0
                            && dwords == 1 =>
                        {
                            let r = self.imm_reg(b, RegClass::Sgpr);
                            bus.push(r);
                            MOperand::Use(r)
                        }
                        None => MOperand::Use(self.imm_reg(b, RegClass::Vgpr)),
                    }
                }
                (_, Src::Imm64(b)) => match inline64(b) {
                    Some(c) => MOperand::Phys(c),
                    None => MOperand::Use(self.imm_reg64(b, RegClass::Vgpr)),
                },
            };
            src_ops.push(o);
        }
        // Assemble in form order.
        let mut ops: SmallVec<[MOperand; 6]> = SmallVec::new();
        let mut di = 0;
        let mut si = 0;
        for f in forms {
            if f.kind == Kind::FixedVcc {
                ops.push(MOperand::Phys(Operand::Special(isa::SpecialReg::Vcc)));
            } else if f.access.writes() {
                ops.push(MOperand::Def(defs[di]));
                di += 1;
            } else {
                ops.push(src_ops[si]);
                si += 1;
            }
        }
        let mut i = MInst::isa(opc, &ops);
        i.encoding = enc;
        i.implicit_uses = implicit::EXEC;
        if enc == Encoding::Native && has_vcc {
            i.implicit_defs |= implicit::VCC;
            i.implicit_uses |= implicit::VCC;
        }
        self.push(i);
    }
}

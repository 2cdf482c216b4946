//! Encoder: [`Inst`] → machine dwords for a target. Checks that the opcode exists on the target,
//! that every operand is of a kind its field can hold (register file, width, range, at most one
//! literal), and that modifiers fit their fields; anything else is an [`EncodeError`].

use smallvec::SmallVec;

use super::opcodes::{Format, Kind, OperandInfo, Slot};
use super::operand::{Operand, SpecialReg};
use super::{Encoding, Inst};
use crate::Target;

/// Why an instruction cannot be encoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The target does not have the instruction (or this encoding of it).
    #[error("{op} ({encoding:?}) does not exist on {target}")]
    NotOnTarget {
        /// Mnemonic.
        op: &'static str,
        /// Requested encoding.
        encoding: Encoding,
        /// Target.
        target: Target,
    },
    /// Wrong number of operands.
    #[error("{op} takes {expected} operands, got {got}")]
    OperandCount {
        /// Mnemonic.
        op: &'static str,
        /// Operands the form has.
        expected: usize,
        /// Operands given.
        got: usize,
    },
    /// An operand its field cannot hold.
    #[error(
        "{op}: operand {index} ({operand:?}) cannot be encoded as {kind:?} of {dwords} dwords{why}"
    )]
    BadOperand {
        /// Mnemonic.
        op: &'static str,
        /// Operand position.
        index: usize,
        /// The operand.
        operand: Operand,
        /// What the field holds.
        kind: Kind,
        /// Expected width.
        dwords: u8,
        /// More detail (starts with ": " when present).
        why: &'static str,
    },
    /// Two different literals (gfx9 instructions carry at most one literal dword).
    #[error("{op}: more than one distinct literal")]
    TwoLiterals {
        /// Mnemonic.
        op: &'static str,
    },
    /// A modifier out of range or not available for this form.
    #[error("{op}: modifier {what} out of range or not allowed")]
    BadModifier {
        /// Mnemonic.
        op: &'static str,
        /// Which modifier.
        what: &'static str,
    },
}

struct Enc {
    w0: u32,
    w1: u32,
    literal: Option<u32>,
}

/// Encodes `inst` for `target` as little-endian dwords (instruction, then any literal).
pub fn encode(inst: &Inst, target: Target) -> Result<SmallVec<[u32; 4]>, EncodeError> {
    let info = inst.info();
    let name = info.name;
    let not_on = || EncodeError::NotOnTarget {
        op: name,
        encoding: inst.encoding,
        target,
    };
    let format = info.format;
    let op = match inst.encoding {
        Encoding::E64 => info.e64_opcode_on(target).ok_or_else(not_on)? as u32,
        Encoding::Native => info.opcode_on(target).ok_or_else(not_on)? as u32,
        Encoding::Dpp => {
            if !info.has_dpp(target) {
                return Err(not_on());
            }
            info.opcode_on(target).ok_or_else(not_on)? as u32
        }
        Encoding::Sdwa => {
            if !info.has_sdwa(target) {
                return Err(not_on());
            }
            info.opcode_on(target).ok_or_else(not_on)? as u32
        }
    };
    let infos = inst.operand_infos();
    if inst.operands.len() != infos.len() {
        return Err(EncodeError::OperandCount {
            op: name,
            expected: infos.len(),
            got: inst.operands.len(),
        });
    }
    check_registers(inst, infos, target)?;
    let m = &inst.mods;
    let gfx940 = target.is_gfx940_family();
    let bad_mod = |what: &'static str| EncodeError::BadModifier { op: name, what };
    check_modifier_flags(inst, format)?;
    let vop3 = format == Format::Vop3 || inst.encoding == Encoding::E64;

    let mut e = Enc {
        w0: 0,
        w1: 0,
        literal: None,
    };
    let mut two_words = false;
    // Fixed bits and opcode.
    match (format, inst.encoding) {
        (_, Encoding::E64) | (Format::Vop3, _) => {
            e.w0 = 0b110100 << 26 | op << 16;
            two_words = true;
        }
        (Format::Sop2, _) => e.w0 = 0b10 << 30 | op << 23,
        (Format::Sopk, _) => e.w0 = 0b1011 << 28 | op << 23,
        (Format::Sop1, _) => e.w0 = 0x17d << 23 | op << 8,
        (Format::Sopc, _) => e.w0 = 0x17e << 23 | op << 16,
        (Format::Sopp, _) => e.w0 = 0x17f << 23 | op << 16,
        (Format::Smem, _) => {
            e.w0 = 0b110000 << 26 | op << 18;
            two_words = true;
        }
        (Format::Vop1, _) => e.w0 = 0x3f << 25 | op << 9,
        (Format::Vop2, _) => e.w0 = op << 25,
        (Format::Vopc, _) => e.w0 = 0x3e << 25 | op << 17,
        (Format::Vop3p, _) => {
            e.w0 = 0x1a7 << 23 | op << 16;
            two_words = true;
        }
        (Format::Ds, _) => {
            e.w0 = 0b110110 << 26 | op << 17;
            two_words = true;
        }
        (Format::Mubuf, _) => {
            e.w0 = 0b111000 << 26 | op << 18;
            two_words = true;
        }
        (Format::Mtbuf, _) => {
            e.w0 = 0b111010 << 26 | op << 15;
            two_words = true;
        }
        (Format::Flat, _) => {
            e.w0 = 0b110111 << 26 | op << 18;
            two_words = true;
        }
        (Format::Scratch, _) => {
            e.w0 = 0b110111 << 26 | 1 << 14 | op << 18;
            two_words = true;
        }
        (Format::Global, _) => {
            e.w0 = 0b110111 << 26 | 2 << 14 | op << 18;
            two_words = true;
        }
    }
    if matches!(inst.encoding, Encoding::Dpp | Encoding::Sdwa) {
        two_words = true;
        if !matches!(format, Format::Vop1 | Format::Vop2 | Format::Vopc) {
            return Err(not_on());
        }
    }

    // AGPR selection bits.
    let mut acc_data = false;
    let mut acc_cd = false;
    let mut acc_ab = [false; 2];
    let mut acc_seen: Option<bool> = None;

    for (index, (o, oi)) in inst.operands.iter().zip(infos).enumerate() {
        let bad = |why: &'static str| EncodeError::BadOperand {
            op: name,
            index,
            operand: *o,
            kind: oi.kind,
            dwords: oi.dwords,
            why,
        };
        let value: u32 = match oi.kind {
            Kind::FixedVcc => {
                match (format, inst.encoding, *o) {
                    (Format::Vopc, Encoding::Sdwa, Operand::Special(SpecialReg::Vcc)) => {}
                    (Format::Vopc, Encoding::Sdwa, _) => {
                        // VOPC SDWA may write any SGPR pair: SD bit + sdst.
                        let code =
                            scalar_reg_code(o, 2).ok_or_else(|| bad(": not an SGPR pair"))?;
                        e.w1 |= 1 << 15 | (code as u32) << 8;
                    }
                    (_, _, Operand::Special(SpecialReg::Vcc)) => {}
                    _ => return Err(bad(": the 32-bit encoding implies vcc")),
                }
                continue;
            }
            Kind::Lit32 => {
                let v = match *o {
                    Operand::Literal(v) => v,
                    Operand::Imm(v) if (i32::MIN as i64..=u32::MAX as i64).contains(&v) => v as u32,
                    _ => return Err(bad(": expected a literal")),
                };
                set_literal(&mut e, v, name)?;
                continue;
            }
            Kind::Imm16
            | Kind::Imm16Hex
            | Kind::Hwreg
            | Kind::Waitcnt
            | Kind::Sendmsg
            | Kind::GprIdx
            | Kind::Label => {
                let v = match *o {
                    Operand::Imm(v) => v,
                    Operand::InlineInt(v) => v as i64,
                    Operand::Literal(v) => v as i64,
                    _ => return Err(bad(": expected an immediate")),
                };
                let ok = if format == Format::Sopc {
                    (0..=255).contains(&v)
                } else if oi.kind == Kind::Label {
                    (-32768..=65535).contains(&v)
                } else {
                    (-32768..=65535).contains(&v)
                };
                if !ok {
                    return Err(bad(": immediate out of range"));
                }
                (v as u32) & if format == Format::Sopc { 0xff } else { 0xffff }
            }
            Kind::SmemOffset => match *o {
                Operand::Imm(v) => {
                    if !(-(1 << 20)..(1 << 20)).contains(&v) {
                        return Err(bad(": SMEM offset is a signed 21-bit value"));
                    }
                    e.w0 |= 1 << 17;
                    e.w1 |= (v as u32) & 0x1f_ffff;
                    continue;
                }
                _ => {
                    let code = scalar_reg_code(o, 1).ok_or_else(|| bad(": not an SGPR"))?;
                    if m.offset != 0 {
                        // SGPR and immediate: SOE + IMM.
                        if !(-(1 << 20)..(1 << 20)).contains(&(m.offset as i64)) {
                            return Err(bad_mod("offset"));
                        }
                        e.w0 |= 1 << 17 | 1 << 14;
                        e.w1 |= (m.offset as u32) & 0x1f_ffff | (code as u32) << 25;
                    } else {
                        e.w1 |= code as u32;
                    }
                    continue;
                }
            },
            Kind::VReg => {
                if oi.slot == Slot::Vaddr
                    || (oi.slot == Slot::Addr && matches!(format, Format::Scratch))
                {
                    if *o == Operand::Off {
                        if format == Format::Scratch && gfx940 {
                            // no SVE bit
                        }
                        continue;
                    }
                    if format == Format::Scratch && gfx940 {
                        e.w0 |= 1 << 13;
                    }
                }
                let want = vreg_width(format, oi, inst);
                match *o {
                    Operand::Vgpr { first, count }
                        if count == want && first as u32 + count as u32 <= 256 =>
                    {
                        first as u32
                    }
                    _ => return Err(bad(": expected a VGPR of this width")),
                }
            }
            Kind::AReg => match *o {
                Operand::Agpr { first, count }
                    if count == oi.dwords.max(1)
                        && target.has_agprs()
                        && first as u32 + count as u32 <= 256 =>
                {
                    first as u32
                }
                _ => return Err(bad(": expected an AGPR")),
            },
            Kind::AvReg => {
                let want = vreg_width(format, oi, inst);
                let (first, count, acc) = match *o {
                    Operand::Vgpr { first, count } => (first, count, false),
                    Operand::Agpr { first, count } if target.has_agprs() => (first, count, true),
                    _ => return Err(bad(": expected a VGPR or AGPR")),
                };
                if count != want || first as u32 + count as u32 > 256 {
                    return Err(bad(": wrong width"));
                }
                if format == Format::Vop3p {
                    acc_cd |= acc && oi.slot == Slot::Dst;
                    if !acc && oi.slot == Slot::Dst && target.has_agprs() && info.is_mfma() {
                        // a VGPR result: acc_cd stays clear
                    }
                } else {
                    if acc_seen.is_some_and(|a| a != acc) {
                        return Err(bad(": VGPR and AGPR data cannot be mixed (one ACC bit)"));
                    }
                    acc_seen = Some(acc);
                    acc_data = acc;
                }
                first as u32
            }
            Kind::SReg => {
                if oi.slot == Slot::Saddr {
                    if *o == Operand::Off {
                        0x7f
                    } else {
                        scalar_reg_code(o, oi.dwords.max(1)).ok_or_else(|| bad(": not an SGPR"))?
                            as u32
                    }
                } else {
                    let w = oi.dwords.max(1);
                    // VOP3 carry/mask operands (SReg_1_XEXEC) cannot name EXEC
                    if matches!(oi.slot, Slot::Sdst | Slot::Src2)
                        && matches!(
                            o,
                            Operand::Special(
                                SpecialReg::Exec | SpecialReg::ExecLo | SpecialReg::ExecHi
                            )
                        )
                    {
                        return Err(bad(": EXEC cannot be a carry or mask operand"));
                    }
                    scalar_reg_code(o, w)
                        .ok_or_else(|| bad(": not a scalar register of this width"))?
                        as u32
                }
            }
            Kind::VSrc | Kind::SSrc | Kind::ASrc | Kind::AvSrc => {
                let w = oi.dwords.max(1);

                match *o {
                    Operand::Vgpr { first, count }
                        if matches!(oi.kind, Kind::VSrc | Kind::AvSrc) =>
                    {
                        if count != w || first as u32 + count as u32 > 256 {
                            return Err(bad(": wrong width"));
                        }
                        256 + first as u32
                    }
                    Operand::Agpr { first, count }
                        if matches!(oi.kind, Kind::ASrc | Kind::AvSrc) && target.has_agprs() =>
                    {
                        if count != w || first as u32 + count as u32 > 256 {
                            return Err(bad(": wrong width"));
                        }
                        if oi.kind == Kind::AvSrc {
                            match oi.slot {
                                Slot::Src0 => acc_ab[0] = true,
                                Slot::Src1 => acc_ab[1] = true,
                                Slot::Src2 => acc_cd = true,
                                _ => {}
                            }
                        }
                        256 + first as u32
                    }
                    Operand::Literal(v) => {
                        let literal_ok = !vop3
                            && format != Format::Vop3p
                            && !matches!(inst.encoding, Encoding::Dpp | Encoding::Sdwa)
                            && oi.kind != Kind::AvSrc;
                        if !literal_ok {
                            return Err(bad(": no literal in this encoding"));
                        }
                        set_literal(&mut e, v, name)?;
                        255
                    }
                    Operand::InlineInt(_) | Operand::InlineFloat(_) => {
                        if matches!(inst.encoding, Encoding::Dpp | Encoding::Sdwa)
                            && oi.slot == Slot::Src0
                        {
                            return Err(bad(": DPP/SDWA src0 must be a register"));
                        }
                        o.scalar_code()
                            .ok_or_else(|| bad(": not an inline constant"))?
                            as u32
                    }
                    _ if oi.kind == Kind::AvSrc => {
                        return Err(bad(": MFMA sources are VGPRs, AGPRs or inline constants"))
                    }
                    _ => {
                        if matches!(inst.encoding, Encoding::Dpp) {
                            return Err(bad(": DPP sources are VGPRs"));
                        }
                        scalar_reg_code(o, w).ok_or_else(|| bad(": not a source of this width"))?
                            as u32
                    }
                }
            }
        };
        // Register-only kinds in a 9-bit source field are encoded like any vector source.
        let nine_bit = match oi.slot {
            Slot::Src0 => matches!(
                format,
                Format::Vop1 | Format::Vop2 | Format::Vopc | Format::Vop3 | Format::Vop3p
            ),
            Slot::Src1 | Slot::Src2 => vop3 || format == Format::Vop3p,
            _ => false,
        };
        let value = if nine_bit && matches!(oi.kind, Kind::VReg | Kind::AReg) {
            value + 256
        } else {
            value
        };
        place(&mut e, format, inst.encoding, oi.slot, value, vop3).map_err(bad)?;
    }

    // Modifiers.
    match (format, inst.encoding) {
        (_, Encoding::E64) | (Format::Vop3, _) => {
            let vop3b = infos.iter().any(|o| o.slot == Slot::Sdst);
            if m.abs > 7 || m.neg > 7 || m.omod > 3 || m.op_sel > 15 {
                return Err(bad_mod("abs/neg/omod/op_sel"));
            }
            if vop3b && (m.abs != 0 || m.op_sel != 0) {
                return Err(bad_mod("abs/op_sel on a VOP3b instruction"));
            }
            e.w0 |= (m.abs as u32) << 8 | (m.op_sel as u32) << 11 | (m.clamp as u32) << 15;
            e.w1 |= (m.omod as u32) << 27 | (m.neg as u32) << 29;
        }
        (Format::Vop3p, _) => {
            if info.is_mfma() {
                if m.cbsz > 7 || m.abid > 15 || m.blgp > 7 {
                    return Err(bad_mod("cbsz/abid/blgp"));
                }
                e.w0 |= (m.cbsz as u32) << 8 | (m.abid as u32) << 11 | (acc_cd as u32) << 15;
                e.w1 |= (acc_ab[0] as u32) << 27 | (acc_ab[1] as u32) << 28 | (m.blgp as u32) << 29;
            } else {
                if m.neg > 7 || m.neg_hi > 7 || m.abs > 7 || m.op_sel > 7 || m.op_sel_hi > 7 {
                    return Err(bad_mod("op_sel/neg"));
                }
                // op_sel_hi bits of absent sources take LLVM's default
                let used = (1u8 << super::decode::source_count(infos)) - 1;
                let hi = (m.op_sel_hi & used)
                    | (super::Modifiers::default_for(inst.op).op_sel_hi & !used);
                let hi_bits = if info.is_mix() { m.abs } else { m.neg_hi };
                if info.is_mix() && m.neg_hi != 0 || !info.is_mix() && m.abs != 0 {
                    return Err(bad_mod("abs/neg_hi"));
                }
                e.w0 |= (hi_bits as u32) << 8
                    | (m.op_sel as u32) << 11
                    | ((hi as u32 >> 2) & 1) << 14
                    | (m.clamp as u32) << 15;
                e.w1 |= (hi as u32 & 3) << 27 | (m.neg as u32) << 29;
            }
        }
        (Format::Smem, _) => {
            e.w0 |= (m.glc as u32) << 16;
        }
        (Format::Ds, _) => {
            let two = is_two_offset(info.name);
            if two {
                if !(0..=255).contains(&m.offset) {
                    return Err(bad_mod("offset0"));
                }
                e.w0 |= m.offset as u32 | (m.offset1 as u32) << 8;
            } else {
                if !(0..=65535).contains(&m.offset) || m.offset1 != 0 {
                    return Err(bad_mod("offset"));
                }
                e.w0 |= m.offset as u32;
            }
            e.w0 |= (m.gds as u32) << 16 | (acc_data as u32) << 25;
        }
        (Format::Mubuf | Format::Mtbuf, _) => {
            if !(0..=4095).contains(&m.offset) {
                return Err(bad_mod("offset"));
            }
            e.w0 |= m.offset as u32
                | (m.offen as u32) << 12
                | (m.idxen as u32) << 13
                | (m.glc as u32) << 14;
            if format == Format::Mubuf {
                e.w0 |= (m.lds as u32) << 16 | (m.slc as u32) << 17;
                if m.sc1 {
                    if !gfx940 {
                        return Err(bad_mod("sc1"));
                    }
                    e.w0 |= 1 << 15;
                }
            } else {
                if m.dfmt > 15 || m.nfmt > 7 || m.lds || m.sc1 {
                    return Err(bad_mod("dfmt/nfmt"));
                }
                e.w0 |= (m.dfmt as u32) << 19 | (m.nfmt as u32) << 23;
                e.w1 |= (m.slc as u32) << 22;
            }
            if target.has_agprs() {
                if m.tfe {
                    return Err(bad_mod("tfe"));
                }
                e.w1 |= (acc_data as u32) << 23;
            } else {
                e.w1 |= (m.tfe as u32) << 23;
            }
        }
        (Format::Flat | Format::Global | Format::Scratch, _) => {
            let ok = if format == Format::Flat {
                (0..=4095).contains(&m.offset)
            } else {
                (-4096..=4095).contains(&m.offset)
            };
            if !ok {
                return Err(bad_mod("offset"));
            }
            e.w0 |= (m.offset as u32) & 0x1fff | (m.glc as u32) << 16 | (m.slc as u32) << 17;
            if m.sc1 {
                if !gfx940 {
                    return Err(bad_mod("sc1"));
                }
                e.w0 |= 1 << 25;
            }
            e.w1 |= (acc_data as u32) << 23;
            if format == Format::Flat {
                // FLAT has no SADDR: the field must be zero... LLVM encodes it as 0.
            }
        }
        _ => {}
    }
    match inst.encoding {
        Encoding::Dpp => {
            let d = &m.dpp;
            if d.ctrl > 0x1ff || d.row_mask > 15 || d.bank_mask > 15 || m.neg > 3 || m.abs > 3 {
                return Err(bad_mod("dpp"));
            }
            e.w0 = (e.w0 & !0x1ff) | 250;
            e.w1 |= (d.ctrl as u32) << 8
                | (d.bound_ctrl as u32) << 19
                | (m.neg as u32 & 1) << 20
                | (m.abs as u32 & 1) << 21
                | (m.neg as u32 >> 1 & 1) << 22
                | (m.abs as u32 >> 1 & 1) << 23
                | (d.bank_mask as u32) << 24
                | (d.row_mask as u32) << 28;
        }
        Encoding::Sdwa => {
            let s = &m.sdwa;
            if s.dst_sel > 6
                || s.src0_sel > 6
                || s.src1_sel > 6
                || s.dst_unused > 2
                || m.neg > 3
                || m.abs > 3
            {
                return Err(bad_mod("sdwa"));
            }
            e.w0 = (e.w0 & !0x1ff) | 249;
            if format != Format::Vopc {
                e.w1 |= (s.dst_sel as u32) << 8
                    | (s.dst_unused as u32) << 11
                    | (m.clamp as u32) << 13
                    | (m.omod as u32) << 14;
            }
            e.w1 |= (s.src0_sel as u32) << 16
                | (s.sext as u32 & 1) << 19
                | (m.neg as u32 & 1) << 20
                | (m.abs as u32 & 1) << 21
                | (s.src1_sel as u32) << 24
                | (s.sext as u32 >> 1 & 1) << 27
                | (m.neg as u32 >> 1 & 1) << 28
                | (m.abs as u32 >> 1 & 1) << 29;
        }
        _ => {}
    }

    let mut out = SmallVec::new();
    out.push(e.w0);
    if two_words {
        out.push(e.w1);
    }
    if let Some(l) = e.literal {
        out.push(l);
    }
    Ok(out)
}

/// Hardware rules LLVM also enforces: register tuple alignment (SGPR pairs even, larger SGPR
/// tuples at multiples of 4; on gfx90a/gfx942 VGPR/AGPR tuples even) and the gfx9 constant-bus
/// limit (one distinct SGPR, special register or literal per VALU instruction).
fn check_registers(inst: &Inst, infos: &[OperandInfo], target: Target) -> Result<(), EncodeError> {
    let name = inst.info().name;
    let mut bus: SmallVec<[u64; 4]> = SmallVec::new();
    let valu = matches!(
        inst.info().format,
        Format::Vop1 | Format::Vop2 | Format::Vopc | Format::Vop3 | Format::Vop3p
    );
    for (index, (o, oi)) in inst.operands.iter().zip(infos).enumerate() {
        let bad = |why: &'static str| EncodeError::BadOperand {
            op: name,
            index,
            operand: *o,
            kind: oi.kind,
            dwords: oi.dwords,
            why,
        };
        match *o {
            Operand::Sgpr { first, count } | Operand::Ttmp { first, count }
                if ((count == 2 && first % 2 != 0) || (count >= 4 && first % 4 != 0)) =>
            {
                return Err(bad(": misaligned scalar register tuple"));
            }
            Operand::Vgpr { first, count } | Operand::Agpr { first, count }
                if count >= 2 && first % 2 != 0 && target.has_agprs() =>
            {
                return Err(bad(
                    ": gfx90a/gfx942 vector register tuples must be even-aligned",
                ));
            }
            _ => {}
        }
        if valu {
            let scalar_key = match (*o, oi.kind) {
                (_, Kind::FixedVcc) if oi.access.reads() => Some(106 | 2 << 16),
                (Operand::Literal(v), Kind::Lit32) => Some(1u64 << 32 | v as u64),
                (_, Kind::FixedVcc) => None,
                (Operand::Literal(v), Kind::VSrc | Kind::AvSrc) => Some(1u64 << 32 | v as u64),
                (
                    Operand::Sgpr { .. } | Operand::Ttmp { .. } | Operand::Special(_),
                    Kind::VSrc | Kind::AvSrc | Kind::SSrc,
                ) => o
                    .scalar_code()
                    .map(|c| u64::from(c) | u64::from(o.reg_count()) << 16),
                (_, Kind::SReg) if matches!(oi.slot, Slot::Src2) => o
                    .scalar_code()
                    .map(|c| u64::from(c) | u64::from(o.reg_count()) << 16),
                _ => None,
            };
            if let Some(k) = scalar_key {
                if !bus.contains(&k) {
                    bus.push(k);
                }
            }
        }
    }
    if valu && name.starts_with("v_div_fmas") && !bus.contains(&(106 | 2 << 16)) {
        bus.push(106 | 2 << 16); // reads VCC implicitly
    }
    // MFMA: the accumulator input either is the result registers or does not touch them.
    if inst.info().is_mfma() {
        let span = |o: &Operand| match *o {
            Operand::Vgpr { first, count } => Some((0, first, count)),
            Operand::Agpr { first, count } => Some((1, first, count)),
            _ => None,
        };
        let dst = inst.operands.first().and_then(span);
        let src2 = infos
            .iter()
            .position(|o| o.slot == Slot::Src2)
            .and_then(|i| span(&inst.operands[i]));
        if let (Some(d), Some(c)) = (dst, src2) {
            let overlap = d.0 == c.0 && d.1 < c.1 + c.2 as u16 && c.1 < d.1 + d.2 as u16;
            if overlap && d != c {
                return Err(EncodeError::BadOperand {
                    op: name,
                    index: 0,
                    operand: inst.operands[0],
                    kind: Kind::AvReg,
                    dwords: d.2,
                    why: ": MFMA srcC must equal the destination or not overlap it",
                });
            }
        }
    }
    if bus.len() > 1 {
        return Err(EncodeError::BadOperand {
            op: name,
            index: 0,
            operand: inst.operands.first().copied().unwrap_or(Operand::Off),
            kind: Kind::VSrc,
            dwords: 1,
            why: ": more than one scalar value (constant bus limit)",
        });
    }
    Ok(())
}

/// Rejects source/output modifiers the form does not have (per source for abs/neg).
fn check_modifier_flags(inst: &Inst, format: Format) -> Result<(), EncodeError> {
    use super::opcodes::flags::*;
    let m = &inst.mods;
    let f = inst.info().flags;
    let shift = match (format, inst.encoding) {
        (_, Encoding::E64 | Encoding::Dpp | Encoding::Sdwa) => E64_SHIFT,
        (Format::Vop3 | Format::Vop3p, _) => 0,
        _ => return Ok(()),
    };
    if inst.info().is_mfma() {
        return Ok(());
    }
    let f = f >> shift;
    let bad = |what| EncodeError::BadModifier {
        op: inst.info().name,
        what,
    };
    if u32::from(m.abs) & !(f & ABS) != 0 {
        return Err(bad("abs"));
    }
    if u32::from(m.neg) & !((f & NEG) >> 3) != 0 {
        return Err(bad("neg"));
    }
    if m.clamp && f & CLAMP == 0 {
        return Err(bad("clamp"));
    }
    if m.omod != 0 && f & OMOD == 0 {
        return Err(bad("omod"));
    }
    if m.op_sel != 0
        && (f & OP_SEL == 0 || inst.encoding == Encoding::Dpp || inst.encoding == Encoding::Sdwa)
    {
        return Err(bad("op_sel"));
    }
    if format == Format::Vop3p && shift == 0 && m.neg_hi != 0 && f & NEG_HI == 0 {
        return Err(bad("neg_hi"));
    }
    Ok(())
}

fn set_literal(e: &mut Enc, v: u32, op: &'static str) -> Result<(), EncodeError> {
    match e.literal {
        Some(old) if old != v => Err(EncodeError::TwoLiterals { op }),
        _ => {
            e.literal = Some(v);
            Ok(())
        }
    }
}

/// The width a VGPR operand must have, given the modifiers that change it.
fn vreg_width(format: Format, oi: &OperandInfo, inst: &Inst) -> u8 {
    let m = &inst.mods;
    let base = oi.dwords.max(1);
    match (format, oi.slot) {
        (Format::Mubuf | Format::Mtbuf, Slot::Vaddr) => {
            if m.offen && m.idxen {
                2
            } else {
                1
            }
        }
        (Format::Mubuf | Format::Mtbuf, Slot::Vdata) if m.tfe => base + 1,
        (Format::Global, Slot::Addr) => {
            let saddr_off = inst
                .operand_infos()
                .iter()
                .position(|o| o.slot == Slot::Saddr)
                .map(|i| inst.operands[i] == Operand::Off)
                .unwrap_or(true);
            if saddr_off {
                2
            } else {
                1
            }
        }
        _ => base,
    }
}

pub(crate) fn is_two_offset(name: &str) -> bool {
    name.starts_with("ds_read2") || name.starts_with("ds_write2") || name.starts_with("ds_wrxchg2")
}

/// The scalar operand code of a register-like operand of `dwords` width.
fn scalar_reg_code(o: &Operand, dwords: u8) -> Option<u16> {
    match *o {
        Operand::Sgpr { first, count } if count == dwords && first as u32 + count as u32 <= 102 => {
            Some(first)
        }
        Operand::Ttmp { first, count } if count == dwords && first as u32 + count as u32 <= 16 => {
            Some(108 + first)
        }
        Operand::Special(s) => {
            let (code, w) = s.code();
            // 32-bit specials (m0, scc, src_*) are fine in any width LLVM accepts them at;
            // the pairs must match.
            if w == 2 && dwords != 2 || (w == 1 && dwords == 2 && !matches!(code, 235..=254)) {
                return None;
            }
            Some(code)
        }
        Operand::InlineInt(_) | Operand::InlineFloat(_) => o.scalar_code(),
        _ => None,
    }
}

/// Puts `value` into the field of `slot`.
fn place(
    e: &mut Enc,
    format: Format,
    encoding: Encoding,
    slot: Slot,
    value: u32,
    vop3: bool,
) -> Result<(), &'static str> {
    let vop3 = vop3 || format == Format::Vop3p;
    match (format, slot) {
        (_, Slot::Dst) if vop3 => e.w0 |= value & 0xff,
        (_, Slot::Src0) if vop3 => e.w1 |= value & 0x1ff,
        (_, Slot::Src1) if vop3 => e.w1 |= (value & 0x1ff) << 9,
        (_, Slot::Src2) if vop3 => e.w1 |= (value & 0x1ff) << 18,
        (_, Slot::Sdst) => e.w0 |= (value & 0x7f) << 8,
        (Format::Sop2 | Format::Sop1 | Format::Sopk, Slot::Dst) => {
            if value > 127 {
                return Err(": not a scalar destination");
            }
            e.w0 |= value << 16
        }
        (Format::Sop2 | Format::Sop1 | Format::Sopc, Slot::Src0) => {
            if value > 255 {
                return Err(": not a scalar source");
            }
            e.w0 |= value
        }
        (Format::Sop2 | Format::Sopc, Slot::Src1) => {
            if value > 255 {
                return Err(": not a scalar source");
            }
            e.w0 |= value << 8
        }
        (Format::Sopk | Format::Sopp, Slot::Simm16) => e.w0 |= value & 0xffff,
        (Format::Vop1 | Format::Vop2, Slot::Dst) => e.w0 |= (value & 0xff) << 17,
        (Format::Vop1 | Format::Vop2 | Format::Vopc, Slot::Src0) => match encoding {
            Encoding::Dpp | Encoding::Sdwa => {
                if value >= 256 {
                    e.w1 |= value - 256;
                } else if encoding == Encoding::Sdwa {
                    e.w1 |= value | 1 << 23; // S0: src0 is scalar
                } else {
                    return Err(": DPP src0 must be a VGPR");
                }
            }
            _ => e.w0 |= value & 0x1ff,
        },
        (Format::Vop2 | Format::Vopc, Slot::Src1) => e.w0 |= (value & 0xff) << 9,
        (Format::Smem, Slot::Sdata) => {
            if value > 127 {
                return Err(": SMEM data field is 7 bits");
            }
            e.w0 |= value << 6
        }
        (Format::Smem, Slot::Sbase) => {
            if value & 1 != 0 || value > 127 {
                return Err(": SMEM base must be an even SGPR");
            }
            e.w0 |= value >> 1
        }
        (Format::Ds, Slot::Addr) => e.w1 |= value & 0xff,
        (Format::Ds, Slot::Data0) => e.w1 |= (value & 0xff) << 8,
        (Format::Ds, Slot::Data1) => e.w1 |= (value & 0xff) << 16,
        (Format::Ds, Slot::Dst) => e.w1 |= (value & 0xff) << 24,
        (Format::Mubuf | Format::Mtbuf, Slot::Vaddr) => e.w1 |= value & 0xff,
        (Format::Mubuf | Format::Mtbuf, Slot::Vdata) => e.w1 |= (value & 0xff) << 8,
        (Format::Mubuf | Format::Mtbuf, Slot::Srsrc) => {
            if value & 3 != 0 {
                return Err(": buffer resource must start at a multiple of 4");
            }
            e.w1 |= (value >> 2) << 16
        }
        (Format::Mubuf | Format::Mtbuf, Slot::Soffset) => {
            if value > 255 {
                return Err(": bad soffset");
            }
            e.w1 |= value << 24
        }
        (Format::Flat | Format::Global | Format::Scratch, Slot::Addr) => e.w1 |= value & 0xff,
        (Format::Flat | Format::Global | Format::Scratch, Slot::Data0) => {
            e.w1 |= (value & 0xff) << 8
        }
        (Format::Flat | Format::Global | Format::Scratch, Slot::Saddr) => {
            e.w1 |= (value & 0x7f) << 16
        }
        (Format::Flat | Format::Global | Format::Scratch, Slot::Dst) => {
            e.w1 |= (value & 0xff) << 24
        }
        _ => return Err(": no such field in this format"),
    }
    Ok(())
}

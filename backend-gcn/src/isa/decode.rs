//! Decoder: machine dwords → [`Inst`]. Takes the words at an instruction boundary and the
//! target; gives the instruction and how many dwords it used (including a literal or the
//! DPP/SDWA control dword). Never panics: words that are not a known instruction of the target,
//! or that are cut short, give a [`DecodeError`].

use smallvec::SmallVec;

use super::opcodes::{decode_maps, Format, Kind, OperandInfo, Slot};
use super::operand::{Operand, SpecialReg};
use super::{operand_infos, Dpp, Encoding, Inst, Modifiers, Sdwa};
use crate::Target;

/// Why a word sequence is not an instruction.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// No words at all.
    #[error("no instruction words")]
    Empty,
    /// The instruction needs more dwords than given.
    #[error("instruction {word:#010x} needs {needed} dwords, only {available} left")]
    Truncated {
        /// First dword.
        word: u32,
        /// Dwords the instruction needs.
        needed: usize,
        /// Dwords available.
        available: usize,
    },
    /// The opcode field names no instruction of this format on this target.
    #[error("unknown {format:?} opcode {opcode:#x} on {target} (word {word:#010x})")]
    UnknownOpcode {
        /// The format from the encoding bits.
        format: Format,
        /// The opcode number.
        opcode: u16,
        /// The target.
        target: Target,
        /// First dword.
        word: u32,
    },
    /// The encoding bits name a format kjit does not handle (MIMG, EXP, VINTRP).
    #[error("unsupported encoding {word:#010x} ({what})")]
    Unsupported {
        /// First dword.
        word: u32,
        /// Which format.
        what: &'static str,
    },
    /// An operand field holds a value that names nothing for its operand.
    #[error("invalid operand code {code} in {op} (word {word:#010x})")]
    BadOperand {
        /// Mnemonic.
        op: &'static str,
        /// The field value.
        code: u32,
        /// First dword.
        word: u32,
    },
}

pub(crate) fn source_count(infos: &[OperandInfo]) -> u32 {
    infos
        .iter()
        .filter(|o| matches!(o.slot, Slot::Src0 | Slot::Src1 | Slot::Src2))
        .count() as u32
}

fn bits(w: u32, lo: u32, n: u32) -> u32 {
    (w >> lo) & ((1u32 << n) - 1)
}

fn sext(v: u32, n: u32) -> i32 {
    ((v << (32 - n)) as i32) >> (32 - n)
}

/// The format named by the fixed bits of a first dword.
fn format_of(w: u32) -> Result<Format, DecodeError> {
    match w >> 23 {
        0x17d => return Ok(Format::Sop1),
        0x17e => return Ok(Format::Sopc),
        0x17f => return Ok(Format::Sopp),
        0x1a7 => return Ok(Format::Vop3p),
        _ => {}
    }
    if w >> 28 == 0xb {
        return Ok(Format::Sopk);
    }
    if w >> 30 == 0b10 {
        return Ok(Format::Sop2);
    }
    if w >> 31 == 0 {
        return Ok(match w >> 25 {
            0x3f => Format::Vop1,
            0x3e => Format::Vopc,
            _ => Format::Vop2,
        });
    }
    Ok(match w >> 26 {
        0b110000 => Format::Smem,
        0b110100 => Format::Vop3,
        0b110110 => Format::Ds,
        0b110111 => match bits(w, 14, 2) {
            0 => Format::Flat,
            1 => Format::Scratch,
            2 => Format::Global,
            _ => {
                return Err(DecodeError::Unsupported {
                    word: w,
                    what: "FLAT segment 3",
                })
            }
        },
        0b111000 => Format::Mubuf,
        0b111010 => Format::Mtbuf,
        0b110101 => {
            return Err(DecodeError::Unsupported {
                word: w,
                what: "VINTRP",
            })
        }
        0b111100 => {
            return Err(DecodeError::Unsupported {
                word: w,
                what: "MIMG",
            })
        }
        _ => {
            return Err(DecodeError::Unsupported {
                word: w,
                what: "EXP or reserved",
            })
        }
    })
}

/// Decodes the instruction at the start of `words` for `target`; returns it and the number of
/// dwords it occupies.
pub fn decode(words: &[u32], target: Target) -> Result<(Inst, usize), DecodeError> {
    let w0 = *words.first().ok_or(DecodeError::Empty)?;
    let format = format_of(w0)?;
    let maps = decode_maps(target);
    let unknown = |opcode: u32| DecodeError::UnknownOpcode {
        format,
        opcode: opcode as u16,
        target,
        word: w0,
    };
    // Opcode and the form.
    let (op, encoding) = match format {
        Format::Sop2 => (bits(w0, 23, 7), Encoding::Native),
        Format::Sopk => (bits(w0, 23, 5), Encoding::Native),
        Format::Sop1 => (bits(w0, 8, 8), Encoding::Native),
        Format::Sopc => (bits(w0, 16, 7), Encoding::Native),
        Format::Sopp => (bits(w0, 16, 7), Encoding::Native),
        Format::Smem => (bits(w0, 18, 8), Encoding::Native),
        Format::Vop1 => (bits(w0, 9, 8), Encoding::Native),
        Format::Vop2 => (bits(w0, 25, 6), Encoding::Native),
        Format::Vopc => (bits(w0, 17, 8), Encoding::Native),
        Format::Vop3 => (bits(w0, 16, 10), Encoding::Native),
        Format::Vop3p => (bits(w0, 16, 7), Encoding::Native),
        Format::Ds => (bits(w0, 17, 8), Encoding::Native),
        Format::Mubuf => (bits(w0, 18, 7), Encoding::Native),
        Format::Mtbuf => (bits(w0, 15, 4), Encoding::Native),
        Format::Flat | Format::Global | Format::Scratch => (bits(w0, 18, 7), Encoding::Native),
    };
    let (opcode, mut encoding) = if format == Format::Vop3 {
        match maps.vop3(op as u16) {
            Some((o, true)) => (o, Encoding::E64),
            Some((o, false)) => (o, encoding),
            None => return Err(unknown(op)),
        }
    } else {
        (
            maps.native(format, op as u16).ok_or_else(|| unknown(op))?,
            encoding,
        )
    };

    // Base length; VOP1/2/C src0 may select DPP (250), SDWA (249) or a literal (255).
    let mut len = match format {
        Format::Sop1 | Format::Sop2 | Format::Sopk | Format::Sopc | Format::Sopp => 1,
        Format::Vop1 | Format::Vop2 | Format::Vopc => 1,
        _ => 2,
    };
    if matches!(format, Format::Vop1 | Format::Vop2 | Format::Vopc) {
        match bits(w0, 0, 9) {
            250 => {
                encoding = Encoding::Dpp;
                len = 2;
            }
            249 => {
                encoding = Encoding::Sdwa;
                len = 2;
            }
            _ => {}
        }
    }
    let need = |n: usize| -> Result<(), DecodeError> {
        if words.len() < n {
            Err(DecodeError::Truncated {
                word: w0,
                needed: n,
                available: words.len(),
            })
        } else {
            Ok(())
        }
    };
    need(len)?;
    let w1 = if len > 1 { words[1] } else { 0 };
    // FLAT/GLOBAL atomics return the old value when GLC (gfx940: SC0) is set.
    let glc_bit = matches!(format, Format::Flat | Format::Global) && bits(w0, 16, 1) != 0;
    let infos = operand_infos(opcode, encoding, glc_bit);
    let info = opcode.info();

    // A literal follows when any source field holds 255 (or the form has a mandatory K).
    let mut literal_at = None;
    let literal_possible = matches!(
        format,
        Format::Sop1 | Format::Sop2 | Format::Sopc | Format::Vop1 | Format::Vop2 | Format::Vopc
    ) && encoding == Encoding::Native;
    let mut wants_literal = false;
    for oi in infos {
        if oi.kind == Kind::Lit32 {
            wants_literal = true;
        } else if literal_possible
            && matches!(oi.kind, Kind::VSrc | Kind::SSrc)
            && raw_field(format, encoding, oi.slot, w0, w1) == 255
        {
            wants_literal = true;
        }
    }
    if wants_literal {
        literal_at = Some(len);
        len += 1;
        need(len)?;
    }
    let literal = literal_at.map(|i| words[i]).unwrap_or(0);

    let mut mods = Modifiers::default_for(opcode);
    // Format-specific modifier fields.
    let gfx940 = target.is_gfx940_family();
    let mut acc_data = false; // memory data/dst are AGPRs
    let mut acc_cd = false; // MFMA dst/srcC are AGPRs
    let mut acc_ab = [false; 2]; // MFMA srcA/srcB are AGPRs
    match (format, encoding) {
        (Format::Vop3, _) | (_, Encoding::E64) => {
            let vop3b = infos.iter().any(|o| o.slot == Slot::Sdst);
            if !vop3b {
                mods.abs = bits(w0, 8, 3) as u8;
                mods.op_sel = bits(w0, 11, 4) as u8;
            }
            mods.clamp = bits(w0, 15, 1) != 0;
            mods.omod = bits(w1, 27, 2) as u8;
            mods.neg = bits(w1, 29, 3) as u8;
        }
        (Format::Vop3p, _) => {
            if info.is_mfma() {
                mods.cbsz = bits(w0, 8, 3) as u8;
                mods.abid = bits(w0, 11, 4) as u8;
                acc_cd = bits(w0, 15, 1) != 0;
                acc_ab = [bits(w1, 27, 1) != 0, bits(w1, 28, 1) != 0];
                mods.blgp = bits(w1, 29, 3) as u8;
            } else {
                if info.is_mix() {
                    mods.abs = bits(w0, 8, 3) as u8;
                } else {
                    mods.neg_hi = bits(w0, 8, 3) as u8;
                }
                mods.op_sel = bits(w0, 11, 3) as u8;
                // bits of sources the instruction does not have keep LLVM's default
                let used = (1u8 << source_count(infos)) - 1;
                let raw = (bits(w0, 14, 1) << 2 | bits(w1, 27, 2)) as u8;
                mods.op_sel_hi = (raw & used) | (mods.op_sel_hi & !used);
                mods.clamp = bits(w0, 15, 1) != 0;
                mods.neg = bits(w1, 29, 3) as u8;
            }
        }
        (Format::Smem, _) => {
            mods.glc = bits(w0, 16, 1) != 0;
        }
        (Format::Ds, _) => {
            if super::encode::is_two_offset(info.name) {
                mods.offset = bits(w0, 0, 8) as i32;
                mods.offset1 = bits(w0, 8, 8) as u8;
            } else {
                mods.offset = bits(w0, 0, 16) as i32;
            }
            mods.gds = bits(w0, 16, 1) != 0;
            acc_data = bits(w0, 25, 1) != 0;
        }
        (Format::Mubuf, _) | (Format::Mtbuf, _) => {
            mods.offset = bits(w0, 0, 12) as i32;
            mods.offen = bits(w0, 12, 1) != 0;
            mods.idxen = bits(w0, 13, 1) != 0;
            mods.glc = bits(w0, 14, 1) != 0;
            if format == Format::Mubuf {
                mods.lds = bits(w0, 16, 1) != 0;
                mods.slc = bits(w0, 17, 1) != 0;
                if gfx940 {
                    mods.sc1 = bits(w0, 15, 1) != 0;
                }
            } else {
                mods.dfmt = bits(w0, 19, 4) as u8;
                mods.nfmt = bits(w0, 23, 3) as u8;
                mods.slc = bits(w1, 22, 1) != 0;
            }
            if target.has_agprs() {
                acc_data = bits(w1, 23, 1) != 0;
            } else {
                mods.tfe = bits(w1, 23, 1) != 0;
            }
        }
        (Format::Flat | Format::Global | Format::Scratch, _) => {
            let off = bits(w0, 0, 13);
            mods.offset = if format == Format::Flat {
                bits(w0, 0, 12) as i32
            } else {
                sext(off, 13)
            };
            mods.glc = bits(w0, 16, 1) != 0;
            mods.slc = bits(w0, 17, 1) != 0;
            if gfx940 {
                mods.sc1 = bits(w0, 25, 1) != 0;
            }
            if target.has_agprs() {
                acc_data = bits(w1, 23, 1) != 0;
            }
        }
        _ => {}
    }
    if encoding == Encoding::Dpp {
        mods.dpp = Dpp {
            ctrl: bits(w1, 8, 9) as u16,
            bound_ctrl: bits(w1, 19, 1) != 0,
            row_mask: bits(w1, 28, 4) as u8,
            bank_mask: bits(w1, 24, 4) as u8,
        };
        mods.neg = (bits(w1, 20, 1) | bits(w1, 22, 1) << 1) as u8;
        mods.abs = (bits(w1, 21, 1) | bits(w1, 23, 1) << 1) as u8;
    }
    if encoding == Encoding::Sdwa {
        mods.sdwa = Sdwa {
            dst_sel: bits(w1, 8, 3) as u8,
            dst_unused: bits(w1, 11, 2) as u8,
            src0_sel: bits(w1, 16, 3) as u8,
            src1_sel: bits(w1, 24, 3) as u8,
            sext: (bits(w1, 19, 1) | bits(w1, 27, 1) << 1) as u8,
        };
        if format != Format::Vopc {
            mods.clamp = bits(w1, 13, 1) != 0;
            mods.omod = bits(w1, 14, 2) as u8;
        }
        mods.neg = (bits(w1, 20, 1) | bits(w1, 28, 1) << 1) as u8;
        mods.abs = (bits(w1, 21, 1) | bits(w1, 29, 1) << 1) as u8;
    }

    let bad = |code: u32| DecodeError::BadOperand {
        op: info.name,
        code,
        word: w0,
    };
    let mut operands: SmallVec<[Operand; 4]> = SmallVec::new();
    for oi in infos {
        let raw = raw_field(format, encoding, oi.slot, w0, w1);
        // SDWA sources may be scalar (S0/S1 bits), whatever the native operand kind says.
        if encoding == Encoding::Sdwa {
            let scalar = match oi.slot {
                Slot::Src0 => bits(w1, 23, 1) != 0,
                Slot::Src1 => bits(w1, 31, 1) != 0,
                _ => false,
            };
            if scalar {
                let o = Operand::from_scalar_code((raw & 0xff) as u16, oi.dwords.max(1))
                    .ok_or_else(|| bad(raw))?;
                operands.push(o);
                continue;
            }
        }
        // VOPC SDWA writes an SGPR pair instead of VCC when the SD bit is set.
        if encoding == Encoding::Sdwa
            && format == Format::Vopc
            && oi.kind == Kind::FixedVcc
            && bits(w1, 15, 1) != 0
        {
            let o = Operand::from_scalar_code(bits(w1, 8, 7) as u16, 2).ok_or_else(|| bad(raw))?;
            operands.push(o);
            continue;
        }
        let o = match oi.kind {
            Kind::FixedVcc => Operand::Special(SpecialReg::Vcc),
            Kind::Lit32 => Operand::Literal(literal),
            Kind::Imm16
            | Kind::Imm16Hex
            | Kind::Hwreg
            | Kind::Waitcnt
            | Kind::Sendmsg
            | Kind::GprIdx => Operand::Imm(raw as i64),
            Kind::Label => Operand::Imm(sext(raw, 16) as i64),
            _ => field_operand(
                format, encoding, oi, raw, w0, w1, literal, &mods, acc_data, acc_cd, acc_ab, gfx940,
            )
            .ok_or_else(|| bad(raw))?,
        };
        operands.push(o);
    }
    let inst = Inst {
        op: opcode,
        operands,
        encoding,
        mods,
    };
    Ok((inst, len))
}

/// The raw value of the field `slot` in an instruction of `format`.
pub(crate) fn raw_field(format: Format, encoding: Encoding, slot: Slot, w0: u32, w1: u32) -> u32 {
    let vop3 = format == Format::Vop3 || format == Format::Vop3p || encoding == Encoding::E64;
    match (format, slot) {
        (_, Slot::Dst) if vop3 => bits(w0, 0, 8),
        (_, Slot::Src0) if vop3 => bits(w1, 0, 9),
        (_, Slot::Src1) if vop3 => bits(w1, 9, 9),
        (_, Slot::Src2) if vop3 => bits(w1, 18, 9),
        (_, Slot::Sdst) => bits(w0, 8, 7),
        (Format::Sop2 | Format::Sop1 | Format::Sopk, Slot::Dst) => bits(w0, 16, 7),
        (Format::Sop2 | Format::Sop1 | Format::Sopc, Slot::Src0) => bits(w0, 0, 8),
        (Format::Sop2 | Format::Sopc, Slot::Src1) => bits(w0, 8, 8),
        (Format::Sopk | Format::Sopp, Slot::Simm16) => bits(w0, 0, 16),
        (Format::Vop1 | Format::Vop2, Slot::Dst) => bits(w0, 17, 8),
        (Format::Vop1 | Format::Vop2 | Format::Vopc, Slot::Src0) => match encoding {
            Encoding::Dpp | Encoding::Sdwa => bits(w1, 0, 8) + 256,
            _ => bits(w0, 0, 9),
        },
        (Format::Vop2 | Format::Vopc, Slot::Src1) => bits(w0, 9, 8) + 256,
        (Format::Smem, Slot::Sdata) => bits(w0, 6, 7),
        (Format::Smem, Slot::Sbase) => bits(w0, 0, 6) << 1,
        (Format::Smem, Slot::Soffset) => {
            if bits(w0, 17, 1) != 0 {
                bits(w1, 0, 21)
            } else if bits(w0, 14, 1) != 0 {
                bits(w1, 25, 7)
            } else {
                bits(w1, 0, 7)
            }
        }
        (Format::Ds, Slot::Addr) => bits(w1, 0, 8),
        (Format::Ds, Slot::Data0) => bits(w1, 8, 8),
        (Format::Ds, Slot::Data1) => bits(w1, 16, 8),
        (Format::Ds, Slot::Dst) => bits(w1, 24, 8),
        (Format::Mubuf | Format::Mtbuf, Slot::Vaddr) => bits(w1, 0, 8),
        (Format::Mubuf | Format::Mtbuf, Slot::Vdata) => bits(w1, 8, 8),
        (Format::Mubuf | Format::Mtbuf, Slot::Srsrc) => bits(w1, 16, 5) << 2,
        (Format::Mubuf | Format::Mtbuf, Slot::Soffset) => bits(w1, 24, 8),
        (Format::Flat | Format::Global | Format::Scratch, Slot::Addr) => bits(w1, 0, 8),
        (Format::Flat | Format::Global | Format::Scratch, Slot::Data0) => bits(w1, 8, 8),
        (Format::Flat | Format::Global | Format::Scratch, Slot::Saddr) => bits(w1, 16, 7),
        (Format::Flat | Format::Global | Format::Scratch, Slot::Dst) => bits(w1, 24, 8),
        _ => 0,
    }
}

/// Turns a register/source field into an operand.
#[allow(clippy::too_many_arguments)]
fn field_operand(
    format: Format,
    encoding: Encoding,
    oi: &OperandInfo,
    raw: u32,
    w0: u32,
    w1: u32,
    literal: u32,
    mods: &Modifiers,
    acc_data: bool,
    acc_cd: bool,
    acc_ab: [bool; 2],
    gfx940: bool,
) -> Option<Operand> {
    let mut count = oi.dwords.max(1);
    let code = raw as u16;
    // Widths that depend on modifiers.
    match (format, oi.slot) {
        (Format::Mubuf | Format::Mtbuf, Slot::Vaddr) => {
            if !mods.offen && !mods.idxen {
                return Some(Operand::Off);
            }
            count = if mods.offen && mods.idxen { 2 } else { 1 };
        }
        (Format::Global, Slot::Saddr) | (Format::Scratch, Slot::Saddr) if code == 0x7f => {
            return Some(Operand::Off);
        }
        (Format::Global, Slot::Addr) => {
            count = if raw_field(format, encoding, Slot::Saddr, w0, w1) == 0x7f {
                2
            } else {
                1
            };
        }
        (Format::Scratch, Slot::Addr) => {
            // gfx940 says so with the SVE bit; earlier targets use VADDR exactly when SADDR is off.
            let has_vaddr = if gfx940 {
                bits(w0, 13, 1) != 0
            } else {
                raw_field(format, encoding, Slot::Saddr, w0, w1) == 0x7f
            };
            if !has_vaddr {
                return Some(Operand::Off);
            }
        }
        _ => {}
    }
    if mods.tfe && oi.slot == Slot::Vdata {
        count += 1;
    }
    let mfma_acc = match oi.slot {
        Slot::Dst | Slot::Src2 => acc_cd,
        Slot::Src0 => acc_ab[0],
        Slot::Src1 => acc_ab[1],
        _ => false,
    };
    Some(match oi.kind {
        Kind::VReg => Operand::Vgpr {
            first: code & 0xff,
            count,
        },
        Kind::AReg => Operand::Agpr {
            first: code & 0xff,
            count,
        },
        Kind::AvReg => {
            let acc = if matches!(format, Format::Vop3p) {
                mfma_acc
            } else {
                acc_data
            };
            if acc {
                Operand::Agpr {
                    first: code & 0xff,
                    count,
                }
            } else {
                Operand::Vgpr {
                    first: code & 0xff,
                    count,
                }
            }
        }
        Kind::VSrc | Kind::SSrc | Kind::ASrc | Kind::AvSrc => {
            if code >= 256 {
                let first = code - 256;
                match oi.kind {
                    Kind::ASrc => Operand::Agpr { first, count },
                    Kind::AvSrc if mfma_acc => Operand::Agpr { first, count },
                    _ => Operand::Vgpr { first, count },
                }
            } else if code == 255 {
                Operand::Literal(literal)
            } else {
                Operand::from_scalar_code(code, count)?
            }
        }
        Kind::SReg => Operand::from_scalar_code(code, count)?,
        Kind::SmemOffset => {
            if bits(w0, 17, 1) != 0 {
                Operand::Imm(sext(raw, 21) as i64)
            } else {
                Operand::from_scalar_code(code, 1)?
            }
        }
        _ => return None,
    })
}

//! Printer: [`Inst`] → LLVM assembler text, as `llvm-objdump-19 -d` / `llvm-mc-19 --disassemble`
//! print it for the target, and as `llvm-mc-19` re-assembles it.

use std::fmt::{self, Write};

use super::opcodes::{Format, Kind, OperandInfo, Slot};
use super::operand::Operand;
use super::{Encoding, Inst};
use crate::Target;

/// `Display` adapter returned by [`Inst::display`].
pub struct DisplayInst<'a> {
    pub(super) inst: &'a Inst,
    pub(super) target: Target,
}

impl fmt::Display for DisplayInst<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        print_inst(f, self.inst, self.target)
    }
}

/// The mnemonic as LLVM prints it on `target`, with its `_e32`/`_e64`/`_dpp`/`_sdwa` suffix.
pub fn mnemonic(inst: &Inst, target: Target) -> String {
    let info = inst.info();
    let base = info.name_on(target);
    let suffix = match inst.encoding {
        Encoding::Native => {
            if info.flags & super::flags::E32_SUFFIX != 0 {
                "_e32"
            } else {
                ""
            }
        }
        Encoding::E64 => "_e64",
        Encoding::Dpp => "_dpp",
        Encoding::Sdwa => "_sdwa",
    };
    format!("{base}{suffix}")
}

fn source_index(slot: Slot) -> Option<usize> {
    match slot {
        Slot::Src0 => Some(0),
        Slot::Src1 => Some(1),
        Slot::Src2 => Some(2),
        _ => None,
    }
}

/// Number of VOP sources of the form (for op_sel/neg lists).
fn source_count(infos: &[OperandInfo]) -> usize {
    infos
        .iter()
        .filter(|o| source_index(o.slot).is_some())
        .count()
}

fn bit_list(out: &mut String, name: &str, bits: u8, n: usize) {
    let _ = write!(out, " {name}:[");
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        out.push(if bits >> i & 1 != 0 { '1' } else { '0' });
    }
    out.push(']');
}

/// The text of one operand value as LLVM prints it for the operand's type: 16-bit integer
/// sources show float inline constants as their f16 bits; literals that happen to equal an
/// inline constant print as that constant; 16-bit literals print their low half.
fn operand_text(
    o: &Operand,
    info: &OperandInfo,
    src: Option<usize>,
    flags: u32,
    packed: bool,
) -> String {
    use super::flags::{INT16_0, LIT16};
    let int16 = src.is_some_and(|s| flags & (INT16_0 << s) != 0);
    let lit16 = src == Some(0) && flags & LIT16 != 0 || int16;
    match *o {
        Operand::InlineFloat(c) if int16 => format!("0x{:x}", f16_bits(c)),
        // packed (VOP3P) 64-bit operands are pairs of 32-bit values
        Operand::InlineFloat(c) => c
            .text(if info.dwords >= 2 && !packed { 64 } else { 32 })
            .to_string(),
        Operand::Literal(v) if lit16 => {
            let h = v & 0xffff;
            if (h as i16) >= -16 && (h as i16) <= 64 {
                (h as i16).to_string()
            } else if let Some(c) = (!int16).then(|| inline_f16(h as u16)).flatten() {
                c.text(32).to_string()
            } else {
                format!("0x{h:x}")
            }
        }
        Operand::Literal(v) if info.dwords < 2 => {
            if (v as i32) >= -16 && (v as i32) <= 64 {
                (v as i32).to_string()
            } else if let Some(c) = inline_f32(v) {
                c.text(32).to_string()
            } else {
                format!("0x{v:x}")
            }
        }
        _ => o.to_string(),
    }
}

fn f16_bits(c: super::InlineFloat) -> u16 {
    use super::InlineFloat::*;
    match c {
        Half => 0x3800,
        NegHalf => 0xb800,
        One => 0x3c00,
        NegOne => 0xbc00,
        Two => 0x4000,
        NegTwo => 0xc000,
        Four => 0x4400,
        NegFour => 0xc400,
        InvTwoPi => 0x3118,
    }
}

fn inline_f16(bits: u16) -> Option<super::InlineFloat> {
    super::InlineFloat::ALL
        .into_iter()
        .find(|&c| f16_bits(c) == bits)
}

fn inline_f32(bits: u32) -> Option<super::InlineFloat> {
    use super::InlineFloat;
    InlineFloat::ALL.into_iter().find(|&c| match c {
        InlineFloat::InvTwoPi => bits == 0x3e22_f983,
        _ => (c.value() as f32).to_bits() == bits,
    })
}

fn is_two_offset_ds(name: &str) -> bool {
    name.starts_with("ds_read2") || name.starts_with("ds_write2") || name.starts_with("ds_wrxchg2")
}

/// Names of the `hwreg` ids LLVM knows on gfx9.
fn hwreg_name(id: u32, target: Target) -> Option<&'static str> {
    Some(match id {
        1 => "HW_REG_MODE",
        2 => "HW_REG_STATUS",
        3 => "HW_REG_TRAPSTS",
        4 => "HW_REG_HW_ID",
        5 => "HW_REG_GPR_ALLOC",
        6 => "HW_REG_LDS_ALLOC",
        7 => "HW_REG_IB_STS",
        15 => "HW_REG_SH_MEM_BASES",
        16 => "HW_REG_TBA_LO",
        17 => "HW_REG_TBA_HI",
        18 => "HW_REG_TMA_LO",
        19 => "HW_REG_TMA_HI",
        20 if target.is_gfx940_family() => "HW_REG_XCC_ID",
        21 if target.is_gfx940_family() => "HW_REG_SQ_PERF_SNAPSHOT_DATA",
        22 if target.is_gfx940_family() => "HW_REG_SQ_PERF_SNAPSHOT_DATA1",
        23 if target.is_gfx940_family() => "HW_REG_SQ_PERF_SNAPSHOT_PC_LO",
        24 if target.is_gfx940_family() => "HW_REG_SQ_PERF_SNAPSHOT_PC_HI",
        _ => return None,
    })
}

fn hwreg_text(v: u32, target: Target) -> String {
    let id = v & 0x3f;
    let offset = (v >> 6) & 0x1f;
    let size = ((v >> 11) & 0x1f) + 1;
    let name = hwreg_name(id, target)
        .map(str::to_string)
        .unwrap_or_else(|| id.to_string());
    if offset == 0 && size == 32 {
        format!("hwreg({name})")
    } else {
        format!("hwreg({name}, {offset}, {size})")
    }
}

fn sendmsg_text(v: u32) -> String {
    let id = v & 0xf;
    let op = (v >> 4) & 0x7;
    let stream = (v >> 8) & 0x3;
    let name = match id {
        1 => Some("MSG_INTERRUPT"),
        2 => Some("MSG_GS"),
        3 => Some("MSG_GS_DONE"),
        4 => Some("MSG_SAVEWAVE"),
        5 => Some("MSG_STALL_WAVE_GEN"),
        6 => Some("MSG_HALT_WAVES"),
        7 => Some("MSG_ORDERED_PS_DONE"),
        8 => Some("MSG_EARLY_PRIM_DEALLOC"),
        9 => Some("MSG_GS_ALLOC_REQ"),
        10 => Some("MSG_GET_DOORBELL"),
        15 => Some("MSG_SYSMSG"),
        _ => None,
    };
    let gs = matches!(id, 2 | 3);
    match name {
        Some(n) if gs && v >> 10 == 0 => {
            let opn = ["GS_OP_NOP", "GS_OP_CUT", "GS_OP_EMIT", "GS_OP_EMIT_CUT"];
            if op < 4 && !(op == 0 && stream != 0) && !(id == 2 && op == 0) {
                if op == 0 {
                    format!("sendmsg({n}, {})", opn[op as usize])
                } else {
                    format!("sendmsg({n}, {}, {stream})", opn[op as usize])
                }
            } else {
                format!("sendmsg({id}, {op}, {stream})")
            }
        }
        Some(n) if id == 15 && v >> 7 == 0 && (1..=4).contains(&op) => {
            let opn = [
                "",
                "SYSMSG_OP_ECC_ERR_INTERRUPT",
                "SYSMSG_OP_REG_RD",
                "SYSMSG_OP_HOST_TRAP_ACK",
                "SYSMSG_OP_TTRACE_PC",
            ];
            format!("sendmsg({n}, {})", opn[op as usize])
        }
        Some(n) if v >> 4 == 0 => format!("sendmsg({n})"),
        _ => format!("sendmsg({id}, {op}, {stream})"),
    }
}

fn waitcnt_text(v: u32) -> String {
    let vm = (v & 0xf) | ((v >> 14) & 0x3) << 4;
    let exp = (v >> 4) & 0x7;
    let lgkm = (v >> 8) & 0xf;
    let all_max = vm == 63 && exp == 7 && lgkm == 15;
    let mut parts = Vec::new();
    if vm != 63 || all_max {
        parts.push(format!("vmcnt({vm})"));
    }
    if exp != 7 || all_max {
        parts.push(format!("expcnt({exp})"));
    }
    if lgkm != 15 || all_max {
        parts.push(format!("lgkmcnt({lgkm})"));
    }
    parts.join(" ")
}

fn gpr_idx_text(v: u32) -> String {
    let names = ["SRC0", "SRC1", "SRC2", "DST"];
    let on: Vec<&str> = (0..4)
        .filter(|i| v >> i & 1 != 0)
        .map(|i| names[i])
        .collect();
    format!("gpr_idx({})", on.join(","))
}

fn imm16_text(v: i64) -> String {
    let v = v as u16;
    if v <= 64 {
        v.to_string()
    } else {
        format!("0x{v:x}")
    }
}

fn dpp_ctrl_text(ctrl: u16) -> String {
    match ctrl {
        0x000..=0x0ff => format!(
            "quad_perm:[{},{},{},{}]",
            ctrl & 3,
            (ctrl >> 2) & 3,
            (ctrl >> 4) & 3,
            (ctrl >> 6) & 3
        ),
        0x101..=0x10f => format!("row_shl:{}", ctrl & 0xf),
        0x111..=0x11f => format!("row_shr:{}", ctrl & 0xf),
        0x121..=0x12f => format!("row_ror:{}", ctrl & 0xf),
        0x130 => "wave_shl:1".into(),
        0x134 => "wave_rol:1".into(),
        0x138 => "wave_shr:1".into(),
        0x13c => "wave_ror:1".into(),
        0x140 => "row_mirror".into(),
        0x141 => "row_half_mirror".into(),
        0x142 => "row_bcast:15".into(),
        0x143 => "row_bcast:31".into(),
        0x150..=0x15f => format!("row_newbcast:{}", ctrl & 0xf),
        _ => format!("/* invalid dpp_ctrl {ctrl:#x} */"),
    }
}

const SDWA_SEL: [&str; 8] = [
    "BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD", "7",
];
const SDWA_UNUSED: [&str; 4] = ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE", "3"];

const DFMT: [&str; 16] = [
    "BUF_DATA_FORMAT_INVALID",
    "BUF_DATA_FORMAT_8",
    "BUF_DATA_FORMAT_16",
    "BUF_DATA_FORMAT_8_8",
    "BUF_DATA_FORMAT_32",
    "BUF_DATA_FORMAT_16_16",
    "BUF_DATA_FORMAT_10_11_11",
    "BUF_DATA_FORMAT_11_11_10",
    "BUF_DATA_FORMAT_10_10_10_2",
    "BUF_DATA_FORMAT_2_10_10_10",
    "BUF_DATA_FORMAT_8_8_8_8",
    "BUF_DATA_FORMAT_32_32",
    "BUF_DATA_FORMAT_16_16_16_16",
    "BUF_DATA_FORMAT_32_32_32",
    "BUF_DATA_FORMAT_32_32_32_32",
    "BUF_DATA_FORMAT_RESERVED_15",
];
const NFMT: [&str; 8] = [
    "BUF_NUM_FORMAT_UNORM",
    "BUF_NUM_FORMAT_SNORM",
    "BUF_NUM_FORMAT_USCALED",
    "BUF_NUM_FORMAT_SSCALED",
    "BUF_NUM_FORMAT_UINT",
    "BUF_NUM_FORMAT_SINT",
    "BUF_NUM_FORMAT_RESERVED_6",
    "BUF_NUM_FORMAT_FLOAT",
];

fn print_inst(f: &mut fmt::Formatter<'_>, inst: &Inst, target: Target) -> fmt::Result {
    let info = inst.info();
    let infos = inst.operand_infos();
    let m = &inst.mods;
    let gfx940 = target.is_gfx940_family();
    let vop3_like = info.format == Format::Vop3 || inst.encoding == Encoding::E64;
    let mut out = mnemonic(inst, target);
    let mut first = true;
    for (i, o) in inst.operands.iter().enumerate() {
        let Some(oi) = infos.get(i) else { break };
        // A MUBUF load with `lds` writes LDS, not VDATA: LLVM prints no data register (the
        // field is still encoded and decoded, so bytes round-trip).
        if m.lds && info.format == Format::Mubuf && oi.slot == Slot::Vdata {
            continue;
        }
        out.push_str(if first { " " } else { ", " });
        first = false;
        let text = match oi.kind {
            Kind::Waitcnt => waitcnt_text(imm(o) as u32),
            Kind::Hwreg => hwreg_text(imm(o) as u32, target),
            Kind::Sendmsg => sendmsg_text(imm(o) as u32),
            Kind::GprIdx => gpr_idx_text(imm(o) as u32),
            Kind::Imm16 if info.name == "s_endpgm" => {
                // s_endpgm's immediate is optional, printed in decimal only when set
                if imm(o) == 0 {
                    out.pop();
                    continue;
                }
                (imm(o) as u16).to_string()
            }
            Kind::Imm16 => imm16_text(imm(o)),
            Kind::Imm16Hex => format!("0x{:x}", imm(o) as u16),
            Kind::Label => (imm(o) as u16).to_string(),
            Kind::SmemOffset => match *o {
                Operand::Imm(v) => format!("0x{:x}", v as u32 & 0x1f_ffff),
                _ => o.to_string(),
            },
            Kind::Lit32 => match *o {
                Operand::Literal(v) if info.format == Format::Sopk => imm_or_hex(v),
                Operand::Literal(v) => format!("0x{v:x}"),
                _ => o.to_string(),
            },
            _ => {
                let src = source_index(oi.slot);
                let mut t = operand_text(o, oi, src, info.flags, info.format == Format::Vop3p);
                if let Some(si) = src {
                    let neg_abs = vop3_like
                        || info.is_mix()
                        || matches!(inst.encoding, Encoding::Dpp | Encoding::Sdwa);
                    if neg_abs {
                        let abs = m.abs >> si & 1 != 0;
                        if abs {
                            t = format!("|{t}|");
                        }
                        if m.neg >> si & 1 != 0 {
                            // LLVM writes neg(...) around a constant, where '-' would read as
                            // part of the number.
                            let constant = matches!(
                                o,
                                Operand::InlineInt(_)
                                    | Operand::InlineFloat(_)
                                    | Operand::Literal(_)
                            );
                            t = if constant && !abs {
                                format!("neg({t})")
                            } else {
                                format!("-{t}")
                            };
                        }
                    }
                    if inst.encoding == Encoding::Sdwa && m.sdwa.sext >> si & 1 != 0 {
                        t = format!("sext({t})");
                    }
                }
                t
            }
        };
        out.push_str(&text);
    }

    // Modifiers after the operands.
    let nsrc = source_count(infos);
    match (info.format, inst.encoding) {
        (_, Encoding::Dpp) => {
            let _ = write!(
                out,
                " {} row_mask:0x{:x} bank_mask:0x{:x}",
                dpp_ctrl_text(m.dpp.ctrl),
                m.dpp.row_mask,
                m.dpp.bank_mask
            );
            if m.dpp.bound_ctrl {
                out.push_str(" bound_ctrl:1");
            }
        }
        (fmt_, Encoding::Sdwa) => {
            if m.clamp {
                out.push_str(" clamp");
            }
            omod_text(&mut out, m.omod);
            if fmt_ != Format::Vopc && info.flags & super::flags::SDWA_NO_DST_SEL == 0 {
                let _ = write!(
                    out,
                    " dst_sel:{} dst_unused:{}",
                    SDWA_SEL[m.sdwa.dst_sel as usize & 7],
                    SDWA_UNUSED[m.sdwa.dst_unused as usize & 3]
                );
            }
            let _ = write!(out, " src0_sel:{}", SDWA_SEL[m.sdwa.src0_sel as usize & 7]);
            if nsrc > 1 {
                let _ = write!(out, " src1_sel:{}", SDWA_SEL[m.sdwa.src1_sel as usize & 7]);
            }
        }
        (Format::Vop3p, _) => {
            if info.is_mfma() {
                if m.cbsz != 0 {
                    let _ = write!(out, " cbsz:{}", m.cbsz);
                }
                if m.abid != 0 {
                    let _ = write!(out, " abid:{}", m.abid);
                }
                if m.blgp != 0 {
                    let _ = write!(out, " blgp:{}", m.blgp);
                }
            } else {
                let n = nsrc;
                let mask = (1u8 << n) - 1;
                if m.op_sel & mask != 0 {
                    bit_list(&mut out, "op_sel", m.op_sel, n);
                }
                let default_hi = super::Modifiers::default_for(inst.op).op_sel_hi & mask;
                if m.op_sel_hi & mask != default_hi {
                    bit_list(&mut out, "op_sel_hi", m.op_sel_hi, n);
                }
                if m.neg & mask != 0 && !info.is_mix() {
                    bit_list(&mut out, "neg_lo", m.neg, n);
                }
                if m.neg_hi & mask != 0 {
                    bit_list(&mut out, "neg_hi", m.neg_hi, n);
                }
                if m.clamp {
                    out.push_str(" clamp");
                }
            }
        }
        _ if vop3_like => {
            if m.clamp {
                out.push_str(" clamp");
            }
            omod_text(&mut out, m.omod);
            if m.op_sel != 0 && is_fp8_sel(info.name) {
                // the fp8/bf8 conversions select the destination byte with op_sel[2:3]
                bit_list(&mut out, "op_sel", m.op_sel, 4);
            } else if m.op_sel != 0 {
                let n = nsrc + 1;
                // bit 3 is the destination; it is printed last
                let bits = (m.op_sel & ((1 << nsrc) - 1)) | ((m.op_sel >> 3) & 1) << nsrc;
                bit_list(&mut out, "op_sel", bits, n);
            }
        }
        (Format::Smem, _) => {
            if m.offset != 0 {
                let _ = write!(out, " offset:0x{:x}", m.offset as u32 & 0x1f_ffff);
            }
            if m.glc {
                out.push_str(" glc");
            }
        }
        (Format::Ds, _) => {
            if is_two_offset_ds(info.name) {
                if m.offset != 0 {
                    let _ = write!(out, " offset0:{}", m.offset);
                }
                if m.offset1 != 0 {
                    let _ = write!(out, " offset1:{}", m.offset1);
                }
            } else if info.name == "ds_swizzle_b32" {
                if m.offset != 0 {
                    let _ = write!(out, " offset:{}", swizzle_text(m.offset as u16));
                }
            } else if m.offset != 0 {
                let _ = write!(out, " offset:{}", m.offset);
            }
            if m.gds {
                out.push_str(" gds");
            }
        }
        (Format::Mubuf | Format::Mtbuf, _) => {
            if info.format == Format::Mtbuf && (m.dfmt != 1 || m.nfmt != 0) {
                if m.dfmt != 1 && m.nfmt != 0 {
                    let _ = write!(
                        out,
                        " format:[{},{}]",
                        DFMT[m.dfmt as usize & 15],
                        NFMT[m.nfmt as usize & 7]
                    );
                } else if m.dfmt != 1 {
                    let _ = write!(out, " format:[{}]", DFMT[m.dfmt as usize & 15]);
                } else {
                    let _ = write!(out, " format:[{}]", NFMT[m.nfmt as usize & 7]);
                }
            }
            if m.idxen {
                out.push_str(" idxen");
            }
            if m.offen {
                out.push_str(" offen");
            }
            if m.offset != 0 {
                let _ = write!(out, " offset:{}", m.offset);
            }
            cache_bits(&mut out, m, gfx940);
            if m.lds {
                out.push_str(" lds");
            }
            if m.tfe {
                out.push_str(" tfe");
            }
        }
        (Format::Flat | Format::Global | Format::Scratch, _) => {
            if m.offset != 0 {
                let _ = write!(out, " offset:{}", m.offset);
            }
            cache_bits(&mut out, m, gfx940);
        }
        _ => {}
    }
    f.write_str(&out)
}

/// `ds_swizzle_b32` offsets in LLVM's symbolic form (ISA "DS_SWIZZLE": bit 15 selects the
/// quad-permute mode, otherwise and/or/xor masks of the lane id within groups of 32).
fn swizzle_text(v: u16) -> String {
    if v & 0x8000 != 0 && v & 0x7f00 != 0 {
        return v.to_string();
    }
    if v & 0x8000 != 0 {
        return format!(
            "swizzle(QUAD_PERM,{},{},{},{})",
            v & 3,
            (v >> 2) & 3,
            (v >> 4) & 3,
            (v >> 6) & 3
        );
    }
    let and = v & 0x1f;
    let or = (v >> 5) & 0x1f;
    let xor = (v >> 10) & 0x1f;
    if and == 0x1f && or == 0 && xor.count_ones() == 1 {
        return format!("swizzle(SWAP,{xor})");
    }
    if and == 0x1f && or == 0 && xor > 0 && (xor + 1).is_power_of_two() {
        return format!("swizzle(REVERSE,{})", xor + 1);
    }
    let group = 0x1f - and + 1;
    if group > 1 && group.is_power_of_two() && or < group && xor == 0 {
        return format!("swizzle(BROADCAST,{group},{or})");
    }
    let p0 = or ^ xor;
    let p1 = ((0x1f & and) | or) ^ xor;
    let mut s = String::from("swizzle(BITMASK_PERM,\"");
    for bit in (0..5).rev() {
        let (a, b) = (p0 >> bit & 1 != 0, p1 >> bit & 1 != 0);
        s.push(match (a, b) {
            (true, true) => '1',
            (false, false) => '0',
            (false, true) => 'p',
            (true, false) => 'i',
        });
    }
    s.push_str("\")");
    s
}

fn is_fp8_sel(name: &str) -> bool {
    matches!(
        name,
        "v_cvt_sr_fp8_f32" | "v_cvt_sr_bf8_f32" | "v_cvt_pk_fp8_f32" | "v_cvt_pk_bf8_f32"
    )
}

fn cache_bits(out: &mut String, m: &super::Modifiers, gfx940: bool) {
    if gfx940 {
        if m.glc {
            out.push_str(" sc0");
        }
        if m.slc {
            out.push_str(" nt");
        }
        if m.sc1 {
            out.push_str(" sc1");
        }
    } else {
        if m.glc {
            out.push_str(" glc");
        }
        if m.slc {
            out.push_str(" slc");
        }
    }
}

fn omod_text(out: &mut String, omod: u8) {
    match omod {
        1 => out.push_str(" mul:2"),
        2 => out.push_str(" mul:4"),
        3 => out.push_str(" div:2"),
        _ => {}
    }
}

fn imm_or_hex(v: u32) -> String {
    if v <= 64 {
        v.to_string()
    } else {
        format!("0x{v:x}")
    }
}

fn imm(o: &Operand) -> i64 {
    match *o {
        Operand::Imm(v) => v,
        Operand::Literal(v) => v as i64,
        Operand::InlineInt(v) => v as i64,
        _ => 0,
    }
}

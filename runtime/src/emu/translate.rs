//! From machine code to the device's executable form: every instruction, identified by the
//! instruction layer (its mnemonic and length), has its operand fields read straight from the
//! encoding words of its format (gfx9 layouts: SOP*, SMEM, VOP1/2/C/3/3P incl. DPP and SDWA words,
//! DS, MUBUF, FLAT/GLOBAL/SCRATCH) and resolved into the unit's instruction form ([`ScalarInst`],
//! [`SmemInst`], [`VmemInst`], [`DsInst`], [`ValuInst`]), together with the registers it reads
//! and writes (with the width of every operand, for the scoreboard), its statistics class and a
//! check that it names no register beyond the kernel's allocation.
//!
//! The opcode → mnemonic knowledge lives in the instruction layer (one table for encoder, decoder
//! and printer); this module only needs the mnemonic and the hardware's fixed field layout of
//! each format (Vega / CDNA3 ISA "Microcode Formats", checked against `llvm-mc-19` encodings in
//! the tests below).

use kjit_backend_gcn::Target;

use super::ds::{DsInst, DsOp};
use super::program::{Decoded, Op};
use super::scalar::{self, ScalarInst, ScalarOp};
use super::scoreboard::{OpKind, RegSet};
use super::smem::{SmemInst, SmemOp};
use super::stats::InstClass;
use super::valu::lanes::{SdwaSel, SdwaUnused};
use super::valu::{Dpp, Form, Sdwa, ValuInst, ValuOp};
use super::vmem::{Segment, VmemInst, VmemOp};
use super::wait_states::WaitRules;
use super::wave::code;

/// The encoding format of an instruction, from the fixed bits of its first word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Scalar, two sources.
    Sop2,
    /// Scalar with a 16-bit immediate.
    Sopk,
    /// Scalar, one source.
    Sop1,
    /// Scalar compare.
    Sopc,
    /// Program control.
    Sopp,
    /// Scalar memory.
    Smem,
    /// Vector, two sources (32-bit encoding).
    Vop2,
    /// Vector, one source.
    Vop1,
    /// Vector compare.
    Vopc,
    /// Vector, 64-bit encoding.
    Vop3,
    /// Packed math and matrix ops.
    Vop3p,
    /// Interpolation (graphics only).
    Vintrp,
    /// LDS/GDS.
    Ds,
    /// FLAT, GLOBAL, SCRATCH.
    Flat,
    /// Untyped buffer.
    Mubuf,
    /// Typed buffer.
    Mtbuf,
    /// Image (not supported).
    Mimg,
    /// Export (not supported).
    Exp,
}

impl Format {
    /// The format of an instruction whose first word is `w`.
    pub fn of(w: u32) -> Format {
        match w >> 23 {
            0x17d => return Format::Sop1,
            0x17e => return Format::Sopc,
            0x17f => return Format::Sopp,
            0x1a7 => return Format::Vop3p,
            _ => {}
        }
        if w >> 28 == 0xb {
            return Format::Sopk;
        }
        if w >> 30 == 0b10 {
            return Format::Sop2;
        }
        if w >> 31 == 0 {
            return match w >> 25 {
                0x3f => Format::Vop1,
                0x3e => Format::Vopc,
                _ => Format::Vop2,
            };
        }
        match w >> 26 {
            0b110000 => Format::Smem,
            0b110100 => Format::Vop3,
            0b110101 => Format::Vintrp,
            0b110110 => Format::Ds,
            0b110111 => Format::Flat,
            0b111000 => Format::Mubuf,
            0b111010 => Format::Mtbuf,
            0b111100 => Format::Mimg,
            0b110001 => Format::Exp,
            _ => Format::Exp,
        }
    }
}

/// Register allocation of the kernel, to reject instructions that name more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// VGPRs allocated.
    pub vgprs: u32,
    /// AGPRs allocated.
    pub agprs: u32,
}

fn bits(w: u32, lo: u32, n: u32) -> u32 {
    (w >> lo) & ((1u32 << n) - 1)
}

fn sext(v: u32, n: u32) -> i32 {
    ((v << (32 - n)) as i32) >> (32 - n)
}

/// Adds scalar source `c` (`n` dwords) to `set` if it names a register.
fn add_scalar(set: &mut RegSet, c: u16, n: u32) {
    if c < 128 {
        set.add_s(c as u32, n);
    } else if c == code::VCCZ {
        set.add_s(code::VCC_LO as u32, 2);
    } else if c == code::EXECZ {
        set.add_s(code::EXEC_LO as u32, 2);
    }
}

/// Adds a 9-bit vector-ALU source `c` (`n` dwords) to `set`; `agpr` if it names AGPRs.
fn add_vsrc(set: &mut RegSet, c: u16, n: u32, agpr: bool) {
    if c >= 256 {
        if agpr {
            set.add_a((c - 256) as u32, n);
        } else {
            set.add_v((c - 256) as u32, n);
        }
    } else {
        add_scalar(set, c, n);
    }
}

/// The highest register of each file named by `set`.
fn highest(bits: &[u64; 4]) -> Option<u32> {
    (0..4)
        .rev()
        .find(|&i| bits[i] != 0)
        .map(|i| i as u32 * 64 + 63 - bits[i].leading_zeros())
}

/// Widths (in dwords) of a scalar operation's destination and two sources.
fn scalar_widths(op: ScalarOp, name: &str) -> (u32, u32, u32) {
    use ScalarOp::*;
    match op {
        LshlB64 | LshrB64 | AshrI64 | BfeU64 | BfeI64 | Bitcmp0B64 | Bitcmp1B64 => (2, 2, 1),
        BfmB64 => (2, 1, 1),
        Bcnt0I32B64 | Bcnt1I32B64 | Ff0I32B64 | Ff1I32B64 | FlbitI32B64 | FlbitI32I64 => (1, 2, 0),
        Bitset0B64 | Bitset1B64 => (2, 1, 0),
        BitreplicateB64B32 => (2, 1, 0),
        GetpcB64 => (2, 0, 0),
        SetpcB64 => (0, 2, 0),
        SwappcB64 => (2, 2, 0),
        CmpEqU64 | CmpLgU64 => (0, 2, 2),
        _ if name.ends_with("_b64") || name.ends_with("_i64") || name.ends_with("_u64") => {
            (2, 2, 2)
        }
        _ => (1, 1, 1),
    }
}

/// What a decoded instruction becomes, before the common bookkeeping.
struct Parts {
    op: Op,
    reads: RegSet,
    writes: RegSet,
    issuing: Option<OpKind>,
    class: InstClass,
    vector: bool,
}

fn unsupported(why: String) -> Parts {
    Parts {
        op: Op::Unsupported(why),
        reads: RegSet::EMPTY,
        writes: RegSet::EMPTY,
        issuing: None,
        class: InstClass::Salu,
        vector: false,
    }
}

/// Resolves one identified instruction. `words` are all its dwords (including a literal).
pub fn translate(
    name: &str,
    words: &[u32],
    pc: u64,
    target: Target,
    limits: Limits,
    text: String,
) -> Decoded {
    let size = (words.len() * 4) as u8;
    let w0 = words[0];
    let w1 = words.get(1).copied().unwrap_or(0);
    let format = Format::of(w0);
    let parts = match format {
        Format::Sop2 | Format::Sopk | Format::Sop1 | Format::Sopc | Format::Sopp => {
            scalar_parts(name, format, words)
        }
        Format::Smem => smem_parts(name, w0, w1),
        Format::Vop1 | Format::Vop2 | Format::Vopc | Format::Vop3 | Format::Vop3p => {
            valu_parts(name, format, words)
        }
        Format::Ds => ds_parts(name, w0, w1),
        Format::Flat | Format::Mubuf => {
            vmem_parts(name, format, w0, w1, target, words.get(2).copied())
        }
        Format::Mtbuf | Format::Mimg | Format::Exp | Format::Vintrp => unsupported(format!(
            "{name}: {format:?} instructions are not modelled by the device"
        )),
    };
    let mut d = Decoded {
        pc,
        size,
        op: parts.op,
        reads: parts.reads,
        writes: parts.writes,
        issuing: parts.issuing,
        class: parts.class,
        vector: parts.vector,
        text,
        opcode: None,
        illegal: None,
        waits: WaitRules::default(),
    };
    d.waits = WaitRules::of(name, words, &d, target);
    let all = d.reads.or(&d.writes);
    if let Some(h) = highest(&all.v) {
        if h >= limits.vgprs {
            d.illegal = Some(format!(
                "names v{h}, beyond the {} VGPRs the kernel descriptor allocates",
                limits.vgprs
            ));
        }
    }
    if let Some(h) = highest(&all.a) {
        if h >= limits.agprs {
            d.illegal = Some(format!(
                "names a{h}, beyond the {} AGPRs the kernel descriptor allocates",
                limits.agprs
            ));
        }
    }
    d
}

fn scalar_parts(name: &str, format: Format, words: &[u32]) -> Parts {
    let Some(op) = ScalarOp::from_name(name) else {
        return unsupported(format!("scalar instruction {name} is not implemented"));
    };
    let w = words[0];
    let literal = words.get(1).copied().unwrap_or(0);
    let (dst, src0, src1, simm16) = match format {
        Format::Sop2 => (bits(w, 16, 7), bits(w, 0, 8), bits(w, 8, 8), 0),
        Format::Sopk => (bits(w, 16, 7), 0, 0, bits(w, 0, 16)),
        Format::Sop1 => (bits(w, 16, 7), bits(w, 0, 8), 0, 0),
        Format::Sopc => (0, bits(w, 0, 8), bits(w, 8, 8), 0),
        _ => (0, 0, 0, bits(w, 0, 16)),
    };
    let i = ScalarInst {
        op,
        dst: dst as u16,
        src0: src0 as u16,
        src1: src1 as u16,
        literal,
        simm16: simm16 as u16,
        size: (words.len() * 4) as u8,
    };
    let (dw, s0w, s1w) = scalar_widths(op, name);
    let mut reads = RegSet::EMPTY;
    let mut writes = RegSet::EMPTY;
    match format {
        Format::Sop2 => {
            add_scalar(&mut reads, i.src0, s0w);
            add_scalar(&mut reads, i.src1, s1w);
            add_scalar(&mut writes, i.dst, dw);
        }
        Format::Sop1 => {
            if s0w > 0 {
                add_scalar(&mut reads, i.src0, s0w);
            }
            if dw > 0 {
                add_scalar(&mut writes, i.dst, dw);
            }
            if matches!(
                op,
                ScalarOp::Bitset0B32
                    | ScalarOp::Bitset1B32
                    | ScalarOp::Bitset0B64
                    | ScalarOp::Bitset1B64
            ) {
                add_scalar(&mut reads, i.dst, dw);
            }
            if matches!(
                op,
                ScalarOp::MovrelsB32
                    | ScalarOp::MovrelsB64
                    | ScalarOp::MovreldB32
                    | ScalarOp::MovreldB64
            ) {
                reads.add_s(code::M0 as u32, 1);
            }
        }
        Format::Sopk => {
            let name_reads_dst = name.starts_with("s_cmpk")
                || matches!(
                    op,
                    ScalarOp::AddkI32 | ScalarOp::MulkI32 | ScalarOp::SetregB32
                );
            if name_reads_dst {
                add_scalar(&mut reads, i.dst, 1);
            }
            if !name.starts_with("s_cmpk")
                && !matches!(op, ScalarOp::SetregB32 | ScalarOp::SetregImm32B32)
            {
                add_scalar(
                    &mut writes,
                    i.dst,
                    if op == ScalarOp::CallB64 { 2 } else { 1 },
                );
            }
        }
        Format::Sopc => {
            add_scalar(&mut reads, i.src0, s0w);
            add_scalar(&mut reads, i.src1, s1w);
        }
        _ => {}
    }
    let (reads_exec, reads_vcc, writes_exec) = scalar::implicit(op);
    if reads_exec {
        reads.add_s(code::EXEC_LO as u32, 2);
    }
    if reads_vcc {
        reads.add_s(code::VCC_LO as u32, 2);
    }
    if writes_exec {
        writes.add_s(code::EXEC_LO as u32, 2);
    }
    let smem_like = matches!(
        op,
        ScalarOp::DcacheInv | ScalarOp::DcacheWb | ScalarOp::DcacheInvVol | ScalarOp::DcacheWbVol
    );
    Parts {
        op: Op::Scalar(i),
        reads,
        writes,
        issuing: None,
        class: if smem_like {
            InstClass::Smem
        } else if scalar::is_control(op) {
            InstClass::Branch
        } else {
            InstClass::Salu
        },
        vector: false,
    }
}

fn smem_parts(name: &str, w0: u32, w1: u32) -> Parts {
    let Some(op) = SmemOp::from_name(name) else {
        return unsupported(format!(
            "scalar memory instruction {name} is not implemented"
        ));
    };
    let imm = bits(w0, 17, 1) != 0;
    let soe = bits(w0, 14, 1) != 0;
    let (offset, soffset) = match (imm, soe) {
        (true, false) => (sext(bits(w1, 0, 21), 21), None),
        (true, true) => (sext(bits(w1, 0, 21), 21), Some(bits(w1, 25, 7) as u16)),
        (false, true) => (0, Some(bits(w1, 25, 7) as u16)),
        (false, false) => (0, Some(bits(w1, 0, 7) as u16)),
    };
    let i = SmemInst {
        op,
        sdata: bits(w0, 6, 7) as u16,
        sbase: (bits(w0, 0, 6) * 2) as u16,
        offset,
        soffset,
    };
    let (reads, writes) = i.regs();
    Parts {
        op: Op::Smem(i),
        reads,
        writes,
        issuing: Some(OpKind::Smem),
        class: InstClass::Smem,
        vector: false,
    }
}

fn ds_parts(name: &str, w0: u32, w1: u32) -> Parts {
    let Some(op) = DsOp::from_name(name) else {
        return unsupported(format!("LDS instruction {name} is not implemented"));
    };
    let i = DsInst {
        op,
        addr: bits(w1, 0, 8) as u16,
        data0: bits(w1, 8, 8) as u16,
        data1: bits(w1, 16, 8) as u16,
        vdst: bits(w1, 24, 8) as u16,
        offset0: bits(w0, 0, 8) as u8,
        offset1: bits(w0, 8, 8) as u8,
        acc: bits(w0, 25, 1) != 0,
        gds: bits(w0, 16, 1) != 0,
    };
    let (mut reads, writes) = i.regs();
    reads.add_s(code::EXEC_LO as u32, 2);
    Parts {
        op: Op::Ds(i),
        reads,
        writes,
        issuing: Some(OpKind::Lds),
        class: InstClass::Lds,
        vector: true,
    }
}

fn vmem_parts(
    name: &str,
    format: Format,
    w0: u32,
    w1: u32,
    target: Target,
    literal: Option<u32>,
) -> Parts {
    let Some((seg, op)) = VmemOp::from_name(name) else {
        return unsupported(format!(
            "vector memory instruction {name} is not implemented"
        ));
    };
    let gfx940 = target.is_gfx940_family();
    let i = if format == Format::Mubuf {
        VmemInst {
            seg: Segment::Buffer,
            op,
            vaddr: {
                let offen = bits(w0, 12, 1) != 0;
                let idxen = bits(w0, 13, 1) != 0;
                (offen || idxen).then(|| bits(w1, 0, 8) as u16)
            },
            saddr: None,
            vdata: bits(w1, 8, 8) as u16,
            vdst: bits(w1, 8, 8) as u16,
            acc: target.has_agprs() && bits(w1, 23, 1) != 0,
            offset: bits(w0, 0, 12) as i32,
            returns: bits(w0, 14, 1) != 0,
            srsrc: (bits(w1, 16, 5) * 4) as u16,
            soffset: bits(w1, 24, 8) as u16,
            offen: bits(w0, 12, 1) != 0,
            idxen: bits(w0, 13, 1) != 0,
            lds: bits(w0, 16, 1) != 0,
            literal: literal.unwrap_or(0),
            format: name.contains("_format_"),
        }
    } else {
        let saddr_field = bits(w1, 16, 7);
        let saddr = (saddr_field != 0x7f).then_some(saddr_field as u16);
        let vaddr = match seg {
            Segment::Flat => Some(bits(w1, 0, 8) as u16),
            Segment::Global => Some(bits(w1, 0, 8) as u16),
            Segment::Scratch => {
                // gfx940+: the SVE bit says whether a VGPR address is present; before, a VGPR is
                // used exactly when saddr is off.
                let sve = if gfx940 {
                    bits(w0, 13, 1) != 0
                } else {
                    saddr.is_none()
                };
                sve.then(|| bits(w1, 0, 8) as u16)
            }
            Segment::Buffer => None,
        };
        let offset = if seg == Segment::Flat {
            bits(w0, 0, 12) as i32
        } else {
            sext(bits(w0, 0, 13), 13)
        };
        VmemInst {
            seg,
            op,
            vaddr,
            saddr: if seg == Segment::Flat { None } else { saddr },
            vdata: bits(w1, 8, 8) as u16,
            vdst: bits(w1, 24, 8) as u16,
            acc: target.has_agprs() && bits(w1, 23, 1) != 0,
            offset,
            returns: bits(w0, 16, 1) != 0,
            srsrc: 0,
            soffset: 0,
            offen: false,
            idxen: false,
            lds: seg != Segment::Scratch && bits(w0, 13, 1) != 0 && !gfx940,
            literal: 0,
            format: false,
        }
    };
    if i.lds && format == Format::Flat {
        return unsupported(format!(
            "{name} with the lds bit (global/flat load to LDS) is not modelled"
        ));
    }
    let (mut reads, writes) = i.regs();
    reads.add_s(code::EXEC_LO as u32, 2);
    if !i.lds && matches!(op, VmemOp::Load(s) if s.part != super::scoreboard::Part::Full) {
        // d16 loads keep the other half of the destination: they read it.
        reads = reads.or(&writes);
    }
    Parts {
        op: Op::Vmem(i),
        reads,
        writes,
        issuing: Some(OpKind::Vmem),
        class: InstClass::Vmem,
        vector: true,
    }
}

/// Widths in dwords of a vector-ALU instruction's destination and three sources.
fn valu_widths(name: &str, op: &ValuOp) -> (u32, [u32; 3]) {
    let base = ["_e32", "_e64", "_dpp", "_sdwa", "_vop3"]
        .iter()
        .fold(name, |n, s| n.strip_suffix(s).unwrap_or(n));
    let w = |t: &str| -> u32 {
        if matches!(t, "f64" | "i64" | "u64" | "b64") {
            2
        } else {
            1
        }
    };
    if let ValuOp::Mfma(shape) = op {
        let ab = shape.a_regs();
        let d = shape.d_regs();
        return (d, [ab, ab, d]);
    }
    if let ValuOp::Cmp(_) = op {
        let t = base.rsplit('_').next().unwrap_or("");
        let s1 = if base.contains("_class_") { 1 } else { w(t) };
        return (2, [w(t), s1, 0]);
    }
    match base {
        "v_lshlrev_b64" | "v_lshrrev_b64" | "v_ashrrev_i64" => return (2, [1, 2, 0]),
        "v_lshl_add_u64" => return (2, [2, 1, 2]),
        "v_mad_u64_u32" | "v_mad_i64_i32" => return (2, [1, 1, 2]),
        "v_ldexp_f64" | "v_trig_preop_f64" => return (2, [2, 1, 0]),
        "v_readlane_b32" | "v_writelane_b32" | "v_readfirstlane_b32" => return (1, [1, 1, 0]),
        "v_mov_b64" | "v_pk_mov_b32" => return (2, [2, 2, 0]),
        "v_cvt_pk_f32_fp8" | "v_cvt_pk_f32_bf8" => return (2, [1, 0, 0]),
        _ => {}
    }
    if base.starts_with("v_pk_") && base.ends_with("_f32") {
        return (2, [2, 2, 2]);
    }
    // Conversions and the like: v_<op>_<dst>_<src>.
    let parts: Vec<&str> = base.split('_').collect();
    let is_type = |t: &str| {
        t.len() >= 3
            && matches!(&t[..1], "f" | "i" | "u" | "b")
            && t[1..].chars().all(|c| c.is_ascii_digit())
    };
    let n = parts.len();
    if n >= 3 && is_type(parts[n - 1]) && is_type(parts[n - 2]) {
        let d = w(parts[n - 2]);
        let s = w(parts[n - 1]);
        return (d, [s, s, s]);
    }
    let t = if n >= 1 && is_type(parts[n - 1]) {
        w(parts[n - 1])
    } else {
        1
    };
    (t, [t, t, t])
}

/// Sources each kind of instruction reads (0-3), for the scoreboard.
fn valu_source_count(name: &str, format: Format, op: &ValuOp) -> usize {
    if let ValuOp::Mfma(_) = op {
        return 3;
    }
    match format {
        Format::Vop1 => {
            if name.starts_with("v_nop") || name.starts_with("v_clrexcp") {
                0
            } else {
                1
            }
        }
        Format::Vop2 | Format::Vopc => 2,
        _ => 3,
    }
}

fn valu_parts(name: &str, format: Format, words: &[u32]) -> Parts {
    let Some(vop) = ValuOp::from_name(name) else {
        return unsupported(format!("vector ALU instruction {name} is not implemented"));
    };
    let w0 = words[0];
    let w1 = words.get(1).copied().unwrap_or(0);
    let mut i = ValuInst::new(vop, Form::E32);
    let base = ["_e32", "_e64", "_dpp", "_sdwa", "_vop3"]
        .iter()
        .fold(name, |n, s| n.strip_suffix(s).unwrap_or(n));
    let mut nsrc = valu_source_count(name, format, &vop);
    match format {
        Format::Vop1 | Format::Vop2 | Format::Vopc => {
            let src0 = bits(w0, 0, 9);
            let vsrc1 = bits(w0, 9, 8) + 256;
            i.src = [src0 as u16, vsrc1 as u16, 0];
            i.vdst = match format {
                Format::Vopc => 0,
                _ => bits(w0, 17, 8) as u16,
            };
            i.sdst = code::VCC_LO;
            // VOP2 ops with an inline K (madmk/madak/fmamk/fmaak) carry it as the literal.
            if let Some(&lit) = words.get(1) {
                i.literal = lit;
            }
            if src0 == 0xfa {
                // DPP: the second word holds src0 (a VGPR) and the controls.
                i.src[0] = (bits(w1, 0, 8) + 256) as u16;
                i.neg = (bits(w1, 20, 1) | bits(w1, 22, 1) << 1) as u8;
                i.abs = (bits(w1, 21, 1) | bits(w1, 23, 1) << 1) as u8;
                i.form = Form::Dpp(Dpp {
                    ctrl: bits(w1, 8, 9) as u16,
                    row_mask: bits(w1, 28, 4) as u8,
                    bank_mask: bits(w1, 24, 4) as u8,
                    bound_ctrl: bits(w1, 19, 1) != 0,
                });
                i.literal = 0;
            } else if src0 == 0xf9 {
                // SDWA (gfx9 layout).
                let s0 = bits(w1, 0, 8);
                i.src[0] = if bits(w1, 23, 1) != 0 {
                    s0 as u16
                } else {
                    (s0 + 256) as u16
                };
                if format != Format::Vop1 && bits(w1, 31, 1) != 0 {
                    i.src[1] = bits(w0, 9, 8) as u16;
                }
                let sel = |v: u32| SdwaSel::from_bits(v as u8);
                let (dst_sel, dst_unused) = if format == Format::Vopc {
                    if bits(w1, 15, 1) != 0 {
                        i.sdst = bits(w1, 8, 7) as u16;
                    }
                    (Some(SdwaSel::Dword), Some(SdwaUnused::Preserve))
                } else {
                    i.clamp = bits(w1, 13, 1) != 0;
                    i.omod = bits(w1, 14, 2) as u8;
                    (
                        sel(bits(w1, 8, 3)),
                        SdwaUnused::from_bits(bits(w1, 11, 2) as u8),
                    )
                };
                let (Some(dst_sel), Some(dst_unused), Some(s0), Some(s1)) = (
                    dst_sel,
                    dst_unused,
                    sel(bits(w1, 16, 3)),
                    sel(bits(w1, 24, 3)),
                ) else {
                    return unsupported(format!("{name}: reserved SDWA select in {w1:#010x}"));
                };
                i.neg = (bits(w1, 20, 1) | bits(w1, 28, 1) << 1) as u8;
                i.abs = (bits(w1, 21, 1) | bits(w1, 29, 1) << 1) as u8;
                i.form = Form::Sdwa(Sdwa {
                    dst_sel,
                    dst_unused,
                    src_sel: [s0, s1],
                    sext: [bits(w1, 19, 1) != 0, bits(w1, 27, 1) != 0],
                });
                i.literal = 0;
            }
            if base == "v_readfirstlane_b32" {
                i.sdst = i.vdst;
            }
            if base == "v_accvgpr_mov_b32" {
                i.acc = 0b11;
            }
        }
        Format::Vop3 => {
            i.form = Form::Vop3;
            let vdst = bits(w0, 0, 8) as u16;
            i.src = [
                bits(w1, 0, 9) as u16,
                bits(w1, 9, 9) as u16,
                bits(w1, 18, 9) as u16,
            ];
            i.neg = bits(w1, 29, 3) as u8;
            i.omod = bits(w1, 27, 2) as u8;
            i.clamp = bits(w0, 15, 1) != 0;
            if writes_carry_out(base) {
                i.sdst = bits(w0, 8, 7) as u16;
                i.vdst = vdst;
            } else {
                i.abs = bits(w0, 8, 3) as u8;
                i.op_sel = bits(w0, 11, 4) as u8;
                if let ValuOp::Cmp(_) = vop {
                    i.sdst = vdst;
                } else if base == "v_readlane_b32" {
                    i.sdst = vdst;
                } else {
                    i.vdst = vdst;
                }
            }
            // VOP3-encoded VOP1/VOP2/VOPC take fewer sources.
            nsrc = vop3_source_count(base, &vop);
        }
        Format::Vop3p => {
            i.form = Form::Vop3p;
            i.vdst = bits(w0, 0, 8) as u16;
            i.src = [
                bits(w1, 0, 9) as u16,
                bits(w1, 9, 9) as u16,
                bits(w1, 18, 9) as u16,
            ];
            if let ValuOp::Mfma(_) = vop {
                let acc_cd = bits(w0, 15, 1) != 0;
                let acc_ab = bits(w1, 27, 2);
                i.acc = (acc_cd as u8)
                    | ((acc_ab & 1) as u8) << 1
                    | ((acc_ab >> 1) as u8) << 2
                    | (acc_cd as u8) << 3;
                i.cbsz = bits(w0, 8, 3) as u8;
                i.abid = bits(w0, 11, 4) as u8;
                i.blgp = bits(w1, 29, 3) as u8;
                i.op_sel_hi = 0x7;
            } else {
                i.clamp = bits(w0, 15, 1) != 0;
                i.op_sel = bits(w0, 11, 3) as u8;
                i.neg_hi = bits(w0, 8, 3) as u8;
                i.neg = bits(w1, 29, 3) as u8;
                i.op_sel_hi = (bits(w1, 27, 2) | bits(w0, 14, 1) << 2) as u8;
                match base {
                    "v_accvgpr_read_b32" | "v_accvgpr_read" => {
                        i.acc = 0b10;
                        nsrc = 1;
                    }
                    "v_accvgpr_write_b32" | "v_accvgpr_write" => {
                        i.acc = 0b01;
                        nsrc = 1;
                    }
                    _ => nsrc = vop3p_source_count(base),
                }
            }
        }
        _ => {}
    }
    // Registers read and written.
    let (dw, sw) = valu_widths(name, &vop);
    let mut reads = RegSet::EMPTY;
    let mut writes = RegSet::EMPTY;
    reads.add_s(code::EXEC_LO as u32, 2);
    for (k, &w) in sw.iter().enumerate().take(nsrc) {
        if w == 0 {
            continue;
        }
        let agpr = i.acc >> (k + 1) & 1 != 0;
        add_vsrc(&mut reads, i.src[k], w, agpr);
    }
    let is_cmp = matches!(vop, ValuOp::Cmp(_));
    let writes_sgpr = is_cmp || matches!(base, "v_readlane_b32" | "v_readfirstlane_b32");
    if writes_sgpr {
        add_scalar(&mut writes, i.sdst, if is_cmp { 2 } else { 1 });
    } else if base != "v_nop" && base != "v_clrexcp" {
        if i.acc & 1 != 0 {
            writes.add_a(i.vdst as u32, dw);
        } else {
            writes.add_v(i.vdst as u32, dw);
        }
    }
    if let ValuOp::Cmp(c) = vop {
        if c.writes_exec {
            writes.add_s(code::EXEC_LO as u32, 2);
        }
    }
    // Implicit VCC of the 32-bit encodings, carry-outs of VOP3b, carry-ins.
    let e32 = matches!(format, Format::Vop1 | Format::Vop2 | Format::Vopc);
    let carry_in = matches!(
        base,
        "v_addc_co_u32" | "v_subb_co_u32" | "v_subbrev_co_u32" | "v_cndmask_b32"
    );
    if writes_carry_out(base) {
        add_scalar(&mut writes, if e32 { code::VCC_LO } else { i.sdst }, 2);
    }
    if carry_in && e32 {
        reads.add_s(code::VCC_LO as u32, 2);
    }
    if base.starts_with("v_div_fmas") {
        reads.add_s(code::VCC_LO as u32, 2);
    }
    if matches!(base, "v_movrels_b32" | "v_movreld_b32" | "v_movrelsd_b32") {
        reads.add_s(code::M0 as u32, 1);
    }
    if matches!(base, "v_writelane_b32") {
        // Other lanes keep their value: the destination is read too.
        reads = reads.or(&writes);
    }
    if base == "v_swap_b32" {
        add_vsrc(&mut writes, i.src[0], 1, false);
    }
    if matches!(i.form, Form::Sdwa(_))
        || matches!(vop, ValuOp::Op(_))
            && (i.op_sel & 8 != 0
                || base.ends_with("_f16")
                || base.ends_with("_u16")
                || base.ends_with("_i16"))
    {
        // Partial writes (SDWA selects, 16-bit results that keep the other half) read the old
        // destination.
        reads = reads.or(&writes);
    }
    if base.starts_with("v_mac_") || base.starts_with("v_fmac_") || base.starts_with("v_dot") && e32
    {
        reads = reads.or(&writes);
    }
    let class = if matches!(vop, ValuOp::Mfma(_)) {
        InstClass::Mfma
    } else {
        InstClass::Valu
    };
    Parts {
        op: Op::Valu(Box::new(i)),
        reads,
        writes,
        issuing: None,
        class,
        vector: true,
    }
}

/// The VOP3b opcodes: a scalar destination (carry-out, the division macro's post-scale flags,
/// the 64-bit mad's overflow) where VOP3a has `abs`/`op_sel`; in their 32-bit encodings the
/// carry-out goes to VCC.
fn writes_carry_out(base: &str) -> bool {
    matches!(
        base,
        "v_add_co_u32"
            | "v_sub_co_u32"
            | "v_subrev_co_u32"
            | "v_addc_co_u32"
            | "v_subb_co_u32"
            | "v_subbrev_co_u32"
            | "v_div_scale_f32"
            | "v_div_scale_f64"
            | "v_mad_u64_u32"
            | "v_mad_i64_i32"
    )
}

/// Sources of a VOP3-encoded instruction (VOP1/VOP2/VOPC ops promoted to VOP3 keep their count).
fn vop3_source_count(base: &str, op: &ValuOp) -> usize {
    if let ValuOp::Cmp(_) = op {
        return 2;
    }
    const ONE: &[&str] = &["v_readfirstlane_b32", "v_nop", "v_clrexcp"];
    if ONE.contains(&base) {
        return if base == "v_readfirstlane_b32" { 1 } else { 0 };
    }
    const THREE_PREFIX: &[&str] = &[
        "v_mad",
        "v_fma",
        "v_bfe",
        "v_bfi",
        "v_alignbit",
        "v_alignbyte",
        "v_min3",
        "v_max3",
        "v_med3",
        "v_sad",
        "v_msad",
        "v_qsad",
        "v_mqsad",
        "v_lerp",
        "v_cubeid",
        "v_cubesc",
        "v_cubetc",
        "v_cubema",
        "v_div_fixup",
        "v_div_fmas",
        "v_div_scale",
        "v_perm",
        "v_lshl_add",
        "v_add_lshl",
        "v_add3",
        "v_lshl_or",
        "v_and_or",
        "v_or3",
        "v_xad",
        "v_cvt_pk_u8_f32",
        "v_addc_co",
        "v_subb_co",
        "v_subbrev_co",
        "v_cndmask",
        "v_dot",
    ];
    if THREE_PREFIX.iter().any(|p| base.starts_with(p)) {
        return 3;
    }
    const ONE_SRC: &[&str] = &[
        "v_mov_",
        "v_cvt_",
        "v_rcp",
        "v_rsq",
        "v_sqrt",
        "v_exp",
        "v_log",
        "v_sin",
        "v_cos",
        "v_fract",
        "v_trunc",
        "v_ceil",
        "v_floor",
        "v_rndne",
        "v_not_",
        "v_bfrev",
        "v_ffbh",
        "v_ffbl",
        "v_frexp",
        "v_sat_pk",
        "v_swap",
        "v_movrel",
        "v_accvgpr_mov",
    ];
    if ONE_SRC.iter().any(|p| base.starts_with(p))
        && !base.starts_with("v_cvt_pk")
        && !base.starts_with("v_cvt_pknorm")
    {
        return 1;
    }
    2
}

/// Sources of a VOP3P (non-MFMA) instruction.
fn vop3p_source_count(base: &str) -> usize {
    if base.contains("fma") || base.contains("mad") || base.starts_with("v_dot") {
        3
    } else {
        2
    }
}

/// Identifies the instruction at the start of `words` with the instruction layer
/// ([`kjit_backend_gcn::isa::decode`]): its mnemonic as LLVM spells it on `target`, its length in
/// dwords, and its assembler text followed by its encoding words (for error messages).
pub fn identify(
    words: &[u32],
    target: Target,
) -> Result<(String, usize, String, kjit_backend_gcn::isa::Opcode), String> {
    let (inst, len) = kjit_backend_gcn::isa::decode(words, target).map_err(|e| e.to_string())?;
    let name = kjit_backend_gcn::isa::print::mnemonic(&inst, target);
    let enc: Vec<String> = words[..len.min(words.len())]
        .iter()
        .map(|w| format!("{w:#010x}"))
        .collect();
    let text = format!("{} ({})", inst.display(target), enc.join(" "));
    Ok((name, len, text, inst.op))
}

/// Decodes a kernel's code (at device address `entry`) into the device's program. Words that do
/// not decode become `Invalid` entries (an error only if a wave reaches them: code objects pad
/// kernels with data the decoder need not understand).
pub fn decode_program(
    code: &[u8],
    entry: u64,
    image_base: u64,
    target: Target,
    setup: &super::dispatch::KernelSetup,
) -> Result<super::program::Program, String> {
    let words: Vec<u32> = code
        .chunks(4)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect();
    let (vgprs, agprs) = setup.vector_registers(target);
    let limits = Limits { vgprs, agprs };
    let mut insts = Vec::new();
    let mut k = 0usize;
    while k < words.len() {
        let pc = entry + 4 * k as u64;
        match identify(&words[k..], target) {
            Ok((name, len, text, opcode)) => {
                let len = len.max(1).min(words.len() - k);
                let mut d = translate(&name, &words[k..k + len], pc, target, limits, text);
                d.opcode = Some(opcode);
                insts.push(d);
                k += len;
            }
            Err(why) => {
                insts.push(Decoded {
                    pc,
                    size: 4,
                    op: Op::Invalid(why),
                    reads: RegSet::EMPTY,
                    writes: RegSet::EMPTY,
                    issuing: None,
                    class: InstClass::Salu,
                    vector: false,
                    text: format!("<undecodable {:#010x}>", words[k]),
                    opcode: None,
                    illegal: None,
                    waits: WaitRules::default(),
                });
                k += 1;
            }
        }
    }
    let mut p = super::program::Program::new(entry, insts);
    p.image_base = image_base;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::scoreboard::Part;
    use crate::emu::vmem::DataShape;

    fn words(bytes: &[u8]) -> Vec<u32> {
        bytes
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    const BIG: Limits = Limits {
        vgprs: 256,
        agprs: 256,
    };

    fn tr(name: &str, bytes: &[u8], t: Target) -> Decoded {
        translate(name, &words(bytes), 0x100, t, BIG, name.to_string())
    }

    /// Decodes a memory instruction of the kind the name says: the instruction and the decoded
    /// entry (for its register sets and class).
    macro_rules! decode_as {
        ($f:ident, $op:ident, $inst:ty) => {
            fn $f(name: &str, bytes: &[u8], t: Target) -> ($inst, Decoded) {
                let d = tr(name, bytes, t);
                let Op::$op(i) = d.op else {
                    panic!("{name} did not decode as {}: {:?}", stringify!($op), d.op)
                };
                (i, d)
            }
        };
    }
    decode_as!(vmem, Vmem, VmemInst);
    decode_as!(smem, Smem, SmemInst);
    decode_as!(ds, Ds, DsInst);

    #[test]
    fn formats_follow_the_fixed_bits() {
        assert_eq!(Format::of(0x8603ff03), Format::Sop2); // s_and_b32 s3, s3, lit
        assert_eq!(Format::of(0xb0000080), Format::Sopk); // s_movk_i32
        assert_eq!(Format::of(0xbe82206a), Format::Sop1); // s_and_saveexec_b64
        assert_eq!(Format::of(0xbf8cc07f), Format::Sopp); // s_waitcnt
        assert_eq!(Format::of(0xc00200c0), Format::Smem);
        assert_eq!(Format::of(0x7e020280), Format::Vop1);
        assert_eq!(Format::of(0x7d980004), Format::Vopc);
        assert_eq!(Format::of(0x68000002), Format::Vop2);
        assert_eq!(Format::of(0xd2080004), Format::Vop3);
        assert_eq!(Format::of(0xd3cc8000), Format::Vop3p);
        assert_eq!(Format::of(0xd81a0000), Format::Ds);
        assert_eq!(Format::of(0xdc508000), Format::Flat);
        assert_eq!(Format::of(0xe0501000), Format::Mubuf);
    }

    #[test]
    fn smem_offsets_and_soffset_follow_llvm_encodings() {
        // s_load_dword s4, s[0:1], 0x10
        let (i, _) = smem(
            "s_load_dword",
            &[0x00, 0x01, 0x02, 0xc0, 0x10, 0x00, 0x00, 0x00],
            Target::Gfx942,
        );
        assert_eq!((i.sdata, i.sbase, i.offset, i.soffset), (4, 0, 16, None));
        // s_load_dword s4, s[0:1], s6 offset:0x10
        let (i, _) = smem(
            "s_load_dword",
            &[0x00, 0x41, 0x02, 0xc0, 0x10, 0x00, 0x00, 0x0c],
            Target::Gfx900,
        );
        assert_eq!((i.offset, i.soffset), (16, Some(6)));
        // s_load_dword s4, s[0:1], s6
        let (i, _) = smem(
            "s_load_dword",
            &[0x00, 0x01, 0x00, 0xc0, 0x06, 0x00, 0x00, 0x00],
            Target::Gfx90a,
        );
        assert_eq!((i.offset, i.soffset), (0, Some(6)));
        // s_load_dword s4, s[0:1], -0x10 ; s_buffer_load_dwordx2 s[4:5], s[8:11], 0x20
        let (i, _) = smem(
            "s_load_dword",
            &[0x00, 0x01, 0x02, 0xc0, 0xf0, 0xff, 0x1f, 0x00],
            Target::Gfx942,
        );
        assert_eq!(i.offset, -16);
        let (i, d) = smem(
            "s_buffer_load_dwordx2",
            &[0x04, 0x01, 0x26, 0xc0, 0x20, 0x00, 0x00, 0x00],
            Target::Gfx942,
        );
        assert_eq!((i.sdata, i.sbase, i.offset), (4, 8, 32));
        let mut want = RegSet::EMPTY;
        want.add_s(4, 2);
        assert_eq!(d.writes, want);
        assert_eq!(d.class, InstClass::Smem);
    }

    #[test]
    fn flat_global_scratch_fields_per_target() {
        // scratch_load_dword v1, off, s2 offset:16
        let (i, _) = vmem(
            "scratch_load_dword",
            &[0x10, 0x40, 0x50, 0xdc, 0x00, 0x00, 0x02, 0x01],
            Target::Gfx900,
        );
        assert_eq!(
            (i.seg, i.vaddr, i.saddr, i.vdst, i.offset),
            (Segment::Scratch, None, Some(2), 1, 16)
        );
        // scratch_load_dword v1, v2, off offset:-16 (gfx900 and gfx942 encodings)
        let (i, _) = vmem(
            "scratch_load_dword",
            &[0xf0, 0x5f, 0x50, 0xdc, 0x02, 0x00, 0x7f, 0x01],
            Target::Gfx900,
        );
        assert_eq!((i.vaddr, i.saddr, i.offset), (Some(2), None, -16));
        let (i, _) = vmem(
            "scratch_load_dword",
            &[0xf0, 0x7f, 0x50, 0xdc, 0x02, 0x00, 0x7f, 0x01],
            Target::Gfx942,
        );
        assert_eq!((i.vaddr, i.saddr, i.offset), (Some(2), None, -16));
        // gfx942 scratch_load_dword v1, v2, s3
        let (i, _) = vmem(
            "scratch_load_dword",
            &[0x00, 0x60, 0x50, 0xdc, 0x02, 0x00, 0x03, 0x01],
            Target::Gfx942,
        );
        assert_eq!((i.vaddr, i.saddr), (Some(2), Some(3)));
        // global_load_dword v1, v2, s[4:5] offset:8
        let (i, d) = vmem(
            "global_load_dword",
            &[0x08, 0x80, 0x50, 0xdc, 0x02, 0x00, 0x04, 0x01],
            Target::Gfx90a,
        );
        assert_eq!(
            (i.vaddr, i.saddr, i.vdst, i.offset),
            (Some(2), Some(4), 1, 8)
        );
        let mut r = RegSet::EMPTY;
        r.add_v(2, 1);
        r.add_s(4, 2);
        r.add_s(code::EXEC_LO as u32, 2);
        assert_eq!(d.reads, r);
        // global_atomic_add v1, v[2:3], v4, off sc0 (returns)
        let (i, _) = vmem(
            "global_atomic_add",
            &[0x00, 0x80, 0x09, 0xdd, 0x02, 0x04, 0x7f, 0x01],
            Target::Gfx942,
        );
        assert!(i.returns);
        assert_eq!((i.vaddr, i.saddr, i.vdata, i.vdst), (Some(2), None, 4, 1));
        // global_load_dword a1, v[2:3], off (acc)
        let (i, _) = vmem(
            "global_load_dword",
            &[0x00, 0x80, 0x50, 0xdc, 0x02, 0x00, 0xff, 0x01],
            Target::Gfx942,
        );
        assert!(i.acc && i.saddr.is_none());
        // flat_load_dword v1, v[2:3] offset:8
        let (i, _) = vmem(
            "flat_load_dword",
            &[0x08, 0x00, 0x50, 0xdc, 0x02, 0x00, 0x00, 0x01],
            Target::Gfx900,
        );
        assert_eq!((i.seg, i.vaddr, i.offset), (Segment::Flat, Some(2), 8));
    }

    #[test]
    fn mubuf_fields_incl_the_lds_bit() {
        // buffer_load_dword v1, v2, s[4:7], s8 offen offset:4 glc slc
        let (i, _) = vmem(
            "buffer_load_dword",
            &[0x04, 0x50, 0x52, 0xe0, 0x02, 0x01, 0x01, 0x08],
            Target::Gfx900,
        );
        assert_eq!(
            (i.vaddr, i.vdst, i.srsrc, i.soffset, i.offset, i.offen, i.lds),
            (Some(2), 1, 4, 8, 4, true, false)
        );
        assert_eq!(
            i.op,
            VmemOp::Load(DataShape {
                bytes: 4,
                dwords: 1,
                signed: false,
                part: Part::Full
            })
        );
        // buffer_load_dword v1, s[8:11], 0 offen lds (0xE0511000 0x80020001)
        let d = translate(
            "buffer_load_dword",
            &[0xE051_1000, 0x8002_0001],
            0,
            Target::Gfx942,
            BIG,
            String::new(),
        );
        let Op::Vmem(i) = d.op else { panic!() };
        assert!(i.lds && i.offen);
        assert_eq!(i.srsrc, 8);
        assert!(d.writes.is_empty(), "an lds load writes no VGPR");
    }

    #[test]
    fn ds_fields() {
        // ds_read2_b32 v[0:1], v2 offset0:1 offset1:2
        let (i, d) = ds(
            "ds_read2_b32",
            &[0x01, 0x02, 0x6e, 0xd8, 0x02, 0x00, 0x00, 0x00],
            Target::Gfx942,
        );
        assert_eq!((i.addr, i.vdst, i.offset0, i.offset1), (2, 0, 1, 2));
        let mut w = RegSet::EMPTY;
        w.add_v(0, 2);
        assert_eq!(d.writes, w);
        // ds_read_b32 a1, v2 (acc)
        let (i, d) = ds(
            "ds_read_b32",
            &[0x00, 0x00, 0x6c, 0xda, 0x02, 0x00, 0x00, 0x01],
            Target::Gfx942,
        );
        assert!(i.acc);
        assert_eq!(highest(&d.writes.a), Some(1));
    }

    #[test]
    fn valu_operands_widths_and_modifiers() {
        // v_lshl_add_u64 v[4:5], s[4:5], 0, v[0:1]
        let d = tr(
            "v_lshl_add_u64",
            &[0x04, 0x00, 0x08, 0xd2, 0x04, 0x00, 0x01, 0x04],
            Target::Gfx942,
        );
        let Op::Valu(i) = &d.op else { panic!() };
        assert_eq!((i.vdst, i.src), (4, [4, 128, 256]));
        let mut r = RegSet::EMPTY;
        r.add_s(4, 2);
        r.add_v(0, 2);
        r.add_s(code::EXEC_LO as u32, 2);
        assert_eq!(d.reads, r);
        let mut w = RegSet::EMPTY;
        w.add_v(4, 2);
        assert_eq!(d.writes, w);
        // v_cmp_gt_u32_e32 vcc, s4, v0 writes VCC
        let d = tr(
            "v_cmp_gt_u32_e32",
            &[0x04, 0x00, 0x98, 0x7d],
            Target::Gfx942,
        );
        let mut w = RegSet::EMPTY;
        w.add_s(code::VCC_LO as u32, 2);
        assert_eq!(d.writes, w);
        // v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]
        let d = tr(
            "v_mfma_f32_32x32x8_f16",
            &[0x00, 0x80, 0xcc, 0xd3, 0x00, 0x05, 0x02, 0x04],
            Target::Gfx942,
        );
        let Op::Valu(i) = &d.op else { panic!() };
        assert_eq!(i.acc, 0b1001);
        assert_eq!(d.class, InstClass::Mfma);
        assert_eq!(highest(&d.writes.a), Some(15));
        assert_eq!(highest(&d.reads.v), Some(3));
        // v_accvgpr_read_b32 v1, a2
        let d = tr(
            "v_accvgpr_read_b32",
            &[0x01, 0x40, 0xd8, 0xd3, 0x02, 0x01, 0x00, 0x18],
            Target::Gfx90a,
        );
        let Op::Valu(i) = &d.op else { panic!() };
        assert_eq!((i.acc, i.vdst, i.src[0]), (0b10, 1, 258));
        assert_eq!(highest(&d.reads.a), Some(2));
        // v_pk_fma_f32 v[0:1], v[2:3], v[4:5], v[6:7] op_sel_hi:[0,1,1]
        let d = tr(
            "v_pk_fma_f32",
            &[0x00, 0x40, 0xb0, 0xd3, 0x02, 0x09, 0x1a, 0x14],
            Target::Gfx942,
        );
        let Op::Valu(i) = &d.op else { panic!() };
        assert_eq!(i.op_sel_hi, 0b110);
        assert_eq!(highest(&d.reads.v), Some(7));
    }

    #[test]
    fn registers_beyond_the_allocation_are_flagged() {
        let small = Limits { vgprs: 4, agprs: 0 };
        let d = translate(
            "v_mov_b32_e32",
            &[0x7e0a0205],
            0,
            Target::Gfx942,
            small,
            String::new(),
        );
        assert!(
            d.illegal.as_deref().unwrap_or("").contains("v5"),
            "{:?}",
            d.illegal
        );
        let d = translate(
            "v_mov_b32_e32",
            &[0x7e060205],
            0,
            Target::Gfx942,
            Limits { vgprs: 8, agprs: 0 },
            String::new(),
        );
        assert!(d.illegal.is_none());
    }

    #[test]
    fn scalar_widths_cover_64_bit_sources() {
        // s_lshl_b64 s[2:3], s[4:5], 2 -> reads s4, s5 (not s2's old value), writes s[2:3]
        let w = 0x8e82_8204u32;
        let d = translate("s_lshl_b64", &[w], 0, Target::Gfx942, BIG, String::new());
        let mut r = RegSet::EMPTY;
        r.add_s(4, 2);
        assert_eq!(d.reads, r);
        let mut wr = RegSet::EMPTY;
        wr.add_s(2, 2);
        assert_eq!(d.writes, wr);
    }
}

//! Generates many operand and modifier variants of every instruction form in the table, for the
//! encoder and decoder oracles. Operand values are drawn from pools per operand kind (registers
//! at low/high/odd indices, tuples, special registers, inline integers and floats, literals) and
//! combined in a rotating pattern so that each form gets a spread of values without a
//! combinatorial explosion.

use kjit_backend_gcn::isa::{
    flags, Dpp, Encoding, Format, InlineFloat, Inst, Kind, Modifiers, Opcode, Operand, OperandInfo,
    Sdwa, Slot, SpecialReg,
};
use kjit_backend_gcn::Target;

/// Whether the instruction's sources are 16-bit (literals must then fit 16 bits).
fn is_16bit(name: &str) -> bool {
    ["f16", "i16", "u16", "b16"]
        .iter()
        .any(|t| name.contains(t))
}

fn vreg_pool(w: u8, t: Target) -> Vec<u16> {
    let even = t.has_agprs();
    let mut v = vec![0u16, 2, 8, 34, 100];
    if !even || w == 1 {
        v.push(1);
        v.push(17);
    }
    v.push(256 - (w as u16).max(1) - if w == 3 { 1 } else { 0 });
    v.retain(|&x| x as u32 + w as u32 <= 256 && (!even || w == 1 || x % 2 == 0));
    v
}

fn sgpr_pool(w: u8) -> Vec<Operand> {
    let align = match w {
        1 => 1,
        2 => 2,
        _ => 4,
    };
    let mut out: Vec<Operand> = [0u16, 1, 2, 4, 12, 37, 64, 96]
        .iter()
        .filter(|&&s| s % align == 0 && s as u32 + w as u32 <= 102)
        .map(|&s| Operand::sr(s, w))
        .collect();
    match w {
        1 => {
            out.push(Operand::Special(SpecialReg::VccLo));
            out.push(Operand::Special(SpecialReg::ExecHi));
            out.push(Operand::Special(SpecialReg::M0));
            out.push(Operand::Ttmp { first: 3, count: 1 });
        }
        2 => {
            out.push(Operand::Special(SpecialReg::Vcc));
            out.push(Operand::Special(SpecialReg::Exec));
            out.push(Operand::Ttmp { first: 4, count: 2 });
        }
        4 => out.push(Operand::Ttmp { first: 8, count: 4 }),
        _ => {}
    }
    out
}

fn inline_pool() -> Vec<Operand> {
    vec![
        Operand::InlineInt(0),
        Operand::InlineInt(1),
        Operand::InlineInt(64),
        Operand::InlineInt(-1),
        Operand::InlineInt(-16),
        Operand::InlineFloat(InlineFloat::Half),
        Operand::InlineFloat(InlineFloat::NegFour),
        Operand::InlineFloat(InlineFloat::InvTwoPi),
    ]
}

/// The candidate values of one operand.
fn pool(
    inst_op: Opcode,
    enc: Encoding,
    oi: &OperandInfo,
    t: Target,
    literal_ok: bool,
) -> Vec<Operand> {
    let w = oi.dwords.max(1);
    let name = inst_op.name();
    let vregs = || vreg_pool(w, t).into_iter().map(move |f| Operand::vr(f, w));
    let aregs = || {
        vreg_pool(w, t)
            .into_iter()
            .map(move |f| Operand::ar(f, w))
            .collect::<Vec<_>>()
    };
    let lit = if is_16bit(name) { 0x1234 } else { 0x1234_5678 };
    // LLVM prints float inline constants of 16-bit integer sources as hex, which its assembler
    // reads back as a literal: such encodings cannot round-trip through LLVM text.
    let src = match oi.slot {
        Slot::Src0 => Some(0),
        Slot::Src1 => Some(1),
        Slot::Src2 => Some(2),
        _ => None,
    };
    let int16 = src.is_some_and(|s| inst_op.info().flags & (flags::INT16_0 << s) != 0);
    let inline_pool = || {
        inline_pool()
            .into_iter()
            .filter(|o| !(int16 && matches!(o, Operand::InlineFloat(_))))
            .collect::<Vec<_>>()
    };
    match oi.kind {
        Kind::VReg => vregs().collect(),
        Kind::AReg => aregs(),
        Kind::AvReg => {
            let mut v: Vec<Operand> = vregs().collect();
            if t.has_agprs() {
                v.extend(aregs().into_iter().take(3));
            }
            v
        }
        Kind::SReg if matches!(oi.slot, Slot::Sdata | Slot::Saddr) => sgpr_pool(w)
            .into_iter()
            .filter(|o| matches!(o, Operand::Sgpr { .. }))
            .collect(),
        Kind::SReg if oi.slot == Slot::Sdst => sgpr_pool(w)
            .into_iter()
            .filter(|o| !matches!(o, Operand::Special(SpecialReg::Exec)))
            .collect(),
        Kind::SReg => sgpr_pool(w),
        Kind::VSrc => {
            let mut v: Vec<Operand> = vregs().collect();
            if enc != Encoding::Dpp {
                v.extend(sgpr_pool(w));
                v.extend(inline_pool());
                if literal_ok {
                    v.push(Operand::Literal(lit));
                }
            }
            v
        }
        Kind::SSrc => {
            let mut v = sgpr_pool(w);
            v.extend(inline_pool());
            if literal_ok {
                v.push(Operand::Literal(lit));
            }
            v
        }
        Kind::ASrc => aregs(),
        Kind::AvSrc => {
            let mut v: Vec<Operand> = vregs().collect();
            v.extend(aregs().into_iter().take(2));
            if oi.slot == Slot::Src2 {
                v.push(Operand::InlineInt(0));
                v.push(Operand::InlineInt(3));
            }
            v
        }
        Kind::FixedVcc => vec![Operand::Special(SpecialReg::Vcc)],
        Kind::Lit32 => vec![
            Operand::Literal(lit),
            Operand::Literal(0x4049_0fdb & if is_16bit(name) { 0xffff } else { !0 }),
        ],
        Kind::Imm16 => vec![
            Operand::Imm(0),
            Operand::Imm(3),
            Operand::Imm(64),
            Operand::Imm(0x41),
            Operand::Imm(0x1234),
        ],
        Kind::Imm16Hex => vec![
            Operand::Imm(0),
            Operand::Imm(0x7fff),
            Operand::Imm(0x8000),
            Operand::Imm(0x12),
        ],
        Kind::Label => vec![
            Operand::Imm(0),
            Operand::Imm(5),
            Operand::Imm(-3),
            Operand::Imm(0x7fff),
        ],
        Kind::Waitcnt => vec![
            Operand::Imm(0),
            Operand::Imm(0xc07f),
            Operand::Imm(0x0f70),
            Operand::Imm(0xcf7f),
            Operand::Imm(0xc073),
        ],
        Kind::Hwreg => vec![
            Operand::Imm(1 | 31 << 11),
            Operand::Imm(1 | 3 << 11),
            Operand::Imm(6 | 4 << 6 | 7 << 11),
            Operand::Imm(4 | 31 << 11),
        ],
        Kind::Sendmsg => vec![Operand::Imm(1), Operand::Imm(3)],
        Kind::GprIdx => vec![Operand::Imm(1), Operand::Imm(0xf), Operand::Imm(0)],
        Kind::SmemOffset => vec![
            Operand::Imm(0),
            Operand::Imm(0x10),
            Operand::Imm(0xfffff),
            Operand::s(5),
            Operand::Special(SpecialReg::M0),
        ],
    }
}

fn nsrc(infos: &[OperandInfo]) -> u32 {
    infos
        .iter()
        .filter(|o| matches!(o.slot, Slot::Src0 | Slot::Src1 | Slot::Src2))
        .count() as u32
}

/// Modifier variants of one form (the first is the default).
fn modifier_variants(
    op: Opcode,
    enc: Encoding,
    infos: &[OperandInfo],
    t: Target,
) -> Vec<Modifiers> {
    let info = op.info();
    let base = Modifiers::default_for(op);
    let mut out = vec![base];
    let n = nsrc(infos);
    let srcmask = ((1u32 << n) - 1) as u8;
    let name = info.name;
    let gfx940 = t.is_gfx940_family();
    let mut push = |f: &dyn Fn(&mut Modifiers)| {
        let mut m = base;
        f(&mut m);
        out.push(m);
    };
    match (info.format, enc) {
        (_, Encoding::Dpp) => {
            for (k, ctrl) in [
                0x1b_u16, 0xe4, 0x101, 0x11f, 0x121, 0x130, 0x13c, 0x140, 0x141, 0x142, 0x143,
            ]
            .into_iter()
            .enumerate()
            {
                let fp = info.flags & flags::E64_NEG0 != 0;
                push(&|m: &mut Modifiers| {
                    m.dpp = Dpp {
                        ctrl,
                        row_mask: [0xf, 0xa, 0x3][k % 3],
                        bank_mask: [0xf, 0x5, 0xc][k % 3],
                        bound_ctrl: k % 2 == 1,
                    };
                    if fp && k % 4 == 2 {
                        m.neg = 1;
                    }
                });
            }
            out.remove(0);
        }
        (fmt, Encoding::Sdwa) => {
            let fp = info.flags & flags::E64_NEG0 != 0;
            let nodst = info.flags & flags::SDWA_NO_DST_SEL != 0;
            for k in 0..7u8 {
                push(&|m: &mut Modifiers| {
                    m.sdwa = Sdwa {
                        dst_sel: if fmt == Format::Vopc || nodst {
                            6
                        } else {
                            [6, 0, 5, 4, 3, 6, 1][k as usize]
                        },
                        dst_unused: if fmt == Format::Vopc || nodst {
                            0
                        } else {
                            [0, 1, 2, 0, 1, 2, 0][k as usize]
                        },
                        src0_sel: [6, 1, 4, 5, 0, 2, 3][k as usize],
                        src1_sel: if n > 1 {
                            [6, 0, 5, 4, 6, 3, 2][k as usize]
                        } else {
                            0
                        },
                        sext: if !fp && !nodst && k == 3 { 1 } else { 0 },
                    };
                    if fp && k == 4 {
                        m.neg = 1;
                    }
                    if fmt != Format::Vopc && k == 5 && info.flags & flags::E64_CLAMP != 0 {
                        m.clamp = true;
                    }
                });
            }
            out.remove(0);
        }
        (Format::Vop3, _) | (_, Encoding::E64) => {
            let e = if enc == Encoding::E64 {
                flags::E64_SHIFT
            } else {
                0
            };
            let f = info.flags >> e;
            let absm = (f & flags::ABS) as u8 & srcmask;
            let negm = ((f & flags::NEG) >> 3) as u8 & srcmask;
            if absm != 0 {
                push(&|m: &mut Modifiers| m.abs = absm);
                push(&|m: &mut Modifiers| m.abs = absm & absm.wrapping_neg());
            }
            if negm != 0 {
                push(&|m: &mut Modifiers| m.neg = negm & 0b110);
                push(&|m: &mut Modifiers| {
                    m.neg = negm;
                    m.abs = absm & 1;
                });
            }
            if f & flags::CLAMP != 0 {
                push(&|m: &mut Modifiers| m.clamp = true);
            }
            if f & flags::OMOD != 0 {
                for o in 1..=3 {
                    push(&|m: &mut Modifiers| {
                        m.omod = o;
                        m.clamp = o == 2 && f & flags::CLAMP != 0;
                    });
                }
            }
            if f & flags::OP_SEL != 0 {
                push(&|m: &mut Modifiers| m.op_sel = 0b1000 | (srcmask & 1));
                push(&|m: &mut Modifiers| m.op_sel = srcmask & 0b110);
            }
        }
        (Format::Vop3p, _)
            if info.is_mfma() && !name.starts_with("v_smfmac") && !name.contains("f64") =>
        {
            push(&|m: &mut Modifiers| m.cbsz = 1);
            push(&|m: &mut Modifiers| m.abid = 1);
            push(&|m: &mut Modifiers| m.blgp = 2);
        }
        (Format::Vop3p, _) => {
            if name.starts_with("v_accvgpr") {
                return out;
            }
            let f = info.flags;
            let absm = (f & flags::ABS) as u8 & srcmask;
            let negm = ((f & flags::NEG) >> 3) as u8 & srcmask;
            if f & flags::OP_SEL != 0 {
                push(&|m: &mut Modifiers| m.op_sel = srcmask & 0b101);
            }
            if !name.starts_with("v_dot") {
                push(&|m: &mut Modifiers| m.op_sel_hi = srcmask & 0b010);
                push(&|m: &mut Modifiers| m.op_sel_hi = if info.is_mix() { srcmask } else { 0 });
            }
            if negm != 0 {
                push(&|m: &mut Modifiers| m.neg = negm & 0b011);
            }
            if absm != 0 {
                push(&|m: &mut Modifiers| m.abs = absm & 0b110);
            }
            if f & flags::NEG_HI != 0 {
                push(&|m: &mut Modifiers| m.neg_hi = srcmask & 0b110);
            }
            if f & flags::CLAMP != 0 {
                push(&|m: &mut Modifiers| m.clamp = true);
            }
        }
        (Format::Smem, _)
            if (name.contains("load") || name.contains("store") || name.contains("atomic")) =>
        {
            push(&|m: &mut Modifiers| m.glc = true);
        }
        (Format::Ds, _) => {
            let two = name.starts_with("ds_read2")
                || name.starts_with("ds_write2")
                || name.starts_with("ds_wrxchg2");
            if two {
                push(&|m: &mut Modifiers| m.offset = 1);
                push(&|m: &mut Modifiers| m.offset1 = 255);
                push(&|m: &mut Modifiers| {
                    m.offset = 7;
                    m.offset1 = 8
                });
            } else if name == "ds_swizzle_b32" {
                // canonical swizzle patterns (LLVM prints non-canonical bitmasks lossily)
                for v in [0x041f, 0x80e4, 0x0078, 0x1224, 0x0c1f] {
                    push(&|m: &mut Modifiers| m.offset = v);
                }
            } else {
                push(&|m: &mut Modifiers| m.offset = 4);
                push(&|m: &mut Modifiers| m.offset = 65535);
                push(&|m: &mut Modifiers| m.offset = 0x1234);
            }
            if t == Target::Gfx900
                && (name == "ds_add_u32" || name == "ds_read_b32" || name == "ds_write_b64")
            {
                push(&|m: &mut Modifiers| m.gds = true);
            }
        }
        (Format::Mubuf | Format::Mtbuf, _) if infos.is_empty() => {}
        (Format::Mubuf | Format::Mtbuf, _) => {
            let mtbuf = info.format == Format::Mtbuf;
            push(&|m: &mut Modifiers| m.offen = true);
            push(&|m: &mut Modifiers| {
                m.idxen = true;
                m.offset = 4095;
            });
            push(&|m: &mut Modifiers| {
                m.idxen = true;
                m.offen = true;
                m.glc = true;
            });
            push(&|m: &mut Modifiers| {
                m.offen = true;
                m.slc = true;
                m.offset = 12;
            });
            if gfx940 {
                push(&|m: &mut Modifiers| {
                    m.sc1 = !mtbuf;
                    m.glc = true;
                    m.slc = true;
                });
            }
            if mtbuf {
                for (d, nf) in [(4u8, 7u8), (1, 4), (14, 0), (0, 5)] {
                    push(&|m: &mut Modifiers| {
                        m.dfmt = d;
                        m.nfmt = nf;
                        m.offen = d == 4;
                    });
                }
            }
            // defaults of MTBUF are dfmt 1 (BUF_DATA_FORMAT_8), nfmt 0
            if mtbuf {
                for m in out.iter_mut() {
                    if m.dfmt == 0 && m.nfmt == 0 {
                        m.dfmt = 1;
                    }
                }
            }
        }
        (Format::Flat | Format::Global | Format::Scratch, _) => {
            let flat = info.format == Format::Flat;
            push(&|m: &mut Modifiers| m.offset = 4095);
            if !flat {
                push(&|m: &mut Modifiers| m.offset = -4096);
                push(&|m: &mut Modifiers| m.offset = -1);
            }
            push(&|m: &mut Modifiers| m.slc = true);
            if gfx940 {
                push(&|m: &mut Modifiers| m.sc1 = true);
            }
            if !info.is_flat_atomic() {
                push(&|m: &mut Modifiers| {
                    m.glc = true;
                    m.offset = 16;
                });
            } else {
                // the returning form
                push(&|m: &mut Modifiers| m.glc = true);
                push(&|m: &mut Modifiers| {
                    m.glc = true;
                    m.slc = true;
                    m.offset = 8;
                });
            }
        }
        _ => {}
    }
    out
}

/// All forms (encodings) of `op` on `t`.
pub fn forms(op: Opcode, t: Target) -> Vec<Encoding> {
    let info = op.info();
    let mut v = Vec::new();
    if info.opcode_on(t).is_some() {
        v.push(Encoding::Native);
        if info.has_dpp(t) {
            v.push(Encoding::Dpp);
        }
        if info.has_sdwa(t) {
            v.push(Encoding::Sdwa);
        }
    }
    if info.e64_opcode_on(t).is_some() {
        v.push(Encoding::E64);
    }
    v
}

/// Operand/modifier variants of every form of every instruction on `t`. Not all are valid:
/// callers encode them and keep what the encoder accepts.
pub fn variants(t: Target, per_form: usize) -> Vec<Inst> {
    let mut out = Vec::new();
    for op in Opcode::all() {
        let info = op.info();
        // Graphics-only and trap-handler instructions kjit never emits and LLVM's assembler
        // restricts in ways unrelated to encoding.
        if info.name.starts_with("s_cbranch_i_fork")
            || info.name.starts_with("s_cbranch_join")
            || info.name.starts_with("ds_gws")
            || info.name == "ds_ordered_count"
            || info.name == "s_cbranch_g_fork"
        {
            continue;
        }
        for enc in forms(op, t) {
            let mods_list = modifier_variants(
                op,
                enc,
                kjit_backend_gcn::isa::operand_infos(op, enc, false),
                t,
            );
            let literal_ok = enc == Encoding::Native
                && matches!(
                    info.format,
                    Format::Sop1
                        | Format::Sop2
                        | Format::Sopc
                        | Format::Vop1
                        | Format::Vop2
                        | Format::Vopc
                );
            for (k, mods) in mods_list.iter().enumerate() {
                let infos = kjit_backend_gcn::isa::operand_infos(op, enc, mods.glc);
                let pools: Vec<Vec<Operand>> = infos
                    .iter()
                    .map(|oi| pool(op, enc, oi, t, literal_ok))
                    .collect();
                let count = if k == 0 { per_form } else { 2 };
                for v in 0..count {
                    let mut operands = Vec::new();
                    for (i, p) in pools.iter().enumerate() {
                        // variant 0 of the default modifiers takes every pool's first value
                        let idx = if v == 0 && k == 0 {
                            0
                        } else {
                            (v * (3 + 2 * i) + i * 5 + k * 7) % p.len().max(1)
                        };
                        let mut o = p.get(idx).copied().unwrap_or(Operand::Off);
                        // optional addresses: MUBUF vaddr without offen/idxen, global/scratch off
                        let oi = &infos[i];
                        if oi.slot == Slot::Vaddr && !mods.offen && !mods.idxen {
                            o = Operand::Off;
                        }
                        if oi.slot == Slot::Vaddr && mods.offen && mods.idxen {
                            if let Operand::Vgpr { first, .. } = o {
                                o = Operand::vr(first & !1, 2);
                            }
                        }
                        if oi.slot == Slot::Saddr && v % 3 == 0 {
                            o = Operand::Off;
                        }
                        if oi.slot == Slot::Vdata && mods.tfe {
                            if let Operand::Vgpr { first, count } = o {
                                o = Operand::vr(first, count + 1);
                            }
                        }
                        operands.push(o);
                    }
                    // one ACC bit: MFMA srcC in the destination's file; memory data all in one file
                    let dst_is_agpr = operands
                        .first()
                        .is_some_and(|o| matches!(o, Operand::Agpr { .. }));
                    for (i, oi) in infos.iter().enumerate() {
                        let make = |o: Operand, agpr: bool| match o {
                            Operand::Vgpr { first, count } | Operand::Agpr { first, count } => {
                                if agpr {
                                    Operand::Agpr { first, count }
                                } else {
                                    Operand::Vgpr { first, count }
                                }
                            }
                            other => other,
                        };
                        if info.is_mfma() && oi.slot == Slot::Src2 {
                            // srcC is the destination itself, or disjoint from it
                            operands[i] = if v % 2 == 0 {
                                operands[0]
                            } else {
                                match make(operands[i], dst_is_agpr) {
                                    Operand::Vgpr { count, .. } if !dst_is_agpr => {
                                        Operand::vr(256 - count as u16, count)
                                    }
                                    Operand::Agpr { count, .. } => {
                                        Operand::ar(256 - count as u16, count)
                                    }
                                    o => o,
                                }
                            };
                            if matches!(operands[0], Operand::Vgpr { first, count } if first as u32 + count as u32 > 256 - 32)
                            {
                                operands[0] = match operands[0] {
                                    Operand::Vgpr { count, .. } => Operand::vr(0, count),
                                    o => o,
                                };
                            }
                        }
                        let mem = matches!(
                            info.format,
                            Format::Ds
                                | Format::Mubuf
                                | Format::Mtbuf
                                | Format::Flat
                                | Format::Global
                                | Format::Scratch
                        );
                        if mem && oi.kind == Kind::AvReg {
                            operands[i] = make(operands[i], v % 4 == 3 && t.has_agprs());
                        }
                    }
                    // global with an SGPR base uses a 32-bit VGPR offset
                    if matches!(info.format, Format::Global) {
                        let saddr = infos.iter().position(|o| o.slot == Slot::Saddr);
                        let addr = infos.iter().position(|o| o.slot == Slot::Addr);
                        if let (Some(s), Some(a)) = (saddr, addr) {
                            if operands[s] != Operand::Off {
                                if let Operand::Vgpr { first, .. } = operands[a] {
                                    operands[a] = Operand::v(first);
                                }
                            }
                        }
                    }
                    // scratch: gfx9 needs exactly one of vaddr / saddr
                    if matches!(info.format, Format::Scratch) {
                        let saddr = infos.iter().position(|o| o.slot == Slot::Saddr);
                        let addr = infos.iter().position(|o| o.slot == Slot::Addr);
                        if let (Some(s), Some(a)) = (saddr, addr) {
                            if operands[s] != Operand::Off {
                                operands[a] = Operand::Off;
                            } else if v % 2 == 1 && t.is_gfx940_family() {
                                operands[a] = Operand::Off;
                            }
                        }
                    }
                    out.push(Inst {
                        op,
                        operands: operands.into_iter().collect(),
                        encoding: enc,
                        mods: *mods,
                    });
                }
            }
        }
    }
    out
}

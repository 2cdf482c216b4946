//! The list scheduler on hand-built machine IR: loads move up past independent ALU work, and
//! nothing moves across what it depends on (vreg def-use, SCC, memory order, barriers).

use kjit_backend_gcn::codeobj::metadata::KernelMeta;
use kjit_backend_gcn::isa::{Opcode, Operand};
use kjit_backend_gcn::mir::{KernelAbi, MInst, MOperand, MachineFunction, RegClass};
use kjit_backend_gcn::schedule::{schedule, schedule_bounded};
use kjit_backend_gcn::Target;

use MOperand::{Def, Phys, Use};

fn mf() -> MachineFunction {
    MachineFunction::new(KernelAbi {
        target: Target::Gfx942,
        meta: KernelMeta::new("t"),
        workgroup_ids: [false; 3],
        workitem_dims: 1,
        lds_bytes: 256,
    })
}

fn names(f: &MachineFunction) -> Vec<String> {
    let b = f.entry();
    f.blocks[b]
        .insts
        .iter()
        .map(|i| match i.opcode {
            kjit_backend_gcn::mir::MOpcode::Isa(op) => op.name().to_string(),
            other => format!("{other:?}"),
        })
        .collect()
}

fn buffer_load(
    dst: kjit_backend_gcn::mir::VReg,
    addr: kjit_backend_gcn::mir::VReg,
    rsrc: kjit_backend_gcn::mir::VReg,
) -> MInst {
    let mut i = MInst::isa(
        Opcode::BufferLoadDword,
        &[Def(dst), Use(addr), Use(rsrc), Phys(Operand::InlineInt(0))],
    );
    i.mods.offen = true;
    i
}

#[test]
fn a_load_moves_above_independent_alu_work_and_its_user_stays_below() {
    let mut f = mf();
    let b = f.block();
    let rsrc = f.vreg(RegClass::Sgpr, 4);
    let a = f.vreg(RegClass::Vgpr, 1);
    let x: Vec<_> = (0..4).map(|_| f.vreg(RegClass::Vgpr, 1)).collect();
    let l = f.vreg(RegClass::Vgpr, 1);
    let s = f.vreg(RegClass::Vgpr, 1);
    let insts = vec![
        MInst::pseudo(kjit_backend_gcn::mir::MOpcode::ImplicitDef, &[Def(rsrc)]),
        MInst::isa(Opcode::VMovB32, &[Def(a), Phys(Operand::InlineInt(4))]),
        MInst::isa(
            Opcode::VAddU32,
            &[Def(x[0]), Phys(Operand::InlineInt(1)), Use(a)],
        ),
        MInst::isa(
            Opcode::VAddU32,
            &[Def(x[1]), Phys(Operand::InlineInt(1)), Use(x[0])],
        ),
        MInst::isa(
            Opcode::VAddU32,
            &[Def(x[2]), Phys(Operand::InlineInt(1)), Use(x[1])],
        ),
        buffer_load(l, a, rsrc),
        MInst::isa(Opcode::VAddU32, &[Def(s), Use(x[2]), Use(l)]),
    ];
    f.blocks[b].insts = insts;
    schedule(&mut f);
    let n = names(&f);
    let load = n.iter().position(|s| s == "buffer_load_dword").unwrap();
    assert_eq!(load, 2, "{n:?}");
    assert_eq!(n.last().unwrap(), "v_add_u32");
    kjit_backend_gcn::mir_verify::verify(&f).unwrap();
}

#[test]
fn loads_do_not_pass_stores_of_the_same_space_nor_barriers() {
    let mut f = mf();
    let b = f.block();
    let addr = f.vreg(RegClass::Vgpr, 1);
    let v = f.vreg(RegClass::Vgpr, 1);
    let r1 = f.vreg(RegClass::Vgpr, 1);
    let r2 = f.vreg(RegClass::Vgpr, 1);
    let insts = vec![
        MInst::isa(Opcode::VMovB32, &[Def(addr), Phys(Operand::InlineInt(0))]),
        MInst::isa(Opcode::VMovB32, &[Def(v), Phys(Operand::InlineInt(7))]),
        MInst::isa(Opcode::DsWriteB32, &[Use(addr), Use(v)]),
        MInst::isa(Opcode::DsReadB32, &[Def(r1), Use(addr)]),
        MInst::isa(Opcode::SBarrier, &[]),
        MInst::isa(Opcode::DsReadB32, &[Def(r2), Use(addr)]),
    ];
    f.blocks[b].insts = insts;
    schedule(&mut f);
    let n = names(&f);
    let w = n.iter().position(|s| s == "ds_write_b32").unwrap();
    let bar = n.iter().position(|s| s == "s_barrier").unwrap();
    let reads: Vec<_> = n
        .iter()
        .enumerate()
        .filter(|(_, s)| *s == "ds_read_b32")
        .map(|(i, _)| i)
        .collect();
    assert!(w < reads[0] && reads[0] < bar && bar < reads[1], "{n:?}");
}

#[test]
fn scc_producer_and_consumer_keep_their_order() {
    let mut f = mf();
    let b = f.block();
    let s0 = f.vreg(RegClass::Sgpr, 1);
    let s1 = f.vreg(RegClass::Sgpr, 1);
    let s2 = f.vreg(RegClass::Sgpr, 1);
    let s3 = f.vreg(RegClass::Sgpr, 1);
    let mut cmp = MInst::isa(Opcode::SCmpLgU32, &[Use(s0), Phys(Operand::InlineInt(0))]);
    cmp.implicit_defs = kjit_backend_gcn::mir::implicit::SCC;
    let mut sel = MInst::isa(
        Opcode::SCselectB32,
        &[
            Def(s2),
            Phys(Operand::InlineInt(1)),
            Phys(Operand::InlineInt(0)),
        ],
    );
    sel.implicit_uses = kjit_backend_gcn::mir::implicit::SCC;
    let insts = vec![
        MInst::isa(Opcode::SMovB32, &[Def(s0), Phys(Operand::InlineInt(3))]),
        cmp,
        sel,
        MInst::isa(
            Opcode::SAddU32,
            &[Def(s1), Use(s0), Phys(Operand::InlineInt(1))],
        ),
        MInst::isa(Opcode::SAddU32, &[Def(s3), Use(s1), Use(s2)]),
    ];
    f.blocks[b].insts = insts.clone();
    schedule(&mut f);
    // s_add_u32 clobbers SCC: it may not move between the compare and the select, although
    // its height (it feeds the last add) would put it first otherwise.
    let n = names(&f);
    let c = n.iter().position(|s| s == "s_cmp_lg_u32").unwrap();
    let s = n.iter().position(|s| s == "s_cselect_b32").unwrap();
    assert_eq!(s, c + 1, "{n:?}");
}

/// Regression (random_programs, u64 output): a VGPR `Build` (two `v_mov`s after allocation)
/// was not taken to read EXEC, so the latency priority of a load behind an EXEC write pulled
/// the write above it and the build ran under the narrowed mask, leaving inactive lanes stale.
#[test]
fn a_vgpr_build_never_moves_below_an_exec_write() {
    use kjit_backend_gcn::isa::SpecialReg;
    use kjit_backend_gcn::mir::MOpcode;
    let mut f = mf();
    let b = f.block();
    let rsrc = f.vreg(RegClass::Sgpr, 4);
    let mask = f.vreg(RegClass::Sgpr, 2);
    let (lo, hi) = (f.vreg(RegClass::Vgpr, 1), f.vreg(RegClass::Vgpr, 1));
    let pair = f.vreg(RegClass::Vgpr, 2);
    let l = f.vreg(RegClass::Vgpr, 1);
    f.blocks[b].insts = vec![
        MInst::pseudo(MOpcode::ImplicitDef, &[Def(rsrc)]),
        MInst::pseudo(MOpcode::ImplicitDef, &[Def(mask)]),
        MInst::isa(Opcode::VMovB32, &[Def(lo), Phys(Operand::InlineInt(1))]),
        MInst::isa(Opcode::VMovB32, &[Def(hi), Phys(Operand::InlineInt(2))]),
        MInst::pseudo(MOpcode::Build, &[Def(pair), Use(lo), Use(hi)]),
        MInst::isa(
            Opcode::SMovB64,
            &[Phys(Operand::Special(SpecialReg::Exec)), Use(mask)],
        ),
        buffer_load(l, lo, rsrc),
    ];
    schedule(&mut f);
    let n = names(&f);
    let build = n.iter().position(|s| s == "Build").unwrap();
    let exec = n.iter().position(|s| s == "s_mov_b64").unwrap();
    assert!(build < exec, "{n:?}");
    kjit_backend_gcn::mir_verify::verify(&f).unwrap();
}

/// Most VGPRs live at once in the single block of `f` (nothing is live out).
fn vgpr_pressure(f: &MachineFunction) -> u32 {
    let b = f.entry();
    let mut live = std::collections::HashSet::new();
    let mut most = 0;
    for i in f.blocks[b].insts.iter().rev() {
        for d in i.defs() {
            live.insert(d);
        }
        let count = |live: &std::collections::HashSet<_>| {
            live.iter()
                .filter(|v: &&kjit_backend_gcn::mir::VReg| f.vregs[**v].class == RegClass::Vgpr)
                .map(|v| f.vregs[*v].dwords as u32)
                .sum::<u32>()
        };
        most = most.max(count(&live));
        for d in i.defs() {
            live.remove(&d);
        }
        for u in i.uses() {
            live.insert(u);
        }
        most = most.max(count(&live));
    }
    most
}

/// 24 independent "load, then add into a running sum" chains: the latency schedule issues
/// every load first (24 loaded values live at once); bounded at 12 VGPRs the scheduler holds
/// the live VGPRs within 12 and still keeps every dependence (the verifier and the sum chain).
#[test]
fn a_pressure_bound_keeps_hoisted_loads_inside_the_limit() {
    let build = || {
        let mut f = mf();
        let b = f.block();
        let rsrc = f.vreg(RegClass::Sgpr, 4);
        let a = f.vreg(RegClass::Vgpr, 1);
        let mut insts = vec![
            MInst::pseudo(kjit_backend_gcn::mir::MOpcode::ImplicitDef, &[Def(rsrc)]),
            MInst::isa(Opcode::VMovB32, &[Def(a), Phys(Operand::InlineInt(4))]),
        ];
        let mut sum = a;
        for _ in 0..24 {
            let l = f.vreg(RegClass::Vgpr, 1);
            let s = f.vreg(RegClass::Vgpr, 1);
            insts.push(buffer_load(l, a, rsrc));
            insts.push(MInst::isa(Opcode::VAddU32, &[Def(s), Use(sum), Use(l)]));
            sum = s;
        }
        let mut store = MInst::isa(
            Opcode::BufferStoreDword,
            &[Use(sum), Use(a), Use(rsrc), Phys(Operand::InlineInt(0))],
        );
        store.mods.offen = true;
        insts.push(store);
        f.blocks[b].insts = insts;
        f
    };
    let mut latency = build();
    schedule(&mut latency);
    assert!(vgpr_pressure(&latency) > 20, "{:?}", names(&latency));
    let mut bounded = build();
    schedule_bounded(&mut bounded, Some(12));
    let p = vgpr_pressure(&bounded);
    assert!(p <= 12, "pressure {p}: {:?}", names(&bounded));
    // Still hoisted as far as the bound allows: several loads before the first add.
    let n = names(&bounded);
    let first_add = n.iter().position(|s| s == "v_add_u32").unwrap();
    assert!(
        n[..first_add]
            .iter()
            .filter(|s| *s == "buffer_load_dword")
            .count()
            >= 8,
        "{n:?}"
    );
    kjit_backend_gcn::mir_verify::verify(&bounded).unwrap();
}

/// A dot product over 32 LDS reads (matmul's inner loop): the latency schedule issues reads
/// only until a ready FMA's two reads are known back — `lgkmcnt` counts at most 15, so a read
/// is back once 15 later ones have issued — and then runs that FMA before the next read. Each
/// FMA therefore needs no `s_waitcnt`, and at most 17 read results wait in VGPRs (all 32 were
/// hoisted before, holding 32 VGPRs for no latency gained: the 16th read stalled issue anyway).
#[test]
fn lds_reads_are_issued_only_until_a_consumers_reads_are_known_back() {
    use kjit_backend_gcn::mir::Terminator;
    let mut f = mf();
    // The accumulator comes in as a block parameter (the loop's phi), ready from the start.
    let (e, b) = (f.block(), f.block());
    let (acc0, addr) = (f.vreg(RegClass::Vgpr, 1), f.vreg(RegClass::Vgpr, 1));
    f.blocks[e].insts = [acc0, addr]
        .map(|v| MInst::isa(Opcode::VMovB32, &[Def(v), Phys(Operand::InlineInt(0))]))
        .to_vec();
    f.blocks[e].term = Terminator::Jump {
        target: b,
        args: vec![acc0],
    };
    let mut acc = f.vreg(RegClass::Vgpr, 1);
    f.blocks[b].params.push(acc);
    let mut insts = Vec::new();
    for i in 0..16 {
        let (x, y, next) = (
            f.vreg(RegClass::Vgpr, 1),
            f.vreg(RegClass::Vgpr, 1),
            f.vreg(RegClass::Vgpr, 1),
        );
        for (d, off) in [(x, 4 * i), (y, 1024 + 64 * i)] {
            let mut r = MInst::isa(Opcode::DsReadB32, &[Def(d), Use(addr)]);
            r.mods.offset = off;
            insts.push(r);
        }
        insts.push(MInst::isa(
            Opcode::VFmaF32,
            &[Def(next), Use(x), Use(y), Use(acc)],
        ));
        acc = next;
    }
    f.blocks[b].insts = insts;
    schedule(&mut f);
    kjit_backend_gcn::mir_verify::verify(&f).unwrap();
    let n: Vec<&str> = f.blocks[b]
        .insts
        .iter()
        .map(|i| match i.opcode {
            kjit_backend_gcn::mir::MOpcode::Isa(op) => op.name(),
            _ => "pseudo",
        })
        .collect();
    // Reads issued before each FMA, and read results not yet consumed at each point.
    let (mut reads, mut unread, mut most) = (0, 0, 0);
    let mut before_fma = Vec::new();
    for s in &n {
        match *s {
            "ds_read_b32" => {
                reads += 1;
                unread += 1;
                most = most.max(unread);
            }
            "v_fma_f32" => {
                before_fma.push(reads);
                unread -= 2;
            }
            _ => {}
        }
    }
    assert_eq!(most, 17, "{n:?}");
    // FMA i reads reads 2i and 2i + 1; the 15 after them have issued.
    for (i, &r) in before_fma.iter().enumerate().take(8) {
        assert_eq!(r, (2 * i + 2 + 15).min(32), "FMA {i}: {n:?}");
    }
}

//! Register allocation on hand-built MIR: every test allocates with regalloc2's checker on,
//! checks tuple alignment and the reported usage, and runs the MIR and the allocated code in a
//! small wave interpreter (registers the allocator never wrote are poisoned) expecting the
//! same stores.

mod regalloc_common;

use kjit_backend_gcn::isa::{Opcode, Operand, SpecialReg};
use kjit_backend_gcn::mir::{
    AbiValue, BranchCond, MBlock, MInst, MOpcode, MOperand, RegClass, Terminator, VReg,
};
use kjit_backend_gcn::regalloc::{allocate, RegallocError, RegallocOptions};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_backend_gcn::Target;
use regalloc_common::*;

fn vadd(
    mf: &mut kjit_backend_gcn::mir::MachineFunction,
    b: MBlock,
    a: MOperand,
    x: MOperand,
) -> VReg {
    let v = mf.vreg(RegClass::Vgpr, 1);
    push(mf, b, isa(Opcode::VAddU32, &[d(v), a, x]));
    v
}

#[test]
fn straight_line_singles_and_live_ins_on_every_target() {
    for t in ALL_TARGETS {
        let mut mf = func(t);
        let e = mf.entry();
        let (_kp, tid, rsrc) = prologue(&mut mf);
        let wg = livein(&mut mf, AbiValue::WorkgroupId(0));
        let wgz = livein(&mut mf, AbiValue::WorkgroupId(2));
        // move LiveIns of workgroup ids to the front: LiveIns must be a prefix
        let ins = std::mem::take(&mut mf.blocks[e].insts);
        let (mut li, rest): (Vec<_>, Vec<_>) = ins
            .into_iter()
            .partition(|i| matches!(i.opcode, MOpcode::LiveIn(_)));
        li.extend(rest);
        mf.blocks[e].insts = li;
        let s = mf.vreg(RegClass::Sgpr, 1);
        push(&mut mf, e, isa(Opcode::SAddU32, &[d(s), u(wg), u(wgz)]));
        let a = vadd(&mut mf, e, u(s), u(tid));
        let b2 = vadd(&mut mf, e, c(5), u(a));
        out(&mut mf, e, rsrc, a, 0);
        out(&mut mf, e, rsrc, b2, 4);
        let f = alloc_and_compare(&mf, None, Inputs::default());
        assert!(f.user_sgprs.kernarg_segment_ptr && !f.user_sgprs.private_segment_buffer);
        assert_eq!(f.scratch_wave_offset_sgpr, None);
        assert_eq!(f.abi.workgroup_ids, [true, false, true]);
        assert_eq!(f.usage.spills(), 0);
        assert!(f.usage.vgprs >= 1 && f.usage.vgprs <= 3, "{:?}", f.usage);
    }
}

/// `n` values live at once: v_i = tid + i, then a running sum over all of them and a store of
/// every value, so all of them stay live across the sum.
fn pressure_kernel(t: Target, n: u32) -> kjit_backend_gcn::mir::MachineFunction {
    let mut mf = func(t);
    let e = mf.entry();
    let (_kp, tid, rsrc) = prologue(&mut mf);
    let mut vals = Vec::new();
    for i in 0..n {
        let k = mf.vreg(RegClass::Vgpr, 1);
        push(
            &mut mf,
            e,
            isa(Opcode::VMulLoU32, &[d(k), u(tid), c((i % 60) as i8 + 3)]),
        );
        let v = vadd(&mut mf, e, lit(i * 1000 + 1), u(k));
        vals.push(v);
    }
    let mut acc = vals[0];
    for &v in &vals[1..] {
        acc = vadd(&mut mf, e, u(acc), u(v));
    }
    out(&mut mf, e, rsrc, acc, 0);
    for (i, &v) in vals.iter().enumerate() {
        out(&mut mf, e, rsrc, v, 4 * (i as i32 + 1));
    }
    mf
}

#[test]
fn more_than_64_live_vgprs_spill_to_spare_vgprs_then_agprs_then_scratch() {
    for t in ALL_TARGETS {
        let mf = pressure_kernel(t, 100);
        // Without a budget the singles beyond regalloc2's 64-register `Float` class go to a
        // second class (regalloc/overflow.rs): registers, no spill slots.
        let f = alloc_and_compare(&mf, None, Inputs::default());
        assert!(f.usage.vgprs > 64, "{t}: {:?}", f.usage);
        assert_eq!(
            f.usage.spills_to_vgprs + f.usage.spills_to_agprs + f.usage.spills_to_scratch,
            0,
            "{t}: {:?}",
            f.usage
        );
        let mut last = u32::MAX;
        for budget in [128u32, 96, 84, 64, 48, 32] {
            let f = alloc_and_compare(&mf, Some(budget), Inputs::default());
            let used = if t.has_agprs() {
                f.usage.vgprs.div_ceil(4) * 4 + f.usage.agprs
            } else {
                f.usage.vgprs
            };
            eprintln!("{t} budget {budget}: {:?}", f.usage);
            assert!(used <= budget);
            assert!(f.usage.vgprs <= last);
            last = f.usage.vgprs;
            if budget <= 64 {
                assert!(f.usage.spills_to_scratch > 0, "{t} {budget}: {:?}", f.usage);
                assert!(f.usage.scratch_bytes >= 4 * f.usage.spills_to_scratch);
                if t != Target::Gfx942 {
                    assert!(f.user_sgprs.private_segment_buffer);
                    assert!(f.scratch_wave_offset_sgpr.is_some());
                } else {
                    assert!(!f.user_sgprs.private_segment_buffer);
                    assert!(count_op(&f, Opcode::ScratchStoreDword) > 0);
                }
            }
        }
    }
}

/// The AGPR tier: more live values than the 256 architectural VGPRs hold, on the unified
/// register file of gfx90a/gfx942 (512 entries per lane without a budget). Slots beyond the spare
/// VGPRs go to AGPRs (`v_accvgpr_write/read`) before scratch, the usage says how many of each,
/// and the allocated code stores what the MIR stores.
#[test]
fn beyond_256_live_vgprs_slots_go_to_agprs_before_scratch() {
    for t in [Target::Gfx90a, Target::Gfx942] {
        let mf = pressure_kernel(t, 300);
        let f = alloc_and_compare(&mf, None, Inputs::default());
        eprintln!("{t}: {:?}", f.usage);
        assert!(f.usage.vgprs <= 256, "{t}: {:?}", f.usage);
        assert!(f.usage.spills_to_agprs > 0, "{t}: {:?}", f.usage);
        assert!(f.usage.agprs > 0, "{t}: {:?}", f.usage);
        assert_eq!(f.usage.spills_to_scratch, 0, "{t}: {:?}", f.usage);
        assert_eq!(f.usage.scratch_bytes, 0, "{t}: {:?}", f.usage);
        assert!(count_op(&f, Opcode::VAccvgprWriteB32) > 0, "{t}");
        assert!(count_op(&f, Opcode::VAccvgprReadB32) > 0, "{t}");
    }
}

#[test]
fn budget_below_what_one_instruction_needs_is_an_error() {
    let mf = pressure_kernel(Target::Gfx942, 4);
    let r = allocate(
        &mf,
        &RegallocOptions {
            vgpr_budget: Some(1),
            sgpr_budget: None,
            run_checker: true,
        },
    );
    assert!(
        matches!(r, Err(RegallocError::BudgetTooSmall { .. })),
        "{r:?}"
    );
}

#[test]
fn sgpr_and_vgpr_tuples_are_aligned_and_built_and_extracted() {
    for t in ALL_TARGETS {
        let mut mf = func(t);
        let e = mf.entry();
        let (kp, tid, rsrc) = prologue(&mut mf);
        // a second quad and a pair from the kernarg segment
        let q2 = mf.vreg(RegClass::Sgpr, 4);
        push(
            &mut mf,
            e,
            isa(
                Opcode::SLoadDwordx4,
                &[d(q2), u(kp), MOperand::Phys(Operand::Imm(16))],
            ),
        );
        let p = mf.vreg(RegClass::Sgpr, 2);
        push(
            &mut mf,
            e,
            isa(
                Opcode::SLoadDwordx2,
                &[d(p), u(kp), MOperand::Phys(Operand::Imm(32))],
            ),
        );
        let s1 = mf.vreg(RegClass::Sgpr, 1);
        push(
            &mut mf,
            e,
            MInst::pseudo(MOpcode::Extract(1), &[d(s1), u(p)]),
        );
        let s3 = mf.vreg(RegClass::Sgpr, 1);
        push(
            &mut mf,
            e,
            MInst::pseudo(MOpcode::Extract(3), &[d(s3), u(q2)]),
        );
        // VGPR pairs from singles, 64-bit add, halves back
        let a = vadd(&mut mf, e, u(s1), u(tid));
        let b = vadd(&mut mf, e, u(s3), u(tid));
        let pa = mf.vreg(RegClass::Vgpr, 2);
        push(
            &mut mf,
            e,
            MInst::pseudo(MOpcode::Build, &[d(pa), u(a), u(b)]),
        );
        let pb = mf.vreg(RegClass::Vgpr, 2);
        push(
            &mut mf,
            e,
            MInst::pseudo(MOpcode::Build, &[d(pb), u(b), u(tid)]),
        );
        let ps = mf.vreg(RegClass::Vgpr, 2);
        push(&mut mf, e, isa(Opcode::VAddF64, &[d(ps), u(pa), u(pb)]));
        // a 4-VGPR tuple (web) built from the pair and singles
        let q = mf.vreg(RegClass::Vgpr, 4);
        push(
            &mut mf,
            e,
            MInst::pseudo(MOpcode::Build, &[d(q), u(ps), u(a), u(b)]),
        );
        for k in 0..4u8 {
            let x = mf.vreg(RegClass::Vgpr, 1);
            push(
                &mut mf,
                e,
                MInst::pseudo(MOpcode::Extract(k), &[d(x), u(q)]),
            );
            out(&mut mf, e, rsrc, x, 4 * k as i32);
        }
        let hi = mf.vreg(RegClass::Vgpr, 1);
        push(
            &mut mf,
            e,
            MInst::pseudo(MOpcode::Extract(1), &[d(hi), u(ps)]),
        );
        out(&mut mf, e, rsrc, hi, 64);
        out(&mut mf, e, q2, a, 128); // a quad used late as a descriptor
        let f = alloc_and_compare(&mf, None, Inputs::default());
        // the kernarg pointer stays where the ABI put it
        let first = &f.blocks[0].insts[0];
        assert_eq!(first.operands[1], Operand::sr(0, 2), "{}", listing(&f));
    }
}

/// Loop: `for (i = 0; i < 10; i++) { acc += i*tid; p64 += (acc, tid); mask pair carried }`,
/// block parameters of every kind, critical edges (the latch branches to the header and exit).
#[test]
fn block_params_across_a_loop_with_critical_edges() {
    for t in ALL_TARGETS {
        let mut mf = func(t);
        let e = mf.entry();
        let (kp, tid, rsrc) = prologue(&mut mf);
        let head = mf.block();
        let exit = mf.block();
        let i0 = mf.vreg(RegClass::Sgpr, 1);
        push(&mut mf, e, isa(Opcode::SMovB32, &[d(i0), c(0)]));
        let acc0 = vadd(&mut mf, e, c(1), u(tid));
        let p0 = mf.vreg(RegClass::Vgpr, 2);
        push(
            &mut mf,
            e,
            MInst::pseudo(MOpcode::Build, &[d(p0), u(acc0), u(tid)]),
        );
        let m0 = mf.vreg(RegClass::Sgpr, 2);
        push(
            &mut mf,
            e,
            isa(
                Opcode::SLoadDwordx2,
                &[d(m0), u(kp), MOperand::Phys(Operand::Imm(8))],
            ),
        );
        mf.blocks[e].term = Terminator::Jump {
            target: head,
            args: vec![i0, acc0, p0, m0],
        };
        let (i, acc, pp, m) = (
            mf.vreg(RegClass::Sgpr, 1),
            mf.vreg(RegClass::Vgpr, 1),
            mf.vreg(RegClass::Vgpr, 2),
            mf.vreg(RegClass::Sgpr, 2),
        );
        mf.blocks[head].params = vec![i, acc, pp, m];
        mf.blocks[head].loop_depth = 1;
        let prod = mf.vreg(RegClass::Vgpr, 1);
        push(
            &mut mf,
            head,
            isa(Opcode::VMulLoU32, &[d(prod), u(i), u(tid)]),
        );
        let acc1 = vadd(&mut mf, head, u(acc), u(prod));
        let q = mf.vreg(RegClass::Vgpr, 2);
        push(
            &mut mf,
            head,
            MInst::pseudo(MOpcode::Build, &[d(q), u(acc1), u(tid)]),
        );
        let pp1 = mf.vreg(RegClass::Vgpr, 2);
        push(&mut mf, head, isa(Opcode::VAddF64, &[d(pp1), u(pp), u(q)]));
        let m1 = mf.vreg(RegClass::Sgpr, 2);
        push(
            &mut mf,
            head,
            isa(Opcode::SOrB64, &[d(m1), u(m), lit(0x40)]),
        );
        let i1 = mf.vreg(RegClass::Sgpr, 1);
        push(&mut mf, head, isa(Opcode::SAddU32, &[d(i1), u(i), c(1)]));
        push(&mut mf, head, isa(Opcode::SCmpLtU32, &[u(i1), c(10)]));
        // the old values of this iteration are also live at the exit: swap-like phis
        mf.blocks[head].term = Terminator::Branch {
            cond: BranchCond::Scc1,
            taken: head,
            taken_args: vec![i1, acc1, pp1, m1],
            not_taken: exit,
            not_taken_args: vec![],
        };
        let lo = mf.vreg(RegClass::Vgpr, 1);
        push(
            &mut mf,
            exit,
            MInst::pseudo(MOpcode::Extract(0), &[d(lo), u(pp1)]),
        );
        let hi = mf.vreg(RegClass::Vgpr, 1);
        push(
            &mut mf,
            exit,
            MInst::pseudo(MOpcode::Extract(1), &[d(hi), u(pp)]),
        );
        let ms = mf.vreg(RegClass::Sgpr, 1);
        push(
            &mut mf,
            exit,
            MInst::pseudo(MOpcode::Extract(1), &[d(ms), u(m)]),
        );
        let x = vadd(&mut mf, exit, u(ms), u(hi));
        out(&mut mf, exit, rsrc, acc1, 0);
        out(&mut mf, exit, rsrc, acc, 4);
        out(&mut mf, exit, rsrc, lo, 8);
        out(&mut mf, exit, rsrc, x, 12);
        let f = alloc_and_compare(&mf, None, Inputs::default());
        assert!(f.blocks.len() > 3, "the critical latch edge was split");
        // and under pressure
        let _ = alloc_and_compare(&mf, Some(16), Inputs::default());
    }
}

/// A divergent `if` (EXEC partial inside) with a tied partial write `z1 = v_add a, b` tied to
/// `z0`, and enough pressure inside the region that the allocator must move or spill VGPRs
/// there: the moves must be whole-wave, or the inactive lanes of values live across the
/// region come out wrong.
#[test]
fn exec_partial_moves_are_whole_wave_and_ties_keep_inactive_lanes() {
    for t in ALL_TARGETS {
        for budget in [None, Some(24)] {
            let mut mf = func(t);
            let e = mf.entry();
            let (_kp, tid, rsrc) = prologue(&mut mf);
            let then = mf.block();
            let join = mf.block();
            let z0 = mf.vreg(RegClass::Vgpr, 1);
            push(&mut mf, e, isa(Opcode::VMovB32, &[d(z0), lit(77)]));
            let mut live = Vec::new();
            for k in 0..30u32 {
                let v = mf.vreg(RegClass::Vgpr, 1);
                push(
                    &mut mf,
                    e,
                    isa(Opcode::VMulLoU32, &[d(v), u(tid), c(k as i8 + 2)]),
                );
                live.push(v);
            }
            let cmp = mf.vreg(RegClass::Sgpr, 2);
            push(
                &mut mf,
                e,
                e64(isa(Opcode::VCmpLtU32, &[d(cmp), u(tid), c(3)])),
            );
            let saved = mf.vreg(RegClass::Sgpr, 2);
            let mut se = isa(Opcode::SAndSaveexecB64, &[d(saved), u(cmp)]);
            se.implicit_defs =
                kjit_backend_gcn::mir::implicit::EXEC | kjit_backend_gcn::mir::implicit::SCC;
            se.implicit_uses = kjit_backend_gcn::mir::implicit::EXEC;
            push(&mut mf, e, se);
            mf.blocks[e].term = Terminator::Branch {
                cond: BranchCond::Execz,
                taken: join,
                taken_args: vec![],
                not_taken: then,
                not_taken_args: vec![],
            };
            mf.blocks[then].exec_partial = true;
            // in the region: a fresh batch of values that are live at once
            let mut inner = Vec::new();
            for k in 0..30u32 {
                let v = mf.vreg(RegClass::Vgpr, 1);
                push(
                    &mut mf,
                    then,
                    isa(Opcode::VAddU32, &[d(v), lit(k), u(live[k as usize])]),
                );
                inner.push(v);
            }
            let mut s = inner[0];
            for &v in &inner[1..] {
                s = vadd(&mut mf, then, u(s), u(v));
            }
            let z1 = mf.vreg(RegClass::Vgpr, 1);
            let mut tie = isa(Opcode::VAddU32, &[d(z1), u(s), u(tid), u(z0)]);
            tie.tied = Some((0, 3));
            push(&mut mf, then, tie);
            mf.blocks[then].term = Terminator::Jump {
                target: join,
                args: vec![],
            };
            // join: restore exec; z is a per-lane merge, so it is one vreg after the region
            // (the partial write's def) only on the path through `then`; model the join with
            // the tied def by passing it through a Copy in `then` and z0 on the other path.
            let zj = mf.vreg(RegClass::Vgpr, 1);
            mf.blocks[join].params = vec![zj];
            mf.blocks[then].term = Terminator::Jump {
                target: join,
                args: vec![z1],
            };
            if let Terminator::Branch { taken_args, .. } = &mut mf.blocks[e].term {
                *taken_args = vec![z0];
            }
            let mut restore = isa(Opcode::SOrB64, &[exec(), exec(), u(saved)]);
            restore.implicit_defs = kjit_backend_gcn::mir::implicit::SCC;
            push(&mut mf, join, restore);
            out(&mut mf, join, rsrc, zj, 0);
            for (k, v) in live.iter().enumerate() {
                out(&mut mf, join, rsrc, *v, 4 + 4 * k as i32);
            }
            let f = alloc_and_compare(&mf, budget, Inputs::default());
            let wraps = f
                .blocks
                .iter()
                .flat_map(|b| &b.insts)
                .filter(|i| {
                    i.op == Opcode::SMovB64
                        && i.operands[0] == Operand::Special(SpecialReg::Exec)
                        && i.operands[1] == Operand::InlineInt(-1)
                })
                .count();
            eprintln!("{t} {budget:?}: {:?}, {wraps} whole-wave wraps", f.usage);
            if std::env::var_os("KJIT_RA_LIST").is_some() {
                eprintln!("{}", listing(&f));
            }
            if budget.is_some() {
                assert!(f.usage.spill_insts > 0);
                assert!(wraps > 0, "{}", listing(&f));
            }
        }
    }
}

#[test]
fn malformed_functions_are_errors_not_panics() {
    let mut mf = func(Target::Gfx942);
    let e = mf.entry();
    let v = mf.vreg(RegClass::Vgpr, 1);
    push(&mut mf, e, isa(Opcode::VMovB32, &[d(v), c(1)]));
    push(&mut mf, e, isa(Opcode::VMovB32, &[d(v), c(2)]));
    let r = allocate(&mf, &RegallocOptions::default());
    assert!(matches!(r, Err(RegallocError::Malformed(_))), "{r:?}");
    // LiveIn after a real instruction
    let mut mf = func(Target::Gfx942);
    let e = mf.entry();
    let v = mf.vreg(RegClass::Vgpr, 1);
    push(&mut mf, e, isa(Opcode::VMovB32, &[d(v), c(1)]));
    let _ = livein(&mut mf, AbiValue::KernargPtr);
    let r = allocate(&mf, &RegallocOptions::default());
    assert!(matches!(r, Err(RegallocError::Malformed(_))), "{r:?}");
}

/// Past 256 VGPRs the spare-register tier continues in AGPRs on gfx90a/gfx942 (counted in the
/// unified file) and in scratch on gfx900.
#[test]
fn beyond_256_vgprs_slots_go_to_agprs_or_scratch() {
    for t in ALL_TARGETS {
        let mf = pressure_kernel(t, 300);
        let f = alloc_and_compare(&mf, None, Inputs::default());
        eprintln!("{t}: {:?}", f.usage);
        assert_eq!(f.usage.vgprs, 256, "{t}: {:?}", f.usage);
        if t.has_agprs() {
            assert!(
                f.usage.agprs > 0 && f.usage.scratch_bytes == 0,
                "{t}: {:?}",
                f.usage
            );
            assert!(count_op(&f, Opcode::VAccvgprReadB32) > 0);
            assert!(count_op(&f, Opcode::VAccvgprWriteB32) > 0);
        } else {
            assert!(
                f.usage.agprs == 0 && f.usage.scratch_bytes > 0,
                "{t}: {:?}",
                f.usage
            );
        }
        // under a budget of 300 the AGPRs stop at 300 - 256
        if t.has_agprs() {
            let f = alloc_and_compare(&mf, Some(300), Inputs::default());
            assert!(
                f.usage.agprs <= 44 && f.usage.scratch_bytes > 0,
                "{t}: {:?}",
                f.usage
            );
        }
    }
}

/// Pairs put into a 4-VGPR tuple by a `Build` and taken out as its two 8-byte halves by
/// `Extract`s (as the GEMM splits each 16-byte load of a into two steps' fragments) share the
/// tuple's registers where they meet it only at the copy: no `v_mov_b32` is left. When the
/// tuple's first dword is read again after the extraction, its low half may not sit there:
/// that half is copied (two moves) and the stores still equal the MIR's.
#[test]
fn pairs_built_into_and_extracted_from_a_vgpr_tuple_share_its_registers() {
    for t in ALL_TARGETS {
        for read_again in [false, true] {
            let mut mf = func(t);
            let e = mf.entry();
            let (_kp, tid, rsrc) = prologue(&mut mf);
            let pair = |mf: &mut kjit_backend_gcn::mir::MachineFunction, ops: &[MOperand]| {
                let p = mf.vreg(RegClass::Vgpr, 2);
                let mut all = vec![d(p)];
                all.extend_from_slice(ops);
                push(mf, e, isa(Opcode::VAddF64, &all));
                p
            };
            let a = vadd(&mut mf, e, c(1), u(tid));
            let b = vadd(&mut mf, e, c(2), u(tid));
            let pa = mf.vreg(RegClass::Vgpr, 2);
            push(
                &mut mf,
                e,
                MInst::pseudo(MOpcode::Build, &[d(pa), u(a), u(b)]),
            );
            let s0 = pair(&mut mf, &[u(pa), u(pa)]);
            let s1 = pair(&mut mf, &[u(s0), u(pa)]);
            let q = mf.vreg(RegClass::Vgpr, 4);
            push(
                &mut mf,
                e,
                MInst::pseudo(MOpcode::Build, &[d(q), u(s0), u(s1)]),
            );
            let lo = mf.vreg(RegClass::Vgpr, 2);
            push(
                &mut mf,
                e,
                MInst::pseudo(MOpcode::Extract(0), &[d(lo), u(q)]),
            );
            let hi = mf.vreg(RegClass::Vgpr, 2);
            push(
                &mut mf,
                e,
                MInst::pseudo(MOpcode::Extract(2), &[d(hi), u(q)]),
            );
            let r0 = pair(&mut mf, &[u(lo), u(hi)]);
            let r1 = pair(&mut mf, &[u(hi), u(hi)]);
            for (i, r) in [r0, r1].into_iter().enumerate() {
                for k in 0..2u8 {
                    let x = mf.vreg(RegClass::Vgpr, 1);
                    push(
                        &mut mf,
                        e,
                        MInst::pseudo(MOpcode::Extract(k), &[d(x), u(r)]),
                    );
                    out(&mut mf, e, rsrc, x, 8 * i as i32 + 4 * k as i32);
                }
            }
            if read_again {
                let x = mf.vreg(RegClass::Vgpr, 1);
                push(
                    &mut mf,
                    e,
                    MInst::pseudo(MOpcode::Extract(0), &[d(x), u(q)]),
                );
                out(&mut mf, e, rsrc, x, 64);
            }
            let f = alloc_and_compare(&mf, None, Inputs::default());
            // The four adds: s0, s1 (built into q), r0 (of q's halves), r1 (of the high half).
            let insts = &f.blocks[0].insts;
            let adds: Vec<usize> = (0..insts.len())
                .filter(|&i| insts[i].op == Opcode::VAddF64)
                .collect();
            let [_, a1, a2, a3] = adds[..] else {
                panic!("{t}: four v_add_f64\n{}", listing(&f))
            };
            let ops = |i: usize| &insts[i].operands;
            let (s0, s1) = (ops(adds[0])[0], ops(a1)[0]);
            // The high half is s1's registers: neither its Build nor its Extract moved it.
            assert_eq!(ops(a3)[1], s1, "{t}: high half copied\n{}", listing(&f));
            assert_eq!(ops(a3)[2], s1, "{t}: high half copied\n{}", listing(&f));
            if !read_again {
                assert_eq!(ops(a2)[1], s0, "{t}: low half copied\n{}", listing(&f));
                assert_eq!(ops(a2)[2], s1, "{t}: high half copied\n{}", listing(&f));
                assert_eq!(a2, a1 + 1, "{t}: moves between\n{}", listing(&f));
            }
        }
    }
}

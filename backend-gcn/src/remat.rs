//! Pressure-driven rematerialisation, after scheduling and before register allocation.
//!
//! The most VGPRs live at once (the schedule's peak, [`crate::schedule::vgpr_pressure`]) is a
//! floor under the VGPRs the allocation names. A value that is live across the peak without
//! being read there, and whose definition is one cheap vector ALU instruction whose operands
//! are live there anyway, need not hold a register across it: the instruction is made again
//! right after the peak, and the value's reads from there on take the copy. The original then dies at its last read before the peak, and every point between the
//! two reads carries one VGPR less; no other value lives longer (the operands were live at the
//! copy already). The price is one instruction per copy.
//!
//! A level of the peak is taken only when every point at it is lowered (otherwise the count
//! stays and the copies would be paid for nothing), and only with one copy per peak block: a
//! VGPR saved for one instruction where the peak is. Levels repeat while that holds. The
//! persistent vector add keeps iteration 1's store address live across the four loads in
//! flight (7 VGPRs); made again after them from the index and the stride it is 6, for one
//! `v_add_lshl_u32` per trip (clang's code makes it there too); under a 6-VGPR budget that
//! copy replaces the spill code.
//!
//! The compile driver runs it on a schedule whose allocation had to fit its peak (named as
//! many VGPRs, or spilled) and keeps the result only when it pays for its copies: fewer spill
//! instructions or more waves per SIMD (`compile.rs`, `allocated` and `remat_pays`).
//!
//! What may be made again: a VOP1/VOP2/VOP3/VOP3P instruction in its native or VOP3
//! encoding (not DPP, which reads other lanes), that writes one VGPR and nothing else (no VCC,
//! no tied partial write), reads no special register but EXEC, and whose copy lies in the same
//! block with no EXEC write between: it computes the same active lanes from the same
//! operands (SSA: an operand is never written again).

use cranelift_entity::EntityRef;

use crate::isa::{Encoding, Format, Operand};
use crate::mir::{implicit, MInst, MOpcode, MOperand, MachineFunction, RegClass, VReg};
use crate::regalloc::{liveness, writes_exec, BitSet};

/// Lowers `mf`'s VGPR pressure peak by making cheap values again after it (see the module
/// docs); returns the instructions added (0: `mf` unchanged).
pub fn rematerialise(mf: &mut MachineFunction) -> usize {
    let mut added = 0;
    loop {
        let peak = crate::schedule::vgpr_pressure(mf);
        let Some(plan) = plan_level(mf, peak) else {
            return added;
        };
        for r in &plan {
            apply(mf, r);
        }
        debug_assert!(crate::schedule::vgpr_pressure(mf) < peak);
        added += plan.len();
    }
}

/// One copy: in `block`, `vreg`'s definition at `def` made again before instruction `at`,
/// whose reads and the later ones take the copy.
#[derive(Clone, Copy, Debug)]
struct Remat {
    block: crate::mir::MBlock,
    vreg: VReg,
    def: usize,
    at: usize,
}

fn apply(mf: &mut MachineFunction, r: &Remat) {
    let data = mf.vregs[r.vreg];
    let copy = mf.vregs.push(data);
    let bd = &mut mf.blocks[r.block];
    let mut inst = bd.insts[r.def].clone();
    for o in inst.ops.iter_mut() {
        if *o == MOperand::Def(r.vreg) {
            *o = MOperand::Def(copy);
        }
    }
    for i in bd.insts[r.at..].iter_mut() {
        for o in i.ops.iter_mut() {
            if *o == MOperand::Use(r.vreg) {
                *o = MOperand::Use(copy);
            }
        }
    }
    bd.insts.insert(r.at, inst);
}

/// Whether `i` may be made again elsewhere in its block (module docs).
fn cheap(mf: &MachineFunction, i: &MInst) -> Option<VReg> {
    let MOpcode::Isa(op) = i.opcode else {
        return None;
    };
    if !matches!(
        op.format(),
        Format::Vop1 | Format::Vop2 | Format::Vop3 | Format::Vop3p
    ) || !matches!(i.encoding, Encoding::Native | Encoding::E64)
        || op.info().is_mfma()
        || i.tied.is_some()
        || i.implicit_defs != 0
        || i.implicit_uses & !implicit::EXEC != 0
    {
        return None;
    }
    let mut def = None;
    for o in &i.ops {
        match *o {
            MOperand::Def(v) if def.is_none() => def = Some(v),
            MOperand::Def(_) => return None,
            MOperand::Use(_) => {}
            MOperand::Phys(p) => {
                if !matches!(
                    p,
                    Operand::InlineInt(_)
                        | Operand::InlineFloat(_)
                        | Operand::Literal(_)
                        | Operand::Imm(_)
                        | Operand::Off
                ) {
                    return None;
                }
            }
        }
    }
    def.filter(|&v| mf.vregs[v].class == RegClass::Vgpr)
}

/// The copies that lower the function's peak, `peak` VGPRs, by one, one per block at the
/// peak, or `None` when some block's peak cannot be lowered that way. The planner counts a
/// VGPR pair whole where [`crate::schedule::vgpr_pressure`] frees a half read for the last
/// time: its counts are never lower, so when its peak is `peak` too, every point it lowers
/// below `peak` is below it in the schedule's count; otherwise it plans nothing.
fn plan_level(mf: &MachineFunction, peak: u32) -> Option<Vec<Remat>> {
    if peak == 0 {
        return None;
    }
    let lv = liveness(mf);
    let nv = mf.vregs.len();
    let size = |v: VReg| match mf.vregs[v] {
        d if d.class == RegClass::Vgpr => d.dwords as u32,
        _ => 0,
    };
    // Per block: VGPRs live before each instruction and after it (with its unread defs), as
    // the schedule counts them but with tuples whole.
    let mut profiles = Vec::new();
    let mut most = 0;
    for (b, bd) in mf.blocks.iter() {
        let mut live = BitSet::new(nv);
        live.union_with(&lv.live_out[b.index()]);
        for (_, args) in bd.term.successors() {
            for a in args {
                live.insert(a.index());
            }
        }
        let mut n: u32 = live.iter().map(|v| size(VReg::new(v))).sum();
        if bd.insts.is_empty() && n == peak {
            // A block with no instruction to put a copy before.
            return None;
        }
        let mut points = vec![(0u32, 0u32); bd.insts.len()];
        for (k, inst) in bd.insts.iter().enumerate().rev() {
            let mut after = n;
            for d in inst.defs() {
                if !live.contains(d.index()) {
                    after += size(d);
                }
            }
            for d in inst.defs() {
                if live.contains(d.index()) {
                    live.remove(d.index());
                    n -= size(d);
                }
            }
            for u in inst.uses() {
                if live.insert_new(u.index()) {
                    n += size(u);
                }
            }
            points[k] = (n, after);
            most = most.max(n).max(after);
        }
        profiles.push((b, points));
    }
    if most != peak {
        return None;
    }
    let mut plan = Vec::new();
    for (b, points) in profiles {
        if !points.iter().any(|&(x, y)| x.max(y) == peak) {
            continue;
        }
        plan.push(block_remat(mf, b, &lv, &points, peak)?);
    }
    (!plan.is_empty()).then_some(plan)
}

/// The one copy in block `b` that lowers every point of `points` at `peak`.
fn block_remat(
    mf: &MachineFunction,
    b: crate::mir::MBlock,
    lv: &crate::regalloc::Liveness,
    points: &[(u32, u32)],
    peak: u32,
) -> Option<Remat> {
    let bd = &mf.blocks[b];
    let at_peak: Vec<usize> = (0..points.len())
        .filter(|&k| points[k].0.max(points[k].1) == peak)
        .collect();
    let (first, last) = (*at_peak.first()?, *at_peak.last()?);
    let live_after = |v: VReg, from: usize| {
        lv.live_out[b.index()].contains(v.index())
            || bd.term.successors().iter().any(|(_, a)| a.contains(&v))
            || bd.insts[from..].iter().any(|i| i.uses().any(|u| u == v))
    };
    for (d, inst) in bd.insts.iter().enumerate().take(first + 1) {
        let Some(v) = cheap(mf, inst) else {
            continue;
        };
        if mf.vregs[v].dwords != 1 || live_after(v, bd.insts.len()) {
            continue;
        }
        let reads: Vec<usize> = (d + 1..bd.insts.len())
            .filter(|&k| bd.insts[k].uses().any(|u| u == v))
            .collect();
        // `v` dies at read `u` (the last at or before the first peak point) and the copy is
        // made before the next read `w`: the points after `u` and before `w` are lowered, so
        // every peak point must lie there (at `u`, only the point after it).
        let Some(u) = reads
            .iter()
            .copied()
            .filter(|&k| k < first || (k == first && points[k].0 < peak))
            .last()
        else {
            continue;
        };
        let Some(&w) = reads.iter().find(|&&k| k > u) else {
            continue;
        };
        if !at_peak
            .iter()
            .all(|&k| (k > u && k < w) || (k == u && points[k].0 < peak))
        {
            continue;
        }
        // The copy goes right after the last peak point, not before the read `w`: from there
        // on the value was live anyway (no point rises), and the copy issues in the shadow
        // of the loads the peak holds registers for rather than on the read's path.
        let w = w.min(last + 1);
        let tied_read = bd.insts[w..].iter().any(|i| {
            i.tied
                .is_some_and(|(_, t)| i.ops.get(t as usize) == Some(&MOperand::Use(v)))
        });
        let operands_live = inst.uses().all(|o| live_after(o, w));
        let exec_kept = !bd.insts[d + 1..w].iter().any(writes_exec);
        if !tied_read && operands_live && exec_kept {
            return Some(Remat {
                block: b,
                vreg: v,
                def: d,
                at: w,
            });
        }
    }
    None
}

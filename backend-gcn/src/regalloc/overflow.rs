//! The partition of single VGPRs into two regalloc2 classes. Takes a prepared function whose
//! single VGPRs outgrow regalloc2's 64-register `Float` class (and that has no VGPR pairs, so
//! `Vector` is free); gives the singles that go to `Vector` instead, so that at no point more
//! than [`FIRST`] of the `Float` ones are live.
//!
//! regalloc2 spills what does not fit a class, and kjit then packs the spill slots back into
//! VGPRs: correct, but regalloc2's eviction search on a class 50–60 values over its registers
//! was most of a spilling kernel's compile (hash_lanes: 6 runs of ~47 M instructions per tune).
//! With the excess in a second class regalloc2 spills nothing, and the VGPR layout
//! (`regalloc/vgprs.rs`) places both classes' values by live intervals as before.
//!
//! Values that must share a register are kept in one class: a tie (`Reuse` constraint), a
//! `Copy` (a reuse-constrained def), a block parameter and its branch arguments. The
//! work-item id (a fixed `Float` def) stays in `Float`. Groups are moved longest-lived first:
//! a loop's state words cross many points, so few moves bring every point under the line.

use cranelift_entity::EntityRef;

use super::prep::{kind_of, BitSet, Kind, Liveness, Prepared};
use crate::mir::{AbiValue, MOpcode, MOperand, VReg};

/// Most `Float` singles live at once after the partition: a few registers under regalloc2's 64
/// for a loop's circular live ranges, which can need one more than the most that overlap.
pub const FIRST: u32 = 60;

/// Union-find root of `x` (path halving).
fn root(parent: &mut [u32], mut x: u32) -> u32 {
    while parent[x as usize] != x {
        parent[x as usize] = parent[parent[x as usize] as usize];
        x = parent[x as usize];
    }
    x
}

/// Per vreg, whether it is a single VGPR that goes to the `Vector` class.
pub fn partition(p: &Prepared, lv: &Liveness) -> Vec<bool> {
    let mf = &p.mf;
    let n = mf.vregs.len();
    let single: Vec<bool> = mf
        .vregs
        .values()
        .map(|d| kind_of(d.class, d.dwords) == Kind::Float)
        .collect();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    let join = |a: VReg, b: VReg, parent: &mut Vec<u32>| {
        if single[a.index()] && single[b.index()] {
            let (ra, rb) = (root(parent, a.index() as u32), root(parent, b.index() as u32));
            parent[ra as usize] = rb;
        }
    };
    let mut pinned: Vec<VReg> = Vec::new();
    for (_, bd) in mf.blocks.iter() {
        for inst in &bd.insts {
            let op = |i: u8| match inst.ops.get(i as usize) {
                Some(MOperand::Def(v) | MOperand::Use(v)) => Some(*v),
                _ => None,
            };
            if let Some((d, u)) = inst.tied {
                if let (Some(d), Some(u)) = (op(d), op(u)) {
                    join(d, u, &mut parent);
                }
            }
            match (inst.opcode, inst.ops.as_slice()) {
                (MOpcode::Copy, [MOperand::Def(d), MOperand::Use(s)]) => join(*d, *s, &mut parent),
                (MOpcode::LiveIn(AbiValue::WorkitemId(_)), _) => pinned.extend(inst.defs()),
                _ => {}
            }
        }
        for (s, args) in bd.term.successors() {
            for (a, q) in args.iter().zip(&mf.blocks[s].params) {
                join(*a, *q, &mut parent);
            }
        }
    }
    let roots: Vec<u32> = (0..n as u32).map(|v| root(&mut parent, v)).collect();
    let mut movable = vec![true; n];
    for v in pinned {
        movable[roots[v.index()] as usize] = false;
    }

    // Each group's length: the points (two per instruction) its members are live at.
    let mut length = vec![0u64; n];
    walk(p, lv, &single, |live| {
        for x in live.iter() {
            length[roots[x] as usize] += 1;
        }
    });

    // Over the line at a point: move the live group that lives longest until it is not. A
    // move only lowers the counts elsewhere, so one walk brings every point under the line.
    let mut second = vec![false; n];
    let mut groups: Vec<u32> = Vec::new();
    walk(p, lv, &single, |live| {
        let count = |second: &[bool]| live.iter().filter(|&x| !second[x]).count() as u32;
        let mut c = count(&second);
        if c <= FIRST {
            return;
        }
        groups.clear();
        groups.extend(
            live.iter()
                .map(|x| roots[x])
                .filter(|&r| movable[r as usize] && !second[r as usize]),
        );
        groups.sort_unstable_by_key(|&r| (std::cmp::Reverse(length[r as usize]), r));
        groups.dedup();
        for &r in &groups {
            if c <= FIRST {
                break;
            }
            for x in 0..n {
                if roots[x] == r {
                    second[x] = true;
                }
            }
            c = count(&second);
        }
    });
    second
}

/// Calls `at` with the single VGPRs live at every point of `p` (`lv`): at each block's end, and
/// at each instruction both after it (its results included, dead ones too) and before it.
fn walk(p: &Prepared, lv: &Liveness, single: &[bool], mut at: impl FnMut(&BitSet)) {
    let mf = &p.mf;
    let mut live = BitSet::new(mf.vregs.len());
    let only_singles = |live: &mut BitSet| {
        let drop: Vec<usize> = live.iter().filter(|&x| !single[x]).collect();
        for x in drop {
            live.remove(x);
        }
    };
    for (b, bd) in mf.blocks.iter() {
        live.clone_from(&lv.live_out[b.index()]);
        for (_, args) in bd.term.successors() {
            for a in args {
                live.insert(a.index());
            }
        }
        only_singles(&mut live);
        at(&live);
        for inst in bd.insts.iter().rev() {
            if inst.defs().next().is_some() {
                for d in inst.defs().filter(|d| single[d.index()]) {
                    live.insert(d.index());
                }
                at(&live);
            }
            for d in inst.defs() {
                live.remove(d.index());
            }
            for u in inst.uses().filter(|u| single[u.index()]) {
                live.insert(u.index());
            }
            at(&live);
        }
    }
}

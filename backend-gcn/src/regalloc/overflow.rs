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

/// Per vreg, whether it is a single VGPR that goes to the `Vector` class, given the most
/// singles live at once (`pressure`): at no point more than [`FIRST`] or half of `pressure`
/// (both classes keep room for the registers regalloc2 needs beyond the pressure) stay in
/// `Float`; 64 when `pressure` exceeds both classes (regalloc2 spills anyway, and the search
/// then starts at the whole class instead of growing it to there after a spilling run).
pub fn partition(p: &Prepared, lv: &Liveness, pressure: u32) -> Vec<bool> {
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
            let (ra, rb) = (
                root(parent, a.index() as u32),
                root(parent, b.index() as u32),
            );
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
    // The members of each group, back to back (`at[r]..at[r + 1]` for root `r`).
    let mut at = vec![0u32; n + 1];
    for &r in &roots {
        at[r as usize + 1] += 1;
    }
    for i in 0..n {
        at[i + 1] += at[i];
    }
    let mut members = vec![0u32; n];
    let mut fill = at.clone();
    for (v, &r) in roots.iter().enumerate() {
        members[fill[r as usize] as usize] = v as u32;
        fill[r as usize] += 1;
    }

    // Each group's length: the points its members are live at (walking backward, a value
    // is live from where it enters the set to where its def takes it out).
    let mut length = vec![0u64; n];
    let mut enter = vec![0u64; n];
    let mut pos = 0u64;
    walk(p, lv, &single, |step, live| match step {
        Step::Point => pos += 1,
        Step::Enter(v) => enter[v] = pos,
        Step::Leave(v) => length[roots[v] as usize] += pos - enter[v],
        Step::BlockStart => {
            for v in live.iter() {
                length[roots[v] as usize] += pos - enter[v];
            }
        }
    });

    // Over the line at a point: move the live groups that live longest until it is not. A
    // move only lowers the counts elsewhere, so one walk brings every point under the line.
    let line = if pressure > 128 {
        64
    } else {
        FIRST.min(pressure.div_ceil(2))
    };
    let mut second = vec![false; n];
    let mut groups: Vec<u32> = Vec::new();
    let mut c = 0u32;
    walk(p, lv, &single, |step, live| match step {
        Step::Enter(v) => c += u32::from(!second[v]),
        Step::Leave(v) => c -= u32::from(!second[v]),
        Step::BlockStart => c = 0,
        Step::Point if c > line => {
            groups.clear();
            groups.extend(
                live.iter()
                    .map(|x| roots[x])
                    .filter(|&r| movable[r as usize] && !second[r as usize]),
            );
            groups.sort_unstable_by_key(|&r| (std::cmp::Reverse(length[r as usize]), r));
            groups.dedup();
            for &r in &groups {
                if c <= line {
                    break;
                }
                for &m in &members[at[r as usize] as usize..at[r as usize + 1] as usize] {
                    second[m as usize] = true;
                    c -= u32::from(live.contains(m as usize));
                }
            }
        }
        Step::Point => {}
    });
    second
}

/// What [`walk`] reports.
enum Step {
    /// A point: the set is what is live there.
    Point,
    /// A single VGPR enters the live set (walking backward: its last use).
    Enter(usize),
    /// It leaves (its def).
    Leave(usize),
    /// The block's first point was the last reported; the set is what is live into it.
    BlockStart,
}

/// Walks the blocks of `p` backward with the single VGPRs live (`lv`), reporting each block's
/// end and each instruction's two points — after it (its results included, dead ones too)
/// and before it — and every value entering and leaving the set.
fn walk(p: &Prepared, lv: &Liveness, single: &[bool], mut at: impl FnMut(Step, &BitSet)) {
    let mf = &p.mf;
    let mut live = BitSet::new(mf.vregs.len());
    for (b, bd) in mf.blocks.iter() {
        live.clear();
        let succs = bd.term.successors();
        let args = succs.iter().flat_map(|(_, a)| a.iter().map(|v| v.index()));
        for v in lv.live_out[b.index()].iter().chain(args) {
            if single[v] && live.insert_new(v) {
                at(Step::Enter(v), &live);
            }
        }
        at(Step::Point, &live);
        for inst in bd.insts.iter().rev() {
            if inst.defs().next().is_some() {
                for d in inst.defs().filter(|d| single[d.index()]) {
                    if live.insert_new(d.index()) {
                        at(Step::Enter(d.index()), &live);
                    }
                }
                at(Step::Point, &live);
            }
            for d in inst.defs().filter(|d| single[d.index()]) {
                if live.remove_old(d.index()) {
                    at(Step::Leave(d.index()), &live);
                }
            }
            for u in inst.uses().filter(|u| single[u.index()]) {
                if live.insert_new(u.index()) {
                    at(Step::Enter(u.index()), &live);
                }
            }
            at(Step::Point, &live);
        }
        at(Step::BlockStart, &live);
    }
}

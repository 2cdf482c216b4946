//! Spill-slot coloring. regalloc2 gives every spilled value (spill set) its own slot; on GCN a
//! slot is usually a spare VGPR, so slots whose contents are never live at the same time should
//! share one. This computes slot liveness over the CFG (a slot is written by a spill move or a
//! def left in the slot, read by a reload or a use left in the slot) and colors the slot
//! interference graph greedily, per regalloc2 class.

use std::collections::BTreeMap;

use regalloc2 as ra;
use regalloc2::{Edit, Function, InstPosition};

use super::prep::BitSet;
use super::ra2::RaFunc;

/// One access to a slot, in program order within a block.
#[derive(Clone, Copy)]
struct Ev {
    write: bool,
    slot: usize,
}

/// Maps each slot to a color; slots of one color are never live together and share a class.
pub fn color(
    func: &RaFunc,
    out: &ra::Output,
    slot_class: &BTreeMap<usize, ra::RegClass>,
) -> BTreeMap<usize, usize> {
    let n = slot_class.keys().next_back().map(|x| x + 1).unwrap_or(0);
    if n == 0 {
        return BTreeMap::new();
    }
    let nb = func.num_blocks();
    // Events per block.
    let mut evs: Vec<Vec<Ev>> = vec![Vec::new(); nb];
    let mut e = 0usize;
    let edit_evs = |ed: &Edit, v: &mut Vec<Ev>| {
        let Edit::Move { from, to } = *ed;
        if let Some(s) = from.as_stack() {
            v.push(Ev {
                write: false,
                slot: s.index(),
            });
        }
        if let Some(s) = to.as_stack() {
            v.push(Ev {
                write: true,
                slot: s.index(),
            });
        }
    };
    for (b, ev) in evs.iter_mut().enumerate() {
        let r = func.block_insns(ra::Block::new(b));
        for i in r.iter() {
            while e < out.edits.len() && out.edits[e].0.inst() < i {
                e += 1;
            }
            while e < out.edits.len()
                && out.edits[e].0.inst() == i
                && out.edits[e].0.pos() == InstPosition::Before
            {
                edit_evs(&out.edits[e].1, ev);
                e += 1;
            }
            let allocs = out.inst_allocs(i);
            let ops = func.inst_operands(i);
            for (op, a) in ops.iter().zip(allocs) {
                if let (ra::OperandKind::Use, Some(s)) = (op.kind(), a.as_stack()) {
                    ev.push(Ev {
                        write: false,
                        slot: s.index(),
                    });
                }
            }
            for (op, a) in ops.iter().zip(allocs) {
                if let (ra::OperandKind::Def, Some(s)) = (op.kind(), a.as_stack()) {
                    ev.push(Ev {
                        write: true,
                        slot: s.index(),
                    });
                }
            }
            while e < out.edits.len()
                && out.edits[e].0.inst() == i
                && out.edits[e].0.pos() == InstPosition::After
            {
                edit_evs(&out.edits[e].1, ev);
                e += 1;
            }
        }
    }
    // Liveness to a fixed point.
    let mut live_in = vec![BitSet::new(n); nb];
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..nb).rev() {
            let mut live = BitSet::new(n);
            for s in func.block_succs(ra::Block::new(b)) {
                live.union_with(&live_in[s.index()]);
            }
            for ev in evs[b].iter().rev() {
                if ev.write {
                    live.remove(ev.slot);
                } else {
                    live.insert(ev.slot);
                }
            }
            if live != live_in[b] {
                live_in[b] = live;
                changed = true;
            }
        }
    }
    // Interference: at each write, the written slot against every slot live after it.
    let mut adj = vec![BitSet::new(n); n];
    for (b, bevs) in evs.iter().enumerate() {
        let mut live = BitSet::new(n);
        for s in func.block_succs(ra::Block::new(b)) {
            live.union_with(&live_in[s.index()]);
        }
        for ev in bevs.iter().rev() {
            if ev.write {
                for x in live.iter() {
                    if x != ev.slot {
                        adj[ev.slot].insert(x);
                        adj[x].insert(ev.slot);
                    }
                }
                live.remove(ev.slot);
            } else {
                live.insert(ev.slot);
            }
        }
        // Slots live into the entry block are never written before: keep them apart too.
        if b == 0 {
            let v: Vec<usize> = live.iter().collect();
            for &x in &v {
                for &y in &v {
                    if x != y {
                        adj[x].insert(y);
                    }
                }
            }
        }
    }
    // Greedy coloring per class.
    let mut color_of: BTreeMap<usize, usize> = BTreeMap::new();
    let mut colors: Vec<ra::RegClass> = Vec::new();
    for (&s, &c) in slot_class {
        let mut taken = vec![false; colors.len()];
        for x in adj[s].iter() {
            if let Some(&k) = color_of.get(&x) {
                taken[k] = true;
            }
        }
        let k = (0..colors.len())
            .find(|&k| colors[k] == c && !taken[k])
            .unwrap_or_else(|| {
                colors.push(c);
                colors.len() - 1
            });
        color_of.insert(s, k);
    }
    color_of
}

//! Spill-slot coloring. regalloc2 gives every spilled value (spill set) its own slot; on GCN a
//! slot is usually a spare VGPR, so slots whose contents are never live at the same time should
//! share one. This computes slot liveness over the CFG (a slot is written by a spill move or a
//! def left in the slot, read by a reload or a use left in the slot) and colors the slot
//! interference graph greedily, per regalloc2 class. The graph is bit rows (a write ORs the
//! live set into its row; made symmetric once) and colors a vector by slot: no per-pair
//! inserts or map lookups.

use std::collections::BTreeMap;

use regalloc2 as ra;

use super::locs;
use super::prep::BitSet;
use super::ra2::RaFunc;

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
    let evs = locs::events(func, out, |a| a.as_stack().map(|s| s.index()), |_| false);
    let live_in = locs::live_in(func, &evs, n);
    // Interference: at each write, the written slot against every slot live after it. Kept
    // one way (row of the written slot, a word-wise union) and made symmetric at the end.
    let mut adj = vec![BitSet::new(n); n];
    for (b, bevs) in evs.iter().enumerate() {
        let mut live = locs::live_out(func, &live_in, b, n);
        for ev in bevs.iter().rev() {
            if ev.write {
                adj[ev.loc].union_with(&live);
                live.remove(ev.loc);
            } else {
                live.insert(ev.loc);
            }
        }
        // Slots live into the entry block are never written before: keep them apart too.
        if b == 0 {
            for x in live.iter() {
                adj[x].union_with(&live);
            }
        }
    }
    for (x, row) in adj.iter_mut().enumerate() {
        row.remove(x);
    }
    for x in 0..n {
        let row = adj[x].clone();
        for y in row.iter() {
            adj[y].insert(x);
        }
    }
    // Greedy coloring per class.
    let mut color: Vec<usize> = vec![usize::MAX; n];
    let mut colors: Vec<ra::RegClass> = Vec::new();
    let mut taken: Vec<bool> = Vec::new();
    for (&s, &c) in slot_class {
        taken.clear();
        taken.resize(colors.len(), false);
        for x in adj[s].iter() {
            if color[x] != usize::MAX {
                taken[color[x]] = true;
            }
        }
        let k = (0..colors.len())
            .find(|&k| colors[k] == c && !taken[k])
            .unwrap_or_else(|| {
                colors.push(c);
                colors.len() - 1
            });
        color[s] = k;
    }
    slot_class.keys().map(|&s| (s, color[s])).collect()
}

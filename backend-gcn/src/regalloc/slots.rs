//! Spill-slot coloring. regalloc2 gives every spilled value (spill set) its own slot; on GCN a
//! slot is usually a spare VGPR, so slots whose contents are never live at the same time should
//! share one. This computes slot liveness over the CFG (a slot is written by a spill move or a
//! def left in the slot, read by a reload or a use left in the slot) and colors the slot
//! interference graph greedily, per regalloc2 class.

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
    let evs = locs::events(func, out, |a| a.as_stack().map(|s| s.index()));
    let live_in = locs::live_in(func, &evs, n);
    // Interference: at each write, the written slot against every slot live after it.
    let mut adj = vec![BitSet::new(n); n];
    for (b, bevs) in evs.iter().enumerate() {
        let mut live = locs::live_out(func, &live_in, b, n);
        for ev in bevs.iter().rev() {
            if ev.write {
                for x in live.iter() {
                    if x != ev.loc {
                        adj[ev.loc].insert(x);
                        adj[x].insert(ev.loc);
                    }
                }
                live.remove(ev.loc);
            } else {
                live.insert(ev.loc);
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

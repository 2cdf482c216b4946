//! Dead code elimination, block parameters included.
//!
//! Takes a [`Function`]; gives it back without the effect-free instructions whose results
//! nothing needs and without the block parameters (and their branch arguments) nothing needs.
//! A value is needed when an instruction with an effect (memory, cross-lane, a branch's
//! condition) uses it, or an effect-free instruction or a needed parameter does. Why: after
//! strength reduction ([`super::lsr`]) an induction variable is often used only by its own
//! increment, a cycle through the loop header that use counts alone never see as dead.

use crate::entities::{Block, Value};
use crate::function::{Function, ValueDef};
use crate::instructions::InstData;
use cranelift_entity::SecondaryMap;

/// Removes dead instructions and parameters; gives how many of each went.
pub fn remove_dead_code(func: &mut Function) -> (usize, usize) {
    let entry = func.entry();
    let needed = needed_values(func);
    let (mut insts, mut params) = (0, 0);
    for b in func.layout.clone() {
        let before = func.blocks[b].insts.len();
        let mut keep = std::mem::take(&mut func.blocks[b].insts);
        keep.retain(|&i| {
            let live = is_live(func, i, &needed);
            if !live {
                for &r in &func.results[i] {
                    func.values[r].def = ValueDef::Detached;
                }
            }
            live
        });
        insts += before - keep.len();
        func.blocks[b].insts = keep;
        if Some(b) != entry {
            params += drop_params(func, b, &needed);
        }
    }
    (insts, params)
}

/// Per block of the layout, how many of its instructions [`remove_dead_code`] would keep,
/// without changing `func` (strength reduction compares its trials with these counts; a copy
/// of the function to clean up cost more than the counting).
pub fn live_inst_counts(func: &Function) -> SecondaryMap<Block, usize> {
    let needed = needed_values(func);
    let mut counts = SecondaryMap::new();
    for &b in &func.layout {
        counts[b] = func.blocks[b]
            .insts
            .iter()
            .filter(|&&i| is_live(func, i, &needed))
            .count();
    }
    counts
}

/// Whether instruction `i` stays: it has an effect or a needed result.
fn is_live(func: &Function, i: crate::entities::Inst, needed: &SecondaryMap<Value, bool>) -> bool {
    !func.insts[i].effects().is_pure() || func.results[i].iter().any(|&r| needed[r])
}

/// The values an effect, a branch condition or the entry's parameters need, directly or
/// through the instructions and block parameters that define them.
fn needed_values(func: &Function) -> SecondaryMap<Value, bool> {
    let entry = func.entry();
    // Branch arguments flowing into each block parameter: `(parameter, argument)` pairs,
    // sorted by parameter below (one list instead of a vector per parameter).
    let mut incoming: Vec<(Value, Value)> = Vec::new();
    let mut needed: SecondaryMap<Value, bool> = SecondaryMap::with_capacity(func.values.len());
    needed.resize(func.values.len());
    let mut work: Vec<Value> = Vec::new();
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            let data = &func.insts[i];
            for call in data.branch_targets() {
                for (&p, &a) in func.blocks[call.block].params.iter().zip(&call.args) {
                    incoming.push((p, a));
                }
            }
            match data {
                InstData::Jump { .. } => {}
                InstData::Brif { cond, .. } => work.push(*cond),
                d if d.effects().is_pure() => {}
                d => d.for_each_arg(|a| work.push(a)),
            }
        }
    }
    incoming.sort_unstable_by_key(|&(p, _)| p);
    if let Some(e) = entry {
        work.extend(func.blocks[e].params.iter().copied());
    }
    while let Some(v) = work.pop() {
        if std::mem::replace(&mut needed[v], true) {
            continue;
        }
        match func.values[v].def {
            ValueDef::Result(i, _) => func.insts[i].for_each_arg(|a| work.push(a)),
            ValueDef::Param(..) => {
                let at = incoming.partition_point(|&(p, _)| p < v);
                work.extend(
                    incoming[at..]
                        .iter()
                        .take_while(|&&(p, _)| p == v)
                        .map(|&(_, a)| a),
                );
            }
            ValueDef::Detached => {}
        }
    }
    needed
}

/// Removes `b`'s parameters that are not needed, with their arguments in every branch to `b`.
fn drop_params(func: &mut Function, b: Block, needed: &SecondaryMap<Value, bool>) -> usize {
    let keep: Vec<bool> = func.blocks[b].params.iter().map(|&p| needed[p]).collect();
    if keep.iter().all(|&k| k) {
        return 0;
    }
    for blk in func.layout.clone() {
        for i in func.blocks[blk].insts.clone() {
            for call in func.insts[i].branch_targets_mut() {
                if call.block == b {
                    let mut k = keep.iter();
                    call.args.retain(|_| *k.next().expect("arity checked"));
                }
            }
        }
    }
    let old = std::mem::take(&mut func.blocks[b].params);
    let mut dropped = 0;
    for (p, k) in old.into_iter().zip(keep) {
        if k {
            let n = func.blocks[b].params.len() as u16;
            func.values[p].def = ValueDef::Param(b, n);
            func.blocks[b].params.push(p);
        } else {
            func.values[p].def = ValueDef::Detached;
            dropped += 1;
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_function;

    #[test]
    fn a_counter_used_only_by_its_own_increment_goes_with_its_parameter() {
        let src = "kernel k(s: u32, x: buf_mut<u32>) {
block0(v0: u32, v1: buf_mut<u32>):
    v2:u32 = const.u32 0
    jump block1(v2, v2)
block1(v3: u32, v4: u32):
    v5:bool = lt v3, v0
    brif v5, block2, block3
block2:
    v6:u32 = workitem_id.x
    store v1[v6], v3
    v7:u32 = const.u32 1
    v8:u32 = add v3, v7
    v9:u32 = add v4, v7
    v10:u32 = mul v9, v0
    jump block1(v8, v9)
block3:
    return
}";
        let f = parse_function(src).unwrap();
        let mut g = f.clone();
        // v4 feeds only v9, which feeds only v4; v10 is unused.
        assert_eq!(remove_dead_code(&mut g), (2, 1));
        crate::verify(&g).unwrap();
        assert_eq!(g.blocks[g.layout[1]].params.len(), 1);
        let x = super::super::loops::run_u32_kernel(&g, 3, 4);
        assert_eq!(x[..4], [2, 2, 2, 2]);
        assert_eq!(x, super::super::loops::run_u32_kernel(&f, 3, 4));
    }
}

//! Value numbering across blocks, scoped by dominance.
//!
//! Takes a [`Function`]; gives it back with every effect-free instruction that repeats an
//! earlier one in a dominating block (or earlier in its own block) removed and its uses
//! renamed to the earlier result. Why: the e-graph works one block at a time, so a loop header
//! and its body each compute `g * stride`; the header dominates the body, one computation serves
//! both. Effect-free means no memory, cross-lane or control effect ([`InstData::effects`]):
//! arithmetic, constants, launch ids and buffer lengths. Across blocks only values worth
//! holding in a register that long are shared ([`super::cost::worth_keeping_live`]: uniform
//! values and constants); within a block every repeat is.

use crate::cfg::{ControlFlowGraph, DominatorTree};
use crate::entities::{Block, Value};
use crate::function::{Function, ValueDef};
use crate::instructions::InstData;
use crate::uniformity::Uniformity;
use cranelift_entity::SecondaryMap;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::collections::hash_map::Entry;

/// Removes repeated effect-free instructions; gives how many were removed. `kept` is `func`'s
/// uniformity if a pass before made it and changed nothing since (taken, not computed again);
/// on return it holds the uniformity used when nothing was removed (`func` is unchanged then).
pub fn number_values(func: &mut Function, kept: &mut Option<Uniformity>) -> usize {
    let cfg = ControlFlowGraph::new(func);
    let dom = DominatorTree::new(func, &cfg);
    number_values_in(func, &cfg, &dom, kept)
}

/// [`number_values`] with `func`'s graph and dominators already made (the loop passes change
/// no branch target, so one graph serves them all).
pub fn number_values_in(
    func: &mut Function,
    cfg: &ControlFlowGraph,
    dom: &DominatorTree,
    kept: &mut Option<Uniformity>,
) -> usize {
    let uni = kept
        .take()
        .unwrap_or_else(|| Uniformity::with_cfg(func, cfg));
    // Sized once for every instruction (growing the table rehashed it several times).
    // Sized once for every instruction (growing the table rehashed it several times).
    let mut seen: FxHashMap<InstData, SmallVec<[(Block, Value); 1]>> =
        FxHashMap::with_capacity_and_hasher(func.inst_count(), Default::default());
    let mut subst: SecondaryMap<Value, Option<Value>> = SecondaryMap::new();
    subst.resize(func.values.len());
    let mut removed = 0;
    // Reverse post-order visits a value's definition before its uses (except for block
    // arguments along back edges, renamed at the end).
    for &b in &cfg.rpo {
        // Taken out while the block is numbered (nothing below reads the block lists) and
        // replaced by the instructions kept.
        let insts = std::mem::take(&mut func.blocks[b].insts);
        let mut keep = Vec::with_capacity(insts.len());
        for i in insts {
            func.insts[i].map_args(|a| subst[a].unwrap_or(a));
            let data = &func.insts[i];
            if !data.effects().is_pure() || func.results[i].len() != 1 {
                keep.push(i);
                continue;
            }
            let r = func.results[i][0];
            let key = canonical(data, func.values[r].ty.is_int());
            let across = super::cost::worth_keeping_live(func, &uni, i);
            let earlier = match seen.entry(key) {
                Entry::Occupied(e) => {
                    let found = e
                        .get()
                        .iter()
                        .rev()
                        .find(|(d, _)| *d == b || (across && dom.dominates(*d, b)))
                        .map(|&(_, v)| v);
                    if found.is_none() {
                        e.into_mut().push((b, r));
                    }
                    found
                }
                Entry::Vacant(e) => {
                    e.insert(smallvec::smallvec![(b, r)]);
                    None
                }
            };
            match earlier {
                Some(v) => {
                    subst[r] = Some(v);
                    func.values[r].def = ValueDef::Detached;
                    removed += 1;
                }
                None => keep.push(i),
            }
        }
        func.blocks[b].insts = keep;
    }
    if removed > 0 {
        func.replace_uses(|v| subst[v].unwrap_or(v));
    } else {
        *kept = Some(uni);
    }
    removed
}

/// The instruction with the operands of an integer operation that does not care about their
/// order sorted, so that `add a, b` and `add b, a` are one value. Floats keep their order: the
/// e-graph treats their commutation as exact only up to NaN payloads.
fn canonical(d: &InstData, int: bool) -> InstData {
    use crate::instructions::{BinaryOp, TernaryOp};
    let mut d = d.clone();
    if !int {
        return d;
    }
    match &mut d {
        InstData::Binary {
            op:
                BinaryOp::Add
                | BinaryOp::Mul
                | BinaryOp::And
                | BinaryOp::Or
                | BinaryOp::Xor
                | BinaryOp::Min
                | BinaryOp::Max,
            args,
        } => args.sort(),
        InstData::Ternary {
            op: TernaryOp::Add3,
            args,
        } => args.sort(),
        _ => {}
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_function as parse;

    #[test]
    fn a_product_of_the_loop_header_is_reused_by_the_body_it_dominates() {
        let src = "kernel k(s: u32, x: buf_mut<u32>) {
block0(v0: u32, v1: buf_mut<u32>):
    v2:u32 = const.u32 0
    jump block1(v2)
block1(v3: u32):
    v4:u32 = mul v3, v0
    v5:bool = lt v4, v0
    brif v5, block2, block3
block2:
    v6:u32 = mul v3, v0
    store v1[v6], v3
    v7:u32 = const.u32 1
    v8:u32 = add v3, v7
    jump block1(v8)
block3:
    v9:u32 = mul v3, v0
    store v1[v9], v9
    return
}";
        let mut f = parse(src).unwrap();
        let before = f.inst_count();
        assert_eq!(
            number_values(&mut f, &mut None),
            2,
            "body and exit reuse the header's mul"
        );
        crate::verify(&f).unwrap();
        assert_eq!(f.inst_count(), before - 2);
        // A block that does not dominate (the body for the exit) offers nothing: the exit's
        // mul became the header's, not the body's.
        let text = crate::write::function_to_string(&f);
        assert_eq!(text.matches("mul").count(), 1, "{text}");
    }
}

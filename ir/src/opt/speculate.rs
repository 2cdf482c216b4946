//! Speculation of uniform global loads out of conditional blocks.
//!
//! Takes a [`Function`]; gives it back with each uniform global-buffer load of a conditionally
//! run block (one predecessor, which ends in a two-way `brif`) moved, with the uniform pure
//! instructions its operands need, to the end of that predecessor. A global load cannot fault
//! (an index out of range gives 0, `docs/ir.md`), so running it on a path that skipped the block
//! is safe; what is not moved is a load after anything in the block that writes memory,
//! synchronizes or exchanges lanes, since the load must still read what it read before.
//!
//! Why: a uniform load is one scalar load per wave (`s_buffer_load`), whether or not any lane
//! takes the branch. Issued before the branch, its latency overlaps the predecessor's own loads
//! and work instead of starting only after the branch's mask is known: seed_2d's `b[0]`, behind
//! its bounds check, was a second scalar-memory round trip after the kernel-argument loads.
//! A divergent load is left where it is: it would cost a VGPR and vector-memory bandwidth for
//! lanes that do not need it; so is a uniform load that is not a scalar load (a writable
//! buffer, elements of other sizes), for the same reason.
//!
//! Loops: a block is left alone when its predecessor is a loop header (the loop's body: the
//! header runs once more than the body) or sits in a loop the block is not in (the loop's exit:
//! the load would run every iteration instead of once).

use super::loops::find_loops;
use crate::cfg::{ControlFlowGraph, DominatorTree};
use crate::entities::Block;
use crate::function::Function;
use crate::instructions::{InstData, Mem};
use crate::types::Type;
use crate::uniformity::Uniformity;
use cranelift_entity::SecondaryMap;

/// Moves uniform global loads (and the uniform pure instructions feeding them) out of
/// conditionally run blocks; gives how many instructions moved. `kept`: `func`'s uniformity as
/// in [`super::gvn::number_values`], given back when nothing moved.
pub fn hoist_uniform_loads(func: &mut Function, kept: &mut Option<Uniformity>) -> usize {
    // A kernel of one block has nothing conditional: no graph or uniformity needed.
    if func.layout.len() < 2 {
        return 0;
    }
    let cfg = ControlFlowGraph::new(func);
    hoist_uniform_loads_in(func, &cfg, None, kept)
}

/// [`hoist_uniform_loads`] with `func`'s graph (and its dominators, if made) already made:
/// moving instructions into a predecessor changes no branch target.
pub fn hoist_uniform_loads_in(
    func: &mut Function,
    cfg: &ControlFlowGraph,
    dom: Option<&DominatorTree>,
    kept: &mut Option<Uniformity>,
) -> usize {
    if func.layout.len() < 2 {
        return 0;
    }
    let candidates: Vec<(Block, Block)> = cfg
        .rpo
        .iter()
        .filter_map(|&b| {
            let [p] = cfg.preds[b][..] else { return None };
            let term = func.blocks[p].insts.last()?;
            match &func.insts[*term] {
                InstData::Brif {
                    then_dest,
                    else_dest,
                    ..
                } if then_dest.block != else_dest.block => {}
                _ => return None,
            }
            let has_load = func.blocks[b].insts.iter().any(|&i| {
                matches!(
                    func.insts[i],
                    InstData::Load {
                        mem: Mem::Global(_),
                        ..
                    }
                )
            });
            has_load.then_some((b, p))
        })
        .collect();
    if candidates.is_empty() {
        return 0;
    }
    let made;
    let dom = match dom {
        Some(d) => d,
        None => {
            made = DominatorTree::new(func, cfg);
            &made
        }
    };
    let loops = find_loops(func, cfg, dom);
    let uni = kept
        .take()
        .unwrap_or_else(|| Uniformity::with_cfg(func, cfg));
    let mut moved = 0;
    // Blocks whose instructions moved to their predecessor, latest first, so that a load can
    // move on again from a block that is itself conditional.
    for &(b, p) in candidates.iter().rev() {
        let same_loops = loops
            .iter()
            .all(|l| l.header != p && l.contains(p) == l.contains(b));
        if !same_loops {
            continue;
        }
        let insts = func.blocks[b].insts.clone();
        // Values defined in `b` by an instruction that stays there.
        let mut stays: SecondaryMap<crate::Value, bool> = SecondaryMap::new();
        stays.resize(func.values.len());
        for &v in &func.blocks[b].params {
            stays[v] = true;
        }
        for &i in &insts {
            for &r in &func.results[i] {
                stays[r] = true;
            }
        }
        // Whether an instruction of `b` may run at the predecessor's end: all its operands
        // come from outside `b` or from instructions that move too.
        let available = |stays: &SecondaryMap<crate::Value, bool>, i| {
            let mut ok = true;
            func.insts[i].for_each_arg(|a| ok &= !stays[a]);
            ok
        };
        let mut hoisted = Vec::new();
        // Pure uniform instructions seen so far whose operands are available: they move only
        // if a load needs them (an index computed in the block).
        let mut pure_ready = Vec::new();
        for &i in &insts {
            let data = &func.insts[i];
            let e = data.effects();
            let uniform = func.results[i].iter().all(|&r| uni.is_uniform(r));
            if e.is_pure() {
                if uniform && available(&stays, i) {
                    pure_ready.push(i);
                }
                continue;
            }
            let InstData::Load {
                mem: Mem::Global(buf),
                ..
            } = *data
            else {
                // Anything else with an effect: a later load must stay after it.
                break;
            };
            if !scalar_loadable(func, buf) {
                continue;
            }
            // The needed pure instructions, found by their results: mark them available first
            // (in order, so each sees its own operands' state), then test the load.
            let needed = needed_pure(func, i, &pure_ready, &stays);
            let mut trial = stays.clone();
            for &d in &needed {
                for &r in &func.results[d] {
                    trial[r] = false;
                }
            }
            if uniform && available(&trial, i) {
                stays = trial;
                for &r in &func.results[i] {
                    stays[r] = false;
                }
                hoisted.extend(needed);
                hoisted.push(i);
                pure_ready.retain(|d| !hoisted.contains(d));
            }
        }
        if hoisted.is_empty() {
            continue;
        }
        // In the block's order (the needed pure instructions came before their load).
        let order: SecondaryMap<crate::Inst, usize> = {
            let mut m = SecondaryMap::new();
            for (k, &i) in insts.iter().enumerate() {
                m[i] = k;
            }
            m
        };
        hoisted.sort_by_key(|&i| order[i]);
        func.blocks[b].insts.retain(|i| !hoisted.contains(i));
        moved += hoisted.len();
        let to = &mut func.blocks[p].insts;
        let at = to.len() - 1;
        to.splice(at..at, hoisted);
    }
    if moved == 0 {
        *kept = Some(uni);
    }
    moved
}

/// Whether a uniform load of `buf` can go through the scalar cache (isel's `scalar_load`): a
/// read-only buffer of 4- or 8-byte elements. Any other uniform load is a vector load of every
/// active lane, which is not worth running for waves that skip the block.
fn scalar_loadable(func: &Function, buf: crate::Value) -> bool {
    matches!(
        func.value_type(buf),
        Type::Buffer { elem, writable: false } if matches!(elem.ty().bytes(), 4 | 8)
    )
}

/// The instructions of `ready` (pure, uniform, operands from outside the block or from earlier
/// ones of `ready`) that the load `load` needs, transitively, in the order of `ready`. Operands
/// defined by something else in the block leave the load where it is (the caller checks).
fn needed_pure(
    func: &Function,
    load: crate::Inst,
    ready: &[crate::Inst],
    stays: &SecondaryMap<crate::Value, bool>,
) -> Vec<crate::Inst> {
    let mut want: Vec<crate::Value> = Vec::new();
    func.insts[load].for_each_arg(|a| {
        if stays[a] {
            want.push(a)
        }
    });
    let mut needed = Vec::new();
    // `ready` is in block order, so walking it backwards meets each user before its operands.
    for &d in ready.iter().rev() {
        if func.results[d].iter().any(|r| want.contains(r)) {
            needed.push(d);
            func.insts[d].for_each_arg(|a| {
                if stays[a] && !want.contains(&a) {
                    want.push(a)
                }
            });
        }
    }
    needed.reverse();
    needed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::BufferData;
    use crate::parse::parse_function;

    /// seed_2d's shape: a uniform load behind a divergent bounds check.
    const GUARDED: &str = "kernel k(b: buf<u32>, x: buf_mut<u32>, n: u32) {
block0(v0: buf<u32>, v1: buf_mut<u32>, v2: u32):
    v3:u32 = workitem_id.x
    v4:bool = lt v3, v2
    brif v4, block1, block2
block1:
    v5:u32 = const.u32 1
    v6:u32 = load v0[v5]
    v7:u32 = add v6, v3
    store v1[v3], v7
    v8:u32 = load v0[v3]
    jump block2
block2:
    return
}";

    #[test]
    fn a_guarded_uniform_load_and_its_index_move_before_the_branch() {
        let f = parse_function(GUARDED).unwrap();
        let mut g = f.clone();
        // The constant and the uniform load move; the divergent load (after a store) stays.
        assert_eq!(hoist_uniform_loads(&mut g, &mut None), 2);
        crate::verify(&g).unwrap();
        let entry = &g.blocks[g.layout[0]].insts;
        assert!(matches!(
            g.insts[entry[entry.len() - 2]],
            InstData::Load { .. }
        ));
        assert_eq!(
            g.blocks[g.layout[1]].insts.len(),
            4,
            "add, store, load, jump stay"
        );
        let run = |f: &Function| {
            use crate::interp::{run, Arg, LaunchDims};
            let mut args = vec![
                Arg::Buffer(BufferData::U32(vec![7, 40])),
                Arg::Buffer(BufferData::U32(vec![0; 8])),
                Arg::U32(5),
            ];
            let launch = LaunchDims {
                grid: [1, 1, 1],
                block: [8, 1, 1],
                dynamic_lds: 0,
            };
            run(f, &launch, &mut args).unwrap();
            match args.swap_remove(1) {
                Arg::Buffer(x) => x,
                other => panic!("the output buffer is gone: {other:?}"),
            }
        };
        let want = BufferData::U32(vec![40, 41, 42, 43, 44, 0, 0, 0]);
        assert_eq!(run(&f), want);
        assert_eq!(run(&g), want);
    }

    #[test]
    fn a_load_after_a_store_or_a_divergent_one_stays() {
        let src = "kernel k(b: buf_mut<u32>, n: u32) {
block0(v0: buf_mut<u32>, v1: u32):
    v2:u32 = workitem_id.x
    v3:bool = lt v2, v1
    brif v3, block1, block2
block1:
    v4:u32 = const.u32 0
    store v0[v4], v1
    v5:u32 = load v0[v4]
    v6:u32 = load v0[v2]
    v7:u32 = add v5, v6
    store v0[v2], v7
    jump block2
block2:
    return
}";
        let mut g = parse_function(src).unwrap();
        assert_eq!(hoist_uniform_loads(&mut g, &mut None), 0);
    }

    #[test]
    fn a_uniform_load_of_a_writable_or_16_bit_buffer_stays() {
        let src = "kernel k(b: buf<f16>, x: buf_mut<u32>, y: buf_mut<f16>, n: u32) {
block0(v0: buf<f16>, v1: buf_mut<u32>, v2: buf_mut<f16>, v3: u32):
    v4:u32 = workitem_id.x
    v5:bool = lt v4, v3
    brif v5, block1, block2
block1:
    v6:u32 = const.u32 1
    v7:u32 = load v1[v6]
    v8:f16 = load v0[v6]
    store v1[v4], v7
    store v2[v4], v8
    jump block2
block2:
    return
}";
        let mut g = parse_function(src).unwrap();
        assert_eq!(hoist_uniform_loads(&mut g, &mut None), 0);
    }

    #[test]
    fn a_load_stays_in_a_loop_body_and_out_of_a_loop_exit() {
        let src = "kernel k(b: buf<u32>, x: buf_mut<u32>, n: u32) {
block0(v0: buf<u32>, v1: buf_mut<u32>, v2: u32):
    v3:u32 = const.u32 0
    jump block1(v3)
block1(v4: u32):
    v5:bool = lt v4, v2
    brif v5, block2, block3
block2:
    v6:u32 = load v0[v4]
    store v1[v4], v6
    v7:u32 = const.u32 1
    v8:u32 = add v4, v7
    jump block1(v8)
block3:
    v9:u32 = load v0[v3]
    store v1[v2], v9
    return
}";
        let mut g = parse_function(src).unwrap();
        assert_eq!(hoist_uniform_loads(&mut g, &mut None), 0);
    }
}

//! Uniformity (divergence) analysis: which values are the same in every active lane of a wave,
//! and which branches can send lanes of one wave different ways.
//!
//! Takes a [`Function`]; gives a [`Uniformity`] that the backend queries per value (uniform →
//! SGPR and SALU, divergent → VGPR and VALU) and per block (a divergent branch needs EXEC-mask
//! control flow; a uniform one a scalar branch).
//!
//! Rules, iterated to a fixed point:
//! - Sources of divergence: `workitem_id.*`, `lane_id`, atomics (each lane gets its own old
//!   value), `wave_shuffle` and `wave_scan`.
//! - Always uniform: constants, kernel parameters, `workgroup_id`/`workgroup_size`/
//!   `num_workgroups`, `buffer_len`, `wave_broadcast`, `wave_reduce`.
//! - Every other result (loads included: a load from a uniform address is uniform) is divergent
//!   when an operand is.
//! - Sync dependence: where paths from different successors of a divergent branch meet (before
//!   its immediate post-dominator), block parameters are divergent: lanes arrive from different
//!   paths. This also covers values leaving a loop through a divergent exit as block arguments.
//! - Temporal divergence: a value defined inside a loop that lanes leave in different iterations
//!   (a divergent exit) and used outside it is divergent, even if it is uniform inside the loop.

use crate::cfg::{ControlFlowGraph, PostDominatorTree};
use crate::entities::{Block, Value};
use crate::function::Function;
use crate::instructions::{InstData, SpecialReg};
use cranelift_entity::SecondaryMap;

/// What a divergent branch implies, from the CFG alone.
#[derive(Clone, Debug, Default)]
struct BranchRegion {
    /// Blocks between the branch and its immediate post-dominator (which may run with part of
    /// the wave).
    region: Vec<Block>,
    /// Blocks reached from two or more of the branch's successors (before the post-dominator)
    /// with several predecessors: their parameters merge lanes from different paths.
    joins: Vec<Block>,
    /// When the branch leaves a loop: the blocks of the region that lead back to it.
    cycle: Option<SecondaryMap<Block, bool>>,
    /// When it leaves a loop: the values defined in [`BranchRegion::cycle`] and used outside
    /// it (each once), which the temporal-divergence rule marks. They depend on the function
    /// alone, not on what is divergent: found once per branch instead of by a walk over every
    /// use of the function in every pass of the analysis.
    escapes: Vec<Value>,
}

impl BranchRegion {
    fn new(cfg: &ControlFlowGraph, pdt: &PostDominatorTree, d: Block) -> Self {
        let post = pdt.ipdom(d);
        // Label every block reachable from each successor before the post-dominator.
        let mut labels: SecondaryMap<Block, u8> = SecondaryMap::new();
        labels.resize(cfg.succs.as_values_slice().len());
        let mut work = Vec::new();
        for (k, &s) in cfg.succs[d].iter().enumerate() {
            let bit = 1u8 << k;
            work.push(s);
            while let Some(b) = work.pop() {
                if labels[b] & bit != 0 {
                    continue;
                }
                labels[b] |= bit;
                if Some(b) == post {
                    continue;
                }
                work.extend(cfg.succs[b].iter().copied());
            }
        }
        let mut r = BranchRegion::default();
        let mut in_region: SecondaryMap<Block, bool> = SecondaryMap::new();
        in_region.resize(cfg.succs.as_values_slice().len());
        for &b in &cfg.rpo {
            if labels[b] == 0 {
                continue;
            }
            if Some(b) != post {
                r.region.push(b);
                in_region[b] = true;
            }
            if labels[b].count_ones() >= 2 && cfg.preds[b].len() >= 2 {
                r.joins.push(b);
            }
        }
        // A loop left through this branch: the blocks of the region that lead back to it.
        if in_region[d] {
            let mut cycle: SecondaryMap<Block, bool> = SecondaryMap::new();
            cycle.resize(cfg.succs.as_values_slice().len());
            let mut work = vec![d];
            while let Some(b) = work.pop() {
                if cycle[b] {
                    continue;
                }
                cycle[b] = true;
                for &p in &cfg.preds[b] {
                    if in_region[p] {
                        work.push(p);
                    }
                }
            }
            r.cycle = Some(cycle);
        }
        r
    }
}

/// The result of the analysis.
#[derive(Clone, Debug, Default)]
pub struct Uniformity {
    divergent: SecondaryMap<Value, bool>,
    divergent_branch: SecondaryMap<Block, bool>,
    divergent_region: SecondaryMap<Block, bool>,
}

impl Uniformity {
    /// Analyses `func` (verified: every use dominated by its definition).
    pub fn compute(func: &Function) -> Self {
        Self::with_cfg(func, &ControlFlowGraph::new(func))
    }

    /// [`Uniformity::compute`] with `func`'s control-flow graph already made.
    pub fn with_cfg(func: &Function, cfg: &ControlFlowGraph) -> Self {
        // Post-dominators are needed only for divergent branches: made at the first one.
        let mut pdt: Option<PostDominatorTree> = None;
        // Each block's place in reverse post-order: a branch argument marks a parameter "late"
        // (after the pass read it) when it goes back to a block the pass has already visited.
        let mut rpo_pos: SecondaryMap<Block, u32> = SecondaryMap::with_default(u32::MAX);
        rpo_pos.resize(func.blocks.len());
        for (k, &b) in cfg.rpo.iter().enumerate() {
            rpo_pos[b] = k as u32;
        }
        let mut u = Uniformity::default();
        // Sized once: growing the maps value by value was a tenth of the analysis.
        u.divergent.resize(func.values.len());
        u.divergent_branch.resize(func.blocks.len());
        u.divergent_region.resize(func.blocks.len());
        // Where each value is defined and where it is used, for the temporal-divergence rule:
        // made when a divergent branch first leaves a loop (most kernels have none).
        let mut defs_and_uses: Option<(SecondaryMap<Value, Option<Block>>, Vec<(Value, Block)>)> =
            None;
        let defs_and_uses_of = || {
            let mut def_block: SecondaryMap<Value, Option<Block>> =
                SecondaryMap::with_capacity(func.values.len());
            def_block.resize(func.values.len());
            let mut uses: Vec<(Value, Block)> = Vec::new();
            for &b in &cfg.rpo {
                for &p in &func.blocks[b].params {
                    def_block[p] = Some(b);
                }
                for &i in &func.blocks[b].insts {
                    for &r in &func.results[i] {
                        def_block[r] = Some(b);
                    }
                    func.insts[i].for_each_arg(|a| uses.push((a, b)));
                }
            }
            (def_block, uses)
        };
        let mut regions: SecondaryMap<Block, Option<BranchRegion>> = SecondaryMap::new();
        regions.resize(func.blocks.len());
        // Another pass is needed only when this one marked a value after it may have been
        // read: a parameter of a block already visited (a loop's back edge), or anything the
        // control-dependence rules mark. A value marked by the data rules in order is read
        // only later in the pass (definitions dominate uses, and reverse post-order visits
        // dominators first), so a pass that marks nothing else leaves the next one nothing
        // to do: the last pass, which used to mark nothing, is not run.
        loop {
            let mut changed = false;
            let mut in_order = false;
            fn mark_in(u: &mut Uniformity, changed: &mut bool, v: Value) {
                if !u.divergent[v] {
                    u.divergent[v] = true;
                    *changed = true;
                }
            }
            macro_rules! mark {
                ($u:expr, $v:expr) => {
                    mark_in($u, &mut changed, $v)
                };
            }
            // Data dependence.
            for &b in &cfg.rpo {
                let here = rpo_pos[b];
                for &i in &func.blocks[b].insts {
                    let data = &func.insts[i];
                    let div = match data {
                        InstData::Special { reg } => {
                            matches!(reg, SpecialReg::WorkitemId(_) | SpecialReg::LaneId)
                        }
                        InstData::Atomic { .. }
                        | InstData::WaveShuffle { .. }
                        | InstData::WaveScan { .. } => true,
                        // A fragment is per lane by definition (each lane holds its own part).
                        _ if func.results[i]
                            .iter()
                            .any(|r| matches!(func.values[*r].ty, crate::types::Type::Frag(_))) =>
                        {
                            true
                        }
                        InstData::WaveBroadcast { .. }
                        | InstData::WaveReduce { .. }
                        | InstData::BufferLen { .. } => false,
                        _ => {
                            let mut d = false;
                            data.for_each_arg(|a| d |= u.divergent[a]);
                            d
                        }
                    };
                    if div {
                        for &r in &func.results[i] {
                            mark_in(&mut u, &mut in_order, r);
                        }
                    }
                    for call in data.branch_targets() {
                        let params = &func.blocks[call.block].params;
                        let back = rpo_pos[call.block] <= here;
                        for (a, p) in call.args.iter().zip(params) {
                            if u.divergent[*a] {
                                if back {
                                    mark!(&mut u, *p);
                                } else {
                                    mark_in(&mut u, &mut in_order, *p);
                                }
                            }
                        }
                    }
                }
            }
            // Control dependence.
            for &d in &cfg.rpo {
                let Some(t) = func.terminator(d) else {
                    continue;
                };
                let InstData::Brif { cond, .. } = &func.insts[t] else {
                    continue;
                };
                if !u.divergent[*cond] || cfg.succs[d].len() < 2 {
                    continue;
                }
                // A newly divergent branch changes nothing the rules read: its region and
                // marks follow here, in this pass.
                u.divergent_branch[d] = true;
                // What the branch implies depends only on the CFG: computed once per branch,
                // the first time the branch is found divergent.
                if regions[d].is_none() {
                    let pdt = pdt.get_or_insert_with(|| PostDominatorTree::new(func, cfg));
                    let mut r = BranchRegion::new(cfg, pdt, d);
                    for &b in &r.region {
                        u.divergent_region[b] = true;
                    }
                    if let Some(cycle) = &r.cycle {
                        let (def_block, uses) = defs_and_uses.get_or_insert_with(&defs_and_uses_of);
                        let mut seen: SecondaryMap<Value, bool> = SecondaryMap::new();
                        seen.resize(func.values.len());
                        for &(v, ub) in uses.iter() {
                            if let Some(db) = def_block[v] {
                                if cycle[db] && !cycle[ub] && !std::mem::replace(&mut seen[v], true)
                                {
                                    r.escapes.push(v);
                                }
                            }
                        }
                    }
                    regions[d] = Some(r);
                }
                let r = regions[d].as_ref().expect("computed above");
                for &b in &r.joins {
                    for &p in &func.blocks[b].params {
                        mark!(&mut u, p);
                    }
                }
                for &v in &r.escapes {
                    mark!(&mut u, v);
                }
            }
            if !changed {
                break;
            }
        }
        u
    }

    /// Whether `v` can differ between the active lanes of a wave.
    pub fn is_divergent(&self, v: Value) -> bool {
        self.divergent[v]
    }

    /// Whether `v` is the same in every active lane.
    pub fn is_uniform(&self, v: Value) -> bool {
        !self.divergent[v]
    }

    /// Whether the branch ending `b` can send lanes of one wave different ways.
    pub fn is_divergent_branch(&self, b: Block) -> bool {
        self.divergent_branch[b]
    }

    /// Whether `b` can run with only part of a wave's lanes active (it lies between a divergent
    /// branch and the point where its paths join).
    pub fn in_divergent_region(&self, b: Block) -> bool {
        self.divergent_region[b]
    }
}

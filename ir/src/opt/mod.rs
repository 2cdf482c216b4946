//! The e-graph optimizer.
//!
//! Takes a verified [`Function`]; gives an equivalent one (verified, renumbered) and an
//! [`OptReport`]. First, the ids and sizes a declared workgroup size fixes become constants,
//! and small counted loops are unrolled in full ([`unroll`]), small loops with a runtime trip
//! count by a factor ([`unroll_runtime`]). For each block, the pure dataflow (constants, arithmetic, comparisons, selects,
//! conversions) is loaded into an `egg` e-graph ([`lang`]); everything else (block parameters,
//! loads, atomics, ids, wave operations, values of other blocks) enters as leaves. Every integer
//! sum the block needs gets its canonical forms ([`linear`]: linear combinations, instead of an
//! associative closure), then the [`rules`] run under node and iteration limits (never a time limit, so that the output does
//! not depend on machine load). Then the block is rebuilt: its non-pure instructions stay in
//! order, and each value they (or the terminator, or other blocks) need is extracted in its
//! cheapest form under the GCN [`cost`] model — only among forms whose leaves are defined by
//! then. Memory instructions whose index is `x + constant` take the constant into their
//! immediate offset when it fits the hardware field. A block whose extraction fails is kept as it
//! was. Last, the passes across blocks ([`loop_passes`]): value numbering by dominance ([`gvn`]),
//! loop-invariant code motion ([`licm`]), strength reduction of induction products ([`lsr`]) and
//! dead code elimination with block parameters ([`dce`]).

pub mod cost;
pub mod dce;
pub mod gvn;
pub mod lang;
pub mod licm;
pub mod linear;
pub mod loops;
pub mod lsr;
pub mod pattern;
pub mod rules;
pub mod run;
pub mod speculate;
pub mod unroll;
pub mod unroll_runtime;

use crate::cfg::{ControlFlowGraph, DominatorTree};
use crate::entities::{Block, Value};
use crate::function::{Function, ValueDef};
use crate::instructions::{InstData, Mem};
use crate::types::Type;
use crate::uniformity::Uniformity;
use cost::{Cost, GcnCost};
use cranelift_entity::SecondaryMap;
use egg::{Id, Language};
use lang::{ConstVal, KGraph, KernelAnalysis, LeafId, LeafInfo, Node, NodeOp, TyTag};
use std::time::{Duration, Instant};

/// Limits of the optimizer.
#[derive(Clone, Copy, Debug)]
pub struct OptOptions {
    /// E-graph nodes per block before rewriting stops.
    pub node_limit: usize,
    /// Rewrite iterations per block.
    pub iter_limit: usize,
    /// Iterations in a row without a cheaper form of the block's needed values after which
    /// rewriting stops (the first iteration sets the mark; 0 = never stop for this).
    pub patience: usize,
}

impl Default for OptOptions {
    /// 5,000 nodes, 2 iterations, no patience. Integer sums get their canonical forms before
    /// rewriting ([`linear`]), so the rules only fuse and reduce: a multiply by 2^k becomes a
    /// shift in the first iteration and the shift a `lshl_add` in the second. More iterations
    /// found no smaller code on the library (3: gemm 1442 instructions instead of 1440; 8 with
    /// patience 2: 1457) and cost ~3× the rewriting time (`docs/performance-log.md`).
    fn default() -> Self {
        OptOptions {
            node_limit: 5_000,
            iter_limit: 2,
            patience: 0,
        }
    }
}

/// What happened in one block.
#[derive(Clone, Debug)]
pub struct BlockReport {
    /// The block (numbering of the input function).
    pub block: Block,
    /// Pure instructions loaded into the e-graph.
    pub pure_insts: usize,
    /// E-nodes after rewriting.
    pub nodes: usize,
    /// E-classes after rewriting.
    pub classes: usize,
    /// Iterations run.
    pub iterations: usize,
    /// Why rewriting stopped.
    pub stop: String,
    /// Time spent on the block, in microseconds (reported only, never used to decide).
    pub micros: u128,
    /// Whether the rebuilt block replaced the original.
    pub rebuilt: bool,
}

/// The optimizer's debug dump.
#[derive(Clone, Debug, Default)]
pub struct OptReport {
    /// Per block.
    pub blocks: Vec<BlockReport>,
    /// Instructions before.
    pub insts_before: usize,
    /// Instructions after.
    pub insts_after: usize,
    /// Estimated ALU cycles per wave before ([`cost::estimate_cycles`]).
    pub cycles_before: u64,
    /// Estimated ALU cycles per wave after.
    pub cycles_after: u64,
    /// Rules in the set used.
    pub rules: usize,
    /// Memory instructions that took a constant into their immediate offset.
    pub folded_offsets: usize,
    /// Loops unrolled before the e-graph ran: in full ([`unroll`]) or, with a runtime trip
    /// count, by a factor ([`unroll_runtime`]).
    pub unrolled_loops: usize,
    /// Instructions after unrolling, before the e-graph (equal to `insts_before` without it).
    pub insts_unrolled: usize,
    /// Estimated ALU cycles after unrolling, before the e-graph: the static estimate counts each
    /// instruction once, so full unrolling raises it even where it removes loop overhead.
    pub cycles_unrolled: u64,
    /// After the e-graph, the loop passes ([`loop_passes`]): repeated instructions removed by
    /// value numbering across blocks.
    pub numbered: usize,
    /// Loop-invariant instructions hoisted to preheaders.
    pub hoisted: usize,
    /// Uniform global loads, and the instructions their indices need, moved out of conditional
    /// blocks ([`speculate`]).
    pub speculated: usize,
    /// Header parameters added by strength reduction.
    pub reduced_ivs: usize,
    /// Dead instructions and block parameters removed.
    pub dead: (usize, usize),
    /// E-nodes summed over the blocks' e-graphs after rewriting.
    pub nodes: usize,
    /// Where the time went.
    pub timings: OptTimings,
}

/// Where the optimizer's time went, by phase (reported only, never used to decide).
#[derive(Clone, Copy, Debug, Default)]
pub struct OptTimings {
    /// Specials folded, loops unrolled, uniformity and the input's cost estimate.
    pub prepare: Duration,
    /// The blocks' e-graphs built from their pure instructions.
    pub build: Duration,
    /// Canonical forms of the blocks' integer sums added ([`linear`]).
    pub sums: Duration,
    /// Rewriting (equality saturation), all blocks.
    pub saturate: Duration,
    /// Extraction and rebuilding of the blocks.
    pub extract: Duration,
    /// Replacements followed, unrolled iterations merged.
    pub merge: Duration,
    /// Value numbering ([`gvn`], both runs).
    pub gvn: Duration,
    /// Loop-invariant code motion ([`licm`]) and the speculation of uniform loads
    /// ([`speculate`]).
    pub licm: Duration,
    /// Strength reduction ([`lsr`], its trials included).
    pub lsr: Duration,
    /// Dead code elimination ([`dce`]).
    pub dce: Duration,
    /// Renumbering and the output's cost estimate.
    pub finish: Duration,
}

impl OptTimings {
    /// The phases with their names, in pipeline order.
    pub fn phases(&self) -> [(&'static str, Duration); 11] {
        [
            ("prepare", self.prepare),
            ("build", self.build),
            ("sums", self.sums),
            ("saturate", self.saturate),
            ("extract", self.extract),
            ("merge", self.merge),
            ("gvn", self.gvn),
            ("licm", self.licm),
            ("lsr", self.lsr),
            ("dce", self.dce),
            ("finish", self.finish),
        ]
    }
}

/// What the loop passes did.
#[derive(Clone, Copy, Debug, Default)]
struct LoopPasses {
    numbered: usize,
    hoisted: usize,
    speculated: usize,
    reduced_ivs: usize,
    dead: (usize, usize),
}

/// Runs `f`, adding its time to `slot`.
fn timed<T>(slot: &mut Duration, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    *slot += t.elapsed();
    r
}

/// The passes across blocks that the per-block e-graph cannot do: value numbering across
/// dominating blocks ([`gvn`]), loop-invariant code motion ([`licm`]), strength reduction of
/// induction-variable products ([`lsr`]), value numbering again (the reduced loop's adds repeat
/// its step) and dead code elimination ([`dce`]: the replaced products and unused counters).
fn loop_passes(func: &mut Function, t: &mut OptTimings) -> LoopPasses {
    // A pass that changes nothing hands its uniformity to the next one.
    let mut kept = None;
    // None of these passes changes a branch target: one graph and dominator tree serve all.
    let (cfg, dom) = timed(&mut t.gvn, || {
        let cfg = ControlFlowGraph::new(func);
        let dom = DominatorTree::new(func, &cfg);
        (cfg, dom)
    });
    let numbered = timed(&mut t.gvn, || {
        gvn::number_values_in(func, &cfg, &dom, &mut kept)
    });
    let hoisted = timed(&mut t.licm, || {
        licm::hoist_invariants_in(func, &cfg, &dom, &mut kept)
    });
    let speculated = timed(&mut t.licm, || {
        speculate::hoist_uniform_loads_in(func, &cfg, Some(&dom), &mut kept)
    });
    let reduced = timed(&mut t.lsr, || {
        lsr::reduce_strength_in(func, &cfg, &dom, kept)
    });
    let reduced_ivs = reduced.added;
    // A kept strength-reduction trial was numbered and cleaned after its rewrite, which came
    // after hoisting and speculation: numbering and cleaning it again would change nothing.
    if reduced.cleaned {
        return LoopPasses {
            numbered,
            hoisted,
            speculated,
            reduced_ivs,
            dead: (0, 0),
        };
    }
    // Numbering again finds something only in what hoisting, speculation or strength reduction
    // changed: a numbered function numbers to itself (each value is looked up after its
    // operands were renamed, in one pass).
    let numbered = if hoisted > 0 || speculated > 0 || reduced_ivs > 0 {
        numbered
            + timed(&mut t.gvn, || {
                gvn::number_values_in(func, &cfg, &dom, &mut None)
            })
    } else {
        numbered
    };
    let dead = timed(&mut t.dce, || dce::remove_dead_code(func));
    LoopPasses {
        numbered,
        hoisted,
        speculated,
        reduced_ivs,
        dead,
    }
}

impl std::fmt::Display for OptReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "e-graph optimizer: {} rules, {} -> {} instructions ({} loops unrolled: {}), {} -> {} estimated ALU cycles, {} offsets folded",
            self.rules, self.insts_before, self.insts_after, self.unrolled_loops, self.insts_unrolled, self.cycles_before, self.cycles_after, self.folded_offsets
        )?;
        writeln!(
            f,
            "loop passes: {} repeated values numbered, {} invariants hoisted, {} instructions speculated, {} induction sums added, {} dead instructions and {} dead parameters removed",
            self.numbered, self.hoisted, self.speculated, self.reduced_ivs, self.dead.0, self.dead.1
        )?;
        write!(f, "time (us), {} e-nodes:", self.nodes)?;
        for (name, d) in self.timings.phases() {
            write!(f, " {name} {}", d.as_micros())?;
        }
        writeln!(f)?;
        for b in &self.blocks {
            writeln!(
                f,
                "  {}: {} pure insts, {} nodes, {} classes, {} iterations, stop: {}, {} us{}",
                b.block,
                b.pure_insts,
                b.nodes,
                b.classes,
                b.iterations,
                b.stop,
                b.micros,
                if b.rebuilt { "" } else { " (kept)" }
            )?;
        }
        Ok(())
    }
}

/// Number of rules the optimizer uses when contraction is allowed (all of them).
pub fn rule_count() -> usize {
    rules::base_rules().len() + rules::contraction_rules().len()
}

/// Largest immediate offset in bytes: 12 bits for buffer (MUBUF) instructions, 16 for LDS (DS).
fn max_offset_bytes(mem: &Mem) -> u64 {
    match mem {
        Mem::Global(_) => 4095,
        Mem::Lds(_) => 65535,
    }
}

/// The index operand of a memory instruction.
fn mem_index(d: &InstData) -> Option<Value> {
    match d {
        InstData::Load { index, .. }
        | InstData::Store { index, .. }
        | InstData::Atomic { index, .. }
        | InstData::FragLoad { index, .. }
        | InstData::FragStore { index, .. } => Some(*index),
        _ => None,
    }
}

/// Arithmetic with no memory access: a value the passes may move, copy or drop freely.
pub fn is_pure(d: &InstData) -> bool {
    matches!(
        d,
        InstData::Const { .. }
            | InstData::Unary { .. }
            | InstData::Binary { .. }
            | InstData::Ternary { .. }
            | InstData::Cmp { .. }
            | InstData::Select { .. }
            | InstData::Convert { .. }
            | InstData::Bitcast { .. }
    )
}

fn node_op(d: &InstData) -> Option<NodeOp> {
    Some(match d {
        InstData::Unary { op, .. } => NodeOp::Unary(*op),
        InstData::Binary { op, .. } => NodeOp::Binary(*op),
        InstData::Ternary { op, .. } => NodeOp::Ternary(*op),
        InstData::Cmp { op, .. } => NodeOp::Cmp(*op),
        InstData::Select { .. } => NodeOp::Select,
        InstData::Convert { .. } => NodeOp::Convert,
        InstData::Bitcast { .. } => NodeOp::Bitcast,
        _ => return None,
    })
}

fn inst_of(op: NodeOp, args: &[Value], ty: Type) -> InstData {
    match op {
        NodeOp::Unary(op) => InstData::Unary { op, arg: args[0] },
        NodeOp::Binary(op) => InstData::Binary {
            op,
            args: [args[0], args[1]],
        },
        NodeOp::Ternary(op) => InstData::Ternary {
            op,
            args: [args[0], args[1], args[2]],
        },
        NodeOp::Cmp(op) => InstData::Cmp {
            op,
            args: [args[0], args[1]],
        },
        NodeOp::Select => InstData::Select {
            args: [args[0], args[1], args[2]],
        },
        NodeOp::Convert => InstData::Convert {
            to: ty,
            arg: args[0],
        },
        NodeOp::Bitcast => InstData::Bitcast {
            to: ty,
            arg: args[0],
        },
    }
}

/// The rule set, built once per process: parsing and compiling the patterns of ~60 rules cost
/// more than rewriting the small blocks of a typical kernel did.
fn rule_set(contract: bool) -> &'static rules::RuleSet {
    use std::sync::OnceLock;
    static BASE: OnceLock<rules::RuleSet> = OnceLock::new();
    static ALL: OnceLock<rules::RuleSet> = OnceLock::new();
    if contract {
        ALL.get_or_init(|| {
            let mut r = rules::base_rules();
            r.extend(rules::contraction_rules());
            rules::RuleSet::new(r)
        })
    } else {
        BASE.get_or_init(|| rules::RuleSet::new(rules::base_rules()))
    }
}

/// Optimizes `func` with default limits.
pub fn optimize(func: &Function) -> (Function, OptReport) {
    optimize_with(func, &OptOptions::default())
}

/// The function [`optimize`] gives, without its report: what a compile needs. The report's
/// cycle estimates (a uniformity analysis and a cost walk of the input, the unrolled and the
/// output function; read only by `kjit dump`, `kjit bench --opt-phases` and tests) are not made.
pub fn optimized(func: &Function) -> Function {
    let opts = OptOptions::default();
    quanta::with_clock(still_clock(), || optimize_inner(func, &opts, false)).0
}

/// A clock that never ticks, for egg's timing of its own phases.
///
/// egg times every `EGraph::rebuild` with `quanta::Instant` (for log messages only). The first
/// `quanta::Instant::now()` in a process calibrates the TSC against the OS clock, which cost the
/// first compile in a process 2.2 M instructions (~30% of it) and up to milliseconds of wall
/// time. Under this mock clock, reading the time is a load of a constant and nothing is
/// calibrated; nothing of the optimizer's outcome depends on time.
fn still_clock() -> &'static quanta::Clock {
    static CLOCK: std::sync::OnceLock<quanta::Clock> = std::sync::OnceLock::new();
    CLOCK.get_or_init(|| quanta::Clock::mock().0)
}

/// Optimizes `func`.
pub fn optimize_with(func: &Function, opts: &OptOptions) -> (Function, OptReport) {
    quanta::with_clock(still_clock(), || optimize_inner(func, opts, true))
}

/// `func` with the special registers its declared workgroup size fixes
/// ([`Function::known_special`]) turned into constants, so that the rules fold what depends on
/// them (a 1-D kernel's flat id is its x id); `None` when there are none.
fn fold_known_specials(func: &Function) -> Option<Function> {
    func.workgroup_size?;
    let mut out = func.clone();
    let mut changed = false;
    for data in out.insts.values_mut() {
        if let InstData::Special { reg } = *data {
            if let Some(v) = func.known_special(reg) {
                *data = InstData::Const {
                    ty: Type::U32,
                    bits: v as u64,
                };
                changed = true;
            }
        }
    }
    changed.then_some(out)
}

/// The optimizer; the report's cycle estimates only when `estimate` (they decide nothing).
fn optimize_inner(func: &Function, opts: &OptOptions, estimate: bool) -> (Function, OptReport) {
    let mut t = OptTimings::default();
    let start = Instant::now();
    let input = func;
    let folded = fold_known_specials(func);
    let func = folded.as_ref().unwrap_or(func);
    let unrolled = unroll::unroll_small_loops(func);
    let (func, chains) = match &unrolled {
        Some((f, chains)) => (f, chains.as_slice()),
        None => (func, &[][..]),
    };
    let runtime = unroll_runtime::unroll_runtime_loops(func).map(|(f, more)| {
        let all: Vec<Vec<Block>> = chains.iter().cloned().chain(more).collect();
        (f, all)
    });
    let (func, chains) = match &runtime {
        Some((f, all)) => (f, all.as_slice()),
        None => (func, chains),
    };
    let unrolled_loops = chains.len();
    let rules = rule_set(func.flags.contract);
    let uni = Uniformity::compute(func);
    let mut out = func.clone();
    let cycles_unrolled = if estimate {
        cost::estimate_cycles_with(func, &uni)
    } else {
        0
    };
    let mut report = OptReport {
        insts_before: input.inst_count(),
        insts_unrolled: func.inst_count(),
        cycles_before: if unrolled_loops == 0 || !estimate {
            cycles_unrolled
        } else {
            cost::estimate_cycles(input)
        },
        cycles_unrolled,
        rules: rules.rules.len(),
        unrolled_loops,
        ..Default::default()
    };
    // Where each value is used outside its own block.
    let mut def_block: SecondaryMap<Value, Option<Block>> = SecondaryMap::new();
    def_block.resize(func.values.len());
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            for &r in &func.results[i] {
                def_block[r] = Some(b);
            }
        }
    }
    let mut live_out: SecondaryMap<Value, bool> = SecondaryMap::new();
    live_out.resize(func.values.len());
    for &b in &func.layout {
        for &i in &func.blocks[b].insts {
            func.insts[i].for_each_arg(|a| {
                if def_block[a].is_some_and(|d| d != b) {
                    live_out[a] = true;
                }
            });
        }
    }
    t.prepare = start.elapsed();
    let mut subst: SecondaryMap<Value, Option<Value>> = SecondaryMap::new();
    subst.resize(func.values.len());
    let mut maps = BlockMaps::new(func.values.len());
    for &b in &func.layout {
        let start = Instant::now();
        let r = optimize_block(
            func,
            &mut out,
            b,
            &uni,
            &live_out,
            rules,
            opts,
            &mut subst,
            &mut maps,
            &mut report.folded_offsets,
            &mut t,
        );
        maps.clear(func, b);
        let mut br = r;
        br.micros = start.elapsed().as_micros();
        report.nodes += br.nodes;
        report.blocks.push(br);
    }
    timed(&mut t.merge, || {
        // A replacement can itself be a pure value of an earlier rebuilt block (a later
        // block's value reduced to a leaf, e.g. `not (not v)` to `v`): follow the chain to
        // the value that is defined. Chains go strictly up the dominator tree (a leaf is
        // defined in a block that dominates its use), so they end; the bound only guards
        // against a bug looping.
        out.replace_uses(|v| {
            let mut v = v;
            for _ in 0..=func.values.len() {
                match subst[v] {
                    Some(n) if n != v => v = n,
                    _ => break,
                }
            }
            v
        });
        // Unrolled iterations were optimized one block each; now one block per loop.
        unroll::merge_unrolled(&mut out, chains);
    });
    let lp = loop_passes(&mut out, &mut t);
    report.numbered = lp.numbered;
    report.hoisted = lp.hoisted;
    report.speculated = lp.speculated;
    report.reduced_ivs = lp.reduced_ivs;
    report.dead = lp.dead;
    let start = Instant::now();
    let out = out.renumbered();
    report.insts_after = out.inst_count();
    if estimate {
        report.cycles_after = cost::estimate_cycles(&out);
    }
    t.finish = start.elapsed();
    report.timings = t;
    (out, report)
}

/// The cheapest cost of each e-class, as `egg::Extractor::new` computes it (passes over the
/// classes until nothing improves; per class the cheapest node), kept in a vector indexed by
/// class id instead of a hash map, and without cloning the best node (only the costs are used).
/// The passes visit the classes in id order, not in the e-graph's hash order: ids grow as
/// classes are made, so children mostly come before their parents and two or three passes
/// reach the fixed point (in hash order a chain of n dependent operations took up to n passes,
/// most of the extraction time of the 500-instruction blocks of `hash_rounds`). The costs are
/// the least fixed point either way, so the order does not change them.
struct BestCosts {
    costs: Vec<Option<Cost>>,
    /// Per class: [`cost::operand_info`].
    info: Vec<(Option<Type>, u32)>,
    /// Per class: its [`lang::ClassData::avail`] (indexing the e-graph is a hash lookup).
    avail: Vec<i64>,
    /// Whether the e-graph was clean (rebuilt): then every child id in a node is canonical
    /// and needs no `find`.
    clean: bool,
}

impl BestCosts {
    /// The index of the class of `c`, a child of a node of `g` (no `find` when `g` was clean).
    fn child(&self, g: &KGraph, c: Id) -> usize {
        if self.clean {
            usize::from(c)
        } else {
            usize::from(g.find(c))
        }
    }

    fn new(g: &KGraph) -> BestCosts {
        // The classes themselves in id order (indexing the e-graph by id is a hash lookup).
        let mut order: Vec<&egg::EClass<Node, lang::ClassData>> = g.classes().collect();
        order.sort_unstable_by_key(|c| c.id);
        let n = order.last().map_or(0, |c| usize::from(c.id) + 1);
        let mut costs: Vec<Option<Cost>> = vec![None; n];
        let cf = GcnCost { egraph: g };
        // Operand facts per class, looked up once instead of once per node per pass.
        let mut info: Vec<(Option<Type>, u32)> = vec![(None, 0); n];
        let mut avail: Vec<i64> = vec![-1; n];
        for c in &order {
            info[usize::from(c.id)] = cost::class_operand_info(&c.data);
            avail[usize::from(c.id)] = c.data.avail;
        }
        let clean = g.clean;
        let find = |c: Id| -> usize {
            if clean {
                usize::from(c)
            } else {
                usize::from(g.find(c))
            }
        };
        // A class's best cost is a function of its children's costs: a pass skips a class none
        // of whose children's costs changed since it was last computed (it would find the same
        // cost again). `changed_at`: the count of cost changes when a class's cost last changed;
        // `seen_at`: the count when the class was last computed (`None`: never).
        let mut changes = 0u32;
        let mut changed_at: Vec<u32> = vec![0; n];
        let mut seen_at: Vec<Option<u32>> = vec![None; n];
        loop {
            let mut changed = false;
            for &class in &order {
                let k = usize::from(class.id);
                if let Some(seen) = seen_at[k] {
                    let stale = class
                        .iter()
                        .any(|node| node.children().iter().any(|c| changed_at[find(*c)] > seen));
                    if !stale {
                        continue;
                    }
                }
                seen_at[k] = Some(changes);
                let mut best: Option<Cost> = None;
                for node in class.iter() {
                    let known = node.children().iter().all(|c| costs[find(*c)].is_some());
                    if !known {
                        continue;
                    }
                    let c = cf.node_cost_with(
                        node,
                        |c| costs[find(c)].expect("known above"),
                        |c| info[find(c)],
                    );
                    if best.is_none_or(|b| c < b) {
                        best = Some(c);
                    }
                }
                if let Some(new) = best {
                    if costs[k].is_none_or(|old| new < old) {
                        costs[k] = Some(new);
                        changed = true;
                        changes += 1;
                        changed_at[k] = changes;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        BestCosts {
            costs,
            info,
            avail,
            clean,
        }
    }

    fn find_best_cost(&self, g: &KGraph, id: Id) -> Cost {
        self.costs[usize::from(g.find(id))].expect("every class has a cost")
    }
}

/// The cost of the cheapest forms of `roots` with what they share counted once (as extraction
/// makes one value per class): per class reached from the roots through cheapest nodes, that
/// node's own cycles, plus 1 if it is divergent. A memory index counts as what remains after
/// folding a constant into the offset where extraction would fold it. Shared terms matter: the
/// e-graph often finds the cheaper kernel by making several indices `base + constant` with one
/// `base`, which a sum of per-root tree costs does not see.
fn roots_cost(g: &KGraph, roots: &[(Id, bool)]) -> u64 {
    let ex = BestCosts::new(g);
    let cf = GcnCost { egraph: g };
    let cost_of = |n: &Node| {
        cf.node_cost_with(
            n,
            |c| ex.find_best_cost(g, c),
            |c| ex.info[usize::from(g.find(c))],
        )
    };
    let known = |n: &Node| {
        n.children()
            .iter()
            .all(|c| ex.costs[usize::from(g.find(*c))].is_some())
    };
    let mut stack: Vec<Id> = Vec::with_capacity(roots.len());
    for &(id, index) in roots {
        let mut at = id;
        if index {
            let mut best = ex.find_best_cost(g, id);
            for n in &g[id].nodes {
                if let Node::Add([x, k]) = n {
                    for (x, k) in [(*x, *k), (*k, *x)] {
                        let cx = ex.find_best_cost(g, x);
                        if g[k].data.konst.is_some() && cx <= best {
                            (best, at) = (cx, x);
                        }
                    }
                }
            }
        }
        stack.push(at);
    }
    let mut seen = vec![false; ex.costs.len()];
    let mut total = 0u64;
    while let Some(id) = stack.pop() {
        let id = g.find(id);
        let k = usize::from(id);
        if std::mem::replace(&mut seen[k], true) {
            continue;
        }
        let Some(best) = ex.costs[k] else { continue };
        let Some(node) = g[id].nodes.iter().find(|n| known(n) && cost_of(n) == best) else {
            continue;
        };
        let below: u32 = node
            .children()
            .iter()
            .map(|&c| ex.find_best_cost(g, c).cycles)
            .fold(0, u32::saturating_add);
        total += best.cycles.saturating_sub(below) as u64 + best.divergent as u64;
        stack.extend(node.children().iter().copied());
    }
    total
}

struct Rebuild<'a> {
    g: &'a KGraph,
    ex: BestCosts,
    /// Per canonical class: the value made for it.
    memo: Vec<Option<Value>>,
    /// Per canonical class: being materialized (cycle guard).
    busy: Vec<bool>,
    insts: Vec<crate::entities::Inst>,
}

impl Rebuild<'_> {
    fn node_avail(&self, n: &Node) -> i64 {
        match n {
            Node::Leaf(l) => self.g.analysis.leaves[l.0 as usize].pos,
            _ => n
                .children()
                .iter()
                .map(|c| self.ex.avail[self.ex.child(self.g, *c)])
                .max()
                .unwrap_or(-1),
        }
    }

    fn cost_of(&self, n: &Node) -> Cost {
        let g = self.g;
        GcnCost { egraph: g }.node_cost_with(
            n,
            |c| self.ex.costs[self.ex.child(g, c)].expect("every class has a cost"),
            |c| self.ex.info[self.ex.child(g, c)],
        )
    }

    /// A value for class `id` usable by the instruction at index `pos` of the block.
    fn materialize(&mut self, out: &mut Function, id: Id, pos: i64) -> Option<Value> {
        let id = self.g.find(id);
        let k = usize::from(id);
        if let Some(v) = self.memo[k] {
            return Some(v);
        }
        if self.busy[k] {
            return None;
        }
        self.busy[k] = true;
        // The class looked up once (indexing the e-graph is a hash lookup).
        let g = self.g;
        let class = &g[id];
        let ty = class.data.ty?;
        let usable = |this: &Self, n: &Node| {
            !matches!(n, Node::Ty(_))
                && this.node_avail(n) < pos
                && n.children()
                    .iter()
                    .all(|c| !this.busy[usize::from(this.g.find(*c))])
        };
        // The candidates are tried cheapest first, equal costs in class order. No node of the
        // class costs less than the class's best cost (`BestCosts` stops at a fixed point of
        // "a node cheaper than its class"), so the first usable node at that cost is the first
        // candidate: it is tried before the others' costs are computed and sorted (it is
        // nearly always the one taken).
        let best = self.ex.costs[k];
        let first = class
            .nodes
            .iter()
            .position(|n| usable(self, n) && Some(self.cost_of(n)) == best);
        let mut result = None;
        if let Some(at) = first {
            result = self.emit(out, &class.nodes[at], ty, pos);
        }
        if result.is_none() {
            // The filters read only availability, costs and the busy marks, which the failed
            // try left as they were: the same candidates, in the same order, as before it.
            let mut cands: smallvec::SmallVec<[(Cost, usize); 4]> = class
                .nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| usable(self, n))
                .map(|(at, n)| (self.cost_of(n), at))
                .collect();
            cands.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
            for (_, at) in cands {
                if Some(at) == first {
                    continue;
                }
                if let Some(v) = self.emit(out, &class.nodes[at], ty, pos) {
                    result = Some(v);
                    break;
                }
            }
        }
        self.busy[k] = false;
        let v = result?;
        self.memo[k] = Some(v);
        Some(v)
    }

    fn emit(&mut self, out: &mut Function, n: &Node, ty: Type, pos: i64) -> Option<Value> {
        match n {
            Node::Leaf(l) => Some(self.g.analysis.leaves[l.0 as usize].value),
            Node::Const(c) => self.push(
                out,
                InstData::Const {
                    ty: c.ty,
                    bits: c.bits,
                },
            ),
            Node::Ty(_) => None,
            _ => {
                let op = n.op()?;
                let ch = n.children();
                let skip = usize::from(matches!(op, NodeOp::Convert | NodeOp::Bitcast));
                let mut args: smallvec::SmallVec<[Value; 3]> = smallvec::SmallVec::new();
                for c in &ch[skip..] {
                    args.push(self.materialize(out, *c, pos)?);
                }
                self.push(out, inst_of(op, &args, ty))
            }
        }
    }

    fn push(&mut self, out: &mut Function, data: InstData) -> Option<Value> {
        let i = out.make_inst(data).ok()?;
        self.insts.push(i);
        out.results[i].first().copied()
    }
}

/// The per-value maps of [`optimize_block`], made once per function at its full size and
/// cleared after each block where that block wrote them (were three maps per block, each
/// grown value by value up to the block's highest value).
struct BlockMaps {
    /// Position in the block of each value defined by a non-pure instruction (-1: none).
    pos_of: SecondaryMap<Value, i64>,
    /// The class of each pure result of the block.
    class_of: SecondaryMap<Value, Option<Id>>,
    /// The leaf class of each value the block's pure instructions use from outside.
    leaf_of: SecondaryMap<Value, Option<Id>>,
}

impl BlockMaps {
    fn new(values: usize) -> BlockMaps {
        let mut m = BlockMaps {
            pos_of: SecondaryMap::with_default(-1),
            class_of: SecondaryMap::new(),
            leaf_of: SecondaryMap::new(),
        };
        m.pos_of.resize(values);
        m.class_of.resize(values);
        m.leaf_of.resize(values);
        m
    }

    /// Resets what [`optimize_block`] wrote for block `b`: its results and its operands.
    fn clear(&mut self, func: &Function, b: Block) {
        for &i in &func.blocks[b].insts {
            for &r in &func.results[i] {
                self.pos_of[r] = -1;
                self.class_of[r] = None;
            }
            func.insts[i].for_each_arg(|a| self.leaf_of[a] = None);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn optimize_block(
    func: &Function,
    out: &mut Function,
    b: Block,
    uni: &Uniformity,
    live_out: &SecondaryMap<Value, bool>,
    rules: &rules::RuleSet,
    opts: &OptOptions,
    subst: &mut SecondaryMap<Value, Option<Value>>,
    maps: &mut BlockMaps,
    folded: &mut usize,
    t: &mut OptTimings,
) -> BlockReport {
    let start = Instant::now();
    let insts = &func.blocks[b].insts;
    let mut rep = BlockReport {
        block: b,
        pure_insts: 0,
        nodes: 0,
        classes: 0,
        iterations: 0,
        stop: "no pure instructions".into(),
        micros: 0,
        rebuilt: false,
    };
    let BlockMaps {
        pos_of,
        class_of,
        leaf_of,
    } = maps;
    // Position of each value defined by a non-pure instruction of this block.
    for (k, &i) in insts.iter().enumerate() {
        if !is_pure(&func.insts[i]) {
            for &r in &func.results[i] {
                pos_of[r] = k as i64;
            }
        }
    }
    let mut g = KGraph::new(KernelAnalysis::default());
    // The class of each pure result of the block, and the pure results in order.
    let mut pure_results: Vec<(Value, Id)> = Vec::new();
    let mut get = |g: &mut KGraph, class_of: &SecondaryMap<Value, Option<Id>>, v: Value| -> Id {
        if let Some(id) = class_of[v] {
            return id;
        }
        if let Some(id) = leaf_of[v] {
            return id;
        }
        let k = g.analysis.leaves.len() as u32;
        g.analysis.leaves.push(LeafInfo {
            value: v,
            ty: func.values[v].ty,
            uniform: uni.is_uniform(v),
            pos: pos_of[v],
        });
        let id = g.add(Node::Leaf(LeafId(k)));
        leaf_of[v] = Some(id);
        id
    };
    for &i in insts {
        let d = &func.insts[i];
        if !is_pure(d) {
            continue;
        }
        rep.pure_insts += 1;
        let r = func.results[i][0];
        let id = match d {
            InstData::Const { ty, bits } => g.add(Node::Const(ConstVal {
                ty: *ty,
                bits: *bits,
            })),
            _ => {
                let op = node_op(d).expect("pure operation");
                // At most three operands (and a type): no allocation per instruction.
                let mut ch: smallvec::SmallVec<[Id; 4]> = smallvec::SmallVec::new();
                if let InstData::Convert { to, .. } | InstData::Bitcast { to, .. } = d {
                    ch.push(g.add(Node::Ty(TyTag(*to))));
                }
                d.for_each_arg(|a| ch.push(get(&mut g, class_of, a)));
                g.add(Node::from_op(op, &ch))
            }
        };
        class_of[r] = Some(id);
        pure_results.push((r, id));
    }
    t.build += start.elapsed();
    if rep.pure_insts == 0 {
        return rep;
    }
    // The values the block's other instructions and later blocks need, and which of them are
    // memory indices (whose `x + c` forms fold the constant into the offset).
    let mut roots: Vec<(Id, bool)> = Vec::new();
    for &i in insts {
        let d = &func.insts[i];
        if is_pure(d) {
            continue;
        }
        let index = mem_index(d);
        d.for_each_arg(|a| {
            if let Some(id) = class_of[a] {
                roots.push((id, Some(a) == index));
            }
        });
    }
    roots.extend(
        pure_results
            .iter()
            .filter(|(v, _)| live_out[*v])
            .map(|&(_, id)| (id, false)),
    );
    let needed: Vec<Id> = roots.iter().map(|&(id, _)| id).collect();
    timed(&mut t.sums, || linear::add_canonical_sums(&mut g, &needed));
    let mut measure = |g: &KGraph| roots_cost(g, &roots);
    let (iterations, stop) = timed(&mut t.saturate, || {
        run::saturate(
            &mut g,
            rules,
            &run::Limits {
                nodes: opts.node_limit,
                iterations: opts.iter_limit,
                patience: opts.patience,
            },
            &mut measure,
        )
    });
    let start = Instant::now();
    rep.iterations = iterations;
    rep.stop = stop.to_string();
    rep.nodes = g.total_number_of_nodes();
    rep.classes = g.number_of_classes();

    // Rebuild in place, but commit the block only if every value could be extracted. New
    // instructions are appended to `out` as they are made; if the block is kept after all they
    // stay orphans outside every block, which the final renumbering drops. Rewritten
    // non-pure instructions wait in `pending`. (A clone of the whole function per block cost
    // more than rewriting it on small blocks.)
    let scratch = out;
    let mut pending: Vec<(crate::entities::Inst, InstData)> = Vec::new();
    let ids = g
        .classes()
        .map(|c| usize::from(c.id) + 1)
        .max()
        .unwrap_or(0);
    let mut rb = Rebuild {
        g: &g,
        ex: BestCosts::new(&g),
        memo: vec![None; ids],
        busy: vec![false; ids],
        insts: Vec::new(),
    };
    let mut local: Vec<(Value, Value)> = Vec::new();
    let mut folded_here = 0;
    let mut ok = true;
    'insts: for (k, &i) in insts.iter().enumerate() {
        let d = &func.insts[i];
        if is_pure(d) {
            continue;
        }
        let pos = k as i64;
        // Live-out pure values are materialized before the terminator.
        if d.is_terminator() {
            // In value order: iterating the hash map would order the materialized
            // instructions differently from run to run (non-deterministic code).
            let mut outs: Vec<(Value, Id)> = pure_results
                .iter()
                .filter(|(v, _)| live_out[*v])
                .copied()
                .collect();
            outs.sort_by_key(|&(v, _)| v);
            for (v, id) in outs {
                {
                    match rb.materialize(scratch, id, pos) {
                        Some(n) => {
                            local.push((v, n));
                        }
                        None => {
                            ok = false;
                            break 'insts;
                        }
                    }
                }
            }
        }
        let mut data = d.clone();
        // Fold `x + c` indices into the immediate offset.
        if let InstData::Load {
            mem, index, offset, ..
        }
        | InstData::Store {
            mem, index, offset, ..
        }
        | InstData::Atomic {
            mem, index, offset, ..
        }
        | InstData::FragLoad {
            mem, index, offset, ..
        }
        | InstData::FragStore {
            mem, index, offset, ..
        } = &mut data
        {
            if let Some(id) = class_of[*index] {
                let size = match mem {
                    Mem::Global(bv) => match func.values[*bv].ty {
                        Type::Buffer { elem, .. } => elem.bytes() as u64,
                        _ => 4,
                    },
                    Mem::Lds(a) => func.lds[*a].elem.bytes() as u64,
                };
                let best_plain = rb.ex.find_best_cost(&g, id);
                let mut choice: Option<(Cost, Id, u32)> = None;
                for n in &g[id].nodes {
                    if let Node::Add([x, c]) = n {
                        for (x, c) in [(*x, *c), (*c, *x)] {
                            let Some(kc) = g[c].data.konst else { continue };
                            let new_off = (*offset as u64 + kc) & 0xffff_ffff;
                            if new_off * size > max_offset_bytes(mem) || rb.node_avail(n) >= pos {
                                continue;
                            }
                            let cx = rb.ex.find_best_cost(&g, x);
                            if cx <= best_plain && choice.as_ref().is_none_or(|(cc, _, _)| cx < *cc)
                            {
                                choice = Some((cx, x, new_off as u32));
                            }
                        }
                    }
                }
                if let Some((_, x, new_off)) = choice {
                    match rb.materialize(scratch, x, pos) {
                        Some(v) => {
                            *index = v;
                            *offset = new_off;
                            folded_here += 1;
                        }
                        None => {
                            ok = false;
                            break 'insts;
                        }
                    }
                }
            }
        }
        // A few operands (a store's values at most four): held inline, not allocated per
        // instruction.
        let mut args: smallvec::SmallVec<[Value; 6]> = smallvec::SmallVec::new();
        data.for_each_arg(|a| args.push(a));
        let mut mapped: smallvec::SmallVec<[Value; 6]> = smallvec::SmallVec::new();
        for a in args {
            let n = match class_of[a] {
                Some(id) => match rb.materialize(scratch, id, pos) {
                    Some(n) => n,
                    None => {
                        ok = false;
                        break 'insts;
                    }
                },
                None => a,
            };
            mapped.push(n);
        }
        let mut it = mapped.into_iter();
        data.map_args(|a| it.next().unwrap_or(a));
        pending.push((i, data));
        rb.insts.push(i);
    }
    if !ok {
        rep.stop.push_str("; extraction failed, block kept");
        t.extract += start.elapsed();
        return rep;
    }
    // The original pure results are gone: detach them.
    for &(v, _) in &pure_results {
        scratch.values[v].def = ValueDef::Detached;
    }
    for (i, data) in pending {
        scratch.insts[i] = data;
    }
    scratch.blocks[b].insts = std::mem::take(&mut rb.insts);
    for (v, n) in local {
        subst[v] = Some(n);
    }
    *folded += folded_here;
    rep.rebuilt = true;
    t.extract += start.elapsed();
    rep
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The costs in id order are egg's costs (its extractor passes over the classes in hash
    /// order): a wrong order or an early stop would leave some class costlier.
    #[test]
    fn best_costs_in_id_order_are_eggs_costs() {
        let mut g = KGraph::new(KernelAnalysis::default());
        let leaf = lang::test_leaf;
        let mut sum = leaf(&mut g, 0, false);
        for k in 1..7 {
            let t = leaf(&mut g, k, k % 2 == 0);
            let c = g.add(Node::Const(ConstVal {
                ty: Type::U32,
                bits: 1000 + k as u64,
            }));
            let tc = g.add(Node::Mul([t, c]));
            sum = g.add(Node::Add([tc, sum]));
        }
        let limits = run::Limits {
            nodes: 3_000,
            iterations: 4,
            patience: 0,
        };
        run::saturate(&mut g, rule_set(false), &limits, &mut |_| 0);
        let ours = BestCosts::new(&g);
        let eggs = egg::Extractor::new(&g, GcnCost { egraph: &g });
        assert!(g.number_of_classes() > 20);
        for c in g.classes() {
            assert_eq!(
                ours.find_best_cost(&g, c.id),
                eggs.find_best_cost(c.id),
                "class {}",
                c.id
            );
        }
    }
}

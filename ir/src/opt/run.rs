//! The rewrite loop: equality saturation under node and iteration limits.
//!
//! It does what `egg::Runner` with egg's `BackoffScheduler` did for the optimizer (same order of
//! searches, applications, limit checks and rebuilds, same rule banning), so the e-graph at
//! the end is the same, but without what a compiler in a JIT does not need: no clock reads
//! (egg's runner read the time before and after every phase and in every limit check), no
//! per-iteration records, no hooks, and rule statistics in a vector indexed by rule instead of
//! a map keyed by rule name. On the small blocks of typical kernels that bookkeeping was a
//! good part of the optimizer's time.
//!
//! One more difference, which leaves the e-graph the same: a match that was applied once (its
//! rule, matched class and operand classes, canonical) is not applied again in a later
//! iteration. Egg searches and applies every match in every iteration; after the rebuild that
//! ends an iteration, everything an applied match added is in the e-graph and unioned with the
//! matched class, so applying it again adds nothing and unions nothing. In the associative and
//! commutative closures of index arithmetic most matches of an iteration are such repeats, and
//! instantiating them was about a third of the rewriting time. Matches whose condition failed
//! are not remembered (a later union may make it hold).
//!
//! And one more: an iteration whose applications merged no classes and added no node skips
//! egg's rebuild, which would only re-sort the sorted classes and refill the per-operation
//! class sets in the same order (the e-graph is marked clean instead).

use super::lang::KGraph;
use super::pattern::{root_nodes, ClassNodes, Match};
use super::rules::{Action, Rule, RuleSet};
use rustc_hash::FxHashSet;

/// A match as it was applied: the rule's index, the matched class and the operand classes,
/// all canonical at the time.
type Applied = (u32, egg::Id, [egg::Id; super::pattern::MAX_VARS]);

/// Initial number of matches of one rule in one iteration above which the rule is banned
/// (egg's `BackoffScheduler` default).
const MATCH_LIMIT: usize = 1_000;
/// Initial ban length in iterations (egg's `BackoffScheduler` default).
const BAN_LENGTH: usize = 5;

/// Why rewriting stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// No rule changed the e-graph in the last iteration (and no rule is banned).
    Saturated,
    /// The iteration limit was reached (the number of iterations run).
    IterationLimit(usize),
    /// The e-graph grew past the node limit (its size when seen).
    NodeLimit(usize),
    /// The caller's measure of the e-graph (the cost of the cheapest forms) stopped improving.
    NoGain,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Saturated => write!(f, "saturated"),
            Stop::IterationLimit(n) => write!(f, "iteration limit {n}"),
            Stop::NodeLimit(n) => write!(f, "node limit {n}"),
            Stop::NoGain => write!(f, "no gain"),
        }
    }
}

/// Backoff state of one rule.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct RuleStats {
    banned_until: usize,
    times_banned: usize,
}

/// When rewriting stops.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most e-nodes.
    pub nodes: usize,
    /// Most iterations.
    pub iterations: usize,
    /// Iterations in a row whose measure is not below the best so far after which rewriting
    /// stops; the first iteration's measure is the first best (0 = never stop for this).
    pub patience: usize,
}

/// Rewrites `g` with `rules` until saturation or a limit; returns the iterations run and why
/// it stopped. After every iteration but the last, `measure` rates the e-graph (lower is
/// better: the cost of the cheapest forms of what the block needs), for
/// [`Limits::patience`]. The e-graph is clean (rebuilt) afterwards.
pub fn saturate(
    g: &mut KGraph,
    set: &RuleSet,
    limits: &Limits,
    measure: &mut dyn FnMut(&KGraph) -> u64,
) -> (usize, Stop) {
    let (node_limit, iter_limit) = (limits.nodes, limits.iterations);
    let check = |i: usize, g: &KGraph| -> Result<(), Stop> {
        let size = g.total_size();
        if size > node_limit {
            Err(Stop::NodeLimit(size))
        } else if i >= iter_limit {
            Err(Stop::IterationLimit(i))
        } else {
            Ok(())
        }
    };
    let rules = &set.rules[..];
    // Buffers reused from block to block (and compile to compile) on this thread: a block's
    // rewriting otherwise starts with ~60 empty match lists that each allocate on first use.
    thread_local! {
        static SCRATCH: std::cell::RefCell<Scratch> = Default::default();
    }
    let mut sc = SCRATCH.with(|s| s.take());
    sc.reset(set);
    let Scratch {
        stats,
        table,
        matches,
        ids,
        src,
        before,
        applied,
        active,
    } = &mut sc;
    let mut best = u64::MAX;
    let mut stale = 0;
    let patience = limits.patience;
    let mut gain = |g: &KGraph| -> bool {
        if patience == 0 {
            return true;
        }
        let m = measure(g);
        if m < best {
            best = m;
            stale = 0;
        } else {
            stale += 1;
        }
        stale < patience
    };
    let out = run_loop(
        g, set, rules, &check, stats, table, matches, ids, src, before, applied, active, &mut gain,
    );
    SCRATCH.with(|s| s.replace(sc));
    out
}

/// The buffers of [`saturate`].
#[derive(Default)]
struct Scratch {
    stats: Vec<RuleStats>,
    table: Vec<Vec<(egg::Id, super::lang::Node)>>,
    matches: Vec<Vec<Match>>,
    ids: Vec<egg::Id>,
    /// Per rule: whose match list it uses (its own, or that of an earlier rule with the same
    /// left-hand side and the same ban state, which finds the same matches).
    src: Vec<usize>,
    before: Vec<RuleStats>,
    /// Matches applied so far ([`Applied`]).
    applied: FxHashSet<Applied>,
    /// The rules with matches in this iteration, in rule order.
    active: Vec<usize>,
}

impl Scratch {
    fn reset(&mut self, set: &RuleSet) {
        let n = set.rules.len();
        self.stats.clear();
        self.stats.resize(n, RuleStats::default());
        self.table
            .resize_with(set.roots.len().max(self.table.len()), Vec::new);
        self.matches
            .resize_with(n.max(self.matches.len()), Vec::new);
        for m in &mut self.matches {
            m.clear();
        }
        self.src.clear();
        self.src.extend(0..n);
        self.before.clear();
        self.applied.clear();
    }
}

#[allow(clippy::too_many_arguments)]
fn run_loop(
    g: &mut KGraph,
    set: &RuleSet,
    rules: &[Rule],
    check: &dyn Fn(usize, &KGraph) -> Result<(), Stop>,
    stats: &mut [RuleStats],
    table: &mut [Vec<(egg::Id, super::lang::Node)>],
    matches: &mut [Vec<Match>],
    ids: &mut Vec<egg::Id>,
    src: &mut [usize],
    before: &mut Vec<RuleStats>,
    done: &mut FxHashSet<Applied>,
    active: &mut Vec<usize>,
    gain: &mut dyn FnMut(&KGraph) -> bool,
) -> (usize, Stop) {
    g.rebuild();
    let mut i = 0;
    loop {
        let mut result = check(i, g);
        let nodes_before = g.total_size();
        let classes_before = g.number_of_classes();
        let mut applied = false;
        if result.is_ok() {
            let classes = ClassNodes::new(g);
            for (op, nodes) in set.roots.iter().zip(table.iter_mut()) {
                root_nodes(g, &classes, op, nodes);
            }
            before.clear();
            before.extend_from_slice(stats);
            active.clear();
            for (k, rw) in rules.iter().enumerate() {
                let roots = &table[set.root_of[k]];
                if roots.is_empty() {
                    // No node has the rule's root operation: no match and no change to its
                    // ban state (a search that finds nothing bans nothing). Most blocks have
                    // a few of the rules' root operations; this skips the other rules' searches.
                    src[k] = k;
                    matches[k].clear();
                    continue;
                }
                if let Some(j) = set.same_as[k] {
                    if before[j] == before[k] {
                        // Same search, same limit, same outcome (bans included).
                        stats[k] = stats[j];
                        src[k] = src[j];
                        if !matches[src[k]].is_empty() {
                            active.push(k);
                        }
                        continue;
                    }
                }
                src[k] = k;
                let ms = &mut matches[k];
                ms.clear();
                search(i, g, &classes, rw, roots, &mut stats[k], ms);
                if !ms.is_empty() {
                    active.push(k);
                }
            }
            // Searching does not change the e-graph: the limits still hold here. The rules
            // with matches apply in rule order.
            for &k in active.iter() {
                let (rw, ms) = (&rules[k], &matches[src[k]]);
                if apply(g, k as u32, rw, ms, ids, done) {
                    applied = true;
                }
                if let Err(e) = check(i, g) {
                    result = Err(e);
                    break;
                }
            }
        }
        if applied || g.total_size() != nodes_before {
            g.rebuild();
        } else {
            // No union merged two classes and no node was added (the hash-cons grows with
            // every new node): the e-graph is the one the last rebuild left, and a rebuild
            // would only sort its sorted classes and refill its per-operation sets in the
            // same order. egg marks it unclean at every union call, even one that merged
            // nothing; it is clean.
            g.clean = true;
        }
        let saturated = !applied
            && can_stop(stats, i)
            && nodes_before == g.total_size()
            && classes_before == g.number_of_classes();
        if saturated && result.is_ok() {
            result = Err(Stop::Saturated);
        }
        i += 1;
        if let Err(stop) = result.and_then(|_| check(i, g)) {
            return (i, stop);
        }
        if !gain(g) {
            return (i, Stop::NoGain);
        }
    }
}

/// Searches one rule into `out` unless it is banned; bans it (and drops its matches) when it
/// matched more often than its current limit.
fn search(
    i: usize,
    g: &KGraph,
    classes: &ClassNodes,
    rw: &Rule,
    roots: &[(egg::Id, super::lang::Node)],
    st: &mut RuleStats,
    out: &mut Vec<Match>,
) {
    if i < st.banned_until {
        return;
    }
    let threshold = MATCH_LIMIT
        .checked_shl(st.times_banned as u32)
        .unwrap_or(usize::MAX);
    rw.lhs
        .search(g, classes, roots, threshold.saturating_add(1), out);
    if out.len() > threshold {
        let ban = BAN_LENGTH << st.times_banned;
        st.times_banned += 1;
        st.banned_until = i + ban;
        out.clear();
    }
}

/// Applies one rule (the `k`th) to its matches, in order, except those in `done`, which it
/// extends with the matches it applies; whether any union changed the e-graph.
fn apply(
    g: &mut KGraph,
    k: u32,
    rw: &Rule,
    ms: &[Match],
    ids: &mut Vec<egg::Id>,
    done: &mut FxHashSet<Applied>,
) -> bool {
    let mut changed = false;
    for m in ms {
        // A condition is a pure read of the e-graph: checked before the applied-match set,
        // since a match whose condition fails is skipped either way (and most fail: a
        // constant of one value among the operands of every `add` or `mul`), which saves
        // the key's canonical ids and its hash lookup.
        if let Action::Rewrite {
            tests: Some(tests), ..
        } = &rw.action
        {
            if !tests.iter().all(|&(k, t)| t.holds(g, m.regs[k])) {
                continue;
            }
        }
        let key = (k, g.find(m.class), m.regs.map(|r| g.find(r)));
        if done.contains(&key) {
            continue;
        }
        match &rw.action {
            // As egg's `Pattern` applier: union(new, matched).
            Action::Rewrite { rhs, tests: None } => {
                let id = rhs.instantiate(g, &m.regs, ids);
                changed |= g.union(id, m.class);
            }
            // As egg's `ConditionalApplier` over a `Pattern`: union(matched, new), where the
            // tests (checked above) hold.
            Action::Rewrite {
                rhs,
                tests: Some(_),
            } => {
                let id = rhs.instantiate(g, &m.regs, ids);
                changed |= g.union(m.class, id);
            }
            Action::Compute(f, vars) => match f(g, &m.regs, *vars) {
                Some(id) => changed |= g.union(m.class, id),
                None => continue,
            },
        }
        done.insert(key);
    }
    changed
}

/// Whether the loop may stop as saturated: only when no rule is banned. Otherwise the bans
/// are shortened so that the earliest-banned rule is searched again in the next iteration.
fn can_stop(stats: &mut [RuleStats], i: usize) -> bool {
    let Some(min_ban) = stats
        .iter()
        .filter(|s| s.banned_until > i)
        .map(|s| s.banned_until)
        .min()
    else {
        return true;
    };
    let delta = min_ban - i;
    for s in stats.iter_mut().filter(|s| s.banned_until > i) {
        s.banned_until -= delta;
    }
    false
}

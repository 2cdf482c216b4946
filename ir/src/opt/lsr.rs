//! Loop strength reduction: running sums instead of products of the induction variable.
//!
//! Takes a [`Function`] (after [`super::licm`]); gives it back with new loop-header parameters
//! that carry, from one iteration to the next, the values a loop used to recompute with a
//! multiply: where a loop with a preheader and one latch steps a 32-bit header parameter `i` by
//! a loop-invariant amount `c` (`i' = i + c`), every loop value that is affine in `i`,
//! `i * S + B` with `S` and `B` sums of invariant terms and `S` not a constant (a product with
//! an invariant value: an `s_mul_i32` or a quarter-rate `v_mul_lo_u32` per use), and that is used
//! by something other than such sums (an index, a compare, a branch argument) is a root.
//! Roots with the same `S` and uniformity share one new parameter `p = i * S + B0` (`B0` the
//! first root's `B`): the preheader passes `i0 * S + B0`, the latch `p + c * S`, and each root
//! becomes `p + (B - B0)`, one add of an invariant computed in the preheader (none for the first),
//! unless that invariant is divergent (it would hold a VGPR across the loop).
//! Uniform and divergent roots get separate parameters, so that a uniform loop test stays
//! scalar. The old products, and `i` when nothing else needs it, are left to
//! [`super::dce`]; the repeated adds to [`super::gvn`].
//!
//! Each induction variable's rewrite is tried on a copy and kept when, after value numbering
//! and dead code elimination, the loop has fewer instructions and the kernel no more.
//!
//! Arithmetic is modulo 2^32 (the IR's `add`/`sub`/`mul`/`shl` wrap), so the sums are exact.

use super::loops::{def_blocks, find_loops, Loop};
use crate::cfg::{ControlFlowGraph, DominatorTree};
use crate::entities::{Block, Inst, Value};
use crate::function::Function;
use crate::instructions::{BinaryOp, InstData, TernaryOp};
use crate::types::Type;
use crate::uniformity::Uniformity;
use cranelift_entity::SecondaryMap;
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

/// `Σ coefficient · term` modulo 2^32; the term `None` is the constant 1, `Some(v)` a
/// loop-invariant value. No zero coefficients are stored.
type Lin = BTreeMap<Option<Value>, u32>;

fn constant(c: u32) -> Lin {
    let mut l = Lin::new();
    if c != 0 {
        l.insert(None, c);
    }
    l
}

fn sum(a: &Lin, b: &Lin, sign: u32) -> Lin {
    let mut r = a.clone();
    for (&t, &c) in b {
        let e = r.entry(t).or_insert(0);
        *e = e.wrapping_add(c.wrapping_mul(sign));
        if *e == 0 {
            r.remove(&t);
        }
    }
    r
}

fn scale(a: &Lin, k: u32) -> Lin {
    a.iter()
        .map(|(&t, &c)| (t, c.wrapping_mul(k)))
        .filter(|&(_, c)| c != 0)
        .collect()
}

/// The constant a sum is, if it has no value term.
fn as_const(a: &Lin) -> Option<u32> {
    match a.len() {
        0 => Some(0),
        1 => a.get(&None).copied(),
        _ => None,
    }
}

/// `i * step + base`.
#[derive(Clone, Debug, PartialEq)]
struct Affine {
    step: Lin,
    base: Lin,
}

impl Affine {
    fn add(&self, o: &Affine, sign: u32) -> Affine {
        Affine {
            step: sum(&self.step, &o.step, sign),
            base: sum(&self.base, &o.base, sign),
        }
    }

    fn scale(&self, k: u32) -> Affine {
        Affine {
            step: scale(&self.step, k),
            base: scale(&self.base, k),
        }
    }

    fn invariant(&self) -> Option<&Lin> {
        self.step.is_empty().then_some(&self.base)
    }

    /// `self * o` when it is affine: one side a constant, or one side an invariant
    /// `k * w` and the other's step and base constants.
    fn mul(&self, o: &Affine) -> Option<Affine> {
        for (x, y) in [(self, o), (o, self)] {
            if let Some(k) = x.invariant().and_then(as_const) {
                return Some(y.scale(k));
            }
        }
        for (x, y) in [(self, o), (o, self)] {
            let Some(inv) = x.invariant() else { continue };
            let [(&Some(w), &k)] = inv.iter().collect::<Vec<_>>()[..] else {
                continue;
            };
            let (Some(s), Some(b)) = (as_const(&y.step), as_const(&y.base)) else {
                continue;
            };
            return Some(Affine {
                step: sum(&Lin::new(), &Lin::from([(Some(w), k)]), s),
                base: sum(&Lin::new(), &Lin::from([(Some(w), k)]), b),
            });
        }
        None
    }
}

/// A value to rewrite: its instruction, the value and its `B`.
type Root = (Inst, Value, Lin);

/// A header parameter stepped by an invariant amount along the loop's one back edge.
struct Induction {
    param: Value,
    ty: Type,
    /// The preheader's argument.
    init: Value,
    /// The amount added per iteration.
    step: Lin,
}

/// The affine forms of one loop's values in one induction variable.
struct Analysis<'a> {
    func: &'a Function,
    l: &'a Loop,
    def: &'a SecondaryMap<Value, Option<Block>>,
    iv: Value,
    ty: Type,
    memo: HashMap<Value, Option<Affine>>,
}

impl Analysis<'_> {
    fn affine(&mut self, v: Value) -> Option<Affine> {
        if let Some(a) = self.memo.get(&v) {
            return a.clone();
        }
        let a = self.compute(v);
        self.memo.insert(v, a.clone());
        a
    }

    fn inside(&self, v: Value) -> bool {
        self.def[v].is_some_and(|b| self.l.contains(b))
    }

    fn compute(&mut self, v: Value) -> Option<Affine> {
        if v == self.iv {
            return Some(Affine {
                step: constant(1),
                base: Lin::new(),
            });
        }
        if self.func.values[v].ty != self.ty {
            return None;
        }
        if !self.inside(v) {
            return Some(Affine {
                step: Lin::new(),
                base: self.expand(v, 4),
            });
        }
        let crate::ValueDef::Result(i, 0) = self.func.values[v].def else {
            return None;
        };
        match self.func.insts[i].clone() {
            InstData::Const { bits, .. } => Some(Affine {
                step: Lin::new(),
                base: constant(bits as u32),
            }),
            InstData::Binary { op, args: [x, y] } => {
                let (x, y) = (self.affine(x)?, self.affine(y)?);
                match op {
                    BinaryOp::Add => Some(x.add(&y, 1)),
                    BinaryOp::Sub => Some(x.add(&y, u32::MAX)),
                    BinaryOp::Mul => x.mul(&y),
                    BinaryOp::Shl => Some(x.scale(1 << shift_amount(&y)?)),
                    _ => None,
                }
            }
            InstData::Ternary {
                op,
                args: [x, y, z],
            } => {
                let (x, y, z) = (self.affine(x)?, self.affine(y)?, self.affine(z)?);
                match op {
                    TernaryOp::Add3 => Some(x.add(&y, 1).add(&z, 1)),
                    TernaryOp::LshlAdd => Some(x.scale(1 << shift_amount(&y)?).add(&z, 1)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// An invariant value as a sum of invariant terms, looking through `depth` levels of
    /// add/sub/constant-multiple definitions (so that `(a + s) - a` is seen to be `s`).
    fn expand(&self, v: Value, depth: u32) -> Lin {
        let atom = || Lin::from([(Some(v), 1)]);
        if depth == 0 || self.func.values[v].ty != self.ty {
            return atom();
        }
        let crate::ValueDef::Result(i, 0) = self.func.values[v].def else {
            return atom();
        };
        let konst = |w: Value| const_of(self.func, w);
        match self.func.insts[i] {
            InstData::Const { bits, .. } => constant(bits as u32),
            InstData::Binary { op, args: [x, y] } => match op {
                BinaryOp::Add => sum(&self.expand(x, depth - 1), &self.expand(y, depth - 1), 1),
                BinaryOp::Sub => sum(
                    &self.expand(x, depth - 1),
                    &self.expand(y, depth - 1),
                    u32::MAX,
                ),
                BinaryOp::Mul => match (konst(x), konst(y)) {
                    (_, Some(k)) => scale(&self.expand(x, depth - 1), k),
                    (Some(k), _) => scale(&self.expand(y, depth - 1), k),
                    _ => atom(),
                },
                BinaryOp::Shl => match konst(y).filter(|&k| k < 32) {
                    Some(k) => scale(&self.expand(x, depth - 1), 1 << k),
                    None => atom(),
                },
                _ => atom(),
            },
            InstData::Ternary {
                op: TernaryOp::Add3,
                args: [x, y, z],
            } => sum(
                &sum(&self.expand(x, depth - 1), &self.expand(y, depth - 1), 1),
                &self.expand(z, depth - 1),
                1,
            ),
            _ => atom(),
        }
    }
}

/// A constant shift amount below 32 (the IR masks larger ones; they are not multiples).
fn shift_amount(a: &Affine) -> Option<u32> {
    a.invariant().and_then(as_const).filter(|&k| k < 32)
}

/// Whether an instruction's result is one of the sums the analysis follows.
fn is_affine_op(d: &InstData) -> bool {
    matches!(
        d,
        InstData::Binary {
            op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Shl,
            ..
        } | InstData::Ternary {
            op: TernaryOp::Add3 | TernaryOp::LshlAdd,
            ..
        }
    )
}

/// Emits sums of invariant terms at the end of the preheader, each distinct sum once.
struct Materializer {
    pre: Block,
    ty: Type,
    made: HashMap<Lin, Value>,
}

impl Materializer {
    fn push(&self, func: &mut Function, data: InstData) -> Value {
        let i = func
            .make_inst(data)
            .expect("integer arithmetic of one type");
        let insts = &mut func.blocks[self.pre].insts;
        insts.insert(insts.len() - 1, i);
        func.results[i][0]
    }

    fn konst(&self, func: &mut Function, c: u32) -> Value {
        self.push(
            func,
            InstData::Const {
                ty: self.ty,
                bits: c as u64,
            },
        )
    }

    fn binary(&self, func: &mut Function, op: BinaryOp, x: Value, y: Value) -> Value {
        self.push(func, InstData::Binary { op, args: [x, y] })
    }

    /// A value equal to `lin`: positive terms added, negative ones subtracted, a power-of-two
    /// coefficient as a shift.
    fn value(&mut self, func: &mut Function, lin: &Lin) -> Value {
        if let Some(&v) = self.made.get(lin) {
            return v;
        }
        let mut acc: Option<Value> = None;
        let mut negative = Vec::new();
        for (&t, &c) in lin {
            let (c, neg) = if c > 1 << 31 {
                (c.wrapping_neg(), true)
            } else {
                (c, false)
            };
            let term = match t {
                None => self.konst(func, c),
                Some(w) if c == 1 => w,
                Some(w) if c.is_power_of_two() => {
                    let k = self.konst(func, c.trailing_zeros());
                    self.binary(func, BinaryOp::Shl, w, k)
                }
                Some(w) => {
                    let k = self.konst(func, c);
                    self.binary(func, BinaryOp::Mul, w, k)
                }
            };
            if neg {
                negative.push(term);
                continue;
            }
            acc = Some(match acc {
                None => term,
                Some(a) => self.binary(func, BinaryOp::Add, a, term),
            });
        }
        let mut acc = match acc {
            Some(a) => a,
            None => self.konst(func, 0),
        };
        for t in negative {
            acc = self.binary(func, BinaryOp::Sub, acc, t);
        }
        self.made.insert(lin.clone(), acc);
        acc
    }
}

/// Where each value is defined and used, for the analysis of one version of the function
/// (made again only after a rewrite is kept: the rejected trials of a loop's induction
/// variables all read the same function).
struct Facts {
    def: SecondaryMap<Value, Option<Block>>,
    /// The instructions using value `v` (once per operand):
    /// `user_list[user_start[v]..user_start[v + 1]]`.
    user_start: Vec<u32>,
    user_list: Vec<Inst>,
}

impl Facts {
    fn new(func: &Function) -> Facts {
        let n = func.values.len();
        let mut user_start = vec![0u32; n + 1];
        for &b in &func.layout {
            for &i in &func.blocks[b].insts {
                func.insts[i].for_each_arg(|a| user_start[a.as_u32() as usize + 1] += 1);
            }
        }
        for k in 1..=n {
            user_start[k] += user_start[k - 1];
        }
        let mut fill = user_start.clone();
        let mut user_list = vec![Inst::from_u32(0); user_start[n] as usize];
        for &b in &func.layout {
            for &i in &func.blocks[b].insts {
                func.insts[i].for_each_arg(|a| {
                    let at = &mut fill[a.as_u32() as usize];
                    user_list[*at as usize] = i;
                    *at += 1;
                });
            }
        }
        Facts {
            def: def_blocks(func),
            user_start,
            user_list,
        }
    }

    fn users(&self, v: Value) -> &[Inst] {
        let k = v.as_u32() as usize;
        &self.user_list[self.user_start[k] as usize..self.user_start[k + 1] as usize]
    }
}

/// Strength-reduces every loop; gives the number of parameters added. `kept`: `func`'s
/// uniformity if the pass before made it and changed nothing since (the last user: taken).
pub fn reduce_strength(func: &mut Function, kept: Option<Uniformity>) -> usize {
    let cfg = ControlFlowGraph::new(func);
    let dom = DominatorTree::new(func, &cfg);
    reduce_strength_in(func, &cfg, &dom, kept).added
}

/// What [`reduce_strength_in`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reduced {
    /// Parameters added.
    pub added: usize,
    /// Whether a trial was kept: `func` is then that trial, value-numbered and cleaned of dead
    /// code after its rewrite (numbering or cleaning it again changes nothing).
    pub cleaned: bool,
}

/// [`reduce_strength`] with `func`'s graph and dominators already made (a rewrite adds block
/// parameters and arguments, never a branch target: its trials share them too).
pub fn reduce_strength_in(
    func: &mut Function,
    cfg: &ControlFlowGraph,
    dom: &DominatorTree,
    kept: Option<Uniformity>,
) -> Reduced {
    let loops = find_loops(func, cfg, dom);
    // Only a loop with a preheader and one latch is reduced: without one, no uniformity needed.
    if !loops
        .iter()
        .any(|l| l.preheader.is_some() && l.latches.len() == 1)
    {
        return Reduced::default();
    }
    let uni = kept.unwrap_or_else(|| Uniformity::with_cfg(func, cfg));
    let mut added = 0;
    let mut cleaned = false;
    // Per block, the instructions of the kernel after DCE without a rewrite, until one is
    // kept: counted once for the loops whose trials are rejected (the gemm's k loops), not
    // once per loop.
    let mut base: Option<SecondaryMap<Block, usize>> = None;
    let mut facts: Option<Facts> = None;
    for l in &loops {
        let Some(pre) = l.preheader else { continue };
        let [latch] = l.latches[..] else { continue };
        let in_loop =
            |f: &Function| -> usize { l.blocks.iter().map(|&b| f.blocks[b].insts.len()).sum() };
        let ivs = inductions(
            func,
            l,
            pre,
            latch,
            &facts.get_or_insert_with(|| Facts::new(func)).def,
        );
        for iv in ivs {
            // Which roots would be rewritten is read from `func`; a copy is made only when
            // there are some (a trial without a group would add nothing and is not kept).
            let f = facts.get_or_insert_with(|| Facts::new(func));
            let groups = plan(func, l, &iv, &uni, f);
            if groups.is_empty() {
                continue;
            }
            // Tried on a copy, cleaned up as the optimizer will: kept only when the loop gets
            // shorter and the kernel no longer (a single product of a uniform counter is one
            // `s_mul_i32`; its running sum costs an init, a step and a register).
            let mut trial = func.clone_with_room(TRIAL_ROOM, TRIAL_ROOM);
            let n = rewrite(&mut trial, pre, latch, l.header, &iv, &uni, groups, &f.def);
            super::gvn::number_values_in(&mut trial, cfg, dom, &mut None);
            super::dce::remove_dead_code(&mut trial);
            let b = base.get_or_insert_with(|| super::dce::live_inst_counts(func));
            let base_loop: usize = l.blocks.iter().map(|&k| b[k]).sum();
            let base_all: usize = func.layout.iter().map(|&k| b[k]).sum();
            if in_loop(&trial) < base_loop && trial.inst_count() <= base_all {
                *func = trial;
                added += n;
                cleaned = true;
                base = None;
                facts = None;
            }
        }
    }
    Reduced { added, cleaned }
}

/// Instructions and values a trial's copy has room for before its tables grow (a rewrite
/// adds a few per root: growing a copy of a large kernel's tables copied them again).
const TRIAL_ROOM: usize = 64;

/// The branch arguments `from` passes to `to` (one call to it, or none found).
fn call_args(func: &Function, from: Block, to: Block) -> Option<Vec<Value>> {
    let t = func.terminator(from)?;
    let calls: Vec<_> = func.insts[t]
        .branch_targets()
        .into_iter()
        .filter(|c| c.block == to)
        .collect();
    match calls[..] {
        [c] => Some(c.args.to_vec()),
        _ => None,
    }
}

fn inductions(
    func: &Function,
    l: &Loop,
    pre: Block,
    latch: Block,
    def: &SecondaryMap<Value, Option<Block>>,
) -> Vec<Induction> {
    let (Some(init), Some(next)) = (
        call_args(func, pre, l.header),
        call_args(func, latch, l.header),
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, &p) in func.blocks[l.header].params.iter().enumerate() {
        let ty = func.values[p].ty;
        if !matches!(ty, Type::I32 | Type::U32) {
            continue;
        }
        let mut an = Analysis {
            func,
            l,
            def,
            iv: p,
            ty,
            memo: HashMap::default(),
        };
        match an.affine(next[k]) {
            Some(a) if a.step == constant(1) && !a.base.is_empty() => out.push(Induction {
                param: p,
                ty,
                init: init[k],
                step: a.base,
            }),
            _ => {}
        }
    }
    out
}

/// Roots of one induction variable with the same `S` and uniformity, and their step per
/// iteration `delta = c * S`.
struct Group {
    s: Lin,
    delta: Lin,
    roots: Vec<Root>,
}

/// The groups of roots of one induction variable whose step can be made (`c * S` needs one
/// side constant), in program order of their first roots; read from `func`, which is not
/// changed.
fn plan(func: &Function, l: &Loop, iv: &Induction, uni: &Uniformity, facts: &Facts) -> Vec<Group> {
    let mut an = Analysis {
        func,
        l,
        def: &facts.def,
        iv: iv.param,
        ty: iv.ty,
        memo: HashMap::default(),
    };
    // Roots in program order, grouped by (S, uniform).
    let mut groups: Vec<((Lin, bool), Vec<Root>)> = Vec::new();
    for &b in &l.blocks {
        for &i in &an.func.blocks[b].insts {
            let d = &an.func.insts[i];
            if !is_affine_op(d) || an.func.results[i].len() != 1 {
                continue;
            }
            let v = an.func.results[i][0];
            let Some(a) = an.affine(v) else { continue };
            if as_const(&a.step).is_some() {
                continue;
            }
            let mut other_use = false;
            for &u in facts.users(v) {
                let ud = &an.func.insts[u];
                let r = an.func.results[u].first().copied();
                let follows =
                    is_affine_op(ud) && r.is_some_and(|r| an.inside(r) && an.affine(r).is_some());
                other_use |= !follows;
            }
            if !other_use {
                continue;
            }
            let key = (a.step.clone(), uni.is_uniform(v));
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, g)) => g.push((i, v, a.base)),
                None => groups.push((key, vec![(i, v, a.base)])),
            }
        }
    }
    groups
        .into_iter()
        .filter_map(|((s, _), roots)| {
            let delta = match (as_const(&iv.step), as_const(&s)) {
                (Some(c), _) => scale(&s, c),
                (_, Some(k)) => scale(&iv.step, k),
                _ => return None,
            };
            Some(Group { s, delta, roots })
        })
        .collect()
}

/// Rewrites the roots of `groups` (from [`plan`] on this function); gives the number of
/// parameters added (one per group).
#[allow(clippy::too_many_arguments)]
fn rewrite(
    func: &mut Function,
    pre: Block,
    latch: Block,
    header: Block,
    iv: &Induction,
    uni: &Uniformity,
    groups: Vec<Group>,
    def: &SecondaryMap<Value, Option<Block>>,
) -> usize {
    let mut m = Materializer {
        pre,
        ty: iv.ty,
        made: HashMap::default(),
    };
    let mut added = 0;
    // Each rewritten root and its new value. No new value is a root and no instruction made
    // here uses a root, so replacing all of them at the end is replacing each in turn.
    let mut replaced: HashMap<Value, Value> = HashMap::default();
    for Group { s, delta, roots } in groups {
        let b0 = roots[0].2.clone();
        // `init * S + B0`.
        let start = match const_of(func, iv.init) {
            Some(c) => sum(&scale(&s, c), &b0, 1),
            None => {
                let sv = m.value(func, &s);
                let prod = m.binary(func, BinaryOp::Mul, iv.init, sv);
                sum(&Lin::from([(Some(prod), 1)]), &b0, 1)
            }
        };
        let start = m.value(func, &start);
        let step = m.value(func, &delta);
        let p = func.append_block_param(header, iv.ty);
        added += 1;
        let next = func
            .make_inst(InstData::Binary {
                op: BinaryOp::Add,
                args: [p, step],
            })
            .expect("two values of one type");
        let nv = func.results[next][0];
        let li = &mut func.blocks[latch].insts;
        li.insert(li.len() - 1, next);
        push_arg(func, pre, header, start);
        push_arg(func, latch, header, nv);
        for (i, v, b) in roots {
            let d = sum(&b, &b0, u32::MAX);
            // A divergent difference would hold a VGPR across the loop: such a root keeps
            // its own computation.
            if d.keys().flatten().any(|&t| !uni.is_uniform(t)) {
                continue;
            }
            let new = if d.is_empty() {
                p
            } else {
                let dv = m.value(func, &d);
                let add = func
                    .make_inst(InstData::Binary {
                        op: BinaryOp::Add,
                        args: [p, dv],
                    })
                    .expect("two values of one type");
                let blk = def[v].expect("a root is defined in the loop");
                let insts = &mut func.blocks[blk].insts;
                let at = insts
                    .iter()
                    .position(|&x| x == i)
                    .expect("root in its block");
                insts.insert(at, add);
                func.results[add][0]
            };
            replaced.insert(v, new);
        }
    }
    if !replaced.is_empty() {
        func.replace_uses(|x| replaced.get(&x).copied().unwrap_or(x));
    }
    added
}

fn const_of(func: &Function, v: Value) -> Option<u32> {
    match func.values[v].def {
        crate::ValueDef::Result(i, 0) => match func.insts[i] {
            InstData::Const { bits, .. } => Some(bits as u32),
            _ => None,
        },
        _ => None,
    }
}

/// Appends `arg` to the branch from `from` to `to`.
fn push_arg(func: &mut Function, from: Block, to: Block, arg: Value) {
    let t = func.terminator(from).expect("a terminated block");
    for c in func.insts[t].branch_targets_mut() {
        if c.block == to {
            c.args.push(arg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_function;

    /// A strided loop as the pipelined builder writes it: `t` steps by 2, and each iteration
    /// stores at `(t + 0) * s + lid` and `(t + 1) * s + lid`, with the loop test on `t * s`.
    const STRIDED: &str = "kernel k(s: u32, x: buf_mut<u32>) {
block0(v0: u32, v1: buf_mut<u32>):
    v2:u32 = const.u32 0
    v3:u32 = workitem_id.x
    jump block1(v2)
block1(v4: u32):
    v5:u32 = mul v4, v0
    v6:u32 = const.u32 40
    v7:bool = lt v5, v6
    brif v7, block2, block3
block2:
    v8:u32 = mul v4, v0
    v9:u32 = add v8, v3
    store v1[v9], v4
    v10:u32 = const.u32 1
    v11:u32 = add v4, v10
    v12:u32 = mul v11, v0
    v13:u32 = add v12, v3
    store v1[v13], v11
    v14:u32 = const.u32 2
    v15:u32 = add v4, v14
    jump block1(v15)
block3:
    return
}";

    fn muls_in_loop(f: &Function) -> usize {
        f.layout[1..3]
            .iter()
            .flat_map(|&b| &f.blocks[b].insts)
            .filter(|&&i| {
                matches!(
                    f.insts[i],
                    InstData::Binary {
                        op: BinaryOp::Mul,
                        ..
                    }
                )
            })
            .count()
    }

    #[test]
    fn products_of_the_counter_become_running_sums_and_compute_the_same() {
        let f = parse_function(STRIDED).unwrap();
        let mut g = f.clone();
        super::super::gvn::number_values(&mut g, &mut None);
        // One uniform sum for the test (`t * s`), one divergent for the indices (`t * s + lid`).
        assert_eq!(reduce_strength(&mut g, None), 2);
        super::super::gvn::number_values(&mut g, &mut None);
        super::super::dce::remove_dead_code(&mut g);
        crate::verify(&g).unwrap();
        assert_eq!(muls_in_loop(&f), 3);
        assert_eq!(
            muls_in_loop(&g),
            0,
            "{}",
            crate::write::function_to_string(&g)
        );
        // The counter `t` is still stored, so it stays.
        assert_eq!(g.blocks[g.layout[1]].params.len(), 3);
        for s in [1, 3, 7] {
            let x = super::super::loops::run_u32_kernel(&f, s, 4);
            // Lane 0 of s = 7 stores t at t * 7 for t = 0..6.
            if s == 7 {
                assert_eq!([x[0], x[7], x[14], x[35]], [0, 1, 2, 5]);
            }
            assert_eq!(x, super::super::loops::run_u32_kernel(&g, s, 4), "s = {s}");
        }
    }

    #[test]
    fn a_lone_product_of_a_uniform_counter_stays_a_product() {
        // One `t * s` used once: its running sum would cost an init, a step and a register
        // for one `s_mul_i32`, and the kernel would grow.
        let src = STRIDED
            .replace(
                "    v12:u32 = mul v11, v0\n    v13:u32 = add v12, v3\n    store v1[v13], v11\n",
                "",
            )
            .replace(
                "    v8:u32 = mul v4, v0\n    v9:u32 = add v8, v3\n",
                "    v9:u32 = add v4, v3\n",
            );
        let mut f = parse_function(&src).unwrap();
        super::super::gvn::number_values(&mut f, &mut None);
        assert_eq!(reduce_strength(&mut f, None), 0);
    }
}

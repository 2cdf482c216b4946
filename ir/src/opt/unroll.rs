//! Full unrolling of small counted loops, the first step of the optimizer.
//!
//! Takes a verified [`Function`]; gives an equivalent one in which every innermost loop with a
//! constant trip count of at most [`MAX_TRIPS`] and at most [`MAX_UNROLLED_INSTS`] instructions
//! once unrolled is replaced by its iterations in a row. Why: a GPU loop of a few instructions
//! spends most of its time on its own compare and branch and on waiting for each iteration's
//! loads before the next can issue; unrolled, the induction variable is a constant in each
//! iteration, the e-graph folds the constant index parts into the memory instructions'
//! immediate offsets, and loads of several iterations can issue together with one wait. LLVM's
//! full unroll (its threshold is larger) does this to matmul's inner loop and reduce_sum's
//! halving loop.
//!
//! The shape (as `KernelBuilder::for_range` and `while_` make it): a header `H(params)` whose
//! only instructions are constants, one integer compare of a parameter `i` with a constant and
//! `brif` to the body's first block `B` (entered only from `H`, no parameters) or the exit `E`;
//! the body is the blocks of the natural loop without `H`, without a cycle of their own, with
//! one latch that jumps back to `H` passing `i op c` (`op` one of add, sub, mul, shl, shr; `c`
//! constant) as the new `i`; `H`'s other predecessor `P` only jumps to `H`, with a constant `i`.
//! The trip count is found by running the compare and the step with the interpreter's
//! semantics ([`crate::semantics`]).

use crate::entities::{Block, Inst, Value};
use crate::function::{Function, ValueDef};
use crate::instructions::{BinaryOp, BlockCall, InstData};
use crate::semantics::{eval_binary, eval_cmp};
use crate::types::Type;
use cranelift_entity::SecondaryMap;

/// Most iterations of a loop that is unrolled.
pub const MAX_TRIPS: u64 = 16;

/// Most instructions the unrolled iterations may add up to.
pub const MAX_UNROLLED_INSTS: usize = 256;

/// Most blocks of a body that is unrolled. Bodies with control flow stay loops: on GCN each
/// copy of a divergent `if` costs its mask bookkeeping (a section head, EXEC writes, a skip),
/// more than the loop's compare and branch it saves — reduce_sum's halving loop unrolled was
/// 225 instructions instead of 68.
pub const MAX_BODY_BLOCKS: usize = 1;

/// A loop found to unroll.
struct Counted {
    preheader: Block,
    header: Block,
    /// The body's blocks in layout order; the first is the header's `then` target.
    body: Vec<Block>,
    latch: Block,
    /// The induction parameter's index among the header's parameters, its type and its value
    /// in each iteration (one per trip).
    induction: (usize, Type, Vec<u64>),
}

/// Unrolls every loop of the shape above; gives the new function and the block chains to merge
/// after the e-graph ([`merge_unrolled`]), or `None` when there is no such loop (and nothing was
/// copied). Each iteration is its own block (the e-graph works per block, and its cost grows
/// faster than the block), with the induction variable a constant in it.
pub fn unroll_small_loops(func: &Function) -> Option<(Function, Vec<Vec<Block>>)> {
    let first = find(func)?;
    let mut f = func.clone();
    let mut chains = vec![apply(&mut f, &first)];
    while let Some(l) = find(&f) {
        chains.push(apply(&mut f, &l));
    }
    Some((f, chains))
}

/// Merges each chain [`unroll_small_loops`] gave into straight-line blocks and removes the
/// pure instructions that repeat an earlier one of the same block (the iterations' shared
/// address parts), so that the backend sees one block per unrolled loop.
pub fn merge_unrolled(f: &mut Function, chains: &[Vec<Block>]) {
    for chain in chains {
        merge_chains(f, chain);
        for &b in chain {
            if f.layout.contains(&b) {
                common_subexpressions(f, b);
            }
        }
    }
}

/// Drops each pure instruction of `b` equal to an earlier one (after renaming), using the
/// earlier result instead.
fn common_subexpressions(f: &mut Function, b: Block) {
    // Sized once for the block (the merged iterations: hundreds of instructions).
    let mut seen: rustc_hash::FxHashMap<InstData, crate::Inst> =
        rustc_hash::FxHashMap::with_capacity_and_hasher(
            f.blocks[b].insts.len(),
            Default::default(),
        );
    let mut subst: SecondaryMap<Value, Option<Value>> = SecondaryMap::new();
    subst.resize(f.values.len());
    let mut any = false;
    let mut keep = Vec::new();
    for &i in &f.blocks[b].insts.clone() {
        let mut data = f.insts[i].clone();
        data.map_args(|a| subst[a].unwrap_or(a));
        f.insts[i] = data.clone();
        if data.effects().is_pure() && !data.is_terminator() && f.results[i].len() == 1 {
            if let Some(&j) = seen.get(&data) {
                subst[f.results[i][0]] = Some(f.results[j][0]);
                any = true;
                continue;
            }
            seen.insert(data, i);
        }
        keep.push(i);
    }
    f.blocks[b].insts = keep;
    if any {
        f.replace_uses(|v| subst[v].unwrap_or(v));
    }
}

/// The constant an integer value is, as its bits.
fn const_bits(f: &Function, v: Value) -> Option<u64> {
    match f.values[v].def {
        ValueDef::Result(i, 0) => match f.insts[i] {
            InstData::Const { bits, .. } => Some(bits),
            _ => None,
        },
        _ => None,
    }
}

/// Makes the copy of `i` whose data (arguments already mapped) is `data`, and maps each result of
/// `i` to the copy's.
pub(super) fn make_copy(
    f: &mut Function,
    i: Inst,
    data: InstData,
    vmap: &mut SecondaryMap<Value, Option<Value>>,
) -> Inst {
    let ni = f.make_inst(data).expect("a copy of a valid instruction");
    for k in 0..f.results[i].len() {
        vmap[f.results[i][k]] = Some(f.results[ni][k]);
    }
    ni
}

/// Each block's predecessors (each once).
pub(super) fn predecessors(f: &Function) -> SecondaryMap<Block, Vec<Block>> {
    let mut preds: SecondaryMap<Block, Vec<Block>> = SecondaryMap::new();
    for &b in &f.layout {
        for s in f.successors(b) {
            if !preds[s].contains(&b) {
                preds[s].push(b);
            }
        }
    }
    preds
}

/// The loop shape full and runtime unrolling start from: `h` ends in `brif cond, first, exit`,
/// `first` (the body's first block, not `h`) takes no arguments or parameters and is entered
/// only from `h`, the exit is not `h`, and `h` has two predecessors (the entry and the latch).
/// Gives `(cond, first, exit)`.
pub(super) fn loop_header(
    f: &Function,
    preds: &SecondaryMap<Block, Vec<Block>>,
    h: Block,
) -> Option<(Value, Block, Block)> {
    let InstData::Brif {
        cond,
        then_dest,
        else_dest,
    } = &f.insts[f.terminator(h)?]
    else {
        return None;
    };
    let (first, exit) = (then_dest.block, else_dest.block);
    if first == h || exit == h || !then_dest.args.is_empty() {
        return None;
    }
    if !f.blocks[first].params.is_empty() || preds[first].as_slice() != [h] || preds[h].len() != 2 {
        return None;
    }
    Some((*cond, first, exit))
}

fn find(f: &Function) -> Option<Counted> {
    let preds = predecessors(f);
    let mut uses: SecondaryMap<Value, u32> = SecondaryMap::new();
    for &b in &f.layout {
        for &i in &f.blocks[b].insts {
            f.insts[i].for_each_arg(|a| uses[a] += 1);
        }
    }
    f.layout.iter().find_map(|&h| counted(f, &preds, &uses, h))
}

/// The loop headed by `h`, when it has the shape the module doc describes.
fn counted(
    f: &Function,
    preds: &SecondaryMap<Block, Vec<Block>>,
    uses: &SecondaryMap<Value, u32>,
    h: Block,
) -> Option<Counted> {
    let (cond, first, _) = loop_header(f, preds, h)?;
    // The latch: the predecessor of `h` that `first` reaches; the other one enters the loop.
    let body = natural_loop(f, preds, h, first)?;
    if body.len() > MAX_BODY_BLOCKS {
        return None;
    }
    let (latch, p) = match (body.contains(&preds[h][0]), body.contains(&preds[h][1])) {
        (true, false) => (preds[h][0], preds[h][1]),
        (false, true) => (preds[h][1], preds[h][0]),
        _ => return None,
    };
    let InstData::Jump { dest: back } = &f.insts[f.terminator(latch)?] else {
        return None;
    };
    let InstData::Jump { dest: entry } = &f.insts[f.terminator(p)?] else {
        return None;
    };
    // Only the latch leaves the body, and only to `h`.
    for &b in &body {
        for s in f.successors(b) {
            if s == h && b != latch || s != h && !body.contains(&s) {
                return None;
            }
        }
    }
    // The header: constants, the compare, the branch; the compare feeds only the branch.
    let cmp = match f.values[cond].def {
        ValueDef::Result(i, 0) if f.blocks[h].insts.contains(&i) => i,
        _ => return None,
    };
    if uses[cond] != 1 {
        return None;
    }
    let header_ok = f.blocks[h].insts.iter().all(|&i| {
        i == cmp || f.insts[i].is_terminator() || matches!(f.insts[i], InstData::Const { .. })
    });
    if !header_ok {
        return None;
    }
    let InstData::Cmp { op, args } = f.insts[cmp] else {
        return None;
    };
    let params = &f.blocks[h].params;
    let at = |v: Value| params.iter().position(|&p| p == v);
    // `i op bound` or `bound op i`.
    let (k, bound, flipped) = match (at(args[0]), at(args[1])) {
        (Some(k), None) => (k, const_bits(f, args[1])?, false),
        (None, Some(k)) => (k, const_bits(f, args[0])?, true),
        _ => return None,
    };
    let ty = f.value_type(params[k]);
    if !matches!(ty, Type::I32 | Type::U32) {
        return None;
    }
    let init = const_bits(f, entry.args[k])?;
    let (step_op, step) = match f.values[back.args[k]].def {
        ValueDef::Result(i, 0) if body.iter().any(|&b| f.blocks[b].insts.contains(&i)) => {
            match f.insts[i] {
                InstData::Binary { op, args: [a, b] }
                    if a == params[k]
                        && matches!(
                            op,
                            BinaryOp::Add
                                | BinaryOp::Sub
                                | BinaryOp::Mul
                                | BinaryOp::Shl
                                | BinaryOp::Shr
                        ) =>
                {
                    (op, const_bits(f, b)?)
                }
                InstData::Binary { op, args: [a, b] }
                    if b == params[k] && matches!(op, BinaryOp::Add | BinaryOp::Mul) =>
                {
                    (op, const_bits(f, a)?)
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    let mut i = init;
    let mut trips = 0u64;
    let mut values = Vec::new();
    loop {
        let go = if flipped {
            eval_cmp(op, ty, bound, i)
        } else {
            eval_cmp(op, ty, i, bound)
        };
        if !go {
            break;
        }
        trips += 1;
        if trips > MAX_TRIPS {
            return None;
        }
        values.push(i);
        i = eval_binary(step_op, ty, i, step);
    }
    let per_trip: usize = body.iter().map(|&b| f.blocks[b].insts.len()).sum();
    if per_trip * trips as usize > MAX_UNROLLED_INSTS {
        return None;
    }
    Some(Counted {
        preheader: p,
        header: h,
        body,
        latch,
        induction: (k, ty, values),
    })
}

/// The blocks of the loop headed by `h` without `h`, in layout order with `first` first, when
/// they have no cycle of their own (every block is reached from `first` without `h`, and a
/// walk in layout order sees every edge go forward).
fn natural_loop(
    f: &Function,
    preds: &SecondaryMap<Block, Vec<Block>>,
    h: Block,
    first: Block,
) -> Option<Vec<Block>> {
    let mut set: Vec<Block> = Vec::new();
    let mut work: Vec<Block> = preds[h].iter().copied().filter(|&p| p != h).collect();
    // Blocks that reach `h` backwards through non-`h` blocks, restricted to those `first`
    // reaches: the loop body when `first` dominates them.
    let mut reach: Vec<Block> = vec![first];
    let mut k = 0;
    while k < reach.len() {
        for s in f.successors(reach[k]) {
            if s != h && !reach.contains(&s) {
                reach.push(s);
            }
        }
        k += 1;
        if reach.len() > MAX_UNROLLED_INSTS {
            return None;
        }
    }
    while let Some(b) = work.pop() {
        if b == h || set.contains(&b) || !reach.contains(&b) {
            continue;
        }
        set.push(b);
        work.extend(preds[b].iter().copied());
    }
    if !set.contains(&first) {
        return None;
    }
    let pos = |b: Block| f.layout.iter().position(|&x| x == b);
    set.sort_by_key(|&b| pos(b));
    if set[0] != first {
        return None;
    }
    for &b in &set {
        for s in f.successors(b) {
            if s != h && pos(s) <= pos(b) {
                return None;
            }
        }
    }
    Some(set)
}

/// Puts the loop's iterations after its preheader, which then jumps to the first; the last
/// iteration jumps to the exit.
fn apply(f: &mut Function, l: &Counted) -> Vec<Block> {
    let h = l.header;
    let params = f.blocks[h].params.clone();
    let InstData::Jump { dest: entry } =
        f.insts[f.terminator(l.preheader).expect("a jump")].clone()
    else {
        unreachable!("checked by `counted`")
    };
    let InstData::Brif { else_dest, .. } = f.insts[f.terminator(h).expect("a brif")].clone() else {
        unreachable!("checked by `counted`")
    };
    // The preheader loses its jump and gains the header's constants (it dominates their uses).
    let mut pre = f.blocks[l.preheader].insts.clone();
    pre.pop();
    for &i in &f.blocks[h].insts {
        if matches!(f.insts[i], InstData::Const { .. }) {
            pre.push(i);
        }
    }
    let mut vmap: SecondaryMap<Value, Option<Value>> = SecondaryMap::new();
    let mut cur: Vec<Value> = entry.args.to_vec();
    let mut new_blocks: Vec<Block> = Vec::new();
    // The block the previous iteration (or the preheader) jumps to next, and that jump.
    let mut pending_jump: Option<Block> = Some(l.preheader);
    let mut iter_blocks: Vec<Vec<Block>> = Vec::new();
    let (ki, kty, ref kvals) = l.induction;
    for &kval in kvals {
        for (&p, &v) in params.iter().zip(&cur) {
            vmap[p] = Some(v);
        }
        // The induction variable is this iteration's constant.
        let kc = f
            .make_inst(InstData::Const {
                ty: kty,
                bits: kval,
            })
            .expect("a constant");
        vmap[params[ki]] = Some(f.results[kc][0]);
        let mut bmap: SecondaryMap<Block, Option<Block>> = SecondaryMap::new();
        let mut these = Vec::new();
        for &b in &l.body {
            let nb = f.create_block();
            bmap[b] = Some(nb);
            for &p in &f.blocks[b].params.clone() {
                let np = f.append_block_param(nb, f.values[p].ty);
                vmap[p] = Some(np);
            }
            these.push(nb);
        }
        let mut latch_args = Vec::new();
        for &b in &l.body {
            let nb = bmap[b].expect("mapped above");
            let mut insts = Vec::new();
            if b == l.body[0] {
                insts.push(kc);
            }
            for &i in &f.blocks[b].insts.clone() {
                let mut data = f.insts[i].clone();
                data.map_args(|a| vmap[a].unwrap_or(a));
                for call in data.branch_targets_mut() {
                    if let Some(t) = bmap[call.block] {
                        call.block = t;
                    }
                }
                if b == l.latch && data.is_terminator() {
                    // The back edge: its arguments are the next iteration's parameters.
                    latch_args = data.args().to_vec();
                    continue;
                }
                insts.push(make_copy(f, i, data, &mut vmap));
            }
            f.blocks[nb].insts = insts;
        }
        cur = latch_args;
        if let Some(from) = pending_jump.take() {
            link(f, from, these[0], &[], from == l.preheader, &mut pre);
        }
        pending_jump = Some(bmap[l.latch].expect("the latch is in the body"));
        new_blocks.extend(&these);
        iter_blocks.push(these);
    }
    for (&p, &v) in params.iter().zip(&cur) {
        vmap[p] = Some(v);
    }
    let exit_args: Vec<Value> = else_dest
        .args
        .iter()
        .map(|&a| vmap[a].unwrap_or(a))
        .collect();
    let from = pending_jump.expect("the preheader or the last latch");
    link(
        f,
        from,
        else_dest.block,
        &exit_args,
        from == l.preheader,
        &mut pre,
    );
    f.blocks[l.preheader].insts = pre;
    let at = f
        .layout
        .iter()
        .position(|&b| b == h)
        .expect("the header is laid out");
    f.layout.retain(|&b| b != h && !l.body.contains(&b));
    let at = at.min(f.layout.len());
    f.layout.splice(at..at, new_blocks);
    // After the loop, its parameters are their last values.
    let last: Vec<(Value, Value)> = params.iter().copied().zip(cur).collect();
    f.replace_uses(|v| last.iter().find(|(p, _)| *p == v).map_or(v, |(_, n)| *n));
    let mut region = vec![l.preheader];
    region.extend(iter_blocks.concat());
    region
}

/// Merges each block of `region` that jumps to another block of `region` with no other
/// predecessor into that jump's source (its parameters become the jump's arguments), so that
/// straight-line iterations are one block for the e-graph and the backend.
fn merge_chains(f: &mut Function, region: &[Block]) {
    loop {
        let mut npred: SecondaryMap<Block, u32> = SecondaryMap::new();
        for &b in &f.layout {
            for s in f.successors(b) {
                npred[s] += 1;
            }
        }
        let found = region.iter().copied().find_map(|a| {
            if !f.layout.contains(&a) {
                return None;
            }
            match &f.insts[f.terminator(a)?] {
                InstData::Jump { dest }
                    if dest.block != a
                        && region.contains(&dest.block)
                        && npred[dest.block] == 1 =>
                {
                    Some((a, dest.clone()))
                }
                _ => None,
            }
        });
        let Some((a, dest)) = found else { return };
        let b = dest.block;
        let subst: Vec<(Value, Value)> = f.blocks[b]
            .params
            .iter()
            .copied()
            .zip(dest.args.iter().copied())
            .collect();
        f.blocks[a].insts.pop();
        let moved = std::mem::take(&mut f.blocks[b].insts);
        f.blocks[a].insts.extend(moved);
        f.layout.retain(|&x| x != b);
        if !subst.is_empty() {
            f.replace_uses(|v| subst.iter().find(|(p, _)| *p == v).map_or(v, |(_, n)| *n));
        }
    }
}

/// Ends block `from` (the preheader's instructions are in `pre`) with a jump to `to`.
fn link(
    f: &mut Function,
    from: Block,
    to: Block,
    args: &[Value],
    preheader: bool,
    pre: &mut Vec<crate::Inst>,
) {
    let jump = f
        .make_inst(InstData::Jump {
            dest: BlockCall::new(to, args),
        })
        .expect("a jump");
    if preheader {
        pre.push(jump);
    } else {
        f.blocks[from].insts.push(jump);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_function as parse;

    const LOOP: &str = "kernel k(out: buf_mut<u32>, x: u32) {
block0(v0: buf_mut<u32>, v1: u32):
    v2:u32 = const.u32 0
    jump block1(v2, v1)
block1(v3: u32, v4: u32):
    v5:u32 = const.u32 4
    v6:bool = lt v3, v5
    brif v6, block2, block3
block2:
    v7:u32 = const.u32 1
    v8:u32 = add v3, v7
    v9:u32 = mul v4, v3
    jump block1(v8, v9)
block3:
    v10:u32 = const.u32 0
    store v0[v10], v4
    return
}
";

    /// A halving loop (`s = 8; while 0 < s { if lane < s { .. } ; s >>= 1 }`) with a divergent
    /// `if` in its body, as reduce_sum's.
    const HALVING: &str = "kernel k(out: buf_mut<u32>, x: u32) {
block0(v0: buf_mut<u32>, v1: u32):
    v2:u32 = const.u32 8
    v3:u32 = workitem_id.x
    jump block1(v2, v1)
block1(v4: u32, v5: u32):
    v6:u32 = const.u32 0
    v7:bool = lt v6, v4
    brif v7, block2, block5
block2:
    v8:bool = lt v3, v4
    brif v8, block3, block4(v5)
block3:
    v9:u32 = add v5, v4
    jump block4(v9)
block4(v10: u32):
    v11:u32 = const.u32 1
    v12:u32 = shr v4, v11
    jump block1(v12, v10)
block5:
    store v0[v3], v5
    return
}
";

    fn run(g: &Function, x: u32, lanes: u32) -> Vec<crate::interp::Arg> {
        let launch = crate::interp::LaunchDims {
            grid: [1, 1, 1],
            block: [lanes, 1, 1],
            dynamic_lds: 0,
        };
        let mut args = vec![
            crate::interp::Arg::Buffer(crate::interp::BufferData::U32(vec![9; lanes as usize])),
            crate::interp::Arg::U32(x),
        ];
        crate::interp::run(g, &launch, &mut args).unwrap();
        args
    }

    fn count(g: &Function, f: impl Fn(&InstData) -> bool) -> usize {
        g.layout
            .iter()
            .flat_map(|&b| g.blocks[b].insts.iter())
            .filter(|&&i| f(&g.insts[i]))
            .count()
    }

    #[test]
    fn a_counted_loop_becomes_its_iterations_and_computes_the_same() {
        let f = parse(LOOP).unwrap();
        let (mut u, chains) = unroll_small_loops(&f).unwrap();
        assert_eq!(chains.len(), 1);
        crate::verify(&u).unwrap();
        assert_eq!(u.layout.len(), 6, "{u}");
        merge_unrolled(&mut u, &chains);
        crate::verify(&u).unwrap();
        assert_eq!(u.layout.len(), 2, "{u}");
        let mul = |d: &InstData| {
            matches!(
                d,
                InstData::Binary {
                    op: BinaryOp::Mul,
                    ..
                }
            )
        };
        assert_eq!(count(&u, mul), 4, "{u}");
        for x in [1u32, 3, 7] {
            assert_eq!(run(&f, x, 1), run(&u, x, 1), "x = {x}");
        }
    }

    #[test]
    fn a_halving_loop_with_a_divergent_if_stays_a_loop_unless_bodies_may_branch() {
        let f = parse(HALVING).unwrap();
        assert!(unroll_small_loops(&f).is_none());
        // With the block limit lifted, the body is unrolled block by block.
        let preds = {
            let mut p: SecondaryMap<Block, Vec<Block>> = SecondaryMap::new();
            for &b in &f.layout {
                for s in f.successors(b) {
                    if !p[s].contains(&b) {
                        p[s].push(b);
                    }
                }
            }
            p
        };
        let h = f.layout[1];
        let body = natural_loop(&f, &preds, h, f.layout[2]).unwrap();
        assert_eq!(body.len(), 3);
        let mut u = f.clone();
        let l = Counted {
            preheader: f.layout[0],
            header: h,
            latch: f.layout[4],
            body,
            induction: (0, Type::U32, vec![8, 4, 2, 1]),
        };
        let chain = apply(&mut u, &l);
        merge_unrolled(&mut u, &[chain]);
        crate::verify(&u).unwrap();
        // s = 8, 4, 2, 1: four copies of the three body blocks, no compare of `s` left; each
        // join merged with the next iteration's first block: entry, 4 × then, 3 joins, last
        // join, exit.
        let brif = |d: &InstData| matches!(d, InstData::Brif { .. });
        assert_eq!(count(&u, brif), 4, "{u}");
        assert_eq!(u.layout.len(), 10, "{u}");
        for x in [0u32, 5] {
            assert_eq!(run(&f, x, 16), run(&u, x, 16), "x = {x}");
        }
    }

    #[test]
    fn loops_over_the_limits_or_not_counted_stay() {
        // 17 iterations; a bound that is not a constant.
        for (from, to) in [
            ("const.u32 4", "const.u32 17"),
            ("const.u32 4", "add v4, v4"),
        ] {
            let f = parse(&LOOP.replace(from, to)).unwrap();
            assert!(unroll_small_loops(&f).is_none(), "{to}");
        }
    }
}

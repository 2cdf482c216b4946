//! Unrolling of small loops with a runtime trip count, after full unrolling ([`super::unroll`]).
//!
//! Takes a verified [`Function`]; gives an equivalent one in which every small single-block loop
//! whose global loads do not wait on the previous iteration's memory runs up to [`FACTOR`]
//! iterations per trip. Why: such a loop (a grid-stride loop is the common one) waits for each
//! iteration's loads before the next iteration can issue its own, so its time is one memory
//! latency per iteration; with the iterations in one block the backend issues all their loads
//! before the first wait.
//!
//! The shape (as `KernelBuilder::while_` and `for_range` make it): a header `H(params)` of pure
//! instructions ending in `brif c, B, E`, the body `B` one block (entered only from `H`, no
//! parameters) that jumps back to `H(next)`, and a preheader that only jumps to `H`. Whether an
//! iteration runs depends only on the *control* parameters: those `c` depends on, closed under
//! the pure instructions that compute their next values. The result is still one loop, whose
//! body runs the iterations *predicated*:
//!
//! ```text
//! H(params):  header;  brif c, B', E
//! B':  s1 = body(params)                               iteration 0: H's c holds
//!      s2 = header+body(s1);  r1 = c(s1)               iteration 1, run iff r1
//!      s3 = header+body(s2);  r2 = r1 & c(s2)          …
//!      out = r(F−1) ? s(F) : … r1 ? s2 : s1;  jump H(out)
//! ```
//!
//! Each later iteration is computed whether or not it runs, and `out` is the state after the
//! last one that runs (the `select`s), so the loop's values are exactly the original's after
//! those iterations and `H` decides about the next trip as the original loop would: no
//! remainder loop, and nothing assumed about overflow or the compare's direction. Computing an
//! iteration that does not run is harmless because the body is pure code and global loads only
//! (an out-of-range global load gives 0; no pure instruction traps), and what it computes is
//! thrown away. The costs of that: a trip runs all [`FACTOR`] iterations' instructions, and a
//! load past the row may read memory the loop never asked for (at most `FACTOR − 1` elements a
//! lane, in the last trip).
//!
//! In a kernel that declares its buffers `noalias` (no written buffer overlaps another), the
//! body may also store to global buffers it does not load. The stores then go last, after every
//! iteration's loads, so that the loads of all iterations are in flight together (a grid-stride
//! `c[i] = a[i] + b[i]` waits once per trip instead of once per iteration): iteration 0's as
//! they were, and each later iteration's with its index replaced by
//! `select(r_k, index, GUARD_INDEX)`, an index past every buffer, where a store does nothing, so
//! that an iteration that does not run stores nothing. Stores keep their order among
//! themselves; only loads of other buffers pass them, which the declaration makes safe.
//!
//! The later iterations are made as one block each (the e-graph's cost grows faster than a
//! block) after `B`, and merged into it afterwards ([`super::unroll::merge_unrolled`]), as full
//! unrolling does.

use crate::entities::{Block, Inst, Value};
use crate::function::{Function, ValueDef};
use crate::instructions::{BinaryOp, BlockCall, InstData, Mem};
use cranelift_entity::SecondaryMap;

/// Most iterations per trip of an unrolled loop. Each one more costs its loads, a wait, the
/// body, the compare, an `and` and a `select` per loop value (softmax on gfx942: 153
/// instructions at 2, 172 at 3, 191 at 4, against clang's 168; cycles at n = 2048 on `mi300x`
/// 28,140, 24,376, 22,176: `docs/performance-log.md`).
pub const FACTOR: usize = 2;

/// Most instructions (header and body, without the branches) of a loop that is unrolled: the
/// unrolled body is [`FACTOR`] copies of it.
pub const MAX_LOOP_INSTS: usize = 24;

/// A loop found to unroll.
struct Candidate {
    header: Block,
    body: Block,
    /// Whether each header parameter decides (through pure code) whether an iteration runs.
    control: Vec<bool>,
    /// The header's and the body's instructions without their terminators, in order.
    insts: Vec<Inst>,
    /// Of `insts`, what computes the control parameters' next values from the parameters.
    step_slice: Vec<Inst>,
    /// The body's global stores, in order (only in a `noalias` kernel).
    stores: Vec<Inst>,
}

/// Unrolls every loop of the shape above by [`FACTOR`]; gives the new function and the chains
/// of blocks to merge after the e-graph, or `None` when there is no such loop (and nothing was
/// copied).
pub fn unroll_runtime_loops(func: &Function) -> Option<(Function, Vec<Vec<Block>>)> {
    unroll_by(func, FACTOR)
}

/// [`unroll_runtime_loops`] with `factor` (≥ 2) iterations per trip.
fn unroll_by(func: &Function, factor: usize) -> Option<(Function, Vec<Vec<Block>>)> {
    let preds = super::unroll::predecessors(func);
    let found: Vec<Candidate> = func
        .layout
        .iter()
        .filter_map(|&h| candidate(func, &preds, h))
        .collect();
    if found.is_empty() {
        return None;
    }
    let mut f = func.clone();
    let chains = found.iter().map(|c| apply(&mut f, c, factor)).collect();
    Some((f, chains))
}

/// The loop headed by `h`, when it has the shape and the loads the module doc describes.
fn candidate(f: &Function, preds: &SecondaryMap<Block, Vec<Block>>, h: Block) -> Option<Candidate> {
    let (cond, b, exit) = super::unroll::loop_header(f, preds, h)?;
    if exit == b {
        return None;
    }
    let InstData::Jump { dest: back } = &f.insts[f.terminator(b)?] else {
        return None;
    };
    if back.block != h {
        return None;
    }
    let p = *preds[h].iter().find(|&&x| x != b)?;
    if !matches!(&f.insts[f.terminator(p)?], InstData::Jump { dest } if dest.block == h) {
        return None;
    }
    let header: Vec<Inst> = f.blocks[h].insts[..f.blocks[h].insts.len() - 1].to_vec();
    let body: Vec<Inst> = f.blocks[b].insts[..f.blocks[b].insts.len() - 1].to_vec();
    if header.len() + body.len() > MAX_LOOP_INSTS {
        return None;
    }
    // The header is recomputed in every copy; the body may touch memory only by global loads,
    // and by global stores where the kernel declares its buffers `noalias`. No LDS, atomics,
    // barriers or cross-lane operations: unrolling would change their active lanes or their
    // order across lanes. Stores need the declaration because the unrolled body issues every
    // iteration's loads before the first store: where buffers may alias, a copy's loads would
    // wait behind the previous copy's store, which waits for that copy's loads
    // (vector_add_persistent unrolled by 4 without it was 2% faster on `mi300x` for 60
    // instructions). Even then no loop loads a buffer it stores to.
    if !header.iter().all(|&i| f.insts[i].effects().is_pure()) {
        return None;
    }
    let mut stores = Vec::new();
    let mut loaded = Vec::new();
    for &i in &body {
        match &f.insts[i] {
            InstData::Load {
                mem: Mem::Global(buf),
                ..
            } => loaded.push(*buf),
            InstData::Store {
                mem: Mem::Global(buf),
                ..
            } if f.flags.noalias => stores.push((i, *buf)),
            d if d.effects().is_pure() => {}
            _ => return None,
        }
    }
    if stores.iter().any(|(_, buf)| loaded.contains(buf)) {
        return None;
    }
    let stores: Vec<Inst> = stores.into_iter().map(|(i, _)| i).collect();
    let params = &f.blocks[h].params;
    let mut insts = header;
    insts.extend(body);
    if !has_independent_load(f, params, &insts, &back.args) {
        return None;
    }
    // The control parameters: those the condition depends on, closed under their next values.
    let mut control = vec![false; params.len()];
    let (_, used) = slice(f, &insts, &[cond]);
    mark(params, &used, &mut control);
    let step_slice = loop {
        let next: Vec<Value> = (0..params.len())
            .filter(|&k| control[k])
            .map(|k| back.args[k])
            .collect();
        let (s, used) = slice(f, &insts, &next);
        if !mark(params, &used, &mut control) {
            break s;
        }
    };
    // Each copy steps the control values again from the header's parameters: pure code only.
    if !step_slice.iter().all(|&i| f.insts[i].effects().is_pure()) {
        return None;
    }
    Some(Candidate {
        header: h,
        body: b,
        control,
        insts,
        step_slice,
        stores,
    })
}

/// Sets `control[k]` for each parameter in `used`; whether any was new.
fn mark(params: &[Value], used: &[Value], control: &mut [bool]) -> bool {
    let mut new = false;
    for (k, p) in params.iter().enumerate() {
        if used.contains(p) && !control[k] {
            control[k] = true;
            new = true;
        }
    }
    new
}

/// The instructions of `insts` (in order) that `roots` depend on, and the values outside
/// `insts` they read (parameters and loop invariants).
fn slice(f: &Function, insts: &[Inst], roots: &[Value]) -> (Vec<Inst>, Vec<Value>) {
    let mut needed: Vec<Value> = roots.to_vec();
    let mut out = Vec::new();
    for &i in insts.iter().rev() {
        if f.results[i].iter().any(|r| needed.contains(r)) {
            out.push(i);
            f.insts[i].for_each_arg(|a| {
                if !needed.contains(&a) {
                    needed.push(a)
                }
            });
        }
    }
    out.reverse();
    let defined: Vec<Value> = out.iter().flat_map(|&i| f.results[i].clone()).collect();
    needed.retain(|v| !defined.contains(v));
    (out, needed)
}

/// Whether some global load's index does not depend on memory read in an earlier iteration
/// (loop-carried values fed by loads, like a pointer chase): only such loads can overlap.
fn has_independent_load(f: &Function, params: &[Value], insts: &[Inst], back: &[Value]) -> bool {
    let mut tainted: Vec<bool> = vec![false; params.len()];
    loop {
        let mut bad: Vec<Value> = params
            .iter()
            .zip(&tainted)
            .filter(|(_, &t)| t)
            .map(|(&p, _)| p)
            .collect();
        let mut independent = false;
        for &i in insts {
            let d = &f.insts[i];
            let reads_bad = d.args().iter().any(|a| bad.contains(a));
            if let InstData::Load {
                mem: Mem::Global(_),
                index,
                ..
            } = d
            {
                independent |= !bad.contains(index);
            }
            if reads_bad || matches!(d, InstData::Load { .. }) {
                bad.extend(f.results[i].iter().copied());
            }
        }
        let mut changed = false;
        for (k, a) in back.iter().enumerate() {
            if bad.contains(a) && !tainted[k] {
                tainted[k] = true;
                changed = true;
            }
        }
        if !changed {
            return independent;
        }
    }
}

/// Copies `insts` after the end of `to`'s instructions with `vmap` renaming their operands, and
/// maps their results.
fn copy_into(
    f: &mut Function,
    to: Block,
    insts: &[Inst],
    vmap: &mut SecondaryMap<Value, Option<Value>>,
) {
    for &i in insts {
        let mut data = f.insts[i].clone();
        // Constants of other blocks are made again here: the e-graph sees only its block's.
        for a in data.args() {
            if vmap[a].is_none() {
                if let ValueDef::Result(c, 0) = f.values[a].def {
                    if let d @ InstData::Const { .. } = &f.insts[c] {
                        let nc = f.make_inst(d.clone()).expect("a constant");
                        f.blocks[to].insts.push(nc);
                        vmap[a] = Some(f.results[nc][0]);
                    }
                }
            }
        }
        data.map_args(|a| vmap[a].unwrap_or(a));
        let ni = super::unroll::make_copy(f, i, data, vmap);
        f.blocks[to].insts.push(ni);
    }
}

fn push_jump(f: &mut Function, from: Block, to: Block, args: &[Value]) {
    let j = f
        .make_inst(InstData::Jump {
            dest: BlockCall::new(to, args),
        })
        .expect("a jump");
    f.blocks[from].insts.push(j);
}

/// Makes `c`'s body run [`FACTOR`] iterations per trip (the module doc's `B'`); gives the
/// chain of blocks to merge after the e-graph: the body, then one block per later iteration.
fn apply(f: &mut Function, c: &Candidate, factor: usize) -> Vec<Block> {
    let h = c.header;
    let params = f.blocks[h].params.clone();
    let InstData::Brif { cond, .. } = f.insts[f.terminator(h).expect("a brif")] else {
        unreachable!("checked by `candidate`")
    };
    let back_inst = f.terminator(c.body).expect("a jump");
    let InstData::Jump { dest: back } = f.insts[back_inst].clone() else {
        unreachable!("checked by `candidate`")
    };
    let copies: Vec<Block> = (1..factor).map(|_| f.create_block()).collect();
    // The body is iteration 0 (its condition is the header's); it now falls into iteration 1.
    f.insts[back_inst] = InstData::Jump {
        dest: BlockCall::new(copies[0], &[]),
    };
    // Stores go last, after every iteration's loads: iteration 0's as they were, each later
    // one's guarded (`stores`); the copies compute everything else.
    f.blocks[c.body].insts.retain(|i| !c.stores.contains(i));
    let computed: Vec<Inst> = c
        .insts
        .iter()
        .filter(|i| !c.stores.contains(i))
        .copied()
        .collect();
    let mut later_stores: Vec<InstData> = Vec::new();
    // `s`: the values iteration k starts from (computed whether or not it runs); `out`: the
    // values after the last iteration that runs; `run`: whether iteration k runs.
    let mut s: Vec<Value> = back.args.to_vec();
    let mut out = s.clone();
    let mut run: Option<Value> = None;
    for (j, &blk) in copies.iter().enumerate() {
        let k = j + 1;
        // The control values are stepped again from the header's parameters, so that the
        // e-graph sees them as the loop's values plus constants (`i + 3 * 64`, folded into the
        // loads' immediate offsets) instead of the previous copy's values as leaves.
        let mut vmap: SecondaryMap<Value, Option<Value>> = SecondaryMap::new();
        let mut ctl = params.clone();
        for _ in 0..k {
            for (&p, &v) in params.iter().zip(&ctl) {
                vmap[p] = Some(v);
            }
            copy_into(f, blk, &c.step_slice, &mut vmap);
            for i in (0..params.len()).filter(|&i| c.control[i]) {
                ctl[i] = vmap[back.args[i]].unwrap_or(back.args[i]);
            }
        }
        for (i, &p) in params.iter().enumerate() {
            vmap[p] = Some(if c.control[i] { ctl[i] } else { s[i] });
        }
        copy_into(f, blk, &computed, &mut vmap);
        let ck = vmap[cond].unwrap_or(cond);
        let rk = match run {
            None => ck,
            Some(r) => push_value(
                f,
                blk,
                InstData::Binary {
                    op: BinaryOp::And,
                    args: [r, ck],
                },
            ),
        };
        run = Some(rk);
        for &st in &c.stores {
            let data = f.insts[st].clone();
            later_stores.push(guarded_store(f, blk, &data, &vmap, rk));
        }
        if j + 1 == copies.len() {
            f.blocks[blk].insts.extend(&c.stores);
            for data in std::mem::take(&mut later_stores) {
                let i = f.make_inst(data).expect("a store of the loop");
                f.blocks[blk].insts.push(i);
            }
        }
        s = back.args.iter().map(|&a| vmap[a].unwrap_or(a)).collect();
        for i in 0..params.len() {
            if s[i] != out[i] {
                out[i] = push_value(
                    f,
                    blk,
                    InstData::Select {
                        args: [rk, s[i], out[i]],
                    },
                );
            }
        }
        match copies.get(j + 1) {
            Some(&next) => push_jump(f, blk, next, &[]),
            None => push_jump(f, blk, h, &out),
        }
    }
    let at = f
        .layout
        .iter()
        .position(|&b| b == c.body)
        .expect("the body is laid out");
    f.layout.splice(at + 1..at + 1, copies.iter().copied());
    let mut chain = vec![c.body];
    chain.extend(copies);
    chain
}

/// An index past every buffer: a store there does nothing (the IR's rule: lengths are below
/// 2^32). On the device its byte offset (−16 for 4-byte elements, −8 or −32 for 2- or 8-byte
/// ones) is past every buffer under 4 GiB − 32 bytes, and adding the access size does not wrap
/// it to 32 bits. For 4- and 2-byte elements the offset is an inline constant, so the guard's
/// select needs no register for it (it was 0xfff0_0000: a `v_mov_b32` of the literal a trip).
pub const GUARD_INDEX: u32 = 0xffff_fffc;

/// `data` (a store of the loop body) renamed by `vmap`, storing only when `run` holds: its
/// index becomes `select(run, index, GUARD_INDEX)`, computed in `b`.
fn guarded_store(
    f: &mut Function,
    b: Block,
    data: &InstData,
    vmap: &SecondaryMap<Value, Option<Value>>,
    run: Value,
) -> InstData {
    let mut data = data.clone();
    data.map_args(|a| vmap[a].unwrap_or(a));
    let InstData::Store { index, .. } = &mut data else {
        unreachable!("only stores are guarded")
    };
    let ty = f.value_type(*index);
    let guard = push_value(
        f,
        b,
        InstData::Const {
            ty,
            bits: GUARD_INDEX as u64,
        },
    );
    *index = push_value(
        f,
        b,
        InstData::Select {
            args: [run, *index, guard],
        },
    );
    data
}

/// Appends `data` (one result) to `b`; gives its result.
fn push_value(f: &mut Function, b: Block, data: InstData) -> Value {
    let i = f.make_inst(data).expect("a valid instruction");
    f.blocks[b].insts.push(i);
    f.results[i][0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_function as parse;

    /// softmax's first loop: a grid-stride maximum over a row.
    const ROW_MAX: &str = "kernel k(x: buf<f32>, out: buf_mut<f32>, cols: u32) {
block0(v0: buf<f32>, v1: buf_mut<f32>, v2: u32):
    v3:u32 = workitem_id.x
    v4:u32 = const.u32 64
    v5:f32 = const.f32 -inf
    jump block1(v3, v5)
block1(v6: u32, v7: f32):
    v8:bool = lt v6, v2
    brif v8, block2, block3
block2:
    v9:f32 = load v0[v6]
    v10:f32 = max v7, v9
    v11:u32 = add v6, v4
    jump block1(v11, v10)
block3:
    store v1[v3], v7
    return
}";

    fn count(g: &Function, b: Block, pred: impl Fn(&InstData) -> bool) -> usize {
        g.blocks[b]
            .insts
            .iter()
            .filter(|&&i| pred(&g.insts[i]))
            .count()
    }

    #[test]
    fn a_grid_stride_reduction_runs_its_iterations_predicated_in_one_loop() {
        let f = parse(ROW_MAX).unwrap();
        let (g, chains) = unroll_runtime_loops(&f).expect("the loop is unrolled");
        crate::verify(&g).unwrap();
        assert_eq!(chains.len(), 1);
        assert_eq!(chains[0].len(), FACTOR);
        assert_eq!(chains[0][0], f.layout[2], "the body is iteration 0");
        for &b in &chains[0] {
            assert_eq!(count(&g, b, |d| matches!(d, InstData::Load { .. })), 1);
        }
        // No guard and no remainder loop: only the later iterations' blocks are new, each with
        // its own compare and a select for each of the two loop values.
        assert_eq!(g.layout.len(), f.layout.len() + FACTOR - 1);
        for &b in &chains[0][1..] {
            assert_eq!(count(&g, b, |d| matches!(d, InstData::Cmp { .. })), 1);
            assert_eq!(count(&g, b, |d| matches!(d, InstData::Select { .. })), 2);
        }
        let last = *chains[0].last().unwrap();
        assert_eq!(g.successors(last).as_slice(), &[g.layout[1]]);
    }

    #[test]
    fn the_unrolled_loop_computes_what_the_loop_did() {
        let f = parse(ROW_MAX).unwrap();
        let (g, _) = unroll_runtime_loops(&f).unwrap();
        // Trip counts 0..=9 per lane cover "no unrolled trip", "only unrolled trips" and both.
        for cols in [0u32, 1, 3, 64, 64 * 4, 64 * 5 + 7, 64 * 9] {
            let x: Vec<f32> = (0..cols.max(1)).map(|i| ((i * 37) % 101) as f32).collect();
            let run = |func: &Function| {
                use crate::interp::{Arg, BufferData, LaunchDims};
                let launch = LaunchDims {
                    grid: [1, 1, 1],
                    block: [64, 1, 1],
                    dynamic_lds: 0,
                };
                let mut args = vec![
                    Arg::Buffer(BufferData::F32(x.clone())),
                    Arg::Buffer(BufferData::F32(vec![0.0; 64])),
                    Arg::U32(cols),
                ];
                crate::interp::run(func, &launch, &mut args).expect("runs");
                args
            };
            assert_eq!(run(&f), run(&g), "cols = {cols}");
        }
    }

    #[test]
    fn loops_with_stores_or_pointer_chases_are_not_unrolled() {
        let store = "kernel k(a: buf<f32>, c: buf_mut<f32>) {
block0(v0: buf<f32>, v1: buf_mut<f32>):
    v2:u32 = buffer_len v1
    v3:u32 = workitem_id.x
    v4:u32 = num_workgroups.x
    jump block1(v3)
block1(v5: u32):
    v6:bool = lt v5, v2
    brif v6, block2, block3
block2:
    v7:f32 = load v0[v5]
    store v1[v5], v7
    v8:u32 = add v5, v4
    jump block1(v8)
block3:
    return
}";
        assert!(unroll_runtime_loops(&parse(store).unwrap()).is_none());
        let chase = "kernel k(a: buf<u32>, c: buf_mut<u32>) {
block0(v0: buf<u32>, v1: buf_mut<u32>):
    v2:u32 = buffer_len v1
    v3:u32 = workitem_id.x
    jump block1(v3, v3)
block1(v4: u32, v5: u32):
    v6:bool = lt v5, v2
    brif v6, block2, block3
block2:
    v7:u32 = load v0[v4]
    v8:u32 = const.u32 1
    v9:u32 = add v5, v8
    jump block1(v7, v9)
block3:
    store v1[v3], v4
    return
}";
        assert!(unroll_runtime_loops(&parse(chase).unwrap()).is_none());
    }

    /// A grid-stride `c[i] = a[i] + b[i]` for `i < n` (`n` may be less than `c`'s length).
    fn grid_stride_add(flags: &str) -> Function {
        grid_stride_add_into(flags, "buf", "v2")
    }

    /// [`grid_stride_add`] with `b`'s kind (`buf` or `buf_mut`) and the stored buffer (`v2` is
    /// `c`, `v1` is `b`, which the loop also loads).
    fn grid_stride_add_into(flags: &str, b_kind: &str, stored: &str) -> Function {
        parse(&format!(
            "kernel k(a: buf<f32>, b: {b_kind}<f32>, c: buf_mut<f32>, n: u32){flags} {{
block0(v0: buf<f32>, v1: {b_kind}<f32>, v2: buf_mut<f32>, v3: u32):
    v4:u32 = workitem_id.x
    v5:u32 = const.u32 64
    jump block1(v4)
block1(v6: u32):
    v7:bool = lt v6, v3
    brif v7, block2, block3
block2:
    v8:f32 = load v0[v6]
    v9:f32 = load v1[v6]
    v10:f32 = add v8, v9
    store {stored}[v6], v10
    v11:u32 = add v6, v5
    jump block1(v11)
block3:
    return
}}"
        ))
        .unwrap()
    }

    #[test]
    fn a_noalias_store_loop_loads_every_iteration_before_its_stores() {
        assert!(
            unroll_runtime_loops(&grid_stride_add("")).is_none(),
            "without `noalias` a store may alias the loads"
        );
        let f = grid_stride_add(" noalias");
        assert!(f.flags.noalias);
        let text = f.to_string();
        assert!(
            text.starts_with(
                "kernel k(a: buf<f32>, b: buf<f32>, c: buf_mut<f32>, n: u32) noalias {"
            ),
            "{text}"
        );
        assert_eq!(parse(&text).unwrap().to_string(), text);
        let (g, chains) = unroll_runtime_loops(&f).expect("the loop is unrolled");
        crate::verify(&g).unwrap();
        let insts: Vec<&InstData> = chains[0]
            .iter()
            .flat_map(|&b| g.blocks[b].insts.iter().map(|&i| &g.insts[i]))
            .collect();
        let loads: Vec<usize> = (0..insts.len())
            .filter(|&k| matches!(insts[k], InstData::Load { .. }))
            .collect();
        let stores: Vec<usize> = (0..insts.len())
            .filter(|&k| matches!(insts[k], InstData::Store { .. }))
            .collect();
        assert_eq!((loads.len(), stores.len()), (2 * FACTOR, FACTOR));
        assert!(
            loads.last() < stores.first(),
            "every load before the first store"
        );
    }

    #[test]
    fn a_later_iteration_that_does_not_run_stores_nothing() {
        let f = grid_stride_add(" noalias");
        let (g, _) = unroll_runtime_loops(&f).unwrap();
        // `c` is longer than `n`: an unguarded later iteration would store inside it, past `n`.
        let len = 64 * 9 + 5;
        let a: Vec<f32> = (0..len).map(|i| (i % 17) as f32).collect();
        let b: Vec<f32> = (0..len).map(|i| (i % 5) as f32 * 0.5).collect();
        for n in [0u32, 1, 63, 64, 65, 100, 128, 64 * 5 + 7, len as u32] {
            let run = |func: &Function| {
                use crate::interp::{Arg, BufferData, LaunchDims};
                let launch = LaunchDims {
                    grid: [1, 1, 1],
                    block: [64, 1, 1],
                    dynamic_lds: 0,
                };
                let mut args = vec![
                    Arg::Buffer(BufferData::F32(a.clone())),
                    Arg::Buffer(BufferData::F32(b.clone())),
                    Arg::Buffer(BufferData::F32(vec![-7.0; len])),
                    Arg::U32(n),
                ];
                crate::interp::run(func, &launch, &mut args).expect("runs");
                args
            };
            assert_eq!(run(&f), run(&g), "n = {n}");
        }
    }

    #[test]
    fn a_noalias_loop_that_loads_the_buffer_it_stores_is_not_unrolled() {
        let f = grid_stride_add_into(" noalias", "buf_mut", "v1");
        assert!(unroll_runtime_loops(&f).is_none());
    }

    /// One lane's loop `p op n` stepping `p` by `step` (add or sub), with a sum of loads and of
    /// the control values it saw (a wrong iteration count or order changes it), and the final
    /// `p`, in the type `ty`.
    fn stepped_loop(ty: &str, op: &str, step_op: &str, step: u32) -> Function {
        parse(&format!(
            "kernel k(x: buf<{ty}>, out: buf_mut<{ty}>, start: {ty}, n: {ty}) {{
block0(v0: buf<{ty}>, v1: buf_mut<{ty}>, v2: {ty}, v3: {ty}):
    v4:{ty} = const.{ty} 0
    v5:{ty} = const.{ty} {step}
    v6:{ty} = const.{ty} 63
    jump block1(v2, v4)
block1(v7: {ty}, v8: {ty}):
    v9:bool = {op} v7, v3
    brif v9, block2, block3
block2:
    v10:{ty} = and v7, v6
    v11:{ty} = load v0[v10]
    v12:{ty} = xor v11, v7
    v13:{ty} = add v8, v12
    v14:{ty} = {step_op} v7, v5
    jump block1(v14, v13)
block3:
    v15:u32 = const.u32 0
    v16:u32 = const.u32 1
    store v1[v15], v8
    store v1[v16], v7
    return
}}",
            step = if ty == "i32" {
                (step as i32).to_string()
            } else {
                step.to_string()
            },
        ))
        .unwrap()
    }

    /// The original loop's trip count (`None` past `limit`) and whether a control value
    /// wrapped on the way, by the IR's 32-bit semantics.
    fn trips(
        signed: bool,
        op: &str,
        down: bool,
        step: u32,
        start: u32,
        n: u32,
    ) -> (Option<u32>, bool) {
        let holds = |p: u32| {
            let (a, b) = if signed {
                ((p as i32) as i64, (n as i32) as i64)
            } else {
                (p as i64, n as i64)
            };
            match op {
                "lt" => a < b,
                "le" => a <= b,
                "gt" => a > b,
                "ge" => a >= b,
                _ => a != b,
            }
        };
        let (mut p, mut wrapped) = (start, false);
        for t in 0..12 {
            if !holds(p) {
                return (Some(t), wrapped);
            }
            let next = if down {
                p.wrapping_sub(step)
            } else {
                p.wrapping_add(step)
            };
            let math = if signed { p as i32 as i64 } else { p as i64 };
            let d = if signed {
                step as i32 as i64
            } else {
                step as i64
            };
            let exact = if down { math - d } else { math + d };
            let back = if signed {
                next as i32 as i64
            } else {
                next as i64
            };
            wrapped |= exact != back;
            p = next;
        }
        (None, wrapped)
    }

    /// Bounds next to 0, 2^31 and 2^32, steps that do and do not divide the distance, steps
    /// whose multiples pass 2^32 (so that a later iteration's control value wraps back below the
    /// bound while an earlier one already failed), every compare, both signednesses and
    /// directions, at 2, 3 and 4 iterations per trip: the unrolled loop's result equals the
    /// loop's wherever the loop ends within 12 iterations.
    #[test]
    fn bounds_near_the_wrap_and_steps_that_do_not_divide_give_the_loops_result() {
        use crate::interp::{Arg, BufferData, LaunchDims};
        let launch = LaunchDims {
            grid: [1, 1, 1],
            block: [1, 1, 1],
            dynamic_lds: 0,
        };
        let bounds = [
            0u32,
            1,
            100,
            0x7fff_fff0,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_fff0,
            0xffff_ffff,
        ];
        let steps = [1u32, 64, 100, 0x3000_0000, 0x5555_5556, 0x8000_0001];
        let (mut checked, mut wrapping) = (0, 0);
        for signed in [false, true] {
            let ty = if signed { "i32" } else { "u32" };
            for op in ["lt", "le", "gt", "ge", "ne"] {
                for (step_op, down) in [("add", false), ("sub", true)] {
                    for &step in &steps {
                        let f = stepped_loop(ty, op, step_op, step);
                        let unrolled: Vec<Function> = [2, 3, 4]
                            .iter()
                            .map(|&k| unroll_by(&f, k).expect("the loop is unrolled").0)
                            .collect();
                        for &n in &bounds {
                            for back in [0u32, 1, 2, 3, 5] {
                                for rest in [0u32, 1, step / 2] {
                                    let dist = back.wrapping_mul(step).wrapping_add(rest);
                                    let start = if down {
                                        n.wrapping_add(dist)
                                    } else {
                                        n.wrapping_sub(dist)
                                    };
                                    let (t, wrapped) = trips(signed, op, down, step, start, n);
                                    if t.is_none() {
                                        continue;
                                    }
                                    checked += 1;
                                    wrapping += wrapped as u32;
                                    let x: Vec<u32> =
                                        (0..64).map(|i| i * 2_654_435_761u32 >> 7).collect();
                                    let run = |func: &Function| {
                                        let (buf, s, m) = if signed {
                                            (
                                                BufferData::I32(
                                                    x.iter().map(|&v| v as i32).collect(),
                                                ),
                                                Arg::I32(start as i32),
                                                Arg::I32(n as i32),
                                            )
                                        } else {
                                            (
                                                BufferData::U32(x.clone()),
                                                Arg::U32(start),
                                                Arg::U32(n),
                                            )
                                        };
                                        let out = if signed {
                                            BufferData::I32(vec![0; 2])
                                        } else {
                                            BufferData::U32(vec![0; 2])
                                        };
                                        let mut args =
                                            vec![Arg::Buffer(buf), Arg::Buffer(out), s, m];
                                        crate::interp::run(func, &launch, &mut args).expect("runs");
                                        args
                                    };
                                    let want = run(&f);
                                    for (k, g) in unrolled.iter().enumerate() {
                                        assert_eq!(
                                            run(g),
                                            want,
                                            "{ty} {op} {step_op} {step:#x}, start {start:#x}, n {n:#x}, factor {}",
                                            k + 2
                                        );
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(
            checked > 500 && wrapping > 20,
            "{checked} cases, {wrapping} wrapping"
        );
    }
}

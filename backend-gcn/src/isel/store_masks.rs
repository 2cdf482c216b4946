//! Masked stores under one narrowed EXEC.
//!
//! A global store at `select(c, x, k)` with `(k + offset) mod 2^32 = u32::MAX` stores at `x`
//! where `c` holds and nowhere else: element `u32::MAX` is out of range for every buffer (a
//! length is a `u32`), so the IR drops it. Lowered alone it is one `v_cndmask_b32` of the byte
//! offsets (the dropped lanes' offset is out of the descriptor's range). Where a block has
//! several such stores of one `c`, they go into one *region* instead: `s_and_saveexec_b64 s, c`
//! before it, `s_mov_b64 exec, s` after its last store, and the stores at `x` itself (clang's
//! shape for the twin's `if (o < len) out[o] = v`). The region costs two SALU instructions and
//! saves one `v_cndmask_b32` per distinct masked index, so it is made for three or more.
//!
//! Everything selected between the two EXEC writes runs only in `c`'s lanes, which is right for
//! an instruction when it works lane by lane (arithmetic, compares, selects, conversions,
//! loads: no cross-lane operation, no store or atomic, no barrier, no direct-to-LDS load) and
//! every value it defines is read only in the region (lanes outside `c` are never read, and a
//! wave with no lane in `c` reads nothing the region made after it). The region is the run from
//! the first to the last store, then extended backward over such instructions, so that LDS reads
//! feeding it stay in one stretch with no EXEC write (`ds_pairs` pairs them). The computation of
//! `c` itself, when it lies in the extended range, is lowered first, before the save, under the
//! full EXEC: pure arithmetic that depends only on values defined before the range, so moving it
//! up keeps every operand defined first. The allocator's moves after an EXEC write in a block
//! are whole-wave (`regalloc/prep.rs` `partial_before`), and isel's per-block caches (byte
//! offsets, lane masks, divisions, lane copies) are put back at the region's end to what they
//! were before it, so nothing made under the narrowed EXEC is reused after it.

use rustc_hash::{FxHashMap as HashMap, FxHashSet};

use kjit_ir::opt::is_pure;
use kjit_ir::{Block, Function, Inst, InstData, Mem, Type, Uniformity, Value, ValueDef};

use crate::mir::{implicit, MInst, MOperand, RegClass, VReg};

use super::{op, Isel};

/// Distinct masked indices a region needs to save instructions: its two EXEC writes against one
/// `v_cndmask_b32` per index.
const MIN_INDICES: usize = 3;

/// The masked-store regions of a function, by IR instruction.
#[derive(Default)]
pub(crate) struct StoreRegions {
    /// The first instruction of each region → the bool whose lanes run it and the instructions
    /// (computing that bool) lowered before the region starts.
    starts: HashMap<Inst, (Value, Vec<Inst>)>,
    /// Instructions lowered early (members of some `starts` entry's list): skipped in place.
    early: FxHashSet<Inst>,
    /// The last instruction (a store) of each region.
    ends: FxHashSet<Inst>,
    /// Each store of a region → the index it stores at (the `select`'s `x`).
    stores: HashMap<Inst, Value>,
}

/// What a region being lowered restores at its end.
pub(crate) struct OpenRegion {
    saved: VReg,
    addr_cache: HashMap<(Value, u32), VReg>,
    mask_cache: HashMap<Value, VReg>,
    lane_copies: HashMap<VReg, VReg>,
    divrem_cache: HashMap<(Value, Value, bool), (VReg, VReg)>,
}

/// `(c, x)` when `i` is a global store at `select(c, x, k)` with a divergent `c` and `k` dropped
/// (`(k + offset) mod 2^32 = u32::MAX`).
fn masked_store(func: &Function, uni: &Uniformity, i: Inst) -> Option<(Value, Value, Value)> {
    let InstData::Store {
        mem: Mem::Global(_),
        index,
        offset,
        ..
    } = func.insts[i]
    else {
        return None;
    };
    let ValueDef::Result(d, _) = func.values[index].def else {
        return None;
    };
    let InstData::Select { args: [c, x, k] } = func.insts[d] else {
        return None;
    };
    let ValueDef::Result(kd, _) = func.values[k].def else {
        return None;
    };
    let InstData::Const {
        ty: Type::U32 | Type::I32,
        bits,
    } = func.insts[kd]
    else {
        return None;
    };
    let dropped = (bits as u32).wrapping_add(offset) == u32::MAX;
    (dropped && uni.is_divergent(c)).then_some((c, x, index))
}

/// Whether `i` computes lane by lane with no effect but its results (see the module comment).
fn lane_local(func: &Function, i: Inst, dma_loads: &HashMap<Inst, Inst>) -> bool {
    let frag = func.results[i]
        .iter()
        .any(|&r| matches!(func.value_type(r), Type::Frag(_)));
    !frag
        && (pure(func, i)
            || matches!(func.insts[i], InstData::Load { .. }) && !dma_loads.contains_key(&i))
}

/// Whether `i` is arithmetic with no memory access (the optimizer's [`is_pure`], and the
/// uniform reads of a special register or a buffer's length): it may be lowered earlier in
/// its block.
fn pure(func: &Function, i: Inst) -> bool {
    let d = &func.insts[i];
    is_pure(d) || matches!(d, InstData::Special { .. } | InstData::BufferLen { .. })
}

/// The regions of every block of `func`.
pub(crate) fn plan(
    func: &Function,
    uni: &Uniformity,
    dma_loads: &HashMap<Inst, Inst>,
) -> StoreRegions {
    let mut out = StoreRegions::default();
    for &b in &func.layout {
        let cands: Vec<(usize, Value, Value, Value)> = func.blocks[b]
            .insts
            .iter()
            .enumerate()
            .filter_map(|(p, &i)| masked_store(func, uni, i).map(|(c, x, ix)| (p, c, x, ix)))
            .collect();
        if cands.len() >= MIN_INDICES {
            plan_block(func, b, &cands, dma_loads, &mut out);
        }
    }
    out
}

/// Per value defined in `b`: the last position in `b` that reads it (`usize::MAX` when a later
/// block, or an earlier one around a loop, reads it).
fn last_uses(func: &Function, b: Block) -> HashMap<Value, usize> {
    let mut last: HashMap<Value, usize> = HashMap::default();
    for &i in &func.blocks[b].insts {
        for &r in &func.results[i] {
            last.insert(r, 0);
        }
    }
    for &ob in &func.layout {
        for (p, &i) in func.blocks[ob].insts.iter().enumerate() {
            let at = if ob == b { p } else { usize::MAX };
            func.insts[i].for_each_arg(|a| {
                if let Some(l) = last.get_mut(&a) {
                    *l = (*l).max(at);
                }
            });
        }
    }
    last
}

fn plan_block(
    func: &Function,
    b: Block,
    cands: &[(usize, Value, Value, Value)],
    dma_loads: &HashMap<Inst, Inst>,
    out: &mut StoreRegions,
) {
    let insts = &func.blocks[b].insts;
    let last_use = last_uses(func, b);
    let escapes = |p: usize, end: usize| {
        func.results[insts[p]]
            .iter()
            .any(|r| last_use.get(r).is_some_and(|&l| l > end))
    };
    let cand_at: HashMap<usize, usize> = cands.iter().enumerate().map(|(k, c)| (c.0, k)).collect();
    // Where the previous region ended: the next one starts after it.
    let mut floor = 0usize;
    let mut k = 0;
    while k < cands.len() {
        let (first, c, _, _) = cands[k];
        // The run of `c`'s stores with only lane-local instructions between them.
        let mut last = first;
        for p in first + 1..insts.len() {
            match cand_at.get(&p) {
                Some(&j) if cands[j].1 == c => last = p,
                Some(_) => break,
                None if lane_local(func, insts[p], dma_loads) => {}
                None => break,
            }
        }
        // Ends before the first instruction whose value is read after the region.
        while let Some(p) = (first + 1..last).find(|&p| escapes(p, last)) {
            last = (first..p)
                .rev()
                .find(|q| cand_at.contains_key(q))
                .unwrap_or(first);
        }
        let members: Vec<usize> = (first..=last)
            .filter_map(|p| cand_at.get(&p).copied())
            .collect();
        let indices: FxHashSet<Value> = members.iter().map(|&j| cands[j].3).collect();
        if indices.len() < MIN_INDICES {
            k += 1;
            continue;
        }
        // Backward: lane-local instructions read only in the region join it; `c`'s computation
        // (pure arithmetic) is lowered before it.
        let mut slice: FxHashSet<Value> = FxHashSet::default();
        slice.insert(c);
        let mut early = Vec::new();
        let mut start = first;
        while start > floor {
            let p = start - 1;
            let i = insts[p];
            if func.results[i].iter().any(|r| slice.contains(r)) {
                if !pure(func, i) {
                    break;
                }
                func.insts[i].for_each_arg(|a| {
                    slice.insert(a);
                });
                early.push(i);
            } else if !lane_local(func, i, dma_loads) || escapes(p, last) {
                break;
            }
            start = p;
        }
        early.reverse();
        // A start that is itself lowered early: the region begins at the next one that is not.
        let begin = (start..=first)
            .find(|&p| !early.contains(&insts[p]))
            .expect("the first store is not early");
        out.early.extend(early.iter().copied());
        out.starts.insert(insts[begin], (c, early));
        out.ends.insert(insts[last]);
        for &j in &members {
            out.stores.insert(insts[cands[j].0], cands[j].2);
        }
        floor = last + 1;
        k = members.last().map_or(k + 1, |&j| j + 1);
    }
}

impl Isel<'_> {
    /// Whether `i` was lowered already, before a region it precedes in the IR.
    pub(crate) fn lowered_early(&self, i: Inst) -> bool {
        self.store_regions.early.contains(&i)
    }

    /// Before lowering `i`: the computation of a region's mask and its EXEC save when `i`
    /// starts one.
    pub(crate) fn enter_store_region(&mut self, i: Inst) -> Result<(), super::IselError> {
        let Some((c, early)) = self.store_regions.starts.get(&i).cloned() else {
            return Ok(());
        };
        for e in early {
            self.lower(e)?;
        }
        let m = self.lane_mask(c);
        let saved = self.new_vreg(RegClass::Sgpr, 2);
        let mut s = MInst::isa(
            op("s_and_saveexec_b64"),
            &[MOperand::Def(saved), MOperand::Use(m)],
        );
        s.implicit_defs = implicit::EXEC | implicit::SCC;
        s.implicit_uses = implicit::EXEC;
        self.push(s);
        self.store_region = Some(OpenRegion {
            saved,
            addr_cache: self.addr_cache.clone(),
            mask_cache: self.mask_cache.clone(),
            lane_copies: self.lane_copies.clone(),
            divrem_cache: self.divrem_cache.clone(),
        });
        Ok(())
    }

    /// After lowering `i`: the EXEC restore when `i` ends a region.
    pub(crate) fn leave_store_region(&mut self, i: Inst) {
        if !self.store_regions.ends.contains(&i) {
            return;
        }
        let Some(r) = self.store_region.take() else {
            return;
        };
        let mut s = MInst::isa(
            op("s_mov_b64"),
            &[
                MOperand::Phys(crate::isa::Operand::Special(crate::isa::SpecialReg::Exec)),
                MOperand::Use(r.saved),
            ],
        );
        s.implicit_defs = implicit::EXEC;
        self.push(s);
        self.addr_cache = r.addr_cache;
        self.mask_cache = r.mask_cache;
        self.lane_copies = r.lane_copies;
        self.divrem_cache = r.divrem_cache;
    }

    /// The index a store of an open region stores at (its lanes are EXEC's).
    pub(crate) fn region_store_index(&self, i: Inst) -> Option<Value> {
        self.store_region.as_ref()?;
        self.store_regions.stores.get(&i).copied()
    }
}

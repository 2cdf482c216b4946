//! Where regalloc2's VGPR registers and the VGPR tuple area go. Takes regalloc2's output (its
//! used `Float` singles and `Vector` pairs) and the tuple webs; gives the PReg → VGPR tables,
//! the base of the tuple area and the end of the layout.
//!
//! regalloc2 spreads values over every register it is given, so a kernel whose search had to
//! grow the `Float` class past the pressure (a spill at a smaller count) uses every register
//! of the class even where few values are live at once. The dense layout gives each used
//! PReg its own VGPR (singles, then pairs, then the tuple area). The packed layout places
//! them by first fit over their live intervals (`locs::intervals`), as the `Int` PRegs are
//! placed on SGPRs: the tuple area first (one block at a multiple of 4, around the work-item
//! id registers), then pairs (even), then singles, each in order of first position, on the
//! lowest VGPRs where nothing placed before is live at the same time. Equal positions count as
//! overlapping, so an instruction's last read and another PReg's write there never share a
//! VGPR (regalloc2's moves at one point and early defs stay correct).
//!
//! A single copied into or out of a pair or a tuple dword (`Build`/`Extract`), or moved to or
//! from another single by regalloc2, prefers that register where it is free: the copy is then a
//! self-move the peepholes drop. First fit in order of first position can take such a register
//! for an earlier single and leave the copy, so the packing is also made with the singles whose
//! hinted register is free placed first (tuple copies before regalloc2's moves). Of the two,
//! the one with the most waves per SIMD, then the fewest copies left, then the fewest VGPRs is
//! kept, and only when it ends below the dense layout.
//!
//! A PReg holds many values over the kernel, and its live intervals are their union: a PReg
//! live across a loop has few holes, so placing whole PRegs leaves registers idle (hash_rounds:
//! 83 locations live at most, 92 VGPRs). So a `Float` or `Vector` PReg's values are placed apart
//! where they can be: each *segment* — from a write to the last read before the next write, inside one
//! block and not live out of it — is an item of its own for the first fit and the hints, and
//! what crosses block boundaries is one item per web (the segments a PReg is live out of a
//! block in and into its successors in, joined over the CFG edges). A segment has no CFG edge,
//! so its VGPR may differ from the rest's without a move; writes at the position of the PReg's
//! previous event (tied and reused operands, an instruction's read and write) continue the
//! segment. The work-item id PRegs keep their numbers in the entry block, where the
//! dispatcher's values arrive in `v0`..`v2` (and over the CFG edges that value's web crosses);
//! regalloc2's other values in them are segments like any other's. A pair's two dwords are live
//! apart (a one-dword `Extract` frees its half), and a pair may be placed with the singles
//! copied into or out of its dwords (sub-register coalescing, [`group_singles`]), and a pair
//! copied whole into or out of a tuple web may go on the tuple's registers
//! ([`Packing::place_pairs_in_area`]); results of an
//! untied instruction are late defs ([`late_defs`]), so they may take a source dying there.
//! Operands and regalloc2's moves then name VGPRs per occurrence (`alloc_vgpr`, `edit_vgpr`).
//!
//! Spill slots in spare VGPRs are registers too; [`SlotLayout`] packs the single-VGPR
//! slots' values (split the same way) among the PRegs' instead of one VGPR per slot color above
//! the layout, so a slot takes the holes a PReg leaves (hash_rounds 92 → 83 VGPRs).

use regalloc2 as ra;

use cranelift_entity::EntityRef;

use super::prep::Prepared;
use super::ra2::RaFunc;
use super::webs::{Intervals, Webs};
use super::{bits, locs, NO_REG};
use crate::mir::{MOpcode, MOperand, RegClass};
use locs::EDIT_ORIGIN;

/// VGPRs a layout may use (the architectural VGPRs of one lane).
const MAX_VGPRS: usize = 256;

/// Where regalloc2's used `Float` and `Vector` PRegs and the VGPR tuple area go.
pub struct VgprLayout {
    /// First VGPR of each `Float` or `Vector` allocation (by index in `Output::allocs`;
    /// `NO_REG` for others).
    pub alloc_vgpr: Vec<u16>,
    /// First VGPR of each edit's source and destination that is a `Float` or `Vector` PReg
    /// (`NO_REG` else).
    pub edit_vgpr: Vec<[u16; 2]>,
    pub vweb_base: u16,
    /// One past the last VGPR of the layout (spare-VGPR slots go above).
    pub top: u16,
    /// A VGPR of each spill slot placed among the items ([`SlotLayout`]; `NO_REG` for
    /// the others): its values may have others (`alloc_vgpr`, `edit_vgpr` name them).
    pub slot_vgpr: Vec<u16>,
}

/// The best of the dense and the packed layouts (module doc) of `out`'s VGPR PRegs (`used`:
/// masks per class) for allocator `a`; `waves` gives the occupancy of a layout ending at a VGPR.
pub fn layout(
    a: &super::Allocator,
    out: &ra::Output,
    used: &[u64; 3],
    waves: &dyn Fn(u32) -> u32,
) -> VgprLayout {
    if let Some(l) = dense_at_floor(a, out, used) {
        return l;
    }
    let packing = Packing::new(a, out, used, &[]);
    let dense = packing.dense();
    let chosen = match packing.best(waves) {
        Some(l) if l.top < dense.top => l,
        _ => dense,
    };
    packing.finish(&chosen)
}

/// The packed layout with the single-VGPR spill slots `slots` marks placed among the items,
/// made when first asked for. Slots in spare VGPRs are registers read in place; placed above
/// the layout, each color of slots takes a VGPR for the whole kernel, while here a slot's
/// values take holes that the PRegs leave (hash_rounds: 64 PRegs + 28 slot colors = 92 VGPRs,
/// 83 with the slots among them), and a spill or reload whose two sides share a VGPR
/// disappears. Its items are split at once; they give the fewest VGPRs any placement of them
/// ends at ([`Packing::floor`]), so a budget below that needs no placement (a budgeted
/// allocation that keeps values in memory, hash_lanes at occupancy 6–8: 88 values live, 64–80
/// VGPRs).
pub struct SlotLayout {
    used: [u64; 3],
    slots: Vec<bool>,
    /// The items and their floor, split when first asked for a cap the pressure allows.
    packing: std::sync::OnceLock<(Packing, u16)>,
    made: std::sync::OnceLock<Option<VgprLayout>>,
}

impl SlotLayout {
    /// The layout of `out`'s VGPR PRegs (`used`) with the slots `slots` marks among them;
    /// nothing is split or placed yet.
    pub fn new(used: &[u64; 3], slots: Vec<bool>) -> Self {
        SlotLayout {
            used: *used,
            slots,
            packing: std::sync::OnceLock::new(),
            made: std::sync::OnceLock::new(),
        }
    }

    /// The best packing (`None`: past the file, or not below `above`), when it ends at or
    /// below VGPR `cap`. `a` and `out` are the allocator and the regalloc2 output this layout
    /// was made for.
    pub fn within(
        &self,
        a: &super::Allocator,
        out: &ra::Output,
        cap: u32,
        above: u16,
        waves: &dyn Fn(u32) -> u32,
    ) -> Option<&VgprLayout> {
        // Every single-VGPR value live between two instructions is in a PReg or a marked
        // slot there, each an item of its own: no placement ends below the most of them
        // live at once, so a cap below that needs no items (the budgeted one-class runs of
        // hash_lanes at occupancy 6-8).
        if a.pres_f > cap {
            return None;
        }
        let (packing, floor) = self.packing.get_or_init(|| {
            let p = Packing::new(a, out, &self.used, &self.slots);
            let floor = p.floor();
            (p, floor)
        });
        if u32::from(*floor) > cap {
            return None;
        }
        let made = self.made.get_or_init(|| {
            packing
                .best(waves)
                .filter(|l| l.top < above)
                .map(|l| packing.finish(&l))
        });
        made.as_ref().filter(|l| u32::from(l.top) <= cap)
    }
}

/// [`Packing::floor`] of `out`'s VGPR PRegs (`used`), spill slots left out: no layout of `out`
/// ([`layout`]) ends below it. A packing does not ([`floor_holds`]), and the dense layout is a
/// placement of the same items (each PReg's on its own register).
pub fn floor(a: &super::Allocator, out: &ra::Output, used: &[u64; 3]) -> u16 {
    Packing::new(a, out, used, &[]).floor()
}

/// Whether every packing of `out`'s VGPR PRegs (`used`), with the slots `slots` marks among
/// them, ends at or above [`Packing::floor`]: what lets [`Packing::best`] stop at a packing
/// that reaches it (the regalloc tests check it over random programs).
pub fn floor_holds(
    a: &super::Allocator,
    out: &ra::Output,
    used: &[u64; 3],
    slots: &[bool],
) -> bool {
    let p = Packing::new(a, out, used, slots);
    let floor = p.floor();
    // With every value in a register, or the slots' values among the items, each single
    // VGPR value live at once is an item: the floor is at least the pressure
    // ([`dense_at_floor`] and [`SlotLayout::within`] rely on it).
    let all_items = slots.contains(&true) || out.num_spillslots == 0;
    if all_items && u32::from(floor) < a.pres_f {
        return false;
    }
    let tries = [(true, false), (true, true), (false, false), (false, true)];
    tries.into_iter().all(|(grouped, hinted_first)| {
        [false, true].into_iter().all(|in_area| {
            p.place(grouped, hinted_first, in_area)
                .is_none_or(|(l, _)| l.top >= floor)
        })
    })
}

/// Item numbers of the layouts: work-item id PReg `h`'s values in the entry block (with the
/// webs joined to them) are item `h`; as locations, `Float` PReg `h` is `h`, `Vector` PReg `h`
/// is `64 + h` (the dense layout's registers), spill slot `s` (when slots are packed) is
/// `SEGS + s`; segment `k` is item `Segments::base + k`.
const SEGS: usize = 128;

/// No item (an allocation that is not a VGPR PReg).
const NO_ITEM: u32 = u32::MAX;

/// The VGPR PRegs' values (and the packed slots') split into items (module doc).
struct Segments {
    /// Per allocation (`Output::allocs`): its item, `NO_ITEM` if not a VGPR PReg or a packed
    /// slot.
    alloc_item: Vec<u32>,
    /// Per edit: the items of its source and destination.
    edit_item: Vec<[u32; 2]>,
    /// First segment item: `SEGS` plus the spill slots' locations.
    base: usize,
    /// Location (PReg, or `SEGS + slot`) of each segment.
    preg: Vec<u16>,
    /// Per event ([`Segments::ix`]): bit 0 when it is its item's first at its position, bit 1
    /// when its last. A copy's registers may meet at the copy only when it ends the source
    /// there and begins the destination (no other write at that position).
    edge: Vec<u8>,
    /// Whether the `Vector` PRegs (locations `64..SEGS`) are pairs; else they are singles
    /// ([`RaFunc::vector_dwords`]).
    vector_pairs: bool,
}

impl Segments {
    /// Index of an event origin in `edge`.
    fn ix(&self, origin: u32) -> usize {
        if origin & EDIT_ORIGIN != 0 {
            self.alloc_item.len() + (origin & !EDIT_ORIGIN) as usize
        } else {
            origin as usize
        }
    }
    /// Whether the event from `origin` is the last (`last`) or first of its item there.
    fn edge(&self, origin: u32, last: bool) -> bool {
        self.edge[self.ix(origin)] & (1 << u8::from(last)) != 0
    }
    /// Number of items (locations, then segments).
    fn items(&self) -> usize {
        self.base + self.preg.len()
    }
}

/// Union-find root of `x` (path halving).
fn root(parent: &mut [u32], mut x: u32) -> u32 {
    while parent[x as usize] != x {
        parent[x as usize] = parent[parent[x as usize] as usize];
        x = parent[x as usize];
    }
    x
}

/// The events of regalloc2's VGPR PRegs (`Float` `h` at `h`, `Vector` `h` at `64 + h`) and of
/// the spill slots `slots` marks (at `SEGS + s`), with their values renumbered as segment
/// items, and the items of every operand and edit. An instruction that `late` marks writes its
/// results after its reads ([`late_defs`]).
///
/// Inside a block, a write starts a new segment (unless the same instruction read the
/// location: tied and reused operands continue it). Across blocks, the segment a location is
/// live out of a block in and the one it is live into each successor in are one item (a web
/// over the CFG edges): no edge needs a move, and a PReg's values that never meet over an edge
/// (the state a loop reads and the one it writes for the next round) are placed apart. The
/// work-item id PRegs (below `abi_n`) are one segment in the entry block, where the
/// dispatcher's values are, and its webs keep the PReg's own item; their other values are
/// segments like any other's (matmul_pipelined's extracted `a` halves, kept on v0 otherwise).
fn segments(
    func: &RaFunc,
    out: &ra::Output,
    abi_n: u32,
    slots: &[bool],
    late: &[bool],
) -> (Vec<Vec<locs::Ev>>, Segments) {
    let n_loc = SEGS + slots.len();
    let mut evs = locs::events(
        func,
        out,
        |a| match a.as_reg() {
            Some(r) => match r.class() {
                ra::RegClass::Float => Some(r.hw_enc()),
                ra::RegClass::Vector => Some(64 + r.hw_enc()),
                ra::RegClass::Int => None,
            },
            None => a
                .as_stack()
                .filter(|s| slots.get(s.index()).copied().unwrap_or(false))
                .map(|s| SEGS + s.index()),
        },
        |i| late[i],
    );
    let live_in = locs::live_in(func, &evs, n_loc);
    let nb = evs.len();
    let entry = ra::Function::entry_block(func).index();
    // Segments (numbered from 0 here), with the location of each, and per block the segment
    // each location is live in at the start and at the end.
    let mut preg: Vec<u16> = Vec::new();
    // The entry block's work-item id segments: their webs are the PRegs' own items.
    let mut fixed: Vec<u32> = Vec::new();
    let mut ends: Vec<Vec<(usize, u32, u32)>> = vec![Vec::new(); nb];
    let mut cur: Vec<Option<u32>> = vec![None; n_loc];
    let mut last: Vec<(u32, bool)> = vec![(u32::MAX, false); n_loc];
    for (b, bevs) in evs.iter_mut().enumerate() {
        let live_out = locs::live_out(func, &live_in, b, n_loc);
        let is_fixed = |x: usize| b == entry && (x as u32) < abi_n;
        let mut touched: Vec<usize> = Vec::new();
        let mut new_seg = |x: usize, preg: &mut Vec<u16>| {
            preg.push(x as u16);
            let k = (preg.len() - 1) as u32;
            if is_fixed(x) {
                fixed.push(k);
            }
            k
        };
        let mut starts: Vec<(usize, u32)> = Vec::new();
        for x in live_in[b].iter() {
            let k = new_seg(x, &mut preg);
            cur[x] = Some(k);
            starts.push((x, k));
            touched.push(x);
        }
        for ev in bevs.iter_mut() {
            let x = ev.loc;
            let operand = ev.origin & EDIT_ORIGIN == 0;
            if cur[x].is_none() || (ev.write && last[x] != (ev.pos, true) && !is_fixed(x)) {
                cur[x] = Some(new_seg(x, &mut preg));
                touched.push(x);
            }
            last[x] = (ev.pos, operand);
            ev.loc = n_loc + cur[x].map_or(0, |k| k as usize);
        }
        for x in live_out.iter() {
            let k = match cur[x] {
                Some(k) => k,
                None => new_seg(x, &mut preg),
            };
            let s = starts.iter().find(|e| e.0 == x).map_or(u32::MAX, |e| e.1);
            ends[b].push((x, s, k));
        }
        for x in touched {
            cur[x] = None;
            last[x] = (u32::MAX, false);
        }
        // Starts of locations live in but not out are kept for the edges too.
        for (x, k) in starts {
            if !live_out.contains(x) {
                ends[b].push((x, k, u32::MAX));
            }
        }
    }
    // One item per web: a block's out-segment joins each successor's in-segment.
    let mut parent: Vec<u32> = (0..preg.len() as u32).collect();
    for (b, e) in ends.iter().enumerate() {
        for &(x, _, k_out) in e.iter().filter(|e| e.2 != u32::MAX) {
            for s in ra::Function::block_succs(func, ra::Block::new(b)) {
                let into = ends[s.index()].iter().find(|e| e.0 == x).map(|e| e.1);
                if let Some(k_in) = into.filter(|&k| k != u32::MAX) {
                    let (r1, r2) = (root(&mut parent, k_out), root(&mut parent, k_in));
                    parent[r1 as usize] = r2;
                }
            }
        }
    }
    // Item of each root: the PReg's own for a web with a fixed segment, else a new one.
    let base = n_loc;
    let mut number = vec![u32::MAX; preg.len()];
    for &k in &fixed {
        let r = root(&mut parent, k) as usize;
        number[r] = u32::from(preg[k as usize]);
    }
    let mut item_preg: Vec<u16> = Vec::new();
    for k in 0..preg.len() as u32 {
        let r = root(&mut parent, k) as usize;
        if number[r] == u32::MAX {
            number[r] = (base + item_preg.len()) as u32;
            item_preg.push(preg[r]);
        }
    }
    for ev in evs.iter_mut().flatten() {
        let r = root(&mut parent, (ev.loc - base) as u32) as usize;
        ev.loc = number[r] as usize;
    }
    let mut segs = Segments {
        alloc_item: vec![NO_ITEM; out.allocs.len()],
        edit_item: vec![[NO_ITEM; 2]; out.edits.len()],
        base,
        preg: item_preg,
        edge: vec![0; out.allocs.len() + 2 * out.edits.len()],
        vector_pairs: func.vector_dwords == 2,
    };
    // Per location, the position of its last event seen in this walk (`u32::MAX`: none),
    // and the locations to reset after it.
    let mut seen = vec![u32::MAX; segs.items()];
    let mut touched: Vec<usize> = Vec::new();
    for bevs in &evs {
        for (bit, order) in [(1u8, false), (2, true)] {
            for l in touched.drain(..) {
                seen[l] = u32::MAX;
            }
            let mut mark = |ev: &locs::Ev| {
                let last = std::mem::replace(&mut seen[ev.loc], ev.pos);
                if last == u32::MAX {
                    touched.push(ev.loc);
                }
                if last != ev.pos {
                    let i = segs.ix(ev.origin);
                    segs.edge[i] |= bit;
                }
            };
            if order {
                bevs.iter().rev().for_each(&mut mark);
            } else {
                bevs.iter().for_each(&mut mark);
            }
        }
    }
    for ev in evs.iter().flatten() {
        let item = ev.loc as u32;
        if ev.origin & EDIT_ORIGIN != 0 {
            let o = (ev.origin & !EDIT_ORIGIN) as usize;
            segs.edit_item[o / 2][o % 2] = item;
        } else {
            segs.alloc_item[ev.origin as usize] = item;
        }
    }
    (evs, segs)
}

/// A layout's VGPR per item (`Vector` PRegs at `64..SEGS`), tuple area and end.
struct Placement {
    item_vgpr: Vec<u16>,
    vweb_base: u16,
    top: u16,
}

/// A register a single would rather share: a dword of a pair or of the tuple area, or another
/// single's.
#[derive(Clone, Copy)]
enum Hint {
    Pair(usize, u16),
    Area(u16),
    Single(usize),
}

/// A single's copy to or from a register: where, the copy's position, and (when the copy may
/// make the two meet there, [`Segments::edge`]) whether the single is the copy's source.
type HintAt = (Hint, u32, Option<bool>);

/// Per item, the registers its copies go to or come from (module doc), with the position
/// of the copy; and per allocation (`Output::allocs`), the dwords of a pair it reads (bit
/// `j`: dword `j`), 0 for all (an `Extract` of one dword reads only that one).
fn hints(
    p: &Prepared,
    func: &RaFunc,
    out: &ra::Output,
    w: &Webs,
    segs: &Segments,
) -> (Vec<Vec<HintAt>>, Vec<u8>) {
    let mut hints: Vec<Vec<HintAt>> = vec![Vec::new(); segs.items()];
    let mut half_reads = vec![0u8; out.allocs.len()];
    for (b, bd) in p.mf.blocks.iter() {
        for (k, mi) in bd.insts.iter().enumerate() {
            let gi = p.first_inst[b.index()] as usize + k;
            let first = out.inst_alloc_offsets[gi] as usize;
            let allocs = out.inst_allocs(ra::Inst::new(gi));
            let map = func.map.get(gi);
            // Where operand `i` (vreg `v`) is: an item, or the tuple area's dword.
            let at = |i: usize, v: crate::mir::VReg| -> Option<Hint> {
                match map[i] {
                    Some(x) => {
                        let item = segs.alloc_item[first + x as usize] as usize;
                        match func.vgpr_dwords(allocs[x as usize].as_reg()?.class())? {
                            1 => Some(Hint::Single(item)),
                            _ => Some(Hint::Pair(item, 0)),
                        }
                    }
                    None => {
                        let web = &w.webs[*w.web_of.get(&v)?];
                        (web.class == RegClass::Vgpr).then_some(Hint::Area(web.reg?))
                    }
                }
            };
            let offset = |h: Hint, d: u16| match h {
                Hint::Pair(x, o) => Hint::Pair(x, o + d),
                Hint::Area(r) => Hint::Area(r + d),
                s => s,
            };
            // The copy's event of operand `i` ends its item there (`last`) or begins it; a
            // tuple-area dword has no events (its web is not written at the copy).
            let edge = |i: usize, last: bool| match map[i] {
                Some(x) => segs.edge((first + x as usize) as u32, last),
                None => true,
            };
            // Copy from operand `s` (`src`) to operand `d` (`dst`; for a Build, `s` is a part).
            let mut link = |d: usize, s: usize, src: Option<Hint>, dst: Option<Hint>| {
                let ok = edge(s, true) && edge(d, false);
                if let (Some(src), Some(dst)) = (src, dst) {
                    let pos = 2 * gi as u32;
                    if let Hint::Single(x) = src {
                        hints[x].push((dst, pos, ok.then_some(true)));
                    }
                    if let Hint::Single(x) = dst {
                        hints[x].push((src, pos, ok.then_some(false)));
                    }
                    // A whole pair built into or extracted from the tuple area.
                    match (src, dst) {
                        (Hint::Pair(x, 0), Hint::Area(_)) => {
                            hints[x].push((dst, pos, ok.then_some(true)));
                        }
                        (Hint::Area(_), Hint::Pair(x, 0)) => {
                            hints[x].push((src, pos, ok.then_some(false)));
                        }
                        _ => {}
                    }
                }
            };
            match (mi.opcode, mi.ops.as_slice()) {
                (MOpcode::Build, [MOperand::Def(d), parts @ ..]) => {
                    let Some(tuple) = at(0, *d) else { continue };
                    let mut dw = 0u16;
                    for (i, o) in parts.iter().enumerate() {
                        if let MOperand::Use(u) = *o {
                            link(0, i + 1, at(i + 1, u), Some(offset(tuple, dw)));
                            dw += p.mf.vregs[u].dwords as u16;
                        }
                    }
                }
                (MOpcode::Extract(k), [MOperand::Def(d), MOperand::Use(s)])
                    if p.mf.vregs[*d].dwords == 1 =>
                {
                    let src = at(1, *s);
                    if let (Some(Hint::Pair(..)), Some(x)) = (src, map[1]) {
                        half_reads[first + x as usize] = 1 << k;
                    }
                    link(0, 1, src.map(|t| offset(t, k as u16)), at(0, *d));
                }
                (MOpcode::Extract(k), [MOperand::Def(d), MOperand::Use(s)])
                    if p.mf.vregs[*d].dwords == 2 =>
                {
                    let src = at(1, *s).filter(|h| matches!(h, Hint::Area(_)));
                    link(0, 1, src.map(|t| offset(t, k as u16)), at(0, *d));
                }
                _ => {}
            }
        }
    }
    for (e, (at, _)) in out.edits.iter().enumerate() {
        let [a, b] = segs.edit_item[e];
        if a != NO_ITEM && b != NO_ITEM {
            let (a, b) = (a as usize, b as usize);
            let pos = 2 * at.inst().index() as u32 + u32::from(at.pos() == ra::InstPosition::After);
            let ok = segs.edge(locs::edit_origin(e, false), true)
                && segs.edge(locs::edit_origin(e, true), false);
            hints[a].push((Hint::Single(b), pos, ok.then_some(true)));
            hints[b].push((Hint::Single(a), pos, ok.then_some(false)));
        }
    }
    (hints, half_reads)
}

/// The dense layout of the used PRegs: ABI singles keep their numbers, other singles follow
/// densely, then even-aligned pairs, then the tuple area (aligned to 4). The VGPR of each
/// PReg (`Float` `h` at `h`, `Vector` `h` at `64 + h`; `NO_REG` if unused), the tuple area's
/// base and the end.
fn dense_pregs(
    used: &[u64; 3],
    abi_n: u32,
    vweb_size: u32,
    vector_pairs: bool,
) -> ([u16; SEGS], u16, u16) {
    let mut reg = [NO_REG; SEGS];
    let mut next = abi_n as u16;
    for h in bits(used[ra::RegClass::Float as usize]) {
        if (h as u32) < abi_n {
            reg[h] = h as u16;
        } else {
            reg[h] = next;
            next += 1;
        }
    }
    if !vector_pairs {
        // `Vector` singles follow the `Float` ones.
        for h in bits(used[ra::RegClass::Vector as usize]) {
            reg[64 + h] = next;
            next += 1;
        }
    }
    let mut top = next.max(abi_n as u16);
    if vector_pairs && used[ra::RegClass::Vector as usize] != 0 {
        top = top.next_multiple_of(2);
        for h in bits(used[ra::RegClass::Vector as usize]) {
            reg[64 + h] = top;
            top += 2;
        }
    }
    let vweb_base = top.next_multiple_of(4);
    if vweb_size > 0 {
        top = vweb_base + vweb_size as u16;
    }
    (reg, vweb_base, top)
}

/// [`dense_pregs`] as a placement of the items: a PReg's segments on its register.
fn dense(used: &[u64; 3], abi_n: u32, vweb_size: u32, segs: &Segments) -> Placement {
    let (reg, vweb_base, top) = dense_pregs(used, abi_n, vweb_size, segs.vector_pairs);
    let mut item_vgpr = vec![NO_REG; segs.items()];
    item_vgpr[..SEGS].copy_from_slice(&reg);
    // A PReg's segments on its register (the slots' have none here).
    for (k, &h) in segs.preg.iter().enumerate() {
        if (h as usize) < SEGS {
            item_vgpr[segs.base + k] = item_vgpr[h as usize];
        }
    }
    Placement {
        item_vgpr,
        vweb_base,
        top,
    }
}

/// The dense layout's tables made straight from `out` (no items), when no packing can end
/// below it: `out` keeps every value in a register, so the most single-VGPR values live at
/// once between instructions (`Allocator::pres_f`) take as many VGPRs in any placement, and
/// the dense layout ends there. [`layout`] keeps a packing only when it ends below the dense
/// layout, so it would keep this one (small kernels whose search needed no growth: their
/// regalloc2 run uses exactly the pressure). `None` otherwise.
fn dense_at_floor(a: &super::Allocator, out: &ra::Output, used: &[u64; 3]) -> Option<VgprLayout> {
    if out.num_spillslots > 0 {
        return None;
    }
    let pairs = a.func.vector_dwords == 2;
    let (reg, vweb_base, top) = dense_pregs(used, a.abi_n, a.vweb_size, pairs);
    if u32::from(top) > a.pres_f {
        return None;
    }
    let vgpr = |x: ra::Allocation| match x.as_reg() {
        Some(r) if r.class() == ra::RegClass::Float => reg[r.hw_enc()],
        Some(r) if r.class() == ra::RegClass::Vector => reg[64 + r.hw_enc()],
        _ => NO_REG,
    };
    Some(VgprLayout {
        alloc_vgpr: out.allocs.iter().map(|&x| vgpr(x)).collect(),
        edit_vgpr: out
            .edits
            .iter()
            .map(|(_, ra::Edit::Move { from, to })| [vgpr(*from), vgpr(*to)])
            .collect(),
        vweb_base,
        top,
        slot_vgpr: Vec::new(),
    })
}

/// A packing under way: what is placed on each VGPR, each item's VGPR (`NO_REG`: not placed
/// yet), the tuple area's base and which pairs went with their singles.
#[derive(Clone)]
struct Partial<'a> {
    occ: Occupancy<'a>,
    item_vgpr: Vec<u16>,
    vweb_base: u16,
    with_group: Vec<bool>,
}

/// What is live on each VGPR so far, for first fit.
#[derive(Clone)]
struct Occupancy<'a> {
    /// The items placed on each VGPR (a hinted copy may meet one of them at the copy); up to
    /// the highest VGPR anything is placed on (a copy of an occupancy copies no empty tail).
    regs: Vec<Vec<&'a Intervals>>,
    /// The union of `regs`' intervals per VGPR, sorted and merged: first fit asks only
    /// whether a register is free, which one binary search per interval answers instead of a
    /// walk over every item placed there (hash_lanes' registers hold dozens of segments each).
    union: Vec<Vec<(u32, u32)>>,
    /// Per position, the VGPRs something is placed on there (bit `r` of word `r / 64`,
    /// `busy[r / 64][position]`): a short item's first fit is the lowest register free at
    /// each of its positions, without looking at the registers one by one. One vector per
    /// word, so placing an item on a register ORs one contiguous run of words (a long item
    /// spans thousands of positions; with the four words of a position side by side, placing
    /// was a third of the layouts' time). A register is busy at a position when its bit is
    /// set there or in `full` at the position's block. A word's vectors are made when the
    /// first item is placed in it (empty: nothing there), so a start or a copy of a kernel
    /// with few VGPRs touches only theirs.
    busy: [Vec<u64>; 4],
    /// Per block of [`BLOCK`] positions, the VGPRs something is placed on at every position
    /// of the block (`full[r / 64][position / BLOCK]`): placing an interval sets its whole
    /// blocks here and only its partial ones' positions in `busy` (a long item's run of words
    /// was most of `take`: gemm's items average ~200 positions).
    full: [Vec<u64>; 4],
    /// Positions `busy` covers.
    positions: usize,
    top: usize,
}

/// Positions per word of [`Occupancy::full`].
const BLOCK: usize = 16;

/// Most positions an item may span for [`Occupancy::first_fit`] to use the per-position
/// masks (longer ones search the registers' unions).
const SHORT: u32 = 64;

/// The multiples of `align` below [`MAX_VGPRS`] (bit `r` of word `r / 64`).
fn multiples(align: usize) -> [u64; 4] {
    match align {
        1 => [u64::MAX; 4],
        2 => [0x5555_5555_5555_5555; 4],
        4 => [0x1111_1111_1111_1111; 4],
        _ => {
            let mut m = [0u64; 4];
            for r in (0..MAX_VGPRS).step_by(align.max(1)) {
                m[r / 64] |= 1 << (r % 64);
            }
            m
        }
    }
}

/// `m` shifted down by `j` bits (bit `r + j` to bit `r`).
fn shift_down(m: [u64; 4], j: usize) -> [u64; 4] {
    let (w, b) = (j / 64, j % 64);
    let mut out = [0u64; 4];
    for (i, o) in out.iter_mut().enumerate() {
        let lo = m.get(i + w).copied().unwrap_or(0);
        let hi = m.get(i + w + 1).copied().unwrap_or(0);
        *o = if b == 0 {
            lo
        } else {
            (lo >> b) | (hi << (64 - b))
        };
    }
    out
}

impl<'a> Occupancy<'a> {
    /// Nothing placed yet; `positions` bounds the positions of the items (see `busy`).
    fn new(top: usize, positions: usize) -> Occupancy<'a> {
        Occupancy {
            regs: Vec::new(),
            union: Vec::new(),
            busy: Default::default(),
            full: Default::default(),
            positions,
            top,
        }
    }

    /// The VGPRs busy anywhere `l` is live, when `l` is short and inside `busy`.
    fn busy_over(&self, l: &Intervals) -> Option<[u64; 4]> {
        let mut len = 0;
        let mut m = [0u64; 4];
        for &(a, b) in &l.0 {
            len += b.saturating_sub(a) + 1;
            if len > SHORT || b as usize >= self.positions {
                return None;
            }
            let (a, b) = (a as usize, b as usize);
            for ((x, w), f) in m.iter_mut().zip(&self.busy).zip(&self.full) {
                if !w.is_empty() {
                    *x = w[a..=b].iter().fold(*x, |x, y| x | y);
                    *x = f[a / BLOCK..=b / BLOCK].iter().fold(*x, |x, y| x | y);
                }
            }
        }
        Some(m)
    }

    /// [`Occupancy::first_fit`] from the per-position masks, `None` when an item is not
    /// short; else the answer (itself `None`: no fit).
    fn first_fit_short(&self, lives: &[&Intervals], align: usize) -> Option<Option<usize>> {
        let mut ok = multiples(align);
        for (j, l) in lives.iter().enumerate() {
            let busy = self.busy_over(l)?;
            let free = shift_down(busy.map(|w| !w), j);
            for (o, f) in ok.iter_mut().zip(free) {
                *o &= f;
            }
        }
        Some(
            ok.iter()
                .enumerate()
                .find(|(_, w)| **w != 0)
                .map(|(i, w)| 64 * i + w.trailing_zeros() as usize),
        )
    }

    /// The VGPRs busy at the first or last position of one of `l`'s intervals: registers `l`
    /// surely does not fit on, known without a search of their unions.
    fn busy_at_ends(&self, l: &Intervals) -> [u64; 4] {
        let mut m = [0u64; 4];
        for p in l.0.iter().flat_map(|&(a, b)| [a, b]) {
            let p = p as usize;
            if p < self.positions {
                for ((x, w), f) in m.iter_mut().zip(&self.busy).zip(&self.full) {
                    if !w.is_empty() {
                        *x |= w[p] | f[p / BLOCK];
                    }
                }
            }
        }
        m
    }

    /// The items placed on VGPR `r`.
    fn on(&self, r: usize) -> &[&'a Intervals] {
        self.regs.get(r).map_or(&[], |v| v)
    }

    /// Whether nothing placed on VGPR `r` shares a position with `l`.
    fn free(&self, r: usize, l: &Intervals) -> bool {
        let Some(u) = self.union.get(r) else {
            return true;
        };
        l.0.iter().all(|&(a, b)| {
            let i = u.partition_point(|iv| iv.1 < a);
            u.get(i).is_none_or(|iv| iv.0 > b)
        })
    }

    /// The lowest multiple of `align` from which `lives[j]` fits on VGPR `base + j` for every
    /// `j` (`None`: past the file).
    fn first_fit(&self, lives: &[&Intervals], align: usize) -> Option<usize> {
        if !lives.is_empty() && lives.len() <= MAX_VGPRS {
            if let Some(fit) = self.first_fit_short(lives, align) {
                return fit;
            }
        }
        // Bases where some `lives[j]` meets what VGPR `base + j` holds at one of its
        // intervals' ends are skipped without searching the unions (a long item is live on
        // most registers' items somewhere).
        let mut blocked = [0u64; 4];
        for (j, l) in lives.iter().enumerate() {
            for (o, b) in blocked.iter_mut().zip(shift_down(self.busy_at_ends(l), j)) {
                *o |= b;
            }
        }
        let last = MAX_VGPRS.checked_sub(lives.len())?;
        // The open bases lowest first, a bit at a time (most are blocked: a walk over every
        // base was most of a long item's fit).
        for ((i, b), m) in blocked.into_iter().enumerate().zip(multiples(align)) {
            let mut open = !b & m;
            while open != 0 {
                let base = 64 * i + open.trailing_zeros() as usize;
                if base > last {
                    return None;
                }
                if lives
                    .iter()
                    .enumerate()
                    .all(|(j, l)| self.free(base + j, l))
                {
                    return Some(base);
                }
                open &= open - 1;
            }
        }
        None
    }

    fn take(&mut self, base: usize, lives: &[&'a Intervals]) {
        for (j, l) in lives.iter().enumerate() {
            let r = base + j;
            if self.regs.len() <= r {
                self.regs.resize_with(r + 1, Vec::new);
                self.union.resize_with(r + 1, Vec::new);
            }
            self.regs[r].push(l);
            if self.busy[r / 64].is_empty() {
                self.busy[r / 64] = vec![0; self.positions];
                self.full[r / 64] = vec![0; self.positions.div_ceil(BLOCK)];
            }
            let bit = 1 << (r % 64);
            let (busy, full) = (&mut self.busy[r / 64], &mut self.full[r / 64]);
            for &(a, b) in &l.0 {
                let (a, end) = (a as usize, (b as usize + 1).min(self.positions));
                if a >= end {
                    continue;
                }
                // The whole blocks inside `a..end` in `full`, the positions outside them in
                // `busy` (plain slice loops: the compiler makes them vector ORs).
                let (lo, hi) = (a.next_multiple_of(BLOCK), end / BLOCK * BLOCK);
                let parts = if lo < hi {
                    for w in &mut full[lo / BLOCK..hi / BLOCK] {
                        *w |= bit;
                    }
                    [a..lo, hi..end]
                } else {
                    [a..end, end..end]
                };
                for run in parts {
                    for p in &mut busy[run] {
                        *p |= bit;
                    }
                }
            }
            let u = &mut self.union[r];
            for &(a, b) in &l.0 {
                // The intervals `a..=b` touches or overlaps become one.
                let lo = u.partition_point(|iv| iv.1.saturating_add(1) < a);
                let hi = lo + u[lo..].partition_point(|iv| iv.0 <= b.saturating_add(1));
                if lo == hi {
                    u.insert(lo, (a, b));
                } else {
                    let merged = (a.min(u[lo].0), b.max(u[hi - 1].1));
                    u.splice(lo..hi, [merged]);
                }
            }
        }
        self.top = self.top.max(base + lives.len());
    }
}

/// What the packed layouts are made from.
struct Packing {
    used: [u64; 3],
    abi_n: u32,
    vweb_size: u32,
    /// Live intervals per item.
    ivs: Vec<Intervals>,
    segs: Segments,
    /// Per register of the tuple area: where any web on it is live.
    area: Vec<Intervals>,
    hints: Vec<Vec<HintAt>>,
    /// The pair items (`Vector` PRegs' crossing parts and segments), in order of first
    /// position, and each item's index among them (`u32::MAX`: not a pair).
    pairs: Vec<usize>,
    pair_ix: Vec<u32>,
    /// Per pair, where each of its two dwords is live (a one-dword `Extract` reads only its
    /// dword, so a half that is extracted first is free from there on).
    halves: Vec<[Intervals; 2]>,
    /// Per pair, its halves with the singles copied into or out of them that can share their
    /// registers ([`group_singles`]), and those singles with the dword they go on.
    groups: Vec<[Intervals; 2]>,
    grouped: Vec<Vec<(usize, u16)>>,
    /// The single items in order of first position (as every packing places them).
    singles: Vec<usize>,
    /// Positions of the function (two per instruction).
    positions: usize,
}

impl Packing {
    fn new(a: &super::Allocator, out: &ra::Output, used: &[u64; 3], slots: &[bool]) -> Packing {
        let (func, w) = (&a.func, &a.common.w);
        let (evs, segs) = segments(func, out, a.abi_n, slots, &late_defs(a));
        let ivs = locs::intervals(func, &evs, segs.items());
        let mut area = vec![Intervals::default(); a.vweb_size as usize];
        for (r, span) in w.dword_spans(RegClass::Vgpr) {
            area[r].0.extend_from_slice(&span.0);
        }
        for r in &mut area {
            r.normalize();
        }
        let (hints, half_reads) = hints(&a.common.p, func, out, w, &segs);
        let mut pairs = items(&segs, &ivs, true);
        pairs.sort_by_key(|&x| (ivs[x].start(), x));
        let mut pair_ix = vec![u32::MAX; ivs.len()];
        for (i, &x) in pairs.iter().enumerate() {
            pair_ix[x] = i as u32;
        }
        let halves = halves(func, &evs, &pair_ix, &half_reads, pairs.len());
        let (groups, grouped) = group_singles(a.abi_n, &ivs, &hints, &pair_ix, &halves);
        let mut singles = items(&segs, &ivs, false);
        singles.sort_by_key(|&x| (ivs[x].start(), x));
        Packing {
            used: *used,
            abi_n: a.abi_n,
            vweb_size: a.vweb_size,
            ivs,
            segs,
            area,
            hints,
            pairs,
            pair_ix,
            halves,
            groups,
            grouped,
            singles,
            positions: 2 * ra::Function::num_insts(func) + 2,
        }
    }

    fn dense(&self) -> Placement {
        dense(&self.used, self.abi_n, self.vweb_size, &self.segs)
    }

    /// The best of the packings (module doc): most waves, then fewest copies left, then
    /// fewest VGPRs.
    fn best(&self, waves: &dyn Fn(u32) -> u32) -> Option<Placement> {
        let key = |(l, misses): &(Placement, usize)| {
            (std::cmp::Reverse(waves(l.top as u32)), *misses, l.top)
        };
        // Grouped placements only where some pair has singles to group (else they are the
        // ungrouped ones again).
        let any_group = self.grouped.iter().any(|g| !g.is_empty());
        // Pairs in the tuple area first only where some pair is copied to or from it.
        let any_in_area = self
            .pairs
            .iter()
            .any(|&x| self.area_hints(x, 0).next().is_some());
        // A placement with no copy left that ends at the floor is a least key: the packings
        // after it cannot be better, and the first least one is the one kept anyway.
        let floor = self.floor();
        let least = (std::cmp::Reverse(waves(u32::from(floor))), 0, floor);
        let mut best: Option<(Placement, usize)> = None;
        let tries = [(true, false), (true, true), (false, false), (false, true)]
            .into_iter()
            .filter(|&(grouped, _)| any_group || !grouped)
            .flat_map(|(grouped, hinted_first)| {
                [false, true]
                    .into_iter()
                    .filter(|&in_area| any_in_area || !in_area)
                    .map(move |in_area| (grouped, hinted_first, in_area))
            });
        // The tries share their start, and the two with the same pairs (`hinted_first` or
        // not, one after the other) share the pairs' placement: each is made once and the
        // singles are placed on a copy (the second try takes it). Without a tuple area or
        // pairs the start is only the work-item ids, cheaper to place again than to copy.
        let shared = self.vweb_size > 0 || !self.pairs.is_empty();
        let start = if shared { Some(self.start()?) } else { None };
        let mut paired: [[Option<Option<Partial<'_>>>; 2]; 2] = Default::default();
        for (grouped, hinted_first, in_area) in tries {
            let part = if let Some(start) = &start {
                let slot = &mut paired[usize::from(grouped)][usize::from(in_area)];
                let part =
                    slot.get_or_insert_with(|| self.place_pairs(start.clone(), grouped, in_area));
                if hinted_first {
                    part.take()
                } else {
                    part.clone()
                }
            } else {
                self.start()
                    .and_then(|s| self.place_pairs(s, grouped, in_area))
            };
            let Some(p) = part.and_then(|part| self.place_singles(part, hinted_first)) else {
                continue;
            };
            let k = key(&p);
            if best.as_ref().is_none_or(|b| k < key(b)) {
                best = Some(p);
            }
            if k == least {
                break;
            }
        }
        best.map(|(l, _)| l)
    }

    /// The fewest VGPRs any placement ends at: at a position, a register holds at most one
    /// item that is live past it and at most one that was live before it (two items share a
    /// register there only where a copy ends one and begins the other, [`copy_meets`]), so
    /// as many registers as items of either kind are in use there.
    fn floor(&self) -> u16 {
        let used_f = self.used[ra::RegClass::Float as usize];
        let abi = bits(used_f)
            .filter(|&h| (h as u32) < self.abi_n)
            .map(|h| &self.ivs[h]);
        let lives = abi
            .chain(&self.area)
            .chain(self.halves.iter().flatten())
            .chain(self.singles.iter().map(|&x| &self.ivs[x]));
        // Per position, the change in the count of items live past it (`on`) and of items
        // live before it (`off`).
        let mut on: Vec<i32> = Vec::new();
        let mut off: Vec<i32> = Vec::new();
        for l in lives {
            for &(a, b) in &l.0 {
                let need = b as usize + 2;
                if on.len() < need {
                    on.resize(need, 0);
                    off.resize(need, 0);
                }
                if a < b {
                    on[a as usize] += 1;
                    on[b as usize] -= 1;
                    off[a as usize + 1] += 1;
                    off[b as usize + 1] -= 1;
                }
            }
        }
        let (mut n_on, mut n_off, mut most) = (0i32, 0i32, 0i32);
        for (d_on, d_off) in on.iter().zip(&off) {
            n_on += d_on;
            n_off += d_off;
            most = most.max(n_on).max(n_off);
        }
        most.max(self.abi_n as i32) as u16
    }

    /// The tables of placement `chosen`.
    fn finish(&self, chosen: &Placement) -> VgprLayout {
        let segs = &self.segs;
        let at = |item: u32| match item {
            NO_ITEM => NO_REG,
            i => chosen.item_vgpr[i as usize],
        };
        let mut slot_vgpr = vec![NO_REG; segs.base - SEGS];
        for (k, &x) in segs.preg.iter().enumerate() {
            if let Some(v) = slot_vgpr.get_mut((x as usize).wrapping_sub(SEGS)) {
                if *v == NO_REG {
                    *v = chosen.item_vgpr[segs.base + k];
                }
            }
        }
        VgprLayout {
            alloc_vgpr: segs.alloc_item.iter().map(|&i| at(i)).collect(),
            edit_vgpr: segs
                .edit_item
                .iter()
                .map(|&[f, t]| [at(f), at(t)])
                .collect(),
            vweb_base: chosen.vweb_base,
            top: chosen.top,
            slot_vgpr,
        }
    }

    /// First fit over the live intervals with the hints (module doc), the singles whose
    /// hinted register is free first when `hinted_first`, each pair placed with the singles
    /// that share its registers when `grouped`, the pairs copied to or from the tuple area
    /// on its registers first when `pairs_in_place` ([`Packing::place_pairs_in_area`]); with
    /// the number of moves hints left (a hinted single that got none of its registers: one,
    /// such a pair: two; `None`: past the file).
    fn place(
        &self,
        grouped: bool,
        hinted_first: bool,
        pairs_in_place: bool,
    ) -> Option<(Placement, usize)> {
        let paired = self.place_pairs(self.start()?, grouped, pairs_in_place)?;
        self.place_singles(paired, hinted_first)
    }

    /// What every packing places first: the work-item id PRegs on their registers and the
    /// tuple area at the lowest multiple of 4 where it fits (`None`: past the file).
    fn start(&self) -> Option<Partial<'_>> {
        let (ivs, abi_n) = (&self.ivs, self.abi_n);
        let mut occ = Occupancy::new(abi_n as usize, self.positions);
        let mut item_vgpr = vec![NO_REG; ivs.len()];
        let used_f = self.used[ra::RegClass::Float as usize];
        for h in bits(used_f).filter(|&h| (h as u32) < abi_n) {
            item_vgpr[h] = h as u16;
            occ.take(h, &[&ivs[h]]);
        }
        let mut vweb_base = 0;
        if self.vweb_size > 0 {
            let lives: Vec<&Intervals> = self.area.iter().collect();
            let base = occ.first_fit(&lives, 4)?;
            occ.take(base, &lives);
            vweb_base = base as u16;
        }
        Some(Partial {
            occ,
            item_vgpr,
            vweb_base,
            with_group: vec![false; self.pairs.len()],
        })
    }

    /// [`Packing::start`] with the pairs placed (as [`Packing::place`] says for `grouped`
    /// and `pairs_in_place`); `None`: past the file.
    fn place_pairs<'b>(
        &'b self,
        part: Partial<'b>,
        grouped: bool,
        pairs_in_place: bool,
    ) -> Option<Partial<'b>> {
        let Partial {
            mut occ,
            mut item_vgpr,
            vweb_base,
            mut with_group,
        } = part;
        // Per pair: placed with its singles. A group goes where the pair alone would not end
        // lower (a long-lived single can push it up; then the singles take their chances).
        if pairs_in_place {
            self.place_pairs_in_area(
                &mut occ,
                vweb_base,
                grouped,
                &mut item_vgpr,
                &mut with_group,
            );
        }
        for (i, &x) in self.pairs.iter().enumerate() {
            if item_vgpr[x] != NO_REG {
                continue;
            }
            let [h0, h1] = &self.halves[i];
            let mut base = occ.first_fit(&[h0, h1], 2)?;
            if grouped && !self.grouped[i].is_empty() {
                let [g0, g1] = &self.groups[i];
                let g = occ.first_fit(&[g0, g1], 2)?;
                if g + 2 <= occ.top.max(base + 2) {
                    base = g;
                    with_group[i] = true;
                    for &(s, j) in &self.grouped[i] {
                        item_vgpr[s] = base as u16 + j;
                    }
                }
            }
            let lives = if with_group[i] {
                &self.groups[i]
            } else {
                &self.halves[i]
            };
            occ.take(base, &[&lives[0], &lives[1]]);
            item_vgpr[x] = base as u16;
        }
        Some(Partial {
            occ,
            item_vgpr,
            vweb_base,
            with_group,
        })
    }

    /// [`Packing::place_pairs`]' placement finished with the singles (the hinted ones first
    /// when `hinted_first`), and the moves the hints left (`None`: past the file).
    fn place_singles(&self, part: Partial<'_>, hinted_first: bool) -> Option<(Placement, usize)> {
        let Packing {
            vweb_size,
            ref ivs,
            ref area,
            ref hints,
            ref pair_ix,
            ..
        } = *self;
        let Partial {
            mut occ,
            mut item_vgpr,
            vweb_base,
            with_group,
        } = part;
        let pair_lives = |i: usize| {
            if with_group[i] {
                &self.groups[i]
            } else {
                &self.halves[i]
            }
        };
        let singles = &self.singles;
        let mut misses = 0;
        // With `hinted_first`, the singles whose hinted register is free go first: those copied to
        // or from a pair or the tuple area (placed already), then those of regalloc2's moves.
        let passes: &[Pass] = if hinted_first {
            &[Pass::TupleHints, Pass::Hints, Pass::All]
        } else {
            &[Pass::All]
        };
        for (&pass, h) in passes
            .iter()
            .flat_map(|p| singles.iter().map(move |&h| (p, h)))
        {
            if item_vgpr[h] != NO_REG {
                continue;
            }
            let l = &ivs[h];
            // The hinted registers placed so far, with what lives there for the copy.
            let wanted = hints[h].iter().filter_map(|&(t, pos, ok)| {
                if pass == Pass::TupleHints && matches!(t, Hint::Single(_)) {
                    return None;
                }
                let (r, live) = match t {
                    Hint::Pair(x, o) if item_vgpr[x] != NO_REG => (
                        (item_vgpr[x] + o) as usize,
                        &pair_lives(pair_ix[x] as usize)[o as usize],
                    ),
                    Hint::Area(r) if vweb_size > 0 => {
                        (vweb_base as usize + r as usize, &area[r as usize])
                    }
                    Hint::Single(x) if item_vgpr[x] != NO_REG => (item_vgpr[x] as usize, &ivs[x]),
                    _ => return None,
                };
                Some((r, live, pos, ok))
            });
            // Free but for the copy's own source or destination, which may meet `l` only at the
            // copy.
            let hinted = wanted
                .clone()
                .find(|&(r, live, pos, ok)| {
                    // A register free of everything is free of the copy's partner too.
                    occ.free(r, l)
                        || occ.on(r).iter().all(|o| match ok {
                            Some(src) if std::ptr::eq(*o, live) => copy_meets(o, l, pos, src),
                            _ => !o.overlaps(l),
                        })
                })
                .map(|(r, _, _, _)| r);
            if hinted.is_none() && pass != Pass::All {
                continue;
            }
            if hinted.is_none() && wanted.clone().next().is_some() {
                misses += 1;
            }
            let base = hinted.or_else(|| occ.first_fit(&[l], 1))?;
            occ.take(base, &[l]);
            item_vgpr[h] = base as u16;
        }
        // A pair built into or extracted from the tuple area off its registers is two moves.
        for &x in &self.pairs {
            let wanted = self.area_hints(x, vweb_base);
            if wanted.clone().next().is_some() && wanted.clone().all(|(r, _, _)| r != item_vgpr[x])
            {
                misses += 2;
            }
        }
        let placement = Placement {
            item_vgpr,
            vweb_base,
            top: occ.top as u16,
        };
        Some((placement, misses))
    }

    /// The tuple-area registers pair item `x` is built into or extracted from (with the
    /// area at `vweb_base`), even ones only, with the copy's position and whether the pair
    /// is its source when they may meet there ([`Segments::edge`]).
    fn area_hints(
        &self,
        x: usize,
        vweb_base: u16,
    ) -> impl Iterator<Item = (u16, u32, Option<bool>)> + Clone + '_ {
        self.hints[x]
            .iter()
            .filter_map(move |&(h, pos, ok)| match h {
                Hint::Area(r) if self.vweb_size > 0 && (vweb_base + r) % 2 == 0 => {
                    Some((vweb_base + r, pos, ok))
                }
                _ => None,
            })
    }

    /// Sub-register coalescing of whole pairs with the tuple area: each pair an `Extract`
    /// takes out of a tuple web, or a `Build` puts into one, goes on the tuple's registers
    /// where its halves (with its singles when `grouped`) meet the area's values only at
    /// those copies (the tuple's dwords die at the extract, or are born at the build): the
    /// copies are then self-moves. A pair of a 4-dword load's halves stored apart
    /// (the GEMM's a-pieces) needs no `v_mov`. Runs before the other pairs' first fit,
    /// which could take those registers first; sets `item_vgpr` of the pairs it places.
    fn place_pairs_in_area<'b>(
        &'b self,
        occ: &mut Occupancy<'b>,
        vweb_base: u16,
        grouped: bool,
        item_vgpr: &mut [u16],
        with_group: &mut [bool],
    ) {
        for (i, &x) in self.pairs.iter().enumerate() {
            let copies: Vec<(u16, u32, bool)> = self
                .area_hints(x, vweb_base)
                .filter_map(|(r, pos, ok)| ok.map(|src| (r, pos, src)))
                .collect();
            let fits = |base: u16, lives: &[Intervals; 2], occ: &Occupancy<'_>| {
                (0..2u16).all(|j| {
                    let (r, l) = (base + j, &lives[j as usize]);
                    let at: Vec<(u32, bool)> = copies
                        .iter()
                        .filter(|c| c.0 == base)
                        .map(|c| (c.1, c.2))
                        .collect();
                    let area = self.area.get(usize::from(r).wrapping_sub(vweb_base.into()));
                    (r as usize) < MAX_VGPRS
                        && (occ.free(r.into(), l)
                            || occ.on(r.into()).iter().all(|o| match area {
                                Some(a) if std::ptr::eq(*o, a) => meets_only_at(o, l, &at),
                                _ => !o.overlaps(l),
                            }))
                })
            };
            let with_singles = grouped && !self.grouped[i].is_empty();
            let bases = copies.iter().map(|c| c.0);
            let found = bases.clone().find_map(|b| {
                if with_singles && fits(b, &self.groups[i], occ) {
                    Some((b, true))
                } else {
                    fits(b, &self.halves[i], occ).then_some((b, false))
                }
            });
            let Some((base, group)) = found else { continue };
            let lives = if group {
                for &(s, j) in &self.grouped[i] {
                    item_vgpr[s] = base + j;
                }
                &self.groups[i]
            } else {
                &self.halves[i]
            };
            with_group[i] = group;
            occ.take(base.into(), &[&lives[0], &lives[1]]);
            item_vgpr[x] = base;
        }
    }
}

/// Per instruction (regalloc2's numbering): a real instruction whose VGPR results are all
/// late defs without a tie, so (as regalloc2 allows) a result may take the register of a
/// source that dies there: `v_fma_f32 v0, v1, v2, v0` keeps a sum in one VGPR.
fn late_defs(a: &super::Allocator) -> Vec<bool> {
    use ra::Function as _;
    let mut late = vec![false; a.func.num_insts()];
    for (b, bd) in a.common.p.mf.blocks.iter() {
        for (k, mi) in bd.insts.iter().enumerate() {
            let gi = a.common.p.first_inst[b.index()] as usize + k;
            late[gi] = matches!(mi.opcode, MOpcode::Isa(_))
                && mi.tied.is_none()
                && a.func.inst_operands(ra::Inst::new(gi)).iter().all(|o| {
                    o.kind() == ra::OperandKind::Use
                        || (o.pos() == ra::OperandPos::Late
                            && !matches!(o.constraint(), ra::OperandConstraint::Reuse(_)))
                });
        }
    }
    late
}

/// The segment items of the pairs (`pairs`) or of the singles (every VGPR value but the
/// work-item ids' in the entry block, which keep their PRegs' items, is in a segment).
fn items(segs: &Segments, ivs: &[Intervals], pairs: bool) -> Vec<usize> {
    (0..segs.preg.len())
        .filter(|&k| {
            (segs.vector_pairs && (64..SEGS).contains(&usize::from(segs.preg[k]))) == pairs
        })
        .map(|k| segs.base + k)
        .filter(|&x| !ivs[x].0.is_empty())
        .collect()
}

/// Where each dword of each pair (by `pair_ix`) is live: the pairs' events (`evs`, by item)
/// per dword, a read by a one-dword `Extract` (`half_reads`) on its dword only.
fn halves(
    func: &RaFunc,
    evs: &[Vec<locs::Ev>],
    pair_ix: &[u32],
    half_reads: &[u8],
    n: usize,
) -> Vec<[Intervals; 2]> {
    let dword_evs: Vec<Vec<locs::Ev>> = evs
        .iter()
        .map(|bevs| {
            let mut out = Vec::new();
            for ev in bevs {
                let Some(&i) = pair_ix.get(ev.loc).filter(|&&i| i != u32::MAX) else {
                    continue;
                };
                let mask = match ev.origin {
                    o if !ev.write && o & EDIT_ORIGIN == 0 && half_reads[o as usize] != 0 => {
                        half_reads[o as usize]
                    }
                    _ => 3,
                };
                for j in (0..2).filter(|j| mask & (1 << j) != 0) {
                    out.push(locs::Ev {
                        loc: 2 * i as usize + j,
                        ..*ev
                    });
                }
            }
            out
        })
        .collect();
    let mut ivs = locs::intervals(func, &dword_evs, 2 * n).into_iter();
    (0..n)
        .map(|_| {
            [
                ivs.next().unwrap_or_default(),
                ivs.next().unwrap_or_default(),
            ]
        })
        .collect()
}

/// Sub-register coalescing: per pair, the singles copied into or out of one of its dwords
/// (`Build`, `Extract`) whose live intervals meet that dword's only at the copy
/// ([`copy_meets`]) and no other single's taken for it; each single goes with the first pair
/// (in order of first position) that takes it. Gives per pair the union of each dword's
/// intervals with its singles', and the singles with their dword.
#[allow(clippy::type_complexity)]
fn group_singles(
    abi_n: u32,
    ivs: &[Intervals],
    hints: &[Vec<HintAt>],
    pair_ix: &[u32],
    halves: &[[Intervals; 2]],
) -> (Vec<[Intervals; 2]>, Vec<Vec<(usize, u16)>>) {
    let mut partners: Vec<Vec<(u32, usize, u16, bool)>> = vec![Vec::new(); halves.len()];
    for (s, hs) in hints.iter().enumerate() {
        for &(h, pos, ok) in hs {
            if let (Hint::Pair(x, j @ 0..=1), Some(me_src)) = (h, ok) {
                if let Some(p) = partners.get_mut(pair_ix[x] as usize) {
                    p.push((pos, s, j, me_src));
                }
            }
        }
    }
    // The work-item id registers stay where the dispatcher puts them.
    let mut taken: Vec<bool> = (0..ivs.len()).map(|x| x < abi_n as usize).collect();
    let mut groups = halves.to_vec();
    let mut grouped: Vec<Vec<(usize, u16)>> = vec![Vec::new(); halves.len()];
    for (i, ps) in partners.iter_mut().enumerate() {
        ps.sort_unstable();
        // Whether single `s` can join dword `j` meeting `partner` at the copy at `pos` only
        // (none of the dword's other values or singles live with it).
        let joins =
            |s: usize, j: u16, partner: &Intervals, pos, me_src, grouped: &[(usize, u16)]| {
                copy_meets(partner, &ivs[s], pos, me_src)
                    && (std::ptr::eq(partner, &halves[i][j as usize])
                        || !halves[i][j as usize].overlaps(&ivs[s]))
                    && grouped.iter().all(|&(t, k)| {
                        k != j || std::ptr::eq(partner, &ivs[t]) || !ivs[t].overlaps(&ivs[s])
                    })
            };
        let mut work = Vec::new();
        for &(pos, s, j, me_src) in ps.iter() {
            if !taken[s] && joins(s, j, &halves[i][j as usize], pos, me_src, &grouped[i]) {
                taken[s] = true;
                grouped[i].push((s, j));
                work.push((s, j));
            }
        }
        // Then the singles regalloc2 moves the grouped ones to or from (a value it split).
        while let Some((s, j)) = work.pop() {
            for &(h, pos, ok) in &hints[s] {
                if let (Hint::Single(t), Some(s_src)) = (h, ok) {
                    if !taken[t] && joins(t, j, &ivs[s], pos, !s_src, &grouped[i]) {
                        taken[t] = true;
                        grouped[i].push((t, j));
                        work.push((t, j));
                    }
                }
            }
        }
        for &(s, j) in &grouped[i] {
            groups[i][j as usize].merge(&ivs[s]);
        }
    }
    (groups, grouped)
}

/// Which singles a pass of [`packed`] places.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Those whose hinted pair or tuple-area register is free.
    TupleHints,
    /// Those whose hinted register is free.
    Hints,
    /// All that are left.
    All,
}

/// Whether `partner` and `me` have no position in common but those of copies between them
/// (`at`: position, and whether `me` is the source), as [`copy_meets`] tells for one.
fn meets_only_at(partner: &Intervals, me: &Intervals, at: &[(u32, bool)]) -> bool {
    partner.0.iter().all(|&(p0, p1)| {
        me.0.iter().all(|&(m0, m1)| {
            let (lo, hi) = (p0.max(m0), p1.min(m1));
            lo > hi
                || at.iter().any(|&(pos, me_src)| {
                    let (src_end, dst_start) = if me_src { (m1, p0) } else { (p1, m0) };
                    lo == pos && hi == pos && src_end == pos && dst_start == pos
                })
        })
    })
}

/// Whether `partner` and `me`, copied one to the other at `pos` (from `me` when `me_src`),
/// may share a register: they have no position in common but `pos`, where the source ends
/// and the destination begins (with [`Segments::edge`]: nothing else of either is there).
fn copy_meets(partner: &Intervals, me: &Intervals, pos: u32, me_src: bool) -> bool {
    partner.0.iter().all(|&(p0, p1)| {
        me.0.iter().all(|&(m0, m1)| {
            let (lo, hi) = (p0.max(m0), p1.min(m1));
            let (src_end, dst_start) = if me_src { (m1, p0) } else { (p1, m0) };
            lo > hi || (lo == pos && hi == pos && src_end == pos && dst_start == pos)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// First fit by walking every item placed on each register: what the masks and the
    /// unions must answer.
    fn first_fit_walk(
        placed: &[Vec<Intervals>],
        lives: &[&Intervals],
        align: usize,
    ) -> Option<usize> {
        (0..=MAX_VGPRS.checked_sub(lives.len())?)
            .step_by(align)
            .find(|&base| {
                lives
                    .iter()
                    .enumerate()
                    .all(|(j, l)| placed[base + j].iter().all(|o| !o.overlaps(l)))
            })
    }

    proptest! {
        /// Items of random short and long intervals placed by first fit (groups of 1, 2 and
        /// 4 registers): every answer of `first_fit` (masks, unions) is the walk's.
        #[test]
        fn first_fit_agrees_with_the_walk(
            items in proptest::collection::vec(
                (proptest::collection::vec((0u32..300, 0u32..300), 1..3), 0usize..3),
                1..400,
            )
        ) {
            let ivs: Vec<Intervals> = items.iter().map(|(v, _)| Intervals::from_spans(v)).collect();
            let mut occ = Occupancy::new(0, 300);
            let mut placed: Vec<Vec<Intervals>> = vec![Vec::new(); MAX_VGPRS];
            for (iv, (_, shape)) in ivs.iter().zip(&items) {
                let (n, align) = [(1, 1), (2, 2), (3, 4)][*shape];
                let lives: Vec<&Intervals> = std::iter::repeat_n(iv, n).collect();
                let fit = occ.first_fit(&lives, align);
                prop_assert_eq!(fit, first_fit_walk(&placed, &lives, align));
                if let Some(base) = fit {
                    occ.take(base, &lives);
                    for j in 0..n {
                        placed[base + j].push(iv.clone());
                        prop_assert!(occ.free(base + j, &Intervals::default()));
                        prop_assert!(!occ.free(base + j, iv));
                    }
                }
            }
        }
    }
}

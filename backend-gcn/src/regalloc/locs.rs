//! Reads and writes of regalloc2's locations (its registers of one class, or its spill slots)
//! in the allocated program, and their liveness over the CFG. Takes regalloc2's output;
//! gives per-block event lists, live-in sets and (for placing `Int` registers on SGPRs)
//! live intervals in the position numbering of the tuple webs.

use regalloc2 as ra;
use regalloc2::{Allocation, Edit, Function, InstPosition};

use super::prep::BitSet;
use super::ra2::RaFunc;
use super::webs::Intervals;

/// One read or write of a location, in program order within a block.
#[derive(Clone, Copy)]
pub struct Ev {
    /// A write (def or move destination), else a read.
    pub write: bool,
    /// The location's number (what `key` gave).
    pub loc: usize,
    /// Position as the webs number them: instruction `i` and the edits before it at `2i`,
    /// the edits after it at `2i + 1`; the defs of an instruction that `late_def` names at
    /// `2i + 1` too.
    pub pos: u32,
    /// What made it: an operand (its index in `Output::allocs`), or a side of an edit
    /// ([`edit_origin`]).
    pub origin: u32,
}

/// [`Ev::origin`] of the source (`to` false) or destination of edit `e` (`Output::edits`).
pub fn edit_origin(e: usize, to: bool) -> u32 {
    EDIT_ORIGIN | (2 * e as u32 + u32::from(to))
}

/// Set in the [`Ev::origin`] of an edit's side.
pub const EDIT_ORIGIN: u32 = 1 << 31;

/// The accesses of every block to the locations `key` numbers (`None`: not tracked).
/// `late_def(i)`: instruction `i` reads all its sources before it writes a result, so its
/// defs count from just after it (`2i + 1`) and may take a location that one of its reads
/// ends (as the webs' `late_scalar_defs`).
pub fn events(
    func: &RaFunc,
    out: &ra::Output,
    key: impl Fn(Allocation) -> Option<usize>,
    late_def: impl Fn(usize) -> bool,
) -> Vec<Vec<Ev>> {
    let nb = func.num_blocks();
    let mut evs: Vec<Vec<Ev>> = vec![Vec::new(); nb];
    let mut e = 0usize;
    let edit_evs = |e: usize, pos: u32, v: &mut Vec<Ev>| {
        let Edit::Move { from, to } = out.edits[e].1;
        if let Some(loc) = key(from) {
            v.push(Ev {
                write: false,
                loc,
                pos,
                origin: edit_origin(e, false),
            });
        }
        if let Some(loc) = key(to) {
            v.push(Ev {
                write: true,
                loc,
                pos,
                origin: edit_origin(e, true),
            });
        }
    };
    for (b, ev) in evs.iter_mut().enumerate() {
        let r = func.block_insns(ra::Block::new(b));
        for i in r.iter() {
            let pos = 2 * i.index() as u32;
            while e < out.edits.len() && out.edits[e].0.inst() < i {
                e += 1;
            }
            while e < out.edits.len()
                && out.edits[e].0.inst() == i
                && out.edits[e].0.pos() == InstPosition::Before
            {
                edit_evs(e, pos, ev);
                e += 1;
            }
            let allocs = out.inst_allocs(i);
            let first = out.inst_alloc_offsets[i.index()];
            let ops = func.inst_operands(i);
            let def_pos = if late_def(i.index()) { pos + 1 } else { pos };
            for want in [ra::OperandKind::Use, ra::OperandKind::Def] {
                for (k, (op, a)) in ops.iter().zip(allocs).enumerate() {
                    if op.kind() == want {
                        if let Some(loc) = key(*a) {
                            let write = want == ra::OperandKind::Def;
                            ev.push(Ev {
                                write,
                                loc,
                                pos: if write { def_pos } else { pos },
                                origin: first + k as u32,
                            });
                        }
                    }
                }
            }
            while e < out.edits.len()
                && out.edits[e].0.inst() == i
                && out.edits[e].0.pos() == InstPosition::After
            {
                edit_evs(e, pos + 1, ev);
                e += 1;
            }
        }
    }
    evs
}

/// The locations live into each block (of `n` numbered), to a fixed point.
pub fn live_in(func: &RaFunc, evs: &[Vec<Ev>], n: usize) -> Vec<BitSet> {
    let nb = evs.len();
    let mut live_in = vec![BitSet::new(n); nb];
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..nb).rev() {
            let mut live = live_out(func, &live_in, b, n);
            for ev in evs[b].iter().rev() {
                if ev.write {
                    live.remove(ev.loc);
                } else {
                    live.insert(ev.loc);
                }
            }
            if live != live_in[b] {
                live_in[b] = live;
                changed = true;
            }
        }
    }
    live_in
}

/// The locations live out of block `b`: the union of its successors' live-in sets.
pub fn live_out(func: &RaFunc, live_in: &[BitSet], b: usize, n: usize) -> BitSet {
    let mut live = BitSet::new(n);
    for s in func.block_succs(ra::Block::new(b)) {
        live.union_with(&live_in[s.index()]);
    }
    live
}

/// Where each of the `n` locations holds a value that is read later, and every position
/// where it is written (a dead write still clobbers the register), as intervals in the webs'
/// numbering (block `b` spans `2·first .. 2·terminator + 1`).
pub fn intervals(func: &RaFunc, evs: &[Vec<Ev>], n: usize) -> Vec<Intervals> {
    let live_in = live_in(func, evs, n);
    let mut ivs = vec![Intervals::default(); n];
    let mut end = vec![0u32; n];
    for (b, bevs) in evs.iter().enumerate() {
        let r = func.block_insns(ra::Block::new(b));
        let (start, stop) = (
            2 * r.first().index() as u32,
            2 * r.last().index() as u32 + 1,
        );
        let mut live = live_out(func, &live_in, b, n);
        for x in live.iter() {
            end[x] = stop;
        }
        for ev in bevs.iter().rev() {
            if ev.write {
                if live.remove_old(ev.loc) {
                    ivs[ev.loc].add(ev.pos, end[ev.loc]);
                } else {
                    ivs[ev.loc].add(ev.pos, ev.pos);
                }
            } else if live.insert_new(ev.loc) {
                end[ev.loc] = ev.pos;
            }
        }
        for x in live.iter() {
            ivs[x].add(start, end[x]);
        }
    }
    for iv in &mut ivs {
        iv.normalize();
    }
    ivs
}

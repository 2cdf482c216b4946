//! Peepholes on the allocated function: takes the [`PhysFunction`] that `regalloc` gives and
//! gives the same function with fewer moves, before `waitcnt` and `hazards` see it.
//!
//! - A move of a register to itself (`s_mov_b32 s4, s4`, `s_mov_b64 s[4:5], s[4:5]`,
//!   `v_mov_b32 v3, v3` without modifiers) is dropped: the allocator's phi and tuple copies
//!   leave these when source and destination got the same register.
//! - Two adjacent `s_mov_b32`s that copy an even-aligned SGPR pair half by half (the
//!   allocator's parallel copies of a 64-bit mask or pointer) become one `s_mov_b64`.
//! - `v_mov_b32 vD, vS` goes when the instruction that wrote `vS` (in the block, or in the
//!   only predecessor that jumps to it) can write `vD` itself: nothing in between touches
//!   `vD`, `vS` or EXEC, and `vS`'s value is dead after the move — on every path `vS` is
//!   written whole under the same EXEC before it is read (`dead_after`), since a write under
//!   another EXEC may leave lanes of the old value that a later read sees.

use cranelift_entity::EntityRef;

use crate::isa::{name_facts, Encoding, Inst, Modifiers, Opcode, Operand, SpecialReg};
use crate::mir::MBlock;
use crate::phys::{PhysFunction, PhysTerminator};

/// A plain register-to-register move: (opcode, destination, source).
fn plain_move(i: &Inst) -> Option<(Opcode, Operand, Operand)> {
    if !matches!(i.op, Opcode::SMovB32 | Opcode::SMovB64 | Opcode::VMovB32)
        || i.mods != Modifiers::NONE
        || !matches!(i.encoding, Encoding::Native | Encoding::E64)
    {
        return None;
    }
    match i.operands[..] {
        [d @ (Operand::Sgpr { .. } | Operand::Vgpr { .. }), s] => Some((i.op, d, s)),
        _ => None,
    }
}

/// The single SGPR `s_mov_b32` copies: (destination, source), both ordinary SGPRs.
fn sgpr_move32(i: &Inst) -> Option<(u16, u16)> {
    match plain_move(i)? {
        (
            Opcode::SMovB32,
            Operand::Sgpr { first: d, count: 1 },
            Operand::Sgpr { first: s, count: 1 },
        ) if d <= 101 && s <= 101 => Some((d, s)),
        _ => None,
    }
}

/// `s_mov_b64` of the even pairs starting at `lo_d` and `lo_s` if the two moves `a` then `b`
/// copy those pairs half by half (in either order).
fn pair_move(a: (u16, u16), b: (u16, u16)) -> Option<Inst> {
    let (lo, hi) = if a.0 < b.0 { (a, b) } else { (b, a) };
    let aligned = lo.0 % 2 == 0 && lo.1 % 2 == 0;
    if !aligned || hi.0 != lo.0 + 1 || hi.1 != lo.1 + 1 || lo.0 == lo.1 {
        return None;
    }
    Some(Inst::new(
        Opcode::SMovB64,
        &[
            Operand::Sgpr {
                first: lo.0,
                count: 2,
            },
            Operand::Sgpr {
                first: lo.1,
                count: 2,
            },
        ],
    ))
}

/// VGPRs of an operand (`None` for other operands).
fn vgprs(o: &Operand) -> Option<std::ops::Range<u16>> {
    match *o {
        Operand::Vgpr { first, count } => Some(first..first + count as u16),
        _ => None,
    }
}

/// Whether `i` reads and whether it writes VGPR `v` (one pass over the operands). Operands
/// beyond the opcode table's count are taken as both.
fn access(i: &Inst, v: u16) -> (bool, bool) {
    let infos = i.operand_infos();
    let (mut reads, mut writes) = (false, false);
    for (k, o) in i.operands.iter().enumerate() {
        if vgprs(o).is_some_and(|r| r.contains(&v)) {
            match infos.get(k) {
                Some(oi) => {
                    reads |= oi.access.reads();
                    writes |= oi.access.writes();
                }
                None => return (true, true),
            }
        }
    }
    (reads, writes)
}

/// Whether `i` reads or writes a VGPR of `a` or of `b` ([`access`] of each, in one pass over
/// the operands).
fn touches_either(i: &Inst, a: std::ops::Range<u16>, b: std::ops::Range<u16>) -> bool {
    let infos = i.operand_infos();
    i.operands.iter().enumerate().any(|(k, o)| {
        let Operand::Vgpr { first, count } = *o else {
            return false;
        };
        let end = first + count as u16;
        let overlaps = |r: &std::ops::Range<u16>| first < r.end && r.start < end;
        (overlaps(&a) || overlaps(&b))
            && infos
                .get(k)
                .is_none_or(|oi| oi.access.reads() || oi.access.writes())
    })
}

/// Whether `i` reads (`want_write` false) or writes (true) VGPR `v`.
fn touches(i: &Inst, v: u16, want_write: bool) -> bool {
    let (r, w) = access(i, v);
    if want_write {
        w
    } else {
        r
    }
}

/// Whether `i` may change EXEC.
fn changes_exec(i: &Inst) -> bool {
    i.op.name_has(name_facts::EXEC)
        || i.op.name().starts_with("v_cmpx")
        || i.operands.iter().any(|o| {
            matches!(
                o,
                Operand::Special(SpecialReg::Exec | SpecialReg::ExecLo | SpecialReg::ExecHi)
            )
        })
}

/// What the coalescing scans ask of an instruction first: the VGPRs its operands name (as one
/// range from the lowest to past the highest) and whether it may change EXEC. Made once per
/// instruction per run, so the scans pass over the instructions that touch neither range
/// without walking their operands (an instruction whose range misses a register neither
/// reads nor writes it).
#[derive(Clone, Copy)]
struct Span {
    /// The lowest VGPR named, and one past the highest (equal: none).
    lo: u16,
    hi: u16,
    exec: bool,
}

impl Span {
    fn of(i: &Inst) -> Span {
        let (mut lo, mut hi) = (u16::MAX, 0);
        for r in i.operands.iter().filter_map(vgprs) {
            lo = lo.min(r.start);
            hi = hi.max(r.end);
        }
        Span {
            lo: lo.min(hi),
            hi,
            exec: changes_exec(i),
        }
    }

    /// Whether an operand may name a VGPR of `r`.
    fn meets(&self, r: &std::ops::Range<u16>) -> bool {
        self.lo < r.end && r.start < self.hi
    }

    /// Whether an operand may name VGPR `v`.
    fn names(&self, v: u16) -> bool {
        self.lo <= v && v < self.hi
    }
}

/// [`Span`]s of every instruction, by block.
type Spans = Vec<Vec<Span>>;

/// The VGPRs `first .. first + count` `i` writes whole under EXEC, if that is all it writes
/// (one, or a tuple such as a `buffer_load_dwordx2`'s): a VALU result
/// without DPP/SDWA/op_sel or a vector memory load into VGPRs (not into LDS, no `tfe`), whose
/// destination is not also read as such (`v_fmac`, d16 loads), and not a lane write
/// (`v_writelane`).
fn whole_vgpr_defs(i: &Inst) -> Option<(u16, u16)> {
    use crate::isa::Format;
    let kind_ok = match i.op.format() {
        Format::Vop1 | Format::Vop2 | Format::Vop3 | Format::Vop3p => {
            matches!(i.encoding, Encoding::Native | Encoding::E64)
                && i.mods.op_sel == 0
                && !i.op.name().starts_with("v_writelane")
        }
        Format::Ds | Format::Mubuf | Format::Mtbuf | Format::Flat | Format::Global => {
            !i.mods.lds && !i.mods.tfe && !i.mods.gds
        }
        _ => false,
    };
    if !kind_ok {
        return None;
    }
    let mut def = None;
    for (o, oi) in i.operands.iter().zip(i.operand_infos()) {
        if !oi.access.writes() {
            continue;
        }
        match *o {
            Operand::Vgpr { first, count } if !oi.access.reads() && def.is_none() => {
                def = Some((first, count as u16))
            }
            Operand::Vgpr { .. } | Operand::Agpr { .. } => return None,
            _ => {}
        }
    }
    def
}

/// Whether the value VGPR `v` holds after instruction `k` of block `b` is never read: on every
/// path from there, `v` is written whole before any read while EXEC is still the same (a
/// write under another EXEC may leave lanes of the old value that a later read sees), or the
/// program ends.
fn dead_after(f: &PhysFunction, spans: &Spans, b: usize, k: usize, v: u16) -> bool {
    let mut seen = vec![[false; 2]; f.blocks.len()];
    let mut work = vec![(b, k + 1, false)];
    while let Some((blk, from, mut exec_changed)) = work.pop() {
        let mut ended = false;
        for (i, sp) in f.blocks[blk].insts[from..].iter().zip(&spans[blk][from..]) {
            if !sp.names(v) {
                exec_changed |= sp.exec;
                continue;
            }
            let (reads, writes) = access(i, v);
            if reads {
                return false;
            }
            if writes {
                let whole = whole_vgpr_defs(i).is_some_and(|(f, n)| (f..f + n).contains(&v));
                if exec_changed || !whole {
                    return false;
                }
                ended = true;
                break;
            }
            exec_changed |= sp.exec;
        }
        if ended {
            continue;
        }
        for s in f.blocks[blk].term.successors() {
            let s = s.index();
            if !seen[s][exec_changed as usize] {
                seen[s][exec_changed as usize] = true;
                work.push((s, 0, exec_changed));
            }
        }
    }
    true
}

/// A copy of `width` VGPRs, `v[D..D+width] ← v[S..S+width]`, at `k` of a block: one
/// `v_mov_b32`, or two adjacent ones moving a pair to an even pair apart from it (the
/// allocator splits a loaded fragment that way). Returns D, S and the width.
fn vgpr_copy(insts: &[Inst], k: usize) -> Option<(u16, u16, u16)> {
    let one = |i: Option<&Inst>| match i.and_then(plain_move) {
        Some((
            Opcode::VMovB32,
            Operand::Vgpr { first: d, count: 1 },
            Operand::Vgpr { first: s, count: 1 },
        )) if d != s => Some((d, s)),
        _ => None,
    };
    let (d, s) = one(insts.get(k))?;
    let pair = one(insts.get(k + 1)) == Some((d + 1, s + 1)) && d % 2 == 0 && d.abs_diff(s) >= 2;
    Some((d, s, if pair { 2 } else { 1 }))
}

/// The copy `v[D..D+w] ← v[S..S+w]` at `k` of block `b` where the instruction that wrote
/// `v[S..S+w]` whole (earlier in the block, or in the only predecessor when that jumps here)
/// can write `v[D..D+w]` instead: nothing between touches either range or EXEC, and the
/// sources' values are not read after the copy. Returns the defining instruction's place.
fn coalescible(
    f: &PhysFunction,
    spans: &Spans,
    preds: &[Vec<usize>],
    b: usize,
    k: usize,
    (d, s, w): (u16, u16, u16),
) -> Option<(usize, usize)> {
    let last = k + w as usize - 1;
    let (mut blk, mut end) = (b, k);
    loop {
        let insts = f.blocks[blk].insts[..end].iter().zip(&spans[blk][..end]);
        for (j, (i, sp)) in insts.enumerate().rev() {
            // The definition writes `vS`: only an instruction touching the ranges can be it.
            if (sp.meets(&(s..s + w)) || sp.meets(&(d..d + w)))
                && touches_either(i, s..s + w, d..d + w)
            {
                if whole_vgpr_defs(i) != Some((s, w)) {
                    return None;
                }
                // `vD` may be a source of the definition itself (read before the write).
                let ok = (d..d + w).all(|r| !touches(i, r, true))
                    && (s..s + w).all(|r| dead_after(f, spans, b, last, r));
                return ok.then_some((blk, j));
            }
            if sp.exec {
                return None;
            }
        }
        let [p] = preds[blk].as_slice() else {
            return None;
        };
        let jumps_here = f.blocks[*p].term == PhysTerminator::Jump(MBlock::new(blk));
        if blk != b || !jumps_here {
            return None;
        }
        blk = *p;
        end = f.blocks[blk].insts.len();
    }
}

/// Backward copy coalescing: each `v_mov_b32 vD, vS` whose source's definition can write `vD`
/// itself goes, the definition renamed (the allocator's loop-carried copies, e.g. matmul's
/// accumulator after its last FMA). Returns how many moves went. A move that goes is first
/// replaced by an operand-less `s_nop`, which no later query sees (it touches no register
/// and not EXEC), and all of them are removed at the end: removing each at once shifted the
/// rest of its block per move.
fn coalesce_vgpr_copies(f: &mut PhysFunction) -> u32 {
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); f.blocks.len()];
    for (b, bd) in f.blocks.iter().enumerate() {
        for s in bd.term.successors() {
            preds[s.index()].push(b);
        }
    }
    let mut spans: Spans = f
        .blocks
        .iter()
        .map(|bd| bd.insts.iter().map(Span::of).collect())
        .collect();
    let mut gone: Vec<Vec<usize>> = vec![Vec::new(); f.blocks.len()];
    for (b, gone) in gone.iter_mut().enumerate() {
        let mut k = 0;
        while k < f.blocks[b].insts.len() {
            let copy = vgpr_copy(&f.blocks[b].insts, k);
            // A pair that cannot go as a pair may still go as its first move.
            let at = copy.and_then(|c| {
                let single = (c.0, c.1, 1);
                let found = coalescible(f, &spans, &preds, b, k, c).map(|x| (x, c));
                found.or_else(|| {
                    let first = (c.2 > 1).then(|| coalescible(f, &spans, &preds, b, k, single));
                    first.flatten().map(|x| (x, single))
                })
            });
            if let Some(((db, j), (d, s, w))) = at {
                let def = &mut f.blocks[db].insts[j];
                let infos = def.operand_infos();
                for (o, oi) in def.operands.iter_mut().zip(infos) {
                    if oi.access.writes()
                        && *o
                            == (Operand::Vgpr {
                                first: s,
                                count: w as u8,
                            })
                    {
                        *o = Operand::Vgpr {
                            first: d,
                            count: w as u8,
                        };
                    }
                }
                spans[db][j] = Span::of(def);
                for g in k..k + w as usize {
                    f.blocks[b].insts[g] = Inst::new(Opcode::SNop, &[]);
                    spans[b][g] = Span::of(&f.blocks[b].insts[g]);
                    gone.push(g);
                }
                k += w as usize;
                continue;
            }
            k += 1;
        }
    }
    remove_gone(f, gone)
}

/// Removes the instructions at the ascending positions `gone` lists per block (the coalescing
/// passes' placeholders); returns how many went.
fn remove_gone(f: &mut PhysFunction, gone: Vec<Vec<usize>>) -> u32 {
    let mut removed = 0;
    for (bd, gone) in f.blocks.iter_mut().zip(gone) {
        removed += gone.len() as u32;
        let mut next = gone.into_iter().peekable();
        let mut at = 0;
        bd.insts.retain(|_| {
            let keep = next.next_if_eq(&at).is_none();
            at += 1;
            keep
        });
    }
    removed
}

/// A set of ordinary SGPRs (`s0`..`s101`) as a bit mask.
type SgprMask = u128;

/// The ordinary SGPRs `i` reads and those it writes, as masks. An operand beyond the opcode
/// table's count is taken as read and not as written (what keeps a value live).
fn sgpr_access(i: &Inst) -> (SgprMask, SgprMask) {
    let infos = i.operand_infos();
    let (mut reads, mut writes) = (0, 0);
    for (k, o) in i.operands.iter().enumerate() {
        let Operand::Sgpr { first, count } = *o else {
            continue;
        };
        if first as u32 + count as u32 > 102 {
            continue;
        }
        let mask = ((1u128 << count) - 1) << first;
        match infos.get(k) {
            Some(oi) => {
                if oi.access.reads() {
                    reads |= mask;
                }
                if oi.access.writes() {
                    writes |= mask;
                }
            }
            None => reads |= mask,
        }
    }
    (reads, writes)
}

/// The ordinary SGPRs live out of each block: read on some path before being written. A
/// scalar write is always whole, so any write ends a value (unlike a VGPR's under EXEC).
fn sgpr_live_out(f: &PhysFunction) -> Vec<SgprMask> {
    let n = f.blocks.len();
    // Per block: read before any write in it, and written in it.
    let (mut uses, mut defs) = (vec![0; n], vec![0; n]);
    for (b, bd) in f.blocks.iter().enumerate() {
        for i in &bd.insts {
            let (r, w) = sgpr_access(i);
            uses[b] |= r & !defs[b];
            defs[b] |= w;
        }
    }
    let (mut live_in, mut live_out) = (vec![0 as SgprMask; n], vec![0 as SgprMask; n]);
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..n).rev() {
            let out = f.blocks[b]
                .term
                .successors()
                .iter()
                .fold(0, |m, s| m | live_in[s.index()]);
            let inn = uses[b] | (out & !defs[b]);
            if (out, inn) != (live_out[b], live_in[b]) {
                (live_out[b], live_in[b]) = (out, inn);
                changed = true;
            }
        }
    }
    live_out
}

/// Whether SGPR `s`'s value after instruction `k` of `insts` (a block whose live-out set is
/// `out`) is never read: written before any read in the block, or neither read there nor
/// live out.
fn sgpr_dead_after(insts: &[Inst], out: SgprMask, k: usize, s: u16) -> bool {
    let bit = 1u128 << s;
    for i in &insts[k + 1..] {
        let (r, w) = sgpr_access(i);
        if r & bit != 0 {
            return false;
        }
        if w & bit != 0 {
            return true;
        }
    }
    out & bit == 0
}

/// The index of `i`'s only operand that reads SGPR `s`, when that operand is `s` alone and
/// only read (an operand that only writes `s` may be there: reads come before writes).
fn only_read(i: &Inst, s: u16) -> Option<usize> {
    one_operand(i, s, |a| a.reads(), crate::isa::Access::R)
}

/// The index of `i`'s only operand that writes SGPR `s`, when that operand is `s` alone and
/// only written (an operand that only reads `s` may be there).
fn only_write(i: &Inst, s: u16) -> Option<usize> {
    one_operand(i, s, |a| a.writes(), crate::isa::Access::W)
}

/// The one operand of `i` naming SGPR `s` with an access `pick` selects, when it names `s`
/// alone with access `want` exactly (an operand beyond the opcode table's count: none).
fn one_operand(
    i: &Inst,
    s: u16,
    pick: fn(crate::isa::Access) -> bool,
    want: crate::isa::Access,
) -> Option<usize> {
    let infos = i.operand_infos();
    let mut found = None;
    for (k, o) in i.operands.iter().enumerate() {
        let Operand::Sgpr { first, count } = *o else {
            continue;
        };
        if !(first <= s && s < first + count as u16) {
            continue;
        }
        let access = infos.get(k)?.access;
        if pick(access) {
            if count != 1 || access != want || found.is_some() {
                return None;
            }
            found = Some(k);
        }
    }
    found
}

/// Backward coalescing of `s_mov_b32 sD, sS` at `k`: the instruction of the block that wrote
/// `sS` (its only write operand naming it, not read-modify-write) writes `sD` instead, when
/// nothing in between touches `sS` or `sD`, it does not write `sD` otherwise, and `sS` is dead
/// after the move. Returns the definition's index and operand.
fn sgpr_def_writes(
    insts: &[Inst],
    out: SgprMask,
    k: usize,
    (d, s): (u16, u16),
) -> Option<(usize, usize)> {
    let both = 1u128 << d | 1u128 << s;
    for j in (0..k).rev() {
        let (r, w) = sgpr_access(&insts[j]);
        if (r | w) & both == 0 {
            continue;
        }
        if w & 1u128 << s == 0 || w & 1u128 << d != 0 {
            return None;
        }
        let at = only_write(&insts[j], s)?;
        return sgpr_dead_after(insts, out, k, s).then_some((j, at));
    }
    None
}

/// Forward copy propagation of `s_mov_b32 sD, sS` at `k`: every later read of `sD` in the
/// block reads `sS` instead, when each is a plain read of `sD` alone, `sS` keeps the copied
/// value until the last of them, and `sD`'s value is dead after them (written again, or not
/// live out; when `sS` is written first, dead from there). Where `sS` is written while `sD` is
/// still live, the values that write begins ([`sgpr_chain`]) may move once to another SGPR
/// below `limit` that nothing touches while they live and whose value is dead there, so that
/// `sS` keeps the copy (stencil_pipelined's `s_mov_b32 s15, s6` of a preloaded argument whose
/// `s6` the next block of set-up overwrote). Returns the operands to rename (instruction,
/// operand, new SGPR).
fn sgpr_copy_reads(
    insts: &[Inst],
    out: SgprMask,
    k: usize,
    (d, s): (u16, u16),
    limit: u16,
) -> Option<Vec<(usize, usize, u16)>> {
    let mut renames = Vec::new();
    // The last instruction of the moved values of `sS`, once they moved.
    let mut moved: Option<usize> = None;
    for (j, i) in insts.iter().enumerate().skip(k + 1) {
        let (r, w) = sgpr_access(i);
        if r & 1u128 << d != 0 {
            renames.push((j, only_read(i, d)?, s));
        }
        if w & 1u128 << d != 0 {
            return Some(renames);
        }
        if moved.is_some_and(|e| j <= e) || w & 1u128 << s == 0 {
            continue;
        }
        if sgpr_dead_after(insts, out, j, d) {
            return Some(renames);
        }
        if moved.is_some() {
            return None;
        }
        let (e, at) = sgpr_chain(insts, out, j, s)?;
        let quiet = |x: u16| {
            let bit = 1u128 << x;
            insts[j..=e].iter().all(|i| {
                let (r, w) = sgpr_access(i);
                (r | w) & bit == 0
            })
        };
        let to = (0..limit)
            .find(|&x| x != d && x != s && quiet(x) && sgpr_dead_after(insts, out, j - 1, x))?;
        renames.extend(at.into_iter().map(|(j, o)| (j, o, to)));
        moved = Some(e);
    }
    (out & 1u128 << d == 0).then_some(renames)
}

/// The values SGPR `s` holds from instruction `j` of `insts` (which writes it) while it is read
/// in the block: up to the last read before a write that does not read it, when `s` is not live
/// out with them. Returns that last instruction and every operand naming `s` up to it but the
/// reads by `j` itself (of the value before), each `s` alone (a tuple operand, or `j` reading
/// and writing one operand: `None`).
fn sgpr_chain(
    insts: &[Inst],
    out: SgprMask,
    j: usize,
    s: u16,
) -> Option<(usize, Vec<(usize, usize)>)> {
    let bit = 1u128 << s;
    let mut at = Vec::new();
    let mut last = j;
    for (x, i) in insts.iter().enumerate().skip(j) {
        let (r, w) = sgpr_access(i);
        if x > j && r & bit == 0 && w & bit != 0 {
            return Some((last, at));
        }
        if (r | w) & bit == 0 {
            continue;
        }
        let infos = i.operand_infos();
        for (o, op) in i.operands.iter().enumerate() {
            let Operand::Sgpr { first, count } = *op else {
                continue;
            };
            if !(first <= s && s < first + count as u16) {
                continue;
            }
            let access = infos.get(o)?.access;
            // `j` itself reads the value before the chain (the copy's) where it reads `s`.
            if x == j && !access.writes() {
                continue;
            }
            if count != 1 || (x == j && access.reads()) {
                return None;
            }
            at.push((x, o));
        }
        last = x;
    }
    (out & bit == 0).then_some((last, at))
}

/// Passes of [`coalesce_sgpr_copies`] over a block at most (each scans the block's copies).
const SGPR_COPY_ROUNDS: usize = 4;

/// SGPR copy coalescing: each `s_mov_b32 sD, sS` of a block goes when the instruction that
/// wrote `sS` there can write `sD` itself ([`sgpr_def_writes`]), or else when its readers can
/// read `sS` ([`sgpr_copy_reads`]). The allocator leaves such copies where a single it keeps
/// in one SGPR (regalloc2's `Int` register holding several values over the kernel) meets a
/// tuple dword: a preloaded length copied out of the kernel arguments and its shifted value
/// copied into a buffer descriptor's size word (`s_mov_b32 s33, s4; s_lshl_b32 s15, s33, 2;
/// s_mov_b32 s2, s15` becomes `s_lshl_b32 s2, s4, 2`). Scalar values have no lanes, so a
/// write is whole and EXEC does not matter; a read moved to `sS` sees the value the move
/// copied, and `waitcnt`/`hazards` run after. Returns how many moves went.
fn coalesce_sgpr_copies(f: &mut PhysFunction) -> u32 {
    let live_out = sgpr_live_out(f);
    // A value moved to another SGPR takes one the kernel already uses.
    let limit = f.usage.sgprs.min(102) as u16;
    let mut gone: Vec<Vec<usize>> = vec![Vec::new(); f.blocks.len()];
    for (b, gone) in gone.iter_mut().enumerate() {
        let insts = &mut f.blocks[b].insts;
        // A copy's later neighbour may be what keeps it (writing its source while it is
        // live): passes repeat while copies go.
        for _ in 0..SGPR_COPY_ROUNDS {
            let before = gone.len();
            for k in 0..insts.len() {
                let Some((d, s)) = sgpr_move32(&insts[k]).filter(|(d, s)| d != s) else {
                    continue;
                };
                if let Some((j, at)) = sgpr_def_writes(insts, live_out[b], k, (d, s)) {
                    insts[j].operands[at] = Operand::s(d);
                } else if let Some(renames) = sgpr_copy_reads(insts, live_out[b], k, (d, s), limit)
                {
                    for (j, at, to) in renames {
                        insts[j].operands[at] = Operand::s(to);
                    }
                } else {
                    continue;
                }
                // Live-out sets stay true: the move's source was live where its reads now
                // are, a renamed definition is dead where the move was, and values moved to
                // another SGPR are dead at the block's end.
                insts[k] = Inst::new(Opcode::SNop, &[]);
                gone.push(k);
            }
            if gone.len() == before {
                break;
            }
        }
        gone.sort_unstable();
    }
    remove_gone(f, gone)
}

/// Runs the peepholes over every block of `f`; returns how many instructions they removed.
pub fn run_peepholes(f: &mut PhysFunction) -> u32 {
    let mut removed = 0;
    for b in &mut f.blocks {
        // Most blocks have neither a self-move nor a pair of halves next to each other: then
        // the pass below gives the block back unchanged, and is not run (moving every
        // instruction into a new vector was a third of the peepholes' cost).
        let pair_at = |k: usize| {
            k > 0
                && matches!(
                    (sgpr_move32(&b.insts[k - 1]), sgpr_move32(&b.insts[k])),
                    (Some(a), Some(c)) if pair_move(a, c).is_some()
                )
        };
        let any = (0..b.insts.len())
            .any(|k| matches!(plain_move(&b.insts[k]), Some((_, d, s)) if d == s) || pair_at(k));
        if !any {
            continue;
        }
        let before = b.insts.len();
        // Moves to themselves go and split pair copies merge in one pass: a pair's halves
        // are adjacent once the self-moves between them are gone.
        let mut out: Vec<Inst> = Vec::with_capacity(b.insts.len());
        for i in b.insts.drain(..) {
            if matches!(plain_move(&i), Some((_, d, s)) if d == s) {
                continue;
            }
            let merged = match (out.last().and_then(sgpr_move32), sgpr_move32(&i)) {
                (Some(a), Some(c)) => pair_move(a, c),
                _ => None,
            };
            match merged {
                Some(m) => *out.last_mut().expect("a previous move") = m,
                None => out.push(i),
            }
        }
        b.insts = out;
        removed += (before - b.insts.len()) as u32;
    }
    removed + coalesce_sgpr_copies(f) + coalesce_vgpr_copies(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codeobj::metadata::KernelMeta;
    use crate::mir::{BranchCond, KernelAbi};
    use crate::Target;

    fn func(blocks: Vec<(Vec<Inst>, PhysTerminator)>) -> PhysFunction {
        let abi = KernelAbi {
            target: Target::Gfx942,
            meta: KernelMeta::new("t"),
            workgroup_ids: [true, false, false],
            workitem_dims: 1,
            lds_bytes: 0,
        };
        PhysFunction::from_blocks(abi, blocks)
    }
    fn add(d: u16, a: u16, b: u16) -> Inst {
        Inst::new(
            Opcode::VAddF32,
            &[Operand::v(d), Operand::v(a), Operand::v(b)],
        )
    }
    fn mov(d: u16, s: u16) -> Inst {
        Inst::new(Opcode::VMovB32, &[Operand::v(d), Operand::v(s)])
    }
    fn exec_all() -> Inst {
        Inst::new(
            Opcode::SMovB64,
            &[Operand::Special(SpecialReg::Exec), Operand::InlineInt(-1)],
        )
    }
    /// A reader of `v` that is not a move.
    fn store(v: u16) -> Inst {
        add(9, v, v)
    }

    #[test]
    fn a_copy_of_a_dead_result_is_written_by_its_definition() {
        // Block 0 defines v1, block 1 (its only predecessor jumps to it) copies it to v0,
        // which the loop reads; v1 is written again before any read.
        let mut f = func(vec![
            (vec![add(1, 0, 2)], PhysTerminator::Jump(MBlock::new(1))),
            (
                vec![mov(0, 1)],
                PhysTerminator::Branch {
                    cond: BranchCond::Scc1,
                    taken: MBlock::new(0),
                    not_taken: MBlock::new(2),
                },
            ),
            (vec![store(0)], PhysTerminator::Return),
        ]);
        assert_eq!(run_peepholes(&mut f), 1);
        assert_eq!(f.blocks[0].insts, vec![add(0, 0, 2)]);
        assert!(f.blocks[1].insts.is_empty());
    }

    /// `v_lshlrev_b64 v[d:d+1], 1, v[s:s+1]`: a whole write of a pair.
    fn shl64(d: u16, s: u16) -> Inst {
        Inst::new(
            Opcode::VLshlrevB64,
            &[
                Operand::Vgpr { first: d, count: 2 },
                Operand::InlineInt(1),
                Operand::Vgpr { first: s, count: 2 },
            ],
        )
    }

    #[test]
    fn a_split_pair_is_written_by_its_definition() {
        // v[4:5] defined, moved to v[8:9], read there, and written whole again (as a loop's
        // next load would): the definition writes v[8:9] and both moves go.
        let mut f = func(vec![(
            vec![
                shl64(4, 0),
                mov(8, 4),
                mov(9, 5),
                shl64(4, 2),
                store(8),
                store(9),
                store(4),
            ],
            PhysTerminator::Return,
        )]);
        assert_eq!(run_peepholes(&mut f), 2);
        assert_eq!(
            f.blocks[0].insts,
            vec![shl64(8, 0), shl64(4, 2), store(8), store(9), store(4)]
        );
        // The odd half of the source read after the moves, or an odd destination: kept.
        for insts in [
            vec![shl64(4, 0), mov(8, 4), mov(9, 5), store(5)],
            vec![shl64(4, 0), mov(7, 4), mov(8, 5), store(7)],
        ] {
            let mut f = func(vec![(insts.clone(), PhysTerminator::Return)]);
            assert_eq!(run_peepholes(&mut f), 0);
            assert_eq!(f.blocks[0].insts, insts);
        }
    }

    #[test]
    fn a_copy_stays_when_the_source_is_read_later_or_exec_changes() {
        // v1 read after the copy.
        let mut read_later = func(vec![(
            vec![add(1, 0, 2), mov(0, 1), store(1)],
            PhysTerminator::Return,
        )]);
        // EXEC set between the definition and the copy (the copy's lanes differ).
        let mut exec_between = func(vec![(
            vec![add(1, 0, 2), exec_all(), mov(0, 1), store(0)],
            PhysTerminator::Return,
        )]);
        // v1 written again only under another EXEC before the loop reads it: lanes of the
        // first value may survive there.
        let mut partial_rewrite = func(vec![
            (
                vec![add(1, 3, 2), mov(0, 1)],
                PhysTerminator::Jump(MBlock::new(1)),
            ),
            (
                vec![exec_all(), add(1, 0, 2), store(1)],
                PhysTerminator::Return,
            ),
        ]);
        // A direct-to-LDS load names a VGPR it does not write.
        let mut lds_load = Inst::new(
            Opcode::BufferLoadDword,
            &[
                Operand::v(1),
                Operand::v(2),
                Operand::Sgpr { first: 8, count: 4 },
                Operand::InlineInt(0),
            ],
        );
        lds_load.mods.offen = true;
        lds_load.mods.lds = true;
        let mut into_lds = func(vec![(
            vec![add(1, 3, 2), lds_load, mov(0, 1), store(0)],
            PhysTerminator::Return,
        )]);
        for f in [
            &mut read_later,
            &mut exec_between,
            &mut partial_rewrite,
            &mut into_lds,
        ] {
            let before = f.blocks.clone();
            assert_eq!(run_peepholes(f), 0);
            assert_eq!(f.blocks, before);
        }
    }

    fn sop2(op: Opcode, d: u16, a: u16, b: Operand) -> Inst {
        Inst::new(op, &[Operand::s(d), Operand::s(a), b])
    }
    fn smov(d: u16, s: u16) -> Inst {
        Inst::new(Opcode::SMovB32, &[Operand::s(d), Operand::s(s)])
    }
    /// A reader of `s` that is not a move (writes s90).
    fn sread(s: u16) -> Inst {
        sop2(Opcode::SAddU32, 90, s, Operand::InlineInt(1))
    }

    #[test]
    fn a_length_is_shifted_into_its_descriptor_word_in_place() {
        // s33 ← s4 (a preloaded length copied out), s15 ← s33 << 2, s2 ← s15 (the size word):
        // one shift from s4 into s2.
        let mut f = func(vec![(
            vec![
                smov(33, 4),
                sop2(Opcode::SLshlB32, 15, 33, Operand::InlineInt(2)),
                smov(2, 15),
                sread(2),
            ],
            PhysTerminator::Return,
        )]);
        assert_eq!(run_peepholes(&mut f), 2);
        assert_eq!(
            f.blocks[0].insts,
            vec![
                sop2(Opcode::SLshlB32, 2, 4, Operand::InlineInt(2)),
                sread(2)
            ]
        );
    }

    #[test]
    fn a_copy_whose_source_is_overwritten_moves_the_new_values_to_a_dead_sgpr() {
        // s15 ← s6, then s6 rewritten (read once) while s15 is still read.
        let insts = vec![
            smov(15, 6),
            sop2(Opcode::SAddU32, 6, 15, Operand::InlineInt(3)),
            sread(6),
            sread(15),
        ];
        // No SGPR below the kernel's count to move them to: kept.
        let mut none_free = func(vec![(insts.clone(), PhysTerminator::Return)]);
        assert_eq!(run_peepholes(&mut none_free), 0);
        assert_eq!(none_free.blocks[0].insts, insts);
        // s0 is dead and untouched: the new values go there and s6 keeps the copy.
        let mut f = func(vec![(insts, PhysTerminator::Return)]);
        f.usage.sgprs = 20;
        assert_eq!(run_peepholes(&mut f), 1);
        assert_eq!(
            f.blocks[0].insts,
            vec![
                sop2(Opcode::SAddU32, 0, 6, Operand::InlineInt(3)),
                sread(0),
                sread(6)
            ]
        );
    }

    #[test]
    fn an_sgpr_copy_stays_when_its_value_is_needed_elsewhere() {
        let next = PhysTerminator::Jump(MBlock::new(1));
        let tail = (vec![sread(15), sread(6)], PhysTerminator::Return);
        for (insts, term) in [
            // The source rewritten while the copy is live out (no SGPR free to move it to).
            (
                vec![
                    smov(15, 6),
                    sop2(Opcode::SAddU32, 6, 6, Operand::InlineInt(1)),
                ],
                next.clone(),
            ),
            // The definition reads its destination (`s_addk_i32`): it cannot write the copy's.
            (
                vec![
                    Inst::new(Opcode::SAddkI32, &[Operand::s(6), Operand::InlineInt(1)]),
                    smov(15, 6),
                    sop2(Opcode::SAddU32, 6, 6, Operand::InlineInt(1)),
                ],
                next.clone(),
            ),
            // The copy read as half of a pair.
            (
                vec![
                    smov(15, 6),
                    Inst::new(
                        Opcode::SMovB64,
                        &[
                            Operand::Sgpr {
                                first: 20,
                                count: 2,
                            },
                            Operand::Sgpr {
                                first: 14,
                                count: 2,
                            },
                        ],
                    ),
                ],
                next,
            ),
        ] {
            let mut f = func(vec![(insts.clone(), term), tail.clone()]);
            assert_eq!(run_peepholes(&mut f), 0, "{insts:?}");
            assert_eq!(f.blocks[0].insts, insts);
        }
    }
}

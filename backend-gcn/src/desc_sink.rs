//! Late buffer descriptors: takes a scheduled [`MachineFunction`] and moves, in the entry block,
//! the instructions that only build one buffer descriptor (its kernarg `s_load`, the
//! `s_bfe`/`s_lshl`/`s_or` of its words, the `Build`) after the last use of another descriptor
//! that dies first, so that both descriptors' quads can share SGPRs (a descriptor is read only
//! when its memory instruction issues). The `s_load` goes right after that last use (its
//! latency hidden behind what follows), the rest right after the first instruction that waits
//! for a load issued before anyway (so one `s_waitcnt` serves both), and only if that is before
//! the descriptor's first use (or the block's end when the first use is in a later block).
//! A descriptor built from a preloaded address whose length pair isel loads alone (a slot
//! crossing the preloaded prefix) loads its whole slot again when moved ([`Reload`]), so the
//! preloaded address is not kept live until the move's target.
//! Gives the same function with the moved instructions; nothing else changes order.
//!
//! Then every descriptor's words of the entry block are built late ([`builds_late`]): right
//! after the last other reader of a word they are built from (a buffer's length) before the
//! first descriptor use, so the words are computed over the loaded ones in place, after the
//! prologue's kernarg pointer and workgroup id and size have died; but not past the first wait
//! for a scalar load issued before them (`first_wait`), whose latency they hide.
//!
//! Then a descriptor first read after the entry block's first wait for a vector load has its
//! words built right before that wait ([`words_behind_loads`]), in the loads' latency.
//!
//! Also: an `Extract` of SGPRs read after every other reader of its source tuple in the block
//! goes right before the last of them ([`extracts_early`]), so the tuple dies there and a
//! result may be computed over it (a buffer's length, read from the quad its descriptor is
//! built over: `s_bfe_u64 s[10:11], s[10:11], ..` instead of a second pair); and the
//! `Extract`s of a loaded tuple read by nothing else go before the first reader of any of
//! their results, so the tuple dies there whole (hash_chain's `rounds`, after `out`'s length in its
//! quad, no longer holds the quad's last SGPR until the loop).
//!
//! Also: a constant's `s_mov_b32` read only later in its own block goes right before its
//! first reader ([`constants_late`]), not where the latency schedule hoisted it.
//!
//! Safe because the moved instructions read only the kernarg pointer (or the preloaded kernarg
//! SGPRs, which nothing writes), the shared config-word
//! pair and each other (all defined earlier), nothing else reads their results, the `s_load`
//! reads memory no kernel writes, and the scalar ALU ones (which write SCC) are only put where
//! SCC is dead: the next instruction touching SCC writes it first, or nothing reads it before
//! the block ends.

use cranelift_entity::EntityRef;
use rustc_hash::FxHashMap as HashMap;

use crate::isa::Format;
use crate::isa::Operand;
use crate::mir::{
    implicit, AbiValue, MBlock, MInst, MOpcode, MOperand, MachineFunction, RegClass, Terminator,
    VReg,
};

/// Where each vreg is read: `(block index, instruction index)`, `usize::MAX` for a terminator;
/// all vregs' readers in one array (made after every move, so without a map or a list per vreg).
struct Readers {
    /// Vreg `v`'s readers are `at[start[v]..start[v + 1]]`, in code order.
    start: Vec<u32>,
    at: Vec<(usize, usize)>,
}

impl Readers {
    /// `v`'s readers (`None` when there are none).
    fn get(&self, v: &VReg) -> Option<&[(usize, usize)]> {
        let r = &self.at[self.start[v.index()] as usize..self.start[v.index() + 1] as usize];
        (!r.is_empty()).then_some(r)
    }
}

impl std::ops::Index<&VReg> for Readers {
    type Output = [(usize, usize)];
    fn index(&self, v: &VReg) -> &[(usize, usize)] {
        self.get(v).unwrap_or(&[])
    }
}

/// `mf`'s [`Readers`], made only when `cache` holds none: the passes below share one table
/// (most of them move nothing), and a pass that moves an instruction or adds a vreg empties
/// `cache` before it does.
fn readers_in<'a>(cache: &'a mut Option<Readers>, mf: &MachineFunction) -> &'a Readers {
    cache.get_or_insert_with(|| readers(mf))
}

/// The passes of this module, in order (see the module docs), on a scheduled function.
pub fn run(mf: &mut MachineFunction) {
    let mut cache = None;
    sink_descriptors(mf, &mut cache);
    builds_late(mf, &mut cache);
    words_behind_loads(mf, &mut cache);
    extracts_early(mf, &mut cache);
    constants_late(mf, &mut cache);
}

fn readers(mf: &MachineFunction) -> Readers {
    // Every read in code order, `f` called with (vreg, block, instruction).
    let each = |f: &mut dyn FnMut(VReg, usize, usize)| {
        for (b, bd) in mf.blocks.iter() {
            for (k, i) in bd.insts.iter().enumerate() {
                for u in i.uses() {
                    f(u, b.index(), k);
                }
            }
            for (_, args) in bd.term.successors() {
                for &a in args {
                    f(a, b.index(), usize::MAX);
                }
            }
        }
    };
    let mut start = vec![0u32; mf.vregs.len() + 1];
    each(&mut |v, _, _| start[v.index() + 1] += 1);
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let mut next = start.clone();
    let mut at = vec![(0, 0); *start.last().unwrap_or(&0) as usize];
    each(&mut |v, b, k| {
        at[next[v.index()] as usize] = (b, k);
        next[v.index()] += 1;
    });
    Readers { start, at }
}

/// A 4-dword SGPR `Build`: a buffer descriptor.
fn descriptor(mf: &MachineFunction, i: &MInst) -> Option<VReg> {
    let d = i.defs().next()?;
    let v = mf.vregs[d];
    (i.opcode == MOpcode::Build && v.class == RegClass::Sgpr && v.dwords == 4).then_some(d)
}

/// A memory instruction with a result (a load or a returning atomic).
fn is_load(i: &MInst) -> bool {
    matches!(i.opcode, MOpcode::Isa(op) if matches!(
        op.info().format,
        Format::Mubuf | Format::Mtbuf | Format::Global | Format::Flat | Format::Ds | Format::Smem
    )) && i.defs().next().is_some()
}

fn is_smem(i: &MInst) -> bool {
    matches!(i.opcode, MOpcode::Isa(op) if op.info().format == Format::Smem)
}

/// Scalar ALU (taken to read and write SCC, as the scheduler takes it, unless a plain move).
fn touches_scc(i: &MInst) -> bool {
    if (i.implicit_defs | i.implicit_uses) & implicit::SCC != 0 {
        return true;
    }
    matches!(i.opcode, MOpcode::Isa(op) if matches!(
        op.info().format,
        Format::Sop1 | Format::Sop2 | Format::Sopk | Format::Sopc
    ) && !matches!(op.info().name, "s_mov_b32" | "s_mov_b64" | "s_movk_i32"))
}

/// Whether SCC is dead before instruction `at` of `insts` (the block ending in `term`): the
/// first instruction from `at` on (but those in `moving`, which go before it) that touches SCC
/// only writes it (`s_cmp`), or none does and the terminator does not read it.
fn scc_dead_at(insts: &[MInst], term: &Terminator, at: usize, moving: &[usize]) -> bool {
    for (k, i) in insts.iter().enumerate().skip(at) {
        if moving.contains(&k) {
            continue;
        }
        if touches_scc(i) {
            return matches!(i.opcode, MOpcode::Isa(op) if op.info().format == Format::Sopc);
        }
    }
    match term {
        Terminator::Branch { cond, .. } => cond.reads() & implicit::SCC == 0,
        _ => true,
    }
}

/// Whether SCC is dead before instruction `at` of `insts` by what each instruction is known to
/// do: the first one from `at` on that reads SCC (isel's implicit use, or an opcode that reads
/// it) comes after one that writes it (isel's implicit def, or an `s_cmp`), or none reads it and
/// the terminator does not. Finer than [`scc_dead_at`], for which every scalar ALU op reads it.
fn scc_free_at(insts: &[MInst], term: &Terminator, at: usize) -> bool {
    for i in &insts[at..] {
        let (reads, writes) = match i.opcode {
            MOpcode::Isa(op) => (
                crate::isel::salu_reads_scc(op.info().name),
                op.info().format == Format::Sopc,
            ),
            _ => (false, false),
        };
        if reads || i.implicit_uses & implicit::SCC != 0 {
            return false;
        }
        if writes || i.implicit_defs & implicit::SCC != 0 {
            return true;
        }
    }
    match term {
        Terminator::Branch { cond, .. } => cond.reads() & implicit::SCC == 0,
        _ => true,
    }
}

/// The entry block's instruction defining each vreg it defines (made once for every
/// descriptor's [`chain`]).
fn entry_defs(mf: &MachineFunction) -> HashMap<VReg, usize> {
    let insts = &mf.blocks[mf.entry()].insts;
    let mut def_at: HashMap<VReg, usize> = HashMap::default();
    def_at.reserve(insts.len());
    for (k, i) in insts.iter().enumerate() {
        for d in i.defs() {
            def_at.insert(d, k);
        }
    }
    def_at
}

/// Instruction indices (ascending) of the entry block that only build the descriptor made at
/// `build`: followed back through operands while every reader of every result is in the set.
/// `def_at`: [`entry_defs`].
fn chain(
    mf: &MachineFunction,
    rd: &Readers,
    def_at: &HashMap<VReg, usize>,
    build: usize,
) -> Vec<usize> {
    let insts = &mf.blocks[mf.entry()].insts;
    let mut set = vec![build];
    let mut grew = true;
    while grew {
        grew = false;
        let uses: Vec<VReg> = set.iter().flat_map(|&k| insts[k].uses()).collect();
        for u in uses {
            let Some(&k) = def_at.get(&u) else { continue };
            if set.contains(&k) || matches!(insts[k].opcode, MOpcode::LiveIn(_)) {
                continue;
            }
            let only_chain = insts[k].defs().all(|d| {
                rd.get(&d)
                    .is_none_or(|r| r.iter().all(|&(b, j)| b == 0 && set.contains(&j)))
            });
            if only_chain && insts[k].implicit_defs & !implicit::SCC == 0 {
                set.push(k);
                grew = true;
            }
        }
    }
    set.sort_unstable();
    set
}

/// Moves one descriptor's instructions later if that lets it share SGPRs; true if it did.
/// `cache`: see [`readers_in`].
fn sink_one(mf: &mut MachineFunction, cache: &mut Option<Readers>) -> bool {
    let rd = readers_in(cache, mf);
    let entry = mf.entry();
    let insts = &mf.blocks[entry].insts;
    let n = insts.len();
    let descs: Vec<(usize, VReg)> = insts
        .iter()
        .enumerate()
        .filter_map(|(k, i)| descriptor(mf, i).map(|d| (k, d)))
        .collect();
    // Last reader in the entry block of each descriptor read nowhere else.
    let dies_at = |d: VReg| -> Option<usize> {
        let r = rd.get(&d)?;
        if r.iter().any(|&(b, j)| b != 0 || j == usize::MAX) {
            return None;
        }
        r.iter().map(|&(_, j)| j).max()
    };
    let mut def_at = None;
    for &(build, d) in &descs {
        let first_use = rd
            .get(&d)
            .and_then(|r| {
                r.iter()
                    .filter(|&&(b, j)| b == 0 && j != usize::MAX)
                    .map(|&(_, j)| j)
                    .min()
            })
            .unwrap_or(n);
        let set = chain(mf, rd, def_at.get_or_insert_with(|| entry_defs(mf)), build);
        let Some(&load) = set.iter().find(|&&k| is_smem(&insts[k])) else {
            continue;
        };
        if set.iter().filter(|&&k| is_smem(&insts[k])).count() != 1 {
            continue;
        }
        // The latest death of another descriptor before the first use, after the load.
        let Some(p) = descs
            .iter()
            .filter(|&&(_, o)| o != d)
            .filter_map(|&(_, o)| dies_at(o))
            .filter(|&p| p > load && p < first_use)
            .max()
        else {
            continue;
        };
        // The rest goes right after the first instruction that waits for a load issued by
        // `p` anyway (its `s_waitcnt` then also takes the `s_load`'s `lgkmcnt`, see
        // `waitcnt.rs`); without one the late `s_load` would cost a wait of its own.
        let loaded = |q: usize| is_load(&insts[q]) && !set.contains(&q);
        let def_at = |v: VReg| insts[..=p].iter().position(|i| i.defs().any(|x| x == v));
        let Some(r) = (p + 1..first_use.min(n))
            .find(|&k| !set.contains(&k) && insts[k].uses().any(|u| def_at(u).is_some_and(loaded)))
        else {
            continue;
        };
        // The next instruction staying in place (or the end).
        let at = (r + 1..n).find(|k| !set.contains(k)).unwrap_or(n);
        if !scc_dead_at(insts, &mf.blocks[entry].term, at, &set) {
            continue;
        }
        // The block changes (and `reload_address` may add a vreg): the readers are stale.
        *cache = None;
        let reload = reload_address(mf, &set, load);
        // Rebuild the block: the load after `p`, the rest before `at`.
        let old = std::mem::take(&mut mf.blocks[entry].insts);
        let mut load_inst = None;
        let mut rest_insts = Vec::new();
        let mut keep = Vec::with_capacity(n);
        for (k, i) in old.into_iter().enumerate() {
            if k == load {
                load_inst = Some(i);
            } else if set.contains(&k) {
                if let Some(r) = reload.filter(|r| r.addr == k) {
                    // The address now from the quad: its first pair.
                    let mut i = i;
                    i.opcode = MOpcode::Extract(0);
                    for o in i.ops.iter_mut() {
                        if matches!(o, MOperand::Use(_)) {
                            *o = MOperand::Use(r.quad);
                        }
                    }
                    rest_insts.push(i);
                    continue;
                }
                rest_insts.push(i);
            } else {
                keep.push((k, i));
            }
        }
        if let (Some(r), Some(l)) = (reload, load_inst.as_mut()) {
            // The pair the `s_load_dwordx2` gave is the quad's upper half.
            let pair = l.defs().next().expect("a load defines its result");
            l.opcode = MOpcode::Isa(crate::isel::op("s_load_dwordx4"));
            for o in l.ops.iter_mut() {
                match o {
                    MOperand::Def(_) => *o = MOperand::Def(r.quad),
                    MOperand::Phys(Operand::Imm(_)) => {
                        *o = MOperand::Phys(Operand::Imm(r.offset as i64))
                    }
                    _ => {}
                }
            }
            rest_insts.insert(
                0,
                MInst::pseudo(
                    MOpcode::Extract(2),
                    &[MOperand::Def(pair), MOperand::Use(r.quad)],
                ),
            );
        }
        let mut out = Vec::with_capacity(n);
        let mut load_inst = load_inst;
        let mut rest_insts = Some(rest_insts);
        for (k, i) in keep {
            if k == at {
                out.extend(rest_insts.take().unwrap_or_default());
            }
            out.push(i);
            if k == p {
                out.extend(load_inst.take());
            }
        }
        out.extend(rest_insts.take().unwrap_or_default());
        mf.blocks[entry].insts = out;
        return true;
    }
    false
}

/// A descriptor chain that builds its base from a preloaded address pair (`Extract` of the
/// preloaded kernarg tuple at instruction `addr`) and loads the rest of the buffer's slot (its
/// length and the dword after it) with `s_load_dwordx2` at instruction `load`: isel's shape
/// for a slot crossing the preloaded prefix (`isel::prologue`). Moved late, the chain would
/// keep the preloaded pair live until then; the whole slot is loaded again into `quad` instead
/// (`s_load_dwordx4` at byte `offset`), so the preloaded SGPRs die where nothing else reads them.
#[derive(Clone, Copy)]
struct Reload {
    addr: usize,
    quad: VReg,
    offset: u32,
}

/// The [`Reload`] of the chain `set` whose one scalar load is instruction `load`, if it has
/// that shape; makes the quad's vreg.
fn reload_address(mf: &mut MachineFunction, set: &[usize], load: usize) -> Option<Reload> {
    let insts = &mf.blocks[mf.entry()].insts;
    let l = &insts[load];
    let MOpcode::Isa(lop) = l.opcode else {
        return None;
    };
    if lop.info().name != "s_load_dwordx2" {
        return None;
    }
    let off = l.ops.iter().find_map(|o| match o {
        MOperand::Phys(Operand::Imm(x)) => u32::try_from(*x).ok(),
        _ => None,
    })?;
    let preloaded = |v: VReg| {
        insts.iter().any(|i| {
            i.opcode == MOpcode::LiveIn(AbiValue::KernargPreload) && i.defs().any(|d| d == v)
        })
    };
    let addr = set.iter().copied().find(|&k| {
        let i = &insts[k];
        let MOpcode::Extract(e) = i.opcode else {
            return false;
        };
        let (Some(d), Some(t)) = (i.defs().next(), i.uses().next()) else {
            return false;
        };
        mf.vregs[d].dwords == 2 && preloaded(t) && 4 * e as u32 + 8 == off
    })?;
    let quad = mf.vregs.push(crate::mir::VRegData {
        class: RegClass::Sgpr,
        dwords: 4,
    });
    Some(Reload {
        addr,
        quad,
        offset: off - 8,
    })
}

/// Moves descriptor builds late where that frees SGPRs (see the module docs); returns how many
/// descriptors moved.
fn sink_descriptors(mf: &mut MachineFunction, cache: &mut Option<Readers>) -> usize {
    let mut moved = 0;
    // Each move puts a descriptor after another's death; a descriptor moves at most once.
    while moved < 16 && sink_one(mf, cache) {
        moved += 1;
    }
    moved
}

/// The first instruction of the entry block after the first of `set` (ascending) that is not
/// in it and reads a scalar load issued before that one and not read before it (directly or
/// through `Extract`s): where the load's `s_waitcnt` goes. The schedule put the words before it,
/// hiding the load's latency; [`builds_late`] does not move them past it (the tall gemm, whose
/// hidden-argument `s_load`s were waited for right after the prologue's first dozen
/// instructions: 84,805 cycles on `mi300x` with the words before the wait, 87,133 after).
fn first_wait(mf: &MachineFunction, set: &[usize]) -> usize {
    let insts = &mf.blocks[mf.entry()].insts;
    let Some(&first) = set.first() else {
        return insts.len();
    };
    let extracts_pending = |i: &MInst, p: &[VReg]| {
        matches!(i.opcode, MOpcode::Extract(_)) && i.uses().any(|u| p.contains(&u))
    };
    let mut pending: Vec<VReg> = Vec::new();
    for i in &insts[..first] {
        if is_smem(i) || extracts_pending(i, &pending) {
            pending.extend(i.defs());
        } else if i.uses().any(|u| pending.contains(&u)) {
            // Its wait takes every scalar load issued before (they return out of order).
            pending.clear();
        }
    }
    for (k, i) in insts.iter().enumerate().skip(first) {
        if set.contains(&k) {
            continue;
        }
        if extracts_pending(i, &pending) {
            pending.extend(i.defs());
        } else if i.uses().any(|u| pending.contains(&u)) {
            return k;
        }
    }
    insts.len()
}

/// Builds the entry block's descriptors late: the scalar ALU words of every descriptor (its
/// [`chain`] but the `s_load`) and the constants only they read move, in their order, to right
/// after the last other instruction before the first descriptor use that reads a word they are
/// built from (a buffer's length, for the `i < len` compare). The length then dies where its
/// `num_records` word is computed, which may write over it (`s_lshl_b32 s14, s14, 2`) and the
/// descriptor is built in the quad the arguments were loaded to, and the prologue's kernarg
/// pointer, workgroup id and size have died by then. Returns how many instructions moved.
fn builds_late(mf: &mut MachineFunction, cache: &mut Option<Readers>) -> usize {
    let rd = readers_in(cache, mf);
    let entry = mf.entry();
    let insts = &mf.blocks[entry].insts;
    let n = insts.len();
    if !insts.iter().any(|i| descriptor(mf, i).is_some()) {
        return 0;
    }
    let def_at = entry_defs(mf);
    let in_entry = |d: VReg| rd.get(&d).is_some_and(|r| r.iter().all(|&(b, _)| b == 0));
    // Descriptors read before any of the words' sources is (a uniform load hoisted to the
    // block's start, `opt/speculate.rs`, whose descriptor must be built first): left where the
    // schedule put them, the others built late.
    let mut early: Vec<usize> = Vec::new();
    let (mut set, to) = loop {
        let mut set: Vec<usize> = Vec::new();
        // The early descriptors' words: neither moved nor counted as the sources' readers.
        let mut early_words: Vec<usize> = Vec::new();
        for (k, i) in insts.iter().enumerate() {
            if descriptor(mf, i).is_some() {
                let words = chain(mf, rd, &def_at, k)
                    .into_iter()
                    .filter(|&j| !is_smem(&insts[j]));
                if early.contains(&k) {
                    early_words.extend(words);
                } else {
                    set.extend(words);
                }
            }
        }
        let read_by_set = |d: VReg| {
            rd.get(&d)
                .is_some_and(|r| r.iter().all(|&(b, j)| b == 0 && set.contains(&j)))
        };
        let constants: Vec<usize> = (0..n)
            .filter(|&k| {
                let i = &insts[k];
                matches!(i.opcode, MOpcode::Isa(op) if op.info().format == Format::Sop2)
                    && i.uses().next().is_none()
                    && i.implicit_uses == 0
                    && i.defs().all(|d| in_entry(d) && read_by_set(d))
            })
            .collect();
        set.extend(constants);
        set.sort_unstable();
        set.dedup();
        if set.is_empty() {
            return 0;
        }
        // The words' sources, and the descriptors.
        let built_over: Vec<VReg> = set.iter().flat_map(|&j| insts[j].uses()).collect();
        let descs: Vec<(usize, VReg)> = set
            .iter()
            .filter_map(|&j| Some((j, descriptor(mf, &insts[j])?)))
            .collect();
        let other = |k: usize| !set.contains(&k) && !early_words.contains(&k);
        let first_use = (0..n)
            .find(|&k| other(k) && insts[k].uses().any(|u| descs.iter().any(|d| d.1 == u)))
            .unwrap_or(n);
        // Right after the last other reader of a source (a buffer's length, for `i < len`)
        // before the first use, where the sources die; else the words stay where the schedule
        // put them (between the address arithmetic it interleaved them with), once the
        // descriptors read before any source is are left out.
        let last_read = (0..first_use)
            .filter(|&k| other(k) && insts[k].uses().any(|u| built_over.contains(&u)))
            .max();
        if let Some(last_read) = last_read {
            break (set, last_read + 1);
        }
        if first_use == n {
            return 0;
        }
        let before = early.len();
        early.extend(
            descs
                .iter()
                .filter(|d| insts[first_use].uses().any(|u| u == d.1))
                .map(|d| d.0),
        );
        if early.len() == before {
            return 0;
        }
    };
    // Only what is before `to` moves (down); already in place if it is the run before `to`.
    set.retain(|&j| j < to);
    if set.iter().copied().eq(to - set.len()..to) {
        return 0;
    }
    if to > first_wait(mf, &set) {
        return 0;
    }
    // Every operand from outside the set is defined before `to`.
    let defined_before = |v: VReg| {
        insts[..to]
            .iter()
            .enumerate()
            .any(|(k, i)| !set.contains(&k) && i.defs().any(|d| d == v))
            || set.iter().any(|&j| insts[j].defs().any(|d| d == v))
    };
    if !set.iter().all(|&j| insts[j].uses().all(defined_before)) {
        return 0;
    }
    // Each moved SCC write is read by nothing, and `to` is not between an SCC write and
    // its reader.
    let term = &mf.blocks[entry].term;
    let scc_ok = set
        .iter()
        .all(|&j| !touches_scc(&insts[j]) || scc_free_at(insts, term, j + 1))
        && scc_free_at(insts, term, to);
    if !scc_ok {
        return 0;
    }
    *cache = None;
    let old = std::mem::take(&mut mf.blocks[entry].insts);
    let mut moved = Vec::new();
    let mut out = Vec::with_capacity(n);
    let mut rest = Vec::new();
    for (k, i) in old.into_iter().enumerate() {
        if set.contains(&k) {
            moved.push(i);
        } else if k < to {
            out.push(i);
        } else {
            rest.push(i);
        }
    }
    let count = moved.len();
    out.append(&mut moved);
    out.append(&mut rest);
    mf.blocks[entry].insts = out;
    count
}

/// Builds the words of each entry-block descriptor first read after the block's first wait for
/// a vector memory load (the first instruction reading a loaded result, where `s_waitcnt vmcnt`
/// goes) right before that wait: they run in the loads' latency, which costs no cycles, and their
/// SGPRs are free until then (vector_add's output quad, built before the loads issue, took the
/// dwords the group size's `s_load` could have used). Only descriptors read in the entry block
/// and nowhere before that wait; a word writing SCC moves only
/// where nothing reads SCC after it, and not between an SCC write and its reader. Returns how
/// many instructions moved.
fn words_behind_loads(mf: &mut MachineFunction, cache: &mut Option<Readers>) -> usize {
    let entry = mf.entry();
    let insts = &mf.blocks[entry].insts;
    let n = insts.len();
    // The first instruction reading what a vector memory load before it gave.
    let mut loaded: Vec<VReg> = Vec::new();
    let mut wait = None;
    for (k, i) in insts.iter().enumerate() {
        if i.uses().any(|u| loaded.contains(&u)) {
            wait = Some(k);
            break;
        }
        if is_load(i) && !is_smem(i) {
            loaded.extend(i.defs());
        }
    }
    let Some(w) = wait else { return 0 };
    let term = &mf.blocks[entry].term;
    if !scc_free_at(insts, term, w) {
        return 0;
    }
    let rd = readers_in(cache, mf);
    let def_at = entry_defs(mf);
    let mut before: Vec<Option<usize>> = vec![None; n];
    for (k, i) in insts.iter().enumerate() {
        let Some(d) = descriptor(mf, i) else { continue };
        let Some(r) = rd.get(&d) else { continue };
        let read_late = r.iter().all(|&(b, j)| b != 0 || (j != usize::MAX && j > w));
        let read_here = r.iter().any(|&(b, _)| b == 0);
        if !read_late || !read_here {
            continue;
        }
        // The words before the wait (a `Build` already after it stays).
        let words: Vec<usize> = chain(mf, rd, &def_at, k)
            .into_iter()
            .filter(|&j| !is_smem(&insts[j]) && j < w)
            .collect();
        let scc_ok = words
            .iter()
            .all(|&j| !touches_scc(&insts[j]) || scc_free_at(insts, term, j + 1));
        if !scc_ok || words.iter().copied().eq(w - words.len()..w) {
            continue;
        }
        for j in words {
            before[j] = Some(w);
        }
    }
    move_in_entry(mf, &before, cache)
}

/// The block, index and new index of an `Extract` of an SGPR tuple that is read after every
/// reader of that tuple in its block other than `Extract`s (and nowhere else), to go right
/// before the last of them when the tuple is defined earlier in the block.
fn late_extract(mf: &MachineFunction, rd: &Readers) -> Option<(MBlock, usize, usize)> {
    for (b, bd) in mf.blocks.iter() {
        let bi = b.index();
        for (k, i) in bd.insts.iter().enumerate() {
            let src = match (i.opcode, i.uses().next()) {
                (MOpcode::Extract(_), Some(s)) if mf.vregs[s].class == RegClass::Sgpr => s,
                _ => continue,
            };
            let last_other = rd[&src]
                .iter()
                .filter(|&&(rb, j)| {
                    rb != bi
                        || j == usize::MAX
                        || !matches!(bd.insts[j].opcode, MOpcode::Extract(_))
                })
                .map(|&(rb, j)| (rb == bi && j < k).then_some(j))
                .collect::<Option<Vec<usize>>>()
                .and_then(|js| js.into_iter().max());
            let def = bd.insts.iter().position(|x| x.defs().any(|d| d == src));
            if let (Some(j), Some(d)) = (last_other, def) {
                if d < j {
                    return Some((b, k, j));
                }
            }
        }
    }
    None
}

/// Puts the `Extract`s of each SGPR tuple loaded in the entry block (by an `s_load`) and read
/// only by `Extract`s there that come after the first instruction reading any of their results
/// right before that instruction, in their order; returns how many moved. The tuple then dies
/// there whole instead of holding a dword (a scalar argument loaded with a buffer) until the
/// `Extract` the schedule left late, where the descriptor built over the tuple needs it. An
/// `Extract` writes no SCC or memory, its source is defined before, and its own readers are
/// after that instruction.
fn extracts_together(mf: &mut MachineFunction, cache: &mut Option<Readers>) -> usize {
    let rd = readers_in(cache, mf);
    let entry = mf.entry();
    let insts = &mf.blocks[entry].insts;
    let n = insts.len();
    // Per instruction: the index it goes before.
    let mut before: Vec<Option<usize>> = vec![None; n];
    for (k, i) in insts.iter().enumerate() {
        let Some(t) = i.defs().next() else { continue };
        if !is_smem(i) || mf.vregs[t].class != RegClass::Sgpr || mf.vregs[t].dwords < 2 {
            continue;
        }
        let Some(r) = rd.get(&t) else { continue };
        let all_extracts = r.iter().all(|&(b, j)| {
            b == entry.index()
                && j != usize::MAX
                && j > k
                && matches!(insts[j].opcode, MOpcode::Extract(_))
        });
        if !all_extracts || r.len() < 2 {
            continue;
        }
        let first_read = r
            .iter()
            .filter_map(|&(_, j)| insts[j].defs().next())
            .filter_map(|d| rd.get(&d))
            .flat_map(|x| x.iter())
            .filter(|&&(b, j)| b == entry.index() && j != usize::MAX)
            .map(|&(_, j)| j)
            .min();
        let Some(f) = first_read else { continue };
        for &(_, j) in r {
            if j > f {
                before[j] = Some(f);
            }
        }
    }
    move_in_entry(mf, &before, cache)
}

/// Moves the entry block's instructions as `before` says (see `moved_before`); gives how many
/// moved (and drops the readers `cache` when some did).
fn move_in_entry(
    mf: &mut MachineFunction,
    before: &[Option<usize>],
    cache: &mut Option<Readers>,
) -> usize {
    if before.iter().all(Option::is_none) {
        return 0;
    }
    *cache = None;
    let entry = mf.entry();
    let insts = std::mem::take(&mut mf.blocks[entry].insts);
    let (out, moved) = moved_before(insts, before);
    mf.blocks[entry].insts = out;
    moved
}

/// `insts` with each instruction `j` that has `before[j] = Some(f)` moved to right before
/// instruction `f` (several before one `f` keep their order); gives how many moved.
fn moved_before(insts: Vec<MInst>, before: &[Option<usize>]) -> (Vec<MInst>, usize) {
    let n = insts.len();
    let mut at: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut moved = 0;
    for (j, b) in before.iter().enumerate() {
        if let Some(f) = b {
            at[*f].push(j);
            moved += 1;
        }
    }
    let mut slots: Vec<Option<MInst>> = insts.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(n);
    for j in 0..n {
        for &k in &at[j] {
            out.extend(slots[k].take());
        }
        if before[j].is_none() {
            out.extend(slots[j].take());
        }
    }
    (out, moved)
}

/// Moves the `Extract`s [`late_extract`] finds before their source's last other reader;
/// returns how many moved. An `Extract` writes no SCC or memory, so only its source's
/// definition bounds it; each move takes one from after the last other reader to before it.
fn extracts_early(mf: &mut MachineFunction, cache: &mut Option<Readers>) -> usize {
    let mut moved = extracts_together(mf, cache);
    while let Some((b, k, j)) = late_extract(mf, readers_in(cache, mf)) {
        *cache = None;
        let x = mf.blocks[b].insts.remove(k);
        mf.blocks[b].insts.insert(j, x);
        moved += 1;
    }
    moved
}

/// Moves every `s_mov_b32`/`s_movk_i32` of a constant into a one-dword SGPR vreg whose
/// readers are all later instructions of its own block right before the first of them. The
/// latency schedule gives such a move the height of what it feeds, so it went to the block's
/// start: a VOP3 literal held in an SGPR (gfx9's VOP3 takes none) kept one SGPR per constant
/// live across the block (hash_chain's prologue: 56 of them). A scalar move has no latency
/// to hide and reads nothing, so it may go anywhere before its readers. Returns the moves
/// moved.
fn constants_late(mf: &mut MachineFunction, cache: &mut Option<Readers>) -> usize {
    let rd = readers_in(cache, mf);
    let mut moved = 0;
    let keys: Vec<_> = mf.blocks.keys().collect();
    for b in keys {
        let insts = &mf.blocks[b].insts;
        let n = insts.len();
        // Per instruction: the index it moves before (its first reader), if it moves.
        let mut before: Vec<Option<usize>> = vec![None; n];
        for (k, i) in insts.iter().enumerate() {
            let MOpcode::Isa(op) = i.opcode else {
                continue;
            };
            if !matches!(op.info().name, "s_mov_b32" | "s_movk_i32")
                || i.uses().next().is_some()
                || i.implicit_uses != 0
                || i.implicit_defs != 0
            {
                continue;
            }
            let mut defs = i.defs();
            let (Some(d), None) = (defs.next(), defs.next()) else {
                continue;
            };
            let vd = mf.vregs[d];
            if vd.class != RegClass::Sgpr || vd.dwords != 1 {
                continue;
            }
            let Some(r) = rd.get(&d) else {
                continue;
            };
            if r.iter()
                .all(|&(rb, j)| rb == b.index() && j != usize::MAX && j > k)
            {
                let first = r.iter().map(|&(_, j)| j).min().unwrap_or(k);
                if first > k + 1 {
                    before[k] = Some(first);
                }
            }
        }
        if before.iter().all(Option::is_none) {
            continue;
        }
        let insts = std::mem::take(&mut mf.blocks[b].insts);
        let (out, count) = moved_before(insts, &before);
        moved += count;
        mf.blocks[b].insts = out;
    }
    if moved > 0 {
        *cache = None;
    }
    moved
}

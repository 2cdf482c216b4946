//! Dead-code elimination on the selected machine function: instructions whose results nobody
//! reads and that have no other effect, block parameters (with their arguments) that
//! nothing reads, and EXEC moves whose EXEC nothing reads.
//!
//! isel emits some values on the chance that they are needed (the buffer length loads, the
//! `alive` mask a `return` updates, lane masks of a condition also used as a value), and the
//! linearization leaves variables whose last writes nobody reads. Removing them here keeps the
//! scheduler, the allocator and the register counts free of them. Mark and sweep, so values
//! that only feed each other around a loop go too.
//!
//! An instruction is *removable* when it is a pseudo-instruction other than `LiveIn`, or a
//! SALU/VALU instruction, scalar load, buffer load or LDS read that writes no special register
//! but SCC/VCC, and neither of those flags it writes is read before the next write (flag
//! liveness over the CFG, terminators' branch conditions included). Removable instructions
//! live only when a live instruction, argument or parameter reads one of their results.

use cranelift_entity::EntityRef;

use crate::isa::{self, Format, Operand, SpecialReg};
use crate::mir::{implicit, MBlock, MInst, MOpcode, MOperand, MachineFunction, Terminator, VReg};

/// Where a vreg is defined.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Site {
    None,
    Inst(u32, u32),
    Param(u32, u32),
}

/// Whether the opcode only computes its destinations (no memory write, no control, no EXEC):
/// [`is_pure`], remembered per opcode the first time it is asked (each sweep asks for every
/// instruction, and the answer compares mnemonics; a table of every opcode made up front would
/// cost a process's first compile more than it saves).
fn pure_opcode(op: isa::Opcode) -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    /// 0: not asked yet; 1: not pure; 2: pure.
    static PURE: [AtomicU8; isa::OPCODE_COUNT] = [const { AtomicU8::new(0) }; isa::OPCODE_COUNT];
    let slot = &PURE[op as usize];
    match slot.load(Ordering::Relaxed) {
        0 => {
            let pure = is_pure(op);
            slot.store(1 + pure as u8, Ordering::Relaxed);
            pure
        }
        known => known == 2,
    }
}

/// [`pure_opcode`] from the mnemonic and format.
fn is_pure(op: isa::Opcode) -> bool {
    let info = op.info();
    let name = info.name;
    match info.format {
        Format::Sop1 | Format::Sop2 | Format::Sopk | Format::Sopc => {
            !name.contains("exec")
                && !name.contains("pc")
                && !name.starts_with("s_setreg")
                && !name.starts_with("s_rfe")
                && !name.starts_with("s_cbranch")
        }
        Format::Smem => name.starts_with("s_load") || name.starts_with("s_buffer_load"),
        Format::Vop1 | Format::Vop2 | Format::Vopc | Format::Vop3 | Format::Vop3p => {
            !name.starts_with("v_cmpx")
        }
        Format::Ds => {
            name.starts_with("ds_read")
                || name.contains("permute")
                || name.starts_with("ds_swizzle")
        }
        Format::Mubuf => name.starts_with("buffer_load"),
        _ => false,
    }
}

/// Special registers `inst` reads and writes as [`implicit`] bits, `None` for writes of a
/// register other than SCC/VCC (such an instruction is never removed).
pub(super) fn flags(inst: &MInst) -> (u8, Option<u8>) {
    let mut reads = inst.implicit_uses;
    let mut writes = inst.implicit_defs;
    let special = |o: &MOperand| matches!(o, MOperand::Phys(Operand::Special(_)));
    if let (MOpcode::Isa(op), true) = (inst.opcode, inst.ops.iter().any(special)) {
        let infos = isa::operand_infos(op, inst.encoding, inst.mods.glc);
        for (i, o) in inst.ops.iter().enumerate() {
            if let MOperand::Phys(Operand::Special(s)) = o {
                let bit = match s {
                    SpecialReg::Vcc | SpecialReg::VccLo | SpecialReg::VccHi => implicit::VCC,
                    SpecialReg::Exec | SpecialReg::ExecLo | SpecialReg::ExecHi => implicit::EXEC,
                    SpecialReg::M0 => implicit::M0,
                    _ => 0x80,
                };
                let w = infos.get(i).map(|x| x.access.writes()).unwrap_or(i == 0);
                let r = infos.get(i).map(|x| !matches!(x.access, isa::Access::W));
                if w {
                    writes |= bit;
                }
                if r.unwrap_or(i != 0) {
                    reads |= bit;
                }
            }
        }
    }
    let ok = writes & !(implicit::SCC | implicit::VCC) == 0;
    (reads, ok.then_some(writes))
}

const TRACKED: [u8; 2] = [implicit::SCC, implicit::VCC];

/// Per block: which of SCC/VCC are read before being written when the block is entered.
pub(super) fn flag_live_in(mf: &MachineFunction) -> Vec<u8> {
    flag_live_in_by(mf, |_, _, inst| flags(inst))
}

/// What the sweep asks of each instruction (its [`flags`] and EXEC accesses), worked out once
/// per instruction: the flag liveness, the mark, the sweep and the EXEC-move removal each
/// asked again, and every sweep after the first asked once more for every instruction left.
#[derive(Clone, Copy)]
struct InstFacts {
    /// [`flags`]: special registers read.
    reads: u8,
    /// [`flags`]: special registers written (`None`: one other than SCC/VCC).
    writes: Option<u8>,
    /// [`may_read_exec`].
    reads_exec: bool,
    /// [`writes_exec`].
    writes_exec: bool,
    /// [`is_exec_move`].
    exec_move: bool,
}

impl InstFacts {
    fn of(inst: &MInst) -> InstFacts {
        let (reads, writes) = flags(inst);
        InstFacts {
            reads,
            writes,
            reads_exec: may_read_exec_with(inst, reads),
            writes_exec: writes_exec_with(inst, writes),
            exec_move: is_exec_move(inst),
        }
    }

    /// Per block, per instruction.
    fn of_function(mf: &MachineFunction) -> Vec<Vec<InstFacts>> {
        mf.blocks
            .values()
            .map(|bd| bd.insts.iter().map(InstFacts::of).collect())
            .collect()
    }
}

/// [`flag_live_in`] from the instructions' facts.
fn flag_live_in_from(mf: &MachineFunction, facts: &[Vec<InstFacts>]) -> Vec<u8> {
    flag_live_in_by(mf, |b, k, _| {
        let x = &facts[b.index()][k];
        (x.reads, x.writes)
    })
}

/// [`flag_live_in`] with each instruction's [`flags`] given by `flags_of(block, index, inst)`.
fn flag_live_in_by(
    mf: &MachineFunction,
    flags_of: impl Fn(MBlock, usize, &MInst) -> (u8, Option<u8>),
) -> Vec<u8> {
    let n = mf.blocks.len();
    // Per block: (flags read before written in the block, flags written in the block).
    let mut gen_kill = vec![(0u8, 0u8); n];
    for (b, bd) in mf.blocks.iter() {
        let (mut gen, mut kill) = (0u8, 0u8);
        for (k, inst) in bd.insts.iter().enumerate() {
            let (r, w) = flags_of(b, k, inst);
            gen |= r & !kill;
            kill |= w.unwrap_or(0xff);
        }
        if let Terminator::Branch { cond, .. } = &bd.term {
            gen |= cond.reads() & !kill;
        }
        gen_kill[b.index()] = (gen, kill);
    }
    let mut live = vec![0u8; n];
    loop {
        let mut changed = false;
        for (b, bd) in mf.blocks.iter().rev() {
            let mut out = 0u8;
            for (s, _) in bd.term.successors() {
                out |= live[s.index()];
            }
            let (gen, kill) = gen_kill[b.index()];
            let inn = gen | (out & !kill);
            if inn != live[b.index()] {
                live[b.index()] = inn;
                changed = true;
            }
        }
        if !changed {
            return live;
        }
    }
}

/// Whether `inst` may read EXEC: its operands or implicit uses say so, or it is anything but a
/// scalar instruction (vector instructions run under EXEC; pseudo-instructions may become
/// vector moves).
pub(super) fn may_read_exec(inst: &MInst) -> bool {
    may_read_exec_with(inst, flags(inst).0)
}

/// [`may_read_exec`] given the special registers `inst` reads ([`flags`]).
fn may_read_exec_with(inst: &MInst, reads: u8) -> bool {
    if reads & implicit::EXEC != 0 {
        return true;
    }
    match inst.opcode {
        MOpcode::Isa(op) => !matches!(
            op.info().format,
            Format::Sop1 | Format::Sop2 | Format::Sopk | Format::Sopc | Format::Sopp | Format::Smem
        ),
        _ => true,
    }
}

/// `s_mov_b64 exec, src`: a plain EXEC write, the only kind removed when dead.
pub(super) fn is_exec_move(inst: &MInst) -> bool {
    inst.opcode == MOpcode::Isa(isa::Opcode::SMovB64)
        && matches!(
            inst.ops.first(),
            Some(MOperand::Phys(Operand::Special(SpecialReg::Exec)))
        )
}

/// Removes EXEC moves that nothing reads before the next EXEC write or the end of the program
/// (EXEC liveness over the CFG, `s_cbranch_exec*` included), e.g. the restore of a join's
/// lanes right before `s_endpgm`; the masks that fed them then die in the sweep.
fn remove_dead_exec_moves(mf: &mut MachineFunction, facts: &mut [Vec<InstFacts>]) -> usize {
    let n = mf.blocks.len();
    // Per block: (EXEC read before written, EXEC written).
    let mut gen_kill = vec![(false, false); n];
    for (b, bd) in mf.blocks.iter() {
        let (mut gen, mut kill) = (false, false);
        for x in &facts[b.index()] {
            gen |= x.reads_exec && !kill;
            kill |= x.writes_exec;
        }
        if let Terminator::Branch { cond, .. } = &bd.term {
            gen |= cond.reads() & implicit::EXEC != 0 && !kill;
        }
        gen_kill[b.index()] = (gen, kill);
    }
    let mut live_in = vec![false; n];
    loop {
        let mut changed = false;
        for (b, bd) in mf.blocks.iter().rev() {
            let out = bd.term.successors().iter().any(|(s, _)| live_in[s.index()]);
            let (gen, kill) = gen_kill[b.index()];
            let inn = gen || out && !kill;
            if inn != live_in[b.index()] {
                live_in[b.index()] = inn;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut removed = 0;
    let mut keep = Vec::new();
    for (b, bd) in mf.blocks.iter_mut() {
        let row = &mut facts[b.index()];
        if !row.iter().any(|x| x.exec_move) {
            continue;
        }
        let mut live = bd.term.successors().iter().any(|(s, _)| live_in[s.index()])
            || matches!(&bd.term, Terminator::Branch { cond, .. } if cond.reads() & implicit::EXEC != 0);
        keep.clear();
        keep.resize(row.len(), true);
        let mut dead = 0;
        for (k, x) in row.iter().enumerate().rev() {
            if x.exec_move {
                if !live {
                    keep[k] = false;
                    dead += 1;
                    continue;
                }
                live = false;
            } else if x.writes_exec {
                live = false;
            }
            live |= x.reads_exec;
        }
        if dead == 0 {
            continue;
        }
        removed += dead;
        retain_kept(&mut bd.insts, &keep);
        retain_kept(row, &keep);
    }
    removed
}

/// Keeps the elements of `v` whose entry in `keep` is true.
fn retain_kept<T>(v: &mut Vec<T>, keep: &[bool]) {
    let mut k = 0;
    v.retain(|_| {
        k += 1;
        keep[k - 1]
    });
}

/// Whether `inst` writes EXEC (implicitly or as an operand).
pub(super) fn writes_exec(inst: &MInst) -> bool {
    writes_exec_with(inst, flags(inst).1)
}

/// [`writes_exec`] given the special registers `inst` writes ([`flags`]).
fn writes_exec_with(inst: &MInst, writes: Option<u8>) -> bool {
    if inst.implicit_defs & implicit::EXEC != 0 || is_exec_move(inst) {
        return true;
    }
    match writes {
        Some(w) => w & implicit::EXEC != 0,
        // A write of a special register other than SCC/VCC: EXEC when an operand names it.
        None => inst.ops.iter().any(|o| {
            matches!(
                o,
                MOperand::Phys(Operand::Special(
                    SpecialReg::Exec | SpecialReg::ExecLo | SpecialReg::ExecHi
                ))
            )
        }),
    }
}

/// Removes dead instructions and block parameters; returns how many instructions went.
pub(crate) fn eliminate_dead_code(mf: &mut MachineFunction) -> usize {
    let mut removed = 0;
    // Kept in step with the instructions as they go.
    let mut facts = InstFacts::of_function(mf);
    loop {
        // Marking is transitive over values, so one sweep removes everything dead except
        // flag writers whose only reader went in that sweep, and EXEC moves whose readers went
        // (e.g. the `alive` update of a `return`): only then is another one needed.
        let (n, flag_reader_removed) = sweep_once(mf, &mut facts);
        let exec_moves = remove_dead_exec_moves(mf, &mut facts);
        removed += n + exec_moves;
        if !flag_reader_removed && exec_moves == 0 {
            return removed;
        }
    }
}

/// One mark-and-sweep: (instructions and parameters removed, whether a removed instruction
/// read SCC or VCC).
fn sweep_once(mf: &mut MachineFunction, facts: &mut [Vec<InstFacts>]) -> (usize, bool) {
    let flag_in = flag_live_in_from(mf, facts);
    let nv = mf.vregs.len();
    let mut site = vec![Site::None; nv];
    for (b, bd) in mf.blocks.iter() {
        for (k, &p) in bd.params.iter().enumerate() {
            site[p.index()] = Site::Param(b.index() as u32, k as u32);
        }
        for (k, inst) in bd.insts.iter().enumerate() {
            for d in inst.defs() {
                site[d.index()] = Site::Inst(b.index() as u32, k as u32);
            }
        }
    }
    // Predecessors: (block, successor slot in its terminator).
    let mut preds: Vec<Vec<(MBlock, usize)>> = vec![Vec::new(); mf.blocks.len()];
    for (b, bd) in mf.blocks.iter() {
        for (slot, (s, _)) in bd.term.successors().iter().enumerate() {
            preds[s.index()].push((b, slot));
        }
    }
    let mut live_inst: Vec<Vec<bool>> = Vec::with_capacity(mf.blocks.len());
    let mut live_v = vec![false; nv];
    let mut work: Vec<VReg> = Vec::new();
    for (b, bd) in mf.blocks.iter() {
        let fx = &facts[b.index()];
        let mut row = vec![false; bd.insts.len()];
        // Flags live after each instruction, scanning backwards.
        let mut after = 0u8;
        for (s, _) in bd.term.successors() {
            after |= flag_in[s.index()];
        }
        if let Terminator::Branch { cond, .. } = &bd.term {
            after |= cond.reads();
        }
        for (k, inst) in bd.insts.iter().enumerate().rev() {
            let (r, w) = (fx[k].reads, fx[k].writes);
            let removable = match inst.opcode {
                MOpcode::LiveIn(_) => false,
                // A load to LDS (`lds` bit) writes memory.
                MOpcode::Isa(op) => {
                    pure_opcode(op)
                        && !inst.mods.lds
                        && matches!(w, Some(w) if TRACKED.iter().all(|&f| w & f == 0 || after & f == 0))
                }
                _ => true,
            };
            if !removable {
                row[k] = true;
                work.extend(inst.uses());
            }
            after = (after & !w.unwrap_or(0xff)) | r;
        }
        live_inst.push(row);
    }
    while let Some(v) = work.pop() {
        if std::mem::replace(&mut live_v[v.index()], true) {
            continue;
        }
        match site[v.index()] {
            Site::None => {}
            Site::Inst(b, k) => {
                let (b, k) = (b as usize, k as usize);
                if !live_inst[b][k] {
                    live_inst[b][k] = true;
                    work.extend(mf.blocks[MBlock::new(b)].insts[k].uses());
                }
            }
            Site::Param(b, k) => {
                for &(pb, slot) in &preds[b as usize] {
                    let succs = mf.blocks[pb].term.successors();
                    if let Some(&a) = succs[slot].1.get(k as usize) {
                        work.push(a);
                    }
                }
            }
        }
    }
    let mut removed = 0;
    let mut flag_reader_removed = false;
    for (b, row) in live_inst.iter().enumerate() {
        let bd = &mut mf.blocks[MBlock::new(b)];
        if row.iter().all(|&x| x) {
            continue;
        }
        let fx = &mut facts[b];
        flag_reader_removed |= fx
            .iter()
            .zip(row)
            .any(|(x, &live)| !live && x.reads & (implicit::SCC | implicit::VCC) != 0);
        retain_kept(&mut bd.insts, row);
        retain_kept(fx, row);
        removed += row.iter().filter(|&&x| !x).count();
    }
    // Dead parameters and their arguments.
    for b in 0..mf.blocks.len() {
        let params = mf.blocks[MBlock::new(b)].params.clone();
        let keep: Vec<bool> = params.iter().map(|p| live_v[p.index()]).collect();
        if keep.iter().all(|&x| x) {
            continue;
        }
        removed += keep.iter().filter(|&&x| !x).count();
        let mut k = 0;
        mf.blocks[MBlock::new(b)].params.retain(|_| {
            let x = keep[k];
            k += 1;
            x
        });
        for &(pb, slot) in &preds[b] {
            let args = args_mut(&mut mf.blocks[pb].term, slot);
            let mut k = 0;
            args.retain(|_| {
                let x = keep.get(k).copied().unwrap_or(true);
                k += 1;
                x
            });
        }
    }
    (removed, flag_reader_removed)
}

/// The arguments of successor `slot` (taken first) of `term`.
pub(super) fn args_mut(term: &mut Terminator, slot: usize) -> &mut Vec<VReg> {
    match term {
        Terminator::Jump { args, .. } => args,
        Terminator::Branch {
            taken_args,
            not_taken_args,
            ..
        } => {
            if slot == 0 {
                taken_args
            } else {
                not_taken_args
            }
        }
        Terminator::Return => unreachable!("a return has no successors"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codeobj::metadata::KernelMeta;
    use crate::isa::Opcode;
    use crate::mir::{BranchCond, KernelAbi, RegClass};

    fn func() -> MachineFunction {
        let mut mf = MachineFunction::new(KernelAbi {
            target: crate::Target::Gfx942,
            meta: KernelMeta::new("t"),
            workgroup_ids: [false; 3],
            workitem_dims: 0,
            lds_bytes: 0,
        });
        mf.block();
        mf
    }

    fn op(name: &str) -> Opcode {
        Opcode::from_name(name).expect("opcode")
    }

    fn salu(mf: &mut MachineFunction, b: MBlock, name: &str, ops: &[MOperand], scc: (bool, bool)) {
        let mut i = MInst::isa(op(name), ops);
        if scc.0 {
            i.implicit_defs = implicit::SCC;
        }
        if scc.1 {
            i.implicit_uses = implicit::SCC;
        }
        mf.blocks[b].insts.push(i);
    }

    fn names(mf: &MachineFunction, b: MBlock) -> Vec<&'static str> {
        mf.blocks[b]
            .insts
            .iter()
            .map(|i| match i.opcode {
                MOpcode::Isa(o) => o.info().name,
                _ => "pseudo",
            })
            .collect()
    }

    #[test]
    fn dead_values_and_their_flag_chains_go_stores_stay() {
        let mut mf = func();
        let b = mf.entry();
        let (x, y, m, dead) = (
            mf.vreg(RegClass::Sgpr, 1),
            mf.vreg(RegClass::Sgpr, 1),
            mf.vreg(RegClass::Sgpr, 1),
            mf.vreg(RegClass::Sgpr, 1),
        );
        let c = |i: i8| MOperand::Phys(Operand::InlineInt(i));
        salu(
            &mut mf,
            b,
            "s_mov_b32",
            &[MOperand::Def(x), c(3)],
            (false, false),
        );
        salu(
            &mut mf,
            b,
            "s_mov_b32",
            &[MOperand::Def(y), c(4)],
            (false, false),
        );
        // s_cmp whose only reader is a dead s_cselect: both go (two sweeps).
        salu(
            &mut mf,
            b,
            "s_cmp_lt_u32",
            &[MOperand::Use(x), MOperand::Use(y)],
            (true, false),
        );
        salu(
            &mut mf,
            b,
            "s_cselect_b32",
            &[MOperand::Def(dead), c(1), c(0)],
            (false, true),
        );
        // A kept side effect and what feeds it.
        salu(
            &mut mf,
            b,
            "s_add_u32",
            &[MOperand::Def(m), MOperand::Use(x), c(1)],
            (true, false),
        );
        let mut st = MInst::isa(
            op("s_store_dword"),
            &[MOperand::Use(m), MOperand::Use(m), c(0)],
        );
        st.implicit_uses = 0;
        mf.blocks[b].insts.push(st);
        let n = eliminate_dead_code(&mut mf);
        assert_eq!(n, 3, "{:?}", names(&mf, b));
        assert_eq!(names(&mf, b), ["s_mov_b32", "s_add_u32", "s_store_dword"]);
    }

    #[test]
    fn an_scc_writer_read_by_the_branch_stays_without_readers_of_its_value() {
        let mut mf = func();
        let b = mf.entry();
        let (t, e) = (mf.block(), mf.block());
        let (a, r) = (mf.vreg(RegClass::Sgpr, 2), mf.vreg(RegClass::Sgpr, 2));
        let exec = MOperand::Phys(Operand::Special(SpecialReg::Exec));
        salu(
            &mut mf,
            b,
            "s_mov_b64",
            &[MOperand::Def(a), exec],
            (false, false),
        );
        salu(
            &mut mf,
            b,
            "s_andn2_b64",
            &[MOperand::Def(r), MOperand::Use(a), exec],
            (true, false),
        );
        mf.blocks[b].term = Terminator::Branch {
            cond: BranchCond::Scc0,
            taken: t,
            taken_args: vec![],
            not_taken: e,
            not_taken_args: vec![],
        };
        assert_eq!(eliminate_dead_code(&mut mf), 0);
        // The same with a plain jump: nothing reads SCC or the values.
        mf.blocks[b].term = Terminator::Jump {
            target: t,
            args: vec![],
        };
        assert_eq!(eliminate_dead_code(&mut mf), 2);
        assert!(mf.blocks[b].insts.is_empty());
    }

    #[test]
    fn parameters_that_only_feed_each_other_around_a_loop_go() {
        let mut mf = func();
        let entry = mf.entry();
        let (head, exit) = (mf.block(), mf.block());
        let (z, p, n, live) = (
            mf.vreg(RegClass::Sgpr, 1),
            mf.vreg(RegClass::Sgpr, 1),
            mf.vreg(RegClass::Sgpr, 1),
            mf.vreg(RegClass::Sgpr, 1),
        );
        let c = |i: i8| MOperand::Phys(Operand::InlineInt(i));
        salu(
            &mut mf,
            entry,
            "s_mov_b32",
            &[MOperand::Def(z), c(0)],
            (false, false),
        );
        mf.blocks[entry].term = Terminator::Jump {
            target: head,
            args: vec![z],
        };
        mf.blocks[head].params = vec![p];
        salu(
            &mut mf,
            head,
            "s_add_u32",
            &[MOperand::Def(n), MOperand::Use(p), c(1)],
            (true, false),
        );
        salu(
            &mut mf,
            head,
            "s_cmp_lg_u32",
            &[MOperand::Use(live), c(0)],
            (true, false),
        );
        mf.blocks[head].term = Terminator::Branch {
            cond: BranchCond::Scc1,
            taken: head,
            taken_args: vec![n],
            not_taken: exit,
            not_taken_args: vec![],
        };
        // `live` is defined in the entry and read by the loop's compare, which the branch reads.
        salu(
            &mut mf,
            entry,
            "s_mov_b32",
            &[MOperand::Def(live), c(5)],
            (false, false),
        );
        eliminate_dead_code(&mut mf);
        assert!(mf.blocks[head].params.is_empty());
        assert_eq!(names(&mf, head), ["s_cmp_lg_u32"]);
        assert_eq!(names(&mf, entry), ["s_mov_b32"]);
        assert!(
            matches!(&mf.blocks[head].term, Terminator::Branch { taken_args, .. } if taken_args.is_empty())
        );
        assert!(matches!(&mf.blocks[entry].term, Terminator::Jump { args, .. } if args.is_empty()));
    }
}

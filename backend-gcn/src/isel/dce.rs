//! Dead-code elimination on the selected machine function: instructions whose results nobody
//! reads and that have no other effect, and block parameters (with their arguments) that
//! nothing reads.
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

/// Whether the opcode only computes its destinations (no memory write, no control, no EXEC).
fn pure_opcode(op: isa::Opcode) -> bool {
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
fn flags(inst: &MInst) -> (u8, Option<u8>) {
    let mut reads = inst.implicit_uses;
    let mut writes = inst.implicit_defs;
    if let MOpcode::Isa(op) = inst.opcode {
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
fn flag_live_in(mf: &MachineFunction) -> Vec<u8> {
    let n = mf.blocks.len();
    // Per block: (flags read before written in the block, flags written in the block).
    let mut gen_kill = vec![(0u8, 0u8); n];
    for (b, bd) in mf.blocks.iter() {
        let (mut gen, mut kill) = (0u8, 0u8);
        for inst in &bd.insts {
            let (r, w) = flags(inst);
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

/// Removes dead instructions and block parameters; returns how many instructions went.
pub(crate) fn eliminate_dead_code(mf: &mut MachineFunction) -> usize {
    let mut removed = 0;
    loop {
        let n = sweep_once(mf);
        if n == 0 {
            return removed;
        }
        removed += n;
    }
}

fn sweep_once(mf: &mut MachineFunction) -> usize {
    let flag_in = flag_live_in(mf);
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
    for (_, bd) in mf.blocks.iter() {
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
            let (r, w) = flags(inst);
            let removable = match inst.opcode {
                MOpcode::LiveIn(_) => false,
                MOpcode::Isa(op) => {
                    pure_opcode(op)
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
    for (b, row) in live_inst.iter().enumerate() {
        let bd = &mut mf.blocks[MBlock::new(b)];
        if row.iter().all(|&x| x) {
            continue;
        }
        let mut k = 0;
        bd.insts.retain(|_| {
            let keep = row[k];
            k += 1;
            keep
        });
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
    removed
}

/// The arguments of successor `slot` (taken first) of `term`.
fn args_mut(term: &mut Terminator, slot: usize) -> &mut Vec<VReg> {
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

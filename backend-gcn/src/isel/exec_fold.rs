//! EXEC set by the instruction that computes its mask: takes the selected machine function
//! after dead-code elimination and gives it with `t = s_and_b64 exec, m` … `s_mov_b64 exec, t`
//! (a divergent branch's lanes, then the head of the section that runs them) turned into one
//! `s_and_b64 exec, exec, m` where `t` has no other reader, as LLVM's `s_and_b64 exec, exec,
//! vcc` for an `if` without a join. A copy of EXEC saved for the `if`'s join just before
//! (`x = s_mov_b64 exec`) then goes into the same instruction: `s_and_saveexec_b64 x, m`.
//!
//! Legal when nothing between the two reads or writes EXEC (then EXEC is the same at both
//! points): the move is later in the same block, or first in a block whose only predecessor
//! ends in a jump to it after the `s_and_b64`. SCC is written where it was written before.

use cranelift_entity::EntityRef;

use super::dce::{is_exec_move, may_read_exec, writes_exec};
use crate::isa::{Operand, SpecialReg};
use crate::mir::{implicit, MBlock, MInst, MOpcode, MOperand, MachineFunction, Terminator};

/// `t = s_and_b64 exec, m`: the pair `t`.
fn exec_and(inst: &MInst) -> Option<crate::mir::VReg> {
    match (inst.opcode, inst.ops.as_slice()) {
        (
            MOpcode::Isa(op),
            [MOperand::Def(t), MOperand::Phys(Operand::Special(SpecialReg::Exec)), MOperand::Use(_)],
        ) if op.info().name == "s_and_b64" => Some(*t),
        _ => None,
    }
}

/// Where the `s_and_b64` of the move at `(b, k)` is, if it can take the move's place: the
/// same block or the only predecessor, nothing touching EXEC in between.
fn def_before(
    mf: &MachineFunction,
    preds: &[Vec<MBlock>],
    b: MBlock,
    k: usize,
) -> Option<(MBlock, usize)> {
    let t = match mf.blocks[b].insts[k].ops.get(1) {
        Some(MOperand::Use(t)) => *t,
        _ => return None,
    };
    let (mut blk, mut end) = (b, k);
    loop {
        for (j, inst) in mf.blocks[blk].insts[..end].iter().enumerate().rev() {
            if exec_and(inst) == Some(t) {
                return Some((blk, j));
            }
            if may_read_exec(inst) || writes_exec(inst) || inst.defs().any(|d| d == t) {
                return None;
            }
        }
        // On to the only predecessor, when it jumps here and this block has no parameters.
        let [p] = preds[blk.index()].as_slice() else {
            return None;
        };
        let jumps_here =
            matches!(&mf.blocks[*p].term, Terminator::Jump { target, .. } if *target == blk);
        if blk != b || !jumps_here || !mf.blocks[blk].params.is_empty() {
            return None;
        }
        blk = *p;
        end = mf.blocks[blk].insts.len();
    }
}

/// Folds each EXEC move into the `s_and_b64` that computes its only-read mask; returns how
/// many moves went.
pub(crate) fn fold_exec_masks(mf: &mut MachineFunction) -> usize {
    let mut reads = vec![0u32; mf.vregs.len()];
    let mut preds: Vec<Vec<MBlock>> = vec![Vec::new(); mf.blocks.len()];
    for (b, bd) in mf.blocks.iter() {
        for v in bd.insts.iter().flat_map(|i| i.uses()) {
            reads[v.index()] += 1;
        }
        for (s, args) in bd.term.successors() {
            preds[s.index()].push(b);
            for a in args {
                reads[a.index()] += 1;
            }
        }
    }
    let mut folded = 0;
    let blocks: Vec<MBlock> = mf.blocks.keys().collect();
    for b in blocks {
        let mut k = 0;
        while k < mf.blocks[b].insts.len() {
            let inst = &mf.blocks[b].insts[k];
            let only_reader =
                matches!(inst.ops.get(1), Some(MOperand::Use(t)) if reads[t.index()] == 1);
            let at = if is_exec_move(inst) && only_reader {
                def_before(mf, &preds, b, k)
            } else {
                None
            };
            match at {
                Some((db, j)) => {
                    let d = &mut mf.blocks[db].insts[j];
                    d.ops[0] = MOperand::Phys(Operand::Special(SpecialReg::Exec));
                    d.implicit_defs |= implicit::EXEC;
                    mf.blocks[b].insts.remove(k);
                    folded += 1;
                }
                None => k += 1,
            }
        }
    }
    folded + fold_saveexec(mf)
}

/// `s_and_b64 exec, exec, m` (a folded branch mask): `m`.
fn exec_and_in_place(inst: &MInst) -> Option<crate::mir::VReg> {
    let exec = MOperand::Phys(Operand::Special(SpecialReg::Exec));
    match (inst.opcode, inst.ops.as_slice()) {
        (MOpcode::Isa(op), [d, s, MOperand::Use(m)])
            if op.info().name == "s_and_b64" && *d == exec && *s == exec =>
        {
            Some(*m)
        }
        _ => None,
    }
}

/// `x = s_mov_b64 exec` (EXEC saved for a join): `x`.
fn exec_save(inst: &MInst) -> Option<crate::mir::VReg> {
    match (inst.opcode, inst.ops.as_slice()) {
        (
            MOpcode::Isa(op),
            [MOperand::Def(x), MOperand::Phys(Operand::Special(SpecialReg::Exec))],
        ) if op.info().name == "s_mov_b64" => Some(*x),
        _ => None,
    }
}

/// `x = s_mov_b64 exec` … `s_and_b64 exec, exec, m` in one block, with nothing between that
/// writes EXEC or reads `x`, become one `s_and_saveexec_b64 x, m` where the `s_and_b64` was
/// (LLVM's `if` entry); returns how many pairs went.
fn fold_saveexec(mf: &mut MachineFunction) -> usize {
    let mut folded = 0;
    let blocks: Vec<MBlock> = mf.blocks.keys().collect();
    for b in blocks {
        let mut k = 0;
        while k < mf.blocks[b].insts.len() {
            let insts = &mf.blocks[b].insts;
            let Some(m) = exec_and_in_place(&insts[k]) else {
                k += 1;
                continue;
            };
            let mut save = None;
            for j in (0..k).rev() {
                if let Some(x) = exec_save(&insts[j]) {
                    if x != m {
                        save = Some((j, x));
                    }
                    break;
                }
                if writes_exec(&insts[j]) {
                    break;
                }
            }
            let Some((j, x)) =
                save.filter(|&(j, x)| !insts[j + 1..k].iter().any(|i| i.uses().any(|u| u == x)))
            else {
                k += 1;
                continue;
            };
            let mut i = MInst::isa(
                super::op("s_and_saveexec_b64"),
                &[MOperand::Def(x), MOperand::Use(m)],
            );
            i.implicit_defs = implicit::EXEC | implicit::SCC;
            i.implicit_uses = implicit::EXEC;
            mf.blocks[b].insts[k] = i;
            mf.blocks[b].insts.remove(j);
            folded += 1;
        }
    }
    folded
}

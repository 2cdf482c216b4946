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
//!
//! Last, a branch mask that is an `s_and_b64` of compares (`a < n && b < m`) goes into EXEC
//! by the compares themselves: `v_cmpx` writes its result to EXEC as well, and a compare's
//! inactive lanes are 0, so `v_cmpx a; v_cmpx b` leaves EXEC ∧ a ∧ b, as
//! `v_cmp a; v_cmp b; s_and_b64 m, a, b; s_and_b64 exec, exec, m` did in two fewer
//! instructions.
//!
//! A branch mask `t = s_and_b64 exec, m` left after those folds (its `t` read again, e.g. by a
//! loop's latch) is `m` itself when `m`'s lanes outside EXEC are already 0: a compare made under
//! the same EXEC (gfx9 writes 0 for its inactive lanes), or an `s_and_b64`/`s_or_b64` of such
//! masks. Its readers then read `m` and the `s_and_b64` goes.

use cranelift_entity::EntityRef;

use super::dce::{flag_live_in, flags, is_exec_move, may_read_exec, writes_exec};
use crate::isa::{Encoding, Format, Opcode, Operand, SpecialReg};
use crate::mir::{implicit, MBlock, MInst, MOpcode, MOperand, MachineFunction, Terminator, VReg};

/// `t = s_and_b64 exec, m`: the pair `t`.
fn exec_and(inst: &MInst) -> Option<crate::mir::VReg> {
    match (inst.opcode, inst.ops.as_slice()) {
        (
            MOpcode::Isa(op),
            [MOperand::Def(t), MOperand::Phys(Operand::Special(SpecialReg::Exec)), MOperand::Use(_)],
        ) if op == Opcode::SAndB64 => Some(*t),
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
    folded + fold_saveexec(mf) + fold_cmpx(mf) + reuse_lane_masks(mf)
}

/// `s_and_b64 exec, exec, m` (a folded branch mask): `m`.
fn exec_and_in_place(inst: &MInst) -> Option<crate::mir::VReg> {
    let exec = MOperand::Phys(Operand::Special(SpecialReg::Exec));
    match (inst.opcode, inst.ops.as_slice()) {
        (MOpcode::Isa(op), [d, s, MOperand::Use(m)])
            if op == Opcode::SAndB64 && *d == exec && *s == exec =>
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
        ) if op == Opcode::SMovB64 => Some(*x),
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

/// `m = s_and_b64 x, y`: `(m, x, y)`.
fn mask_and(inst: &MInst) -> Option<(VReg, VReg, VReg)> {
    match (inst.opcode, inst.ops.as_slice()) {
        (MOpcode::Isa(op), [MOperand::Def(m), MOperand::Use(x), MOperand::Use(y)])
            if op == Opcode::SAndB64 =>
        {
            Some((*m, *x, *y))
        }
        _ => None,
    }
}

/// The `v_cmpx` twin of `inst` when it is a VOP3 compare `m = v_cmp_* a, b` writing `m`.
fn cmpx_of(inst: &MInst, m: VReg) -> Option<Opcode> {
    let MOpcode::Isa(op) = inst.opcode else {
        return None;
    };
    let info = op.info();
    // Sources in vregs or constants only: a special register may change before the move.
    let movable = inst.ops[1..].iter().all(|o| match o {
        MOperand::Use(_) => true,
        MOperand::Phys(p) => !matches!(
            p,
            Operand::Special(_)
                | Operand::Sgpr { .. }
                | Operand::Vgpr { .. }
                | Operand::Agpr { .. }
                | Operand::Ttmp { .. }
        ),
        MOperand::Def(_) => false,
    });
    if info.format != Format::Vopc
        || inst.encoding != Encoding::E64
        || inst.ops.first() != Some(&MOperand::Def(m))
        || !movable
    {
        return None;
    }
    let rest = info.name.strip_prefix("v_cmp_")?;
    Opcode::from_name(&format!("v_cmpx_{rest}"))
}

/// `s_and_b64 exec, exec, m` with `m` read only there and a compare, or `m = s_and_b64 x, y`
/// (read only there) of which `x` and/or `y` are compares read only there, all in the same
/// block with nothing writing EXEC from the first compare on: each such compare becomes a
/// `v_cmpx` where the EXEC `s_and_b64` was (its mask def left dead), an operand that is no
/// compare stays as `s_and_b64 exec, exec, x`, and `m`'s `s_and_b64` goes. Only when SCC,
/// which the `s_and_b64`s wrote, is not read before it is written again. Returns how many
/// EXEC `s_and_b64` went.
fn fold_cmpx(mf: &mut MachineFunction) -> usize {
    let mut reads = vec![0u32; mf.vregs.len()];
    for bd in mf.blocks.values() {
        for v in bd.insts.iter().flat_map(|i| i.uses()) {
            reads[v.index()] += 1;
        }
        for (_, args) in bd.term.successors() {
            for a in args {
                reads[a.index()] += 1;
            }
        }
    }
    let flag_in = flag_live_in(mf);
    let mut folded = 0;
    let blocks: Vec<MBlock> = mf.blocks.keys().collect();
    for b in blocks {
        let mut k = 0;
        while k < mf.blocks[b].insts.len() {
            match cmpx_plan(mf, &reads, &flag_in, b, k) {
                Some(plan) => {
                    let insts = &mut mf.blocks[b].insts;
                    let mut new = Vec::new();
                    for (x, cmp) in plan.operands {
                        match cmp {
                            Some((j, opx)) => {
                                let mut c = insts[j].clone();
                                c.opcode = MOpcode::Isa(opx);
                                c.implicit_defs |= implicit::EXEC;
                                c.implicit_uses |= implicit::EXEC;
                                new.push(c);
                            }
                            None => {
                                let mut a = insts[k].clone();
                                a.ops[2] = MOperand::Use(x);
                                new.push(a);
                            }
                        }
                    }
                    let n = new.len();
                    insts.splice(k..k + 1, new);
                    let mut gone = plan.removed;
                    gone.sort_unstable();
                    for &j in gone.iter().rev() {
                        insts.remove(j);
                    }
                    k = k + n - gone.len();
                    folded += 1;
                }
                None => k += 1,
            }
        }
    }
    folded
}

/// What [`fold_cmpx`] does at `(b, k)`: per operand of the mask's `s_and_b64`, the operand
/// and, for a compare, its index and `v_cmpx`; the indices of the instructions that go.
struct CmpxPlan {
    operands: Vec<(VReg, Option<(usize, Opcode)>)>,
    removed: Vec<usize>,
}

/// The flags (SCC, VCC bits) read after `bd`'s last instruction: by its terminator's
/// condition or live into a successor.
fn flags_live_out(bd: &crate::mir::MBlockData, flag_in: &[u8]) -> u8 {
    let live = bd
        .term
        .successors()
        .iter()
        .fold(0u8, |a, (s, _)| a | flag_in[s.index()]);
    match &bd.term {
        Terminator::Branch { cond, .. } => live | cond.reads(),
        _ => live,
    }
}

fn cmpx_plan(
    mf: &MachineFunction,
    reads: &[u32],
    flag_in: &[u8],
    b: MBlock,
    k: usize,
) -> Option<CmpxPlan> {
    let bd = &mf.blocks[b];
    let insts = &bd.insts;
    let m = exec_and_in_place(&insts[k])?;
    if reads[m.index()] != 1 {
        return None;
    }
    let i = insts[..k].iter().rposition(|x| x.defs().any(|d| d == m))?;
    // SCC must be dead after the mask's def once the EXEC `s_and_b64` no longer writes it
    // (nor the mask's `s_and_b64`, which goes).
    let mut live = flags_live_out(bd, flag_in);
    for (j, inst) in insts.iter().enumerate().skip(i + 1).rev() {
        if j != k {
            let (r, w) = flags(inst);
            live &= !w.unwrap_or(0xff);
            live |= r;
        }
    }
    if live & implicit::SCC != 0 {
        return None;
    }
    // A compare defined before `at` and read only by the mask's instruction, EXEC the same there and at the
    // EXEC `s_and_b64`.
    let cmp = |v: VReg, at: usize| -> Option<(usize, Opcode)> {
        if reads[v.index()] != 1 {
            return None;
        }
        let j = insts[..at].iter().rposition(|x| x.defs().any(|d| d == v))?;
        let opx = cmpx_of(&insts[j], v)?;
        (!insts[j + 1..k].iter().any(writes_exec)).then_some((j, opx))
    };
    let operands = match mask_and(&insts[i]) {
        Some((_, x, y)) if x != y => vec![(x, cmp(x, i)), (y, cmp(y, i))],
        Some(_) => return None,
        None => vec![(m, Some(cmp(m, i + 1)?))],
    };
    if operands.iter().all(|(_, c)| c.is_none()) {
        return None;
    }
    let mut removed: Vec<usize> = operands
        .iter()
        .filter_map(|(_, c)| c.map(|(j, _)| j))
        .collect();
    if operands.len() == 2 {
        removed.push(i);
    }
    Some(CmpxPlan { operands, removed })
}

/// Whether `m`, read at `at` in `insts`, has no lane outside the EXEC that holds at `at`: it
/// is defined in the block before `at`, with nothing writing EXEC from its definition on, by
/// a compare (inactive lanes 0), by an `s_and_b64` of EXEC or of one such mask, by an
/// `s_or_b64` of two, or by an `s_cselect_b64` of such masks and 0.
fn zero_outside_exec(insts: &[MInst], m: VReg, at: usize, depth: u32) -> bool {
    let Some(j) = insts[..at].iter().rposition(|x| x.defs().any(|d| d == m)) else {
        return false;
    };
    if depth > 4 || insts[j + 1..at].iter().any(writes_exec) {
        return false;
    }
    let inst = &insts[j];
    let MOpcode::Isa(op) = inst.opcode else {
        return false;
    };
    let exec = MOperand::Phys(Operand::Special(SpecialReg::Exec));
    let zero = |o: &MOperand| match o {
        MOperand::Use(v) => zero_outside_exec(insts, *v, j, depth + 1),
        _ => false,
    };
    let info = op.info();
    if info.format == Format::Vopc {
        // A VOP3 compare into this mask (not `v_cmpx`, which writes EXEC: caught above).
        return inst.encoding == Encoding::E64 && inst.ops.first() == Some(&MOperand::Def(m));
    }
    match (op, inst.ops.as_slice()) {
        (Opcode::SAndB64, [MOperand::Def(_), x, y]) => {
            *x == exec || *y == exec || zero(x) || zero(y)
        }
        (Opcode::SOrB64, [MOperand::Def(_), x, y]) => zero(x) && zero(y),
        (Opcode::SCselectB64, [MOperand::Def(_), x, y]) => {
            let zero_or_0 = |o: &MOperand| zero(o) || matches!(o, MOperand::Phys(p) if is_zero(p));
            zero_or_0(x) && zero_or_0(y)
        }
        _ => false,
    }
}

/// An immediate 0.
fn is_zero(p: &Operand) -> bool {
    matches!(p, Operand::InlineInt(0) | Operand::Literal(0))
}

/// `t = s_and_b64 exec, m` with `m` 0 outside EXEC ([`zero_outside_exec`]) and the SCC it
/// writes not read: every reader of `t` reads `m` and the instruction goes. Returns how many
/// went.
fn reuse_lane_masks(mf: &mut MachineFunction) -> usize {
    let flag_in = flag_live_in(mf);
    let mut renamed: Vec<(VReg, VReg)> = Vec::new();
    let blocks: Vec<MBlock> = mf.blocks.keys().collect();
    for b in blocks {
        let bd = &mf.blocks[b];
        // SCC read before written after each instruction (backwards from the block's end).
        let mut scc_live_after = vec![false; bd.insts.len()];
        let mut live = flags_live_out(bd, &flag_in);
        for (k, inst) in bd.insts.iter().enumerate().rev() {
            scc_live_after[k] = live & implicit::SCC != 0;
            let (r, w) = flags(inst);
            live &= !w.unwrap_or(0xff);
            live |= r;
        }
        let mut gone = Vec::new();
        for (k, inst) in bd.insts.iter().enumerate() {
            let (Some(t), Some(MOperand::Use(m))) = (exec_and(inst), inst.ops.get(2)) else {
                continue;
            };
            if !scc_live_after[k] && zero_outside_exec(&bd.insts, *m, k, 0) {
                renamed.push((t, *m));
                gone.push(k);
            }
        }
        for &k in gone.iter().rev() {
            mf.blocks[b].insts.remove(k);
        }
    }
    if renamed.is_empty() {
        return 0;
    }
    let mut to: Vec<Option<VReg>> = vec![None; mf.vregs.len()];
    for &(t, m) in &renamed {
        to[t.index()] = Some(m);
    }
    let resolve = |mut v: VReg| {
        while let Some(m) = to[v.index()] {
            v = m;
        }
        v
    };
    for bd in mf.blocks.values_mut() {
        for inst in &mut bd.insts {
            for o in inst.ops.iter_mut() {
                if let MOperand::Use(v) = o {
                    *v = resolve(*v);
                }
            }
        }
        let slots = bd.term.successors().len();
        for slot in 0..slots {
            for a in super::dce::args_mut(&mut bd.term, slot) {
                *a = resolve(*a);
            }
        }
    }
    renamed.len()
}

//! The regalloc2 view of a prepared machine function: singles and VGPR pairs as regalloc2
//! operands, tuples (webs) left out, one branch/return instruction per block.
//!
//! A regalloc2 class is not a register width by itself: `Vector` holds VGPR pairs, or, in a
//! function without pairs whose single VGPRs outgrow `Float`, the singles the partition
//! ([`super::overflow`]) moved there. [`RaFunc::vgpr_dwords`] says which.

use cranelift_entity::EntityRef;
use regalloc2 as ra;
use regalloc2::{
    Block, Function, Inst, InstRange, Operand, OperandConstraint, OperandKind, OperandPos, PReg,
    PRegSet,
};

use crate::mir::{AbiValue, MBlock, MOpcode, MOperand, VReg};
use crate::Target;

use super::prep::{kind_of, Kind, Prepared};

/// regalloc2 class of a kind (`None` for webs).
pub fn ra_class(k: Kind) -> Option<ra::RegClass> {
    match k {
        Kind::Int => Some(ra::RegClass::Int),
        Kind::Float => Some(ra::RegClass::Float),
        Kind::Pair => Some(ra::RegClass::Vector),
        Kind::Web => None,
    }
}

/// Fixed `Int` PReg of workgroup id `d` (mapped to its system SGPR after allocation).
pub fn wg_preg(d: u8) -> PReg {
    PReg::new(d as usize, ra::RegClass::Int)
}

/// Fixed `Float` PReg of the work-item id VGPR `v{d}`.
pub fn wi_preg(target: Target, d: u8) -> PReg {
    let idx = if target == Target::Gfx900 { d } else { 0 };
    PReg::new(idx as usize, ra::RegClass::Float)
}

/// Groups of items stored back to back in one vector (one allocation for all the
/// instructions or blocks instead of one per group).
pub struct Flat<T> {
    items: Vec<T>,
    /// `at[g]..at[g + 1]` is group `g`.
    at: Vec<u32>,
}

impl<T> Flat<T> {
    fn with_capacity(groups: usize, items: usize) -> Flat<T> {
        let mut at = Vec::with_capacity(groups + 1);
        at.push(0);
        Flat {
            items: Vec::with_capacity(items),
            at,
        }
    }
    /// Closes the group made of the items pushed since the last call.
    fn close(&mut self) {
        self.at.push(self.items.len() as u32);
    }
    /// Group `g`.
    pub fn get(&self, g: usize) -> &[T] {
        &self.items[self.at[g] as usize..self.at[g + 1] as usize]
    }
}

/// The function regalloc2 sees.
pub struct RaFunc {
    /// Operands of each instruction (global numbering of [`Prepared`]).
    pub ops: Flat<Operand>,
    /// For each instruction and MIR operand, the index of its regalloc2 operand.
    pub map: Flat<Option<u16>>,
    /// Per instruction: 1 = ends a block with successors, 2 = ends a block without.
    ends: Vec<u8>,
    /// Instruction range of each block.
    pub ranges: Vec<(u32, u32)>,
    /// Successors.
    pub succs: Flat<Block>,
    /// Predecessors.
    pub preds: Flat<Block>,
    /// Block parameters (regalloc2 classes only).
    pub params: Flat<ra::VReg>,
    /// Branch arguments (regalloc2 classes only): group `2 * block + successor index`.
    pub args: Flat<ra::VReg>,
    /// Number of vregs.
    pub num_vregs: usize,
    /// VGPRs of one `Vector` register: 2 (pairs), or 1 when the class holds the single VGPRs
    /// that do not fit `Float` ([`super::overflow`]).
    pub vector_dwords: u16,
}

/// regalloc2 class of every vreg (`None` for webs): by kind, with the single VGPRs `second`
/// marks in `Vector` (empty: none; only in a function without VGPR pairs).
pub fn classes(p: &Prepared, second: &[bool]) -> Vec<Option<ra::RegClass>> {
    p.mf.vregs
        .iter()
        .map(|(v, d)| match ra_class(kind_of(d.class, d.dwords)) {
            Some(ra::RegClass::Float) if second.get(v.index()).copied().unwrap_or(false) => {
                Some(ra::RegClass::Vector)
            }
            c => c,
        })
        .collect()
}

/// Builds the regalloc2 function with the single VGPRs `second` marks in the `Vector` class
/// (empty: none).
pub fn build(p: &Prepared, second: &[bool]) -> RaFunc {
    let mf = &p.mf;
    let target = mf.abi.target;
    let nb = mf.blocks.len();
    let ni = p.num_insts as usize;
    // regalloc2 class per vreg, looked up once.
    let classes = classes(p, second);
    let vector_dwords = if second.contains(&true) { 1 } else { 2 };
    let single = |c: ra::RegClass| {
        c == ra::RegClass::Float || (c == ra::RegClass::Vector && vector_dwords == 1)
    };
    let rv = |v: VReg| classes[v.index()].map(|c| ra::VReg::new(v.index(), c));
    let mut ops = Flat::with_capacity(ni, 3 * ni);
    let mut map = Flat::with_capacity(ni, 4 * ni);
    let mut ends = Vec::with_capacity(ni);
    let mut ranges = Vec::with_capacity(nb);
    let mut succs = Flat::with_capacity(nb, 2 * nb);
    let mut params = Flat::with_capacity(nb, nb);
    let mut args = Flat::with_capacity(2 * nb, nb);
    for (_, bd) in mf.blocks.iter() {
        let start = ends.len() as u32;
        for inst in &bd.insts {
            let base = map.items.len();
            let first = ops.items.len();
            map.items.resize(base + inst.ops.len(), None);
            let is_isa = matches!(inst.opcode, MOpcode::Isa(_));
            let tied_use = inst.tied.map(|(_, u)| u as usize);
            let tied_def = inst.tied.map(|(d, _)| d as usize);
            // uses first, so that tie indices are known
            for (i, o) in inst.ops.iter().enumerate() {
                if let MOperand::Use(v) = o {
                    if let Some(r) = rv(*v) {
                        map.items[base + i] = Some((ops.items.len() - first) as u16);
                        // A single VGPR read by a real instruction may stay in its spill slot:
                        // a slot in a spare VGPR is read directly, others through a temporary.
                        let repeated = inst
                            .ops
                            .iter()
                            .filter(|o| matches!(o, MOperand::Use(x) | MOperand::Def(x) if x == v))
                            .count()
                            > 1;
                        if is_isa && tied_use != Some(i) && !repeated && single(r.class()) {
                            ops.items.push(Operand::new(
                                r,
                                OperandConstraint::Any,
                                OperandKind::Use,
                                OperandPos::Early,
                            ));
                        } else {
                            ops.items.push(Operand::reg_use(r));
                        }
                    }
                }
            }
            for (i, o) in inst.ops.iter().enumerate() {
                if let MOperand::Def(v) = o {
                    if let Some(r) = rv(*v) {
                        let op = match inst.opcode {
                            MOpcode::LiveIn(AbiValue::WorkgroupId(d)) => {
                                Operand::reg_fixed_def(r, wg_preg(d))
                            }
                            MOpcode::LiveIn(AbiValue::WorkitemId(d)) => {
                                Operand::reg_fixed_def(r, wi_preg(target, d))
                            }
                            MOpcode::Copy => Operand::reg_reuse_def(r, 0),
                            _ => {
                                let tied_use = inst
                                    .tied
                                    .filter(|&(d, _)| d as usize == i)
                                    .and_then(|(_, u)| map.items[base + u as usize]);
                                match tied_use {
                                    Some(u) => Operand::reg_reuse_def(r, u as usize),
                                    // Pair defs are early: 64-bit results must not
                                    // partially overwrite a source still being read.
                                    None if r.class() == ra::RegClass::Vector
                                        && vector_dwords == 2 =>
                                    {
                                        Operand::new(
                                            r,
                                            OperandConstraint::Reg,
                                            OperandKind::Def,
                                            OperandPos::Early,
                                        )
                                    }
                                    None if is_isa && tied_def != Some(i) && single(r.class()) => {
                                        Operand::new(
                                            r,
                                            OperandConstraint::Any,
                                            OperandKind::Def,
                                            OperandPos::Late,
                                        )
                                    }
                                    None => Operand::reg_def(r),
                                }
                            }
                        };
                        map.items[base + i] = Some((ops.items.len() - first) as u16);
                        ops.items.push(op);
                    }
                }
            }
            ops.close();
            map.close();
            ends.push(0);
        }
        let ss = bd.term.successors();
        ops.close();
        map.close();
        ends.push(if ss.is_empty() { 2 } else { 1 });
        ranges.push((start, ends.len() as u32));
        for k in 0..2 {
            if let Some((s, a)) = ss.get(k) {
                succs.items.push(Block::new(s.index()));
                args.items.extend(a.iter().filter_map(|v| rv(*v)));
            }
            args.close();
        }
        succs.close();
        params.items.extend(bd.params.iter().filter_map(|v| rv(*v)));
        params.close();
    }
    let mut preds = Flat::with_capacity(nb, 2 * nb);
    for b in 0..nb {
        preds
            .items
            .extend(p.preds[b].iter().map(|x: &MBlock| Block::new(x.index())));
        preds.close();
    }
    RaFunc {
        ops,
        map,
        ends,
        ranges,
        succs,
        preds,
        params,
        args,
        num_vregs: mf.vregs.len(),
        vector_dwords,
    }
}

impl RaFunc {
    /// VGPRs of one register of class `c` (`None`: `Int`, an SGPR).
    pub fn vgpr_dwords(&self, c: ra::RegClass) -> Option<u16> {
        match c {
            ra::RegClass::Int => None,
            ra::RegClass::Float => Some(1),
            ra::RegClass::Vector => Some(self.vector_dwords),
        }
    }

    /// Whether a register of class `c` is one VGPR.
    pub fn single_vgpr(&self, c: ra::RegClass) -> bool {
        self.vgpr_dwords(c) == Some(1)
    }

    /// Per block: whether it lies on a cycle of the CFG (a loop body, run many times).
    pub fn in_loop(&self) -> Vec<bool> {
        let nb = self.ranges.len();
        let mut on = vec![false; nb];
        let mut seen = vec![usize::MAX; nb];
        let mut stack = Vec::new();
        // Block b is on a cycle when a walk from its successors comes back to it.
        for (b, on_cycle) in on.iter_mut().enumerate() {
            stack.clear();
            stack.extend(self.succs.get(b).iter().map(|s| s.index()));
            while let Some(x) = stack.pop() {
                if x == b {
                    *on_cycle = true;
                    break;
                }
                if seen[x] != b {
                    seen[x] = b;
                    stack.extend(self.succs.get(x).iter().map(|s| s.index()));
                }
            }
        }
        on
    }
}

impl Function for RaFunc {
    fn num_insts(&self) -> usize {
        self.ends.len()
    }
    fn num_blocks(&self) -> usize {
        self.ranges.len()
    }
    fn entry_block(&self) -> Block {
        Block::new(0)
    }
    fn block_insns(&self, block: Block) -> InstRange {
        let (a, b) = self.ranges[block.index()];
        InstRange::new(Inst::new(a as usize), Inst::new(b as usize))
    }
    fn block_succs(&self, block: Block) -> &[Block] {
        self.succs.get(block.index())
    }
    fn block_preds(&self, block: Block) -> &[Block] {
        self.preds.get(block.index())
    }
    fn block_params(&self, block: Block) -> &[ra::VReg] {
        self.params.get(block.index())
    }
    fn is_ret(&self, insn: Inst) -> bool {
        self.ends[insn.index()] == 2
    }
    fn is_branch(&self, insn: Inst) -> bool {
        self.ends[insn.index()] == 1
    }
    fn branch_blockparams(&self, block: Block, _insn: Inst, succ_idx: usize) -> &[ra::VReg] {
        self.args.get(2 * block.index() + succ_idx)
    }
    fn inst_operands(&self, insn: Inst) -> &[Operand] {
        self.ops.get(insn.index())
    }
    fn inst_clobbers(&self, _insn: Inst) -> PRegSet {
        PRegSet::empty()
    }
    fn num_vregs(&self) -> usize {
        self.num_vregs
    }
    fn spillslot_size(&self, regclass: ra::RegClass) -> usize {
        usize::from(self.vgpr_dwords(regclass).unwrap_or(1))
    }
}

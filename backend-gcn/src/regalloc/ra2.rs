//! The regalloc2 view of a prepared machine function: singles and VGPR pairs as regalloc2
//! operands, tuples (webs) left out, one branch/return instruction per block.

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

/// One regalloc2 instruction.
pub struct RaInst {
    /// Operands.
    pub ops: Vec<Operand>,
    /// For each MIR operand, the index of its regalloc2 operand.
    pub map: Vec<Option<usize>>,
    /// Ends a block with successors.
    pub branch: bool,
    /// Ends a block without successors.
    pub ret: bool,
}

/// The function regalloc2 sees.
pub struct RaFunc {
    /// Instructions (global numbering of [`Prepared`]).
    pub insts: Vec<RaInst>,
    /// Instruction range of each block.
    pub ranges: Vec<(u32, u32)>,
    /// Successors.
    pub succs: Vec<Vec<Block>>,
    /// Predecessors.
    pub preds: Vec<Vec<Block>>,
    /// Block parameters (regalloc2 classes only).
    pub params: Vec<Vec<ra::VReg>>,
    /// Branch arguments per successor (regalloc2 classes only).
    pub args: Vec<Vec<Vec<ra::VReg>>>,
    /// Number of vregs.
    pub num_vregs: usize,
}

fn rv(p: &Prepared, v: VReg) -> Option<ra::VReg> {
    let d = p.mf.vregs[v];
    ra_class(kind_of(d.class, d.dwords)).map(|c| ra::VReg::new(v.index(), c))
}

/// Builds the regalloc2 function.
pub fn build(p: &Prepared) -> RaFunc {
    let mf = &p.mf;
    let target = mf.abi.target;
    let nb = mf.blocks.len();
    let mut insts = Vec::with_capacity(p.num_insts as usize);
    let mut ranges = Vec::with_capacity(nb);
    let mut succs = Vec::with_capacity(nb);
    let mut params = Vec::with_capacity(nb);
    let mut args = Vec::with_capacity(nb);
    for (b, bd) in mf.blocks.iter() {
        let start = insts.len() as u32;
        for inst in &bd.insts {
            let mut ops = Vec::new();
            let mut map = vec![None; inst.ops.len()];
            let is_isa = matches!(inst.opcode, MOpcode::Isa(_));
            let tied_use = inst.tied.map(|(_, u)| u as usize);
            let tied_def = inst.tied.map(|(d, _)| d as usize);
            // uses first, so that tie indices are known
            for (i, o) in inst.ops.iter().enumerate() {
                if let MOperand::Use(v) = o {
                    if let Some(r) = rv(p, *v) {
                        map[i] = Some(ops.len());
                        // A single VGPR read by a real instruction may stay in its spill slot:
                        // a slot in a spare VGPR is read directly, others through a temporary.
                        let repeated = inst
                            .ops
                            .iter()
                            .filter(|o| matches!(o, MOperand::Use(x) | MOperand::Def(x) if x == v))
                            .count()
                            > 1;
                        if is_isa
                            && tied_use != Some(i)
                            && !repeated
                            && r.class() == ra::RegClass::Float
                        {
                            ops.push(Operand::new(
                                r,
                                OperandConstraint::Any,
                                OperandKind::Use,
                                OperandPos::Early,
                            ));
                        } else {
                            ops.push(Operand::reg_use(r));
                        }
                    }
                }
            }
            for (i, o) in inst.ops.iter().enumerate() {
                if let MOperand::Def(v) = o {
                    if let Some(r) = rv(p, *v) {
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
                                    .and_then(|(_, u)| map[u as usize]);
                                match tied_use {
                                    Some(u) => Operand::reg_reuse_def(r, u),
                                    // Pair defs are early: 64-bit results must not
                                    // partially overwrite a source still being read.
                                    None if r.class() == ra::RegClass::Vector => Operand::new(
                                        r,
                                        OperandConstraint::Reg,
                                        OperandKind::Def,
                                        OperandPos::Early,
                                    ),
                                    None if is_isa
                                        && tied_def != Some(i)
                                        && r.class() == ra::RegClass::Float =>
                                    {
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
                        map[i] = Some(ops.len());
                        ops.push(op);
                    }
                }
            }
            insts.push(RaInst {
                ops,
                map,
                branch: false,
                ret: false,
            });
        }
        let ss = bd.term.successors();
        insts.push(RaInst {
            ops: Vec::new(),
            map: Vec::new(),
            branch: !ss.is_empty(),
            ret: ss.is_empty(),
        });
        ranges.push((start, insts.len() as u32));
        succs.push(
            ss.iter()
                .map(|(s, _)| Block::new(s.index()))
                .collect::<Vec<_>>(),
        );
        args.push(
            ss.iter()
                .map(|(_, a)| a.iter().filter_map(|v| rv(p, *v)).collect::<Vec<_>>())
                .collect::<Vec<_>>(),
        );
        params.push(
            bd.params
                .iter()
                .filter_map(|v| rv(p, *v))
                .collect::<Vec<_>>(),
        );
        let _ = b;
    }
    let preds = (0..nb)
        .map(|b| {
            p.preds[b]
                .iter()
                .map(|x: &MBlock| Block::new(x.index()))
                .collect()
        })
        .collect();
    RaFunc {
        insts,
        ranges,
        succs,
        preds,
        params,
        args,
        num_vregs: mf.vregs.len(),
    }
}

impl Function for RaFunc {
    fn num_insts(&self) -> usize {
        self.insts.len()
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
        &self.succs[block.index()]
    }
    fn block_preds(&self, block: Block) -> &[Block] {
        &self.preds[block.index()]
    }
    fn block_params(&self, block: Block) -> &[ra::VReg] {
        &self.params[block.index()]
    }
    fn is_ret(&self, insn: Inst) -> bool {
        self.insts[insn.index()].ret
    }
    fn is_branch(&self, insn: Inst) -> bool {
        self.insts[insn.index()].branch
    }
    fn branch_blockparams(&self, block: Block, _insn: Inst, succ_idx: usize) -> &[ra::VReg] {
        &self.args[block.index()][succ_idx]
    }
    fn inst_operands(&self, insn: Inst) -> &[Operand] {
        &self.insts[insn.index()].ops
    }
    fn inst_clobbers(&self, _insn: Inst) -> PRegSet {
        PRegSet::empty()
    }
    fn num_vregs(&self) -> usize {
        self.num_vregs
    }
    fn spillslot_size(&self, regclass: ra::RegClass) -> usize {
        match regclass {
            ra::RegClass::Vector => 2,
            _ => 1,
        }
    }
}

//! Machine IR: gfx9 instructions on virtual registers, the form instruction selection gives and
//! scheduling and register allocation take (see `docs/backend.md`).
//!
//! A [`MachineFunction`] is a CFG of [`MBlockData`] in layout order. Each block has SSA block
//! parameters (wave-uniform phis, as in regalloc2), a list of [`MInst`] and one [`Terminator`]
//! kept apart from the list, so that a conditional branch with its fall-through is one
//! terminator with two successors. Operands are in the instruction layer's order
//! (destinations first); an operand is a virtual register ([`MOperand::Def`]/[`MOperand::Use`])
//! or anything physical ([`MOperand::Phys`]: inline constants, literals, `exec`, `vcc`, ...).

use cranelift_entity::{entity_impl, PrimaryMap};
use smallvec::SmallVec;

use crate::codeobj::metadata::KernelMeta;
use crate::isa::{self, Encoding, Modifiers, Opcode};
use crate::Target;

/// A virtual register: one value of one class and width, defined once.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VReg(u32);
entity_impl!(VReg, "%");

/// A machine basic block.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MBlock(u32);
entity_impl!(MBlock, "bb");

/// The register file a virtual register lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegClass {
    /// Scalar registers: one value per wave.
    Sgpr,
    /// Vector registers: one value per lane.
    Vgpr,
    /// Accumulation registers (gfx90a/gfx942): MFMA accumulators.
    Agpr,
}

/// What a virtual register is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VRegData {
    /// Register file.
    pub class: RegClass,
    /// Consecutive 32-bit registers (1, 2, 3, 4, 8, 16); tuples are aligned by the allocator.
    pub dwords: u8,
}

/// An operand of a machine instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MOperand {
    /// Writes a virtual register (every dword of it).
    Def(VReg),
    /// Reads a virtual register.
    Use(VReg),
    /// A fixed physical operand: constant, literal, special or ABI register.
    Phys(isa::Operand),
}

/// A value the dispatcher hands the kernel at entry; where it lives depends on which user and
/// system SGPRs are enabled, which the allocator settles (scratch adds the private segment).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AbiValue {
    /// Kernarg segment pointer (SGPR pair).
    KernargPtr,
    /// The first kernarg dwords, preloaded by the dispatcher into the user SGPRs after the
    /// kernarg pointer (an SGPR tuple of at least 2 dwords, gfx90a/gfx942).
    KernargPreload,
    /// Workgroup id x/y/z (one SGPR each).
    WorkgroupId(u8),
    /// Work-item ids: `v0` packed x | y << 10 | z << 20 on gfx90a/gfx942; on gfx900 the
    /// dimension's own VGPR (`v0`, `v1`, `v2`).
    WorkitemId(u8),
}

/// What an instruction does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MOpcode {
    /// A real instruction of the instruction layer.
    Isa(Opcode),
    /// `Def(v)`: `v` exists with undefined contents (gives a tied partial write its first def).
    ImplicitDef,
    /// `Def(dst), Use(src)` of the same class and width; the allocator may coalesce it.
    Copy,
    /// `Def(v)`: `v` holds the ABI value at kernel entry. Only at the start of the entry block.
    LiveIn(AbiValue),
    /// `Def(tuple), Use(part0), Use(part1), ...`: a tuple assembled from parts of the same class
    /// whose widths add up to the tuple's, lowest dwords first (LLVM's `REG_SEQUENCE`); a part
    /// of an SGPR tuple may also be a `Phys` 32-bit literal, one dword written with
    /// `s_mov_b32` where the Build is (a buffer descriptor's config word). The
    /// allocator makes it moves into the tuple's registers (or coalesces them away). Needed for
    /// buffer descriptors, 64-bit values from 32-bit halves, and `store.x2/x4` data.
    Build,
    /// `Def(part), Use(tuple)`: the dwords `k..k + width(part)` of `tuple` (same class); a move
    /// from a subregister that the allocator may coalesce. Needed for halves of 64-bit values
    /// and the elements of `load.x2/x4` results.
    Extract(u8),
}

/// Bits of [`MInst::implicit_defs`] / [`MInst::implicit_uses`]: special registers an
/// instruction touches without naming them.
pub mod implicit {
    /// `exec`.
    pub const EXEC: u8 = 1;
    /// `vcc`.
    pub const VCC: u8 = 2;
    /// `scc`.
    pub const SCC: u8 = 4;
    /// `m0`.
    pub const M0: u8 = 8;
}

/// One machine instruction on virtual registers.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MInst {
    /// What it does.
    pub opcode: MOpcode,
    /// Operands in the instruction layer's order (destinations first).
    pub ops: SmallVec<[MOperand; 6]>,
    /// Encoding variant (e32/e64/DPP/SDWA).
    pub encoding: Encoding,
    /// Non-operand fields (modifiers, offsets, cache bits).
    pub mods: Modifiers,
    /// `(def index, use index)`: the def must get the use's register (read-modify-write,
    /// and the per-lane merges of divergent control flow). When the tied use is not one of
    /// the instruction form's operands (the partial write `z1 = v_mov_b32 a` tied to `z0`),
    /// isel appends it after the form's operands: `[Def(z1), Use(a), Use(z0)]`, tied `(0, 2)`.
    /// Such trailing operands ([`MInst::extra_operands`]) are not encoded; the allocator gives
    /// them the def's register and drops them when it builds the `isa::Inst`.
    pub tied: Option<(u8, u8)>,
    /// Special registers written without being an operand ([`implicit`] bits).
    pub implicit_defs: u8,
    /// Special registers read without being an operand ([`implicit`] bits).
    pub implicit_uses: u8,
}

/// The operands copied as one slice (`SmallVec::from_slice`): the derived clone pushed them
/// one at a time through the generic `extend` (~100 instructions per `MInst`), and isel, the
/// scheduled copies and the allocator's preparation clone or make every instruction.
impl Clone for MInst {
    fn clone(&self) -> MInst {
        MInst {
            opcode: self.opcode,
            ops: SmallVec::from_slice(&self.ops),
            encoding: self.encoding,
            mods: self.mods,
            tied: self.tied,
            implicit_defs: self.implicit_defs,
            implicit_uses: self.implicit_uses,
        }
    }
}

impl MInst {
    /// A real instruction with default modifiers in its native encoding.
    pub fn isa(op: Opcode, ops: &[MOperand]) -> MInst {
        MInst {
            opcode: MOpcode::Isa(op),
            ops: SmallVec::from_slice(ops),
            encoding: Encoding::Native,
            mods: Modifiers::default_for(op),
            tied: None,
            implicit_defs: 0,
            implicit_uses: 0,
        }
    }

    /// A pseudo-instruction.
    pub fn pseudo(opcode: MOpcode, ops: &[MOperand]) -> MInst {
        MInst {
            opcode,
            ops: SmallVec::from_slice(ops),
            encoding: Encoding::Native,
            mods: Modifiers::default(),
            tied: None,
            implicit_defs: 0,
            implicit_uses: 0,
        }
    }

    /// How many of [`MInst::ops`] are the form's encoded operands (the rest are appended
    /// tied uses of partial writes, see [`MInst::tied`]). Pseudo-instructions encode none.
    pub fn encoded_operand_count(&self) -> usize {
        match self.opcode {
            MOpcode::Isa(op) => {
                let form = isa::operand_infos(op, self.encoding, self.mods.glc).len();
                form.min(self.ops.len())
            }
            _ => 0,
        }
    }

    /// The appended (not encoded) operands: tied uses of partial writes.
    pub fn extra_operands(&self) -> &[MOperand] {
        match self.opcode {
            MOpcode::Isa(_) => &self.ops[self.encoded_operand_count()..],
            _ => &[],
        }
    }

    /// The virtual registers written.
    pub fn defs(&self) -> impl Iterator<Item = VReg> + '_ {
        self.ops.iter().filter_map(|o| match o {
            MOperand::Def(v) => Some(*v),
            _ => None,
        })
    }

    /// The virtual registers read.
    pub fn uses(&self) -> impl Iterator<Item = VReg> + '_ {
        self.ops.iter().filter_map(|o| match o {
            MOperand::Use(v) => Some(*v),
            _ => None,
        })
    }
}

/// The condition of a conditional branch (`s_cbranch_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BranchCond {
    /// `s_cbranch_scc0`.
    Scc0,
    /// `s_cbranch_scc1`.
    Scc1,
    /// `s_cbranch_vccz`.
    Vccz,
    /// `s_cbranch_vccnz`.
    Vccnz,
    /// `s_cbranch_execz`.
    Execz,
    /// `s_cbranch_execnz`.
    Execnz,
}

impl BranchCond {
    /// The instruction that tests it.
    pub fn opcode_name(self) -> &'static str {
        match self {
            BranchCond::Scc0 => "s_cbranch_scc0",
            BranchCond::Scc1 => "s_cbranch_scc1",
            BranchCond::Vccz => "s_cbranch_vccz",
            BranchCond::Vccnz => "s_cbranch_vccnz",
            BranchCond::Execz => "s_cbranch_execz",
            BranchCond::Execnz => "s_cbranch_execnz",
        }
    }

    /// The special register the branch reads ([`implicit`] bit).
    pub fn reads(self) -> u8 {
        match self {
            BranchCond::Scc0 | BranchCond::Scc1 => implicit::SCC,
            BranchCond::Vccz | BranchCond::Vccnz => implicit::VCC,
            BranchCond::Execz | BranchCond::Execnz => implicit::EXEC,
        }
    }
}

/// How a block ends. Arguments go to the successor's block parameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Terminator {
    /// Continue at `target` (`s_branch`, or nothing when it is the next block in layout).
    Jump {
        /// Successor.
        target: MBlock,
        /// Block arguments.
        args: Vec<VReg>,
    },
    /// `s_cbranch_<cond> taken`, else `not_taken` (fall-through or `s_branch`).
    Branch {
        /// What is tested.
        cond: BranchCond,
        /// Successor when the condition holds.
        taken: MBlock,
        /// Block arguments to `taken`.
        taken_args: Vec<VReg>,
        /// Successor otherwise.
        not_taken: MBlock,
        /// Block arguments to `not_taken`.
        not_taken_args: Vec<VReg>,
    },
    /// `s_endpgm`.
    Return,
}

impl Terminator {
    /// Successors with their arguments, taken first.
    pub fn successors(&self) -> SmallVec<[(MBlock, &[VReg]); 2]> {
        match self {
            Terminator::Jump { target, args } => smallvec::smallvec![(*target, args.as_slice())],
            Terminator::Branch {
                taken,
                taken_args,
                not_taken,
                not_taken_args,
                ..
            } => smallvec::smallvec![
                (*taken, taken_args.as_slice()),
                (*not_taken, not_taken_args.as_slice())
            ],
            Terminator::Return => SmallVec::new(),
        }
    }
}

/// A block of machine instructions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MBlockData {
    /// SSA block parameters (wave-uniform choices).
    pub params: Vec<VReg>,
    /// Instructions, in order; no terminators.
    pub insts: Vec<MInst>,
    /// How the block ends.
    pub term: Terminator,
    /// EXEC may be a strict subset of the launch mask here (inside a divergent region), so
    /// allocator moves and spills of VGPRs must be whole-wave.
    pub exec_partial: bool,
    /// Loop nesting depth (spill weights).
    pub loop_depth: u32,
}

impl MBlockData {
    /// An empty block that returns.
    pub fn new() -> MBlockData {
        MBlockData {
            params: Vec::new(),
            insts: Vec::new(),
            term: Terminator::Return,
            exec_partial: false,
            loop_depth: 0,
        }
    }
}

impl Default for MBlockData {
    fn default() -> Self {
        MBlockData::new()
    }
}

/// What the kernel needs from the dispatch, as isel knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelAbi {
    /// Target the code is for.
    pub target: Target,
    /// Code-object metadata: name, explicit and hidden kernarg layout. Register counts and
    /// scratch are filled in at emission.
    pub meta: KernelMeta,
    /// Workgroup ids x/y/z read (system SGPRs enabled).
    pub workgroup_ids: [bool; 3],
    /// Highest work-item id dimension read + 1 (0..=3).
    pub workitem_dims: u8,
    /// Static LDS bytes.
    pub lds_bytes: u32,
}

/// A kernel in machine IR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineFunction {
    /// Dispatch interface.
    pub abi: KernelAbi,
    /// Blocks; layout order is key order, the first is the entry.
    pub blocks: PrimaryMap<MBlock, MBlockData>,
    /// Virtual registers.
    pub vregs: PrimaryMap<VReg, VRegData>,
}

impl MachineFunction {
    /// An empty function.
    pub fn new(abi: KernelAbi) -> MachineFunction {
        MachineFunction {
            abi,
            blocks: PrimaryMap::new(),
            vregs: PrimaryMap::new(),
        }
    }

    /// A new virtual register.
    pub fn vreg(&mut self, class: RegClass, dwords: u8) -> VReg {
        self.vregs.push(VRegData { class, dwords })
    }

    /// A new empty block (appended to the layout).
    pub fn block(&mut self) -> MBlock {
        self.blocks.push(MBlockData::new())
    }

    /// The entry block.
    pub fn entry(&self) -> MBlock {
        MBlock::from_u32(0)
    }
}

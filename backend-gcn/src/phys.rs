//! The allocated machine function: gfx9 instructions on physical registers, the form register
//! allocation gives and `InsertWaitcnt`, hazard recognition and emission take.
//!
//! Block `i` of [`PhysFunction::blocks`] is [`MBlock`] number `i` of the machine function it came
//! from, in layout order. Branch instructions are not in the lists: each block ends with a
//! [`PhysTerminator`], which emission turns into `s_cbranch_*`/`s_branch`/`s_endpgm` (a jump to
//! the next block in layout is dropped).

use crate::codeobj::descriptor::UserSgprs;
use crate::isa;
use crate::mir::{BranchCond, KernelAbi, MBlock};

/// How an allocated block ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PhysTerminator {
    /// Continue at the block.
    Jump(MBlock),
    /// `s_cbranch_<cond> taken`, else `not_taken`.
    Branch {
        /// What is tested.
        cond: BranchCond,
        /// Successor when the condition holds.
        taken: MBlock,
        /// Successor otherwise.
        not_taken: MBlock,
    },
    /// `s_endpgm`.
    Return,
}

impl PhysTerminator {
    /// Successor blocks, taken first.
    pub fn successors(&self) -> smallvec::SmallVec<[MBlock; 2]> {
        match *self {
            PhysTerminator::Jump(b) => smallvec::smallvec![b],
            PhysTerminator::Branch {
                taken, not_taken, ..
            } => smallvec::smallvec![taken, not_taken],
            PhysTerminator::Return => smallvec::SmallVec::new(),
        }
    }
}

/// One allocated block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhysBlock {
    /// Instructions, in order (no branches).
    pub insts: Vec<isa::Inst>,
    /// How the block ends.
    pub term: PhysTerminator,
}

/// Where the dispatcher's values ended up and what the kernel occupies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegUsage {
    /// SGPRs used (highest `s` index + 1), without VCC/FLAT_SCRATCH/XNACK_MASK.
    pub sgprs: u32,
    /// Architectural VGPRs used (highest `v` index + 1).
    pub vgprs: u32,
    /// AGPRs used (highest `a` index + 1).
    pub agprs: u32,
    /// Scratch bytes per work-item.
    pub scratch_bytes: u32,
    /// Values spilled to spare SGPRs.
    pub spills_to_sgprs: u32,
    /// Values spilled to spare VGPRs above the allocated range.
    pub spills_to_vgprs: u32,
    /// Values spilled to AGPRs (gfx90a/gfx942).
    pub spills_to_agprs: u32,
    /// Values spilled to scratch memory.
    pub spills_to_scratch: u32,
    /// Spill and reload instructions inserted.
    pub spill_insts: u32,
    /// Register-to-register moves the allocator inserted.
    pub moves: u32,
}

impl RegUsage {
    /// Registers per lane counted against a VGPR budget: the VGPRs, plus the AGPRs above
    /// `accum_offset` (VGPRs rounded up to 4) when there are any.
    pub fn budget_registers(&self) -> u32 {
        if self.agprs > 0 {
            self.vgprs.div_ceil(4) * 4 + self.agprs
        } else {
            self.vgprs
        }
    }

    /// Values spilled, to any location.
    pub fn spills(&self) -> u32 {
        self.spills_to_sgprs + self.spills_to_vgprs + self.spills_to_agprs + self.spills_to_scratch
    }
}

/// An allocated kernel, ready for waits, hazards and emission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhysFunction {
    /// Dispatch interface (from isel).
    pub abi: KernelAbi,
    /// User SGPRs the dispatcher must initialise (kernarg pointer; private segment buffer when
    /// scratch is used on gfx900/gfx90a).
    pub user_sgprs: UserSgprs,
    /// The system SGPR holding the private segment wave offset, when scratch is used.
    pub scratch_wave_offset_sgpr: Option<u16>,
    /// Blocks in layout order.
    pub blocks: Vec<PhysBlock>,
    /// Registers and spills.
    pub usage: RegUsage,
}

impl PhysFunction {
    /// A function of `blocks` (instructions and terminator each) with only the kernarg pointer
    /// as user SGPR, no scratch and zero usage — what hand-written tests of the late stages start
    /// from; the allocator fills the real values.
    pub fn from_blocks(
        abi: KernelAbi,
        blocks: Vec<(Vec<isa::Inst>, PhysTerminator)>,
    ) -> PhysFunction {
        PhysFunction {
            abi,
            user_sgprs: UserSgprs {
                kernarg_segment_ptr: true,
                ..Default::default()
            },
            scratch_wave_offset_sgpr: None,
            blocks: blocks
                .into_iter()
                .map(|(insts, term)| PhysBlock { insts, term })
                .collect(),
            usage: RegUsage::default(),
        }
    }
}

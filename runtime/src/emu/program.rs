//! A kernel's machine code decoded once, before any wave runs: every instruction with its
//! operands resolved for the unit that executes it, the registers it reads and writes (for the
//! scoreboard), its statistics class and its text (for error messages). Waves then look
//! instructions up by pc in a dense table instead of decoding on every step.

use super::ds::DsInst;
use super::scalar::ScalarInst;
use super::scoreboard::{OpKind, RegSet};
use super::smem::SmemInst;
use super::stats::InstClass;
use super::valu::ValuInst;
use super::vmem::VmemInst;
use super::wait_states::WaitRules;
use super::wave::EmuError;

/// What executes an instruction, with its operands resolved.
#[derive(Clone, Debug)]
pub enum Op {
    /// Scalar ALU and program control.
    Scalar(ScalarInst),
    /// Scalar memory.
    Smem(SmemInst),
    /// Vector memory.
    Vmem(VmemInst),
    /// LDS.
    Ds(DsInst),
    /// Vector ALU (executed by `valu::execute`).
    Valu(Box<ValuInst>),
    /// Decodes, but the device cannot run it; executing it is an error with this reason.
    Unsupported(String),
    /// Does not decode; executing it is an error with this reason.
    Invalid(String),
}

/// One decoded instruction.
#[derive(Clone, Debug)]
pub struct Decoded {
    /// Byte address.
    pub pc: u64,
    /// Bytes (4, 8 or 12).
    pub size: u8,
    /// How to execute it.
    pub op: Op,
    /// Registers it reads (checked against in-flight loads).
    pub reads: RegSet,
    /// Registers it writes (checked against in-flight loads).
    pub writes: RegSet,
    /// If it is itself a memory operation: its kind (a newer load to the same register on the same
    /// in-order counter is not a write-after-write hazard).
    pub issuing: Option<OpKind>,
    /// Counted as.
    pub class: InstClass,
    /// Vector instruction: counts active lanes as lane-operations.
    pub vector: bool,
    /// Assembler text with the encoding, for messages.
    pub text: String,
    /// The opcode (its table entry has the timing model's facts); `None` for undecodable words.
    pub opcode: Option<kjit_backend_gcn::isa::Opcode>,
    /// Register operands beyond what the kernel descriptor allocates: executing this is an error.
    pub illegal: Option<String>,
    /// Wait states it provides, produces and needs (see `wait_states`).
    pub waits: WaitRules,
}

/// A kernel's decoded code.
#[derive(Clone, Debug, Default)]
pub struct Program {
    /// Address of the first instruction.
    pub base: u64,
    /// Instructions in address order.
    pub insts: Vec<Decoded>,
    /// For each dword of code: index into `insts` of the instruction starting there, or `u32::MAX`.
    index: Vec<u32>,
    /// Device address of the code object's virtual address 0: error messages give pcs as
    /// code-object addresses (as `llvm-objdump -d` prints them), waves run at device addresses.
    pub image_base: u64,
}

impl Program {
    /// Builds the pc index over decoded instructions (in address order, starting at `base`).
    pub fn new(base: u64, insts: Vec<Decoded>) -> Program {
        let end = insts.last().map(|d| d.pc + d.size as u64).unwrap_or(base);
        let mut index = vec![u32::MAX; ((end - base) / 4) as usize];
        for (i, d) in insts.iter().enumerate() {
            index[((d.pc - base) / 4) as usize] = i as u32;
        }
        Program {
            base,
            insts,
            index,
            image_base: 0,
        }
    }

    /// The instruction at `pc`.
    #[inline(always)]
    pub fn at(&self, pc: u64) -> Result<&Decoded, EmuError> {
        self.lookup(pc).map(|(_, d)| d)
    }

    /// The instruction at `pc` and its index in [`Program::insts`].
    #[inline(always)]
    pub fn lookup(&self, pc: u64) -> Result<(u32, &Decoded), EmuError> {
        let off = pc.wrapping_sub(self.base);
        if off.is_multiple_of(4) {
            if let Some(&i) = self.index.get((off / 4) as usize) {
                if i != u32::MAX {
                    return Ok((i, &self.insts[i as usize]));
                }
            }
        }
        Err(EmuError::Stuck {
            at: Default::default(),
            detail: format!(
                "pc {pc:#x} is not the start of an instruction of the kernel (code spans {:#x}..{:#x})",
                self.base,
                self.base + self.index.len() as u64 * 4
            ),
        })
    }
}

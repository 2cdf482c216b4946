//! Errors of the software GCN device. Every error that happens while a wave runs names the wave,
//! the pc and the instruction text (the [`At`] part), and what went wrong (the variant). Code that
//! executes one instruction (scalar, vector, memory units) creates errors without a location
//! (`At::default()`); the scheduler fills it in with [`EmuError::locate`], so no unit has to carry
//! the wave's identity around.

use std::fmt;

/// Which wave of a launch: its workgroup id and its index inside the workgroup.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WaveId {
    /// Workgroup id in x, y, z.
    pub workgroup: [u32; 3],
    /// Wave index inside the workgroup (0-based, in launch order).
    pub wave: u32,
}

impl fmt::Display for WaveId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z] = self.workgroup;
        write!(f, "wave {} of workgroup ({x},{y},{z})", self.wave)
    }
}

/// Where an error happened. `inst` is empty until the scheduler locates the error.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct At {
    /// The wave.
    pub wave: WaveId,
    /// Byte address of the instruction (as in the code object's `.text`).
    pub pc: u64,
    /// The instruction as text, with its encoding words.
    pub inst: String,
}

impl At {
    /// Whether the scheduler has filled this in yet.
    pub fn is_set(&self) -> bool {
        !self.inst.is_empty()
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_set() {
            write!(f, "{}, pc {:#x} `{}`", self.wave, self.pc, self.inst)
        } else {
            write!(f, "(unlocated)")
        }
    }
}

/// What went wrong while a kernel ran on the software device.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EmuError {
    /// The instruction decodes but the device does not implement it (or this form of it).
    #[error("{at}: unsupported instruction: {what}")]
    Unsupported {
        /// Location.
        at: At,
        /// Which part is unsupported.
        what: String,
    },
    /// The bytes at pc do not decode as an instruction of the target.
    #[error("wave {wave}, pc {pc:#x}: cannot decode instruction {words}: {reason}")]
    Decode {
        /// The wave that tried to run it.
        wave: WaveId,
        /// Byte address.
        pc: u64,
        /// The words at pc, in hex.
        words: String,
        /// The decoder's reason.
        reason: String,
    },
    /// An access outside every allocation (or outside LDS / a private segment).
    #[error("{at}: memory fault: {detail}")]
    MemoryFault {
        /// Location.
        at: At,
        /// Faulting address (in the address space named in `detail`).
        addr: u64,
        /// What access, and why it faulted.
        detail: String,
    },
    /// A register was read (or overwritten) while a memory operation that writes it is in flight,
    /// or a store's data register was overwritten while the hardware still reads it.
    #[error("{at}: hazard: {register} {detail}; missing `{missing_wait}`")]
    Hazard {
        /// Location (the instruction that reads or writes the register too early).
        at: At,
        /// The register, e.g. `v5` or `s[4:5]`.
        register: String,
        /// What is in flight, and where it was issued.
        detail: String,
        /// The `s_waitcnt` that would have made the access safe.
        missing_wait: String,
    },
    /// Two waves of a workgroup touched the same LDS bytes, at least one writing, with no
    /// `s_barrier` between them.
    #[error("{at}: LDS race: {detail}")]
    LdsRace {
        /// Location of the second access.
        at: At,
        /// LDS byte address.
        addr: u32,
        /// Both accesses.
        detail: String,
    },
    /// The instruction's operands are not valid on this wave (register beyond the kernel's
    /// allocation, misaligned tuple, a value the hardware does not define, ...).
    #[error("{at}: {detail}")]
    Illegal {
        /// Location.
        at: At,
        /// Why.
        detail: String,
    },
    /// A wave executed more instructions than the budget allows (an infinite loop, usually).
    #[error(
        "{at}: instruction budget of {limit} instructions per wave exhausted (infinite loop?)"
    )]
    Budget {
        /// Location of the instruction that would exceed it.
        at: At,
        /// The budget.
        limit: u64,
    },
    /// Every live wave of a workgroup waits at a barrier that can never complete, or a wave ran
    /// off the end of the code.
    #[error("{at}: {detail}")]
    Stuck {
        /// Location.
        at: At,
        /// Why no wave can make progress.
        detail: String,
    },
}

impl EmuError {
    /// An unsupported-instruction error, located later by the scheduler.
    pub fn unsupported(what: impl Into<String>) -> EmuError {
        EmuError::Unsupported {
            at: At::default(),
            what: what.into(),
        }
    }

    /// An illegal-operand error, located later by the scheduler.
    pub fn illegal(detail: impl Into<String>) -> EmuError {
        EmuError::Illegal {
            at: At::default(),
            detail: detail.into(),
        }
    }

    /// A memory fault, located later by the scheduler.
    pub fn fault(addr: u64, detail: impl Into<String>) -> EmuError {
        EmuError::MemoryFault {
            at: At::default(),
            addr,
            detail: detail.into(),
        }
    }

    /// The location, if the variant has one.
    pub fn at(&self) -> Option<&At> {
        match self {
            EmuError::Unsupported { at, .. }
            | EmuError::MemoryFault { at, .. }
            | EmuError::Hazard { at, .. }
            | EmuError::LdsRace { at, .. }
            | EmuError::Illegal { at, .. }
            | EmuError::Budget { at, .. }
            | EmuError::Stuck { at, .. } => Some(at),
            EmuError::Decode { .. } => None,
        }
    }

    /// Fills in the location if it is not set yet.
    pub fn locate(mut self, here: impl FnOnce() -> At) -> EmuError {
        match &mut self {
            EmuError::Unsupported { at, .. }
            | EmuError::MemoryFault { at, .. }
            | EmuError::Hazard { at, .. }
            | EmuError::LdsRace { at, .. }
            | EmuError::Illegal { at, .. }
            | EmuError::Budget { at, .. }
            | EmuError::Stuck { at, .. } => {
                if !at.is_set() {
                    *at = here();
                }
            }
            EmuError::Decode { .. } => {}
        }
        self
    }
}

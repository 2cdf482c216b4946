//! What one instruction may touch besides its own wave's registers: device memory, the
//! workgroup's LDS, the wave's scoreboard and statistics, and the wave's private-segment layout.
//! The scheduler builds one per wave step; the memory units (`smem`, `vmem`, `ds`) take it.

use super::lds::Lds;
use super::memory::{AddrCache, MemFault, MemoryView};
use super::scoreboard::Scoreboard;
use super::stats::Counters;
use super::wave::EmuError;

/// Everything outside the wave's registers that an instruction can touch.
pub struct Ctx<'a> {
    /// Device memory.
    pub mem: &'a MemoryView,
    /// The wave's last-hit allocation.
    pub cache: &'a mut AddrCache,
    /// The workgroup's LDS.
    pub lds: &'a mut Lds,
    /// The wave's counters and in-flight operations.
    pub sb: &'a mut Scoreboard,
    /// The wave's statistics.
    pub counters: &'a mut Counters,
    /// Index of the wave inside its workgroup (for LDS race reports).
    pub wave_index: u8,
    /// Bytes of private segment per work-item (accesses beyond it are faults).
    pub scratch_per_lane: u32,
    /// Device address of the code object's address 0: pcs recorded for messages (in-flight
    /// operations, LDS accesses) are code-object addresses, as `llvm-objdump -d` prints them.
    pub pc_base: u64,
    /// Report raw-buffer accesses out of their descriptor's range (`RunConfig::bounds_check`).
    pub bounds_check: bool,
}

/// Turns a device-memory fault into a located-later error.
pub fn mem_fault(f: MemFault) -> EmuError {
    EmuError::fault(f.addr, f.to_string())
}

//! One compute unit of the timing model: its SIMDs, resident waves and shared units, and AMD's
//! issue rule.
//!
//! Each cycle the CU's scheduler looks at one SIMD, round-robin (SIMD `t mod 4` at cycle `t`),
//! and issues from that SIMD's waves, oldest first, at most one instruction per wave and at most
//! one per category (VALU/MFMA, VMEM, SALU/SMEM, LDS, branch); `s_waitcnt`, `s_nop`,
//! `s_barrier` and `s_endpgm` retire in the scheduler (rocprofiler-compute, "Pipeline
//! descriptions"). A wave64 VALU instruction keeps its SIMD's VALU for 4 cycles (16 lanes per
//! cycle), so a full-rate op issues every turn; quarter-rate ops keep it 16 cycles; an MFMA keeps
//! the SIMD's matrix unit for its pass cycles and the VALU for its co-execution delay.

use std::collections::VecDeque;

use smallvec::SmallVec;

use crate::emu::scoreboard::RegSet;

use super::report::StallCause;
use super::trace::Step;

/// Most outstanding vector-memory operations a wave may have (vmcnt is 6 bits on gfx9).
pub const MAX_VMCNT: usize = 63;
/// Most outstanding LDS/scalar-memory operations (lgkmcnt is 4 bits).
pub const MAX_LGKMCNT: usize = 15;
/// Issue categories per cycle.
pub const CATEGORIES: usize = 5;

/// A time that never comes.
pub const NEVER: u64 = u64::MAX / 4;

/// The first cycle `>= t` on which SIMD `simd` has its issue turn.
#[inline]
pub fn turn_at_or_after(t: u64, simd: u8) -> u64 {
    t + ((simd as u64 + 4 - t % 4) % 4)
}

/// A resident wave's timing state. The fields every issue attempt reads come first and fill
/// the first cache line (`repr(C)` keeps the order): a turn's first touch of a wave is its most
/// expensive memory access in the replay.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct WaveState {
    /// Waiting at `s_barrier`.
    pub at_barrier: bool,
    /// Its SIMD (0..4).
    pub simd: u8,
    /// Why `ready_at` is later than the cadence allows.
    pub cause: StallCause,
    /// Cause of the last failed issue attempt (unit or category taken).
    pub blocked: StallCause,
    /// Index of the wave in its workgroup (and in the group's trace).
    pub index: u16,
    /// Slot of its workgroup in the device's group table.
    pub group: u32,
    /// Next step of its trace.
    pub cursor: u32,
    /// Earliest cycle the current step's own constraints allow.
    pub ready_at: u64,
    /// When it last issued.
    pub last_issue: u64,
    /// That step, copied out of the trace when the cursor moves (the issue loop reads it often).
    pub step: Option<Step>,
    /// The instruction-cache line it last fetched from.
    pub fetch_line: u64,
    /// Completion of its last LDS operation (LDS returns in order).
    pub last_lds: u64,
    /// Its trace (taken from the workgroup's while the wave is resident).
    pub steps: Vec<Step>,
    /// Completion cycles of outstanding vector-memory operations, in order.
    pub vm: VecDeque<u64>,
    /// Completion cycles of outstanding LDS and scalar-memory operations.
    pub lgkm: Vec<u64>,
    /// Results of long-latency ALU operations not yet readable: (registers, ready cycle, an
    /// MFMA accumulating in place into them: a next one doing the same need not wait).
    pub pending: Vec<(RegSet, u64, bool)>,
    /// Dispatch cycle (for occupancy).
    pub start: u64,
}

impl WaveState {
    /// A wave starting at `start`.
    pub fn new(group: u32, index: u16, simd: u8, start: u64) -> WaveState {
        WaveState {
            group,
            index,
            simd,
            steps: Vec::new(),
            cursor: 0,
            step: None,
            ready_at: start,
            cause: StallCause::NoWaveResident,
            blocked: StallCause::IssuePort,
            last_issue: start.saturating_sub(4),
            vm: VecDeque::new(),
            lgkm: Vec::new(),
            last_lds: 0,
            pending: Vec::new(),
            fetch_line: u64::MAX,
            at_barrier: false,
            start,
        }
    }

    /// The cycle at which `vm` outstanding vector operations at most remain.
    pub fn vm_ready(&self, vm: usize) -> u64 {
        if self.vm.len() <= vm {
            0
        } else {
            self.vm[self.vm.len() - vm - 1]
        }
    }

    /// The cycle at which `lgkm` outstanding LDS/scalar operations at most remain (scalar memory
    /// returns out of order: the (n - lgkm)-th earliest completion).
    pub fn lgkm_ready(&self, lgkm: usize) -> u64 {
        if self.lgkm.len() <= lgkm {
            return 0;
        }
        let mut v = self.lgkm.clone();
        v.sort_unstable();
        v[self.lgkm.len() - lgkm - 1]
    }

    /// Drops operations that completed by `t`.
    pub fn retire(&mut self, t: u64) {
        while self.vm.front().is_some_and(|&c| c <= t) {
            self.vm.pop_front();
        }
        self.lgkm.retain(|&c| c > t);
        self.pending.retain(|(_, r, _)| *r > t);
    }

    /// Latest completion of anything outstanding.
    pub fn drained_at(&self) -> u64 {
        let vm = self.vm.back().copied().unwrap_or(0);
        let lgkm = self.lgkm.iter().copied().max().unwrap_or(0);
        vm.max(lgkm)
    }
}

/// One SIMD's units and residents.
#[derive(Clone, Debug, Default)]
pub struct Simd {
    /// Resident waves (ids into the device's wave table), oldest first (inline: at most 10).
    pub waves: SmallVec<[u32; 10]>,
    /// For each resident wave, a lower bound of the next cycle it may issue (a cached
    /// `DeviceSim::next_try`: units only get busier, so a bound stays valid until the wave moves).
    pub tries: SmallVec<[u64; 10]>,
    /// The VALU is free from this cycle.
    pub valu_free: u64,
    /// The matrix unit is free from this cycle.
    pub mfma_free: u64,
    /// Since when no wave has been resident (`None` while some are).
    pub empty_since: Option<u64>,
    /// Dispatch-time wave count (waves placed, including those not started yet).
    pub placed: u32,
    /// Smallest `next_try` of its waves.
    pub next_try: u64,
}

/// One compute unit.
#[derive(Clone, Debug)]
pub struct Cu {
    /// Its four SIMDs.
    pub simds: [Simd; 4],
    /// Its L2 partition.
    pub partition: u32,
    /// The vector memory unit (address processing and L1 data path) is free from this cycle.
    pub vmem_free: u64,
    /// Each SIMD pair's LDS port is free from this cycle.
    pub lds_port_free: [u64; 2],
    /// Whether a port's busy time is due to bank conflicts (for stall attribution).
    pub lds_port_conflicted: [bool; 2],
    /// The LDS bank array is free from this cycle.
    pub lds_banks_free: u64,
    /// LDS bytes held by resident workgroups.
    pub lds_used: u32,
    /// Resident workgroups.
    pub groups: u32,
    /// The cycle of the pending wake-up in the device's event queue (`NEVER` when none).
    pub next_wake: u64,
}

impl Cu {
    /// An idle CU of partition `partition`.
    pub fn new(partition: u32) -> Cu {
        let mut simds: [Simd; 4] = Default::default();
        for s in &mut simds {
            s.empty_since = Some(0);
        }
        Cu {
            simds,
            partition,
            vmem_free: 0,
            lds_port_free: [0; 2],
            lds_port_conflicted: [false; 2],
            lds_banks_free: 0,
            lds_used: 0,
            groups: 0,
            next_wake: NEVER,
        }
    }
}

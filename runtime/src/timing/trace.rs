//! What the functional device records for the timing model: for each wave, the instructions it
//! executed in order, and for each memory instruction its footprint (the 64-byte granules a
//! vector or scalar access touched, or an LDS access's bank cycles).

/// Size of the address granules recorded for vector and scalar memory accesses. Every model's
/// cache lines are multiples of it.
pub const GRANULE: u64 = 64;

/// One executed instruction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// Index of the instruction in the kernel's decoded program.
    pub inst: u32,
    /// First granule (index into [`GroupTrace::granules`]) of a memory access.
    pub first: u32,
    /// Granules touched (vector/scalar memory).
    pub count: u16,
    /// LDS: bank-array cycles of the access; VMEM: 1 when the load writes LDS (direct-to-LDS).
    pub extra: u16,
}

/// One wave's executed instructions.
#[derive(Clone, Debug, Default)]
pub struct WaveTrace {
    /// In execution order.
    pub steps: Vec<Step>,
}

/// One workgroup's traces.
#[derive(Clone, Debug, Default)]
pub struct GroupTrace {
    /// Linear workgroup id (dispatch order).
    pub id: u64,
    /// The group's waves.
    pub waves: Vec<WaveTrace>,
    /// Granule numbers (byte address / [`GRANULE`]) the steps refer to.
    pub granules: Vec<u64>,
}

impl GroupTrace {
    /// An empty trace for `waves` waves of group `id`, reusing nothing.
    pub fn new(id: u64, waves: usize) -> GroupTrace {
        GroupTrace {
            id,
            waves: vec![WaveTrace::default(); waves],
            granules: Vec::new(),
        }
    }

    /// Records a memory access of wave `w` at instruction `inst` touching the byte addresses
    /// `addrs` (any order, repeats allowed).
    pub fn push_access(&mut self, w: usize, inst: u32, addrs: &mut Vec<u64>, extra: u16) {
        for a in addrs.iter_mut() {
            *a /= GRANULE;
        }
        addrs.sort_unstable();
        addrs.dedup();
        let first = self.granules.len() as u32;
        self.granules.extend_from_slice(addrs);
        self.waves[w].steps.push(Step {
            inst,
            first,
            count: addrs.len().min(u16::MAX as usize) as u16,
            extra,
        });
    }

    /// Records a non-memory instruction (or an LDS access with its bank cycles in `extra`).
    pub fn push(&mut self, w: usize, inst: u32, extra: u16) {
        self.waves[w].steps.push(Step {
            inst,
            first: 0,
            count: 0,
            extra,
        });
    }

    /// The granules of a step.
    pub fn granules_of(&self, s: &Step) -> &[u64] {
        &self.granules[s.first as usize..s.first as usize + s.count as usize]
    }
}

//! Per-launch statistics of the software device: wave-instructions by class, lane-operations,
//! bytes moved, hazard checks. Each wave counts into its own plain counters (no sharing between
//! threads on the hot path); workgroups merge them at the end of a launch.
//!
//! A later timing model will hang its cycle counts here too.

use crate::device::LaunchStats;

/// The class an instruction is counted under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InstClass {
    /// Scalar ALU (SOP1/SOP2/SOPK/SOPC and SOPP that are not control flow).
    Salu,
    /// Vector ALU (VOP1/VOP2/VOPC/VOP3/VOP3P, DPP/SDWA).
    Valu,
    /// Vector memory (MUBUF/MTBUF/FLAT/GLOBAL/SCRATCH).
    Vmem,
    /// Scalar memory (SMEM).
    Smem,
    /// LDS/GDS (DS).
    Lds,
    /// Branches and program control (`s_branch`, `s_cbranch_*`, `s_barrier`, `s_waitcnt`,
    /// `s_endpgm`, ...).
    Branch,
    /// Matrix multiply-accumulate (`v_mfma_*`).
    Mfma,
}

/// Counters of one wave (or a merge of several).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Wave-instructions per class, indexed by `InstClass as usize`.
    pub by_class: [u64; 7],
    /// Active lanes summed over vector instructions, plus 1 per scalar instruction.
    pub lane_ops: u64,
    /// Bytes read from device memory (global, flat, buffer, scratch, scalar).
    pub bytes_read: u64,
    /// Bytes written to device memory.
    pub bytes_written: u64,
    /// Register accesses checked against in-flight memory operations.
    pub hazard_checks: u64,
    /// Waves run.
    pub waves: u64,
    /// LDS writes that met another wave's access of the same bytes in one barrier epoch and
    /// were no race because they stored the bytes already there (see `lds`).
    pub lds_same_value_writes: u64,
}

impl Counters {
    /// Counts one instruction of `class` that ran on `lanes` active lanes (1 for scalar).
    #[inline(always)]
    pub fn count(&mut self, class: InstClass, lanes: u32) {
        self.by_class[class as usize] += 1;
        self.lane_ops += lanes as u64;
    }

    /// Total wave-instructions.
    pub fn instructions(&self) -> u64 {
        self.by_class.iter().sum()
    }

    /// Adds `o` into `self`.
    pub fn merge(&mut self, o: &Counters) {
        for i in 0..self.by_class.len() {
            self.by_class[i] += o.by_class[i];
        }
        self.lane_ops += o.lane_ops;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.hazard_checks += o.hazard_checks;
        self.waves += o.waves;
        self.lds_same_value_writes += o.lds_same_value_writes;
    }

    /// The device-independent form.
    pub fn to_launch_stats(&self) -> LaunchStats {
        let c = |k: InstClass| self.by_class[k as usize];
        LaunchStats {
            salu: c(InstClass::Salu),
            valu: c(InstClass::Valu),
            vmem: c(InstClass::Vmem),
            smem: c(InstClass::Smem),
            lds: c(InstClass::Lds),
            branch: c(InstClass::Branch),
            mfma: c(InstClass::Mfma),
            lane_ops: self.lane_ops,
            bytes_read: self.bytes_read,
            bytes_written: self.bytes_written,
            hazard_checks: self.hazard_checks,
            waves: self.waves,
            timing: None,
            lds_same_value_writes: self.lds_same_value_writes,
            device_time_ns: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_merge_into_launch_stats() {
        let mut a = Counters::default();
        a.count(InstClass::Valu, 64);
        a.count(InstClass::Salu, 1);
        a.bytes_read = 256;
        let mut b = Counters::default();
        b.count(InstClass::Valu, 32);
        b.count(InstClass::Mfma, 64);
        b.waves = 1;
        a.merge(&b);
        let s = a.to_launch_stats();
        assert_eq!(
            (s.valu, s.salu, s.mfma, s.lane_ops, s.bytes_read, s.waves),
            (2, 1, 1, 161, 256, 1)
        );
        assert_eq!(a.instructions(), 4);
    }
}

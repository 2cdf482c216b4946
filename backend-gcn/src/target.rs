//! The gfx9 targets kjit compiles for, and the per-target facts every stage shares
//! (register files, occupancy, ELF machine numbers). One table; nothing else hard-codes these.

use std::fmt;
use std::str::FromStr;

/// A GCN/CDNA processor kjit supports. All run wave64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// Vega (GCN5): 256 VGPRs, no AGPRs, no MFMA.
    Gfx900,
    /// MI200 (CDNA2): unified 512-entry VGPR+AGPR file, MFMA, packed FP32.
    Gfx90a,
    /// MI300 (CDNA3): as gfx90a, plus `sc0/sc1/nt` cache bits and gfx940 opcode changes.
    Gfx942,
}

/// All targets, in the order kjit prefers them.
pub const ALL_TARGETS: [Target; 3] = [Target::Gfx942, Target::Gfx90a, Target::Gfx900];

impl Target {
    /// The processor name LLVM uses (`-mcpu=`).
    pub fn name(self) -> &'static str {
        match self {
            Target::Gfx900 => "gfx900",
            Target::Gfx90a => "gfx90a",
            Target::Gfx942 => "gfx942",
        }
    }

    /// `EF_AMDGPU_MACH_*` value in the low byte of the ELF `e_flags` (AMDGPUUsage, "AMDGPU ELF Header").
    pub fn elf_mach(self) -> u32 {
        match self {
            Target::Gfx900 => 0x02c,
            Target::Gfx90a => 0x03f,
            Target::Gfx942 => 0x04c,
        }
    }

    /// The target whose `EF_AMDGPU_MACH_*` value is `mach`, if kjit supports it.
    pub fn from_elf_mach(mach: u32) -> Option<Target> {
        ALL_TARGETS.into_iter().find(|t| t.elf_mach() == mach)
    }

    /// Whether the target has accumulation registers (AGPRs) and MFMA instructions.
    pub fn has_agprs(self) -> bool {
        !matches!(self, Target::Gfx900)
    }

    /// gfx940+ replaced `glc/slc` with `sc0/sc1/nt` and renumbered some opcodes.
    pub fn is_gfx940_family(self) -> bool {
        matches!(self, Target::Gfx942)
    }

    /// The dispatcher can place kernel arguments in user SGPRs (LLVM 19's `FeatureKernargPreload`,
    /// which gfx90a and gfx940+ have: `clang-19 -mllvm -amdgpu-kernarg-preload-count=N` preloads
    /// on both, never on gfx900).
    pub fn has_kernarg_preload(self) -> bool {
        matches!(self, Target::Gfx90a | Target::Gfx942)
    }

    /// gfx940+ has architected flat scratch: the hardware sets up FLAT_SCRATCH, no private segment
    /// buffer or flat-scratch-init user SGPRs, and LLVM always counts the 6 extra SGPRs
    /// (VCC, FLAT_SCRATCH, XNACK_MASK) in the SGPR allocation.
    pub fn has_architected_flat_scratch(self) -> bool {
        matches!(self, Target::Gfx942)
    }

    /// Entries of the per-lane register file that a wave can address as VGPRs (and AGPRs on
    /// gfx90a/gfx942, where one 512-entry file is split by `accum_offset`).
    pub fn register_file_per_lane(self) -> u32 {
        match self {
            Target::Gfx900 => 256,
            Target::Gfx90a | Target::Gfx942 => 512,
        }
    }

    /// Most architectural VGPRs one wave can name (v0..v255).
    pub fn max_vgprs(self) -> u32 {
        256
    }

    /// Allocation granule of the register file, in registers per lane.
    pub fn vgpr_alloc_granule(self) -> u32 {
        match self {
            Target::Gfx900 => 4,
            Target::Gfx90a | Target::Gfx942 => 8,
        }
    }

    /// Granule used by `GRANULATED_WORKITEM_VGPR_COUNT` in COMPUTE_PGM_RSRC1 (AMDGPUUsage: gfx90a/gfx940
    /// encode in granules of 8, gfx900 in granules of 4).
    pub fn vgpr_encoding_granule(self) -> u32 {
        self.vgpr_alloc_granule()
    }

    /// Most waves one SIMD can hold.
    pub fn max_waves_per_simd(self) -> u32 {
        match self {
            Target::Gfx900 => 10,
            Target::Gfx90a | Target::Gfx942 => 8,
        }
    }

    /// Addressable SGPRs (excluding VCC) for a wave.
    pub fn max_sgprs(self) -> u32 {
        102
    }

    /// Bytes of LDS per workgroup.
    pub fn lds_bytes(self) -> u32 {
        65536
    }

    /// Waves per SIMD that fit when each wave uses `regs` registers per lane (VGPRs, plus AGPRs on
    /// targets with a unified file), before any other limit.
    pub fn waves_per_simd_for_registers(self, regs: u32) -> u32 {
        let g = self.vgpr_alloc_granule();
        let alloc = regs.max(1).div_ceil(g) * g;
        (self.register_file_per_lane() / alloc).min(self.max_waves_per_simd())
    }

    /// Most registers per lane (VGPRs, plus AGPRs on a unified file) a wave may use so that
    /// `waves` waves fit on one SIMD: the inverse of [`Target::waves_per_simd_for_registers`]
    /// (whole granules, at most the file). `waves` must be at least 1.
    pub fn registers_for_waves_per_simd(self, waves: u32) -> u32 {
        let g = self.vgpr_alloc_granule();
        (self.register_file_per_lane() / waves.max(1) / g * g).min(self.register_file_per_lane())
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error for a processor name kjit does not target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown target '{0}' (kjit supports gfx942, gfx90a, gfx900)")]
pub struct UnknownTarget(pub String);

impl FromStr for Target {
    type Err = UnknownTarget;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL_TARGETS
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| UnknownTarget(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancy_follows_the_register_file() {
        // 512-entry file on gfx942: 64 regs -> 8 waves, 128 -> 4, 164 -> 3 (168 allocated), 256 -> 2.
        assert_eq!(Target::Gfx942.waves_per_simd_for_registers(64), 8);
        assert_eq!(Target::Gfx942.waves_per_simd_for_registers(128), 4);
        assert_eq!(Target::Gfx942.waves_per_simd_for_registers(164), 3);
        assert_eq!(Target::Gfx942.waves_per_simd_for_registers(256), 2);
        // gfx900: 256 entries, 10 waves max.
        assert_eq!(Target::Gfx900.waves_per_simd_for_registers(24), 10);
        assert_eq!(Target::Gfx900.waves_per_simd_for_registers(128), 2);
    }

    #[test]
    fn register_budget_is_the_inverse_of_occupancy() {
        for t in ALL_TARGETS {
            for w in 1..=t.max_waves_per_simd() {
                let r = t.registers_for_waves_per_simd(w);
                assert!(t.waves_per_simd_for_registers(r) >= w, "{t} {w}: {r}");
                // One granule more loses the level (unless the file is already whole).
                if r < t.register_file_per_lane() {
                    let more = r + t.vgpr_alloc_granule();
                    assert!(t.waves_per_simd_for_registers(more) < w, "{t} {w}: {more}");
                }
            }
        }
        assert_eq!(Target::Gfx942.registers_for_waves_per_simd(3), 168);
        assert_eq!(Target::Gfx942.registers_for_waves_per_simd(5), 96);
        assert_eq!(Target::Gfx900.registers_for_waves_per_simd(10), 24);
    }

    #[test]
    fn names_round_trip() {
        for t in ALL_TARGETS {
            assert_eq!(t.name().parse::<Target>().unwrap(), t);
            assert_eq!(Target::from_elf_mach(t.elf_mach()), Some(t));
        }
        assert!("gfx1100".parse::<Target>().is_err());
    }
}

//! The target a code object is built for: processor plus the xnack/sramecc feature settings, as
//! the ELF `e_flags` (code object v4+) and the target-ID string (`amdgcn-amd-amdhsa--gfx942:xnack-`)
//! state them (AMDGPUUsage "ELF Header" and "Target ID").

use std::fmt;

use crate::target::Target;

/// Setting of a target feature (xnack, sramecc) that code objects v4+ record per object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FeatureSetting {
    /// The processor does not have the feature.
    Unsupported,
    /// Code runs with the feature on or off (the default, and what the target ID omits).
    #[default]
    Any,
    /// Code requires the feature off (`feature-` in the target ID).
    Off,
    /// Code requires the feature on (`feature+`).
    On,
}

/// `EF_AMDGPU_MACH` mask of `e_flags`.
pub const EF_AMDGPU_MACH: u32 = 0xff;
/// `EF_AMDGPU_FEATURE_XNACK_V4` mask; values 0x000 unsupported, 0x100 any, 0x200 off, 0x300 on.
pub const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
/// `EF_AMDGPU_FEATURE_SRAMECC_V4` mask; values 0x000 unsupported, 0x400 any, 0x800 off, 0xc00 on.
pub const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;

impl FeatureSetting {
    /// The two-bit v4 encoding (0 unsupported, 1 any, 2 off, 3 on).
    pub fn v4_bits(self) -> u32 {
        match self {
            FeatureSetting::Unsupported => 0,
            FeatureSetting::Any => 1,
            FeatureSetting::Off => 2,
            FeatureSetting::On => 3,
        }
    }

    /// Decodes the two-bit v4 encoding.
    pub fn from_v4_bits(b: u32) -> FeatureSetting {
        match b & 3 {
            0 => FeatureSetting::Unsupported,
            1 => FeatureSetting::Any,
            2 => FeatureSetting::Off,
            _ => FeatureSetting::On,
        }
    }
}

/// Whether `target` supports xnack (every gfx9 target kjit supports does).
pub fn supports_xnack(_target: Target) -> bool {
    true
}

/// Whether `target` supports sramecc (gfx90a and gfx942; not gfx900).
pub fn supports_sramecc(target: Target) -> bool {
    !matches!(target, Target::Gfx900)
}

/// Processor and feature settings: what `e_flags` and `amdhsa.target` describe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TargetId {
    /// The processor.
    pub target: Target,
    /// xnack (page-fault replay) setting.
    pub xnack: FeatureSetting,
    /// sramecc setting.
    pub sramecc: FeatureSetting,
}

impl TargetId {
    /// The default for `target`: every supported feature "any", unsupported ones unsupported.
    pub fn new(target: Target) -> TargetId {
        TargetId {
            target,
            xnack: if supports_xnack(target) {
                FeatureSetting::Any
            } else {
                FeatureSetting::Unsupported
            },
            sramecc: if supports_sramecc(target) {
                FeatureSetting::Any
            } else {
                FeatureSetting::Unsupported
            },
        }
    }

    /// `e_flags` for a v4+ code object.
    pub fn e_flags(&self) -> u32 {
        self.target.elf_mach() | (self.xnack.v4_bits() << 8) | (self.sramecc.v4_bits() << 10)
    }

    /// Decodes v4+ `e_flags`; `None` when the machine is not one kjit supports.
    pub fn from_e_flags(e_flags: u32) -> Option<TargetId> {
        let target = Target::from_elf_mach(e_flags & EF_AMDGPU_MACH)?;
        Some(TargetId {
            target,
            xnack: FeatureSetting::from_v4_bits((e_flags & EF_AMDGPU_FEATURE_XNACK_V4) >> 8),
            sramecc: FeatureSetting::from_v4_bits((e_flags & EF_AMDGPU_FEATURE_SRAMECC_V4) >> 10),
        })
    }

    /// The `amdhsa.target` string LLVM writes: features in alphabetical order, "any" omitted
    /// (`amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`).
    pub fn triple_string(&self) -> String {
        format!("amdgcn-amd-amdhsa--{self}")
    }
}

impl fmt::Display for TargetId {
    /// The processor part of the target ID: `gfx942`, `gfx90a:xnack+`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.target.name())?;
        for (name, s) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            match s {
                FeatureSetting::On => write!(f, ":{name}+")?,
                FeatureSetting::Off => write!(f, ":{name}-")?,
                FeatureSetting::Any | FeatureSetting::Unsupported => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e_flags_match_llvm() {
        // clang-19 -mcpu=gfx942 links with e_flags 0x54c; gfx90a 0x53f (llvm-readelf -h).
        assert_eq!(TargetId::new(Target::Gfx942).e_flags(), 0x54c);
        assert_eq!(TargetId::new(Target::Gfx90a).e_flags(), 0x53f);
        assert_eq!(TargetId::new(Target::Gfx900).e_flags(), 0x12c);
        let t = TargetId {
            target: Target::Gfx942,
            xnack: FeatureSetting::Off,
            sramecc: FeatureSetting::On,
        };
        assert_eq!(TargetId::from_e_flags(t.e_flags()), Some(t));
        assert_eq!(
            t.triple_string(),
            "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"
        );
        assert_eq!(
            TargetId::new(Target::Gfx942).triple_string(),
            "amdgcn-amd-amdhsa--gfx942"
        );
        assert_eq!(TargetId::from_e_flags(0x30), None);
    }
}

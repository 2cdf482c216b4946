//! The 64-byte AMDHSA kernel descriptor (AMDGPUUsage, "Kernel Descriptor"), its
//! `COMPUTE_PGM_RSRC1/2/3` fields for gfx9 targets, and the register/occupancy arithmetic that
//! follows from it.
//!
//! Takes either raw descriptor bytes ([`KernelDescriptor::from_bytes`]) or the resource settings a
//! compiler knows ([`DescriptorParams`], mirroring the assembler's `.amdhsa_*` directives); gives a
//! [`KernelDescriptor`] whose raw words are exactly what LLVM 19 would emit (checked against
//! `clang-19 -x assembler` in `tests/codeobj_descriptor.rs`) plus typed accessors.

use super::target_id::FeatureSetting;
use crate::target::Target;

/// Size of a kernel descriptor in bytes.
pub const KERNEL_DESCRIPTOR_SIZE: usize = 64;

/// Reasons a descriptor cannot be read or built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescriptorError {
    /// Fewer or more than 64 bytes.
    #[error("kernel descriptor has {0} bytes, expected 64")]
    WrongSize(usize),
    /// A byte range AMDGPUUsage marks "reserved, must be 0" is not zero.
    #[error("kernel descriptor reserved bytes {start}..{end} are not zero")]
    ReservedNonZero {
        /// First byte of the reserved range.
        start: usize,
        /// One past the last byte.
        end: usize,
    },
    /// A setting the target does not have (e.g. a private segment buffer with gfx942's
    /// architected flat scratch).
    #[error("{what} is not supported on {target}")]
    NotSupported {
        /// Which setting.
        what: &'static str,
        /// The target.
        target: Target,
    },
    /// A resource count does not fit the target.
    #[error("{what} = {value} exceeds the {target} limit of {limit}")]
    OutOfRange {
        /// Which setting.
        what: &'static str,
        /// The requested value.
        value: u32,
        /// The most the field or the target allows.
        limit: u32,
        /// The target.
        target: Target,
    },
}

/// Extracts `width` bits of `word` starting at bit `shift`.
fn bits(word: u32, shift: u32, width: u32) -> u32 {
    (word >> shift) & ((1u32 << width) - 1)
}

/// Replaces `width` bits of `word` starting at bit `shift` with the low bits of `value`.
fn set_bits(word: &mut u32, shift: u32, width: u32, value: u32) {
    let mask = ((1u32 << width) - 1) << shift;
    *word = (*word & !mask) | ((value << shift) & mask);
}

/// Bit positions in the 16-bit kernel code properties field (descriptor bits 448..463).
pub mod code_props {
    /// User SGPRs s[0:3] hold the private segment buffer V# (gfx9 without architected scratch).
    pub const PRIVATE_SEGMENT_BUFFER: u16 = 1 << 0;
    /// Two user SGPRs hold the AQL dispatch packet address.
    pub const DISPATCH_PTR: u16 = 1 << 1;
    /// Two user SGPRs hold the AQL queue address.
    pub const QUEUE_PTR: u16 = 1 << 2;
    /// Two user SGPRs hold the kernarg segment address.
    pub const KERNARG_SEGMENT_PTR: u16 = 1 << 3;
    /// Two user SGPRs hold the 64-bit dispatch id.
    pub const DISPATCH_ID: u16 = 1 << 4;
    /// Two user SGPRs hold the flat scratch initialisation value.
    pub const FLAT_SCRATCH_INIT: u16 = 1 << 5;
    /// One user SGPR holds the per-work-item private segment size.
    pub const PRIVATE_SEGMENT_SIZE: u16 = 1 << 6;
    /// Wave32 (gfx10+ only; always 0 on gfx9).
    pub const WAVEFRONT_SIZE32: u16 = 1 << 10;
    /// The kernel's stack size is not known at compile time.
    pub const USES_DYNAMIC_STACK: u16 = 1 << 11;
    /// Bits that are reserved (must be 0) for gfx9 targets.
    pub const RESERVED_MASK: u16 = 0b0000_0011_1000_0000 | 0xF000;
}

/// One kernel descriptor, stored as its raw fields so that any descriptor round-trips bit-exactly;
/// the accessors decode the gfx9 bit fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KernelDescriptor {
    /// Bytes of LDS the kernel allocates statically (dynamic LDS is added at dispatch).
    pub group_segment_fixed_size: u32,
    /// Bytes of scratch per work-item the kernel needs.
    pub private_segment_fixed_size: u32,
    /// Size of the kernarg segment (explicit plus hidden arguments).
    pub kernarg_size: u32,
    /// Signed byte offset from the descriptor's address to the kernel's first instruction.
    pub kernel_code_entry_byte_offset: i64,
    /// COMPUTE_PGM_RSRC3 (gfx90a/gfx942: accum_offset, tg_split; gfx900: reserved, 0).
    pub compute_pgm_rsrc3: u32,
    /// COMPUTE_PGM_RSRC1 (register granules, float modes).
    pub compute_pgm_rsrc1: u32,
    /// COMPUTE_PGM_RSRC2 (user SGPR count, system SGPR/VGPR enables, LDS, exceptions).
    pub compute_pgm_rsrc2: u32,
    /// Kernel code properties: which user SGPRs the dispatcher initialises (see [`code_props`]).
    pub kernel_code_properties: u16,
    /// KERNARG_PRELOAD_SPEC_LENGTH (bits 6:0) and _OFFSET (bits 15:7) (gfx90a/gfx942 kernarg preload).
    pub kernarg_preload: u16,
}

/// Reserved byte ranges of the 64-byte descriptor.
const RESERVED_RANGES: [(usize, usize); 3] = [(12, 16), (24, 44), (60, 64)];

impl KernelDescriptor {
    /// Reads a descriptor from exactly 64 bytes; reserved bytes must be zero (as LLVM's
    /// disassembler also requires).
    pub fn from_bytes(b: &[u8]) -> Result<KernelDescriptor, DescriptorError> {
        if b.len() != KERNEL_DESCRIPTOR_SIZE {
            return Err(DescriptorError::WrongSize(b.len()));
        }
        for (start, end) in RESERVED_RANGES {
            if b[start..end].iter().any(|&x| x != 0) {
                return Err(DescriptorError::ReservedNonZero { start, end });
            }
        }
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let mut e = [0u8; 8];
        e.copy_from_slice(&b[16..24]);
        Ok(KernelDescriptor {
            group_segment_fixed_size: u32_at(0),
            private_segment_fixed_size: u32_at(4),
            kernarg_size: u32_at(8),
            kernel_code_entry_byte_offset: i64::from_le_bytes(e),
            compute_pgm_rsrc3: u32_at(44),
            compute_pgm_rsrc1: u32_at(48),
            compute_pgm_rsrc2: u32_at(52),
            kernel_code_properties: u16_at(56),
            kernarg_preload: u16_at(58),
        })
    }

    /// The 64 bytes as they sit in `.rodata`.
    pub fn to_bytes(&self) -> [u8; KERNEL_DESCRIPTOR_SIZE] {
        let mut b = [0u8; KERNEL_DESCRIPTOR_SIZE];
        b[0..4].copy_from_slice(&self.group_segment_fixed_size.to_le_bytes());
        b[4..8].copy_from_slice(&self.private_segment_fixed_size.to_le_bytes());
        b[8..12].copy_from_slice(&self.kernarg_size.to_le_bytes());
        b[16..24].copy_from_slice(&self.kernel_code_entry_byte_offset.to_le_bytes());
        b[44..48].copy_from_slice(&self.compute_pgm_rsrc3.to_le_bytes());
        b[48..52].copy_from_slice(&self.compute_pgm_rsrc1.to_le_bytes());
        b[52..56].copy_from_slice(&self.compute_pgm_rsrc2.to_le_bytes());
        b[56..58].copy_from_slice(&self.kernel_code_properties.to_le_bytes());
        b[58..60].copy_from_slice(&self.kernarg_preload.to_le_bytes());
        b
    }

    // ---- COMPUTE_PGM_RSRC1 ----

    /// GRANULATED_WORKITEM_VGPR_COUNT (rsrc1 5:0): allocated VGPR blocks minus one.
    pub fn granulated_vgprs(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 0, 6)
    }
    /// GRANULATED_WAVEFRONT_SGPR_COUNT (rsrc1 9:6): allocated SGPR blocks (of 8) minus one.
    pub fn granulated_sgprs(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 6, 4)
    }
    /// PRIORITY (rsrc1 11:10).
    pub fn priority(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 10, 2)
    }
    /// FLOAT_ROUND_MODE_32 (rsrc1 13:12): 0 = round to nearest even.
    pub fn float_round_mode_32(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 12, 2)
    }
    /// FLOAT_ROUND_MODE_16_64 (rsrc1 15:14).
    pub fn float_round_mode_16_64(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 14, 2)
    }
    /// FLOAT_DENORM_MODE_32 (rsrc1 17:16): 3 = keep input and output denormals.
    pub fn float_denorm_mode_32(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 16, 2)
    }
    /// FLOAT_DENORM_MODE_16_64 (rsrc1 19:18).
    pub fn float_denorm_mode_16_64(&self) -> u32 {
        bits(self.compute_pgm_rsrc1, 18, 2)
    }
    /// PRIV (rsrc1 20).
    pub fn priv_(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 20, 1) != 0
    }
    /// ENABLE_DX10_CLAMP (rsrc1 21): clamp NaN to 0 under `clamp`.
    pub fn dx10_clamp(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 21, 1) != 0
    }
    /// DEBUG_MODE (rsrc1 22).
    pub fn debug_mode(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 22, 1) != 0
    }
    /// ENABLE_IEEE_MODE (rsrc1 23): quiet signalling NaNs in min/max.
    pub fn ieee_mode(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 23, 1) != 0
    }
    /// BULKY (rsrc1 24).
    pub fn bulky(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 24, 1) != 0
    }
    /// CDBG_USER (rsrc1 25).
    pub fn cdbg_user(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 25, 1) != 0
    }
    /// FP16_OVFL (rsrc1 26): clamp f16 overflow to max finite instead of infinity.
    pub fn fp16_overflow(&self) -> bool {
        bits(self.compute_pgm_rsrc1, 26, 1) != 0
    }

    // ---- COMPUTE_PGM_RSRC2 ----

    /// ENABLE_PRIVATE_SEGMENT (rsrc2 0, SCRATCH_EN): the wave gets scratch.
    pub fn enable_private_segment(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 0, 1) != 0
    }
    /// USER_SGPR_COUNT (rsrc2 5:1): SGPRs the dispatcher preloads before the system SGPRs.
    pub fn user_sgpr_count(&self) -> u32 {
        bits(self.compute_pgm_rsrc2, 1, 5)
    }
    /// ENABLE_TRAP_HANDLER (rsrc2 6).
    pub fn enable_trap_handler(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 6, 1) != 0
    }
    /// ENABLE_SGPR_WORKGROUP_ID_X (rsrc2 7).
    pub fn enable_sgpr_workgroup_id_x(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 7, 1) != 0
    }
    /// ENABLE_SGPR_WORKGROUP_ID_Y (rsrc2 8).
    pub fn enable_sgpr_workgroup_id_y(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 8, 1) != 0
    }
    /// ENABLE_SGPR_WORKGROUP_ID_Z (rsrc2 9).
    pub fn enable_sgpr_workgroup_id_z(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 9, 1) != 0
    }
    /// ENABLE_SGPR_WORKGROUP_INFO (rsrc2 10).
    pub fn enable_sgpr_workgroup_info(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 10, 1) != 0
    }
    /// ENABLE_VGPR_WORKITEM_ID (rsrc2 12:11): 0 = v0 holds x; 1 = x, y in v0, v1; 2 = x, y, z.
    pub fn enable_vgpr_workitem_id(&self) -> u32 {
        bits(self.compute_pgm_rsrc2, 11, 2)
    }
    /// ENABLE_EXCEPTION_ADDRESS_WATCH (rsrc2 13).
    pub fn enable_exception_address_watch(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 13, 1) != 0
    }
    /// ENABLE_EXCEPTION_MEMORY (rsrc2 14).
    pub fn enable_exception_memory(&self) -> bool {
        bits(self.compute_pgm_rsrc2, 14, 1) != 0
    }
    /// GRANULATED_LDS_SIZE (rsrc2 23:15): must be 0 in a descriptor (the CP computes it).
    pub fn granulated_lds_size(&self) -> u32 {
        bits(self.compute_pgm_rsrc2, 15, 9)
    }
    /// The seven ENABLE_EXCEPTION_* floating-point/integer exception bits (rsrc2 30:24), in the
    /// order invalid, denorm source, div by zero, overflow, underflow, inexact, int div by zero.
    pub fn exceptions(&self) -> u32 {
        bits(self.compute_pgm_rsrc2, 24, 7)
    }

    // ---- COMPUTE_PGM_RSRC3 (gfx90a/gfx942) ----

    /// ACCUM_OFFSET in registers (rsrc3 5:0 holds `offset / 4 - 1`): first AGPR's index in the
    /// unified register file. `None` on targets without AGPRs.
    pub fn accum_offset(&self, target: Target) -> Option<u32> {
        target
            .has_agprs()
            .then(|| (bits(self.compute_pgm_rsrc3, 0, 6) + 1) * 4)
    }
    /// TG_SPLIT (rsrc3 16, gfx90a/gfx942): the workgroup's waves may span CUs (no shared LDS).
    pub fn tg_split(&self) -> bool {
        bits(self.compute_pgm_rsrc3, 16, 1) != 0
    }

    // ---- kernel code properties ----

    fn prop(&self, bit: u16) -> bool {
        self.kernel_code_properties & bit != 0
    }
    /// ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER.
    pub fn enable_sgpr_private_segment_buffer(&self) -> bool {
        self.prop(code_props::PRIVATE_SEGMENT_BUFFER)
    }
    /// ENABLE_SGPR_DISPATCH_PTR.
    pub fn enable_sgpr_dispatch_ptr(&self) -> bool {
        self.prop(code_props::DISPATCH_PTR)
    }
    /// ENABLE_SGPR_QUEUE_PTR.
    pub fn enable_sgpr_queue_ptr(&self) -> bool {
        self.prop(code_props::QUEUE_PTR)
    }
    /// ENABLE_SGPR_KERNARG_SEGMENT_PTR.
    pub fn enable_sgpr_kernarg_segment_ptr(&self) -> bool {
        self.prop(code_props::KERNARG_SEGMENT_PTR)
    }
    /// ENABLE_SGPR_DISPATCH_ID.
    pub fn enable_sgpr_dispatch_id(&self) -> bool {
        self.prop(code_props::DISPATCH_ID)
    }
    /// ENABLE_SGPR_FLAT_SCRATCH_INIT.
    pub fn enable_sgpr_flat_scratch_init(&self) -> bool {
        self.prop(code_props::FLAT_SCRATCH_INIT)
    }
    /// ENABLE_SGPR_PRIVATE_SEGMENT_SIZE.
    pub fn enable_sgpr_private_segment_size(&self) -> bool {
        self.prop(code_props::PRIVATE_SEGMENT_SIZE)
    }
    /// ENABLE_WAVEFRONT_SIZE32 (never set on gfx9).
    pub fn wavefront_size32(&self) -> bool {
        self.prop(code_props::WAVEFRONT_SIZE32)
    }
    /// USES_DYNAMIC_STACK.
    pub fn uses_dynamic_stack(&self) -> bool {
        self.prop(code_props::USES_DYNAMIC_STACK)
    }
    /// KERNARG_PRELOAD_SPEC_LENGTH: kernarg dwords preloaded into user SGPRs.
    pub fn kernarg_preload_length(&self) -> u32 {
        (self.kernarg_preload & 0x7f) as u32
    }
    /// KERNARG_PRELOAD_SPEC_OFFSET: first preloaded kernarg dword.
    pub fn kernarg_preload_offset(&self) -> u32 {
        (self.kernarg_preload >> 7) as u32
    }

    /// Number of user SGPRs implied by the code properties (AMDGPUUsage "Initial Kernel Execution
    /// State"), before kernarg preload; should equal [`Self::user_sgpr_count`] when nothing is
    /// preloaded.
    pub fn implied_user_sgprs(&self) -> u32 {
        let mut n = 0;
        n += 4 * self.enable_sgpr_private_segment_buffer() as u32;
        n += 2 * self.enable_sgpr_dispatch_ptr() as u32;
        n += 2 * self.enable_sgpr_queue_ptr() as u32;
        n += 2 * self.enable_sgpr_kernarg_segment_ptr() as u32;
        n += 2 * self.enable_sgpr_dispatch_id() as u32;
        n += 2 * self.enable_sgpr_flat_scratch_init() as u32;
        n += self.enable_sgpr_private_segment_size() as u32;
        n
    }

    /// The SGPRs the dispatcher initialises, in order (AMDGPUUsage "Initial Kernel Execution
    /// State"): user SGPRs from s0, then system SGPRs from `user_sgpr_count`. Each entry is
    /// (what, first SGPR, count). User SGPRs beyond the enabled ones hold preloaded kernargs.
    pub fn initial_sgprs(&self, target: Target) -> Vec<(&'static str, u32, u32)> {
        let mut v = Vec::new();
        let mut next = 0;
        let mut push = |on: bool, what: &'static str, n: u32, next: &mut u32| {
            if on {
                v.push((what, *next, n));
                *next += n;
            }
        };
        push(
            self.enable_sgpr_private_segment_buffer(),
            "private_segment_buffer",
            4,
            &mut next,
        );
        push(
            self.enable_sgpr_dispatch_ptr(),
            "dispatch_ptr",
            2,
            &mut next,
        );
        push(self.enable_sgpr_queue_ptr(), "queue_ptr", 2, &mut next);
        push(
            self.enable_sgpr_kernarg_segment_ptr(),
            "kernarg_segment_ptr",
            2,
            &mut next,
        );
        push(self.enable_sgpr_dispatch_id(), "dispatch_id", 2, &mut next);
        push(
            self.enable_sgpr_flat_scratch_init(),
            "flat_scratch_init",
            2,
            &mut next,
        );
        push(
            self.enable_sgpr_private_segment_size(),
            "private_segment_size",
            1,
            &mut next,
        );
        let user = self.user_sgpr_count();
        if user > next {
            push(true, "preloaded_kernargs", user - next, &mut next);
        }
        next = user;
        push(
            self.enable_sgpr_workgroup_id_x(),
            "workgroup_id_x",
            1,
            &mut next,
        );
        push(
            self.enable_sgpr_workgroup_id_y(),
            "workgroup_id_y",
            1,
            &mut next,
        );
        push(
            self.enable_sgpr_workgroup_id_z(),
            "workgroup_id_z",
            1,
            &mut next,
        );
        push(
            self.enable_sgpr_workgroup_info(),
            "workgroup_info",
            1,
            &mut next,
        );
        // With architected flat scratch the wave's scratch offset is in FLAT_SCRATCH, not an SGPR.
        push(
            self.enable_private_segment() && !target.has_architected_flat_scratch(),
            "private_segment_wavefront_offset",
            1,
            &mut next,
        );
        v
    }

    // ---- allocation ----

    /// Registers per lane the hardware allocates for VGPRs and AGPRs together (the unified file on
    /// gfx90a/gfx942, VGPRs alone on gfx900): `(granulated + 1) * granule`.
    pub fn registers_allocated(&self, target: Target) -> u32 {
        (self.granulated_vgprs() + 1) * target.vgpr_encoding_granule()
    }

    /// Architectural VGPRs (v0..) the wave may address: on gfx90a/gfx942 those below
    /// `accum_offset`, capped at 256; on gfx900 the whole allocation.
    pub fn vgprs_allocated(&self, target: Target) -> u32 {
        let total = self.registers_allocated(target);
        match self.accum_offset(target) {
            Some(acc) => acc.min(total).min(target.max_vgprs()),
            None => total.min(target.max_vgprs()),
        }
    }

    /// AGPRs (a0..) the wave may address: the allocation above `accum_offset` on gfx90a/gfx942,
    /// none on gfx900.
    pub fn agprs(&self, target: Target) -> u32 {
        match self.accum_offset(target) {
            Some(acc) => self
                .registers_allocated(target)
                .saturating_sub(acc)
                .min(256),
            None => 0,
        }
    }

    /// SGPRs allocated to the wave, including VCC/FLAT_SCRATCH/XNACK_MASK: `(granulated + 1) * 8`.
    pub fn sgprs_allocated(&self, _target: Target) -> u32 {
        (self.granulated_sgprs() + 1) * SGPR_ENCODING_GRANULE
    }

    /// Waves per SIMD the registers allow (the LDS and workgroup-size limits are in
    /// [`Occupancy::compute`]).
    pub fn waves_per_simd(&self, target: Target) -> u32 {
        Occupancy::compute(target, self, None).waves_per_simd
    }
}

/// Granule of GRANULATED_WAVEFRONT_SGPR_COUNT on gfx9 (LLVM `getSGPREncodingGranule`).
pub const SGPR_ENCODING_GRANULE: u32 = 8;

/// What limits how many waves of a kernel fit on one SIMD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OccupancyLimit {
    /// The hardware's wave slots.
    WaveSlots,
    /// The VGPR (+AGPR) file.
    Vgprs,
    /// The SGPR file.
    Sgprs,
    /// Workgroups per CU: LDS, barriers or wave slots, for the given workgroup size.
    Lds,
}

impl std::fmt::Display for OccupancyLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OccupancyLimit::WaveSlots => "wave slots",
            OccupancyLimit::Vgprs => "VGPRs",
            OccupancyLimit::Sgprs => "SGPRs",
            OccupancyLimit::Lds => "LDS/workgroup size",
        })
    }
}

/// Waves per SIMD for one kernel on one target, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occupancy {
    /// Waves per SIMD (the minimum of the limits below).
    pub waves_per_simd: u32,
    /// Limit from the vector register file.
    pub by_vgprs: u32,
    /// Limit from the scalar register file.
    pub by_sgprs: u32,
    /// Limit from workgroups per CU (LDS and barriers; only when a workgroup size was given).
    pub by_lds: Option<u32>,
    /// Which limit binds.
    pub limited_by: OccupancyLimit,
}

/// Waves per SIMD allowed by `sgprs` SGPRs on gfx9 (LLVM `getOccupancyWithNumSGPRs` for VI..GFX9:
/// an 800-entry SGPR file per SIMD allocated in granules of 16).
pub fn waves_per_simd_for_sgprs(target: Target, sgprs: u32) -> u32 {
    let w = if sgprs <= 80 {
        10
    } else if sgprs <= 88 {
        9
    } else if sgprs <= 100 {
        8
    } else {
        7
    };
    w.min(target.max_waves_per_simd())
}

/// Most SGPRs the code may name (VCC/FLAT_SCRATCH/XNACK_MASK, up to 6, not counted) so that
/// `waves` waves fit on one SIMD by [`waves_per_simd_for_sgprs`]; `None` when every SGPR count
/// allows it.
pub fn named_sgprs_for_waves(target: Target, waves: u32) -> Option<u32> {
    const EXTRA: u32 = 6;
    let total = (1..=108)
        .rev()
        .find(|&s| waves_per_simd_for_sgprs(target, s) >= waves)?;
    (waves_per_simd_for_sgprs(target, 108 + 1) < waves).then_some(total - EXTRA)
}

/// SIMDs per compute unit on every gfx9 target.
pub const SIMDS_PER_CU: u32 = 4;

/// Most workgroups one CU holds when a workgroup has more than one wave (LLVM
/// `getMaxWorkGroupsPerCU`: one of 16 barriers each).
pub const MAX_BARRIERS_PER_CU: u32 = 16;

impl Occupancy {
    /// Occupancy of a kernel with descriptor `kd` on `target`, counting SGPRs by the
    /// descriptor's allocation; with `workgroup_size`, the workgroup/LDS limit is included.
    pub fn compute(
        target: Target,
        kd: &KernelDescriptor,
        workgroup_size: Option<u32>,
    ) -> Occupancy {
        Occupancy::from_counts(
            target,
            kd.registers_allocated(target),
            kd.sgprs_allocated(target),
            kd.group_segment_fixed_size,
            workgroup_size,
        )
    }

    /// Occupancy from resource counts, computed as LLVM 19 reports it in
    /// `-Rpass-analysis=kernel-resource-usage` ("Occupancy [waves/SIMD]"; checked in
    /// `tests/codeobj_occupancy.rs`):
    /// - registers: `file / roundup(registers, granule)` (`getNumWavesPerEUWithNumVGPRs`);
    /// - SGPRs (including VCC etc.): the gfx8/9 step table ([`waves_per_simd_for_sgprs`]);
    /// - workgroup and LDS (`getOccupancyWithLocalMemSize`): a CU holds
    ///   `min(max groups, 64 KiB / LDS)` workgroups, max groups being all wave slots for
    ///   single-wave groups and `min(slots / waves per group, 16)` otherwise; their waves spread
    ///   over 4 SIMDs, rounded up.
    pub fn from_counts(
        target: Target,
        vector_registers: u32,
        sgprs: u32,
        lds_bytes: u32,
        workgroup_size: Option<u32>,
    ) -> Occupancy {
        let slots = target.max_waves_per_simd();
        let by_vgprs = target.waves_per_simd_for_registers(vector_registers);
        let by_sgprs = waves_per_simd_for_sgprs(target, sgprs);
        let by_lds = workgroup_size.map(|wg| {
            let waves_per_group = wg.max(1).div_ceil(64);
            let slots_per_cu = slots * SIMDS_PER_CU;
            let max_groups = if waves_per_group == 1 {
                slots_per_cu
            } else {
                (slots_per_cu / waves_per_group).min(MAX_BARRIERS_PER_CU)
            };
            let groups = if lds_bytes > 0 {
                max_groups.min(target.lds_bytes() / lds_bytes)
            } else {
                max_groups
            };
            (groups * waves_per_group).div_ceil(SIMDS_PER_CU).min(slots)
        });
        let mut waves = slots;
        let mut limited_by = OccupancyLimit::WaveSlots;
        for (w, why) in [
            (by_vgprs, OccupancyLimit::Vgprs),
            (by_sgprs, OccupancyLimit::Sgprs),
            (by_lds.unwrap_or(u32::MAX), OccupancyLimit::Lds),
        ] {
            if w < waves {
                waves = w;
                limited_by = why;
            }
        }
        Occupancy {
            waves_per_simd: waves,
            by_vgprs,
            by_sgprs,
            by_lds,
            limited_by,
        }
    }
}

/// Which user SGPRs the dispatcher initialises (AMDGPUUsage "Initial Kernel Execution State"),
/// in that order: s0.. get the enabled ones, then the system SGPRs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct UserSgprs {
    /// s[0:3] = private segment buffer V# (not allowed with architected flat scratch, gfx942).
    pub private_segment_buffer: bool,
    /// AQL dispatch packet pointer.
    pub dispatch_ptr: bool,
    /// AQL queue pointer.
    pub queue_ptr: bool,
    /// Kernarg segment pointer.
    pub kernarg_segment_ptr: bool,
    /// 64-bit dispatch id.
    pub dispatch_id: bool,
    /// Flat scratch init (not allowed with architected flat scratch, gfx942).
    pub flat_scratch_init: bool,
    /// Private segment size per work-item.
    pub private_segment_size: bool,
    /// Kernarg dwords (from dword 0) the dispatcher places in the user SGPRs after the enabled
    /// ones (`.amdhsa_user_sgpr_kernarg_preload_length`; gfx90a/gfx942). Firmware that does so
    /// enters the kernel 256 bytes past its entry, where a compatibility prologue ends.
    pub kernarg_preload: u32,
}

impl UserSgprs {
    /// The user SGPRs that the enabled fields occupy.
    pub fn count(&self) -> u32 {
        4 * self.private_segment_buffer as u32
            + 2 * self.dispatch_ptr as u32
            + 2 * self.queue_ptr as u32
            + 2 * self.kernarg_segment_ptr as u32
            + 2 * self.dispatch_id as u32
            + 2 * self.flat_scratch_init as u32
            + self.private_segment_size as u32
            + self.kernarg_preload
    }

    /// The first user SGPR holding a preloaded kernarg dword (after the enabled fields).
    pub fn first_preload_sgpr(&self) -> u32 {
        self.count() - self.kernarg_preload
    }

    fn code_properties(&self) -> u16 {
        let mut p = 0;
        let mut set = |on: bool, bit: u16| {
            if on {
                p |= bit
            }
        };
        set(
            self.private_segment_buffer,
            code_props::PRIVATE_SEGMENT_BUFFER,
        );
        set(self.dispatch_ptr, code_props::DISPATCH_PTR);
        set(self.queue_ptr, code_props::QUEUE_PTR);
        set(self.kernarg_segment_ptr, code_props::KERNARG_SEGMENT_PTR);
        set(self.dispatch_id, code_props::DISPATCH_ID);
        set(self.flat_scratch_init, code_props::FLAT_SCRATCH_INIT);
        set(self.private_segment_size, code_props::PRIVATE_SEGMENT_SIZE);
        p
    }
}

/// The resource settings a compiler knows about a kernel, named after the assembler's `.amdhsa_*`
/// directives (AMDGPUUsage "Code Object V3+ AMDHSA Kernel Descriptor Directives") with the same
/// defaults, so that [`KernelDescriptor::build`] gives the bytes `llvm-mc` gives for that block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescriptorParams {
    /// `.amdhsa_group_segment_fixed_size`: static LDS bytes.
    pub group_segment_fixed_size: u32,
    /// `.amdhsa_private_segment_fixed_size`: scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// `.amdhsa_kernarg_size`.
    pub kernarg_size: u32,
    /// Architectural VGPRs used (highest v index + 1).
    pub vgprs: u32,
    /// AGPRs used (highest a index + 1); gfx90a/gfx942 only.
    pub agprs: u32,
    /// `.amdhsa_next_free_sgpr`: SGPRs used (highest s index + 1), without VCC/FLAT_SCRATCH/XNACK.
    pub sgprs: u32,
    /// `.amdhsa_reserve_vcc` (default on).
    pub reserve_vcc: bool,
    /// `.amdhsa_reserve_flat_scratch` (default on; gfx900/gfx90a only, gfx942 always reserves it).
    pub reserve_flat_scratch: bool,
    /// The user SGPRs to initialise.
    pub user_sgprs: UserSgprs,
    /// `.amdhsa_user_sgpr_count`; `None` = the count the enabled user SGPRs need.
    pub user_sgpr_count: Option<u32>,
    /// `.amdhsa_enable_private_segment` / `system_sgpr_private_segment_wavefront_offset`.
    pub enable_private_segment: bool,
    /// `.amdhsa_system_sgpr_workgroup_id_{x,y,z}` (default x only).
    pub workgroup_id: [bool; 3],
    /// `.amdhsa_system_sgpr_workgroup_info`.
    pub workgroup_info: bool,
    /// `.amdhsa_system_vgpr_workitem_id`: 0 = x, 1 = x,y, 2 = x,y,z.
    pub workitem_id_dims: u32,
    /// `.amdhsa_float_round_mode_32` (0 = nearest even).
    pub float_round_mode_32: u32,
    /// `.amdhsa_float_round_mode_16_64`.
    pub float_round_mode_16_64: u32,
    /// `.amdhsa_float_denorm_mode_32` (default 3: denormals kept).
    pub float_denorm_mode_32: u32,
    /// `.amdhsa_float_denorm_mode_16_64` (default 3).
    pub float_denorm_mode_16_64: u32,
    /// `.amdhsa_dx10_clamp` (default on).
    pub dx10_clamp: bool,
    /// `.amdhsa_ieee_mode` (default on).
    pub ieee_mode: bool,
    /// `.amdhsa_fp16_overflow`.
    pub fp16_overflow: bool,
    /// `.amdhsa_tg_split` (gfx90a/gfx942).
    pub tg_split: bool,
    /// `.amdhsa_uses_dynamic_stack`.
    pub uses_dynamic_stack: bool,
    /// The seven `.amdhsa_exception_*` bits, as in [`KernelDescriptor::exceptions`].
    pub exceptions: u32,
}

impl Default for DescriptorParams {
    fn default() -> Self {
        DescriptorParams {
            group_segment_fixed_size: 0,
            private_segment_fixed_size: 0,
            kernarg_size: 0,
            vgprs: 0,
            agprs: 0,
            sgprs: 0,
            reserve_vcc: true,
            reserve_flat_scratch: true,
            user_sgprs: UserSgprs::default(),
            user_sgpr_count: None,
            enable_private_segment: false,
            workgroup_id: [true, false, false],
            workgroup_info: false,
            workitem_id_dims: 0,
            float_round_mode_32: 0,
            float_round_mode_16_64: 0,
            float_denorm_mode_32: 3,
            float_denorm_mode_16_64: 3,
            dx10_clamp: true,
            ieee_mode: true,
            fp16_overflow: false,
            tg_split: false,
            uses_dynamic_stack: false,
            exceptions: 0,
        }
    }
}

impl DescriptorParams {
    /// Registers per lane in the unified file (LLVM `getTotalNumVGPRs`): on gfx90a/gfx942 with
    /// AGPRs, `accum_offset` (the VGPRs rounded up to 4) plus the AGPRs; otherwise the larger of
    /// the two.
    pub fn total_vector_registers(&self, target: Target) -> u32 {
        if target.has_agprs() && self.agprs > 0 {
            self.accum_offset() + self.agprs
        } else {
            self.vgprs.max(self.agprs)
        }
    }

    /// accum_offset the assembler would need: VGPRs rounded up to 4, at least 4.
    pub fn accum_offset(&self) -> u32 {
        (self.vgprs.max(1)).div_ceil(4) * 4
    }

    /// SGPRs counted for allocation: `sgprs` plus VCC, FLAT_SCRATCH and XNACK_MASK as LLVM's
    /// `getNumExtraSGPRs` adds them for gfx8/gfx9 (gfx942's architected flat scratch always counts).
    pub fn total_sgprs(&self, target: Target, xnack: FeatureSetting) -> u32 {
        // LLVM's assembler requires `.amdhsa_reserve_xnack_mask` to equal "xnack on or any".
        let xnack_used = matches!(xnack, FeatureSetting::On | FeatureSetting::Any);
        let flat = self.reserve_flat_scratch || target.has_architected_flat_scratch();
        let mut extra = if self.reserve_vcc { 2 } else { 0 };
        if xnack_used {
            extra = 4;
        }
        if flat {
            extra = 6;
        }
        self.sgprs + extra
    }
}

impl KernelDescriptor {
    /// Builds the descriptor the assembler builds for these settings on `target` with the given
    /// xnack setting; `kernel_code_entry_byte_offset` is left 0 for the object writer to fill.
    pub fn build(
        target: Target,
        xnack: FeatureSetting,
        p: &DescriptorParams,
    ) -> Result<KernelDescriptor, DescriptorError> {
        let range = |what, value: u32, limit: u32| {
            if value > limit {
                Err(DescriptorError::OutOfRange {
                    what,
                    value,
                    limit,
                    target,
                })
            } else {
                Ok(())
            }
        };
        range("vgprs", p.vgprs, target.max_vgprs())?;
        range("agprs", p.agprs, if target.has_agprs() { 256 } else { 0 })?;
        if target.has_architected_flat_scratch() {
            // The hardware initialises FLAT_SCRATCH itself; LLVM's assembler rejects these.
            if p.user_sgprs.private_segment_buffer {
                return Err(DescriptorError::NotSupported {
                    what: "the private segment buffer user SGPRs",
                    target,
                });
            }
            if p.user_sgprs.flat_scratch_init {
                return Err(DescriptorError::NotSupported {
                    what: "the flat scratch init user SGPRs",
                    target,
                });
            }
        }
        if p.tg_split && !target.has_agprs() {
            return Err(DescriptorError::NotSupported {
                what: "tg_split",
                target,
            });
        }
        let total_vgprs = p.total_vector_registers(target);
        range(
            "total vector registers",
            total_vgprs,
            target.register_file_per_lane(),
        )?;
        // LLVM's assembler rejects next_free_sgpr beyond the addressable SGPRs (102 on gfx9).
        range("sgprs", p.sgprs, target.max_sgprs())?;
        let user_sgpr_count = p.user_sgpr_count.unwrap_or(p.user_sgprs.count());
        range("user_sgpr_count", user_sgpr_count, 16)?;
        let preload = p.user_sgprs.kernarg_preload;
        if preload > 0 {
            if !target.has_kernarg_preload() {
                return Err(DescriptorError::NotSupported {
                    what: "kernarg preloading",
                    target,
                });
            }
            if !p.user_sgprs.kernarg_segment_ptr {
                return Err(DescriptorError::NotSupported {
                    what: "kernarg preloading without the kernarg segment pointer",
                    target,
                });
            }
            range("kernarg_preload_length", preload, 0x7f)?;
        }
        range("workitem_id_dims", p.workitem_id_dims, 2)?;
        range("float_round_mode_32", p.float_round_mode_32, 3)?;
        range("float_round_mode_16_64", p.float_round_mode_16_64, 3)?;
        range("float_denorm_mode_32", p.float_denorm_mode_32, 3)?;
        range("float_denorm_mode_16_64", p.float_denorm_mode_16_64, 3)?;
        range("exceptions", p.exceptions, 0x7f)?;
        range(
            "group_segment_fixed_size",
            p.group_segment_fixed_size,
            target.lds_bytes(),
        )?;

        let granule = target.vgpr_encoding_granule();
        let vgpr_blocks = total_vgprs.max(1).div_ceil(granule) - 1;
        let sgpr_blocks = p
            .total_sgprs(target, xnack)
            .max(1)
            .div_ceil(SGPR_ENCODING_GRANULE)
            - 1;

        let mut r1 = 0u32;
        set_bits(&mut r1, 0, 6, vgpr_blocks);
        set_bits(&mut r1, 6, 4, sgpr_blocks);
        set_bits(&mut r1, 12, 2, p.float_round_mode_32);
        set_bits(&mut r1, 14, 2, p.float_round_mode_16_64);
        set_bits(&mut r1, 16, 2, p.float_denorm_mode_32);
        set_bits(&mut r1, 18, 2, p.float_denorm_mode_16_64);
        set_bits(&mut r1, 21, 1, p.dx10_clamp as u32);
        set_bits(&mut r1, 23, 1, p.ieee_mode as u32);
        set_bits(&mut r1, 26, 1, p.fp16_overflow as u32);

        let mut r2 = 0u32;
        set_bits(&mut r2, 0, 1, p.enable_private_segment as u32);
        set_bits(&mut r2, 1, 5, user_sgpr_count);
        set_bits(&mut r2, 7, 1, p.workgroup_id[0] as u32);
        set_bits(&mut r2, 8, 1, p.workgroup_id[1] as u32);
        set_bits(&mut r2, 9, 1, p.workgroup_id[2] as u32);
        set_bits(&mut r2, 10, 1, p.workgroup_info as u32);
        set_bits(&mut r2, 11, 2, p.workitem_id_dims);
        set_bits(&mut r2, 24, 7, p.exceptions);

        let mut r3 = 0u32;
        if target.has_agprs() {
            set_bits(&mut r3, 0, 6, p.accum_offset() / 4 - 1);
            set_bits(&mut r3, 16, 1, p.tg_split as u32);
        }

        let mut props = p.user_sgprs.code_properties();
        if p.uses_dynamic_stack {
            props |= code_props::USES_DYNAMIC_STACK;
        }
        Ok(KernelDescriptor {
            group_segment_fixed_size: p.group_segment_fixed_size,
            private_segment_fixed_size: p.private_segment_fixed_size,
            kernarg_size: p.kernarg_size,
            kernel_code_entry_byte_offset: 0,
            compute_pgm_rsrc3: r3,
            compute_pgm_rsrc1: r1,
            compute_pgm_rsrc2: r2,
            kernel_code_properties: props,
            // KERNARG_PRELOAD_SPEC_LENGTH; the offset (bits 15:7) stays 0: kjit preloads from
            // the first dword, as LLVM 19 does.
            kernarg_preload: preload as u16,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_and_reserved_bytes_are_checked() {
        let kd = KernelDescriptor {
            group_segment_fixed_size: 0x1234,
            private_segment_fixed_size: 16,
            kernarg_size: 280,
            kernel_code_entry_byte_offset: -0x1000,
            compute_pgm_rsrc3: 1,
            compute_pgm_rsrc1: 0x00af_0040,
            compute_pgm_rsrc2: 0x84,
            kernel_code_properties: 8,
            kernarg_preload: 0,
        };
        let b = kd.to_bytes();
        assert_eq!(KernelDescriptor::from_bytes(&b).unwrap(), kd);
        let mut bad = b;
        bad[30] = 1;
        assert_eq!(
            KernelDescriptor::from_bytes(&bad),
            Err(DescriptorError::ReservedNonZero { start: 24, end: 44 })
        );
        assert_eq!(
            KernelDescriptor::from_bytes(&b[..63]),
            Err(DescriptorError::WrongSize(63))
        );
    }

    #[test]
    fn clang_gfx942_descriptor_decodes() {
        // `add` from clang-19 -mcpu=gfx942: 6 VGPRs, 12 SGPRs incl. extras, kernarg ptr only.
        let kd = KernelDescriptor {
            compute_pgm_rsrc3: 1,
            compute_pgm_rsrc1: 0x00af_0040,
            compute_pgm_rsrc2: 0x84,
            kernel_code_properties: 8,
            ..Default::default()
        };
        let t = Target::Gfx942;
        assert_eq!(kd.accum_offset(t), Some(8));
        assert_eq!(kd.registers_allocated(t), 8);
        assert_eq!(kd.vgprs_allocated(t), 8);
        assert_eq!(kd.agprs(t), 0);
        assert_eq!(kd.sgprs_allocated(t), 16);
        assert_eq!(kd.user_sgpr_count(), 2);
        assert_eq!(kd.implied_user_sgprs(), 2);
        assert!(kd.enable_sgpr_workgroup_id_x() && !kd.enable_sgpr_workgroup_id_y());
        assert_eq!(kd.float_denorm_mode_32(), 3);
        assert!(kd.dx10_clamp() && kd.ieee_mode());
        assert_eq!(kd.waves_per_simd(t), 8);
    }

    #[test]
    fn initial_sgprs_follow_the_enables() {
        // gfx900 kernel: private segment buffer, kernarg ptr, wg id x and z, scratch wave offset.
        let kd = KernelDescriptor {
            compute_pgm_rsrc2: (6 << 1) | 1 | (1 << 7) | (1 << 9),
            kernel_code_properties: code_props::PRIVATE_SEGMENT_BUFFER
                | code_props::KERNARG_SEGMENT_PTR,
            ..Default::default()
        };
        assert_eq!(
            kd.initial_sgprs(Target::Gfx900),
            vec![
                ("private_segment_buffer", 0, 4),
                ("kernarg_segment_ptr", 4, 2),
                ("workgroup_id_x", 6, 1),
                ("workgroup_id_z", 7, 1),
                ("private_segment_wavefront_offset", 8, 1),
            ]
        );
        // gfx942 has no wave offset SGPR.
        assert_eq!(kd.initial_sgprs(Target::Gfx942).len(), 4);
    }

    #[test]
    fn unified_file_splits_at_accum_offset() {
        let p = DescriptorParams {
            vgprs: 130,
            agprs: 64,
            sgprs: 20,
            ..Default::default()
        };
        let t = Target::Gfx90a;
        let kd = KernelDescriptor::build(t, FeatureSetting::Any, &p).unwrap();
        assert_eq!(kd.accum_offset(t), Some(132));
        assert_eq!(kd.registers_allocated(t), 200);
        assert_eq!(kd.vgprs_allocated(t), 132);
        assert_eq!(kd.agprs(t), 68);
        // 512 / 200 = 2 waves.
        assert_eq!(kd.waves_per_simd(t), 2);
        let too_many = DescriptorParams {
            vgprs: 256,
            agprs: 257,
            ..Default::default()
        };
        assert!(KernelDescriptor::build(t, FeatureSetting::Any, &too_many).is_err());
    }

    #[test]
    fn occupancy_counts_lds_when_given_a_workgroup_size() {
        let kd = KernelDescriptor {
            group_segment_fixed_size: 32 * 1024,
            ..Default::default()
        };
        // 2 workgroups of 256 items per CU = 8 waves over 4 SIMDs = 2 per SIMD.
        let o = Occupancy::compute(Target::Gfx942, &kd, Some(256));
        assert_eq!(o.by_lds, Some(2));
        assert_eq!(o.waves_per_simd, 2);
        assert_eq!(o.limited_by, OccupancyLimit::Lds);
        assert_eq!(
            Occupancy::compute(Target::Gfx942, &kd, None).waves_per_simd,
            8
        );
    }
}

//! Dispatch as the HIP runtime and the command processor do it: from a kernel descriptor and a
//! launch shape, the AQL dispatch packet in device memory and the initial register state of every
//! wave (AMDGPUUsage, "Initial Kernel Execution State").
//!
//! Takes the 64-byte kernel descriptor, the launch dims and the addresses of the per-launch
//! objects (packet, queue, kernarg segment, scratch); gives [`Wave`]s ready to run:
//! - user SGPRs, dense from s0 in the documented order, each present when its
//!   `kernel_code_properties` bit is set: private segment buffer (4, a swizzled scratch V#),
//!   dispatch ptr (2), queue ptr (2), kernarg segment ptr (2), dispatch id (2), flat scratch init
//!   (2), private segment size (1); then, on gfx90a/gfx942, the kernarg dwords the descriptor's
//!   `KERNARG_PRELOAD_SPEC` asks for (AMDGPUUsage "Preloaded Kernel Arguments"), read from the
//!   kernarg segment once per launch ([`DispatchAddrs::preload`]);
//! - system SGPRs from `USER_SGPR_COUNT` on, each present when its `COMPUTE_PGM_RSRC2` bit is
//!   set: workgroup id x, y, z, workgroup info, private segment wave offset;
//! - work-item ids in v0, v1, v2, or packed 10:10:10 into v0 on gfx90a/gfx942;
//! - EXEC with a bit per work-item the wave holds; FLAT_SCRATCH set to the wave's scratch on
//!   gfx942 ("architected flat scratch"); MODE from the descriptor's float modes.

use kjit_backend_gcn::Target;

use super::wave::{Wave, WaveId, LANES};
use crate::device::LaunchDims;

/// The fields of a kernel descriptor the device uses (AMDGPUUsage "Kernel Descriptor").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelSetup {
    /// Static LDS bytes.
    pub group_segment_fixed_size: u32,
    /// Scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// Kernarg segment bytes.
    pub kernarg_size: u32,
    /// Byte offset from the descriptor to the entry point.
    pub entry_offset: i64,
    /// COMPUTE_PGM_RSRC1.
    pub rsrc1: u32,
    /// COMPUTE_PGM_RSRC2.
    pub rsrc2: u32,
    /// COMPUTE_PGM_RSRC3 (gfx90a/gfx942: accum_offset, tg_split).
    pub rsrc3: u32,
    /// kernel_code_properties (user SGPR enables, wave32, dynamic stack).
    pub code_properties: u16,
    /// KERNARG_PRELOAD_SPEC: length in dwords (bits 6:0), first dword (bits 15:7).
    pub kernarg_preload: u16,
}

/// Bytes of the backward-compatibility prologue of a kernel with preloaded kernel arguments:
/// firmware that preloads enters at `entry + 256` (AMDGPUUsage "Preloaded Kernel Arguments").
pub const KERNARG_PRELOAD_ENTRY_OFFSET: u64 = 256;

/// Most user SGPRs the dispatcher initialises on gfx9.
const MAX_USER_SGPRS: u32 = 16;

/// kernel_code_properties bits.
mod kcp {
    pub const PRIVATE_SEGMENT_BUFFER: u16 = 1 << 0;
    pub const DISPATCH_PTR: u16 = 1 << 1;
    pub const QUEUE_PTR: u16 = 1 << 2;
    pub const KERNARG_SEGMENT_PTR: u16 = 1 << 3;
    pub const DISPATCH_ID: u16 = 1 << 4;
    pub const FLAT_SCRATCH_INIT: u16 = 1 << 5;
    pub const PRIVATE_SEGMENT_SIZE: u16 = 1 << 6;
    pub const WAVEFRONT_SIZE32: u16 = 1 << 10;
}

impl KernelSetup {
    /// Reads the fields from the 64 descriptor bytes.
    pub fn from_descriptor(kd: &[u8]) -> Result<KernelSetup, String> {
        if kd.len() < 64 {
            return Err(format!(
                "kernel descriptor has {} bytes, expected 64",
                kd.len()
            ));
        }
        let u32_at = |o: usize| u32::from_le_bytes([kd[o], kd[o + 1], kd[o + 2], kd[o + 3]]);
        Ok(KernelSetup {
            group_segment_fixed_size: u32_at(0),
            private_segment_fixed_size: u32_at(4),
            kernarg_size: u32_at(8),
            entry_offset: i64::from_le_bytes(kd[16..24].try_into().unwrap_or([0; 8])),
            rsrc3: u32_at(44),
            rsrc1: u32_at(48),
            rsrc2: u32_at(52),
            code_properties: u16::from_le_bytes([kd[56], kd[57]]),
            kernarg_preload: u16::from_le_bytes([kd[58], kd[59]]),
        })
    }

    /// KERNARG_PRELOAD_SPEC_LENGTH: kernarg dwords placed in user SGPRs.
    pub fn kernarg_preload_length(&self) -> u32 {
        (self.kernarg_preload & 0x7f) as u32
    }

    /// KERNARG_PRELOAD_SPEC_OFFSET: the first preloaded kernarg dword.
    pub fn kernarg_preload_offset(&self) -> u32 {
        (self.kernarg_preload >> 7) as u32
    }

    /// User SGPRs the enabled `kernel_code_properties` fields occupy (before preloaded kernargs).
    pub fn enabled_user_sgprs(&self) -> u32 {
        let kp = self.code_properties;
        let on = |bit: u16, n: u32| if kp & bit != 0 { n } else { 0 };
        on(kcp::PRIVATE_SEGMENT_BUFFER, 4)
            + on(kcp::DISPATCH_PTR, 2)
            + on(kcp::QUEUE_PTR, 2)
            + on(kcp::KERNARG_SEGMENT_PTR, 2)
            + on(kcp::DISPATCH_ID, 2)
            + on(kcp::FLAT_SCRATCH_INIT, 2)
            + on(kcp::PRIVATE_SEGMENT_SIZE, 1)
    }

    /// Where a wave starts: `entry`, or past the 256-byte compatibility prologue when kernel
    /// arguments are preloaded and the firmware preloads them (`legacy_firmware` false).
    pub fn wave_entry(&self, entry: u64, legacy_firmware: bool) -> u64 {
        if self.kernarg_preload_length() > 0 && !legacy_firmware {
            entry + KERNARG_PRELOAD_ENTRY_OFFSET
        } else {
            entry
        }
    }

    /// Checks that the device can run this descriptor on `target`.
    pub fn validate(&self, target: Target) -> Result<(), String> {
        if self.code_properties & kcp::WAVEFRONT_SIZE32 != 0 {
            return Err("kernel is compiled for wave32; gfx9 runs wave64 only".into());
        }
        if target.is_gfx940_family()
            && self.code_properties & (kcp::PRIVATE_SEGMENT_BUFFER | kcp::FLAT_SCRATCH_INIT) != 0
        {
            return Err(format!(
                "{target} has architected flat scratch: the descriptor must not request the private \
                 segment buffer or flat scratch init SGPRs"
            ));
        }
        if self.vgpr_workitem_id() > 2 {
            return Err("ENABLE_VGPR_WORKITEM_ID is 3 (undefined)".into());
        }
        self.validate_kernarg_preload(target)
    }

    /// The descriptor's kernarg preload request against the target and its own fields: only
    /// gfx90a/gfx942 preload; the dwords lie inside the kernarg segment; they follow the
    /// enabled user SGPRs within the 16 the dispatcher writes, and `USER_SGPR_COUNT` counts them.
    fn validate_kernarg_preload(&self, target: Target) -> Result<(), String> {
        let (len, off) = (self.kernarg_preload_length(), self.kernarg_preload_offset());
        if len == 0 {
            return Ok(());
        }
        if !target.has_kernarg_preload() {
            return Err(format!(
                "the descriptor preloads {len} kernarg dwords, but {target} has no kernarg preloading"
            ));
        }
        if self.code_properties & kcp::KERNARG_SEGMENT_PTR == 0 {
            return Err(
                "the descriptor preloads kernel arguments without the kernarg segment pointer \
                 (the compatibility prologue loads them through it)"
                    .into(),
            );
        }
        let end = 4 * (off as u64 + len as u64);
        if end > self.kernarg_size as u64 {
            return Err(format!(
                "kernarg preload of {len} dwords from dword {off} ends at byte {end}, past the \
                 {}-byte kernarg segment",
                self.kernarg_size
            ));
        }
        let enabled = self.enabled_user_sgprs();
        if enabled + len > MAX_USER_SGPRS {
            return Err(format!(
                "{enabled} enabled user SGPRs and {len} preloaded kernarg dwords exceed the \
                 {MAX_USER_SGPRS} user SGPRs"
            ));
        }
        if self.user_sgpr_count() != enabled + len {
            return Err(format!(
                "USER_SGPR_COUNT is {}, but {enabled} enabled user SGPRs and {len} preloaded \
                 kernarg dwords make {}",
                self.user_sgpr_count(),
                enabled + len
            ));
        }
        Ok(())
    }

    /// `COMPUTE_PGM_RSRC2.USER_SGPR_COUNT`: system SGPRs start here.
    pub fn user_sgpr_count(&self) -> u32 {
        (self.rsrc2 >> 1) & 0x1f
    }

    /// `ENABLE_PRIVATE_SEGMENT`.
    pub fn private_segment_enabled(&self) -> bool {
        self.rsrc2 & 1 != 0
    }

    /// `ENABLE_SGPR_WORKGROUP_ID_{X,Y,Z}`.
    pub fn workgroup_id_enabled(&self, dim: usize) -> bool {
        self.rsrc2 >> (7 + dim) & 1 != 0
    }

    /// `ENABLE_SGPR_WORKGROUP_INFO`.
    pub fn workgroup_info_enabled(&self) -> bool {
        self.rsrc2 >> 10 & 1 != 0
    }

    /// `ENABLE_VGPR_WORKITEM_ID`: 0 = x, 1 = x,y, 2 = x,y,z.
    pub fn vgpr_workitem_id(&self) -> u32 {
        (self.rsrc2 >> 11) & 3
    }

    /// Registers per lane the descriptor allocates: (VGPRs, AGPRs).
    pub fn vector_registers(&self, target: Target) -> (u32, u32) {
        let granules = (self.rsrc1 & 0x3f) + 1;
        let total = granules * target.vgpr_encoding_granule();
        if target.has_agprs() {
            let accum_offset = ((self.rsrc3 & 0x3f) + 1) * 4;
            let vgprs = accum_offset.min(total).min(256);
            (vgprs, total.saturating_sub(accum_offset).min(256))
        } else {
            (total.min(256), 0)
        }
    }

    /// The MODE register a wave starts with: float round and denorm modes, DX10 clamp, IEEE.
    pub fn initial_mode(&self) -> u32 {
        let rounds = (self.rsrc1 >> 12) & 0xf;
        let denorms = (self.rsrc1 >> 16) & 0xf;
        let dx10 = (self.rsrc1 >> 21) & 1;
        let ieee = (self.rsrc1 >> 23) & 1;
        rounds | denorms << 4 | dx10 << 8 | ieee << 9
    }
}

/// Addresses of the per-launch objects and sizes of the scratch layout.
#[derive(Clone, Copy, Debug, Default)]
pub struct DispatchAddrs {
    /// The AQL kernel dispatch packet.
    pub packet: u64,
    /// The `amd_queue_t` object.
    pub queue: u64,
    /// The kernarg segment.
    pub kernarg: u64,
    /// Dispatch id.
    pub dispatch_id: u64,
    /// Base of the scratch backing memory of the launch.
    pub scratch_base: u64,
    /// Bytes of scratch per work-item (dword-rounded).
    pub scratch_per_lane: u32,
    /// The kernarg dwords the dispatcher preloads into user SGPRs (the first
    /// `preload_len`), read from the kernarg segment at dispatch.
    pub preload: [u32; 16],
    /// How many of `preload` are loaded.
    pub preload_len: u32,
}

impl DispatchAddrs {
    /// Scratch bytes of one wave (256-byte aligned, as flat scratch requires).
    pub fn scratch_per_wave(&self) -> u64 {
        (self.scratch_per_lane as u64 * LANES as u64).div_ceil(256) * 256
    }
}

/// Bytes of an AQL kernel dispatch packet.
pub const AQL_PACKET_BYTES: usize = 64;

/// The AQL kernel dispatch packet HIP would enqueue (`hsa_kernel_dispatch_packet_t`).
pub fn aql_packet(
    dims: &LaunchDims,
    setup: &KernelSetup,
    kernel_object: u64,
    kernarg: u64,
) -> [u8; AQL_PACKET_BYTES] {
    let mut p = [0u8; AQL_PACKET_BYTES];
    // header: type KERNEL_DISPATCH (2), barrier bit, acquire/release system scope.
    let header: u16 = 2 | 1 << 8 | 2 << 9 | 2 << 11;
    let ndim = if dims.grid[2] > 1 || dims.block[2] > 1 {
        3
    } else if dims.grid[1] > 1 || dims.block[1] > 1 {
        2
    } else {
        1
    };
    p[0..2].copy_from_slice(&header.to_le_bytes());
    p[2..4].copy_from_slice(&(ndim as u16).to_le_bytes());
    for d in 0..3 {
        p[4 + 2 * d..6 + 2 * d].copy_from_slice(&(dims.block[d] as u16).to_le_bytes());
        let grid_items = dims.grid[d].wrapping_mul(dims.block[d]);
        p[12 + 4 * d..16 + 4 * d].copy_from_slice(&grid_items.to_le_bytes());
    }
    p[24..28].copy_from_slice(&setup.private_segment_fixed_size.to_le_bytes());
    let lds = setup.group_segment_fixed_size + dims.dynamic_lds;
    p[28..32].copy_from_slice(&lds.to_le_bytes());
    p[32..40].copy_from_slice(&kernel_object.to_le_bytes());
    p[40..48].copy_from_slice(&kernarg.to_le_bytes());
    p
}

/// Waves in one workgroup of `dims`.
pub fn waves_per_group(dims: &LaunchDims) -> u32 {
    let items = dims.block[0] * dims.block[1] * dims.block[2];
    items.div_ceil(LANES as u32)
}

/// The swizzled scratch buffer resource (V#) the private segment buffer SGPRs hold: base of the
/// launch's scratch, per-lane dwords interleaved across the 64 lanes (element size 4, index stride
/// 64, ADD_TID_ENABLE), unbounded. The kernel prolog adds its wave offset to the base.
pub fn scratch_resource(base: u64) -> [u32; 4] {
    let swizzle_enable = 1u32 << 31;
    let dword1 = (base >> 32) as u32 & 0xffff | swizzle_enable;
    // dst_sel xyzw = 4,5,6,7; num_format/data_format 32-bit float (4); element size 4 bytes (1);
    // index stride 64 (3); add_tid_enable.
    let dword3 = 4 | 5 << 3 | 6 << 6 | 7 << 9 | 7 << 12 | 4 << 15 | 1 << 19 | 3 << 21 | 1 << 23;
    [base as u32, dword1, u32::MAX, dword3]
}

/// The initial state of wave `wave_idx` of workgroup `wg`.
#[allow(clippy::too_many_arguments)]
pub fn initial_wave(
    target: Target,
    setup: &KernelSetup,
    dims: &LaunchDims,
    addrs: &DispatchAddrs,
    wg: [u32; 3],
    wave_idx: u32,
    scratch_wave_offset: u64,
    entry: u64,
) -> Wave {
    let mut w = Wave::new(WaveId::default(), target, 102, 0, 0);
    init_wave(
        &mut w,
        target,
        setup,
        dims,
        addrs,
        wg,
        wave_idx,
        scratch_wave_offset,
        entry,
    );
    w
}

/// The user SGPR values of a wave, built without a heap allocation (at most 16 are loaded;
/// the documented fields add up to at most 17, the excess is dropped as the CP drops it).
#[derive(Default)]
struct UserSgprs {
    v: [u32; 20],
    n: usize,
}

impl UserSgprs {
    fn extend_from_slice(&mut self, vals: &[u32]) {
        for &x in vals {
            self.push(x);
        }
    }

    fn push(&mut self, x: u32) {
        if self.n < self.v.len() {
            self.v[self.n] = x;
            self.n += 1;
        }
    }

    fn len(&self) -> usize {
        self.n.min(16)
    }

    fn as_slice(&self) -> &[u32] {
        &self.v[..self.len()]
    }
}

/// [`initial_wave`] into an existing wave, reusing its host memory.
#[allow(clippy::too_many_arguments)]
pub fn init_wave(
    w: &mut Wave,
    target: Target,
    setup: &KernelSetup,
    dims: &LaunchDims,
    addrs: &DispatchAddrs,
    wg: [u32; 3],
    wave_idx: u32,
    scratch_wave_offset: u64,
    entry: u64,
) {
    let (vgprs, agprs) = setup.vector_registers(target);
    w.reset(
        WaveId {
            workgroup: wg,
            wave: wave_idx,
        },
        target,
        102,
        vgprs,
        agprs,
    );
    w.pc = entry;
    w.mode = setup.initial_mode();

    // User SGPRs, dense from s0.
    let mut s = UserSgprs::default();
    let kp = setup.code_properties;
    let lo = |v: u64| v as u32;
    let hi = |v: u64| (v >> 32) as u32;
    if kp & kcp::PRIVATE_SEGMENT_BUFFER != 0 {
        s.extend_from_slice(&scratch_resource(addrs.scratch_base));
    }
    if kp & kcp::DISPATCH_PTR != 0 {
        s.extend_from_slice(&[lo(addrs.packet), hi(addrs.packet)]);
    }
    if kp & kcp::QUEUE_PTR != 0 {
        s.extend_from_slice(&[lo(addrs.queue), hi(addrs.queue)]);
    }
    if kp & kcp::KERNARG_SEGMENT_PTR != 0 {
        s.extend_from_slice(&[lo(addrs.kernarg), hi(addrs.kernarg)]);
    }
    if kp & kcp::DISPATCH_ID != 0 {
        s.extend_from_slice(&[lo(addrs.dispatch_id), hi(addrs.dispatch_id)]);
    }
    if kp & kcp::FLAT_SCRATCH_INIT != 0 {
        // gfx9 "absolute flat scratch": the 64-bit base of the queue's scratch; the prolog adds
        // the wave offset and moves it to FLAT_SCRATCH.
        s.extend_from_slice(&[lo(addrs.scratch_base), hi(addrs.scratch_base)]);
    }
    if kp & kcp::PRIVATE_SEGMENT_SIZE != 0 {
        s.push(addrs.scratch_per_lane);
    }
    // Preloaded kernel arguments follow the enabled user SGPRs.
    s.extend_from_slice(&addrs.preload[..(addrs.preload_len as usize).min(16)]);
    // Only the first 16 user SGPRs are initialised by the CP.
    let s = s.as_slice();
    w.sgpr[..s.len()].copy_from_slice(s);

    // System SGPRs after USER_SGPR_COUNT.
    let mut n = setup.user_sgpr_count().max(s.len() as u32) as usize;
    let mut push = |w: &mut Wave, v: u32| {
        if n < w.sgpr.len() {
            w.sgpr[n] = v;
        }
        n += 1;
    };
    for (d, &id) in wg.iter().enumerate() {
        if setup.workgroup_id_enabled(d) {
            push(w, id);
        }
    }
    let nwaves = waves_per_group(dims);
    if setup.workgroup_info_enabled() {
        let first = if wave_idx == 0 { 1u32 << 31 } else { 0 };
        push(w, first | (nwaves & 0x3f));
    }
    let wave_scratch = addrs.scratch_base + scratch_wave_offset;
    if setup.private_segment_enabled() {
        if target.is_gfx940_family() {
            w.flat_scratch = wave_scratch;
        } else {
            push(w, scratch_wave_offset as u32);
        }
    }

    // Work-item ids and EXEC.
    let [bx, by, bz] = dims.block;
    let items = bx * by * bz;
    let packed = matches!(target, Target::Gfx90a | Target::Gfx942);
    let ids = setup.vgpr_workitem_id();
    let mut exec = 0u64;
    // (x, y, z) of the wave's first work-item, then stepped per lane: three divisions per wave
    // instead of three per lane (they were a visible part of a short kernel's set-up).
    let first = wave_idx * LANES as u32;
    let (mut x, mut y, mut z) = (first % bx, (first / bx) % by, first / (bx * by));
    for l in 0..LANES as u32 {
        let flat = first + l;
        if flat >= items {
            break;
        }
        if l > 0 {
            x += 1;
            if x == bx {
                x = 0;
                y += 1;
                if y == by {
                    y = 0;
                    z += 1;
                }
            }
        }
        exec |= 1 << l;
        let l = l as usize;
        if packed {
            let y = if ids >= 1 { y } else { 0 };
            let z = if ids >= 2 { z } else { 0 };
            w.vgpr[0][l] = x | y << 10 | z << 20;
        } else {
            w.vgpr[0][l] = x;
            if ids >= 1 {
                w.vgpr[1][l] = y;
            }
            if ids >= 2 {
                w.vgpr[2][l] = z;
            }
        }
    }
    w.exec = exec;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(kp: u16, rsrc2: u32) -> KernelSetup {
        KernelSetup {
            code_properties: kp,
            rsrc2,
            rsrc1: 1,
            rsrc3: 1,
            ..Default::default()
        }
    }

    #[test]
    fn user_and_system_sgprs_follow_the_documented_order() {
        // gfx900: private segment buffer + kernarg ptr (6 user SGPRs), wg id x and z, info, wave offset.
        let s = setup(
            kcp::PRIVATE_SEGMENT_BUFFER | kcp::KERNARG_SEGMENT_PTR,
            1 | 6 << 1 | 1 << 7 | 1 << 9 | 1 << 10,
        );
        let dims = LaunchDims {
            grid: [4, 1, 3],
            block: [128, 1, 1],
            dynamic_lds: 0,
        };
        let addrs = DispatchAddrs {
            kernarg: 0x1_2345_6780,
            scratch_base: 0x2_0000_0000,
            scratch_per_lane: 16,
            ..Default::default()
        };
        let w = initial_wave(
            Target::Gfx900,
            &s,
            &dims,
            &addrs,
            [3, 0, 2],
            1,
            0x400,
            0x1000,
        );
        assert_eq!(w.sgpr[0], 0);
        assert_eq!(w.sgpr[1] & 0xffff, 2, "V# base high bits");
        assert_eq!(
            (w.sgpr[4], w.sgpr[5]),
            (0x2345_6780, 1),
            "kernarg ptr after the 4-SGPR V#"
        );
        assert_eq!((w.sgpr[6], w.sgpr[7]), (3, 2), "workgroup ids x and z");
        assert_eq!(w.sgpr[8], 2, "workgroup info: two waves, not the first");
        assert_eq!(w.sgpr[9], 0x400, "scratch wave offset");
        assert_eq!(w.vgpr[0][0], 64, "second wave starts at work-item 64");
        assert_eq!(w.exec, u64::MAX);
        assert_eq!(w.pc, 0x1000);
    }

    #[test]
    fn work_item_ids_are_packed_on_gfx90a_and_gfx942_and_exec_covers_partial_waves() {
        let s = setup(kcp::KERNARG_SEGMENT_PTR, 2 << 1 | 1 << 7 | 2 << 11);
        let dims = LaunchDims {
            grid: [1, 1, 1],
            block: [5, 3, 2],
            dynamic_lds: 0,
        };
        let addrs = DispatchAddrs::default();
        let w = initial_wave(Target::Gfx942, &s, &dims, &addrs, [0, 0, 0], 0, 0, 0);
        assert_eq!(w.exec, (1u64 << 30) - 1, "30 work-items");
        // work-item 29 = (4, 2, 1)
        assert_eq!(w.vgpr[0][29], 4 | 2 << 10 | 1 << 20);
        let w = initial_wave(Target::Gfx900, &s, &dims, &addrs, [0, 0, 0], 0, 0, 0);
        assert_eq!((w.vgpr[0][29], w.vgpr[1][29], w.vgpr[2][29]), (4, 2, 1));
    }

    #[test]
    fn gfx942_gets_flat_scratch_and_registers_split_by_accum_offset() {
        let mut s = setup(kcp::KERNARG_SEGMENT_PTR, 1 | 2 << 1 | 1 << 7);
        s.rsrc1 = 3; // 4 granules of 8 = 32 registers
        s.rsrc3 = 4; // accum_offset = 20
        assert_eq!(s.vector_registers(Target::Gfx942), (20, 12));
        assert_eq!(s.vector_registers(Target::Gfx900), (16, 0));
        let addrs = DispatchAddrs {
            scratch_base: 0x5000_0000,
            scratch_per_lane: 4,
            ..Default::default()
        };
        let dims = LaunchDims {
            grid: [1, 1, 1],
            block: [64, 1, 1],
            dynamic_lds: 0,
        };
        let w = initial_wave(Target::Gfx942, &s, &dims, &addrs, [0, 0, 0], 0, 0x100, 0);
        assert_eq!(w.flat_scratch, 0x5000_0100);
        assert_eq!(
            w.sgpr[3], 0,
            "no wave offset SGPR on architected flat scratch"
        );
        assert!(s.validate(Target::Gfx942).is_ok());
        let bad = setup(kcp::PRIVATE_SEGMENT_BUFFER, 0);
        assert!(bad.validate(Target::Gfx942).is_err());
    }

    #[test]
    fn preloaded_kernargs_follow_the_enabled_user_sgprs_and_move_the_entry() {
        // gfx90a with the scratch V# and the kernarg pointer (6 user SGPRs) and 4 preloaded
        // dwords: USER_SGPR_COUNT 10, workgroup id x in s10.
        let mut s = setup(
            kcp::PRIVATE_SEGMENT_BUFFER | kcp::KERNARG_SEGMENT_PTR,
            10 << 1 | 1 << 7,
        );
        s.kernarg_size = 64;
        s.kernarg_preload = 4;
        assert_eq!(s.validate(Target::Gfx90a), Ok(()));
        let mut addrs = DispatchAddrs {
            kernarg: 0x7000,
            preload_len: 4,
            ..Default::default()
        };
        addrs.preload[..4].copy_from_slice(&[11, 22, 33, 44]);
        let dims = LaunchDims {
            grid: [2, 1, 1],
            block: [64, 1, 1],
            dynamic_lds: 0,
        };
        let w = initial_wave(Target::Gfx90a, &s, &dims, &addrs, [1, 0, 0], 0, 0, 0x1000);
        assert_eq!((w.sgpr[4], w.sgpr[5]), (0x7000, 0), "kernarg pointer");
        assert_eq!(
            &w.sgpr[6..10],
            &[11, 22, 33, 44],
            "preloaded dwords after it"
        );
        assert_eq!(w.sgpr[10], 1, "workgroup id x after USER_SGPR_COUNT");
        assert_eq!(
            s.wave_entry(0x1000, false),
            0x1100,
            "preloading firmware skips 256 bytes"
        );
        assert_eq!(
            s.wave_entry(0x1000, true),
            0x1000,
            "old firmware runs the prologue"
        );
        s.kernarg_preload = 0;
        assert_eq!(s.wave_entry(0x1000, false), 0x1000);
    }

    #[test]
    fn bad_kernarg_preload_specs_are_errors() {
        let ok = {
            let mut s = setup(kcp::KERNARG_SEGMENT_PTR, 8 << 1 | 1 << 7);
            s.kernarg_size = 24;
            s.kernarg_preload = 6;
            s
        };
        assert_eq!(ok.validate(Target::Gfx942), Ok(()));
        let e = ok.validate(Target::Gfx900).unwrap_err();
        assert!(e.contains("no kernarg preloading"), "{e}");
        // Past the kernarg segment: dwords 1..7 of a 24-byte segment.
        let past = KernelSetup {
            kernarg_preload: 6 | 1 << 7,
            ..ok
        };
        let e = past.validate(Target::Gfx942).unwrap_err();
        assert!(e.contains("past the 24-byte kernarg segment"), "{e}");
        // 2 + 15 user SGPRs.
        let many = KernelSetup {
            kernarg_size: 256,
            kernarg_preload: 15,
            rsrc2: 17 << 1,
            ..ok
        };
        let e = many.validate(Target::Gfx942).unwrap_err();
        assert!(e.contains("exceed the 16 user SGPRs"), "{e}");
        // USER_SGPR_COUNT that does not count the preloaded dwords.
        let count = KernelSetup {
            rsrc2: 2 << 1,
            ..ok
        };
        let e = count.validate(Target::Gfx942).unwrap_err();
        assert!(e.contains("USER_SGPR_COUNT is 2"), "{e}");
        // No kernarg pointer for the prologue to load through.
        let no_ptr = KernelSetup {
            code_properties: kcp::DISPATCH_PTR,
            ..ok
        };
        let e = no_ptr.validate(Target::Gfx942).unwrap_err();
        assert!(e.contains("without the kernarg segment pointer"), "{e}");
    }

    #[test]
    fn aql_packet_holds_sizes_in_work_items() {
        let s = KernelSetup {
            group_segment_fixed_size: 1024,
            private_segment_fixed_size: 16,
            ..Default::default()
        };
        let dims = LaunchDims {
            grid: [8, 2, 1],
            block: [64, 4, 1],
            dynamic_lds: 512,
        };
        let p = aql_packet(&dims, &s, 0xabc, 0xdef);
        assert_eq!(u16::from_le_bytes([p[2], p[3]]), 2, "two dimensions");
        assert_eq!(u16::from_le_bytes([p[4], p[5]]), 64);
        assert_eq!(u32::from_le_bytes(p[12..16].try_into().unwrap()), 512);
        assert_eq!(u32::from_le_bytes(p[16..20].try_into().unwrap()), 8);
        assert_eq!(u32::from_le_bytes(p[28..32].try_into().unwrap()), 1536);
        assert_eq!(u64::from_le_bytes(p[40..48].try_into().unwrap()), 0xdef);
    }
}

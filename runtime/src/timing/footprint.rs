//! Memory footprints of one executed instruction, computed from the wave's registers just before
//! it executes: which 64-byte granules a vector or scalar access touches, and how many cycles the
//! LDS bank array needs for an LDS access.
//!
//! LDS banks (rocprofiler-compute "Pipeline descriptions"; `docs/timing.md`): 32 banks of 4 bytes,
//! 128 bytes per clock. The lanes of a wave64 access are served in passes of `128 / bytes per
//! lane` lanes (32 lanes for dwords, 16 for 8-byte, 8 for 16-byte accesses). In a pass, each bank
//! serves one distinct dword per cycle; lanes reading the same dword share it (broadcast). A pass
//! therefore costs the largest number of distinct dwords any one bank holds in it: an N-way bank
//! conflict costs N cycles instead of 1.

use crate::emu::ds::{DsInst, DsOp};
use crate::emu::wave::{Wave, LANES};

/// Banks of the LDS.
pub const LDS_BANKS: u32 = 32;
/// Bytes the bank array serves per cycle.
pub const LDS_BYTES_PER_CLK: u32 = LDS_BANKS * 4;

/// The LDS accesses of one DS instruction: (byte offset added to the address VGPR, bytes per
/// lane). Instructions that move data between lanes without addressing banks give none.
fn accesses(i: &DsInst) -> ([(u32, u32); 2], usize) {
    let one = |off: u32, size: u32| ([(off, size), (0, 0)], 1);
    let two = |dwords: u32, st64: bool| {
        let scale = 4 * dwords * if st64 { 64 } else { 1 };
        (
            [
                (i.offset0 as u32 * scale, 4 * dwords),
                (i.offset1 as u32 * scale, 4 * dwords),
            ],
            2,
        )
    };
    match i.op {
        DsOp::Read { bytes, dwords, .. } | DsOp::Write { bytes, dwords, .. } => {
            let size = if bytes == 4 {
                4 * dwords as u32
            } else {
                bytes as u32
            };
            one(i.offset(), size)
        }
        DsOp::Read2 { dwords, st64 } | DsOp::Write2 { dwords, st64 } => two(dwords as u32, st64),
        DsOp::Wrxchg2 { wide, st64 } => two(if wide { 2 } else { 1 }, st64),
        DsOp::Atomic { wide, .. } => one(i.offset(), if wide { 8 } else { 4 }),
        DsOp::Swizzle
        | DsOp::Permute
        | DsOp::Bpermute
        | DsOp::ReadAddtid
        | DsOp::WriteAddtid
        | DsOp::Nop => ([(0, 0), (0, 0)], 0),
    }
}

/// Bank-array cycles of a DS instruction on the wave's current registers and EXEC.
pub fn lds_bank_cycles(w: &Wave, i: &DsInst) -> u16 {
    let (acc, n) = accesses(i);
    if n == 0 {
        // Lane crossbar operations and addtid forms: conflict-free dword passes.
        return if matches!(i.op, DsOp::Nop) {
            0
        } else {
            (LANES as u32 * 4 / LDS_BYTES_PER_CLK) as u16
        };
    }
    let addr = &w.vgpr[i.addr as usize];
    let mut cycles = 0u32;
    for &(off, size) in &acc[..n] {
        cycles += access_cycles(|l| addr[l].wrapping_add(off), w.exec, size);
    }
    cycles.min(u16::MAX as u32) as u16
}

/// Bank cycles of one access of `size` bytes per lane at `addr(lane)` for the lanes in `exec`.
pub fn access_cycles(addr: impl Fn(usize) -> u32, exec: u64, size: u32) -> u32 {
    let per_lane = size.max(4);
    let lanes_per_pass = (LDS_BYTES_PER_CLK / per_lane).max(1) as usize;
    let dwords_per_lane = per_lane.div_ceil(4);
    let mut total = 0;
    let mut dwords: Vec<u32> = Vec::with_capacity(LDS_BANKS as usize);
    for pass in (0..LANES).step_by(lanes_per_pass) {
        dwords.clear();
        for l in pass..(pass + lanes_per_pass).min(LANES) {
            if exec >> l & 1 == 0 {
                continue;
            }
            let first = addr(l) / 4;
            dwords.extend((0..dwords_per_lane).map(|k| first.wrapping_add(k)));
        }
        if dwords.is_empty() {
            continue;
        }
        dwords.sort_unstable();
        dwords.dedup();
        let mut per_bank = [0u8; LDS_BANKS as usize];
        for d in &dwords {
            per_bank[(d % LDS_BANKS) as usize] += 1;
        }
        total += *per_bank.iter().max().unwrap_or(&1) as u32;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_dwords_are_conflict_free_and_strides_conflict() {
        let all = u64::MAX;
        // 64 lanes of consecutive dwords: two passes of 32 lanes, one cycle each.
        assert_eq!(access_cycles(|l| 4 * l as u32, all, 4), 2);
        // Stride of 2 dwords: 2-way conflicts; stride 32 dwords: every lane on bank 0.
        assert_eq!(access_cycles(|l| 8 * l as u32, all, 4), 4);
        assert_eq!(access_cycles(|l| 128 * l as u32, all, 4), 64);
        // Every lane on the same dword: broadcast.
        assert_eq!(access_cycles(|_| 64, all, 4), 2);
        // 16 bytes per lane, consecutive: 8 lanes per pass fill the 32 banks once.
        assert_eq!(access_cycles(|l| 16 * l as u32, all, 16), 8);
        // Half the lanes off: one pass for 4-byte accesses.
        assert_eq!(access_cycles(|l| 4 * l as u32, u32::MAX as u64, 4), 1);
    }
}

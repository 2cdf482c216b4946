//! The LDS of one workgroup, with a race detector for the waves that share it.
//!
//! Takes byte accesses by LDS address from the waves of a workgroup (which run interleaved on one
//! host thread), gives the bytes, and reports an access outside the workgroup's allocation as a
//! fault and two accesses by different waves to the same bytes with no `s_barrier` between them
//! (at least one a write, not both atomics) as an [`EmuError::LdsRace`].
//!
//! A plain write of the bytes the location already holds is not a race with another wave's write
//! or read of the epoch: whatever the order, every access sees the same bytes (waves holding
//! replicated values — Triton's layout conversions — write identical data to one address). Such
//! writes are counted ([`Lds::same_value_writes`]). A write of different bytes, and a read of
//! bytes another wave wrote in the epoch (that the reader did not also write), still race.
//!
//! The detector keeps, per dword, the barrier epoch and wave of the last write, and the epoch and
//! set of waves that read it since. The epoch counts completed barriers of the workgroup: two
//! accesses in the same epoch by different waves are unordered. An LDS operation still in flight
//! when its wave passes a barrier may complete after it, so the scheduler re-stamps such
//! operations into the new epoch ([`Lds::restamp`]).

use super::wave::EmuError;

/// Shadow state of one LDS dword.
#[derive(Clone, Copy, Default)]
struct Shadow {
    /// Epoch of the last write (0: never written in this launch).
    w_epoch: u32,
    /// pc (low 32 bits) of the last write.
    w_pc: u32,
    /// Epoch of the reads in `r_mask`.
    r_epoch: u32,
    /// Waves that read the dword in `r_epoch`.
    r_mask: u16,
    /// Wave of the first write of `w_epoch`.
    w_wave: u8,
    /// Waves that wrote the dword in `w_epoch` (after the first, only writes of the bytes it
    /// already held).
    w_mask: u16,
    /// Bytes of the dword the last write touched, and whether it was atomic (bit 4).
    w_bytes: u8,
}

/// How an access uses the LDS, for race detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A plain load.
    Read,
    /// A plain store.
    Write,
    /// An atomic read-modify-write: does not race with other atomics.
    Atomic,
}

/// One workgroup's LDS.
pub struct Lds {
    data: Vec<u8>,
    shadow: Vec<Shadow>,
    /// Completed barriers + 1.
    epoch: u32,
    detect: bool,
    /// Cross-wave conflicts forgiven because the write did not change the bytes.
    same_value_writes: u64,
}

impl Lds {
    /// `size` bytes of LDS, zeroed; race detection when `detect` (more than one wave).
    pub fn new(size: u32, detect: bool) -> Lds {
        let mut l = Lds {
            data: Vec::new(),
            shadow: Vec::new(),
            epoch: 1,
            detect: false,
            same_value_writes: 0,
        };
        l.reset(size, detect);
        l
    }

    /// Re-initialises for a new workgroup, reusing the host memory.
    pub fn reset(&mut self, size: u32, detect: bool) {
        self.data.clear();
        self.data.resize(size as usize, 0);
        self.shadow.clear();
        if detect {
            self.shadow
                .resize((size as usize).div_ceil(4), Shadow::default());
        }
        self.detect = detect;
        self.epoch = 1;
        self.same_value_writes = 0;
    }

    /// Writes by one wave that met another wave's write or read of the same bytes in the same
    /// barrier epoch and were no race because they stored the bytes already there.
    pub fn same_value_writes(&self) -> u64 {
        self.same_value_writes
    }

    /// Whether cross-wave race detection is on.
    pub fn detecting(&self) -> bool {
        self.detect
    }

    /// Bytes of LDS.
    pub fn size(&self) -> u32 {
        self.data.len() as u32
    }

    /// A barrier completed: accesses before and after it are ordered.
    pub fn barrier(&mut self) {
        self.epoch += 1;
    }

    fn range(&self, addr: u32, size: u32, write: bool) -> Result<std::ops::Range<usize>, EmuError> {
        let end = addr as u64 + size as u64;
        if end > self.data.len() as u64 {
            return Err(EmuError::fault(
                addr as u64,
                format!(
                    "LDS {} of {size} byte(s) at {addr:#x} outside the workgroup's {} bytes of LDS",
                    if write { "write" } else { "read" },
                    self.data.len()
                ),
            ));
        }
        Ok(addr as usize..end as usize)
    }

    /// Race check and shadow update for an access by `wave` at `pc`; `new` holds the bytes a
    /// plain write stores (to recognise a write of the bytes already there).
    fn track(
        &mut self,
        wave: u8,
        pc: u64,
        addr: u32,
        size: u32,
        access: Access,
        new: &[u8],
    ) -> Result<(), EmuError> {
        if !self.detect {
            return Ok(());
        }
        let epoch = self.epoch;
        let me = 1u16 << (wave & 15);
        let mut a = addr;
        let end = addr + size;
        while a < end {
            let d = (a >> 2) as usize;
            let first = a & 3;
            let last = ((end - 1).min(a | 3)) & 3;
            let bytes: u8 = ((0xfu8 << first) & (0xfu8 >> (3 - last))) & 0xf;
            let chunk_end = end.min((a | 3) + 1);
            let sh = &mut self.shadow[d];
            let written = sh.w_epoch == epoch && sh.w_bytes & bytes != 0;
            let prior_write = written && sh.w_mask & !me != 0;
            let prior_atomic = sh.w_bytes & 0x10 != 0;
            match access {
                Access::Read => {
                    // Reading bytes this wave wrote too is ordered whatever the others did:
                    // their writes of the epoch stored the same bytes.
                    if prior_write && sh.w_mask & me == 0 {
                        return Err(race(a, sh, wave, pc, "reads", epoch));
                    }
                    if sh.r_epoch != epoch {
                        sh.r_epoch = epoch;
                        sh.r_mask = 0;
                    }
                    sh.r_mask |= 1 << (wave & 15);
                }
                Access::Write | Access::Atomic => {
                    let atomic = access == Access::Atomic;
                    let read_by_other = sh.r_epoch == epoch && sh.r_mask & !me != 0;
                    if !atomic && (prior_write || read_by_other) {
                        let new = &new[(a - addr) as usize..(chunk_end - addr) as usize];
                        if self.data[a as usize..chunk_end as usize] == *new && !prior_atomic {
                            // Stores what is there: no order of the accesses tells it apart.
                            self.same_value_writes += 1;
                            if !written {
                                sh.w_epoch = epoch;
                                sh.w_wave = wave;
                                sh.w_pc = pc as u32;
                                sh.w_mask = 0;
                                sh.w_bytes = 0;
                            }
                            sh.w_mask |= me;
                            sh.w_bytes |= bytes;
                            a = chunk_end;
                            continue;
                        }
                    }
                    if prior_write && !(atomic && prior_atomic) {
                        return Err(race(a, sh, wave, pc, "writes", epoch));
                    }
                    if read_by_other {
                        let other = (sh.r_mask & !me).trailing_zeros();
                        return Err(EmuError::LdsRace {
                            at: Default::default(),
                            addr: a,
                            detail: format!(
                                "wave {wave} writes LDS {a:#x}, which wave {other} read with no s_barrier in between"
                            ),
                        });
                    }
                    sh.w_epoch = epoch;
                    sh.w_wave = wave;
                    sh.w_mask = me;
                    sh.w_pc = pc as u32;
                    sh.w_bytes = bytes | if atomic { 0x10 } else { 0 };
                }
            }
            a = chunk_end;
        }
        Ok(())
    }

    /// Re-stamps the dwords of an LDS operation that was still in flight when its wave passed a
    /// barrier: it may complete after the barrier, so it belongs to the current epoch.
    pub fn restamp(&mut self, wave: u8, pc: u64, dwords: &[u32], write: bool) {
        if !self.detect {
            return;
        }
        let epoch = self.epoch;
        for &d in dwords {
            if let Some(sh) = self.shadow.get_mut(d as usize) {
                if write {
                    sh.w_epoch = epoch;
                    sh.w_wave = wave;
                    sh.w_mask = 1 << (wave & 15);
                    sh.w_pc = pc as u32;
                    sh.w_bytes = 0xf;
                } else {
                    if sh.r_epoch != epoch {
                        sh.r_epoch = epoch;
                        sh.r_mask = 0;
                    }
                    sh.r_mask |= 1 << (wave & 15);
                }
            }
        }
    }

    /// Reads `out.len()` bytes at `addr` for `wave`.
    #[inline]
    pub fn read(&mut self, wave: u8, pc: u64, addr: u32, out: &mut [u8]) -> Result<(), EmuError> {
        let r = self.range(addr, out.len() as u32, false)?;
        self.track(wave, pc, addr, out.len() as u32, Access::Read, &[])?;
        out.copy_from_slice(&self.data[r]);
        Ok(())
    }

    /// Reads a dword.
    #[inline]
    pub fn read_u32(&mut self, wave: u8, pc: u64, addr: u32) -> Result<u32, EmuError> {
        let mut b = [0u8; 4];
        self.read(wave, pc, addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Writes `data` at `addr` for `wave`.
    #[inline]
    pub fn write(&mut self, wave: u8, pc: u64, addr: u32, data: &[u8]) -> Result<(), EmuError> {
        let r = self.range(addr, data.len() as u32, true)?;
        self.track(wave, pc, addr, data.len() as u32, Access::Write, data)?;
        self.data[r].copy_from_slice(data);
        Ok(())
    }

    /// Writes a dword.
    #[inline]
    pub fn write_u32(&mut self, wave: u8, pc: u64, addr: u32, v: u32) -> Result<(), EmuError> {
        self.write(wave, pc, addr, &v.to_le_bytes())
    }

    /// Atomically (with respect to the other waves, which run on this thread) replaces the
    /// `size`-byte value at `addr` by `f(old)`; returns `old`.
    pub fn atomic(
        &mut self,
        wave: u8,
        pc: u64,
        addr: u32,
        size: u32,
        f: impl FnOnce(u64) -> u64,
    ) -> Result<u64, EmuError> {
        let r = self.range(addr, size, true)?;
        self.track(wave, pc, addr, size, Access::Atomic, &[])?;
        let mut b = [0u8; 8];
        b[..size as usize].copy_from_slice(&self.data[r.clone()]);
        let old = u64::from_le_bytes(b);
        let new = f(old).to_le_bytes();
        self.data[r].copy_from_slice(&new[..size as usize]);
        Ok(old)
    }

    /// The whole LDS (for tests and debugging).
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }
}

fn race(addr: u32, sh: &Shadow, wave: u8, pc: u64, verb: &str, _epoch: u32) -> EmuError {
    let _ = pc;
    EmuError::LdsRace {
        at: Default::default(),
        addr,
        detail: format!(
            "wave {wave} {verb} LDS {addr:#x}, which wave {} wrote at pc {:#x} with no s_barrier in between",
            sh.w_wave, sh.w_pc
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_wave_accesses_race_until_a_barrier_orders_them() {
        let mut l = Lds::new(256, true);
        l.write_u32(0, 0x100, 16, 7).unwrap();
        // The same wave may read its own write.
        assert_eq!(l.read_u32(0, 0x108, 16).unwrap(), 7);
        // Another wave in the same epoch races (read after write).
        let e = l.read_u32(1, 0x110, 16).unwrap_err().to_string();
        assert!(
            e.contains("wave 1 reads LDS 0x10") && e.contains("wave 0 wrote at pc 0x100"),
            "{e}"
        );
        l.barrier();
        assert_eq!(l.read_u32(1, 0x110, 16).unwrap(), 7);
        // Write after another wave's read in the same epoch races too.
        assert!(l.write_u32(0, 0x120, 16, 8).is_err());
        // Different dwords never race; neighbouring bytes of one dword do not either.
        l.write(2, 0x130, 40, &[1]).unwrap();
        l.write(3, 0x130, 41, &[2]).unwrap();
        // Atomics from different waves do not race with each other.
        l.atomic(0, 0x140, 64, 4, |x| x + 1).unwrap();
        l.atomic(1, 0x140, 64, 4, |x| x + 1).unwrap();
        assert!(l
            .read_u32(2, 0x150, 64)
            .unwrap_err()
            .to_string()
            .contains("race"));
    }

    #[test]
    fn writes_of_the_bytes_already_there_do_not_race() {
        let mut l = Lds::new(64, true);
        l.write_u32(0, 0x100, 8, 7).unwrap();
        // Another wave writes the same bytes: no race, counted.
        l.write_u32(1, 0x200, 8, 7).unwrap();
        assert_eq!(l.same_value_writes(), 1);
        // Both writers may read it; a third wave that did not write it races with them.
        assert_eq!(l.read_u32(0, 0x108, 8).unwrap(), 7);
        assert_eq!(l.read_u32(1, 0x208, 8).unwrap(), 7);
        let e = l.read_u32(2, 0x300, 8).unwrap_err().to_string();
        assert!(e.contains("wave 2 reads LDS 0x8"), "{e}");
        // A write of different bytes by any of them races.
        let e = l.write_u32(1, 0x210, 8, 8).unwrap_err().to_string();
        assert!(e.contains("wave 1 writes LDS 0x8"), "{e}");
        // Only the bytes written are compared: byte 1 of dword 4 equal, byte 2 not.
        l.barrier();
        l.write(0, 0x100, 16, &[1, 2, 3, 4]).unwrap();
        l.write(1, 0x200, 17, &[2]).unwrap();
        assert!(l.write(1, 0x200, 18, &[9]).is_err());
        // A same-bytes write after another wave's read is no race either.
        l.barrier();
        assert_eq!(l.read_u32(2, 0x300, 16).unwrap(), 0x0403_0201);
        l.write_u32(3, 0x400, 16, 0x0403_0201).unwrap();
        assert!(l.write_u32(3, 0x400, 16, 5).is_err());
    }

    #[test]
    fn out_of_range_is_a_fault_and_restamp_moves_inflight_ops_into_the_new_epoch() {
        let mut l = Lds::new(64, true);
        assert!(l.read_u32(0, 0, 62).is_err());
        assert!(l.write_u32(0, 0, 64, 1).is_err());
        l.write_u32(0, 0x10, 8, 5).unwrap();
        l.barrier();
        l.restamp(0, 0x10, &[2], true);
        assert!(
            l.read_u32(1, 0x20, 8).is_err(),
            "a store not waited for before the barrier races"
        );
    }

    #[test]
    fn single_wave_groups_skip_detection() {
        let mut l = Lds::new(16, false);
        l.write_u32(0, 0, 0, 1).unwrap();
        assert_eq!(l.read_u32(1, 0, 0).unwrap(), 1);
    }
}

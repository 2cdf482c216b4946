//! The asynchronous memory counters of one wave (gfx9 `vmcnt`, `lgkmcnt`, `expcnt`) and the
//! hazards they hide on hardware.
//!
//! Takes every memory instruction the wave issues (with the registers it will write, the data it
//! will write there, and the registers it reads as store data) and every `s_waitcnt`; gives the
//! data to the registers only when a wait guarantees the operation is complete, and reports a
//! [`EmuError::Hazard`] when an instruction reads a register whose load may still be in flight, or
//! writes a register that an in-flight load will overwrite later.
//!
//! Ordering rules (Vega/CDNA ISA "Data Dependency Resolution", LLVM `SIInsertWaitcnts`):
//! - VMEM loads, stores and atomics (buffer/global/flat/scratch) all count on `vmcnt` and return
//!   in issue order on gfx9: after `vmcnt(N)` every VMEM operation older than the N youngest is
//!   complete.
//! - LDS operations count on `lgkmcnt` and return in order among themselves; SMEM operations also
//!   count on `lgkmcnt` but return in any order. After `lgkmcnt(N)` an LDS operation is complete
//!   when at least N younger LDS operations were issued after it (they are all outstanding if it
//!   is); an SMEM operation is complete only after `lgkmcnt(0)`.
//! - Counters saturate (vmcnt 63, lgkmcnt 15, expcnt 7): issuing one more stalls until the oldest
//!   completes, so the model retires the oldest first.
//! - On gfx9 the data of a VMEM or DS store is read from its VGPRs at issue (only exports and GDS
//!   lock their data VGPRs under `expcnt`), so overwriting a store's data register right after the
//!   store is legal. [`Scoreboard::strict_store_sources`] makes the model lock a store's data
//!   registers until its counter retires it, a stricter discipline for code that is meant to be
//!   portable to targets where stores read their data late.

use std::collections::VecDeque;

use super::wave::{EmuError, Wave, LANES};

/// A set of registers: SGPRs and specials by scalar code (0..=127), VGPRs, AGPRs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegSet {
    /// Scalar codes 0..=127 (SGPRs, vcc, m0, exec, ...).
    pub s: u128,
    /// v0..v255.
    pub v: [u64; 4],
    /// a0..a255.
    pub a: [u64; 4],
}

fn set_range(bits: &mut [u64; 4], first: u32, n: u32) {
    for r in first..(first + n).min(256) {
        bits[(r >> 6) as usize] |= 1 << (r & 63);
    }
}

impl RegSet {
    /// The empty set.
    pub const EMPTY: RegSet = RegSet {
        s: 0,
        v: [0; 4],
        a: [0; 4],
    };

    /// Adds scalar codes `first..first+n`.
    pub fn add_s(&mut self, first: u32, n: u32) {
        for r in first..(first + n).min(128) {
            self.s |= 1 << r;
        }
    }

    /// Adds `v[first..first+n]`.
    pub fn add_v(&mut self, first: u32, n: u32) {
        set_range(&mut self.v, first, n);
    }

    /// Adds `a[first..first+n]`.
    pub fn add_a(&mut self, first: u32, n: u32) {
        set_range(&mut self.a, first, n);
    }

    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.s == 0 && self.v == [0; 4] && self.a == [0; 4]
    }

    /// The registers in both sets.
    #[inline]
    pub fn and(&self, o: &RegSet) -> RegSet {
        RegSet {
            s: self.s & o.s,
            v: [
                self.v[0] & o.v[0],
                self.v[1] & o.v[1],
                self.v[2] & o.v[2],
                self.v[3] & o.v[3],
            ],
            a: [
                self.a[0] & o.a[0],
                self.a[1] & o.a[1],
                self.a[2] & o.a[2],
                self.a[3] & o.a[3],
            ],
        }
    }

    /// The registers in either set.
    #[inline]
    pub fn or(&self, o: &RegSet) -> RegSet {
        RegSet {
            s: self.s | o.s,
            v: [
                self.v[0] | o.v[0],
                self.v[1] | o.v[1],
                self.v[2] | o.v[2],
                self.v[3] | o.v[3],
            ],
            a: [
                self.a[0] | o.a[0],
                self.a[1] | o.a[1],
                self.a[2] | o.a[2],
                self.a[3] | o.a[3],
            ],
        }
    }

    /// Whether the sets share a register.
    #[inline]
    pub fn intersects(&self, o: &RegSet) -> bool {
        !self.and(o).is_empty()
    }

    /// The registers as assembler text, ranges collapsed (`v[4:7]`, `s2`, `vcc_lo`).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let runs =
            |bits: &dyn Fn(u32) -> bool, limit: u32, prefix: &str, parts: &mut Vec<String>| {
                let mut r = 0;
                while r < limit {
                    if bits(r) {
                        let start = r;
                        while r + 1 < limit && bits(r + 1) {
                            r += 1;
                        }
                        parts.push(if start == r {
                            format!("{prefix}{r}")
                        } else {
                            format!("{prefix}[{start}:{r}]")
                        });
                    }
                    r += 1;
                }
            };
        let s = self.s;
        runs(&|r| r < 102 && s >> r & 1 != 0, 102, "s", &mut parts);
        for (code, name) in [
            (102, "flat_scratch_lo"),
            (103, "flat_scratch_hi"),
            (106, "vcc_lo"),
            (107, "vcc_hi"),
            (124, "m0"),
            (126, "exec_lo"),
            (127, "exec_hi"),
        ] {
            if s >> code & 1 != 0 {
                parts.push(name.to_string());
            }
        }
        let v = self.v;
        runs(
            &|r| v[(r >> 6) as usize] >> (r & 63) & 1 != 0,
            256,
            "v",
            &mut parts,
        );
        let a = self.a;
        runs(
            &|r| a[(r >> 6) as usize] >> (r & 63) & 1 != 0,
            256,
            "a",
            &mut parts,
        );
        parts.join(", ")
    }
}

/// Which hardware counter tracks an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// `vmcnt`: buffer/global/flat/scratch.
    Vm,
    /// `lgkmcnt`: LDS, GDS, SMEM, messages.
    Lgkm,
    /// `expcnt`: exports, GDS data.
    Exp,
}

/// The kind of an in-flight operation (decides ordering on its counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Vector memory (in order on `vmcnt`).
    Vmem,
    /// LDS (in order among LDS on `lgkmcnt`).
    Lds,
    /// Scalar memory (out of order on `lgkmcnt`).
    Smem,
    /// Export/GDS (in order on `expcnt`).
    Exp,
}

impl OpKind {
    fn counter(self) -> Counter {
        match self {
            OpKind::Vmem => Counter::Vm,
            OpKind::Lds | OpKind::Smem => Counter::Lgkm,
            OpKind::Exp => Counter::Exp,
        }
    }
}

/// Which bits of a 32-bit register a load writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// All 32 bits.
    Full,
    /// Bits 15:0 (d16 loads), the high half is kept.
    Lo16,
    /// Bits 31:16 (d16_hi loads), the low half is kept.
    Hi16,
}

/// Data that lands in registers when an operation completes.
#[derive(Clone, Debug, PartialEq)]
pub enum Landing {
    /// Nothing (stores, atomics without return).
    None,
    /// `count` consecutive VGPRs (or AGPRs) from `first`, lanes in `mask`; `data[i*64 + lane]`.
    Vector {
        /// First register.
        first: u16,
        /// Number of registers.
        count: u16,
        /// AGPRs instead of VGPRs.
        agpr: bool,
        /// Lanes that receive data.
        mask: u64,
        /// Register-major lane data.
        data: Vec<u32>,
        /// Which bits of each register receive data (d16 loads write one half).
        part: Part,
    },
    /// Consecutive SGPRs (scalar codes) from `first`.
    Scalar {
        /// First scalar code.
        first: u16,
        /// One dword per register.
        data: Vec<u32>,
    },
}

/// One operation in flight.
#[derive(Clone, Debug)]
pub struct InFlight {
    /// Which kind, hence which counter and ordering.
    pub kind: OpKind,
    /// Where it was issued.
    pub pc: u64,
    /// Registers it will write when it completes.
    pub dests: RegSet,
    /// Registers it still reads (store data under the strict policy).
    pub sources: RegSet,
    /// What to write when it completes.
    pub landing: Landing,
    /// LDS dwords it reads (`lds_reads`) or writes, for race detection across barriers.
    pub lds_reads: Vec<u32>,
    /// LDS dwords it writes.
    pub lds_writes: Vec<u32>,
    /// Issue sequence number (set by [`Scoreboard::issue`]).
    pub seq: u64,
}

/// Largest value each counter can hold on gfx9.
const VM_MAX: usize = 63;
const LGKM_MAX: usize = 15;
const EXP_MAX: usize = 7;

/// The counters and in-flight operations of one wave.
#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    vm: VecDeque<InFlight>,
    lgkm: VecDeque<InFlight>,
    exp: VecDeque<InFlight>,
    /// Union of the destinations of everything in flight (fast path: empty means no check).
    pending_dests: RegSet,
    /// Union of the locked store sources.
    pending_sources: RegSet,
    /// Lock store data registers until their counter retires them (see module docs).
    pub strict_store_sources: bool,
    /// Register accesses checked against in-flight operations (for statistics).
    pub checks: u64,
    /// Operations issued so far (sequence numbers).
    issued: u64,
    /// Some in-flight VMEM operation writes LDS (`lds` bit).
    vm_writes_lds: bool,
    /// Landing buffers of retired operations, reused by [`Scoreboard::buffer`].
    pool: Vec<Vec<u32>>,
}

impl Scoreboard {
    /// An empty scoreboard.
    pub fn new(strict_store_sources: bool) -> Scoreboard {
        Scoreboard {
            strict_store_sources,
            ..Default::default()
        }
    }

    /// Empties the scoreboard for a new wave, keeping its buffers.
    pub fn reset(&mut self, strict_store_sources: bool) {
        self.vm.clear();
        self.lgkm.clear();
        self.exp.clear();
        self.pending_dests = RegSet::EMPTY;
        self.pending_sources = RegSet::EMPTY;
        self.strict_store_sources = strict_store_sources;
        self.checks = 0;
        self.issued = 0;
        self.vm_writes_lds = false;
    }

    /// Whether nothing is in flight.
    pub fn idle(&self) -> bool {
        self.vm.is_empty() && self.lgkm.is_empty() && self.exp.is_empty()
    }

    /// Operations in flight on each counter (vm, lgkm, exp).
    pub fn outstanding(&self) -> (usize, usize, usize) {
        (self.vm.len(), self.lgkm.len(), self.exp.len())
    }

    /// All in-flight operations (oldest first per counter).
    pub fn in_flight(&self) -> impl Iterator<Item = &InFlight> {
        self.vm
            .iter()
            .chain(self.lgkm.iter())
            .chain(self.exp.iter())
    }

    fn recompute(&mut self) {
        let mut d = RegSet::EMPTY;
        let mut s = RegSet::EMPTY;
        for op in self.in_flight() {
            d = d.or(&op.dests);
            s = s.or(&op.sources);
        }
        self.pending_dests = d;
        self.pending_sources = s;
        self.vm_writes_lds = self.vm.iter().any(|op| !op.lds_writes.is_empty());
    }

    /// Checks an instruction that reads `reads` and writes `writes` before it executes.
    /// `issuing` is the kind of the instruction if it is itself a memory operation whose
    /// destinations are `writes` (a newer load to the same register on an in-order counter
    /// lands after the older one, so that is not a hazard).
    #[inline]
    pub fn check(
        &mut self,
        reads: &RegSet,
        writes: &RegSet,
        issuing: Option<OpKind>,
    ) -> Result<(), EmuError> {
        if self.pending_dests.is_empty() && self.pending_sources.is_empty() {
            return Ok(());
        }
        self.checks += 1;
        let r = reads.and(&self.pending_dests);
        if !r.is_empty() {
            return Err(self.hazard(&r, "is read"));
        }
        let w = writes.and(&self.pending_dests);
        if !w.is_empty() {
            // Same in-order counter: lands in order, so the newer load wins as program order says.
            let benign = match issuing {
                Some(k @ (OpKind::Vmem | OpKind::Lds | OpKind::Exp)) => self
                    .in_flight()
                    .filter(|op| op.dests.intersects(&w))
                    .all(|op| op.kind == k),
                _ => false,
            };
            if !benign {
                return Err(self.hazard(&w, "is overwritten"));
            }
        }
        let ws = writes.and(&self.pending_sources);
        if !ws.is_empty() {
            let op = self
                .in_flight()
                .find(|op| op.sources.intersects(&ws))
                .cloned();
            if let Some(op) = op {
                return Err(EmuError::Hazard {
                    at: Default::default(),
                    register: ws.describe(),
                    detail: format!(
                        "is overwritten while the store issued at pc {:#x} may still read it",
                        op.pc
                    ),
                    missing_wait: self.wait_for(&op),
                });
            }
        }
        Ok(())
    }

    /// The hazard error for registers `regs` that an in-flight operation writes.
    fn hazard(&self, regs: &RegSet, what: &str) -> EmuError {
        let op = self
            .in_flight()
            .filter(|op| op.dests.intersects(regs))
            .max_by_key(|op| op.seq)
            .cloned();
        match op {
            Some(op) => EmuError::Hazard {
                at: Default::default(),
                register: regs.and(&op.dests).describe(),
                detail: format!(
                    "{what} while the {} issued at pc {:#x} that writes it may still be in flight",
                    match op.kind {
                        OpKind::Vmem => "vector memory load",
                        OpKind::Lds => "LDS load",
                        OpKind::Smem => "scalar memory load",
                        OpKind::Exp => "export/GDS operation",
                    },
                    op.pc
                ),
                missing_wait: self.wait_for(&op),
            },
            None => EmuError::illegal("internal: hazard without an in-flight operation"),
        }
    }

    /// The weakest `s_waitcnt` that guarantees `op` is complete.
    fn wait_for(&self, op: &InFlight) -> String {
        let position =
            |q: &VecDeque<InFlight>| q.iter().position(|o| o.pc == op.pc && o.kind == op.kind);
        match op.kind {
            OpKind::Vmem => {
                let i = position(&self.vm).unwrap_or(0);
                format!("s_waitcnt vmcnt({})", self.vm.len() - 1 - i)
            }
            OpKind::Exp => {
                let i = position(&self.exp).unwrap_or(0);
                format!("s_waitcnt expcnt({})", self.exp.len() - 1 - i)
            }
            OpKind::Smem => "s_waitcnt lgkmcnt(0)".to_string(),
            OpKind::Lds => {
                let i = position(&self.lgkm).unwrap_or(0);
                let younger_lds = self
                    .lgkm
                    .iter()
                    .skip(i + 1)
                    .filter(|o| o.kind == OpKind::Lds)
                    .count();
                format!("s_waitcnt lgkmcnt({younger_lds})")
            }
        }
    }

    /// A zeroed buffer of `len` dwords for an operation's landing data (recycled from retired
    /// operations, so that loads do not allocate).
    pub fn buffer(&mut self, len: usize) -> Vec<u32> {
        match self.pool.pop() {
            Some(mut b) => {
                b.clear();
                b.resize(len, 0);
                b
            }
            None => vec![0; len],
        }
    }

    /// Lands `op` and keeps its buffer for reuse.
    fn retire(&mut self, op: InFlight, wave: &mut Wave) {
        land(&op, wave);
        if let Landing::Vector { data, .. } = op.landing {
            if self.pool.len() < 8 {
                self.pool.push(data);
            }
        }
    }

    /// Records an issued operation. If its counter is saturated, the oldest operation on that
    /// counter completes first (the hardware stalls issue until it does) and its data lands.
    pub fn issue(&mut self, op: InFlight, wave: &mut Wave) {
        let (len, max) = match op.kind.counter() {
            Counter::Vm => (self.vm.len(), VM_MAX),
            Counter::Lgkm => (self.lgkm.len(), LGKM_MAX),
            Counter::Exp => (self.exp.len(), EXP_MAX),
        };
        let saturated = len >= max;
        for _ in max..=len {
            let old = match op.kind.counter() {
                Counter::Vm => self.vm.pop_front(),
                Counter::Lgkm => self.lgkm.pop_front(),
                Counter::Exp => self.exp.pop_front(),
            };
            if let Some(old) = old {
                self.retire(old, wave);
            }
        }
        if saturated {
            // The retired operation's registers are no longer pending (a read of them was
            // reported as a hazard without an in-flight operation).
            self.recompute();
        }
        let mut op = op;
        self.issued += 1;
        op.seq = self.issued;
        if !self.strict_store_sources {
            op.sources = RegSet::EMPTY;
        }
        // Fast path of the union: adding only grows it.
        self.pending_dests = self.pending_dests.or(&op.dests);
        self.pending_sources = self.pending_sources.or(&op.sources);
        if !op.lds_writes.is_empty() && op.kind == OpKind::Vmem {
            self.vm_writes_lds = true;
        }
        match op.kind.counter() {
            Counter::Vm => self.vm.push_back(op),
            Counter::Lgkm => self.lgkm.push_back(op),
            Counter::Exp => self.exp.push_back(op),
        }
    }

    /// Executes `s_waitcnt vmcnt(vm) expcnt(exp) lgkmcnt(lgkm)`: every operation the wait
    /// guarantees complete lands in its registers.
    pub fn wait(&mut self, vm: u32, exp: u32, lgkm: u32, wave: &mut Wave) {
        let before = self.vm.len() + self.exp.len() + self.lgkm.len();
        while self.vm.len() > vm as usize {
            if let Some(op) = self.vm.pop_front() {
                self.retire(op, wave);
            }
        }
        while self.exp.len() > exp as usize {
            if let Some(op) = self.exp.pop_front() {
                self.retire(op, wave);
            }
        }
        let lgkm = lgkm as usize;
        if self.lgkm.len() > lgkm {
            let in_order = self.lgkm.iter().all(|op| op.kind == OpKind::Lds);
            if lgkm == 0 || in_order {
                while self.lgkm.len() > lgkm {
                    if let Some(op) = self.lgkm.pop_front() {
                        self.retire(op, wave);
                    }
                }
            } else {
                // Mixed LDS and SMEM with a non-zero count: an LDS op is complete when at least
                // `lgkm` younger LDS ops follow it; an SMEM op is not guaranteed complete.
                let mut younger_lds = 0usize;
                let mut complete = vec![false; self.lgkm.len()];
                for (k, op) in self.lgkm.iter().enumerate().rev() {
                    if op.kind == OpKind::Lds {
                        complete[k] = younger_lds >= lgkm;
                        younger_lds += 1;
                    }
                }
                let ops: Vec<InFlight> = self.lgkm.drain(..).collect();
                for (op, done) in ops.into_iter().zip(complete) {
                    if done {
                        self.retire(op, wave);
                    } else {
                        self.lgkm.push_back(op);
                    }
                }
            }
        }
        if self.vm.len() + self.exp.len() + self.lgkm.len() != before {
            self.recompute();
        }
    }

    /// If a VMEM load-to-LDS (`lds` bit) of this wave that writes LDS dwords `lo..=hi` is still
    /// in flight: its pc and the wait that would complete it.
    pub fn pending_lds_write(&self, lo: u32, hi: u32) -> Option<(u64, String)> {
        if !self.vm_writes_lds {
            return None;
        }
        self.vm
            .iter()
            .rev()
            .find(|op| op.lds_writes.iter().any(|&d| d >= lo && d <= hi))
            .map(|op| (op.pc, self.wait_for(op)))
    }

    /// Everything still in flight completes (end of program); the data lands.
    pub fn drain(&mut self, wave: &mut Wave) {
        self.wait(0, 0, 0, wave)
    }
}

/// Writes an operation's data into the wave's registers.
fn land(op: &InFlight, wave: &mut Wave) {
    match &op.landing {
        Landing::None => {}
        Landing::Vector {
            first,
            count,
            agpr,
            mask,
            data,
            part,
        } => {
            let file = if *agpr {
                &mut wave.agpr
            } else {
                &mut wave.vgpr
            };
            for i in 0..*count as usize {
                let r = *first as usize + i;
                if r >= file.len() {
                    break;
                }
                let src = &data[i * LANES..(i + 1) * LANES];
                let dst = &mut file[r];
                match part {
                    Part::Full => {
                        for l in 0..LANES {
                            if mask >> l & 1 != 0 {
                                dst[l] = src[l];
                            }
                        }
                    }
                    Part::Lo16 => {
                        for l in 0..LANES {
                            if mask >> l & 1 != 0 {
                                dst[l] = (dst[l] & 0xffff_0000) | (src[l] & 0xffff);
                            }
                        }
                    }
                    Part::Hi16 => {
                        for l in 0..LANES {
                            if mask >> l & 1 != 0 {
                                dst[l] = (dst[l] & 0xffff) | (src[l] << 16);
                            }
                        }
                    }
                }
            }
        }
        Landing::Scalar { first, data } => {
            for (i, &d) in data.iter().enumerate() {
                // Destinations were validated at issue.
                let _ = wave.write_scalar(*first + i as u16, d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::wave::WaveId;
    use kjit_backend_gcn::Target;

    fn wave() -> Wave {
        Wave::new(WaveId::default(), Target::Gfx942, 102, 256, 256)
    }

    fn vload(pc: u64, reg: u16, value: u32) -> InFlight {
        let mut dests = RegSet::EMPTY;
        dests.add_v(reg as u32, 1);
        InFlight {
            kind: OpKind::Vmem,
            pc,
            dests,
            sources: RegSet::EMPTY,
            landing: Landing::Vector {
                first: reg,
                count: 1,
                agpr: false,
                mask: u64::MAX,
                data: vec![value; LANES],
                part: Part::Full,
            },
            lds_reads: vec![],
            lds_writes: vec![],
            seq: 0,
        }
    }

    fn sload(pc: u64, reg: u16, value: u32) -> InFlight {
        let mut dests = RegSet::EMPTY;
        dests.add_s(reg as u32, 1);
        InFlight {
            kind: OpKind::Smem,
            pc,
            dests,
            sources: RegSet::EMPTY,
            landing: Landing::Scalar {
                first: reg,
                data: vec![value],
            },
            lds_reads: vec![],
            lds_writes: vec![],
            seq: 0,
        }
    }

    fn lds(pc: u64, reg: u16, value: u32) -> InFlight {
        InFlight {
            kind: OpKind::Lds,
            ..vload(pc, reg, value)
        }
    }

    fn reads_v(r: u32) -> RegSet {
        let mut s = RegSet::EMPTY;
        s.add_v(r, 1);
        s
    }

    #[test]
    fn vmem_data_lands_only_when_waited_for_in_order() {
        let mut w = wave();
        let mut sb = Scoreboard::new(false);
        sb.issue(vload(0x10, 1, 11), &mut w);
        sb.issue(vload(0x18, 2, 22), &mut w);
        assert_eq!(w.vgpr[1][0], 0, "nothing lands at issue");
        let e = sb.check(&reads_v(1), &RegSet::EMPTY, None).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("v1") && text.contains("vmcnt(1)") && text.contains("0x10"),
            "{text}"
        );
        sb.wait(1, 7, 15, &mut w);
        assert_eq!(w.vgpr[1][5], 11);
        assert_eq!(w.vgpr[2][5], 0);
        sb.check(&reads_v(1), &RegSet::EMPTY, None).unwrap();
        assert!(sb.check(&reads_v(2), &RegSet::EMPTY, None).is_err());
        sb.wait(0, 7, 15, &mut w);
        assert_eq!(w.vgpr[2][5], 22);
        assert!(sb.idle());
    }

    #[test]
    fn an_operation_retired_by_a_saturated_counter_is_no_longer_pending() {
        // 16 LDS loads: the 16th retires the first (lgkmcnt holds 15), whose register may then
        // be read without a wait; the 15 younger ones are still pending.
        let mut w = wave();
        let mut sb = Scoreboard::new(false);
        for k in 0..16u16 {
            sb.issue(lds(0x10 + 8 * k as u64, 10 + k, k as u32), &mut w);
        }
        sb.check(&reads_v(10), &RegSet::EMPTY, None)
            .expect("v10 landed when the counter saturated");
        assert_eq!(w.vgpr[10][0], 0);
        let e = sb.check(&reads_v(11), &RegSet::EMPTY, None).unwrap_err();
        assert!(e.to_string().contains("lgkmcnt(14)"), "{e}");
    }

    #[test]
    fn overwriting_a_pending_load_destination_is_a_hazard_unless_a_newer_load_of_the_same_counter()
    {
        let mut w = wave();
        let mut sb = Scoreboard::new(false);
        sb.issue(vload(0x10, 3, 1), &mut w);
        assert!(
            sb.check(&RegSet::EMPTY, &reads_v(3), None).is_err(),
            "ALU write before the load lands"
        );
        sb.check(&RegSet::EMPTY, &reads_v(3), Some(OpKind::Vmem))
            .unwrap();
        sb.issue(vload(0x18, 3, 2), &mut w);
        sb.wait(0, 7, 15, &mut w);
        assert_eq!(w.vgpr[3][0], 2, "the younger load lands last");
    }

    #[test]
    fn smem_is_out_of_order_and_lds_in_order_on_lgkmcnt() {
        let mut w = wave();
        let mut sb = Scoreboard::new(false);
        sb.issue(sload(0x0, 4, 44), &mut w);
        sb.issue(lds(0x8, 5, 55), &mut w);
        sb.issue(lds(0x10, 6, 66), &mut w);
        // lgkmcnt(1): the older LDS op has one younger LDS op after it, so it is complete; the
        // SMEM load may still be outstanding.
        sb.wait(63, 7, 1, &mut w);
        assert_eq!(w.vgpr[5][0], 55);
        assert_eq!(w.sgpr[4], 0);
        let mut rs = RegSet::EMPTY;
        rs.add_s(4, 1);
        let e = sb.check(&rs, &RegSet::EMPTY, None).unwrap_err().to_string();
        assert!(e.contains("lgkmcnt(0)") && e.contains("s4"), "{e}");
        let e = sb
            .check(&reads_v(6), &RegSet::EMPTY, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("lgkmcnt(0)"), "{e}");
        sb.wait(63, 7, 0, &mut w);
        assert_eq!(w.sgpr[4], 44);
        assert_eq!(w.vgpr[6][0], 66);
    }

    #[test]
    fn saturated_counter_retires_the_oldest() {
        let mut w = wave();
        let mut sb = Scoreboard::new(false);
        for i in 0..16u16 {
            sb.issue(lds(i as u64 * 8, i, i as u32 + 100), &mut w);
        }
        assert_eq!(
            w.vgpr[0][0], 100,
            "the 16th LDS op forced the first to complete"
        );
        assert_eq!(sb.outstanding().1, 15);
        // Its register may be read without a wait; the next one's may not.
        assert!(sb.check(&reads_v(0), &RegSet::EMPTY, None).is_ok());
        let e = sb
            .check(&reads_v(1), &RegSet::EMPTY, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("LDS load"), "{e}");
    }

    #[test]
    fn strict_policy_locks_store_data_registers() {
        let mut w = wave();
        for strict in [false, true] {
            let mut sb = Scoreboard::new(strict);
            let store = InFlight {
                kind: OpKind::Vmem,
                pc: 0x20,
                dests: RegSet::EMPTY,
                sources: reads_v(9),
                landing: Landing::None,
                lds_reads: vec![],
                lds_writes: vec![],
                seq: 0,
            };
            sb.issue(store, &mut w);
            assert_eq!(sb.check(&RegSet::EMPTY, &reads_v(9), None).is_err(), strict);
            sb.wait(0, 7, 15, &mut w);
            sb.check(&RegSet::EMPTY, &reads_v(9), None).unwrap();
        }
    }

    #[test]
    fn register_sets_describe_themselves_as_assembler_text() {
        let mut s = RegSet::EMPTY;
        s.add_v(4, 4);
        s.add_s(2, 1);
        s.add_s(106, 2);
        s.add_a(0, 1);
        assert_eq!(s.describe(), "s2, vcc_lo, vcc_hi, v[4:7], a0");
    }
}

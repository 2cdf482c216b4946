//! `InsertWaitcnt`: the `s_waitcnt` instructions an allocated kernel needs, and no stronger.
//!
//! Takes a [`PhysFunction`] (instruction selection emits no waits) and inserts, before every
//! instruction that reads the result of a memory operation that may still be in flight or
//! overwrites a register such an operation will still write, the *weakest* `s_waitcnt` that
//! guarantees the operation is complete.
//!
//! The analysis is a scoreboard over the CFG, iterated to a fixed point (loops carry loads in
//! flight across the back edge). For every register it records, per counter, how many operations
//! of the same in-order class were issued *after* the one that writes it; that number is exactly
//! the count to wait for:
//!
//! - VMEM (buffer/global/scratch/flat) operations — loads, stores and atomics — count on `vmcnt`
//!   and complete in issue order on gfx9, so a register written by a load with `N` younger VMEM
//!   operations behind it is ready after `s_waitcnt vmcnt(N)`.
//! - LDS operations count on `lgkmcnt` and complete in order among themselves; a register
//!   written by an LDS load with `N` younger LDS operations is ready after `lgkmcnt(N)` whatever
//!   else is outstanding (if it were not, those `N` and itself would be outstanding).
//! - SMEM (and FLAT's LDS half, GDS) complete out of order: their registers need `lgkmcnt(0)`.
//! - GDS data registers are locked under `expcnt` until read (write-after-read).
//!
//! Facts (Vega/CDNA ISA "Data Dependency Resolution"; LLVM `SIInsertWaitcnts`):
//! counters are 6 bits (`vmcnt`), 3 bits (`expcnt`), 4 bits (`lgkmcnt`) on all gfx9 targets; an
//! operation with at least that many younger operations on its counter is necessarily complete.
//! VMEM stores read their data registers at issue on gfx9 (LLVM's `vmemWriteNeedsExpWaitcnt` is
//! true only before Sea Islands), so overwriting a store's data register needs no wait.
//! A newer load into a register that an older load of the same in-order class still writes
//! needs no wait either: it lands later.
//!
//! Barriers: on gfx90a/gfx942 (`FeatureBackOffBarrier`) LLVM puts no implicit wait before
//! `s_barrier`; the workgroup-scope fence of an LDS barrier waits for LDS, so kjit waits for
//! outstanding LDS operations (`lgkmcnt(0)`) before `s_barrier` only when some may be in
//! flight. gfx900 has neither the automatic wait nor back-off barriers, so LLVM waits for every
//! counter to reach zero before `s_barrier` there; kjit does the same.
//! `s_endpgm` needs no wait.
//!
//! Loops: scalar-memory results still in flight when a loop is entered and touched inside it
//! are waited for once at the end of the preheader, not on every iteration inside the loop
//! (vector-memory results are not: a loop that keeps loads in flight waits `vmcnt(N)` inside).

use crate::isa::{Access, Format, Inst, Opcode, Operand, SpecialReg};
use crate::mir::BranchCond;
use crate::phys::{PhysFunction, PhysTerminator};
use crate::Target;

/// What [`insert_waitcnt`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitcntStats {
    /// `s_waitcnt` instructions inserted.
    pub inserted: u32,
    /// Of those, waits whose `vmcnt` or `lgkmcnt` is above zero (loads left in flight).
    pub partial: u32,
    /// Passes over the CFG until the scoreboard reached its fixed point.
    pub iterations: u32,
}

/// Largest `vmcnt` on gfx9 (6 bits).
pub const VMCNT_MAX: u8 = 63;
/// Largest `expcnt` on gfx9 (3 bits).
pub const EXPCNT_MAX: u8 = 7;
/// Largest `lgkmcnt` on gfx9 (4 bits).
pub const LGKMCNT_MAX: u8 = 15;

/// The counts of one `s_waitcnt`; `None` leaves that counter alone (encoded as its maximum).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Wait {
    /// `vmcnt(n)`.
    pub vm: Option<u8>,
    /// `expcnt(n)`.
    pub exp: Option<u8>,
    /// `lgkmcnt(n)`.
    pub lgkm: Option<u8>,
}

fn min_opt(a: Option<u8>, b: u8) -> Option<u8> {
    Some(a.map_or(b, |a| a.min(b)))
}

impl Wait {
    /// Whether the wait waits for nothing.
    pub fn is_empty(&self) -> bool {
        self.vm.is_none() && self.exp.is_none() && self.lgkm.is_none()
    }

    /// The `simm16` of `s_waitcnt` on gfx9: `vmcnt[3:0]` in bits 3:0, `expcnt` in 6:4,
    /// `lgkmcnt` in 11:8, `vmcnt[5:4]` in 15:14 (gfx9 ISA, SOPP `S_WAITCNT`).
    pub fn simm16(&self, _target: Target) -> u16 {
        let vm = self.vm.unwrap_or(VMCNT_MAX).min(VMCNT_MAX) as u16;
        let exp = self.exp.unwrap_or(EXPCNT_MAX).min(EXPCNT_MAX) as u16;
        let lgkm = self.lgkm.unwrap_or(LGKMCNT_MAX).min(LGKMCNT_MAX) as u16;
        (vm & 0xf) | exp << 4 | lgkm << 8 | (vm >> 4) << 14
    }

    /// The counts of an `s_waitcnt simm16` (a counter at its maximum is `None`).
    pub fn from_simm16(v: u16, _target: Target) -> Wait {
        let vm = ((v & 0xf) | ((v >> 14) & 3) << 4) as u8;
        let exp = ((v >> 4) & 7) as u8;
        let lgkm = ((v >> 8) & 0xf) as u8;
        Wait {
            vm: (vm < VMCNT_MAX).then_some(vm),
            exp: (exp < EXPCNT_MAX).then_some(exp),
            lgkm: (lgkm < LGKMCNT_MAX).then_some(lgkm),
        }
    }

    /// The `s_waitcnt` instruction.
    pub fn inst(&self, target: Target) -> Inst {
        Inst::new(
            Opcode::SWaitcnt,
            &[Operand::Imm(self.simm16(target) as i64)],
        )
    }

    /// The counts of `inst` if it is an `s_waitcnt`.
    pub fn of_inst(inst: &Inst, target: Target) -> Option<Wait> {
        if inst.op != Opcode::SWaitcnt {
            return None;
        }
        match inst.operands.first() {
            Some(Operand::Imm(v)) => Some(Wait::from_simm16(*v as u16, target)),
            _ => Some(Wait {
                vm: Some(0),
                exp: Some(0),
                lgkm: Some(0),
            }),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Register units.

/// Register units the scoreboard tracks: scalar codes 0..128 (SGPRs, TTMPs, VCC, M0, EXEC, ...),
/// then v0..v255, then a0..a255.
pub(crate) const UNITS: usize = 128 + 256 + 256;
const V_BASE: usize = 128;
const A_BASE: usize = 384;

/// The register units an operand names (empty for constants and immediates).
pub(crate) fn units(o: &Operand) -> std::ops::Range<usize> {
    let r = |base: usize, first: u16, count: u8| {
        let lo = (base + first as usize).min(UNITS);
        lo..(lo + count.max(1) as usize).min(UNITS)
    };
    match *o {
        Operand::Sgpr { first, count } => {
            let x = r(0, first, count);
            x.start.min(128)..x.end.min(128)
        }
        Operand::Ttmp { first, count } => {
            let x = r(108, first, count);
            x.start.min(128)..x.end.min(128)
        }
        Operand::Vgpr { first, count } => r(V_BASE, first, count),
        Operand::Agpr { first, count } => r(A_BASE, first, count),
        Operand::Special(SpecialReg::Vccz) => 106..108,
        Operand::Special(SpecialReg::Execz) => 126..128,
        Operand::Special(s) => {
            let (code, n) = s.code();
            if (code as usize) < 128 {
                code as usize..(code as usize + n as usize).min(128)
            } else {
                0..0
            }
        }
        _ => 0..0,
    }
}

/// The memory class of an instruction, which decides the counters it counts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemClass {
    /// Not a memory operation.
    None,
    /// Buffer/global/scratch: `vmcnt`, in order.
    Vmem,
    /// FLAT: `vmcnt` and (it may address LDS) `lgkmcnt` out of order.
    Flat,
    /// LDS: `lgkmcnt`, in order among LDS.
    Lds,
    /// GDS: `lgkmcnt` out of order, data locked under `expcnt`.
    Gds,
    /// Scalar memory: `lgkmcnt`, out of order.
    Smem,
}

pub(crate) fn mem_class(inst: &Inst) -> MemClass {
    match inst.op.format() {
        Format::Mubuf | Format::Mtbuf | Format::Global | Format::Scratch => MemClass::Vmem,
        Format::Flat => MemClass::Flat,
        Format::Ds if inst.mods.gds => MemClass::Gds,
        Format::Ds => MemClass::Lds,
        Format::Smem => MemClass::Smem,
        _ => MemClass::None,
    }
}

/// Registers an instruction reads and writes, by operand: its register units, and whether it
/// reads and writes them (explicit operands; VCC/EXEC named by the 32-bit encodings are
/// operands too). Buffer atomics without `glc` return nothing; a buffer load with the `lds` bit
/// writes LDS, not its `vdata`.
fn accesses(inst: &Inst, mut f: impl FnMut(std::ops::Range<usize>, bool, bool)) {
    let infos = inst.operand_infos();
    let fmt = inst.op.format();
    let buffer = matches!(fmt, Format::Mubuf | Format::Mtbuf);
    let no_return_atomic =
        buffer && inst.op.name_has(crate::isa::name_facts::ATOMIC) && !inst.mods.glc;
    for (o, oi) in inst.operands.iter().zip(infos) {
        let mut reads = oi.access.reads();
        let mut writes = oi.access.writes();
        if buffer && oi.slot == crate::isa::Slot::Vdata {
            if no_return_atomic && oi.access == Access::RW {
                writes = false;
                reads = true;
            }
            if inst.mods.lds {
                writes = false;
            }
        }
        if !reads && !writes {
            continue;
        }
        f(units(o), reads, writes);
    }
}

// ---------------------------------------------------------------------------------------------
// The scoreboard.

const NONE: u8 = u8::MAX;

/// Per register unit and counter: how many operations of the same in-order class were issued
/// after the pending operation that writes it (`NONE`: nothing pending). At a CFG join the
/// minimum over predecessors is kept (fewest younger operations = strongest wait), which is also
/// the union of pending registers since `NONE` is the largest value.
#[derive(PartialEq, Eq)]
struct Brackets {
    vm: Vec<u8>,
    lds: Vec<u8>,
    /// Pending out-of-order `lgkmcnt` write (SMEM, FLAT, GDS): only `lgkmcnt(0)` retires it.
    ool: Vec<bool>,
    /// GDS data registers still to be read: younger `expcnt` operations.
    exp: Vec<u8>,
    /// Upper bounds of operations outstanding (max at joins).
    vm_out: u8,
    lds_out: u8,
    ool_out: bool,
    exp_out: u8,
    /// Per LDS region ([`Modifiers::lds_region`](crate::isa::Modifiers), 0 = unknown): the
    /// younger VMEM operations of the newest pending VMEM load to LDS (`lds` bit) into it.
    vm_lds: [u8; REGIONS],
    /// Per LDS region: the younger LDS operations of the newest pending DS access of it. A
    /// load to LDS waits for them (it must not overwrite words a DS read has yet to read).
    ds_region: [u8; REGIONS],
}

/// LDS regions tracked apart; isel numbers arrays from 1 and folds larger numbers into the last.
pub(crate) const REGIONS: usize = 16;

/// The region slot of an instruction's `lds_region`.
fn region_of(inst: &Inst) -> usize {
    (inst.mods.lds_region as usize).min(REGIONS - 1)
}

/// The smallest entry of `slots` an access of region `r` conflicts with: its own and the
/// unknown region 0, or every region when `r` is unknown.
fn conflicting(slots: &[u8; REGIONS], r: usize) -> u8 {
    if r == 0 {
        slots.iter().copied().min().unwrap_or(NONE)
    } else {
        slots[0].min(slots[r])
    }
}

/// Ages the entries of `slots` by one operation; an entry with `max` younger ones is complete.
fn age(slots: &mut [u8], max: u8) {
    // Without branches, so that it vectorizes (it runs over every register unit for every
    // memory instruction): `NONE` saturates and stays `NONE`, as every count is below it.
    for x in slots.iter_mut() {
        let y = x.saturating_add(1);
        *x = if y >= max { NONE } else { y };
    }
}

/// Retires the entries of `slots` a wait for `n` completes.
fn retire(slots: &mut [u8], n: u8) {
    // `NONE` is at least `n`: setting it again changes nothing (and the loop vectorizes).
    for x in slots.iter_mut() {
        *x = if *x >= n { NONE } else { *x };
    }
}

impl Clone for Brackets {
    fn clone(&self) -> Brackets {
        Brackets {
            vm: self.vm.clone(),
            lds: self.lds.clone(),
            ool: self.ool.clone(),
            exp: self.exp.clone(),
            ..*self
        }
    }

    /// In `self`'s buffers: the fixed point loads each visited block's entry state into one
    /// working state instead of allocating four vectors per visit.
    fn clone_from(&mut self, o: &Brackets) {
        self.vm.clone_from(&o.vm);
        self.lds.clone_from(&o.lds);
        self.ool.clone_from(&o.ool);
        self.exp.clone_from(&o.exp);
        self.vm_out = o.vm_out;
        self.lds_out = o.lds_out;
        self.ool_out = o.ool_out;
        self.exp_out = o.exp_out;
        self.vm_lds = o.vm_lds;
        self.ds_region = o.ds_region;
    }
}

impl Brackets {
    /// Nothing pending, over the first `units` register units ([`units_named`]).
    fn new(units: usize) -> Brackets {
        Brackets {
            vm: vec![NONE; units],
            lds: vec![NONE; units],
            ool: vec![false; units],
            exp: vec![NONE; units],
            vm_out: 0,
            lds_out: 0,
            ool_out: false,
            exp_out: 0,
            vm_lds: [NONE; REGIONS],
            ds_region: [NONE; REGIONS],
        }
    }

    /// Joins `o` into `self`; whether `self` changed (told as it goes: the fixed point copied
    /// the state before each join to compare).
    fn merge(&mut self, o: &Brackets) -> bool {
        let mut changed = false;
        for i in 0..self.vm.len() {
            let (vm, lds) = (self.vm[i].min(o.vm[i]), self.lds[i].min(o.lds[i]));
            let (ool, exp) = (self.ool[i] | o.ool[i], self.exp[i].min(o.exp[i]));
            changed |= vm != self.vm[i] || lds != self.lds[i];
            changed |= ool != self.ool[i] || exp != self.exp[i];
            (self.vm[i], self.lds[i], self.ool[i], self.exp[i]) = (vm, lds, ool, exp);
        }
        let outs = (self.vm_out, self.lds_out, self.ool_out, self.exp_out);
        self.vm_out = self.vm_out.max(o.vm_out);
        self.lds_out = self.lds_out.max(o.lds_out);
        self.ool_out |= o.ool_out;
        self.exp_out = self.exp_out.max(o.exp_out);
        changed |= outs != (self.vm_out, self.lds_out, self.ool_out, self.exp_out);
        let regions = (self.vm_lds, self.ds_region);
        for r in 0..REGIONS {
            self.vm_lds[r] = self.vm_lds[r].min(o.vm_lds[r]);
            self.ds_region[r] = self.ds_region[r].min(o.ds_region[r]);
        }
        changed || regions != (self.vm_lds, self.ds_region)
    }

    fn any_lds_pending(&self) -> bool {
        self.lds_out > 0
    }

    /// The weakest wait before `inst` (at `target`) that leaves nothing it touches in flight.
    fn needed(&self, inst: &Inst, accs: &[Acc], target: Target, after: Option<&RegionSet>) -> Wait {
        let mut w = Wait::default();
        let class = mem_class(inst);
        each_unit(accs, |u, reads, writes| {
            // Write-after-write with a newer load of the same in-order class is benign.
            let benign_write = match class {
                MemClass::Vmem => self.lds[u] == NONE && !self.ool[u],
                MemClass::Lds => self.vm[u] == NONE && !self.ool[u],
                _ => false,
            };
            if reads || (writes && !benign_write) {
                if self.vm[u] != NONE {
                    w.vm = min_opt(w.vm, self.vm[u]);
                }
                if self.lds[u] != NONE {
                    w.lgkm = min_opt(w.lgkm, self.lds[u]);
                }
                if self.ool[u] {
                    w.lgkm = Some(0);
                }
            }
            if writes && self.exp[u] != NONE {
                w.exp = min_opt(w.exp, self.exp[u]);
            }
        });
        let region = region_of(inst);
        if matches!(class, MemClass::Lds | MemClass::Gds) {
            let r = if class == MemClass::Gds { 0 } else { region };
            let pending = conflicting(&self.vm_lds, r);
            if pending != NONE {
                w.vm = min_opt(w.vm, pending);
            }
        }
        if class == MemClass::Vmem && inst.mods.lds {
            let pending = conflicting(&self.ds_region, region);
            if pending != NONE {
                w.lgkm = min_opt(w.lgkm, pending);
            }
        }
        if inst.op == Opcode::SBarrier {
            if target == Target::Gfx900 {
                if self.vm_out > 0 {
                    w.vm = Some(0);
                }
                if self.exp_out > 0 {
                    w.exp = Some(0);
                }
                if self.lds_out > 0 || self.ool_out {
                    w.lgkm = Some(0);
                }
            } else {
                if self.any_lds_pending() {
                    w.lgkm = Some(0);
                }
                // Other waves read this wave's loads to LDS after the barrier: those into
                // the regions accessed before the next barrier (every region if unknown).
                let pending = match after {
                    Some(set) => (1..REGIONS)
                        .filter(|&r| set[r])
                        .map(|r| self.vm_lds[r])
                        .fold(self.vm_lds[0], u8::min),
                    None => conflicting(&self.vm_lds, 0),
                };
                if pending != NONE {
                    w.vm = min_opt(w.vm, pending);
                }
            }
        }
        w
    }

    /// Reads of the branch condition at the end of a block.
    fn needed_for_branch(&self, cond: BranchCond) -> Wait {
        let units = match cond {
            BranchCond::Vccz | BranchCond::Vccnz => 106..108,
            BranchCond::Execz | BranchCond::Execnz => 126..128,
            BranchCond::Scc0 | BranchCond::Scc1 => 0..0,
        };
        let mut w = Wait::default();
        for u in units {
            if self.vm[u] != NONE {
                w.vm = min_opt(w.vm, self.vm[u]);
            }
            if self.lds[u] != NONE {
                w.lgkm = min_opt(w.lgkm, self.lds[u]);
            }
            if self.ool[u] {
                w.lgkm = Some(0);
            }
        }
        w
    }

    /// The wait at the end of a block: for the branch condition, and (in a loop preheader) for
    /// scalar-memory results the loop touches.
    fn needed_at_end(&self, term: &PhysTerminator, flush: Option<&[bool]>) -> Wait {
        let mut w = match *term {
            PhysTerminator::Branch { cond, .. } => self.needed_for_branch(cond),
            _ => Wait::default(),
        };
        if let Some(fl) = flush {
            if self.ool_out && self.ool.iter().zip(fl).any(|(p, t)| *p && *t) {
                w.lgkm = Some(0);
            }
        }
        w
    }

    /// The effect of executing `s_waitcnt` with counts `w`.
    fn apply_wait(&mut self, w: &Wait) {
        if let Some(n) = w.vm {
            retire(&mut self.vm, n);
            retire(&mut self.vm_lds, n);
            self.vm_out = self.vm_out.min(n);
        }
        if let Some(n) = w.lgkm {
            retire(&mut self.lds, n);
            retire(&mut self.ds_region, n);
            if n == 0 {
                self.ool.iter_mut().for_each(|x| *x = false);
                self.ool_out = false;
            }
            self.lds_out = self.lds_out.min(n);
        }
        if let Some(n) = w.exp {
            retire(&mut self.exp, n);
            self.exp_out = self.exp_out.min(n);
        }
    }

    /// The effect of issuing memory instruction `inst`.
    fn issue(&mut self, inst: &Inst, accs: &[Acc]) {
        let class = mem_class(inst);
        if class == MemClass::None {
            return;
        }
        // With `max` younger operations on its counter an operation is complete.
        let bump = |v: &mut Vec<u8>, max: u8| age(v, max);
        match class {
            MemClass::Vmem | MemClass::Flat => {
                bump(&mut self.vm, VMCNT_MAX);
                age(&mut self.vm_lds, VMCNT_MAX);
                self.vm_out = (self.vm_out + 1).min(VMCNT_MAX);
                if inst.mods.lds && class == MemClass::Vmem {
                    self.vm_lds[region_of(inst)] = 0;
                }
                if class == MemClass::Flat {
                    self.ool_out = true;
                }
            }
            MemClass::Lds => {
                bump(&mut self.lds, LGKMCNT_MAX);
                age(&mut self.ds_region, LGKMCNT_MAX);
                self.ds_region[region_of(inst)] = 0;
                self.lds_out = (self.lds_out + 1).min(LGKMCNT_MAX);
            }
            MemClass::Gds => {
                self.ool_out = true;
                bump(&mut self.exp, EXPCNT_MAX);
                self.exp_out = (self.exp_out + 1).min(EXPCNT_MAX);
            }
            MemClass::Smem => self.ool_out = true,
            MemClass::None => {}
        }
        // Destinations set `vm`/`lds`/`ool`, GDS sources `exp`: one pass, no lists.
        each_unit(accs, |u, reads, writes| {
            if writes {
                match class {
                    MemClass::Vmem => self.vm[u] = 0,
                    MemClass::Flat => {
                        self.vm[u] = 0;
                        self.ool[u] = true;
                    }
                    MemClass::Lds => self.lds[u] = 0,
                    MemClass::Gds | MemClass::Smem => self.ool[u] = true,
                    MemClass::None => {}
                }
            } else if reads && class == MemClass::Gds && u >= V_BASE {
                self.exp[u] = 0;
            }
        });
    }

    /// Runs one instruction: the wait it needs (applied), then its own effect.
    /// `accs`: the instruction's register accesses ([`Accesses`]).
    fn step(
        &mut self,
        inst: &Inst,
        accs: &[Acc],
        target: Target,
        after: Option<&RegionSet>,
    ) -> Wait {
        if let Some(w) = Wait::of_inst(inst, target) {
            self.apply_wait(&w);
            return Wait::default();
        }
        let w = self.needed(inst, accs, target, after);
        if !w.is_empty() {
            self.apply_wait(&w);
        }
        self.issue(inst, accs);
        w
    }
}

/// One register access of an instruction: units `start..end`, read and/or written (as
/// [`accesses`] reports them).
#[derive(Clone, Copy)]
struct Acc {
    start: u16,
    end: u16,
    reads: bool,
    writes: bool,
}

/// `f` for every unit of `accs`, with whether its operand reads and writes it.
fn each_unit(accs: &[Acc], mut f: impl FnMut(usize, bool, bool)) {
    for a in accs {
        for u in a.start as usize..a.end as usize {
            f(u, a.reads, a.writes);
        }
    }
}

/// Every instruction's register accesses, made once: the fixed point visits a loop's blocks
/// more than once and placing the waits steps every instruction again, and working out an
/// instruction's operand accesses cost more than the rest of a step.
struct Accesses {
    accs: Vec<Acc>,
    /// Per instruction (blocks in order), where its accesses start in `accs`; one more at
    /// the end.
    at: Vec<u32>,
    /// Per block, its first instruction's index in `at`.
    block: Vec<u32>,
}

impl Accesses {
    fn new(f: &PhysFunction) -> Accesses {
        let n: usize = f.blocks.iter().map(|b| b.insts.len()).sum();
        let mut a = Accesses {
            accs: Vec::with_capacity(3 * n),
            at: Vec::with_capacity(n + 1),
            block: Vec::with_capacity(f.blocks.len()),
        };
        for b in &f.blocks {
            a.block.push(a.at.len() as u32);
            for inst in &b.insts {
                a.at.push(a.accs.len() as u32);
                accesses(inst, |r, reads, writes| {
                    a.accs.push(Acc {
                        start: r.start as u16,
                        end: r.end as u16,
                        reads,
                        writes,
                    })
                });
            }
        }
        a.at.push(a.accs.len() as u32);
        a
    }

    /// The accesses of instruction `k` of block `b` (as the blocks were when made).
    fn of(&self, b: usize, k: usize) -> &[Acc] {
        let i = self.block[b] as usize + k;
        &self.accs[self.at[i] as usize..self.at[i + 1] as usize]
    }
}

/// One past the highest register unit an operand of `f` names, and at least the SGPRs and
/// special registers (branch conditions read VCC and EXEC): the brackets track no more,
/// since a unit no instruction names is never pending. Every memory operation ages each
/// tracked unit, so a kernel with 100 VGPRs ages 228 units instead of the whole 640.
fn units_named(f: &PhysFunction) -> usize {
    f.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .flat_map(|i| &i.operands)
        .map(|o| units(o).end)
        .fold(V_BASE, usize::max)
}

/// For each block that enters a loop through a forward edge (a preheader): the register units
/// the loop touches. Scalar-memory results still in flight there are waited for once at the end
/// of the preheader (`lgkmcnt(0)`) instead of inside the loop, where the wait would run on every
/// iteration and, on the paths that skip ahead (`s_cbranch_execz` flow blocks), several times.
/// Loops are found from back edges in layout order (`latch → header` with `header <= latch`);
/// the body is the layout range `header..=latch`, which is what the structurizer lays out.
/// `acc`: `f`'s register accesses (the loop body's units are read from them).
fn preheader_flush_sets(f: &PhysFunction, acc: &Accesses) -> Vec<Option<Vec<bool>>> {
    let n = f.blocks.len();
    let mut loop_end = vec![None::<usize>; n];
    for (l, b) in f.blocks.iter().enumerate() {
        for s in b.term.successors() {
            let h = s.as_u32() as usize;
            if h <= l && h < n {
                loop_end[h] = Some(loop_end[h].map_or(l, |e: usize| e.max(l)));
            }
        }
    }
    let mut touched_by_loop: Vec<Option<Vec<bool>>> = vec![None; n];
    for h in 0..n {
        if let Some(end) = loop_end[h] {
            let mut t = vec![false; UNITS];
            for b in h..=end {
                for k in 0..f.blocks[b].insts.len() {
                    for a in acc.of(b, k) {
                        t[a.start as usize..a.end as usize].fill(true);
                    }
                }
            }
            touched_by_loop[h] = Some(t);
        }
    }
    let mut out: Vec<Option<Vec<bool>>> = vec![None; n];
    for (p, b) in f.blocks.iter().enumerate() {
        for s in b.term.successors() {
            let h = s.as_u32() as usize;
            if h > p && h < n {
                if let Some(t) = &touched_by_loop[h] {
                    let o = out[p].get_or_insert_with(|| vec![false; UNITS]);
                    for (x, y) in o.iter_mut().zip(t) {
                        *x |= *y;
                    }
                }
            }
        }
    }
    out
}

/// LDS regions a barrier publishes: per region, whether some path from it reaches a DS access
/// of that region before the next barrier.
type RegionSet = [bool; REGIONS];

/// For every `s_barrier` (block, index): the LDS regions accessed after it and before the next
/// barrier on any path (`None`: a DS access of unknown region, so every region). A wave's loads
/// to LDS into other regions need not land before this barrier; the barrier before their
/// readers waits for them.
fn regions_after_barriers(
    f: &PhysFunction,
) -> std::collections::HashMap<(usize, usize), Option<RegionSet>> {
    let mut out = std::collections::HashMap::new();
    let n = f.blocks.len();
    for (b, block) in f.blocks.iter().enumerate() {
        for (k, inst) in block.insts.iter().enumerate() {
            if inst.op != Opcode::SBarrier {
                continue;
            }
            let mut set = [false; REGIONS];
            let mut unknown = false;
            let mut seen = vec![false; n];
            let mut work = vec![(b, k + 1)];
            while let Some((blk, start)) = work.pop() {
                let mut stopped = false;
                for i in &f.blocks[blk].insts[start.min(f.blocks[blk].insts.len())..] {
                    if i.op == Opcode::SBarrier {
                        stopped = true;
                        break;
                    }
                    if matches!(mem_class(i), MemClass::Lds | MemClass::Gds | MemClass::Flat) {
                        match region_of(i) {
                            0 => unknown = true,
                            r => set[r] = true,
                        }
                    }
                }
                if !stopped {
                    for s in f.blocks[blk].term.successors() {
                        let si = s.as_u32() as usize;
                        if si < n && !seen[si] {
                            seen[si] = true;
                            work.push((si, 0));
                        }
                    }
                }
            }
            out.insert((b, k), (!unknown).then_some(set));
        }
    }
    out
}

/// Inserts every `s_waitcnt` `f` needs (see the module docs). Existing waits are kept and
/// taken into account, so running the pass twice inserts nothing the second time.
pub fn insert_waitcnt(f: &mut PhysFunction) -> WaitcntStats {
    let target = f.abi.target;
    let n = f.blocks.len();
    let mut stats = WaitcntStats::default();
    if n == 0 {
        return stats;
    }
    let acc = Accesses::new(f);
    let flush = preheader_flush_sets(f, &acc);
    let after_barrier = regions_after_barriers(f);
    let units = units_named(f);
    // Predecessor-merged entry states, to a fixed point (blocks in layout order; a change
    // re-queues the successors).
    let mut entry: Vec<Option<Brackets>> = vec![None; n];
    entry[0] = Some(Brackets::new(units));
    let mut queued = vec![false; n];
    let mut work = std::collections::VecDeque::new();
    work.push_back(0usize);
    queued[0] = true;
    let fresh = Brackets::new(units);
    let mut s = fresh.clone();
    // Per block: the waits its last visit gave each instruction, and the one at its end. A
    // change of its entry state queues the block again, so the last visit ran from the final
    // entry state: its waits are the ones to place (`place_waits`), without stepping every
    // instruction once more.
    let mut visited: Vec<Option<(Vec<Wait>, Wait)>> = vec![None; n];
    while let Some(b) = work.pop_front() {
        queued[b] = false;
        stats.iterations += 1;
        s.clone_from(entry[b].as_ref().unwrap_or(&fresh));
        let (waits, end) = visited[b].get_or_insert_with(Default::default);
        waits.clear();
        *end = visit(&mut s, f, b, &acc, target, &after_barrier, &flush, waits);
        for succ in f.blocks[b].term.successors() {
            let si = succ.as_u32() as usize;
            if si >= n {
                continue;
            }
            let changed = match &mut entry[si] {
                Some(e) => e.merge(&s),
                slot @ None => {
                    *slot = Some(s.clone());
                    true
                }
            };
            if changed && !queued[si] {
                queued[si] = true;
                work.push_back(si);
            }
        }
    }
    // Place the waits of each block's last visit (a block the fixed point never reached runs
    // from nothing pending, as its entry state is).
    let mut unreached = Vec::new();
    for b in 0..n {
        let (waits, end) = match visited[b].take() {
            Some(v) => v,
            None => {
                s.clone_from(&fresh);
                unreached.clear();
                let end = visit(
                    &mut s,
                    f,
                    b,
                    &acc,
                    target,
                    &after_barrier,
                    &flush,
                    &mut unreached,
                );
                (std::mem::take(&mut unreached), end)
            }
        };
        place_waits(&mut f.blocks[b], waits, end, target, &mut stats);
    }
    stats
}

/// Steps state `s` (block `b`'s entry state) through the block's instructions, pushing the
/// wait each needs to `waits`, and applies the one its end needs, which it returns.
#[allow(clippy::too_many_arguments)]
fn visit(
    s: &mut Brackets,
    f: &PhysFunction,
    b: usize,
    acc: &Accesses,
    target: Target,
    after_barrier: &std::collections::HashMap<(usize, usize), Option<RegionSet>>,
    flush: &[Option<Vec<bool>>],
    waits: &mut Vec<Wait>,
) -> Wait {
    for (k, inst) in f.blocks[b].insts.iter().enumerate() {
        // Only a barrier asks what follows it (no hash of every instruction's place).
        let after = if inst.op == Opcode::SBarrier {
            after_barrier.get(&(b, k)).and_then(|x| x.as_ref())
        } else {
            None
        };
        waits.push(s.step(inst, acc.of(b, k), target, after));
    }
    let w = s.needed_at_end(&f.blocks[b].term, flush[b].as_deref());
    s.apply_wait(&w);
    w
}

/// Inserts the waits `waits` (one per instruction, from a visit of the block from its final
/// entry state) and `end` (at its end) into `block`. An instruction's wait on the other
/// counters goes into the wait before it (one `s_waitcnt`, the later wait one instruction
/// early) when the instruction before issues nothing it could be waiting for: neither a memory
/// operation nor an `s_waitcnt`. That is the same scoreboard as stepping it there: the earlier
/// instruction changes no state, and once its wait is applied the next instruction needs none
/// (a wait retires every entry at or above its counts, and the next one's counts are the least
/// entries it touches), so the later instruction's own wait is then empty.
fn place_waits(
    block: &mut crate::phys::PhysBlock,
    mut waits: Vec<Wait>,
    end: Wait,
    target: Target,
    stats: &mut WaitcntStats,
) {
    // A block without waits stays as it is (not moved into a new vector).
    if end.is_empty() && waits.iter().all(Wait::is_empty) {
        return;
    }
    // Room for a wait before every other instruction: growing copied the block.
    let mut out = Vec::with_capacity(block.insts.len() * 3 / 2 + 4);
    for (k, inst) in std::mem::take(&mut block.insts).into_iter().enumerate() {
        let mut w = waits[k];
        if let Some(&w2) = waits.get(k + 1).filter(|_| !w.is_empty()) {
            let disjoint = (w.vm.is_none() || w2.vm.is_none())
                && (w.lgkm.is_none() || w2.lgkm.is_none())
                && (w.exp.is_none() || w2.exp.is_none());
            if !w2.is_empty()
                && disjoint
                && mem_class(&inst) == MemClass::None
                && Wait::of_inst(&inst, target).is_none()
            {
                w = Wait {
                    vm: w.vm.or(w2.vm),
                    exp: w.exp.or(w2.exp),
                    lgkm: w.lgkm.or(w2.lgkm),
                };
                waits[k + 1] = Wait::default();
            }
        }
        if !w.is_empty() {
            stats.inserted += 1;
            if w.vm.is_some_and(|n| n > 0) || w.lgkm.is_some_and(|n| n > 0) {
                stats.partial += 1;
            }
            out.push(w.inst(target));
        }
        out.push(inst);
    }
    if !end.is_empty() {
        stats.inserted += 1;
        out.push(end.inst(target));
    }
    block.insts = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simm16_matches_llvm_mc_encodings() {
        // `llvm-mc-19 -mcpu=gfx942 -show-encoding`.
        let t = Target::Gfx942;
        let w = |vm, exp, lgkm| Wait { vm, exp, lgkm }.simm16(t);
        assert_eq!(w(Some(0), None, None), 0x0f70);
        assert_eq!(w(Some(3), None, Some(0)), 0x0073);
        assert_eq!(w(None, None, None), 0xcf7f);
        assert_eq!(w(None, Some(0), None), 0xcf0f);
        for vm in [None, Some(0), Some(17), Some(62)] {
            for lgkm in [None, Some(0), Some(14)] {
                let x = Wait {
                    vm,
                    exp: None,
                    lgkm,
                };
                assert_eq!(Wait::from_simm16(x.simm16(t), t), x);
            }
        }
    }
}

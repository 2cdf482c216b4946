//! Runs the waves of one workgroup, interleaved, with exact `s_barrier` semantics.
//!
//! Takes the decoded program, the launch's dispatch state and a workgroup id; gives the
//! workgroup's statistics, or the first error a wave hit (located: wave, pc, instruction).
//!
//! Waves of a workgroup share one host thread and one LDS and take turns:
//! - round-robin: every runnable wave executes one instruction in turn (the finest interleaving);
//! - random (seeded): a runnable wave chosen at random runs a random quantum of 1-8
//!   instructions. The generator is seeded from the seed and the workgroup id, so a launch is
//!   reproducible whatever the number of host threads.
//!
//! A wave that executes `s_barrier` waits until every wave of the workgroup that has not ended
//! has arrived; then all continue and the LDS race detector starts a new epoch. LDS operations
//! still in flight at that moment may complete after the barrier, so they are moved into the new
//! epoch. Workgroups themselves run in parallel (see `GcnEmulator`), which is why a workgroup
//! never depends on another's progress here.

use std::str::FromStr;

use kjit_backend_gcn::machine::MachineModel;
use kjit_backend_gcn::Target;

use super::ctx::Ctx;
use super::dispatch::{init_wave, DispatchAddrs, KernelSetup};
use super::lds::Lds;
use super::memory::{AddrCache, MemoryView};
use super::program::{Decoded, Op, Program};
use super::scalar::{self, Flow};
use super::scoreboard::Scoreboard;
use super::stats::Counters;
use super::wait_states::WaitClock;
use super::wave::{At, EmuError, Wave, LANES};
use super::{ds, smem, valu, vmem};
use crate::device::LaunchDims;
use crate::timing::footprint;
use crate::timing::trace::GroupTrace;

/// How the waves of a workgroup take turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// One instruction per wave in turn.
    RoundRobin,
    /// Random wave, random quantum, from this seed.
    Random(u64),
}

impl FromStr for Schedule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "round-robin" {
            return Ok(Schedule::RoundRobin);
        }
        if let Some(seed) = s.strip_prefix("random:") {
            return seed
                .parse::<u64>()
                .map(Schedule::Random)
                .map_err(|_| format!("bad seed in schedule '{s}' (expected random:<u64>)"));
        }
        Err(format!(
            "unknown schedule '{s}' (expected round-robin or random:SEED)"
        ))
    }
}

/// Knobs of a launch on the software device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunConfig {
    /// Wave interleaving policy.
    pub schedule: Schedule,
    /// Instructions one wave may execute before the launch fails (catches infinite loops).
    pub max_instructions_per_wave: u64,
    /// Lock store data registers until their counter retires them (see `scoreboard`).
    pub strict_store_sources: bool,
    /// Report instructions issued fewer wait states after their producer than gfx9 requires
    /// (see `wait_states`).
    pub check_wait_states: bool,
    /// Time launches on this machine model (see `crate::timing`); `None` runs untimed.
    pub timing: Option<&'static MachineModel>,
    /// Report the first raw-buffer access outside its descriptor's range (lane, address,
    /// buffer) as an error instead of applying the descriptor's rule (loads give 0, stores are
    /// dropped). Accesses outside every allocation are faults either way.
    pub bounds_check: bool,
    /// Dispatch as firmware without kernarg preloading does: waves of a kernel whose descriptor
    /// preloads kernel arguments start at its entry (the compatibility prologue loads them)
    /// with no kernarg dwords in user SGPRs. Off: they start at entry + 256 with the dwords
    /// preloaded.
    pub legacy_kernarg_firmware: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            schedule: Schedule::RoundRobin,
            max_instructions_per_wave: 100_000_000,
            strict_store_sources: false,
            check_wait_states: true,
            timing: None,
            legacy_kernarg_firmware: false,
            bounds_check: false,
        }
    }
}

/// Everything shared by all workgroups of a launch.
pub struct LaunchState<'a> {
    /// The target whose rules apply.
    pub target: Target,
    /// The decoded kernel.
    pub program: &'a Program,
    /// Descriptor fields.
    pub setup: &'a KernelSetup,
    /// Launch shape.
    pub dims: LaunchDims,
    /// Per-launch addresses.
    pub addrs: DispatchAddrs,
    /// Device memory.
    pub mem: &'a MemoryView,
    /// Knobs.
    pub config: RunConfig,
    /// Address of the first instruction.
    pub entry: u64,
}

/// Host memory one thread reuses from workgroup to workgroup: the LDS and the waves.
pub struct WorkgroupScratch {
    /// The workgroup's LDS.
    pub lds: Lds,
    slots: Vec<Slot>,
    addrs: Vec<u64>,
}

impl Default for WorkgroupScratch {
    fn default() -> Self {
        WorkgroupScratch {
            lds: Lds::new(0, false),
            slots: Vec::new(),
            addrs: Vec::new(),
        }
    }
}

/// Where the timing model's trace of a workgroup is recorded while it runs.
struct Recorder<'t> {
    trace: &'t mut GroupTrace,
    addrs: &'t mut Vec<u64>,
    scratch: ScratchRemap,
}

/// Where the trace puts a workgroup's scratch addresses. The functional device hands each host
/// thread one scratch slot, so the addresses a workgroup's spills touch depend on which thread ran
/// it; the replay's caches would then see different addresses from run to run. The trace moves
/// the slot to a region of the workgroup's own (by its linear id, far above every allocation), so
/// the cycles are the same on every run and every host.
#[derive(Clone, Copy)]
struct ScratchRemap {
    /// First byte of the thread's slot.
    from: u64,
    /// Bytes of the slot (0: the kernel uses no scratch).
    len: u64,
    /// First byte of the workgroup's region in the trace.
    to: u64,
}

impl ScratchRemap {
    /// Trace scratch regions start here: above any address the device's allocator hands out.
    const TRACE_BASE: u64 = 1 << 52;

    fn new(l: &LaunchState, scratch_offset: u64, nwaves: usize, group: u64) -> ScratchRemap {
        let len = nwaves as u64 * l.addrs.scratch_per_wave();
        ScratchRemap {
            from: l.addrs.scratch_base + scratch_offset,
            len,
            to: Self::TRACE_BASE + group * len,
        }
    }

    fn apply(&self, addrs: &mut [u64]) {
        for a in addrs {
            let off = a.wrapping_sub(self.from);
            if off < self.len {
                *a = self.to + off;
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Running,
    AtBarrier,
    Done,
}

struct Slot {
    wave: Wave,
    sb: Scoreboard,
    counters: Counters,
    cache: AddrCache,
    state: State,
    executed: u64,
    clock: WaitClock,
}

/// A small, fast, seedable generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn locate(e: EmuError, w: &Wave, d: Option<&Decoded>, image_base: u64) -> EmuError {
    e.locate(|| At {
        wave: w.id,
        pc: w.pc.wrapping_sub(image_base),
        inst: d
            .map(|d| d.text.clone())
            .unwrap_or_else(|| "<no instruction>".to_string()),
    })
}

/// Executes one instruction of `slot`'s wave (recording it for the timing model if asked).
#[inline]
fn step(
    l: &LaunchState,
    slot: &mut Slot,
    lds: &mut Lds,
    wave_index: u8,
    rec: Option<&mut Recorder>,
) -> Result<Flow, EmuError> {
    let w = &mut slot.wave;
    let (index, d) = match l.program.lookup(w.pc) {
        Ok(x) => x,
        Err(e) => return Err(locate(e, w, None, l.program.image_base)),
    };
    // Footprints read the registers as the instruction finds them.
    let mut rec = rec;
    let extra = rec.as_deref_mut().map(|rec| record_footprint(l, d, w, rec));
    let r = execute(
        l,
        d,
        w,
        &mut slot.sb,
        &mut slot.counters,
        &mut slot.cache,
        lds,
        wave_index,
        &mut slot.executed,
        &mut slot.clock,
    )
    .map_err(|e| locate(e, w, Some(d), l.program.image_base))?;
    if let (Some(rec), Some(extra)) = (rec, extra) {
        match &d.op {
            Op::Vmem(_) | Op::Smem(_) => {
                rec.trace
                    .push_access(wave_index as usize, index, rec.addrs, extra)
            }
            _ => rec.trace.push(wave_index as usize, index, extra),
        }
    }
    Ok(r)
}

/// Gathers what the timing model needs of `d` before it executes: its memory addresses (into
/// `rec.addrs`), and the step's extra field (LDS bank cycles, VALU active lanes, direct-to-LDS).
fn record_footprint(l: &LaunchState, d: &Decoded, w: &Wave, rec: &mut Recorder) -> u16 {
    rec.addrs.clear();
    match &d.op {
        Op::Vmem(v) => {
            vmem::touched_addresses(w, v, l.addrs.scratch_per_lane, rec.addrs);
            rec.scratch.apply(rec.addrs);
            v.lds as u16
        }
        Op::Smem(s) => {
            if let Some((a, n)) = smem::touched_range(w, s) {
                rec.addrs.push(a);
                rec.addrs.push(a + n.max(1) as u64 - 1);
            }
            0
        }
        Op::Ds(ds) => footprint::lds_bank_cycles(w, ds),
        Op::Valu(_) => w.exec.count_ones() as u16,
        _ => 0,
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn execute(
    l: &LaunchState,
    d: &Decoded,
    w: &mut Wave,
    sb: &mut Scoreboard,
    counters: &mut Counters,
    cache: &mut AddrCache,
    lds: &mut Lds,
    wave_index: u8,
    executed: &mut u64,
    clock: &mut WaitClock,
) -> Result<Flow, EmuError> {
    if *executed >= l.config.max_instructions_per_wave {
        return Err(EmuError::Budget {
            at: At::default(),
            limit: l.config.max_instructions_per_wave,
        });
    }
    *executed += 1;
    if let Some(msg) = &d.illegal {
        return Err(EmuError::illegal(msg.clone()));
    }
    sb.check(&d.reads, &d.writes, d.issuing)?;
    if l.config.check_wait_states {
        clock.check(&d.waits)?;
        clock.issue(&d.waits);
    }
    let lanes = if d.vector { w.exec.count_ones() } else { 1 };
    let flow = match &d.op {
        Op::Scalar(s) => scalar::execute(w, s)?,
        Op::Valu(inst) => {
            valu::execute(w, inst)?;
            Flow::Next
        }
        // Memory operations share one context over the wave's memory state.
        Op::Smem(_) | Op::Vmem(_) | Op::Ds(_) => {
            let mut ctx = Ctx {
                mem: l.mem,
                cache,
                lds,
                sb,
                counters,
                wave_index,
                scratch_per_lane: l.addrs.scratch_per_lane,
                pc_base: l.program.image_base,
                bounds_check: l.config.bounds_check,
            };
            match &d.op {
                Op::Smem(s) => smem::execute(w, &mut ctx, s)?,
                Op::Vmem(v) => vmem::execute(w, &mut ctx, v)?,
                Op::Ds(v) => ds::execute(w, &mut ctx, v)?,
                _ => unreachable!("the outer arm matched a memory operation"),
            }
            Flow::Next
        }
        Op::Unsupported(why) => return Err(EmuError::unsupported(why.clone())),
        Op::Invalid(why) => return Err(EmuError::illegal(why.clone())),
    };
    counters.count(d.class, lanes);
    match flow {
        Flow::Next | Flow::Barrier => w.pc += d.size as u64,
        Flow::Jump(t) => w.pc = t,
        Flow::Wait { vm, exp, lgkm } => {
            sb.wait(vm, exp, lgkm, w);
            w.pc += d.size as u64;
        }
        Flow::End => {}
    }
    Ok(flow)
}

/// Runs workgroup `wg` to completion. `scratch_offset` is the byte offset of this workgroup's
/// first wave in the launch's scratch; `lds` is reused host memory.
pub fn run_workgroup(
    l: &LaunchState,
    wg: [u32; 3],
    scratch_offset: u64,
    scratch: &mut WorkgroupScratch,
) -> Result<Counters, EmuError> {
    run_workgroup_with(l, wg, scratch_offset, scratch, |_| {})
}

/// [`run_workgroup`], recording every wave's executed instructions and memory footprints into
/// `trace` for the timing model.
pub fn run_workgroup_traced(
    l: &LaunchState,
    wg: [u32; 3],
    scratch_offset: u64,
    scratch: &mut WorkgroupScratch,
    trace: &mut GroupTrace,
) -> Result<Counters, EmuError> {
    run_workgroup_inner(l, wg, scratch_offset, scratch, |_| {}, Some(trace))
}

/// [`run_workgroup`], with `init` applied to every wave's initial state (tests).
pub fn run_workgroup_with(
    l: &LaunchState,
    wg: [u32; 3],
    scratch_offset: u64,
    scratch: &mut WorkgroupScratch,
    init: impl Fn(&mut Wave),
) -> Result<Counters, EmuError> {
    run_workgroup_inner(l, wg, scratch_offset, scratch, init, None)
}

fn run_workgroup_inner(
    l: &LaunchState,
    wg: [u32; 3],
    scratch_offset: u64,
    scratch: &mut WorkgroupScratch,
    init: impl Fn(&mut Wave),
    trace: Option<&mut GroupTrace>,
) -> Result<Counters, EmuError> {
    let nwaves = super::dispatch::waves_per_group(&l.dims) as usize;
    let lds_bytes = l.setup.group_segment_fixed_size + l.dims.dynamic_lds;
    let WorkgroupScratch {
        lds,
        slots: pool,
        addrs,
    } = scratch;
    let mut rec = trace.map(|trace| {
        // Keep the step buffers of a reused trace (their capacity is the point of reusing it).
        trace.waves.resize_with(nwaves, Default::default);
        for w in &mut trace.waves {
            w.steps.clear();
        }
        trace.granules.clear();
        let scratch = ScratchRemap::new(l, scratch_offset, nwaves, trace.id);
        Recorder {
            trace,
            addrs,
            scratch,
        }
    });
    lds.reset(lds_bytes, nwaves > 1);
    let per_wave = l.addrs.scratch_per_wave();
    while pool.len() < nwaves {
        pool.push(Slot {
            wave: Wave::new(Default::default(), l.target, 102, 0, 0),
            sb: Scoreboard::new(false),
            counters: Counters::default(),
            cache: AddrCache::default(),
            state: State::Done,
            executed: 0,
            clock: WaitClock::default(),
        });
    }
    let slots = &mut pool[..nwaves];
    for (i, s) in slots.iter_mut().enumerate() {
        init_wave(
            &mut s.wave,
            l.target,
            l.setup,
            &l.dims,
            &l.addrs,
            wg,
            i as u32,
            scratch_offset + i as u64 * per_wave,
            l.entry,
        );
        s.sb.reset(l.config.strict_store_sources);
        s.counters = Counters {
            waves: 1,
            ..Default::default()
        };
        s.cache = AddrCache::default();
        s.state = State::Running;
        s.executed = 0;
        s.clock.new_wave();
        init(&mut s.wave);
    }
    let mut running = nwaves;
    let mut rng = match l.config.schedule {
        Schedule::Random(seed) => {
            let id = (wg[0] as u64) | (wg[1] as u64) << 21 | (wg[2] as u64) << 42;
            let mut r = Rng(seed ^ id.wrapping_mul(0x2545_f491_4f6c_dd1d));
            r.next();
            Some(r)
        }
        Schedule::RoundRobin => None,
    };
    let mut cursor = 0usize;
    let mut live = nwaves;
    while live > 0 {
        if running == 0 {
            // Every live wave waits at the barrier: release them together.
            lds.barrier();
            for (i, s) in slots.iter_mut().enumerate() {
                if s.state == State::AtBarrier {
                    s.state = State::Running;
                    running += 1;
                }
                for op in s.sb.in_flight() {
                    if !op.lds_reads.is_empty() {
                        lds.restamp(i as u8, op.pc, &op.lds_reads, false);
                    }
                    if !op.lds_writes.is_empty() {
                        lds.restamp(i as u8, op.pc, &op.lds_writes, true);
                    }
                }
            }
            continue;
        }
        // Pick a runnable wave and how many instructions it runs.
        let (i, quantum) = match &mut rng {
            None => {
                while slots[cursor].state != State::Running {
                    cursor = (cursor + 1) % nwaves;
                }
                let i = cursor;
                cursor = (cursor + 1) % nwaves;
                (i, 1)
            }
            Some(r) => {
                let i = loop {
                    let c = (r.next() % nwaves as u64) as usize;
                    if slots[c].state == State::Running {
                        break c;
                    }
                };
                (i, 1 + (r.next() % 8) as u32)
            }
        };
        let slot = &mut slots[i];
        for _ in 0..quantum {
            match step(l, slot, lds, i as u8, rec.as_mut())? {
                Flow::Barrier => {
                    slot.state = State::AtBarrier;
                    running -= 1;
                    break;
                }
                Flow::End => {
                    slot.sb.drain(&mut slot.wave);
                    slot.state = State::Done;
                    running -= 1;
                    live -= 1;
                    break;
                }
                _ => {}
            }
        }
    }
    let mut total = Counters::default();
    for s in slots.iter() {
        let mut c = s.counters.clone();
        c.hazard_checks += s.sb.checks;
        total.merge(&c);
    }
    total.lds_same_value_writes += lds.same_value_writes();
    let _ = LANES;
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse() {
        assert_eq!("round-robin".parse::<Schedule>(), Ok(Schedule::RoundRobin));
        assert_eq!("random:42".parse::<Schedule>(), Ok(Schedule::Random(42)));
        assert!("random:x".parse::<Schedule>().is_err());
        assert!("fifo".parse::<Schedule>().is_err());
    }

    #[test]
    fn rng_is_deterministic() {
        let mut a = Rng(7);
        let mut b = Rng(7);
        assert_eq!((a.next(), a.next()), (b.next(), b.next()));
    }
}

/// Hand-built programs (no decoder involved) and a one-workgroup launch of them, for the tests
/// below and the ALU-rate probe.
#[cfg(test)]
mod test_programs {
    use super::*;
    use crate::emu::ds::{DsInst, DsOp};
    use crate::emu::memory::Memory;
    use crate::emu::scalar::{ScalarInst, ScalarOp};
    use crate::emu::scoreboard::{OpKind, Part, RegSet};
    use crate::emu::stats::InstClass;
    use crate::emu::vmem::{DataShape, Segment, VmemInst, VmemOp};

    pub fn sop(op: ScalarOp, dst: u16, src0: u16, src1: u16, simm16: u16) -> Op {
        Op::Scalar(ScalarInst {
            op,
            dst,
            src0,
            src1,
            literal: 0,
            simm16,
            size: 4,
        })
    }

    pub fn ds(op: DsOp, addr: u16, data0: u16, vdst: u16, offset: u16) -> Op {
        Op::Ds(DsInst {
            op,
            addr,
            data0,
            data1: 0,
            vdst,
            offset0: offset as u8,
            offset1: (offset >> 8) as u8,
            acc: false,
            gds: false,
        })
    }

    /// `ds_read_u8` or `ds_read_b32` of `vdst` from `addr + offset`.
    pub fn ds_read(bytes: u8, addr: u16, vdst: u16, offset: u16) -> Op {
        let op = DsOp::Read {
            bytes,
            dwords: 1,
            signed: false,
            part: Part::Full,
        };
        ds(op, addr, 0, vdst, offset)
    }

    pub fn store_byte(saddr: u16, vaddr: u16, vdata: u16) -> Op {
        Op::Vmem(VmemInst {
            seg: Segment::Global,
            op: VmemOp::Store(DataShape {
                bytes: 1,
                dwords: 1,
                signed: false,
                part: Part::Full,
            }),
            vaddr: Some(vaddr),
            saddr: Some(saddr),
            vdata,
            vdst: 0,
            acc: false,
            offset: 0,
            returns: false,
            srsrc: 0,
            soffset: 0,
            offen: false,
            idxen: false,
            lds: false,
            literal: 0,
            format: false,
        })
    }

    /// Builds a program at 0x1000 from ops (each 4 bytes).
    pub fn program(ops: Vec<Op>) -> Program {
        let insts = ops
            .into_iter()
            .enumerate()
            .map(|(k, op)| {
                let (reads, writes, class, vector, issuing) = match &op {
                    Op::Ds(d) => {
                        let (r, w) = d.regs();
                        (r, w, InstClass::Lds, true, Some(OpKind::Lds))
                    }
                    Op::Vmem(v) => {
                        let (r, w) = v.regs();
                        (r, w, InstClass::Vmem, true, Some(OpKind::Vmem))
                    }
                    Op::Valu(_) => (RegSet::EMPTY, RegSet::EMPTY, InstClass::Valu, true, None),
                    _ => (RegSet::EMPTY, RegSet::EMPTY, InstClass::Salu, false, None),
                };
                Decoded {
                    pc: 0x1000 + 4 * k as u64,
                    size: 4,
                    text: format!("{op:?}"),
                    op,
                    reads,
                    writes,
                    issuing,
                    class,
                    vector,
                    opcode: None,
                    illegal: None,
                    waits: Default::default(),
                }
            })
            .collect();
        Program::new(0x1000, insts)
    }

    /// Runs workgroup (0,0,0) of a one-workgroup launch of `p` with `block` lanes; `init` sets
    /// each wave's registers before it starts.
    pub fn run_one(
        p: &Program,
        mem: &Memory,
        target: Target,
        block: u32,
        setup: KernelSetup,
        config: RunConfig,
        init: impl Fn(&mut Wave),
    ) -> Result<Counters, EmuError> {
        let view = mem.view();
        let st = LaunchState {
            target,
            program: p,
            setup: &setup,
            dims: LaunchDims {
                grid: [1, 1, 1],
                block: [block, 1, 1],
                dynamic_lds: 0,
            },
            addrs: DispatchAddrs::default(),
            mem: &view,
            config,
            entry: 0x1000,
        };
        run_workgroup_with(&st, [0, 0, 0], 0, &mut WorkgroupScratch::default(), init)
    }

    /// An `init` that points s[4:5] at `addr` (where `store_byte` with saddr 4 writes).
    pub fn sgpr45(addr: u64) -> impl Fn(&mut Wave) {
        move |w| {
            w.sgpr[4] = addr as u32;
            w.sgpr[5] = (addr >> 32) as u32;
        }
    }
}

/// End-to-end tests of the scheduler on hand-built programs: barriers, races, hazards and the
/// budget, each with the failure it must catch.
#[cfg(test)]
mod program_tests {
    use super::test_programs::*;
    use super::*;
    use crate::emu::ds::DsOp;
    use crate::emu::memory::Memory;
    use crate::emu::scalar::ScalarOp;
    use crate::emu::stats::InstClass;

    /// Two waves; each lane writes byte `tid` of LDS, then reads byte `tid + 64` (written by the
    /// other wave) and stores it to global memory at `tid`.
    fn exchange(
        barrier: bool,
        wait: bool,
        schedule: Schedule,
    ) -> (Result<Counters, EmuError>, Vec<u8>) {
        let write = DsOp::Write {
            bytes: 1,
            dwords: 1,
            hi: false,
        };
        let mut ops = vec![ds(write, 0, 0, 0, 0)];
        if wait {
            ops.push(sop(ScalarOp::Waitcnt, 0, 0, 0, 0xc07f)); // lgkmcnt(0)
        }
        if barrier {
            ops.push(sop(ScalarOp::Barrier, 0, 0, 0, 0));
        }
        ops.push(ds_read(1, 0, 1, 64));
        ops.push(sop(ScalarOp::Waitcnt, 0, 0, 0, 0xc07f));
        ops.push(store_byte(4, 0, 1));
        ops.push(sop(ScalarOp::Endpgm, 0, 0, 0, 0));
        let p = program(ops);
        let mem = Memory::new();
        let out = mem.alloc(128).unwrap();
        mem.write(out, &[0xee; 128]).unwrap();
        // No kernel arguments: s[4:5] is set directly in each wave.
        let setup = KernelSetup {
            group_segment_fixed_size: 256,
            ..Default::default()
        };
        let config = RunConfig {
            schedule,
            ..Default::default()
        };
        let r = run_one(&p, &mem, Target::Gfx942, 128, setup, config, sgpr45(out));
        let mut bytes = vec![0u8; 128];
        mem.read(out, &mut bytes).unwrap();
        (r, bytes)
    }

    #[test]
    fn barrier_orders_lds_exchange_between_waves() {
        for schedule in [
            Schedule::RoundRobin,
            Schedule::Random(1),
            Schedule::Random(99),
        ] {
            let (r, bytes) = exchange(true, true, schedule);
            let c = r.unwrap();
            for (t, b) in bytes.iter().enumerate() {
                let expect = if t < 64 { (t + 64) as u8 } else { 0 };
                assert_eq!(*b, expect, "byte {t} under {schedule:?}");
            }
            assert_eq!(c.waves, 2);
            assert_eq!(c.by_class[InstClass::Lds as usize], 4);
        }
    }

    #[test]
    fn missing_barrier_is_reported_as_an_lds_race() {
        let (r, _) = exchange(false, true, Schedule::RoundRobin);
        let e = r.unwrap_err();
        assert!(matches!(e, EmuError::LdsRace { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("wave 0 of workgroup (0,0,0)") && text.contains("pc 0x1008"),
            "{text}"
        );
    }

    #[test]
    fn store_not_waited_for_before_the_barrier_races_with_the_next_epoch() {
        let (r, _) = exchange(true, false, Schedule::RoundRobin);
        assert!(matches!(r, Err(EmuError::LdsRace { .. })), "{r:?}");
    }

    #[test]
    fn reading_a_load_destination_before_its_wait_is_a_hazard() {
        let p = program(vec![
            ds_read(4, 0, 1, 0),
            store_byte(4, 0, 1),
            sop(ScalarOp::Endpgm, 0, 0, 0, 0),
        ]);
        let mem = Memory::new();
        let out = mem.alloc(64).unwrap();
        let setup = KernelSetup {
            group_segment_fixed_size: 512,
            ..Default::default()
        };
        let config = RunConfig::default();
        let e = run_one(&p, &mem, Target::Gfx900, 64, setup, config, sgpr45(out)).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("hazard: v1")
                && text.contains("lgkmcnt(0)")
                && text.contains("pc 0x1004"),
            "{text}"
        );
    }

    #[test]
    fn infinite_loop_exhausts_the_budget() {
        let p = program(vec![sop(ScalarOp::Branch, 0, 0, 0, 0xffff)]);
        let config = RunConfig {
            max_instructions_per_wave: 1000,
            ..Default::default()
        };
        let setup = KernelSetup::default();
        let e = run_one(
            &p,
            &Memory::new(),
            Target::Gfx90a,
            64,
            setup,
            config,
            |_| {},
        )
        .unwrap_err();
        assert!(matches!(e, EmuError::Budget { limit: 1000, .. }), "{e}");
        assert!(e.to_string().contains("infinite loop"));
    }

    #[test]
    fn running_off_the_code_is_an_error_not_a_panic() {
        let p = program(vec![sop(ScalarOp::Nop, 0, 0, 0, 0)]);
        let (setup, config) = (KernelSetup::default(), RunConfig::default());
        let e = run_one(
            &p,
            &Memory::new(),
            Target::Gfx942,
            64,
            setup,
            config,
            |_| {},
        )
        .unwrap_err();
        assert!(matches!(e, EmuError::Stuck { .. }), "{e}");
    }
}

#[cfg(test)]
mod perf_probe {
    use super::test_programs::*;
    use super::*;
    use crate::emu::memory::Memory;
    use crate::emu::scalar::ScalarOp;
    use crate::emu::valu::{Form, ValuInst, ValuOp};

    /// Not a test of correctness: prints the lane-op rate of a synthetic ALU loop
    /// (`cargo test --release perf_probe -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn alu_loop_rate() {
        let mut fma = ValuInst::new(ValuOp::from_name("v_fmac_f32").unwrap(), Form::E32);
        fma.vdst = 1;
        fma.src = [256, 258, 0];
        let mut add = ValuInst::new(ValuOp::from_name("v_add_u32").unwrap(), Form::E32);
        add.vdst = 2;
        add.src = [256 + 2, 256, 0];
        let mut ops = vec![sop(ScalarOp::MovkI32, 10, 0, 0, 1000)];
        for _ in 0..8 {
            ops.push(Op::Valu(Box::new(fma)));
            ops.push(Op::Valu(Box::new(add)));
        }
        ops.push(sop(ScalarOp::AddI32, 10, 10, 193, 0));
        ops.push(sop(ScalarOp::CmpLgU32, 0, 10, 128, 0));
        ops.push(sop(ScalarOp::CbranchScc1, 0, 0, 0, (-19i16) as u16));
        ops.push(sop(ScalarOp::Endpgm, 0, 0, 0, 0));
        let p = program(ops);
        let mem = Memory::new();
        let setup = KernelSetup {
            rsrc1: 1,
            ..Default::default()
        };
        let t = std::time::Instant::now();
        let mut c = Counters::default();
        for _ in 0..20 {
            let config = RunConfig::default();
            let r = run_one(&p, &mem, Target::Gfx942, 256, setup, config, |_| {});
            c.merge(&r.unwrap());
        }
        let s = t.elapsed().as_secs_f64();
        eprintln!(
            "{} wave-instructions, {:.1} M inst/s, {:.1} M lane-ops/s (one thread)",
            c.instructions(),
            c.instructions() as f64 / s / 1e6,
            c.lane_ops as f64 / s / 1e6
        );
    }
}

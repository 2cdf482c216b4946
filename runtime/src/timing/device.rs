//! The whole device: the dispatcher, the event loop over CUs, and the report.
//!
//! Takes the kernel's instruction facts, its resource needs and the workgroups' traces (fed in
//! dispatch order, in batches, while the functional device produces the next ones); gives a
//! [`TimingReport`]. Events are CU issue turns in cycle order (a binary heap), so requests reach
//! the shared memory system in issue order and the result does not depend on host threads.

use std::collections::VecDeque;

use kjit_backend_gcn::codeobj::descriptor::{Occupancy, MAX_BARRIERS_PER_CU, SIMDS_PER_CU};
use kjit_backend_gcn::machine::MachineModel;

use super::cu::{turn_at_or_after, Cu, Simd, WaveState, CATEGORIES, MAX_LGKMCNT, MAX_VMCNT, NEVER};
use super::facts::{InstFacts, Kind};
use super::memory::MemorySystem;
use super::report::{HotInst, StallCause, Stalls, TimingReport};
use super::trace::{GroupTrace, GRANULE};

/// Cycles one CU may run ahead of the earliest pending event before the replay moves on: the
/// shared queues (L2, MALL, DRAM) may then see two CUs' requests up to this far out of cycle
/// order. A host-speed trade (the CU's state stays in cache); 0 would be strict cycle order.
const RUN_AHEAD: u64 = 32;

/// The CUs' next wake-up cycles in a tournament tree: the earliest (ties: the lowest CU) is
/// at the root, and changing one CU's time costs log2(CUs) comparisons.
struct WakeTree {
    leaves: usize,
    nodes: Vec<(u64, u32)>,
}

impl WakeTree {
    fn new(cus: usize) -> WakeTree {
        let leaves = cus.next_power_of_two().max(1);
        let mut nodes = vec![(NEVER, u32::MAX); 2 * leaves];
        for c in 0..cus {
            nodes[leaves + c] = (NEVER, c as u32);
        }
        WakeTree { leaves, nodes }
    }

    fn min(&self) -> (u64, u32) {
        self.nodes[1]
    }

    fn set(&mut self, cu: usize, t: u64) {
        let mut i = self.leaves + cu;
        self.nodes[i] = (t, cu as u32);
        while i > 1 {
            i /= 2;
            let m = self.nodes[2 * i].min(self.nodes[2 * i + 1]);
            if self.nodes[i] == m {
                break;
            }
            self.nodes[i] = m;
        }
    }
}

/// What one workgroup of the kernel needs from a CU.
#[derive(Clone, Copy, Debug)]
pub struct GroupShape {
    /// Waves per workgroup.
    pub waves: u32,
    /// Vector registers (VGPRs + AGPRs) allocated per wave.
    pub vector_registers: u32,
    /// SGPRs allocated per wave.
    pub sgprs: u32,
    /// LDS bytes per workgroup (static + dynamic).
    pub lds_bytes: u32,
}

struct GroupState {
    trace: GroupTrace,
    cu: u32,
    waves: Vec<u32>,
    live: u32,
    arrived: u32,
    start: u64,
}

/// The timing simulation of one launch.
pub struct DeviceSim<'f> {
    m: &'static MachineModel,
    facts: &'f [InstFacts],
    shape: GroupShape,
    waves_per_simd_limit: u32,
    groups_per_cu_limit: u32,
    cus: Vec<Cu>,
    mem: MemorySystem,
    waves: Vec<WaveState>,
    free_waves: Vec<u32>,
    groups: Vec<Option<GroupState>>,
    free_groups: Vec<u32>,
    pending: VecDeque<GroupTrace>,
    total_groups: u64,
    fed: u64,
    dispatch_stalled: Option<u64>,
    dispatch_free: f64,
    rr: Vec<usize>,
    wakes: WakeTree,
    end: u64,
    stalls: Stalls,
    inst_stalls: Vec<[u64; 8]>,
    inst_issued: Vec<u64>,
    flops: u64,
    wave_cycles: u64,
    instructions: u64,
    lines: Vec<u64>,
    turns: u64,
    recycled: Vec<GroupTrace>,
    idle_probe: Option<IdleProbe>,
    /// Diagnostic (`KJIT_TIMING_GROUPS=1`): each retired workgroup's (id, CU, start, end).
    group_log: Option<Vec<(u64, u32, u64, u64)>>,
}

/// Diagnostic (`KJIT_TIMING_MATRIX_IDLE=1`): every 16 cycles, per SIMD whose matrix unit is
/// free, the states of its waves (a CU's state only changes at its own turns).
#[derive(Default)]
struct IdleProbe {
    last: Vec<u64>,
    samples: u64,
    idle: u64,
    combos: std::collections::HashMap<String, u64>,
    at: std::collections::HashMap<(usize, &'static str), u64>,
}

impl<'f> DeviceSim<'f> {
    /// A simulation of `total_groups` workgroups of `shape` running code with `facts` on `m`.
    pub fn new(
        m: &'static MachineModel,
        facts: &'f [InstFacts],
        shape: GroupShape,
        total_groups: u64,
    ) -> DeviceSim<'f> {
        let occ = Occupancy::from_counts(
            m.target,
            shape.vector_registers,
            shape.sgprs,
            shape.lds_bytes,
            None,
        );
        let slots = m.target.max_waves_per_simd() * SIMDS_PER_CU;
        let groups_per_cu_limit = if shape.waves <= 1 {
            slots
        } else {
            MAX_BARRIERS_PER_CU
        };
        DeviceSim {
            m,
            facts,
            shape,
            waves_per_simd_limit: occ.waves_per_simd.max(1),
            groups_per_cu_limit,
            cus: (0..m.cus).map(|c| Cu::new(c % m.partitions)).collect(),
            mem: MemorySystem::new(m),
            waves: Vec::new(),
            free_waves: Vec::new(),
            groups: Vec::new(),
            free_groups: Vec::new(),
            pending: VecDeque::new(),
            total_groups,
            fed: 0,
            dispatch_stalled: Some(0),
            dispatch_free: 0.0,
            rr: vec![0; m.partitions as usize],
            wakes: WakeTree::new(m.cus as usize),
            end: 0,
            stalls: Stalls::default(),
            inst_stalls: vec![[0; 8]; facts.len()],
            inst_issued: vec![0; facts.len()],
            flops: 0,
            wave_cycles: 0,
            instructions: 0,
            lines: Vec::new(),
            turns: 0,
            recycled: Vec::new(),
            idle_probe: std::env::var("KJIT_TIMING_MATRIX_IDLE")
                .ok()
                .map(|_| IdleProbe {
                    last: vec![0; m.cus as usize],
                    ..Default::default()
                }),
            group_log: std::env::var("KJIT_TIMING_GROUPS").ok().map(|_| Vec::new()),
        }
    }

    /// Hands the simulation the next workgroups' traces, in dispatch order.
    pub fn feed(&mut self, groups: impl IntoIterator<Item = GroupTrace>) {
        for g in groups {
            self.fed += 1;
            self.pending.push_back(g);
        }
    }

    /// Runs until every workgroup has finished, or until the dispatcher needs a workgroup that
    /// has not been fed yet (then returns `false`; feed more and call again).
    pub fn run(&mut self) -> bool {
        loop {
            if let Some(t) = self.dispatch_stalled {
                if self.pending.is_empty() && self.fed < self.total_groups {
                    return false;
                }
                self.dispatch_stalled = None;
                self.dispatch(t);
                continue;
            }
            let (t, cu) = self.wakes.min();
            if t >= NEVER {
                return true;
            }
            let c = cu as usize;
            let mut now = t;
            loop {
                self.cus[c].next_wake = NEVER;
                self.turns += 1;
                self.turn(c, now);
                // Stay on this CU while its next turn is within the look-ahead window (its state
                // is in the host's cache); other CUs catch up when it leaves.
                let next = self.cus[c].next_wake;
                if next >= t + RUN_AHEAD || self.dispatch_stalled.is_some() {
                    break;
                }
                now = next;
            }
            // The turns scheduled the CU's next wake-up, if it has one.
            if self.cus[c].next_wake == NEVER {
                self.wakes.set(c, NEVER);
            }
        }
    }

    fn schedule(&mut self, cu: usize, t: u64) {
        if t < self.cus[cu].next_wake {
            self.cus[cu].next_wake = t;
            self.wakes.set(cu, t);
        }
    }

    /// Whether a workgroup fits on `cu` now.
    fn fits(&self, cu: usize) -> bool {
        let c = &self.cus[cu];
        if c.groups >= self.groups_per_cu_limit
            || c.lds_used + self.shape.lds_bytes > self.m.target.lds_bytes()
        {
            return false;
        }
        let free: u32 = c
            .simds
            .iter()
            .map(|s| self.waves_per_simd_limit.saturating_sub(s.placed))
            .sum();
        free >= self.shape.waves
    }

    /// Places pending workgroups, in order, while they fit (each on the next CU of its
    /// partition, round-robin, that has room).
    fn dispatch(&mut self, t: u64) {
        let per_partition = self.m.cus / self.m.partitions;
        loop {
            let Some(front) = self.pending.front() else {
                if self.fed < self.total_groups {
                    self.dispatch_stalled = Some(t);
                }
                return;
            };
            let p = (front.id % self.m.partitions as u64) as usize;
            let start = self.rr[p];
            let found = (0..per_partition as usize)
                .map(|k| (start + k) % per_partition as usize)
                .find(|&k| self.fits(k * self.m.partitions as usize + p));
            let Some(k) = found else {
                return;
            };
            self.rr[p] = (k + 1) % per_partition as usize;
            let cu = k * self.m.partitions as usize + p;
            let trace = self.pending.pop_front().expect("front exists");
            let at = (self.dispatch_free.max(t as f64)) as u64;
            self.dispatch_free =
                self.dispatch_free.max(t as f64) + 1.0 / self.m.dispatch_per_clk as f64;
            self.place(cu, trace, at);
        }
    }

    fn place(&mut self, cu: usize, mut trace: GroupTrace, at: u64) {
        let slot = match self.free_groups.pop() {
            Some(s) => s,
            None => {
                self.groups.push(None);
                self.groups.len() as u32 - 1
            }
        };
        let start = at + self.m.wave_launch_cycles as u64;
        let n = trace.waves.len();
        let mut ids = Vec::with_capacity(n);
        let mut of_group = [0u32; 4];
        for w in 0..n {
            let c = &mut self.cus[cu];
            let simd = spread_simd(&c.simds, &of_group, self.waves_per_simd_limit);
            of_group[simd as usize] += 1;
            c.simds[simd as usize].placed += 1;
            let mut ws = WaveState::new(slot, w as u16, simd, start);
            // The wave owns its steps while resident: one load reaches the next step.
            ws.steps = std::mem::take(&mut trace.waves[w].steps);
            let id = match self.free_waves.pop() {
                Some(id) => {
                    self.waves[id as usize] = ws;
                    id
                }
                None => {
                    self.waves.push(ws);
                    self.waves.len() as u32 - 1
                }
            };
            let s = &mut self.cus[cu].simds[simd as usize];
            if let Some(since) = s.empty_since.take() {
                self.stalls
                    .add(StallCause::NoWaveResident, start.saturating_sub(since));
            }
            s.waves.push(id);
            s.tries.push(start);
            ids.push(id);
        }
        let c = &mut self.cus[cu];
        c.groups += 1;
        c.lds_used += self.shape.lds_bytes;
        let live = ids.len() as u32;
        self.groups[slot as usize] = Some(GroupState {
            trace,
            cu: cu as u32,
            waves: ids.clone(),
            live,
            arrived: 0,
            start,
        });
        for id in ids {
            self.prepare(cu, id, start);
        }
        if live == 0 {
            self.retire_group(slot, start);
        }
        self.schedule_cu(cu);
    }

    /// Sets the wave's `ready_at`/`cause` for its current step, given it may go from `t`.
    fn prepare(&mut self, cu: usize, id: u32, t: u64) {
        let step = self.current_step(id);
        self.waves[id as usize].step = step;
        let Some(step) = step else {
            // Ran off the trace without s_endpgm (a failed launch): end the wave.
            self.end_wave(cu, id, t);
            return;
        };
        let facts = self.facts;
        let f = &facts[step.inst as usize];
        let mut ready = t;
        let mut cause = StallCause::IssuePort;
        fn later(at: u64, why: StallCause, ready: &mut u64, cause: &mut StallCause) {
            if at > *ready {
                *ready = at;
                *cause = why;
            }
        }
        let p = self.cus[cu].partition as usize;
        let w = &mut self.waves[id as usize];
        // Completed operations only matter where counts are compared (waits, counter limits);
        // the readiness rules below give the same answer with them still listed.
        if matches!(
            f.kind,
            Kind::Waitcnt { .. } | Kind::Vmem { .. } | Kind::Lds { .. } | Kind::Smem
        ) {
            w.retire(t);
        } else if w.pending.len() > 8 {
            w.pending.retain(|(_, r, _)| *r > t);
        }
        if f.fetch_line != w.fetch_line {
            w.fetch_line = f.fetch_line;
            if let Some(arrive) = self.mem.fetch(cu, p, f.fetch_line, t) {
                later(arrive, StallCause::IcacheMiss, &mut ready, &mut cause);
            }
        }
        match f.kind {
            Kind::Waitcnt { vm, lgkm } => {
                later(
                    w.vm_ready(vm as usize),
                    StallCause::VmcntWait,
                    &mut ready,
                    &mut cause,
                );
                later(
                    w.lgkm_ready(lgkm as usize),
                    StallCause::LgkmcntWait,
                    &mut ready,
                    &mut cause,
                );
            }
            Kind::Vmem { .. } if w.vm.len() >= MAX_VMCNT => {
                later(
                    w.vm_ready(MAX_VMCNT - 1),
                    StallCause::VmcntWait,
                    &mut ready,
                    &mut cause,
                );
            }
            Kind::Lds { .. } | Kind::Smem if w.lgkm.len() >= MAX_LGKMCNT => {
                later(
                    w.lgkm_ready(MAX_LGKMCNT - 1),
                    StallCause::LgkmcntWait,
                    &mut ready,
                    &mut cause,
                );
            }
            _ => {}
        }
        for (regs, at, in_place) in &w.pending {
            // An MFMA accumulating into exactly the registers an in-place MFMA is computing
            // waits for the matrix unit only (facts::accumulates_in_place).
            if *in_place && f.accumulates.as_ref() == Some(regs) {
                continue;
            }
            if *at > ready && (regs.intersects(&f.reads) || regs.intersects(&f.writes)) {
                ready = *at;
                cause = StallCause::Dependency;
            }
        }
        w.ready_at = ready;
        w.cause = cause;
    }

    /// The step wave `id` is at, if any.
    fn current_step(&self, id: u32) -> Option<super::trace::Step> {
        let w = &self.waves[id as usize];
        w.steps.get(w.cursor as usize).copied()
    }

    /// The next cycle at which wave `id` might issue (aligned to its SIMD's turn).
    fn next_try(&self, cu: usize, id: u32) -> u64 {
        let w = &self.waves[id as usize];
        if w.at_barrier {
            return NEVER;
        }
        let c = &self.cus[cu];
        let s = &c.simds[w.simd as usize];
        let Some(step) = w.step else {
            return NEVER;
        };
        let f = &self.facts[step.inst as usize];
        let unit_free = match f.kind {
            Kind::Valu => s.valu_free,
            Kind::Mfma => s.valu_free.max(s.mfma_free),
            Kind::Vmem { .. } => c.vmem_free,
            Kind::Lds { .. } => c.lds_port_free[w.simd as usize / 2],
            _ => 0,
        };
        let earliest = w.ready_at.max(unit_free).max(w.last_issue + 1);
        turn_at_or_after(earliest, w.simd)
    }

    /// Recomputes the cached next-issue bounds of every wave of `cu` and schedules its next turn.
    fn schedule_cu(&mut self, cu: usize) {
        for s in 0..4 {
            self.refresh_simd(cu, s, u64::MAX);
        }
        self.wake_cu(cu);
    }

    /// Recomputes the next-issue bounds of the waves of SIMD `s` whose bound is at most `upto`,
    /// and the SIMD's minimum.
    fn refresh_simd(&mut self, cu: usize, s: usize, upto: u64) {
        let mut best = NEVER;
        for k in 0..self.cus[cu].simds[s].waves.len() {
            let mut nt = self.cus[cu].simds[s].tries[k];
            if nt <= upto {
                nt = self.next_try(cu, self.cus[cu].simds[s].waves[k]);
                self.cus[cu].simds[s].tries[k] = nt;
            }
            best = best.min(nt);
        }
        self.cus[cu].simds[s].next_try = best;
    }

    /// Schedules the CU's next turn from its SIMDs' cached minima.
    fn wake_cu(&mut self, cu: usize) {
        let best = self.cus[cu]
            .simds
            .iter()
            .map(|s| s.next_try)
            .min()
            .unwrap_or(NEVER);
        if best < NEVER {
            self.schedule(cu, best);
        }
    }

    /// One issue turn of CU `cu` at cycle `t` (SIMD `t mod 4`). Cached bounds of the other
    /// SIMDs' waves stay valid: units only get busier, so they remain lower bounds.
    fn turn(&mut self, cu: usize, t: u64) {
        if self.idle_probe.is_some() {
            self.probe_idle(cu, t);
        }
        let simd = (t % 4) as usize;
        let mut used = [false; CATEGORIES];
        let mut k = 0;
        while k < self.cus[cu].simds[simd].waves.len() {
            // The compact bounds array spares a visit to every waiting wave's state.
            if self.cus[cu].simds[simd].tries[k] > t {
                k += 1;
                continue;
            }
            // A bound at or before `t` was computed after the wave's last move: it is not at a
            // barrier and its own constraints allow `t`.
            let id = self.cus[cu].simds[simd].waves[k];
            k += 1;
            let before = self.cus[cu].simds[simd].waves.len();
            self.try_issue(cu, id, t, &mut used);
            // A wave that ended left the list: the next one moved into its place.
            if self.cus[cu].simds[simd].waves.len() < before {
                k -= 1;
            }
        }
        self.refresh_simd(cu, simd, t);
        self.wake_cu(cu);
    }

    fn probe_idle(&mut self, cu: usize, t: u64) {
        let mut p = self.idle_probe.take().expect("probe");
        let mut at = (p.last[cu] / 16 + 1) * 16;
        while at <= t {
            for s in 0..4 {
                let sd = &self.cus[cu].simds[s];
                if sd.waves.is_empty() {
                    continue;
                }
                p.samples += 1;
                if sd.mfma_free > at {
                    continue;
                }
                p.idle += 1;
                let mut states: Vec<String> = Vec::new();
                for &id in &sd.waves {
                    let w = &self.waves[id as usize];
                    let Some(step) = w.step else {
                        states.push("none".into());
                        continue;
                    };
                    let inst = step.inst as usize;
                    let kind = self.facts[inst].kind;
                    let st: &'static str = if w.at_barrier {
                        "barrier"
                    } else if w.ready_at > at {
                        match w.cause {
                            StallCause::VmcntWait => "wait_vm",
                            StallCause::LgkmcntWait => "wait_lgkm",
                            StallCause::Barrier => "barrier_rel",
                            StallCause::Dependency => "wait_dep",
                            StallCause::IcacheMiss => "icache",
                            _ => "wait_other",
                        }
                    } else {
                        match kind {
                            Kind::Mfma => "mfma_ready",
                            Kind::Vmem { .. } => "vmem_next",
                            Kind::Lds { .. } => "lds_next",
                            Kind::Valu => "valu_next",
                            Kind::Salu | Kind::Smem => "salu_next",
                            Kind::Waitcnt { .. } => "waitcnt_next",
                            _ => "other_next",
                        }
                    };
                    *p.at.entry((inst, st)).or_default() += 1;
                    states.push(st.into());
                }
                states.sort();
                *p.combos.entry(states.join(",")).or_default() += 1;
            }
            at += 16;
        }
        p.last[cu] = t;
        self.idle_probe = Some(p);
    }

    fn try_issue(&mut self, cu: usize, id: u32, t: u64, used: &mut [bool; CATEGORIES]) {
        let (group, index, cursor, simd) = {
            let w = &self.waves[id as usize];
            if w.at_barrier || w.ready_at > t {
                return;
            }
            (w.group, w.index, w.cursor, w.simd as usize)
        };
        let _ = (index, cursor);
        let Some(step) = self.waves[id as usize].step else {
            return;
        };
        let inst = step.inst as usize;
        let facts = self.facts;
        let f = &facts[inst];
        let kind = f.kind;
        // Category and unit.
        let c = &self.cus[cu];
        let s = &c.simds[simd];
        let port = simd / 2;
        let blocked = if kind.category().is_some_and(|k| used[k]) {
            Some(StallCause::IssuePort)
        } else {
            match kind {
                Kind::Valu if t < s.valu_free => Some(StallCause::IssuePort),
                Kind::Mfma if t < s.valu_free.max(s.mfma_free) => Some(StallCause::IssuePort),
                Kind::Vmem { .. } if t < c.vmem_free => Some(StallCause::IssuePort),
                Kind::Lds { .. } if t < c.lds_port_free[port] => {
                    Some(if c.lds_port_conflicted[port] {
                        StallCause::LdsBankConflict
                    } else {
                        StallCause::IssuePort
                    })
                }
                _ => None,
            }
        };
        if let Some(why) = blocked {
            self.waves[id as usize].blocked = why;
            return;
        }
        if let Some(k) = kind.category() {
            used[k] = true;
        }
        // Stall accounting: cycles beyond the cadence (one issue per turn).
        {
            let w = &self.waves[id as usize];
            let ideal = turn_at_or_after(w.last_issue + 1, w.simd);
            let gap = t.saturating_sub(ideal);
            if gap > 0 {
                let own = w.ready_at.saturating_sub(ideal).min(gap);
                let rest = gap - own;
                let (own_cause, rest_cause) = (w.cause, w.blocked);
                if own > 0 {
                    self.stalls.add(own_cause, own);
                    self.inst_stalls[inst][own_cause as usize] += own;
                }
                if rest > 0 {
                    self.stalls.add(rest_cause, rest);
                    self.inst_stalls[inst][rest_cause as usize] += rest;
                }
            }
        }
        self.inst_issued[inst] += 1;
        self.instructions += 1;
        let busy = f.busy as u64;
        let latency = f.latency as u64;
        let valu_block = f.valu_block as u64;
        let p = self.cus[cu].partition as usize;
        let mut next_ready = t + 1;
        let mut next_cause = StallCause::IssuePort;
        match kind {
            Kind::Valu | Kind::Mfma => {
                let sd = &mut self.cus[cu].simds[simd];
                if kind == Kind::Mfma {
                    sd.mfma_free = t + busy;
                    sd.valu_free = t + valu_block;
                    self.flops += f.flops as u64;
                } else {
                    sd.valu_free = t + busy;
                    self.flops += f.flops as u64 * step.extra as u64;
                }
                if latency > 4 {
                    let writes = f.writes;
                    let in_place = f.accumulates.is_some();
                    self.waves[id as usize]
                        .pending
                        .push((writes, t + latency, in_place));
                }
            }
            Kind::Vmem { store } => {
                let line = self.mem.l1_line();
                self.collect_lines(group, &step, line);
                let lines = std::mem::take(&mut self.lines);
                let bytes = lines.len() as u64 * line;
                let occupancy = (bytes / self.m.l1.bytes_per_clk.max(1) as u64).max(4);
                self.cus[cu].vmem_free = t + occupancy;
                let done = if lines.is_empty() {
                    t + occupancy
                } else if store {
                    self.mem.vector_write(cu, p, &lines, t)
                } else {
                    self.mem.vector_read(cu, p, &lines, t)
                };
                self.lines = lines;
                let w = &mut self.waves[id as usize];
                let done = done
                    .max(t + occupancy)
                    .max(w.vm.back().copied().unwrap_or(0));
                w.vm.push_back(done);
            }
            Kind::Smem => {
                let line = self.m.scalar.line as u64;
                self.collect_lines(group, &step, line);
                let lines = std::mem::take(&mut self.lines);
                let done = self.mem.scalar_read(cu, p, &lines, t);
                self.lines = lines;
                self.waves[id as usize].lgkm.push(done);
            }
            Kind::Lds { port_cycles } => {
                let c = &mut self.cus[cu];
                let banks_start = t.max(c.lds_banks_free);
                c.lds_banks_free = banks_start + step.extra as u64;
                let port_end = t + port_cycles as u64;
                c.lds_port_free[port] = port_end.max(c.lds_banks_free);
                c.lds_port_conflicted[port] = c.lds_banks_free > port_end;
                let w = &mut self.waves[id as usize];
                let done = (c.lds_port_free[port] + self.m.lds_latency as u64).max(w.last_lds);
                w.last_lds = done;
                w.lgkm.push(done);
            }
            Kind::Waitcnt { .. } => {}
            Kind::Nop(n) => {
                next_ready = t + 1 + n as u64 + 1;
                next_cause = StallCause::Dependency;
            }
            Kind::Barrier => {
                let w = &mut self.waves[id as usize];
                w.at_barrier = true;
                w.last_issue = t;
                w.cursor += 1;
                let g = self.groups[group as usize].as_mut().expect("live group");
                g.arrived += 1;
                self.release_barrier(group, t);
                return;
            }
            Kind::End => {
                self.waves[id as usize].last_issue = t;
                self.end_wave(cu, id, t);
                return;
            }
            Kind::Salu | Kind::Branch | Kind::Internal => {}
        }
        let w = &mut self.waves[id as usize];
        w.last_issue = t;
        w.cursor += 1;
        self.prepare(cu, id, next_ready);
        if next_cause != StallCause::IssuePort {
            let w = &mut self.waves[id as usize];
            if w.ready_at <= next_ready {
                w.cause = next_cause;
            }
        }
    }

    /// The byte addresses of the `line`-byte lines a step's granules fall in, into `self.lines`.
    fn collect_lines(&mut self, group: u32, step: &super::trace::Step, line: u64) {
        self.lines.clear();
        let g = self.groups[group as usize].as_ref().expect("live group");
        for &gr in g.trace.granules_of(step) {
            let l = gr * GRANULE / line * line;
            if self.lines.last() != Some(&l) {
                self.lines.push(l);
            }
        }
    }

    /// Releases the group's barrier if every live wave has arrived.
    fn release_barrier(&mut self, group: u32, t: u64) {
        let g = self.groups[group as usize].as_mut().expect("live group");
        if g.arrived < g.live || g.live == 0 {
            return;
        }
        g.arrived = 0;
        let cu = g.cu as usize;
        let ids = g.waves.clone();
        for id in ids {
            let w = &mut self.waves[id as usize];
            if w.at_barrier {
                w.at_barrier = false;
                self.prepare(cu, id, t + 1);
                let w = &mut self.waves[id as usize];
                if w.ready_at <= t + 1 {
                    w.cause = StallCause::Barrier;
                }
            }
        }
        // Waves that waited at the barrier were stalled by it: attribute on their next issue.
        let g = self.groups[group as usize].as_ref().expect("live group");
        for &id in &g.waves {
            let w = &mut self.waves[id as usize];
            if w.cause == StallCause::IssuePort {
                w.cause = StallCause::Barrier;
            }
            w.ready_at = w.ready_at.max(t + 1);
        }
        self.schedule_cu(cu);
    }

    fn end_wave(&mut self, cu: usize, id: u32, t: u64) {
        let (group, simd, start, drained) = {
            let w = &self.waves[id as usize];
            (w.group, w.simd as usize, w.start, w.drained_at())
        };
        let finish = t.max(drained);
        self.end = self.end.max(finish);
        self.wave_cycles += t.saturating_sub(start);
        let s = &mut self.cus[cu].simds[simd];
        if let Some(k) = s.waves.iter().position(|&x| x == id) {
            s.waves.remove(k);
            s.tries.remove(k);
        }
        s.placed -= 1;
        if s.waves.is_empty() {
            s.empty_since = Some(t);
        }
        self.free_waves.push(id);
        // Hand the steps back to the trace, to be recycled with it.
        let (index, steps) = {
            let w = &mut self.waves[id as usize];
            (w.index as usize, std::mem::take(&mut w.steps))
        };
        let g = self.groups[group as usize].as_mut().expect("live group");
        g.trace.waves[index].steps = steps;
        g.live -= 1;
        g.waves.retain(|&x| x != id);
        if g.live == 0 {
            self.retire_group(group, t);
        } else {
            // A wave that ends no longer holds its group's barrier.
            self.release_barrier(group, t);
        }
    }

    /// Traces of retired workgroups, emptied, for the producer to fill again (saves the
    /// allocations of a fresh trace per workgroup).
    pub fn take_recycled(&mut self) -> Vec<GroupTrace> {
        std::mem::take(&mut self.recycled)
    }

    fn retire_group(&mut self, group: u32, t: u64) {
        let mut g = self.groups[group as usize].take().expect("live group");
        if let Some(log) = &mut self.group_log {
            log.push((g.trace.id, g.cu, g.start, t));
        }
        for w in &mut g.trace.waves {
            w.steps.clear();
        }
        g.trace.granules.clear();
        self.recycled.push(std::mem::take(&mut g.trace));
        let c = &mut self.cus[g.cu as usize];
        c.groups -= 1;
        c.lds_used -= self.shape.lds_bytes;
        self.free_groups.push(group);
        if self.dispatch_stalled.is_none() {
            self.dispatch(t);
        } else {
            self.dispatch_stalled = self.dispatch_stalled.map(|s| s.min(t));
        }
    }

    /// The report, once [`run`](Self::run) has returned `true`.
    pub fn finish(mut self, bytes_read: u64, bytes_written: u64) -> TimingReport {
        let end = self.end.max(1);
        if std::env::var("KJIT_TIMING_DEBUG").is_ok() {
            eprintln!("turns {} instructions {}", self.turns, self.instructions);
        }
        if let Some(log) = self.group_log.take() {
            report_groups(log, self.m.partitions as u64);
            eprintln!("memory levels: {:?}", self.mem.counts);
        }
        if let Some(p) = self.idle_probe.take() {
            eprintln!(
                "matrix idle: {} of {} SIMD samples with waves ({:.1}%)",
                p.idle,
                p.samples,
                100.0 * p.idle as f64 / p.samples.max(1) as f64
            );
            let mut combos: Vec<_> = p.combos.into_iter().collect();
            combos.sort_by_key(|(k, n)| (std::cmp::Reverse(*n), k.clone()));
            for (k, n) in combos.iter().take(25) {
                eprintln!("  {:6.2}%  {k}", 100.0 * *n as f64 / p.idle.max(1) as f64);
            }
            let mut at: Vec<_> = p.at.into_iter().collect();
            at.sort_by_key(|&(k, n)| (std::cmp::Reverse(n), k));
            for ((i, st), n) in at.iter().take(40) {
                eprintln!(
                    "  {:6.2}% {:12} {:5x} {}",
                    100.0 * *n as f64 / p.idle.max(1) as f64,
                    st,
                    self.facts[*i].pc,
                    self.facts[*i].text
                );
            }
        }
        for c in &mut self.cus {
            for s in &mut c.simds {
                if let Some(since) = s.empty_since.take() {
                    self.stalls
                        .add(StallCause::NoWaveResident, end.saturating_sub(since));
                }
            }
        }
        let seconds = end as f64 / (self.m.clock_ghz * 1e9);
        let simds = self.m.cus as f64 * SIMDS_PER_CU as f64;
        let mut hot: Vec<HotInst> = self
            .inst_stalls
            .iter()
            .enumerate()
            .filter(|(_, s)| s.iter().sum::<u64>() > 0)
            .map(|(i, s)| {
                let (cause, _) = StallCause::ALL
                    .iter()
                    .map(|&c| (c, s[c as usize]))
                    .max_by_key(|&(_, n)| n)
                    .expect("causes");
                HotInst {
                    pc: self.facts[i].pc,
                    text: self.facts[i].text.clone(),
                    stall_cycles: s.iter().sum(),
                    cause,
                    issued: self.inst_issued[i],
                }
            })
            .collect();
        hot.sort_by(|a, b| b.stall_cycles.cmp(&a.stall_cycles).then(a.pc.cmp(&b.pc)));
        hot.truncate(10);
        let mfma = self.facts.iter().any(|f| f.kind == Kind::Mfma);
        let peak_flops = if mfma {
            // Matrix peak of the kernel's MFMA kind: the fastest MFMA in the code at full rate.
            self.facts
                .iter()
                .filter(|f| f.kind == Kind::Mfma)
                .map(|f| f.flops as f64 / f.busy as f64)
                .fold(0.0, f64::max)
                * SIMDS_PER_CU as f64
                * self.m.cus as f64
                * self.m.clock_ghz
                * 1e9
        } else {
            self.m.peak_f32_flops()
        };
        TimingReport {
            model: self.m.name.to_string(),
            target: self.m.target.name().to_string(),
            cycles: end,
            seconds,
            clock_ghz: self.m.clock_ghz,
            bytes_read,
            bytes_written,
            achieved_gbps: (bytes_read + bytes_written) as f64 / seconds / 1e9,
            peak_gbps: self.m.peak_gbps(),
            flops: self.flops,
            peak_flops,
            waves_per_simd: self.wave_cycles as f64 / (end as f64 * simds),
            stalls: self.stalls,
            hot,
            launch_overhead_seconds: self.m.launch_overhead_s,
            instructions: self.instructions,
            cus_simulated: self.m.cus,
        }
    }
}

/// Prints when workgroups ended (`KJIT_TIMING_GROUPS=1`): end-time quantiles, each partition's
/// last end, and the last groups to end, to see how evenly a launch ends.
fn report_groups(mut log: Vec<(u64, u32, u64, u64)>, partitions: u64) {
    log.sort_by_key(|g| g.3);
    let n = log.len();
    if n == 0 {
        return;
    }
    let q: Vec<String> = [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0]
        .iter()
        .map(|f| {
            let i = ((n - 1) as f64 * f) as usize;
            format!("{}:{}", f, log[i].3)
        })
        .collect();
    eprintln!("group ends ({n} groups): {}", q.join(" "));
    let mut last = vec![0u64; partitions as usize];
    let mut first = vec![u64::MAX; partitions as usize];
    for &(id, _, _, end) in &log {
        let p = (id % partitions) as usize;
        last[p] = last[p].max(end);
        first[p] = first[p].min(end);
    }
    eprintln!(
        "partition first/last end: {:?}",
        first.iter().zip(&last).collect::<Vec<_>>()
    );
    let partner = |id: u64, cu: u32| {
        log.iter()
            .filter(|g| g.1 == cu && g.0 != id)
            .map(|g| (g.0, g.3))
            .collect::<Vec<_>>()
    };
    for &(id, cu, start, end) in log.iter().rev().take(12) {
        eprintln!(
            "  late group {id} cu {cu} start {start} end {end} others on its cu {:?}",
            partner(id, cu)
        );
    }
    // Per CU: its last end and the spread between its groups' ends.
    let cus = log.iter().map(|g| g.1).max().unwrap_or(0) as usize + 1;
    let mut ends: Vec<Vec<u64>> = vec![Vec::new(); cus];
    for g in &log {
        ends[g.1 as usize].push(g.3);
    }
    let spreads: Vec<u64> = ends
        .iter()
        .filter(|e| e.len() > 1)
        .map(|e| e.iter().max().unwrap() - e.iter().min().unwrap())
        .collect();
    if !spreads.is_empty() {
        let mut sp = spreads.clone();
        sp.sort();
        eprintln!(
            "per-CU spread of group ends: mean {} median {} p90 {} max {}",
            sp.iter().sum::<u64>() / sp.len() as u64,
            sp[sp.len() / 2],
            sp[sp.len() * 9 / 10],
            sp[sp.len() - 1]
        );
    }
    for &(id, cu, start, end) in log.iter().take(4) {
        eprintln!("  early group {id} cu {cu} start {start} end {end}");
    }
    // Start-order deciles against end: whether late starters end late.
    let mut by_id = log.clone();
    by_id.sort_by_key(|g| g.0);
    let chunk = n.div_ceil(10);
    let means: Vec<u64> = by_id
        .chunks(chunk)
        .map(|c| c.iter().map(|g| g.3).sum::<u64>() / c.len() as u64)
        .collect();
    eprintln!("mean end by id decile: {means:?}");
}

/// The SIMD that takes a workgroup's next wave: one with a free wave slot (`limit`: the
/// kernel's waves per SIMD), holding the fewest of this group's waves (`of_group`), then the
/// fewest waves, then the lowest index. A group's waves thus go one per SIMD, round-robin,
/// as far as the slots allow (as MGPUSim's `WGMapperImpl::matchWfWithSIMDs` maps them: round
/// robin over the SIMDs, each checked for VGPRs and a wave slot). Picking only the least
/// loaded SIMD put two waves of one group on a SIMD whenever the SIMDs were unevenly loaded
/// (and could exceed the per-SIMD limit), so the kernel's cycles depended on its VGPR count
/// below the occupancy that LDS allowed. `fits` has checked that enough slots are free.
fn spread_simd(simds: &[Simd; 4], of_group: &[u32; 4], limit: u32) -> u8 {
    (0..4)
        .filter(|&s| simds[s].placed < limit)
        .min_by_key(|&s| (of_group[s], simds[s].placed, s))
        .or_else(|| (0..4).min_by_key(|&s| (simds[s].placed, s)))
        .expect("four SIMDs") as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn simds(placed: [u32; 4]) -> [Simd; 4] {
        placed.map(|p| Simd {
            placed: p,
            ..Simd::default()
        })
    }

    /// Places a group of `n` waves as `place` does and gives the waves per SIMD after it.
    fn place_group(mut s: [Simd; 4], n: usize, limit: u32) -> [u32; 4] {
        let mut of_group = [0u32; 4];
        for _ in 0..n {
            let k = spread_simd(&s, &of_group, limit) as usize;
            of_group[k] += 1;
            s[k].placed += 1;
        }
        of_group
    }

    #[test]
    fn a_groups_waves_go_one_per_simd_on_unevenly_loaded_simds() {
        // Two SIMDs already hold one wave more than the others: the least-loaded rule put the
        // group's four waves on SIMDs 0 and 1 only.
        assert_eq!(place_group(simds([1, 1, 2, 2]), 4, 4), [1, 1, 1, 1]);
        assert_eq!(place_group(simds([0, 3, 3, 3]), 4, 4), [1, 1, 1, 1]);
    }

    #[test]
    fn a_full_simd_takes_no_wave() {
        // SIMD 1 is at the kernel's limit: the group's waves go to the others.
        assert_eq!(place_group(simds([0, 2, 0, 0]), 4, 2), [2, 0, 1, 1]);
        // Eight waves on empty SIMDs: two each.
        assert_eq!(place_group(simds([0, 0, 0, 0]), 8, 8), [2, 2, 2, 2]);
    }
}

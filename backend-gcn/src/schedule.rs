//! Latency-aware list scheduling within blocks, on machine IR before register allocation.
//!
//! Takes a [`MachineFunction`] and reorders the instructions of each block (never across
//! blocks, never the terminator) so that long-latency operations — vector-memory, LDS and
//! scalar-memory loads — issue as early as their operands allow and their consumers as late as
//! the dependences allow, which gives `InsertWaitcnt` room for `vmcnt(N>0)` waits.
//!
//! The dependence DAG keeps every ordering the program relies on:
//! - virtual registers: definition before uses (SSA), and a tied partial write keeps its place
//!   relative to the other readers of the register it overwrites (the allocator gives both the
//!   same register);
//! - physical registers and special registers named by operands or implicitly (EXEC, VCC, SCC,
//!   M0): read-after-write, write-after-read and write-after-write. Every vector instruction
//!   reads EXEC, and so does every pseudo-instruction but `LiveIn` (VGPR copies, builds and
//!   extracts become `v_mov`s); every scalar ALU instruction other than a plain move is taken to read and
//!   write SCC (conservative where isel did not say);
//! - memory: within one address space (global: buffer/global/flat/scratch and scalar loads;
//!   LDS: `ds_*` and flat) a load never passes a store or atomic and stores/atomics keep their
//!   order; FLAT counts as both spaces;
//! - side effects (`s_barrier`, `s_waitcnt`, messages, `s_setreg`, cache controls, GDS, LDS
//!   DMA, anything of the program-control format but `s_nop`): nothing moves across them;
//! - `LiveIn` pseudo-instructions stay at the start of the entry block.
//!
//! Priority: the longest latency path to the end of the block (loads weigh most), then the
//! original order, so instructions that only feed the terminator (its SCC/VCC/EXEC producers)
//! stay last. With a VGPR bound ([`schedule_bounded`]) the scheduler tracks the VGPRs live at
//! the current point (block liveness at the start, a value dying with its last use in the
//! block unless live out): a ready instruction whose definitions would raise the count above
//! the bound waits while another ready one stays within it; when none does, the one raising it
//! least goes first. Loads are then hoisted only as far as the occupancy target allows.

use crate::isa::{self, name_facts, Format, Opcode};
use cranelift_entity::EntityRef;

use crate::mir::{implicit, MInst, MOpcode, MOperand, MachineFunction, VReg};
use crate::waitcnt::{units, UNITS};

/// SCC as an extra register unit after the scoreboard's.
const SCC: usize = UNITS;
const NRES: usize = UNITS + 1;
const EXEC: [usize; 2] = [126, 127];
const VCC: [usize; 2] = [106, 107];
const M0: usize = 124;

/// Reorders the instructions of every block of `mf` (see the module docs). Semantics are kept.
pub fn schedule(mf: &mut MachineFunction) {
    schedule_bounded(mf, None);
}

/// Like [`schedule`], keeping the VGPRs live at once at most `vgpr_limit` where the block
/// allows: an instruction that would raise the pressure above the limit waits while another
/// ready one does not (the occupancy target bounds how far loads are hoisted, as Mesa ACO's
/// `schedule_program` does). `None`: latency only.
pub fn schedule_bounded(mf: &mut MachineFunction, vgpr_limit: Option<u32>) {
    let lv = vgpr_limit.map(|_| crate::regalloc::liveness(mf));
    let keys: Vec<_> = mf.blocks.keys().collect();
    for b in keys {
        let insts = std::mem::take(&mut mf.blocks[b].insts);
        let bound = match (&lv, vgpr_limit) {
            (Some(lv), Some(limit)) => {
                let bd = &mf.blocks[b];
                let vgpr = |v: VReg| {
                    let d = mf.vregs[v];
                    if d.class == crate::mir::RegClass::Vgpr {
                        d.dwords as u32
                    } else {
                        0
                    }
                };
                let mut live_out = lv.live_out[b.index()].clone();
                for (_, args) in bd.term.successors() {
                    for a in args {
                        live_out.insert(a.index());
                    }
                }
                let mut start = 0;
                let mut live_in = lv.live_in[b.index()].clone();
                for p in &bd.params {
                    live_in.insert(p.index());
                }
                for v in live_in.iter() {
                    start += vgpr(VReg::new(v));
                }
                let size: Vec<u32> = (0..mf.vregs.len()).map(|v| vgpr(VReg::new(v))).collect();
                Some(Pressure {
                    limit,
                    start,
                    size,
                    live_out,
                })
            }
            _ => None,
        };
        mf.blocks[b].insts = schedule_block(insts, mf.vregs.len(), bound.as_ref());
    }
    // Descriptors built late where another's SGPRs come free first.
    crate::desc_sink::sink_descriptors(mf);
}

/// The most VGPRs (dwords of VGPR-class vregs) live at once anywhere in `mf`: no allocation
/// under a smaller budget keeps every value in a register.
pub fn vgpr_pressure(mf: &MachineFunction) -> u32 {
    let lv = crate::regalloc::liveness(mf);
    let size = |v: VReg| {
        let d = mf.vregs[v];
        if d.class == crate::mir::RegClass::Vgpr {
            d.dwords as u32
        } else {
            0
        }
    };
    let mut most = 0;
    for (b, bd) in mf.blocks.iter() {
        let mut live = lv.live_out[b.index()].clone();
        for (_, args) in bd.term.successors() {
            for a in args {
                live.insert(a.index());
            }
        }
        let mut n: u32 = live.iter().map(|v| size(VReg::new(v))).sum();
        most = most.max(n);
        for inst in bd.insts.iter().rev() {
            for d in inst.defs() {
                if !live.contains(d.index()) {
                    live.insert(d.index());
                    n += size(d);
                }
            }
            most = most.max(n);
            for d in inst.defs() {
                live.remove(d.index());
                n -= size(d);
            }
            for u in inst.uses() {
                if !live.contains(u.index()) {
                    live.insert(u.index());
                    n += size(u);
                }
            }
            most = most.max(n);
        }
    }
    most
}

/// What the pressure bound of one block needs.
struct Pressure {
    limit: u32,
    /// VGPRs live at the block's start (live-in values and parameters).
    start: u32,
    /// VGPRs of each vreg (0 for other classes).
    size: Vec<u32>,
    /// Live after the block (arguments of its terminator included).
    live_out: crate::regalloc::BitSet,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mem {
    None,
    Load,
    Store,
}

/// What one instruction touches, for the DAG.
struct Node {
    reads: Vec<usize>,
    writes: Vec<usize>,
    uses: Vec<VReg>,
    defs: Vec<VReg>,
    tied_use: Option<VReg>,
    global: Mem,
    lds: Mem,
    fence: bool,
    live_in: bool,
    latency: u32,
}

fn is_vector(op: Opcode) -> bool {
    matches!(
        op.format(),
        Format::Vop1
            | Format::Vop2
            | Format::Vopc
            | Format::Vop3
            | Format::Vop3p
            | Format::Ds
            | Format::Mubuf
            | Format::Mtbuf
            | Format::Flat
            | Format::Global
            | Format::Scratch
    )
}

fn node(i: &MInst) -> Node {
    let mut n = Node {
        reads: Vec::new(),
        writes: Vec::new(),
        uses: i.uses().collect(),
        defs: i.defs().collect(),
        tied_use: i.tied.and_then(|(_, u)| match i.ops.get(u as usize) {
            Some(MOperand::Use(v)) => Some(*v),
            _ => None,
        }),
        global: Mem::None,
        lds: Mem::None,
        fence: false,
        live_in: matches!(i.opcode, MOpcode::LiveIn(_)),
        latency: 0,
    };
    let bits = |b: u8, out: &mut Vec<usize>| {
        if b & implicit::EXEC != 0 {
            out.extend(EXEC);
        }
        if b & implicit::VCC != 0 {
            out.extend(VCC);
        }
        if b & implicit::SCC != 0 {
            out.push(SCC);
        }
        if b & implicit::M0 != 0 {
            out.push(M0);
        }
    };
    bits(i.implicit_uses, &mut n.reads);
    bits(i.implicit_defs, &mut n.writes);
    let MOpcode::Isa(op) = i.opcode else {
        // Copies, builds and extracts of VGPR tuples become `v_mov`s, which write only the
        // active lanes: they must not cross an EXEC write (moved into a divergent region they
        // leave the inactive lanes' value unwritten). Taken as reading EXEC for every class.
        if !matches!(i.opcode, MOpcode::LiveIn(_)) {
            n.reads.extend(EXEC);
        }
        // Pseudo-instructions: physical operands are read or written as their position says
        // (a `Phys` destination comes first).
        for (k, o) in i.ops.iter().enumerate() {
            if let MOperand::Phys(p) = o {
                let target = if k == 0 && i.defs().next().is_none() {
                    &mut n.writes
                } else {
                    &mut n.reads
                };
                target.extend(units(p));
            }
        }
        return n;
    };
    let infos = isa::operand_infos(op, i.encoding, i.mods.glc);
    for (o, oi) in i.ops.iter().zip(infos) {
        if let MOperand::Phys(p) = o {
            if oi.access.reads() {
                n.reads.extend(units(p));
            }
            if oi.access.writes() {
                n.writes.extend(units(p));
            }
        }
    }
    let info = op.info();
    let name = info.name;
    let fmt = info.format;
    if is_vector(op) {
        n.reads.extend(EXEC);
    }
    if matches!(
        fmt,
        Format::Sop1 | Format::Sop2 | Format::Sopk | Format::Sopc
    ) && !matches!(op, Opcode::SMovB32 | Opcode::SMovB64 | Opcode::SMovkI32)
    {
        n.reads.push(SCC);
        n.writes.push(SCC);
    }
    let atomic = op.name_has(name_facts::ANY_ATOMIC);
    let vm_kind = if op.name_has(name_facts::LOAD) && !atomic {
        Mem::Load
    } else {
        Mem::Store
    };
    match fmt {
        Format::Mubuf | Format::Mtbuf | Format::Global | Format::Scratch => {
            n.global = vm_kind;
            n.latency = if vm_kind == Mem::Load { 200 } else { 4 };
            if i.mods.lds {
                n.fence = true;
            }
        }
        Format::Flat => {
            n.global = vm_kind;
            n.lds = vm_kind;
            n.latency = if vm_kind == Mem::Load { 200 } else { 4 };
        }
        Format::Ds => {
            let load = name.starts_with("ds_read")
                || name.starts_with("ds_load")
                || op.name_has(name_facts::PERMUTE)
                || name.starts_with("ds_swizzle");
            n.lds = if load { Mem::Load } else { Mem::Store };
            n.latency = if load { 64 } else { 4 };
            if i.mods.gds {
                n.fence = true;
            }
        }
        Format::Smem => {
            if name.starts_with("s_load") || name.starts_with("s_buffer_load") {
                n.global = Mem::Load;
                n.latency = 40;
            } else {
                n.fence = true;
            }
        }
        Format::Sopp => n.fence = op != Opcode::SNop,
        Format::Sop1 | Format::Sop2 | Format::Sopk | Format::Sopc => {
            n.latency = 1;
            if name.starts_with("s_setreg")
                || name.starts_with("s_getreg")
                || name.starts_with("s_sendmsg")
                || name.starts_with("s_set_gpr_idx")
                || name.starts_with("s_movrel")
                || name.starts_with("s_memtime")
                || name.starts_with("s_memrealtime")
            {
                n.fence = true;
            }
        }
        _ => {
            n.latency = if info.is_mfma() {
                64
            } else if op.name_has(name_facts::SLOW_VALU) {
                16
            } else {
                4
            };
        }
    }
    n
}

/// Schedules one block's instruction list (`nvregs`: the function's vreg count; per-vreg
/// tables are dense vectors indexed by it).
fn schedule_block(insts: Vec<MInst>, nvregs: usize, bound: Option<&Pressure>) -> Vec<MInst> {
    let n = insts.len();
    if n < 3 {
        return insts;
    }
    let nodes: Vec<Node> = insts.iter().map(node).collect();
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut npred = vec![0usize; n];
    // Every edge is added while its target `b` is the node being visited, so a duplicate
    // would be the last successor added.
    let edge = |a: usize, b: usize, succs: &mut Vec<Vec<usize>>, npred: &mut Vec<usize>| {
        if a != b && succs[a].last() != Some(&b) {
            succs[a].push(b);
            npred[b] += 1;
        }
    };
    let mut def_at: Vec<Option<usize>> = vec![None; nvregs];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); nvregs];
    let mut last_write: Vec<Option<usize>> = vec![None; NRES];
    let mut reads_since: Vec<Vec<usize>> = vec![Vec::new(); NRES];
    let mut mem_global: Vec<(usize, Mem)> = Vec::new();
    let mut mem_lds: Vec<(usize, Mem)> = Vec::new();
    let mut last_fence: Option<usize> = None;
    let mut live_ins: Vec<usize> = Vec::new();
    let mut tied_writers: Vec<Vec<usize>> = vec![Vec::new(); nvregs];
    for (k, nd) in nodes.iter().enumerate() {
        for &l in &live_ins {
            edge(l, k, &mut succs, &mut npred);
        }
        if nd.live_in {
            live_ins.push(k);
        }
        if let Some(f) = last_fence {
            edge(f, k, &mut succs, &mut npred);
        }
        if nd.fence {
            for j in 0..k {
                edge(j, k, &mut succs, &mut npred);
            }
            last_fence = Some(k);
        }
        for v in &nd.uses {
            if let Some(d) = def_at[v.index()] {
                edge(d, k, &mut succs, &mut npred);
            }
        }
        if let Some(t) = nd.tied_use {
            // Earlier readers of the overwritten register stay before the partial write.
            for &u in &users[t.index()] {
                edge(u, k, &mut succs, &mut npred);
            }
        }
        for v in &nd.uses {
            users[v.index()].push(k);
        }
        for v in &nd.defs {
            def_at[v.index()] = Some(k);
        }
        // Later readers of a register tied into an earlier partial write stay after it.
        for v in &nd.uses {
            for &j in &tied_writers[v.index()] {
                edge(j, k, &mut succs, &mut npred);
            }
        }
        if let Some(t) = nd.tied_use {
            tied_writers[t.index()].push(k);
        }
        for &r in &nd.reads {
            if let Some(w) = last_write[r] {
                edge(w, k, &mut succs, &mut npred);
            }
        }
        for &w in &nd.writes {
            if let Some(p) = last_write[w] {
                edge(p, k, &mut succs, &mut npred);
            }
            for &r in &reads_since[w] {
                edge(r, k, &mut succs, &mut npred);
            }
        }
        for &r in &nd.reads {
            reads_since[r].push(k);
        }
        for &w in &nd.writes {
            last_write[w] = Some(k);
            reads_since[w].clear();
        }
        for (list, kind) in [(&mut mem_global, nd.global), (&mut mem_lds, nd.lds)] {
            if kind == Mem::None {
                continue;
            }
            for &(j, other) in list.iter() {
                if kind == Mem::Store || other == Mem::Store {
                    edge(j, k, &mut succs, &mut npred);
                }
            }
            list.push((k, kind));
        }
    }
    // Heights: longest latency path to the end of the block.
    let mut height = vec![0u64; n];
    for k in (0..n).rev() {
        let below = succs[k].iter().map(|&s| height[s]).max().unwrap_or(0);
        height[k] = below + nodes[k].latency.max(1) as u64;
    }
    // List scheduling: the ready instruction with the greatest height, then the earliest.
    // Under a pressure bound: among those that keep the live VGPRs within it; when none does,
    // the one that raises the pressure least, and of those the lowest (a consumer that finishes
    // a chain and frees its inputs, not the start of another load chain).
    let mut ready: Vec<usize> = (0..n).filter(|&k| npred[k] == 0).collect();
    let mut order = Vec::with_capacity(n);
    // Per vreg: uses not yet scheduled in this block.
    let mut left: Vec<u32> = vec![0; if bound.is_some() { nvregs } else { 0 }];
    if bound.is_some() {
        for nd in &nodes {
            for &v in &nd.uses {
                left[v.index()] += 1;
            }
        }
    }
    let mut live = bound.map_or(0, |b| b.start);
    let delta = |k: usize, left: &[u32]| -> i64 {
        let Some(b) = bound else { return 0 };
        let nd = &nodes[k];
        let mut d: i64 = nd.defs.iter().map(|v| b.size[v.index()] as i64).sum();
        for (i, v) in nd.uses.iter().enumerate() {
            if nd.uses[..i].contains(v) {
                continue;
            }
            let here = nd.uses.iter().filter(|x| *x == v).count() as u32;
            if left[v.index()] == here && !b.live_out.contains(v.index()) {
                d -= b.size[v.index()] as i64;
            }
        }
        d
    };
    // Each node's pressure change, kept current: scheduling a node changes only the deltas of
    // the nodes that read one of its operands.
    let mut ds: Vec<i64> = match bound {
        Some(_) => (0..n).map(|k| delta(k, &left)).collect(),
        None => Vec::new(),
    };
    while !ready.is_empty() {
        let pick = match bound {
            None => (0..ready.len())
                .max_by_key(|&i| (height[ready[i]], std::cmp::Reverse(ready[i])))
                .unwrap_or(0),
            Some(b) => {
                let ds = |i: usize| ds[ready[i]];
                let fits = |i: usize| live as i64 + ds(i).max(0) <= b.limit as i64;
                if (0..ready.len()).any(fits) {
                    (0..ready.len())
                        .filter(|&i| fits(i))
                        .max_by_key(|&i| (height[ready[i]], std::cmp::Reverse(ready[i])))
                        .unwrap_or(0)
                } else {
                    (0..ready.len())
                        .max_by_key(|&i| {
                            (
                                std::cmp::Reverse(ds(i)),
                                std::cmp::Reverse(height[ready[i]]),
                                std::cmp::Reverse(ready[i]),
                            )
                        })
                        .unwrap_or(0)
                }
            }
        };
        let k = ready.swap_remove(pick);
        if bound.is_some() {
            live = (live as i64 + ds[k]).max(0) as u32;
            for v in &nodes[k].uses {
                left[v.index()] -= 1;
            }
            for v in &nodes[k].uses {
                for &u in &users[v.index()] {
                    ds[u] = delta(u, &left);
                }
            }
        }
        order.push(k);
        for &s in &succs[k] {
            npred[s] -= 1;
            if npred[s] == 0 {
                ready.push(s);
            }
        }
    }
    if order.len() != n {
        // A cycle cannot happen (edges go forward in the original order); keep the input.
        return insts;
    }
    let mut slots: Vec<Option<MInst>> = insts.into_iter().map(Some).collect();
    order.into_iter().filter_map(|k| slots[k].take()).collect()
}

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
//! stay last. LDS and scalar loads are counted by `lgkmcnt`, which holds at most 15: a load is
//! back once 15 later ones have issued (issuing the 16th waits for the oldest) or once an
//! instruction reading it has gone (it waited: the second reader of a `ds_read2_b32`). A ready
//! instruction whose loads are all back in that sense needs no wait, so it goes before another
//! such load: hoisting more would hold more VGPRs for no latency hidden (matmul's 32 reads of
//! a tile step were all issued first). A short ALU tail (no load, MFMA or slow-result op at or
//! below a node) hides no latency: where it lowers the block's peak VGPRs, such nodes take
//! height 0 and go in the original order, one chain at a time.
//!
//! In a block with MFMAs ([`MatrixFeed`]) the list follows one wave's clock (one instruction
//! per turn of 4 cycles, operands' latencies, the matrix unit held for each MFMA's pass
//! cycles): while the unit is busy, a ready non-MFMA goes before an MFMA (with at most
//! [`MFMA_QUEUE`] MFMAs ready, first one an MFMA reads, such as the next fragments' LDS
//! reads); once it is free, an MFMA whose operands are
//! ready goes before other instructions. A wave issues in order, so MFMAs in one burst leave
//! the unit idle while the rest of the step issues. While MFMAs are left, at most one
//! vector-memory instruction that no MFMA waits for (a later step's prefetch) goes between
//! two MFMAs: the CU's vector memory unit serves its waves' loads one after the other, so a
//! run of loads waits there with the MFMAs behind it.
//!
//! The block's peak VGPRs are counted as the allocator lays values out (a pair result is
//! written while its operands are read, a single one may take a dying operand's register, a
//! pair's `Extract`ed halves are its dwords), and [`BlockDag::lower_peak`] lowers the chosen
//! list's peak by moves that hide no less latency, kept where the peak falls.
//!
//! With a VGPR bound ([`schedule_bounded`]) the scheduler tracks the VGPRs live at
//! the current point (block liveness at the start, a value dying with its last use in the
//! block unless live out): a ready instruction whose definitions would raise the count above
//! the bound waits while another ready one stays within it; when none does, the one raising it
//! least goes first. Loads are then hoisted only as far as the occupancy target allows.
//!
//! The DAGs, heights and per-value pressure facts depend on the instructions only, not on the
//! bound: [`Dags`] builds them once per function and list-schedules under any bound, so a
//! tuner's schedules of one kernel (the compile driver keeps its `Dags` in the `Selected`
//! kernel) pay for the DAG once. Per-vreg tables are dense over the function's vregs and
//! cleared per block by the entries touched; a node's pressure change is recomputed only when
//! a value it reads is down to one instruction's reads.

use crate::isa::{self, name_facts, Format, Opcode};
use cranelift_entity::EntityRef;

use crate::mir::{implicit, MInst, MOpcode, MOperand, MachineFunction, VReg};
use crate::waitcnt::{units, LGKMCNT_MAX, UNITS};

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
    Dags::new(mf).reorder(mf, vgpr_limit);
}

/// What scheduling one machine function under any VGPR bound shares: each block's dependence
/// DAG with its heights, and the operand and liveness facts the pressure bound reads. Made
/// once ([`Dags::new`]); [`Dags::reorder`] list-schedules under one bound, so a tuner's
/// schedules of one kernel (the latency schedule and each bound) build the DAGs once.
pub struct Dags {
    /// By block index.
    blocks: Vec<BlockDag>,
    /// The function's block liveness: the same for every schedule made from the DAGs
    /// (see [`Dags::vgpr_pressure`]).
    lv: crate::regalloc::Liveness,
}

impl std::fmt::Debug for Dags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dags")
            .field("blocks", &self.blocks.len())
            .finish_non_exhaustive()
    }
}

impl Dags {
    /// The DAGs of `mf`'s blocks.
    pub fn new(mf: &MachineFunction) -> Dags {
        let lv = crate::regalloc::liveness(mf);
        // VGPRs of each vreg, for every block's pressure.
        let size = vgpr_sizes(mf);
        // The tables of the last function made on this thread, clear (each block clears what
        // it touched), grown to this function's vregs: their per-vreg lists keep their room
        // from compile to compile instead of being allocated and freed again each time.
        thread_local! {
            static TABLES: std::cell::RefCell<Option<VregTables>> = const { std::cell::RefCell::new(None) };
        }
        let mut tables = TABLES
            .with(|t| t.take())
            .unwrap_or_else(|| VregTables::new(0));
        tables.grow(mf.vregs.len());
        let blocks = mf
            .blocks
            .iter()
            .map(|(b, bd)| {
                if bd.insts.len() < MIN_DAG {
                    // Keeps its order: no DAG, so no liveness facts to make for it.
                    return BlockDag::empty(bd.insts.len());
                }
                let live_out = live_at_end(&lv, b, bd, mf.vregs.len());
                let mut live_in = lv.live_in[b.index()].clone();
                for p in &bd.params {
                    live_in.insert(p.index());
                }
                let start = live_in.iter().map(|v| size[v]).sum();
                block_dag(
                    &bd.insts,
                    &mut tables,
                    &size,
                    &live_out,
                    start,
                    mf.abi.target,
                )
            })
            .collect();
        TABLES.with(|t| t.replace(Some(tables)));
        Dags { blocks, lv }
    }

    /// [`vgpr_pressure`] of `mf`, the function the DAGs were made from reordered by
    /// [`Dags::apply`], from the liveness computed for the DAGs: reordering a block along its
    /// dependences (and the descriptor moves, which stay in their blocks) changes neither
    /// what a block reads before writing nor what it writes, so the blocks' live-in and
    /// live-out sets are the ones [`Dags::new`] found.
    pub fn vgpr_pressure(&self, mf: &MachineFunction) -> u32 {
        debug_assert_eq!(self.lv.live_in.len(), mf.blocks.len());
        pressure_with(mf, &self.lv)
    }

    /// Reorders the instructions of every block of `mf` — the function the DAGs were made
    /// from, or a copy of it — with at most `vgpr_limit` VGPRs live where a block allows
    /// (see [`schedule_bounded`]). A block whose instruction count does not match its DAG is
    /// left as it is.
    pub fn reorder(&self, mf: &mut MachineFunction, vgpr_limit: Option<u32>) {
        let orders = self.orders(mf, vgpr_limit);
        self.apply(mf, &orders);
    }

    /// The list schedule of each block of `mf` under `vgpr_limit` (`None` for a block that
    /// keeps its order): what [`Dags::reorder`] does to `mf`, as data. Equal orders give
    /// equal functions, so a caller holding schedules made before can find one it would
    /// remake without copying the function ([`Dags::apply`]).
    pub fn orders(&self, mf: &MachineFunction, vgpr_limit: Option<u32>) -> BlockOrders {
        mf.blocks
            .values()
            .zip(&self.blocks)
            .map(|(bd, dag)| {
                (dag.nodes == bd.insts.len())
                    .then(|| dag.order(vgpr_limit))
                    .flatten()
            })
            .collect()
    }

    /// Reorders `mf`'s blocks by `orders` ([`Dags::orders`] of the same function), then
    /// places descriptors, builds, extracts and constants as [`Dags::reorder`] does.
    pub fn apply(&self, mf: &mut MachineFunction, orders: &BlockOrders) {
        let keys: Vec<_> = mf.blocks.keys().collect();
        for (b, order) in keys.into_iter().zip(orders) {
            if let Some(order) = order {
                let insts = std::mem::take(&mut mf.blocks[b].insts);
                let mut slots: Vec<Option<MInst>> = insts.into_iter().map(Some).collect();
                mf.blocks[b].insts = order.iter().filter_map(|&k| slots[k].take()).collect();
            }
        }
        // Descriptors loaded late where another's SGPRs come free first, and built late (after
        // the prologue's scalars die); extracts of SGPR tuples before their tuple's last other
        // reader (which may then write over it).
        crate::desc_sink::run(mf);
    }
}

/// Per block: its instructions' new order (indices into the block), or `None` where it keeps
/// its order.
pub type BlockOrders = Vec<Option<Vec<usize>>>;

/// The most VGPRs (dwords of VGPR-class vregs) live at once anywhere in `mf`: no allocation
/// under a smaller budget keeps every value in a register.
pub fn vgpr_pressure(mf: &MachineFunction) -> u32 {
    pressure_with(mf, &crate::regalloc::liveness(mf))
}

/// [`vgpr_pressure`] with `mf`'s block liveness given.
fn pressure_with(mf: &MachineFunction, lv: &crate::regalloc::Liveness) -> u32 {
    let sizes = vgpr_sizes(mf);
    let size = |v: VReg| sizes[v.index()];
    let mut most = 0;
    // Dwords of a live VGPR pair that are still to be read (bit `k`): an `Extract` of one
    // dword reads only its dword, and the allocator lays the single on it (a `ds_read2_b32`'s
    // halves are counted once, not as a pair and two singles).
    let mut dwords = vec![0u8; mf.vregs.len()];
    for (b, bd) in mf.blocks.iter() {
        let mut live = live_at_end(lv, b, bd, mf.vregs.len());
        for v in live.iter() {
            dwords[v] = 3;
        }
        let mut n: u32 = live.iter().map(|v| sizes[v]).sum();
        most = most.max(n);
        for inst in bd.insts.iter().rev() {
            for d in inst.defs() {
                if !live.contains(d.index()) {
                    live.insert(d.index());
                    dwords[d.index()] = 3;
                    n += size(d);
                }
            }
            most = most.max(n);
            for d in inst.defs() {
                live.remove(d.index());
                n -= match size(d) {
                    2 => dwords[d.index()].count_ones(),
                    s => s,
                };
            }
            let half = match (inst.opcode, inst.ops.as_slice()) {
                (MOpcode::Extract(k), [MOperand::Def(d), MOperand::Use(_)]) if size(*d) == 1 => {
                    Some(1u8 << k)
                }
                _ => None,
            };
            for u in inst.uses() {
                let want = match (half, size(u)) {
                    (Some(bit), 2) => bit,
                    (_, 2) => 3,
                    _ => {
                        if live.insert_new(u.index()) {
                            n += size(u);
                        }
                        continue;
                    }
                };
                let have = if live.insert_new(u.index()) {
                    0
                } else {
                    dwords[u.index()]
                };
                n += (want & !have).count_ones();
                dwords[u.index()] = have | want;
            }
            most = most.max(n);
        }
    }
    most
}

/// VGPRs of each vreg (0 for other classes), by vreg index.
fn vgpr_sizes(mf: &MachineFunction) -> Vec<u32> {
    mf.vregs
        .values()
        .map(|d| {
            if d.class == crate::mir::RegClass::Vgpr {
                d.dwords as u32
            } else {
                0
            }
        })
        .collect()
}

/// What is live at the end of block `b`: its live-out set and its terminator's arguments, in
/// a set with room for `vregs` (more than `lv` knows of when `desc_sink` made one after it).
fn live_at_end(
    lv: &crate::regalloc::Liveness,
    b: crate::mir::MBlock,
    bd: &crate::mir::MBlockData,
    vregs: usize,
) -> crate::regalloc::BitSet {
    let mut live = crate::regalloc::BitSet::new(vregs);
    live.union_with(&lv.live_out[b.index()]);
    for (_, args) in bd.term.successors() {
        for a in args {
            live.insert(a.index());
        }
    }
    live
}

/// A floor under [`vgpr_pressure`] of every schedule of `mf`: reordering instructions inside
/// their blocks changes neither what is live at a block's end nor that a value live into and
/// out of a block is live all through it, so each instruction's definitions (and, before it,
/// its operands) are live on top of those. A bound whose schedule cannot stay under a budget
/// by this floor is refused without being scheduled.
pub fn vgpr_pressure_floor(mf: &MachineFunction) -> u32 {
    let lv = crate::regalloc::liveness(mf);
    let sizes = vgpr_sizes(mf);
    let size = |v: usize| sizes[v];
    let mut most = 0;
    for (b, bd) in mf.blocks.iter() {
        let end = live_at_end(&lv, b, bd, mf.vregs.len());
        let mut through = end.clone();
        through.intersect_with(&lv.live_in[b.index()]);
        let at_end: u32 = end.iter().map(size).sum();
        let base: u32 = through.iter().map(size).sum();
        most = most.max(at_end);
        for inst in &bd.insts {
            let extra = |vs: &mut dyn Iterator<Item = VReg>| -> u32 {
                // An instruction's few operands: held inline (a heap list per operand list
                // was most of this floor's cost).
                let mut seen: smallvec::SmallVec<[usize; 8]> = smallvec::SmallVec::new();
                let mut n = 0;
                for v in vs {
                    let v = v.index();
                    if !through.contains(v) && !seen.contains(&v) {
                        seen.push(v);
                        n += size(v);
                    }
                }
                n
            };
            let defs = extra(&mut inst.defs());
            let uses = extra(&mut inst.uses());
            most = most.max(base + defs.max(uses));
        }
    }
    most
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mem {
    None,
    Load,
    Store,
}

/// Register units an instruction reads or writes (a few: held inline, not allocated per
/// instruction).
type Units = smallvec::SmallVec<[usize; 8]>;

/// What one instruction touches, for the DAG.
struct Node {
    reads: Units,
    writes: Units,
    uses: smallvec::SmallVec<[VReg; 4]>,
    defs: smallvec::SmallVec<[VReg; 2]>,
    tied_use: Option<VReg>,
    global: Mem,
    lds: Mem,
    fence: bool,
    live_in: bool,
    latency: u32,
    /// An LDS or scalar-memory load: counted by `lgkmcnt`.
    lgkm_load: bool,
    /// An `Extract`: its result is part of its source (a reader of it reads the source's load).
    forwards: bool,
    /// An ALU result not ready for the next instruction: the opcode's latency on the target
    /// is above a pass's 4 cycles (`v_mul_lo_u32`, MFMA, transcendentals), so a dependent
    /// instruction right after it waits.
    slow_result: bool,
    /// An MFMA: cycles it holds the SIMD's matrix unit (the opcode's `timing.busy`; 0 for
    /// everything else).
    matrix_busy: u32,
    /// A vector-memory instruction (it takes the CU's vector memory unit).
    vmem: bool,
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

fn node(i: &MInst, target: crate::Target) -> Node {
    // The operands sorted in one pass, pushed (collecting the `uses`/`defs` filters and
    // extending by arrays and ranges went through smallvec's generic `extend`, most of this
    // function's cost).
    let mut uses = smallvec::SmallVec::new();
    let mut defs = smallvec::SmallVec::new();
    for o in &i.ops {
        match *o {
            MOperand::Use(v) => uses.push(v),
            MOperand::Def(v) => defs.push(v),
            MOperand::Phys(_) => {}
        }
    }
    let mut n = Node {
        reads: Units::new(),
        writes: Units::new(),
        uses,
        defs,
        tied_use: i.tied.and_then(|(_, u)| match i.ops.get(u as usize) {
            Some(MOperand::Use(v)) => Some(*v),
            _ => None,
        }),
        global: Mem::None,
        lds: Mem::None,
        fence: false,
        live_in: matches!(i.opcode, MOpcode::LiveIn(_)),
        latency: 0,
        lgkm_load: false,
        forwards: matches!(i.opcode, MOpcode::Extract(_)),
        slow_result: false,
        matrix_busy: 0,
        vmem: false,
    };
    let bits = |b: u8, out: &mut Units| {
        if b & implicit::EXEC != 0 {
            out.extend_from_slice(&EXEC);
        }
        if b & implicit::VCC != 0 {
            out.extend_from_slice(&VCC);
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
            n.reads.extend_from_slice(&EXEC);
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
                for u in units(p) {
                    target.push(u);
                }
            }
        }
        return n;
    };
    let infos = isa::operand_infos(op, i.encoding, i.mods.glc);
    for (o, oi) in i.ops.iter().zip(infos) {
        if let MOperand::Phys(p) = o {
            if oi.access.reads() {
                for u in units(p) {
                    n.reads.push(u);
                }
            }
            if oi.access.writes() {
                for u in units(p) {
                    n.writes.push(u);
                }
            }
        }
    }
    let info = op.info();
    let name = info.name;
    n.slow_result = info.timing.latency[isa::target_index(target)] > 4;
    let fmt = info.format;
    if is_vector(op) {
        n.reads.extend_from_slice(&EXEC);
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
            n.vmem = true;
            n.global = vm_kind;
            n.latency = if vm_kind == Mem::Load { 200 } else { 4 };
            if i.mods.lds {
                n.fence = true;
            }
        }
        Format::Flat => {
            n.vmem = true;
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
            n.lgkm_load = load && !i.mods.gds;
            if i.mods.gds {
                n.fence = true;
            }
        }
        Format::Smem => {
            if name.starts_with("s_load") || name.starts_with("s_buffer_load") {
                n.global = Mem::Load;
                n.latency = 40;
                n.lgkm_load = true;
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
            if info.is_mfma() {
                n.matrix_busy = info.timing.busy[isa::target_index(target)] as u32;
            }
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

/// Fewest instructions of a block that is scheduled: a smaller one keeps its order.
const MIN_DAG: usize = 3;

/// Latencies a wave waits for (memory, MFMA, transcendental VALU), in the DAG's cycles.
const LONG_LATENCY: u32 = 16;

/// Per-vreg tables for building one block's DAG, dense over the function's vregs: made once
/// per function, and each block clears only the entries it touched (a table per block cost a
/// function's vreg count per block).
struct VregTables {
    /// The block's instruction defining each vreg.
    def_at: Vec<Option<usize>>,
    /// The block's instructions reading each vreg (once per operand).
    users: Vec<Vec<usize>>,
    /// The block's tied partial writes of each vreg.
    tied_writers: Vec<Vec<usize>>,
    /// The block's number for each vreg it reads (`u32::MAX`: none yet); a vreg counted by
    /// dwords ([`BlockDag::frees`]) has one number per dword from there on.
    local: Vec<u32>,
    /// Per vreg: a VGPR tuple the block `Extract`s a part of, counted by dwords.
    by_dwords: Vec<bool>,
    /// Vregs with entries to clear.
    touched: Vec<usize>,
    /// Per register unit (and the extra resource): the block's last instruction writing it.
    last_write: Vec<Option<usize>>,
    /// Per register unit: the block's instructions reading it since that write.
    reads_since: Vec<Vec<usize>>,
    /// Register units with entries to clear.
    units_touched: Vec<usize>,
}

impl VregTables {
    fn new(nvregs: usize) -> VregTables {
        VregTables {
            def_at: vec![None; nvregs],
            users: vec![Vec::new(); nvregs],
            tied_writers: vec![Vec::new(); nvregs],
            local: vec![u32::MAX; nvregs],
            by_dwords: vec![false; nvregs],
            touched: Vec::new(),
            last_write: vec![None; NRES],
            reads_since: vec![Vec::new(); NRES],
            units_touched: Vec::new(),
        }
    }

    /// Makes room for `nvregs` vregs (new entries clear).
    fn grow(&mut self, nvregs: usize) {
        if self.def_at.len() < nvregs {
            self.def_at.resize(nvregs, None);
            self.users.resize_with(nvregs, Vec::new);
            self.tied_writers.resize_with(nvregs, Vec::new);
            self.local.resize(nvregs, u32::MAX);
            self.by_dwords.resize(nvregs, false);
        }
    }

    fn clear(&mut self) {
        for &v in &self.touched {
            self.def_at[v] = None;
            self.users[v].clear();
            self.tied_writers[v].clear();
            self.local[v] = u32::MAX;
            self.by_dwords[v] = false;
        }
        self.touched.clear();
        for &u in &self.units_touched {
            self.last_write[u] = None;
            self.reads_since[u].clear();
        }
        self.units_touched.clear();
    }
}

/// Nodes of a block's DAG (a node's successors, a value's readers): most have a few, held
/// inline instead of one allocation per node.
type NodeList = smallvec::SmallVec<[usize; 4]>;

/// One block's dependence DAG, heights, and what its pressure bound reads, in the block's
/// own numbering of the values it reads.
struct BlockDag {
    /// Instructions in the block (no DAG below [`MIN_DAG`]: the block keeps its order).
    nodes: usize,
    succs: Vec<NodeList>,
    /// Predecessors of each node.
    npred: Vec<usize>,
    /// Longest latency path from each node to the end of the block.
    height: Vec<u64>,
    /// The same with the nodes of short ALU tails at 0 (`None`: the block has none).
    tail_height: Option<Vec<u64>>,
    /// VGPRs live at the block's start (live-in values and parameters).
    start: u32,
    /// Per node: VGPRs its definitions add.
    def_size: Vec<i64>,
    /// Per node: VGPRs its definitions take while its operands are still read (an early
    /// definition: the allocator gives a VGPR pair result registers apart from every operand,
    /// `regalloc/ra2.rs`), 0 where they are written after the operands are read (a single
    /// result may take a dying operand's register).
    early: Vec<i64>,
    /// Per node: the values it reads (block numbers, distinct) and how many operands read each.
    reads: Vec<smallvec::SmallVec<[(u32, u32); 4]>>,
    /// Per value read in the block: the nodes reading it (distinct).
    readers: Vec<NodeList>,
    /// Per value: operands of the block reading it.
    uses: Vec<u32>,
    /// Per value: the most operands of one node reading it.
    most_by_one: Vec<u32>,
    /// Per value: VGPRs freed when its last read in the block is scheduled (0 if live out).
    /// A VGPR tuple of which the block `Extract`s parts counts as one value per dword: the
    /// allocator lays each part on its dwords, so a dword is free once its part and the
    /// tuple's other readers are done with it (a `ds_read2_b32` pair and its two halves hold
    /// 2 VGPRs, not 4, and a half read last holds 1).
    frees: Vec<i64>,
    /// Per node: an LDS or scalar-memory load (counted by `lgkmcnt`).
    lgkm_load: Vec<bool>,
    /// Per node that is not such a load: the such loads of the block whose results it reads.
    lgkm_reads: Vec<Vec<usize>>,
    /// Per node: an `Extract` (no instruction of its own, so it waits for nothing).
    forwards: Vec<bool>,
    /// Per node: the latency its successors wait for, in the DAG's cycles.
    latency: Vec<u32>,
    /// Per node: cycles an MFMA holds the matrix unit, 0 for other nodes (empty: the block
    /// has no MFMA).
    matrix_busy: Vec<u32>,
    /// Per node: a vector-memory instruction (empty: the block has no MFMA).
    vmem: Vec<bool>,
}

/// Builds the DAG of one block (`t`: the function's per-vreg tables, clear on entry and on
/// return; `size`: VGPRs per vreg; `live_out`: live after the block, terminator arguments
/// included; `start`: VGPRs live at its start).
fn block_dag(
    insts: &[MInst],
    t: &mut VregTables,
    size: &[u32],
    live_out: &crate::regalloc::BitSet,
    start: u32,
    target: crate::Target,
) -> BlockDag {
    let n = insts.len();
    let mut dag = BlockDag::empty(n);
    dag.start = start;
    if n < MIN_DAG {
        return dag;
    }
    let nodes: Vec<Node> = insts.iter().map(|i| node(i, target)).collect();
    for (nd, inst) in nodes.iter().zip(insts) {
        if let (MOpcode::Extract(_), [MOperand::Def(d), MOperand::Use(u)]) =
            (inst.opcode, inst.ops.as_slice())
        {
            if size[u.index()] > size[d.index()] && size[d.index()] > 0 {
                t.by_dwords[u.index()] = true;
            }
        }
        // Pushed one by one: extending by the chained iterators cost more than the pushes.
        for v in nd.uses.iter().chain(&nd.defs).chain(&nd.tied_use) {
            t.touched.push(v.index());
        }
        t.units_touched.extend_from_slice(&nd.reads);
        t.units_touched.extend_from_slice(&nd.writes);
    }
    let mut succs: Vec<NodeList> = vec![NodeList::new(); n];
    let mut npred = vec![0usize; n];
    // Every edge is added while its target `b` is the node being visited, so a duplicate
    // would be the last successor added.
    let edge = |a: usize, b: usize, succs: &mut Vec<NodeList>, npred: &mut Vec<usize>| {
        if a != b && succs[a].last() != Some(&b) {
            succs[a].push(b);
            npred[b] += 1;
        }
    };
    // Per register unit: the function's tables (a pair of tables per block cost every unit
    // of the file per block).
    let last_write = &mut t.last_write;
    let reads_since = &mut t.reads_since;
    // Per memory space: the last store (or atomic) and the loads after it. A load waits for
    // the last store, a store for it and those loads: the same order as an edge from every
    // earlier access that a store is part of (edges implied through the last store are left
    // out; they change neither heights nor when a node is ready).
    let mut mem: [(Option<usize>, Vec<usize>); 2] = Default::default();
    let mut last_fence: Option<usize> = None;
    let mut live_ins: Vec<usize> = Vec::new();
    let mut lgkm_reads: Vec<Vec<usize>> = vec![Vec::new(); n];
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
            if let Some(d) = t.def_at[v.index()] {
                edge(d, k, &mut succs, &mut npred);
                // The loads read: `d` itself, or through an `Extract` the loads it forwards
                // (earlier nodes, so `d < k`). Indexed, not collected: this runs per edge.
                let n_loads = match (nodes[d].lgkm_load, nodes[d].forwards) {
                    (true, _) => 1,
                    (false, true) => lgkm_reads[d].len(),
                    _ => 0,
                };
                for i in 0..n_loads {
                    let l = if nodes[d].lgkm_load {
                        d
                    } else {
                        lgkm_reads[d][i]
                    };
                    if !nd.lgkm_load && !lgkm_reads[k].contains(&l) {
                        lgkm_reads[k].push(l);
                    }
                }
            }
        }
        if let Some(tu) = nd.tied_use {
            // Earlier readers of the overwritten register stay before the partial write.
            for &u in &t.users[tu.index()] {
                edge(u, k, &mut succs, &mut npred);
            }
        }
        for v in &nd.uses {
            t.users[v.index()].push(k);
        }
        for v in &nd.defs {
            t.def_at[v.index()] = Some(k);
        }
        // Later readers of a register tied into an earlier partial write stay after it.
        for v in &nd.uses {
            for &j in &t.tied_writers[v.index()] {
                edge(j, k, &mut succs, &mut npred);
            }
        }
        if let Some(tu) = nd.tied_use {
            t.tied_writers[tu.index()].push(k);
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
        for ((store, loads), kind) in mem.iter_mut().zip([nd.global, nd.lds]) {
            match kind {
                Mem::None => {}
                Mem::Load => {
                    if let Some(j) = *store {
                        edge(j, k, &mut succs, &mut npred);
                    }
                    loads.push(k);
                }
                Mem::Store => {
                    for j in store.iter().chain(loads.iter()) {
                        edge(*j, k, &mut succs, &mut npred);
                    }
                    *store = Some(k);
                    loads.clear();
                }
            }
        }
    }
    let mut height = vec![0u64; n];
    for k in (0..n).rev() {
        let below = succs[k].iter().map(|&s| height[s]).max().unwrap_or(0);
        height[k] = below + nodes[k].latency.max(1) as u64;
    }
    // A node with no long-latency operation (nor a slow ALU result) at or below it heads a
    // short ALU tail: its
    // height orders nothing worth hiding (a plain VALU result is ready for the next
    // instruction), so it takes height 0 and such tails go in the original order, one chain
    // at a time, instead of breadth first by their few cycles (hash_rounds: the 40 rotations'
    // `v_lshrrev` were all issued before the first `v_lshl_or`, 40 VGPRs more).
    let mut long_below = vec![false; n];
    let mut tail_height = height.clone();
    for k in (0..n).rev() {
        let nd = &nodes[k];
        long_below[k] =
            nd.latency >= LONG_LATENCY || nd.slow_result || succs[k].iter().any(|&s| long_below[s]);
        if !long_below[k] {
            tail_height[k] = 0;
        }
    }
    if tail_height != height {
        dag.tail_height = Some(tail_height);
    }
    // The pressure facts: each read value numbered in the block.
    dag.def_size.reserve_exact(n);
    dag.early.reserve_exact(n);
    dag.reads.reserve_exact(n);
    for ((k, nd), inst) in nodes.iter().enumerate().zip(insts) {
        let def_size: i64 = nd.defs.iter().map(|v| size[v.index()] as i64).sum();
        dag.def_size.push(def_size);
        let pair_def = matches!(inst.opcode, MOpcode::Isa(_))
            && inst.tied.is_none()
            && nd.defs.iter().any(|v| size[v.index()] > 1);
        dag.early.push(if pair_def { def_size } else { 0 });
        // The dwords an `Extract` reads of its tuple.
        let part = match (inst.opcode, inst.ops.as_slice()) {
            (MOpcode::Extract(at), [MOperand::Def(d), MOperand::Use(_)]) => {
                Some((at as usize, size[d.index()] as usize))
            }
            _ => None,
        };
        let mut reads = smallvec::SmallVec::new();
        for (i, v) in nd.uses.iter().enumerate() {
            if nd.uses[..i].contains(v) {
                continue;
            }
            let here = nd.uses.iter().filter(|x| *x == v).count() as u32;
            let by_dwords = t.by_dwords[v.index()];
            let values = if by_dwords {
                size[v.index()] as usize
            } else {
                1
            };
            let mut id = t.local[v.index()];
            if id == u32::MAX {
                id = dag.uses.len() as u32;
                t.local[v.index()] = id;
                for _ in 0..values {
                    dag.readers.push(NodeList::new());
                    dag.uses.push(0);
                    dag.most_by_one.push(0);
                    dag.frees
                        .push(match (live_out.contains(v.index()), by_dwords) {
                            (true, _) => 0,
                            (false, true) => 1,
                            (false, false) => size[v.index()] as i64,
                        });
                }
            }
            let dwords = match part {
                Some((at, w)) if by_dwords => at..(at + w).min(values),
                _ => 0..values,
            };
            for l in dwords.map(|d| id as usize + d) {
                dag.readers[l].push(k);
                dag.uses[l] += here;
                dag.most_by_one[l] = dag.most_by_one[l].max(here);
                reads.push((l as u32, here));
            }
        }
        dag.reads.push(reads);
    }
    t.clear();
    dag.succs = succs;
    dag.npred = npred;
    dag.height = height;
    dag.lgkm_load = nodes.iter().map(|nd| nd.lgkm_load).collect();
    dag.lgkm_reads = lgkm_reads;
    dag.forwards = nodes.iter().map(|nd| nd.forwards).collect();
    dag.latency = nodes.iter().map(|nd| nd.latency.max(1)).collect();
    if nodes.iter().any(|nd| nd.matrix_busy > 0) {
        dag.matrix_busy = nodes.iter().map(|nd| nd.matrix_busy).collect();
        dag.vmem = nodes.iter().map(|nd| nd.vmem).collect();
    }
    dag
}

impl BlockDag {
    /// The DAG of a block of `nodes` instructions with no edges or facts yet (all a block
    /// below [`MIN_DAG`] instructions gets: it keeps its order).
    fn empty(nodes: usize) -> BlockDag {
        BlockDag {
            nodes,
            succs: Vec::new(),
            npred: Vec::new(),
            height: Vec::new(),
            tail_height: None,
            start: 0,
            def_size: Vec::new(),
            early: Vec::new(),
            reads: Vec::new(),
            readers: Vec::new(),
            uses: Vec::new(),
            most_by_one: Vec::new(),
            frees: Vec::new(),
            lgkm_load: Vec::new(),
            lgkm_reads: Vec::new(),
            forwards: Vec::new(),
            latency: Vec::new(),
            matrix_busy: Vec::new(),
            vmem: Vec::new(),
        }
    }

    /// The list schedule under `limit` (node indices in their new order), or `None` when the
    /// block keeps its order (too small, or a cycle, which edges that go forward in the
    /// original order cannot make).
    fn order(&self, limit: Option<u32>) -> Option<Vec<usize>> {
        if self.nodes < MIN_DAG {
            return None;
        }
        let by_height = self.order_by(&self.height, limit)?;
        let Some(tail) = &self.tail_height else {
            return Some(self.lower_peak(by_height));
        };
        // Short ALU tails in their original order where that lowers the block's peak VGPRs
        // (else the latency order: equal pressure, no reason to differ from it).
        let chosen = match self.order_by(tail, limit) {
            Some(t) if self.peak(&t) < self.peak(&by_height) => t,
            _ => by_height,
        };
        Some(self.lower_peak(chosen))
    }

    /// The most VGPRs live at once in the block under `order`.
    fn peak(&self, order: &[usize]) -> u32 {
        let (start, at) = self.pressures(order);
        at.iter().map(|&(p, _)| p).fold(start, i64::max).max(0) as u32
    }

    /// The VGPRs live at the block's start, and per position of `order` those live at its node
    /// (its operands, and its results from when they are written: with the operands for an
    /// [`early`](BlockDag::early) definition, after the dying ones are read otherwise) with the
    /// VGPRs its reads free.
    fn pressures(&self, order: &[usize]) -> (i64, Vec<(i64, i64)>) {
        let mut left = self.uses.clone();
        let mut live = self.start as i64;
        let mut at = Vec::with_capacity(order.len());
        for &k in order {
            let before = live;
            let mut freed = 0;
            for &(v, here) in &self.reads[k] {
                left[v as usize] -= here;
                if left[v as usize] == 0 {
                    freed += self.frees[v as usize];
                }
            }
            live += self.def_size[k] - freed;
            at.push(((before + self.early[k]).max(live), freed));
        }
        (self.start as i64, at)
    }

    /// `order` with its peak VGPRs lowered by moves that hide no less latency, made one at a
    /// time while each lowers the peak or its number of points, and kept only when the peak
    /// falls (else `order` as it is: the same VGPRs, no reason to differ from it):
    /// - an LDS or scalar load at the peak whose address dies there, before the load just
    ///   ahead of it (loads issue back to back; a pair result is written while its address is
    ///   read, so the run's last load should be one from a register that stays live, with the
    ///   dying address already read: stencil_pipelined's last `ds_read2st64_b32` of a stage);
    /// - a plain ALU instruction at the peak that frees nothing (its operands stay live), down
    ///   to just before its first reader: its result is ready for the next instruction, so it
    ///   waits for nothing there and holds its VGPR for a shorter stretch (the stencil's mask
    ///   compare made among the 14 LDS results of a stage).
    fn lower_peak(&self, given: Vec<usize>) -> Vec<usize> {
        let mut order = given.clone();
        // The peak and its number of points, with the pressures they come from (the order
        // kept is scanned next with the pressures its score was made from).
        let score = |o: &[usize]| {
            let (start, at) = self.pressures(o);
            let most = at.iter().map(|&(p, _)| p).fold(start, i64::max);
            ((most, at.iter().filter(|&&(p, _)| p == most).count()), at)
        };
        let (mut best, mut at) = score(&order);
        let first_peak = best.0;
        let mut pos = vec![0usize; self.nodes];
        'moves: loop {
            for (i, &k) in order.iter().enumerate() {
                pos[k] = i;
            }
            for i in (0..order.len()).filter(|&i| at[i].0 == best.0) {
                let k = order[i];
                let freed = at[i].1;
                // The copy is made only for a move that is tried.
                let moved = if self.lgkm_load[k] && self.early[k] > 0 && freed > 0 && i > 0 {
                    let j = order[i - 1];
                    if !self.lgkm_load[j] || self.succs[j].contains(&k) {
                        continue;
                    }
                    let mut moved = order.clone();
                    moved.swap(i - 1, i);
                    moved
                } else if !self.lgkm_load[k]
                    && !self.forwards[k]
                    && self.def_size[k] > 0
                    && freed == 0
                    && self.latency[k] <= ISSUE_TURN as u32
                {
                    let Some(first) = self.succs[k].iter().map(|&s| pos[s]).min() else {
                        continue;
                    };
                    if first <= i + 1 {
                        continue;
                    }
                    let mut moved = order.clone();
                    moved.remove(i);
                    moved.insert(first - 1, k);
                    moved
                } else {
                    continue;
                };
                let (s, moved_at) = score(&moved);
                if s < best {
                    best = s;
                    order = moved;
                    at = moved_at;
                    continue 'moves;
                }
            }
            return if best.0 < first_peak { order } else { given };
        }
    }

    /// The list schedule under `limit` with priorities `height`.
    fn order_by(&self, height: &[u64], limit: Option<u32>) -> Option<Vec<usize>> {
        let n = self.nodes;
        let mut npred = self.npred.clone();
        // List scheduling: the ready instruction with the greatest height, then the earliest.
        // Under a pressure bound: among those that keep the live VGPRs within it; when none
        // does, the one that raises the pressure least, and of those the lowest (a consumer
        // that finishes a chain and frees its inputs, not the start of another load chain).
        // Ready nodes sorted by (height, earliest first) ascending: the latency pick is the
        // last; under a bound, the last that fits.
        let key = |k: usize| (height[k], std::cmp::Reverse(k));
        let mut ready: Vec<usize> = (0..n).filter(|&k| npred[k] == 0).collect();
        ready.sort_by_key(|&k| key(k));
        let mut order = Vec::with_capacity(n);
        // Per value: reads not yet scheduled in this block.
        let mut left: Vec<u32> = match limit {
            Some(_) => self.uses.clone(),
            None => Vec::new(),
        };
        let mut live = self.start;
        let delta = |k: usize, left: &[u32]| -> i64 {
            let mut d = self.def_size[k];
            for &(v, here) in &self.reads[k] {
                if left[v as usize] == here {
                    d -= self.frees[v as usize];
                }
            }
            d
        };
        // Each node's pressure change, kept current: scheduling a node changes only the
        // deltas of the nodes that read one of its operands, and only once that operand's
        // unscheduled reads are few enough to be one node's (before, `left == here` holds for
        // no reader).
        let mut ds: Vec<i64> = match limit {
            Some(_) => (0..n).map(|k| delta(k, &left)).collect(),
            None => Vec::new(),
        };
        // Per scheduled LDS/scalar load: how many such loads were scheduled before it.
        let mut seq: Vec<usize> = vec![0; n];
        // Per LDS/scalar load: a scheduled instruction read its result, so it waited for it.
        let mut waited: Vec<bool> = vec![false; n];
        let mut matrix = (!self.matrix_busy.is_empty()).then(|| MatrixFeed::new(self));
        let mut issued = 0usize;
        while !ready.is_empty() {
            // A load is known back once `lgkmcnt`'s range of later loads has issued (the
            // counter cannot count more, so issuing them waited for it) or an instruction
            // reading it went before (it waited: a `ds_read2_b32`'s second half). While a ready
            // non-load reads only loads known back, it needs no `s_waitcnt`: it goes before
            // another such load, which would only hold a VGPR longer.
            let free_consumer = issued > LGKMCNT_MAX as usize
                && ready.iter().any(|&r| self.lgkm_load[r])
                && ready.iter().any(|&r| {
                    let loads = &self.lgkm_reads[r];
                    !loads.is_empty()
                        && loads
                            .iter()
                            .all(|&d| waited[d] || issued - seq[d] > LGKMCNT_MAX as usize)
                });
            let allowed = |k: usize| !(free_consumer && self.lgkm_load[k]);
            let fits = |k: usize| limit.is_none_or(|l| live as i64 + ds[k].max(0) <= l as i64);
            let at = match limit {
                None => ready.iter().rposition(|&k| allowed(k)).unwrap_or(0),
                // One pass from the end: the last that fits, and meanwhile the one raising the
                // pressure least, lowest, earliest (least `(ds, height, k)`) for when none does.
                Some(_) => {
                    let mut least: Option<((i64, u64, usize), usize)> = None;
                    let mut fit = None;
                    for (i, &k) in ready.iter().enumerate().rev() {
                        if !allowed(k) {
                            continue;
                        }
                        if fits(k) {
                            fit = Some(i);
                            break;
                        }
                        let key = (ds[k], height[k], k);
                        if least.is_none_or(|(l, _)| key < l) {
                            least = Some((key, i));
                        }
                    }
                    fit.or(least.map(|(_, i)| i)).unwrap_or(0)
                }
            };
            let at = match &mut matrix {
                Some(m) => m.pick(&ready, at, |k| allowed(k) && fits(k)),
                None => at,
            };
            let k = ready.remove(at);
            if let Some(m) = &mut matrix {
                m.issue(k, &self.succs[k]);
            }
            if !self.forwards[k] {
                for &d in &self.lgkm_reads[k] {
                    waited[d] = true;
                }
            }
            if self.lgkm_load[k] {
                seq[k] = issued;
                issued += self.def_size[k].max(1) as usize;
            }
            if limit.is_some() {
                live = (live as i64 + ds[k]).max(0) as u32;
                for &(v, here) in &self.reads[k] {
                    left[v as usize] -= here;
                }
                for &(v, _) in &self.reads[k] {
                    if left[v as usize] <= self.most_by_one[v as usize] {
                        for &u in &self.readers[v as usize] {
                            ds[u] = delta(u, &left);
                        }
                    }
                }
            }
            order.push(k);
            for &s in &self.succs[k] {
                npred[s] -= 1;
                if npred[s] == 0 {
                    let at = ready.partition_point(|&r| key(r) < key(s));
                    ready.insert(at, s);
                }
            }
        }
        (order.len() == n).then_some(order)
    }
}

/// MFMAs ready in the DAG (operands issued) below which their operands' producers go first.
const MFMA_QUEUE: usize = 2;

/// Cycles between two instructions of one wave: it issues one per turn of 4 cycles.
const ISSUE_TURN: u64 = 4;

/// The matrix unit's occupancy along a list schedule of a block with MFMAs, for feeding it
/// evenly: a wave issues in order, so MFMAs issued back to back wait for the unit while the
/// wave's other instructions wait behind them, and the unit idles while those issue. Each
/// MFMA holds the unit for its pass cycles (`timing.busy`), so a wave keeps it busy alone when
/// `busy / 4 - 1` of its other instructions issue between two of its MFMAs (LLVM's AMDGPU
/// IGroupLP and ACO interleave the same way). The clock is the wave's alone: one instruction
/// per turn, an instruction waiting for its operands' latencies and an MFMA for the unit.
struct MatrixFeed<'a> {
    dag: &'a BlockDag,
    /// The cycle the next instruction issues at, at the earliest.
    clock: u64,
    /// The cycle the matrix unit takes its next MFMA.
    unit_free: u64,
    /// Per node: the cycle its operands are ready (the latest of its predecessors' issue
    /// plus latency).
    ready_at: Vec<u64>,
    /// MFMAs not yet issued.
    mfmas_left: usize,
    /// Per node: an MFMA depends on it (directly or through others).
    reaches_mfma: Vec<bool>,
    /// A vector-memory instruction issued since the last MFMA.
    vmem_since_mfma: bool,
}

impl<'a> MatrixFeed<'a> {
    fn new(dag: &'a BlockDag) -> MatrixFeed<'a> {
        MatrixFeed {
            dag,
            clock: 0,
            unit_free: 0,
            ready_at: vec![0; dag.nodes],
            mfmas_left: dag.matrix_busy.iter().filter(|&&b| b > 0).count(),
            reaches_mfma: {
                // Edges go forward in the block's order.
                let mut r = vec![false; dag.nodes];
                for k in (0..dag.nodes).rev() {
                    r[k] = dag.matrix_busy[k] > 0 || dag.succs[k].iter().any(|&s| r[s]);
                }
                r
            },
            vmem_since_mfma: false,
        }
    }

    fn is_mfma(&self, k: usize) -> bool {
        self.dag.matrix_busy[k] > 0
    }

    /// Whether an MFMA depends on node `k` directly.
    fn feeds_mfma(&self, k: usize) -> bool {
        self.dag.succs[k].iter().any(|&s| self.is_mfma(s))
    }

    /// The position in `ready` to issue instead of the list scheduler's pick `at`, among
    /// those `ok` admits (the pressure bound and the `lgkmcnt` rule): while the unit is busy,
    /// the best ready non-MFMA rather than an MFMA that would wait for it, and of those, with
    /// few MFMAs ready, first one an MFMA reads (the next MFMAs' LDS reads); once it is
    /// free, the best MFMA whose operands are ready rather than another instruction.
    fn pick(&self, ready: &[usize], at: usize, ok: impl Fn(usize) -> bool) -> usize {
        let i = self.pick_unit(ready, at, &ok);
        let k = ready[i];
        let spread = self.dag.vmem[k] && !self.reaches_mfma[k] && self.vmem_since_mfma;
        if !spread || self.mfmas_left == 0 {
            return i;
        }
        // One vector-memory instruction per MFMA while MFMAs are left (those no MFMA waits
        // for: the next step's loads): the CU's vector memory unit serves every wave of the
        // CU, so a run of loads waits for it, and the MFMAs behind them (a wave issues in
        // order) leave the matrix unit idle.
        let busy = self.clock < self.unit_free;
        let other = |want_mfma: bool| {
            ready
                .iter()
                .rposition(|&k| !self.dag.vmem[k] && self.is_mfma(k) == want_mfma && ok(k))
        };
        match busy {
            true => other(false).or_else(|| other(true)),
            false => other(true).or_else(|| other(false)),
        }
        .unwrap_or(i)
    }

    /// [`pick`](Self::pick) for the matrix unit alone.
    fn pick_unit(&self, ready: &[usize], at: usize, ok: impl Fn(usize) -> bool) -> usize {
        let busy = self.clock < self.unit_free;
        let want_mfma = !busy;
        // Few MFMAs left to issue: the next ones' operands first, so they are back when
        // the unit is free.
        let queued = ready.iter().filter(|&&k| self.is_mfma(k)).count();
        if busy && queued <= MFMA_QUEUE {
            let feeder = ready
                .iter()
                .rposition(|&k| !self.is_mfma(k) && self.feeds_mfma(k) && ok(k));
            if let Some(i) = feeder {
                return i;
            }
        }
        if self.is_mfma(ready[at]) == want_mfma {
            return at;
        }
        ready
            .iter()
            .rposition(|&k| {
                self.is_mfma(k) == want_mfma
                    && ok(k)
                    && (!want_mfma || self.ready_at[k] <= self.clock)
            })
            .unwrap_or(at)
    }

    /// Advances the clock past node `k`, issued now, and dates its successors' operands.
    fn issue(&mut self, k: usize, succs: &[usize]) {
        let mut start = self.clock.max(self.ready_at[k]);
        if self.is_mfma(k) {
            start = start.max(self.unit_free);
            self.unit_free = start + self.dag.matrix_busy[k] as u64;
            self.mfmas_left -= 1;
            self.vmem_since_mfma = false;
        } else if self.dag.vmem[k] {
            self.vmem_since_mfma = true;
        }
        for &s in succs {
            self.ready_at[s] = self.ready_at[s].max(start + self.dag.latency[k] as u64);
        }
        self.clock = start + ISSUE_TURN;
    }
}

//! Wait states: the `s_nop`s gfx9 requires between some pairs of instructions because the
//! hardware does not interlock them (the data the second reads is not ready, or the first still
//! reads what the second overwrites).
//!
//! Takes a [`PhysFunction`] after `InsertWaitcnt`; inserts `s_nop N` (N + 1 wait states, at most
//! 8 per `s_nop`) right before each instruction that needs more wait states than the
//! instructions since its producer provide. Every instruction counts as one wait state, `s_nop N`
//! as N + 1. Distances are tracked per register over the CFG to a fixed point; at a join the
//! smallest distance of any predecessor is kept, and branches are credited no wait state, so
//! block boundaries are counted conservatively.
//!
//! Rules (sources: AMD "Vega", "CDNA2" and "CDNA3" ISA manuals, "Manually Inserted Wait States";
//! LLVM `GCNHazardRecognizer`; ROCm rocRoller's wait-state observers, which tabulate the same
//! rules per architecture). "VALU" is any vector ALU instruction, MFMA included.
//!
//! | first instruction | second instruction | wait states | targets |
//! |---|---|---|---|
//! | VALU writes SGPR | VMEM reads that SGPR | 5 | all |
//! | VALU writes SGPR | `v_readlane`/`v_writelane` lane select | 4 | all |
//! | VALU writes VCC | `v_div_fmas` | 4 | all |
//! | VALU writes EXEC | DPP | 5 | all |
//! | VALU writes VGPR | DPP reads it | 2 | all |
//! | SALU writes M0 | `s_sendmsg`, GDS, LDS DMA (`lds` bit), `s_movrel` | 1 | all |
//! | `s_setreg` | `s_getreg`/`s_setreg` | 2 | all |
//! | store of more than 8 bytes (MUBUF without SGPR soffset, FLAT/global) | VALU writes its data VGPRs | 1 (2 on gfx942) | all |
//! | same store | other instruction writes its data VGPRs | 1 | all |
//! | MFMA rules: results read or overwritten by VALU/memory, read as SrcA/B/C; SrcC overwritten; VALU writes and EXEC before an MFMA; DGEMM before `v_fma_f64`; VALU → DGEMM → memory read (gfx90a) | | by pass count and class: [`mfma_hazards`] | gfx90a, gfx942 |
//! | VALU (`v_readlane`, `v_readfirstlane`, `v_cmp`, `v_add*`/`v_sub*`, `v_div_scale`) writes SGPR/VCC | VALU reads it as a constant (not as carry) | 2 | gfx942 |
//! | same | `v_readlane`/`v_writelane` lane select | 4 | gfx942 |
//! | VALU writes VGPR | `v_readlane`/`v_readfirstlane` reads it | 1 | gfx942 |
//! | `v_cmpx` writes EXEC | VALU reads EXEC explicitly | 2 | gfx942 |
//! | `v_cmpx` writes EXEC | `v_readlane`/`v_readfirstlane`/`v_writelane` | 4 | gfx942 |
//! | transcendental VALU writes VGPR | non-transcendental VALU reads it | 1 | gfx942 |
//! | VALU with SDWA `dst_sel` or VOP3 `op_sel` on the destination | VALU reads the result | 1 | gfx942 |
//!
//! Before padding, [`fill_m0_waits`] lets a neighbouring independent instruction fill the one
//! wait state between a SALU write of M0 and the LDS DMA after it (a load to LDS per buffer in a
//! pipelined loop would otherwise cost an `s_nop` each). While padding, a block that needs an
//! `s_nop` also tries filling it with an independent ALU instruction from a few places
//! further on ([`fill_block`]); the new order is kept where the block comes out shorter and
//! no register's last write at the block's end is nearer than before (so the successors'
//! entry states, found for the old order, still hold).
//!
//! The MFMA rules and their numbers live in [`mfma_hazards`] (shared with the software device's
//! checker); pass counts come from the opcode table. At a join, an MFMA record keeps the
//! producer with the longer waits ([`MfmaKind::worse`]). MFMA writes and non-MFMA VALU writes
//! keep separate stamps, and neither ends the other's window (as in LLVM).
//!
//! [`mfma_hazards`]: crate::mfma_hazards

use crate::isa::{name_facts, Encoding, Format, Inst, Opcode, Operand, Slot};
use crate::mfma_hazards::{self as mfma, Access, MfmaClass, MfmaKind};
use crate::phys::PhysFunction;
use crate::waitcnt::{units, UNITS};
use crate::Target;

const FAR: u8 = u8::MAX;
const NEVER: u32 = 0;
/// No rule needs more wait states than this.
const HORIZON: u32 = 64;
/// The clock value of normalized states (block entries).
const BASE: u32 = 1 << 16;
const V_BASE: usize = 128;
const EXEC: std::ops::Range<usize> = 126..128;
const VCC: std::ops::Range<usize> = 106..108;
const M0: usize = 124;

/// When the last event of each kind happened to one register unit, as stamps on the wait-state
/// clock ([`Dist::now`]; `NEVER`: long ago).
#[derive(Clone, Copy, PartialEq, Eq)]
struct UnitStamps {
    /// VALU wrote the scalar unit (any VALU).
    valu_sgpr: u32,
    /// VALU of the gfx942 SGPR-forwarding class wrote the scalar unit.
    valu_sgpr_fwd: u32,
    /// VALU wrote the vector unit.
    valu_vgpr: u32,
    /// Transcendental VALU wrote the vector unit.
    trans_vgpr: u32,
    /// VALU with a partial destination (SDWA dst_sel, op_sel dst) wrote the unit.
    dstsel_vgpr: u32,
    /// MFMA wrote the unit; with its kind and written range.
    mfma_write: u32,
    mfma_write_kind: MfmaKind,
    mfma_write_range: (u16, u16),
    /// MFMA read the unit as SrcC; with its kind.
    mfma_srcc: u32,
    mfma_srcc_kind: MfmaKind,
    /// A store of more than 8 bytes read the unit as data.
    wide_store: u32,
}

impl UnitStamps {
    const NONE: UnitStamps = UnitStamps {
        valu_sgpr: NEVER,
        valu_sgpr_fwd: NEVER,
        valu_vgpr: NEVER,
        trans_vgpr: NEVER,
        dstsel_vgpr: NEVER,
        mfma_write: NEVER,
        mfma_write_kind: MfmaKind {
            passes: 0,
            class: MfmaClass::Xdl,
        },
        mfma_write_range: (0, 0),
        mfma_srcc: NEVER,
        mfma_srcc_kind: MfmaKind {
            passes: 0,
            class: MfmaClass::Xdl,
        },
        wide_store: NEVER,
    };

    /// The stamps, for re-basing and joining.
    fn stamps_mut(&mut self) -> [&mut u32; 8] {
        [
            &mut self.valu_sgpr,
            &mut self.valu_sgpr_fwd,
            &mut self.valu_vgpr,
            &mut self.trans_vgpr,
            &mut self.dstsel_vgpr,
            &mut self.mfma_write,
            &mut self.mfma_srcc,
            &mut self.wide_store,
        ]
    }

    fn stamps(&self) -> [u32; 8] {
        [
            self.valu_sgpr,
            self.valu_sgpr_fwd,
            self.valu_vgpr,
            self.trans_vgpr,
            self.dstsel_vgpr,
            self.mfma_write,
            self.mfma_srcc,
            self.wide_store,
        ]
    }
}

/// When the last event of each kind happened, per register unit (one [`UnitStamps`] per unit
/// the function touches, in one vector: the fixed point clones and joins these states per
/// block), as a stamp on a wait-state clock (`now`; `NEVER`: long ago). The distance of an
/// event is `now - stamp`; distances of [`HORIZON`] or more do not matter to any rule and
/// count as `FAR`.
#[derive(PartialEq, Eq)]
struct Dist {
    now: u32,
    u: Vec<UnitStamps>,
    valu_exec: u32,
    cmpx_exec: u32,
    salu_m0: u32,
    setreg: u32,
    /// A DGEMM (`v_mfma_f64_*`) issued.
    dgemm: u32,
}

impl Clone for Dist {
    fn clone(&self) -> Dist {
        let mut d = Dist {
            u: Vec::new(),
            ..*self
        };
        d.u.extend_from_slice(&self.u);
        d
    }

    /// In `self`'s buffer: the fixed point loads each visited block's entry state into one
    /// working state instead of allocating a copy per visit.
    fn clone_from(&mut self, o: &Dist) {
        self.u.clear();
        self.u.extend_from_slice(&o.u);
        self.now = o.now;
        self.valu_exec = o.valu_exec;
        self.cmpx_exec = o.cmpx_exec;
        self.salu_m0 = o.salu_m0;
        self.setreg = o.setreg;
        self.dgemm = o.dgemm;
    }
}

impl Dist {
    fn new(k: usize) -> Dist {
        Dist {
            now: BASE,
            u: vec![UnitStamps::NONE; k],
            valu_exec: NEVER,
            cmpx_exec: NEVER,
            salu_m0: NEVER,
            setreg: NEVER,
            dgemm: NEVER,
        }
    }

    /// `n` wait states pass.
    fn advance(&mut self, n: u32) {
        self.now += n;
    }

    /// The distance of an event stamped `stamp`.
    fn at(&self, stamp: u32) -> u8 {
        if stamp == NEVER || self.now - stamp >= HORIZON {
            FAR
        } else {
            (self.now - stamp) as u8
        }
    }

    /// Puts the state on the clock [`BASE`] (so states of different blocks compare and merge).
    fn normalize(&mut self) {
        let now = self.now;
        let re = |x: u32| {
            if x == NEVER || now - x >= HORIZON {
                NEVER
            } else {
                BASE - (now - x)
            }
        };
        for u in &mut self.u {
            // Most units have no event within the horizon: nothing to re-base.
            if u.stamps().iter().all(|&x| x == NEVER) {
                continue;
            }
            for x in u.stamps_mut() {
                *x = re(*x);
            }
        }
        self.valu_exec = re(self.valu_exec);
        self.cmpx_exec = re(self.cmpx_exec);
        self.salu_m0 = re(self.salu_m0);
        self.setreg = re(self.setreg);
        self.dgemm = re(self.dgemm);
        self.now = BASE;
    }

    /// Whether the normalized state `self` has an event nearer than `o` (also normalized)
    /// within [`mfma::MAX_WAIT`] wait states, the most any rule asks (a farther event needs
    /// none), or MFMA records of other producers: where it has none, every instruction after
    /// `self` needs at most the wait states it needs after `o`.
    fn nearer_than(&self, o: &Dist) -> bool {
        let reach = mfma::MAX_WAIT as u32;
        let nearer = |x: u32, y: u32| x > y && BASE - x < reach;
        self.u.iter().zip(&o.u).any(|(a, b)| {
            a.stamps()
                .into_iter()
                .zip(b.stamps())
                .any(|(x, y)| nearer(x, y))
                || a.mfma_write_kind != b.mfma_write_kind
                || a.mfma_srcc_kind != b.mfma_srcc_kind
                || a.mfma_write_range != b.mfma_write_range
        }) || [
            (self.valu_exec, o.valu_exec),
            (self.cmpx_exec, o.cmpx_exec),
            (self.salu_m0, o.salu_m0),
            (self.setreg, o.setreg),
            (self.dgemm, o.dgemm),
        ]
        .into_iter()
        .any(|(x, y)| nearer(x, y))
    }

    /// Join of two normalized states: the smallest distance (latest stamp) of either path; for
    /// MFMA records, the producer with the longer waits. Whether `self` changed.
    fn merge(&mut self, o: &Dist) -> bool {
        let mut changed = false;
        for (a, b) in self.u.iter_mut().zip(&o.u) {
            // Equal on both paths (most units, often all `NONE`): the join is either.
            if *a == *b {
                continue;
            }
            let before = *a;
            for (x, y) in a.stamps_mut().into_iter().zip(b.stamps()) {
                *x = (*x).max(y);
            }
            a.mfma_write_kind = a.mfma_write_kind.worse(b.mfma_write_kind);
            a.mfma_srcc_kind = a.mfma_srcc_kind.worse(b.mfma_srcc_kind);
            if a.mfma_write_range != b.mfma_write_range {
                // Different producers on the two paths: no "same SrcC" exemption.
                a.mfma_write_range = (u16::MAX, 0);
            }
            changed |= *a != before;
        }
        let before = [
            self.valu_exec,
            self.cmpx_exec,
            self.salu_m0,
            self.setreg,
            self.dgemm,
        ];
        self.valu_exec = self.valu_exec.max(o.valu_exec);
        self.cmpx_exec = self.cmpx_exec.max(o.cmpx_exec);
        self.salu_m0 = self.salu_m0.max(o.salu_m0);
        self.setreg = self.setreg.max(o.setreg);
        self.dgemm = self.dgemm.max(o.dgemm);
        changed
            || before
                != [
                    self.valu_exec,
                    self.cmpx_exec,
                    self.salu_m0,
                    self.setreg,
                    self.dgemm,
                ]
    }
}

fn is_valu(inst: &Inst) -> bool {
    matches!(
        inst.op.format(),
        Format::Vop1 | Format::Vop2 | Format::Vopc | Format::Vop3 | Format::Vop3p
    )
}

fn is_salu(inst: &Inst) -> bool {
    matches!(
        inst.op.format(),
        Format::Sop1 | Format::Sop2 | Format::Sopk | Format::Sopc
    )
}

fn is_mem(inst: &Inst) -> bool {
    matches!(
        inst.op.format(),
        Format::Mubuf
            | Format::Mtbuf
            | Format::Flat
            | Format::Global
            | Format::Scratch
            | Format::Ds
    )
}

fn is_vmem(inst: &Inst) -> bool {
    matches!(
        inst.op.format(),
        Format::Mubuf | Format::Mtbuf | Format::Flat | Format::Global | Format::Scratch
    )
}

/// Reads M0 in a way that needs a wait state after a SALU writes it.
fn is_m0_reader(inst: &Inst) -> bool {
    op_facts(inst.op) & op_bits::M0_NAME != 0 || is_m0_reader_by_mods(inst)
}

/// The part of [`is_m0_reader`] the modifiers decide: GDS and buffer-to-LDS accesses.
fn is_m0_reader_by_mods(inst: &Inst) -> bool {
    (inst.op.format() == Format::Ds && inst.mods.gds)
        || (matches!(inst.op.format(), Format::Mubuf) && inst.mods.lds)
}

fn is_mfma(inst: &Inst) -> bool {
    inst.info().is_mfma()
}

fn is_lane_op(inst: &Inst) -> bool {
    matches!(inst.op, Opcode::VReadlaneB32 | Opcode::VWritelaneB32)
}

fn is_cmpx(inst: &Inst) -> bool {
    op_facts(inst.op) & op_bits::CMPX != 0
}

/// gfx942's class of VALU SGPR writers whose result is forwarded late (CDNA3 ISA, wait states).
fn is_sgpr_fwd_name(n: &str) -> bool {
    n.starts_with("v_readlane")
        || n.starts_with("v_readfirstlane")
        || n.starts_with("v_cmp")
        || n.starts_with("v_add")
        || n.starts_with("v_sub")
        || n.starts_with("v_div_scale")
}

fn is_trans_name(name: &str) -> bool {
    const TRANS: [&str; 20] = [
        "v_exp_f32",
        "v_log_f32",
        "v_rcp_f32",
        "v_rcp_iflag_f32",
        "v_rsq_f32",
        "v_rcp_f64",
        "v_rsq_f64",
        "v_sqrt_f32",
        "v_sqrt_f64",
        "v_sin_f32",
        "v_cos_f32",
        "v_rcp_f16",
        "v_sqrt_f16",
        "v_rsq_f16",
        "v_log_f16",
        "v_exp_f16",
        "v_sin_f16",
        "v_cos_f16",
        "v_exp_legacy_f32",
        "v_log_legacy_f32",
    ];
    TRANS.contains(&name)
}

/// Whether a VALU writes only part of its destination (gfx942 forwarding hazard).
fn has_partial_dst(inst: &Inst) -> bool {
    (inst.encoding == Encoding::Sdwa && inst.mods.sdwa.dst_sel != 6)
        || ((inst.op.format() == Format::Vop3 || inst.encoding == Encoding::E64)
            && inst.mods.op_sel & 0b1000 != 0)
}

/// Registers and roles an instruction touches: `(unit, slot, reads, writes)`.
fn accesses(inst: &Inst) -> Accesses {
    let mut out = Accesses::new();
    for (o, oi) in inst.operands.iter().zip(inst.operand_infos()) {
        let (r, w) = (oi.access.reads(), oi.access.writes());
        if !r && !w {
            continue;
        }
        for u in units(o) {
            out.push((u as u16, oi.slot, r, w));
        }
    }
    out
}

/// `(unit, slot, reads, writes)` per register unit an instruction touches; units as `u16`
/// (there are [`UNITS`]), so that eight fit in the [`Facts`] made for every instruction
/// without the wide entries' copies.
type Accesses = smallvec::SmallVec<[(u16, Slot, bool, bool); 8]>;

/// What the rules look at in one instruction, computed once per instruction (the fixed point
/// visits blocks several times; names and operand tables are not re-read on each visit).
struct Facts {
    acc: Accesses,
    valu: bool,
    salu: bool,
    mfma: bool,
    vmem: bool,
    mem: bool,
    dpp: bool,
    lane_op: bool,
    /// `v_addc`/`v_subb`-style: its VCC/src2 operand is a carry-in, not a constant read.
    carry_op: bool,
    readlane_vgpr: bool,
    rw_lane_any: bool,
    trans: bool,
    fwd: bool,
    cmpx: bool,
    partial: bool,
    div_fmas: bool,
    m0_reader: bool,
    getset: bool,
    setreg: bool,
    /// The MFMA's kind on the target (`None`: not an MFMA).
    kind: Option<MfmaKind>,
    fma64: bool,
    dst_range: Option<(u16, u16)>,
    srcc_range: Option<std::ops::Range<usize>>,
    wide: Option<Vec<usize>>,
    wait_states: u32,
}

/// Bits of [`op_facts`]: what a hazard rule asks of the mnemonic alone.
mod op_bits {
    pub const TRANS: u16 = 1 << 0;
    pub const FWD: u16 = 1 << 1;
    pub const CMPX: u16 = 1 << 2;
    pub const GETSET: u16 = 1 << 3;
    pub const SETREG: u16 = 1 << 4;
    /// `s_sendmsg*` / `s_movrel*`: reads M0 whatever its modifiers.
    pub const M0_NAME: u16 = 1 << 5;
    pub const FMA64: u16 = 1 << 6;
    /// The entry is filled in.
    pub const KNOWN: u16 = 1 << 15;
}

/// The [`op_bits`] of `op`, worked out from its mnemonic the first time an instruction with it
/// is looked at (the tests compare strings, up to 20 per instruction; [`Facts::of`] runs for
/// every instruction of every compile).
fn op_facts(op: Opcode) -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static FACTS: [AtomicU16; crate::isa::OPCODE_COUNT] =
        [const { AtomicU16::new(0) }; crate::isa::OPCODE_COUNT];
    let slot = &FACTS[op as usize];
    let known = slot.load(Ordering::Relaxed);
    if known & op_bits::KNOWN != 0 {
        return known;
    }
    let name = op.name();
    let salu = matches!(
        op.format(),
        Format::Sop1 | Format::Sop2 | Format::Sopk | Format::Sopc
    );
    let mut bits = op_bits::KNOWN;
    for (on, bit) in [
        (is_trans_name(name), op_bits::TRANS),
        (is_sgpr_fwd_name(name), op_bits::FWD),
        (name.starts_with("v_cmpx_"), op_bits::CMPX),
        (
            name.starts_with("s_getreg") || name.starts_with("s_setreg"),
            op_bits::GETSET,
        ),
        (salu && name.starts_with("s_setreg"), op_bits::SETREG),
        (
            name.starts_with("s_sendmsg") || name.starts_with("s_movrel"),
            op_bits::M0_NAME,
        ),
        (mfma::is_fma_f64(op), op_bits::FMA64),
    ] {
        if on {
            bits |= bit;
        }
    }
    slot.store(bits, Ordering::Relaxed);
    bits
}

impl Facts {
    fn of(inst: &Inst, target: Target) -> Facts {
        let mfma = is_mfma(inst);
        let ops = op_facts(inst.op);
        let has = |bit: u16| ops & bit != 0;
        let mut dst_range = None;
        let mut srcc_range = None;
        if mfma {
            if let Some((o, _)) = inst
                .operands
                .iter()
                .zip(inst.operand_infos())
                .find(|(_, oi)| oi.access.writes())
            {
                let r = units(o);
                dst_range = Some((r.start as u16, r.len() as u16));
            }
            srcc_range = inst
                .operands
                .iter()
                .zip(inst.operand_infos())
                .find(|(_, oi)| oi.slot == Slot::Src2)
                .map(|(o, _)| units(o));
        }
        Facts {
            acc: accesses(inst),
            valu: is_valu(inst),
            salu: is_salu(inst),
            mfma,
            vmem: is_vmem(inst),
            mem: is_mem(inst),
            dpp: inst.encoding == Encoding::Dpp,
            lane_op: is_lane_op(inst),
            carry_op: inst.op.name_has(name_facts::CARRY_IN),
            readlane_vgpr: matches!(inst.op, Opcode::VReadlaneB32 | Opcode::VReadfirstlaneB32),
            rw_lane_any: matches!(
                inst.op,
                Opcode::VReadlaneB32 | Opcode::VReadfirstlaneB32 | Opcode::VWritelaneB32
            ),
            trans: has(op_bits::TRANS),
            fwd: has(op_bits::FWD),
            cmpx: has(op_bits::CMPX),
            partial: has_partial_dst(inst),
            div_fmas: inst.op == Opcode::VDivFmasF32 || inst.op == Opcode::VDivFmasF64,
            m0_reader: has(op_bits::M0_NAME) || is_m0_reader_by_mods(inst),
            getset: has(op_bits::GETSET),
            setreg: has(op_bits::SETREG),
            kind: if mfma {
                MfmaKind::of(inst.op, target)
            } else {
                None
            },
            fma64: has(op_bits::FMA64),
            dst_range,
            srcc_range,
            wide: wide_store_data(inst),
            wait_states: wait_states(inst),
        }
    }
}

fn need(dist: u8, required: u32) -> u32 {
    if dist == FAR {
        0
    } else {
        required.saturating_sub(dist as u32)
    }
}

/// Wait states `inst` still needs given `d`.
fn required(d: &Dist, map: &[u32], f: &Facts, target: Target) -> u32 {
    let cdna = target != Target::Gfx900;
    let gfx942 = target == Target::Gfx942;
    let valu = f.valu;
    let mfma = f.mfma;
    let vmem = f.vmem;
    let mem = f.mem;
    let dpp = f.dpp;
    let acc = &f.acc;
    let mut n = 0u32;
    // MFMA SrcC operand range (for the "same range" exemption).
    let srcc_range = f.srcc_range.clone();
    for &(u, slot, reads, writes) in acc.iter() {
        let u = u as usize;
        let c = map[u] as usize;
        if u < V_BASE {
            // Scalar units.
            if reads {
                if vmem {
                    n = n.max(need(d.at(d.u[c].valu_sgpr), 5));
                }
                if f.lane_op && slot == Slot::Src1 {
                    n = n.max(need(d.at(d.u[c].valu_sgpr), 4));
                    if gfx942 {
                        n = n.max(need(d.at(d.u[c].valu_sgpr_fwd), 4));
                    }
                }
                if gfx942 && valu && !(f.carry_op && matches!(slot, Slot::Vcc | Slot::Src2)) {
                    n = n.max(need(d.at(d.u[c].valu_sgpr_fwd), 2));
                }
                if gfx942 && valu && EXEC.contains(&u) {
                    n = n.max(need(d.at(d.cmpx_exec), 2));
                }
            }
            continue;
        }
        // Vector units.
        if reads {
            if dpp && slot == Slot::Src0 {
                n = n.max(need(d.at(d.u[c].valu_vgpr), 2));
            }
            if cdna && mfma {
                n = n.max(need(
                    d.at(d.u[c].valu_vgpr),
                    mfma::VALU_WRITE_TO_MFMA_READ as u32,
                ));
            }
            if target == Target::Gfx90a && mem && d.dgemm > d.u[c].valu_vgpr {
                n = n.max(need(
                    d.at(d.u[c].valu_vgpr),
                    mfma::GFX90A_VALU_DGEMM_MEM_READ as u32,
                ));
            }
            if gfx942 && f.readlane_vgpr {
                n = n.max(need(d.at(d.u[c].valu_vgpr), 1));
            }
            if gfx942 && valu && !f.trans {
                n = n.max(need(d.at(d.u[c].trans_vgpr), 1));
            }
            if gfx942 && valu {
                n = n.max(need(d.at(d.u[c].dstsel_vgpr), 1));
            }
        }
        if cdna && d.at(d.u[c].mfma_write) != FAR {
            let producer = d.u[c].mfma_write_kind;
            let req = match (f.kind, reads, writes) {
                (Some(consumer), true, _) if slot == Slot::Src2 => {
                    let exact = srcc_range.as_ref().is_some_and(|r| {
                        let (lo, len) = d.u[c].mfma_write_range;
                        r.start == lo as usize && r.len() == len as usize
                    });
                    mfma::mfma_srcc_after_mfma(producer, consumer, exact, target)
                }
                (Some(_), true, _) => mfma::mfma_srcab_after_mfma(producer, target),
                // (An MFMA's own write of an MFMA result is ordered by the matrix pipeline.)
                (Some(_), false, _) => 0,
                (None, true, _) if mem => mfma::after_mfma_write(producer, Access::MemRead, target),
                (None, true, _) if valu => {
                    mfma::after_mfma_write(producer, Access::ValuRead, target)
                }
                (None, _, true) if valu || mem => {
                    mfma::after_mfma_write(producer, Access::Write, target)
                }
                _ => 0,
            };
            n = n.max(need(d.at(d.u[c].mfma_write), req as u32));
            if f.kind.is_none() && reads && writes && (valu || mem) {
                // Read and overwritten at once: the larger of the two.
                let w = mfma::after_mfma_write(producer, Access::Write, target);
                n = n.max(need(d.at(d.u[c].mfma_write), w as u32));
            }
        }
        if writes {
            if cdna && (valu || mem) && !mfma && d.at(d.u[c].mfma_srcc) != FAR {
                let w = mfma::write_after_srcc_read(d.u[c].mfma_srcc_kind, target);
                n = n.max(need(d.at(d.u[c].mfma_srcc), w as u32));
            }
            let wide = if valu && gfx942 { 2 } else { 1 };
            n = n.max(need(d.at(d.u[c].wide_store), wide));
        }
    }
    if f.div_fmas {
        for u in VCC {
            let c = map[u] as usize;
            n = n.max(need(d.at(d.u[c].valu_sgpr), 4));
        }
    }
    if dpp {
        n = n.max(need(d.at(d.valu_exec), 5));
    }
    if cdna && mfma {
        n = n.max(need(d.at(d.valu_exec), mfma::VALU_EXEC_TO_MFMA as u32));
    }
    if cdna && f.fma64 {
        n = n.max(need(d.at(d.dgemm), mfma::DGEMM_TO_FMA_F64 as u32));
    }
    if gfx942 && f.rw_lane_any {
        n = n.max(need(d.at(d.cmpx_exec), 4));
    }
    let m0_reader = f.m0_reader;
    if m0_reader {
        n = n.max(need(d.at(d.salu_m0), 1));
    }
    if f.getset {
        n = n.max(need(d.at(d.setreg), 2));
    }
    n
}

/// Whether a store reads more than 8 bytes of data and is exposed to the overwrite hazard.
fn wide_store_data(inst: &Inst) -> Option<Vec<usize>> {
    let fmt = inst.op.format();
    if !matches!(
        fmt,
        Format::Mubuf | Format::Mtbuf | Format::Flat | Format::Global | Format::Scratch
    ) {
        return None;
    }
    let infos = inst.operand_infos();
    let mut data = Vec::new();
    let mut soffset_sgpr = false;
    for (o, oi) in inst.operands.iter().zip(infos) {
        match oi.slot {
            Slot::Vdata | Slot::Data0
                if oi.access == crate::isa::Access::R && o.reg_count() > 2 =>
            {
                data.extend(units(o));
            }
            Slot::Soffset => soffset_sgpr = matches!(o, Operand::Sgpr { .. }),
            _ => {}
        }
    }
    if data.is_empty() || (matches!(fmt, Format::Mubuf | Format::Mtbuf) && soffset_sgpr) {
        return None;
    }
    Some(data)
}

/// Records what `inst` produces (after the wait states it needed have passed).
fn record(d: &mut Dist, map: &[u32], f: &Facts) {
    let valu = f.valu;
    let now = d.now;
    let mfma = f.mfma;
    let kind = f.kind.unwrap_or_default();
    let dst_range = f.dst_range;
    for &(u, slot, reads, writes) in f.acc.iter() {
        let u = u as usize;
        let c = map[u] as usize;
        if writes && valu {
            if u < V_BASE {
                d.u[c].valu_sgpr = now;
                if f.fwd {
                    d.u[c].valu_sgpr_fwd = now;
                }
                if EXEC.contains(&u) {
                    d.valu_exec = now;
                    if f.cmpx {
                        d.cmpx_exec = now;
                    }
                }
            } else {
                d.u[c].trans_vgpr = if f.trans { now } else { NEVER };
                d.u[c].dstsel_vgpr = if f.partial { now } else { NEVER };
                // An MFMA write and a VALU write keep their own stamps: a later write of the
                // other kind does not end a rule's window (LLVM's `getWaitStatesSinceDef`
                // looks back for the last def of that kind, over any defs in between), so a
                // store of a register a `v_mov` refilled right after an MFMA wrote it still
                // waits out the MFMA's memory-read rule.
                if mfma {
                    d.u[c].mfma_write = now;
                    d.u[c].mfma_write_kind = kind;
                    d.u[c].mfma_write_range = dst_range.unwrap_or((u16::MAX, 0));
                } else {
                    d.u[c].valu_vgpr = now;
                }
            }
        }
        if writes && f.salu && u == M0 {
            d.salu_m0 = now;
        }
        if reads && mfma && slot == Slot::Src2 && u >= V_BASE {
            d.u[c].mfma_srcc = now;
            d.u[c].mfma_srcc_kind = kind;
        }
    }
    // `v_cmpx` on the 32-bit encoding writes EXEC implicitly (not an operand in every form).
    if valu && f.cmpx {
        d.valu_exec = now;
        d.cmpx_exec = now;
    }
    if f.setreg {
        d.setreg = now;
    }
    if f.kind.is_some_and(|k| k.class == MfmaClass::Dgemm) {
        d.dgemm = now;
    }
    if let Some(units) = &f.wide {
        for &u in units {
            d.u[map[u] as usize].wide_store = now;
        }
    }
}

/// Wait states an instruction provides.
fn wait_states(inst: &Inst) -> u32 {
    if inst.op == Opcode::SNop {
        match inst.operands.first() {
            Some(Operand::Imm(v)) => (*v as u32 & 0xf) + 1,
            _ => 1,
        }
    } else {
        1
    }
}

/// `s_nop`s giving `n` wait states (at most 8 each).
fn nops(mut n: u32) -> Vec<Inst> {
    let mut out = Vec::new();
    while n > 0 {
        let k = n.min(8);
        out.push(Inst::new(Opcode::SNop, &[Operand::Imm(k as i64 - 1)]));
        n -= k;
    }
    out
}

/// Appends `n` wait states to `o`. Right after an `s_nop` (one made before, or padding of the
/// function again), that one grows first: the same wait states in fewer instructions.
fn pad(o: &mut Vec<Inst>, n: u32) {
    let mut left = n;
    if let Some(last) = o.last_mut().filter(|i| i.op == Opcode::SNop) {
        let have = wait_states(last);
        let grow = left.min(8u32.saturating_sub(have));
        if grow > 0 {
            *last = Inst::new(Opcode::SNop, &[Operand::Imm((have + grow) as i64 - 1)]);
            left -= grow;
        }
    }
    o.extend(nops(left));
}

/// Where one block's instructions need wait states, from a run: (instruction index, wait
/// states before it), in order.
type Needs = Vec<(u32, u32)>;

/// Runs one block (its instructions in order, with their facts) from `d`; with `out`,
/// materializes the `s_nop`s; with `needs`, notes where they go ([`Needs`]). Returns wait
/// states added.
fn run_block<'a>(
    d: &mut Dist,
    map: &[u32],
    block: impl IntoIterator<Item = (&'a Facts, &'a Inst)>,
    target: Target,
    mut out: Option<&mut Vec<Inst>>,
    mut needs: Option<&mut Needs>,
) -> u32 {
    let mut added = 0;
    for (k, (f, inst)) in block.into_iter().enumerate() {
        let n = required(d, map, f, target);
        if n > 0 {
            added += n;
            d.advance(n);
            if let Some(o) = out.as_deref_mut() {
                pad(o, n);
            }
            if let Some(x) = needs.as_deref_mut() {
                x.push((k as u32, n));
            }
        }
        d.advance(f.wait_states);
        record(d, map, f);
        if let Some(o) = out.as_deref_mut() {
            o.push(inst.clone());
        }
    }
    added
}

/// `insts` with the `s_nop`s `needs` places (what [`run_block`] with `out` makes from the
/// state that found them).
fn padded(insts: &[Inst], needs: &Needs) -> Vec<Inst> {
    let mut out = Vec::with_capacity(insts.len() + needs.len() + 4);
    let mut next = needs.iter().peekable();
    for (k, inst) in insts.iter().enumerate() {
        if let Some(&(_, n)) = next.next_if(|x| x.0 as usize == k) {
            pad(&mut out, n);
        }
        out.push(inst.clone());
    }
    out
}

/// An instruction that may change places with a neighbour to fill a wait state: a plain VALU
/// or SALU instruction (no memory, control, lane, DPP, MFMA, EXEC or M0 side effects beyond its
/// operands).
fn is_plain_filler(inst: &Inst) -> bool {
    is_plain_filler_with(inst, &accesses(inst))
}

/// [`is_plain_filler`] given `inst`'s [`accesses`].
fn is_plain_filler_with(inst: &Inst, acc: &Accesses) -> bool {
    let name = inst.op.name();
    let plain_valu = is_valu(inst)
        && !is_mfma(inst)
        && !is_lane_op(inst)
        && !is_cmpx(inst)
        && inst.encoding != Encoding::Dpp
        && !matches!(inst.op, Opcode::VReadfirstlaneB32)
        && !inst.op.name_has(name_facts::MOVREL)
        && !inst.op.name_has(name_facts::INTERP);
    let plain_salu = is_salu(inst)
        && !inst.op.name_has(name_facts::EXEC)
        && !inst.op.name_has(name_facts::MOVREL)
        && !name.starts_with("s_setreg")
        && !name.starts_with("s_getreg");
    (plain_valu || plain_salu) && !acc.iter().any(|&(u, ..)| u as usize == M0)
}

/// Instructions that neither read nor write SCC: every VALU, and the SALU moves.
fn keeps_scc(inst: &Inst) -> bool {
    is_valu(inst)
        || matches!(
            inst.op,
            Opcode::SMovB32 | Opcode::SMovB64 | Opcode::SMovkI32
        )
}

/// SALU instructions that read SCC (a carry or a condition).
fn reads_scc(inst: &Inst) -> bool {
    let name = inst.op.name();
    ["s_cselect", "s_addc", "s_subb", "s_cmov"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// Whether `a` writes a register unit `b` touches, or reads one `b` writes.
fn conflicts(a: &Inst, b: &Inst) -> bool {
    conflicts_in(
        &real_accesses(a, accesses(a)),
        &real_accesses(b, accesses(b)),
    )
}

/// `i`'s accesses `acc` ([`accesses`]) as [`conflicts`] sees them: a load to LDS names a data
/// VGPR it does not write.
fn real_accesses(i: &Inst, mut acc: Accesses) -> Accesses {
    if is_vmem(i) && i.mods.lds {
        for x in acc.iter_mut().filter(|x| x.0 as usize >= V_BASE) {
            x.3 = false;
        }
    }
    acc
}

/// [`conflicts`] of two instructions given their [`real_accesses`].
fn conflicts_in(aa: &Accesses, bb: &Accesses) -> bool {
    aa.iter().any(|&(u, _, r, w)| {
        bb.iter()
            .any(|&(v, _, r2, w2)| u == v && ((w && (r2 || w2)) || (r && w2)))
    })
}

/// Fills the one wait state between a SALU write of M0 and the LDS DMA (or other M0 reader)
/// right after it with a neighbouring instruction instead of an `s_nop`: the plain instruction
/// just before the write moves after it, or else the plain instruction just after the reader
/// moves before it. Only the order of the two instructions that trade places changes, so the
/// check is that they touch no register the other writes. SCC too: the M0 writes
/// (`isel/lds_dma.rs`: `s_mov_b32`, `s_lshl2_add_u32`) read none and the SCC they leave is
/// read by nothing (every SCC reader follows its own producer, which the scheduler keeps
/// after any other SCC write), so a SALU filler that reads no SCC may trade places with one:
/// the SCC after the pair is then the filler's, equally unread. The wait-state pass runs after
/// this and still inserts whatever the new order needs. Returns the number of gaps filled.
fn fill_m0_waits(f: &mut PhysFunction) -> usize {
    let mut filled = 0;
    for b in &mut f.blocks {
        let insts = &mut b.insts;
        let mut k = 1;
        while k < insts.len() {
            let (w, l) = (&insts[k - 1], &insts[k]);
            let writes_m0 = || {
                is_salu(w)
                    && accesses(w)
                        .iter()
                        .any(|&(u, _, _, wr)| u as usize == M0 && wr)
            };
            if !(is_m0_reader(l) && writes_m0()) {
                k += 1;
                continue;
            }
            if k >= 2
                && (keeps_scc(&insts[k - 2]) || is_salu(&insts[k - 2]) && !reads_scc(&insts[k - 2]))
                && !reads_scc(&insts[k - 1])
                && is_plain_filler(&insts[k - 2])
                && !conflicts(&insts[k - 2], &insts[k - 1])
            {
                insts.swap(k - 2, k - 1);
                filled += 1;
                k += 1;
                continue;
            }
            if k + 1 < insts.len()
                && is_plain_filler(&insts[k + 1])
                && !conflicts(&insts[k + 1], &insts[k])
            {
                insts.swap(k, k + 1);
                filled += 1;
                k += 2;
                continue;
            }
            k += 1;
        }
    }
    filled
}

/// Inserts the `s_nop`s `f` needs (see the module docs); returns the wait states added.
pub fn insert_wait_states(f: &mut PhysFunction) -> u32 {
    fill_m0_waits(f);
    let target = f.abi.target;
    let n = f.blocks.len();
    if n == 0 {
        return 0;
    }
    // The register units the function touches, numbered densely: the tables are that long.
    let mut map = vec![u32::MAX; UNITS];
    let mut k = 0usize;
    let mut number = |u: usize, map: &mut Vec<u32>| {
        if map[u] == u32::MAX {
            map[u] = k as u32;
            k += 1;
        }
    };
    for u in VCC.chain(EXEC).chain(std::iter::once(M0)) {
        number(u, &mut map);
    }
    let facts: Vec<Vec<Facts>> = f
        .blocks
        .iter()
        .map(|b| b.insts.iter().map(|i| Facts::of(i, target)).collect())
        .collect();
    for b in &facts {
        for x in b {
            for &(u, ..) in x.acc.iter() {
                number(u as usize, &mut map);
            }
        }
    }
    let k = k;
    // Entry states are normalized (clock at BASE).
    let mut entry: Vec<Option<Dist>> = vec![None; n];
    entry[0] = Some(Dist::new(k));
    let mut queued = vec![false; n];
    // Per block: the wait states its last visit counted. A change of its entry state queues
    // the block again, so the last visit ran from the final entry state.
    let mut counted: Vec<Option<u32>> = vec![None; n];
    // Per block: where its last visit placed wait states (the `s_nop`s are made from these,
    // without running the block again).
    let mut needs: Vec<Needs> = vec![Vec::new(); n];
    let mut work = std::collections::VecDeque::from([0usize]);
    queued[0] = true;
    let fresh = Dist::new(k);
    let mut d = fresh.clone();
    while let Some(b) = work.pop_front() {
        queued[b] = false;
        d.clone_from(entry[b].as_ref().unwrap_or(&fresh));
        needs[b].clear();
        counted[b] = Some(run_block(
            &mut d,
            &map,
            facts[b].iter().zip(&f.blocks[b].insts),
            target,
            None,
            Some(&mut needs[b]),
        ));
        d.normalize();
        for s in f.blocks[b].term.successors() {
            let si = s.as_u32() as usize;
            if si >= n {
                continue;
            }
            let changed = match &mut entry[si] {
                Some(e) => e.merge(&d),
                slot @ None => {
                    *slot = Some(d.clone());
                    true
                }
            };
            if changed && !queued[si] {
                queued[si] = true;
                work.push_back(si);
            }
        }
    }
    let mut total = 0;
    // The filled order of a block, as indices into its instructions.
    let mut order = Vec::new();
    for (b, block) in f.blocks.iter_mut().enumerate() {
        let d0 = || entry[b].clone().unwrap_or_else(|| fresh.clone());
        let facts = &facts[b];
        // A reached block's count and places are its last visit's; an unreached block runs
        // once from nothing. The block is rebuilt only when it needs an `s_nop`.
        let needed = match counted[b] {
            Some(c) => c,
            None => run_block(
                &mut d0(),
                &map,
                facts.iter().zip(&block.insts),
                target,
                None,
                Some(&mut needs[b]),
            ),
        };
        if needed == 0 {
            continue;
        }
        let mut out = padded(&block.insts, &needs[b]);
        let mut waits = needed;
        // The block's `s_nop`s filled by later instructions where that is shorter and leaves
        // no write nearer the block's end than the old order did (the successors' entry
        // states, and so their padding, then still hold).
        if fill_block(&mut d0(), &map, facts, &block.insts, &mut order, target) > 0 {
            let mut d = d0();
            run_block(
                &mut d,
                &map,
                facts.iter().zip(&block.insts),
                target,
                None,
                None,
            );
            let mut filled_end = d0();
            let mut filled = Vec::with_capacity(block.insts.len() + 4);
            let filled_waits = run_block(
                &mut filled_end,
                &map,
                order.iter().map(|&i| (&facts[i], &block.insts[i])),
                target,
                Some(&mut filled),
                None,
            );
            d.normalize();
            filled_end.normalize();
            if filled.len() < out.len() && !filled_end.nearer_than(&d) {
                out = filled;
                waits = filled_waits;
            }
        }
        total += waits;
        block.insts = out;
    }
    total
}

/// Instructions after the one that needs wait states searched for one to fill them.
const FILL_WINDOW: usize = 32;

/// Fills wait states in one block (entry state `d`) with a later instruction of the block
/// instead of `s_nop`s: on gfx942 a VALU result read next by a `v_readfirstlane_b32`, or a
/// transcendental's by another VALU, is one wait state short, and an independent instruction
/// a few places behind the reader often exists (stencil_pipelined's tile divisor, made by
/// `v_rcp_iflag_f32` and read back by `v_readfirstlane_b32` among the prologue's scalar
/// set-up; softmax's `1 / sum`). The filler `x`, at most [`FILL_WINDOW`] places behind the
/// reader `r`, moves up to just before `r` when it is a plain ALU instruction
/// ([`is_plain_filler`]) that needs no wait state itself there and, for `r` and each
/// instruction it passes ([`may_pass`]), neither writes a register the other touches nor
/// reads one the other writes, neither writes EXEC, and only one of the two touches SCC. The
/// passed instructions after `r` are ALU instructions, so no `s_waitcnt` is passed: every wait
/// before `x` stays before it. The new order goes to `order` (indices into `insts`, whose
/// [`Facts`] are `facts`); returns the moves made.
fn fill_block(
    d: &mut Dist,
    map: &[u32],
    facts: &[Facts],
    insts: &[Inst],
    order: &mut Vec<usize>,
    target: Target,
) -> usize {
    // What the search asks of an instruction, made once for each instruction in a window
    // searched (it compares every candidate filler with each instruction it would pass), and
    // only there: most instructions need no wait state and are never searched around.
    let mut fill: Vec<Option<FillFacts>> = Vec::new();
    fill.resize_with(insts.len(), || None);
    order.clear();
    order.extend(0..insts.len());
    let mut moved = 0;
    let mut k = 0;
    while k < order.len() {
        let fr = &facts[order[k]];
        let mut n = required(d, map, fr, target);
        while n > 0 {
            let end = order.len().min(k + 1 + FILL_WINDOW);
            for &i in &order[k..end] {
                if fill[i].is_none() {
                    fill[i] = Some(FillFacts::of(&insts[i], &facts[i]));
                }
            }
            let known = |i: usize| fill[i].as_ref().expect("made for the window");
            let mut pick = None;
            for j in k + 1..end {
                let x = known(order[j]);
                if x.plain
                    && !x.writes_exec
                    && order[k..j].iter().all(|&p| may_pass(x, known(p)))
                    && required(d, map, &facts[order[j]], target) == 0
                {
                    pick = Some(j);
                    break;
                }
                // Only ALU instructions are passed (no wait, memory access or control).
                if !x.alu {
                    break;
                }
            }
            let Some(j) = pick else { break };
            let x = order.remove(j);
            let fx = &facts[x];
            d.advance(fx.wait_states);
            record(d, map, fx);
            order.insert(k, x);
            k += 1;
            moved += 1;
            n = required(d, map, fr, target);
        }
        d.advance(n);
        d.advance(fr.wait_states);
        record(d, map, fr);
        k += 1;
    }
    moved
}

/// What [`fill_block`] asks of one instruction.
struct FillFacts {
    /// [`is_plain_filler`].
    plain: bool,
    /// A VALU or SALU instruction (every plain filler is one).
    alu: bool,
    /// [`writes_exec`].
    writes_exec: bool,
    /// Neither reads nor writes SCC.
    no_scc: bool,
    /// [`real_accesses`], for [`conflicts_in`].
    real: Accesses,
}

impl FillFacts {
    fn of(inst: &Inst, f: &Facts) -> FillFacts {
        FillFacts {
            plain: is_plain_filler_with(inst, &f.acc),
            alu: f.valu || f.salu,
            writes_exec: writes_exec(inst, &f.acc),
            no_scc: keeps_scc(inst) && !reads_scc(inst),
            real: real_accesses(inst, f.acc.clone()),
        }
    }
}

/// Whether the plain ALU instruction `x`, which writes no EXEC (checked once per filler by the
/// caller), may move from after `p` to before it: no register dependence either way
/// ([`conflicts`]), no EXEC write by `p` (every VALU reads EXEC), and SCC touched by at most
/// one of them.
fn may_pass(x: &FillFacts, p: &FillFacts) -> bool {
    (x.no_scc || p.no_scc) && !p.writes_exec && !conflicts_in(&x.real, &p.real)
}

/// Whether `i` (with its [`accesses`] `acc`) writes EXEC: as an operand, or `v_cmpx`'s implicit
/// write.
fn writes_exec(i: &Inst, acc: &Accesses) -> bool {
    is_cmpx(i)
        || acc
            .iter()
            .any(|&(u, _, _, w)| w && EXEC.contains(&(u as usize)))
}

//! Wait states: the pairs of instructions gfx9 does not interlock, where the second must come a
//! number of *wait states* after the first (every issued instruction is one, `s_nop N` is N + 1).
//! A compiler inserts `s_nop`s for them; the device checks that it did, per wave, on the
//! instructions the wave actually executes, and reports a [`EmuError::Hazard`] naming the rule
//! and the missing `s_nop` when one comes too early.
//!
//! Takes each decoded instruction once ([`WaitRules::of`]: what it produces, what it needs);
//! gives a per-wave clock ([`WaitClock`]) that stamps every register a producer writes and checks
//! the stamps of the registers a consumer reads.
//!
//! Rules (facts from LLVM 19's `GCNHazardRecognizer` and the CDNA3 ISA "manually inserted wait
//! states" table; this is an independent implementation from the compiler's `hazards` pass,
//! which it checks):
//!
//! | first | second | wait states | targets |
//! |---|---|---|---|
//! | VALU writes SGPR/VCC | VMEM reads it (resource, offset, saddr) | 5 | all |
//! | VALU writes SGPR/VCC | `v_readlane`/`v_writelane` lane select | 4 | all |
//! | VALU writes VCC | `v_div_fmas` | 4 | all |
//! | VALU writes VGPR | DPP reads it | 2 | all |
//! | VALU writes EXEC | DPP | 5 | all |
//! | SALU writes M0 | LDS DMA (`lds` bit), GDS, `s_movrel*`, `s_sendmsg` | 1 | all |
//! | store of more than 8 bytes (MUBUF with an inline soffset, FLAT/GLOBAL) | VALU writes its data VGPRs | 1 (2 on gfx942) | all |
//! | VALU of the forwarding class (`v_readlane`, `v_readfirstlane`, `v_cmp*`, `v_add*`, `v_sub*`, `v_div_scale*`) writes an SGPR | VALU reads it as a constant (not as carry-in) | 2 | gfx942 |
//! | same, writes VCC | same | 1 | gfx942 |
//! | VALU writes VGPR | `v_readlane`/`v_readfirstlane` reads it | 1 | gfx942 |
//! | VALU writes EXEC | `v_readlane`/`v_readfirstlane`/`v_writelane` | 4 | gfx942 |
//! | transcendental VALU writes VGPR | non-transcendental VALU reads it | 1 | gfx942 |
//! | VALU with SDWA `dst_sel` ≠ DWORD or VOP3 `op_sel` on the destination | VALU reads the result | 1 | gfx942 |
//! | VALU (not MFMA, not DOT) writes VGPR/AGPR | MFMA reads it | 2 | gfx90a, gfx942 |
//! | VALU writes EXEC | MFMA | 4 | gfx90a, gfx942 |
//! | MFMA writes / reads SrcC | VALU, VMEM, LDS reads or overwrites; MFMA reads as SrcA/B/C; DGEMM → `v_fma_f64` | by pass count and class | gfx90a, gfx942 |
//!
//! The MFMA numbers come from the backend's `mfma_hazards` table, the one the compiler's pass
//! reads too (the rest of this checker is written independently of the pass). An MFMA leaves
//! a stamp with its kind on each register it writes and on each it reads as SrcC; the wait a
//! later instruction needs is looked up from the stamp's kind.
//!
//! Not modelled: `s_setreg`/`s_getreg`, `v_cmpx` → EXEC reads on gfx942, DOT rules — code
//! that needs them runs without a report.

use kjit_backend_gcn::isa::Opcode;
use kjit_backend_gcn::mfma_hazards::{self as mfma, Access, MfmaClass, MfmaKind};
use kjit_backend_gcn::Target;

use super::program::{Decoded, Op};
use super::scoreboard::RegSet;
use super::valu::{Form, ValuInst, ValuOp};
use super::wave::{code, EmuError};

/// An event a producer leaves on the registers it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Event {
    /// Any VALU wrote the scalar register (SGPR, VCC, EXEC).
    ValuScalar = 0,
    /// A VALU of the gfx942 forwarding class wrote the scalar register.
    ForwardScalar = 1,
    /// An SALU wrote it (only M0 is consulted).
    SaluScalar = 2,
    /// Any VALU wrote the VGPR.
    ValuVector = 3,
    /// A transcendental VALU wrote the VGPR.
    TransVector = 4,
    /// A VALU wrote part of the VGPR (SDWA dst_sel / op_sel).
    PartialVector = 5,
    /// A store of more than 8 bytes read the VGPR as data.
    WideStoreData = 6,
    /// A VALU other than MFMA and DOT wrote the VGPR or AGPR (`v_accvgpr_write` included).
    LegacyValu = 7,
}

const SCALAR_EVENTS: usize = 3;
const VECTOR_EVENTS: usize = 5;
/// Vector register slots of the clock: v0..v255, then a0..a255.
const VECTOR_SLOTS: usize = 512;

impl Event {
    fn is_scalar(self) -> bool {
        (self as usize) < SCALAR_EVENTS
    }
    fn describe(self) -> &'static str {
        match self {
            Event::ValuScalar => "written by a VALU instruction",
            Event::ForwardScalar => {
                "written by a VALU instruction of the forwarding class (readlane/cmp/add/sub/div_scale)"
            }
            Event::SaluScalar => "written by an SALU instruction",
            Event::ValuVector => "written by a VALU instruction",
            Event::TransVector => "written by a transcendental VALU instruction",
            Event::PartialVector => "partly written (dst_sel/op_sel) by a VALU instruction",
            Event::WideStoreData => "read as data by a store of more than 8 bytes",
            Event::LegacyValu => "written by a (non-MFMA, non-DOT) VALU instruction",
        }
    }
}

/// What a consumer needs: `wait` wait states since `event` on any of `regs`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Need {
    event: Event,
    regs: RegSet,
    wait: u8,
    /// What the consumer does with the register, for the message.
    what: &'static str,
}

/// The wait-state behaviour of one decoded instruction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitRules {
    /// Wait states this instruction provides (1; `s_nop N`: N + 1).
    provides: u8,
    /// Events it leaves, each on its registers.
    produces: Vec<(Event, RegSet)>,
    /// What it needs before it may issue.
    needs: Vec<Need>,
    /// Its part in the MFMA rules (gfx90a/gfx942), whose waits depend on the MFMA involved.
    mfma: Option<Box<(Target, MfmaRole)>>,
}

/// A register range in the clock's vector slots (v0..v255, then a0..a255).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Slots {
    first: u16,
    len: u16,
}

impl Slots {
    fn of(code: u16, n: u32, agpr: bool) -> Option<Slots> {
        let r = vgpr_of(code)?;
        let first = r as u16 + if agpr { 256 } else { 0 };
        Some(Slots {
            first,
            len: (n as u16).min(VECTOR_SLOTS as u16 - first),
        })
    }

    fn iter(self) -> std::ops::Range<usize> {
        self.first as usize..(self.first + self.len) as usize
    }
}

/// What an instruction does in the MFMA rules (`mfma_hazards` in the backend has the numbers).
#[derive(Clone, Debug, PartialEq, Eq)]
enum MfmaRole {
    /// An MFMA: its kind, destination, SrcA/B and SrcC registers.
    Mfma {
        kind: MfmaKind,
        dst: Option<Slots>,
        ab: Vec<Slots>,
        srcc: Option<Slots>,
    },
    /// A VALU or memory instruction: the vector registers it reads and writes.
    Other {
        reads: Vec<u16>,
        writes: Vec<u16>,
        mem: bool,
        fma64: bool,
    },
}

fn slot_list(s: &RegSet) -> Vec<u16> {
    let mut out = Vec::new();
    for_each_bit(&s.v, |r| out.push(r as u16));
    for_each_bit(&s.a, |r| out.push(r as u16 + 256));
    out
}

fn slot_name(r: usize) -> String {
    if r >= 256 {
        format!("a{}", r - 256)
    } else {
        format!("v{r}")
    }
}

fn scalar_only(mut s: u128, keep: impl Fn(u32) -> bool) -> u128 {
    for r in 0..128 {
        if s & (1 << r) != 0 && !keep(r) {
            s &= !(1 << r);
        }
    }
    s
}

fn is_sgpr_or_vcc(r: u32) -> bool {
    r < 102 || r == code::VCC_LO as u32 || r == code::VCC_HI as u32
}

fn scalar_set(s: u128) -> RegSet {
    RegSet { s, ..RegSet::EMPTY }
}

fn vector_set(v: [u64; 4]) -> RegSet {
    RegSet { v, ..RegSet::EMPTY }
}

const TRANSCENDENTAL: [&str; 20] = [
    "v_exp_f32",
    "v_log_f32",
    "v_rcp_f32",
    "v_rcp_iflag_f32",
    "v_rsq_f32",
    "v_sqrt_f32",
    "v_sin_f32",
    "v_cos_f32",
    "v_exp_legacy_f32",
    "v_log_legacy_f32",
    "v_rcp_f64",
    "v_rsq_f64",
    "v_sqrt_f64",
    "v_exp_f16",
    "v_log_f16",
    "v_rcp_f16",
    "v_rsq_f16",
    "v_sqrt_f16",
    "v_sin_f16",
    "v_cos_f16",
];

/// The mnemonic without its encoding suffix.
fn base(name: &str) -> &str {
    ["_e32", "_e64", "_dpp", "_sdwa", "_vop3"]
        .iter()
        .fold(name, |n, s| n.strip_suffix(s).unwrap_or(n))
}

fn is_forwarding_class(b: &str) -> bool {
    b.starts_with("v_readlane")
        || b.starts_with("v_readfirstlane")
        || b.starts_with("v_cmp")
        || b.starts_with("v_add")
        || b.starts_with("v_sub")
        || b.starts_with("v_div_scale")
}

fn vgpr_of(c: u16) -> Option<u32> {
    (c >= 256).then(|| (c - 256) as u32)
}

impl WaitRules {
    /// The rules of `d` (mnemonic `name`, encoding `words`) on `target`.
    pub fn of(name: &str, words: &[u32], d: &Decoded, target: Target) -> WaitRules {
        let gfx942 = target == Target::Gfx942;
        let mut r = WaitRules {
            provides: 1,
            ..Default::default()
        };
        match &d.op {
            Op::Scalar(_) => {
                if name == "s_nop" {
                    r.provides = (words[0] & 0xf) as u8 + 1;
                }
                let m0 = 1u128 << code::M0;
                if d.writes.s & m0 != 0 {
                    r.produces.push((Event::SaluScalar, scalar_set(m0)));
                }
                if name.starts_with("s_movrel") || name.starts_with("s_sendmsg") {
                    r.need(Event::SaluScalar, scalar_set(m0), 1, "reads M0");
                }
            }
            Op::Vmem(v) => {
                let sgprs = scalar_only(d.reads.s, is_sgpr_or_vcc);
                if sgprs != 0 {
                    r.need(
                        Event::ValuScalar,
                        scalar_set(sgprs),
                        5,
                        "is read by a vector memory instruction",
                    );
                }
                if v.lds {
                    r.need(
                        Event::SaluScalar,
                        scalar_set(1 << code::M0),
                        1,
                        "is read as the LDS address of an LDS DMA",
                    );
                }
                let wide =
                    name.ends_with("x3") || name.ends_with("x4") || name.ends_with("cmpswap_x2");
                let mubuf_inline_soffset = name.starts_with("buffer_") && v.soffset >= 128;
                let stores = name.contains("_store_") || name.contains("_atomic_");
                if stores && wide && (mubuf_inline_soffset || !name.starts_with("buffer_")) {
                    let dw = if name.ends_with("x3") { 3 } else { 4 };
                    let mut data = RegSet::EMPTY;
                    if !v.acc {
                        data.add_v(v.vdata as u32, dw);
                        r.produces.push((Event::WideStoreData, data));
                    }
                }
            }
            Op::Ds(_) => {
                if name.contains("gds") {
                    r.need(
                        Event::SaluScalar,
                        scalar_set(1 << code::M0),
                        1,
                        "is read by GDS",
                    );
                }
            }
            Op::Valu(i) => r.valu(name, i, d, gfx942),
            Op::Smem(_) | Op::Unsupported(_) | Op::Invalid(_) => {}
        }
        if target != Target::Gfx900 {
            r.mfma = mfma_role(name, d, target).map(|role| Box::new((target, role)));
        }
        r
    }

    fn need(&mut self, event: Event, regs: RegSet, wait: u8, what: &'static str) {
        if !regs.is_empty() {
            self.needs.push(Need {
                event,
                regs,
                wait,
                what,
            });
        }
    }

    fn valu(&mut self, name: &str, i: &ValuInst, d: &Decoded, gfx942: bool) {
        let is_mfma = matches!(i.op, ValuOp::Mfma(_));
        let b = base(name);
        let exec = (1u128 << code::EXEC_LO) | (1u128 << code::EXEC_HI);
        let vcc = (1u128 << code::VCC_LO) | (1u128 << code::VCC_HI);
        // Producer side.
        let writes_s = d.writes.s;
        if writes_s != 0 {
            self.produces
                .push((Event::ValuScalar, scalar_set(writes_s)));
            if is_forwarding_class(b) {
                self.produces
                    .push((Event::ForwardScalar, scalar_set(writes_s)));
            }
        }
        let writes_v = d.writes.v;
        if !is_mfma && !b.starts_with("v_dot") {
            let written = RegSet { s: 0, ..d.writes };
            if !written.is_empty() {
                self.produces.push((Event::LegacyValu, written));
            }
        }
        if is_mfma {
            // MFMA results have their own rules (`mfma_role`); what an MFMA needs of VALU
            // writes and EXEC is here.
            let read = RegSet { s: 0, ..d.reads };
            self.need(
                Event::LegacyValu,
                read,
                mfma::VALU_WRITE_TO_MFMA_READ,
                "is read by an MFMA",
            );
            self.need(
                Event::ValuScalar,
                scalar_set(exec),
                mfma::VALU_EXEC_TO_MFMA,
                "masks an MFMA",
            );
        } else if writes_v != [0; 4] {
            self.produces
                .push((Event::ValuVector, vector_set(writes_v)));
            if TRANSCENDENTAL.contains(&b) {
                self.produces
                    .push((Event::TransVector, vector_set(writes_v)));
            }
            let partial = match i.form {
                Form::Sdwa(s) => s.dst_sel != super::valu::lanes::SdwaSel::Dword,
                Form::Vop3 => i.op_sel & 8 != 0,
                _ => false,
            };
            if partial {
                self.produces
                    .push((Event::PartialVector, vector_set(writes_v)));
            }
        }
        // Any VALU overwriting the data of a wide store too early.
        self.need(
            Event::WideStoreData,
            vector_set(writes_v),
            if gfx942 { 2 } else { 1 },
            "is overwritten by a VALU instruction while a wide store may still read it",
        );
        let readlane = b.starts_with("v_readlane") || b.starts_with("v_readfirstlane");
        let rwlane = b.starts_with("v_readlane") || b.starts_with("v_writelane");
        if rwlane {
            if let Some(sel) = (i.src[1] < 108).then_some(i.src[1]) {
                self.need(
                    Event::ValuScalar,
                    scalar_set(1 << sel),
                    4,
                    "is read as a lane select",
                );
            }
        }
        if b.starts_with("v_div_fmas") {
            self.need(
                Event::ValuScalar,
                scalar_set(vcc),
                4,
                "is read by v_div_fmas",
            );
        }
        if let Form::Dpp(_) = i.form {
            if let Some(v) = vgpr_of(i.src[0]) {
                let mut s = RegSet::EMPTY;
                s.add_v(v, 1);
                self.need(Event::ValuVector, s, 2, "is read through DPP");
            }
            self.need(
                Event::ValuScalar,
                scalar_set(exec),
                5,
                "masks a DPP instruction",
            );
        }
        if !gfx942 {
            return;
        }
        // gfx942: SGPRs read as constants, except a carry-in.
        let mut constants = scalar_only(d.reads.s, is_sgpr_or_vcc);
        if b.contains("addc") || b.contains("subb") {
            match i.form {
                Form::Vop3 => {
                    let c = i.src[2] as u32;
                    if c < 127 {
                        constants &= !(3u128 << c);
                    }
                }
                _ => constants &= !vcc,
            }
        }
        self.need(
            Event::ForwardScalar,
            scalar_set(constants & !vcc),
            2,
            "is read as a constant by a VALU instruction",
        );
        self.need(
            Event::ForwardScalar,
            scalar_set(constants & vcc),
            1,
            "is read as a constant by a VALU instruction",
        );
        if readlane {
            if let Some(v) = vgpr_of(i.src[0]) {
                let mut s = RegSet::EMPTY;
                s.add_v(v, 1);
                self.need(
                    Event::ValuVector,
                    s,
                    1,
                    "is read by v_readlane/v_readfirstlane",
                );
            }
        }
        if readlane || b.starts_with("v_writelane") {
            self.need(
                Event::ValuScalar,
                scalar_set(exec),
                4,
                "masks v_readlane/v_readfirstlane/v_writelane",
            );
        }
        if !TRANSCENDENTAL.contains(&b) {
            self.need(
                Event::TransVector,
                vector_set(d.reads.v),
                1,
                "is read by a non-transcendental VALU instruction",
            );
        }
        self.need(
            Event::PartialVector,
            vector_set(d.reads.v),
            1,
            "is read by a VALU instruction",
        );
    }
}

/// The instruction's part in the MFMA rules, or `None` if it has none.
fn mfma_role(name: &str, d: &Decoded, target: Target) -> Option<MfmaRole> {
    let other = |mem: bool, fma64: bool| {
        let (reads, writes) = (slot_list(&d.reads), slot_list(&d.writes));
        (!reads.is_empty() || !writes.is_empty() || fma64).then_some(MfmaRole::Other {
            reads,
            writes,
            mem,
            fma64,
        })
    };
    match &d.op {
        Op::Valu(i) => {
            let op = Opcode::from_name(name);
            if let ValuOp::Mfma(shape) = i.op {
                let kind = MfmaKind::of(op?, target)?;
                let acc = |k: usize| i.acc >> (k + 1) & 1 != 0;
                let ab = (0..2)
                    .filter_map(|k| Slots::of(i.src[k], shape.a_regs(), acc(k)))
                    .collect();
                return Some(MfmaRole::Mfma {
                    kind,
                    dst: Slots::of(i.vdst + 256, shape.d_regs(), i.acc & 1 != 0),
                    ab,
                    srcc: Slots::of(i.src[2], shape.d_regs(), acc(2)),
                });
            }
            other(false, op.is_some_and(mfma::is_fma_f64))
        }
        Op::Vmem(_) | Op::Ds(_) => other(true, false),
        _ => None,
    }
}

/// One MFMA's mark on a register: when, which kind, and (for results) its whole destination.
#[derive(Clone, Copy, Default)]
struct MfmaStamp {
    at: u64,
    kind: MfmaKind,
    range: Slots,
}

/// A wave's wait-state clock and the stamps of the last event on each register. A slot keeps
/// its clock across the waves it runs and jumps it forward for a new wave, so stamps of the
/// previous wave are far in the past without clearing the tables.
pub struct WaitClock {
    now: u64,
    /// The last stamp of each event on any register: most needs are settled by this alone.
    last: [u64; SCALAR_EVENTS + VECTOR_EVENTS],
    scalar: Box<[[u64; 128]; SCALAR_EVENTS]>,
    vector: Box<[[u64; VECTOR_SLOTS]; VECTOR_EVENTS]>,
    /// The last MFMA that wrote each vector register.
    mfma_dst: Box<[MfmaStamp; VECTOR_SLOTS]>,
    /// The last MFMA that read each vector register as SrcC.
    mfma_srcc: Box<[MfmaStamp; VECTOR_SLOTS]>,
    /// When the last MFMA (any) and the last DGEMM issued.
    last_mfma: u64,
    last_dgemm: u64,
}

/// More than any rule needs: a new wave's clock starts this far after the last stamp.
const FAR: u64 = 1 << 20;

impl Default for WaitClock {
    fn default() -> Self {
        WaitClock {
            now: FAR,
            last: [0; SCALAR_EVENTS + VECTOR_EVENTS],
            scalar: Box::new([[0; 128]; SCALAR_EVENTS]),
            vector: Box::new([[0; VECTOR_SLOTS]; VECTOR_EVENTS]),
            mfma_dst: Box::new([MfmaStamp::default(); VECTOR_SLOTS]),
            mfma_srcc: Box::new([MfmaStamp::default(); VECTOR_SLOTS]),
            last_mfma: 0,
            last_dgemm: 0,
        }
    }
}

fn for_each_bit(bits: &[u64], mut f: impl FnMut(u32)) {
    for (w, &word) in bits.iter().enumerate() {
        let mut x = word;
        while x != 0 {
            let b = x.trailing_zeros();
            f(w as u32 * 64 + b);
            x &= x - 1;
        }
    }
}

fn scalar_words(s: u128) -> [u64; 2] {
    [s as u64, (s >> 64) as u64]
}

/// The vector registers of a set as clock slots: v0..v255, then a0..a255.
fn vector_words(r: &RegSet) -> [u64; 8] {
    let mut w = [0; 8];
    w[..4].copy_from_slice(&r.v);
    w[4..].copy_from_slice(&r.a);
    w
}

fn scalar_name(r: u32) -> String {
    match r as u16 {
        code::VCC_LO => "vcc_lo".into(),
        code::VCC_HI => "vcc_hi".into(),
        code::EXEC_LO => "exec_lo".into(),
        code::EXEC_HI => "exec_hi".into(),
        code::M0 => "m0".into(),
        _ => format!("s{r}"),
    }
}

/// The report of a register whose producer is `since` wait states back when `wait` are needed.
fn hazard(register: String, what: String, since: u64, wait: u64) -> EmuError {
    EmuError::Hazard {
        at: Default::default(),
        register,
        detail: format!("{what}; it needs {wait} (wait-state rule)"),
        missing_wait: nops(wait - since),
    }
}

/// The `s_nop`s giving `n` wait states (at most 8 each).
fn nops(mut n: u64) -> String {
    let mut out = Vec::new();
    while n > 0 {
        let k = n.min(8);
        out.push(format!("s_nop {}", k - 1));
        n -= k;
    }
    out.join("; ")
}

fn describe_mfma(k: MfmaKind) -> String {
    format!("an MFMA ({} passes, {:?})", k.passes, k.class)
}

impl WaitClock {
    /// Starts a new wave on this clock.
    pub fn new_wave(&mut self) {
        self.now += FAR;
    }

    fn stamp(&self, e: Event, r: u32) -> u64 {
        if e.is_scalar() {
            self.scalar[e as usize][r as usize]
        } else {
            self.vector[e as usize - SCALAR_EVENTS][r as usize]
        }
    }

    /// Checks `rules` before the instruction issues: an error for the first register whose
    /// producer is fewer wait states back than its rule needs.
    #[inline]
    pub fn check(&self, rules: &WaitRules) -> Result<(), EmuError> {
        for n in &rules.needs {
            if self.now - self.last[n.event as usize] >= n.wait as u64 {
                continue;
            }
            let mut bad: Option<(u32, u64)> = None;
            let mut test = |r: u32| {
                if bad.is_none() {
                    let since = self.now - self.stamp(n.event, r);
                    if since < n.wait as u64 {
                        bad = Some((r, since));
                    }
                }
            };
            if n.event.is_scalar() {
                for_each_bit(&scalar_words(n.regs.s), &mut test);
            } else {
                for_each_bit(&vector_words(&n.regs), &mut test);
            }
            if let Some((r, since)) = bad {
                let register = if n.event.is_scalar() {
                    scalar_name(r)
                } else {
                    slot_name(r as usize)
                };
                let what = format!(
                    "{} {since} wait state(s) earlier {}",
                    n.event.describe(),
                    n.what
                );
                return Err(hazard(register, what, since, n.wait as u64));
            }
        }
        match &rules.mfma {
            Some(m) => self.check_mfma(m.0, &m.1),
            None => Ok(()),
        }
    }

    /// The MFMA rules, whose waits depend on the MFMA that wrote or read the register.
    fn check_mfma(&self, target: Target, role: &MfmaRole) -> Result<(), EmuError> {
        let recent = self.now - self.last_mfma < mfma::MAX_WAIT as u64;
        // One register against one stamp (`done`: what the MFMA did to it): `wait` from the
        // stamp's MFMA kind.
        let test = |r: usize, stamp: &MfmaStamp, done: &str, wait: u8, what: &str| {
            let since = self.now - stamp.at;
            if stamp.at == 0 || since >= wait as u64 {
                return Ok(());
            }
            let what = format!(
                "{done} {since} wait state(s) earlier by {}; {what}",
                describe_mfma(stamp.kind)
            );
            Err(hazard(slot_name(r), what, since, wait as u64))
        };
        match role {
            MfmaRole::Other {
                reads,
                writes,
                mem,
                fma64,
            } => {
                let since = self.now - self.last_dgemm;
                if *fma64 && self.last_dgemm != 0 && since < mfma::DGEMM_TO_FMA_F64 as u64 {
                    let what =
                        format!("a DGEMM issued {since} wait state(s) earlier before v_fma_f64");
                    let reg = writes
                        .first()
                        .map_or("v?".into(), |&r| slot_name(r as usize));
                    return Err(hazard(reg, what, since, mfma::DGEMM_TO_FMA_F64 as u64));
                }
                if !recent {
                    return Ok(());
                }
                if *mem && target == Target::Gfx90a && self.last_dgemm != 0 {
                    let valu = &self.vector[Event::LegacyValu as usize - SCALAR_EVENTS];
                    let wait = mfma::GFX90A_VALU_DGEMM_MEM_READ as u64;
                    for &r in reads {
                        let t = valu[r as usize];
                        let since = self.now - t;
                        if t != 0 && self.last_dgemm > t && since < wait {
                            let what = format!(
                                "written by a VALU instruction {since} wait state(s) earlier, a \
                                 DGEMM in between, is read by a memory instruction (gfx90a)"
                            );
                            return Err(hazard(slot_name(r as usize), what, since, wait));
                        }
                    }
                }
                let access = if *mem {
                    Access::MemRead
                } else {
                    Access::ValuRead
                };
                for &r in reads {
                    let s = &self.mfma_dst[r as usize];
                    let wait = mfma::after_mfma_write(s.kind, access, target);
                    test(r as usize, s, "written", wait, "it is read too early")?;
                }
                for &r in writes {
                    let s = &self.mfma_dst[r as usize];
                    let wait = mfma::after_mfma_write(s.kind, Access::Write, target);
                    test(
                        r as usize,
                        s,
                        "written",
                        wait,
                        "it is overwritten too early (WAW)",
                    )?;
                    let s = &self.mfma_srcc[r as usize];
                    let wait = mfma::write_after_srcc_read(s.kind, target);
                    test(
                        r as usize,
                        s,
                        "read as SrcC",
                        wait,
                        "it is overwritten while the MFMA may still read it (WAR)",
                    )?;
                }
                Ok(())
            }
            MfmaRole::Mfma { kind, ab, srcc, .. } => {
                if !recent {
                    return Ok(());
                }
                for r in ab.iter().flat_map(|s| s.iter()) {
                    let s = &self.mfma_dst[r];
                    let wait = mfma::mfma_srcab_after_mfma(s.kind, target);
                    test(r, s, "written", wait, "it is read as SrcA/B by an MFMA")?;
                }
                for r in srcc.iter().flat_map(|s| s.iter()) {
                    let s = &self.mfma_dst[r];
                    let exact = Some(s.range) == *srcc;
                    let wait = mfma::mfma_srcc_after_mfma(s.kind, *kind, exact, target);
                    let what = if exact {
                        "it is read as SrcC (the same registers) by an MFMA"
                    } else {
                        "it is read as SrcC (overlapping registers) by an MFMA"
                    };
                    test(r, s, "written", wait, what)?;
                }
                Ok(())
            }
        }
    }

    /// Records the instruction as issued: its events and its wait states.
    #[inline]
    pub fn issue(&mut self, rules: &WaitRules) {
        self.now += rules.provides as u64;
        let now = self.now;
        for (e, regs) in &rules.produces {
            self.last[*e as usize] = now;
            if e.is_scalar() {
                let t = &mut self.scalar[*e as usize];
                for_each_bit(&scalar_words(regs.s), |r| t[r as usize] = now);
            } else {
                let t = &mut self.vector[*e as usize - SCALAR_EVENTS];
                for_each_bit(&vector_words(regs), |r| t[r as usize] = now);
            }
        }
        if let Some((
            _,
            MfmaRole::Mfma {
                kind, dst, srcc, ..
            },
        )) = rules.mfma.as_deref()
        {
            self.last_mfma = now;
            if kind.class == MfmaClass::Dgemm {
                self.last_dgemm = now;
            }
            for (table, range) in [(&mut self.mfma_dst, dst), (&mut self.mfma_srcc, srcc)] {
                if let Some(r) = range {
                    table[r.iter()].fill(MfmaStamp {
                        at: now,
                        kind: *kind,
                        range: *r,
                    });
                }
            }
        }
    }
}

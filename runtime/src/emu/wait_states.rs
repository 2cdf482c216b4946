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
//!
//! Not modelled: MFMA/accumulator rules (gfx90a/gfx942), `s_setreg`/`s_getreg`, `v_cmpx` → EXEC
//! reads on gfx942 — code that needs them runs without a report.

use kjit_backend_gcn::Target;

use super::program::{Decoded, Op};
use super::scoreboard::RegSet;
use super::valu::{Form, ValuInst};
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
}

const SCALAR_EVENTS: usize = 3;
const VECTOR_EVENTS: usize = 4;

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
        if writes_v != [0; 4] {
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

/// A wave's wait-state clock and the stamps of the last event on each register. A slot keeps
/// its clock across the waves it runs and jumps it forward for a new wave, so stamps of the
/// previous wave are far in the past without clearing the tables.
pub struct WaitClock {
    now: u64,
    /// The last stamp of each event on any register: most needs are settled by this alone.
    last: [u64; SCALAR_EVENTS + VECTOR_EVENTS],
    scalar: Box<[[u64; 128]; SCALAR_EVENTS]>,
    vector: Box<[[u64; 256]; VECTOR_EVENTS]>,
}

/// More than any rule needs: a new wave's clock starts this far after the last stamp.
const FAR: u64 = 1 << 20;

impl Default for WaitClock {
    fn default() -> Self {
        WaitClock {
            now: FAR,
            last: [0; SCALAR_EVENTS + VECTOR_EVENTS],
            scalar: Box::new([[0; 128]; SCALAR_EVENTS]),
            vector: Box::new([[0; 256]; VECTOR_EVENTS]),
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
                for_each_bit(&n.regs.v, &mut test);
            }
            if let Some((r, since)) = bad {
                let register = if n.event.is_scalar() {
                    scalar_name(r)
                } else {
                    format!("v{r}")
                };
                let missing = n.wait as u64 - since;
                return Err(EmuError::Hazard {
                    at: Default::default(),
                    register,
                    detail: format!(
                        "{} {since} wait state(s) earlier {}; it needs {} (wait-state rule)",
                        n.event.describe(),
                        n.what,
                        n.wait
                    ),
                    missing_wait: format!("s_nop {}", missing - 1),
                });
            }
        }
        Ok(())
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
                for_each_bit(&regs.v, |r| t[r as usize] = now);
            }
        }
    }
}

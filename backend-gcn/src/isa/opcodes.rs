//! The one table of gfx9 instruction formats and opcodes that the encoder, the decoder and the
//! printer (and the software device and the register allocator) all read.
//!
//! Each [`Opcode`] has an [`OpInfo`]: its LLVM mnemonic (and the gfx940 spelling, which renamed
//! some MFMA ops), its native [`Format`], its opcode number per target (absent where the target
//! lacks it), the VOP3 (`_e64`) opcode of VOP1/VOP2/VOPC instructions, and the operand list of each
//! form in LLVM's print order: which encoding field ([`Slot`]) holds it, what it may name
//! ([`Kind`]), how many dwords it covers and whether it is read or written ([`Access`]).
//!
//! The numbers come from `tools/isa_probe.py`, which probes `llvm-mc-19 --disassemble`; the
//! generated data lives in `table.rs`.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::Target;

use super::table::TABLE;
pub use super::table::{Opcode, OPCODE_COUNT};

/// Marks an opcode number a target does not have.
pub const NO: u16 = 0xFFFF;

/// The encoding format of an instruction (gfx9 "Microcode Formats").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Scalar ALU, one source.
    Sop1,
    /// Scalar ALU, two sources.
    Sop2,
    /// Scalar ALU with a 16-bit inline immediate.
    Sopk,
    /// Scalar compare.
    Sopc,
    /// Scalar program control (branches, waits, barriers).
    Sopp,
    /// Scalar memory.
    Smem,
    /// Vector ALU, one source (32-bit encoding).
    Vop1,
    /// Vector ALU, two sources (32-bit encoding).
    Vop2,
    /// Vector compare (32-bit encoding, writes VCC).
    Vopc,
    /// Vector ALU, 64-bit encoding (VOP3a and VOP3b).
    Vop3,
    /// Packed math, dot products, MFMA and `v_accvgpr_read/write`.
    Vop3p,
    /// LDS/GDS.
    Ds,
    /// Untyped buffer memory.
    Mubuf,
    /// Typed buffer memory.
    Mtbuf,
    /// Flat memory (`flat_*`, segment 0).
    Flat,
    /// Global memory (`global_*`, FLAT encoding segment 2).
    Global,
    /// Scratch memory (`scratch_*`, FLAT encoding segment 1).
    Scratch,
}

/// The encoding field an operand lives in. Which bits a slot means depends on the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    /// Destination: SOP `sdst`, VOP `vdst`, DS/FLAT `vdst`.
    Dst,
    /// First source: SOP `ssrc0`, VOP `src0`.
    Src0,
    /// Second source: SOP `ssrc1`, VOP2/VOPC `vsrc1`, VOP3 `src1`.
    Src1,
    /// Third source (VOP3 `src2`).
    Src2,
    /// VOP3b scalar destination (carry-out, `v_div_scale`, `v_mad_u64_u32`).
    Sdst,
    /// VCC named by the 32-bit encoding (carry, compare result, `v_cndmask` mask).
    Vcc,
    /// A mandatory 32-bit literal (`v_madmk_f32`'s K, `s_setreg_imm32_b32`).
    Literal,
    /// The 16-bit immediate of SOPK/SOPP.
    Simm16,
    /// SMEM data register(s).
    Sdata,
    /// SMEM base address register pair (or buffer descriptor quad).
    Sbase,
    /// SMEM offset (immediate or SGPR), MUBUF/MTBUF `soffset`.
    Soffset,
    /// DS/FLAT address VGPR(s).
    Addr,
    /// DS `data0`, FLAT `data`.
    Data0,
    /// DS `data1`.
    Data1,
    /// MUBUF/MTBUF `vdata`.
    Vdata,
    /// MUBUF/MTBUF `vaddr` (absent without offen/idxen).
    Vaddr,
    /// MUBUF/MTBUF buffer resource (4 SGPRs).
    Srsrc,
    /// FLAT global/scratch scalar address (`off` when unused).
    Saddr,
}

/// What an operand may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// VGPRs only.
    VReg,
    /// Scalar registers (SGPRs, VCC, EXEC, M0, TTMPs, ...), no constants.
    SReg,
    /// AGPRs only.
    AReg,
    /// VGPRs, or AGPRs on gfx90a/gfx942 (memory data, MFMA results).
    AvReg,
    /// A 9-bit vector-ALU source: VGPR, scalar register, inline constant or literal.
    VSrc,
    /// A scalar source: scalar register, inline constant or literal.
    SSrc,
    /// An AGPR in a 9-bit source field.
    ASrc,
    /// A 9-bit MFMA source: VGPR, AGPR, or inline constant.
    AvSrc,
    /// The VCC named by the 32-bit encoding (not encoded in any field).
    FixedVcc,
    /// A mandatory 32-bit literal.
    Lit32,
    /// A 16-bit immediate printed as LLVM prints SOPP immediates (decimal up to 64, else hex).
    Imm16,
    /// A 16-bit immediate printed in hex (SOPK).
    Imm16Hex,
    /// A branch offset in dwords relative to the next instruction.
    Label,
    /// The `s_waitcnt` counters.
    Waitcnt,
    /// `sendmsg(...)`.
    Sendmsg,
    /// `gpr_idx(...)`.
    GprIdx,
    /// `hwreg(...)`.
    Hwreg,
    /// SMEM offset: a 21-bit immediate or an SGPR.
    SmemOffset,
}

impl Kind {
    /// Whether the operand names registers (rather than an immediate field).
    pub fn is_register(self) -> bool {
        matches!(
            self,
            Kind::VReg
                | Kind::SReg
                | Kind::AReg
                | Kind::AvReg
                | Kind::VSrc
                | Kind::SSrc
                | Kind::ASrc
                | Kind::AvSrc
                | Kind::FixedVcc
                | Kind::SmemOffset
        )
    }
}

/// Whether an instruction reads or writes an operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read.
    R,
    /// Written.
    W,
    /// Read and written (`v_mac_f32`'s destination, d16 loads that keep the other half, atomics
    /// that return the old value).
    RW,
}

impl Access {
    /// Whether the operand is read.
    pub fn reads(self) -> bool {
        matches!(self, Access::R | Access::RW)
    }
    /// Whether the operand is written.
    pub fn writes(self) -> bool {
        matches!(self, Access::W | Access::RW)
    }
}

/// One operand of an instruction form, in LLVM's print order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OperandInfo {
    /// The field that holds it.
    pub slot: Slot,
    /// What it may name.
    pub kind: Kind,
    /// Width in dwords (0 for immediates). Flat/global addresses are listed as 2 (the `off`
    /// form); with an SGPR base the VGPR offset is 1 dword. MUBUF `vaddr` is 2 with both
    /// `offen` and `idxen`.
    pub dwords: u8,
    /// Read, written, or both.
    pub access: Access,
}

impl OperandInfo {
    /// A table entry.
    pub const fn new(slot: Slot, kind: Kind, dwords: u8, access: Access) -> OperandInfo {
        OperandInfo {
            slot,
            kind,
            dwords,
            access,
        }
    }
}

/// Bits of [`OpInfo::flags`]. Source-modifier bits are per source (`ABS0` is src0); the
/// `E64_*` bits describe the `_e64` form of a VOP1/VOP2/VOPC instruction (and its DPP/SDWA
/// source modifiers), the plain ones the native VOP3/VOP3P form.
pub mod flags {
    /// `|src0|` allowed.
    pub const ABS0: u32 = 1 << 0;
    /// `|src1|` allowed.
    pub const ABS1: u32 = 1 << 1;
    /// `|src2|` allowed.
    pub const ABS2: u32 = 1 << 2;
    /// `-src0` (VOP3P: `neg_lo`) allowed.
    pub const NEG0: u32 = 1 << 3;
    /// `-src1` allowed.
    pub const NEG1: u32 = 1 << 4;
    /// `-src2` allowed.
    pub const NEG2: u32 = 1 << 5;
    /// `clamp` allowed.
    pub const CLAMP: u32 = 1 << 6;
    /// `mul:2/mul:4/div:2` allowed.
    pub const OMOD: u32 = 1 << 7;
    /// `op_sel` allowed.
    pub const OP_SEL: u32 = 1 << 8;
    /// Shift from a native bit to its `_e64` counterpart.
    pub const E64_SHIFT: u32 = 9;
    /// `_e64`: `|src0|`.
    pub const E64_ABS0: u32 = ABS0 << E64_SHIFT;
    /// `_e64`: `|src1|`.
    pub const E64_ABS1: u32 = ABS1 << E64_SHIFT;
    /// `_e64`: `|src2|`.
    pub const E64_ABS2: u32 = ABS2 << E64_SHIFT;
    /// `_e64`: `-src0`.
    pub const E64_NEG0: u32 = NEG0 << E64_SHIFT;
    /// `_e64`: `-src1`.
    pub const E64_NEG1: u32 = NEG1 << E64_SHIFT;
    /// `_e64`: `-src2`.
    pub const E64_NEG2: u32 = NEG2 << E64_SHIFT;
    /// `_e64`: `clamp`.
    pub const E64_CLAMP: u32 = CLAMP << E64_SHIFT;
    /// `_e64`: output modifiers.
    pub const E64_OMOD: u32 = OMOD << E64_SHIFT;
    /// `_e64`: `op_sel`.
    pub const E64_OP_SEL: u32 = OP_SEL << E64_SHIFT;
    /// DPP form exists on gfx900.
    pub const DPP_GFX900: u32 = 1 << 18;
    /// DPP form exists on gfx90a.
    pub const DPP_GFX90A: u32 = 1 << 19;
    /// DPP form exists on gfx942.
    pub const DPP_GFX942: u32 = 1 << 20;
    /// SDWA form exists on gfx900.
    pub const SDWA_GFX900: u32 = 1 << 21;
    /// SDWA form exists on gfx90a.
    pub const SDWA_GFX90A: u32 = 1 << 22;
    /// SDWA form exists on gfx942.
    pub const SDWA_GFX942: u32 = 1 << 23;
    /// The SDWA form has no `dst_sel`/`dst_unused` (gfx940 fp8/bf8 conversions).
    pub const SDWA_NO_DST_SEL: u32 = 1 << 24;
    /// VOP3P `neg_hi` allowed.
    pub const NEG_HI: u32 = 1 << 25;
    /// Source 0 is a 16-bit integer: LLVM prints float inline constants as their f16 bits.
    pub const INT16_0: u32 = 1 << 26;
    /// Source 1 is a 16-bit integer.
    pub const INT16_1: u32 = 1 << 27;
    /// Source 2 is a 16-bit integer.
    pub const INT16_2: u32 = 1 << 28;
    /// A literal of source 0 is a 16-bit value (only its low half is meaningful).
    pub const LIT16: u32 = 1 << 29;
    /// LLVM spells the native VOP1/VOP2/VOPC form with an `_e32` suffix.
    pub const E32_SUFFIX: u32 = 1 << 30;
    /// Mask of the three `ABS` bits.
    pub const ABS: u32 = ABS0 | ABS1 | ABS2;
    /// Mask of the three `NEG` bits.
    pub const NEG: u32 = NEG0 | NEG1 | NEG2;
}

/// Everything the table knows about one opcode.
#[derive(Clone, Copy, Debug)]
pub struct OpInfo {
    /// LLVM mnemonic (gfx900/gfx90a spelling), without `_e32`/`_e64`.
    pub name: &'static str,
    /// The gfx940 spelling (some MFMA ops gained `_Nb_`/`_` separators; `v_madmk_f32` is
    /// `v_fmamk_f32`).
    pub name_gfx940: &'static str,
    /// The native encoding format.
    pub format: Format,
    /// Native opcode number per target, indexed by [`target_index`]; [`NO`] when absent.
    pub opcode: [u16; 3],
    /// Opcode of the VOP3 (`_e64`) form of a VOP1/VOP2/VOPC instruction.
    pub e64_opcode: [u16; 3],
    /// Operands of the native form, in LLVM print order.
    pub operands: &'static [OperandInfo],
    /// Operands of the other form: the `_e64` form of VOP1/VOP2/VOPC instructions, or the
    /// returning form (`glc`/`sc0` set: a destination first) of FLAT/GLOBAL atomics.
    pub alt_operands: &'static [OperandInfo],
    /// [`flags`] bits.
    pub flags: u32,
    /// What the timing model needs: issue unit, busy cycles, result latency.
    pub timing: OpTiming,
}

/// The issue category of an instruction: AMD's CU issues at most one instruction per category
/// per cycle (rocprofiler-compute, "Pipeline descriptions"). `Internal` instructions (`s_nop`,
/// `s_waitcnt`, `s_barrier`, `s_endpgm`, ...) retire in the instruction scheduler itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Scalar ALU.
    Salu,
    /// Vector ALU at full or reduced rate.
    Valu,
    /// Vector ALU, transcendental (quarter rate).
    Trans,
    /// Matrix core (issues through the VALU port).
    Mfma,
    /// Vector memory.
    Vmem,
    /// Scalar memory.
    Smem,
    /// LDS.
    Lds,
    /// Branches.
    Branch,
    /// Handled by the instruction scheduler, no execution unit.
    Internal,
}

/// Timing facts of one opcode, per target (indexed by [`target_index`]). Sources are listed in
/// `tools/isa_probe.py`, which generates them, and in `docs/timing.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpTiming {
    /// The issue category.
    pub unit: Unit,
    /// Cycles a wave64 instance keeps its unit busy (VALU: 4 at full rate; MFMA: the matrix
    /// unit's pass cycles). Memory units take their busy time from the machine model instead.
    pub busy: [u8; 3],
    /// Cycles from issue until a dependent instruction may read the result (ALU results only;
    /// memory results are covered by `s_waitcnt`).
    pub latency: [u8; 3],
    /// Cycles before the SIMD's VALU may issue again: `busy` for VALU ops; an MFMA's VALU
    /// co-execution delay, or its whole duration where it does not co-execute.
    pub valu_block: [u8; 3],
}

impl OpTiming {
    /// A table entry.
    pub const fn new(unit: Unit, busy: [u8; 3], latency: [u8; 3], valu_block: [u8; 3]) -> Self {
        OpTiming {
            unit,
            busy,
            latency,
            valu_block,
        }
    }
}

impl OpInfo {
    /// A table entry.
    #[allow(clippy::too_many_arguments)]
    pub const fn new(
        name: &'static str,
        name_gfx940: &'static str,
        format: Format,
        opcode: [u16; 3],
        e64_opcode: [u16; 3],
        operands: &'static [OperandInfo],
        alt_operands: &'static [OperandInfo],
        flags: u32,
        timing: OpTiming,
    ) -> OpInfo {
        OpInfo {
            name,
            name_gfx940,
            format,
            opcode,
            e64_opcode,
            operands,
            alt_operands,
            flags,
            timing,
        }
    }

    /// The native opcode number on `t`.
    pub fn opcode_on(&self, t: Target) -> Option<u16> {
        let o = self.opcode[target_index(t)];
        (o != NO).then_some(o)
    }

    /// The `_e64` opcode number on `t`.
    pub fn e64_opcode_on(&self, t: Target) -> Option<u16> {
        let o = self.e64_opcode[target_index(t)];
        (o != NO).then_some(o)
    }

    /// Whether the DPP form exists on `t`.
    pub fn has_dpp(&self, t: Target) -> bool {
        self.flags & (flags::DPP_GFX900 << target_index(t)) != 0
    }

    /// Whether the SDWA form exists on `t`.
    pub fn has_sdwa(&self, t: Target) -> bool {
        self.flags & (flags::SDWA_GFX900 << target_index(t)) != 0
    }

    /// The mnemonic LLVM uses on `t`.
    pub fn name_on(&self, t: Target) -> &'static str {
        if t.is_gfx940_family() {
            self.name_gfx940
        } else {
            self.name
        }
    }

    /// Whether this is a FLAT/GLOBAL atomic, which gains a destination when `glc`/`sc0` is set.
    pub fn is_flat_atomic(&self) -> bool {
        matches!(self.format, Format::Flat | Format::Global) && self.name.contains("_atomic_")
    }

    /// Whether this is a mixed-precision FMA (`v_fma_mix*`, `v_mad_mix*`): a VOP3P instruction
    /// whose `neg_hi` bits are `abs` and whose source modifiers print on the operands.
    pub fn is_mix(&self) -> bool {
        self.name.starts_with("v_fma_mix") || self.name.starts_with("v_mad_mix")
    }

    /// Whether this is a matrix (MFMA/SMFMAC) instruction.
    pub fn is_mfma(&self) -> bool {
        self.name.starts_with("v_mfma") || self.name.starts_with("v_smfmac")
    }
}

/// Index of a target in the per-target arrays of [`OpInfo`].
pub fn target_index(t: Target) -> usize {
    match t {
        Target::Gfx900 => 0,
        Target::Gfx90a => 1,
        Target::Gfx942 => 2,
    }
}

impl Opcode {
    /// All opcodes, in table order.
    pub fn all() -> impl Iterator<Item = Opcode> {
        (0..OPCODE_COUNT).map(Opcode::from_index)
    }

    fn from_index(i: usize) -> Opcode {
        debug_assert!(i < OPCODE_COUNT);
        // SAFETY: `Opcode` is `repr(u16)` with variants 0..OPCODE_COUNT in table order (generated
        // together with TABLE), and `i` is in range.
        unsafe { std::mem::transmute::<u16, Opcode>(i as u16) }
    }

    /// The table entry.
    pub fn info(self) -> &'static OpInfo {
        &TABLE[self as usize]
    }

    /// The LLVM mnemonic (gfx900/gfx90a spelling, without `_e32`/`_e64`).
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The native format.
    pub fn format(self) -> Format {
        self.info().format
    }

    /// Whether `t` has this instruction.
    pub fn exists_on(self, t: Target) -> bool {
        self.info().opcode_on(t).is_some()
    }

    /// The opcode whose LLVM mnemonic is `name` (either target spelling; `_e32`, `_e64`, `_dpp`
    /// and `_sdwa` suffixes are accepted).
    pub fn from_name(name: &str) -> Option<Opcode> {
        if let Some(op) = by_name(name) {
            return Some(op);
        }
        for suffix in ["_e32", "_e64", "_dpp", "_sdwa"] {
            if let Some(base) = name.strip_suffix(suffix) {
                if let Some(op) = by_name(base) {
                    return Some(op);
                }
            }
        }
        None
    }

    /// Whether the mnemonic has each of `facts` ([`name_facts`] bits).
    pub fn name_has(self, facts: u16) -> bool {
        NAME_FACTS[self as usize] & facts == facts
    }
}

/// Facts about an opcode that its mnemonic tells, as bits of [`Opcode::name_has`]: computed
/// from the table at compile time, so passes that ask per instruction compare no strings.
pub mod name_facts {
    /// Names EXEC (`s_and_saveexec_b64`, `s_mov_b64_exec`...): may change EXEC.
    pub const EXEC: u16 = 1 << 0;
    /// An atomic memory operation (`_atomic_`).
    pub const ATOMIC: u16 = 1 << 1;
    /// Indexes registers through M0 (`movrel`).
    pub const MOVREL: u16 = 1 << 2;
    /// Parameter interpolation (`interp`).
    pub const INTERP: u16 = 1 << 3;
    /// Reads a carry-in (`addc`, `subb`, `_co_ci`).
    pub const CARRY_IN: u16 = 1 << 4;
    /// Names a load (`_load`: `buffer_load_dword`, `s_load_dwordx4`, `global_load_...`).
    pub const LOAD: u16 = 1 << 5;
    /// Any atomic, returning or not (`_atomic`).
    pub const ANY_ATOMIC: u16 = 1 << 6;
    /// A cross-lane LDS permute (`permute`).
    pub const PERMUTE: u16 = 1 << 7;
    /// Slow VALU arithmetic for the scheduler's latency (`f64`, `rcp`, `sqrt`).
    pub const SLOW_VALU: u16 = 1 << 8;
}

/// The substrings that set each [`name_facts`] bit.
const NAME_PATTERNS: [(&str, u16); 13] = [
    ("exec", name_facts::EXEC),
    ("_atomic_", name_facts::ATOMIC),
    ("movrel", name_facts::MOVREL),
    ("interp", name_facts::INTERP),
    ("addc", name_facts::CARRY_IN),
    ("subb", name_facts::CARRY_IN),
    ("_co_ci", name_facts::CARRY_IN),
    ("_load", name_facts::LOAD),
    ("_atomic", name_facts::ANY_ATOMIC),
    ("permute", name_facts::PERMUTE),
    ("f64", name_facts::SLOW_VALU),
    ("rcp", name_facts::SLOW_VALU),
    ("sqrt", name_facts::SLOW_VALU),
];

/// Whether `needle` occurs in `hay` (usable in the compile-time tables below).
const fn contains(hay: &[u8], needle: &[u8]) -> bool {
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        let mut k = 0;
        while k < needle.len() && hay[i + k] == needle[k] {
            k += 1;
        }
        if k == needle.len() {
            return true;
        }
        i += 1;
    }
    false
}

/// Whether `a` and `b` are equal (usable in the compile-time tables below).
const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// [`name_facts`] of every opcode (of its gfx900 spelling).
static NAME_FACTS: [u16; OPCODE_COUNT] = {
    let mut facts = [0u16; OPCODE_COUNT];
    let mut i = 0;
    while i < OPCODE_COUNT {
        let name = TABLE[i].name.as_bytes();
        let mut k = 0;
        while k < NAME_PATTERNS.len() {
            if contains(name, NAME_PATTERNS[k].0.as_bytes()) {
                facts[i] |= NAME_PATTERNS[k].1;
            }
            k += 1;
        }
        i += 1;
    }
    facts
};

/// Slots of [`BY_NAME`]: a power of two over three times the spellings, so probes are short.
const NAME_SLOTS: usize = 4096;
/// An empty [`BY_NAME`] slot.
const NO_SLOT: u16 = u16::MAX;
/// Marks a [`BY_NAME`] entry made for the gfx940 spelling.
const GFX940_SPELLING: u16 = 1 << 15;

/// FNV-1a of a mnemonic.
const fn name_hash(s: &[u8]) -> usize {
    let mut h: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < s.len() {
        h ^= s[i] as u32;
        h = h.wrapping_mul(0x0100_0193);
        i += 1;
    }
    h as usize
}

/// The spelling a [`BY_NAME`] entry stands for.
const fn spelling(entry: u16) -> &'static [u8] {
    let info = &TABLE[(entry & !GFX940_SPELLING) as usize];
    if entry & GFX940_SPELLING != 0 {
        info.name_gfx940.as_bytes()
    } else {
        info.name.as_bytes()
    }
}

/// Puts `entry` in the slot of its spelling (linear probing); an entry of the same spelling
/// is replaced when `replace`, else kept.
const fn put(slots: &mut [u16; NAME_SLOTS], entry: u16, replace: bool) {
    let name = spelling(entry);
    let mut h = name_hash(name) & (NAME_SLOTS - 1);
    loop {
        if slots[h] == NO_SLOT {
            slots[h] = entry;
            return;
        }
        if same(spelling(slots[h]), name) {
            if replace {
                slots[h] = entry;
            }
            return;
        }
        h = (h + 1) & (NAME_SLOTS - 1);
    }
}

/// Open-addressing table from spellings to opcodes, built at compile time (no start-up cost
/// in the first compile of a process, no hashing of a map per lookup). A gfx900 name maps to
/// the last opcode spelled so (every name is unique; `names_round_trip...` checks), a gfx940
/// spelling that is nobody's gfx900 name to the first opcode spelled so.
static BY_NAME: [u16; NAME_SLOTS] = {
    let mut slots = [NO_SLOT; NAME_SLOTS];
    let mut i = 0;
    while i < OPCODE_COUNT {
        put(&mut slots, i as u16, true);
        i += 1;
    }
    i = 0;
    while i < OPCODE_COUNT {
        if !same(TABLE[i].name.as_bytes(), TABLE[i].name_gfx940.as_bytes()) {
            put(&mut slots, i as u16 | GFX940_SPELLING, false);
        }
        i += 1;
    }
    slots
};

/// The opcode spelled exactly `name` on some target.
fn by_name(name: &str) -> Option<Opcode> {
    let name = name.as_bytes();
    let mut h = name_hash(name) & (NAME_SLOTS - 1);
    loop {
        let e = BY_NAME[h];
        if e == NO_SLOT {
            return None;
        }
        if spelling(e) == name {
            return Some(Opcode::from_index((e & !GFX940_SPELLING) as usize));
        }
        h = (h + 1) & (NAME_SLOTS - 1);
    }
}

/// Per-target reverse maps from opcode numbers to opcodes, for the decoder.
pub(crate) struct DecodeMaps {
    /// `[format][opcode]` → native opcode.
    native: HashMap<(Format, u16), Opcode>,
    /// VOP3 opcode → `(opcode, is_e64_form)`.
    vop3: HashMap<u16, (Opcode, bool)>,
}

impl DecodeMaps {
    fn build(t: Target) -> DecodeMaps {
        let mut native = HashMap::new();
        let mut vop3 = HashMap::new();
        for op in Opcode::all() {
            let info = op.info();
            if let Some(n) = info.opcode_on(t) {
                if info.format == Format::Vop3 {
                    vop3.insert(n, (op, false));
                } else {
                    native.insert((info.format, n), op);
                }
            }
            if let Some(n) = info.e64_opcode_on(t) {
                vop3.entry(n).or_insert((op, true));
            }
        }
        DecodeMaps { native, vop3 }
    }

    /// The native opcode numbered `n` in `format`.
    pub(crate) fn native(&self, format: Format, n: u16) -> Option<Opcode> {
        self.native.get(&(format, n)).copied()
    }

    /// The instruction at VOP3 opcode `n`, and whether it is the `_e64` form of a VOP1/2/C op.
    pub(crate) fn vop3(&self, n: u16) -> Option<(Opcode, bool)> {
        self.vop3.get(&n).copied()
    }
}

/// The decoder's maps for `t`, built once.
pub(crate) fn decode_maps(t: Target) -> &'static DecodeMaps {
    static MAPS: [OnceLock<DecodeMaps>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    MAPS[target_index(t)].get_or_init(|| DecodeMaps::build(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_camel_case_matches() {
        assert_eq!(Opcode::from_name("s_mov_b32"), Some(Opcode::SMovB32));
        assert_eq!(Opcode::from_name("v_add_f32_e64"), Some(Opcode::VAddF32));
        assert_eq!(
            Opcode::from_name("v_mfma_f32_32x32x8_f16"),
            Some(Opcode::VMfmaF32_32x32x8F16)
        );
        assert_eq!(Opcode::from_name("v_no_such_op"), None);
        for op in Opcode::all() {
            assert_eq!(Opcode::from_name(op.name()), Some(op), "{}", op.name());
        }
    }

    #[test]
    fn name_index_matches_a_map_of_both_spellings() {
        // What the compile-time index must give: every gfx900 name, then gfx940 spellings
        // that no gfx900 name claims (first opcode wins).
        let mut m = HashMap::new();
        for op in Opcode::all() {
            m.insert(op.info().name, op);
        }
        for op in Opcode::all() {
            m.entry(op.info().name_gfx940).or_insert(op);
        }
        assert_eq!(m.len(), BY_NAME.iter().filter(|&&e| e != NO_SLOT).count());
        for (name, op) in m {
            assert_eq!(by_name(name), Some(op), "{name}");
        }
        assert_eq!(
            by_name("v_mfma_f32_32x32x8_f16"),
            Some(Opcode::VMfmaF32_32x32x8F16)
        );
        assert_eq!(by_name(""), None);
    }

    #[test]
    fn name_facts_are_the_mnemonic_substrings() {
        for op in Opcode::all() {
            let n = op.name();
            for (pat, bit) in NAME_PATTERNS {
                if n.contains(pat) {
                    assert!(op.name_has(bit), "{n} {pat}");
                }
            }
            let any = |bit| {
                NAME_PATTERNS
                    .iter()
                    .any(|&(p, b)| b == bit && n.contains(p))
            };
            for bit in (0..9).map(|k| 1u16 << k) {
                assert_eq!(op.name_has(bit), any(bit), "{n} {bit}");
            }
        }
        assert!(Opcode::SAndSaveexecB64.name_has(name_facts::EXEC));
        assert!(Opcode::VAddcCoU32.name_has(name_facts::CARRY_IN));
        assert!(!Opcode::VAddU32.name_has(name_facts::CARRY_IN));
    }

    #[test]
    fn target_differences_are_in_the_table() {
        assert!(!Opcode::VMfmaF32_32x32x8F16.exists_on(Target::Gfx900));
        assert!(Opcode::VMfmaF32_32x32x8F16.exists_on(Target::Gfx942));
        assert!(Opcode::VLshlAddU64.exists_on(Target::Gfx942));
        assert!(!Opcode::VLshlAddU64.exists_on(Target::Gfx90a));
        assert!(Opcode::VPkFmaF32.exists_on(Target::Gfx90a));
        assert!(!Opcode::VPkFmaF32.exists_on(Target::Gfx900));
        assert_eq!(Opcode::GlobalLoadDword.format(), Format::Global);
    }

    #[test]
    fn decode_maps_have_no_collisions() {
        // Every (format, number) belongs to one opcode on each target.
        for t in crate::target::ALL_TARGETS {
            let mut seen: HashMap<(Format, u16, bool), Opcode> = HashMap::new();
            for op in Opcode::all() {
                let i = op.info();
                if let Some(n) = i.opcode_on(t) {
                    let f = i.format;
                    let key = (f, n, false);
                    if let Some(prev) = seen.insert(key, op) {
                        panic!("{t}: {:?} and {:?} share {:?}", prev, op, key);
                    }
                }
            }
        }
    }
}

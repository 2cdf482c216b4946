//! The gfx9 instruction layer: one table of formats and opcodes ([`opcodes`], generated data in
//! `table.rs`) behind the encoder ([`encode()`]), the decoder ([`decode()`]) and the printer
//! ([`Inst::display`], LLVM syntax that `llvm-mc-19` re-assembles).
//!
//! An [`Inst`] is an opcode, its operands in LLVM's print order (destinations first), the
//! encoding variant ([`Encoding`]: native, `_e64`, DPP, SDWA) and the [`Modifiers`] that are not
//! operands (neg/abs/clamp/omod/op_sel, offsets, cache bits, DPP/SDWA controls, MFMA broadcast
//! controls). `decode(encode(i)) == i` for every instruction the encoder accepts.
//!
//! ```text
//!   Inst ──encode(target)──► dwords ──decode(target)──► Inst ──display(target)──► LLVM text
//!                 ▲                                                      │
//!                 └────────────── opcodes::TABLE (per target) ───────────┘
//! ```

pub mod decode;
pub mod encode;
pub mod opcodes;
pub mod operand;
pub mod print;
mod table;

use smallvec::SmallVec;

pub use decode::{decode, DecodeError};
pub use encode::{encode, EncodeError};
pub use opcodes::{
    flags, name_facts, target_index, Access, Format, Kind, OpInfo, OpTiming, Opcode, OperandInfo,
    Slot, Unit, OPCODE_COUNT,
};
pub use operand::{InlineFloat, Operand, SpecialReg};

use crate::Target;

/// Which encoding of an instruction is used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// The instruction's own format (`_e32` for VOP1/VOP2/VOPC).
    #[default]
    Native,
    /// The VOP3 (`_e64`) encoding of a VOP1/VOP2/VOPC instruction.
    E64,
    /// VOP1/VOP2 with a DPP control dword.
    Dpp,
    /// VOP1/VOP2/VOPC with an SDWA control dword.
    Sdwa,
}

/// DPP controls (the second dword of a `_dpp` instruction).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dpp {
    /// `dpp_ctrl` (9 bits): quad_perm, row_shl/shr/ror, wave_*, row_mirror, row_bcast, ...
    pub ctrl: u16,
    /// `row_mask` (4 bits).
    pub row_mask: u8,
    /// `bank_mask` (4 bits).
    pub bank_mask: u8,
    /// `bound_ctrl` bit: out-of-range lanes read 0.
    pub bound_ctrl: bool,
}

/// SDWA controls (the second dword of a `_sdwa` instruction).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Sdwa {
    /// `dst_sel` (BYTE_0..3, WORD_0/1, DWORD = 6).
    pub dst_sel: u8,
    /// `dst_unused` (UNUSED_PAD, UNUSED_SEXT, UNUSED_PRESERVE).
    pub dst_unused: u8,
    /// `src0_sel`.
    pub src0_sel: u8,
    /// `src1_sel`.
    pub src1_sel: u8,
    /// Sign-extend bits: bit 0 for src0, bit 1 for src1.
    pub sext: u8,
}

/// Everything about an instruction that is not an operand.
///
/// Bit sets (`abs`, `neg`, `neg_hi`, `op_sel`, `op_sel_hi`) are indexed by source (bit 0 = src0);
/// VOP3 `op_sel` bit 3 is the destination. On gfx940 `glc` is printed `sc0` and `slc` is `nt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Modifiers {
    /// `|src|` per source.
    pub abs: u8,
    /// `-src` per source (VOP3P: `neg_lo`).
    pub neg: u8,
    /// VOP3P `neg_hi`.
    pub neg_hi: u8,
    /// `clamp`.
    pub clamp: bool,
    /// Output modifier: 0 none, 1 `mul:2`, 2 `mul:4`, 3 `div:2`.
    pub omod: u8,
    /// VOP3/VOP3P `op_sel`.
    pub op_sel: u8,
    /// VOP3P `op_sel_hi` (LLVM's default, printed as nothing, is all ones for the sources used).
    pub op_sel_hi: u8,
    /// MFMA `cbsz`.
    pub cbsz: u8,
    /// MFMA `abid`.
    pub abid: u8,
    /// MFMA `blgp`.
    pub blgp: u8,
    /// Immediate offset (DS `offset`/`offset0`, MUBUF/MTBUF/FLAT `offset`).
    pub offset: i32,
    /// DS `offset1` of the two-address forms.
    pub offset1: u8,
    /// `glc` (gfx940: `sc0`).
    pub glc: bool,
    /// `slc` (gfx940: `nt`).
    pub slc: bool,
    /// gfx940 `sc1`.
    pub sc1: bool,
    /// MUBUF/MTBUF `offen`.
    pub offen: bool,
    /// MUBUF/MTBUF `idxen`.
    pub idxen: bool,
    /// MUBUF `lds`: the loaded data goes to LDS at M0 + lane * 4 instead of a VGPR.
    pub lds: bool,
    /// MUBUF/MTBUF `tfe`.
    pub tfe: bool,
    /// DS `gds`.
    pub gds: bool,
    /// MTBUF data format.
    pub dfmt: u8,
    /// MTBUF numeric format.
    pub nfmt: u8,
    /// DPP controls (meaningful with [`Encoding::Dpp`]).
    pub dpp: Dpp,
    /// SDWA controls (meaningful with [`Encoding::Sdwa`]).
    pub sdwa: Sdwa,
    /// Not encoded: the LDS array (its number + 1) a DS access or an LDS DMA (`lds` bit) is
    /// known to touch, 0 when unknown. Instruction selection sets it so that `InsertWaitcnt`
    /// waits for a load-to-LDS only before accesses of the array it writes (decoded code: 0).
    pub lds_region: u8,
}

impl Default for Modifiers {
    fn default() -> Modifiers {
        Modifiers::NONE
    }
}

/// One machine instruction.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Inst {
    /// What it does.
    pub op: Opcode,
    /// Operands in LLVM's print order (destinations first). Implicit VCC of the 32-bit forms is
    /// listed where LLVM prints it.
    pub operands: SmallVec<[Operand; 4]>,
    /// Which encoding.
    pub encoding: Encoding,
    /// Non-operand fields.
    pub mods: Modifiers,
}

/// By copying: operands are `Copy`, and `SmallVec`'s own `Clone` pushes them one at a time
/// through an iterator (every pass after allocation clones whole blocks of instructions).
impl Clone for Inst {
    fn clone(&self) -> Inst {
        Inst {
            op: self.op,
            operands: SmallVec::from_slice(&self.operands),
            encoding: self.encoding,
            mods: self.mods,
        }
    }
}

impl Inst {
    /// An instruction in its native encoding with default modifiers.
    pub fn new(op: Opcode, operands: &[Operand]) -> Inst {
        Inst {
            op,
            operands: SmallVec::from_slice(operands),
            encoding: Encoding::Native,
            mods: Modifiers::default_for(op),
        }
    }

    /// The same instruction in another encoding.
    pub fn with_encoding(mut self, encoding: Encoding) -> Inst {
        self.encoding = encoding;
        self
    }

    /// The table entry of the opcode.
    pub fn info(&self) -> &'static OpInfo {
        self.op.info()
    }

    /// The operand list (roles, widths, access) of the form this instruction uses.
    pub fn operand_infos(&self) -> &'static [OperandInfo] {
        operand_infos(self.op, self.encoding, self.mods.glc)
    }

    /// LLVM assembler text for `target` (what `llvm-objdump-19 -d` prints, without the
    /// encoding comment).
    pub fn display(&self, target: Target) -> print::DisplayInst<'_> {
        print::DisplayInst { inst: self, target }
    }
}

impl Modifiers {
    /// Every field zero: what `Default` gives, as a constant (the passes compare an
    /// instruction's modifiers with it per instruction; the derived `default()` was built
    /// field by field on every call).
    pub const NONE: Modifiers = Modifiers {
        abs: 0,
        neg: 0,
        neg_hi: 0,
        clamp: false,
        omod: 0,
        op_sel: 0,
        op_sel_hi: 0,
        cbsz: 0,
        abid: 0,
        blgp: 0,
        offset: 0,
        offset1: 0,
        glc: false,
        slc: false,
        sc1: false,
        offen: false,
        idxen: false,
        lds: false,
        tfe: false,
        gds: false,
        dfmt: 0,
        nfmt: 0,
        dpp: Dpp {
            ctrl: 0,
            row_mask: 0,
            bank_mask: 0,
            bound_ctrl: false,
        },
        sdwa: Sdwa {
            dst_sel: 0,
            dst_unused: 0,
            src0_sel: 0,
            src1_sel: 0,
            sext: 0,
        },
        lds_region: 0,
    };

    /// LLVM's defaults for `op` (VOP3P `op_sel_hi` all ones; everything else zero).
    pub fn default_for(op: Opcode) -> Modifiers {
        let mut m = Modifiers::NONE;
        let info = op.info();
        // Packed math reads the high halves from the high halves unless told otherwise; the
        // mixed-precision FMA (`v_fma_mix*`/`v_mad_mix*`) defaults to low halves.
        if info.format == Format::Vop3p
            && !info.is_mfma()
            && !info.name.starts_with("v_fma_mix")
            && !info.name.starts_with("v_mad_mix")
        {
            m.op_sel_hi = 0b111;
        }
        m
    }
}

/// The operand list of `op` in `encoding` (DPP and SDWA use the native list); `glc` selects the
/// returning form of FLAT/GLOBAL atomics (`sc0` on gfx940).
pub fn operand_infos(op: Opcode, encoding: Encoding, glc: bool) -> &'static [OperandInfo] {
    let info = op.info();
    match encoding {
        Encoding::E64 => info.alt_operands,
        _ if glc && info.is_flat_atomic() => info.alt_operands,
        _ => info.operands,
    }
}

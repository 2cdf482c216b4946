//! Vector ALU semantics of the software GCN device: VOP1, VOP2, VOPC, VOP3 (a and b), VOP3P
//! (packed math), DPP and SDWA operand forms, `v_readlane/readfirstlane/writelane`, MFMA and
//! `v_accvgpr_*` on gfx90a/gfx942.
//!
//! Takes one decoded instruction and the wave it runs on; reads its operands through the wave's
//! operand API ([`Wave::read_vsrc`], [`Wave::read_scalar`], ...), computes every active lane in a
//! tight loop over 64-lane arrays, and writes results under EXEC. The scheduler has already checked
//! register hazards against outstanding memory operations and counts the instruction in the
//! launch statistics; this module only computes.
//!
//! Owned by the "valu" helper; the device core maps each decoded vector-ALU instruction once to a
//! [`ValuInst`] and calls [`execute`] for it.

pub mod compare;
pub mod convert;
pub mod float;
pub mod half;
pub mod int;
pub mod lanes;
pub mod mfma;
pub mod ops;
pub mod transcendental;

mod exec;

pub use exec::execute;

/// Entry point for the scheduler while its decoded form is still the placeholder `Inst`: such an
/// instruction carries no operands, so it is reported as unsupported. Decoders build a
/// [`ValuInst`] (see [`ValuOp::from_name`]) and call [`execute`] instead.
pub fn execute_valu(
    wave: &mut super::wave::Wave,
    inst: &super::Inst,
    target: kjit_backend_gcn::Target,
) -> Result<(), super::wave::EmuError> {
    let _ = (wave, target);
    Err(super::wave::EmuError::unsupported(format!(
        "vector ALU instruction without a decoded ValuInst ({inst:?})"
    )))
}
pub use ops::{CmpKind, CmpOp, CmpType, Op, ValuOp};

use lanes::{SdwaSel, SdwaUnused};

/// DPP operand controls (src0 is read across lanes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dpp {
    /// The 9-bit `dpp_ctrl` field.
    pub ctrl: u16,
    /// Rows (16 lanes each) that may be written.
    pub row_mask: u8,
    /// Banks (lanes `4b..4b+3` of every row) that may be written.
    pub bank_mask: u8,
    /// The encoded BOUND_CTRL bit (written `bound_ctrl:0` in LLVM syntax): invalid source lanes
    /// read 0 instead of disabling the write.
    pub bound_ctrl: bool,
}

/// SDWA operand and destination selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sdwa {
    /// Destination part written.
    pub dst_sel: SdwaSel,
    /// What happens to the rest of the destination.
    pub dst_unused: SdwaUnused,
    /// Parts of src0 and src1 read.
    pub src_sel: [SdwaSel; 2],
    /// Sign-extend the selected parts (integer operations).
    pub sext: [bool; 2],
}

/// Encoding form of a vector-ALU instruction: decides where the carry/compare result goes and
/// which modifiers exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// VOP1/VOP2/VOPC 32-bit encoding (implicit VCC).
    E32,
    /// VOP3 (a or b) 64-bit encoding.
    Vop3,
    /// VOP3P (packed math, MFMA).
    Vop3p,
    /// VOP1/VOP2/VOPC with a DPP word.
    Dpp(Dpp),
    /// VOP1/VOP2/VOPC with an SDWA word.
    Sdwa(Sdwa),
}

/// A vector-ALU instruction with its operation mapped and its operands resolved to hardware
/// codes, built once per decoded instruction (see `docs/emulator-valu.md` for the mapping from
/// the instruction layer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValuInst {
    /// The operation.
    pub op: ValuOp,
    /// The encoding form.
    pub form: Form,
    /// Destination VGPR (or AGPR, see `acc`) number 0..=255.
    pub vdst: u16,
    /// Scalar destination code: the carry-out / compare mask of VOP3b and VOPC-in-VOP3 (106 = VCC
    /// for E32 forms), the SGPR of `v_readlane`/`v_readfirstlane`.
    pub sdst: u16,
    /// Source codes in the 9-bit VOP encoding (0..=255 scalar codes, 256 + n = v_n); src2 of a
    /// carry-in or `v_cndmask` VOP3 form is the mask's scalar code.
    pub src: [u16; 3],
    /// The 32-bit literal when a source code is 255 (also the K of `v_madmk/madak/fmamk/fmaak`).
    pub literal: u32,
    /// VOP3/VOP3P/SDWA `neg` bits per source (VOP3P: `neg_lo`).
    pub neg: u8,
    /// VOP3/SDWA `abs` bits per source.
    pub abs: u8,
    /// Clamp the result.
    pub clamp: bool,
    /// Output modifier (1: *2, 2: *4, 3: /2).
    pub omod: u8,
    /// VOP3 `op_sel` (bit 3: destination high half) or VOP3P `op_sel`.
    pub op_sel: u8,
    /// VOP3P `op_sel_hi` (all ones when absent).
    pub op_sel_hi: u8,
    /// VOP3P `neg_hi` (the `abs` of the mix instructions).
    pub neg_hi: u8,
    /// Accumulation registers: bit 0 the destination is an AGPR, bits 1-3 src0-src2 are AGPRs.
    pub acc: u8,
    /// MFMA broadcast controls (only 0 is supported).
    pub cbsz: u8,
    /// MFMA `abid`.
    pub abid: u8,
    /// MFMA `blgp`.
    pub blgp: u8,
}

impl ValuInst {
    /// An instruction with no modifiers, for `op` in form `form` (tests and decoders start here).
    pub fn new(op: ValuOp, form: Form) -> ValuInst {
        ValuInst {
            op,
            form,
            vdst: 0,
            sdst: super::wave::code::VCC_LO,
            src: [0; 3],
            literal: 0,
            neg: 0,
            abs: 0,
            clamp: false,
            omod: 0,
            op_sel: 0,
            op_sel_hi: 0x7,
            neg_hi: 0,
            acc: 0,
            cbsz: 0,
            abid: 0,
            blgp: 0,
        }
    }
}

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
//! Owned by the "valu" helper; the device core calls [`execute_valu`] for every instruction whose
//! format is a vector-ALU format.

pub mod compare;
pub mod convert;
pub mod float;
pub mod half;
pub mod int;
pub mod lanes;
pub mod mfma;
pub mod transcendental;

use kjit_backend_gcn::Target;

use super::wave::{EmuError, Wave};
use super::Inst;

/// Executes one vector-ALU instruction on `wave`. Errors (unsupported opcode or modifier,
/// illegal operand) are returned unlocated; the scheduler adds wave, pc and instruction text.
pub fn execute_valu(wave: &mut Wave, inst: &Inst, target: Target) -> Result<(), EmuError> {
    let _ = (wave, target);
    Err(EmuError::unsupported(format!(
        "vector ALU instructions are not implemented yet ({inst:?})"
    )))
}

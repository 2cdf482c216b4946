//! MFMA wait states on gfx90a and gfx942: the one table both the compiler's [`hazards`] pass and
//! the software device's wait-state checker read.
//!
//! Takes an MFMA opcode and a target ([`MfmaKind::of`]: its pass count from the opcode table's
//! timing facts, `busy = 4 x passes`, and its class), gives the wait states each pair of a
//! producer and a consumer needs. Facts: LLVM 19 `GCNHazardRecognizer.cpp`
//! (`checkMAIHazards90A`, `checkMAIVALUHazards` and the `GFX940_*` pass-count functions);
//! XDL versus non-XDL from `VOP3PInstructions.td` (`is_gfx940_xdl`: on gfx942 the f32-input
//! shapes and the f64 DGEMMs are not XDL; on gfx90a every non-DGEMM MFMA counts as XDL).
//!
//! | first | second | wait states (P = passes of the MFMA) |
//! |---|---|---|
//! | MFMA writes | VALU reads (`v_accvgpr_read` included) | gfx90a P+3; gfx942 XDL P+3, other P+2; DGEMM 4x4: 6, 16x16: 11 |
//! | MFMA writes | VMEM/LDS/FLAT/export reads | same, but DGEMM 4x4: 9, 16x16: 18 |
//! | MFMA writes | VALU or memory overwrites (WAW) | gfx90a P+3; gfx942 XDL P+3, other P+2; DGEMM 4x4: 6, 16x16: 11 |
//! | MFMA writes | MFMA reads as SrcA/B (overlap) | gfx90a P+3; gfx942 XDL P+3, other P+2; DGEMM 4x4: 6, 16x16: 11 |
//! | MFMA writes | MFMA reads the same range as SrcC | 0; gfx942 2-pass: 2; DGEMM 4x4 → DGEMM 4x4: 4 |
//! | MFMA writes | MFMA reads an overlapping range as SrcC | gfx90a P (P+1 into a DGEMM, 0 from a DGEMM into a non-DGEMM); gfx942 XDL P+1, other P (0 from a non-XDL into an XDL); from DGEMM 16x16: 9, 4x4: 4 into a non-XDL |
//! | non-DGEMM MFMA reads SrcC (gfx942: XDL only) | VALU or memory overwrites it (WAR) | P−1 |
//! | VALU (not MFMA, not DOT) writes a VGPR/AGPR (`v_accvgpr_write` included) | MFMA reads it | 2 |
//! | VALU writes EXEC | MFMA | 4 |
//! | DGEMM | `v_fma_f64`/`v_fmac_f64` | 2 |
//! | VALU writes, then a DGEMM, then VMEM/LDS/FLAT reads it (gfx90a only) | | 2 from the write |
//!
//! Not covered: DOT-instruction rules, SMFMAC (sparse) forms, gfx950.
//!
//! [`hazards`]: crate::hazards

use crate::isa::{target_index, Opcode};
use crate::Target;

/// How the matrix unit runs an MFMA, which decides its wait states.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MfmaClass {
    /// The XDL pipeline (gfx942: f16/bf16/i8/xf32/fp8 inputs; gfx90a: every non-DGEMM MFMA).
    #[default]
    Xdl,
    /// gfx942's non-XDL single-precision MFMAs (f32 inputs).
    NonXdl,
    /// Double precision (`v_mfma_f64_*`).
    Dgemm,
}

/// An MFMA as the wait-state rules see it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MfmaKind {
    /// Passes of 4 cycles (2, 4, 8 or 16).
    pub passes: u8,
    /// Its pipeline class.
    pub class: MfmaClass,
}

/// What a non-MFMA instruction does with a register an MFMA wrote or reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A VALU instruction reads it.
    ValuRead,
    /// A VMEM, LDS, FLAT or export instruction reads it.
    MemRead,
    /// A VALU or memory instruction overwrites it.
    Write,
}

/// Wait states between a VALU (not MFMA) write of a VGPR/AGPR and an MFMA reading it.
pub const VALU_WRITE_TO_MFMA_READ: u8 = 2;
/// Wait states between a VALU write of EXEC and an MFMA.
pub const VALU_EXEC_TO_MFMA: u8 = 4;
/// Wait states between a DGEMM and `v_fma_f64`/`v_fmac_f64`.
pub const DGEMM_TO_FMA_F64: u8 = 2;
/// gfx90a only: wait states between a VALU write of a vector register and a VMEM/LDS/FLAT read
/// of it when a DGEMM issued in between (a hardware bug LLVM works around: the DGEMM makes the
/// sequencer skip its own wait).
pub const GFX90A_VALU_DGEMM_MEM_READ: u8 = 2;
/// No MFMA rule needs more wait states than this.
pub const MAX_WAIT: u8 = 19;

impl MfmaKind {
    /// The kind of `op` on `target`; `None` for non-MFMA opcodes and targets without MFMA.
    pub fn of(op: Opcode, target: Target) -> Option<MfmaKind> {
        let info = op.info();
        if !info.is_mfma() || target == Target::Gfx900 {
            return None;
        }
        let busy = info.timing.busy[target_index(target)];
        let passes = (busy / 4).max(2);
        let name = info.name;
        let class = if name.starts_with("v_mfma_f64") {
            MfmaClass::Dgemm
        } else if target == Target::Gfx942 && name.ends_with("f32") && !name.ends_with("xf32") {
            MfmaClass::NonXdl
        } else {
            MfmaClass::Xdl
        };
        Some(MfmaKind { passes, class })
    }

    fn dgemm(self) -> bool {
        self.class == MfmaClass::Dgemm
    }

    fn xdl(self) -> bool {
        self.class == MfmaClass::Xdl
    }

    /// The DGEMM 4x4 (`v_mfma_f64_4x4x4f64`, 4 passes) rather than the 16x16.
    fn dgemm_4x4(self) -> bool {
        self.dgemm() && self.passes <= 4
    }

    /// The shared "P+3 for XDL, P+2 otherwise" of gfx942 and "P+3" of gfx90a.
    fn pipeline_wait(self, target: Target) -> u8 {
        if target == Target::Gfx942 && !self.xdl() {
            self.passes + 2
        } else {
            self.passes + 3
        }
    }

    /// Of two producers that may reach one point (a CFG join), the one whose results need
    /// the longer waits.
    pub fn worse(self, o: MfmaKind) -> MfmaKind {
        let key = |k: MfmaKind| (k.passes, k.xdl(), k.dgemm());
        if key(o) > key(self) {
            o
        } else {
            self
        }
    }
}

/// Wait states after MFMA `producer` wrote a register before a non-MFMA instruction accesses it.
pub fn after_mfma_write(producer: MfmaKind, access: Access, target: Target) -> u8 {
    if producer.dgemm() {
        return match (access, producer.dgemm_4x4()) {
            (Access::MemRead, true) => 9,
            (Access::MemRead, false) => 18,
            (_, true) => 6,
            (_, false) => 11,
        };
    }
    producer.pipeline_wait(target)
}

/// Wait states after MFMA `producer` wrote a register before MFMA `consumer` reads it as SrcA/B.
pub fn mfma_srcab_after_mfma(producer: MfmaKind, target: Target) -> u8 {
    if producer.dgemm() {
        return if producer.dgemm_4x4() { 6 } else { 11 };
    }
    producer.pipeline_wait(target)
}

/// Wait states after MFMA `producer` wrote a register before MFMA `consumer` reads it as SrcC;
/// `exact`: the SrcC range is the producer's whole destination.
pub fn mfma_srcc_after_mfma(
    producer: MfmaKind,
    consumer: MfmaKind,
    exact: bool,
    target: Target,
) -> u8 {
    let gfx942 = target == Target::Gfx942;
    if !consumer.dgemm() && !gfx942 && producer.dgemm() {
        return 0;
    }
    if exact {
        return if producer.dgemm_4x4() && consumer.dgemm_4x4() {
            4
        } else if gfx942 && producer.passes == 2 {
            2
        } else {
            0
        };
    }
    if producer.dgemm() {
        // On gfx90a every non-DGEMM consumer counts as XDL (and returned above).
        let consumer_xdl = consumer.xdl();
        return match (consumer_xdl, producer.dgemm_4x4()) {
            (true, _) => 0,
            (false, true) => 4,
            (false, false) => 9,
        };
    }
    if gfx942 {
        if consumer.xdl() && !producer.xdl() {
            0
        } else if producer.xdl() {
            producer.passes + 1
        } else {
            producer.passes
        }
    } else {
        producer.passes + consumer.dgemm() as u8
    }
}

/// Wait states after MFMA `reader` read a register as SrcC before a VALU or memory instruction
/// overwrites it (the MFMA may still be reading it).
pub fn write_after_srcc_read(reader: MfmaKind, target: Target) -> u8 {
    if reader.dgemm() || (target == Target::Gfx942 && !reader.xdl()) {
        return 0;
    }
    reader.passes.saturating_sub(1)
}

/// Whether `op` is one of the FMA64 instructions that must wait [`DGEMM_TO_FMA_F64`] after a
/// DGEMM.
pub fn is_fma_f64(op: Opcode) -> bool {
    matches!(op.name(), "v_fma_f64" | "v_fmac_f64")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(name: &str, t: Target) -> MfmaKind {
        MfmaKind::of(Opcode::from_name(name).unwrap(), t).unwrap()
    }

    /// Pass counts come from the opcode table and match LLVM's scheduling model (gfx90a:
    /// 32x32x8f16 is 16 passes, gfx942: 8), and the classes follow `is_gfx940_xdl`.
    #[test]
    fn kinds_from_the_opcode_table() {
        use MfmaClass::*;
        let k = |n, t| {
            let k = kind(n, t);
            (k.passes, k.class)
        };
        assert_eq!(k("v_mfma_f32_32x32x8f16", Target::Gfx90a), (16, Xdl));
        assert_eq!(k("v_mfma_f32_32x32x8f16", Target::Gfx942), (8, Xdl));
        assert_eq!(k("v_mfma_f32_16x16x16f16", Target::Gfx942), (4, Xdl));
        assert_eq!(k("v_mfma_f32_4x4x4f16", Target::Gfx942), (2, Xdl));
        assert_eq!(k("v_mfma_f32_32x32x2f32", Target::Gfx942), (16, NonXdl));
        assert_eq!(k("v_mfma_f32_32x32x2f32", Target::Gfx90a), (16, Xdl));
        assert_eq!(k("v_mfma_f32_16x16x8_xf32", Target::Gfx942), (4, Xdl));
        assert_eq!(k("v_mfma_f64_4x4x4f64", Target::Gfx90a), (4, Dgemm));
        assert_eq!(k("v_mfma_f64_16x16x4f64", Target::Gfx942), (8, Dgemm));
        assert!(MfmaKind::of(Opcode::VAccvgprReadB32, Target::Gfx942).is_none());
        let f16 = Opcode::from_name("v_mfma_f32_32x32x8f16").unwrap();
        assert!(MfmaKind::of(f16, Target::Gfx900).is_none());
    }

    /// LLVM's numbers, case by case (the `GFX940_*` functions' comments and the gfx90a
    /// constants).
    #[test]
    fn wait_states_match_llvm() {
        let (a, c) = (Target::Gfx90a, Target::Gfx942);
        let x32 = |t| kind("v_mfma_f32_32x32x8f16", t);
        let x4 = |t| kind("v_mfma_f32_4x4x4f16", t);
        let f32_16 = |t| kind("v_mfma_f32_32x32x2f32", t);
        let d4 = |t| kind("v_mfma_f64_4x4x4f64", t);
        let d16 = |t| kind("v_mfma_f64_16x16x4f64", t);
        // Reads of results.
        assert_eq!(after_mfma_write(x32(a), Access::ValuRead, a), 19);
        assert_eq!(after_mfma_write(x32(c), Access::ValuRead, c), 11);
        assert_eq!(after_mfma_write(x4(a), Access::MemRead, a), 5);
        assert_eq!(after_mfma_write(f32_16(c), Access::ValuRead, c), 18);
        assert_eq!(after_mfma_write(d4(c), Access::MemRead, c), 9);
        assert_eq!(after_mfma_write(d16(a), Access::MemRead, a), 18);
        assert_eq!(after_mfma_write(d16(a), Access::ValuRead, a), 11);
        assert_eq!(after_mfma_write(d4(a), Access::Write, a), 6);
        assert_eq!(after_mfma_write(x4(c), Access::Write, c), 5);
        // SrcA/B.
        assert_eq!(mfma_srcab_after_mfma(x32(a), a), 19);
        assert_eq!(mfma_srcab_after_mfma(x32(c), c), 11);
        assert_eq!(mfma_srcab_after_mfma(f32_16(c), c), 18);
        assert_eq!(mfma_srcab_after_mfma(d4(a), a), 6);
        assert_eq!(mfma_srcab_after_mfma(d16(c), c), 11);
        // SrcC.
        assert_eq!(mfma_srcc_after_mfma(x4(a), x4(a), true, a), 0);
        assert_eq!(mfma_srcc_after_mfma(x4(c), x4(c), true, c), 2);
        assert_eq!(mfma_srcc_after_mfma(x32(c), x32(c), true, c), 0);
        assert_eq!(mfma_srcc_after_mfma(d4(a), d4(a), true, a), 4);
        assert_eq!(mfma_srcc_after_mfma(x4(a), x4(a), false, a), 2);
        assert_eq!(mfma_srcc_after_mfma(x32(a), x32(a), false, a), 16);
        assert_eq!(mfma_srcc_after_mfma(x32(a), d16(a), false, a), 17);
        assert_eq!(mfma_srcc_after_mfma(x4(c), x4(c), false, c), 3);
        assert_eq!(mfma_srcc_after_mfma(x32(c), x32(c), false, c), 9);
        assert_eq!(mfma_srcc_after_mfma(f32_16(c), f32_16(c), false, c), 16);
        assert_eq!(mfma_srcc_after_mfma(f32_16(c), x32(c), false, c), 0);
        assert_eq!(mfma_srcc_after_mfma(d16(a), x32(a), false, a), 0);
        assert_eq!(mfma_srcc_after_mfma(d16(a), d16(a), false, a), 9);
        assert_eq!(mfma_srcc_after_mfma(d16(c), x32(c), false, c), 0);
        assert_eq!(mfma_srcc_after_mfma(d4(c), f32_16(c), false, c), 4);
        // WAR.
        assert_eq!(write_after_srcc_read(x32(a), a), 15);
        assert_eq!(write_after_srcc_read(x32(c), c), 7);
        assert_eq!(
            write_after_srcc_read(kind("v_mfma_f32_16x16x16f16", c), c),
            3
        );
        assert_eq!(write_after_srcc_read(x4(a), a), 1);
        assert_eq!(write_after_srcc_read(f32_16(c), c), 0);
        assert_eq!(write_after_srcc_read(d16(a), a), 0);
    }
}

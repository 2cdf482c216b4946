//! The architectural state of one wave (64 lanes) and the operand access every execution unit
//! uses: scalar registers and specials, vector and accumulation registers, inline constants and
//! literals. Instruction semantics live elsewhere (`scalar`, `valu`, memory units); this file only
//! knows how operands are named and where their bits are.
//!
//! Scalar operands are addressed by the hardware's 8-bit source code (SSRC/SRC0 encoding of the
//! gfx9 ISA: 0-101 SGPRs, 102/103 flat_scratch, 104/105 xnack_mask, 106/107 vcc, 108-123 ttmp,
//! 124 m0, 126/127 exec, 128-208 integer inline constants, 235-238 apertures, 240-248 float
//! inline constants, 251 vccz, 252 execz, 253 scc, 255 literal), so that the same reader serves
//! every format; [`Wave::read_operand`] and friends map `isa::Operand`s onto it.
//!
//! Vector registers are `[u32; 64]` arrays: one array per register, one element per lane, so a
//! lane loop over an operand is a loop over a contiguous array.

// Lane loops index several 64-lane arrays by the same lane number.
#![allow(clippy::needless_range_loop)]

use kjit_backend_gcn::Target;

pub use super::error::{At, EmuError, WaveId};

/// Lanes per wave (all kjit targets run wave64).
pub const LANES: usize = 64;

/// One vector register: a value per lane.
pub type Lanes = [u32; LANES];

/// Addressable SGPRs s0..s101 on gfx9.
pub const NUM_SGPRS: usize = 102;

/// Hardware source codes of the scalar specials (gfx9 SSRC encoding).
pub mod code {
    /// `flat_scratch_lo`.
    pub const FLAT_SCRATCH_LO: u16 = 102;
    /// `flat_scratch_hi`.
    pub const FLAT_SCRATCH_HI: u16 = 103;
    /// `xnack_mask_lo`.
    pub const XNACK_MASK_LO: u16 = 104;
    /// `xnack_mask_hi`.
    pub const XNACK_MASK_HI: u16 = 105;
    /// `vcc_lo`.
    pub const VCC_LO: u16 = 106;
    /// `vcc_hi`.
    pub const VCC_HI: u16 = 107;
    /// `ttmp0`.
    pub const TTMP0: u16 = 108;
    /// `m0`.
    pub const M0: u16 = 124;
    /// `exec_lo`.
    pub const EXEC_LO: u16 = 126;
    /// `exec_hi`.
    pub const EXEC_HI: u16 = 127;
    /// Integer inline constant 0; 129..=192 are 1..=64, 193..=208 are -1..=-16.
    pub const ZERO: u16 = 128;
    /// `src_shared_base`.
    pub const SHARED_BASE: u16 = 235;
    /// `src_shared_limit`.
    pub const SHARED_LIMIT: u16 = 236;
    /// `src_private_base`.
    pub const PRIVATE_BASE: u16 = 237;
    /// `src_private_limit`.
    pub const PRIVATE_LIMIT: u16 = 238;
    /// `src_pops_exiting_wave_id`.
    pub const POPS_EXITING_WAVE_ID: u16 = 239;
    /// Float inline constant 0.5; 241..=248 are -0.5, 1, -1, 2, -2, 4, -4, 1/(2*pi).
    pub const HALF: u16 = 240;
    /// `src_vccz`.
    pub const VCCZ: u16 = 251;
    /// `src_execz`.
    pub const EXECZ: u16 = 252;
    /// `src_scc`.
    pub const SCC: u16 = 253;
    /// `src_lds_direct`.
    pub const LDS_DIRECT: u16 = 254;
    /// A 32-bit literal follows the instruction.
    pub const LITERAL: u16 = 255;
    /// Vector sources: 256 + VGPR number (the 9-bit SRC0 encoding of VOP formats).
    pub const VGPR0: u16 = 256;
}

/// Base of the generic-address window that maps to LDS (`src_shared_base`).
pub const SHARED_APERTURE: u64 = 0x0001_0000_0000_0000;
/// Base of the generic-address window that maps to the private (scratch) segment
/// (`src_private_base`).
pub const PRIVATE_APERTURE: u64 = 0x0002_0000_0000_0000;
/// Size of each aperture window.
pub const APERTURE_SIZE: u64 = 1 << 32;

/// How an operand's bits are interpreted; decides the value of inline float constants and how a
/// 32-bit literal widens to 64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SrcType {
    /// 32-bit integer or raw bits.
    B32,
    /// IEEE single.
    F32,
    /// IEEE half (in the low 16 bits); also used for 16-bit integers, whose inline integer
    /// constants are the same as for 32 bits.
    F16,
    /// 64-bit unsigned integer or raw bits: a literal is zero-extended.
    B64,
    /// 64-bit signed integer: a literal is sign-extended.
    I64,
    /// IEEE double: a literal gives the high 32 bits, the low 32 are zero.
    F64,
}

impl SrcType {
    /// Whether the operand is 64 bits wide.
    pub fn is_64(self) -> bool {
        matches!(self, SrcType::B64 | SrcType::I64 | SrcType::F64)
    }
}

/// The value of inline constant `code` (128..=208 or 240..=248) for an operand of type `ty`, as
/// the operand's bit pattern (zero-extended to 64 bits for 32/16-bit types).
pub fn inline_constant(code: u16, ty: SrcType) -> Option<u64> {
    match code {
        128..=192 => {
            let v = (code - 128) as i64;
            Some(int_const(v, ty))
        }
        193..=208 => {
            let v = -((code - 192) as i64);
            Some(int_const(v, ty))
        }
        240..=248 => {
            let i = (code - 240) as usize;
            // 0.5, -0.5, 1, -1, 2, -2, 4, -4, 1/(2*pi)
            const F32: [u32; 9] = [
                0x3f00_0000,
                0xbf00_0000,
                0x3f80_0000,
                0xbf80_0000,
                0x4000_0000,
                0xc000_0000,
                0x4080_0000,
                0xc080_0000,
                0x3e22_f983,
            ];
            const F16: [u16; 9] = [
                0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118,
            ];
            const F64: [u64; 9] = [
                0x3fe0_0000_0000_0000,
                0xbfe0_0000_0000_0000,
                0x3ff0_0000_0000_0000,
                0xbff0_0000_0000_0000,
                0x4000_0000_0000_0000,
                0xc000_0000_0000_0000,
                0x4010_0000_0000_0000,
                0xc010_0000_0000_0000,
                0x3fc4_5f30_6dc9_c882,
            ];
            Some(match ty {
                SrcType::F16 => F16[i] as u64,
                SrcType::F64 => F64[i],
                // Integer and f32 operands see the f32 bit pattern (the hardware does not
                // convert for integer instructions); 64-bit integer ones see it zero-extended.
                SrcType::B32 | SrcType::F32 | SrcType::B64 | SrcType::I64 => F32[i] as u64,
            })
        }
        _ => None,
    }
}

fn int_const(v: i64, ty: SrcType) -> u64 {
    if ty.is_64() {
        v as u64
    } else {
        v as i32 as u32 as u64
    }
}

/// Widens a 32-bit literal to an operand of type `ty`.
pub fn widen_literal(lit: u32, ty: SrcType) -> u64 {
    match ty {
        SrcType::F64 => (lit as u64) << 32,
        SrcType::I64 => lit as i32 as i64 as u64,
        _ => lit as u64,
    }
}

/// Architectural state of one wave.
#[derive(Clone)]
pub struct Wave {
    /// Which wave this is (for error messages and the scheduler).
    pub id: WaveId,
    /// The processor whose rules apply.
    pub target: Target,
    /// s0..s101.
    pub sgpr: [u32; NUM_SGPRS],
    /// SGPRs the kernel allocated (from the descriptor); higher ones are an error to touch.
    pub sgpr_limit: u32,
    /// Vector registers: the `vgpr_limit` the kernel descriptor allocates (v0..v255 at most).
    /// Instructions naming registers beyond them are rejected before they execute.
    pub vgpr: Vec<Lanes>,
    /// VGPRs the kernel allocated (descriptor; on gfx90a/gfx942 the `accum_offset` part).
    pub vgpr_limit: u32,
    /// Accumulation registers: the `agpr_limit` the descriptor allocates (gfx90a/gfx942; none on
    /// gfx900).
    pub agpr: Vec<Lanes>,
    /// AGPRs the kernel allocated.
    pub agpr_limit: u32,
    /// Active-lane mask.
    pub exec: u64,
    /// Vector condition code.
    pub vcc: u64,
    /// Scalar condition code.
    pub scc: bool,
    /// The M0 register (LDS base for `lds` loads, readlane index, ...).
    pub m0: u32,
    /// FLAT_SCRATCH register pair (`flat_scratch_lo/hi`).
    pub flat_scratch: u64,
    /// XNACK_MASK pair (kept only so that reads and writes work).
    pub xnack_mask: u64,
    /// Trap temporaries ttmp0..ttmp15.
    pub ttmp: [u32; 16],
    /// Byte address of the next instruction to execute.
    pub pc: u64,
    /// HW_REG_MODE (rounding, denormals, IEEE, DX10 clamp) as `s_getreg` reads it.
    pub mode: u32,
    /// HW_REG_TRAPSTS.
    pub trapsts: u32,
    /// The wave executed `s_endpgm`.
    pub done: bool,
}

impl Wave {
    /// A wave with all registers zero, for `target`, with the given register allocation.
    pub fn new(id: WaveId, target: Target, sgprs: u32, vgprs: u32, agprs: u32) -> Wave {
        let nagpr = if target.has_agprs() {
            agprs.min(256)
        } else {
            0
        };
        let nvgpr = vgprs.min(256);
        Wave {
            id,
            target,
            sgpr: [0; NUM_SGPRS],
            sgpr_limit: sgprs.min(NUM_SGPRS as u32),
            vgpr: vec![[0; LANES]; nvgpr as usize],
            vgpr_limit: nvgpr,
            agpr: vec![[0; LANES]; nagpr as usize],
            agpr_limit: nagpr,
            exec: 0,
            vcc: 0,
            scc: false,
            m0: 0,
            flat_scratch: 0,
            xnack_mask: 0,
            ttmp: [0; 16],
            pc: 0,
            mode: 0,
            trapsts: 0,
            done: false,
        }
    }

    /// Re-initialises the wave in place (all registers zero), keeping its host memory: a
    /// workgroup's waves are reused for the next workgroup on the same host thread.
    pub fn reset(&mut self, id: WaveId, target: Target, sgprs: u32, vgprs: u32, agprs: u32) {
        let nagpr = if target.has_agprs() {
            agprs.min(256)
        } else {
            0
        };
        let nvgpr = vgprs.min(256);
        self.id = id;
        self.target = target;
        self.sgpr = [0; NUM_SGPRS];
        self.sgpr_limit = sgprs.min(NUM_SGPRS as u32);
        self.vgpr.clear();
        self.vgpr.resize(nvgpr as usize, [0; LANES]);
        self.vgpr_limit = nvgpr;
        self.agpr.clear();
        self.agpr.resize(nagpr as usize, [0; LANES]);
        self.agpr_limit = nagpr;
        self.exec = 0;
        self.vcc = 0;
        self.scc = false;
        self.m0 = 0;
        self.flat_scratch = 0;
        self.xnack_mask = 0;
        self.ttmp = [0; 16];
        self.pc = 0;
        self.mode = 0;
        self.trapsts = 0;
        self.done = false;
    }

    /// Reads the 32-bit scalar source `code` (see [`code`]); `literal` is the instruction's
    /// literal, used when `code` is 255.
    #[inline]
    pub fn read_scalar(&self, code: u16, literal: u32, ty: SrcType) -> Result<u32, EmuError> {
        Ok(match code {
            0..=101 => self.sgpr[code as usize],
            code::FLAT_SCRATCH_LO => self.flat_scratch as u32,
            code::FLAT_SCRATCH_HI => (self.flat_scratch >> 32) as u32,
            code::XNACK_MASK_LO => self.xnack_mask as u32,
            code::XNACK_MASK_HI => (self.xnack_mask >> 32) as u32,
            code::VCC_LO => self.vcc as u32,
            code::VCC_HI => (self.vcc >> 32) as u32,
            108..=123 => self.ttmp[(code - code::TTMP0) as usize],
            code::M0 => self.m0,
            code::EXEC_LO => self.exec as u32,
            code::EXEC_HI => (self.exec >> 32) as u32,
            128..=208 | 240..=248 => inline_constant(code, ty).unwrap_or(0) as u32,
            // A 32-bit read of an aperture gives the high half of its base (what `s_mov_b32`
            // of `src_shared_base` yields, used as the high dword of a generic pointer).
            code::SHARED_BASE => (SHARED_APERTURE >> 32) as u32,
            code::SHARED_LIMIT => ((SHARED_APERTURE + APERTURE_SIZE - 1) >> 32) as u32,
            code::PRIVATE_BASE => (PRIVATE_APERTURE >> 32) as u32,
            code::PRIVATE_LIMIT => ((PRIVATE_APERTURE + APERTURE_SIZE - 1) >> 32) as u32,
            code::POPS_EXITING_WAVE_ID => 0,
            code::VCCZ => (self.vcc == 0) as u32,
            code::EXECZ => (self.exec == 0) as u32,
            code::SCC => self.scc as u32,
            code::LITERAL => {
                if ty == SrcType::F64 {
                    // The 32-bit view of an f64 literal operand: its high half.
                    literal
                } else {
                    literal
                }
            }
            _ => {
                return Err(EmuError::illegal(format!(
                    "scalar source code {code} is not defined on gfx9"
                )))
            }
        })
    }

    /// Reads the 64-bit scalar source starting at `code` (an SGPR pair, a special pair, or a
    /// constant widened as `ty` says).
    #[inline]
    pub fn read_scalar64(&self, code: u16, literal: u32, ty: SrcType) -> Result<u64, EmuError> {
        Ok(match code {
            0..=100 => {
                self.sgpr[code as usize] as u64 | (self.sgpr[code as usize + 1] as u64) << 32
            }
            code::FLAT_SCRATCH_LO => self.flat_scratch,
            code::XNACK_MASK_LO => self.xnack_mask,
            code::VCC_LO => self.vcc,
            108..=122 => {
                self.ttmp[(code - 108) as usize] as u64
                    | (self.ttmp[(code - 107) as usize] as u64) << 32
            }
            code::EXEC_LO => self.exec,
            128..=208 | 240..=248 => inline_constant(code, ty).unwrap_or(0),
            code::SHARED_BASE => SHARED_APERTURE,
            code::SHARED_LIMIT => SHARED_APERTURE + APERTURE_SIZE - 1,
            code::PRIVATE_BASE => PRIVATE_APERTURE,
            code::PRIVATE_LIMIT => PRIVATE_APERTURE + APERTURE_SIZE - 1,
            code::VCCZ | code::EXECZ | code::SCC | code::POPS_EXITING_WAVE_ID => {
                self.read_scalar(code, literal, SrcType::B32)? as u64
            }
            code::LITERAL => widen_literal(literal, ty),
            _ => {
                return Err(EmuError::illegal(format!(
                    "scalar source code {code} is not a valid 64-bit operand on gfx9"
                )))
            }
        })
    }

    /// Writes the 32-bit scalar destination `code` (0..=127).
    #[inline]
    pub fn write_scalar(&mut self, code: u16, v: u32) -> Result<(), EmuError> {
        match code {
            0..=101 => {
                if code as u32 >= self.sgpr_limit {
                    return Err(EmuError::illegal(format!(
                        "writes s{code}, beyond the {} SGPRs the kernel descriptor allocates",
                        self.sgpr_limit
                    )));
                }
                self.sgpr[code as usize] = v
            }
            code::FLAT_SCRATCH_LO => {
                self.flat_scratch = (self.flat_scratch & !0xffff_ffff) | v as u64
            }
            code::FLAT_SCRATCH_HI => {
                self.flat_scratch = (self.flat_scratch & 0xffff_ffff) | (v as u64) << 32
            }
            code::XNACK_MASK_LO => self.xnack_mask = (self.xnack_mask & !0xffff_ffff) | v as u64,
            code::XNACK_MASK_HI => {
                self.xnack_mask = (self.xnack_mask & 0xffff_ffff) | (v as u64) << 32
            }
            code::VCC_LO => self.vcc = (self.vcc & !0xffff_ffff) | v as u64,
            code::VCC_HI => self.vcc = (self.vcc & 0xffff_ffff) | (v as u64) << 32,
            108..=123 => self.ttmp[(code - code::TTMP0) as usize] = v,
            code::M0 => self.m0 = v,
            code::EXEC_LO => self.exec = (self.exec & !0xffff_ffff) | v as u64,
            code::EXEC_HI => self.exec = (self.exec & 0xffff_ffff) | (v as u64) << 32,
            _ => {
                return Err(EmuError::illegal(format!(
                    "scalar destination code {code} is not writable"
                )))
            }
        }
        Ok(())
    }

    /// Writes the 64-bit scalar destination starting at `code`.
    #[inline]
    pub fn write_scalar64(&mut self, code: u16, v: u64) -> Result<(), EmuError> {
        match code {
            code::VCC_LO => self.vcc = v,
            code::EXEC_LO => self.exec = v,
            code::FLAT_SCRATCH_LO => self.flat_scratch = v,
            code::XNACK_MASK_LO => self.xnack_mask = v,
            _ => {
                self.write_scalar(code, v as u32)?;
                self.write_scalar(code + 1, (v >> 32) as u32)?;
            }
        }
        Ok(())
    }

    /// Reads a vector-ALU source (9-bit code: scalar codes, or 256 + VGPR) for every lane into
    /// `out`. Scalar sources are broadcast.
    #[inline]
    pub fn read_vsrc(
        &self,
        code: u16,
        literal: u32,
        ty: SrcType,
        out: &mut Lanes,
    ) -> Result<(), EmuError> {
        if code >= code::VGPR0 {
            let r = (code - code::VGPR0) as usize;
            match self.vgpr.get(r) {
                Some(v) => *out = *v,
                None => return Err(self.beyond(r, 1)),
            }
        } else {
            let v = self.read_scalar(code, literal, ty)?;
            *out = [v; LANES];
        }
        Ok(())
    }

    /// Reads a 64-bit vector-ALU source (a VGPR pair, or a broadcast scalar pair/constant).
    #[inline]
    pub fn read_vsrc64(
        &self,
        code: u16,
        literal: u32,
        ty: SrcType,
        out: &mut [u64; LANES],
    ) -> Result<(), EmuError> {
        if code >= code::VGPR0 {
            let r = (code - code::VGPR0) as usize;
            if r + 1 >= self.vgpr.len() {
                return Err(self.beyond(r, 2));
            }
            let (lo, hi) = (&self.vgpr[r], &self.vgpr[r + 1]);
            for l in 0..LANES {
                out[l] = lo[l] as u64 | (hi[l] as u64) << 32;
            }
        } else {
            let v = self.read_scalar64(code, literal, ty)?;
            *out = [v; LANES];
        }
        Ok(())
    }

    /// Writes `vals` to VGPR `r` in the lanes set in `mask` (normally `exec`).
    #[inline]
    pub fn write_vgpr(&mut self, r: usize, vals: &Lanes, mask: u64) {
        let dst = &mut self.vgpr[r];
        if mask == u64::MAX {
            *dst = *vals;
        } else {
            for l in 0..LANES {
                if mask >> l & 1 != 0 {
                    dst[l] = vals[l];
                }
            }
        }
    }

    /// Writes 64-bit `vals` to the VGPR pair `v[r:r+1]` in the lanes set in `mask`.
    #[inline]
    pub fn write_vgpr64(
        &mut self,
        r: usize,
        vals: &[u64; LANES],
        mask: u64,
    ) -> Result<(), EmuError> {
        if r + 1 >= self.vgpr.len() {
            return Err(self.beyond(r, 2));
        }
        if mask == u64::MAX {
            // Full EXEC: a straight split, no per-lane test.
            let (lo, hi) = self.vgpr.split_at_mut(r + 1);
            let (lo, hi) = (&mut lo[r], &mut hi[0]);
            for l in 0..LANES {
                lo[l] = vals[l] as u32;
                hi[l] = (vals[l] >> 32) as u32;
            }
            return Ok(());
        }
        for l in 0..LANES {
            if mask >> l & 1 != 0 {
                self.vgpr[r][l] = vals[l] as u32;
                self.vgpr[r + 1][l] = (vals[l] >> 32) as u32;
            }
        }
        Ok(())
    }

    /// The error for VGPRs `r..r+n` beyond the kernel's allocation.
    pub fn beyond(&self, r: usize, n: usize) -> EmuError {
        EmuError::illegal(format!(
            "v[{r}:{}] is beyond the {} VGPRs the kernel descriptor allocates",
            r + n - 1,
            self.vgpr.len()
        ))
    }

    /// Lane `l` of VGPR `r`.
    #[inline]
    pub fn lane(&self, r: usize, l: usize) -> u32 {
        self.vgpr[r][l]
    }

    /// Whether lane `l` is active.
    #[inline]
    pub fn active(&self, l: usize) -> bool {
        self.exec >> l & 1 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wave() -> Wave {
        Wave::new(WaveId::default(), Target::Gfx942, 102, 256, 256)
    }

    #[test]
    fn scalar_codes_reach_registers_and_specials() {
        let mut w = wave();
        w.write_scalar(5, 7).unwrap();
        w.write_scalar64(code::VCC_LO, 0x1234_5678_9abc_def0)
            .unwrap();
        w.write_scalar64(code::EXEC_LO, u64::MAX).unwrap();
        w.write_scalar(code::M0, 99).unwrap();
        assert_eq!(w.read_scalar(5, 0, SrcType::B32).unwrap(), 7);
        assert_eq!(
            w.read_scalar(code::VCC_HI, 0, SrcType::B32).unwrap(),
            0x1234_5678
        );
        assert_eq!(
            w.read_scalar64(code::VCC_LO, 0, SrcType::B64).unwrap(),
            0x1234_5678_9abc_def0
        );
        assert_eq!(w.read_scalar(code::M0, 0, SrcType::B32).unwrap(), 99);
        assert_eq!(w.read_scalar(code::EXECZ, 0, SrcType::B32).unwrap(), 0);
        assert_eq!(w.read_scalar(code::VCCZ, 0, SrcType::B32).unwrap(), 0);
        w.write_scalar(4, 1).unwrap();
        assert_eq!(w.read_scalar64(4, 0, SrcType::B64).unwrap(), 0x7_0000_0001);
    }

    #[test]
    fn inline_constants_follow_the_operand_type() {
        let w = wave();
        assert_eq!(w.read_scalar(128 + 64, 0, SrcType::B32).unwrap(), 64);
        assert_eq!(w.read_scalar(193, 0, SrcType::B32).unwrap(), u32::MAX);
        assert_eq!(w.read_scalar64(193, 0, SrcType::B64).unwrap(), u64::MAX);
        assert_eq!(
            w.read_scalar(242, 0, SrcType::F32).unwrap(),
            1.0f32.to_bits()
        );
        assert_eq!(w.read_scalar(244, 0, SrcType::F16).unwrap(), 0x4000);
        assert_eq!(
            w.read_scalar64(247, 0, SrcType::F64).unwrap(),
            (-4.0f64).to_bits()
        );
        // 1/(2*pi) is the truncated double LLVM documents, one ulp below the rounded value.
        assert_eq!(
            w.read_scalar64(248, 0, SrcType::F64).unwrap(),
            0x3fc4_5f30_6dc9_c882
        );
        assert_eq!(
            f32::from_bits(w.read_scalar(248, 0, SrcType::F32).unwrap()),
            0.15915494f32
        );
        // Literals: zero-extended for unsigned 64-bit, sign-extended for signed, high half for f64.
        assert_eq!(
            w.read_scalar64(255, 0xffff_ffff, SrcType::B64).unwrap(),
            0xffff_ffff
        );
        assert_eq!(
            w.read_scalar64(255, 0xffff_ffff, SrcType::I64).unwrap(),
            u64::MAX
        );
        assert_eq!(
            w.read_scalar64(255, 0x4004_0000, SrcType::F64).unwrap(),
            2.5f64.to_bits()
        );
    }

    #[test]
    fn writes_beyond_the_allocation_are_errors() {
        let mut w = Wave::new(WaveId::default(), Target::Gfx900, 16, 8, 0);
        assert!(w.write_scalar(16, 1).is_err());
        assert!(w.write_scalar(125, 1).is_err());
        assert!(w.agpr.is_empty());
    }

    #[test]
    fn vector_sources_broadcast_scalars_and_copy_vgprs() {
        let mut w = wave();
        let mut vals = [0u32; LANES];
        for (l, v) in vals.iter_mut().enumerate() {
            *v = l as u32 * 3;
        }
        w.write_vgpr(7, &vals, 0x0000_0000_ffff_ffff);
        let mut out = [0u32; LANES];
        w.read_vsrc(code::VGPR0 + 7, 0, SrcType::B32, &mut out)
            .unwrap();
        assert_eq!(out[31], 93);
        assert_eq!(out[32], 0, "inactive lanes keep their old value");
        w.read_vsrc(255, 0xabcd, SrcType::B32, &mut out).unwrap();
        assert!(out.iter().all(|&x| x == 0xabcd));
        let mut out64 = [0u64; LANES];
        w.write_vgpr64(10, &[0x1_0000_0002; LANES], u64::MAX)
            .unwrap();
        w.read_vsrc64(code::VGPR0 + 10, 0, SrcType::B64, &mut out64)
            .unwrap();
        assert_eq!(out64[63], 0x1_0000_0002);
    }
}

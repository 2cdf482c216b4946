//! Operands of gfx9 instructions: registers and register tuples, special registers, inline
//! constants, literals and immediates, and the mapping between them and the 8/9-bit operand
//! codes of the scalar and vector encodings (gfx9 ISA, "Scalar/Vector operand encodings").

use std::fmt;

/// A special (non-general-purpose) scalar register or value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpecialReg {
    /// `flat_scratch` (pair, code 102).
    FlatScratch,
    /// `flat_scratch_lo` (102).
    FlatScratchLo,
    /// `flat_scratch_hi` (103).
    FlatScratchHi,
    /// `xnack_mask` (pair, 104).
    XnackMask,
    /// `xnack_mask_lo` (104).
    XnackMaskLo,
    /// `xnack_mask_hi` (105).
    XnackMaskHi,
    /// `vcc` (pair, 106).
    Vcc,
    /// `vcc_lo` (106).
    VccLo,
    /// `vcc_hi` (107).
    VccHi,
    /// `m0` (124).
    M0,
    /// `exec` (pair, 126).
    Exec,
    /// `exec_lo` (126).
    ExecLo,
    /// `exec_hi` (127).
    ExecHi,
    /// `src_shared_base` (235).
    SharedBase,
    /// `src_shared_limit` (236).
    SharedLimit,
    /// `src_private_base` (237).
    PrivateBase,
    /// `src_private_limit` (238).
    PrivateLimit,
    /// `src_pops_exiting_wave_id` (239).
    PopsExitingWaveId,
    /// `vccz` (251).
    Vccz,
    /// `execz` (252).
    Execz,
    /// `scc` (253).
    Scc,
    /// `lds_direct` (254).
    LdsDirect,
}

impl SpecialReg {
    /// The operand code and the number of dwords the register covers.
    pub fn code(self) -> (u16, u8) {
        use SpecialReg::*;
        match self {
            FlatScratch => (102, 2),
            FlatScratchLo => (102, 1),
            FlatScratchHi => (103, 1),
            XnackMask => (104, 2),
            XnackMaskLo => (104, 1),
            XnackMaskHi => (105, 1),
            Vcc => (106, 2),
            VccLo => (106, 1),
            VccHi => (107, 1),
            M0 => (124, 1),
            Exec => (126, 2),
            ExecLo => (126, 1),
            ExecHi => (127, 1),
            SharedBase => (235, 1),
            SharedLimit => (236, 1),
            PrivateBase => (237, 1),
            PrivateLimit => (238, 1),
            PopsExitingWaveId => (239, 1),
            Vccz => (251, 1),
            Execz => (252, 1),
            Scc => (253, 1),
            LdsDirect => (254, 1),
        }
    }

    /// LLVM's name.
    pub fn name(self) -> &'static str {
        use SpecialReg::*;
        match self {
            FlatScratch => "flat_scratch",
            FlatScratchLo => "flat_scratch_lo",
            FlatScratchHi => "flat_scratch_hi",
            XnackMask => "xnack_mask",
            XnackMaskLo => "xnack_mask_lo",
            XnackMaskHi => "xnack_mask_hi",
            Vcc => "vcc",
            VccLo => "vcc_lo",
            VccHi => "vcc_hi",
            M0 => "m0",
            Exec => "exec",
            ExecLo => "exec_lo",
            ExecHi => "exec_hi",
            SharedBase => "src_shared_base",
            SharedLimit => "src_shared_limit",
            PrivateBase => "src_private_base",
            PrivateLimit => "src_private_limit",
            PopsExitingWaveId => "src_pops_exiting_wave_id",
            Vccz => "vccz",
            Execz => "execz",
            Scc => "scc",
            LdsDirect => "lds_direct",
        }
    }

    /// The special register with operand code `code` seen as an operand `dwords` wide.
    pub fn from_code(code: u16, dwords: u8) -> Option<SpecialReg> {
        use SpecialReg::*;
        let wide = dwords >= 2;
        Some(match code {
            102 if wide => FlatScratch,
            102 => FlatScratchLo,
            103 if !wide => FlatScratchHi,
            104 if wide => XnackMask,
            104 => XnackMaskLo,
            105 if !wide => XnackMaskHi,
            106 if wide => Vcc,
            106 => VccLo,
            107 if !wide => VccHi,
            124 if !wide => M0,
            126 if wide => Exec,
            126 => ExecLo,
            127 if !wide => ExecHi,
            235 => SharedBase,
            236 => SharedLimit,
            237 => PrivateBase,
            238 => PrivateLimit,
            239 => PopsExitingWaveId,
            251 => Vccz,
            252 => Execz,
            253 => Scc,
            254 => LdsDirect,
            _ => return None,
        })
    }
}

/// The floating-point inline constants (codes 240..=248).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InlineFloat {
    /// 0.5
    Half,
    /// -0.5
    NegHalf,
    /// 1.0
    One,
    /// -1.0
    NegOne,
    /// 2.0
    Two,
    /// -2.0
    NegTwo,
    /// 4.0
    Four,
    /// -4.0
    NegFour,
    /// 1/(2*pi)
    InvTwoPi,
}

impl InlineFloat {
    /// Every inline float constant in code order.
    pub const ALL: [InlineFloat; 9] = [
        InlineFloat::Half,
        InlineFloat::NegHalf,
        InlineFloat::One,
        InlineFloat::NegOne,
        InlineFloat::Two,
        InlineFloat::NegTwo,
        InlineFloat::Four,
        InlineFloat::NegFour,
        InlineFloat::InvTwoPi,
    ];

    /// Operand code.
    pub fn code(self) -> u16 {
        240 + InlineFloat::ALL
            .iter()
            .position(|&c| c == self)
            .unwrap_or(0) as u16
    }

    /// The constant with operand code `code`.
    pub fn from_code(code: u16) -> Option<InlineFloat> {
        (240..=248)
            .contains(&code)
            .then(|| InlineFloat::ALL[(code - 240) as usize])
    }

    /// The value as an `f64`.
    pub fn value(self) -> f64 {
        match self {
            InlineFloat::Half => 0.5,
            InlineFloat::NegHalf => -0.5,
            InlineFloat::One => 1.0,
            InlineFloat::NegOne => -1.0,
            InlineFloat::Two => 2.0,
            InlineFloat::NegTwo => -2.0,
            InlineFloat::Four => 4.0,
            InlineFloat::NegFour => -4.0,
            InlineFloat::InvTwoPi => 0.159_154_943_091_895_35,
        }
    }

    /// LLVM's spelling for an operand of `bits` width (1/(2*pi) is printed to the precision of
    /// the operand type).
    pub fn text(self, bits: u32) -> &'static str {
        match self {
            InlineFloat::Half => "0.5",
            InlineFloat::NegHalf => "-0.5",
            InlineFloat::One => "1.0",
            InlineFloat::NegOne => "-1.0",
            InlineFloat::Two => "2.0",
            InlineFloat::NegTwo => "-2.0",
            InlineFloat::Four => "4.0",
            InlineFloat::NegFour => "-4.0",
            InlineFloat::InvTwoPi if bits == 64 => "0.15915494309189532",
            InlineFloat::InvTwoPi => "0.15915494",
        }
    }
}

/// One operand of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// `s5`, `s[4:7]`.
    Sgpr {
        /// First register.
        first: u16,
        /// Number of registers.
        count: u8,
    },
    /// `v5`, `v[0:1]`.
    Vgpr {
        /// First register.
        first: u16,
        /// Number of registers.
        count: u8,
    },
    /// `a5`, `a[0:15]` (gfx90a/gfx942).
    Agpr {
        /// First register.
        first: u16,
        /// Number of registers.
        count: u8,
    },
    /// `ttmp5`, `ttmp[4:7]`.
    Ttmp {
        /// First register.
        first: u16,
        /// Number of registers.
        count: u8,
    },
    /// A special register.
    Special(SpecialReg),
    /// An integer inline constant, -16..=64.
    InlineInt(i8),
    /// A floating-point inline constant.
    InlineFloat(InlineFloat),
    /// A 32-bit literal dword following the instruction.
    Literal(u32),
    /// An immediate field (offsets, simm16, branch offsets in dwords, `s_atc_probe`'s value).
    Imm(i64),
    /// `off`: an optional address register that is absent.
    Off,
}

impl Operand {
    /// `s{n}`.
    pub fn s(n: u16) -> Operand {
        Operand::Sgpr { first: n, count: 1 }
    }
    /// `v{n}`.
    pub fn v(n: u16) -> Operand {
        Operand::Vgpr { first: n, count: 1 }
    }
    /// `a{n}`.
    pub fn a(n: u16) -> Operand {
        Operand::Agpr { first: n, count: 1 }
    }
    /// `s[first:first+count-1]`.
    pub fn sr(first: u16, count: u8) -> Operand {
        Operand::Sgpr { first, count }
    }
    /// `v[first:first+count-1]`.
    pub fn vr(first: u16, count: u8) -> Operand {
        Operand::Vgpr { first, count }
    }
    /// `a[first:first+count-1]`.
    pub fn ar(first: u16, count: u8) -> Operand {
        Operand::Agpr { first, count }
    }

    /// Number of registers named (0 for constants and immediates).
    pub fn reg_count(&self) -> u8 {
        match *self {
            Operand::Sgpr { count, .. }
            | Operand::Vgpr { count, .. }
            | Operand::Agpr { count, .. }
            | Operand::Ttmp { count, .. } => count,
            Operand::Special(s) => s.code().1,
            _ => 0,
        }
    }

    /// The 9-bit source code of a scalar register, special register or inline constant (not
    /// VGPRs/AGPRs, which the caller offsets by 256; not literals, code 255).
    pub fn scalar_code(&self) -> Option<u16> {
        match *self {
            Operand::Sgpr { first, .. } if first <= 101 => Some(first),
            Operand::Ttmp { first, .. } if first <= 15 => Some(108 + first),
            Operand::Special(s) => Some(s.code().0),
            Operand::InlineInt(i) if (0..=64).contains(&i) => Some(128 + i as u16),
            Operand::InlineInt(i) if (-16..0).contains(&i) => Some((192 - i as i32) as u16),
            Operand::InlineFloat(f) => Some(f.code()),
            _ => None,
        }
    }

    /// The operand for scalar/source code `code` (below 256) as an operand `dwords` wide.
    /// Literals (255), DPP/SDWA markers (249/250) and unused codes give `None`.
    pub fn from_scalar_code(code: u16, dwords: u8) -> Option<Operand> {
        let count = dwords.max(1);
        Some(match code {
            0..=101 => Operand::Sgpr { first: code, count },
            108..=123 => Operand::Ttmp {
                first: code - 108,
                count,
            },
            128..=192 => Operand::InlineInt((code - 128) as i8),
            193..=208 => Operand::InlineInt(-((code - 192) as i8)),
            240..=248 => Operand::InlineFloat(InlineFloat::from_code(code)?),
            _ => Operand::Special(SpecialReg::from_code(code, dwords)?),
        })
    }

    /// Whether this is a VGPR or AGPR operand.
    pub fn is_vector_reg(&self) -> bool {
        matches!(self, Operand::Vgpr { .. } | Operand::Agpr { .. })
    }
}

fn reg_text(f: &mut fmt::Formatter<'_>, prefix: &str, first: u16, count: u8) -> fmt::Result {
    if count <= 1 {
        write!(f, "{prefix}{first}")
    } else {
        write!(f, "{prefix}[{first}:{}]", first as u32 + count as u32 - 1)
    }
}

impl fmt::Display for Operand {
    /// LLVM's spelling, where it does not depend on the operand's type (inline floats print
    /// for 32-bit operands; the printer handles 64-bit ones and literals of 16-bit operands).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Operand::Sgpr { first, count } => reg_text(f, "s", first, count),
            Operand::Vgpr { first, count } => reg_text(f, "v", first, count),
            Operand::Agpr { first, count } => reg_text(f, "a", first, count),
            Operand::Ttmp { first, count } => reg_text(f, "ttmp", first, count),
            Operand::Special(s) => f.write_str(s.name()),
            Operand::InlineInt(i) => write!(f, "{i}"),
            Operand::InlineFloat(c) => f.write_str(c.text(32)),
            Operand::Literal(v) => write!(f, "0x{v:x}"),
            Operand::Imm(v) => write!(f, "{v}"),
            Operand::Off => f.write_str("off"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_codes_round_trip() {
        for code in 0u16..256 {
            for w in [1u8, 2] {
                if let Some(op) = Operand::from_scalar_code(code, w) {
                    assert_eq!(op.scalar_code(), Some(code), "{op:?}");
                }
            }
        }
        assert_eq!(Operand::InlineInt(-16).scalar_code(), Some(208));
        assert_eq!(Operand::InlineInt(64).scalar_code(), Some(192));
        assert_eq!(Operand::from_scalar_code(255, 1), None);
    }

    #[test]
    fn registers_print_as_llvm_does() {
        assert_eq!(Operand::sr(4, 4).to_string(), "s[4:7]");
        assert_eq!(Operand::v(0).to_string(), "v0");
        assert_eq!(Operand::ar(0, 16).to_string(), "a[0:15]");
        assert_eq!(Operand::Special(SpecialReg::Vcc).to_string(), "vcc");
        assert_eq!(Operand::Literal(0x3f800000).to_string(), "0x3f800000");
    }
}

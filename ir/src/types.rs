//! Value types of the IR.
//!
//! Every SSA value has exactly one [`Type`]. Scalars are what a lane computes with; buffers are
//! kernel parameters only (a global address plus a length in elements), so that the backend can
//! build one raw buffer descriptor per parameter and get bounds checks from the hardware.

use std::fmt;

/// An element type: what a buffer or an LDS array holds. Every scalar type except `bool`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElemType {
    /// 32-bit two's complement, signed arithmetic.
    I32,
    /// 32-bit unsigned.
    U32,
    /// 64-bit signed.
    I64,
    /// 64-bit unsigned.
    U64,
    /// IEEE binary16.
    F16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
}

impl ElemType {
    /// Every element type, in a fixed order (used by tests and random program generators).
    pub const ALL: [ElemType; 7] = [
        ElemType::I32,
        ElemType::U32,
        ElemType::I64,
        ElemType::U64,
        ElemType::F16,
        ElemType::F32,
        ElemType::F64,
    ];

    /// The scalar value type of one element.
    pub fn ty(self) -> Type {
        match self {
            ElemType::I32 => Type::I32,
            ElemType::U32 => Type::U32,
            ElemType::I64 => Type::I64,
            ElemType::U64 => Type::U64,
            ElemType::F16 => Type::F16,
            ElemType::F32 => Type::F32,
            ElemType::F64 => Type::F64,
        }
    }

    /// Size of one element in bytes.
    pub fn bytes(self) -> u32 {
        self.ty().bytes()
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.ty().fmt(f)
    }
}

/// The type of an SSA value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Type {
    /// A lane's truth value (a lane mask bit, or SCC when uniform).
    Bool,
    /// 32-bit signed integer.
    I32,
    /// 32-bit unsigned integer.
    U32,
    /// 64-bit signed integer.
    I64,
    /// 64-bit unsigned integer.
    U64,
    /// IEEE binary16.
    F16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// A wave-level matrix fragment: the part of an MFMA operand or accumulator one lane holds
    /// (`docs/mfma.md`), packed in consecutive dwords.
    Frag(FragType),
    /// A global buffer parameter: base address and length in elements.
    Buffer {
        /// What it holds.
        elem: ElemType,
        /// Whether the kernel may store to it (and use atomics on it).
        writable: bool,
    },
}

impl Type {
    /// Every scalar type.
    pub const SCALARS: [Type; 8] = [
        Type::Bool,
        Type::I32,
        Type::U32,
        Type::I64,
        Type::U64,
        Type::F16,
        Type::F32,
        Type::F64,
    ];

    /// Size in bytes of the value in a register (a buffer is its 64-bit address; bool is 1).
    pub fn bytes(self) -> u32 {
        match self {
            Type::Bool => 1,
            Type::F16 => 2,
            Type::I32 | Type::U32 | Type::F32 => 4,
            Type::I64 | Type::U64 | Type::F64 | Type::Buffer { .. } => 8,
            Type::Frag(f) => f.bytes(),
        }
    }

    /// Width in bits of a scalar's representation.
    pub fn bits(self) -> u32 {
        match self {
            Type::Bool => 1,
            _ => self.bytes() * 8,
        }
    }

    /// Integer types (signed or unsigned; not bool).
    pub fn is_int(self) -> bool {
        matches!(self, Type::I32 | Type::U32 | Type::I64 | Type::U64)
    }

    /// Signed integer types: division, remainder, right shift, min/max and comparisons are signed.
    pub fn is_signed(self) -> bool {
        matches!(self, Type::I32 | Type::I64)
    }

    /// Floating-point types.
    pub fn is_float(self) -> bool {
        matches!(self, Type::F16 | Type::F32 | Type::F64)
    }

    /// Scalars are everything but buffers and fragments.
    pub fn is_scalar(self) -> bool {
        !matches!(self, Type::Buffer { .. } | Type::Frag(_))
    }

    /// The fragment type, for fragments.
    pub fn frag(self) -> Option<FragType> {
        match self {
            Type::Frag(f) => Some(f),
            _ => None,
        }
    }

    /// The element type with the same representation, for scalars other than bool.
    pub fn elem(self) -> Option<ElemType> {
        Some(match self {
            Type::I32 => ElemType::I32,
            Type::U32 => ElemType::U32,
            Type::I64 => ElemType::I64,
            Type::U64 => ElemType::U64,
            Type::F16 => ElemType::F16,
            Type::F32 => ElemType::F32,
            Type::F64 => ElemType::F64,
            _ => return None,
        })
    }

    /// Mask of the representation bits in a `u64` (values are kept zero-extended).
    pub fn mask(self) -> u64 {
        match self.bits() {
            64 => u64::MAX,
            b => (1u64 << b) - 1,
        }
    }

    /// Parses the textual name of a type, as [`fmt::Display`] prints it.
    pub fn parse(s: &str) -> Option<Type> {
        Some(match s {
            "bool" => Type::Bool,
            "i32" => Type::I32,
            "u32" => Type::U32,
            "i64" => Type::I64,
            "u64" => Type::U64,
            "f16" => Type::F16,
            "f32" => Type::F32,
            "f64" => Type::F64,
            _ if FragType::parse(s).is_some() => Type::Frag(FragType::parse(s)?),
            _ => {
                let (writable, rest) = if let Some(r) = s.strip_prefix("buf_mut<") {
                    (true, r)
                } else if let Some(r) = s.strip_prefix("buf<") {
                    (false, r)
                } else {
                    return None;
                };
                let inner = rest.strip_suffix('>')?;
                let elem = Type::parse(inner)?.elem()?;
                Type::Buffer { elem, writable }
            }
        })
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Bool => f.write_str("bool"),
            Type::I32 => f.write_str("i32"),
            Type::U32 => f.write_str("u32"),
            Type::I64 => f.write_str("i64"),
            Type::U64 => f.write_str("u64"),
            Type::F16 => f.write_str("f16"),
            Type::F32 => f.write_str("f32"),
            Type::F64 => f.write_str("f64"),
            Type::Frag(t) => t.fmt(f),
            Type::Buffer { elem, writable } => {
                write!(f, "{}<{}>", if *writable { "buf_mut" } else { "buf" }, elem)
            }
        }
    }
}

/// The element of a matrix fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FragElem {
    /// IEEE binary16.
    F16,
    /// bfloat16 (the top half of an f32). kjit has no bf16 scalar: bf16 data lives in 16-bit
    /// memory (`f16` buffers and LDS arrays holding bf16 bit patterns) and 16-bit values.
    Bf16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
}

impl FragElem {
    /// Bytes per element.
    pub fn bytes(self) -> u32 {
        match self {
            FragElem::F16 | FragElem::Bf16 => 2,
            FragElem::F32 => 4,
            FragElem::F64 => 8,
        }
    }

    /// The scalar type that carries one element's bits (`f16` for bf16) and the memory element
    /// a fragment of it is loaded from.
    pub fn carrier(self) -> Type {
        match self {
            FragElem::F16 | FragElem::Bf16 => Type::F16,
            FragElem::F32 => Type::F32,
            FragElem::F64 => Type::F64,
        }
    }

    /// Name in the text form.
    pub fn name(self) -> &'static str {
        match self {
            FragElem::F16 => "f16",
            FragElem::Bf16 => "bf16",
            FragElem::F32 => "f32",
            FragElem::F64 => "f64",
        }
    }
}

/// A fragment type: `len` elements per lane, packed (`f16x4` is two dwords).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FragType {
    /// Element type.
    pub elem: FragElem,
    /// Elements per lane.
    pub len: u8,
}

impl FragType {
    /// A fragment of `len` elements of `elem`.
    pub const fn new(elem: FragElem, len: u8) -> FragType {
        FragType { elem, len }
    }

    /// Bytes per lane.
    pub fn bytes(self) -> u32 {
        self.elem.bytes() * self.len as u32
    }

    /// Dwords per lane (the register tuple's width).
    pub fn dwords(self) -> u32 {
        self.bytes().div_ceil(4)
    }

    /// Parses `f16x4`, `bf16x4`, `f32x16`, `f64x4`, ...
    pub fn parse(s: &str) -> Option<FragType> {
        let (e, n) = s.split_once('x')?;
        let elem = match e {
            "f16" => FragElem::F16,
            "bf16" => FragElem::Bf16,
            "f32" => FragElem::F32,
            "f64" => FragElem::F64,
            _ => return None,
        };
        let len: u8 = n.parse().ok()?;
        (len > 0 && len.is_power_of_two() && len <= 32).then_some(FragType { elem, len })
    }
}

impl fmt::Display for FragType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.elem.name(), self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_name_parses_back() {
        let mut all: Vec<Type> = Type::SCALARS.to_vec();
        for e in ElemType::ALL {
            all.push(Type::Buffer {
                elem: e,
                writable: false,
            });
            all.push(Type::Buffer {
                elem: e,
                writable: true,
            });
        }
        for t in all {
            assert_eq!(Type::parse(&t.to_string()), Some(t), "{t}");
        }
        for t in ["f16x4", "bf16x4", "f32x16", "f32x4", "f64x4"] {
            let ty = Type::parse(t).unwrap();
            assert_eq!(ty.to_string(), t);
            assert!(!ty.is_scalar());
        }
        assert_eq!(Type::parse("f16x3"), None);
        assert_eq!(Type::parse("buf<bool>"), None);
        assert_eq!(Type::parse("i33"), None);
    }
}

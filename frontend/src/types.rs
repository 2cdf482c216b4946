//! The Rust types a kernel computes with, mapped to IR types.

use half::f16;
use kjit_ir::{ElemType, Type};

/// A scalar type a kernel value can have: `bool`, `i32`, `u32`, `i64`, `u64`, `f16`, `f32`,
/// `f64`.
pub trait Scalar: Copy + 'static {
    /// The IR type.
    const TY: Type;
    /// The representation bits of a constant.
    fn to_bits(self) -> u64;
}

/// Numbers: every scalar but `bool`. These can live in buffers and LDS.
pub trait Num: Scalar {
    /// The element type of a buffer of them.
    const ELEM: ElemType;
}

/// Integers: bitwise operations, shifts and remainders.
pub trait Int: Num {}

/// Floats: square roots, reciprocals, transcendentals and fused multiply-add.
pub trait Float: Num {}

/// Types that can index memory: `u32` and `i32`.
pub trait Index: Int {}

impl Scalar for bool {
    const TY: Type = Type::Bool;
    fn to_bits(self) -> u64 {
        self as u64
    }
}

macro_rules! int_type {
    ($t:ty, $ty:ident, $u:ty) => {
        impl Scalar for $t {
            const TY: Type = Type::$ty;
            fn to_bits(self) -> u64 {
                self as $u as u64
            }
        }
        impl Num for $t {
            const ELEM: ElemType = ElemType::$ty;
        }
        impl Int for $t {}
    };
}
int_type!(i32, I32, u32);
int_type!(u32, U32, u32);
int_type!(i64, I64, u64);
int_type!(u64, U64, u64);
impl Index for i32 {}
impl Index for u32 {}

impl Scalar for f16 {
    const TY: Type = Type::F16;
    fn to_bits(self) -> u64 {
        f16::to_bits(self) as u64
    }
}
impl Num for f16 {
    const ELEM: ElemType = ElemType::F16;
}
impl Float for f16 {}

impl Scalar for f32 {
    const TY: Type = Type::F32;
    fn to_bits(self) -> u64 {
        f32::to_bits(self) as u64
    }
}
impl Num for f32 {
    const ELEM: ElemType = ElemType::F32;
}
impl Float for f32 {}

impl Scalar for f64 {
    const TY: Type = Type::F64;
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
}
impl Num for f64 {
    const ELEM: ElemType = ElemType::F64;
}
impl Float for f64 {}

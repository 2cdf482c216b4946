//! Value handles: [`Val`] (typed), [`AnyVal`] (type checked at run time) and [`Var`] (a mutable
//! variable). Arithmetic reads like Rust: operators where Rust has them, methods otherwise.

use crate::builder::{KernelBuilder, Site};
use crate::types::{Float, Int, Num, Scalar};
use half::f16;
use kjit_ir::{BinaryOp, CmpOp, InstData, ReduceOp, TernaryOp, Type, UnaryOp, Value};
use std::marker::PhantomData;
use std::ops;
use std::panic::Location;

/// A value of type `T` in the kernel being built by `'k`'s builder.
pub struct Val<'k, T> {
    pub(crate) k: &'k KernelBuilder,
    pub(crate) v: Value,
    _t: PhantomData<T>,
}

impl<T> Clone for Val<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Val<'_, T> {}

impl<T> std::fmt::Debug for Val<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.v)
    }
}

/// A value whose type is known only at run time (for generated kernels); operations check it.
#[derive(Clone, Copy)]
pub struct AnyVal<'k> {
    pub(crate) k: &'k KernelBuilder,
    pub(crate) v: Value,
    pub(crate) ty: Type,
}

impl<'k> AnyVal<'k> {
    /// The value's type.
    pub fn ty(&self) -> Type {
        self.ty
    }
    /// The IR value.
    pub fn value(&self) -> Value {
        self.v
    }
    /// The typed handle; a type mismatch is recorded as an error.
    #[track_caller]
    pub fn typed<T: Scalar>(self) -> Val<'k, T> {
        if self.ty != T::TY {
            let site = Location::caller();
            self.k.record(
                "typed",
                site,
                format!("{} is {}, not {}", self.v, self.ty, T::TY),
            );
            return self
                .k
                .emit_val("typed", site, InstData::Const { ty: T::TY, bits: 0 });
        }
        Val::new(self.k, self.v)
    }
}

impl<'k, T: Scalar> Val<'k, T> {
    pub(crate) fn new(k: &'k KernelBuilder, v: Value) -> Self {
        Val {
            k,
            v,
            _t: PhantomData,
        }
    }
    /// The IR value.
    pub fn value(&self) -> Value {
        self.v
    }
    /// Forgets the static type.
    pub fn any(self) -> AnyVal<'k> {
        AnyVal {
            k: self.k,
            v: self.v,
            ty: T::TY,
        }
    }

    /// `self op rhs` where `rhs` is a value or a literal.
    pub(crate) fn binary_with(
        self,
        op: BinaryOp,
        rhs: impl Operand<T>,
        call: &str,
        site: Site,
    ) -> Self {
        let a = self.k.own(self, call, site);
        let b = rhs.ir_value(self.k, call, site);
        self.k
            .emit_val(call, site, InstData::Binary { op, args: [a, b] })
    }

    pub(crate) fn un(self, op: UnaryOp, call: &str, site: Site) -> Self {
        let a = self.k.own(self, call, site);
        self.k.emit_val(call, site, InstData::Unary { op, arg: a })
    }
    fn cmp(self, op: CmpOp, rhs: impl Operand<T>, call: &str, site: Site) -> Val<'k, bool> {
        let (a, b) = (
            self.k.own(self, call, site),
            rhs.ir_value(self.k, call, site),
        );
        self.k
            .emit_val(call, site, InstData::Cmp { op, args: [a, b] })
    }

    /// `self == rhs`.
    #[track_caller]
    pub fn eq(self, rhs: impl Operand<T>) -> Val<'k, bool> {
        self.cmp(CmpOp::Eq, rhs, "eq", Location::caller())
    }
    /// `self != rhs` (true when either float is NaN).
    #[track_caller]
    pub fn ne(self, rhs: impl Operand<T>) -> Val<'k, bool> {
        self.cmp(CmpOp::Ne, rhs, "ne", Location::caller())
    }

    /// Value conversion to `U` (see `kjit_ir::InstData::Convert` for the rules).
    #[track_caller]
    pub fn cast<U: Scalar>(self) -> Val<'k, U> {
        let site = Location::caller();
        let a = self.k.own(self, "cast", site);
        self.k
            .emit_val("cast", site, InstData::Convert { to: U::TY, arg: a })
    }

    /// Reinterprets the bits as `U` (same width, not bool).
    #[track_caller]
    pub fn bitcast<U: Scalar>(self) -> Val<'k, U> {
        let site = Location::caller();
        let a = self.k.own(self, "bitcast", site);
        self.k
            .emit_val("bitcast", site, InstData::Bitcast { to: U::TY, arg: a })
    }
}

impl<'k, T: Num> Val<'k, T> {
    /// `self < rhs`.
    #[track_caller]
    pub fn lt(self, rhs: impl Operand<T>) -> Val<'k, bool> {
        self.cmp(CmpOp::Lt, rhs, "lt", Location::caller())
    }
    /// `self <= rhs`.
    #[track_caller]
    pub fn le(self, rhs: impl Operand<T>) -> Val<'k, bool> {
        self.cmp(CmpOp::Le, rhs, "le", Location::caller())
    }
    /// `self > rhs`.
    #[track_caller]
    pub fn gt(self, rhs: impl Operand<T>) -> Val<'k, bool> {
        self.cmp(CmpOp::Gt, rhs, "gt", Location::caller())
    }
    /// `self >= rhs`.
    #[track_caller]
    pub fn ge(self, rhs: impl Operand<T>) -> Val<'k, bool> {
        self.cmp(CmpOp::Ge, rhs, "ge", Location::caller())
    }
    /// Minimum (floats: IEEE minNum).
    #[track_caller]
    pub fn min(self, rhs: impl Operand<T>) -> Self {
        self.binary_with(BinaryOp::Min, rhs, "min", Location::caller())
    }
    /// Maximum (floats: IEEE maxNum).
    #[track_caller]
    pub fn max(self, rhs: impl Operand<T>) -> Self {
        self.binary_with(BinaryOp::Max, rhs, "max", Location::caller())
    }
    /// `self` limited to `[lo, hi]`: `min(max(self, lo), hi)` (floats: a NaN `self` gives `lo`,
    /// as IEEE maxNum does).
    #[track_caller]
    pub fn clamp(self, lo: impl Operand<T>, hi: impl Operand<T>) -> Self {
        let site = Location::caller();
        self.binary_with(BinaryOp::Max, lo, "clamp", site)
            .binary_with(BinaryOp::Min, hi, "clamp", site)
    }
    /// Absolute value (integers wrap at MIN).
    #[track_caller]
    pub fn abs(self) -> Self {
        self.un(UnaryOp::Abs, "abs", Location::caller())
    }
}

impl<'k, T: Float> Val<'k, T> {
    /// Square root, correctly rounded.
    #[track_caller]
    pub fn sqrt(self) -> Self {
        self.un(UnaryOp::Sqrt, "sqrt", Location::caller())
    }
    /// Reciprocal (1 ulp on the hardware).
    #[track_caller]
    pub fn rcp(self) -> Self {
        self.un(UnaryOp::Rcp, "rcp", Location::caller())
    }
    /// 2^x (about 1 ulp).
    #[track_caller]
    pub fn exp2(self) -> Self {
        self.un(UnaryOp::Exp2, "exp2", Location::caller())
    }
    /// log2(x) (about 1 ulp).
    #[track_caller]
    pub fn log2(self) -> Self {
        self.un(UnaryOp::Log2, "log2", Location::caller())
    }
    /// Sine of radians (the hardware loses accuracy far from 0).
    #[track_caller]
    pub fn sin(self) -> Self {
        self.un(UnaryOp::Sin, "sin", Location::caller())
    }
    /// Cosine of radians.
    #[track_caller]
    pub fn cos(self) -> Self {
        self.un(UnaryOp::Cos, "cos", Location::caller())
    }
    /// Largest integer not above `self` (exact).
    #[track_caller]
    pub fn floor(self) -> Self {
        self.un(UnaryOp::Floor, "floor", Location::caller())
    }
    /// Smallest integer not below `self` (exact).
    #[track_caller]
    pub fn ceil(self) -> Self {
        self.un(UnaryOp::Ceil, "ceil", Location::caller())
    }
    /// `self` rounded toward zero (exact).
    #[track_caller]
    pub fn trunc(self) -> Self {
        self.un(UnaryOp::Trunc, "trunc", Location::caller())
    }
    /// `self` rounded to the nearest integer, ties to even (`2.5 -> 2`, `3.5 -> 4`; exact). This
    /// is the hardware's rounding (`v_rndne`); Rust's `f32::round` rounds ties away from zero.
    #[track_caller]
    pub fn round(self) -> Self {
        self.un(UnaryOp::RoundEven, "round", Location::caller())
    }
    /// `1/sqrt(self)`: 0.5 ulp in the interpreter and on kjit's device for normal inputs (f32:
    /// one `v_rsq_f32`, which the hardware documents at 1 ulp and which flushes subnormal inputs,
    /// so a subnormal `self` gives +inf on a device; f64: sqrt and an IEEE divide).
    #[track_caller]
    pub fn rsqrt(self) -> Self {
        self.un(UnaryOp::Rsqrt, "rsqrt", Location::caller())
    }
    /// `self * b + c` with one rounding.
    #[track_caller]
    pub fn fma(self, b: Val<'_, T>, c: Val<'_, T>) -> Self {
        let site = Location::caller();
        let k = self.k;
        let args = [
            k.own(self, "fma", site),
            k.own(b, "fma", site),
            k.own(c, "fma", site),
        ];
        k.emit_val(
            "fma",
            site,
            InstData::Ternary {
                op: TernaryOp::Fma,
                args,
            },
        )
    }
}

macro_rules! binop {
    ($tr:ident, $m:ident, $op:expr, $bound:ident) => {
        impl<'k, T: $bound> ops::$tr<Val<'k, T>> for Val<'k, T> {
            type Output = Val<'k, T>;
            #[track_caller]
            fn $m(self, rhs: Val<'k, T>) -> Val<'k, T> {
                self.binary_with($op, rhs, stringify!($m), Location::caller())
            }
        }
        impl<'k, T: $bound> ops::$tr<T> for Val<'k, T>
        where
            T: Operand<T>,
        {
            type Output = Val<'k, T>;
            #[track_caller]
            fn $m(self, rhs: T) -> Val<'k, T> {
                self.binary_with($op, rhs, stringify!($m), Location::caller())
            }
        }
    };
}
binop!(Add, add, BinaryOp::Add, Num);
binop!(Sub, sub, BinaryOp::Sub, Num);
binop!(Mul, mul, BinaryOp::Mul, Num);
binop!(Div, div, BinaryOp::Div, Num);
binop!(Rem, rem, BinaryOp::Rem, Int);
binop!(Shl, shl, BinaryOp::Shl, Int);
binop!(Shr, shr, BinaryOp::Shr, Int);
binop!(BitAnd, bitand, BinaryOp::And, Bits);
binop!(BitOr, bitor, BinaryOp::Or, Bits);
binop!(BitXor, bitxor, BinaryOp::Xor, Bits);

/// Types with bitwise and/or/xor/not: integers and bool.
pub trait Bits: Scalar {}
impl Bits for bool {}
impl Bits for i32 {}
impl Bits for u32 {}
impl Bits for i64 {}
impl Bits for u64 {}

impl<'k, T: Num> ops::Neg for Val<'k, T> {
    type Output = Val<'k, T>;
    #[track_caller]
    fn neg(self) -> Self {
        self.un(UnaryOp::Neg, "neg", Location::caller())
    }
}

impl<'k, T: Bits> ops::Not for Val<'k, T> {
    type Output = Val<'k, T>;
    #[track_caller]
    fn not(self) -> Self {
        self.un(UnaryOp::Not, "not", Location::caller())
    }
}

/// A Rust literal on the left of an operator: `2.0f32 / x`, `1u32 << i`.
macro_rules! lhs_literal {
    ($tr:ident, $m:ident, $op:expr, $($t:ty),*) => {$(
        impl<'k> ops::$tr<Val<'k, $t>> for $t {
            type Output = Val<'k, $t>;
            #[track_caller]
            fn $m(self, rhs: Val<'k, $t>) -> Val<'k, $t> {
                let site = Location::caller();
                let c = Val::<$t>::new(rhs.k, self.ir_value(rhs.k, stringify!($m), site));
                c.binary_with($op, rhs, stringify!($m), site)
            }
        }
    )*};
}
lhs_literal!(Add, add, BinaryOp::Add, i32, u32, i64, u64, f16, f32, f64);
lhs_literal!(Sub, sub, BinaryOp::Sub, i32, u32, i64, u64, f16, f32, f64);
lhs_literal!(Mul, mul, BinaryOp::Mul, i32, u32, i64, u64, f16, f32, f64);
lhs_literal!(Div, div, BinaryOp::Div, i32, u32, i64, u64, f16, f32, f64);
lhs_literal!(Rem, rem, BinaryOp::Rem, i32, u32, i64, u64);
lhs_literal!(Shl, shl, BinaryOp::Shl, i32, u32, i64, u64);
lhs_literal!(Shr, shr, BinaryOp::Shr, i32, u32, i64, u64);
lhs_literal!(BitAnd, bitand, BinaryOp::And, bool, i32, u32, i64, u64);
lhs_literal!(BitOr, bitor, BinaryOp::Or, bool, i32, u32, i64, u64);
lhs_literal!(BitXor, bitxor, BinaryOp::Xor, bool, i32, u32, i64, u64);

/// The right-hand operand of a comparison, `min`/`max`/`clamp` or an operator: a value of
/// the kernel, or a Rust literal of the same type (`i.gt(0u32)`, `x.max(0.0f32)`).
pub trait Operand<T: Scalar> {
    /// The operand's IR value in `k`'s kernel (a constant for a literal).
    #[doc(hidden)]
    fn ir_value(self, k: &KernelBuilder, call: &str, site: &'static Location<'static>) -> Value;
}

impl<T: Scalar> Operand<T> for Val<'_, T> {
    fn ir_value(self, k: &KernelBuilder, call: &str, site: &'static Location<'static>) -> Value {
        k.own(self, call, site)
    }
}

macro_rules! literal_operand {
    ($($t:ty),*) => {$(
        impl Operand<$t> for $t {
            fn ir_value(
                self,
                k: &KernelBuilder,
                call: &str,
                site: &'static Location<'static>,
            ) -> Value {
                k.emit_value(
                    call,
                    site,
                    InstData::Const { ty: <$t>::TY, bits: Scalar::to_bits(self) },
                    <$t>::TY,
                )
            }
        }
    )*};
}
literal_operand!(bool, i32, u32, i64, u64, f16, f32, f64);

/// A mutable variable of type `T`: the builder turns its reads and writes into SSA values and
/// block parameters.
pub struct Var<'k, T> {
    pub(crate) k: &'k KernelBuilder,
    pub(crate) id: usize,
    pub(crate) _t: PhantomData<T>,
}

impl<T> Clone for Var<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Var<'_, T> {}

impl<'k, T: Scalar> Var<'k, T> {
    /// The current value.
    #[track_caller]
    pub fn get(&self) -> Val<'k, T> {
        self.get_at(Location::caller())
    }

    pub(crate) fn get_at(&self, site: Site) -> Val<'k, T> {
        Val::new(self.k, self.k.var_get(self.id, site))
    }

    /// Assigns a new value.
    #[track_caller]
    pub fn set(&self, v: Val<'_, T>) {
        let site = Location::caller();
        let x = self.k.own(v, "Var::set", site);
        self.k.var_set(self.id, x);
    }
}

/// Wave-level operations.
impl KernelBuilder {
    /// `v` as seen in lane `lane mod 64` of the same wave (0 if that lane is inactive).
    #[track_caller]
    pub fn wave_shuffle<'k, T: Scalar>(&'k self, v: Val<'_, T>, lane: Val<'_, u32>) -> Val<'k, T> {
        let site = Location::caller();
        let args = [
            self.own(v, "wave_shuffle", site),
            self.own(lane, "wave_shuffle", site),
        ];
        self.emit_val("wave_shuffle", site, InstData::WaveShuffle { args })
    }
    /// `v` as seen in lane `lane` (uniform across the wave).
    #[track_caller]
    pub fn wave_broadcast<'k, T: Scalar>(&'k self, v: Val<'_, T>, lane: u8) -> Val<'k, T> {
        let site = Location::caller();
        let arg = self.own(v, "wave_broadcast", site);
        self.emit_val(
            "wave_broadcast",
            site,
            InstData::WaveBroadcast { arg, lane },
        )
    }
    /// Reduction over the wave's active lanes (uniform).
    #[track_caller]
    pub fn wave_reduce<'k, T: Num>(&'k self, op: ReduceOp, v: Val<'_, T>) -> Val<'k, T> {
        let site = Location::caller();
        let arg = self.own(v, "wave_reduce", site);
        self.emit_val("wave_reduce", site, InstData::WaveReduce { op, arg })
    }
    /// Inclusive scan over the wave's active lanes in lane order.
    #[track_caller]
    pub fn wave_scan<'k, T: Num>(&'k self, op: ReduceOp, v: Val<'_, T>) -> Val<'k, T> {
        let site = Location::caller();
        let arg = self.own(v, "wave_scan", site);
        self.emit_val("wave_scan", site, InstData::WaveScan { op, arg })
    }
}

//! VOPC semantics: the 16 float predicates (`f, lt, eq, le, gt, lg, ge, o, u, nge, nlg, ngt, nle,
//! neq, nlt, tru`), the 8 integer ones (`f, lt, eq, le, gt, ne, ge, t`), and `v_cmp_class`.
//! A compare produces one bit per lane; inactive lanes get 0 (gfx9 writes the whole mask).
//! `v_cmpx` also writes the result to EXEC; the dispatcher does that.

use super::float::FloatBits;

/// Float compare predicate, in opcode order (the low 4 bits of the gfx9 VOPC opcode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatPred {
    /// Always false.
    F,
    /// `a < b`.
    Lt,
    /// `a == b`.
    Eq,
    /// `a <= b`.
    Le,
    /// `a > b`.
    Gt,
    /// `a <> b` (ordered and not equal).
    Lg,
    /// `a >= b`.
    Ge,
    /// Ordered (neither is NaN).
    O,
    /// Unordered (either is NaN).
    U,
    /// `!(a >= b)`.
    Nge,
    /// `!(a <> b)`.
    Nlg,
    /// `!(a > b)`.
    Ngt,
    /// `!(a <= b)`.
    Nle,
    /// `!(a == b)`.
    Neq,
    /// `!(a < b)`.
    Nlt,
    /// Always true.
    Tru,
}

impl FloatPred {
    /// The predicate with index `i` (0..16) in opcode order.
    pub fn from_index(i: u32) -> Option<FloatPred> {
        use FloatPred::*;
        [
            F, Lt, Eq, Le, Gt, Lg, Ge, O, U, Nge, Nlg, Ngt, Nle, Neq, Nlt, Tru,
        ]
        .get(i as usize)
        .copied()
    }

    /// Evaluates the predicate on two values (IEEE comparisons: NaN is unordered).
    #[inline(always)]
    pub fn eval<T: PartialOrd>(self, a: T, b: T) -> bool {
        use FloatPred::*;
        match self {
            F => false,
            Lt => a < b,
            Eq => a == b,
            Le => a <= b,
            Gt => a > b,
            Lg => a < b || a > b,
            Ge => a >= b,
            // Ordered: neither is NaN, so the two compare.
            O => a.partial_cmp(&b).is_some(),
            U => a.partial_cmp(&b).is_none(),
            Nge => !(a >= b),
            Nlg => !(a < b || a > b),
            Ngt => !(a > b),
            Nle => !(a <= b),
            Neq => a != b,
            Nlt => !(a < b),
            Tru => true,
        }
    }
}

/// Integer compare predicate, in opcode order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntPred {
    /// Always false.
    F,
    /// `a < b`.
    Lt,
    /// `a == b`.
    Eq,
    /// `a <= b`.
    Le,
    /// `a > b`.
    Gt,
    /// `a != b`.
    Ne,
    /// `a >= b`.
    Ge,
    /// Always true.
    T,
}

impl IntPred {
    /// The predicate with index `i` (0..8) in opcode order.
    pub fn from_index(i: u32) -> Option<IntPred> {
        use IntPred::*;
        [F, Lt, Eq, Le, Gt, Ne, Ge, T].get(i as usize).copied()
    }

    /// Evaluates the predicate.
    #[inline(always)]
    pub fn eval<T: Ord>(self, a: T, b: T) -> bool {
        use IntPred::*;
        match self {
            F => false,
            Lt => a < b,
            Eq => a == b,
            Le => a <= b,
            Gt => a > b,
            Ne => a != b,
            Ge => a >= b,
            T => true,
        }
    }
}

/// The class bit of a value for `v_cmp_class`: 0 signalling NaN, 1 quiet NaN, 2 -inf,
/// 3 -normal, 4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf.
#[inline(always)]
fn class_bit(neg: bool, exp_all_ones: bool, exp_zero: bool, man_zero: bool, quiet: bool) -> u32 {
    if exp_all_ones {
        if !man_zero {
            return if quiet { 1 } else { 0 };
        }
        return if neg { 2 } else { 9 };
    }
    if !exp_zero {
        return if neg { 3 } else { 8 };
    }
    if !man_zero {
        return if neg { 4 } else { 7 };
    }
    if neg {
        5
    } else {
        6
    }
}

/// `v_cmp_class_f16/f32/f64`: whether the class of the pattern `x` is set in `mask`.
#[inline(always)]
pub fn class<T: FloatBits>(x: T, mask: u32) -> bool {
    let b = class_bit(
        x & T::SIGN != T::ZERO,
        x & T::EXP == T::EXP,
        x & T::EXP == T::ZERO,
        x & T::MANT == T::ZERO,
        x & T::QUIET != T::ZERO,
    );
    mask >> b & 1 != 0
}

/// Runs `pred` over 64 lanes and packs the results into a mask, keeping only `exec` lanes.
#[inline(always)]
pub fn lane_mask<A: Copy, B: Copy>(
    a: &[A; 64],
    b: &[B; 64],
    exec: u64,
    pred: impl Fn(A, B) -> bool,
) -> u64 {
    let mut m = 0u64;
    for l in 0..64 {
        m |= (pred(a[l], b[l]) as u64) << l;
    }
    m & exec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_predicates_treat_nan_as_unordered() {
        let n = f32::NAN;
        let all: Vec<FloatPred> = (0..16).map(|i| FloatPred::from_index(i).unwrap()).collect();
        let truth = |a: f32, b: f32| all.iter().map(|p| p.eval(a, b) as u8).collect::<Vec<_>>();
        // f lt eq le gt lg ge o u nge nlg ngt nle neq nlt tru
        assert_eq!(
            truth(1.0, 2.0),
            [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]
        );
        assert_eq!(
            truth(2.0, 2.0),
            [0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1]
        );
        assert_eq!(
            truth(n, 2.0),
            [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]
        );
        assert!(FloatPred::Eq.eval(0.0f64, -0.0f64));
        assert!(FloatPred::from_index(16).is_none());
    }

    #[test]
    fn integer_predicates_and_lane_masks() {
        let a: [i32; 64] = std::array::from_fn(|l| l as i32 - 32);
        let b = [0i32; 64];
        let m = lane_mask(&a, &b, u64::MAX, |x, y| IntPred::Lt.eval(x, y));
        assert_eq!(m, 0xffff_ffff);
        let m = lane_mask(&a, &b, 0xff, |x, y| IntPred::Ge.eval(x, y));
        assert_eq!(m, 0, "inactive lanes read as 0");
        assert!(IntPred::Gt.eval(u32::MAX, 1));
        assert!(!IntPred::Gt.eval(-1i32, 1));
    }

    #[test]
    fn class_tests_cover_all_ten_classes() {
        let vals: [(f32, u32); 10] = [
            (f32::from_bits(0x7f80_0001), 0),
            (f32::NAN, 1),
            (f32::NEG_INFINITY, 2),
            (-1.0, 3),
            (-f32::from_bits(1), 4),
            (-0.0, 5),
            (0.0, 6),
            (f32::from_bits(1), 7),
            (1.0, 8),
            (f32::INFINITY, 9),
        ];
        for (v, bit) in vals {
            assert!(class(v.to_bits(), 1 << bit), "{v} class {bit}");
            assert!(!class(v.to_bits(), !(1 << bit) & 0x3ff), "{v}");
            // f32 -> f64 conversion quietens NaNs and normalises denormals.
            assert!(class((v as f64).to_bits(), 1 << bit) || matches!(bit, 0 | 4 | 7));
        }
        assert!(class(1u64, 1 << 7));
        assert!(class(0x7c01u16, 1));
        assert!(class(0x7e00u16, 2));
        assert!(class(0x8001u16, 1 << 4));
    }
}

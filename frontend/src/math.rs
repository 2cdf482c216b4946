//! Math functions of `f32` values that the hardware has no single instruction for, built from
//! the ones it has (`v_exp_f32`, `v_log_f32`, `v_rndne_f32`, `v_trunc_f32`, fma, divide).
//!
//! Accuracy, measured against the correctly rounded result over random inputs in the IR
//! interpreter and on kjit's software GCN device (`frontend/tests/math.rs` asserts these bounds;
//! the device models `v_exp_f32`/`v_log_f32` as correctly rounded, within the 1 ulp the hardware
//! documents, so on hardware add up to one more ulp to the terms that use them):
//!
//! | function | domain tested | bound | measured (interpreter and device) |
//! |---|---|---|---|
//! | [`Val::exp`] | `[-87, 88]` (normal results) | 1 ulp | 0.62 ulp |
//! | [`Val::log`] | positive normal numbers | 1.5 ulp | 1.18 ulp |
//! | [`Val::pow`] | `x` in `[2^-8, 2^8]`, `y` in `[-8, 8]` | `2 + 1.5·|y·log2 x|` ulp | 6.0 ulp |
//! | [`Val::tanh`] | `[-10, 10]` | 2 ulp | 1.34 ulp |
//! | [`Val::erf`] | `[-5, 5]` | 3 ulp | 2.22 ulp |
//! | [`Val::rsqrt`] | positive normal numbers | 1 ulp | 0.5 ulp |
//! | `floor`, `ceil`, `trunc`, `round` | `[-10^4, 10^4]`, halves | exact | exact |
//!
//! Subnormal inputs and results follow the device: `v_exp_f32` and `v_log_f32` flush them to
//! zero on gfx9, so `exp` of less than about -87.3 is 0 and `log` of a subnormal is -inf there,
//! while the interpreter keeps subnormals.

use crate::value::Val;
use std::panic::Location;

/// `log2(e)` split in two f32s: the head and the rest.
const LOG2E_HI: f32 = std::f32::consts::LOG2_E;
const LOG2E_LO: f32 = (std::f64::consts::LOG2_E - LOG2E_HI as f64) as f32;
/// `ln(2)` split in two f32s.
const LN2_HI: f32 = std::f32::consts::LN_2;
const LN2_LO: f32 = (std::f64::consts::LN_2 - LN2_HI as f64) as f32;

/// Taylor coefficients of `tanh(x) = x·Σ c_k·x^(2k)` (the tangent numbers over `(2k+1)!`),
/// enough for `|x| < 0.55` to f32 precision.
const TANH_TAYLOR: [f64; 10] = [
    1.0,
    -1.0 / 3.0,
    2.0 / 15.0,
    -17.0 / 315.0,
    62.0 / 2835.0,
    -1382.0 / 155925.0,
    21844.0 / 6081075.0,
    -929569.0 / 638512875.0,
    6404582.0 / 10854718875.0,
    -443861162.0 / 1856156927625.0,
];
/// Below this `|x|`, `tanh` uses its series; above, `1 - 2/(e^(2|x|) + 1)`, whose cancellation
/// costs at most a factor 2 once the result is above 1/2.
const TANH_SERIES_BELOW: f32 = 0.55;

/// Terms of the Maclaurin series of `erf(x) = x·Σ c_n·x^(2n)`, `c_n = 2/√π·(-1)^n/(n!·(2n+1))`,
/// enough for `|x| < 1` to f32 precision.
const ERF_TERMS: usize = 12;
/// `erfc(x)·e^(x²)` for `x` in `[1, 4]` as a polynomial in `s = 6·(1/(1 + x/2)) - 3`, `s` in
/// `[-1, 1]`: the degree-8 Chebyshev interpolant of the double-precision `erfc`, converted to
/// powers of `s` (lowest first). Its relative error is below `1.1e-7` evaluated in f32.
const ERFCX_POLY: [f32; 9] = [
    0.255_395_68,
    0.142_395_29,
    0.026_850_91,
    0.002_925_128_7,
    4.608_540_6e-5,
    -2.878_172e-5,
    -1.162_961e-6,
    4.296_057_3e-7,
    7.699_926e-9,
];

fn erf_coefficient(n: usize) -> f64 {
    let factorial: f64 = (1..=n).map(|k| k as f64).product();
    let sign = if n.is_multiple_of(2) { 1.0 } else { -1.0 };
    std::f64::consts::FRAC_2_SQRT_PI * sign / (factorial * (2 * n + 1) as f64)
}

impl<'k> Val<'k, f32> {
    /// `p(x) = Σ c_i·x^i` by Horner's rule, `coeffs` lowest power first.
    fn horner(self, coeffs: impl DoubleEndedIterator<Item = f32>) -> Self {
        let mut it = coeffs.rev();
        let top = it.next().unwrap_or(0.0);
        let mut acc = self.k.lit(top);
        for c in it {
            acc = acc.fma(self, self.k.lit(c));
        }
        acc
    }

    /// `self` where it is NaN, else `r`: gives back the NaN that capping `self` with `min`
    /// dropped (IEEE minNum returns the number).
    fn nan_or(self, r: Self) -> Self {
        self.k.select(self.ne(self), self, r)
    }

    /// `2^(hi + lo)` for a head `hi` and a small correction `lo`: `hi = n + f` with `n` an
    /// integer, `2^(f + lo)` by `v_exp_f32` on `|f + lo| <= 1/2`, then two exact scalings by
    /// `2^(n/2)` so that `n` up to 128 and down to -150 needs no out-of-range power. Infinite
    /// and NaN `hi` give what `2^hi` gives.
    fn exp2_split(hi: Self, lo: Self) -> Self {
        let k = hi.k;
        // A NaN correction from an infinite head would poison the result; it does not matter
        // where the head alone is out of range.
        let lo = k.select(hi.abs().lt(256.0f32), lo, k.lit(0.0f32));
        let n = hi.round().clamp(-150.0f32, 128.0f32);
        let f = (hi - n) + lo;
        let n1 = (n * 0.5f32).trunc();
        let n2 = n - n1;
        f.exp2() * n1.exp2() * n2.exp2()
    }

    /// `e^x` (1 ulp; see the module docs), by `2^(x·log2 e)` with `x·log2 e` carried to twice
    /// f32 precision so that large `x` lose nothing to the product's rounding.
    #[track_caller]
    pub fn exp(self) -> Self {
        let hi = self * LOG2E_HI;
        let lo = self.fma(self.k.lit(LOG2E_HI), -hi) + self * LOG2E_LO;
        Self::exp2_split(hi, lo)
    }

    /// Natural logarithm (1.5 ulp; see the module docs): `log2(x)·ln 2` with `ln 2` in two parts.
    #[track_caller]
    pub fn log(self) -> Self {
        let y = self.log2();
        let r = y.fma(self.k.lit(LN2_HI), y * LN2_LO);
        // `log2` of 0 or infinity is infinite, where the two parts' signs would make a NaN.
        self.k.select(y.abs().lt(f32::INFINITY), r, y)
    }

    /// `self^y` for `self >= 0` (negative bases give NaN): `2^(y·log2 self)` with the product
    /// carried to twice f32 precision; `pow(x, 0) = pow(1, y) = 1`. The error grows with the
    /// size of the exponent: `2 + 1.5·|y·log2 x|` ulp (see the module docs).
    #[track_caller]
    pub fn pow(self, y: Val<'_, f32>) -> Self {
        let site = Location::caller();
        let k = self.k;
        let y = Val::<f32>::new(k, k.own(y, "pow", site));
        let l = self.log2();
        let hi = y * l;
        let lo = y.fma(l, -hi);
        let r = Self::exp2_split(hi, lo);
        let one = y.eq(0.0f32) | self.eq(1.0f32);
        k.select(one, k.lit(1.0f32), r)
    }

    /// Hyperbolic tangent (2 ulp; see the module docs): its Taylor series near 0, else
    /// `±(1 - 2/(e^(2|x|) + 1))`.
    #[track_caller]
    pub fn tanh(self) -> Self {
        let k = self.k;
        let a = self.abs();
        let x2 = self * self;
        let series = self * x2.horner(TANH_TAYLOR.iter().map(|&c| c as f32));
        let e = (a * 2.0f32).exp();
        let big = 1.0f32 - 2.0f32 / (e + 1.0f32);
        let big = k.select(self.lt(0.0f32), -big, big);
        k.select(a.lt(TANH_SERIES_BELOW), series, big)
    }

    /// The error function (3 ulp; see the module docs): its Maclaurin series for `|x| < 1`,
    /// else `±(1 - e^(-x²)·erfcx(|x|))` with `|x|` capped at 4, where `erf` rounds to 1.
    #[track_caller]
    pub fn erf(self) -> Self {
        let k = self.k;
        let a = self.abs();
        let x2 = self * self;
        let series = self * x2.horner((0..ERF_TERMS).map(|n| erf_coefficient(n) as f32));
        let c = a.min(4.0f32);
        let t = 1.0f32 / (c * 0.5f32 + 1.0f32);
        let s = t * 6.0f32 - 3.0f32;
        let erfcx = s.horner(ERFCX_POLY.iter().copied());
        let tail = 1.0f32 - (-(c * c)).exp() * erfcx;
        let tail = k.select(self.lt(0.0f32), -tail, tail);
        self.nan_or(k.select(a.lt(1.0f32), series, tail))
    }
}

//! The builder's math functions against the CPU: random inputs over each function's stated
//! domain, run in the IR interpreter and on kjit's software GCN device, with the maximum error
//! in ulps (of the correctly rounded f32 result, from an f64 reference) asserted against the bound
//! stated in `frontend/src/math.rs` and the method docs. Special values, division and integer
//! min/max/clamp are checked exactly.

use kjit::ir::interp::{self, Arg, BufferData};
use kjit::ir::Function;
use kjit::{Dim, Gpu, KernelBuilder, LaunchDims};
use kjit_frontend::Val;
use rand::RngExt;

/// One function under test.
struct MathFn {
    name: &'static str,
    /// Builds `f(x, y)` (unary functions ignore `y`).
    build: for<'k> fn(Val<'k, f32>, Val<'k, f32>) -> Val<'k, f32>,
    /// The f64 reference.
    reference: fn(f64, f64) -> f64,
    /// Random inputs `(x, y)`.
    inputs: fn(&mut rand::rngs::StdRng) -> (f32, f32),
    /// Largest error allowed, in ulps, for this input.
    bound: fn(f32, f32) -> f64,
}

fn uniform(r: &mut rand::rngs::StdRng, lo: f32, hi: f32) -> f32 {
    r.random_range(lo..hi)
}

/// Uniform in `[-small, small)` or, as often, in `[-wide, wide)`: both the region near 0 and the
/// whole domain get many samples.
fn small_or_wide(r: &mut rand::rngs::StdRng, small: f32, wide: f32) -> f32 {
    let w = if r.random_range(0..2) == 0 {
        small
    } else {
        wide
    };
    uniform(r, -w, w)
}

/// A positive normal f32 spread over all binades.
fn positive_normal(r: &mut rand::rngs::StdRng) -> f32 {
    f32::from_bits(r.random_range(0x0080_0000u32..0x7f80_0000))
}

const FNS: &[MathFn] = &[
    MathFn {
        name: "exp",
        build: |x, _| x.exp(),
        reference: |x, _| x.exp(),
        inputs: |r| (uniform(r, -87.0, 88.0), 0.0),
        bound: |_, _| 1.0,
    },
    MathFn {
        name: "log",
        build: |x, _| x.log(),
        reference: |x, _| x.ln(),
        inputs: |r| {
            let near_one = r.random_range(0..4) == 0;
            let x = if near_one {
                uniform(r, 0.5, 2.0)
            } else {
                positive_normal(r)
            };
            (x, 0.0)
        },
        bound: |_, _| 1.5,
    },
    MathFn {
        name: "pow",
        build: |x, y| x.pow(y),
        reference: |x, y| x.powf(y),
        inputs: |r| (uniform(r, -8.0, 8.0).exp2(), uniform(r, -8.0, 8.0)),
        bound: |x, y| 2.0 + 1.5 * (y as f64 * (x as f64).log2()).abs(),
    },
    MathFn {
        name: "tanh",
        build: |x, _| x.tanh(),
        reference: |x, _| x.tanh(),
        inputs: |r| (small_or_wide(r, 1.0, 10.0), 0.0),
        bound: |_, _| 2.0,
    },
    MathFn {
        name: "erf",
        build: |x, _| x.erf(),
        reference: |x, _| libm::erf(x),
        inputs: |r| (small_or_wide(r, 1.5, 5.0), 0.0),
        bound: |_, _| 3.0,
    },
    MathFn {
        name: "rsqrt",
        build: |x, _| x.rsqrt(),
        reference: |x, _| 1.0 / x.sqrt(),
        inputs: |r| (positive_normal(r), 0.0),
        bound: |_, _| 1.0,
    },
    MathFn {
        name: "div",
        build: |x, y| x / y,
        reference: |x, y| x / y,
        inputs: |r| (positive_normal(r) * 0.5, uniform(r, 1e-3, 1e3)),
        bound: |_, _| 1.0,
    },
    MathFn {
        name: "floor",
        build: |x, _| x.floor(),
        reference: |x, _| x.floor(),
        inputs: |r| (uniform(r, -1e4, 1e4), 0.0),
        bound: |_, _| 0.0,
    },
    MathFn {
        name: "ceil",
        build: |x, _| x.ceil(),
        reference: |x, _| x.ceil(),
        inputs: |r| (uniform(r, -1e4, 1e4), 0.0),
        bound: |_, _| 0.0,
    },
    MathFn {
        name: "trunc",
        build: |x, _| x.trunc(),
        reference: |x, _| x.trunc(),
        inputs: |r| (uniform(r, -1e4, 1e4), 0.0),
        bound: |_, _| 0.0,
    },
    MathFn {
        name: "round",
        // Halves included: ties go to even.
        build: |x, _| x.round(),
        reference: |x, _| x.round_ties_even(),
        inputs: |r| ((r.random_range(-20000i32..20000) as f32) * 0.5, 0.0),
        bound: |_, _| 0.0,
    },
];

/// `out[i] = f(x[i], y[i])`.
fn kernel(f: &MathFn) -> Function {
    let k = KernelBuilder::new(f.name);
    let x = k.buffer::<f32>("x");
    let y = k.buffer::<f32>("y");
    let out = k.buffer_mut::<f32>("out");
    let i = k.global_id(Dim::X);
    k.if_(i.lt(x.len()), || {
        let v = (f.build)(k.load(&x, i), k.load(&y, i));
        k.store(&out, i, v);
    });
    k.finish().expect("builds")
}

/// The error of `got` against the exact `want`, in ulps of f32 at `want` (subnormal ulps below
/// the normal range). Equal infinities and NaN against NaN are 0; anything else against a
/// non-finite value is infinite.
fn ulps(got: f32, want: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if want.is_infinite() || got.is_infinite() {
        return if got as f64 == want {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let e = if want == 0.0 {
        -126
    } else {
        (want.abs().log2().floor() as i32).max(-126)
    };
    (got as f64 - want).abs() / 2f64.powi(e - 23)
}

const N: usize = 4096;

fn inputs(f: &MathFn, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut r = kjit::kernels::rng(seed);
    (0..N).map(|_| (f.inputs)(&mut r)).unzip()
}

/// Runs `func` in the IR interpreter over `n` work-items in workgroups of 256, as the device runs.
fn run_interpreter(func: &Function, n: usize, args: &mut [Arg]) {
    let dims = LaunchDims::cover(n, 256);
    let launch = interp::LaunchDims {
        grid: dims.grid,
        block: dims.block,
        dynamic_lds: 0,
    };
    interp::run(func, &launch, args).expect("interpreter runs");
}

fn on_interpreter(func: &Function, xs: &[f32], ys: &[f32]) -> Vec<f32> {
    let mut args = vec![
        Arg::Buffer(BufferData::F32(xs.to_vec())),
        Arg::Buffer(BufferData::F32(ys.to_vec())),
        Arg::Buffer(BufferData::F32(vec![0.0; xs.len()])),
    ];
    run_interpreter(func, xs.len(), &mut args);
    let Arg::Buffer(BufferData::F32(out)) = &args[2] else {
        unreachable!()
    };
    out.clone()
}

fn on_device(gpu: &Gpu, func: &Function, xs: &[f32], ys: &[f32]) -> Vec<f32> {
    let kernel = gpu.compile(func).expect("compiles");
    let x = gpu.to_device(xs).unwrap();
    let y = gpu.to_device(ys).unwrap();
    let mut out = gpu.zeros::<f32>(xs.len()).unwrap();
    kernel
        .launch(LaunchDims::cover(xs.len(), 256))
        .arg(&x)
        .arg(&y)
        .arg(&mut out)
        .run()
        .expect("device runs");
    out.to_host().unwrap()
}

/// The largest error over the inputs, asserting each against the bound.
fn worst(f: &MathFn, engine: &str, xs: &[f32], ys: &[f32], got: &[f32]) -> f64 {
    let mut worst = 0.0f64;
    for i in 0..xs.len() {
        let want = (f.reference)(xs[i] as f64, ys[i] as f64);
        let e = ulps(got[i], want);
        let bound = (f.bound)(xs[i], ys[i]);
        assert!(
            e <= bound,
            "{} on {engine}: {}({}, {}) = {} but the exact value is {want}: {e:.2} ulp > {bound:.2}",
            f.name,
            f.name,
            xs[i],
            ys[i],
            got[i]
        );
        worst = worst.max(e);
    }
    worst
}

#[test]
fn math_functions_within_their_ulp_bounds() {
    for target in [
        kjit::backend_gcn::Target::Gfx942,
        kjit::backend_gcn::Target::Gfx900,
    ] {
        let gpu = Gpu::emu().with_target(target).unwrap();
        for (k, f) in FNS.iter().enumerate() {
            let func = kernel(f);
            let (xs, ys) = inputs(f, 0x5eed + k as u64);
            let interp = on_interpreter(&func, &xs, &ys);
            let device = on_device(&gpu, &func, &xs, &ys);
            let wi = worst(f, "the interpreter", &xs, &ys, &interp);
            let wd = worst(f, &format!("the device ({target})"), &xs, &ys, &device);
            eprintln!(
                "{:<6} {target}: max error {wi:.2} ulp (interpreter), {wd:.2} ulp (device)",
                f.name
            );
        }
    }
}

/// Special values, exactly, on both engines.
#[test]
fn special_values() {
    let inf = f32::INFINITY;
    let nan = f32::NAN;
    let cases: &[(&str, f32, f32, f32)] = &[
        ("exp", inf, 0.0, inf),
        ("exp", -inf, 0.0, 0.0),
        ("exp", nan, 0.0, nan),
        ("exp", 0.0, 0.0, 1.0),
        ("exp", 100.0, 0.0, inf),
        ("exp", -200.0, 0.0, 0.0),
        ("log", 0.0, 0.0, -inf),
        ("log", 1.0, 0.0, 0.0),
        ("log", inf, 0.0, inf),
        ("log", -1.0, 0.0, nan),
        ("pow", 0.0, 0.0, 1.0),
        ("pow", 5.0, 0.0, 1.0),
        ("pow", 1.0, inf, 1.0),
        ("pow", 0.0, 2.0, 0.0),
        ("pow", 2.0, 10.0, 1024.0),
        ("pow", 2.0, 200.0, inf),
        ("pow", -2.0, 0.5, nan),
        ("tanh", inf, 0.0, 1.0),
        ("tanh", -inf, 0.0, -1.0),
        ("tanh", 0.0, 0.0, 0.0),
        ("tanh", nan, 0.0, nan),
        ("erf", inf, 0.0, 1.0),
        ("erf", -inf, 0.0, -1.0),
        ("erf", 0.0, 0.0, 0.0),
        ("erf", nan, 0.0, nan),
        ("rsqrt", 4.0, 0.0, 0.5),
        ("rsqrt", 0.0, 0.0, inf),
        ("div", 1.0, 0.0, inf),
        ("div", -1.0, 0.0, -inf),
        ("div", 1.0, inf, 0.0),
        ("div", 1.0, -inf, -0.0),
        ("div", inf, 2.0, inf),
        ("div", 0.0, 0.0, nan),
        ("div", inf, inf, nan),
        ("div", nan, 1.0, nan),
        ("floor", -0.5, 0.0, -1.0),
        ("ceil", -0.5, 0.0, -0.0),
        ("round", 2.5, 0.0, 2.0),
        ("round", -3.5, 0.0, -4.0),
        ("trunc", -2.7, 0.0, -2.0),
    ];
    let gpu = Gpu::emu();
    for f in FNS {
        let mine: Vec<_> = cases.iter().filter(|c| c.0 == f.name).collect();
        if mine.is_empty() {
            continue;
        }
        let xs: Vec<f32> = mine.iter().map(|c| c.1).collect();
        let ys: Vec<f32> = mine.iter().map(|c| c.2).collect();
        let func = kernel(f);
        for (engine, got) in [
            ("interpreter", on_interpreter(&func, &xs, &ys)),
            ("device", on_device(&gpu, &func, &xs, &ys)),
        ] {
            for (c, g) in mine.iter().zip(got) {
                let same = g.to_bits() == c.3.to_bits() || (g.is_nan() && c.3.is_nan());
                assert!(
                    same,
                    "{}({}, {}) on the {engine} = {g}, want {}",
                    c.0, c.1, c.2, c.3
                );
            }
        }
    }
}

/// f64 division with zero and infinite operands, as in the interpreter (IEEE).
#[test]
fn f64_division_special_values() {
    let k = KernelBuilder::new("div64");
    let x = k.buffer::<f64>("x");
    let y = k.buffer::<f64>("y");
    let out = k.buffer_mut::<f64>("out");
    let i = k.global_id(Dim::X);
    k.if_(i.lt(x.len()), || {
        k.store(&out, i, k.load(&x, i) / k.load(&y, i))
    });
    let func = k.finish().unwrap();
    let inf = f64::INFINITY;
    let cases = [
        (1.0, 0.0, inf),
        (-1.0, 0.0, -inf),
        (1.0, inf, 0.0),
        (inf, 2.0, inf),
        (0.0, 0.0, f64::NAN),
        (6.0, 3.0, 2.0),
    ];
    let gpu = Gpu::emu();
    let kernel = gpu.compile(&func).unwrap();
    let xs: Vec<f64> = cases.iter().map(|c| c.0).collect();
    let ys: Vec<f64> = cases.iter().map(|c| c.1).collect();
    let dx = gpu.to_device(&xs).unwrap();
    let dy = gpu.to_device(&ys).unwrap();
    let mut dout = gpu.zeros::<f64>(cases.len()).unwrap();
    kernel
        .launch(LaunchDims::cover(cases.len(), 64))
        .arg(&dx)
        .arg(&dy)
        .arg(&mut dout)
        .run()
        .unwrap();
    for (c, g) in cases.iter().zip(dout.to_host().unwrap()) {
        assert!(
            g.to_bits() == c.2.to_bits() || (g.is_nan() && c.2.is_nan()),
            "{} / {} = {g} on the device, want {}",
            c.0,
            c.1,
            c.2
        );
    }
}

/// Integer `min/max/clamp` (with literals) on signed and unsigned 32- and 64-bit values, exact on
/// both engines.
#[test]
fn integer_min_max_clamp() {
    let k = KernelBuilder::new("int_clamp");
    let a = k.buffer::<i32>("a");
    let b = k.buffer::<i64>("b");
    let oa = k.buffer_mut::<i32>("oa");
    let ob = k.buffer_mut::<i64>("ob");
    let ou = k.buffer_mut::<u32>("ou");
    let i = k.global_id(Dim::X);
    k.if_(i.lt(a.len()), || {
        let x = k.load(&a, i);
        let y = k.load(&b, i);
        k.store(&oa, i, x.clamp(-100i32, 100i32).max(x.min(-7i32)));
        k.store(&ob, i, y.clamp(-(1i64 << 40), 1i64 << 40) + y.min(0i64));
        let u = x.bitcast::<u32>();
        k.store(&ou, i, u.clamp(1000u32, 0x8000_0000u32).min(u.max(5u32)));
    });
    let func = k.finish().unwrap();
    let mut r = kjit::kernels::rng(99);
    let n = 1000;
    let xs: Vec<i32> = (0..n)
        .map(|_| r.random_range(i32::MIN..=i32::MAX))
        .collect();
    let ys: Vec<i64> = (0..n)
        .map(|_| r.random_range(i64::MIN / 2..=i64::MAX / 2))
        .collect();
    let want_a: Vec<i32> = xs
        .iter()
        .map(|&x| x.clamp(-100, 100).max(x.min(-7)))
        .collect();
    let want_b: Vec<i64> = ys
        .iter()
        .map(|&y| y.clamp(-(1 << 40), 1 << 40) + y.min(0))
        .collect();
    let want_u: Vec<u32> = xs
        .iter()
        .map(|&x| {
            let u = x as u32;
            u.clamp(1000, 0x8000_0000).min(u.max(5))
        })
        .collect();

    let mut args = vec![
        Arg::Buffer(BufferData::I32(xs.clone())),
        Arg::Buffer(BufferData::I64(ys.clone())),
        Arg::Buffer(BufferData::I32(vec![0; n])),
        Arg::Buffer(BufferData::I64(vec![0; n])),
        Arg::Buffer(BufferData::U32(vec![0; n])),
    ];
    run_interpreter(&func, n, &mut args);
    let dims = LaunchDims::cover(n, 256);
    assert_eq!(args[2], Arg::Buffer(BufferData::I32(want_a.clone())));
    assert_eq!(args[3], Arg::Buffer(BufferData::I64(want_b.clone())));
    assert_eq!(args[4], Arg::Buffer(BufferData::U32(want_u.clone())));

    let gpu = Gpu::emu();
    let kernel = gpu.compile(&func).unwrap();
    let da = gpu.to_device(&xs).unwrap();
    let db = gpu.to_device(&ys).unwrap();
    let mut doa = gpu.zeros::<i32>(n).unwrap();
    let mut dob = gpu.zeros::<i64>(n).unwrap();
    let mut dou = gpu.zeros::<u32>(n).unwrap();
    kernel
        .launch(dims)
        .arg(&da)
        .arg(&db)
        .arg(&mut doa)
        .arg(&mut dob)
        .arg(&mut dou)
        .run()
        .unwrap();
    assert_eq!(doa.to_host().unwrap(), want_a);
    assert_eq!(dob.to_host().unwrap(), want_b);
    assert_eq!(dou.to_host().unwrap(), want_u);
}

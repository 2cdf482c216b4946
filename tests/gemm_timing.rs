//! GEMM on the matrix cores, compared on the timing model (issue 18): the clang-19 OpenCL twin
//! `kernels/opencl/gemm.cl` (`__builtin_amdgcn_mfma_f32_32x32x8f16`) and Triton 3.9's MFMA
//! matmul fixture, each checked bit for bit against the CPU reference (`kjit::gemm_compare`).
//!
//! CI runs small sizes. The device-filling comparison on `mi300x` is ignored by default:
//! `cargo test --release --test gemm_timing -- --ignored --nocapture` prints the table of
//! docs/mfma-gemm.md.

use std::path::{Path, PathBuf};

use kjit::gemm_compare::{run_gemm, GemmError, GemmLaunch, GemmProblem, GemmRun, TwinShape};
use kjit::CompileOptions;
use kjit_backend_gcn::llvm_oracle::{compile_opencl, require_all, OpenClBuild, Tool};
use kjit_backend_gcn::machine::machine_by_name;
use kjit_backend_gcn::Target;
use kjit_kernels::gemm::{GemmTiles, DEFAULT_TILES};
use kjit_runtime::device::Device as _;
use kjit_runtime::emu::{GcnEmulator, RunConfig, Schedule};

/// The twin's code object for `target` with tile shape `shape`; `None` (after a printed reason)
/// without clang/lld.
fn clang_twin(target: &str, shape: TwinShape) -> Option<Vec<u8>> {
    let tools = require_all(&[Tool::Clang, Tool::Lld], "gemm twin")?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/opencl/gemm.cl");
    let defines = shape.defines();
    let args: Vec<&str> = defines.iter().map(String::as_str).collect();
    let build = OpenClBuild {
        extra_args: &args,
        out_dir: None,
    };
    let so = compile_opencl(&tools[0], &tools[1], &src, target, &build)
        .unwrap_or_else(|e| panic!("{e}"));
    Some(std::fs::read(so).unwrap())
}

fn triton_matmul() -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("backend-gcn/tests/fixtures/triton/triton-matmul-gfx942.hsaco");
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn timed(model: &str) -> GcnEmulator {
    GcnEmulator::with_config(RunConfig {
        timing: Some(machine_by_name(model).unwrap()),
        ..RunConfig::default()
    })
}

/// Runs one launch on `dev`, panicking with the kernel's error.
fn run(dev: &GcnEmulator, code: &[u8], launch: &GemmLaunch, p: &GemmProblem) -> GemmRun {
    let inputs = p.inputs();
    let want = p.reference(&inputs.0, &inputs.1);
    run_gemm(dev, code, launch, p, &inputs, &want).unwrap_or_else(|e| panic!("{p:?}: {e}"))
}

#[test]
fn clang_twin_matches_the_reference_on_every_target() {
    let sizes = [
        (128, 128, 64),  // one tile, two k-steps
        (256, 384, 96),  // several tiles, fast path throughout
        (77, 130, 45),   // partial tiles, k not a multiple of the step or of 8
        (200, 64, 1000), // rows past the last full tile, long k
        (1, 1, 1),
    ];
    let shape = |waves_m, blocks_n| TwinShape {
        waves_m,
        blocks_m: 2,
        blocks_n,
    };
    for (target, shape) in [
        ("gfx942", TwinShape::SQUARE),
        ("gfx942", shape(1, 2)),
        ("gfx942", shape(4, 2)),
        ("gfx942", WIDE),
        ("gfx90a", TwinShape::SQUARE),
        ("gfx900", TwinShape::SQUARE),
    ] {
        let Some(code) = clang_twin(target, shape) else {
            return;
        };
        let launch = |p: &GemmProblem| GemmLaunch::clang_twin(p, shape).unwrap();
        for (i, &(m, n, k)) in sizes.iter().enumerate() {
            let p = GemmProblem {
                m,
                n,
                k,
                seed: 11 + i as u64,
            };
            let dev = GcnEmulator::new();
            let r = run(&dev, &code, &launch(&p), &p);
            assert_eq!(
                r.stats.mfma > 0,
                target != "gfx900",
                "{target} {shape:?} {p:?}: {:?}",
                r.stats
            );
        }
        // Another interleaving of the waves: the barriers must keep the result.
        let p = GemmProblem {
            m: 256,
            n: 256,
            k: 128,
            seed: 5,
        };
        let dev = GcnEmulator::with_config(RunConfig {
            schedule: Schedule::Random(3),
            ..RunConfig::default()
        });
        run(&dev, &code, &launch(&p), &p);
    }
}

#[test]
fn a_wrong_result_is_reported_with_its_position() {
    let Some(code) = clang_twin("gfx942", TwinShape::SQUARE) else {
        return;
    };
    let p = GemmProblem {
        m: 128,
        n: 128,
        k: 64,
        seed: 1,
    };
    let inputs = p.inputs();
    let mut want = p.reference(&inputs.0, &inputs.1);
    want[5 * 128 + 7] += 0.25;
    let e = run_gemm(
        &GcnEmulator::new(),
        &code,
        &GemmLaunch::clang_twin(&p, TwinShape::SQUARE).unwrap(),
        &p,
        &inputs,
        &want,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            GemmError::Mismatch {
                row: 5,
                col: 7,
                wrong: 1,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn launches_refuse_problems_and_shapes_they_cannot_compute() {
    for (m, n, k) in [(128, 128, 64), (100, 64, 64), (128, 64, 48)] {
        let p = GemmProblem { m, n, k, seed: 0 };
        let e = GemmLaunch::triton_matmul(&p).unwrap_err();
        assert!(e.to_string().contains("needs n = 64"), "{e}");
    }
    let p = GemmProblem {
        m: 128,
        n: 128,
        k: 64,
        seed: 0,
    };
    let three_waves = TwinShape {
        waves_m: 3,
        ..TwinShape::SQUARE
    };
    let e = GemmLaunch::clang_twin(&p, three_waves).unwrap_err();
    assert!(e.to_string().contains("4 waves"), "{e}");
    // m·n past u32: refused before any buffer is allocated (c alone would be 32 GiB).
    let huge = GemmProblem {
        m: 1 << 17,
        n: 1 << 16,
        k: 1,
        seed: 0,
    };
    let launch = GemmLaunch::clang_twin(&huge, TwinShape::SQUARE).unwrap();
    let no_data = (Vec::new(), Vec::new());
    let e = run_gemm(&GcnEmulator::new(), &[], &launch, &huge, &no_data, &[]).unwrap_err();
    assert!(
        e.to_string().contains("m·n = 8589934592 does not fit"),
        "{e}"
    );
}

/// One row of the comparison table.
struct Row {
    kernel: String,
    p: GemmProblem,
    cycles: u64,
    tflops: f64,
    percent: f64,
    mfma: u64,
    waves_per_simd: f64,
}

/// Times one launch and checks it; `tile` (rows, columns of c per workgroup) tells whether
/// the model's FLOP count must equal 2·m·n·k (tiles divide the problem) or may exceed it.
fn timed_row(
    dev: &GcnEmulator,
    kernel: String,
    code: &[u8],
    (launch, tile): (&GemmLaunch, [usize; 2]),
    p: &GemmProblem,
    reference: &(Vec<half::f16>, Vec<half::f16>, Vec<f32>),
) -> Row {
    let inputs = (reference.0.clone(), reference.1.clone());
    let r = run_gemm(dev, code, launch, p, &inputs, &reference.2)
        .unwrap_or_else(|e| panic!("{p:?}: {e}"));
    let t = r.timing().expect("timed device");
    if std::env::var("KJIT_GEMM_REPORT").as_deref() == Ok("1") {
        eprintln!("{kernel}, {p:?}:\n{t}");
    }
    // Every MFMA (32x32x8: 16,384 FLOPs) is work of the product where the tiles divide it.
    // The model also counts VALU f32 operations (a uniform integer division's reciprocal,
    // e.g. the super-row block order's), so its count may be higher.
    let mfma_flops = r.stats.mfma as f64 * (2 * 32 * 32 * 8) as f64;
    if p.m.is_multiple_of(tile[0]) && p.n.is_multiple_of(tile[1]) {
        assert_eq!(mfma_flops, p.flops(), "{kernel}: MFMA FLOPs");
    } else {
        assert!(mfma_flops >= p.flops(), "{kernel}: MFMA FLOPs");
    }
    assert!(t.flops as f64 >= mfma_flops, "{kernel}: counted FLOPs");
    let (tflops, percent) = (r.tflops(p).unwrap(), r.percent_of_peak(p).unwrap());
    assert!(
        percent > 0.0 && percent <= 100.0,
        "{kernel}: {percent:.1}% of the model's peak"
    );
    Row {
        kernel,
        p: *p,
        cycles: t.cycles,
        tflops,
        percent,
        mfma: r.stats.mfma,
        waves_per_simd: t.waves_per_simd,
    }
}

/// Tall twin tiles for n = 64: 4 x 1 waves of 2 x 2 blocks, 256 x 64.
const TALL: TwinShape = TwinShape {
    waves_m: 4,
    blocks_m: 2,
    blocks_n: 2,
};
/// Wide twin tiles: 2 x 2 waves of 2 x 4 blocks, 128 x 256 (half the LDS reads per MFMA of
/// [`TwinShape::SQUARE`], twice the accumulators).
const WIDE: TwinShape = TwinShape {
    waves_m: 2,
    blocks_m: 2,
    blocks_n: 4,
};

fn shape_name(s: TwinShape) -> String {
    let [m, n] = s.tile();
    format!("clang-19 twin gemm ({m} x {n} tiles)")
}

/// kjit's `gemm` at its tuning point `bm = 256, bn = 64` (four waves along m, as the twin's
/// [`TALL`] shape), for the n = 64 problem: the default 128-wide tiles would compute twice
/// the MFMAs the product needs. `early`: the problem is bound by a's loads and its 608
/// workgroups are two per CU whatever the registers, so the next step's loads go first (and
/// the interior loop takes two steps per iteration, `kernels/src/gemm.rs`). `lead` stays 3:
/// with two steps per iteration 86,922 cycles against 87,779 at 0 (docs/mfma-gemm.md). The
/// square problem runs the default tiles ([`DEFAULT_TILES`]: 128 x 128).
const KJIT_TALL: GemmTiles = GemmTiles {
    bm: 256,
    bn: 64,
    early: true,
    ..DEFAULT_TILES
};

/// Rows and columns of c per workgroup.
fn tile_of(t: GemmTiles) -> [usize; 2] {
    [t.bm as usize, t.bn as usize]
}

/// kjit's library `gemm` (issue 18) at tile point `t` compiled for gfx942, when this build's
/// kernel library has it (`kjit_kernels::find`), built through its tuning entry (the default
/// build at the default point). Its launch is [`GemmLaunch::kjit_abi`] at the same tiles: a
/// wrong assumption about them fails the reference check.
fn kjit_gemm(t: GemmTiles, occupancy: Option<u32>) -> Option<Vec<u8>> {
    let spec = kjit_kernels::find("gemm")?;
    let tuning = spec.tuning.as_ref().expect("gemm declares its tiles");
    let params = [
        t.bm,
        t.bn,
        t.bk,
        t.wn,
        t.stages,
        t.early as u32,
        t.lead,
        t.pair_a as u32,
        t.super_rows,
    ];
    let func = (tuning.build)(&params).expect("gemm builds");
    let opts = CompileOptions {
        occupancy,
        // `KJIT_KERNARG_PRELOAD=0`: every argument an `s_load` (to measure what preloading gives).
        kernarg_preload: std::env::var("KJIT_KERNARG_PRELOAD").as_deref() != Ok("0"),
        ..CompileOptions::default()
    };
    let k = kjit::compile(&func, Target::Gfx942, &opts).unwrap_or_else(|e| panic!("gemm: {e}"));
    // `KJIT_GEMM_ASM=dir`: each compiled kernel's assembly there, named by its tiles.
    if let Ok(dir) = std::env::var("KJIT_GEMM_ASM") {
        let name = params.map(|p| p.to_string()).join("_");
        let path = std::path::Path::new(&dir).join(format!("gemm_{name}.s"));
        std::fs::write(&path, k.asm.as_str()).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    }
    Some(k.code_object)
}

fn kjit_row(
    dev: &GcnEmulator,
    (code, t): (&[u8], GemmTiles),
    p: &GemmProblem,
    d: &(Vec<half::f16>, Vec<half::f16>, Vec<f32>),
) -> Row {
    let launch = GemmLaunch::kjit_abi("gemm", p, tile_of(t), t.threads()).unwrap();
    timed_row(
        dev,
        format!("kjit gemm ({} x {} tiles)", t.bm, t.bn),
        code,
        (&launch, tile_of(t)),
        p,
        d,
    )
}

/// kjit's tiles `bm,bn,bk[,wn,stages[,early[,lead[,pair_a]]]]` from environment variable `var`, else `default`
/// (`GemmTiles::parse`).
fn tiles_from_env(var: &str, default: GemmTiles) -> GemmTiles {
    std::env::var(var)
        .map(|v| GemmTiles::parse(&v).unwrap_or_else(|e| panic!("{var}: {e}")))
        .unwrap_or(default)
}

/// Times Triton's fixture and the clang twin ([`TALL`]) on an `n = 64` problem (Triton's launch
/// fixes n), and the twin alone in the `shapes` given on `square`, on `mi300x`.
fn compare(skinny: GemmProblem, square: Option<(GemmProblem, &[TwinShape])>) -> Option<Vec<Row>> {
    let tall = clang_twin("gfx942", TALL)?;
    let triton = triton_matmul();
    let dev = timed("mi300x");
    let data = |p: &GemmProblem| {
        let (a, b) = p.inputs();
        let c = p.reference(&a, &b);
        (a, b, c)
    };
    let d = data(&skinny);
    // `KJIT_GEMM_ONLY=kjit`: kjit's rows alone (for quick runs while tuning it).
    let others = std::env::var("KJIT_GEMM_ONLY").as_deref() != Ok("kjit");
    let mut rows = vec![];
    if others {
        rows.push(timed_row(
            &dev,
            "Triton 3.9 matmul_kernel (64 x 64 tiles)".into(),
            &triton,
            (&GemmLaunch::triton_matmul(&skinny).unwrap(), [64, 64]),
            &skinny,
            &d,
        ));
        rows.push(timed_row(
            &dev,
            shape_name(TALL),
            &tall,
            (&GemmLaunch::clang_twin(&skinny, TALL).unwrap(), TALL.tile()),
            &skinny,
            &d,
        ));
    }
    let tall_tiles = tiles_from_env("KJIT_GEMM_TALL", KJIT_TALL);
    if let Some(code) = kjit_gemm(tall_tiles, None) {
        rows.push(kjit_row(&dev, (&code, tall_tiles), &skinny, &d));
    }
    drop(d);
    if let Some((sq, shapes)) = square {
        let d = data(&sq);
        let tiles = tiles_from_env("KJIT_GEMM_SQUARE_TILES", DEFAULT_TILES);
        // `--occupancy` for the square problem's kernel (default: the default compile's).
        let occupancy = std::env::var("KJIT_GEMM_SQUARE_OCCUPANCY").ok().map(|w| {
            w.parse()
                .expect("KJIT_GEMM_SQUARE_OCCUPANCY: waves per SIMD")
        });
        if let Some(code) = kjit_gemm(tiles, occupancy) {
            rows.push(kjit_row(&dev, (&code, tiles), &sq, &d));
        }
        for &shape in shapes.iter().filter(|_| others) {
            let twin = clang_twin("gfx942", shape)?;
            rows.push(timed_row(
                &dev,
                shape_name(shape),
                &twin,
                (&GemmLaunch::clang_twin(&sq, shape).unwrap(), shape.tile()),
                &sq,
                &d,
            ));
        }
    }
    Some(rows)
}

fn print(rows: &[Row]) {
    eprintln!(
        "| kernel | m × n × k | cycles | TFLOP/s | % of MFMA f16 peak | MFMAs | waves/SIMD |"
    );
    eprintln!("|---|---|---:|---:|---:|---:|---:|");
    for r in rows {
        eprintln!(
            "| {} | {} × {} × {} | {} | {:.1} | {:.1} | {} | {:.2} |",
            r.kernel, r.p.m, r.p.n, r.p.k, r.cycles, r.tflops, r.percent, r.mfma, r.waves_per_simd
        );
    }
}

#[test]
fn triton_and_clang_gemm_on_the_timing_model() {
    let skinny = GemmProblem {
        m: 1024,
        n: 64,
        k: 128,
        seed: 3,
    };
    let Some(rows) = compare(skinny, None) else {
        return;
    };
    print(&rows);
}

/// `m,n,k` from environment variable `var`, else `default`.
fn sizes_from_env(var: &str, default: [usize; 3], seed: u64) -> GemmProblem {
    let [m, n, k] = std::env::var(var)
        .ok()
        .map(|v| {
            let d: Vec<usize> = v
                .split(',')
                .map(|x| {
                    x.trim()
                        .parse()
                        .unwrap_or_else(|e| panic!("{var}={v}: {e}"))
                })
                .collect();
            d.try_into()
                .unwrap_or_else(|_| panic!("{var}={v}: want m,n,k"))
        })
        .unwrap_or(default);
    GemmProblem { m, n, k, seed }
}

/// The device-filling run of docs/mfma-gemm.md (minutes of host time in a release build).
/// `KJIT_GEMM_SKINNY=m,64,k` and `KJIT_GEMM_SQUARE=m,n,k` change the sizes,
/// `KJIT_GEMM_TALL=bm,bn,bk[,wn,stages[,early[,lead[,pair_a]]]]` kjit's tiles on the n = 64 problem,
/// `KJIT_GEMM_SQUARE_TILES` (same form) on the square one, `KJIT_GEMM_ONLY=kjit` leaves
/// out Triton and the twin;
/// `KJIT_GEMM_REPORT=1` prints each run's full timing report (stalls, hottest instructions),
/// `KJIT_GEMM_ASM=dir` writes each kjit kernel's assembly into `dir`.
#[test]
#[ignore]
fn gemm_fills_mi300x() {
    let skinny = sizes_from_env("KJIT_GEMM_SKINNY", [64 * 304 * 8, 64, 512], 3);
    let square = sizes_from_env("KJIT_GEMM_SQUARE", [128 * 76, 128 * 32, 512], 4);
    let Some(rows) = compare(skinny, Some((square, &[TwinShape::SQUARE]))) else {
        return;
    };
    print(&rows);
}

/// The timing model's inputs are the launch alone: kjit's GEMM on a grid of two of the replay's
/// batches (the first is 2 workgroups per CU, 608 on `mi300x`; this grid has 760), timed on one
/// host thread, then on two on the same device (its buffers land after the first launch's), then
/// on a fresh device after an unrelated 1 MiB allocation, gives the same cycles and stall
/// counters each time. Before allocations were aligned (`emu::memory`), the buffers' placement
/// moved the cache sets and DRAM channels they map to and changed the cycles by 0.2-1.6%.
#[test]
fn timed_gemm_repeats_whatever_the_host_threads_and_placement() {
    let p = GemmProblem {
        m: 128 * 38,
        n: 128 * 20,
        k: 32,
        seed: 5,
    };
    let t = DEFAULT_TILES;
    let code = kjit_gemm(t, None).unwrap();
    let launch = GemmLaunch::kjit_abi("gemm", &p, tile_of(t), t.threads()).unwrap();
    let time = |threads: usize, dev: &GcnEmulator| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let r = pool.install(|| run(dev, &code, &launch, &p));
        let t = r.timing().unwrap();
        (t.cycles, t.stalls, t.instructions)
    };
    let dev = timed("mi300x");
    let one = time(1, &dev);
    assert_eq!(time(2, &dev), one, "two host threads, buffers placed later");
    let other = timed("mi300x");
    other.alloc(1 << 20).unwrap();
    assert_eq!(time(2, &other), one, "a device with an earlier allocation");
}

//! Differential proof of the backend: every library kernel, compiled for each target and run on
//! kjit's software GCN device, gives what the IR interpreter gives for the same case — bit for
//! bit for integers, within the kernel's stated tolerance for floats — and the device reports no
//! hazard (a hazard is a launch error). Sizes are not multiples of the workgroup size, so the
//! partial last workgroup and out-of-range lanes are exercised. The odd size also runs on a
//! device dispatching as firmware without kernarg preloading does (the code's compatibility
//! prologue loads the arguments the default device preloads).

use kjit::exec::run_case;
use kjit::{compile, CompileOptions};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_runtime::emu::gcn::GcnEmulator;
use kjit_runtime::emu::RunConfig;

/// Problem sizes per kernel: small, odd, and around the kernel's default.
fn sizes(name: &str) -> Vec<usize> {
    match name {
        "matmul" | "matmul_pipelined" => vec![5, 17, 33],
        "hash_rounds" | "hash_chain" | "hash_lanes" | "hash_lanes_wide" => vec![1, 67, 300],
        "softmax" | "seed_2d" | "stencil_pipelined" => vec![3, 70, 201],
        _ => vec![1, 67, 1000, 4099],
    }
}

fn run_kernel(name: &str) {
    let spec = kjit_kernels::find(name).expect("library kernel");
    let func = (spec.build)().expect("kernel builds");
    let dev = GcnEmulator::new();
    // Firmware without kernarg preloading: gfx90a/gfx942 code starts in its compatibility
    // prologue, which must load the same arguments.
    let legacy = GcnEmulator::with_config(RunConfig {
        legacy_kernarg_firmware: true,
        ..RunConfig::default()
    });
    let mut failures = Vec::new();
    for t in ALL_TARGETS {
        for optimize in [false, true] {
            let opts = CompileOptions {
                optimize,
                vgpr_budget: None,
                occupancy: None,
                check: true,
                kernarg_preload: true,
            };
            let ck = match compile(&func, t, &opts) {
                Ok(k) => k,
                Err(e) => {
                    failures.push(format!("{name} {t} opt={optimize}: compile: {e}"));
                    continue;
                }
            };
            for (i, n) in sizes(name).into_iter().enumerate() {
                let case = (spec.make_case)(n, 7 + n as u64);
                let mut want = case.args.clone();
                kjit_ir::interp::run(&func, &case.launch, &mut want).expect("interpreter runs");
                let expected: Vec<_> = case
                    .outputs
                    .iter()
                    .map(|&o| want[o].as_buffer().expect("output buffer").clone())
                    .collect();
                // The odd size also runs as old firmware runs it.
                let devices: &[(&GcnEmulator, &str)] = if i == 1 {
                    &[(&dev, ""), (&legacy, " (legacy kernarg firmware)")]
                } else {
                    &[(&dev, "")]
                };
                for &(dev, how) in devices {
                    let t = format!("{t}{how}");
                    match run_case(dev, &ck.code_object, &func, &case) {
                        Ok(out) => {
                            if std::env::var("KJIT_DIFF_STATS").is_ok() {
                                eprintln!("{name} {t} opt={optimize} n={n}: {:?}", out.stats);
                            }
                            // The code ran: every launched wave executed vector memory instructions.
                            if out.stats.waves == 0 || out.stats.vmem == 0 {
                                failures.push(format!(
                                    "{name} {t} n={n}: nothing ran: {:?}",
                                    out.stats
                                ));
                            }
                            if let Err(m) =
                                kjit_kernels::check(&case, &out.args, &expected, spec.tolerance)
                            {
                                failures.push(format!("{name} {t} opt={optimize} n={n}: {m}"));
                            }
                        }
                        Err(e) => failures.push(format!("{name} {t} opt={optimize} n={n}: {e}")),
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn vector_add() {
    run_kernel("vector_add");
}

#[test]
fn saxpy() {
    run_kernel("saxpy");
}

#[test]
fn vector_add_persistent() {
    run_kernel("vector_add_persistent");
}

#[test]
fn seed_2d() {
    run_kernel("seed_2d");
}

#[test]
fn reduce_sum() {
    run_kernel("reduce_sum");
}

#[test]
fn wave_permute() {
    run_kernel("wave_permute");
}

#[test]
fn softmax() {
    run_kernel("softmax");
}

#[test]
fn matmul() {
    run_kernel("matmul");
}

#[test]
fn hash_rounds() {
    run_kernel("hash_rounds");
}

#[test]
fn hash_chain() {
    run_kernel("hash_chain");
}

#[test]
fn hash_lanes() {
    run_kernel("hash_lanes");
}

#[test]
fn hash_lanes_wide() {
    run_kernel("hash_lanes_wide");
}

#[test]
fn vector_add_pipelined() {
    run_kernel("vector_add_pipelined");
}

#[test]
fn matmul_pipelined() {
    run_kernel("matmul_pipelined");
}

#[test]
fn stencil_pipelined() {
    run_kernel("stencil_pipelined");
}

#[test]
fn every_library_kernel_is_covered() {
    let covered = [
        "vector_add",
        "saxpy",
        "vector_add_persistent",
        "seed_2d",
        "reduce_sum",
        "wave_permute",
        "softmax",
        "matmul",
        "hash_rounds",
        "hash_chain",
        "hash_lanes",
        "hash_lanes_wide",
        "vector_add_pipelined",
        "matmul_pipelined",
        "stencil_pipelined",
    ];
    for spec in kjit_kernels::all() {
        assert!(
            covered.contains(&spec.name),
            "{} has no differential test",
            spec.name
        );
    }
}

/// Runs a hand-built kernel on every target and compares all buffers with the interpreter.
fn run_custom(func: &kjit_ir::Function, case: &kjit_kernels::Case) {
    let mut want = case.args.clone();
    kjit_ir::interp::run(func, &case.launch, &mut want).expect("interpreter runs");
    let dev = GcnEmulator::new();
    for t in ALL_TARGETS {
        let opts = CompileOptions {
            optimize: false,
            vgpr_budget: None,
            occupancy: None,
            check: true,
            kernarg_preload: true,
        };
        let ck = compile(func, t, &opts).expect("compiles");
        let out = run_case(&dev, &ck.code_object, func, case).expect("runs without faults");
        assert_eq!(out.args, want, "{} on {t}", func.name);
    }
}

/// A wave whose lanes all return ends (`s_endpgm`) instead of skipping the barrier the other
/// wave of its workgroup waits at.
#[test]
fn a_wave_that_returns_does_not_hold_back_a_barrier() {
    use kjit_frontend::{Dim, KernelBuilder};
    use kjit_ir::interp::{Arg, BufferData, LaunchDims};
    let k = KernelBuilder::new("early_wave_exit");
    let a = k.buffer::<u32>("a");
    let o = k.buffer_mut::<u32>("o");
    let lds = k.lds::<u32>("t", 128);
    let g = k.global_id(Dim::X);
    let lid = k.local_id(Dim::X);
    let x = k.load(&a, g);
    // Wave-uniform, but different for the two waves of a workgroup.
    let first = k.wave_broadcast(lid, 0);
    k.return_if(first.ge(k.lit(64u32)));
    k.store(&lds, lid, x);
    k.barrier();
    let y = k.load(&lds, (lid + 1u32) & 63u32);
    k.store(&o, g, y);
    let f = k.finish().expect("builds");
    let n = 200;
    let case = kjit_kernels::Case {
        n,
        args: vec![
            Arg::Buffer(BufferData::U32((0..n as u32).map(|i| i * 3 + 1).collect())),
            Arg::Buffer(BufferData::U32(vec![kjit_kernels::POISON_U32; n])),
        ],
        launch: LaunchDims {
            grid: [2, 1, 1],
            block: [100, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![1],
    };
    run_custom(&f, &case);
}

/// Launch arguments that do not fit the kernel are refused with a message naming the problem.
#[test]
fn bad_arguments_are_clear_errors() {
    use kjit_ir::interp::{Arg, BufferData};
    let spec = kjit_kernels::find("saxpy").expect("saxpy");
    let func = (spec.build)().expect("builds");
    let ck = compile(&func, ALL_TARGETS[0], &CompileOptions::default()).expect("compiles");
    let dev = GcnEmulator::new();
    let good = (spec.make_case)(100, 1);
    let mut fewer = good.clone();
    fewer.args.pop();
    let e = run_case(&dev, &ck.code_object, &func, &fewer).unwrap_err();
    assert!(e.to_string().contains("argument(s)"), "{e}");
    let mut wrong = good.clone();
    let scalar = wrong
        .args
        .iter()
        .position(|a| a.scalar_type().is_some())
        .expect("saxpy has a scalar");
    wrong.args[scalar] = Arg::U32(1);
    let e = run_case(&dev, &ck.code_object, &func, &wrong).unwrap_err();
    assert!(e.to_string().contains("u32 where f32 is needed"), "{e}");
    let mut buf = good.clone();
    let b = buf
        .args
        .iter()
        .position(|a| a.as_buffer().is_some())
        .expect("saxpy has buffers");
    buf.args[b] = Arg::Buffer(BufferData::U32(vec![0; 4]));
    let e = run_case(&dev, &ck.code_object, &func, &buf).unwrap_err();
    assert!(e.to_string().contains("a buffer of u32"), "{e}");
}

/// Integer division as isel lowers it (`isel/idiv.rs`) against the interpreter on every target:
/// a `/` and `%` pair of the same operands (one expansion), a uniform divisor from the kernel
/// arguments (its reciprocal made once in the entry block, read in a loop), uniform operands on
/// the SALU, unsigned constants whose magic multiplier fits 32 bits (3, 641), needs 33 (7, 254)
/// or whose quotient is 0 or 1 (2^31 + 1), a power of two, a divergent divisor that is 0 in
/// lane 0, signed operands, and a zero uniform divisor (`x / 0` all ones, `x % 0` is x).
#[test]
fn divisions_pairs_constants_and_hoisted_divisors_match_the_interpreter() {
    use kjit_frontend::{Dim, KernelBuilder};
    use kjit_ir::interp::{Arg, BufferData, LaunchDims};
    const OUTS: u32 = 24;
    let k = KernelBuilder::new("divisions");
    let a = k.buffer::<u32>("a");
    let s = k.arg::<u32>("s");
    let t = k.arg::<i32>("t");
    let o = k.buffer_mut::<u32>("o");
    let g = k.global_id(Dim::X);
    let lid = k.local_id(Dim::X);
    let x = k.load(&a, g);
    let u = s * 7u32 + 1u32;
    let outs = [
        x / s,
        x % s,
        u / s,
        u % s,
        x / 7u32,
        x % 7u32,
        x / 254u32,
        x % 254u32,
        x / 3u32,
        x % 641u32,
        u / 641u32,
        u % 7u32,
        x / 0x8000_0001u32,
        x % 0x8000_0001u32,
        x / 16u32,
        x % 16u32,
        x / lid,
        x % lid,
        (x.cast::<i32>() / t).cast::<u32>(),
        (x.cast::<i32>() % t).cast::<u32>(),
        (x.cast::<i32>() / (lid.cast::<i32>() - 3i32)).cast::<u32>(),
        (x.cast::<i32>() % (lid.cast::<i32>() - 3i32)).cast::<u32>(),
    ];
    for (j, v) in outs.into_iter().enumerate() {
        k.store(&o, g * OUTS + j as u32, v);
    }
    let acc = k.var(k.lit(0u32));
    k.for_range(k.lit(0u32), k.lit(3u32), k.lit(1u32), |i| {
        acc.set(acc.get() + (x + i) / s + (x + i) % s);
    });
    k.store(&o, g * OUTS + 22u32, acc.get());
    k.store(&o, g * OUTS + 23u32, (g + s) / s);
    let f = k.finish().expect("builds");
    let n = 150usize;
    let mut r = 0x1234_5678u32;
    let data: Vec<u32> = (0..n)
        .map(|i| {
            r = r.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            match i % 4 {
                0 => r,
                1 => r >> 20,
                2 => u32::MAX - (i as u32),
                _ => i as u32,
            }
        })
        .collect();
    for (sv, tv) in [(13u32, -5i32), (0, 0), (0x9000_0000, 7), (1, -1)] {
        let case = kjit_kernels::Case {
            n,
            args: vec![
                Arg::Buffer(BufferData::U32(data.clone())),
                Arg::U32(sv),
                Arg::I32(tv),
                Arg::Buffer(BufferData::U32(vec![
                    kjit_kernels::POISON_U32;
                    n * OUTS as usize
                ])),
            ],
            launch: LaunchDims {
                grid: [2, 1, 1],
                block: [75, 1, 1],
                dynamic_lds: 0,
            },
            outputs: vec![3],
        };
        run_custom(&f, &case);
    }
}

//! Loops the optimizer unrolls with a runtime trip count (`ir/src/opt/unroll_runtime.rs`),
//! compiled for every target and run on the software device, give exactly what the IR
//! interpreter gives: lanes whose trip counts differ (0 to several trips, the last one's second
//! iteration run or not), a count-down loop with a signed compare, an induction variable that wraps past
//! zero under a `!=` compare, a loop with two accumulators, and a `noalias` grid-stride loop
//! with a store (stores last, a later iteration's guarded) bounded below its output's length.
//! Each kernel is checked to be unrolled, so that the test cannot pass on rolled loops. A launch
//! of the `noalias` kernel with its output overlapping an input is an error on the device.

use kjit::exec::run_case;
use kjit::{compile, CompileOptions};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_frontend::{Dim, KernelBuilder};
use kjit_ir::interp::{Arg, BufferData, LaunchDims};
use kjit_ir::Function;
use kjit_kernels::{Case, Tolerance};
use kjit_runtime::emu::gcn::GcnEmulator;

/// `out[lid] = Σ a[i]` over `i = lid, lid + 64, … < len(a)`, and `outf[lid]` the f32 maximum of
/// `b[i]` over the same `i`s (two loops, one accumulator each).
fn strided_sums() -> Function {
    let k = KernelBuilder::new("strided_sums");
    let a = k.buffer::<u32>("a");
    let b = k.buffer::<f32>("b");
    let out = k.buffer_mut::<u32>("out");
    let outf = k.buffer_mut::<f32>("outf");
    let lid = k.local_id(Dim::X);
    let i = k.var_named("i", lid);
    let acc = k.var_named("acc", k.lit(0u32));
    k.while_(
        || i.get().lt(a.len()),
        || {
            acc.set(acc.get() + k.load(&a, i.get()));
            i.set(i.get() + k.lit(64u32));
        },
    );
    k.store(&out, lid, acc.get());
    let j = k.var_named("j", lid);
    let m = k.var_named("m", k.lit(f32::NEG_INFINITY));
    k.while_(
        || j.get().lt(b.len()),
        || {
            m.set(m.get().max(k.load(&b, j.get())));
            j.set(j.get() + k.lit(64u32));
        },
    );
    k.store(&outf, lid, m.get());
    k.finish().unwrap()
}

/// `c[i] = a[i] * 3 + b[i]` for `i = lid, lid + 64, … < n` (`n` an argument, so that `c` may be
/// longer), its buffers declared `noalias`.
fn strided_store() -> Function {
    let k = KernelBuilder::new("strided_store");
    k.noalias(true);
    let a = k.buffer::<u32>("a");
    let b = k.buffer::<u32>("b");
    let c = k.buffer_mut::<u32>("c");
    let n = k.arg::<u32>("n");
    let i = k.var_named("i", k.local_id(Dim::X));
    k.while_(
        || i.get().lt(n),
        || {
            let v = k.load(&a, i.get()) * k.lit(3u32) + k.load(&b, i.get());
            k.store(&c, i.get(), v);
            i.set(i.get() + k.lit(64u32));
        },
    );
    k.finish().unwrap()
}

/// Per-lane trip counts from memory, counting down with a signed compare; two accumulators.
fn count_down() -> Function {
    let k = KernelBuilder::new("count_down");
    let a = k.buffer::<u32>("a");
    let trips = k.buffer::<i32>("trips");
    let out = k.buffer_mut::<u32>("out");
    let lid = k.local_id(Dim::X);
    let i = k.var_named("i", k.load(&trips, lid));
    let x = k.var_named("x", k.lit(0u32));
    let s = k.var_named("s", k.lit(7u32));
    k.while_(
        || i.get().gt(k.lit(0i32)),
        || {
            let v = k.load(&a, i.get().cast::<u32>() + lid);
            x.set(x.get() ^ v);
            s.set(s.get() * k.lit(3u32) + v);
            i.set(i.get() - k.lit(1i32));
        },
    );
    k.store(&out, lid, x.get() + s.get());
    k.finish().unwrap()
}

/// An induction variable that starts near 2³² and wraps past zero, compared with `!=`.
fn wrapping() -> Function {
    let k = KernelBuilder::new("wrapping");
    let a = k.buffer::<u32>("a");
    let out = k.buffer_mut::<u32>("out");
    let end = k.arg::<u32>("end");
    let lid = k.local_id(Dim::X);
    let i = k.var_named("i", k.lit(0xffff_fff0u32) + (lid & k.lit(7u32)));
    let acc = k.var_named("acc", k.lit(1u32));
    k.while_(
        || i.get().ne(end),
        || {
            acc.set(acc.get() * k.lit(5u32) + k.load(&a, i.get() & k.lit(255u32)));
            i.set(i.get() + k.lit(1u32));
        },
    );
    k.store(&out, lid, acc.get());
    k.finish().unwrap()
}

fn u32s(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 7)
        .collect()
}

fn launch() -> LaunchDims {
    LaunchDims {
        grid: [1, 1, 1],
        block: [64, 1, 1],
        dynamic_lds: 0,
    }
}

fn cases() -> Vec<(Function, Case)> {
    let mut v = Vec::new();
    // 64 × 9 + 5 elements: lanes 0–4 run 10 iterations (2 unrolled trips and 2 more), the
    // others 9; 200: 3 or 4 iterations (no unrolled trip, or one).
    for n in [1usize, 200, 64 * 9 + 5] {
        let b: Vec<f32> = u32s(n, 3)
            .iter()
            .map(|&x| (x % 1000) as f32 - 500.0)
            .collect();
        v.push((
            strided_sums(),
            Case {
                n,
                args: vec![
                    Arg::Buffer(BufferData::U32(u32s(n, 1))),
                    Arg::Buffer(BufferData::F32(b)),
                    Arg::Buffer(BufferData::U32(vec![0; 64])),
                    Arg::Buffer(BufferData::F32(vec![0.0; 64])),
                ],
                launch: launch(),
                outputs: vec![2, 3],
            },
        ));
    }
    // `c` is 64 × 9 + 5 long and poisoned: a later iteration past `n` that stored would show.
    let len = 64 * 9 + 5;
    for n in [0u32, 1, 100, 64 * 4, 64 * 6 + 9, len as u32] {
        v.push((
            strided_store(),
            Case {
                n: n as usize,
                args: vec![
                    Arg::Buffer(BufferData::U32(u32s(len, 2))),
                    Arg::Buffer(BufferData::U32(u32s(len, 4))),
                    Arg::Buffer(BufferData::U32(vec![0xdead_beef; len])),
                    Arg::U32(n),
                ],
                launch: launch(),
                outputs: vec![2],
            },
        ));
    }
    let trips: Vec<i32> = (0..64).map(|l| (l * 7 % 23) - 3).collect();
    v.push((
        count_down(),
        Case {
            n: 64,
            args: vec![
                Arg::Buffer(BufferData::U32(u32s(128, 5))),
                Arg::Buffer(BufferData::I32(trips)),
                Arg::Buffer(BufferData::U32(vec![0; 64])),
            ],
            launch: launch(),
            outputs: vec![2],
        },
    ));
    v.push((
        wrapping(),
        Case {
            n: 64,
            args: vec![
                Arg::Buffer(BufferData::U32(u32s(256, 9))),
                Arg::Buffer(BufferData::U32(vec![0; 64])),
                Arg::U32(6),
            ],
            launch: launch(),
            outputs: vec![1],
        },
    ));
    v
}

#[test]
fn runtime_unrolled_loops_match_the_interpreter_on_every_target() {
    let dev = GcnEmulator::new();
    let mut failures = Vec::new();
    for (func, case) in cases() {
        let (_, report) = kjit_ir::opt::optimize(&func);
        assert!(
            report.unrolled_loops >= 1,
            "{}: no loop unrolled",
            func.name
        );
        let mut want = case.args.clone();
        kjit_ir::interp::run(&func, &case.launch, &mut want).expect("interpreter runs");
        let expected: Vec<BufferData> = case
            .outputs
            .iter()
            .map(|&o| want[o].as_buffer().expect("an output buffer").clone())
            .collect();
        for t in ALL_TARGETS {
            let k = compile(&func, t, &CompileOptions::default()).expect("compiles");
            match run_case(&dev, &k.code_object, &func, &case) {
                Ok(out) => {
                    if let Err(m) =
                        kjit_kernels::check(&case, &out.args, &expected, Tolerance::EXACT)
                    {
                        failures.push(format!("{} {t} n={}: {m}", func.name, case.n));
                    }
                }
                Err(e) => failures.push(format!("{} {t} n={}: {e}", func.name, case.n)),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_noalias_kernel_rejects_an_output_that_overlaps_an_input() {
    use kjit_runtime::{ArgValue, Device};
    let dev = GcnEmulator::new();
    for t in ALL_TARGETS {
        let k = compile(&strided_store(), t, &CompileOptions::default()).expect("compiles");
        let m = dev.load_module(&k.code_object).unwrap();
        let (x, y) = (dev.alloc(1024).unwrap(), dev.alloc(1024).unwrap());
        let dims = kjit_runtime::LaunchDims::new([1, 1, 1], [64, 1, 1]);
        let args = |a, b, c| {
            vec![
                ArgValue::Buffer(a),
                ArgValue::U32(256),
                ArgValue::Buffer(b),
                ArgValue::U32(256),
                ArgValue::Buffer(c),
                ArgValue::U32(256),
                ArgValue::U32(256),
            ]
        };
        // Two inputs may share memory; the output may not share an input's.
        dev.launch(m, "strided_store", dims, &args(x, x, y))
            .unwrap_or_else(|e| panic!("{t}: {e}"));
        let e = dev
            .launch(m, "strided_store", dims, &args(x, y, y))
            .expect_err("c is b")
            .to_string();
        assert!(
            e.contains("argument 2 (b) and argument 4 (c) overlap") && e.contains("noalias"),
            "{t}: {e}"
        );
    }
}

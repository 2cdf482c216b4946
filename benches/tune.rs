//! The compile part of tuning: for every library kernel on gfx942, one candidate's compile
//! (scheduling under the level's budget, register allocation and everything after it, from the
//! kernel's selected code, which `kjit tune` prepares once per parameter choice), and a
//! whole `kjit::tune` run at a small size with its time split into compile, model runs and
//! reference checks.
//!
//! `cargo bench --bench tune`; prints a table first, then runs criterion per kernel.

use std::time::{Duration, Instant};

use criterion::Criterion;
use kjit::tune::{tune, Job, TuneOptions};
use kjit_backend_gcn::compile::{compile_selected, select_kernel, CompileOptions};
use kjit_backend_gcn::Target;
use std::hint::black_box;

const TARGET: Target = Target::Gfx942;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut t: Vec<Duration> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[runs / 2]
}

fn main() {
    let levels = 1..=TARGET.max_waves_per_simd();
    println!(
        "compile part of tuning on {TARGET} (ms; median of 21 runs per level; worst level shown)"
    );
    println!(
        "{:<24} {:>8} {:>10} {:>10} | {:>8} {:>9} {:>8} {:>8}",
        "kernel", "select", "cand-med", "cand-max", "tune", "compile", "runs", "checks"
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    // gfx942 has matrix cores: the matrix kernels are library kernels too.
    let library = || kjit_kernels::all().iter().chain(kjit_kernels::matrix());
    for spec in library() {
        let func = (spec.build)().expect("builds");
        let opts = CompileOptions::default();
        let select = median(21, || {
            black_box(select_kernel(&func, TARGET, &opts).expect("compiles"));
        });
        let sel = select_kernel(&func, TARGET, &opts).expect("compiles");
        // As a tuner compiles them: every level once, in order, from one selected kernel
        // (a budget's allocation is cached in it for the levels after); median of 21 rounds.
        let rounds: Vec<Vec<Duration>> = (0..21)
            .map(|_| {
                let fresh = sel.clone();
                levels
                    .clone()
                    .map(|w| {
                        let o = CompileOptions {
                            occupancy: Some(w),
                            ..opts
                        };
                        let s = Instant::now();
                        let _ = black_box(compile_selected(&fresh, &o));
                        s.elapsed()
                    })
                    .collect()
            })
            .collect();
        let per_level: Vec<Duration> = (0..rounds[0].len())
            .map(|i| {
                let mut t: Vec<Duration> = rounds.iter().map(|r| r[i]).collect();
                t.sort();
                t[t.len() / 2]
            })
            .collect();
        let mut sorted = per_level.clone();
        sorted.sort();
        let job = Job::from_library(spec, spec.default_n.min(512), 1);
        let t = Instant::now();
        let r = tune(&job, &TuneOptions::new(TARGET), &mut |_, _| {}).expect("tunes");
        let total = t.elapsed();
        println!(
            "{:<24} {:>8.3} {:>10.3} {:>10.3} | {:>8.1} {:>9.1} {:>8.1} {:>8.1}",
            spec.name,
            ms(select),
            ms(sorted[sorted.len() / 2]),
            ms(*sorted.last().unwrap()),
            ms(total),
            r.compile_ms,
            r.run_ms,
            r.check_ms
        );
    }

    let mut c = Criterion::default().configure_from_args();
    for spec in library() {
        let func = (spec.build)().expect("builds");
        let sel = select_kernel(&func, TARGET, &CompileOptions::default()).expect("compiles");
        // Every level once from a fresh selected kernel (no cached allocations): the compile
        // part of one occupancy sweep; divide by the levels for one candidate.
        c.bench_function(&format!("tune_levels/{}", spec.name), |b| {
            b.iter_batched(
                || sel.clone(),
                |fresh| {
                    for w in 1..=TARGET.max_waves_per_simd() {
                        let o = CompileOptions {
                            occupancy: Some(w),
                            ..CompileOptions::default()
                        };
                        let _ = black_box(compile_selected(&fresh, &o));
                    }
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    c.final_summary();
}

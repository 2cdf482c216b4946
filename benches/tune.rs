//! The compile part of tuning: for every library kernel on gfx942, one candidate's compile
//! (scheduling under the level's budget, register allocation and everything after it, from the
//! kernel's selected code, which `kjit tune` prepares once per parameter choice), and a
//! whole `kjit::tune` run at a small size with its time split into compile, model runs and
//! reference checks; then the selection of every declared parameter choice (mean, worst).
//!
//! `cargo bench --bench tune`; prints a table first, then runs criterion per kernel. The
//! table's per-level times are the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), which other
//! processes on a busy machine do not inflate the way they do wall time. The whole tunes run
//! alternately on one thread (`TuneOptions::jobs` 1) and on every core, 5 of each, medians:
//! the compile phases' wall time per candidate, the compile CPU time per candidate (all
//! threads), the run phases' wall time and the whole tuning's.

use std::time::Duration;

use criterion::Criterion;
use kjit::tune::{default_jobs, thread_cpu, tune, Job, TuneOptions, TuneResult};
use kjit_backend_gcn::compile::{compile_selected, select_kernel, CompileOptions};
use kjit_backend_gcn::Target;
use std::hint::black_box;

const TARGET: Target = Target::Gfx942;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The median of `t`.
fn median(mut t: Vec<Duration>) -> Duration {
    t.sort();
    t[t.len() / 2]
}

/// The median of `f` over the tunings `rs`.
fn median_of(rs: &[TuneResult], f: impl Fn(&TuneResult) -> f64) -> f64 {
    let mut v: Vec<f64> = rs.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Per candidate.
fn per(r: &TuneResult, ms: f64) -> f64 {
    ms / r.candidates.len().max(1) as f64
}

fn main() {
    let levels = 1..=TARGET.max_waves_per_simd();
    let jobs = default_jobs();
    println!(
        "compile part of tuning on {TARGET} (ms; select: thread CPU time of optimize + isel, median \
         of 21, and the medians of optimize alone and of the rest (isel); cand: thread CPU time per level, median \
         of 21 sweeps, median and worst level; per-level list below each row; then whole \
         `kjit::tune`s at n <= 512, 5 on 1 thread and 5 on {jobs} alternately, medians: wall/c and \
         cpu/c the compile phases' wall and CPU time per candidate, path/c their critical path \
         (the busiest thread's CPU time) per candidate, runs the run phases' wall time, tune the \
         whole tuning's wall time)"
    );
    println!(
        "{:<24} {:>7} {:>6} {:>6} {:>9} {:>9} | {:>7} {:>7} {:>7} {:>7} | {:>7} {:>7} {:>7} {:>7} {:>7}",
        "kernel",
        "select",
        "opt",
        "isel",
        "cand-med",
        "cand-max",
        "1:wall/c",
        "cpu/c",
        "runs",
        "tune",
        format!("{jobs}:wall/c"),
        "path/c",
        "cpu/c",
        "runs",
        "tune"
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    // gfx942 has matrix cores: the matrix kernels are library kernels too.
    let library = || kjit_kernels::all().iter().chain(kjit_kernels::matrix());
    for spec in library() {
        let func = (spec.build)().expect("builds");
        let opts = CompileOptions::default();
        let (mut cpu, mut opt, mut isel) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..21 {
            let s = thread_cpu();
            black_box(select_kernel(&func, TARGET, &opts).expect("compiles"));
            let whole = thread_cpu().saturating_sub(s);
            cpu.push(whole);
            // The optimizer alone; isel (and verification off) is the rest.
            let s = thread_cpu();
            black_box(kjit_ir::opt::optimize(&func));
            let o = thread_cpu().saturating_sub(s);
            opt.push(o);
            isel.push(whole.saturating_sub(o));
        }
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
                        let s = thread_cpu();
                        let _ = black_box(compile_selected(&fresh, &o));
                        thread_cpu().saturating_sub(s)
                    })
                    .collect()
            })
            .collect();
        let per_level: Vec<Duration> = (0..rounds[0].len())
            .map(|i| median(rounds.iter().map(|r| r[i]).collect()))
            .collect();
        let mut sorted = per_level.clone();
        sorted.sort();
        let job = Job::from_library(spec, spec.default_n.min(512), 1);
        let (mut one, mut all) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            for (j, into) in [(1, &mut one), (jobs, &mut all)] {
                let opts = TuneOptions {
                    jobs: j,
                    ..TuneOptions::new(TARGET)
                };
                into.push(tune(&job, &opts, &mut |_, _| {}).expect("tunes"));
            }
        }
        let cols = |rs: &[TuneResult], path: bool| {
            format!(
                "{:>7.2} {}{:>7.2} {:>7.1} {:>7.1}",
                median_of(rs, |r| per(r, r.compile_wall_ms)),
                if path {
                    format!("{:>7.2} ", median_of(rs, |r| per(r, r.compile_span_ms)))
                } else {
                    String::new()
                },
                median_of(rs, |r| per(r, r.compile_ms)),
                median_of(rs, |r| r.run_wall_ms),
                median_of(rs, |r| r.wall_ms)
            )
        };
        println!(
            "{:<24} {:>7.3} {:>6.2} {:>6.2} {:>9.3} {:>9.3} | {} | {}",
            spec.name,
            ms(median(cpu)),
            ms(median(opt)),
            ms(median(isel)),
            ms(sorted[sorted.len() / 2]),
            ms(*sorted.last().unwrap()),
            cols(&one, false),
            cols(&all, true)
        );
        let levels: Vec<String> = per_level.iter().map(|&d| format!("{:.2}", ms(d))).collect();
        println!("{:<24} levels 1..: {}", "", levels.join(" "));
    }

    // Selection of every declared parameter choice (each is a kernel of its own to the tuner).
    println!(
        "\nselection per parameter choice on {TARGET} (thread CPU ms of optimize + isel, median of 3 \
         per choice): choices, mean, worst and its values"
    );
    for spec in library() {
        let Some(tuning) = spec.tuning else { continue };
        let mut per: Vec<(Duration, Vec<u32>)> = Vec::new();
        for c in tuning.choices() {
            // A choice the builder refuses (its LDS does not fit) is not a candidate.
            let Ok(func) = spec.build_with(&c) else {
                continue;
            };
            let t = (0..3)
                .map(|_| {
                    let s = thread_cpu();
                    let _ = black_box(select_kernel(&func, TARGET, &CompileOptions::default()));
                    thread_cpu().saturating_sub(s)
                })
                .collect();
            per.push((median(t), c));
        }
        let mean = per.iter().map(|p| ms(p.0)).sum::<f64>() / per.len().max(1) as f64;
        if let Some((worst, c)) = per.iter().max_by_key(|p| p.0) {
            println!(
                "{:<24} {:>4} {:>7.3} {:>7.3} {:?}",
                spec.name,
                per.len(),
                mean,
                ms(*worst),
                c
            );
        }
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

//! `kjit bench [KERNEL..] [--target T] [--runs N] [--opt-phases]`: compile latency of library kernels, builder
//! to code object bytes, per pipeline stage. Each kernel is compiled once cold (the first compile
//! in the process pays for one-time set-up such as the optimizer's rule set), then `--runs`
//! times warm; the table shows the cold total and the median of each stage over the warm runs.
//! This is the quick per-stage view; `cargo bench --bench compile` is the criterion benchmark
//! with the clang-19 comparison.
//!
//! `--fresh N` measures the first compile of a process properly: the cold column above is one
//! sample, and a process that has compiled other kernels first is not cold. It runs `kjit
//! bench` N times as a new process per kernel (`--cold-child`: one compile, stage timings
//! printed in microseconds) and shows the median of each column over the processes.
//!
//! A fresh process's first compile is mostly cold code: page faults on the code it first
//! touches (which `build.rs` keeps few by placing the compile's functions together), cold
//! caches and TLBs. The figure also moves with the page-cache state of the executable file, so
//! two binaries are compared as copies made at the same moment, their runs alternated.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use kjit_backend_gcn::compile::{compile, CompileOptions, StageTimings};
use kjit_backend_gcn::Target;

use super::kernels::{build_kernel, find_kernel};

/// Arguments of `kjit bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Kernels to compile (default: every kernel of the library, with the matrix kernels on
    /// targets that have matrix cores).
    pub kernels: Vec<String>,
    /// Target processor: gfx942, gfx90a or gfx900.
    #[arg(long, default_value = "gfx942")]
    pub target: Target,
    /// Warm compiles per kernel.
    #[arg(long, default_value_t = 200)]
    pub runs: usize,
    /// Compile without the e-graph optimizer.
    #[arg(long)]
    pub no_opt: bool,
    /// Also time the first compile of each kernel in N fresh processes (median per stage).
    #[arg(long, default_value_t = 0)]
    pub fresh: usize,
    /// Compile each kernel once and print its timings for a `--fresh` parent.
    #[arg(long, hide = true)]
    pub cold_child: bool,
    /// Also print where the optimizer's time goes, per phase (median of the warm runs), with
    /// its e-graph nodes summed over the blocks.
    #[arg(long)]
    pub opt_phases: bool,
}

/// One warm compile: builder time and the pipeline's stage timings.
struct Sample {
    build: Duration,
    stages: StageTimings,
    total: Duration,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Builds and compiles `spec` once: the sample and the instruction count.
fn compile_once(
    spec: &kjit_kernels::KernelSpec,
    target: Target,
    opts: &CompileOptions,
) -> Result<(Sample, u32)> {
    let t0 = Instant::now();
    let func = build_kernel(spec)?;
    let build = t0.elapsed();
    let k = compile(&func, target, opts)
        .map_err(|e| anyhow!("compiling {} for {}: {e}", spec.name, target))?;
    let total = t0.elapsed();
    Ok((
        Sample {
            build,
            stages: k.timings,
            total,
        },
        k.header.instructions,
    ))
}

/// The columns of a sample, in table order: total, build, then the stages.
fn columns(s: &Sample) -> [Duration; 9] {
    let t = &s.stages;
    [
        s.total, s.build, t.optimize, t.isel, t.schedule, t.regalloc, t.waitcnt, t.hazards, t.emit,
    ]
}

/// The headings of [`columns`] after `total`, with their widths.
const STAGE_COLUMNS: [(&str, usize); 8] = [
    ("build", 6),
    ("opt", 6),
    ("isel", 6),
    ("sched", 6),
    ("regalloc", 8),
    ("waitcnt", 7),
    ("hazards", 7),
    ("emit", 6),
];

/// The stage headings, each right-aligned in its width after a space.
fn stage_header() -> String {
    STAGE_COLUMNS
        .iter()
        .map(|(h, w)| format!(" {h:>w$}"))
        .collect()
}

/// The stage columns of `s` (after `total`) in milliseconds, aligned as [`stage_header`].
fn stage_row(v: &[f64]) -> String {
    v.iter()
        .zip(STAGE_COLUMNS)
        .map(|(x, (_, w))| format!(" {x:>w$.3}"))
        .collect()
}

/// `--cold-child`: one compile of one kernel in this (fresh) process, its columns printed in
/// microseconds on one line.
fn cold_child(args: &BenchArgs, opts: &CompileOptions) -> Result<()> {
    let [name] = args.kernels.as_slice() else {
        return Err(anyhow!("--cold-child compiles exactly one kernel"));
    };
    let (s, _) = compile_once(find_kernel(name)?, args.target, opts)?;
    let us: Vec<String> = columns(&s)
        .iter()
        .map(|d| d.as_micros().to_string())
        .collect();
    println!("{}", us.join(" "));
    Ok(())
}

/// `--fresh N`: the first compile of each kernel in `n` new processes, median per column.
fn fresh_table(args: &BenchArgs, names: &[String], n: usize) -> Result<()> {
    let exe = std::env::current_exe()?;
    println!(
        "\nfirst compile in a fresh process on {} (ms; median of {n} processes per kernel)",
        args.target
    );
    println!("{:<22} {:>7}{}", "kernel", "total", stage_header());
    for name in names {
        let mut cols: Vec<Vec<Duration>> = (0..9).map(|_| Vec::with_capacity(n)).collect();
        for _ in 0..n {
            let mut cmd = std::process::Command::new(&exe);
            cmd.args([
                "bench",
                "--cold-child",
                "--target",
                args.target.name(),
                name,
            ]);
            if args.no_opt {
                cmd.arg("--no-opt");
            }
            let out = cmd.output()?;
            if !out.status.success() {
                return Err(anyhow!(
                    "{name}: fresh process failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            let line = String::from_utf8_lossy(&out.stdout);
            let us: Vec<u64> = line
                .split_whitespace()
                .map(|x| x.parse())
                .collect::<Result<_, _>>()
                .map_err(|e| anyhow!("{name}: unreadable child output {line:?}: {e}"))?;
            if us.len() != cols.len() {
                return Err(anyhow!("{name}: unreadable child output {line:?}"));
            }
            for (c, v) in cols.iter_mut().zip(us) {
                c.push(Duration::from_micros(v));
            }
        }
        let m: Vec<f64> = cols.into_iter().map(|c| ms(median(c))).collect();
        println!("{:<22} {:>7.3}{}", name, m[0], stage_row(&m[1..]));
    }
    Ok(())
}

/// Runs `kjit bench`.
pub fn run(args: &BenchArgs) -> Result<()> {
    let opts = CompileOptions {
        optimize: !args.no_opt,
        vgpr_budget: None,
        occupancy: None,
        check: false,
        kernarg_preload: true,
    };
    if args.cold_child {
        return cold_child(args, &opts);
    }
    if args.runs == 0 {
        return Err(anyhow!("--runs must be at least 1"));
    }
    let names: Vec<String> = if args.kernels.is_empty() {
        // The matrix kernels too where the target has matrix cores (the AGPR targets).
        let matrix: &[kjit_kernels::KernelSpec] = if args.target.has_agprs() {
            kjit_kernels::matrix()
        } else {
            &[]
        };
        kjit_kernels::all()
            .iter()
            .chain(matrix)
            .map(|k| k.name.to_string())
            .collect()
    } else {
        args.kernels.clone()
    };
    println!(
        "compile latency on {} (ms; cold = first compile of the kernel in this process, others = median of {} warm runs)",
        args.target, args.runs
    );
    println!(
        "{:<22} {:>7} {:>7}{} {:>6}",
        "kernel",
        "cold",
        "total",
        stage_header(),
        "insts"
    );
    for name in &names {
        let spec = find_kernel(name)?;
        let once = || compile_once(spec, args.target, &opts);
        let (cold, insts) = once()?;
        let mut samples = Vec::with_capacity(args.runs);
        for _ in 0..args.runs {
            samples.push(once()?.0);
        }
        let med: Vec<f64> = (0..9)
            .map(|i| ms(median(samples.iter().map(|s| columns(s)[i]).collect())))
            .collect();
        println!(
            "{:<22} {:>7.3} {:>7.3}{} {:>6}",
            spec.name,
            ms(cold.total),
            med[0],
            stage_row(&med[1..]),
            insts
        );
    }
    if args.fresh > 0 {
        fresh_table(args, &names, args.fresh)?;
    }
    if args.opt_phases && !args.no_opt {
        print_opt_phases(&names, args.runs)?;
    }
    Ok(())
}

/// The optimizer's phases ([`kjit_ir::opt::OptTimings`]) per kernel: median of `runs` warm runs.
fn print_opt_phases(names: &[String], runs: usize) -> Result<()> {
    println!();
    println!("optimizer phases (ms, median of {runs} warm runs; nodes = e-nodes over all blocks)");
    let phase_names = kjit_ir::opt::OptTimings::default().phases().map(|(n, _)| n);
    print!("{:<22} {:>7}", "kernel", "nodes");
    for n in phase_names {
        print!(" {n:>8}");
    }
    println!();
    for name in names {
        let func = build_kernel(find_kernel(name)?)?;
        let (_, first) = kjit_ir::opt::optimize(&func);
        let mut per_phase: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); phase_names.len()];
        for _ in 0..runs {
            let (_, r) = kjit_ir::opt::optimize(&func);
            for (k, (_, d)) in r.timings.phases().into_iter().enumerate() {
                per_phase[k].push(d);
            }
        }
        print!("{:<22} {:>7}", name, first.nodes);
        for v in per_phase {
            print!(" {:>8.3}", ms(median(v)));
        }
        println!();
    }
    Ok(())
}

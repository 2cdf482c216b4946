//! `kjit bench [KERNEL..] [--target T] [--runs N] [--opt-phases]`: compile latency of library kernels, builder
//! to code object bytes, per pipeline stage. Each kernel is compiled once cold (the first compile
//! in the process pays for one-time set-up such as the optimizer's rule set), then `--runs`
//! times warm; the table shows the cold total and the median of each stage over the warm runs.
//! This is the quick per-stage view; `cargo bench --bench compile` is the criterion benchmark
//! with the clang-19 comparison.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use kjit_backend_gcn::compile::{compile, CompileOptions, StageTimings};
use kjit_backend_gcn::Target;

use super::kernels::{build_kernel, find_kernel};

/// Arguments of `kjit bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Kernels to compile (default: every kernel of the library).
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

/// Runs `kjit bench`.
pub fn run(args: &BenchArgs) -> Result<()> {
    if args.runs == 0 {
        return Err(anyhow!("--runs must be at least 1"));
    }
    let names: Vec<String> = if args.kernels.is_empty() {
        kjit_kernels::all()
            .iter()
            .map(|k| k.name.to_string())
            .collect()
    } else {
        args.kernels.clone()
    };
    let opts = CompileOptions {
        optimize: !args.no_opt,
        vgpr_budget: None,
        occupancy: None,
        check: false,
    };
    println!(
        "compile latency on {} (ms; cold = first compile of the kernel in this process, others = median of {} warm runs)",
        args.target, args.runs
    );
    println!(
        "{:<22} {:>7} {:>7} {:>6} {:>6} {:>6} {:>6} {:>8} {:>7} {:>7} {:>6} {:>6}",
        "kernel",
        "cold",
        "total",
        "build",
        "opt",
        "isel",
        "sched",
        "regalloc",
        "waitcnt",
        "hazards",
        "emit",
        "insts"
    );
    for name in &names {
        let spec = find_kernel(name)?;
        let once = || -> Result<(Sample, u32)> {
            let t0 = Instant::now();
            let func = build_kernel(spec)?;
            let build = t0.elapsed();
            let k = compile(&func, args.target, &opts)
                .map_err(|e| anyhow!("compiling {} for {}: {e}", spec.name, args.target))?;
            let total = t0.elapsed();
            Ok((
                Sample {
                    build,
                    stages: k.timings,
                    total,
                },
                k.header.instructions,
            ))
        };
        let (cold, insts) = once()?;
        let mut samples = Vec::with_capacity(args.runs);
        for _ in 0..args.runs {
            samples.push(once()?.0);
        }
        let col = |f: &dyn Fn(&Sample) -> Duration| ms(median(samples.iter().map(f).collect()));
        println!(
            "{:<22} {:>7.3} {:>7.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>8.3} {:>7.3} {:>7.3} {:>6.3} {:>6}",
            spec.name,
            ms(cold.total),
            col(&|s| s.total),
            col(&|s| s.build),
            col(&|s| s.stages.optimize),
            col(&|s| s.stages.isel),
            col(&|s| s.stages.schedule),
            col(&|s| s.stages.regalloc),
            col(&|s| s.stages.waitcnt),
            col(&|s| s.stages.hazards),
            col(&|s| s.stages.emit),
            insts
        );
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

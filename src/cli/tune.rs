//! `kjit tune KERNEL [--target T] [--timing MODEL] [-n SIZE] [--space occupancy|all] [--json]
//! [--plot FILE.svg] [--no-cache] [--device emu|hip] [--runs N] [--jobs N]`: compiles a library kernel at
//! every occupancy level (and its declared parameters with `--space all`), runs each candidate
//! on the software device's timing model (or with `--device hip` on the GPU, timed with HIP
//! events, best of `--runs`), checks it against the reference and prints the table and the
//! winner (`kjit::tune`). The winner is cached on disk (keyed by the model or GPU name); a
//! second run answers from the cache, `--no-cache` re-tunes, and `kjit run/build --tuned`
//! compile with the cached winner.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use kjit::tune::{cache, plot_svg, table, tune, tune_on, Job, Space, TuneOptions, TuneResult};
use kjit_backend_gcn::Target;
use kjit_runtime::{open_device, DeviceKind};

/// Arguments of `kjit tune`.
#[derive(clap::Args, Debug)]
pub struct TuneArgs {
    /// The kernel (see `kjit list`), or `all`: every library kernel of the target, one summary
    /// line each (default against tuned).
    pub kernel: String,
    /// Target processor: gfx942, gfx90a or gfx900 (default: the GPU's with `--device hip`,
    /// else gfx942).
    #[arg(long)]
    pub target: Option<Target>,
    /// Timing model (`kjit run --timing` names them; default: the target's first).
    #[arg(long, conflicts_with = "device")]
    pub timing: Option<String>,
    /// Where candidates run: `emu` (the software device's timing model, the default) or `hip`
    /// (an AMD GPU, each candidate timed with HIP events).
    #[arg(long)]
    pub device: Option<DeviceKind>,
    /// Launches per candidate on a GPU; the fastest counts.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Problem size (default: the kernel's own).
    #[arg(short = 'n', long = "n")]
    pub n: Option<usize>,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// What to search: occupancy levels, or occupancy levels times the kernel's parameters.
    #[arg(long, value_enum, default_value = "occupancy")]
    pub space: Space,
    /// Print the result as JSON (`candidates`, `best`, ...).
    #[arg(long)]
    pub json: bool,
    /// Write a plot of cycles against occupancy to this SVG file.
    #[arg(long)]
    pub plot: Option<std::path::PathBuf>,
    /// Re-tune even when the cache has the answer.
    #[arg(long)]
    pub no_cache: bool,
    /// Compile without the e-graph optimizer.
    #[arg(long)]
    pub no_opt: bool,
    /// Threads that compile the candidates (and run them on the software device); default: the
    /// cores `available_parallelism` reports. `--jobs 1` compiles and runs one at a time.
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
}

/// Runs `kjit tune`.
pub fn run(args: &TuneArgs) -> Result<()> {
    if args.kernel == "all" {
        return run_all(args);
    }
    let start = Instant::now();
    let (result, path) = tune_kernel(args, &args.kernel, !args.json)?;
    if let Some(p) = &args.plot {
        plot_svg(&result, p)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result.to_json())?);
        return Ok(());
    }
    report(&result, &path, start.elapsed().as_secs_f64() * 1e3);
    if let Some(p) = &args.plot {
        println!("plot: {}", p.display());
    }
    Ok(())
}

/// The target `args` name, checked against the GPU when there is one.
fn target_of(
    args: &TuneArgs,
    gpu: Option<&(dyn kjit_runtime::Device + Send + Sync)>,
) -> Result<Target> {
    let gpu_target = gpu.and_then(|d| d.target());
    Ok(match (args.target, gpu_target) {
        (Some(t), Some(d)) if t != d => bail!(
            "--target {t} does not match the GPU ({}, a {d})",
            gpu.map(|d| d.name()).unwrap_or_default()
        ),
        (t, d) => t.or(d).unwrap_or(Target::Gfx942),
    })
}

/// Tunes (or answers from the cache) the kernel `name` as `args` say; the result and its cache
/// file. `progress`: show a progress bar on a terminal.
fn tune_kernel(args: &TuneArgs, name: &str, progress: bool) -> Result<(TuneResult, PathBuf)> {
    let kernel = super::kernels::resolve(name)?;
    let n = args.n.unwrap_or(kernel.default_n());
    if n == 0 {
        bail!("-n must be at least 1");
    }
    // A GPU, when asked for: opening it fails with the reason (no feature, no GPU, ...).
    let gpu = match args.device {
        Some(DeviceKind::Hip) => {
            Some(open_device(DeviceKind::Hip).map_err(|e| anyhow!("--device hip: {e}"))?)
        }
        _ => None,
    };
    let target = target_of(args, gpu.as_deref())?;
    let mut opts = TuneOptions::new(target);
    if let Some(m) = &args.timing {
        let machine =
            kjit_backend_gcn::machine::machine_by_name(m).map_err(|e| anyhow!("--timing: {e}"))?;
        if machine.target != target {
            bail!(
                "timing model {} is a {}, not a {}",
                machine.name,
                machine.target,
                target
            );
        }
        opts.model = machine.name.to_string();
    }
    opts.space = args.space;
    opts.optimize = !args.no_opt;
    opts.runs = args.runs;
    if let Some(j) = args.jobs {
        opts.jobs = j as usize;
    }
    let job = Job::from_resolved(kernel, n, args.seed);
    // On a GPU the cache is keyed by its name (in the model's place).
    let key = match &gpu {
        Some(d) => cache::device_key(&d.name()),
        None => opts.model.clone(),
    };
    let path = cache::path(&job.name, job.ir_hash()?, target, &key, n, args.space);
    let cached = if args.no_cache {
        None
    } else {
        cache::load(&path)
    };
    let result = match cached {
        Some(r) => r,
        None => {
            let bar = if std::io::stderr().is_terminal() && progress {
                indicatif::ProgressBar::new(0)
            } else {
                indicatif::ProgressBar::hidden()
            };
            bar.set_style(
                indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len}")
                    .map_err(|e| anyhow!("{e}"))?,
            );
            bar.set_message(format!("tuning {}", job.name));
            let mut progress = |done: usize, total: usize| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            };
            let r = match &gpu {
                Some(d) => tune_on(&job, &opts, d.as_ref(), &mut progress)?,
                None => tune(&job, &opts, &mut progress)?,
            };
            bar.finish_and_clear();
            cache::store(&path, &r)?;
            r
        }
    };
    Ok((result, path))
}

/// `kjit tune all`: every library kernel of the target (the matrix kernels where it has matrix
/// cores), each tuned or answered from the cache as `kjit tune KERNEL` would, at its own
/// default size unless `-n` is given; one line each: default and best time, the winner, and the
/// compile time per candidate.
fn run_all(args: &TuneArgs) -> Result<()> {
    if args.plot.is_some() {
        bail!("--plot takes one kernel, not `all`");
    }
    let target = args.target.unwrap_or(Target::Gfx942);
    let matrix: &[kjit_kernels::KernelSpec] = if target.has_agprs() {
        kjit_kernels::matrix()
    } else {
        &[]
    };
    let mut rows = Vec::new();
    let mut json = Vec::new();
    for spec in kjit_kernels::all().iter().chain(matrix) {
        let start = Instant::now();
        let (r, _) = tune_kernel(args, spec.name, !args.json)?;
        let wall_ms = start.elapsed().as_secs_f64() * 1e3;
        if args.json {
            json.push(serde_json::json!({
                "kernel": r.kernel,
                "n": r.n,
                "default": r.candidates.first(),
                "best": r.best(),
                "candidates": r.candidates.len(),
                "compile_ms_max": max_compile_ms(&r),
                "compile_ms_per_candidate": per_candidate(&r, r.compile_ms),
                "compile_wall_ms_per_candidate": per_candidate(&r, r.compile_wall_ms),
                "compile_span_ms_per_candidate": per_candidate(&r, r.compile_span_ms),
                "compile_ms": r.compile_ms,
                "compile_wall_ms": r.compile_wall_ms,
                "compile_span_ms": r.compile_span_ms,
                "run_ms": r.run_ms,
                "run_wall_ms": r.run_wall_ms,
                "check_ms": r.check_ms,
                "wall_ms": r.wall_ms,
                "jobs": r.jobs,
                "from_cache": r.from_cache,
            }));
        } else {
            rows.push(summary_row(&r, wall_ms));
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(());
    }
    println!(
        "{:<22} {:>7} {:>10} {:>10} {:>8}  {:<28} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "kernel",
        "n",
        "default",
        "tuned",
        "speedup",
        "winner",
        "cands",
        "wall/cand",
        "span/cand",
        "cpu/cand",
        "comp max",
        "runs ms",
        "wall ms"
    );
    for r in rows {
        println!("{r}");
    }
    println!(
        "(times in cycles on the timing model, or µs on a GPU; ms: the compile phases' wall time \
         per candidate, their critical path per candidate (the busiest thread's CPU time: the \
         wall time on idle cores), the compile CPU time per candidate (all threads), the \
         slowest candidate's compile CPU, the run phases' wall time, the kernel's wall time)"
    );
    Ok(())
}

/// `ms` of a tuning per candidate.
fn per_candidate(r: &TuneResult, ms: f64) -> f64 {
    ms / r.candidates.len().max(1) as f64
}

/// The slowest candidate compile of a tuning, ms.
fn max_compile_ms(r: &TuneResult) -> f64 {
    r.candidates
        .iter()
        .map(|c| c.compile_ms)
        .fold(0.0, f64::max)
}

/// One line of `kjit tune all`.
fn summary_row(r: &TuneResult, wall_ms: f64) -> String {
    let time = |c: &kjit::tune::Candidate| match (c.cycles, c.us) {
        (Some(x), _) => x.to_string(),
        (None, Some(us)) => format!("{us:.2}us"),
        (None, None) => "-".into(),
    };
    let default = r.candidates.first().map_or("-".into(), time);
    let (best, speedup, winner) = match r.best() {
        Some(b) => {
            let mut w = vec![format!(
                "occ {}",
                b.occupancy.map_or("def".into(), |o| o.to_string())
            )];
            w.extend(b.params.iter().map(|(k, v)| format!("{k}={v}")));
            (
                time(b),
                b.speedup.map_or("-".into(), |s| format!("{s:.2}x")),
                w.join(" "),
            )
        }
        None => ("-".into(), "-".into(), "none correct".into()),
    };
    format!(
        "{:<22} {:>7} {:>10} {:>10} {:>8}  {:<28} {:>5} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.0} {:>9.0}{}",
        r.kernel,
        r.n,
        default,
        best,
        speedup,
        winner,
        r.candidates.len(),
        per_candidate(r, r.compile_wall_ms),
        per_candidate(r, r.compile_span_ms),
        per_candidate(r, r.compile_ms),
        max_compile_ms(r),
        r.run_wall_ms,
        wall_ms,
        if r.from_cache { " (cache)" } else { "" }
    )
}

fn report(r: &TuneResult, path: &std::path::Path, wall_ms: f64) {
    println!(
        "{} on {} (model {}, n={}): {}",
        r.kernel, r.target, r.model, r.n, r.strategy
    );
    println!("timed by: {}", r.cycle_source);
    print!("{}", table(r));
    match r.best() {
        Some(b) => {
            let params: Vec<String> = b.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!(
                "best: #{} occupancy {} (budget {}), {} VGPRs, {}, {} over the default compile{}",
                r.best.unwrap_or(0),
                b.occupancy.map_or("default".into(), |w| w.to_string()),
                b.vgpr_budget.map_or("none".into(), |x| x.to_string()),
                b.vgprs,
                match (b.cycles, b.us) {
                    (Some(c), _) => format!("{c} cycles"),
                    (None, Some(us)) => format!("{us:.2} µs"),
                    (None, None) => "no time".into(),
                },
                b.speedup.map_or("-".into(), |s| format!("{s:.2}x")),
                if params.is_empty() {
                    String::new()
                } else {
                    format!(", {}", params.join(" "))
                }
            );
        }
        None => println!("best: none (no candidate ran correctly)"),
    }
    if r.from_cache {
        println!(
            "answered from the cache in {wall_ms:.1} ms ({}); --no-cache re-tunes",
            path.display()
        );
    } else {
        println!(
            "tuned in {wall_ms:.0} ms on {} threads: compile {:.1} ms wall, {:.1} ms critical path, {:.1} ms CPU ({} candidates: {:.2} ms wall, {:.2} ms path, {:.2} ms CPU each), runs {:.1} ms wall ({:.1} ms summed), reference checks {:.1} ms; cached in {}",
            r.jobs,
            r.compile_wall_ms,
            r.compile_span_ms,
            r.compile_ms,
            r.candidates.len(),
            per_candidate(r, r.compile_wall_ms),
            per_candidate(r, r.compile_span_ms),
            per_candidate(r, r.compile_ms),
            r.run_wall_ms,
            r.run_ms,
            r.check_ms,
            path.display()
        );
    }
}

/// What `--tuned` takes from the cache: the winner's occupancy and parameter values.
pub struct Tuned {
    /// Occupancy to compile for (`None`: the default compile won).
    pub occupancy: Option<u32>,
    /// Parameter values (empty when the kernel declares none).
    pub params: Vec<u32>,
}

impl Tuned {
    /// The cached winner for a library kernel on `target` (preferring results for the size
    /// bucket of `n`), or an error saying how to make one. Prints where it came from.
    pub fn lookup(
        spec: &'static kjit_kernels::KernelSpec,
        target: Target,
        n: Option<usize>,
    ) -> Result<Tuned> {
        let job = Job::from_library(spec, n.unwrap_or(spec.default_n), 1);
        let (path, best) = cache::winner(spec.name, job.ir_hash()?, target, n).ok_or_else(|| {
            anyhow!(
                "no cached tuning of {} for {target} in {}: run `kjit tune {} --target {target}` first",
                spec.name,
                cache::dir().display(),
                spec.name
            )
        })?;
        println!(
            "tuned: occupancy {}{} (from {})",
            best.occupancy.map_or("default".into(), |w| w.to_string()),
            best.params
                .iter()
                .map(|(k, v)| format!(", {k}={v}"))
                .collect::<String>(),
            path.display()
        );
        Ok(Tuned {
            occupancy: best.occupancy,
            params: best.params.iter().map(|p| p.1).collect(),
        })
    }

    /// The kernel built with the tuned parameters.
    pub fn build(&self, spec: &kjit_kernels::KernelSpec) -> Result<kjit_ir::Function> {
        spec.build_with(&self.params)
            .map_err(|e| anyhow!("building {}: {e}", spec.name))
    }

    /// The case (launch shape) for the tuned parameters.
    pub fn case(&self, spec: &kjit_kernels::KernelSpec, n: usize, seed: u64) -> kjit_kernels::Case {
        spec.case_with(&self.params, n, seed)
    }
}

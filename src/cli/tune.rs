//! `kjit tune KERNEL [--target T] [--timing MODEL] [-n SIZE] [--space occupancy|all] [--json]
//! [--plot FILE.svg] [--no-cache]`: compiles a library kernel at every occupancy level (and
//! its declared parameters with `--space all`), runs each candidate on the software device,
//! checks it against the reference and prints the table and the winner (`kjit::tune`). The
//! winner is cached on disk; a second run answers from the cache, `--no-cache` re-tunes, and
//! `kjit run/build --tuned` compile with the cached winner.

use std::io::IsTerminal;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use kjit::tune::{cache, plot_svg, table, tune, Job, Space, TuneOptions, TuneResult};
use kjit_backend_gcn::Target;

/// Arguments of `kjit tune`.
#[derive(clap::Args, Debug)]
pub struct TuneArgs {
    /// The kernel (see `kjit list`).
    pub kernel: String,
    /// Target processor: gfx942, gfx90a or gfx900.
    #[arg(long, default_value = "gfx942")]
    pub target: Target,
    /// Timing model (`kjit run --timing` names them; default: the target's first).
    #[arg(long)]
    pub timing: Option<String>,
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
}

/// Runs `kjit tune`.
pub fn run(args: &TuneArgs) -> Result<()> {
    let start = Instant::now();
    let kernel = super::kernels::resolve(&args.kernel)?;
    let n = args.n.unwrap_or(kernel.default_n());
    if n == 0 {
        bail!("-n must be at least 1");
    }
    let mut opts = TuneOptions::new(args.target);
    if let Some(m) = &args.timing {
        let machine =
            kjit_backend_gcn::machine::machine_by_name(m).map_err(|e| anyhow!("--timing: {e}"))?;
        if machine.target != args.target {
            bail!(
                "timing model {} is a {}, not a {}",
                machine.name,
                machine.target,
                args.target
            );
        }
        opts.model = machine.name.to_string();
    }
    opts.space = args.space;
    opts.optimize = !args.no_opt;
    let job = Job::from_resolved(kernel, n, args.seed);
    let path = cache::path(
        &job.name,
        job.ir_hash()?,
        args.target,
        &opts.model,
        n,
        args.space,
    );
    let cached = if args.no_cache {
        None
    } else {
        cache::load(&path)
    };
    let result = match cached {
        Some(r) => r,
        None => {
            let bar = if std::io::stderr().is_terminal() && !args.json {
                indicatif::ProgressBar::new(0)
            } else {
                indicatif::ProgressBar::hidden()
            };
            bar.set_style(
                indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len}")
                    .map_err(|e| anyhow!("{e}"))?,
            );
            bar.set_message(format!("tuning {}", job.name));
            let r = tune(&job, &opts, &mut |done, total| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            })?;
            bar.finish_and_clear();
            cache::store(&path, &r)?;
            r
        }
    };
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

fn report(r: &TuneResult, path: &std::path::Path, wall_ms: f64) {
    println!(
        "{} on {} (model {}, n={}): {}",
        r.kernel, r.target, r.model, r.n, r.strategy
    );
    println!("cycles: {}", r.cycle_source);
    print!("{}", table(r));
    match r.best() {
        Some(b) => {
            let params: Vec<String> = b.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!(
                "best: #{} occupancy {} (budget {}), {} VGPRs, {} cycles, {} over the default compile{}",
                r.best.unwrap_or(0),
                b.occupancy.map_or("default".into(), |w| w.to_string()),
                b.vgpr_budget.map_or("none".into(), |x| x.to_string()),
                b.vgprs,
                b.cycles.unwrap_or(0),
                b.speedup.map_or("-".into(), |s| format!("{s:.2}x")),
                if params.is_empty() { String::new() } else { format!(", {}", params.join(" ")) }
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
            "tuned in {wall_ms:.0} ms: compile {:.1} ms ({} candidates, {:.2} ms each), model runs {:.1} ms, reference checks {:.1} ms; cached in {}",
            r.compile_ms,
            r.candidates.len(),
            r.compile_ms / r.candidates.len().max(1) as f64,
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

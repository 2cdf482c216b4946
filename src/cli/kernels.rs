//! `kjit list` and `kjit run KERNEL`: the kernel library, and running one of its kernels on
//! random inputs against its CPU reference. For now `run` executes in the IR interpreter (the
//! semantic reference); the GCN backend will add compiled runs on a device.

use anyhow::{anyhow, bail};
use kjit_ir::interp;
use kjit_kernels::{all, check, find, KernelSpec};
use std::time::Instant;

/// Arguments of `kjit run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The kernel (see `kjit list`).
    pub kernel: String,
    /// Problem size (default: the kernel's own).
    #[arg(short = 'n', long = "n")]
    pub n: Option<usize>,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run the e-graph optimizer first (and print its report).
    #[arg(long)]
    pub opt: bool,
    /// Print the kernel's IR (after optimization with `--opt`).
    #[arg(long)]
    pub ir: bool,
}

/// The library kernel called `name`, or an error listing the known ones.
pub fn find_kernel(name: &str) -> anyhow::Result<&'static KernelSpec> {
    find(name).ok_or_else(|| {
        let names: Vec<&str> = all().iter().map(|k| k.name).collect();
        anyhow!("unknown kernel `{name}` (known: {})", names.join(", "))
    })
}

/// Builds the kernel's IR.
pub fn build_kernel(spec: &KernelSpec) -> anyhow::Result<kjit_ir::Function> {
    (spec.build)().map_err(|e| anyhow!("building {}: {e}", spec.name))
}

/// Prints the kernel library.
pub fn list() -> anyhow::Result<()> {
    for k in all() {
        println!("{:<24} {}", k.name, k.description);
    }
    Ok(())
}

/// Runs `kjit run`.
pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    let spec = find_kernel(&args.kernel)?;
    let mut func = build_kernel(spec)?;
    if args.opt {
        let (g, report) = kjit_ir::opt::optimize(&func);
        kjit_ir::verify(&g).map_err(|e| anyhow!("optimized {} does not verify: {e}", spec.name))?;
        print!("{report}");
        func = g;
    }
    if args.ir {
        print!("{func}");
    }
    let n = args.n.unwrap_or(spec.default_n);
    let case = (spec.make_case)(n, args.seed);
    let mut run_args = case.args.clone();
    let t = Instant::now();
    let stats = interp::run(&func, &case.launch, &mut run_args)
        .map_err(|e| anyhow!("{}: {e}", spec.name))?;
    let dt = t.elapsed();
    println!(
        "{} n={} seed={} grid {:?} block {:?} in the IR interpreter: {} waves, {} wave-instructions, {} lane-instructions, {:.1} ms",
        spec.name,
        n,
        args.seed,
        case.launch.grid,
        case.launch.block,
        stats.waves,
        stats.wave_insts,
        stats.lane_insts,
        dt.as_secs_f64() * 1e3
    );
    let want = (spec.reference)(&case);
    match check(&case, &run_args, &want, spec.tolerance) {
        Ok(()) => {
            println!(
                "PASS {} (tolerance abs {:e}, rel {:e})",
                spec.name, spec.tolerance.abs, spec.tolerance.rel
            );
            Ok(())
        }
        Err(m) => {
            println!("FAIL {}: {m}", spec.name);
            bail!("{} does not match its CPU reference", spec.name)
        }
    }
}

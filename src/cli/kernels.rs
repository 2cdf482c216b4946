//! `kjit list` and `kjit run KERNEL|FILE.kir`: the kernel library, and running one of its
//! kernels on random inputs against its CPU reference, or an IR text file's kernel against the IR
//! interpreter (see `kjit::kernel_files`). `run` compiles the kernel for the target and runs it
//! on the default device (an AMD GPU through HIP when there is one, else kjit's software GCN
//! device), printing the compile time, the resource header and the run's statistics; `--interp`
//! runs it in the IR interpreter (the semantic reference) instead.

use anyhow::{anyhow, bail};
use kjit::kernel_files::{resolve_kernel, ResolvedKernel};
use kjit_backend_gcn::compile::{compile, CompileOptions};
use kjit_backend_gcn::machine::machine_by_name;
use kjit_backend_gcn::Target;
use kjit_ir::interp;
use kjit_kernels::{all, check, find, matrix, Case, KernelSpec};
use kjit_runtime::emu::{GcnEmulator, RunConfig};
use kjit_runtime::{device_for, ChosenDevice, DeviceKind};
use std::time::Instant;

/// Arguments of `kjit run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// A library kernel (see `kjit list`) or the path of an IR text file (`NAME.kir`).
    pub kernel: String,
    /// Problem size (default: the kernel's own).
    #[arg(short = 'n', long = "n")]
    pub n: Option<usize>,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Interpreter mode: run the e-graph optimizer first (and print its report). Compiled runs
    /// always optimize unless `--no-opt`.
    #[arg(long)]
    pub opt: bool,
    /// Compile without the e-graph optimizer.
    #[arg(long, conflicts_with = "opt")]
    pub no_opt: bool,
    /// Print the kernel's IR (after optimization with `--opt`).
    #[arg(long)]
    pub ir: bool,
    /// Print the compiled assembly.
    #[arg(long, conflicts_with = "interp")]
    pub asm: bool,
    /// Target processor (default: the device's, or gfx942 on the software device).
    #[arg(long, conflicts_with = "interp")]
    pub target: Option<Target>,
    /// Most VGPRs (+AGPRs) per lane; the allocator spills to fit.
    #[arg(long, conflicts_with = "interp")]
    pub vgpr_budget: Option<u32>,
    /// Waves per SIMD to compile for: VGPR(+AGPR) and SGPR budgets derived from the target.
    #[arg(long, conflicts_with = "interp")]
    pub occupancy: Option<u32>,
    /// Compile with the winner `kjit tune` cached for this kernel and target.
    #[arg(long, conflicts_with_all = ["occupancy", "vgpr_budget"])]
    pub tuned: bool,
    /// Device: hip or emu (default: HIP if an AMD GPU is present, else the software device).
    #[arg(long, conflicts_with = "interp")]
    pub device: Option<DeviceKind>,
    /// Run in the IR interpreter instead of compiling.
    #[arg(long)]
    pub interp: bool,
    /// Time the launch on this machine model of the software device (mi300x, mi250x, mi210,
    /// mi25) and print its report; the target defaults to the model's.
    #[arg(long, conflicts_with_all = ["interp", "device"])]
    pub timing: Option<String>,
    /// With `--timing`: print the timing report as one JSON object instead of text.
    #[arg(long, requires = "timing")]
    pub json: bool,
    /// Run on the software device and report the first buffer access outside its descriptor's
    /// range (wave, pc, lane, address, buffer) instead of loading 0 / dropping the store.
    #[arg(long, conflicts_with = "interp")]
    pub bounds_check: bool,
}

/// The library kernel called `name`, or an error listing the known ones.
pub fn find_kernel(name: &str) -> anyhow::Result<&'static KernelSpec> {
    find(name).ok_or_else(|| {
        let names: Vec<&str> = all().iter().chain(matrix()).map(|k| k.name).collect();
        anyhow!("unknown kernel `{name}` (known: {})", names.join(", "))
    })
}

/// The kernel a command line names: a library kernel or an IR text file
/// ([`kjit::kernel_files::resolve_kernel`]).
pub fn resolve(arg: &str) -> anyhow::Result<ResolvedKernel> {
    resolve_kernel(arg).map_err(|e| anyhow!("{e}"))
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
    for k in matrix() {
        println!("{:<24} {} (gfx90a, gfx942)", k.name, k.description);
    }
    Ok(())
}

/// Runs `kjit run`.
pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    let kernel = resolve(&args.kernel)?;
    if args.interp {
        run_interp(args, kernel)
    } else {
        run_compiled(args, &kernel)
    }
}

/// Compiles, runs on a device, checks.
fn run_compiled(args: &RunArgs, kernel: &ResolvedKernel) -> anyhow::Result<()> {
    let func = &kernel.func;
    let name = kernel.name();
    let model = args
        .timing
        .as_deref()
        .map(machine_by_name)
        .transpose()
        .map_err(|e| anyhow!("--timing: {e}"))?;
    if model.is_some() && args.bounds_check {
        bail!("--timing and --bounds-check are separate runs; ask for one");
    }
    let chosen = if let Some(m) = model {
        if let Some(t) = args.target.filter(|&t| t != m.target) {
            bail!(
                "--target {t} does not match the timing model {} ({})",
                m.name,
                m.target
            );
        }
        ChosenDevice {
            device: Box::new(GcnEmulator::with_config(RunConfig {
                timing: Some(m),
                ..RunConfig::default()
            })),
            kind: DeviceKind::Emu,
            reason: "--timing runs on the software device".into(),
            fallback: false,
        }
    } else if args.bounds_check {
        if args.device == Some(DeviceKind::Hip) {
            bail!("--bounds-check needs kjit's software device; it cannot run with --device hip");
        }
        ChosenDevice {
            device: Box::new(GcnEmulator::with_config(RunConfig {
                bounds_check: true,
                ..RunConfig::default()
            })),
            kind: DeviceKind::Emu,
            reason: "--bounds-check runs on the software device".into(),
            fallback: false,
        }
    } else {
        device_for(args.device).map_err(|e| anyhow!("{e}"))?
    };
    let device = chosen.device.as_ref();
    let target = match (args.target.or(model.map(|m| m.target)), device.target()) {
        (Some(t), Some(d)) if t != d => {
            bail!(
                "--target {t} does not match the device ({}, {d})",
                device.name()
            )
        }
        (Some(t), _) => t,
        (None, Some(d)) => d,
        (None, None) => Target::Gfx942,
    };
    let tuned = if args.tuned {
        let spec = kernel
            .spec
            .ok_or_else(|| anyhow!("--tuned needs a library kernel (`kjit tune` tunes those)"))?;
        Some((spec, super::tune::Tuned::lookup(spec, target, args.n)?))
    } else {
        None
    };
    let tuned_func = match &tuned {
        Some((spec, t)) => Some(t.build(spec)?),
        None => None,
    };
    let func = tuned_func.as_ref().unwrap_or(func);
    let opts = CompileOptions {
        optimize: !args.no_opt,
        vgpr_budget: args.vgpr_budget,
        occupancy: tuned.as_ref().map_or(args.occupancy, |(_, t)| t.occupancy),
        check: false,
        kernarg_preload: true,
    };
    let k =
        compile(func, target, &opts).map_err(|e| anyhow!("compiling {name} for {target}: {e}"))?;
    if args.ir {
        print!("{func}");
    }
    if args.asm {
        print!("{}", k.asm);
    }
    println!("{name} for {target}: compiled in {}", k.timings.summary());
    for l in k.header.lines().iter().skip(1) {
        println!("  {l}");
    }
    let n = args.n.unwrap_or(kernel.default_n());
    let case = match &tuned {
        Some((spec, t)) => t.case(spec, n, args.seed),
        None => kernel.case(n, args.seed),
    };
    let t = Instant::now();
    let out =
        kjit::exec::run_case(device, &k.code_object, func, &case).map_err(|e| anyhow!("{e}"))?;
    let dt = t.elapsed();
    let s = &out.stats;
    println!(
        "ran n={n} seed={} grid {:?} block {:?} on {} in {:.1} ms",
        args.seed,
        case.launch.grid,
        case.launch.block,
        device.name(),
        dt.as_secs_f64() * 1e3
    );
    println!(
        "  {} waves; wave-instructions: {} SALU, {} VALU, {} VMEM, {} SMEM, {} LDS, {} branch, {} MFMA; {} lane-ops; {} bytes read, {} written",
        s.waves, s.salu, s.valu, s.vmem, s.smem, s.lds, s.branch, s.mfma, s.lane_ops, s.bytes_read, s.bytes_written
    );
    if let Some(t) = &s.timing {
        if args.json {
            println!("{}", t.to_json());
        } else {
            print!("{t}");
        }
    }
    verdict(kernel, &case, &out.args)
}

/// The comparison with the reference (the CPU's for a library kernel, the IR interpreter's for
/// an IR file): PASS, or FAIL with the first mismatch and an error.
fn verdict(
    kernel: &ResolvedKernel,
    case: &Case,
    got: &[kjit_ir::interp::Arg],
) -> anyhow::Result<()> {
    let want = kernel.reference(case).map_err(|e| anyhow!("{e}"))?;
    let tol = kernel.tolerance();
    let name = kernel.name();
    let against = if kernel.spec.is_some() {
        "its CPU reference"
    } else {
        "the IR interpreter"
    };
    match check(case, got, &want, tol) {
        Ok(()) => {
            println!(
                "PASS {name} against {against} (tolerance abs {:e}, rel {:e})",
                tol.abs, tol.rel
            );
            Ok(())
        }
        Err(m) => {
            println!("FAIL {name}: {m}");
            bail!("{name} does not match {against}")
        }
    }
}

/// Runs in the IR interpreter, checks.
fn run_interp(args: &RunArgs, kernel: ResolvedKernel) -> anyhow::Result<()> {
    let mut func = kernel.func.clone();
    if args.opt {
        let (g, report) = kjit_ir::opt::optimize(&func);
        kjit_ir::verify(&g).map_err(|e| anyhow!("optimized {} does not verify: {e}", func.name))?;
        print!("{report}");
        func = g;
    }
    if args.ir {
        print!("{func}");
    }
    let n = args.n.unwrap_or(kernel.default_n());
    let case = kernel.case(n, args.seed);
    let mut run_args = case.args.clone();
    let t = Instant::now();
    let stats = interp::run(&func, &case.launch, &mut run_args)
        .map_err(|e| anyhow!("{}: {e}", func.name))?;
    let dt = t.elapsed();
    println!(
        "{} n={} seed={} grid {:?} block {:?} in the IR interpreter: {} waves, {} wave-instructions, {} lane-instructions, {:.1} ms",
        func.name,
        n,
        args.seed,
        case.launch.grid,
        case.launch.block,
        stats.waves,
        stats.wave_insts,
        stats.lane_insts,
        dt.as_secs_f64() * 1e3
    );
    if kernel.spec.is_none() {
        println!("(an IR file's reference is the IR interpreter itself: nothing to check)");
        return Ok(());
    }
    verdict(&kernel, &case, &run_args)
}

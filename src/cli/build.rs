//! `kjit build KERNEL -o FILE.hsaco [--target T] [--vgpr-budget N] [--no-opt]`: compiles a
//! library kernel and writes its code object, loadable by `kjit emu run` and by HIP
//! (`hipModuleLoad`). Prints the resource header and the compile time.

use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use kjit_backend_gcn::compile::{compile, CompileOptions};
use kjit_backend_gcn::Target;

use super::kernels::{build_kernel, find_kernel};

/// Arguments of `kjit build`.
#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// The kernel (see `kjit list`).
    pub kernel: String,
    /// Where to write the code object.
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Target processor: gfx942, gfx90a or gfx900.
    #[arg(long, default_value = "gfx942")]
    pub target: Target,
    /// Most VGPRs (+AGPRs) per lane; the allocator spills to fit.
    #[arg(long)]
    pub vgpr_budget: Option<u32>,
    /// Waves per SIMD to compile for: VGPR(+AGPR) and SGPR budgets derived from the target.
    #[arg(long)]
    pub occupancy: Option<u32>,
    /// Compile with the winner `kjit tune` cached for this kernel and target.
    #[arg(long, conflicts_with_all = ["occupancy", "vgpr_budget"])]
    pub tuned: bool,
    /// Compile without the e-graph optimizer.
    #[arg(long)]
    pub no_opt: bool,
}

/// Runs `kjit build`.
pub fn run(args: &BuildArgs) -> Result<()> {
    let spec = find_kernel(&args.kernel)?;
    let tuned = if args.tuned {
        Some(super::tune::Tuned::lookup(spec, args.target, None)?)
    } else {
        None
    };
    let func = match &tuned {
        Some(t) => t.build(spec)?,
        None => build_kernel(spec)?,
    };
    let opts = CompileOptions {
        optimize: !args.no_opt,
        vgpr_budget: args.vgpr_budget,
        occupancy: tuned.as_ref().map_or(args.occupancy, |t| t.occupancy),
        check: false,
    };
    let k = compile(&func, args.target, &opts)
        .map_err(|e| anyhow!("compiling {} for {}: {e}", spec.name, args.target))?;
    std::fs::write(&args.output, &k.code_object)
        .with_context(|| format!("writing {}", args.output.display()))?;
    print!("{}", k.header);
    println!("compile time: {}", k.timings.summary());
    println!(
        "wrote {} ({} bytes, kernel `{}`)",
        args.output.display(),
        k.code_object.len(),
        k.name
    );
    Ok(())
}

//! `kjit build KERNEL|FILE.kir -o FILE.hsaco [--target T] [--vgpr-budget N] [--no-opt] [--no-kernarg-preload]`: compiles a
//! library kernel (or an IR text file) and writes its code object, loadable by `kjit emu run` and by HIP
//! (`hipModuleLoad`). Prints the resource header and the compile time.

use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use kjit_backend_gcn::compile::{compile, CompileOptions};
use kjit_backend_gcn::Target;

use super::kernels::resolve;

/// Arguments of `kjit build`.
#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// A library kernel (see `kjit list`) or the path of an IR text file (`NAME.kir`).
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
    /// Load every kernel argument with `s_load` (no preloading into user SGPRs on gfx90a/gfx942).
    #[arg(long)]
    pub no_kernarg_preload: bool,
}

/// Runs `kjit build`.
pub fn run(args: &BuildArgs) -> Result<()> {
    let kernel = resolve(&args.kernel)?;
    let tuned = if args.tuned {
        let spec = kernel
            .spec
            .ok_or_else(|| anyhow!("--tuned needs a library kernel (`kjit tune` tunes those)"))?;
        Some((spec, super::tune::Tuned::lookup(spec, args.target, None)?))
    } else {
        None
    };
    let func = match &tuned {
        Some((spec, t)) => t.build(spec)?,
        None => kernel.func,
    };
    let opts = CompileOptions {
        optimize: !args.no_opt,
        vgpr_budget: args.vgpr_budget,
        occupancy: tuned.as_ref().map_or(args.occupancy, |(_, t)| t.occupancy),
        check: false,
        kernarg_preload: !args.no_kernarg_preload,
    };
    let k = compile(&func, args.target, &opts)
        .map_err(|e| anyhow!("compiling {} for {}: {e}", func.name, args.target))?;
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

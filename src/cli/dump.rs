//! `kjit dump KERNEL|FILE.kir [--target T] [--ir | --opt-ir | --asm] [--vgpr-budget N] [--no-opt] [--no-kernarg-preload]`: a
//! library kernel's (or an IR text file's) IR, optimized IR, or compiled assembly (the default). The assembly starts
//! with the resource header (VGPRs, SGPRs, AGPRs, LDS, scratch, spills, occupancy, instruction
//! count) as `;` comments and re-assembles with `llvm-mc-19 -arch=amdgcn -mcpu=T` to exactly the
//! bytes of the code object `kjit build` writes.

use anyhow::{anyhow, Result};
use kjit_backend_gcn::compile::{compile, CompileOptions};
use kjit_backend_gcn::Target;

use super::kernels::resolve;

/// Arguments of `kjit dump`.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("what").args(["ir", "opt_ir", "asm"])))]
pub struct DumpArgs {
    /// A library kernel (see `kjit list`) or the path of an IR text file (`NAME.kir`).
    pub kernel: String,
    /// Target processor: gfx942, gfx90a or gfx900.
    #[arg(long, default_value = "gfx942")]
    pub target: Target,
    /// Print the IR as built.
    #[arg(long)]
    pub ir: bool,
    /// Print the IR after the e-graph optimizer, with its report.
    #[arg(long)]
    pub opt_ir: bool,
    /// Print the compiled assembly with its resource header (the default).
    #[arg(long)]
    pub asm: bool,
    /// Most VGPRs (+AGPRs) per lane; the allocator spills to fit.
    #[arg(long)]
    pub vgpr_budget: Option<u32>,
    /// Waves per SIMD to compile for: VGPR(+AGPR) and SGPR budgets derived from the target.
    #[arg(long)]
    pub occupancy: Option<u32>,
    /// Compile without the e-graph optimizer.
    #[arg(long)]
    pub no_opt: bool,
    /// Load every kernel argument with `s_load` (no preloading into user SGPRs on gfx90a/gfx942).
    #[arg(long)]
    pub no_kernarg_preload: bool,
}

/// Runs `kjit dump`.
pub fn run(args: &DumpArgs) -> Result<()> {
    let func = resolve(&args.kernel)?.func;
    if args.ir {
        print!("{func}");
        return Ok(());
    }
    if args.opt_ir {
        let (g, report) = kjit_ir::opt::optimize(&func);
        kjit_ir::verify(&g).map_err(|e| anyhow!("optimized {} does not verify: {e}", func.name))?;
        print!("{report}");
        print!("{g}");
        return Ok(());
    }
    let opts = CompileOptions {
        optimize: !args.no_opt,
        vgpr_budget: args.vgpr_budget,
        occupancy: args.occupancy,
        check: false,
        kernarg_preload: !args.no_kernarg_preload,
    };
    let k = compile(&func, args.target, &opts)
        .map_err(|e| anyhow!("compiling {} for {}: {e}", func.name, args.target))?;
    print!("{}", k.asm);
    Ok(())
}

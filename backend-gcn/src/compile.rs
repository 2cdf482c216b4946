//! The compile driver: a verified [`kjit_ir::Function`] → a [`CompiledKernel`] (code object,
//! assembly, resource header), running the backend's stages in order and timing each.
//!
//! ```text
//!  (optimize: kjit_ir::opt) → isel::select → schedule::schedule → regalloc::allocate
//!        → peephole::run_peepholes → waitcnt::insert_waitcnt → hazards::insert_wait_states → emit::emit
//! ```
//! With [`CompileOptions::check`] every stage's verifier runs after it (IR verifier, MIR
//! verifier, regalloc2's checker), so a broken stage is named instead of producing wrong code;
//! tests turn it on, the CLI and benchmarks leave it off. [`compile_to_phys`] stops before
//! emission so tests can edit the allocated code (drop a wait, say) and emit it themselves.

use std::time::{Duration, Instant};

use crate::emit::{emit, EmitError};
use crate::isel::{select, IselError};
use crate::mir_verify::MirVerifyError;
use crate::phys::PhysFunction;
use crate::regalloc::{allocate, RegallocError, RegallocOptions};
use crate::waitcnt::{insert_waitcnt, WaitcntStats};
use crate::Target;

pub use crate::emit::KernelHeader;

/// How to compile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    /// Run the e-graph optimizer on the IR first.
    pub optimize: bool,
    /// Most VGPRs (+AGPRs) per lane; the allocator spills to stay inside. `None` = whole file.
    pub vgpr_budget: Option<u32>,
    /// Run every stage's verifier and regalloc2's checker (slower; for tests).
    pub check: bool,
}

impl Default for CompileOptions {
    /// Optimized, no budget, no verifiers: what a user wants by default.
    fn default() -> Self {
        CompileOptions {
            optimize: true,
            vgpr_budget: None,
            check: false,
        }
    }
}

/// Why a kernel did not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// The IR does not verify (before or after optimization).
    #[error("IR {stage} does not verify: {message}")]
    Ir {
        /// `input` or `after optimization`.
        stage: &'static str,
        /// The verifier's report.
        message: String,
    },
    /// Instruction selection failed.
    #[error("instruction selection: {0}")]
    Isel(#[from] IselError),
    /// A stage produced machine IR that does not verify.
    #[error("machine IR after {stage}: {source}")]
    Mir {
        /// The stage that produced it.
        stage: &'static str,
        /// What is wrong.
        source: MirVerifyError,
    },
    /// Register allocation failed (including a budget too small to fit).
    #[error("register allocation: {0}")]
    Regalloc(#[from] RegallocError),
    /// Emission failed.
    #[error("emission: {0}")]
    Emit(#[from] EmitError),
    /// A VGPR budget the target cannot honour.
    #[error("VGPR budget {budget} is out of range for {target} (1..={max})")]
    BadBudget {
        /// The budget asked for.
        budget: u32,
        /// The target.
        target: Target,
        /// The register file per lane.
        max: u32,
    },
}

/// Wall-clock time of each stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageTimings {
    /// E-graph optimization (zero when off).
    pub optimize: Duration,
    /// Instruction selection.
    pub isel: Duration,
    /// List scheduling on machine IR.
    pub schedule: Duration,
    /// Register allocation.
    pub regalloc: Duration,
    /// `s_waitcnt` insertion.
    pub waitcnt: Duration,
    /// Hazard wait states.
    pub hazards: Duration,
    /// Encoding, descriptor, code object, asm text.
    pub emit: Duration,
    /// Verifiers (only with [`CompileOptions::check`]).
    pub verify: Duration,
    /// Everything, builder output to code object bytes.
    pub total: Duration,
}

impl StageTimings {
    /// One line: `total 0.41 ms (opt 0.20, isel 0.05, ...)`.
    pub fn summary(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mut s = format!(
            "{:.3} ms (opt {:.3}, isel {:.3}, sched {:.3}, regalloc {:.3}, waitcnt {:.3}, hazards {:.3}, emit {:.3}",
            ms(self.total),
            ms(self.optimize),
            ms(self.isel),
            ms(self.schedule),
            ms(self.regalloc),
            ms(self.waitcnt),
            ms(self.hazards),
            ms(self.emit)
        );
        if !self.verify.is_zero() {
            s += &format!(", verify {:.3}", ms(self.verify));
        }
        s.push(')');
        s
    }
}

/// A compiled kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledKernel {
    /// Kernel (and symbol) name.
    pub name: String,
    /// Target.
    pub target: Target,
    /// The loadable code object.
    pub code_object: Vec<u8>,
    /// LLVM-syntax assembly that `llvm-mc-19` re-assembles to the code object's `.text`.
    pub asm: String,
    /// Registers, occupancy, spills, instructions.
    pub header: KernelHeader,
    /// Time per stage.
    pub timings: StageTimings,
    /// What waitcnt insertion did.
    pub waitcnt: WaitcntStats,
    /// Wait states (`s_nop` cycles) the hazard pass added.
    pub wait_states: u32,
}

fn timed<T>(slot: &mut Duration, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    *slot += t.elapsed();
    r
}

struct ToPhys {
    phys: PhysFunction,
    waitcnt: WaitcntStats,
    wait_states: u32,
}

fn to_phys(
    func: &kjit_ir::Function,
    target: Target,
    opts: &CompileOptions,
    t: &mut StageTimings,
) -> Result<ToPhys, CompileError> {
    if let Some(budget) = opts.vgpr_budget {
        let max = target.register_file_per_lane();
        if budget == 0 || budget > max {
            return Err(CompileError::BadBudget {
                budget,
                target,
                max,
            });
        }
    }
    if opts.check {
        timed(&mut t.verify, || kjit_ir::verify(func)).map_err(|e| CompileError::Ir {
            stage: "input",
            message: e.to_string(),
        })?;
    }
    let optimized;
    let func = if opts.optimize {
        optimized = timed(&mut t.optimize, || kjit_ir::opt::optimize(func).0);
        if opts.check {
            timed(&mut t.verify, || kjit_ir::verify(&optimized)).map_err(|e| CompileError::Ir {
                stage: "after optimization",
                message: e.to_string(),
            })?;
        }
        &optimized
    } else {
        func
    };
    let mut mf = timed(&mut t.isel, || select(func, target))?;
    if opts.check {
        timed(&mut t.verify, || crate::mir_verify::verify(&mf)).map_err(|source| {
            CompileError::Mir {
                stage: "instruction selection",
                source,
            }
        })?;
    }
    timed(&mut t.schedule, || crate::schedule::schedule(&mut mf));
    if opts.check {
        timed(&mut t.verify, || crate::mir_verify::verify(&mf)).map_err(|source| {
            CompileError::Mir {
                stage: "scheduling",
                source,
            }
        })?;
    }
    let ra = RegallocOptions {
        vgpr_budget: opts.vgpr_budget,
        run_checker: opts.check,
    };
    // The post-allocation peepholes are timed with the allocation whose moves they remove.
    let mut phys = timed(&mut t.regalloc, || {
        allocate(&mf, &ra).map(|mut p| {
            crate::peephole::run_peepholes(&mut p);
            p
        })
    })?;
    let waitcnt = timed(&mut t.waitcnt, || insert_waitcnt(&mut phys));
    let wait_states = timed(&mut t.hazards, || {
        crate::hazards::insert_wait_states(&mut phys)
    });
    Ok(ToPhys {
        phys,
        waitcnt,
        wait_states,
    })
}

/// Runs the pipeline up to and including hazard wait states: the [`PhysFunction`] that
/// [`emit`] takes.
pub fn compile_to_phys(
    func: &kjit_ir::Function,
    target: Target,
    opts: &CompileOptions,
) -> Result<PhysFunction, CompileError> {
    let mut t = StageTimings::default();
    Ok(to_phys(func, target, opts, &mut t)?.phys)
}

/// Compiles `func` for `target`.
pub fn compile(
    func: &kjit_ir::Function,
    target: Target,
    opts: &CompileOptions,
) -> Result<CompiledKernel, CompileError> {
    let start = Instant::now();
    let mut t = StageTimings::default();
    let p = to_phys(func, target, opts, &mut t)?;
    let e = timed(&mut t.emit, || emit(&p.phys))?;
    t.total = start.elapsed();
    Ok(CompiledKernel {
        name: e.header.name.clone(),
        target,
        code_object: e.code_object,
        asm: e.asm,
        header: e.header,
        timings: t,
        waitcnt: p.waitcnt,
        wait_states: p.wait_states,
    })
}

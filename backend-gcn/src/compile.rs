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
use crate::isel::{select_verified_with, select_with, IselError};
use crate::memo::Memo;
use crate::mir_verify::MirVerifyError;
use crate::phys::PhysFunction;
use crate::regalloc::{Allocator, RegallocError, RegallocOptions};
use crate::waitcnt::{insert_waitcnt, WaitcntStats};
use crate::Target;

pub use crate::emit::{Asm, KernelHeader};

/// How to compile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    /// Run the e-graph optimizer on the IR first.
    pub optimize: bool,
    /// Most VGPRs (+AGPRs) per lane; the allocator spills to stay inside. `None` = whole file.
    pub vgpr_budget: Option<u32>,
    /// Waves per SIMD to compile for: the VGPR(+AGPR) and SGPR budgets that allow it are
    /// derived from the target's register files ([`occupancy_budgets`]); with `vgpr_budget`
    /// too, the smaller budget holds. A level the target or the kernel's LDS cannot reach is
    /// an error.
    pub occupancy: Option<u32>,
    /// Run every stage's verifier and regalloc2's checker (slower; for tests).
    pub check: bool,
    /// Have the dispatcher preload the first kernel arguments into user SGPRs where the target
    /// can (gfx90a/gfx942), with the 256-byte compatibility prologue (`codeobj::preload`).
    pub kernarg_preload: bool,
}

impl Default for CompileOptions {
    /// Optimized, no budget, no verifiers: what a user wants by default.
    fn default() -> Self {
        CompileOptions {
            optimize: true,
            vgpr_budget: None,
            occupancy: None,
            check: false,
            kernarg_preload: true,
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
    /// An occupancy the target cannot reach at all.
    #[error("occupancy {occupancy} waves/SIMD is out of range for {target} (1..={max})")]
    BadOccupancy {
        /// Waves per SIMD asked for.
        occupancy: u32,
        /// The target.
        target: Target,
        /// The target's wave slots per SIMD.
        max: u32,
    },
    /// The kernel compiled inside the occupancy's budgets but something else (its LDS and
    /// workgroup size) holds it below.
    #[error("occupancy {occupancy} waves/SIMD is unreachable for this kernel on {target}: it reaches {reached} (limited by {limited_by})")]
    OccupancyUnreachable {
        /// Waves per SIMD asked for.
        occupancy: u32,
        /// The target.
        target: Target,
        /// What the compiled kernel reaches.
        reached: u32,
        /// What limits it.
        limited_by: String,
    },
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

/// The register budgets that let a kernel run `waves` waves per SIMD on a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OccupancyBudgets {
    /// Most VGPRs (+AGPRs on gfx90a/gfx942) per lane.
    pub vgprs: u32,
    /// Most SGPRs the code may name (without VCC/FLAT_SCRATCH/XNACK_MASK); `None` when the
    /// SGPR file never limits this level.
    pub sgprs: Option<u32>,
}

/// The budgets for `waves` waves per SIMD on `target`, from the same tables the occupancy in
/// the resource header (and `kjit disasm`) is computed with.
pub fn occupancy_budgets(target: Target, waves: u32) -> Result<OccupancyBudgets, CompileError> {
    let max = target.max_waves_per_simd();
    if waves == 0 || waves > max {
        return Err(CompileError::BadOccupancy {
            occupancy: waves,
            target,
            max,
        });
    }
    Ok(OccupancyBudgets {
        vgprs: target.registers_for_waves_per_simd(waves),
        sgprs: crate::codeobj::descriptor::named_sgprs_for_waves(target, waves),
    })
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
    /// LLVM-syntax assembly that `llvm-mc-19` re-assembles to the code object's `.text`
    /// (written when first read).
    pub asm: crate::emit::Asm,
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

#[derive(Clone, Debug)]
struct ToPhys {
    phys: PhysFunction,
    waitcnt: WaitcntStats,
    wait_states: u32,
}

/// A kernel after optimization, instruction selection and scheduling: what every register
/// budget of one kernel shares, so a tuner compiles it once and allocates it per budget
/// ([`crate::isel::select`], then [`compile_selected`]). A clone starts with no cached allocations.
#[derive(Debug)]
pub struct Selected {
    mf: crate::mir::MachineFunction,
    target: Target,
    /// Time of the stages so far.
    pub timings: StageTimings,
    /// Allocations already made under a budget (the occupancy ladder below a spilling budget
    /// is allocated once for all the levels a tuner compiles).
    allocations: AllocationCache,
    /// The blocks' dependence DAGs, made once for all the schedules below.
    dags: std::sync::OnceLock<crate::schedule::Dags>,
    /// The least VGPR pressure any schedule of the code can have
    /// ([`crate::schedule::vgpr_pressure_floor`]).
    floor: std::sync::OnceLock<u32>,
    /// Schedules already made, by VGPR bound (`None`: the latency schedule every level tries
    /// first), with their VGPR pressure; bounds whose schedules are equal share one.
    schedules: ScheduleCache,
    /// The budget-independent part of allocating each schedule (preparation, webs, regalloc2
    /// runs by register count), shared by the budgets that allocate it.
    allocators: AllocatorCache,
    /// The latency schedule's allocation without a VGPR budget (with the post-allocation
    /// peepholes), by (SGPR budget, checked): every budget it fits in allocates the same
    /// ([`Allocator::budget_free`]), so it is made once for them all.
    unbudgeted: UnbudgetedCache,
    /// Kernels finished from each distinct allocation: budgets whose allocations are equal
    /// (every level a kernel fits without a budget, say) get the same waits, wait states and
    /// code, so those stages run once per allocation.
    finished: FinishedCache,
    /// Waits and wait states of each distinct allocation ([`late_cached`]): the default
    /// compile's level search profiles allocations that become kernels too.
    waited: WaitedCache,
    /// Allocations by (first bound of the schedule, VGPR budget, SGPR count, checked): the
    /// default compile's level search ([`surely_in_memory`]) and the levels' own allocations
    /// allocate the same schedule under the same budget.
    by_schedule: BySchedule,
    /// The default compile's allocation ([`default_allocation`]) by `checked`, with the
    /// occupancy level it was taken from (`None`: the latency schedule's without a budget).
    default: DefaultCache,
    /// Allocations after the post-allocation peepholes, by the allocation before them: the
    /// default compile's fewer-VGPRs check allocates a level's budget again and can take the
    /// allocation the level took ([`with_peepholes`]).
    peepholed: PeepholedCache,
}

/// An allocation, shared by the caches and the budgets that take it (a copy of a function
/// of a thousand instructions cost more than some of the stages that read it).
type Alloc = std::sync::Arc<PhysFunction>;

/// Default allocations by `checked`.
type DefaultCache = Memo<bool, Result<(Alloc, Option<u32>), CompileError>>;

/// Allocations without a VGPR budget by (SGPR budget, checked).
type UnbudgetedCache = Memo<(Option<u32>, bool), Result<Alloc, CompileError>>;

/// Finished kernels by the allocation (before waits and hazards) they were made from.
type FinishedCache = std::sync::Mutex<Vec<(Alloc, CompiledKernel)>>;

/// Allocations with their waits and wait states, by the allocation.
type WaitedCache = std::sync::Mutex<Vec<(Alloc, std::sync::Arc<ToPhys>)>>;

/// Allocations after the post-allocation peepholes, by the allocation before them.
type PeepholedCache = std::sync::Mutex<Vec<(Alloc, Alloc)>>;

/// Allocations (before the peepholes and the SGPR budget's check) by (first bound of the
/// schedule, VGPR budget, SGPR singles regalloc2 gets under the SGPR budget, checked).
type BySchedule =
    Memo<(Option<u32>, Option<u32>, u32, bool), Result<crate::regalloc::Allocated, CompileError>>;

impl Clone for Selected {
    /// The same selected code with empty caches.
    fn clone(&self) -> Selected {
        Selected {
            timings: self.timings,
            ..Selected::from_mir(self.mf.clone())
        }
    }
}

impl Selected {
    /// Selected code from machine IR (isel's, or tests' random programs), with empty caches.
    pub fn from_mir(mf: crate::mir::MachineFunction) -> Selected {
        Selected {
            target: mf.abi.target,
            mf,
            timings: StageTimings::default(),
            allocations: AllocationCache::default(),
            dags: Default::default(),
            floor: Default::default(),
            schedules: ScheduleCache::default(),
            allocators: AllocatorCache::default(),
            unbudgeted: UnbudgetedCache::default(),
            finished: FinishedCache::default(),
            waited: WaitedCache::default(),
            by_schedule: BySchedule::default(),
            default: DefaultCache::default(),
            peepholed: PeepholedCache::default(),
        }
    }

    /// [`crate::schedule::vgpr_pressure_floor`] of the selected code, computed on first use.
    fn pressure_floor(&self) -> u32 {
        *self
            .floor
            .get_or_init(|| crate::schedule::vgpr_pressure_floor(&self.mf))
    }
}

/// Schedules by (VGPR bound, verified).
type ScheduleCache = Memo<(Option<u32>, bool), Result<std::sync::Arc<Schedule>, CompileError>>;

/// One schedule of a [`Selected`] kernel.
#[derive(Debug)]
struct Schedule {
    mf: crate::mir::MachineFunction,
    /// Its VGPR pressure ([`crate::schedule::vgpr_pressure`]).
    pressure: u32,
    /// The first bound that made this code: the key of its [`Allocator`].
    first: Option<u32>,
    /// The blocks' orders that made it from the selected code.
    orders: crate::schedule::BlockOrders,
}

/// Allocators by (first bound of the schedule, checked).
type AllocatorCache = Memo<(Option<u32>, bool), std::sync::Arc<Result<Allocator, RegallocError>>>;

/// Allocations by (VGPR budget, SGPR budget, checked).
type AllocationCache = Memo<(u32, Option<u32>, bool), Result<Alloc, CompileError>>;

/// Verifies (with `opts.check`), optimizes (with `opts.optimize`) and selects: the part of a
/// compile that does not depend on the budgets (scheduling does: [`compile_selected`]).
pub fn select_kernel(
    func: &kjit_ir::Function,
    target: Target,
    opts: &CompileOptions,
) -> Result<Selected, CompileError> {
    let start = Instant::now();
    let mut t = StageTimings::default();
    let mut s = front(func, target, opts, &mut t)?;
    s.timings.total = start.elapsed();
    Ok(s)
}

fn front(
    func: &kjit_ir::Function,
    target: Target,
    opts: &CompileOptions,
    t: &mut StageTimings,
) -> Result<Selected, CompileError> {
    // A check of what isel takes gives its uniformity: isel then does not verify it again.
    let ir_error = |stage: &'static str| {
        move |e: kjit_ir::VerifierErrors| CompileError::Ir {
            stage,
            message: e.to_string(),
        }
    };
    let mut checked = None;
    if opts.check {
        if opts.optimize {
            timed(&mut t.verify, || kjit_ir::verify(func)).map_err(ir_error("input"))?;
        } else {
            checked = Some(
                timed(&mut t.verify, || kjit_ir::verify_with_uniformity(func))
                    .map_err(ir_error("input"))?,
            );
        }
    }
    let optimized;
    let func = if opts.optimize {
        optimized = timed(&mut t.optimize, || kjit_ir::opt::optimized(func));
        if opts.check {
            checked = Some(
                timed(&mut t.verify, || {
                    kjit_ir::verify_with_uniformity(&optimized)
                })
                .map_err(ir_error("after optimization"))?,
            );
        }
        &optimized
    } else {
        func
    };
    let mf = timed(&mut t.isel, || match checked {
        Some(uni) => select_verified_with(func, uni, target, opts.kernarg_preload),
        None => select_with(func, target, opts.kernarg_preload),
    })?;
    if opts.check {
        verify_mir(&mf, "instruction selection", t)?;
    }
    Ok(Selected {
        timings: *t,
        ..Selected::from_mir(mf)
    })
}

fn to_phys(
    func: &kjit_ir::Function,
    target: Target,
    opts: &CompileOptions,
    t: &mut StageTimings,
) -> Result<ToPhys, CompileError> {
    check_budgets(target, opts)?;
    let sel = front(func, target, opts, t)?;
    let p = back(&sel, opts, t)?;
    // The kernel's caches went with `sel`: the waited function is moved out, not copied.
    drop(sel);
    Ok(std::sync::Arc::try_unwrap(p).unwrap_or_else(|p| p.as_ref().clone()))
}

/// The budgets `opts` asks for, checked against the target: (VGPR budget, SGPR budget).
fn check_budgets(
    target: Target,
    opts: &CompileOptions,
) -> Result<(Option<u32>, Option<u32>), CompileError> {
    let (occ_vgprs, occ_sgprs) = match opts.occupancy {
        Some(w) => {
            let b = occupancy_budgets(target, w)?;
            (Some(b.vgprs), b.sgprs)
        }
        None => (None, None),
    };
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
    let vgpr_budget = match (opts.vgpr_budget, occ_vgprs) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Ok((vgpr_budget, occ_sgprs))
}

/// Bounds on the live VGPRs the scheduler tries under a VGPR budget, highest first: the budget
/// less an eighth (what the allocator needs beyond the pressure: values live through an
/// instruction and its operands, the work-item id registers, pair alignment); regalloc2's
/// `Float` class (64 registers, `docs/regalloc.md`) less the same eighth, the most single VGPRs
/// it holds without spilling; and halfway between. Above the class size the rest of the values
/// go to spill slots, in spare VGPRs while the budget has them.
///
/// In a function without VGPR pairs regalloc2 holds at most 128 singles in its two classes
/// (`sel`'s [`crate::regalloc::two_class_singles`]): there the highest bound is at most that
/// less an eighth too, so that no bound's schedule keeps more singles live than regalloc2 holds
/// (a schedule that does spills from both full classes, regalloc2's costliest run: hash_lanes'
/// level-3 probe at bound 147, the default policy's first level up, was a third of its
/// regalloc2 time; bounded at 112, it is level 4's schedule and allocation).
fn schedule_limits(sel: &Selected, budget: u32) -> Vec<u32> {
    const REGALLOC2_CLASS: u32 = 64;
    let mut high = budget - budget / 8;
    if let Some(held) = crate::regalloc::two_class_singles(&sel.mf) {
        high = high.min(held - held / 8);
    }
    let low = high.min(REGALLOC2_CLASS - REGALLOC2_CLASS / 8);
    let mut limits = vec![high, (high + low) / 2, low];
    limits.dedup();
    limits
}

/// The bounds on live VGPRs the compile driver schedules `sel`'s code with under VGPR budget
/// `budget` before any guided bound, highest first ([`schedule_limits`]). For tests.
#[doc(hidden)]
pub fn schedule_bounds(sel: &Selected, budget: u32) -> Vec<u32> {
    schedule_limits(sel, budget)
}

/// Guided bounds [`allocate_in_budget`] tries at most (each one schedule and one allocation).
const GUIDED_BOUNDS: u32 = 2;

/// The bound to try after the schedule bounded at `at` was allocated as `p` with values in
/// memory: `at` less the dwords kept in scratch and AGPR slots (at least 1). The allocator
/// needs a number of registers beyond the schedule's pressure that depends on the kernel
/// (regalloc2's 64-register class leaves the excess in slots, `docs/regalloc.md`), so a bound
/// lower by what did not fit usually fits while losing no more of the loads' hoisting than it
/// must (the fixed bounds below step by up to a quarter of the budget; hash_rounds at gfx942
/// occupancy 5: 84 puts 5 dwords in scratch, 79 fits, 70 hoists 29 of 40 loads).
fn guided_bound(at: u32, p: &PhysFunction) -> Option<u32> {
    let excess = p.usage.scratch_bytes.div_ceil(4) + p.usage.spills_to_agprs;
    (excess > 0)
        .then(|| at.saturating_sub(excess.max(1)))
        .filter(|&n| n > 0)
}

/// The MIR verifier after `stage`, timed.
fn verify_mir(
    mf: &crate::mir::MachineFunction,
    stage: &'static str,
    t: &mut StageTimings,
) -> Result<(), CompileError> {
    timed(&mut t.verify, || crate::mir_verify::verify(mf))
        .map_err(|source| CompileError::Mir { stage, source })
}

/// The blocks' orders of `sel`'s code scheduled with `vgpr_limit` live VGPRs at most (if
/// any); the blocks' DAGs are built on the first call and shared by the others.
fn scheduled_orders(
    sel: &Selected,
    vgpr_limit: Option<u32>,
    t: &mut StageTimings,
) -> crate::schedule::BlockOrders {
    timed(&mut t.schedule, || {
        sel.dags
            .get_or_init(|| crate::schedule::Dags::new(&sel.mf))
            .orders(&sel.mf, vgpr_limit)
    })
}

/// A copy of `sel`'s code reordered by `orders` ([`scheduled_orders`]), verified with `check`.
fn scheduled(
    sel: &Selected,
    orders: &crate::schedule::BlockOrders,
    check: bool,
    t: &mut StageTimings,
) -> Result<crate::mir::MachineFunction, CompileError> {
    let mut mf = sel.mf.clone();
    timed(&mut t.schedule, || {
        sel.dags
            .get_or_init(|| crate::schedule::Dags::new(&sel.mf))
            .apply(&mut mf, orders)
    });
    if check {
        verify_mir(&mf, "scheduling", t)?;
    }
    Ok(mf)
}

/// `sel`'s code scheduled with `vgpr_limit` (as [`scheduled`]) and its VGPR pressure, made
/// once per bound for all the budgets compiled from `sel`. A bound whose schedule equals one
/// made before (bounds below what any order reaches give the same code) shares it, and so
/// its [`Allocator`] and regalloc2 runs; when the blocks' orders already equal an earlier
/// schedule's, the code is not copied, reordered and compared again (hash_lanes' tune: 10
/// bounds, 5 distinct schedules).
fn scheduled_cached(
    sel: &Selected,
    vgpr_limit: Option<u32>,
    check: bool,
    t: &mut StageTimings,
) -> Result<std::sync::Arc<Schedule>, CompileError> {
    sel.schedules.get_or_make((vgpr_limit, check), || {
        let orders = scheduled_orders(sel, vgpr_limit, t);
        let find = |same: &dyn Fn(&Schedule) -> bool| {
            sel.schedules
                .made()
                .into_iter()
                .find_map(|((_, chk), s)| s.ok().filter(|s| chk == check && same(s)))
        };
        if let Some(s) = find(&|s| s.orders == orders) {
            return Ok(s);
        }
        let mf = scheduled(sel, &orders, check, t)?;
        if let Some(s) = find(&|s| s.mf == mf) {
            return Ok(s);
        }
        let pressure = timed(&mut t.schedule, || match sel.dags.get() {
            Some(dags) => dags.vgpr_pressure(&mf),
            None => crate::schedule::vgpr_pressure(&mf),
        });
        Ok(std::sync::Arc::new(Schedule {
            mf,
            pressure,
            first: vgpr_limit,
            orders,
        }))
    })
}

/// The [`Allocator`] of `sel`'s schedule for `bound`, made once for all the budgets compiled
/// from `sel`.
fn allocator(
    sel: &Selected,
    bound: Option<u32>,
    check: bool,
    t: &mut StageTimings,
) -> Result<std::sync::Arc<Result<Allocator, RegallocError>>, CompileError> {
    let s = scheduled_cached(sel, bound, check, t)?;
    Ok(sel.allocators.get_or_make((s.first, check), || {
        std::sync::Arc::new(timed(&mut t.regalloc, || Allocator::new(&s.mf, check)))
    }))
}

/// `sel`'s schedule for `bound` allocated under `ra`'s budgets, before the post-allocation
/// peepholes ([`with_peepholes`]: only the allocation a budget keeps needs them; they change
/// no register counts).
fn allocated(
    sel: &Selected,
    bound: Option<u32>,
    ra: &RegallocOptions,
    t: &mut StageTimings,
) -> Result<Alloc, CompileError> {
    let first = scheduled_cached(sel, bound, ra.run_checker, t)?.first;
    let a = allocator(sel, bound, ra.run_checker, t)?;
    let a = a.as_ref().as_ref().map_err(|e| e.clone())?;
    // SGPR budgets that leave regalloc2 the same SGPR count share one allocation, checked
    // against each ([`crate::regalloc::Allocated::within`]).
    let key = (
        first,
        ra.vgpr_budget,
        a.int_registers(ra.sgpr_budget),
        ra.run_checker,
    );
    let made = sel.by_schedule.get_or_make(key, || {
        Ok(timed(&mut t.regalloc, || {
            a.allocate_with(ra.vgpr_budget, key.2)
        })?)
    })?;
    Ok(made.within(ra.sgpr_budget)?)
}

/// `r` with the post-allocation peepholes run (timed with the allocation whose moves they
/// remove), as a new allocation: the one before them stays cached for other budgets. Run
/// once per distinct allocation of `sel`.
fn with_peepholes(
    sel: &Selected,
    r: Result<Alloc, CompileError>,
    t: &mut StageTimings,
) -> Result<Alloc, CompileError> {
    r.map(|p| {
        let same = sel
            .peepholed
            .lock()
            .ok()
            .and_then(|c| c.iter().find(|(q, _)| *q == p).map(|(_, r)| r.clone()));
        if let Some(r) = same {
            return r;
        }
        let mut q = PhysFunction::clone(&p);
        timed(&mut t.regalloc, || crate::peephole::run_peepholes(&mut q));
        let q = Alloc::new(q);
        if let Ok(mut c) = sel.peepholed.lock() {
            c.push((p, q.clone()));
        }
        q
    })
}

/// The latency schedule allocated without a VGPR budget under `ra`'s SGPR budget, with the
/// post-allocation peepholes: the default compile's allocation, and every budget's that it
/// fits in ([`Allocator::budget_free`]); made once per SGPR budget.
fn unbudgeted(
    sel: &Selected,
    ra: &RegallocOptions,
    t: &mut StageTimings,
) -> Result<Alloc, CompileError> {
    let ra = RegallocOptions {
        vgpr_budget: None,
        ..*ra
    };
    sel.unbudgeted
        .get_or_make((ra.sgpr_budget, ra.run_checker), || {
            with_peepholes(sel, allocated(sel, None, &ra, t), t)
        })
}

/// Values a compile keeps outside the VGPRs (scratch bytes, then AGPR slots): what a larger
/// budget must never make worse. Slots in spare VGPRs are registers (read in place).
fn memory_spills(p: &PhysFunction) -> (u32, u32) {
    (p.usage.scratch_bytes, p.usage.spills_to_agprs)
}

/// The allocation under VGPR budget `b`, never keeping more in memory ([`memory_spills`])
/// than under any smaller budget of the target's occupancy ladder
/// (`Target::registers_for_waves_per_simd`): when the budget's own allocation
/// ([`allocate_in_budget`]) spills to memory, the next smaller ladder budget's allocation
/// (recursively, the same rule) is taken if it spills less. So the occupancy levels' spills
/// fall as the budget grows by construction. Results are kept in `sel`'s cache, so a tuner
/// compiling every level allocates each budget once.
fn allocate_monotonic(
    sel: &Selected,
    b: u32,
    ra: &RegallocOptions,
    t: &mut StageTimings,
) -> Result<Alloc, CompileError> {
    let key = (b, ra.sgpr_budget, ra.run_checker);
    sel.allocations
        .get_or_make(key, || allocate_ladder(sel, b, ra, t))
}

/// [`allocate_monotonic`]'s rule, uncached.
fn allocate_ladder(
    sel: &Selected,
    b: u32,
    ra: &RegallocOptions,
    t: &mut StageTimings,
) -> Result<Alloc, CompileError> {
    let own = allocate_in_budget(sel, b, ra, &[], t);
    let spills_to_memory = match &own {
        Ok(p) => memory_spills(p) > (0, 0),
        Err(_) => true,
    };
    match ladder_below(sel.target, b) {
        Some(l) if spills_to_memory => {
            let smaller = RegallocOptions {
                vgpr_budget: Some(l),
                ..*ra
            };
            match (own, allocate_monotonic(sel, l, &smaller, t)) {
                (Ok(p), Ok(q)) if memory_spills(&q) < memory_spills(&p) => Ok(q),
                (Err(_), Ok(q)) => Ok(q),
                (own, _) => own,
            }
        }
        _ => own,
    }
}

/// The next budget below `b` on the target's occupancy ladder, where [`allocate_ladder`] looks
/// when `b`'s own allocation keeps values in memory.
fn ladder_below(target: Target, b: u32) -> Option<u32> {
    (1..=target.max_waves_per_simd())
        .map(|w| target.registers_for_waves_per_simd(w))
        .find(|&l| l < b)
}

/// Whether [`allocate_monotonic`] under VGPR budget `b` (and `ra`'s SGPR budget) surely keeps
/// values in memory or fails, told with as few allocations as [`allocate_in_budget`]'s rules
/// allow: when neither the latency schedule nor any bound of [`schedule_limits`] has at most
/// `b` VGPRs live (the floor, or each schedule's pressure, says so), only the last bound is
/// allocated, and after it only guided bounds ([`guided_bound`]) can still reach the budget.
/// Their schedules are made; an allocation only where it may guide a further bound: a schedule
/// `p` dwords above the budget keeps at least `p` dwords in memory (at least 1), so its guided
/// bound is at most its own less that. The same holds for the ladder's budgets below. The
/// default compile's level search ([`default_allocation`]) refuses such a level without the
/// rest of its allocations (hash_chain at gfx942 level 8: bound 56 schedules 115 live VGPRs and
/// keeps 54 dwords in scratch; its guided bound 2 schedules 115 again, and its allocation, a
/// spilling regalloc2 run that cost an eighth of the default compile, is not made). A scheduling
/// error answers `false` (the allocation then reports it).
fn surely_in_memory(sel: &Selected, b: u32, ra: &RegallocOptions, t: &mut StageTimings) -> bool {
    let check = ra.run_checker;
    let over = |bound: Option<u32>, t: &mut StageTimings| {
        scheduled_cached(sel, bound, check, t).map_or(None, |s| (s.pressure > b).then_some(s))
    };
    let limits = schedule_limits(sel, b);
    if sel.pressure_floor() <= b
        && !std::iter::once(None)
            .chain(limits.iter().copied().map(Some))
            .all(|bound| over(bound, t).is_some())
    {
        return false;
    }
    let ra = RegallocOptions {
        vgpr_budget: Some(b),
        ..*ra
    };
    let (mut at, mut guided) = (*limits.last().expect("at least one bound"), 0);
    if over(Some(at), t).is_none() {
        return false;
    }
    let mut q = allocated(sel, Some(at), &ra, t);
    while let Ok(p) = &q {
        let Some(next) = guided_bound(at, p).filter(|_| guided < GUIDED_BOUNDS) else {
            break;
        };
        let Some(s) = over(Some(next), t) else {
            return false;
        };
        guided += 1;
        if guided == GUIDED_BOUNDS || next <= (s.pressure - b).max(1) {
            break;
        }
        (at, q) = (next, allocated(sel, Some(next), &ra, t));
    }
    ladder_below(sel.target, b).is_none_or(|l| surely_in_memory(sel, l, &ra, t))
}

/// The allocation under VGPR budget `b` alone. The latency schedule first, so that a kernel
/// that fits a budget compiles the same under every larger one. When it puts values in scratch
/// or AGPRs under the budget, schedules bounded by the budget (loads hoisted only while the
/// live VGPRs stay inside the bound) are tried from the highest bound down
/// (`schedule_limits`): the first that needs no memory or AGPR slots wins (the most latency
/// hiding the occupancy target leaves room for), else the one that spills least. A schedule
/// with more VGPRs live at once than the budget cannot keep them in registers: it is not
/// allocated unless nothing else is left. With bounds in `only`, those alone (highest first:
/// the default compile's fewer-VGPRs check, [`default_allocation`]).
fn allocate_in_budget(
    sel: &Selected,
    b: u32,
    ra: &RegallocOptions,
    only: &[u32],
    t: &mut StageTimings,
) -> Result<Alloc, CompileError> {
    let spills = |p: &PhysFunction| {
        let u = &p.usage;
        (
            u.scratch_bytes,
            u.spills_to_agprs,
            u.spills_to_vgprs,
            u.vgprs,
        )
    };
    let in_registers = |p: &PhysFunction| memory_spills(p) == (0, 0);
    let ra = RegallocOptions {
        vgpr_budget: Some(b),
        ..*ra
    };
    // Bounds still to try, highest first (popped from the end).
    let mut bounds: Vec<Option<u32>> = if only.is_empty() {
        std::iter::once(None)
            .chain(schedule_limits(sel, b).into_iter().map(Some))
            .rev()
            .collect()
    } else {
        only.iter().rev().map(|&l| Some(l)).collect()
    };
    // No schedule has less pressure than the floor: above the budget, only the last bound is
    // scheduled (and allocated, as it always is). The latency schedule, which every budget
    // tries first, is made anyway.
    let floor = || sel.pressure_floor();
    let mut guided = 0;
    // The best allocation so far, and the bound of its schedule.
    let mut best: Option<Result<Alloc, CompileError>> = None;
    let mut best_bound = None;
    // Allocations made here, by the first bound of their schedule: a bound whose schedule
    // equals an earlier one's has its allocation.
    let mut made: Vec<(Option<u32>, Result<Alloc, CompileError>)> = Vec::new();
    while let Some(bound) = bounds.pop() {
        let last = bounds.is_empty();
        if bound.is_some() && !last && floor() > b {
            continue;
        }
        let schedule = scheduled_cached(sel, bound, ra.run_checker, t)?;
        if schedule.pressure > b && !last {
            continue;
        }
        // The latency schedule's allocation without a budget, when it fits this one, is this
        // budget's too (and keeps every value in a register: the first bound wins).
        if bound.is_none() {
            let a = allocator(sel, None, ra.run_checker, t)?;
            let fits = match a.as_ref() {
                Ok(a) => timed(&mut t.regalloc, || a.budget_free(b, ra.sgpr_budget)),
                Err(_) => Ok(false),
            };
            if fits == Ok(true) {
                return unbudgeted(sel, &ra, t);
            }
        }
        let q = match made.iter().find(|(f, _)| *f == schedule.first) {
            Some((_, q)) => q.clone(),
            None => {
                let q = allocated(sel, bound, &ra, t);
                made.push((schedule.first, q.clone()));
                q
            }
        };
        let done = q.as_ref().is_ok_and(|p| in_registers(p));
        if let (Some(at), Ok(p)) = (bound, &q) {
            if let Some(next) = guided_bound(at, p).filter(|_| !done && guided < GUIDED_BOUNDS) {
                if bounds.last().is_none_or(|&l| l < Some(next)) {
                    bounds.push(Some(next));
                    guided += 1;
                }
            }
        }
        let better = match (&best, &q) {
            (None, _) | (Some(Err(_)), Ok(_)) => true,
            (Some(Ok(p)), Ok(q)) => spills(q) < spills(p),
            _ => false,
        };
        if better || done {
            best = Some(q);
            best_bound = bound;
        }
        if done {
            break;
        }
    }
    let best = best.expect("the last schedule is always allocated");
    with_peepholes(sel, budget_error(best, b, best_bound, floor), t)
}

/// `r`, with a failure of the schedule bounded to `bound` under VGPR budget `b` (one made only
/// because the budget is below the latency schedule's pressure) named as the budget's: the
/// error of the other register file alone (the bounded order's SGPR tuples not fitting, say)
/// would not say what to change.
fn budget_error(
    r: Result<Alloc, CompileError>,
    b: u32,
    bound: Option<u32>,
    floor: impl FnOnce() -> u32,
) -> Result<Alloc, CompileError> {
    match (r, bound) {
        (Err(CompileError::Regalloc(cause)), Some(bound))
            if !matches!(cause, RegallocError::BudgetTooSmall { .. }) =>
        {
            Err(CompileError::Regalloc(RegallocError::VgprBudgetTooSmall {
                budget: b,
                floor: floor(),
                bound,
                cause: Box::new(cause),
            }))
        }
        (r, _) => r,
    }
}

/// The allocation `opts`' budgets get from `sel` (with the post-allocation peepholes).
fn back_allocated(
    sel: &Selected,
    opts: &CompileOptions,
    t: &mut StageTimings,
) -> Result<Alloc, CompileError> {
    let target = sel.target;
    let (vgpr_budget, occ_sgprs) = check_budgets(target, opts)?;
    let ra = RegallocOptions {
        vgpr_budget,
        sgpr_budget: occ_sgprs,
        run_checker: opts.check,
    };
    let (default, _) = default_allocation(sel, opts.check, t)?;
    let Some(b) = vgpr_budget else {
        return Ok(default);
    };
    // A budget the default compile fits in gets its code: a kernel that fits in R registers
    // compiles the same, in registers, under every budget >= R.
    let u = &default.usage;
    let fits = u.budget_registers() <= b
        && occ_sgprs.is_none_or(|s| u.sgprs <= s)
        && memory_spills(&default) == (0, 0);
    if fits {
        return Ok(default);
    }
    allocate_monotonic(sel, b, &ra, t)
}

/// The occupancy the default compile aims for, when the latency schedule's allocation reaching
/// `reached` waves per SIMD (by its VGPRs) falls short of it: the most waves the kernel's VGPRs
/// allow under the schedule that needs fewest ([`crate::schedule::vgpr_pressure_floor`]), not
/// above what its LDS and workgroup size allow ([`lds_occupancy`]). Like Mesa ACO's
/// `schedule_program`, the target comes from the kernel's register demand before scheduling;
/// unlike ACO's, the latency schedule trades waves for hoisting only where that buys loads in
/// flight ([`default_allocation`]). `None` when `reached` is what the LDS and workgroup size
/// allow (the floor, a liveness pass, is then not computed); at most `reached` when the VGPRs
/// allow no more waves.
fn occupancy_target(sel: &Selected, reached: u32) -> Option<u32> {
    let by_lds = lds_occupancy(sel).waves_per_simd;
    if reached >= by_lds {
        return None;
    }
    let floor = sel.pressure_floor();
    Some(by_lds.min(sel.target.waves_per_simd_for_registers(floor)))
}

/// The occupancy the kernel's LDS and workgroup size allow, whatever its registers.
fn lds_occupancy(sel: &Selected) -> crate::codeobj::descriptor::Occupancy {
    let abi = &sel.mf.abi;
    crate::codeobj::descriptor::Occupancy::from_counts(
        sel.target,
        0,
        0,
        abi.lds_bytes,
        Some(abi.meta.max_flat_workgroup_size.max(1)),
    )
}

/// The default compile's allocation (with the post-allocation peepholes), and the occupancy
/// level it was compiled at (`None`: the latency schedule's allocation without a budget).
///
/// The latency schedule spends VGPRs to hoist loads; that is worth waves per SIMD only where
/// the hoisting keeps loads in flight. When its allocation without a budget reaches fewer
/// waves (by its VGPRs) than [`occupancy_target`], the levels above it are compiled, each as
/// `--occupancy` would (schedules bounded by the level's budget): the next level first (when
/// that gives up something, the search stops), then from the target down; the highest that
/// gives up nothing is taken: nothing more in scratch or AGPR slots (a level that
/// [`surely_in_memory`] is refused without allocating it), no more
/// instructions and `s_waitcnt`s, and at every loop depth at least as many loads left in
/// flight by its waits ([`WaitProfile`]). When the next level gives up something, the
/// schedules bounded by the reached level's budget are tried, and one that gives up nothing
/// with fewer VGPRs is taken (the same waves, less register file). hash_chain's lookups form
/// one dependence chain (all its waits are `vmcnt(0)` in either schedule): gfx942 level 7, 64 VGPRs and 8 waves instead
/// of 119 and 4, the same 793 instructions. hash_rounds' 40 independent gathers of a round are
/// in flight together only in the latency schedule, which it keeps. Made once per
/// [`Selected`] kernel; a kernel whose latency schedule already reaches the target (every
/// small kernel) pays for nothing more.
fn default_allocation(
    sel: &Selected,
    check: bool,
    t: &mut StageTimings,
) -> Result<(Alloc, Option<u32>), CompileError> {
    sel.default.get_or_make(check, || {
        let ra = RegallocOptions {
            vgpr_budget: None,
            sgpr_budget: None,
            run_checker: check,
        };
        let free = unbudgeted(sel, &ra, t)?;
        let target = sel.target;
        let reached = target.waves_per_simd_for_registers(free.usage.budget_registers());
        let Some(goal) = occupancy_target(sel, reached) else {
            return Ok((free, None));
        };
        let profile = |p: &Alloc, t: &mut StageTimings| {
            WaitProfile::of(&late_cached(sel, p, t).phys, &sel.mf)
        };
        let baseline = profile(&free, t);
        let level = |w: u32, t: &mut StageTimings| -> Result<Option<Alloc>, CompileError> {
            let b = occupancy_budgets(target, w)?;
            let ra = RegallocOptions {
                vgpr_budget: Some(b.vgprs),
                sgpr_budget: b.sgprs,
                run_checker: check,
            };
            // Nothing in memory is what `free` keeps: a level that surely spills gives up that.
            if memory_spills(&free) == (0, 0) && surely_in_memory(sel, b.vgprs, &ra, t) {
                return Ok(None);
            }
            Ok(allocate_monotonic(sel, b.vgprs, &ra, t).ok().filter(|p| {
                memory_spills(p) <= memory_spills(&free)
                    && profile(p, t).gives_up_nothing_against(&baseline)
            }))
        };
        // At the level taken, when its code keeps values in spill slots, a schedule bounded
        // below the level's highest bound (the first of the lower ones that keeps every value
        // in a register), when it gives up nothing and needs fewer VGPRs, is the better code
        // for the same waves (hash_chain on gfx900: its latency schedule, 73 VGPRs live at once, fits
        // occupancy 3 in registers once the spill slots share the layout's holes; the bounded
        // one keeps 64 live with the same waits).
        let fewer = |w: u32, cur: (Alloc, Option<u32>), t: &mut StageTimings| {
            // Only code with values in spill slots: regalloc2's class overflowed, so a lower
            // bound can take VGPRs; a code without slots keeps its schedule (hash_chain on
            // gfx942: bound 59 instead of 56 at level 7, 61 VGPRs instead of 64, was 2.4% slower
            // on the mi300x model at the same 8 waves).
            if cur.0.usage.spills_to_vgprs == 0 {
                return cur;
            }
            let Ok(b) = occupancy_budgets(target, w) else {
                return cur;
            };
            let ra = RegallocOptions {
                vgpr_budget: Some(b.vgprs),
                sgpr_budget: b.sgprs,
                run_checker: check,
            };
            let limits = schedule_limits(sel, b.vgprs);
            let low = &limits[limits.len().min(1)..];
            let bounded = allocate_in_budget(sel, b.vgprs, &ra, low, t)
                .ok()
                .filter(|p| {
                    p.usage.vgprs < cur.0.usage.vgprs
                        && memory_spills(p) <= memory_spills(&free)
                        && profile(p, t).gives_up_nothing_against(&baseline)
                });
            match bounded {
                Some(p) => (p, Some(w)),
                None => cur,
            }
        };
        if goal <= reached {
            return Ok(fewer(reached, (free.clone(), None), t));
        }
        // The first level up: a kernel whose loads in flight need the latency schedule's VGPRs
        // (hash_rounds) loses them there already, and pays for one level only. Then from
        // the target down, the first level that gives up nothing.
        let Some(first) = level(reached + 1, t)? else {
            return Ok(fewer(reached, (free.clone(), None), t));
        };
        for w in (reached + 2..=goal).rev() {
            if let Some(p) = level(w, t)? {
                return Ok(fewer(w, (p, Some(w)), t));
            }
        }
        Ok(fewer(reached + 1, (first, Some(reached + 1)), t))
    })
}

/// The occupancy level the default compile of `sel` was compiled at (its code is that
/// level's: `--occupancy` with it compiles the same), or `None` when it is the latency
/// schedule's allocation without a budget ([`default_allocation`]).
pub fn default_level(sel: &Selected, check: bool) -> Result<Option<u32>, CompileError> {
    let mut t = sel.timings;
    Ok(default_allocation(sel, check, &mut t)?.1)
}

/// What a wave of allocated code (with its waits) issues and waits for: how
/// [`default_allocation`] tells whether a bounded schedule gave up latency hiding.
#[derive(Debug)]
struct WaitProfile {
    /// Instructions.
    instructions: usize,
    /// `s_waitcnt` instructions.
    waits: usize,
    /// By loop depth: loads the waits leave in flight (`vmcnt`, `lgkmcnt`: their counts
    /// summed over the waits that wait on them).
    in_flight: Vec<(u64, u64)>,
}

impl WaitProfile {
    /// The profile of `p`, whose blocks are `mf`'s (blocks added by edge splitting, after
    /// them, count at depth 0).
    fn of(p: &PhysFunction, mf: &crate::mir::MachineFunction) -> WaitProfile {
        let depths: Vec<usize> = mf.blocks.values().map(|b| b.loop_depth as usize).collect();
        let mut w = WaitProfile {
            instructions: 0,
            waits: 0,
            in_flight: vec![(0, 0); depths.iter().max().map_or(1, |d| d + 1)],
        };
        for (i, b) in p.blocks.iter().enumerate() {
            let d = depths.get(i).copied().unwrap_or(0);
            w.instructions += b.insts.len();
            for wait in b
                .insts
                .iter()
                .filter_map(|i| crate::waitcnt::Wait::of_inst(i, p.abi.target))
            {
                w.waits += 1;
                w.in_flight[d].0 += wait.vm.map_or(0, u64::from);
                w.in_flight[d].1 += wait.lgkm.map_or(0, u64::from);
            }
        }
        w
    }

    /// No more instructions or waits than `other`, and at every loop depth at least its loads
    /// in flight at the waits.
    fn gives_up_nothing_against(&self, other: &WaitProfile) -> bool {
        self.instructions <= other.instructions
            && self.waits <= other.waits
            && self
                .in_flight
                .iter()
                .zip(&other.in_flight)
                .all(|(a, b)| a.0 >= b.0 && a.1 >= b.1)
    }
}

/// [`late`] of `p`, made once per distinct allocation of `sel`.
fn late_cached(sel: &Selected, p: &Alloc, t: &mut StageTimings) -> std::sync::Arc<ToPhys> {
    let same = sel
        .waited
        .lock()
        .ok()
        .and_then(|c| c.iter().find(|(q, _)| q == p).map(|(_, w)| w.clone()));
    if let Some(w) = same {
        return w;
    }
    let w = std::sync::Arc::new(late(PhysFunction::clone(p), t));
    if let Ok(mut c) = sel.waited.lock() {
        c.push((p.clone(), w.clone()));
    }
    w
}

/// Waits and wait states on an allocated function.
fn late(mut phys: PhysFunction, t: &mut StageTimings) -> ToPhys {
    let waitcnt = timed(&mut t.waitcnt, || insert_waitcnt(&mut phys));
    let wait_states = timed(&mut t.hazards, || {
        crate::hazards::insert_wait_states(&mut phys)
    });
    ToPhys {
        phys,
        waitcnt,
        wait_states,
    }
}

/// The allocation `opts`' budgets get from `sel`, with its waits and wait states (shared with
/// `sel`'s cache: [`finish`] reads it).
fn back(
    sel: &Selected,
    opts: &CompileOptions,
    t: &mut StageTimings,
) -> Result<std::sync::Arc<ToPhys>, CompileError> {
    let p = back_allocated(sel, opts, t)?;
    Ok(late_cached(sel, &p, t))
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
    check_budgets(target, opts)?;
    let sel = front(func, target, opts, &mut t)?;
    check_lds_occupancy(&sel, opts)?;
    let p = back(&sel, opts, &mut t)?;
    let k = finish(&p, target, t, start)?;
    check_occupancy(&k, opts)?;
    Ok(k)
}

/// Compiles a kernel [`select_kernel`] prepared, under `opts`' budgets (its `optimize`
/// and `check` were applied when it was prepared). The timings count the shared stages too.
pub fn compile_selected(
    sel: &Selected,
    opts: &CompileOptions,
) -> Result<CompiledKernel, CompileError> {
    let start = Instant::now()
        .checked_sub(sel.timings.total)
        .unwrap_or_else(Instant::now);
    let mut t = sel.timings;
    check_lds_occupancy(sel, opts)?;
    let phys = back_allocated(sel, opts, &mut t)?;
    let same = sel
        .finished
        .lock()
        .ok()
        .and_then(|c| c.iter().find(|(p, _)| *p == phys).map(|(_, k)| k.clone()));
    if let Some(mut k) = same {
        t.total = start.elapsed();
        k.timings = t;
        check_occupancy(&k, opts)?;
        return Ok(k);
    }
    let waited = late_cached(sel, &phys, &mut t);
    let k = finish(&waited, sel.target, t, start)?;
    if let Ok(mut c) = sel.finished.lock() {
        c.push((phys, k.clone()));
    }
    check_occupancy(&k, opts)?;
    Ok(k)
}

/// The error of an occupancy level that the kernel's LDS and workgroup size hold it below
/// whatever its registers: known before scheduling and allocation, which are then skipped. It
/// is the error [`check_occupancy`] gives the compiled kernel (inside the level's budgets the
/// registers allow the level, so the LDS is the limit).
fn check_lds_occupancy(sel: &Selected, opts: &CompileOptions) -> Result<(), CompileError> {
    let Some(w) = opts.occupancy else {
        return Ok(());
    };
    let occ = lds_occupancy(sel);
    if occ.waves_per_simd < w {
        return Err(CompileError::OccupancyUnreachable {
            occupancy: w,
            target: sel.target,
            reached: occ.waves_per_simd,
            limited_by: occ.limited_by.to_string(),
        });
    }
    Ok(())
}

/// The error of a kernel that does not reach the occupancy `opts` asks for.
fn check_occupancy(k: &CompiledKernel, opts: &CompileOptions) -> Result<(), CompileError> {
    match opts.occupancy {
        Some(w) if k.header.occupancy < w => Err(CompileError::OccupancyUnreachable {
            occupancy: w,
            target: k.target,
            reached: k.header.occupancy,
            limited_by: k.header.occupancy_limit.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Emits `p`: the kernel (its occupancy is not checked against `opts`: [`check_occupancy`]).
fn finish(
    p: &ToPhys,
    target: Target,
    mut t: StageTimings,
    start: Instant,
) -> Result<CompiledKernel, CompileError> {
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

//! Register allocation: [`MachineFunction`] on virtual registers → [`PhysFunction`] on gfx9
//! registers, with regalloc2 for the values that matter for occupancy, under a VGPR budget.
//!
//! # The tuple scheme
//!
//! regalloc2 has three register classes of at most 64 registers each and no aliasing, while GCN
//! has ~100 SGPRs, up to 512 VGPR+AGPR entries and aligned tuples everywhere. kjit splits the
//! vregs by shape:
//!
//! | vreg | allocated by | regalloc2 class | registers |
//! |---|---|---|---|
//! | 1 SGPR | regalloc2 | `Int` | ≤ 63 singles, placed by live intervals around the tuples ([`locs`]) |
//! | 1 VGPR | regalloc2 | `Float` | ≤ 64 singles (`v0`.. first; `v0`/`v0..v2` are the work-item ids) |
//! | 1 VGPR beyond `Float` | regalloc2 | `Vector` | in a function without pairs ([`overflow`]) |
//! | 2 VGPRs | regalloc2 | `Vector` | ≤ 64 even-aligned pairs (after the singles, or packed among them) |
//! | SGPR tuples, VGPR tuples of 3+ dwords, AGPRs | [`webs`] (here) | — | one aligned range per web |
//!
//! The regalloc2 `PReg` numbers are abstract: after allocation the used VGPR ones are laid out
//! densely (singles, then the pair range, then the tuple area) or packed by live intervals with
//! the tuple area among them ([`vgprs`]), whichever ends lower.
//! SGPR tuples (the kernarg pointer, buffer descriptors, exec masks, 64-bit uniform values) are
//! few, mostly long-lived and never spilled: vregs joined by tuple phis (copies at the end of
//! each predecessor after critical-edge splitting), ties (a copy of the tied use first) and
//! non-overlapping copies form a *web*, and each web gets one aligned register range (SGPR pairs
//! even, quads and wider ×4; VGPR/AGPR tuples even on gfx90a/gfx942) by first fit over live
//! intervals.
//!
//! # Budget and spills
//!
//! `vgpr_budget` (default: the whole file, 256 on gfx900 and 512 VGPR+AGPR on gfx90a/gfx942)
//! bounds the directly allocated singles and pairs handed to regalloc2. regalloc2's spill
//! slots are then placed, in this order, in spare VGPRs above the allocated range (`v_mov`),
//! in AGPRs (`v_accvgpr_write/read`, gfx90a/gfx942; the file is shared through
//! `accum_offset`, counted as `align4(vgprs) + agprs`), and in scratch memory
//! (gfx900/gfx90a: `buffer_store/load_dword` on the private segment buffer `s[0:3]` plus the
//! wave offset SGPR; gfx942: `scratch_store/load_dword` with architected flat scratch).
//! `Int` slots go to spare SGPRs. Single-VGPR operands are `Any` in regalloc2, so a value left in
//! a spare-VGPR slot is used in place (AGPR/scratch slots go through reserved temporaries), and
//! slots that are never live together share a location (`regalloc/slots.rs`).
//!
//! regalloc2 sees the blocks in reverse postorder (its checker needs predecessors first); the
//! output keeps the input's layout with split edges appended. Details: `docs/regalloc.md`.
//!
//! # ABI registers
//!
//! User SGPRs: the private segment buffer `s[0:3]` when scratch is used on gfx900/gfx90a, then
//! the kernarg segment pointer, then the preloaded kernarg dwords (`LiveIn(KernargPreload)`, one
//! tuple web placed right after the pointer); then the system SGPRs: enabled workgroup ids x, y, z, then the
//! private segment wave offset (scratch on gfx900/gfx90a). Work-item ids: `v0` packed on
//! gfx90a/gfx942, `v0`/`v1`/`v2` on gfx900. `LiveIn` pseudos become fixed-register defs.
//!
//! # EXEC, SCC, VCC
//!
//! Every move the allocator adds is `s_mov_b32/b64`, `v_mov_b32`, `v_accvgpr_*` or a
//! scratch/buffer access, none of which writes SCC or VCC. A VGPR/AGPR move, spill or reload
//! at a point where EXEC may be partial (a block marked `exec_partial`, or after an instruction
//! in the block that writes EXEC) is wrapped as `s_mov_b64 save, exec; s_mov_b64 exec, -1; …;
//! s_mov_b64 exec, save` with `save` a reserved SGPR pair, so it is whole-wave.

mod locs;
mod overflow;
mod prep;
mod ra2;
mod slots;
mod vgprs;
mod webs;

use std::collections::BTreeMap;

use cranelift_entity::EntityRef;
use regalloc2 as ra;
use regalloc2::{Allocation, Edit, InstPosition, MachineEnv, PReg, PRegSet, ProgPoint};

use crate::codeobj::descriptor::UserSgprs;
use crate::isa::{self, Inst, Opcode, Operand, SpecialReg};
use crate::mir::{AbiValue, MBlock, MOpcode, MOperand, MachineFunction, RegClass, Terminator};
use crate::phys::{PhysBlock, PhysFunction, PhysTerminator, RegUsage};
use crate::Target;

use prep::{kind_of, Kind, Prepared};
pub(crate) use prep::{liveness, BitSet, Liveness};

/// Options of [`allocate`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegallocOptions {
    /// Most VGPRs (plus AGPRs on gfx90a/gfx942) per lane the kernel may use; `None` = the
    /// whole register file.
    pub vgpr_budget: Option<u32>,
    /// Most SGPRs the code may name (without VCC/FLAT_SCRATCH/XNACK_MASK); `None` = all 102.
    /// SGPRs are never spilled: a kernel that needs more is an error.
    pub sgpr_budget: Option<u32>,
    /// Run regalloc2's checker on the result.
    pub run_checker: bool,
}

/// Why allocation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegallocError {
    /// The machine function breaks a MIR invariant.
    #[error("malformed machine function: {0}")]
    Malformed(String),
    /// A shape the allocator does not handle.
    #[error("unsupported by the register allocator: {0}")]
    Unsupported(String),
    /// The budget cannot hold what one instruction needs at once.
    #[error("VGPR budget {budget} is too small (at least {need} needed)")]
    BudgetTooSmall {
        /// The budget asked for.
        budget: u32,
        /// Registers needed.
        need: u32,
    },
    /// A register file ran out.
    #[error("out of {file}s (limit {limit})")]
    OutOfRegisters {
        /// Which file.
        file: &'static str,
        /// Its limit.
        limit: u32,
    },
    /// A VGPR budget below what the code keeps live made the allocator try a schedule bounded
    /// to fit it, and that schedule failed for another reason (its SGPR tuples, say): the
    /// budget is the cause, the other file only where it showed.
    #[error("VGPR budget {budget} is too small for this kernel: any order of its code keeps at least {floor} VGPRs live, and the order bounded to {bound} live VGPRs to fit the budget fails: {cause}")]
    VgprBudgetTooSmall {
        /// The budget asked for.
        budget: u32,
        /// The least VGPR pressure of any schedule (`schedule::vgpr_pressure_floor`).
        floor: u32,
        /// The VGPR bound of the schedule that failed.
        bound: u32,
        /// How it failed.
        cause: Box<RegallocError>,
    },
    /// regalloc2 refused the function.
    #[error("regalloc2: {0}")]
    Regalloc2(String),
    /// regalloc2's checker found an error in the allocation.
    #[error("regalloc2 checker: {0}")]
    Checker(String),
}

/// Where a spill slot lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotLoc {
    Sgpr(u16),
    Vgpr(u16),
    Agpr(u16),
    /// Byte offset in the lane's private segment.
    Scratch(u32),
}

const MAX_SGPRS: u16 = 102;

/// "No register" in the PReg → register tables below.
const NO_REG: u16 = u16::MAX;

/// The set bits of `mask`, ascending.
fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let b = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        Some(b)
    })
}

/// A set of SGPR numbers (all below [`MAX_SGPRS`]) as a bit mask.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct SgprSet(u128);

impl SgprSet {
    fn insert(&mut self, r: u16) {
        self.0 |= 1 << r;
    }
    fn contains(&self, r: u16) -> bool {
        self.0 >> r & 1 != 0
    }
    fn len(&self) -> u32 {
        self.0.count_ones()
    }
    /// One past the highest member (0 when empty).
    fn end(&self) -> u32 {
        128 - self.0.leading_zeros()
    }
}

thread_local! {
    /// regalloc2's working memory, kept between allocations on this thread: a fresh
    /// `regalloc2::Ctx` allocates its per-register tables, live-range and bundle arrays anew
    /// on every run, which was a large part of a small kernel's allocation time. The output
    /// does not depend on what the context held before (`regalloc2::run_with_ctx` resets it).
    static RA_CTX: std::cell::RefCell<Option<ra::Ctx>> = const { std::cell::RefCell::new(None) };
}

/// This thread's reusable regalloc2 context, given back to the thread when dropped (on every
/// return path of [`allocate`], errors included).
struct CtxGuard(Option<ra::Ctx>);

impl CtxGuard {
    fn take() -> CtxGuard {
        let ctx = RA_CTX
            .try_with(|c| c.try_borrow_mut().ok().and_then(|mut c| c.take()))
            .ok()
            .flatten();
        CtxGuard(ctx)
    }

    fn ctx(&mut self) -> &mut ra::Ctx {
        self.0.get_or_insert_with(ra::Ctx::default)
    }
}

impl Drop for CtxGuard {
    fn drop(&mut self) {
        if let Some(ctx) = self.0.take() {
            let _ = RA_CTX.try_with(|c| {
                if let Ok(mut c) = c.try_borrow_mut() {
                    *c = Some(ctx);
                }
            });
        }
    }
}

/// Allocates registers of `mf`.
pub fn allocate(
    mf: &MachineFunction,
    opts: &RegallocOptions,
) -> Result<PhysFunction, RegallocError> {
    Allocator::new(mf, opts.run_checker)?.allocate(opts.vgpr_budget, opts.sgpr_budget)
}

/// regalloc2's outcome for one count of `Float`/`Vector` registers.
type RaRun = std::sync::Arc<Result<ra::Output, ra::RegAllocError>>;

/// Single VGPRs regalloc2 holds in registers for `mf`, whatever their schedule: both 64-register
/// classes in a function without VGPR pairs (the singles beyond `Float` go to `Vector`,
/// [`overflow`]), `None` (no bound of that kind) where pairs take `Vector`. A schedule that
/// keeps more singles live makes regalloc2 spill the excess, and its eviction search over two
/// full classes is the costliest run it makes (hash_lanes' level-3 probe, bound 147).
pub fn two_class_singles(mf: &MachineFunction) -> Option<u32> {
    let has_pairs = mf
        .vregs
        .values()
        .any(|d| kind_of(d.class, d.dwords) == Kind::Pair);
    (!has_pairs).then_some(2 * 64)
}

/// The part of an allocation of one machine function that no VGPR budget changes:
/// preparation, liveness, the tuple webs and the SGPR probe layout, the regalloc2 view, and
/// every regalloc2 run made so far (by register counts; a run depends on nothing else). A
/// tuner allocating one schedule under every occupancy level builds it once
/// ([`Allocator::allocate`] per budget); [`allocate`] is one of each.
pub struct Allocator {
    /// What does not depend on the regalloc2 classes, shared with [`Allocator::one_class`].
    common: std::sync::Arc<Common>,
    shape: Shape,
    abi_n: u32,
    vweb_size: u32,
    run_checker: bool,
    /// Registers regalloc2 starts the search with (`Float`, `Vector`): one step above the
    /// pressure ([`search`]).
    start: (u32, u32),
    /// Most single-VGPR values live at once between instructions: no allocation that keeps
    /// them all in registers ends its VGPR layout lower.
    pres_f: u32,
    func: ra2::RaFunc,
    runs: crate::memo::Memo<(u32, u32, u32), RaRun>,
    /// The PRegs and slots each regalloc2 run used and its VGPR layout, by register counts.
    layouts: crate::memo::Memo<(u32, u32, u32), std::sync::Arc<Laid>>,
    /// The allocation without a VGPR budget by SGPR singles, where the unbudgeted search keeps
    /// every VGPR value in a register: every budget it fits allocates the same.
    in_registers: crate::memo::Memo<u32, Result<Allocated, RegallocError>>,
    /// Whether the singles were split over two classes ([`overflow`]): a budget that must keep
    /// values in memory is then allocated with every single in `Float`
    /// ([`Allocator::one_class`]), where regalloc2 chooses what to spill over all of them.
    split: bool,
    one_class: std::sync::OnceLock<Result<Box<Allocator>, RegallocError>>,
}

/// The part of an [`Allocator`] made before the singles are given regalloc2 classes: the
/// prepared function, its liveness, the tuple webs (VGPR and AGPR areas assigned) and the SGPR
/// probe layout. The one-class allocator of a function is made from its two-class parent's
/// (the class split changes none of it), not from the machine function again.
struct Common {
    p: Prepared,
    lv: prep::Liveness,
    w: webs::Webs,
    kernarg_vreg: Option<crate::mir::VReg>,
    probe: SgprLayout,
    probe_scratch: bool,
    vweb_size: u32,
    aweb_size: u32,
}

/// What [`Allocator::laid_out`] gives for one regalloc2 run: [`used_pregs`] and the
/// [`vgprs::layout`] of its output.
struct Laid {
    used: [u64; 3],
    slot_class: BTreeMap<usize, ra::RegClass>,
    /// [`slots::color`] of the run's slots (what `allocate` and [`slots_above`] share).
    color_of: BTreeMap<usize, usize>,
    layout: vgprs::VgprLayout,
    /// The layout with the spill slots among the PRegs' values, when every VGPR slot is a
    /// single, kept where it ends below `layout` with the slots' colors above it
    /// (`slots_end`); placed only when a budget may hold it ([`Laid::slots_within`]).
    with_slots: Option<vgprs::SlotLayout>,
    /// Where the slots' colors end above `layout` ([`slots_above`]).
    slots_end: u16,
}

impl Laid {
    /// The layout with the slots among the values, when there is one that ends at or below
    /// VGPR `cap` (`waves`: the occupancy of a layout's end).
    /// `a` and `out`: the allocator and the regalloc2 run this was laid out for.
    fn slots_within(
        &self,
        a: &Allocator,
        out: &ra::Output,
        cap: u32,
        waves: &dyn Fn(u32) -> u32,
    ) -> Option<&vgprs::VgprLayout> {
        self.with_slots
            .as_ref()
            .and_then(|w| w.within(a, out, cap, self.slots_end, waves))
    }
}

impl std::fmt::Debug for Allocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Allocator")
            .field("target", &self.shape.target)
            .field("start", &self.start)
            .finish_non_exhaustive()
    }
}

impl Allocator {
    /// Prepares `mf` for allocation under any budgets, with regalloc2's checker when
    /// `run_checker`.
    pub fn new(mf: &MachineFunction, run_checker: bool) -> Result<Allocator, RegallocError> {
        Self::with_classes(mf, run_checker, true)
    }

    /// [`Allocator::new`], with the singles beyond `Float` in `Vector` when `two_classes`
    /// allows and the function needs it.
    fn with_classes(
        mf: &MachineFunction,
        run_checker: bool,
        two_classes: bool,
    ) -> Result<Allocator, RegallocError> {
        let common = Self::common(mf)?;
        Self::from_common(std::sync::Arc::new(common), run_checker, two_classes)
    }

    /// The class-independent part of the allocator of `mf` ([`Common`]).
    fn common(mf: &MachineFunction) -> Result<Common, RegallocError> {
        prep::validate(mf)?;
        let target = mf.abi.target;
        let p = prep::prepare(mf);
        let lv = prep::liveness(&p.mf);

        // Tuple webs: VGPR/AGPR areas are independent of the SGPR layout.
        let kernarg_vreg = livein_vreg(&p, AbiValue::KernargPtr);
        // SGPR results in place of a dying source save registers and phi copies (loop masks),
        // but first fit over the changed intervals sometimes packs the SGPR tuples worse: the
        // webs are built both ways and the one whose SGPR tuples end lower is kept (in place
        // on a tie).
        let first_try = target != Target::Gfx942;
        let (late_live, early_live) = webs::live(&p, &lv);
        let joins = webs::joins(&p);
        let mut w = webs::build(&p, late_live, &joins, None)?;
        let mut early = webs::build(&p, early_live, &joins, None)?;
        // The SGPR layout of the tuples in the worst (scratch) case, which is what singles
        // get (the probe): a layout that does not fit counts as the worst; when neither fits,
        // the error is reported. The kept webs' layout is the probe (other classes' webs do
        // not change it).
        let layout = |w: &mut webs::Webs| match sgpr_layout(&p, w, kernarg_vreg, first_try) {
            Ok(l) => Ok((l, first_try)),
            Err(_) => sgpr_layout(&p, w, kernarg_vreg, false).map(|l| (l, false)),
        };
        let end = |l: &Result<(SgprLayout, bool), RegallocError>| {
            l.as_ref().map_or(u32::MAX, |(l, _)| l.taken.end())
        };
        let mut probe = layout(&mut w);
        let probe_early = layout(&mut early);
        if end(&probe_early) < end(&probe) {
            w = early;
            probe = probe_early;
        }
        let vweb = webs::assign(&mut w, RegClass::Vgpr, target, 256, &[])?;
        let aweb = webs::assign(&mut w, RegClass::Agpr, target, 256, &[])?;
        if !aweb.is_empty() && !target.has_agprs() {
            return Err(RegallocError::Unsupported(format!("AGPRs on {target}")));
        }
        let vweb_size = vweb.last().map(|x| x + 1).unwrap_or(0) as u32;
        let aweb_size = aweb.last().map(|x| x + 1).unwrap_or(0) as u32;
        let (probe, probe_scratch) = probe?;
        Ok(Common {
            p,
            lv,
            w,
            kernarg_vreg,
            probe,
            probe_scratch,
            vweb_size,
            aweb_size,
        })
    }

    /// The allocator over `common` with the singles beyond `Float` in `Vector` when
    /// `two_classes` allows and the function needs it.
    fn from_common(
        common: std::sync::Arc<Common>,
        run_checker: bool,
        two_classes: bool,
    ) -> Result<Allocator, RegallocError> {
        let (p, lv) = (&common.p, &common.lv);
        let target = p.mf.abi.target;
        let (vweb_size, aweb_size) = (common.vweb_size, common.aweb_size);

        // Budget split between regalloc2's Float singles and Vector pairs.
        let has_pairs =
            p.mf.vregs
                .values()
                .any(|d| kind_of(d.class, d.dwords) == Kind::Pair);
        let plain = ra2::classes(p, &[]);
        let (min_f, mut min_v, pres_f, mut pres_v) = demand(p, lv, &plain);
        let abi_n = abi_vgprs(p);
        // VGPRs that carry operands left in AGPR/scratch slots (one per single-VGPR operand).
        let n_temps = min_f.max(abi_n).max(1);
        // More singles live at once than `Float` has registers, and no pairs: the excess goes
        // to the `Vector` class, so that regalloc2 spills none of it.
        let second = if two_classes && !has_pairs && pres_f > 64 {
            overflow::partition(p, lv, pres_f)
        } else {
            Vec::new()
        };
        let (mut min_f, mut pres_first) = (min_f, pres_f);
        if second.contains(&true) {
            (min_f, min_v, pres_first, pres_v) = demand(p, lv, &ra2::classes(p, &second));
        }
        let min_f = min_f.max(abi_n).max(1);
        let func = ra2::build(p, &second);
        let has_v = has_pairs || func.vector_dwords == 1;
        let shape = Shape {
            target,
            vweb_size,
            aweb_size,
            min_f,
            min_v: if has_v { min_v.max(1) } else { 0 },
            pres_v,
            n_temps,
            vector_dwords: u32::from(func.vector_dwords),
        };

        // One growth step above the pressure ([`search`]).
        let start = (
            grown(pres_first.max(min_f)),
            if has_v {
                grown(pres_v.max(min_v.max(1)))
            } else {
                0
            },
        );
        Ok(Allocator {
            shape,
            abi_n,
            vweb_size,
            run_checker,
            start,
            pres_f,
            runs: Default::default(),
            layouts: Default::default(),
            in_registers: Default::default(),
            split: func.vector_dwords == 1,
            one_class: std::sync::OnceLock::new(),
            func,
            common,
        })
    }

    /// The allocator of the same function with every single VGPR in `Float` (itself when it
    /// is that already).
    fn one_class(&self) -> Result<&Allocator, RegallocError> {
        if !self.split {
            return Ok(self);
        }
        let a = self.one_class.get_or_init(|| {
            Self::from_common(self.common.clone(), self.run_checker, false).map(Box::new)
        });
        a.as_ref().map(|a| &**a).map_err(Clone::clone)
    }

    fn ra_opts(&self) -> ra::RegallocOptions {
        ra::RegallocOptions {
            verbose_log: false,
            validate_ssa: self.run_checker,
            algorithm: ra::Algorithm::Ion,
        }
    }

    /// regalloc2 with `n_int`/`n_f`/`n_v` registers, run once per count for all budgets.
    fn run(&self, n_int: u32, n_f: u32, n_v: u32) -> RaRun {
        self.runs.get_or_make((n_int, n_f, n_v), || {
            let env = machine_env(n_int as usize, n_f as usize, n_v as usize);
            let mut ctx = CtxGuard::take();
            let r = ra::run_with_ctx(&self.func, &env, &self.ra_opts(), ctx.ctx()).map(|_| ());
            std::sync::Arc::new(r.map(|()| std::mem::take(&mut ctx.ctx().output)))
        })
    }

    /// The used PRegs and VGPR layout of the run with `key`'s counts (output `out`), made once
    /// per run for all budgets.
    fn laid_out(&self, key: (u32, u32, u32), out: &ra::Output) -> std::sync::Arc<Laid> {
        self.layouts.get_or_make(key, || self.lay_out(out))
    }

    /// [`Allocator::laid_out`], uncached.
    fn lay_out(&self, out: &ra::Output) -> std::sync::Arc<Laid> {
        let (used, slot_class) = used_pregs(&self.func, out);
        let color_of = slots::color(&self.func, out, &slot_class);
        let layout = vgprs::layout(self, out, &used, &|top| self.waves(top));
        let single = |c: &ra::RegClass| self.func.single_vgpr(*c);
        let with_slots = if slot_class.values().any(single)
            && slot_class
                .values()
                .all(|c| single(c) || *c == ra::RegClass::Int)
        {
            let mut slots = vec![false; out.num_spillslots];
            for (&s, _) in slot_class.iter().filter(|e| single(e.1)) {
                slots[s] = true;
            }
            Some(vgprs::SlotLayout::new(&used, slots))
        } else {
            None
        };
        let slots_end = slots_above(&self.func, &slot_class, &color_of, layout.top);
        std::sync::Arc::new(Laid {
            used,
            slot_class,
            color_of,
            layout,
            with_slots,
            slots_end,
        })
    }

    /// Waves per SIMD of a VGPR layout ending at `top` (with the AGPR tuple area).
    fn waves(&self, top: u32) -> u32 {
        let target = self.shape.target;
        target.waves_per_simd_for_registers(self.shape.registers(top))
    }

    /// The SGPR singles regalloc2 gets under `sgpr_budget`: what the tuples leave in the
    /// probe layout ([`Allocator::allocate_with`]'s `n_int`: budgets with the same count
    /// allocate alike up to [`Allocated::within`]).
    pub(crate) fn int_registers(&self, sgpr_budget: Option<u32>) -> u32 {
        let sgpr_limit = sgpr_budget.map_or(MAX_SGPRS, |b| b.min(MAX_SGPRS as u32) as u16);
        let sgpr_free = (sgpr_limit as u32).saturating_sub(self.common.probe.taken.len() + 2);
        63.min(sgpr_free).max(3)
    }

    /// The unbudgeted search's run (regalloc2 counts and output) when it keeps every VGPR
    /// value in a register inside `budget`, which every such budget then allocates alike, and
    /// whether it has no VGPR spill slots (then nothing after the run depends on the budget:
    /// [`Allocator::allocate_with`]).
    fn unbudgeted(
        &self,
        n_int: u32,
        budget: u32,
    ) -> Result<Option<(u32, u32, RaRun, bool)>, RegallocError> {
        let shape = &self.shape;
        let target = shape.target;
        // A layout keeping every single-VGPR value in a register ends at or above the most of
        // them live at once: above the budget, the search cannot give an allocation that fits.
        let fits = |top: u32| top <= shape.vgpr_cap(budget) && shape.registers(top) <= budget;
        if !fits(self.pres_f) {
            return Ok(None);
        }
        let unbounded = shape.caps(target.register_file_per_lane())?;
        // Searched whenever that bound does not rule it out (its regalloc2 runs are kept for
        // every budget): only the packed layout (`vgprs`) tells whether it fits the budget.
        let (n_f, n_v, spilled, run) = search(self, n_int, self.start, &unbounded)?;
        if let Ok(out) = run.as_ref() {
            let laid = self.laid_out((n_int, n_f, n_v), out);
            let top = u32::from(laid.layout.top);
            if !spilled && fits(top) {
                return Ok(Some((n_f, n_v, run, true)));
            }
            // Slots in spare VGPRs are registers: when every slot is a VGPR one and they all
            // fit above the layout inside the budget (then no scratch temporaries are kept
            // free: see `allocate`), the allocation is the one without a budget too.
            if spilled
                && laid
                    .slot_class
                    .values()
                    .all(|&c| self.func.vgpr_dwords(c).is_some())
            {
                // A packing with the slots that ends above the cap cannot fit: the slots'
                // colors above the layout end higher still.
                let cap = shape.vgpr_cap(budget);
                let end = match laid.slots_within(self, out, cap, &|top| self.waves(top)) {
                    Some(l) => l.top,
                    None => laid.slots_end,
                };
                if fits(u32::from(end)) {
                    return Ok(Some((n_f, n_v, run, false)));
                }
            }
        }
        Ok(None)
    }

    /// Whether every VGPR packing of the regalloc2 run the search reaches under
    /// `vgpr_budget` (with its single-VGPR spill slots among the values too, when it has
    /// any) ends at or above the floor the layout stops its search at
    /// (`vgprs::Packing::floor`), and, where the packing's items hold every single-VGPR
    /// value (no spill, or the slots among them), that the floor is at least the most such
    /// values live at once; and that the run's layout ([`vgprs::layout`], dense or packed) ends
    /// at or above the floor without slots ([`vgprs::floor`]). For tests.
    #[doc(hidden)]
    pub fn packing_floor_holds(&self, vgpr_budget: Option<u32>) -> Result<bool, RegallocError> {
        let file = self.shape.target.register_file_per_lane();
        let caps = self.shape.caps(vgpr_budget.unwrap_or(file).min(file))?;
        let n_int = self.int_registers(None);
        let (_, _, _, run) = search(self, n_int, self.start, &caps)?;
        let Ok(out) = run.as_ref() else {
            return Ok(true);
        };
        let (used, slot_class) = used_pregs(&self.func, out);
        let mut slots = vec![false; out.num_spillslots];
        for (&s, c) in &slot_class {
            slots[s] = self.func.single_vgpr(*c);
        }
        // `loop_slack` compares a layout with another run's floor in place of its layout.
        let layout_top = self.lay_out(out).layout.top;
        Ok(vgprs::floor_holds(self, out, &used, &[])
            && vgprs::floor(self, out, &used) <= layout_top
            && (!slots.contains(&true) || vgprs::floor_holds(self, out, &used, &slots)))
    }

    /// Whether the allocation under `vgpr_budget` and `sgpr_budget` is the one without a
    /// VGPR budget: the unbudgeted search keeps every VGPR value in a register and fits
    /// inside the budget (nothing after the search then depends on the VGPR budget). A tuner
    /// reuses that allocation for every such budget.
    pub fn budget_free(
        &self,
        vgpr_budget: u32,
        sgpr_budget: Option<u32>,
    ) -> Result<bool, RegallocError> {
        let file = self.shape.target.register_file_per_lane();
        let n_int = self.int_registers(sgpr_budget);
        Ok(self.unbudgeted(n_int, vgpr_budget.min(file))?.is_some())
    }

    /// Allocates under `vgpr_budget` (`None`: the whole register file) and `sgpr_budget`
    /// (SGPRs are never spilled: more is an error).
    pub fn allocate(
        &self,
        vgpr_budget: Option<u32>,
        sgpr_budget: Option<u32>,
    ) -> Result<PhysFunction, RegallocError> {
        let p = self
            .allocate_with(vgpr_budget, self.int_registers(sgpr_budget))?
            .within(sgpr_budget)?;
        Ok(std::sync::Arc::try_unwrap(p).unwrap_or_else(|p| PhysFunction::clone(&p)))
    }

    /// [`Allocator::allocate`] with `n_int` SGPR singles for regalloc2, before the SGPR
    /// budget's check. Nothing else in an allocation depends on the SGPR budget (the SGPR
    /// layout places what regalloc2 gave; the budget only refuses an end above it), so a
    /// tuner allocating one schedule under the same VGPR budget for levels whose SGPR budgets
    /// leave regalloc2 the same count (hash_lanes_wide's level 8 and the ladder below level
    /// 7, both at budget 64) makes it once.
    pub fn allocate_with(
        &self,
        vgpr_budget: Option<u32>,
        n_int: u32,
    ) -> Result<Allocated, RegallocError> {
        let target = self.shape.target;
        let file = target.register_file_per_lane();
        let budget = vgpr_budget.unwrap_or(file).min(file);
        let shape = &self.shape;
        let vgpr_cap = shape.vgpr_cap(budget);
        let (abi_n, aweb_size, n_temps) = (self.abi_n, shape.aweb_size, shape.n_temps);
        let func = &self.func;
        // regalloc2 spreads values over every register it is given, so it gets the fewest
        // that avoid spills (see `search`): first as if there were no budget, so that a
        // kernel that fits in R registers gets the same allocation under every budget >= R;
        // only when that does not fit, the search is repeated inside the budget's caps.
        let found = self.unbudgeted(n_int, budget)?;
        let (n_f, n_v, run) = match found {
            // No VGPR value in a slot: the budget only bounds the layout, which fits it (no
            // slot goes among or above the values, no temporaries are kept), so this is the
            // allocation without a budget, made once for every budget the run fits
            // (hash_lanes_wide's bound-112 schedule under the default compile's levels 3
            // and 4).
            Some((_, _, _, true)) if vgpr_budget.is_some() => {
                return self
                    .in_registers
                    .get_or_make(n_int, || self.allocate_with(None, n_int));
            }
            Some((n_f, n_v, run, _)) => (n_f, n_v, run),
            // Values must stay in memory: regalloc2 chooses them over all singles in one class.
            None if self.split => return self.one_class()?.allocate_with(vgpr_budget, n_int),
            None => {
                let caps = shape.caps(budget)?;
                let (n_f, n_v, _, run) = search(self, n_int, self.start, &caps)?;
                (n_f, n_v, run)
            }
        };
        let out = match run.as_ref() {
            Ok(out) => out,
            Err(e) => return Err(RegallocError::Regalloc2(e.to_string())),
        };
        let (p, common) = (&self.common.p, &*self.common);
        let env = machine_env(n_int as usize, n_f as usize, n_v as usize);
        if self.run_checker {
            let mut checker = ra::checker::Checker::new(func, &env);
            checker.prepare(out);
            checker
                .run()
                .map_err(|e| RegallocError::Checker(format!("{e:?}")))?;
        }

        // Which PRegs and slots were used, and the VGPR layout: ABI singles, singles, pairs,
        // tuple area (spare-VGPR slots go above).
        let laid = self.laid_out((n_int, n_f, n_v), out);
        // The slots go among the PRegs' values when all of them fit there.
        let packed_slots = laid.slots_within(self, out, vgpr_cap, &|top| self.waves(top));
        let Laid {
            used,
            ref slot_class,
            ref color_of,
            ..
        } = *laid;
        let vgprs::VgprLayout {
            ref alloc_vgpr,
            ref edit_vgpr,
            vweb_base,
            top,
            ref slot_vgpr,
        } = *packed_slots.unwrap_or(&laid.layout);
        let (alloc_vgpr, edit_vgpr) = (alloc_vgpr.clone(), edit_vgpr.clone());
        let mut top = top;
        if top as u32 > vgpr_cap {
            return Err(RegallocError::BudgetTooSmall {
                budget,
                need: top as u32,
            });
        }
        // Slots.
        // Slots never live together share a location: locations are per color.
        let packed = |s: &usize| slot_vgpr.get(*s).is_some_and(|&v| v != NO_REG);
        let color_class: BTreeMap<usize, ra::RegClass> = slot_class
            .iter()
            .filter(|(s, _)| !packed(s))
            .map(|(s, c)| (color_of[s], *c))
            .collect();
        // Indexed by color (colors are numbered below the number of slots).
        let mut slot_loc: Vec<Option<SlotLoc>> = vec![None; out.num_spillslots];
        let mut scratch_bytes = 0u32;
        let mut sgpr_slots: Vec<usize> = Vec::new();
        let vec_slots: Vec<(usize, u16)> = color_class
            .iter()
            .filter_map(|(&s, &c)| {
                let dw = func.vgpr_dwords(c);
                if dw.is_none() {
                    sgpr_slots.push(s);
                }
                dw.map(|dw| (s, dw))
            })
            .collect();
        let mut pending: Vec<(usize, u16)> = Vec::new();
        // Room for the scratch temporaries is kept only when some slot cannot be a VGPR.
        let all_end = vec_slots
            .iter()
            .fold(top, |t, &(_, dw)| t.next_multiple_of(dw) + dw);
        let keep = if all_end as u32 <= vgpr_cap {
            0
        } else {
            n_temps
        };
        for &(s, dw) in &vec_slots {
            let base = top.next_multiple_of(dw);
            if (base + dw) as u32 + keep <= vgpr_cap {
                slot_loc[s] = Some(SlotLoc::Vgpr(base));
                top = base + dw;
            } else {
                pending.push((s, dw));
            }
        }
        let temp_base = top;
        let temps = if pending.iter().any(|&(_, dw)| dw == 1) {
            n_temps as u16
        } else {
            0
        };
        top += temps;
        let vgprs = top as u32;
        let mut atop = aweb_size as u16;
        if target.has_agprs() {
            let agpr_cap = 256.min(budget.saturating_sub(vgprs.div_ceil(4) * 4)) as u16;
            let mut rest = Vec::new();
            for (s, dw) in pending {
                let base = atop.next_multiple_of(dw);
                if base + dw <= agpr_cap {
                    slot_loc[s] = Some(SlotLoc::Agpr(base));
                    atop = base + dw;
                } else {
                    rest.push((s, dw));
                }
            }
            pending = rest;
        }
        for (s, dw) in pending {
            slot_loc[s] = Some(SlotLoc::Scratch(scratch_bytes));
            scratch_bytes += 4 * dw as u32;
        }
        let scratch = scratch_bytes > 0;
        if scratch_bytes > 4096 {
            // MUBUF offsets have 12 bits, scratch_* 13 signed bits; beyond that a base register
            // adjustment would be needed.
            return Err(RegallocError::Unsupported(format!(
                "{scratch_bytes} bytes of spill slots per lane (at most 4096)"
            )));
        }
        if aweb_size + vgprs.div_ceil(4) * 4 > budget && aweb_size > 0 {
            return Err(RegallocError::BudgetTooSmall {
                budget,
                need: aweb_size + vgprs.div_ceil(4) * 4,
            });
        }

        // SGPR layout for the real scratch decision.
        let uses_scratch_abi = scratch && target != Target::Gfx942;
        // The layout is a function of the SGPR webs and the scratch flag only, and the probe's
        // assignment is still in `w`: reuse it when the flag is the same (always on gfx942).
        let mut relaid;
        let (lay, w) = if uses_scratch_abi == common.probe_scratch {
            (common.probe.clone(), &common.w)
        } else {
            relaid = common.w.clone();
            let lay = sgpr_layout(p, &mut relaid, common.kernarg_vreg, uses_scratch_abi)?;
            (lay, &relaid)
        };
        let mut taken = lay.taken;
        let mut int_map = [NO_REG; 64];
        for &(d, pos) in &lay.wg_fixed {
            if livein_vreg(p, AbiValue::WorkgroupId(d)).is_some() {
                int_map[ra2::wg_preg(d).hw_enc()] = pos;
            }
        }
        // Singles share SGPRs with tuple webs and with each other where their live intervals
        // do not overlap (first fit, in order of first position).
        let ivs = int_intervals(p, func, out);
        let fixed_map = int_map;
        let (mut single_regs, mut copies) = place_singles(
            p,
            func,
            out,
            w,
            used[ra::RegClass::Int as usize],
            &mut int_map,
            &lay.blocked,
            &ivs,
        )?;
        // Tuples placed before the singles were known, lowered where that ends the SGPRs lower.
        let lowered;
        let mut moved = false;
        let w = match lower_sgpr_webs(
            p,
            func,
            out,
            w,
            used[ra::RegClass::Int as usize],
            &fixed_map,
            &lay,
            &ivs,
            (&single_regs, copies),
        )? {
            Some((lw, map, regs, c)) => {
                lowered = lw;
                int_map = map;
                single_regs = regs;
                copies = c;
                moved = true;
                &lowered
            }
            None => w,
        };
        // Tuples moved off the SGPRs the singles' copies name, where that saves copies.
        let freed;
        let w = match free_hinted_sgprs(
            p,
            func,
            out,
            w,
            used[ra::RegClass::Int as usize],
            &fixed_map,
            &lay,
            &ivs,
            (&int_map, &single_regs, copies),
        )? {
            Some((fw, map, regs)) => {
                freed = fw;
                int_map = map;
                single_regs = regs;
                moved = true;
                &freed
            }
            None => w,
        };
        if moved {
            taken = lay.blocked;
            for r in web_sgprs(w) {
                taken.insert(r);
            }
        }
        for r in single_regs {
            taken.insert(r);
        }
        let before = taken;
        let mut free = (0..MAX_SGPRS).filter(move |&x| !before.contains(x));
        for &s in &sgpr_slots {
            let r = free.next().ok_or(RegallocError::OutOfRegisters {
                file: "SGPR",
                limit: MAX_SGPRS as u32,
            })?;
            slot_loc[s] = Some(SlotLoc::Sgpr(r));
            taken.insert(r);
        }
        let mut by_slot: Vec<Option<SlotLoc>> = vec![None; out.num_spillslots];
        for (&s, &k) in color_of {
            by_slot[s] = if packed(&s) {
                Some(SlotLoc::Vgpr(slot_vgpr[s]))
            } else {
                slot_loc[k]
            };
        }
        let slot_loc = by_slot;

        let ctx = Ctx {
            p,
            target,
            w,
            func,
            out,
            int_map,
            alloc_vgpr,
            edit_vgpr,
            vweb_base,
            web_ix: {
                let mut ix = vec![u32::MAX; p.mf.vregs.len()];
                for (v, &i) in &w.web_of {
                    ix[v.index()] = i as u32;
                }
                ix
            },
            slot_loc,
            private_seg: if uses_scratch_abi { Some(0) } else { None },
            wave_offset: lay.wave_offset,
            exec_save: None,
            temp_base,
            temps,
        };
        // Whether any whole-wave wrap is needed decides the exec save pair.
        let mut ctx = ctx;
        let needs_save = ctx.needs_exec_save();
        if needs_save {
            let mut r = 0u16;
            while r + 1 < MAX_SGPRS && (taken.contains(r) || taken.contains(r + 1)) {
                r += 2;
            }
            if r + 1 >= MAX_SGPRS {
                return Err(RegallocError::OutOfRegisters {
                    file: "SGPR",
                    limit: MAX_SGPRS as u32,
                });
            }
            taken.insert(r);
            taken.insert(r + 1);
            ctx.exec_save = Some(r);
        }
        let sgprs = taken.end();
        let code = (|| {
            let count = |want: fn(&SlotLoc) -> bool| {
                ctx.slot_loc.iter().flatten().filter(|l| want(l)).count() as u32
            };
            let mut usage = RegUsage {
                sgprs,
                vgprs: vgprs.max(abi_n),
                agprs: atop as u32,
                scratch_bytes,
                spills_to_sgprs: count(|l| matches!(l, SlotLoc::Sgpr(_))),
                spills_to_vgprs: count(|l| matches!(l, SlotLoc::Vgpr(_))),
                spills_to_agprs: count(|l| matches!(l, SlotLoc::Agpr(_))),
                spills_to_scratch: count(|l| matches!(l, SlotLoc::Scratch(_))),
                spill_insts: 0,
                moves: 0,
            };
            let blocks = ctx.emit(&mut usage)?;
            let mut abi = p.mf.abi.clone();
            for d in 0..3u8 {
                if livein_vreg(p, AbiValue::WorkgroupId(d)).is_some() {
                    abi.workgroup_ids[d as usize] = true;
                }
                if livein_vreg(p, AbiValue::WorkitemId(d)).is_some() {
                    abi.workitem_dims = abi.workitem_dims.max(d + 1);
                }
            }
            Ok(PhysFunction {
                abi,
                user_sgprs: UserSgprs {
                    private_segment_buffer: uses_scratch_abi,
                    kernarg_segment_ptr: true,
                    kernarg_preload: livein_vreg(p, AbiValue::KernargPreload)
                        .map_or(0, |v| p.mf.vregs[v].dwords as u32),
                    ..UserSgprs::default()
                },
                scratch_wave_offset_sgpr: lay.wave_offset,
                blocks,
                usage,
            })
        })();
        Ok(Allocated {
            sgprs,
            code: code.map(std::sync::Arc::new),
        })
    }
}

/// An allocation made before the SGPR budget's check ([`Allocator::allocate_with`]): the SGPRs
/// its layout ends at, and the code (or the error) that follows.
#[derive(Clone, Debug)]
pub struct Allocated {
    sgprs: u32,
    code: Result<std::sync::Arc<PhysFunction>, RegallocError>,
}

impl Allocated {
    /// The allocation under `sgpr_budget`: an error when its SGPRs end above the budget (as
    /// [`Allocator::allocate`] refuses it before emitting the code), else the code.
    pub fn within(
        &self,
        sgpr_budget: Option<u32>,
    ) -> Result<std::sync::Arc<PhysFunction>, RegallocError> {
        match sgpr_budget {
            Some(limit) if self.sgprs > limit => Err(RegallocError::OutOfRegisters {
                file: "SGPR",
                limit,
            }),
            _ => self.code.clone(),
        }
    }
}

/// PRegs used per class (`PReg::hw_enc` is below 64: one bit mask per class), and the class
/// of every spill slot regalloc2 used.
fn used_pregs(func: &ra2::RaFunc, out: &ra::Output) -> ([u64; 3], BTreeMap<usize, ra::RegClass>) {
    let mut used = [0u64; 3];
    let mut slot_class: BTreeMap<usize, ra::RegClass> = BTreeMap::new();
    for a in &out.allocs {
        if let Some(r) = a.as_reg() {
            used[r.class() as usize] |= 1 << r.hw_enc();
        }
    }
    if out.num_spillslots > 0 {
        for i in 0..ra::Function::num_insts(func) {
            let allocs = out.inst_allocs(ra::Inst::new(i));
            for (op, a) in func.ops.get(i).iter().zip(allocs) {
                if let Some(s) = a.as_stack() {
                    slot_class.insert(s.index(), op.class());
                }
            }
        }
    }
    for (_, Edit::Move { from, to }) in &out.edits {
        for r in [from.as_reg(), to.as_reg()].into_iter().flatten() {
            used[r.class() as usize] |= 1 << r.hw_enc();
        }
        let reg = from.as_reg().or(to.as_reg());
        if let Some(r) = reg {
            for s in [from.as_stack(), to.as_stack()].into_iter().flatten() {
                slot_class.insert(s.index(), r.class());
            }
        }
    }
    (used, slot_class)
}

/// What the budget split depends on besides the budget.
struct Shape {
    target: Target,
    /// Registers of the VGPR / AGPR tuple areas.
    vweb_size: u32,
    aweb_size: u32,
    /// Most single-VGPR / VGPR-pair operands of one instruction (`min_v` 0: no pairs).
    min_f: u32,
    min_v: u32,
    /// Most pairs live at once.
    pres_v: u32,
    /// VGPRs reserved to carry operands left in AGPR/scratch slots.
    n_temps: u32,
    /// VGPRs of a `Vector` register ([`ra2::RaFunc::vector_dwords`]).
    vector_dwords: u32,
}

/// The most registers regalloc2 may get under one budget.
struct Caps {
    n_f: u32,
    n_v: u32,
}

impl Shape {
    /// The largest `Float`/`Vector` register counts under `budget`, leaving room for the tuple
    /// area and the spill temporaries; an error when not even one instruction's operands fit.
    fn caps(&self, budget: u32) -> Result<Caps, RegallocError> {
        let vgpr_cap = self.vgpr_cap(budget);
        let vweb = self.vweb_size;
        let avail = vgpr_cap.saturating_sub(vweb.div_ceil(4) * 4 + if vweb > 0 { 3 } else { 0 });
        let has_v = self.min_v > 0;
        // `Vector` values live across an instruction plus those it defines early: the most a
        // spill-free allocation of the class can need. Pairs are even-aligned after the
        // singles (one register of padding).
        let (w, pad) = (self.vector_dwords, u32::from(self.vector_dwords == 2));
        let mut n_v = if has_v {
            (self.pres_v + self.min_v).clamp(self.min_v, 64)
        } else {
            0
        };
        n_v = n_v.min(avail.saturating_sub(self.min_f + self.n_temps + pad) / w);
        if has_v && n_v < self.min_v {
            return Err(RegallocError::BudgetTooSmall {
                budget,
                need: self.need(),
            });
        }
        let n_f = 64.min(avail.saturating_sub(w * n_v + u32::from(n_v > 0) * pad + self.n_temps));
        if n_f < self.min_f {
            return Err(RegallocError::BudgetTooSmall {
                budget,
                need: self.need(),
            });
        }
        Ok(Caps { n_f, n_v })
    }

    /// Architectural VGPRs a layout may reach under `budget` (the AGPR tuple area shares it).
    fn vgpr_cap(&self, budget: u32) -> u32 {
        if self.target.has_agprs() {
            256.min(budget.saturating_sub(self.aweb_size))
        } else {
            256.min(budget)
        }
    }

    /// The smallest budget [`Shape::caps`] accepts: one instruction's operands, the spill
    /// temporaries and the tuple areas.
    fn need(&self) -> u32 {
        let vweb = self.vweb_size;
        let web_area = vweb.div_ceil(4) * 4 + if vweb > 0 { 3 } else { 0 };
        let pairs = if self.min_v > 0 {
            self.vector_dwords * self.min_v + u32::from(self.vector_dwords == 2)
        } else {
            0
        };
        let agprs = if self.target.has_agprs() {
            self.aweb_size
        } else {
            0
        };
        web_area + self.min_f + self.n_temps + pairs + agprs
    }

    /// Registers (VGPRs, plus AGPRs on a unified file) a layout reaching VGPR `top` takes.
    fn registers(&self, top: u32) -> u32 {
        if self.target.has_agprs() && self.aweb_size > 0 {
            top.div_ceil(4) * 4 + self.aweb_size
        } else {
            top
        }
    }
}

/// Runs regalloc2 with `start` `Float`/`Vector` registers, growing a class by a quarter while
/// it spills and `caps` allow. regalloc2 spreads values over all the registers it is given
/// (its probe starts at a different register per bundle), so the fewest registers that avoid
/// spills are also the fewest the kernel ends up using. The sequence of tries depends on
/// `start` only, truncated by the caps; each try is [`Allocator::run`] (made once per count).
/// Returns the counts of the last try, whether it spilled a VGPR value, and its output.
///
/// `start` ([`Allocator::new`]) is one step ([`grown`]) above the pressure, not the pressure:
/// with exactly as many registers as values live at once, regalloc2 keeps them all only when
/// its greedy choice colours every live range with one register, and values carried around a
/// loop (arcs on a circle), fixed to a register or live through an instruction's early defs
/// can need more. In the library's default compiles (gfx942, gfx900) the run at the pressure
/// spilled for seed_2d, softmax, matmul, matmul_pipelined, stencil_pipelined, attention, gemm
/// and every latency schedule of the hash kernels, so the search ran regalloc2 again, and a
/// spilling run is its costliest (eviction work). A register given and not needed costs no
/// VGPR: the layout places the PRegs' values by their live intervals ([`vgprs`]), so where
/// the run at the pressure kept every value in a register (vector_add, reduce_sum, hash_lanes'
/// bound-44 schedule) the run a step above has the same code unless regalloc2 moves a value it
/// did not move there (`docs/regalloc.md`, "How many registers regalloc2 gets").
fn search(
    a: &Allocator,
    n_int: u32,
    start: (u32, u32),
    caps: &Caps,
) -> Result<(u32, u32, bool, RaRun), RegallocError> {
    let (mut n_f, mut n_v) = (start.0.min(caps.n_f), start.1.min(caps.n_v));
    loop {
        let run = a.run(n_int, n_f, n_v);
        let can_grow = n_f < caps.n_f || n_v < caps.n_v;
        let (spill_f, spill_v) = match run.as_ref() {
            // Values live through an instruction plus its operands can exceed the pressure
            // between instructions: more registers, as for a spill.
            Err(ra::RegAllocError::TooManyLiveRegs) if can_grow => (n_f < caps.n_f, n_v < caps.n_v),
            Err(e) => return Err(RegallocError::Regalloc2(e.to_string())),
            Ok(out) if out.num_spillslots == 0 => (false, false),
            Ok(out) => {
                let (_, slots) = used_pregs(&a.func, out);
                (
                    slots.values().any(|&c| c == ra::RegClass::Float),
                    slots.values().any(|&c| c == ra::RegClass::Vector),
                )
            }
        };
        let grow_f = spill_f && n_f < caps.n_f;
        let grow_v = spill_v && n_v < caps.n_v;
        if !grow_f && !grow_v {
            if spill_f || spill_v {
                return Ok((n_f, n_v, true, run));
            }
            let (n_f, n_v, run) = loop_slack(a, n_int, (n_f, n_v), caps, run);
            return Ok((n_f, n_v, false, run));
        }
        if grow_f {
            n_f = grown(n_f).min(caps.n_f);
        }
        if grow_v {
            n_v = grown(n_v).min(caps.n_v);
        }
    }
}

/// [`search`]'s next count for a class that spilled with `n` registers: a quarter more.
fn grown(n: u32) -> u32 {
    n + n / 4 + 1
}

/// Most registers [`loop_slack`] adds to a class.
const LOOP_SLACK: u32 = 2;

/// A spill-free run at `counts` (`run`), or one with up to [`LOOP_SLACK`] registers more in
/// a class whose values regalloc2 moved between registers inside loops, when that one moves
/// fewer there, spills nothing and its VGPR layout ends no higher. A loop's live ranges are
/// arcs on a circle (a value carried across the back edge is live at both ends of the body):
/// colouring them can need one register more than the most that overlap, and with exactly that
/// many regalloc2 splits a carried value and moves it at the back edge, where the move may wait
/// for a load issued in the same iteration (the gemm's prefetched a-fragments:
/// docs/mfma-gemm.md). The layout places PRegs by live intervals, so a spare one costs no
/// VGPR unless it is used.
///
/// One register was not always enough: regalloc2 starts each bundle's register scan at its
/// first instruction's index plus its bundle index, so removing a few entry-block scalar
/// instructions (32-bit buffer descriptors, issue 15) changed which registers the gemm's
/// carried pairs found free and left 24 moves in its loop at +1 pair; at +2 it has none.
fn loop_slack(
    a: &Allocator,
    n_int: u32,
    (n_f, n_v): (u32, u32),
    caps: &Caps,
    run: RaRun,
) -> (u32, u32, RaRun) {
    let Ok(out) = run.as_ref() else {
        return (n_f, n_v, run);
    };
    if out.edits.is_empty() {
        return (n_f, n_v, run);
    }
    let blocks = a.func.in_loop();
    let mut in_loop = vec![false; ra::Function::num_insts(&a.func)];
    for (b, &(s, e)) in a.func.ranges.iter().enumerate() {
        in_loop[s as usize..e as usize].fill(blocks[b]);
    }
    let moves = |out: &ra::Output| loop_moves(out, &in_loop);
    let top = |(f, v): (u32, u32), out: &ra::Output| a.laid_out((n_int, f, v), out).layout.top;
    // Whether a layout ending at `t` ends no higher than the run with `(f, v)` registers
    // (output `out`). No layout of that run ends below its floor ([`vgprs::floor`]), so `t` at
    // or below the floor answers yes without laying the run out (its layout is needed only
    // when it stays the best: gemm's search run (52, 14) loses to (52, 16), both at 123
    // VGPRs, its floor; the layout was a tenth of the compile). Otherwise, or when the run's
    // layout was made already, its layout tells.
    let no_higher = |t: u16, (f, v): (u32, u32), out: &ra::Output| {
        let key = (n_int, f, v);
        if let Some(laid) = a.layouts.made_value(&key) {
            return t <= laid.layout.top;
        }
        let (used, _) = used_pregs(&a.func, out);
        t <= vgprs::floor(a, out, &used) || t <= top((f, v), out)
    };
    // Each class in turn, on top of the best run so far; a register more at a time while the
    // class still moves values inside loops.
    let mut best = ((n_f, n_v), run);
    for (class, more) in (0..2).flat_map(|c| (1..=LOOP_SLACK).map(move |k| (c, k))) {
        let Ok(out) = best.1.as_ref() else { break };
        let (f, v) = best.0;
        // `more` registers above the class's count before its first try.
        let wider = if class == 0 {
            (n_f + more, v)
        } else {
            (f, n_v + more)
        };
        if moves(out)[class] == 0 || wider.0 > caps.n_f || wider.1 > caps.n_v {
            continue;
        }
        let tried = a.run(n_int, wider.0, wider.1);
        let better = tried.as_ref().as_ref().is_ok_and(|o| {
            o.num_spillslots == 0
                && moves(o)[class] < moves(out)[class]
                && no_higher(top(wider, o), best.0, out)
        });
        if better {
            best = (wider, tried);
        }
    }
    (best.0 .0, best.0 .1, best.1)
}

/// regalloc2's register-to-register moves inside loop instructions (`in_loop`), per class
/// (`Float`, `Vector`).
fn loop_moves(out: &ra::Output, in_loop: &[bool]) -> [usize; 2] {
    let mut n = [0; 2];
    for (at, Edit::Move { from, to }) in &out.edits {
        let (Some(f), Some(_)) = (from.as_reg(), to.as_reg()) else {
            continue;
        };
        if !in_loop.get(at.inst().index()).copied().unwrap_or(false) {
            continue;
        }
        match f.class() {
            ra::RegClass::Float => n[0] += 1,
            ra::RegClass::Vector => n[1] += 1,
            ra::RegClass::Int => {}
        }
    }
    n
}

/// Where the spill slots' colors end when each takes spare VGPRs above VGPR `top`.
fn slots_above(
    func: &ra2::RaFunc,
    slot_class: &BTreeMap<usize, ra::RegClass>,
    color_of: &BTreeMap<usize, usize>,
    top: u16,
) -> u16 {
    let colors: BTreeMap<usize, ra::RegClass> =
        slot_class.iter().map(|(s, c)| (color_of[s], *c)).collect();
    let mut end = top;
    for dw in colors.values().filter_map(|&c| func.vgpr_dwords(c)) {
        end = end.next_multiple_of(dw) + dw;
    }
    end
}

fn livein_vreg(p: &Prepared, a: AbiValue) -> Option<crate::mir::VReg> {
    p.mf.blocks[p.mf.entry()]
        .insts
        .iter()
        .find(|i| i.opcode == MOpcode::LiveIn(a))
        .and_then(|i| i.defs().next())
}

/// VGPRs the ABI initialises that the kernel reads (work-item ids).
fn abi_vgprs(p: &Prepared) -> u32 {
    (0..3u8)
        .filter(|&d| livein_vreg(p, AbiValue::WorkitemId(d)).is_some())
        .map(|d| ra2::wi_preg(p.mf.abi.target, d).hw_enc() as u32 + 1)
        .max()
        .unwrap_or(0)
}

/// (most `Float` operands of one instruction, most `Vector` operands, `Float` pressure,
/// `Vector` pressure) with the vregs in regalloc2 classes `classes`.
fn demand(
    p: &Prepared,
    lv: &prep::Liveness,
    classes: &[Option<ra::RegClass>],
) -> (u32, u32, u32, u32) {
    let mf = &p.mf;
    let (mut mf1, mut mv1, mut pf, mut pv) = (0u32, 0u32, 0u32, 0u32);
    // Float/Pair counts of the live set are kept up to date as vregs enter and leave it
    // instead of recounting the whole set after every instruction.
    let bump = |k: Option<ra::RegClass>, f: &mut u32, v: &mut u32, up: bool| {
        let c = match k {
            Some(ra::RegClass::Float) => f,
            Some(ra::RegClass::Vector) => v,
            _ => return,
        };
        if up {
            *c += 1;
        } else {
            *c -= 1;
        }
    };
    let mut live = prep::BitSet::new(mf.vregs.len());
    let mut seen: smallvec::SmallVec<[crate::mir::VReg; 8]> = smallvec::SmallVec::new();
    for (b, bd) in mf.blocks.iter() {
        live.clone_from(&lv.live_out[b.index()]);
        for (_, args) in bd.term.successors() {
            for a in args {
                live.insert(a.index());
            }
        }
        let (mut lf, mut lvv) = (0u32, 0u32);
        for x in live.iter() {
            bump(classes[x], &mut lf, &mut lvv, true);
        }
        for inst in bd.insts.iter().rev() {
            let (mut f, mut v) = (0, 0);
            seen.clear();
            for o in &inst.ops {
                if let MOperand::Def(x) | MOperand::Use(x) = o {
                    if seen.contains(x) {
                        continue;
                    }
                    seen.push(*x);
                    match classes[x.index()] {
                        Some(ra::RegClass::Float) => f += 1,
                        Some(ra::RegClass::Vector) => v += 1,
                        _ => {}
                    }
                }
            }
            mf1 = mf1.max(f);
            mv1 = mv1.max(v);
            for d in inst.defs() {
                if live.remove_old(d.index()) {
                    bump(classes[d.index()], &mut lf, &mut lvv, false);
                }
            }
            for u in inst.uses() {
                if live.insert_new(u.index()) {
                    bump(classes[u.index()], &mut lf, &mut lvv, true);
                }
            }
            pf = pf.max(lf);
            pv = pv.max(lvv);
        }
    }
    (mf1, mv1, pf, pv)
}

fn machine_env(n_int: usize, n_f: usize, n_v: usize) -> MachineEnv {
    let set = |n: usize, c: ra::RegClass| {
        let mut s = PRegSet::empty();
        for i in 0..n {
            s.add(PReg::new(i, c));
        }
        s
    };
    MachineEnv {
        preferred_regs_by_class: [
            set(n_int, ra::RegClass::Int),
            set(n_f, ra::RegClass::Float),
            set(n_v, ra::RegClass::Vector),
        ],
        non_preferred_regs_by_class: [PRegSet::empty(); 3],
        scratch_by_class: [None; 3],
        fixed_stack_slots: Vec::new(),
    }
}

#[derive(Clone)]
struct SgprLayout {
    /// SGPRs not available to singles: tuple webs, user/system SGPRs that are reserved.
    taken: SgprSet,
    /// The user/system SGPRs reserved for the ABI (a subset of `taken`).
    blocked: SgprSet,
    /// (workgroup dimension, system SGPR).
    wg_fixed: Vec<(u8, u16)>,
    wave_offset: Option<u16>,
}

fn sgpr_layout(
    p: &Prepared,
    w: &mut webs::Webs,
    kernarg: Option<crate::mir::VReg>,
    scratch: bool,
) -> Result<SgprLayout, RegallocError> {
    let abi = &p.mf.abi;
    let mut blocked: Vec<u16> = Vec::new();
    let kernarg_at: u16 = if scratch { 4 } else { 0 };
    if scratch {
        blocked.extend(0..4);
    }
    let mut pos = kernarg_at + 2;
    // Preloaded kernarg dwords follow the pointer (their tuple web is placed there).
    let preload = livein_vreg(p, AbiValue::KernargPreload);
    if let Some(v) = preload {
        pos += p.mf.vregs[v].dwords as u16;
    }
    let mut wg_fixed = Vec::new();
    for d in 0..3u8 {
        if abi.workgroup_ids[d as usize] || livein_vreg(p, AbiValue::WorkgroupId(d)).is_some() {
            wg_fixed.push((d, pos));
            blocked.push(pos);
            pos += 1;
        }
    }
    let wave_offset = if scratch {
        blocked.push(pos);
        Some(pos)
    } else {
        None
    };
    for r in w.webs.iter_mut().filter(|r| r.class == RegClass::Sgpr) {
        r.reg = None;
        r.precolor = None;
    }
    if let Some(v) = preload {
        let root = w.web_of[&v];
        w.webs[root].precolor = Some(kernarg_at + 2);
    }
    if let Some(k) = kernarg {
        let root = w.web_of[&k];
        w.webs[root].precolor = Some(kernarg_at);
    } else {
        // The pointer is always enabled: keep its SGPRs out of the way of singles only if
        // tuples do not reuse them (they may).
    }
    let used = webs::assign(w, RegClass::Sgpr, p.mf.abi.target, MAX_SGPRS, &blocked)?;
    if kernarg.is_none() {
        blocked.extend([kernarg_at, kernarg_at + 1]);
    }
    let mut blocked_set = SgprSet::default();
    for &r in &blocked {
        blocked_set.insert(r);
    }
    let mut taken = blocked_set;
    for r in used {
        taken.insert(r);
    }
    Ok(SgprLayout {
        taken,
        blocked: blocked_set,
        wg_fixed,
        wave_offset,
    })
}

/// Places regalloc2's used `Int` registers (`used`, a mask) that `int_map` does not fix yet on
/// SGPRs: each gets the lowest SGPR outside `blocked` where no SGPR web dword and no single
/// placed earlier is live while it is (`locs::intervals`), in order of first position.
/// A scalar instruction's result may take the SGPR of a source that dies there
/// (`s_and_b32 s3, s3, 0xffff`): its def counts from just after it.
/// A single copied into a dword of an SGPR web (a `Build` part: a buffer descriptor's
/// `num_records` and config words) or out of one (an `Extract`: a loaded or preloaded
/// length) first tries that dword's SGPR, so the copy is a self-move and emits nothing. First
/// fit in order of first position can give such an SGPR to an earlier single, so the hinted
/// singles are also placed first; of the two, the one ending lower (then with more copies
/// made self-moves) is kept. The copy's own position may be shared with the dword (the part
/// is read where the tuple's dword is written, the `Extract` result written where the source
/// dword is last read): each dword gets one part, so no other move of the copy clobbers it.
/// Returns the SGPRs given.
#[allow(clippy::too_many_arguments)]
fn place_singles(
    p: &Prepared,
    func: &ra2::RaFunc,
    out: &ra::Output,
    w: &webs::Webs,
    used: u64,
    int_map: &mut [u16; 64],
    blocked: &SgprSet,
    ivs: &[webs::Intervals],
) -> Result<(Vec<u16>, usize), RegallocError> {
    // What is live on each SGPR: the webs' dwords.
    let mut occ: Vec<Vec<&webs::Intervals>> = vec![Vec::new(); MAX_SGPRS as usize];
    for (r, span) in w.dword_spans(RegClass::Sgpr) {
        occ[r].push(span);
    }
    // Registers fixed before (the workgroup ids the hardware writes) are taken only while
    // their values live: a single may use a workgroup id's SGPR after its last reader.
    let mut fixed = SgprSet::default();
    for h in bits(used).filter(|&h| int_map[h] != NO_REG) {
        occ[int_map[h] as usize].push(&ivs[h]);
        fixed.insert(int_map[h]);
    }
    let hints = single_hints(p, func, out, w);
    let mut order: Vec<usize> = bits(used).filter(|&h| int_map[h] == NO_REG).collect();
    order.sort_by_key(|&h| (ivs[h].start(), h));
    let mut hinted_first = order.clone();
    hinted_first.sort_by_key(|&h| (hints[h].is_empty(), ivs[h].start(), h));
    // One placement in `order`: (SGPR per single, end of the SGPRs used, copies kept).
    let place = |order: &[usize]| -> Result<(Vec<(usize, u16)>, u16, usize), RegallocError> {
        let mut occ = occ.clone();
        let mut out = Vec::with_capacity(order.len());
        let mut copies = 0;
        for &h in order {
            let free = |x: u16, occ: &[Vec<&webs::Intervals>]| {
                (!blocked.contains(x) || fixed.contains(x))
                    && occ[x as usize].iter().all(|o| !o.overlaps(&ivs[h]))
            };
            // Free but at the copy's position `at` (the single's intervals without that point).
            let free_at = |x: u16, at: u32, occ: &[Vec<&webs::Intervals>]| {
                let iv = without_point(&ivs[h], at);
                (!blocked.contains(x) || fixed.contains(x))
                    && occ[x as usize].iter().all(|o| !o.overlaps(&iv))
            };
            let hinted = hints[h]
                .iter()
                .find(|&&(x, at)| free_at(x, at, &occ))
                .map(|&(x, _)| x);
            copies += hints[h].iter().filter(|&&(x, _)| Some(x) != hinted).count();
            let r = hinted
                .or_else(|| (0..MAX_SGPRS).find(|&x| free(x, &occ)))
                .ok_or(RegallocError::OutOfRegisters {
                    file: "SGPR",
                    limit: MAX_SGPRS as u32,
                })?;
            occ[r as usize].push(&ivs[h]);
            out.push((h, r));
        }
        let end = out.iter().map(|&(_, r)| r + 1).max().unwrap_or(0);
        Ok((out, end, copies))
    };
    if std::env::var_os("KJIT_DBG_SINGLES").is_some() {
        for &h in &order {
            eprintln!("preg {h}: {:?} hints {:?}", ivs[h].0, hints[h]);
        }
        for (r, o) in occ.iter().enumerate().take(20) {
            eprintln!("s{r}: {:?}", o.iter().map(|i| &i.0).collect::<Vec<_>>());
        }
    }
    let mut best = place(&order)?;
    if hinted_first != order {
        let other = place(&hinted_first)?;
        if (other.1, other.2) < (best.1, best.2) {
            best = other;
        }
    }
    let mut given = Vec::with_capacity(best.0.len());
    for (h, r) in best.0 {
        int_map[h] = r;
        given.push(r);
    }
    Ok((given, best.2))
}

/// Webs [`lower_sgpr_webs`] tries to move per layout, highest first, and places it tries in
/// all (bounds on compile time: each try places the singles again).
const MAX_WEB_LOWERING_TRIES: usize = 4;
const MAX_WEB_LOWERINGS: usize = 4;

/// The SGPRs the tuple webs occupy.
fn web_sgprs(w: &webs::Webs) -> Vec<u16> {
    w.webs
        .iter()
        .filter(|web| web.class == RegClass::Sgpr && web.inside.is_none())
        .filter_map(|web| Some(web.reg?..web.reg? + web.dwords as u16))
        .flatten()
        .collect()
}

/// Lowers SGPR tuple webs once the singles are placed. The webs are placed before regalloc2
/// runs, with a workgroup id's SGPR blocked for the whole kernel and the singles unknown, so a
/// tuple may end above registers that are free while it is live (hash_chain's lane mask in
/// `s[16:17]` above the workgroup id's `s14`, dead by then, and the group size's `s15`). Each
/// web not fixed by the ABI, highest first, is tried at the lowest aligned registers below it
/// where no other web dword is live while its dwords are, none is reserved by the ABI, and a
/// workgroup id's SGPR only outside its register's live intervals; the singles are then
/// placed again. A move is kept when the SGPRs end no higher with no more copies, and moves
/// repeat from the new layout; the result is kept when the SGPRs end lower. `current`: the singles' SGPRs and copies as placed over `w`.
/// Returns the lowered webs, the `Int` map and the singles' SGPRs, or `None` (no move kept).
#[allow(clippy::too_many_arguments)]
fn lower_sgpr_webs(
    p: &Prepared,
    func: &ra2::RaFunc,
    out: &ra::Output,
    w: &webs::Webs,
    used: u64,
    fixed_map: &[u16; 64],
    lay: &SgprLayout,
    ivs: &[webs::Intervals],
    current: (&[u16], usize),
) -> Result<Option<(webs::Webs, [u16; 64], Vec<u16>, usize)>, RegallocError> {
    // A workgroup id's SGPR and the intervals of the register the id is read from.
    let wg_live = |x: u16| -> Option<&webs::Intervals> {
        lay.wg_fixed
            .iter()
            .find(|&&(_, pos)| pos == x)
            .and_then(|&(d, _)| {
                let h = ra2::wg_preg(d).hw_enc();
                (fixed_map[h] == x).then(|| &ivs[h])
            })
    };
    // The webs being lowered (cloned at the first try) and the singles placed over them.
    let mut lw: Option<webs::Webs> = None;
    let mut best: Option<([u16; 64], Vec<u16>, usize)> = None;
    let (mut end, mut copies) = (sgpr_end(w, current.0, lay), current.1);
    let first_end = end;
    // No layout ends below the ABI's registers or the most SGPRs live at once.
    let floor = (lay.blocked.end() as u16).max(sgpr_pressure(w, lay, ivs, used, fixed_map));
    if end <= floor {
        return Ok(None);
    }
    // A move is kept when the end and the copies do not rise (two webs on the same registers,
    // such as a compare's mask and its `s_and_b64 exec` result, move one at a time), so
    // the end may fall only after several; each kept move lowers a web, and the tries are
    // bounded.
    let mut tries = 0;
    'rounds: loop {
        let cur = lw.as_ref().unwrap_or(w);
        let mut roots: Vec<usize> = (0..cur.webs.len())
            .filter(|&k| {
                let web = &cur.webs[k];
                web.class == RegClass::Sgpr
                    && web.inside.is_none()
                    && web.precolor.is_none()
                    && web.reg.is_some()
            })
            .collect();
        roots.sort_by_key(|&k| {
            std::cmp::Reverse(cur.webs[k].reg.unwrap() + cur.webs[k].dwords as u16)
        });
        roots.truncate(MAX_WEB_LOWERING_TRIES);
        for r in roots {
            let cur = lw.as_ref().unwrap_or(w);
            let web = &cur.webs[r];
            let (reg, dw) = (web.reg.unwrap(), web.dwords as u16);
            let al = webs::alignment(RegClass::Sgpr, web.dwords, p.mf.abi.target);
            // Where the other webs' dwords are live, per SGPR below this one.
            let occ = other_webs_occupancy(cur, r, reg);
            let fits = |base: u16| {
                (0..dw).all(|j| {
                    let x = base + j;
                    let span = &web.dword_span[j as usize];
                    let abi_free = !lay.blocked.contains(x)
                        || wg_live(x).is_some_and(|live| !live.overlaps(span));
                    x < reg && abi_free && !occ[x as usize].overlaps(span)
                })
            };
            let bases: Vec<u16> = (0..reg).step_by(al as usize).filter(|&b| fits(b)).collect();
            for base in bases {
                if tries == MAX_WEB_LOWERINGS {
                    break 'rounds;
                }
                tries += 1;
                let lowered = lw.get_or_insert_with(|| w.clone());
                move_web(lowered, r, base);
                let (map, regs, c, e) =
                    place_over(p, func, out, lowered, used, fixed_map, lay, ivs)?;
                if e <= end && c <= copies {
                    (end, copies) = (e, c);
                    best = Some((map, regs, c));
                    if end <= floor {
                        break 'rounds;
                    }
                    continue 'rounds;
                }
                move_web(lowered, r, reg);
            }
        }
        break;
    }
    // Kept only if the SGPRs end lower (a web lowered without that changes nothing useful).
    Ok(lw
        .zip(best)
        .filter(|_| end < first_end)
        .map(|(lw, (map, regs, c))| (lw, map, regs, c)))
}

/// The singles placed again over webs `w` (a trial layout of the tuples): the `Int` map, the
/// singles' SGPRs, the copies left and where the SGPRs end.
#[allow(clippy::too_many_arguments)]
fn place_over(
    p: &Prepared,
    func: &ra2::RaFunc,
    out: &ra::Output,
    w: &webs::Webs,
    used: u64,
    fixed_map: &[u16; 64],
    lay: &SgprLayout,
    ivs: &[webs::Intervals],
) -> Result<([u16; 64], Vec<u16>, usize, u16), RegallocError> {
    let mut map = *fixed_map;
    let (regs, c) = place_singles(p, func, out, w, used, &mut map, &lay.blocked, ivs)?;
    let e = sgpr_end(w, &regs, lay);
    Ok((map, regs, c, e))
}

/// Where SGPR tuples and singles end: one past the highest SGPR the webs of `w` or the
/// singles' `singles` take, at least past the ABI's reserved ones.
fn sgpr_end(w: &webs::Webs, singles: &[u16], lay: &SgprLayout) -> u16 {
    web_sgprs(w)
        .into_iter()
        .chain(singles.iter().copied())
        .map(|r| r + 1)
        .max()
        .unwrap_or(0)
        .max(lay.blocked.end() as u16)
}

/// Where the SGPR webs of `w` other than root `r` (and those inside it) hold live dwords, per
/// SGPR below `limit`.
fn other_webs_occupancy(w: &webs::Webs, r: usize, limit: u16) -> Vec<webs::Intervals> {
    let mut occ: Vec<webs::Intervals> = vec![webs::Intervals::default(); limit as usize];
    for (k, other) in w.webs.iter().enumerate() {
        let root = other.inside.map_or(k, |(o, _)| o);
        if root == r || other.class != RegClass::Sgpr {
            continue;
        }
        if let Some(b) = other.reg {
            for (j, span) in other.dword_span.iter().enumerate() {
                if let Some(o) = occ.get_mut(b as usize + j) {
                    o.merge(span);
                }
            }
        }
    }
    occ
}

/// Whether an SGPR web of `w` other than root `r` (and those inside it) holds SGPR `y` live
/// somewhere in `span`: one register's [`other_webs_occupancy`], asked without building the
/// table (a first fit that stops at the first free base asks about a few registers only).
fn other_webs_overlap(w: &webs::Webs, r: usize, y: u16, span: &webs::Intervals) -> bool {
    w.webs.iter().enumerate().any(|(k, other)| {
        let root = other.inside.map_or(k, |(o, _)| o);
        if root == r || other.class != RegClass::Sgpr {
            return false;
        }
        other.reg.is_some_and(|b| {
            y >= b
                && other
                    .dword_span
                    .get((y - b) as usize)
                    .is_some_and(|s| s.overlaps(span))
        })
    })
}

/// `iv` without position `at` where a segment begins or ends there: a copy's own position,
/// which a hinted SGPR may share with the value copied ([`place_singles`]).
fn without_point(iv: &webs::Intervals, at: u32) -> webs::Intervals {
    let mut iv = iv.clone();
    iv.0.retain_mut(|seg| {
        if seg.0 == at {
            seg.0 += 1;
        }
        if seg.1 == at {
            seg.1 = seg.1.saturating_sub(1);
        }
        seg.0 <= seg.1
    });
    iv
}

/// Singles whose copy hints [`free_hinted_sgprs`] tries to honour per allocation (each try
/// places the singles again).
const MAX_HINT_TRIES: usize = 4;

/// Moves SGPR tuple webs off the SGPR a single's copy hint names ([`single_hints`]) where they
/// keep the single from it. The webs are placed before regalloc2 runs, by first fit over their
/// own live intervals, so a web of later code may take the SGPR of a preloaded kernel argument
/// that was copied out while the copy lives on (stencil_pipelined's loop masks in `s[4:5]`,
/// where the width was preloaded: `s_mov_b32 s16, s5` in the prologue, the width in `s16` all
/// kernel). For each single (`Int` PReg) none of whose hints holds, the webs live on its first
/// hinted SGPR while it is go to the lowest aligned SGPRs where no ABI register, no other web
/// dword and (on that SGPR) not the single are live while they are, and the singles are placed
/// again; the result is kept when fewer copies remain and the SGPRs end no higher.
/// `current`: the `Int` map, the singles' SGPRs and the copies as placed over `w`.
/// Returns the moved webs, the `Int` map and the singles' SGPRs, or `None` (nothing kept).
#[allow(clippy::too_many_arguments)]
fn free_hinted_sgprs(
    p: &Prepared,
    func: &ra2::RaFunc,
    out: &ra::Output,
    w: &webs::Webs,
    used: u64,
    fixed_map: &[u16; 64],
    lay: &SgprLayout,
    ivs: &[webs::Intervals],
    current: (&[u16; 64], &[u16], usize),
) -> Result<Option<(webs::Webs, [u16; 64], Vec<u16>)>, RegallocError> {
    let (map, singles, mut copies) = current;
    if copies == 0 {
        return Ok(None);
    }
    let target = p.mf.abi.target;
    let mut end = sgpr_end(w, singles, lay);
    let mut hints = single_hints(p, func, out, w);
    // The webs of the best try so far (`w` until one is kept), cloned at the first try; a try
    // moves webs in it and puts them back when it is not kept.
    let mut work: Option<webs::Webs> = None;
    let mut best: Option<([u16; 64], Vec<u16>)> = None;
    let mut tries = 0;
    for h in bits(used) {
        if copies == 0 || tries == MAX_HINT_TRIES {
            break;
        }
        let cur = work.as_ref().unwrap_or(w);
        let cur_map = best.as_ref().map_or(map, |b| &b.0);
        let Some(&(x, at)) = hints[h].first() else {
            continue;
        };
        if hints[h].iter().any(|&(r, _)| r == cur_map[h]) {
            continue;
        }
        let iv = without_point(&ivs[h], at);
        let blocking: Vec<usize> = (0..cur.webs.len())
            .filter(|&k| {
                let web = &cur.webs[k];
                let Some(base) = web
                    .reg
                    .filter(|_| web.class == RegClass::Sgpr && web.inside.is_none())
                else {
                    return false;
                };
                (base..base + web.dwords as u16).contains(&x)
                    && web.dword_span[(x - base) as usize].overlaps(&iv)
            })
            .collect();
        if blocking.is_empty() || blocking.iter().any(|&k| cur.webs[k].precolor.is_some()) {
            continue;
        }
        tries += 1;
        let trial = work.get_or_insert_with(|| w.clone());
        // The webs moved, with their registers before the move.
        let mut moved: Vec<(usize, u16)> = Vec::with_capacity(blocking.len());
        let mut placed = true;
        for &r in &blocking {
            let web = &trial.webs[r];
            let (dw, al) = (
                web.dwords as u16,
                webs::alignment(RegClass::Sgpr, web.dwords, target),
            );
            let fits = |base: u16| {
                (0..dw).all(|j| {
                    let (y, span) = (base + j, &web.dword_span[j as usize]);
                    !lay.blocked.contains(y)
                        && !other_webs_overlap(trial, r, y, span)
                        && !(y == x && iv.overlaps(span))
                })
            };
            match (0..=MAX_SGPRS - dw).step_by(al as usize).find(|&b| fits(b)) {
                Some(base) => {
                    moved.push((r, web.reg.expect("a blocking web has registers")));
                    move_web(trial, r, base);
                }
                None => {
                    placed = false;
                    break;
                }
            }
        }
        let kept = if placed {
            match place_over(p, func, out, trial, used, fixed_map, lay, ivs) {
                Ok((m, regs, c, e)) if c < copies && e <= end => {
                    (copies, end) = (c, e);
                    hints = single_hints(p, func, out, trial);
                    best = Some((m, regs));
                    true
                }
                _ => false,
            }
        } else {
            false
        };
        if !kept {
            for &(r, reg) in moved.iter().rev() {
                move_web(trial, r, reg);
            }
        }
    }
    Ok(best.map(|(m, regs)| (work.expect("a kept try made the webs"), m, regs)))
}

/// The most SGPRs live at one position: the tuple webs' dwords, the singles (`used` `Int`
/// PRegs, intervals `ivs`), and the ABI's reserved SGPRs (a workgroup id's only while its
/// register is live). No layout of them ends lower.
fn sgpr_pressure(
    w: &webs::Webs,
    lay: &SgprLayout,
    ivs: &[webs::Intervals],
    used: u64,
    fixed_map: &[u16; 64],
) -> u16 {
    // Live count changes per position (inclusive intervals `(a, b)` end at `b + 1`).
    let mut delta: Vec<i32> = Vec::new();
    let mut add = |iv: &webs::Intervals| {
        for &(a, b) in &iv.0 {
            if delta.len() < b as usize + 2 {
                delta.resize(b as usize + 2, 0);
            }
            delta[a as usize] += 1;
            delta[b as usize + 1] -= 1;
        }
    };
    for web in w.webs.iter() {
        if web.class == RegClass::Sgpr && web.inside.is_none() && web.reg.is_some() {
            web.dword_span.iter().for_each(&mut add);
        }
    }
    for h in bits(used) {
        add(&ivs[h]);
    }
    let fixed = lay
        .wg_fixed
        .iter()
        .filter(|&&(d, pos)| fixed_map[ra2::wg_preg(d).hw_enc()] == pos)
        .count() as i32;
    let always = lay.blocked.len() as i32 - fixed;
    let (mut live, mut most) = (0i32, 0i32);
    for d in delta {
        live += d;
        most = most.max(live);
    }
    (most + always).max(0) as u16
}

/// Puts root web `r` (and the webs placed inside it) at SGPR `base`.
fn move_web(w: &mut webs::Webs, r: usize, base: u16) {
    w.webs[r].reg = Some(base);
    for web in &mut w.webs {
        if let Some((o, off)) = web.inside {
            if o == r {
                web.reg = Some(base + off);
            }
        }
    }
}

/// Where each `Int` PReg (by `hw_enc`) is live in the allocated program, in the webs'
/// position numbering (what [`place_singles`] and [`lower_sgpr_webs`] place by).
fn int_intervals(p: &Prepared, func: &ra2::RaFunc, out: &ra::Output) -> Vec<webs::Intervals> {
    let mut late_def = vec![false; p.num_insts as usize];
    for (b, bd) in p.mf.blocks.iter() {
        let first = p.first_inst[b.index()] as usize;
        for (k, inst) in bd.insts.iter().enumerate() {
            late_def[first + k] = webs::reads_before_writing(inst);
        }
    }
    let evs = locs::events(
        func,
        out,
        |a| {
            a.as_reg()
                .filter(|r| r.class() == ra::RegClass::Int)
                .map(|r| r.hw_enc())
        },
        |i| late_def[i],
    );
    locs::intervals(func, &evs, 64)
}

/// For each `Int` PReg (by `hw_enc`), the SGPRs of the web dwords its values are copied into
/// (`Build` parts) or out of (`Extract` results), with the copy's position (`2i`), in program
/// order: where [`place_singles`] tries it first.
fn single_hints(
    p: &Prepared,
    func: &ra2::RaFunc,
    out: &ra::Output,
    w: &webs::Webs,
) -> Vec<Vec<(u16, u32)>> {
    let mut hints: Vec<Vec<(u16, u32)>> = vec![Vec::new(); 64];
    let web_reg = |v: crate::mir::VReg| {
        let web = &w.webs[*w.web_of.get(&v)?];
        web.reg.filter(|_| web.class == RegClass::Sgpr)
    };
    let mut hint = |gi: usize, i: usize, r: u16| {
        let Some(x) = func.map.get(gi).get(i).copied().flatten() else {
            return;
        };
        let a: Allocation = out.inst_allocs(ra::Inst::new(gi))[x as usize];
        if let Some(h) = a.as_reg().filter(|h| h.class() == ra::RegClass::Int) {
            hints[h.hw_enc()].push((r, 2 * gi as u32));
        }
    };
    for (b, bd) in p.mf.blocks.iter() {
        let first = p.first_inst[b.index()] as usize;
        for (k, inst) in bd.insts.iter().enumerate() {
            match (inst.opcode, inst.ops.as_slice()) {
                (MOpcode::Build, [MOperand::Def(d), parts @ ..]) => {
                    let Some(base) = web_reg(*d) else { continue };
                    let mut at = 0u16;
                    for (j, o) in parts.iter().enumerate() {
                        match *o {
                            MOperand::Use(u) => {
                                let v = p.mf.vregs[u];
                                if v.class == RegClass::Sgpr && v.dwords == 1 {
                                    hint(first + k, j + 1, base + at);
                                }
                                at += v.dwords as u16;
                            }
                            MOperand::Phys(_) => at += 1,
                            _ => {}
                        }
                    }
                }
                (MOpcode::Extract(x), [MOperand::Def(d), MOperand::Use(s)]) => {
                    let v = p.mf.vregs[*d];
                    if v.class == RegClass::Sgpr && v.dwords == 1 {
                        if let Some(base) = web_reg(*s) {
                            hint(first + k, 0, base + x as u16);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    hints
}

struct Ctx<'a> {
    p: &'a Prepared,
    target: Target,
    w: &'a webs::Webs,
    func: &'a ra2::RaFunc,
    out: &'a ra::Output,
    /// Register of each `Int`/`Float`/`Vector` PReg (by `hw_enc`): SGPR, VGPR, first VGPR.
    int_map: [u16; 64],
    /// First VGPR of each `Float`/`Vector` allocation and edit side (`vgprs::VgprLayout`).
    alloc_vgpr: Vec<u16>,
    edit_vgpr: Vec<[u16; 2]>,
    vweb_base: u16,
    /// `w.web_of` as a dense table by vreg index (`u32::MAX`: not a web vreg), so that emitting
    /// a tuple operand does not hash.
    web_ix: Vec<u32>,
    /// Location of each regalloc2 spill slot (indexed by slot).
    slot_loc: Vec<Option<SlotLoc>>,
    private_seg: Option<u16>,
    wave_offset: Option<u16>,
    exec_save: Option<u16>,
    /// First of the VGPRs that carry operands left in AGPR or scratch slots.
    temp_base: u16,
    /// How many there are.
    temps: u16,
}

/// `count` registers of `o` from its register `at`.
fn sub(o: Operand, at: u16, count: u16) -> Operand {
    match o {
        Operand::Sgpr { first, .. } => Operand::sr(first + at, count as u8),
        Operand::Vgpr { first, .. } => Operand::vr(first + at, count as u8),
        Operand::Agpr { first, .. } => Operand::ar(first + at, count as u8),
        x => x,
    }
}

fn mov(op: Opcode, d: Operand, s: Operand) -> Inst {
    Inst::new(op, &[d, s])
}

impl Ctx<'_> {
    /// Where spill slot `s` lives (every slot regalloc2 used has a location).
    fn slot_at(&self, s: usize) -> SlotLoc {
        debug_assert!(self.slot_loc[s].is_some(), "spill slot {s} has no location");
        self.slot_loc[s].unwrap_or(SlotLoc::Scratch(0))
    }

    /// Where an edit's slot side `a` is: the VGPR the layout gave this occurrence (`vgpr`, a
    /// slot placed among the PRegs' values), else the slot's location.
    fn edit_slot(&self, a: Allocation, vgpr: u16) -> SlotLoc {
        if vgpr != NO_REG {
            return SlotLoc::Vgpr(vgpr);
        }
        self.slot_at(a.as_stack().map(|s| s.index()).unwrap_or(0))
    }

    /// Register `r`, a `Float`/`Vector` PReg being on `vgpr` there (its values have VGPRs of
    /// their own).
    fn preg(&self, r: PReg, vgpr: u16) -> Operand {
        match self.func.vgpr_dwords(r.class()) {
            None => Operand::s(self.int_map[r.hw_enc()]),
            Some(1) => Operand::v(vgpr),
            Some(n) => Operand::vr(vgpr, n as u8),
        }
    }

    fn web_operand(&self, v: crate::mir::VReg) -> Operand {
        let web = &self.w.webs[self.web_ix[v.index()] as usize];
        let reg = web.reg.unwrap_or(0);
        let d = self.p.mf.vregs[v].dwords;
        match web.class {
            RegClass::Sgpr => Operand::sr(reg, d),
            RegClass::Vgpr => Operand::vr(self.vweb_base + reg, d),
            RegClass::Agpr => Operand::ar(reg, d),
        }
    }

    fn is_vector_edit(&self, e: &Edit) -> bool {
        let Edit::Move { from, to } = e;
        let r = from.as_reg().or(to.as_reg());
        matches!(
            r.map(|r| r.class()),
            Some(ra::RegClass::Float | ra::RegClass::Vector)
        )
    }

    fn point_partial(&self, pt: ProgPoint) -> bool {
        let i = pt.inst().index();
        match pt.pos() {
            InstPosition::Before => self.p.partial_before[i],
            InstPosition::After => self.p.partial_after[i],
        }
    }

    fn needs_exec_save(&self) -> bool {
        if self.temps > 0 && self.p.partial_before.iter().any(|&x| x) {
            return true;
        }
        if self
            .out
            .edits
            .iter()
            .any(|(pt, e)| self.is_vector_edit(e) && self.point_partial(*pt))
        {
            return true;
        }
        // Vector tuple copies in partial regions.
        for (b, bd) in self.p.mf.blocks.iter() {
            for (k, inst) in bd.insts.iter().enumerate() {
                if inst.opcode == MOpcode::Copy && !self.w.coalesced.contains(&(b.index(), k)) {
                    if let Some(v) = inst.defs().next() {
                        let d = self.p.mf.vregs[v];
                        let gi = (self.p.first_inst[b.index()] + k as u32) as usize;
                        if kind_of(d.class, d.dwords) == Kind::Web
                            && d.class != RegClass::Sgpr
                            && self.p.partial_before[gi]
                        {
                            return true;
                        }
                    }
                }
            }
        }
        false
    }

    fn wrap(&self, out: &mut Vec<Inst>, body: Vec<Inst>, whole_wave: bool) {
        if body.is_empty() {
            return;
        }
        match (whole_wave, self.exec_save) {
            (true, Some(s)) if !body.is_empty() => {
                let exec = Operand::Special(SpecialReg::Exec);
                out.push(mov(Opcode::SMovB64, Operand::sr(s, 2), exec));
                out.push(mov(Opcode::SMovB64, exec, Operand::InlineInt(-1)));
                out.extend(body);
                out.push(mov(Opcode::SMovB64, exec, Operand::sr(s, 2)));
            }
            _ => out.extend(body),
        }
    }

    /// [`Self::wrap`] for a body already pushed at `out[start..]` (no separate vector).
    fn wrap_at(&self, out: &mut Vec<Inst>, start: usize, whole_wave: bool) {
        if let (true, Some(s)) = (whole_wave, self.exec_save) {
            if out.len() > start {
                let exec = Operand::Special(SpecialReg::Exec);
                out.splice(
                    start..start,
                    [
                        mov(Opcode::SMovB64, Operand::sr(s, 2), exec),
                        mov(Opcode::SMovB64, exec, Operand::InlineInt(-1)),
                    ],
                );
                out.push(mov(Opcode::SMovB64, exec, Operand::sr(s, 2)));
            }
        }
    }

    fn slot_access(&self, reg: Operand, slot: SlotLoc, store: bool, body: &mut Vec<Inst>) {
        let (first, n, is_sgpr) = match reg {
            Operand::Sgpr { first, count } => (first, count, true),
            Operand::Vgpr { first, count } => (first, count, false),
            _ => return,
        };
        for k in 0..n as u16 {
            let r = if is_sgpr {
                Operand::s(first + k)
            } else {
                Operand::v(first + k)
            };
            let inst = match slot {
                SlotLoc::Sgpr(s) => {
                    if store {
                        mov(Opcode::SMovB32, Operand::s(s + k), r)
                    } else {
                        mov(Opcode::SMovB32, r, Operand::s(s + k))
                    }
                }
                SlotLoc::Vgpr(s) => {
                    if store {
                        mov(Opcode::VMovB32, Operand::v(s + k), r)
                    } else {
                        mov(Opcode::VMovB32, r, Operand::v(s + k))
                    }
                }
                SlotLoc::Agpr(s) => {
                    if store {
                        mov(Opcode::VAccvgprWriteB32, Operand::a(s + k), r)
                    } else {
                        mov(Opcode::VAccvgprReadB32, r, Operand::a(s + k))
                    }
                }
                SlotLoc::Scratch(off) => {
                    let off = off + 4 * k as u32;
                    let mut i = if self.target == Target::Gfx942 {
                        if store {
                            Inst::new(Opcode::ScratchStoreDword, &[Operand::Off, r, Operand::Off])
                        } else {
                            Inst::new(Opcode::ScratchLoadDword, &[r, Operand::Off, Operand::Off])
                        }
                    } else {
                        let rsrc = Operand::sr(self.private_seg.unwrap_or(0), 4);
                        let soff = Operand::s(self.wave_offset.unwrap_or(0));
                        if store {
                            Inst::new(Opcode::BufferStoreDword, &[r, Operand::Off, rsrc, soff])
                        } else {
                            Inst::new(Opcode::BufferLoadDword, &[r, Operand::Off, rsrc, soff])
                        }
                    };
                    i.mods.offset = off as i32;
                    i
                }
            };
            body.push(inst);
        }
    }

    /// Edit number `ix`, `e`.
    fn edit(&self, ix: usize, e: &Edit, body: &mut Vec<Inst>, usage: &mut RegUsage) {
        let Edit::Move { from, to } = *e;
        let [vf, vt] = self.edit_vgpr[ix];
        match (from.as_reg(), to.as_reg()) {
            (Some(f), Some(t)) => {
                if self.preg(f, vf) == self.preg(t, vt) {
                    return;
                }
                usage.moves += 1;
                match self.func.vgpr_dwords(f.class()) {
                    None => body.push(mov(Opcode::SMovB32, self.preg(t, vt), self.preg(f, vf))),
                    Some(n) => {
                        for k in 0..n {
                            body.push(mov(Opcode::VMovB32, Operand::v(vt + k), Operand::v(vf + k)));
                        }
                    }
                }
            }
            (Some(f), None) => {
                let slot = self.edit_slot(to, vt);
                if slot != SlotLoc::Vgpr(vf) || !self.func.single_vgpr(f.class()) {
                    usage.spill_insts += 1;
                    self.slot_access(self.preg(f, vf), slot, true, body);
                }
            }
            (None, Some(t)) => {
                let slot = self.edit_slot(from, vf);
                if slot != SlotLoc::Vgpr(vt) || !self.func.single_vgpr(t.class()) {
                    usage.spill_insts += 1;
                    self.slot_access(self.preg(t, vt), slot, false, body);
                }
            }
            (None, None) => {}
        }
    }

    /// Edits `ix..` (`edits`).
    fn flush(
        &self,
        (ix, edits): (usize, &[(ProgPoint, Edit)]),
        out: &mut Vec<Inst>,
        usage: &mut RegUsage,
    ) {
        if edits.is_empty() {
            return;
        }
        let start = out.len();
        let mut vector = false;
        for (k, (_, e)) in edits.iter().enumerate() {
            vector |= self.is_vector_edit(e);
            self.edit(ix + k, e, out, usage);
        }
        self.wrap_at(out, start, vector && self.point_partial(edits[0].0));
    }

    fn tuple_copy(&self, d: Operand, s: Operand, out: &mut Vec<Inst>) {
        let (df, sf, n, class) = match (d, s) {
            (Operand::Sgpr { first: a, count }, Operand::Sgpr { first: b, .. }) => (a, b, count, 0),
            (Operand::Vgpr { first: a, count }, Operand::Vgpr { first: b, .. }) => (a, b, count, 1),
            (Operand::Agpr { first: a, count }, Operand::Agpr { first: b, .. }) => (a, b, count, 2),
            _ => return,
        };
        if df == sf {
            return;
        }
        let n = n as u16;
        for j in 0..n {
            // Overlapping ranges: copy from the end when moving up.
            let k = if df > sf { n - 1 - j } else { j };
            out.push(match class {
                0 => mov(Opcode::SMovB32, Operand::s(df + k), Operand::s(sf + k)),
                1 => mov(Opcode::VMovB32, Operand::v(df + k), Operand::v(sf + k)),
                _ => mov(
                    Opcode::VAccvgprMovB32,
                    Operand::a(df + k),
                    Operand::a(sf + k),
                ),
            });
        }
    }

    /// Moves `s` into `d` dword by dword (same width), across files where gfx9 can.
    fn sub_moves(&self, d: Operand, s: Operand, out: &mut Vec<Inst>) -> Result<(), RegallocError> {
        let file = |o: Operand| match o {
            Operand::Sgpr { first, count } => Some((0, first, count)),
            Operand::Vgpr { first, count } => Some((1, first, count)),
            Operand::Agpr { first, count } => Some((2, first, count)),
            _ => None,
        };
        let (Some((df, da, n)), Some((sf, sa, _))) = (file(d), file(s)) else {
            return Err(RegallocError::Unsupported(format!("move {s} to {d}")));
        };
        if df == sf && da == sa {
            return Ok(());
        }
        let one = |f: u8, r: u16| match f {
            0 => Operand::s(r),
            1 => Operand::v(r),
            _ => Operand::a(r),
        };
        let n = n as u16;
        for j in 0..n {
            let k = if df == sf && da > sa { n - 1 - j } else { j };
            let op = match (df, sf) {
                (0, 0) => Opcode::SMovB32,
                (1, 0) | (1, 1) => Opcode::VMovB32,
                (2, 1) => Opcode::VAccvgprWriteB32,
                (1, 2) => Opcode::VAccvgprReadB32,
                (2, 2) => Opcode::VAccvgprMovB32,
                _ => return Err(RegallocError::Unsupported(format!("move {s} to {d}"))),
            };
            out.push(mov(op, one(df, da + k), one(sf, sa + k)));
        }
        Ok(())
    }

    fn emit(&self, usage: &mut RegUsage) -> Result<Vec<PhysBlock>, RegallocError> {
        let mf = &self.p.mf;
        let mut blocks = Vec::with_capacity(mf.blocks.len());
        let edits = &self.out.edits;
        let mut e = 0usize;
        for (b, bd) in mf.blocks.iter() {
            let bi = b.index();
            let mut insts = Vec::with_capacity(bd.insts.len() + 4);
            let first = self.p.first_inst[bi];
            let n = bd.insts.len() as u32 + 1;
            for gi in first..first + n {
                let inst = ra::Inst::new(gi as usize);
                let take = |e: &mut usize, pt: ProgPoint| {
                    let s = *e;
                    while *e < edits.len() && edits[*e].0 <= pt {
                        *e += 1;
                    }
                    (s, &edits[s..*e])
                };
                let before = take(&mut e, ProgPoint::before(inst));
                self.flush(before, &mut insts, usage);
                let k = (gi - first) as usize;
                if k < bd.insts.len() {
                    self.inst(bi, k, gi, &mut insts, usage)?;
                }
                let after = take(&mut e, ProgPoint::after(inst));
                self.flush(after, &mut insts, usage);
            }
            let orig = |b: &MBlock| self.p.orig_of[b.index()];
            let term = match &bd.term {
                Terminator::Jump { target, .. } => PhysTerminator::Jump(orig(target)),
                Terminator::Branch {
                    cond,
                    taken,
                    not_taken,
                    ..
                } => PhysTerminator::Branch {
                    cond: *cond,
                    taken: orig(taken),
                    not_taken: orig(not_taken),
                },
                Terminator::Return => PhysTerminator::Return,
            };
            blocks.push((orig(&b), PhysBlock { insts, term }));
        }
        // Back to the input's layout (split edges after the input's blocks).
        blocks.sort_by_key(|(o, _)| *o);
        Ok(blocks.into_iter().map(|(_, b)| b).collect())
    }

    fn inst(
        &self,
        bi: usize,
        k: usize,
        gi: u32,
        out: &mut Vec<Inst>,
        usage: &mut RegUsage,
    ) -> Result<(), RegallocError> {
        let mi = &self.p.mf.blocks[MBlock::new(bi)].insts[k];
        let allocs = self.out.inst_allocs(ra::Inst::new(gi as usize));
        let ra_map = self.func.map.get(gi as usize);
        let first = self.out.inst_alloc_offsets[gi as usize] as usize;
        let operand = |i: usize, v: crate::mir::VReg| -> Result<Operand, RegallocError> {
            match ra_map[i] {
                Some(x) => {
                    let a: Allocation = allocs[x as usize];
                    let vgpr = self.alloc_vgpr[first + x as usize];
                    if let Some(r) = a.as_reg() {
                        return Ok(self.preg(r, vgpr));
                    }
                    if vgpr != NO_REG {
                        return Ok(Operand::v(vgpr));
                    }
                    match a
                        .as_stack()
                        .and_then(|s| self.slot_loc.get(s.index()).copied().flatten())
                    {
                        Some(SlotLoc::Vgpr(n)) => Ok(Operand::v(n)),
                        _ => Err(RegallocError::Regalloc2(format!("{v} not in a register"))),
                    }
                }
                None => Ok(self.web_operand(v)),
            }
        };
        match mi.opcode {
            MOpcode::LiveIn(_) | MOpcode::ImplicitDef => {}
            MOpcode::Copy => {
                if let [MOperand::Def(d), MOperand::Use(s)] = mi.ops.as_slice() {
                    let (dop, sop) = (operand(0, *d)?, operand(1, *s)?);
                    if dop != sop {
                        if ra_map[0].is_some() {
                            return Err(RegallocError::Regalloc2(
                                "a copy's reuse constraint was not honoured".into(),
                            ));
                        }
                        let start = out.len();
                        self.tuple_copy(dop, sop, out);
                        usage.moves += (out.len() - start) as u32;
                        let vector = !matches!(dop, Operand::Sgpr { .. });
                        self.wrap_at(out, start, vector && self.p.partial_before[gi as usize]);
                    }
                }
            }
            MOpcode::Build => {
                let d = match mi.ops[0] {
                    MOperand::Def(d) => operand(0, d)?,
                    _ => return Ok(()),
                };
                let mut body = Vec::new();
                let mut at = 0u16;
                for (i, o) in mi.ops.iter().enumerate().skip(1) {
                    match *o {
                        MOperand::Use(u) => {
                            let s = operand(i, u)?;
                            let n = s.reg_count() as u16;
                            self.sub_moves(sub(d, at, n), s, &mut body)?;
                            at += n;
                        }
                        // A constant dword of an SGPR tuple, written in place.
                        MOperand::Phys(k @ Operand::Literal(_)) => {
                            body.push(mov(Opcode::SMovB32, sub(d, at, 1), k));
                            at += 1;
                        }
                        _ => {}
                    }
                }
                usage.moves += body.len() as u32;
                let vector = !matches!(d, Operand::Sgpr { .. });
                self.wrap(out, body, vector && self.p.partial_before[gi as usize]);
            }
            MOpcode::Extract(k) => {
                if let [MOperand::Def(d), MOperand::Use(s)] = mi.ops.as_slice() {
                    let (dop, sop) = (operand(0, *d)?, operand(1, *s)?);
                    let mut body = Vec::new();
                    self.sub_moves(dop, sub(sop, k as u16, dop.reg_count() as u16), &mut body)?;
                    usage.moves += body.len() as u32;
                    let vector = !matches!(dop, Operand::Sgpr { .. });
                    self.wrap(out, body, vector && self.p.partial_before[gi as usize]);
                }
            }
            MOpcode::Isa(op) => {
                let mut ops = smallvec::SmallVec::<[Operand; 4]>::new();
                let encoded = mi.encoded_operand_count();
                // Operands left in slots that are not VGPRs go through temporaries.
                let (mut pre, mut post) = (Vec::new(), Vec::new());
                let mut temps = 0u16;
                for (i, o) in mi.ops.iter().enumerate().take(encoded) {
                    ops.push(match *o {
                        MOperand::Def(v) | MOperand::Use(v) => {
                            let slot = ra_map[i]
                                .and_then(|x| allocs[x as usize].as_stack())
                                .and_then(|s| self.slot_loc.get(s.index()).copied().flatten());
                            match slot {
                                Some(loc @ (SlotLoc::Agpr(_) | SlotLoc::Scratch(_))) => {
                                    let t = Operand::v(self.temp_base + temps);
                                    temps += 1;
                                    usage.spill_insts += 1;
                                    if matches!(o, MOperand::Use(_)) {
                                        self.slot_access(t, loc, false, &mut pre);
                                    } else {
                                        self.slot_access(t, loc, true, &mut post);
                                    }
                                    t
                                }
                                _ => operand(i, v)?,
                            }
                        }
                        MOperand::Phys(x) => x,
                    });
                }
                if temps > self.temps {
                    return Err(RegallocError::Regalloc2(format!(
                        "{temps} operands in memory slots, {} temporaries",
                        self.temps
                    )));
                }
                self.wrap(out, pre, self.p.partial_before[gi as usize]);
                out.push(isa::Inst {
                    op,
                    operands: ops,
                    encoding: mi.encoding,
                    mods: mi.mods,
                });
                self.wrap(out, post, self.p.partial_after[gi as usize]);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_rules() {
        assert_eq!(webs::alignment(RegClass::Sgpr, 2, Target::Gfx900), 2);
        assert_eq!(webs::alignment(RegClass::Sgpr, 4, Target::Gfx900), 4);
        assert_eq!(webs::alignment(RegClass::Vgpr, 4, Target::Gfx900), 1);
        assert_eq!(webs::alignment(RegClass::Vgpr, 4, Target::Gfx90a), 2);
        assert_eq!(webs::alignment(RegClass::Agpr, 16, Target::Gfx942), 2);
    }
}

//! Random machine functions through the allocator: straight-line code, uniform diamonds with
//! block parameters of every kind, counted loops carrying singles, pairs and SGPR tuples, and
//! divergent regions with tied partial writes — many values live at once — allocated at several
//! VGPR budgets on every target with regalloc2's checker, and run in the wave interpreter against
//! the MIR (same stores required).

mod regalloc_common;

use kjit_backend_gcn::isa::{Opcode, Operand};
use kjit_backend_gcn::mir::{
    implicit, BranchCond, MBlock, MInst, MOpcode, MOperand, MachineFunction, RegClass, Terminator,
    VReg,
};
use kjit_backend_gcn::regalloc::{Allocator, RegallocError};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_backend_gcn::Target;
use regalloc_common::*;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Clone)]
struct Pool {
    v: Vec<VReg>,
    s: Vec<VReg>,
    p: Vec<VReg>,
    sp: Vec<VReg>,
}

struct Gen<'a> {
    mf: MachineFunction,
    r: &'a mut Rng,
    kp: VReg,
    tid: VReg,
    rsrc: VReg,
    tag: i32,
    depth: u32,
    /// No VGPR pairs (a `Build` of two singles is an add instead).
    no_pairs: bool,
}

impl Gen<'_> {
    fn pick(&mut self, xs: &[VReg]) -> VReg {
        xs[self.r.below(xs.len())]
    }

    fn op(&mut self, b: MBlock, pool: &mut Pool) {
        let mf_v = |g: &mut Gen, c: RegClass, d: u8| g.mf.vreg(c, d);
        match self.r.below(10) {
            0 | 1 | 5 => {
                let (a, x) = (self.pick(&pool.v), self.pick(&pool.v));
                let v = mf_v(self, RegClass::Vgpr, 1);
                push(&mut self.mf, b, isa(Opcode::VAddU32, &[d(v), u(a), u(x)]));
                pool.v.push(v);
            }
            2 => {
                let a = self.pick(&pool.v);
                let k = self.r.below(60) as i8 + 2;
                let v = mf_v(self, RegClass::Vgpr, 1);
                push(&mut self.mf, b, isa(Opcode::VMulLoU32, &[d(v), u(a), c(k)]));
                pool.v.push(v);
            }
            3 => {
                let (a, x) = (self.pick(&pool.s), self.pick(&pool.s));
                let s = mf_v(self, RegClass::Sgpr, 1);
                let mut i = isa(Opcode::SAddU32, &[d(s), u(a), u(x)]);
                i.implicit_defs = implicit::SCC;
                push(&mut self.mf, b, i);
                pool.s.push(s);
            }
            4 => {
                let (a, x) = (self.pick(&pool.s), self.pick(&pool.v));
                let v = mf_v(self, RegClass::Vgpr, 1);
                push(&mut self.mf, b, isa(Opcode::VAddU32, &[d(v), u(a), u(x)]));
                pool.v.push(v);
            }
            5 if !self.no_pairs => {
                let (a, x) = (self.pick(&pool.v), self.pick(&pool.v));
                let p = mf_v(self, RegClass::Vgpr, 2);
                push(
                    &mut self.mf,
                    b,
                    MInst::pseudo(MOpcode::Build, &[d(p), u(a), u(x)]),
                );
                pool.p.push(p);
            }
            6 if !pool.p.is_empty() => {
                let (a, x) = (self.pick(&pool.p), self.pick(&pool.p));
                let p = mf_v(self, RegClass::Vgpr, 2);
                push(&mut self.mf, b, isa(Opcode::VAddF64, &[d(p), u(a), u(x)]));
                pool.p.push(p);
            }
            7 if !pool.p.is_empty() => {
                let a = self.pick(&pool.p);
                let v = mf_v(self, RegClass::Vgpr, 1);
                let k = self.r.below(2) as u8;
                push(
                    &mut self.mf,
                    b,
                    MInst::pseudo(MOpcode::Extract(k), &[d(v), u(a)]),
                );
                pool.v.push(v);
            }
            8 => {
                let sp = mf_v(self, RegClass::Sgpr, 2);
                let off = 8 * self.r.below(8) as i64;
                let kp = self.kp;
                push(
                    &mut self.mf,
                    b,
                    isa(
                        Opcode::SLoadDwordx2,
                        &[d(sp), u(kp), MOperand::Phys(Operand::Imm(off))],
                    ),
                );
                pool.sp.push(sp);
            }
            _ if !pool.sp.is_empty() => {
                let a = self.pick(&pool.sp);
                let s = mf_v(self, RegClass::Sgpr, 1);
                let k = self.r.below(2) as u8;
                push(
                    &mut self.mf,
                    b,
                    MInst::pseudo(MOpcode::Extract(k), &[d(s), u(a)]),
                );
                pool.s.push(s);
            }
            _ => {
                let a = self.pick(&pool.v);
                let (rsrc, tag) = (self.rsrc, self.tag);
                out(&mut self.mf, b, rsrc, a, tag);
                self.tag += 4;
            }
        }
    }

    fn ops(&mut self, b: MBlock, pool: &mut Pool, n: usize) {
        for _ in 0..n {
            self.op(b, pool);
        }
    }

    /// Fresh params for a join: `k` values of each kind.
    fn params(&mut self, b: MBlock, pool: &Pool) -> (Vec<VReg>, Vec<(RegClass, u8)>) {
        let mut shape = Vec::new();
        let kinds = [
            (RegClass::Vgpr, 1u8, pool.v.len()),
            (RegClass::Sgpr, 1, pool.s.len()),
            (RegClass::Vgpr, 2, pool.p.len()),
            (RegClass::Sgpr, 2, pool.sp.len()),
        ];
        for (c, dw, avail) in kinds {
            if avail > 0 {
                for _ in 0..1 + self.r.below(3) {
                    shape.push((c, dw));
                }
            }
        }
        let ps: Vec<VReg> = shape.iter().map(|&(c, dw)| self.mf.vreg(c, dw)).collect();
        self.mf.blocks[b].params = ps.clone();
        (ps, shape)
    }

    fn args(&mut self, pool: &Pool, shape: &[(RegClass, u8)]) -> Vec<VReg> {
        shape
            .iter()
            .map(|&(c, dw)| match (c, dw) {
                (RegClass::Vgpr, 1) => self.pick(&pool.v),
                (RegClass::Sgpr, 1) => self.pick(&pool.s),
                (RegClass::Vgpr, _) => self.pick(&pool.p),
                _ => self.pick(&pool.sp),
            })
            .collect()
    }

    fn add_params(pool: &mut Pool, ps: &[VReg], shape: &[(RegClass, u8)]) {
        for (&p, &(c, dw)) in ps.iter().zip(shape) {
            match (c, dw) {
                (RegClass::Vgpr, 1) => pool.v.push(p),
                (RegClass::Sgpr, 1) => pool.s.push(p),
                (RegClass::Vgpr, _) => pool.p.push(p),
                _ => pool.sp.push(p),
            }
        }
    }

    /// Emits a construct starting in `b`; returns the block where code continues.
    fn construct(&mut self, b: MBlock, pool: &mut Pool) -> MBlock {
        let mut choice = if self.depth >= 2 { 0 } else { self.r.below(4) };
        if std::env::var("KJIT_RA_NO")
            .ok()
            .and_then(|x| x.parse::<usize>().ok())
            == Some(choice)
        {
            choice = 0;
        }
        match choice {
            0 => {
                let n = 3 + self.r.below(12);
                self.ops(b, pool, n);
                b
            }
            1 => {
                // uniform diamond on SCC
                let (l, rr, j) = (self.mf.block(), self.mf.block(), self.mf.block());
                let s = self.pick(&pool.s);
                push(
                    &mut self.mf,
                    b,
                    isa(Opcode::SCmpLtU32, &[u(s), lit(0x8000_0000)]),
                );
                self.mf.blocks[b].term = Terminator::Branch {
                    cond: BranchCond::Scc1,
                    taken: l,
                    taken_args: vec![],
                    not_taken: rr,
                    not_taken_args: vec![],
                };
                let (ps, shape) = self.params(j, pool);
                self.depth += 1;
                for arm in [l, rr] {
                    let mut ap = pool.clone();
                    let end = self.construct(arm, &mut ap);
                    let args = self.args(&ap, &shape);
                    self.mf.blocks[end].term = Terminator::Jump { target: j, args };
                }
                self.depth -= 1;
                Self::add_params(pool, &ps, &shape);
                j
            }
            2 => {
                // counted loop: header carries i and a few values of every kind
                let (h, x) = (self.mf.block(), self.mf.block());
                let i0 = self.mf.vreg(RegClass::Sgpr, 1);
                push(&mut self.mf, b, isa(Opcode::SMovB32, &[d(i0), c(0)]));
                let (ps, shape) = self.params(h, pool);
                let i = self.mf.vreg(RegClass::Sgpr, 1);
                self.mf.blocks[h].params.insert(0, i);
                self.mf.blocks[h].loop_depth = 1;
                let mut entry_args = vec![i0];
                entry_args.extend(self.args(pool, &shape));
                self.mf.blocks[b].term = Terminator::Jump {
                    target: h,
                    args: entry_args,
                };
                let mut lp = pool.clone();
                Self::add_params(&mut lp, &ps, &shape);
                lp.s.push(i);
                self.depth += 1;
                let end = self.construct(h, &mut lp);
                self.depth -= 1;
                let i1 = self.mf.vreg(RegClass::Sgpr, 1);
                let mut inc = isa(Opcode::SAddU32, &[d(i1), u(i), c(1)]);
                inc.implicit_defs = implicit::SCC;
                push(&mut self.mf, end, inc);
                let trips = 1 + self.r.below(4) as i8;
                push(
                    &mut self.mf,
                    end,
                    isa(Opcode::SCmpLtU32, &[u(i1), c(trips)]),
                );
                let mut back = vec![i1];
                back.extend(self.args(&lp, &shape));
                self.mf.blocks[end].term = Terminator::Branch {
                    cond: BranchCond::Scc1,
                    taken: h,
                    taken_args: back,
                    not_taken: x,
                    not_taken_args: vec![],
                };
                // after the loop: the header's values of the last iteration dominate the exit
                Self::add_params(pool, &ps, &shape);
                x
            }
            _ => {
                // divergent region with a tied partial write
                let (t, j) = (self.mf.block(), self.mf.block());
                let z0 = self.pick(&pool.v);
                let cmp = self.mf.vreg(RegClass::Sgpr, 2);
                let tid = self.tid;
                let lim = self.r.below(40) as i8 + 1;
                push(
                    &mut self.mf,
                    b,
                    e64(isa(Opcode::VCmpLtU32, &[d(cmp), u(tid), c(lim)])),
                );
                let saved = self.mf.vreg(RegClass::Sgpr, 2);
                let mut se = isa(Opcode::SAndSaveexecB64, &[d(saved), u(cmp)]);
                se.implicit_defs = implicit::EXEC | implicit::SCC;
                se.implicit_uses = implicit::EXEC;
                push(&mut self.mf, b, se);
                self.mf.blocks[b].term = Terminator::Branch {
                    cond: BranchCond::Execz,
                    taken: j,
                    taken_args: vec![z0],
                    not_taken: t,
                    not_taken_args: vec![],
                };
                self.mf.blocks[t].exec_partial = true;
                let mut tp = pool.clone();
                let n = 2 + self.r.below(10);
                // only straight-line code inside (stores would see partial EXEC in both runs
                // identically, so they are fine too)
                self.ops(t, &mut tp, n);
                let (a, x) = (self.pick(&tp.v), self.pick(&tp.v));
                let z1 = self.mf.vreg(RegClass::Vgpr, 1);
                let mut tie = isa(Opcode::VAddU32, &[d(z1), u(a), u(x), u(z0)]);
                tie.tied = Some((0, 3));
                push(&mut self.mf, t, tie);
                self.mf.blocks[t].term = Terminator::Jump {
                    target: j,
                    args: vec![z1],
                };
                let zj = self.mf.vreg(RegClass::Vgpr, 1);
                self.mf.blocks[j].params = vec![zj];
                let mut restore = isa(Opcode::SOrB64, &[exec(), exec(), u(saved)]);
                restore.implicit_defs = implicit::SCC;
                push(&mut self.mf, j, restore);
                pool.v.push(zj);
                j
            }
        }
    }
}

fn program(t: Target, seed: u64) -> MachineFunction {
    program_with(t, seed, false)
}

/// A random program; `wide`: without VGPR pairs and with 70–119 values made first, so that
/// more singles are live at once than regalloc2's `Float` class holds.
fn program_with(t: Target, seed: u64, wide: bool) -> MachineFunction {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut mf = func(t);
    let (kp, tid, rsrc) = prologue(&mut mf);
    let e = mf.entry();
    let s0 = mf.vreg(RegClass::Sgpr, 1);
    push(&mut mf, e, isa(Opcode::SMovB32, &[d(s0), lit(0x1234)]));
    let mut g = Gen {
        mf,
        r: &mut r,
        kp,
        tid,
        rsrc,
        tag: 0,
        depth: 0,
        no_pairs: wide,
    };
    let mut pool = Pool {
        v: vec![tid],
        s: vec![s0],
        p: vec![],
        sp: vec![],
    };
    let n0 = if wide {
        70 + g.r.below(50)
    } else {
        4 + g.r.below(40)
    };
    g.ops(e, &mut pool, n0);
    let mut b = e;
    for _ in 0..1 + g.r.below(4) {
        b = g.construct(b, &mut pool);
    }
    // everything still available is stored (and so live up to here)
    let vs = pool.v.clone();
    for v in vs {
        let tag = g.tag;
        out(&mut g.mf, b, rsrc, v, tag);
        g.tag += 4;
    }
    for p in pool.p.clone() {
        let x = g.mf.vreg(RegClass::Vgpr, 1);
        push(
            &mut g.mf,
            b,
            MInst::pseudo(MOpcode::Extract(1), &[d(x), u(p)]),
        );
        let tag = g.tag;
        out(&mut g.mf, b, rsrc, x, tag);
        g.tag += 4;
    }
    for s in pool.s.clone() {
        let x = g.mf.vreg(RegClass::Vgpr, 1);
        push(&mut g.mf, b, isa(Opcode::VAddU32, &[d(x), u(s), u(tid)]));
        let tag = g.tag;
        out(&mut g.mf, b, rsrc, x, tag);
        g.tag += 4;
    }
    g.mf
}

/// `KJIT_RA_CASES`: how many random functions a longer local run takes (CI: the defaults).
fn cases_from_env() -> Option<u64> {
    std::env::var("KJIT_RA_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
}

#[test]
fn random_functions_allocate_and_compute_the_same_stores() {
    let cases = cases_from_env().unwrap_or(150);
    let mut stats = [0u32; 3];
    for seed in 0..cases {
        for t in ALL_TARGETS {
            let mf = program(t, seed);
            for budget in [None, Some(40), Some(20)] {
                let inp = Inputs {
                    exec: if seed % 3 == 0 {
                        (1 << 45) - 1
                    } else {
                        u64::MAX
                    },
                    ..Default::default()
                };
                let f = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    alloc_and_compare(&mf, budget, inp)
                }));
                match f {
                    Ok(f) => {
                        stats[0] += 1;
                        stats[1] += f.usage.spills();
                        stats[2] += f.usage.moves;
                    }
                    Err(_) => panic!("seed {seed} {t} budget {budget:?} failed"),
                }
            }
        }
    }
    eprintln!(
        "{} allocations, {} spilled values, {} moves",
        stats[0], stats[1], stats[2]
    );
    assert!(
        stats[1] > 0,
        "the random programs never spill: raise the pressure"
    );
}

/// More singles live at once than `Float` holds, no pairs: the excess goes to a second regalloc2
/// class (`regalloc/overflow.rs`; ties, copies and block parameters with their arguments in one
/// class, the work-item id in `Float`). Checker on, the same stores, without a budget and under
/// budgets that keep values in memory.
#[test]
fn wide_random_functions_allocate_singles_in_two_classes() {
    let cases = cases_from_env().map_or(40, |n| n / 4);
    let (mut wide, mut spill_free_wide) = (0, 0);
    for seed in 0..cases {
        for t in ALL_TARGETS {
            let mf = program_with(t, seed, true);
            for budget in [None, Some(96), Some(40)] {
                let inp = Inputs::default();
                let f = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    alloc_and_compare(&mf, budget, inp)
                }));
                let Ok(f) = f else {
                    panic!("wide seed {seed} {t} budget {budget:?} failed")
                };
                if budget.is_none() && f.usage.vgprs > 64 {
                    wide += 1;
                    spill_free_wide += u32::from(f.usage.spills() == 0);
                }
            }
        }
    }
    eprintln!("{wide} unbudgeted allocations over 64 VGPRs, {spill_free_wide} without spills");
    assert!(
        wide > 0,
        "the wide programs never exceed 64 VGPRs: raise the pressure"
    );
    assert!(
        spill_free_wide > 0,
        "no wide program was allocated without spills"
    );
}

/// The VGPR layout stops trying packings at one that leaves no copy and ends at the floor
/// (a register holds, at a position, at most one value live past it and one live before it):
/// no packing may end below that floor, with or without the spill slots among the values.
/// Random programs, wide ones (two classes) included, without a budget and at 40 and 20.
#[test]
fn no_vgpr_packing_ends_below_the_floor() {
    let cases = cases_from_env().map_or(40, |n| n / 4);
    let mut checked = 0;
    for seed in 0..cases {
        for t in ALL_TARGETS {
            for mf in [program(t, seed), program_with(t, seed, true)] {
                let a = Allocator::new(&mf, false).expect("allocator");
                for budget in [None, Some(40), Some(20)] {
                    match a.packing_floor_holds(budget) {
                        Ok(holds) => {
                            assert!(
                                holds,
                                "seed {seed} {t} budget {budget:?}: a packing ends below the floor"
                            );
                            checked += 1;
                        }
                        Err(RegallocError::BudgetTooSmall { .. }) => {}
                        Err(e) => panic!("seed {seed} {t} budget {budget:?}: {e}"),
                    }
                }
            }
        }
    }
    assert!(checked > 0);
}

#[test]
fn random_functions_are_valid_mir() {
    for seed in 0..40 {
        let mf = program(Target::Gfx942, seed);
        if let Err(e) = kjit_backend_gcn::mir_verify::verify(&mf) {
            panic!(
                "seed {seed}: {e}\n{}",
                kjit_backend_gcn::mir_verify::DisplayMir(&mf)
            );
        }
    }
}

#[test]
#[ignore]
fn debug_smallest_failure() {
    use kjit_backend_gcn::regalloc::{allocate, RegallocOptions};
    let mut best: Option<(usize, u64, String)> = None;
    for seed in 0..200 {
        let mf = program(Target::Gfx942, seed);
        if let Err(e) = allocate(
            &mf,
            &RegallocOptions {
                vgpr_budget: None,
                sgpr_budget: None,
                run_checker: true,
            },
        ) {
            let n: usize = mf.blocks.values().map(|b| b.insts.len()).sum();
            if best.as_ref().map(|b| n < b.0).unwrap_or(true) {
                best = Some((n, seed, format!("{e}")));
            }
        }
    }
    if let Some((n, seed, e)) = best {
        let mf = program(Target::Gfx942, seed);
        panic!(
            "seed {seed} ({n} insts): {e}\n{}",
            kjit_backend_gcn::mir_verify::DisplayMir(&mf)
        );
    }
}

#[test]
#[ignore]
fn debug_reduce() {
    use kjit_backend_gcn::regalloc::{allocate, RegallocOptions};
    let seed: u64 = std::env::var("KJIT_RA_SEED").unwrap().parse().unwrap();
    let mut mf = program(Target::Gfx942, seed);
    let fails = |mf: &MachineFunction| {
        allocate(
            mf,
            &RegallocOptions {
                vgpr_budget: None,
                sgpr_budget: None,
                run_checker: true,
            },
        )
        .is_err()
    };
    assert!(fails(&mf));
    loop {
        let mut progress = false;
        let blocks: Vec<MBlock> = mf.blocks.keys().collect();
        for b in blocks {
            let mut k = 0;
            while k < mf.blocks[b].insts.len() {
                let inst = mf.blocks[b].insts[k].clone();
                if matches!(inst.opcode, MOpcode::LiveIn(_)) {
                    k += 1;
                    continue;
                }
                let defs: Vec<VReg> = inst.defs().collect();
                let used = mf.blocks.values().any(|bd| {
                    bd.insts.iter().any(|i| i.uses().any(|u| defs.contains(&u)))
                        || bd
                            .term
                            .successors()
                            .iter()
                            .any(|(_, a)| a.iter().any(|x| defs.contains(x)))
                });
                if used {
                    k += 1;
                    continue;
                }
                let mut m2 = mf.clone();
                m2.blocks[b].insts.remove(k);
                if m2
                    .blocks
                    .values()
                    .flat_map(|x| &x.insts)
                    .any(|i| i.opcode == MOpcode::Isa(Opcode::BufferStoreDword))
                    && fails(&m2)
                {
                    mf = m2;
                    progress = true;
                } else {
                    k += 1;
                }
            }
        }
        if !progress {
            break;
        }
    }
    let e = allocate(
        &mf,
        &RegallocOptions {
            vgpr_budget: None,
            sgpr_budget: None,
            run_checker: true,
        },
    )
    .unwrap_err();
    let f = allocate(
        &mf,
        &RegallocOptions {
            vgpr_budget: None,
            sgpr_budget: None,
            run_checker: false,
        },
    )
    .unwrap();
    let a = run_mir(&mf, Inputs::default());
    let p = run_phys(&f, Inputs::default());
    panic!(
        "{e}\nsame stores: {}\n{}\n{}",
        a.stores == p.stores,
        kjit_backend_gcn::mir_verify::DisplayMir(&mf),
        listing(&f)
    );
}

/// `allocate` keeps regalloc2's working memory per thread between calls (a speed measure):
/// an allocation must not depend on what the thread allocated before, failed allocations
/// included. Each function is allocated on a fresh thread (fresh context) and again on one
/// thread interleaved with other functions and with budgets too small to succeed.
#[test]
fn reused_allocator_context_gives_the_same_result() {
    use kjit_backend_gcn::regalloc::{allocate, RegallocOptions};
    let opts = |budget| RegallocOptions {
        vgpr_budget: budget,
        sgpr_budget: None,
        run_checker: false,
    };
    let mut cases = Vec::new();
    for seed in 0..24u64 {
        for t in ALL_TARGETS {
            let budget = [None, Some(40), Some(20)][(seed % 3) as usize];
            cases.push((program(t, seed), budget));
        }
    }
    let fresh: Vec<String> = cases
        .iter()
        .map(|(mf, budget)| {
            let (mf, o) = (mf.clone(), opts(*budget));
            std::thread::spawn(move || format!("{:?}", allocate(&mf, &o)))
                .join()
                .expect("allocation thread")
        })
        .collect();
    let mut errors = 0;
    for (i, (mf, budget)) in cases.iter().enumerate().rev() {
        // A different function and a failing allocation in between.
        let (other, ob) = &cases[(i * 7 + 3) % cases.len()];
        let _ = allocate(other, &opts(*ob));
        if allocate(mf, &opts(Some(3))).is_err() {
            errors += 1;
        }
        let again = format!("{:?}", allocate(mf, &opts(*budget)));
        assert_eq!(
            again, fresh[i],
            "case {i}: result depends on earlier allocations"
        );
    }
    assert!(
        errors > 0,
        "no allocation failed: the error path is not exercised"
    );
    assert!(
        fresh.iter().filter(|s| s.starts_with("Ok")).count() > cases.len() / 2,
        "most cases should allocate"
    );
}

/// Allocates `mf` under `budget` (checker on; the code is not run: the test above runs it).
fn usage_under(
    mf: &MachineFunction,
    budget: Option<u32>,
) -> Option<kjit_backend_gcn::phys::RegUsage> {
    use kjit_backend_gcn::regalloc::{allocate, RegallocOptions};
    let opts = RegallocOptions {
        vgpr_budget: budget,
        sgpr_budget: None,
        run_checker: true,
    };
    allocate(mf, &opts).ok().map(|f| f.usage)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// A kernel that fits in R registers without a budget gets the same allocation, without
    /// spills, under every budget >= R; every budget is honoured. (That a larger budget never
    /// spills more is not guaranteed in the spilling regime: regalloc2 with more registers
    /// occasionally spills a few more values, e.g. gfx942 seed 18382, 16 vs 21.)
    #[test]
    fn budgets_are_monotonic(seed in 0u64..100_000, t in 0usize..3, a in 8u32..160, b in 8u32..160) {
        let t = ALL_TARGETS[t];
        let mf = program(t, seed);
        let free = usage_under(&mf, None).unwrap_or_else(|| panic!("{}", kjit_backend_gcn::regalloc::allocate(&mf, &kjit_backend_gcn::regalloc::RegallocOptions { vgpr_budget: None, sgpr_budget: None, run_checker: true }).unwrap_err()));
        let r = free.budget_registers();
        if free.spills() == 0 {
            for budget in [r, r + 1, r + 8, t.register_file_per_lane()] {
                let u = usage_under(&mf, Some(budget)).expect("fits");
                proptest::prop_assert_eq!(u, free, "{} seed {} budget {} (fits in {})", t, seed, budget, r);
            }
        }
        // Every budget is honoured (or refused with an error).
        for budget in [a, b] {
            if let Some(u) = usage_under(&mf, Some(budget)) {
                proptest::prop_assert!(u.budget_registers() <= budget, "{} seed {} budget {}: {:?}", t, seed, budget, u);
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    /// Through the whole compile (schedule, allocation) at every occupancy level of the target:
    /// a larger level budget never keeps more in memory (scratch bytes, then values in AGPR
    /// slots) than a smaller one, and a program that compiles without a budget into R registers
    /// without spills compiles without spills at every level whose budget is >= R — to the
    /// same code where the level sets no SGPR budget (gfx900's 9 and 10 waves do, and regalloc2
    /// then gets fewer SGPRs). (Slots in spare VGPRs are registers and are not counted:
    /// `docs/regalloc.md`.)
    #[test]
    fn occupancy_levels_never_spill_more_at_a_larger_budget(seed in 0u64..100_000, t in 0usize..3) {
        check_occupancy_levels(ALL_TARGETS[t], seed)?;
    }
}

/// The body of `occupancy_levels_never_spill_more_at_a_larger_budget` for one program.
fn check_occupancy_levels(
    t: Target,
    seed: u64,
) -> Result<(), proptest::test_runner::TestCaseError> {
    use kjit_backend_gcn::compile::{
        compile_selected, occupancy_budgets, CompileOptions, Selected,
    };
    use proptest::{prop_assert, prop_assert_eq};
    let sel = Selected::from_mir(program(t, seed));
    let opts = |occupancy| CompileOptions {
        optimize: false,
        check: true,
        occupancy,
        vgpr_budget: None,
        kernarg_preload: true,
    };
    let free = compile_selected(&sel, &opts(None)).expect("compiles without a budget");
    let h = &free.header;
    let r = if h.agprs > 0 {
        h.vgprs.div_ceil(4) * 4 + h.agprs
    } else {
        h.vgprs
    };
    // Levels from the smallest budget up.
    let mut smaller: Option<(u32, (u32, u32))> = None;
    for w in (1..=t.max_waves_per_simd()).rev() {
        let budget = t.registers_for_waves_per_simd(w);
        let Ok(k) = compile_selected(&sel, &opts(Some(w))) else {
            continue;
        };
        let memory = (k.header.scratch_bytes, k.header.spills_agpr);
        if let Some((b, m)) = smaller {
            prop_assert!(
                memory <= m,
                "{} seed {}: budget {} keeps {:?} in memory, smaller budget {} {:?}",
                t,
                seed,
                budget,
                memory,
                b,
                m
            );
        }
        smaller = Some((budget, memory));
        if h.spills == 0 && budget >= r {
            prop_assert_eq!(
                k.header.spills,
                0,
                "{} seed {} budget {} >= {}",
                t,
                seed,
                budget,
                r
            );
            let sgpr_budget = occupancy_budgets(t, w)
                .expect("a level of the target")
                .sgprs;
            prop_assert!(
                sgpr_budget.is_some() || k.code_object == free.code_object,
                "{} seed {}: budget {} >= {} changed the code",
                t,
                seed,
                budget,
                r
            );
        }
    }
    Ok(())
}

/// Seeds the proptest above found: gfx900 seed 24909 (an LDS pair's dwords grouped with
/// singles changed the code at a budget equal to the unbudgeted allocation's registers).
#[test]
fn occupancy_levels_found_seeds() {
    for seed in [24909] {
        for t in ALL_TARGETS {
            check_occupancy_levels(t, seed).unwrap_or_else(|e| panic!("{t} seed {seed}: {e}"));
        }
    }
}

/// A budget of exactly the registers the default compile takes (it keeps everything in
/// registers) compiles to the default's code. On p15 (before `back_allocated`'s "a budget the
/// default fits gets its code") gfx900 seed 24909 at occupancy 5 did not: its budget 48 was
/// the unbudgeted allocation's 48 VGPRs, but the latency schedule's counted pressure was 54
/// (the VGPR layout puts singles on pair dwords), so `allocate_in_budget` skipped that schedule
/// and compiled one bounded at 42; this test failed there for most of these programs.
#[test]
fn a_budget_of_the_default_registers_keeps_its_code() {
    use kjit_backend_gcn::compile::{compile_selected, CompileOptions, Selected};
    let opts = |vgpr_budget| CompileOptions {
        optimize: false,
        check: true,
        occupancy: None,
        vgpr_budget,
        kernarg_preload: true,
    };
    let mut failed = Vec::new();
    for t in ALL_TARGETS {
        for seed in (0..SCAN).chain([24909]) {
            let sel = Selected::from_mir(program(t, seed));
            let Ok(default) = compile_selected(&sel, &opts(None)) else {
                continue;
            };
            let h = &default.header;
            if h.spills != 0 || h.agprs != 0 {
                continue;
            }
            let k = compile_selected(&sel, &opts(Some(h.vgprs))).expect("fits its own registers");
            if k.code_object != default.code_object {
                failed.push((t, seed, h.vgprs, k.header.vgprs, k.header.instructions));
            }
        }
    }
    assert!(failed.is_empty(), "{failed:?}");
}
/// Random programs per target that `a_budget_of_the_default_registers_keeps_its_code` checks.
const SCAN: u64 = 200;

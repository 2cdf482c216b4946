//! The VGPR budget really moves the allocation: a register-hungry kernel (written with the
//! builder; 120 f32 values live at once per work-item) compiled at decreasing budgets on every
//! target still gives exactly what the IR interpreter gives on kjit's software GCN device,
//! while the descriptor's VGPR count drops and spills appear in the header.

use kjit::exec::run_case;
use kjit::{compile, CompileOptions};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_frontend::{Dim, KernelBuilder};
use kjit_ir::interp::{Arg, BufferData, LaunchDims};
use kjit_kernels::Case;
use kjit_runtime::emu::gcn::GcnEmulator;

const LIVE: usize = 120;

/// `out[i] = sum_k (x[i] * a_k + b_k) * c_k`, with every product computed before the sum so all
/// `LIVE` of them are live at once; two more outputs read the first and last value again.
fn hungry() -> kjit_ir::Function {
    let k = KernelBuilder::new("hungry");
    let x = k.buffer::<f32>("x");
    let out = k.buffer_mut::<f32>("out");
    let i = k.global_id(Dim::X);
    let v = k.load(&x, i);
    let vals: Vec<_> = (0..LIVE)
        .map(|j| v * k.lit(1.0 + j as f32 / 64.0) + k.lit(j as f32 * 0.25))
        .collect();
    let mut acc = vals[LIVE - 1] * k.lit(0.5);
    for (j, &w) in vals.iter().enumerate().rev().skip(1) {
        acc = acc + w * k.lit(0.75 + (j % 7) as f32 / 8.0);
    }
    // read every value once more after the sum (keeps all of them live across it)
    let mut acc2 = vals[0];
    for &w in &vals[1..] {
        acc2 = acc2 - w;
    }
    let n = k.lit(3u32);
    k.store(&out, i * n, acc);
    k.store(&out, i * n + k.lit(1u32), acc2);
    k.store(&out, i * n + k.lit(2u32), vals[LIVE / 2]);
    k.finish().expect("kernel builds")
}

fn case(n: usize) -> Case {
    let x: Vec<f32> = (0..n).map(|j| (j as f32 * 0.37).sin() * 8.0).collect();
    Case {
        n,
        args: vec![
            Arg::Buffer(BufferData::F32(x)),
            kjit_kernels::poisoned(kjit_ir::ElemType::F32, 3 * n),
        ],
        launch: LaunchDims {
            grid: [(n as u32).div_ceil(64), 1, 1],
            block: [64, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![1],
    }
}

#[test]
fn decreasing_budgets_spill_more_and_stay_correct() {
    let func = hungry();
    let dev = GcnEmulator::new();
    let c = case(100);
    let mut want = c.args.clone();
    kjit_ir::interp::run(&func, &c.launch, &mut want).expect("interpreter runs");
    let expected = want[1].as_buffer().expect("buffer").clone();
    let mut failures = Vec::new();
    for t in ALL_TARGETS {
        let budgets: &[Option<u32>] = &[
            None,
            Some(256),
            Some(128),
            Some(96),
            Some(84),
            Some(64),
            Some(48),
            Some(32),
        ];
        let mut last_vgprs = u32::MAX;
        let mut spills_at_64 = 0;
        let mut no_budget_vgprs = 0;
        for &budget in budgets {
            let opts = CompileOptions {
                optimize: false,
                vgpr_budget: budget,
                occupancy: None,
                check: true,
                kernarg_preload: true,
            };
            let ck = match compile(&func, t, &opts) {
                Ok(k) => k,
                Err(e) => {
                    failures.push(format!("{t} {budget:?}: compile: {e}"));
                    continue;
                }
            };
            let h = &ck.header;
            eprintln!(
                "{t} budget {budget:?}: vgprs {} agprs {} sgprs {} scratch {} spills {} occupancy {} instructions {}",
                h.vgprs, h.agprs, h.sgprs, h.scratch_bytes, h.spills, h.occupancy, h.instructions
            );
            if let Some(b) = budget {
                let regs = if t.has_agprs() {
                    h.vgprs.div_ceil(4) * 4 + h.agprs
                } else {
                    h.vgprs
                };
                if regs > b {
                    failures.push(format!("{t} {b}: {regs} registers over budget"));
                }
                if h.vgprs > last_vgprs {
                    failures.push(format!("{t} {b}: VGPRs grew ({} > {last_vgprs})", h.vgprs));
                }
                last_vgprs = h.vgprs;
                if b == 64 {
                    spills_at_64 = h.spills;
                    if h.scratch_bytes == 0 {
                        failures.push(format!("{t} 64: {LIVE} live values without scratch?"));
                    }
                }
            } else {
                no_budget_vgprs = h.vgprs;
                if h.scratch_bytes != 0 {
                    failures.push(format!("{t}: scratch without a budget"));
                }
            }
            match run_case(&dev, &ck.code_object, &func, &c) {
                Ok(out) => {
                    let got = out.outputs[0].clone();
                    if got != expected {
                        failures.push(format!(
                            "{t} {budget:?}: results differ from the interpreter"
                        ));
                    }
                }
                Err(e) => failures.push(format!("{t} {budget:?}: run: {e}")),
            }
        }
        if no_budget_vgprs <= 64 {
            failures.push(format!(
                "{t}: {LIVE} live values fit in {no_budget_vgprs} VGPRs?"
            ));
        }
        if spills_at_64 == 0 {
            failures.push(format!("{t}: no spills reported at budget 64"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every library kernel at every occupancy level of every target: the kernel reaches the level
/// (or the level is refused with a clear error that names what holds it), stays correct on the
/// software device, a kernel that fits in R registers without a budget compiles to the same
/// code, without spills, under every budget >= R, and a higher level (smaller budget) never
/// keeps less in memory (scratch bytes, then AGPR slots) than a lower one.
#[test]
fn library_kernels_at_every_occupancy_level() {
    use kjit_backend_gcn::compile::CompileError;
    let dev = GcnEmulator::new();
    let mut failures = Vec::new();
    let mut refused = 0;
    for spec in kjit_kernels::all() {
        let func = (spec.build)().expect("builds");
        let c = (spec.make_case)(spec.default_n.min(256), 7);
        let want = (spec.reference)(&c);
        for t in ALL_TARGETS {
            let free = compile(&func, t, &CompileOptions::default()).expect("compiles");
            let h = &free.header;
            let r = if h.agprs > 0 {
                h.vgprs.div_ceil(4) * 4 + h.agprs
            } else {
                h.vgprs
            };
            // Slots in spare VGPRs are registers (counted in `vgprs`): a kernel that keeps
            // everything in R registers gets the same code under every budget >= R, whether or
            // not regalloc2 needed spare-VGPR slots for it (gemm_f32 on gfx942 does).
            if h.scratch_bytes == 0 && h.spills_agpr == 0 {
                for b in [r, r + 1, t.register_file_per_lane()] {
                    let k = compile(
                        &func,
                        t,
                        &CompileOptions {
                            vgpr_budget: Some(b),
                            ..Default::default()
                        },
                    )
                    .expect("fits");
                    if k.code_object != free.code_object {
                        failures.push(format!(
                            "{} {t}: budget {b} >= {r} changed the code",
                            spec.name
                        ));
                    }
                }
            }
            // (level, scratch bytes and AGPR slots) of the last level compiled: a larger budget.
            let mut larger: Option<(u32, (u32, u32))> = None;
            for w in 1..=t.max_waves_per_simd() {
                let opts = CompileOptions {
                    occupancy: Some(w),
                    ..Default::default()
                };
                let k = match compile(&func, t, &opts) {
                    Ok(k) => k,
                    Err(e @ CompileError::OccupancyUnreachable { .. }) => {
                        refused += 1;
                        assert!(e.to_string().contains("limited by"), "{e}");
                        continue;
                    }
                    Err(e) => {
                        failures.push(format!("{} {t} occupancy {w}: {e}", spec.name));
                        continue;
                    }
                };
                if k.header.occupancy < w {
                    failures.push(format!(
                        "{} {t} occupancy {w}: reaches {}",
                        spec.name, k.header.occupancy
                    ));
                }
                let memory = (k.header.scratch_bytes, k.header.spills_agpr);
                if let Some((l, m)) = larger.filter(|&(_, m)| m > memory) {
                    failures.push(format!(
                        "{} {t}: occupancy {l} keeps {m:?} (scratch bytes, AGPR slots) in memory, the smaller budget of {w} only {memory:?}",
                        spec.name
                    ));
                }
                larger = Some((w, memory));
                match run_case(&dev, &k.code_object, &func, &c) {
                    Ok(out) => {
                        if let Err(m) = kjit_kernels::check(&c, &out.args, &want, spec.tolerance) {
                            failures.push(format!("{} {t} occupancy {w}: {m}", spec.name));
                        }
                    }
                    Err(e) => failures.push(format!("{} {t} occupancy {w}: run: {e}", spec.name)),
                }
            }
        }
    }
    eprintln!("{refused} levels refused as unreachable");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn impossible_occupancy_is_a_clear_error() {
    use kjit_backend_gcn::compile::CompileError;
    let func = hungry();
    for (t, w) in [
        (kjit_backend_gcn::Target::Gfx942, 9),
        (kjit_backend_gcn::Target::Gfx900, 11),
        (kjit_backend_gcn::Target::Gfx90a, 0),
    ] {
        let e = compile(
            &func,
            t,
            &CompileOptions {
                occupancy: Some(w),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(
            matches!(e, CompileError::BadOccupancy { occupancy, .. } if occupancy == w),
            "{e}"
        );
        assert!(e.to_string().contains("out of range"), "{e}");
    }
    // 120 live values at 8 waves/SIMD (64 VGPRs) spill but reach the level.
    let k = compile(
        &func,
        kjit_backend_gcn::Target::Gfx942,
        &CompileOptions {
            occupancy: Some(8),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(k.header.occupancy, 8);
    assert!(
        k.header.spills > 0 && k.header.vgprs <= 64,
        "{:?}",
        k.header
    );
}

/// gemm_f32 at occupancy 4 on gfx942 (a VGPR+AGPR budget of 128): no order of its code keeps
/// fewer VGPRs live than the budget, and the order bounded to fit it runs out of SGPRs. The
/// error names the VGPR budget as the cause (it said only "out of SGPRs (limit 102)"), with
/// the SGPR failure as the detail.
#[test]
fn a_vgpr_budget_too_small_is_named_when_another_file_runs_out() {
    use kjit_backend_gcn::compile::CompileError;
    use kjit_backend_gcn::regalloc::RegallocError;
    let spec = kjit_kernels::matrix()
        .iter()
        .find(|s| s.name == "gemm_f32")
        .expect("gemm_f32 is a matrix kernel");
    let func = (spec.build)().expect("builds");
    let t = kjit_backend_gcn::Target::Gfx942;
    let opts = CompileOptions {
        occupancy: Some(4),
        ..Default::default()
    };
    let e = compile(&func, t, &opts).unwrap_err();
    let CompileError::Regalloc(RegallocError::VgprBudgetTooSmall {
        budget,
        floor,
        cause,
        ..
    }) = &e
    else {
        panic!("not a VGPR budget error: {e}");
    };
    assert_eq!(*budget, t.registers_for_waves_per_simd(4), "{e}");
    assert!(*floor > *budget, "{e}");
    assert!(
        matches!(**cause, RegallocError::OutOfRegisters { file: "SGPR", .. }),
        "{e}"
    );
    let text = e.to_string();
    assert!(text.contains("VGPR budget 128 is too small"), "{text}");
    assert!(text.contains("out of SGPRs"), "{text}");
    // The level below (a budget of 168) compiles.
    let opts = CompileOptions {
        occupancy: Some(3),
        ..Default::default()
    };
    assert!(compile(&func, t, &opts).is_ok());
}

/// Allocation time per library kernel (printed; `cargo test --test vgpr_budget -- --ignored --nocapture`).
#[test]
#[ignore]
fn regalloc_time_per_kernel() {
    for spec in kjit_kernels::all() {
        let func = (spec.build)().expect("kernel builds");
        let opts = CompileOptions {
            optimize: true,
            vgpr_budget: None,
            occupancy: None,
            check: false,
            kernarg_preload: true,
        };
        let mut best = std::time::Duration::MAX;
        let mut summary = String::new();
        for _ in 0..20 {
            let ck = compile(&func, kjit_backend_gcn::Target::Gfx942, &opts).expect("compiles");
            if ck.timings.regalloc < best {
                best = ck.timings.regalloc;
                summary = ck.timings.summary();
            }
        }
        eprintln!("{:24} regalloc {:?}  ({summary})", spec.name, best);
    }
}

/// The occupancy target bounds the schedule: `hash_rounds` (121 VGPRs after the latency
/// schedule, which hoists all 40 loads of a round) compiles at gfx942 occupancy 5..8 with every
/// value in registers — no scratch, no AGPR slots — and fewer VGPRs at each higher level, and
/// stays correct. Before the bounded schedule, occupancy 5 put 28 values in scratch and 8 put 81.
#[test]
fn hash_rounds_fits_higher_occupancy_without_scratch() {
    let t = kjit_backend_gcn::Target::Gfx942;
    let spec = kjit_kernels::find("hash_rounds").unwrap();
    let func = (spec.build)().expect("builds");
    let c = (spec.make_case)(256, 3);
    let want = (spec.reference)(&c);
    let dev = GcnEmulator::new();
    let mut last = u32::MAX;
    for w in 5..=t.max_waves_per_simd() {
        let opts = CompileOptions {
            occupancy: Some(w),
            ..Default::default()
        };
        let k = compile(&func, t, &opts).expect("compiles");
        let h = &k.header;
        eprintln!(
            "occupancy {w}: {} VGPRs, {} spills, {} B scratch",
            h.vgprs, h.spills, h.scratch_bytes
        );
        assert_eq!(h.scratch_bytes, 0, "occupancy {w}: scratch");
        assert_eq!(h.agprs, 0, "occupancy {w}: AGPRs");
        assert!(h.occupancy >= w);
        assert!(
            h.vgprs < last,
            "occupancy {w}: {} VGPRs, not fewer than {last}",
            h.vgprs
        );
        last = h.vgprs;
        let out = run_case(&dev, &k.code_object, &func, &c).expect("runs");
        kjit_kernels::check(&c, &out.args, &want, spec.tolerance).expect("correct");
    }
}

/// The longest run of `buffer_load_dword` instructions in a row in `asm`: the gathers of a
/// `hash_rounds` round issued together.
fn longest_load_burst(asm: &str) -> usize {
    let (mut run, mut most) = (0, 0);
    for line in asm.lines().map(str::trim) {
        if line.starts_with("buffer_load_dword ") {
            run += 1;
            most = most.max(run);
        } else if !line.is_empty() && !line.starts_with(';') {
            run = 0;
        }
    }
    most
}

/// Without a budget, `hash_rounds`' latency schedule issues a round's 40 gathers in one burst
/// and still fits 5 waves per SIMD on gfx942 (≤ 96 VGPRs): the rotations after the loads (a
/// short ALU tail) go one chain at a time. Breadth first by height they held 40 more VGPRs
/// (121, 4 waves) for no latency hidden.
#[test]
fn hash_rounds_latency_schedule_keeps_the_burst_in_five_waves() {
    let spec = kjit_kernels::find("hash_rounds").unwrap();
    let func = (spec.build)().expect("builds");
    let k = compile(
        &func,
        kjit_backend_gcn::Target::Gfx942,
        &CompileOptions::default(),
    )
    .expect("compiles");
    assert_eq!(longest_load_burst(&k.asm), 40, "{}", k.asm);
    assert!(k.header.vgprs <= 96, "{} VGPRs", k.header.vgprs);
    assert!(k.header.occupancy >= 5);
}

/// Under a budget of 90 VGPRs on gfx942 the first bounded schedule (79) puts values in
/// scratch; the guided bound after it (less by the dwords in scratch) is tried before the
/// fixed 67, so a round keeps more of its gathers in one burst (33 of 40; the fixed bounds
/// alone: 26), every value in registers.
#[test]
fn a_guided_bound_keeps_more_loads_hoisted_inside_the_budget() {
    let spec = kjit_kernels::find("hash_rounds").unwrap();
    let func = (spec.build)().expect("builds");
    let opts = CompileOptions {
        vgpr_budget: Some(90),
        ..Default::default()
    };
    let k = compile(&func, kjit_backend_gcn::Target::Gfx942, &opts).expect("compiles");
    assert_eq!(k.header.scratch_bytes, 0);
    assert!(k.header.vgprs <= 90);
    let burst = longest_load_burst(&k.asm);
    assert!(burst >= 30, "burst of {burst} loads\n{}", k.asm);
}

/// What a tuner does — every occupancy level compiled from one selected kernel, which shares
/// schedules, regalloc2 runs, allocations and finished code between the levels — gives each
/// level exactly the code (or the error) of a compile of that level alone, in either order.
#[test]
fn a_sweep_from_one_selected_kernel_compiles_each_level_as_alone() {
    use kjit_backend_gcn::compile::{compile_selected, select_kernel};
    let mut failures = Vec::new();
    for spec in kjit_kernels::all() {
        let func = (spec.build)().expect("builds");
        for t in ALL_TARGETS {
            let levels: Vec<u32> = (1..=t.max_waves_per_simd()).collect();
            let alone: Vec<_> = levels
                .iter()
                .map(|&w| {
                    let o = CompileOptions {
                        occupancy: Some(w),
                        ..Default::default()
                    };
                    compile(&func, t, &o).map(|k| (k.code_object, k.asm))
                })
                .collect();
            let sel = select_kernel(&func, t, &CompileOptions::default()).expect("selects");
            let ascending: Vec<usize> = (0..levels.len()).collect();
            let descending: Vec<usize> = (0..levels.len()).rev().collect();
            for order in [ascending, descending] {
                let fresh = sel.clone();
                for i in order {
                    let o = CompileOptions {
                        occupancy: Some(levels[i]),
                        ..Default::default()
                    };
                    let swept = compile_selected(&fresh, &o).map(|k| (k.code_object, k.asm));
                    if swept != alone[i] {
                        failures.push(format!("{} {t} occupancy {}", spec.name, levels[i]));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "differ from a compile alone:\n{}",
        failures.join("\n")
    );
}

/// The pressure floor the compile driver refuses bounded schedules by without making them
/// (`schedule::vgpr_pressure_floor`) is never above the VGPR pressure of a schedule: the
/// latency schedule and bounded schedules from tight to loose, every library kernel (matrix
/// kernels where the target has them), every target. A floor above a real schedule's pressure
/// would refuse a schedule the budget could hold and change the code of that level.
#[test]
fn the_pressure_floor_is_below_every_schedule() {
    use kjit_backend_gcn::schedule::{schedule_bounded, vgpr_pressure, vgpr_pressure_floor};
    let mut checked = 0;
    for t in ALL_TARGETS {
        for spec in kjit_kernels::all().iter().chain(kjit_kernels::matrix()) {
            let func = kjit_ir::opt::optimize(&(spec.build)().expect("builds")).0;
            let Ok(mf) = kjit_backend_gcn::isel::select(&func, t) else {
                continue; // matrix kernels on a target without matrix cores
            };
            let floor = vgpr_pressure_floor(&mf);
            for bound in [
                None,
                Some(16),
                Some(40),
                Some(56),
                Some(84),
                Some(112),
                Some(147),
            ] {
                let mut s = mf.clone();
                schedule_bounded(&mut s, bound);
                let p = vgpr_pressure(&s);
                assert!(
                    floor <= p,
                    "{} on {t}: floor {floor} above the pressure {p} of the schedule bounded by {bound:?}",
                    spec.name
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 3 * 13 * 7, "only {checked} schedules checked");
}

/// No bounded schedule of a kernel without VGPR pairs keeps more singles live than regalloc2's
/// two 64-register classes hold (the overflow goes to `Vector`, docs/regalloc.md): such a
/// schedule spills from both full classes, regalloc2's costliest run (hash_lanes' level-3 probe
/// at bound 147 kept 148 live). A kernel with pairs keeps the budget's own highest bound.
#[test]
fn bounded_schedules_without_pairs_fit_regalloc2s_two_classes() {
    use kjit_backend_gcn::compile::{occupancy_budgets, schedule_bounds, Selected};
    use kjit_backend_gcn::regalloc::two_class_singles;
    use kjit_backend_gcn::schedule::{schedule_bounded, vgpr_pressure};
    let t = kjit_backend_gcn::Target::Gfx942;
    let level3 = occupancy_budgets(t, 3).expect("level 3").vgprs;
    let mut with_pairs = 0;
    for spec in kjit_kernels::all().iter().chain(kjit_kernels::matrix()) {
        let func = kjit_ir::opt::optimize(&(spec.build)().expect("builds")).0;
        let Ok(mf) = kjit_backend_gcn::isel::select(&func, t) else {
            continue; // a matrix kernel this target cannot select
        };
        let sel = Selected::from_mir(mf.clone());
        let bounds = schedule_bounds(&sel, level3);
        match two_class_singles(&mf) {
            Some(held) => {
                assert_eq!(held, 128, "{}", spec.name);
                assert!(
                    bounds.iter().all(|&b| b <= 112),
                    "{}: {bounds:?}",
                    spec.name
                );
                if spec.name == "hash_lanes" || spec.name == "hash_lanes_wide" {
                    let mut s = mf.clone();
                    schedule_bounded(&mut s, Some(bounds[0]));
                    let p = vgpr_pressure(&s);
                    assert!(
                        p <= held,
                        "{}: bound {} keeps {p} live",
                        spec.name,
                        bounds[0]
                    );
                }
            }
            None => {
                with_pairs += 1;
                assert_eq!(bounds[0], level3 - level3 / 8, "{}", spec.name);
            }
        }
    }
    assert!(with_pairs > 0, "no kernel with VGPR pairs checked");
}

/// (instructions but the terminators, `s_waitcnt`s, VGPRs) of allocated code.
fn counts(p: &kjit_backend_gcn::phys::PhysFunction) -> (usize, usize, u32) {
    let insts = p.blocks.iter().flat_map(|b| &b.insts);
    let waits = insts
        .clone()
        .filter(|i| i.op == kjit_backend_gcn::isa::Opcode::SWaitcnt)
        .count();
    (insts.count(), waits, p.usage.vgprs)
}

/// The latency schedule's allocation without a budget, with its waits and wait states — what
/// the default compile was before its occupancy policy (no compile option gives it any more
/// where the default fits a budget): its [`counts`].
fn latency_schedule_unbudgeted(
    func: &kjit_ir::Function,
    t: kjit_backend_gcn::Target,
) -> (usize, usize, u32) {
    use kjit_backend_gcn::{hazards, isel, peephole, regalloc, schedule, waitcnt};
    let func = kjit_ir::opt::optimize(func).0;
    let mut mf = isel::select(&func, t).expect("selects");
    schedule::schedule(&mut mf);
    let opts = regalloc::RegallocOptions {
        vgpr_budget: None,
        sgpr_budget: None,
        run_checker: false,
    };
    let mut p = regalloc::allocate(&mf, &opts).expect("allocates");
    peephole::run_peepholes(&mut p);
    waitcnt::insert_waitcnt(&mut p);
    hazards::insert_wait_states(&mut p);
    counts(&p)
}

/// The default compile's occupancy policy (`compile::default_allocation`): hash_chain's
/// lookups form one dependence chain, so the latency schedule's extra VGPRs (119 on gfx942, 4
/// waves) keep no more loads in flight than a schedule bounded by a higher level. The default
/// takes that level: every value in a VGPR (nothing in scratch, SGPRs or AGPRs; a spill slot
/// packed among the values in the VGPR layout is a VGPR too, and costs no instruction more: see
/// the count below), at most 64 VGPRs and 8 waves per SIMD on gfx942 and gfx90a, with no more
/// instructions or `s_waitcnt`s than the latency schedule's allocation. The default's code is `--occupancy` at the level
/// `default_level` names, every budget it fits gives it too, and results stay correct.
#[test]
fn the_default_hash_chain_fits_eight_waves_without_spills() {
    use kjit_backend_gcn::compile::{default_level, select_kernel};
    use kjit_backend_gcn::Target;
    let spec = kjit_kernels::find("hash_chain").unwrap();
    let func = (spec.build)().expect("builds");
    let c = (spec.make_case)(256, 5);
    let want = (spec.reference)(&c);
    let dev = GcnEmulator::new();
    for t in [Target::Gfx942, Target::Gfx90a] {
        let k = compile(&func, t, &CompileOptions::default()).expect("compiles");
        let h = &k.header;
        assert_eq!(
            (h.spills_scratch, h.spills_sgpr, h.spills_agpr),
            (0, 0, 0),
            "{t}: {h:?}"
        );
        assert!(h.vgprs <= 64 && h.occupancy == 8, "{t}: {h:?}");
        let phys = kjit_backend_gcn::compile::compile_to_phys(&func, t, &Default::default())
            .expect("compiles");
        let (insts, waits, _) = counts(&phys);
        let (latency_insts, latency_waits, latency_vgprs) = latency_schedule_unbudgeted(&func, t);
        assert!(latency_vgprs > 64, "{t}: {latency_vgprs}");
        assert!(insts <= latency_insts, "{t}: {insts} > {latency_insts}");
        assert!(waits <= latency_waits, "{t}: {waits} > {latency_waits}");
        let sel = select_kernel(&func, t, &CompileOptions::default()).expect("selects");
        let level = default_level(&sel, false)
            .expect("compiles")
            .expect("an occupancy level above the latency schedule's");
        for o in [Some(level), Some(1), Some(8)] {
            let at = CompileOptions {
                occupancy: o,
                ..Default::default()
            };
            let other = compile(&func, t, &at).expect("compiles");
            assert_eq!(other.code_object, k.code_object, "{t}: level {o:?}");
        }
        let out = run_case(&dev, &k.code_object, &func, &c).expect("runs");
        kjit_kernels::check(&c, &out.args, &want, spec.tolerance).expect("correct");
    }
}

/// The policy keeps the latency schedule where its VGPRs buy loads in flight: hash_rounds'
/// default keeps a round's 40 gathers in one burst (83 VGPRs, 5 waves on gfx942) although
/// bounded schedules fit up to 8 waves with the same instruction count — on the timing model
/// those are 0.61–0.69× as fast (`kjit tune hash_rounds -n 65536`, docs/tune.md).
#[test]
fn the_default_hash_rounds_keeps_its_loads_in_flight() {
    use kjit_backend_gcn::compile::{default_level, select_kernel};
    let spec = kjit_kernels::find("hash_rounds").unwrap();
    let func = (spec.build)().expect("builds");
    for t in ALL_TARGETS {
        let sel = select_kernel(&func, t, &CompileOptions::default()).expect("selects");
        assert_eq!(default_level(&sel, false).expect("compiles"), None, "{t}");
        let k = compile(&func, t, &CompileOptions::default()).expect("compiles");
        assert_eq!(longest_load_burst(&k.asm), 40, "{t}");
    }
}

/// hash_rounds' latency schedule has at most 83 VGPRs live at an instruction (an instruction's
/// last read and another value's write kept apart, as the VGPR layout keeps them), but
/// regalloc2's 64 `Float` registers plus 28 spill slots, each slot color on a spare VGPR above
/// the layout, took 92. With every PReg's values split into webs over the CFG and the slots'
/// values packed among them (`regalloc/vgprs.rs`), the default fits clang-19's 83 on every
/// target (82 with late defs: an untied result may take a source dying there) with nothing in
/// scratch or AGPRs, and the results stay correct.
#[test]
fn hash_rounds_spill_slots_share_the_layouts_holes() {
    let spec = kjit_kernels::find("hash_rounds").unwrap();
    let func = (spec.build)().expect("builds");
    let c = (spec.make_case)(256, 3);
    let want = (spec.reference)(&c);
    let dev = GcnEmulator::new();
    for t in ALL_TARGETS {
        let k = compile(&func, t, &CompileOptions::default()).expect("compiles");
        let h = &k.header;
        assert!(h.vgprs <= 83, "{t}: {h:?}");
        assert!(h.spills_vgpr > 0, "{t}: the slots are still used: {h:?}");
        assert_eq!(h.scratch_bytes + h.spills_agpr, 0, "{t}: {h:?}");
        let out = run_case(&dev, &k.code_object, &func, &c).expect("runs");
        kjit_kernels::check(&c, &out.args, &want, spec.tolerance).expect("correct");
    }
}

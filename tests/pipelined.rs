//! Pipelined tile loops (`KernelBuilder::pipeline`, `docs/pipelining.md`) end to end: the
//! persistent double-buffered vector add, a workgroup-shared tile kernel, the pipelined matmul
//! and the LDS-halo stencil, 1-4 stages, on
//! gfx942/gfx90a/gfx900, run on kjit's software device under random wave schedules (its
//! waitcnt, wait-state and LDS race checks make a launch fail) and compared with the IR
//! interpreter; the steady state keeps loads in flight (no `vmcnt(0)`) and loads straight to
//! LDS; the persistent launch helper sizes the grid by compute units.

use kjit::exec::run_case;
use kjit::ir::Function;
use kjit::{compile, CompileOptions};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_backend_gcn::Target;
use kjit_frontend::{Dim, KernelBuilder, TileSharing};
use kjit_kernels::pipelined::{build_vector_add_pipelined, case_with_grid};
use kjit_kernels::Case;
use kjit_runtime::emu::gcn::GcnEmulator;
use kjit_runtime::emu::scheduler::{RunConfig, Schedule};
use kjit_runtime::{Device, LaunchDims};

fn opts() -> CompileOptions {
    CompileOptions {
        optimize: true,
        vgpr_budget: None,
        occupancy: None,
        check: true,
    }
}

/// Runs `case` on the device (random schedule from `seed`) and in the interpreter; returns a
/// failure message if the outputs differ or the device reports anything.
fn differ(func: &Function, target: Target, case: &Case, seed: u64) -> Option<String> {
    differ_within(func, target, case, seed, kjit_kernels::Tolerance::EXACT)
}

/// As [`differ`], within `tol`.
fn differ_within(
    func: &Function,
    target: Target,
    case: &Case,
    seed: u64,
    tol: kjit_kernels::Tolerance,
) -> Option<String> {
    let ck = match compile(func, target, &opts()) {
        Ok(k) => k,
        Err(e) => return Some(format!("compile: {e}")),
    };
    let dev = GcnEmulator::with_config(RunConfig {
        schedule: Schedule::Random(seed),
        ..RunConfig::default()
    });
    let mut want = case.args.clone();
    if let Err(e) = kjit_ir::interp::run(func, &case.launch, &mut want) {
        return Some(format!("interpreter: {e}"));
    }
    let expected: Vec<_> = case
        .outputs
        .iter()
        .map(|&o| want[o].as_buffer().expect("output").clone())
        .collect();
    match run_case(&dev, &ck.code_object, func, case) {
        Ok(out) => kjit_kernels::check(case, &out.args, &expected, tol)
            .err()
            .map(|m| m.to_string()),
        Err(e) => Some(format!("device: {e}")),
    }
}

#[test]
fn persistent_vector_add_matches_the_interpreter_for_every_stage_count_target_and_grid() {
    let mut failures = Vec::new();
    for stages in 1..=4 {
        let func = build_vector_add_pipelined(stages).expect("builds");
        for t in ALL_TARGETS {
            for grid in [304u32, 7] {
                for n in [1usize, 64, 256, 257, 1000, 1024] {
                    let case = case_with_grid(n, n as u64 + stages as u64, grid);
                    if let Some(m) = differ(&func, t, &case, 17 * n as u64 + grid as u64) {
                        failures.push(format!("stages {stages} {t} grid {grid} n {n}: {m}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn persistent_vector_add_large_sizes() {
    // Few and on one target each: the interpreter and the device both run every element.
    let func = build_vector_add_pipelined(2).expect("builds");
    let mut failures = Vec::new();
    for (n, grid, t) in [
        (65536usize, 7u32, Target::Gfx90a),
        (65536, 304, Target::Gfx900),
        (1 << 20, 304, Target::Gfx942),
        (4 << 20, 304, Target::Gfx942),
        (4 << 20, 7, Target::Gfx942),
    ] {
        let case = case_with_grid(n, 5, grid);
        if let Some(m) = differ(&func, t, &case, n as u64) {
            failures.push(format!("{t} grid {grid} n {n}: {m}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Workgroup-shared tiles: `c[tile element l] = a[tile element B-1-l]` per 256-element tile,
/// so every work-item reads a word another wave copied (the barriers are needed).
fn reverse_tiles(stages: u32) -> Function {
    let k = KernelBuilder::new("reverse_tiles");
    let a = k.buffer::<u32>("a");
    let c = k.buffer_mut::<u32>("c");
    let n = c.len();
    let p = k.pipeline(stages, TileSharing::Workgroup);
    let tile = p.staged::<u32>("tile", 256);
    let slot = k.lane_slot();
    let lid = k.local_id(Dim::X);
    let stride = k.global_size(Dim::X);
    let first = k.group_id(Dim::X) * k.group_size(Dim::X);
    p.run(
        |t| (first + t * stride).lt(n),
        |s, t| s.copy(&k, &tile, slot, &a, first + t * stride + lid),
        |s, t| {
            let v = k.load(s.buffer(&tile), 255u32 - lid);
            k.store(&c, first + t * stride + lid, v);
        },
    );
    k.finish().expect("builds")
}

fn reverse_case(n: usize, grid: u32) -> Case {
    use kjit_ir::interp::{Arg, BufferData};
    Case {
        n,
        args: vec![
            Arg::Buffer(BufferData::U32((0..n as u32).map(|x| x * 7 + 1).collect())),
            kjit_kernels::poisoned(kjit_ir::ElemType::U32, n),
        ],
        launch: kjit_ir::interp::LaunchDims {
            grid: [grid, 1, 1],
            block: [256, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![1],
    }
}

#[test]
fn workgroup_shared_tiles_match_the_interpreter_with_barriers_for_every_stage_count() {
    let mut failures = Vec::new();
    for stages in 1..=4 {
        let func = reverse_tiles(stages);
        for t in ALL_TARGETS {
            // Sizes that are whole tiles: a partial tile would read words past the end (0 in
            // both, but the comparison would be vacuous there).
            for (n, grid) in [(256usize, 7u32), (2560, 3), (4096, 5)] {
                let case = reverse_case(n, grid);
                if let Some(m) = differ(&func, t, &case, n as u64 * 3 + stages as u64) {
                    failures.push(format!("stages {stages} {t} n {n} grid {grid}: {m}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn steady_state_keeps_the_newest_loads_in_flight_and_loads_straight_to_lds() {
    for t in ALL_TARGETS {
        for stages in 2..=4 {
            let func = build_vector_add_pipelined(stages).expect("builds");
            let asm = compile(&func, t, &opts()).expect("compiles").asm;
            let dma = asm.lines().filter(|l| l.ends_with(" offen lds")).count();
            // 2 inputs x (stages in the prologue + stages in the unrolled steady state).
            assert_eq!(dma, 4 * stages as usize, "{t} stages {stages}:\n{asm}");
            assert!(
                !asm.contains("vmcnt(0)"),
                "{t} stages {stages}: a blanket vmcnt(0) drains the pipeline:\n{asm}"
            );
            let partial = asm
                .lines()
                .filter(|l| l.contains("s_waitcnt vmcnt(") && !l.contains("vmcnt(0)"))
                .count();
            assert!(
                partial >= 2 * stages as usize,
                "{t} stages {stages}:\n{asm}"
            );
        }
    }
}

#[test]
fn single_stage_waits_for_its_only_tile() {
    // One stage: the tile just requested is the one read next, so its wait is vmcnt(0) —
    // the check above would catch a pass that never waits at all.
    let func = build_vector_add_pipelined(1).expect("builds");
    let asm = compile(&func, Target::Gfx942, &opts())
        .expect("compiles")
        .asm;
    assert!(
        asm.contains("vmcnt(0)") || asm.contains("vmcnt(1)"),
        "{asm}"
    );
}

#[test]
fn zero_stages_is_a_builder_error() {
    let k = KernelBuilder::new("bad");
    let a = k.buffer::<f32>("a");
    let p = k.pipeline(0, TileSharing::WavePrivate);
    let tile = p.staged::<f32>("t", 64);
    p.run(
        |t| t.lt(1u32),
        |s, t| s.copy(&k, &tile, k.lane_slot(), &a, t),
        |_, _| {},
    );
    let e = k.finish().expect_err("zero stages is rejected");
    assert!(e.to_string().contains("at least one stage"), "{e}");
}

#[test]
fn persistent_launch_has_one_workgroup_per_compute_unit() {
    let dev = GcnEmulator::new();
    assert_eq!(dev.compute_units(), 304);
    let d = LaunchDims::persistent(&dev, 256);
    assert_eq!((d.grid, d.block), ([304, 1, 1], [256, 1, 1]));
}

#[test]
fn pipelined_matmul_and_stencil_match_the_interpreter_for_every_stage_count_and_target() {
    let mut failures = Vec::new();
    for (name, sizes) in [
        ("matmul_pipelined", &[5usize, 33, 40][..]),
        ("stencil_pipelined", &[5, 70, 201][..]),
    ] {
        let spec = kjit_kernels::find(name).expect("library kernel");
        for stages in 1..=4u32 {
            let func = spec.build_with(&[stages]).expect("builds");
            for t in ALL_TARGETS {
                for &n in sizes {
                    let case = spec.case_with(&[stages], n, n as u64);
                    let seed = n as u64 * 31 + stages as u64;
                    if let Some(m) = differ_within(&func, t, &case, seed, spec.tolerance) {
                        failures.push(format!("{name} stages {stages} {t} n {n}: {m}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

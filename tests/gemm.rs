//! The library's MFMA GEMM (`kernels/src/gemm.rs`) for f16, bf16 and f32 inputs:
//! - the interpreter equals the CPU reference (f64 sum) within the kernel's tolerance, on sizes
//!   that are and are not multiples of the tiles, for several tile choices;
//! - the software device on gfx942 and gfx90a equals the interpreter bit for bit (the same
//!   MFMAs in the same order);
//! - on gfx900 compilation fails naming the MFMA operation.

use kjit::backend_gcn::Target;
use kjit::exec::run_case;
use kjit::ir::interp;
use kjit::kernels::gemm::{
    build_gemm, default_tiles, gemm_case, gemm_reference, GemmTiles, DEFAULT_TILES,
};
use kjit::kernels::{check, Case};
use kjit::CompileOptions;
use kjit_frontend::{f16, FragElem};
use kjit_runtime::emu::gcn::GcnEmulator;

const ELEMS: [FragElem; 3] = [FragElem::F16, FragElem::Bf16, FragElem::F32];

fn spec_of(elem: FragElem) -> &'static kjit::kernels::KernelSpec {
    let name = match elem {
        FragElem::F16 => "gemm",
        FragElem::Bf16 => "gemm_bf16",
        _ => "gemm_f32",
    };
    kjit::kernels::find(name).expect("registered")
}

fn interpret(func: &kjit::ir::Function, case: &Case) -> Vec<kjit::ir::interp::Arg> {
    let mut args = case.args.clone();
    interp::run(func, &case.launch, &mut args).expect("the interpreter runs");
    args
}

/// Runs `case` on the software device for `t` and checks that c equals the interpreter's
/// (`want`) bit for bit; `what` names the case in failures.
fn assert_device_equals(
    dev: &GcnEmulator,
    func: &kjit::ir::Function,
    case: &Case,
    want: &[interp::Arg],
    t: Target,
    what: &str,
) {
    let ck = kjit::compile(func, t, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{what} on {t}: {e}"));
    let out =
        run_case(dev, &ck.code_object, func, case).unwrap_or_else(|e| panic!("{what} on {t}: {e}"));
    assert_eq!(
        out.outputs[0],
        *want[2].as_buffer().unwrap(),
        "{what} on {t}"
    );
}

/// The interpreter's c for `case` within the `elem` kernel's tolerance of the CPU reference,
/// and the device's equal to it bit for bit on each of `targets`.
fn assert_case_equals(
    dev: &GcnEmulator,
    func: &kjit::ir::Function,
    elem: FragElem,
    case: &Case,
    targets: &[Target],
    what: &str,
) {
    let want = interpret(func, case);
    check(
        case,
        &want,
        &gemm_reference(elem, case),
        spec_of(elem).tolerance,
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    for &t in targets {
        assert_device_equals(dev, func, case, &want, t, what);
    }
}

/// Sizes (m, n, k): tile multiples and not, k not a multiple of the fragment length, odd n.
const SIZES: [(u32, u32, u32); 3] = [(128, 128, 32), (70, 38, 75), (33, 65, 18)];

const SMALL: GemmTiles = GemmTiles {
    bm: 64,
    bn: 32,
    bk: 8,
    ..DEFAULT_TILES
};

/// Double-buffered LDS (two stages, one barrier per step) with 64×128 wave tiles: 256×128
/// blocks of four waves along m.
const DOUBLE_WIDE: GemmTiles = GemmTiles {
    bm: 256,
    bn: 128,
    wn: 128,
    stages: 2,
    ..DEFAULT_TILES
};

/// Double buffering with small blocks and steps: k runs over many steps of 8, both stages
/// are reused several times.
const SMALL_DOUBLE: GemmTiles = GemmTiles { stages: 2, ..SMALL };

/// Every tile choice the tests run, for `elem` (the step of [`DOUBLE_WIDE`] is `elem`'s
/// default: two stages of f32 blocks with steps of 32 do not fit the LDS).
fn tile_choices(elem: FragElem) -> [GemmTiles; 5] {
    let bk = default_tiles(elem).bk;
    [
        default_tiles(elem),
        SMALL,
        SMALL_DOUBLE,
        GemmTiles { bk, ..DOUBLE_WIDE },
        // The next step's loads before this step's stores and every sub-step's MFMAs after
        // the last barrier (the n = 64 tiles' choice).
        GemmTiles {
            early: true,
            lead: 0,
            ..SMALL
        },
    ]
}

#[test]
fn interpreter_matches_the_cpu_reference() {
    for elem in ELEMS {
        let spec = spec_of(elem);
        for tiles in tile_choices(elem) {
            let func = build_gemm("gemm", elem, tiles).expect("builds");
            for dims in SIZES {
                let case = gemm_case(elem, tiles, dims, 7);
                let args = interpret(&func, &case);
                check(&case, &args, &gemm_reference(elem, &case), spec.tolerance)
                    .unwrap_or_else(|e| panic!("{elem:?} {tiles:?} {dims:?}: {e}"));
            }
        }
    }
}

#[test]
fn device_equals_the_interpreter_on_gfx942_and_gfx90a() {
    let dev = GcnEmulator::new();
    for elem in ELEMS {
        for tiles in tile_choices(elem) {
            let func = build_gemm("gemm", elem, tiles).expect("builds");
            // n a multiple of 4 or not (38, 33): the b-block moves as runs of 4 columns only
            // when n is; (72, 100, 40) has edge blocks with 4-column runs and a k tail.
            for dims in [SIZES[0], SIZES[1], (40, 33, 20), (72, 100, 40)] {
                let case = gemm_case(elem, tiles, dims, 3);
                let want = interpret(&func, &case);
                for t in [Target::Gfx942, Target::Gfx90a] {
                    let what = format!("{elem:?} {tiles:?} {dims:?}");
                    assert_device_equals(&dev, &func, &case, &want, t, &what);
                }
            }
        }
    }
}

/// kjit's software device timing its launches on the `mi300x` model.
fn timed_on_mi300x() -> GcnEmulator {
    let model = kjit::backend_gcn::machine::machine_by_name("mi300x").unwrap();
    GcnEmulator::with_config(kjit_runtime::emu::RunConfig {
        timing: Some(model),
        ..Default::default()
    })
}

/// Two LDS stages of the default f16 blocks are unpadded k-group planes (`Layout::Planes` in
/// `kernels/src/gemm.rs`): 32 KiB, so two workgroups fit a CU's 64 KiB, and on the `mi300x`
/// model no LDS port ever waits for bank conflicts (padded rows would take 36 KiB, plain
/// unpadded rows conflict 8 ways on the fragment reads).
#[test]
fn two_stages_fit_two_workgroups_and_have_no_bank_conflicts() {
    use kjit_runtime::timing::StallCause;
    let dev = timed_on_mi300x();
    let tiles = GemmTiles {
        stages: 2,
        ..DEFAULT_TILES
    };
    let func = build_gemm("gemm", FragElem::F16, tiles).unwrap();
    let ck = kjit::compile(&func, Target::Gfx942, &CompileOptions::default()).unwrap();
    assert_eq!(ck.header.lds_bytes, 32 * 1024);
    let case = gemm_case(FragElem::F16, tiles, (256, 256, 96), 5);
    let out = run_case(&dev, &ck.code_object, &func, &case).expect("runs");
    assert_eq!(
        out.outputs[0],
        *interpret(&func, &case)[2].as_buffer().unwrap()
    );
    let r = out.stats.timing.expect("timed");
    assert!(r.flops > 0);
    assert_eq!(r.stalls.get(StallCause::LdsBankConflict), 0, "{r}");
}

#[test]
fn gfx900_fails_to_compile_naming_the_mfma() {
    let func = build_gemm("gemm", FragElem::F16, DEFAULT_TILES).unwrap();
    let e = kjit::compile(&func, Target::Gfx900, &CompileOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mfma.f32_32x32x8_f16") && e.contains("gfx900"),
        "{e}"
    );
}

/// TFLOP/s of the GEMM on the `mi300x` timing model for a problem that gives every one of the
/// 304 CUs a 128×128 block (m = 2048, n = 2432 = 19·128, k = `KJIT_GEMM_K` or 1024; inputs
/// `KJIT_GEMM_ELEM` = f16 | bf16 | f32; tiles `KJIT_GEMM_TILES` = `bm,bn,bk[,wn,stages[,early[,lead]]]`).
/// Ignored (minutes of software MFMA): `cargo test --release --test gemm -- --ignored --nocapture`.
#[test]
#[ignore]
fn gemm_on_the_mi300x_model() {
    let dev = timed_on_mi300x();
    let kdim: u32 = std::env::var("KJIT_GEMM_K")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1024);
    let elem = match std::env::var("KJIT_GEMM_ELEM").as_deref() {
        Ok("bf16") => FragElem::Bf16,
        Ok("f32") => FragElem::F32,
        _ => FragElem::F16,
    };
    let tiles = match std::env::var("KJIT_GEMM_TILES") {
        Ok(s) => GemmTiles::parse(&s).unwrap(),
        Err(_) => default_tiles(elem),
    };
    let func = build_gemm("gemm", elem, tiles).unwrap();
    let ck = kjit::compile(
        &func,
        kjit::backend_gcn::machine::machine_by_name("mi300x")
            .unwrap()
            .target,
        &CompileOptions::default(),
    )
    .unwrap();
    println!("{}", ck.header.lines().join("\n"));
    let case = gemm_case(elem, tiles, (2048, 2432, kdim), 1);
    let out = run_case(&dev, &ck.code_object, &func, &case).expect("runs");
    let r = out.stats.timing.expect("timed");
    println!("{r}");
    println!(
        "gemm {elem:?} 2048x2432x{kdim} on mi300x: {:.1} TFLOP/s, {:.1}% of the model's MFMA peak",
        r.flops as f64 / r.seconds / 1e12,
        100.0 * r.flops as f64 / r.seconds / r.peak_flops
    );
}

/// The instructions of the default f16 GEMM's one-step interior loop body: the basic block with
/// a whole step's 16 MFMAs and its global loads (the two-step loop of `pair_a` has 32; the
/// one-step loop does the steps it leaves).
fn interior_loop_body(asm: &str) -> Vec<&str> {
    let mut blocks: Vec<Vec<&str>> = vec![vec![]];
    for l in asm.lines().map(str::trim) {
        if l.starts_with(".LBB") || l.starts_with("; %bb") {
            blocks.push(vec![]);
        }
        blocks.last_mut().unwrap().push(l);
    }
    let count = |b: &[&str], p: &str| b.iter().filter(|l| l.starts_with(p)).count();
    blocks
        .into_iter()
        .find(|b| count(b, "v_mfma") == 16 && count(b, "buffer_load") > 0)
        .unwrap_or_else(|| panic!("no block with a whole step:\n{asm}"))
}

/// The default f16 GEMM's two-step interior loop (`pair_a`) reads LDS at the same keyed
/// addresses in both steps (`x ^ c`, one `v_xor_b32` each of an entry-block offset): isel makes
/// them again after a barrier (`remade_after_barrier` in `backend-gcn/src/isel`), 6 per step,
/// instead of holding the first step's 6 VGPRs across two barriers, which took the kernel to
/// 129 VGPRs and 3 waves per SIMD; now it fits 4.
#[test]
fn pair_loop_remakes_its_keyed_read_addresses_after_barriers() {
    let func = build_gemm("gemm", FragElem::F16, DEFAULT_TILES).unwrap();
    let ck = kjit::compile(&func, Target::Gfx942, &CompileOptions::default()).unwrap();
    let mut blocks: Vec<Vec<&str>> = vec![vec![]];
    for l in ck.asm.lines().map(str::trim) {
        if l.starts_with(".LBB") || l.starts_with("; %bb") {
            blocks.push(vec![]);
        }
        blocks.last_mut().unwrap().push(l);
    }
    let count = |b: &[&str], p: &str| b.iter().filter(|l| l.starts_with(p)).count();
    let body = blocks
        .iter()
        .find(|b| count(b, "v_mfma") == 32)
        .unwrap_or_else(|| panic!("no two-step loop body:\n{}", ck.asm));
    assert_eq!(count(body, "v_xor_b32"), 12, "{}", body.join("\n"));
    assert!(
        ck.asm.contains("occupancy: 4 waves/SIMD"),
        "{}",
        &ck.asm[..400]
    );
}

/// The loop's MFMAs are spread through the step, not issued in one burst after the rest
/// (`schedule.rs`, `MatrixFeed`, and the loop's order in `kernels/src/gemm.rs`): a wave
/// issues in order, so the matrix unit (32 cycles per `v_mfma_f32_32x32x8_f16`) idles while
/// a burst's wave issues its other instructions. Before the loop body's first barrier, the
/// MFMAs carried over from the step before go among the next step's LDS stores: at least
/// four `ds_write_b64` between the first and the last of them, and at least two other
/// instructions (`s_waitcnt` not counted) between each of the first four. Before, the
/// MFMAs after the step's second barrier came as one burst of four with no store between.
#[test]
fn gemm_loop_mfmas_are_interleaved_with_the_rest_of_the_step() {
    let func = build_gemm("gemm", FragElem::F16, DEFAULT_TILES).unwrap();
    let ck = kjit::compile(&func, Target::Gfx942, &CompileOptions::default()).unwrap();
    let body = interior_loop_body(&ck.asm);
    let barrier = body
        .iter()
        .position(|l| l.starts_with("s_barrier"))
        .expect("a barrier in the loop");
    let stretch = &body[..barrier];
    let mfmas: Vec<usize> = (0..stretch.len())
        .filter(|&i| stretch[i].starts_with("v_mfma"))
        .collect();
    let text = stretch.join("\n");
    assert!(mfmas.len() >= 4, "{text}");
    let (first, last) = (mfmas[0], *mfmas.last().unwrap());
    let writes = stretch[first..last]
        .iter()
        .filter(|l| l.starts_with("ds_write"))
        .count();
    assert!(writes >= 4, "{writes} LDS stores among the MFMAs:\n{text}");
    for w in mfmas[..4].windows(2) {
        let between = stretch[w[0] + 1..w[1]]
            .iter()
            .filter(|l| !l.starts_with("s_waitcnt"))
            .count();
        assert!(between >= 2, "MFMAs {between} apart:\n{text}");
    }
}

/// The loop's global loads are spread among its MFMAs, one per MFMA gap (`MatrixFeed` in
/// `schedule.rs`): the CU's vector memory unit serves its 12 waves one load after the other,
/// so a wave whose loads came in one run after the barrier waited there with its MFMAs
/// behind them (a wave issues in order) while the matrix unit idled. Before, the 12 loads
/// followed the step's first barrier with at most one MFMA among them.
#[test]
fn gemm_loop_loads_are_spread_among_the_mfmas() {
    let func = build_gemm("gemm", FragElem::F16, DEFAULT_TILES).unwrap();
    let ck = kjit::compile(&func, Target::Gfx942, &CompileOptions::default()).unwrap();
    let body = interior_loop_body(&ck.asm);
    let text = body.join("\n");
    let at = |p: &str| -> Vec<usize> {
        (0..body.len())
            .filter(|&i| body[i].starts_with(p))
            .collect()
    };
    let (loads, mfmas) = (at("buffer_load"), at("v_mfma"));
    assert_eq!(loads.len(), 12, "{text}");
    let last_mfma = *mfmas.last().unwrap();
    for w in loads.windows(2) {
        if w[1] < last_mfma {
            assert!(
                mfmas.iter().any(|&m| w[0] < m && m < w[1]),
                "loads at {} and {} with no MFMA between:\n{text}",
                w[0],
                w[1]
            );
        }
    }
}

/// The interior loop carries its prefetched a-fragments across the back edge in the
/// registers their loads wrote: no `v_mov_b32` and no `s_waitcnt vmcnt` after the body's last
/// barrier, and at most the 2 `v_mov_b32` that gather one `ds_write_b64` pair of b in the
/// body. Before (`loop_slack` in `backend-gcn/src/regalloc.rs`), regalloc2 had exactly as
/// many register pairs as are live at once, split two carried fragments and moved them at
/// both ends of the body: 10 `v_mov_b32`, the last 4 behind a `vmcnt(9)` that waited for
/// the loads issued in the same iteration.
#[test]
fn gemm_loop_carries_its_prefetched_fragments_without_copies() {
    let func = build_gemm("gemm", FragElem::F16, DEFAULT_TILES).unwrap();
    let ck = kjit::compile(&func, Target::Gfx942, &CompileOptions::default()).unwrap();
    let body = interior_loop_body(&ck.asm);
    let text = body.join("\n");
    let last_barrier = body
        .iter()
        .rposition(|l| l.starts_with("s_barrier"))
        .expect("a barrier in the loop");
    let tail = &body[last_barrier..];
    assert!(
        !tail
            .iter()
            .any(|l| l.starts_with("v_mov") || l.starts_with("s_waitcnt vmcnt")),
        "copies or a load wait at the loop end:\n{text}"
    );
    let copies = body.iter().filter(|l| l.starts_with("v_mov")).count();
    assert!(copies <= 2, "{copies} copies in the loop:\n{text}");
}

/// The interior loop's global loads keep one per-lane base register per block: a job that
/// is job 0 moved by whole rounds (a's rows, b's k-groups) and b's other rows differ from it
/// by a uniform value, which the loop adds to k0 on the SALU, so every load's address is one
/// `v_add_lshl_u32` of the same base. Before, each job's and row's base plus its uniform
/// offset was made before the loop: 8 per-lane bases live through it (4 of a, 4 of b; the
/// default compile took 121 VGPRs, now 114).
#[test]
fn gemm_loop_loads_share_one_base_register_per_block() {
    let func = build_gemm("gemm", FragElem::F16, DEFAULT_TILES).unwrap();
    let ck = kjit::compile(&func, Target::Gfx942, &CompileOptions::default()).unwrap();
    let body = interior_loop_body(&ck.asm);
    let text = body.join("\n");
    let mut bases = std::collections::BTreeSet::new();
    for l in body.iter().filter(|l| l.starts_with("v_add_lshl_u32")) {
        let ops: Vec<&str> = l.split([' ', ',']).filter(|x| !x.is_empty()).collect();
        bases.extend(ops[2..4].iter().filter(|x| x.starts_with('v')).copied());
    }
    let loads = body.iter().filter(|l| l.starts_with("buffer_load")).count();
    assert_eq!(loads, 12, "{text}");
    assert_eq!(bases.len(), 2, "load bases {bases:?}:\n{text}");
}

/// The case with both inputs one step of ones longer than the matrices: past k, b's rows are
/// then not out of range (reading 0) but ones, so a load past k shows in c.
fn ones_past_k(mut case: Case, dims: (u32, u32, u32)) -> Case {
    for arg in &mut case.args[..2] {
        if let interp::Arg::Buffer(interp::BufferData::F16(v)) = arg {
            v.extend(std::iter::repeat_n(f16::ONE, (dims.1 * 32) as usize));
        }
    }
    case
}

/// The interior k loop (blocks inside c with aligned rows and pieces, steps whose loads lie
/// inside k) and the general one that finishes each block: device == interpreter == the CPU
/// reference on sizes whose k runs 2, 1 or 0 interior steps before a whole or partial last
/// step, with edge blocks (n = 136) and unaligned rows (k = 98, not a multiple of 4) that
/// must take the general loop. The input buffers are longer than the matrices, so an interior
/// loop that ran one step too far (loading a partial step unchecked) would add products of
/// the rows past k into c.
#[test]
fn interior_loop_and_k_tails_equal_the_interpreter() {
    let dev = GcnEmulator::new();
    for elem in [FragElem::F16, FragElem::Bf16] {
        let func = build_gemm("gemm", elem, DEFAULT_TILES).expect("builds");
        for dims in [
            (256, 136, 100),
            (128, 128, 96),
            (256, 128, 64),
            (128, 256, 98),
        ] {
            let case = ones_past_k(gemm_case(elem, DEFAULT_TILES, dims, 11), dims);
            let what = format!("{elem:?} {dims:?}");
            assert_case_equals(&dev, &func, elem, &case, &[Target::Gfx942], &what);
        }
    }
}

/// `pair_a` (a loaded two steps at a time, each lane's 16-byte piece split into the even
/// and the odd k-group of its two steps; half of the pieces loaded in each step of a pair,
/// the second half an iteration ahead; `kernels/src/gemm.rs`): device == interpreter == the
/// CPU reference on gfx942 and gfx90a, with k running several pairs and leftover whole steps
/// (288, 512), pairs only (256), too few steps for a pair (136), rows that do not start at a
/// multiple of 8 (k = 100: the pair loop is skipped), and edge blocks (n = 136). The inputs
/// run one step of ones past the matrices, so a pair loaded past k would show in c. The pair
/// loop loads a's pieces as `buffer_load_dwordx4`, two in each of its steps (and two before
/// it, the first iteration's ahead).
#[test]
fn pair_loads_of_a_equal_the_interpreter() {
    let dev = GcnEmulator::new();
    let tiles = GemmTiles {
        pair_a: true,
        ..DEFAULT_TILES
    };
    for elem in [FragElem::F16, FragElem::Bf16] {
        let func = build_gemm("gemm", elem, tiles).expect("builds");
        let ck = kjit::compile(&func, Target::Gfx942, &CompileOptions::default()).unwrap();
        let wide = ck
            .asm
            .lines()
            .filter(|l| l.trim_start().starts_with("buffer_load_dwordx4"))
            .count();
        assert_eq!(wide, 6, "{elem:?}: a's pieces");
        for dims in [
            (256, 128, 288),
            (128, 256, 256),
            (128, 128, 512),
            (256, 136, 136),
            (128, 128, 100),
        ] {
            let case = ones_past_k(gemm_case(elem, tiles, dims, 13), dims);
            let what = format!("pair_a {elem:?} {dims:?}");
            assert_case_equals(
                &dev,
                &func,
                elem,
                &case,
                &[Target::Gfx942, Target::Gfx90a],
                &what,
            );
        }
    }
}

/// The interior k loop of the default f16 GEMM is one basic block with the step's 16 MFMAs,
/// its LDS stores and reads and global loads, and no range test: no `v_cmp`/`v_cndmask`, at
/// most one VALU per global load for its address besides the `v_perm_b32` packing of b, the
/// `v_mov_b32` that gather a `ds_write_b64`'s register pair (register allocation's) and the
/// XOR and shift of each later sub-step's LDS read index (k-group planes).
/// Before it, the loop's blocks were split by the unaligned-row branches and every load
/// computed a compare and a select against the remaining k (about 36 VALU per step).
#[test]
fn the_interior_loop_is_one_block_without_range_tests() {
    let func = build_gemm("gemm", FragElem::F16, DEFAULT_TILES).unwrap();
    let ck = kjit::compile(&func, Target::Gfx942, &CompileOptions::default()).unwrap();
    let body = interior_loop_body(&ck.asm);
    let count = |b: &[&str], p: &str| b.iter().filter(|l| l.starts_with(p)).count();
    let text = body.join("\n");
    assert_eq!(count(&body, "ds_read_b64"), 16, "{text}");
    assert_eq!(count(&body, "ds_write_b64"), 8, "{text}");
    assert_eq!(count(&body, "s_barrier"), 2, "{text}");
    assert_eq!(
        count(&body, "v_cmp") + count(&body, "v_cndmask"),
        0,
        "{text}"
    );
    let loads = count(&body, "buffer_load");
    // The planes' read index of sub-steps 1..4 of each block is its XOR with the sub-step's
    // key, shifted to bytes (`Layout::reads_at`).
    let keyed_reads = count(&body, "v_xor_b32");
    assert!(keyed_reads <= 6, "{text}");
    let valu = body
        .iter()
        .filter(|l| l.starts_with("v_"))
        .filter(|l| {
            !["v_mfma", "v_perm", "v_mov"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .count();
    assert!(
        valu <= loads + 2 * keyed_reads,
        "{valu} VALU besides MFMAs and packing:\n{text}"
    );
}

/// The super-row block order (`GemmTiles::super_rows`) is a permutation of the blocks: with 7
/// row tiles (the last super-row of 3 is one high) and 5 column tiles, 35 blocks (32 of them
/// renumbered over the 8 partitions, the last 3 kept), every block of c is computed once,
/// equal to the reference and bit for bit to the interpreter on gfx942 and gfx90a; the
/// default tiles with super-rows of 2 on a grid of 3 × 3 blocks (fewer than 8 per partition
/// run: every id keeps its tile, the bands still reorder them).
#[test]
fn super_row_block_order_computes_every_block() {
    let dev = GcnEmulator::new();
    for (tiles, dims) in [
        (
            GemmTiles {
                super_rows: 3,
                ..SMALL
            },
            (430, 150, 40),
        ),
        (
            GemmTiles {
                super_rows: 2,
                ..DEFAULT_TILES
            },
            (300, 320, 64),
        ),
    ] {
        let func = build_gemm("gemm", FragElem::F16, tiles).expect("builds");
        let case = gemm_case(FragElem::F16, tiles, dims, 11);
        let what = format!("{tiles:?} {dims:?}");
        assert_case_equals(
            &dev,
            &func,
            FragElem::F16,
            &case,
            &[Target::Gfx942, Target::Gfx90a],
            &what,
        );
    }
}

//! Every `s_waitcnt` that `InsertWaitcnt` inserts is essential, and none is missing: on kjit's
//! GCN device a kernel with the inserted waits runs with no hazard reported and gives the right
//! result; the same kernel with any one inserted wait removed is reported (hazard or LDS race) or
//! gives a wrong result.
//!
//! Part 1 runs hand-built allocated functions (a software-pipelined loop that keeps loads in
//! flight across its back edge, and an LDS exchange across a barrier mixed with SMEM) on all
//! three targets, through a small emitter of this test's own (encode with the instruction layer,
//! resolve branches, write the code object).
//! Part 2 does the same for every kernel of `kjit_kernels` compiled by the backend pipeline,
//! and proves each wait minimal: every counter one weaker (`vmcnt(n)` -> `vmcnt(n+1)`, same for
//! `lgkmcnt`/`expcnt`) and every counter of a combined wait dropped alone must be reported by
//! the device as a waitcnt hazard (a wrong result or another error does not count; for a wait
//! right before `s_barrier`, whose job is to finish this wave's LDS writes, an LDS race).
//! Part 4 does it for the `s_nop` wait states the hazards pass inserts: each one removed, or
//! shortened by one wait state, is reported by the device's wait-state checks.

use kjit_backend_gcn::codeobj::metadata::KernelMeta;
use kjit_backend_gcn::codeobj::write::{CodeObjectBuilder, KernargLayout, KernelBuild};
use kjit_backend_gcn::hazards::insert_wait_states;
use kjit_backend_gcn::isa::{self, Inst, Opcode, Operand};
use kjit_backend_gcn::mir::{BranchCond, KernelAbi, MBlock};
use kjit_backend_gcn::phys::{PhysFunction, PhysTerminator};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_backend_gcn::waitcnt::{insert_waitcnt, Wait, EXPCNT_MAX, LGKMCNT_MAX, VMCNT_MAX};
use kjit_backend_gcn::Target;
use kjit_runtime::emu::{GcnEmulator, RunConfig, Schedule};
use kjit_runtime::{ArgValue, Device, LaunchDims};

use Operand as O;

// ---------------------------------------------------------------------------------------------
// A minimal emitter for hand-built functions (the backend's emit.rs does this for compiled ones).

/// Machine code of `f`: blocks in layout order, terminators as `s_cbranch_*`/`s_branch`/`s_endpgm`.
fn encode_function(f: &PhysFunction) -> Vec<u8> {
    let t = f.abi.target;
    let n = f.blocks.len();
    // Pass 1: sizes (branches are one dword each).
    let mut start = vec![0usize; n + 1];
    let mut words_per_block = Vec::new();
    for (i, b) in f.blocks.iter().enumerate() {
        let mut w = 0;
        for inst in &b.insts {
            w += isa::encode(inst, t)
                .unwrap_or_else(|e| panic!("encode {}: {e}", inst.display(t)))
                .len();
        }
        w += match b.term {
            PhysTerminator::Return => 1,
            PhysTerminator::Jump(x) => (x.as_u32() as usize != i + 1) as usize,
            PhysTerminator::Branch { not_taken, .. } => {
                1 + (not_taken.as_u32() as usize != i + 1) as usize
            }
        };
        words_per_block.push(w);
        start[i + 1] = start[i] + w;
    }
    // Pass 2: encode with branch offsets (dwords from the next instruction).
    let mut out: Vec<u32> = Vec::new();
    for (i, b) in f.blocks.iter().enumerate() {
        for inst in &b.insts {
            out.extend(isa::encode(inst, t).unwrap());
        }
        let branch = |op: Opcode, target: MBlock, out: &mut Vec<u32>| {
            let here = out.len() as i64 + 1;
            let off = start[target.as_u32() as usize] as i64 - here;
            out.extend(isa::encode(&Inst::new(op, &[O::Imm(off)]), t).unwrap());
        };
        match b.term {
            PhysTerminator::Return => {
                out.extend(isa::encode(&Inst::new(Opcode::SEndpgm, &[O::Imm(0)]), t).unwrap())
            }
            PhysTerminator::Jump(x) => {
                if x.as_u32() as usize != i + 1 {
                    branch(Opcode::SBranch, x, &mut out);
                }
            }
            PhysTerminator::Branch {
                cond,
                taken,
                not_taken,
            } => {
                let op = Opcode::from_name(cond.opcode_name()).unwrap();
                branch(op, taken, &mut out);
                if not_taken.as_u32() as usize != i + 1 {
                    branch(Opcode::SBranch, not_taken, &mut out);
                }
            }
        }
        assert_eq!(out.len(), start[i + 1]);
    }
    out.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A code object with `f` as kernel `name` taking two global buffers `x`, `y`.
fn code_object(f: &PhysFunction, name: &str, vgprs: u32, sgprs: u32) -> Vec<u8> {
    let code = encode_function(f);
    let mut layout = KernargLayout::new();
    layout.global_buffer("x", true).global_buffer("y", false);
    let mut k = KernelBuild::new(name, code).with_args(layout.finish());
    k.descriptor.vgprs = vgprs;
    k.descriptor.sgprs = sgprs;
    k.descriptor.group_segment_fixed_size = f.abi.lds_bytes;
    k.max_flat_workgroup_size = 256;
    let mut b = CodeObjectBuilder::new(f.abi.target);
    b.add_kernel(k);
    b.build().expect("code object")
}

/// Runs kernel `name` with input `x` and an output of `ny` words (poisoned); returns the output
/// or the device's error text.
fn run(code: &[u8], name: &str, x: &[u32], ny: usize, block: u32) -> Result<Vec<u32>, String> {
    let dev = GcnEmulator::with_config(RunConfig {
        schedule: Schedule::RoundRobin,
        ..RunConfig::default()
    });
    let m = dev.load_module(code).map_err(|e| e.to_string())?;
    let xb = dev.alloc((x.len() * 4) as u64).unwrap();
    let xbytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    dev.copy_to_device(xb, 0, &xbytes).unwrap();
    let yb = dev.alloc((ny * 4) as u64).unwrap();
    let poison: Vec<u8> = std::iter::repeat_n(0xdead_beefu32.to_le_bytes(), ny)
        .flatten()
        .collect();
    dev.copy_to_device(yb, 0, &poison).unwrap();
    dev.launch(
        m,
        name,
        LaunchDims {
            grid: [1, 1, 1],
            block: [block, 1, 1],
            dynamic_lds: 0,
        },
        &[ArgValue::Buffer(xb), ArgValue::Buffer(yb)],
    )
    .map_err(|e| e.to_string())?;
    let mut ybytes = vec![0u8; ny * 4];
    dev.copy_from_device(yb, 0, &mut ybytes).unwrap();
    Ok(ybytes
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn func(target: Target, lds: u32, blocks: Vec<(Vec<Inst>, PhysTerminator)>) -> PhysFunction {
    let abi = KernelAbi {
        target,
        meta: KernelMeta::new("k"),
        workgroup_ids: [true, false, false],
        workitem_dims: 1,
        lds_bytes: lds,
    };
    PhysFunction::from_blocks(abi, blocks)
}

fn gload(dst: u16, addr: u16) -> Inst {
    Inst::new(
        Opcode::GlobalLoadDword,
        &[O::v(dst), O::v(addr), O::sr(4, 2)],
    )
}

fn vadd(d: u16, a: Operand, b: u16) -> Inst {
    Inst::new(Opcode::VAddU32, &[O::v(d), a, O::v(b)])
}

/// y[i] = sum_{j<7} x[i + 64 j] for one wave, with a loop that keeps one load in flight across
/// its back edge (software pipelined by hand): the waits inside are `vmcnt(1)`.
fn pipelined_sum(target: Target) -> PhysFunction {
    let b = MBlock::from_u32;
    let step = O::Literal(256);
    func(
        target,
        0,
        vec![
            (
                vec![
                    Inst::new(Opcode::SLoadDwordx4, &[O::sr(4, 4), O::sr(0, 2), O::Imm(0)]),
                    Inst::new(Opcode::VLshlrevB32, &[O::v(1), O::InlineInt(2), O::v(0)]),
                    gload(2, 1),
                    Inst::new(Opcode::VMovB32, &[O::v(10), O::InlineInt(0)]),
                    Inst::new(Opcode::SMovB32, &[O::s(8), O::InlineInt(3)]),
                ],
                PhysTerminator::Jump(b(1)),
            ),
            (
                vec![
                    vadd(1, step, 1),
                    gload(3, 1),
                    vadd(10, O::v(2), 10),
                    vadd(1, step, 1),
                    gload(2, 1),
                    vadd(10, O::v(3), 10),
                    Inst::new(Opcode::SSubU32, &[O::s(8), O::s(8), O::InlineInt(1)]),
                    Inst::new(Opcode::SCmpLgU32, &[O::s(8), O::InlineInt(0)]),
                ],
                PhysTerminator::Branch {
                    cond: BranchCond::Scc1,
                    taken: b(1),
                    not_taken: b(2),
                },
            ),
            (
                vec![
                    vadd(10, O::v(2), 10),
                    Inst::new(Opcode::VLshlrevB32, &[O::v(4), O::InlineInt(2), O::v(0)]),
                    Inst::new(Opcode::GlobalStoreDword, &[O::v(4), O::v(10), O::sr(6, 2)]),
                ],
                PhysTerminator::Return,
            ),
        ],
    )
}

/// Two waves exchange x through LDS across a barrier: y[i] = x[(i + 64) % 128].
fn lds_exchange(target: Target) -> PhysFunction {
    func(
        target,
        512,
        vec![(
            vec![
                Inst::new(Opcode::SLoadDwordx4, &[O::sr(4, 4), O::sr(0, 2), O::Imm(0)]),
                Inst::new(Opcode::VLshlrevB32, &[O::v(1), O::InlineInt(2), O::v(0)]),
                gload(2, 1),
                Inst::new(Opcode::DsWriteB32, &[O::v(1), O::v(2)]),
                vadd(3, O::Literal(256), 1),
                Inst::new(Opcode::VAndB32, &[O::v(3), O::Literal(0x1ff), O::v(3)]),
                Inst::new(Opcode::SBarrier, &[]),
                Inst::new(Opcode::DsReadB32, &[O::v(4), O::v(3)]),
                Inst::new(Opcode::GlobalStoreDword, &[O::v(1), O::v(4), O::sr(6, 2)]),
            ],
            PhysTerminator::Return,
        )],
    )
}

/// Positions `(block, index)` of every `s_waitcnt` in `f`.
fn waits(f: &PhysFunction) -> Vec<(usize, usize)> {
    f.blocks
        .iter()
        .enumerate()
        .flat_map(|(b, bl)| {
            bl.insts
                .iter()
                .enumerate()
                .filter(|(_, i)| i.op == Opcode::SWaitcnt)
                .map(move |(k, _)| (b, k))
        })
        .collect()
}

fn without(f: &PhysFunction, at: (usize, usize)) -> PhysFunction {
    let mut g = f.clone();
    g.blocks[at.0].insts.remove(at.1);
    g
}

/// The device's report of a register read (or overwritten) before its `s_waitcnt`, as opposed
/// to a wait-state error, an LDS race or a wrong result.
fn is_waitcnt_hazard(e: &str) -> bool {
    e.contains(": hazard: ") && e.contains("missing `s_waitcnt")
}

/// The one-step weaker forms of a wait, named: each counter `n` as `n + 1`, and, when the wait
/// has several counters, each counter dropped alone (dropping the only one is removing the
/// wait, which part 2's removal check covers).
fn weaker_waits(w: Wait) -> Vec<(String, Wait)> {
    let counters = [w.vm, w.exp, w.lgkm];
    let present = counters.iter().filter(|c| c.is_some()).count();
    let max = [VMCNT_MAX, EXPCNT_MAX, LGKMCNT_MAX];
    let names = ["vmcnt", "expcnt", "lgkmcnt"];
    let mut out = Vec::new();
    for k in 0..3 {
        let Some(n) = counters[k] else { continue };
        let set = |v: Option<u8>| {
            let mut c = counters;
            c[k] = v;
            Wait {
                vm: c[0],
                exp: c[1],
                lgkm: c[2],
            }
        };
        let up = if n + 1 >= max[k] { None } else { Some(n + 1) };
        out.push((format!("{}({})", names[k], n + 1), set(up)));
        if present > 1 {
            out.push((format!("{} dropped", names[k]), set(None)));
        }
    }
    out
}

fn is_reported(e: &str) -> bool {
    e.contains("hazard") || e.contains("LDS race")
}

#[test]
fn hand_built_kernels_run_clean_and_every_inserted_wait_is_essential() {
    let x: Vec<u32> = (0..448u32)
        .map(|i| i.wrapping_mul(2654435761) >> 7)
        .collect();
    for target in ALL_TARGETS {
        // The pipelined loop.
        let mut f = pipelined_sum(target);
        let st = insert_waitcnt(&mut f);
        insert_wait_states(&mut f);
        assert!(st.partial >= 2, "{target}: vmcnt(N>0) in the loop: {st:?}");
        let code = code_object(&f, "k", 16, 16);
        let want: Vec<u32> = (0..64)
            .map(|i| (0..7).fold(0u32, |s, j| s.wrapping_add(x[i + 64 * j])))
            .collect();
        let got = run(&code, "k", &x, 64, 64).unwrap_or_else(|e| panic!("{target}: {e}"));
        assert_eq!(got, want, "{target}: pipelined sum");
        let ws = waits(&f);
        assert_eq!(ws.len(), st.inserted as usize);
        for &at in &ws {
            let g = without(&f, at);
            let code = code_object(&g, "k", 16, 16);
            match run(&code, "k", &x, 64, 64) {
                Err(e) => assert!(is_reported(&e), "{target} without wait {at:?}: {e}"),
                Ok(y) => assert_ne!(y, want, "{target}: wait {at:?} was not needed"),
            }
        }
        println!(
            "{target} pipelined_sum: {} of {} waits essential",
            ws.len(),
            ws.len()
        );

        // The LDS exchange (two waves, barrier).
        let mut f = lds_exchange(target);
        let st = insert_waitcnt(&mut f);
        insert_wait_states(&mut f);
        let code = code_object(&f, "k", 8, 16);
        let want: Vec<u32> = (0..128).map(|i| x[(i + 64) % 128]).collect();
        let got = run(&code, "k", &x, 128, 128).unwrap_or_else(|e| panic!("{target}: {e}"));
        assert_eq!(got, want, "{target}: LDS exchange");
        let ws = waits(&f);
        assert_eq!(ws.len(), st.inserted as usize);
        let mut essential = 0;
        for &at in &ws {
            let g = without(&f, at);
            let code = code_object(&g, "k", 8, 16);
            let r = run(&code, "k", &x, 128, 128);
            let ok = match &r {
                Err(e) => is_reported(e),
                Ok(y) => *y != want,
            };
            if ok {
                essential += 1;
            } else {
                let text = f.blocks[at.0].insts[at.1].display(target).to_string();
                // gfx900 waits for every counter before s_barrier (no back-off barrier; LLVM
                // does the same), which the device cannot observe for VMEM stores.
                assert!(
                    target == Target::Gfx900 && text.contains("vmcnt"),
                    "{target}: `{text}` at {at:?} was not needed: {r:?}"
                );
            }
        }
        println!(
            "{target} lds_exchange: {essential} of {} waits essential",
            ws.len()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Part 2: every library kernel, compiled by the pipeline.

/// Waits proven needed only on hardware, which the device cannot observe: `(target, kernel,
/// wait text, why)`. Empty: every inserted wait is observable on the device.
const HARDWARE_ONLY: &[(Target, &str, &str, &str)] = &[];

fn essential_size(name: &str) -> usize {
    match name {
        "matmul" => 17,
        "seed_2d" => 70,
        // Rows of 300: lanes run 4 or 5 iterations of the row loops, two a trip
        // (`opt/unroll_runtime.rs`), so every load of the unrolled body is waited for.
        "softmax" => 300,
        _ => 67,
    }
}

/// Runs `code` on `case`; `Ok(())` when it runs clean and matches the reference, else why not.
fn run_checked(
    dev: &GcnEmulator,
    code: &[u8],
    func: &kjit_ir::Function,
    spec: &kjit_kernels::KernelSpec,
    case: &kjit_kernels::Case,
) -> Result<(), String> {
    let out = kjit::exec::run_case(dev, code, func, case).map_err(|e| e.to_string())?;
    let want = (spec.reference)(case);
    kjit_kernels::check(case, &out.args, &want, spec.tolerance)
        .map_err(|m| format!("wrong result: {m}"))
}

/// A library kernel built and compiled (optimizer on) up to and including the hazards pass.
fn compiled(
    spec: &kjit_kernels::KernelSpec,
    target: Target,
) -> Result<(kjit_ir::Function, PhysFunction), String> {
    use kjit_backend_gcn::compile::{compile_to_phys, CompileOptions};
    let func = (spec.build)().map_err(|e| format!("build: {e}"))?;
    let opts = CompileOptions {
        optimize: true,
        vgpr_budget: None,
        occupancy: None,
        check: false,
        kernarg_preload: true,
    };
    let phys = compile_to_phys(&func, target, &opts).map_err(|e| e.to_string())?;
    Ok((func, phys))
}

fn essential_for(targets: &[Target]) {
    use kjit_backend_gcn::emit::emit;
    let dev = GcnEmulator::new();
    let (mut total, mut essential) = (0usize, 0usize);
    let mut failures = Vec::new();
    for &target in targets {
        for spec in kjit_kernels::all() {
            let (func, phys) = match compiled(spec, target) {
                Ok(fp) => fp,
                Err(e) => {
                    failures.push(format!("{target} {}: compile: {e}", spec.name));
                    continue;
                }
            };
            let case = (spec.make_case)(essential_size(spec.name), 11);
            let code = emit(&phys).expect("emit").code_object;
            if let Err(e) = run_checked(&dev, &code, &func, spec, &case) {
                failures.push(format!("{target} {}: with all waits: {e}", spec.name));
                continue;
            }
            let ws = waits(&phys);
            let mut mine = 0;
            for &at in &ws {
                total += 1;
                let text = phys.blocks[at.0].insts[at.1].display(target).to_string();
                let g = without(&phys, at);
                let code = emit(&g).expect("emit").code_object;
                match run_checked(&dev, &code, &func, spec, &case) {
                    Err(e) if is_reported(&e) || e.starts_with("wrong result") => {
                        essential += 1;
                        mine += 1;
                    }
                    Err(e) => failures.push(format!(
                        "{target} {}: without `{text}` at {at:?}: unexpected error {e}",
                        spec.name
                    )),
                    Ok(()) => {
                        if HARDWARE_ONLY
                            .iter()
                            .any(|h| h.0 == target && h.1 == spec.name && h.2 == text)
                        {
                            essential += 1;
                            mine += 1;
                        } else {
                            failures.push(format!(
                                "{target} {}: `{text}` at {at:?} is not essential",
                                spec.name
                            ));
                        }
                    }
                }
            }
            // Minimal, not only needed: each counter one weaker, and each counter of a combined
            // wait dropped alone, must be reported as a waitcnt hazard by the device.
            let (mut weakened, mut exact) = (0, 0);
            for &at in &ws {
                let inst = &phys.blocks[at.0].insts[at.1];
                let text = inst.display(target).to_string();
                let w = Wait::of_inst(inst, target).expect("an s_waitcnt");
                // A wait right before `s_barrier` makes this wave's LDS writes visible to the
                // others: a weaker one shows as an LDS race in the wave that reads them.
                let before_barrier = phys.blocks[at.0]
                    .insts
                    .get(at.1 + 1)
                    .is_some_and(|i| i.op == Opcode::SBarrier);
                for (what, g) in weaker_waits(w) {
                    weakened += 1;
                    let mut f = phys.clone();
                    if g.is_empty() {
                        f.blocks[at.0].insts.remove(at.1);
                    } else {
                        f.blocks[at.0].insts[at.1] = g.inst(target);
                    }
                    let code = emit(&f).expect("emit").code_object;
                    match run_checked(&dev, &code, &func, spec, &case) {
                        Err(e) if is_waitcnt_hazard(&e) => exact += 1,
                        Err(e) if before_barrier && e.contains("LDS race") => exact += 1,
                        // gfx900 waits for every counter before s_barrier (no back-off
                        // barrier; LLVM does the same): a store still in flight there is
                        // something the device cannot observe (as in `lds_exchange` above).
                        Ok(())
                            if target == Target::Gfx900
                                && before_barrier
                                && what.contains("vmcnt") =>
                        {
                            exact += 1
                        }
                        other => failures.push(format!(
                            "{target} {}: `{text}` at {at:?} with {what}: no waitcnt hazard \
                             ({other:?})",
                            spec.name
                        )),
                    }
                }
            }
            println!(
                "{target} {:24} {mine:3} of {:3} waits essential; {exact:3} of {weakened:3} \
                 weakened forms reported",
                spec.name,
                ws.len()
            );
        }
    }
    println!("{essential} of {total} waits essential");
    assert!(total > 0, "no waits inserted at all");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_wait_in_every_library_kernel_is_essential_on_gfx942() {
    essential_for(&[Target::Gfx942]);
}

#[test]
fn every_wait_in_every_library_kernel_is_essential_on_gfx90a_and_gfx900() {
    essential_for(&[Target::Gfx90a, Target::Gfx900]);
}

// ---------------------------------------------------------------------------------------------
// Part 3: the list scheduler keeps every kernel correct (and leaves waits weaker or equal).

#[test]
fn scheduled_library_kernels_run_clean_and_match_the_reference() {
    use kjit_backend_gcn::emit::emit;
    use kjit_backend_gcn::regalloc::{allocate, RegallocOptions};
    let dev = GcnEmulator::new();
    let mut failures = Vec::new();
    for target in ALL_TARGETS {
        for spec in kjit_kernels::all() {
            let func = kjit_ir::opt::optimize(&(spec.build)().expect("kernel builds")).0;
            let mut row = Vec::new();
            for scheduled in [false, true] {
                let mut mf = match kjit_backend_gcn::isel::select(&func, target) {
                    Ok(m) => m,
                    Err(e) => {
                        failures.push(format!("{target} {}: isel: {e}", spec.name));
                        break;
                    }
                };
                if scheduled {
                    kjit_backend_gcn::schedule::schedule(&mut mf);
                    if let Err(e) = kjit_backend_gcn::mir_verify::verify(&mf) {
                        failures.push(format!("{target} {}: MIR after schedule: {e}", spec.name));
                        break;
                    }
                }
                let ra = RegallocOptions {
                    vgpr_budget: None,
                    sgpr_budget: None,
                    run_checker: true,
                };
                let mut phys = match allocate(&mf, &ra) {
                    Ok(p) => p,
                    Err(e) => {
                        failures.push(format!("{target} {}: regalloc: {e}", spec.name));
                        break;
                    }
                };
                let st = insert_waitcnt(&mut phys);
                insert_wait_states(&mut phys);
                let code = emit(&phys).expect("emit").code_object;
                for n in [1, essential_size(spec.name)] {
                    let case = (spec.make_case)(n, 5 + n as u64);
                    if let Err(e) = run_checked(&dev, &code, &func, spec, &case) {
                        failures.push(format!(
                            "{target} {} n={n} scheduled={scheduled}: {e}",
                            spec.name
                        ));
                    }
                }
                row.push(format!(
                    "{} waits ({} partial), {} VGPRs",
                    st.inserted, st.partial, phys.usage.vgprs
                ));
            }
            println!(
                "{target} {:24} unscheduled: {}",
                spec.name,
                row.join("; scheduled: ")
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Part 4: every `s_nop` the hazards pass inserts is needed, and exactly as long as needed.

/// `s_nop`s the device cannot prove needed: `(target, kernel, block, why)`. The hazards pass
/// counts conservatively across block boundaries (a branch is credited no wait state, a join
/// keeps the nearest producer of any predecessor), so an `s_nop` at the top of a block may cover
/// a path the device's run does not take or count differently.
const WAIT_STATES_BY_PATH: &[(&str, &str)] = &[];

fn nops(f: &PhysFunction) -> Vec<(usize, usize, i64)> {
    let mut v = Vec::new();
    for (b, bl) in f.blocks.iter().enumerate() {
        for (k, i) in bl.insts.iter().enumerate() {
            if i.op == Opcode::SNop {
                let n = match i.operands.first() {
                    Some(Operand::Imm(n)) => *n,
                    Some(Operand::InlineInt(n)) => *n as i64,
                    _ => 0,
                };
                v.push((b, k, n));
            }
        }
    }
    v
}

fn wait_states_essential_for(targets: &[Target]) {
    use kjit_backend_gcn::emit::emit;
    let dev = GcnEmulator::new();
    let (mut total, mut essential, mut exact, mut shortened) = (0usize, 0usize, 0usize, 0usize);
    let mut failures = Vec::new();
    for &target in targets {
        for spec in kjit_kernels::all() {
            let (func, phys) = compiled(spec, target).expect("compiles");
            let case = (spec.make_case)(essential_size(spec.name), 11);
            for (b, k, n) in nops(&phys) {
                total += 1;
                let at = (b, k);
                // Removed.
                let code = emit(&without(&phys, at)).expect("emit").code_object;
                match run_checked(&dev, &code, &func, spec, &case) {
                    Err(e) if e.contains("wait-state rule") || e.starts_with("wrong result") => {
                        essential += 1
                    }
                    Err(e) => failures.push(format!(
                        "{target} {} s_nop {n} at {at:?} removed: unexpected error {e}",
                        spec.name
                    )),
                    Ok(()) => {
                        if !WAIT_STATES_BY_PATH.contains(&(target.name(), spec.name)) {
                            failures.push(format!(
                                "{target} {}: s_nop {n} at {at:?} is not needed on the device",
                                spec.name
                            ))
                        }
                    }
                }
                // One wait state shorter.
                if n > 0 {
                    shortened += 1;
                    let mut g = phys.clone();
                    g.blocks[b].insts[k] = Inst::new(Opcode::SNop, &[O::Imm(n - 1)]);
                    let code = emit(&g).expect("emit").code_object;
                    match run_checked(&dev, &code, &func, spec, &case) {
                        Err(e) if e.contains("wait-state rule") => exact += 1,
                        other => failures.push(format!(
                            "{target} {}: s_nop {} instead of s_nop {n} at {at:?}: {other:?}",
                            spec.name,
                            n - 1
                        )),
                    }
                }
            }
        }
    }
    println!(
        "{essential} of {total} s_nops needed on the device; {exact} of {shortened} longer than 1 \
         reported when one wait state shorter"
    );
    assert!(total > 0, "no s_nop inserted at all");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// (The library kernels need `s_nop`s only under gfx942's rules today; gfx90a/gfx900 code has
/// none, and the device's run of it — every differential test — shows none missing.)
#[test]
fn every_inserted_s_nop_is_needed_on_the_device() {
    wait_states_essential_for(&ALL_TARGETS);
}

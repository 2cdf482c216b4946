//! Instruction selection of every library kernel on every target gives MIR that verifies
//! (SSA, dominance, operand classes and widths against the opcode table, ties, live-ins).

use kjit_backend_gcn::isel::select;
use kjit_backend_gcn::mir_verify::{verify, DisplayMir};
use kjit_backend_gcn::target::ALL_TARGETS;

#[test]
fn every_library_kernel_selects_to_verified_mir() {
    let mut failures = Vec::new();
    for spec in kjit_kernels::all() {
        let f = (spec.build)().expect("library kernel builds");
        for t in ALL_TARGETS {
            match select(&f, t) {
                Ok(mf) => {
                    if let Err(e) = verify(&mf) {
                        failures.push(format!("{} {t}: {e}\n{}", spec.name, DisplayMir(&mf)));
                    }
                    if std::env::var("KJIT_PRINT_MIR").as_deref() == Ok(spec.name)
                        && t.name() == "gfx942"
                    {
                        println!("{}", DisplayMir(&mf));
                    }
                }
                Err(e) => failures.push(format!("{} {t}: {e}", spec.name)),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------------------
// Selection choices the code-quality work relies on (issue 15), checked on the asm and, for the
// scalar loads, on kjit's GCN device against the IR interpreter.

use kjit::exec::run_case;
use kjit::{compile, CompileOptions};
use kjit_backend_gcn::Target;
use kjit_frontend::{Dim, KernelBuilder};
use kjit_ir::interp::{Arg, BufferData, LaunchDims};
use kjit_kernels::Case;

/// `dst[gid] = b[i] + b[i + 1]` (a uniform index into read-only `b`; integers, so the add
/// stays on the SALU), optionally after a store
/// to `dst` (which may alias `b`), optionally with `b` writable.
fn uniform_loads(store_first: bool, writable: bool) -> kjit_ir::Function {
    let k = KernelBuilder::new("uniform_loads");
    let b = if writable {
        k.buffer_mut::<u32>("b")
    } else {
        k.buffer::<u32>("b")
    };
    let dst = k.buffer_mut::<u32>("dst");
    let i = k.arg::<u32>("i");
    let gid = k.global_id(Dim::X);
    if store_first {
        k.store(&dst, gid, k.lit(1u32));
    }
    let v = k.load(&b, i) + k.load(&b, i + 1u32);
    k.store(&dst, gid, v);
    k.finish().unwrap()
}

/// Output `out` of one workgroup of `lanes` work-items on kjit's device and in the interpreter.
fn device_and_interpreter(
    dev: &kjit_runtime::emu::GcnEmulator,
    k: &kjit::CompiledKernel,
    f: &kjit_ir::Function,
    args: Vec<Arg>,
    lanes: u32,
    out: usize,
) -> (Arg, Arg) {
    let case = Case {
        n: lanes as usize,
        args,
        launch: LaunchDims {
            grid: [1, 1, 1],
            block: [lanes, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![out],
    };
    let mut want = case.args.clone();
    kjit_ir::interp::run(f, &case.launch, &mut want).unwrap();
    let got = run_case(dev, &k.code_object, f, &case).unwrap_or_else(|e| panic!("{e}"));
    (got.args[out].clone(), want[out].clone())
}

/// `dst` (a poisoned 128-word buffer, argument 0) of one workgroup of 100 work-items with the
/// two u32 arguments of each pair: kjit's device against the interpreter.
fn check_u32_pairs(
    dev: &kjit_runtime::emu::GcnEmulator,
    k: &kjit::CompiledKernel,
    f: &kjit_ir::Function,
    t: Target,
    pairs: &[(u32, u32)],
) {
    for &(x, y) in pairs {
        let args = vec![
            kjit_kernels::poisoned(kjit_ir::ElemType::U32, 128),
            Arg::U32(x),
            Arg::U32(y),
        ];
        let (got, want) = device_and_interpreter(dev, k, f, args, 100, 0);
        assert_eq!(got, want, "{t} args {x}, {y}");
    }
}

/// Device against interpreter for a kernel `(dst: [u32; 64], n: u32)` on one wave, per `n`.
fn check_u32_sizes(
    dev: &kjit_runtime::emu::GcnEmulator,
    k: &kjit::CompiledKernel,
    f: &kjit_ir::Function,
    t: Target,
    sizes: &[u32],
) {
    for &n in sizes {
        let args = vec![
            kjit_kernels::poisoned(kjit_ir::ElemType::U32, 64),
            Arg::U32(n),
        ];
        let (got, want) = device_and_interpreter(dev, k, f, args, 64, 0);
        assert_eq!(got, want, "{t} n={n}");
    }
}

fn asm(f: &kjit_ir::Function, t: Target) -> String {
    compile(f, t, &CompileOptions::default())
        .unwrap()
        .asm
        .to_string()
}

/// Options whose code loads every kernel argument with `s_load` (gfx900's prologue, and
/// gfx90a/gfx942's without preloading): what the prologue tests below look at. Preloaded
/// arguments are `tests/kernarg_preload.rs`'s.
fn loaded_args() -> CompileOptions {
    CompileOptions {
        kernarg_preload: false,
        ..CompileOptions::default()
    }
}

#[test]
fn uniform_loads_of_a_read_only_buffer_go_through_the_scalar_cache() {
    let f = uniform_loads(false, false);
    let dev = kjit_runtime::emu::GcnEmulator::new();
    for t in ALL_TARGETS {
        let k = compile(&f, t, &CompileOptions::default()).unwrap();
        assert_eq!(
            k.asm.matches("s_buffer_load_dword ").count(),
            2,
            "{t}\n{}",
            k.asm
        );
        assert!(!k.asm.contains("buffer_load_dword v"), "{t}\n{}", k.asm);
        assert!(!k.asm.contains("v_readfirstlane"), "{t}\n{}", k.asm);
        // In range, at the last element (b[i + 1] reads 0) and past the end (both 0).
        for i in [3u32, 7, 8, 1 << 20] {
            let b: Vec<u32> = (0..8).map(|x| 100 + 7 * x).collect();
            let args = vec![
                Arg::Buffer(BufferData::U32(b)),
                kjit_kernels::poisoned(kjit_ir::ElemType::U32, 64),
                Arg::U32(i),
            ];
            let (got, want) = device_and_interpreter(&dev, &k, &f, args, 64, 1);
            assert_eq!(got, want, "{t} i={i}");
        }
    }
}

#[test]
fn no_scalar_load_of_memory_the_kernel_may_have_written() {
    // After a store (the buffers may alias; the scalar cache would not see the write) and
    // from a writable buffer, the load stays a vector load.
    for f in [uniform_loads(true, false), uniform_loads(false, true)] {
        for t in ALL_TARGETS {
            let a = asm(&f, t);
            assert!(!a.contains("s_buffer_load"), "{t}\n{a}");
            assert!(a.contains("buffer_load_dword v"), "{t}\n{a}");
        }
    }
}

#[test]
fn a_divergent_and_of_compares_narrows_exec_by_two_v_cmpx() {
    // `if (x < n && y < m)`: the two compares' lane masks go straight into EXEC, each compare
    // as a `v_cmpx` (EXEC ∧ a ∧ b); no `s_and_b64` of the masks, no 0/1 values
    // (`v_cndmask`), no `v_and`, no compare of the result with 0; the device stores the same
    // lanes as the interpreter when either compare, both or neither cut lanes.
    let k = KernelBuilder::new("and_of_compares");
    let dst = k.buffer_mut::<u32>("dst");
    let n = k.arg::<u32>("n");
    let m = k.arg::<u32>("m");
    let x = k.global_id(Dim::X);
    let y = k.local_id(Dim::X) * 3u32;
    k.if_(x.lt(n) & y.lt(m), || k.store(&dst, x, y));
    let f = k.finish().unwrap();
    let dev = kjit_runtime::emu::GcnEmulator::new();
    for t in ALL_TARGETS {
        let k = compile(&f, t, &CompileOptions::default()).unwrap();
        let a = &k.asm;
        assert_eq!(a.matches("v_cmpx_").count(), 2, "{t}\n{a}");
        for bad in ["s_and_b64", "v_cmp_", "v_cndmask", "v_and_b32"] {
            assert!(!a.contains(bad), "{t}: {bad}\n{a}");
        }
        for (n, m) in [(64u32, 200u32), (37, 200), (64, 100), (37, 100), (0, 0)] {
            let args = vec![
                kjit_kernels::poisoned(kjit_ir::ElemType::U32, 64),
                Arg::U32(n),
                Arg::U32(m),
            ];
            let (got, want) = device_and_interpreter(&dev, &k, &f, args, 64, 0);
            assert_eq!(got, want, "{t} n={n} m={m}");
        }
    }
}

#[test]
fn a_divergent_if_sets_exec_with_a_v_cmpx_of_its_compare() {
    // `if (x < n) dst[x] = x`: the branch's lanes go straight into EXEC by the compare
    // itself (`v_cmpx`), not through a mask pair and `s_and_b64 exec, exec, m`, nor an
    // `s_mov_b64 exec` in the head; the device stores the same lanes as the interpreter.
    let k = KernelBuilder::new("if_store");
    let dst = k.buffer_mut::<u32>("dst");
    let n = k.arg::<u32>("n");
    let x = k.global_id(Dim::X);
    k.if_(x.lt(n), || k.store(&dst, x, x * 3u32));
    let f = k.finish().unwrap();
    let dev = kjit_runtime::emu::GcnEmulator::new();
    for t in ALL_TARGETS {
        let k = compile(&f, t, &CompileOptions::default()).unwrap();
        assert_eq!(k.asm.matches("v_cmpx_lt_u32").count(), 1, "{t}\n{}", k.asm);
        assert!(!k.asm.contains("s_and_b64 exec"), "{t}\n{}", k.asm);
        assert!(!k.asm.contains("s_mov_b64 exec, s["), "{t}\n{}", k.asm);
        check_u32_sizes(&dev, &k, &f, t, &[0u32, 37, 64]);
    }
}

#[test]
fn a_divergent_loops_compare_is_its_lanes_without_an_and_of_exec() {
    // `for (i = lid; i < n; i += 7) acc += i`: the header's compare is both the lanes that
    // stay in the loop and the mask the latch tests. A compare writes 0 for lanes outside
    // EXEC, so the lanes are the compare itself: no `s_and_b64 m, exec, c` after it.
    // The device and the interpreter agree with no lane looping (n = 0), some (37), all (64+).
    let k = KernelBuilder::new("divergent_while");
    let dst = k.buffer_mut::<u32>("dst");
    let n = k.arg::<u32>("n");
    let x = k.global_id(Dim::X);
    let i = k.var(x);
    let acc = k.var(k.lit(0u32));
    k.while_(
        || i.get().lt(n),
        || {
            acc.set(acc.get() + i.get());
            i.set(i.get() + 7u32);
        },
    );
    k.store(&dst, x, acc.get());
    let f = k.finish().unwrap();
    let dev = kjit_runtime::emu::GcnEmulator::new();
    for t in ALL_TARGETS {
        let k = compile(&f, t, &CompileOptions::default()).unwrap();
        assert!(k.asm.contains("v_cmp_"), "{t}\n{}", k.asm);
        assert!(
            !k.asm
                .lines()
                .any(|l| l.contains("s_and_b64 s[") && l.contains(", exec,")),
            "{t}\n{}",
            k.asm
        );
        check_u32_sizes(&dev, &k, &f, t, &[0u32, 37, 64, 200]);
    }
}

/// `dst[gid] = sum over i < n of (gid + i)` in a uniform loop, with a uniform early return
/// (`n > limit`) before it and a divergent `if` inside it (odd `i` adds `gid` once more).
fn uniform_loop() -> kjit_ir::Function {
    let k = KernelBuilder::new("uniform_loop");
    let dst = k.buffer_mut::<u32>("dst");
    let n = k.arg::<u32>("n");
    let limit = k.arg::<u32>("limit");
    let gid = k.global_id(Dim::X);
    k.return_if(n.gt(limit));
    let acc = k.var(k.lit(0u32));
    k.for_range(k.lit(0u32), n, k.lit(1u32), |i| {
        acc.set(acc.get() + gid + i);
        k.if_((gid + i).lt(k.lit(40u32)), || acc.set(acc.get() + gid));
    });
    k.store(&dst, gid, acc.get());
    k.finish().unwrap()
}

#[test]
fn uniform_control_flow_branches_on_scc_without_exec_masks() {
    // The uniform return and loop are `s_cmp` + `s_cbranch_scc*` (no EXEC bookkeeping, no
    // `s_cbranch_execz`); only the divergent `if` inside the loop sets EXEC.
    // Run on the device against the interpreter with a partial last wave (100 work-items),
    // through the loop (n = 5), not at all (n = 0) and past the early return (n > limit).
    let f = uniform_loop();
    let dev = kjit_runtime::emu::GcnEmulator::new();
    for t in ALL_TARGETS {
        let k = compile(&f, t, &CompileOptions::default()).unwrap();
        assert!(
            k.asm.matches("s_cbranch_scc").count() >= 2,
            "{t}\n{}",
            k.asm
        );
        // Everything before the divergent compare is uniform: no EXEC read or written.
        let uniform_part = &k.asm[..k.asm.find("v_cmp_").expect("the divergent compare")];
        assert!(!uniform_part.contains("exec"), "{t}\n{}", k.asm);
        check_u32_pairs(&dev, &k, &f, t, &[(5u32, 10u32), (0, 10), (11, 10)]);
    }
}

/// In a uniform loop over `i < n`: `if (lid < t) acc += x` as a triangle (`if_`) or a diamond
/// (`if_else`, the other arm subtracting), then `acc += i` after the join; `dst[gid] = acc`.
fn if_in_loop(diamond: bool) -> kjit_ir::Function {
    let k = KernelBuilder::new("if_in_loop");
    let dst = k.buffer_mut::<u32>("dst");
    let n = k.arg::<u32>("n");
    let t = k.arg::<u32>("t");
    let gid = k.global_id(Dim::X);
    let lid = k.local_id(Dim::X);
    let acc = k.var(k.lit(0u32));
    k.for_range(k.lit(0u32), n, k.lit(1u32), |i| {
        let c = (lid + i).lt(t);
        if diamond {
            k.if_else(c, || acc.set(acc.get() + gid), || acc.set(acc.get() * 3u32));
        } else {
            k.if_(c, || acc.set(acc.get() + gid));
        }
        acc.set(acc.get() + i);
    });
    k.store(&dst, gid, acc.get());
    k.finish().unwrap()
}

#[test]
fn an_if_join_restores_the_saved_exec() {
    // LLVM's shape: EXEC is saved when the `if` is entered, the join restores `exec = saved`;
    // no `s_andn2_b64` for the lanes that skip a triangle's arm (the join's argument is
    // written for every lane before the arm) and no `s_or_b64` collecting lanes at the join. The device matches the interpreter with a
    // partial wave, every lane in, none in and some in.
    let dev = kjit_runtime::emu::GcnEmulator::new();
    for diamond in [false, true] {
        let f = if_in_loop(diamond);
        for t in ALL_TARGETS {
            let k = compile(&f, t, &CompileOptions::default()).unwrap();
            // No `s_or_b64` (the buffer descriptor is built from 32-bit words).
            assert_eq!(k.asm.matches("s_or_b64").count(), 0, "{t}\n{}", k.asm);
            if !diamond {
                assert!(!k.asm.contains("s_andn2_b64"), "{t}\n{}", k.asm);
            }
            for (n, th) in [(4u32, 30u32), (3, 200), (5, 0)] {
                let args = vec![
                    kjit_kernels::poisoned(kjit_ir::ElemType::U32, 128),
                    Arg::U32(n),
                    Arg::U32(th),
                ];
                let (got, want) = device_and_interpreter(&dev, &k, &f, args, 100, 0);
                assert_eq!(got, want, "{t} diamond={diamond} n={n} t={th}");
            }
        }
    }
}

#[test]
fn a_descriptor_built_after_another_dies_shares_its_sgprs() {
    // vector_add: `c`'s descriptor is loaded after the loads of `a` and `b` issue and built
    // after the wait for them, in the quad one of theirs used; that wait also covers its
    // `s_load` (one `s_waitcnt vmcnt(0) lgkmcnt(0)`), so the kernel has two waits, as before.
    let f = (kjit_kernels::all()
        .iter()
        .find(|s| s.name == "vector_add")
        .unwrap()
        .build)()
    .unwrap();
    for t in ALL_TARGETS {
        let a = compile(&f, t, &loaded_args()).unwrap().asm.to_string();
        let quad = |l: &str| {
            l.rsplit_once("s[")
                .map(|(_, q)| q.split(']').next().unwrap().to_string())
        };
        let loads: Vec<String> = a
            .lines()
            .filter(|l| l.contains("buffer_load_dword"))
            .filter_map(quad)
            .collect();
        let store = a
            .lines()
            .find(|l| l.contains("buffer_store_dword"))
            .and_then(quad)
            .unwrap();
        assert!(loads.contains(&store), "{t}\n{a}");
        assert_eq!(a.matches("s_waitcnt").count(), 2, "{t}\n{a}");
        assert!(a.contains("s_waitcnt vmcnt(0) lgkmcnt(0)"), "{t}\n{a}");
    }
}

/// `if (lid < t) { i = lid; while (i < n) { acc += i; i += 7 } }; dst[gid] = acc`: a loop
/// with a per-lane exit whose header is one compare, entered by some waves with no lane.
fn divergent_loop_in_if() -> kjit_ir::Function {
    let k = KernelBuilder::new("divergent_loop_in_if");
    let dst = k.buffer_mut::<u32>("dst");
    let n = k.arg::<u32>("n");
    let t = k.arg::<u32>("t");
    let gid = k.global_id(Dim::X);
    let lid = k.local_id(Dim::X);
    let acc = k.var(k.lit(0u32));
    k.if_(lid.lt(t), || {
        let i = k.var(lid);
        k.while_(
            || i.get().lt(n),
            || {
                acc.set(acc.get() + i.get() * 3u32);
                i.set(i.get() + 7u32);
            },
        );
    });
    k.store(&dst, gid, acc.get());
    k.finish().unwrap()
}

#[test]
fn a_short_loop_header_runs_under_an_empty_exec_without_a_skip() {
    // The header's section (one compare and the branch) is not branched around when EXEC is
    // empty: from the back edge EXEC is never empty (the latch leaves when no lane
    // continues), and a wave entering with no lane writes no lane there and leaves at the
    // latch. So between the back edge's target and the header's compare there is no
    // `s_cbranch_execz`. The device matches the interpreter with a partial second wave, for
    // waves with every lane, some lanes and no lane in the loop.
    let f = divergent_loop_in_if();
    let dev = kjit_runtime::emu::GcnEmulator::new();
    for t in ALL_TARGETS {
        let k = compile(&f, t, &CompileOptions::default()).unwrap();
        let lines: Vec<&str> = k.asm.lines().map(str::trim).collect();
        // The back edge: the `s_cbranch_scc1` whose label comes before it.
        let header = lines
            .iter()
            .enumerate()
            .find_map(|(at, l)| {
                let label = l.strip_prefix("s_cbranch_scc1 ")?;
                let def = format!("{label}:");
                lines[..at].iter().position(|x| *x == def)
            })
            .unwrap_or_else(|| panic!("{t}: no back edge\n{}", k.asm));
        let cmp = header
            + lines[header..]
                .iter()
                .position(|l| l.starts_with("v_cmp"))
                .unwrap_or_else(|| panic!("{t}: no compare in the loop\n{}", k.asm));
        assert!(
            !lines[header..cmp]
                .iter()
                .any(|l| l.starts_with("s_cbranch_execz")),
            "{t}\n{}",
            k.asm
        );
        check_u32_pairs(
            &dev,
            &k,
            &f,
            t,
            &[(40u32, 100u32), (40, 30), (40, 0), (0, 100)],
        );
    }
}

#[test]
fn descriptor_words_are_computed_over_the_loaded_quad() {
    // saxpy: both descriptors are built in the quads their kernel arguments were loaded to,
    // the `s_bfe_u64` of the address pair and the `s_lshl_b32` of the length writing what they
    // read (the webs try a dying source's registers first, the length's SGPR is the quad's
    // dword it was loaded to), and `y`'s length is read before it is overwritten. So no second quad
    // and no temporary pair: SGPRs within clang-19's + 8 (its twin: 12 on gfx942, 11 on the
    // others, plus 6 or 4 that `.sgpr_count` adds).
    let f = (kjit_kernels::find("saxpy").unwrap().build)().unwrap();
    for t in ALL_TARGETS {
        let k = compile(&f, t, &loaded_args()).unwrap();
        for l in k.asm.lines().map(str::trim) {
            let Some(ops) = l
                .strip_prefix("s_bfe_u64 ")
                .or_else(|| l.strip_prefix("s_lshl_b32 "))
            else {
                continue;
            };
            let ops: Vec<&str> = ops.split(", ").collect();
            if ops[1].starts_with("s[") {
                assert_eq!(ops[0], ops[1], "{t}: {l}\n{}", k.asm);
            }
        }
        let clang = if t == Target::Gfx942 { 12 } else { 11 };
        assert!(
            k.header.sgprs <= clang + 8,
            "{t}: {}\n{}",
            k.header.sgprs,
            k.asm
        );
    }
}

#[test]
fn hash_prologue_reads_rounds_from_outs_quad_and_builds_descriptors_after_the_compare() {
    // hash_chain's arguments: seeds, table, out (pointer, length) and `rounds` right after
    // out's length: one `s_load_dwordx4` holds out's pointer, length and `rounds`, so `rounds`
    // is not loaded again (3 quads + the workgroup size: 4 loads). The descriptors are built
    // after the `i < out.len()` compare has read the length and the workgroup id and size have
    // died, whose SGPRs then take the copy of (length, rounds) and the mask: SGPRs within
    // clang-19's + 8 (its twin: 14 on gfx942, 12 on gfx90a, 16 on gfx900); gfx942 and gfx90a + 9:
    // with the descriptors built from single SGPRs, one `num_records` word lands outside its
    // quad and is copied in (the allocator places an `Int` register, not each of its values,
    // and the register holding it holds a value live where the quad's dword is).
    let f = (kjit_kernels::find("hash_chain").unwrap().build)().unwrap();
    for (t, clang) in [
        (Target::Gfx942, 15),
        (Target::Gfx90a, 13),
        (Target::Gfx900, 16),
    ] {
        let k = compile(&f, t, &loaded_args()).unwrap();
        let a = &k.asm;
        assert_eq!(a.matches("s_load_dword").count(), 4, "{t}\n{a}");
        assert!(!a.contains("0x2c\n"), "{t}: rounds loaded again\n{a}");
        let cmp = a.find("v_cmp_lt_u32").expect("the i < len compare");
        let last_build = a.rfind(", 0x27000").expect("descriptor config words");
        assert!(
            a[..cmp].matches("s_mov_b64 s[").count() <= 1,
            "{t}: one copy of the length pair at most\n{a}"
        );
        assert!(last_build < a.find("s_cbranch_execz").unwrap(), "{t}\n{a}");
        assert!(
            k.header.sgprs <= clang + 8,
            "{t}: {} SGPRs\n{a}",
            k.header.sgprs
        );
    }
}

#[test]
fn a_lane_mask_pair_takes_the_workgroup_ids_sgpr_after_its_last_reader() {
    // hash_chain on gfx942, arguments preloaded: the workgroup id is the system SGPR after the
    // kernarg pointer and the preloaded dwords, last read (global id) before the `i < len`
    // compare. The compare's mask pair and its `s_and_b64 exec` result are tuple webs, placed
    // before regalloc2 runs with the id's SGPR blocked; once the singles are placed they are
    // lowered onto the id's SGPR, dead by then (`regalloc.rs`, `lower_sgpr_webs`), instead of
    // staying above the group size's SGPR (`s[16:17]`, 24 SGPRs; now 23).
    let f = (kjit_kernels::find("hash_chain").unwrap().build)().unwrap();
    let k = compile(&f, Target::Gfx942, &CompileOptions::default()).unwrap();
    let a = k.asm.to_string();
    let preload: u16 = a
        .split("kernarg preload: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("the header names the preloaded dwords");
    let workgroup_id = 2 + preload;
    let cmp = a
        .lines()
        .find(|l| l.contains("v_cmp_lt_u32_e64 s["))
        .expect("the i < len compare");
    let mask: u16 = cmp
        .split("s[")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(
        mask <= workgroup_id,
        "mask pair at s{mask}, the workgroup id in s{workgroup_id}\n{a}"
    );
    assert!(k.header.sgprs <= 23, "{} SGPRs\n{a}", k.header.sgprs);
}

#[test]
fn reduce_sum_adds_its_last_64_sums_by_dpp_without_lds_or_barriers() {
    // reduce_sum: 256 work-items, one LDS halving round across waves (128 sums), then the
    // first wave adds its 64 by DPP: two barriers (after the tile is written and after the
    // round) instead of the 9 of a full LDS tree, and no LDS store after the round's.
    let f = (kjit_kernels::find("reduce_sum").unwrap().build)().unwrap();
    for t in ALL_TARGETS {
        let k = compile(&f, t, &CompileOptions::default()).unwrap();
        let a = &k.asm;
        assert_eq!(a.matches("s_barrier").count(), 2, "{t}\n{a}");
        assert_eq!(a.matches("ds_write_b32").count(), 2, "{t}\n{a}");
        assert_eq!(a.matches("_dpp ").count(), 6, "{t}\n{a}");
        assert!(!a.contains("s_cbranch_scc"), "{t}: no loop left\n{a}");
    }
}

#[test]
fn a_masked_index_selects_its_byte_offset_with_the_shift_and_add_folded() {
    // `dst[select(x < n, x + u, MAX)]` and `dst[select(x < n, x + u + w, MAX)]`: the byte
    // offset is one `v_add_lshl_u32` of the sum (an `s_add_u32` first for two uniform terms)
    // and a `v_cndmask_b32` with -4 (`u32::MAX << 2`), not a select of indices shifted after
    // it; masked-off lanes store nothing, and indices past the end are dropped, on the device
    // as in the interpreter.
    let k = KernelBuilder::new("masked_index");
    let dst = k.buffer_mut::<u32>("dst");
    let n = k.arg::<u32>("n");
    let u = k.arg::<u32>("u");
    let w = k.arg::<u32>("w");
    let x = k.local_id(Dim::X);
    let outside = k.lit(u32::MAX);
    k.store(&dst, k.select(x.lt(n), x + u, outside), x);
    k.store(&dst, k.select(x.lt(n), x + u + w, outside), x + 1000u32);
    let f = k.finish().unwrap();
    let dev = kjit_runtime::emu::GcnEmulator::new();
    for t in ALL_TARGETS {
        let k = compile(&f, t, &CompileOptions::default()).unwrap();
        let a = &k.asm;
        assert!(!a.contains("v_lshlrev_b32"), "{t}\n{a}");
        assert_eq!(a.matches("v_add_lshl_u32").count(), 2, "{t}\n{a}");
        assert_eq!(a.matches(", -4, v").count(), 2, "{t}\n{a}");
        for (n, u, w) in [(64u32, 0u32, 64u32), (37, 5, 100), (0, 0, 0), (64, 100, 1)] {
            let args = vec![
                kjit_kernels::poisoned(kjit_ir::ElemType::U32, 128),
                Arg::U32(n),
                Arg::U32(u),
                Arg::U32(w),
            ];
            let (got, want) = device_and_interpreter(&dev, &k, &f, args, 64, 0);
            assert_eq!(got, want, "{t} n={n} u={u} w={w}");
        }
    }
}

#[test]
fn masked_stores_of_one_mask_share_one_narrowed_exec() {
    // Four stores at `select(x < n, i, MAX)` (dropped where `x >= n`), then one unmasked. The
    // first store's value `x * 7` is made before the second and read by the unmasked store, so
    // it cannot run under the narrowed EXEC: the first store keeps its `v_cndmask_b32` and the
    // other three (three distinct indices pay for the two EXEC writes) share one
    // `s_and_saveexec_b64` … `s_mov_b64 exec`; on the device as in the interpreter.
    let k = KernelBuilder::new("masked_stores");
    let dst = k.buffer_mut::<u32>("dst");
    let n = k.arg::<u32>("n");
    let x = k.local_id(Dim::X);
    let own = x.lt(n);
    let outside = k.lit(u32::MAX);
    k.store(&dst, k.select(own, x, outside), x);
    let a = x * 7u32;
    for r in 1..4u32 {
        k.store(&dst, k.select(own, x + 64 * r, outside), a + r);
    }
    k.store(&dst, x + 256u32, a);
    let f = k.finish().unwrap();
    let dev = kjit_runtime::emu::GcnEmulator::new();
    for t in ALL_TARGETS {
        let k = compile(&f, t, &CompileOptions::default()).unwrap();
        let a = &k.asm;
        assert_eq!(a.matches("s_and_saveexec_b64").count(), 1, "{t}\n{a}");
        assert_eq!(a.matches("s_mov_b64 exec,").count(), 1, "{t}\n{a}");
        assert_eq!(a.matches(", -4, v").count(), 1, "{t}\n{a}");
        for n in [0u32, 1, 37, 64, 100] {
            let args = vec![
                kjit_kernels::poisoned(kjit_ir::ElemType::U32, 320),
                Arg::U32(n),
            ];
            let (got, want) = device_and_interpreter(&dev, &k, &f, args, 64, 0);
            assert_eq!(got, want, "{t} n={n}");
        }
    }
    // Two masked stores: the region would cost what it saves, so both keep their selects.
    let k = KernelBuilder::new("two_masked_stores");
    let dst = k.buffer_mut::<u32>("dst");
    let n = k.arg::<u32>("n");
    let x = k.local_id(Dim::X);
    let own = x.lt(n);
    let outside = k.lit(u32::MAX);
    k.store(&dst, k.select(own, x, outside), x);
    k.store(&dst, k.select(own, x + 64u32, outside), x + 1u32);
    let f = k.finish().unwrap();
    for t in ALL_TARGETS {
        let a = asm(&f, t);
        assert!(!a.contains("saveexec"), "{t}\n{a}");
        assert_eq!(a.matches(", -4, v").count(), 2, "{t}\n{a}");
    }
}

#[test]
fn a_divisor_that_cannot_be_zero_has_no_zero_check() {
    // `x / max(d, 1)` and `x % max(d, 1)`: no compare of the divisor with 0 and no choice of
    // all ones (`x / d` keeps both); the results match the interpreter for d = 0, 1, 7.
    let div = |guarded: bool| {
        let k = KernelBuilder::new("divide");
        let dst = k.buffer_mut::<u32>("dst");
        let d = k.arg::<u32>("d");
        let d = if guarded { d.max(1u32) } else { d };
        let x = k.local_id(Dim::X) * 1000u32 + 3u32;
        k.store(&dst, k.local_id(Dim::X), x / d + (x % d) * 65536u32);
        k.finish().unwrap()
    };
    let dev = kjit_runtime::emu::GcnEmulator::new();
    for t in ALL_TARGETS {
        assert!(asm(&div(false), t).contains("v_cmp_eq_u32"), "{t}");
        let f = div(true);
        let k = compile(&f, t, &CompileOptions::default()).unwrap();
        assert!(!k.asm.contains("v_cmp_eq_u32"), "{t}\n{}", k.asm);
        for d in [0u32, 1, 7] {
            let args = vec![
                kjit_kernels::poisoned(kjit_ir::ElemType::U32, 64),
                Arg::U32(d),
            ];
            let (got, want) = device_and_interpreter(&dev, &k, &f, args, 64, 0);
            assert_eq!(got, want, "{t} d={d}");
        }
    }
}

/// `lds[lid] = 3 * lid; barrier; acc = sum over i < n of body(lid, i); dst[lid] = acc`, with
/// `lid` defined in the entry block: compiled on every target, the loop (after its first
/// label) has no `v_lshlrev_b32` and contains each of `in_loop`; the sums match.
fn check_invariant_lds_index_in_loop(
    name: &str,
    in_loop: &[&str],
    body: impl for<'a> Fn(
        &'a KernelBuilder,
        &kjit_frontend::Lds<'a, u32>,
        kjit_frontend::Val<'a, u32>,
        kjit_frontend::Val<'a, u32>,
    ) -> kjit_frontend::Val<'a, u32>,
) {
    let k = KernelBuilder::new(name);
    let dst = k.buffer_mut::<u32>("dst");
    let n = k.arg::<u32>("n");
    let lds = k.lds::<u32>("words", 64);
    let lid = k.local_id(Dim::X);
    k.store(&lds, lid, lid * 3u32);
    k.barrier();
    let acc = k.var(k.lit(0u32));
    k.for_range(k.lit(0u32), n, k.lit(1u32), |i| {
        acc.set(acc.get() + body(&k, &lds, lid, i));
    });
    k.store(&dst, lid, acc.get());
    let f = k.finish().unwrap();
    let dev = kjit_runtime::emu::GcnEmulator::new();
    for t in ALL_TARGETS {
        let k = compile(&f, t, &CompileOptions::default()).unwrap();
        let a = &k.asm;
        let (_, looped) = a.split_once(".LBB").expect("a loop label");
        assert!(!looped.contains("v_lshlrev_b32"), "{t}\n{a}");
        for m in in_loop {
            assert!(looped.contains(m), "{t}: no {m}\n{a}");
        }
        check_u32_sizes(&dev, &k, &f, t, &[0u32, 1, 5]);
    }
}

#[test]
fn an_invariant_lds_index_is_shifted_once_before_the_loop() {
    // `lds[lid]` read in a uniform loop: its byte offset is made in the entry block.
    check_invariant_lds_index_in_loop("lds_in_loop", &[], |k, lds, lid, i| k.load(lds, lid) * i);
}

#[test]
fn a_keyed_invariant_lds_index_is_xored_in_bytes_in_the_loop() {
    // `lds[lid ^ c]` for c = 1, 2, 3 (the GEMM's k-group planes key their reads so): the XOR is
    // made on `lid`'s byte offset, shifted once before the loop, with `c << 2` (before: one
    // shift per key and iteration).
    check_invariant_lds_index_in_loop("keyed_lds_in_loop", &["v_xor_b32"], |k, lds, lid, i| {
        let mut sum = k.load(lds, lid ^ 1u32) * (i + 1u32);
        for c in 2..4u32 {
            sum = sum + k.load(lds, lid ^ c) * (i + c);
        }
        sum
    });
}

/// `if (lid < t) { for i < n { acc += gid * i; if (i & 1) acc ^= i } }; dst[gid] = acc`: a
/// uniform loop (with a uniform `if` inside) in a divergent `if`.
fn uniform_loop_in_if() -> kjit_ir::Function {
    let k = KernelBuilder::new("uniform_loop_in_if");
    let dst = k.buffer_mut::<u32>("dst");
    let n = k.arg::<u32>("n");
    let t = k.arg::<u32>("t");
    let gid = k.global_id(Dim::X);
    let lid = k.local_id(Dim::X);
    let acc = k.var(k.lit(7u32));
    k.if_(lid.lt(t), || {
        k.for_range(k.lit(0u32), n, k.lit(1u32), |i| {
            acc.set(acc.get() + gid * i);
            k.if_((i & 1u32).ne(k.lit(0u32)), || acc.set(acc.get() ^ i));
        });
    });
    k.store(&dst, gid, acc.get());
    k.finish().unwrap()
}

#[test]
fn a_uniform_loop_in_a_divergent_if_branches_on_scc_without_exit_masks() {
    // Every lane that enters the loop leaves it together, so it runs under the `if`'s EXEC
    // as a scalar loop: its branches are `s_cmp` + `s_cbranch_scc*` and a back edge
    // `s_branch`, with no per-edge lane masks (`s_cselect_b64`) and no latch testing a mask
    // (`s_cmp_lg_u64`), the divergent loop's shape, and no EXEC in the loop. The device
    // matches the interpreter with a partial second wave, for waves with every lane, some
    // lanes and no lane in the `if`, with and without rounds.
    let f = uniform_loop_in_if();
    let dev = kjit_runtime::emu::GcnEmulator::new();
    for t in ALL_TARGETS {
        let k = compile(&f, t, &CompileOptions::default()).unwrap();
        let a = &k.asm;
        assert!(!a.contains("s_cselect_b64"), "{t}\n{a}");
        assert!(!a.contains("s_cmp_lg_u64"), "{t}\n{a}");
        assert!(a.contains("s_branch"), "{t}\n{a}");
        // The loop (from the back edge's target to the back edge) neither reads nor writes EXEC.
        let lines: Vec<&str> = a.lines().map(str::trim).collect();
        let (head, back) = lines
            .iter()
            .enumerate()
            .find_map(|(at, l)| {
                let def = format!("{}:", l.strip_prefix("s_branch ")?);
                Some((lines[..at].iter().position(|x| *x == def)?, at))
            })
            .unwrap_or_else(|| panic!("{t}: no back edge\n{a}"));
        assert!(
            !lines[head..back].iter().any(|l| l.contains("exec")),
            "{t}\n{a}"
        );
        check_u32_pairs(
            &dev,
            &k,
            &f,
            t,
            &[(5u32, 100u32), (5, 30), (5, 80), (5, 0), (0, 100)],
        );
    }
}

/// `dst[gid] = xor of (gid + n) * K_j` for eight constants no VOP3 takes inline: gfx9's VOP3
/// (`v_mul_lo_u32`) takes no literal, so each constant goes through a register. With the
/// constant bus free it is an SGPR (`s_mov_b32`), not a VGPR (hash_chain's prologue held 6
/// VGPRs of constants), and each `s_mov_b32` stays next to its multiply instead of all being
/// hoisted to the block's start by the latency schedule (8 SGPRs live at once). Checked on
/// kjit's device against the interpreter.
#[test]
fn vop3_literals_go_through_sgprs_set_right_before_their_reader() {
    const K: [u32; 8] = [
        0x9e37_79b1,
        0x85eb_ca77,
        0xc2b2_ae3d,
        0x27d4_eb2f,
        0x1656_67b1,
        0xd3a2_646c,
        0xfd70_46c5,
        0xb55a_4f09,
    ];
    let k = KernelBuilder::new("vop3_literals");
    let dst = k.buffer_mut::<u32>("dst");
    let n = k.arg::<u32>("n");
    let gid = k.global_id(Dim::X);
    let x = gid + n;
    let mut acc = x * K[0];
    for &c in &K[1..] {
        acc = acc ^ (x * c);
    }
    k.store(&dst, gid, acc);
    let f = k.finish().unwrap();
    let dev = kjit_runtime::emu::GcnEmulator::new();
    for t in ALL_TARGETS {
        let k = compile(&f, t, &CompileOptions::default()).unwrap();
        let lines: Vec<&str> = k.asm.lines().map(str::trim).collect();
        for c in K {
            let lit = format!("0x{c:x}");
            assert!(
                !lines
                    .iter()
                    .any(|l| l.starts_with("v_mov_b32") && l.ends_with(&lit)),
                "{t}: {lit} in a VGPR\n{}",
                k.asm
            );
            let at = lines
                .iter()
                .position(|l| l.starts_with("s_mov_b32") && l.ends_with(&lit))
                .unwrap_or_else(|| panic!("{t}: no s_mov_b32 of {lit}\n{}", k.asm));
            let sgpr = lines[at]
                .trim_start_matches("s_mov_b32")
                .split(',')
                .next()
                .unwrap()
                .trim();
            let reader = lines[at + 1..]
                .iter()
                .position(|l| l.contains(sgpr))
                .unwrap_or_else(|| panic!("{t}: {sgpr} unread\n{}", k.asm));
            assert!(
                lines[at + 1 + reader].starts_with("v_mul_lo_u32") && reader <= 2,
                "{t}: {lit}'s {sgpr} read {reader} lines later by {}\n{}",
                lines[at + 1 + reader],
                k.asm
            );
        }
        check_u32_sizes(&dev, &k, &f, t, &[0u32, 7, 0x8000_0001]);
    }
}

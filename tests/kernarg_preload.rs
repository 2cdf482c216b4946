//! Kernel arguments preloaded into user SGPRs (gfx90a/gfx942, `codeobj/preload.rs`).
//!
//! - kjit's code: every library kernel that preloads runs right on a device that preloads
//!   (entry + 256) and on one dispatching as old firmware (entry: the compatibility prologue
//!   loads the same dwords), and the old-firmware run executes exactly the prologue's loads more;
//!   with `kernarg_preload: false` nothing is preloaded and the code has no prologue.
//! - The prologue's layout: 256 bytes, loads of the preloaded dwords into the SGPRs after the
//!   kernarg pointer, a wait and a branch to entry + 256, `s_nop 0` padding.
//! - LLVM 19 as the oracle: clang-19 with `-mllvm -amdgpu-kernarg-preload-count=16` compiles the
//!   OpenCL twins to code objects that preload; they run right on the device, and as old firmware
//!   they reach LLVM 19's `s_trap 2` header, which the device reports.

use kjit::exec::run_case;
use kjit::{compile, CompileOptions};
use kjit_backend_gcn::codeobj::CodeObject;
use kjit_backend_gcn::isa::{self, Opcode, Operand};
use kjit_backend_gcn::llvm_oracle::{compile_opencl, require_all, OpenClBuild, Tool};
use kjit_backend_gcn::Target;
use kjit_ir::interp::Arg;
use kjit_runtime::emu::gcn::GcnEmulator;
use kjit_runtime::emu::RunConfig;
use kjit_runtime::{ArgValue, Device, LaunchDims};

const PRELOADING: [Target; 2] = [Target::Gfx942, Target::Gfx90a];

/// The instructions of the first kernel of `code_object`, with their byte offsets, up to the
/// first word that does not decode (the padding after `s_endpgm` decodes as `s_nop`s).
fn decoded(code_object: &[u8], t: Target) -> Vec<(u32, isa::Inst)> {
    let co = CodeObject::parse(code_object).expect("reads");
    let words: Vec<u32> = co.kernels[0]
        .code
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < words.len() {
        let Ok((inst, n)) = isa::decode(&words[at..], t) else {
            break;
        };
        out.push((4 * at as u32, inst));
        at += n;
    }
    out
}

fn legacy_device() -> GcnEmulator {
    GcnEmulator::with_config(RunConfig {
        legacy_kernarg_firmware: true,
        ..RunConfig::default()
    })
}

#[test]
fn library_kernels_run_with_and_without_preloading_firmware() {
    let mut preloading = 0;
    for spec in kjit_kernels::all().iter().chain(kjit_kernels::matrix()) {
        let func = (spec.build)().expect("kernel builds");
        for t in PRELOADING {
            let ck = compile(&func, t, &CompileOptions::default()).expect("compiles");
            let co = CodeObject::parse(&ck.code_object).expect("reads");
            let kd = co.kernels[0].descriptor;
            let n = kd.kernarg_preload_length();
            if n == 0 {
                continue;
            }
            preloading += 1;
            assert_eq!(kd.kernarg_preload_offset(), 0);
            assert_eq!(n, ck.header.kernarg_preload);
            assert_eq!(kd.user_sgpr_count(), 2 + n, "{} {t}", spec.name);
            let case = (spec.make_case)(spec.default_n.min(300), 11);
            let mut want = case.args.clone();
            kjit_ir::interp::run(&func, &case.launch, &mut want).expect("interpreter runs");
            let now = run_case(&GcnEmulator::new(), &ck.code_object, &func, &case)
                .unwrap_or_else(|e| panic!("{} {t}: {e}", spec.name));
            let old = run_case(&legacy_device(), &ck.code_object, &func, &case)
                .unwrap_or_else(|e| panic!("{} {t} as old firmware: {e}", spec.name));
            for (out, how) in [(&now, "preloaded"), (&old, "old firmware")] {
                let expected: Vec<_> = case
                    .outputs
                    .iter()
                    .map(|&o| want[o].as_buffer().expect("output buffer").clone())
                    .collect();
                kjit_kernels::check(&case, &out.args, &expected, spec.tolerance)
                    .unwrap_or_else(|m| panic!("{} {t} {how}: {m}", spec.name));
            }
            // Old firmware ran the prologue: its loads once per wave, on top of the same body.
            let loads = ck.header.prologue_instructions as u64 - 2;
            assert_eq!(
                old.stats.smem,
                now.stats.smem + loads * now.stats.waves,
                "{} {t}: {loads} prologue loads per wave",
                spec.name
            );
        }
    }
    assert!(preloading >= 10, "only {preloading} kernels preload");
}

#[test]
fn the_switch_turns_preloading_off_and_gfx900_never_preloads() {
    let spec = kjit_kernels::find("saxpy").expect("library kernel");
    let func = (spec.build)().expect("builds");
    let off = CompileOptions {
        kernarg_preload: false,
        ..CompileOptions::default()
    };
    for (t, opts, preloads) in [
        (Target::Gfx942, &off, false),
        (Target::Gfx90a, &off, false),
        (Target::Gfx900, &CompileOptions::default(), false),
        (Target::Gfx942, &CompileOptions::default(), true),
    ] {
        let ck = compile(&func, t, opts).expect("compiles");
        let kd = CodeObject::parse(&ck.code_object).expect("reads").kernels[0].descriptor;
        assert_eq!(kd.kernarg_preload_length() > 0, preloads, "{t}");
        assert_eq!(ck.header.kernarg_preload > 0, preloads, "{t}");
        // Without preloading the code starts with the body (no branch over a prologue).
        let insts = decoded(&ck.code_object, t);
        let first = &insts[0].1;
        assert_eq!(
            first.op == Opcode::SLoadDwordx2 && preloads,
            preloads,
            "{t}: {first:?}"
        );
        assert_eq!(ck.asm.contains(".Lkernarg_preloaded"), preloads, "{t}");
    }
}

/// A buffer's padding dword after its length is preloaded only where it lands on its
/// descriptor quad's config word (saxpy's slots sit on aligned quads: s[4:7], s[8:11]); where
/// nothing reads it (vector_add's last slot starts at s10) the workgroup id takes its SGPR.
#[test]
fn a_lengths_padding_is_preloaded_only_as_a_quads_config_word() {
    for (name, t, want) in [
        ("vector_add", Target::Gfx942, 11),
        ("wave_permute", Target::Gfx942, 11),
        ("saxpy", Target::Gfx90a, 10),
    ] {
        let spec = kjit_kernels::find(name).expect("library kernel");
        let func = (spec.build)().expect("builds");
        let ck = compile(&func, t, &CompileOptions::default()).expect("compiles");
        assert_eq!(ck.header.kernarg_preload, want, "{name} {t}");
        let kd = CodeObject::parse(&ck.code_object).expect("reads").kernels[0].descriptor;
        assert_eq!(kd.kernarg_preload_length(), want, "{name} {t}");
    }
}

/// Every library kernel declares only the hidden arguments it reads (workgroup sizes and
/// counts), right after its explicit arguments and its last buffer's quad, with a segment that
/// ends there; saxpy's group size then sits in the padding dword after `y.len`, inside the 10
/// dwords gfx942 preloads (14 and 23 SGPRs with LLVM's 256-byte block).
#[test]
fn hidden_arguments_are_only_those_read_and_follow_the_explicit_ones() {
    use kjit_backend_gcn::codeobj::ValueKind;
    for spec in kjit_kernels::all().iter().chain(kjit_kernels::matrix()) {
        let func = (spec.build)().expect("kernel builds");
        let text = func.to_string();
        let ck = compile(&func, Target::Gfx942, &CompileOptions::default()).expect("compiles");
        let meta = &CodeObject::parse(&ck.code_object).expect("reads").kernels[0].meta;
        let explicit_end = meta
            .explicit_args()
            .map(|a| a.offset + a.size)
            .max()
            .unwrap_or(0);
        let hidden: Vec<_> = meta
            .args
            .iter()
            .filter(|a| a.value_kind.is_hidden())
            .collect();
        for a in &hidden {
            let (reads, dim) = match a.value_kind {
                ValueKind::HiddenGroupSizeX => ("workgroup_size", 'x'),
                ValueKind::HiddenGroupSizeY => ("workgroup_size", 'y'),
                ValueKind::HiddenGroupSizeZ => ("workgroup_size", 'z'),
                ValueKind::HiddenBlockCountX => ("num_workgroups", 'x'),
                ValueKind::HiddenBlockCountY => ("num_workgroups", 'y'),
                ValueKind::HiddenBlockCountZ => ("num_workgroups", 'z'),
                ref k => panic!("{}: declares {}", spec.name, k.as_str()),
            };
            assert!(
                text.contains(&format!("{reads}.{dim}")),
                "{}: declares {} but reads no {reads}.{dim}",
                spec.name,
                a.value_kind.as_str()
            );
            assert!(a.offset >= explicit_end, "{}: {a:?}", spec.name);
            assert_eq!(a.offset % a.size, 0, "{}: {a:?}", spec.name);
            assert!(a.offset < explicit_end + 8 + 4 * 6, "{}: {a:?}", spec.name);
        }
        let end = meta
            .args
            .iter()
            .map(|a| a.offset + a.size)
            .max()
            .unwrap_or(0);
        assert!(meta.kernarg_segment_size >= end, "{}", spec.name);
        assert!(
            meta.kernarg_segment_size <= end.div_ceil(8) * 8 + 4,
            "{}",
            spec.name
        );
    }
    let spec = kjit_kernels::find("saxpy").expect("library kernel");
    let func = (spec.build)().expect("builds");
    let ck = compile(&func, Target::Gfx942, &CompileOptions::default()).expect("compiles");
    let meta = &CodeObject::parse(&ck.code_object).expect("reads").kernels[0].meta;
    let gs = meta
        .hidden_arg(&ValueKind::HiddenGroupSizeX)
        .expect("declared");
    assert_eq!((gs.offset, meta.kernarg_segment_size), (36, 40));
    assert_eq!(ck.header.kernarg_preload, 10);
    assert!(ck.header.sgprs <= 20, "{}", ck.header.sgprs);
}

/// A buffer slot crossing the preloaded prefix (hash_chain's `out` on gfx90a: dwords 8–11 of
/// 10 preloaded) loads only its length and the `rounds` after it, not the preloaded address
/// again in a quad above every preloaded SGPR (24 SGPRs before, 20 now).
#[test]
fn a_slot_crossing_the_preloaded_prefix_loads_only_what_is_not_preloaded() {
    let spec = kjit_kernels::find("hash_chain").expect("library kernel");
    let func = (spec.build)().expect("builds");
    let ck = compile(&func, Target::Gfx90a, &CompileOptions::default()).expect("compiles");
    assert_eq!(ck.header.kernarg_preload, 10);
    let body: Vec<_> = decoded(&ck.code_object, Target::Gfx90a)
        .into_iter()
        .filter(|(at, _)| *at >= 256)
        .map(|(_, i)| i)
        .collect();
    let loads: Vec<(Opcode, Operand)> = body
        .iter()
        .filter(|i| {
            matches!(
                i.op,
                Opcode::SLoadDword | Opcode::SLoadDwordx2 | Opcode::SLoadDwordx4
            )
        })
        .map(|i| (i.op, i.operands[2]))
        .collect();
    assert!(
        loads.contains(&(Opcode::SLoadDwordx2, Operand::Imm(0x28))),
        "{loads:?}"
    );
    assert!(
        !loads.iter().any(|&(op, _)| op == Opcode::SLoadDwordx4),
        "{loads:?}"
    );
    assert!(ck.header.sgprs <= 20, "{}", ck.header.sgprs);
}

#[test]
fn the_prologue_loads_the_preloaded_sgprs_and_branches_to_entry_plus_256() {
    let spec = kjit_kernels::find("vector_add").expect("library kernel");
    let func = (spec.build)().expect("builds");
    for t in PRELOADING {
        let ck = compile(&func, t, &CompileOptions::default()).expect("compiles");
        let n = ck.header.kernarg_preload;
        assert!(n >= 2, "{t}: {n}");
        let mut next_sgpr = 2u16;
        let mut next_byte = 0i64;
        let mut branch = None;
        let insts = decoded(&ck.code_object, t);
        for (at, i) in &insts {
            if *at >= 256 {
                break;
            }
            match i.op {
                Opcode::SLoadDword
                | Opcode::SLoadDwordx2
                | Opcode::SLoadDwordx4
                | Opcode::SLoadDwordx8 => {
                    let Operand::Sgpr { first, count } = i.operands[0] else {
                        panic!("{t}: {i:?}");
                    };
                    assert_eq!(first, next_sgpr, "{t}: loads fill the SGPRs in order");
                    assert_eq!(first % (count.min(4) as u16), 0, "{t}: aligned tuple");
                    assert_eq!(i.operands[1], Operand::sr(0, 2), "{t}: kernarg pointer");
                    assert_eq!(i.operands[2], Operand::Imm(next_byte), "{t}");
                    next_sgpr += count as u16;
                    next_byte += 4 * count as i64;
                }
                Opcode::SWaitcnt => assert!(branch.is_none()),
                Opcode::SBranch => {
                    let Operand::Imm(d) = i.operands[0] else {
                        panic!("{t}: {i:?}");
                    };
                    branch = Some(*at as i64 + 4 + 4 * d);
                }
                Opcode::SNop => assert!(branch.is_some(), "{t}: padding after the branch"),
                _ => panic!("{t}: {i:?} in the prologue"),
            }
        }
        assert_eq!(next_sgpr, 2 + n as u16, "{t}: every preloaded SGPR loaded");
        assert_eq!(branch, Some(256), "{t}: the branch lands on entry + 256");
        assert!(
            insts.iter().any(|(at, _)| *at == 256),
            "{t}: the body starts at 256"
        );
        assert!(
            insts.last().is_some_and(|(at, _)| *at > 256),
            "{t}: the body decodes"
        );
    }
}

/// clang-19's code object of OpenCL twin `name` for `target`, compiled with kernarg preloading.
fn clang_preloading_twin(name: &str, target: &str) -> Option<Vec<u8>> {
    let tools = require_all(&[Tool::Clang, Tool::Lld], "kernarg preload oracle")?;
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("kernels/opencl")
        .join(format!("{name}.cl"));
    let build = OpenClBuild {
        extra_args: &["-mllvm", "-amdgpu-kernarg-preload-count=16"],
        out_dir: None,
    };
    let so = compile_opencl(&tools[0], &tools[1], &src, target, &build)
        .unwrap_or_else(|e| panic!("{e}"));
    Some(std::fs::read(so).expect("clang wrote the object"))
}

#[test]
fn clang_19_preloading_twins_run_on_the_device() {
    for name in ["vector_add", "saxpy", "reduce_sum"] {
        let spec = kjit_kernels::find(name).expect("library kernel");
        for target in ["gfx942", "gfx90a", "gfx900"] {
            let Some(code) = clang_preloading_twin(name, target) else {
                return;
            };
            let co = CodeObject::parse(&code).expect("clang's object reads");
            let kd = co.kernels[0].descriptor;
            if target == "gfx900" {
                assert_eq!(kd.kernarg_preload_length(), 0, "gfx900 has no preloading");
            } else {
                assert!(
                    kd.kernarg_preload_length() > 0,
                    "{name} {target}: no preload"
                );
            }
            let case = (spec.make_case)(77, 5);
            let want = (spec.reference)(&case);
            let run = |dev: &GcnEmulator| -> Result<Vec<Arg>, String> {
                let module = dev.load_module(&code).map_err(|e| e.to_string())?;
                let mut args = Vec::new();
                let mut bufs = Vec::new();
                for a in &case.args {
                    match a {
                        Arg::Buffer(b) => {
                            let bytes = b.to_bytes();
                            let d = dev.alloc(bytes.len().max(4) as u64).unwrap();
                            dev.copy_to_device(d, 0, &bytes).unwrap();
                            args.push(ArgValue::Buffer(d));
                            args.push(ArgValue::U32(b.len() as u32));
                            bufs.push(Some(d));
                        }
                        Arg::F32(v) => {
                            args.push(ArgValue::F32(*v));
                            bufs.push(None);
                        }
                        Arg::U32(v) => {
                            args.push(ArgValue::U32(*v));
                            bufs.push(None);
                        }
                        other => panic!("{name}: argument {other:?} not used by these twins"),
                    }
                }
                let dims = LaunchDims {
                    grid: case.launch.grid,
                    block: case.launch.block,
                    dynamic_lds: 0,
                };
                dev.launch(module, name, dims, &args)
                    .map_err(|e| e.to_string())?;
                let mut after = case.args.clone();
                for &o in &case.outputs {
                    let (Some(d), Arg::Buffer(b)) = (bufs[o], &case.args[o]) else {
                        panic!("output {o} is not a buffer");
                    };
                    let mut bytes = vec![0u8; b.to_bytes().len()];
                    dev.copy_from_device(d, 0, &mut bytes).unwrap();
                    after[o] = Arg::Buffer(
                        kjit_ir::interp::BufferData::from_bytes(b.elem(), &bytes).unwrap(),
                    );
                }
                Ok(after)
            };
            let after = run(&GcnEmulator::new()).unwrap_or_else(|e| panic!("{name} {target}: {e}"));
            kjit_kernels::check(&case, &after, &want, spec.tolerance)
                .unwrap_or_else(|m| panic!("{name} {target}: {m}"));
            // LLVM 19's header is `s_trap 2` then s_nops: old firmware traps.
            let old = run(&legacy_device());
            if target == "gfx900" {
                assert!(old.is_ok(), "{name} gfx900 preloads nothing: {old:?}");
            } else {
                let e = old.expect_err("old firmware reaches clang-19's s_trap header");
                assert!(e.contains("s_trap 2"), "{name} {target}: {e}");
            }
        }
    }
}

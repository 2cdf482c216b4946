//! Hazard detection on kjit's software GCN device, with small kernels written in assembly
//! (`tests/hazards/*.s`, assembled by clang-19 for gfx942, gfx90a and gfx900): each runs clean and
//! correct with its waits, and is reported — naming wave, pc, register and the missing wait — when
//! the wait (or the barrier) is removed.

use std::path::Path;

use kjit_backend_gcn::llvm_oracle::{
    assemble_code_object, require_all, scratch_file, OpenClBuild, Tool,
};
use kjit_runtime::emu::{GcnEmulator, RunConfig, Schedule};
use kjit_runtime::{ArgValue, Device, DeviceError, LaunchDims};

const ALL: &[&str] = &["gfx942", "gfx90a", "gfx900"];

/// Assembles `hazards/<name>.s` for `target` with a descriptor and metadata for `nargs` buffer
/// arguments; `drop` removes every source line carrying that marker (`// WAIT`, `// BARRIER`).
fn assemble(name: &str, target: &str, nargs: usize, drop: Option<&str>) -> Option<Vec<u8>> {
    assemble_sized(name, target, nargs, drop, 8)
}

/// As [`assemble`], with `vgprs` VGPRs and (gfx90a/gfx942) as many AGPRs.
fn assemble_sized(
    name: &str,
    target: &str,
    nargs: usize,
    drop: Option<&str>,
    vgprs: usize,
) -> Option<Vec<u8>> {
    let tools = require_all(&[Tool::Clang, Tool::Lld], "emu hazards")?;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hazards");
    let body = std::fs::read_to_string(dir.join(format!("{name}.s"))).unwrap();
    let body: String = body
        .lines()
        .filter(|l| drop.is_none_or(|m| !l.contains(m)))
        .map(|l| format!("{l}\n"))
        .collect();
    let (accum, total) = if target == "gfx900" {
        (String::new(), vgprs)
    } else {
        (format!("  .amdhsa_accum_offset {vgprs}\n"), 2 * vgprs)
    };
    let args: String = (0..nargs)
        .map(|i| format!("      - {{ .offset: {}, .size: 8, .value_kind: global_buffer, .address_space: global }}\n", 8 * i))
        .collect();
    let src = format!(
        "  .amdgcn_target \"amdgcn-amd-amdhsa--{target}\"\n{body}\n  .rodata\n  .p2align 6\n  .amdhsa_kernel {name}\n  \
         .amdhsa_user_sgpr_kernarg_segment_ptr 1\n  .amdhsa_next_free_vgpr {total}\n  .amdhsa_next_free_sgpr 16\n  \
         .amdhsa_group_segment_fixed_size 512\n{accum}  .end_amdhsa_kernel\n  .amdgpu_metadata\n---\namdhsa.version: [ 1, 2 ]\n\
         amdhsa.kernels:\n  - .name: {name}\n    .symbol: {name}.kd\n    .kernarg_segment_size: {}\n    \
         .kernarg_segment_align: 8\n    .group_segment_fixed_size: 512\n    .private_segment_fixed_size: 0\n    \
         .wavefront_size: 64\n    .sgpr_count: 16\n    .vgpr_count: {total}\n    .max_flat_workgroup_size: 256\n    .args:\n{args}...\n  \
         .end_amdgpu_metadata\n",
        8 * nargs
    );
    let tag = drop
        .map(|d| d.trim_start_matches("// ").to_lowercase())
        .unwrap_or_else(|| "full".into());
    let s =
        scratch_file(&format!("{name}-{target}-{tag}.s"), &src).unwrap_or_else(|e| panic!("{e}"));
    let build = OpenClBuild {
        extra_args: &[],
        out_dir: s.parent().map(Path::to_path_buf),
    };
    let so = assemble_code_object(&tools[0], &tools[1], &s, target, &build)
        .unwrap_or_else(|e| panic!("assembling {name} for {target}: {e}"));
    Some(std::fs::read(so).unwrap())
}

/// Runs a two-buffer kernel (`in`, `out`, 128 work-items); returns the result or the error.
fn run_in_out(code: &[u8], name: &str, config: RunConfig) -> Result<Vec<u32>, DeviceError> {
    run_n(code, name, config, 128)
}

/// As [`run_in_out`] with `n` work-items in one workgroup.
fn run_n(code: &[u8], name: &str, config: RunConfig, n: usize) -> Result<Vec<u32>, DeviceError> {
    let dev = GcnEmulator::with_config(config);
    let m = dev.load_module(code)?;
    let input: Vec<u8> = (0..n as u32)
        .flat_map(|i| (i * 10 + 3).to_le_bytes())
        .collect();
    let (a, b) = (dev.alloc(4 * n as u64)?, dev.alloc(4 * n as u64)?);
    dev.copy_to_device(a, 0, &input)?;
    dev.copy_to_device(b, 0, &vec![0xcd; 4 * n])?;
    dev.launch(
        m,
        name,
        LaunchDims {
            grid: [1, 1, 1],
            block: [n as u32, 1, 1],
            dynamic_lds: 0,
        },
        &[ArgValue::Buffer(a), ArgValue::Buffer(b)],
    )?;
    let mut out = vec![0u8; 4 * n];
    dev.copy_from_device(b, 0, &mut out)?;
    Ok(out
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

fn expect_hazard(e: DeviceError, what: &[&str]) {
    let text = e.to_string();
    for w in what {
        assert!(text.contains(w), "expected '{w}' in: {text}");
    }
}

#[test]
fn vmcnt_wait_removed_is_reported() {
    for &t in ALL {
        let Some(good) = assemble("vm_wait", t, 2, None) else {
            return;
        };
        let out = run_in_out(&good, "vm_wait", RunConfig::default()).unwrap();
        assert_eq!(
            out,
            (0..128).map(|i| i * 10 + 4).collect::<Vec<u32>>(),
            "{t}"
        );
        let bad = assemble("vm_wait", t, 2, Some("// WAIT")).unwrap();
        let e = run_in_out(&bad, "vm_wait", RunConfig::default()).unwrap_err();
        expect_hazard(
            e,
            &[
                "hazard: v2",
                "s_waitcnt vmcnt(0)",
                "wave 0 of workgroup (0,0,0)",
                "v_add_u32",
            ],
        );
    }
}

#[test]
fn lgkmcnt_wait_for_scalar_loads_removed_is_reported() {
    for &t in ALL {
        let Some(good) = assemble("smem_wait", t, 2, None) else {
            return;
        };
        run_in_out(&good, "smem_wait", RunConfig::default()).unwrap();
        let bad = assemble("smem_wait", t, 2, Some("// WAIT")).unwrap();
        let e = run_in_out(&bad, "smem_wait", RunConfig::default()).unwrap_err();
        expect_hazard(
            e,
            &[
                "hazard: s[4:5]",
                "s_waitcnt lgkmcnt(0)",
                "global_load_dword",
            ],
        );
    }
}

#[test]
fn overwriting_a_load_destination_before_its_wait_is_reported() {
    for &t in ALL {
        let Some(good) = assemble("waw", t, 2, None) else {
            return;
        };
        let out = run_in_out(&good, "waw", RunConfig::default()).unwrap();
        assert_eq!(
            out,
            (0..128).collect::<Vec<u32>>(),
            "{t}: the ALU write wins after the wait"
        );
        let bad = assemble("waw", t, 2, Some("// WAIT")).unwrap();
        let e = run_in_out(&bad, "waw", RunConfig::default()).unwrap_err();
        expect_hazard(
            e,
            &[
                "hazard: v2 is overwritten",
                "s_waitcnt vmcnt(0)",
                "v_mov_b32",
            ],
        );
    }
}

#[test]
fn missing_barrier_is_reported_as_an_lds_race_under_every_schedule() {
    for &t in ALL {
        let Some(good) = assemble("lds_barrier", t, 1, None) else {
            return;
        };
        for schedule in [
            Schedule::RoundRobin,
            Schedule::Random(1),
            Schedule::Random(12345),
        ] {
            let config = RunConfig {
                schedule,
                ..RunConfig::default()
            };
            let dev = GcnEmulator::with_config(config);
            let m = dev.load_module(&good).unwrap();
            let out = dev.alloc(512).unwrap();
            let args = [ArgValue::Buffer(out)];
            let dims = LaunchDims {
                grid: [1, 1, 1],
                block: [128, 1, 1],
                dynamic_lds: 0,
            };
            dev.launch(m, "lds_barrier", dims, &args).unwrap();
            let mut bytes = vec![0u8; 512];
            dev.copy_from_device(out, 0, &mut bytes).unwrap();
            let got: Vec<u32> = bytes
                .chunks(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            assert_eq!(
                got,
                (0..128).map(|i| (i + 64) % 128).collect::<Vec<u32>>(),
                "{t} {schedule:?}"
            );

            let bad = assemble("lds_barrier", t, 1, Some("// BARRIER")).unwrap();
            let m = dev.load_module(&bad).unwrap();
            let e = dev.launch(m, "lds_barrier", dims, &args).unwrap_err();
            expect_hazard(e, &["LDS race", "no s_barrier in between"]);
        }
    }
}

/// The race rule for replicated data: waves writing the bytes an LDS location already holds in
/// one barrier epoch do not race (Triton's layout conversions do this); the device counts such
/// writes. The same kernel writing different bytes per wave still races.
#[test]
fn replicated_lds_writes_are_not_races_but_different_bytes_are() {
    for &t in ALL {
        let Some(good) = assemble("lds_replicated", t, 1, None) else {
            return;
        };
        let bad = assemble("lds_replicated", t, 1, Some("// REPLICATED")).unwrap();
        for schedule in [
            Schedule::RoundRobin,
            Schedule::Random(1),
            Schedule::Random(777),
        ] {
            let dev = GcnEmulator::with_config(RunConfig {
                schedule,
                ..RunConfig::default()
            });
            let out = dev.alloc(1024).unwrap();
            dev.copy_to_device(out, 0, &[0xcd; 1024]).unwrap();
            let args = [ArgValue::Buffer(out)];
            let dims = LaunchDims {
                grid: [1, 1, 1],
                block: [256, 1, 1],
                dynamic_lds: 0,
            };
            let m = dev.load_module(&good).unwrap();
            let stats = dev.launch(m, "lds_replicated", dims, &args).unwrap();
            let mut bytes = vec![0u8; 1024];
            dev.copy_from_device(out, 0, &mut bytes).unwrap();
            let got: Vec<u32> = bytes
                .chunks(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            let want: Vec<u32> = (0..256u32)
                .map(|i| (i & 63) | ((i & 63) ^ 1) << 8)
                .collect();
            assert_eq!(got, want, "{t} {schedule:?}");
            // 64 slots, each written by four waves: the three writes after the first stored
            // the bytes already there.
            assert_eq!(stats.lds_same_value_writes, 3 * 64, "{t} {schedule:?}");

            let m = dev.load_module(&bad).unwrap();
            let e = dev.launch(m, "lds_replicated", dims, &args).unwrap_err();
            expect_hazard(e, &["LDS race", "writes LDS", "no s_barrier in between"]);
        }
    }
}

#[test]
fn lds_dma_read_before_vmcnt_is_reported() {
    for &t in ALL {
        let Some(good) = assemble("lds_dma", t, 2, None) else {
            return;
        };
        // One wave: 64 lanes load in[0..64] (the 256-byte buffer resource) into LDS at M0 + lane*4.
        let out = run_n(&good, "lds_dma", RunConfig::default(), 64).unwrap();
        assert_eq!(
            out,
            (0..64).map(|i| i * 10 + 3).collect::<Vec<u32>>(),
            "{t}"
        );
        let bad = assemble("lds_dma", t, 2, Some("// WAIT")).unwrap();
        let e = run_n(&bad, "lds_dma", RunConfig::default(), 64).unwrap_err();
        expect_hazard(e, &["hazard: LDS[", "s_waitcnt vmcnt(0)", "ds_read_b32"]);
    }
}

/// Wait states (`s_nop`): each kernel runs clean and correct with its `s_nop`, and without it the
/// device reports the wait-state hazard, naming the register and the `s_nop` that is missing.
/// `(kernel, targets, register, expected output of lane i)`.
#[test]
fn missing_wait_states_are_reported() {
    let add1 = |i: u32| i * 10 + 4;
    let cases: &[(&str, &[&str], &str, &dyn Fn(u32) -> u32)] = &[
        ("ws_vmem_sgpr", ALL, "hazard: s5", &add1),
        ("ws_lane_select", ALL, "hazard: s9", &add1),
        ("ws_forward_const", &["gfx942"], "hazard: s9", &add1),
        ("ws_trans", &["gfx942"], "hazard: v3", &add1),
        ("ws_wide_store", ALL, "hazard: v4", &|j: u32| {
            (j / 4) * 10 + 4
        }),
    ];
    for (name, targets, register, want) in cases {
        for &t in *targets {
            let Some(good) = assemble(name, t, 2, None) else {
                return;
            };
            let out = run_in_out(&good, name, RunConfig::default())
                .unwrap_or_else(|e| panic!("{name} {t} with its s_nop: {e}"));
            assert_eq!(out, (0..128).map(want).collect::<Vec<u32>>(), "{name} {t}");
            let bad = assemble(name, t, 2, Some("// NOP")).unwrap();
            let e = run_in_out(&bad, name, RunConfig::default())
                .expect_err(&format!("{name} {t}: missing s_nop not reported"));
            expect_hazard(
                e,
                &[register, "wait-state rule", "missing `s_nop", "wave 0"],
            );
            // The check can be switched off (code meant for the device only).
            let off = RunConfig {
                check_wait_states: false,
                ..RunConfig::default()
            };
            run_in_out(&bad, name, off).unwrap_or_else(|e| panic!("{name} {t} unchecked: {e}"));
        }
    }
}

/// MFMA wait states on gfx90a and gfx942 (`hazards/ws_mfma.s`): with every `s_nop` the kernel
/// runs clean and correct; without one rule's `s_nop` the device reports that rule, naming the
/// register, the MFMA and the missing `s_nop`. `(marker, register, detail, targets that need it)`:
/// a target not listed needs no wait there and must run clean.
#[test]
fn missing_mfma_wait_states_are_reported() {
    const CDNA: &[&str] = &["gfx942", "gfx90a"];
    let cases: &[(&str, &str, &str, &[&str])] = &[
        ("// NOP_A", "hazard: v5", "is read by an MFMA", CDNA),
        (
            "// NOP_B",
            "hazard: v10",
            "SrcC (overlapping registers)",
            CDNA,
        ),
        (
            "// NOP_C",
            "hazard: v8",
            "SrcC (the same registers)",
            &["gfx942"],
        ),
        ("// NOP_D", "hazard: v16", "read as SrcA/B", CDNA),
        ("// NOP_E", "hazard: a0", "it is read too early", CDNA),
        ("// NOP_F", "hazard: a18", "is read by an MFMA", CDNA),
        ("// NOP_G", "hazard: a16", "(WAR)", CDNA),
        ("// NOP_H", "hazard: v20", "(WAW)", CDNA),
        ("// NOP_I", "hazard: v24", "it is read too early", CDNA),
        ("// NOP_J", "hazard: exec_lo", "masks an MFMA", CDNA),
        ("// NOP_K", "hazard: v32", "it is read too early", CDNA),
    ];
    let want: Vec<u32> = (0..128).map(|i| i * 10 + 4).collect();
    for &t in CDNA {
        let Some(good) = assemble_sized("ws_mfma", t, 2, None, 40) else {
            return;
        };
        let out = run_in_out(&good, "ws_mfma", RunConfig::default())
            .unwrap_or_else(|e| panic!("ws_mfma {t} with its s_nops: {e}"));
        assert_eq!(out, want, "ws_mfma {t}");
        for (marker, register, detail, needs) in cases {
            let bad = assemble_sized("ws_mfma", t, 2, Some(marker), 40).unwrap();
            let run = run_in_out(&bad, "ws_mfma", RunConfig::default());
            if !needs.contains(&t) {
                assert_eq!(run.unwrap(), want, "{marker} {t}: no wait needed");
                continue;
            }
            let e = run.expect_err(&format!("{marker} {t}: missing s_nop not reported"));
            eprintln!("{marker} {t}: {e}");
            expect_hazard(
                e,
                &[
                    register,
                    detail,
                    "wait-state rule",
                    "missing `s_nop",
                    "wave 0",
                ],
            );
        }
    }
}

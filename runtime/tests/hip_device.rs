//! The HIP device (feature `hip`). Tests that need an AMD GPU are `#[ignore]`d: run them on a
//! machine with ROCm and a gfx942/gfx90a/gfx900 GPU with `cargo test --features hip -- --ignored`.
//! They have never been run on hardware by this project (no machine here has an AMD GPU).
//! The tests that are not ignored check the behaviour on a machine without a GPU. Each GPU case
//! runs in a process of its own (`in_own_process`): a kernel memory fault aborts the process.
#![cfg(feature = "hip")]

#[path = "common/gpu_process.rs"]
mod gpu_process;
use gpu_process::{in_own_process, run_in_child};

use kjit_backend_gcn::llvm_oracle::{compile_opencl, require_all, scratch_file, OpenClBuild, Tool};
use kjit_runtime::emu::GcnEmulator;
use kjit_runtime::hip::{discover, HipDevice};
use kjit_runtime::{
    default_device, open_device, ArgValue, Device, DeviceError, DeviceKind, LaunchDims,
};

/// A vector add in OpenCL C, compiled by clang-19 for `target` (a GPU's architecture).
fn vector_add(target: &str) -> Option<Vec<u8>> {
    let tools = require_all(&[Tool::Clang, Tool::Lld], "HIP vector add")?;
    // Not `get_global_id`: with `-nogpulib` there is no OpenCL library to define it, and lld
    // refuses the undefined symbol (this helper failed so until the kernel used the builtins).
    let src = scratch_file(
        "va.cl",
        "kernel void vadd(global const float* a, global const float* b, global float* c, uint n) {\n\
         uint i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x()\n\
         + __builtin_amdgcn_workitem_id_x(); if (i < n) c[i] = a[i] + b[i]; }\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let dir = src
        .parent()
        .expect("a scratch file has a directory")
        .to_path_buf();
    let build = OpenClBuild {
        extra_args: &[],
        out_dir: Some(dir.clone()),
    };
    let so = compile_opencl(&tools[0], &tools[1], &src, target, &build)
        .unwrap_or_else(|e| panic!("{e}"));
    let bytes = std::fs::read(&so).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Some(bytes)
}

/// Runs the vector add on `dev` over `n` elements and returns c (poisoned before the run).
fn run_vadd(dev: &dyn Device, code: &[u8], n: u32) -> Vec<f32> {
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let (da, db, dc) = (
        dev.alloc(4 * n as u64).unwrap(),
        dev.alloc(4 * n as u64).unwrap(),
        dev.alloc(4 * n as u64).unwrap(),
    );
    dev.copy_to_device(da, 0, &bytes(&a)).unwrap();
    dev.copy_to_device(db, 0, &bytes(&b)).unwrap();
    dev.copy_to_device(dc, 0, &vec![0xff; 4 * n as usize])
        .unwrap(); // poison: NaN
    let module = dev.load_module(code).unwrap();
    let dims = LaunchDims {
        grid: [n.div_ceil(256), 1, 1],
        block: [256, 1, 1],
        dynamic_lds: 0,
    };
    let args = [
        ArgValue::Buffer(da),
        ArgValue::Buffer(db),
        ArgValue::Buffer(dc),
        ArgValue::U32(n),
    ];
    dev.launch(module, "vadd", dims, &args).unwrap();
    let mut out = vec![0u8; 4 * n as usize];
    dev.copy_from_device(dc, 0, &mut out).unwrap();
    for buf in [da, db, dc] {
        dev.free(buf).unwrap();
    }
    let c: Vec<f32> = out
        .chunks(4)
        .map(|w| f32::from_le_bytes(w.try_into().unwrap()))
        .collect();
    for (i, x) in c.iter().enumerate() {
        assert_eq!(
            *x,
            a[i] + b[i],
            "element {i} (poison {:#x} means unwritten)",
            x.to_bits()
        );
    }
    c
}

/// On a machine without an AMD GPU, discovery, opening and the default device all say so
/// cleanly, and the default falls back to the software device.
#[test]
fn without_a_gpu_hip_says_so_and_the_default_is_the_software_device() {
    if let Ok(gpus) = discover() {
        eprintln!("skipping: this machine has AMD GPUs {gpus:?}");
        return;
    }
    let err = HipDevice::open().err().expect("no GPU here");
    assert!(
        matches!(&err, DeviceError::Unavailable(m) if m.contains("no AMD GPU")),
        "{err}"
    );
    let err = open_device(DeviceKind::Hip).err().expect("no GPU here");
    assert!(err.to_string().contains("no AMD GPU"), "{err}");
    let chosen = default_device();
    assert_eq!(chosen.kind, DeviceKind::Emu);
    assert!(chosen.reason.contains("no AMD GPU"), "{}", chosen.reason);
}

#[test]
#[ignore = "needs an AMD GPU with ROCm (gfx942, gfx90a or gfx900)"]
fn gpu_discovery_reports_a_targeted_architecture() {
    in_own_process("gpu_discovery_reports_a_targeted_architecture", || {
        let gpus = discover().expect("an AMD GPU");
        for g in &gpus {
            eprintln!("{g:?}");
            assert!(g.compute_units > 0 && g.lds_bytes >= 32 * 1024, "{g:?}");
        }
        let dev = HipDevice::open().expect("a GPU kjit targets");
        assert!(dev.target().is_some());
    });
}

#[test]
#[ignore = "needs an AMD GPU with ROCm (gfx942, gfx90a or gfx900)"]
fn clang_vector_add_runs_on_the_gpu_as_on_the_software_device() {
    in_own_process(
        "clang_vector_add_runs_on_the_gpu_as_on_the_software_device",
        || {
            let dev = HipDevice::open().expect("a GPU kjit targets");
            let target = dev.target().unwrap();
            let Some(code) = vector_add(target.name()) else {
                return;
            };
            let n = 100_003;
            let gpu = run_vadd(&dev, &code, n);
            let emu = run_vadd(&GcnEmulator::new(), &code, n);
            assert_eq!(gpu, emu);
        },
    );
}

#[test]
#[ignore = "needs an AMD GPU with ROCm (gfx942, gfx90a or gfx900)"]
fn a_code_object_for_another_architecture_is_refused_before_launch() {
    in_own_process(
        "a_code_object_for_another_architecture_is_refused_before_launch",
        || {
            let dev = HipDevice::open().expect("a GPU kjit targets");
            let other = if dev.target().unwrap().name() == "gfx900" {
                "gfx942"
            } else {
                "gfx900"
            };
            let Some(code) = vector_add(other) else {
                return;
            };
            let err = dev.load_module(&code).expect_err("mismatch refused");
            assert!(matches!(err, DeviceError::BadCodeObject(_)), "{err}");
            assert!(err.to_string().contains(&format!("for {other}")), "{err}");
        },
    );
}

#[test]
#[ignore = "needs an AMD GPU with ROCm (gfx942, gfx90a or gfx900)"]
fn wrong_arguments_and_out_of_range_copies_are_errors_on_the_gpu() {
    in_own_process(
        "wrong_arguments_and_out_of_range_copies_are_errors_on_the_gpu",
        || {
            let dev = HipDevice::open().expect("a GPU kjit targets");
            let Some(code) = vector_add(dev.target().unwrap().name()) else {
                return;
            };
            let module = dev.load_module(&code).unwrap();
            let buf = dev.alloc(64).unwrap();
            let dims = LaunchDims {
                grid: [1, 1, 1],
                block: [64, 1, 1],
                dynamic_lds: 0,
            };
            let err = dev
                .launch(module, "vadd", dims, &[ArgValue::Buffer(buf)])
                .unwrap_err();
            assert!(
                err.to_string()
                    .contains("takes 4 explicit argument(s), 1 given"),
                "{err}"
            );
            let err = dev.launch(module, "nope", dims, &[]).unwrap_err();
            assert!(err.to_string().contains("no kernel 'nope'"), "{err}");
            let err = dev.copy_to_device(buf, 60, &[0; 8]).unwrap_err();
            assert!(matches!(err, DeviceError::Memory(_)), "{err}");
            dev.free(buf).unwrap();
        },
    );
}

/// Stands in for a GPU case whose kernel faults: aborts its process when asked to (by
/// `one_case_aborting_does_not_take_the_others_down`), passes otherwise.
#[test]
#[ignore = "runs as a child of one_case_aborting_does_not_take_the_others_down"]
fn aborts_when_asked() {
    in_own_process("aborts_when_asked", || {
        if std::env::var_os("KJIT_TEST_ABORT").is_some() {
            std::process::abort();
        }
    });
}

/// The per-process runner: an aborting case is reported as killed, with the others unharmed.
#[test]
fn one_case_aborting_does_not_take_the_others_down() {
    let e = run_in_child("aborts_when_asked", &[("KJIT_TEST_ABORT", "1")]).unwrap_err();
    assert!(e.contains("killed by a signal"), "{e}");
    run_in_child("aborts_when_asked", &[]).unwrap();
    let e = run_in_child("no_such_case", &[]).unwrap_err();
    assert!(e.contains("no_such_case in its own process"), "{e}");
}

/// The offsets kjit reads a `hipDeviceProp_t` at are the installed HIP header's (checked by
/// compiling a C program against it with clang-19).
#[test]
fn device_property_offsets_match_the_hip_header() {
    use kjit_backend_gcn::llvm_oracle::{require, run, scratch_file};
    use kjit_runtime::hip::{
        PROP_GCN_ARCH_NAME, PROP_MULTIPROCESSOR_COUNT, PROP_NAME, PROP_SHARED_MEM_PER_BLOCK,
    };
    let Some(clang) = require(Tool::Clang, "device_property_offsets_match_the_hip_header") else {
        return;
    };
    let roots = [
        std::env::var("HIP_PATH").unwrap_or_default(),
        "/usr".into(),
        "/opt/rocm".into(),
    ];
    let Some(include) = roots
        .iter()
        .map(|r| std::path::Path::new(r).join("include"))
        .find(|i| i.join("hip/hip_runtime_api.h").is_file())
    else {
        eprintln!("skipping: no hip/hip_runtime_api.h (install libamdhip64-dev)");
        return;
    };
    let src = scratch_file(
        "props.c",
        "#define __HIP_PLATFORM_AMD__ 1\n#include <hip/hip_runtime_api.h>\n#include <stddef.h>\n\
         #include <stdio.h>\nint main(void) { printf(\"%zu %zu %zu %zu\", offsetof(hipDeviceProp_t, name),\
         offsetof(hipDeviceProp_t, sharedMemPerBlock), offsetof(hipDeviceProp_t, multiProcessorCount),\
         offsetof(hipDeviceProp_t, gcnArchName)); return 0; }\n",
    )
    .unwrap();
    let exe = src.with_extension("exe");
    let inc = format!("-I{}", include.display());
    run(
        &clang,
        &[&inc, src.to_str().unwrap(), "-o", exe.to_str().unwrap()],
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = std::process::Command::new(&exe).output().unwrap();
    let got = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        got,
        format!(
            "{PROP_NAME} {PROP_SHARED_MEM_PER_BLOCK} {PROP_MULTIPROCESSOR_COUNT} {PROP_GCN_ARCH_NAME}"
        )
    );
}

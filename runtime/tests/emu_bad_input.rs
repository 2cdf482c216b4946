//! Bad input to kjit's software GCN device gives a clear error, never a panic: a truncated ELF,
//! a code object for another architecture, an unknown kernel, too few or ill-typed arguments, an
//! out-of-bounds kernel, an endless loop (bounded by the instruction budget).

use std::path::Path;

use kjit_backend_gcn::llvm_oracle::{compile_opencl, require_all, OpenClBuild, Tool};
use kjit_runtime::emu::{GcnEmulator, RunConfig};
use kjit_runtime::{ArgValue, Device, DeviceError, LaunchDims};

fn build(target: &str) -> Option<Vec<u8>> {
    let tools = require_all(&[Tool::Clang, Tool::Lld], "emu bad input")?;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let inc = format!("-I{}", dir.display());
    let build = OpenClBuild {
        extra_args: &[&inc],
        out_dir: None,
    };
    let so = compile_opencl(&tools[0], &tools[1], &dir.join("bad.cl"), target, &build)
        .unwrap_or_else(|e| panic!("{e}"));
    Some(std::fs::read(so).unwrap())
}

fn dims(grid: u32, block: u32) -> LaunchDims {
    LaunchDims {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        dynamic_lds: 0,
    }
}

#[test]
fn truncated_and_garbage_code_objects_are_rejected() {
    let Some(code) = build("gfx942") else { return };
    let dev = GcnEmulator::new();
    for cut in [0, 16, 63, 200, code.len() / 2, code.len() - 1] {
        match dev.load_module(&code[..cut]) {
            Err(DeviceError::BadCodeObject(msg)) => assert!(!msg.is_empty()),
            Err(e) => panic!("truncated at {cut}: wrong error kind {e}"),
            Ok(_) => panic!("truncated at {cut} bytes: accepted"),
        }
    }
    assert!(matches!(
        dev.load_module(b"\x7fELF nonsense"),
        Err(DeviceError::BadCodeObject(_))
    ));
}

#[test]
fn code_object_for_another_architecture_is_rejected() {
    let Some(code) = build("gfx1100") else { return };
    let e = GcnEmulator::new().load_module(&code).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, DeviceError::BadCodeObject(_)), "{text}");
    assert!(
        text.contains("gfx942") || text.contains("not supported") || text.contains("unsupported"),
        "{text}"
    );
}

#[test]
fn unknown_kernel_and_wrong_arguments_are_invalid_launches() {
    let Some(code) = build("gfx90a") else { return };
    let dev = GcnEmulator::new();
    let m = dev.load_module(&code).unwrap();
    let out = dev.alloc(1024).unwrap();
    let e = dev
        .launch(
            m,
            "nope",
            dims(1, 64),
            &[ArgValue::Buffer(out), ArgValue::U32(0)],
        )
        .unwrap_err();
    assert!(
        matches!(e, DeviceError::InvalidLaunch(_)) && e.to_string().contains("oob"),
        "{e}"
    );
    let e = dev
        .launch(m, "oob", dims(1, 64), &[ArgValue::Buffer(out)])
        .unwrap_err();
    assert!(
        matches!(e, DeviceError::InvalidLaunch(_)),
        "too few args: {e}"
    );
    let e = dev
        .launch(m, "oob", dims(1, 64), &[ArgValue::U32(1), ArgValue::U32(0)])
        .unwrap_err();
    assert!(
        matches!(e, DeviceError::InvalidLaunch(_)),
        "a u32 where a pointer goes: {e}"
    );
    let e = dev
        .launch(
            m,
            "oob",
            dims(1, 2048),
            &[ArgValue::Buffer(out), ArgValue::U32(0)],
        )
        .unwrap_err();
    assert!(
        matches!(e, DeviceError::InvalidLaunch(_)),
        "block too large: {e}"
    );
    // clang's OpenCL kernels allow 256 work-items (`.max_flat_workgroup_size`): 512 is refused
    // though gfx9 takes 1024, because the code was built for at most 256.
    let e = dev
        .launch(
            m,
            "oob",
            dims(1, 512),
            &[ArgValue::Buffer(out), ArgValue::U32(0)],
        )
        .unwrap_err();
    assert!(
        matches!(e, DeviceError::InvalidLaunch(_))
            && e.to_string().contains("max_flat_workgroup_size 256"),
        "block over the kernel's maximum: {e}"
    );
    // The metadata says `uint` (`.type_name`; clang keeps no names): a float, or a negative
    // integer, is refused naming the argument.
    for bad in [ArgValue::F32(0.0), ArgValue::I32(-1)] {
        let e = dev
            .launch(m, "oob", dims(1, 64), &[ArgValue::Buffer(out), bad])
            .unwrap_err();
        assert!(
            matches!(e, DeviceError::InvalidLaunch(_))
                && e.to_string().contains("argument 1: a uint is expected"),
            "{bad:?} for a uint: {e}"
        );
    }
}

#[test]
fn out_of_bounds_store_faults_with_its_address() {
    for t in ["gfx942", "gfx900"] {
        let Some(code) = build(t) else { return };
        let dev = GcnEmulator::new();
        let m = dev.load_module(&code).unwrap();
        let out = dev.alloc(256).unwrap();
        // In bounds: 64 ints = 256 bytes.
        dev.launch(
            m,
            "oob",
            dims(1, 64),
            &[ArgValue::Buffer(out), ArgValue::U32(0)],
        )
        .unwrap();
        // One element past the end for the last lane.
        let e = dev
            .launch(
                m,
                "oob",
                dims(1, 64),
                &[ArgValue::Buffer(out), ArgValue::U32(1)],
            )
            .unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, DeviceError::Fault(_)), "{text}");
        let addr = format!("{:#x}", out.addr + 256);
        assert!(
            text.contains("memory fault") && text.contains(&addr) && text.contains("global_store"),
            "{t}: {text}"
        );
    }
}

#[test]
fn endless_loop_exhausts_the_instruction_budget() {
    let Some(code) = build("gfx942") else { return };
    let dev = GcnEmulator::with_config(RunConfig {
        max_instructions_per_wave: 20_000,
        ..RunConfig::default()
    });
    let m = dev.load_module(&code).unwrap();
    let (flag, out) = (dev.alloc(4).unwrap(), dev.alloc(256).unwrap());
    dev.copy_to_device(flag, 0, &[0; 4]).unwrap();
    let e = dev
        .launch(
            m,
            "spin",
            dims(1, 64),
            &[ArgValue::Buffer(flag), ArgValue::Buffer(out)],
        )
        .unwrap_err();
    assert!(e.to_string().contains("instruction budget of 20000"), "{e}");
    // With the flag set the same kernel ends.
    dev.copy_to_device(flag, 0, &1i32.to_le_bytes()).unwrap();
    dev.launch(
        m,
        "spin",
        dims(1, 64),
        &[ArgValue::Buffer(flag), ArgValue::Buffer(out)],
    )
    .unwrap();
}

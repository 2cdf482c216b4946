//! A user's own kernels in the CLI's tools: one library call writes a builder kernel's IR, asm
//! and code object; `kjit dump/build/run` take the IR file as they take a library name. And the
//! quiet device choice: `KJIT_DEVICE` picks the device, `KJIT_VERBOSE` says which.

mod common;
use common::{kjit, kjit_env};

use kjit::backend_gcn::compile::CompileOptions;
use kjit::backend_gcn::Target;
use kjit::kernel_files::{resolve_kernel, write_kernel_files};
use kjit::{Dim, KernelBuilder};

/// `out[i] = tanh(x[i]) * k + x[i] / 3`, with a guard.
fn my_kernel() -> kjit::ir::Function {
    let b = KernelBuilder::new("my_tanh");
    let x = b.buffer::<f32>("x");
    let k = b.arg::<f32>("k");
    let out = b.buffer_mut::<f32>("out");
    let i = b.global_id(Dim::X);
    b.if_(i.lt(x.len()), || {
        let v = b.load(&x, i);
        b.store(&out, i, v.tanh() * k + v / 3.0f32);
    });
    b.finish().unwrap()
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("kjit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn written_files_are_what_the_cli_makes_of_the_ir_file() {
    let dir = temp_dir("files");
    let func = my_kernel();
    let files = write_kernel_files(&func, Target::Gfx90a, &CompileOptions::default(), &dir)
        .expect("writes");
    assert_eq!(files.ir, dir.join("my_tanh.kir"));
    let ir = files.ir.to_str().unwrap();

    // The IR file reads back as the same kernel.
    let (ok, out, err) = kjit(&["dump", ir, "--ir"]);
    assert!(ok, "{err}");
    assert_eq!(out, func.to_string());

    // Its assembly and code object are the ones written.
    let (ok, out, err) = kjit(&["dump", ir, "--target", "gfx90a"]);
    assert!(ok, "{err}");
    assert_eq!(out, std::fs::read_to_string(&files.asm).unwrap());
    let hsaco = dir.join("again.hsaco");
    let (ok, _, err) = kjit(&[
        "build",
        ir,
        "--target",
        "gfx90a",
        "-o",
        hsaco.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read(&hsaco).unwrap(),
        std::fs::read(&files.code_object).unwrap()
    );

    // Run: on the device, checked against the IR interpreter.
    let (ok, out, err) = kjit_env(&["run", ir, "-n", "3000"], &[("KJIT_DEVICE", "emu")]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("PASS my_tanh against the IR interpreter"),
        "{out}"
    );

    // Tune: every occupancy level, checked against the IR interpreter, cached in a scratch dir.
    let cache = dir.join("cache");
    let (ok, out, err) = kjit_env(
        &["tune", ir, "-n", "2048", "--target", "gfx90a", "--json"],
        &[("KJIT_CACHE_DIR", cache.to_str().unwrap())],
    );
    assert!(ok, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let candidates = v["candidates"].as_array().unwrap();
    assert_eq!(
        candidates.len(),
        9,
        "gfx90a has 8 occupancy levels plus the default"
    );
    assert!(candidates.iter().all(|c| c["correct"] == true), "{out}");
    assert!(v["best"]["cycles"].as_u64().unwrap() > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A wrong IR file is an error with the file and line; an unknown name lists the library and
/// says a file may be given.
#[test]
fn bad_kernel_arguments_are_clear_errors() {
    let dir = temp_dir("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.kir");
    std::fs::write(&bad, "kernel broken(\n").unwrap();
    let (ok, _, err) = kjit(&["dump", bad.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("bad.kir: line"), "{err}");
    let (ok, _, err) = kjit(&["run", "no_such_kernel"]);
    assert!(!ok);
    assert!(err.contains("unknown kernel `no_such_kernel`"), "{err}");
    assert!(err.contains("IR text file"), "{err}");
    let missing = dir.join("missing.kir");
    let e = resolve_kernel(missing.to_str().unwrap()).err().unwrap();
    assert!(e.contains("missing.kir"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The library names still resolve to their kernels, with their CPU references.
#[test]
fn library_names_resolve_with_their_references() {
    let k = resolve_kernel("saxpy").unwrap();
    assert_eq!(k.name(), "saxpy");
    assert!(k.spec.is_some());
    let case = k.case(100, 1);
    assert_eq!(case.n, 100);
}

#[test]
fn device_choice_is_quiet_unless_asked() {
    let (ok, out, err) = kjit_env(&["run", "vector_add"], &[("KJIT_DEVICE", "emu")]);
    assert!(ok, "{out}{err}");
    assert!(err.is_empty(), "nothing on stderr: {err}");

    let (ok, out, err) = kjit_env(
        &["run", "vector_add"],
        &[("KJIT_DEVICE", "emu"), ("KJIT_VERBOSE", "1")],
    );
    assert!(ok, "{out}{err}");
    assert_eq!(
        err.matches("kjit: device emu: KJIT_DEVICE=emu").count(),
        1,
        "said once: {err}"
    );

    let (ok, _, err) = kjit_env(&["run", "vector_add"], &[("KJIT_DEVICE", "cuda")]);
    assert!(!ok);
    assert!(err.contains("KJIT_DEVICE=cuda"), "{err}");
    assert!(err.contains("unknown device"), "{err}");
}

/// Asking for HIP where it cannot be had is an error naming the variable, not a silent fallback.
#[test]
fn an_unavailable_device_asked_for_is_an_error() {
    if kjit::runtime::open_device(kjit::runtime::DeviceKind::Hip).is_ok() {
        eprintln!("this machine has a usable AMD GPU; nothing to check");
        return;
    }
    let (ok, _, err) = kjit_env(&["run", "vector_add"], &[("KJIT_DEVICE", "hip")]);
    assert!(!ok);
    assert!(err.contains("KJIT_DEVICE=hip"), "{err}");
}

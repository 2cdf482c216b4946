//! The compiling subcommands end to end: `kjit dump` (IR, optimized IR, asm with its header),
//! `kjit build` (a code object that `kjit emu run` loads and runs correctly) and compiled
//! `kjit run` (PASS on the software device for every target, with a budget), plus the errors a
//! user gets for an unknown kernel, a bad target, a bad or too small VGPR budget and an
//! unwritable output: one line, non-zero status, no panic.

use std::path::PathBuf;

mod common;
use common::kjit;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kjit-cli-compile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A failure: non-zero status, one `error:` line naming the problem, no panic text.
fn assert_user_error(args: &[&str], needle: &str) {
    let (ok, out, err) = kjit(args);
    assert!(!ok, "{args:?} should fail:\n{out}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(err.starts_with("error:"), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

#[test]
fn dump_asm_has_the_header_and_code() {
    for t in ["gfx942", "gfx90a", "gfx900"] {
        let (ok, out, err) = kjit(&["dump", "saxpy", "--target", t, "--asm"]);
        assert!(ok, "{err}");
        assert!(
            out.starts_with(&format!("; kernel saxpy for {t}\n")),
            "{out}"
        );
        for field in ["VGPRs:", "AGPRs:", "SGPRs:", "LDS:", "scratch:", "spills:"] {
            assert!(out.contains(field), "{field} missing:\n{out}");
        }
        assert!(out.contains("waves/SIMD"), "{out}");
        assert!(out.contains("\nsaxpy:\n"), "{out}");
        assert!(out.contains("buffer_load_dword"), "{out}");
        assert!(out.contains("\ts_endpgm\n"), "{out}");
        // the header's instruction count is the number of instruction lines
        let count: usize = out
            .lines()
            .find_map(|l| l.strip_prefix("; instructions: "))
            .and_then(|l| l.split(' ').next())
            .unwrap()
            .parse()
            .unwrap();
        let lines = out.lines().filter(|l| l.starts_with('\t')).count();
        assert_eq!(count, lines, "{out}");
    }
    // --asm is the default
    let (ok, out, _) = kjit(&["dump", "saxpy"]);
    assert!(ok && out.starts_with("; kernel saxpy for gfx942"), "{out}");
}

#[test]
fn dump_ir_and_optimized_ir() {
    let (ok, out, err) = kjit(&["dump", "saxpy", "--ir"]);
    assert!(
        ok && out.contains("kernel saxpy(") && !out.contains("e-graph"),
        "{out}{err}"
    );
    let (ok, out, err) = kjit(&["dump", "saxpy", "--opt-ir"]);
    assert!(ok && out.contains("e-graph optimizer:"), "{out}{err}");
    assert!(
        out.contains("fma"),
        "contraction in saxpy's optimized IR:\n{out}"
    );
}

#[test]
fn a_lower_budget_changes_the_header_not_the_result() {
    let (ok, full, err) = kjit(&["dump", "matmul", "--target", "gfx90a"]);
    assert!(ok, "{err}");
    let (ok, low, err) = kjit(&["dump", "matmul", "--target", "gfx90a", "--vgpr-budget", "8"]);
    assert!(ok, "{err}");
    let vgprs = |s: &str| -> u32 {
        s.lines()
            .find_map(|l| l.strip_prefix("; VGPRs: "))
            .and_then(|l| l.split(' ').next())
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(vgprs(&low) <= 8, "{low}");
    assert!(vgprs(&full) > 8, "{full}");
    let (ok, out, err) = kjit(&[
        "run",
        "matmul",
        "--target",
        "gfx90a",
        "--vgpr-budget",
        "8",
        "--device",
        "emu",
        "-n",
        "300",
    ]);
    assert!(ok && out.contains("PASS matmul"), "{out}{err}");
}

#[test]
fn build_writes_a_code_object_that_emu_run_executes() {
    let hsaco = tmp("vector_add.hsaco");
    let (ok, out, err) = kjit(&[
        "build",
        "vector_add",
        "--target",
        "gfx90a",
        "-o",
        hsaco.to_str().unwrap(),
    ]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("compile time:") && out.contains("VGPRs:"),
        "{out}"
    );
    let bytes = std::fs::read(&hsaco).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");

    let n = 1000usize; // not a multiple of the 256-item workgroup
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let b: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    let write = |name: &str, v: &[f32]| {
        let p = tmp(name);
        std::fs::write(
            &p,
            v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>(),
        )
        .unwrap();
        p
    };
    let (pa, pb) = (write("a.bin", &a), write("b.bin", &b));
    let pc = write("c.bin", &vec![f32::from_bits(0x7fba_dbad); n]);
    let out_path = tmp("c.out");
    let len = format!("u32:{n}");
    let arg = |p: &PathBuf| format!("buf:{}", p.display());
    let (ok, out, err) = kjit(&[
        "emu",
        "run",
        hsaco.to_str().unwrap(),
        "--kernel",
        "vector_add",
        "--grid",
        "4",
        "--block",
        "256",
        "--arg",
        &arg(&pa),
        "--arg",
        &len,
        "--arg",
        &arg(&pb),
        "--arg",
        &len,
        "--arg",
        &arg(&pc),
        "--arg",
        &len,
        "--out",
        &format!("4={}", out_path.display()),
    ]);
    assert!(ok, "{out}{err}");
    let c: Vec<u32> = std::fs::read(&out_path)
        .unwrap()
        .chunks(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    assert_eq!(c.len(), n);
    for i in 0..n {
        assert_eq!(c[i], (a[i] + b[i]).to_bits(), "c[{i}]");
    }
}

#[test]
fn run_compiles_and_passes_on_every_target() {
    for t in ["gfx942", "gfx90a", "gfx900"] {
        let (ok, out, err) = kjit(&[
            "run",
            "reduce_sum",
            "--target",
            t,
            "--device",
            "emu",
            "-n",
            "777",
        ]);
        assert!(ok, "{t}: {out}{err}");
        assert!(
            out.contains(&format!("reduce_sum for {t}: compiled in")),
            "{out}"
        );
        assert!(out.contains("waves/SIMD") && out.contains("VALU"), "{out}");
        assert!(out.contains("on kjit GCN device (software)"), "{out}");
        assert!(out.contains("PASS reduce_sum"), "{out}");
    }
}

#[test]
fn errors_are_one_line_and_clear() {
    assert_user_error(
        &["dump", "no_such_kernel"],
        "unknown kernel `no_such_kernel`",
    );
    assert_user_error(&["build", "nope", "-o", "x.hsaco"], "unknown kernel `nope`");
    assert_user_error(&["run", "nope"], "unknown kernel `nope`");
    assert_user_error(
        &["dump", "vector_add", "--target", "gfx1100"],
        "unknown target 'gfx1100'",
    );
    assert_user_error(
        &["run", "vector_add", "--target", "sm_90"],
        "unknown target 'sm_90'",
    );
    assert_user_error(
        &["dump", "vector_add", "--vgpr-budget", "0"],
        "VGPR budget 0 is out of range",
    );
    assert_user_error(
        &[
            "dump",
            "vector_add",
            "--target",
            "gfx900",
            "--vgpr-budget",
            "300",
        ],
        "VGPR budget 300 is out of range for gfx900",
    );
    assert_user_error(
        &["dump", "vector_add", "--vgpr-budget", "lots"],
        "invalid value 'lots'",
    );
    assert_user_error(
        &["dump", "vector_add", "--vgpr-budget", "1"],
        "is too small",
    );
    assert_user_error(
        &["dump", "vector_add", "--ir", "--asm"],
        "cannot be used with",
    );
    assert_user_error(
        &["build", "vector_add", "-o", "/nonexistent-dir/x.hsaco"],
        "writing /nonexistent-dir/x.hsaco",
    );
    assert_user_error(
        &["run", "vector_add", "--device", "cuda"],
        "unknown device 'cuda'",
    );
    assert_user_error(
        &["run", "vector_add", "--interp", "--target", "gfx900"],
        "cannot be used with",
    );
}

#[test]
fn asking_for_hip_without_it_is_an_error() {
    let (ok, out, err) = kjit(&["run", "vector_add", "--device", "hip"]);
    if ok {
        eprintln!("this machine has a HIP device; the fallback error is not exercised:\n{out}");
        return;
    }
    assert!(err.contains("HIP") || err.contains("hip"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

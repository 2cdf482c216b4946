//! `kjit list` names every library kernel; `kjit run --interp` checks a kernel in the IR
//! interpreter against its reference and fails on an unknown one (compiled runs are in
//! `cli_compile.rs`).

mod common;

/// Runs `kjit args`: (success, stdout followed by stderr).
fn kjit(args: &[&str]) -> (bool, String) {
    let (ok, out, err) = common::kjit(args);
    (ok, out + &err)
}

#[test]
fn list_names_every_kernel() {
    let (ok, text) = kjit(&["list"]);
    assert!(ok, "{text}");
    for k in kjit_kernels::all() {
        assert!(text.contains(k.name), "{} missing from\n{text}", k.name);
    }
}

#[test]
fn run_passes_with_and_without_the_optimizer() {
    let (ok, text) = kjit(&["run", "saxpy", "-n", "1000", "--seed", "7", "--interp"]);
    assert!(ok && text.contains("PASS saxpy"), "{text}");
    assert!(text.contains("in the IR interpreter"), "{text}");
    let (ok, text) = kjit(&["run", "matmul", "-n", "20", "--opt", "--ir", "--interp"]);
    assert!(ok && text.contains("PASS matmul"), "{text}");
    assert!(
        text.contains("e-graph optimizer:") && text.contains("kernel matmul("),
        "{text}"
    );
    assert!(
        text.contains("fma"),
        "contraction in matmul's optimized IR:\n{text}"
    );
}

#[test]
fn unknown_kernel_is_a_one_line_error() {
    let (ok, text) = kjit(&["run", "no_such_kernel"]);
    assert!(!ok);
    assert!(text.contains("unknown kernel `no_such_kernel`"), "{text}");
}

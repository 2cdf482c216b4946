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

/// `kjit build vector_add --target TARGET -o NAME` (in the scratch folder): the code object's
/// path and the command's output.
fn build_vector_add(target: &str, name: &str) -> (PathBuf, String) {
    let hsaco = tmp(name);
    let (ok, out, err) = kjit(&[
        "build",
        "vector_add",
        "--target",
        target,
        "-o",
        hsaco.to_str().unwrap(),
    ]);
    assert!(ok, "{out}{err}");
    (hsaco, out)
}

/// Writes `v` as little-endian f32s to the scratch file `name`.
fn write_f32s(name: &str, v: &[f32]) -> PathBuf {
    let p = tmp(name);
    std::fs::write(
        &p,
        v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>(),
    )
    .unwrap();
    p
}

/// The f32 file at `path` holds `a[i] + b[i]`, bit for bit, element by element.
fn assert_sums(path: &PathBuf, a: &[f32], b: &[f32]) {
    let c: Vec<u32> = std::fs::read(path)
        .unwrap()
        .chunks(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    assert_eq!(c.len(), a.len());
    for i in 0..a.len() {
        assert_eq!(c[i], (a[i] + b[i]).to_bits(), "c[{i}]");
    }
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
        // the header's instruction count is the number of instruction lines after the
        // kernarg preload prologue (gfx90a/gfx942), whose instructions it states beside them
        // and whose `s_nop` padding is one `.fill` line
        let count: usize = out
            .lines()
            .find_map(|l| l.strip_prefix("; instructions: "))
            .and_then(|l| l.split(' ').next())
            .unwrap()
            .parse()
            .unwrap();
        let prologue: usize = out
            .lines()
            .find_map(|l| l.split("compatibility prologue: ").nth(1))
            .map_or(0, |r| r.split(' ').next().unwrap().parse().unwrap());
        assert_eq!(prologue > 0, t != "gfx900", "{out}");
        let fills = out.lines().filter(|l| l.starts_with("\t.fill")).count();
        assert_eq!(fills, (prologue > 0) as usize, "{out}");
        let lines = out
            .lines()
            .filter(|l| l.starts_with('\t') && !l.starts_with("\t.fill"))
            .count();
        assert_eq!(count + prologue, lines, "{out}");
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
    // 12: the tile step's `ds_read2_b32` pairs raise the smallest budget the allocator
    // accepts (one instruction's operands, the spill temporaries and a pair) from 8 to 11.
    let (ok, low, err) = kjit(&[
        "dump",
        "matmul",
        "--target",
        "gfx90a",
        "--vgpr-budget",
        "12",
    ]);
    assert!(ok, "{err}");
    let vgprs = |s: &str| -> u32 {
        s.lines()
            .find_map(|l| l.strip_prefix("; VGPRs: "))
            .and_then(|l| l.split(' ').next())
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(vgprs(&low) <= 12, "{low}");
    assert!(vgprs(&full) > 12, "{full}");
    let (ok, out, err) = kjit(&[
        "run",
        "matmul",
        "--target",
        "gfx90a",
        "--vgpr-budget",
        "12",
        "--device",
        "emu",
        "-n",
        "300",
    ]);
    assert!(ok && out.contains("PASS matmul"), "{out}{err}");
}

#[test]
fn build_writes_a_code_object_that_emu_run_executes() {
    let (hsaco, out) = build_vector_add("gfx90a", "vector_add.hsaco");
    assert!(
        out.contains("compile time:") && out.contains("VGPRs:"),
        "{out}"
    );
    let bytes = std::fs::read(&hsaco).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");

    let n = 1000usize; // not a multiple of the 256-item workgroup
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let b: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    let (pa, pb) = (write_f32s("a.bin", &a), write_f32s("b.bin", &b));
    let pc = write_f32s("c.bin", &vec![f32::from_bits(0x7fba_dbad); n]);
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
    assert_sums(&out_path, &a, &b);
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

/// `kjit emu run` on a kjit code object: the buffers' lengths may be left out (kjit's ABI puts
/// `x.len` after every buffer `x`; it is taken from the file), success prints a one-line
/// summary, an argument of the wrong type is refused naming it (item: `f32` where the metadata
/// says `uint`), and `--bounds-check` turns the tail's silent out-of-range load (1000 elements in
/// 4 x 256 work-items) into an error naming the lane, offset and buffer; `kjit run
/// --bounds-check` does the same for a library kernel.
#[test]
fn emu_run_fills_lengths_checks_arguments_and_bounds() {
    let (hsaco, _) = build_vector_add("gfx942", "vector_add_lengths.hsaco");
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 3.0 - i as f32).collect();
    let (pa, pb) = (write_f32s("la.bin", &a), write_f32s("lb.bin", &b));
    let pc = write_f32s("lc.bin", &vec![f32::from_bits(0x7fba_dbad); n]);
    let out_path = tmp("lc.out");
    let buf = |p: &PathBuf| format!("buf:{}", p.display());
    let (a_arg, b_arg, c_arg) = (buf(&pa), buf(&pb), buf(&pc));
    let out_arg = format!("2={}", out_path.display());
    let hs = hsaco.to_str().unwrap();
    let base = [
        "emu",
        "run",
        hs,
        "--kernel",
        "vector_add",
        "--grid",
        "4",
        "--block",
        "256",
    ];
    let with = |extra: &[&str]| {
        let mut v: Vec<&str> = base.to_vec();
        v.extend_from_slice(extra);
        kjit(&v)
    };
    let (ok, out, err) = with(&[
        "--arg", &a_arg, "--arg", &b_arg, "--arg", &c_arg, "--out", &out_arg,
    ]);
    assert!(ok, "{out}{err}");
    assert!(
        out.starts_with(
            "vector_add on kjit's GCN device (gfx942): grid 4x1x1 of 256x1x1, 16 waves, "
        ) && out.contains(" wave-instructions, ")
            && out.trim_end().ends_with(" ms")
            && out.lines().count() == 1,
        "{out}"
    );
    assert_sums(&out_path, &a, &b);

    // A float where the metadata declares `uint` (the length of a).
    let (ok, _, err) = with(&[
        "--arg", &a_arg, "--arg", "f32:1000", "--arg", &b_arg, "--arg", "u32:1000", "--arg",
        &c_arg, "--arg", "u32:1000",
    ]);
    assert!(!ok, "a f32 for a uint was accepted");
    assert!(
        err.contains("argument 1 (a.len): a uint is expected, a f32 was given"),
        "{err}"
    );
    // A length larger than its buffer.
    let (ok, _, err) = with(&[
        "--arg", &a_arg, "--arg", "u32:1001", "--arg", &b_arg, "--arg", "u32:1000", "--arg",
        &c_arg, "--arg", "u32:1000",
    ]);
    assert!(
        !ok && err.contains("1001 elements of f32 need 4004 bytes"),
        "{err}"
    );

    // Bounds checking: lanes 1000..1023 read past the 4000-byte buffers.
    let (ok, _, err) = with(&[
        "--arg",
        &a_arg,
        "--arg",
        &b_arg,
        "--arg",
        &c_arg,
        "--bounds-check",
    ]);
    assert!(!ok, "bounds check passed an out-of-range tail");
    assert!(
        err.contains("wave 3 of workgroup (3,0,0)")
            && err.contains("lane 40: buffer access of 4 byte(s) at offset 0xfa0")
            && err.contains("num_records 4000"),
        "{err}"
    );
    let (ok, out, err) = kjit(&["run", "vector_add", "--bounds-check", "-n", "1000"]);
    assert!(!ok && err.contains("lane 40: buffer access"), "{out}{err}");
    let (ok, out, err) = kjit(&["run", "vector_add", "--bounds-check", "-n", "1024"]);
    assert!(ok && out.contains("PASS vector_add"), "{out}{err}");
}

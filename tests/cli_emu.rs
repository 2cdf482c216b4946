//! `kjit emu run` end to end: a Triton-compiled vector add (a fixture, no LLVM needed) runs from
//! files to files; bad input and a faulting launch exit non-zero with a one-line reason.

use std::path::PathBuf;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("backend-gcn/tests/fixtures/triton/triton-add-gfx942.hsaco")
}

mod common;
use common::kjit_status as kjit;

#[test]
fn emu_run_reads_args_from_files_and_writes_outputs() {
    let dir = std::env::temp_dir().join(format!("kjit-cli-emu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let n = 600usize;
    let x: Vec<u8> = (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let y: Vec<u8> = (0..n)
        .flat_map(|i| (2.0 * i as f32 + 0.5).to_le_bytes())
        .collect();
    let (xp, yp, op) = (dir.join("x.bin"), dir.join("y.bin"), dir.join("out.bin"));
    std::fs::write(&xp, &x).unwrap();
    std::fs::write(&yp, &y).unwrap();
    let f = fixture();
    let (code, stdout, stderr) = kjit(&[
        "emu",
        "run",
        f.to_str().unwrap(),
        "--kernel",
        "add_kernel",
        "--grid",
        "3",
        "--block",
        "256",
        "--arg",
        &format!("buf:{}", xp.display()),
        "--arg",
        &format!("buf:{}", yp.display()),
        "--arg",
        &format!("zeros:{}", 4 * n),
        "--arg",
        &format!("i32:{n}"),
        "--arg",
        "zeros:8",
        "--arg",
        "zeros:8",
        "--out",
        &format!("2={}", op.display()),
        "--stats",
        "--schedule",
        "random:3",
    ]);
    assert_eq!(code, 0, "stderr: {stderr}");
    assert!(
        stdout.contains("waves:") && stdout.contains("lane-operations:"),
        "{stdout}"
    );
    let out = std::fs::read(&op).unwrap();
    for i in 0..n {
        let v = f32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(v, 3.0 * i as f32 + 0.5, "element {i}");
    }

    // Too few arguments: a one-line reason, status 1.
    let (code, _, stderr) = kjit(&[
        "emu",
        "run",
        f.to_str().unwrap(),
        "--kernel",
        "add_kernel",
        "--grid",
        "1",
        "--block",
        "64",
        "--arg",
        "zeros:16",
    ]);
    assert_eq!(code, 1);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("takes 6 explicit argument(s), 1 given"),
        "{stderr}"
    );

    // n larger than the buffers: the kernel faults, named with its address.
    let (code, _, stderr) = kjit(&[
        "emu",
        "run",
        f.to_str().unwrap(),
        "--kernel",
        "add_kernel",
        "--grid",
        "3",
        "--block",
        "256",
        "--arg",
        "zeros:64",
        "--arg",
        "zeros:64",
        "--arg",
        "zeros:64",
        "--arg",
        "i32:700",
        "--arg",
        "zeros:8",
        "--arg",
        "zeros:8",
    ]);
    assert_eq!(code, 1);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("memory fault") && stderr.contains("global_load"),
        "{stderr}"
    );
    // The first lane out of range (16: byte 64 of the 64-byte x) and the buffer it missed.
    assert!(
        stderr.contains("lane 16: read of 4 byte(s)")
            && stderr.contains("(0 bytes past the end of the 64-byte allocation at"),
        "{stderr}"
    );

    // Unknown kernels and malformed specs are bad input.
    let (code, _, stderr) = kjit(&[
        "emu",
        "run",
        f.to_str().unwrap(),
        "--kernel",
        "nope",
        "--grid",
        "1",
        "--block",
        "64",
    ]);
    assert!(code == 1 && stderr.contains("no kernel 'nope'"), "{stderr}");
    let (code, _, stderr) = kjit(&[
        "emu",
        "run",
        f.to_str().unwrap(),
        "--kernel",
        "add_kernel",
        "--grid",
        "0",
        "--block",
        "64",
    ]);
    assert!(code == 1 && stderr.contains("--grid"), "{stderr}");
}

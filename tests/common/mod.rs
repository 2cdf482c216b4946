//! Scaffolding shared by the command-line tests (`tests/cli_*.rs`): running the `kjit` binary.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs the `kjit` binary that cargo built for these tests with `args`, with backtraces off so
/// that error output is what a user sees.
pub fn kjit_output(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kjit"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run kjit")
}

/// Runs `kjit args` with extra environment variables (and `KJIT_DEVICE`/`KJIT_VERBOSE` removed
/// unless given): (success, stdout, stderr).
pub fn kjit_env(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kjit"));
    cmd.args(args)
        .env("RUST_BACKTRACE", "0")
        .env_remove("KJIT_DEVICE")
        .env_remove("KJIT_VERBOSE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run kjit");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `kjit args`: (success, stdout, stderr).
pub fn kjit(args: &[&str]) -> (bool, String, String) {
    let out = kjit_output(args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `kjit args`: (exit status, -1 when killed by a signal; stdout; stderr).
pub fn kjit_status(args: &[&str]) -> (i32, String, String) {
    let out = kjit_output(args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

//! Runs each GPU test case in a process of its own. A kernel memory fault aborts the process
//! inside the HIP runtime, which would end every test sharing it unreported; here the `#[test]`
//! re-runs its own test binary filtered to itself, and only that child dies.
#![allow(dead_code)]

use std::process::Command;

/// Set in the child: run the body instead of spawning.
const CHILD: &str = "KJIT_GPU_TEST_CHILD";

/// Runs `body` in a child process running only the (ignored) test `test` of this binary, and
/// fails with the child's output, or the signal that killed it, if the child did not pass.
pub fn in_own_process(test: &str, body: impl FnOnce()) {
    if std::env::var_os(CHILD).is_some() {
        body();
        return;
    }
    if let Err(e) = run_in_child(test, &[]) {
        panic!("{e}");
    }
}

/// Runs the ignored test `test` of this binary in a child process with `env` added; `Err` with
/// the exit status (or signal) and the child's output unless it passed.
pub fn run_in_child(test: &str, env: &[(&str, &str)]) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("the test binary's path: {e}"))?;
    let out = Command::new(exe)
        .args([
            test,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .envs(env.iter().copied())
        .output()
        .map_err(|e| format!("run the test binary again: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let status = match out.status.code() {
        Some(c) => format!("exit status {c}"),
        None => "killed by a signal (a GPU memory fault aborts the process)".to_string(),
    };
    if out.status.success() && text.contains("test result: ok. 1 passed") {
        Ok(())
    } else {
        Err(format!("{test} in its own process: {status}\n{text}"))
    }
}

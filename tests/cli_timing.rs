//! `kjit run --timing MODEL [--json]` and `kjit emu run --timing`: the timing model's report as a
//! user sees it.

mod common;

use common::kjit;

#[test]
fn run_with_timing_prints_a_report_and_json_with_every_field() {
    let (ok, out, err) = kjit(&["run", "vector_add", "-n", "65536", "--timing", "mi300x"]);
    assert!(ok, "{err}");
    for want in [
        "timing on mi300x",
        "cycles",
        "GB/s",
        "waves/SIMD",
        "vmcnt_wait",
        "hottest",
        "PASS",
    ] {
        assert!(out.contains(want), "missing {want}:\n{out}");
    }
    let (ok, out, err) = kjit(&[
        "run",
        "vector_add",
        "-n",
        "65536",
        "--timing",
        "mi210",
        "--json",
    ]);
    assert!(ok, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON line:\n{out}"));
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    for key in [
        "model",
        "target",
        "cycles",
        "seconds",
        "clock_ghz",
        "bytes_read",
        "bytes_written",
        "achieved_gbps",
        "flops",
        "waves_per_simd",
        "stalls",
        "hot",
        "launch_overhead_seconds",
    ] {
        assert!(v.get(key).is_some(), "JSON lacks {key}: {line}");
    }
    assert_eq!(v["model"], "mi210");
    assert_eq!(v["target"], "gfx90a");
    assert!(v["cycles"].as_u64().unwrap() > 0);
    assert!(v["stalls"]["vmcnt_wait"].as_u64().is_some());
    let hot = v["hot"].as_array().unwrap();
    assert!(!hot.is_empty() && hot[0]["text"].is_string() && hot[0]["pc"].is_u64());
}

#[test]
fn unknown_models_and_mismatched_targets_are_clear_errors() {
    let (ok, _, err) = kjit(&["run", "vector_add", "--timing", "h100"]);
    assert!(
        !ok && err.contains("unknown machine model 'h100'") && err.contains("mi300x"),
        "{err}"
    );
    let (ok, _, err) = kjit(&[
        "run",
        "vector_add",
        "--timing",
        "mi25",
        "--target",
        "gfx942",
    ]);
    assert!(!ok && err.contains("mi25"), "{err}");
}

/// Spills go to scratch, whose functional slot depends on the host thread that ran a workgroup;
/// the trace gives each workgroup its own scratch region, so the cycles must not depend on how
/// many host threads ran the device (before, 2 threads moved half the spills to another slot).
#[test]
fn cycles_of_a_spilling_kernel_do_not_depend_on_host_threads() {
    let cycles = |threads: &str| {
        let (ok, out, err) = common::kjit_env(
            &[
                "run",
                "hash_chain",
                "--target",
                "gfx942",
                "--occupancy",
                "8",
                "-n",
                "12288",
                "--timing",
                "mi300x",
                "--json",
            ],
            &[("RAYON_NUM_THREADS", threads)],
        );
        assert!(ok, "{err}");
        assert!(
            out.contains("to scratch"),
            "level 8 no longer spills:\n{out}"
        );
        let line = out.lines().find(|l| l.starts_with('{')).unwrap();
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        v["cycles"].as_u64().unwrap()
    };
    let one = cycles("1");
    assert_eq!(cycles("2"), one);
    assert_eq!(cycles("3"), one);
}

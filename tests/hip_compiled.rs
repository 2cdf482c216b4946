//! kjit-compiled kernels on a real AMD GPU through the HIP device (feature `hip`). Every test here
//! needs a GPU and is `#[ignore]`d: run with
//! `HIP_PATH=/opt/rocm cargo test --release --features hip --test hip_compiled -- --ignored`.
//! They have never been run on hardware by this project (no machine here has an AMD GPU). Each
//! runs in a process of its own (`in_own_process`): a kernel memory fault aborts the process.
#![cfg(feature = "hip")]

#[path = "../runtime/tests/common/gpu_process.rs"]
mod gpu_process;
use gpu_process::in_own_process;

use kjit::exec::run_case;
use kjit::{compile, CompileOptions};
use kjit_runtime::emu::GcnEmulator;
use kjit_runtime::hip::HipDevice;
use kjit_runtime::Device;

/// Each library kernel, compiled for the GPU's architecture, gives on the GPU what the CPU
/// reference predicts and the same bytes as kjit's software device (integers bit-exact, floats
/// within the kernel's tolerance).
#[test]
#[ignore = "needs an AMD GPU (gfx942/gfx90a/gfx900) and ROCm"]
fn library_kernels_on_gpu_match_reference_and_software_device() {
    in_own_process(
        "library_kernels_on_gpu_match_reference_and_software_device",
        || {
            let gpu = HipDevice::open().expect("a HIP device");
            let target = gpu
                .info()
                .target()
                .expect("the GPU's architecture is one kjit compiles for");
            let emu = GcnEmulator::new();
            let mut failures = Vec::new();
            for spec in kjit_kernels::all() {
                let func = (spec.build)().expect("kernel builds");
                let ck = compile(&func, target, &CompileOptions::default()).expect("compiles");
                for n in [1usize, 1000, spec.default_n] {
                    let case = (spec.make_case)(n, 11 + n as u64);
                    let want = (spec.reference)(&case);
                    let on_gpu = match run_case(&gpu, &ck.code_object, &func, &case) {
                        Ok(o) => o,
                        Err(e) => {
                            failures.push(format!("{} n={n}: GPU: {e}", spec.name));
                            continue;
                        }
                    };
                    if let Err(m) = kjit_kernels::check(&case, &on_gpu.args, &want, spec.tolerance)
                    {
                        failures.push(format!("{} n={n}: GPU vs reference: {m}", spec.name));
                    }
                    let on_emu =
                        run_case(&emu, &ck.code_object, &func, &case).expect("software device");
                    if let Err(m) =
                        kjit_kernels::check(&case, &on_gpu.args, &on_emu.outputs, spec.tolerance)
                    {
                        failures.push(format!("{} n={n}: GPU vs software device: {m}", spec.name));
                    }
                }
            }
            assert!(failures.is_empty(), "{}", failures.join("\n"));
        },
    );
}

/// `kjit::tune::tune_on` the GPU: every launch is timed by HIP events, each candidate that
/// runs has `runs` times and its µs is the fastest, every candidate is checked correct, and
/// there is a winner (the timing itself is the GPU's; nothing here says which level wins).
#[test]
#[ignore = "needs an AMD GPU (gfx942/gfx90a/gfx900) and ROCm"]
fn tuning_on_the_gpu_times_each_candidate_with_hip_events() {
    in_own_process(
        "tuning_on_the_gpu_times_each_candidate_with_hip_events",
        || {
            let gpu = HipDevice::open().expect("a HIP device");
            let target = gpu.info().target().expect("supported GPU");
            let spec = kjit_kernels::find("vector_add").unwrap();
            let job = kjit::tune::Job::from_library(spec, 1 << 20, 3);
            let opts = kjit::tune::TuneOptions::new(target);
            let r = kjit::tune::tune_on(&job, &opts, &gpu, &mut |_, _| {}).expect("tunes");
            let table = kjit::tune::table(&r);
            for c in &r.candidates {
                let note = c.note.as_deref().unwrap_or("");
                if note.starts_with("unreachable") {
                    continue;
                }
                assert!(c.correct, "{table}");
                assert!(
                    c.cycles.is_none() && c.us.is_some_and(|us| us > 0.0),
                    "{table}"
                );
                if !note.starts_with("same code") {
                    assert_eq!(c.runs_us.len(), opts.runs as usize, "{table}");
                    let min = c.runs_us.iter().copied().fold(f64::INFINITY, f64::min);
                    assert_eq!(c.us, Some(min), "{table}");
                }
            }
            assert!(r.best().is_some(), "{table}");
            println!("{table}");
        },
    );
}

/// A code object compiled for another architecture than the GPU's is refused before launch.
#[test]
#[ignore = "needs an AMD GPU (gfx942/gfx90a/gfx900) and ROCm"]
fn kjit_code_object_for_other_arch_is_refused() {
    in_own_process("kjit_code_object_for_other_arch_is_refused", || {
        let gpu = HipDevice::open().expect("a HIP device");
        let target = gpu.info().target().expect("supported GPU");
        let other = kjit_backend_gcn::target::ALL_TARGETS
            .into_iter()
            .find(|t| *t != target)
            .unwrap();
        let spec = kjit_kernels::find("vector_add").unwrap();
        let func = (spec.build)().unwrap();
        let ck = compile(&func, other, &CompileOptions::default()).unwrap();
        let err = gpu
            .load_module(&ck.code_object)
            .expect_err("mismatch refused");
        assert!(
            err.to_string().contains(other.name()),
            "error names the code object's target: {err}"
        );
    });
}

/// Runs the `kjit` binary with `KJIT_HIP_LIBRARY` set to `library` (or unset):
/// (success, stdout, stderr).
fn kjit_with_hip_library(library: Option<&str>, args: &[&str]) -> (bool, String, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kjit"));
    cmd.args(args).env("RUST_BACKTRACE", "0");
    match library {
        Some(l) => cmd.env("KJIT_HIP_LIBRARY", l),
        None => cmd.env_remove("KJIT_HIP_LIBRARY"),
    };
    let out = cmd.output().expect("run kjit");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Built with `hip`, the binary loads `libamdhip64` at run time: where the library is missing it
/// still starts, says why HIP is unavailable, and runs on the software device; where it is there
/// but no GPU is (this machine), the same with "no AMD GPU found".
#[test]
fn the_hip_build_starts_and_falls_back_without_rocm_or_a_gpu() {
    let missing = Some("/nonexistent/libamdhip64.so");
    let (ok, out, err) = kjit_with_hip_library(missing, &["devices"]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("hip: device unavailable: no AMD GPU runtime: cannot load the HIP runtime (tried /nonexistent/libamdhip64.so)")
            && out.contains("default: kjit GCN device (software)"),
        "{out}"
    );
    let (ok, out, err) = kjit_with_hip_library(missing, &["run", "vector_add", "-n", "1000"]);
    assert!(ok && out.contains("PASS vector_add"), "{out}{err}");
    assert!(
        err.contains("kjit: device emu: using kjit's software GCN device: no AMD GPU runtime"),
        "{err}"
    );
    let (ok, out, err) = kjit_with_hip_library(missing, &["run", "vector_add", "--device", "hip"]);
    assert!(
        !ok && err.contains("cannot load the HIP runtime"),
        "{out}{err}"
    );

    // With the library installed (CI installs Debian's) and no GPU: "no AMD GPU found".
    let (ok, out, err) = kjit_with_hip_library(None, &["devices"]);
    assert!(ok, "{out}{err}");
    if kjit_runtime::hip::HipApi::load(kjit_runtime::hip::LIBRARY_NAMES).is_ok()
        && kjit_runtime::hip::discover().is_err()
    {
        assert!(
            out.contains("hip: device unavailable: no AMD GPU found"),
            "{out}"
        );
        assert!(out.contains("default: kjit GCN device (software)"), "{out}");
    }
}

/// The binary does not link `libamdhip64` (it is loaded at run time), so it starts without ROCm.
#[test]
fn the_hip_build_does_not_link_libamdhip64() {
    let Some(readelf) = kjit_backend_gcn::llvm_oracle::require(
        kjit_backend_gcn::llvm_oracle::Tool::Readelf,
        "the_hip_build_does_not_link_libamdhip64",
    ) else {
        return;
    };
    let dynamic =
        kjit_backend_gcn::llvm_oracle::run(&readelf, &["-d", env!("CARGO_BIN_EXE_kjit")], None)
            .unwrap_or_else(|e| panic!("{e}"));
    assert!(dynamic.contains("(NEEDED)"), "{dynamic}");
    assert!(!dynamic.contains("amdhip"), "{dynamic}");
}

//! kjit-compiled kernels on a real AMD GPU through the HIP device (feature `hip`). Every test here
//! needs a GPU and is `#[ignore]`d: run with
//! `HIP_PATH=/opt/rocm cargo test --release --features hip --test hip_compiled -- --ignored`.
//! They have never been run on hardware by this project (no machine here has an AMD GPU).
#![cfg(feature = "hip")]

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
            if let Err(m) = kjit_kernels::check(&case, &on_gpu.args, &want, spec.tolerance) {
                failures.push(format!("{} n={n}: GPU vs reference: {m}", spec.name));
            }
            let on_emu = run_case(&emu, &ck.code_object, &func, &case).expect("software device");
            if let Err(m) =
                kjit_kernels::check(&case, &on_gpu.args, &on_emu.outputs, spec.tolerance)
            {
                failures.push(format!("{} n={n}: GPU vs software device: {m}", spec.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A code object compiled for another architecture than the GPU's is refused before launch.
#[test]
#[ignore = "needs an AMD GPU (gfx942/gfx90a/gfx900) and ROCm"]
fn kjit_code_object_for_other_arch_is_refused() {
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
}

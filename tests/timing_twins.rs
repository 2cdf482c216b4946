//! kjit's code against clang-19's OpenCL twin of every library kernel that has one
//! (`kjit_kernels::NO_OPENCL_TWIN` lists those without), on the timing model
//! (`mi300x`): both run the same case on the same timed software device, both are checked against
//! the kernel's CPU reference, and the table of model cycles is printed (issue 15's cycles
//! comparison). `cargo test --release --test timing_twins -- --nocapture` shows it; the same
//! table on `mi250x` (gfx90a) and `mi25` (gfx900) with `-- --ignored --nocapture` (about twice
//! as long again, so not in CI).

use std::path::Path;

use kjit_backend_gcn::compile::{compile, CompileOptions};
use kjit_backend_gcn::llvm_oracle::{compile_opencl, require_all, OpenClBuild, Tool};
use kjit_backend_gcn::machine::machine_by_name;
use kjit_runtime::emu::{GcnEmulator, RunConfig};

/// A size that fills `mi300x` (304 CUs) for the streaming kernels; the others at sizes whose
/// launches still take a few seconds of host time at most.
fn size(name: &str) -> usize {
    match name {
        "matmul" | "matmul_pipelined" => 256,
        "softmax" => 2048,
        "seed_2d" | "stencil_pipelined" => 1024,
        "hash_rounds" | "hash_chain" => 1 << 16,
        _ => 1 << 20,
    }
}

#[test]
fn kjit_and_clang_twins_on_the_timing_model() {
    twins_on("mi300x");
}

#[test]
#[ignore = "two more models: run with --ignored"]
fn kjit_and_clang_twins_on_the_gfx90a_and_gfx900_models() {
    twins_on("mi250x");
    twins_on("mi25");
}

/// Runs every twinned kernel and its twin on `model` (for its target), checks both against the
/// reference and prints the table of cycles.
fn twins_on(model: &str) {
    let Some(tools) = require_all(&[Tool::Clang, Tool::Lld], "timing twins") else {
        return;
    };
    let model = machine_by_name(model).unwrap();
    let target = model.target;
    let dev = GcnEmulator::with_config(RunConfig {
        timing: Some(model),
        ..RunConfig::default()
    });
    let twins = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/opencl");
    let mut rows = Vec::new();
    for spec in kjit_kernels::all()
        .iter()
        .filter(|s| !kjit_kernels::NO_OPENCL_TWIN.contains(&s.name))
    {
        let func = (spec.build)().unwrap();
        // `KJIT_KERNARG_PRELOAD=0`: every argument an `s_load` (to measure what preloading gives).
        let opts = CompileOptions {
            kernarg_preload: std::env::var("KJIT_KERNARG_PRELOAD").as_deref() != Ok("0"),
            ..CompileOptions::default()
        };
        let k = compile(&func, target, &opts).unwrap();
        let twin = compile_opencl(
            &tools[0],
            &tools[1],
            &twins.join(format!("{}.cl", spec.name)),
            target.name(),
            &OpenClBuild::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let twin = std::fs::read(twin).unwrap();
        let n = size(spec.name);
        let case = (spec.make_case)(n, 7);
        let want = (spec.reference)(&case);
        let mut cycles = [0u64; 2];
        for (i, code) in [&k.code_object, &twin].into_iter().enumerate() {
            let out = kjit::exec::run_case(&dev, code, &func, &case)
                .unwrap_or_else(|e| panic!("{} ({}): {e}", spec.name, ["kjit", "clang"][i]));
            kjit_kernels::check(&case, &out.args, &want, spec.tolerance)
                .unwrap_or_else(|m| panic!("{} ({}): {m}", spec.name, ["kjit", "clang"][i]));
            let t = out.stats.timing.expect("timed");
            assert!(t.cycles > 0);
            cycles[i] = t.cycles;
        }
        rows.push((spec.name, n, cycles[0], cycles[1]));
    }
    eprintln!("{} ({}):", model.name, target.name());
    eprintln!("| kernel | n | kjit cycles | clang-19 twin cycles | kjit / clang |");
    eprintln!("|---|---|---|---|---|");
    for (name, n, a, b) in &rows {
        eprintln!(
            "| {name} | {n} | {a} | {b} | {:.2} |",
            *a as f64 / *b as f64
        );
    }
}

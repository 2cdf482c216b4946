//! Every choice of every library kernel's declared tuning parameters (`KernelSpec::tuning`)
//! builds, compiles, runs on the software device with the device's race and hazard checks, and
//! matches the kernel's CPU reference — so `kjit tune --space all` never offers a parameter
//! choice that is wrong or faults (the tuner would only report it, not fix it).

use kjit::exec::run_case;
use kjit::{compile, CompileOptions};
use kjit_backend_gcn::Target;
use kjit_kernels::KernelSpec;
use kjit_runtime::emu::gcn::GcnEmulator;
use kjit_runtime::emu::scheduler::{RunConfig, Schedule};

/// Every combination of the declared values (the default first).
fn choices(spec: &KernelSpec) -> Vec<Vec<u32>> {
    let mut all = vec![Vec::new()];
    for p in spec.tuning.map(|t| t.params).unwrap_or(&[]) {
        all = all
            .into_iter()
            .flat_map(|c| {
                p.values.iter().map(move |&v| {
                    let mut c = c.clone();
                    c.push(v);
                    c
                })
            })
            .collect();
    }
    all
}

/// Runs one choice at size `n`; a message if anything fails.
fn run_choice(spec: &KernelSpec, params: &[u32], n: usize, target: Target) -> Option<String> {
    let func = match spec.build_with(params) {
        Ok(f) => f,
        Err(e) => return Some(format!("build: {e}")),
    };
    let ck = match compile(&func, target, &CompileOptions::default()) {
        Ok(k) => k,
        Err(e) => return Some(format!("compile: {e}")),
    };
    let case = spec.case_with(params, n, 3);
    let dev = GcnEmulator::with_config(RunConfig {
        schedule: Schedule::Random(n as u64),
        ..RunConfig::default()
    });
    let want = (spec.reference)(&case);
    match run_case(&dev, &ck.code_object, &func, &case) {
        Ok(out) => kjit_kernels::check(&case, &out.args, &want, spec.tolerance)
            .err()
            .map(|m| m.to_string()),
        Err(e) => Some(format!("device: {e}")),
    }
}

/// Sizes: one that is a multiple of the usual blocks and one that is not.
fn check_all(specs: &[KernelSpec], target: Target, sizes: &[usize]) {
    let mut failures = Vec::new();
    let mut tried = 0;
    for spec in specs.iter().filter(|s| s.tuning.is_some()) {
        for params in choices(spec) {
            for &n in sizes {
                tried += 1;
                if let Some(m) = run_choice(spec, &params, n, target) {
                    failures.push(format!("{} {params:?} n={n} on {target}: {m}", spec.name));
                }
            }
        }
    }
    assert!(tried > 0);
    assert!(
        failures.is_empty(),
        "{} of {tried} runs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_parameter_choice_of_the_library_is_correct() {
    check_all(kjit_kernels::all(), Target::Gfx942, &[64, 200]);
}

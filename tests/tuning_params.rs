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

/// Every combination of the declared values (the default first; one empty choice without
/// parameters).
fn choices(spec: &KernelSpec) -> Vec<Vec<u32>> {
    spec.tuning
        .map_or_else(|| vec![Vec::new()], |t| t.choices())
}

/// What one choice did.
enum Outcome {
    /// Built, ran and matched the reference.
    Correct,
    /// The builder refused it with an error (e.g. tiles whose LDS does not fit): the tuner
    /// lists such a choice with its reason and never runs it.
    Refused,
    /// Anything else: the message.
    Failed(String),
}

/// Runs one choice at size `n`.
fn run_choice(spec: &KernelSpec, params: &[u32], n: usize, target: Target) -> Outcome {
    let func = match spec.build_with(params) {
        Ok(f) => f,
        Err(_) => return Outcome::Refused,
    };
    match run_built(spec, &func, params, n, target) {
        Some(m) => Outcome::Failed(m),
        None => Outcome::Correct,
    }
}

/// Compiles and runs a built choice; a message if anything fails.
fn run_built(
    spec: &KernelSpec,
    func: &kjit::ir::Function,
    params: &[u32],
    n: usize,
    target: Target,
) -> Option<String> {
    let ck = match compile(func, target, &CompileOptions::default()) {
        Ok(k) => k,
        Err(e) => return Some(format!("compile: {e}")),
    };
    let case = spec.case_with(params, n, 3);
    let dev = GcnEmulator::with_config(RunConfig {
        schedule: Schedule::Random(n as u64),
        ..RunConfig::default()
    });
    let want = (spec.reference)(&case);
    match run_case(&dev, &ck.code_object, func, &case) {
        Ok(out) => kjit_kernels::check(&case, &out.args, &want, spec.tolerance)
            .err()
            .map(|m| m.to_string()),
        Err(e) => Some(format!("device: {e}")),
    }
}

/// Sizes: one that is a multiple of the usual blocks and one that is not.
fn check_all(specs: &[KernelSpec], target: Target, sizes: &[usize]) {
    let mut failures = Vec::new();
    let (mut tried, mut refused) = (0, 0);
    for spec in specs.iter().filter(|s| s.tuning.is_some()) {
        for (i, params) in choices(spec).into_iter().enumerate() {
            for &n in sizes {
                tried += 1;
                match run_choice(spec, &params, n, target) {
                    Outcome::Correct => {}
                    // The defaults must build.
                    Outcome::Refused if i > 0 => refused += 1,
                    Outcome::Refused => failures.push(format!("{}: default refused", spec.name)),
                    Outcome::Failed(m) => {
                        failures.push(format!("{} {params:?} n={n} on {target}: {m}", spec.name))
                    }
                }
            }
        }
    }
    eprintln!("{tried} runs, {refused} choices refused by the builder");
    assert!(
        tried > 0 && refused * 4 < tried,
        "{refused} of {tried} refused"
    );
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
#[test]
fn every_parameter_choice_of_the_matrix_kernels_is_correct() {
    check_all(kjit_kernels::matrix(), Target::Gfx942, &[64]);
}

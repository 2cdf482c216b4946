//! Every kernel of the library, run in the IR interpreter on random inputs at sizes that are not
//! multiples of its workgroup size, matches its CPU reference.

use kjit_ir::interp::run;
use kjit_kernels::{all, check, find, Case, KernelSpec};

fn sizes(spec: &KernelSpec) -> Vec<usize> {
    match spec.name {
        "matmul" | "matmul_pipelined" => vec![1, 13, 37],
        "softmax" => vec![1, 63, 65, 333],
        "seed_2d" | "stencil_pipelined" => vec![1, 17, 250],
        _ => vec![1, 63, 257, 3001],
    }
}

fn run_case(spec: &KernelSpec, case: &Case) -> Vec<kjit_ir::interp::Arg> {
    let f = (spec.build)().unwrap_or_else(|e| panic!("{}: {e}", spec.name));
    let mut args = case.args.clone();
    run(&f, &case.launch, &mut args).unwrap_or_else(|e| panic!("{} n={}: {e}", spec.name, case.n));
    args
}

#[test]
fn every_kernel_matches_its_reference_in_the_interpreter() {
    let mut runs = 0;
    for spec in all() {
        for n in sizes(spec) {
            for seed in [1u64, 2] {
                let case = (spec.make_case)(n, seed);
                let args = run_case(spec, &case);
                let want = (spec.reference)(&case);
                if let Err(m) = check(&case, &args, &want, spec.tolerance) {
                    panic!("{} n={n} seed={seed}: {m}", spec.name);
                }
                runs += 1;
            }
        }
    }
    assert!(runs >= 50, "{runs}");
}

#[test]
fn a_wrong_result_is_caught() {
    // The check is not vacuous: perturb one output element of a correct run.
    let spec = find("vector_add").unwrap();
    let case = (spec.make_case)(300, 5);
    let mut args = run_case(spec, &case);
    if let kjit_ir::interp::Arg::Buffer(b) = &mut args[2] {
        let bits = b.get_bits(299);
        b.set_bits(299, bits ^ 1);
    }
    let m = check(&case, &args, &(spec.reference)(&case), spec.tolerance).unwrap_err();
    assert_eq!((m.index, m.mismatches), (299, 1));

    // An element left unwritten (still poisoned) is caught too, even with a tolerance.
    let spec = find("softmax").unwrap();
    let case = (spec.make_case)(70, 5);
    let mut args = run_case(spec, &case);
    if let kjit_ir::interp::Arg::Buffer(b) = &mut args[1] {
        b.set_bits(69, kjit_kernels::POISON_F32 as u64);
    }
    let m = check(&case, &args, &(spec.reference)(&case), spec.tolerance).unwrap_err();
    assert_eq!(m.index, 69);
}

#[test]
fn persistent_kernel_loops_and_reduction_uses_barriers() {
    let spec = find("vector_add_persistent").unwrap();
    let f = (spec.build)().unwrap();
    let case = (spec.make_case)(5000, 3);
    let mut args = case.args.clone();
    let stats = run(&f, &case.launch, &mut args).unwrap();
    // 384 work-items cover 5000 elements in 14 strides: the loop body ran many times per wave.
    assert_eq!(stats.waves, 6);
    assert!(stats.wave_insts > 6 * 13 * 5, "{stats:?}");
    check(&case, &args, &(spec.reference)(&case), spec.tolerance).unwrap();

    let spec = find("reduce_sum").unwrap();
    let f = (spec.build)().unwrap();
    let case = (spec.make_case)(1000, 3);
    let mut args = case.args.clone();
    let stats = run(&f, &case.launch, &mut args).unwrap();
    // One barrier after the load and one after the halving round across waves (the first
    // wave adds the last 64 sums without one), per workgroup.
    assert_eq!(stats.barriers, 4 * 2, "{stats:?}");
    assert!(stats.divergent_branches > 0);
}

#[test]
fn registry_is_complete_and_names_are_unique() {
    let names: Vec<&str> = all().iter().map(|k| k.name).collect();
    for want in [
        "vector_add",
        "saxpy",
        "vector_add_persistent",
        "seed_2d",
        "reduce_sum",
        "wave_permute",
        "softmax",
        "matmul",
    ] {
        assert!(names.contains(&want), "{want} missing");
    }
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len());
    assert!(find("nope").is_none());
}

//! Every kernel, optimized by the e-graph pass, still verifies and still matches its reference
//! in the interpreter; and the e-graph makes no kernel bigger or slower than its unrolled input.

use kjit_ir::interp::run;
use kjit_ir::opt::optimize;
use kjit_kernels::{all, check};

#[test]
fn optimized_kernels_verify_and_match_their_references() {
    for spec in all() {
        let f = (spec.build)().unwrap();
        let (g, report) = optimize(&f);
        kjit_ir::verify(&g).unwrap_or_else(|e| panic!("{}: {e}\n{g}", spec.name));
        println!(
            "{:<24} {:>4} -> {:>4} instructions, {:>4} -> {:>4} estimated ALU cycles",
            spec.name,
            report.insts_before,
            report.insts_after,
            report.cycles_before,
            report.cycles_after
        );
        // The e-graph makes no block bigger or slower; unrolling (`opt/unroll.rs`) may.
        assert!(
            report.cycles_after <= report.cycles_unrolled,
            "{}: {report}",
            spec.name
        );
        assert!(
            report.insts_after <= report.insts_unrolled,
            "{}: {report}",
            spec.name
        );
        for (n, seed) in [(1, 1), (77, 2), (spec.default_n.min(300), 3)] {
            let case = (spec.make_case)(n, seed);
            let mut args = case.args.clone();
            run(&g, &case.launch, &mut args)
                .unwrap_or_else(|e| panic!("{} n={n}: {e}\n{g}", spec.name));
            let want = (spec.reference)(&case);
            if let Err(m) = check(&case, &args, &want, spec.tolerance) {
                panic!("{} n={n} seed={seed} optimized: {m}\n{g}", spec.name);
            }
        }
    }
}

/// What a compile takes (`optimized`, no report, no cycle estimates) is what `optimize` gives.
#[test]
fn the_compile_path_optimizes_as_the_reporting_one() {
    for spec in all() {
        let f = (spec.build)().unwrap();
        let (g, report) = optimize(&f);
        let quiet = kjit_ir::opt::optimized(&f);
        assert_eq!(quiet.to_string(), g.to_string(), "{}", spec.name);
        assert!(report.cycles_after > 0, "{}: {report}", spec.name);
    }
}

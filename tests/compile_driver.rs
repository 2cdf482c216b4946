//! `kjit::compile` with every verifier on (IR verifier before and after optimization, MIR
//! verifier after selection and scheduling, regalloc2's checker) for every library kernel on
//! every target, with and without the optimizer and under a tight VGPR budget: no stage may
//! produce something the next one's verifier rejects. Also the driver's own contract: stage
//! timings add up, a bad budget is an error, `compile_to_phys` + `emit` equals `compile`.

use kjit::backend_gcn::compile::{compile_to_phys, CompileError};
use kjit::backend_gcn::emit::emit;
use kjit::backend_gcn::target::ALL_TARGETS;
use kjit::backend_gcn::Target;
use kjit::{compile, CompileOptions};

#[test]
fn every_kernel_compiles_with_all_verifiers_on_every_target() {
    for spec in kjit::kernels::all() {
        let func = (spec.build)().unwrap();
        for t in ALL_TARGETS {
            for (optimize, vgpr_budget) in [(true, None), (false, None), (true, Some(32))] {
                let opts = CompileOptions {
                    optimize,
                    vgpr_budget,
                    occupancy: None,
                    check: true,
                    kernarg_preload: true,
                };
                let k = compile(&func, t, &opts).unwrap_or_else(|e| {
                    panic!(
                        "{} for {t} (opt {optimize}, budget {vgpr_budget:?}): {e}",
                        spec.name
                    )
                });
                assert_eq!(k.name, spec.name);
                assert!(k.header.instructions > 0);
                if let Some(b) = vgpr_budget {
                    assert!(
                        k.header.vgprs + k.header.agprs <= b,
                        "{} for {t}: {:?} over budget {b}",
                        spec.name,
                        k.header
                    );
                }
                let tm = &k.timings;
                let parts = tm.optimize
                    + tm.isel
                    + tm.schedule
                    + tm.regalloc
                    + tm.waitcnt
                    + tm.hazards
                    + tm.emit
                    + tm.verify;
                assert!(parts <= tm.total, "{}: {tm:?}", spec.name);
                assert!(!tm.verify.is_zero() && !tm.isel.is_zero());
                assert_eq!(tm.optimize.is_zero(), !optimize);
            }
        }
    }
}

#[test]
fn compile_to_phys_then_emit_is_compile() {
    let func = kjit::kernels::find("softmax")
        .map(|s| (s.build)().unwrap())
        .unwrap();
    let opts = CompileOptions::default();
    let k = compile(&func, Target::Gfx90a, &opts).unwrap();
    let p = compile_to_phys(&func, Target::Gfx90a, &opts).unwrap();
    let e = emit(&p).unwrap();
    assert_eq!(e.code_object, k.code_object);
    assert_eq!(e.asm, k.asm);
    assert_eq!(e.header, k.header);
}

#[test]
fn budgets_outside_the_register_file_are_errors() {
    let func = kjit::kernels::find("vector_add")
        .map(|s| (s.build)().unwrap())
        .unwrap();
    for (t, b) in [
        (Target::Gfx942, 0),
        (Target::Gfx942, 513),
        (Target::Gfx900, 257),
    ] {
        let opts = CompileOptions {
            vgpr_budget: Some(b),
            ..Default::default()
        };
        assert!(
            matches!(compile(&func, t, &opts), Err(CompileError::BadBudget { budget, .. }) if budget == b),
            "{t} budget {b}"
        );
    }
    let opts = CompileOptions {
        vgpr_budget: Some(1),
        ..Default::default()
    };
    assert!(matches!(
        compile(&func, Target::Gfx942, &opts),
        Err(CompileError::Regalloc(_))
    ));
}

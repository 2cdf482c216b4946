//! Instruction selection of every library kernel on every target gives MIR that verifies
//! (SSA, dominance, operand classes and widths against the opcode table, ties, live-ins).

use kjit_backend_gcn::isel::select;
use kjit_backend_gcn::mir_verify::{verify, DisplayMir};
use kjit_backend_gcn::target::ALL_TARGETS;

#[test]
fn every_library_kernel_selects_to_verified_mir() {
    let mut failures = Vec::new();
    for spec in kjit_kernels::all() {
        let f = (spec.build)().expect("library kernel builds");
        for t in ALL_TARGETS {
            match select(&f, t) {
                Ok(mf) => {
                    if let Err(e) = verify(&mf) {
                        failures.push(format!("{} {t}: {e}\n{}", spec.name, DisplayMir(&mf)));
                    }
                    if std::env::var("KJIT_PRINT_MIR").as_deref() == Ok(spec.name)
                        && t.name() == "gfx942"
                    {
                        println!("{}", DisplayMir(&mf));
                    }
                }
                Err(e) => failures.push(format!("{} {t}: {e}", spec.name)),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

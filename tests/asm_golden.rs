//! Golden `kjit dump --asm` of every library kernel on gfx942: the header (registers, occupancy,
//! spills, instruction count) and every instruction, so that any change to what the backend
//! emits shows up in review as a diff of `tests/snapshots/asm_golden__<kernel>.snap`.
//! After an intended change: `INSTA_UPDATE=always cargo test --test asm_golden` (or
//! `cargo insta review`) and read the diff before committing it.

use kjit::backend_gcn::Target;
use kjit::{compile, CompileOptions};

#[test]
fn asm_of_every_kernel_on_gfx942() {
    for spec in kjit::kernels::all() {
        let func = (spec.build)().unwrap();
        let k = compile(&func, Target::Gfx942, &CompileOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        insta::assert_snapshot!(spec.name, k.asm);
    }
}

#[test]
fn asm_is_deterministic() {
    // The goldens only mean something if one compilation equals the next (a hash-map order
    // once leaked into the optimizer's output).
    for spec in kjit::kernels::all() {
        let func = (spec.build)().unwrap();
        let a = compile(&func, Target::Gfx942, &CompileOptions::default()).unwrap();
        let b = compile(
            &(spec.build)().unwrap(),
            Target::Gfx942,
            &CompileOptions::default(),
        )
        .unwrap();
        assert_eq!(a.asm, b.asm, "{}", spec.name);
        assert_eq!(a.code_object, b.code_object, "{}", spec.name);
    }
}

//! Golden snapshots of every kernel's printed IR, and the text form's round trip on each.

use kjit_ir::parse::parse_function;
use kjit_kernels::all;

#[test]
fn printed_ir_of_every_kernel() {
    for spec in all() {
        let f = (spec.build)().unwrap();
        let text = f.to_string();
        let back = parse_function(&text).unwrap();
        assert_eq!(back.to_string(), text, "{} does not round-trip", spec.name);
        kjit_ir::verify(&back).unwrap();
        insta::assert_snapshot!(spec.name, text);
    }
}

//! The reader on code objects Triton 3.9 compiled for gfx942/gfx90a (fixtures made by
//! `tests/fixtures/triton/gen.py`): an element-wise add and an MFMA matmul using dynamic LDS.
//! Triton appends two pointer arguments after the user's and writes no hidden arguments; its
//! `.symtab` carries ABS symbols and debug sections, which must not confuse the reader.

mod codeobj_support;

use std::path::PathBuf;

use codeobj_support::*;
use kjit_backend_gcn::codeobj::{CodeObject, ValueKind};
use kjit_backend_gcn::llvm_oracle::{require, Tool};
use kjit_backend_gcn::target::Target;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/triton")
        .join(name)
}

#[test]
fn reads_triton_objects() {
    let cases = [
        ("triton-add-gfx942.hsaco", Target::Gfx942, "add_kernel"),
        ("triton-add-gfx90a.hsaco", Target::Gfx90a, "add_kernel"),
        (
            "triton-matmul-gfx942.hsaco",
            Target::Gfx942,
            "matmul_kernel",
        ),
    ];
    let readelf = require(Tool::Readelf, "reads_triton_objects");
    for (file, target, name) in cases {
        let path = fixture(file);
        let co = CodeObject::parse(&std::fs::read(&path).unwrap())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(co.target, target);
        assert_eq!(co.version, 5);
        assert_eq!(co.kernels.len(), 1);
        let k = &co.kernels[0];
        assert_eq!(k.name, name);
        // Four user arguments, then Triton's two extra global pointers; 8-byte slots.
        assert_eq!(k.meta.args.len(), 6, "{file}");
        let offsets: Vec<u32> = k.meta.args.iter().map(|a| a.offset).collect();
        assert_eq!(offsets, [0, 8, 16, 24, 32, 40]);
        assert_eq!(k.meta.args[3].value_kind, ValueKind::ByValue);
        assert!(k.meta.args.iter().all(|a| !a.value_kind.is_hidden()));
        assert_eq!(k.meta.kernarg_segment_size, 48);
        assert!(k.descriptor.enable_sgpr_kernarg_segment_ptr());
        assert!(k.descriptor.registers_allocated(target) >= k.meta.vgpr_count + k.meta.agpr_count);
        if let Some(readelf) = &readelf {
            check_against_readelf(readelf, &path, &co);
        }
    }
}

//! Every vector-ALU mnemonic clang-19 -O3 emits for the OpenCL corpus in `tests/valu/` (for
//! gfx942, gfx90a and gfx900) maps to an operation the software device implements. Catches an
//! opcode missing from `valu::ops` before a kernel meets it at run time.

use kjit_backend_gcn::llvm_oracle::{
    compile_opencl_object, require_all, run, scratch_dir, OpenClBuild, Tool,
};
use kjit_runtime::emu::valu::ValuOp;

/// (file, targets it compiles for)
const CORPUS: &[(&str, &[&str])] = &[
    ("arith.cl", &["gfx942", "gfx90a", "gfx900"]),
    ("builtins.cl", &["gfx942", "gfx90a", "gfx900"]),
    ("dot.cl", &["gfx942", "gfx90a"]),
    ("mfma.cl", &["gfx942", "gfx90a"]),
];

#[test]
fn clang_emitted_valu_mnemonics_are_all_implemented() {
    let Some(tools) = require_all(&[Tool::Clang, Tool::Objdump], "valu coverage") else {
        return;
    };
    let (clang, objdump) = (&tools[0], &tools[1]);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/valu");
    let tmp = scratch_dir("valu-coverage").unwrap_or_else(|e| panic!("{e}"));
    let build = OpenClBuild {
        extra_args: &[],
        out_dir: Some(tmp.clone()),
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut missing = Vec::new();
    for (file, targets) in CORPUS {
        for t in *targets {
            let (obj, _) = compile_opencl_object(clang, &dir.join(file), t, &build)
                .unwrap_or_else(|e| panic!("{e}"));
            let mcpu = format!("--mcpu={t}");
            let dis = run(objdump, &["-d", &mcpu, obj.to_str().unwrap()], None).unwrap();
            for line in dis.lines() {
                let Some(m) = line.split_whitespace().next() else {
                    continue;
                };
                if !m.starts_with("v_") || !line.starts_with(|c: char| c.is_whitespace()) {
                    continue;
                }
                if seen.insert(m.to_string()) && ValuOp::from_name(m).is_none() {
                    missing.push(format!("{m} ({file}, {t})"));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(
        seen.len() > 100,
        "the corpus should exercise many opcodes, saw {}",
        seen.len()
    );
    assert!(missing.is_empty(), "not implemented: {missing:?}");
    eprintln!("{} distinct VALU mnemonics, all implemented", seen.len());
}

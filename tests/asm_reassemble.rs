//! The `kjit dump --asm` promise, for every library kernel on every target (the MFMA kernels,
//! `kjit::kernels::matrix()`, on gfx942 and gfx90a): `llvm-mc-19
//! -arch=amdgcn -mcpu=<target>` assembles our assembly text (header comments, labels and all) to
//! exactly the bytes of our code object's `.text`, and `llvm-readelf-19 --notes` reads our code
//! object's metadata with the kernel's name and register counts. Skips with a printed reason
//! without LLVM 19; fails then when `KJIT_REQUIRE_LLVM=1`.

use kjit::backend_gcn::codeobj::CodeObject;
use kjit::backend_gcn::llvm_oracle::{require, run, Tool};
use kjit::backend_gcn::target::ALL_TARGETS;
use kjit::backend_gcn::Target;
use kjit::{compile, CompileOptions};
use object::read::elf::ElfFile64;
use object::{Endianness, Object, ObjectSection};

fn tmp_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("kjit-asm-reassemble-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The `.text` bytes of a relocatable object written by llvm-mc.
/// Every library kernel with the targets it compiles for.
fn kernels_and_targets() -> Vec<(&'static kjit::kernels::KernelSpec, Vec<Target>)> {
    let mut v: Vec<_> = kjit::kernels::all()
        .iter()
        .map(|s| (s, ALL_TARGETS.to_vec()))
        .collect();
    for s in kjit::kernels::matrix() {
        v.push((s, vec![Target::Gfx942, Target::Gfx90a]));
    }
    v
}

fn text_of(obj: &[u8]) -> Vec<u8> {
    let f = ElfFile64::<Endianness>::parse(obj).expect("llvm-mc wrote an ELF64");
    f.section_by_name(".text")
        .expect(".text")
        .data()
        .unwrap()
        .to_vec()
}

#[test]
fn llvm_mc_assembles_our_asm_to_our_bytes_for_every_kernel_and_target() {
    let Some(mc) = require(Tool::Mc, "asm_reassemble") else {
        return;
    };
    let dir = tmp_dir();
    let mut checked = 0;
    let mut failures = Vec::new();
    let pairs = kernels_and_targets();
    for (spec, targets) in &pairs {
        let func = (spec.build)().unwrap();
        for &t in targets {
            let k = compile(&func, t, &CompileOptions::default())
                .unwrap_or_else(|e| panic!("{} for {t}: {e}", spec.name));
            let ours = CodeObject::parse(&k.code_object)
                .unwrap_or_else(|e| panic!("{} for {t}: our code object: {e}", spec.name));
            let code = &ours.kernels[0].code;
            let src = dir.join(format!("{}-{t}.s", spec.name));
            let obj = dir.join(format!("{}-{t}.o", spec.name));
            std::fs::write(&src, &k.asm).unwrap();
            let cpu = format!("-mcpu={}", t.name());
            if let Err(e) = run(
                &mc,
                &[
                    "-arch=amdgcn",
                    &cpu,
                    "-filetype=obj",
                    src.to_str().unwrap(),
                    "-o",
                    obj.to_str().unwrap(),
                ],
                None,
            ) {
                failures.push(format!(
                    "{} for {t}: llvm-mc rejected our asm: {e}",
                    spec.name
                ));
                continue;
            }
            let theirs = text_of(&std::fs::read(&obj).unwrap());
            // Our .text ends at the kernel (one kernel, no padding after it).
            if &theirs != code {
                let at = theirs
                    .iter()
                    .zip(code.iter())
                    .position(|(a, b)| a != b)
                    .unwrap_or(theirs.len().min(code.len()));
                failures.push(format!(
                    "{} for {t}: llvm-mc gives {} bytes, ours {}; first difference at byte {at:#x} (see {})",
                    spec.name,
                    theirs.len(),
                    code.len(),
                    src.display()
                ));
                continue;
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(checked, pairs.iter().map(|(_, t)| t.len()).sum::<usize>());
    eprintln!("{checked} kernel/target pairs re-assemble byte-exactly");
}

#[test]
fn llvm_readelf_reads_our_notes() {
    let Some(readelf) = require(Tool::Readelf, "asm_reassemble notes") else {
        return;
    };
    let dir = tmp_dir();
    for (spec, targets) in kernels_and_targets() {
        let func = (spec.build)().unwrap();
        for t in targets {
            let k = compile(&func, t, &CompileOptions::default()).unwrap();
            let path = dir.join(format!("{}-{t}.hsaco", spec.name));
            std::fs::write(&path, &k.code_object).unwrap();
            let notes = run(&readelf, &["--notes", path.to_str().unwrap()], None)
                .unwrap_or_else(|e| panic!("{} for {t}: {e}", spec.name));
            for want in [
                format!(".name:           {}", spec.name),
                format!(".symbol:         {}.kd", spec.name),
                format!(".vgpr_count:     {}", k.header.vgprs),
                format!(".sgpr_count:     {}", k.header.sgprs),
                format!(".group_segment_fixed_size: {}", k.header.lds_bytes),
                format!("amdgcn-amd-amdhsa--{}", t.name()),
            ] {
                assert!(
                    notes.contains(&want),
                    "{} for {t}: `{want}` not in\n{notes}",
                    spec.name
                );
            }
        }
    }
}

//! Malformed, truncated and foreign files give a typed error from `CodeObject::parse`, never a
//! panic: every prefix of a valid object, thousands of random corruptions (proptest), and
//! targeted damage to each structure the reader trusts.

mod codeobj_support;

use codeobj_support::*;
use kjit_backend_gcn::codeobj::*;
use kjit_backend_gcn::target::Target;
use proptest::prelude::*;

fn ours() -> Vec<u8> {
    let code: Vec<u8> = [0xbf80_0000u32, 0xbf81_0000]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let mut b = CodeObjectBuilder::new(Target::Gfx942);
    let mut layout = KernargLayout::new();
    layout.global_buffer("out", false).by_value("n", 4, 4);
    let args = layout.finish_v5(&[ValueKind::HiddenBlockCountX, ValueKind::HiddenGroupSizeX]);
    b.add_kernel(KernelBuild::new("a", code.clone()).with_args(args));
    b.add_kernel(KernelBuild::new("b", code));
    b.build().unwrap()
}

/// Offset of the first occurrence of `needle`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).position(|w| w == needle).unwrap()
}

#[test]
fn every_truncation_is_an_error() {
    let full = ours();
    assert!(CodeObject::parse(&full).is_ok());
    for len in 0..full.len() {
        let r = CodeObject::parse(&full[..len]);
        assert!(r.is_err(), "prefix of {len} bytes parsed: {r:?}");
    }
    assert_eq!(CodeObject::parse(&[]), Err(CodeObjectError::NotElf));
}

#[test]
fn foreign_and_damaged_files_name_the_problem() {
    let full = ours();
    assert_eq!(
        CodeObject::parse(b"hello, world"),
        Err(CodeObjectError::NotElf)
    );
    let mut elf32 = full.clone();
    elf32[4] = 1; // ELFCLASS32
    assert_eq!(CodeObject::parse(&elf32), Err(CodeObjectError::NotElf64));
    // This test binary is a host ELF (x86-64 = 62, aarch64 = 183).
    let host = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    assert!(matches!(CodeObject::parse(&host), Err(CodeObjectError::WrongMachine(m)) if m != 224));
    let mut osabi = full.clone();
    osabi[7] = 0;
    assert_eq!(
        CodeObject::parse(&osabi),
        Err(CodeObjectError::WrongOsAbi(0))
    );
    let mut v3 = full.clone();
    v3[8] = 1;
    assert_eq!(
        CodeObject::parse(&v3),
        Err(CodeObjectError::UnsupportedVersion(1))
    );
    let mut rel = full.clone();
    rel[16] = 1; // ET_REL
    assert_eq!(
        CodeObject::parse(&rel),
        Err(CodeObjectError::NotLoadable(1))
    );
    let mut mach = full.clone();
    mach[48] = 0x36; // EF_AMDGPU_MACH_AMDGCN_GFX1030
    assert!(matches!(
        CodeObject::parse(&mach),
        Err(CodeObjectError::UnsupportedTarget { mach: 0x36, .. })
    ));
    // A reserved descriptor byte set.
    let kd_at = CodeObject::parse(&full).unwrap().kernels[0].descriptor_address as usize;
    let mut kd = full.clone();
    kd[kd_at + 30] = 7;
    let e = CodeObject::parse(&kd).unwrap_err();
    assert!(
        matches!(e, CodeObjectError::Descriptor { ref kernel, .. } if kernel == "a"),
        "{e}"
    );
    assert!(e.to_string().contains("reserved"), "{e}");
    // An entry offset pointing into the descriptors instead of .text.
    let mut entry = full.clone();
    entry[kd_at + 16..kd_at + 24].copy_from_slice(&64i64.to_le_bytes());
    assert!(matches!(
        CodeObject::parse(&entry),
        Err(CodeObjectError::EntryOutsideCode { .. })
    ));
    // Metadata that names a missing descriptor symbol.
    let mut sym = full.clone();
    while let Some(at) = sym.windows(5).position(|w| w == b"b.kd\0") {
        sym[at] = b'c'; // in .dynstr and .strtab
    }
    let e = CodeObject::parse(&sym).unwrap_err();
    assert!(
        matches!(e, CodeObjectError::MissingDescriptor { .. }),
        "{e}"
    );
    // Metadata with a key of the wrong type: `.vgpr_count` holds a string.
    let mut md = full.clone();
    let at = find(&md, b".vgpr_count") + b".vgpr_count".len();
    md[at] = 0xa0; // fixstr of length 0 instead of an integer
    let e = CodeObject::parse(&md).unwrap_err();
    assert!(e.to_string().contains(".vgpr_count"), "{e}");
    // Metadata cut short inside the note (descsz larger than the msgpack).
    let mut note = full.clone();
    let at = find(&note, b"AMDGPU\0\0") - 8; // descsz field
    let descsz = u32::from_le_bytes(note[at..at + 4].try_into().unwrap());
    note[at..at + 4].copy_from_slice(&(descsz - 40).to_le_bytes());
    assert!(CodeObject::parse(&note).is_err());
}

/// Metadata whose arguments overlap or run past `.kernarg_segment_size` is refused by the
/// reader (a runtime would write one argument over another, or past the segment), naming the
/// kernel, the argument and the bytes.
#[test]
fn arguments_that_overlap_or_leave_the_segment_are_errors() {
    let full = ours();
    let k = &CodeObject::parse(&full).unwrap().kernels[0];
    // out@0, n@8, hidden_block_count_x@16, hidden_group_size_x@28 (LLVM's layout), 272 bytes.
    assert_eq!(k.meta.args[2].offset, 16);
    assert_eq!(k.meta.kernarg_segment_size, 272);
    // The block count moved onto `n` (the third `.offset` holds fixint 16; 8 overlaps).
    let mut over = full.clone();
    let at = over
        .windows(8)
        .enumerate()
        .filter(|(_, w)| *w == b"\xa7.offset")
        .nth(2)
        .unwrap()
        .0
        + 8;
    assert_eq!(over[at], 16);
    over[at] = 8;
    let e = CodeObject::parse(&over).unwrap_err();
    assert!(
        matches!(e, CodeObjectError::BadArgument { ref kernel, index: 2, offset: 8, .. } if kernel == "a"),
        "{e}"
    );
    assert!(e.to_string().contains("hidden_block_count_x"), "{e}");
    assert!(e.to_string().contains("overlaps"), "{e}");
    // The segment cut to 24 bytes: the group size (28..30) lies past it.
    let mut short = full.clone();
    let at = find(&short, b".kernarg_segment_size") + b".kernarg_segment_size".len();
    assert_eq!(short[at..at + 3], [0xcd, 0x01, 0x10]); // uint16 272
    short[at..at + 3].copy_from_slice(&[0xcd, 0x00, 24]);
    let e = CodeObject::parse(&short).unwrap_err();
    assert!(
        matches!(
            e,
            CodeObjectError::BadArgument {
                index: 3,
                segment: 24,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("past the kernarg segment"), "{e}");
}

#[test]
fn clang_object_truncations_are_errors() {
    let Some((clang, lld)) = tools("clang_object_truncations_are_errors") else {
        return;
    };
    let path = compile_cl(
        &clang,
        &lld,
        "__kernel void k(__global int *a, int n) { a[__builtin_amdgcn_workitem_id_x()] = n; }",
        Target::Gfx90a,
        "trunc",
    );
    let full = std::fs::read(&path).unwrap();
    assert!(CodeObject::parse(&full).is_ok());
    for len in (0..full.len()).step_by(3) {
        assert!(
            CodeObject::parse(&full[..len]).is_err(),
            "clang prefix {len}"
        );
    }
    // The relocatable object next to it is refused with advice to link it.
    let obj = std::fs::read(path.with_extension("o")).unwrap();
    let e = CodeObject::parse(&obj).unwrap_err();
    assert_eq!(e, CodeObjectError::NotLoadable(1));
    assert!(e.to_string().contains("ld.lld -shared"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Random byte damage anywhere never panics; when it still parses, the kernels it reports
    /// have code inside the file.
    #[test]
    fn corrupted_objects_never_panic(flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut bytes = ours();
        let len = bytes.len();
        for (pos, val) in flips {
            bytes[pos % len] = val;
        }
        if let Ok(co) = CodeObject::parse(&bytes) {
            for k in &co.kernels {
                prop_assert!(k.code.len() <= len);
            }
        }
    }

    /// Arbitrary bytes behind a valid-looking ELF header never panic either.
    #[test]
    fn random_bodies_never_panic(body in prop::collection::vec(any::<u8>(), 0..2048)) {
        let mut bytes = ours()[..64].to_vec();
        bytes.extend_from_slice(&body);
        let _ = CodeObject::parse(&bytes);
    }
}

//! The writer's objects against LLVM 19: `llvm-readelf-19` reads them without a warning and shows
//! the header, segments, symbols and metadata we wrote; `llvm-objdump-19 -d` disassembles our
//! `.text` to the instructions `llvm-mc-19` assembled; our reader gives back what we wrote.

mod codeobj_support;

use std::process::Command;

use codeobj_support::*;
use kjit_backend_gcn::codeobj::*;
use kjit_backend_gcn::llvm_oracle::{require, run, Tool};
use kjit_backend_gcn::target::{Target, ALL_TARGETS};

/// A small real kernel: load the output pointer, store 1.0 at out[tid].
const KERNEL_ASM: &str = "s_load_dwordx2 s[2:3], s[0:1], 0x0
v_mov_b32 v1, 1.0
v_lshlrev_b32 v0, 2, v0
s_waitcnt lgkmcnt(0)
global_store_dword v0, v1, s[2:3]
s_endpgm
";

/// Assembles `asm` with `llvm-mc-19 -show-encoding`; returns (instruction text, bytes).
fn mc_encode(mc: &std::path::Path, target: Target, asm: &str) -> (Vec<String>, Vec<u8>) {
    let mcpu = format!("-mcpu={}", target.name());
    let out = run(
        mc,
        &["-arch=amdgcn", &mcpu, "-show-encoding"],
        Some(asm.as_bytes()),
    )
    .unwrap();
    let mut text = Vec::new();
    let mut bytes = Vec::new();
    for line in out.lines() {
        let Some((inst, enc)) = line.split_once("; encoding: [") else {
            continue;
        };
        text.push(inst.split_whitespace().collect::<Vec<_>>().join(" "));
        for b in enc.trim_end_matches(']').split(',') {
            bytes.push(u8::from_str_radix(b.trim().trim_start_matches("0x"), 16).unwrap());
        }
    }
    (text, bytes)
}

/// Two kernels with a realistic argument list (pointers, scalar, dynamic LDS, hidden args).
fn sample(target: Target, code: &[u8]) -> CodeObjectBuilder {
    let mut b = CodeObjectBuilder::new(target);
    let mut layout = KernargLayout::new();
    layout
        .global_buffer("out", false)
        .global_buffer("in", true)
        .by_value("alpha", 4, 4);
    layout.dynamic_shared_pointer("scratch", 16);
    let args = layout.finish_v5(&[
        ValueKind::HiddenBlockCountX,
        ValueKind::HiddenBlockCountY,
        ValueKind::HiddenBlockCountZ,
        ValueKind::HiddenGroupSizeX,
        ValueKind::HiddenGroupSizeY,
        ValueKind::HiddenGroupSizeZ,
        ValueKind::HiddenRemainderX,
        ValueKind::HiddenGridDims,
        ValueKind::HiddenDynamicLdsSize,
    ]);
    let mut k = KernelBuild::new("store_one", code.to_vec()).with_args(args);
    k.descriptor.vgprs = 2;
    k.descriptor.sgprs = 4;
    b.add_kernel(k);
    let mut k2 = KernelBuild::new("second", code.to_vec());
    k2.descriptor.vgprs = 40;
    k2.descriptor.agprs = if target.has_agprs() { 16 } else { 0 };
    k2.descriptor.sgprs = 30;
    k2.descriptor.group_segment_fixed_size = 4096;
    k2.descriptor.workitem_id_dims = 2;
    k2.descriptor.workgroup_id = [true, true, true];
    k2.max_flat_workgroup_size = 1024;
    k2.reqd_workgroup_size = Some([16, 16, 4]);
    b.add_kernel(k2);
    b
}

/// Runs a tool and returns (stdout, stderr), failing on a non-zero exit.
fn run_both(tool: &std::path::Path, args: &[&str]) -> (String, String) {
    let out = Command::new(tool).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        tool.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write_tmp(bytes: &[u8], tag: &str) -> std::path::PathBuf {
    let p = scratch_dir(tag).join("ours.hsaco");
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn llvm_readelf_reads_our_objects_without_warnings() {
    let test = "llvm_readelf_reads_our_objects_without_warnings";
    let (Some(readelf), Some(mc)) = (require(Tool::Readelf, test), require(Tool::Mc, test)) else {
        return;
    };
    let mut configs: Vec<(Target, FeatureSetting, FeatureSetting, &str)> = ALL_TARGETS
        .iter()
        .map(|&t| (t, FeatureSetting::Any, TargetId::new(t).sramecc, ""))
        .collect();
    configs.push((
        Target::Gfx942,
        FeatureSetting::Off,
        FeatureSetting::On,
        ":sramecc+:xnack-",
    ));
    configs.push((
        Target::Gfx90a,
        FeatureSetting::On,
        FeatureSetting::Off,
        ":sramecc-:xnack+",
    ));
    for (target, xnack, sramecc, suffix) in configs {
        let (_, code) = mc_encode(&mc, target, KERNEL_ASM);
        let builder = sample(target, &code).xnack(xnack).sramecc(sramecc);
        let bytes = builder.build().unwrap();
        let path = write_tmp(&bytes, target.name());
        let (out, err) = run_both(
            &readelf,
            &[
                "-h",
                "-l",
                "--dyn-syms",
                "--notes",
                "-W",
                path.to_str().unwrap(),
            ],
        );
        assert!(err.is_empty(), "{target}: llvm-readelf warned:\n{err}");
        assert!(!out.to_lowercase().contains("warning"), "{out}");
        // Header.
        let flags = format!("{:#X}", builder.target_id().e_flags()).replace("0X", "0x");
        assert!(
            out.contains(&format!(
                "Flags:                             {flags}, {}",
                target.name()
            )),
            "{out}"
        );
        assert!(
            out.contains("OS/ABI:                            AMDGPU - HSA"),
            "{out}"
        );
        assert!(
            out.contains("ABI Version:                       3"),
            "{out}"
        );
        assert!(
            out.contains("Type:                              DYN"),
            "{out}"
        );
        assert!(
            out.contains("Machine:                           EM_AMDGPU"),
            "{out}"
        );
        for seg in ["PHDR", "LOAD", "DYNAMIC", "NOTE"] {
            assert!(
                out.lines().any(|l| l.trim_start().starts_with(seg)),
                "no {seg} segment:\n{out}"
            );
        }
        assert_eq!(
            out.lines()
                .filter(|l| l.trim_start().starts_with("LOAD"))
                .count(),
            3
        );
        // Symbols.
        for name in ["store_one", "second"] {
            assert!(
                out.lines().any(|l| l.contains(" FUNC ")
                    && l.contains("GLOBAL PROTECTED")
                    && l.ends_with(&format!(" {name}"))),
                "no FUNC {name}:\n{out}"
            );
            assert!(
                out.lines()
                    .any(|l| l.contains("    64 OBJECT  GLOBAL PROTECTED")
                        && l.ends_with(&format!(" {name}.kd"))),
                "no OBJECT {name}.kd:\n{out}"
            );
        }
        // Metadata.
        let (kernels, top) = parse_readelf_notes(&out);
        let target_line = top
            .iter()
            .find(|(k, _)| k == "amdhsa.target")
            .map(|(_, v)| v.as_str());
        assert_eq!(
            target_line,
            Some(format!("amdgcn-amd-amdhsa--{}{suffix}", target.name()).as_str())
        );
        assert!(out.contains("amdhsa.version:\n  - 1\n  - 2"), "{out}");
        let meta = builder.metadata();
        assert_eq!(kernels.len(), 2);
        for (rk, mk) in kernels.iter().zip(&meta.kernels) {
            assert_eq!(rk.name, mk.name);
            assert_eq!(rk.key(".symbol"), Some(mk.symbol.as_str()));
            assert_eq!(
                rk.key(".kernarg_segment_size"),
                Some(mk.kernarg_segment_size.to_string().as_str())
            );
            assert_eq!(
                rk.key(".vgpr_count"),
                Some(mk.vgpr_count.to_string().as_str())
            );
            assert_eq!(
                rk.key(".sgpr_count"),
                Some(mk.sgpr_count.to_string().as_str())
            );
            assert_eq!(
                rk.key(".agpr_count"),
                Some(mk.agpr_count.to_string().as_str())
            );
            assert_eq!(rk.key(".wavefront_size"), Some("64"));
            assert_eq!(
                rk.key(".max_flat_workgroup_size"),
                Some(mk.max_flat_workgroup_size.to_string().as_str())
            );
            assert_eq!(rk.args.len(), mk.args.len());
            for (ra, a) in rk.args.iter().zip(&mk.args) {
                assert_eq!(arg_key(ra, ".offset"), Some(a.offset.to_string().as_str()));
                assert_eq!(arg_key(ra, ".size"), Some(a.size.to_string().as_str()));
                assert_eq!(arg_key(ra, ".value_kind"), Some(a.value_kind.as_str()));
                assert_eq!(arg_key(ra, ".name"), a.name.as_deref());
            }
        }
        let k0 = &kernels[0];
        // out@0, in@8, alpha@16, scratch@20, hidden from 24 with dynamic LDS size at 24+120.
        let offs: Vec<&str> = k0
            .args
            .iter()
            .map(|a| arg_key(a, ".offset").unwrap())
            .collect();
        assert_eq!(
            offs,
            ["0", "8", "16", "20", "24", "28", "32", "36", "38", "40", "42", "88", "144"]
        );
        assert_eq!(k0.key(".kernarg_segment_size"), Some("280"));
    }
}

#[test]
fn llvm_objdump_disassembles_our_text() {
    let test = "llvm_objdump_disassembles_our_text";
    let (Some(objdump), Some(mc)) = (require(Tool::Objdump, test), require(Tool::Mc, test)) else {
        return;
    };
    for target in ALL_TARGETS {
        let (text, code) = mc_encode(&mc, target, KERNEL_ASM);
        let bytes = sample(target, &code).build().unwrap();
        let co = CodeObject::parse(&bytes).unwrap();
        let path = write_tmp(&bytes, "objdump");
        let mcpu = format!("--mcpu={}", target.name());
        let (out, err) = run_both(&objdump, &["-d", &mcpu, path.to_str().unwrap()]);
        assert!(err.is_empty(), "llvm-objdump warned: {err}");
        for k in &co.kernels {
            let header = format!("{:016x} <{}>:", k.code_address, k.name);
            let start = out
                .find(&header)
                .unwrap_or_else(|| panic!("no {header} in\n{out}"));
            let insts: Vec<String> = out[start + header.len()..]
                .lines()
                .skip(1)
                .take(text.len())
                .map(|l| {
                    l.split("//")
                        .next()
                        .unwrap()
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            assert_eq!(insts, text, "{target} {}", k.name);
        }
    }
}

#[test]
fn reader_round_trips_the_writer() {
    let code: Vec<u8> = [0xbf80_0000u32, 0xbf81_0000]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    for target in ALL_TARGETS {
        let builder = sample(target, &code);
        let bytes = builder.build().unwrap();
        let co = CodeObject::parse(&bytes).unwrap();
        assert_eq!(co.target, target);
        assert_eq!(co.version, 5);
        assert_eq!(co.e_flags, builder.target_id().e_flags());
        assert_eq!(co.target_id(), builder.target_id());
        assert_eq!(co.metadata.as_ref().unwrap(), &builder.metadata());
        assert_eq!(co.kernels.len(), 2);
        for (k, mk) in co.kernels.iter().zip(&builder.metadata().kernels) {
            assert_eq!(&k.meta, mk);
            assert_eq!(k.code[..code.len()], code[..]);
            assert_eq!(k.code_address % 256, 0);
            assert_eq!(k.descriptor_address % 64, 0);
            assert_eq!(
                k.descriptor_address as i64 + k.descriptor.kernel_code_entry_byte_offset,
                k.code_address as i64
            );
        }
        let second = co.kernel("second").unwrap();
        let p = &sample(target, &code).metadata().kernels[1];
        assert_eq!(second.descriptor.group_segment_fixed_size, 4096);
        assert_eq!(second.descriptor.enable_vgpr_workitem_id(), 2);
        assert!(second.descriptor.enable_sgpr_workgroup_id_z());
        assert!(second.descriptor.registers_allocated(target) >= p.vgpr_count + p.agpr_count);
        if target.has_agprs() {
            assert_eq!(second.descriptor.accum_offset(target), Some(40));
            assert_eq!(second.descriptor.agprs(target), 16);
        }
    }
}

#[test]
fn writer_rejects_bad_kernels() {
    let ok = vec![0, 0, 0x81, 0xbf];
    let build = |ks: Vec<KernelBuild>, t: Target| {
        let mut b = CodeObjectBuilder::new(t);
        for k in ks {
            b.add_kernel(k);
        }
        b.build()
    };
    assert_eq!(build(vec![], Target::Gfx942), Err(WriteError::NoKernels));
    let dup = vec![
        KernelBuild::new("k", ok.clone()),
        KernelBuild::new("k", ok.clone()),
    ];
    assert_eq!(
        build(dup, Target::Gfx942),
        Err(WriteError::DuplicateName("k".into()))
    );
    assert!(matches!(
        build(
            vec![KernelBuild::new("k", vec![0, 0, 0x81])],
            Target::Gfx942
        ),
        Err(WriteError::BadCodeLength { len: 3, .. })
    ));
    assert!(matches!(
        build(vec![KernelBuild::new("a.kd", ok.clone())], Target::Gfx942),
        Err(WriteError::BadName(_))
    ));
    let mut overlap = KernelBuild::new("k", ok.clone());
    overlap.args = vec![
        ArgMeta::new(0, 8, ValueKind::GlobalBuffer),
        ArgMeta::new(4, 4, ValueKind::ByValue),
    ];
    overlap.descriptor.kernarg_size = 8;
    assert!(matches!(
        build(vec![overlap], Target::Gfx942),
        Err(WriteError::BadArgument { index: 1, .. })
    ));
    let mut past = KernelBuild::new("k", ok.clone());
    past.args = vec![ArgMeta::new(0, 8, ValueKind::GlobalBuffer)];
    assert!(matches!(
        build(vec![past], Target::Gfx942),
        Err(WriteError::BadArgument { index: 0, .. })
    ));
    let mut vg = KernelBuild::new("k", ok.clone());
    vg.descriptor.vgprs = 300;
    assert!(matches!(
        build(vec![vg], Target::Gfx900),
        Err(WriteError::Descriptor { .. })
    ));
    let mut b = CodeObjectBuilder::new(Target::Gfx900).sramecc(FeatureSetting::On);
    b.add_kernel(KernelBuild::new("k", ok));
    assert!(matches!(
        b.build(),
        Err(WriteError::UnsupportedFeature {
            feature: "sramecc",
            ..
        })
    ));
}

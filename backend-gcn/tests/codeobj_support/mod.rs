//! Shared helpers for the code object tests: compiling with clang-19/ld.lld-19 and reading
//! `llvm-readelf-19 --notes` output.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use kjit_backend_gcn::llvm_oracle::{
    assemble_code_object, compile_opencl, require_all, run, OpenClBuild, Tool,
};
use kjit_backend_gcn::Target;

/// A fresh scratch directory for one compilation.
pub fn scratch_dir(tag: &str) -> PathBuf {
    kjit_backend_gcn::llvm_oracle::scratch_dir(&format!("codeobj-{tag}"))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The clang and lld paths, or `None` when the test must skip.
pub fn tools(test: &str) -> Option<(PathBuf, PathBuf)> {
    let t = require_all(&[Tool::Clang, Tool::Lld], test)?;
    Some((t[0].clone(), t[1].clone()))
}

/// Compiles OpenCL C for `target` and links a loadable code object; returns its path.
pub fn compile_cl(clang: &Path, lld: &Path, src: &str, target: Target, tag: &str) -> PathBuf {
    compile_cl_with(clang, lld, src, target, tag, &[])
}

/// As [`compile_cl`], with extra clang flags (e.g. `-mcode-object-version=4`).
pub fn compile_cl_with(
    clang: &Path,
    lld: &Path,
    src: &str,
    target: Target,
    tag: &str,
    extra: &[&str],
) -> PathBuf {
    let dir = scratch_dir(tag);
    let cl = dir.join("k.cl");
    std::fs::write(&cl, src).unwrap();
    let build = OpenClBuild {
        extra_args: extra,
        out_dir: Some(dir),
    };
    compile_opencl(clang, lld, &cl, target.name(), &build).unwrap_or_else(|e| panic!("{e}"))
}

/// Assembles AMDGPU assembly for `target` (`mcpu` may carry features, e.g. `gfx942:xnack-`) and
/// links it; returns the loadable object's path.
pub fn assemble(clang: &Path, lld: &Path, src: &str, mcpu: &str, tag: &str) -> PathBuf {
    let dir = scratch_dir(tag);
    let s = dir.join("k.s");
    std::fs::write(&s, src).unwrap();
    let build = OpenClBuild {
        extra_args: &[],
        out_dir: Some(dir),
    };
    assemble_code_object(clang, lld, &s, mcpu, &build).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// One kernel as `llvm-readelf-19 --notes` prints it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReadelfKernel {
    /// `.name`.
    pub name: String,
    /// Kernel-level scalar keys (`.kernarg_segment_size` → "280").
    pub keys: Vec<(String, String)>,
    /// Per argument: its keys.
    pub args: Vec<Vec<(String, String)>>,
}

impl ReadelfKernel {
    /// A kernel-level key's value.
    pub fn key(&self, k: &str) -> Option<&str> {
        self.keys
            .iter()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_str())
    }
}

/// Value of `key` in an argument's key list.
pub fn arg_key<'a>(arg: &'a [(String, String)], key: &str) -> Option<&'a str> {
    arg.iter().find(|(a, _)| a == key).map(|(_, v)| v.as_str())
}

/// Parses the YAML that `llvm-readelf --notes` prints for NT_AMDGPU_METADATA: kernels at indent 2
/// (`  - `), their keys at indent 4, arguments at indent 6 (`      - `) with keys at indent 8.
pub fn parse_readelf_notes(text: &str) -> (Vec<ReadelfKernel>, Vec<(String, String)>) {
    let mut kernels: Vec<ReadelfKernel> = Vec::new();
    let mut top: Vec<(String, String)> = Vec::new();
    let mut in_kernels = false;
    let mut in_args = false;
    for line in text.lines() {
        let indent = line.len() - line.trim_start_matches([' ', '-']).len();
        let body = line.trim_start_matches([' ', '-']);
        let dash = line.trim_start().starts_with("- ");
        let (key, value) = match body.split_once(':') {
            Some((k, v)) => (
                k.trim().to_string(),
                v.trim().trim_matches('\'').to_string(),
            ),
            None => continue,
        };
        if line.starts_with("amdhsa.") {
            in_kernels = key == "amdhsa.kernels";
            top.push((key, value));
            continue;
        }
        if !in_kernels {
            continue;
        }
        if dash && indent == 4 {
            kernels.push(ReadelfKernel::default());
            in_args = false;
        }
        let Some(k) = kernels.last_mut() else {
            continue;
        };
        if indent == 4 {
            in_args = key == ".args";
            if key == ".name" {
                k.name = value.clone();
            }
            k.keys.push((key, value));
        } else if in_args && indent == 8 {
            if dash {
                k.args.push(Vec::new());
            }
            if let Some(a) = k.args.last_mut() {
                a.push((key, value));
            }
        }
    }
    (kernels, top)
}

/// Checks a parsed object against `llvm-readelf-19 --notes --dyn-syms` of the same file: every
/// kernel's sizes, counts and argument records, its entry and descriptor addresses, and that its
/// code holds the whole `FUNC` symbol ending in `s_endpgm`. Returns the argument records checked.
pub fn check_against_readelf(
    readelf: &Path,
    path: &Path,
    co: &kjit_backend_gcn::codeobj::CodeObject,
) -> usize {
    let notes = run(readelf, &["--notes", path.to_str().unwrap()], None).unwrap();
    let (rk, top) = parse_readelf_notes(&notes);
    let target_str = top
        .iter()
        .find(|(k, _)| k == "amdhsa.target")
        .map(|(_, v)| v.clone());
    assert_eq!(co.metadata.as_ref().unwrap().target, target_str);
    assert_eq!(rk.len(), co.kernels.len());
    let syms = run(readelf, &["--dyn-syms", "-W", path.to_str().unwrap()], None).unwrap();
    let mut checked = 0;
    for k in &co.kernels {
        let r = rk
            .iter()
            .find(|r| r.name == k.name)
            .unwrap_or_else(|| panic!("{} not in readelf", k.name));
        for (key, ours) in [
            (".kernarg_segment_size", k.meta.kernarg_segment_size),
            (".kernarg_segment_align", k.meta.kernarg_segment_align),
            (".group_segment_fixed_size", k.meta.group_segment_fixed_size),
            (
                ".private_segment_fixed_size",
                k.meta.private_segment_fixed_size,
            ),
            (".sgpr_count", k.meta.sgpr_count),
            (".vgpr_count", k.meta.vgpr_count),
            (".wavefront_size", k.meta.wavefront_size),
            (".max_flat_workgroup_size", k.meta.max_flat_workgroup_size),
        ] {
            assert_eq!(
                r.key(key),
                Some(ours.to_string().as_str()),
                "{} {key}",
                k.name
            );
        }
        assert_eq!(r.args.len(), k.meta.args.len(), "{}", k.name);
        for (a, ra) in k.meta.args.iter().zip(&r.args) {
            assert_eq!(arg_key(ra, ".offset"), Some(a.offset.to_string().as_str()));
            assert_eq!(arg_key(ra, ".size"), Some(a.size.to_string().as_str()));
            assert_eq!(arg_key(ra, ".value_kind"), Some(a.value_kind.as_str()));
            assert_eq!(
                arg_key(ra, ".address_space"),
                a.address_space.as_ref().map(|s| s.as_str())
            );
            assert_eq!(arg_key(ra, ".is_const") == Some("true"), a.is_const);
            checked += 1;
        }
        assert_eq!(
            k.descriptor.kernarg_size, k.meta.kernarg_segment_size,
            "{}",
            k.name
        );
        assert_eq!(
            k.descriptor.group_segment_fixed_size,
            k.meta.group_segment_fixed_size
        );
        let func = syms
            .lines()
            .find(|l| l.contains(" FUNC ") && l.split_whitespace().last() == Some(k.name.as_str()))
            .unwrap_or_else(|| panic!("no FUNC {}", k.name));
        let addr = u64::from_str_radix(func.split_whitespace().nth(1).unwrap(), 16).unwrap();
        assert_eq!(k.code_address, addr, "{}", k.name);
        let kd = syms
            .lines()
            .find(|l| l.split_whitespace().last() == Some(format!("{}.kd", k.name).as_str()))
            .unwrap();
        assert_eq!(
            k.descriptor_address,
            u64::from_str_radix(kd.split_whitespace().nth(1).unwrap(), 16).unwrap()
        );
        let size: usize = func.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!(
            k.code.len() >= size,
            "{} code {} < symbol size {size}",
            k.name,
            k.code.len()
        );
        assert_eq!(
            &k.code[size - 4..size],
            &0xbf81_0000u32.to_le_bytes(),
            "{}",
            k.name
        );
    }
    checked
}

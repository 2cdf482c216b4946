//! `kjit disasm` on clang-19 code objects for gfx942, gfx90a and gfx900: the summary states the
//! register counts, sizes and argument offsets `llvm-readelf-19 --notes` shows, and the listing
//! covers each kernel with the same addresses and encoding words as `llvm-objdump-19 -d`.

use std::path::{Path, PathBuf};

#[path = "../backend-gcn/tests/codeobj_support/mod.rs"]
mod codeobj_support;
mod common;

use codeobj_support::{arg_key, parse_readelf_notes};
use common::kjit;
use kjit::backend_gcn::llvm_oracle::{
    compile_opencl, require_all, run, scratch_file, OpenClBuild, Tool,
};
use kjit::backend_gcn::target::ALL_TARGETS;

const SRC: &str = r#"
__kernel void axpy(__global float *y, __global const float *x, float a, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
  if (i < n) y[i] = a * x[i] + y[i];
}
__kernel void reduce(__global int *out, __global const int *in) {
  __local int tile[128];
  int t = __builtin_amdgcn_workitem_id_x();
  tile[t] = in[t];
  __builtin_amdgcn_s_barrier();
  for (int s = 64; s > 0; s >>= 1) {
    if (t < s) tile[t] += tile[t + s];
    __builtin_amdgcn_s_barrier();
  }
  if (t == 0) out[__builtin_amdgcn_workgroup_id_x()] = tile[0];
}
"#;

fn compile(clang: &Path, lld: &Path, target: &str) -> PathBuf {
    compile_src(clang, lld, target, SRC, "basic")
}

fn compile_src(clang: &Path, lld: &Path, target: &str, src: &str, tag: &str) -> PathBuf {
    let cl = scratch_file(&format!("{tag}.cl"), src).unwrap_or_else(|e| panic!("{e}"));
    compile_opencl(clang, lld, &cl, target, &OpenClBuild::default())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// (address, words) of every line of one symbol in `llvm-objdump -d` or `kjit disasm` output.
fn encodings(listing: &str, symbol: &str) -> Vec<(u64, Vec<String>)> {
    let header = format!("<{symbol}>:");
    let start = listing
        .find(&header)
        .unwrap_or_else(|| panic!("no {header}"));
    listing[start + header.len()..]
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let (_, enc) = l.split_once("// ")?;
            let (addr, words) = enc.split_once(": ")?;
            Some((
                u64::from_str_radix(addr.trim(), 16).ok()?,
                words
                    .split_whitespace()
                    .filter(|w| w.len() == 8 && w.chars().all(|c| c.is_ascii_hexdigit()))
                    .map(str::to_string)
                    .collect(),
            ))
        })
        .collect()
}

#[test]
fn disasm_summary_and_listing_match_llvm() {
    let tools = require_all(
        &[Tool::Clang, Tool::Lld, Tool::Objdump, Tool::Readelf],
        "disasm_summary_and_listing_match_llvm",
    );
    let Some(tools) = tools else { return };
    let (clang, lld, objdump, readelf) = (&tools[0], &tools[1], &tools[2], &tools[3]);
    for target in ALL_TARGETS {
        let so = compile(clang, lld, target.name());
        let path = so.to_str().unwrap();
        let (ok, out, err) = kjit(&["disasm", path]);
        assert!(ok && err.is_empty(), "{err}");
        assert!(
            out.contains(&format!("code object v5, {}", target.name())),
            "{out}"
        );
        let notes = run(readelf, &["--notes", path], None).unwrap();
        // Register counts and sizes from the metadata appear in each kernel's summary.
        let (kernels, _) = parse_readelf_notes(&notes);
        assert_eq!(kernels.len(), 2);
        for k in &kernels {
            let start = out.find(&format!("kernel {}:", k.name)).unwrap();
            let section = &out[start..];
            let section = &section[..section[1..]
                .find("\nkernel ")
                .map(|i| i + 1)
                .unwrap_or(section.len())];
            let key = |name: &str| k.key(name).unwrap().to_string();
            for expect in [
                format!("VGPRs {} used", key(".vgpr_count")),
                format!("SGPRs {} used", key(".sgpr_count")),
                format!("LDS {} B static", key(".group_segment_fixed_size")),
                format!(
                    "kernarg {} B (align {})",
                    key(".kernarg_segment_size"),
                    key(".kernarg_segment_align")
                ),
                format!("max {} work-items", key(".max_flat_workgroup_size")),
            ] {
                assert!(
                    section.contains(&expect),
                    "{target} {}: no '{expect}' in\n{section}",
                    k.name
                );
            }
            for a in &k.args {
                let line = format!(
                    "{:>4} +{:<3} {}",
                    arg_key(a, ".offset").unwrap(),
                    arg_key(a, ".size").unwrap(),
                    arg_key(a, ".value_kind").unwrap()
                );
                assert!(
                    section.contains(&line),
                    "{target} {}: no arg line '{line}'",
                    k.name
                );
            }
            assert!(
                section.contains(&format!("waves/SIMD on {target}")),
                "{section}"
            );
        }
        assert!(
            out.contains("LDS 512 B static"),
            "reduce uses 128 ints of LDS:\n{out}"
        );
        // The listing's addresses and words are objdump's, kernel by kernel (and with the
        // instruction layer, so is every line: see `disasm_text_equals_llvm_objdump`).
        let mcpu = format!("--mcpu={}", target.name());
        let dump = run(objdump, &["-d", &mcpu, path], None).unwrap();
        for kernel in ["axpy", "reduce"] {
            let ours = encodings(&out, kernel);
            let theirs = encodings(&dump, kernel);
            assert!(!theirs.is_empty());
            let flat = |v: &[(u64, Vec<String>)]| {
                v.iter().flat_map(|(_, w)| w.clone()).collect::<Vec<_>>()
            };
            let n = flat(&theirs).len();
            assert_eq!(
                flat(&ours)[..n.min(flat(&ours).len())],
                flat(&theirs)[..],
                "{target} {kernel}"
            );
            assert_eq!(ours[0].0, theirs[0].0);
        }
    }
}

#[test]
fn disasm_rejects_bad_files_in_one_line() {
    let dir = std::env::temp_dir().join(format!("kjit-cli-disasm-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.hsaco");
    std::fs::write(&bad, b"\x7fELF\x02\x01\x01\x40garbage").unwrap();
    let (ok, _, err) = kjit(&["disasm", bad.to_str().unwrap()]);
    assert!(!ok);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("bad.hsaco: malformed ELF"), "{err}");
}

/// Kernels that make clang emit a broad mix: f64/f16 math, conversions, integer division,
/// atomics, LDS with barriers, cross-lane ops, loops and (on gfx90a/gfx942) MFMA.
const MIX: &str = r#"
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel void f64ops(__global double *a, __global const double *b, double s) {
  int i = __builtin_amdgcn_workitem_id_x();
  double x = b[i];
  a[i] = fma(x, s, a[i]) / (x + 1.0) + sqrt(fabs(x)) + (double)(int)x;
}
__kernel void f16ops(__global half *a, __global const half *b, __global float *c) {
  int i = __builtin_amdgcn_workitem_id_x();
  half x = b[i];
  a[i] = x * x + (half)2.0;
  c[i] = (float)x * 0.5f + (float)(a[i] > x);
}
__kernel void intdiv(__global int *a, __global uint *b, int d, uint e) {
  int i = __builtin_amdgcn_workitem_id_x();
  a[i] = a[i] / d + a[i] % 7;
  b[i] = (b[i] / e) ^ (b[i] >> 3) ^ __builtin_clz(b[i]) ^ __builtin_popcount(b[i]);
}
__kernel void atomics(__global int *c, __global uint *m, __global float *f) {
  int i = __builtin_amdgcn_workitem_id_x();
  __atomic_fetch_add(c, i, __ATOMIC_RELAXED);
  __atomic_fetch_max(m, (uint)i, __ATOMIC_RELAXED);
  int old = __atomic_exchange_n(c + 1, i, __ATOMIC_RELAXED);
  f[i] = (float)old;
}
__kernel void lds_scan(__global int *a) {
  __local int t[256];
  int i = __builtin_amdgcn_workitem_id_x();
  t[i] = a[i];
  for (int s = 1; s < 256; s <<= 1) {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
    int v = i >= s ? t[i - s] : 0;
    __builtin_amdgcn_s_barrier();
    t[i] += v;
  }
  a[i] = t[i];
}
__kernel void crosslane(__global int *a) {
  int i = __builtin_amdgcn_workitem_id_x();
  int v = a[i];
  v += __builtin_amdgcn_ds_bpermute((i ^ 1) * 4, v);
  v += __builtin_amdgcn_update_dpp(0, v, 0x111, 0xf, 0xf, false);
  v += __builtin_amdgcn_readfirstlane(v);
  a[i] = v;
}
__kernel void loops(__global float *a, int n) {
  int i = __builtin_amdgcn_workitem_id_x();
  float acc = 0.0f;
  for (int k = 0; k < n; k++) {
    float x = a[i + k * 64];
    if (x > acc) acc = x * 0.5f; else acc -= __builtin_amdgcn_exp2f(x);
  }
  a[i] = acc;
}
#if defined(__gfx90a__) || defined(__gfx942__)
typedef half half4 __attribute__((ext_vector_type(4)));
typedef float float16v __attribute__((ext_vector_type(16)));
__kernel void mfma(__global float16v *c, __global const half4 *a, __global const half4 *b) {
  int i = __builtin_amdgcn_workitem_id_x();
  c[i] = __builtin_amdgcn_mfma_f32_32x32x8f16(a[i], b[i], c[i], 0, 0, 0);
}
#endif
"#;

/// Instruction lines (tab-indented) with runs of spaces collapsed, grouped under their symbol.
fn instruction_lines(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter(|l| l.starts_with('\t') || (l.ends_with(">:") && l.contains(" <")))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn disasm_text_equals_llvm_objdump() {
    let tools = require_all(
        &[Tool::Clang, Tool::Lld, Tool::Objdump],
        "disasm_text_equals_llvm_objdump",
    );
    let Some(tools) = tools else { return };
    let (clang, lld, objdump) = (&tools[0], &tools[1], &tools[2]);
    let mut total = 0;
    for target in ALL_TARGETS {
        let so = compile_src(clang, lld, target.name(), MIX, "mix");
        let path = so.to_str().unwrap();
        let (ok, out, err) = kjit(&["disasm", path]);
        assert!(ok && err.is_empty(), "{err}");
        let mcpu = format!("--mcpu={}", target.name());
        let dump = run(objdump, &["-d", &mcpu, path], None).unwrap();
        let (ours, theirs) = (instruction_lines(&out), instruction_lines(&dump));
        assert!(theirs.len() > 200, "{target}: only {} lines", theirs.len());
        let diffs: Vec<String> = ours
            .iter()
            .zip(&theirs)
            .filter(|(a, b)| a != b)
            .map(|(a, b)| format!("  kjit: {a}\n  llvm: {b}"))
            .collect();
        assert!(
            diffs.is_empty(),
            "{target}: {} lines differ:\n{}",
            diffs.len(),
            diffs[..diffs.len().min(20)].join("\n")
        );
        assert_eq!(ours.len(), theirs.len(), "{target}");
        assert!(!out.contains(".long"), "{target}: undecoded words");
        total += theirs.len();
    }
    println!("{total} lines equal to llvm-objdump-19 -d");
}

#[test]
fn disasm_text_equals_llvm_objdump_on_triton_objects() {
    let Some(objdump) = kjit::backend_gcn::llvm_oracle::require(Tool::Objdump, "disasm_triton")
    else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("backend-gcn/tests/fixtures/triton");
    for (file, mcpu) in [
        ("triton-add-gfx942.hsaco", "gfx942"),
        ("triton-add-gfx90a.hsaco", "gfx90a"),
        ("triton-matmul-gfx942.hsaco", "gfx942"),
    ] {
        let path = dir.join(file);
        let path = path.to_str().unwrap();
        let (ok, out, err) = kjit(&["disasm", path]);
        assert!(ok && err.is_empty(), "{err}");
        let dump = run(&objdump, &["-d", &format!("--mcpu={mcpu}"), path], None).unwrap();
        let (ours, theirs) = (instruction_lines(&out), instruction_lines(&dump));
        assert!(theirs.len() > 100);
        assert_eq!(ours, theirs, "{file}");
    }
}

/// The label bug: a gfx942 kernel assembled by clang-19 from hand-written assembly whose branch
/// labels are plain names (`L_outer:`, local `STT_NOTYPE` symbols in `.text`) and whose kernel
/// symbol has size 0. `kjit disasm` must list all of its code — every instruction and label
/// line exactly as `llvm-objdump-19 -d` does (before the fix it stopped at the first label) —
/// and `kjit emu run` must run its two nested loops to the right result (before the fix it
/// faulted: the code ended at the first label).
#[test]
fn plain_labels_are_places_in_a_kernel_not_its_end() {
    let Some(tools) = require_all(
        &[Tool::Clang, Tool::Lld, Tool::Objdump],
        "plain_labels_are_places_in_a_kernel_not_its_end",
    ) else {
        return;
    };
    let (clang, lld, objdump) = (&tools[0], &tools[1], &tools[2]);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/asm/plain_labels.s");
    let so = kjit::backend_gcn::llvm_oracle::assemble_code_object(
        clang,
        lld,
        &src,
        "gfx942",
        &OpenClBuild::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let path = so.to_str().unwrap();

    let (ok, out, err) = kjit(&["disasm", path]);
    assert!(ok && err.is_empty(), "{err}");
    let dump = run(objdump, &["-d", "--mcpu=gfx942", path], None).unwrap();
    // From the first symbol header on: headers, blank lines and instruction lines, verbatim.
    let from_first_header = |s: &str| -> Vec<String> {
        s.lines()
            .skip_while(|l| !(l.ends_with(">:") && l.contains(" <")))
            .map(|l| l.trim_end().to_string())
            .collect()
    };
    let (ours, theirs) = (from_first_header(&out), from_first_header(&dump));
    assert!(
        theirs.iter().filter(|l| l.ends_with(">:")).count() == 4,
        "the kernel and its three labels: {theirs:#?}"
    );
    assert_eq!(
        ours, theirs,
        "kjit disasm:\n{out}\nllvm-objdump-19 -d:\n{dump}"
    );

    // out[gid] = sum over i < n of (gid + i + 3) = n*gid + n(n-1)/2 + 3n, for 2 x 64 work-items.
    let n = 5u32;
    let out_file =
        std::env::temp_dir().join(format!("kjit-plain-labels-{}.bin", std::process::id()));
    let out_arg = format!("0={}", out_file.display());
    let n_arg = format!("u32:{n}");
    let (ok, _, err) = kjit(&[
        "emu",
        "run",
        path,
        "--kernel",
        "plain_labels",
        "--grid",
        "2",
        "--block",
        "64",
        "--arg",
        "zeros:512",
        "--arg",
        &n_arg,
        "--out",
        &out_arg,
    ]);
    assert!(ok, "{err}");
    let bytes = std::fs::read(&out_file).unwrap();
    let _ = std::fs::remove_file(&out_file);
    let got: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let want: Vec<u32> = (0..128u32)
        .map(|g| n * g + n * (n - 1) / 2 + 3 * n)
        .collect();
    assert_eq!(got, want);
}

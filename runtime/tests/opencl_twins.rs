//! The "LLVM-compiled twin" leg of kjit's differential tests.
//!
//! Every kernel of kjit's library (`kernels/src`), but those `kjit_kernels::NO_OPENCL_TWIN`
//! lists, has an OpenCL C twin in `kernels/opencl/` with
//! the same argument ABI (a buffer is its address followed by its length in elements; scalars by
//! value). Here each twin is compiled by clang-19 -O3 + ld.lld-19 for gfx942, gfx90a and gfx900,
//! launched on kjit's software GCN device with the kernel's own `kjit_kernels::Case` (outputs
//! poisoned by the case), and its outputs are checked against the kernel's CPU reference with the
//! kernel's tolerance. A twin that disagrees with the reference points at the reference, the
//! twin or the device; once kjit compiles the kernels, the same cases run through kjit's code.
//!
//! `twin_headers` lists what clang made of each twin (registers from the metadata, LDS, scratch,
//! occupancy, and the instruction count from kjit's decoder, which must decode all of `.text`);
//! with `KJIT_UPDATE_DOCS=1` it rewrites `docs/twins.md` from that table.

use std::path::{Path, PathBuf};

use kjit_backend_gcn::codeobj::CodeObject;
use kjit_backend_gcn::llvm_oracle::{compile_opencl, require_all, OpenClBuild, Tool};
use kjit_ir::interp::{Arg, BufferData};
use kjit_kernels::{Case, KernelSpec};
use kjit_runtime::emu::{GcnEmulator, RunConfig, Schedule};
use kjit_runtime::{ArgValue, Device, DeviceBuffer, LaunchDims};

const TARGETS: &[&str] = &["gfx942", "gfx90a", "gfx900"];

fn twin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/opencl")
}

/// Compiles and links the twin of `kernel` for `target`; `None` (after a printed reason) when
/// the LLVM tools are absent and not required.
fn build_twin(kernel: &str, target: &str) -> Option<Vec<u8>> {
    let tools = require_all(&[Tool::Clang, Tool::Lld], "opencl twins")?;
    let src = twin_dir().join(format!("{kernel}.cl"));
    assert!(
        src.exists(),
        "kernel '{kernel}' has no OpenCL twin at {}",
        src.display()
    );
    let so = compile_opencl(&tools[0], &tools[1], &src, target, &OpenClBuild::default())
        .unwrap_or_else(|e| panic!("{e}"));
    Some(std::fs::read(&so).unwrap())
}

/// The device arguments of a case under kjit's ABI: a buffer becomes its address and its length
/// in elements, a bool a u32 0/1, other scalars themselves. Also returns the buffers by argument
/// index so outputs can be read back.
fn device_args(dev: &GcnEmulator, case: &Case) -> (Vec<ArgValue>, Vec<Option<DeviceBuffer>>) {
    let mut out = Vec::new();
    let mut bufs = Vec::new();
    for a in &case.args {
        let mut buf = None;
        match a {
            Arg::Buffer(b) => {
                let bytes = b.to_bytes();
                // A zero-length buffer still needs an address.
                let d = dev.alloc(bytes.len().max(4) as u64).unwrap();
                dev.copy_to_device(d, 0, &bytes).unwrap();
                out.push(ArgValue::Buffer(d));
                out.push(ArgValue::U32(b.len() as u32));
                buf = Some(d);
            }
            Arg::Bool(v) => out.push(ArgValue::U32(*v as u32)),
            Arg::I32(v) => out.push(ArgValue::I32(*v)),
            Arg::U32(v) => out.push(ArgValue::U32(*v)),
            Arg::I64(v) => out.push(ArgValue::I64(*v)),
            Arg::U64(v) => out.push(ArgValue::U64(*v)),
            Arg::F16(v) => out.push(ArgValue::F16(v.to_bits())),
            Arg::F32(v) => out.push(ArgValue::F32(*v)),
            Arg::F64(v) => out.push(ArgValue::F64(*v)),
        }
        bufs.push(buf);
    }
    (out, bufs)
}

/// Runs the twin on `case` and checks the outputs against the kernel's reference.
fn run_case(spec: &KernelSpec, code: &[u8], target: &str, case: &Case, schedule: Schedule) {
    let dev = GcnEmulator::with_config(RunConfig {
        schedule,
        ..RunConfig::default()
    });
    let module = dev
        .load_module(code)
        .unwrap_or_else(|e| panic!("{target} {}: load: {e}", spec.name));
    let (args, bufs) = device_args(&dev, case);
    let dims = LaunchDims {
        grid: case.launch.grid,
        block: case.launch.block,
        dynamic_lds: 0,
    };
    let stats = dev
        .launch(module, spec.name, dims, &args)
        .unwrap_or_else(|e| panic!("{target} {} n={}: {e}", spec.name, case.n));
    assert!(
        stats.valu > 0 && stats.waves > 0,
        "{target} {}: nothing ran",
        spec.name
    );
    let mut after = case.args.clone();
    for &o in &case.outputs {
        let (Some(d), Arg::Buffer(b)) = (bufs[o], &case.args[o]) else {
            panic!("{}: output {o} is not a buffer", spec.name);
        };
        let mut bytes = vec![0u8; b.to_bytes().len()];
        dev.copy_from_device(d, 0, &mut bytes).unwrap();
        after[o] = Arg::Buffer(BufferData::from_bytes(b.elem(), &bytes).unwrap());
    }
    let want = (spec.reference)(case);
    if let Err(m) = kjit_kernels::check(case, &after, &want, spec.tolerance) {
        panic!(
            "{target} twin of {} (n = {}, {schedule:?}): {m}",
            spec.name, case.n
        );
    }
}

/// Problem sizes per kernel: a tiny one, an odd one that leaves partial workgroups/waves, and
/// the library's default size.
fn sizes(spec: &KernelSpec) -> Vec<usize> {
    vec![1, 77, spec.default_n]
}

#[test]
fn every_kernel_has_a_twin() {
    for spec in kjit_kernels::all() {
        let p = twin_dir().join(format!("{}.cl", spec.name));
        if kjit_kernels::NO_OPENCL_TWIN.contains(&spec.name) {
            assert!(
                !p.exists(),
                "{} has a twin: take it off NO_OPENCL_TWIN",
                spec.name
            );
        } else {
            assert!(p.exists(), "missing OpenCL twin {}", p.display());
        }
    }
}

fn check_kernel(name: &str) {
    let spec = kjit_kernels::find(name).expect("kernel in the library");
    for &t in TARGETS {
        let Some(code) = build_twin(name, t) else {
            return;
        };
        for (i, n) in sizes(spec).into_iter().enumerate() {
            let case = (spec.make_case)(n, 0x7717 + i as u64);
            run_case(spec, &code, t, &case, Schedule::RoundRobin);
        }
        // Another interleaving of the waves: results of race-free kernels must not change.
        let case = (spec.make_case)(spec.default_n, 99);
        run_case(spec, &code, t, &case, Schedule::Random(5));
    }
}

#[test]
fn twin_vector_add() {
    check_kernel("vector_add");
}

#[test]
fn twin_saxpy() {
    check_kernel("saxpy");
}

#[test]
fn twin_vector_add_persistent() {
    check_kernel("vector_add_persistent");
}

#[test]
fn twin_seed_2d() {
    check_kernel("seed_2d");
}

#[test]
fn twin_reduce_sum() {
    check_kernel("reduce_sum");
}

#[test]
fn twin_wave_permute() {
    check_kernel("wave_permute");
}

#[test]
fn twin_softmax() {
    check_kernel("softmax");
}

#[test]
fn twin_matmul() {
    check_kernel("matmul");
}

#[test]
fn twin_hash_rounds() {
    check_kernel("hash_rounds");
}

#[test]
fn twin_hash_chain() {
    check_kernel("hash_chain");
}

/// What clang made of one twin on one target.
struct Header {
    kernel: &'static str,
    target: &'static str,
    vgprs: u32,
    sgprs: u32,
    agprs: u32,
    lds: u32,
    scratch: u32,
    occupancy: u32,
    instructions: usize,
}

fn header(kernel: &'static str, target: &'static str, code: &[u8]) -> Header {
    let co = CodeObject::parse(code).unwrap_or_else(|e| panic!("{target} {kernel}: {e}"));
    let k = co
        .kernel(kernel)
        .unwrap_or_else(|| panic!("{target}: no kernel '{kernel}' in the twin's code object"));
    let instructions = k
        .instruction_count(co.target)
        .unwrap_or_else(|e| panic!("{target} {kernel}: {e}"));
    assert!(instructions > 0, "{target} {kernel}: no s_endpgm");
    let meta = &k.meta;
    // The metadata's exact counts must fit in what the descriptor allocates.
    assert!(
        meta.vgpr_count <= k.descriptor.vgprs_allocated(co.target),
        "{target} {kernel}: .vgpr_count {} > allocated {}",
        meta.vgpr_count,
        k.descriptor.vgprs_allocated(co.target)
    );
    assert!(
        co.target.has_agprs() || meta.agpr_count == 0,
        "{target} {kernel}: AGPRs on a target without them"
    );
    Header {
        kernel,
        target,
        vgprs: meta.vgpr_count,
        sgprs: meta.sgpr_count,
        agprs: meta.agpr_count,
        lds: k.descriptor.group_segment_fixed_size,
        scratch: k.descriptor.private_segment_fixed_size,
        occupancy: k.occupancy(co.target, None).waves_per_simd,
        instructions,
    }
}

#[test]
fn twin_headers() {
    let mut rows = Vec::new();
    for spec in kjit_kernels::all()
        .iter()
        .filter(|s| !kjit_kernels::NO_OPENCL_TWIN.contains(&s.name))
    {
        for &t in TARGETS {
            let Some(code) = build_twin(spec.name, t) else {
                return;
            };
            let h = header(spec.name, t, &code);
            assert!(h.instructions > 0 && h.vgprs > 0 && h.sgprs > 0);
            rows.push(h);
        }
    }
    let mut md = String::from(
        "# OpenCL twins: what clang-19 -O3 made of them\n\n\
         Generated by `KJIT_UPDATE_DOCS=1 cargo test -p kjit-runtime --test opencl_twins twin_headers`\n\
         from `kernels/opencl/*.cl` (clang-19 -x cl -cl-std=CL2.0 -O3 -nogpulib, ld.lld-19 -shared).\n\
         Registers are the metadata's `.vgpr_count/.sgpr_count/.agpr_count` (registers used, not the\n\
         allocation granule); LDS and scratch are the descriptor's fixed group/private segment sizes;\n\
         occupancy is waves per SIMD at the kernel's maximum workgroup size (1024), computed by kjit's\n\
         code-object reader; instructions are counted by kjit's decoder from the entry to the last\n\
         `s_endpgm` (every word must decode, also the `s_nop` padding after it on gfx90a/gfx942).\n\
         These are the numbers kjit's own code for the same kernels is compared with.\n\n\
         | kernel | target | VGPRs | SGPRs | AGPRs | LDS B | scratch B | waves/SIMD | instructions |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for h in &rows {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            h.kernel,
            h.target,
            h.vgprs,
            h.sgprs,
            h.agprs,
            h.lds,
            h.scratch,
            h.occupancy,
            h.instructions
        ));
    }
    println!("{md}");
    if std::env::var("KJIT_UPDATE_DOCS").as_deref() == Ok("1") {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/twins.md");
        std::fs::write(&path, &md).unwrap();
        println!("wrote {}", path.display());
    }
}

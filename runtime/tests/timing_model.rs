//! The timing model against public figures (calibration) and against the laws any honest model
//! of a GPU obeys. Kernels are OpenCL C or assembly built by clang-19 (LLVM oracle: skipped with
//! a reason when absent, a failure under `KJIT_REQUIRE_LLVM=1`). Each calibration test names its
//! figure, its source and its tolerance; `docs/timing.md` lists them all.

mod common;

use std::path::Path;

use common::bytes;
use kjit_backend_gcn::llvm_oracle::{
    assemble_code_object, compile_opencl, require_all, scratch_file, OpenClBuild, Tool,
};
use kjit_backend_gcn::machine::machine_by_name;
use kjit_runtime::emu::{GcnEmulator, RunConfig};
use kjit_runtime::timing::{StallCause, TimingReport};
use kjit_runtime::{ArgValue, Device, DeviceBuffer, LaunchDims, ModuleId};

/// Builds OpenCL C `src` for `target`.
fn opencl(name: &str, src: &str, target: &str) -> Option<Vec<u8>> {
    opencl_with(name, src, target, &[])
}

/// Builds OpenCL C `src` for `target` with extra clang arguments.
fn opencl_with(name: &str, src: &str, target: &str, extra: &[&str]) -> Option<Vec<u8>> {
    let tools = require_all(&[Tool::Clang, Tool::Lld], "timing model")?;
    let path = scratch_file(&format!("{name}-{target}.cl"), src).unwrap();
    let build = OpenClBuild {
        extra_args: extra,
        out_dir: None,
    };
    let so = compile_opencl(&tools[0], &tools[1], &path, target, &build)
        .unwrap_or_else(|e| panic!("{e}"));
    Some(std::fs::read(so).unwrap())
}

/// Assembly kernel `name` with `body` (its instructions) and arguments `args` ('b' a buffer at
/// an 8-byte slot, 'u' a u32 at an 8-byte slot), allocating `vgprs` VGPRs and `lds` bytes of
/// LDS, for workgroups of up to 1024 work-items.
fn asm(name: &str, body: &str, target: &str, args: &str, vgprs: u32, lds: u32) -> Option<Vec<u8>> {
    let tools = require_all(&[Tool::Clang, Tool::Lld], "timing model")?;
    let accum = if target == "gfx900" {
        String::new()
    } else {
        format!("  .amdhsa_accum_offset {}\n", vgprs.div_ceil(4) * 4)
    };
    let nargs = args.len();
    let args: String = args
        .chars()
        .enumerate()
        .map(|(i, k)| match k {
            'b' => format!(
                "      - {{ .offset: {}, .size: 8, .value_kind: global_buffer, .address_space: global }}\n",
                8 * i
            ),
            _ => format!(
                "      - {{ .offset: {}, .size: 4, .value_kind: by_value }}\n",
                8 * i
            ),
        })
        .collect();
    let src = format!(
        "  .amdgcn_target \"amdgcn-amd-amdhsa--{target}\"\n  .text\n  .globl {name}\n  .p2align 8\n  \
         .type {name},@function\n{name}:\n{body}\n  .rodata\n  .p2align 6\n  .amdhsa_kernel {name}\n  \
         .amdhsa_user_sgpr_kernarg_segment_ptr 1\n  .amdhsa_next_free_vgpr {vgprs}\n  .amdhsa_next_free_sgpr 24\n  \
         .amdhsa_group_segment_fixed_size {lds}\n{accum}  .end_amdhsa_kernel\n  .amdgpu_metadata\n---\n\
         amdhsa.version: [ 1, 2 ]\namdhsa.kernels:\n  - .name: {name}\n    .symbol: {name}.kd\n    \
         .kernarg_segment_size: {}\n    .kernarg_segment_align: 8\n    .group_segment_fixed_size: {lds}\n    \
         .private_segment_fixed_size: 0\n    .wavefront_size: 64\n    .sgpr_count: 24\n    .vgpr_count: {vgprs}\n    \
         .max_flat_workgroup_size: 1024\n    .args:\n{args}...\n  .end_amdgpu_metadata\n",
        8 * nargs
    );
    let s = scratch_file(&format!("{name}-{target}.s"), &src).unwrap();
    let build = OpenClBuild {
        extra_args: &[],
        out_dir: s.parent().map(Path::to_path_buf),
    };
    let so = assemble_code_object(&tools[0], &tools[1], &s, target, &build)
        .unwrap_or_else(|e| panic!("assembling {name} for {target}: {e}"));
    Some(std::fs::read(so).unwrap())
}

/// A software device timing launches on `model`, with `code` loaded.
struct Timed {
    dev: GcnEmulator,
    module: ModuleId,
}

impl Timed {
    fn new(code: &[u8], model: &str) -> Timed {
        let m = machine_by_name(model).unwrap();
        let dev = GcnEmulator::with_config(RunConfig {
            timing: Some(m),
            ..RunConfig::default()
        });
        let module = dev.load_module(code).unwrap();
        Timed { dev, module }
    }

    fn buffer<T: Copy>(&self, v: &[T]) -> DeviceBuffer {
        let b = self
            .dev
            .alloc(std::mem::size_of_val(v).max(4) as u64)
            .unwrap();
        self.dev.copy_to_device(b, 0, &bytes(v)).unwrap();
        b
    }

    fn run(&self, kernel: &str, grid: u32, block: u32, args: &[ArgValue]) -> TimingReport {
        let dims = LaunchDims {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            dynamic_lds: 0,
        };
        let s = self
            .dev
            .launch(self.module, kernel, dims, args)
            .unwrap_or_else(|e| panic!("{kernel}: {e}"));
        *s.timing.expect("timing was asked for")
    }
}

fn within(value: f64, figure: f64, tol: f64) -> bool {
    (value - figure).abs() <= tol * figure
}

const CHASE: &str = r#"
__kernel void chase(__global const uint* next, __global uint* out, uint hops) {
  uint i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x()
      + __builtin_amdgcn_workitem_id_x();
  uint p = out[i];
  for (uint k = 0; k < hops; k++) p = next[p];
  out[i] = p;
}
"#;

/// Cycles per dependent load of one wave64 (all lanes on the same address) walking a ring of
/// `ring` bytes with a stride of `stride` bytes, `hops` hops per lap: the second lap minus the
/// first (with `hops` below the ring's length, the second lap is cold too).
fn chase_latency(t: &Timed, ring: u64, stride: u64, hops: Option<u32>) -> f64 {
    let n = (ring / 4) as usize;
    let step = (stride / 4) as usize;
    let next: Vec<u32> = (0..n).map(|i| ((i + step) % n) as u32).collect();
    let hops = hops.unwrap_or((n / step) as u32);
    let next = t.buffer(&next);
    let run = |h: u32| {
        let out = t.buffer(&[0u32; 64]);
        t.run(
            "chase",
            1,
            64,
            &[
                ArgValue::Buffer(next),
                ArgValue::Buffer(out),
                ArgValue::U32(h),
            ],
        )
        .cycles
    };
    let (one, two) = (run(hops), run(2 * hops));
    (two - one) as f64 / hops as f64
}

/// Pointer-chase latency on `mi210` against te42kyfo/gpu-benches `gpu-latency/mi210.txt`
/// (single wave64 chase at 1.7 GHz): L1 hit 125 cycles, L2 hit ~233-245, HBM ~570-585.
#[test]
fn pointer_chase_latencies_match_mi210_measurements() {
    let Some(code) = opencl("chase", CHASE, "gfx90a") else {
        return;
    };
    let t = Timed::new(&code, "mi210");
    // L1: an 8 KiB ring (the L1 holds 16 KiB), one 64-byte line per hop.
    let l1 = chase_latency(&t, 8 << 10, 64, None);
    // L2: a 1 MiB ring (LRU L1 misses every hop, the 8 MiB L2 holds it), one L2 line per hop.
    let l2 = chase_latency(&t, 1 << 20, 256, None);
    // HBM: 8192 hops of 256 B into a 64 MiB ring: every hop of both laps is a cold miss.
    let hbm = chase_latency(&t, 64 << 20, 256, Some(4096));
    eprintln!("mi210 chase: L1 {l1:.1}, L2 {l2:.1}, HBM {hbm:.1} cycles per hop");
    assert!(within(l1, 125.0, 0.10), "L1 {l1}");
    assert!(within(l2, 239.0, 0.10), "L2 {l2}");
    assert!(within(hbm, 578.0, 0.10), "HBM {hbm}");
}

/// The same `iters` loop run twice as long: cycles of the extra iterations.
fn extra_cycles(
    t: &Timed,
    kernel: &str,
    grid: u32,
    block: u32,
    iters: u32,
    pre: &[ArgValue],
) -> u64 {
    let run = |n: u32| {
        let mut args = pre.to_vec();
        args.push(ArgValue::U32(n));
        t.run(kernel, grid, block, &args).cycles
    };
    run(2 * iters) - run(iters)
}

/// `count` copies of `line` with `{k}` replaced by 0..count.
fn repeat(line: &str, count: u32) -> String {
    (0..count)
        .map(|k| line.replace("{k}", &k.to_string()) + "\n")
        .collect()
}

/// A loop of 8 LDS stores of `bytes` per lane by 256 work-items (one wave per SIMD, two per
/// LDS port); s[6] = iterations.
fn lds_store_kernel(bytes: u32, target: &str) -> Option<Vec<u8>> {
    let (store, shift) = match bytes {
        4 => ("ds_write_b32 v1, v2 offset:{o}", 2),
        _ => ("ds_write_b128 v1, v[2:5] offset:{o}", 4),
    };
    let stores: String = (0..8)
        .map(|k| store.replace("{o}", &(k * 256 * bytes).to_string()) + "\n")
        .collect();
    let body = format!(
        "  s_load_dword s6, s[0:1], 0x8\n  v_lshlrev_b32 v1, {shift}, v0\n  v_mov_b32 v2, v0\n  v_mov_b32 v3, v0\n  \
         v_mov_b32 v4, v0\n  v_mov_b32 v5, v0\n  s_waitcnt lgkmcnt(0)\n.Lloop:\n{stores}  s_sub_u32 s6, s6, 1\n  \
         s_cmp_lg_u32 s6, 0\n  s_cbranch_scc1 .Lloop\n  s_waitcnt lgkmcnt(0)\n  s_endpgm"
    );
    asm("lds_store", &body, target, "bu", 8, 8 * 256 * bytes)
}

/// LDS store rates on mi300x and mi210 against AMD's pipeline description (rocprofiler-compute
/// "Pipeline descriptions", LDS): a wave64 store of 4 B per lane takes 8 cycles of its SIMD
/// pair's port, of 16 B per lane 20 cycles. Tolerance 15%.
#[test]
fn lds_store_rates_match_amds_figures() {
    for (model, target) in [("mi300x", "gfx942"), ("mi210", "gfx90a")] {
        for (bytes, figure) in [(4u32, 8.0), (16, 20.0)] {
            let Some(code) = lds_store_kernel(bytes, target) else {
                return;
            };
            let t = Timed::new(&code, model);
            let out = t.buffer(&[0u32; 256]);
            let iters = 64;
            let cycles = extra_cycles(&t, "lds_store", 1, 256, iters, &[ArgValue::Buffer(out)]);
            // Two waves share each port; each extra iteration has 8 stores per wave.
            let per_store = cycles as f64 / (iters as f64 * 8.0 * 2.0);
            eprintln!("{model}: ds_write of {bytes} B/lane: {per_store:.2} port cycles");
            assert!(
                within(per_store, figure, 0.15),
                "{model} {bytes} B: {per_store}"
            );
        }
    }
}

const MFMA: &str = r#"
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
typedef half half4 __attribute__((ext_vector_type(4)));
typedef float float16 __attribute__((ext_vector_type(16)));
__kernel void mfma(__global float16* out, uint iters) {
  uint lid = __builtin_amdgcn_workitem_id_x();
  half4 a = (half4)((half)lid, 1.0h, 2.0h, 3.0h);
  half4 b = (half4)(1.0h, (half)lid, 0.5h, 0.25h);
  float16 c0 = out[lid], c1 = c0 + 1.0f, c2 = c0 + 2.0f, c3 = c0 + 3.0f;
  for (uint i = 0; i < iters; i++) {
    c0 = __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c0, 0, 0, 0);
    c1 = __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c1, 0, 0, 0);
    c2 = __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c2, 0, 0, 0);
    c3 = __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c3, 0, 0, 0);
  }
  out[lid] = c0 + c1 + c2 + c3;
}
__kernel void mfma_chain(__global float16* out, uint iters) {
  uint lid = __builtin_amdgcn_workitem_id_x();
  half4 a = (half4)((half)lid, 1.0h, 2.0h, 3.0h);
  half4 b = (half4)(1.0h, (half)lid, 0.5h, 0.25h);
  float16 c = out[lid];
  for (uint i = 0; i < iters; i++) {
    c = __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0);
    c = __builtin_amdgcn_mfma_f32_32x32x8f16(b, a, c, 0, 0, 0);
    c = __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0);
    c = __builtin_amdgcn_mfma_f32_32x32x8f16(b, a, c, 0, 0, 0);
  }
  out[lid] = c;
}
"#;

/// Model cycles of `iters` more iterations of MFMA loop kernel `name` of [`MFMA`] (arguments: 256
/// `float16` accumulators, the iteration count), four waves on one CU.
fn mfma_loop_cycles(name: &str, model: &str, target: &str, iters: u32) -> Option<u64> {
    let code = opencl(name, MFMA, target)?;
    let t = Timed::new(&code, model);
    let out = t.buffer(&vec![0f32; 256 * 16]);
    Some(extra_cycles(
        &t,
        name,
        1,
        256,
        iters,
        &[ArgValue::Buffer(out)],
    ))
}

/// MFMA throughput against the rates of ROCm's `mi300.md`/`mi250.md` (matrix f16 FLOPs per CU per
/// clock: 2048 on gfx942, 1024 on gfx90a), which AMD's Matrix Instruction Calculator's cycle
/// counts reproduce. Four waves (one per SIMD) on one CU, four independent accumulators each.
/// Tolerance 15%.
#[test]
fn mfma_throughput_matches_the_matrix_rates() {
    for (model, target, figure) in [("mi300x", "gfx942", 2048.0), ("mi210", "gfx90a", 1024.0)] {
        let iters = 64;
        let Some(cycles) = mfma_loop_cycles("mfma", model, target, iters) else {
            return;
        };
        let flops = 4.0 * iters as f64 * 4.0 * (2.0 * 32.0 * 32.0 * 8.0);
        let rate = flops / cycles as f64;
        eprintln!("{model}: MFMA f16 {rate:.0} FLOPs/CU/clk");
        assert!(within(rate, figure, 0.15), "{model}: {rate}");
    }
}

/// A chain of MFMAs that accumulate into the same registers (`c = mfma(a, b, c)`, one
/// accumulator, as Triton's matmul issues them) runs at the matrix unit's pass rate: LLVM's
/// GCNHazardRecognizer asks for no wait states between an MFMA and one that reads its whole
/// result as SrcC (`mfma_hazards.rs`), so the model must not hold the second back for the
/// first's result latency (cycles + 4). Four waves on one CU; 32 cycles per MFMA on gfx942,
/// 64 on gfx90a, within 3% (the latency would add 12.5% and 6.25%).
#[test]
fn dependent_mfma_accumulation_issues_back_to_back() {
    for (model, target, pass) in [("mi300x", "gfx942", 32.0), ("mi210", "gfx90a", 64.0)] {
        let iters = 64;
        let Some(cycles) = mfma_loop_cycles("mfma_chain", model, target, iters) else {
            return;
        };
        let per_mfma = cycles as f64 / (4.0 * iters as f64);
        eprintln!("{model}: {per_mfma:.2} cycles per dependent MFMA");
        assert!(within(per_mfma, pass, 0.03), "{model}: {per_mfma}");
    }
}

const FMA: &str = r#"
__attribute__((amdgpu_flat_work_group_size(1, 1024)))
__kernel void fma_peak(__global float* out, uint iters) {
  uint lid = __builtin_amdgcn_workitem_id_x();
  float b = out[lid], c = b * 0.5f;
  float a0 = lid, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
  for (uint i = 0; i < iters; i++) {
    a0 = fma(a0, b, c); a1 = fma(a1, b, c); a2 = fma(a2, b, c); a3 = fma(a3, b, c);
    a4 = fma(a4, b, c); a5 = fma(a5, b, c); a6 = fma(a6, b, c); a7 = fma(a7, b, c);
  }
  out[lid] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
__attribute__((amdgpu_flat_work_group_size(1, 1024)))
__kernel void pk_fma_peak(__global float2* out, uint iters) {
  uint lid = __builtin_amdgcn_workitem_id_x();
  float2 b = out[lid], c = b * 0.5f;
  float2 a0 = (float2)(lid, 1), a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
  for (uint i = 0; i < iters; i++) {
    a0 = fma(a0, b, c); a1 = fma(a1, b, c); a2 = fma(a2, b, c); a3 = fma(a3, b, c);
    a4 = fma(a4, b, c); a5 = fma(a5, b, c); a6 = fma(a6, b, c); a7 = fma(a7, b, c);
  }
  out[lid] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
"#;

/// Vector f32 FMA peak against ROCm's `mi300.md`/`mi250.md`: 128 FLOPs per CU per clock, 256
/// with packed FP32 (`v_pk_fma_f32`). 1024 work-items (four waves per SIMD) on one CU.
/// Tolerance 15%.
#[test]
fn fma_peak_matches_the_vector_rates() {
    for (model, target) in [("mi300x", "gfx942"), ("mi210", "gfx90a")] {
        // Without the SLP vectorizer the scalar chains stay `v_fma_f32` (it would pair them
        // into `v_pk_fma_f32` on CDNA).
        let Some(code) = opencl_with("fma", FMA, target, &["-fno-slp-vectorize"]) else {
            return;
        };
        let t = Timed::new(&code, model);
        for (kernel, per_iter, figure) in [("fma_peak", 16.0, 128.0), ("pk_fma_peak", 32.0, 256.0)]
        {
            let out = t.buffer(&vec![1f32; 2048]);
            let iters = 256;
            let cycles = extra_cycles(&t, kernel, 1, 1024, iters, &[ArgValue::Buffer(out)]);
            let rate = 1024.0 * iters as f64 * per_iter / cycles as f64;
            eprintln!("{model}: {kernel} {rate:.1} FLOPs/CU/clk");
            assert!(within(rate, figure, 0.15), "{model} {kernel}: {rate}");
        }
    }
}

const COPY: &str = r#"
__kernel void copy(__global const float* in, __global float* out) {
  uint i = __builtin_amdgcn_workgroup_id_x() * 256 + __builtin_amdgcn_workitem_id_x();
  out[i] = in[i];
}
"#;

fn copy_bandwidth(t: &Timed, n: usize) -> (f64, TimingReport) {
    let input = t.buffer(&vec![1f32; n]);
    let out = t.buffer(&vec![0f32; n]);
    let r = t.run(
        "copy",
        (n / 256) as u32,
        256,
        &[ArgValue::Buffer(input), ArgValue::Buffer(out)],
    );
    ((2 * n * 4) as f64 / r.seconds / 1e9, r)
}

/// Streaming copy on mi300x: below the 5.3 TB/s peak (ROCm `gpu-arch-specs`; AMD staff call it
/// theoretical, ROCm/rocm_bandwidth_test#121) and in a plausible achieved range, 60-90% of it
/// (3.2-4.8 TB/s; the model's DRAM runs at 80% of peak, `docs/timing.md`).
#[test]
fn streaming_copy_bandwidth_is_plausible_on_mi300x() {
    let Some(code) = opencl("copy", COPY, "gfx942") else {
        return;
    };
    let t = Timed::new(&code, "mi300x");
    let (gbps, r) = copy_bandwidth(&t, 8 << 20);
    eprintln!(
        "mi300x copy of 32 MiB: {gbps:.0} GB/s ({} cycles)",
        r.cycles
    );
    assert!(gbps < 5300.0 && (3200.0..=4800.0).contains(&gbps), "{gbps}");
}

/// Law: a memory-bound kernel's bandwidth grows with the problem until it saturates at the
/// bandwidth limit, and never exceeds it.
#[test]
fn memory_bound_kernel_saturates_at_the_bandwidth_limit() {
    let Some(code) = opencl("copy", COPY, "gfx90a") else {
        return;
    };
    let t = Timed::new(&code, "mi210");
    let m = machine_by_name("mi210").unwrap();
    let limit = m.dram_peak_bytes_per_s * m.dram_efficiency / 1e9;
    let bw: Vec<f64> = [1usize << 16, 1 << 19, 1 << 21, 1 << 22]
        .iter()
        .map(|&n| copy_bandwidth(&t, n).0)
        .collect();
    eprintln!("mi210 copy bandwidth by size: {bw:?} (limit {limit:.0})");
    assert!(bw[1] > 1.5 * bw[0], "{bw:?}");
    assert!(within(bw[3], bw[2], 0.10), "saturated: {bw:?}");
    assert!(bw.iter().all(|&b| b <= limit * 1.02), "{bw:?} over {limit}");
    assert!(bw[3] > 0.7 * limit, "{bw:?} far below {limit}");
}

/// Law: a latency-bound kernel (dependent loads) speeds up with more waves per SIMD.
#[test]
fn latency_bound_kernel_speeds_up_with_more_waves() {
    let Some(code) = opencl("chase", CHASE, "gfx900") else {
        return;
    };
    let t = Timed::new(&code, "mi25");
    let m = machine_by_name("mi25").unwrap();
    let n = 16 << 10; // 64 KiB ring: past the L1, in L2
    let next: Vec<u32> = (0..n).map(|i| ((i + 64) % n) as u32).collect();
    let next = t.buffer(&next);
    let hops = 64u32;
    let throughput: Vec<f64> = [1u32, 2, 4, 8]
        .iter()
        .map(|&w| {
            let groups = m.cus * w;
            let out = t.buffer(&vec![0u32; groups as usize * 256]);
            // Each work-item writes back where its wave's chase ended; the chase itself reads `out`
            // only for its start (0).
            let r = t.run(
                "chase",
                groups,
                256,
                &[
                    ArgValue::Buffer(next),
                    ArgValue::Buffer(out),
                    ArgValue::U32(hops),
                ],
            );
            (groups * 4 * hops) as f64 / r.cycles as f64
        })
        .collect();
    eprintln!("mi25 chase: wave-hops per cycle at 1, 2, 4, 8 waves/SIMD: {throughput:?}");
    assert!(throughput[1] > 1.6 * throughput[0], "{throughput:?}");
    assert!(throughput[2] > 1.5 * throughput[1], "{throughput:?}");
    assert!(throughput[3] >= throughput[2], "{throughput:?}");
}

/// An LDS read loop by 1024 work-items with a stride of s[6] dwords between lanes (8 reads per
/// iteration, s[7] iterations).
fn lds_conflict_kernel(target: &str) -> Option<Vec<u8>> {
    let reads = repeat("  ds_read_b32 v{k}0, v1", 8)
        .replace("v00", "v2")
        .replace("v10", "v3")
        .replace("v20", "v4")
        .replace("v30", "v5")
        .replace("v40", "v6")
        .replace("v50", "v7")
        .replace("v60", "v8")
        .replace("v70", "v9");
    let body = format!(
        "  s_load_dword s6, s[0:1], 0x0\n  s_load_dword s7, s[0:1], 0x8\n  s_waitcnt lgkmcnt(0)\n  \
         v_mul_u32_u24 v1, s6, v0\n  v_lshlrev_b32 v1, 2, v1\n  v_and_b32 v1, 0xfffc, v1\n.Lloop:\n{reads}  \
         s_waitcnt lgkmcnt(0)\n  s_sub_u32 s7, s7, 1\n  s_cmp_lg_u32 s7, 0\n  s_cbranch_scc1 .Lloop\n  s_endpgm"
    );
    asm("lds_conflict", &body, target, "uu", 12, 65536)
}

/// Law: an LDS access pattern with an N-way bank conflict costs about N times the conflict-free
/// one (32 banks; lanes `stride` dwords apart).
#[test]
fn n_way_lds_bank_conflicts_cost_about_n_times() {
    let Some(code) = lds_conflict_kernel("gfx942") else {
        return;
    };
    let t = Timed::new(&code, "mi300x");
    let cost = |stride: u32| {
        extra_cycles(&t, "lds_conflict", 1, 1024, 32, &[ArgValue::U32(stride)]) as f64
    };
    let base = cost(1);
    for n in [2u32, 4, 8, 16] {
        let ratio = cost(n) / base;
        eprintln!("mi300x LDS {n}-way conflict: {ratio:.2}x the conflict-free cycles");
        assert!(within(ratio, n as f64, 0.25), "{n}-way: {ratio}");
    }
    let r = t.run(
        "lds_conflict",
        1,
        1024,
        &[ArgValue::U32(8), ArgValue::U32(32)],
    );
    assert!(
        r.stalls.get(StallCause::LdsBankConflict) > 0,
        "conflicts appear in the stall profile: {:?}",
        r.stalls
    );
}

/// A loop of `iters` (s[6]) global loads by one wave, each into v2 at a new address, with an
/// optional needless `s_waitcnt vmcnt(0)` after each.
fn load_loop_kernel(target: &str, wait: bool) -> Option<Vec<u8>> {
    let w = if wait { "  s_waitcnt vmcnt(0)\n" } else { "" };
    let body = format!(
        "  s_load_dwordx2 s[4:5], s[0:1], 0x0\n  s_load_dword s6, s[0:1], 0x8\n  v_lshlrev_b32 v1, 2, v0\n  \
         v_mov_b32 v3, 0\n  s_waitcnt lgkmcnt(0)\n.Lloop:\n  global_load_dword v2, v1, s[4:5]\n{w}  v_add_u32 v1, 256, v1\n  \
         v_add_u32 v3, 1, v3\n  s_sub_u32 s6, s6, 1\n  s_cmp_lg_u32 s6, 0\n  s_cbranch_scc1 .Lloop\n  s_waitcnt vmcnt(0)\n  \
         v_add_u32 v3, v3, v2\n  v_lshlrev_b32 v1, 2, v0\n  global_store_dword v1, v3, s[4:5]\n  s_endpgm"
    );
    asm(
        if wait { "loop_wait" } else { "loop_nowait" },
        &body,
        target,
        "bu",
        8,
        0,
    )
}

/// Law: a needless `s_waitcnt vmcnt(0)` inside a loop costs cycles (the loads no longer overlap).
#[test]
fn needless_waitcnt_in_a_loop_costs_cycles() {
    for (model, target) in [("mi300x", "gfx942"), ("mi25", "gfx900")] {
        let (Some(with), Some(without)) = (
            load_loop_kernel(target, true),
            load_loop_kernel(target, false),
        ) else {
            return;
        };
        let cycles = |code: &[u8], name: &str| {
            let t = Timed::new(code, model);
            let buf = t.buffer(&vec![1u32; 64 * 512]);
            t.run(name, 1, 64, &[ArgValue::Buffer(buf), ArgValue::U32(256)])
        };
        let a = cycles(&with, "loop_wait");
        let b = cycles(&without, "loop_nowait");
        eprintln!(
            "{model}: load loop {} cycles with a needless vmcnt(0), {} without",
            a.cycles, b.cycles
        );
        assert!(
            a.cycles as f64 > 2.0 * b.cycles as f64,
            "{} vs {}",
            a.cycles,
            b.cycles
        );
        assert!(a.stalls.get(StallCause::VmcntWait) > 2 * b.stalls.get(StallCause::VmcntWait));
    }
}

/// A loop whose body is `len` independent VALU instructions, `iters` (s[6]) times.
fn straight_loop_kernel(target: &str, len: u32) -> Option<Vec<u8>> {
    let body = format!(
        "  s_load_dword s6, s[0:1], 0x8\n  v_mov_b32 v2, 0\n  s_waitcnt lgkmcnt(0)\n.Lloop:\n{}  s_sub_u32 s6, s6, 1\n  \
         s_cmp_lg_u32 s6, 0\n  s_cbranch_scc1 .Lloop\n  s_endpgm",
        repeat("  v_add_u32 v3, v2, v2", len)
    );
    asm(&format!("straight{len}"), &body, target, "bu", 8, 0)
}

/// Law: a hot loop larger than the instruction cache costs cycles (mi300x: 64 KiB per two CUs;
/// the same dynamic instruction count from a 16 KiB loop body and from a 96 KiB one).
#[test]
fn hot_loop_larger_than_the_icache_costs_cycles() {
    let (Some(small), Some(big)) = (
        straight_loop_kernel("gfx942", 4096),
        straight_loop_kernel("gfx942", 24576),
    ) else {
        return;
    };
    let run = |code: &[u8], len: u32, iters: u32| {
        let t = Timed::new(code, "mi300x");
        let buf = t.buffer(&[0u32; 64]);
        t.run(
            &format!("straight{len}"),
            1,
            256,
            &[ArgValue::Buffer(buf), ArgValue::U32(iters)],
        )
    };
    let a = run(&small, 4096, 12);
    let b = run(&big, 24576, 2);
    eprintln!(
        "mi300x: 48K VALU ops from a 16 KiB loop: {} cycles; from a 96 KiB loop: {} cycles (I-cache stalls {} vs {})",
        a.cycles, b.cycles, a.stalls.get(StallCause::IcacheMiss), b.stalls.get(StallCause::IcacheMiss)
    );
    assert!(
        b.cycles as f64 > 1.3 * a.cycles as f64,
        "{} vs {}",
        b.cycles,
        a.cycles
    );
    assert!(b.stalls.get(StallCause::IcacheMiss) > 4 * a.stalls.get(StallCause::IcacheMiss));
}

/// A memory-latency-bound kernel (each work-item loads, waits, adds, stores) allocating `vgprs`.
fn latency_kernel(target: &str, vgprs: u32) -> Option<Vec<u8>> {
    let body = "  s_load_dwordx2 s[4:5], s[0:1], 0x0\n  s_lshl_b32 s6, s2, 8\n  v_add_u32 v1, s6, v0\n  \
         v_lshlrev_b32 v1, 2, v1\n  s_waitcnt lgkmcnt(0)\n  global_load_dword v2, v1, s[4:5]\n  s_waitcnt vmcnt(0)\n  \
         v_add_u32 v2, 1, v2\n  global_load_dword v3, v1, s[4:5] offset:4\n  s_waitcnt vmcnt(0)\n  v_add_u32 v2, v2, v3\n  \
         global_store_dword v1, v2, s[4:5]\n  s_endpgm";
    asm(&format!("lat{vgprs}"), body, target, "b", vgprs, 0)
}

/// Law: a kernel limited to one wave per SIMD by its VGPRs runs markedly slower than the same
/// kernel at two (gfx900: 256 VGPRs allow one wave per SIMD, 128 allow two).
#[test]
fn one_wave_per_simd_by_vgprs_is_markedly_slower_than_two() {
    let (Some(one), Some(two)) = (latency_kernel("gfx900", 256), latency_kernel("gfx900", 128))
    else {
        return;
    };
    let run = |code: &[u8], vgprs: u32| {
        let t = Timed::new(code, "mi25");
        let buf = t.buffer(&vec![1u32; 256 * 2048 + 1]);
        t.run(&format!("lat{vgprs}"), 2048, 256, &[ArgValue::Buffer(buf)])
    };
    let a = run(&one, 256);
    let b = run(&two, 128);
    eprintln!(
        "mi25: latency-bound kernel at 1 wave/SIMD {} cycles ({:.2} resident), at 2 {} cycles ({:.2})",
        a.cycles, a.waves_per_simd, b.cycles, b.waves_per_simd
    );
    assert!(
        a.cycles as f64 > 1.5 * b.cycles as f64,
        "{} vs {}",
        a.cycles,
        b.cycles
    );
    assert!(a.waves_per_simd <= 1.0 && b.waves_per_simd > 1.2);
}

/// Timing never changes results, and the same launch gives the same cycles whatever the number
/// of host threads (the model replays traces in dispatch order on one thread).
#[test]
fn timing_is_deterministic_and_changes_no_result() {
    // Each work-item chases from its own start (global id): no two workgroups share memory.
    const GATHER: &str = r#"
__kernel void chase(__global const uint* next, __global uint* out, uint hops) {
  uint i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  uint p = out[i];
  for (uint k = 0; k < hops; k++) p = next[p] + k;
  out[i] = p;
}
"#;
    let Some(code) = opencl("gather", GATHER, "gfx942") else {
        return;
    };
    let n = 1usize << 14;
    let next: Vec<u32> = (0..n).map(|i| ((i * 7 + 3) % (n - 64)) as u32).collect();
    let starts: Vec<u32> = (0..64 * 64).map(|i| (i * 13 % n) as u32).collect();
    let run = |timing: bool, threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let dev = GcnEmulator::with_config(RunConfig {
                timing: timing.then(|| machine_by_name("mi300x").unwrap()),
                ..RunConfig::default()
            });
            let module = dev.load_module(&code).unwrap();
            let put = |v: &[u32]| {
                let b = dev.alloc(v.len() as u64 * 4).unwrap();
                dev.copy_to_device(b, 0, &bytes(v)).unwrap();
                b
            };
            let (nb, ob) = (put(&next), put(&starts));
            let dims = LaunchDims {
                grid: [64, 1, 1],
                block: [64, 1, 1],
                dynamic_lds: 0,
            };
            let s = dev
                .launch(
                    module,
                    "chase",
                    dims,
                    &[
                        ArgValue::Buffer(nb),
                        ArgValue::Buffer(ob),
                        ArgValue::U32(50),
                    ],
                )
                .unwrap();
            let mut out = vec![0u8; starts.len() * 4];
            dev.copy_from_device(ob, 0, &mut out).unwrap();
            (out, s.timing)
        })
    };
    let (plain, none) = run(false, 2);
    assert!(none.is_none());
    let (one, r1) = run(true, 1);
    let (two, r2) = run(true, 2);
    assert!(plain == one && plain == two, "timing changed the results");
    let (r1, r2) = (r1.unwrap(), r2.unwrap());
    assert_eq!(r1, r2, "cycles depend on host threads");
    assert!(r1.cycles > 50 * 100, "{}", r1.cycles);
}

/// A code object for another target than the model's is a clear error, not a wrong timing.
#[test]
fn a_model_of_another_target_is_refused() {
    let Some(code) = opencl("copy", COPY, "gfx942") else {
        return;
    };
    let t = Timed::new(&code, "mi210");
    let b = t.buffer(&[0f32; 256]);
    let e = t
        .dev
        .launch(
            t.module,
            "copy",
            LaunchDims {
                grid: [1, 1, 1],
                block: [256, 1, 1],
                dynamic_lds: 0,
            },
            &[ArgValue::Buffer(b), ArgValue::Buffer(b)],
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mi210") && e.contains("gfx90a") && e.contains("gfx942"),
        "{e}"
    );
}

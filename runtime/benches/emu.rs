//! Throughput of kjit's software GCN device on two kernels compiled by clang-19 for gfx942:
//! a vector add over 16M floats (memory-bound: loads, store, address arithmetic) and an
//! ALU-heavy kernel (an FMA/integer chain per element). Reports wave-instructions/s and
//! lane-operations/s (criterion's throughput is set to lane-operations per launch; the
//! wave-instruction rate is printed once per kernel).
//!
//! The timing mode (`RunConfig::timing`, the `mi300x` model) is measured side by side with the
//! functional device on both kernels: the medians of alternating runs and their ratio are printed
//! (the timing issue's target: at most 4x, and the 16M vector add timed in under 10 s).
//!
//! Needs clang-19 and ld.lld-19; without them the bench prints why and does nothing.

use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kjit_backend_gcn::llvm_oracle::{compile_opencl, find, scratch_file, OpenClBuild, Tool};
use kjit_backend_gcn::machine::machine_by_name;
use kjit_runtime::emu::{GcnEmulator, RunConfig};
use kjit_runtime::{ArgValue, Device, LaunchDims};

const SOURCE: &str = r#"
kernel void vadd(global const float* a, global const float* b, global float* c, uint n) {
  uint i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
  if (i < n) c[i] = a[i] + b[i];
}
kernel void alu(global float* io, uint iters) {
  uint i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
  float x = io[i], y = x * 0.5f + 1.0f;
  uint h = i * 2654435761u;
  for (uint k = 0; k < iters; k++) {
    x = __builtin_fmaf(x, 0.999f, y);
    y = __builtin_fmaf(y, 1.0001f, -x * 0.001f);
    h = (h ^ (h >> 13)) * 0x5bd1e995u + k;
  }
  io[i] = x + y + (float)(h & 0xff);
}
"#;

fn build() -> Option<Vec<u8>> {
    let (clang, lld) = (find(Tool::Clang)?, find(Tool::Lld)?);
    let built = scratch_file("bench.cl", SOURCE)
        .and_then(|src| compile_opencl(&clang, &lld, &src, "gfx942", &OpenClBuild::default()));
    match built {
        Ok(so) => std::fs::read(so).ok(),
        Err(e) => {
            eprintln!("emu bench: {e}");
            None
        }
    }
}

fn bench(c: &mut Criterion) {
    let Some(code) = build() else {
        eprintln!("emu bench: clang-19/ld.lld-19 not found; nothing to measure");
        return;
    };
    let dev = GcnEmulator::new();
    let m = dev.load_module(&code).expect("load");

    // Vector add over 16M floats.
    let n: u32 = 16 << 20;
    let bytes = n as u64 * 4;
    let (a, b, out) = (
        dev.alloc(bytes).unwrap(),
        dev.alloc(bytes).unwrap(),
        dev.alloc(bytes).unwrap(),
    );
    let data: Vec<u8> = (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect();
    dev.copy_to_device(a, 0, &data).unwrap();
    dev.copy_to_device(b, 0, &data).unwrap();
    let dims = LaunchDims {
        grid: [n / 256, 1, 1],
        block: [256, 1, 1],
        dynamic_lds: 0,
    };
    let args = [
        ArgValue::Buffer(a),
        ArgValue::Buffer(b),
        ArgValue::Buffer(out),
        ArgValue::U32(n),
    ];
    report("vadd 16M", &dev, m, "vadd", dims, &args);
    side_by_side("vadd 16M", &dev, m, "vadd", dims, &args);
    let stats = dev.launch(m, "vadd", dims, &args).unwrap();
    let mut g = c.benchmark_group("emu");
    g.sample_size(10);
    g.throughput(Throughput::Elements(stats.lane_ops));
    g.bench_function("vadd_16M_lane_ops", |bch| {
        bch.iter(|| dev.launch(m, "vadd", dims, &args).unwrap())
    });

    // ALU-heavy: 256K work-items x 64 iterations.
    let n2: u32 = 256 << 10;
    let io = dev.alloc(n2 as u64 * 4).unwrap();
    dev.copy_to_device(io, 0, &vec![0u8; n2 as usize * 4])
        .unwrap();
    let dims2 = LaunchDims {
        grid: [n2 / 256, 1, 1],
        block: [256, 1, 1],
        dynamic_lds: 0,
    };
    let args2 = [ArgValue::Buffer(io), ArgValue::U32(64)];
    report("alu 256K x 64", &dev, m, "alu", dims2, &args2);
    side_by_side("alu 256K x 64", &dev, m, "alu", dims2, &args2);
    let stats2 = dev.launch(m, "alu", dims2, &args2).unwrap();
    g.throughput(Throughput::Elements(stats2.lane_ops));
    g.bench_function("alu_256K_x64_lane_ops", |bch| {
        bch.iter(|| dev.launch(m, "alu", dims2, &args2).unwrap())
    });
    g.finish();
}

/// Runs the launch alternately without and with the timing model (mi300x), 5 times each, and
/// prints the median wall times and their ratio.
fn side_by_side(
    what: &str,
    dev: &GcnEmulator,
    m: kjit_runtime::ModuleId,
    k: &str,
    dims: LaunchDims,
    args: &[ArgValue],
) {
    let model = machine_by_name("mi300x").expect("model");
    let (mut plain, mut timed) = (Vec::new(), Vec::new());
    let (mut plain_cpu, mut timed_cpu) = (Vec::new(), Vec::new());
    let mut cycles = 0;
    for _ in 0..5 {
        dev.set_config(RunConfig::default());
        let (t, c) = (Instant::now(), process_cpu_seconds().unwrap_or(0.0));
        dev.launch(m, k, dims, args).unwrap();
        plain.push(t.elapsed().as_secs_f64());
        plain_cpu.push(process_cpu_seconds().unwrap_or(0.0) - c);
        dev.set_config(RunConfig {
            timing: Some(model),
            ..RunConfig::default()
        });
        let (t, c) = (Instant::now(), process_cpu_seconds().unwrap_or(0.0));
        let s = dev.launch(m, k, dims, args).unwrap();
        timed.push(t.elapsed().as_secs_f64());
        timed_cpu.push(process_cpu_seconds().unwrap_or(0.0) - c);
        cycles = s.timing.map(|r| r.cycles).unwrap_or(0);
    }
    dev.set_config(RunConfig::default());
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (p, t) = (median(&mut plain), median(&mut timed));
    let (pc, tc) = (median(&mut plain_cpu), median(&mut timed_cpu));
    eprintln!(
        "emu bench {what}: functional {p:.3} s, timed on mi300x {t:.3} s (median of 5, alternating): {:.2}x wall; \
         CPU {pc:.2} s vs {tc:.2} s: {:.2}x; {cycles} model cycles",
        t / p,
        tc / pc.max(1e-9)
    );
}

/// Prints wave-instructions/s and lane-operations/s of one timed launch.
fn report(
    what: &str,
    dev: &GcnEmulator,
    m: kjit_runtime::ModuleId,
    k: &str,
    dims: LaunchDims,
    args: &[ArgValue],
) {
    let cpu0 = process_cpu_seconds();
    let t = Instant::now();
    let s = dev.launch(m, k, dims, args).unwrap();
    let secs = t.elapsed().as_secs_f64();
    let cpu = process_cpu_seconds().zip(cpu0).map(|(b, a)| b - a);
    let insts = s.salu + s.valu + s.vmem + s.smem + s.lds + s.branch + s.mfma;
    eprintln!(
        "emu bench {what}: {:.1} M wave-instructions/s, {:.1} M lane-operations/s ({} threads, {:.3} s)",
        insts as f64 / secs / 1e6,
        s.lane_ops as f64 / secs / 1e6,
        rayon::current_num_threads(),
        secs
    );
    // On a shared machine the wall-clock rate depends on what else runs; the rate per CPU-second
    // the launch actually got does much less, and times the thread count it estimates what
    // dedicated cores would give (if the workgroups scale, which they do: no shared state).
    if let Some(cpu) = cpu.filter(|c| *c > 0.0) {
        eprintln!(
            "emu bench {what}: {:.2} CPU-seconds ({:.2} cores busy on average): {:.1} M wave-instructions and {:.1} M lane-operations per CPU-second",
            cpu,
            cpu / secs,
            insts as f64 / cpu / 1e6,
            s.lane_ops as f64 / cpu / 1e6
        );
    }
}

/// User + system CPU time of this process so far, from `/proc/self/stat` (Linux; clock ticks
/// of 1/100 s, the kernel's USER_HZ), or `None` elsewhere.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

criterion_group!(benches, bench);
criterion_main!(benches);

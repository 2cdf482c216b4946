//! Compile latency: kjit (builder → IR → optimized IR → code object bytes, gfx942) against
//! clang-19 -O3 + ld.lld-19 on the OpenCL twin of each library kernel (`kernels/opencl/`),
//! measured the same way on this machine (wall time of the whole job, the two LLVM tools run as
//! processes, as a JIT user would run them).
//!
//! Prints a table (median of repeated runs) first, then runs criterion on the kjit side per
//! kernel. A kernel whose twin is missing, or a machine without clang-19/ld.lld-19, gets its
//! clang column skipped with a message.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::Criterion;
use kjit::{compile, CompileOptions};
use kjit_backend_gcn::llvm_oracle::{find, run, Tool};
use kjit_backend_gcn::Target;
use std::hint::black_box;

const TARGET: Target = Target::Gfx942;

/// The `kjit` binary's allocator (see src/main.rs): the compiler allocates many small
/// short-lived vectors and maps, and glibc malloc was ~20% of a compile in `perf`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn kjit_compile(spec: &kjit_kernels::KernelSpec) -> Vec<u8> {
    let func = (spec.build)().expect("kernel builds");
    compile(&func, TARGET, &CompileOptions::default())
        .expect("kjit compiles")
        .code_object
}

fn twin(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("kernels/opencl")
        .join(format!("{name}.cl"))
}

/// clang-19 -O3 then ld.lld-19 -shared on the twin; the code object bytes.
fn clang_compile(clang: &Path, lld: &Path, src: &Path, dir: &Path) -> Result<Vec<u8>, String> {
    let stem = src.file_stem().unwrap().to_string_lossy();
    let obj = dir.join(format!("{stem}.o"));
    let so = dir.join(format!("{stem}.hsaco"));
    run(
        clang,
        &[
            "-O3",
            "-x",
            "cl",
            "-cl-std=CL2.0",
            "-target",
            "amdgcn-amd-amdhsa",
            "-mcpu=gfx942",
            "-nogpulib",
            "-c",
            src.to_str().unwrap(),
            "-o",
            obj.to_str().unwrap(),
        ],
        None,
    )?;
    run(
        lld,
        &["-shared", obj.to_str().unwrap(), "-o", so.to_str().unwrap()],
        None,
    )?;
    std::fs::read(&so).map_err(|e| e.to_string())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                black_box(f());
                t.elapsed()
            })
            .collect(),
    )
}

fn table() {
    let tools = find(Tool::Clang).zip(find(Tool::Lld));
    if tools.is_none() {
        println!("clang-19/ld.lld-19 not found: the clang column is skipped");
    }
    let dir = std::env::temp_dir().join(format!("kjit-compile-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    println!(
        "\n{:24} {:>12} {:>12} {:>9} {:>10}",
        "kernel (gfx942)", "kjit", "clang+lld", "speedup", "kjit bytes"
    );
    // gfx942 has matrix cores: the matrix kernels are library kernels too.
    for spec in kjit_kernels::all().iter().chain(kjit_kernels::matrix()) {
        // Warm up, then the median of many runs.
        let bytes = kjit_compile(spec).len();
        let k = time(200, || kjit_compile(spec));
        let src = twin(spec.name);
        let c = match &tools {
            None => None,
            Some(_) if !src.exists() => {
                println!(
                    "{}: no OpenCL twin at {}, clang row skipped",
                    spec.name,
                    src.display()
                );
                None
            }
            Some((clang, lld)) => match clang_compile(clang, lld, &src, &dir) {
                Err(e) => {
                    println!("{}: clang-19 failed ({e}), clang row skipped", spec.name);
                    None
                }
                Ok(_) => Some(time(7, || clang_compile(clang, lld, &src, &dir).unwrap())),
            },
        };
        match c {
            Some(c) => println!(
                "{:24} {:>9.3} ms {:>9.1} ms {:>8.0}x {:>10}",
                spec.name,
                k.as_secs_f64() * 1e3,
                c.as_secs_f64() * 1e3,
                c.as_secs_f64() / k.as_secs_f64(),
                bytes
            ),
            None => println!(
                "{:24} {:>9.3} ms {:>12} {:>9} {:>10}",
                spec.name,
                k.as_secs_f64() * 1e3,
                "-",
                "-",
                bytes
            ),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    table();
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let mut g = c.benchmark_group("kjit_compile_gfx942");
    for spec in kjit_kernels::all() {
        g.bench_function(spec.name, |b| b.iter(|| kjit_compile(spec)));
    }
    g.finish();
    c.final_summary();
}

//! Per-row sums with LDS and wave reductions: one 256-work-item workgroup per row; each
//! work-item adds a strided part of the row, each wave reduces its 64 partial sums with
//! `wave_reduce`, the four wave sums meet in LDS after a barrier, and work-item 0 adds them.
//! Checked against the CPU to a relative 1e-5 (the order of the additions differs).
//!
//! Run: `cargo run --release --example row_sums`.

use kjit::{Dim, Gpu, KernelBuilder, LaunchDims, ReduceOp};

const BLOCK: u32 = 256;
const WAVES: u32 = BLOCK / 64;

fn row_sums() -> Result<kjit::ir::Function, kjit::frontend::KernelError> {
    let k = KernelBuilder::new("row_sums");
    let m = k.buffer::<f32>("m");
    let cols = k.arg::<u32>("cols");
    let sums = k.buffer_mut::<f32>("sums");
    let wave_sums = k.lds::<f32>("wave_sums", WAVES);
    let row = k.group_id(Dim::X);
    let lid = k.local_id(Dim::X);
    let acc = k.var(k.lit(0.0f32));
    k.for_range(lid, cols, k.lit(BLOCK), |c| {
        acc.set(acc.get() + k.load(&m, row * cols + c));
    });
    let wave_sum = k.wave_reduce(ReduceOp::Add, acc.get());
    k.if_((lid % 64u32).eq(0u32), || {
        k.store(&wave_sums, lid / 64u32, wave_sum)
    });
    k.barrier();
    k.if_(lid.eq(0u32), || {
        let total = k.var(k.lit(0.0f32));
        for w in 0..WAVES {
            total.set(total.get() + k.load(&wave_sums, k.lit(w)));
        }
        k.store(&sums, row, total.get());
    });
    k.finish()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (rows, cols) = (48usize, 1000usize);
    let mut rng = kjit::kernels::rng(7);
    let m = kjit::kernels::random_f32(&mut rng, rows * cols, -1.0, 1.0);

    let gpu = Gpu::new()?;
    let kernel = gpu.compile(&row_sums()?)?;
    let dm = gpu.to_device(&m)?;
    let mut dsums = gpu.zeros::<f32>(rows)?;
    let stats = kernel
        .launch(LaunchDims::new([rows as u32, 1, 1], [BLOCK, 1, 1]))
        .arg(&dm)
        .arg(cols as u32)
        .arg(&mut dsums)
        .run()?;
    let got = dsums.to_host()?;
    let want: Vec<f64> = m
        .chunks(cols)
        .map(|r| r.iter().map(|&x| x as f64).sum())
        .collect();
    let worst = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (*g as f64 - w).abs() / w.abs().max(1.0))
        .fold(0.0f64, f64::max);
    println!(
        "row_sums {rows}x{cols} on {}: {} waves, {} LDS wave-instructions; max relative error {worst:.2e}",
        gpu.device().name(),
        stats.waves,
        stats.lds
    );
    if worst > 1e-5 {
        return Err(format!("row sums differ from the CPU by {worst:e}").into());
    }
    Ok(())
}

#[test]
fn matches_the_cpu() {
    main().unwrap();
}

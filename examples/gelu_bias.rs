//! GELU with bias: `y[r][c] = gelu(x[r][c] + bias[c])`, the exact (erf) form
//! `gelu(v) = v/2 · (1 + erf(v/√2))`, checked against the same formula on the CPU in f64:
//! within `1e-6 + 1e-5·|y|` (for negative `v`, `1 + erf` cancels, so the f32 kernel's error is
//! absolute there: `erf`'s 3 ulp at 1, times `|v|/2`).
//!
//! Run: `cargo run --release --example gelu_bias` (on the default device; `KJIT_DEVICE=emu`
//! forces kjit's software device).

use kjit::{Dim, Gpu, KernelBuilder, LaunchDims};

/// Builds the kernel: one work-item per element; `cols` is the row length.
fn gelu_bias() -> Result<kjit::ir::Function, kjit::frontend::KernelError> {
    let k = KernelBuilder::new("gelu_bias");
    let x = k.buffer::<f32>("x");
    let bias = k.buffer::<f32>("bias");
    let cols = k.arg::<u32>("cols");
    let y = k.buffer_mut::<f32>("y");
    let i = k.global_id(Dim::X);
    k.if_(i.lt(x.len()), || {
        let v = k.load(&x, i) + k.load(&bias, i % cols);
        let g = v * 0.5f32 * (1.0f32 + (v * std::f32::consts::FRAC_1_SQRT_2).erf());
        k.store(&y, i, g);
    });
    k.finish()
}

fn cpu(x: &[f32], bias: &[f32]) -> Vec<f32> {
    x.iter()
        .enumerate()
        .map(|(i, &x)| {
            let v = (x + bias[i % bias.len()]) as f64;
            v * 0.5 * (1.0 + libm::erf(v * std::f64::consts::FRAC_1_SQRT_2))
        })
        .map(|v| v as f32)
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (rows, cols) = (64usize, 384usize);
    let mut rng = kjit::kernels::rng(14);
    let x = kjit::kernels::random_f32(&mut rng, rows * cols, -4.0, 4.0);
    let bias = kjit::kernels::random_f32(&mut rng, cols, -1.0, 1.0);

    let gpu = Gpu::new()?;
    let kernel = gpu.compile(&gelu_bias()?)?;
    let dx = gpu.to_device(&x)?;
    let db = gpu.to_device(&bias)?;
    let mut dy = gpu.zeros::<f32>(rows * cols)?;
    let stats = kernel
        .launch(LaunchDims::cover(rows * cols, 256))
        .arg(&dx)
        .arg(&db)
        .arg(cols as u32)
        .arg(&mut dy)
        .run()?;
    let got = dy.to_host()?;

    let want = cpu(&x, &bias);
    // Error as a fraction of the tolerance `1e-6 + 1e-5·|y|`.
    let worst = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).abs() / (1e-6 + 1e-5 * w.abs()))
        .fold(0.0f32, f32::max);
    println!(
        "gelu_bias {rows}x{cols} on {}: {} waves, {} VALU wave-instructions; worst error {worst:.2} of the tolerance",
        gpu.device().name(),
        stats.waves,
        stats.valu
    );
    if worst > 1.0 {
        return Err(format!("GELU differs from the CPU by {worst:.2}x the tolerance").into());
    }
    Ok(())
}

#[test]
fn matches_the_cpu() {
    main().unwrap();
}

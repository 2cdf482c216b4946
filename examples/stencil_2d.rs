//! A 2-D 5-point stencil (one Jacobi step of the Laplace equation):
//! `out[r][c] = (in[r-1][c] + in[r+1][c] + in[r][c-1] + in[r][c+1]) / 4` inside the grid, the
//! border copied, on a 2-D launch of 16x16 workgroups. Checked against the CPU bit for bit (the
//! same additions in the same order).
//!
//! Run: `cargo run --release --example stencil_2d`.

use kjit::{Dim, Gpu, KernelBuilder, LaunchDims};

fn stencil() -> Result<kjit::ir::Function, kjit::frontend::KernelError> {
    let k = KernelBuilder::new("stencil_2d");
    let input = k.buffer::<f32>("input");
    let width = k.arg::<u32>("width");
    let height = k.arg::<u32>("height");
    let out = k.buffer_mut::<f32>("out");
    let c = k.global_id(Dim::X);
    let r = k.global_id(Dim::Y);
    k.if_(c.lt(width) & r.lt(height), || {
        let i = r * width + c;
        let inside = c.gt(0u32) & r.gt(0u32) & (c + 1u32).lt(width) & (r + 1u32).lt(height);
        k.if_else(
            inside,
            || {
                let up = k.load(&input, i - width);
                let down = k.load(&input, i + width);
                let left = k.load(&input, i - 1u32);
                let right = k.load(&input, i + 1u32);
                k.store(&out, i, (up + down + left + right) * 0.25f32);
            },
            || k.store(&out, i, k.load(&input, i)),
        );
    });
    k.finish()
}

fn cpu(input: &[f32], w: usize, h: usize) -> Vec<f32> {
    let mut out = input.to_vec();
    for r in 1..h - 1 {
        for c in 1..w - 1 {
            let i = r * w + c;
            out[i] = (input[i - w] + input[i + w] + input[i - 1] + input[i + 1]) * 0.25;
        }
    }
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (w, h) = (100usize, 70usize);
    let mut rng = kjit::kernels::rng(5);
    let input = kjit::kernels::random_f32(&mut rng, w * h, 0.0, 1.0);

    let gpu = Gpu::new()?;
    let kernel = gpu.compile(&stencil()?)?;
    let din = gpu.to_device(&input)?;
    let mut dout = gpu.zeros::<f32>(w * h)?;
    let stats = kernel
        .launch(LaunchDims::cover_2d([w, h], [16, 16]))
        .arg(&din)
        .arg(w as u32)
        .arg(h as u32)
        .arg(&mut dout)
        .run()?;
    let got = dout.to_host()?;
    let want = cpu(&input, w, h);
    let wrong = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    println!(
        "stencil_2d {w}x{h} on {}: {} waves, {} bytes read; {wrong} elements differ from the CPU",
        gpu.device().name(),
        stats.waves,
        stats.bytes_read
    );
    if wrong > 0 {
        return Err(format!("{wrong} elements differ from the CPU").into());
    }
    Ok(())
}

#[test]
fn matches_the_cpu() {
    main().unwrap();
}

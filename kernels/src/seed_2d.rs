//! The seed's 2-D example: `dst[gid] = lid_x * a + lid_y * b[0]` over a `width x height` grid.

use crate::*;
use kjit_frontend::{Dim, KernelBuilder};
use kjit_ir::ElemType;

/// Workgroup shape.
pub const BLOCK: [u32; 2] = [16, 8];
/// Rows of the output (not a multiple of the block's height).
pub const HEIGHT: u32 = 13;

/// `dst[gy * width + gx] = lid_x * a + lid_y * b[0]` where `gx < width` and `gy < height`.
pub fn build() -> BuildResult {
    let k = KernelBuilder::new("seed_2d");
    let a = k.arg::<f32>("a");
    let b = k.buffer::<f32>("b");
    let dst = k.buffer_mut::<f32>("dst");
    let width = k.arg::<u32>("width");
    let height = k.arg::<u32>("height");
    let gx = k.global_id(Dim::X);
    let gy = k.global_id(Dim::Y);
    k.if_(gx.lt(width) & gy.lt(height), || {
        let gid = gy * width + gx;
        let lx = k.local_id(Dim::X).cast::<f32>();
        let ly = k.local_id(Dim::Y).cast::<f32>();
        let v = lx * a + ly * k.load(&b, k.lit(0u32));
        k.store(&dst, gid, v);
    });
    k.finish()
}

fn make(n: usize, seed: u64) -> Case {
    let mut r = rng(seed);
    let width = n.max(1) as u32;
    let a = random_f32(&mut r, 1, -3.0, 3.0)[0];
    let b = random_f32(&mut r, 4, -3.0, 3.0);
    let len = (width * HEIGHT) as usize;
    Case {
        n,
        args: vec![
            Arg::F32(a),
            Arg::Buffer(BufferData::F32(b)),
            poisoned(ElemType::F32, len),
            Arg::U32(width),
            Arg::U32(HEIGHT),
        ],
        launch: LaunchDims {
            grid: [
                groups(width as usize, BLOCK[0]),
                groups(HEIGHT as usize, BLOCK[1]),
                1,
            ],
            block: [BLOCK[0], BLOCK[1], 1],
            dynamic_lds: 0,
        },
        outputs: vec![2],
    }
}

fn reference(c: &Case) -> Vec<BufferData> {
    let a = f32_arg(c, 0);
    let b0 = f32s(c, 1)[0];
    let width = u32_arg(c, 3);
    let height = u32_arg(c, 4);
    let mut out = vec![0f32; (width * height) as usize];
    for y in 0..height {
        for x in 0..width {
            let (lx, ly) = ((x % BLOCK[0]) as f32, (y % BLOCK[1]) as f32);
            out[(y * width + x) as usize] = lx * a + ly * b0;
        }
    }
    vec![BufferData::F32(out)]
}

/// The registry entry of `seed_2d`.
pub const SEED_2D: KernelSpec = KernelSpec {
    name: "seed_2d",
    description: "dst[gid] = lid_x * a + lid_y * b[0] over a width x 13 grid of 16x8 workgroups",
    build,
    make_case: make,
    reference,
    tolerance: Tolerance::EXACT,
    default_n: 1000,
    tuning: None,
};

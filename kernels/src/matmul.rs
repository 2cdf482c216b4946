//! Tiled f32 matrix multiply with LDS tiles.

use crate::*;
use kjit_frontend::{Dim, KernelBuilder};
use kjit_ir::ElemType;

/// Tile edge: workgroups are `TILE x TILE` work-items, one per output element.
pub const TILE: u32 = 16;

/// Tuning parameters: the tile edge (the default first; 32 x 32 = 1024 work-items, the most a
/// workgroup may have).
const PARAMS: &[TuneParam] = &[TuneParam {
    name: "tile",
    values: &[TILE, 8, 32],
}];

/// `c[m x n] = a[m x k] * b[k x n]`, row-major. Each workgroup stages a `TILE x TILE` tile of
/// `a` and of `b` in LDS per step along `k`, with barriers around the tile's use.
pub fn build() -> BuildResult {
    build_tiled(TILE)
}

fn build_with(p: &[u32]) -> BuildResult {
    build_tiled(p[0])
}

/// [`build`] with `tile x tile` tiles and workgroups.
fn build_tiled(tile: u32) -> BuildResult {
    let k = KernelBuilder::new("matmul");
    k.allow_contraction(true);
    let a = k.buffer::<f32>("a");
    let b = k.buffer::<f32>("b");
    let c = k.buffer_mut::<f32>("c");
    let m = k.arg::<u32>("m");
    let n = k.arg::<u32>("n");
    let kk = k.arg::<u32>("k");
    let ta = k.lds::<f32>("tile_a", tile * tile);
    let tb = k.lds::<f32>("tile_b", tile * tile);
    let (lx, ly) = (k.local_id(Dim::X), k.local_id(Dim::Y));
    let row = k.group_id(Dim::Y) * tile + ly;
    let col = k.group_id(Dim::X) * tile + lx;
    let zero = k.lit(0.0f32);
    let acc = k.var_named("acc", zero);
    let t = k.var_named("t", k.lit(0u32));
    k.while_(
        || t.get().lt(kk),
        || {
            let a_col = t.get() + lx;
            let av = k.load(&a, row * kk + a_col);
            k.store(
                &ta,
                ly * tile + lx,
                k.select(row.lt(m) & a_col.lt(kk), av, zero),
            );
            let b_row = t.get() + ly;
            let bv = k.load(&b, b_row * n + col);
            k.store(
                &tb,
                ly * tile + lx,
                k.select(b_row.lt(kk) & col.lt(n), bv, zero),
            );
            k.barrier();
            k.for_range(k.lit(0u32), k.lit(tile), k.lit(1u32), |i| {
                let p = k.load(&ta, ly * tile + i) * k.load(&tb, i * tile + lx);
                acc.set(acc.get() + p);
            });
            k.barrier();
            t.set(t.get() + tile);
        },
    );
    k.if_(row.lt(m) & col.lt(n), || {
        k.store(&c, row * n + col, acc.get());
    });
    k.finish()
}

fn make(size: usize, seed: u64) -> Case {
    make_tiled(&[TILE], size, seed)
}

/// Inputs for size `size`, workgroups of `p[0] x p[0]` work-items.
fn make_tiled(p: &[u32], size: usize, seed: u64) -> Case {
    let tile = p[0];
    let mut r = rng(seed);
    let m = size.max(1) as u32;
    let n = (size / 2 + 3) as u32;
    let kk = (size + 5) as u32;
    let a = random_f32(&mut r, (m * kk) as usize, -1.0, 1.0);
    let b = random_f32(&mut r, (kk * n) as usize, -1.0, 1.0);
    Case {
        n: size,
        args: vec![
            Arg::Buffer(BufferData::F32(a)),
            Arg::Buffer(BufferData::F32(b)),
            poisoned(ElemType::F32, (m * n) as usize),
            Arg::U32(m),
            Arg::U32(n),
            Arg::U32(kk),
        ],
        launch: LaunchDims {
            grid: [groups(n as usize, tile), groups(m as usize, tile), 1],
            block: [tile, tile, 1],
            dynamic_lds: 0,
        },
        outputs: vec![2],
    }
}

fn reference(c: &Case) -> Vec<BufferData> {
    let wide = |x: &[f32]| -> Vec<f64> { x.iter().map(|&v| v as f64).collect() };
    product_f64(&wide(f32s(c, 0)), &wide(f32s(c, 1)), c)
}

/// `a · b` summed in f64 and rounded to f32, with m, n and k the case's arguments 3, 4 and 5
/// (the matmul and GEMM argument order).
pub fn product_f64(a: &[f64], b: &[f64], c: &Case) -> Vec<BufferData> {
    let (m, n, kk) = (
        u32_arg(c, 3) as usize,
        u32_arg(c, 4) as usize,
        u32_arg(c, 5) as usize,
    );
    let mut out = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let s: f64 = (0..kk).map(|p| a[i * kk + p] * b[p * n + j]).sum();
            out[i * n + j] = s as f32;
        }
    }
    vec![BufferData::F32(out)]
}

/// The registry entry of `matmul`.
pub const MATMUL: KernelSpec = KernelSpec {
    name: "matmul",
    description: "c = a * b for an n x (k=n+5) by (n+5) x (n/2+3) product, 16x16 LDS tiles",
    build,
    make_case: make,
    reference,
    // Terms in [-1, 1], k of them summed in f32.
    tolerance: Tolerance {
        abs: 1e-4,
        rel: 1e-5,
    },
    default_n: 100,
    tuning: Some(Tuning {
        params: PARAMS,
        build: build_with,
        make_case: make_tiled,
    }),
};

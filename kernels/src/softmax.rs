//! Softmax over the rows of a matrix, one wave per row, with wave reductions.

use crate::*;
use kjit_frontend::{Dim, KernelBuilder, ReduceOp};
use kjit_ir::ElemType;

/// Work-items per workgroup: one wave per row.
pub const BLOCK: u32 = 64;
/// Rows of the input.
pub const ROWS: u32 = 7;

/// `out[r, j] = exp(x[r, j] - max_r) / sum_j exp(x[r, j] - max_r)`, computed with `exp2`.
pub fn build() -> BuildResult {
    let k = KernelBuilder::new("softmax");
    k.allow_contraction(true);
    let x = k.buffer::<f32>("x");
    let out = k.buffer_mut::<f32>("out");
    let cols = k.arg::<u32>("cols");
    let row = k.group_id(Dim::X);
    let lid = k.local_id(Dim::X);
    let base = row * cols;
    let step = k.lit(BLOCK);
    // Row maximum.
    let m = k.var_named("m", k.lit(f32::NEG_INFINITY));
    k.for_range(lid, cols, step, |j| {
        m.set(m.get().max(k.load(&x, base + j)));
    });
    let m = k.wave_reduce(ReduceOp::Max, m.get());
    // Sum of exponentials.
    let log2e = std::f32::consts::LOG2_E;
    let s = k.var_named("s", k.lit(0.0f32));
    k.for_range(lid, cols, step, |j| {
        let e = ((k.load(&x, base + j) - m) * log2e).exp2();
        s.set(s.get() + e);
    });
    let inv = k.wave_reduce(ReduceOp::Add, s.get()).rcp();
    k.for_range(lid, cols, step, |j| {
        let e = ((k.load(&x, base + j) - m) * log2e).exp2();
        k.store(&out, base + j, e * inv);
    });
    k.finish()
}

fn make(n: usize, seed: u64) -> Case {
    let mut r = rng(seed);
    let cols = n.max(1) as u32;
    let len = (cols * ROWS) as usize;
    let x = random_f32(&mut r, len, -8.0, 8.0);
    Case {
        n,
        args: vec![
            Arg::Buffer(BufferData::F32(x)),
            poisoned(ElemType::F32, len),
            Arg::U32(cols),
        ],
        launch: LaunchDims {
            grid: [ROWS, 1, 1],
            block: [BLOCK, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![1],
    }
}

fn reference(c: &Case) -> Vec<BufferData> {
    let x = f32s(c, 0);
    let cols = u32_arg(c, 2) as usize;
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(cols) {
        let m = row.iter().fold(f64::NEG_INFINITY, |a, v| a.max(*v as f64));
        let s: f64 = row.iter().map(|v| (*v as f64 - m).exp()).sum();
        out.extend(row.iter().map(|v| ((*v as f64 - m).exp() / s) as f32));
    }
    vec![BufferData::F32(out)]
}

/// The registry entry of `softmax`.
pub const SOFTMAX: KernelSpec = KernelSpec {
    name: "softmax",
    description:
        "softmax over each row of a 7 x n matrix, one wave per row (wave_reduce max/add, exp2, rcp)",
    build,
    make_case: make,
    reference,
    // exp2 and rcp within a few ulp, a sum of n positive terms.
    tolerance: Tolerance {
        abs: 1e-7,
        rel: 1e-5,
    },
    default_n: 1000,
    tuning: None,
};

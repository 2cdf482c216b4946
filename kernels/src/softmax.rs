//! Softmax over the rows of a matrix, one wave per row, with wave reductions.

use crate::*;
use kjit_frontend::{Dim, KernelBuilder, ReduceOp, Val};
use kjit_ir::ElemType;

/// Work-items per workgroup: one wave per row.
pub const BLOCK: u32 = 64;
/// Rows of the input.
pub const ROWS: u32 = 7;

/// Tuning parameter: waves per row (the workgroup is `64 * waves` work-items, one row each).
/// One wave leaves most SIMDs idle on a few long rows; more waves split each row and combine
/// their partial maximum and sum through LDS.
const PARAMS: &[TuneParam] = &[TuneParam {
    name: "waves",
    values: &[1, 2, 4, 8],
}];

/// `out[r, j] = exp(x[r, j] - max_r) / sum_j exp(x[r, j] - max_r)`, computed with `exp2`.
pub fn build() -> BuildResult {
    build_waves(1)
}

/// [`build`] with `waves` waves per row: each wave reduces its columns, then the waves' results
/// are combined through LDS (one slot per wave, a barrier, every work-item reads all slots).
fn build_waves(waves: u32) -> BuildResult {
    let k = KernelBuilder::new("softmax");
    k.allow_contraction(true);
    let x = k.buffer::<f32>("x");
    let out = k.buffer_mut::<f32>("out");
    let cols = k.arg::<u32>("cols");
    let row = k.group_id(Dim::X);
    let lid = k.local_id(Dim::X);
    let base = row * cols;
    let step = k.lit(BLOCK * waves);
    // The workgroup's combination of each wave's `v` by `op` (the wave's own value with one wave).
    let combine = |name: &str, op: ReduceOp, v: Val<'_, f32>| {
        let v = k.wave_reduce(op, v);
        if waves == 1 {
            return v;
        }
        let slots = k.lds::<f32>(name, waves);
        k.if_((lid % BLOCK).eq(0u32), || k.store(&slots, lid / BLOCK, v));
        k.barrier();
        let mut all = k.load(&slots, k.lit(0u32));
        for w in 1..waves {
            let o = k.load(&slots, k.lit(w));
            all = match op {
                ReduceOp::Max => all.max(o),
                _ => all + o,
            };
        }
        all
    };
    // Row maximum.
    let m = k.var_named("m", k.lit(f32::NEG_INFINITY));
    k.for_range(lid, cols, step, |j| {
        m.set(m.get().max(k.load(&x, base + j)));
    });
    let m = combine("row_max", ReduceOp::Max, m.get());
    // Sum of exponentials.
    let log2e = std::f32::consts::LOG2_E;
    let s = k.var_named("s", k.lit(0.0f32));
    k.for_range(lid, cols, step, |j| {
        let e = ((k.load(&x, base + j) - m) * log2e).exp2();
        s.set(s.get() + e);
    });
    let inv = combine("row_sum", ReduceOp::Add, s.get()).rcp();
    k.for_range(lid, cols, step, |j| {
        let e = ((k.load(&x, base + j) - m) * log2e).exp2();
        k.store(&out, base + j, e * inv);
    });
    k.finish()
}

fn make(n: usize, seed: u64) -> Case {
    make_with(&[1], n, seed)
}

fn make_with(p: &[u32], n: usize, seed: u64) -> Case {
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
            block: [BLOCK * p[0], 1, 1],
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
    tuning: Some(Tuning {
        params: PARAMS,
        build: |p| build_waves(p[0]),
        make_case: make_with,
    }),
};

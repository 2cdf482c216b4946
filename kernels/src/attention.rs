//! Attention forward on the matrix cores: `o = softmax(q·kᵀ · scale) · v` for one head, f16
//! inputs and f32 output. q is `sq × d`, k and v are `sk × d`, row-major. Needs MFMA (gfx90a,
//! gfx942).
//!
//! One wave per 32 query rows. (1) Scores: for each block of 32 keys, `q·kᵀ` with
//! `v_mfma_f32_32x32x8_f16` — k's rows are the columns of kᵀ with d contiguous, so both inputs are
//! packed `frag_load`s from global memory — scaled and written to LDS as `[row][key]` f32.
//! (2) Softmax per row: lane `l` takes row `l mod 32` and every other key from `l / 32`; the two
//! halves meet by `wave_shuffle` with lane `l xor 32`; the probabilities go back to LDS as f16.
//! (3) `p·v`: p's rows are packed `frag_load`s from LDS; v's columns are gathered from global
//! memory with `frag_build`.
//!
//! Limits (build-time): `d` is 32 or 64; `sk` at most [`MAX_KEYS`]; `sq` and `sk` multiples of
//! 32 (the launch covers `sq / 32` workgroups of 64 work-items).

use crate::*;
use kjit_frontend::{f16, Dim, KernelBuilder, MfmaOp};
use kjit_ir::ElemType;

/// Most keys: the scores of 32 rows (f32) and their probabilities (f16) fit in LDS.
pub const MAX_KEYS: u32 = 256;

/// Builds the kernel for head dimension `d` (32 or 64).
pub fn build_attention(d: u32) -> BuildResult {
    let k = KernelBuilder::new("attention");
    let q = k.buffer::<f16>("q");
    let kmat = k.buffer::<f16>("k");
    let v = k.buffer::<f16>("v");
    let o = k.buffer_mut::<f32>("o");
    let sk = k.arg::<u32>("sk");
    let scale = k.arg::<f32>("scale");
    let scores = k.lds::<f32>("scores", 32 * MAX_KEYS);
    let probs = k.lds::<f16>("probs", 32 * MAX_KEYS);
    let op = MfmaOp::F32_32x32x8F16;
    let fin = op.input_frag();
    let facc = op.acc_frag();
    let q0 = k.group_id(Dim::X) * 32u32;
    let (lrow, lk) = k.mfma_input_coords(op);

    // (1) Scores, one block of 32 keys at a time.
    k.for_range(k.lit(0u32), sk, k.lit(32u32), |kb| {
        let acc = k.frag_var(k.frag_zero(facc));
        for d0 in (0..d).step_by(8) {
            let a = k.frag_load(&q, (q0 + lrow) * d + (lk + d0), fin);
            let b = k.frag_load(&kmat, (kb + lrow) * d + (lk + d0), fin);
            acc.set(k.mfma(op, a, b, acc.get()));
        }
        let s = acc.get();
        for item in 0..facc.len {
            let (r, c) = k.mfma_acc_coords(op, item);
            k.store(
                &scores,
                r * MAX_KEYS + kb + c,
                s.extract::<f32>(item) * scale,
            );
        }
    });
    k.barrier();
    // (2) Softmax of row `lrow` over the keys `half, half + 2, ...`, halves joined across lanes.
    let half = k.lane_id() / 32u32;
    let other = k.lane_id() ^ 32u32;
    let row = lrow * MAX_KEYS;
    let mx = k.var(k.lit(f32::NEG_INFINITY));
    k.for_range(half, sk, k.lit(2u32), |j| {
        mx.set(mx.get().max(k.load(&scores, row + j)))
    });
    let m = mx.get().max(k.wave_shuffle(mx.get(), other));
    let sum = k.var(k.lit(0.0f32));
    k.for_range(half, sk, k.lit(2u32), |j| {
        let e = (k.load(&scores, row + j) - m).exp();
        k.store(&scores, row + j, e);
        sum.set(sum.get() + e);
    });
    let total = sum.get() + k.wave_shuffle(sum.get(), other);
    let inv = total.rcp();
    k.for_range(half, sk, k.lit(2u32), |j| {
        let p = k.load(&scores, row + j) * inv;
        k.store(&probs, row + j, p.cast::<f16>());
    });
    k.barrier();
    // (3) o = p·v, 32 columns of d at a time.
    for d0 in (0..d).step_by(32) {
        let acc = k.frag_var(k.frag_zero(facc));
        k.for_range(k.lit(0u32), sk, k.lit(8u32), |k0| {
            let a = k.frag_load(&probs, row + k0 + lk, fin);
            let parts: Vec<_> = (0..4u32)
                .map(|j| k.load(&v, (k0 + lk + j) * d + (d0 + lrow)))
                .collect();
            let b = k.frag_build(fin, &parts);
            acc.set(k.mfma(op, a, b, acc.get()));
        });
        let out = acc.get();
        for item in 0..facc.len {
            let (r, c) = k.mfma_acc_coords(op, item);
            k.store(&o, (q0 + r) * d + (d0 + c), out.extract::<f32>(item));
        }
    }
    k.finish()
}

/// A case of `sq` query rows, `sk` keys and head dimension `d`, inputs in [-1, 1].
pub fn attention_case(sq: u32, sk: u32, d: u32, seed: u64) -> Case {
    let mut r = rng(seed);
    let mut half_data = |len: u32| {
        BufferData::F16(
            random_f32(&mut r, len as usize, -1.0, 1.0)
                .into_iter()
                .map(f16::from_f32)
                .collect(),
        )
    };
    let (qd, kd, vd) = (half_data(sq * d), half_data(sk * d), half_data(sk * d));
    Case {
        n: sq as usize,
        args: vec![
            Arg::Buffer(qd),
            Arg::Buffer(kd),
            Arg::Buffer(vd),
            poisoned(ElemType::F32, (sq * d) as usize),
            Arg::U32(sk),
            Arg::F32(1.0 / (d as f32).sqrt()),
        ],
        launch: LaunchDims {
            grid: [sq / 32, 1, 1],
            block: [64, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![3],
    }
}

/// The CPU attention in f64 (softmax in f64, no f16 rounding of the probabilities).
pub fn attention_reference(c: &Case) -> Vec<BufferData> {
    let h = |i: usize| -> Vec<f64> {
        match &c.args[i] {
            Arg::Buffer(BufferData::F16(x)) => x.iter().map(|v| v.to_f64()).collect(),
            _ => panic!("argument {i} is not an f16 matrix"),
        }
    };
    let (q, kk, v) = (h(0), h(1), h(2));
    let sk = u32_arg(c, 4) as usize;
    let scale = match c.args[5] {
        Arg::F32(s) => s as f64,
        _ => panic!("scale"),
    };
    let d = kk.len() / sk;
    let sq = q.len() / d;
    let mut out = vec![0f32; sq * d];
    for i in 0..sq {
        let s: Vec<f64> = (0..sk)
            .map(|j| scale * (0..d).map(|t| q[i * d + t] * kk[j * d + t]).sum::<f64>())
            .collect();
        let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
        let z: f64 = e.iter().sum();
        for t in 0..d {
            let acc: f64 = (0..sk).map(|j| e[j] / z * v[j * d + t]).sum();
            out[i * d + t] = acc as f32;
        }
    }
    vec![BufferData::F32(out)]
}

/// The registry entry: d = 64; `n` query rows (rounded up to 32) against 128 keys.
pub const ATTENTION: KernelSpec = KernelSpec {
    name: "attention",
    description: "o = softmax(q k^T / sqrt(d)) v, one head, d = 64, f16 in, f32 out, MFMA 32x32x8",
    build: || build_attention(64),
    make_case: |n, seed| attention_case((n.max(1) as u32).div_ceil(32) * 32, 128, 64, seed),
    reference: attention_reference,
    // Probabilities rounded to f16 (relative 2^-11) before p·v; outputs are convex combinations
    // of values in [-1, 1].
    tolerance: Tolerance {
        abs: 2e-3,
        rel: 2e-3,
    },
    default_n: 64,
    tuning: None,
};

//! A wave-level permute: `out[i] = in[idx[i]]` where `idx[i]` names a lane of `i`'s own wave.

use crate::*;
use kjit_frontend::{Dim, KernelBuilder};
use kjit_ir::ElemType;
use rand::RngExt;

/// Work-items per workgroup (a multiple of the wave size, so waves cover aligned slices).
pub const BLOCK: u32 = 128;

/// Tuning parameter: the workgroup size (the default first; the code does not depend on it).
const BLOCKS: &[TuneParam] = &[TuneParam {
    name: "block",
    values: &[BLOCK, 64, 256, 512, 1024],
}];

/// `out[i] = wave_shuffle(in[i], idx[i])`.
pub fn build() -> BuildResult {
    let k = KernelBuilder::new("wave_permute");
    let input = k.buffer::<f32>("input");
    let idx = k.buffer::<u32>("idx");
    let out = k.buffer_mut::<f32>("out");
    let i = k.global_id(Dim::X);
    let v = k.load(&input, i);
    let src = k.load(&idx, i);
    k.store(&out, i, k.wave_shuffle(v, src));
    k.finish()
}

fn make(n: usize, seed: u64) -> Case {
    make_with(&[BLOCK], n, seed)
}

fn make_with(p: &[u32], n: usize, seed: u64) -> Case {
    let block = p[0];
    let mut r = rng(seed);
    let input = random_f32(&mut r, n, -100.0, 100.0);
    // Lane numbers, some beyond 63 (taken modulo 64).
    let idx: Vec<u32> = (0..n).map(|_| r.random_range(0..200u32)).collect();
    Case {
        n,
        args: vec![
            Arg::Buffer(BufferData::F32(input)),
            Arg::Buffer(BufferData::U32(idx)),
            poisoned(ElemType::F32, n),
        ],
        launch: LaunchDims {
            grid: [groups(n, block), 1, 1],
            block: [block, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![2],
    }
}

fn reference(c: &Case) -> Vec<BufferData> {
    let (input, idx) = (f32s(c, 0), u32s(c, 1));
    let out = (0..c.n)
        .map(|i| {
            let src = (i / 64) * 64 + (idx[i] % 64) as usize;
            // Lanes past the end exist (the grid is whole workgroups) and loaded 0.
            input.get(src).copied().unwrap_or(0.0)
        })
        .collect();
    vec![BufferData::F32(out)]
}

/// The registry entry of `wave_permute`.
pub const WAVE_PERMUTE: KernelSpec = KernelSpec {
    name: "wave_permute",
    description: "out[i] = in[idx[i]] within each wave of 64 (wave_shuffle)",
    build,
    make_case: make,
    reference,
    tolerance: Tolerance::EXACT,
    default_n: 10_000,
    tuning: Some(Tuning {
        params: BLOCKS,
        build: |_| build(),
        make_case: make_with,
    }),
};

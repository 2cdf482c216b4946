//! LDS tree reduction: each workgroup sums its slice of the input, the last wave's worth of
//! partial sums by a wave reduction.

use crate::*;
use kjit_frontend::{Dim, KernelBuilder, Lds, ReduceOp, Val};
use kjit_ir::ElemType;

/// Work-items per workgroup (a power of two).
pub const BLOCK: u32 = 256;

/// Lanes of a wave: the last round of the tree is one wave's lanes, reduced without LDS.
const WAVE: u32 = 64;

/// `partial[g] = sum of x[g*256 .. g*256+256]` (missing elements count as 0). The rounds that
/// span more than one wave halve the active work-items through LDS with a barrier after each
/// (unrolled: `BLOCK` is a constant); the last 64 partial sums are the first wave's lanes, added
/// by a wave reduction (DPP) without LDS or barriers.
///
/// The kernel declares its workgroup size: the tile and the unrolled rounds hold for `BLOCK`
/// work-items only, so the group size is a constant (`gid = group * 256 + lid`) instead of a
/// hidden argument loaded with `s_load_dword` on the path to the first global load, and a launch
/// of another size is refused.
pub fn build() -> BuildResult {
    let k = KernelBuilder::new("reduce_sum");
    k.workgroup_size([BLOCK, 1, 1]);
    let x = k.buffer::<f32>("x");
    let partial = k.buffer_mut::<f32>("partial");
    let tile = k.lds::<f32>("tile", BLOCK);
    let lid = k.local_id(Dim::X);
    k.store(&tile, lid, k.load(&x, k.global_id(Dim::X)));
    k.barrier();
    let mut s = BLOCK / 2;
    while s > WAVE {
        k.if_(lid.lt(k.lit(s)), || {
            let v = k.load(&tile, lid) + k.load(&tile, lid + s);
            k.store(&tile, lid, v);
        });
        k.barrier();
        s /= 2;
    }
    k.if_(lid.lt(k.lit(WAVE)), || {
        let v = k.load(&tile, lid) + k.load(&tile, lid + WAVE);
        let sum = k.wave_reduce(ReduceOp::Add, v);
        k.if_(lid.eq(k.lit(0u32)), || {
            k.store(&partial, k.group_id(Dim::X), sum);
        });
    });
    k.finish()
}

/// Sums `tile[0 .. 2*half]` into `tile[0]` (`half` a power of two, uniform): halves the active
/// work-items each step, with a barrier after each. `tile` must be written and a barrier passed
/// before the call; `lid` is the work-item's index in the workgroup.
pub fn tree_sum<'k>(
    k: &'k KernelBuilder,
    tile: &Lds<'k, f32>,
    lid: Val<'k, u32>,
    half: Val<'k, u32>,
) {
    let s = k.var_named("s", half);
    k.while_(
        || s.get().gt(k.lit(0u32)),
        || {
            k.if_(lid.lt(s.get()), || {
                let v = k.load(tile, lid) + k.load(tile, lid + s.get());
                k.store(tile, lid, v);
            });
            k.barrier();
            s.set(s.get() >> 1u32);
        },
    );
}

fn make(n: usize, seed: u64) -> Case {
    let mut r = rng(seed);
    let x = random_f32(&mut r, n, -1.0, 1.0);
    let g = groups(n, BLOCK);
    Case {
        n,
        args: vec![
            Arg::Buffer(BufferData::F32(x)),
            poisoned(ElemType::F32, g as usize),
        ],
        launch: LaunchDims {
            grid: [g, 1, 1],
            block: [BLOCK, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![1],
    }
}

fn reference(c: &Case) -> Vec<BufferData> {
    let x = f32s(c, 0);
    let g = c.launch.grid[0] as usize;
    let sums = (0..g)
        .map(|i| {
            x.iter()
                .skip(i * BLOCK as usize)
                .take(BLOCK as usize)
                .map(|v| *v as f64)
                .sum::<f64>() as f32
        })
        .collect();
    vec![BufferData::F32(sums)]
}

/// The registry entry of `reduce_sum`.
pub const REDUCE_SUM: KernelSpec = KernelSpec {
    name: "reduce_sum",
    description: "per-workgroup sums of 256 elements by an LDS tree reduction, the last 64 by a wave reduction",
    build,
    make_case: make,
    reference,
    // 256 terms in [-1, 1], 8 levels of f32 additions.
    tolerance: Tolerance {
        abs: 1e-4,
        rel: 1e-5,
    },
    default_n: 10_000,
    tuning: None,
};

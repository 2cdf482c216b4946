//! Kernels written with the pipelined tile loop (`KernelBuilder::pipeline`): the persistent
//! vector add that streams its inputs through LDS with `stages` buffers (double-buffered by
//! default).

use crate::vector::BLOCK;
use crate::*;
use kjit_frontend::{Dim, KernelBuilder, TileSharing, Val};

/// Workgroups of the persistent launch: MI300X's compute units (`LaunchDims::persistent` on
/// the default machine), fewer when the vector needs fewer.
pub const PERSISTENT_GRID: u32 = 304;

/// The stages `kjit tune` tries for every pipelined kernel; the first (double buffering) is the
/// default.
const PARAMS: &[TuneParam] = &[TuneParam {
    name: "stages",
    values: &[2, 1, 3, 4],
}];

/// `c = a + b`, persistent (a grid-stride loop over 256-element tiles, one tile per
/// workgroup per round) with `stages` LDS buffers per input: each lane copies its elements of
/// `a` and `b` to its own LDS words (direct-to-LDS loads), and tile `t + stages` is requested
/// as soon as tile `t` has been read. Past the end, loads give 0 and stores are dropped, so the
/// loop needs no bound checks (speculative fills). Workgroups must be 256 work-items.
pub fn build_vector_add_pipelined(stages: u32) -> BuildResult {
    let k = KernelBuilder::new("vector_add_pipelined");
    let a = k.buffer::<f32>("a");
    let b = k.buffer::<f32>("b");
    let c = k.buffer_mut::<f32>("c");
    let n = c.len();
    k.workgroup_size([BLOCK, 1, 1]);
    let p = k
        .pipeline(stages, TileSharing::WavePrivate)
        .speculative(true);
    let ta = p.staged::<f32>("a", BLOCK);
    let tb = p.staged::<f32>("b", BLOCK);
    let slot = k.lane_slot();
    let stride = k.global_size(Dim::X);
    let group_first = k.group_id(Dim::X) * k.group_size(Dim::X);
    let lid = k.local_id(Dim::X);
    let index = |t| group_first + t * stride + lid;
    p.run(
        |t| (group_first + t * stride).lt(n),
        |s, t| {
            s.copy(&k, &ta, slot, &a, index(t));
            s.copy(&k, &tb, slot, &b, index(t));
        },
        |s, t| {
            let sum = k.load(s.buffer(&ta), slot) + k.load(s.buffer(&tb), slot);
            k.store(&c, index(t), sum);
        },
    );
    k.finish()
}

fn build_default() -> BuildResult {
    build_vector_add_pipelined(PARAMS[0].values[0])
}

fn build_tuned(p: &[u32]) -> BuildResult {
    build_vector_add_pipelined(p[0])
}

/// A case with `grid` workgroups of 256.
pub fn case_with_grid(n: usize, seed: u64, grid: u32) -> Case {
    crate::vector::case_abc(n, seed, grid, BLOCK)
}

fn make_default(n: usize, seed: u64) -> Case {
    case_with_grid(n, seed, groups(n, BLOCK).min(PERSISTENT_GRID))
}

fn make_tuned(_p: &[u32], n: usize, seed: u64) -> Case {
    make_default(n, seed)
}

/// The registry entry of `vector_add_pipelined`.
pub const VECTOR_ADD_PIPELINED: KernelSpec = KernelSpec {
    name: "vector_add_pipelined",
    description: "c = a + b, persistent grid, inputs streamed through LDS (stages 2 by default)",
    build: build_default,
    make_case: make_default,
    reference: crate::vector::ref_vector_add,
    tolerance: Tolerance::EXACT,
    default_n: 10_000,
    tuning: Some(Tuning {
        params: PARAMS,
        build: build_tuned,
        make_case: make_tuned,
    }),
};

/// `c[m x n] = a[m x k] * b[k x n]` (row-major) with `TILE x TILE` workgroups, streaming the
/// `k` dimension through `stages` pairs of LDS tiles (`TileSharing::Workgroup`: every
/// work-item reads a row of `a`'s tile and a column of `b`'s, so the tiles are shared). Elements
/// outside the matrices are masked by index, not by value: a lane whose element is outside
/// loads from index `u32::MAX`, which is past the buffer's end and gives 0 (the buffer
/// descriptor's range check), so every copy is a plain dword load stored at the lane's own LDS
/// word — a direct-to-LDS load. The output store is masked the same way. Workgroups must be
/// `TILE x TILE` work-items.
pub fn build_matmul_pipelined(stages: u32) -> BuildResult {
    use crate::matmul::TILE;
    let k = KernelBuilder::new("matmul_pipelined");
    k.allow_contraction(true);
    let a = k.buffer::<f32>("a");
    let b = k.buffer::<f32>("b");
    let c = k.buffer_mut::<f32>("c");
    let m = k.arg::<u32>("m");
    let n = k.arg::<u32>("n");
    let kk = k.arg::<u32>("k");
    k.workgroup_size([TILE, TILE, 1]);
    // Tiles past the last one read only out-of-range indices (0) and add 0 * 0.
    let p = k.pipeline(stages, TileSharing::Workgroup).speculative(true);
    let ta = p.staged::<f32>("tile_a", TILE * TILE);
    let tb = p.staged::<f32>("tile_b", TILE * TILE);
    let (lx, ly) = (k.local_id(Dim::X), k.local_id(Dim::Y));
    let row = k.group_id(Dim::Y) * TILE + ly;
    let col = k.group_id(Dim::X) * TILE + lx;
    let slot = k.lane_slot();
    let outside = k.lit(u32::MAX);
    let acc = k.var_named("acc", k.lit(0.0f32));
    // This lane's elements of a and b at step t are `a_first + t * TILE` and
    // `b_first + t * TILE * n`: the per-lane products are made once, before the loop.
    let (a_first, b_first) = (row * kk + lx, ly * n + col);
    p.run(
        |t| (t * TILE).lt(kk),
        |s, t| {
            let a_col = t * TILE + lx;
            let ai = k.select(row.lt(m) & a_col.lt(kk), a_first + t * TILE, outside);
            s.copy(&k, &ta, slot, &a, ai);
            let b_row = t * TILE + ly;
            let bi = k.select(b_row.lt(kk) & col.lt(n), b_first + t * TILE * n, outside);
            s.copy(&k, &tb, slot, &b, bi);
        },
        |s, _| {
            let (sa, sb) = (s.buffer(&ta), s.buffer(&tb));
            k.for_range(k.lit(0u32), k.lit(TILE), k.lit(1u32), |i| {
                acc.set(acc.get() + k.load(sa, ly * TILE + i) * k.load(sb, i * TILE + lx));
            });
        },
    );
    let ci = k.select(row.lt(m) & col.lt(n), row * n + col, outside);
    k.store(&c, ci, acc.get());
    k.finish()
}

fn matmul_default() -> BuildResult {
    build_matmul_pipelined(PARAMS[0].values[0])
}

fn matmul_tuned(p: &[u32]) -> BuildResult {
    build_matmul_pipelined(p[0])
}

fn matmul_case(_p: &[u32], n: usize, seed: u64) -> Case {
    (crate::matmul::MATMUL.make_case)(n, seed)
}

/// The registry entry of `matmul_pipelined`.
pub const MATMUL_PIPELINED: KernelSpec = KernelSpec {
    name: "matmul_pipelined",
    description: "matmul with its k loop streamed through `stages` LDS tile pairs (2 by default)",
    build: matmul_default,
    make_case: crate::matmul::MATMUL.make_case,
    reference: crate::matmul::MATMUL.reference,
    tolerance: crate::matmul::MATMUL.tolerance,
    default_n: 100,
    tuning: Some(Tuning {
        params: PARAMS,
        build: matmul_tuned,
        make_case: matmul_case,
    }),
};

/// Output rows per stencil tile; a tile holds them plus a halo row above and below.
pub const STENCIL_ROWS: u32 = 4;
/// Work-items per stencil workgroup: each copies one tile column; the first 254 compute one
/// output column each.
pub const STENCIL_BLOCK: u32 = 256;

/// One Jacobi step of a 5-point stencil on a `width x height` row-major grid (the border
/// copied), as a persistent loop over tiles of `STENCIL_ROWS` rows by 254 columns: workgroup
/// `g` takes tiles `g, g + grid, ...`; each tile with its halo (one row above and below, one
/// column left and right: `(STENCIL_ROWS + 2) x 256` words) is streamed into LDS through
/// `stages` buffers, and the work-items read their neighbours from LDS (`TileSharing::Workgroup`:
/// columns 63/64 etc. come from other waves). Workgroups must be `STENCIL_BLOCK` work-items.
///
/// The fill does not mask halo words outside the grid: only border cells, which copy their own
/// value, lie next to them, so no output reads them. Each copy is `r * w + c` as a `u32`: left
/// of or above the grid it is negative, past the buffer's end (the load gives 0); right of or
/// below the grid it loads whatever the buffer holds there. Each word costs one add and the
/// direct-to-LDS load instead of four compares and a select. `out` holds `width x height`
/// cells, so a row below the grid is past its end and its stores are dropped without a row
/// check; the column mask (one compare per tile) decides which lanes store. The interior check
/// is a uniform row part and a column part made once per tile.
pub fn build_stencil_pipelined(stages: u32) -> BuildResult {
    let k = KernelBuilder::new("stencil_pipelined");
    let input = k.buffer::<f32>("input");
    let width = k.arg::<u32>("width");
    let height = k.arg::<u32>("height");
    let out = k.buffer_mut::<f32>("out");
    k.workgroup_size([STENCIL_BLOCK, 1, 1]);
    let inner = STENCIL_BLOCK - 2;
    let strips = (width + (inner - 1)) / inner;
    let blocks = (height + (STENCIL_ROWS - 1)) / STENCIL_ROWS;
    let tiles = strips * blocks;
    // The divisor of each tile's `/` and `%`: `strips`, never 0 (it is 0 only for an empty
    // grid, which has no tiles to store), so the divisions need no zero check.
    let strips_div = strips.max(1u32);
    // A tile past the last starts below the grid: it stores nothing (its rows fail `r < h`).
    let p = k.pipeline(stages, TileSharing::Workgroup).speculative(true);
    let tile = p.staged::<f32>("tile", (STENCIL_ROWS + 2) * STENCIL_BLOCK);
    let slot = k.lane_slot();
    let lid = k.local_id(Dim::X);
    let g = k.group_id(Dim::X);
    let grid = k.num_groups(Dim::X);
    let outside = k.lit(u32::MAX);
    // The tile column a lane computes, less one: lanes 254 and 255 (which store nothing)
    // read as lane 253 does, so no lane reads past the tile (lane 255's `column` read of the
    // bottom row would be the word after it). One `v_min_u32` before the loop.
    let lane = lid.min(STENCIL_BLOCK - 3);
    let w = width.cast::<i32>();
    // Each stage's tile origin, set by its fill and read by its compute (a stage's buffer is
    // refilled only after its compute), so each tile's `/` and `%` are done once.
    let origins: Vec<_> = (0..stages.max(1))
        .map(|_| (k.var(k.lit(0i32)), k.var(k.lit(0i32))))
        .collect();
    // `width * rr` for each tile row, made once before the loop: each copy's and each store's
    // index is then one add of an invariant SGPR to the row's first index (one
    // `v_add_lshl_u32`), not a shift-and-add chain rebuilt per tile.
    // Row 0 adds nothing (a constant 0 made here would be an opaque value in the loop).
    let steps: Vec<_> = (0..STENCIL_ROWS + 2)
        .map(|rr| (rr > 0).then(|| width * rr))
        .collect();
    let row_below = |x, rr: u32| match steps[rr as usize] {
        Some(step) => x + step,
        None => x,
    };
    p.run(
        |t| (g + t * grid).lt(tiles),
        |s, t| {
            let (row0, col1) = tile_origin(g, grid, strips_div, t);
            origins[s.index()].0.set(row0);
            origins[s.index()].1.set(col1);
            // The index of the halo row above, then one row down per copy (u32 wraps as i32
            // does, and a divergent `x + y` index is one `v_add_lshl_u32`); lane `lid` copies
            // tile column `lid`, grid column `col1 - 1 + lid` (lane 0: the left halo).
            let first = ((row0 - 1i32) * w + (col1 - 1i32) + lid.cast::<i32>()).cast::<u32>();
            for rr in 0..STENCIL_ROWS + 2 {
                let index = row_below(first, rr);
                s.copy(&k, &tile, slot + rr * STENCIL_BLOCK, &input, index);
            }
        },
        |s, _| {
            let (row0, col1) = (origins[s.index()].0.get(), origins[s.index()].1.get());
            // Lane `lid` computes tile column `lid + 1` (lanes 0..=253; the tile's columns 0
            // and 255 are the halo), so the lanes that store are a prefix: `lid < bound`, one
            // compare of the work-item id itself. (With lane `lid` on tile column `lid`, the
            // owners 1..=254 are a range, one compare of `lid - 1`: a VALU and a VGPR live
            // through the loop.) A stored column is never left of the grid (`col1 >= 0`), and
            // output rows never above it, so a store needs only `c < w` and `r < h`: `bound` is
            // `min(w - col1, 254)` (`col1 <= w` in every tile, speculative ones too). A range
            // `1 <= x <= n - 2` is one unsigned compare `x - 1 < n - 2` (for `n` in 0..2, `n - 2`
            // wraps past every `x - 1` but `u32::MAX`, which is `x = 0`).
            let c = col1 + lid.cast::<i32>();
            let buf = s.buffer(&tile);
            let bound = (width - col1.cast::<u32>()).min(STENCIL_BLOCK - 2);
            let own = lid.lt(bound);
            // Row `rr`'s element is `base + rr * w`; a row below the grid needs no check: with
            // `c < w` its index is at least `h * w`, past `out`'s end (the store is dropped).
            let base = row0 * w + c;
            let inner_column = (c - 1i32).cast::<u32>().lt(width - 2u32);
            // Each halo row's own column once: row rr + 1 is row rr's `down` and row rr + 2's `up`.
            let column: Vec<_> = (0..STENCIL_ROWS + 2)
                .map(|rr| k.load(buf, lane + (rr * STENCIL_BLOCK + 1)))
                .collect();
            for rr in 0..STENCIL_ROWS {
                let r = row0 + rr as i32;
                let mid = (rr + 1) * STENCIL_BLOCK + 1;
                let (up, centre, down) = (
                    column[rr as usize],
                    column[rr as usize + 1],
                    column[rr as usize + 2],
                );
                // Neighbours at tile columns `lane` and `lane + 2`: every lane reads at
                // `lane * 4` plus a constant offset.
                let l = k.load(buf, lane + (mid - 1));
                let rt = k.load(buf, lane + (mid + 1));
                let interior = (r - 1i32).cast::<u32>().lt(height - 2u32) & inner_column;
                let v = k.select(interior, (up + down + l + rt) * 0.25f32, centre);
                let idx = k.select(own, row_below(base.cast::<u32>(), rr), outside);
                k.store(&out, idx, v);
            }
        },
    );
    k.finish()
}

/// The first output row and first output column of tile `t` of workgroup `g` (its left halo
/// column is one before).
fn tile_origin<'k>(
    g: Val<'k, u32>,
    grid: Val<'k, u32>,
    strips: Val<'k, u32>,
    t: Val<'k, u32>,
) -> (Val<'k, i32>, Val<'k, i32>) {
    let id = g + t * grid;
    let row0 = (id / strips * STENCIL_ROWS).cast::<i32>();
    let col1 = (id % strips * (STENCIL_BLOCK - 2)).cast::<i32>();
    (row0, col1)
}

fn stencil_default() -> BuildResult {
    build_stencil_pipelined(PARAMS[0].values[0])
}

fn stencil_tuned(p: &[u32]) -> BuildResult {
    build_stencil_pipelined(p[0])
}

/// The grid of `stencil_pipelined` for `n`: `n x (n/2 + 3)` cells.
fn stencil_dims(n: usize) -> (u32, u32) {
    (n.max(1) as u32, (n / 2 + 3) as u32)
}

fn stencil_case(n: usize, seed: u64) -> Case {
    let (w, h) = stencil_dims(n);
    let mut r = rng(seed);
    let input = random_f32(&mut r, (w * h) as usize, 0.0, 1.0);
    let inner = STENCIL_BLOCK - 2;
    let tiles = w.div_ceil(inner) * h.div_ceil(STENCIL_ROWS);
    Case {
        n,
        args: vec![
            Arg::Buffer(BufferData::F32(input)),
            Arg::U32(w),
            Arg::U32(h),
            poisoned(kjit_ir::ElemType::F32, (w * h) as usize),
        ],
        launch: LaunchDims {
            // About four tiles per workgroup, so that the pipeline has a steady state.
            grid: [(tiles / 4).clamp(1, PERSISTENT_GRID), 1, 1],
            block: [STENCIL_BLOCK, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![3],
    }
}

fn stencil_case_tuned(_p: &[u32], n: usize, seed: u64) -> Case {
    stencil_case(n, seed)
}

fn stencil_reference(c: &Case) -> Vec<BufferData> {
    let input = f32s(c, 0);
    let (w, h) = (u32_arg(c, 1) as usize, u32_arg(c, 2) as usize);
    let mut out = input.to_vec();
    for r in 1..h.saturating_sub(1) {
        for col in 1..w.saturating_sub(1) {
            let i = r * w + col;
            out[i] = (input[i - w] + input[i + w] + input[i - 1] + input[i + 1]) * 0.25;
        }
    }
    vec![BufferData::F32(out)]
}

/// The registry entry of `stencil_pipelined`.
pub const STENCIL_PIPELINED: KernelSpec = KernelSpec {
    name: "stencil_pipelined",
    description: "5-point Jacobi step on n x (n/2+3), 4x254 tiles with an LDS halo, stages buffers",
    build: stencil_default,
    make_case: stencil_case,
    reference: stencil_reference,
    tolerance: Tolerance::EXACT,
    default_n: 300,
    tuning: Some(Tuning {
        params: PARAMS,
        build: stencil_tuned,
        make_case: stencil_case_tuned,
    }),
};

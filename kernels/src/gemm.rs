//! GEMM on the matrix cores: `c[m×n] = a[m×k] · b[k×n]` (row-major) with f16, bf16 or f32
//! inputs and f32 accumulation and output, for any m, n, k. Needs MFMA (gfx90a, gfx942).
//!
//! A workgroup computes a `bm × bn` block of `c` with `bm/wm · bn/wn` waves, each a `wm × wn`
//! tile as a grid of 32×32 MFMA accumulators (`v_mfma_f32_32x32x8_{f16,bf16}`,
//! `v_mfma_f32_32x32x2_f32`). Per step of `bk` along k, the workgroup stages the a-block and
//! the b-block transposed in LDS as k-fragments (k contiguous, so every MFMA input fragment
//! is one `ds_read_b64`): f16/bf16 steps of up to 32 as unpadded k-group planes whose XOR
//! keeps the reads and stores free of bank conflicts (16 KiB for 128 × 128 × 32: four
//! workgroups per CU), others as `[bm][bk+pad]` and `[bn][bk+pad]` rows, the pad doing the
//! same (`Layout`). Software pipelining through registers: a loop iteration at step k0
//! issues step k0's MFMAs (on fragments read in the iteration before, except the first `lead`
//! sub-steps', issued there) together with step k0 + bk's LDS stores, then a barrier, step
//! k0 + 2·bk's global loads (into the registers the stores just read) and step k0 + bk's LDS
//! reads, then (one stage) a second barrier after the first `lead` sub-steps' MFMAs.
//! With two stages (double buffering) the stores go into the other stage and the second
//! barrier is left out, for twice the LDS. The lanes of each store are ordered so that every
//! pass of the bank array hits each bank once (`Interleave`).
//!
//! Loads: a as packed fragments when `k` is a multiple of the fragment length (else each step
//! loads it element by element into LDS behind a uniform branch); b as dword pieces of two or
//! four columns per lane and row, regrouped into k-fragments (`v_perm_b32` per dword of f16).
//! Every per-lane index and limit is computed once before the loop, one base per block: the
//! uniform parts (k0, the rows or k-groups a job lies from job 0) are added in the loop, so
//! jobs share their base's register. Two loops: the interior one (blocks inside c, k and n
//! aligned, while the step it loads is a whole step of k) is one basic block whose loads need
//! no range test (one `v_add_lshl_u32` each); the general one (the last steps, every step of
//! edge and unaligned blocks) tests each load against a
//! uniform `k − k0` (a compare, a select) and takes the unaligned paths behind their
//! uniform branches.
//!
//! Edges: only k is checked per load (a product from past k must not enter the sum); rows of a
//! past m and columns of b past n feed only rows and columns of c that are never stored, and
//! past the buffers' ends the range check reads 0. A block inside c stores its results
//! unchecked; an edge block drops each result outside c by pointing its index past the buffer.
//!
//! With f16/bf16, one stage and the loads after the stores, the interior loop takes two steps
//! per iteration (`pair_a`, the default): a is loaded as 16-byte pieces holding a k-group of
//! each step, so a row's two steps are one whole 128-byte line (the vector memory unit is
//! charged per line), half of the pieces in each step; the one-step loop does what is left.
//!
//! Block order: by default a workgroup renumbers its block so that each XCD runs a contiguous
//! run of super-rows of 8 row tiles, column by column (`super_rows`): the blocks an XCD holds
//! at once share their a and b blocks in its L2.
//!
//! Tuning parameters (`kjit tune gemm`): `bm`, `bn` (block), `bk` (step), `wn` (wave tile
//! 64×64 or 64×128, smaller where the block is), `stages` (1 or 2 LDS buffers), `early` (the next step's global loads
//! before this step's LDS stores) and `lead` (sub-steps whose MFMAs precede the iteration's
//! last barrier).

use crate::*;
use kjit_frontend::{
    f16, BuildError, Dim, Frag, FragElem, FragType, FragVar, KernelBuilder, KernelError, Lds,
    MfmaOp, Val, Var,
};
use kjit_ir::ElemType;
use std::ops::{Add, Div, Mul, Rem};

/// Columns of b one lane loads per row (two `buffer_load_dword` of f16, four of f32), when
/// the block has that many per thread (else 2): their regrouping into k-fragments is one
/// `v_perm_b32` per dword of f16.
const QUAD: u32 = 4;

/// An element index past any buffer (a multiple of 4, so aligned for every fragment): loads
/// there give 0 and stores are dropped.
const OUTSIDE: u32 = 0xffff_fff0;

/// Block and step sizes of one GEMM build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmTiles {
    /// Rows of `c` per workgroup.
    pub bm: u32,
    /// Columns of `c` per workgroup.
    pub bn: u32,
    /// Step along k staged in LDS per iteration.
    pub bk: u32,
    /// Columns of a wave's tile (64 or 128; at most `bn`): 128 gives a 64×128 wave tile, a
    /// third fewer LDS fragment reads per MFMA for twice the accumulator registers.
    pub wn: u32,
    /// LDS buffers per staged block: 1 (stores, barrier, reads, a barrier before the step's
    /// last MFMAs) or 2 (double buffering: the next step's blocks go into the other buffer,
    /// one barrier per step, twice the LDS).
    pub stages: u32,
    /// Whether a step issues the next step's global loads before it stores its own blocks
    /// into LDS (else after): the loads get the stores' and the barrier's time more, for one
    /// step's blocks more in registers. Pays where the loads are the bound and the registers
    /// are free (n = 64 with 256 × 64 blocks: two workgroups per CU whatever the registers).
    pub early: bool,
    /// Sub-steps of a step whose MFMAs issue right after its LDS reads, before the barrier
    /// that ends a loop iteration (at most the step's sub-steps); the others' go with the next
    /// step's LDS stores. More fill the wait at that barrier with MFMAs (the square problem's
    /// bound: 3); fewer leave the first stretch more MFMAs to hide the loads behind (the
    /// n = 64 problem, bound by a's loads: 0). Measured: docs/mfma-gemm.md.
    pub lead: u32,
    /// Whether the interior loop loads a two steps at a time (f16/bf16, one stage, loads after
    /// the stores; else ignored): one 16-byte piece per lane and row holds a k-group of each
    /// step, so a row's 128 bytes of the two steps are one whole line. The vector memory unit is
    /// charged per line an instruction touches, and a row's 64 bytes of one step of 32 are half
    /// a line, so a's loads cost half. The two steps take the even and the odd k-groups of
    /// their 2·`bk` window (a and b alike), so a piece splits into its two steps' fragments
    /// without a select. Half of a's pieces are loaded in each step (`pair_steps`), so the
    /// unit's work after a barrier is the same every step. The default; not a tuning
    /// parameter (an eighth tuning value sets it). Square problem on `mi300x`: 100,319 →
    /// 98,709 cycles (docs/mfma-gemm.md).
    pub pair_a: bool,
    /// Block order: 0 runs block (x, y) of the launch grid at column tile x, row tile y.
    /// `g > 0` renumbers the blocks so that each of the device's [`PARTITIONS`] (workgroup
    /// `i` runs on partition `i mod PARTITIONS`, the dispatcher's rule for gfx942's XCDs) takes
    /// a contiguous run of the tile order, and that order goes through c in super-rows of `g`
    /// row tiles, column by column (Triton's grouped order): the blocks one partition runs at
    /// once share a's and b's blocks in its L2. A permutation of the blocks, so any grid is
    /// covered. 8 by default: the square problem on `mi300x` 98,833 → 89,371 cycles (its 152
    /// resident blocks per XCD: 8 row tiles × 19 column tiles, 3.4 MiB of a and b, inside the
    /// 4 MiB L2; docs/mfma-gemm.md). Not a tuning parameter (every tuning choice would double
    /// `tuning_params`' run); a ninth tuning value sets it.
    pub super_rows: u32,
}

/// Partitions (L2 domains) the block order of [`GemmTiles::super_rows`] spreads its runs
/// over: gfx942's 8 XCDs, to which the dispatcher hands workgroups round-robin (AMD's MI300
/// workgroup placement; docs/timing.md "Dispatcher"). On a device with fewer partitions the
/// order is still a permutation.
pub const PARTITIONS: u32 = 8;

impl GemmTiles {
    /// Wave tile: 64×`wn`, or the block's size where it is smaller.
    fn wave(&self) -> (u32, u32) {
        (self.bm.min(64), self.bn.min(self.wn))
    }

    /// Tiles from `bm,bn,bk[,wn,stages[,early[,lead[,pair_a[,super_rows]]]]]` (the optional
    /// ones default to [`DEFAULT_TILES`]'s; `early` and `pair_a` are 0 or 1).
    pub fn parse(text: &str) -> Result<GemmTiles, String> {
        let v = text
            .split(',')
            .map(|x| x.trim().parse::<u32>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("tiles `{text}`: {e}"))?;
        if !(3..=9).contains(&v.len()) || [5, 7].iter().any(|&i| v.get(i).is_some_and(|&e| e > 1)) {
            return Err(format!(
                "tiles `{text}`: want bm,bn,bk[,wn,stages[,early (0 or 1)[,lead[,pair_a (0 or 1)[,super_rows]]]]]"
            ));
        }
        let d = DEFAULT_TILES;
        Ok(GemmTiles {
            bm: v[0],
            bn: v[1],
            bk: v[2],
            wn: v.get(3).copied().unwrap_or(d.wn),
            stages: v.get(4).copied().unwrap_or(d.stages),
            early: v.get(5).map_or(d.early, |&e| e == 1),
            lead: v.get(6).copied().unwrap_or(d.lead),
            pair_a: v.get(7).map_or(d.pair_a, |&e| e == 1),
            super_rows: v.get(8).copied().unwrap_or(d.super_rows),
        })
    }

    /// Work-items per workgroup.
    pub fn threads(&self) -> u32 {
        let (wm, wn) = self.wave();
        64 * (self.bm / wm) * (self.bn / wn)
    }
}

/// The default tiles for f16/bf16: 128×128 blocks of four 64×64 waves, steps of 32 (on the
/// `mi300x` model 327.5 TFLOP/s against 255.6 with steps of 16, both at occupancy 2;
/// `docs/performance-log.md`).
pub const DEFAULT_TILES: GemmTiles = GemmTiles {
    bm: 128,
    bn: 128,
    bk: 32,
    wn: 64,
    stages: 1,
    early: false,
    lead: 3,
    pair_a: true,
    super_rows: 8,
};

/// The default tiles for f32: steps of 16 (with 32, twice the registers per step spill and
/// occupancy drops to 1: 57.8 against 97.2 TFLOP/s on the model).
pub const F32_TILES: GemmTiles = GemmTiles {
    bk: 16,
    ..DEFAULT_TILES
};

/// The default tiles for inputs of `elem`.
pub fn default_tiles(elem: FragElem) -> GemmTiles {
    match elem {
        FragElem::F32 => F32_TILES,
        _ => DEFAULT_TILES,
    }
}

/// The MFMA operation for inputs of `elem`.
pub fn gemm_op(elem: FragElem) -> MfmaOp {
    match elem {
        FragElem::F16 => MfmaOp::F32_32x32x8F16,
        FragElem::Bf16 => MfmaOp::F32_32x32x8Bf16,
        _ => MfmaOp::F32_32x32x2F32,
    }
}

/// Builds the GEMM for inputs of `elem` (f16, bf16 as bit patterns in f16 buffers, or f32).
pub fn build_gemm(name: &str, elem: FragElem, t: GemmTiles) -> BuildResult {
    match elem {
        FragElem::F32 => build_typed::<f32>(name, elem, t),
        _ => build_typed::<f16>(name, elem, t),
    }
}

fn build_typed<T: kjit_frontend::Num>(name: &str, elem: FragElem, t: GemmTiles) -> BuildResult {
    if !(1..=2).contains(&t.stages) || !matches!(t.wn, 64 | 128) {
        return Err(KernelError {
            kernel: name.into(),
            errors: vec![BuildError {
                call: "build_gemm".into(),
                site: None,
                message: format!(
                    "tiles {t:?}: `stages` must be 1 or 2 and `wn` 64 or 128 (LDS buffers per \
                     block, columns per wave)"
                ),
            }],
        });
    }
    let k = KernelBuilder::new(name);
    let a = k.buffer::<T>("a");
    let b = k.buffer::<T>("b");
    let c = k.buffer_mut::<f32>("c");
    let m = k.arg::<u32>("m");
    let n = k.arg::<u32>("n");
    let kk = k.arg::<u32>("k");
    let op = gemm_op(elem);
    let fin = op.input_frag();
    let kl = fin.len as u32;
    let (_, _, kstep) = op.dims();
    let layout = Layout::choose(elem, t, kl);
    // One block per stage, the stages one after the other.
    let (a_len, b_len) = (layout.len(t.bm), layout.len(t.bn));
    let ta = k.lds::<T>("tile_a", a_len * t.stages);
    let tb = k.lds::<T>("tile_b", b_len * t.stages);
    let threads = t.threads();
    let (wm, wn) = t.wave();
    let (tm, tn) = (wm / 32, wn / 32);
    let tid = k.local_id(Dim::X);
    let wave = tid / 64u32;
    // The waves in row-major order over the block (spelled without `/ 1` and `% 1`, which the
    // optimizer does not fold yet and which become an integer division).
    let waves_n = t.bn / wn;
    let (wave_row, wave_col) = if waves_n == 1 {
        (wave * wm, k.lit(0u32))
    } else {
        (wave / waves_n * wm, wave % waves_n * wn)
    };
    let (row_tile, col_tile) = block_tile(&k, t.super_rows);
    let m0 = row_tile * t.bm;
    let n0 = col_tile * t.bn;
    let outside = k.lit(OUTSIDE);
    let zero = k.lit(0u32);

    let accs: Vec<_> = (0..tm * tn)
        .map(|_| k.frag_var(k.frag_zero(op.acc_frag())))
        .collect();
    // Packed a-fragments need every row to start at a multiple of the fragment length.
    let a_packed = (kk % kl).eq(0u32);
    let frag = FragType::new(elem, kl as u8);
    // The a-block is bm rows of bk, moved as fragments of kl consecutive k-values; the b-block
    // bk rows of bn, loaded as `quad` columns from kl consecutive rows and regrouped into the
    // columns' k-fragments. Job q of a thread is fragment `tid + q * threads`; where the
    // threads do not divide the block evenly, the jobs past it wrap around and repeat others
    // (the same values to the same LDS words), so no lane needs a divergent branch.
    let per_row = t.bk / kl;
    let a_jobs = (t.bm * per_row).div_ceil(threads);
    // Fewer columns per job where the block has too few for every thread (no lane repeats
    // another's loads).
    let quad = if t.bn / QUAD * per_row >= threads {
        QUAD
    } else {
        QUAD / 2
    };
    let b_jobs = (t.bn / quad * per_row).div_ceil(threads);
    // A job's columns are loaded in dword pieces (f16x2 or f32), each at a constant offset
    // from one address: a piece of a wider load would cost a register copy. Piece p lies
    // `p · bn / pieces` columns on, so the lanes of one load cover whole cache lines of a row.
    // Pieces need rows that start at a multiple of their length (`b_packed`).
    let piece_len = 4 / elem.bytes();
    let piece = FragType::new(elem, piece_len as u8);
    let pieces = (quad / piece_len).max(1);
    let b_packed = (n % piece_len).eq(0u32);
    // Column c (< quad) of a job, from its first column.
    let job_col = |c: u32| c / piece_len * (t.bn / pieces) + c % piece_len;
    // Index of the masked b-loads: past any buffer for every piece's offset too.
    let outside_b = k.lit(OUTSIDE - t.bn);
    let job = |q: u32, jobs: u32| {
        let id = tid + q * threads;
        if (q + 1) * threads > jobs {
            id % jobs
        } else {
            id
        }
    };
    // Which lanes store which fragments, chosen so that the lanes of each pass of a store
    // instruction through the bank array hit every bank once (`Interleave`). In dwords: a
    // fragment is `w` dwords long.
    let (w, dw) = (kl * elem.bytes() / 4, |x: u32| x * elem.bytes() / 4);
    let a_order = Interleave::choose(t.bm, per_row, w, |row, g| dw(layout.at_const(t.bm, row, g)));
    let pairs = t.bn / quad;
    let col_step = quad / pieces;
    let b_order = Interleave::choose(per_row, pairs, w, |g, pair| {
        dw(layout.at_const(t.bn, pair * col_step, g))
    });
    // A job's (row or column, k-group).
    let a_group = |q: u32| a_order.split(job(q, t.bm * per_row), zero);
    let b_group = |q: u32| {
        let (g, pair) = b_order.split(job(q, pairs * per_row), zero);
        (pair * col_step, g)
    };
    // The same with the group's first k.
    let a_job = |q: u32| {
        let (row, g) = a_group(q);
        (row, g * kl)
    };
    let b_job = |q: u32| {
        let (col, g) = b_group(q);
        (col, g * kl)
    };
    // Per-thread parts of the global indices and range checks, outside the loop. A load at
    // k-offset `kc + off` within the step reads when `limit < (k - k0) - off` (saturating, a
    // uniform value), where `limit` is `kc`, or `u32::MAX` where the load must read nothing.
    // Rows of a past m and columns of b past n need no check: they only feed rows and columns
    // of c that are not stored (and read 0 past the buffers' ends). Only k needs one: the sum
    // must not take products from past k. A job that is the thread's job 0 moved by whole
    // rounds of the block reuses job 0's per-lane values (plus a uniform offset), so every
    // job costs no registers of its own.
    let never = k.lit(u32::MAX);
    let limit = |ok: Val<'_, bool>, off: Val<'_, u32>| k.select(ok, off, never);
    // Job q is job 0 moved by whole lines (rows of a, k-groups of b) if the shift is a whole
    // period of the lanes' order: how many.
    let moved = |q: u32, jobs: u32, order: &Interleave| {
        let shift = q * threads;
        (q > 0 && (q + 1) * threads <= jobs && shift.is_multiple_of(order.period()))
            .then_some(shift / order.per)
    };
    // a-job q: (index of its fragment at k0 = 0, k-offset beyond `kc` of the limit's test,
    // limit). The packed load reads only when rows start at fragment multiples (else
    // `unaligned_a` overwrites its LDS block).
    let mut a_at: Vec<LoadAt<'_>> = Vec::new();
    for q in 0..a_jobs {
        let at = match moved(q, t.bm * per_row, &a_order) {
            Some(rows) => LoadAt {
                by_k: rows,
                ..a_at[0]
            },
            None => {
                let (row, kc) = a_job(q);
                LoadAt::new((m0 + row) * kk + kc, 0, limit(a_packed, kc))
            }
        };
        a_at.push(at);
    }
    // b-job q, row j: the same; the pieces are read only when n is a multiple of their length
    // (else `unaligned_b` overwrites their LDS block).
    let mut b_at: Vec<Vec<LoadAt<'_>>> = Vec::new();
    for q in 0..b_jobs {
        let rows = match moved(q, pairs * per_row, &b_order) {
            Some(lines) => b_at[0]
                .iter()
                .map(|&at| LoadAt {
                    by_n: at.by_n + lines * kl,
                    off: at.off + lines * kl,
                    ..at
                })
                .collect(),
            None => {
                let (col, kc) = b_job(q);
                let base = kc * n + n0 + col;
                let lim = limit(b_packed, kc);
                (0..kl)
                    .map(|j| LoadAt {
                        by_n: j,
                        ..LoadAt::new(base, j, lim)
                    })
                    .collect()
            }
        };
        b_at.push(rows);
    }
    // Where many loads would share a base, each uniform part costs an SGPR through the loop:
    // past `SHARED_BASES` they are folded into per-load bases before the loop instead.
    let shared = a_at.iter().chain(b_at.iter().flatten());
    let share = shared.filter(|l| l.by_k + l.by_n > 0).count() <= SHARED_BASES;
    if !share {
        for l in a_at.iter_mut().chain(b_at.iter_mut().flatten()) {
            let base = match (l.by_k, l.by_n) {
                (0, 0) => l.base,
                (r, 0) => l.base + kk * r,
                (0, j) => l.base + n * j,
                (r, j) => l.base + kk * r + n * j,
            };
            *l = LoadAt::new(base, l.off, l.lim);
        }
    }
    // `pair_a` (the interior loop only): a two steps at a time, one piece of both steps'
    // k-groups per lane and row; step s of a pair at k0 takes the k-groups 2g + s of
    // [k0, k0 + 2·bk) into LDS k-group g, for a and b alike. Per-lane bases of a job's piece
    // and of b's rows of its k-group in step 0 (jobs moved by whole rounds as above).
    // Its loads share bases the same way, so blocks past `SHARED_BASES` keep the one-step loop.
    let pair = t.pair_a && share && kl > 1 && kl * elem.bytes() == 8 && t.stages == 1 && !t.early;
    let pfrag = FragType::new(elem, 2 * kl as u8);
    let mut pa_at: Vec<LoadAt<'_>> = Vec::new();
    let mut pb_at: Vec<Vec<LoadAt<'_>>> = Vec::new();
    if pair {
        for q in 0..a_jobs {
            let at = match moved(q, t.bm * per_row, &a_order) {
                Some(rows) => LoadAt {
                    by_k: rows,
                    ..pa_at[0]
                },
                None => {
                    let (row, kc) = a_job(q);
                    LoadAt::new((m0 + row) * kk + 2 * kc, 0, never)
                }
            };
            pa_at.push(at);
        }
        for q in 0..b_jobs {
            let rows = match moved(q, pairs * per_row, &b_order) {
                Some(lines) => pb_at[0]
                    .iter()
                    .map(|&at| LoadAt {
                        by_n: at.by_n + 2 * lines * kl,
                        ..at
                    })
                    .collect(),
                None => {
                    let (col, kc) = b_job(q);
                    let base = kc * (2 * n) + n0 + col;
                    (0..kl)
                        .map(|j| LoadAt {
                            by_n: j,
                            ..LoadAt::new(base, j, never)
                        })
                        .collect()
                }
            };
            pb_at.push(rows);
        }
    }
    // A load's index at a step's uniform start `u` (k0 for a, k0 · n for b): its per-lane
    // base plus a uniform part made here (in the loop), so jobs moved by whole rounds share
    // their base's register.
    fn load_index<'k>(
        at: &LoadAt<'k>,
        u: Val<'k, u32>,
        kk: Val<'k, u32>,
        n: Val<'k, u32>,
    ) -> Val<'k, u32> {
        let mut u = u;
        if at.by_k > 0 {
            u = u + kk * at.by_k;
        }
        match at.by_n {
            0 => {}
            1 => u = u + n,
            j => u = u + n * j,
        }
        at.base + u
    }
    // k - k0, or 0 past the end (uniform).
    let rest = |k0: Val<'_, u32>| k.select(k0.lt(kk), kk - k0, k.lit(0u32));
    // Global loads of the blocks at k0 (into registers): a-fragments as loaded, b-elements
    // packed into fragments only when stored (so the packing waits for the loads after the
    // step's MFMAs, not before). `full`: the step lies inside k and the rows and pieces are
    // aligned (the interior loop), so every load reads and needs no range test.
    let load_stage = |k0: Val<'_, u32>, full: bool| -> Staged<'_> {
        let vars: Vec<_> = (0..a_jobs).map(|_| k.frag_var(k.frag_zero(frag))).collect();
        let b_vars: Vec<Vec<Vec<_>>> = (0..b_jobs)
            .map(|_| {
                (0..kl)
                    .map(|_| {
                        (0..pieces)
                            .map(|_| k.frag_var(k.frag_zero(piece)))
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let k0n = k0 * n;
        let rem = rest(k0);
        let room = |off: u32| rem.max(off) - off;
        for (l, v) in a_at.iter().zip(&vars) {
            let at = load_index(l, k0, kk, n);
            let at = match full {
                true => at,
                false => k.select(l.lim.lt(room(l.off)), at, outside),
            };
            v.set(k.frag_load(&a, at, frag));
        }
        for (rows, vars) in b_at.iter().zip(&b_vars) {
            for (l, pieces) in rows.iter().zip(vars) {
                let at = load_index(l, k0n, kk, n);
                let at = match full {
                    true => at,
                    false => k.select(l.lim.lt(room(l.off)), at, outside_b),
                };
                for (p, v) in pieces.iter().enumerate() {
                    v.set(k.frag_load(&b, at + job_col(p as u32 * piece_len), piece));
                }
            }
        }
        Staged::read(&vars, &b_vars)
    };
    // The staged blocks into LDS, each job's place as an index and a constant: a job moved by
    // whole rounds from job 0 is job 0's index plus a constant, the store's immediate offset
    // (`frag_store_at`), so it needs no address register of its own.
    let mut a_lds: Vec<(Val<'_, u32>, u32)> = Vec::new();
    for q in 0..a_jobs {
        let shift = moved(q, t.bm * per_row, &a_order).and_then(|rows| layout.line_shift(rows));
        let at = match shift {
            Some(off) => (a_lds[0].0, off),
            None => {
                let (row, g) = a_group(q);
                (layout.at(t.bm, row, g), 0)
            }
        };
        a_lds.push(at);
    }
    // Per b-job, one place per column within a piece (column `col + lo`, lo < piece_len):
    // with k-group planes the columns of a piece lie apart by a per-lane XOR, not a constant.
    let mut b_lds: Vec<Vec<(Val<'_, u32>, u32)>> = Vec::new();
    for q in 0..b_jobs {
        let shift = moved(q, pairs * per_row, &b_order).and_then(|gs| layout.group_shift(gs));
        let at = match shift {
            Some(off) => b_lds[0].iter().map(|&(at, o)| (at, o + off)).collect(),
            None => {
                let (col, g) = b_group(q);
                layout.lines_at(t.bn, col, g, piece_len)
            }
        };
        b_lds.push(at);
    }
    // Stores of a-job q's fragment, and of column c of b-job q's, into the stage at `oa`/`ob`.
    let store_a = |q: u32, oa: Option<Val<'_, u32>>, f: Frag<'_>| {
        let (at, off) = a_lds[q as usize];
        k.frag_store_at(&ta, shifted(at, oa), off, f);
    };
    let store_b = |q: u32, c: u32, ob: Option<Val<'_, u32>>, f: Frag<'_>| {
        let (at, off) = b_lds[q as usize][(c % piece_len) as usize];
        let far = layout
            .line_shift(job_col(c) - c % piece_len)
            .expect("pieces lie whole XOR spans apart");
        k.frag_store_at(&tb, shifted(at, ob), off + far, f);
    };
    // Rows that do not start at a fragment multiple (k not a multiple of kl): the step's a-block
    // element by element, straight into LDS (after the prefetched zeros, before the barrier).
    // A uniform branch inside the loop whose values do not leave it, so no join copies wait
    // for the prefetching loads; with aligned rows it is skipped.
    let unaligned_a = |k0: Val<'_, u32>, oa: Option<Val<'_, u32>>| {
        k.if_(!a_packed, || {
            let rem = rest(k0);
            for q in 0..a_jobs {
                let (row, kc) = a_job(q);
                let at = (m0 + row) * kk + k0 + kc;
                let parts: Vec<Val<'_, T>> = (0..kl)
                    .map(|j| {
                        let ok = (kc + j).lt(rem);
                        k.load(&a, k.select(ok, at + j, outside))
                    })
                    .collect();
                store_a(q, oa, k.frag_build(frag, &parts));
            }
        });
    };
    // Odd n with f16 (pieces not aligned): the step's b-block element by element, straight
    // into LDS, as `unaligned_a`.
    let unaligned_b = |k0: Val<'_, u32>, ob: Option<Val<'_, u32>>| {
        k.if_(!b_packed, || {
            let rem = rest(k0);
            for q in 0..b_jobs {
                let (col, kc) = b_job(q);
                let gc = n0 + col;
                for c in 0..quad {
                    let parts: Vec<Val<'_, T>> = (0..kl)
                        .map(|j| {
                            let gc = gc + job_col(c);
                            let ok = gc.lt(n) & (kc + j).lt(rem);
                            let at = (k0 + kc + j) * n + gc;
                            k.load(&b, k.select(ok, at, outside))
                        })
                        .collect();
                    store_b(q, c, ob, k.frag_build(frag, &parts));
                }
            }
        });
    };
    // The staged blocks of step k0 into the stage at element offsets (oa, ob) of the LDS
    // blocks, and the unaligned rows and columns behind their uniform branches.
    // Where the jobs wrap around, two waves store the same fragment. With aligned rows they
    // store the same values; with unaligned ones each would store its prefetched zeros and then
    // `unaligned_*`'s values, and one wave's zeros could land after the other's values. So
    // there the staged stores are skipped when the unaligned path writes the block (a uniform
    // branch; blocks whose jobs do not wrap, such as the defaults, need none).
    let a_wraps = kl > 1 && a_jobs * threads > t.bm * per_row;
    let b_wraps = piece_len > 1 && b_jobs * threads > t.bn / quad * per_row;
    let guarded = |wraps: bool, packed: Val<'_, bool>, store: &dyn Fn()| {
        if wraps {
            k.if_(packed, store);
        } else {
            store();
        }
    };
    // `aligned`: the rows and pieces are known to be aligned (the interior loop), so neither
    // the unaligned paths nor their guards are needed.
    let store_stage = |st: &Staged<'_>, k0: Val<'_, u32>, (oa, ob): Offsets<'_>, aligned: bool| {
        let guarded = |wraps: bool, packed: Val<'_, bool>, store: &dyn Fn()| {
            guarded(wraps && !aligned, packed, store)
        };
        guarded(a_wraps, a_packed, &|| {
            for q in 0..a_jobs {
                store_a(q, oa, st.a[q as usize]);
            }
        });
        guarded(b_wraps, b_packed, &|| {
            for q in 0..b_jobs {
                let rows = &st.b[q as usize];
                for c in 0..quad {
                    let parts: Vec<Val<'_, T>> = rows
                        .iter()
                        .map(|r| r[(c / piece_len) as usize].extract::<T>((c % piece_len) as u8))
                        .collect();
                    store_b(q, c, ob, k.frag_build(frag, &parts));
                }
            }
        });
        if aligned {
            return;
        }
        if kl > 1 {
            unaligned_a(k0, oa);
        }
        unaligned_b(k0, ob);
    };
    // Where this lane's MFMA inputs start in the LDS blocks (row or column lrow, k-values from
    // lk); every other input is a constant further.
    let lane = k.lane_id();
    let (lrow, lg) = (lane % 32u32, lane / 32u32);
    let subs = t.bk / kstep;
    // Sub-step s reads k-group `lg + s · kstep / kl`; tile row i is 32 lines further.
    let a_rd = layout.reads_at(t.bm, wave_row + lrow, lg, kstep / kl, subs);
    let b_rd = layout.reads_at(t.bn, wave_col + lrow, lg, kstep / kl, subs);
    // Software pipelining (module docs): the global loads run two steps ahead of the MFMAs
    // and one ahead of the stores. With one stage the barrier after the stores lets every
    // wave read them, and the one after the reads lets the next stores overwrite them. With
    // two, the stores go into the other stage: one barrier per step (it orders both the
    // stores of step t + 1 before its reads and the reads of step t before the stores of
    // step t + 2). A k tail is masked by the general loop's load indices, unaligned a-rows
    // go through `unaligned_a`.
    let double = t.stages == 2;
    // Element offsets of a stage in the a- and b-blocks.
    fn offsets(stage: Val<'_, u32>, lens: (u32, u32)) -> Offsets<'_> {
        (Some(stage * lens.0), Some(stage * lens.1))
    }
    // The prologue stores step 0, loads step 1 and reads step 0; each loop iteration then
    // does step k0's MFMAs (on the fragments read before) with step k0 + bk's stores, a
    // barrier, step k0 + 2·bk's loads and step k0 + bk's reads.
    let first = load_stage(zero, false);
    store_stage(&first, zero, (None, None), false);
    k.barrier();
    let ahead = load_stage(k.lit(t.bk), false);
    let staged_a: Vec<_> = ahead.a.iter().map(|&f| k.frag_var(f)).collect();
    let staged_b: Vec<Vec<Vec<_>>> = ahead
        .b
        .iter()
        .map(|rows| {
            rows.iter()
                .map(|r| r.iter().map(|&x| k.frag_var(x)).collect())
                .collect()
        })
        .collect();
    // The stage step k0 is read from (0 or 1; always 0 with one stage).
    let stage = k.var_named("stage", zero);
    let t0 = k.var_named("k0", zero);
    // One k step. `fast`: the interior loop, where the step loaded here lies inside k and the
    // rows and pieces are aligned, so its loads need no range test and its stores no
    // unaligned path: the body is one basic block for the scheduler.
    let issue = |a_frags: &[Input<'_, T>], b_frags: &[Input<'_, T>]| {
        for i in 0..tm {
            for j in 0..tn {
                let acc = accs[(i * tn + j) as usize];
                let d = match (&a_frags[i as usize], &b_frags[j as usize]) {
                    (Input::Frag(x), Input::Frag(y)) => k.mfma(op, *x, *y, acc.get()),
                    (Input::One(x), Input::One(y)) => k.mfma(op, *x, *y, acc.get()),
                    _ => unreachable!("both inputs have one shape"),
                };
                acc.set(d);
            }
        }
    };
    // The step's LDS reads from the stage at (oa, ob), every sub-step's before any MFMA, and
    // the MFMAs of its first `t.lead` sub-steps; with one stage a barrier after them
    // (every wave has its fragments: the stage may be overwritten). Returns the other
    // sub-steps' inputs, whose MFMAs the next iteration issues.
    let read_step = |(oa, ob)| {
        let tile_row = |i: u32| {
            layout
                .line_shift(i * 32)
                .expect("tile rows are whole spans")
        };
        let reads: Vec<Inputs<T>> = (0..subs as usize)
            .map(|s| {
                let ((a_at, a_key, a_off), (b_at, b_key, b_off)) = (a_rd[s], b_rd[s]);
                let (a_at, b_at) = (keyed(a_at, a_key), keyed(b_at, b_key));
                let (a_at, b_at) = (shifted(a_at, oa), shifted(b_at, ob));
                let a_frags: Vec<_> = (0..tm)
                    .map(|i| fragment(&k, &ta, a_at + (a_off + tile_row(i)), fin))
                    .collect();
                let b_frags: Vec<_> = (0..tn)
                    .map(|j| fragment(&k, &tb, b_at + (b_off + tile_row(j)), fin))
                    .collect();
                (a_frags, b_frags)
            })
            .collect();
        let (first, rest) = reads.split_at((t.lead as usize).min(reads.len()));
        for (a_frags, b_frags) in first {
            issue(a_frags, b_frags);
        }
        if !double {
            k.barrier();
        }
        rest.to_vec()
    };
    let carried = Carried::new(&k, &read_step((None, None)));
    // One loop iteration at step k0: step k0's MFMAs and step k0 + bk's LDS stores (into the
    // other stage with two) in one stretch without a barrier, so the scheduler spreads the
    // MFMAs among the stores and their packing (a wave issues in order: alone it keeps the
    // matrix unit busy only with about seven other instructions between two MFMAs); a
    // barrier; step k0 + 2·bk's global loads (after the barrier, so they reuse the registers
    // the stores read: no copies that would wait for them) and step k0 + bk's reads. `early`
    // issues the loads before the stores instead. `fast`: the interior loop, where the step
    // loaded here lies inside k and the rows and pieces are aligned, so its loads need no
    // range test and its stores no unaligned path: the body is one basic block.
    let step = |fast: bool| {
        let k0 = t0.get();
        let now = Staged::read(&staged_a, &staged_b);
        let cur = stage.get();
        let other = k.lit(1u32) - cur;
        let into = if double {
            offsets(other, (a_len, b_len))
        } else {
            (None, None)
        };
        for (a_frags, b_frags) in &carried.get() {
            issue(a_frags, b_frags);
        }
        let early = t.early.then(|| load_stage(k0 + 2 * t.bk, fast));
        store_stage(&now, k0 + t.bk, into, fast);
        k.barrier();
        let next = early.unwrap_or_else(|| load_stage(k0 + 2 * t.bk, fast));
        carried.set(&read_step(into));
        for (v, f) in staged_a.iter().zip(&next.a) {
            v.set(*f);
        }
        let vars = staged_b.iter().flatten().flatten();
        for (v, x) in vars.zip(next.b.iter().flatten().flatten()) {
            v.set(*x);
        }
        if double {
            stage.set(other);
        }
        t0.set(k0 + t.bk);
    };
    // `pair_a`: the pieces of a's jobs `jobs` for the two steps from k0, and b's block of the
    // pair's step s.
    let load_pair_a = |k0: Val<'_, u32>, jobs: std::ops::Range<usize>| -> Vec<Frag<'_>> {
        pa_at[jobs]
            .iter()
            .map(|l| k.frag_load(&a, load_index(l, k0, kk, n), pfrag))
            .collect()
    };
    let load_pair_b = |k0: Val<'_, u32>, s: u32| -> Vec<Vec<Vec<Frag<'_>>>> {
        let k0n = k0 * n;
        let row = |l: &LoadAt<'_>| {
            let at = LoadAt {
                by_n: l.by_n + s * kl,
                ..*l
            };
            let at = load_index(&at, k0n, kk, n);
            (0..pieces)
                .map(|p| k.frag_load(&b, at + job_col(p * piece_len), piece))
                .collect()
        };
        pb_at
            .iter()
            .map(|rows| rows.iter().map(row).collect())
            .collect()
    };
    // Step s's fragment of a pair's piece (its k-group 2g + s).
    let half = |p: Frag<'_>, s: u32| {
        let parts: Vec<Val<'_, T>> = (0..kl)
            .map(|i| p.extract::<T>((s * kl + i) as u8))
            .collect();
        k.frag_build(frag, &parts)
    };
    // a's jobs whose pieces the first step of a pair loads; the others' pieces are loaded in
    // the second step of the iteration before, so each step loads half of a's lines.
    let first_jobs = (a_jobs / 2) as usize;
    // Steps k0 and k0 + bk of the interior loop with `pair_a`: as two `step`s, but the first
    // loads the pieces of a's first jobs for steps k0 + 2·bk and k0 + 3·bk and b's block of
    // the first of them, the second b's block of step k0 + 3·bk and then the other jobs'
    // pieces for steps k0 + 4·bk and k0 + 5·bk (into `later`, the variables that carried
    // them from the iteration before). The second step's stores split every piece into both steps'
    // fragments at once (after the loop's first barrier, so no earlier wait for the loads):
    // the odd halves are the staged a-block at the back edge.
    let pair_steps = |later: &[FragVar<'_>]| {
        let k0 = t0.get();
        let now = Staged::read(&staged_a, &staged_b);
        for (a_frags, b_frags) in &carried.get() {
            issue(a_frags, b_frags);
        }
        store_stage(&now, k0 + t.bk, (None, None), true);
        k.barrier();
        let first = load_pair_a(k0 + 2 * t.bk, 0..first_jobs);
        let even_b = load_pair_b(k0 + 2 * t.bk, 0);
        carried.set(&read_step((None, None)));
        for (a_frags, b_frags) in &carried.get() {
            issue(a_frags, b_frags);
        }
        let pieces_a: Vec<Frag<'_>> = first
            .iter()
            .copied()
            .chain(later.iter().map(|v| v.get()))
            .collect();
        let odd_a: Vec<Frag<'_>> = pieces_a.iter().map(|&f| half(f, 1)).collect();
        let even = Staged {
            a: pieces_a.iter().map(|&f| half(f, 0)).collect(),
            b: even_b,
        };
        store_stage(&even, k0 + 2 * t.bk, (None, None), true);
        k.barrier();
        // b's block first: it is stored in the next step, the pieces a step later, and the
        // loads count down in order.
        let odd_b = load_pair_b(k0 + 2 * t.bk, 1);
        let next = load_pair_a(k0 + 4 * t.bk, first_jobs..a_jobs as usize);
        carried.set(&read_step((None, None)));
        for (v, &f) in staged_a.iter().zip(&odd_a) {
            v.set(f);
        }
        for (v, &f) in later.iter().zip(&next) {
            v.set(f);
        }
        let vars = staged_b.iter().flatten().flatten();
        for (v, x) in vars.zip(odd_b.iter().flatten().flatten()) {
            v.set(*x);
        }
        t0.set(k0 + 2 * t.bk);
    };
    // The interior loop runs while the step it loads is a whole step of k, in blocks whose
    // rows and columns lie inside a and b with aligned rows and pieces; the general loop
    // while a step follows k0; the last step's MFMAs come after both. Only the uniform tests
    // differ per block.
    let inside = (m0 + t.bm).le(m) & (n0 + t.bn).le(n);
    let whole_k = kk - kk % t.bk;
    let fast_end = whole_k.max(2 * t.bk) - 2 * t.bk;
    let last_k0 = kk.max(t.bk) - t.bk;
    k.if_(inside & a_packed & b_packed, || {
        if t.early {
            // Two steps per iteration: the loads of each go into registers other than the
            // ones its stores read, and at the back edge into the ones the first step's
            // stores read (dead by then): no copies at the loop end, whose wait for the loads
            // issued in the same iteration would undo `early`.
            k.while_(
                || (t0.get() + t.bk).lt(fast_end),
                || {
                    step(true);
                    step(true);
                },
            );
        } else {
            if pair {
                // Pieces of two fragments need rows that start at their multiple. An
                // iteration at k0 loads up to step k0 + 5·bk, a whole step of k while
                // k0 + 4·bk ≤ fast_end; the one-step loop does the rest (the pieces loaded
                // for the step after the last iteration go unused).
                let aligned = (kk % (2 * kl)).eq(0u32);
                let more = || (t0.get() + 3 * t.bk).lt(fast_end);
                k.if_(aligned & more(), || {
                    let later: Vec<_> =
                        load_pair_a(t0.get() + 2 * t.bk, first_jobs..a_jobs as usize)
                            .into_iter()
                            .map(|f| k.frag_var(f))
                            .collect();
                    k.while_(more, || pair_steps(&later));
                });
            }
            k.while_(|| t0.get().lt(fast_end), || step(true));
        }
    });
    k.while_(|| t0.get().lt(last_k0), || step(false));
    for (a_frags, b_frags) in &carried.get() {
        issue(a_frags, b_frags);
    }
    // The results: each lane's element `item` of accumulator (i, j) is c[row0 + o][col0 + 32j]
    // with `o = i·32 + (row offset of item)` a constant, so one per-lane index serves all
    // stores (plus the uniform `o·n`). A block inside c stores unchecked; an edge block checks
    // the row against a per-lane limit and the column once per j.
    let (lane_row, lane_col) = k.mfma_acc_coords(op, 0);
    let row0 = m0 + wave_row + lane_row;
    let col0 = n0 + wave_col + lane_col;
    let at0 = row0 * n + col0;
    let row_room = k.select(row0.lt(m), m - row0, k.lit(0u32));
    let store_all = |checked: bool| {
        let col_ok: Vec<_> = (0..tn).map(|j| (col0 + j * 32).lt(n)).collect();
        for i in 0..tm {
            for item in 0..op.acc_frag().len {
                let o = i * 32 + acc_row(op, item);
                let at = at0 + k.lit(o) * n;
                for j in 0..tn {
                    let x = accs[(i * tn + j) as usize].get().extract::<f32>(item);
                    let at = at + j * 32;
                    if checked {
                        let ok = k.lit(o).lt(row_room) & col_ok[j as usize];
                        k.store(&c, k.select(ok, at, outside), x);
                    } else {
                        k.store(&c, at, x);
                    }
                }
            }
        }
    };
    k.if_else(inside, || store_all(false), || store_all(true));
    k.finish()
}

/// The (row, column) tile of c this workgroup computes: the launch grid's (y, x), or with
/// `super_rows > 0` the order of [`GemmTiles::super_rows`]. Uniform arithmetic, once per
/// workgroup.
fn block_tile<'k>(k: &'k KernelBuilder, super_rows: u32) -> (Val<'k, u32>, Val<'k, u32>) {
    if super_rows == 0 {
        return (k.group_id(Dim::Y), k.group_id(Dim::X));
    }
    let (cols, rows) = (k.num_groups(Dim::X), k.num_groups(Dim::Y));
    let id = k.group_id(Dim::Y) * cols + k.group_id(Dim::X);
    // Partition p = id mod P runs ids p, p + P, ... (per or per + 1 of them, the first
    // `extra` partitions one more): give it the consecutive tiles from p·per + min(p, extra).
    let count = rows * cols;
    let (per, extra) = (count / PARTITIONS, count % PARTITIONS);
    let p = id % PARTITIONS;
    let tile = p * per + p.min(extra) + id / PARTITIONS;
    // Super-rows of `super_rows` row tiles (the last one may be shorter), column-major inside.
    let band = super_rows * cols;
    let first = tile / band * super_rows;
    let height = (rows - first).min(super_rows);
    let inside = tile % band;
    (first + inside % height, inside / height)
}

/// Most global loads of a step that share a per-lane base with a uniform part made in the loop
/// (each part an SGPR through it): the default 128 × 128 f16 blocks have 6 (3 a-jobs, 3 rows
/// of b), 8 VGPRs → 2; blocks with many jobs per thread (one wave of 64 × 128, f32) have up to
/// 22 and ran out of the 102 SGPRs.
const SHARED_BASES: usize = 8;

/// Lines whose fragments the k-group planes permute among themselves: XOR keys (k-groups) stay
/// below it, and blocks and tile rows are whole multiples of it.
const SPAN: u32 = 8;

/// How a staged block of `lines` (rows of a, columns of b) × `bk` k-values lies in LDS, as
/// fragments of `kl` consecutive k-values: fragment (line, g) holds the line's k-values
/// `g·kl ..`. Every index is in elements of the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// Line after line, `stride = bk + pad` elements apart; the pad spreads a fragment read
    /// (consecutive lines, one k-group) over the banks.
    Padded { stride: u32, kl: u32 },
    /// Unpadded k-group planes: fragment (line, g) in slot `g · lines + (line ^ g)` of `kl`
    /// elements (8 bytes). A fragment read pass (16 consecutive lines of one k-group, 16-aligned)
    /// takes 16 consecutive slots, every bank once; a store pass of two lines 8 apart, 8
    /// k-groups each, hits 16 distinct bank pairs through the XOR (plain planes would put the
    /// 8 k-groups of a line on one bank pair). `bk · lines` elements: two stages of 128 × 128 ×
    /// 32 f16 blocks are 32 KiB, so two workgroups fit a CU.
    Planes { bk: u32, kl: u32 },
}

impl Layout {
    /// Planes for 8-byte fragments (f16, bf16) with at most [`SPAN`] k-groups, else padded
    /// lines. One stage of 128 × 128 × 32 planes is 16 KiB (padded: 18 KiB), so four
    /// workgroups fit a CU and, at 123 VGPRs, 4 waves per SIMD instead of 3 (square problem on
    /// the `mi300x` model: docs/mfma-gemm.md, "Now (branch g18u)"; at 3 waves, when the 125
    /// VGPRs did not fit 4, the padded lines measured faster).
    fn choose(elem: FragElem, t: GemmTiles, kl: u32) -> Layout {
        if kl * elem.bytes() == 8 && t.bk / kl <= SPAN {
            Layout::Planes { bk: t.bk, kl }
        } else {
            Layout::Padded {
                stride: t.bk + kl.max(2),
                kl,
            }
        }
    }

    /// Elements of a block of `lines`.
    fn len(&self, lines: u32) -> u32 {
        match *self {
            Layout::Padded { stride, .. } => lines * stride,
            Layout::Planes { bk, .. } => lines * bk,
        }
    }

    /// Where fragment (line, g) of a block of `lines` starts.
    fn at_const(&self, lines: u32, line: u32, g: u32) -> u32 {
        match *self {
            Layout::Padded { stride, kl } => line * stride + g * kl,
            Layout::Planes { kl, .. } => (g * lines + (line ^ g)) * kl,
        }
    }

    /// [`at_const`](Self::at_const) of per-lane values.
    fn at<'k>(&self, lines: u32, line: Val<'k, u32>, g: Val<'k, u32>) -> Val<'k, u32> {
        match *self {
            Layout::Padded { stride, kl } => line * stride + g * kl,
            Layout::Planes { kl, .. } => (g * lines + (line ^ g)) * kl,
        }
    }

    /// The constant distance of a fragment `d` lines further (same k-group), if it is one.
    fn line_shift(&self, d: u32) -> Option<u32> {
        match *self {
            Layout::Padded { stride, .. } => Some(d * stride),
            Layout::Planes { kl, .. } => d.is_multiple_of(SPAN).then_some(d * kl),
        }
    }

    /// The constant distance of a fragment `gs` k-groups further (same line), if it is one
    /// (not across planes: the XOR key changes).
    fn group_shift(&self, gs: u32) -> Option<u32> {
        match *self {
            Layout::Padded { kl, .. } => Some(gs * kl),
            Layout::Planes { .. } => None,
        }
    }

    /// Where fragments (line + lo, g) start for lo < `n` (line a multiple of `n`): one place
    /// and constant distances for padded lines, one place per lo for planes.
    fn lines_at<'k>(
        &self,
        lines: u32,
        line: Val<'k, u32>,
        g: Val<'k, u32>,
        n: u32,
    ) -> Vec<(Val<'k, u32>, u32)> {
        let at = self.at(lines, line, g);
        (0..n)
            .map(|lo| match self {
                Layout::Padded { stride, .. } => (at, lo * stride),
                Layout::Planes { .. } if lo == 0 => (at, 0),
                Layout::Planes { .. } => (self.at(lines, line + lo, g), 0),
            })
            .collect()
    }

    /// A lane's MFMA input reads of each of `subs` sub-steps: line `line`, k-group
    /// `lg + s · per_sub` (`lg < per_sub`, both powers of two) in sub-step s, as a per-lane
    /// index made once before the loop, an XOR key for it (where the read is made) and a
    /// constant. Padded lines: one index, no key. Planes: the sub-step's XOR key
    /// `s · per_sub` on the line is `s · per_sub · kl` on the index `(lg · lines + (line ^ lg))
    /// · kl` when `lines` is a power of two (`lg · lines` then lies above the XOR's bits), so
    /// one index serves every sub-step for one `v_xor_b32` per read base and sub-step (four
    /// per-lane indices per block before: 6 VGPRs of the 4-waves budget); else one index per
    /// sub-step.
    fn reads_at<'k>(
        &self,
        lines: u32,
        line: Val<'k, u32>,
        lg: Val<'k, u32>,
        per_sub: u32,
        subs: u32,
    ) -> Vec<(Val<'k, u32>, u32, u32)> {
        match *self {
            Layout::Padded { stride, kl } => {
                let at = line * stride + lg * kl;
                (0..subs).map(|s| (at, 0, s * per_sub * kl)).collect()
            }
            Layout::Planes { kl, .. } if lines.is_power_of_two() => {
                let at = (lg * lines + (line ^ lg)) * kl;
                (0..subs)
                    .map(|s| (at, s * per_sub * kl, s * per_sub * lines * kl))
                    .collect()
            }
            Layout::Planes { kl, .. } => (0..subs)
                .map(|s| {
                    let g = lg + s * per_sub;
                    ((lg * lines + (line ^ g)) * kl, 0, s * per_sub * lines * kl)
                })
                .collect(),
        }
    }
}

/// Element offsets of an LDS stage in the a- and b-blocks; `None` for the first stage.
type Offsets<'k> = (Option<Val<'k, u32>>, Option<Val<'k, u32>>);

/// A read index XORed with a sub-step's key (`Layout::reads_at`; 0: none).
fn keyed(at: Val<'_, u32>, key: u32) -> Val<'_, u32> {
    match key {
        0 => at,
        _ => at ^ key,
    }
}

/// `x` plus a stage's offset, if it has one (the first stage's is left out: the optimizer
/// does not fold `x + 0`, which cost an add and a shift per LDS store in the loop).
fn shifted<'k>(x: Val<'k, u32>, offset: Option<Val<'k, u32>>) -> Val<'k, u32> {
    match offset {
        Some(o) => x + o,
        None => x,
    }
}

/// The row of accumulator element `item` of lane 0 (`MfmaOp::acc_pos` inverted). In the f32
/// layouts every lane's element `item` lies this many rows below its element 0.
fn acc_row(op: MfmaOp, item: u8) -> u32 {
    let (m, _, _) = op.dims();
    (0..m)
        .find(|&i| op.acc_pos(i, 0) == (0, item as u32))
        .expect("every accumulator item of lane 0 holds a row of column 0")
}

/// The order in which a thread's job ids cover `majors × per` fragments (id `major · per +
/// minor` in the natural order) so that the lanes of one store fill the LDS banks once. The
/// bank array serves a store in passes of `128 / bytes per lane` lanes (`docs/timing.md`,
/// LDS); a pass that hits a bank with two dwords costs two cycles. Here a pass takes `h`
/// majors `d` apart, `pass / h` consecutive minors of each: the a-block's rows of 16 dwords at a
/// stride of 18 share two banks when adjacent, not when 8 apart; the b-block's columns, two
/// apart at a stride of 18 dwords, repeat banks after 8 lanes, not when half the pass takes
/// the next k-fragment.
struct Interleave {
    /// Minors per major.
    per: u32,
    /// Lanes per pass.
    pass: u32,
    /// Majors per pass.
    h: u32,
    /// Distance of a pass's majors.
    d: u32,
}

impl Interleave {
    /// The first conflict-free order of `majors × per` fragments of `w` dwords (fewest majors
    /// per pass, then nearest), where the fragment (major, minor) starts at dword
    /// `at(major, minor)`; the natural order where none is.
    fn choose(majors: u32, per: u32, w: u32, at: impl Fn(u32, u32) -> u32) -> Interleave {
        let pass = 32 / w;
        let natural = Interleave {
            per,
            pass,
            h: pass.div_ceil(per),
            d: 1,
        };
        let fits = |o: &Interleave| {
            o.h <= majors && per.is_multiple_of(pass / o.h) && majors.is_multiple_of(o.h * o.d)
        };
        let free = |o: &Interleave| {
            let mut banks = [0u32; 32];
            for l in 0..o.pass {
                let (major, minor) = o.split(l, 0);
                for e in 0..w {
                    banks[((at(major, minor) + e) % 32) as usize] += 1;
                }
            }
            banks.iter().all(|&b| b <= 1)
        };
        if pass > per * majors || free(&natural) {
            return natural;
        }
        let powers = |max: u32| (0..).map(|e| 1u32 << e).take_while(move |&x| x <= max);
        powers(pass)
            .filter(|&h| h >= natural.h)
            .flat_map(|h| powers(majors).map(move |d| Interleave { per, pass, h, d }))
            .find(|o| fits(o) && free(o))
            .unwrap_or(natural)
    }

    /// Ids per period: shifting an id by it moves its major by `period / per`.
    fn period(&self) -> u32 {
        self.h * self.d * self.per
    }

    /// (major, minor) of job `id`: a lane's id as a value, or a constant (`zero` its 0).
    /// Divisions by 1 are left out: the optimizer does not fold them yet, and a division the
    /// backend sees is a long integer division.
    fn split<X>(&self, id: X, zero: X) -> (X, X)
    where
        X: Copy + Add<Output = X> + Mul<u32, Output = X> + Div<u32, Output = X>,
        X: Rem<u32, Output = X>,
    {
        let div = |x: X, c: u32| if c == 1 { x } else { x / c };
        let rem = |x: X, c: u32| if c == 1 { zero } else { x % c };
        let mp = self.pass / self.h;
        let minor_blocks = self.per / mp;
        let (l, blk) = (rem(id, self.pass), div(id, self.pass));
        let (b, r) = (
            div(blk, self.d * minor_blocks),
            rem(blk, self.d * minor_blocks),
        );
        let minor = rem(r, minor_blocks) * mp + rem(l, mp);
        let major = b * (self.h * self.d) + div(r, minor_blocks) + div(l, mp) * self.d;
        (major, minor)
    }
}

/// Where a global load of a step reads: its index at k0 = 0 (a per-lane base plus the uniform
/// `k · by_k + n · by_n`), the k-offset beyond its `kc` that its range test adds, and its
/// per-lane limit (`kc`, or `u32::MAX` to read nothing).
#[derive(Clone, Copy)]
struct LoadAt<'k> {
    base: Val<'k, u32>,
    by_k: u32,
    by_n: u32,
    off: u32,
    lim: Val<'k, u32>,
}

impl<'k> LoadAt<'k> {
    fn new(base: Val<'k, u32>, off: u32, lim: Val<'k, u32>) -> Self {
        LoadAt {
            base,
            by_k: 0,
            by_n: 0,
            off,
            lim,
        }
    }
}

/// One step's blocks in registers: the a-fragments and each b-job's column runs per row (in
/// dword pieces).
struct Staged<'k> {
    a: Vec<Frag<'k>>,
    b: Vec<Vec<Vec<Frag<'k>>>>,
}

impl<'k> Staged<'k> {
    /// The fragments' current values, read from the variables that carry them.
    fn read(a: &[FragVar<'k>], b: &[Vec<Vec<FragVar<'k>>>]) -> Staged<'k> {
        Staged {
            a: a.iter().map(|v| v.get()).collect(),
            b: b.iter()
                .map(|rows| {
                    rows.iter()
                        .map(|r| r.iter().map(|v| v.get()).collect())
                        .collect()
                })
                .collect(),
        }
    }
}

/// One MFMA input read from an LDS tile: a packed fragment, or one f32.
#[derive(Clone, Copy)]
enum Input<'k, T> {
    Frag(Frag<'k>),
    One(Val<'k, T>),
}

/// A sub-step's MFMA inputs: the a-fragments of the wave tile's rows, the b-fragments of its
/// columns.
type Inputs<'k, T> = (Vec<Input<'k, T>>, Vec<Input<'k, T>>);

/// Variables carrying one sub-step's MFMA inputs.
type InputVars<'k, T> = (Vec<InputVar<'k, T>>, Vec<InputVar<'k, T>>);

/// A variable carrying an MFMA input across a loop's back edge.
enum InputVar<'k, T: kjit_frontend::Num> {
    Frag(FragVar<'k>),
    One(Var<'k, T>),
}

impl<'k, T: kjit_frontend::Num> InputVar<'k, T> {
    fn new(k: &'k KernelBuilder, x: &Input<'_, T>) -> Self {
        match *x {
            Input::Frag(f) => InputVar::Frag(k.frag_var(f)),
            Input::One(v) => InputVar::One(k.var(v)),
        }
    }

    fn get(&self) -> Input<'k, T> {
        match self {
            InputVar::Frag(v) => Input::Frag(v.get()),
            InputVar::One(v) => Input::One(v.get()),
        }
    }

    fn set(&self, x: &Input<'_, T>) {
        match (self, x) {
            (InputVar::Frag(v), Input::Frag(f)) => v.set(*f),
            (InputVar::One(v), Input::One(x)) => v.set(*x),
            _ => unreachable!("an input keeps its shape"),
        }
    }
}

/// A step's MFMA inputs (every sub-step's), read from LDS at the end of one loop iteration
/// and used by the MFMAs at the start of the next.
struct Carried<'k, T: kjit_frontend::Num> {
    subs: Vec<InputVars<'k, T>>,
}

impl<'k, T: kjit_frontend::Num> Carried<'k, T> {
    fn new(k: &'k KernelBuilder, reads: &[Inputs<'_, T>]) -> Self {
        let vars = |xs: &[Input<'_, T>]| xs.iter().map(|x| InputVar::new(k, x)).collect();
        Carried {
            subs: reads.iter().map(|(a, b)| (vars(a), vars(b))).collect(),
        }
    }

    fn get(&self) -> Vec<Inputs<'k, T>> {
        let vals = |vs: &[InputVar<'k, T>]| vs.iter().map(InputVar::get).collect();
        self.subs.iter().map(|(a, b)| (vals(a), vals(b))).collect()
    }

    fn set(&self, reads: &[Inputs<'_, T>]) {
        for ((va, vb), (a, b)) in self.subs.iter().zip(reads) {
            for (v, x) in va.iter().zip(a).chain(vb.iter().zip(b)) {
                v.set(x);
            }
        }
    }
}

fn fragment<'k, T: kjit_frontend::Num>(
    k: &'k KernelBuilder,
    tile: &Lds<'k, T>,
    index: Val<'k, u32>,
    fin: FragType,
) -> Input<'k, T> {
    if fin.len == 1 {
        Input::One(k.load(tile, index))
    } else {
        Input::Frag(k.frag_load(tile, index, fin))
    }
}

/// Sizes of a case: `m = size`, `n = size/2 + 3`, `k = size + 5` (none a tile multiple for the
/// usual sizes).
fn dims(size: usize) -> (u32, u32, u32) {
    let s = size.max(1) as u32;
    (s, s / 2 + 3, s + 5)
}

/// Inputs of `elem` from values in [-1, 1] (bf16 as bit patterns in f16 buffers).
fn input(elem: FragElem, x: Vec<f32>) -> BufferData {
    match elem {
        FragElem::F16 => BufferData::F16(x.into_iter().map(f16::from_f32).collect()),
        FragElem::Bf16 => BufferData::F16(
            x.into_iter()
                .map(|v| f16::from_bits((v.to_bits() >> 16) as u16))
                .collect(),
        ),
        _ => BufferData::F32(x),
    }
}

/// The value of input element `i` of argument `arg` as f64.
fn input_value(elem: FragElem, c: &Case, arg: usize) -> Vec<f64> {
    match (&c.args[arg], elem) {
        (Arg::Buffer(BufferData::F16(v)), FragElem::Bf16) => v
            .iter()
            .map(|h| f32::from_bits((h.to_bits() as u32) << 16) as f64)
            .collect(),
        (Arg::Buffer(BufferData::F16(v)), _) => v.iter().map(|h| h.to_f64()).collect(),
        (Arg::Buffer(BufferData::F32(v)), _) => v.iter().map(|&x| x as f64).collect(),
        _ => panic!("argument {arg} is not an input matrix"),
    }
}

/// A case of `m × k` by `k × n` with tiles `t` (the tiles only change the launch).
pub fn gemm_case(elem: FragElem, t: GemmTiles, dims: (u32, u32, u32), seed: u64) -> Case {
    let (m, n, kk) = dims;
    let mut r = rng(seed);
    let a = random_f32(&mut r, (m * kk) as usize, -1.0, 1.0);
    let b = random_f32(&mut r, (kk * n) as usize, -1.0, 1.0);
    Case {
        n: m as usize,
        args: vec![
            Arg::Buffer(input(elem, a)),
            Arg::Buffer(input(elem, b)),
            poisoned(ElemType::F32, (m * n) as usize),
            Arg::U32(m),
            Arg::U32(n),
            Arg::U32(kk),
        ],
        launch: LaunchDims {
            grid: [groups(n as usize, t.bn), groups(m as usize, t.bm), 1],
            block: [t.threads(), 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![2],
    }
}

/// The CPU product in f64 of the inputs as the kernel reads them, rounded to f32.
pub fn gemm_reference(elem: FragElem, c: &Case) -> Vec<BufferData> {
    crate::matmul::product_f64(&input_value(elem, c, 0), &input_value(elem, c, 1), c)
}

/// Tuning parameters, each list starting at the default (f16/bf16).
const TILE_PARAMS: &[TuneParam] = &[
    TuneParam {
        name: "bm",
        values: &[128, 64, 32, 256],
    },
    TuneParam {
        name: "bn",
        values: &[128, 64, 32],
    },
    TuneParam {
        name: "bk",
        values: &[32, 16, 8],
    },
    TuneParam {
        name: "wn",
        values: &[64, 128],
    },
    TuneParam {
        name: "stages",
        values: &[1, 2],
    },
    TuneParam {
        name: "early",
        values: &[0, 1],
    },
    TuneParam {
        name: "lead",
        values: &[3, 0, 1, 2],
    },
];

/// Tuning parameters of `gemm_f32`, starting at [`F32_TILES`].
const F32_TILE_PARAMS: &[TuneParam] = &[
    TILE_PARAMS[0],
    TILE_PARAMS[1],
    TuneParam {
        name: "bk",
        values: &[16, 32, 8],
    },
    TILE_PARAMS[3],
    TILE_PARAMS[4],
    TILE_PARAMS[5],
    TILE_PARAMS[6],
];

fn tiles(p: &[u32]) -> GemmTiles {
    let t = GemmTiles {
        bm: p[0],
        bn: p[1],
        bk: p[2],
        wn: p[3],
        stages: p[4],
        early: p[5] == 1,
        lead: p[6],
        // Not a tuning parameter (the tuner keeps the default); an eighth value sets it.
        pair_a: p.get(7).map_or(DEFAULT_TILES.pair_a, |&x| x == 1),
        super_rows: 0,
    };
    // Not a tuning parameter either; a ninth value sets it. One-wave blocks keep the launch
    // order: 64 × 128 with two stages already needs all 102 SGPRs, and the block order's
    // uniform values need more (`tuning_params` found it out of SGPRs).
    let one_wave = t.threads() == 64;
    GemmTiles {
        super_rows: p.get(8).copied().unwrap_or(if one_wave {
            0
        } else {
            DEFAULT_TILES.super_rows
        }),
        ..t
    }
}

macro_rules! gemm_spec {
    ($spec:ident, $name:literal, $elem:expr, $params:expr, $desc:literal) => {
        /// The registry entry (see the module docs).
        pub const $spec: KernelSpec = KernelSpec {
            name: $name,
            description: $desc,
            build: || build_gemm($name, $elem, default_tiles($elem)),
            make_case: |size, seed| gemm_case($elem, default_tiles($elem), dims(size), seed),
            reference: |c| gemm_reference($elem, c),
            // k products of inputs in [-1, 1], summed in f32 by the matrix unit in another
            // order than the reference's f64 sum.
            tolerance: Tolerance {
                abs: 1e-4,
                rel: 1e-4,
            },
            default_n: 70,
            tuning: Some(Tuning {
                params: $params,
                build: |p| build_gemm($name, $elem, tiles(p)),
                make_case: |p, size, seed| gemm_case($elem, tiles(p), dims(size), seed),
            }),
        };
    };
}

gemm_spec!(
    GEMM_F16,
    "gemm",
    FragElem::F16,
    TILE_PARAMS,
    "c = a * b, f16 inputs, f32 accumulate/output, MFMA 32x32x8, 128x128 LDS blocks"
);
gemm_spec!(
    GEMM_BF16,
    "gemm_bf16",
    FragElem::Bf16,
    TILE_PARAMS,
    "c = a * b, bf16 inputs (bit patterns in f16 buffers), f32 output, MFMA 32x32x8 bf16"
);
gemm_spec!(
    GEMM_F32,
    "gemm_f32",
    FragElem::F32,
    F32_TILE_PARAMS,
    "c = a * b, f32 inputs and output, MFMA 32x32x2 f32, 128x128 LDS blocks"
);

#[cfg(test)]
mod tests {
    use super::{Interleave, Layout, SPAN};

    /// Banks each lane of the first pass hits, per bank the number of dwords.
    fn bank_load(o: &Interleave, w: u32, at: impl Fn(u32, u32) -> u32) -> [u32; 32] {
        let mut banks = [0; 32];
        for l in 0..o.pass {
            let (major, minor) = o.split(l, 0);
            for e in 0..w {
                banks[((at(major, minor) + e) % 32) as usize] += 1;
            }
        }
        banks
    }

    /// Every fragment of the block is some job's, once.
    fn covers_once(o: &Interleave, majors: u32) {
        let mut seen = vec![false; (majors * o.per) as usize];
        for id in 0..majors * o.per {
            let (major, minor) = o.split(id, 0);
            assert!(
                major < majors && minor < o.per,
                "{id} -> ({major}, {minor})"
            );
            let i = (major * o.per + minor) as usize;
            assert!(!seen[i], "({major}, {minor}) twice");
            seen[i] = true;
        }
    }

    /// The order `choose` picks for `majors × per` fragments at `at` is (h, d) = `want`, is
    /// conflict-free, covers the block once, and the natural order (`natural`) conflicts.
    fn check(
        (majors, per): (u32, u32),
        at: impl Fn(u32, u32) -> u32 + Copy,
        want: (u32, u32),
        natural: (u32, u32),
    ) {
        let o = Interleave::choose(majors, per, 2, at);
        assert_eq!((o.h, o.d), want);
        assert!(bank_load(&o, 2, at).iter().all(|&b| b == 1));
        covers_once(&o, majors);
        let (h, d) = natural;
        let natural = Interleave { h, d, ..o };
        assert_eq!(bank_load(&natural, 2, at).iter().max(), Some(&2));
    }

    /// The default f16 blocks (128 rows, steps of 32: rows of 16 dwords at a stride of 18):
    /// adjacent rows share banks 0 and 1, so the a-stores take rows 8 apart; b's columns,
    /// two apart (36 dwords), repeat banks after 8 lanes, so half a pass takes the next
    /// k-fragment. Both orders cover the block once, and the natural ones conflict.
    #[test]
    fn the_default_blocks_store_without_bank_conflicts() {
        check((128, 8), |row, c| row * 18 + c * 2, (2, 8), (2, 1));
        check((8, 32), |kg, pair| pair * 2 * 18 + kg * 2, (2, 1), (1, 1));
    }

    /// Steps of 16 (rows of 8 dwords, stride 10) and f32 steps of 16 (one dword per lane,
    /// stride 18): conflict-free orders exist and cover their blocks once.
    #[test]
    fn other_steps_and_types_get_conflict_free_orders() {
        for (majors, per, w, stride) in [(128, 4, 2, 10), (128, 16, 1, 18), (64, 8, 1, 18)] {
            let at = move |row: u32, c: u32| row * stride + c * w;
            let o = Interleave::choose(majors, per, w, at);
            assert!(
                bank_load(&o, w, at).iter().all(|&b| b == 1),
                "{majors}x{per}, w {w}, stride {stride}: h {} d {}",
                o.h,
                o.d
            );
            covers_once(&o, majors);
        }
    }

    /// Dwords per bank of the 16 lanes of one pass of 8-byte accesses at element indices
    /// `at(lane)` (f16: 2 elements per dword).
    fn pass_banks(at: impl Fn(u32) -> u32) -> [u32; 32] {
        let mut banks = [0; 32];
        for l in 0..16 {
            for e in 0..2 {
                banks[((at(l) / 2 + e) % 32) as usize] += 1;
            }
        }
        banks
    }

    /// The k-group planes of the two-stage f16 blocks (128 lines × 32 k, fragments of 4):
    /// every fragment has its own slot inside 16 KiB; every MFMA input read pass (16
    /// consecutive lines from a multiple of 16, one k-group) and every pass of the store order
    /// `Interleave::choose` finds for them hit each bank once; without the XOR (slot
    /// `g · lines + line`) that order's first pass puts 8 lanes on one bank pair.
    #[test]
    fn planes_are_unpadded_and_read_and_stored_without_bank_conflicts() {
        let (lines, bk, kl) = (128, 32, 4);
        let planes = Layout::Planes { bk, kl };
        // An a- and a b-block of f16: 16 KiB per stage.
        assert_eq!(2 * planes.len(lines) * 2, 16 * 1024);
        let groups = bk / kl;
        let mut seen = vec![false; (lines * groups) as usize];
        for line in 0..lines {
            for g in 0..groups {
                let at = planes.at_const(lines, line, g);
                assert_eq!(at % kl, 0);
                assert!(at < planes.len(lines));
                assert!(!std::mem::replace(&mut seen[(at / kl) as usize], true));
            }
        }
        for g in 0..groups {
            for r0 in (0..lines).step_by(16) {
                let banks = pass_banks(|l| planes.at_const(lines, r0 + l, g));
                assert!(banks.iter().all(|&b| b == 1), "read of group {g} from {r0}");
            }
        }
        let at = |row: u32, g: u32| planes.at_const(lines, row, g) / 2;
        let o = Interleave::choose(lines, groups, 2, at);
        covers_once(&o, lines);
        for pass in 0..lines * groups / o.pass {
            let lane = |l: u32| o.split(pass * o.pass + l, 0);
            let banks = pass_banks(|l| {
                let (row, g) = lane(l);
                planes.at_const(lines, row, g)
            });
            assert!(banks.iter().all(|&b| b == 1), "store pass {pass}");
        }
        let plain = |l: u32| {
            let (row, g) = o.split(l, 0);
            (g * lines + row) * kl
        };
        assert_eq!(pass_banks(plain).iter().max(), Some(&8));
        // Moving by whole spans of lines is a constant; across k-groups it is not.
        assert_eq!(planes.line_shift(SPAN), Some(SPAN * kl));
        assert_eq!(planes.line_shift(SPAN / 2), None);
        assert_eq!(planes.group_shift(1), None);
    }
}

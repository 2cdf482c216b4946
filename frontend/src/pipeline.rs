//! Loops that stream tiles from global memory through LDS, written once and expanded into a
//! software pipeline: a prologue that starts the first `stages` tiles' loads, a steady state
//! (unrolled by `stages`, one LDS buffer per stage) that issues the loads of tile `t + stages`
//! as soon as tile `t` has been consumed, and grid helpers for persistent kernels.
//!
//! The expansion is plain IR (loads, LDS stores, barriers, a uniform loop), so the interpreter
//! gives its meaning; the backend makes the copies direct-to-LDS loads where a lane copies a
//! dword to its own word of a wave-contiguous run (see [`KernelBuilder::lane_slot`]) and its
//! `InsertWaitcnt` keeps the newest tiles' loads in flight (each LDS buffer is its own array, so
//! a read waits only for the loads into the buffer it reads). See `docs/pipelining.md`.

use std::panic::Location;

use kjit_ir::Dim;

use crate::{Buffer, Index, KernelBuilder, Lds, Num, Val};

/// Which work-items read the LDS words a work-item copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileSharing {
    /// Every wave reads only the words it copied itself (e.g. at [`KernelBuilder::lane_slot`]):
    /// no barrier is needed anywhere, a wave's own waits order its copies and reads.
    WavePrivate,
    /// Any work-item of the workgroup may read any word of a tile: a barrier after each tile
    /// has been copied (before it is read) and one before its buffer is filled again.
    Workgroup,
}

/// A pipelined tile loop being declared: [`KernelBuilder::pipeline`], then [`staged`]
/// buffers, then [`run`](Pipeline::run).
///
/// [`staged`]: Pipeline::staged
pub struct Pipeline<'k> {
    k: &'k KernelBuilder,
    stages: u32,
    sharing: TileSharing,
    speculative: bool,
}

/// One LDS buffer per stage, of the same element type and length.
pub struct Staged<'k, T: Num> {
    bufs: Vec<Lds<'k, T>>,
}

/// The buffer set a fill or compute call works on (which of the `stages` LDS buffers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage {
    index: usize,
}

impl Stage {
    /// The buffer of `staged` this stage uses.
    pub fn buffer<'a, 'k, T: Num>(&self, staged: &'a Staged<'k, T>) -> &'a Lds<'k, T> {
        &staged.bufs[self.index % staged.bufs.len()]
    }

    /// Which stage (0..stages).
    pub fn index(&self) -> usize {
        self.index
    }

    /// `this stage's buffer of dst[dst_index] = src[src_index]`: the copy a fill is made of.
    /// A 4-byte element copied by a lane to `lane_slot() (+ uniform)` is one direct-to-LDS load.
    #[track_caller]
    pub fn copy<'k, T: Num, I: Index, J: Index>(
        &self,
        k: &'k KernelBuilder,
        dst: &Staged<'k, T>,
        dst_index: Val<'k, J>,
        src: &Buffer<'k, T>,
        src_index: Val<'k, I>,
    ) {
        let v = k.load(src, src_index);
        k.store(self.buffer(dst), dst_index, v);
    }
}

impl<'k> Pipeline<'k> {
    /// Declares `stages` LDS arrays `name_s0`, `name_s1`, ... of `len` elements each.
    #[track_caller]
    pub fn staged<T: Num>(&self, name: &str, len: u32) -> Staged<'k, T> {
        let n = self.stages.max(1);
        Staged {
            bufs: (0..n)
                .map(|s| self.k.lds::<T>(&format!("{name}_s{s}"), len))
                .collect(),
        }
    }

    /// Whether filling and computing tiles past the last one is harmless, so that the
    /// expansion needs no bound checks: true when every index a tile `t >= tiles` touches is
    /// past its buffer's end (its loads give 0, its stores are dropped), as in a grid-stride
    /// loop over a whole buffer. The loop then runs a multiple of `stages` tiles and prefetches
    /// `stages` tiles past the end without an epilogue.
    pub fn speculative(mut self, yes: bool) -> Self {
        self.speculative = yes;
        self
    }

    /// Expands the loop over the tiles `t = 0, 1, ...` for which `exists(t)` holds (`exists`
    /// must be uniform and, once false, stay false): `fill(stage, t)` copies tile `t` into
    /// `stage`'s buffers, `compute(stage, t)` consumes them. Tile `t` uses stage
    /// `t % stages`; with `stages >= 2` the loads of tile `t + stages` (private tiles) or
    /// `t + stages - 1` (shared tiles) are issued while tile `t` is consumed.
    #[track_caller]
    pub fn run(
        &self,
        exists: impl Fn(Val<'k, u32>) -> Val<'k, bool>,
        fill: impl Fn(Stage, Val<'k, u32>),
        compute: impl Fn(Stage, Val<'k, u32>),
    ) {
        let k = self.k;
        let s = self.stages;
        if s == 0 {
            k.inner.borrow_mut().error(
                "pipeline",
                Location::caller(),
                "a pipeline needs at least one stage".into(),
            );
            return;
        }
        let shared = self.sharing == TileSharing::Workgroup;
        // Private tiles are refilled right after they are read; shared ones one stage earlier,
        // after the barrier that ends every wave's reads of the buffer.
        let ahead = if shared { s - 1 } else { s };
        let guarded = |t: Val<'k, u32>, body: &dyn Fn()| {
            if self.speculative {
                body()
            } else {
                k.if_(exists(t), body)
            }
        };
        let stage = |t: u32| Stage {
            index: (t % s) as usize,
        };
        // Shared tiles with one stage still load tile 0 before the loop.
        let prologue = if shared { ahead.max(1) } else { ahead };
        for t in 0..prologue {
            let tv = k.lit(t);
            guarded(tv, &|| fill(stage(t), tv));
        }
        let first = k.var_named("pipeline tile", k.lit(0u32));
        k.while_(
            || exists(first.get()),
            || {
                let g = first.get();
                for j in 0..s {
                    let t = g + j;
                    if shared {
                        // Tile t has landed in every wave's part of its buffer, and every wave
                        // is done with tile t - 1, whose buffer the next fill reuses.
                        k.barrier();
                        if ahead > 0 {
                            let next = t + ahead;
                            guarded(next, &|| fill(stage(j + ahead), next));
                        }
                        guarded(t, &|| compute(stage(j), t));
                        if ahead == 0 {
                            k.barrier();
                            let next = t + 1;
                            guarded(next, &|| fill(stage(j), next));
                        }
                    } else {
                        guarded(t, &|| compute(stage(j), t));
                        let next = t + ahead;
                        guarded(next, &|| fill(stage(j), next));
                    }
                }
                first.set(g + s);
            },
        );
    }
}

impl KernelBuilder {
    /// Starts a pipelined loop over tiles with `stages` LDS buffers per staged input (1: no
    /// overlap, the load → compute loop as written; 2: double buffering; ...).
    pub fn pipeline(&self, stages: u32, sharing: TileSharing) -> Pipeline<'_> {
        Pipeline {
            k: self,
            stages,
            sharing,
            speculative: false,
        }
    }

    /// The work-item's index in its workgroup, `x + size_x * (y + size_y * z)`: waves are made
    /// of 64 consecutive ones.
    #[track_caller]
    pub fn local_linear_id(&self) -> Val<'_, u32> {
        let (x, y, z) = (
            self.local_id(Dim::X),
            self.local_id(Dim::Y),
            self.local_id(Dim::Z),
        );
        x + self.group_size(Dim::X) * (y + self.group_size(Dim::Y) * z)
    }

    /// The work-item's own LDS word in a run of 64 per wave: `(first local linear id of the
    /// wave) + lane_id`, i.e. [`local_linear_id`](Self::local_linear_id) computed so that the
    /// backend sees a uniform base plus the lane. A dword copied by every lane to
    /// `array[lane_slot() + uniform]` is one direct-to-LDS load per wave.
    #[track_caller]
    pub fn lane_slot(&self) -> Val<'_, u32> {
        self.wave_broadcast(self.local_linear_id(), 0) + self.lane_id()
    }

    /// A grid-stride loop over `0..n`: `body(i)` for `i = global_id + r * global_size` and
    /// `r` in `0..ceil(n / global_size)`, a uniform trip count (no per-lane exit). Lanes whose
    /// `i` is past `n` in the last round run the body too: their buffer loads give 0 and their
    /// stores are dropped by the buffers' range checks, so a body that only touches buffers
    /// at `i` needs no bound check. With `LaunchDims::persistent` (kjit-runtime) the grid is one
    /// workgroup per compute unit.
    #[track_caller]
    pub fn grid_stride_loop<'k>(&'k self, n: Val<'k, u32>, body: impl FnOnce(Val<'k, u32>)) {
        let stride = self.global_size(Dim::X);
        // The workgroup's first element of each round: uniform, so the loop exits per wave.
        let base = self.var_named(
            "grid-stride base",
            self.group_id(Dim::X) * self.group_size(Dim::X),
        );
        let lid = self.local_id(Dim::X);
        self.while_(
            || base.get().lt(n),
            || {
                body(base.get() + lid);
                base.set(base.get() + stride);
            },
        );
    }
}

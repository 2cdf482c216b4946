//! Random kernels (integer and float arithmetic, selects, conversions, loads in and out of
//! range, divergent and uniform ifs, loops with divergent trip counts, early returns, stores)
//! compiled for a target and run on kjit's GCN device must give exactly what the IR
//! interpreter gives. Every output element is compared bit for bit (any NaN equals any NaN;
//! elements neither run writes keep the same poison). Each program is generated from a seed;
//! CI runs a fixed set of 102,600 seeds (a third per target, [`FLAVOURS`]), so a run is red or
//! green the same way every time. `KJIT_RANDOM_BASE=<hex>` draws a new set,
//! `KJIT_RANDOM_SCALE=<n>` runs n times as many, `KJIT_RANDOM_SEED=<hex>` reproduces one seed.
//! A seed that failed is kept in `tests/random_programs.regressions` and runs on every target.

use std::cell::RefCell;

use kjit::exec::run_case;
use kjit::{compile, CompileOptions};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_backend_gcn::Target;
use kjit_frontend::{f16, Buffer, Dim, Function, KernelBuilder, Lds, ReduceOp, Val, Var};
use kjit_ir::interp::{Arg, BufferData, LaunchDims};
use kjit_kernels::Case;
use kjit_runtime::emu::GcnEmulator;

/// splitmix64: the generator's own deterministic stream, from a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, k: u64) -> bool {
        self.below(k) == 0
    }
}

const NU: usize = 3;
const NI: usize = 2;
const NF: usize = 3;
/// Output slots per work-item: one per variable plus four for stores inside control flow.
const SLOTS: u32 = 12;
const IN_LEN: u32 = 200;

struct Gen<'k> {
    k: &'k KernelBuilder,
    rng: RefCell<Rng>,
    vu: Vec<Var<'k, u32>>,
    vi: Vec<Var<'k, i32>>,
    vf: Vec<Var<'k, f32>>,
    gid: Val<'k, u32>,
    su: Val<'k, u32>,
    sf: Val<'k, f32>,
    a: Buffer<'k, u32>,
    b: Buffer<'k, f32>,
    out: Buffer<'k, u32>,
    outf: Buffer<'k, f32>,
    /// Whether loads and divisions are generated.
    div: bool,
    /// 64-bit and f16 variables (always stored; only changed in `wide` programs).
    vu64: Var<'k, u64>,
    vi64: Var<'k, i64>,
    vd: Var<'k, f64>,
    vh: Var<'k, f16>,
    wide: bool,
    /// Wave operations, LDS and atomics.
    cross: bool,
    /// Loops run up to 7 times (else up to 3): far enough for a runtime-unrolled trip of 4.
    long_loops: bool,
    lds: Lds<'k, u32>,
    lid: Val<'k, u32>,
    returned: std::cell::Cell<bool>,
    /// Loops around the statement being generated.
    loops: std::cell::Cell<u32>,
}

const U_CONSTS: [u32; 10] = [0, 1, 2, 3, 7, 31, 32, 0x8000_0000, 0xffff_ffff, 1000];
const F_CONSTS: [f32; 10] = [0.0, -0.0, 1.0, -1.5, 0.5, 3.25, 1e30, -1e-30, 65536.0, 7.0];

impl<'k> Gen<'k> {
    fn r(&self, n: u64) -> u64 {
        self.rng.borrow_mut().below(n)
    }

    fn eu(&self, d: u32) -> Val<'k, u32> {
        let k = self.k;
        let pick = if d == 0 { self.r(6) } else { self.r(16) };
        match pick {
            0 => self.vu[self.r(NU as u64) as usize].get(),
            1 => k.lit(U_CONSTS[self.r(10) as usize]),
            2 => self.gid,
            3 => k.lane_id(),
            4 => self.su,
            5 => k.group_id(Dim::X),
            6 => self.eu(d - 1) + self.eu(d - 1),
            7 => self.eu(d - 1) - self.eu(d - 1),
            8 => self.eu(d - 1) * self.eu(d - 1),
            9 => match self.r(5) {
                0 => self.eu(d - 1) & self.eu(d - 1),
                1 => self.eu(d - 1) | self.eu(d - 1),
                2 => self.eu(d - 1) ^ self.eu(d - 1),
                3 => self.eu(d - 1) << self.eu(d - 1),
                _ => self.eu(d - 1) >> self.eu(d - 1),
            },
            10 => {
                if self.r(2) == 0 {
                    self.eu(d - 1).min(self.eu(d - 1))
                } else {
                    self.eu(d - 1).max(self.eu(d - 1))
                }
            }
            11 if self.div => {
                if self.r(2) == 0 {
                    self.eu(d - 1) / self.eu(d - 1)
                } else {
                    self.eu(d - 1) % self.eu(d - 1)
                }
            }
            12 => k.select(self.eb(d - 1), self.eu(d - 1), self.eu(d - 1)),
            13 => {
                if self.r(2) == 0 {
                    self.ei(d - 1).cast::<u32>()
                } else {
                    self.ef(d - 1).cast::<u32>()
                }
            }
            14 if self.div => {
                let i = self.eu(d - 1) & 255u32;
                k.load(&self.a, i)
            }
            _ => !self.eu(d - 1),
        }
    }

    fn ei(&self, d: u32) -> Val<'k, i32> {
        let k = self.k;
        let pick = if d == 0 { self.r(3) } else { self.r(12) };
        match pick {
            0 => self.vi[self.r(NI as u64) as usize].get(),
            1 => k.lit((U_CONSTS[self.r(10) as usize] as i32).wrapping_sub(3)),
            2 => self.gid.cast::<i32>() - 50i32,
            3 => self.ei(d - 1) + self.ei(d - 1),
            4 => self.ei(d - 1) - self.ei(d - 1),
            5 => self.ei(d - 1) * self.ei(d - 1),
            6 => self.ei(d - 1) >> (self.ei(d - 1) & 31i32),
            7 if self.div => {
                if self.r(2) == 0 {
                    self.ei(d - 1) / self.ei(d - 1)
                } else {
                    self.ei(d - 1) % self.ei(d - 1)
                }
            }
            8 => {
                if self.r(2) == 0 {
                    self.ei(d - 1).min(self.ei(d - 1))
                } else {
                    self.ei(d - 1).max(self.ei(d - 1))
                }
            }
            9 => k.select(self.eb(d - 1), self.ei(d - 1), self.ei(d - 1)),
            10 => {
                if self.r(2) == 0 {
                    self.eu(d - 1).cast::<i32>()
                } else {
                    self.ef(d - 1).cast::<i32>()
                }
            }
            _ => -self.ei(d - 1),
        }
    }

    fn ef(&self, d: u32) -> Val<'k, f32> {
        let k = self.k;
        let pick = if d == 0 { self.r(3) } else { self.r(12) };
        match pick {
            0 => self.vf[self.r(NF as u64) as usize].get(),
            1 => k.lit(F_CONSTS[self.r(10) as usize]),
            2 => self.sf,
            3 => self.ef(d - 1) + self.ef(d - 1),
            4 => self.ef(d - 1) - self.ef(d - 1),
            5 => self.ef(d - 1) * self.ef(d - 1),
            6 => {
                if self.r(2) == 0 {
                    self.ef(d - 1).min(self.ef(d - 1))
                } else {
                    self.ef(d - 1).max(self.ef(d - 1))
                }
            }
            7 => k.select(self.eb(d - 1), self.ef(d - 1), self.ef(d - 1)),
            8 => {
                if self.r(2) == 0 {
                    self.eu(d - 1).cast::<f32>()
                } else {
                    self.ei(d - 1).cast::<f32>()
                }
            }
            9 if self.div => {
                let i = self.eu(d - 1) & 255u32;
                k.load(&self.b, i)
            }
            10 => self.ef(d - 1).fma(self.ef(d - 1), self.ef(d - 1)),
            _ => {
                if self.r(2) == 0 {
                    -self.ef(d - 1)
                } else {
                    self.ef(d - 1).abs()
                }
            }
        }
    }

    fn eb(&self, d: u32) -> Val<'k, bool> {
        let d = d.min(2);
        match self.r(8) {
            0 => self.eu(d).lt(self.eu(d)),
            1 => self.eu(d).ge(self.eu(d)),
            2 => self.ei(d).le(self.ei(d)),
            3 => self.ei(d).gt(self.ei(d)),
            4 => self.ef(d).lt(self.ef(d)),
            5 => self.ef(d).ne(self.ef(d)),
            6 => (self.gid & 1u32).eq(self.k.lit(0u32)),
            _ => {
                if d == 0 {
                    self.eu(0).eq(self.eu(0))
                } else {
                    let x = self.eb(d - 1);
                    let y = self.eb(d - 1);
                    match self.r(3) {
                        0 => x & y,
                        1 => x | y,
                        _ => !x,
                    }
                }
            }
        }
    }

    fn e64u(&self, d: u32) -> Val<'k, u64> {
        let k = self.k;
        let pick = if d == 0 { self.r(4) } else { self.r(14) };
        match pick {
            0 => self.vu64.get(),
            1 => k.lit(
                [
                    0u64,
                    1,
                    63,
                    0xffff_ffff,
                    0x1_0000_0000,
                    u64::MAX,
                    0x8000_0000_0000_0000,
                ][self.r(7) as usize],
            ),
            2 => self.eu(0).cast::<u64>(),
            3 => self.vi64.get().cast::<u64>(),
            4 => self.e64u(d - 1) + self.e64u(d - 1),
            5 => self.e64u(d - 1) - self.e64u(d - 1),
            6 => self.e64u(d - 1) * self.e64u(d - 1),
            7 => self.e64u(d - 1) ^ self.e64u(d - 1),
            8 => self.e64u(d - 1) << (self.e64u(d - 1) & 127u64),
            9 => self.e64u(d - 1) >> self.e64u(d - 1),
            10 => self.e64u(d - 1).min(self.e64u(d - 1)),
            11 => k.select(self.eb(1), self.e64u(d - 1), self.e64u(d - 1)),
            12 => !self.e64u(d - 1),
            _ => self.e64u(d - 1).max(self.e64u(d - 1)) | self.e64u(d - 1),
        }
    }

    fn e64i(&self, d: u32) -> Val<'k, i64> {
        let k = self.k;
        let pick = if d == 0 { self.r(3) } else { self.r(10) };
        match pick {
            0 => self.vi64.get(),
            1 => self.ei(0).cast::<i64>(),
            2 => k.lit(-(self.r(1000) as i64) * 1_000_003),
            3 => self.e64i(d - 1) + self.e64i(d - 1),
            4 => self.e64i(d - 1) * self.e64i(d - 1),
            5 => self.e64i(d - 1) >> (self.e64i(d - 1) & 63i64),
            6 => self.e64i(d - 1).min(self.e64i(d - 1)),
            7 => self.e64i(d - 1).abs(),
            8 => -self.e64i(d - 1),
            _ => self.e64u(d - 1).cast::<i64>(),
        }
    }

    fn ed(&self, d: u32) -> Val<'k, f64> {
        let k = self.k;
        let pick = if d == 0 { self.r(3) } else { self.r(11) };
        match pick {
            0 => self.vd.get(),
            1 => k.lit([0.0f64, -0.0, 1.5, -3.25, 1e300, 1e-300, 0.1][self.r(7) as usize]),
            2 => self.ef(0).cast::<f64>(),
            3 => self.ed(d - 1) + self.ed(d - 1),
            4 => self.ed(d - 1) - self.ed(d - 1),
            5 => self.ed(d - 1) * self.ed(d - 1),
            6 => self.ed(d - 1).min(self.ed(d - 1)),
            7 => self.ed(d - 1).fma(self.ed(d - 1), self.ed(d - 1)),
            8 => self.ei(d - 1).cast::<f64>(),
            9 => k.select(self.eb(1), self.ed(d - 1), self.ed(d - 1)),
            _ => -self.ed(d - 1).abs(),
        }
    }

    fn eh(&self, d: u32) -> Val<'k, f16> {
        let k = self.k;
        let pick = if d == 0 { self.r(3) } else { self.r(10) };
        match pick {
            0 => self.vh.get(),
            1 => k.lit(f16::from_f32(
                [0.0f32, -0.0, 1.5, -3.25, 65504.0, 0.099975586, 1e-5][self.r(7) as usize],
            )),
            2 => self.ef(0).cast::<f16>(),
            3 => self.eh(d - 1) + self.eh(d - 1),
            4 => self.eh(d - 1) - self.eh(d - 1),
            5 => self.eh(d - 1) * self.eh(d - 1),
            6 => self.eh(d - 1).max(self.eh(d - 1)),
            7 => self.eh(d - 1).fma(self.eh(d - 1), self.eh(d - 1)),
            8 => self.ed(d - 1).cast::<f32>().cast::<f16>(),
            _ => k.select(self.eb(1), self.eh(d - 1), -self.eh(d - 1)),
        }
    }

    /// A statement with wave operations, LDS or atomics.
    fn cross_stmt(&self, depth: u32) {
        let k = self.k;
        let t = self.r(NU as u64) as usize;
        let mut pick = self.r(7);
        if let Ok(only) = std::env::var("KJIT_CROSS_ONLY") {
            pick = only.parse().unwrap_or(pick);
        }
        match pick {
            0 => {
                let v = k.wave_shuffle(self.eu(1), self.eu(1));
                self.vu[t].set(v);
            }
            1 => {
                let v = k.wave_broadcast(self.eu(1), self.r(64) as u8);
                self.vu[t].set(v);
            }
            2 => {
                let op = [ReduceOp::Add, ReduceOp::Min, ReduceOp::Max][self.r(3) as usize];
                let v = if self.r(2) == 0 {
                    k.wave_reduce(op, self.eu(1))
                } else {
                    k.wave_scan(op, self.eu(1))
                };
                self.vu[t].set(v);
            }
            3 => {
                let op = [ReduceOp::Min, ReduceOp::Max][self.r(2) as usize];
                let v = if self.r(2) == 0 {
                    k.wave_reduce(op, self.ef(1))
                } else {
                    k.wave_scan(op, self.ef(1))
                };
                self.vf[self.r(NF as u64) as usize].set(v);
            }
            4 => {
                // Own LDS slot: written, then read back (no cross-lane traffic).
                k.store(&self.lds, self.lid, self.eu(1));
                let v = k.load(&self.lds, self.lid) + self.vu[t].get();
                self.vu[t].set(v);
            }
            5 => {
                // Atomics on this work-item's own slots: deterministic old values.
                let s = self.slot((NU + NI + NF) as u32 + self.r(4) as u32);
                let x = self.eu(1);
                let old = match self.r(5) {
                    0 => k.atomic_add(&self.out, s, x),
                    1 => k.atomic_min(&self.out, s, x),
                    2 => k.atomic_max(&self.out, s, x),
                    3 => k.atomic_xchg(&self.out, s, x),
                    _ => k.atomic_cas(&self.out, s, self.eu(1), x),
                };
                self.vu[t].set(old);
                k.store(&self.lds, self.lid, self.eu(1));
                let o2 = k.atomic_add(&self.lds, self.lid, self.eu(0));
                let v = o2 ^ self.vu[t].get();
                self.vu[t].set(v);
            }
            _ => {
                if depth == 0 && !self.returned.get() {
                    // Every work-item writes its slot; after the barrier, read a neighbour's.
                    k.store(&self.lds, self.lid, self.eu(1));
                    k.barrier();
                    let n = (self.lid + 1u32) % k.group_size(Dim::X);
                    let v = k.load(&self.lds, n);
                    self.vu[t].set(v);
                    k.barrier();
                } else {
                    let v = k.wave_broadcast(self.eu(1), 0);
                    self.vu[t].set(v);
                }
            }
        }
    }

    fn wide_stmt(&self) {
        match self.r(4) {
            0 => self.vu64.set(self.e64u(3)),
            1 => self.vi64.set(self.e64i(3)),
            2 => self.vd.set(self.ed(3)),
            _ => self.vh.set(self.eh(3)),
        }
    }

    fn slot(&self, s: u32) -> Val<'k, u32> {
        self.gid * SLOTS + s
    }

    fn stmts(&self, n: u32, depth: u32) {
        for _ in 0..n {
            self.stmt(depth);
        }
    }

    fn stmt(&self, depth: u32) {
        let k = self.k;
        if self.wide && self.r(3) == 0 {
            self.wide_stmt();
            return;
        }
        // Cross-lane statements only before any early return: after one, the interpreter runs
        // the paths of a branch whose post-dominator is the exit apart (reconverging at the
        // exit), while the device reconverges them at their join (see docs/backend.md).
        if self.cross && !self.returned.get() && self.r(3) == 0 {
            self.cross_stmt(depth);
            return;
        }
        let choice = if depth >= 3 { self.r(5) } else { self.r(10) };
        match choice {
            0 | 1 => {
                let v = self.eu(2);
                self.vu[self.r(NU as u64) as usize].set(v);
            }
            2 => {
                let v = self.ei(2);
                self.vi[self.r(NI as u64) as usize].set(v);
            }
            3 => {
                let v = self.ef(2);
                self.vf[self.r(NF as u64) as usize].set(v);
            }
            4 => {
                let s = (NU + NI + NF) as u32 + self.r(4) as u32;
                if self.r(2) == 0 {
                    let v = self.eu(2);
                    k.store(&self.out, self.slot(s), v);
                } else {
                    let v = self.ef(2);
                    k.store(&self.outf, self.slot(s), v);
                }
            }
            5 | 6 => {
                let c = self.eb(2);
                let (n1, n2) = (1 + self.r(3) as u32, self.r(3) as u32);
                if n2 == 0 {
                    k.if_(c, || self.stmts(n1, depth + 1));
                } else {
                    k.if_else(
                        c,
                        || self.stmts(n1, depth + 1),
                        || self.stmts(n2, depth + 1),
                    );
                }
            }
            7 | 8 => {
                // Trip count 0..=3 (0..=7 with `long_loops`), divergent or uniform.
                let bound = self.eu(1) & if self.long_loops { 7u32 } else { 3 };
                let n = 1 + self.r(3) as u32;
                let target = self.r(NU as u64) as usize;
                k.for_range(k.lit(0u32), bound, k.lit(1u32), |i| {
                    let v = self.vu[target].get() + i;
                    self.vu[target].set(v);
                    self.loops.set(self.loops.get() + 1);
                    self.stmts(n, depth + 1);
                    self.loops.set(self.loops.get() - 1);
                });
            }
            _ => {
                // In a loop, an early return comes before the loop's earlier statements too
                // (the next round runs them): cross-lane programs get none there (the same
                // random draws, so the other programs stay the same).
                if self.rng.borrow_mut().chance(3) {
                    let c = self.eb(1);
                    if !(self.cross && self.loops.get() > 0) {
                        self.returned.set(true);
                        k.return_if(c);
                    }
                } else {
                    let v = self.eu(2);
                    self.vu[self.r(NU as u64) as usize].set(v);
                }
            }
        }
    }
}

/// A random kernel from `seed`: `(a: buf<u32>, b: buf<f32>, out: buf_mut<u32>,
/// outf: buf_mut<f32>, su: u32, sf: f32)` and the wide/cross buffers. Program flavours: `div` loads and division, `wide` 64-bit and f16 values, `cross` wave
/// operations, LDS, atomics and barriers.
fn random_kernel_with(seed: u64, (div, wide, cross, long_loops): Flags) -> Function {
    let k = KernelBuilder::new("random");
    let a = k.buffer::<u32>("a");
    let b = k.buffer::<f32>("b");
    let out = k.buffer_mut::<u32>("out");
    let outf = k.buffer_mut::<f32>("outf");
    let out64 = k.buffer_mut::<u64>("out64");
    let outd = k.buffer_mut::<f64>("outd");
    let outh = k.buffer_mut::<f16>("outh");
    let su = k.arg::<u32>("su");
    let sf = k.arg::<f32>("sf");
    let lds = k.lds::<u32>("scratch", 256);
    let lid = k.local_id(Dim::X);
    let gid = k.global_id(Dim::X);
    let mut rng = Rng(seed);
    let vu: Vec<_> = (0..NU)
        .map(|j| match j {
            0 => k.var(gid),
            1 => k.var(k.lit(rng.next() as u32 % 100)),
            _ => k.var(k.load(&a, gid)),
        })
        .collect();
    let vi: Vec<_> = (0..NI)
        .map(|j| k.var(gid.cast::<i32>() - (j as i32 * 17)))
        .collect();
    let vf: Vec<_> = (0..NF)
        .map(|j| match j {
            0 => k.var(k.load(&b, gid)),
            1 => k.var(sf),
            _ => k.var(gid.cast::<f32>() * 0.25f32),
        })
        .collect();
    let vu64 = k.var(gid.cast::<u64>() * 0x1_0000_0001u64);
    let vi64 = k.var(gid.cast::<i64>() - 7i64);
    let vd = k.var(gid.cast::<f64>() * 0.5f64);
    let vh = k.var(gid.cast::<f32>().cast::<f16>());
    let g = Gen {
        vu64,
        vi64,
        vd,
        vh,
        wide,
        cross,
        long_loops,
        lds,
        lid,
        returned: std::cell::Cell::new(false),
        loops: std::cell::Cell::new(0),
        k: &k,
        rng: RefCell::new(rng),
        vu,
        vi,
        vf,
        gid,
        su,
        sf,
        a,
        b,
        out,
        outf,
        div,
    };
    let mut n = 2 + g.r(6) as u32;
    if let Ok(m) = std::env::var("KJIT_MAX_STMTS") {
        n = n.min(m.parse().unwrap_or(n));
    }
    g.stmts(n, 0);
    for (j, v) in g.vu.iter().enumerate() {
        k.store(&g.out, g.slot(j as u32), v.get());
    }
    for (j, v) in g.vi.iter().enumerate() {
        k.store(&g.out, g.slot((NU + j) as u32), v.get().cast::<u32>());
    }
    for (j, v) in g.vf.iter().enumerate() {
        k.store(&g.outf, g.slot((NU + NI + j) as u32), v.get());
    }
    k.store(&out64, gid * 2u32, g.vu64.get());
    k.store(&out64, gid * 2u32 + 1u32, g.vi64.get().cast::<u64>());
    k.store(&outd, gid, g.vd.get());
    k.store(&outh, gid, g.vh.get());
    drop(g);
    k.finish().expect("generated kernel builds")
}

fn random_case(seed: u64) -> Case {
    let mut rng = Rng(seed ^ 0x5eed);
    let block = [64u32, 100, 128, 37][rng.below(4) as usize];
    let groups = 1 + rng.below(2) as u32;
    let n = (block * groups) as usize;
    let a: Vec<u32> = (0..IN_LEN)
        .map(|_| U_CONSTS[rng.below(10) as usize] ^ (rng.next() as u32 & 0xff))
        .collect();
    let b: Vec<f32> = (0..IN_LEN)
        .map(|_| F_CONSTS[rng.below(10) as usize] * (rng.below(7) as f32 - 3.0))
        .collect();
    let len = n * SLOTS as usize;
    Case {
        n,
        args: vec![
            Arg::Buffer(BufferData::U32(a)),
            Arg::Buffer(BufferData::F32(b)),
            Arg::Buffer(BufferData::U32(vec![kjit_kernels::POISON_U32; len])),
            Arg::Buffer(BufferData::F32(vec![
                f32::from_bits(
                    kjit_kernels::POISON_F32
                );
                len
            ])),
            Arg::Buffer(BufferData::U64(vec![0xdead_beef_dead_beef; 2 * n])),
            Arg::Buffer(BufferData::F64(vec![
                f64::from_bits(0x7ff4_dead_beef_0000);
                n
            ])),
            Arg::Buffer(BufferData::F16(vec![f16::from_bits(0x7e55); n])),
            Arg::U32(rng.below(9) as u32),
            Arg::F32(F_CONSTS[rng.below(10) as usize]),
        ],
        launch: LaunchDims {
            grid: [groups, 1, 1],
            block: [block, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![2, 3, 4, 5, 6],
    }
}

/// The error of a case skipped because the optimizer's output did not verify.
const SKIPPED: &str = "skipped";

/// Compiles and runs the program of `seed`, flavour `(div, wide, cross, long_loops)` of
/// [`random_kernel_with`], on `target`; `Err` describes the first difference.
fn check_flavour(seed: u64, target: Target, flags: Flags, optimize: bool) -> Result<(), String> {
    let func = random_kernel_with(seed, flags);
    let case = random_case(seed);
    let mut want = case.args.clone();
    kjit_ir::interp::run(&func, &case.launch, &mut want)
        .map_err(|e| format!("seed {seed:#x}: interpreter: {e}\n{func}"))?;
    let opts = CompileOptions {
        optimize,
        vgpr_budget: None,
        occupancy: None,
        check: true,
        kernarg_preload: true,
    };
    let ck = match compile(&func, target, &opts) {
        Ok(k) => k,
        // The e-graph optimizer's own bugs are not the backend's: reported, the case skipped.
        Err(e @ kjit::CompileError::Ir { .. }) if optimize => {
            eprintln!("seed {seed:#x}: optimizer output does not verify (case skipped): {e}");
            return Err(SKIPPED.into());
        }
        Err(e) => {
            return Err(format!(
                "seed {seed:#x} {target} opt={optimize}: compile: {e}\n{func}"
            ))
        }
    };
    let dev = GcnEmulator::new();
    let got = run_case(&dev, &ck.code_object, &func, &case).map_err(|e| {
        format!(
            "seed {seed:#x} {target} opt={optimize}: device: {e}\n{func}\n{}",
            ck.asm
        )
    })?;
    for &o in &case.outputs {
        let (g, w) = (&got.args[o], &want[o]);
        let (Arg::Buffer(g), Arg::Buffer(w)) = (g, w) else {
            return Err("output is not a buffer".into());
        };
        for i in 0..w.len() {
            let (gb, wb) = (g.get_bits(i), w.get_bits(i));
            let nan = |b: u64| match w {
                BufferData::F16(_) => f16::from_bits(b as u16).is_nan(),
                BufferData::F32(_) => f32::from_bits(b as u32).is_nan(),
                BufferData::F64(_) => f64::from_bits(b).is_nan(),
                _ => false,
            };
            // Poison stays bit-exact; computed NaNs may differ in payload.
            let poison = |b: u64| {
                b as u32 == kjit_kernels::POISON_F32 || b == 0x7ff4_dead_beef_0000 || b == 0x7e55
            };
            let both_nan = nan(gb) && nan(wb) && poison(gb) == poison(wb);
            if gb != wb && !both_nan {
                return Err(format!(
                    "seed {seed:#x} {target} opt={optimize}: output {o} [{i}] (work-item {}, slot {}): device {gb:#x}, interpreter {wb:#x}\n{func}\n{}",
                    i / SLOTS as usize,
                    i % SLOTS as usize,
                    ck.asm
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn reproduce_seed_from_env() {
    let Ok(s) = std::env::var("KJIT_RANDOM_SEED") else {
        return;
    };
    let seed = u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex seed");
    let flavours: Vec<Flags> = match std::env::var("KJIT_FLAVOUR").as_deref() {
        Ok(name) if FLAVOURS.iter().any(|f| f.0 == name) => vec![flavour(name).0],
        _ => vec![(false, false, false, false), (true, false, false, false)],
    };
    // `KJIT_PRINT_MIR=1` prints the program of the first flavour and its MIR on gfx942;
    // `KJIT_PRINT_MIR=opt` does so after the optimizer.
    if let Ok(how) = std::env::var("KJIT_PRINT_MIR") {
        let mut f = random_kernel_with(seed, flavours[0]);
        if how == "opt" {
            f = kjit_ir::opt::optimized(&f);
        }
        println!("{f}");
        let mf = kjit_backend_gcn::isel::select(&f, Target::Gfx942).expect("isel");
        println!("{}", kjit_backend_gcn::mir_verify::DisplayMir(&mf));
    }
    if std::env::var("KJIT_PRINT_OPT").is_ok() {
        let f = random_kernel_with(seed, flavours[0]);
        let o = kjit_ir::opt::optimized(&f);
        println!("{o}");
        let case = random_case(seed);
        let (mut a, mut b) = (case.args.clone(), case.args.clone());
        kjit_ir::interp::run(&f, &case.launch, &mut a).expect("interpreter");
        kjit_ir::interp::run(&o, &case.launch, &mut b).expect("interpreter, optimized");
        for &i in &case.outputs {
            if a[i] != b[i] {
                println!("output {i}: the optimized program's interpretation differs");
            }
        }
    }
    // Both with and without the optimizer: the `optimized` and `loops` flavours run through it.
    let mut failures = Vec::new();
    for t in ALL_TARGETS {
        for &fl in &flavours {
            for optimize in [false, true] {
                if let Err(e) = check_flavour(seed, t, fl, optimize) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The program flavours the suite runs, with how many programs of each one CI run checks.
/// `(name, (div, wide, cross, long_loops), optimize, programs)`; 102,600 programs in all, a third
/// per target.
const FLAVOURS: &[(&str, Flags, bool, u64)] = &[
    // Arithmetic, selects, conversions and control flow without loads or division.
    ("plain", (false, false, false, false), false, 23400),
    // With loads (in and out of range) and exact integer division and remainder.
    ("loads", (true, false, false, false), false, 23400),
    // 64-bit integers, f64 and f16 next to the 32-bit program.
    ("wide", (true, true, false, false), false, 16200),
    // Wave shuffles, broadcasts, reductions and scans under divergence; LDS; atomics;
    // barriers in uniform control flow.
    ("cross", (true, false, true, false), false, 16200),
    // Loads and division through the e-graph optimizer first.
    ("optimized", (true, false, false, false), true, 14400),
    // As `optimized`, with loops of up to 7 trips: store-free loops with loads take the
    // optimizer's runtime unrolling (two iterations per trip, the second predicated).
    ("loops", (true, false, false, true), true, 9000),
];

/// A program flavour's switches: `(div, wide, cross, long_loops)` (see [`Gen`]).
type Flags = (bool, bool, bool, bool);

/// The fixed base of CI's seeds; `KJIT_RANDOM_BASE=<hex>` draws another set.
const CI_BASE: u64 = 0x6b6a_6974_2031_3521;

/// The `n`-th seed of flavour `name` from `base` (splitmix64 of base, flavour and index, so
/// every flavour draws its own programs).
fn seed_of(base: u64, name: &str, n: u64) -> u64 {
    let tag = name.bytes().fold(0u64, |h, b| h.rotate_left(8) ^ b as u64);
    Rng(base ^ tag.wrapping_mul(0x100_0000_01b3) ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15)).next()
}

/// The flavour entry named `name`: its switches and whether the optimizer runs.
fn flavour(name: &str) -> (Flags, bool) {
    let &(_, f, opt, _) = FLAVOURS
        .iter()
        .find(|f| f.0 == name)
        .unwrap_or_else(|| panic!("no flavour {name}"));
    (f, opt)
}

/// Runs `programs` (times `KJIT_RANDOM_SCALE`, default 1) programs of flavour `name` from the
/// CI base or `KJIT_RANDOM_BASE`, each on the target its seed picks; fails naming every seed
/// that differs and how to keep it as a regression case.
fn run_flavour(name: &str) {
    let base = match std::env::var("KJIT_RANDOM_BASE") {
        Ok(s) => u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex base"),
        Err(_) => CI_BASE,
    };
    let scale: u64 = std::env::var("KJIT_RANDOM_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let programs = FLAVOURS.iter().find(|f| f.0 == name).expect("flavour").3 * scale;
    let (flags, opt) = flavour(name);
    let (mut failures, mut skipped) = (Vec::new(), 0);
    for n in 0..programs {
        let seed = seed_of(base, name, n);
        let t = ALL_TARGETS[(seed % 3) as usize];
        match check_flavour(seed, t, flags, opt) {
            Ok(()) => {}
            Err(e) if e == SKIPPED => skipped += 1,
            Err(e) => failures.push(format!(
                "{e}
(keep it: add `{name} {seed:#x}` to tests/random_programs.regressions)"
            )),
        }
        if failures.len() >= 3 {
            break;
        }
    }
    println!("{name}: {programs} programs from base {base:#x}, {skipped} skipped");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn control_flow_and_arithmetic() {
    run_flavour("plain");
}

#[test]
fn with_loads_and_division() {
    run_flavour("loads");
}

#[test]
fn wide_types() {
    run_flavour("wide");
}

#[test]
fn cross_lane() {
    run_flavour("cross");
}

#[test]
fn optimized() {
    run_flavour("optimized");
}

#[test]
fn loops_unrolled_at_run_time() {
    run_flavour("loops");
    // The flavour is there for the optimizer's runtime unrolling: its programs must reach it.
    let (flags, _) = flavour("loops");
    let unrolled = (0..200)
        .map(|n| random_kernel_with(seed_of(CI_BASE, "loops", n), flags))
        .filter(|f| kjit_ir::opt::unroll_runtime::unroll_runtime_loops(f).is_some())
        .count();
    println!("loops: {unrolled} of the first 200 programs have a runtime-unrolled loop");
    assert!(
        unrolled >= 10,
        "only {unrolled} of 200 programs reach runtime unrolling"
    );
}

/// Every seed that once failed (`tests/random_programs.regressions`: `flavour seed` per line),
/// on all three targets.
#[test]
fn regression_cases() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/random_programs.regressions");
    let text = std::fs::read_to_string(&path).expect("tests/random_programs.regressions");
    let mut n = 0;
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (name, seed) = line.split_once(' ').expect("`flavour seed`");
        let seed = u64::from_str_radix(seed.trim().trim_start_matches("0x"), 16).expect("hex seed");
        let (flags, opt) = flavour(name);
        for t in ALL_TARGETS {
            match check_flavour(seed, t, flags, opt) {
                Ok(()) => {}
                Err(e) if e == SKIPPED => {}
                Err(e) => panic!("regression case `{line}`: {e}"),
            }
        }
        n += 1;
    }
    assert!(n > 0, "no regression cases in {}", path.display());
}

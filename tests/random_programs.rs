//! Random kernels (integer and float arithmetic, selects, conversions, loads in and out of
//! range, divergent and uniform ifs, loops with divergent trip counts, early returns, stores)
//! compiled for a target and run on kjit's GCN device must give exactly what the IR
//! interpreter gives. Every output element is compared bit for bit (any NaN equals any NaN;
//! elements neither run writes keep the same poison). The program is generated from a seed that
//! proptest draws, so a failure names a seed that reproduces it (`KJIT_RANDOM_SEED=...`).

use std::cell::RefCell;

use kjit::exec::run_case;
use kjit::{compile, CompileOptions};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_backend_gcn::Target;
use kjit_frontend::{Buffer, Dim, Function, KernelBuilder, Val, Var};
use kjit_ir::interp::{Arg, BufferData, LaunchDims};
use kjit_kernels::Case;
use kjit_runtime::emu::GcnEmulator;
use proptest::prelude::*;

/// splitmix64: the generator's own deterministic stream, from proptest's seed.
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
                // Trip count 0..=3, divergent or uniform.
                let bound = self.eu(1) & 3u32;
                let n = 1 + self.r(3) as u32;
                let target = self.r(NU as u64) as usize;
                k.for_range(k.lit(0u32), bound, k.lit(1u32), |i| {
                    let v = self.vu[target].get() + i;
                    self.vu[target].set(v);
                    self.stmts(n, depth + 1);
                });
            }
            _ => {
                if self.rng.borrow_mut().chance(3) {
                    let c = self.eb(1);
                    k.return_if(c);
                } else {
                    let v = self.eu(2);
                    self.vu[self.r(NU as u64) as usize].set(v);
                }
            }
        }
    }
}

/// A random kernel from `seed`: `(a: buf<u32>, b: buf<f32>, out: buf_mut<u32>,
/// outf: buf_mut<f32>, su: u32, sf: f32)`.
fn random_kernel(seed: u64, div: bool) -> Function {
    let k = KernelBuilder::new("random");
    let a = k.buffer::<u32>("a");
    let b = k.buffer::<f32>("b");
    let out = k.buffer_mut::<u32>("out");
    let outf = k.buffer_mut::<f32>("outf");
    let su = k.arg::<u32>("su");
    let sf = k.arg::<f32>("sf");
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
    let g = Gen {
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
    let n = 2 + g.r(6) as u32;
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
            Arg::U32(rng.below(9) as u32),
            Arg::F32(F_CONSTS[rng.below(10) as usize]),
        ],
        launch: LaunchDims {
            grid: [groups, 1, 1],
            block: [block, 1, 1],
        },
        outputs: vec![2, 3],
    }
}

/// The error of a case skipped because the optimizer's output did not verify.
const SKIPPED: &str = "skipped";

/// Compiles and runs the program of `seed` on `target`; `Err` describes the first difference.
fn check_seed(seed: u64, target: Target, div: bool, optimize: bool) -> Result<(), String> {
    let func = random_kernel(seed, div);
    let case = random_case(seed);
    let mut want = case.args.clone();
    kjit_ir::interp::run(&func, &case.launch, &mut want)
        .map_err(|e| format!("seed {seed:#x}: interpreter: {e}\n{func}"))?;
    let opts = CompileOptions {
        optimize,
        vgpr_budget: None,
        check: true,
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
            let both_nan = matches!(w, BufferData::F32(_))
                && f32::from_bits(gb as u32).is_nan()
                && f32::from_bits(wb as u32).is_nan()
                && (gb as u32 == kjit_kernels::POISON_F32)
                    == (wb as u32 == kjit_kernels::POISON_F32);
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
    if std::env::var("KJIT_PRINT_MIR").is_ok() {
        let f = random_kernel(seed, std::env::var("KJIT_DIV").is_ok());
        println!("{f}");
        let mf = kjit_backend_gcn::isel::select(&f, Target::Gfx942).expect("isel");
        println!("{}", kjit_backend_gcn::mir_verify::DisplayMir(&mf));
    }
    for t in ALL_TARGETS {
        for div in [false, true] {
            if let Err(e) = check_seed(seed, t, div, false) {
                panic!("{e}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    /// Arithmetic, selects, conversions and control flow without loads or division.
    #[test]
    fn control_flow_and_arithmetic(seed in any::<u64>()) {
        let t = ALL_TARGETS[(seed % 3) as usize];
        if let Err(e) = check_seed(seed, t, false, false) {
            prop_assert!(false, "{}", e);
        }
    }

    /// With loads (in and out of range) and exact integer division and remainder.
    #[test]
    fn with_loads_and_division(seed in any::<u64>()) {
        let t = ALL_TARGETS[(seed % 3) as usize];
        if let Err(e) = check_seed(seed, t, true, false) {
            prop_assert!(false, "{}", e);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 250, failure_persistence: None, ..ProptestConfig::default() })]

    /// The same through the e-graph optimizer first.
    #[test]
    fn optimized(seed in any::<u64>()) {
        let t = ALL_TARGETS[(seed % 3) as usize];
        match check_seed(seed, t, true, true) {
            Err(e) if e == SKIPPED => prop_assume!(false),
            Err(e) => prop_assert!(false, "{}", e),
            Ok(()) => {}
        }
    }
}

//! A register-heavy hash: every work-item keeps a large state (`STATE` u32 words) through many
//! rounds of table lookups. Each round loads one table entry per word, all addressed from the
//! previous round's state, so a round has `STATE` loads in flight on top of the live state:
//! the kind of kernel where the VGPR budget trades spills against waves per SIMD (what
//! `kjit tune` searches).

use crate::*;
use kjit_frontend::{Buffer, Dim, KernelBuilder, Val, Var};
use kjit_ir::ElemType;
use rand::RngExt;

/// u32 words of state per work-item.
pub const STATE: usize = 40;
/// Entries of the lookup table.
pub const TABLE: usize = 256;
/// Rounds (a multiple of every `unroll` value).
pub const ROUNDS: u32 = 8;

const PARAMS: &[TuneParam] = &[
    TuneParam {
        name: "block",
        values: &[256, 64, 128],
    },
    TuneParam {
        name: "unroll",
        values: &[1, 2, 4],
    },
];

/// Rotation of word `j` in a round.
fn rot(j: usize) -> u32 {
    3 + (j % 13) as u32
}

/// Initial state word `j` from the work-item's seed.
pub(crate) fn init(seed: u32, j: usize) -> u32 {
    seed.wrapping_mul(0x9e37_79b1_u32.wrapping_add(2 * j as u32)) ^ j as u32
}

/// The hash of a final state: `h0` xor every word times an odd constant.
pub(crate) fn fold_state(h0: u32, s: &[u32]) -> u32 {
    s.iter()
        .enumerate()
        .fold(h0, |h, (j, &v)| h ^ v.wrapping_mul(2 * j as u32 + 1))
}

/// The frame the hashes share (`hash_lanes` too): arguments `seeds`, `table`, `out`, `rounds`; every work-item
/// `i < out.len()` starts `words` state words from `seeds[i]` ([`init`]), runs `rounds` through
/// `body` (which returns the hash's initial value), and stores the [`fold_state`] of the state.
pub(crate) fn hash_kernel(
    name: &str,
    words: usize,
    body: impl for<'k> FnOnce(
        &'k KernelBuilder,
        &Buffer<'k, u32>,
        Val<'k, u32>,
        Val<'k, u32>,
        &[Var<'k, u32>],
    ) -> Val<'k, u32>,
) -> BuildResult {
    let k = KernelBuilder::new(name);
    let seeds = k.buffer::<u32>("seeds");
    let table = k.buffer::<u32>("table");
    let out = k.buffer_mut::<u32>("out");
    let rounds = k.arg::<u32>("rounds");
    let i = k.global_id(Dim::X);
    k.if_(i.lt(out.len()), || {
        let seed = k.load(&seeds, i);
        let s: Vec<_> = (0..words)
            .map(|j| {
                let w =
                    (seed * k.lit(0x9e37_79b1_u32.wrapping_add(2 * j as u32))) ^ k.lit(j as u32);
                k.var_named("state", w)
            })
            .collect();
        let mut h = body(&k, &table, rounds, seed, &s);
        for (j, v) in s.iter().enumerate() {
            h = h ^ (v.get() * k.lit(2 * j as u32 + 1));
        }
        k.store(&out, i, h);
    });
    k.finish()
}

/// Inputs of the hashes: `n` random seeds, a random table of `table` words, `rounds`, and
/// workgroups of `block` work-items.
pub(crate) fn hash_case(n: usize, seed: u64, table: usize, rounds: u32, block: u32) -> Case {
    let mut r = rng(seed);
    let seeds: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let table: Vec<u32> = (0..table).map(|_| r.random()).collect();
    Case {
        n,
        args: vec![
            Arg::Buffer(BufferData::U32(seeds)),
            Arg::Buffer(BufferData::U32(table)),
            poisoned(ElemType::U32, n),
            Arg::U32(rounds),
        ],
        launch: LaunchDims {
            grid: [groups(n, block), 1, 1],
            block: [block, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![2],
    }
}

/// The expected `out` of a hash case, from the CPU `hash(seed, table, rounds)`.
pub(crate) fn hashes(c: &Case, hash: fn(u32, &[u32], u32) -> u32) -> Vec<BufferData> {
    let (seeds, table, rounds) = (u32s(c, 0), u32s(c, 1), u32_arg(c, 3));
    vec![BufferData::U32(
        seeds.iter().map(|&s| hash(s, table, rounds)).collect(),
    )]
}

/// The kernel with `unroll` rounds per loop iteration (the result does not depend on it).
fn build_unrolled(unroll: u32) -> BuildResult {
    hash_kernel("hash_rounds", STATE, |k, table, rounds, _, s| {
        k.for_range(k.lit(0u32), rounds, k.lit(unroll), |_| {
            for _ in 0..unroll {
                let old: Vec<_> = s.iter().map(|v| v.get()).collect();
                let t: Vec<_> = (0..STATE)
                    .map(|j| {
                        let ix = (old[j] ^ (old[(j + 1) % STATE] >> 3u32)) & (TABLE as u32 - 1);
                        k.load(table, ix)
                    })
                    .collect();
                for j in 0..STATE {
                    let x = old[j] + t[j];
                    let r = (x << rot(j)) | (x >> (32 - rot(j)));
                    s[j].set(r ^ old[(j + STATE / 2) % STATE]);
                }
            }
        });
        k.lit(0u32)
    })
}

fn build_default() -> BuildResult {
    build_tuned(&[PARAMS[0].values[0], PARAMS[1].values[0]])
}

fn build_tuned(p: &[u32]) -> BuildResult {
    build_unrolled(p[1])
}

fn make_tuned(p: &[u32], n: usize, seed: u64) -> Case {
    hash_case(n, seed, TABLE, ROUNDS, p[0])
}

fn make_default(n: usize, seed: u64) -> Case {
    make_tuned(&[PARAMS[0].values[0], PARAMS[1].values[0]], n, seed)
}

/// The hash on the CPU.
pub fn hash(seed: u32, table: &[u32], rounds: u32) -> u32 {
    let mut s: Vec<u32> = (0..STATE).map(|j| init(seed, j)).collect();
    for _ in 0..rounds {
        let old = s.clone();
        for j in 0..STATE {
            let ix = (old[j] ^ (old[(j + 1) % STATE] >> 3)) as usize & (TABLE - 1);
            let x = old[j].wrapping_add(table[ix]);
            s[j] = x.rotate_left(rot(j)) ^ old[(j + STATE / 2) % STATE];
        }
    }
    fold_state(0, &s)
}

fn reference(c: &Case) -> Vec<BufferData> {
    hashes(c, hash)
}

/// The registry entry of `hash_rounds`.
pub const HASH_ROUNDS: KernelSpec = KernelSpec {
    name: "hash_rounds",
    description: "out[i] = hash of seeds[i]: 40 words of state, 8 rounds of 40 table lookups",
    build: build_default,
    make_case: make_default,
    reference,
    tolerance: Tolerance::EXACT,
    default_n: 2048,
    tuning: Some(Tuning {
        params: PARAMS,
        build: build_tuned,
        make_case: make_tuned,
    }),
};

/// `hash_chain`: a latency-bound register-heavy hash. Every work-item keeps `STATE` u32
/// words of state; each round walks the state in order, and each step's table index depends on
/// the previous step's lookup (`t = table[(t ^ s[j]) & 63]`), so a wave has one load in flight
/// at a time and waits the L1 latency for every lookup. Only other waves on the SIMD can fill
/// that wait, so more waves per SIMD help — up to the level whose VGPR budget no longer holds
/// the state, where it spills (the state is live through the whole loop). The table (64 words,
/// 256 bytes, like a cipher's S-box) is a few cache lines, so the L1 is not what bounds it.
pub mod chain {
    use super::*;

    /// u32 words of state per work-item (each round touches every one).
    pub const STATE: usize = 56;
    /// Entries of the lookup table (a mask of `TABLE - 1` keeps indices inside it).
    pub const TABLE: usize = 64;
    /// Rounds of the default case.
    pub const ROUNDS: u32 = 4;

    /// Rotation of word `j` in a step.
    fn rot(j: usize) -> u32 {
        1 + (j % 31) as u32
    }

    /// The kernel.
    fn build() -> BuildResult {
        hash_kernel("hash_chain", STATE, |k, table, rounds, seed, s| {
            let t = k.var_named("t", seed);
            k.for_range(k.lit(0u32), rounds, k.lit(1u32), |_| {
                for (j, sj) in s.iter().enumerate() {
                    let old = sj.get();
                    let v = k.load(table, (t.get() ^ old) & (TABLE as u32 - 1));
                    let x = old + v;
                    sj.set((x << rot(j)) | (x >> (32 - rot(j))));
                    t.set(v);
                }
            });
            t.get()
        })
    }

    /// Inputs: `n` random seeds, a random table, `rounds` = [`ROUNDS`]; 256-item workgroups.
    fn make_case(n: usize, seed: u64) -> Case {
        hash_case(n, seed, TABLE, ROUNDS, 256)
    }

    /// The hash on the CPU.
    pub fn hash(seed: u32, table: &[u32], rounds: u32) -> u32 {
        let mut s: Vec<u32> = (0..STATE).map(|j| init(seed, j)).collect();
        let mut t = seed;
        for _ in 0..rounds {
            for (j, sj) in s.iter_mut().enumerate() {
                let v = table[((t ^ *sj) as usize) & (TABLE - 1)];
                *sj = sj.wrapping_add(v).rotate_left(rot(j));
                t = v;
            }
        }
        fold_state(t, &s)
    }

    fn reference(c: &Case) -> Vec<BufferData> {
        hashes(c, hash)
    }

    /// The registry entry of `hash_chain`.
    pub const HASH_CHAIN: KernelSpec = KernelSpec {
        name: "hash_chain",
        description:
            "out[i] = hash of seeds[i]: 64 words of state, rounds of 64 dependent table lookups",
        build,
        make_case,
        reference,
        tolerance: Tolerance::EXACT,
        default_n: 2048,
        tuning: None,
    };
}

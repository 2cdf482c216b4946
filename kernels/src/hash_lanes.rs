//! `hash_lanes` and `hash_lanes_wide`: register-heavy hashes whose best occupancy is neither
//! the lowest nor the maximum. Every work-item hashes several interleaved streams ([`LANES`],
//! or [`WIDE_LANES`]; like a cipher or checksum kernel that keeps several independent blocks
//! per work-item to have more than one lookup in flight), each with [`WORDS`] u32 words of
//! state and its own dependence chain: `t = table[(t ^ s[j]) & 63]`, `s[j] = rotl(s[j] + t,
//! ...)`. A step issues one lookup per stream, so a wave has one load in flight per stream at
//! most and waits the L1 latency for the rest; more waves per SIMD fill that wait, up to the
//! level whose VGPR budget no longer holds the state, live through the whole round loop.
//!
//! Since the VGPR layout packs spill slots among the values (issue 15), `hash_lanes`' latency
//! schedule fits 114 VGPRs (4 waves on gfx942) and its default compile is the best level.
//! `hash_lanes_wide` (5 streams, 100 words) is the kernel where it is not: on gfx942 its
//! latency schedule takes 142 VGPRs (3 waves), the schedule bounded to level 4 fits 127 VGPRs
//! but gives up loads in flight at some waits, which the default compile's occupancy policy
//! refuses (`docs/backend.md`), and the tuner measures that level 4 is faster (`docs/tune.md`,
//! "The register-heavy kernels").

use crate::hash::{fold_state, hash_case, hash_kernel, hashes, init};
use crate::*;

/// Interleaved streams per work-item of `hash_lanes` (each its own lookup chain).
pub const LANES: usize = 4;
/// Interleaved streams per work-item of `hash_lanes_wide`.
pub const WIDE_LANES: usize = 5;
/// u32 words of state per stream.
pub const WORDS: usize = 20;
/// Entries of the lookup table (a mask of `TABLE - 1` keeps indices inside it): 256 bytes,
/// a few L1 lines, like a cipher's S-box.
pub const TABLE: usize = 64;
/// Rounds of the default case.
pub const ROUNDS: u32 = 4;

const PARAMS: &[TuneParam] = &[TuneParam {
    name: "block",
    values: &[256, 64, 128],
}];

/// Rotation of word `j` of a stream.
fn rot(j: usize) -> u32 {
    1 + (j % 31) as u32
}

/// The initial chain value of stream `l` (the streams start apart).
fn lane_seed(seed: u32, l: usize) -> u32 {
    seed ^ 0x85eb_ca6b_u32.wrapping_mul(l as u32 + 1)
}

/// The kernel `name` with `lanes` streams: state word `l * WORDS + j` is word `j` of stream
/// `l`; the steps of the streams are interleaved (word `j` of every stream, then word `j + 1`).
fn build_lanes(name: &str, lanes: usize) -> BuildResult {
    hash_kernel(name, lanes * WORDS, |k, table, rounds, seed, s| {
        let t: Vec<_> = (0..lanes)
            .map(|l| {
                let c = k.lit(0x85eb_ca6b_u32.wrapping_mul(l as u32 + 1));
                k.var_named("t", seed ^ c)
            })
            .collect();
        k.for_range(k.lit(0u32), rounds, k.lit(1u32), |_| {
            for j in 0..WORDS {
                for (l, tl) in t.iter().enumerate() {
                    let sj = &s[l * WORDS + j];
                    let old = sj.get();
                    let v = k.load(table, (tl.get() ^ old) & (TABLE as u32 - 1));
                    let x = old + v;
                    sj.set((x << rot(j)) | (x >> (32 - rot(j))));
                    tl.set(v);
                }
            }
        });
        t[1..].iter().fold(t[0].get(), |h, tl| h ^ tl.get())
    })
}

fn build() -> BuildResult {
    build_lanes("hash_lanes", LANES)
}

fn build_tuned(_: &[u32]) -> BuildResult {
    build()
}

fn build_wide() -> BuildResult {
    build_lanes("hash_lanes_wide", WIDE_LANES)
}

fn build_wide_tuned(_: &[u32]) -> BuildResult {
    build_wide()
}

/// Inputs: `n` random seeds, a random table, `rounds` = [`ROUNDS`]; workgroups of `p[0]`.
fn make_tuned(p: &[u32], n: usize, seed: u64) -> Case {
    hash_case(n, seed, TABLE, ROUNDS, p[0])
}

fn make_case(n: usize, seed: u64) -> Case {
    make_tuned(&[PARAMS[0].values[0]], n, seed)
}

/// The hash of `lanes` streams on the CPU.
fn hash_of_lanes(lanes: usize, seed: u32, table: &[u32], rounds: u32) -> u32 {
    let mut s: Vec<u32> = (0..lanes * WORDS).map(|j| init(seed, j)).collect();
    let mut t: Vec<u32> = (0..lanes).map(|l| lane_seed(seed, l)).collect();
    for _ in 0..rounds {
        for j in 0..WORDS {
            for (l, tl) in t.iter_mut().enumerate() {
                let sj = &mut s[l * WORDS + j];
                let v = table[((*tl ^ *sj) as usize) & (TABLE - 1)];
                *sj = sj.wrapping_add(v).rotate_left(rot(j));
                *tl = v;
            }
        }
    }
    fold_state(t.iter().fold(0, |h, &v| h ^ v), &s)
}

/// `hash_lanes` on the CPU.
pub fn hash(seed: u32, table: &[u32], rounds: u32) -> u32 {
    hash_of_lanes(LANES, seed, table, rounds)
}

/// `hash_lanes_wide` on the CPU.
pub fn hash_wide(seed: u32, table: &[u32], rounds: u32) -> u32 {
    hash_of_lanes(WIDE_LANES, seed, table, rounds)
}

fn reference(c: &Case) -> Vec<BufferData> {
    hashes(c, hash)
}

fn reference_wide(c: &Case) -> Vec<BufferData> {
    hashes(c, hash_wide)
}

/// The registry entry of `hash_lanes`.
pub const HASH_LANES: KernelSpec = KernelSpec {
    name: "hash_lanes",
    description: "out[i] = hash of seeds[i]: 4 interleaved streams of 20 words, rounds of 80 dependent table lookups",
    build,
    make_case,
    reference,
    tolerance: Tolerance::EXACT,
    default_n: 2048,
    tuning: Some(Tuning {
        params: PARAMS,
        build: build_tuned,
        make_case: make_tuned,
    }),
};

/// The registry entry of `hash_lanes_wide`.
pub const HASH_LANES_WIDE: KernelSpec = KernelSpec {
    name: "hash_lanes_wide",
    description: "out[i] = hash of seeds[i]: 5 interleaved streams of 20 words, rounds of 100 dependent table lookups",
    build: build_wide,
    make_case,
    reference: reference_wide,
    tolerance: Tolerance::EXACT,
    default_n: 2048,
    tuning: Some(Tuning {
        params: PARAMS,
        build: build_wide_tuned,
        make_case: make_tuned,
    }),
};

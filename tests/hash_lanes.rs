//! `hash_lanes` and `hash_lanes_wide` (`kernels/src/hash_lanes.rs`): four (five) interleaved
//! lookup chains over 80 (100) words of state per work-item. Their compiled code gives the CPU
//! reference's hashes on every target. That their default compiles reach the occupancy level
//! the tuner used to find above them (since the VGPR layout packs spill slots among the values,
//! and, for `hash_lanes_wide`, since the singles beyond regalloc2's 64-register class go to a
//! second class) is `hash_lanes_default_reaches_the_level_the_tuner_found` and
//! `hash_lanes_wide_default_reaches_the_level_the_tuner_found` in `tests/tune.rs`.

use kjit::exec::run_case;
use kjit::{compile, CompileOptions};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_runtime::emu::gcn::GcnEmulator;

/// The default compile of `name` on gfx942, gfx90a and gfx900, run on kjit's software device,
/// against the CPU reference for every seed (sizes with a partial last workgroup), and the
/// reference `hash` depends on every stream: seeds that differ give different hashes.
fn device_matches_the_reference(name: &str, hash: fn(u32, &[u32], u32) -> u32) {
    let spec = kjit_kernels::find(name).expect("in the library");
    let func = (spec.build)().expect("builds");
    let dev = GcnEmulator::new();
    let mut failures = Vec::new();
    for t in ALL_TARGETS {
        let ck =
            compile(&func, t, &CompileOptions::default()).unwrap_or_else(|e| panic!("{t}: {e}"));
        for n in [1usize, 67, 300] {
            let case = (spec.make_case)(n, 3 + n as u64);
            let want = (spec.reference)(&case);
            match run_case(&dev, &ck.code_object, &func, &case) {
                Ok(out) => {
                    if let Err(m) = kjit_kernels::check(&case, &out.args, &want, spec.tolerance) {
                        failures.push(format!("{t} n={n}: {m}"));
                    }
                }
                Err(e) => failures.push(format!("{t} n={n}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let table: Vec<u32> = (0..kjit_kernels::hash_lanes::TABLE as u32)
        .map(|x| x.wrapping_mul(0x2545_f491) ^ 0x9e37)
        .collect();
    let h: Vec<u32> = (0..64).map(|s| hash(s, &table, 2)).collect();
    let mut distinct = h.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), h.len(), "{h:?}");
}

#[test]
fn device_matches_the_reference_on_every_target() {
    device_matches_the_reference("hash_lanes", kjit_kernels::hash_lanes::hash);
}

/// The same for the 5-stream shape.
#[test]
fn wide_device_matches_the_reference_on_every_target() {
    device_matches_the_reference("hash_lanes_wide", kjit_kernels::hash_lanes::hash_wide);
}

//! `kjit::tune` and `kjit tune`: every occupancy level is a candidate, a fast wrong candidate
//! is rejected and reported, the JSON carries what the issue asks for, the winner is cached
//! and answered from the cache, `--tuned` compiles with it, and the plot is written.

use std::process::Command;

use kjit::tune::{table, tune, Job, Space, TuneOptions};
use kjit_backend_gcn::Target;
use kjit_frontend::{Dim, KernelBuilder};
use kjit_ir::interp::{Arg, BufferData, LaunchDims};
use kjit_kernels::Case;

/// `out[i] = x[i] * 3 + 1` with a parameter `variant`: 0 computes it, 1 skips the `+ 1` (one
/// instruction fewer, so fewer cycles, and wrong).
fn job() -> Job<'static> {
    Job {
        name: "scale".into(),
        n: 200,
        params: vec![("variant".into(), vec![0, 1])],
        build: Box::new(|p| {
            let k = KernelBuilder::new("scale");
            let x = k.buffer::<u32>("x");
            let out = k.buffer_mut::<u32>("out");
            let i = k.global_id(Dim::X);
            let v = k.load(&x, i) * k.lit(3u32);
            let v = if p[0] == 0 { v + k.lit(1u32) } else { v };
            k.store(&out, i, v);
            k.finish().map_err(|e| e.to_string())
        }),
        case: Box::new(|_| Case {
            n: 200,
            args: vec![
                Arg::Buffer(BufferData::U32((0..200).collect())),
                Arg::Buffer(BufferData::U32(vec![0; 200])),
            ],
            launch: LaunchDims {
                grid: [4, 1, 1],
                block: [64, 1, 1],
                dynamic_lds: 0,
            },
            outputs: vec![1],
        }),
        check: Box::new(|_, args| match &args[1] {
            Arg::Buffer(BufferData::U32(v))
                if v.iter().enumerate().all(|(i, &y)| y == 3 * i as u32 + 1) =>
            {
                Ok(())
            }
            _ => Err("out[i] != 3 x[i] + 1".into()),
        }),
    }
}

#[test]
fn every_level_is_a_candidate_and_a_fast_wrong_one_is_rejected() {
    let mut opts = TuneOptions::new(Target::Gfx942);
    opts.space = Space::All;
    let mut calls = 0;
    let r = tune(&job(), &opts, &mut |_, _| calls += 1).expect("tunes");
    // 2 variants x (default + 8 levels).
    assert_eq!(r.candidates.len(), 18, "{}", table(&r));
    assert_eq!(calls, 18);
    for v in [0, 1] {
        let levels: Vec<Option<u32>> = r
            .candidates
            .iter()
            .filter(|c| c.params[0].1 == v)
            .map(|c| c.occupancy)
            .collect();
        assert_eq!(
            levels,
            [None]
                .into_iter()
                .chain((1..=8).map(Some))
                .collect::<Vec<_>>()
        );
    }
    let wrong: Vec<_> = r.candidates.iter().filter(|c| c.params[0].1 == 1).collect();
    assert!(wrong.iter().all(|c| !c.correct), "{}", table(&r));
    assert!(wrong[0]
        .note
        .as_deref()
        .unwrap_or("")
        .contains("wrong result"));
    let right_cycles = r.candidates[0].cycles.unwrap();
    assert!(
        wrong[0].cycles.unwrap() < right_cycles,
        "the wrong variant should be the faster one, or this test shows nothing:\n{}",
        table(&r)
    );
    let best = r.best().expect("a winner");
    assert!(best.correct && best.params[0].1 == 0, "{}", table(&r));
    // The JSON has the fields the issue names, for every candidate and the best.
    let j = r.to_json();
    for c in j["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .chain([&j["best"]])
    {
        for key in [
            "occupancy",
            "vgpr_budget",
            "vgprs",
            "spills",
            "cycles",
            "correct",
        ] {
            assert!(c.get(key).is_some(), "{key} missing in {c}");
        }
    }
    assert_eq!(j["candidates"][3]["vgpr_budget"], 168);
}

#[test]
fn occupancy_space_keeps_the_parameters_at_their_defaults() {
    let r = tune(&job(), &TuneOptions::new(Target::Gfx900), &mut |_, _| {}).expect("tunes");
    assert_eq!(r.candidates.len(), 11, "default + 10 levels on gfx900");
    // Levels 9 and 10 need more than 8 waves/SIMD of 1024-item workgroups (the builder's
    // default maximum workgroup size): unreachable, reported, not run.
    for c in &r.candidates {
        let unreachable = c.note.as_deref().unwrap_or("").starts_with("unreachable");
        assert!(c.params[0].1 == 0, "{}", table(&r));
        assert_eq!(c.correct, !unreachable, "{}", table(&r));
        assert_eq!(unreachable, c.occupancy > Some(8), "{}", table(&r));
    }
    // Only the first of identical code objects runs; the others say so.
    assert!(r.candidates[1..].iter().any(|c| c
        .note
        .as_deref()
        .unwrap_or("")
        .starts_with("same code as")));
}

fn kjit_in(cache: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kjit"))
        .args(args)
        .env("KJIT_CACHE_DIR", cache)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run kjit");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_tunes_caches_plots_and_compiles_tuned() {
    let dir = std::env::temp_dir().join(format!("kjit-tune-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let plot = dir.join("curve.svg");
    let (ok, _, err) = kjit_in(&dir, &["run", "reduce_sum", "--tuned", "-n", "512"]);
    assert!(!ok && err.contains("kjit tune reduce_sum"), "{err}");
    let args = [
        "tune",
        "reduce_sum",
        "-n",
        "512",
        "--plot",
        plot.to_str().unwrap(),
    ];
    let (ok, out, err) = kjit_in(&dir, &args);
    assert!(ok, "{out}{err}");
    assert!(out.contains("best: #") && out.contains("tuned in"), "{out}");
    let svg = std::fs::read_to_string(&plot).expect("plot written");
    assert!(
        svg.starts_with("<svg") && svg.contains("cycles"),
        "{svg:.200}"
    );
    let (ok, out, _) = kjit_in(&dir, &args);
    assert!(ok && out.contains("answered from the cache"), "{out}");
    let (ok, out, _) = kjit_in(&dir, &["tune", "reduce_sum", "-n", "512", "--no-cache"]);
    assert!(
        ok && out.contains("tuned in") && !out.contains("from the cache"),
        "{out}"
    );
    let (ok, out, _) = kjit_in(&dir, &["tune", "reduce_sum", "-n", "512", "--json"]);
    let j: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(
        ok && j["best"]["cycles"].is_u64() && j["from_cache"] == true,
        "{out}"
    );
    let (ok, out, err) = kjit_in(&dir, &["run", "reduce_sum", "--tuned", "-n", "512"]);
    assert!(
        ok && out.contains("tuned: occupancy") && out.contains("PASS"),
        "{out}{err}"
    );
    let (ok, _, err) = kjit_in(&dir, &["tune", "reduce_sum", "--timing", "mi25"]);
    assert!(!ok && err.contains("mi25 is a gfx900"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The latency-bound register-heavy hash (`hash_chain`: 56 words of state, every lookup's
/// index from the previous lookup) on a problem that fills mi25's 256 SIMDs at 3 waves each:
/// more waves hide the lookups' latency until the level whose budget no longer holds the state,
/// which spills to scratch inside the round loop. So the best budget is neither the default
/// compile (its latency schedule spreads to one wave per SIMD) nor the highest occupancy, the
/// winner keeps the state in registers, and the next level up spills it to scratch.
#[test]
fn hash_chain_best_budget_is_in_between() {
    let spec = kjit_kernels::find("hash_chain").unwrap();
    let mut job = Job::from_library(spec, 256 * 3 * 64, 1);
    let case = job.case;
    // Two rounds (the library's default is 4) keep the test's model runs short.
    job.case = Box::new(move |p| {
        let mut c = case(p);
        c.args[3] = Arg::U32(2);
        c
    });
    let opts = TuneOptions {
        model: "mi25".into(),
        ..TuneOptions::new(Target::Gfx900)
    };
    let r = tune(&job, &opts, &mut |_, _| {}).expect("tunes");
    eprintln!("{}", table(&r));
    let best = r.best().expect("a winner");
    let level = best
        .occupancy
        .expect("the winner is an occupancy level, not the default");
    let default = &r.candidates[0];
    assert!(
        level > default.reached_occupancy && level < Target::Gfx900.max_waves_per_simd(),
        "{}",
        table(&r)
    );
    assert!(best.speedup.unwrap() > 1.2, "{}", table(&r));
    assert_eq!(best.spills_scratch, 0, "{}", table(&r));
    let next = r
        .candidates
        .iter()
        .find(|c| c.occupancy == Some(level + 1))
        .unwrap();
    assert!(
        next.spills_scratch > 0 && next.cycles > best.cycles,
        "{}",
        table(&r)
    );
}

/// `matmul` declares its tile edge: `--space all` compiles and runs every tile size (8, 16,
/// 32: workgroups of 64 to 1024 work-items, different LDS tiles and unrolled inner loops), and
/// every candidate's output is checked against the reference.
#[test]
fn matmul_tile_sizes_are_searched_and_checked() {
    let spec = kjit_kernels::find("matmul").unwrap();
    let opts = TuneOptions {
        space: Space::All,
        ..TuneOptions::new(Target::Gfx942)
    };
    let r = tune(&Job::from_library(spec, 40, 1), &opts, &mut |_, _| {}).expect("tunes");
    let mut tiles: Vec<u32> = r
        .candidates
        .iter()
        .filter_map(|c| c.params.iter().find(|(n, _)| n == "tile").map(|p| p.1))
        .collect();
    tiles.sort();
    tiles.dedup();
    assert_eq!(tiles, [8, 16, 32], "{}", table(&r));
    assert!(
        r.candidates.iter().all(|c| c.correct && c.cycles.is_some()),
        "{}",
        table(&r)
    );
}

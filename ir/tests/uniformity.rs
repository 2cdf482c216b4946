//! The uniformity analysis on ids, loads, loop counters and values merging divergent paths.

use kjit_ir::parse::parse_function;
use kjit_ir::*;

fn analyse(text: &str) -> (Function, Uniformity) {
    let f = parse_function(text).unwrap();
    verify(&f).unwrap();
    let u = Uniformity::compute(&f);
    (f, u)
}

fn v(n: u32) -> Value {
    Value::from_u32(n)
}
fn b(n: u32) -> Block {
    Block::from_u32(n)
}

#[test]
fn ids_params_and_arithmetic() {
    let (_, u) = analyse(
        "kernel k(n: u32, x: buf_mut<u32>) {
block0(v0: u32, v1: buf_mut<u32>):
    v2:u32 = workitem_id.x
    v3:u32 = workgroup_id.x
    v4:u32 = workgroup_size.x
    v5:u32 = num_workgroups.y
    v6:u32 = lane_id
    v7:u32 = mul v3, v4
    v8:u32 = add v7, v2
    v9:u32 = add v7, v0
    v10:u32 = buffer_len v1
    store v1[v8], v9
    return
}
",
    );
    for x in [2, 6, 8] {
        assert!(u.is_divergent(v(x)), "v{x}");
    }
    for x in [0, 1, 3, 4, 5, 7, 9, 10] {
        assert!(u.is_uniform(v(x)), "v{x}");
    }
}

#[test]
fn loads_from_uniform_addresses_are_uniform() {
    let (_, u) = analyse(
        "kernel k(x: buf<f32>, y: buf_mut<f32>) {
    lds0 = lds t: f32[64]
block0(v0: buf<f32>, v1: buf_mut<f32>):
    v2:u32 = workgroup_id.x
    v3:u32 = workitem_id.x
    v4:f32 = load v0[v2]
    v5:f32 = load v0[v3]
    v6:f32, v7:f32 = load.x2 v0[v2+1]
    store lds0[v3], v5
    barrier
    v8:u32 = const.u32 0
    v9:f32 = load lds0[v8]
    v10:f32 = atomic_add v1[v2], v4
    v11:f32 = wave_shuffle v4, v3
    v12:f32 = wave_reduce.add v5
    v13:f32 = wave_broadcast v5, 3
    v14:f32 = wave_scan.add v4
    store v1[v3], v5
    return
}
",
    );
    for x in [4, 6, 7, 9, 12, 13] {
        assert!(u.is_uniform(v(x)), "v{x}");
    }
    // Every lane gets its own old value from an atomic, and shuffles/scans differ per lane.
    for x in [5, 10, 11, 14] {
        assert!(u.is_divergent(v(x)), "v{x}");
    }
}

const LOOP: &str = "kernel k(n: u32, out: buf_mut<u32>) {
block0(v0: u32, v1: buf_mut<u32>):
    v2:u32 = workitem_id.x
    v3:u32 = const.u32 0
    v4:u32 = const.u32 1
    jump block1(v3)
block1(v5: u32):
    v6:bool = lt v5, BOUND
    brif v6, block2, block3
block2:
    v7:u32 = add v5, v4
    jump block1(v7)
block3:
    store v1[v2], USE
    return
}
";

#[test]
fn loop_counter_with_uniform_bound_is_uniform() {
    let (_, u) = analyse(&LOOP.replace("BOUND", "v0").replace("USE", "v5"));
    assert!(u.is_uniform(v(5)));
    assert!(u.is_uniform(v(7)));
    assert!(!u.is_divergent_branch(b(1)));
    assert!(!u.in_divergent_region(b(2)));
}

#[test]
fn loop_counter_leaving_a_divergent_loop_is_divergent() {
    // Lanes leave after different numbers of iterations: inside the loop the counter is the same
    // in every active lane, but after it each lane saw its own last value.
    let (_, u) = analyse(&LOOP.replace("BOUND", "v2").replace("USE", "v5"));
    assert!(u.is_divergent_branch(b(1)));
    assert!(u.in_divergent_region(b(2)));
    assert!(u.is_divergent(v(5)));
    // Without the use after the loop, the counter stays uniform.
    let (_, u) = analyse(&LOOP.replace("BOUND", "v2").replace("USE", "v2"));
    assert!(u.is_uniform(v(5)));
    assert!(u.is_uniform(v(7)));
}

const MERGE: &str = "kernel k(n: u32, out: buf_mut<u32>) {
block0(v0: u32, v1: buf_mut<u32>):
    v2:u32 = workitem_id.x
    v3:bool = lt COND, v0
    brif v3, block1, block2
block1:
    v4:u32 = const.u32 1
    jump block3(v4)
block2:
    v5:u32 = const.u32 2
    jump block3(v5)
block3(v6: u32):
    v7:u32 = add v6, v0
    store v1[v2], v7
    return
}
";

#[test]
fn values_merging_divergent_paths_are_divergent() {
    let (_, u) = analyse(&MERGE.replace("COND", "v2"));
    assert!(u.is_divergent_branch(b(0)));
    assert!(u.is_uniform(v(4)) && u.is_uniform(v(5)));
    assert!(u.is_divergent(v(6)));
    assert!(u.is_divergent(v(7)));
    assert!(u.in_divergent_region(b(1)) && u.in_divergent_region(b(2)));
    assert!(!u.in_divergent_region(b(3)));
    // The same join under a uniform branch is uniform.
    let (_, u) = analyse(&MERGE.replace("COND", "v0"));
    assert!(!u.is_divergent_branch(b(0)));
    assert!(u.is_uniform(v(6)) && u.is_uniform(v(7)));
}

#[test]
fn divergence_is_found_through_the_fixed_point() {
    // The branch in block1 becomes divergent only once v8 (a block parameter fed by a divergent
    // join further down) is known divergent.
    let (_, u) = analyse(
        "kernel k(out: buf_mut<u32>) {
block0(v0: buf_mut<u32>):
    v1:u32 = workitem_id.x
    v2:u32 = const.u32 0
    v3:u32 = const.u32 10
    jump block1(v2)
block1(v8: u32):
    v9:bool = lt v8, v3
    brif v9, block2, block5
block2:
    v10:bool = lt v1, v8
    brif v10, block3, block4(v8)
block3:
    v11:u32 = const.u32 3
    v12:u32 = add v8, v11
    jump block4(v12)
block4(v13: u32):
    v14:u32 = const.u32 1
    v15:u32 = add v13, v14
    jump block1(v15)
block5:
    store v0[v1], v8
    return
}
",
    );
    assert!(u.is_divergent(v(13)));
    assert!(u.is_divergent(v(8)));
    assert!(u.is_divergent_branch(b(1)));
}

#[test]
fn the_verifier_gives_the_same_uniformity_as_the_analysis() {
    // Instruction selection takes the uniformity from the verifier (`verify_with_uniformity`)
    // instead of computing it again; a function without a barrier gets it too.
    for cond in ["v2", "v0"] {
        let text = MERGE.replace("COND", cond);
        let f = parse_function(&text).unwrap();
        let from_verifier = verify_with_uniformity(&f).unwrap();
        let analysed = Uniformity::compute(&f);
        for n in 0..8 {
            assert_eq!(
                from_verifier.is_divergent(v(n)),
                analysed.is_divergent(v(n)),
                "v{n}"
            );
        }
        for n in 0..4 {
            assert_eq!(
                from_verifier.is_divergent_branch(b(n)),
                analysed.is_divergent_branch(b(n))
            );
            assert_eq!(
                from_verifier.in_divergent_region(b(n)),
                analysed.in_divergent_region(b(n))
            );
        }
        assert_eq!(from_verifier.is_divergent(v(6)), cond == "v2");
    }
    // A malformed function is still an error.
    let bad = MERGE.replace("COND", "v9");
    if let Ok(f) = parse_function(&bad) {
        assert!(verify_with_uniformity(&f).is_err());
    }
}

//! The interpreter's execution model: SIMT divergence and reconvergence, early exit, wave
//! operations over the active lanes, barriers between waves, memory rules and errors.
#![allow(
    clippy::needless_range_loop,
    clippy::manual_div_ceil,
    clippy::manual_range_patterns
)]

use kjit_ir::interp::*;
use kjit_ir::parse::parse_function;

fn run_text(text: &str, launch: LaunchDims, args: &mut [Arg]) -> Result<RunStats, InterpError> {
    let f = parse_function(text).unwrap();
    run(&f, &launch, args)
}

fn one_wave() -> LaunchDims {
    LaunchDims {
        grid: [1, 1, 1],
        block: [64, 1, 1],
        dynamic_lds: 0,
    }
}

fn u32_out(args: &[Arg], i: usize) -> Vec<u32> {
    match &args[i] {
        Arg::Buffer(BufferData::U32(v)) => v.clone(),
        a => panic!("{a:?}"),
    }
}

#[test]
fn wave_ops_see_only_the_active_lanes_and_lanes_reconverge() {
    // out[lane] = (count of lanes on my side of the branch) * 100 + (count after the join).
    let text = "kernel k(out: buf_mut<u32>) {
block0(v0: buf_mut<u32>):
    v1:u32 = lane_id
    v2:u32 = const.u32 10
    v3:u32 = const.u32 1
    v4:u32 = const.u32 100
    v5:bool = lt v1, v2
    brif v5, block1, block2
block1:
    v6:u32 = wave_reduce.add v3
    jump block3(v6)
block2:
    v7:u32 = wave_reduce.add v3
    jump block3(v7)
block3(v8: u32):
    v9:u32 = wave_reduce.add v3
    v10:u32 = mul v8, v4
    v11:u32 = add v10, v9
    store v0[v1], v11
    return
}
";
    let mut args = vec![Arg::Buffer(BufferData::U32(vec![0; 64]))];
    let stats = run_text(text, one_wave(), &mut args).unwrap();
    let out = u32_out(&args, 0);
    for (l, &x) in out.iter().enumerate() {
        assert_eq!(x, if l < 10 { 1064 } else { 5464 }, "lane {l}");
    }
    assert_eq!(stats.divergent_branches, 1);
}

#[test]
fn lanes_that_return_early_leave_the_wave() {
    let text = "kernel k(out: buf_mut<u32>) {
block0(v0: buf_mut<u32>):
    v1:u32 = lane_id
    v2:u32 = const.u32 1
    v3:u32 = and v1, v2
    v4:bool = ne v3, v2
    brif v4, block1, block2
block1:
    return
block2:
    v5:u32 = wave_reduce.add v2
    v6:u32 = wave_scan.add v2
    v7:u32 = wave_broadcast v1, 0
    v8:u32 = wave_broadcast v1, 5
    v9:u32 = add v5, v6
    v10:u32 = add v7, v8
    v11:u32 = const.u32 1000
    v12:u32 = mul v10, v11
    v13:u32 = add v9, v12
    store v0[v1], v13
    return
}
";
    let mut args = vec![Arg::Buffer(BufferData::U32(vec![7; 64]))];
    run_text(text, one_wave(), &mut args).unwrap();
    let out = u32_out(&args, 0);
    for (l, &x) in out.iter().enumerate() {
        if l % 2 == 0 {
            assert_eq!(x, 7, "even lanes returned before the store");
        } else {
            // 32 odd lanes; scan position (l+1)/2; lane 0 is inactive (0), lane 5 is active.
            assert_eq!(x, 32 + (l as u32 + 1) / 2 + 5 * 1000, "lane {l}");
        }
    }
}

#[test]
fn divergent_loop_runs_each_lane_its_own_trip_count() {
    // Each lane counts to lane_id; inside the loop, a wave reduction counts the active lanes.
    let text = "kernel k(out: buf_mut<u32>, active: buf_mut<u32>) {
block0(v0: buf_mut<u32>, v1: buf_mut<u32>):
    v2:u32 = lane_id
    v3:u32 = const.u32 0
    v4:u32 = const.u32 1
    jump block1(v3)
block1(v5: u32):
    v6:bool = lt v5, v2
    brif v6, block2, block3
block2:
    v7:u32 = wave_reduce.add v4
    store v1[v5], v7
    v8:u32 = add v5, v4
    jump block1(v8)
block3:
    store v0[v2], v5
    return
}
";
    let mut args = vec![
        Arg::Buffer(BufferData::U32(vec![0; 64])),
        Arg::Buffer(BufferData::U32(vec![0; 64])),
    ];
    run_text(text, one_wave(), &mut args).unwrap();
    assert_eq!(u32_out(&args, 0), (0..64).collect::<Vec<u32>>());
    // In iteration i, lanes i+1..64 are still looping.
    let active = u32_out(&args, 1);
    for i in 0..63 {
        assert_eq!(active[i], 63 - i as u32, "iteration {i}");
    }
}

#[test]
fn shuffle_from_an_inactive_lane_gives_zero() {
    let text = "kernel k(out: buf_mut<u32>) {
block0(v0: buf_mut<u32>):
    v1:u32 = lane_id
    v2:u32 = const.u32 32
    v3:bool = lt v1, v2
    brif v3, block1, block2
block1:
    v4:u32 = const.u32 63
    v5:u32 = xor v1, v4
    v6:u32 = const.u32 1
    v7:u32 = add v1, v6
    v8:u32 = wave_shuffle v7, v5
    v9:u32 = wave_shuffle v7, v1
    v10:u32 = add v8, v9
    store v0[v1], v10
    jump block2
block2:
    return
}
";
    let mut args = vec![Arg::Buffer(BufferData::U32(vec![9; 64]))];
    run_text(text, one_wave(), &mut args).unwrap();
    let out = u32_out(&args, 0);
    for l in 0..32 {
        assert_eq!(
            out[l],
            l as u32 + 1,
            "lane {l} reads lane {} (inactive) as 0",
            63 - l
        );
    }
    assert!(out[32..].iter().all(|x| *x == 9));
}

#[test]
fn barrier_orders_lds_between_waves() {
    // Wave 1 reads what wave 0 wrote before the barrier; wave 0 runs first, so without the
    // barrier model wave 1's reads would see unwritten LDS and fail.
    let text = "kernel k(out: buf_mut<u32>) {
    lds0 = lds t: u32[128]
block0(v0: buf_mut<u32>):
    v1:u32 = workitem_id.x
    v2:u32 = const.u32 127
    v3:u32 = sub v2, v1
    v4:u32 = const.u32 3
    v5:u32 = mul v1, v4
    store lds0[v1], v5
    barrier
    v6:u32 = load lds0[v3]
    store v0[v1], v6
    return
}
";
    let mut args = vec![Arg::Buffer(BufferData::U32(vec![0; 128]))];
    let launch = LaunchDims {
        grid: [1, 1, 1],
        block: [128, 1, 1],
        dynamic_lds: 0,
    };
    let stats = run_text(text, launch, &mut args).unwrap();
    assert_eq!(stats.barriers, 1);
    let out = u32_out(&args, 0);
    for (i, &x) in out.iter().enumerate() {
        assert_eq!(x, (127 - i as u32) * 3);
    }
    // The same kernel without the barrier reads LDS no one has written yet.
    let nobar = text.replace("    barrier\n", "");
    let e = run_text(&nobar, launch, &mut args).unwrap_err();
    assert!(e.to_string().contains("which no one wrote"), "{e}");
}

#[test]
fn global_memory_is_bounds_checked_and_lds_errors_are_reported() {
    let text = "kernel k(x: buf<u32>, out: buf_mut<u32>) {
block0(v0: buf<u32>, v1: buf_mut<u32>):
    v2:u32 = lane_id
    v3:u32, v4:u32 = load.x2 v0[v2+2]
    v5:u32 = add v3, v4
    store v1[v2+1], v5
    return
}
";
    let mut args = vec![
        Arg::Buffer(BufferData::U32((1..=10).collect())),
        Arg::Buffer(BufferData::U32(vec![0; 5])),
    ];
    run_text(text, one_wave(), &mut args).unwrap();
    // out[i+1] = x[i+2] + x[i+3] (x[j] = j+1; 0 past the end); stores past 5 dropped.
    assert_eq!(u32_out(&args, 1), vec![0, 3 + 4, 4 + 5, 5 + 6, 6 + 7]);

    let lds = "kernel k(out: buf_mut<u32>) {
    lds0 = lds t: u32[64]
block0(v0: buf_mut<u32>):
    v1:u32 = lane_id
    store lds0[v1+1], v1
    return
}
";
    let e = run_text(lds, one_wave(), &mut args[1..]).unwrap_err();
    assert!(
        e.to_string()
            .contains("LDS store to lds0[64], which has 64 elements"),
        "{e}"
    );
}

#[test]
fn bad_launches_and_arguments_are_errors() {
    let text = "kernel k(a: f32, out: buf_mut<u32>) {
block0(v0: f32, v1: buf_mut<u32>):
    return
}
";
    let e = run_text(text, one_wave(), &mut [Arg::F32(1.0)]).unwrap_err();
    assert!(matches!(e, InterpError::BadArgs(_)), "{e}");
    let e = run_text(
        text,
        one_wave(),
        &mut [Arg::U32(1), Arg::Buffer(BufferData::U32(vec![]))],
    )
    .unwrap_err();
    assert!(e.to_string().contains("a is f32"), "{e}");
    let e = run_text(
        text,
        one_wave(),
        &mut [Arg::F32(1.0), Arg::Buffer(BufferData::F32(vec![]))],
    )
    .unwrap_err();
    assert!(e.to_string().contains("buffer of f32"), "{e}");
    let big = LaunchDims {
        grid: [1, 1, 1],
        block: [1025, 1, 1],
        dynamic_lds: 0,
    };
    let e = run_text(
        text,
        big,
        &mut [Arg::F32(1.0), Arg::Buffer(BufferData::U32(vec![]))],
    )
    .unwrap_err();
    assert!(matches!(e, InterpError::BadLaunch(_)), "{e}");
}

#[test]
fn endless_loop_hits_the_step_limit() {
    let text = "kernel k() {
block0:
    jump block1
block1:
    jump block1
}
";
    let f = parse_function(text).unwrap();
    let e = run_with(
        &f,
        &one_wave(),
        &mut [],
        &Options {
            max_wave_insts: 10_000,
        },
    )
    .unwrap_err();
    assert_eq!(e, InterpError::StepLimit(10_001));
}

#[test]
fn workgroups_and_ids_cover_the_grid() {
    // out[global linear id] = packed (group x, group y, local x, local y).
    let text = "kernel k(out: buf_mut<u32>) {
block0(v0: buf_mut<u32>):
    v1:u32 = workitem_id.x
    v2:u32 = workitem_id.y
    v3:u32 = workgroup_id.x
    v4:u32 = workgroup_id.y
    v5:u32 = workgroup_size.x
    v6:u32 = num_workgroups.x
    v7:u32 = mul v3, v5
    v8:u32 = add v7, v1
    v9:u32 = workgroup_size.y
    v10:u32 = mul v4, v9
    v11:u32 = add v10, v2
    v12:u32 = mul v6, v5
    v13:u32 = mul v11, v12
    v14:u32 = add v13, v8
    v15:u32 = const.u32 8
    v16:u32 = shl v3, v15
    v17:u32 = or v16, v4
    v18:u32 = shl v17, v15
    v19:u32 = or v18, v1
    v20:u32 = shl v19, v15
    v21:u32 = or v20, v2
    store v0[v14], v21
    return
}
";
    let launch = LaunchDims {
        grid: [3, 2, 1],
        block: [5, 7, 1],
        dynamic_lds: 0,
    };
    let mut args = vec![Arg::Buffer(BufferData::U32(vec![u32::MAX; 15 * 14]))];
    let stats = run_text(text, launch, &mut args).unwrap();
    assert_eq!(stats.workgroups, 6);
    let out = u32_out(&args, 0);
    for gy in 0..14u32 {
        for gx in 0..15u32 {
            let want = ((gx / 5) << 24) | ((gy / 7) << 16) | ((gx % 5) << 8) | (gy % 7);
            assert_eq!(out[(gy * 15 + gx) as usize], want, "({gx}, {gy})");
        }
    }
}

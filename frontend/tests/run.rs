//! Kernels built with the builder run in the interpreter with the meaning the builder promises:
//! variables merge across if/else and loops, early returns, vector memory, atomics, casts.

use kjit_frontend::*;
use kjit_ir::interp::{run, Arg, BufferData, LaunchDims};

fn launch(groups: u32, block: u32) -> LaunchDims {
    LaunchDims {
        grid: [groups, 1, 1],
        block: [block, 1, 1],
        dynamic_lds: 0,
    }
}

#[test]
fn variables_merge_across_if_else_and_loops() {
    let k = KernelBuilder::new("vars");
    let out = k.buffer_mut::<u32>("out");
    let i = k.global_id(Dim::X);
    let acc = k.var(k.lit(0u32));
    k.if_else(
        (i % 3u32).eq(k.lit(0u32)),
        || acc.set(i * 10u32),
        || acc.set(i + 1000u32),
    );
    // sum_{j < i % 5} j, with a divergent trip count.
    k.for_range(k.lit(0u32), i % 5u32, k.lit(1u32), |j| {
        acc.set(acc.get() + j)
    });
    k.return_if(i.eq(k.lit(7u32)));
    k.store(&out, i, acc.get());
    let f = k.finish().unwrap();
    let mut args = vec![Arg::Buffer(BufferData::U32(vec![u32::MAX; 100]))];
    run(&f, &launch(2, 64), &mut args).unwrap();
    let Arg::Buffer(BufferData::U32(v)) = &args[0] else {
        unreachable!()
    };
    for (i, &x) in v.iter().enumerate() {
        let i = i as u32;
        let base = if i.is_multiple_of(3) {
            i * 10
        } else {
            i + 1000
        };
        let want = if i == 7 {
            u32::MAX
        } else {
            base + (0..i % 5).sum::<u32>()
        };
        assert_eq!(x, want, "element {i}");
    }
}

#[test]
fn vector_memory_atomics_and_casts() {
    let k = KernelBuilder::new("mem");
    let x = k.buffer::<f32>("x");
    let y = k.buffer_mut::<f64>("y");
    let h = k.buffer_mut::<f16>("h");
    let count = k.buffer_mut::<u32>("count");
    let big = k.buffer_mut::<i64>("big");
    let i = k.global_id(Dim::X);
    let [a, b, c, d] = k.load4(&x, i * 4u32);
    let s = (a + b) + (c + d);
    k.store2(&y, i * 2u32, [s.cast::<f64>(), (a * d).cast::<f64>()]);
    k.store(&h, i, s.cast::<f16>());
    let slot = k.atomic_add(&count, k.lit(0u32), k.lit(1u32));
    let prev = k.atomic_cas(&count, k.lit(1u32), k.lit(0u32), i + 1u32);
    let _ = prev;
    k.store(&big, i, slot.cast::<i64>() - k.lit(1i64 << 40));
    let f = k.finish().unwrap();
    let n = 70usize;
    let xs: Vec<f32> = (0..4 * n).map(|j| j as f32 * 0.25).collect();
    let mut args = vec![
        Arg::Buffer(BufferData::F32(xs.clone())),
        Arg::Buffer(BufferData::F64(vec![0.0; 2 * n])),
        Arg::Buffer(BufferData::F16(vec![f16::ZERO; n])),
        Arg::Buffer(BufferData::U32(vec![0, 0])),
        Arg::Buffer(BufferData::I64(vec![0; n])),
    ];
    run(&f, &launch(2, 64), &mut args).unwrap();
    let (
        Arg::Buffer(BufferData::F64(y)),
        Arg::Buffer(BufferData::F16(h)),
        Arg::Buffer(BufferData::U32(cnt)),
        Arg::Buffer(BufferData::I64(big)),
    ) = (&args[1], &args[2], &args[3], &args[4])
    else {
        unreachable!()
    };
    for i in 0..n {
        let (a, b, c, d) = (xs[4 * i], xs[4 * i + 1], xs[4 * i + 2], xs[4 * i + 3]);
        assert_eq!(y[2 * i], ((a + b) + (c + d)) as f64);
        assert_eq!(y[2 * i + 1], (a * d) as f64);
        assert_eq!(h[i], f16::from_f32((a + b) + (c + d)));
    }
    // 128 work-items incremented the counter (the 58 past the end of `x` too).
    assert_eq!(cnt[0], 128);
    // Only the first compare-exchange on slot 1 (still 0) succeeded: lane 0 of workgroup 0.
    assert_eq!(cnt[1], 1);
    // Each work-item got a distinct old value.
    let mut slots: Vec<i64> = big.iter().map(|v| v + (1i64 << 40)).collect();
    slots.sort();
    slots.dedup();
    assert_eq!(slots.len(), n);
}

#[test]
fn lds_and_wave_ops_from_the_builder() {
    let k = KernelBuilder::new("scan");
    let out = k.buffer_mut::<u32>("out");
    let t = k.lds::<u32>("t", 128);
    let lid = k.local_id(Dim::X);
    let pre = k.wave_scan(ReduceOp::Add, lid);
    k.store(&t, lid, pre);
    k.barrier();
    let other = k.load(&t, k.lit(127u32) - lid);
    let top = k.wave_broadcast(other, 63);
    k.store(&out, lid, other + top);
    let f = k.finish().unwrap();
    let mut args = vec![Arg::Buffer(BufferData::U32(vec![0; 128]))];
    run(&f, &launch(1, 128), &mut args).unwrap();
    let Arg::Buffer(BufferData::U32(v)) = &args[0] else {
        unreachable!()
    };
    // Inclusive scan within each wave of 64.
    let scan = |l: u32| -> u32 {
        let base = l / 64 * 64;
        (base..=l).sum()
    };
    for l in 0..128u32 {
        let other = scan(127 - l);
        let lane63_other = scan(127 - ((l / 64) * 64 + 63));
        assert_eq!(v[l as usize], other + lane63_other, "lane {l}");
    }
}

/// Literals on either side of an operator and as the right side of comparisons and
/// `min/max/clamp` mean what the same expression means in Rust.
#[test]
fn literals_on_either_side() {
    let k = KernelBuilder::new("lits");
    let x = k.buffer::<f32>("x");
    let u = k.buffer::<u32>("u");
    let fo = k.buffer_mut::<f32>("fo");
    let uo = k.buffer_mut::<u32>("uo");
    let i = k.global_id(Dim::X);
    let xv = k.load(&x, i);
    let uv = k.load(&u, i);
    let f = 2.0f32 / xv + (1.0f32 - xv) * 3.0f32;
    let g = k.select(xv.gt(0.5f32), f, -f);
    k.store(&fo, i, g.max(-4.0f32).min(4.0f32));
    let a = 100u32 / (uv + 1u32) + (7u32 % (uv + 1u32)) + (1u32 << (uv & 3u32));
    let b = (0xf0u32 ^ uv) | (3u32 & uv);
    let c = k.select(uv.ge(5u32) & uv.ne(9u32), a, b);
    k.store(&uo, i, c.clamp(2u32, 60u32));
    let func = k.finish().unwrap();
    let n = 64usize;
    let xs: Vec<f32> = (0..n).map(|j| 0.05 + j as f32 * 0.031).collect();
    let us: Vec<u32> = (0..n as u32).collect();
    let mut args = vec![
        Arg::Buffer(BufferData::F32(xs.clone())),
        Arg::Buffer(BufferData::U32(us.clone())),
        Arg::Buffer(BufferData::F32(vec![0.0; n])),
        Arg::Buffer(BufferData::U32(vec![0; n])),
    ];
    run(&func, &launch(1, 64), &mut args).unwrap();
    let (Arg::Buffer(BufferData::F32(fo)), Arg::Buffer(BufferData::U32(uo))) = (&args[2], &args[3])
    else {
        unreachable!()
    };
    for j in 0..n {
        let xv = xs[j];
        let f = 2.0f32 / xv + (1.0f32 - xv) * 3.0f32;
        let g = if xv > 0.5 { f } else { -f };
        assert_eq!(fo[j], g.clamp(-4.0, 4.0), "f32 element {j}");
        let uv = us[j];
        let a = 100 / (uv + 1) + (7 % (uv + 1)) + (1 << (uv & 3));
        let b = (0xf0 ^ uv) | (3 & uv);
        let c = if uv >= 5 && uv != 9 { a } else { b };
        assert_eq!(uo[j], c.clamp(2, 60), "u32 element {j}");
    }
}

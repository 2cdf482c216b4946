//! A dynamic LDS array end to end: declared with `KernelBuilder::dynamic_lds`, written and read
//! in the IR text, sized by the launch's dynamic LDS bytes in the IR interpreter and on kjit's
//! software device (gfx942 and gfx900) through `Launch::dynamic_lds`, placed after the static
//! arrays (the code object's static LDS size does not include it), and a launch with too little
//! dynamic LDS failing with an LDS range error rather than wrong sums.

use kjit::backend_gcn::Target;
use kjit::ir::interp::{self, Arg, BufferData, InterpError};
use kjit::ir::Function;
use kjit::{Dim, Gpu, KernelBuilder, LaunchDims};

/// Bytes of the static `tag` array: 3 u32s, so the dynamic array starts at byte 12.
const TAG_BYTES: u32 = 12;

/// `partial[g] = sum of x[g*B .. g*B+B]` for a power-of-two workgroup size B chosen at launch:
/// a tree reduction in the dynamic array `tile` (B f32s). Work-item 0 first writes its group id
/// to the static array `tag` (declared after `tile`) and stores the sum at `partial[tag[2]]`,
/// so a dynamic array overlapping the static one would misplace or corrupt the sums.
fn dyn_reduce() -> Function {
    let k = KernelBuilder::new("dyn_reduce");
    let x = k.buffer::<f32>("x");
    let partial = k.buffer_mut::<f32>("partial");
    let tile = k.dynamic_lds::<f32>("tile");
    let tag = k.lds::<u32>("tag", TAG_BYTES / 4);
    let lid = k.local_id(Dim::X);
    let gid = k.group_id(Dim::X);
    k.if_(lid.eq(0u32), || k.store(&tag, k.lit(2u32), gid));
    k.store(&tile, lid, k.load(&x, k.global_id(Dim::X)));
    k.barrier();
    kjit::kernels::reduce::tree_sum(&k, &tile, lid, k.group_size(Dim::X) >> 1u32);
    k.if_(lid.eq(0u32), || {
        k.store(
            &partial,
            k.load(&tag, k.lit(2u32)),
            k.load(&tile, k.lit(0u32)),
        );
    });
    k.finish().expect("the kernel builds")
}

fn input(n: usize) -> Vec<f32> {
    let mut r = kjit::kernels::rng(11);
    kjit::kernels::random_f32(&mut r, n, -1.0, 1.0)
}

fn cpu_sums(x: &[f32], block: usize) -> Vec<f64> {
    x.chunks(block)
        .map(|c| c.iter().map(|&v| v as f64).sum())
        .collect()
}

fn assert_close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (*a as f64 - b).abs() <= 1e-4 * b.abs().max(1.0),
            "{what}: group {g}: {a} vs {b}"
        );
    }
}

fn on_interpreter(
    func: &Function,
    x: &[f32],
    block: u32,
    bytes: u32,
) -> Result<Vec<f32>, InterpError> {
    let groups = x.len() as u32 / block;
    let mut args = vec![
        Arg::Buffer(BufferData::F32(x.to_vec())),
        Arg::Buffer(BufferData::F32(vec![0.0; groups as usize])),
    ];
    let launch = interp::LaunchDims {
        grid: [groups, 1, 1],
        block: [block, 1, 1],
        dynamic_lds: bytes,
    };
    interp::run(func, &launch, &mut args)?;
    let Arg::Buffer(BufferData::F32(out)) = &args[1] else {
        unreachable!()
    };
    Ok(out.clone())
}

fn on_device(
    gpu: &Gpu,
    func: &Function,
    x: &[f32],
    block: u32,
    bytes: u32,
) -> Result<Vec<f32>, kjit::Error> {
    let kernel = gpu.compile(func)?;
    let groups = x.len() as u32 / block;
    let dx = gpu.to_device(x)?;
    let mut out = gpu.zeros::<f32>(groups as usize)?;
    kernel
        .launch(LaunchDims::new([groups, 1, 1], [block, 1, 1]))
        .dynamic_lds(bytes)
        .arg(&dx)
        .arg(&mut out)
        .run()?;
    out.to_host()
}

/// The same kernel reduces workgroups of 64, 128 and 256 work-items, each launch sizing the
/// dynamic array to its workgroup, in the interpreter and on the device for gfx942 and gfx900.
#[test]
fn reduction_sized_at_launch_matches_the_cpu() {
    let func = dyn_reduce();
    let x = input(1024);
    for block in [64u32, 128, 256] {
        let want = cpu_sums(&x, block as usize);
        let got = on_interpreter(&func, &x, block, block * 4).expect("interpreter runs");
        assert_close(&got, &want, &format!("interpreter, block {block}"));
        for t in [Target::Gfx942, Target::Gfx900] {
            let gpu = Gpu::emu().with_target(t).unwrap();
            let got = on_device(&gpu, &func, &x, block, block * 4).expect("device runs");
            assert_close(&got, &want, &format!("{t}, block {block}"));
        }
    }
}

/// One element too few: the last work-item's store to the dynamic array is out of range, an
/// interpreter fault naming the LDS access and a device fault outside the workgroup's LDS.
#[test]
fn too_little_dynamic_lds_fails_clearly() {
    let func = dyn_reduce();
    let x = input(256);
    let e = on_interpreter(&func, &x, 128, 128 * 4 - 4).unwrap_err();
    assert!(
        matches!(&e, InterpError::Fault { message, .. } if message.contains("LDS store") && message.contains("127 elements (508 bytes of dynamic LDS at launch)")),
        "{e}"
    );
    let e = on_interpreter(&func, &x, 128, 0).unwrap_err();
    assert!(e.to_string().contains("LDS store"), "{e}");
    for t in [Target::Gfx942, Target::Gfx900] {
        let gpu = Gpu::emu().with_target(t).unwrap();
        let e = on_device(&gpu, &func, &x, 128, 128 * 4 - 4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("LDS") && e.contains("outside"), "{t}: {e}");
        // The workgroup's LDS is the static 12 bytes plus the launch's 508.
        assert!(
            e.contains(&format!("{} bytes of LDS", TAG_BYTES + 508)),
            "{t}: {e}"
        );
    }
}

/// More than the 64 KiB of LDS (static + dynamic) is a bad launch in the interpreter.
#[test]
fn dynamic_lds_over_the_limit_is_a_bad_launch() {
    let e = on_interpreter(&dyn_reduce(), &input(64), 64, 64 * 1024).unwrap_err();
    assert!(
        matches!(&e, InterpError::BadLaunch(m) if m.contains("12 static + 65536 dynamic")),
        "{e}"
    );
}

/// The code object's static LDS size is the static arrays' bytes only; the dynamic array is
/// placed at that offset.
#[test]
fn static_lds_size_excludes_the_dynamic_array() {
    let func = dyn_reduce();
    for t in [Target::Gfx942, Target::Gfx900] {
        let k = kjit::compile(&func, t, &kjit::CompileOptions::default()).unwrap();
        assert_eq!(k.header.lds_bytes, TAG_BYTES, "{t}");
    }
}

/// The IR text shows the dynamic array as `T[dynamic]` and reads back to the same function.
#[test]
fn ir_text_round_trips() {
    let func = dyn_reduce();
    let text = func.to_string();
    assert!(text.contains("lds0 = lds tile: f32[dynamic]"), "{text}");
    assert!(text.contains("lds1 = lds tag: u32[3]"), "{text}");
    let back = kjit::ir::parse::parse_function(&text).expect("parses");
    assert_eq!(back.to_string(), text);
    assert_eq!(back.lds, func.lds);
}

/// At most one dynamic array: the builder reports the second, and the verifier rejects IR
/// text with two.
#[test]
fn a_second_dynamic_array_is_an_error() {
    let k = KernelBuilder::new("two");
    let a = k.dynamic_lds::<f32>("a");
    let _b = k.dynamic_lds::<f32>("b");
    k.store(&a, k.local_id(Dim::X), k.lit(1.0f32));
    let e = k.finish().unwrap_err().to_string();
    assert!(e.contains("already has a dynamic LDS array (`a`)"), "{e}");

    let text = dyn_reduce()
        .to_string()
        .replace("lds1 = lds tag: u32[3]", "lds1 = lds tag: u32[dynamic]");
    let e = match kjit::ir::parse::parse_function(&text) {
        Ok(f) => kjit::ir::verify(&f).unwrap_err().to_string(),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("2 dynamic LDS arrays (tile, tag)"), "{e}");
}

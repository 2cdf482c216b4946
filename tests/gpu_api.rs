//! The quick-start API (`kjit::Gpu`): typed buffers, typed launches checked against the kernel's
//! parameters with errors naming the argument, the grid helper, dynamic LDS, statistics, and
//! buffers freed on drop. Runs on the software device; the same calls go through the `Device`
//! trait to HIP.

use kjit::{Dim, Error, Gpu, Kernel, KernelArg, KernelBuilder, LaunchDims, LaunchStats};
use kjit_frontend::f16;

/// `out[i] = x[i] * scale + offset` over a length guard.
fn scale_kernel() -> kjit::ir::Function {
    let k = KernelBuilder::new("scale");
    let x = k.buffer::<f32>("x");
    let scale = k.arg::<f32>("scale");
    let offset = k.arg::<u32>("offset");
    let out = k.buffer_mut::<f32>("out");
    let i = k.global_id(Dim::X);
    k.if_(i.lt(x.len()), || {
        let v = k.load(&x, i) * scale + offset.cast::<f32>();
        k.store(&out, i, v);
    });
    k.finish().expect("builds")
}

/// Launches `kernel` with four arguments in order.
fn launch4(
    kernel: &Kernel,
    dims: LaunchDims,
    args: (
        impl KernelArg,
        impl KernelArg,
        impl KernelArg,
        impl KernelArg,
    ),
) -> Result<LaunchStats, Error> {
    kernel
        .launch(dims)
        .arg(args.0)
        .arg(args.1)
        .arg(args.2)
        .arg(args.3)
        .run()
}

#[test]
fn typed_launch_round_trips_and_counts() {
    let gpu = Gpu::emu();
    let kernel = gpu.compile(&scale_kernel()).expect("compiles");
    let n = 1000;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let x = gpu.to_device(&xs).unwrap();
    let mut out = gpu.zeros::<f32>(n).unwrap();
    let stats = launch4(
        &kernel,
        LaunchDims::cover(n, 128),
        (&x, 3.0f32, 7u32, &mut out),
    )
    .unwrap();
    let got = out.to_host().unwrap();
    for (i, (g, x)) in got.iter().zip(&xs).enumerate() {
        assert_eq!(*g, x * 3.0 + 7.0, "element {i}");
    }
    // ceil(1000 / 128) = 8 workgroups of 2 waves.
    assert_eq!(stats.waves, 16);
    assert_eq!(stats.bytes_written, 4 * n as u64);
}

#[test]
fn grid_helper_covers_with_at_least_one_group() {
    assert_eq!(LaunchDims::cover(1000, 256).grid, [4, 1, 1]);
    assert_eq!(LaunchDims::cover(1024, 256).grid, [4, 1, 1]);
    assert_eq!(LaunchDims::cover(0, 64).grid, [1, 1, 1]);
    let d = LaunchDims::cover_2d([100, 30], [16, 8]);
    assert_eq!((d.grid, d.block), ([7, 4, 1], [16, 8, 1]));
    assert_eq!(d.with_dynamic_lds(512).dynamic_lds, 512);
}

/// Each kind of mismatch is refused before the device sees it, naming the argument.
#[test]
fn wrong_arguments_are_errors_naming_the_argument() {
    let gpu = Gpu::emu();
    let kernel = gpu.compile(&scale_kernel()).expect("compiles");
    let x = gpu.to_device(&[1.0f32; 8]).unwrap();
    let xh = gpu.to_device(&[f16::ONE; 8]).unwrap();
    let mut out = gpu.zeros::<f32>(8).unwrap();
    let dims = LaunchDims::cover(8, 64);
    let err = |e: Result<kjit::LaunchStats, Error>| {
        let e = e.expect_err("must be refused");
        assert!(matches!(e, Error::BadArgs { .. }), "{e}");
        e.to_string()
    };

    let e = err(kernel.launch(dims).arg(&x).arg(1.0f32).run());
    assert!(e.contains("takes 4 argument(s), 2 given"), "{e}");

    let e = err(launch4(&kernel, dims, (&x, 1u32, 7u32, &mut out)));
    assert!(
        e.contains("argument 1 (`scale`): u32 where f32 is needed"),
        "{e}"
    );

    let e = err(launch4(&kernel, dims, (&xh, 1.0f32, 7u32, &mut out)));
    assert!(
        e.contains("argument 0 (`x`): a buffer of f16 where buf<f32> is needed"),
        "{e}"
    );

    let e = err(launch4(&kernel, dims, (&x, 1.0f32, &x, &mut out)));
    assert!(
        e.contains("argument 2 (`offset`): a buffer of f32 where u32 is needed"),
        "{e}"
    );

    let e = err(launch4(&kernel, dims, (&x, 1.0f32, 7u32, &out)));
    assert!(
        e.contains("argument 3 (`out`): the kernel may write this buffer; pass it as `&mut`"),
        "{e}"
    );
    assert!(e.starts_with("kernel 'scale'"), "{e}");
}

#[test]
fn buffers_are_freed_on_drop() {
    let gpu = Gpu::emu();
    let b = gpu.to_device(&[1u32, 2, 3]).unwrap();
    let raw = b.raw();
    assert_eq!(b.to_host().unwrap(), vec![1, 2, 3]);
    drop(b);
    // The allocation is gone: freeing it again is an error of the device.
    assert!(gpu.device().free(raw).is_err());
}

#[test]
fn copies_of_the_wrong_length_are_errors() {
    let gpu = Gpu::emu();
    let mut b = gpu.zeros::<i64>(4).unwrap();
    b.copy_from_host(&[1, -2, 3, -4]).unwrap();
    assert_eq!(b.to_host().unwrap(), vec![1, -2, 3, -4]);
    let e = b.copy_from_host(&[1, 2]).unwrap_err().to_string();
    assert!(e.contains("2 elements copied into a buffer of 4"), "{e}");
}

/// Dynamic LDS reaches the device: within the limit the launch runs, past it the device refuses.
#[test]
fn dynamic_lds_is_passed_to_the_device() {
    let gpu = Gpu::emu();
    let kernel = gpu.compile(&scale_kernel()).expect("compiles");
    let x = gpu.to_device(&[1.0f32; 8]).unwrap();
    let mut out = gpu.zeros::<f32>(8).unwrap();
    kernel
        .launch(LaunchDims::cover(8, 64))
        .dynamic_lds(4096)
        .arg(&x)
        .arg(1.0f32)
        .arg(0u32)
        .arg(&mut out)
        .run()
        .expect("4 KiB of dynamic LDS fits");
    let e = launch4(
        &kernel,
        LaunchDims::cover(8, 64).with_dynamic_lds(1 << 20),
        (&x, 1.0f32, 0u32, &mut out),
    )
    .expect_err("1 MiB of LDS does not fit");
    assert!(matches!(e, Error::Device { .. }), "{e}");
}

/// Every target compiles and runs the same kernel on the software device.
#[test]
fn every_target_on_the_software_device() {
    for t in [
        kjit::backend_gcn::Target::Gfx942,
        kjit::backend_gcn::Target::Gfx90a,
        kjit::backend_gcn::Target::Gfx900,
    ] {
        let gpu = Gpu::emu().with_target(t).unwrap();
        let kernel = gpu.compile(&scale_kernel()).expect("compiles");
        assert_eq!(kernel.compiled().target, t);
        let x = gpu.to_device(&[2.0f32; 100]).unwrap();
        let mut out = gpu.zeros::<f32>(100).unwrap();
        launch4(
            &kernel,
            LaunchDims::cover(100, 64),
            (&x, 0.5f32, 1u32, &mut out),
        )
        .unwrap();
        assert!(out.to_host().unwrap().iter().all(|&v| v == 2.0));
    }
}

/// A timed software device gives the timing model's report back with each launch; an unknown
/// model is an error naming the known ones.
#[test]
fn timing_report_comes_back_from_a_launch() {
    let gpu = Gpu::emu_timed("mi300x").expect("mi300x is a model");
    assert_eq!(gpu.target(), kjit::backend_gcn::Target::Gfx942);
    let kernel = gpu.compile(&scale_kernel()).expect("compiles");
    let n = 1 << 16;
    let x = gpu.to_device(&vec![1.0f32; n]).unwrap();
    let mut out = gpu.zeros::<f32>(n).unwrap();
    let stats = launch4(
        &kernel,
        LaunchDims::cover(n, 256),
        (&x, 2.0f32, 1u32, &mut out),
    )
    .unwrap();
    let t = stats.timing.expect("a timed launch has a report");
    assert_eq!(t.model, "mi300x");
    assert!(t.cycles > 0 && t.seconds > 0.0, "{t:?}");
    assert_eq!(t.bytes_written, 4 * n as u64);
    // Untimed devices give no report.
    let plain = Gpu::emu();
    let kernel = plain.compile(&scale_kernel()).unwrap();
    let x = plain.to_device(&[1.0f32; 8]).unwrap();
    let mut out = plain.zeros::<f32>(8).unwrap();
    let stats = launch4(
        &kernel,
        LaunchDims::cover(8, 64),
        (&x, 2.0f32, 1u32, &mut out),
    )
    .unwrap();
    assert!(stats.timing.is_none());

    let e = Gpu::emu_timed("h100")
        .err()
        .expect("not a model")
        .to_string();
    assert!(e.contains("h100"), "{e}");
}

/// The same calls on HIP give the software device's results (needs an AMD GPU and the `hip`
/// feature: `cargo test --features hip -- --ignored`).
#[test]
#[ignore = "needs an AMD GPU"]
fn same_results_on_hip() {
    let device = kjit::runtime::open_device(kjit::runtime::DeviceKind::Hip).expect("a GPU");
    let hip = Gpu::on(device);
    let emu = Gpu::emu().with_target(hip.target()).unwrap();
    let xs: Vec<f32> = (0..5000).map(|i| (i as f32).sin()).collect();
    let mut results = Vec::new();
    for gpu in [&hip, &emu] {
        let kernel = gpu.compile(&scale_kernel()).expect("compiles");
        let x = gpu.to_device(&xs).unwrap();
        let mut out = gpu.zeros::<f32>(xs.len()).unwrap();
        launch4(
            &kernel,
            LaunchDims::cover(xs.len(), 256),
            (&x, 1.5f32, 3u32, &mut out),
        )
        .unwrap();
        results.push(out.to_host().unwrap());
    }
    assert_eq!(results[0], results[1]);
}

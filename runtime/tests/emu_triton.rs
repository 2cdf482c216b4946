//! Kernels compiled by Triton 3.9 for AMD (fixtures in `backend-gcn/tests/fixtures/triton`, with
//! their generator) run on kjit's software GCN device: a masked vector add (gfx942 and gfx90a)
//! and an MFMA matmul tile loop through LDS (gfx942). Triton's kernels take two extra pointer
//! arguments after the user's, and the matmul uses dynamic LDS (Triton's `metadata.shared`).

use std::path::PathBuf;

use kjit_runtime::emu::GcnEmulator;
use kjit_runtime::{ArgValue, Device, LaunchDims};

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../backend-gcn/tests/fixtures/triton")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn triton_masked_vector_add() {
    for t in ["gfx942", "gfx90a"] {
        let dev = GcnEmulator::new();
        let m = dev
            .load_module(&fixture(&format!("triton-add-{t}.hsaco")))
            .unwrap();
        let n = 1000usize;
        let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
        let y: Vec<f32> = (0..n).map(|i| 1.0 + i as f32).collect();
        let bytes = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
        let (dx, dy, out) = (
            dev.alloc(4 * n as u64).unwrap(),
            dev.alloc(4 * n as u64).unwrap(),
            dev.alloc(4 * n as u64 + 64).unwrap(),
        );
        dev.copy_to_device(dx, 0, &bytes(&x)).unwrap();
        dev.copy_to_device(dy, 0, &bytes(&y)).unwrap();
        dev.copy_to_device(out, 0, &vec![0xcd; 4 * n + 64]).unwrap();
        let (p0, p1) = (dev.alloc(8).unwrap(), dev.alloc(8).unwrap());
        let dims = LaunchDims {
            grid: [n.div_ceil(256) as u32, 1, 1],
            block: [256, 1, 1],
            dynamic_lds: 0,
        };
        let args = [
            ArgValue::Buffer(dx),
            ArgValue::Buffer(dy),
            ArgValue::Buffer(out),
            ArgValue::I32(n as i32),
            ArgValue::Buffer(p0),
            ArgValue::Buffer(p1),
        ];
        dev.launch(m, "add_kernel", dims, &args)
            .unwrap_or_else(|e| panic!("{t}: {e}"));
        let mut got = vec![0u8; 4 * n + 64];
        dev.copy_from_device(out, 0, &mut got).unwrap();
        let got = f32s(&got);
        for i in 0..n {
            assert_eq!(
                got[i].to_bits(),
                (x[i] + y[i]).to_bits(),
                "{t}: element {i}"
            );
        }
        assert!(
            got[n..].iter().all(|v| v.to_bits() == 0xcdcd_cdcd),
            "{t}: the mask must keep stores inside n"
        );
    }
}

#[test]
fn triton_mfma_matmul_through_lds() {
    let dev = GcnEmulator::new();
    let m = dev
        .load_module(&fixture("triton-matmul-gfx942.hsaco"))
        .unwrap();
    let (rows, k, cols) = (128usize, 64usize, 64usize);
    let mut seed = 12345u32;
    let mut next = || {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
        ((seed >> 16) % 9) as f32 * 0.5 - 2.0
    };
    // Halves of small multiples of 1/2: every product and partial sum is exact in f32.
    let a: Vec<f32> = (0..rows * k).map(|_| next()).collect();
    let b: Vec<f32> = (0..k * cols).map(|_| next()).collect();
    let h = |v: &[f32]| {
        v.iter()
            .flat_map(|&f| half::f16::from_f32(f).to_bits().to_le_bytes())
            .collect::<Vec<u8>>()
    };
    let (da, db, dc) = (
        dev.alloc(2 * (rows * k) as u64).unwrap(),
        dev.alloc(2 * (k * cols) as u64).unwrap(),
        dev.alloc(4 * (rows * cols) as u64).unwrap(),
    );
    dev.copy_to_device(da, 0, &h(&a)).unwrap();
    dev.copy_to_device(db, 0, &h(&b)).unwrap();
    dev.copy_to_device(dc, 0, &vec![0xcd; 4 * rows * cols])
        .unwrap();
    let (p0, p1) = (dev.alloc(8).unwrap(), dev.alloc(8).unwrap());
    let dims = LaunchDims {
        grid: [(rows / 64) as u32, 1, 1],
        block: [256, 1, 1],
        dynamic_lds: 8192,
    };
    let args = [
        ArgValue::Buffer(da),
        ArgValue::Buffer(db),
        ArgValue::Buffer(dc),
        ArgValue::I32(k as i32),
        ArgValue::Buffer(p0),
        ArgValue::Buffer(p1),
    ];
    let stats = dev.launch(m, "matmul_kernel", dims, &args).unwrap();
    assert!(stats.mfma > 0 && stats.lds > 0, "{stats:?}");
    let mut got = vec![0u8; 4 * rows * cols];
    dev.copy_from_device(dc, 0, &mut got).unwrap();
    let got = f32s(&got);
    for i in 0..rows {
        for j in 0..cols {
            let want: f32 = (0..k).map(|kk| a[i * k + kk] * b[kk * cols + j]).sum();
            assert_eq!(got[i * cols + j], want, "C[{i}][{j}]");
        }
    }
    // Without the dynamic LDS Triton asked for, the first LDS store faults instead.
    let e = dev
        .launch(
            m,
            "matmul_kernel",
            LaunchDims {
                dynamic_lds: 0,
                ..dims
            },
            &args,
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("outside the workgroup's 0 bytes of LDS"),
        "{e}"
    );
}

//! A global access `v[x + k]` whose index `x` may be negative: the IR's element is
//! `(x + k) mod 2^32`, and the hardware's range check does not wrap `VADDR + OFFSET`, so the
//! immediate may not take `k` (`backend-gcn/src/isel/index_sign.rs`). Found by the random
//! programs (`loops 0xec3dced0eed5cbce`: the optimizer's `load v0[v38+7]` with `v38 = -1`).
//! Device == interpreter on every target, and the offset stays in the immediate where the
//! index is built from ids.

use kjit::exec::run_case;
use kjit::{compile, CompileOptions};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_ir::interp::{Arg, BufferData, LaunchDims};
use kjit_kernels::Case;
use kjit_runtime::emu::GcnEmulator;

/// `out[4t + j] = a[idx[t] + k_j]` for offsets 1, 2, 5 (loaded `i32` and `u32` indices, the
/// latter as -1 reinterpreted), and `out[4t + 3] = a[3t + 2]` (an id-built index).
const KERNEL: &str =
    "kernel neg_index(idx: buf<i32>, uidx: buf<u32>, a: buf<u32>, out: buf_mut<u32>) {
block0(v0: buf<i32>, v1: buf<u32>, v2: buf<u32>, v3: buf_mut<u32>):
    v4:u32 = workitem_id.x
    v5:i32 = load v0[v4]
    v6:u32 = load v1[v4]
    v7:u32 = load v2[v5+1]
    v8:u32 = load v2[v6+2]
    v9:u32 = load v2[v5+5]
    v10:u32 = const.u32 3
    v11:u32 = mul v4, v10
    v12:u32 = load v2[v11+2]
    v13:u32 = const.u32 4
    v14:u32 = mul v4, v13
    store v3[v14], v7
    store v3[v14+1], v8
    store v3[v14+2], v9
    store v3[v14+3], v12
    return
}
";

fn case() -> Case {
    let n = 64usize;
    // -1 and -2 land in range only through the offset; -6 and 2^20 stay out of range. (An
    // index of magnitude 2^30 or more is not handled: `index_sign.rs`.)
    let idx: Vec<i32> = (0..n as i32)
        .map(|t| match t % 6 {
            0 => -1,
            1 => -2,
            2 => -6,
            3 => t,
            4 => 1 << 20,
            _ => 1000,
        })
        .collect();
    let uidx: Vec<u32> = idx.iter().map(|&x| x as u32).collect();
    let a: Vec<u32> = (0..256u32).map(|i| 0x1000 + i).collect();
    Case {
        n,
        args: vec![
            Arg::Buffer(BufferData::I32(idx)),
            Arg::Buffer(BufferData::U32(uidx)),
            Arg::Buffer(BufferData::U32(a)),
            Arg::Buffer(BufferData::U32(vec![0xdead_beef; 4 * n])),
        ],
        launch: LaunchDims {
            grid: [1, 1, 1],
            block: [n as u32, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![3],
    }
}

#[test]
fn negative_indices_with_offsets_equal_the_interpreter() {
    let func = kjit_ir::parse::parse_function(KERNEL).expect("the kernel parses");
    let case = case();
    let mut want = case.args.clone();
    kjit_ir::interp::run(&func, &case.launch, &mut want).expect("interpreter");
    let Arg::Buffer(BufferData::U32(w)) = &want[3] else {
        unreachable!()
    };
    // The interpreter's wrap: idx -1 with offset 1 is a[0], -2 with 2 is a[0], -6 with 5 is
    // out of range (0).
    assert_eq!(&w[0..4], &[0x1000, 0x1001, 0x1004, 0x1002]);
    assert_eq!(w[5], 0x1000);
    assert_eq!(w[10], 0);
    let dev = GcnEmulator::new();
    for t in ALL_TARGETS {
        for optimize in [false, true] {
            let opts = CompileOptions {
                optimize,
                ..CompileOptions::default()
            };
            let ck = compile(&func, t, &opts).expect("compiles");
            let got = run_case(&dev, &ck.code_object, &func, &case).expect("runs");
            assert_eq!(got.args[3], want[3], "{t} opt={optimize}\n{}", ck.asm);
            // The id-built index keeps its offset in the immediate (`a[3t + 2]`: 8 bytes).
            assert!(
                ck.asm
                    .lines()
                    .any(|l| l.contains("buffer_load_dword")
                        && l.trim_end().ends_with("offen offset:8")),
                "{t}: no immediate offset left for the id-built index\n{}",
                ck.asm
            );
        }
    }
}

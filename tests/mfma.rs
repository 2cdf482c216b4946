//! MFMA end to end, for every operation of the IR (`docs/mfma.md`): one wave multiplies one
//! block (`D = A·B + C`, A `m×k` and B `k×n` row-major in global memory, A's fragment loaded
//! packed with `frag_load` where a lane holds several k-values, B's gathered with `frag_build`).
//! - the interpreter equals a CPU matrix product exactly on values whose sums are exact (this
//!   checks the lane ↔ element layouts, independent of the summation order);
//! - the software device (gfx942 and gfx90a) equals the interpreter bit for bit on random values;
//! - gfx900, which has no matrix cores, fails to compile with a message naming the operation.

use kjit::backend_gcn::Target;
use kjit::exec::run_case;
use kjit::frontend::MfmaInput;
use kjit::frontend::{f16, FragElem, MfmaOp, Num, MFMA_OPS};
use kjit::ir::interp::{self, Arg, BufferData, LaunchDims};
use kjit::ir::Function;
use kjit::kernels::Case;
use kjit::{CompileOptions, KernelBuilder};
use kjit_runtime::emu::gcn::GcnEmulator;
use rand::{RngExt, SeedableRng};

/// One block of `op` for one wave: `d = a·b + c`.
fn block_kernel<T: Num, U: Num>(op: MfmaOp) -> Function {
    let k = KernelBuilder::new("mfma_block");
    let a = k.buffer::<T>("a");
    let b = k.buffer::<T>("b");
    let c = k.buffer::<U>("c");
    let d = k.buffer_mut::<U>("d");
    let (_, n, depth) = op.dims();
    let fin = op.input_frag();
    let facc = op.acc_frag();
    let (row, k0) = k.mfma_input_coords(op);
    let (av, bv): (MfmaInput, MfmaInput) = if fin.len == 1 {
        (
            k.load(&a, row * depth + k0).into(),
            k.load(&b, k0 * n + row).into(),
        )
    } else {
        let af = k.frag_load(&a, row * depth + k0, fin);
        let parts: Vec<_> = (0..fin.len as u32)
            .map(|j| k.load(&b, (k0 + j) * n + row))
            .collect();
        (af.into(), k.frag_build(fin, &parts).into())
    };
    let cparts: Vec<_> = (0..facc.len)
        .map(|item| {
            let (i, j) = k.mfma_acc_coords(op, item);
            k.load(&c, i * n + j)
        })
        .collect();
    let cf = k.frag_build(facc, &cparts);
    let df = k.mfma(op, av, bv, cf);
    for item in 0..facc.len {
        let (i, j) = k.mfma_acc_coords(op, item);
        k.store(&d, i * n + j, df.extract::<U>(item));
    }
    k.finish().expect("the kernel builds")
}

fn kernel_for(op: MfmaOp) -> Function {
    match (op.input_elem(), op.acc_elem()) {
        (FragElem::F16 | FragElem::Bf16, _) => block_kernel::<f16, f32>(op),
        (FragElem::F32, _) => block_kernel::<f32, f32>(op),
        (FragElem::F64, _) => block_kernel::<f64, f64>(op),
    }
}

/// Input matrix data of `op`'s element type from `f64`s (bf16 as bit patterns in f16 memory).
fn input_data(op: MfmaOp, x: &[f64]) -> BufferData {
    match op.input_elem() {
        FragElem::F16 => BufferData::F16(x.iter().map(|&v| f16::from_f64(v)).collect()),
        FragElem::Bf16 => BufferData::F16(
            x.iter()
                .map(|&v| f16::from_bits(((v as f32).to_bits() >> 16) as u16))
                .collect(),
        ),
        FragElem::F32 => BufferData::F32(x.iter().map(|&v| v as f32).collect()),
        FragElem::F64 => BufferData::F64(x.to_vec()),
    }
}

fn acc_data(op: MfmaOp, x: &[f64]) -> BufferData {
    match op.acc_elem() {
        FragElem::F64 => BufferData::F64(x.to_vec()),
        _ => BufferData::F32(x.iter().map(|&v| v as f32).collect()),
    }
}

fn case(op: MfmaOp, a: &[f64], b: &[f64], c: &[f64]) -> Case {
    let (m, n, _) = op.dims();
    Case {
        n: (m * n) as usize,
        args: vec![
            Arg::Buffer(input_data(op, a)),
            Arg::Buffer(input_data(op, b)),
            Arg::Buffer(acc_data(op, c)),
            Arg::Buffer(acc_data(op, &vec![f64::NAN; (m * n) as usize])),
        ],
        launch: LaunchDims {
            grid: [1, 1, 1],
            block: [64, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![3],
    }
}

fn as_f64(b: &BufferData) -> Vec<f64> {
    (0..b.len())
        .map(|i| match b {
            BufferData::F32(v) => v[i] as f64,
            BufferData::F64(v) => v[i],
            _ => unreachable!(),
        })
        .collect()
}

fn interpret(func: &Function, case: &Case) -> BufferData {
    let mut args = case.args.clone();
    interp::run(func, &case.launch, &mut args).expect("the interpreter runs");
    args[3].as_buffer().unwrap().clone()
}

/// Small integers and halves: every product and sum is exact in f16/bf16/f32.
fn exact_values(rng: &mut rand::rngs::StdRng, len: u32) -> Vec<f64> {
    (0..len)
        .map(|_| rng.random_range(-4i32..=4) as f64 * 0.5)
        .collect()
}

#[test]
fn interpreter_equals_a_cpu_matrix_product_for_every_operation() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(18);
    for op in MFMA_OPS {
        let (m, n, depth) = op.dims();
        let a = exact_values(&mut rng, m * depth);
        let b = exact_values(&mut rng, depth * n);
        let c = exact_values(&mut rng, m * n);
        let got = as_f64(&interpret(&kernel_for(op), &case(op, &a, &b, &c)));
        for i in 0..m as usize {
            for j in 0..n as usize {
                let want = c[i * n as usize + j]
                    + (0..depth as usize)
                        .map(|kk| a[i * depth as usize + kk] * b[kk * n as usize + j])
                        .sum::<f64>();
                assert_eq!(got[i * n as usize + j], want, "{op}: D[{i}][{j}]");
            }
        }
    }
}

#[test]
fn device_equals_the_interpreter_bit_for_bit_on_gfx942_and_gfx90a() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let dev = GcnEmulator::new();
    for op in MFMA_OPS {
        let (m, n, depth) = op.dims();
        let mut r =
            |len: u32| -> Vec<f64> { (0..len).map(|_| rng.random_range(-2.0..2.0)).collect() };
        let (a, b, c) = (r(m * depth), r(depth * n), r(m * n));
        let func = kernel_for(op);
        let case = case(op, &a, &b, &c);
        let want = interpret(&func, &case);
        for t in [Target::Gfx942, Target::Gfx90a] {
            let ck = kjit::compile(&func, t, &CompileOptions::default())
                .unwrap_or_else(|e| panic!("{op} on {t}: {e}"));
            assert!(
                ck.asm.contains(&format!("{} ", mnemonic_on(op, t))),
                "{op} on {t}:\n{}",
                ck.asm
            );
            let out = run_case(&dev, &ck.code_object, &func, &case)
                .unwrap_or_else(|e| panic!("{op} on {t}: {e}"));
            let got = &out.outputs[0];
            for e in 0..got.len() {
                assert_eq!(
                    got.get_bits(e),
                    want.get_bits(e),
                    "{op} on {t}: element {e}: {} vs {}",
                    as_f64(got)[e],
                    as_f64(&want)[e]
                );
            }
        }
    }
}

/// The spelling LLVM prints for `op` on `t`.
fn mnemonic_on(op: MfmaOp, t: Target) -> String {
    let m = op.mnemonic();
    if t == Target::Gfx90a {
        match op {
            MfmaOp::F32_32x32x8Bf16 => "v_mfma_f32_32x32x8bf16_1k".into(),
            MfmaOp::F32_16x16x16Bf16 => "v_mfma_f32_16x16x16bf16_1k".into(),
            _ => {
                let (head, tail) = m.rsplit_once('_').expect("an underscore");
                format!("{head}{tail}")
            }
        }
    } else {
        m.to_string()
    }
}

#[test]
fn gfx900_has_no_matrix_cores_and_says_so() {
    for op in [MfmaOp::F32_32x32x8F16, MfmaOp::F64_16x16x4F64] {
        let e = kjit::compile(&kernel_for(op), Target::Gfx900, &CompileOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("mfma.{op}")) && e.contains("gfx900"),
            "{e}"
        );
    }
}

#[test]
fn mfma_in_divergent_control_flow_is_a_builder_error() {
    let k = KernelBuilder::new("divergent_mfma");
    let out = k.buffer_mut::<f32>("out");
    let op = MfmaOp::F32_16x16x4F32;
    let lane = k.lane_id();
    let acc = k.frag_var(k.frag_zero(op.acc_frag()));
    k.if_(lane.lt(32u32), || {
        let x = k.lit(1.0f32);
        acc.set(k.mfma(op, x, x, acc.get()));
    });
    k.store(&out, lane, acc.get().extract::<f32>(0));
    let e = k.finish().unwrap_err().to_string();
    assert!(e.contains("inside divergent control flow"), "{e}");
    assert!(e.contains("mfma.rs"), "the error names the call site: {e}");
}

/// Golden asm of the smallest block kernel (`v_mfma_f32_16x16x16_f16`) on gfx942: the fragment
/// loads, the packing of B, the MFMA on a tuple tied to C, its wait states and the stores.
/// After an intended change: `INSTA_UPDATE=always cargo test --test mfma` and read the diff.
#[test]
fn asm_of_a_16x16x16_f16_block_on_gfx942() {
    let func = kernel_for(MfmaOp::F32_16x16x16F16);
    let k = kjit::compile(&func, Target::Gfx942, &CompileOptions::default()).unwrap();
    insta::assert_snapshot!("mfma_16x16x16_f16_block", k.asm);
}

#[test]
fn ir_text_round_trips() {
    for op in MFMA_OPS {
        let func = kernel_for(op);
        let text = func.to_string();
        assert!(text.contains(&format!("mfma.{op} ")), "{text}");
        let back = kjit::ir::parse::parse_function(&text).expect("parses");
        assert_eq!(back.to_string(), text);
    }
}

/// Every operation's kernel on gfx942 and gfx90a: `llvm-mc-19` assembles our asm text to exactly
/// our code object's bytes (the MFMA encodings, both spellings of the bf16 forms, the wait
/// states). Skips without LLVM 19 unless `KJIT_REQUIRE_LLVM=1`.
#[test]
fn llvm_mc_assembles_every_operation_to_our_bytes() {
    use kjit::backend_gcn::codeobj::CodeObject;
    use kjit::backend_gcn::llvm_oracle::{require, run, Tool};
    use object::{Object, ObjectSection};
    let Some(mc) = require(Tool::Mc, "mfma encodings") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("kjit-mfma-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for op in MFMA_OPS {
        for t in [Target::Gfx942, Target::Gfx90a] {
            let k = kjit::compile(&kernel_for(op), t, &CompileOptions::default()).unwrap();
            let (src, obj) = (
                dir.join(format!("{op}-{t}.s")),
                dir.join(format!("{op}-{t}.o")),
            );
            std::fs::write(&src, &k.asm).unwrap();
            let cpu = format!("-mcpu={}", t.name());
            let (s, o) = (src.to_str().unwrap(), obj.to_str().unwrap());
            run(
                &mc,
                &["-arch=amdgcn", &cpu, "-filetype=obj", s, "-o", o],
                None,
            )
            .unwrap_or_else(|e| panic!("{op} on {t}: llvm-mc rejected our asm: {e}"));
            let bytes = std::fs::read(&obj).unwrap();
            let file = object::File::parse(&*bytes).unwrap();
            let theirs = file.section_by_name(".text").unwrap().data().unwrap();
            let ours = CodeObject::parse(&k.code_object).unwrap();
            assert_eq!(theirs, &ours.kernels[0].code[..], "{op} on {t}");
        }
    }
}

/// Regrouping halves of fragments into new fragments (the GEMM's transpose of b): every pairing
/// of low and high halves from two f16x2 fragments, and a pair that is one source dword in
/// order. isel makes each regrouped dword one `v_perm_b32` (no extract-and-pack), and the
/// device equals the interpreter on gfx942 and gfx90a (a wrong byte selector would swap or
/// lose halves).
#[test]
fn regrouped_halves_are_one_v_perm_each_and_exact() {
    use kjit::frontend::FragType;
    let k = KernelBuilder::new("regroup");
    let x = k.buffer::<f16>("x");
    let y = k.buffer_mut::<f16>("y");
    let lane = k.lane_id();
    let pair = FragType::new(FragElem::F16, 2);
    let quad = FragType::new(FragElem::F16, 4);
    let p = k.frag_load(&x, lane * 4u32, pair);
    let q = k.frag_load(&x, lane * 4u32 + 2u32, pair);
    let (p0, p1, q0, q1) = (
        p.extract::<f16>(0),
        p.extract::<f16>(1),
        q.extract::<f16>(0),
        q.extract::<f16>(1),
    );
    // (p0 q0) (p1 q1) | (q1 p0) (p0 p1): lo/lo, hi/hi, hi/lo, and one dword as it is.
    k.frag_store(&y, lane * 8u32, k.frag_build(quad, &[p0, q0, p1, q1]));
    k.frag_store(
        &y,
        lane * 8u32 + 4u32,
        k.frag_build(quad, &[q1, p0, p0, p1]),
    );
    let func = k.finish().expect("builds");
    let xs: Vec<f16> = (0..256).map(|i| f16::from_f32(i as f32 - 100.5)).collect();
    let case = Case {
        n: 512,
        args: vec![
            Arg::Buffer(BufferData::F16(xs)),
            Arg::Buffer(BufferData::F16(vec![f16::from_f32(f32::NAN); 512])),
        ],
        launch: LaunchDims {
            grid: [1, 1, 1],
            block: [64, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![1],
    };
    let mut want = case.args.clone();
    interp::run(&func, &case.launch, &mut want).expect("the interpreter runs");
    let want = want[1].as_buffer().unwrap().clone();
    let dev = GcnEmulator::new();
    for t in [Target::Gfx942, Target::Gfx90a] {
        let ck = kjit::compile(&func, t, &CompileOptions::default()).unwrap();
        assert_eq!(ck.asm.matches("v_perm_b32").count(), 3, "{t}:\n{}", ck.asm);
        assert!(!ck.asm.contains("v_lshl_or_b32"), "{t}:\n{}", ck.asm);
        let out = run_case(&dev, &ck.code_object, &func, &case).unwrap();
        assert_eq!(out.outputs[0], want, "{t}");
    }
}

/// `frag_store_at` puts the fragment at `index + offset` in LDS and in global memory, and
/// stores at constant distances share one address register (the offsets are immediates): the
/// interpreter and the devices (gfx942, gfx90a) give the placement computed here, which an
/// ignored or doubled offset would break.
#[test]
fn frag_store_at_places_the_fragment_at_the_constant_offset() {
    use kjit::frontend::FragType;
    let k = KernelBuilder::new("store_at");
    let x = k.buffer::<f16>("x");
    let y = k.buffer_mut::<f16>("y");
    let tile = k.lds::<f16>("tile", 512);
    let lane = k.lane_id();
    let quad = FragType::new(FragElem::F16, 4);
    let f = k.frag_load(&x, lane * 4u32, quad);
    // Into LDS at 256 + 4·lane, read back with the offset in the index.
    k.frag_store_at(&tile, lane * 4u32, 256, f);
    let g = k.frag_load(&tile, lane * 4u32 + 256u32, quad);
    // Into y at 4·lane + 256 and + 512, one address for both.
    k.frag_store_at(&y, lane * 4u32, 256, g);
    k.frag_store_at(&y, lane * 4u32, 512, f);
    let func = k.finish().expect("builds");
    let xs: Vec<f16> = (0..256).map(|i| f16::from_f32(i as f32 - 100.5)).collect();
    let nan = f16::from_f32(f32::NAN);
    let case = Case {
        n: 768,
        args: vec![
            Arg::Buffer(BufferData::F16(xs.clone())),
            Arg::Buffer(BufferData::F16(vec![nan; 768])),
        ],
        launch: LaunchDims {
            grid: [1, 1, 1],
            block: [64, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![1],
    };
    let mut placed = vec![nan; 768];
    placed[256..512].copy_from_slice(&xs);
    placed[512..768].copy_from_slice(&xs);
    let bits = |b: &BufferData| match b {
        BufferData::F16(v) => v.iter().map(|h| h.to_bits()).collect::<Vec<_>>(),
        _ => panic!("f16 output"),
    };
    let mut got = case.args.clone();
    interp::run(&func, &case.launch, &mut got).expect("the interpreter runs");
    assert_eq!(
        bits(got[1].as_buffer().unwrap()),
        bits(&BufferData::F16(placed.clone()))
    );
    let dev = GcnEmulator::new();
    for t in [Target::Gfx942, Target::Gfx90a] {
        let ck = kjit::compile(&func, t, &CompileOptions::default()).unwrap();
        for imm in ["offset:512", "offset:1024"] {
            assert!(
                ck.asm
                    .lines()
                    .any(|l| l.contains("buffer_store_dwordx2") && l.contains(imm)),
                "{t}: no store at {imm}:\n{}",
                ck.asm
            );
        }
        let out = run_case(&dev, &ck.code_object, &func, &case).unwrap();
        assert_eq!(
            bits(&out.outputs[0]),
            bits(&BufferData::F16(placed.clone())),
            "{t}"
        );
    }
}

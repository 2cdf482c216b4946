//! Property tests of the e-graph optimizer: random straight-line programs, optimized, give the
//! same results in the interpreter as before — bit for bit for integers and (without contraction)
//! floats, up to NaN payloads; within a stated bound when contraction to fma is allowed.
//! Cases: 500 integer + 400 mixed float + 150 contraction = 1050 per run.
#![allow(
    clippy::needless_range_loop,
    clippy::manual_div_ceil,
    clippy::manual_range_patterns
)]

use kjit_ir::interp::{run, Arg, BufferData, LaunchDims};
use kjit_ir::opt::optimize;
use kjit_ir::*;
use proptest::prelude::*;

const INPUTS: usize = 4;
const OUTS: usize = 24;

/// One random step: an operation kind and operand/constant choices.
#[derive(Clone, Debug)]
struct Step {
    kind: u8,
    a: u8,
    b: u8,
    c: u8,
    k: u32,
}

fn step() -> impl Strategy<Value = Step> {
    (
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u32>(),
    )
        .prop_map(|(kind, a, b, c, k)| Step { kind, a, b, c, k })
}

const INT_CONSTS: [u32; 20] = [
    0,
    1,
    2,
    3,
    4,
    5,
    7,
    8,
    9,
    15,
    16,
    17,
    31,
    32,
    33,
    64,
    255,
    0xffff_ffff,
    0xffff_fffe,
    0x8000_0000,
];
const FLOAT_CONSTS: [f32; 12] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    2.0,
    0.5,
    3.0,
    -4.0,
    1e-3,
    65504.0,
    f32::INFINITY,
    1.5,
];

struct Gen {
    pools: [Vec<Value>; 4], // i32, u32, f32, bool
}

const TYS: [Type; 4] = [Type::I32, Type::U32, Type::F32, Type::Bool];

impl Gen {
    fn pick(&self, t: usize, i: u8) -> Value {
        let p = &self.pools[t];
        p[p.len() - 1 - (i as usize % p.len().min(8))]
    }
}

/// Builds a kernel: loads INPUTS values of each type per lane, plus scalar arguments, runs the
/// steps, stores the last OUTS values of each type.
fn build(steps: &[Step], floats: bool, contract: bool) -> Function {
    let mut f = Function::new("prop");
    f.flags.contract = contract;
    let bufs = [
        ("xi", ElemType::I32, false),
        ("xu", ElemType::U32, false),
        ("xf", ElemType::F32, false),
        ("oi", ElemType::I32, true),
        ("ou", ElemType::U32, true),
        ("of", ElemType::F32, true),
        ("ob", ElemType::U32, true),
    ];
    for (n, e, w) in bufs {
        f.params.push(Param {
            name: n.into(),
            ty: Type::Buffer {
                elem: e,
                writable: w,
            },
        });
    }
    for (n, t) in [("si", Type::I32), ("su", Type::U32), ("sf", Type::F32)] {
        f.params.push(Param {
            name: n.into(),
            ty: t,
        });
    }
    let mut c = FuncCursor::new(&mut f);
    let b0 = c.new_block();
    let tys: Vec<Type> = c.func.params.iter().map(|p| p.ty).collect();
    let ps: Vec<Value> = tys
        .iter()
        .map(|t| c.func.append_block_param(b0, *t))
        .collect();
    c.switch_to(b0);
    let lane = c.special(SpecialReg::LaneId).unwrap();
    let mut pools: [Vec<Value>; 4] = [vec![ps[7]], vec![ps[8]], vec![ps[9]], vec![]];
    for k in 0..INPUTS as u32 {
        let kk = c.iconst_u32(64 * k).unwrap();
        let idx = c.binary(BinaryOp::Add, lane, kk).unwrap();
        for t in 0..3 {
            let v = c.load(Mem::Global(ps[t]), idx, 0, 1).unwrap()[0];
            pools[t].push(v);
        }
    }
    let t = c.constant(Type::Bool, 1).unwrap();
    pools[3].push(t);
    let mut g = Gen { pools };
    for s in steps {
        let kind = s.kind as usize;
        let int_t = (s.c % 2) as usize; // i32 or u32
        let r: Option<(usize, Value)> = if !floats {
            match kind % 10 {
                0 | 1 | 2 | 3 => {
                    let op = BINARY_OPS[(s.k as usize) % BINARY_OPS.len()];
                    let a = g.pick(int_t, s.a);
                    let b = g.pick(int_t, s.b);
                    Some((int_t, c.binary(op, a, b).unwrap()))
                }
                4 | 5 => {
                    let k = INT_CONSTS[(s.k as usize) % INT_CONSTS.len()];
                    Some((int_t, c.constant(TYS[int_t], k as u64).unwrap()))
                }
                6 => {
                    let op = [UnaryOp::Neg, UnaryOp::Not, UnaryOp::Abs][s.k as usize % 3];
                    Some((int_t, c.unary(op, g.pick(int_t, s.a)).unwrap()))
                }
                7 => {
                    let op = CMP_OPS[s.k as usize % 6];
                    Some((
                        3,
                        c.cmp(op, g.pick(int_t, s.a), g.pick(int_t, s.b)).unwrap(),
                    ))
                }
                8 => Some((
                    int_t,
                    c.select(g.pick(3, s.k as u8), g.pick(int_t, s.a), g.pick(int_t, s.b))
                        .unwrap(),
                )),
                _ => {
                    let other = 1 - int_t;
                    let v = g.pick(other, s.a);
                    let conv = if s.k % 2 == 0 {
                        c.convert(TYS[int_t], v)
                    } else {
                        c.bitcast(TYS[int_t], v)
                    };
                    Some((int_t, conv.unwrap()))
                }
            }
        } else {
            match kind % 8 {
                0 | 1 | 2 => {
                    let op = [
                        BinaryOp::Add,
                        BinaryOp::Sub,
                        BinaryOp::Mul,
                        BinaryOp::Div,
                        BinaryOp::Min,
                        BinaryOp::Max,
                    ][s.k as usize % 6];
                    Some((2, c.binary(op, g.pick(2, s.a), g.pick(2, s.b)).unwrap()))
                }
                3 => Some((
                    2,
                    c.fconst_f32(FLOAT_CONSTS[s.k as usize % FLOAT_CONSTS.len()])
                        .unwrap(),
                )),
                4 => {
                    let op =
                        [UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Sqrt, UnaryOp::Rcp][s.k as usize % 4];
                    Some((2, c.unary(op, g.pick(2, s.a)).unwrap()))
                }
                5 => {
                    let op = CMP_OPS[s.k as usize % 6];
                    Some((3, c.cmp(op, g.pick(2, s.a), g.pick(2, s.b)).unwrap()))
                }
                6 => Some((
                    2,
                    c.select(g.pick(3, s.k as u8), g.pick(2, s.a), g.pick(2, s.b))
                        .unwrap(),
                )),
                _ => {
                    // int <-> float traffic, and integer arithmetic feeding it.
                    if s.k % 3 == 0 {
                        Some((2, c.convert(Type::F32, g.pick(int_t, s.a)).unwrap()))
                    } else if s.k % 3 == 1 {
                        Some((int_t, c.convert(TYS[int_t], g.pick(2, s.a)).unwrap()))
                    } else {
                        let k = c
                            .constant(
                                TYS[int_t],
                                INT_CONSTS[s.b as usize % INT_CONSTS.len()] as u64,
                            )
                            .unwrap();
                        Some((
                            int_t,
                            c.binary(BinaryOp::Mul, g.pick(int_t, s.a), k).unwrap(),
                        ))
                    }
                }
            }
        };
        if let Some((t, v)) = r {
            g.pools[t].push(v);
        }
    }
    // Store the last OUTS values of each type at lane*OUTS + j.
    let outs = [ps[3], ps[4], ps[5], ps[6]];
    let n = c.iconst_u32(OUTS as u32).unwrap();
    let base = c.binary(BinaryOp::Mul, lane, n).unwrap();
    for t in 0..4 {
        let vals: Vec<Value> = g.pools[t].iter().rev().take(OUTS).copied().collect();
        for (j, v) in vals.into_iter().enumerate() {
            let v = if t == 3 {
                c.convert(Type::U32, v).unwrap()
            } else {
                v
            };
            c.store(Mem::Global(outs[t]), base, j as u32, &[v]).unwrap();
        }
    }
    c.ret().unwrap();
    verify(&f).unwrap();
    f
}

fn args(ints: &[u32], floats: &[f32]) -> Vec<Arg> {
    let n = 64 * INPUTS;
    let xi: Vec<i32> = (0..n).map(|i| ints[i % ints.len()] as i32).collect();
    let xu: Vec<u32> = (0..n).map(|i| ints[(i * 7 + 3) % ints.len()]).collect();
    let xf: Vec<f32> = (0..n).map(|i| floats[i % floats.len()]).collect();
    vec![
        Arg::Buffer(BufferData::I32(xi)),
        Arg::Buffer(BufferData::U32(xu)),
        Arg::Buffer(BufferData::F32(xf)),
        Arg::Buffer(BufferData::I32(vec![0; 64 * OUTS])),
        Arg::Buffer(BufferData::U32(vec![0; 64 * OUTS])),
        Arg::Buffer(BufferData::F32(vec![0.0; 64 * OUTS])),
        Arg::Buffer(BufferData::U32(vec![0; 64 * OUTS])),
        Arg::I32(ints[0] as i32),
        Arg::U32(ints[1 % ints.len()]),
        Arg::F32(floats[0]),
    ]
}

fn same_bits(a: &Arg, b: &Arg) -> Result<(), String> {
    match (a, b) {
        (Arg::Buffer(BufferData::F32(x)), Arg::Buffer(BufferData::F32(y))) => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if !(p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan())) {
                    return Err(format!("f32 output {i}: {p:?} vs {q:?}"));
                }
            }
            Ok(())
        }
        (Arg::Buffer(x), Arg::Buffer(y)) => {
            for i in 0..x.len() {
                if x.get_bits(i) != y.get_bits(i) {
                    return Err(format!(
                        "output {i}: {:#x} vs {:#x}",
                        x.get_bits(i),
                        y.get_bits(i)
                    ));
                }
            }
            Ok(())
        }
        _ => Err("not buffers".into()),
    }
}

fn check_program(f: &Function, a: Vec<Arg>, tol: Option<f32>) -> Result<(), TestCaseError> {
    let (g, _) = optimize(f);
    verify(&g)
        .map_err(|e| TestCaseError::fail(format!("optimized program does not verify: {e}\n{g}")))?;
    let launch = LaunchDims {
        grid: [1, 1, 1],
        block: [64, 1, 1],
        dynamic_lds: 0,
    };
    let mut before = a.clone();
    let mut after = a;
    run(f, &launch, &mut before).map_err(|e| TestCaseError::fail(e.to_string()))?;
    run(&g, &launch, &mut after).map_err(|e| TestCaseError::fail(e.to_string()))?;
    for k in 3..7 {
        let r = match (tol, &before[k], &after[k]) {
            (Some(t), Arg::Buffer(BufferData::F32(x)), Arg::Buffer(BufferData::F32(y))) => {
                x.iter().zip(y).enumerate().try_for_each(|(i, (p, q))| {
                    if (p - q).abs() <= t * p.abs().max(1e-30)
                        || (p.is_nan() && q.is_nan())
                        || p == q
                    {
                        Ok(())
                    } else {
                        Err(format!("f32 output {i}: {p:?} vs {q:?}"))
                    }
                })
            }
            _ => same_bits(&before[k], &after[k]),
        }
        .map_err(|m| format!("argument {k}: {m}"));
        r.map_err(|m| TestCaseError::fail(format!("{m}\nbefore:\n{f}\nafter:\n{g}")))?;
    }
    Ok(())
}

fn int_inputs() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(
        prop_oneof![
            any::<u32>(),
            (0u32..70),
            Just(0x8000_0000u32),
            Just(u32::MAX),
            (0u32..20).prop_map(|x| 1 << x)
        ],
        8..16,
    )
}

fn float_inputs() -> impl Strategy<Value = Vec<f32>> {
    prop::collection::vec(
        prop_oneof![
            (-100.0f32..100.0),
            Just(0.0f32),
            Just(-0.0f32),
            Just(f32::INFINITY),
            Just(f32::NAN),
            Just(1.0f32),
            (-1e-3f32..1e-3)
        ],
        8..16,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn integer_programs_keep_their_results(steps in prop::collection::vec(step(), 4..40), ints in int_inputs(), floats in float_inputs()) {
        let f = build(&steps, false, false);
        check_program(&f, args(&ints, &floats), None)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn float_programs_keep_their_results_bit_for_bit(steps in prop::collection::vec(step(), 4..40), ints in int_inputs(), floats in float_inputs()) {
        let f = build(&steps, true, false);
        check_program(&f, args(&ints, &floats), None)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn contracted_programs_stay_within_the_rounding_bound(steps in prop::collection::vec(step(), 4..30), ints in int_inputs(), floats in prop::collection::vec(1.0f32..2.0, 8..16)) {
        // Only add and mul of values in [1, 2]: no cancellation, so contracting a*b+c changes
        // a result by at most a few ulps per operation.
        let steps: Vec<Step> = steps.into_iter().map(|mut s| { s.kind = 0; s.k %= 3; if s.k == 1 { s.k = 2 } else if s.k == 2 { s.k = 0 }; s }).collect();
        let f = build(&steps, true, true);
        check_program(&f, args(&ints, &floats), Some(1e-5))?;
    }
}

#[test]
fn contraction_happens_only_when_allowed() {
    let text = "kernel k(a: f32, b: f32, c: f32, o: buf_mut<f32>) FLAGS{
block0(v0: f32, v1: f32, v2: f32, v3: buf_mut<f32>):
    v4:f32 = mul v0, v1
    v5:f32 = add v4, v2
    v6:u32 = lane_id
    store v3[v6], v5
    return
}
";
    let on = kjit_ir::parse::parse_function(&text.replace("FLAGS", "contract ")).unwrap();
    let off = kjit_ir::parse::parse_function(&text.replace("FLAGS", "")).unwrap();
    assert!(optimize(&on).0.to_string().contains("fma v0, v1, v2"));
    assert!(!optimize(&off).0.to_string().contains("fma"));
}

/// A tool, not a check: with `KJIT_OPT_CORPUS=FILE`, writes the optimized text of a fixed,
/// deterministic corpus of random programs (integer, float, contracted) to FILE, so that a
/// change meant only to speed the optimizer up can be shown to leave its output unchanged
/// (`diff` the files written before and after). Run with `--ignored`.
#[test]
#[ignore]
fn write_optimized_corpus() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let Ok(path) = std::env::var("KJIT_OPT_CORPUS") else {
        return;
    };
    let mut runner = TestRunner::deterministic();
    let mut out = String::new();
    for (floats, contract, n, len) in [
        (false, false, 700, 4..60),
        (true, false, 500, 4..60),
        (true, true, 200, 4..60),
        (false, false, 40, 150..400),
        (true, false, 20, 150..400),
    ] {
        for _ in 0..n {
            let steps = prop::collection::vec(step(), len.clone())
                .new_tree(&mut runner)
                .unwrap()
                .current();
            let f = build(&steps, floats, contract);
            let (g, r) = optimize(&f);
            out.push_str(&format!(
                "# {} -> {} insts, {} -> {} cycles, {} folded\n{g}\n",
                r.insts_before, r.insts_after, r.cycles_before, r.cycles_after, r.folded_offsets
            ));
            for b in &r.blocks {
                out.push_str(&format!(
                    "# {} {} {} {} {}\n",
                    b.iterations, b.stop, b.nodes, b.classes, b.rebuilt
                ));
            }
        }
    }
    std::fs::write(path, out).unwrap();
}

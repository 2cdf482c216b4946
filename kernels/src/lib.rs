//! kjit's kernel library.
//!
//! Every kernel is written with the builder ([`kjit_frontend::KernelBuilder`]) and registered as
//! a [`KernelSpec`]: how to build it, how to make random inputs and a launch shape for a problem
//! size `n` ([`Case`]), a CPU reference for its outputs, and the tolerance a result must meet.
//! Tests (the interpreter's here, the compiled code's on the GCN device later) all run the same
//! cases and compare with [`check`].
#![deny(missing_docs)]

use kjit_ir::interp::{Arg, BufferData, LaunchDims};
use kjit_ir::Function;
use rand::rngs::StdRng;
use rand::SeedableRng;

pub mod attention;
pub mod gemm;
pub mod hash;
pub mod hash_lanes;
pub mod matmul;
pub mod pipelined;
pub mod reduce;
pub mod seed_2d;
pub mod softmax;
pub mod vector;
pub mod wave_permute;

/// One run of a kernel: its arguments, its launch shape and which arguments are outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The problem size the case was made for.
    pub n: usize,
    /// Arguments, in parameter order. Output-only buffers are filled with a poison pattern
    /// ([`POISON_F32`], [`POISON_U32`]) so that unwritten elements show.
    pub args: Vec<Arg>,
    /// Workgroups and workgroup size.
    pub launch: LaunchDims,
    /// Indices into `args` of the buffers the reference predicts.
    pub outputs: Vec<usize>,
}

/// How close a float result must be to the reference: `|got - want| <= abs + rel * |want|`.
/// Both zero means bit-exact (every NaN matches every NaN).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Absolute part.
    pub abs: f64,
    /// Relative part.
    pub rel: f64,
}

impl Tolerance {
    /// Bit-exact.
    pub const EXACT: Tolerance = Tolerance { abs: 0.0, rel: 0.0 };
}

/// The poison pattern for f32 outputs (a NaN no kernel computes).
pub const POISON_F32: u32 = 0x7fba_dbad;
/// The poison pattern for u32/i32 outputs.
pub const POISON_U32: u32 = 0xdead_beef;

/// Building a kernel failed (a bug in the kernel library).
pub type BuildResult = Result<Function, kjit_frontend::KernelError>;

/// A kernel of the library.
pub struct KernelSpec {
    /// Name (also the kernel's symbol).
    pub name: &'static str,
    /// One line on what it computes.
    pub description: &'static str,
    /// Builds the kernel's IR.
    pub build: fn() -> BuildResult,
    /// Random inputs and a launch shape for size `n` from `seed`.
    pub make_case: fn(n: usize, seed: u64) -> Case,
    /// The expected contents of `case.outputs`, in order, computed on the CPU from the inputs.
    pub reference: fn(&Case) -> Vec<BufferData>,
    /// How close results must be.
    pub tolerance: Tolerance,
    /// A size that runs in well under a second in the interpreter.
    pub default_n: usize,
    /// Parameters `kjit tune` may search besides the occupancy (`None`: occupancy only).
    pub tuning: Option<Tuning>,
}

/// One tuning parameter of a kernel (like one key of a Triton config): its name and the values
/// to try. `values[0]` is the default, what [`KernelSpec::build`] and
/// [`KernelSpec::make_case`] use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TuneParam {
    /// Name (`block`, `unroll`, `tile`, ...).
    pub name: &'static str,
    /// Values to try, the default first.
    pub values: &'static [u32],
}

/// How a kernel builds and launches for one choice of its tuning parameters. The parameters
/// change the code or the launch shape, never the result: the same reference checks them all.
#[derive(Clone, Copy, Debug)]
pub struct Tuning {
    /// The parameters, in the order the functions below take their values.
    pub params: &'static [TuneParam],
    /// Builds the kernel for one value per parameter.
    pub build: fn(&[u32]) -> BuildResult,
    /// Inputs and launch shape for one value per parameter, size `n` and `seed` (the inputs
    /// must not depend on the parameters, only the launch shape may).
    pub make_case: fn(&[u32], usize, u64) -> Case,
}

impl KernelSpec {
    /// Builds the kernel with one value per tuning parameter (`params` empty, or no declared
    /// parameters: the default build).
    pub fn build_with(&self, params: &[u32]) -> BuildResult {
        match self.tuning {
            Some(t) if !params.is_empty() => (t.build)(params),
            _ => (self.build)(),
        }
    }

    /// Inputs and launch shape with one value per tuning parameter (as [`KernelSpec::build_with`]).
    pub fn case_with(&self, params: &[u32], n: usize, seed: u64) -> Case {
        match self.tuning {
            Some(t) if !params.is_empty() => (t.make_case)(params, n, seed),
            _ => (self.make_case)(n, seed),
        }
    }
}

impl Tuning {
    /// The default value of every parameter.
    pub fn defaults(&self) -> Vec<u32> {
        self.params.iter().map(|p| p.values[0]).collect()
    }

    /// Every combination of the declared values, one value per parameter (the defaults first).
    pub fn choices(&self) -> Vec<Vec<u32>> {
        let mut all = vec![Vec::new()];
        for p in self.params {
            all = all
                .into_iter()
                .flat_map(|c| {
                    p.values.iter().map(move |&v| {
                        let mut c = c.clone();
                        c.push(v);
                        c
                    })
                })
                .collect();
        }
        all
    }
}

static ALL: [KernelSpec; 15] = [
    vector::VECTOR_ADD,
    vector::SAXPY,
    vector::VECTOR_ADD_PERSISTENT,
    seed_2d::SEED_2D,
    reduce::REDUCE_SUM,
    wave_permute::WAVE_PERMUTE,
    softmax::SOFTMAX,
    matmul::MATMUL,
    hash::HASH_ROUNDS,
    hash::chain::HASH_CHAIN,
    hash_lanes::HASH_LANES,
    hash_lanes::HASH_LANES_WIDE,
    pipelined::VECTOR_ADD_PIPELINED,
    pipelined::MATMUL_PIPELINED,
    pipelined::STENCIL_PIPELINED,
];

/// Kernels of [`all`] without an OpenCL twin in `kernels/opencl/` (the twins' tests, issue 15's
/// codegen ratchet and the clang comparisons skip them): a twin is written where kjit meets
/// clang-19's instruction counts on it. `hash_lanes`: clang-19 -O3 makes about 1,718
/// instructions on gfx942 (llvm-objdump-19; 128 VGPRs and 53 spilled to scratch) where kjit's
/// default made 2,079; since issue 15's VGPR layout it makes 1,427 (114 VGPRs), so a twin is
/// due (not written yet); `hash_lanes_wide` is its 5-stream shape (a twin of one serves both).
pub const NO_OPENCL_TWIN: &[&str] = &["hash_lanes", "hash_lanes_wide"];

/// Every kernel of the library.
pub fn all() -> &'static [KernelSpec] {
    &ALL
}

static MATRIX: [KernelSpec; 4] = [
    gemm::GEMM_F16,
    gemm::GEMM_BF16,
    gemm::GEMM_F32,
    attention::ATTENTION,
];

/// The kernels that need matrix cores (MFMA: gfx90a, gfx942), kept apart from [`all`], whose
/// kernels compile for every target.
pub fn matrix() -> &'static [KernelSpec] {
    &MATRIX
}

/// The kernel called `name` (from [`all`] or [`matrix`]).
pub fn find(name: &str) -> Option<&'static KernelSpec> {
    ALL.iter().chain(MATRIX.iter()).find(|k| k.name == name)
}

/// A deterministic random generator for a case.
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// A buffer of `len` elements of `elem`, poisoned.
pub fn poisoned(elem: kjit_ir::ElemType, len: usize) -> Arg {
    let bits = match elem {
        kjit_ir::ElemType::F32 => POISON_F32 as u64,
        _ => POISON_U32 as u64,
    };
    Arg::Buffer(BufferData::filled_bits(elem, len, bits))
}

/// Random f32s uniform in `[lo, hi)`.
pub fn random_f32(rng: &mut StdRng, len: usize, lo: f32, hi: f32) -> Vec<f32> {
    use rand::RngExt;
    (0..len).map(|_| rng.random_range(lo..hi)).collect()
}

/// Workgroups needed to cover `n` work-items with groups of `block`.
pub fn groups(n: usize, block: u32) -> u32 {
    (n.div_ceil(block as usize) as u32).max(1)
}

/// A result that did not match the reference.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("output {output} (argument {arg}): {mismatches} of {len} elements differ; first at [{index}]: got {got}, want {want}")]
pub struct Mismatch {
    /// Which output (index into `case.outputs`).
    pub output: usize,
    /// Which argument.
    pub arg: usize,
    /// Elements in the buffer.
    pub len: usize,
    /// How many differ.
    pub mismatches: usize,
    /// The first that differs.
    pub index: usize,
    /// Its value.
    pub got: String,
    /// The reference's value.
    pub want: String,
}

fn as_f64(b: &BufferData, i: usize) -> Option<f64> {
    Some(match b {
        BufferData::F16(v) => v[i].to_f64(),
        BufferData::F32(v) => v[i] as f64,
        BufferData::F64(v) => v[i],
        _ => return None,
    })
}

fn show(b: &BufferData, i: usize) -> String {
    match b {
        BufferData::I32(v) => v[i].to_string(),
        BufferData::U32(v) => v[i].to_string(),
        BufferData::I64(v) => v[i].to_string(),
        BufferData::U64(v) => v[i].to_string(),
        BufferData::F16(v) => format!("{:?}", v[i].to_f32()),
        BufferData::F32(v) => format!("{:?} ({:#010x})", v[i], v[i].to_bits()),
        BufferData::F64(v) => format!("{:?}", v[i]),
    }
}

/// Compares the output buffers in `args` (after a run) with the reference's predictions.
pub fn check(
    case: &Case,
    args: &[Arg],
    expected: &[BufferData],
    tol: Tolerance,
) -> Result<(), Mismatch> {
    for (o, (&ai, want)) in case.outputs.iter().zip(expected).enumerate() {
        let got = match args.get(ai) {
            Some(Arg::Buffer(b)) => b,
            _ => {
                return Err(Mismatch {
                    output: o,
                    arg: ai,
                    len: 0,
                    mismatches: 1,
                    index: 0,
                    got: "no buffer".into(),
                    want: "a buffer".into(),
                })
            }
        };
        let len = want.len();
        let mut first = None;
        let mut count = 0;
        if got.len() != len || got.elem() != want.elem() {
            return Err(Mismatch {
                output: o,
                arg: ai,
                len,
                mismatches: len,
                index: 0,
                got: format!("{} elements of {}", got.len(), got.elem()),
                want: format!("{} elements of {}", len, want.elem()),
            });
        }
        for i in 0..len {
            let ok = match (as_f64(got, i), as_f64(want, i)) {
                (Some(g), Some(w)) => {
                    if g.is_nan() || w.is_nan() {
                        g.is_nan() && w.is_nan() && !is_poison(got, i)
                    } else if tol == Tolerance::EXACT {
                        got.get_bits(i) == want.get_bits(i)
                    } else {
                        (g - w).abs() <= tol.abs + tol.rel * w.abs()
                    }
                }
                _ => got.get_bits(i) == want.get_bits(i),
            };
            if !ok {
                count += 1;
                first.get_or_insert(i);
            }
        }
        if let Some(index) = first {
            return Err(Mismatch {
                output: o,
                arg: ai,
                len,
                mismatches: count,
                index,
                got: show(got, index),
                want: show(want, index),
            });
        }
    }
    Ok(())
}

fn is_poison(b: &BufferData, i: usize) -> bool {
    matches!(b, BufferData::F32(v) if v[i].to_bits() == POISON_F32)
}

/// Reads buffer argument `i` of a case as f32s (kernels' references use it).
pub fn f32s(case: &Case, i: usize) -> &[f32] {
    match &case.args[i] {
        Arg::Buffer(BufferData::F32(v)) => v,
        a => panic!("argument {i} of the case is not an f32 buffer: {a:?}"),
    }
}

/// Reads buffer argument `i` of a case as u32s.
pub fn u32s(case: &Case, i: usize) -> &[u32] {
    match &case.args[i] {
        Arg::Buffer(BufferData::U32(v)) => v,
        a => panic!("argument {i} of the case is not a u32 buffer: {a:?}"),
    }
}

/// Scalar argument `i` of a case as f32.
pub fn f32_arg(case: &Case, i: usize) -> f32 {
    match case.args[i] {
        Arg::F32(x) => x,
        ref a => panic!("argument {i} of the case is not f32: {a:?}"),
    }
}

/// Scalar argument `i` of a case as u32.
pub fn u32_arg(case: &Case, i: usize) -> u32 {
    match case.args[i] {
        Arg::U32(x) => x,
        ref a => panic!("argument {i} of the case is not u32: {a:?}"),
    }
}

//! Element-wise kernels: vector add, saxpy and the persistent (grid-stride) vector add.

use crate::*;
use kjit_frontend::{Dim, KernelBuilder};
use kjit_ir::ElemType;

/// Work-items per workgroup of the element-wise kernels.
pub const BLOCK: u32 = 256;

/// Tuning parameter of the element-wise kernels: the workgroup size (the default first). Their
/// code does not depend on it; only the launch shape changes.
const BLOCKS: &[TuneParam] = &[TuneParam {
    name: "block",
    values: &[BLOCK, 64, 128, 512, 1024],
}];

/// Tuning parameter of the persistent kernel: its workgroup size (the grid stays
/// [`PERSISTENT_GROUPS`] workgroups).
const PERSISTENT_BLOCKS: &[TuneParam] = &[TuneParam {
    name: "block",
    values: &[PERSISTENT_BLOCK, 64, 256, 512, 1024],
}];

/// `c[i] = a[i] + b[i]`, with no explicit bounds check: the work-items past the end load 0
/// and their stores are dropped by the buffers' bounds checks.
pub fn build_vector_add() -> BuildResult {
    let k = KernelBuilder::new("vector_add");
    let a = k.buffer::<f32>("a");
    let b = k.buffer::<f32>("b");
    let c = k.buffer_mut::<f32>("c");
    let i = k.global_id(Dim::X);
    let s = k.load(&a, i) + k.load(&b, i);
    k.store(&c, i, s);
    k.finish()
}

/// Random `a`, `b` in [-10, 10) and a poisoned `c` of `n` floats, on `grid` x `block`.
pub fn case_abc(n: usize, seed: u64, grid: u32, block: u32) -> Case {
    let mut r = rng(seed);
    let a = random_f32(&mut r, n, -10.0, 10.0);
    let b = random_f32(&mut r, n, -10.0, 10.0);
    Case {
        n,
        args: vec![
            Arg::Buffer(BufferData::F32(a)),
            Arg::Buffer(BufferData::F32(b)),
            poisoned(ElemType::F32, n),
        ],
        launch: LaunchDims {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![2],
    }
}

fn make_vector_add(n: usize, seed: u64) -> Case {
    make_vector_add_with(&[BLOCK], n, seed)
}

fn make_vector_add_with(p: &[u32], n: usize, seed: u64) -> Case {
    case_abc(n, seed, groups(n, p[0]), p[0])
}

/// `a + b` element by element.
pub fn ref_vector_add(c: &Case) -> Vec<BufferData> {
    let (a, b) = (f32s(c, 0), f32s(c, 1));
    vec![BufferData::F32(
        a.iter().zip(b).map(|(x, y)| x + y).collect(),
    )]
}

/// The registry entry of `vector_add`.
pub const VECTOR_ADD: KernelSpec = KernelSpec {
    name: "vector_add",
    description: "c[i] = a[i] + b[i] (bounds by the buffers' lengths)",
    build: build_vector_add,
    make_case: make_vector_add,
    reference: ref_vector_add,
    tolerance: Tolerance::EXACT,
    default_n: 10_000,
    tuning: Some(Tuning {
        params: BLOCKS,
        build: |_| build_vector_add(),
        make_case: make_vector_add_with,
    }),
};

/// `y[i] = alpha * x[i] + y[i]` for `i < len(y)`; contraction to fma is allowed.
pub fn build_saxpy() -> BuildResult {
    let k = KernelBuilder::new("saxpy");
    k.allow_contraction(true);
    let alpha = k.arg::<f32>("alpha");
    let x = k.buffer::<f32>("x");
    let y = k.buffer_mut::<f32>("y");
    let i = k.global_id(Dim::X);
    k.if_(i.lt(y.len()), || {
        let v = alpha * k.load(&x, i) + k.load(&y, i);
        k.store(&y, i, v);
    });
    k.finish()
}

fn make_saxpy(n: usize, seed: u64) -> Case {
    make_saxpy_with(&[BLOCK], n, seed)
}

fn make_saxpy_with(p: &[u32], n: usize, seed: u64) -> Case {
    let block = p[0];
    let mut r = rng(seed);
    let alpha = random_f32(&mut r, 1, -2.0, 2.0)[0];
    let x = random_f32(&mut r, n, -1.0, 1.0);
    let y = random_f32(&mut r, n, -1.0, 1.0);
    Case {
        n,
        args: vec![
            Arg::F32(alpha),
            Arg::Buffer(BufferData::F32(x)),
            Arg::Buffer(BufferData::F32(y)),
        ],
        launch: LaunchDims {
            grid: [groups(n, block), 1, 1],
            block: [block, 1, 1],
            dynamic_lds: 0,
        },
        outputs: vec![2],
    }
}

fn ref_saxpy(c: &Case) -> Vec<BufferData> {
    let alpha = f32_arg(c, 0) as f64;
    let (x, y) = (f32s(c, 1), f32s(c, 2));
    vec![BufferData::F32(
        x.iter()
            .zip(y)
            .map(|(x, y)| (alpha * *x as f64 + *y as f64) as f32)
            .collect(),
    )]
}

/// The registry entry of `saxpy`.
pub const SAXPY: KernelSpec = KernelSpec {
    name: "saxpy",
    description: "y[i] = alpha * x[i] + y[i] (fma contraction allowed)",
    build: build_saxpy,
    make_case: make_saxpy,
    reference: ref_saxpy,
    // |alpha*x| < 2, |y| < 1: one rounding of the product plus one of the sum, or one fma.
    tolerance: Tolerance {
        abs: 1e-6,
        rel: 1e-6,
    },
    default_n: 10_000,
    tuning: Some(Tuning {
        params: BLOCKS,
        build: |_| build_saxpy(),
        make_case: make_saxpy_with,
    }),
};

/// Workgroups of the persistent kernel: fewer than the elements need, so every work-item loops.
pub const PERSISTENT_GROUPS: u32 = 3;
/// Work-items per workgroup of the persistent kernel.
pub const PERSISTENT_BLOCK: u32 = 128;

/// The seed's persistent vector add: a fixed grid strides over the whole vector. Its buffers
/// are declared `noalias` (`c` overlaps neither `a` nor `b`; the launch checks it), so the
/// optimizer issues the next iteration's loads before this one's store.
pub fn build_vector_add_persistent() -> BuildResult {
    let k = KernelBuilder::new("vector_add_persistent");
    k.noalias(true);
    let a = k.buffer::<f32>("a");
    let b = k.buffer::<f32>("b");
    let c = k.buffer_mut::<f32>("c");
    let n = c.len();
    let stride = k.global_size(Dim::X);
    let i = k.var_named("i", k.global_id(Dim::X));
    k.while_(
        || i.get().lt(n),
        || {
            let s = k.load(&a, i.get()) + k.load(&b, i.get());
            k.store(&c, i.get(), s);
            i.set(i.get() + stride);
        },
    );
    k.finish()
}

fn make_persistent(n: usize, seed: u64) -> Case {
    make_persistent_with(&[PERSISTENT_BLOCK], n, seed)
}

fn make_persistent_with(p: &[u32], n: usize, seed: u64) -> Case {
    case_abc(n, seed, PERSISTENT_GROUPS, p[0])
}

/// The registry entry of `vector_add_persistent`.
pub const VECTOR_ADD_PERSISTENT: KernelSpec = KernelSpec {
    name: "vector_add_persistent",
    description: "c = a + b with a fixed grid of 3x128 work-items striding over the vector",
    build: build_vector_add_persistent,
    make_case: make_persistent,
    reference: ref_vector_add,
    tolerance: Tolerance::EXACT,
    default_n: 10_000,
    tuning: Some(Tuning {
        params: PERSISTENT_BLOCKS,
        build: |_| build_vector_add_persistent(),
        make_case: make_persistent_with,
    }),
};

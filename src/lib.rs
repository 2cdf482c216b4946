//! kjit: a kernel JIT compiler from Rust builder calls to AMD GCN/CDNA machine code.
//!
//! # Quick start
//!
//! Write a kernel with the [`KernelBuilder`], compile it for a device with [`Gpu::compile`],
//! move data with [`Gpu::to_device`] and [`GpuBuffer::to_host`], and launch with typed
//! arguments, which are checked against the kernel's parameters:
//!
//! ```
//! use kjit::{Dim, Gpu, KernelBuilder, LaunchDims};
//!
//! // y[i] = alpha * x[i] + y[i]
//! let k = KernelBuilder::new("saxpy");
//! let alpha = k.arg::<f32>("alpha");
//! let x = k.buffer::<f32>("x");
//! let y = k.buffer_mut::<f32>("y");
//! let i = k.global_id(Dim::X);
//! k.if_(i.lt(x.len()), || k.store(&y, i, alpha * k.load(&x, i) + k.load(&y, i)));
//! let func = k.finish()?;
//!
//! let gpu = Gpu::new()?; // an AMD GPU through HIP if there is one, else kjit's software device
//! let kernel = gpu.compile(&func)?;
//! let xs: Vec<f32> = (0..1000).map(|i| i as f32).collect();
//! let x = gpu.to_device(&xs)?;
//! let mut y = gpu.to_device(&vec![1.0f32; 1000])?;
//! let stats = kernel
//!     .launch(LaunchDims::cover(1000, 256))
//!     .arg(2.0f32)
//!     .arg(&x)
//!     .arg(&mut y) // the kernel writes `y`: it must be passed as `&mut`
//!     .run()?;
//! let ys = y.to_host()?;
//! assert!(ys.iter().zip(&xs).all(|(y, x)| *y == 2.0 * x + 1.0));
//! assert_eq!(stats.waves, 16);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Gpu::emu_timed`]`("mi300x")` times each launch on a machine model of the software device: the
//! launch's `stats.timing` is the model's report (cycles, seconds, bandwidth, stalls).
//! `KJIT_DEVICE=emu|hip` picks the device; `KJIT_VERBOSE=1` says which one was picked and why.
//! The `examples/` folder has more (GELU with bias, a 2-D stencil, row sums with LDS and wave
//! reductions).
//!
//! # Crates
//!
//! This facade re-exports the pipeline's crates:
//! `frontend` (builder API) → `ir` (SSA IR, interpreter, e-graph optimizer) →
//! `backend_gcn` (instruction selection, register allocation, waitcnt, encoding, code objects) →
//! `runtime` (devices: kjit's software GCN device, and HIP on machines with an AMD GPU).
#![deny(missing_docs)]

pub mod exec;
pub mod gemm_compare;
pub mod gpu;
pub mod kernel_files;
pub mod tune;

pub use gpu::{Element, Error, Gpu, GpuBuffer, Kernel, KernelArg, Launch};
pub use kjit_backend_gcn as backend_gcn;
pub use kjit_backend_gcn::compile::{compile, CompileError, CompileOptions, CompiledKernel};
pub use kjit_frontend as frontend;
pub use kjit_frontend::{Dim, KernelBuilder, ReduceOp};
pub use kjit_ir as ir;
pub use kjit_kernels as kernels;
pub use kjit_runtime as runtime;
pub use kjit_runtime::{LaunchDims, LaunchStats};

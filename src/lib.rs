//! kjit: a kernel JIT compiler from Rust builder calls to AMD GCN/CDNA machine code.
//!
//! This facade re-exports the pipeline's crates:
//! `frontend` (builder API) → `ir` (SSA IR, interpreter, e-graph optimizer) →
//! `backend_gcn` (instruction selection, register allocation, waitcnt, encoding, code objects) →
//! `runtime` (devices: kjit's software GCN device, and HIP on machines with an AMD GPU).
#![deny(missing_docs)]

pub mod exec;
pub mod tune;

pub use kjit_backend_gcn as backend_gcn;
pub use kjit_backend_gcn::compile::{compile, CompileError, CompileOptions, CompiledKernel};
pub use kjit_frontend as frontend;
pub use kjit_ir as ir;
pub use kjit_kernels as kernels;
pub use kjit_runtime as runtime;

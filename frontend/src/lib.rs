//! kjit's builder API: kernels are ordinary Rust functions that call a [`KernelBuilder`].
//!
//! ```
//! use kjit_frontend::{Dim, KernelBuilder};
//! let k = KernelBuilder::new("saxpy");
//! let alpha = k.arg::<f32>("alpha");
//! let x = k.buffer::<f32>("x");
//! let y = k.buffer_mut::<f32>("y");
//! let i = k.global_id(Dim::X);
//! let v = alpha * k.load(&x, i) + k.load(&y, i);
//! k.store(&y, i, v);
//! let kernel = k.finish().unwrap(); // verified IR, or every misuse with its call site
//! assert_eq!(kernel.params.len(), 3);
//! ```
//!
//! Types are Rust's (`bool`, `i32`, `u32`, `i64`, `u64`, `half::f16`, `f32`, `f64`); there are no
//! silent conversions (`cast`/`bitcast` are explicit). Control flow is written with closures
//! (`if_`, `if_else`, `while_`, `for_range`, `return_if`), mutable state with [`Var`]s.
#![deny(missing_docs)]

mod builder;
mod error;
mod frag;
mod math;
mod memory;
mod pipeline;
mod types;
mod value;

pub use builder::KernelBuilder;
pub use error::{BuildError, KernelError};
pub use frag::{Frag, FragElem, FragVar, MfmaInput, MFMA_OPS};
pub use half::f16;
pub use kjit_ir::{Dim, Function, ReduceOp};
pub use kjit_ir::{FragType, MfmaOp};
pub use memory::{Buffer, Lds, Memory};
pub use pipeline::{Pipeline, Stage, Staged, TileSharing};
pub use types::{Float, Index, Int, Num, Scalar};
pub use value::{AnyVal, Bits, Operand, Val, Var};

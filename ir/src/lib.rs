//! kjit's SSA IR.
//!
//! A kernel is a [`Function`]: blocks with parameters (instead of phis), instructions and typed
//! values held in `cranelift-entity` maps. Around it:
//! - [`verifier`] checks it (types, SSA dominance, terminators, the uniformity rule for barriers);
//! - [`uniformity`] says which values and branches are the same across a wave;
//! - [`write`] and [`parse`] are its text form (print/parse round-trip exactly);
//! - [`interp`] runs it for a whole grid on the CPU: the semantic reference for every backend;
//! - [`opt`] rewrites it in an `egg` e-graph under a GCN cost model.
#![deny(missing_docs)]

pub mod cfg;
pub mod cursor;
pub mod entities;
pub mod function;
pub mod instructions;
pub mod interp;
pub mod mfma;
pub mod opt;
pub mod parse;
pub mod semantics;
pub mod types;
pub mod uniformity;
pub mod verifier;
pub mod write;

pub use cursor::FuncCursor;
pub use entities::{Block, Inst, LdsArray, Value};
pub use function::{BlockData, Flags, Function, LdsDecl, Param, ValueData, ValueDef};
pub use instructions::*;
pub use mfma::{MfmaOp, MFMA_OPS};
pub use types::{ElemType, FragElem, FragType, Type};
pub use uniformity::Uniformity;
pub use verifier::{verify, verify_with_uniformity, VerifierError, VerifierErrors};

//! kjit's GCN/CDNA backend: the gfx9 instruction layer (one opcode table for encoder, decoder and printer)
//! and AMDGPU code objects (writer and reader); later, instruction selection, register allocation,
//! waitcnt insertion and emission.
#![deny(missing_docs)]

pub mod codeobj;
pub mod compile;
pub mod desc_sink;
pub mod emit;
pub mod hazards;
pub mod isa;
pub mod isel;
pub mod llvm_oracle;
pub mod machine;
mod memo;
pub mod mfma_hazards;
pub mod mir;
pub mod mir_verify;
pub mod peephole;
pub mod phys;
pub mod regalloc;
pub mod schedule;
pub mod target;
pub mod waitcnt;

pub use target::Target;

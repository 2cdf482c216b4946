//! kjit's software GCN device: loads real gfx9 code objects and executes their machine code on
//! the CPU, wave by wave, with the asynchronous memory counters made visible.
//!
//! The pipeline of one launch:
//!
//! ```text
//!  code object ──codeobj::CodeObject::parse──► kernel (code, descriptor, arg metadata)
//!        │                                        │
//!        └─ isa::decode (once per kernel) ──► Program: pc → decoded instruction
//!                                                 │
//!  dispatch.rs: kernarg segment, AQL packet, scratch, initial SGPRs/VGPRs per wave
//!                                                 │
//!  scheduler.rs: workgroups in parallel (rayon); inside one, waves interleaved
//!                (round-robin or seeded random), exact s_barrier
//!                                                 │
//!  per instruction: scoreboard.rs (hazards, counters) → scalar.rs | valu/ | smem.rs |
//!                   vmem.rs | lds.rs → stats.rs
//! ```
//!
//! Module map: [`wave`] (architectural state and operand access), [`error`] (located errors),
//! [`memory`] (device allocations), [`valu`] (vector ALU semantics, owned by the "valu" helper).

/// Declares an opcode enum from `Variant = "mnemonic"` pairs with `from_name`, `name` and `ALL`:
/// the one table the scalar unit and the vector ALU decode their mnemonics through.
macro_rules! mnemonic_enum {
    ($(#[$meta:meta])* $enum:ident { $( $variant:ident = $name:literal, )* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[allow(missing_docs)]
        pub enum $enum { $( $variant, )* }

        impl $enum {
            /// The operation with this mnemonic, if the device implements it.
            pub fn from_name(name: &str) -> Option<$enum> {
                match name { $( $name => Some($enum::$variant), )* _ => None }
            }

            /// The mnemonic.
            pub fn name(self) -> &'static str {
                match self { $( $enum::$variant => $name, )* }
            }

            /// Every implemented operation.
            pub const ALL: &'static [$enum] = &[ $( $enum::$variant, )* ];
        }
    };
}

pub mod args;
pub mod atomic;
pub mod ctx;
pub mod dispatch;
pub mod ds;
pub mod error;
pub mod gcn;
pub mod launch;
pub mod lds;
pub mod loader;
pub mod memory;
pub mod program;
pub mod scalar;
pub mod scheduler;
pub mod scoreboard;
pub mod smem;
pub mod stats;
pub mod translate;
pub mod valu;
pub mod vmem;
pub mod wait_states;
pub mod wave;

pub use error::{At, EmuError, WaveId};
pub use gcn::GcnEmulator;
pub use scheduler::{RunConfig, Schedule};
pub use stats::Counters;
pub use wave::Wave;

/// A decoded instruction, as the instruction layer (`kjit_backend_gcn::isa`) gives it.
///
/// Placeholder until the instruction layer lands; replaced by a re-export of `isa::Inst`.
#[derive(Clone, Debug)]
pub struct Inst;

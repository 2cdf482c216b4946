//! The `kjit` subcommands, one file each.

pub mod disasm;
pub mod emu;
pub mod kernels;

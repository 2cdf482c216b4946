//! The `kjit` subcommands, one file each.

pub mod devices;
pub mod disasm;
pub mod emu;
pub mod kernels;

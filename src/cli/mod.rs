//! The `kjit` subcommands, one file each.

pub mod bench;
pub mod build;
pub mod devices;
pub mod disasm;
pub mod dump;
pub mod emu;
pub mod kernels;
pub mod tune;

//! kjit's timing model: a cycle-approximate simulation of a whole CDNA3/CDNA2/GCN5 device,
//! driven by the software device's execution.
//!
//! ```text
//!  launch ──► functional device (emu/, workgroups in parallel) ──► per-wave traces (trace.rs):
//!             executed instruction indices + memory footprints (footprint.rs: cache-line
//!             granules, LDS bank cycles)
//!                 │ batches of workgroups, in dispatch order
//!                 ▼
//!  device.rs: dispatcher places workgroups on CUs as resources allow (occupancy rule of
//!             `kjit disasm`), starts new ones as others retire
//!  cu.rs:     per CU, AMD's issue rule (one SIMD per cycle, round-robin; ≤ 1 instruction per wave
//!             and per category), VALU cadence and rates, MFMA, s_waitcnt against modelled
//!             completions, s_barrier, s_nop, I-cache
//!  memory.rs: L1 per CU, scalar and instruction caches per CU group, L2 per partition, MALL,
//!             DRAM channels with bandwidth queues
//!                 ▼
//!  TimingReport: cycles, seconds, bandwidth, FLOPs, occupancy, stalls by cause, hot instructions
//! ```
//!
//! Timing never changes results: the functional device computes every byte exactly as without
//! timing; the model only replays what each wave executed. Because the replay follows the traces,
//! kernels whose control flow depends on other workgroups' timing (spin-waits on global atomics)
//! are timed along the path the functional device took. The simulation runs on one host thread
//! in event order, so the same launch gives the same cycles whatever the number of host threads.
//!
//! Per-instruction costs come from the opcode table (`OpInfo::timing`), machine figures from
//! `kjit_backend_gcn::machine`. Sources: `docs/timing.md`.

mod cu;
mod device;
pub mod facts;
pub mod footprint;
pub mod memory;
mod report;
pub mod trace;

pub use device::{DeviceSim, GroupShape};
pub use report::{HotInst, StallCause, Stalls, TimingReport};

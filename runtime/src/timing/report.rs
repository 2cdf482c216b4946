//! What the timing model reports for one launch: the figures a kernel engineer reads first.

use std::fmt;

use serde_json::{json, Value};

/// Why a wave did not issue when its cadence allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StallCause {
    /// `s_waitcnt` on vmcnt (vector memory).
    VmcntWait,
    /// `s_waitcnt` on lgkmcnt (LDS, scalar memory).
    LgkmcntWait,
    /// `s_barrier`.
    Barrier,
    /// A result of a long-latency ALU operation, or `s_nop` wait states.
    Dependency,
    /// The unit or issue category was taken (by another wave or the wave's own previous op).
    IssuePort,
    /// The LDS was still serving bank conflicts.
    LdsBankConflict,
    /// The next instruction was not in the instruction cache.
    IcacheMiss,
    /// SIMD-cycles with no wave resident (the tail, or too few workgroups).
    NoWaveResident,
}

impl StallCause {
    /// Every cause, in report order.
    pub const ALL: [StallCause; 8] = [
        StallCause::VmcntWait,
        StallCause::LgkmcntWait,
        StallCause::Barrier,
        StallCause::Dependency,
        StallCause::IssuePort,
        StallCause::LdsBankConflict,
        StallCause::IcacheMiss,
        StallCause::NoWaveResident,
    ];

    /// The name used in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            StallCause::VmcntWait => "vmcnt_wait",
            StallCause::LgkmcntWait => "lgkmcnt_wait",
            StallCause::Barrier => "barrier",
            StallCause::Dependency => "dependency",
            StallCause::IssuePort => "issue_port",
            StallCause::LdsBankConflict => "lds_bank_conflict",
            StallCause::IcacheMiss => "icache_miss",
            StallCause::NoWaveResident => "no_wave_resident",
        }
    }
}

/// Stall cycles by cause. Wave causes count wave-cycles (a wave that issued k cycles later than
/// its cadence allowed adds k); `NoWaveResident` counts SIMD-cycles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stalls(pub [u64; 8]);

impl Stalls {
    /// Cycles of one cause.
    pub fn get(&self, c: StallCause) -> u64 {
        self.0[c as usize]
    }

    /// Adds `n` cycles to a cause.
    pub fn add(&mut self, c: StallCause, n: u64) {
        self.0[c as usize] += n;
    }
}

/// One of the instructions that stalled the most.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotInst {
    /// Code-object address (as `llvm-objdump -d` prints it).
    pub pc: u64,
    /// Assembler text.
    pub text: String,
    /// Wave-cycles spent waiting to issue it.
    pub stall_cycles: u64,
    /// The cause with the most of those cycles.
    pub cause: StallCause,
    /// Times it issued (over all waves).
    pub issued: u64,
}

/// The timing of one launch on a machine model.
#[derive(Clone, Debug, PartialEq)]
pub struct TimingReport {
    /// Model name (`mi300x`).
    pub model: String,
    /// Target of the code object.
    pub target: String,
    /// Kernel cycles: first dispatch to the last wave's end and last store's acknowledgement.
    pub cycles: u64,
    /// `cycles` at the model's clock.
    pub seconds: f64,
    /// The model's clock.
    pub clock_ghz: f64,
    /// Bytes the kernel read from device memory (as the functional device counted them).
    pub bytes_read: u64,
    /// Bytes the kernel wrote.
    pub bytes_written: u64,
    /// (read + written) / seconds, in GB/s.
    pub achieved_gbps: f64,
    /// The model's peak DRAM bandwidth in GB/s.
    pub peak_gbps: f64,
    /// Floating-point operations counted (vector FMA = 2, MFMA = 2·M·N·K per block).
    pub flops: u64,
    /// The model's peak for the kind of FLOPs counted (vector f32, or matrix for MFMA kernels).
    pub peak_flops: f64,
    /// Mean resident waves per SIMD over the kernel's duration.
    pub waves_per_simd: f64,
    /// Stall cycles by cause.
    pub stalls: Stalls,
    /// The instructions with the most stall cycles, most first.
    pub hot: Vec<HotInst>,
    /// Host-side launch cost (not in `cycles`).
    pub launch_overhead_seconds: f64,
    /// Wave-instructions issued.
    pub instructions: u64,
    /// CUs simulated (all of the model's).
    pub cus_simulated: u32,
}

impl Eq for TimingReport {}

impl TimingReport {
    /// Percent of the model's peak DRAM bandwidth achieved.
    pub fn bandwidth_percent(&self) -> f64 {
        100.0 * self.achieved_gbps / self.peak_gbps
    }

    /// FLOP/s achieved.
    pub fn flops_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.flops as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// Percent of the model's compute peak achieved.
    pub fn compute_percent(&self) -> f64 {
        if self.peak_flops > 0.0 {
            100.0 * self.flops_per_second() / self.peak_flops
        } else {
            0.0
        }
    }

    /// The report as one JSON object (the fields `kjit ... --json` prints).
    pub fn to_json(&self) -> Value {
        let stalls: serde_json::Map<String, Value> = StallCause::ALL
            .iter()
            .map(|&c| (c.name().to_string(), json!(self.stalls.get(c))))
            .collect();
        json!({
            "model": self.model,
            "target": self.target,
            "cycles": self.cycles,
            "seconds": self.seconds,
            "clock_ghz": self.clock_ghz,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "achieved_gbps": self.achieved_gbps,
            "peak_gbps": self.peak_gbps,
            "bandwidth_percent": self.bandwidth_percent(),
            "flops": self.flops,
            "flops_per_second": self.flops_per_second(),
            "compute_percent": self.compute_percent(),
            "waves_per_simd": self.waves_per_simd,
            "stalls": stalls,
            "hot": self.hot.iter().map(|h| json!({
                "pc": h.pc,
                "text": h.text,
                "stall_cycles": h.stall_cycles,
                "cause": h.cause.name(),
                "issued": h.issued,
            })).collect::<Vec<_>>(),
            "launch_overhead_seconds": self.launch_overhead_seconds,
            "instructions": self.instructions,
            "cus_simulated": self.cus_simulated,
        })
    }
}

impl fmt::Display for TimingReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "timing on {} ({}, {:.2} GHz, all {} CUs simulated): {} cycles = {:.3} us (+ {:.1} us launch overhead)",
            self.model,
            self.target,
            self.clock_ghz,
            self.cus_simulated,
            self.cycles,
            self.seconds * 1e6,
            self.launch_overhead_seconds * 1e6
        )?;
        writeln!(
            f,
            "  memory: {} B read, {} B written, {:.1} GB/s = {:.1}% of the model's {:.0} GB/s peak",
            self.bytes_read,
            self.bytes_written,
            self.achieved_gbps,
            self.bandwidth_percent(),
            self.peak_gbps
        )?;
        if self.flops > 0 {
            writeln!(
                f,
                "  compute: {} FLOPs, {:.2} TFLOP/s = {:.1}% of the model's {:.1} TFLOP/s peak",
                self.flops,
                self.flops_per_second() / 1e12,
                self.compute_percent(),
                self.peak_flops / 1e12
            )?;
        }
        writeln!(
            f,
            "  achieved occupancy: {:.2} waves/SIMD; {} wave-instructions issued",
            self.waves_per_simd, self.instructions
        )?;
        write!(
            f,
            "  stalls (wave-cycles; no_wave_resident in SIMD-cycles):"
        )?;
        for c in StallCause::ALL {
            write!(f, " {} {}", c.name(), self.stalls.get(c))?;
        }
        writeln!(f)?;
        if !self.hot.is_empty() {
            writeln!(
                f,
                "  hottest instructions (stall wave-cycles, cause, issued):"
            )?;
            for h in &self.hot {
                writeln!(
                    f,
                    "    {:#06x}  {:>12}  {:<18} {:>9}  {}",
                    h.pc,
                    h.stall_cycles,
                    h.cause.name(),
                    h.issued,
                    h.text
                )?;
            }
        }
        Ok(())
    }
}

//! Machine models: the whole-device figures kjit's timing model simulates, one row per product,
//! beside [`Target`] (which holds the per-ISA facts: register files, wave slots, LDS size).
//! Nothing else hard-codes these figures. Every value is documented with its source in
//! `docs/timing.md`; a value marked *unconfirmed* there is a starting assumption, and a
//! *calibrated* one names the measurement it was fitted to.
//!
//! Cycles are core-clock cycles of the model's `clock_ghz`.

use crate::Target;

/// A set-associative cache level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CacheModel {
    /// Capacity in bytes (per instance).
    pub bytes: u64,
    /// Line size in bytes.
    pub line: u32,
    /// Ways per set.
    pub ways: u32,
    /// CUs sharing one instance (1 = private to a CU; 0 = one instance per L2 partition/device).
    pub shared_by: u32,
    /// Cycles a hit adds to a request's latency at this level.
    pub latency: u32,
    /// Bytes per cycle one instance delivers.
    pub bytes_per_clk: u32,
}

/// One machine: a product built on a target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MachineModel {
    /// Short name used on the command line (`mi300x`).
    pub name: &'static str,
    /// Product name, for reports.
    pub product: &'static str,
    /// The ISA it runs.
    pub target: Target,
    /// Compute units.
    pub cus: u32,
    /// L2 partitions (XCDs on gfx942); workgroups are dealt to them round-robin.
    pub partitions: u32,
    /// Core clock in GHz.
    pub clock_ghz: f64,
    /// Vector L1 cache, one per CU.
    pub l1: CacheModel,
    /// Scalar L1 data cache, shared by `shared_by` CUs.
    pub scalar: CacheModel,
    /// Instruction cache, shared by `shared_by` CUs.
    pub icache: CacheModel,
    /// L2, one per partition.
    pub l2: CacheModel,
    /// Memory-side last-level cache (Infinity Cache / MALL), shared by the device, if any.
    pub mall: Option<CacheModel>,
    /// DRAM peak bytes per second.
    pub dram_peak_bytes_per_s: f64,
    /// Fraction of the DRAM peak the model's channels deliver (refresh, turnarounds).
    pub dram_efficiency: f64,
    /// DRAM channels (requests are interleaved over them by address).
    pub dram_channels: u32,
    /// Cycles a DRAM access adds beyond the last cache level, unloaded.
    pub dram_latency: u32,
    /// Cycles an LDS access takes from issue to data, conflict-free and unloaded.
    pub lds_latency: u32,
    /// Bytes per cycle of one LDS port (a SIMD pair shares one).
    pub lds_port_bytes_per_clk: u32,
    /// Cycles a scalar-cache hit takes from issue to data.
    pub smem_latency: u32,
    /// Cycles from a workgroup's dispatch to its waves' first issue.
    pub wave_launch_cycles: u32,
    /// Workgroups the dispatcher starts per cycle (device-wide).
    pub dispatch_per_clk: u32,
    /// Host-side cost of one launch, in seconds (reported apart from kernel cycles).
    pub launch_overhead_s: f64,
}

// The table holds no NaN: equality is total.
impl Eq for MachineModel {}

impl MachineModel {
    /// DRAM bytes per core cycle at the model's efficiency, device-wide.
    pub fn dram_bytes_per_clk(&self) -> f64 {
        self.dram_peak_bytes_per_s * self.dram_efficiency / (self.clock_ghz * 1e9)
    }

    /// Peak DRAM bandwidth in GB/s (the figure "% of peak" refers to).
    pub fn peak_gbps(&self) -> f64 {
        self.dram_peak_bytes_per_s / 1e9
    }

    /// Peak vector f32 FLOP/s without packed math (2 FLOPs per FMA, 64 lanes per CU per clock).
    pub fn peak_f32_flops(&self) -> f64 {
        128.0 * self.cus as f64 * self.clock_ghz * 1e9
    }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// Every machine kjit models. Sources: `docs/timing.md`.
pub const MACHINES: [MachineModel; 4] = [
    MachineModel {
        name: "mi300x",
        product: "AMD Instinct MI300X",
        target: Target::Gfx942,
        cus: 304,
        partitions: 8,
        clock_ghz: 2.1,
        l1: CacheModel {
            bytes: 32 * KIB,
            line: 128,
            ways: 8,
            shared_by: 1,
            latency: 109,
            bytes_per_clk: 64,
        },
        scalar: CacheModel {
            bytes: 16 * KIB,
            line: 64,
            ways: 8,
            shared_by: 2,
            latency: 0,
            bytes_per_clk: 64,
        },
        icache: CacheModel {
            bytes: 64 * KIB,
            line: 64,
            ways: 8,
            shared_by: 2,
            latency: 0,
            bytes_per_clk: 32,
        },
        l2: CacheModel {
            bytes: 4 * MIB,
            line: 128,
            ways: 16,
            shared_by: 0,
            latency: 110,
            bytes_per_clk: 2048,
        },
        mall: Some(CacheModel {
            bytes: 256 * MIB,
            line: 64,
            ways: 16,
            shared_by: 0,
            latency: 200,
            bytes_per_clk: 8192,
        }),
        dram_peak_bytes_per_s: 5.3e12,
        dram_efficiency: 0.80,
        dram_channels: 128,
        dram_latency: 240,
        lds_latency: 64,
        lds_port_bytes_per_clk: 64,
        smem_latency: 40,
        wave_launch_cycles: 64,
        dispatch_per_clk: 2,
        launch_overhead_s: 1e-6,
    },
    mi200_gcd("mi250x", "AMD Instinct MI250X (one GCD)", 110),
    mi200_gcd("mi210", "AMD Instinct MI210", 104),
    MachineModel {
        name: "mi25",
        product: "AMD Radeon Instinct MI25",
        target: Target::Gfx900,
        cus: 64,
        partitions: 1,
        clock_ghz: 1.5,
        l1: L1_16K_64B,
        scalar: CacheModel {
            bytes: 16 * KIB,
            line: 64,
            ways: 4,
            shared_by: 3,
            latency: 0,
            bytes_per_clk: 64,
        },
        icache: CacheModel {
            bytes: 32 * KIB,
            line: 64,
            ways: 4,
            shared_by: 3,
            latency: 0,
            bytes_per_clk: 32,
        },
        l2: CacheModel {
            bytes: 4 * MIB,
            line: 64,
            ways: 16,
            shared_by: 0,
            latency: 110,
            bytes_per_clk: 1024,
        },
        mall: None,
        dram_peak_bytes_per_s: 484e9,
        dram_efficiency: 0.80,
        dram_channels: 16,
        dram_latency: 333,
        lds_latency: 64,
        lds_port_bytes_per_clk: 64,
        smem_latency: 40,
        wave_launch_cycles: 64,
        dispatch_per_clk: 1,
        launch_overhead_s: 1e-6,
    },
];

/// One CDNA2 (gfx90a) graphics compute die: MI250X's GCDs and the MI210 differ in CU count only.
const fn mi200_gcd(name: &'static str, product: &'static str, cus: u32) -> MachineModel {
    MachineModel {
        name,
        product,
        target: Target::Gfx90a,
        cus,
        partitions: 1,
        clock_ghz: 1.7,
        l1: L1_16K_64B,
        scalar: MI200_SCALAR,
        icache: MI200_ICACHE,
        l2: MI200_L2,
        mall: None,
        dram_peak_bytes_per_s: 1.6e12,
        dram_efficiency: 0.80,
        dram_channels: 32,
        dram_latency: 333,
        lds_latency: 64,
        lds_port_bytes_per_clk: 64,
        smem_latency: 40,
        wave_launch_cycles: 64,
        dispatch_per_clk: 1,
        launch_overhead_s: 1e-6,
    }
}

/// The 16 KiB vector L1 with 64-byte lines of GCN5 and CDNA2 (latency calibrated on MI210).
const L1_16K_64B: CacheModel = CacheModel {
    bytes: 16 * KIB,
    line: 64,
    ways: 4,
    shared_by: 1,
    latency: 109,
    bytes_per_clk: 64,
};
const MI200_SCALAR: CacheModel = CacheModel {
    bytes: 16 * KIB,
    line: 64,
    ways: 4,
    shared_by: 2,
    latency: 0,
    bytes_per_clk: 64,
};
const MI200_ICACHE: CacheModel = CacheModel {
    bytes: 32 * KIB,
    line: 64,
    ways: 4,
    shared_by: 2,
    latency: 0,
    bytes_per_clk: 32,
};
const MI200_L2: CacheModel = CacheModel {
    bytes: 8 * MIB,
    line: 128,
    ways: 16,
    shared_by: 0,
    latency: 112,
    bytes_per_clk: 4096,
};

/// A machine name kjit does not model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown machine model '{0}' (kjit models {list})", list = machine_names())]
pub struct UnknownMachine(pub String);

fn machine_names() -> String {
    MACHINES
        .iter()
        .map(|m| m.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The model called `name`.
pub fn machine_by_name(name: &str) -> Result<&'static MachineModel, UnknownMachine> {
    MACHINES
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| UnknownMachine(name.to_string()))
}

/// The default model of a target (the first listed for it).
pub fn default_machine(target: Target) -> &'static MachineModel {
    MACHINES
        .iter()
        .find(|m| m.target == target)
        .expect("every target has a machine model")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::ALL_TARGETS;

    #[test]
    fn every_target_has_a_model_and_names_resolve() {
        for t in ALL_TARGETS {
            assert_eq!(default_machine(t).target, t);
        }
        assert_eq!(machine_by_name("MI300X").unwrap().cus, 304);
        let e = machine_by_name("h100").unwrap_err().to_string();
        assert!(e.contains("mi300x") && e.contains("h100"), "{e}");
    }

    #[test]
    fn dram_rates_follow_the_peak() {
        let m = machine_by_name("mi300x").unwrap();
        // 5.3 TB/s at 2.1 GHz is ~2524 B/clk at peak.
        let peak = m.dram_peak_bytes_per_s / (m.clock_ghz * 1e9);
        assert!((peak - 2523.8).abs() < 1.0, "{peak}");
        assert!(m.dram_bytes_per_clk() < peak);
    }
}

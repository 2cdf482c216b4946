//! One kernel launch on the software device: validates the launch shape, places the per-launch
//! objects in device memory (kernarg segment, AQL packet, queue, scratch), runs every workgroup
//! (in parallel on the host's cores), and merges statistics.
//!
//! Takes a loaded kernel (decoded program, descriptor fields, entry address), the launch dims and
//! the packed kernarg bytes; gives the launch's statistics or the error of the lowest-numbered
//! failing workgroup (so that the reported error does not depend on the number of host threads).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use kjit_backend_gcn::Target;
use rayon::prelude::*;

use super::dispatch::{aql_packet, waves_per_group, DispatchAddrs, KernelSetup};
use super::memory::Memory;
use super::program::Program;
use super::scheduler::{
    run_workgroup, run_workgroup_traced, LaunchState, RunConfig, WorkgroupScratch,
};
use super::stats::Counters;
use super::wave::{At, EmuError};
use crate::device::LaunchDims;
use crate::timing::trace::GroupTrace;
use crate::timing::{facts, DeviceSim, GroupShape, TimingReport};

/// A kernel ready to launch.
pub struct KernelImage {
    /// Kernel name.
    pub name: String,
    /// Target of its code object.
    pub target: Target,
    /// Descriptor fields.
    pub setup: KernelSetup,
    /// Decoded code.
    pub program: Program,
    /// Device address of the first instruction.
    pub entry: u64,
    /// Device address of the kernel descriptor (the AQL packet's kernel object).
    pub descriptor: u64,
    /// Vector registers (VGPRs + AGPRs) the descriptor allocates per wave (for occupancy).
    pub vector_registers: u32,
    /// SGPRs the descriptor allocates per wave, VCC etc. included.
    pub sgprs: u32,
    /// The largest workgroup the code supports (`.max_flat_workgroup_size`).
    pub max_flat_workgroup_size: u32,
    /// The only workgroup size the code supports, when it declares one
    /// (`.reqd_workgroup_size`).
    pub reqd_workgroup_size: Option<[u32; 3]>,
}

/// Why a launch did not run to completion.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The launch shape or setup is invalid; nothing ran.
    #[error("{0}")]
    Invalid(String),
    /// A wave faulted.
    #[error("{0}")]
    Fault(#[from] EmuError),
}

/// Bytes of scratch each work-item gets when the kernel uses a dynamic stack (calls through
/// pointers, recursion): HIP's default per-thread stack is 1 KiB.
const DYNAMIC_STACK_BYTES: u32 = 1024;

/// Checks the launch shape against the hardware's limits and the kernel's: at least one item
/// per dimension, at most 1024 per workgroup and `max_flat_workgroup_size`, grids within 2^32
/// work-items, the block the kernel requires (`.reqd_workgroup_size`) if it declares one, LDS
/// within the target's. Both devices (this one and HIP) check launches with it.
pub fn validate_dims(
    dims: &LaunchDims,
    setup: &KernelSetup,
    target: Target,
    max_flat_workgroup_size: u32,
    reqd_workgroup_size: Option<[u32; 3]>,
) -> Result<(), String> {
    if let Some(reqd) = reqd_workgroup_size.filter(|r| *r != dims.block) {
        return Err(format!(
            "block {:?}, but the kernel requires workgroups of {reqd:?} (.reqd_workgroup_size)",
            dims.block
        ));
    }
    if dims.grid.contains(&0) || dims.block.contains(&0) {
        return Err(format!(
            "grid {:?} and block {:?} must be at least 1 in every dimension",
            dims.grid, dims.block
        ));
    }
    let items: u64 = dims.block.iter().map(|&b| b as u64).product();
    if items > 1024 {
        return Err(format!(
            "a workgroup of {items} work-items is larger than the 1024 gfx9 allows"
        ));
    }
    if items > max_flat_workgroup_size as u64 {
        return Err(format!(
            "a workgroup of {items} work-items is larger than the kernel's max_flat_workgroup_size {max_flat_workgroup_size}"
        ));
    }
    if dims.block.iter().any(|&b| b > 1024) {
        return Err(format!(
            "block {:?}: each dimension is at most 1024",
            dims.block
        ));
    }
    for d in 0..3 {
        if dims.grid[d] as u64 * dims.block[d] as u64 > u32::MAX as u64 {
            return Err(format!(
                "grid dimension {d}: {} work-items exceed 2^32",
                dims.grid[d] as u64 * dims.block[d] as u64
            ));
        }
    }
    let lds = setup.group_segment_fixed_size as u64 + dims.dynamic_lds as u64;
    if lds > target.lds_bytes() as u64 {
        return Err(format!(
            "the kernel needs {lds} bytes of LDS ({} static + {} dynamic), more than the {} of {target}",
            setup.group_segment_fixed_size,
            dims.dynamic_lds,
            target.lds_bytes()
        ));
    }
    setup.validate(target)
}

/// Runs one launch of `k`. `kernarg` packs the kernarg segment (explicit and hidden arguments)
/// given the address of the launch's queue object. With `config.timing`, the launch is also timed
/// on that machine model.
pub fn run_launch(
    mem: &Memory,
    k: &KernelImage,
    dims: LaunchDims,
    kernarg: impl FnOnce(u64) -> Result<Vec<u8>, String>,
    config: RunConfig,
    dispatch_id: u64,
) -> Result<(Counters, Option<TimingReport>), LaunchError> {
    validate_dims(
        &dims,
        &k.setup,
        k.target,
        k.max_flat_workgroup_size,
        k.reqd_workgroup_size,
    )
    .map_err(LaunchError::Invalid)?;
    if let Some(m) = config.timing {
        if m.target != k.target {
            return Err(LaunchError::Invalid(format!(
                "the timing model {} is a {} machine, but the code object is for {}",
                m.name, m.target, k.target
            )));
        }
    }
    let mut allocations = Vec::new();
    let result = (|| {
        let mut alloc = |bytes: u64| -> Result<u64, LaunchError> {
            let a = mem.alloc(bytes).map_err(LaunchError::Invalid)?;
            allocations.push(a);
            Ok(a)
        };
        let queue_addr = alloc(256)?;
        let kernarg = kernarg(queue_addr).map_err(LaunchError::Invalid)?;
        // Kernarg segment: at least the descriptor's size; the CP reads it as it is.
        let ka_len = (kernarg.len() as u64)
            .max(k.setup.kernarg_size as u64)
            .max(16);
        let kernarg_addr = alloc(ka_len)?;
        mem.write(kernarg_addr, &kernarg)
            .map_err(|f| LaunchError::Invalid(f.to_string()))?;
        // Preloaded kernarg dwords, as the dispatcher reads them (the segment beyond the
        // packed bytes reads 0, as the allocation does).
        let mut preload = [0u32; 16];
        let preload_len = if config.legacy_kernarg_firmware {
            0
        } else {
            k.setup.kernarg_preload_length().min(16)
        };
        let first = k.setup.kernarg_preload_offset() as usize * 4;
        for (i, d) in preload.iter_mut().take(preload_len as usize).enumerate() {
            let at = first + 4 * i;
            let mut w = [0u8; 4];
            for (j, b) in w.iter_mut().enumerate() {
                *b = kernarg.get(at + j).copied().unwrap_or(0);
            }
            *d = u32::from_le_bytes(w);
        }
        let packet_addr = alloc(64)?;
        mem.write(
            packet_addr,
            &aql_packet(&dims, &k.setup, k.descriptor, kernarg_addr),
        )
        .map_err(|f| LaunchError::Invalid(f.to_string()))?;

        // Scratch: one slot of a workgroup's waves per host thread (a thread runs one workgroup
        // at a time).
        let uses_dynamic_stack = k.setup.code_properties & (1 << 11) != 0;
        let mut per_lane = k.setup.private_segment_fixed_size.div_ceil(4) * 4;
        if uses_dynamic_stack {
            per_lane = per_lane.max(DYNAMIC_STACK_BYTES);
        }
        let nwaves = waves_per_group(&dims) as u64;
        let mut addrs = DispatchAddrs {
            packet: packet_addr,
            queue: queue_addr,
            kernarg: kernarg_addr,
            dispatch_id,
            scratch_base: 0,
            scratch_per_lane: per_lane,
            preload,
            preload_len,
        };
        let slots = rayon::current_num_threads().max(1) as u64;
        let slot_bytes = nwaves * addrs.scratch_per_wave();
        if per_lane > 0 {
            let base = alloc(slots * slot_bytes)?;
            addrs.scratch_base = base;
        }

        let view = mem.view();
        let state = LaunchState {
            target: k.target,
            program: &k.program,
            setup: &k.setup,
            dims,
            addrs,
            mem: &view,
            config,
            entry: k.setup.wave_entry(k.entry, config.legacy_kernarg_firmware),
        };
        let [gx, gy, gz] = dims.grid.map(|g| g as u64);
        let total = gx * gy * gz;
        if let Some(model) = config.timing {
            return run_timed(&state, k, model, total, slot_bytes, slots);
        }
        let first_bad = AtomicU64::new(u64::MAX);
        let failure: Mutex<Option<(u64, EmuError)>> = Mutex::new(None);
        let record = |id: u64, e: EmuError| {
            let mut f = failure.lock().unwrap_or_else(|p| p.into_inner());
            if f.as_ref().is_none_or(|(j, _)| id < *j) {
                *f = Some((id, e));
            }
            first_bad.fetch_min(id, Ordering::Relaxed);
        };
        let counters = (0..total)
            .into_par_iter()
            .map_init(WorkgroupScratch::default, |lds, id| {
                if id > first_bad.load(Ordering::Relaxed) {
                    return Counters::default();
                }
                let wg = [
                    (id % gx) as u32,
                    ((id / gx) % gy) as u32,
                    (id / (gx * gy)) as u32,
                ];
                let slot = rayon::current_thread_index().unwrap_or(0) as u64 % slots;
                let run = catch_unwind(AssertUnwindSafe(|| {
                    run_workgroup(&state, wg, slot * slot_bytes, lds)
                }));
                match run {
                    Ok(Ok(c)) => c,
                    Ok(Err(e)) => {
                        record(id, e);
                        Counters::default()
                    }
                    Err(p) => {
                        let msg = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        record(
                            id,
                            EmuError::Stuck {
                                at: At {
                                    wave: super::wave::WaveId {
                                        workgroup: wg,
                                        wave: 0,
                                    },
                                    pc: 0,
                                    inst: "<unknown>".into(),
                                },
                                detail: format!(
                                    "internal error of the software device (please report): {msg}"
                                ),
                            },
                        );
                        // A panic may leave the reused LDS half-reset: start a fresh one.
                        *lds = WorkgroupScratch::default();
                        Counters::default()
                    }
                }
            })
            .reduce(Counters::default, |mut a, b| {
                a.merge(&b);
                a
            });
        let _ = gz;
        match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some((_, e)) => Err(LaunchError::Fault(e)),
            None => Ok((counters, None)),
        }
    })();
    for a in allocations {
        let _ = mem.free(a);
    }
    result
}

/// The workgroup with linear id `id` of a grid `[gx, gy, _]`.
fn group_coords(id: u64, gx: u64, gy: u64) -> [u32; 3] {
    [
        (id % gx) as u32,
        ((id / gx) % gy) as u32,
        (id / (gx * gy)) as u32,
    ]
}

/// Runs a launch functionally in batches of workgroups (in parallel, as untimed launches do),
/// while the timing model replays the previous batch: the two overlap on the host's cores, and
/// the model sees workgroups in dispatch order whatever the number of threads.
fn run_timed(
    state: &LaunchState,
    k: &KernelImage,
    model: &'static kjit_backend_gcn::machine::MachineModel,
    total: u64,
    slot_bytes: u64,
    slots: u64,
) -> Result<(Counters, Option<TimingReport>), LaunchError> {
    let facts = facts::program_facts(&k.program, k.target);
    let shape = GroupShape {
        waves: waves_per_group(&state.dims),
        vector_registers: k.vector_registers,
        sgprs: k.sgprs,
        lds_bytes: k.setup.group_segment_fixed_size + state.dims.dynamic_lds,
    };
    let mut sim = DeviceSim::new(model, &facts, shape, total);
    let [gx, gy, _] = state.dims.grid.map(|g| g as u64);
    // Workgroups per batch: enough for about two fills of the device (smaller batches overlap
    // the replay with the functional device at a finer grain; the replay pauses if it starves).
    let batch = (model.cus as u64 * 16).max(1024);
    // Traces of retired workgroups, reused by the producer.
    let pool: Mutex<Vec<GroupTrace>> = Mutex::new(Vec::new());
    let produce = |from: u64, size: u64| -> Result<(Vec<GroupTrace>, Counters), (u64, EmuError)> {
        let to = (from + size).min(total);
        let results: Vec<Result<(GroupTrace, Counters), (u64, EmuError)>> = (from..to)
            .into_par_iter()
            .map_init(WorkgroupScratch::default, |scratch, id| {
                let slot = rayon::current_thread_index().unwrap_or(0) as u64 % slots;
                let mut trace = pool
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .pop()
                    .unwrap_or_default();
                trace.id = id;
                let run = catch_unwind(AssertUnwindSafe(|| {
                    run_workgroup_traced(
                        state,
                        group_coords(id, gx, gy),
                        slot * slot_bytes,
                        scratch,
                        &mut trace,
                    )
                }));
                match run {
                    Ok(Ok(c)) => Ok((trace, c)),
                    Ok(Err(e)) => Err((id, e)),
                    Err(_) => {
                        *scratch = WorkgroupScratch::default();
                        Err((
                            id,
                            EmuError::Stuck {
                                at: At::default(),
                                detail: "internal error of the software device (please report)"
                                    .into(),
                            },
                        ))
                    }
                }
            })
            .collect();
        let mut traces = Vec::with_capacity(results.len());
        let mut counters = Counters::default();
        for r in results {
            let (t, c) = r?;
            traces.push(t);
            counters.merge(&c);
        }
        Ok((traces, counters))
    };
    let mut counters = Counters::default();
    let mut sim_seconds = 0.0;
    // A small first batch lets the replay start early; it then overlaps with the rest.
    let mut next = produce(0, (model.cus as u64 * 2).min(batch));
    let recycle = |sim: &mut DeviceSim| {
        pool.lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(sim.take_recycled());
    };
    let mut from = 0u64;
    loop {
        let (traces, c) = next.map_err(|(_, e)| LaunchError::Fault(e))?;
        counters.merge(&c);
        from += traces.len() as u64;
        sim.feed(traces);
        if from >= total {
            sim.run();
            break;
        }
        // Produce the next batch while the model replays this one.
        let (n, _) = rayon::join(
            || produce(from, batch),
            || {
                let t = std::time::Instant::now();
                sim.run();
                sim_seconds += t.elapsed().as_secs_f64();
            },
        );
        recycle(&mut sim);
        next = n;
    }
    if std::env::var_os("KJIT_TIMING_DEBUG").is_some() {
        eprintln!("timing model: {sim_seconds:.3} s in the replay (overlapped with the device)");
    }
    let report = sim.finish(counters.bytes_read, counters.bytes_written);
    Ok((counters, Some(report)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_shapes_are_validated() {
        let s = KernelSetup {
            group_segment_fixed_size: 60000,
            ..Default::default()
        };
        let ok = LaunchDims {
            grid: [1, 1, 1],
            block: [256, 4, 1],
            dynamic_lds: 0,
        };
        assert!(validate_dims(&ok, &s, Target::Gfx942, 1024, None).is_ok());
        let e = validate_dims(&ok, &s, Target::Gfx942, 256, None).unwrap_err();
        assert!(e.contains("max_flat_workgroup_size 256"), "{e}");
        // A kernel that declares its workgroup size takes only that block.
        assert!(validate_dims(&ok, &s, Target::Gfx942, 1024, Some([256, 4, 1])).is_ok());
        let e = validate_dims(&ok, &s, Target::Gfx942, 1024, Some([1024, 1, 1])).unwrap_err();
        assert!(e.contains("reqd_workgroup_size"), "{e}");
        let too_big = LaunchDims {
            block: [256, 8, 1],
            ..ok
        };
        assert!(validate_dims(&too_big, &s, Target::Gfx942, 1024, None)
            .unwrap_err()
            .contains("1024"));
        let zero = LaunchDims {
            grid: [0, 1, 1],
            ..ok
        };
        assert!(validate_dims(&zero, &s, Target::Gfx942, 1024, None).is_err());
        let lds = LaunchDims {
            dynamic_lds: 8192,
            ..ok
        };
        assert!(validate_dims(&lds, &s, Target::Gfx942, 1024, None)
            .unwrap_err()
            .contains("LDS"));
    }
}

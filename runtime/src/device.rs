//! The device interface every backend of kjit's runtime implements: kjit's software GCN device
//! (always available) and the HIP device (feature `hip`, needs an AMD GPU).
//!
//! A device owns memory (buffers addressed by 64-bit device addresses), loads code objects, and
//! launches kernels with a grid of workgroups, a workgroup size, dynamic LDS and explicit arguments.
//! Hidden arguments (block counts, group sizes, ...) are filled by the device from the launch.

use kjit_backend_gcn::Target;

/// A device allocation. Plain handle: freeing is explicit through [`Device::free`], so that one
/// handle type serves every device; owners that want RAII wrap it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceBuffer {
    /// The buffer's device address, as a kernel sees it.
    pub addr: u64,
    /// Size in bytes.
    pub size: u64,
}

/// A code object loaded on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ModuleId(pub u32);

/// The shape of a launch. `grid` counts workgroups per dimension, as `hipModuleLaunchKernel` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDims {
    /// Workgroups in x, y, z.
    pub grid: [u32; 3],
    /// Work-items per workgroup in x, y, z.
    pub block: [u32; 3],
    /// LDS bytes on top of the kernel's static group segment.
    pub dynamic_lds: u32,
}

impl LaunchDims {
    /// A launch of `grid` workgroups of `block` work-items, without dynamic LDS.
    pub fn new(grid: [u32; 3], block: [u32; 3]) -> LaunchDims {
        LaunchDims {
            grid,
            block,
            dynamic_lds: 0,
        }
    }

    /// A 1-D launch that covers `n` elements with workgroups of `block` work-items: `ceil(n /
    /// block)` workgroups (at least one, so that `n = 0` is still a valid launch). The last
    /// workgroup may run past `n`; kernels guard with their length argument.
    pub fn cover(n: usize, block: u32) -> LaunchDims {
        LaunchDims::cover_2d([n, 1], [block, 1])
    }

    /// A 2-D launch that covers `n[0] x n[1]` elements with `block[0] x block[1]` workgroups.
    pub fn cover_2d(n: [usize; 2], block: [u32; 2]) -> LaunchDims {
        let groups =
            |n: usize, b: u32| (n.div_ceil(b.max(1) as usize).max(1)).min(u32::MAX as usize) as u32;
        LaunchDims::new(
            [groups(n[0], block[0]), groups(n[1], block[1]), 1],
            [block[0], block[1], 1],
        )
    }

    /// A persistent 1-D launch: one workgroup of `block` work-items per compute unit of `dev`
    /// ([`Device::compute_units`]). The kernel strides over its data (a grid-stride loop such
    /// as `KernelBuilder::grid_stride_loop`) instead of being sized by it.
    pub fn persistent(dev: &dyn Device, block: u32) -> LaunchDims {
        LaunchDims::new([dev.compute_units().max(1), 1, 1], [block, 1, 1])
    }

    /// The same launch with `bytes` of dynamic LDS.
    pub fn with_dynamic_lds(self, bytes: u32) -> LaunchDims {
        LaunchDims {
            dynamic_lds: bytes,
            ..self
        }
    }
}

/// One explicit kernel argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ArgValue {
    /// A device buffer, passed as its 64-bit address.
    Buffer(DeviceBuffer),
    /// 32-bit signed integer.
    I32(i32),
    /// 32-bit unsigned integer.
    U32(u32),
    /// 64-bit signed integer.
    I64(i64),
    /// 64-bit unsigned integer.
    U64(u64),
    /// IEEE half, as its bits.
    F16(u16),
    /// IEEE single.
    F32(f32),
    /// IEEE double.
    F64(f64),
}

/// What a launch did, as far as the device can tell. The software device fills all of it; a
/// hardware device may leave counts at zero.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchStats {
    /// Wave-instructions executed, by class.
    pub salu: u64,
    /// Vector ALU wave-instructions.
    pub valu: u64,
    /// Vector memory (buffer, global, flat, scratch) wave-instructions.
    pub vmem: u64,
    /// Scalar memory wave-instructions.
    pub smem: u64,
    /// LDS (and GDS) wave-instructions.
    pub lds: u64,
    /// Branches and other program-control (SOPP) wave-instructions.
    pub branch: u64,
    /// Matrix (MFMA) wave-instructions.
    pub mfma: u64,
    /// Lane-operations: per instruction, the number of active lanes (VALU/VMEM/LDS) or 1 (scalar).
    pub lane_ops: u64,
    /// Bytes read from device memory.
    pub bytes_read: u64,
    /// Bytes written to device memory.
    pub bytes_written: u64,
    /// Register reads checked against outstanding memory counters.
    pub hazard_checks: u64,
    /// Waves launched.
    pub waves: u64,
    /// The timing model's report, when the software device was asked to time the launch
    /// (`RunConfig::timing`).
    pub timing: Option<Box<crate::timing::TimingReport>>,
    /// LDS writes of the bytes a location already held that met another wave's access in the
    /// same barrier epoch (not races; the software device counts them).
    pub lds_same_value_writes: u64,
    /// The kernel's time as the device measured it, ns: on a GPU, HIP events recorded before
    /// and after the launch. `None` on the software device, whose time is the timing model's
    /// (`timing`).
    pub device_time_ns: Option<u64>,
}

/// A device error: what went wrong, with enough context to find it.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// The launch or call was malformed (wrong argument count or type, unknown kernel, ...).
    #[error("invalid launch: {0}")]
    InvalidLaunch(String),
    /// The code object cannot be used on this device.
    #[error("bad code object: {0}")]
    BadCodeObject(String),
    /// A kernel faulted (memory violation, hazard, unsupported instruction, instruction budget).
    #[error("kernel fault: {0}")]
    Fault(String),
    /// A buffer operation was out of range or on an unknown buffer.
    #[error("memory error: {0}")]
    Memory(String),
    /// The device could not time a launch (its timing events could not be read).
    #[error("timing error: {0}")]
    Timing(String),
    /// The device is not available on this machine.
    #[error("device unavailable: {0}")]
    Unavailable(String),
}

/// Result of device calls.
pub type DeviceResult<T> = Result<T, DeviceError>;

/// The kernel `kernel` of a loaded module's kernels, or an `InvalidLaunch` listing the kernels
/// there are.
pub(crate) fn find_kernel<'a, V>(
    kernels: &'a std::collections::HashMap<String, V>,
    kernel: &str,
) -> DeviceResult<&'a V> {
    kernels.get(kernel).ok_or_else(|| {
        let mut names: Vec<&str> = kernels.keys().map(|s| s.as_str()).collect();
        names.sort_unstable();
        DeviceError::InvalidLaunch(format!(
            "no kernel '{kernel}' in the code object (it has: {})",
            names.join(", ")
        ))
    })
}

/// A place to run kernels.
pub trait Device {
    /// A human-readable name, e.g. "kjit GCN device (software)".
    fn name(&self) -> String;
    /// The architecture of the hardware, or `None` for the software device, which runs whatever
    /// target the code object names.
    fn target(&self) -> Option<Target>;
    /// Allocates `bytes` of device memory (contents unspecified).
    fn alloc(&self, bytes: u64) -> DeviceResult<DeviceBuffer>;
    /// Frees a buffer.
    fn free(&self, buf: DeviceBuffer) -> DeviceResult<()>;
    /// Copies host bytes into a buffer at `offset`.
    fn copy_to_device(&self, dst: DeviceBuffer, offset: u64, src: &[u8]) -> DeviceResult<()>;
    /// Copies buffer bytes from `offset` to the host.
    fn copy_from_device(&self, src: DeviceBuffer, offset: u64, dst: &mut [u8]) -> DeviceResult<()>;
    /// Loads a code object.
    fn load_module(&self, code_object: &[u8]) -> DeviceResult<ModuleId>;
    /// Launches `kernel` of `module` and waits for it to finish. Before anything runs, the
    /// arguments are checked against the kernel's metadata ([`crate::check_args`]) and the shape
    /// against the hardware's and the kernel's limits (`max_flat_workgroup_size`, LDS): a
    /// mismatch is [`DeviceError::InvalidLaunch`] naming what is wrong.
    fn launch(
        &self,
        module: ModuleId,
        kernel: &str,
        dims: LaunchDims,
        args: &[ArgValue],
    ) -> DeviceResult<LaunchStats>;
    /// Waits for all work on the device.
    fn synchronize(&self) -> DeviceResult<()>;
    /// Compute units the device has (what a persistent kernel's grid is sized by). The
    /// default is the CU count of the target's machine model (`machine::default_machine`:
    /// gfx942 → MI300X's 304); the software device, which has no target of its own, takes
    /// gfx942's.
    fn compute_units(&self) -> u32 {
        let t = self.target().unwrap_or(Target::Gfx942);
        kjit_backend_gcn::machine::default_machine(t).cus
    }
}

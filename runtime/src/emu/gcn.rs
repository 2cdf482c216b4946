//! `GcnEmulator`: kjit's software GCN device behind the [`Device`] trait.
//!
//! Takes code objects (any gfx900/gfx90a/gfx942 object: kjit's, clang's, Triton's), buffers and
//! launches; gives results in device memory and per-launch statistics. The target is taken from
//! each code object. Kernels are decoded once, on first launch, and cached.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use kjit_backend_gcn::Target;

use kjit_backend_gcn::codeobj::CodeObject;

use super::args::{self, HiddenValues};
use super::dispatch::KernelSetup;
use super::launch::{run_launch, KernelImage, LaunchError};
use super::loader::{load_image, LoadedImage};
use super::memory::Memory;
use super::scheduler::RunConfig;
use super::stats::Counters;
use crate::device::{
    find_kernel, ArgValue, Device, DeviceBuffer, DeviceError, DeviceResult, LaunchDims,
    LaunchStats, ModuleId,
};

/// What the device keeps of one kernel of a loaded code object.
pub(crate) struct KernelEntry {
    /// Metadata-level description (arguments, sizes) used to pack kernargs.
    pub info: KernelInfo,
    /// Decoded on first launch.
    pub image: OnceLock<Result<Arc<KernelImage>, String>>,
}

/// A kernel as the code-object reader describes it.
pub(crate) type KernelInfo = kjit_backend_gcn::codeobj::Kernel;

struct LoadedModule {
    target: Target,
    image: LoadedImage,
    kernels: HashMap<String, KernelEntry>,
}

/// kjit's software GCN device.
pub struct GcnEmulator {
    mem: Memory,
    modules: Mutex<Vec<Arc<LoadedModule>>>,
    config: Mutex<RunConfig>,
    dispatch_ids: AtomicU64,
    last: Mutex<Counters>,
}

impl Default for GcnEmulator {
    fn default() -> Self {
        GcnEmulator::new()
    }
}

impl GcnEmulator {
    /// A device with the default configuration (round-robin waves, 10^8 instructions per wave).
    pub fn new() -> GcnEmulator {
        GcnEmulator::with_config(RunConfig::default())
    }

    /// A device with the given knobs.
    pub fn with_config(config: RunConfig) -> GcnEmulator {
        GcnEmulator {
            mem: Memory::new(),
            modules: Mutex::new(Vec::new()),
            config: Mutex::new(config),
            dispatch_ids: AtomicU64::new(1),
            last: Mutex::new(Counters::default()),
        }
    }

    /// Changes the knobs for later launches.
    pub fn set_config(&self, config: RunConfig) {
        *self.config.lock().unwrap_or_else(|p| p.into_inner()) = config;
    }

    /// The current knobs.
    pub fn config(&self) -> RunConfig {
        *self.config.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The detailed counters of the last launch.
    pub fn last_counters(&self) -> Counters {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The device memory (for tests and tools that want raw access).
    pub fn memory(&self) -> &Memory {
        &self.mem
    }

    fn module(&self, id: ModuleId) -> DeviceResult<Arc<LoadedModule>> {
        let m = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        m.get(id.0 as usize)
            .cloned()
            .ok_or_else(|| DeviceError::InvalidLaunch(format!("unknown module id {}", id.0)))
    }

    /// The target of a loaded module.
    pub fn module_target(&self, id: ModuleId) -> DeviceResult<Target> {
        Ok(self.module(id)?.target)
    }

    fn kernel_image(&self, m: &LoadedModule, k: &KernelEntry) -> DeviceResult<Arc<KernelImage>> {
        let r = k.image.get_or_init(|| {
            let setup = KernelSetup::from_descriptor(&k.info.descriptor.to_bytes())?;
            let entry = m.image.base + k.info.code_address;
            let program = super::translate::decode_program(
                &k.info.code,
                entry,
                m.image.base,
                m.target,
                &setup,
            )?;
            Ok(Arc::new(KernelImage {
                name: k.info.name.clone(),
                vector_registers: k.info.descriptor.registers_allocated(m.target),
                sgprs: k.info.descriptor.sgprs_allocated(m.target),
                target: m.target,
                setup,
                program,
                entry,
                descriptor: m.image.base + k.info.descriptor_address,
                max_flat_workgroup_size: k.info.meta.max_flat_workgroup_size,
                reqd_workgroup_size: k.info.meta.reqd_workgroup_size,
            }))
        });
        r.clone().map_err(DeviceError::BadCodeObject)
    }
}

impl Device for GcnEmulator {
    fn name(&self) -> String {
        "kjit GCN device (software)".to_string()
    }

    fn target(&self) -> Option<Target> {
        None
    }

    fn alloc(&self, bytes: u64) -> DeviceResult<DeviceBuffer> {
        let addr = self.mem.alloc(bytes).map_err(DeviceError::Memory)?;
        Ok(DeviceBuffer { addr, size: bytes })
    }

    fn free(&self, buf: DeviceBuffer) -> DeviceResult<()> {
        self.mem.free(buf.addr).map_err(DeviceError::Memory)
    }

    fn copy_to_device(&self, dst: DeviceBuffer, offset: u64, src: &[u8]) -> DeviceResult<()> {
        check_range(&self.mem, dst, offset, src.len() as u64)?;
        self.mem
            .write(dst.addr + offset, src)
            .map_err(|f| DeviceError::Memory(f.to_string()))
    }

    fn copy_from_device(&self, src: DeviceBuffer, offset: u64, dst: &mut [u8]) -> DeviceResult<()> {
        check_range(&self.mem, src, offset, dst.len() as u64)?;
        self.mem
            .read(src.addr + offset, dst)
            .map_err(|f| DeviceError::Memory(f.to_string()))
    }

    fn load_module(&self, code_object: &[u8]) -> DeviceResult<ModuleId> {
        let co = CodeObject::parse(code_object)
            .map_err(|e| DeviceError::BadCodeObject(e.to_string()))?;
        let image = load_image(&self.mem, code_object).map_err(DeviceError::BadCodeObject)?;
        let kernels = co
            .kernels
            .into_iter()
            .map(|info| {
                (
                    info.name.clone(),
                    KernelEntry {
                        info,
                        image: OnceLock::new(),
                    },
                )
            })
            .collect();
        let mut m = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        m.push(Arc::new(LoadedModule {
            target: co.target,
            image,
            kernels,
        }));
        Ok(ModuleId(m.len() as u32 - 1))
    }

    fn launch(
        &self,
        module: ModuleId,
        kernel: &str,
        dims: LaunchDims,
        args: &[ArgValue],
    ) -> DeviceResult<LaunchStats> {
        let m = self.module(module)?;
        let k = find_kernel(&m.kernels, kernel)?;
        let image = self.kernel_image(&m, k)?;
        let id = self.dispatch_ids.fetch_add(1, Ordering::Relaxed);
        let pack = |queue: u64| args::pack(&k.info.meta, args, &HiddenValues { dims, queue });
        match run_launch(&self.mem, &image, dims, pack, self.config(), id) {
            Ok((c, timing)) => {
                let mut s = c.to_launch_stats();
                s.timing = timing.map(Box::new);
                *self.last.lock().unwrap_or_else(|p| p.into_inner()) = c;
                Ok(s)
            }
            Err(LaunchError::Invalid(msg)) => Err(DeviceError::InvalidLaunch(msg)),
            Err(LaunchError::Fault(e)) => Err(DeviceError::Fault(e.to_string())),
        }
    }

    fn synchronize(&self) -> DeviceResult<()> {
        Ok(())
    }
}

fn check_range(mem: &Memory, b: DeviceBuffer, offset: u64, len: u64) -> DeviceResult<()> {
    let size = mem.size_of(b.addr).ok_or_else(|| {
        DeviceError::Memory(format!(
            "no buffer at {:#x} (freed, or not from this device)",
            b.addr
        ))
    })?;
    if offset.checked_add(len).is_none_or(|end| end > size) {
        return Err(DeviceError::Memory(format!(
            "copy of {len} bytes at offset {offset} does not fit the {size}-byte buffer at {:#x}",
            b.addr
        )));
    }
    Ok(())
}

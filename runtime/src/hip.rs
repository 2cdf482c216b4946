//! The HIP device: launches kjit code objects on a real AMD GPU through the HIP runtime
//! (`hip-runtime-sys`, which links `libamdhip64`). Built only with the cargo feature `hip`.
//!
//! Takes code-object bytes, buffers and explicit arguments; gives launches on the GPU. The kernarg
//! buffer holds the explicit arguments laid out from the code object's metadata and is passed with
//! `HIP_LAUNCH_PARAM_BUFFER_POINTER`; the HIP runtime appends the hidden arguments itself.
//!
//! No machine this project is developed or tested on has an AMD GPU: the paths that need one are
//! exercised only by `#[ignore]`d tests (see README). What is tested here is discovery on a machine
//! without a GPU, error mapping, and argument layout.

use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::os::raw::c_char;
use std::sync::Mutex;

use hip_runtime_sys as sys;
use kjit_backend_gcn::Target;

use crate::device::{
    ArgValue, Device, DeviceBuffer, DeviceError, DeviceResult, LaunchDims, LaunchStats, ModuleId,
};
use kjit_backend_gcn::codeobj::{CodeObject, FeatureSetting, KernelMeta, TargetId};

use crate::kernarg::pack_explicit;

/// A failed HIP call: which call, the `hipError_t` code and `hipGetErrorString`'s text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call} failed: {message} (hipError_t {code})")]
pub struct HipError {
    /// The HIP API function that failed.
    pub call: &'static str,
    /// The numeric `hipError_t`.
    pub code: i32,
    /// `hipGetErrorString`'s text for the code.
    pub message: String,
}

impl From<HipError> for DeviceError {
    fn from(e: HipError) -> Self {
        // "no device" style errors mean the device cannot be had; everything else is a fault.
        if e.code == sys::hipError_t::hipErrorNoDevice as i32
            || e.code == sys::hipError_t::hipErrorInvalidDevice as i32
            || e.code == sys::hipError_t::hipErrorNotInitialized as i32
            || e.code == sys::hipError_t::hipErrorInsufficientDriver as i32
        {
            DeviceError::Unavailable(e.to_string())
        } else {
            DeviceError::Fault(e.to_string())
        }
    }
}

/// Turns a `hipError_t` into `Ok` or a typed error carrying the runtime's own message.
fn check(call: &'static str, err: sys::hipError_t) -> Result<(), HipError> {
    if err == sys::hipError_t::hipSuccess {
        return Ok(());
    }
    // SAFETY: hipGetErrorString returns a pointer to a static NUL-terminated string (or null).
    let message = unsafe {
        let p = sys::hipGetErrorString(err);
        if p.is_null() {
            "unknown HIP error".to_string()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    Err(HipError {
        call,
        code: err as i32,
        message,
    })
}

/// What HIP says about a GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HipDeviceInfo {
    /// Device ordinal.
    pub ordinal: i32,
    /// Marketing name (`hipDeviceProp_t::name`).
    pub name: String,
    /// Architecture with features, e.g. `gfx942:sramecc+:xnack-` (`gcnArchName`).
    pub gcn_arch_name: String,
    /// Compute units.
    pub compute_units: u32,
    /// LDS bytes available to one workgroup.
    pub lds_bytes: u32,
}

impl HipDeviceInfo {
    /// The kjit target for this GPU, if kjit compiles for its architecture.
    pub fn target(&self) -> Option<Target> {
        let base = self.gcn_arch_name.split(':').next().unwrap_or("");
        base.parse().ok()
    }
}

/// Lists the GPUs the HIP runtime sees. A machine without a GPU (or without the kernel driver)
/// gives `DeviceError::Unavailable` saying "no AMD GPU".
pub fn discover() -> DeviceResult<Vec<HipDeviceInfo>> {
    let mut count: i32 = 0;
    // SAFETY: plain out-parameter call.
    let err = unsafe { sys::hipGetDeviceCount(&mut count) };
    if err != sys::hipError_t::hipSuccess || count <= 0 {
        let why = check("hipGetDeviceCount", err)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "the HIP runtime reports 0 devices".to_string());
        return Err(DeviceError::Unavailable(format!("no AMD GPU found: {why}")));
    }
    (0..count).map(device_info).collect()
}

fn device_info(ordinal: i32) -> DeviceResult<HipDeviceInfo> {
    // hipGetDeviceProperties (the unversioned symbol) keeps the ROCm 5 struct layout that the
    // bindings describe; newer runtimes export the new layout under a versioned name.
    let mut props: sys::hipDeviceProp_t = Default::default();
    // SAFETY: props is a properly sized, writable hipDeviceProp_t.
    check("hipGetDeviceProperties", unsafe {
        sys::hipGetDeviceProperties(&mut props, ordinal)
    })?;
    let cstr = |chars: &[c_char]| -> String {
        let bytes: Vec<u8> = chars
            .iter()
            .map(|&c| c as u8)
            .take_while(|&b| b != 0)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let attr = |a: sys::hipDeviceAttribute_t, call| -> DeviceResult<u32> {
        let mut v: i32 = 0;
        // SAFETY: plain out-parameter call.
        check(call, unsafe {
            sys::hipDeviceGetAttribute(&mut v, a, ordinal)
        })?;
        Ok(v.max(0) as u32)
    };
    Ok(HipDeviceInfo {
        ordinal,
        name: cstr(&props.name),
        gcn_arch_name: cstr(&props.gcnArchName),
        compute_units: attr(
            sys::hipDeviceAttribute_t::hipDeviceAttributeMultiprocessorCount,
            "hipDeviceGetAttribute(MultiprocessorCount)",
        )?,
        lds_bytes: attr(
            sys::hipDeviceAttribute_t::hipDeviceAttributeMaxSharedMemoryPerBlock,
            "hipDeviceGetAttribute(MaxSharedMemoryPerBlock)",
        )?,
    })
}

/// Refuses a code object whose target ID cannot run on a GPU whose `gcnArchName` is `gpu_arch`
/// (e.g. `gfx942:sramecc+:xnack-`): another processor, or a feature the object requires on (`+`)
/// or off (`-`) set the other way on the GPU. "Any" runs everywhere.
pub fn check_target_matches(object: &TargetId, gpu_arch: &str) -> DeviceResult<()> {
    let mut parts = gpu_arch.split(':');
    let gpu_base = parts.next().unwrap_or("");
    if object.target.name() != gpu_base {
        return Err(DeviceError::BadCodeObject(format!(
            "code object is for {object} but the GPU is {gpu_arch}"
        )));
    }
    for feature in parts {
        let (name, on) = match feature.strip_suffix('+') {
            Some(n) => (n, true),
            None => match feature.strip_suffix('-') {
                Some(n) => (n, false),
                None => continue,
            },
        };
        let wanted = match name {
            "xnack" => object.xnack,
            "sramecc" => object.sramecc,
            _ => continue,
        };
        let clash = matches!(
            (wanted, on),
            (FeatureSetting::On, false) | (FeatureSetting::Off, true)
        );
        if clash {
            return Err(DeviceError::BadCodeObject(format!(
                "code object is for {object} but the GPU is {gpu_arch} ({name} differs)"
            )));
        }
    }
    Ok(())
}

/// Device memory owned by RAII: freed with `hipFree` on drop.
struct HipAllocation {
    ptr: *mut c_void,
    size: u64,
}

impl Drop for HipAllocation {
    fn drop(&mut self) {
        // SAFETY: ptr came from hipMalloc and is freed once. A failure here cannot be reported.
        unsafe {
            let _ = sys::hipFree(self.ptr);
        }
    }
}

/// A loaded module, unloaded on drop, with the signatures of its kernels.
struct HipModule {
    module: sys::hipModule_t,
    kernels: HashMap<String, KernelMeta>,
}

impl Drop for HipModule {
    fn drop(&mut self) {
        // SAFETY: module came from hipModuleLoadData and is unloaded once.
        unsafe {
            let _ = sys::hipModuleUnload(self.module);
        }
    }
}

struct HipState {
    buffers: HashMap<u64, HipAllocation>,
    modules: Vec<HipModule>,
}

/// An AMD GPU driven through the HIP runtime.
pub struct HipDevice {
    info: HipDeviceInfo,
    target: Target,
    state: Mutex<HipState>,
}

// SAFETY: the raw HIP handles inside are only used under the state mutex, and the HIP runtime's
// API is thread-safe.
unsafe impl Send for HipDevice {}
unsafe impl Sync for HipDevice {}

impl HipDevice {
    /// Opens the first GPU whose architecture kjit targets.
    pub fn open() -> DeviceResult<HipDevice> {
        let gpus = discover()?;
        let Some(info) = gpus.iter().find(|g| g.target().is_some()).cloned() else {
            let archs: Vec<_> = gpus.iter().map(|g| g.gcn_arch_name.clone()).collect();
            return Err(DeviceError::Unavailable(format!(
                "no AMD GPU with an architecture kjit targets (found {archs:?}; kjit targets gfx942, gfx90a, gfx900)"
            )));
        };
        // SAFETY: plain call with a valid ordinal from discovery.
        check("hipSetDevice", unsafe { sys::hipSetDevice(info.ordinal) })?;
        let target = info.target().expect("filtered above");
        Ok(HipDevice {
            info,
            target,
            state: Mutex::new(HipState {
                buffers: HashMap::new(),
                modules: Vec::new(),
            }),
        })
    }

    /// What HIP reported about the GPU.
    pub fn info(&self) -> &HipDeviceInfo {
        &self.info
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HipState> {
        // A panic while holding the lock leaves plain maps behind; keep using them.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn buffer_ptr(
        state: &HipState,
        buf: DeviceBuffer,
        offset: u64,
        len: u64,
    ) -> DeviceResult<*mut c_void> {
        let alloc = state
            .buffers
            .get(&buf.addr)
            .ok_or_else(|| DeviceError::Memory(format!("unknown buffer at {:#x}", buf.addr)))?;
        if offset.checked_add(len).is_none_or(|end| end > alloc.size) {
            return Err(DeviceError::Memory(format!(
                "copy of {len} bytes at offset {offset} exceeds the {}-byte buffer at {:#x}",
                alloc.size, buf.addr
            )));
        }
        // SAFETY: offset is within the allocation (checked above).
        Ok(unsafe { (alloc.ptr as *mut u8).add(offset as usize) as *mut c_void })
    }
}

impl Device for HipDevice {
    fn name(&self) -> String {
        format!("HIP: {} ({})", self.info.name, self.info.gcn_arch_name)
    }

    fn target(&self) -> Option<Target> {
        Some(self.target)
    }

    fn alloc(&self, bytes: u64) -> DeviceResult<DeviceBuffer> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-parameter call; a zero-byte request is rounded up so every buffer has an address.
        check("hipMalloc", unsafe {
            sys::hipMalloc(&mut ptr, bytes.max(1) as usize)
        })?;
        let buf = DeviceBuffer {
            addr: ptr as u64,
            size: bytes,
        };
        self.state()
            .buffers
            .insert(buf.addr, HipAllocation { ptr, size: bytes });
        Ok(buf)
    }

    fn free(&self, buf: DeviceBuffer) -> DeviceResult<()> {
        match self.state().buffers.remove(&buf.addr) {
            Some(_alloc) => Ok(()), // dropped here: hipFree
            None => Err(DeviceError::Memory(format!(
                "free of unknown buffer at {:#x}",
                buf.addr
            ))),
        }
    }

    fn copy_to_device(&self, dst: DeviceBuffer, offset: u64, src: &[u8]) -> DeviceResult<()> {
        let state = self.state();
        let p = Self::buffer_ptr(&state, dst, offset, src.len() as u64)?;
        // SAFETY: p points at src.len() writable device bytes (checked); src is a valid host slice.
        check("hipMemcpyHtoD", unsafe {
            sys::hipMemcpyHtoD(p, src.as_ptr() as *mut c_void, src.len())
        })?;
        Ok(())
    }

    fn copy_from_device(&self, src: DeviceBuffer, offset: u64, dst: &mut [u8]) -> DeviceResult<()> {
        let state = self.state();
        let p = Self::buffer_ptr(&state, src, offset, dst.len() as u64)?;
        // SAFETY: p points at dst.len() readable device bytes (checked); dst is a valid host slice.
        check("hipMemcpyDtoH", unsafe {
            sys::hipMemcpyDtoH(dst.as_mut_ptr() as *mut c_void, p, dst.len())
        })?;
        Ok(())
    }

    fn load_module(&self, code_object: &[u8]) -> DeviceResult<ModuleId> {
        let co = CodeObject::parse(code_object)
            .map_err(|e| DeviceError::BadCodeObject(e.to_string()))?;
        // Loading an object for another architecture fails late or hangs; refuse it up front.
        check_target_matches(&co.target_id(), &self.info.gcn_arch_name)?;
        let kernels: HashMap<String, KernelMeta> = co
            .kernels
            .iter()
            .map(|k| (k.meta.name.clone(), k.meta.clone()))
            .collect();
        let mut module: sys::hipModule_t = std::ptr::null_mut();
        // SAFETY: the image is a complete code object; HIP copies what it needs during the call.
        check("hipModuleLoadData", unsafe {
            sys::hipModuleLoadData(&mut module, code_object.as_ptr() as *const c_void)
        })?;
        let mut state = self.state();
        state.modules.push(HipModule { module, kernels });
        Ok(ModuleId(state.modules.len() as u32 - 1))
    }

    fn launch(
        &self,
        module: ModuleId,
        kernel: &str,
        dims: LaunchDims,
        args: &[ArgValue],
    ) -> DeviceResult<LaunchStats> {
        let state = self.state();
        let m = state
            .modules
            .get(module.0 as usize)
            .ok_or_else(|| DeviceError::InvalidLaunch(format!("unknown module {}", module.0)))?;
        let sig = m.kernels.get(kernel).ok_or_else(|| {
            DeviceError::InvalidLaunch(format!("code object has no kernel named '{kernel}'"))
        })?;
        for &a in args {
            if let ArgValue::Buffer(b) = a {
                if !state.buffers.contains_key(&b.addr) {
                    return Err(DeviceError::InvalidLaunch(format!(
                        "argument buffer at {:#x} was not allocated on this device",
                        b.addr
                    )));
                }
            }
        }
        let mut kernarg = pack_explicit(sig, args).map_err(DeviceError::InvalidLaunch)?;
        let mut size = kernarg.len();
        let mut function: sys::hipFunction_t = std::ptr::null_mut();
        let cname = std::ffi::CString::new(kernel)
            .map_err(|_| DeviceError::InvalidLaunch("kernel name contains NUL".into()))?;
        // SAFETY: module is loaded; cname is NUL-terminated.
        check("hipModuleGetFunction", unsafe {
            sys::hipModuleGetFunction(&mut function, m.module, cname.as_ptr())
        })?;
        // HIP_LAUNCH_PARAM_BUFFER_POINTER / _SIZE / _END are the pointer values 1, 2, 3 in hip's headers.
        let mut extra: [*mut c_void; 5] = [
            std::ptr::without_provenance_mut::<c_void>(1),
            kernarg.as_mut_ptr() as *mut c_void,
            std::ptr::without_provenance_mut::<c_void>(2),
            &mut size as *mut usize as *mut c_void,
            std::ptr::without_provenance_mut::<c_void>(3),
        ];
        // SAFETY: function is valid; extra follows HIP's documented layout and outlives the call.
        check("hipModuleLaunchKernel", unsafe {
            sys::hipModuleLaunchKernel(
                function,
                dims.grid[0],
                dims.grid[1],
                dims.grid[2],
                dims.block[0],
                dims.block[1],
                dims.block[2],
                dims.dynamic_lds,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        })?;
        drop(state);
        self.synchronize()?;
        Ok(LaunchStats::default())
    }

    fn synchronize(&self) -> DeviceResult<()> {
        // SAFETY: plain call.
        check("hipDeviceSynchronize", unsafe {
            sys::hipDeviceSynchronize()
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_names_map_to_targets() {
        let mut info = HipDeviceInfo {
            ordinal: 0,
            name: "x".into(),
            gcn_arch_name: "gfx942:sramecc+:xnack-".into(),
            compute_units: 304,
            lds_bytes: 65536,
        };
        assert_eq!(info.target(), Some(Target::Gfx942));
        info.gcn_arch_name = "gfx90a:sramecc+:xnack-".into();
        assert_eq!(info.target(), Some(Target::Gfx90a));
        info.gcn_arch_name = "gfx1100".into();
        assert_eq!(info.target(), None);
    }

    #[test]
    fn hip_errors_carry_the_runtime_message() {
        let e = check("hipMalloc", sys::hipError_t::hipErrorOutOfMemory).unwrap_err();
        assert_eq!(e.call, "hipMalloc");
        assert!(!e.message.is_empty(), "hipGetErrorString gave no text");
        assert!(e.to_string().contains("hipMalloc failed"));
        assert!(check("x", sys::hipError_t::hipSuccess).is_ok());
    }

    #[test]
    fn code_objects_for_another_gpu_are_refused() {
        let any942 = TargetId::new(Target::Gfx942);
        assert!(check_target_matches(&any942, "gfx942:sramecc+:xnack-").is_ok());
        let e = check_target_matches(&any942, "gfx90a:sramecc+:xnack-").unwrap_err();
        assert!(
            e.to_string().contains("for gfx942 but the GPU is gfx90a"),
            "{e}"
        );
        let xnack_on = TargetId {
            xnack: FeatureSetting::On,
            ..any942
        };
        let e = check_target_matches(&xnack_on, "gfx942:sramecc+:xnack-").unwrap_err();
        assert!(e.to_string().contains("xnack differs"), "{e}");
        assert!(check_target_matches(&xnack_on, "gfx942:sramecc+:xnack+").is_ok());
    }

    /// On a machine without an AMD GPU (every machine this project is tested on) discovery must say
    /// so cleanly instead of crashing.
    #[test]
    fn no_gpu_is_reported_cleanly() {
        match discover() {
            Err(DeviceError::Unavailable(msg)) => assert!(msg.contains("no AMD GPU"), "{msg}"),
            Err(other) => panic!("expected Unavailable, got {other}"),
            Ok(gpus) => {
                eprintln!("this machine has GPUs: {gpus:?} (test meant for GPU-less machines)")
            }
        }
        match HipDevice::open() {
            Err(DeviceError::Unavailable(msg)) => assert!(msg.contains("no AMD GPU"), "{msg}"),
            Err(other) => panic!("expected Unavailable, got {other}"),
            Ok(d) => eprintln!("opened {}", d.name()),
        }
    }
}

//! The HIP device: launches kjit code objects on a real AMD GPU through the HIP runtime. Built
//! only with the cargo feature `hip`.
//!
//! Takes code-object bytes, buffers and explicit arguments; gives launches on the GPU. The HIP
//! runtime (`libamdhip64`) is loaded when first needed (`libloading`), not linked, so a binary
//! built with `hip` starts on a machine without ROCm and falls back to the software device. The
//! kernarg buffer holds the explicit arguments laid out from the code object's metadata and is
//! passed with `HIP_LAUNCH_PARAM_BUFFER_POINTER`; the HIP runtime appends the hidden arguments.
//!
//! `hipSetDevice` applies to the calling thread only and a `HipDevice` is shared across threads,
//! so every call into HIP (including the frees and unloads of `Drop`) selects the device first.
//! Every `hipError_t` is received as an integer (a newer runtime may return codes this file does
//! not name) and mapped per call: memory calls to `Memory`, module calls to `BadCodeObject`,
//! launch-configuration errors to `InvalidLaunch`, kernel faults to `Fault`, "no device" codes to
//! `Unavailable`. Launches are checked before HIP sees them with the software device's checks
//! (`check_args`, `validate_dims` with the kernel's `max_flat_workgroup_size`).
//!
//! No machine this project is developed or tested on has an AMD GPU: the paths that need one are
//! exercised only by `#[ignore]`d tests (see `docs/hip.md`). What is tested here is loading the
//! runtime (present or missing), discovery without a GPU, error mapping, the device-property
//! layout against the HIP header, and argument layout.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::sync::{Mutex, OnceLock};

use kjit_backend_gcn::codeobj::{CodeObject, FeatureSetting, KernelMeta, TargetId};
use kjit_backend_gcn::Target;

use crate::device::{
    find_kernel, ArgValue, Device, DeviceBuffer, DeviceError, DeviceResult, LaunchDims,
    LaunchStats, ModuleId,
};
use crate::emu::dispatch::KernelSetup;
use crate::emu::launch::validate_dims;
use crate::kernarg::pack_explicit;

/// `hipError_t` values kjit treats specially (`hip/hip_runtime_api.h`; the numbers are stable
/// across ROCm 5 and 6).
pub mod codes {
    /// `hipSuccess`.
    pub const SUCCESS: i32 = 0;
    /// `hipErrorInvalidValue`.
    pub const INVALID_VALUE: i32 = 1;
    /// `hipErrorNotInitialized`.
    pub const NOT_INITIALIZED: i32 = 3;
    /// `hipErrorInvalidConfiguration`.
    pub const INVALID_CONFIGURATION: i32 = 9;
    /// `hipErrorInsufficientDriver`.
    pub const INSUFFICIENT_DRIVER: i32 = 35;
    /// `hipErrorInvalidDeviceFunction`.
    pub const INVALID_DEVICE_FUNCTION: i32 = 98;
    /// `hipErrorNoDevice`.
    pub const NO_DEVICE: i32 = 100;
    /// `hipErrorInvalidDevice`.
    pub const INVALID_DEVICE: i32 = 101;
    /// `hipErrorLaunchOutOfResources`.
    pub const LAUNCH_OUT_OF_RESOURCES: i32 = 701;
    /// `hipErrorOutOfMemory` (also `hipErrorMemoryAllocation`).
    pub const OUT_OF_MEMORY: i32 = 2;
    /// `hipErrorInvalidHandle` (also `hipErrorInvalidResourceHandle`: a bad event or stream).
    pub const INVALID_HANDLE: i32 = 400;
    /// `hipErrorNotReady`: an event not recorded yet.
    pub const NOT_READY: i32 = 600;
    /// `hipErrorLaunchFailure`: the kernel faulted.
    pub const LAUNCH_FAILURE: i32 = 719;
}

/// Library names tried in order when `KJIT_HIP_LIBRARY` does not name one.
pub const LIBRARY_NAMES: &[&str] = &["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"];

/// Bytes reserved for a `hipDeviceProp_t` (792 in ROCm 5's layout; room for growth).
const PROPS_BYTES: usize = 4096;
/// Offsets in the ROCm 5 `hipDeviceProp_t` layout that the unversioned `hipGetDeviceProperties`
/// fills (ROCm 6 keeps it under that name and adds the new layout as `...R0600`). Checked against
/// the installed header by `device_property_offsets_match_the_hip_header`.
pub const PROP_NAME: usize = 0;
/// `sharedMemPerBlock` (`size_t`).
pub const PROP_SHARED_MEM_PER_BLOCK: usize = 264;
/// `multiProcessorCount` (`int`).
pub const PROP_MULTIPROCESSOR_COUNT: usize = 336;
/// `gcnArchName` (`char[256]`).
pub const PROP_GCN_ARCH_NAME: usize = 396;

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

/// What a HIP call was doing, which decides the `DeviceError` its failure becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    /// Finding and selecting the GPU.
    Discovery,
    /// Allocating, freeing, copying.
    Memory,
    /// Loading a code object, finding a kernel in it.
    Module,
    /// Launching a kernel.
    Launch,
    /// Waiting for kernels (where their faults surface).
    Sync,
    /// Creating, recording, waiting for and reading the events that time a launch.
    Event,
}

/// The `DeviceError` a failed call of `kind` becomes: "no device" codes are `Unavailable`
/// whatever the call; otherwise by what the call was doing.
pub fn to_device_error(e: HipError, kind: CallKind) -> DeviceError {
    use codes::*;
    let msg = e.to_string();
    if matches!(
        e.code,
        NO_DEVICE | INVALID_DEVICE | NOT_INITIALIZED | INSUFFICIENT_DRIVER
    ) {
        return DeviceError::Unavailable(msg);
    }
    match kind {
        CallKind::Discovery => DeviceError::Unavailable(msg),
        CallKind::Memory => DeviceError::Memory(msg),
        CallKind::Module => DeviceError::BadCodeObject(msg),
        CallKind::Launch => match e.code {
            INVALID_VALUE
            | INVALID_CONFIGURATION
            | LAUNCH_OUT_OF_RESOURCES
            | INVALID_DEVICE_FUNCTION => DeviceError::InvalidLaunch(msg),
            _ => DeviceError::Fault(msg),
        },
        CallKind::Sync => DeviceError::Fault(msg),
        // Waiting for the stop event is where a kernel fault surfaces; an event HIP cannot
        // read (never recorded, bad handle) means the launch could not be timed.
        CallKind::Event => match e.code {
            OUT_OF_MEMORY => DeviceError::Memory(msg),
            INVALID_VALUE | INVALID_HANDLE | NOT_READY => DeviceError::Timing(msg),
            _ => DeviceError::Fault(msg),
        },
    }
}

/// A launch's time from `hipEventElapsedTime`'s milliseconds (a `float`, about 1 µs
/// resolution), in nanoseconds; a negative or non-finite reading is a `Timing` error.
pub fn elapsed_to_ns(ms: f32) -> DeviceResult<u64> {
    if !ms.is_finite() || ms < 0.0 {
        return Err(DeviceError::Timing(format!(
            "hipEventElapsedTime gave {ms} ms"
        )));
    }
    Ok((ms as f64 * 1e6).round() as u64)
}

type HipResult = i32;

/// The HIP runtime functions kjit calls, resolved from `libamdhip64` at run time. Every
/// `hipError_t` is an `i32` here.
pub struct HipApi {
    /// Keeps the library loaded (the API lives for the whole process).
    _lib: libloading::Library,
    /// The name the library was loaded by.
    pub library: String,
    get_device_count: unsafe extern "C" fn(*mut c_int) -> HipResult,
    get_device_properties: unsafe extern "C" fn(*mut c_void, c_int) -> HipResult,
    set_device: unsafe extern "C" fn(c_int) -> HipResult,
    malloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> HipResult,
    free: unsafe extern "C" fn(*mut c_void) -> HipResult,
    memcpy_htod: unsafe extern "C" fn(*mut c_void, *mut c_void, usize) -> HipResult,
    memcpy_dtoh: unsafe extern "C" fn(*mut c_void, *mut c_void, usize) -> HipResult,
    module_load_data: unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> HipResult,
    module_unload: unsafe extern "C" fn(*mut c_void) -> HipResult,
    module_get_function:
        unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const c_char) -> HipResult,
    #[allow(clippy::type_complexity)]
    module_launch_kernel: unsafe extern "C" fn(
        *mut c_void,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        *mut c_void,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> HipResult,
    device_synchronize: unsafe extern "C" fn() -> HipResult,
    event_create: unsafe extern "C" fn(*mut *mut c_void) -> HipResult,
    event_record: unsafe extern "C" fn(*mut c_void, *mut c_void) -> HipResult,
    event_synchronize: unsafe extern "C" fn(*mut c_void) -> HipResult,
    event_elapsed_time: unsafe extern "C" fn(*mut f32, *mut c_void, *mut c_void) -> HipResult,
    event_destroy: unsafe extern "C" fn(*mut c_void) -> HipResult,
    get_error_string: unsafe extern "C" fn(HipResult) -> *const c_char,
}

impl HipApi {
    /// Loads the first of `names` that the dynamic loader finds and resolves every function.
    /// The error says which names were tried and why the last failed, or which symbol is missing.
    pub fn load(names: &[&str]) -> Result<HipApi, String> {
        let mut why = String::from("no library name given");
        for name in names {
            // SAFETY: loading libamdhip64 runs its initialisers, which is what linking it would
            // do at start-up; it has no other preconditions.
            match unsafe { libloading::Library::new(name) } {
                Ok(lib) => return Self::resolve(lib, name),
                Err(e) => why = e.to_string(),
            }
        }
        Err(format!(
            "cannot load the HIP runtime (tried {}): {why}",
            names.join(", ")
        ))
    }

    fn resolve(lib: libloading::Library, name: &str) -> Result<HipApi, String> {
        /// The function `sym` of `lib`, as the fn-pointer type of the field it fills.
        fn get<T: Copy>(lib: &libloading::Library, name: &str, sym: &str) -> Result<T, String> {
            let c = CString::new(sym).map_err(|e| e.to_string())?;
            // SAFETY: `sym` is the HIP API function of that name, and `T` is the field's type:
            // its C signature from hip_runtime_api.h with hipError_t as i32.
            let f = unsafe { lib.get::<T>(c.as_bytes_with_nul()) }
                .map_err(|e| format!("{name} has no {sym}: {e}"))?;
            Ok(*f)
        }
        macro_rules! sym {
            ($s:literal) => {
                get(&lib, name, $s)?
            };
        }
        Ok(HipApi {
            get_device_count: sym!("hipGetDeviceCount"),
            get_device_properties: sym!("hipGetDeviceProperties"),
            set_device: sym!("hipSetDevice"),
            malloc: sym!("hipMalloc"),
            free: sym!("hipFree"),
            memcpy_htod: sym!("hipMemcpyHtoD"),
            memcpy_dtoh: sym!("hipMemcpyDtoH"),
            module_load_data: sym!("hipModuleLoadData"),
            module_unload: sym!("hipModuleUnload"),
            module_get_function: sym!("hipModuleGetFunction"),
            module_launch_kernel: sym!("hipModuleLaunchKernel"),
            device_synchronize: sym!("hipDeviceSynchronize"),
            event_create: sym!("hipEventCreate"),
            event_record: sym!("hipEventRecord"),
            event_synchronize: sym!("hipEventSynchronize"),
            event_elapsed_time: sym!("hipEventElapsedTime"),
            event_destroy: sym!("hipEventDestroy"),
            get_error_string: sym!("hipGetErrorString"),
            library: name.to_string(),
            _lib: lib,
        })
    }

    /// `Ok` for `hipSuccess`, else the error with the runtime's own message.
    pub fn check(&self, call: &'static str, code: HipResult) -> Result<(), HipError> {
        if code == codes::SUCCESS {
            return Ok(());
        }
        // SAFETY: hipGetErrorString takes any integer and returns a static NUL-terminated
        // string (or null).
        let message = unsafe {
            let p = (self.get_error_string)(code);
            if p.is_null() {
                "unknown HIP error".to_string()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Err(HipError {
            call,
            code,
            message,
        })
    }

    /// Runs a call of `kind` and maps its failure.
    fn call(&self, name: &'static str, kind: CallKind, code: HipResult) -> DeviceResult<()> {
        self.check(name, code).map_err(|e| to_device_error(e, kind))
    }

    /// Makes `ordinal` the current device of the calling thread.
    fn select(&self, ordinal: i32) -> DeviceResult<()> {
        // SAFETY: plain call.
        self.call("hipSetDevice", CallKind::Discovery, unsafe {
            (self.set_device)(ordinal)
        })
    }
}

/// The process's HIP runtime, loaded on first use from `KJIT_HIP_LIBRARY` or [`LIBRARY_NAMES`].
/// Where it cannot be loaded the error is `Unavailable` and says why.
pub fn api() -> DeviceResult<&'static HipApi> {
    static API: OnceLock<Result<HipApi, String>> = OnceLock::new();
    API.get_or_init(|| match std::env::var("KJIT_HIP_LIBRARY") {
        Ok(name) if !name.is_empty() => HipApi::load(&[&name]),
        _ => HipApi::load(LIBRARY_NAMES),
    })
    .as_ref()
    .map_err(|e| DeviceError::Unavailable(format!("no AMD GPU runtime: {e}")))
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

    /// Reads the fields kjit uses from the bytes of a ROCm 5 layout `hipDeviceProp_t`.
    pub fn from_props(ordinal: i32, props: &[u8]) -> HipDeviceInfo {
        let cstr = |at: usize| -> String {
            let bytes = props.get(at..at + 256).unwrap_or(&[]);
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            String::from_utf8_lossy(&bytes[..end]).into_owned()
        };
        let word = |at: usize, n: usize| -> u64 {
            let mut b = [0u8; 8];
            if let Some(s) = props.get(at..at + n) {
                b[..n].copy_from_slice(s);
            }
            u64::from_le_bytes(b)
        };
        HipDeviceInfo {
            ordinal,
            name: cstr(PROP_NAME),
            gcn_arch_name: cstr(PROP_GCN_ARCH_NAME),
            compute_units: (word(PROP_MULTIPROCESSOR_COUNT, 4) as i32).max(0) as u32,
            lds_bytes: word(PROP_SHARED_MEM_PER_BLOCK, 8).min(u32::MAX as u64) as u32,
        }
    }
}

/// Lists the GPUs the HIP runtime sees. A machine without the runtime, without a GPU or without
/// the kernel driver gives `DeviceError::Unavailable` saying "no AMD GPU".
pub fn discover() -> DeviceResult<Vec<HipDeviceInfo>> {
    let api = api()?;
    let mut count: c_int = 0;
    // SAFETY: plain out-parameter call.
    let code = unsafe { (api.get_device_count)(&mut count) };
    if code != codes::SUCCESS || count <= 0 {
        let why = api
            .check("hipGetDeviceCount", code)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "the HIP runtime reports 0 devices".to_string());
        return Err(DeviceError::Unavailable(format!("no AMD GPU found: {why}")));
    }
    (0..count)
        .map(|ordinal| {
            // 8-aligned, larger than any hipDeviceProp_t layout.
            let mut props = vec![0u64; PROPS_BYTES / 8];
            // SAFETY: props is writable, aligned and larger than hipDeviceProp_t.
            api.call("hipGetDeviceProperties", CallKind::Discovery, unsafe {
                (api.get_device_properties)(props.as_mut_ptr() as *mut c_void, ordinal)
            })?;
            let bytes: Vec<u8> = props.iter().flat_map(|w| w.to_le_bytes()).collect();
            Ok(HipDeviceInfo::from_props(ordinal, &bytes))
        })
        .collect()
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

/// The kernarg segment as the runtime reads it: 8-byte words, so the buffer is 8-aligned
/// whatever the allocator does for bytes. `len` is the segment's size in bytes.
pub struct KernargBuffer {
    words: Vec<u64>,
    /// Bytes of kernarg segment.
    pub len: usize,
}

impl KernargBuffer {
    /// The bytes of `segment` in an 8-aligned buffer.
    pub fn new(segment: &[u8]) -> KernargBuffer {
        let mut words = vec![0u64; segment.len().div_ceil(8).max(1)];
        for (w, chunk) in words.iter_mut().zip(segment.chunks(8)) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            *w = u64::from_le_bytes(b);
        }
        KernargBuffer {
            words,
            len: segment.len(),
        }
    }

    /// The buffer's address (8-aligned).
    pub fn as_mut_ptr(&mut self) -> *mut c_void {
        self.words.as_mut_ptr() as *mut c_void
    }
}

/// Device memory owned by RAII: freed with `hipFree`, on its own device, on drop.
struct HipAllocation {
    api: &'static HipApi,
    ordinal: i32,
    ptr: *mut c_void,
    size: u64,
}

impl Drop for HipAllocation {
    fn drop(&mut self) {
        // A failure here cannot be reported; the device is selected first so that the free
        // reaches the GPU the memory is on.
        let _ = self.api.select(self.ordinal);
        // SAFETY: ptr came from hipMalloc on this device and is freed once.
        unsafe {
            let _ = (self.api.free)(self.ptr);
        }
    }
}

/// What the device keeps of one kernel: its signature and launch limits.
struct HipKernel {
    meta: KernelMeta,
    setup: KernelSetup,
}

/// A loaded module, unloaded (on its own device) on drop, with its kernels.
struct HipModule {
    api: &'static HipApi,
    ordinal: i32,
    module: *mut c_void,
    kernels: HashMap<String, HipKernel>,
}

impl Drop for HipModule {
    fn drop(&mut self) {
        let _ = self.api.select(self.ordinal);
        // SAFETY: module came from hipModuleLoadData on this device and is unloaded once.
        unsafe {
            let _ = (self.api.module_unload)(self.module);
        }
    }
}

/// A HIP event, destroyed (on its own device) on drop. Two of them, recorded on the NULL stream
/// before and after a launch, time it on the GPU.
pub struct HipEvent {
    api: &'static HipApi,
    ordinal: i32,
    event: *mut c_void,
}

impl HipEvent {
    /// Creates an event on device `ordinal` (which the caller has selected).
    pub fn new(api: &'static HipApi, ordinal: i32) -> DeviceResult<HipEvent> {
        let mut event: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-parameter call.
        api.call("hipEventCreate", CallKind::Event, unsafe {
            (api.event_create)(&mut event)
        })?;
        Ok(HipEvent {
            api,
            ordinal,
            event,
        })
    }

    /// Records the event on the NULL stream: it completes when the work queued before it does.
    pub fn record(&self) -> DeviceResult<()> {
        // SAFETY: the event is live; the NULL stream is the device's default stream.
        self.api.call("hipEventRecord", CallKind::Event, unsafe {
            (self.api.event_record)(self.event, std::ptr::null_mut())
        })
    }

    /// Waits until the event has completed (a fault of the work before it surfaces here).
    pub fn synchronize(&self) -> DeviceResult<()> {
        // SAFETY: the event is live.
        self.api
            .call("hipEventSynchronize", CallKind::Event, unsafe {
                (self.api.event_synchronize)(self.event)
            })
    }

    /// Nanoseconds from `self` to the later event `stop` (both recorded and completed).
    pub fn elapsed_ns_to(&self, stop: &HipEvent) -> DeviceResult<u64> {
        let mut ms: f32 = 0.0;
        // SAFETY: both events are live; out-parameter call.
        self.api
            .call("hipEventElapsedTime", CallKind::Event, unsafe {
                (self.api.event_elapsed_time)(&mut ms, self.event, stop.event)
            })?;
        elapsed_to_ns(ms)
    }
}

impl Drop for HipEvent {
    fn drop(&mut self) {
        let _ = self.api.select(self.ordinal);
        // SAFETY: the event came from hipEventCreate on this device and is destroyed once.
        unsafe {
            let _ = (self.api.event_destroy)(self.event);
        }
    }
}

struct HipState {
    buffers: HashMap<u64, HipAllocation>,
    modules: Vec<HipModule>,
}

/// An AMD GPU driven through the HIP runtime.
pub struct HipDevice {
    api: &'static HipApi,
    info: HipDeviceInfo,
    target: Target,
    state: Mutex<HipState>,
}

// SAFETY: the raw HIP handles inside are only used under the state mutex, every call selects the
// device on the calling thread first, and the HIP runtime's API is thread-safe.
unsafe impl Send for HipDevice {}
unsafe impl Sync for HipDevice {}

impl HipDevice {
    /// Opens the first GPU whose architecture kjit targets.
    pub fn open() -> DeviceResult<HipDevice> {
        let api = api()?;
        let gpus = discover()?;
        let Some((info, target)) = gpus.iter().find_map(|g| g.target().map(|t| (g.clone(), t)))
        else {
            let archs: Vec<_> = gpus.iter().map(|g| g.gcn_arch_name.clone()).collect();
            return Err(DeviceError::Unavailable(format!(
                "no AMD GPU with an architecture kjit targets (found {archs:?}; kjit targets gfx942, gfx90a, gfx900)"
            )));
        };
        api.select(info.ordinal)?;
        Ok(HipDevice {
            api,
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

    /// Selects this device on the calling thread (every method does, before any HIP call).
    fn select(&self) -> DeviceResult<()> {
        self.api.select(self.info.ordinal)
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
    fn compute_units(&self) -> u32 {
        self.info.compute_units
    }

    fn name(&self) -> String {
        format!("HIP: {} ({})", self.info.name, self.info.gcn_arch_name)
    }

    fn target(&self) -> Option<Target> {
        Some(self.target)
    }

    fn alloc(&self, bytes: u64) -> DeviceResult<DeviceBuffer> {
        self.select()?;
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-parameter call; a zero-byte request is rounded up so every buffer has an
        // address.
        self.api.call("hipMalloc", CallKind::Memory, unsafe {
            (self.api.malloc)(&mut ptr, bytes.max(1) as usize)
        })?;
        let buf = DeviceBuffer {
            addr: ptr as u64,
            size: bytes,
        };
        self.state().buffers.insert(
            buf.addr,
            HipAllocation {
                api: self.api,
                ordinal: self.info.ordinal,
                ptr,
                size: bytes,
            },
        );
        Ok(buf)
    }

    fn free(&self, buf: DeviceBuffer) -> DeviceResult<()> {
        // The allocation's Drop selects the device and frees.
        match self.state().buffers.remove(&buf.addr) {
            Some(_alloc) => Ok(()),
            None => Err(DeviceError::Memory(format!(
                "free of unknown buffer at {:#x}",
                buf.addr
            ))),
        }
    }

    fn copy_to_device(&self, dst: DeviceBuffer, offset: u64, src: &[u8]) -> DeviceResult<()> {
        let state = self.state();
        let p = Self::buffer_ptr(&state, dst, offset, src.len() as u64)?;
        self.select()?;
        // SAFETY: p points at src.len() writable device bytes (checked); src is a valid host
        // slice that HIP only reads.
        self.api.call("hipMemcpyHtoD", CallKind::Memory, unsafe {
            (self.api.memcpy_htod)(p, src.as_ptr() as *mut c_void, src.len())
        })
    }

    fn copy_from_device(&self, src: DeviceBuffer, offset: u64, dst: &mut [u8]) -> DeviceResult<()> {
        let state = self.state();
        let p = Self::buffer_ptr(&state, src, offset, dst.len() as u64)?;
        self.select()?;
        // SAFETY: p points at dst.len() readable device bytes (checked); dst is a valid host
        // slice.
        self.api.call("hipMemcpyDtoH", CallKind::Memory, unsafe {
            (self.api.memcpy_dtoh)(dst.as_mut_ptr() as *mut c_void, p, dst.len())
        })
    }

    fn load_module(&self, code_object: &[u8]) -> DeviceResult<ModuleId> {
        let co = CodeObject::parse(code_object)
            .map_err(|e| DeviceError::BadCodeObject(e.to_string()))?;
        // Loading an object for another architecture fails late or hangs; refuse it up front.
        check_target_matches(&co.target_id(), &self.info.gcn_arch_name)?;
        let mut kernels = HashMap::new();
        for k in &co.kernels {
            let setup = KernelSetup::from_descriptor(&k.descriptor.to_bytes())
                .map_err(|e| DeviceError::BadCodeObject(format!("kernel '{}': {e}", k.name)))?;
            kernels.insert(
                k.meta.name.clone(),
                HipKernel {
                    meta: k.meta.clone(),
                    setup,
                },
            );
        }
        self.select()?;
        let mut module: *mut c_void = std::ptr::null_mut();
        // SAFETY: the image is a complete code object; HIP copies what it needs during the call.
        self.api
            .call("hipModuleLoadData", CallKind::Module, unsafe {
                (self.api.module_load_data)(&mut module, code_object.as_ptr() as *const c_void)
            })?;
        let mut state = self.state();
        state.modules.push(HipModule {
            api: self.api,
            ordinal: self.info.ordinal,
            module,
            kernels,
        });
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
        let k = find_kernel(&m.kernels, kernel)?;
        // The software device's checks, before HIP sees the launch.
        validate_dims(
            &dims,
            &k.setup,
            self.target,
            k.meta.max_flat_workgroup_size,
            k.meta.reqd_workgroup_size,
        )
        .map_err(DeviceError::InvalidLaunch)?;
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
        let segment = pack_explicit(&k.meta, args).map_err(DeviceError::InvalidLaunch)?;
        let mut kernarg = KernargBuffer::new(&segment);
        let mut size: usize = kernarg.len;
        let cname = CString::new(kernel)
            .map_err(|_| DeviceError::InvalidLaunch("kernel name contains NUL".into()))?;
        self.select()?;
        // Events bracket the launch on the NULL stream; their difference is the kernel's time.
        let start = HipEvent::new(self.api, self.info.ordinal)?;
        let stop = HipEvent::new(self.api, self.info.ordinal)?;
        let mut function: *mut c_void = std::ptr::null_mut();
        // SAFETY: module is loaded; cname is NUL-terminated.
        self.api
            .call("hipModuleGetFunction", CallKind::Module, unsafe {
                (self.api.module_get_function)(&mut function, m.module, cname.as_ptr())
            })?;
        // HIP_LAUNCH_PARAM_BUFFER_POINTER / _SIZE / _END are the pointer values 1, 2, 3 in hip's
        // headers.
        let mut extra: [*mut c_void; 5] = [
            std::ptr::without_provenance_mut::<c_void>(1),
            kernarg.as_mut_ptr(),
            std::ptr::without_provenance_mut::<c_void>(2),
            &mut size as *mut usize as *mut c_void,
            std::ptr::without_provenance_mut::<c_void>(3),
        ];
        start.record()?;
        // SAFETY: function is valid; extra follows HIP's documented layout and, like the
        // kernarg buffer it points at, outlives the call.
        self.api
            .call("hipModuleLaunchKernel", CallKind::Launch, unsafe {
                (self.api.module_launch_kernel)(
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
        stop.record()?;
        drop(state);
        stop.synchronize()?;
        self.synchronize()?;
        Ok(LaunchStats {
            device_time_ns: Some(start.elapsed_ns_to(&stop)?),
            ..LaunchStats::default()
        })
    }

    fn synchronize(&self) -> DeviceResult<()> {
        self.select()?;
        // SAFETY: plain call.
        self.api
            .call("hipDeviceSynchronize", CallKind::Sync, unsafe {
                (self.api.device_synchronize)()
            })
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
    fn device_properties_are_read_at_their_offsets() {
        let mut p = vec![0u8; PROPS_BYTES];
        p[..9].copy_from_slice(b"AMD MI300");
        p[PROP_GCN_ARCH_NAME..PROP_GCN_ARCH_NAME + 22].copy_from_slice(b"gfx942:sramecc+:xnack-");
        p[PROP_MULTIPROCESSOR_COUNT..PROP_MULTIPROCESSOR_COUNT + 4]
            .copy_from_slice(&304i32.to_le_bytes());
        p[PROP_SHARED_MEM_PER_BLOCK..PROP_SHARED_MEM_PER_BLOCK + 8]
            .copy_from_slice(&65536u64.to_le_bytes());
        let info = HipDeviceInfo::from_props(2, &p);
        assert_eq!(
            info,
            HipDeviceInfo {
                ordinal: 2,
                name: "AMD MI300".into(),
                gcn_arch_name: "gfx942:sramecc+:xnack-".into(),
                compute_units: 304,
                lds_bytes: 65536,
            }
        );
    }

    #[test]
    fn errors_map_per_call() {
        let e = |code| HipError {
            call: "x",
            code,
            message: "m".into(),
        };
        use CallKind::*;
        assert!(matches!(
            to_device_error(e(2), Memory),
            DeviceError::Memory(_)
        ));
        assert!(matches!(
            to_device_error(e(200), Module),
            DeviceError::BadCodeObject(_)
        ));
        assert!(matches!(
            to_device_error(e(codes::INVALID_CONFIGURATION), Launch),
            DeviceError::InvalidLaunch(_)
        ));
        assert!(matches!(
            to_device_error(e(codes::LAUNCH_OUT_OF_RESOURCES), Launch),
            DeviceError::InvalidLaunch(_)
        ));
        assert!(matches!(
            to_device_error(e(700), Launch),
            DeviceError::Fault(_)
        ));
        assert!(matches!(
            to_device_error(e(719), Sync),
            DeviceError::Fault(_)
        ));
        // "No device" codes, and codes no header of ours names, whatever the call.
        for kind in [Memory, Module, Launch, Sync] {
            assert!(matches!(
                to_device_error(e(codes::NO_DEVICE), kind),
                DeviceError::Unavailable(_)
            ));
        }
        assert!(matches!(
            to_device_error(e(12345), Sync),
            DeviceError::Fault(_)
        ));
    }

    #[test]
    fn event_errors_map_to_memory_timing_or_fault() {
        use codes::*;
        // Out of memory; events never recorded or bad handles (the launch could not be
        // timed); a kernel fault surfacing when waiting for the stop event; no device.
        let table: [(i32, fn(&DeviceError) -> bool); 6] = [
            (OUT_OF_MEMORY, |d| matches!(d, DeviceError::Memory(_))),
            (NOT_READY, |d| matches!(d, DeviceError::Timing(_))),
            (INVALID_HANDLE, |d| matches!(d, DeviceError::Timing(_))),
            (INVALID_VALUE, |d| matches!(d, DeviceError::Timing(_))),
            (LAUNCH_FAILURE, |d| matches!(d, DeviceError::Fault(_))),
            (NO_DEVICE, |d| matches!(d, DeviceError::Unavailable(_))),
        ];
        for (code, want) in table {
            let e = HipError {
                call: "hipEventElapsedTime",
                code,
                message: "m".into(),
            };
            let d = to_device_error(e, CallKind::Event);
            assert!(want(&d), "{code}: {d}");
            assert!(d.to_string().contains("hipEventElapsedTime failed"), "{d}");
        }
    }

    #[test]
    fn elapsed_milliseconds_become_nanoseconds_and_bad_readings_are_errors() {
        assert_eq!(elapsed_to_ns(0.0).unwrap(), 0);
        assert_eq!(elapsed_to_ns(0.0125).unwrap(), 12_500);
        assert_eq!(elapsed_to_ns(3.0).unwrap(), 3_000_000);
        for bad in [-0.5, f32::NAN, f32::INFINITY] {
            assert!(
                matches!(elapsed_to_ns(bad), Err(DeviceError::Timing(_))),
                "{bad}"
            );
        }
    }

    /// Without a GPU, creating an event is an error (not a crash), and the event functions
    /// resolve from the runtime library.
    #[test]
    fn events_without_a_gpu_are_an_error() {
        let Ok(api) = api() else {
            eprintln!("no HIP runtime library here: event calls not made");
            return;
        };
        if discover().is_ok() {
            eprintln!("this machine has a GPU (test meant for GPU-less machines)");
            return;
        }
        match HipEvent::new(api, 0) {
            Err(e) => eprintln!("hipEventCreate without a GPU: {e}"),
            Ok(_) => panic!("hipEventCreate succeeded without a GPU"),
        }
    }

    #[test]
    fn kernarg_buffers_are_8_aligned_and_hold_the_segment() {
        for len in [0usize, 1, 12, 272] {
            let seg: Vec<u8> = (0..len as u32).map(|i| i as u8).collect();
            let mut k = KernargBuffer::new(&seg);
            assert_eq!(k.len, len);
            let p = k.as_mut_ptr();
            assert_eq!(p as usize % 8, 0);
            // SAFETY: the buffer holds at least len bytes.
            let back = unsafe { std::slice::from_raw_parts(p as *const u8, len) };
            assert_eq!(back, &seg[..]);
        }
    }

    #[test]
    fn a_missing_runtime_library_is_a_clear_error() {
        let e = HipApi::load(&["/nonexistent/libamdhip64.so"])
            .err()
            .expect("a missing library loads");
        assert!(
            e.contains("cannot load the HIP runtime (tried /nonexistent/libamdhip64.so)"),
            "{e}"
        );
        // A library without HIP's symbols names the first missing one.
        let e = HipApi::load(&["libc.so.6"]).err().expect("libc is not HIP");
        assert!(e.contains("libc.so.6 has no hipGetDeviceCount"), "{e}");
    }

    #[test]
    fn hip_errors_carry_the_runtime_message() {
        let Ok(api) = api() else {
            eprintln!("no HIP runtime library here: message text not checked");
            return;
        };
        let e = api.check("hipMalloc", 2).unwrap_err();
        assert_eq!((e.call, e.code), ("hipMalloc", 2));
        assert!(!e.message.is_empty(), "hipGetErrorString gave no text");
        assert!(e.to_string().contains("hipMalloc failed"));
        assert!(api.check("x", codes::SUCCESS).is_ok());
        // A code this file does not know is still an error with text, not undefined behaviour.
        let e = api.check("x", 987_654).unwrap_err();
        assert_eq!(e.code, 987_654);
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

    /// On a machine without an AMD GPU (every machine this project is tested on) discovery must
    /// say so cleanly instead of crashing, whether the runtime library is there (no device) or
    /// not (no runtime).
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

//! The quick-start API: compile a builder kernel for a device, move typed data to and from it,
//! and launch with typed arguments checked against the kernel's parameters.
//!
//! It takes a [`Function`] from [`kjit_frontend::KernelBuilder::finish`] and any [`Device`]
//! (kjit's software GCN device, or HIP on a machine with an AMD GPU), and gives back results as
//! `Vec<T>` and each launch's [`LaunchStats`]. Buffers ([`GpuBuffer`]) are freed when dropped.
//!
//! The kjit kernel ABI (docs/backend.md) is handled here, so users never see it: a buffer
//! parameter is passed as its device address and its length in elements (`u32`), a `bool` as a
//! `u32`.

use std::marker::PhantomData;

use kjit_backend_gcn::compile::{compile, CompileOptions, CompiledKernel};
use kjit_backend_gcn::Target;
use kjit_frontend::{f16, Num, Scalar};
use kjit_ir::{ElemType, Function, Param, Type};
use kjit_runtime::emu::{GcnEmulator, RunConfig};
use kjit_runtime::{
    ArgValue, Device, DeviceBuffer, DeviceError, LaunchDims, LaunchStats, ModuleId, SharedDevice,
};

/// Why a compile, a copy or a launch did not happen or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kernel did not compile for the device's target.
    #[error("kernel '{kernel}' for {target}: {message}")]
    Compile {
        /// Kernel name.
        kernel: String,
        /// The target it was compiled for.
        target: Target,
        /// The compiler's error.
        message: String,
    },
    /// The arguments do not fit the kernel's parameters.
    #[error("kernel '{kernel}': {message}")]
    BadArgs {
        /// Kernel name.
        kernel: String,
        /// What is wrong, naming the argument.
        message: String,
    },
    /// The device refused or the kernel faulted (hazards and memory violations included).
    #[error("kernel '{kernel}' on {device}: {source}")]
    Device {
        /// Kernel name (empty for buffer operations).
        kernel: String,
        /// Device name.
        device: String,
        /// The device's error.
        #[source]
        source: DeviceError,
    },
}

/// Element types of device buffers: `i32`, `u32`, `i64`, `u64`, `f16`, `f32`, `f64`.
pub trait Element: Num + Default {
    /// Appends the little-endian bytes of `self`.
    #[doc(hidden)]
    fn put(self, out: &mut Vec<u8>);
    /// The value of the first `size_of::<Self>()` little-endian bytes of `b`.
    #[doc(hidden)]
    fn get(b: &[u8]) -> Self;
}

macro_rules! element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b[..std::mem::size_of::<$t>()].try_into().expect("sized"))
            }
        }
    )*};
}
element!(i32, u32, i64, u64, f16, f32, f64);

/// One launch argument as the checks see it: what it is, not what it holds.
#[derive(Clone, Copy, Debug)]
pub enum ArgShape {
    /// A buffer of `len` elements of `elem`; `writable` when the caller lets the kernel write it.
    Buffer {
        /// Element type.
        elem: ElemType,
        /// Length in elements.
        len: usize,
        /// Whether it was passed mutably.
        writable: bool,
    },
    /// A scalar of this type.
    Scalar(Type),
}

/// Checks launch arguments against a kernel's parameters: count, scalar types, buffer element
/// types, buffer lengths (they must fit the `u32` length argument) and, when `need_mut`, that
/// buffers the kernel may write were passed mutably. Errors name the argument.
pub fn check_arg_shapes(params: &[Param], args: &[ArgShape], need_mut: bool) -> Result<(), String> {
    if args.len() != params.len() {
        return Err(format!(
            "takes {} argument(s), {} given",
            params.len(),
            args.len()
        ));
    }
    for (k, (p, a)) in params.iter().zip(args).enumerate() {
        let at = format!("argument {k} (`{}`)", p.name);
        match (p.ty, *a) {
            (
                Type::Buffer { elem, writable },
                ArgShape::Buffer {
                    elem: got,
                    len,
                    writable: passed_mut,
                },
            ) => {
                if got != elem {
                    return Err(format!("{at}: a buffer of {got} where {} is needed", p.ty));
                }
                if len > u32::MAX as usize {
                    return Err(format!(
                        "{at}: {len} elements do not fit the kernel's 32-bit length"
                    ));
                }
                if need_mut && writable && !passed_mut {
                    return Err(format!(
                        "{at}: the kernel may write this buffer; pass it as `&mut`"
                    ));
                }
            }
            (Type::Buffer { .. }, ArgShape::Scalar(t)) => {
                return Err(format!("{at}: {t} where {} is needed", p.ty));
            }
            (t, ArgShape::Buffer { elem, .. }) => {
                return Err(format!("{at}: a buffer of {elem} where {t} is needed"));
            }
            (t, ArgShape::Scalar(got)) => {
                if got != t {
                    return Err(format!("{at}: {got} where {t} is needed"));
                }
            }
        }
    }
    Ok(())
}

/// One launch argument: a device buffer with its element type and length, or a scalar.
#[derive(Clone, Copy, Debug)]
pub struct LaunchArg {
    /// What the checks compare with the parameter.
    pub shape: ArgShape,
    /// The buffer (for buffer arguments).
    pub buffer: Option<DeviceBuffer>,
    /// The value (for scalar arguments).
    pub value: Option<ArgValue>,
}

impl LaunchArg {
    /// A scalar argument of IR type `ty` (bool is passed as `u32`).
    pub fn scalar(ty: Type, value: ArgValue) -> LaunchArg {
        LaunchArg {
            shape: ArgShape::Scalar(ty),
            buffer: None,
            value: Some(value),
        }
    }

    /// A buffer argument.
    pub fn buffer(buf: DeviceBuffer, elem: ElemType, len: usize, writable: bool) -> LaunchArg {
        LaunchArg {
            shape: ArgShape::Buffer {
                elem,
                len,
                writable,
            },
            buffer: Some(buf),
            value: None,
        }
    }
}

/// Launches `kernel` of `module` on `device` after checking `args` against `params`; each
/// buffer becomes its address and its length. The one launch path of the quick-start API and of
/// [`crate::exec::run_case`].
pub fn launch_checked(
    device: &dyn Device,
    module: ModuleId,
    kernel: &str,
    params: &[Param],
    dims: LaunchDims,
    args: &[LaunchArg],
    need_mut: bool,
) -> Result<LaunchStats, Error> {
    let shapes: Vec<ArgShape> = args.iter().map(|a| a.shape).collect();
    check_arg_shapes(params, &shapes, need_mut).map_err(|message| Error::BadArgs {
        kernel: kernel.to_string(),
        message,
    })?;
    let mut argv = Vec::with_capacity(args.len() * 2);
    for a in args {
        match (a.shape, a.buffer, a.value) {
            (ArgShape::Buffer { len, .. }, Some(buf), _) => {
                argv.push(ArgValue::Buffer(buf));
                argv.push(ArgValue::U32(len as u32));
            }
            (_, _, Some(v)) => argv.push(v),
            _ => {
                return Err(Error::BadArgs {
                    kernel: kernel.to_string(),
                    message: "an argument without a buffer or a value".into(),
                })
            }
        }
    }
    device
        .launch(module, kernel, dims, &argv)
        .map_err(|source| Error::Device {
            kernel: kernel.to_string(),
            device: device.name(),
            source,
        })
}

/// A device with the target kernels are compiled for: the entry point of the quick-start API.
pub struct Gpu {
    device: SharedDevice,
    target: Target,
    options: CompileOptions,
}

impl Gpu {
    /// The default device, chosen quietly: `KJIT_DEVICE=emu|hip` if set, else HIP when an AMD
    /// GPU of a kjit target is present, else kjit's software GCN device (see
    /// [`kjit_runtime::choose`]). A `KJIT_DEVICE` that cannot be had is an error.
    pub fn new() -> Result<Gpu, Error> {
        let chosen = kjit_runtime::try_default_device().map_err(|source| Error::Device {
            kernel: String::new(),
            device: "default device".into(),
            source,
        })?;
        Ok(Gpu::on(chosen.device))
    }

    /// kjit's software GCN device, compiling for gfx942.
    pub fn emu() -> Gpu {
        Gpu::on(Box::new(GcnEmulator::new()))
    }

    /// kjit's software GCN device with a run configuration (schedule, instruction budget,
    /// checks), compiling for gfx942.
    pub fn emu_with(config: RunConfig) -> Gpu {
        Gpu::on(Box::new(GcnEmulator::with_config(config)))
    }

    /// kjit's software GCN device timing every launch on the machine model `model` (`mi300x`,
    /// `mi250x`, `mi210`, `mi25`; see `kjit_backend_gcn::machine`), compiling for the model's
    /// target: each launch's [`LaunchStats::timing`] holds the model's
    /// [`kjit_runtime::timing::TimingReport`] (cycles, seconds, bandwidth, stalls).
    pub fn emu_timed(model: &str) -> Result<Gpu, Error> {
        let m = kjit_backend_gcn::machine::machine_by_name(model).map_err(|e| Error::Device {
            kernel: String::new(),
            device: "kjit GCN device (software)".into(),
            source: DeviceError::Unavailable(e.to_string()),
        })?;
        let gpu = Gpu::emu_with(RunConfig {
            timing: Some(m),
            ..RunConfig::default()
        });
        gpu.with_target(m.target)
    }

    /// Any device; kernels are compiled for its architecture (gfx942 on the software device).
    pub fn on(device: SharedDevice) -> Gpu {
        let target = device.target().unwrap_or(Target::Gfx942);
        Gpu {
            device,
            target,
            options: CompileOptions::default(),
        }
    }

    /// Compiles for `target` instead: any kjit target on the software device; a hardware device
    /// runs only its own.
    pub fn with_target(mut self, target: Target) -> Result<Gpu, Error> {
        if let Some(t) = self.device.target() {
            if t != target {
                return Err(Error::Device {
                    kernel: String::new(),
                    device: self.device.name(),
                    source: DeviceError::InvalidLaunch(format!(
                        "the device runs {t} code, not {target}"
                    )),
                });
            }
        }
        self.target = target;
        Ok(self)
    }

    /// Compiles with these options (optimizer, VGPR budget, checks) from now on.
    pub fn with_options(mut self, options: CompileOptions) -> Gpu {
        self.options = options;
        self
    }

    /// The device.
    pub fn device(&self) -> &dyn Device {
        self.device.as_ref()
    }

    /// The target kernels are compiled for.
    pub fn target(&self) -> Target {
        self.target
    }

    fn device_error(&self, kernel: &str, source: DeviceError) -> Error {
        Error::Device {
            kernel: kernel.to_string(),
            device: self.device.name(),
            source,
        }
    }

    /// Compiles a builder kernel for the device's target and loads it.
    pub fn compile(&self, func: &Function) -> Result<Kernel<'_>, Error> {
        let compiled = compile(func, self.target, &self.options).map_err(|e| Error::Compile {
            kernel: func.name.clone(),
            target: self.target,
            message: e.to_string(),
        })?;
        let module = self
            .device
            .load_module(&compiled.code_object)
            .map_err(|e| self.device_error(&func.name, e))?;
        Ok(Kernel {
            gpu: self,
            module,
            params: func.params.clone(),
            compiled,
        })
    }

    /// A device buffer holding a copy of `data`.
    pub fn to_device<T: Element>(&self, data: &[T]) -> Result<GpuBuffer<'_, T>, Error> {
        let buf = self.alloc::<T>(data.len())?;
        buf.write(data)?;
        Ok(buf)
    }

    /// A device buffer of `len` zeros.
    pub fn zeros<T: Element>(&self, len: usize) -> Result<GpuBuffer<'_, T>, Error> {
        self.to_device(&vec![T::default(); len])
    }

    fn alloc<T: Element>(&self, len: usize) -> Result<GpuBuffer<'_, T>, Error> {
        let bytes = len as u64 * T::ELEM.bytes() as u64;
        // Zero-length buffers still get an address a kernel may be given.
        let buf = self
            .device
            .alloc(bytes.max(4))
            .map_err(|e| self.device_error("", e))?;
        Ok(GpuBuffer {
            gpu: self,
            buf,
            len,
            _t: PhantomData,
        })
    }
}

/// A typed device buffer, freed when dropped.
pub struct GpuBuffer<'g, T: Element> {
    gpu: &'g Gpu,
    buf: DeviceBuffer,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Element> GpuBuffer<'_, T> {
    /// Length in elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device allocation (address and size in bytes).
    pub fn raw(&self) -> DeviceBuffer {
        self.buf
    }

    /// Copies the buffer to the host.
    pub fn to_host(&self) -> Result<Vec<T>, Error> {
        let size = T::ELEM.bytes() as usize;
        let mut bytes = vec![0u8; self.len * size];
        self.gpu
            .device
            .copy_from_device(self.buf, 0, &mut bytes)
            .map_err(|e| self.gpu.device_error("", e))?;
        Ok(bytes.chunks_exact(size).map(T::get).collect())
    }

    /// Overwrites the buffer with `data`, which must have the buffer's length.
    pub fn copy_from_host(&mut self, data: &[T]) -> Result<(), Error> {
        if data.len() != self.len {
            return Err(self.gpu.device_error(
                "",
                DeviceError::Memory(format!(
                    "{} elements copied into a buffer of {}",
                    data.len(),
                    self.len
                )),
            ));
        }
        self.write(data)
    }

    fn write(&self, data: &[T]) -> Result<(), Error> {
        let mut bytes = Vec::with_capacity(data.len() * T::ELEM.bytes() as usize);
        for &x in data {
            x.put(&mut bytes);
        }
        self.gpu
            .device
            .copy_to_device(self.buf, 0, &bytes)
            .map_err(|e| self.gpu.device_error("", e))
    }
}

impl<T: Element> Drop for GpuBuffer<'_, T> {
    fn drop(&mut self) {
        // A failed free leaves nothing to recover; the device reports leaks of its own.
        let _ = self.gpu.device.free(self.buf);
    }
}

/// A kernel compiled for a [`Gpu`] and loaded on it.
pub struct Kernel<'g> {
    gpu: &'g Gpu,
    module: ModuleId,
    params: Vec<Param>,
    compiled: CompiledKernel,
}

impl<'g> Kernel<'g> {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.compiled.name
    }

    /// The compiler's output: code object, assembly, resource header, stage timings.
    pub fn compiled(&self) -> &CompiledKernel {
        &self.compiled
    }

    /// Starts a launch of `dims` (see [`LaunchDims::cover`]); add the arguments in parameter
    /// order with [`Launch::arg`], then [`Launch::run`].
    pub fn launch(&self, dims: LaunchDims) -> Launch<'_, 'g> {
        Launch {
            kernel: self,
            dims,
            args: Vec::new(),
        }
    }
}

/// Something that can be passed to a kernel: `&GpuBuffer<T>` (read-only), `&mut GpuBuffer<T>`
/// (the kernel may write it), or a scalar (`bool`, `i32`, `u32`, `i64`, `u64`, `f16`, `f32`,
/// `f64`).
pub trait KernelArg {
    /// The argument as the launch sees it.
    fn launch_arg(self) -> LaunchArg;
}

impl<T: Element> KernelArg for &GpuBuffer<'_, T> {
    fn launch_arg(self) -> LaunchArg {
        LaunchArg::buffer(self.buf, T::ELEM, self.len, false)
    }
}

impl<T: Element> KernelArg for &mut GpuBuffer<'_, T> {
    fn launch_arg(self) -> LaunchArg {
        LaunchArg::buffer(self.buf, T::ELEM, self.len, true)
    }
}

macro_rules! scalar_arg {
    ($($t:ty => |$x:ident| $v:expr),* $(,)?) => {$(
        impl KernelArg for $t {
            fn launch_arg(self) -> LaunchArg {
                let $x = self;
                LaunchArg::scalar(<$t as Scalar>::TY, $v)
            }
        }
    )*};
}
scalar_arg!(
    bool => |x| ArgValue::U32(x as u32),
    i32 => |x| ArgValue::I32(x),
    u32 => |x| ArgValue::U32(x),
    i64 => |x| ArgValue::I64(x),
    u64 => |x| ArgValue::U64(x),
    f16 => |x| ArgValue::F16(x.to_bits()),
    f32 => |x| ArgValue::F32(x),
    f64 => |x| ArgValue::F64(x),
);

/// A launch being put together: arguments in parameter order, then [`Launch::run`].
pub struct Launch<'a, 'g> {
    kernel: &'a Kernel<'g>,
    dims: LaunchDims,
    args: Vec<LaunchArg>,
}

impl Launch<'_, '_> {
    /// The next argument.
    pub fn arg(mut self, a: impl KernelArg) -> Self {
        self.args.push(a.launch_arg());
        self
    }

    /// LDS bytes on top of the kernel's own, for the launch: the size of the kernel's dynamic
    /// LDS array (`KernelBuilder::dynamic_lds`), which starts where the static arrays end.
    pub fn dynamic_lds(mut self, bytes: u32) -> Self {
        self.dims.dynamic_lds = bytes;
        self
    }

    /// Checks the arguments against the kernel's parameters (count, types, buffer element types
    /// and lengths, `&mut` for buffers the kernel may write), runs the kernel, waits for it and
    /// returns the device's counters.
    pub fn run(self) -> Result<LaunchStats, Error> {
        let k = self.kernel;
        launch_checked(
            k.gpu.device(),
            k.module,
            &k.compiled.name,
            &k.params,
            self.dims,
            &self.args,
            true,
        )
    }
}

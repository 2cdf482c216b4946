//! The test harness's adapter: running a compiled kernel on a [`Device`] with the arguments of a
//! [`kjit_kernels::Case`], the way the CLI's `kjit run` and the differential tests do it. It
//! launches through the quick-start API's checked path ([`crate::gpu::launch_checked`]); programs
//! of one's own use [`crate::Gpu`] instead, with typed buffers and arguments.
//!
//! The kjit kernel ABI (docs/backend.md): a buffer parameter is two explicit arguments, its
//! device address and its length in elements (`u32`); a `bool` is passed as a `u32` 0/1. Buffers
//! are copied to the device with their case contents (output-only buffers already hold the
//! case's poison pattern, so elements the kernel does not write show up), the kernel runs, and
//! every buffer is read back, so the result can go straight to [`kjit_kernels::check`].

use crate::gpu::{check_arg_shapes, launch_checked, ArgShape, LaunchArg};
use kjit_ir::interp::{Arg, BufferData};
use kjit_ir::{Function, Type};
use kjit_kernels::Case;
use kjit_runtime::{ArgValue, Device, DeviceBuffer, DeviceError, LaunchDims, LaunchStats};

/// Why a run did not happen or did not finish (the quick-start API's error).
pub type ExecError = crate::gpu::Error;

/// What a run gives back.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The case's arguments after the run: buffers hold what the device holds.
    pub args: Vec<Arg>,
    /// The buffers listed in `case.outputs`, in order.
    pub outputs: Vec<BufferData>,
    /// The device's counters (of the last launch).
    pub stats: LaunchStats,
    /// Every launch's device-measured time, ns ([`LaunchStats::device_time_ns`]), in launch
    /// order; empty on a device that does not time its launches (the software device).
    pub device_times_ns: Vec<u64>,
}

/// What the argument checks see of an interpreter argument.
fn shape(a: &Arg) -> ArgShape {
    match a {
        Arg::Buffer(b) => ArgShape::Buffer {
            elem: b.elem(),
            len: b.len(),
            writable: true,
        },
        s => ArgShape::Scalar(shape_type(s)),
    }
}

/// Checks that `args` fit `func`'s parameters (count, scalar types, buffer element types and
/// lengths), with the quick-start API's checks.
pub fn check_args(func: &Function, args: &[Arg]) -> Result<(), String> {
    let shapes: Vec<ArgShape> = args.iter().map(shape).collect();
    check_arg_shapes(&func.params, &shapes, false)
}

fn shape_type(a: &Arg) -> Type {
    a.scalar_type().unwrap_or(Type::U32)
}

fn scalar_arg(a: &Arg) -> ArgValue {
    match a {
        Arg::Bool(b) => ArgValue::U32(*b as u32),
        Arg::I32(x) => ArgValue::I32(*x),
        Arg::U32(x) => ArgValue::U32(*x),
        Arg::I64(x) => ArgValue::I64(*x),
        Arg::U64(x) => ArgValue::U64(*x),
        Arg::F16(x) => ArgValue::F16(x.to_bits()),
        Arg::F32(x) => ArgValue::F32(*x),
        Arg::F64(x) => ArgValue::F64(*x),
        Arg::Buffer(_) => unreachable!("buffers are passed as address and length"),
    }
}

/// Runs kernel `func.name` of `code_object` on `device` with `case`'s arguments and launch shape.
pub fn run_case(
    device: &dyn Device,
    code_object: &[u8],
    func: &Function,
    case: &Case,
) -> Result<RunOutput, ExecError> {
    run_case_repeated(device, code_object, func, case, 1)
}

/// [`run_case`], launching `runs` times (at least once) from the module loaded once. Before
/// every launch the buffers are copied in again from the case, so each launch computes the
/// same thing even when the kernel updates a buffer in place; the output is the last launch's.
pub fn run_case_repeated(
    device: &dyn Device,
    code_object: &[u8],
    func: &Function,
    case: &Case,
    runs: u32,
) -> Result<RunOutput, ExecError> {
    let kernel = func.name.clone();
    let bad = |message: String| ExecError::BadArgs {
        kernel: kernel.clone(),
        message,
    };
    check_args(func, &case.args).map_err(&bad)?;
    for &o in &case.outputs {
        if !matches!(case.args.get(o), Some(Arg::Buffer(_))) {
            return Err(bad(format!("output {o} is not a buffer argument")));
        }
    }
    let dev_err = |source: DeviceError| ExecError::Device {
        kernel: kernel.clone(),
        device: device.name(),
        source,
    };
    let mut allocated: Vec<(usize, DeviceBuffer)> = Vec::new();
    let result = (|| {
        let mut launch_args = Vec::new();
        for (k, a) in case.args.iter().enumerate() {
            match a {
                Arg::Buffer(b) => {
                    let buf = device
                        .alloc(b.to_bytes().len().max(4) as u64)
                        .map_err(dev_err)?;
                    allocated.push((k, buf));
                    launch_args.push(LaunchArg::buffer(buf, b.elem(), b.len(), true));
                }
                s => launch_args.push(LaunchArg::scalar(shape_type(s), scalar_arg(s))),
            }
        }
        let module = device.load_module(code_object).map_err(dev_err)?;
        let dims = LaunchDims::new(case.launch.grid, case.launch.block);
        let mut device_times_ns = Vec::new();
        let mut stats = LaunchStats::default();
        for _ in 0..runs.max(1) {
            for &(k, buf) in &allocated {
                if let Arg::Buffer(b) = &case.args[k] {
                    device
                        .copy_to_device(buf, 0, &b.to_bytes())
                        .map_err(dev_err)?;
                }
            }
            stats = launch_checked(
                device,
                module,
                &kernel,
                &func.params,
                dims,
                &launch_args,
                false,
            )?;
            device_times_ns.extend(stats.device_time_ns);
        }
        let mut args = case.args.clone();
        for &(k, buf) in &allocated {
            let Arg::Buffer(b) = &case.args[k] else {
                continue;
            };
            let mut bytes = vec![0u8; b.to_bytes().len()];
            device
                .copy_from_device(buf, 0, &mut bytes)
                .map_err(dev_err)?;
            let data = BufferData::from_bytes(b.elem(), &bytes).map_err(&bad)?;
            args[k] = Arg::Buffer(data);
        }
        let outputs = case
            .outputs
            .iter()
            .filter_map(|&o| args[o].as_buffer().cloned())
            .collect();
        Ok(RunOutput {
            args,
            outputs,
            stats,
            device_times_ns,
        })
    })();
    for (_, buf) in allocated {
        let _ = device.free(buf);
    }
    result
}

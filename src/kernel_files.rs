//! Kernels as files, for the CLI's tools and for programs: one call writes a builder kernel's
//! IR text, assembly and code object ([`write_kernel_files`]); one function turns a command-line
//! kernel argument, a library kernel's name or the path of an IR text file, into a kernel with
//! random inputs and a reference to check a run against ([`resolve_kernel`]).
//!
//! An IR text file is the IR's text form (`kjit dump --ir`, `kjit_ir::parse`), by convention
//! `NAME.kir`. Such a kernel has no CPU reference: its runs are checked against the IR
//! interpreter on the same inputs.

use std::path::{Path, PathBuf};

use kjit_backend_gcn::compile::{compile, CompileOptions};
use kjit_backend_gcn::Target;
use kjit_ir::interp::{self, Arg, BufferData};
use kjit_ir::{Function, Type};
use kjit_kernels::{Case, KernelSpec, Tolerance};
use rand::RngExt;

/// The extension of IR text files.
pub const IR_EXTENSION: &str = "kir";

/// The files [`write_kernel_files`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelFiles {
    /// The IR text (`NAME.kir`), readable by `kjit dump/build/run`.
    pub ir: PathBuf,
    /// The assembly with its resource header (`NAME.s`); `llvm-mc-19` re-assembles it.
    pub asm: PathBuf,
    /// The code object (`NAME.hsaco`), loadable by `kjit emu run` and HIP.
    pub code_object: PathBuf,
}

/// Compiles `func` for `target` and writes `NAME.kir`, `NAME.s` and `NAME.hsaco` into `dir`
/// (created if missing), `NAME` being the kernel's name.
pub fn write_kernel_files(
    func: &Function,
    target: Target,
    options: &CompileOptions,
    dir: &Path,
) -> Result<KernelFiles, String> {
    let k = compile(func, target, options)
        .map_err(|e| format!("compiling {} for {target}: {e}", func.name))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let files = KernelFiles {
        ir: dir.join(format!("{}.{IR_EXTENSION}", func.name)),
        asm: dir.join(format!("{}.s", func.name)),
        code_object: dir.join(format!("{}.hsaco", func.name)),
    };
    for (path, bytes) in [
        (&files.ir, func.to_string().into_bytes()),
        (&files.asm, String::from(k.asm).into_bytes()),
        (&files.code_object, k.code_object),
    ] {
        std::fs::write(path, bytes).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(files)
}

/// A kernel named on a command line: from the library, or from an IR text file.
pub struct ResolvedKernel {
    /// Its verified IR.
    pub func: Function,
    /// The library entry, for a library kernel.
    pub spec: Option<&'static KernelSpec>,
    /// Where it came from: the library name or the file's path.
    pub source: String,
}

/// How close a run of an IR file's kernel must be to the IR interpreter: the device's
/// transcendental instructions and divide may differ from the interpreter's in the last bits.
pub const IR_FILE_TOLERANCE: Tolerance = Tolerance {
    abs: 1e-6,
    rel: 1e-5,
};

/// Problem size of an IR file's kernel when none is given.
pub const IR_FILE_DEFAULT_N: usize = 4096;

/// The kernel `arg` names: a path to an existing file or one ending in `.kir` is read as IR text
/// (parsed and verified, errors with the file and line); anything else is a library kernel's
/// name. The one place the CLI's tools (`dump`, `build`, `run`, `tune`) resolve a kernel.
pub fn resolve_kernel(arg: &str) -> Result<ResolvedKernel, String> {
    let path = Path::new(arg);
    let is_file = path.is_file()
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case(IR_EXTENSION));
    if is_file {
        let text = std::fs::read_to_string(path).map_err(|e| format!("reading {arg}: {e}"))?;
        let func = kjit_ir::parse::parse_function(&text).map_err(|e| format!("{arg}: {e}"))?;
        kjit_ir::verify(&func).map_err(|e| format!("{arg}: the IR does not verify: {e}"))?;
        return Ok(ResolvedKernel {
            func,
            spec: None,
            source: arg.to_string(),
        });
    }
    let spec = kjit_kernels::find(arg).ok_or_else(|| {
        let names: Vec<&str> = kjit_kernels::all().iter().map(|k| k.name).collect();
        format!(
            "unknown kernel `{arg}` (known: {}; or the path of an IR text file, NAME.{IR_EXTENSION})",
            names.join(", ")
        )
    })?;
    let func = (spec.build)().map_err(|e| format!("building {}: {e}", spec.name))?;
    Ok(ResolvedKernel {
        func,
        spec: Some(spec),
        source: arg.to_string(),
    })
}

impl ResolvedKernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.func.name
    }

    /// The problem size when none is given.
    pub fn default_n(&self) -> usize {
        self.spec.map_or(IR_FILE_DEFAULT_N, |s| s.default_n)
    }

    /// How close a run must be to [`ResolvedKernel::reference`].
    pub fn tolerance(&self) -> Tolerance {
        self.spec.map_or(IR_FILE_TOLERANCE, |s| s.tolerance)
    }

    /// Random inputs of size `n` from `seed` and a launch shape: the library's own case, or for
    /// an IR file one work-item per element in workgroups of 256, every buffer `n` elements
    /// (floats uniform in `[-1, 1)`, integers in `[0, n)`), integer scalars `n`, float scalars
    /// uniform in `[-1, 1)`, and every writable buffer an output.
    pub fn case(&self, n: usize, seed: u64) -> Case {
        if let Some(spec) = self.spec {
            return (spec.make_case)(n, seed);
        }
        let mut rng = kjit_kernels::rng(seed);
        let mut outputs = Vec::new();
        let args = self
            .func
            .params
            .iter()
            .enumerate()
            .map(|(k, p)| match p.ty {
                Type::Buffer { elem, writable } => {
                    if writable {
                        outputs.push(k);
                    }
                    let mut b = BufferData::zeros(elem, n);
                    for i in 0..n {
                        let bits = if elem.ty().is_float() {
                            float_bits(elem.ty(), rng.random_range(-1.0..1.0))
                        } else {
                            rng.random_range(0..n.max(1) as u64)
                        };
                        b.set_bits(i, bits);
                    }
                    Arg::Buffer(b)
                }
                t => scalar(t, n, &mut rng),
            })
            .collect();
        let dims = crate::LaunchDims::cover(n, 256);
        Case {
            n,
            args,
            launch: interp::LaunchDims {
                grid: dims.grid,
                block: dims.block,
                dynamic_lds: 0,
            },
            outputs,
        }
    }

    /// What `case.outputs` should hold after a run: the library's CPU reference, or the IR
    /// interpreter's result for an IR file.
    pub fn reference(&self, case: &Case) -> Result<Vec<BufferData>, String> {
        if let Some(spec) = self.spec {
            return Ok((spec.reference)(case));
        }
        let mut args = case.args.clone();
        interp::run(&self.func, &case.launch, &mut args)
            .map_err(|e| format!("{} in the IR interpreter: {e}", self.func.name))?;
        Ok(case
            .outputs
            .iter()
            .filter_map(|&o| args[o].as_buffer().cloned())
            .collect())
    }
}

/// The bits of `x` as a float of type `t`.
fn float_bits(t: Type, x: f64) -> u64 {
    match t {
        Type::F16 => kjit_frontend::f16::from_f64(x).to_bits() as u64,
        Type::F32 => (x as f32).to_bits() as u64,
        _ => x.to_bits(),
    }
}

/// A scalar argument for an IR file's kernel of size `n`.
fn scalar(t: Type, n: usize, rng: &mut rand::rngs::StdRng) -> Arg {
    match t {
        Type::Bool => Arg::Bool(true),
        Type::I32 => Arg::I32(n as i32),
        Type::U32 => Arg::U32(n as u32),
        Type::I64 => Arg::I64(n as i64),
        Type::U64 => Arg::U64(n as u64),
        Type::F16 => Arg::F16(kjit_frontend::f16::from_f32(rng.random_range(-1.0..1.0))),
        Type::F32 => Arg::F32(rng.random_range(-1.0..1.0)),
        _ => Arg::F64(rng.random_range(-1.0..1.0)),
    }
}

//! `kjit emu run`: run a kernel of any gfx9 code object on kjit's software GCN device.
//!
//! ```text
//! kjit emu run CODE_OBJECT --kernel NAME --grid X[,Y[,Z]] --block X[,Y[,Z]] [--lds BYTES]
//!              [--arg SPEC]... [--out N=PATH]... [--stats] [--schedule round-robin|random:SEED]
//!              [--max-instructions N] [--bounds-check]
//! SPEC: buf:PATH | zeros:BYTES | i32:V | u32:V | i64:V | u64:V | f16:V | f32:V | f64:V
//! ```
//! `--grid` counts workgroups (as `hipModuleLaunchKernel`). `--out N=PATH` writes the final bytes
//! of the buffer passed as the N-th `--arg` (0-based). The arguments are checked against the
//! kernel's metadata (`kjit_runtime::check_args`). For a kjit kernel, whose buffer `x` is followed
//! by its length `x.len` in elements, the lengths may be left out: each is then the buffer's
//! size over its element size. On success one summary line is printed (kernel, grid and block,
//! waves, instructions, time); `--stats` adds the counters. Errors (bad input, a fault, a hazard,
//! an unsupported instruction) end the command with a one-line reason and a non-zero status.

use std::path::PathBuf;

use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use kjit_backend_gcn::codeobj::{ArgMeta, CodeObject, KernelMeta};
use kjit_runtime::emu::{GcnEmulator, RunConfig, Schedule};
use kjit_runtime::{ArgValue, Device, DeviceBuffer, LaunchDims};

/// `kjit emu ...`
#[derive(Subcommand, Debug)]
pub enum EmuCommand {
    /// Run a kernel of a code object on the software GCN device.
    Run(RunArgs),
}

/// Arguments of `kjit emu run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The code object (an ELF from clang/ld.lld, Triton or kjit).
    pub code_object: PathBuf,
    /// Kernel name (as in the code object's metadata).
    #[arg(long)]
    pub kernel: String,
    /// Workgroups per dimension: X[,Y[,Z]].
    #[arg(long)]
    pub grid: String,
    /// Work-items per workgroup: X[,Y[,Z]].
    #[arg(long)]
    pub block: String,
    /// Dynamic LDS bytes on top of the kernel's static LDS.
    #[arg(long, default_value_t = 0)]
    pub lds: u32,
    /// Explicit kernel arguments, in order: buf:PATH | zeros:BYTES | i32:V | u32:V | i64:V |
    /// u64:V | f16:V | f32:V | f64:V.
    #[arg(long = "arg")]
    pub args: Vec<String>,
    /// N=PATH: write the final bytes of the buffer given as the N-th --arg (0-based) to PATH.
    #[arg(long = "out")]
    pub outs: Vec<String>,
    /// Print the launch statistics.
    #[arg(long)]
    pub stats: bool,
    /// Wave interleaving: round-robin or random:SEED.
    #[arg(long, default_value = "round-robin")]
    pub schedule: String,
    /// Instructions one wave may execute before the launch fails (catches infinite loops).
    #[arg(long, default_value_t = RunConfig::default().max_instructions_per_wave)]
    pub max_instructions: u64,
    /// Do not check wait states (`s_nop` hazards): for code meant only for the software device,
    /// or to measure what the checks cost.
    #[arg(long)]
    pub no_wait_state_checks: bool,
    /// Time the launch on this machine model (mi300x, mi250x, mi210, mi25) and print its
    /// report: cycles, bandwidth, occupancy, stalls by cause, hottest instructions.
    #[arg(long)]
    pub timing: Option<String>,
    /// With `--timing`: print the timing report as one JSON object instead of text.
    #[arg(long, requires = "timing")]
    pub json: bool,
    /// Report the first buffer access outside its descriptor's range (wave, pc, lane, address,
    /// buffer) as an error instead of loading 0 / dropping the store.
    #[arg(long)]
    pub bounds_check: bool,
    /// Dispatch as firmware without kernarg preloading: a kernel that preloads its arguments
    /// starts at its entry, where its compatibility prologue loads them.
    #[arg(long)]
    pub legacy_kernarg_firmware: bool,
}

/// One parsed `--arg`.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgSpec {
    /// A buffer initialised from a file.
    File(PathBuf),
    /// A zeroed buffer of this many bytes.
    Zeros(u64),
    /// A by-value argument.
    Value(ArgValue),
}

/// Parses `X[,Y[,Z]]` into three dimensions (missing ones are 1).
pub fn parse_dims(s: &str, what: &str) -> Result<[u32; 3]> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.is_empty() || parts.len() > 3 {
        bail!("--{what} '{s}': expected X[,Y[,Z]]");
    }
    let mut d = [1u32; 3];
    for (i, p) in parts.iter().enumerate() {
        d[i] = p
            .trim()
            .parse::<u32>()
            .map_err(|_| anyhow!("--{what} '{s}': '{p}' is not a positive integer"))?;
        if d[i] == 0 {
            bail!("--{what} '{s}': dimensions must be at least 1");
        }
    }
    Ok(d)
}

fn parse_int<T: std::str::FromStr>(v: &str, spec: &str) -> Result<T> {
    let v = v.trim();
    let parsed = if let Some(hex) = v.strip_prefix("0x") {
        u64::from_str_radix(hex, 16)
            .ok()
            .and_then(|x| x.to_string().parse::<T>().ok())
    } else {
        v.parse::<T>().ok()
    };
    parsed.ok_or_else(|| anyhow!("--arg '{spec}': '{v}' does not fit the type"))
}

/// Parses one `--arg SPEC`.
pub fn parse_arg(spec: &str) -> Result<ArgSpec> {
    let (kind, v) = spec.split_once(':').ok_or_else(|| {
        anyhow!(
            "--arg '{spec}': expected KIND:VALUE (buf, zeros, i32, u32, i64, u64, f16, f32, f64)"
        )
    })?;
    Ok(match kind {
        "buf" => ArgSpec::File(PathBuf::from(v)),
        "zeros" => ArgSpec::Zeros(parse_int::<u64>(v, spec)?),
        "i32" => ArgSpec::Value(ArgValue::I32(parse_int(v, spec)?)),
        "u32" => ArgSpec::Value(ArgValue::U32(parse_int(v, spec)?)),
        "i64" => ArgSpec::Value(ArgValue::I64(parse_int(v, spec)?)),
        "u64" => ArgSpec::Value(ArgValue::U64(parse_int(v, spec)?)),
        "f16" => {
            let x: f32 = v
                .trim()
                .parse()
                .map_err(|_| anyhow!("--arg '{spec}': '{v}' is not a number"))?;
            ArgSpec::Value(ArgValue::F16(half::f16::from_f32(x).to_bits()))
        }
        "f32" => ArgSpec::Value(ArgValue::F32(
            v.trim()
                .parse()
                .map_err(|_| anyhow!("--arg '{spec}': '{v}' is not a number"))?,
        )),
        "f64" => ArgSpec::Value(ArgValue::F64(
            v.trim()
                .parse()
                .map_err(|_| anyhow!("--arg '{spec}': '{v}' is not a number"))?,
        )),
        _ => bail!(
            "--arg '{spec}': unknown kind '{kind}' (buf, zeros, i32, u32, i64, u64, f16, f32, f64)"
        ),
    })
}

/// Parses `--out N=PATH`.
pub fn parse_out(s: &str) -> Result<(usize, PathBuf)> {
    let (n, p) = s
        .split_once('=')
        .ok_or_else(|| anyhow!("--out '{s}': expected N=PATH"))?;
    let n = n
        .trim()
        .parse::<usize>()
        .map_err(|_| anyhow!("--out '{s}': '{n}' is not an argument index"))?;
    Ok((n, PathBuf::from(p)))
}

/// The element size of a kjit buffer argument `m` when the kernel's next explicit argument is
/// its length (`NAME.len`, kjit's kernel ABI), else `None`.
fn kjit_length_follows(m: &ArgMeta, next: Option<&ArgMeta>) -> Option<u32> {
    let (name, next_name) = (m.name.as_deref()?, next?.name.as_deref()?);
    if next_name != format!("{name}.len") {
        return None;
    }
    let elem = m.type_name.as_deref()?.trim().strip_suffix('*')?;
    let elem = elem.trim().strip_prefix("const ").unwrap_or(elem).trim();
    kjit_runtime::args::scalar_type(elem).map(|t| t.bytes)
}

/// Where each kernel argument comes from: the `--arg` with this index, or the length of the
/// buffer `--arg` with this index (in elements of this many bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgSource {
    /// `--arg` number N.
    Given(usize),
    /// The element count of the buffer given as `--arg` number N.
    LengthOf(usize, u32),
}

/// Matches the `--arg` values to the kernel's explicit arguments. With as many values as
/// arguments they are taken in order; with fewer, every kjit length argument that follows a
/// buffer value is filled in from that buffer's size.
pub fn arg_sources(meta: &KernelMeta, specs: &[ArgSpec]) -> Vec<ArgSource> {
    let explicit: Vec<&ArgMeta> = meta.explicit_args().collect();
    if specs.len() >= explicit.len() {
        return (0..specs.len()).map(ArgSource::Given).collect();
    }
    let mut sources = Vec::with_capacity(explicit.len());
    let mut next = 0usize;
    let mut k = 0usize;
    while k < explicit.len() && next < specs.len() {
        let given = next;
        sources.push(ArgSource::Given(given));
        next += 1;
        let is_buffer = matches!(specs[given], ArgSpec::File(_) | ArgSpec::Zeros(_));
        match kjit_length_follows(explicit[k], explicit.get(k + 1).copied()) {
            Some(elem) if is_buffer => {
                sources.push(ArgSource::LengthOf(given, elem));
                k += 2;
            }
            _ => k += 1,
        }
    }
    sources.extend((next..specs.len()).map(ArgSource::Given));
    sources
}

/// Runs `kjit emu ...`. A failure prints one line (`error: ...`) and exits with status 1, so
/// that scripts and CI logs see the reason, not a backtrace.
pub fn run(cmd: EmuCommand) -> Result<()> {
    let r = match cmd {
        EmuCommand::Run(a) => run_kernel(a),
    };
    if let Err(e) = r {
        let msg = format!("{e:#}").replace('\n', " ");
        eprintln!("error: {msg}");
        std::process::exit(1);
    }
    Ok(())
}

fn run_kernel(a: RunArgs) -> Result<()> {
    let grid = parse_dims(&a.grid, "grid")?;
    let block = parse_dims(&a.block, "block")?;
    let schedule: Schedule = a
        .schedule
        .parse()
        .map_err(|e: String| anyhow!("--schedule: {e}"))?;
    let specs = a
        .args
        .iter()
        .map(|s| parse_arg(s))
        .collect::<Result<Vec<_>>>()?;
    let outs = a
        .outs
        .iter()
        .map(|s| parse_out(s))
        .collect::<Result<Vec<_>>>()?;
    for (n, _) in &outs {
        match specs.get(*n) {
            Some(ArgSpec::File(_) | ArgSpec::Zeros(_)) => {}
            Some(_) => bail!("--out {n}=...: argument {n} is not a buffer"),
            None => bail!("--out {n}=...: there are only {} --arg values", specs.len()),
        }
    }
    let code = std::fs::read(&a.code_object)
        .with_context(|| format!("cannot read {}", a.code_object.display()))?;
    let timing = a
        .timing
        .as_deref()
        .map(kjit_backend_gcn::machine::machine_by_name)
        .transpose()
        .map_err(|e| anyhow!("--timing: {e}"))?;
    let co = CodeObject::parse(&code).with_context(|| format!("{}", a.code_object.display()))?;
    let dev = GcnEmulator::with_config(RunConfig {
        schedule,
        max_instructions_per_wave: a.max_instructions,
        check_wait_states: !a.no_wait_state_checks,
        timing,
        bounds_check: a.bounds_check,
        legacy_kernarg_firmware: a.legacy_kernarg_firmware,
        ..RunConfig::default()
    });
    let module = dev.load_module(&code)?;
    let mut given = Vec::with_capacity(specs.len());
    let mut buffers: Vec<Option<DeviceBuffer>> = Vec::with_capacity(specs.len());
    for s in &specs {
        match s {
            ArgSpec::File(p) => {
                let bytes =
                    std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
                let b = dev.alloc(bytes.len() as u64)?;
                dev.copy_to_device(b, 0, &bytes)?;
                given.push(ArgValue::Buffer(b));
                buffers.push(Some(b));
            }
            ArgSpec::Zeros(n) => {
                let b = dev.alloc(*n)?;
                dev.copy_to_device(b, 0, &vec![0u8; *n as usize])?;
                given.push(ArgValue::Buffer(b));
                buffers.push(Some(b));
            }
            ArgSpec::Value(v) => {
                given.push(*v);
                buffers.push(None);
            }
        }
    }
    // An unknown kernel is left to the launch, which lists the kernels there are.
    let sources = match co.kernel(&a.kernel) {
        Some(k) => arg_sources(&k.meta, &specs),
        None => (0..specs.len()).map(ArgSource::Given).collect(),
    };
    let mut values = Vec::with_capacity(sources.len());
    for src in sources {
        values.push(match src {
            ArgSource::Given(n) => given[n],
            ArgSource::LengthOf(n, elem) => {
                let size = buffers[n].map(|b| b.size).unwrap_or(0);
                if !size.is_multiple_of(elem as u64) {
                    bail!(
                        "--arg {}: {size} bytes is not a whole number of {elem}-byte elements (give its length explicitly)",
                        a.args[n]
                    );
                }
                let len = u32::try_from(size / elem as u64)
                    .map_err(|_| anyhow!("--arg {}: more than 2^32 elements", a.args[n]))?;
                ArgValue::U32(len)
            }
        });
    }
    let dims = LaunchDims {
        grid,
        block,
        dynamic_lds: a.lds,
    };
    let start = Instant::now();
    let stats = dev.launch(module, &a.kernel, dims, &values)?;
    let elapsed = start.elapsed();
    for (n, path) in outs {
        let b = buffers[n].ok_or_else(|| anyhow!("--out {n}: not a buffer"))?;
        let mut bytes = vec![0u8; b.size as usize];
        dev.copy_from_device(b, 0, &mut bytes)?;
        std::fs::write(&path, &bytes)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let instructions =
        stats.salu + stats.valu + stats.vmem + stats.smem + stats.lds + stats.branch + stats.mfma;
    println!(
        "{} on kjit's GCN device ({}): grid {}x{}x{} of {}x{}x{}, {} waves, {} wave-instructions, {:.1} ms",
        a.kernel,
        co.target,
        grid[0],
        grid[1],
        grid[2],
        block[0],
        block[1],
        block[2],
        stats.waves,
        instructions,
        elapsed.as_secs_f64() * 1e3
    );
    if a.stats {
        println!("waves:            {}", stats.waves);
        println!(
            "instructions:     salu {} valu {} vmem {} smem {} lds {} branch {} mfma {}",
            stats.salu, stats.valu, stats.vmem, stats.smem, stats.lds, stats.branch, stats.mfma
        );
        println!("lane-operations:  {}", stats.lane_ops);
        println!("bytes read:       {}", stats.bytes_read);
        println!("bytes written:    {}", stats.bytes_written);
        println!("hazard checks:    {}", stats.hazard_checks);
        println!("LDS same-value writes: {}", stats.lds_same_value_writes);
    }
    if let Some(t) = &stats.timing {
        if a.json {
            println!("{}", t.to_json());
        } else {
            print!("{t}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_reject_bad_input() {
        assert_eq!(parse_dims("64", "grid").unwrap(), [64, 1, 1]);
        assert_eq!(parse_dims("8,4,2", "grid").unwrap(), [8, 4, 2]);
        assert!(parse_dims("8,0", "grid").is_err());
        assert!(parse_dims("1,2,3,4", "grid").is_err());
        assert!(parse_dims("x", "block").is_err());
        assert_eq!(
            parse_arg("i32:-5").unwrap(),
            ArgSpec::Value(ArgValue::I32(-5))
        );
        assert_eq!(
            parse_arg("u32:0x10").unwrap(),
            ArgSpec::Value(ArgValue::U32(16))
        );
        assert_eq!(parse_arg("zeros:4096").unwrap(), ArgSpec::Zeros(4096));
        assert_eq!(
            parse_arg("f16:1.5").unwrap(),
            ArgSpec::Value(ArgValue::F16(0x3e00))
        );
        assert!(parse_arg("u32:-1").is_err());
        assert!(parse_arg("i32:99999999999").is_err());
        assert!(parse_arg("f32:abc").is_err());
        assert!(parse_arg("ptr:1").is_err());
        assert!(parse_arg("nocolon").is_err());
        assert_eq!(parse_out("2=/tmp/x").unwrap(), (2, PathBuf::from("/tmp/x")));
        assert!(parse_out("a=/tmp/x").is_err());
    }
}

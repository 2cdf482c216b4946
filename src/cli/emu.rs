//! `kjit emu run`: run a kernel of any gfx9 code object on kjit's software GCN device.
//!
//! ```text
//! kjit emu run CODE_OBJECT --kernel NAME --grid X[,Y[,Z]] --block X[,Y[,Z]] [--lds BYTES]
//!              [--arg SPEC]... [--out N=PATH]... [--stats] [--schedule round-robin|random:SEED]
//!              [--max-instructions N]
//! SPEC: buf:PATH | zeros:BYTES | i32:V | u32:V | i64:V | u64:V | f16:V | f32:V | f64:V
//! ```
//! `--grid` counts workgroups (as `hipModuleLaunchKernel`). `--out N=PATH` writes the final bytes
//! of the buffer passed as the N-th `--arg` (0-based). Errors (bad input, a fault, a hazard, an
//! unsupported instruction) end the command with a one-line reason and a non-zero status.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
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
    let dev = GcnEmulator::with_config(RunConfig {
        schedule,
        max_instructions_per_wave: a.max_instructions,
        check_wait_states: !a.no_wait_state_checks,
        timing,
        ..RunConfig::default()
    });
    let module = dev.load_module(&code)?;
    let mut values = Vec::with_capacity(specs.len());
    let mut buffers: Vec<Option<DeviceBuffer>> = Vec::with_capacity(specs.len());
    for s in &specs {
        match s {
            ArgSpec::File(p) => {
                let bytes =
                    std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
                let b = dev.alloc(bytes.len() as u64)?;
                dev.copy_to_device(b, 0, &bytes)?;
                values.push(ArgValue::Buffer(b));
                buffers.push(Some(b));
            }
            ArgSpec::Zeros(n) => {
                let b = dev.alloc(*n)?;
                dev.copy_to_device(b, 0, &vec![0u8; *n as usize])?;
                values.push(ArgValue::Buffer(b));
                buffers.push(Some(b));
            }
            ArgSpec::Value(v) => {
                values.push(*v);
                buffers.push(None);
            }
        }
    }
    let dims = LaunchDims {
        grid,
        block,
        dynamic_lds: a.lds,
    };
    let stats = dev.launch(module, &a.kernel, dims, &values)?;
    for (n, path) in outs {
        let b = buffers[n].ok_or_else(|| anyhow!("--out {n}: not a buffer"))?;
        let mut bytes = vec![0u8; b.size as usize];
        dev.copy_from_device(b, 0, &mut bytes)?;
        std::fs::write(&path, &bytes)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
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

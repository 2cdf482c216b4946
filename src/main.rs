//! The `kjit` command-line tool.
use clap::{Parser, Subcommand};

mod cli;

#[derive(Parser)]
#[command(
    name = "kjit",
    version,
    about = "kjit: Rust GPU kernels to AMD GCN/CDNA machine code"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version of kjit and the targets it supports.
    Targets,
    /// List every kernel of a code object: descriptor summary and instructions.
    Disasm(cli::disasm::DisasmArgs),
    /// Run kernels of code objects on kjit's software GCN device.
    #[command(subcommand)]
    Emu(cli::emu::EmuCommand),
    /// List the kernels of the kernel library.
    List,
    /// Show the devices kjit can run on and which one is the default.
    Devices(cli::devices::DevicesArgs),
    /// Run a library kernel on random inputs and check it against its CPU reference.
    Run(cli::kernels::RunArgs),
    /// Print a library kernel's IR, optimized IR or compiled assembly.
    Dump(cli::dump::DumpArgs),
    /// Compile a library kernel and write its code object.
    Build(cli::build::BuildArgs),
    /// Compile latency of library kernels per pipeline stage (warm medians).
    Bench(cli::bench::BenchArgs),
    /// Autotune a library kernel over occupancy levels (and its parameters) on the timing model.
    Tune(cli::tune::TuneArgs),
}

/// Runs the CLI; any error is one line on stderr and exit status 1 (no backtrace, even when
/// `RUST_BACKTRACE` is set).
fn main() -> std::process::ExitCode {
    no_huge_pages();
    match run(Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Targets => {
            println!("gfx942 gfx90a gfx900");
        }
        Command::Disasm(args) => cli::disasm::run(&args)?,
        Command::Emu(cmd) => cli::emu::run(cmd)?,
        Command::List => cli::kernels::list()?,
        Command::Devices(args) => cli::devices::run(&args)?,
        Command::Run(args) => cli::kernels::run(&args)?,
        Command::Dump(args) => cli::dump::run(&args)?,
        Command::Build(args) => cli::build::run(&args)?,
        Command::Bench(args) => cli::bench::run(&args)?,
        Command::Tune(args) => cli::tune::run(&args)?,
    }
    Ok(())
}

/// Turns transparent huge pages off for this process. mimalloc advises its arena
/// `MADV_HUGEPAGE`, so each new 2 MiB of heap a process first touches was a huge-page fault
/// that zeroes 2 MiB: three per process, ~0.27 ms of a fresh process's first vector_add
/// compile of ~1.2 ms (docs/performance-log.md). The compiler's heap is small and short-lived;
/// the software device's buffers did not run slower without them. Failure (an old kernel)
/// only leaves huge pages on.
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// mimalloc rather than glibc malloc: the compiler allocates many small short-lived vectors and
/// maps, and `perf` put glibc's malloc/free at ~20% of a compile (docs/performance-log.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

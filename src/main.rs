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
    /// Run a library kernel on random inputs and check it against its CPU reference.
    Run(cli::kernels::RunArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Targets => {
            println!("gfx942 gfx90a gfx900");
        }
        Command::Disasm(args) => cli::disasm::run(&args)?,
        Command::Emu(cmd) => cli::emu::run(cmd)?,
        Command::List => cli::kernels::list()?,
        Command::Run(args) => cli::kernels::run(&args)?,
    }
    Ok(())
}

//! The `kjit` command-line tool.
use clap::{Parser, Subcommand};

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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Targets => {
            println!("gfx942 gfx90a gfx900");
        }
    }
    Ok(())
}

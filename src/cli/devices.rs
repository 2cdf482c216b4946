//! `kjit devices`: which devices this build can use, and which one a launch would run on.

use clap::Args;
use kjit_runtime::{open_device, DeviceKind};

/// Arguments of `kjit devices`.
#[derive(Args)]
pub struct DevicesArgs {
    /// Open this device instead of choosing the default (`hip` or `emu`).
    #[arg(long)]
    pub device: Option<DeviceKind>,
}

/// Prints the device that would be chosen and why; asking for an unavailable one fails.
pub fn run(args: &DevicesArgs) -> anyhow::Result<()> {
    #[cfg(feature = "hip")]
    match kjit_runtime::hip::discover() {
        Ok(gpus) => {
            for g in gpus {
                let supported = if g.target().is_some() {
                    ""
                } else {
                    " (not a kjit target)"
                };
                println!(
                    "hip:{} {} {} CUs={} LDS={} bytes{supported}",
                    g.ordinal, g.name, g.gcn_arch_name, g.compute_units, g.lds_bytes
                );
            }
        }
        Err(e) => println!("hip: {e}"),
    }
    #[cfg(not(feature = "hip"))]
    println!("hip: not built in (build with --features hip)");
    println!("emu: kjit GCN device (software), targets gfx942 gfx90a gfx900");
    match args.device {
        Some(kind) => {
            let dev = open_device(kind).map_err(|e| anyhow::anyhow!("--device {kind}: {e}"))?;
            println!("chosen: {} (asked for)", dev.name());
        }
        None => {
            let chosen = kjit_runtime::choose::choose_default_device();
            println!("default: {} ({})", chosen.device.name(), chosen.reason);
        }
    }
    Ok(())
}

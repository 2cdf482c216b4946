//! Links the `kjit` binary with the functions a compile runs placed together: the linker script
//! `scripts/compile-functions.ld` (made by `scripts/symbol_order.py` from recorded first
//! compiles) puts them, in its order, in an output section `.text.compile` before `.text`.
//!
//! The first compile in a fresh process touches ~1.2 MB of functions; in the linker's default
//! order they are spread over the whole ~6 MB `.text`, and each 64 KiB of it first touched is a
//! page fault (a few µs on a VM) and each page an iTLB miss. Gathered, they take ~40 such
//! stretches instead of ~70 (docs/performance-log.md, c27). Only the order of functions
//! changes: the code is the same.
//!
//! Only where rustc links with its own lld (x86_64 Linux GNU since rustc 1.90, unless a linker
//! is configured): the linker the script was checked with. Patterns that match nothing (a stale
//! script) are no error. `KJIT_NO_SYMBOL_ORDER=1` turns it off.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=scripts/compile-functions.ld");
    println!("cargo:rerun-if-env-changed=KJIT_NO_SYMBOL_ORDER");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let script = Path::new(&dir).join("scripts/compile-functions.ld");
    // `-Wl,` splits its argument at commas.
    if links_with_rust_lld() && script.is_file() && !script.to_string_lossy().contains(',') {
        println!("cargo:rustc-link-arg-bin=kjit=-Wl,-T,{}", script.display());
    }
}

/// Whether the binary is linked by rustc's default for x86_64-unknown-linux-gnu from 1.90 on:
/// `cc` with rust-lld. Not with a configured linker or linker flags, nor on older compilers,
/// nor when turned off.
fn links_with_rust_lld() -> bool {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if std::env::var_os("KJIT_NO_SYMBOL_ORDER").is_some()
        || var("TARGET") != "x86_64-unknown-linux-gnu"
        || std::env::var_os("RUSTC_LINKER").is_some()
    {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if ["linker", "link-self-contained", "fuse-ld"]
        .iter()
        .any(|f| flags.contains(f))
    {
        return false;
    }
    // `rustc 1.95.0 (59807616e 2026-04-14)`: the minor version.
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    let version = String::from_utf8_lossy(&out.stdout);
    let minor = version
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    minor.is_some_and(|m| m >= 90)
}

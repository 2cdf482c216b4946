//! A developer's check that a compile-time change leaves the generated code alone: one line per
//! compile with a hash of the code object and of the assembly (or the error), for every library
//! kernel (the matrix kernels too) × gfx942/gfx90a/gfx900 × the default compile and every
//! occupancy level compiled alone, and every declared parameter choice × the default and every
//! level compiled from one selected kernel on gfx942, in order, as `kjit tune` compiles them.
//!
//! `cargo run --release --example code_hashes > before.txt`, change, run again, `diff`: equal
//! files mean byte-identical code (and the same errors) everywhere the tuner looks.

use std::hash::{Hash, Hasher};

use kjit_backend_gcn::compile::{
    compile, compile_selected, select_kernel, CompileError, CompileOptions, CompiledKernel,
};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_backend_gcn::Target;

/// A stable hash of `bytes` (SipHash with zero keys).
fn hash(bytes: &[u8]) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// The line's result: both hashes, or the error.
fn outcome(r: &Result<CompiledKernel, CompileError>) -> String {
    match r {
        Ok(k) => format!(
            "code {:016x} asm {:016x}",
            hash(&k.code_object),
            hash(k.asm.as_bytes())
        ),
        Err(e) => format!("error {e}"),
    }
}

/// `None`: the default compile; `Some(w)`: occupancy level `w`.
fn options(level: Option<u32>) -> CompileOptions {
    CompileOptions {
        occupancy: level,
        ..CompileOptions::default()
    }
}

fn main() {
    let library = || kjit_kernels::all().iter().chain(kjit_kernels::matrix());
    for target in ALL_TARGETS {
        let levels = std::iter::once(None).chain((1..=target.max_waves_per_simd()).map(Some));
        for spec in library() {
            let func = (spec.build)().expect("library kernels build");
            for level in levels.clone() {
                let r = compile(&func, target, &options(level));
                println!("{target} {} {level:?} alone: {}", spec.name, outcome(&r));
            }
        }
    }
    let target = Target::Gfx942;
    for spec in library() {
        let Some(tuning) = spec.tuning else { continue };
        for c in tuning.choices() {
            let func = match spec.build_with(&c) {
                Ok(f) => f,
                Err(e) => {
                    println!("{target} {} {c:?}: build error {e}", spec.name);
                    continue;
                }
            };
            let sel = match select_kernel(&func, target, &CompileOptions::default()) {
                Ok(s) => s,
                Err(e) => {
                    println!("{target} {} {c:?}: select error {e}", spec.name);
                    continue;
                }
            };
            let levels = std::iter::once(None).chain((1..=target.max_waves_per_simd()).map(Some));
            for level in levels {
                let r = compile_selected(&sel, &options(level));
                println!(
                    "{target} {} {c:?} {level:?} swept: {}",
                    spec.name,
                    outcome(&r)
                );
            }
        }
    }
}

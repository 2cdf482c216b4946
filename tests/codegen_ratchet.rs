//! A ratchet on the code kjit generates: every library kernel with an OpenCL twin
//! (`kjit_kernels::NO_OPENCL_TWIN` lists those without) on gfx942, gfx90a and gfx900 is
//! compiled and its instruction count, VGPRs and SGPRs (as `.sgpr_count` counts them, VCC
//! included) must not exceed the figures recorded in `tests/codegen_ratchet.txt`. The record
//! also holds what clang-19 -O3 made of each kernel's OpenCL twin (`kernels/opencl/`), and
//! `recorded_clang_figures_are_clang_19s` checks those columns against clang-19 itself, so the
//! comparison printed here is true.
//!
//! After an improvement: `KJIT_UPDATE_RATCHET=1 cargo test --release --test codegen_ratchet`
//! rewrites the record (kjit's columns from this build, clang's from clang-19 when present)
//! and the diff goes into the commit with its before/after in `docs/performance-log.md`.

use std::path::{Path, PathBuf};

use kjit::backend_gcn::codeobj::CodeObject;
use kjit::backend_gcn::llvm_oracle::{compile_opencl, require_all, OpenClBuild, Tool};
use kjit::backend_gcn::target::ALL_TARGETS;
use kjit::backend_gcn::Target;
use kjit::{compile, CompileOptions};

/// Instructions, VGPRs, SGPRs of one kernel on one target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counts {
    instructions: u32,
    vgprs: u32,
    sgprs: u32,
}

/// One row of the record: kjit's figures and clang's for the twin.
#[derive(Clone, Debug)]
struct Row {
    kernel: String,
    target: Target,
    kjit: Counts,
    clang: Counts,
}

fn record_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/codegen_ratchet.txt")
}

/// The recorded rows (lines `kernel target instr vgprs sgprs clang_instr clang_vgprs
/// clang_sgprs`; `#` starts a comment).
fn read_record() -> Vec<Row> {
    let text = std::fs::read_to_string(record_path()).unwrap_or_default();
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 8, "codegen_ratchet.txt line {}: 8 fields", n + 1);
        let num = |i: usize| -> u32 {
            f[i].parse()
                .unwrap_or_else(|_| panic!("codegen_ratchet.txt line {}: {}", n + 1, f[i]))
        };
        rows.push(Row {
            kernel: f[0].to_string(),
            target: f[1].parse().expect("target"),
            kjit: Counts {
                instructions: num(2),
                vgprs: num(3),
                sgprs: num(4),
            },
            clang: Counts {
                instructions: num(5),
                vgprs: num(6),
                sgprs: num(7),
            },
        });
    }
    rows
}

fn write_record(rows: &[Row]) {
    let mut s = String::from(
        "# kjit's code vs clang-19 -O3 on the OpenCL twin, per library kernel and target.\n\
         # Checked by tests/codegen_ratchet.rs: kjit's columns may only go down.\n\
         # kernel target | kjit: instructions VGPRs SGPRs | clang-19: instructions VGPRs SGPRs\n",
    );
    for r in rows {
        s.push_str(&format!(
            "{} {} {} {} {} {} {} {}\n",
            r.kernel,
            r.target,
            r.kjit.instructions,
            r.kjit.vgprs,
            r.kjit.sgprs,
            r.clang.instructions,
            r.clang.vgprs,
            r.clang.sgprs
        ));
    }
    std::fs::write(record_path(), s).unwrap();
}

/// The library kernels with an OpenCL twin (the ratchet compares with clang's figures).
fn twinned() -> impl Iterator<Item = &'static kjit::kernels::KernelSpec> {
    kjit::kernels::all()
        .iter()
        .filter(|s| !kjit::kernels::NO_OPENCL_TWIN.contains(&s.name))
}

/// kjit's figures for every library kernel with a twin, on every target.
fn kjit_counts() -> Vec<(String, Target, Counts)> {
    let mut out = Vec::new();
    for spec in twinned() {
        let func = (spec.build)().unwrap();
        for t in ALL_TARGETS {
            let k = compile(&func, t, &CompileOptions::default())
                .unwrap_or_else(|e| panic!("{} {t}: {e}", spec.name));
            let h = &k.header;
            out.push((
                spec.name.to_string(),
                t,
                Counts {
                    instructions: h.instructions,
                    vgprs: h.vgprs,
                    sgprs: h.sgprs,
                },
            ));
        }
    }
    out
}

/// clang-19's figures for the twin of `kernel` on `t`, `None` when the tools are absent (and
/// not required).
fn clang_counts(kernel: &str, t: Target) -> Option<Counts> {
    let tools = require_all(&[Tool::Clang, Tool::Lld], "codegen ratchet (clang twins)")?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("kernels/opencl/{kernel}.cl"));
    let so = compile_opencl(
        &tools[0],
        &tools[1],
        &src,
        t.name(),
        &OpenClBuild::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let co = CodeObject::parse(&std::fs::read(so).unwrap()).unwrap();
    let k = co.kernel(kernel).expect("twin kernel");
    let instructions = k
        .instruction_count(co.target)
        .unwrap_or_else(|e| panic!("{kernel} {t}: {e}")) as u32;
    Some(Counts {
        instructions,
        vgprs: k.meta.vgpr_count,
        sgprs: k.meta.sgpr_count,
    })
}

#[test]
fn kjit_counts_do_not_regress() {
    let record = read_record();
    let now = kjit_counts();
    let update = std::env::var("KJIT_UPDATE_RATCHET").as_deref() == Ok("1");
    let mut failures = Vec::new();
    let mut rows = Vec::new();
    println!(
        "{:<22} {:<7} {:>13} {:>13} {:>13}",
        "kernel", "target", "instr (clang)", "VGPRs (clang)", "SGPRs (clang)"
    );
    for (kernel, t, c) in now {
        let rec = record.iter().find(|r| r.kernel == kernel && r.target == t);
        let clang = match rec {
            Some(r) => r.clang,
            None if update => clang_counts(&kernel, t).expect("clang-19 to record a new kernel"),
            None => {
                failures.push(format!(
                    "{kernel} {t}: not recorded (KJIT_UPDATE_RATCHET=1 records it)"
                ));
                continue;
            }
        };
        println!(
            "{kernel:<22} {t:<7} {:>6} ({:>4}) {:>6} ({:>4}) {:>6} ({:>4})",
            c.instructions, clang.instructions, c.vgprs, clang.vgprs, c.sgprs, clang.sgprs
        );
        if let Some(r) = rec {
            let pairs = [
                ("instructions", c.instructions, r.kjit.instructions),
                ("VGPRs", c.vgprs, r.kjit.vgprs),
                ("SGPRs", c.sgprs, r.kjit.sgprs),
            ];
            for (what, got, was) in pairs {
                if got > was && !update {
                    failures.push(format!("{kernel} {t}: {what} {got} > recorded {was}"));
                } else if got < was {
                    println!(
                        "  {kernel} {t}: {what} {was} -> {got} (record it: KJIT_UPDATE_RATCHET=1)"
                    );
                }
            }
        }
        rows.push(Row {
            kernel,
            target: t,
            kjit: c,
            clang,
        });
    }
    if update {
        for r in &mut rows {
            if let Some(c) = clang_counts(&r.kernel, r.target) {
                r.clang = c;
            }
        }
        write_record(&rows);
        println!("wrote {}", record_path().display());
    }
    assert!(
        failures.is_empty(),
        "generated code regressed:\n{}",
        failures.join("\n")
    );
}

#[test]
fn recorded_clang_figures_are_clang_19s() {
    let record = read_record();
    assert!(!record.is_empty(), "tests/codegen_ratchet.txt is empty");
    for r in &record {
        let Some(c) = clang_counts(&r.kernel, r.target) else {
            return;
        };
        assert_eq!(
            c, r.clang,
            "{} {}: clang-19's figures differ from the record",
            r.kernel, r.target
        );
    }
}

#[test]
fn every_kernel_and_target_is_recorded() {
    let record = read_record();
    for spec in twinned() {
        for t in ALL_TARGETS {
            assert!(
                record
                    .iter()
                    .any(|r| r.kernel == spec.name && r.target == t),
                "{} {t} missing from tests/codegen_ratchet.txt",
                spec.name
            );
        }
    }
}

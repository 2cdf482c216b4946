//! Real-world decode (issue 2): kjit's own OpenCL corpus (`tests/corpus/*.cl`) compiled by
//! clang-19 -O3 + ld.lld-19 at test time for gfx942, gfx90a and gfx900; kjit's decoder walks
//! 100% of each `.text` from its first byte, and every instruction it finds must sit at the
//! address, have the encoding words and print the text that `llvm-objdump-19 -d` shows for it.
//! A word kjit cannot decode is a failure, not a skip; so is any instruction LLVM lists that kjit
//! does not (or the reverse). Texts are compared after collapsing whitespace only.
//!
//! Also here: the MUBUF `lds` bit (`buffer_load_dword v1, s[4:7], 0 offen lds`), which
//! `llvm-mc-19`'s assembler rejects but its disassembler prints. The oracle bytes are LLVM's
//! encoding of the same load without `lds` (from `llvm-mc-19 -show-encoding`) with bit 16 set
//! and the unused VDATA field zero; kjit must decode them to an instruction with `lds`, print
//! exactly `llvm-mc-19 --disassemble`'s text, and encode that instruction back to the bytes.

mod isa_common;

use std::path::{Path, PathBuf};

use kjit_backend_gcn::codeobj::CodeObject;
use kjit_backend_gcn::isa;
use kjit_backend_gcn::llvm_oracle::{compile_opencl, require_all, run, OpenClBuild, Tool};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_backend_gcn::Target;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn corpus_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/corpus exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cl"))
        .collect();
    v.sort();
    v
}

/// One instruction of a listing: byte address, encoding words, text (whitespace collapsed).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Line {
    address: u64,
    words: Vec<u32>,
    text: String,
}

/// The instruction lines of `llvm-objdump -d` output (`\tTEXT // ADDR: WORDS [<sym+off>]`).
fn objdump_lines(dump: &str) -> Vec<Line> {
    dump.lines()
        .filter(|l| l.starts_with('\t'))
        .filter_map(|l| {
            let (text, rest) = l.rsplit_once("// ")?;
            let (addr, words) = rest.split_once(": ")?;
            Some(Line {
                address: u64::from_str_radix(addr.trim(), 16).ok()?,
                words: words
                    .split_whitespace()
                    .take_while(|w| w.len() == 8 && w.chars().all(|c| c.is_ascii_hexdigit()))
                    .map(|w| u32::from_str_radix(w, 16).unwrap())
                    .collect(),
                text: text.split_whitespace().collect::<Vec<_>>().join(" "),
            })
        })
        .collect()
}

/// kjit's decode of the whole of `text` (loaded at `address`); the first undecodable word is an
/// error naming its address.
fn kjit_lines(target: Target, text: &[u8], address: u64) -> Result<Vec<Line>, String> {
    let words: Vec<u32> = text
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let at = address + 4 * i as u64;
        let (inst, n) = isa::decode(&words[i..], target)
            .map_err(|e| format!("word {:#010x} at {at:#x} does not decode: {e}", words[i]))?;
        if n == 0 || i + n > words.len() {
            return Err(format!("decoder returned {n} words at {at:#x}"));
        }
        out.push(Line {
            address: at,
            words: words[i..i + n].to_vec(),
            text: inst
                .display(target)
                .to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        });
        i += n;
    }
    Ok(out)
}

/// Compiles `file` for `target` into a linked code object.
fn compile(clang: &Path, lld: &Path, file: &Path, target: Target) -> PathBuf {
    let inc = format!("-I{}", corpus_dir().display());
    let build = OpenClBuild {
        extra_args: &[&inc],
        out_dir: Some(std::env::temp_dir().join(format!("kjit-isa-corpus-{}", std::process::id()))),
    };
    compile_opencl(clang, lld, file, target.name(), &build).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn corpus_text_decodes_fully_and_prints_as_llvm_objdump() {
    let Some(tools) = require_all(
        &[Tool::Clang, Tool::Lld, Tool::Objdump],
        "corpus_text_decodes_fully_and_prints_as_llvm_objdump",
    ) else {
        return;
    };
    let (clang, lld, objdump) = (&tools[0], &tools[1], &tools[2]);
    let files = corpus_files();
    assert!(files.len() >= 10, "corpus has only {} files", files.len());
    let mut failures = Vec::new();
    let mut per_target = Vec::new();
    let mut mnemonics = std::collections::BTreeSet::new();
    for target in ALL_TARGETS {
        let mut count = 0usize;
        let mut padding = 0usize;
        let mut objects = 0usize;
        for f in &files {
            let so = compile(clang, lld, f, target);
            let bytes = std::fs::read(&so).unwrap();
            let name = format!(
                "{} {}",
                f.file_name().unwrap().to_str().unwrap(),
                target.name()
            );
            let co = CodeObject::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            if co.kernels.is_empty() {
                // mfma.cl has no kernels for gfx900 (no matrix cores).
                continue;
            }
            objects += 1;
            let cpu = format!("--mcpu={}", target.name());
            let dump = run(objdump, &["-d", &cpu, so.to_str().unwrap()], None)
                .unwrap_or_else(|e| panic!("{name}: llvm-objdump-19: {e}"));
            let theirs = objdump_lines(&dump);
            let ours = match kjit_lines(target, &co.text, co.text_address) {
                Ok(l) => l,
                Err(e) => {
                    failures.push(format!("{name}: {e}"));
                    continue;
                }
            };
            assert!(!theirs.is_empty(), "{name}: llvm-objdump listed nothing");
            // Every byte of .text is covered by our walk (it starts at the first byte and ends
            // at the last word); LLVM must list the same instructions.
            let mut bad = 0;
            for (a, b) in ours.iter().zip(&theirs) {
                if a != b {
                    bad += 1;
                    if bad <= 10 {
                        failures.push(format!(
                            "{name} at {:#x}:\n  kjit: {} {:08X?}\n  llvm: {} {:08X?} (at {:#x})",
                            a.address, a.text, a.words, b.text, b.words, b.address
                        ));
                    }
                }
            }
            if ours.len() != theirs.len() {
                failures.push(format!(
                    "{name}: kjit decoded {} instructions, llvm-objdump lists {}",
                    ours.len(),
                    theirs.len()
                ));
            }
            // gfx90a/gfx942 objects end kernels with runs of `s_nop 0` (LLVM pads for the
            // instruction prefetcher); they are decoded and compared but counted apart.
            let mut after_end = false;
            for l in &ours {
                let m = l.text.split(' ').next().unwrap();
                mnemonics.insert(m.to_string());
                if m == "s_endpgm" {
                    after_end = true;
                    count += 1;
                } else if after_end && l.text == "s_nop 0" {
                    padding += 1;
                } else {
                    after_end = false;
                    count += 1;
                }
            }
        }
        per_target.push((target.name(), objects, count, padding));
    }
    for (t, o, c, p) in &per_target {
        println!(
            "{t}: {c} kernel instructions (+{p} s_nop padding) decoded from {o} code objects, \
             every one equal to llvm-objdump-19 -d"
        );
    }
    println!("{} distinct mnemonics", mnemonics.len());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    for (t, _, c, _) in &per_target {
        assert!(*c > 300, "{t}: only {c} instructions decoded");
    }
}

/// The LDS-capable MUBUF loads of gfx9 (LLVM's `*_LDS_*` pseudo-instructions).
const LDS_LOADS: &[&str] = &[
    "buffer_load_dword",
    "buffer_load_ubyte",
    "buffer_load_sbyte",
    "buffer_load_ushort",
    "buffer_load_sshort",
];

/// Text of a MUBUF load without `lds`, for `llvm-mc-19` to assemble.
fn mubuf_text(
    target: Target,
    op: &str,
    addressing: usize,
    offset: u32,
    soffset: &str,
    cache: usize,
) -> String {
    let vaddr = ["off", "v2", "v2", "v[2:3]"][addressing];
    let mode = ["", " offen", " idxen", " idxen offen"][addressing];
    let off = if offset == 0 {
        String::new()
    } else {
        format!(" offset:{offset}")
    };
    let bits: &[&str] = if target == Target::Gfx942 {
        &["", " sc0", " sc1", " nt", " sc0 sc1 nt"]
    } else {
        &["", " glc", " slc", " glc slc", " glc"]
    };
    format!(
        "{op} v0, {vaddr}, s[8:11], {soffset}{mode}{off}{}",
        bits[cache]
    )
}

#[test]
fn mubuf_lds_bit_round_trips_and_prints_as_llvm_disassembler() {
    let Some(mc) = kjit_backend_gcn::llvm_oracle::require(
        Tool::Mc,
        "mubuf_lds_bit_round_trips_and_prints_as_llvm_disassembler",
    ) else {
        return;
    };
    let mut failures = Vec::new();
    for target in ALL_TARGETS {
        let mut texts = Vec::new();
        for op in LDS_LOADS {
            for addressing in 0..4 {
                for offset in [0, 16, 4095] {
                    for soffset in ["0", "s2", "-1", "m0"] {
                        for cache in 0..5 {
                            texts.push(mubuf_text(target, op, addressing, offset, soffset, cache));
                        }
                    }
                }
            }
        }
        texts.sort();
        texts.dedup();
        let assembled = isa_common::mc_assemble(&mc, target, &texts);
        let mut insts = Vec::new();
        for (t, a) in texts.iter().zip(&assembled) {
            let Some((_, bytes)) = a else {
                failures.push(format!(
                    "{target:?}: llvm-mc-19 rejected the oracle input '{t}'"
                ));
                continue;
            };
            let mut w = isa_common::words_of(bytes);
            assert_eq!(w.len(), 2, "{t}: MUBUF is two dwords");
            w[0] |= 1 << 16; // lds
            w[1] &= !(0xff << 8); // VDATA unused by the lds form
            insts.push((t.clone(), w));
        }
        let words: Vec<Vec<u32>> = insts.iter().map(|(_, w)| w.clone()).collect();
        let llvm = isa_common::mc_disassemble(&mc, target, &words);
        for ((t, w), l) in insts.iter().zip(&llvm) {
            let Some(l) = l else {
                failures.push(format!(
                    "{target:?}: llvm-mc-19 cannot disassemble {w:08X?} ({t} lds)"
                ));
                continue;
            };
            let want = isa_common::normalize(l);
            assert!(
                want.ends_with(" lds"),
                "{target:?}: LLVM printed '{want}' for {t} lds"
            );
            let (inst, n) = match isa::decode(w, target) {
                Ok(x) => x,
                Err(e) => {
                    failures.push(format!(
                        "{target:?}: kjit cannot decode {w:08X?} ({want}): {e}"
                    ));
                    continue;
                }
            };
            let got = isa_common::normalize(&inst.display(target).to_string());
            if n != 2 || !inst.mods.lds || got != want {
                failures.push(format!(
                    "{target:?} {w:08X?}: kjit '{got}' ({n} words, lds={}), llvm '{want}'",
                    inst.mods.lds
                ));
                continue;
            }
            match isa::encode(&inst, target) {
                Ok(e) if e.as_slice() == w.as_slice() => {}
                Ok(e) => failures.push(format!(
                    "{target:?} {want}: kjit encodes {:08X?}, want {w:08X?}",
                    e.as_slice()
                )),
                Err(e) => failures.push(format!("{target:?} {want}: kjit cannot encode: {e}")),
            }
        }
        println!(
            "{target:?}: {} MUBUF lds encodings decoded, printed and re-encoded as LLVM's",
            insts.len()
        );
        assert!(
            insts.len() >= 400,
            "{target:?}: only {} variants",
            insts.len()
        );
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(30)].join("\n")
    );
}

//! Shared helpers of the instruction-layer oracle tests: batched calls to `llvm-mc-19` that
//! assemble many lines (mapping results back to lines) or disassemble many instructions.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use kjit_backend_gcn::Target;

/// Runs `tool args` with `input` on stdin (written from a thread, so large outputs cannot
/// deadlock); returns (stdout, stderr).
pub fn run_io(tool: &Path, args: &[&str], input: String) -> (String, String) {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn llvm tool");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().expect("wait for llvm tool");
    writer.join().expect("writer thread");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn parse_encoding(s: &str) -> Vec<u8> {
    s.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| u8::from_str_radix(x.trim().trim_start_matches("0x"), 16).expect("hex byte"))
        .collect()
}

/// Assembles each line with `llvm-mc-19 -show-encoding`; for each line, `Some((text, bytes))`
/// with LLVM's canonical text, or `None` if LLVM rejected it.
pub fn mc_assemble(mc: &Path, target: Target, lines: &[String]) -> Vec<Option<(String, Vec<u8>)>> {
    let cpu = format!("-mcpu={}", target.name());
    let (stdout, stderr) = run_io(
        mc,
        &["-arch=amdgcn", &cpu, "-show-encoding"],
        lines.join("\n") + "\n",
    );
    let mut bad = BTreeSet::new();
    for l in stderr.lines() {
        if let Some(rest) = l.strip_prefix("<stdin>:") {
            let mut it = rest.splitn(3, ':');
            let line: usize = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
            let _col = it.next();
            if it
                .next()
                .map(|x| x.trim_start().starts_with("error"))
                .unwrap_or(false)
                && line > 0
            {
                bad.insert(line - 1);
            }
        }
    }
    let mut outs = stdout
        .lines()
        .filter_map(|l| {
            let (text, enc) = l.split_once("; encoding: [")?;
            Some((
                text.trim().to_string(),
                parse_encoding(enc.trim_end_matches(']')),
            ))
        })
        .collect::<Vec<_>>()
        .into_iter();
    (0..lines.len())
        .map(|i| if bad.contains(&i) { None } else { outs.next() })
        .collect()
}

/// `s_nop 0x4321`: a marker placed (three times) after every instruction so that the
/// disassembler's output can be split per instruction even when junk swallows one marker.
const MARKER: u32 = 0xBF80_4321;

/// Disassembles each instruction (dwords) with `llvm-mc-19 --disassemble`; for each, LLVM's
/// text of the instruction starting at its first dword, or `None` if LLVM found it invalid.
pub fn mc_disassemble(mc: &Path, target: Target, insts: &[Vec<u32>]) -> Vec<Option<String>> {
    let cpu = format!("-mcpu={}", target.name());
    let mut input = String::new();
    let hex = |w: u32| {
        w.to_le_bytes()
            .iter()
            .map(|b| format!("0x{b:02x}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    for words in insts {
        input.push_str(&words.iter().map(|&w| hex(w)).collect::<Vec<_>>().join(","));
        input.push('\n');
        input.push_str(&[hex(MARKER), hex(MARKER), hex(MARKER)].join(","));
        input.push('\n');
    }
    let (stdout, stderr) = run_io(mc, &["-arch=amdgcn", &cpu, "--disassemble"], input);
    let mut bad = BTreeSet::new();
    for l in stderr.lines() {
        if let Some(rest) = l.strip_prefix("<stdin>:") {
            let mut it = rest.splitn(3, ':');
            let line: usize = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
            let col: usize = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
            if col == 1
                && line > 0
                && (line - 1).is_multiple_of(2)
                && l.contains("invalid instruction encoding")
            {
                bad.insert((line - 1) / 2);
            }
        }
    }
    let mut groups: Vec<Vec<String>> = vec![Vec::new()];
    let mut run = 0usize;
    let lines: Vec<&str> = stdout.lines().chain(std::iter::once("<end>")).collect();
    for l in lines {
        let t = l.trim();
        if t.is_empty() || t.starts_with('.') {
            continue;
        }
        if t == "s_nop 0x4321" {
            run += 1;
            continue;
        }
        for _ in 0..run.div_ceil(3) {
            groups.push(Vec::new());
        }
        run = 0;
        if t != "<end>" {
            groups.last_mut().expect("group").push(t.to_string());
        }
    }
    assert_eq!(
        groups.len(),
        insts.len() + 1,
        "marker bookkeeping lost track of the disassembly"
    );
    (0..insts.len())
        .map(|i| {
            if bad.contains(&i) {
                None
            } else {
                groups[i].first().cloned()
            }
        })
        .collect()
}

/// Collapses runs of whitespace (the only text normalisation besides documented aliases).
pub fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub mod variants;

/// Little-endian bytes to dwords.
pub fn words_of(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(4)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect()
}

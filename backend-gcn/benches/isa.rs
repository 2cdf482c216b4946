//! Throughput of kjit's instruction layer: encode, decode and print, in instructions per second.
//!
//! Two inputs per target:
//! - `forms`: the operand/modifier variants of every instruction form of the table (the same
//!   generator the LLVM oracle tests use, kept where the encoder accepts them) — every format,
//!   literals, DPP/SDWA, MFMA; a broad but synthetic mix.
//! - `triton` (gfx942, gfx90a): the `.text` of the committed Triton code objects (vector add and
//!   a matmul) — a real compiler's instruction mix, decoded in one pass as a disassembler would.
//!
//! criterion's throughput is set to instructions per iteration, so its `thrpt` line reads
//! directly as instructions/s.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kjit_backend_gcn::codeobj::CodeObject;
use kjit_backend_gcn::isa::{self, Inst};
use kjit_backend_gcn::target::ALL_TARGETS;
use kjit_backend_gcn::Target;
use std::hint::black_box;
use std::path::Path;

#[path = "../tests/isa_common/variants.rs"]
#[allow(dead_code)]
mod variants;

/// The encodable variants of every form on `t`, with their encodings.
fn forms(t: Target) -> (Vec<Inst>, Vec<u32>) {
    let mut insts = Vec::new();
    let mut words = Vec::new();
    for i in variants::variants(t, 8) {
        if let Ok(w) = isa::encode(&i, t) {
            words.extend_from_slice(&w);
            insts.push(i);
        }
    }
    (insts, words)
}

/// The `.text` words of the Triton fixtures for `t`.
fn triton_text(t: Target) -> Vec<u32> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/triton");
    let mut words = Vec::new();
    for f in ["triton-add", "triton-matmul"] {
        let p = dir.join(format!("{f}-{}.hsaco", t.name()));
        let Ok(bytes) = std::fs::read(&p) else {
            continue;
        };
        let co = CodeObject::parse(&bytes).expect("fixture parses");
        words.extend(
            co.text
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
    }
    words
}

/// Decodes a stream of words front to back; returns the number of instructions.
fn decode_all(words: &[u32], t: Target) -> usize {
    let mut i = 0;
    let mut n = 0;
    while i < words.len() {
        let (inst, len) = isa::decode(&words[i..], t).expect("decodes");
        black_box(&inst);
        i += len.max(1);
        n += 1;
    }
    n
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("isa");
    g.sample_size(10);
    for t in ALL_TARGETS {
        let (insts, words) = forms(t);
        let n = insts.len() as u64;
        g.throughput(Throughput::Elements(n));
        g.bench_function(format!("encode_forms_{}", t.name()), |b| {
            b.iter(|| {
                for i in &insts {
                    black_box(isa::encode(black_box(i), t).unwrap());
                }
            })
        });
        g.bench_function(format!("decode_forms_{}", t.name()), |b| {
            b.iter(|| assert_eq!(decode_all(black_box(&words), t), insts.len()))
        });
        g.bench_function(format!("print_forms_{}", t.name()), |b| {
            let mut s = String::new();
            b.iter(|| {
                s.clear();
                for i in &insts {
                    use std::fmt::Write;
                    let _ = writeln!(s, "{}", i.display(t));
                }
                black_box(s.len())
            })
        });
        let text = triton_text(t);
        if !text.is_empty() {
            let count = decode_all(&text, t) as u64;
            g.throughput(Throughput::Elements(count));
            g.bench_function(format!("decode_triton_{}", t.name()), |b| {
                b.iter(|| decode_all(black_box(&text), t))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

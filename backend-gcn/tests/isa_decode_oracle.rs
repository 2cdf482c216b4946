//! Decoder/printer oracle: kjit's decoder and printer on kjit's own encodings (every variant of
//! every form the encoder accepts) against `llvm-mc-19 --disassemble` on the same bytes. The
//! text must be identical after whitespace normalisation and the aliases listed in `ALIASES`
//! (documented in docs/isa.md); the decoder must consume exactly the encoded dwords and give
//! back the instruction that was encoded.

mod isa_common;

use std::collections::HashSet;

use isa_common::{mc_disassemble, normalize, variants::variants};
use kjit_backend_gcn::isa::{decode, encode};
use kjit_backend_gcn::llvm_oracle::{require, Tool};
use kjit_backend_gcn::target::ALL_TARGETS;

/// Spellings where LLVM's disassembler and kjit's printer differ without a difference in
/// meaning. (Currently none are needed.)
const ALIASES: &[(&str, &str)] = &[];

fn canon(s: &str) -> String {
    let mut t = normalize(s);
    for (a, b) in ALIASES {
        t = t.replace(a, b);
    }
    t
}

#[test]
fn decoder_and_printer_match_llvm_disassembler() {
    let Some(mc) = require(Tool::Mc, "decoder_and_printer_match_llvm_disassembler") else {
        return;
    };
    let mut failures = Vec::new();
    for t in ALL_TARGETS {
        let mut seen = HashSet::new();
        let mut words_list = Vec::new();
        let mut ours = Vec::new();
        for inst in variants(t, 8) {
            let Ok(words) = encode(&inst, t) else {
                continue;
            };
            if !seen.insert(words.to_vec()) {
                continue;
            }
            // decode must give back what was encoded, and consume all of it
            match decode(&words, t) {
                Ok((back, n)) => {
                    if n != words.len() {
                        failures.push(format!(
                            "{t}: {} consumed {n} of {} dwords",
                            inst.display(t),
                            words.len()
                        ));
                        continue;
                    }
                    // Round trip: the same bytes and the same text (fields that are
                    // "don't care" for an instruction may normalise).
                    let again = encode(&back, t).map(|w| w.to_vec());
                    if again.as_deref() != Ok(&words[..])
                        || back.display(t).to_string() != inst.display(t).to_string()
                    {
                        failures.push(format!(
                            "{t}: round trip of `{}` gave `{}` ({:?} vs {:?})",
                            inst.display(t),
                            back.display(t),
                            inst,
                            back
                        ));
                        continue;
                    }
                    ours.push(back.display(t).to_string());
                    words_list.push(words.to_vec());
                }
                Err(e) => failures.push(format!(
                    "{t}: `{}` {words:08x?} does not decode: {e}",
                    inst.display(t)
                )),
            }
        }
        let llvm = mc_disassemble(&mc, t, &words_list);
        let mut ok = 0;
        for ((text, words), theirs) in ours.iter().zip(&words_list).zip(&llvm) {
            match theirs {
                Some(l) if canon(l) == canon(text) => ok += 1,
                Some(l) => failures.push(format!("{t}: {words:08x?}: LLVM `{l}`, kjit `{text}`")),
                None => failures.push(format!(
                    "{t}: LLVM cannot disassemble {words:08x?} (kjit `{text}`)"
                )),
            }
        }
        println!(
            "{t}: {ok} distinct encodings decoded and printed exactly as llvm-mc-19 --disassemble"
        );
        assert!(ok > 1000 || !failures.is_empty(), "{t}: too few checked");
    }
    if let Ok(path) = std::env::var("KJIT_ISA_FAILURES") {
        let _ = std::fs::write(path, failures.join("\n"));
    }
    let shown: Vec<_> = failures.iter().take(100).cloned().collect();
    assert!(
        failures.is_empty(),
        "{} mismatches, first ones:\n{}",
        failures.len(),
        shown.join("\n")
    );
}

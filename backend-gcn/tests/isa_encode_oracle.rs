//! Encoder oracle: for every instruction form in the table, many operand/modifier variants are
//! encoded by kjit, printed by kjit, and assembled by `llvm-mc-19 -show-encoding` in one batch per
//! target; LLVM must accept our text and produce the very same bytes.

mod isa_common;

use std::collections::{BTreeMap, HashSet};

use isa_common::{mc_assemble, variants::variants};
use kjit_backend_gcn::isa::encode;
use kjit_backend_gcn::llvm_oracle::{require, Tool};
use kjit_backend_gcn::target::ALL_TARGETS;

#[test]
fn encoder_matches_llvm_mc_byte_for_byte() {
    let Some(mc) = require(Tool::Mc, "encoder_matches_llvm_mc_byte_for_byte") else {
        return;
    };
    let mut failures = Vec::new();
    for t in ALL_TARGETS {
        let mut seen = HashSet::new();
        let mut texts = Vec::new();
        let mut bytes = Vec::new();
        let mut names = Vec::new();
        let mut forms_encoded = HashSet::new();
        let all = variants(t, 8);
        for inst in &all {
            let Ok(words) = encode(inst, t) else { continue };
            forms_encoded.insert((inst.op, inst.encoding));
            let b: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            if !seen.insert(b.clone()) {
                continue;
            }
            texts.push(inst.display(t).to_string());
            bytes.push(b);
            names.push(inst.op.name());
        }
        let llvm = mc_assemble(&mc, t, &texts);
        let mut ok = 0usize;
        let mut per_op_fail: BTreeMap<&str, usize> = BTreeMap::new();
        for ((text, ours), (res, name)) in texts.iter().zip(&bytes).zip(llvm.iter().zip(&names)) {
            match res {
                Some((_, theirs)) if theirs == ours => ok += 1,
                Some((canon, theirs)) => {
                    *per_op_fail.entry(name).or_default() += 1;
                    failures.push(format!(
                        "{t}: `{text}`: kjit {ours:02x?}, LLVM {theirs:02x?} (`{canon}`)"
                    ));
                }
                None => {
                    *per_op_fail.entry(name).or_default() += 1;
                    failures.push(format!("{t}: LLVM rejects kjit's `{text}` ({ours:02x?})"));
                }
            }
        }
        let forms_total: HashSet<_> = all.iter().map(|i| (i.op, i.encoding)).collect();
        let missing: Vec<_> = forms_total.difference(&forms_encoded).collect();
        println!(
            "{t}: {ok} distinct encodings equal to llvm-mc-19 ({} variants generated, {} forms, {} forms with no encodable variant)",
            all.len(),
            forms_total.len(),
            missing.len()
        );
        if !missing.is_empty() {
            let mut m: Vec<String> = missing
                .iter()
                .map(|(o, e)| format!("{}:{e:?}", o.name()))
                .collect();
            m.sort();
            println!("{t}: forms without an encodable variant: {}", m.join(" "));
        }
        if !per_op_fail.is_empty() {
            println!("{t}: failing ops: {per_op_fail:?}");
        }
        assert!(
            ok > 1000 || !failures.is_empty(),
            "{t}: too few encodings checked ({ok})"
        );
    }
    if let Ok(path) = std::env::var("KJIT_ISA_FAILURES") {
        let _ = std::fs::write(path, failures.join("\n"));
    }
    let shown: Vec<_> = failures.iter().take(150).cloned().collect();
    assert!(
        failures.is_empty(),
        "{} mismatches, first ones:\n{}",
        failures.len(),
        shown.join("\n")
    );
}

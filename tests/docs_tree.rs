//! The design notes name real files: every repository path in `docs/*.md` (the architecture
//! and one note per stage), `README.md` and `DEVELOPERS.md` — a token starting with a
//! top-level folder of the tree, such as `backend-gcn/src/regalloc` or
//! `ir/src/opt/{gvn,licm}.rs` — exists. Renaming or deleting a file without updating the notes
//! fails here.

use std::path::Path;

/// Top-level folders a path in the notes may start with.
const ROOTS: &[&str] = &[
    "backend-gcn/",
    "benches/",
    "docs/",
    "examples/",
    "frontend/",
    "ir/",
    "kernels/",
    "runtime/",
    "src/",
    "tests/",
];

/// `a/{b,c}.rs` → `a/b.rs`, `a/c.rs` (one brace group).
fn expand(token: &str) -> Vec<String> {
    match (token.find('{'), token.find('}')) {
        (Some(i), Some(j)) if i < j => token[i + 1..j]
            .split(',')
            .map(|alt| format!("{}{}{}", &token[..i], alt, &token[j + 1..]))
            .collect(),
        _ => vec![token.to_string()],
    }
}

/// The repository paths `text` names.
fn paths(text: &str) -> Vec<String> {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_-./{},*".contains(c);
    let mut out = Vec::new();
    for (i, _) in text.match_indices(|c: char| c.is_ascii_lowercase()) {
        // A token starts where the previous character cannot belong to a path.
        if i > 0 && text[..i].chars().next_back().is_some_and(is_path_char) {
            continue;
        }
        if !ROOTS.iter().any(|r| text[i..].starts_with(r)) {
            continue;
        }
        let end = text[i..]
            .find(|c: char| !is_path_char(c))
            .map_or(text.len(), |e| i + e);
        let token = text[i..end].trim_end_matches(['.', ',']);
        // Globs and brace groups spanning a sentence are not file names.
        if token.contains('*') || token.matches('{').count() > 1 {
            continue;
        }
        out.extend(expand(token));
    }
    out
}

#[test]
fn the_notes_name_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    let mut checked = 0;
    let mut docs: Vec<String> = ["README.md", "DEVELOPERS.md"].map(String::from).to_vec();
    for e in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            docs.push(format!("docs/{name}"));
        }
    }
    for doc in &docs {
        let text = std::fs::read_to_string(root.join(doc)).expect("readable");
        for p in paths(&text) {
            checked += 1;
            if !root.join(p.trim_end_matches('/')).exists() {
                missing.push(format!("{doc}: {p}"));
            }
        }
    }
    eprintln!("{checked} paths checked");
    assert!(
        checked > 20,
        "only {checked} paths found: the scanner is broken"
    );
    assert!(
        missing.is_empty(),
        "named but missing:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_scanner_finds_paths_and_expands_braces() {
    let text = "see (backend-gcn/src/{peephole,waitcnt}.rs) and `ir/src/opt`, not gfx90a/gfx942.";
    assert_eq!(
        paths(text),
        [
            "backend-gcn/src/peephole.rs",
            "backend-gcn/src/waitcnt.rs",
            "ir/src/opt"
        ]
    );
}

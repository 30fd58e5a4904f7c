//! The layers of `ARCHITECTURE.md` §2, checked: every file of a layer may name only the
//! layers the contract lets it call. Reads each `crate::<module>` path in `src/` (in `use`
//! lines, grouped imports and inline paths alike), so a new shortcut fails here, not in a
//! review months later.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Leaf helpers every layer may use; they themselves import nothing of ours.
const HELPERS: &[&str] = &["diagnostic", "env", "fs", "text", "time"];

/// What each layer may import besides itself and the helpers (the contract's table).
fn allowed() -> BTreeMap<&'static str, &'static [&'static str]> {
    BTreeMap::from([
        ("config", &[][..]),
        ("git", &["config"][..]),
        ("session", &["git", "config"][..]),
        ("runner", &["config"][..]),
        ("policy", &["session", "git", "config"][..]),
        ("bmad", &["config"][..]),
        (
            "supervisor",
            &["runner", "bmad", "policy", "session", "config"][..],
        ),
        (
            "epic",
            &["supervisor", "bmad", "session", "policy", "config"][..],
        ),
        ("report", &["session", "bmad", "config"][..]),
        (
            "cli",
            &[
                "epic",
                "report",
                "supervisor",
                "runner",
                "bmad",
                "policy",
                "session",
                "git",
                "config",
            ][..],
        ),
    ])
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `crate::x` a file names, with its line number; `use crate::{a, b::c}` names a and b.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            if let Some(group) = after.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or_default();
                for item in inner.split(',') {
                    let name: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        out.push((n + 1, name));
                    }
                }
            } else {
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push((n + 1, name));
            }
            rest = after;
        }
    }
    out
}

#[test]
fn every_layer_imports_only_what_the_contract_allows() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed = allowed();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    let mut checked = 0;
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_owned();
        let permitted: Vec<&str> = if HELPERS.contains(&module.as_str()) {
            Vec::new()
        } else if let Some(list) = allowed.get(module.as_str()) {
            list.iter()
                .copied()
                .chain(HELPERS.iter().copied())
                .collect()
        } else {
            // lib.rs and main.rs only declare and call.
            continue;
        };
        checked += 1;
        let text = std::fs::read_to_string(file).unwrap();
        for (line, name) in crate_paths(&text) {
            if name != module && !permitted.contains(&name.as_str()) {
                violations.push(format!(
                    "src/{}:{line}: layer `{module}` uses `crate::{name}`",
                    rel.display()
                ));
            }
        }
    }
    assert!(checked > 100, "only {checked} files were checked");
    assert!(
        violations.is_empty(),
        "imports the architecture does not allow (ARCHITECTURE.md §2):\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_reader_sees_grouped_and_inline_paths() {
    let text = "use crate::{git, session::Event};\nlet x = crate::runner::invoke();\n// crate::cli in a comment\n";
    let names: Vec<String> = crate_paths(text).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["git", "session", "runner"]);
}

/// The most lines a file in `src/` has without a reason at its top.
const LIMIT: usize = 600;

#[test]
fn no_source_file_is_large_without_a_reason() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut large = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines = text.lines().count();
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // A file may be larger when its opening doc says why (`Why this file is long:`).
        let head: String = text.lines().take(30).collect::<Vec<_>>().join("\n");
        if lines > LIMIT && !head.contains("Why this file is long:") {
            large.push(format!("src/{rel} ({lines} lines, at most {LIMIT})"));
        }
    }
    assert!(
        large.is_empty(),
        "split these files or say why they are long: {large:?}"
    );
}

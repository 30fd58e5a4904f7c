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
        ("policy", &["session", "runner", "git", "config"][..]),
        ("bmad", &["config"][..]),
        (
            "supervisor",
            &["runner", "bmad", "policy", "session", "config"][..],
        ),
        (
            "epic",
            &[
                "supervisor",
                "runner",
                "bmad",
                "session",
                "policy",
                "config",
            ][..],
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

/// The only places `unsafe` may appear: std's `pre_exec` is unsafe by its signature, and
/// each of these runs async-signal-safe calls in the child between fork and exec. Every other
/// OS call goes through `rustix`, which has them safe.
const UNSAFE_ALLOWED: &[(&str, usize)] = &[
    // die_with_parent: the child dies with the supervisor.
    ("runner/process.rs", 1),
    // start_watcher: the watcher leaves the caller's session and descriptors.
    ("git/watch/mod.rs", 1),
];

#[test]
fn unsafe_code_is_only_where_std_demands_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = BTreeMap::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let count = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or_default())
            .filter(|code| {
                ["unsafe {", "unsafe fn", "unsafe impl", "#[unsafe"]
                    .iter()
                    .any(|u| code.contains(u))
            })
            .count();
        if count > 0 {
            let rel = file.strip_prefix(&src).unwrap().to_string_lossy();
            found.insert(rel.into_owned(), count);
        }
    }
    let allowed: BTreeMap<String, usize> = UNSAFE_ALLOWED
        .iter()
        .map(|(f, n)| (f.to_string(), *n))
        .collect();
    assert_eq!(
        found, allowed,
        "`unsafe` outside std's pre_exec: use rustix, or name the place here with its reason"
    );
}

#[test]
fn every_test_file_is_part_of_the_test_binary() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let runner = std::fs::read_to_string(tests.join("runner.rs")).unwrap();
    let declared: Vec<&str> = runner
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let mut forgotten = Vec::new();
    let mut seen = 0;
    for entry in std::fs::read_dir(&tests).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path
            .extension()
            .is_some_and(|e| e == "rs")
            .then(|| path.file_stem().unwrap().to_string_lossy().into_owned())
        else {
            continue;
        };
        seen += 1;
        if stem != "runner" && !declared.contains(&stem.as_str()) {
            forgotten.push(format!("tests/{stem}.rs"));
        }
    }
    assert!(seen > 20, "only {seen} test files were seen");
    assert!(
        forgotten.is_empty(),
        "never compiled, so never run: add `mod <name>;` to tests/runner.rs for {forgotten:?}"
    );
}

#[test]
fn processes_are_started_only_by_the_git_and_runner_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut spawning = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        if rel.starts_with("git/") || rel.starts_with("runner/") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        // Unit tests may run what they like.
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap_or_default();
            if line.contains("Command::new") || line.contains("process::Command") {
                spawning.push(format!("src/{rel}:{}", n + 1));
            }
        }
    }
    assert!(
        spawning.is_empty(),
        "start processes through runner::Program or runner::run_process (a timeout, a cleared environment): {spawning:?}"
    );
}

//! The layers of `ARCHITECTURE.md` §2, checked: every file of a layer may name only the
//! layers the contract lets it call. Reads each `crate::<module>` path in `src/` (in `use`
//! lines, grouped imports and inline paths alike), so a new shortcut fails here, not in a
//! review months later.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Leaf helpers every layer may use; they themselves import nothing of ours.
const HELPERS: &[&str] = &["diagnostic", "env", "fs", "paths", "text", "time"];

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

/// The `src/` folder and every Rust file in it.
fn source_files() -> (PathBuf, Vec<PathBuf>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    (src, files)
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
    let (src, files) = source_files();
    let allowed = allowed();
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
    let (src, files) = source_files();
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
    // local_offset: `localtime_r`, the C library's offset that git records (no safe binding).
    ("time.rs", 1),
    // map: memmap2's map (a file written in place under it would change its bytes); the
    // snapshot cache is only ever replaced by a rename.
    ("git/snapshot_cache.rs", 1),
];

#[test]
fn unsafe_code_is_only_where_std_demands_it() {
    let (src, files) = source_files();
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
    let (src, files) = source_files();
    let mut spawning = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel.starts_with("git/") || rel.starts_with("runner/") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        // Unit tests may run what they like.
        let code = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
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

/// The modules of a layer folder each file names: `super::x` (from a file directly in the
/// folder), `super::super::x` (one folder down), `crate::<layer>::x`, grouped or not. A file
/// of a subfolder counts as its subfolder; `mod.rs` is the folder's front door and no node.
fn sibling_modules(layer: &str, rel: &Path, text: &str) -> Vec<String> {
    let depth = rel.components().count();
    let mut prefixes = vec![format!("crate::{layer}::")];
    match depth {
        2 => prefixes.push("super::".to_owned()),
        3 => prefixes.push("super::super::".to_owned()),
        _ => {}
    }
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or_default();
        for prefix in &prefixes {
            let mut rest = code;
            while let Some(at) = rest.find(prefix.as_str()) {
                // `super::super::x` also contains `super::x`: only the whole prefix counts.
                let before = &rest[..at];
                let after = &rest[at + prefix.len()..];
                rest = after;
                if prefix == "super::"
                    && (before.ends_with("super::") || after.starts_with("super::"))
                {
                    continue;
                }
                let names: Vec<&str> = match after.strip_prefix('{') {
                    Some(group) => group
                        .split('}')
                        .next()
                        .unwrap_or_default()
                        .split(',')
                        .collect(),
                    None => vec![after],
                };
                for name in names {
                    let name: String = name
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() && name != "self" {
                        out.push(name);
                    }
                }
            }
        }
    }
    out
}

/// The import circles among the modules of each layer folder, each as its modules in order.
fn import_circles() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut circles = Vec::new();
    for layer in allowed().keys() {
        let dir = src.join(layer);
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        let node_of = |rel: &Path| -> Option<String> {
            let first = rel
                .components()
                .nth(1)?
                .as_os_str()
                .to_string_lossy()
                .into_owned();
            let node = first.trim_end_matches(".rs").to_owned();
            (node != "mod").then_some(node)
        };
        let mut edges: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
        for file in &files {
            let rel = file.strip_prefix(&src).unwrap();
            let Some(node) = node_of(rel) else { continue };
            let text = std::fs::read_to_string(file).unwrap();
            // Unit tests may reach anywhere.
            let code = text
                .split("#[cfg(test)]\nmod tests")
                .next()
                .unwrap_or_default();
            let entry = edges.entry(node.clone()).or_default();
            for name in sibling_modules(layer, rel, code) {
                let module = dir.join(format!("{name}.rs")).exists() || dir.join(&name).is_dir();
                if module && name != node && name != "mod" {
                    entry.insert(name);
                }
            }
        }
        // Depth-first search; a grey node met again closes a circle.
        fn visit(
            node: &str,
            edges: &BTreeMap<String, std::collections::BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut std::collections::BTreeSet<String>,
            found: &mut Vec<String>,
        ) {
            if let Some(at) = path.iter().position(|n| n == node) {
                found.push(path[at..].join(" -> ") + " -> " + node);
                return;
            }
            if done.contains(node) {
                return;
            }
            path.push(node.to_owned());
            for next in edges.get(node).into_iter().flatten() {
                visit(next, edges, path, done, found);
            }
            path.pop();
            done.insert(node.to_owned());
        }
        let mut done = std::collections::BTreeSet::new();
        for node in edges.keys() {
            let mut found = Vec::new();
            visit(node, &edges, &mut Vec::new(), &mut done, &mut found);
            circles.extend(found.into_iter().map(|c| format!("src/{layer}: {c}")));
        }
    }
    circles
}

#[test]
fn no_layer_folder_has_an_import_circle() {
    let circles = import_circles();
    assert!(
        circles.is_empty(),
        "modules of one layer that import each other, round: put what both need in a leaf \
         of its own\n{}",
        circles.join("\n")
    );
}

/// The most lines a function in `src/` has without a reason in its doc comment.
const FUNCTION_LIMIT: usize = 150;

/// Each function of `text` with its first line (1-based) and its length in lines: from its
/// `fn` line to the brace that closes its body, braces in strings and comments not counted.
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let rest = ["pub(crate) ", "pub(super) ", "pub ", ""]
            .iter()
            .find_map(|p| trimmed.strip_prefix(p))
            .unwrap_or(trimmed);
        let Some(after) = rest.strip_prefix("fn ") else {
            continue;
        };
        let name: String = after
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let (mut depth, mut opened) = (0i32, false);
        for (j, body) in lines.iter().enumerate().skip(i) {
            let mut in_string = false;
            let mut chars = body.chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    '\\' if in_string => {
                        chars.next();
                    }
                    '"' => in_string = !in_string,
                    '/' if !in_string && chars.peek() == Some(&'/') => break,
                    '\'' if !in_string => {
                        // A char literal such as '{' or '"'; a lifetime has no closing quote.
                        let lookahead: String = chars.clone().take(3).collect();
                        if lookahead.chars().nth(1) == Some('\'') {
                            chars.next();
                            chars.next();
                        } else if lookahead.starts_with('\\')
                            && lookahead.chars().nth(2) == Some('\'')
                        {
                            chars.nth(2);
                        }
                    }
                    '{' if !in_string => {
                        depth += 1;
                        opened = true;
                    }
                    '}' if !in_string => depth -= 1,
                    _ => {}
                }
            }
            if opened && depth <= 0 {
                out.push((name.clone(), i + 1, j - i + 1));
                break;
            }
            if !opened && body.trim_end().ends_with(';') {
                break;
            }
        }
    }
    out
}

#[test]
fn no_function_is_long_without_a_reason() {
    let (src, files) = source_files();
    let mut long = Vec::new();
    let mut measured = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (name, start, length) in function_lengths(&text) {
            measured += 1;
            if length <= FUNCTION_LIMIT {
                continue;
            }
            // Its doc comment and attributes, just above it.
            let doc: Vec<&str> = lines[..start - 1]
                .iter()
                .rev()
                .take_while(|l| {
                    let l = l.trim_start();
                    l.starts_with("///") || l.starts_with("#[") || l.starts_with("//")
                })
                .copied()
                .collect();
            if !doc.iter().any(|l| l.contains("Why this function is long:")) {
                let rel = file.strip_prefix(&src).unwrap().display().to_string();
                long.push(format!("src/{rel}:{start} {name} ({length} lines)"));
            }
        }
    }
    assert!(measured > 1000, "only {measured} functions were measured");
    assert!(
        long.is_empty(),
        "split these functions or say in their doc comment why they are long \
         (`Why this function is long:`), at most {FUNCTION_LIMIT} lines otherwise:\n{}",
        long.join("\n")
    );
}

#[test]
fn function_lengths_count_bodies_not_braces_in_strings() {
    let text = "fn a() {\n    let s = \"}\";\n    let c = '{';\n}\n\nfn b<'x>(v: &'x str) -> &'x str {\n    v\n}\n";
    assert_eq!(
        function_lengths(text),
        [("a".to_owned(), 1, 4), ("b".to_owned(), 6, 3)]
    );
}

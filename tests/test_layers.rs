//! The layers of `docs/architecture.md` §2, checked: every file of a layer may name only the
//! layers the contract lets it call. Reads each `crate::<module>` path in `src/` (in `use`
//! lines, grouped imports and inline paths alike), so a new shortcut fails here, not in a
//! review months later.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::rust_source::{
    code_only, items, module_of, named_paths, project_sources, unconnected_groups,
    without_unit_tests,
};

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

/// Every Rust file of `src/`: its path inside `src/` and its text.
fn sources() -> Vec<(PathBuf, String)> {
    project_sources()
}

/// Each import of `sources` the contract's table does not allow, and how many files were
/// checked. A file's layer is its first folder; the crate root only declares and calls.
fn layer_violations(sources: &[(PathBuf, String)]) -> (usize, Vec<String>) {
    let allowed = allowed();
    let mut violations = Vec::new();
    let mut checked = 0;
    for (rel, text) in sources {
        let module = module_of(rel);
        let Some(layer) = module.first() else {
            continue;
        };
        let permitted: Vec<&str> = if HELPERS.contains(&layer.as_str()) {
            Vec::new()
        } else if let Some(list) = allowed.get(layer.as_str()) {
            list.iter()
                .copied()
                .chain(HELPERS.iter().copied())
                .collect()
        } else {
            continue;
        };
        checked += 1;
        for (line, path) in named_paths(&module, text) {
            let Some(name) = path.first() else { continue };
            if name != layer && !permitted.contains(&name.as_str()) {
                violations.push(format!(
                    "src/{}:{line}: layer `{layer}` uses `crate::{name}`",
                    rel.display()
                ));
            }
        }
    }
    (checked, violations)
}

#[test]
fn every_layer_imports_only_what_the_contract_allows() {
    let (checked, violations) = layer_violations(&sources());
    assert!(checked > 100, "only {checked} files were checked");
    assert!(
        violations.is_empty(),
        "imports the architecture does not allow (docs/architecture.md, Layers):\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_layer_check_bites_on_every_way_of_naming_a_module() {
    let file = |rel: &str, text: &str| (PathBuf::from(rel), text.to_owned());
    let sources = [
        // Allowed: git may call config; a layer its own modules.
        file(
            "git/repo.rs",
            "use crate::config::Config;\nuse super::refs;\n",
        ),
        // Not allowed, each written another way.
        file(
            "git/refs.rs",
            "use crate::{\n    config,\n    session::Event,\n};\n",
        ),
        file("git/mod.rs", "fn f() { super::epic::run(); }\n"),
        file("session/x/y.rs", "use super::super::super::cli::ui;\n"),
        // Leaf helpers import nothing of ours.
        file("text.rs", "use crate::git::Repo;\n"),
    ];
    let (checked, violations) = layer_violations(&sources);
    assert_eq!(checked, 5);
    assert_eq!(
        violations,
        [
            "src/git/refs.rs:3: layer `git` uses `crate::session`",
            "src/git/mod.rs:1: layer `git` uses `crate::epic`",
            "src/session/x/y.rs:1: layer `session` uses `crate::cli`",
            "src/text.rs:1: layer `text` uses `crate::git`",
        ]
    );
}

/// A file holds one concept. Length alone says little (a schema read in one place is long
/// and one thing); what a reviewer objects to is a file of parts that do not need each other.
/// So: the top-level items of a file over [`COHESION_FROM`] lines are grouped by the names
/// they use, and two or more groups of at least [`CONCEPT_LINES`] lines each that never
/// name each other are two concepts, to be two files (or to say why not, at the file's top:
/// `Why this file holds several:`).
const COHESION_FROM: usize = 300;
const CONCEPT_LINES: usize = 60;
/// Past this, a file says why it is long (`Why this file is long:`) even if it is one thing.
const LONG: usize = 1000;

/// The files of `sources` that hold several concepts, each with its groups (their first
/// items), and those longer than [`LONG`] with no reason.
fn incohesive_files(sources: &[(PathBuf, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, text) in sources {
        let lines = text.lines().count();
        let head: String = text.lines().take(30).collect::<Vec<_>>().join("\n");
        if lines > LONG && !head.contains("Why this file is long:") {
            found.push(format!(
                "src/{} ({lines} lines, more than {LONG})",
                rel.display()
            ));
        }
        if lines <= COHESION_FROM || head.contains("Why this file holds several:") {
            continue;
        }
        let items = items(text);
        let concepts: Vec<String> = unconnected_groups(&items)
            .into_iter()
            .filter(|group| {
                group.iter().map(|i| i.last - i.first + 1).sum::<usize>() >= CONCEPT_LINES
            })
            .map(|group| {
                let names: Vec<&str> = group.iter().take(4).map(|i| i.name.as_str()).collect();
                format!("{{{}…}}", names.join(", "))
            })
            .collect();
        if concepts.len() > 1 {
            found.push(format!(
                "src/{} holds {} concepts that never name each other: {}",
                rel.display(),
                concepts.len(),
                concepts.join(" ")
            ));
        }
    }
    found
}

#[test]
fn every_source_file_holds_one_concept() {
    let found = incohesive_files(&sources());
    assert!(
        found.is_empty(),
        "split these files along their concepts, or say at their top why not:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_cohesion_check_bites() {
    let body = |name: &str, calls: &str| {
        let mut f = format!("fn {name}() {{\n    {calls}\n");
        for n in 0..70 {
            f.push_str(&format!("    let x{n} = {n};\n"));
        }
        f.push_str("}\n\n");
        f
    };
    let padding = "//! A module.\n".repeat(100);
    let two = format!(
        "{padding}{}{}{}",
        body("start", "claim();"),
        body("claim", ""),
        body("prune", "follow();") + &body("follow", "")
    );
    let one = format!(
        "{padding}{}{}",
        body("start", "prune();"),
        body("prune", "")
    );
    let said = format!("//! Why this file holds several: one test's fixtures.\n{two}");
    let sources = [
        (PathBuf::from("session/two.rs"), two),
        (PathBuf::from("session/one.rs"), one),
        (PathBuf::from("session/said.rs"), said),
    ];
    assert_eq!(
        incohesive_files(&sources),
        ["src/session/two.rs holds 2 concepts that never name each other: {start, claim…} {prune, follow…}"]
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
    let mut found = BTreeMap::new();
    for (rel, text) in sources() {
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
            found.insert(rel.to_string_lossy().into_owned(), count);
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
    let mut spawning = Vec::new();
    for (rel, text) in sources() {
        let rel = rel.to_string_lossy().into_owned();
        if rel.starts_with("git/") || rel.starts_with("runner/") {
            continue;
        }
        // Unit tests may run what they like.
        let code = without_unit_tests(&text);
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

/// Each place that reads this process's environment itself (unit tests aside) but the one
/// read of `src/env.rs`, which takes it all once: every variable git-bmad reads is an entry
/// of `env::Var`, read from that.
fn environment_reads(sources: &[(PathBuf, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, text) in sources {
        let code = code_only(without_unit_tests(text));
        let mut reads: Vec<String> = code
            .lines()
            .enumerate()
            .filter(|(_, line)| {
                ["env::var(", "env::var_os(", "env::vars(", "env::vars_os("]
                    .iter()
                    .any(|read| line.contains(read))
            })
            .map(|(n, _)| format!("src/{}:{}", rel.display(), n + 1))
            .collect();
        if rel == Path::new("env.rs") && reads.len() == 1 {
            reads.clear();
        }
        found.extend(reads);
    }
    found
}

#[test]
fn the_environment_is_read_only_through_its_one_table() {
    let found = environment_reads(&sources());
    assert!(
        found.is_empty(),
        "read variables through crate::env::Var (one entry per variable) or env::named (a \
         name the configuration gives): {found:?}"
    );
}

#[test]
fn the_environment_check_bites() {
    let file = |rel: &str, text: &str| (PathBuf::from(rel), text.to_owned());
    let sources = [
        file("env.rs", "pub fn all() { std::env::vars_os() }\n"),
        file("git/a.rs", "let h = std::env::var_os(\"HOME\");\n"),
        file(
            "cli/b.rs",
            "use std::env;\nfn f() {\n    env::var(\"X\").ok();\n}\n",
        ),
        file(
            "runner/c.rs",
            "// std::env::var(\"X\") in a comment\nlet s = \"env::var(\";\n",
        ),
        file(
            "epic/d.rs",
            "fn f() {}\n#[cfg(test)]\nmod tests {\n    fn g() { std::env::var(\"X\"); }\n}\n",
        ),
    ];
    assert_eq!(
        environment_reads(&sources),
        ["src/git/a.rs:1", "src/cli/b.rs:3"]
    );
    // A second read in env.rs is a second look at an environment that is read once.
    let twice = [file(
        "env.rs",
        "fn all() { std::env::vars_os() }\nfn home() { std::env::var_os(\"HOME\") }\n",
    )];
    assert_eq!(environment_reads(&twice), ["src/env.rs:1", "src/env.rs:2"]);
}

/// Each place that could hand a layer above sessions the git repository itself. Those layers
/// hold `session::Repo`, which has no git operation; it gives up its git repository only for
/// a `git::Direct`, so that name may appear only where the git layer may be named, and no
/// module may re-export it.
fn git_handle_leaks(sources: &[(PathBuf, String)]) -> Vec<String> {
    let allowed = allowed();
    let direct = regex::Regex::new(r"\bDirect\b").unwrap();
    let mut found = Vec::new();
    for (rel, text) in sources {
        let module = module_of(rel);
        let Some(layer) = module.first() else {
            continue;
        };
        let may_name_git = layer == "git"
            || allowed
                .get(layer.as_str())
                .is_some_and(|list| list.contains(&"git"));
        let code = code_only(without_unit_tests(text));
        for (n, line) in code.lines().enumerate() {
            if !direct.is_match(line) {
                continue;
            }
            let reexport = line.trim_start().starts_with("pub") && line.contains(" use ");
            if !may_name_git || (reexport && layer != "git") {
                found.push(format!("src/{}:{}", rel.display(), n + 1));
            }
        }
    }
    found
}

#[test]
fn layers_above_sessions_cannot_reach_a_git_operation() {
    let found = git_handle_leaks(&sources());
    assert!(
        found.is_empty(),
        "above the session layer, what a layer needs of the repository is a session \
         operation (session::repository and the handle's own facts): {found:?}"
    );
}

#[test]
fn the_git_handle_check_bites() {
    let file = |rel: &str, text: &str| (PathBuf::from(rel), text.to_owned());
    let sources = [
        // Allowed: the layers that may call git.
        file("git/mod.rs", "pub struct Direct;\n"),
        file("cli/a.rs", "let git = repo.git(crate::git::Direct);\n"),
        file("policy/b.rs", "use crate::git::Direct;\n"),
        // Not allowed: naming it above sessions, however it got there, or handing it on.
        file(
            "supervisor/c.rs",
            "fn f() {}\nlet git = repo.git(crate::session::Direct);\n",
        ),
        file("epic/d.rs", "use crate::policy::Direct as D;\n"),
        file("session/e.rs", "pub use crate::git::Direct;\n"),
        file(
            "report/f.rs",
            "// Direct in a comment\nlet s = \"Direct\";\n",
        ),
    ];
    assert_eq!(
        git_handle_leaks(&sources),
        [
            "src/supervisor/c.rs:2",
            "src/epic/d.rs:1",
            "src/session/e.rs:1"
        ]
    );
}

/// The import circles among the modules of every folder of a layer, each as its modules in
/// order. A file counts as the child of the folder it lies under (a subfolder's files as
/// that subfolder); a folder's `mod.rs` is its front door and no node there, but a name it
/// re-exports counts as the module it comes from.
fn import_circles(sources: &[(PathBuf, String)]) -> Vec<String> {
    let modules: Vec<Vec<String>> = sources.iter().map(|(rel, _)| module_of(rel)).collect();
    let is_module = |path: &[String]| modules.iter().any(|m| m.starts_with(path));
    // Every folder: a module with children, inside a layer.
    let mut folders: BTreeSet<Vec<String>> = BTreeSet::new();
    for m in &modules {
        for len in 1..m.len() {
            if allowed().contains_key(m[0].as_str()) {
                folders.insert(m[..len].to_vec());
            }
        }
    }
    let mut circles = Vec::new();
    for folder in &folders {
        let depth = folder.len();
        // Names the folder's front door re-exports, and the child each comes from.
        let mut exported: BTreeMap<String, String> = BTreeMap::new();
        for ((rel, text), module) in sources.iter().zip(&modules) {
            if module != folder || !rel.ends_with("mod.rs") {
                continue;
            }
            for statement in code_only(text).split(';') {
                let statement = statement.trim();
                let Some(at) = statement.find("use ") else {
                    continue;
                };
                if !statement.starts_with("pub") {
                    continue;
                }
                let path = statement[at + 4..].trim();
                let path = match path.split("::").next() {
                    Some("crate" | "super" | "self") => path.to_owned(),
                    _ => format!("self::{path}"),
                };
                for (_, p) in named_paths(folder, &format!("use {path};")) {
                    if p.len() > depth + 1 && p.starts_with(folder) {
                        exported.insert(p[p.len() - 1].clone(), p[depth].clone());
                    }
                }
            }
        }
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for ((_, text), module) in sources.iter().zip(&modules) {
            if module.len() <= depth || !module.starts_with(folder) {
                continue;
            }
            let node = &module[depth];
            let entry = edges.entry(node.clone()).or_default();
            for (_, path) in named_paths(module, without_unit_tests(text)) {
                if path.len() <= depth || !path.starts_with(folder) {
                    continue;
                }
                let name = &path[depth];
                let target = if is_module(&path[..=depth]) {
                    Some(name.clone())
                } else {
                    exported.get(name).cloned()
                };
                if let Some(target) = target.filter(|t| t != node) {
                    entry.insert(target);
                }
            }
        }
        let place = folder.join("/");
        circles.extend(
            circles_of(&edges)
                .into_iter()
                .map(|c| format!("src/{place}: {c}")),
        );
    }
    circles
}

/// The circles of a graph, each as `a -> b -> a` (depth first; a node on the path met
/// again closes one).
fn circles_of(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
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
    let mut done = BTreeSet::new();
    let mut found = Vec::new();
    for node in edges.keys() {
        visit(node, edges, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn no_layer_folder_has_an_import_circle() {
    let circles = import_circles(&sources());
    assert!(
        circles.is_empty(),
        "modules of one layer that import each other, round: put what both need in a leaf \
         of its own\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_circle_check_sees_front_doors_re_exports_and_subfolders() {
    let file = |rel: &str, text: &str| (PathBuf::from(rel), text.to_owned());
    // The circle the old reader missed: a subfolder's front door naming its sibling.
    let through_a_front_door = [
        file("git/mod.rs", "mod repo;\nmod watch;\n"),
        file(
            "git/repo.rs",
            "struct Repo { feed: super::watch::FeedSetting }\n",
        ),
        file("git/watch/mod.rs", "use super::repo::Repo;\n"),
    ];
    assert_eq!(
        import_circles(&through_a_front_door),
        ["src/git: repo -> watch -> repo"]
    );
    // Through a name the folder re-exports, and one folder down.
    let through_a_re_export = [
        file("git/mod.rs", "pub use repo::{Repo, Other};\n"),
        file("git/repo.rs", "use super::snapshot::Dirt;\n"),
        file("git/snapshot.rs", "fn f(r: &super::Repo) {}\n"),
        file("git/watch/a.rs", "use super::b::B;\n"),
        file("git/watch/b.rs", "use crate::git::watch::a::A;\n"),
    ];
    assert_eq!(
        import_circles(&through_a_re_export),
        [
            "src/git: repo -> snapshot -> repo",
            "src/git/watch: a -> b -> a"
        ]
    );
    // Unit tests may reach anywhere; a one-way import is no circle.
    let fine = [
        file(
            "git/repo.rs",
            "use super::refs;\n#[cfg(test)]\nmod tests {\n    use super::super::refs;\n}\n",
        ),
        file(
            "git/refs.rs",
            "#[cfg(test)]\nmod tests {\n    use crate::git::repo::Repo;\n}\n",
        ),
    ];
    assert!(import_circles(&fine).is_empty());
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
    let mut long = Vec::new();
    let mut measured = 0;
    for (rel, text) in sources() {
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
                long.push(format!(
                    "src/{}:{start} {name} ({length} lines)",
                    rel.display()
                ));
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

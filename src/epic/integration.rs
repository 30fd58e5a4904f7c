//! The integration checkpoint after a story with dependents: before a dependent
//! builds on a finished story, git-bmad looks at what the story really did.
//!
//! - **Shared files**: the files it changed that a dependent's `touches` name.
//! - **Interfaces**: public items (by language: `pub` in Rust, `export` in TypeScript and
//!   JavaScript, top-level names in Python, capitalised names in Go, `public` in Java, C#,
//!   Swift and PHP) that it changed or removed in the directories a dependent works in.
//!   Added items are recorded but do not warn: a dependent exists to use them.
//! - **Tests**: the full test suite (`checks.test_command`) on its branch.
//!
//! Green: none of those. Yellow: overlaps or interface changes, tests pass. Red: tests fail.
//! The run decides what a light means (see `run.rs`): with human checkpoints, yellow and red
//! wait for an answer; without, yellow goes on with its warnings journaled and red holds the
//! dependents back.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Duration;

use regex::Regex;

use super::names::story_session_name;
use super::options::EpicOptions;
use super::plan::{Plan, Planned};
use super::state::{record, EpicState};
use super::Error;
use crate::paths;
use crate::session::closeout::{self, ChangedFile};
use crate::session::schema::Stage;
use crate::session::schema::{Body, IntegrationChecked};
use crate::session::{Repo, Session};

/// How long the full test suite may run at a checkpoint (a story step's default timeout).
const TEST_TIMEOUT: Duration = Duration::from_secs(2 * 3600);

/// Run every checkpoint that is due (each story looked at once per invocation, once done,
/// in `checked`) and journal what it found.
pub(super) fn check_due(
    repo: &Repo,
    epic: &Session,
    plan: &Plan,
    state: &mut EpicState,
    checked: &mut HashSet<String>,
    options: &EpicOptions<'_>,
) -> Result<(), Error> {
    for story in plan.to_run() {
        let done = story.integration_checkpoint && state.story(&story.key).stage == Stage::Done;
        if !done || checked.contains(&story.key) || options.interrupt.load(Ordering::SeqCst) {
            continue;
        }
        // Decided once per invocation: the branch does not move under a running epic.
        checked.insert(story.key.clone());
        let session = closeout::find_by_name(repo, &story_session_name(&story.key))?;
        let head = match &session {
            Some(session) => closeout::branch_head(repo, session)?.map(|h| h.to_string()),
            None => None,
        };
        if !due(story, state, head.as_deref()) {
            continue;
        }
        (options.progress)(&format!("{}: integration checkpoint", story.key));
        let result = run(repo, plan, story, state, session.as_ref(), head, options)?;
        (options.progress)(&format!("{}: integration {}", story.key, summary(&result)));
        record(
            repo,
            epic,
            state,
            Some(story.key.clone()),
            Body::IntegrationChecked(result),
        )?;
    }
    Ok(())
}

/// Whether the checkpoint after a done story with dependents is due, its branch at `head`:
/// it was never checked, or a checkpoint that was not green saw another commit than its
/// branch holds now (someone fixed it).
fn due(story: &Planned, state: &EpicState, head: Option<&str>) -> bool {
    match &state.story(&story.key).integration {
        None => true,
        Some(checked) if checked.light == "green" => false,
        Some(checked) => head.is_some_and(|h| h != checked.head),
    }
}

/// Run the checkpoint after `story` (its session, if it still has one, its branch at
/// `head`): the branch's changes since the commit it started at, its dependents' `touches`,
/// and the test suite on a clean checkout of `head`.
fn run(
    repo: &Repo,
    plan: &Plan,
    story: &Planned,
    state: &EpicState,
    session: Option<&Session>,
    head: Option<String>,
    options: &EpicOptions<'_>,
) -> Result<IntegrationChecked, Error> {
    let dependents: Vec<Dependent<'_>> = plan
        .to_run()
        .filter(|s| s.depends_on.contains(&story.key))
        .map(|s| Dependent {
            key: &s.key,
            touches: &s.touches,
        })
        .collect();
    let Some(session) = session else {
        let mut checked = check(
            &[],
            &dependents,
            (true, "nothing checked: the story's session is gone".into()),
            "",
        );
        checked.light = "yellow".into();
        return Ok(checked);
    };
    let baseline = state.story(&story.key).detail.baseline.unwrap_or_default();
    let changes = closeout::changes_since(repo, session, &baseline)?.unwrap_or_default();
    let head = head.unwrap_or_default();
    let tests = match (
        options.config.checks.test_command.as_deref(),
        crate::session::ObjectId::from_hex(head.as_bytes()),
    ) {
        (None, _) => (
            true,
            "no test suite to run (checks.test_command)".to_owned(),
        ),
        (Some(command), Ok(commit)) => super::judge::tests_on(
            repo,
            commit,
            &[],
            command,
            options.config,
            TEST_TIMEOUT,
            options.interrupt,
        )?,
        (Some(_), Err(_)) => (false, format!("the branch's head {head:?} is not a commit")),
    };
    Ok(check(&changes, &dependents, tests, &head))
}

/// A dependent as the checkpoint sees it: its key and its `touches`.
pub struct Dependent<'a> {
    /// The story key.
    pub key: &'a str,
    /// The paths or patterns it expects to change.
    pub touches: &'a [String],
}

/// Judge a finished story's changes for its dependents. `tests` is the suite's verdict and
/// what it said; `head` the commit checked.
pub fn check(
    changes: &[ChangedFile],
    dependents: &[Dependent<'_>],
    tests: (bool, String),
    head: &str,
) -> IntegrationChecked {
    let mut overlaps = Vec::new();
    for d in dependents {
        for f in changes {
            if d.touches.iter().any(|t| paths::names(t, &f.path)) {
                overlaps.push(format!("{}: {}", d.key, f.path));
            }
        }
    }
    let mut interfaces = Vec::new();
    let mut added = Vec::new();
    for f in changes {
        // A dependent with no `touches` could work anywhere.
        let near = dependents
            .iter()
            .any(|d| d.touches.is_empty() || d.touches.iter().any(|t| near(t, &f.path)));
        for (item, change) in interface_changes(f) {
            let line = format!("{}: {item} {change}", f.path);
            match change {
                "added" => added.push(line),
                _ if near => interfaces.push(line),
                _ => {}
            }
        }
    }
    let light = if !tests.0 {
        "red"
    } else if overlaps.is_empty() && interfaces.is_empty() {
        "green"
    } else {
        "yellow"
    };
    IntegrationChecked {
        light: light.into(),
        head: head.to_owned(),
        dependents: dependents.iter().map(|d| d.key.to_owned()).collect(),
        overlaps,
        interfaces,
        added,
        tests_ok: tests.0,
        tests: tests.1,
    }
}

/// What a checkpoint found, in one paragraph for a gate or the journal.
pub fn summary(checked: &IntegrationChecked) -> String {
    let mut out = format!(
        "{} for {}",
        checked.light.to_uppercase(),
        checked.dependents.join(", ")
    );
    if !checked.tests_ok {
        out.push_str(&format!("; the test suite fails: {}", checked.tests));
    }
    if !checked.overlaps.is_empty() {
        out.push_str(&format!(
            "; changed files dependents touch: {}",
            checked.overlaps.join(", ")
        ));
    }
    if !checked.interfaces.is_empty() {
        out.push_str(&format!(
            "; public interfaces changed: {}",
            checked.interfaces.join(", ")
        ));
    }
    out
}

/// A `touches` entry is near the file: it names it, or it lies in the file's directory.
fn near(entry: &str, path: &str) -> bool {
    if paths::names(entry, path) {
        return true;
    }
    let entry = paths::trimmed(entry);
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let entry_dir = entry.rsplit_once('/').map_or("", |(d, _)| d);
    !dir.is_empty() && (entry_dir == dir || entry == dir)
}

/// The public items a file's change touched: (item, `added` | `removed` | `changed`).
fn interface_changes(file: &ChangedFile) -> Vec<(String, &'static str)> {
    let Some(pattern) = language(&file.path) else {
        return Vec::new();
    };
    let names = |lines: &[String]| -> BTreeMap<String, String> {
        lines
            .iter()
            .filter_map(|l| public_item(pattern, l))
            .collect()
    };
    let (before, after) = (names(&file.removed), names(&file.added));
    let mut out = Vec::new();
    for (name, item) in &after {
        match before.get(name) {
            None => out.push((item.clone(), "added")),
            Some(_) => out.push((item.clone(), "changed")),
        }
    }
    for (name, item) in &before {
        if !after.contains_key(name) {
            out.push((item.clone(), "removed"));
        }
    }
    out
}

/// The name of the public item a line declares, and the item as shown (`pub fn connect`).
fn public_item(pattern: &Regex, line: &str) -> Option<(String, String)> {
    let caps = pattern.captures(line)?;
    let name = caps.name("name")?.as_str();
    let kind = caps.name("kind").map_or("", |k| k.as_str()).trim();
    let shown = if kind.is_empty() {
        name.to_owned()
    } else {
        format!("{kind} {name}")
    };
    Some((name.to_owned(), shown))
}

/// The declaration pattern of the file's language, by extension; `None`: not a language
/// whose public items git-bmad reads.
fn language(path: &str) -> Option<&'static Regex> {
    static PATTERNS: OnceLock<Vec<(&'static [&'static str], Regex)>> = OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        let table: [(&'static [&'static str], &str); 7] = [
            (
                &["rs"],
                r"^\s*pub\s+(?:(?:async|unsafe|const|extern\s+\S+)\s+)*(?P<kind>fn|struct|enum|trait|type|const|static|mod|union)\s+(?P<name>[A-Za-z_]\w*)",
            ),
            (
                &["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"],
                r"^\s*export\s+(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?P<kind>function\*?|class|interface|type|enum|const|let|var|namespace)\s+(?P<name>[A-Za-z_$][\w$]*)",
            ),
            (
                &["py", "pyi"],
                r"^(?P<kind>def|async def|class)\s+(?P<name>[A-Za-z]\w*)",
            ),
            (
                &["go"],
                r"^(?P<kind>func|type|var|const)\s+(?:\([^)]*\)\s*)?(?P<name>[A-Z]\w*)",
            ),
            (
                &["java", "cs", "scala"],
                r"^\s*public\s+(?:(?:static|final|abstract|sealed|override|virtual|async|partial|readonly)\s+)*(?P<kind>class|interface|enum|record|struct|[\w<>\[\],?]+)\s+(?P<name>[A-Za-z_]\w*)\s*[({<:]",
            ),
            (
                &["swift"],
                r"^\s*(?:public|open)\s+(?:(?:static|final|class)\s+)*(?P<kind>func|class|struct|enum|protocol|var|let|typealias)\s+(?P<name>[A-Za-z_]\w*)",
            ),
            (
                &["php"],
                r"^\s*(?:(?:abstract|final)\s+)?(?:public\s+(?:static\s+)?)?(?P<kind>class|interface|trait|function)\s+(?P<name>[A-Za-z_]\w*)",
            ),
        ];
        table
            .into_iter()
            .filter_map(|(exts, re)| Regex::new(re).ok().map(|re| (exts, re)))
            .collect()
    });
    let ext = path.rsplit_once('.')?.1;
    patterns
        .iter()
        .find(|(exts, _)| exts.contains(&ext))
        .map(|(_, re)| re)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str, added: &[&str], removed: &[&str]) -> ChangedFile {
        ChangedFile {
            path: path.into(),
            added: added.iter().map(|s| s.to_string()).collect(),
            removed: removed.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn dependents(touches: &[String]) -> Vec<Dependent<'_>> {
        vec![Dependent {
            key: "3-3-sync",
            touches,
        }]
    }

    #[test]
    fn a_story_that_keeps_to_its_own_files_is_green() {
        let touches = vec!["src/sync".to_owned()];
        let changes = [change("src/api/client.rs", &["pub fn get() {}"], &[])];
        let c = check(&changes, &dependents(&touches), (true, "ok".into()), "abc");
        assert_eq!(c.light, "green", "{c:#?}");
        assert_eq!(c.added, vec!["src/api/client.rs: fn get added"]);
        assert!(c.overlaps.is_empty() && c.interfaces.is_empty());
    }

    #[test]
    fn a_changed_file_a_dependent_touches_is_yellow() {
        let touches = vec!["src/sync/".to_owned(), "docs/*.md".to_owned()];
        let changes = [
            change("src/sync/queue.rs", &["let x = 1;"], &[]),
            change("docs/sync.md", &["text"], &[]),
            change("src/synced.rs", &["x"], &[]),
        ];
        let c = check(&changes, &dependents(&touches), (true, "ok".into()), "abc");
        assert_eq!(c.light, "yellow");
        assert_eq!(
            c.overlaps,
            vec!["3-3-sync: src/sync/queue.rs", "3-3-sync: docs/sync.md"]
        );
    }

    #[test]
    fn a_changed_or_removed_public_item_near_a_dependent_is_yellow_by_language() {
        let touches = vec!["src/lib/sync.ts".to_owned()];
        let cases = [
            (
                "src/lib/api.ts",
                "export async function fetchAll(a: string) {",
                "export async function fetchAll() {",
                "function fetchAll",
            ),
            (
                "src/lib/x.rs",
                "pub fn get(a: u8)",
                "pub fn get()",
                "fn get",
            ),
            ("src/lib/m.py", "def load(a):", "def load():", "def load"),
            (
                "src/lib/m.go",
                "func (c *Client) Fetch(a int) {",
                "func (c *Client) Fetch() {",
                "func Fetch",
            ),
            (
                "src/lib/A.java",
                "public static String name(int a) {",
                "public static String name() {",
                "String name",
            ),
        ];
        for (path, new, old, shown) in cases {
            let changes = [change(path, &[new], &[old])];
            let c = check(&changes, &dependents(&touches), (true, "ok".into()), "h");
            assert_eq!(c.light, "yellow", "{path}: {c:#?}");
            assert_eq!(c.interfaces, vec![format!("{path}: {shown} changed")]);
        }
        // Private items, and public ones far from every dependent, do not warn.
        let changes = [
            change(
                "src/lib/y.rs",
                &["pub(crate) fn f(a: u8)"],
                &["pub(crate) fn f()"],
            ),
            change("src/lib/m.py", &["def _helper(a):"], &["def _helper():"]),
            change("src/other/z.rs", &[], &["pub struct Gone;"]),
        ];
        let c = check(&changes, &dependents(&touches), (true, "ok".into()), "h");
        assert_eq!(c.light, "green", "{c:#?}");
    }

    #[test]
    fn a_removed_item_counts_for_a_dependent_with_no_touches_and_failing_tests_are_red() {
        let changes = [change("src/other/z.rs", &[], &["pub struct Gone;"])];
        let c = check(&changes, &dependents(&[]), (true, "ok".into()), "h");
        assert_eq!(c.interfaces, vec!["src/other/z.rs: struct Gone removed"]);
        let c = check(&changes, &dependents(&[]), (false, "exit 1".into()), "h");
        assert_eq!(c.light, "red");
        assert!(summary(&c).starts_with("RED for 3-3-sync; the test suite fails: exit 1"));
    }
}

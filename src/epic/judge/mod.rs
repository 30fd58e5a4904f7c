//! The judge of a story's work, out of its agents' reach. Before a story's branch is
//! pushed, git-bmad runs the tests itself:
//!
//! - **with its own tools**: the test command comes from `.bmad/config.yaml` at the story's
//!   base commit; a story that changes that configuration, CI configuration or a file the
//!   command runs (`./test.sh`) is not judged by rules of its own: a human is asked first,
//!   with the diff (so is a story that deletes or empties tests, or works outside its scope);
//! - **on the commit it pushes**, in a clean checkout of exactly that commit (a repository
//!   of its own, so nothing an agent left in its worktree counts), with no credential in
//!   the environment ([`crate::env::child::untrusted`]);
//! - **counting**: the number of tests the runner reports passing may not fall below the
//!   base's;
//! - **with tests the agents never saw**: the acceptance tests written from the story's
//!   criteria before its dev began ([`hidden`]), laid over the commit, must pass;
//! - **differentially**: a story's new tests that all pass on the base's code are no
//!   evidence of its work, and a human is asked (unless it says it is a refactor).

mod counts;
mod differential;
pub mod hidden;
pub mod journaled;
mod rules;
mod run;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

pub use counts::{passed, Passed};
pub use rules::{is_test_file, Scope};
use run::run_on;
pub use run::{checkout, Overlay, Walls};

use super::Error;
use crate::config::Config;
use crate::policy::rules::{Rule, JUDGE_CHANGED, OUT_OF_SCOPE, TESTS_PASS_ON_BASE, TESTS_REMOVED};
use crate::policy::secrets::redact;
use crate::session::{self, ObjectId, Repo, TreeChange};
use crate::supervisor::contain;

/// The verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// Push it; the evidence, in one line.
    Pass(String),
    /// Not done, and why.
    Fail(String),
    /// A human decides first: the story changed the rules it is judged by, removed tests,
    /// or worked outside its scope.
    Ask(Concern),
}

/// What the judge asks a human about, one kind per rule it journals: each says itself at the
/// gate, so a new kind cannot read as another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finding {
    /// The branch changed the files the judge judges it with.
    JudgeChanged,
    /// It deleted or emptied tests.
    TestsRemoved,
    /// It added tests that all pass without its code, on the base.
    TestsPassOnBase,
    /// It changed files outside its `touches`.
    OutOfScope,
}

impl Finding {
    /// Every kind, in the order the judge names them.
    pub const ALL: [Finding; 4] = [
        Finding::JudgeChanged,
        Finding::TestsRemoved,
        Finding::TestsPassOnBase,
        Finding::OutOfScope,
    ];

    /// The policy rule it is journaled under.
    pub fn rule(self) -> &'static Rule {
        match self {
            Finding::JudgeChanged => &JUDGE_CHANGED,
            Finding::TestsRemoved => &TESTS_REMOVED,
            Finding::TestsPassOnBase => &TESTS_PASS_ON_BASE,
            Finding::OutOfScope => &OUT_OF_SCOPE,
        }
    }

    /// What the branch did, naming `paths`, as a gate says it.
    fn said(self, paths: &str) -> String {
        match self {
            Finding::JudgeChanged => format!("changed files git-bmad judges it with ({paths})"),
            Finding::TestsRemoved => format!("deleted or emptied test files: {paths}"),
            Finding::TestsPassOnBase => {
                format!("added tests that all pass without its code, on the base: {paths}")
            }
            Finding::OutOfScope => format!("changed outside its scope: {paths}"),
        }
    }
}

/// What the judge asks a human about a story's branch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Concern {
    /// Each kind of finding with the paths that make it.
    pub findings: Vec<(Finding, Vec<String>)>,
    /// The diff of the judge's files the story changed, redacted and cut short.
    pub diff: String,
}

impl Concern {
    /// The findings in one line.
    pub fn summary(&self) -> String {
        let said: Vec<String> = self
            .findings
            .iter()
            .map(|(finding, paths)| finding.said(&paths.join(", ")))
            .collect();
        said.join("; ")
    }

    /// What a human reads at the gate: the findings, then the diff of the judge's files.
    pub fn evidence(&self) -> String {
        let mut text = String::new();
        for (finding, paths) in &self.findings {
            text.push_str(&format!("{}: {}\n", finding.rule().id, paths.join(", ")));
        }
        if !self.diff.is_empty() {
            text.push('\n');
            text.push_str(&self.diff);
        }
        text
    }

    fn has(&self, finding: Finding) -> bool {
        self.findings.iter().any(|(f, _)| *f == finding)
    }
}

/// The longest diff a gate shows.
const DIFF_SHOWN: usize = 6000;

/// What is judged: a story's branch from `base` to `head`, and the scope it declared.
pub struct Work<'a> {
    /// The commit the story started at.
    pub base: ObjectId,
    /// The commit to be pushed.
    pub head: ObjectId,
    /// What the branch changes from `base` to `head`.
    pub changes: &'a [TreeChange],
    /// Its `touches`, and every other story's.
    pub scope: rules::Scope<'a>,
    /// Its own file, which moving its status changes.
    pub story_file: Option<&'a str>,
    /// A human accepted what the judge asked about ([`Judgement::Ask`]).
    pub accepted: bool,
    /// The story says it changes no behaviour (a refactor): new tests that pass on the base
    /// are what it should have.
    pub refactor: bool,
    /// The acceptance tests written from its criteria before its dev began, if any.
    pub hidden: Option<&'a hidden::Hidden>,
}

/// Judge `work`. `fallback` is the configuration to use when the base has no
/// `.bmad/config.yaml` (the user's own).
pub fn judge(
    repo: &Repo,
    work: &Work<'_>,
    fallback: &Config,
    timeout: Duration,
    interrupt: &AtomicBool,
) -> Result<Judgement, Error> {
    let (base, head) = (work.base, work.head);
    // Every run of the story's tests ends by one deadline: together, within `timeout`.
    let deadline = Instant::now() + timeout;
    let config = match config_at(repo, base)? {
        Ok(Some(config)) => config,
        Ok(None) => fallback.clone(),
        Err(why) => return Ok(Judgement::Fail(why)),
    };
    let command = config.checks.test_command.clone();
    // The walls are this machine's policy (the run's config); the network the base's.
    let walls = Walls {
        containment: contain::decide(fallback)?,
        network: config.checks.network,
        passed_env: config.runners.env.clone(),
    };
    let mut concern = concern(repo, work, command.as_deref())?;
    if let (Some(command), false, false) = (&command, work.accepted, work.refactor) {
        let passing = differential::new_tests_passing_on_base(
            repo, work, command, &walls, deadline, interrupt,
        )?;
        if !passing.is_empty() {
            concern.findings.push((Finding::TestsPassOnBase, passing));
        }
    }
    if !concern.findings.is_empty() && !work.accepted {
        return Ok(Judgement::Ask(concern));
    }
    // What a human let stand is said with the evidence.
    let scope = if concern.findings.is_empty() {
        String::new()
    } else {
        format!("; a human accepted that it {}", concern.summary())
    };
    let Some(command) = command else {
        return Ok(Judgement::Pass(format!(
            "no tests run: the base sets no checks.test_command{scope}"
        )));
    };
    let ran = run_on(repo, head, &[], &command, &walls, deadline, interrupt)?;
    if !ran.green {
        return Ok(Judgement::Fail(format!(
            "`{command}` fails on {} in a clean checkout:\n{}",
            short(head),
            ran.excerpt
        )));
    }
    let accepted = match work.hidden.filter(|h| !h.files.is_empty()) {
        None => String::new(),
        Some(hidden) => {
            let ran = run_on(
                repo,
                head,
                &hidden.files,
                &command,
                &walls,
                deadline,
                interrupt,
            )?;
            // Their output would tell the next dev what the tests ask: the record names
            // where a person reads them instead.
            if !ran.green {
                return Ok(Judgement::Fail(format!(
                    "the acceptance tests written from its criteria before its dev began fail \
                     on {} (`{command}` over them: {}); they are kept out of the agents' reach, \
                     in {}",
                    short(head),
                    ran.exit,
                    hidden.place.display()
                )));
            }
            format!(
                "; its {} acceptance test file(s), unseen by its agents, pass",
                hidden.files.len()
            )
        }
    };
    let at_base = base_count(repo, base, &command, &walls, deadline, interrupt)?;
    let evidence = match (ran.passed, at_base) {
        (Some(now), Some(then))
            if now.count < then.count && !concern.has(Finding::TestsRemoved) =>
        {
            return Ok(Judgement::Fail(format!(
            "`{command}` passes {} tests on {}, {} at the base {}: tests were removed or skipped",
            now.count,
            short(head),
            then.count,
            short(base)
        )))
        }
        (Some(now), Some(then)) => format!(
            "{} tests passed ({} at the base, {})",
            now.count, then.count, now.runner
        ),
        (Some(now), None) => format!(
            "{} tests passed ({}; the base gave no count)",
            now.count, now.runner
        ),
        // The base's runner counted its tests: one that now counts none ran none (an
        // `os._exit(0)` in a test package's init, a runner told to collect nothing).
        (None, Some(then)) if then.count > 0 && !concern.has(Finding::TestsRemoved) => {
            return Ok(Judgement::Fail(format!(
                "`{command}` exits 0 on {} but reports no passed test, where {} passed at the \
                 base {} ({}): the tests did not run",
                short(head),
                then.count,
                short(base),
                then.runner
            )))
        }
        (None, _) => "the runner reported no test count".to_owned(),
    };
    Ok(Judgement::Pass(format!(
        "`{command}` passed on {} in a clean checkout: {evidence}{accepted}{scope}",
        short(head)
    )))
}

/// What a human must decide about the story's branch before it is judged: changes to the
/// judge's files (with their diff), tests deleted or emptied, work outside its scope.
fn concern(repo: &Repo, work: &Work<'_>, command: Option<&str>) -> Result<Concern, Error> {
    let base = work.base;
    let at_base = |path: &str| {
        let bytes = session::repository::file_at(repo, &base.to_string(), path).ok()??;
        // What a script runs is read from its text; a binary names nothing.
        Some(String::from_utf8(bytes).unwrap_or_default())
    };
    let named = command
        .map(|c| rules::named_files(c, at_base))
        .unwrap_or_default();
    let changes = work.changes;
    let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
    let at_head = |path: &str| {
        let bytes = session::repository::file_at(repo, &work.head.to_string(), path).ok()??;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    };
    // A manifest the base has is the judge's where its test sections changed, and only
    // there (a story's new dependency is the project's business).
    let sections_changed = |p: &str| {
        let section =
            |text: Option<String>| text.and_then(|t| rules::test_sections(p, &t)).flatten();
        if rules::test_sections(p, "").is_none() {
            return false;
        }
        let before = at_base(p);
        before.is_some() && section(before) != section(at_head(p))
    };
    let judges: Vec<&str> = paths
        .iter()
        .copied()
        .filter(|p| rules::is_judges(p, &named) || sections_changed(p))
        .collect();
    let mut concern = Concern::default();
    if !judges.is_empty() {
        concern.diff = judges_diff(repo, base, work.head, &judges)?;
        let judges = judges.iter().map(|p| p.to_string()).collect();
        concern.findings.push((Finding::JudgeChanged, judges));
    }
    let removed = removed_tests(changes);
    if !removed.is_empty() {
        concern.findings.push((Finding::TestsRemoved, removed));
    }
    // Each path is named once, by the first rule it breaks.
    let named_already = |p: &str| {
        concern
            .findings
            .iter()
            .any(|(_, paths)| paths.iter().any(|q| q == p))
    };
    let outside = rules::out_of_scope(&paths, &work.scope, |p| {
        super::verify::is_bookkeeping(p, work.story_file) || named_already(p)
    });
    if !outside.is_empty() {
        concern.findings.push((Finding::OutOfScope, outside));
    }
    Ok(concern)
}

/// The diff of the judge's files `paths` from `base` to `head`, as a gate shows it:
/// redacted, and cut short.
fn judges_diff(
    repo: &Repo,
    base: ObjectId,
    head: ObjectId,
    paths: &[&str],
) -> Result<String, Error> {
    let diff = session::repository::diff_paths(repo, base, head, paths)?;
    Ok(cut(&redact(&diff), DIFF_SHOWN))
}

/// `text` cut to at most `max` bytes at a line's end, saying so.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').unwrap_or(end);
    format!(
        "{}\n… ({} more bytes of diff)",
        &text[..end],
        text.len() - end
    )
}

/// Whether `command` passes on a clean checkout of `commit` with `overlay` laid over it,
/// run as the judge runs it, and what it said: the count when it passed, the end of its
/// output when it failed.
pub fn tests_on(
    repo: &Repo,
    commit: ObjectId,
    overlay: &[Overlay],
    command: &str,
    config: &Config,
    timeout: Duration,
    interrupt: &AtomicBool,
) -> Result<(bool, String), Error> {
    let walls = Walls {
        containment: contain::decide(config)?,
        network: config.checks.network,
        passed_env: config.runners.env.clone(),
    };
    let deadline = Instant::now() + timeout;
    let ran = run_on(repo, commit, overlay, command, &walls, deadline, interrupt)?;
    let said = match (ran.green, ran.passed) {
        (true, Some(p)) => format!(
            "`{command}` passed on {}: {} tests ({})",
            short(commit),
            p.count,
            p.runner
        ),
        (true, None) => format!("`{command}` passed on {}", short(commit)),
        (false, _) => format!("`{command}` fails on {}:\n{}", short(commit), ran.excerpt),
    };
    Ok((ran.green, said))
}

/// The base's `.bmad/config.yaml`: `Ok(None)` when it has none, `Err` with why when it
/// does not parse.
pub fn config_at(repo: &Repo, base: ObjectId) -> Result<Result<Option<Config>, String>, Error> {
    let path = crate::config::CONFIG_PATH;
    let Some(bytes) = session::repository::file_at(repo, &base.to_string(), path)? else {
        return Ok(Ok(None));
    };
    let text = String::from_utf8_lossy(&bytes);
    Ok(Config::parse(&text, Path::new(path))
        .map(Some)
        .map_err(|e| {
            format!("the base's {path} is not valid, so there is nothing to judge with: {e}")
        }))
}

/// Test files the change deleted or emptied; one deleted while a test file of the same
/// name was added elsewhere was moved.
fn removed_tests(changes: &[TreeChange]) -> Vec<String> {
    const EMPTY_BLOB: &str = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
    let name = |path: &str| path.rsplit('/').next().unwrap_or(path).to_owned();
    let added: Vec<String> = changes
        .iter()
        .filter(|c| c.status == 'A' && rules::is_test_file(&c.path))
        .map(|c| name(&c.path))
        .collect();
    changes
        .iter()
        .filter(|c| rules::is_test_file(&c.path))
        .filter(|c| {
            (c.status == 'D' && !added.contains(&name(&c.path)))
                || (c.status != 'D' && c.new_id == EMPTY_BLOB)
        })
        .map(|c| c.path.clone())
        .collect()
}

/// What the base's tests pass, run once per base and command in this process: stories
/// stacked on one base share it.
fn base_count(
    repo: &Repo,
    base: ObjectId,
    command: &str,
    walls: &Walls,
    deadline: Instant,
    interrupt: &AtomicBool,
) -> Result<Option<Passed>, Error> {
    /// A base and a test command, and what passed there.
    type Counted = HashMap<(ObjectId, String), Option<Passed>>;
    static COUNTED: LazyLock<Mutex<Counted>> = LazyLock::new(Default::default);
    let key = (base, command.to_owned());
    if let Some(known) = COUNTED.lock().ok().and_then(|c| c.get(&key).copied()) {
        return Ok(known);
    }
    let ran = run_on(repo, base, &[], command, walls, deadline, interrupt)?;
    // A red base gives no count to hold the story to.
    let count = ran.passed.filter(|_| ran.green);
    if let Ok(mut counted) = COUNTED.lock() {
        counted.insert(key, count);
    }
    Ok(count)
}

fn short(id: ObjectId) -> String {
    id.to_string().chars().take(10).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_or_emptied_test_file_is_removed_and_a_moved_one_is_not() {
        let change = |status: char, path: &str, new_id: &str| TreeChange {
            status,
            path: path.into(),
            old_mode: "100644".into(),
            new_mode: "100644".into(),
            new_id: new_id.into(),
        };
        let changes = [
            change('D', "tests/test_api.py", "0"),
            change(
                'M',
                "tests/test_store.py",
                "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
            ),
            change('D', "tests/test_sync.py", "0"),
            change('A', "tests/unit/test_sync.py", "1"),
            change('D', "src/old.py", "0"),
        ];
        assert_eq!(
            removed_tests(&changes),
            vec!["tests/test_api.py", "tests/test_store.py"]
        );
    }
}

//! What people read, as reviewed snapshots: `status`, `list`, the journal's text form,
//! `report` and `doctor` of a session parked at a gate, and `doctor` naming a problem with
//! its fix. A wording or layout change fails here until its snapshot is reviewed and taken
//! (`cargo insta review`, or `INSTA_UPDATE=always cargo test test_snapshots` and the diff).
//! Ids, times, ages, the test's own folder and the machine's walls are shown as `[id]`,
//! `[time]`, `[age]`, `[root]` and the like; everything else is as printed.

use std::path::Path;

use crate::common::{write, TestEnv};

/// A playbook of two shell steps with a gate before the second: a run parks there.
const PLAYBOOK: &str = "name: greet
steps:
  - id: write
    runner: shell
    command: echo \"hello, world\" > greeting.txt
    postconditions: [diff_nonempty]
  - id: publish
    runner: shell
    command: cp greeting.txt README.md
    autonomy: always_gate
";

/// Assert `text` as snapshot `name`, with what changes from run to run shown as placeholders.
fn snapshot(env: &TestEnv, name: &str, text: &str) {
    let root = env.root().display().to_string();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    for (pattern, replacement) in [
        (regex::escape(&root), "[root]"),
        (r"\b\d{8}-\d{6}-[0-9a-f]{6}\b".to_owned(), "[id]"),
        (
            r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})".to_owned(),
            "[time]",
        ),
        (r"\b\d{4}-\d{2}-\d{2}\b".to_owned(), "[date]"),
        (r"\b\d{2}:\d{2}\b".to_owned(), "[hh:mm]"),
        (r"\b[0-9a-f]{40}\b".to_owned(), "[commit]"),
        (r"\b[0-9a-f]{10}\b".to_owned(), "[hex]"),
        // The padding after it too: "9s ago" and "10s ago" fill a column differently.
        (r"\b\d+(s|m|h|d) ago +".to_owned(), "[age] ago  "),
        (r"\b\d+ ms\b".to_owned(), "[n] ms"),
        (
            r"ssh-ed25519 [A-Za-z0-9+/=]+".to_owned(),
            "ssh-ed25519 [key]",
        ),
        // What walls a machine has is the machine's (its kernel's Landlock, bubblewrap).
        (
            r"(?m)^containment: .*$".to_owned(),
            "containment: [this machine's walls]",
        ),
    ] {
        settings.add_filter(&pattern, replacement);
    }
    settings.bind(|| insta::assert_snapshot!(name, text));
}

/// A repository with git-bmad set up and the playbook committed, and a session of it
/// parked at its gate: (repo, worktree).
fn parked(env: &TestEnv) -> (std::path::PathBuf, std::path::PathBuf) {
    let repo = env.repo("shop");
    env.bmad(&repo, &["init", "-q"]).success();
    write(&repo, ".bmad/playbooks/greet.yaml", PLAYBOOK);
    env.git(&repo, &["add", ".bmad"]);
    env.git(
        &repo,
        &["commit", "-q", "-m", "git-bmad config and a playbook"],
    );
    env.bmad(&repo, &["hooks", "install", "-q"]).success();
    env.bmad(&repo, &["start", "greeting", "--playbook", "greet", "-q"])
        .success();
    let wt = env.root().join("shop.greeting");
    env.bmad(&wt, &["run", "--progress", "silent"]).code(3);
    (repo, wt)
}

/// What a command printed, both streams, as a reader sees them in a terminal.
fn shown(env: &TestEnv, dir: &Path, args: &[&str], code: i32) -> String {
    let run = env.bmad(dir, args).code(code);
    format!(
        "$ git bmad {}\n{}{}",
        args.join(" "),
        run.stdout,
        if run.stderr.is_empty() {
            String::new()
        } else {
            format!("--- stderr\n{}", run.stderr)
        }
    )
}

#[test]
fn a_session_parked_at_a_gate_reads_as_reviewed() {
    let env = TestEnv::new();
    let (repo, wt) = parked(&env);
    snapshot(&env, "status_at_a_gate", &shown(&env, &wt, &["status"], 0));
    snapshot(&env, "list", &shown(&env, &repo, &["list"], 0));
    snapshot(&env, "journal", &shown(&env, &wt, &["journal"], 0));
    snapshot(&env, "report", &shown(&env, &repo, &["report"], 0));
    snapshot(&env, "doctor_clean", &shown(&env, &repo, &["doctor"], 0));
}

#[test]
fn doctor_names_a_problem_with_its_fix_as_reviewed() {
    let env = TestEnv::new();
    let (repo, wt) = parked(&env);
    // The worktree deleted by hand, as people do.
    std::fs::remove_dir_all(&wt).unwrap();
    snapshot(
        &env,
        "doctor_worktree_deleted",
        &shown(&env, &repo, &["doctor"], 1),
    );
}

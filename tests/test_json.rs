//! Every command's `--json` output parses, so scripts can rely on it.

use crate::common::{write, TestEnv};

#[test]
fn every_command_speaks_json() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let init = env.bmad(&repo, &["init", "--json"]).success().json();
    assert_eq!(init["config"]["config_written"], true);
    assert_eq!(init["playbooks"].as_array().unwrap().len(), 4);
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "bmad"]);
    let start = env.bmad(&repo, &["start", "j", "--json"]).success().json();
    let id = start["session"]["id"].as_str().unwrap().to_owned();
    let wt = std::path::PathBuf::from(start["session"]["worktree"].as_str().unwrap());
    write(&wt, "f.txt", "f\n");
    let runs = [
        env.bmad(&wt, &["checkpoint", "--json"]),
        env.bmad(&wt, &["status", "--json"]),
        env.bmad(&repo, &["list", "--json"]),
        env.bmad(&wt, &["journal", "--json"]),
        env.bmad(&wt, &["journal", "append", "note", "--json"]),
        env.bmad(&wt, &["journal", "export", "--json"]),
        env.bmad(&wt, &["rollback", "--dry-run", "1", "--json"]),
        env.bmad(&wt, &["rollback", "1", "--json"]),
        env.bmad(&wt, &["undo", "--json"]),
        env.bmad(&repo, &["doctor", "--json"]),
        env.bmad(&repo, &["prune", "--json"]),
        env.bmad(&repo, &["scan", "--json"]),
        env.bmad(&repo, &["playbook", "list", "--json"]),
        env.bmad(&repo, &["playbook", "validate", "template", "--json"]),
        env.bmad(&wt, &["finish", "--json"]),
        env.bmad(&repo, &["remove", &id, "--force", "--json"]),
    ];
    for run in runs {
        let run = run.success();
        let value = run.json();
        assert!(!value.is_null(), "{}", run.stdout);
        assert_eq!(run.stderr, "", "--json keeps stderr quiet");
    }
    // BMAD and spec-kit readers speak JSON too.
    write(
        &repo,
        "docs/stories/1-1-a.md",
        "# Story 1.1: A\n\nStatus: backlog\n",
    );
    write(&repo, "specs/001-a/spec.md", "# Spec\n");
    for args in [
        &["stories", "list", "--json"][..],
        &["stories", "next", "--json"],
        &["stories", "order", "--json"],
        &["stories", "check", "--json"],
        &["stories", "index", "--dry-run", "--json"],
        &["speckit", "status", "--json"],
    ] {
        let run = env.bmad(&repo, args).success();
        assert!(!run.json().is_null(), "{args:?}");
        assert_eq!(run.stderr, "", "{args:?}");
    }
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "story and spec"]);
    // A run parked at a gate answers in JSON too, with its exit code inside.
    let (_, wt) = env.start(&repo, "r");
    let gated = env.bmad(&wt, &["run", "template", "--json"]).code(3);
    assert_eq!(gated.json()["result"]["outcome"], "gated");
    assert_eq!(gated.json()["exit_code"], 3);
    assert_eq!(gated.stderr, "");
    let resumed = env.bmad(&wt, &["resume", "--json"]).code(3).json();
    assert_eq!(resumed["result"]["gate"]["step"], "approve");
    let done = env
        .bmad(&wt, &["answer", "continue", "--json"])
        .success()
        .json();
    assert_eq!(done["result"]["outcome"], "completed");
    // Errors under --json are JSON too, on stderr, with the exit code.
    let run = env.bmad(&repo, &["status", "nope", "--json"]).code(2);
    let err: serde_json::Value = serde_json::from_str(run.stderr.trim()).expect("error is JSON");
    assert_eq!(err["exit_code"], 2);
}

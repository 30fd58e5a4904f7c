//! Stacked stories meet in one branch: BMAD's workflows each write the sprint status, and
//! the runner merges its lines key by key; a conflict in the work itself stops the story
//! with the files named and nothing half-merged.

use crate::common::TestEnv;
use crate::test_epic::{dev_behaviour, epic_project, status, story};

const SPRINT: &str = "_bmad-output/implementation-artifacts/sprint-status.yaml";

#[test]
fn stacked_stories_whose_agents_all_write_the_sprint_status_merge() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    // As BMAD's dev-story does: the story's own line in the sprint status moves too.
    dev_behaviour(
        &env,
        &format!("sed -i \"s/^  $key: .*/  $key: review/\" {SPRINT}"),
    );
    env.bmad(&repo, &["epic", "run", "3", "--parallel", "2"])
        .success();
    let s = status(&env, &repo);
    for key in ["3-1-api-client", "3-2-storage", "3-3-sync-engine"] {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
    }
    // 3-3 is stacked on 3-1 and merged 3-2: its branch has every line as its story moved it.
    let sprint = env.git(&repo, &["show", &format!("bmad/3-3-sync-engine:{SPRINT}")]);
    for line in [
        "  3-1-api-client: review",
        "  3-2-storage: review",
        "  3-3-sync-engine: review",
    ] {
        assert!(sprint.contains(line), "{line}: {sprint}");
    }
    env.git(
        &repo,
        &[
            "merge-base",
            "--is-ancestor",
            "bmad/3-2-storage",
            "bmad/3-3-sync-engine",
        ],
    );
}

#[test]
fn a_conflict_in_the_work_stops_the_stacked_story_naming_the_files() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    // Both dependencies add their line at the end of one shared file (a test file, which
    // no story's scope bounds).
    dev_behaviour(&env, "echo \"// $key\" >> tests/shared.test.js");
    crate::common::write(&repo, "tests/shared.test.js", "// shared\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "a shared file"]);
    env.bmad(&repo, &["epic", "run", "3", "--parallel", "2"])
        .code(5);
    let s = status(&env, &repo);
    let st = story(&s, "3-3-sync-engine");
    assert_eq!(st["stage"], "failed", "{s:#}");
    let why = st["state"]["reason"].as_str().unwrap();
    assert!(
        why.contains("merging bmad/3-2-storage conflicts in tests/shared.test.js")
            && why.contains("merge it by hand in"),
        "{why}"
    );
    // Nothing half-merged is left in its worktree.
    let wt = env.root().join("proj.3-3-sync-engine");
    let dirty = env.git(&wt, &["status", "--porcelain"]);
    assert!(dirty.trim().is_empty(), "{dirty}");
    let merging = env
        .git_command(&wt)
        .args(["rev-parse", "-q", "--verify", "MERGE_HEAD"])
        .status()
        .unwrap();
    assert!(!merging.success(), "a merge is still in progress");
}

//! Nothing a session held is deleted unrecoverably: `remove` keeps it restorable, `restore`
//! brings it back exactly, `gc` deletes only what expired; moved worktrees are followed and
//! `doctor --fix` applies the safe repairs.

use std::path::Path;

use serde_json::Value;

use crate::common::{read, write, TestEnv};

/// `git bmad list --json`, or with `removed` `list --removed --json`.
fn sessions(env: &TestEnv, repo: &Path, removed: bool) -> Vec<Value> {
    let mut args = vec!["list", "--json"];
    if removed {
        args.push("--removed");
    }
    env.bmad(repo, &args)
        .success()
        .json()
        .as_array()
        .expect("a list")
        .clone()
}

/// The session state a restore must bring back: files as `add -A` records them, the index
/// with its stages, HEAD and the session branch.
fn state_of(env: &TestEnv, wt: &Path, branch: &str) -> (String, String, String) {
    (
        env.worktree_tree(wt),
        env.git(wt, &["ls-files", "--stage"]),
        env.git(wt, &["rev-parse", "HEAD", branch]),
    )
}

#[test]
fn a_forced_remove_keeps_files_untracked_files_index_and_branch_until_restore() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "work");
    write(&wt, "committed.md", "committed, unpushed\n");
    env.git(&wt, &["add", "committed.md"]);
    env.git(&wt, &["commit", "-q", "-m", "unpushed work"]);
    write(&wt, "staged.md", "staged\n");
    env.git(&wt, &["add", "staged.md"]);
    write(&wt, "staged.md", "staged, then changed\n");
    write(&wt, "untracked/notes.md", "never added\n");
    write(&wt, ".gitignore", "build/\n");
    write(&wt, "build/out.bin", "ignored output\n");
    let before = state_of(&env, &wt, "bmad/work");

    // Without --force it refuses, naming why; nothing is kept or deleted.
    let refused = env.bmad(&repo, &["remove", "work"]).code(1);
    assert!(refused.stderr.contains("uncommitted"), "{}", refused.stderr);
    assert!(sessions(&env, &repo, true).is_empty());

    let removed = env.bmad(&repo, &["remove", "work", "--force"]).success();
    assert!(
        removed.stderr.contains("git bmad restore work"),
        "{}",
        removed.stderr
    );
    assert!(!wt.exists());
    assert!(env
        .git(&repo, &["branch", "--list", "bmad/work"])
        .is_empty());
    assert!(sessions(&env, &repo, false).is_empty());
    let kept = sessions(&env, &repo, true);
    assert_eq!(kept[0]["id"], id.as_str());
    assert_eq!(kept[0]["forced"], true);
    let days =
        (kept[0]["keep_until"].as_i64().unwrap() - kept[0]["removed"].as_i64().unwrap()) / 86_400;
    assert_eq!(days, 14, "kept 14 days by default");
    // Everything stays reachable: a gc that prunes every unreachable object loses nothing.
    crate::common::wait_for_repacks(&repo);
    env.git(&repo, &["gc", "-q", "--prune=now"]);
    env.git(&repo, &["fsck", "--no-dangling"]);
    assert!(env
        .bmad(&repo, &["gc"])
        .success()
        .stderr
        .contains("0 removed session(s) deleted"));

    let restored = env
        .bmad(&repo, &["restore", "work", "--json"])
        .success()
        .json();
    assert_eq!(restored["restored"]["from"], "removed");
    assert_eq!(restored["restored"]["session"]["status"], "running");
    assert_eq!(
        state_of(&env, &wt, "bmad/work"),
        before,
        "files, index and branch are back"
    );
    assert_eq!(read(&wt, "untracked/notes.md"), "never added\n");
    assert!(
        !wt.join("build/out.bin").exists(),
        "ignored files are not kept (documented)"
    );
    let journal = env.bmad(&wt, &["journal", "--json"]).success().json();
    let kinds: Vec<&str> = journal
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"session_removed") && kinds.ends_with(&["session_restored", "checkpoint"]),
        "{kinds:?}"
    );
    assert!(sessions(&env, &repo, true).is_empty());
    env.bmad(&repo, &["doctor"]).success();
    // The restored session works like any other.
    write(&wt, "more.md", "more\n");
    env.bmad(&wt, &["checkpoint", "-m", "after restore"])
        .success();
}

#[test]
fn an_untouched_session_removes_without_force_and_restores() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "clean");
    env.bmad(&repo, &["remove", "clean"]).success();
    assert!(!wt.exists());
    let unknown = env.bmad(&repo, &["restore", "nope"]).code(2);
    assert!(
        unknown.stderr.contains("git bmad list --removed"),
        "{}",
        unknown.stderr
    );
    // Something in the way is named, and nothing is half-restored.
    write(
        &wt,
        "in-the-way.txt",
        "x
",
    );
    let blocked = env.bmad(&repo, &["restore", "clean"]).code(1);
    assert!(
        blocked.stderr.contains("move it away"),
        "{}",
        blocked.stderr
    );
    assert!(sessions(&env, &repo, false).is_empty());
    std::fs::remove_dir_all(&wt).unwrap();
    let restored = env.bmad(&repo, &["restore", &id[..12]]).success();
    assert!(wt.join(".git").exists());
    // A worktree made again is guarded like a new one: here, no hooks are installed.
    assert!(
        restored
            .stderr
            .contains("the policy hooks are not installed"),
        "{}",
        restored.stderr
    );
    assert_eq!(
        env.git(&wt, &["status", "--porcelain"]),
        "",
        "a clean worktree again"
    );
    env.bmad(&repo, &["doctor"]).success();
}

#[test]
fn restore_refuses_when_the_name_was_taken_since_and_says_what_to_do() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (old, _) = env.start(&repo, "x");
    env.bmad(&repo, &["remove", "x"]).success();
    let (new, _) = env.start(&repo, "x");
    assert_ne!(old, new);
    let refused = env.bmad(&repo, &["restore", &old]).code(1);
    assert!(
        refused
            .stderr
            .contains(&format!("session x ({new}) uses bmad/x")),
        "{}",
        refused.stderr
    );
    // Nothing half-restored: the old session's refs did not come back.
    assert!(env
        .git(
            &repo,
            &["for-each-ref", &format!("refs/bmad/sessions/{old}")]
        )
        .is_empty());
    assert_eq!(sessions(&env, &repo, false).len(), 1);
}

#[test]
fn gc_deletes_only_expired_keeps_and_the_retention_is_configurable() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.start(&repo, "kept");
    env.bmad(&repo, &["remove", "kept"]).success();
    env.git(&repo, &["config", "bmad.keepRemovedDays", "0"]);
    env.start(&repo, "expires");
    env.bmad(&repo, &["remove", "expires"]).success();

    let dry = env
        .bmad(&repo, &["gc", "--dry-run", "--json"])
        .success()
        .json();
    assert_eq!(dry["deleted"].as_array().unwrap().len(), 1);
    assert_eq!(dry["deleted"][0]["name"], "expires");
    assert_eq!(
        sessions(&env, &repo, true).len(),
        2,
        "a dry run deletes nothing"
    );
    env.bmad(&repo, &["gc"]).success();
    let left = sessions(&env, &repo, true);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["name"], "kept");
    env.bmad(&repo, &["gc", "--all"]).success();
    assert!(env.git(&repo, &["for-each-ref", "refs/bmad/"]).is_empty());

    env.git(&repo, &["config", "bmad.keepRemovedDays", "two weeks"]);
    let bad = env.bmad(&repo, &["start", "y"]);
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr.contains("bmad.keepRemovedDays"),
        "{}",
        bad.stderr
    );
}

#[test]
fn a_pruned_session_is_restored_with_its_last_checkpoint_and_status() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "gone");
    write(&wt, "work.md", "checkpointed, never committed\n");
    env.bmad(&wt, &["checkpoint", "-m", "work"]).success();
    std::fs::remove_dir_all(&wt).unwrap();
    env.bmad(&repo, &["prune"]).success();
    assert_eq!(sessions(&env, &repo, false)[0]["status"], "pruned");

    let restored = env
        .bmad(&repo, &["restore", "gone", "--json"])
        .success()
        .json();
    assert_eq!(restored["restored"]["from"], "pruned");
    assert_eq!(read(&wt, "work.md"), "checkpointed, never committed\n");
    assert_eq!(sessions(&env, &repo, false)[0]["status"], "running");
    assert_eq!(
        env.bmad(&wt, &["status", "--json"]).success().json()["state"]["status"],
        "running"
    );
    env.bmad(&repo, &["doctor"]).success();
}

#[test]
fn a_moved_worktree_is_followed_not_pruned() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "mv");
    let to = env.root().join("elsewhere");
    env.git(
        &repo,
        &[
            "worktree",
            "move",
            wt.to_str().unwrap(),
            to.to_str().unwrap(),
        ],
    );

    let doctor = env.bmad(&repo, &["doctor"]).code(1);
    assert!(doctor.stdout.contains("was moved to"), "{}", doctor.stdout);
    let fixed = env.bmad(&repo, &["doctor", "--fix"]).success();
    assert!(fixed.stdout.contains("fixed:"), "{}", fixed.stdout);
    let listed = sessions(&env, &repo, false);
    assert_eq!(listed[0]["status"], "running", "not pruned");
    let to = std::fs::canonicalize(&to).unwrap();
    assert_eq!(listed[0]["worktree"], to.to_str().unwrap());
    assert_eq!(listed[0]["worktree_exists"], true);
    write(&to, "x.md", "x\n");
    env.bmad(&to, &["checkpoint", "-m", "in the new place"])
        .success();
}

#[test]
fn list_disk_reports_each_worktrees_disk_use() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, small) = env.start(&repo, "small");
    let (_, big) = env.start(&repo, "big");
    std::fs::write(big.join("blob.bin"), vec![7u8; 3 << 20]).unwrap();
    let _ = small;
    let listed = env
        .bmad(&repo, &["list", "--disk", "--json"])
        .success()
        .json();
    let bytes = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["disk_bytes"]
            .as_u64()
            .unwrap()
    };
    assert!(bytes("big") >= 3 << 20, "{listed}");
    assert!(bytes("small") < 1 << 20, "{listed}");
    let table = env.bmad(&repo, &["list", "--disk"]).success();
    assert!(
        table.stdout.contains("DISK") && table.stdout.contains("MB"),
        "{}",
        table.stdout
    );
}

#[test]
fn doctor_fix_removes_an_abandoned_git_lock_and_finishes_nothing_it_should_not() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "w");
    let (_, moved) = env.start(&repo, "moved");
    let lock = repo.join(".git/packed-refs.lock");
    std::fs::write(&lock, "").unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(120);
    std::fs::File::options()
        .write(true)
        .open(&lock)
        .unwrap()
        .set_modified(old)
        .unwrap();
    // A deleted worktree needs a choice (restore or prune): --fix leaves it to the user,
    // even while it records where another one was moved.
    std::fs::remove_dir_all(&wt).unwrap();
    let to = env.root().join("moved-here");
    env.git(
        &repo,
        &[
            "worktree",
            "move",
            moved.to_str().unwrap(),
            to.to_str().unwrap(),
        ],
    );
    let before = env.bmad(&repo, &["doctor"]).code(1);
    assert!(
        before.stdout.contains("doctor --fix does it"),
        "{}",
        before.stdout
    );
    let after = env
        .bmad(&repo, &["doctor", "--fix", "--json"])
        .code(1)
        .json();
    assert!(!lock.exists());
    let findings = after["findings"].as_array().unwrap();
    assert!(findings
        .iter()
        .all(|f| !f["message"].as_str().unwrap().contains("packed-refs.lock")));
    // The choice is a human's: one command to run, the other way beside it, what each does.
    let deleted = findings
        .iter()
        .find(|f| {
            f["fix"]
                .as_str()
                .unwrap_or("")
                .starts_with("git bmad restore")
        })
        .unwrap_or_else(|| panic!("{after}"));
    let restore = deleted["fix"].as_str().unwrap();
    assert_eq!(restore.split(' ').count(), 4, "one command: {restore}");
    assert_eq!(
        deleted["alternatives"],
        serde_json::json!(["git bmad prune"])
    );
    assert!(
        deleted["note"]
            .as_str()
            .unwrap()
            .contains("prune records it gone"),
        "{deleted}"
    );
    let listed = sessions(&env, &repo, false);
    let named = |name: &str| listed.iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(
        named("w")["status"],
        "running",
        "the deleted one is not pruned"
    );
    assert_eq!(named("moved")["status"], "running");
    assert_eq!(
        named("moved")["worktree_exists"],
        true,
        "the moved one is followed"
    );
}

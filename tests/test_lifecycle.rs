//! finish, remove, prune, doctor: ending sessions without losing work.

use crate::common::{write, TestEnv};

#[test]
fn worktree_deleted_by_hand_is_reported_and_pruned() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "doomed");
    write(&wt, "work.txt", "work\n");
    env.bmad(&wt, &["checkpoint", "-m", "work"]).success();
    // The worktree's snapshot cache, in the common git dir, goes when git forgets it.
    let caches = repo.join(".git/bmad/snapshot/worktrees");
    let cached = |caches: &std::path::Path| std::fs::read_dir(caches).map_or(0, |d| d.count());
    assert_eq!(cached(&caches), 1);
    std::fs::remove_dir_all(&wt).unwrap();

    let doctor = env.bmad(&repo, &["doctor"]).code(1);
    assert!(
        doctor.stdout.contains("worktree") && doctor.stdout.contains("was deleted"),
        "{}",
        doctor.stdout
    );
    assert!(
        doctor.stdout.contains("1 problem"),
        "reported once: {}",
        doctor.stdout
    );
    assert!(
        doctor.stdout.contains("git bmad prune"),
        "says the fix: {}",
        doctor.stdout
    );
    let list = env.bmad(&repo, &["list"]).success();
    assert!(list.stdout.contains("(missing)"), "{}", list.stdout);

    let pruned = env.bmad(&repo, &["prune", "--json"]).success().json();
    assert_eq!(pruned[0]["session"], id.as_str());
    env.bmad(&repo, &["doctor"]).success();
    let list = env.bmad(&repo, &["list", "--json"]).success().json();
    assert_eq!(list[0]["status"], "pruned");
    // git forgot the worktree; the work is still in the checkpoints.
    let worktrees = env.git(&repo, &["worktree", "list", "--porcelain"]);
    assert!(!worktrees.contains("doomed"), "{worktrees}");
    assert_eq!(cached(&caches), 0, "the cache of a worktree git forgot");
    let chain = format!("refs/bmad/sessions/{id}/checkpoints");
    assert_eq!(
        env.git(&repo, &["show", &format!("{chain}:work.txt")]),
        "work\n"
    );
    // Pruning again has nothing to do.
    let again = env.bmad(&repo, &["prune", "--json"]).success().json();
    assert_eq!(again.as_array().unwrap().len(), 0);
    // And the pruned session can be removed.
    env.bmad(&repo, &["remove", &id, "--force"]).success();
    // Only the keep is left, until `git bmad gc` (see test_removed).
    assert_eq!(env.bmad_refs(&repo), format!("refs/bmad/removed/{id}\n"));
}

#[test]
fn remove_refuses_to_lose_work_unless_forced() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "work");

    // Standing inside the session is refused.
    let run = env.bmad(&wt, &["remove", &id]).code(1);
    assert!(run.stderr.contains("main worktree"), "{}", run.stderr);

    // Uncommitted changes.
    write(&wt, "work.txt", "the agent's work\n");
    let run = env.bmad(&repo, &["remove", &id]).code(1);
    assert!(
        run.stderr.contains("uncommitted") && run.stderr.contains("work.txt"),
        "{}",
        run.stderr
    );
    env.git(&wt, &["add", "-A"]);
    env.git(&wt, &["commit", "-q", "-m", "work"]);

    // Committed but neither merged nor pushed.
    let run = env.bmad(&repo, &["remove", &id]).code(1);
    assert!(run.stderr.contains("neither merged"), "{}", run.stderr);
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    assert!(wt.exists());

    // Pushed to a remote: safe to remove.
    env.bare_remote(&repo);
    env.git(&wt, &["push", "-q", "origin", "bmad/work"]);
    env.git(&repo, &["fetch", "-q", "origin"]);
    env.bmad(&repo, &["remove", &id]).success();
    assert!(!wt.exists());
    let caches = repo.join(".git/bmad/snapshot/worktrees");
    assert_eq!(
        std::fs::read_dir(caches).map_or(0, |d| d.count()),
        0,
        "its snapshot cache went with it"
    );
    assert_eq!(env.git(&repo, &["branch", "--list", "bmad/work"]), "");
    // Only the keep is left, until `git bmad gc` (see test_removed).
    assert_eq!(env.bmad_refs(&repo), format!("refs/bmad/removed/{id}\n"));
    env.bmad(&repo, &["doctor"]).success();
}

#[test]
fn finish_then_force_remove() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "done");
    write(&wt, "result.txt", "result\n");
    env.bmad(&wt, &["finish"]).success();
    let status = env.bmad(&repo, &["status", &id, "--json"]).success().json();
    assert_eq!(status["state"]["status"], "completed");
    assert_eq!(status["session"]["status"], "completed");
    let journal = env
        .bmad(&repo, &["journal", &id, "--json"])
        .success()
        .json();
    assert_eq!(
        journal.as_array().unwrap().last().unwrap()["event"],
        "session_finished"
    );
    // Finishing twice is harmless.
    env.bmad(&wt, &["finish"]).success();
    // The name can be reused once the old session is removed.
    env.bmad(&repo, &["remove", "done", "--force"]).success();
    assert!(!wt.exists());
    env.start(&repo, "done");
}

#[test]
fn an_unknown_runner_in_the_config_is_named_by_doctor_and_validate() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(
        &repo,
        ".bmad/config.yaml",
        "runners:\n  roles: {dev: cursor}\n",
    );
    let doctor = env.bmad(&repo, &["doctor"]).code(1);
    assert!(
        doctor
            .stdout
            .contains("runners.roles.dev: unknown runner `cursor`"),
        "{}{}",
        doctor.stdout,
        doctor.stderr
    );
    let run = env
        .bmad(&repo, &["playbook", "validate", "auto-feature"])
        .code(2);
    assert!(
        run.stderr.contains("unknown runner `cursor`"),
        "{}",
        run.stderr
    );
    // Commands that run no agent still read the rest of the config.
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "config"]);
    env.bmad(&repo, &["list"]).success();
}

#[test]
fn status_in_the_main_worktree_shows_the_only_session_and_remove_lists_dirt_in_order() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "only");
    let status = env.bmad(&repo, &["status", "--json"]).success().json();
    assert_eq!(status["session"]["id"], id.as_str());
    for name in ["c.md", "a.md", "b.md", "d.md"] {
        write(&wt, name, "dirt\n");
    }
    let refused = env.bmad(&repo, &["remove", "only"]).code(1);
    assert!(
        refused
            .stderr
            .contains("4 uncommitted change(s) (a.md, b.md, c.md, …)"),
        "{}",
        refused.stderr
    );
    // With two sessions, status in the main worktree shows where each stands and how to
    // ask for one.
    env.start(&repo, "second");
    let run = env.bmad(&repo, &["status"]).success();
    for name in ["only", "second"] {
        assert!(
            run.stdout
                .lines()
                .any(|l| l.split_whitespace().nth(1) == Some(name)),
            "{name}: {}",
            run.stdout
        );
    }
    assert!(
        run.stderr.contains("git bmad status <session>"),
        "{}",
        run.stderr
    );
    let json = env.bmad(&repo, &["status", "--json"]).success().json();
    assert_eq!(json["sessions"].as_array().unwrap().len(), 2, "{json:#}");
    // Following a run needs one session named.
    let run = env.bmad(&repo, &["status", "--watch"]).code(1);
    assert!(run.stderr.contains("git bmad list"), "{}", run.stderr);
}

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

/// Every command that takes a session finds it one way, and says why when it finds no one
/// session: what to type instead (a usage error), or, outside any session worktree, where it
/// ran; `status` and `resume` act on the cause instead of failing.
#[test]
fn a_query_that_names_no_one_session_says_why_and_what_to_do() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (one, _) = env.start(&repo, "one");
    let (two, _) = env.start(&repo, "two");

    let unknown = env.bmad(&repo, &["status", "nope"]).code(2);
    assert!(
        unknown
            .stderr
            .contains("no session matches \"nope\"; `git bmad list` shows them all"),
        "{}",
        unknown.stderr
    );
    let json = env.bmad(&repo, &["status", "nope", "--json"]).code(2);
    let json: serde_json::Value = serde_json::from_str(&json.stderr).expect("a JSON error");
    assert_eq!(json["exit_code"], 2, "{json}");

    // Both ids begin with the year they were made in.
    let ambiguous = env.bmad(&repo, &["status", &one[..4]]).code(2);
    assert!(
        ambiguous.stderr.contains("matches several sessions")
            && ambiguous.stderr.contains(&one)
            && ambiguous.stderr.contains(&two)
            && ambiguous.stderr.contains("give more of the id"),
        "{}",
        ambiguous.stderr
    );

    // Outside every session worktree, a command on one session fails with where it ran…
    let outside = env.bmad(&repo, &["checkpoint"]).code(1);
    assert!(
        outside
            .stderr
            .contains("is not a git-bmad session worktree")
            && outside.stderr.contains("name the session"),
        "{}",
        outside.stderr
    );
    // …while `status` shows where each session stands,
    let overview = env.bmad(&repo, &["status"]).success();
    assert!(
        overview.stdout.contains(&one) && overview.stdout.contains(&two),
        "{}",
        overview.stdout
    );
    // and `resume` of a session unknown here looks for it on the remote, and says how to
    // bring one from another machine when it is not there either.
    env.bare_remote(&repo);
    let resumed = env.bmad(&repo, &["resume", "nope"]).code(2);
    assert!(
        resumed.stderr.contains("no session matches \"nope\"")
            && resumed.stderr.contains(
                "hint: a session pushed from another machine: git bmad sync --remote origin first"
            ),
        "{}",
        resumed.stderr
    );
}

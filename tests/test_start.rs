//! `git bmad start`: what a user sees when opening a session.

use crate::common::{read, write, TestEnv};

#[test]
fn start_refuses_uncommitted_tracked_changes_and_changes_nothing() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, "README.md", "changed\n");
    let run = env.bmad(&repo, &["start", "feature-x"]).code(1);
    assert!(run.stderr.contains("uncommitted changes"), "{}", run.stderr);
    assert!(
        run.stderr.contains("README.md"),
        "names the path: {}",
        run.stderr
    );
    for hint in ["git commit -am", "git stash", "--base HEAD"] {
        assert!(run.stderr.contains(hint), "says {hint}: {}", run.stderr);
    }
    assert!(!env.root().join("proj.feature-x").exists());
    assert_eq!(env.git(&repo, &["branch", "--list", "bmad/*"]), "");
    assert_eq!(env.git(&repo, &["for-each-ref", "refs/bmad/"]), "");

    // A staged change counts too; `--base` says what to start from, so it goes ahead and
    // leaves the change where it is.
    env.git(&repo, &["add", "README.md"]);
    env.bmad(&repo, &["start", "feature-x"]).code(1);
    env.bmad(&repo, &["start", "feature-x", "--base", "HEAD"])
        .success();
    assert_eq!(env.git(&repo, &["status", "--porcelain"]), "M  README.md\n");
    assert_eq!(
        read(&env.root().join("proj.feature-x"), "README.md"),
        "# project\n"
    );
}

#[test]
fn untracked_files_and_hooks_own_files_do_not_block_a_start() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, "notes.txt", "not committed\n");
    // git-bmad's own agent hooks leave `.claude/` untracked in the main worktree.
    env.bmad(&repo, &["hooks", "install", "--agent", "claude"])
        .success();
    let (_, wt) = env.start(&repo, "feature-x");
    assert!(
        !wt.join("notes.txt").exists(),
        "the session starts from the commit"
    );
    assert_eq!(read(&repo, "notes.txt"), "not committed\n");
}

#[test]
fn start_from_a_subdirectory_creates_branch_worktree_and_first_checkpoint() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    std::fs::create_dir_all(repo.join("src/deep")).unwrap();
    let run = env
        .bmad(&repo.join("src/deep"), &["start", "feature-x"])
        .success();
    let worktree = env.root().join("proj.feature-x");
    assert!(
        run.stdout.contains(&worktree.display().to_string()),
        "prints the path: {}",
        run.stdout
    );
    assert!(
        run.stderr.contains("cd "),
        "says what to do next: {}",
        run.stderr
    );
    assert!(worktree.join("README.md").is_file());
    assert_eq!(
        env.git(&worktree, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/bmad/feature-x"
    );

    let list = env.bmad(&repo, &["list", "--json"]).success().json();
    let sessions = list.as_array().unwrap();
    assert_eq!(sessions.len(), 1);
    let id = sessions[0]["id"].as_str().unwrap();
    assert_eq!(id.len(), 22, "YYYYMMDD-HHMMSS-xxxxxx: {id}");
    // The first checkpoint's only parent is the session HEAD.
    let chain = format!("refs/bmad/sessions/{id}/checkpoints");
    let parents = env.git(&repo, &["rev-list", "--parents", "-n", "1", &chain]);
    let head = env.git(&repo, &["rev-parse", "main"]);
    assert_eq!(parents.split_whitespace().nth(1), Some(head.trim()));
    // session_started is journaled; the worktree stays clean (journal.md arrives with the
    // first commit).
    let journal = env.bmad(&worktree, &["journal", "--json"]).success().json();
    assert_eq!(journal[0]["event"], "session_started");
    assert_eq!(journal[0]["seq"], 1);
    assert_eq!(env.git(&worktree, &["status", "--porcelain"]), "");
    // The user's own worktree is untouched: still on main, still clean.
    assert_eq!(env.git(&repo, &["status", "--porcelain"]), "");
    assert_eq!(
        env.git(&repo, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/main"
    );
}

#[test]
fn two_sessions_started_in_parallel_get_distinct_everything() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let children: Vec<_> = ["alpha", "beta"]
        .iter()
        .map(|name| {
            env.bmad_command(&repo)
                .args(["start", name, "--json"])
                .output()
        })
        .map(|o| o.expect("spawn"))
        .collect();
    // Spawned one after the other above; now truly in parallel:
    let handles: Vec<_> = ["gamma", "delta"]
        .iter()
        .map(|name| {
            env.bmad_command(&repo)
                .args(["start", name, "--json"])
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in handles {
        assert!(child.wait_with_output().expect("wait").status.success());
    }
    for out in children {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let list = env.bmad(&repo, &["list", "--json"]).success().json();
    let sessions = list.as_array().unwrap();
    assert_eq!(sessions.len(), 4);
    let distinct = |key: &str| {
        let mut values: Vec<String> = sessions.iter().map(|s| s[key].to_string()).collect();
        values.sort();
        values.dedup();
        values.len()
    };
    assert_eq!(distinct("id"), 4);
    assert_eq!(distinct("branch"), 4);
    assert_eq!(distinct("worktree"), 4);
    for s in sessions {
        let wt = std::path::PathBuf::from(s["worktree"].as_str().unwrap());
        assert_eq!(env.git(&wt, &["status", "--porcelain"]), "");
    }
    env.bmad(&repo, &["doctor"]).success();
}

#[test]
fn start_refuses_bad_names_and_taken_names() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let run = env.bmad(&repo, &["start", "../escape"]).code(2);
    assert!(
        run.stderr.contains("invalid session name"),
        "{}",
        run.stderr
    );
    env.bmad(&repo, &["start", "x"]).success();
    let run = env.bmad(&repo, &["start", "x"]).code(1);
    assert!(run.stderr.contains("already exists"), "{}", run.stderr);
    let run = env
        .bmad(&repo, &["start", "y", "--base", "no-such-branch"])
        .code(2);
    assert!(run.stderr.contains("no-such-branch"), "{}", run.stderr);
}

#[test]
fn outside_a_repository_the_error_says_what_to_do() {
    let env = TestEnv::new();
    let run = env.bmad(&env.root(), &["list"]).code(1);
    assert!(
        run.stderr.contains("not inside a git repository"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("hint:"), "{}", run.stderr);
}

#[test]
fn commands_that_need_a_session_explain_how_to_name_one() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let run = env.bmad(&repo, &["checkpoint"]).code(1);
    assert!(
        run.stderr.contains("not a git-bmad session worktree"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("git bmad list"), "{}", run.stderr);
    env.bmad(&repo, &["status", "nope"]).code(2);
}

#[test]
fn a_repository_git_would_refuse_as_dubious_is_refused() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    // Hand the repository to another user (the tests run as root here; elsewhere they cannot
    // chown, and then there is nothing to test).
    let chowned = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&repo)
        .status()
        .is_ok_and(|s| s.success());
    if !chowned {
        eprintln!("skipping: cannot chown as this user");
        return;
    }
    let git = env.git_command(&repo).args(["status"]).output().unwrap();
    assert!(!git.status.success(), "git itself refuses this repository");
    let run = env.bmad(&repo, &["list"]).code(1);
    assert!(run.stderr.contains("dubious ownership"), "{}", run.stderr);
    assert!(
        run.stderr.contains("safe.directory"),
        "says the fix: {}",
        run.stderr
    );
}

#[test]
fn start_and_run_warn_when_the_policy_hooks_are_not_installed() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let unguarded = env.bmad(&repo, &["start", "bare"]).success();
    assert!(
        unguarded
            .stderr
            .contains("warning: the policy hooks are not installed (pre-commit, pre-merge-commit, prepare-commit-msg, pre-push, reference-transaction missing)")
            && unguarded.stderr.contains("git bmad hooks install"),
        "{}",
        unguarded.stderr
    );
    let list = env.bmad(&repo, &["list", "--json"]).success().json();
    let wt = std::path::PathBuf::from(list[0]["worktree"].as_str().unwrap());
    let run = env.bmad(&wt, &["run", "auto-validate"]);
    assert!(
        run.stderr.contains("the policy hooks are not installed"),
        "{}",
        run.stderr
    );

    env.bmad(&repo, &["hooks", "install"]).success();
    let guarded = env.bmad(&repo, &["start", "guarded"]).success();
    assert!(!guarded.stderr.contains("warning"), "{}", guarded.stderr);
    let run = env.bmad(&wt, &["run", "auto-validate"]);
    assert!(
        !run.stderr.contains("hooks are not installed"),
        "{}",
        run.stderr
    );
}

/// A machine where git knows no identity (no `user.name`, no `GIT_AUTHOR_*`): git-bmad's own
/// commits (checkpoints, journal, a story's commit) are by its fallback identity, as the
/// contract says, and nothing fails for it.
#[test]
fn with_no_git_identity_git_bmads_commits_are_its_fallback_identitys() {
    let env = TestEnv::new();
    let repo = crate::test_epic::epic_project(&env);
    let anonymous = |dir: &std::path::Path, args: &[&str]| {
        let out = env
            .bmad_command(dir)
            .args(args)
            .env_remove("GIT_AUTHOR_NAME")
            .env_remove("GIT_AUTHOR_EMAIL")
            .env_remove("GIT_COMMITTER_NAME")
            .env_remove("GIT_COMMITTER_EMAIL")
            .env("EMAIL", "")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    anonymous(&repo, &["start", "w"]);
    let wt = env.root().join("proj.w");
    write(&wt, "a.txt", "a\n");
    anonymous(&wt, &["checkpoint", "-m", "a"]);
    anonymous(&repo, &["epic", "run", "3", "--stories", "3-1"]);
    let by = env.git(
        &repo,
        &[
            "log",
            "-1",
            "--format=%an <%ae> %cn <%ce>",
            "bmad/3-1-api-client",
        ],
    );
    assert_eq!(
        by.trim(),
        "git-bmad <git-bmad@localhost> git-bmad <git-bmad@localhost>"
    );
    let checkpoint = env.git(
        &repo,
        &[
            "log",
            "-1",
            "--format=%an %cn",
            "--glob=refs/bmad/sessions/*/checkpoints",
        ],
    );
    assert_eq!(checkpoint.trim(), "git-bmad git-bmad");
}

/// A repository that is a submodule of another gets its sessions beside the superproject,
/// not inside its worktree, where the superproject's `git add -A` would record a session as
/// an embedded repository; the session works as any other.
#[test]
fn a_submodule_repository_starts_its_sessions_outside_its_superproject() {
    let env = TestEnv::new();
    let app = crate::test_shapes::with_a_submodule(&env, "app");
    let sub = app.join("vendor/lib");
    env.git(&sub, &["checkout", "-q", "-b", "work"]);

    let started = env.bmad(&sub, &["start", "fix", "--json"]).success().json();
    let worktree =
        std::path::PathBuf::from(started["session"]["worktree"].as_str().unwrap_or_default());
    let app_dir = std::fs::canonicalize(&app).unwrap();
    assert!(
        !worktree.starts_with(&app_dir),
        "{worktree:?} is inside {app_dir:?}"
    );
    assert_eq!(worktree.parent(), app_dir.parent());
    assert_eq!(worktree.file_name().unwrap(), "app.vendor-lib.fix");
    assert_eq!(env.git(&app, &["status", "--porcelain"]), "");

    write(&worktree, "fix.txt", "fixed\n");
    env.bmad(&worktree, &["checkpoint", "-m", "a fix"])
        .success();
    assert_eq!(env.worktree_tree(&worktree).len(), 40);
    assert_eq!(read(&worktree, "fix.txt"), "fixed\n");
}

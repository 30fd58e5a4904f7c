//! The installed hooks in everyday git use: commits, gc, chaining, husky, uninstall.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::common::{read, write, TestEnv};

fn install(env: &TestEnv, dir: &Path) {
    env.bmad(dir, &["hooks", "install"]).success();
}

fn git_run(env: &TestEnv, dir: &Path, args: &[&str]) -> (i32, String) {
    let out = env.git_command(dir).args(args).output().expect("spawn git");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn no_verify_is_refused_in_sessions_and_allowed_for_the_user() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    install(&env, &repo);
    write(&repo, "mine.txt", "mine\n");
    env.git(&repo, &["add", "mine.txt"]);
    env.git(
        &repo,
        &[
            "commit",
            "-q",
            "--no-verify",
            "-m",
            "the user's own business",
        ],
    );

    let (_, wt) = env.start(&repo, "agent");
    let head = env.git(&wt, &["rev-parse", "HEAD"]);
    write(&wt, "a.txt", "a\n");
    env.git(&wt, &["add", "a.txt"]);
    for bypass in [
        vec!["commit", "--no-verify", "-m", "x"],
        vec!["commit", "-n", "-m", "x"],
        vec!["commit", "--no-verif", "-m", "x"],
    ] {
        let (code, stderr) = git_run(&env, &wt, &bypass);
        assert_ne!(code, 0, "{bypass:?} went through");
        assert!(stderr.contains("[no-verify]"), "{stderr}");
    }
    assert_eq!(
        env.git(&wt, &["rev-parse", "HEAD"]),
        head,
        "no commit was made"
    );
    // A normal commit works and names its session.
    env.git(&wt, &["commit", "-q", "-m", "agent work"]);
    let message = env.git(&wt, &["log", "-1", "--format=%B"]);
    assert!(message.contains("Bmad-Session: "), "{message}");
    let journal = env.bmad(&wt, &["journal", "--json"]).success().json();
    let violations = journal
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "policy_violation")
        .count();
    assert_eq!(violations, 3, "every refusal is journaled");
    // Merges are checked the same way.
    env.git(&wt, &["checkout", "-q", "-b", "side"]);
    write(&wt, "side.txt", "side\n");
    env.git(&wt, &["add", "side.txt"]);
    env.git(&wt, &["commit", "-q", "-m", "side"]);
    env.git(&wt, &["checkout", "-q", "bmad/agent"]);
    let (code, stderr) = git_run(
        &env,
        &wt,
        &["merge", "--no-ff", "--no-verify", "-m", "m", "side"],
    );
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("`git merge` skipped"), "{stderr}");
    // The merge is left in progress; concluding it normally goes through the hooks.
    env.git(&wt, &["commit", "-q", "--no-edit"]);
    assert_eq!(
        env.git(&wt, &["rev-list", "--parents", "-n", "1", "HEAD"])
            .split_whitespace()
            .count(),
        3
    );
}

/// Stamps written ahead for the next process ids, and a fake `git-bmad` first on `PATH`
/// that passes everything: neither gets a `--no-verify` commit or a secret through.
#[test]
fn stamps_written_ahead_and_a_fake_git_bmad_on_path_let_nothing_through() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    install(&env, &repo);
    let (_, wt) = env.start(&repo, "agent");
    let git_dir = env.git(&wt, &["rev-parse", "--absolute-git-dir"]);
    let head = env.git(&wt, &["rev-parse", "HEAD"]);
    // Where the next git processes' stamps will be looked for.
    let next_pid: u32 = env.sh(&wt, "echo $$").stdout.trim().parse().unwrap();
    for pid in next_pid..next_pid + 400 {
        std::fs::write(
            Path::new(git_dir.trim()).join(format!("bmad-verified.{pid}")),
            "",
        )
        .unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    write(&wt, "a.txt", "a\n");
    env.git(&wt, &["add", "a.txt"]);
    let (code, stderr) = git_run(&env, &wt, &["commit", "--no-verify", "-m", "x"]);
    assert_ne!(code, 0, "a stamp written ahead let --no-verify through");
    assert!(stderr.contains("[no-verify]"), "{stderr}");

    let fake = env.root().join("fake");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::write(fake.join("git-bmad"), "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(
        fake.join("git-bmad"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let path = format!("PATH='{}':\"$PATH\"", fake.display());
    write(&wt, "b.txt", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF0qTQJz8aPjEUm4CfBqXtMvQ9Y5V\n-----END RSA PRIVATE KEY-----\n");
    env.git(&wt, &["add", "b.txt"]);
    let run = env.sh(&wt, &format!("{path} git commit -m secret"));
    assert_ne!(
        run.code, 0,
        "the fake on PATH ran instead of the installed binary"
    );
    assert!(run.stderr.contains("commit refused"), "{}", run.stderr);
    let run = env.sh(&wt, &format!("{path} git commit --no-verify -m x"));
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("[no-verify]"), "{}", run.stderr);
    assert_eq!(
        env.git(&wt, &["rev-parse", "HEAD"]),
        head,
        "no commit was made"
    );

    // The binary the hooks were installed with is gone: they fail, saying what to do.
    let moved = env.root().join("bin/git-bmad-copy");
    std::fs::copy(env!("CARGO_BIN_EXE_git-bmad"), &moved).unwrap();
    env.sh(&repo, &format!("'{}' hooks install", moved.display()))
        .success();
    std::fs::remove_file(&moved).unwrap();
    env.git(&wt, &["reset", "-q", "b.txt"]);
    let (code, stderr) = git_run(&env, &wt, &["commit", "-m", "x"]);
    assert_ne!(code, 0, "a hook whose binary is gone passed");
    assert!(stderr.contains("git bmad hooks install"), "{stderr}");
    let status = env.bmad(&repo, &["hooks", "status"]).success();
    assert!(
        status
            .stdout
            .contains(&format!("runs: {}", moved.display()))
            && status.stderr.contains("which is gone"),
        "{}{}",
        status.stdout,
        status.stderr
    );
}

#[test]
fn gc_pack_refs_and_local_work_keep_working_while_protected_branches_hold() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    install(&env, &repo);
    let (_, wt) = env.start(&repo, "agent");
    for dir in [&repo, &wt] {
        env.git(dir, &["pack-refs", "--all"]);
        env.git(dir, &["gc", "-q"]);
    }
    // The user moves main in their own worktree freely.
    write(&repo, "u.txt", "u\n");
    env.git(&repo, &["add", "u.txt"]);
    env.git(&repo, &["commit", "-q", "-m", "user commit on main"]);
    env.git(&repo, &["checkout", "-q", "-b", "scratch"]);
    // The session may not move or delete it (main is checked out nowhere now, so only the
    // hook stands in the way).
    let main = env.git(&repo, &["rev-parse", "main"]);
    for attempt in [
        vec!["branch", "-f", "main", "HEAD"],
        vec!["update-ref", "refs/heads/main", "HEAD"],
        vec!["branch", "-D", "main"],
        vec!["push", "-f", ".", "HEAD:main"],
    ] {
        let (code, stderr) = git_run(&env, &wt, &attempt);
        assert_ne!(code, 0, "{attempt:?} moved main");
        assert!(stderr.contains("protected"), "{attempt:?}: {stderr}");
    }
    assert_eq!(env.git(&repo, &["rev-parse", "main"]), main);
    // Its own branch and everyday commands are untouched.
    write(&wt, "w.txt", "w\n");
    env.git(&wt, &["add", "w.txt"]);
    env.git(&wt, &["commit", "-q", "-m", "work"]);
    env.git(&wt, &["reset", "-q", "--hard", "HEAD~1"]);
    env.git(&wt, &["stash", "list"]);
    env.bmad(&repo, &["doctor"]).success();
}

#[test]
fn an_existing_hook_is_chained_with_the_same_input_and_restored_on_uninstall() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let remote = env.bare_remote(&repo);
    let log = env.root().join("hook.log");
    let user_hook = format!(
        "#!/bin/sh\necho \"args: $*\" >> '{}'\ncat >> '{}'\n[ -f '{}.fail' ] && exit 7\nexit 0\n",
        log.display(),
        log.display(),
        log.display()
    );
    let hook_path = repo.join(".git/hooks/pre-push");
    std::fs::write(&hook_path, &user_hook).unwrap();
    std::fs::set_permissions(&hook_path, std::fs::Permissions::from_mode(0o755)).unwrap();

    install(&env, &repo);
    install(&env, &repo); // idempotent: still one chained hook, still ours in front
    let ours = repo.join(".git/bmad/hooks");
    assert!(
        ours.join("post-checkout").exists(),
        "every hook name runs yours"
    );
    assert!(
        !ours.join("post-index-change").exists(),
        "no shim on every index write when you have no such hook"
    );
    let status = env
        .bmad(&repo, &["hooks", "status", "--json"])
        .success()
        .json();
    let pre_push = status["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == "pre-push")
        .unwrap()
        .clone();
    assert_eq!(pre_push["installed"], true);
    assert!(pre_push["chained"]
        .as_str()
        .unwrap()
        .ends_with(".git/hooks/pre-push"));

    env.git(&repo, &["checkout", "-q", "-b", "feat"]);
    env.git(&repo, &["push", "-q", "origin", "feat"]);
    let sha = env.git(&repo, &["rev-parse", "feat"]);
    let logged = read(&env.root(), "hook.log");
    assert!(
        logged.contains(&format!("args: origin {}", remote.display())),
        "{logged}"
    );
    assert!(
        logged.contains(&format!(
            "refs/heads/feat {} refs/heads/feat {}",
            sha.trim(),
            "0".repeat(40)
        )),
        "identical stdin: {logged}"
    );

    // The chained hook's failure fails the push.
    std::fs::write(format!("{}.fail", log.display()), "").unwrap();
    write(&repo, "x.txt", "x\n");
    env.git(&repo, &["add", "x.txt"]);
    env.git(&repo, &["commit", "-q", "-m", "x"]);
    let (code, _) = git_run(&env, &repo, &["push", "-q", "origin", "feat"]);
    assert_ne!(code, 0);

    env.bmad(&repo, &["hooks", "uninstall"]).success();
    assert_eq!(
        std::fs::read_to_string(&hook_path).unwrap(),
        user_hook,
        "restored byte for byte"
    );
    assert_eq!(
        std::fs::metadata(&hook_path).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert!(
        !repo.join(".git/hooks/pre-commit").exists(),
        "our own shims are gone"
    );
    assert!(!repo.join(".git/hooks/pre-push.bmad-orig").exists());
}

#[test]
fn husky_style_hooks_path_works_in_fresh_session_worktrees() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, ".gitignore", "*.log\ntarget/\n.husky/_\n");
    write(
        &repo,
        ".husky/_/pre-commit",
        "#!/bin/sh\necho husky-ran >> \"$(git rev-parse --show-toplevel)/husky.log\"\n",
    );
    std::fs::set_permissions(
        repo.join(".husky/_/pre-commit"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    env.git(&repo, &["add", ".gitignore"]);
    env.git(&repo, &["commit", "-q", "-m", "husky"]);
    env.git(&repo, &["config", "core.hooksPath", ".husky/_"]);
    install(&env, &repo);
    assert_eq!(
        std::fs::read_dir(repo.join(".husky/_")).unwrap().count(),
        1,
        "nothing was written among husky's hooks"
    );

    let (_, wt) = env.start(&repo, "agent");
    assert!(
        wt.join(".husky/_/pre-commit").exists(),
        "the fresh worktree got husky's hooks"
    );
    write(&wt, "a.txt", "a\n");
    env.git(&wt, &["add", "a.txt"]);
    let (code, stderr) = git_run(&env, &wt, &["commit", "--no-verify", "-m", "x"]);
    assert_ne!(code, 0, "{stderr}");
    env.git(&wt, &["commit", "-q", "-m", "x"]);
    assert!(
        read(&wt, "husky.log").contains("husky-ran"),
        "husky's own hook still runs"
    );
    assert_eq!(
        env.git(&wt, &["status", "--porcelain", "--", ".husky"]),
        "",
        "the copy is ignored, the worktree stays clean"
    );
}

#[test]
fn pre_commit_blocks_staged_secrets_and_honours_allow_comments_only_for_humans() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    install(&env, &repo);
    write(
        &repo,
        "keys.py",
        "STRIPE = 'sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ'\n",
    );
    env.git(&repo, &["add", "keys.py"]);
    let (code, stderr) = git_run(&env, &repo, &["commit", "-m", "keys"]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("keys.py:1:11") && stderr.contains("stripe-key"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("4kR9tQ2mZ7xW1pL8vN3bH6cJ"),
        "the secret is not echoed: {stderr}"
    );
    write(
        &repo,
        "keys.py",
        "STRIPE = 'sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ'  # bmad:allow documented test key\n",
    );
    env.git(&repo, &["add", "keys.py"]);
    env.git(
        &repo,
        &["commit", "-q", "-m", "a human's deliberate fixture"],
    );
    // `commit -a` commits a temporary index: that is the one scanned.
    write(
        &repo,
        "README.md",
        "token: ghp_Zq3Xr8Lm2Vt7Nw4Pk9Bs1Hd6Jf5Gc0Ya8Ue2\n",
    );
    let (code, stderr) = git_run(&env, &repo, &["commit", "-am", "readme"]);
    assert_ne!(code, 0, "commit -a let a token through");
    assert!(
        stderr.contains("README.md:1:8") && stderr.contains("github-pat"),
        "{stderr}"
    );
    env.git(&repo, &["checkout", "--", "README.md"]);
    write(&repo, ".env", "MODE=dev\n");
    env.git(&repo, &["add", "-f", ".env"]);
    let (code, stderr) = git_run(&env, &repo, &["commit", "-m", "env"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("env-file"), "{stderr}");
    env.git(&repo, &["reset", "-q"]);
    std::fs::remove_file(repo.join(".env")).unwrap();

    let (_, wt) = env.start(&repo, "agent");
    write(
        &wt,
        "more.py",
        "STRIPE = 'sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ'  # bmad:allow\n",
    );
    env.git(&wt, &["add", "more.py"]);
    let (code, stderr) = git_run(
        &env,
        &wt,
        &["commit", "-m", "agent tries the allow comment"],
    );
    assert_ne!(code, 0, "agents cannot allowlist: {stderr}");
}

/// Installs before hooks had a directory of their own moved the user's hook to
/// `<name>.bmad-orig`: the next install puts it back under its name and chains it. A user's
/// file that happens to be called `.bmad-orig` beside a hook of the same name is left alone.
#[test]
fn hooks_moved_aside_by_an_earlier_install_are_put_back_and_config_cannot_switch_safety_off() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let log = env.root().join("hook.log");
    let user_hook = format!("#!/bin/sh\necho user-pre-commit >> '{}'\n", log.display());
    write(
        &repo,
        ".git/hooks/pre-commit",
        "#!/bin/sh\n# git-bmad managed hook (pre-commit): an earlier install\nexec /gone/git-bmad hook pre-commit\n",
    );
    write(&repo, ".git/hooks/pre-commit.bmad-orig", &user_hook);
    write(&repo, ".git/hooks/pre-push", "#!/bin/sh\nexit 0\n");
    write(
        &repo,
        ".git/hooks/pre-push.bmad-orig",
        "#!/bin/sh\nexit 3\n",
    );
    for name in ["pre-commit.bmad-orig", "pre-push"] {
        let path = repo.join(".git/hooks").join(name);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    install(&env, &repo);
    assert_eq!(read(&repo, ".git/hooks/pre-commit"), user_hook);
    assert!(!repo.join(".git/hooks/pre-commit.bmad-orig").exists());
    assert_eq!(read(&repo, ".git/hooks/pre-push"), "#!/bin/sh\nexit 0\n");
    assert_eq!(
        read(&repo, ".git/hooks/pre-push.bmad-orig"),
        "#!/bin/sh\nexit 3\n"
    );
    write(&repo, "a.txt", "a\n");
    env.git(&repo, &["add", "a.txt"]);
    env.git(&repo, &["commit", "-q", "-m", "a"]);
    assert_eq!(read(&env.root(), "hook.log"), "user-pre-commit\n");

    write(
        &repo,
        ".bmad/config.yaml",
        "version: 1\npolicy:\n  allow_force_push: true\n",
    );
    let run = env.bmad(&repo, &["doctor"]).code(1);
    assert!(
        run.stdout.contains("safety_override_blocked"),
        "{}",
        run.stdout
    );
}

/// A `core.hooksPath` in the global config serves every repository on the machine: install
/// writes nothing there, installs for this repository only and runs the global hooks after
/// its checks; `--global` is what installs for every repository. A hooks directory of
/// tracked files gets nothing written either: the worktree stays clean.
#[test]
fn a_global_or_tracked_hooks_path_is_never_written_and_keeps_running() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let other = env.repo("other");
    let log = env.root().join("hook.log");
    let shared = env.root().join("githooks");
    let global_hook = format!("#!/bin/sh\necho global-pre-commit >> '{}'\n", log.display());
    write(&shared, "pre-commit", &global_hook);
    std::fs::set_permissions(
        shared.join("pre-commit"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let global_config = env.root().join("home/.gitconfig");
    let global = |args: &[&str]| {
        let mut all = vec!["config", "--file", global_config.to_str().unwrap()];
        all.extend(args);
        env.git(&repo, &all)
    };
    global(&["core.hooksPath", shared.to_str().unwrap()]);
    let run = env.bmad(&repo, &["hooks", "install"]).success();
    assert!(
        run.stderr.contains("global config") && run.stderr.contains("--global"),
        "{}",
        run.stderr
    );
    let names = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        names(&shared),
        ["pre-commit"],
        "the shared directory was touched"
    );
    write(&repo, "key.py", "K = 'sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ'\n");
    env.git(&repo, &["add", "key.py"]);
    let (code, _) = git_run(&env, &repo, &["commit", "-m", "key"]);
    assert_ne!(code, 0, "the repository's policy did not run");
    env.git(&repo, &["rm", "-q", "--cached", "key.py"]);
    std::fs::remove_file(repo.join("key.py")).unwrap();
    write(&repo, "a.txt", "a\n");
    env.git(&repo, &["add", "a.txt"]);
    env.git(&repo, &["commit", "-q", "-m", "a"]);
    assert_eq!(read(&env.root(), "hook.log"), "global-pre-commit\n");
    // Another repository on the machine is untouched: its secret check is the global hook's.
    write(&other, "key.py", "K = 'sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ'\n");
    env.git(&other, &["add", "key.py"]);
    env.git(&other, &["commit", "-q", "-m", "not ours to police"]);

    env.bmad(&repo, &["hooks", "install", "--global"]).success();
    let ours = global(&["core.hooksPath"]);
    assert!(ours.ends_with("git-bmad/hooks\n"), "{ours}");
    write(
        &other,
        "key2.py",
        "K = 'sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ'\n",
    );
    env.git(&other, &["add", "key2.py"]);
    let (code, _) = git_run(&env, &other, &["commit", "-m", "now policed"]);
    assert_ne!(
        code, 0,
        "the global install does not reach other repositories"
    );
    env.git(&other, &["rm", "-q", "--cached", "key2.py"]);
    env.bmad(&repo, &["hooks", "uninstall", "--global"])
        .success();
    assert_eq!(
        global(&["core.hooksPath"]),
        format!("{}\n", shared.display())
    );
    env.bmad(&repo, &["hooks", "uninstall"]).success();
    assert_eq!(names(&shared), ["pre-commit"]);
    assert_eq!(read(&shared, "pre-commit"), global_hook);
    global(&["--unset", "core.hooksPath"]);

    write(
        &repo,
        ".githooks/pre-commit",
        "#!/bin/sh\necho team-hook >> hook.log\n",
    );
    std::fs::set_permissions(
        repo.join(".githooks/pre-commit"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    env.git(&repo, &["add", ".githooks"]);
    env.git(&repo, &["commit", "-q", "-m", "team hooks"]);
    env.git(&repo, &["config", "core.hooksPath", ".githooks"]);
    let run = env.bmad(&repo, &["hooks", "install"]).success();
    assert!(run.stderr.contains("git tracks"), "{}", run.stderr);
    assert_eq!(env.git(&repo, &["status", "--porcelain"]), "");
    write(&repo, "b.txt", "b\n");
    env.git(&repo, &["add", "b.txt"]);
    env.git(&repo, &["commit", "-q", "-m", "b"]);
    assert_eq!(read(&repo, "hook.log"), "team-hook\n");
    env.bmad(&repo, &["hooks", "uninstall"]).success();
    assert_eq!(env.git(&repo, &["config", "core.hooksPath"]), ".githooks\n");
}

//! git-bmad's hooks beside the hook managers teams already use, each installed by its own
//! real installer (pinned, `scripts/install-hook-tools.sh`): husky 9 and husky 4, lefthook
//! and pre-commit. After `git bmad hooks install` the manager's hooks still run, with their
//! own name and arguments, in the main worktree and in session worktrees, behind our checks;
//! uninstall leaves every hook file as it was, byte for byte and mode for mode.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::{read, write, TestEnv};

/// Where the pinned tools are: installed on first use, once per test binary.
fn tools() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let status = Command::new(root.join("scripts/install-hook-tools.sh"))
            .status()
            .expect("run scripts/install-hook-tools.sh");
        assert!(
            status.success(),
            "the hook managers could not be installed from npm and PyPI; run scripts/install-hook-tools.sh to see why"
        );
        root.join("target/hook-tools")
    })
}

#[derive(Clone, Copy, Debug)]
enum Manager {
    Husky9,
    Husky4,
    Lefthook,
    PreCommit,
}

impl Manager {
    fn tag(self) -> &'static str {
        match self {
            Manager::Husky9 => "husky9",
            Manager::Husky4 => "husky4",
            Manager::Lefthook => "lefthook",
            Manager::PreCommit => "pre-commit-framework",
        }
    }

    /// `core.hooksPath` as the manager leaves it.
    fn hooks_path(self) -> &'static str {
        match self {
            Manager::Husky9 => ".husky/_\n",
            _ => "",
        }
    }
}

/// Run `program` in `dir` with the test's hermetic environment plus `vars`; assert success.
fn run_tool(env: &TestEnv, dir: &Path, program: &Path, args: &[&str], vars: &[(&str, &str)]) {
    let hermetic = env.git_command(dir);
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(dir).env_clear();
    for (key, value) in hermetic.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    let out = cmd
        .envs(vars.iter().copied())
        .output()
        .expect("spawn the hook manager");
    assert!(
        out.status.success(),
        "{} {args:?}: {}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Install `manager` in `repo` with its own installer, its hooks appending `<tag> <hook>
/// <arguments>` to `log`, and commit its configuration.
fn set_up(manager: Manager, env: &TestEnv, repo: &Path, log: &Path) {
    let tools = tools();
    let log = log.display();
    let node = which("node");
    match manager {
        Manager::Husky9 => {
            write(repo, "package.json", "{\"name\": \"proj\"}\n");
            run_husky9(env, repo);
            for hook in ["pre-commit", "commit-msg", "pre-push"] {
                write(
                    repo,
                    &format!(".husky/{hook}"),
                    &format!("echo \"husky9 {hook} $*\" >> '{log}'\n"),
                );
            }
        }
        Manager::Husky4 => {
            write(
                repo,
                "package.json",
                &format!(
                    r#"{{"name": "proj", "husky": {{"skipCI": false, "hooks": {{
  "pre-commit": "echo husky4 pre-commit >> '{log}'",
  "commit-msg": "echo husky4 commit-msg $HUSKY_GIT_PARAMS >> '{log}'",
  "pre-push": "echo husky4 pre-push $HUSKY_GIT_PARAMS >> '{log}'"
}}}}}}
"#
                ),
            );
            link_node_modules(repo);
            let init_cwd = repo.to_str().unwrap();
            run_tool(
                env,
                repo,
                &node,
                &["node_modules/husky/lib/installer/bin", "install"],
                &[
                    ("INIT_CWD", init_cwd),
                    ("npm_config_user_agent", "npm/11 node/v20 linux x64"),
                ],
            );
        }
        Manager::Lefthook => {
            write(
                repo,
                "lefthook.yml",
                &format!(
                    "pre-commit:\n  commands:\n    log:\n      run: echo lefthook pre-commit >> '{log}'\ncommit-msg:\n  commands:\n    log:\n      run: echo lefthook commit-msg {{1}} >> '{log}'\npre-push:\n  commands:\n    log:\n      run: echo lefthook pre-push >> '{log}'\n"
                ),
            );
            run_tool(
                env,
                repo,
                &tools.join("lefthook/node_modules/.bin/lefthook"),
                &["install"],
                &[],
            );
        }
        Manager::PreCommit => {
            write(
                repo,
                ".pre-commit-config.yaml",
                &format!(
                    "repos:\n- repo: local\n  hooks:\n{}",
                    ["pre-commit", "commit-msg", "pre-push"]
                        .map(|stage| format!("  - id: log-{stage}\n    name: log\n    entry: sh -c 'echo pre-commit-framework {stage} >> \"{log}\"' --\n    language: system\n    pass_filenames: false\n    always_run: true\n    stages: [{stage}]\n"))
                        .concat()
                ),
            );
            env.git(repo, &["add", "-A"]);
            env.git(repo, &["commit", "-q", "-m", "pre-commit config"]);
            run_tool(
                env,
                repo,
                &tools.join("pre-commit/bin/pre-commit"),
                &[
                    "install",
                    "-t",
                    "pre-commit",
                    "-t",
                    "commit-msg",
                    "-t",
                    "pre-push",
                ],
                &[],
            );
        }
    }
    env.git(repo, &["add", "-A"]);
    env.git(
        repo,
        &["commit", "-q", "--allow-empty", "-m", "hook manager"],
    );
}

/// `husky` (9) in `repo`, as its `prepare` script runs it on every `npm install`: it points
/// `core.hooksPath` at `.husky/_` and writes its dispatchers there.
fn run_husky9(env: &TestEnv, repo: &Path) {
    let husky = tools().join("husky9/node_modules/husky/bin.js");
    run_tool(env, repo, &which("node"), &[husky.to_str().unwrap()], &[]);
}

/// husky 4 runs `npx --no-install husky-run`: the project needs its node_modules (a link to
/// the pinned install; ignored, as node_modules is).
fn link_node_modules(worktree: &Path) {
    let modules = worktree.join("node_modules");
    if !modules.exists() {
        std::os::unix::fs::symlink(tools().join("husky4/node_modules"), &modules).unwrap();
    }
    let ignore = read(worktree, ".gitignore");
    if !ignore.contains("node_modules") {
        write(worktree, ".gitignore", &format!("{ignore}node_modules\n"));
    }
}

fn which(program: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{program} is not on PATH"))
}

/// Every file under the hook directories of `worktree`: path, bytes and mode.
fn hook_files(worktree: &Path, common: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    let mut files = BTreeMap::new();
    let mut stack = vec![common.join("hooks"), worktree.join(".husky")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.map(Result::unwrap) {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else {
                files.insert(
                    path.clone(),
                    (std::fs::read(&path).unwrap(), meta.permissions().mode()),
                );
            }
        }
    }
    files
}

fn commit(env: &TestEnv, dir: &Path, file: &str) -> (i32, String) {
    write(dir, file, &format!("{file}\n"));
    env.git(dir, &["add", file]);
    let out = env
        .git_command(dir)
        .args(["commit", "-q", "-m", file])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[track_caller]
fn assert_no_verify_refused(env: &TestEnv, session_worktree: &Path) {
    write(session_worktree, "skip.txt", "skip\n");
    env.git(session_worktree, &["add", "skip.txt"]);
    let out = env
        .git_command(session_worktree)
        .args(["commit", "-q", "--no-verify", "-m", "skip"])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "--no-verify went through in a session"
    );
}

fn take_log(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let _ = std::fs::remove_file(log);
    text
}

#[track_caller]
fn assert_ran(log: &str, manager: Manager, hooks: &[&str]) {
    for hook in hooks {
        assert!(
            log.lines()
                .any(|l| l.starts_with(&format!("{} {hook}", manager.tag()))),
            "{manager:?}'s {hook} hook did not run:\n{log}"
        );
    }
}

fn coexists(manager: Manager) {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.bare_remote(&repo);
    let common = repo.join(".git");
    let log = env.root().join("hooks.log");
    set_up(manager, &env, &repo, &log);
    let (code, stderr) = commit(&env, &repo, "before.txt");
    assert_eq!(code, 0, "{stderr}");
    assert_ran(&take_log(&log), manager, &["pre-commit", "commit-msg"]);
    let before = hook_files(&repo, &common);
    assert!(!before.is_empty());

    env.bmad(&repo, &["hooks", "install"]).success();
    let (code, stderr) = commit(&env, &repo, "main.txt");
    assert_eq!(code, 0, "{stderr}");
    assert_ran(&take_log(&log), manager, &["pre-commit", "commit-msg"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    assert_ran(&take_log(&log), manager, &["pre-push"]);
    // Our check runs first: a staged secret never reaches the manager's hook.
    write(&repo, "key.py", "K = 'sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ'\n");
    env.git(&repo, &["add", "key.py"]);
    let out = env
        .git_command(&repo)
        .args(["commit", "-q", "-m", "key"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "a secret was committed");
    assert!(String::from_utf8_lossy(&out.stderr).contains("stripe-key"));
    assert_eq!(take_log(&log), "", "the manager ran after a refusal");
    env.git(&repo, &["rm", "-q", "--cached", "key.py"]);
    std::fs::remove_file(repo.join("key.py")).unwrap();

    let (_, wt) = env.start(&repo, "agent");
    if let Manager::Husky4 = manager {
        link_node_modules(&wt);
    }
    let (code, stderr) = commit(&env, &wt, "agent.txt");
    assert_eq!(code, 0, "{stderr}");
    assert_ran(&take_log(&log), manager, &["pre-commit", "commit-msg"]);
    assert_no_verify_refused(&env, &wt);
    let out = env
        .git_command(&wt)
        .args(["push", "-q", "origin", "HEAD:main"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "a session pushed to main");

    env.bmad(&repo, &["hooks", "uninstall"]).success();
    assert_eq!(
        hook_files(&repo, &common),
        before,
        "uninstall left the hooks as they were"
    );
    let configured = env
        .git_command(&repo)
        .args(["config", "--get", "core.hooksPath"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&configured.stdout),
        manager.hooks_path(),
        "core.hooksPath is back"
    );
    assert!(!common.join("bmad/hooks").exists());
    let (code, stderr) = commit(&env, &repo, "after.txt");
    assert_eq!(code, 0, "{stderr}");
    assert_ran(&take_log(&log), manager, &["pre-commit", "commit-msg"]);
}

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs husky, lefthook and pre-commit from npm and PyPI: cargo test --features external-tests"
)]
fn husky_9_hooks_keep_running_by_their_own_name() {
    coexists(Manager::Husky9);
}

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs husky, lefthook and pre-commit from npm and PyPI: cargo test --features external-tests"
)]
fn husky_4_hooks_keep_running_by_their_own_name() {
    coexists(Manager::Husky4);
}

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs husky, lefthook and pre-commit from npm and PyPI: cargo test --features external-tests"
)]
fn lefthook_hooks_keep_running() {
    coexists(Manager::Lefthook);
}

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs husky, lefthook and pre-commit from npm and PyPI: cargo test --features external-tests"
)]
fn pre_commit_framework_hooks_keep_running() {
    coexists(Manager::PreCommit);
}

/// husky 9 points `core.hooksPath` back at `.husky/_` on every `npm install`: the next
/// `git bmad start` puts git-bmad's hooks back in front, still running husky's.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs husky, lefthook and pre-commit from npm and PyPI: cargo test --features external-tests"
)]
fn husky_reinstalled_over_ours_is_chained_again_at_the_next_start() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let log = env.root().join("hooks.log");
    set_up(Manager::Husky9, &env, &repo, &log);
    env.bmad(&repo, &["hooks", "install"]).success();
    run_husky9(&env, &repo);
    assert_eq!(env.git(&repo, &["config", "core.hooksPath"]), ".husky/_\n");
    let status = env.bmad(&repo, &["hooks", "status"]).success();
    assert!(
        status.stderr.contains("core.hooksPath is now .husky/_"),
        "{}",
        status.stderr
    );

    let run = env.bmad(&repo, &["start", "agent"]).success();
    assert!(run.stderr.contains("back in front"), "{}", run.stderr);
    assert!(
        env.git(&repo, &["config", "core.hooksPath"])
            .ends_with(".git/bmad/hooks\n"),
        "git-bmad's hooks are not back"
    );
    let worktrees = env.git(&repo, &["worktree", "list", "--porcelain"]);
    let wt = worktrees
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(PathBuf::from)
        .find(|p| *p != repo)
        .expect("the session's worktree");
    assert_no_verify_refused(&env, &wt);
    let (code, stderr) = commit(&env, &wt, "agent.txt");
    assert_eq!(code, 0, "{stderr}");
    assert_ran(
        &take_log(&log),
        Manager::Husky9,
        &["pre-commit", "commit-msg"],
    );
}

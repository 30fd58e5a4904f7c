//! Whom the policy binds: agents and session worktrees always, wherever they run git from;
//! people in the main worktree only with `policy.scope: everywhere`.

use std::path::Path;

use crate::common::{write, Run, TestEnv};

fn commit(env: &TestEnv, dir: &Path, file: &str, content: &str) {
    write(dir, file, content);
    env.git(dir, &["add", file]);
    env.git(dir, &["commit", "-q", "-m", &format!("change {file}")]);
}

fn push(env: &TestEnv, dir: &Path, args: &[&str]) -> Run {
    let mut cmd = env.git_command(dir);
    let out = cmd.arg("push").args(args).output().expect("spawn git push");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A repository with the hooks installed and `main` pushed to a bare remote.
fn project(env: &TestEnv) -> (std::path::PathBuf, std::path::PathBuf) {
    let repo = env.repo("proj");
    let remote = env.bare_remote(&repo);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    env.bmad(&repo, &["hooks", "install"]).success();
    (repo, remote)
}

#[test]
fn people_in_the_main_worktree_push_as_they_always_did_and_sessions_do_not() {
    let env = TestEnv::new();
    let (repo, remote) = project(&env);

    commit(&env, &repo, "a.txt", "a\n");
    let run = push(&env, &repo, &["origin", "main"]);
    assert_eq!(
        run.code, 0,
        "a fast-forward of main by a person: {}",
        run.stderr
    );
    assert_eq!(
        env.git(&remote, &["rev-parse", "main"]),
        env.git(&repo, &["rev-parse", "main"])
    );
    env.git(&repo, &["checkout", "-q", "-b", "mine"]);
    commit(&env, &repo, "b.txt", "b\n");
    env.git(&repo, &["push", "-q", "origin", "mine"]);
    env.git(&repo, &["commit", "-q", "--amend", "-m", "reworded"]);
    let run = push(&env, &repo, &["--force-with-lease", "origin", "mine"]);
    assert_eq!(
        run.code, 0,
        "a lease on a person's own branch: {}",
        run.stderr
    );
    env.git(&repo, &["checkout", "-q", "main"]);

    // The same pushes from a session worktree are refused.
    let (_, wt) = env.start(&repo, "agent");
    commit(&env, &wt, "c.txt", "c\n");
    let run = push(&env, &wt, &["origin", "HEAD:main"]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("[push-to-protected]"), "{}", run.stderr);
    // And from the main worktree by a process of an agent's run.
    let run = env.sh(&repo, "BMAD_SESSION=x git push origin bmad/agent:main");
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("[push-to-protected]"), "{}", run.stderr);

    // Scope `everywhere`: people too.
    env.git(&repo, &["config", "bmad.policyScope", "everywhere"]);
    commit(&env, &repo, "d.txt", "d\n");
    let run = push(&env, &repo, &["origin", "main"]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("[push-to-protected]"), "{}", run.stderr);
    env.git(&repo, &["config", "bmad.policyScope", "nobody"]);
    let run = push(&env, &repo, &["origin", "main"]);
    assert_ne!(run.code, 0, "a misspelt scope must not open the door");
    assert!(run.stderr.contains("bmad.policyScope"), "{}", run.stderr);
}

/// An agent that leaves its worktree (and its environment) behind: from the main worktree,
/// from a directory outside the repository with `GIT_DIR` pointing at the session, and with
/// a push; none moves `main`, here or on the remote. Once the run is over, people can.
#[test]
fn an_agent_that_leaves_its_worktree_still_moves_no_protected_branch() {
    let env = TestEnv::new();
    let (repo, remote) = project(&env);
    env.git(&repo, &["checkout", "-q", "-b", "side"]);
    commit(&env, &repo, "side.txt", "side\n");
    let side = env.git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();
    env.git(&repo, &["checkout", "-q", "main"]);
    write(
        &repo,
        ".bmad/playbooks/escape.yaml",
        &format!(
            "steps:\n  - {{id: escape, runner: shell, command: 'sh {}/escape.sh'}}\n",
            env.root().display()
        ),
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "playbook"]);
    let main = env.git(&repo, &["rev-parse", "main"]);
    env.git(&repo, &["tag", "v1", &side]);
    env.git(&repo, &["push", "-q", "origin", "main", "side", "v1"]);
    let (_, wt) = env.start(&repo, "agent");
    let session_git_dir = env
        .git(&wt, &["rev-parse", "--absolute-git-dir"])
        .trim()
        .to_owned();
    let log = env.root().join("escape.log");
    write(
        &env.root(),
        "escape.sh",
        &format!(
            "cd '{repo}' && git update-ref refs/heads/main {side}; echo \"main worktree $?\" >> '{log}'\n\
             cd / && GIT_DIR='{gd}' git update-ref refs/heads/main {side}; echo \"git dir $?\" >> '{log}'\n\
             cd '{repo}' && env -u BMAD_SESSION git push origin side:main; echo \"push $?\" >> '{log}'\n\
             cd '{repo}' && git push origin :refs/tags/v1; echo \"tag $?\" >> '{log}'\n\
             exit 0\n",
            repo = repo.display(),
            gd = session_git_dir,
            log = log.display(),
        ),
    );
    // A refused ref update fails the step's git, and the run asks a person (exit 3).
    let run = env.bmad(&wt, &["run", "escape"]);
    assert_eq!(
        run.code,
        3,
        "{}{}{:?}",
        run.stderr,
        env.bmad(&wt, &["journal", "--json"]).stdout,
        std::fs::read_to_string(&log)
    );
    let tried = std::fs::read_to_string(&log).unwrap();
    for line in tried.lines() {
        assert!(!line.ends_with(" 0"), "an escape worked: {tried}");
    }
    assert_eq!(tried.lines().count(), 4, "{tried}");
    assert_eq!(env.git(&repo, &["rev-parse", "main"]), main);
    assert_eq!(env.git(&remote, &["rev-parse", "main"]), main);
    assert_eq!(env.git(&remote, &["rev-parse", "v1"]).trim(), side);
    let journal = env.bmad(&wt, &["journal", "--json"]).success().json();
    let refused: Vec<&str> = journal
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "policy_violation")
        .filter_map(|e| e["detail"]["rule"].as_str())
        .collect();
    assert!(!refused.is_empty(), "{journal:#}");

    // `GIT_DIR` at the session's git dir binds with no run live too.
    let outside = env.root().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let run = env.sh(
        &outside,
        &format!("GIT_DIR='{session_git_dir}' git update-ref refs/heads/main {side}"),
    );
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert_eq!(env.git(&repo, &["rev-parse", "main"]), main);

    // The run is over: a person moves their own main.
    env.git(&repo, &["branch", "-f", "other", &side]);
    env.git(&repo, &["update-ref", "refs/heads/main", &side]);
    assert_eq!(env.git(&repo, &["rev-parse", "main"]).trim(), side);
}

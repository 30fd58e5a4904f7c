//! Contained agents: with the default configuration every step runs in walls that leave it
//! its worktree and its own branch. An agent with its permissions bypassed tries everything
//! a shell allows and reaches nothing: the repository, the remote, the credentials and the
//! other sessions stay as they were, and what left a trace is journaled. So it is on every
//! machine: with bubblewrap working (bubblewrap and Landlock stacked), with bubblewrap
//! refused as Ubuntu 24.04 and GitHub's runners refuse it, and with no bubblewrap at all
//! (Landlock alone).

use std::path::Path;

use serde_json::Value;

use crate::common::{read, write, TestEnv};

/// A project with hooks, a remote, a second session, the user's credentials in HOME and a
/// generic agent `my-agent` running `script` in a session called `work`.
struct Walled {
    env: TestEnv,
    repo: std::path::PathBuf,
    worktree: std::path::PathBuf,
    other: std::path::PathBuf,
}

const SSH_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY----- not-a-real-key-7f3a";
const GH_HOSTS: &str = "github.com:\n    oauth_token: gho_notarealtoken7f3a\n";
const STORED_CREDENTIAL: &str = "https://u:ghp_notarealtoken7f3a@github.com\n";
const ENV_TOKEN: &str = "ghp_fromtheenvironment7f3a";
/// The job's token as actions/checkout keeps it in `http.<url>.extraheader`.
const TOKEN_HEADER: &str = "eC1hY2Nlc3MtdG9rZW46Z2hzX2pvYnRva2Vu";

/// The machine the walls are raised on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Machine {
    /// bubblewrap works: it and Landlock stack.
    Bubblewrap,
    /// bubblewrap is installed but may not make a user namespace (a locked-down Ubuntu).
    Refused,
    /// bubblewrap is not installed.
    Absent,
}

impl Machine {
    /// Make `env` this machine.
    fn make(self, env: &TestEnv) {
        match self {
            Machine::Bubblewrap => {}
            // bubblewrap as it answers where it may not create a user namespace.
            Machine::Refused => env.executable(
                "bwrap",
                "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n",
            ),
            Machine::Absent => env.without_program("bwrap"),
        }
    }

    /// What the journal says of the walls on it.
    fn walls(self) -> &'static str {
        match self {
            Machine::Bubblewrap => "bubblewrap and Landlock",
            Machine::Refused | Machine::Absent => "alone",
        }
    }
}

impl Walled {
    /// The same on `machine`.
    fn on(machine: Machine, script: &str, config: &str) -> Walled {
        Walled::with_on(machine, script, config, |_, _| {})
    }

    /// The same, `prepare` shaping the project before its first commit and the hooks.
    fn with_on(
        machine: Machine,
        script: &str,
        config: &str,
        prepare: impl FnOnce(&TestEnv, &Path),
    ) -> Walled {
        let env = TestEnv::contained();
        machine.make(&env);
        let home = env.root().join("home");
        write(&home, ".ssh/id_ed25519", SSH_KEY);
        write(&home, ".config/gh/hosts.yml", GH_HOSTS);
        write(&home, ".git-credentials", STORED_CREDENTIAL);
        env.executable("my-agent", script);
        let repo = env.repo("project");
        write(&repo, "README.md", "# project\n");
        write(&repo, ".bmad/config.yaml", config);
        write(
            &repo,
            ".bmad/playbooks/one.yaml",
            "name: one\nsteps:\n  - id: work\n    command: do the work\n",
        );
        prepare(&env, &repo);
        env.git(&repo, &["add", "-A"]);
        env.git(&repo, &["commit", "-qm", "project"]);
        env.bmad(&repo, &["hooks", "install"]).success();
        env.bare_remote(&repo);
        let (_, other) = env.start(&repo, "other");
        write(&other, "theirs.txt", "another session's work\n");
        let (_, worktree) = env.start(&repo, "work");
        Walled {
            env,
            repo,
            worktree,
            other,
        }
    }

    fn run(&self) -> crate::common::Run {
        self.env
            .bmad_with(&self.worktree, &["run", "one"], &[("GH_TOKEN", ENV_TOKEN)])
    }

    fn journal(&self) -> Vec<Value> {
        let run = self
            .env
            .bmad(&self.worktree, &["journal", "--json"])
            .success();
        run.json().as_array().cloned().unwrap_or_default()
    }

    /// Assert that the worktree names the repository itself again (no shadow of it), whose
    /// config keeps the job's token (`with_token`).
    fn names_the_repository_with_its_token(&self, context: &str) {
        let common = self.env.git(
            &self.worktree,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        );
        assert_eq!(
            std::fs::canonicalize(common.trim()).unwrap(),
            std::fs::canonicalize(self.repo.join(".git")).unwrap(),
            "{context}"
        );
        let header = self
            .env
            .git(&self.worktree, &["config", "--get-regexp", "http\\..*"]);
        assert!(header.contains(TOKEN_HEADER), "{context}: {header}");
    }

    /// Keep the job's token in the repository's config, as actions/checkout does.
    fn with_token(&self) {
        self.git(&[
            "config",
            "http.https://github.com/.extraheader",
            &format!("AUTHORIZATION: basic {TOKEN_HEADER}"),
        ]);
    }

    fn git(&self, args: &[&str]) -> String {
        self.env.git(&self.repo, args)
    }
}

const GENERIC: &str =
    "runners:\n  default: generic\n  generic:\n    command: [my-agent, \"{prompt}\"]\n";

/// Each attempt's outcome goes into `attempts.txt` in the worktree, so the test can read
/// what the agent saw; the repository's state is checked on its own.
const ATTACKER: &str = r#"#!/bin/sh
common=$(git rev-parse --git-common-dir)
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name: done"; else echo "$name: failed"; fi >> attempts.txt; }
echo hello > hello.txt
git add hello.txt && git commit -qm 'honest work'
try push git push origin HEAD:refs/heads/main
try push-no-verify git push --no-verify origin HEAD:refs/heads/stolen
try config-command git config core.hooksPath /dev/null
try main git -c core.hooksPath=/dev/null update-ref refs/heads/main HEAD
try notes git -c core.hooksPath=/dev/null update-ref refs/notes/bmad/forged HEAD
try bmad-ref git -c core.hooksPath=/dev/null update-ref refs/bmad/forged HEAD
try config-file sh -c "printf '[core]\n\thooksPath = /tmp/none\n' >> '$common/config'"
# What decides which files the next checkpoint reads again, wherever it is: git-bmad's alone.
cache=$(find -L "$common" "$(git rev-parse --git-dir)" -name bmad-snapshot-index 2>/dev/null | head -n 1)
echo "snapshot-cache at: $cache" >> attempts.txt
try snapshot-cache sh -c "echo forged >> '$cache'"
try corrupt sh -c "mkdir -p '$common/objects/ab' && echo junk > '$common/objects/ab/cdef0123456789abcdef0123456789abcdef01'"
try hook sh -c "printf '#!/bin/sh\nexit 0\n' > '$(git rev-parse --git-path hooks)/pre-push'"
try other-session sh -c "echo pwned >> ../project.other/theirs.txt"
try real-config sh -c "echo '[core]' >> '$(cd ../project && pwd)/.git/config'"
cat ~/.ssh/id_ed25519 ~/.config/gh/hosts.yml ~/.git-credentials >> attempts.txt 2>/dev/null
cat "$(cd ../project && pwd)/README.md" >> attempts.txt 2>/dev/null
echo "token=$GH_TOKEN" >> attempts.txt
# git-bmad's supervisor: where it can be seen (Landlock alone), it cannot be signalled.
for pid in $(ls /proc | grep '^[0-9]*$'); do
  case "$(tr '\0' ' ' < /proc/$pid/cmdline 2>/dev/null)" in
    *git-bmad\ run\ *) echo "saw git-bmad: $pid" >> attempts.txt; try kill-git-bmad kill -9 "$pid" ;;
  esac
done
try user-namespace unshare -Ur true
# Left in the layer for git-bmad to read: a fifo that would block it, and HEAD made a
# symlink to the user's key, which git-bmad (not the step) could read and show.
mkfifo "$common/refs/heads/fifo"
ln -sfn "$HOME/.ssh/id_ed25519" "$(git rev-parse --git-dir)/HEAD"
# Last: with it, git no longer finds the repository.
try worktree-link sh -c "echo 'gitdir: /tmp/elsewhere' > .git"
echo '{"result":"done"}'
"#;

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn an_agent_with_its_permissions_bypassed_reaches_nothing_past_its_worktree_and_branch() {
    bypassed_agent_on(Machine::Bubblewrap);
}

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn where_bubblewrap_is_refused_landlock_alone_holds_the_same_walls() {
    bypassed_agent_on(Machine::Refused);
}

#[test]
fn where_bubblewrap_is_not_installed_landlock_alone_holds_the_same_walls() {
    bypassed_agent_on(Machine::Absent);
}

fn bypassed_agent_on(machine: Machine) {
    let w = Walled::on(machine, ATTACKER, GENERIC);
    let main_before = w.git(&["rev-parse", "main"]);
    let config_before = read(&w.repo, ".git/config");
    let remote = w.env.root().join("remote.git");
    let remote_before = w.env.git(&remote, &["for-each-ref"]);
    let hooks = w.git(&["rev-parse", "--git-path", "hooks"]);
    let hook = w.repo.join(hooks.trim()).join("pre-push");
    let hook_before = std::fs::read_to_string(&hook).unwrap();
    let run = w.run();
    // git-bmad lived through it and stopped at a gate: the step broke the rules.
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let attempts = read(&w.worktree, "attempts.txt");
    for failed in [
        "config-command: failed",
        "hook: failed",
        "notes: failed",
        "bmad-ref: failed",
        "snapshot-cache at: /",
        "snapshot-cache: failed",
        "push: failed",
        "push-no-verify: failed",
        "other-session: failed",
        "user-namespace: failed",
    ] {
        assert!(attempts.contains(failed), "{failed}?\n{attempts}");
    }
    assert!(
        !attempts.contains("# project"),
        "the main worktree was read"
    );
    match machine {
        // Its own process tree: git-bmad is not there to see.
        Machine::Bubblewrap => {
            assert!(!attempts.contains("saw git-bmad"), "{attempts}");
            assert!(attempts.contains("worktree-link: failed"), "{attempts}");
        }
        // Seen, not reached; a link inside its worktree is written, and put back after.
        Machine::Refused | Machine::Absent => {
            assert!(attempts.contains("saw git-bmad"), "{attempts}");
            assert!(!attempts.contains("kill-git-bmad: done"), "{attempts}");
            assert!(attempts.contains("worktree-link: done"), "{attempts}");
            // Mounted, the repository's config is a copy the step may write (and loses);
            // alone, the real one is not written at all.
            assert!(attempts.contains("real-config: failed"), "{attempts}");
        }
    }
    for secret in [
        SSH_KEY,
        "gho_notarealtoken7f3a",
        "ghp_notarealtoken7f3a",
        ENV_TOKEN,
    ] {
        assert!(!attempts.contains(secret), "{secret} leaked:\n{attempts}");
    }
    // The repository, the remote and the other session are as they were.
    assert_eq!(w.git(&["rev-parse", "main"]), main_before);
    assert_eq!(read(&w.repo, ".git/config"), config_before);
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), hook_before);
    let refs = w.git(&["for-each-ref", "--format=%(refname)"]);
    assert!(!refs.contains("forged"), "{refs}");
    assert_eq!(w.env.git(&remote, &["for-each-ref"]), remote_before);
    assert_eq!(read(&w.other, "theirs.txt"), "another session's work\n");
    assert!(read(&w.worktree, ".git").starts_with("gitdir: "));
    assert!(!read(&w.worktree, ".git").contains("elsewhere"));
    // Its own work on its own branch is kept.
    let log = w.env.git(&w.worktree, &["log", "--format=%s", "-1"]);
    assert_eq!(log.trim(), "honest work");
    assert_eq!(
        w.env
            .git(&w.worktree, &["status", "--porcelain", "--", "hello.txt"]),
        ""
    );
    // What left a trace is on the record, as a violation of its step, and nothing of the
    // user's files with it.
    let journal = w.journal();
    let text = serde_json::to_string(&journal).unwrap();
    assert!(
        !text.contains("not-a-real-key"),
        "the key reached the journal"
    );
    let started = journal
        .iter()
        .find(|e| e["event"] == "step_started")
        .unwrap();
    assert!(started["detail"]["uncontained"].is_null(), "{started:#}");
    let walls = started["detail"]["walls"].as_str().unwrap_or_default();
    assert!(walls.contains(machine.walls()), "{started:#}");
    let outside: Vec<String> = journal
        .iter()
        .filter(|e| e["event"] == "policy_violation")
        .filter(|e| e["detail"]["rule"] == "outside-walls")
        .map(|e| {
            assert_eq!(e["step"], "work", "{e:#}");
            e["detail"]["ref"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    let planted = w.env.sh(
        &w.repo,
        "git cat-file -e abcdef0123456789abcdef0123456789abcdef01",
    );
    assert_ne!(planted.code, 0, "a corrupt object came in");
    let mut subjects = vec![
        "config",
        "refs/heads/main",
        "origin",
        "objects",
        "refs/heads/fifo",
        "HEAD",
    ];
    if machine != Machine::Bubblewrap {
        subjects.push(".git");
    }
    for subject in subjects {
        assert!(
            outside.iter().any(|s| s == subject),
            "{subject}? {outside:?}"
        );
    }
}

/// A test command runs in walls too: it reads no credential and writes nothing outside
/// the worktree.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn the_tests_run_for_a_step_are_contained_too() {
    for machine in [Machine::Bubblewrap, Machine::Refused] {
        tests_contained_on(machine);
    }
}

fn tests_contained_on(machine: Machine) {
    let w = Walled::on(
        machine,
        "#!/bin/sh\necho hello > hello.txt\necho '{\"result\":\"done\"}'\n",
        &format!("{GENERIC}checks:\n  test_command: sh test.sh\n"),
    );
    let escaped = w.env.root().join("escaped");
    write(
        &w.worktree,
        "test.sh",
        &format!(
            "cat ~/.git-credentials > leaked.txt 2>/dev/null\ntouch '{}' 2>/dev/null\nmkdir -p target && echo built > target/out\necho 'gitdir: /tmp/elsewhere' > .git 2>/dev/null\ntest -f hello.txt\n",
            escaped.display()
        ),
    );
    let link = read(&w.worktree, ".git");
    write(
        &w.worktree,
        ".bmad/playbooks/one.yaml",
        "name: one\nsteps:\n  - id: work\n    command: do the work\n    postconditions: [tests_pass]\n",
    );
    let run = w.run();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let checks = w
        .journal()
        .iter()
        .filter(|e| e["event"] == "step_completed")
        .map(|e| e["detail"]["checks"].to_string())
        .collect::<String>();
    assert!(checks.contains("`sh test.sh` passed"), "{checks}");
    assert!(!escaped.exists(), "the test run wrote outside the worktree");
    assert_eq!(read(&w.worktree, "target/out"), "built\n");
    // The worktree's link to the repository is what it was: held read-only by a mount, or
    // put back after the test run where Landlock alone holds the walls.
    assert_eq!(read(&w.worktree, ".git"), link, "{machine:?}");
    let leaked = std::fs::read_to_string(w.worktree.join("leaked.txt")).unwrap_or_default();
    assert!(leaked.is_empty(), "{leaked}");
}

/// Where bubblewrap cannot make a sandbox (user namespaces off, as on a locked-down
/// Ubuntu), `auto` still contains the step, with Landlock alone, and says so with the step,
/// in the journal and in the morning report; `bubblewrap` refuses to start and says what
/// is missing and what enables it; `doctor` names the command.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn where_bubblewrap_is_refused_auto_contains_with_landlock_and_bubblewrap_refuses() {
    let honest = "#!/bin/sh\necho hello > hello.txt\ncat ~/.git-credentials >> hello.txt 2>/dev/null\necho '{\"result\":\"done\"}'\n";
    let w = Walled::on(Machine::Refused, honest, GENERIC);
    let run = w.run();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(read(&w.worktree, "hello.txt"), "hello\n");
    let journal = w.journal();
    let started = journal
        .iter()
        .find(|e| e["event"] == "step_started")
        .unwrap();
    assert!(started["detail"]["uncontained"].is_null(), "{started:#}");
    let lack = started["detail"]["walls_lack"].as_str().unwrap_or_default();
    assert!(
        lack.contains("Permission denied") && lack.contains("not by mounts"),
        "{started:#}"
    );
    let shown = w.env.bmad(&w.worktree, &["journal"]).success().stdout;
    assert!(shown.contains("Landlock"), "{shown}");
    // The morning report says which walls held.
    let report = w.env.bmad(&w.repo, &["report", "--json"]).success().json();
    let problems = report["sessions"].to_string();
    assert!(problems.contains("Landlock"), "{report:#}");
    // doctor names the layers and what bubblewrap needs here.
    let doctor = w.env.bmad(&w.repo, &["doctor", "--json"]).json();
    assert_eq!(doctor["containment"]["works"], true, "{doctor:#}");
    assert!(doctor["containment"]["bwrap"].is_null(), "{doctor:#}");
    assert!(
        doctor["containment"]["landlock_abi"].as_i64() >= Some(1),
        "{doctor:#}"
    );

    write(
        &w.repo,
        ".bmad/config.yaml",
        &format!("{GENERIC}  sandbox: bubblewrap\n"),
    );
    w.env
        .git(&w.repo, &["commit", "-qam", "bubblewrap required"]);
    let (_, second) = w.env.start(&w.repo, "second");
    let refused = w.env.bmad(&second, &["run", "one"]);
    assert_eq!(refused.code, 1, "{}\n{}", refused.stdout, refused.stderr);
    assert!(
        refused
            .stderr
            .contains("runners.sandbox requires bubblewrap")
            && refused.stderr.contains("Permission denied")
            && refused.stderr.contains("git bmad doctor"),
        "{}",
        refused.stderr
    );
    assert!(!second.join("hello.txt").exists());
}

/// git-bmad killed while a contained step runs: the step's layer stays behind, holding the
/// objects its commit made (which the worktree's index may name). The next run takes them
/// in and drops the rest: the killed step is not believed, its branch move is not kept,
/// and it runs again.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn a_kill_during_a_contained_step_loses_no_object_and_believes_nothing() {
    for machine in [Machine::Bubblewrap, Machine::Refused] {
        killed_during_a_step_on(machine);
    }
}

fn killed_during_a_step_on(machine: Machine) {
    let agent = r#"#!/bin/sh
echo "attempt" >> attempts.txt
git add -A && git commit -qm "step work"
if [ -f slow ]; then
  rm slow
  git rev-parse HEAD > killed-commit.txt
  sleep 60
fi
echo '{"result":"done"}'
"#;
    let w = Walled::on(machine, agent, GENERIC);
    write(&w.worktree, "slow", "");
    let branch_before = w.git(&["rev-parse", "refs/heads/bmad/work"]);
    let mut child = w
        .env
        .bmad_command(&w.worktree)
        .args(["run", "one"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let killed = w.worktree.join("killed-commit.txt");
    let started = std::time::Instant::now();
    while !killed.exists() && started.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    child.kill().unwrap();
    child.wait().unwrap();
    let commit = read(&w.worktree, "killed-commit.txt").trim().to_owned();
    // Not taken in: the branch is where it was, the commit only in the layer.
    assert_eq!(w.git(&["rev-parse", "refs/heads/bmad/work"]), branch_before);
    if machine == Machine::Bubblewrap {
        assert_eq!(
            w.env.git(&w.worktree, &["rev-parse", "HEAD"]),
            branch_before
        );
    }
    let fences = w.repo.join(".git/bmad/fence");
    assert_eq!(std::fs::read_dir(&fences).unwrap().count(), 1);
    let missing = w.env.sh(&w.repo, &format!("git cat-file -e {commit}"));
    assert_ne!(
        missing.code, 0,
        "the killed step's commit is not in the repository yet"
    );

    if machine == Machine::Refused {
        // Landlock alone: the worktree still names the dead step's shadow; doctor says so
        // and puts it back.
        let found = w.env.bmad(&w.repo, &["doctor", "--json"]);
        assert!(
            found.stdout.contains("naming its shadow"),
            "{}",
            found.stdout
        );
        let fixed = w.env.bmad(&w.repo, &["doctor", "--fix", "--json"]).json();
        assert!(
            !fixed["findings"].to_string().contains("naming its shadow")
                && fixed["repairs"][0]["repair"]["kind"] == "put_back_shadow"
                && fixed["repairs"][0]["done"] == true,
            "{fixed:#}"
        );
        let common = w.env.git(&w.worktree, &["rev-parse", "--git-common-dir"]);
        assert!(!common.contains("fence"), "{common}");
        assert_eq!(
            w.env.git(&w.worktree, &["rev-parse", "HEAD"]),
            branch_before
        );
    }
    let resumed = w.env.bmad(&w.worktree, &["resume"]);
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    // Its objects came in (checked by hash); the layer is gone; the step ran again.
    w.env.git(&w.repo, &["cat-file", "-e", &commit]);
    // Its copies stay, settled, for the next round; nothing else of the layer does.
    let mut left: Vec<String> = std::fs::read_dir(&fences)
        .unwrap()
        .flat_map(|layer| std::fs::read_dir(layer.unwrap().path()).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["copies", "settled"]);
    assert_eq!(read(&w.worktree, "attempts.txt"), "attempt\nattempt\n");
    let log = w.env.git(&w.worktree, &["log", "--format=%H %s", "-1"]);
    assert!(
        log.ends_with("step work\n") && !log.starts_with(&commit),
        "{log}"
    );
    crate::common::wait_for_repacks(&w.worktree);
    w.env.git(
        &w.worktree,
        &["fsck", "--connectivity-only", "--no-dangling"],
    );
    w.env.git(&w.worktree, &["diff", "--cached", "--stat"]);
    // The worktree names the repository itself again, whichever way it was walled.
    let common = w.env.git(&w.worktree, &["rev-parse", "--git-common-dir"]);
    assert!(!common.contains("fence"), "{common}");
}

/// A hook in the worktree (a tracked `.githooks/`, husky's `.husky/`) is a file the agent can
/// rewrite. When git-bmad pushes the session branch, with the user's credentials at hand,
/// that hook runs in walls: it still runs, and reaches none of them.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn a_hook_the_agent_rewrote_runs_in_walls_when_git_bmad_pushes() {
    for machine in [Machine::Bubblewrap, Machine::Refused] {
        rewritten_pre_push_on(machine);
    }
}

fn rewritten_pre_push_on(machine: Machine) {
    let (w, stolen) = with_rewritten_hook(
        machine,
        "pre-push",
        "cat ~/.git-credentials ~/.ssh/id_ed25519 > STOLEN 2>/dev/null\\necho \"token=$GH_TOKEN\" >> STOLEN\\necho ran > hook-ran.txt",
    );
    let (env, worktree) = (&w.env, &w.worktree);
    assert!(read(worktree, ".githooks/pre-push").contains("git-credentials"));

    let pushed = env.bmad_with(worktree, &["push"], &[("GH_TOKEN", ENV_TOKEN)]);
    assert_eq!(pushed.code, 0, "{}\n{}", pushed.stdout, pushed.stderr);
    // The hook ran (in the worktree), and took nothing out.
    assert_eq!(read(worktree, "hook-ran.txt"), "ran\n");
    let taken = std::fs::read_to_string(&stolen);
    let _ = std::fs::remove_file(&stolen);
    assert!(taken.is_err(), "{taken:?}");
    let remote = env.git(&env.root().join("remote.git"), &["for-each-ref"]);
    assert!(remote.contains("refs/heads/bmad/work"), "{remote}");
}

/// Test runs keep the network by default (a project's tests may need a service), and lose
/// it with `checks.network: none`: then not even this machine's loopback is reached.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn checks_network_none_cuts_the_test_runs_off() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let probe = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)\" 2>/dev/null && echo reached >> net.txt || echo cut >> net.txt\n"
    );
    for (machine, network, seen) in [
        (Machine::Bubblewrap, "full", "reached\n"),
        (Machine::Bubblewrap, "none", "cut\n"),
        (Machine::Refused, "full", "reached\n"),
        (Machine::Refused, "none", "cut\n"),
    ] {
        let w = Walled::on(
            machine,
            "#!/bin/sh\necho '{\"result\":\"done\"}'\n",
            &format!("{GENERIC}checks:\n  test_command: sh probe.sh\n  network: {network}\n"),
        );
        write(&w.worktree, "probe.sh", &probe);
        write(
            &w.worktree,
            ".bmad/playbooks/one.yaml",
            "name: one\nsteps:\n  - id: work\n    command: do the work\n    postconditions: [tests_pass]\n",
        );
        let run = w.run();
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        assert_eq!(
            read(&w.worktree, "net.txt"),
            seen,
            "checks.network: {network} on {machine:?}"
        );
    }
}

/// A post-checkout hook the agent wrote (git-bmad does not check that hook, it only passes
/// it on): when git-bmad's own checkout fires it, bringing a removed session back, it runs
/// in walls too. With containment off, the same restore shows that the hook does run.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn a_checkout_hook_the_agent_wrote_runs_in_walls_when_git_bmad_checks_out() {
    for machine in [Machine::Bubblewrap, Machine::Refused] {
        rewritten_post_checkout_on(machine);
    }
}

fn rewritten_post_checkout_on(machine: Machine) {
    let (w, stolen) = with_rewritten_hook(
        machine,
        "post-checkout",
        "cat ~/.git-credentials >> STOLEN 2>/dev/null\\ntrue",
    );
    let restore = || {
        w.env
            .bmad(&w.repo, &["remove", "work", "--force"])
            .success();
        w.env.bmad(&w.repo, &["restore", "work"]).success();
        let taken = std::fs::read_to_string(&stolen).unwrap_or_default();
        let _ = std::fs::remove_file(&stolen);
        taken
    };
    assert_eq!(restore(), "", "contained, the hook took nothing");
    w.env.git(&w.repo, &["config", "bmad.sandbox", "off"]);
    assert_eq!(
        restore(),
        STORED_CREDENTIAL,
        "uncontained, the same hook runs as the user"
    );
}

/// A project whose hooks live in a tracked `.githooks/` (its `hook` a no-op), and an agent
/// that rewrites that hook to run `body` and commits it; `stolen` is a file of this
/// machine's `/tmp` where the rewritten hook tries to put what it takes.
fn with_rewritten_hook(machine: Machine, hook: &str, body: &str) -> (Walled, std::path::PathBuf) {
    let stolen =
        std::env::temp_dir().join(format!("git-bmad-stolen-{hook}-{}", std::process::id()));
    let body = body.replace("STOLEN", &stolen.display().to_string());
    let agent = format!(
        "#!/bin/sh\nprintf '#!/bin/sh\\n{body}\\n' > .githooks/{hook}\nchmod +x .githooks/{hook}\ngit add -A && git commit -qm 'a better hook'\necho '{{\"result\":\"done\"}}'\n"
    );
    let w = Walled::with_on(machine, &agent, GENERIC, |env, repo| {
        write(repo, &format!(".githooks/{hook}"), "#!/bin/sh\nexit 0\n");
        env.sh(repo, &format!("chmod +x .githooks/{hook}"))
            .success();
        env.git(repo, &["config", "core.hooksPath", ".githooks"]);
    });
    w.env.bmad(&w.worktree, &["run", "one"]).success();
    (w, stolen)
}

/// A CLI whose install lies where the walls hide it (here, in the user's main worktree,
/// which no step sees but for what the user shows of it) is refused before its step starts,
/// with the place and the setting that shows it; shown by `runners.sandbox_paths`, it runs,
/// on either machine.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn a_cli_the_walls_hide_is_refused_up_front_and_runs_once_shown() {
    for machine in [Machine::Bubblewrap, Machine::Refused] {
        let honest = "#!/bin/sh\necho hello > hello.txt\necho '{\"result\":\"done\"}'\n";
        let w = Walled::on(machine, honest, GENERIC);
        let tools = w.repo.join("tools");
        write(&tools, "agent", honest);
        w.env.sh(&tools, "chmod +x agent").success();
        let config = |extra: &str| {
            format!(
                "runners:\n  default: generic\n  generic:\n    command: [\"{}\", \"{{prompt}}\"]\n{extra}",
                tools.join("agent").display()
            )
        };
        write(&w.repo, ".bmad/config.yaml", &config(""));
        let refused = w.run();
        assert_eq!(
            refused.code, 1,
            "{machine:?}: {}\n{}",
            refused.stdout, refused.stderr
        );
        assert!(
            refused.stderr.contains("which the walls hide")
                && refused.stderr.contains("runners.sandbox_paths")
                && refused.stderr.contains(&tools.display().to_string()),
            "{machine:?}: {}",
            refused.stderr
        );
        assert!(!w.worktree.join("hello.txt").exists());

        write(
            &w.repo,
            ".bmad/config.yaml",
            &config(&format!(
                "  sandbox_paths: {{read: [\"{}\"]}}\n",
                tools.display()
            )),
        );
        w.env
            .git(&w.repo, &["commit", "-qam", "show the agent's folder"]);
        let (_, second) = w.env.start(&w.repo, "second");
        let run = w.env.bmad(&second, &["run", "one"]);
        assert_eq!(run.code, 0, "{machine:?}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(read(&second, "hello.txt"), "hello\n");
    }
}

/// An agent's `npm install` works inside the walls, on either machine: the package lands
/// in the worktree, npm's cache in the step's private home, and nothing in the user's.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap and the npm registry: cargo test --features external-tests"
)]
fn an_agents_npm_install_works_contained() {
    let agent = "#!/bin/sh\nnpm install --no-audit --no-fund --no-update-notifier is-number@7.0.0 > npm.log 2>&1 && echo installed >> npm.log\necho '{\"result\":\"done\"}'\n";
    for machine in [Machine::Bubblewrap, Machine::Refused] {
        let w = Walled::on(machine, agent, GENERIC);
        let run = w.run();
        assert_eq!(run.code, 0, "{machine:?}: {}\n{}", run.stdout, run.stderr);
        let log = read(&w.worktree, "npm.log");
        assert!(log.ends_with("installed\n"), "{machine:?}: {log}");
        assert!(w
            .worktree
            .join("node_modules/is-number/package.json")
            .exists());
        assert!(!w.env.root().join("home/.npm").exists(), "{machine:?}");
    }
}

/// git-bmad installed where the walls hide (a build in the home, linked from a folder on
/// `PATH`) and its hooks installed from there: an agent's commit inside the walls still runs
/// them, on either machine.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn hooks_run_inside_the_walls_when_git_bmad_lies_where_they_hide() {
    let agent = "#!/bin/sh\necho hello > hello.txt\ngit add hello.txt && git commit -qm 'honest work' 2> commit.err\necho '{\"result\":\"done\"}'\n";
    for machine in [Machine::Bubblewrap, Machine::Refused] {
        let w = Walled::on(machine, agent, GENERIC);
        let build = w
            .env
            .root()
            .join("home/src/git-bmad/target/release/git-bmad");
        std::fs::create_dir_all(build.parent().unwrap()).unwrap();
        std::fs::copy(env!("CARGO_BIN_EXE_git-bmad"), &build).unwrap();
        let linked = w.env.root().join("bin/git-bmad");
        std::os::unix::fs::symlink(&build, &linked).unwrap();
        w.env
            .sh(&w.repo, &format!("{} hooks install", linked.display()))
            .success();
        let status = w
            .env
            .bmad(&w.repo, &["hooks", "status", "--json"])
            .success();
        assert!(
            status.stdout.contains("home/src/git-bmad"),
            "{}",
            status.stdout
        );
        let run = w.run();
        assert_eq!(run.code, 0, "{machine:?}: {}\n{}", run.stdout, run.stderr);
        let log = w.env.git(&w.worktree, &["log", "--format=%s", "-1"]);
        assert_eq!(
            log.trim(),
            "honest work",
            "{machine:?}: {}",
            read(&w.worktree, "commit.err")
        );
    }
}

/// A checkout that keeps the job's token in `.git/config` (actions/checkout's default
/// `persist-credentials: true`): no step reads it, through its git or by the file's path,
/// on either machine.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn a_token_a_checkout_kept_in_the_config_is_out_of_every_steps_reach() {
    let agent = r#"#!/bin/sh
git config --get-regexp 'http\..*' >> seen.txt 2>&1
git remote get-url origin >> seen.txt 2>&1
cat "$(git rev-parse --git-common-dir)/config" >> seen.txt 2>&1
cat "$(cd ../project && pwd)/.git/config" >> seen.txt 2>&1
echo hello > hello.txt && git add hello.txt && git commit -qm 'honest work'
echo '{"result":"done"}'
"#;
    for machine in [Machine::Bubblewrap, Machine::Refused] {
        let w = Walled::on(
            machine,
            agent,
            &format!("{GENERIC}checks:\n  test_command: sh test.sh\n"),
        );
        // The step's tests, which the agent writes, look too; and they need git.
        write(
            &w.worktree,
            "test.sh",
            "cat \"$(cd ../project && pwd)/.git/config\" > test-seen.txt 2>&1\ngit config --get-regexp 'http\\..*' >> test-seen.txt 2>&1\ngit remote get-url origin >> test-seen.txt 2>&1\ngit log -1 --format=%s | grep -qx 'honest work'\n",
        );
        write(
            &w.worktree,
            ".bmad/playbooks/one.yaml",
            "name: one\nsteps:\n  - id: work\n    command: do the work\n    postconditions: [tests_pass]\n",
        );
        w.with_token();
        let remote = w.env.root().join("remote.git");
        w.git(&[
            "remote",
            "set-url",
            "origin",
            &format!("https://x-access-token:ghs_jobtoken@{}", remote.display()),
        ]);
        let run = w.run();
        assert_eq!(run.code, 0, "{machine:?}: {}\n{}", run.stdout, run.stderr);
        let seen = read(&w.worktree, "seen.txt") + &read(&w.worktree, "test-seen.txt");
        assert!(
            !seen.contains("ghs_jobtoken") && !seen.contains("eC1hY2Nl"),
            "{machine:?}: {seen}"
        );
        // Its git still knows the remote, without the password.
        assert!(seen.contains("https://"), "{machine:?}: {seen}");
        let checks = w
            .journal()
            .iter()
            .filter(|e| e["event"] == "step_completed")
            .map(|e| e["detail"]["checks"].to_string())
            .collect::<String>();
        assert!(
            checks.contains("`sh test.sh` passed"),
            "{machine:?}: {checks}"
        );
        let log = w.env.git(&w.worktree, &["log", "--format=%s", "-1"]);
        assert_eq!(log.trim(), "honest work", "{machine:?}");
        // The same walls by hand: git works in them, the token is not there.
        let contained = w.env.bmad(
            &w.worktree,
            &[
                "contain",
                "--",
                "sh",
                "-c",
                "git log -1 --format=%s && git config --get-regexp 'http\\..*'; git remote get-url origin",
            ],
        );
        assert_eq!(contained.code, 0, "{machine:?}: {}", contained.stderr);
        assert!(
            contained.stdout.contains("honest work"),
            "{machine:?}: {}",
            contained.stdout
        );
        assert!(
            !contained.stdout.contains("ghs_jobtoken") && !contained.stdout.contains("eC1hY2Nl"),
            "{machine:?}: {}",
            contained.stdout
        );
        w.names_the_repository_with_its_token(&format!("{machine:?}"));
    }
}

/// A worktree's hook that runs git (a pre-push that reads the log) where the repository's
/// config keeps a token: when git-bmad's push fires it in walls, its git works there and
/// reads no token, on either machine.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn a_hook_git_bmad_fires_runs_git_in_walls_though_the_config_holds_a_token() {
    for machine in [Machine::Bubblewrap, Machine::Refused] {
        let (w, stolen) = with_rewritten_hook(
            machine,
            "pre-push",
            "git log -1 --format=%%s > hook-ran.txt && git config --get-regexp http >> hook-ran.txt; cat $(git rev-parse --git-common-dir)/config >> STOLEN 2>/dev/null; true",
        );
        w.with_token();
        let pushed = w.env.bmad(&w.worktree, &["push"]);
        assert_eq!(
            pushed.code, 0,
            "{machine:?}: {}\n{}",
            pushed.stdout, pushed.stderr
        );
        let ran = read(&w.worktree, "hook-ran.txt");
        assert_eq!(ran, "a better hook\n", "{machine:?}");
        let taken = std::fs::read_to_string(&stolen).unwrap_or_default();
        let _ = std::fs::remove_file(&stolen);
        assert!(!taken.contains("eC1hY2Nl"), "{machine:?}: {taken}");
        w.names_the_repository_with_its_token(&format!("{machine:?}"));
    }
}

/// `git bmad contain` killed while its command runs, where the walls are Landlock alone and
/// the config keeps a token: the worktree still names the command's shadow of the
/// repository (a second command in the same walls came and went meanwhile, and left it to
/// the first); `doctor` names it, and the next command puts the worktree's link back.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn a_contained_command_killed_leaves_a_link_the_next_command_puts_back() {
    let w = Walled::on(
        Machine::Refused,
        "#!/bin/sh\necho '{\"result\":\"done\"}'\n",
        GENERIC,
    );
    w.with_token();
    let git_dir = w.env.git(&w.worktree, &["rev-parse", "--absolute-git-dir"]);
    let link = Path::new(git_dir.trim()).join("commondir");
    let before = std::fs::read_to_string(&link).unwrap();
    let mut first = w
        .env
        .spawn_group(&w.worktree, &["contain", "--", "sleep", "60"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::fs::read_to_string(&link).unwrap() == before {
        assert!(
            std::time::Instant::now() < deadline,
            "the shadow never stood in"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let second = w.env.bmad(
        &w.worktree,
        &["contain", "--", "git", "log", "-1", "--format=%s"],
    );
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(second.stdout, "project\n");
    // Nor does another command take the link from a command still running.
    w.env.bmad(&w.worktree, &["status"]).success();
    assert_ne!(
        std::fs::read_to_string(&link).unwrap(),
        before,
        "the first still runs"
    );
    crate::common::kill_group(&mut first);
    // Plain git, which runs no git-bmad, still reads the shadow.
    let common = w.env.git(&w.worktree, &["rev-parse", "--git-common-dir"]);
    assert!(common.contains("bmad/shadow"), "{common}");
    let found = w.env.bmad(&w.repo, &["doctor", "--json"]);
    assert!(
        found.stdout.contains("naming its shadow"),
        "{}",
        found.stdout
    );
    w.env.bmad(&w.worktree, &["status"]).success();
    assert_eq!(std::fs::read_to_string(&link).unwrap(), before);
    w.names_the_repository_with_its_token("after the kill");
}

/// A process a contained step left behind holds the command shadow's lock whole, to keep
/// git-bmad's next walled command waiting: that command gives up after a while and says why,
/// rather than hang the run or the user.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn a_command_shadow_held_by_a_stray_process_is_refused_not_waited_on_forever() {
    let w = Walled::on(
        Machine::Refused,
        "#!/bin/sh\necho '{\"result\":\"done\"}'\n",
        GENERIC,
    );
    w.with_token();
    // Once, so that the place and its lock exist.
    w.env
        .bmad(&w.worktree, &["contain", "--", "true"])
        .success();
    let git_dir = w.env.git(&w.worktree, &["rev-parse", "--absolute-git-dir"]);
    let name = Path::new(git_dir.trim()).file_name().unwrap().to_owned();
    let lock = w
        .repo
        .join(".git/bmad/shadow")
        .join(name)
        .join("holders.lock");
    assert!(lock.is_file(), "{}", lock.display());
    let held = w.env.root().join("held");
    let mut stray = {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("flock")
            .arg("-x")
            .arg(&lock)
            .args(["sh", "-c", "touch \"$0\"; exec sleep 60"])
            .arg(&held)
            .process_group(0)
            .spawn()
            .unwrap()
    };
    while !held.exists() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let refused = w.env.bmad(&w.worktree, &["contain", "--", "true"]);
    crate::common::kill_group(&mut stray);
    assert_ne!(refused.code, 0, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("held whole by another process"),
        "{}",
        refused.stderr
    );
}

/// What a step leaves running when it ends (a process that left its group with `setsid`,
/// as a daemon does) ends with it, on every machine: with bubblewrap its pid namespace goes,
/// with Landlock alone the walls' keeper ends it; so does a test run's, and a step's that ran
/// out of time. Nothing writes in the worktree after its step was judged.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn nothing_a_step_leaves_running_outlives_it() {
    let daemon = |file: &str, after: u32| {
        format!("setsid sh -c 'sleep {after}; echo late > {file}; sleep 60' >/dev/null 2>&1 </dev/null &\n")
    };
    for machine in [Machine::Bubblewrap, Machine::Refused] {
        let agent = format!(
            "#!/bin/sh\ncase \"$*\" in *'too long'*) {}sleep 30 ;; esac\n{}echo hello > hello.txt\necho '{{\"result\":\"done\"}}'\n",
            daemon("late-timeout.txt", 3),
            daemon("late-step.txt", 1),
        );
        let w = Walled::on(
            machine,
            &agent,
            &format!("{GENERIC}checks:\n  test_command: sh test.sh\n"),
        );
        write(
            &w.worktree,
            "test.sh",
            &format!("{}true\n", daemon("late-test.txt", 1)),
        );
        write(
            &w.worktree,
            ".bmad/playbooks/one.yaml",
            "name: one\nsteps:\n  - id: work\n    command: do the work\n    postconditions: [tests_pass]\n  - id: slow\n    command: take too long\n    timeout: 2s\n",
        );
        let run = w.run();
        let journal = serde_json::to_string(&w.journal()).unwrap();
        assert!(journal.contains("timed out"), "{machine:?}: {journal}");
        std::thread::sleep(std::time::Duration::from_millis(3500));
        for late in ["late-step.txt", "late-test.txt", "late-timeout.txt"] {
            assert!(
                !w.worktree.join(late).exists(),
                "{machine:?}: {late} ({})",
                run.stderr
            );
        }
    }
}

/// A wrapper that names a program kept beside the user's credentials (`~/.config/agent`,
/// next to `~/.config/gh/hosts.yml`) gets no folder of theirs shown: the step is refused up
/// front, its token unread, on either machine.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn a_wrapper_never_opens_a_folder_of_credentials() {
    let honest =
        "#!/bin/sh\ncat ~/.config/gh/hosts.yml > seen.txt 2>&1\necho '{\"result\":\"done\"}'\n";
    let wrapper = "#!/bin/sh\nexec \"$HOME/.config/agent\" \"$@\"\n";
    for machine in [Machine::Bubblewrap, Machine::Refused] {
        let w = Walled::on(machine, wrapper, GENERIC);
        let home = w.env.root().join("home");
        write(&home, ".config/agent", honest);
        w.env.sh(&home, "chmod +x .config/agent").success();
        let run = w.run();
        assert_eq!(run.code, 1, "{machine:?}: {}\n{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains("which the walls hide"),
            "{machine:?}: {}",
            run.stderr
        );
        let seen = std::fs::read_to_string(w.worktree.join("seen.txt")).unwrap_or_default();
        assert!(!seen.contains("gho_"), "{machine:?}: {seen}");
    }
}

/// A program started in the walls holds no `CAP_SYS_PTRACE`, and, started as root, cannot
/// be given it again: with it, root reads every process's environment and memory through
/// `/proc`, which Landlock alone does not hide.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn a_contained_program_holds_no_capability_to_read_other_processes() {
    const SYS_PTRACE: u64 = 1 << 19;
    let env = TestEnv::contained();
    let repo = env.repo("project");
    let root = env.sh(&repo, "id -u").stdout.trim() == "0";
    for layers in ["landlock", "auto"] {
        let run = env.bmad(
            &repo,
            &[
                "contain",
                "--layers",
                layers,
                "--",
                "sh",
                "-c",
                "grep -E '^Cap(Eff|Bnd):' /proc/self/status",
            ],
        );
        assert_eq!(run.code, 0, "{layers}: {}", run.stderr);
        let cap = |name: &str| -> u64 {
            let line = run
                .stdout
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("{layers}: {}", run.stdout));
            u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
        };
        assert_eq!(cap("CapEff:") & SYS_PTRACE, 0, "{layers}: {}", run.stdout);
        if root {
            assert_eq!(cap("CapBnd:") & SYS_PTRACE, 0, "{layers}: {}", run.stdout);
        }
    }
}

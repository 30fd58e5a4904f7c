//! Sessions that travel: two clones of one repository with a shared bare remote, as a build
//! box and a laptop would have them. A run parks at a gate in A, is pushed, synced into B,
//! resumed and answered there, and A catches up; journals appended on both machines merge
//! with no event lost or doubled; a push the remote cannot fast-forward is refused.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{read, write, TestEnv};
use crate::test_supervisor::{journal, named};

/// A playbook whose second step waits for a human.
const GATED: &str = "steps:\n  - {id: build, runner: shell, command: 'mkdir -p out && echo built > out/build.txt'}\n  - {id: ship, runner: shell, command: 'echo shipped > out/ship.txt', autonomy: always_gate}\n";

/// Machine A's repository with the playbook, pushed to a bare remote, and machine B's
/// clone of it.
pub fn two_machines(env: &TestEnv) -> (PathBuf, PathBuf, PathBuf) {
    let a = env.repo("a");
    write(&a, ".bmad/playbooks/gated.yaml", GATED);
    env.git(&a, &["add", "-A"]);
    env.git(&a, &["commit", "-q", "-m", "playbook"]);
    let remote = env.bare_remote(&a);
    env.git(&a, &["push", "-q", "origin", "main"]);
    env.git(&env.root(), &["clone", "-q", remote.to_str().unwrap(), "b"]);
    (a, env.root().join("b"), remote)
}

/// The one documented trust step: each machine's `git bmad trust show` line committed to
/// `.bmad/allowed_signers` on main (in A, pushed), and pulled by the others.
pub fn trust_each_other(env: &TestEnv, a: &Path, others: &[&Path]) {
    let mut lines = String::new();
    for dir in std::iter::once(a).chain(others.iter().copied()) {
        let line = env.bmad(dir, &["trust", "show"]).success().stdout;
        lines.push_str(line.trim());
        lines.push('\n');
    }
    write(a, ".bmad/allowed_signers", &lines);
    env.git(a, &["add", ".bmad/allowed_signers"]);
    env.git(a, &["commit", "-q", "-m", "trust both machines"]);
    env.git(a, &["push", "-q", "origin", "main"]);
    for dir in others {
        env.git(dir, &["pull", "-q", "origin", "main"]);
    }
}

pub fn remote_refs(env: &TestEnv, remote: &Path) -> String {
    env.git(remote, &["for-each-ref", "--format=%(refname)"])
}

pub fn events_of(env: &TestEnv, dir: &Path, session: &str) -> Vec<Value> {
    env.bmad(dir, &["journal", session, "--json"])
        .success()
        .json()
        .as_array()
        .expect("events")
        .clone()
}

/// Each `note` event's `detail.from`, in journal order.
fn notes_from(events: &[Value]) -> Vec<String> {
    named(events, "note")
        .iter()
        .map(|e| e["detail"]["from"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn assert_dense(events: &[Value], what: &str) {
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    let want: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, want, "{what}: seq is not dense");
}

#[test]
fn a_run_parked_in_a_is_pushed_synced_resumed_and_answered_in_b() {
    let env = TestEnv::new();
    let (a, b, remote) = two_machines(&env);
    trust_each_other(&env, &a, &[&b]);
    let (id, wt_a) = env.start(&a, "feat");
    env.bmad(&wt_a, &["run", "gated"]).code(3);
    // An untracked file the run made: it travels in the checkpoint.
    assert_eq!(read(&wt_a, "out/build.txt"), "built\n");

    // Without the remote's consent only the branch goes.
    let push = env.bmad(&wt_a, &["push"]).success();
    assert!(
        push.stderr.contains("bmad.origin.pushSessions"),
        "{}",
        push.stderr
    );
    let refs = remote_refs(&env, &remote);
    assert!(refs.contains("refs/heads/bmad/feat"), "{refs}");
    assert!(!refs.contains("refs/bmad/"), "{refs}");
    assert!(!refs.contains("refs/notes/"), "{refs}");

    env.git(&a, &["config", "bmad.origin.pushSessions", "true"]);
    let pushed = env.bmad(&wt_a, &["push", "--json"]).success().json();
    assert_eq!(pushed["state"], true);
    // Pushed again with nothing new: nothing moves, and it says so.
    let again = env.bmad(&wt_a, &["push", "--json"]).success().json();
    assert_eq!(again["refs"], serde_json::json!([]), "{again:#}");
    assert!(
        again["up_to_date"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("refs/heads/bmad/feat")),
        "{again:#}"
    );
    let refs = remote_refs(&env, &remote);
    for want in [
        format!("refs/bmad/sessions/{id}/checkpoints"),
        format!("refs/notes/bmad/{id}"),
    ] {
        assert!(refs.contains(&want), "{want} missing:\n{refs}");
    }
    // The playbook the run stored went too: B's resume needs it.
    assert!(
        refs.contains(&format!("refs/bmad/sessions/{id}/texts/")),
        "{refs}"
    );

    // B: the session is there, and not here yet.
    let synced = env.bmad(&b, &["sync", "--json"]).success().json();
    assert_eq!(synced[0]["session"], id.as_str());
    assert_eq!(synced[0]["outcome"], "new");
    assert_eq!(synced[0]["name"], "feat");
    let listed = env
        .bmad(&b, &["list", "--remote", "origin", "--json"])
        .success()
        .json();
    assert_eq!(listed[0]["name"], "feat");
    assert_eq!(listed[0]["status"], "gated");
    assert_eq!(listed[0]["here"], false);
    assert_eq!(
        env.bmad(&b, &["list", "--json"]).success().json(),
        serde_json::json!([])
    );

    // Resumed in B: its worktree comes from the pushed branch and checkpoint, and the run
    // stops at the same gate.
    let resumed = env.bmad(&b, &["resume", "feat"]).code(3);
    assert!(resumed.stderr.contains("is here now"), "{}", resumed.stderr);
    // Its new worktree is guarded like any session's: B has no hooks installed.
    assert!(
        resumed
            .stderr
            .contains("the policy hooks are not installed"),
        "{}",
        resumed.stderr
    );
    let wt_b = env.root().join("b.feat");
    assert_eq!(read(&wt_b, "out/build.txt"), "built\n");
    assert!(resumed.stdout.contains("ship"), "{}", resumed.stdout);

    // Answered in B, from B's session worktree: the run finishes there.
    env.bmad(&wt_b, &["answer", "continue", "-m", "from the laptop"])
        .success();
    assert_eq!(read(&wt_b, "out/ship.txt"), "shipped\n");
    let events_b = journal(&env, &wt_b);
    assert_eq!(named(&events_b, "run_completed").len(), 1);
    assert_dense(&events_b, "B");
    env.git(&b, &["config", "bmad.origin.pushSessions", "true"]);
    env.bmad(&wt_b, &["push"]).success();

    // A catches up: B's events are copied in after A's own, each signed by B and trusted.
    let synced = env.bmad(&a, &["sync", "--json"]).success().json();
    assert_eq!(synced[0]["outcome"], "merged", "{synced:#}");
    let events_a = events_of(&env, &a, &id);
    assert_dense(&events_a, "A");
    let completed = named(&events_a, "run_completed");
    assert_eq!(completed.len(), 1, "{events_a:#?}");
    assert_eq!(completed[0]["trusted"], true, "{:#}", completed[0]);
    assert!(completed[0]["signer"].is_string(), "{:#}", completed[0]);
    assert!(events_a.iter().all(|e| e["trusted"] == true));
    let status = env.bmad(&a, &["status", "feat", "--json"]).success().json();
    assert_eq!(status["not_trusted"], serde_json::json!([]), "{status:#}");
    // In A the session now lives on the other machine: nothing here checks or prunes it.
    let listed = env.bmad(&a, &["list", "--json"]).success().json();
    assert_eq!(listed[0]["elsewhere"], true, "{listed:#}");
    assert_eq!(listed[0]["step"], "ship");
    env.bmad(&a, &["prune"]).success();
    assert!(named(&events_of(&env, &a, &id), "worktree_pruned").is_empty());
    env.bmad(&a, &["doctor"]).success();
    env.bmad(&b, &["doctor"]).success();
    let listed = env.bmad(&b, &["list", "--json"]).success().json();
    assert_eq!(listed[0]["elsewhere"], false, "{listed:#}");

    // A runs nothing of it while it lives in B, and takes it back only on purpose.
    let refused = env.bmad(&a, &["answer", "continue", "-s", "feat"]).code(1);
    assert!(
        refused.stderr.contains("lives in another clone"),
        "{}",
        refused.stderr
    );
    // B pushed with no run live there: the lease is released, no `--steal` needed. A's old
    // worktree is still there: git-bmad does not overwrite it.
    let occupied = env.bmad(&a, &["resume", "feat"]).code(1);
    assert!(occupied.stderr.contains("a.feat"), "{}", occupied.stderr);
    // Deleted by hand (git still lists it and holds its branch): git-bmad lets git forget it.
    std::fs::remove_dir_all(&wt_a).unwrap();
    let back = env.bmad(&a, &["resume", "feat"]).success();
    assert!(back.stderr.contains("is back here"), "{}", back.stderr);
    assert_eq!(read(&wt_a, "out/ship.txt"), "shipped\n");
    env.bmad(&wt_a, &["push"]).success();
    env.bmad(&b, &["sync"]).success();
    let listed = env.bmad(&b, &["list", "--json"]).success().json();
    assert_eq!(listed[0]["elsewhere"], true, "{listed:#}");
    env.bmad(&b, &["doctor"]).success();
}

#[test]
fn journals_appended_on_both_machines_merge_once_and_a_diverged_push_is_refused() {
    let env = TestEnv::new();
    let (a, b, _remote) = two_machines(&env);
    trust_each_other(&env, &a, &[&b]);
    env.git(&a, &["config", "bmad.origin.pushSessions", "true"]);
    let (id, wt_a) = env.start(&a, "feat");
    env.bmad(&wt_a, &["push"]).success();
    env.bmad(&b, &["sync"]).success();
    // A pushed it with no run live there: B takes it over at once, moments later.
    env.bmad(&b, &["resume", "feat"]).success();
    let wt_b = env.root().join("b.feat");
    env.git(&b, &["config", "bmad.origin.pushSessions", "true"]);
    env.bmad(&wt_b, &["push"]).success();
    env.bmad(&a, &["sync"]).success();

    // Both machines write to the journal (A from its main worktree: the session's worktree
    // is B's now); A publishes first.
    let note = |dir: &Path, from: &str| {
        let detail = format!("{{\"from\":\"{from}\"}}");
        env.bmad(
            dir,
            &[
                "journal", "append", "note", "-s", "feat", "--detail", &detail,
            ],
        )
        .success();
    };
    note(&a, "a");
    note(&wt_b, "b");
    env.bmad(&a, &["push", "feat"]).success();
    let refused = env.bmad(&wt_b, &["push"]).code(4);
    assert!(
        refused.stderr.contains("git bmad sync"),
        "{}",
        refused.stderr
    );

    // B merges A's event after its own, once; a second sync adds nothing.
    let merges = named(&events_of(&env, &b, &id), "journal_merged").len();
    let synced = env.bmad(&b, &["sync", "--json"]).success().json();
    assert_eq!(synced[0]["outcome"], "merged", "{synced:#}");
    assert_eq!(synced[0]["events_added"], 1);
    let again = env.bmad(&b, &["sync", "--json"]).success().json();
    assert_eq!(again[0]["events_added"], 0, "{again:#}");
    let events_b = events_of(&env, &b, &id);
    assert_eq!(notes_from(&events_b), ["b", "a"]);
    assert_eq!(named(&events_b, "journal_merged").len(), merges + 1);
    let copy = named(&events_b, "note")[1];
    assert!(copy["origin"].is_string(), "{copy:#}");
    assert_eq!(copy["trusted"], true, "{copy:#}");
    assert_dense(&events_b, "B");

    // The merge is a fast-forward for the remote; A copies B's note after its own.
    env.bmad(&wt_b, &["push"]).success();
    let synced = env.bmad(&a, &["sync", "--json"]).success().json();
    assert_eq!(synced[0]["outcome"], "merged", "{synced:#}");
    assert_eq!(synced[0]["events_added"], 1, "{synced:#}");
    let events_a = events_of(&env, &a, &id);
    assert_eq!(notes_from(&events_a), ["a", "b"]);
    assert_dense(&events_a, "A");
    // Every event is one git-bmad wrote: the chain holds through the merge.
    for dir in [&a, &b] {
        let status = env
            .bmad(dir, &["status", "feat", "--json"])
            .success()
            .json();
        assert_eq!(
            status["not_written_by_git_bmad"],
            serde_json::json!([]),
            "{status:#}"
        );
        env.bmad(dir, &["doctor"]).success();
    }
}

#[test]
fn a_squash_merge_keeps_the_session_trailer_and_a_rebase_keeps_the_journal() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.bmad(&repo, &["hooks", "install"]).success();
    let (id, wt) = env.start(&repo, "feat");
    for n in 1..=2 {
        write(&wt, &format!("f{n}.txt"), "x\n");
        env.git(&wt, &["add", "-A"]);
        env.git(&wt, &["commit", "-q", "-m", &format!("change {n}")]);
    }
    let before = journal(&env, &wt).len();
    // main moves on, and the session rebases onto it.
    write(&repo, "other.txt", "main\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "main moves"]);
    env.git(&wt, &["rebase", "-q", "main"]);
    let events = journal(&env, &wt);
    assert!(events.len() >= before, "events were lost by the rebase");
    env.bmad(&wt, &["doctor"]).success();

    env.git(&repo, &["merge", "--squash", "-q", "bmad/feat"]);
    env.git(&repo, &["commit", "-q", "--no-edit"]);
    let message = env.git(
        &repo,
        &[
            "log",
            "-1",
            "--format=%(trailers:key=Bmad-Session,valueonly)",
        ],
    );
    assert_eq!(message.trim(), id, "{message}");
}

/// Session `feat` of A (which pushes sessions) with a run live in it: its step waits
/// (bounded) for a file `go` in the worktree, then writes `out.txt`. Its id, worktree and
/// the run's process.
pub(crate) fn a_live_run(env: &TestEnv, a: &Path) -> (String, PathBuf, std::process::Child) {
    env.git(a, &["config", "bmad.origin.pushSessions", "true"]);
    // A step that waits (bounded) for the test to let it finish.
    write(
        a,
        ".bmad/playbooks/slow.yaml",
        "steps:\n  - {id: wait, runner: shell, command: 'touch started; i=0; while [ ! -f go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo done > out.txt'}\n",
    );
    let (id, wt_a) = env.start(a, "feat");
    let run = env.spawn_group(&wt_a, &["run", "slow"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !wt_a.join("started").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(wt_a.join("started").exists(), "the step never started");
    (id, wt_a, run)
}

#[test]
fn a_push_during_a_live_run_keeps_the_lease_and_one_after_it_hands_the_session_off() {
    let env = TestEnv::new();
    let (a, b, _remote) = two_machines(&env);
    trust_each_other(&env, &a, &[&b]);
    let (_id, wt_a, mut run) = a_live_run(&env, &a);

    // Pushed while the run is live in A: the lease stays, B needs --steal.
    env.bmad(&a, &["push", "feat"]).success();
    env.bmad(&b, &["sync"]).success();
    let held = env.bmad(&b, &["resume", "feat"]).code(1);
    assert!(held.stderr.contains("--steal"), "{}", held.stderr);
    assert!(!env.root().join("b.feat").exists());

    write(&wt_a, "go", "");
    assert!(run.wait().unwrap().success());
    assert_eq!(read(&wt_a, "out.txt"), "done\n");
    // Pushed again with the run over: handed off, B takes it at once.
    env.bmad(&a, &["push", "feat"]).success();
    env.bmad(&b, &["sync"]).success();
    env.bmad(&b, &["resume", "feat"]).success();
    assert_eq!(read(&env.root().join("b.feat"), "out.txt"), "done\n");
}

#[test]
fn init_makes_the_signing_key_and_doctor_says_how_to_trust_a_second_machine() {
    let env = TestEnv::new();
    let (a, b, _remote) = two_machines(&env);
    let init = env.bmad(&a, &["init"]).success();
    let line = env.bmad(&a, &["trust", "show"]).success().stdout;
    assert!(
        init.stderr
            .contains(&format!("signs the journals it pushes as: {}", line.trim())),
        "{}",
        init.stderr
    );
    // Sessions travel, and no other machine is trusted: doctor names the step.
    env.git(&a, &["config", "bmad.origin.pushSessions", "true"]);
    let doctor = env.bmad(&a, &["doctor"]).success().stdout;
    assert!(doctor.contains("trusts no other machine"), "{doctor}");
    assert!(doctor.contains("git bmad trust show"), "{doctor}");
    trust_each_other(&env, &a, &[&b]);
    let doctor = env.bmad(&a, &["doctor"]).success().stdout;
    assert!(!doctor.contains("trusts no other machine"), "{doctor}");
}

#[test]
fn a_project_whose_reviewed_branch_is_not_main_trusts_the_signers_committed_there() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    // Which branches are reviewed is itself reviewed: main's committed config says so.
    write(
        &repo,
        ".bmad/config.yaml",
        "version: 1\npolicy:\n  protected_branches: [trunk]\n",
    );
    env.git(&repo, &["add", ".bmad/config.yaml"]);
    env.git(&repo, &["commit", "-q", "-m", "trunk is reviewed"]);
    env.git(&repo, &["checkout", "-q", "-b", "trunk"]);
    write(&repo, ".bmad/allowed_signers", "laptop@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIL5+ignHEahwm7h7Zi2iaXEZIfEkjPRjsmngjIuHIM4+\n");
    env.git(&repo, &["add", ".bmad/allowed_signers"]);
    env.git(&repo, &["commit", "-q", "-m", "trust the laptop"]);
    // A branch nobody protects holds no authority, whatever it commits.
    env.git(&repo, &["checkout", "-q", "-b", "feature"]);
    write(&repo, ".bmad/allowed_signers", "evil@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINVQt2HdKH1A0FlMyjH4s8BVUMVzSAcrwpox9OUAtJCQ\n");
    env.git(&repo, &["commit", "-q", "-am", "trust me"]);
    let listed = env
        .bmad(&repo, &["trust", "list", "--json"])
        .success()
        .json();
    assert_eq!(
        listed["sources"],
        serde_json::json!(["trunk:.bmad/allowed_signers"]),
        "{listed:#}"
    );
    assert!(
        !listed["text"].as_str().unwrap().contains("evil@"),
        "{listed:#}"
    );
}

/// What a story's close-out commits is the session's newest state: taken up on another
/// machine, its worktree is its branch, nothing staged or left over.
#[test]
fn a_story_closed_out_here_is_resumed_elsewhere_as_its_branch_holds_it() {
    let env = TestEnv::new();
    let a = crate::test_epic::epic_project(&env);
    env.git(&a, &["push", "-q", "origin", "main"]);
    let remote = env.root().join("remote.git");
    env.git(&env.root(), &["clone", "-q", remote.to_str().unwrap(), "b"]);
    let b = env.root().join("b");
    trust_each_other(&env, &a, &[&b]);
    env.bmad(&a, &["epic", "run", "3", "--stories", "3-1"])
        .success();
    let wt_a = env.root().join("proj.3-1-api-client");
    env.git(&a, &["config", "bmad.origin.pushSessions", "true"]);
    env.bmad(&wt_a, &["push"]).success();

    env.bmad(&b, &["sync"]).success();
    let resumed = env.bmad(&b, &["resume", "3-1-api-client"]);
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    let wt_b = env.root().join("b.3-1-api-client");
    assert!(read(&wt_b, "src/api/3-1-api-client.rs").contains("// 3-1-api-client"));
    assert_eq!(env.git(&wt_b, &["status", "--porcelain"]), "");
    assert_eq!(
        env.git(&wt_b, &["rev-parse", "HEAD"]),
        env.git(&wt_a, &["rev-parse", "HEAD"])
    );
}

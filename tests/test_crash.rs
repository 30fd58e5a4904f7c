//! kill -9 at any moment of `checkpoint` or `rollback` leaves consistent refs.

use std::time::{Duration, Instant};

use crate::common::{age_an_hour, kill_group, read, wait_for_repacks, write, TestEnv};

#[test]
fn kill_dash_nine_during_checkpoints_and_rollbacks_leaves_a_consistent_repository() {
    const KILLS: u64 = 60;
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "crashy");
    for i in 0..50 {
        write(&wt, &format!("files/f{i}.txt"), &format!("{i}\n"));
    }
    // Kill times are spread over each command's own measured run time, so the kills land
    // mid-run on a fast machine and a slow one alike.
    let timed = |args: &[&str]| {
        (0..3)
            .map(|_| {
                let started = Instant::now();
                env.bmad(&wt, args).success();
                started.elapsed()
            })
            .min()
            .expect("three runs")
    };
    let checkpoint_takes = timed(&["checkpoint", "-m", "timed"]);
    let rollback_takes = timed(&["rollback", "1"]);
    let mut killed_mid_run = 0;
    for round in 0..KILLS {
        write(
            &wt,
            &format!("files/f{}.txt", round % 50),
            &format!("round {round}\n"),
        );
        write(&wt, &format!("new/{round}.txt"), "new\n");
        let (args, takes): (Vec<String>, Duration) = if round % 4 == 3 {
            (vec!["rollback".into(), "1".into()], rollback_takes)
        } else {
            let label = format!("round {round}");
            (
                vec!["checkpoint".into(), "-m".into(), label],
                checkpoint_takes,
            )
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = env.spawn_group(&wt, &args);
        // From right at the start to a little past the usual end.
        std::thread::sleep(takes.mul_f64(((round * 37) % 60) as f64 / 50.0));
        if child.try_wait().expect("try_wait").is_none() {
            killed_mid_run += 1;
        }
        kill_group(&mut child);
        // A rollback killed half-way is finished with the fix doctor names; a git it ran,
        // killed with it, may also have left the worktree's index.lock, which doctor names
        // too. `doctor --fix` applies both, and leaves nothing to fix.
        let doctor = env.bmad(&repo, &["doctor", "--json"]).json();
        let findings = doctor["findings"].to_string();
        if findings.contains("rollback --continue") {
            if findings.contains("index.lock") {
                env.bmad(&repo, &["doctor", "--fix"]).success();
            } else {
                env.bmad(&wt, &["rollback", "--continue"]).success();
            }
            let after = env.bmad(&repo, &["doctor", "--json"]).json();
            assert!(
                !after["findings"]
                    .to_string()
                    .contains("rollback --continue"),
                "{after}"
            );
        }
    }
    assert!(
        killed_mid_run >= KILLS / 2,
        "only {killed_mid_run} of {KILLS} kills landed mid-run; the test is not testing"
    );

    wait_for_repacks(&repo);
    let fsck = env
        .git_command(&repo)
        .args(["fsck", "--no-progress"])
        .output()
        .unwrap();
    let fsck_err = String::from_utf8_lossy(&fsck.stderr);
    assert!(fsck.status.success(), "git fsck failed: {fsck_err}");
    assert!(
        !fsck_err.contains("error") && !fsck_err.contains("missing"),
        "{fsck_err}"
    );
    let doctor = env.bmad(&repo, &["doctor", "--json"]).success().json();
    assert_eq!(doctor["problems"], 0, "{doctor}");

    // The chain is intact and the session still works: resume taking checkpoints.
    env.bmad(&wt, &["checkpoint", "-m", "after the storm"])
        .success();
    let chain = format!("refs/bmad/sessions/{id}/checkpoints");
    let count = env.git(&repo, &["rev-list", "--first-parent", "--count", &chain]);
    let status = env.bmad(&wt, &["status", "--json"]).success().json();
    let listed = status["checkpoints"].as_array().unwrap().len();
    // rev-list also counts the base commit under the first checkpoint.
    assert_eq!(count.trim().parse::<usize>().unwrap(), listed + 1);
    env.bmad(&repo, &["doctor"]).success();
}

/// A ref lock held by a live writer is contention (retry); one left by a dead process is
/// cleared, so a `kill -9` in the middle of a ref update cannot block the session forever.
#[test]
fn ref_locks_are_contention_until_stale() {
    use git_bmad::git::{CasOutcome, Repo};
    let env = TestEnv::new();
    let repo_dir = env.repo("proj");
    let repo = Repo::discover(&repo_dir).unwrap();
    let head = repo.head_id().unwrap().unwrap();
    let name = "refs/bmad/test/locked";
    let lock = repo.lock_path(name);
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();

    std::fs::write(&lock, "").unwrap();
    assert_eq!(
        repo.cas_ref(name, None, head, "test").unwrap(),
        CasOutcome::Conflict
    );
    assert!(
        lock.exists(),
        "a fresh lock belongs to a live writer and stays"
    );

    age_an_hour(&lock);
    assert_eq!(
        repo.cas_ref(name, None, head, "test").unwrap(),
        CasOutcome::Updated
    );
    assert!(!lock.exists());
    assert_eq!(repo.read_ref(name).unwrap(), Some(head));
}

/// `start` killed inside `git worktree add`, at each stage git leaves behind: listed and
/// locked `initializing`, not yet listed at all (no `gitdir` file), or with `commondir`
/// created but not written. `doctor --fix` removes the session (restorably) and git's
/// half-made worktree either way, with no step of the user's, and the name can be started
/// again.
#[test]
fn a_start_killed_inside_git_worktree_add_is_removed_by_doctors_fix() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let admin = repo.join(".git/worktrees/proj.half");
    // Files gone, and which file is there but still empty (killed while writing it). An
    // empty `commondir` makes every `git worktree` command fail.
    for (gone, empty) in [
        (&["HEAD"][..], None),
        (&["HEAD", "commondir", "gitdir"][..], None),
        (&["HEAD", "commondir"][..], Some("gitdir")),
        (&["HEAD"][..], Some("commondir")),
    ] {
        let (id, wt) = env.start(&repo, "half");
        // What git had written when the kill came: the lock and the `.git` file first.
        env.git(
            &repo,
            &["update-ref", "-d", &format!("refs/notes/bmad/{id}")],
        );
        for file in gone {
            std::fs::remove_file(admin.join(file)).unwrap();
        }
        std::fs::write(admin.join("locked"), "initializing\n").unwrap();
        if let Some(file) = empty {
            std::fs::write(admin.join(file), "").unwrap();
        }
        let what = format!("without {gone:?}, empty: {empty:?}");

        let doctor = env.bmad(&repo, &["doctor", "--json"]).json();
        assert_eq!(doctor["problems"], 1, "{what}: {doctor:#}");
        // One `doctor --fix`, no command of the user's: the session held nothing of anyone's.
        let fixed = env
            .bmad(&repo, &["doctor", "--fix", "--json"])
            .success()
            .json();
        assert_eq!(fixed["repairs"][0]["done"], true, "{what}: {fixed:#}");
        assert!(
            !wt.exists(),
            "{what}: the half-made worktree is still there"
        );
        assert!(!admin.exists(), "{what}: git still keeps the worktree");
        fsck_is_clean(&env, &repo, &what);
        env.start(&repo, "half");
        env.bmad(&repo, &["remove", "--force", "half"]).success();
    }
}

/// A `git worktree add` killed with no session to own its worktree (git lists it locked
/// `initializing`, its HEAD pointing at nothing, which `git fsck` reports): doctor names it,
/// and `doctor --fix` removes it once no git works in the repository.
#[test]
fn a_half_made_worktree_no_session_owns_is_removed_by_doctors_fix() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let path = env.root().join("proj.orphan");
    env.git(
        &repo,
        &["worktree", "add", "-q", "--detach", &path.to_string_lossy()],
    );
    let admin = repo.join(".git/worktrees/proj.orphan");
    std::fs::remove_file(admin.join("HEAD")).unwrap();
    std::fs::write(admin.join("locked"), "initializing\n").unwrap();

    let doctor = env.bmad(&repo, &["doctor", "--json"]).json();
    let found = doctor["findings"].to_string();
    assert!(
        found.contains("left") && found.contains("half made"),
        "{doctor:#}"
    );
    env.bmad(&repo, &["doctor", "--fix"]).success();
    assert!(!path.exists() && !admin.exists());
    fsck_is_clean(&env, &repo, "a half-made worktree removed");
    env.bmad(&repo, &["doctor"]).success();
}

/// A worktree git still marks as being added (`git worktree add` killed), in which the
/// session nonetheless went on (a checkpoint began its journal), goes with one `remove
/// --force`, as doctor's fix says; a lock a person set is not forced through.
#[test]
fn a_forced_remove_takes_a_worktree_git_still_marks_as_being_added() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "half");
    write(&wt, "a.txt", "work\n");
    env.bmad(&wt, &["checkpoint", "-m", "work"]).success();
    let locked = repo.join(".git/worktrees/proj.half/locked");
    std::fs::write(&locked, "initializing\n").unwrap();
    env.bmad(&repo, &["remove", "--force", "half"]).success();
    assert!(!wt.exists(), "the worktree is still there");
    env.bmad(&repo, &["restore", "half"]).success();
    assert_eq!(read(&wt, "a.txt"), "work\n");

    env.git(
        &repo,
        &[
            "worktree",
            "lock",
            "--reason",
            "on a USB disk",
            &wt.to_string_lossy(),
        ],
    );
    let refused = env.bmad(&repo, &["remove", "--force", "half"]);
    assert_ne!(refused.code, 0, "a person's lock was forced through");
    assert!(wt.exists());
}

/// Whether a command said it removed `lock` as a killed git's leftover.
pub(crate) fn said_cleared(stderr: &str, lock: &std::path::Path) -> bool {
    stderr.contains(&format!(
        "removed {}, left by a git process that was killed",
        lock.display()
    ))
}

/// A git killed while it created a session's branch leaves the branch's lock (and perhaps
/// `packed-refs.lock`): the next `start` of that name clears them and says so, and `doctor`
/// names a lock under any ref and `--fix` removes it.
#[test]
fn git_locks_a_killed_start_left_are_cleared_by_the_next_start_and_by_doctor() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let branch_lock = repo.join(".git/refs/heads/bmad/half.lock");
    let packed_lock = repo.join(".git/packed-refs.lock");
    std::fs::create_dir_all(branch_lock.parent().unwrap()).unwrap();
    for lock in [&branch_lock, &packed_lock] {
        std::fs::write(lock, "").unwrap();
    }
    let started = env.bmad(&repo, &["start", "half"]).success();
    for lock in [&branch_lock, &packed_lock] {
        assert!(!lock.exists(), "{} is still there", lock.display());
        assert!(said_cleared(&started.stderr, lock), "{}", started.stderr);
    }

    // A rollback or undo killed inside git leaves the worktree's index locked: the next one
    // clears it, saying so, and does its work.
    let wt = env.root().join("proj.half");
    write(&wt, "a.txt", "a\n");
    env.bmad(&wt, &["checkpoint", "-m", "a"]).success();
    let index_lock = std::path::PathBuf::from(
        env.git(&wt, &["rev-parse", "--git-path", "index.lock"])
            .trim(),
    );
    let index_lock = if index_lock.is_absolute() {
        index_lock
    } else {
        wt.join(index_lock)
    };
    for args in [&["rollback", "1"][..], &["undo"]] {
        std::fs::write(&index_lock, "").unwrap();
        let run = env.bmad(&wt, args).success();
        assert!(!index_lock.exists(), "{args:?}");
        assert!(
            run.stderr.contains("left by a git process that was killed"),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert_eq!(read(&wt, "a.txt"), "a\n", "undo brought the work back");

    // A remove killed inside git leaves the same: the next remove clears them too.
    std::fs::write(&index_lock, "").unwrap();
    std::fs::write(&branch_lock, "").unwrap();
    let removed = env.bmad(&repo, &["remove", "--force", "half"]).success();
    for lock in [&index_lock, &branch_lock] {
        assert!(said_cleared(&removed.stderr, lock), "{}", removed.stderr);
    }
    assert!(!wt.exists());
    env.bmad(&repo, &["restore", "half"]).success();
    assert_eq!(read(&wt, "a.txt"), "a\n", "restored whole");

    // A lock under any ref, one that no operation of ours would clear by itself.
    let tag_lock = repo.join(".git/refs/tags/v1.lock");
    std::fs::create_dir_all(tag_lock.parent().unwrap()).unwrap();
    std::fs::write(&tag_lock, "").unwrap();
    let doctor = env.bmad(&repo, &["doctor", "--json"]).code(1).json();
    let named = doctor["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["message"].as_str().unwrap().contains("refs/tags/v1.lock"));
    assert!(named, "{doctor:#}");
    recover(&env, &repo, "a tag's lock");
    assert!(!tag_lock.exists());
    env.git(&repo, &["tag", "v1"]);
}

/// `remove` killed while `git worktree remove` was deleting files, after the `.git` file
/// went: finishing the removal takes no snapshot of the half-deleted files, and the session
/// comes back whole.
#[test]
fn a_remove_killed_inside_git_worktree_remove_is_finished_and_restores_whole() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "going");
    write(&wt, "work.md", "the work\n");
    write(&wt, "more/notes.md", "notes\n");
    write(
        &wt,
        "deploy.env",
        "STRIPE=sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ\n",
    );
    // Fault injection: this `git worktree remove` dies as a kill would leave it.
    let git = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    env.executable(
        "git",
        &format!(
            "#!/bin/sh\ncase \"$*\" in *'worktree remove'*) [ -e \"$HOME/done\" ] || kill=1 ;; esac\nif [ -n \"$kill\" ]; then\n  for last; do :; done\n  touch \"$HOME/done\"; rm -f \"$last/.git\" \"$last/work.md\"; kill -9 $$\nfi\nexec {} \"$@\"\n",
            git.trim()
        ),
    );
    let killed = env.bmad(&repo, &["remove", "--force", "going"]);
    assert_ne!(killed.code, 0, "{}", killed.stderr);
    assert!(!wt.join("work.md").exists() && wt.join("more/notes.md").exists());

    recover(&env, &repo, "after the killed remove");
    assert!(!wt.exists(), "the removal was not finished");
    // The secret left out of the keep is still named once the removal is finished.
    let removed = env
        .bmad(&repo, &["list", "--removed", "--json"])
        .success()
        .json();
    assert_eq!(
        removed[0]["left_out"],
        serde_json::json!(["deploy.env"]),
        "{removed:#}"
    );
    env.bmad(&repo, &["restore", &id]).success();
    assert_eq!(read(&wt, "work.md"), "the work\n");
    assert_eq!(read(&wt, "more/notes.md"), "notes\n");
    env.bmad(&repo, &["doctor"]).success();
}

/// The commands a kill can interrupt, one per round in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Killed {
    Start,
    Checkpoint,
    Rollback,
    Undo,
    JournalAppend,
    Finish,
    Remove,
    Run,
    Answer,
}

const EVERY_COMMAND: [Killed; 9] = [
    Killed::Start,
    Killed::Checkpoint,
    Killed::Rollback,
    Killed::Undo,
    Killed::JournalAppend,
    Killed::Finish,
    Killed::Remove,
    Killed::Run,
    Killed::Answer,
];

/// The recovery a user (or a script) is told to do: `doctor --fix`, then each fix still
/// printed, run as printed: one command, no prose. Afterwards doctor must accept the state.
pub(crate) fn recover(env: &TestEnv, repo: &std::path::Path, what: &str) {
    // Exit 1 while problems that need a choice remain; the report must still be whole.
    let fixed = env.bmad(repo, &["doctor", "--fix", "--json"]).json();
    for repair in fixed["repairs"].as_array().unwrap() {
        assert_eq!(repair["done"], true, "{what}: {repair}");
    }
    let doctor = env.bmad(repo, &["doctor", "--json"]).json();
    for finding in doctor["findings"].as_array().unwrap() {
        if finding["severity"] != "problem" {
            continue;
        }
        let fix = finding["fix"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: a problem with no fix: {finding}"));
        let command = fix;
        assert!(
            command.starts_with("git ") && !command.contains(" (") && !command.contains(", or "),
            "{what}: fix is not one command: {fix}"
        );
        for alternative in finding["alternatives"].as_array().into_iter().flatten() {
            let alternative = alternative.as_str().unwrap();
            assert!(
                alternative.starts_with("git ") && !alternative.contains(" ("),
                "{what}: an alternative is not one command: {alternative}"
            );
        }
        // `git bmad` is this build: put it on PATH, as an installed one would be.
        let bin = std::path::Path::new(env!("CARGO_BIN_EXE_git-bmad"))
            .parent()
            .unwrap();
        let run = env.sh(
            repo,
            &format!("PATH='{}':\"$PATH\" {}", bin.display(), command.trim()),
        );
        assert_eq!(
            run.code, 0,
            "{what}: fix {command:?} failed: {}",
            run.stderr
        );
    }
    let doctor = env.bmad(repo, &["doctor", "--json"]).json();
    assert_eq!(doctor["problems"], 0, "{what}: after the fixes: {doctor:#}");
}

fn fsck_is_clean(env: &TestEnv, repo: &std::path::Path, what: &str) {
    wait_for_repacks(repo);
    let fsck = env
        .git_command(repo)
        .args(["fsck", "--no-progress", "--no-dangling"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&fsck.stderr);
    assert!(
        fsck.status.success() && !err.contains("error") && !err.contains("missing"),
        "{what}: git fsck: {err}"
    );
}

/// Every command git-bmad has that writes state, killed (its whole process group) at every
/// instant of its run: after each kill, `doctor --fix` and the fixes doctor prints leave a
/// state doctor accepts, git fsck is clean, every acknowledged checkpoint is still
/// reachable, the user's own worktree is untouched, and the next command works.
#[test]
fn every_command_killed_at_any_instant_leaves_a_state_doctor_accepts_and_work_goes_on() {
    const ROUNDS: usize = 9 * 24;
    // Contained, as by default: a kill also lands while a step's fence is set up or settled.
    let env = TestEnv::contained();
    let repo = env.repo("proj");
    env.executable("claude", crate::test_supervisor::FAKE_CLAUDE);
    write(
        &repo,
        ".bmad/playbooks/loop.yaml",
        "name: loop\nsteps:\n  - {id: s1, command: do s1}\n  - {id: g1, command: do g1, autonomy: always_gate}\n  - {id: s2, command: do s2}\n",
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "playbook"]);
    let main_head = env.git(&repo, &["rev-parse", "HEAD"]);
    let (_, s) = env.start(&repo, "steady");
    for i in 0..40 {
        write(&s, &format!("files/f{i}.txt"), &format!("{i}\n"));
    }
    env.bmad(&s, &["checkpoint", "-m", "files"]).success();
    write(&s, "files/f0.txt", "changed\n");
    env.bmad(&s, &["rollback", "1"]).success();

    // How long each command takes, so the kills land across its whole run.
    let timed = |dir: &std::path::Path, args: &[&str]| {
        let started = Instant::now();
        let run = env.bmad(dir, args);
        assert!(run.code == 0 || run.code == 3, "{args:?}: {}", run.stderr);
        started.elapsed()
    };
    let mut takes = std::collections::HashMap::new();
    takes.insert(Killed::Start, timed(&repo, &["start", "timing"]));
    let timing = env.root().join("proj.timing");
    takes.insert(Killed::Run, timed(&timing, &["run", "loop"]));
    takes.insert(Killed::Answer, timed(&timing, &["answer", "continue"]));
    takes.insert(Killed::Finish, timed(&timing, &["finish"]));
    takes.insert(
        Killed::Remove,
        timed(&repo, &["remove", "timing", "--force"]),
    );
    takes.insert(
        Killed::Checkpoint,
        timed(&s, &["checkpoint", "-m", "timed"]),
    );
    takes.insert(Killed::Rollback, timed(&s, &["rollback", "2"]));
    takes.insert(Killed::Undo, timed(&s, &["undo"]));
    takes.insert(
        Killed::JournalAppend,
        timed(&s, &["journal", "append", "note", "--detail", "{\"n\":0}"]),
    );
    env.bmad(&repo, &["gc", "--all"]).success();

    let mut acknowledged: Vec<String> = Vec::new();
    let mut mid_run = 0;
    for round in 0..ROUNDS {
        crate::common::shout_on_panic(|| {
            let killed = EVERY_COMMAND[round % EVERY_COMMAND.len()];
            let what = format!("round {round}, {killed:?}");
            let name = format!("k{round}");
            // Set up what the command works on (not killed), then the command itself.
            let (dir, args): (std::path::PathBuf, Vec<String>) = match killed {
                Killed::Start => (repo.clone(), vec!["start".into(), name.clone()]),
                Killed::Checkpoint | Killed::Rollback | Killed::Undo | Killed::JournalAppend => {
                    write(
                        &s,
                        &format!("files/f{}.txt", round % 40),
                        &format!("round {round}\n"),
                    );
                    write(&s, &format!("new/{round}.txt"), "new\n");
                    let args = match killed {
                        Killed::Checkpoint => vec!["checkpoint".into(), "-m".into(), what.clone()],
                        Killed::Rollback => vec!["rollback".into(), "2".into()],
                        Killed::Undo => vec!["undo".into()],
                        _ => vec![
                            "journal".into(),
                            "append".into(),
                            "note".into(),
                            "--detail".into(),
                            format!("{{\"round\":{round},\"text\":\"€€€\"}}"),
                        ],
                    };
                    (s.clone(), args)
                }
                Killed::Finish | Killed::Remove | Killed::Run => {
                    let (_, wt) = env.start(&repo, &name);
                    write(&wt, "work.md", &format!("work of {name}\n"));
                    let args = match killed {
                        Killed::Finish => vec!["finish".into()],
                        Killed::Remove => vec!["remove".into(), "--force".into(), name.clone()],
                        _ => vec!["run".into(), "loop".into()],
                    };
                    (
                        if killed == Killed::Remove {
                            repo.clone()
                        } else {
                            wt
                        },
                        args,
                    )
                }
                // The session the run round before left at its gate.
                Killed::Answer => (
                    env.root().join(format!("proj.k{}", round - 1)),
                    vec!["answer".into(), "continue".into()],
                ),
            };
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut child = env.spawn_group(&dir, &args);
            let fraction = ((round * 37) % 60) as f64 / 50.0;
            std::thread::sleep(takes[&killed].mul_f64(fraction));
            if child.try_wait().expect("try_wait").is_none() {
                mid_run += 1;
            }
            kill_group(&mut child);

            recover(&env, &repo, &what);
            fsck_is_clean(&env, &repo, &what);
            let all = env.git(&repo, &["rev-list", "--all"]);
            for ack in &acknowledged {
                assert!(
                    all.contains(ack.as_str()),
                    "{what}: acknowledged checkpoint {ack} lost"
                );
            }
            assert_eq!(
                env.git(&repo, &["status", "--porcelain"]),
                "",
                "{what}: main worktree"
            );
            assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), main_head, "{what}");

            // The next command works.
            let listed = |name: &str| {
                env.bmad(&repo, &["list", "--json"])
                    .success()
                    .json()
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|s| s["name"] == name)
            };
            match killed {
                Killed::Start => {
                    if listed(&name) {
                        env.bmad(&repo, &["remove", "--force", &name]).success();
                    }
                }
                Killed::Checkpoint | Killed::Rollback | Killed::Undo | Killed::JournalAppend => {
                    let cp = env
                        .bmad(&s, &["checkpoint", "-m", "next", "--json"])
                        .success()
                        .json();
                    acknowledged.push(cp["checkpoint"]["id"].as_str().unwrap().to_owned());
                }
                Killed::Finish => {
                    env.bmad(&dir, &["finish"]).success();
                    env.bmad(&repo, &["remove", "--force", &name]).success();
                }
                Killed::Remove => {
                    if listed(&name) {
                        env.bmad(&repo, &["remove", "--force", &name]).success();
                    }
                    // Nothing was lost: the work comes back with the session.
                    env.bmad(&repo, &["restore", &name]).success();
                    let wt = env.root().join(format!("proj.{name}"));
                    assert_eq!(read(&wt, "work.md"), format!("work of {name}\n"), "{what}");
                    env.bmad(&repo, &["remove", "--force", &name]).success();
                }
                Killed::Run => {
                    let status = env.bmad(&dir, &["status", "--json"]).success().json();
                    let next = if status["run"].is_null() {
                        "run"
                    } else {
                        "resume"
                    };
                    let args: &[&str] = if next == "run" {
                        &["run", "loop"]
                    } else {
                        &["resume"]
                    };
                    let run = env.bmad(&dir, args);
                    assert!(
                        run.code == 3 || run.code == 0,
                        "{what}: {next} exited {}: {}",
                        run.code,
                        run.stderr
                    );
                }
                Killed::Answer => {
                    let run = env.bmad(&dir, &["resume"]);
                    assert!(
                        run.code == 0 || run.code == 3,
                        "{what}: resume exited {}: {}",
                        run.code,
                        run.stderr
                    );
                    env.bmad(&repo, &["remove", "--force", &format!("k{}", round - 1)])
                        .success();
                }
            }
            env.bmad(&repo, &["gc", "--all"]).success();
        });
    }
    assert!(
        mid_run >= ROUNDS / 2,
        "only {mid_run} of {ROUNDS} kills landed mid-run; the test is not testing"
    );
    env.bmad(&repo, &["doctor"]).success();
}

//! kill -9 at any moment of `checkpoint` or `rollback` leaves consistent refs.

use std::time::{Duration, Instant};

use crate::common::{kill_group, write, TestEnv};

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
        // A rollback killed half-way is finished with the fix doctor names.
        let doctor = env.bmad(&repo, &["doctor", "--json"]).json();
        if doctor["findings"]
            .to_string()
            .contains("rollback --continue")
        {
            env.bmad(&wt, &["rollback", "--continue"]).success();
        }
    }
    assert!(
        killed_mid_run >= KILLS / 2,
        "only {killed_mid_run} of {KILLS} kills landed mid-run; the test is not testing"
    );

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

    let aged = std::process::Command::new("touch")
        .args(["-d", "1 hour ago"])
        .arg(&lock)
        .status();
    assert!(aged.unwrap().success(), "touch -d failed");
    assert_eq!(
        repo.cas_ref(name, None, head, "test").unwrap(),
        CasOutcome::Updated
    );
    assert!(!lock.exists());
    assert_eq!(repo.read_ref(name).unwrap(), Some(head));
}

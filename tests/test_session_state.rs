//! A checkpoint is the whole session state, and rollback and undo restore all of it: files,
//! index and branch; ignored files are never touched; an interrupted rollback is finished or
//! undone exactly.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{age_an_hour, kill_group, read, write, TestEnv};

/// Everything a rollback must restore, compared as text: the worktree's tree as `add -A`
/// records it, the index with its stages, HEAD and the branch.
#[derive(Debug, PartialEq, Eq)]
struct SessionState {
    files: String,
    index: String,
    head: String,
}

fn state_of(env: &TestEnv, wt: &Path) -> SessionState {
    SessionState {
        files: env.worktree_tree(wt),
        index: env.git(wt, &["ls-files", "--stage"]),
        head: env.git(wt, &["rev-parse", "HEAD", "bmad/work"]),
    }
}

#[test]
fn renames_modes_symlinks_and_staged_work_round_trip_through_rollback_and_undo() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, "a.md", "a\n");
    write(&repo, "copy-me.md", "copy\n");
    write(&repo, "gone.md", "deleted then added\n");
    write(&repo, "run.sh", "#!/bin/sh\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "files"]);
    let (id, wt) = env.start(&repo, "work");

    // The state at the checkpoint: a staged rename, a copy, a delete+add, a mode change, a
    // symlink, something staged and then changed again.
    env.git(&wt, &["mv", "a.md", "b.md"]);
    std::fs::copy(wt.join("copy-me.md"), wt.join("copied.md")).unwrap();
    env.git(&wt, &["rm", "-q", "gone.md"]);
    write(&wt, "gone.md", "added back, untracked\n");
    std::fs::set_permissions(wt.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    symlink("b.md", wt.join("link")).unwrap();
    write(&wt, "staged.md", "staged\n");
    env.git(&wt, &["add", "staged.md", "copied.md", "link"]);
    write(&wt, "staged.md", "staged, then changed\n");
    env.bmad(&wt, &["checkpoint", "-m", "mixed"]).success();
    let at_checkpoint = state_of(&env, &wt);
    let number = env.last_checkpoint(&wt);
    let chain = format!("refs/bmad/sessions/{id}/checkpoints");
    let stored = env.git(&repo, &["ls-tree", "-r", "--name-only", &chain]);
    assert!(
        stored.lines().any(|l| l == "b.md") && !stored.lines().any(|l| l == "a.md"),
        "the rename's source is not in the snapshot: {stored}"
    );

    // After it: commits, staged and unstaged changes, the rename's source brought back.
    env.git(&wt, &["add", "-A"]);
    env.git(&wt, &["commit", "-q", "-m", "after the checkpoint"]);
    write(&wt, "a.md", "resurrected?\n");
    write(&wt, "later.md", "later\n");
    env.git(&wt, &["add", "later.md"]);
    let before_rollback = state_of(&env, &wt);

    env.bmad(&wt, &["rollback", &number]).success();
    assert_eq!(
        state_of(&env, &wt),
        at_checkpoint,
        "files, index and branch restored"
    );
    assert!(
        !wt.join("a.md").exists(),
        "a renamed file does not come back"
    );
    assert!(!wt.join("later.md").exists());
    // A plain commit now commits what was staged at the checkpoint, nothing rolled back.
    assert_eq!(
        env.git(&wt, &["diff", "--cached", "--name-only"]),
        "b.md\ncopied.md\ngone.md\nlink\nstaged.md\n"
    );

    env.bmad(&wt, &["undo"]).success();
    assert_eq!(
        state_of(&env, &wt),
        before_rollback,
        "undo restores all of it"
    );
    env.bmad(&wt, &["undo"]).success();
    assert_eq!(state_of(&env, &wt), at_checkpoint, "undo again redoes");
    env.bmad(&repo, &["doctor"]).success();
    // The commit the rollback took off the branch lives only in a safety checkpoint now:
    // removing the session would lose it.
    let refused = env.bmad(&repo, &["remove", &id]).code(1);
    assert!(
        refused.stderr.contains("1 commit(s) that no branch has"),
        "{}",
        refused.stderr
    );
}

#[test]
fn conflict_stages_are_part_of_a_checkpoint() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "work");
    write(&wt, "README.md", "ours\n");
    env.git(&wt, &["commit", "-qam", "ours"]);
    env.git(&repo, &["checkout", "-q", "-b", "theirs"]);
    write(&repo, "README.md", "theirs\n");
    env.git(&repo, &["commit", "-qam", "theirs"]);
    env.git(&repo, &["checkout", "-q", "main"]);
    let merge = env
        .git_command(&wt)
        .args(["merge", "-q", "theirs"])
        .output()
        .unwrap();
    assert!(!merge.status.success(), "the merge conflicts");
    env.bmad(&wt, &["checkpoint", "-m", "mid-merge"]).success();
    let conflicted = env.git(&wt, &["ls-files", "--stage"]);
    assert!(conflicted.contains(" 3\tREADME.md"), "{conflicted}");
    let number = env.last_checkpoint(&wt);

    write(&wt, "README.md", "resolved\n");
    env.git(&wt, &["add", "README.md"]);
    env.bmad(&wt, &["rollback", &number]).success();
    assert_eq!(env.git(&wt, &["ls-files", "--stage"]), conflicted);
    assert!(read(&wt, "README.md").contains("<<<<<<<"));
}

#[test]
fn a_branch_with_pushed_commits_stays_and_files_only_leaves_the_branch() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.bare_remote(&repo);
    let (_, wt) = env.start(&repo, "work");
    let number = env.last_checkpoint(&wt);
    write(&wt, "pushed.md", "pushed\n");
    env.git(&wt, &["add", "pushed.md"]);
    env.git(&wt, &["commit", "-q", "-m", "pushed"]);
    env.git(&wt, &["push", "-q", "origin", "bmad/work"]);
    let tip = env.git(&wt, &["rev-parse", "HEAD"]);

    let run = env
        .bmad(&wt, &["rollback", &number, "--json"])
        .success()
        .json();
    assert_eq!(run["event"]["detail"]["branch"]["outcome"], "left_pushed");
    assert_eq!(
        env.git(&wt, &["rev-parse", "HEAD"]),
        tip,
        "pushed work stays"
    );
    assert!(!wt.join("pushed.md").exists(), "the files are restored");
    let said = env.bmad(&wt, &["undo"]).success();
    assert!(read(&wt, "pushed.md") == "pushed\n", "{}", said.stderr);

    // --files-only: the branch and index stay even when nothing was pushed.
    write(&wt, "local.md", "local\n");
    env.git(&wt, &["add", "local.md"]);
    env.git(&wt, &["commit", "-q", "-m", "local"]);
    let tip = env.git(&wt, &["rev-parse", "HEAD"]);
    let run = env
        .bmad(&wt, &["rollback", &number, "--files-only"])
        .success();
    assert!(run.stderr.contains("Files only"), "{}", run.stderr);
    assert_eq!(env.git(&wt, &["rev-parse", "HEAD"]), tip);
    assert!(!wt.join("local.md").exists());
}

#[test]
fn ignored_files_survive_a_rollback_whatever_happened_to_gitignore() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, ".gitignore", ".env\nbuild/\n");
    env.git(&repo, &["commit", "-qam", "ignore .env and build/"]);
    let (_, wt) = env.start(&repo, "work");
    write(&wt, ".env", "API_TOKEN=local-only\n");
    write(&wt, "build/out.o", "object\n");
    let number = env.last_checkpoint(&wt);
    // The agent deletes .gitignore: .env and build/ become visible.
    std::fs::remove_file(wt.join(".gitignore")).unwrap();
    write(&wt, "work.md", "work\n");

    let dry = env.bmad(&wt, &["rollback", "--dry-run", &number]).success();
    assert!(dry.stdout.contains("keep    .env"), "{}", dry.stdout);
    env.bmad(&wt, &["rollback", &number]).success();
    assert_eq!(read(&wt, ".env"), "API_TOKEN=local-only\n");
    assert_eq!(read(&wt, "build/out.o"), "object\n");
    assert!(wt.join(".gitignore").exists() && !wt.join("work.md").exists());
    // The .env never entered the object database.
    let all = env.git(&repo, &["rev-list", "--all", "--objects"]);
    assert!(!all.contains(".env"), "{all}");

    // The other way: the agent ignores a file the checkpoint has; the rollback leaves the
    // file on disk alone instead of failing or overwriting it.
    write(&wt, "notes.md", "checkpointed\n");
    env.bmad(&wt, &["checkpoint", "-m", "notes"]).success();
    let notes = env.last_checkpoint(&wt);
    std::fs::remove_file(wt.join("notes.md")).unwrap();
    env.bmad(&wt, &["checkpoint", "-m", "no notes"]).success();
    write(&wt, ".gitignore", ".env\nbuild/\nnotes.md\n");
    write(&wt, "notes.md", "private now\n");
    env.bmad(&wt, &["rollback", &notes]).success();
    assert_eq!(read(&wt, "notes.md"), "private now\n");
}

#[test]
fn a_killed_rollback_is_finished_or_undone_exactly() {
    const KILLS: u32 = 24;
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "work");
    for i in 0..400 {
        write(&wt, &format!("old/{i}.txt"), &format!("old {i}\n"));
    }
    env.bmad(&wt, &["checkpoint", "-m", "old"]).success();
    let target = env.last_checkpoint(&wt);
    let target_state = state_of(&env, &wt);
    // Timed on the same work as each round's (400 files back, 400 away): a rollback to where
    // the worktree already is takes a fraction of that, and kills timed by it land too soon.
    let timed = {
        std::fs::remove_dir_all(wt.join("old")).unwrap();
        for i in 0..400 {
            write(&wt, &format!("new/{i}.txt"), "timing\n");
        }
        let started = Instant::now();
        env.bmad(&wt, &["rollback", &target]).success();
        let took = started.elapsed();
        std::fs::remove_dir_all(wt.join("new")).ok();
        took
    };
    let mut interrupted = 0;
    for round in 0..KILLS {
        // A different state each round: the old files gone, new ones written.
        std::fs::remove_dir_all(wt.join("old")).ok();
        for i in 0..400 {
            write(&wt, &format!("new/{i}.txt"), &format!("round {round}\n"));
        }
        let before = state_of(&env, &wt);
        let mut child = env.spawn_group(&wt, &["rollback", &target]);
        std::thread::sleep(timed.mul_f64(f64::from(round % 12) / 10.0));
        kill_group(&mut child);

        let doctor = env.bmad(&repo, &["doctor", "--json"]).json();
        let findings = doctor["findings"].to_string();
        if findings.contains("was interrupted") {
            interrupted += 1;
            assert!(findings.contains("rollback --continue"), "{findings}");
            // Alternate the two ways out; each must be exact.
            if round % 2 == 0 {
                env.bmad(&wt, &["rollback", "--continue"]).success();
                assert_eq!(state_of(&env, &wt), target_state, "round {round}");
            } else {
                env.bmad(&wt, &["undo"]).success();
                assert_eq!(state_of(&env, &wt), before, "round {round}");
                env.bmad(&wt, &["rollback", &target]).success();
            }
        } else {
            assert_eq!(doctor["problems"], 0, "round {round}: {doctor}");
            // Either it never started, or it finished: the state is one of the two.
            let now = state_of(&env, &wt);
            assert!(
                now == before || now == target_state,
                "round {round}: torn state"
            );
            env.bmad(&wt, &["rollback", &target]).success();
        }
        assert_eq!(state_of(&env, &wt), target_state);
        std::fs::remove_dir_all(wt.join("new")).ok();
    }
    assert!(
        interrupted > 0,
        "no kill landed inside a rollback; the test is not testing"
    );
    env.bmad(&repo, &["doctor"]).success();
}

/// An undo killed at any instant, then finished (`rollback --continue`), gives back the bytes
/// that were on disk (CRLF under `text=auto`, LF where `eol=crlf` writes CRLF) and leaves no
/// scratch behind.
#[test]
fn a_killed_undo_still_gives_back_every_byte() {
    const KILLS: u32 = 12;
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(
        &repo,
        ".gitattributes",
        "*.txt text=auto\n*.crlf eol=crlf\n",
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "attributes"]);
    let (_, wt) = env.start(&repo, "work");
    // Half saved with CRLF where git stores LF, half with LF where git writes CRLF.
    let file = |i: u32| match i % 2 {
        0 => (
            format!("crlf/{i}.txt"),
            format!("edited {i}\r\nby the user\r\n"),
        ),
        _ => (
            format!("crlf/{i}.crlf"),
            format!("edited {i}\nby the user\n"),
        ),
    };
    let timed = {
        for i in 0..300 {
            let (path, bytes) = file(i);
            write(&wt, &path, &bytes);
        }
        env.bmad(&wt, &["rollback", "1"]).success();
        let started = Instant::now();
        env.bmad(&wt, &["undo"]).success();
        started.elapsed()
    };
    let mut interrupted = 0;
    for round in 0..KILLS {
        env.bmad(&wt, &["rollback", "1"]).success();
        let mut child = env.spawn_group(&wt, &["undo"]);
        std::thread::sleep(timed.mul_f64(f64::from(round) / f64::from(KILLS)));
        kill_group(&mut child);
        let doctor = env.bmad(&repo, &["doctor", "--json"]).json();
        if doctor["findings"].to_string().contains("was interrupted") {
            interrupted += 1;
            env.bmad(&wt, &["rollback", "--continue"]).success();
        } else if std::fs::read(wt.join("crlf/0.txt")).is_err() {
            // Killed before it began: undo again.
            env.bmad(&wt, &["undo"]).success();
        }
        for i in 0..300 {
            let (path, bytes) = file(i);
            let on_disk = std::fs::read(wt.join(&path)).unwrap();
            assert_eq!(on_disk, bytes.as_bytes(), "round {round}, {path}");
        }
    }
    assert!(
        interrupted > 0,
        "no kill landed inside an undo; the test is not testing"
    );
    let git_dir = env.git(&wt, &["rev-parse", "--absolute-git-dir"]);
    let left: Vec<_> = std::fs::read_dir(git_dir.trim())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("bmad-scratch-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    env.bmad(&repo, &["doctor"]).success();
}

#[test]
fn a_packed_refs_lock_is_named_while_a_git_may_hold_it_and_cleared_by_start_once_none_does() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "work");
    let lock = repo.join(".git/packed-refs.lock");
    std::fs::write(&lock, "").unwrap();
    age_an_hour(&lock);
    // A git working in the repository (waiting on its input) may be the lock's owner: the
    // lock is named with what to do, never removed, and nothing waits forever.
    let mut live = env
        .git_command(&repo)
        .args(["hash-object", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    for args in [&["start", "other"][..], &["checkpoint", "-m", "x"]] {
        let dir = if args[0] == "start" { &repo } else { &wt };
        let started = Instant::now();
        let run = env.bmad(dir, args).code(1);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{args:?} waited"
        );
        assert!(
            run.stderr.contains("packed-refs.lock") && run.stderr.contains("rm '"),
            "{}",
            run.stderr
        );
    }
    assert!(lock.exists(), "a lock a live git may hold was removed");
    let doctor = env.bmad(&repo, &["doctor"]).code(1);
    assert!(
        doctor.stdout.contains("packed-refs.lock"),
        "{}",
        doctor.stdout
    );
    drop(live.stdin.take());
    live.wait().unwrap();

    // With no git running, the lock is a killed one's: the next start clears it, saying so.
    let run = env.bmad(&repo, &["start", "other"]).success();
    assert!(!lock.exists());
    assert!(
        crate::test_crash::said_cleared(&run.stderr, &lock),
        "{}",
        run.stderr
    );
    env.bmad(&wt, &["checkpoint", "-m", "x"]).success();
    env.bmad(&repo, &["doctor"]).success();
}

#[test]
fn an_untouched_session_is_removed_without_force() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "work");
    env.bmad(&wt, &["checkpoint", "-m", "nothing changed"])
        .success();
    env.bmad(
        &wt,
        &[
            "journal",
            "append",
            "note",
            "--detail",
            "{\"text\":\"€€€€€€\"}",
        ],
    )
    .success();
    assert_eq!(env.git(&wt, &["status", "--porcelain"]), "");
    env.bmad(&repo, &["remove", &id]).success();
    // Only the keep is left, until `git bmad gc` (see test_removed).
    assert_eq!(env.bmad_refs(&repo), format!("refs/bmad/removed/{id}\n"));
}

#[test]
fn a_sparse_checkout_rolls_back_and_commits_the_journal_like_any_other() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, "src/a.rs", "a\n");
    write(&repo, "docs/guide.md", "outside the cone\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "two dirs"]);
    env.bmad(&repo, &["hooks", "install"]).success();
    let (_, wt) = env.start(&repo, "work");
    env.git(&wt, &["sparse-checkout", "set", "src"]);
    assert!(!wt.join("docs/guide.md").exists());
    let first = env.last_checkpoint(&wt);

    // The agent writes inside the cone and outside it (where the journal lives too).
    write(&wt, "src/a.rs", "changed\n");
    write(&wt, "docs/new.md", "an agent's file outside the cone\n");
    env.bmad(&wt, &["checkpoint", "-m", "work"]).success();
    let at_checkpoint = state_of(&env, &wt);
    env.bmad(&wt, &["rollback", &first]).success();
    assert_eq!(read(&wt, "src/a.rs"), "a\n");
    assert!(!wt.join("docs/new.md").exists());
    env.bmad(&wt, &["undo"]).success();
    assert_eq!(state_of(&env, &wt), at_checkpoint);
    assert_eq!(
        read(&wt, "docs/new.md"),
        "an agent's file outside the cone\n"
    );
    assert!(
        !wt.join("docs/guide.md").exists(),
        "the cone is still respected"
    );

    // A commit carries the journal, and leaves the worktree clean.
    env.git(&wt, &["add", "--sparse", "-A"]);
    env.git(&wt, &["commit", "-q", "-m", "work"]);
    let committed = env.git(&wt, &["show", "--name-only", "--format=", "HEAD"]);
    assert!(committed.contains("journal.md"), "{committed}");
    assert_eq!(env.git(&wt, &["status", "--porcelain"]), "");
    env.bmad(&repo, &["doctor"]).success();
}

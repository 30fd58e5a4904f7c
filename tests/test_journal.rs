//! The journal: dense, lossless under concurrency, readable with plain git.

use std::collections::BTreeSet;

use crate::common::{write, TestEnv, BIN};

#[test]
fn concurrent_appenders_lose_nothing() {
    const WRITERS: usize = 8;
    const EVENTS: usize = 200;
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "busy");
    let script = format!(
        "for i in $(seq 1 {EVENTS}); do \"{BIN}\" journal append note --detail \"{{\\\"w\\\":$W,\\\"i\\\":$i}}\" -q || exit 1; done"
    );
    let children: Vec<_> = (0..WRITERS)
        .map(|w| env.spawn_sh(&wt, &script, &[("W", &w.to_string())]))
        .collect();
    for mut child in children {
        assert!(child.wait().expect("wait").success(), "a writer failed");
    }

    let journal = env.bmad(&wt, &["journal", "--json"]).success().json();
    let events = journal.as_array().unwrap();
    let notes: Vec<_> = events.iter().filter(|e| e["event"] == "note").collect();
    assert_eq!(notes.len(), WRITERS * EVENTS, "events lost");
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    let expected: Vec<u64> = (1..=events.len() as u64).collect();
    assert_eq!(seqs, expected, "seq is dense and strictly increasing");
    let pairs: BTreeSet<(u64, u64)> = notes
        .iter()
        .map(|e| {
            (
                e["detail"]["w"].as_u64().unwrap(),
                e["detail"]["i"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(pairs.len(), WRITERS * EVENTS, "every event exactly once");
    env.bmad(&repo, &["doctor"]).success();
}

/// A checkpoint writes its journal note with its snapshot, before the chain moves; an event
/// journaled in between by another process comes first, and neither is lost.
#[test]
fn checkpoints_and_appenders_at_once_lose_nothing() {
    const EVENTS: usize = 150;
    const CHECKPOINTS: usize = 25;
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "busy");
    let before = env.bmad(&wt, &["journal", "--json"]).success().json();
    let checkpoints_before = before
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "checkpoint")
        .count();
    let appender = format!(
        "for i in $(seq 1 {EVENTS}); do \"{BIN}\" journal append note --detail \"{{\\\"i\\\":$i}}\" -q || exit 1; done"
    );
    let checkpointer = format!(
        "for i in $(seq 1 {CHECKPOINTS}); do for f in 1 2 3 4 5 6 7 8 9; do echo $i > f$f-$i.txt; done; \"{BIN}\" checkpoint -m \"c$i\" -q || exit 1; done"
    );
    let children: Vec<_> = [appender, checkpointer]
        .iter()
        .map(|script| env.spawn_sh(&wt, script, &[]))
        .collect();
    for mut child in children {
        assert!(child.wait().expect("wait").success(), "a writer failed");
    }
    let journal = env.bmad(&wt, &["journal", "--json"]).success().json();
    let events = journal.as_array().unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    let expected: Vec<u64> = (1..=events.len() as u64).collect();
    assert_eq!(seqs, expected, "seq is dense and strictly increasing");
    let notes = events.iter().filter(|e| e["event"] == "note").count();
    assert_eq!(notes, EVENTS, "notes lost");
    let taken: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "checkpoint")
        .skip(checkpoints_before)
        .map(|e| e["detail"]["commit"].as_str().unwrap())
        .collect();
    assert_eq!(taken.len(), CHECKPOINTS, "one event per checkpoint");
    // Each journaled checkpoint is on the chain.
    let status = env.bmad(&wt, &["status", "--json"]).success().json();
    let chain: Vec<&str> = status["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["checkpoint"]["id"].as_str().unwrap())
        .collect();
    for commit in &taken {
        assert!(chain.contains(commit), "{commit} is not on the chain");
    }
    env.bmad(&repo, &["doctor"]).success();
}

#[test]
fn plain_git_log_shows_the_journal() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "visible");
    env.bmad(&wt, &["checkpoint", "-m", "after plan"]).success();
    let chain = format!("refs/bmad/sessions/{id}/checkpoints");
    let log = env.git(&repo, &["log", "--notes=bmad/*", &chain]);
    assert!(log.contains("\"event\":\"session_started\""), "{log}");
    assert!(log.contains("\"label\":\"after plan\""), "{log}");
    // start set notes.displayRef, so even a bare `git log` shows it.
    let log = env.git(&repo, &["log", "-1", &chain]);
    assert!(log.contains("Notes (bmad/"), "{log}");
    assert!(log.contains("\"event\":\"checkpoint\""), "{log}");
}

#[test]
fn journal_formats_and_append_validation() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "fmt");
    env.bmad(
        &wt,
        &[
            "journal",
            "append",
            "review_note",
            "--step",
            "plan",
            "--decision",
            "human",
            "--response",
            "looks good | ship it",
            "--duration-ms",
            "1500",
        ],
    )
    .success();
    let md = env
        .bmad(&wt, &["journal", "--format", "md"])
        .success()
        .stdout;
    assert!(md.contains("| 3 |"), "{md}");
    assert!(
        md.contains("looks good \\| ship it"),
        "pipes are escaped: {md}"
    );
    assert!(md.contains("1.5 s"), "{md}");
    // Events leave the worktree clean; the session's next commit carries journal.md, with
    // every event up to it, and leaves it clean again.
    assert_eq!(env.git(&wt, &["status", "--porcelain"]), "");
    env.bmad(&repo, &["hooks", "install"]).success();
    write(&wt, "work.txt", "work\n");
    env.git(&wt, &["add", "work.txt"]);
    env.git(&wt, &["commit", "-q", "-m", "work"]);
    let committed = env.git(
        &wt,
        &["show", &format!("HEAD:.bmad/sessions/{id}/journal.md")],
    );
    assert_eq!(
        committed.trim_end(),
        md.trim_end(),
        "journal.md is in the commit"
    );
    assert_eq!(env.git(&wt, &["status", "--porcelain"]), "");
    // A commit with nothing staged still has nothing to commit.
    let empty = env
        .git_command(&wt)
        .args(["commit", "-m", "nothing"])
        .output()
        .unwrap();
    assert!(
        !empty.status.success(),
        "an empty commit is not filled with the journal"
    );
    // So does `git commit -a`, through the index git builds for it.
    write(&wt, "work.txt", "more work\n");
    env.bmad(&wt, &["checkpoint", "-m", "more"]).success();
    env.git(&wt, &["commit", "-qam", "more work"]);
    let committed = env.git(
        &wt,
        &["show", &format!("HEAD:.bmad/sessions/{id}/journal.md")],
    );
    assert!(committed.contains(" more |"), "{committed}");
    assert_eq!(env.git(&wt, &["status", "--porcelain"]), "");
    let text = env.bmad(&wt, &["journal"]).success().stdout;
    assert!(text.contains("review_note"), "{text}");
    env.bmad(&wt, &["journal", "append", "x", "--detail", "{not json"])
        .code(2);
    // git-bmad's own kinds are written by git-bmad only: an agent cannot forge a "done".
    for kind in [
        "step_completed",
        "gate_answered",
        "run_completed",
        "rollback",
        "checkpoint",
    ] {
        let refused = env
            .bmad(&wt, &["journal", "append", kind, "--step", "plan"])
            .code(4);
        assert!(
            refused.stderr.contains("own event kinds"),
            "{kind}: {}",
            refused.stderr
        );
    }
    let journal = env.bmad(&wt, &["journal", "--json"]).success().json();
    assert!(
        journal
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["event"] != "step_completed"),
        "{journal}"
    );
    env.bmad(&wt, &["journal", "append", "two words"]).code(2);
    env.bmad(&wt, &["journal", "--format", "yaml"]).code(2);
}

#[test]
fn what_scripts_and_labels_hand_over_is_stored_redacted() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "leaky");
    // Built at run time so this file holds no token the scanner would flag.
    let token = format!("ghp_{}", "Zq4Lm9Vt3Kw8Xr2Pn7Bd5Hs1Jf6Gc0Ya8Eu4");
    let url = format!("https://bot:{token}@github.com/org/repo.git");
    env.bmad(&wt, &["checkpoint", "-m", &format!("pushed to {url}")])
        .success();
    let detail = format!("{{\"cmd\": \"git push {url}\", \"{token}\": [\"{token}\"]}}");
    env.bmad(
        &wt,
        &[
            "journal",
            "append",
            "note",
            "--detail",
            &detail,
            "--response",
            &token,
            "--trigger",
            &token,
        ],
    )
    .success();
    // Nothing reachable from any ref, nor any reflog, holds it.
    let everything = env.git(
        &repo,
        &[
            "log",
            "--all",
            "--reflog",
            "-p",
            "--format=%H%n%B",
            "--notes=*",
        ],
    );
    let notes = env.git(
        &repo,
        &["log", "-p", "--format=%B", "--glob=refs/notes/bmad/*"],
    );
    assert!(everything.contains("[REDACTED:"), "{everything}");
    let leaks: Vec<&str> = everything.lines().filter(|l| l.contains(&token)).collect();
    assert!(leaks.is_empty(), "the token reached a commit: {leaks:?}");
    assert!(!notes.contains(&token), "the token reached a note");
    let shown = env.bmad(&wt, &["journal", "--json"]).success().stdout;
    assert!(
        !shown.contains(&token) && shown.contains("[REDACTED:github-pat]"),
        "{shown}"
    );
}

/// A line in the journal that is not an event (a hand-edited note, a torn write from another
/// tool) never bricks the session: it is shown as malformed, every command goes on, and
/// `doctor` names it.
#[test]
fn a_malformed_event_is_shown_and_named_but_never_bricks_the_session() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "m");
    let chain = format!("refs/bmad/sessions/{id}/checkpoints");
    let notes = format!("refs/notes/bmad/{id}");
    env.git(
        &repo,
        &[
            "notes",
            "--ref",
            &notes,
            "append",
            "-m",
            "{\"seq\": 99, \"event\": trunc",
            &chain,
        ],
    );
    let shown = env.bmad(&wt, &["journal"]).success();
    assert!(
        shown
            .stderr
            .contains("skipped a journal line that is not an event"),
        "{}{}",
        shown.stdout,
        shown.stderr
    );
    write(&wt, "work.md", "work\n");
    env.bmad(&wt, &["checkpoint", "-m", "after"]).success();
    env.bmad(&wt, &["status"]).success();
    env.bmad(&wt, &["rollback", "1"]).success();
    env.bmad(&wt, &["undo"]).success();
    let doctor = env.bmad(&repo, &["doctor"]).code(1);
    assert!(
        doctor.stdout.contains("journal line is not an event") && doctor.stdout.contains("line 4"),
        "{}",
        doctor.stdout
    );
    // With the command that shows who wrote it.
    assert!(
        doctor.stdout.contains("git reflog show refs/notes/bmad/"),
        "{}",
        doctor.stdout
    );
}

/// The journal and checkpoints are git-bmad's record only as git-bmad wrote them: a ref moved
/// by anything else (a file written under `.git`, a plain `git update-ref`) is found by
/// `status` and `doctor`, and nothing runs on it until the record is put back.
#[test]
fn a_journal_ref_moved_outside_git_bmad_is_found_and_nothing_runs_on_it() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(
        &repo,
        ".bmad/playbooks/one.yaml",
        "steps:\n  - {id: a, runner: shell, command: 'touch ran'}\n",
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "a playbook"]);
    let (id, wt) = env.start(&repo, "w");
    write(&wt, "work.txt", "work\n");
    env.bmad(&wt, &["checkpoint", "-m", "work"]).success();
    let notes = format!("refs/notes/bmad/{id}");
    let checkpoints = format!("refs/bmad/sessions/{id}/checkpoints");

    let first = env.git(&repo, &["rev-list", "--reverse", &notes]);
    let first = first.lines().next().unwrap().to_owned();
    let now = env.git(&repo, &["rev-parse", &notes]).trim().to_owned();
    let cp_now = env
        .git(&repo, &["rev-parse", &checkpoints])
        .trim()
        .to_owned();
    let cp_before = env
        .git(&repo, &["rev-parse", &format!("{cp_now}~1")])
        .trim()
        .to_owned();
    let tamper = || {
        // An older journal, written straight into the ref's file (no reflog entry)...
        std::fs::create_dir_all(repo.join(".git/refs/notes/bmad")).unwrap();
        std::fs::write(repo.join(format!(".git/{notes}")), format!("{first}\n")).unwrap();
        // ...and the checkpoints moved back by a plain git command.
        env.git(&repo, &["update-ref", &checkpoints, &cp_before]);
    };
    tamper();

    let status = env.bmad(&wt, &["status", "--json"]).success().json();
    let moved = status["moved_outside_git_bmad"].as_array().unwrap();
    assert_eq!(moved.len(), 2, "{status:#}");
    let text = env.bmad(&wt, &["status"]).success().stdout;
    for said in [
        format!(
            "{notes} was moved outside git-bmad (with no reflog entry: a file written under .git)"
        ),
        format!("{checkpoints} was moved outside git-bmad (by a git command that left no message)"),
    ] {
        assert!(text.contains(&said), "{said}\n{text}");
    }

    // doctor names each with the command that puts git-bmad's record back; run as printed,
    // the record is whole again.
    let doctor = env.bmad(&repo, &["doctor", "--json"]).code(1).json();
    let mut fixes: Vec<String> = doctor["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["message"]
                .as_str()
                .unwrap()
                .contains("moved outside git-bmad")
        })
        .map(|f| f["fix"].as_str().unwrap().to_owned())
        .collect();
    fixes.sort();
    let mut expected = vec![
        format!("git update-ref {notes} {now} {first}"),
        format!("git update-ref {checkpoints} {cp_now} {cp_before}"),
    ];
    expected.sort();
    assert_eq!(fixes, expected, "{doctor:#}");
    for fix in &fixes {
        env.sh(&repo, fix).success();
    }
    env.bmad(&repo, &["doctor"]).success();

    // Moved again, the run parks before its step, each move journaled with the command
    // that undoes it; answered, it goes on.
    tamper();
    let run = env.bmad(&wt, &["run", "one"]).code(3);
    assert!(
        run.stdout
            .contains("Something other than git-bmad moved 2 ref(s) of this session's record"),
        "{}",
        run.stdout
    );
    assert!(
        !wt.join("ran").exists(),
        "a step ran on a record git-bmad did not write"
    );
    let events = env.bmad(&wt, &["journal", "--json"]).success().json();
    let moved: Vec<&serde_json::Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "policy_violation" && e["detail"]["rule"] == "record-moved")
        .collect();
    assert_eq!(moved.len(), 2, "{events:#}");
    assert!(
        moved.iter().any(|e| e["detail"]["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("git update-ref {notes} {now} {first}"))),
        "{moved:#?}"
    );
    env.bmad(&wt, &["answer", "continue"]).success();
    assert!(wt.join("ran").exists());
}

//! A shared remote is an adversary: a teammate with push access, using nothing but plain git,
//! tries to run commands on, answer gates for, erase evidence from and re-point the sessions of
//! a machine that syncs and resumes from it. Machine A pushes honestly (its key is an allowed
//! signer); machine B is the victim; E is the attacker's clone.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::common::{read, write, TestEnv};
use crate::test_supervisor::named;
use crate::test_sync::{events_of, trust_each_other, two_machines};

/// The attacker's clone of the remote: plain git, no hooks.
pub(crate) fn attacker(env: &TestEnv, remote: &Path) -> PathBuf {
    env.git(
        &env.root(),
        &["clone", "-q", remote.to_str().unwrap(), "evil"],
    );
    env.root().join("evil")
}

fn chain_link(prev: &str, line: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(prev.as_bytes());
    hash.update(b"\n");
    hash.update(line.as_bytes());
    format!("{:x}", hash.finalize())
}

/// Fetch session `id`'s journal and checkpoints from the remote into the attacker's clone
/// (`refs/notes/evil`, `refs/evil-cp`); the newest checkpoint, whose note new lines go on.
fn fetch_session(env: &TestEnv, evil: &Path, id: &str) -> String {
    env.git(
        evil,
        &[
            "fetch",
            "-q",
            "origin",
            &format!("+refs/notes/bmad/{id}:refs/notes/evil"),
            &format!("+refs/bmad/sessions/{id}/checkpoints:refs/evil-cp"),
        ],
    );
    env.git(evil, &["rev-parse", "refs/evil-cp"])
        .trim()
        .to_owned()
}

/// Make `note` the note of checkpoint `head` and push the notes to session `id`'s journal
/// on the remote, as a fast-forward.
fn push_note(env: &TestEnv, evil: &Path, id: &str, head: &str, note: &str) {
    write(evil, "note.txt", note);
    env.git(
        evil,
        &["notes", "--ref=evil", "add", "-f", "-F", "note.txt", head],
    );
    env.git(
        evil,
        &[
            "push",
            "-q",
            "origin",
            &format!("refs/notes/evil:refs/notes/bmad/{id}"),
        ],
    );
}

/// Append `events` (kind, step, decision, detail) to session `id`'s journal on the remote,
/// chained to its real tip exactly as git-bmad would chain them.
pub(crate) fn forge_events(
    env: &TestEnv,
    evil: &Path,
    id: &str,
    events: &[(&str, Option<&str>, &str, Value)],
) {
    let head = fetch_session(env, evil, id);
    let mut note = env.git(evil, &["notes", "--ref=evil", "show", &head]);
    // Where the chain stands: git-bmad's notes commit says; after a forgery of our own, the
    // newest line does.
    let message = env.git(evil, &["log", "-1", "--format=%B", "refs/notes/evil"]);
    let trailer = |key: &str| {
        message
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("{key}: ")))
            .next_back()
            .map(|v| v.trim().to_owned())
    };
    let (mut seq, mut chain) = match (trailer("Bmad-Seq"), trailer("Bmad-Chain")) {
        (Some(seq), Some(chain)) => (seq.parse::<u64>().unwrap(), chain),
        _ => {
            let last = note.lines().rfind(|l| !l.trim().is_empty()).unwrap();
            let v: Value = serde_json::from_str(last).unwrap();
            (
                v["seq"].as_u64().unwrap(),
                chain_link(v["prev"].as_str().unwrap(), last),
            )
        }
    };
    for (kind, step, decision, detail) in events {
        seq += 1;
        let mut event =
            json!({"seq": seq, "ts": "2026-11-27T12:00:00Z", "session": id, "event": kind});
        if let Some(step) = step {
            event["step"] = json!(step);
        }
        event["decision"] = json!(decision);
        event["detail"] = detail.clone();
        event["prev"] = json!(chain);
        let line = serde_json::to_string(&event).unwrap();
        chain = chain_link(&chain, &line);
        note.push_str(&line);
        note.push('\n');
    }
    push_note(env, evil, id, &head, &note);
}

/// A forged `run_started` of playbook `gated` whose text is the blob `blob`.
fn forge_run(env: &TestEnv, evil: &Path, id: &str, blob: &str) {
    let detail = json!({"playbook": "gated", "origin": "x", "blob": blob, "args": [], "steps": []});
    forge_events(env, evil, id, &[("run_started", None, "human", detail)]);
}

/// Checkpoint trailers for session `id` named `name` on `branch` (`extra`: more lines).
pub(crate) fn trailers(id: &str, name: &str, branch: &str, worktree: &Path, extra: &str) -> String {
    format!(
        "Bmad-Session: {id}\nBmad-Seq: 1\nBmad-Status: running\nBmad-Step: -\nBmad-Name: {name}\n\
         Bmad-Branch: {branch}\nBmad-Worktree: {}\nBmad-Base: main\nBmad-Number: 9\n{extra}",
        worktree.display()
    )
}

/// A checkpoint commit on top of the remote's chain of `id` (or a new chain), with these
/// trailers, pushed as a fast-forward.
pub(crate) fn forge_checkpoint(env: &TestEnv, evil: &Path, id: &str, trailers: &str, new: bool) {
    let parent = if new {
        env.git(evil, &["rev-parse", "HEAD"]).trim().to_owned()
    } else {
        fetch_session(env, evil, id)
    };
    let tree = env
        .git(evil, &["rev-parse", "HEAD^{tree}"])
        .trim()
        .to_owned();
    let commit = env
        .git(
            evil,
            &[
                "commit-tree",
                &tree,
                "-p",
                &parent,
                "-m",
                &format!("forged\n\n{trailers}"),
            ],
        )
        .trim()
        .to_owned();
    env.git(
        evil,
        &[
            "push",
            "-q",
            "origin",
            &format!("{commit}:refs/bmad/sessions/{id}/checkpoints"),
        ],
    );
}

/// A, trusted, parks a gated run on session `feat` and pushes it with its journal.
pub(crate) fn a_parks_and_pushes(env: &TestEnv, a: &Path) -> (String, PathBuf) {
    env.git(a, &["config", "bmad.origin.pushSessions", "true"]);
    let (id, wt_a) = env.start(a, "feat");
    env.bmad(&wt_a, &["run", "gated"]).code(3);
    env.bmad(&wt_a, &["push"]).success();
    (id, wt_a)
}

#[test]
fn a_forged_run_and_playbook_never_run_on_the_machine_that_syncs_and_resumes() {
    let env = TestEnv::new();
    let (a, b, remote) = two_machines(&env);
    trust_each_other(&env, &a, &[&b]);
    let marker = env.root().join("pwned");
    // A starts the session and pushes it, signed; no run yet.
    env.git(&a, &["config", "bmad.origin.pushSessions", "true"]);
    let (id, wt_a) = env.start(&a, "feat");
    env.bmad(&wt_a, &["push"]).success();
    // A new run, with the attacker's playbook stored under the session's texts.
    let evil = attacker(&env, &remote);
    let playbook = format!(
        "steps:\n  - {{id: pwn, runner: shell, command: 'touch {}'}}\n",
        marker.display()
    );
    write(&evil, "evil.yaml", &playbook);
    let blob = env
        .git(&evil, &["hash-object", "-w", "evil.yaml"])
        .trim()
        .to_owned();
    env.git(
        &evil,
        &[
            "push",
            "-q",
            "origin",
            &format!("{blob}:refs/bmad/sessions/{id}/texts/{blob}"),
        ],
    );
    forge_run(&env, &evil, &id, &blob);

    env.bmad(&b, &["sync"]).success();
    let refused = env.bmad(&b, &["resume", "feat"]).code(4);
    assert!(refused.stderr.contains("not trusted"), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("allowed_signers"),
        "{}",
        refused.stderr
    );
    assert!(!marker.exists(), "the attacker's command ran");
    // The forged event is shown, marked, and never replayed.
    let events = events_of(&env, &b, &id);
    let runs = named(&events, "run_started");
    assert_eq!(runs.len(), 1, "{events:#?}");
    assert_eq!(runs[0]["trusted"], false);
    // Nobody signed it, so nobody is named: not A, whose journal it extends.
    assert_eq!(runs[0]["from"], "origin, unsigned", "{:#}", runs[0]);
    assert_eq!(named(&events, "session_started")[0]["trusted"], true);
    let text = env.bmad(&b, &["journal", "feat"]).success().stdout;
    assert!(text.contains("not trusted"), "{text}");
    let doctor = env.bmad(&b, &["doctor"]).success().stdout;
    assert!(doctor.contains("trust show"), "{doctor}");
    // What it would run, against the reviewed playbook of that name on main.
    assert!(
        refused
            .stderr
            .contains("differs from the reviewed one (main:.bmad/playbooks/gated.yaml)"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("+  - {id: pwn"),
        "{}",
        refused.stderr
    );

    // A forged run of the reviewed text itself: still not run, and the way to run it as one's
    // own is named.
    let reviewed = env
        .git(&evil, &["rev-parse", "HEAD:.bmad/playbooks/gated.yaml"])
        .trim()
        .to_owned();
    forge_run(&env, &evil, &id, &reviewed);
    env.bmad(&b, &["sync"]).success();
    let refused = env.bmad(&b, &["resume", "feat"]).code(4);
    assert!(
        refused.stderr.contains("word for word"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("git bmad run gated -s feat"),
        "{}",
        refused.stderr
    );
    assert!(!marker.exists());
}

#[test]
fn a_gate_answered_on_the_remote_does_not_pass_the_gate() {
    let env = TestEnv::new();
    let (a, b, remote) = two_machines(&env);
    trust_each_other(&env, &a, &[&b]);
    let (id, _wt_a) = a_parks_and_pushes(&env, &a);
    let evil = attacker(&env, &remote);
    let gate_seq = named(&events_of(&env, &a, &id), "gate_opened")[0]["seq"].clone();
    forge_events(
        &env,
        &evil,
        &id,
        &[(
            "gate_answered",
            Some("ship"),
            "human",
            json!({"answer": "continue", "kind": "before", "gate_seq": gate_seq}),
        )],
    );
    env.bmad(&b, &["sync"]).success();
    // The run is A's, signed: B resumes it, and it stops at the same gate.
    let resumed = env.bmad(&b, &["resume", "feat"]).code(3);
    assert!(resumed.stdout.contains("ship"), "{}", resumed.stdout);
    let wt_b = env.root().join("b.feat");
    assert!(
        !wt_b.join("out/ship.txt").exists(),
        "the forged answer passed the gate"
    );
    let status = env.bmad(&b, &["status", "feat", "--json"]).success().json();
    assert_eq!(
        status["not_trusted"][0]["event"], "gate_answered",
        "{status:#}"
    );
    // The morning report says so too.
    let report = env.bmad(&b, &["report", "--json"]).success().json();
    assert!(
        report.to_string().contains("\"kind\":\"not_trusted\""),
        "{report:#}"
    );
    let text = env.bmad(&b, &["report"]).success().stdout;
    assert!(text.contains("unsigned, not trusted"), "{text}");
    // A's own sync: the same forged answer is information there too.
    env.bmad(&a, &["sync"]).success();
    let gated = env.bmad(&a, &["status", "feat", "--json"]).success().json();
    assert_eq!(
        gated["not_trusted"][0]["event"], "gate_answered",
        "{gated:#}"
    );
}

#[test]
fn a_remote_journal_that_drops_a_local_violation_cannot_erase_it() {
    let env = TestEnv::new();
    let (a, _b, remote) = two_machines(&env);
    env.git(&a, &["config", "bmad.origin.pushSessions", "true"]);
    let (id, wt_a) = env.start(&a, "feat");
    let violation =
        r#"{"hook":"pre-push","rule":"force-push","subject":"refs/heads/main","reason":"forced"}"#;
    env.bmad(
        &wt_a,
        &[
            "journal",
            "append",
            "policy_violation",
            "--detail",
            violation,
        ],
    )
    .success();
    env.bmad(&wt_a, &["push"]).success();
    let before = named(&events_of(&env, &a, &id), "policy_violation").len();
    assert_eq!(before, 1);

    // The attacker re-writes the journal without it, re-chained, as a fast-forward.
    let evil = attacker(&env, &remote);
    let head = fetch_session(&env, &evil, &id);
    // Re-sealed from the genesis as git-bmad would; earlier notes hold the earlier events.
    let mut chain = chain_link("bmad-journal", &id);
    let all = env.git(&evil, &["notes", "--ref=evil", "list"]);
    let mut lines: Vec<Value> = Vec::new();
    for entry in all.lines() {
        let object = entry.split_whitespace().nth(1).unwrap();
        for l in env
            .git(&evil, &["notes", "--ref=evil", "show", object])
            .lines()
        {
            if let Ok(v) = serde_json::from_str::<Value>(l) {
                lines.push(v);
            }
        }
    }
    lines.sort_by_key(|v| v["seq"].as_u64().unwrap());
    lines.retain(|v| v["event"] != "policy_violation" && v["event"] != "journal_signed");
    let mut text = String::new();
    for (n, mut v) in lines.into_iter().enumerate() {
        v["seq"] = json!(n + 1);
        v["prev"] = json!(chain);
        let line = serde_json::to_string(&v).unwrap();
        chain = chain_link(&chain, &line);
        text.push_str(&line);
        text.push('\n');
    }
    // All of it on the newest checkpoint's note, every older note emptied.
    for entry in all.lines() {
        let object = entry.split_whitespace().nth(1).unwrap();
        env.git(&evil, &["notes", "--ref=evil", "remove", object]);
    }
    push_note(&env, &evil, &id, &head, &text);

    env.bmad(&a, &["sync"]).success();
    let after = events_of(&env, &a, &id);
    let violations = named(&after, "policy_violation");
    assert_eq!(violations.len(), 1, "{after:#?}");
    assert_eq!(violations[0]["trusted"], true);
    let report = env.bmad(&a, &["report", "--json"]).success().json();
    assert!(report.to_string().contains("force-push"), "{report:#}");
    // A's own history is whole: the chain holds.
    let status = env.bmad(&a, &["status", "feat", "--json"]).success().json();
    assert_eq!(status["not_written_by_git_bmad"], json!([]), "{status:#}");
}

#[test]
fn remote_trailers_never_re_point_a_session_and_remote_names_are_checked() {
    let env = TestEnv::new();
    let (a, _b, remote) = two_machines(&env);
    env.bmad(&a, &["hooks", "install"]).success();
    env.git(&a, &["config", "bmad.origin.pushSessions", "true"]);
    let (id, wt_a) = env.start(&a, "feat");
    env.bmad(&wt_a, &["push"]).success();
    let listed = |dir: &Path| env.bmad(dir, &["list", "--json"]).success().json();
    let before = listed(&a);
    let evil = attacker(&env, &remote);
    let main_before = env.git(&a, &["rev-parse", "main"]);

    // The session's worktree, clone and branch re-pointed by a newer remote checkpoint.
    for forged in [
        trailers(
            &id,
            "feat",
            "refs/heads/bmad/feat",
            &a,
            "Bmad-Clone: 20260101-000000-abcdef\n",
        ),
        trailers(&id, "feat", "refs/heads/main", &wt_a, ""),
    ] {
        forge_checkpoint(&env, &evil, &id, &forged, false);
        let synced = env.bmad(&a, &["sync", "--json"]).success().json();
        assert_eq!(synced[0]["outcome"], "refused", "{synced:#}");
        assert!(synced[0]["refused"].is_string(), "{synced:#}");
        assert_eq!(listed(&a), before, "the session was re-pointed");
    }
    // Its rules still bind the session worktree.
    write(&wt_a, "x.txt", "x\n");
    env.git(&wt_a, &["add", "x.txt"]);
    let bypass = env
        .git_command(&wt_a)
        .args(["commit", "-q", "--no-verify", "-m", "skip hooks"])
        .output()
        .unwrap();
    assert!(
        !bypass.status.success(),
        "a --no-verify commit went through"
    );
    env.bmad(&a, &["doctor"]).success();

    // A new session whose name climbs out of the worktree root, on main.
    for (bad_id, name, branch) in [
        (
            "20260101-000000-badbad",
            "../../escape",
            "refs/heads/bmad/../../escape",
        ),
        ("20260101-000000-badba2", "ok", "refs/heads/main"),
    ] {
        let forged = trailers(bad_id, name, branch, Path::new("/tmp"), "");
        forge_checkpoint(&env, &evil, bad_id, &forged, true);
        let synced = env.bmad(&a, &["sync", "--json"]).success().json();
        let bad = synced
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session"] == bad_id)
            .unwrap()
            .clone();
        assert_eq!(bad["outcome"], "refused", "{synced:#}");
        let resumed = env.bmad(&a, &["resume", bad_id]).code(1);
        assert!(resumed.stderr.contains("refused"), "{}", resumed.stderr);
    }
    // Refs holding no checkpoint or no journal (a blob, a tree): refused, and every other
    // session still syncs.
    let blob = env
        .git(&evil, &["hash-object", "-w", "README.md"])
        .trim()
        .to_owned();
    let tree = env
        .git(&evil, &["rev-parse", "HEAD^{tree}"])
        .trim()
        .to_owned();
    for (object, reference) in [
        (
            &blob,
            "refs/bmad/sessions/20260101-000000-b10b00/checkpoints".to_owned(),
        ),
        (
            &tree,
            "refs/bmad/sessions/20260101-000000-7ee000/checkpoints".to_owned(),
        ),
        (&blob, format!("refs/notes/bmad/{id}")),
    ] {
        env.git(
            &evil,
            &[
                "push",
                "-q",
                "--force",
                "origin",
                &format!("{object}:{reference}"),
            ],
        );
    }
    let synced = env.bmad(&a, &["sync", "--json"]).success().json();
    for junk in ["20260101-000000-b10b00", "20260101-000000-7ee000"] {
        let row = synced
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session"] == junk)
            .unwrap();
        assert_eq!(row["outcome"], "refused", "{synced:#}");
    }
    env.bmad(&a, &["list", "--remote", "origin"]).success();
    assert!(!env.root().parent().unwrap().join("escape").exists());
    assert_eq!(env.git(&a, &["rev-parse", "main"]), main_before);
    assert_eq!(read(&a, "README.md"), "# project\n");
}

#[test]
fn control_characters_written_by_a_remote_or_an_agent_reach_no_terminal() {
    let env = TestEnv::new();
    let (a, _b, remote) = two_machines(&env);
    env.git(&a, &["config", "bmad.origin.pushSessions", "true"]);
    let (_id, wt_a) = env.start(&a, "feat");
    // OSC 52 (write the clipboard), cursor up + erase line, C1 CSI, a bidi override.
    let hostile = "done\u{1b}]52;c;ZWNobyBoaQ==\u{7}\u{1b}[1A\u{1b}[2K\u{9b}2K\u{202e}gnp.exe";
    let detail = json!({"text": hostile}).to_string();
    env.bmad(&wt_a, &["journal", "append", "note", "--detail", &detail])
        .success();
    env.bmad(&wt_a, &["push"]).success();
    let evil = attacker(&env, &remote);
    let hostile_id = "20260101-000000-cafe00";
    let name = format!("x{hostile}");
    let forged = trailers(
        hostile_id,
        &name,
        "refs/heads/bmad/x",
        Path::new("/tmp"),
        "",
    );
    forge_checkpoint(&env, &evil, hostile_id, &forged, true);
    for args in [
        vec!["journal", "feat"],
        vec!["journal", "feat", "--format", "md"],
        vec!["status", "feat"],
        vec!["sync"],
        vec!["list", "--remote", "origin"],
    ] {
        let run = env.bmad(&a, &args).success();
        for (what, out) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            assert!(
                !out.contains('\u{1b}') && !out.contains('\u{9b}') && !out.contains('\u{202e}'),
                "{args:?} {what} carries a control character: {out:?}"
            );
        }
    }
    let shown = env.bmad(&a, &["journal", "feat"]).success().stdout;
    assert!(shown.contains("\\u{202e}gnp.exe"), "{shown}");
}

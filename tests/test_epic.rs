//! The epic runner end to end: a real repository holding a BMAD v6 project with an epic of
//! four stories (two independent, one depending on both, one whose `touches` overlap
//! another's), fake agents that behave well and badly, a real bare remote and a fake `gh`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{copy_dir, read, write, TestEnv};
use crate::test_supervisor::{agent_behaviour, FAKE_CLAUDE};

/// The v6 epic fixture in a repository with a remote, and the fake agents on PATH.
pub(crate) fn epic_project(env: &TestEnv) -> PathBuf {
    let repo = env.repo("proj");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/epic/v6");
    copy_dir(&src, &repo);
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "bmad project with epic 3"]);
    env.bare_remote(&repo);
    env.executable("claude", FAKE_CLAUDE);
    // gh: logs every call; `pr list` finds nothing, `pr create` prints a URL.
    env.executable(
        "gh",
        "#!/bin/sh\necho \"gh $*\" >> \"$HOME/agent/gh.log\"\ncase \"$1 $2\" in\n  'pr list') exit 0 ;;\n  'pr create') echo \"https://github.com/example/proj/pull/$$\" ;;\nesac\n",
    );
    dev_behaviour(env, "");
    agent_behaviour(env, "review-1", "result 'Outcome: Approve'\n");
    agent_behaviour(env, "review-2", "result 'Outcome: Approve'\n");
    repo
}

/// An honest agent's edit: a line into the file its story's `touches` name first, or a file
/// of its own (`default`) under the directory they name.
pub(crate) fn write_in_scope(story_file: &str, default: &str) -> String {
    format!(
        "first=$(sed -n 's/^touches: \\[\\([^],]*\\).*/\\1/p' \"{story_file}\" | head -n1)\ncase \"$first\" in\n  *.rs) file=\"$first\" ;;\n  *) file=\"{default}\" ;;\nesac\nmkdir -p \"$(dirname \"$file\")\" && echo \"// $key\" >> \"$file\"\n"
    )
}

/// The fake dev: `prelude` first (a pause, a lie), then the work: the story's code under its
/// area and the story marked for review. Every call, and the start and end of the work, is
/// logged, so tests see which stories ran, how often, and which ran at the same time.
pub(crate) fn dev_behaviour(env: &TestEnv, prelude: &str) {
    agent_behaviour(
        env,
        "dev",
        &format!(
            "key=$BMAD_ARGS\necho \"$key\" >> \"$HOME/agent/dev.log\"\necho \"start $key $(date +%s%N)\" >> \"$HOME/agent/times.log\"\n{prelude}\n{}sed -i 's/^Status: .*/Status: review/' \"_bmad-output/implementation-artifacts/$key.md\"\necho \"end $key $(date +%s%N)\" >> \"$HOME/agent/times.log\"\nresult \"implemented $key\"\n",
            write_in_scope(
                "_bmad-output/implementation-artifacts/$key.md",
                "src/$(echo \"$key\" | cut -d- -f3)/$key.rs"
            )
        ),
    );
}

/// `epic status --json`'s stories by key.
pub(crate) fn status(env: &TestEnv, repo: &Path) -> Value {
    epic_status(env, repo, "3")
}

/// `epic status <epic> --json`.
fn epic_status(env: &TestEnv, repo: &Path, epic: &str) -> Value {
    env.bmad(repo, &["epic", "status", epic, "--json"])
        .success()
        .json()
}

pub(crate) fn story<'a>(status: &'a Value, key: &str) -> &'a Value {
    status["stories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap_or_else(|| panic!("no {key} in {status:#}"))
}

/// (start, end) nanoseconds of each story's dev step.
fn dev_times(env: &TestEnv) -> Vec<(String, u128, u128)> {
    let log = std::fs::read_to_string(env.root().join("home/agent/times.log")).unwrap();
    let mut out: Vec<(String, u128, u128)> = Vec::new();
    for line in log.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        let t: u128 = parts[2].parse().unwrap();
        match parts[0] {
            "start" => out.push((parts[1].to_owned(), t, 0)),
            _ => out.iter_mut().find(|(k, _, _)| k == parts[1]).unwrap().2 = t,
        }
    }
    out
}

/// Every review (rounds 1–3) requests changes with one MUST-FIX `finding` (`$BMAD_STEP` in it
/// makes it new each round); every fix changes a file.
fn reviews_never_converge(env: &TestEnv, finding: &str) {
    for step in ["review-1", "review-2", "review-3"] {
        agent_behaviour(
            env,
            step,
            &format!("result \"Outcome: Changes Requested\\n- [ ] [AI-Review][High] {finding}\"\n"),
        );
    }
    for step in ["fix-1", "fix-2"] {
        agent_behaviour(env, step, "echo \"$BMAD_STEP\" >> fix.txt\nresult fixed\n");
    }
}

/// How many agent calls went to steps whose id starts with `prefix`.
pub(crate) fn calls_to(env: &TestEnv, prefix: &str) -> usize {
    read(&env.root(), "home/agent/calls.log")
        .lines()
        .filter(|l| l.starts_with(prefix))
        .count()
}

fn overlap(times: &[(String, u128, u128)], a: &str, b: &str) -> bool {
    let find = |k: &str| times.iter().find(|(key, _, _)| key == k).unwrap().clone();
    let (_, a0, a1) = find(a);
    let (_, b0, b1) = find(b);
    a0 < b1 && b0 < a1
}

#[test]
fn an_epic_runs_in_parallel_stacked_reviewed_to_convergence_and_is_never_merged() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    // 3-1's first review finds a MUST-FIX problem; its fix round fixes it.
    agent_behaviour(
        &env,
        "review-1",
        "case \"$BMAD_ARGS\" in\n  3-1-*) result '**Outcome:** Changes Requested\\n- [ ] [AI-Review][High] no timeout on requests [src/api/3-1-api-client.rs:1]' ;;\n  *) result 'Outcome: Approve' ;;\nesac\n",
    );
    agent_behaviour(
        &env,
        "fix-1",
        "echo \"$BMAD_FINDINGS\" > \"$HOME/agent/fix-prompt.txt\"\necho '// timeout added' >> src/api/3-1-api-client.rs\nresult 'fixed'\n",
    );
    // Each dev takes a second, so stories that run at the same time overlap.
    dev_behaviour(&env, "sleep 1");
    let main_before = env.git(&repo, &["rev-parse", "main"]);
    let run = env.bmad(&repo, &["epic", "run", "3", "--parallel", "3"]);
    let run = run.success();
    assert!(run.stdout.contains("3-3-sync-engine"), "{}", run.stdout);

    // Every story done, with a draft PR.
    let s = status(&env, &repo);
    for key in [
        "3-1-api-client",
        "3-2-storage",
        "3-3-sync-engine",
        "3-4-api-retries",
    ] {
        let st = story(&s, key);
        assert_eq!(st["stage"], "done", "{key}: {st:#}");
        assert!(
            st["state"]["pr"]
                .as_str()
                .unwrap()
                .starts_with("https://github.com/example/proj/pull/"),
            "{st:#}"
        );
    }
    // Each story's evidence is the judge's own run, on the commit pushed; every agent
    // stayed inside its story's touches (3-4 in `src/api/retry.rs`, inside 3-1's `src/api`).
    for key in ["3-1-api-client", "3-4-api-retries"] {
        let evidence = story(&s, key)["state"]["tests"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            evidence.starts_with("`./test.sh` passed on ") && !evidence.contains("accepted"),
            "{key}: {evidence}"
        );
    }
    // Review to convergence: 3-1 took two reviews and fixed the one finding; the fixer was
    // told what it was.
    let api = &story(&s, "3-1-api-client")["state"];
    assert_eq!(api["rounds"], 2, "{api:#}");
    assert_eq!(api["findings_fixed"], 1, "{api:#}");
    assert!(read(&env.root(), "home/agent/fix-prompt.txt").contains("no timeout on requests"));
    assert_eq!(story(&s, "3-2-storage")["state"]["rounds"], 1);

    // Parallel where allowed, proven by overlap in time; never for overlapping touches.
    let times = dev_times(&env);
    assert!(
        overlap(&times, "3-1-api-client", "3-2-storage"),
        "{times:?}"
    );
    assert!(
        !overlap(&times, "3-1-api-client", "3-4-api-retries"),
        "{times:?}"
    );
    // The dependent ran after both its dependencies.
    assert!(!overlap(&times, "3-3-sync-engine", "3-1-api-client"));
    assert!(!overlap(&times, "3-3-sync-engine", "3-2-storage"));

    // Stacked: 3-3's branch holds 3-1's and 3-2's work, and its PR targets 3-1's branch.
    for dep in ["bmad/3-1-api-client", "bmad/3-2-storage"] {
        env.git(
            &repo,
            &["merge-base", "--is-ancestor", dep, "bmad/3-3-sync-engine"],
        );
    }
    let gh = read(&env.root(), "home/agent/gh.log");
    assert!(
        gh.lines().any(|l| l.starts_with(
            "gh pr create --draft --base bmad/3-1-api-client --head bmad/3-3-sync-engine"
        )),
        "{gh}"
    );
    assert!(!gh.lines().any(|l| l.starts_with("gh pr merge")), "{gh}");
    assert!(
        gh.lines()
            .any(|l| l.starts_with("gh pr create --draft --base main --head bmad/3-2-storage")),
        "{gh}"
    );
    // Each story is one commit on its branch, pushed; main never moved.
    assert_eq!(env.git(&repo, &["rev-parse", "main"]), main_before);
    let remote_branches = env.git(&repo, &["ls-remote", "--heads", "origin"]);
    assert!(
        remote_branches.contains("refs/heads/bmad/3-4-api-retries"),
        "{remote_branches}"
    );
    assert!(
        !remote_branches.contains("refs/heads/main"),
        "{remote_branches}"
    );
    // The stories' statuses moved on the epic's branch, one commit each; the story branches
    // leave sprint-status.yaml alone, so a branch stacked on two merges cleanly.
    let sprint = env.git(
        &repo,
        &[
            "show",
            "bmad/epic-3:_bmad-output/implementation-artifacts/sprint-status.yaml",
        ],
    );
    for key in [
        "3-1-api-client",
        "3-2-storage",
        "3-3-sync-engine",
        "3-4-api-retries",
    ] {
        assert!(sprint.contains(&format!("  {key}: review\n")), "{sprint}");
    }
    // The progress document, committed on the epic's branch for reviewers.
    let progress = env.git(
        &repo,
        &["show", "bmad/epic-3:docs/progress/epic-3-auto-run.md"],
    );
    assert!(
        progress.starts_with("# Epic 3: auto-run progress\n"),
        "{progress}"
    );
    assert!(progress.contains("- state: finished\n"), "{progress}");
    for key in [
        "3-1-api-client",
        "3-2-storage",
        "3-3-sync-engine",
        "3-4-api-retries",
    ] {
        let row = progress
            .lines()
            .find(|l| l.starts_with(&format!("| {key} | done |")))
            .unwrap_or_else(|| panic!("no done row for {key}:\n{progress}"));
        assert!(
            row.ends_with("/pull/1 |") || row.contains("https://"),
            "{row}"
        );
    }

    // Running again after completion changes nothing: no event, no agent, no PR.
    let started_before = s["started"].clone();
    let calls_before = read(&env.root(), "home/agent/calls.log");
    let journal_before = env.git(&repo, &["for-each-ref", "refs/notes/bmad/"]);
    env.bmad(&repo, &["epic", "run", "3", "--parallel", "3"])
        .success();
    assert_eq!(read(&env.root(), "home/agent/calls.log"), calls_before);
    assert_eq!(
        env.git(&repo, &["for-each-ref", "refs/notes/bmad/"]),
        journal_before
    );
    assert_eq!(status(&env, &repo)["started"], started_before);
}

/// `epic resume` goes on with the options the run's record holds, so a record something
/// other than git-bmad moved (a plain `git update-ref`) is not read: nothing runs until it is
/// put back, with the command that does it.
#[test]
fn an_epic_whose_record_something_else_moved_is_not_resumed_until_it_is_put_back() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    dev_behaviour(
        &env,
        "case \"$key\" in 3-2-*) result 'All done, tests pass.' ; exit 0 ;; esac",
    );
    env.bmad(&repo, &["epic", "run", "3"]).code(3);
    dev_behaviour(&env, "");
    env.bmad(&env.root().join("proj.3-2-storage"), &["answer", "retry"])
        .success();
    let list = env.bmad(&repo, &["list", "--json"]).success().json();
    let epic = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "epic-3")
        .expect("the epic's session");
    let notes = format!("refs/notes/bmad/{}", epic["id"].as_str().unwrap());
    let recorded = env.git(&repo, &["rev-parse", &notes]).trim().to_owned();
    let earlier = env
        .git(&repo, &["rev-parse", &format!("{notes}~1")])
        .trim()
        .to_owned();
    env.git(&repo, &["update-ref", &notes, &earlier]);

    let calls = read(&env.root(), "home/agent/calls.log");
    let refused = env.bmad(&repo, &["epic", "resume", "3"]).code(4);
    assert!(
        refused
            .stderr
            .contains("nothing runs or is answered there until git-bmad's record is put back")
            && refused
                .stderr
                .contains(&format!("git update-ref {notes} {recorded} {earlier}")),
        "{}",
        refused.stderr
    );
    assert_eq!(
        read(&env.root(), "home/agent/calls.log"),
        calls,
        "no agent ran"
    );

    env.git(&repo, &["update-ref", &notes, &recorded, &earlier]);
    env.bmad(&repo, &["epic", "resume", "3"]).success();
    assert_eq!(story(&status(&env, &repo), "3-2-storage")["stage"], "done");
}

#[test]
fn a_lying_dev_parks_at_a_gate_its_dependent_is_skipped_and_resume_never_repeats_a_done_story() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    // 3-2's dev says it is done and changes nothing.
    dev_behaviour(
        &env,
        "case \"$key\" in 3-2-*) result 'All done, tests pass.' ; exit 0 ;; esac",
    );
    let run = env.bmad(&repo, &["epic", "run", "3"]).code(3);
    assert!(
        run.stderr.contains("git bmad epic resume 3"),
        "{}",
        run.stderr
    );
    let s = status(&env, &repo);
    assert_eq!(story(&s, "3-2-storage")["stage"], "gated", "{s:#}");
    assert_eq!(story(&s, "3-3-sync-engine")["stage"], "skipped", "{s:#}");
    assert!(story(&s, "3-3-sync-engine")["state"]["reason"]
        .as_str()
        .unwrap()
        .contains("dependency 3-2-storage is gated; resume after it is done"));
    for key in ["3-1-api-client", "3-4-api-retries"] {
        assert_eq!(story(&s, key)["stage"], "done", "{key}");
    }

    // The human looks, the dev now does the work, the gate is answered: resume finishes the
    // epic and runs no finished story again.
    dev_behaviour(&env, "");
    let wt = env.root().join("proj.3-2-storage");
    env.bmad(&wt, &["answer", "retry"]).success();
    env.bmad(&repo, &["epic", "resume", "3"]).success();
    let s = status(&env, &repo);
    for key in [
        "3-1-api-client",
        "3-2-storage",
        "3-3-sync-engine",
        "3-4-api-retries",
    ] {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
    }
    let devs = read(&env.root(), "home/agent/dev.log");
    for key in ["3-1-api-client", "3-4-api-retries", "3-3-sync-engine"] {
        assert_eq!(
            devs.lines().filter(|l| *l == key).count(),
            1,
            "{key}: {devs}"
        );
    }
}

#[test]
fn a_review_that_never_converges_stops_at_the_cap_and_failures_trip_the_breaker() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    // Each round finds something new (the same finding twice would be a stall).
    reviews_never_converge(&env, "still wrong in $BMAD_STEP");
    let run = env.bmad(
        &repo,
        &["epic", "run", "3", "--stories", "3-2", "--rounds", "2"],
    );
    run.code(3);
    let s = status(&env, &repo);
    let storage = story(&s, "3-2-storage");
    assert_eq!(storage["stage"], "gated", "{storage:#}");
    assert!(
        storage["state"]["reason"]
            .as_str()
            .unwrap()
            .contains("at converged"),
        "{storage:#}"
    );
    // Two fix rounds, then the cap: three reviews, never a fourth.
    assert_eq!(calls_to(&env, "review-"), 3);
    assert_eq!(calls_to(&env, "fix-"), 2);

    // Tests that never pass: the first failures stop the run before the rest start.
    let env = TestEnv::new();
    let repo = epic_project(&env);
    agent_behaviour(
        &env,
        "dev",
        "mkdir -p src && echo FAIL >> \"src/$BMAD_ARGS.rs\"\nresult done\n",
    );
    std::fs::write(
        repo.join(".bmad/config.yaml"),
        "checks:\n  test_command: ./test.sh\nrunners:\n  default: claude\n",
    )
    .unwrap();
    let playbook = env
        .bmad(&repo, &["epic", "playbook", "--era", "v6", "--rounds", "1"])
        .success()
        .stdout;
    // on_error stop instead of a gate: each failure ends its story.
    std::fs::create_dir_all(repo.join(".bmad/playbooks")).unwrap();
    std::fs::write(
        repo.join(".bmad/playbooks/bmad-story-dev.yaml"),
        playbook
            .replace("on_error: gate", "on_error: stop")
            .replace("    escalate_on: [postcondition_failure]\n", ""),
    )
    .unwrap();
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "our pipeline"]);
    let run = env
        .bmad(&repo, &["epic", "run", "3", "--max-failures", "2"])
        .code(5);
    assert!(run.stderr.contains("circuit breaker"), "{}", run.stderr);
    let s = status(&env, &repo);
    let failed = ["3-1-api-client", "3-2-storage", "3-4-api-retries"]
        .iter()
        .filter(|k| story(&s, k)["stage"] == "failed")
        .count();
    assert_eq!(failed, 2, "{s:#}");
    // The run's options are journaled: `epic resume` takes the same breaker and remote.
    assert_eq!(s["started"]["max_failures"], 2, "{s:#}");
    assert_eq!(s["started"]["remote"], "origin", "{s:#}");

    // The morning report tells the truth: the epic stopped, with why, and every story of it,
    // the ones never started too.
    let report = env.bmad(&repo, &["report", "--json"]).success().json();
    let card = &report["epics"][0];
    assert_eq!(card["epic"], "3", "{report:#}");
    assert_eq!(card["outcome"], "failed", "{card:#}");
    assert!(
        card["stopped"]
            .as_str()
            .unwrap()
            .contains("circuit breaker"),
        "{card:#}"
    );
    let stages: Vec<(String, String)> = card["stories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["key"].as_str().unwrap().into(),
                s["stage"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(stages.len(), 4, "{card:#}");
    assert!(
        stages
            .iter()
            .any(|(k, st)| k == "3-3-sync-engine" && st == "skipped"),
        "{stages:?}"
    );
    let epic_session = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "epic-3")
        .unwrap();
    assert_eq!(epic_session["outcome"], "failed", "{epic_session:#}");
    let text = env.bmad(&repo, &["report"]).success().stdout;
    assert!(text.contains("STOPPED  epic 3 (epic-3)"), "{text}");
    assert!(text.contains("3-3-sync-engine  skipped"), "{text}");
}

#[test]
fn a_fix_round_that_leaves_the_same_findings_is_a_stall_that_goes_to_a_human() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    reviews_never_converge(&env, "no timeout on requests");
    env.bmad(&repo, &["epic", "run", "3", "--stories", "3-2"])
        .code(3);
    let s = status(&env, &repo);
    let storage = story(&s, "3-2-storage");
    assert_eq!(storage["stage"], "gated", "{storage:#}");
    assert!(
        storage["state"]["reason"].as_str().unwrap().contains(
            "A stall across rounds: `review-2` found the same MUST-FIX findings as `review-1`"
        ),
        "{storage:#}"
    );
    // One fix round was paid for, not three.
    assert_eq!(calls_to(&env, "fix-"), 1);
    assert_eq!(calls_to(&env, "review-"), 2);
}

/// BMAD v6.11: each story through `bmad-build-auto` and an independent `bmad-code-review`,
/// read from `spec-<key>.md` frontmatter. git-bmad checks the spec's status and its
/// `baseline_revision` itself; a spec that halts `blocked` parks with its condition, and the
/// story depending on it is skipped, saying why.
#[test]
fn a_v611_epic_builds_from_specs_and_a_blocked_spec_parks_with_its_condition() {
    let env = TestEnv::new();
    let repo = env.repo("ledger");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/epic/v611");
    copy_dir(&src, &repo);
    env.git(&repo, &["add", "-A"]);
    env.git(
        &repo,
        &["commit", "-q", "-m", "bmad v6.11 project with epic 5"],
    );
    env.executable("claude", FAKE_CLAUDE);
    agent_behaviour(
        &env,
        "build",
        &format!(
            "key=$BMAD_ARGS\nspec=\"_bmad-output/implementation-artifacts/spec-$key.md\"\nbase=$(git rev-parse HEAD)\necho \"$key\" >> \"$HOME/agent/build.log\"\nif [ \"$key\" = 5-2-printer ]; then\n  sed -i \"s/^status: .*/status: 'blocked'/\" \"$spec\"\n  printf '\\nBlocking condition: intent gap: which paper sizes?\\n' >> \"$spec\"\n  result 'halted: intent gap'\n  exit 0\nfi\n{}sed -i \"s/^status: .*/status: 'done'/\" \"$spec\"\nsed -i \"s/^review_loop_iteration: .*/&\\nbaseline_revision: $base/\" \"$spec\"\nresult \"built $key\"\n",
            write_in_scope(
                "$spec",
                "src/$(echo \"$key\" | cut -d- -f3)/$key.rs"
            )
        ),
    );
    agent_behaviour(&env, "review-1", "result 'Outcome: Approve'\n");

    let plan = env
        .bmad(&repo, &["epic", "plan", "5", "--json"])
        .success()
        .json();
    assert_eq!(plan["plan"]["era"], "v6.11", "{plan:#}");
    assert_eq!(plan["plan"]["pipeline"], "bmad-story-build");

    // A story halted blocked waits for a human: exit 3, saying what to do.
    let run = env
        .bmad(&repo, &["epic", "run", "5", "--parallel", "2"])
        .code(3);
    assert!(
        run.stderr
            .contains("5-2-printer is blocked: resolve its blocking condition"),
        "{}",
        run.stderr
    );
    let s = epic_status(&env, &repo, "5");
    assert_eq!(story(&s, "5-1-parser")["stage"], "done", "{s:#}");
    let blocked = story(&s, "5-2-printer");
    assert_eq!(blocked["stage"], "blocked", "{s:#}");
    assert!(
        blocked["state"]["reason"]
            .as_str()
            .unwrap()
            .contains("intent gap: which paper sizes?"),
        "{s:#}"
    );
    let skipped = story(&s, "5-3-cli");
    assert_eq!(skipped["stage"], "skipped", "{s:#}");
    assert!(
        skipped["state"]["reason"]
            .as_str()
            .unwrap()
            .contains("5-2-printer"),
        "{s:#}"
    );
    // The dependent never started: only the independent stories were built, and the one
    // whose `touches` overlap 5-1's only after it.
    let log = read(&env.root(), "home/agent/build.log");
    let mut built: Vec<&str> = log.lines().collect();
    let position = |k: &str| built.iter().position(|b| *b == k).unwrap();
    assert!(
        position("5-4-parser-errors") > position("5-1-parser"),
        "{log}"
    );
    built.sort();
    assert_eq!(built, ["5-1-parser", "5-2-printer", "5-4-parser-errors"]);
    // The done story's spec on its branch is what git-bmad verified.
    let spec = env.git(
        &repo,
        &[
            "show",
            "bmad/5-1-parser:_bmad-output/implementation-artifacts/spec-5-1-parser.md",
        ],
    );
    assert!(spec.contains("status: 'done'"), "{spec}");
    // The progress document names the blocker and what to do next.
    let progress = env.git(
        &repo,
        &["show", "bmad/epic-5:docs/progress/epic-5-auto-run.md"],
    );
    assert!(
        progress.contains("## Blockers and next steps"),
        "{progress}"
    );
    assert!(
        progress.contains("- **5-2-printer** (blocked): intent gap: which paper sizes?"),
        "{progress}"
    );

    // Resuming changes nothing while the condition stands.
    env.bmad(&repo, &["epic", "resume", "5"]).code(3);
    assert_eq!(read(&env.root(), "home/agent/build.log").lines().count(), 3);
    // A human answers the question in the story's own worktree; the agent builds it now,
    // and its dependent runs, stacked on both.
    let wt = env.root().join("ledger.5-2-printer");
    let spec_path = "_bmad-output/implementation-artifacts/spec-5-2-printer.md";
    let spec = read(&wt, spec_path)
        .replace("status: 'blocked'", "status: 'ready-for-dev'")
        .replace(
            "Blocking condition: intent gap: which paper sizes?\n",
            "Paper sizes: A4 and Letter.\n",
        );
    std::fs::write(wt.join(spec_path), spec).unwrap();
    agent_behaviour(
        &env,
        "build",
        &read(&env.root(), "home/agent/build.sh").replace("[ \"$key\" = 5-2-printer ]", "false"),
    );
    env.bmad(&repo, &["epic", "resume", "5"]).success();
    let s = epic_status(&env, &repo, "5");
    for key in ["5-1-parser", "5-2-printer", "5-3-cli", "5-4-parser-errors"] {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
    }
    let built = read(&env.root(), "home/agent/build.log");
    assert_eq!(
        built.lines().filter(|l| *l == "5-1-parser").count(),
        1,
        "a done story never runs twice: {built}"
    );
}

/// Sessions an epic starts are guarded like those `start` makes: a repository without the
/// policy hooks is told so, and hooks a tool moved aside are put back in front before an
/// agent runs.
#[test]
fn every_session_an_epic_starts_gets_the_policy_hooks_or_a_warning() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    let one = ["epic", "run", "3", "--stories", "3-1-api-client"];
    let run = env.bmad(&repo, &one).success();
    assert!(
        run.stderr
            .contains("epic-3: the policy hooks are not installed")
            && run
                .stderr
                .contains("3-1-api-client: the policy hooks are not installed"),
        "{}",
        run.stderr
    );

    // Installed, then repointed by another tool (as husky does on `npm install`).
    let env = TestEnv::new();
    let repo = epic_project(&env);
    env.bmad(&repo, &["hooks", "install"]).success();
    env.git(&repo, &["config", "core.hooksPath", "elsewhere"]);
    let run = env.bmad(&repo, &one).success();
    assert!(
        run.stderr.contains("git-bmad's hooks are back in front"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("not installed"), "{}", run.stderr);
    let story_wt = env.root().join("proj.3-1-api-client");
    let hooks = env
        .bmad(&story_wt, &["hooks", "status", "--json"])
        .success();
    let slots = hooks.json()["hooks"].as_array().unwrap().clone();
    assert!(
        !slots.is_empty() && slots.iter().all(|h| h["installed"] == true),
        "{}",
        hooks.stdout
    );
    let s = epic_status(&env, &repo, "3");
    assert_eq!(story(&s, "3-1-api-client")["stage"], "done", "{s:#}");
}

/// A dev that only moves its story's status (and a reviewer that approves it) leaves a
/// branch whose diff is BMAD's bookkeeping alone: no pull request, the story failed, saying
/// so.
#[test]
fn a_status_only_story_is_not_work_and_gets_no_pull_request() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    dev_behaviour(
        &env,
        "sed -i 's/^Status: .*/Status: review/' \"_bmad-output/implementation-artifacts/$key.md\"\nresult \"implemented $key\"\nexit 0",
    );
    // The dev step's own check sees no work beyond the story's file: it waits for a human.
    env.bmad(&repo, &["epic", "run", "3", "--stories", "3-1-api-client"])
        .code(3);
    let s = status(&env, &repo);
    let st = story(&s, "3-1-api-client");
    assert_eq!(st["stage"], "gated", "{s:#}");
    let reason = st["state"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(
            "the step changed only _bmad-output/implementation-artifacts/3-1-api-client.md"
        ),
        "{reason}"
    );
    // A human who waves the step through still gets no pull request: the branch holds no
    // work, and the story fails saying so.
    let wt = env.root().join("proj.3-1-api-client");
    env.bmad(&wt, &["answer", "continue"]).success();
    env.bmad(&repo, &["epic", "resume", "3"]).code(5);
    let s = status(&env, &repo);
    let st = story(&s, "3-1-api-client");
    assert_eq!(st["stage"], "failed", "{s:#}");
    let reason = st["state"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("only BMAD's bookkeeping"), "{reason}");
    let gh = std::fs::read_to_string(env.root().join("home/agent/gh.log")).unwrap_or_default();
    assert!(!gh.contains("pr create"), "{gh}");
    // Resumed, the story's pipeline runs anew (its finished run built nothing), and with an
    // agent that does the work this time, the story is done.
    dev_behaviour(&env, "");
    env.bmad(&repo, &["epic", "resume", "3"]).success();
    let s = status(&env, &repo);
    assert_eq!(story(&s, "3-1-api-client")["stage"], "done", "{s:#}");
    let dev_runs = read(&env.root(), "home/agent/dev.log");
    assert_eq!(dev_runs.lines().count(), 2, "{dev_runs}");
}

/// `--max-time` cuts a hung agent: no step of a story runs past what is left of the
/// epic's time in steps, whatever the step's own timeout (two hours by default).
#[test]
fn a_hung_agent_is_cut_at_what_is_left_of_the_epic_time() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    // Long enough that waiting it out fails the test; short enough that it ends.
    dev_behaviour(&env, "sleep 90");
    let run = env.bmad(
        &repo,
        &[
            "epic",
            "run",
            "3",
            "--stories",
            "3-1-api-client",
            "--max-time",
            "2s",
        ],
    );
    let s = status(&env, &repo);
    let st = story(&s, "3-1-api-client");
    assert_ne!(st["stage"], "done", "{s:#}");
    let times = std::fs::read_to_string(env.root().join("home/agent/times.log")).unwrap();
    assert!(
        !times.contains("end 3-1"),
        "the hung agent was waited out: {times}"
    );
    let journal = env
        .bmad(&repo, &["journal", "3-1-api-client", "--json"])
        .success();
    assert!(
        journal.stdout.contains("timed out") || journal.stdout.contains("run_time"),
        "{}\n{}",
        run.stderr,
        journal.stdout
    );
}

/// The era `epic plan <epic>` picks for `repo`.
fn era_of(env: &TestEnv, repo: &Path, epic: &str) -> String {
    let plan = env
        .bmad(repo, &["epic", "plan", epic, "--json"])
        .success()
        .json();
    plan["plan"]["era"].as_str().unwrap_or_default().to_owned()
}

/// The era comes from what the project has installed: spec files of a quick-dev (v6.8) do
/// not make a project whose install has no bmad-build-auto run it. With no install to go
/// by, the files say.
#[test]
fn the_era_is_what_the_project_has_installed_then_what_its_files_say() {
    let env = TestEnv::new();
    let repo = env.repo("ledger");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/epic/v611");
    copy_dir(&src, &repo);
    let era = |env: &TestEnv| era_of(env, &repo, "5");
    // The plan names what it went by.
    let evidence = |env: &TestEnv, extra: &[&str]| {
        let mut args = vec!["epic", "plan", "5", "--json"];
        args.extend(extra);
        let plan = env.bmad(&repo, &args).success().json();
        plan["plan"]["era_evidence"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(era(&env), "v6.11");
    assert_eq!(
        evidence(&env, &[]),
        ".claude/skills/bmad-build-auto is installed"
    );
    std::fs::remove_dir_all(repo.join(".claude/skills/bmad-build-auto")).unwrap();
    write(
        &repo,
        ".claude/skills/bmad-dev-story/SKILL.md",
        "---\nname: bmad-dev-story\n---\nImplement the story.\n",
    );
    assert_eq!(era(&env), "v6", "dev-story is what this install can run");
    assert_eq!(
        evidence(&env, &[]),
        ".claude/skills/bmad-dev-story is installed"
    );
    std::fs::remove_dir_all(repo.join(".claude")).unwrap();
    assert_eq!(era(&env), "v6.11", "no install: the spec files say");
    let text = env.bmad(&repo, &["epic", "plan", "5"]).success().stdout;
    assert!(
        text.contains("  era v6.11: no BMAD skill installed; its files include bmad-build's specs"),
        "{text}"
    );
    assert_eq!(evidence(&env, &["--era", "v6"]), "--era v6");
}

/// A board's words for work nobody should build (superseded, wontfix, a word only its own
/// tooling knows) are one rule for every scheduler: `epic plan`, a run, its dry run and
/// `stories next` all leave them, say why, and hold what depends on them; no agent runs them.
#[test]
fn stories_set_aside_or_in_a_word_nobody_schedules_are_never_run() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    let artifacts = "_bmad-output/implementation-artifacts";
    let sprint = read(&repo, &format!("{artifacts}/sprint-status.yaml"))
        .replace("3-2-storage: ready-for-dev", "3-2-storage: superseded")
        .replace(
            "3-4-api-retries: ready-for-dev",
            "3-4-api-retries: awaiting-operator",
        );
    write(&repo, &format!("{artifacts}/sprint-status.yaml"), &sprint);
    for (key, word) in [
        ("3-2-storage", "superseded"),
        ("3-4-api-retries", "awaiting-operator"),
    ] {
        let file = format!("{artifacts}/{key}.md");
        let text = read(&repo, &file).replace("Status: ready-for-dev", &format!("Status: {word}"));
        write(&repo, &file, &text);
    }
    env.git(
        &repo,
        &[
            "commit",
            "-qam",
            "3-2 superseded, 3-4 waits for its operator",
        ],
    );

    let plan = env
        .bmad(&repo, &["epic", "plan", "3", "--json"])
        .success()
        .json();
    let held = |key: &str| -> String {
        let s = plan["plan"]["stories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == key)
            .unwrap_or_else(|| panic!("{key}: {plan:#}"));
        assert_eq!(s["action"], "hold", "{key}: {s:#}");
        s["reason"].as_str().unwrap_or_default().to_owned()
    };
    assert!(held("3-2-storage").starts_with("set aside (superseded)"));
    assert!(held("3-4-api-retries").contains("\"awaiting-operator\" is none a run starts from"));
    assert!(held("3-3-sync-engine").contains("depends on 3-2-storage, which is superseded"));
    let dry = env
        .bmad(&repo, &["epic", "run", "3", "--dry-run"])
        .success();
    assert!(
        dry.stdout
            .contains("3-2-storage  [superseded]  held: set aside"),
        "{}",
        dry.stdout
    );
    let check = env.bmad(&repo, &["stories", "check"]).success();
    let said = format!("{}{}", check.stdout, check.stderr);
    assert!(
        said.contains("`superseded` of `3-2-storage` is not a BMAD status; kept as it is, and no run starts it: set aside"),
        "{said}"
    );
    let next = env
        .bmad(&repo, &["stories", "next", "--json"])
        .success()
        .json();
    assert_eq!(next["next"]["key"], "3-1-api-client", "{next:#}");

    // The run builds 3-1 alone.
    let run = env.bmad(&repo, &["epic", "run", "3"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(read(&env.root(), "home/agent/dev.log"), "3-1-api-client\n");
}

/// bmad-build takes any file whose frontmatter is its spec's as a spec, whatever its name: a
/// project naming its specs `{key}.md` is read as v6.11 (no false drift for the designed
/// sprint-review / spec-done pair, the era from its files where nothing is installed) and its
/// stories run through bmad-build-auto to done.
#[test]
fn specs_named_by_their_key_are_known_by_their_frontmatter() {
    let env = TestEnv::new();
    let repo = env.repo("ledger");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/epic/v611"),
        &repo,
    );
    let artifacts = repo.join("_bmad-output/implementation-artifacts");
    for entry in std::fs::read_dir(&artifacts).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(key) = name.strip_prefix("spec-") {
            std::fs::rename(entry.path(), artifacts.join(key)).unwrap();
        }
    }
    // The pair bmad-build-auto leaves: the spec done, the sprint in review.
    let spec = "_bmad-output/implementation-artifacts/5-4-parser-errors.md";
    let text = read(&repo, spec).replacen("status: 'ready-for-dev'", "status: 'done'", 1);
    write(&repo, spec, &text);
    let sprint = "_bmad-output/implementation-artifacts/sprint-status.yaml";
    let text = read(&repo, sprint).replace(
        "5-4-parser-errors: ready-for-dev",
        "5-4-parser-errors: review",
    );
    write(&repo, sprint, &text);
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "specs named by their keys"]);
    env.bare_remote(&repo);
    let check = env.bmad(&repo, &["stories", "check"]).success();
    assert!(check.stdout.contains("0 error(s)"), "{}", check.stdout);

    // What is installed says v6.11; with nothing installed, the files do.
    let era = |env: &TestEnv| era_of(env, &repo, "5");
    assert_eq!(era(&env), "v6.11");
    let installed = repo.join(".claude");
    let kept = env.root().join("claude-install");
    std::fs::rename(&installed, &kept).unwrap();
    assert_eq!(
        era(&env),
        "v6.11",
        "no install: the specs' frontmatter says"
    );
    std::fs::rename(&kept, &installed).unwrap();

    env.executable("claude", FAKE_CLAUDE);
    env.executable(
        "gh",
        "#!/bin/sh\ncase \"$1 $2\" in\n  'pr list') exit 0 ;;\n  'pr create') echo https://github.com/example/ledger/pull/1 ;;\nesac\n",
    );
    agent_behaviour(
        &env,
        "build",
        &format!(
            "key=$BMAD_ARGS\nspec=\"_bmad-output/implementation-artifacts/$key.md\"\nbase=$(git rev-parse HEAD)\n{}sed -i \"s/^status: .*/status: 'done'/\" \"$spec\"\nsed -i \"s/^review_loop_iteration: .*/&\\nbaseline_revision: $base/\" \"$spec\"\nresult \"built $key\"\n",
            write_in_scope("$spec", "src/$(echo \"$key\" | cut -d- -f3)/$key.rs")
        ),
    );
    agent_behaviour(&env, "review-1", "result 'Outcome: Approve'\n");
    env.bmad(&repo, &["epic", "run", "5", "--stories", "5-1"])
        .success();
    let s = env
        .bmad(&repo, &["epic", "status", "5", "--json"])
        .success()
        .json();
    assert_eq!(story(&s, "5-1-parser")["stage"], "done", "{s:#}");
    let calls = read(&env.root(), "home/agent/calls.log");
    assert!(calls.contains("bmad-build-auto"), "{calls}");
}

//! An epic run killed (`kill -9`, its whole process group: agents too) at instants spread
//! over its run: after each kill `doctor` accepts the state (with the fixes it names), and
//! `epic resume` finishes the epic without running a finished stage again, and without
//! taking a killed step's word (a v6.11 spec marked done before the kill) for its work.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::copy_dir;
use crate::common::{kill_group, TestEnv};
use crate::test_crash::recover;
use crate::test_epic::{dev_behaviour, epic_project, story, write_in_scope};
use crate::test_supervisor::{agent_behaviour, FAKE_CLAUDE};

fn journal(env: &TestEnv, repo: &Path, session: &str) -> Vec<Value> {
    env.bmad(repo, &["journal", session, "--json"])
        .success()
        .json()
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The positions of events of `kind`.
fn positions_of(events: &[Value], kind: &str) -> Vec<usize> {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["event"] == kind)
        .map(|(i, _)| i)
        .collect()
}

/// The positions of events of `kind` for `step`.
fn positions(events: &[Value], kind: &str, step: &str, stage: Option<&str>) -> Vec<usize> {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["event"] == kind && e["step"] == step)
        .filter(|(_, e)| stage.is_none_or(|s| e["detail"]["stage"] == s))
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn an_epic_killed_at_spread_instants_resumes_without_repeating_a_finished_stage() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    // Each dev step takes a moment, so kills land inside steps as well as between them.
    dev_behaviour(&env, "sleep 0.5");
    let keys = [
        "3-1-api-client",
        "3-2-storage",
        "3-3-sync-engine",
        "3-4-api-retries",
    ];
    kill_then_resume(&env, &repo, "3", &keys, "dev.log");
}

/// BMAD v6.11: `bmad-build-auto` marks its spec `done` first and builds after, so most kills
/// inside a build leave a spec that says done over work that is not there. Resume runs the
/// killed step again; every story ends done, judged on its pushed commit.
#[test]
fn a_v611_epic_killed_after_its_specs_say_done_resumes_on_the_work_not_the_word() {
    let env = TestEnv::new();
    let repo = env.repo("ledger");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/epic/v611"),
        &repo,
    );
    env.git(&repo, &["add", "-A"]);
    env.git(
        &repo,
        &["commit", "-q", "-m", "bmad v6.11 project with epic 5"],
    );
    env.bare_remote(&repo);
    env.executable("claude", FAKE_CLAUDE);
    env.executable(
        "gh",
        "#!/bin/sh\ncase \"$1 $2\" in\n  'pr list') exit 0 ;;\n  'pr create') echo \"https://github.com/example/ledger/pull/$$\" ;;\nesac\n",
    );
    agent_behaviour(
        &env,
        "build",
        &format!(
            "key=$BMAD_ARGS\nspec=\"_bmad-output/implementation-artifacts/spec-$key.md\"\nbase=$(git rev-parse HEAD)\necho \"$key\" >> \"$HOME/agent/build.log\"\nsed -i \"s/^status: .*/status: 'done'/\" \"$spec\"\nsleep 0.5\n{}grep -q '^baseline_revision:' \"$spec\" || sed -i \"s/^review_loop_iteration: .*/&\\nbaseline_revision: $base/\" \"$spec\"\nresult \"built $key\"\n",
            write_in_scope("$spec", "src/$(echo \"$key\" | cut -d- -f3)/$key.rs")
        ),
    );
    agent_behaviour(&env, "review-1", "result 'Outcome: Approve'\n");
    let keys = ["5-1-parser", "5-2-printer", "5-3-cli", "5-4-parser-errors"];
    kill_then_resume(&env, &repo, "5", &keys, "build.log");
    // Each story's evidence is the judge's own run on its pushed commit, and its branch
    // holds its code.
    let s = env
        .bmad(&repo, &["epic", "status", "5", "--json"])
        .success()
        .json();
    for key in keys {
        let tests = story(&s, key)["state"]["tests"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(tests.contains("passed on"), "{key}: {tests}");
        let files = env.git(
            &repo,
            &["ls-tree", "-r", "--name-only", &format!("bmad/{key}")],
        );
        let code = env.git(
            &repo,
            &[
                "grep",
                "-l",
                &format!("// {key}"),
                &format!("bmad/{key}"),
                "--",
                "src",
            ],
        );
        assert!(
            !code.trim().is_empty(),
            "{key}'s code is not on its branch: {files}"
        );
    }
}

/// BMAD v4: the Dev sets its story `Ready for Review` first and implements after; a kill in
/// between leaves a story that says ready over work that is not there. Resume runs the
/// killed step again, and every story ends done on its work.
#[test]
fn a_v4_epic_killed_after_its_dev_said_ready_resumes_on_the_work_not_the_word() {
    let env = TestEnv::new();
    let repo = crate::test_epic_v4::v4_project(&env);
    crate::test_epic_v4::behaviour(
        &env,
        "dev",
        &format!(
            "echo \"$key\" >> \"$HOME/agent/dev.log\"\nset_status 'Ready for Review'\nsleep 0.5\n{}result \"implemented $key\"\n",
            write_in_scope(
                "docs/stories/$key.md",
                "src/$(echo \"$key\" | cut -d. -f3 | cut -d- -f1)/$key.rs"
            )
        ),
    );
    // QA approves the draft as it is.
    crate::test_epic_v4::behaviour(
        &env,
        "approve-1",
        "set_status Approved\nresult 'Outcome: Approve'\n",
    );
    let keys = [
        "4.1.api-client",
        "4.2.storage",
        "4.3.sync-engine",
        "4.4.api-retries",
    ];
    kill_then_resume(&env, &repo, "4", &keys, "dev.log");
}

/// Kill `epic run <epic>` at spread instants (odd rounds counted from the launch, even
/// rounds once an agent step has begun, as `log` in the agents' home shows), recovering
/// with `doctor --fix` after each; then resume to the end and check that every story of
/// `keys` is done and no finished stage or step ran again.
fn kill_then_resume(env: &TestEnv, repo: &Path, epic: &str, keys: &[&str], log: &str) {
    let calls = || {
        std::fs::read_to_string(env.root().join("home/agent").join(log))
            .map(|log| log.lines().count())
            .unwrap_or(0)
    };
    let (mut kills, mut kills_in_steps) = (0, 0);
    for round in 0..10u64 {
        let calls_before = calls();
        let mut child = env.spawn_group(repo, &["epic", "run", epic, "--parallel", "2"]);
        if round % 2 == 0 {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while calls() == calls_before
                && std::time::Instant::now() < deadline
                && child.try_wait().unwrap().is_none()
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            std::thread::sleep(Duration::from_millis((round * 97) % 400));
        } else {
            std::thread::sleep(Duration::from_millis(80 + (round * 173) % 500));
        }
        if let Some(exit) = child.try_wait().unwrap() {
            // It ran to its end: after the kills and the recoveries, that end is success.
            let again = env.bmad(repo, &["epic", "status", epic]);
            assert!(
                exit.success(),
                "epic run after {kills} kills ended {exit}: {}{}\n{}'s journal:\n{}",
                again.stdout,
                again.stderr,
                keys[0],
                env.bmad(repo, &["journal", keys[0]]).stdout
            );
            break;
        }
        kill_group(&mut child);
        kills += 1;
        kills_in_steps += usize::from(calls() > calls_before);
        recover(env, repo, &format!("after kill {kills}"));
    }
    assert!(
        kills >= 3 && kills_in_steps >= 2,
        "only {kills} kills landed, {kills_in_steps} inside a step; the test is not testing"
    );
    // Then to the end: resume (with doctor's fixes between, should it stop again).
    let mut said = Vec::new();
    for attempt in 0..4 {
        let run = env.bmad(repo, &["epic", "resume", epic]);
        if run.code == 0 {
            said.clear();
            break;
        }
        said.push(format!("exit {}: {}{}", run.code, run.stdout, run.stderr));
        for key in keys {
            said.push(format!(
                "{key}:\n{}",
                env.bmad(repo, &["journal", key]).stdout
            ));
        }
        recover(env, repo, &format!("resume {attempt}"));
    }
    assert!(
        said.is_empty(),
        "epic resume never finished:\n{}",
        said.join("\n")
    );
    let s = env
        .bmad(repo, &["epic", "status", epic, "--json"])
        .success()
        .json();
    for key in keys {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
    }
    assert_eq!(s["finished"], true);

    // No story started again once done, in the epic's journal.
    let events = journal(env, repo, &format!("epic-{epic}"));
    for key in keys {
        let done = positions(&events, "story_stage", key, Some("done"));
        let started = positions(&events, "story_stage", key, Some("started"));
        let first_done = *done.first().unwrap_or_else(|| panic!("{key} never done"));
        assert!(
            started.iter().all(|&i| i < first_done),
            "{key} started again after it was done: {events:#?}"
        );
    }
    // No step of a story's pipeline started again once it completed in the same run, in its
    // own journal. (A story whose finished run committed no work runs its pipeline anew:
    // a new run.)
    for key in keys {
        let events = journal(env, repo, key);
        let runs = positions_of(&events, "run_started");
        let steps: std::collections::BTreeSet<String> = events
            .iter()
            .filter_map(|e| e["step"].as_str().map(str::to_owned))
            .collect();
        for step in steps {
            for &done in &positions(&events, "step_completed", &step, None) {
                let next_run = runs
                    .iter()
                    .copied()
                    .find(|&r| r > done)
                    .unwrap_or(usize::MAX);
                let again = positions(&events, "step_started", &step, None)
                    .into_iter()
                    .any(|i| i > done && i < next_run);
                assert!(
                    !again,
                    "{key}: step {step} started again after it completed"
                );
            }
        }
        if runs.len() > 1 {
            // Only after a run that committed nothing but bookkeeping.
            let failed = positions(
                &journal(env, repo, &format!("epic-{epic}")),
                "story_stage",
                key,
                Some("failed"),
            );
            assert!(
                !failed.is_empty(),
                "{key} ran its pipeline anew without failing first"
            );
        }
    }
}

/// A dev killed half way (its module written and the story marked for review, its tests
/// not yet): resume runs the step again, on what it left, and the story is done with the
/// whole work, never on the half the kill left.
#[test]
fn a_dev_killed_half_way_runs_again_on_resume_and_the_story_ships_whole() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    agent_behaviour(
        &env,
        "dev",
        "key=$BMAD_ARGS\necho \"$key $BMAD_ATTEMPT\" >> \"$HOME/agent/dev.log\"\nmkdir -p src/api tests\necho '// client' > src/api/client.rs\nsed -i 's/^Status: .*/Status: review/' \"_bmad-output/implementation-artifacts/$key.md\"\nif [ \"$BMAD_ATTEMPT\" = 1 ]; then touch \"$HOME/agent/half-way\"; sleep 60; fi\necho 'true' > tests/client_test.sh\nresult \"implemented $key\"\n",
    );
    let mut child = env.spawn_group(&repo, &["epic", "run", "3", "--stories", "3-1"]);
    let marker = env.root().join("home/agent/half-way");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the dev never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    kill_group(&mut child);
    recover(&env, &repo, "a dev killed half way");
    env.bmad(&repo, &["epic", "resume", "3"]).success();
    let status = env
        .bmad(&repo, &["epic", "status", "3", "--json"])
        .success()
        .json();
    assert_eq!(
        story(&status, "3-1-api-client")["stage"],
        "done",
        "{status:#}"
    );
    let devs = std::fs::read_to_string(env.root().join("home/agent/dev.log")).unwrap();
    assert_eq!(devs, "3-1-api-client 1\n3-1-api-client 2\n");
    // What was pushed is the whole work.
    let pushed = env.git(
        &repo,
        &["ls-tree", "-r", "--name-only", "origin/bmad/3-1-api-client"],
    );
    assert!(pushed.contains("tests/client_test.sh"), "{pushed}");
}

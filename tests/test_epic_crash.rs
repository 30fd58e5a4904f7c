//! An epic run killed (`kill -9`, its whole process group: agents too) at instants spread
//! over its run: after each kill `doctor` accepts the state (with the fixes it names), and
//! `epic resume` finishes the epic without running a finished stage again.

use std::time::Duration;

use serde_json::Value;

use crate::common::{kill_group, TestEnv};
use crate::test_crash::recover;
use crate::test_epic::{dev_behaviour, epic_project, status, story};

const KEYS: [&str; 4] = [
    "3-1-api-client",
    "3-2-storage",
    "3-3-sync-engine",
    "3-4-api-retries",
];

fn journal(env: &TestEnv, repo: &std::path::Path, session: &str) -> Vec<Value> {
    env.bmad(repo, &["journal", session, "--json"])
        .success()
        .json()
        .as_array()
        .cloned()
        .unwrap_or_default()
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
    // Odd rounds kill at an instant counted from the launch (inside start-up as well);
    // even rounds once a dev step has begun, so however slow the machine, kills land inside
    // the run's steps too.
    let dev_calls = || {
        std::fs::read_to_string(env.root().join("home/agent/dev.log"))
            .map(|log| log.lines().count())
            .unwrap_or(0)
    };
    let (mut kills, mut kills_in_steps) = (0, 0);
    for round in 0..10u64 {
        let calls_before = dev_calls();
        let mut child = env.spawn_group(&repo, &["epic", "run", "3", "--parallel", "2"]);
        if round % 2 == 0 {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while dev_calls() == calls_before
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
            let again = env.bmad(&repo, &["epic", "status", "3"]);
            assert!(
                exit.success(),
                "epic run after {kills} kills ended {exit}: {}{}",
                again.stdout,
                again.stderr
            );
            break;
        }
        kill_group(&mut child);
        kills += 1;
        kills_in_steps += usize::from(dev_calls() > calls_before);
        recover(&env, &repo, &format!("after kill {kills}"));
    }
    assert!(
        kills >= 3 && kills_in_steps >= 2,
        "only {kills} kills landed, {kills_in_steps} inside a step; the test is not testing"
    );
    // Then to the end: resume (with doctor's fixes between, should it stop again).
    let mut said = Vec::new();
    for attempt in 0..4 {
        let run = env.bmad(&repo, &["epic", "resume", "3"]);
        if run.code == 0 {
            said.clear();
            break;
        }
        said.push(format!("exit {}: {}{}", run.code, run.stdout, run.stderr));
        said.push(env.bmad(&repo, &["journal", "3-1-api-client"]).stdout);
        recover(&env, &repo, &format!("resume {attempt}"));
    }
    assert!(
        said.is_empty(),
        "epic resume never finished:\n{}",
        said.join("\n")
    );
    let s = status(&env, &repo);
    for key in KEYS {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
    }
    assert_eq!(s["finished"], true);

    // No story started again once done, in the epic's journal.
    let epic = journal(&env, &repo, "epic-3");
    for key in KEYS {
        let done = positions(&epic, "story_stage", key, Some("done"));
        let started = positions(&epic, "story_stage", key, Some("started"));
        let first_done = *done.first().unwrap_or_else(|| panic!("{key} never done"));
        assert!(
            started.iter().all(|&i| i < first_done),
            "{key} started again after it was done: {epic:#?}"
        );
    }
    // No step of a story's pipeline started again once it completed, in its own journal.
    for key in KEYS {
        let events = journal(&env, &repo, key);
        let steps: std::collections::BTreeSet<String> = events
            .iter()
            .filter_map(|e| e["step"].as_str().map(str::to_owned))
            .collect();
        for step in steps {
            let completed = positions(&events, "step_completed", &step, None);
            let Some(&first) = completed.first() else {
                continue;
            };
            let restarted = positions(&events, "step_started", &step, None);
            assert!(
                restarted.iter().all(|&i| i < first),
                "{key}: step {step} started again after it completed"
            );
        }
    }
}

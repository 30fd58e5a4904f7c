//! The epic runner on a BMAD v4 project (seed 001's flow): the SM's draft goes to QA, which
//! approves it or returns findings the SM revises (at most three times, then a human
//! decides); then the Dev implements and QA reviews. Every status change an agent makes is
//! signed into stories.json on the epic's branch, agent and time, in order.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{copy_dir, read, TestEnv};
use crate::test_epic::{calls_to, story};
use crate::test_supervisor::{agent_behaviour, FAKE_CLAUDE};

/// Finds the story's file and sets the line under `## Status`.
const PRELUDE: &str = "key=$BMAD_ARGS\nf=\"docs/stories/$key.md\"\nset_status() { awk -v s=\"$1\" 'p && NF { print s; p=0; next } /^## Status$/ { p=1 } { print }' \"$f\" > \"$f.new\" && mv \"$f.new\" \"$f\"; }\n";

pub(crate) fn v4_project(env: &TestEnv) -> PathBuf {
    let repo = env.repo("garden");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/epic/v4");
    copy_dir(&src, &repo);
    env.git(&repo, &["add", "-A"]);
    env.git(
        &repo,
        &["commit", "-q", "-m", "bmad v4 project with epic 4"],
    );
    env.executable("claude", FAKE_CLAUDE);
    behaviour(
        env,
        "dev",
        &format!(
            "echo \"$key\" >> \"$HOME/agent/dev.log\"\n{}set_status 'Ready for Review'\nresult \"implemented $key\"\n",
            crate::test_epic::write_in_scope(
                "docs/stories/$key.md",
                "src/$(echo \"$key\" | cut -d. -f3 | cut -d- -f1)/$key.rs"
            )
        ),
    );
    behaviour(
        env,
        "review-1",
        "set_status Done\nresult 'Outcome: Approve'\n",
    );
    behaviour(
        env,
        "more-stories",
        "echo \"$BMAD_ARGS\" > \"$HOME/agent/asked-sm.txt\"\nresult 'Every story of the epic is done; nothing is missing.\\nEPIC COMPLETE'\n",
    );
    repo
}

pub(crate) fn behaviour(env: &TestEnv, step: &str, body: &str) {
    agent_behaviour(env, step, &format!("{PRELUDE}{body}"));
}

fn epic_status(env: &TestEnv, repo: &Path) -> Value {
    env.bmad(repo, &["epic", "status", "4", "--json"])
        .success()
        .json()
}

#[test]
fn a_v4_draft_is_approved_after_a_revision_and_every_status_change_is_signed() {
    let env = TestEnv::new();
    let repo = v4_project(&env);
    behaviour(
        &env,
        "approve-1",
        "result '**Outcome:** Changes Requested\\n- [ ] [High] AC 1 is not testable [docs/stories/4.1.api-client.md:14]'\n",
    );
    behaviour(
        &env,
        "revise-1",
        "echo \"$BMAD_FINDINGS\" > \"$HOME/agent/revise-prompt.txt\"\nsed -i 's/^1. It works.$/1. GET \\/plants returns 200 within 2 s (a test calls it)./' \"$f\"\nresult revised\n",
    );
    behaviour(
        &env,
        "approve-2",
        "set_status Approved\nresult 'Outcome: Approve'\n",
    );
    env.bmad(&repo, &["epic", "run", "4", "--parallel", "2"])
        .success();
    let s = epic_status(&env, &repo);
    for key in [
        "4.1.api-client",
        "4.2.storage",
        "4.3.sync-engine",
        "4.4.api-retries",
    ] {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
    }
    // The acceptance tests were written first, from the epic's criteria; the SM revised
    // with QA's findings; QA then approved; only then did the Dev start.
    assert!(read(&env.root(), "home/agent/revise-prompt.txt").contains("AC 1 is not testable"));
    let calls = read(&env.root(), "home/agent/calls.log");
    // One line per call starts `<step> <attempt> <prompt>`; prompts run over more lines.
    let steps: Vec<&str> = calls
        .lines()
        .filter(|l| l.contains("story 4.1.api-client"))
        .filter(|l| {
            l.split(' ')
                .nth(1)
                .is_some_and(|a| a.parse::<u32>().is_ok())
        })
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "acceptance",
            "approve-1",
            "revise-1",
            "approve-2",
            "dev",
            "review-1"
        ],
        "{calls}"
    );
    // With nothing left, the SM was asked about the epic and said it is complete.
    assert_eq!(read(&env.root(), "home/agent/asked-sm.txt").trim(), "4");
    assert_eq!(s["closed"]["complete"], true, "{s:#}");
    let text = env.bmad(&repo, &["epic", "status", "4"]).success().stdout;
    assert!(
        text.contains("close-out: the SM says the epic is complete"),
        "{text}"
    );
    assert_eq!(s["finished"], true, "{s:#}");
    // Stories already approved went straight to the Dev.
    assert!(!calls
        .lines()
        .any(|l| l.starts_with("approve-") && l.contains("4.2.storage")));

    // stories.json on the epic's branch: order kept, every change signed by its agent.
    let json: Value =
        serde_json::from_str(&env.git(&repo, &["show", "bmad/epic-4:docs/stories/stories.json"]))
            .unwrap();
    let names: Vec<&str> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "4.1.api-client.md",
            "4.2.storage.md",
            "4.3.sync-engine.md",
            "4.4.api-retries.md"
        ]
    );
    let api = &json[0];
    assert_eq!(api["status"], "Done", "{api:#}");
    let signed: Vec<(String, String)> = api["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|s| {
            assert!(s["timestamp"].as_str().unwrap().ends_with('Z'), "{s}");
            (
                s["agent"].as_str().unwrap().to_owned(),
                s["action"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("qa agent (approve-2)", "status Draft → Approved"),
        ("dev agent (dev)", "status Approved → Ready for Review"),
        ("qa agent (review-1)", "status Ready for Review → Done"),
    ];
    assert_eq!(
        signed,
        expected
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>(),
        "{api:#}"
    );
    // The story branches leave stories.json alone: the stacked branch merged cleanly.
    env.git(
        &repo,
        &[
            "merge-base",
            "--is-ancestor",
            "bmad/4.2.storage",
            "bmad/4.3.sync-engine",
        ],
    );
}

#[test]
fn a_draft_qa_never_approves_goes_to_a_human_after_three_revisions() {
    let env = TestEnv::new();
    let repo = v4_project(&env);
    // A new finding every round (the same one twice would be a stall, asked at once).
    for round in 1..=4 {
        behaviour(
            &env,
            &format!("approve-{round}"),
            "result \"Outcome: Changes Requested\\n- [ ] [High] AC $BMAD_ATTEMPT$BMAD_STEP has no test\"\n",
        );
    }
    for round in 1..=3 {
        behaviour(
            &env,
            &format!("revise-{round}"),
            "echo revised >> \"$f\"\nresult revised\n",
        );
    }
    env.bmad(&repo, &["epic", "run", "4", "--stories", "4.1"])
        .code(3);
    let s = epic_status(&env, &repo);
    let api = story(&s, "4.1.api-client");
    assert_eq!(api["stage"], "gated", "{s:#}");
    assert!(
        api["state"]["reason"]
            .as_str()
            .unwrap()
            .contains("at draft-converged"),
        "{api:#}"
    );
    assert_eq!(calls_to(&env, "approve-"), 4);
    assert_eq!(calls_to(&env, "revise-"), 3);
    assert_eq!(calls_to(&env, "dev "), 0);
}

#[test]
fn an_sm_that_wants_more_stories_parks_the_epic_at_its_completion_gate() {
    let env = TestEnv::new();
    let repo = v4_project(&env);
    behaviour(
        &env,
        "approve-1",
        "set_status Approved\nresult 'Outcome: Approve'\n",
    );
    behaviour(
        &env,
        "more-stories",
        "cp docs/stories/4.2.storage.md docs/stories/4.5.export.md\nresult 'Exports are missing.\\nMORE STORIES: 4.5.export.md'\n",
    );
    let run = env
        .bmad(&repo, &["epic", "run", "4", "--parallel", "2"])
        .code(3);
    assert!(run.stdout.contains("needs more stories"), "{}", run.stdout);
    let s = epic_status(&env, &repo);
    assert_eq!(s["closed"]["complete"], false, "{s:#}");
    assert_eq!(s["gate"]["id"], "completion", "{s:#}");
    assert!(
        s["gate"]["question"]
            .as_str()
            .unwrap()
            .contains("waits on branch bmad/epic-4-close"),
        "{s:#}"
    );
    // The drafted story waits on the close-out branch; main did not move.
    env.git(
        &repo,
        &[
            "cat-file",
            "-e",
            "bmad/epic-4-close:docs/stories/4.5.export.md",
        ],
    );
    assert!(!repo.join("docs/stories/4.5.export.md").exists());
    // A human finishes the epic as it is.
    env.bmad(
        &repo,
        &["answer", "continue", "-s", "epic-4", "-m", "later"],
    )
    .success();
    assert_eq!(epic_status(&env, &repo)["finished"], true);
}

#[test]
fn a_dry_run_prints_every_action_and_does_none() {
    let env = TestEnv::new();
    let repo = v4_project(&env);
    let run = env
        .bmad(
            &repo,
            &[
                "epic",
                "run",
                "4",
                "--dry-run",
                "--gates",
                "per-epic",
                "--budget-usd",
                "30",
            ],
        )
        .success();
    for action in [
        "would: start session 4.3.sync-engine on branch bmad/4.3.sync-engine",
        "would first: have an agent of its own write failing acceptance tests from its criteria",
        "park at the scope gate before the first story (git bmad answer continue -s epic-4)",
        "after 4.1.api-client: check its changed files against its dependents' touches",
        "start no story once the epic has spent $30.00",
        "when every story is done, in session epic-4-close: ask the SM whether the epic needs more stories",
        "park at the completion gate",
    ] {
        assert!(run.stdout.contains(action), "{action}: {}", run.stdout);
    }
    let json = env
        .bmad(&repo, &["epic", "run", "4", "--dry-run", "--json"])
        .success()
        .json();
    assert_eq!(json["dry_run"], true);
    assert!(
        !json["epic_actions"].as_array().unwrap().is_empty(),
        "{json:#}"
    );
    // Nothing happened: no agent, no worktree, no git-bmad ref.
    assert!(!env.root().join("home/agent/calls.log").exists());
    assert_eq!(env.git(&repo, &["worktree", "list"]).lines().count(), 1);
    assert_eq!(
        env.git(&repo, &["for-each-ref", "refs/bmad", "refs/notes"]),
        ""
    );
}

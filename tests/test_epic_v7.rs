//! The epic runner on a BMAD v7 ticket tree (fixtures/bmad/v7): tickets scheduled by `after`
//! (met in review), built by `bmad-build-auto ticket <ref>` up to `built`, marked `done` by
//! git-bmad only after its own verification, and what only a person may settle (`hitl`,
//! `plan_checkpoint`, `risk`, `done_checkpoint`, a blocked build) waiting at the epic's gates.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{copy_dir, read, TestEnv};
use crate::test_epic::{story, write_in_scope};
use crate::test_supervisor::{agent_behaviour, FAKE_CLAUDE};

const PRICING: &str = "_bmad-output/initiative-shop/epic-pricing-rules";

pub(crate) fn project(env: &TestEnv) -> PathBuf {
    let repo = env.repo("shop");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/bmad/v7");
    copy_dir(&src, &repo);
    // What a run needs beside the tree: the skills it calls (stand-ins), a test command.
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/epic/v7"),
        &repo,
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "bmad v7 project"]);
    repo
}

/// bmad-build-auto as it works on a ticket: it finds the ticket's plan (`tickets.py find`
/// names where it is or goes), implements, and ends at `built` in the plan, creating the plan
/// from its template when there is none; on a halt it marks the ticket blocked with its
/// condition (`tickets.py mark <ref> blocked --blocked <condition>`).
pub(crate) fn build_auto(halt_on: &str) -> String {
    let plans = format!(
        "case \"$key\" in\n  1.1) plan={PRICING}/story-price-rules-engine-plan.md ;;\n  1.2) plan={PRICING}/story-apply-and-refuse-discount-codes-plan.md ;;\n  1.3) plan={PRICING}/spike-tax-providers-plan.md ;;\n  1.4) plan={PRICING}/bug-rounding-on-totals-plan.md ;;\nesac\n"
    );
    // A halt on a ticket with no plan: the plan `tickets.py mark <ref> blocked --blocked`
    // creates.
    let halt = format!(
        "if [ \"$key\" = \"{halt_on}\" ]; then\n  printf -- '---\\ntitle: \"Rounding on totals\"\\nticket: 4\\nstatus: blocked\\nblocked_at: \"2026-11-28\"\\nblocked_reason: \"which rounding mode: half-even or half-up?\"\\n---\\n' > \"$plan\"\n  result 'halted: which rounding mode'\n  exit 0\nfi\n"
    );
    let new_plan = "[ -f \"$plan\" ] || printf -- '---\\ntitle: \"%s\"\\nticket: %s\\nstatus: draft\\n---\\n\\n# Plan\\n' \"$key\" \"${key#*.}\" > \"$plan\"\n";
    format!(
        "key=${{BMAD_ARGS#ticket }}\necho \"$key\" >> \"$HOME/agent/build.log\"\n{plans}{halt}{new_plan}{}sed -i 's/^status: .*/status: built/' \"$plan\"\nprintf '\\n## Auto Run Result\\n\\nBuilt.\\n' >> \"$plan\"\nresult \"built $key\"\n",
        write_in_scope("$plan", "src/ticket-$key.rs")
    )
}

/// A person sends built ticket 1.1 back to be built again (its plan `ready-for-dev`).
pub(crate) fn send_back_1_1(env: &TestEnv, repo: &Path) {
    let plan = format!("{PRICING}/story-price-rules-engine-plan.md");
    let text = read(repo, &plan).replacen("status: built", "status: ready-for-dev", 1);
    std::fs::write(repo.join(&plan), text).unwrap();
    env.git(repo, &["commit", "-qam", "1.1 goes back to be built again"]);
}

fn epic_status(env: &TestEnv, repo: &Path) -> Value {
    env.bmad(repo, &["epic", "status", "1", "--json"])
        .success()
        .json()
}

#[test]
fn a_v7_epic_is_built_to_built_and_marked_done_only_after_git_bmads_verification() {
    let env = TestEnv::new();
    let repo = project(&env);
    env.executable("claude", FAKE_CLAUDE);
    agent_behaviour(&env, "build", &build_auto("1.4"));
    agent_behaviour(&env, "review-1", "result 'Outcome: Approve'\n");

    let plan = env
        .bmad(&repo, &["epic", "plan", "1", "--json"])
        .success()
        .json();
    assert_eq!(plan["plan"]["era"], "v7", "{plan:#}");
    let evidence = plan["plan"]["era_evidence"].as_str().unwrap_or_default();
    assert!(evidence.starts_with("a ticket tree at "), "{plan:#}");
    assert_eq!(plan["plan"]["pipeline"], "bmad-ticket-build");
    let asks = plan["plan"]["stories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "1.3")
        .unwrap();
    assert_eq!(asks["action"], "run", "{asks:#}");
    let why = asks["asks_first"].as_str().unwrap_or_default();
    assert!(
        why.contains("hitl") && why.contains("plan_checkpoint"),
        "{asks:#}"
    );

    // A built ticket waits for a person to call it done: it is no new work, and what
    // comes after it may start (it is past review).
    let held = plan["plan"]["stories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "1.1")
        .unwrap();
    assert_eq!(held["action"], "hold", "{held:#}");
    assert!(
        held["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("built"),
        "{held:#}"
    );

    // The halted ticket waits for a person: exit 3.
    let run = env.bmad(&repo, &["epic", "run", "1"]).code(3);
    assert!(run.stderr.contains("1.4 is blocked"), "{}", run.stderr);
    let s = epic_status(&env, &repo);
    assert_eq!(story(&s, "1.2")["stage"], "done", "{s:#}");
    let blocked = story(&s, "1.4");
    assert_eq!(blocked["stage"], "blocked", "{s:#}");
    assert!(
        blocked["state"]["reason"]
            .as_str()
            .unwrap()
            .contains("which rounding mode"),
        "{s:#}"
    );
    // The ticket a person takes part in waits at the epic's gate, unattended run or not.
    assert_eq!(s["gate"]["id"], "person:1.3", "{s:#}");
    assert!(
        s["gate"]["question"].as_str().unwrap().contains("hitl"),
        "{s:#}"
    );
    // The agent was asked in BMAD's form, and never for the tickets waiting for a person.
    let calls = read(&env.root(), "home/agent/calls.log");
    assert!(calls.contains("/bmad-build-auto ticket 1.2"), "{calls}");
    let built = read(&env.root(), "home/agent/build.log");
    assert!(!built.lines().any(|l| l == "1.3" || l == "1.1"), "{built}");

    // The done ticket's plan on its branch: the agent's `built`, then git-bmad's `done`.
    let plan = "story-apply-and-refuse-discount-codes-plan.md";
    let text = env.git(&repo, &["show", &format!("bmad/1.2:{PRICING}/{plan}")]);
    assert!(
        text.contains("status: done\n") && text.contains("## Auto Run Result"),
        "{text}"
    );
    // The main worktree's tree is as it was: nothing is marked there.
    assert_eq!(env.git(&repo, &["status", "--porcelain"]).trim(), "");
    assert!(read(
        &repo,
        &format!("{PRICING}/story-price-rules-engine-plan.md")
    )
    .contains("status: built"));

    // A person says go and the run goes on: it builds the ticket (the halted one still waits).
    env.bmad(&repo, &["answer", "continue", "-s", "epic-1"])
        .code(3);
    assert!(read(&env.root(), "home/agent/build.log")
        .lines()
        .any(|l| l == "1.3"));
    let s = epic_status(&env, &repo);
    assert_eq!(story(&s, "1.3")["stage"], "done", "{s:#}");
}

#[test]
fn work_pauses_after_a_done_checkpoint_until_a_person_says_continue() {
    let env = TestEnv::new();
    let repo = project(&env);
    env.executable("claude", FAKE_CLAUDE);
    agent_behaviour(&env, "build", &build_auto("none"));
    agent_behaviour(&env, "review-1", "result 'Outcome: Approve'\n");
    let toml = format!("{PRICING}/tickets.toml");
    let text = read(&repo, &toml).replacen(
        "risk = \"low\"\n",
        "risk = \"low\"\ndone_checkpoint = true\n",
        1,
    );
    std::fs::write(repo.join(&toml), text).unwrap();
    env.git(&repo, &["commit", "-qam", "a checkpoint after the engine"]);
    send_back_1_1(&env, &repo);

    env.bmad(&repo, &["epic", "run", "1", "--stories", "1.1,1.2"])
        .code(3);
    let s = epic_status(&env, &repo);
    assert_eq!(story(&s, "1.1")["stage"], "done", "{s:#}");
    assert_eq!(story(&s, "1.2")["state"]["stage"], "", "not started: {s:#}");
    assert_eq!(s["gate"]["id"], "done-checkpoint:1.1", "{s:#}");

    env.bmad(&repo, &["answer", "continue", "-s", "epic-1"])
        .success();
    let s = epic_status(&env, &repo);
    assert_eq!(story(&s, "1.2")["stage"], "done", "{s:#}");
}

/// Ticket 1.1, sent back, run alone by a bmad-build-auto that ends its plan at `word`
/// instead of `built`: the run fails it (exit 5); why.
fn a_build_ending_at(env: &TestEnv, repo: &Path, word: &str) -> String {
    send_back_1_1(env, repo);
    env.executable("claude", FAKE_CLAUDE);
    let script = build_auto("none").replace(
        "sed -i 's/^status: .*/status: built/'",
        &format!("sed -i 's/^status: .*/status: {word}/'"),
    );
    agent_behaviour(env, "build", &script);
    agent_behaviour(env, "review-1", "result 'Outcome: Approve'\n");
    env.bmad(repo, &["epic", "run", "1", "--stories", "1.1"])
        .code(5);
    let s = epic_status(env, repo);
    let failed = story(&s, "1.1");
    assert_eq!(failed["stage"], "failed", "{s:#}");
    failed["state"]["reason"].as_str().unwrap().to_owned()
}

#[test]
fn a_v7_build_that_never_reaches_built_is_not_done() {
    let env = TestEnv::new();
    let repo = project(&env);
    // An agent that writes code and says it finished, but leaves the plan in progress.
    let why = a_build_ending_at(&env, &repo, "in-progress");
    assert!(why.contains("says in-progress"), "{why}");
    let text = env.git(
        &repo,
        &[
            "show",
            &format!("bmad/1.1:{PRICING}/story-price-rules-engine-plan.md"),
        ],
    );
    assert!(!text.contains("status: done"), "{text}");
}

#[test]
fn a_cycle_among_finished_tickets_holds_nothing_in_the_plan() {
    let env = TestEnv::new();
    let repo = project(&env);
    // Two done tickets that name each other (people write such `after`s after the fact).
    let toml = format!("{PRICING}/tickets.toml");
    let text = read(&repo, &toml).replacen("after = []", "after = [2]", 1);
    std::fs::write(repo.join(&toml), text).unwrap();
    // The pulled leaf file's `after` is the ticket's.
    let leaf = format!("{PRICING}/story-price-rules-engine.md");
    let text = read(&repo, &leaf).replacen("after: []", "after: [2]", 1);
    std::fs::write(repo.join(&leaf), text).unwrap();
    for plan in [
        "story-price-rules-engine-plan.md",
        "story-apply-and-refuse-discount-codes-plan.md",
    ] {
        let path = repo.join(PRICING).join(plan);
        let text = std::fs::read_to_string(&path).unwrap();
        let done = text.replacen("status: built", "status: done", 1).replacen(
            "status: in-progress",
            "status: done",
            1,
        );
        std::fs::write(&path, done).unwrap();
    }
    let plan = env
        .bmad(&repo, &["epic", "plan", "1", "--json"])
        .success()
        .json();
    let action = |key: &str| {
        let s = plan["plan"]["stories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == key)
            .unwrap();
        s["action"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        (action("1.1"), action("1.2"), action("1.4")),
        ("done".into(), "done".into(), "run".into()),
        "{plan:#}"
    );
}

#[test]
fn an_agent_that_marks_its_own_ticket_done_is_not_believed() {
    let env = TestEnv::new();
    let repo = project(&env);
    // It builds, then writes the word only a person or the orchestrator may write.
    let why = a_build_ending_at(&env, &repo, "done");
    assert!(why.contains("only a person or git-bmad"), "{why}");
}

//! The playbook supervisor, end to end: real git, fake agent CLIs on PATH that print what the
//! real ones print (Claude Code's `--output-format json` result object).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{read, write, TestEnv};

/// A fake `claude`: logs the call, then runs `$HOME/agent/<step>.sh` in the worktree if there
/// is one, else creates `out/<step>`; `result TEXT` prints Claude's JSON result.
pub(crate) const FAKE_CLAUDE: &str = r#"#!/bin/sh
# Fake Claude Code for tests: `claude -p --output-format json ... -- <prompt>`
for prompt; do :; done
mkdir -p "$HOME/agent"
echo "$BMAD_STEP $BMAD_ATTEMPT $prompt" >> "$HOME/agent/calls.log"
result() {
  printf '{"type":"result","subtype":"success","is_error":false,"result":"%s","session_id":"fake-%s","total_cost_usd":0.01,"usage":{"input_tokens":10,"output_tokens":5},"permission_denials":[]}\n' "$1" "$BMAD_STEP"
}
if [ -f "$HOME/agent/$BMAD_STEP.sh" ]; then
  . "$HOME/agent/$BMAD_STEP.sh"
else
  mkdir -p out && touch "out/$BMAD_STEP"
  result "did $BMAD_STEP"
fi
"#;

pub(crate) fn agent_behaviour(env: &TestEnv, step: &str, script: &str) {
    write(
        &env.root().join("home/agent"),
        &format!("{step}.sh"),
        script,
    );
}

fn calls(env: &TestEnv) -> Vec<String> {
    std::fs::read_to_string(env.root().join("home/agent/calls.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

pub(crate) fn journal(env: &TestEnv, wt: &Path) -> Vec<Value> {
    env.bmad(wt, &["journal", "--json"])
        .success()
        .json()
        .as_array()
        .expect("events")
        .clone()
}

/// The journal as `journal.md` renders it into each commit of the session.
fn rendered_journal(env: &TestEnv, wt: &Path) -> String {
    env.bmad(wt, &["journal", "--format", "md"])
        .success()
        .stdout
}

pub(crate) fn named<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == name).collect()
}

pub(crate) fn steps_of(events: &[Value], name: &str) -> Vec<String> {
    named(events, name)
        .iter()
        .map(|e| e["step"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A project with spec-kit's commands installed for Claude (each command's text starts
/// with `speckit-<command>:`, then its arguments), a finished spec, and tests that pass once
/// `src/main.rs` exists; not yet committed.
pub(crate) fn speckit_files(env: &TestEnv) -> PathBuf {
    let repo = env.repo("proj");
    for cmd in ["plan", "tasks", "analyze", "implement", "checklist"] {
        write(
            &repo,
            &format!(".claude/commands/speckit.{cmd}.md"),
            &format!("---\ndescription: {cmd}\n---\nspeckit-{cmd}: $ARGUMENTS\n"),
        );
    }
    write(&repo, "specs/001-demo/spec.md", "# Feature: demo\n");
    // The project's tests pass once the implementation exists; `init` finds `make test`.
    write(&repo, "Makefile", "test:\n\tsh test.sh\n");
    write(
        &repo,
        "test.sh",
        "test -f src/main.rs || { echo 'FAIL: no src/main.rs'; exit 1; }\n",
    );
    repo
}

/// A project with spec-kit's commands installed for Claude, a finished spec, and git-bmad
/// set up and committed.
pub(crate) fn speckit_project(env: &TestEnv) -> PathBuf {
    let repo = speckit_files(env);
    let init = env.bmad(&repo, &["init"]).success();
    assert!(
        init.stdout
            .contains("checks.test_command: make test (found Makefile with a test target)"),
        "{}",
        init.stdout
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "spec and git-bmad"]);
    env.executable("claude", FAKE_CLAUDE);
    env.executable(
        "gh",
        "#!/bin/sh\necho \"https://github.com/example/proj/pull/1 ($*)\"\n",
    );
    agent_behaviour(
        env,
        "plan",
        "echo plan > specs/001-demo/plan.md\nresult 'plan written'\n",
    );
    agent_behaviour(
        env,
        "tasks",
        "printf -- '- [ ] T001 build it\\n- [ ] T002 test it\\n' > specs/001-demo/tasks.md\nresult 'tasks written'\n",
    );
    // An honest agent gives a verdict when it is asked for one, as a real one does.
    agent_behaviour(
        env,
        "agreement",
        &verdict_if_asked("spec, plan and tasks agree"),
    );
    agent_behaviour(
        env,
        "implement",
        "mkdir -p src && echo 'fn main() {}' > src/main.rs\nsed -i 's/\\[ \\]/[x]/' specs/001-demo/tasks.md\nresult 'implemented'\n",
    );
    agent_behaviour(
        env,
        "agreement-check",
        &verdict_if_asked("the code still matches"),
    );
    agent_behaviour(
        env,
        "qa-plan",
        "mkdir -p specs/001-demo/checklists\necho '- [ ] it builds' > specs/001-demo/checklists/qa.md\nresult 'checklist written'\n",
    );
    agent_behaviour(env, "qa-run", &verdict_if_asked("all green"));
    repo
}

/// An agent's reply that ends with `VERDICT: PASS` only when its prompt asked for a verdict.
fn verdict_if_asked(reply: &str) -> String {
    format!(
        "case \"$prompt\" in\n  *'VERDICT: PASS or VERDICT: FAIL'*) result '{reply}\\nVERDICT: PASS' ;;\n  *) result '{reply}' ;;\nesac\n"
    )
}

pub(crate) fn start_with(
    env: &TestEnv,
    repo: &Path,
    name: &str,
    playbook: &str,
) -> (String, PathBuf) {
    let v = env
        .bmad(repo, &["start", name, "--playbook", playbook, "--json"])
        .success()
        .json();
    (
        v["session"]["id"].as_str().expect("id").to_owned(),
        PathBuf::from(v["session"]["worktree"].as_str().expect("worktree")),
    )
}

#[test]
fn auto_feature_chains_seven_auto_steps_then_gates_the_pull_request() {
    let env = TestEnv::new();
    let repo = speckit_project(&env);
    let (_, wt) = start_with(&env, &repo, "demo", "auto-feature");

    let run = env.bmad(&wt, &["run"]).code(3);
    assert!(
        run.stdout.contains("Waiting for you at step `pr`"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("needs your approval before it runs"));
    assert!(run.stdout.contains("7/8 steps are done"));
    assert!(run.stdout.contains("git bmad answer <continue|skip|abort>"));
    let events = journal(&env, &wt);
    let done = named(&events, "step_completed");
    assert_eq!(
        steps_of(&events, "step_completed"),
        [
            "plan",
            "tasks",
            "agreement",
            "implement",
            "agreement-check",
            "qa-plan",
            "qa-run"
        ]
    );
    assert!(done.iter().all(|e| e["decision"] == "auto"), "{done:#?}");
    // Every step was a fresh process given its slash command.
    let c = calls(&env);
    assert_eq!(c.len(), 7, "{c:#?}");
    assert!(c[0].starts_with("plan 1 /speckit.plan"), "{c:#?}");
    assert!(c[3].starts_with("implement 1 /speckit.implement"));
    // The agent's JSON was read into the common result shape.
    assert_eq!(done[0]["detail"]["agent_session_id"], "fake-plan");
    assert_eq!(done[0]["detail"]["tokens_in"], 10);
    assert_eq!(done[2]["detail"]["verdict"], "pass");
    // A checkpoint before and after each step.
    // The first, one before and one after each step, and the gate's.
    assert_eq!(named(&events, "checkpoint").len(), 1 + 14 + 1);
    assert_eq!(
        env.bmad(&wt, &["status", "--json"]).success().json()["state"]["status"],
        "gated"
    );

    let run = env
        .bmad(&wt, &["answer", "continue", "-m", "ship it"])
        .success();
    assert!(
        run.stdout
            .contains("Completed playbook auto-feature: 8/8 steps finished"),
        "{}",
        run.stdout
    );
    let events = journal(&env, &wt);
    let pr = *named(&events, "step_completed").last().unwrap();
    assert_eq!(pr["step"], "pr");
    assert!(pr["detail"]["stdout"]
        .as_str()
        .unwrap()
        .contains("pull/1 (pr create --fill --draft)"));
    let answered = named(&events, "gate_answered")[0];
    assert_eq!(
        (answered["decision"].as_str(), answered["response"].as_str()),
        (Some("human"), Some("ship it"))
    );
    assert_eq!(named(&events, "run_completed").len(), 1);
    // The rendered journal, as the session's commits carry it for the pull request diff.
    let md = rendered_journal(&env, &wt);
    assert!(md.contains("| step_completed | implement | auto |"), "{md}");
    assert!(
        md.contains("| gate_answered | pr | human |") && md.contains("ship it"),
        "{md}"
    );
    // Every invariant still holds after a whole run.
    env.bmad(&repo, &["doctor"]).success();
    // Running again does nothing more.
    let again = env.bmad(&wt, &["run"]).success();
    assert!(again.stdout.contains("Completed"));
    assert_eq!(calls(&env).len(), 7);
}

#[test]
fn a_judging_step_that_gives_no_verdict_is_never_done() {
    let env = TestEnv::new();
    let repo = speckit_project(&env);
    // The QA agent runs nothing, writes nothing and says all is well, without a verdict.
    agent_behaviour(&env, "qa-run", "result 'Looks great to me!'\n");
    let (_, wt) = start_with(&env, &repo, "lazy-qa", "auto-validate");
    let run = env.bmad(&wt, &["run"]).code(3);
    assert!(
        run.stdout.contains("Waiting for you at step `qa-run`"),
        "{}",
        run.stdout
    );
    let events = journal(&env, &wt);
    assert!(!steps_of(&events, "step_completed").contains(&"qa-run".to_owned()));
    let escalated = named(&events, "escalated");
    assert_eq!(escalated.len(), 1, "{events:#?}");
    assert_eq!(escalated[0]["trigger"], "verdict_missing");
    assert!(escalated[0]["detail"]["reason"]
        .as_str()
        .unwrap()
        .contains("must end with a verdict"));
}

/// Run auto-feature with `implement` doing `behaviour`; it must park at implement, escalated
/// for a postcondition. Returns the session and what `run` printed.
fn implement_escalated(env: &TestEnv, behaviour: &str, name: &str) -> (String, PathBuf, String) {
    let repo = speckit_project(env);
    agent_behaviour(env, "implement", behaviour);
    let (id, wt) = start_with(env, &repo, name, "auto-feature");
    let run = env.bmad(&wt, &["run"]).code(3);
    assert!(
        run.stdout
            .contains("Waiting for you at step `implement` (postcondition_failure"),
        "{}",
        run.stdout
    );
    (id, wt, run.stdout)
}

#[test]
fn an_agent_that_ticks_every_task_while_the_tests_fail_is_not_done() {
    let env = TestEnv::new();
    // Every task ticked, a diff, "all tests pass": but the code the tests need is missing.
    let (_, wt, stdout) = implement_escalated(
        &env,
        "echo wip > notes.txt\nsed -i 's/\\[ \\]/[x]/' specs/001-demo/tasks.md\nresult 'All tasks done, all tests pass.'\n",
        "liar",
    );
    assert!(
        stdout.contains("postcondition tests_pass failed")
            && stdout.contains("FAIL: no src/main.rs"),
        "git-bmad ran the tests itself and shows their output:\n{stdout}"
    );
    let events = journal(&env, &wt);
    assert!(!steps_of(&events, "step_completed").contains(&"implement".to_owned()));
}

#[test]
fn a_qa_planner_that_writes_no_checklist_is_not_done() {
    let env = TestEnv::new();
    let repo = speckit_project(&env);
    // An old checklist is already there: it is no evidence of this step's work.
    write(&repo, "specs/001-demo/checklists/old.md", "- [x] old\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "an old checklist"]);
    agent_behaviour(&env, "qa-plan", "result 'Checklist written.'\n");
    let (_, wt) = start_with(&env, &repo, "no-list", "auto-validate");
    // Twice the same nothing is a stall: a human is asked.
    let run = env.bmad(&wt, &["run"]).code(3);
    assert!(
        run.stdout
            .contains("Waiting for you at step `qa-plan` (stall")
            && run.stdout.contains("the step wrote no checklist"),
        "{}",
        run.stdout
    );
    let events = journal(&env, &wt);
    assert_eq!(steps_of(&events, "step_started"), ["qa-plan", "qa-plan"]);
    assert!(steps_of(&events, "step_completed").is_empty());
}

#[test]
fn validate_warns_about_steps_nothing_checks_and_strict_refuses_them() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.bmad(&repo, &["init"]).success();
    write(
        &repo,
        ".bmad/playbooks/trusting.yaml",
        "steps:\n  - {id: build, command: build the feature}\n  - {id: check, command: make check, runner: shell}\n",
    );
    let run = env
        .bmad(&repo, &["playbook", "validate", "trusting"])
        .success();
    assert!(
        run.stdout
            .contains("warning: build: nothing checks this step")
            && run.stdout.contains("valid trusting"),
        "{}",
        run.stdout
    );
    let strict = env
        .bmad(&repo, &["playbook", "validate", "--strict", "trusting"])
        .code(2);
    assert!(
        strict
            .stdout
            .contains("error: build: nothing checks this step")
            && strict.stdout.contains("invalid trusting"),
        "{}",
        strict.stdout
    );
    assert!(!strict.stdout.contains("check:"), "{}", strict.stdout);

    // No test command anywhere: a bare tests_pass cannot run, so nothing runs at all.
    write(
        &repo,
        ".bmad/playbooks/tested.yaml",
        "steps:\n  - {id: build, command: build it, postconditions: [tests_pass]}\n",
    );
    let start = env
        .bmad(&repo, &["start", "t", "--playbook", "tested"])
        .code(2);
    let all = format!("{}{}", start.stdout, start.stderr);
    assert!(
        all.contains(
            "tests_pass has no command to run: set checks.test_command in .bmad/config.yaml"
        ),
        "{all}"
    );
}

#[test]
fn a_postcondition_failure_escalates_with_a_clear_question_and_continue_resumes() {
    let env = TestEnv::new();
    // The implementation leaves a task unchecked: "a test breaks".
    let (_, wt, stdout) = implement_escalated(
        &env,
        "mkdir -p src && echo 'fn main() {}' > src/main.rs\nsed -i '0,/\\[ \\]/s//[x]/' specs/001-demo/tasks.md\nresult 'implemented, but T002 fails'\n",
        "demo",
    );
    assert!(
        stdout.contains("postcondition tasks_all_checked failed: 1 of 2 tasks checked"),
        "{}",
        stdout
    );
    assert!(
        stdout.contains("implemented, but T002 fails"),
        "the agent's words are evidence"
    );
    // A failure is shown in full (confidence 0, seed 2b.7) and asks for a reason.
    assert!(
        stdout.contains("confidence 0)")
            && stdout.contains("Answer explicitly: git bmad answer <continue|retry|skip|abort>"),
        "{}",
        stdout
    );

    // The human fixes it and continues: the next step runs, and the run goes on to the PR gate.
    std::fs::write(
        wt.join("specs/001-demo/tasks.md"),
        "- [x] T001 build it\n- [x] T002 test it\n",
    )
    .unwrap();
    let run = env
        .bmad(&wt, &["answer", "continue", "-m", "fixed the test"])
        .code(3);
    assert!(run.stdout.contains("at step `pr`"), "{}", run.stdout);
    let events = journal(&env, &wt);
    let escalated = named(&events, "escalated")[0];
    assert_eq!(escalated["trigger"], "postcondition_failure");
    assert_eq!(escalated["decision"], "escalated");
    let implement_done = named(&events, "step_completed")
        .into_iter()
        .find(|e| e["step"] == "implement")
        .unwrap();
    assert_eq!(implement_done["decision"], "human");
    let after: Vec<String> = steps_of(&events, "step_started");
    assert_eq!(
        after,
        [
            "plan",
            "tasks",
            "agreement",
            "implement",
            "agreement-check",
            "qa-plan",
            "qa-run"
        ],
        "continue accepts the step; it does not run it again"
    );
    let md = rendered_journal(&env, &wt);
    assert!(
        md.contains("postcondition_failure") && md.contains("fixed the test"),
        "{md}"
    );
}

#[test]
fn an_unknown_answer_shows_the_gate_again() {
    let env = TestEnv::new();
    let repo = speckit_project(&env);
    let (_, wt) = start_with(&env, &repo, "demo", "auto-feature");
    env.bmad(&wt, &["run"]).code(3);
    let run = env.bmad(&wt, &["answer", "maybe"]).code(3);
    assert!(
        run.stderr
            .contains("\"maybe\" is not an answer to this gate"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("answer one of: continue, skip, abort"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("Waiting for you at step `pr`"),
        "{}",
        run.stdout
    );
    // Nothing was recorded; the gate is still open.
    let events = journal(&env, &wt);
    assert!(named(&events, "gate_answered").is_empty());
    env.bmad(&wt, &["answer", "skip"]).success();
    let events = journal(&env, &wt);
    assert_eq!(steps_of(&events, "step_skipped"), ["pr"]);
}

#[test]
fn gates_are_shown_as_their_confidence_says_and_status_expands_them() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.executable("claude", FAKE_CLAUDE);
    let wt = with_playbook(
        &env,
        &repo,
        "gated",
        "name: gated\nsteps:\n  - {id: s1, command: do s1}\n  - {id: g1, command: do g1, autonomy: always_gate}\n  - {id: g2, command: do g2, autonomy: always_gate}\n",
    );
    // The run's own word only (a clean s1): capped at 60, a Summary.
    let run = env.bmad(&wt, &["run", "gated"]).code(3);
    assert!(
        run.stdout
            .contains("at step `g1` (always_gate, 1/3 steps finished, confidence 60)"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("What happened:") && run.stdout.contains("s1: done"));
    assert!(run.stdout.contains("Details: git bmad status --gate"));
    // The human approved, and everything ran clean: 100, Minimal — one line and a confirm.
    let run = env.bmad(&wt, &["answer", "continue"]).code(3);
    assert!(
        run.stdout
            .contains("at step `g2` (always_gate, 2/3 steps finished, confidence 100)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("Confirm: git bmad answer continue"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("What happened:"), "{}", run.stdout);
    // Any gate expands to full details.
    let full = env.bmad(&wt, &["status", "--gate"]).success();
    assert!(
        full.stdout.contains("What happened:") && full.stdout.contains("g1: done"),
        "{}",
        full.stdout
    );
    assert!(full.stdout.contains("Answer explicitly"), "{}", full.stdout);
    let gate = env
        .bmad(&wt, &["status", "--gate", "--json"])
        .success()
        .json();
    assert_eq!(
        (
            gate["step"].as_str(),
            gate["format"].as_str(),
            gate["confidence"].as_u64()
        ),
        (Some("g2"), Some("minimal"), Some(100))
    );
    let events = journal(&env, &wt);
    let formats: Vec<&Value> = named(&events, "gate_opened")
        .iter()
        .map(|e| &e["detail"]["confidence"]["checkpoint_format"])
        .collect();
    assert_eq!(formats, ["summary", "minimal"]);
    env.bmad(&wt, &["answer", "continue"]).success();
}

#[test]
fn a_run_parked_at_a_gate_survives_gc_prune_now() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.executable("claude", FAKE_CLAUDE);
    let (_, wt) = env.start(&repo, "parked");
    // A playbook file outside the repository: its text is in no commit and no checkpoint,
    // only in the object the run stored.
    write(
        &env.root(),
        "parked.yaml",
        "name: parked\nsteps:\n  - {id: g1, command: do g1, autonomy: always_gate}\n  - {id: s2, command: do s2}\n",
    );
    let file = env.root().join("parked.yaml");
    env.bmad(&wt, &["run", file.to_str().unwrap()]).code(3);
    std::fs::remove_file(&file).unwrap();
    env.git(&repo, &["gc", "-q", "--prune=now"]);
    env.bmad(&repo, &["doctor"]).success();
    env.bmad(&wt, &["answer", "continue"]).success();
    let events = journal(&env, &wt);
    assert_eq!(named(&events, "run_completed").len(), 1);
}

#[test]
fn doctor_names_a_parked_runs_playbook_that_is_gone() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.executable("claude", FAKE_CLAUDE);
    let (id, wt) = env.start(&repo, "lost");
    write(
        &env.root(),
        "lost.yaml",
        "name: lost\nsteps:\n  - {id: g1, command: do g1, autonomy: always_gate}\n",
    );
    let file = env.root().join("lost.yaml");
    env.bmad(&wt, &["run", file.to_str().unwrap()]).code(3);
    std::fs::remove_file(&file).unwrap();
    // Someone deletes the ref that keeps the playbook, and gc takes the object.
    let kept = env.git(
        &repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            &format!("refs/bmad/sessions/{id}/texts/"),
        ],
    );
    env.git(&repo, &["update-ref", "-d", kept.trim()]);
    env.git(&repo, &["reflog", "expire", "--expire=now", "--all"]);
    env.git(&repo, &["gc", "-q", "--prune=now"]);
    let doctor = env.bmad(&repo, &["doctor"]).code(1);
    assert!(
        doctor
            .stdout
            .contains("the playbook \"lost\" of the run started at journal event")
            && doctor
                .stdout
                .contains(&format!("git fetch <remote> {}", kept.trim()))
            && doctor.stdout.contains("git bmad answer abort"),
        "{}",
        doctor.stdout
    );
    // The run can still be ended at its gate, which needs none of its steps.
    env.bmad(&wt, &["answer", "abort"]).success();
    let events = journal(&env, &wt);
    assert_eq!(named(&events, "run_aborted").len(), 1);
    let doctor = env.bmad(&repo, &["doctor"]).success();
    assert!(
        doctor.stdout.contains("cannot be read"),
        "{}",
        doctor.stdout
    );
}

/// A playbook of six Claude steps, each proving its work with `out/<step>`.
const SIX: &str = "name: six\nsteps:\n  - {id: s1, command: do s1, postconditions: [{file_exists: out/s1}]}\n  - {id: s2, command: do s2, postconditions: [{file_exists: out/s2}]}\n  - {id: s3, command: do s3, postconditions: [{file_exists: out/s3}]}\n  - {id: s4, command: do s4, postconditions: [{file_exists: out/s4}]}\n  - {id: s5, command: do s5, postconditions: [{file_exists: out/s5}]}\n  - {id: s6, command: do s6, postconditions: [{file_exists: out/s6}]}\n";

/// Commit `.bmad/playbooks/<name>.yaml` to `repo` and start a session `<name>`; its worktree.
fn with_playbook(env: &TestEnv, repo: &Path, name: &str, yaml: &str) -> PathBuf {
    write(repo, &format!(".bmad/playbooks/{name}.yaml"), yaml);
    env.git(repo, &["add", "-A"]);
    env.git(repo, &["commit", "-q", "-m", "playbook"]);
    env.start(repo, name).1
}

/// A session in a repository with the six-step playbook and the fake `claude`.
fn six_step_session(env: &TestEnv) -> PathBuf {
    let repo = env.repo("proj");
    env.executable("claude", FAKE_CLAUDE);
    write(&repo, ".bmad/playbooks/six.yaml", SIX);
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "playbook"]);
    env.start(&repo, "crash").1
}

fn kill_during_step_five(env: &TestEnv, wt: &Path) {
    let started = env.root().join("home/agent/s5-started");
    let mut child = env
        .bmad_command(wt)
        .args(["run", "six"])
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !started.exists() {
        assert!(Instant::now() < deadline, "step 5 never started");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before step 5"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    child.kill().expect("kill -9");
    child.wait().expect("wait");
}

fn assert_each_step_completed_once(events: &[Value]) {
    assert_eq!(
        steps_of(events, "step_completed"),
        ["s1", "s2", "s3", "s4", "s5", "s6"]
    );
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "dense, no duplicates"
    );
}

/// Only a step's journaled end says it finished: one killed after its artifact exists (its
/// work half made, for all git-bmad knows) runs again, on the work it left.
#[test]
fn kill_dash_nine_in_step_five_then_resume_runs_it_again_even_when_its_artifact_exists() {
    let env = TestEnv::new();
    let wt = six_step_session(&env);
    // Step 5 does its work, then hangs; its second attempt finds the work there.
    agent_behaviour(
        &env,
        "s5",
        "[ -f out/s5 ] && echo found >> \"$HOME/agent/s5-found\"\nmkdir -p out && touch out/s5 && touch \"$HOME/agent/s5-started\"\nif [ \"$BMAD_ATTEMPT\" = 1 ]; then sleep 30; fi\nresult done\n",
    );
    kill_during_step_five(&env, &wt);
    let run = env.bmad(&wt, &["resume"]).success();
    assert!(
        run.stderr.contains("s5 runs again (crash_recovery)"),
        "{}",
        run.stderr
    );
    let events = journal(&env, &wt);
    assert_each_step_completed_once(&events);
    let retry = named(&events, "retry")
        .into_iter()
        .find(|e| e["step"] == "s5")
        .unwrap();
    assert_eq!(retry["trigger"], "crash_recovery");
    let reason = retry["detail"]["reason"].as_str().unwrap();
    assert!(reason.contains("no evidence it finished"), "{reason}");
    let c = calls(&env);
    assert_eq!(c.iter().filter(|l| l.starts_with("s5 ")).count(), 2);
    assert_eq!(c.len(), 7, "only s5 ran twice: {c:#?}");
    assert_eq!(read(&env.root(), "home/agent/s5-found"), "found\n");
}

#[test]
fn kill_dash_nine_in_step_five_then_resume_reruns_it_when_the_artifact_is_missing() {
    let env = TestEnv::new();
    let wt = six_step_session(&env);
    // Step 5 hangs before its work on the first attempt.
    agent_behaviour(
        &env,
        "s5",
        "touch \"$HOME/agent/s5-started\"\nif [ \"$BMAD_ATTEMPT\" = 1 ]; then sleep 30; fi\nmkdir -p out && touch out/s5\nresult done\n",
    );
    kill_during_step_five(&env, &wt);
    // The killed agent never finishes behind our back.
    std::thread::sleep(Duration::from_millis(300));
    assert!(!wt.join("out/s5").exists());
    let run = env.bmad(&wt, &["resume"]).success();
    assert!(
        run.stderr.contains("s5 runs again (crash_recovery)"),
        "{}",
        run.stderr
    );
    let events = journal(&env, &wt);
    assert_each_step_completed_once(&events);
    let s5_starts: Vec<u64> = named(&events, "step_started")
        .iter()
        .filter(|e| e["step"] == "s5")
        .map(|e| e["detail"]["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(s5_starts, [1, 2]);
    let c = calls(&env);
    assert_eq!(c.iter().filter(|l| l.starts_with("s5 ")).count(), 2);
    assert_eq!(c.iter().filter(|l| l.starts_with("s4 ")).count(), 1);
}

/// A crashed step runs again whether it was killed before its work or after: the old code's
/// tests passing, or its own, is no evidence the attempt finished. `diff_nonempty` on what
/// the crashed round changed says which, in the retry's checks.
#[test]
fn kill_dash_nine_before_a_steps_work_reruns_it_even_when_its_tests_pass() {
    for worked in [false, true] {
        let env = TestEnv::new();
        let repo = env.repo("proj");
        env.executable("claude", FAKE_CLAUDE);
        let six = SIX.replace(
            "postconditions: [{file_exists: out/s5}]",
            "postconditions: [diff_nonempty, {tests_pass: \"true\"}]",
        );
        write(&repo, ".bmad/playbooks/six.yaml", &six);
        env.git(&repo, &["add", "-A"]);
        env.git(&repo, &["commit", "-q", "-m", "playbook"]);
        let wt = env.start(&repo, "crash").1;
        let work = if worked { "echo code > s5.rs\n" } else { "" };
        agent_behaviour(
            &env,
            "s5",
            &format!("{work}touch \"$HOME/agent/s5-started\"\nif [ \"$BMAD_ATTEMPT\" = 1 ]; then sleep 30; fi\necho code > s5.rs\nresult done\n"),
        );
        kill_during_step_five(&env, &wt);
        let run = env.bmad(&wt, &["resume"]).success();
        let said = "s5 runs again (crash_recovery)";
        assert!(run.stderr.contains(said), "worked {worked}: {}", run.stderr);
        let events = journal(&env, &wt);
        assert_each_step_completed_once(&events);
        let s5_starts = named(&events, "step_started")
            .iter()
            .filter(|e| e["step"] == "s5")
            .count();
        assert_eq!(s5_starts, 2, "worked {worked}");
        let retry = named(&events, "retry")
            .into_iter()
            .find(|e| e["step"] == "s5")
            .unwrap();
        let diff = retry["detail"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == "diff_nonempty")
            .unwrap()
            .clone();
        assert_eq!(diff["ok"], worked, "worked {worked}: {retry:#}");
    }
}

#[test]
fn a_parallel_phase_waits_for_every_step_and_reports_all_results() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    // Each slow step waits (up to 10 s) for the other's marker: run one after the other,
    // the first would give up and fail; only steps that run at the same time both succeed.
    let waits_for = |me: &str, other: &str| {
        format!("touch {me}.ready; i=0; while [ ! -f {other}.ready ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; test -f {other}.ready && echo {me} > {me}.txt")
    };
    let playbook = format!(
        "steps:\n  - phase: checks\n    parallel:\n      - {{id: slow-a, runner: shell, command: '{}'}}\n      - {{id: broken, runner: shell, command: 'echo boom >&2; exit 4'}}\n      - {{id: slow-c, runner: shell, command: '{}'}}\n  - {{id: after, runner: shell, command: 'echo never'}}\n",
        waits_for("a", "c"),
        waits_for("c", "a")
    );
    let wt = with_playbook(&env, &repo, "par", &playbook);
    let run = env.bmad(&wt, &["run", "par"]).code(5);
    assert!(
        run.stdout.contains("step(s) broken failed"),
        "{}",
        run.stdout
    );
    let events = journal(&env, &wt);
    let mut completed = steps_of(&events, "step_completed");
    completed.sort();
    assert_eq!(completed, ["slow-a", "slow-c"]);
    let failed = named(&events, "step_failed");
    assert_eq!(failed.len(), 1);
    assert!(failed[0]["detail"]["stderr"]
        .as_str()
        .unwrap()
        .contains("boom"));
    assert!(failed[0]["detail"]["reason"]
        .as_str()
        .unwrap()
        .contains("exited with code 4"));
    let stop = named(&events, "run_failed");
    assert_eq!(stop[0]["detail"]["steps"][0], "broken");
    // The failure is reported only after both slow steps finished.
    let seq = |e: &Value| e["seq"].as_u64().unwrap();
    assert!(named(&events, "step_completed")
        .iter()
        .all(|c| seq(c) < seq(stop[0])));
    assert!(wt.join("a.txt").exists() && wt.join("c.txt").exists());
    assert!(!steps_of(&events, "step_started").contains(&"after".to_owned()));
    let starts: Vec<u64> = named(&events, "step_started")
        .iter()
        .map(|e| seq(e))
        .collect();
    let first_end = named(&events, "step_completed")
        .iter()
        .map(|e| seq(e))
        .min()
        .unwrap();
    assert!(
        starts.iter().all(|s| *s < first_end),
        "all three started before any ended"
    );
}

#[test]
fn an_unmet_precondition_after_a_skipped_step_halts_and_names_the_step() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, "specs/001-x/spec.md", "# spec\n");
    let wt = with_playbook(&env, &repo, "skip", "steps:\n  - {id: plan, runner: shell, command: 'echo p > specs/001-x/plan.md', autonomy: skip, postconditions: [plan_exists]}\n  - {id: tasks, runner: shell, command: 'echo t', preconditions: [plan_exists]}\n");
    let run = env.bmad(&wt, &["run", "skip"]).code(3);
    assert!(
        run.stdout.contains("precondition plan_exists is not met (specs/001-x/plan.md is missing); step `plan` should have produced it, and it was skipped"),
        "{}",
        run.stdout
    );
    let events = journal(&env, &wt);
    assert_eq!(steps_of(&events, "step_skipped"), ["plan"]);
    assert!(named(&events, "step_started").is_empty(), "nothing ran");
    // Create the artifact by hand and retry: the step runs.
    write(&wt, "specs/001-x/plan.md", "by hand\n");
    env.bmad(&wt, &["answer", "retry"]).success();
    assert_eq!(steps_of(&journal(&env, &wt), "step_completed"), ["tasks"]);
}

#[test]
fn validation_reports_every_violation_and_run_executes_nothing() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, "empty.yaml", "name: empty\nsteps: []\n");
    let run = env
        .bmad(&repo, &["playbook", "validate", "empty.yaml"])
        .code(2);
    assert!(
        run.stdout
            .contains("empty.yaml:2:8: error: steps: empty; a playbook needs at least one step"),
        "{}",
        run.stdout
    );

    write(
        &repo,
        "bad.yaml",
        "steps:\n  - id: plan\n    command: /speckit.plan\n    autonomy: auto_always\n  - id: build\n    runner: shell\n",
    );
    let run = env
        .bmad(&repo, &["playbook", "validate", "bad.yaml"])
        .code(2);
    assert!(run.stdout.contains("bad.yaml:4:15: error: steps[0].autonomy: \"auto_always\" is not allowed; allowed values: auto, gate_on_breaking, always_gate, skip"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("bad.yaml:5:5: error: steps[1].command: missing"),
        "{}",
        run.stdout
    );
    let json = env
        .bmad(&repo, &["playbook", "validate", "bad.yaml", "--json"])
        .code(2)
        .json();
    assert_eq!(json[0]["valid"], false);

    // A slash command with no file in the project is an error before anything runs.
    write(
        &repo,
        "slash.yaml",
        "steps:\n  - {id: plan, command: /speckit.plan}\n",
    );
    let run = env
        .bmad(&repo, &["playbook", "validate", "slash.yaml"])
        .code(2);
    assert!(run.stdout.contains("slash.yaml:2:25: error: plan.command: /speckit.plan does not exist in this project for runner claude"), "{}", run.stdout);

    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "playbooks"]);
    let (_, wt) = env.start(&repo, "v");
    let run = env.bmad(&wt, &["run", "bad.yaml"]).code(2);
    assert!(
        run.stderr
            .contains("is not a valid playbook (2 error(s)); nothing was run"),
        "{}",
        run.stderr
    );
    assert!(named(&journal(&env, &wt), "run_started").is_empty());
}

#[test]
fn builtins_validate_clean_in_a_speckit_project() {
    let env = TestEnv::new();
    let repo = speckit_project(&env);
    let run = env
        .bmad(
            &repo,
            &[
                "playbook",
                "validate",
                "--strict",
                "auto-feature",
                "auto-validate",
                "template",
            ],
        )
        .success();
    assert_eq!(run.stdout.matches("valid ").count(), 3, "{}", run.stdout);
    assert!(!run.stdout.contains("warning"), "{}", run.stdout);
    let list = env
        .bmad(&repo, &["playbook", "list", "--json"])
        .success()
        .json();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["auto-feature", "auto-validate", "template"]);
    let origin = list[0]["origin"].as_str().unwrap();
    assert!(
        origin.ends_with(".bmad/playbooks/auto-feature.yaml"),
        "{origin}"
    );
    // And the template runs as written (shell steps, one gate).
    let (_, wt) = start_with(&env, &repo, "tpl", "template");
    env.bmad(&wt, &["run"]).code(3);
    env.bmad(&wt, &["answer", "continue"]).success();
}

#[test]
fn resume_outside_a_session_says_so() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let run = env.bmad(&repo, &["resume"]).code(1);
    assert!(
        run.stderr.contains("no active session here"),
        "{}",
        run.stderr
    );
    let outside = env.root().join("home");
    let run = env.bmad(&outside, &["resume"]).code(1);
    assert!(
        run.stderr.contains("not inside a git repository"),
        "{}",
        run.stderr
    );
    // In a session without a run, resume says how to start one.
    let (_, wt) = env.start(&repo, "idle");
    let run = env.bmad(&wt, &["resume"]).code(1);
    assert!(
        run.stderr
            .contains("has no playbook run; start one with `git bmad run <playbook>`"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_missing_agent_cli_stops_the_run_before_its_first_step() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(
        &repo,
        ".bmad/playbooks/codex.yaml",
        "steps:\n  - {id: first, runner: shell, command: 'touch ran'}\n  - {id: second, runner: codex, command: do it}\n",
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "playbook"]);
    let (_, wt) = env.start(&repo, "nocodex");
    let run = env.bmad(&wt, &["run", "codex"]).code(1);
    assert!(
        run.stderr
            .contains("runner `codex` needs `codex`, which is not on PATH"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("hint: install it"), "{}", run.stderr);
    assert!(!wt.join("ran").exists());
}

#[test]
fn a_hanging_agent_is_killed_at_its_timeout() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.executable("claude", FAKE_CLAUDE);
    agent_behaviour(&env, "hang", "sleep 60 & sleep 60\nresult never\n");
    let wt = with_playbook(
        &env,
        &repo,
        "hang",
        "steps:\n  - {id: hang, command: wait forever, timeout: 1s}\n",
    );
    let started = Instant::now();
    let run = env.bmad(&wt, &["run", "hang"]).code(5);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    assert!(run.stdout.contains("step(s) hang failed"), "{}", run.stdout);
    let events = journal(&env, &wt);
    let failed = named(&events, "step_failed")[0];
    assert_eq!(failed["detail"]["exit"]["how"], "timed_out");
    assert!(failed["detail"]["reason"]
        .as_str()
        .unwrap()
        .contains("claude timed out and was killed"));
    assert_eq!(failed["trigger"], "subagent_error");
}

#[test]
fn a_key_written_into_a_file_never_enters_the_object_database_and_the_run_parks() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.executable("claude", FAKE_CLAUDE);
    let key = format!("AKIA{}", "Q7ZK2M4XW6RT5PLN");
    agent_behaviour(
        &env,
        "configure",
        &format!(
            "mkdir -p config out && printf 'DEBUG = True\\nAWS_KEY = \"{key}\"\\n' > config/settings.py && touch out/configure\nresult 'configured'\n"
        ),
    );
    // `on_error: stop` would end the run; a secret parks it at a gate instead.
    let wt = with_playbook(
        &env,
        &repo,
        "leaky",
        "steps:\n  - {id: configure, command: configure, on_error: stop, postconditions: [{file_exists: out/configure}]}\n  - {id: next, command: next}\n",
    );
    let run = env.bmad(&wt, &["run", "leaky"]).code(3);
    let events = journal(&env, &wt);
    assert!(named(&events, "step_completed").is_empty(), "{events:#?}");
    let violation = named(&events, "policy_violation")[0];
    assert_eq!(violation["step"], "configure");
    assert_eq!(violation["detail"]["hook"], "checkpoint");
    assert_eq!(violation["detail"]["ref"], "config/settings.py:2:12");
    assert_eq!(violation["detail"]["rule"], "aws-access-key-id");
    let escalated = named(&events, "escalated")[0];
    assert_eq!(escalated["trigger"], "policy_violation", "{escalated:#}");
    assert!(run.stdout.contains("config/settings.py"), "{}", run.stdout);
    // The file is still on disk, for a human to fix; no blob, tree, commit or note has it.
    assert!(read(&wt, "config/settings.py").contains(&key));
    assert!(
        !env.all_objects(&repo).contains(&key[4..]),
        "the key is in the object database"
    );
    // Taking a checkpoint by hand refuses it too.
    let manual = env.bmad(&wt, &["checkpoint", "-m", "by hand"]).code(4);
    assert!(
        manual.stderr.contains("config/settings.py:2:12"),
        "{}",
        manual.stderr
    );
    assert!(!env.all_objects(&repo).contains(&key[4..]));
    // Removed, the work goes on.
    std::fs::remove_file(wt.join("config/settings.py")).unwrap();
    env.bmad(&wt, &["checkpoint", "-m", "clean"]).success();
}

#[test]
fn ten_megabytes_of_output_are_capped_and_a_planted_key_never_reaches_a_note() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let key = format!("AKIA{}", "Q7ZK2M4XW6RT5PLN");
    write(
        &repo,
        ".bmad/playbooks/loud.yaml",
        &format!(
            "steps:\n  - {{id: loud, runner: shell, command: 'head -c 10485760 /dev/zero | tr \"\\\\0\" x; echo; echo aws_key={key}; echo done >&2'}}\n  - {{id: leak, command: leak}}\n"
        ),
    );
    env.executable("claude", FAKE_CLAUDE);
    agent_behaviour(
        &env,
        "leak",
        &format!(
            "echo 'ghp_{}' >&2\nresult 'configured key {key} for you'\n",
            "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
        ),
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "playbook"]);
    let (id, wt) = env.start(&repo, "loud");
    env.bmad(&wt, &["run", "loud"]).success();
    let events = journal(&env, &wt);
    let loud = named(&events, "step_completed")[0];
    let stdout = loud["detail"]["stdout"].as_str().unwrap();
    assert!(
        stdout.starts_with(
            "[git-bmad: stdout truncated: 10485790 bytes in all, the last 65536 kept]"
        ),
        "{}",
        &stdout[..120]
    );
    assert!(stdout.len() < 66 * 1024);
    assert_eq!(loud["detail"]["stdout_bytes"], 10485790u64);
    assert!(
        stdout.contains("[REDACTED:"),
        "the key is redacted, not dropped"
    );
    // Nothing in the notes, the checkpoints' messages, or journal.md holds a secret.
    let notes = env.git(&repo, &["log", "-p", &format!("refs/notes/bmad/{id}")]);
    assert!(notes.contains("[REDACTED:"));
    assert!(!notes.contains(&key), "the AWS key reached a note");
    assert!(
        !notes.contains("ghp_a1B2c3"),
        "the GitHub token reached a note"
    );
    let md = rendered_journal(&env, &wt);
    assert!(!md.contains(&key));
}

#[test]
fn retry_once_retries_exactly_once_and_a_stall_escalates_instead() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let wt = with_playbook(&env, &repo, "flaky", "steps:\n  - {id: flaky, runner: shell, on_error: retry_once, command: 'n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; test $n -ge 2'}\n  - {id: stuck, runner: shell, on_error: retry_once, command: 'echo same; exit 1'}\n");
    let run = env.bmad(&wt, &["run", "flaky"]).code(3);
    let events = journal(&env, &wt);
    // flaky: failed once, retried once, then done.
    let retries: Vec<&Value> = named(&events, "retry");
    assert_eq!(retries.len(), 2, "{retries:#?}");
    assert_eq!(retries[0]["step"], "flaky");
    assert_eq!(retries[0]["trigger"], "retry_once");
    assert_eq!(steps_of(&events, "step_completed"), ["flaky"]);
    // stuck: the retry printed the same and changed nothing: a stall, so a human is asked.
    assert_eq!(steps_of(&events, "stall_detected"), ["stuck"]);
    assert!(
        run.stdout
            .contains("same output and the same changes (a stall)"),
        "{}",
        run.stdout
    );
    assert_eq!(read(&wt, "count").trim(), "2");
    // A human retry that fails the same way again escalates again, it does not loop.
    let run = env.bmad(&wt, &["answer", "retry"]).code(3);
    assert!(run.stdout.contains("stall"), "{}", run.stdout);
    env.bmad(&wt, &["answer", "abort"]).success();
    let run = env.bmad(&wt, &["resume"]).code(1);
    assert!(run.stderr.contains("was aborted"), "{}", run.stderr);
}

#[test]
fn a_running_step_is_cut_at_the_runs_time_limit_whatever_its_own_timeout() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let wt = with_playbook(
        &env,
        &repo,
        "slow",
        "limits: {max_run_time: 3s}\nsteps:\n  - {id: slow, runner: shell, command: 'sleep 30', timeout: 20s, on_error: retry_once}\n",
    );
    let started = Instant::now();
    let run = env.bmad(&wt, &["run", "slow"]).code(7);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    let events = journal(&env, &wt);
    let spent: u64 = events
        .iter()
        .filter_map(|e| {
            e["duration_ms"]
                .as_u64()
                .filter(|_| e["event"] != "run_completed")
        })
        .sum();
    assert!(
        spent <= 4_500,
        "{spent} ms spent in steps under a 3 s limit: {}",
        run.stdout
    );
    assert_eq!(
        named(&events, "step_failed")[0]["detail"]["exit"]["how"],
        "timed_out"
    );
    assert_eq!(named(&events, "limit_run_time_reached").len(), 1);
}

/// A step's test run is the run's time too: once the step has used most of the run's
/// time, its tests get what is left, not the step's own timeout.
#[test]
fn a_steps_test_run_gets_only_what_is_left_of_the_runs_time() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    // A test that, given three seconds, leaves a mark.
    write(
        &repo,
        ".bmad/config.yaml",
        "checks:\n  test_command: sleep 3 && touch survived\n",
    );
    let wt = with_playbook(
        &env,
        &repo,
        "tested",
        "limits: {max_run_time: 6s}\nsteps:\n  - {id: work, runner: shell, command: 'sleep 4.5; echo x > x.txt', timeout: 10m, postconditions: [tests_pass]}\n",
    );
    let mut cmd = env.bmad_command(&wt);
    cmd.args(["run", "tested"]);
    let run = crate::common::actions::run_bounded(cmd, Duration::from_secs(60));
    assert_ne!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // About a second was left for it: it was stopped long before its mark.
    assert!(
        !wt.join("survived").exists(),
        "the test ran past the run's time"
    );
    let events = journal(&env, &wt);
    let failed = serde_json::to_string(&named(&events, "step_failed")).unwrap();
    assert!(failed.contains("timed out and was killed"), "{failed}");
}

/// A git killed with an earlier run (a kill in review) left the worktree's index locked:
/// with no git running, the next run clears it instead of failing on it.
#[test]
fn an_index_lock_a_killed_git_left_does_not_fail_the_next_run() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let wt = with_playbook(
        &env,
        &repo,
        "commit",
        "steps:\n  - {id: work, runner: shell, command: 'echo x > x.txt && git add x.txt && git commit -qm x'}\n",
    );
    let git_dir = env.git(&wt, &["rev-parse", "--absolute-git-dir"]);
    let lock = PathBuf::from(git_dir.trim()).join("index.lock");
    std::fs::write(&lock, "").unwrap();
    env.bmad(&wt, &["run", "commit"]).success();
    assert!(!lock.exists());
    assert_eq!(env.git(&wt, &["log", "-1", "--format=%s"]).trim(), "x");
}

#[test]
fn the_invocation_cap_stops_the_run_with_its_own_exit_code() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let wt = with_playbook(&env, &repo, "capped", "limits: {max_invocations: 2}\nsteps:\n  - {id: a, runner: shell, command: 'true'}\n  - {id: b, runner: shell, command: 'true'}\n  - {id: c, runner: shell, command: 'true'}\n");
    let run = env.bmad(&wt, &["run", "capped"]).code(6);
    assert!(
        run.stdout.contains("cap of 2 invocations"),
        "{}",
        run.stdout
    );
    let events = journal(&env, &wt);
    assert_eq!(steps_of(&events, "step_completed"), ["a", "b"]);
    assert_eq!(named(&events, "limit_invocations_reached").len(), 1);
}

/// A budget goes with a run that stopped: given to one that completed (or waits at a gate),
/// `resume --budget-usd` says so and changes nothing, rather than drop it unseen.
#[test]
fn resume_with_a_budget_refuses_a_run_that_did_not_stop() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let wt = with_playbook(
        &env,
        &repo,
        "done",
        "steps:\n  - {id: a, runner: shell, command: 'true'}\n",
    );
    env.bmad(&wt, &["run", "done"]).success();
    let before = journal(&env, &wt).len();
    let refused = env.bmad(&wt, &["resume", "--budget-usd", "5"]).code(2);
    assert!(
        refused.stderr.contains("did not stop (it completed)"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("orchestration.budget_usd"),
        "{}",
        refused.stderr
    );
    assert_eq!(journal(&env, &wt).len(), before, "nothing journaled");
    let no_amount = env.bmad(&wt, &["resume", "--budget-usd", "0"]).code(2);
    assert!(
        no_amount
            .stderr
            .contains("not an amount of US dollars above 0"),
        "{}",
        no_amount.stderr
    );
}

#[test]
fn a_stop_policy_failure_exits_five_and_resume_runs_the_step_again() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let wt = with_playbook(&env, &repo, "stop", "steps:\n  - {id: build, runner: shell, command: 'test -f fixed', postconditions: [{file_exists: fixed}]}\n  - {id: ship, runner: shell, command: 'echo shipped'}\n");
    env.bmad(&wt, &["run", "stop"]).code(5);
    assert_eq!(
        env.bmad(&wt, &["status", "--json"]).success().json()["state"]["status"],
        "failed"
    );
    write(&wt, "fixed", "yes\n");
    let run = env.bmad(&wt, &["resume"]).success();
    assert!(
        run.stderr.contains("build runs again (resume)"),
        "{}",
        run.stderr
    );
    assert_eq!(
        steps_of(&journal(&env, &wt), "step_completed"),
        ["build", "ship"]
    );
}

#[test]
fn two_sessions_run_side_by_side_and_merge_back_without_conflicts() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(
        &repo,
        ".bmad/playbooks/work.yaml",
        "steps:\n  - {id: work, runner: shell, command: 'echo \"$BMAD_SESSION\" > \"work-$BMAD_SESSION.txt\"'}\n",
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "playbook"]);
    env.bmad(&repo, &["hooks", "install"]).success();
    let (id_a, wt_a) = start_with(&env, &repo, "feature-a", "work");
    let (id_b, wt_b) = start_with(&env, &repo, "feature-b", "work");
    let mut a = env.bmad_command(&wt_a).arg("run").spawn().unwrap();
    let mut b = env.bmad_command(&wt_b).arg("run").spawn().unwrap();
    assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
    for wt in [&wt_a, &wt_b] {
        env.git(wt, &["add", "-A"]);
        env.git(wt, &["commit", "-q", "-m", "work and journal"]);
        assert_eq!(
            env.git(wt, &["status", "--porcelain"]),
            "",
            "the commit leaves it clean"
        );
    }
    env.git(&repo, &["merge", "-q", "--no-edit", "bmad/feature-a"]);
    env.git(&repo, &["merge", "-q", "--no-edit", "bmad/feature-b"]);
    for id in [&id_a, &id_b] {
        assert!(repo
            .join(format!(".bmad/sessions/{id}/journal.md"))
            .is_file());
        assert!(repo.join(format!("work-{id}.txt")).is_file());
    }
    assert_ne!(id_a, id_b);
}

#[test]
fn the_demo_runs_a_playbook_end_to_end_with_a_simulated_agent() {
    let env = TestEnv::new();
    let run = env
        .bmad(
            &env.root(),
            &["demo", "--dir", env.root().to_str().unwrap()],
        )
        .success();
    assert!(
        run.stdout.contains("The agent is SIMULATED"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("[simulated agent] T001 done"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("Waiting for you at step `implement`"));
    assert!(run
        .stdout
        .contains("Completed playbook auto-feature: 8/8 steps finished"));
    assert!(
        run.stdout.contains("src/greeting.sh is gone")
            && run.stdout.contains("src/greeting.sh is back")
    );
    // Nothing is left behind without --keep.
    let left: Vec<_> = std::fs::read_dir(env.root())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("git-bmad-demo-")
        })
        .collect();
    assert!(left.is_empty());
}

#[test]
fn ctrl_c_kills_the_step_saves_the_state_and_resume_goes_on() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.executable("claude", FAKE_CLAUDE);
    agent_behaviour(
        &env,
        "slow",
        "touch \"$HOME/agent/slow-started\"\nif [ \"$BMAD_ATTEMPT\" = 1 ]; then sleep 60; fi\nmkdir -p out && touch out/slow\nresult done\n",
    );
    let wt = with_playbook(&env, &repo, "slow", "steps:\n  - {id: slow, command: take your time, postconditions: [{file_exists: out/slow}]}\n");
    let mut child = env
        .bmad_command(&wt)
        .args(["run", "slow"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let marker = env.root().join("home/agent/slow-started");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the step never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A second supervisor on the same session is refused while the first runs.
    let second = env.bmad(&wt, &["resume"]).code(1);
    assert!(
        second
            .stderr
            .contains("a run is already going on in session"),
        "{}",
        second.stderr
    );
    let started = Instant::now();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the agent was not killed"
    );
    let events = journal(&env, &wt);
    assert_eq!(named(&events, "run_interrupted").len(), 1);
    assert_eq!(named(&events, "step_failed")[0]["trigger"], "interrupted");
    env.bmad(&wt, &["resume"]).success();
    let events = journal(&env, &wt);
    assert_eq!(steps_of(&events, "step_completed"), ["slow"]);
    assert_eq!(named(&events, "run_resumed").len(), 1);
}

/// A fake `claude` that logs its arguments and whether it got a key, then reports a cost.
const COSTLY_CLAUDE: &str = r#"#!/bin/sh
echo "$BMAD_STEP start $* key=${ANTHROPIC_API_KEY:-none}" >> "$HOME/agent.log"
mkdir -p out && touch "out/$BMAD_STEP"
echo "$BMAD_STEP end" >> "$HOME/agent.log"
printf '{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s","total_cost_usd":0.01,"usage":{"input_tokens":1,"output_tokens":1},"permission_denials":[]}\n'
"#;

#[test]
fn roles_get_their_agent_model_and_key_and_the_budget_and_concurrency_hold() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.executable("claude", COSTLY_CLAUDE);
    write(
        &repo,
        ".bmad/config.yaml",
        "version: 1\norchestration:\n  agents:\n    dev: {runner: claude, model: claude-sonnet-4-5, api_key_env: DEV_KEY}\n  max_concurrent_agents: 1\n  budget_usd: 0.025\n",
    );
    let wt = with_playbook(
        &env,
        &repo,
        "team",
        "name: team\nsteps:\n  - {id: a, command: do a, role: dev}\n  - parallel:\n      - {id: b, command: do b, role: dev}\n      - {id: c, command: do c, role: dev}\n  - {id: d, command: do d, role: dev}\n",
    );
    // The key's variable is not set: nothing runs, and the message names the variable.
    let run = env.bmad(&wt, &["run", "team"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr
            .contains("role `dev` takes its API key from $DEV_KEY, which is not set"),
        "{}",
        run.stderr
    );
    assert!(!env.root().join("home/agent.log").exists());

    let run = env
        .bmad_command(&wt)
        .args(["run", "team"])
        .env("DEV_KEY", "sk-test-dev-0123456789")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(6), "{stdout}");
    assert!(
        stdout.contains("spent $0.03 of the $0.025 budget"),
        "{stdout}"
    );
    let log = std::fs::read_to_string(env.root().join("home/agent.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    // One agent at a time in the parallel phase; the model and the key reach the agent.
    assert_eq!(lines.len(), 6, "{log}");
    assert!(
        lines[0].starts_with("a start -p --output-format json")
            && lines[0].contains("--model claude-sonnet-4-5")
            && lines[0].ends_with("-- do a key=sk-test-dev-0123456789"),
        "{log}"
    );
    let order: Vec<&str> = lines
        .iter()
        .map(|l| {
            l.split(" key=")
                .next()
                .unwrap()
                .split(" -p")
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(
        order,
        ["a start", "a end", "b start", "b end", "c start", "c end"]
    );
    // Three steps cost 0.03 ≥ 0.025: d never starts, and the key is in no event.
    let events = journal(&env, &wt);
    assert_eq!(named(&events, "limit_budget_reached").len(), 1);
    assert_eq!(steps_of(&events, "step_started"), ["a", "b", "c"]);
    assert_eq!(
        named(&events, "step_started")[0]["detail"]["model"],
        "claude-sonnet-4-5"
    );
    assert!(!serde_json::to_string(&events)
        .unwrap()
        .contains("sk-test-dev"));

    // A key written into the config is refused, and not repeated back.
    write(
        &repo,
        ".bmad/config.yaml",
        "version: 1\norchestration:\n  agents:\n    qa: {api_key: sk-live-SECRET}\n",
    );
    let bad = env.bmad(&repo, &["start", "another"]);
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr
            .contains("orchestration.agents.qa.api_key: API keys are never stored"),
        "{}",
        bad.stderr
    );
    assert!(!bad.stderr.contains("SECRET"), "{}", bad.stderr);
}

/// A step that writes the journal itself: `git notes` with the hooks on (refused by the
/// reference-transaction hook), and with them switched off (caught by the hash chain).
/// Either way the forged "review done by a human" is ignored and the step is gated.
#[test]
fn a_step_that_forges_the_journal_is_caught_and_its_forgery_ignored() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.bmad(&repo, &["init"]).success();
    env.bmad(&repo, &["hooks", "install"]).success();
    env.executable("claude", FAKE_CLAUDE);
    let forge = |git: &str| {
        format!(
            "mkdir -p out && touch out/work\n\
             tip=$(git rev-parse refs/bmad/sessions/$BMAD_SESSION/checkpoints)\n\
             line='{{\"seq\":90,\"ts\":\"2026-11-23T00:00:00Z\",\"session\":\"'$BMAD_SESSION'\",\"event\":\"step_completed\",\"step\":\"review\",\"decision\":\"human\"}}'\n\
             {git} notes --ref=refs/notes/bmad/$BMAD_SESSION append -m \"$line\" $tip 2>>\"$HOME/agent/forge.err\" || echo refused >> \"$HOME/agent/forge.err\"\n\
             result 'work done; review approved'\n"
        )
    };
    for (name, git) in [
        ("hooked", "git"),
        ("unhooked", "git -c core.hooksPath=/dev/null"),
    ] {
        agent_behaviour(&env, "work", &forge(git));
        write(
            &repo,
            &format!(".bmad/playbooks/{name}.yaml"),
            "steps:\n  - {id: work, command: do the work, postconditions: [{file_exists: out/work}]}\n  - {id: review, command: echo reviewed, runner: shell, autonomy: always_gate}\n",
        );
        env.git(&repo, &["add", "-A"]);
        env.git(&repo, &["commit", "-q", "-m", name]);
        let (_, wt) = start_with(&env, &repo, name, name);
        let run = env.bmad(&wt, &["run"]).code(3);
        assert!(
            run.stdout
                .contains("Waiting for you at step `work` (policy_violation"),
            "{name}: {}\n{}\n{:#?}",
            run.stdout,
            std::fs::read_to_string(env.root().join("home/agent/forge.err")).unwrap_or_default(),
            journal(&env, &wt)
        );
        let events = journal(&env, &wt);
        let violations = named(&events, "policy_violation");
        let rules: Vec<&str> = violations
            .iter()
            .map(|v| v["detail"]["rule"].as_str().unwrap())
            .collect();
        let expected = if name == "hooked" {
            "bmad-state"
        } else {
            "journal-forged"
        };
        assert!(rules.contains(&expected), "{name}: {violations:#?}");
        assert!(
            violations.iter().all(|v| v["step"] == "work"),
            "{violations:#?}"
        );
        // The forged completion of the gated review counts for nothing, here or anywhere.
        assert!(!steps_of(&events, "step_completed").contains(&"review".to_owned()));
        let status = env.bmad(&wt, &["status", "--json"]).success().json();
        let forged = status["not_written_by_git_bmad"].as_array().unwrap();
        let doctor = env.bmad(&repo, &["doctor", "--json"]).json();
        if name == "hooked" {
            assert!(forged.is_empty(), "{status}");
            let err = read(&env.root().join("home/agent"), "forge.err");
            assert!(err.contains("refused"), "{err}");
        } else {
            assert_eq!(forged[0]["seq"], 90, "{status}");
            assert!(
                doctor.to_string().contains("was not written by git-bmad"),
                "{doctor}"
            );
        }
        // The human accepts the work: the review still waits for its own approval.
        let run = env
            .bmad(&wt, &["answer", "continue", "-m", "checked"])
            .code(3);
        assert!(
            run.stdout
                .contains("Waiting for you at step `review` (always_gate"),
            "{name}: {}",
            run.stdout
        );
    }
}

/// A line forged while nothing ran (say, by an agent that then killed its supervisor): the
/// next `run` or `resume` parks before its first step, and the forged "done" counts for nothing.
#[test]
fn a_journal_forged_between_runs_parks_the_run_before_its_next_step() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.bmad(&repo, &["init"]).success();
    env.executable("claude", FAKE_CLAUDE);
    write(
        &repo,
        ".bmad/playbooks/gated.yaml",
        "steps:\n  - {id: work, command: do the work, postconditions: [{file_exists: out/work}]}\n  - {id: ship, command: echo shipped, runner: shell, autonomy: always_gate}\n",
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "playbook"]);
    let (id, wt) = start_with(&env, &repo, "forged", "gated");
    let tip = env.git(
        &wt,
        &["rev-parse", &format!("refs/bmad/sessions/{id}/checkpoints")],
    );
    // Seq 0 sorts before every real event, where a journal from before the chain would be.
    for (seq, step) in [(0, "work"), (3, "work"), (4, "ship")] {
        let line = format!(
            r#"{{"seq":{seq},"ts":"2026-11-23T00:00:00Z","session":"{id}","event":"step_completed","step":"{step}","decision":"human"}}"#
        );
        env.git(
            &wt,
            &[
                "notes",
                &format!("--ref=refs/notes/bmad/{id}"),
                "append",
                "-m",
                &line,
                tip.trim(),
            ],
        );
    }
    let run = env.bmad(&wt, &["run"]).code(3);
    assert!(
        run.stdout
            .contains("Waiting for you at step `work` (policy_violation")
            && run.stdout.contains("3 event(s) git-bmad did not write"),
        "{}",
        run.stdout
    );
    assert!(calls(&env).is_empty(), "no step ran: {:?}", calls(&env));
    let events = journal(&env, &wt);
    assert!(
        steps_of(&events, "step_completed").is_empty(),
        "{events:#?}"
    );
    // Each line, and the journal ref that a plain `git notes` moved.
    let violations = named(&events, "policy_violation");
    let rules: Vec<&str> = violations
        .iter()
        .map(|v| v["detail"]["rule"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules.iter().filter(|r| **r == "journal-forged").count(),
        3,
        "{events:#?}"
    );
    assert_eq!(
        rules.iter().filter(|r| **r == "record-moved").count(),
        1,
        "{events:#?}"
    );
    // Once answered, the run goes on and the gated step still asks for itself.
    let run = env
        .bmad(&wt, &["answer", "continue", "-m", "looked"])
        .code(3);
    assert!(
        run.stdout
            .contains("Waiting for you at step `ship` (always_gate"),
        "{}",
        run.stdout
    );
    assert_eq!(calls(&env).len(), 1);
    let doctor = env.bmad(&repo, &["doctor", "--json"]).json();
    assert_eq!(doctor["problems"], 3, "{doctor}");
}

/// An agent that deletes, replaces or unlinks its worktree's `.git`, or the worktree itself:
/// the step fails on a policy violation, the run parks, `doctor` names what happened and the
/// repair, and after that repair the run goes on.
#[test]
fn a_step_that_destroys_or_unlinks_its_worktree_is_never_done() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.executable("claude", FAKE_CLAUDE);
    let main = repo.display().to_string();
    let cases = [
        (
            "gitfile",
            "rm -f .git",
            "was deleted: git no longer sees it",
        ),
        ("newrepo", "rm -f .git && git init -q", "was replaced"),
        (
            "forgotten",
            &*format!("rm -f .git && git -C '{main}' worktree prune"),
            "git no longer lists",
        ),
        ("gone", "cd .. && rm -rf \"$OLDPWD\"", "was deleted"),
    ];
    write(
        &repo,
        ".bmad/playbooks/wreck.yaml",
        "steps:\n  - {id: work, command: do the work, postconditions: [{file_exists: out/work}]}\n  - {id: next, command: next}\n",
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "playbook"]);
    for (name, damage, said) in cases {
        agent_behaviour(
            &env,
            "work",
            &format!("mkdir -p out && touch out/work\n{damage}\nresult 'all done'\n"),
        );
        let (id, wt) = start_with(&env, &repo, name, "wreck");
        let run = env.bmad(&repo, &["run", "-s", &id]).code(3);
        assert!(
            run.stdout
                .contains("Waiting for you at step `work` (policy_violation"),
            "{name}: {}\n{}",
            run.stdout,
            run.stderr
        );
        let events = env
            .bmad(&repo, &["journal", &id, "--json"])
            .success()
            .json()
            .as_array()
            .expect("events")
            .clone();
        assert!(
            !steps_of(&events, "step_completed").contains(&"work".to_owned()),
            "{name}: {events:#?}"
        );
        let violation = named(&events, "policy_violation")
            .into_iter()
            .find(|v| v["detail"]["rule"] == "worktree-damaged")
            .unwrap_or_else(|| panic!("{name}: {events:#?}"));
        assert_eq!(violation["step"], "work");
        // doctor says what happened and how to repair it; never "prune" for work on disk.
        let doctor = env.bmad(&repo, &["doctor", "--json"]).json();
        let problem = doctor
            .as_array()
            .or_else(|| doctor["findings"].as_array())
            .unwrap()
            .iter()
            .find(|f| f["message"].as_str().is_some_and(|m| m.contains(said)))
            .unwrap_or_else(|| panic!("{name}: {doctor:#}"))
            .clone();
        let fix = problem["fix"].as_str().unwrap().to_owned();
        if name == "gone" {
            assert!(fix.starts_with(&format!("git bmad restore {id}")), "{fix}");
            continue;
        }
        assert!(!fix.contains("bmad prune"), "{name}: {fix}");
        // Resuming before the repair refuses and repeats the repair.
        let refused = env.bmad(&repo, &["answer", "continue", "-s", &id]);
        assert_ne!(refused.code, 0, "{name}: {}", refused.stdout);
        assert!(refused.stderr.contains(&fix), "{name}: {}", refused.stderr);
        let repaired = env.sh(&repo, &fix);
        assert_eq!(repaired.code, 0, "{name}: {fix}\n{}", repaired.stderr);
        let doctor = env.bmad(&repo, &["doctor", "--json"]).json();
        assert!(!doctor.to_string().contains(said), "{name}: {doctor:#}");
        assert_eq!(read(&wt, "out/work"), "", "{name}: the work is still there");
        env.bmad(&wt, &["answer", "continue", "-m", "repaired"])
            .success();
        assert!(
            steps_of(&journal(&env, &wt), "step_completed").contains(&"next".to_owned()),
            "{name}"
        );
    }
}

/// `no_progress`: an agent that keeps changing the worktree runs past the limit; one that
/// changes nothing for the limit is killed and its step fails to its error policy (seed
/// 001: an implementation with no progress is abandoned and escalated).
#[test]
fn an_attempt_with_no_progress_is_abandoned_and_one_making_progress_is_not() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let wt = with_playbook(
        &env,
        &repo,
        "watch",
        "steps:\n  - {id: busy, runner: shell, no_progress: 1s, command: 'for i in 1 2 3 4 5 6 7 8; do echo $i >> progress.txt; sleep 0.3; done'}\n  - {id: idle, runner: shell, no_progress: 1s, on_error: gate, command: 'sleep 30'}\n",
    );
    let started = Instant::now();
    let run = env.bmad(&wt, &["run", "watch"]).code(3);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the idle step was not abandoned: {}",
        run.stderr
    );
    let events = journal(&env, &wt);
    let busy = named(&events, "step_completed")
        .into_iter()
        .find(|e| e["step"] == "busy");
    assert!(busy.is_some(), "{events:#?}");
    let idle = named(&events, "step_failed")
        .into_iter()
        .find(|e| e["step"] == "idle")
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(idle["detail"]["exit"]["how"], "abandoned", "{idle:#}");
    assert!(
        idle["detail"]["reason"]
            .as_str()
            .unwrap()
            .contains("made no progress"),
        "{idle:#}"
    );
    assert!(
        run.stdout.contains("made no progress") || run.stderr.contains("made no progress"),
        "{}\n{}",
        run.stdout,
        run.stderr
    );
}

/// Copilot CLI (1.0.102) as it runs headless on a GitHub Copilot plan, doing what each
/// step's behaviour says (as [`FAKE_CLAUDE`] does): its events, its last line with the
/// premium requests the prompt cost (a model billed at 1x), and its one model request
/// announced on stdout and exported, as it ends, to the OpenTelemetry file
/// `COPILOT_OTEL_FILE_EXPORTER_PATH` names. (With a provider of the user's own, which the
/// real-CLI suite drives, it prints the same with 0 premium requests.)
pub(crate) const COPILOT_ON_A_PLAN: &str = r#"#!/bin/sh
usage="$COPILOT_OTEL_FILE_EXPORTER_PATH"
mkdir -p "$HOME/agent"
echo "$BMAD_STEP $* otel=$COPILOT_OTEL_EXPORTER_TYPE" >> "$HOME/agent/copilot.log"
result() {
  printf '{"type":"assistant.turn_start","data":{"turnId":"0"}}\n'
  printf '{"type":"model.call_final_result","data":{"model":"claude-sonnet-4.5","result":"success"},"ephemeral":true}\n'
  if [ -n "$usage" ]; then
    printf '{"type":"span","name":"chat claude-sonnet-4.5","kind":2,"attributes":{"gen_ai.operation.name":"chat","gen_ai.request.model":"claude-sonnet-4.5","gen_ai.usage.input_tokens":1600,"gen_ai.usage.output_tokens":20,"gen_ai.usage.cache_read.input_tokens":1000,"gen_ai.usage.cache_write.input_tokens":500,"gen_ai.response.model":"claude-sonnet-4.5","github.copilot.cost":1}}\n' >> "$usage"
  fi
  printf '{"type":"assistant.message","data":{"messageId":"m1","model":"claude-sonnet-4.5","content":"%s","toolRequests":[],"turnId":"0"}}\n' "$1"
  printf '{"type":"assistant.turn_end","data":{"turnId":"0"}}\n'
  printf '{"type":"result","timestamp":"2026-12-07T17:13:39.170Z","sessionId":"copilot-%s","exitCode":0,"usage":{"premiumRequests":1,"totalApiDurationMs":83,"sessionDurationMs":483,"codeChanges":{"linesAdded":0,"linesRemoved":0,"filesModified":[]}}}\n' "$BMAD_STEP"
}
if [ -f "$HOME/agent/$BMAD_STEP.sh" ]; then
  . "$HOME/agent/$BMAD_STEP.sh"
else
  mkdir -p out && touch "out/$BMAD_STEP"
  result "did $BMAD_STEP"
fi
"#;

/// A budget of GitHub's premium requests, Copilot CLI's own unit: each step's are journaled
/// with its tokens, the run stops before the step that would start past it (exit 6, with
/// what was spent), and a raised budget goes on from that step.
#[test]
fn a_premium_request_budget_stops_copilot_steps_and_a_raised_one_goes_on() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.executable("copilot", COPILOT_ON_A_PLAN);
    write(
        &repo,
        ".bmad/config.yaml",
        "runners:\n  default: copilot\norchestration:\n  budget_premium_requests: 2.5\n",
    );
    let wt = with_playbook(
        &env,
        &repo,
        "four",
        "name: four\nsteps:\n  - {id: a, command: do a, postconditions: [{file_exists: out/a}]}\n  - {id: b, command: do b, postconditions: [{file_exists: out/b}]}\n  - {id: c, command: do c, postconditions: [{file_exists: out/c}]}\n  - {id: d, command: do d, postconditions: [{file_exists: out/d}]}\n",
    );
    let run = env.bmad(&wt, &["run", "four"]).code(6);
    assert!(
        run.stdout.contains(
            "the agents have spent 3 of the 2.5 premium requests budgeted (3/4 steps finished)"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr
            .contains("raise orchestration.budget_premium_requests"),
        "{}",
        run.stderr
    );
    let events = journal(&env, &wt);
    assert_eq!(steps_of(&events, "step_completed"), ["a", "b", "c"]);
    let done = named(&events, "step_completed");
    assert_eq!(done[0]["detail"]["premium_requests"], 1.0);
    // Its tokens, from its telemetry: fresh (cache writes in), cached, out.
    let usage = &done[0]["detail"]["usage"][0];
    assert_eq!(
        (
            &usage["model"],
            &usage["tokens_in"],
            &usage["tokens_cached"],
            &usage["tokens_out"]
        ),
        (
            &Value::from("claude-sonnet-4.5"),
            &Value::from(600),
            &Value::from(1000),
            &Value::from(20)
        ),
        "{}",
        done[0]
    );
    let limit = named(&events, "limit_premium_requests_reached");
    assert_eq!(limit.len(), 1);
    assert_eq!(limit[0]["detail"]["spent_premium_requests"], 3.0);
    let log = std::fs::read_to_string(env.root().join("home/agent/copilot.log")).unwrap();
    assert_eq!(log.lines().count(), 3, "{log}");
    assert!(log.contains("otel=file"), "{log}");

    // More budget: the run goes on from d.
    write(
        &repo,
        ".bmad/config.yaml",
        "runners:\n  default: copilot\norchestration:\n  budget_premium_requests: 10\n",
    );
    env.bmad(&wt, &["resume"]).success();
    let events = journal(&env, &wt);
    assert_eq!(steps_of(&events, "step_completed"), ["a", "b", "c", "d"]);
    // The morning report says what they spent, in their unit too.
    let report = env.bmad(&wt, &["report"]).success();
    assert!(
        report.stdout.contains("4 premium requests"),
        "{}",
        report.stdout
    );
}

/// A Copilot CLI that ends well but leaves no whole usage log git-bmad can read (none; a
/// FIFO, which must not hang the run; a symlink to a log elsewhere, which is not followed;
/// one a step of the agent emptied, which shows fewer requests than it announced): where a
/// budget counts what it spends, the step fails saying so; with none, it is done.
#[test]
fn a_budgeted_copilot_step_with_no_whole_usage_log_fails() {
    let planted = [
        (":", "No such file or directory"),
        ("mkfifo \"$usage\"", "not a regular file"),
        (
            "echo '{}' > \"$HOME/mine.jsonl\"; ln -s \"$HOME/mine.jsonl\" \"$usage\"",
            "symbolic links",
        ),
        (
            "echo '{}' > \"$usage\"",
            "it shows 0 of the 1 model requests its output announced",
        ),
    ];
    for (plant, why) in planted {
        let env = TestEnv::new();
        let repo = env.repo("proj");
        let fake = COPILOT_ON_A_PLAN.replace(
            "if [ -n \"$usage\" ]; then",
            &format!("if [ -n \"$usage\" ]; then {plant}; fi; if false; then"),
        );
        env.executable("copilot", &fake);
        write(
            &repo,
            ".bmad/config.yaml",
            "runners:\n  default: copilot\norchestration:\n  budget_usd: 5\n",
        );
        let wt = with_playbook(
            &env,
            &repo,
            "one",
            "name: one\nsteps:\n  - {id: a, command: do a, postconditions: [{file_exists: out/a}]}\n",
        );
        let run = env.bmad(&wt, &["run", "one"]).code(5);
        assert!(
            run.stderr
                .contains("copilot left no whole usage log git-bmad can read (")
                && run.stderr.contains(why),
            "{plant}: {}",
            run.stderr
        );
        write(&repo, ".bmad/config.yaml", "runners:\n  default: copilot\n");
        env.bmad(&wt, &["resume"]).success();
    }
}

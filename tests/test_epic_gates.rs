//! An epic run's own checkpoints end to end: scope confirmation, integration checkpoints
//! (green, yellow, red) after stories with dependents, completion, and budgets. Answers go
//! to the epic's session and continue the run.

use serde_json::Value;

use crate::common::{read, TestEnv};
use crate::test_epic::{dev_behaviour, epic_project, status, story};
use crate::test_supervisor::{agent_behaviour, COPILOT_ON_A_PLAN};

const KEYS: [&str; 4] = [
    "3-1-api-client",
    "3-2-storage",
    "3-3-sync-engine",
    "3-4-api-retries",
];

fn gate_id(s: &Value) -> &str {
    s["gate"]["id"].as_str().unwrap_or("")
}

fn dev_calls(env: &TestEnv) -> String {
    std::fs::read_to_string(env.root().join("home/agent/dev.log")).unwrap_or_default()
}

#[test]
fn per_epic_gates_ask_for_scope_then_a_yellow_integration_then_completion() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    // An interface 3-3 (touches src/sync) builds on; 3-1's dev changes its signature.
    std::fs::create_dir_all(repo.join("src/sync")).unwrap();
    std::fs::write(repo.join("src/sync/api.rs"), "pub fn connect() {}\n").unwrap();
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "sync api"]);
    dev_behaviour(
        &env,
        "case \"$key\" in 3-1-*) sed -i 's/connect()/connect(timeout: u32)/' src/sync/api.rs ;; esac",
    );

    // Scope first: nothing runs before a human has seen the plan.
    let run = env
        .bmad(&repo, &["epic", "run", "3", "--gates", "per-epic"])
        .code(3);
    assert!(
        run.stdout.contains("Run epic 3 as planned: 4 stories"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr
            .contains("git bmad answer <continue|skip|abort> -s epic-3"),
        "{}",
        run.stderr
    );
    assert_eq!(dev_calls(&env), "");
    assert_eq!(gate_id(&status(&env, &repo)), "scope");
    // An answer the gate does not take shows it again and changes nothing.
    let wrong = env
        .bmad(&repo, &["answer", "retry", "-s", "epic-3"])
        .code(3);
    assert!(
        wrong.stderr.contains("takes continue, skip, abort"),
        "{}",
        wrong.stderr
    );

    // The answer continues the run. 3-1's dev changed a file 3-3 declares: before 3-1 is
    // pushed, git-bmad's judge asks, with the list.
    env.bmad(&repo, &["answer", "continue", "-s", "epic-3"])
        .code(3);
    let s = status(&env, &repo);
    assert_eq!(gate_id(&s), "judge:3-1-api-client", "{s:#}");
    let evidence = s["gate"]["evidence"].as_str().unwrap_or_default();
    assert!(
        evidence.contains("out-of-scope: src/sync/api.rs (3-3-sync-engine's)"),
        "{evidence}"
    );
    // Let stand: every story but 3-3 is built; 3-1's checkpoint is yellow (a file 3-3
    // touches, an interface changed), 3-2's green; 3-3 waits.
    env.bmad(&repo, &["answer", "continue", "-s", "epic-3"])
        .code(3);
    let s = status(&env, &repo);
    assert_eq!(gate_id(&s), "integration:3-1-api-client", "{s:#}");
    let api = &story(&s, "3-1-api-client")["state"]["integration"];
    assert_eq!(api["light"], "yellow", "{api:#}");
    assert_eq!(api["overlaps"][0], "3-3-sync-engine: src/sync/api.rs");
    assert_eq!(api["interfaces"][0], "src/sync/api.rs: fn connect changed");
    assert_eq!(api["tests_ok"], true);
    let storage = &story(&s, "3-2-storage")["state"]["integration"];
    assert_eq!(storage["light"], "green", "{storage:#}");
    assert!(story(&s, "3-3-sync-engine")["stage"].is_null(), "{s:#}");
    for key in ["3-1-api-client", "3-2-storage", "3-4-api-retries"] {
        assert_eq!(story(&s, key)["stage"], "done", "{key}");
    }

    // Continue past the warning: 3-3 runs; then the completion gate.
    env.bmad(&repo, &["answer", "continue", "-s", "epic-3"])
        .code(3);
    let s = status(&env, &repo);
    assert_eq!(gate_id(&s), "completion", "{s:#}");
    assert_eq!(story(&s, "3-3-sync-engine")["stage"], "done");
    assert_eq!(s["finished"], false);

    // Signed off: finished, and every story ran exactly once.
    env.bmad(&repo, &["answer", "yes", "-s", "epic-3"])
        .success();
    let s = status(&env, &repo);
    assert_eq!(s["finished"], true, "{s:#}");
    assert!(s["gate"].is_null());
    let devs = dev_calls(&env);
    for key in KEYS {
        assert_eq!(devs.lines().filter(|l| *l == key).count(), 1, "{devs}");
    }
    // The journal holds the human's answers, each with who decided.
    let journal = env
        .bmad(&repo, &["journal", "epic-3", "--json"])
        .success()
        .json();
    let answers: Vec<&Value> = journal
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "gate_answered")
        .collect();
    assert_eq!(answers.len(), 4, "{journal:#}");
    assert!(answers.iter().all(|e| e["decision"] == "human"));

    // The report, in the PR diff as markdown and as one HTML page, says the same.
    let progress = env.git(
        &repo,
        &["show", "bmad/epic-3:docs/progress/epic-3-auto-run.md"],
    );
    assert!(
        progress.contains("| 3-1-api-client | done | yellow | 1 |"),
        "{progress}"
    );
    assert!(progress.contains("\n## Gates and answers\n"), "{progress}");
    for gate in [
        "scope: continue",
        "integration:3-1-api-client: continue",
        "completion: continue",
    ] {
        assert!(
            progress.contains(&format!("- {gate} (")),
            "{gate}: {progress}"
        );
    }
    let page = env.root().join("epic-3.html");
    env.bmad(
        &repo,
        &["epic", "status", "3", "--html", page.to_str().unwrap()],
    )
    .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(
            "<td>3-1-api-client</td><td class=\"good\">done</td><td class=\"warn\">yellow</td>"
        ),
        "{html}"
    );
    assert!(
        html.contains("<li>integration:3-1-api-client: continue ("),
        "{html}"
    );
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href="));
}

#[test]
fn a_reviewer_that_breaks_the_suite_after_the_tests_fails_the_story_and_holds_its_dependent() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    // 3-1's reviewer approves and leaves the suite failing (a review step checks no tests).
    agent_behaviour(
        &env,
        "review-1",
        "case \"$BMAD_ARGS\" in 3-1-*) echo FAIL > src/api/broken.rs ;; esac\nresult 'Outcome: Approve'\n",
    );
    let run = env.bmad(&repo, &["epic", "run", "3"]).code(5);
    assert!(run.stderr.contains("3-3-sync-engine"), "{}", run.stderr);
    let s = status(&env, &repo);
    // git-bmad's own run of the tests, on the commit it would push, fails the story.
    let api = story(&s, "3-1-api-client");
    assert_eq!(api["stage"], "failed", "{s:#}");
    let why = api["state"]["reason"].as_str().unwrap();
    assert!(
        why.contains("`./test.sh` fails on") && why.contains("in a clean checkout"),
        "{why}"
    );
    assert!(api["state"]["pr"].is_null(), "{api:#}");
    let gh = std::fs::read_to_string(env.root().join("home/agent/gh.log")).unwrap_or_default();
    assert!(!gh.contains("--head bmad/3-1-api-client"), "{gh}");
    let remote = env.git(&repo, &["ls-remote", "--heads", "origin"]);
    assert!(!remote.contains("bmad/3-1-api-client"), "{remote}");
    let dependent = story(&s, "3-3-sync-engine");
    assert_eq!(dependent["stage"], "skipped", "{s:#}");
    let reason = dependent["state"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("dependency 3-1-api-client is failed"),
        "{reason}"
    );
    assert!(!dev_calls(&env).contains("3-3-sync-engine"));

    // Resume without a fix judges the same commit again: still failed, 3-3 still held.
    env.bmad(&repo, &["epic", "resume", "3"]).code(5);
    assert!(!dev_calls(&env).contains("3-3-sync-engine"));

    // A human fixes 3-1's branch: resume judges it green and runs 3-3.
    let wt = env.root().join("proj.3-1-api-client");
    env.git(&wt, &["rm", "-q", "src/api/broken.rs"]);
    env.git(&wt, &["commit", "-q", "-m", "fix the suite"]);
    env.bmad(&repo, &["epic", "resume", "3"]).success();
    let s = status(&env, &repo);
    for key in KEYS {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
    }
    let tests = story(&s, "3-1-api-client")["state"]["tests"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        tests.contains("`./test.sh` passed on") && tests.contains("in a clean checkout"),
        "{tests}"
    );
    assert_eq!(
        story(&s, "3-1-api-client")["state"]["integration"]["light"],
        "green"
    );
    assert_eq!(s["finished"], true);
    let checks = read(&env.root(), "home/agent/dev.log");
    for key in ["3-1-api-client", "3-3-sync-engine"] {
        assert_eq!(checks.lines().filter(|l| *l == key).count(), 1, "{key}");
    }
}

#[test]
fn an_epic_budget_stops_new_stories_and_a_larger_one_goes_on() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    // One story is its acceptance tests, a dev and a review: three invocations use the
    // budget up.
    // Stopped at a budget, the run waits for more (exit 6), and says how to give it.
    let run = env
        .bmad(&repo, &["epic", "run", "3", "--max-invocations", "3"])
        .code(6);
    assert!(
        run.stdout.contains("budget: 3 invocations of 3") || run.stderr.contains("budget: 3"),
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        run.stderr
            .contains("Next: git bmad epic resume 3 --max-invocations <more> goes on"),
        "{}",
        run.stderr
    );
    let s = status(&env, &repo);
    let done = KEYS
        .iter()
        .filter(|k| story(&s, k)["stage"] == "done")
        .count();
    assert_eq!(done, 1, "{s:#}");
    assert_eq!(s["started"]["budget"]["invocations"], 3);
    // Status says why the run ended early, after the fact too.
    let text = env.bmad(&repo, &["epic", "status", "3"]).success().stdout;
    assert!(
        text.starts_with("Epic 3 (finished early: budget: 3 invocations of 3;"),
        "{text}"
    );
    // Resume keeps the budget: still nothing new.
    let json = env
        .bmad(&repo, &["epic", "resume", "3", "--json"])
        .code(6)
        .json();
    assert_eq!(json["run"]["reached"], "invocations", "{json:#}");
    assert_eq!(dev_calls(&env).lines().count(), 1);
    // Resumed with more, it finishes the rest, and the larger budget is the run's.
    env.bmad(&repo, &["epic", "resume", "3", "--max-invocations", "50"])
        .success();
    let s = status(&env, &repo);
    for key in KEYS {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
    }
    assert_eq!(s["started"]["budget"]["invocations"], 50);
    let bad = env
        .bmad(&repo, &["epic", "run", "3", "--max-time", "soon"])
        .code(2);
    assert!(bad.stderr.contains("90m or 8h"), "{}", bad.stderr);
    let bad = env
        .bmad(&repo, &["epic", "run", "3", "--reviewers", "0"])
        .code(2);
    assert!(
        bad.stderr.contains("--reviewers: give 1 to 4"),
        "{}",
        bad.stderr
    );
}

/// A dollar budget counts what each step spent as it ends, so within a story too no step
/// starts once the purse is empty: the agents here (like any CLI that cannot stop itself at
/// an amount) spend a cent a call whatever they are given.
#[test]
fn no_step_starts_once_the_epic_budget_is_spent() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    // Its acceptance tests ($0.01) and its dev ($0.01) spend the budget; its review would
    // take the epic past it.
    let run = env
        .bmad(
            &repo,
            &[
                "epic",
                "run",
                "3",
                "--parallel",
                "1",
                "--budget-usd",
                "0.015",
            ],
        )
        .code(6);
    let said = format!("{}{}", run.stdout, run.stderr);
    let calls = read(&env.root(), "home/agent/calls.log");
    // Each call's line starts `<step> <attempt> `; its prompt runs on below.
    let steps: Vec<&str> = calls
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let step = words.next()?;
            words.next()?.parse::<u32>().ok().map(|_| step)
        })
        .collect();
    assert_eq!(steps, ["acceptance", "dev"], "{said}");
    let s = status(&env, &repo);
    let spent: f64 = KEYS
        .iter()
        .map(|k| story(&s, k)["state"]["cost_usd"].as_f64().unwrap_or(0.0))
        .sum();
    assert!((spent - 0.02).abs() < 1e-9, "${spent}: {s:#}");
    let stopped: Vec<&Value> = KEYS
        .iter()
        .map(|k| story(&s, k))
        .filter(|st| st["stage"] == "failed")
        .collect();
    assert_eq!(stopped.len(), 1, "{s:#}");
    let reason = stopped[0]["state"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("stopped at the budget: $0.02 spent of $0.015"),
        "{reason}"
    );
}

#[test]
fn the_epic_demo_runs_three_stories_through_both_gates_with_simulated_agents() {
    let env = TestEnv::new();
    let run = env
        .bmad(
            &env.root(),
            &["demo", "epic", "--dir", env.root().to_str().unwrap()],
        )
        .success();
    let out = &run.stdout;
    assert!(out.contains("The agents are SIMULATED"), "{out}");
    assert!(out.contains("(exit 3: the scope gate)"), "{out}");
    assert!(out.contains("(exit 3: the completion gate)"), "{out}");
    assert!(out.contains("Epic 1 (finished)"), "{out}");
    for key in ["1-1-api-client", "1-2-storage", "1-3-sync-engine"] {
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(key) && l.contains(" done ")),
            "{key}: {out}"
        );
    }
    // The review found a problem and a fix round fixed it.
    assert!(
        out.lines()
            .any(|l| l.contains("1-1-api-client") && l.contains("rounds 2")),
        "{out}"
    );
    // Nothing is left behind without --keep.
    let left = std::fs::read_dir(env.root())
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("git-bmad-demo-")
        });
    assert!(!left);
}

#[test]
fn a_retrospective_runs_headless_once_every_story_is_done_and_is_offered_as_a_draft_pr() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    agent_behaviour(
        &env,
        "retrospective",
        "echo \"$BMAD_ARGS\" > \"$HOME/agent/retro-args.txt\"\nprintf '# Epic 3 retrospective\\n\\nVerdict: accepted\\n' > _bmad-output/implementation-artifacts/epic-3-retro-2026-11-24.md\nresult 'retrospective written'\n",
    );
    // A project without the skill is told so before any story runs.
    let refused = env
        .bmad(&repo, &["epic", "run", "3", "--parallel", "2", "--retro"])
        .code(2);
    assert!(
        refused
            .stderr
            .contains(".claude/commands/bmad-retrospective.md"),
        "{}",
        refused.stderr
    );
    assert!(!env.root().join("home/agent/calls.log").exists());
    std::fs::write(
        repo.join(".claude/commands/bmad-retrospective.md"),
        "---\ndescription: bmad-retrospective\n---\nRun the BMAD retrospective for $ARGUMENTS.\n",
    )
    .unwrap();
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "the retrospective skill"]);
    env.bmad(&repo, &["epic", "run", "3", "--parallel", "2", "--retro"])
        .success();
    let s = status(&env, &repo);
    assert_eq!(s["finished"], true, "{s:#}");
    assert_eq!(s["started"]["retro"], true);
    let pr = s["closed"]["retrospective"].as_str().unwrap();
    assert!(
        pr.starts_with("https://github.com/example/proj/pull/"),
        "{s:#}"
    );
    // bmad-retrospective's headless orchestrator interface, with the epic.
    let calls = read(&env.root(), "home/agent/calls.log");
    assert!(
        calls
            .lines()
            .any(|l| l.starts_with("retrospective 1 /bmad-retrospective -H 3")),
        "{calls}"
    );
    let gh = read(&env.root(), "home/agent/gh.log");
    assert!(
        gh.lines()
            .any(|l| l
                .starts_with("gh pr create --draft --base bmad/epic-3 --head bmad/epic-3-close")),
        "{gh}"
    );
    env.git(
        &repo,
        &[
            "cat-file",
            "-e",
            "bmad/epic-3-close:_bmad-output/implementation-artifacts/epic-3-retro-2026-11-24.md",
        ],
    );
    // Once: running again changes nothing.
    let before = read(&env.root(), "home/agent/calls.log");
    env.bmad(&repo, &["epic", "resume", "3"]).success();
    assert_eq!(read(&env.root(), "home/agent/calls.log"), before);
}

#[test]
fn reviewers_fan_out_in_parallel_a_failing_one_is_dropped_and_the_others_findings_merge() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    // Each reviewer logs when it runs, so the test sees them overlap.
    let timed = |body: &str| {
        format!("echo \"start $BMAD_STEP $(date +%s%N)\" >> \"$HOME/agent/reviews.log\"\nsleep 0.4\necho \"end $BMAD_STEP $(date +%s%N)\" >> \"$HOME/agent/reviews.log\"\n{body}")
    };
    agent_behaviour(
        &env,
        "review-1-a",
        &timed("result 'Outcome: Changes Requested\\n- [ ] [High] no timeout on requests [src/api/x.rs:1]'\n"),
    );
    agent_behaviour(
        &env,
        "review-1-b",
        &timed("result 'Outcome: Changes Requested\\n- [ ] [High]  No timeout on requests [src/api/x.rs:1]\\n- [ ] [High] retries are unbounded [src/api/x.rs:2]'\n"),
    );
    // Reviewer c's CLI fails every time: retried once, then dropped.
    for round in [1, 2] {
        agent_behaviour(
            &env,
            &format!("review-{round}-c"),
            "echo 'model overloaded' >&2\nexit 1\n",
        );
    }
    for step in ["review-2-a", "review-2-b"] {
        agent_behaviour(&env, step, "result 'Outcome: Approve'\n");
    }
    agent_behaviour(
        &env,
        "fix-1",
        "echo \"$BMAD_FINDINGS\" > \"$HOME/agent/fix-prompt.txt\"\necho '// fixed' >> src/api/3-1-api-client.rs\nresult fixed\n",
    );
    env.bmad(
        &repo,
        &[
            "epic",
            "run",
            "3",
            "--stories",
            "3-1",
            "--reviewers",
            "3",
            "--rounds",
            "1",
        ],
    )
    .success();
    let s = status(&env, &repo);
    let api = story(&s, "3-1-api-client");
    assert_eq!(api["stage"], "done", "{s:#}");
    // Two rounds (each of several reviewers), two distinct findings fixed.
    assert_eq!(api["state"]["rounds"], 2, "{api:#}");
    assert_eq!(api["state"]["findings_fixed"], 2, "{api:#}");
    assert_eq!(s["started"]["reviewers"], 3);
    // The fixer got each finding once, from both reviewers that finished.
    let prompt = read(&env.root(), "home/agent/fix-prompt.txt");
    assert_eq!(
        prompt
            .to_lowercase()
            .matches("no timeout on requests")
            .count(),
        1,
        "{prompt}"
    );
    assert!(prompt.contains("retries are unbounded"), "{prompt}");
    // Reviewer c ran twice per round (one retry), then was skipped.
    let calls = read(&env.root(), "home/agent/calls.log");
    assert_eq!(
        calls
            .lines()
            .filter(|l| l.starts_with("review-1-c "))
            .count(),
        2,
        "{calls}"
    );
    let journal = env
        .bmad(&repo, &["journal", "3-1-api-client", "--json"])
        .success()
        .json();
    assert!(journal
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event"] == "step_skipped"
            && e["step"] == "review-1-c"
            && e["detail"]["reason"]
                .as_str()
                .unwrap()
                .contains("failed twice")));
    // The reviewers of a round ran at the same time.
    let log = read(&env.root(), "home/agent/reviews.log");
    let at = |what: &str| -> u128 {
        log.lines()
            .find(|l| l.starts_with(what))
            .unwrap_or_else(|| panic!("{what}: {log}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(
        at("start review-1-a") < at("end review-1-b")
            && at("start review-1-b") < at("end review-1-a"),
        "{log}"
    );
}

#[test]
fn with_gates_a_story_whose_dependency_failed_waits_for_a_human_who_may_override_it() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    // 3-2's dev writes code but never moves its story: git-bmad's own check fails it.
    dev_behaviour(
        &env,
        "case \"$key\" in 3-2-*) mkdir -p src/storage && echo x >> src/storage/s.rs; result 'done'; exit 0 ;; esac",
    );
    env.bmad(&repo, &["epic", "run", "3", "--gates", "per-epic"])
        .code(3);
    env.bmad(&repo, &["answer", "continue", "-s", "epic-3"])
        .code(3);
    let s = status(&env, &repo);
    assert_eq!(story(&s, "3-2-storage")["stage"], "failed", "{s:#}");
    assert!(story(&s, "3-3-sync-engine")["stage"].is_null(), "{s:#}");
    assert_eq!(gate_id(&s), "dependency:3-3-sync-engine", "{s:#}");
    assert!(
        s["gate"]["question"]
            .as_str()
            .unwrap()
            .contains("depends on 3-2-storage, which is failed"),
        "{s:#}"
    );
    // The human overrides: 3-3 runs on what it has; the run then asks for completion.
    env.bmad(
        &repo,
        &[
            "answer",
            "continue",
            "-s",
            "epic-3",
            "-m",
            "storage is stubbed; used ghp_R8x2Kq9LmZ4tVb7Nw1Yc6Hd3Jf5Gs0PaE2uQ to check",
        ],
    )
    .code(3);
    // What a human types is redacted like anything else bound for the journal.
    let journal = env
        .bmad(&repo, &["journal", "epic-3", "--json"])
        .success()
        .stdout;
    assert!(journal.contains("storage is stubbed"), "{journal}");
    let leaked: Vec<&str> = journal
        .lines()
        .filter(|l| l.contains("ghp_R8x2Kq9LmZ4tVb7Nw1"))
        .collect();
    assert!(
        leaked.is_empty(),
        "the token reached the journal: {leaked:#?}"
    );
    let s = status(&env, &repo);
    assert_eq!(story(&s, "3-3-sync-engine")["stage"], "done", "{s:#}");
    assert_eq!(gate_id(&s), "completion", "{s:#}");
    let devs = dev_calls(&env);
    assert_eq!(
        devs.lines().filter(|l| *l == "3-3-sync-engine").count(),
        1,
        "{devs}"
    );
}

#[test]
fn per_story_gates_add_each_storys_acceptance_to_the_epics_own() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    let args = [
        "epic",
        "run",
        "3",
        "--stories",
        "3-2",
        "--gates",
        "per-story",
    ];
    env.bmad(&repo, &args).code(3);
    assert_eq!(gate_id(&status(&env, &repo)), "scope");
    // After the scope, the story waits for its human before its pull request.
    env.bmad(&repo, &["answer", "continue", "-s", "epic-3"])
        .code(3);
    let s = status(&env, &repo);
    let storage = story(&s, "3-2-storage");
    assert_eq!(storage["stage"], "gated", "{s:#}");
    assert!(
        storage["state"]["reason"]
            .as_str()
            .unwrap()
            .contains("at accept"),
        "{s:#}"
    );
    assert!(storage["state"]["pr"].is_null(), "{s:#}");
    let wt = env.root().join("proj.3-2-storage");
    env.bmad(&wt, &["answer", "continue", "-m", "looked at it"])
        .success();
    // Accepted: the epic goes on to its PR, then asks for completion.
    env.bmad(&repo, &["epic", "resume", "3"]).code(3);
    let s = status(&env, &repo);
    assert_eq!(story(&s, "3-2-storage")["stage"], "done", "{s:#}");
    assert_eq!(gate_id(&s), "completion");
    env.bmad(&repo, &["answer", "continue", "-s", "epic-3"])
        .success();
    assert_eq!(status(&env, &repo)["finished"], true);
}

/// Budgets across CLIs in one epic: the dev is Copilot CLI, which spends GitHub's premium
/// requests, and the rest Claude Code. The epic's premium request budget is checked before
/// each step of every story: once the devs have spent it, no step starts (exit 6, the flag
/// that gives more named), each story's premium requests journaled; resumed with more, the
/// epic finishes.
#[test]
fn an_epic_premium_request_budget_stops_copilot_devs_and_more_goes_on() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    env.executable("copilot", COPILOT_ON_A_PLAN);
    std::fs::write(
        repo.join(".bmad/config.yaml"),
        "checks:\n  test_command: ./test.sh\nrunners:\n  default: claude\norchestration:\n  agents:\n    dev: {runner: copilot}\n",
    )
    .unwrap();
    // BMAD's dev as a skill, where Copilot CLI loads a project's skills from.
    let skill = repo.join(".github/skills/bmad-dev-story");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::copy(
        repo.join(".claude/commands/bmad-dev-story.md"),
        skill.join("SKILL.md"),
    )
    .unwrap();
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "copilot devs"]);
    let run = env
        .bmad(
            &repo,
            &[
                "epic",
                "run",
                "3",
                "--parallel",
                "1",
                "--budget-premium-requests",
                "1.5",
            ],
        )
        .code(6);
    assert!(
        run.stderr
            .contains("Next: git bmad epic resume 3 --budget-premium-requests <more> goes on"),
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    let s = status(&env, &repo);
    let devs = read(&env.root(), "home/agent/copilot.log");
    assert_eq!(devs.lines().count(), 2, "{devs}\n{s:#}");
    assert_eq!(s["started"]["budget"]["premium_requests"], 1.5);
    let spent: Vec<f64> = KEYS
        .iter()
        .filter_map(|k| story(&s, k)["state"]["premium_requests"].as_f64())
        .collect();
    assert_eq!(spent, [1.0, 1.0], "{s:#}");
    let text = env.bmad(&repo, &["epic", "status", "3"]).success().stdout;
    assert!(
        text.contains("budget: 2 premium requests spent of 1.5"),
        "{text}"
    );
    env.bmad(
        &repo,
        &["epic", "resume", "3", "--budget-premium-requests", "10"],
    )
    .success();
    let s = status(&env, &repo);
    for key in KEYS {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
    }
    assert_eq!(s["started"]["budget"]["premium_requests"], 10.0);
    let bad = env
        .bmad(
            &repo,
            &["epic", "run", "3", "--budget-premium-requests", "0"],
        )
        .code(2);
    assert!(
        bad.stderr
            .contains("--budget-premium-requests: give a positive number of premium requests"),
        "{}",
        bad.stderr
    );
}

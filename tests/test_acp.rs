//! The real Gemini CLI, Qwen Code, OpenCode and Copilot CLI driven over the Agent Client Protocol
//! (`runners.<cli>.protocol: acp`) against the scripted model API: git-bmad is the client,
//! answers every permission request with its own policy (the guard for commands, the
//! worktree for edits), counts the tokens each agent reports, and cancels a turn at its
//! timeout. The world (CLIs, model API, project) is the real-CLI suite's.

use crate::common::model_api::{ModelApi, Turn};
use crate::common::read;
use crate::test_real_cli::{
    assert_not_done, honest, ledger, write_hello, Cli, Reach, World, IMPLEMENT,
};

/// The CLIs that speak ACP, each started in its ACP mode by git-bmad.
const ACP: [Cli; 4] = [Cli::Gemini, Cli::Qwen, Cli::OpenCode, Cli::Copilot];

/// A world whose runner is `cli` over ACP, with `more` configuration.
fn over_acp(cli: Cli, script: Vec<Turn>, playbook: &str, more: &str) -> World {
    let world = World::new(cli, script, playbook);
    world.configure(&format!(
        "runners:\n  default: {0}\n  {0}: {{protocol: acp}}\nchecks:\n  test_command: sh test.sh\n{more}",
        cli.name()
    ));
    world
}

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs the agent CLIs from npm: cargo test --features external-tests"
)]
fn an_honest_agent_over_acp_finishes_contained_with_each_call_answered_by_git_bmad() {
    for cli in ACP {
        let world = over_acp(cli, honest(), IMPLEMENT, "");
        let run = world.run();
        assert_eq!(run.code, 0, "{}", world.explain(&run));
        assert_eq!(read(&world.worktree, "src/hello.txt"), "hello\n");
        let log = world.env.git(&world.worktree, &["log", "--format=%s"]);
        assert!(log.contains("add hello"), "{cli:?}: {log}");
        let started = &world.named("step_started")[0]["detail"];
        assert!(started["uncontained"].is_null(), "{cli:?}: {started}");
        let done = world.named("step_completed");
        assert_eq!(done.len(), 1, "{}", world.explain(&run));
        assert!(world.named("policy_violation").is_empty());
        // Its session is the ACP session it opened.
        assert!(
            done[0]["detail"]["agent_session_id"].is_string(),
            "{}",
            done[0]
        );
    }
}

/// A user who gives OpenCode its provider inline (`OPENCODE_CONFIG_CONTENT`, as a CI job
/// does) keeps it over ACP: git-bmad's own settings are laid over the user's, not in their
/// place.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs the agent CLIs from npm: cargo test --features external-tests"
)]
fn opencode_over_acp_keeps_the_provider_a_user_gives_it_inline() {
    let world = over_acp(Cli::OpenCode, honest(), IMPLEMENT, "");
    let file = world.env.root().join("home/.config/opencode/opencode.json");
    let inline = std::fs::read_to_string(&file).expect("the provider's settings");
    std::fs::remove_file(&file).expect("no settings file left");
    let run = world.bmad_with(
        &["run", "scenario"],
        &[("OPENCODE_CONFIG_CONTENT", inline.as_str())],
    );
    assert_eq!(run.code, 0, "{}", world.explain(&run));
    assert_eq!(read(&world.worktree, "src/hello.txt"), "hello\n");
    assert!(world.api.seen().len() >= 2, "{}", world.explain(&run));
}

/// On the machines users run: each ACP agent behind a version manager's shim, on a kernel
/// that refuses bubblewrap, finishes an honest step in the walls that are left (Landlock),
/// every call still answered by git-bmad.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs the agent CLIs from npm: cargo test --features external-tests"
)]
fn acp_agents_behind_a_shim_with_bubblewrap_refused_finish_contained() {
    for cli in ACP {
        let world = World::reached(cli, Reach::Shim, true, honest(), IMPLEMENT);
        world.configure(&format!(
            "runners:\n  default: {0}\n  {0}: {{protocol: acp}}\nchecks:\n  test_command: sh test.sh\n",
            cli.name()
        ));
        let run = world.run();
        assert_eq!(run.code, 0, "{}", world.explain(&run));
        assert_eq!(read(&world.worktree, "src/hello.txt"), "hello\n");
        let started = &world.named("step_started")[0]["detail"];
        assert!(started["uncontained"].is_null(), "{cli:?}: {started}");
        let walls = started["walls"].as_str().unwrap_or_default();
        assert!(walls.contains("alone"), "{cli:?}: {started}");
    }
}

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs the agent CLIs from npm: cargo test --features external-tests"
)]
fn an_agent_over_acp_that_only_claims_done_is_not_done() {
    for cli in ACP {
        let world = over_acp(
            cli,
            vec![Turn::Answer(
                "Done: created src/hello.txt and every test passes.".into(),
            )],
            IMPLEMENT,
            "",
        );
        let run = world.run();
        assert_not_done(&world, &run, "src/hello.txt is missing");
    }
}

/// The agent asks to run a force push; git-bmad puts it to the guard, which refuses it
/// before it runs: nothing reaches the remote, the refusal and the violation are journaled.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs the agent CLIs from npm: cargo test --features external-tests"
)]
fn a_force_push_over_acp_is_refused_by_the_guard_before_it_runs() {
    for cli in ACP {
        let world = over_acp(
            cli,
            vec![
                write_hello(),
                Turn::Shell("git push --force origin HEAD:main".into()),
                Turn::Answer("Created src/hello.txt and pushed it.".into()),
            ],
            IMPLEMENT,
            "",
        );
        let run = world.run_with_remote();
        assert_not_done(
            &world,
            &run,
            "refused 1 tool call(s): execute (git push --force origin HEAD:main)",
        );
        let violations = world.named("policy_violation");
        assert_eq!(violations.len(), 1, "{}", world.explain(&run));
        assert_eq!(
            violations[0]["detail"]["hook"], "guard",
            "{}",
            violations[0]
        );
        let remote_log = world.remote_log();
        assert!(remote_log.is_empty(), "{cli:?} pushed: {remote_log}");
    }
}

/// An ACP agent git-bmad has no adapter for, started through `generic` with an argument of
/// its own that approves tools ahead. Copilot CLI's `--allow-all-tools` holds whatever mode
/// it is put in: it runs a force push without asking; git-bmad puts the command to the guard
/// when the agent reports it run, the refusal is journaled and fails the step, and the git
/// hooks kept it off the remote. Gemini CLI's `--yolo` is a mode, which git-bmad puts back
/// to the one that asks: it asks, and is done.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs the agent CLIs from npm: cargo test --features external-tests"
)]
fn an_acp_agent_that_runs_a_refused_command_without_asking_fails_its_step() {
    // What each reads, named whole for `generic`: in walls, its key reaches it so.
    let configure = |world: &World, ahead: &str, env: &str| {
        world.configure(&format!(
            "runners:\n  default: generic\n  generic: {{command: [{}, --acp, {ahead}], protocol: acp, env: {env}}}\nchecks:\n  test_command: sh test.sh\n",
            world.cli.name()
        ));
    };
    let copilot = World::new(
        Cli::Copilot,
        vec![
            write_hello(),
            Turn::Shell("sh test.sh".into()),
            Turn::Shell("git push --force origin HEAD:main".into()),
            Turn::Answer("Created src/hello.txt and pushed it.".into()),
        ],
        IMPLEMENT,
    );
    configure(
        &copilot,
        "--allow-all-tools",
        "[COPILOT_PROVIDER_API_KEY, COPILOT_PROVIDER_BASE_URL, COPILOT_PROVIDER_TYPE, COPILOT_MODEL, COPILOT_OFFLINE]",
    );
    let run = copilot.run_with_remote();
    assert_not_done(
        &copilot,
        &run,
        "Copilot ran 1 command(s) the guard refuses without asking git-bmad (first: execute (git push --force origin HEAD:main): ",
    );
    let violations = copilot.named("policy_violation");
    assert!(
        violations.iter().any(|v| v["detail"]["hook"] == "guard"),
        "{}",
        copilot.explain(&run)
    );
    let remote_log = copilot.remote_log();
    assert!(remote_log.is_empty(), "pushed: {remote_log}");
    // What the guard allows it ran unasked too (the file, the tests): that is no failure.
    assert_eq!(read(&copilot.worktree, "src/hello.txt"), "hello\n");

    let gemini = World::new(Cli::Gemini, honest(), IMPLEMENT);
    configure(
        &gemini,
        "--yolo",
        "[GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL]",
    );
    let run = gemini.run();
    assert_eq!(run.code, 0, "{}", gemini.explain(&run));
    let done = &gemini.named("step_completed")[0];
    let asked = done["detail"]["stdout"]
        .as_str()
        .unwrap_or_default()
        .matches("session/request_permission")
        .count();
    assert!(asked >= 2, "{done}");
}

/// A model that never answers: at the step's timeout the turn is cancelled and the agent
/// ended; the step is not done and says why.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs the agent CLIs from npm: cargo test --features external-tests"
)]
fn a_hanging_turn_over_acp_is_cancelled_at_its_timeout() {
    let playbook = "name: scenario\nsteps:\n  - id: implement\n    command: Create src/hello.txt\n    timeout: 8s\n    postconditions: [{file_exists: src/hello.txt}]\n";
    for cli in ACP {
        let world = over_acp(cli, vec![Turn::Hang], playbook, "");
        let began = std::time::Instant::now();
        let run = world.run();
        assert_not_done(&world, &run, "timed out");
        assert!(
            began.elapsed() < std::time::Duration::from_secs(60),
            "{cli:?} outlived its timeout"
        );
    }
}

/// The requests that made an agent's turn, and apart those after it: what the model API
/// served, less the count requests, up to the memory extraction Qwen Code starts in the
/// background once a turn is over (and what that extraction goes on to ask).
fn served(world: &World) -> (u64, u64) {
    let requests: Vec<_> = world
        .api
        .seen()
        .into_iter()
        .filter(|r| {
            let line = r.line.to_ascii_lowercase();
            ["generatecontent", "/messages"]
                .iter()
                .any(|path| line.contains(path))
                && !line.contains("count")
        })
        .collect();
    let turn = requests
        .iter()
        .position(|r| {
            r.body["systemInstruction"]
                .to_string()
                .contains("managed memory extraction")
        })
        .unwrap_or(requests.len());
    (turn as u64, (requests.len() - turn) as u64)
}

/// A dollar budget over ACP: the step's model is chosen over the protocol, the tokens the
/// agent reports for every request are priced, the ledger holds what the API served, and the
/// run stops at the budget between steps.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs the agent CLIs from npm: cargo test --features external-tests"
)]
fn a_dollar_budget_over_acp_counts_every_request_an_agent_reports() {
    let two_steps = "name: scenario\nsteps:\n  - id: implement\n    role: dev\n    command: Create src/hello.txt, run the tests and commit\n    timeout: 120s\n    postconditions: [{file_exists: src/hello.txt}, tests_pass]\n  - {id: again, role: dev, command: Do it again, timeout: 120s}\n";
    for cli in [Cli::Gemini, Cli::Copilot] {
        let world = over_acp(
            cli,
            honest(),
            two_steps,
            "orchestration:\n  budget_usd: 0.05\n  agents:\n    dev: {model: test-model}\n  prices:\n    test-model: {input: 100, cached_input: 10, output: 1000}\n",
        );
        let run = world.run();
        assert_eq!(run.code, 6, "{}", world.explain(&run));
        let done = world.named("step_completed");
        assert_eq!(done.len(), 1, "{}", world.explain(&run));
        // Per request the API serves 1,100 input tokens (1,000 of them cached) and 20 out,
        // and to an Anthropic client 500 cache writes, read fresh. Over ACP Gemini CLI
        // reports the input whole, so it is priced as read fresh.
        let (served, background) = served(&world);
        assert_eq!(background, 0);
        let (fresh, cached) = match cli {
            Cli::Gemini => (1100, 0),
            _ => (600, 1000),
        };
        assert_eq!(
            ledger(&done[0]),
            (fresh * served, cached * served, 20 * served),
            "{cli:?}: the ledger holds what the API served ({served} requests)\n{}",
            world.explain(&run)
        );
        assert_eq!(done[0]["detail"]["cost_priced"], true, "{}", done[0]);
        assert_eq!(world.named("limit_budget_reached").len(), 1);
        // The morning report's page has the model's row: its tokens, as journaled.
        let page = world.env.root().join("report.html");
        let report = world.bmad(&["report", "--html", page.to_str().unwrap()]);
        assert_eq!(report.code, 0, "{}", report.stderr);
        let html = std::fs::read_to_string(&page).unwrap();
        let row = format!(
            "<tr><td>test-model</td><td>{}</td><td>{}</td><td>{}</td>",
            fresh * served,
            cached * served,
            20 * served
        );
        assert!(html.contains(&row), "{row}\n{html}");
        // Each request asked for the step's model.
        assert!(world
            .api
            .seen()
            .iter()
            .all(|r| { !r.line.contains("generateContent") || r.line.contains("/test-model:") }));
    }
}

/// Copilot CLI headless: an honest step is done, a lie is not, a push is refused by its own
/// rules before the hooks.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs the agent CLIs from npm: cargo test --features external-tests"
)]
fn copilot_cli_headless_is_done_only_when_the_work_is_there() {
    let world = World::new(Cli::Copilot, honest(), IMPLEMENT);
    let run = world.run();
    assert_eq!(run.code, 0, "{}", world.explain(&run));
    assert_eq!(read(&world.worktree, "src/hello.txt"), "hello\n");
    let done = world.named("step_completed");
    assert!(
        done[0]["detail"]["agent_session_id"].is_string(),
        "{}",
        done[0]
    );
    assert_eq!(
        done[0]["detail"]["final_text"], "Created src/hello.txt; the tests pass.",
        "{}",
        done[0]
    );

    let lying = World::new(
        Cli::Copilot,
        vec![Turn::Answer("Done: created src/hello.txt.".into())],
        IMPLEMENT,
    );
    let run = lying.run();
    assert_not_done(&lying, &run, "src/hello.txt is missing");

    let pushing = World::new(
        Cli::Copilot,
        vec![
            write_hello(),
            Turn::Shell("git push --force origin HEAD:main".into()),
            Turn::Answer("Created src/hello.txt and pushed it.".into()),
        ],
        IMPLEMENT,
    );
    let run = pushing.run_with_remote();
    let remote_log = pushing.remote_log();
    assert!(
        remote_log.is_empty(),
        "pushed: {remote_log}\n{}",
        pushing.explain(&run)
    );
}

/// Copilot CLI headless prints no tokens: it exports each request's, as the request ends, to
/// the OpenTelemetry file git-bmad names. An honest step's ledger holds what the API served,
/// priced, with the premium requests it counts (none with a provider of the user's own); a
/// dollar budget stops an agent that would go on for ever within a request of reaching it;
/// in walls of bubblewrap and of Landlock alone.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs the agent CLIs from npm: cargo test --features external-tests"
)]
fn copilot_cli_headless_is_budgeted_by_the_tokens_it_logs_as_it_runs() {
    let config = |budget_usd: f64| {
        format!("runners:\n  default: copilot\nchecks:\n  test_command: sh test.sh\norchestration:\n  budget_usd: {budget_usd}\n  agents:\n    dev: {{model: test-model}}\n  prices:\n    test-model: {{input: 100, cached_input: 10, output: 1000}}\n")
    };
    for bubblewrap_refused in [false, true] {
        let world = World::reached(
            Cli::Copilot,
            Reach::Link,
            bubblewrap_refused,
            honest(),
            IMPLEMENT,
        );
        world.configure(&config(5.0));
        let run = world.run();
        assert_eq!(run.code, 0, "{}", world.explain(&run));
        let started = &world.named("step_started")[0]["detail"];
        let walls = started["walls"].as_str().unwrap_or_default();
        let expected = if bubblewrap_refused {
            "alone"
        } else {
            "bubblewrap and"
        };
        assert!(walls.contains(expected), "{started:#}");
        let done = world.named("step_completed");
        assert_eq!(done.len(), 1, "{}", world.explain(&run));
        // Per request the API serves 100 input tokens, 1,000 read from the cache and 500
        // written to it (read fresh), and 20 out.
        let (requests, _) = served(&world);
        assert!(requests >= 4, "{}", world.explain(&run));
        assert_eq!(
            ledger(&done[0]),
            (600 * requests, 1000 * requests, 20 * requests),
            "the ledger holds what the API served ({requests} requests)\n{}",
            world.explain(&run)
        );
        assert_eq!(done[0]["detail"]["cost_priced"], true, "{}", done[0]);
        assert_eq!(done[0]["detail"]["premium_requests"], 0.0, "{}", done[0]);

        // An agent that would write files for ever, with two and a half requests' budget, on
        // a model that takes a moment over each answer, as a real one does.
        let endless = World::serving(
            Cli::Copilot,
            Reach::Link,
            bubblewrap_refused,
            ModelApi::start_paced(
                crate::test_real_cli::writing("src/f", 40),
                std::time::Duration::from_millis(300),
            ),
            IMPLEMENT,
        );
        endless.configure(&config(0.225));
        let run = endless.run();
        assert_eq!(run.code, 6, "{}", endless.explain(&run));
        let failed = endless.named("step_failed");
        assert_eq!(failed.len(), 1, "{}", endless.explain(&run));
        assert_eq!(failed[0]["trigger"], "budget", "{}", failed[0]);
        let (requests, _) = served(&endless);
        assert!(
            (3..=4).contains(&requests),
            "{requests} requests\n{}",
            endless.explain(&run)
        );
        // Charged what it logged: each request the API served but one in flight.
        let (fresh, cached, out) = ledger(&failed[0]);
        assert!(
            (requests - 1..=requests).contains(&(cached / 1000))
                && (fresh, out) == (600 * cached / 1000, 20 * cached / 1000),
            "{:?} for {requests} requests\n{}",
            (fresh, cached, out),
            endless.explain(&run)
        );
        assert_eq!(endless.named("limit_budget_reached").len(), 1);
    }
}

/// Qwen Code and OpenCode leave requests out of what they report over ACP: the ledger holds
/// what they report, and a budget that could not count the rest refuses to start.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs the agent CLIs from npm: cargo test --features external-tests"
)]
fn an_agent_that_reports_part_of_its_tokens_over_acp_cannot_be_budgeted() {
    for cli in [Cli::Qwen, Cli::OpenCode] {
        let world = over_acp(cli, honest(), IMPLEMENT, "");
        let run = world.run();
        assert_eq!(run.code, 0, "{}", world.explain(&run));
        let (served, background) = served(&world);
        let done = world.named("step_completed");
        match cli {
            // Every request of the turn; the memory extraction after it, never.
            Cli::Qwen => {
                assert!(background >= 1, "{}", world.explain(&run));
                assert_eq!(ledger(&done[0]), (100 * served, 1000 * served, 20 * served));
            }
            // Its last request alone (Anthropic's 500 cache writes are read fresh).
            _ => {
                assert!(served > 1, "{}", world.explain(&run));
                assert_eq!(ledger(&done[0]), (600, 1000, 20));
            }
        }
        world.configure(&format!(
            "runners:\n  default: {0}\n  {0}: {{protocol: acp}}\norchestration:\n  budget_usd: 5\n  prices:\n    test-model: {{input: 1, output: 1}}\n",
            cli.name()
        ));
        let refused = world.bmad(&["run", "scenario"]);
        assert_eq!(refused.code, 2, "{}", world.explain(&refused));
        assert!(
            refused
                .stderr
                .contains("over ACP cannot be counted by orchestration.budget_usd"),
            "{}",
            refused.stderr
        );
        assert_eq!(world.named("step_started").len(), 1, "nothing more ran");
    }
}

/// An edit outside the session's worktree is refused when the agent asks for it, whatever
/// its own rules would allow.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs the agent CLIs from npm: cargo test --features external-tests"
)]
fn an_edit_outside_the_worktree_is_refused_over_acp() {
    for cli in ACP {
        let world = over_acp(
            cli,
            vec![
                Turn::Write {
                    path: "../escaped.txt".into(),
                    content: "out\n".into(),
                },
                write_hello(),
                Turn::Answer("Created src/hello.txt.".into()),
            ],
            IMPLEMENT,
            "",
        );
        let run = world.run();
        let escaped = world.worktree.parent().unwrap().join("escaped.txt");
        assert!(!escaped.exists(), "{cli:?} wrote outside its worktree");
        match cli {
            // Its own file tool refuses a path outside its workspace before asking anyone.
            Cli::Gemini => assert_eq!(run.code, 0, "{}", world.explain(&run)),
            // It writes through its shell (it has no file tool the model picks): a command
            // the guard lets by, whose write lands inside the walls, not on the disk.
            Cli::Copilot => assert_eq!(run.code, 0, "{}", world.explain(&run)),
            _ => assert_not_done(&world, &run, "is outside the session's worktree"),
        }
    }
}

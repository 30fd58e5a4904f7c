//! The epic runner's two goals (issue 18), each beside a baseline in the same run:
//!
//! 1. Scheduling a 200-story sprint: `git bmad epic plan 1 --json` (dependency order,
//!    parallel waves, stacked branches, overlapping `touches`, reading every story file) vs.
//!    BMAD's own `sprint_plan.py status` on the same sprint-status.yaml (which only picks the
//!    next story). Goal: under 50 ms.
//! 2. `git bmad epic status 1 --json` on that epic with a 10,000-event epic journal vs.
//!    `git notes show` of the same journal (the raw read, no replay). Goal: under 100 ms.
//!
//! The journal is built through the library (its `story_stage` events are reserved: no
//! command writes them). BMAD's script comes from `../shared/reference/bmad-current` and
//! runs in a virtualenv with ruamel.yaml (made under target/); without them the baseline is
//! skipped and says so. Run: cargo build --release && cargo bench --bench epic

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use git_bmad::policy::SessionPolicy;
use git_bmad::session::schema::{Stage, StoryStage};
use git_bmad::session::Repo;
use git_bmad::session::{self, Body, NewEvent, StartOptions};

mod common;
use common::{git, ms};

const STORIES: usize = 200;
const EVENTS: usize = 10_000;
const SAMPLES: usize = 21;

fn main() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (bin, dir) = common::release_binary_and_hermetic_dir();
    let repo_dir = dir.path().join("repo");
    let status_file = sprint(&repo_dir);
    git(&repo_dir, &["init", "-q", "-b", "main"]);
    git(&repo_dir, &["add", "-A"]);
    git(&repo_dir, &["commit", "-q", "-m", "a 200-story sprint"]);

    // 1. Scheduling.
    let bmad = |args: &[&str]| -> Vec<u8> {
        let out = Command::new(&bin)
            .args(args)
            .current_dir(&repo_dir)
            .output()
            .expect("spawn");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let plan = || {
        let out = bmad(&["epic", "plan", "1", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(v["plan"]["stories"].as_array().map(Vec::len), Some(STORIES));
        // Ten chains of twenty: twenty waves.
        assert_eq!(v["plan"]["waves"].as_array().map(Vec::len), Some(20));
    };
    let ours = time(plan);
    let script =
        here.join("../shared/reference/bmad-current/bmad-sprint-planning/scripts/sprint_plan.py");
    let python = bmad_python(here);
    println!("== 1. scheduling a {STORIES}-story sprint (dependencies, waves, touches)");
    println!(
        "git bmad epic plan 1          median {:>7.2} ms   ({SAMPLES} runs; goal < 50 ms)",
        ms(ours)
    );
    match (&python, script.exists()) {
        (Some(python), true) => {
            let base = time(|| {
                let out = Command::new(python)
                    .arg(&script)
                    .args(["status", "--status-file"])
                    .arg(&status_file)
                    .output()
                    .expect("spawn python");
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stdout)
                );
            });
            println!(
                "sprint_plan.py status (BMAD)  median {:>7.2} ms   (the next story only)",
                ms(base)
            );
            println!("ratio ours/baseline           {:.2}", ms(ours) / ms(base));
        }
        _ => println!("(BMAD's sprint_plan.py or python with ruamel.yaml not found: no baseline)"),
    }

    // 2. Status over a 10,000-event epic journal.
    let repo = Repo::discover(&repo_dir).expect("open");
    let epic = session::start(
        &repo,
        &StartOptions {
            name: "epic-1".into(),
            ..Default::default()
        },
        &SessionPolicy::default(),
    )
    .expect("start")
    .session;
    let built = Instant::now();
    let stages = [
        Stage::Started,
        Stage::Gated,
        Stage::Built,
        Stage::Verified,
        Stage::Done,
    ];
    for i in 0..EVENTS {
        let key = story_key(i % STORIES + 1);
        let stage = StoryStage {
            stage: stages[(i / STORIES) % stages.len()],
            rounds: Some((i / STORIES) as u32 % 4),
            cost_usd: Some(0.01),
            ..Default::default()
        };
        session::append(
            repo.git(git_bmad::git::Direct),
            &epic.id,
            NewEvent::new(Body::StoryStage(stage)).step(Some(key)),
        )
        .expect("append");
    }
    eprintln!(
        "built an epic journal of {EVENTS} events in {:.1} s",
        built.elapsed().as_secs_f64()
    );
    let ours = time(|| {
        bmad(&["epic", "status", "1", "--json"]);
    });
    let head = git(
        &repo_dir,
        &[
            "rev-parse",
            &format!("refs/bmad/sessions/{}/checkpoints", epic.id),
        ],
    );
    let notes = format!("--ref=refs/notes/bmad/{}", epic.id);
    let base = time(|| {
        git(&repo_dir, &["notes", &notes, "show", head.trim()]);
    });
    println!("\n== 2. epic status, {STORIES} stories, {EVENTS}-event journal");
    println!(
        "git bmad epic status 1        median {:>7.2} ms   ({SAMPLES} runs; goal < 100 ms)",
        ms(ours)
    );
    println!("git notes show (raw read)     median {:>7.2} ms", ms(base));
    println!("ratio ours/baseline           {:.2}", ms(ours) / ms(base));
}

/// `1-007-story-7`.
fn story_key(n: usize) -> String {
    format!("1-{n}-story-{n}")
}

/// A v6 project: one epic of 200 stories, each a file with `touches` and a dependency on
/// the story ten before it (ten chains of twenty); its sprint-status.yaml path.
fn sprint(repo: &Path) -> PathBuf {
    let artifacts = repo.join("_bmad-output/implementation-artifacts");
    std::fs::create_dir_all(&artifacts).expect("artifacts");
    std::fs::create_dir_all(repo.join("_bmad/bmm")).expect("bmm");
    std::fs::write(
        repo.join("_bmad/bmm/config.yaml"),
        "implementation_artifacts: \"{project-root}/_bmad-output/implementation-artifacts\"\n",
    )
    .expect("bmm config");
    let mut status = String::from(
        "generated: 2026-11-20T09:30:00+0000\nproject: Bench\ntracking_system: file-system\nstory_location: \"{project-root}/_bmad-output/implementation-artifacts\"\n\ndevelopment_status:\n  epic-1: in-progress\n",
    );
    for n in 1..=STORIES {
        let key = story_key(n);
        status.push_str(&format!("  {key}: ready-for-dev\n"));
        let depends = if n > 10 {
            format!("depends_on: [{}]\n", story_key(n - 10))
        } else {
            String::new()
        };
        std::fs::write(
            artifacts.join(format!("{key}.md")),
            format!(
                "---\n{depends}touches: [src/part{}]\n---\n# Story 1.{n}: story {n}\n\nStatus: ready-for-dev\n\n## Story\n\nAs a user, I want part {n}.\n\n## Tasks / Subtasks\n\n- [ ] Task 1\n",
                n % 20
            ),
        )
        .expect("story");
    }
    status.push_str("  epic-1-retrospective: optional\n");
    let path = artifacts.join("sprint-status.yaml");
    std::fs::write(&path, status).expect("status");
    path
}

/// A python with ruamel.yaml for BMAD's script: a virtualenv under target/, made once.
fn bmad_python(here: &Path) -> Option<PathBuf> {
    let venv = here.join("target/bench-venv");
    let python = venv.join("bin/python");
    let has_ruamel = |p: &Path| {
        Command::new(p)
            .args(["-c", "import ruamel.yaml"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if python.exists() && has_ruamel(&python) {
        return Some(python);
    }
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .is_ok_and(|s| s.success())
        && Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "ruamel.yaml>=0.18"])
            .status()
            .is_ok_and(|s| s.success());
    (made && has_ruamel(&python)).then_some(python)
}

/// The median of [`SAMPLES`] calls, after one that warms the page cache.
fn time(mut f: impl FnMut()) -> Duration {
    f();
    common::median_time(SAMPLES, f)
}

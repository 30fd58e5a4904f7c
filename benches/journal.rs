//! Journal append with 10,000 events already in the journal (goal: under 10 ms).
//!
//! Builds a real session in a throwaway repository through the library, with a checkpoint
//! every 10 events as a playbook run would take them, then times further appends: the
//! library call alone (the journal write), and the `git bmad journal append` command (process
//! start, append, and the journal.md re-render). Baseline: `git notes append` on the same
//! repository. Run: cargo bench --bench journal

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use git_bmad::git::Repo;
use git_bmad::policy::SessionPolicy;
use git_bmad::session::{self, Body, NewEvent, StartOptions};

mod common;
use common::{git, ms};

const EVENTS: usize = 10_000;
const EVENTS_PER_CHECKPOINT: usize = 10;
const SAMPLES: usize = 100;

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Hermetic git for this process and its children.
    common::hermetic_git(dir.path());
    let repo_dir = dir.path().join("repo");
    std::fs::create_dir_all(&repo_dir).expect("repo dir");
    git(&repo_dir, &["init", "-q", "-b", "main"]);
    std::fs::write(repo_dir.join("README.md"), "bench\n").expect("readme");
    git(&repo_dir, &["add", "-A"]);
    git(&repo_dir, &["commit", "-q", "-m", "initial"]);

    let repo = Repo::discover(&repo_dir).expect("open");
    let started = session::start(
        session::Repo::of(&repo),
        &StartOptions {
            name: "bench".into(),
            ..Default::default()
        },
        &SessionPolicy::default(),
    )
    .expect("start");
    let s = started.session;
    let built = Instant::now();
    for i in 0..EVENTS {
        if i % EVENTS_PER_CHECKPOINT == 0 {
            session::checkpoint(
                session::Repo::of(&repo),
                &s,
                &format!("step {i}"),
                None,
                Some(format!("s{i}")),
                &SessionPolicy::default(),
            )
            .expect("checkpoint");
        } else {
            session::append(
                &repo,
                &s.id,
                NewEvent::new(Body::from_parts("note".into(), serde_json::json!({"i": i}))),
            )
            .expect("append");
        }
    }
    eprintln!(
        "built a journal of {EVENTS} events in {:.1} s",
        built.elapsed().as_secs_f64()
    );

    let mut library = Vec::new();
    for i in 0..SAMPLES {
        let t = Instant::now();
        session::append(
            &repo,
            &s.id,
            NewEvent::new(Body::from_parts(
                "note".into(),
                serde_json::json!({"sample": i}),
            )),
        )
        .expect("append");
        library.push(t.elapsed());
    }
    let journal_read = {
        let t = Instant::now();
        let journal = session::read_journal(session::Repo::of(&repo), &s.id).expect("read");
        let read = t.elapsed();
        let t = Instant::now();
        session::write_rendered(&s, &journal).expect("render");
        (read, t.elapsed(), journal.entries.len())
    };

    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/git-bmad");
    let mut cli = Vec::new();
    if bin.exists() {
        for i in 0..20 {
            let t = Instant::now();
            let ok = Command::new(&bin)
                .args([
                    "journal",
                    "append",
                    "note",
                    "-q",
                    "--detail",
                    &format!("{{\"cli\":{i}}}"),
                ])
                .current_dir(&s.worktree)
                .output()
                .expect("spawn")
                .status
                .success();
            assert!(ok, "git bmad journal append failed");
            cli.push(t.elapsed());
        }
    }
    let head = git(
        &repo_dir,
        &[
            "rev-parse",
            &format!("refs/bmad/sessions/{}/checkpoints", s.id),
        ],
    );
    let mut baseline = Vec::new();
    for i in 0..20 {
        let t = Instant::now();
        git(
            &repo_dir,
            &[
                "notes",
                "--ref=refs/notes/bench",
                "append",
                "-m",
                &format!("{{\"baseline\":{i}}}"),
                head.trim(),
            ],
        );
        baseline.push(t.elapsed());
    }

    println!(
        "journal with {} events, a checkpoint every {EVENTS_PER_CHECKPOINT}:",
        journal_read.2
    );
    println!("  append (library, the journal write)      median {:>7.2} ms   p95 {:>7.2} ms   goal < 10 ms", ms(median(&mut library)), ms(p95(&mut library)));
    if !cli.is_empty() {
        println!(
            "  git bmad journal append (+render)        median {:>7.2} ms",
            ms(median(&mut cli))
        );
    } else {
        println!("  (build target/release/git-bmad to time the command too)");
    }
    println!(
        "  git notes append (baseline, other ref)   median {:>7.2} ms",
        ms(median(&mut baseline))
    );
    println!(
        "  read whole journal {:.2} ms; render journal.md {:.2} ms",
        ms(journal_read.0),
        ms(journal_read.1)
    );
    println!(
        "  ratio append/library vs git notes append: {:.2}",
        ms(median(&mut library)) / ms(median(&mut baseline))
    );
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn p95(v: &mut [Duration]) -> Duration {
    v.sort();
    v[(v.len() * 95 / 100).min(v.len() - 1)]
}

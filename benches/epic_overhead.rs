//! The epic runner's overhead per story, agents excluded (issue 18), beside the baseline a
//! hand-written runner pays: each story in its own branch and worktree, the agent run, the
//! work committed and the branch pushed, with none of the checks, checkpoints, journal,
//! reviews or pull requests git-bmad adds.
//!
//! Both sides run the same instant agent (a shell script that writes the story's code and
//! moves its status to review, and approves every review), on fresh copies of the same
//! 12-story BMAD v6 epic with a local bare remote. Printed: the whole run, the time the
//! agent processes themselves take, and what is left per story; then the ratio.
//!
//! git-bmad runs twice: with its acceptance tests (the default: an agent writes a failing
//! test per story before its dev, which git-bmad checks red on the base and runs over the
//! pushed commit) and with `epic.acceptance_tests: off`. Printed: what they add per story,
//! in time and in agent invocations.
//! Run: cargo build --release && cargo bench --bench epic_overhead

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod common;
use common::{git, ms};

const STORIES: usize = 12;
const SAMPLES: usize = 5;

/// The instant agent, as `claude -p --output-format json` answers.
const AGENT: &str = r#"#!/bin/sh
key=$BMAD_ARGS
case "$BMAD_STEP" in
  acceptance)
    mkdir -p tests && echo "test -f src/$key.rs" > "tests/accept-$key.sh"
    r="wrote tests/accept-$key.sh" ;;
  dev)
    mkdir -p src && echo "// $key" > "src/$key.rs"
    f="_bmad-output/implementation-artifacts/$key.md"
    sed 's/^Status: .*/Status: review/' "$f" > "$f.new" && mv "$f.new" "$f"
    r="implemented $key" ;;
  *) r="Outcome: Approve" ;;
esac
printf '{"type":"result","subtype":"success","is_error":false,"result":"%s","session_id":"b","total_cost_usd":0,"usage":{"input_tokens":1,"output_tokens":1},"permission_denials":[]}\n' "$r"
"#;

fn main() {
    let (bin, dir) = common::release_binary_and_hermetic_dir();
    let tools = dir.path().join("bin");
    std::fs::create_dir_all(&tools).unwrap();
    let agent = tools.join("claude");
    std::fs::write(&agent, AGENT).unwrap();
    make_executable(&agent);
    let path = format!(
        "{}:{}",
        tools.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::env::set_var("PATH", &path);

    // The agent alone: the same invocations (a dev and a review per story), in a copy of
    // the project, so its file writes cost what they cost in a run.
    let agents = median(|round| {
        let repo = project(dir.path(), &format!("agents-{round}"));
        let started = Instant::now();
        for n in 1..=STORIES {
            for step in ["dev", "review-1"] {
                let out = Command::new(&agent)
                    .env("BMAD_ARGS", key(n))
                    .env("BMAD_STEP", step)
                    .current_dir(&repo)
                    .output()
                    .unwrap();
                assert!(out.status.success());
            }
        }
        started.elapsed()
    });

    // git-bmad's run, with its acceptance tests or without: the time, and the agent
    // invocations its stories record.
    let epic = |acceptance: bool| {
        let invocations = std::cell::Cell::new(0u64);
        let took = median(|round| {
            let name = format!("ours-{acceptance}-{round}");
            let repo = project(dir.path(), &name);
            if !acceptance {
                let config = repo.join(".bmad/config.yaml");
                let text = std::fs::read_to_string(&config).unwrap();
                std::fs::write(&config, text + "epic:\n  acceptance_tests: off\n").unwrap();
                git(&repo, &["commit", "-qam", "no acceptance tests"]);
                git(&repo, &["push", "-q", "origin", "main"]);
            }
            let started = Instant::now();
            let out = Command::new(&bin)
                .args(["epic", "run", "1"])
                .current_dir(&repo)
                .output()
                .unwrap();
            let took = started.elapsed();
            assert!(
                out.status.success(),
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let status = Command::new(&bin)
                .args(["epic", "status", "1", "--json"])
                .current_dir(&repo)
                .output()
                .unwrap();
            let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
            let stories = status["stories"].as_array().unwrap();
            assert!(stories.iter().all(|s| s["stage"] == "done"), "{status:#}");
            if acceptance {
                let kept = stories.iter().all(|s| {
                    let tests = s["state"]["tests"].as_str().unwrap_or_default();
                    tests.contains("acceptance test file(s), unseen by its agents, pass")
                });
                assert!(kept, "{status:#}");
            }
            invocations.set(
                stories
                    .iter()
                    .filter_map(|s| s["state"]["invocations"].as_u64())
                    .sum(),
            );
            took
        });
        (took, invocations.get())
    };
    let (ours, with_invocations) = epic(true);
    let (without, without_invocations) = epic(false);

    let script = median(|round| {
        let repo = project(dir.path(), &format!("script-{round}"));
        let started = Instant::now();
        for n in 1..=STORIES {
            let key = key(n);
            let wt = repo.with_file_name(format!("script-{round}.{key}"));
            let branch = format!("bmad/{key}");
            git(
                &repo,
                &["worktree", "add", "-q", "-b", &branch, wt.to_str().unwrap()],
            );
            for step in ["dev", "review-1"] {
                let out = Command::new(&agent)
                    .env("BMAD_ARGS", &key)
                    .env("BMAD_STEP", step)
                    .current_dir(&wt)
                    .output()
                    .unwrap();
                assert!(out.status.success());
            }
            git(&wt, &["add", "-A"]);
            git(&wt, &["commit", "-q", "-m", &format!("Story {key}")]);
            git(&wt, &["push", "-q", "origin", &branch]);
        }
        started.elapsed()
    });

    let per_story = |total: Duration| (ms(total) - ms(agents)) / STORIES as f64;
    println!("== epic run overhead, {STORIES} stories, agents excluded ({SAMPLES} runs, median)");
    println!("the agent processes alone       {:>8.1} ms", ms(agents));
    println!(
        "git bmad epic run 1             {:>8.1} ms   overhead {:>6.1} ms per story",
        ms(ours),
        per_story(ours)
    );
    println!(
        "  acceptance tests off          {:>8.1} ms   overhead {:>6.1} ms per story",
        ms(without),
        per_story(without)
    );
    println!(
        "worktree + commit + push loop   {:>8.1} ms   overhead {:>6.1} ms per story",
        ms(script),
        per_story(script)
    );
    println!(
        "ratio ours/baseline (overhead)  {:.2}",
        per_story(ours) / per_story(script)
    );
    println!(
        "acceptance tests add            {:>8.1} ms per story (agent included), {:.1} invocation(s) per story ({with_invocations} with, {without_invocations} without)",
        (ms(ours) - ms(without)) / STORIES as f64,
        (with_invocations as f64 - without_invocations as f64) / STORIES as f64
    );
}

/// The median of [`SAMPLES`] runs, each given its round number for a fresh copy; the
/// closure times only the part that counts (the copy is set up before its clock starts).
fn median(f: impl Fn(usize) -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..SAMPLES).map(&f).collect();
    times.sort();
    times[times.len() / 2]
}

/// `1-7-story-7`.
fn key(n: usize) -> String {
    format!("1-{n}-story-{n}")
}

/// A fresh copy of the epic: a v6 project with `STORIES` independent stories, committed,
/// with a bare remote; its path.
fn project(root: &Path, name: &str) -> PathBuf {
    let repo = root.join(name);
    let artifacts = repo.join("_bmad-output/implementation-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::create_dir_all(repo.join("_bmad/bmm")).unwrap();
    std::fs::write(
        repo.join("_bmad/bmm/config.yaml"),
        "implementation_artifacts: \"{project-root}/_bmad-output/implementation-artifacts\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(repo.join(".bmad")).unwrap();
    std::fs::write(
        repo.join(".bmad/config.yaml"),
        "checks:\n  test_command: sh test.sh\nrunners:\n  default: claude\n",
    )
    .unwrap();
    // Every `tests/*.sh` is a test.
    std::fs::write(
        repo.join("test.sh"),
        "for t in tests/*.sh; do [ -f \"$t\" ] || continue; sh \"$t\" || exit 1; done\n",
    )
    .unwrap();
    for command in ["bmad-dev-story", "bmad-code-review"] {
        let file = repo.join(format!(".claude/commands/{command}.md"));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            file,
            format!("---\ndescription: {command}\n---\n$ARGUMENTS\n"),
        )
        .unwrap();
    }
    let mut status = String::from(
        "generated: 2026-11-24T09:00:00+0000\nproject: Bench\ntracking_system: file-system\nstory_location: \"{project-root}/_bmad-output/implementation-artifacts\"\n\ndevelopment_status:\n  epic-1: in-progress\n",
    );
    for n in 1..=STORIES {
        let key = key(n);
        status.push_str(&format!("  {key}: ready-for-dev\n"));
        std::fs::write(
            artifacts.join(format!("{key}.md")),
            format!("---\ntouches: [src/{key}.rs]\n---\n# Story 1.{n}: story {n}\n\nStatus: ready-for-dev\n\n## Tasks / Subtasks\n\n- [ ] Task 1\n"),
        )
        .unwrap();
    }
    status.push_str("  epic-1-retrospective: optional\n");
    std::fs::write(artifacts.join("sprint-status.yaml"), status).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "an epic"]);
    let remote = root.join(format!("{name}.git"));
    git(root, &["init", "-q", "--bare", remote.to_str().unwrap()]);
    git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    git(&repo, &["push", "-q", "origin", "main"]);
    repo
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

//! The coordinator's calls of GitHub's API, through `gh`, as the API really answers: a call
//! that fails the way it fails now and then (a 5xx, the network) is tried again after a
//! pause that doubles; a rate limit is waited out by the next poll, never hammered; and the
//! story jobs are listed once per poll for every story followed.
//!
//! The arithmetic: the job token allows 1,000 requests an hour per repository. One list per
//! poll (20 s) is 180 an hour whatever `--parallel` is; a night of 8 hours at `--parallel 20`
//! adds a dispatch per story and attempt (at most 3 a story) and the runners' own pull
//! request calls (2 a story): for 60 stories, 1,440 + 180 + 120 = 1,740 over 8 hours, about
//! 220 an hour. Listing per story, as before, was 180 an hour for each story followed.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::super::closeout::gh;
use super::super::Error;
use super::{run_prefix, STORY_WORKFLOW};

/// Tries of a call that failed transiently, the first included.
const TRIES: u32 = 4;

/// The first pause after a transient failure (`BMAD_GH_BACKOFF_MS`, else 2 s); each next
/// one doubles.
fn first_pause() -> Duration {
    crate::env::millis(crate::env::Var::GhBackoffMs, 2_000)
}

/// How a call of `gh` failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Failed {
    /// The API may answer next time (a 5xx, the network, a rate limit): what gh said.
    ForNow(String),
    /// It will not (refused, not found, not logged in): what gh said.
    ForGood(String),
}

/// What a failed call's output says of the next one.
fn judge(said: &str) -> Failed {
    let lower = said.to_ascii_lowercase();
    let passing = [
        "http 500",
        "http 502",
        "http 503",
        "http 504",
        "http 429",
        "rate limit",
        "timeout",
        "timed out",
        "connection reset",
        "connection refused",
        "error connecting",
        "eof",
        "tls handshake",
        "temporary failure in name resolution",
    ];
    if passing.iter().any(|p| lower.contains(p)) {
        Failed::ForNow(said.to_owned())
    } else {
        Failed::ForGood(said.to_owned())
    }
}

/// Whether gh said the rate limit is spent: waited out by the next poll, not tried again.
fn rate_limited(said: &str) -> bool {
    let lower = said.to_ascii_lowercase();
    lower.contains("rate limit") || lower.contains("http 429")
}

/// `gh args`: its standard output, or how it failed after the tries a transient failure
/// gets.
pub(super) fn call(
    program: &Path,
    args: &[String],
    cwd: &Path,
    interrupt: &AtomicBool,
) -> Result<Result<Vec<u8>, Failed>, Error> {
    let mut pause = first_pause();
    let mut tries = 0;
    loop {
        tries += 1;
        let out = gh(program, args.to_vec(), cwd, interrupt)?;
        if out.exit.success() {
            return Ok(Ok(out.stdout.head().to_vec()));
        }
        let said = String::from_utf8_lossy(out.stderr.head()).trim().to_owned();
        let failed = judge(&said);
        let again = matches!(failed, Failed::ForNow(_)) && !rate_limited(&said);
        if !again || tries >= TRIES {
            return Ok(Err(failed));
        }
        crate::runner::interrupt::sleep(pause, interrupt);
        pause *= 2;
    }
}

/// One story job as `gh run list` shows it.
#[derive(Debug, PartialEq)]
pub(super) struct JobRun {
    pub(super) id: u64,
    pub(super) attempt: u32,
    pub(super) active: bool,
    pub(super) conclusion: String,
}

/// The last list of the story workflow's runs: when it was asked for, and what came.
type Listed = (Instant, Result<Vec<u8>, Failed>);

static LISTED: Mutex<Option<Listed>> = Mutex::new(None);

/// The jobs of story `key` of `epic`, every attempt, from a list of the story workflow's
/// runs no older than `fresh` (one call serves every story followed). `Ok(Err)`: the list
/// could not be had this time, and why.
pub(super) fn story_runs(
    program: &Path,
    cwd: &Path,
    epic: &str,
    key: &str,
    fresh: Duration,
    interrupt: &AtomicBool,
) -> Result<Result<Vec<JobRun>, Failed>, Error> {
    let mut listed = LISTED.lock().unwrap_or_else(|p| p.into_inner());
    let stale = listed.as_ref().is_none_or(|(at, _)| at.elapsed() >= fresh);
    if stale {
        let args = [
            "run",
            "list",
            "--workflow",
            STORY_WORKFLOW,
            "--json",
            "databaseId,displayTitle,status,conclusion",
            "--limit",
            "200",
        ]
        .map(String::from);
        let answer = call(program, &args, cwd, interrupt)?;
        *listed = Some((Instant::now(), answer));
    }
    let Some((_, answer)) = listed.as_ref() else {
        return Ok(Err(Failed::ForNow("no list yet".into())));
    };
    Ok(answer
        .as_ref()
        .map(|json| parse_runs(json, epic, key))
        .map_err(Clone::clone))
}

/// The runs of story `key` of `epic` in `gh run list --json` output; others are left out.
fn parse_runs(json: &[u8], epic: &str, key: &str) -> Vec<JobRun> {
    let Ok(serde_json::Value::Array(runs)) = serde_json::from_slice(json) else {
        return Vec::new();
    };
    let prefix = run_prefix(epic, key);
    runs.iter()
        .filter_map(|r| {
            let title = r["displayTitle"].as_str()?;
            let attempt = title.strip_prefix(prefix.as_str())?.parse().ok()?;
            Some(JobRun {
                id: r["databaseId"].as_u64().unwrap_or_default(),
                attempt,
                active: r["status"].as_str() != Some("completed"),
                conclusion: r["conclusion"].as_str().unwrap_or_default().to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_gh_says_tells_a_passing_failure_from_a_lasting_one() {
        for said in [
            "HTTP 502: Bad Gateway (https://api.github.com/repos/o/r/actions/runs)",
            "HTTP 403: API rate limit exceeded for installation ID 1234.",
            "HTTP 403: You have exceeded a secondary rate limit.",
            "error connecting to api.github.com",
            "Post \"https://api.github.com/graphql\": net/http: TLS handshake timeout",
        ] {
            assert!(matches!(judge(said), Failed::ForNow(_)), "{said}");
        }
        for said in [
            "could not find any workflows named bmad-story.yml",
            "could not create workflow dispatch event: HTTP 422: No ref found for: 0abc",
            "HTTP 404: Not Found",
            "To get started with GitHub CLI, please run:  gh auth login",
        ] {
            assert!(matches!(judge(said), Failed::ForGood(_)), "{said}");
        }
        assert!(rate_limited("HTTP 403: API rate limit exceeded"));
        assert!(!rate_limited("HTTP 502: Bad Gateway"));
    }

    #[test]
    fn only_the_storys_own_runs_are_read_with_their_attempt() {
        let json = br#"[
            {"databaseId": 7, "displayTitle": "bmad epic 3 story 3.1 attempt 2", "status": "in_progress", "conclusion": ""},
            {"databaseId": 5, "displayTitle": "bmad epic 3 story 3.1 attempt 1", "status": "completed", "conclusion": "cancelled"},
            {"databaseId": 6, "displayTitle": "bmad epic 3 story 3.10 attempt 1", "status": "completed", "conclusion": "success"},
            {"databaseId": 4, "displayTitle": "bmad epic 3 story 3.1 attempt x", "status": "completed", "conclusion": "success"},
            {"databaseId": 3, "displayTitle": "Deploy", "status": "completed", "conclusion": "success"}
        ]"#;
        let runs = parse_runs(json, "3", "3.1");
        assert_eq!(
            runs,
            vec![
                JobRun {
                    id: 7,
                    attempt: 2,
                    active: true,
                    conclusion: String::new()
                },
                JobRun {
                    id: 5,
                    attempt: 1,
                    active: false,
                    conclusion: "cancelled".into()
                },
            ]
        );
        assert!(parse_runs(b"not json", "3", "3.1").is_empty());
    }
}

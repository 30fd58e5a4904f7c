//! The coordinator's side of a story on GitHub Actions: the story's job dispatched
//! (`gh workflow run`), its signed reports taken from the remote as they are pushed, a lost
//! runner replaced by the next dispatch, and the story's session brought back here when it
//! ends, so the integration checkpoint, the close-out and `epic status` see it as if it had
//! run here.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use super::super::job::Job;
use super::super::names::story_session_name;
use super::super::pipeline::Era;
use super::super::story::{asked, fail, End, Message};
use super::super::verify::{self, Verdict};
use super::super::Error;
use super::api::{self, Failed, JobRun};
use super::{remote_record, run_name, STORY_WORKFLOW};
use crate::runner::interrupt::sleep;
use crate::session::schema::{Body, Stage};
use crate::session::{self, closeout, sync, Repo, SessionId};

/// Jobs per story and invocation: a story whose runners are lost this often fails (a
/// resume tries it afresh).
pub const MAX_ATTEMPTS: u32 = 3;

/// How long a dispatched job may take to show up in `gh run list` before it counts as lost.
const SHOW_UP: Duration = Duration::from_secs(600);

/// One fetch at a time, and when the last one is recent enough, none: the followers of
/// several stories share the remote-tracking refs it fills. When the last fetch ended.
static FETCH: Mutex<Option<Instant>> = Mutex::new(None);

/// How often the remote and the runs are looked at: `BMAD_ACTIONS_POLL_MS`, else 20 s.
fn poll() -> Duration {
    crate::env::millis(crate::env::Var::ActionsPollMs, 20_000)
}

/// What every follower shares.
pub(in crate::epic) struct Follow<'a> {
    /// Where story branches are named (`bmad/`).
    pub(in crate::epic) branch_prefix: &'a str,
    /// The branch the workflow is dispatched on: the epic's base.
    pub(in crate::epic) dispatch_ref: &'a str,
    /// Progress lines.
    pub(in crate::epic) progress: &'a (dyn Fn(&str) + Sync),
    /// Set when the user interrupts: following stops, the runners go on.
    pub(in crate::epic) interrupt: &'a AtomicBool,
    /// The policy a session brought back here obeys.
    pub(in crate::epic) policy: &'a dyn session::Policy,
    /// The longest time limit the story workflow at `dispatch_ref` takes for a job (its
    /// `minutes` input's default), when it takes one: a workflow the user wrote or kept from
    /// before may not.
    pub(in crate::epic) minutes: Option<u64>,
}

/// The default of the `minutes` input the story workflow at `git_ref` on `remote` declares (GitHub's
/// largest, 4320, if it is no number); `None` when it declares none: a dispatch with an
/// input the workflow does not declare is refused by GitHub.
pub(in crate::epic) fn takes_minutes(repo: &Repo, remote: &str, git_ref: &str) -> Option<u64> {
    let path = format!(".github/workflows/{STORY_WORKFLOW}");
    // GitHub runs the remote's copy: as the last fetch saw it, else this clone's.
    let theirs = format!("refs/remotes/{remote}/{git_ref}");
    let bytes = match session::repository::file_at(repo, &theirs, &path) {
        Ok(Some(bytes)) => bytes,
        _ => session::repository::file_at(repo, git_ref, &path).ok()??,
    };
    let text = String::from_utf8_lossy(&bytes);
    let workflow = crate::config::yaml::from_str::<crate::config::yaml::Data>(&text).ok()?;
    let input = &workflow["on"]["workflow_dispatch"]["inputs"]["minutes"];
    if input.is_null() {
        return None;
    }
    let default = &input["default"];
    let most = default
        .as_u64()
        .or_else(|| default.as_str().and_then(|s| s.trim().parse().ok()));
    Some(most.unwrap_or(MOST_MINUTES))
}

/// Push the epic's session for the runners to read the run from, not while a follower
/// fetches (both move the remote-tracking refs).
pub(in crate::epic) fn publish_run(
    repo: &Repo,
    epic: &session::Session,
    remote: &str,
) -> Result<(), Error> {
    let _one = FETCH.lock().unwrap_or_else(|p| p.into_inner());
    sync::push(repo, epic, remote, false)?;
    Ok(())
}

/// `gh`, which dispatches and follows the story jobs.
pub(super) fn gh_program() -> Result<std::path::PathBuf, Error> {
    which::which("gh").map_err(|_| {
        Error::Actions("gh is not on PATH: --on actions dispatches and follows the story jobs with it (https://cli.github.com), logged in with gh auth login".into())
    })
}

/// Follow story `job` on GitHub Actions until it ends: dispatch its job (or follow the one
/// an earlier invocation dispatched), pass on each stage its runner reports, dispatch again
/// when a runner is lost before the story ended, and bring the session back at the end.
pub(in crate::epic) fn follow_story(
    job: &Job,
    follow: &Follow<'_>,
    tx: &mpsc::Sender<Message>,
) -> Result<End, Error> {
    let repo = Repo::discover(&job.main)?;
    let program = gh_program()?;
    let key = &job.story.key;
    // A session of the story's here (from a run here, or back from a runner) goes to the
    // runner, unless a job of an earlier invocation still runs it: which, only the list says.
    let runs = loop {
        match story_runs(&program, job, follow)? {
            Some(runs) => break runs,
            None if follow.interrupt.load(Ordering::SeqCst) => return Ok(End::Interrupted),
            None => sleep(poll(), follow.interrupt),
        }
    };
    if !runs.iter().any(|r| r.active) {
        hand_off(&repo, job, follow)?;
    }
    // What was passed on: entry ids (the same in every copy of the journal), those of a
    // session that came back here included, and on a resume nothing from before the last
    // stage recorded here.
    let mut seen = Seen {
        session: None,
        ids: HashSet::new(),
        before: job.known.updated_at.clone(),
        unvouched: 0,
        held: None,
    };
    if let Some(here) = closeout::find_by_name(&repo, &story_session_name(key))? {
        let journal = session::read_journal(&repo, &here.id)?;
        seen.ids.extend(journal.entries.into_iter().map(|e| e.id));
    }
    let mut baseline = job.known.detail.baseline.clone().unwrap_or_default();
    let mut attempt = runs.iter().map(|r| r.attempt).max().unwrap_or(0);
    let stopped_before = matches!(
        job.known.stage,
        Stage::Gated | Stage::Failed | Stage::Blocked
    );
    // The jobs this invocation dispatched: a resume tries a failed story afresh.
    let mut tries = 0;
    let mut dispatched = Instant::now();
    let mut ended: Option<Stage> = None;
    loop {
        if follow.interrupt.load(Ordering::SeqCst) {
            return Ok(End::Interrupted);
        }
        if ended.is_none() {
            ended = take_reports(&repo, job, follow, &mut seen, &mut baseline, tx, false)?;
        }
        // A list that could not be had this time decides nothing: the next poll looks again.
        let Some(runs) = story_runs(&program, job, follow)? else {
            sleep(poll(), follow.interrupt);
            continue;
        };
        let current = runs
            .iter()
            .filter(|r| r.attempt == attempt)
            .max_by_key(|r| r.id);
        let lost = match (current, ended) {
            (Some(run), _) if run.active => false,
            // The story ended and its runner is gone: the session comes back here.
            (_, Some(stage)) => return end(&repo, job, follow, stage, &mut seen, &baseline, tx),
            (None, None) => attempt == 0 || dispatched.elapsed() > SHOW_UP,
            (Some(run), None) => {
                // Its last push may have landed after the look above.
                ended = take_reports(&repo, job, follow, &mut seen, &mut baseline, tx, true)?;
                if let Some(stage) = ended {
                    return end(&repo, job, follow, stage, &mut seen, &baseline, tx);
                }
                // A story resumed after it stopped on a runner (at a gate, failed) goes on
                // with a new job; its last runner was not lost.
                if tries > 0 || !stopped_before {
                    (follow.progress)(&format!(
                        "{key}: the runner of attempt {attempt} ended ({}) before the story did",
                        run.conclusion
                    ));
                }
                true
            }
        };
        if lost {
            if tries >= MAX_ATTEMPTS {
                let mut why = format!(
                    "{tries} runners ended before the story did; gh run list --workflow {STORY_WORKFLOW} shows their logs"
                );
                if seen.unvouched > 0 {
                    why.push_str(&format!(
                        " ({} of their reports are signed by no key in .bmad/allowed_signers on main: add the public half of {} there, git bmad trust list shows what is trusted)",
                        seen.unvouched,
                        super::workflows::SIGNING_SECRET
                    ));
                }
                return Ok(fail(key, why, tx));
            }
            // A dispatch the API did not take this time is made again at the next poll.
            if let Err(said) = dispatch(&program, &job.main, follow, job, attempt + 1)? {
                (follow.progress)(&format!(
                    "{key}: GitHub did not take the dispatch this time ({said}); trying again in {:?}",
                    poll()
                ));
                sleep(poll(), follow.interrupt);
                continue;
            }
            attempt += 1;
            tries += 1;
            (follow.progress)(&format!(
                "{key}: dispatched to GitHub Actions ({})",
                run_name(&job.epic, key, attempt)
            ));
            dispatched = Instant::now();
        }
        sleep(poll(), follow.interrupt);
    }
}

/// Hand the story's session to the runner when it lives here (an earlier run here, or its
/// return from a runner): what a person changed in its worktree goes with it, and the
/// worktree is brought up to date when the story comes back.
fn hand_off(repo: &Repo, job: &Job, follow: &Follow<'_>) -> Result<(), Error> {
    let key = &job.story.key;
    // Not while another follower's sync moves the refs it pushes.
    let mut last = FETCH.lock().unwrap_or_else(|p| p.into_inner());
    // Whether it lives elsewhere now is what the remote says.
    sync::sync(repo, &job.remote, follow.branch_prefix)?;
    *last = Some(Instant::now());
    let Some(here) = closeout::find_living_here(repo, &story_session_name(key))? else {
        return Ok(());
    };
    let handed = session::hand_off(repo, &here, &job.remote, follow.policy)?;
    for path in handed.kept_out {
        (follow.progress)(&format!(
            "{key}: {path} stays here: the policy kept it out of what the runner takes up"
        ));
    }
    Ok(())
}

/// The runner's entries already passed on, and how many of its reports no allowed signer
/// vouched for (at the last look).
struct Seen {
    /// The story's session the reports came from.
    session: Option<SessionId>,
    ids: HashSet<String>,
    before: Option<String>,
    unvouched: usize,
    /// The stage the story ended at, passed on only once its session is back here: what
    /// follows a story's end (the integration checkpoint, a dependent's start) reads it here.
    held: Option<crate::session::schema::StoryStage>,
}

/// Fetch (unless a follower just did and `fresh` is not asked), and pass on the stages the
/// story's runner reported (signed by a key this repository trusts) since `seen`; the stage
/// the story ended at, if it did.
fn take_reports(
    repo: &Repo,
    job: &Job,
    follow: &Follow<'_>,
    seen: &mut Seen,
    baseline: &mut String,
    tx: &mpsc::Sender<Message>,
    fresh: bool,
) -> Result<Option<Stage>, Error> {
    let key = &job.story.key;
    let entries = {
        let mut last = FETCH.lock().unwrap_or_else(|p| p.into_inner());
        // Another follower's fetch within half a poll serves this look too.
        if fresh || last.is_none_or(|t| t.elapsed() >= poll() / 2) {
            // A fetch that fails (the network, a ref busy here) is tried again next look.
            if let Err(e) = sync::sync(repo, &job.remote, follow.branch_prefix) {
                (follow.progress)(&format!("{key}: could not fetch from {}: {e}", job.remote));
                return Ok(None);
            }
            *last = Some(Instant::now());
        }
        match remote_record(repo, &job.remote, &story_session_name(key))? {
            Some((id, entries)) => {
                seen.session = Some(id);
                entries
            }
            None => Vec::new(),
        }
    };
    let mut ended = None;
    seen.unvouched = 0;
    for (entry, vouched) in entries {
        let event = entry.event;
        let Body::StoryStage(stage) = event.body else {
            continue;
        };
        if !vouched {
            seen.unvouched += 1;
            continue;
        }
        if event.step.as_deref() != Some(key.as_str())
            || seen.before.as_ref().is_some_and(|b| event.ts < *b)
            || !seen.ids.insert(entry.id)
        {
            continue;
        }
        if let Some(b) = &stage.baseline {
            baseline.clone_from(b);
        }
        // An end the story went on from (a gate answered) is passed on before what follows.
        if let Some(earlier) = seen.held.take() {
            let _ = tx.send(Message::Stage(key.clone(), Box::new(earlier)));
        }
        ended = match stage.stage {
            Stage::Done | Stage::Failed | Stage::Blocked | Stage::Gated | Stage::Skipped => {
                Some(stage.stage)
            }
            _ => None,
        };
        match ended {
            Some(_) => seen.held = Some(stage),
            None => {
                let _ = tx.send(Message::Stage(key.clone(), Box::new(stage)));
            }
        }
    }
    Ok(ended)
}

/// The story ended on its runner at `stage`: its session comes back here (its runner is
/// gone), and a done story's sprint status is what git-bmad's check of its files says.
fn end(
    repo: &Repo,
    job: &Job,
    follow: &Follow<'_>,
    stage: Stage,
    seen: &mut Seen,
    baseline: &str,
    tx: &mpsc::Sender<Message>,
) -> Result<End, Error> {
    let key = &job.story.key;
    let name = story_session_name(key);
    // The session the reports came from, not another of its name.
    let query = seen
        .session
        .as_ref()
        .map_or(name.as_str(), |id| id.as_str());
    let (session, warnings) = {
        // Not while another follower's sync moves the refs it takes.
        let mut last = FETCH.lock().unwrap_or_else(|p| p.into_inner());
        // The runner's last push (released, with the state the story ended in) came after
        // the report of its end.
        sync::sync(repo, &job.remote, follow.branch_prefix)?;
        *last = Some(Instant::now());
        session::adopt(repo, &job.remote, query, true, follow.policy)?
    };
    for warning in warnings {
        (follow.progress)(&format!("{key}: {warning}"));
    }
    if let Some(held) = seen.held.take() {
        let _ = tx.send(Message::Stage(key.clone(), Box::new(held)));
    }
    Ok(match stage {
        // v7 has no sprint status; the runner wrote the plan's `done` itself.
        Stage::Done if job.era == Era::V7 => End::Done(None),
        Stage::Done => match verify::story(&session.worktree, key, job.era, baseline)? {
            Verdict::Good { set_status } => End::Done(set_status),
            _ => End::Done(None),
        },
        Stage::Blocked => End::Blocked,
        // The judge's question on the runner is the epic's judge gate here.
        Stage::Gated => match asked(repo, &session, job, baseline)? {
            Some(concern) => End::Asked(concern),
            None => End::Gated,
        },
        Stage::Skipped => End::Skipped,
        _ => End::Failed,
    })
}

/// The story's jobs, every attempt, from the list all followers share; `None` (said) when
/// it could not be had this time.
fn story_runs(
    program: &Path,
    job: &Job,
    follow: &Follow<'_>,
) -> Result<Option<Vec<JobRun>>, Error> {
    let key = &job.story.key;
    match api::story_runs(
        program,
        &job.main,
        &job.epic,
        key,
        poll() / 2,
        follow.interrupt,
    )? {
        Ok(runs) => Ok(Some(runs)),
        Err(Failed::ForNow(said)) => {
            (follow.progress)(&format!(
                "{key}: could not list the story's jobs this time ({said}); looking again in {:?}",
                poll()
            ));
            Ok(None)
        }
        Err(Failed::ForGood(said)) => Err(Error::Actions(format!("gh run list: {said}"))),
    }
}

/// Dispatch attempt `attempt` of the story's job; `Ok(Err)` (what gh said) when the API did
/// not take it this time.
fn dispatch(
    program: &Path,
    cwd: &Path,
    follow: &Follow<'_>,
    job: &Job,
    attempt: u32,
) -> Result<Result<(), String>, Error> {
    let mut args = vec![
        "workflow".to_owned(),
        "run".to_owned(),
        STORY_WORKFLOW.to_owned(),
        "--ref".to_owned(),
        follow.dispatch_ref.to_owned(),
        "-f".to_owned(),
        format!("epic={}", job.epic),
        "-f".to_owned(),
        format!("story={}", job.story.key),
        "-f".to_owned(),
        format!("attempt={attempt}"),
    ];
    // The job's time limit follows the story's time left in the run's budget, within the
    // workflow's own (which applies alone when there is no budget, or no such input).
    if let (Some(most), Some(left)) = (follow.minutes, job.limits.time) {
        let minutes = job_minutes(left).min(most);
        args.extend(["-f".to_owned(), format!("minutes={minutes}")]);
    }
    match api::call(program, &args, cwd, follow.interrupt)? {
        Ok(_) => Ok(Ok(())),
        Err(Failed::ForNow(said)) => Ok(Err(said)),
        Err(Failed::ForGood(said)) => Err(Error::Actions(format!(
            "gh workflow run {STORY_WORKFLOW}: {said}"
        ))),
    }
}

/// What a runner spends before and after the story's own run: the checkout, installing
/// git-bmad and the agent CLIs, the pushes.
const SETUP_MINUTES: u64 = 20;

/// The longest `timeout-minutes` GitHub takes.
const MOST_MINUTES: u64 = 4320;

/// A story job's `timeout-minutes` for a story with `left` to run: whole minutes, with the
/// setup, within what GitHub takes.
fn job_minutes(left: Duration) -> u64 {
    (left.as_secs().div_ceil(60) + SETUP_MINUTES).min(MOST_MINUTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_time_limit_is_the_storys_time_left_in_whole_minutes_and_the_setup() {
        assert_eq!(job_minutes(Duration::from_secs(0)), SETUP_MINUTES);
        assert_eq!(job_minutes(Duration::from_secs(61)), 2 + SETUP_MINUTES);
        assert_eq!(job_minutes(Duration::from_secs(3600)), 60 + SETUP_MINUTES);
        assert_eq!(job_minutes(Duration::from_secs(u64::MAX)), MOST_MINUTES);
    }
}

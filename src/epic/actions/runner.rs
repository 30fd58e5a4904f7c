//! A story's job on a runner (`git bmad epic job`): the story run exactly as the coordinator
//! would run it here, from what the remote holds and a key this repository trusts signed (the
//! epic's journal: its plan's options, answers, what each story reached), its stages
//! journaled in the story's own session, and that session pushed after every step so a lost
//! runner costs at most the step it was in.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc;

use super::super::closeout::PUSHING;
use super::super::job::job;
use super::super::names::{self, story_session_name};
use super::super::options::{EpicOptions, Gates, On, PlanOptions};
use super::super::pipeline::Era;
use super::super::plan::plan_epic;
use super::super::state::{purse, EpicState};
use super::super::story::{fail, run_story, stage_line, End, Message};
use super::super::Error;
use super::{here, remote_record};
use crate::config::Config;
use crate::session::schema::{Body, Stage};
use crate::session::{self, closeout, sync, NewEvent, Repo, Session};

/// What a story job needs besides the epic and the story.
pub struct JobOptions<'a> {
    /// The project configuration (this checkout's).
    pub config: &'a Config,
    /// The remote the coordinator and the runners share.
    pub remote: String,
    /// The dispatch's attempt: past the first, the session an earlier runner left is taken
    /// over (its job is gone: the coordinator dispatches only then).
    pub attempt: u32,
    /// Progress lines (the job's log).
    pub progress: &'a (dyn Fn(&str) + Sync),
    /// Set when the runner is cancelled.
    pub interrupt: &'a AtomicBool,
    /// The policy the story's session obeys.
    pub policy: &'a dyn session::Policy,
    /// Where this job runs (its Actions run), recorded with the story's start.
    pub runner: String,
}

/// How a story job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobOutcome {
    /// The story reached this stage, reported to the coordinator.
    Ended(Stage),
    /// The epic's journal says the story had ended already: nothing was run.
    Settled(Stage),
    /// Cancelled: the session as of its last step is on the remote.
    Interrupted,
}

/// Run story `key` of `epic` as a CI job.
pub fn run_job(
    repo: &Repo,
    epic: &str,
    key: &str,
    o: &JobOptions<'_>,
) -> Result<JobOutcome, Error> {
    let remote = &o.remote;
    if !sync::sends_sessions_to(repo, remote)? {
        let opt_in = sync::opt_in_key(remote);
        return Err(Error::Actions(format!(
            "a story job pushes its session's journal and checkpoints after every step: git config {opt_in} true"
        )));
    }
    say_walls(o);
    let repo = &here(repo)?;
    sync::sync(repo, remote, &o.config.sessions.branch_prefix)?;
    // The run as the coordinator recorded it, and nothing a key this repository does not
    // trust wrote there.
    let no_run = || Error::NoVouchedRun {
        epic: epic.to_owned(),
        remote: remote.clone(),
    };
    let (_, entries) =
        remote_record(repo, remote, &names::session_name(epic))?.ok_or_else(no_run)?;
    let state = EpicState::replay(entries.iter().filter(|(_, v)| *v).map(|(e, _)| &e.event));
    let started = state.started.clone().ok_or_else(no_run)?;
    let plan_options = PlanOptions {
        only: started.stories.clone(),
        era: Era::parse(&started.era),
        rounds: Some(started.rounds),
        reviewers: Some(started.reviewers.max(1)),
    };
    let plan = plan_epic(repo, epic, &plan_options)?;
    let story = plan
        .to_run()
        .find(|s| s.key == key)
        .ok_or_else(|| Error::NoSuchStory {
            story: key.to_owned(),
            epic: epic.to_owned(),
        })?;
    let known = state.story(key);
    if known.is_terminal() {
        return Ok(JobOutcome::Settled(known.stage));
    }
    let options = EpicOptions {
        config: o.config,
        plan: plan_options,
        parallel: 1,
        on: On::Here,
        gates: Gates::parse(&started.gates).unwrap_or(Gates::None),
        base: Some(started.base.clone()),
        remote: remote.clone(),
        max_failures: started.max_failures,
        budget: started.budget,
        retro: false,
        progress: o.progress,
        interrupt: o.interrupt,
        policy: o.policy,
    };
    let main = repo.main_workdir()?;
    let mut job = job(&main, &plan, story, &state, &started.base, &options);
    job.pushes = true;
    // The branches it starts from and merges, as other runners pushed them.
    for branch in std::iter::once(&job.base).chain(&job.merges) {
        closeout::branch_from_remote(repo, remote, branch)?;
    }
    // The session an earlier runner left (one a trusted key signed), taken up where its
    // last push left it.
    let name = story_session_name(key);
    let left = remote_record(repo, remote, &name)?
        .filter(|(_, entries)| entries.iter().any(|(_, vouched)| *vouched));
    if let (None, Some((id, _))) = (closeout::find_by_name(repo, &name)?, left) {
        let (_, warnings) = session::adopt(repo, remote, id.as_str(), o.attempt > 1, o.policy)?;
        for warning in warnings {
            (o.progress)(&format!("{key}: {warning}"));
        }
    }
    // What it started at, as its first runner journaled it, when the epic's journal has not
    // caught up: work committed since is the story's, not where it starts.
    if job.known.detail.baseline.is_none() {
        if let Some(s) = closeout::find_by_name(repo, &name)? {
            let journal = session::read_journal(repo, &s.id)?;
            job.known.detail.baseline = journal.events().find_map(|e| match &e.body {
                Body::StoryStage(stage) => stage.baseline.clone(),
                _ => None,
            });
        }
    }
    let mut config = o.config.clone();
    if let Some(usd) = started.budget.story_usd {
        config.orchestration.budget_usd = Some(usd);
    }
    let purse = purse(&state, &started.budget, 1);
    let (tx, rx) = mpsc::channel::<Message>();
    std::thread::scope(|scope| {
        let worker = tx.clone();
        let (job, config, purse) = (&job, &config, &purse);
        scope.spawn(move || {
            let end = run_story(
                job,
                config,
                o.progress,
                o.interrupt,
                o.policy,
                purse,
                &worker,
            )
            .unwrap_or_else(|e| fail(&job.story.key, e.to_string(), &worker));
            let _ = worker.send(Message::End(job.story.key.clone(), end));
        });
        drop(tx);
        report(repo, key, remote, o, rx)
    })
}

/// Which walls hold the story's agents on this runner, in the job's log: a person reading
/// it learns whether an agent ran contained without reading the journal.
fn say_walls(o: &JobOptions<'_>) {
    use crate::supervisor::contain::Containment;
    match crate::supervisor::contain::decide(o.config) {
        Ok(Containment::On(layers)) => {
            (o.progress)(&format!("agents run in walls: {}", layers.describe()));
            if let Some(lacks) = layers.lacks() {
                (o.progress)(&format!("the walls lack: {lacks}"));
            }
        }
        Ok(Containment::Off(why)) => (o.progress)(&format!("agents run uncontained: {why}")),
        // Each step refuses and says why: the story fails there, journaled.
        Err(e) => (o.progress)(&e.to_string()),
    }
}

/// Journal each stage the worker reports in the story's session and push the session after
/// each stage and step; at the end, push it once more, released for the coordinator.
fn report(
    repo: &Repo,
    key: &str,
    remote: &str,
    o: &JobOptions<'_>,
    rx: mpsc::Receiver<Message>,
) -> Result<JobOutcome, Error> {
    let mut last = Stage::Started;
    let name = story_session_name(key);
    let session = || closeout::find_by_name(repo, &name);
    for message in rx {
        match message {
            Message::Stage(k, mut stage) => {
                if stage.stage == Stage::Started {
                    stage.runner = Some(o.runner.clone()).filter(|r| !r.is_empty());
                }
                (o.progress)(&stage_line(&k, &stage));
                last = stage.stage;
                if let Some(s) = session()? {
                    session::record(
                        repo,
                        &s,
                        NewEvent::new(Body::StoryStage(*stage)).step(Some(k)),
                    )?;
                    push(repo, &s, remote, false, o);
                }
            }
            Message::Step(pushed) => {
                if let Some(s) = session()? {
                    push(repo, &s, remote, false, o);
                }
                let _ = pushed.send(());
            }
            // v4's stories.json: its signatures are written by a run here only, for now.
            Message::Status(..) => {}
            Message::End(_, end) => {
                if let Some(s) = session()? {
                    push(repo, &s, remote, end != End::Interrupted, o);
                }
                return Ok(match end {
                    End::Interrupted => JobOutcome::Interrupted,
                    _ => JobOutcome::Ended(last),
                });
            }
        }
    }
    Ok(JobOutcome::Ended(last))
}

/// Push the story's session; a push that fails is said and tried again at the next step
/// (the coordinator reads whatever the last push carried).
fn push(repo: &Repo, session: &Session, remote: &str, release: bool, o: &JobOptions<'_>) {
    let _one = PUSHING.lock().unwrap_or_else(|p| p.into_inner());
    if let Err(e) = sync::push(repo, session, remote, release) {
        (o.progress)(&format!(
            "{}: could not push its session: {e}",
            session.name
        ));
    }
}

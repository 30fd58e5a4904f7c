//! Running an epic: stories scheduled by dependency and `touches`, each in its own session
//! (branch + worktree) running its era's pipeline through the supervisor, verified by
//! git-bmad itself, committed and offered as a draft pull request, never merged.
//!
//! The epic's own session (`epic-<id>`) holds the journal: one `story_stage` event per stage
//! of every story, written only by this thread, so the record is ordered however many
//! stories run at once. Workers run in threads, each with its own repository handle, and
//! send their stages here. Resume replays that journal: done stories are never run again, a
//! story in flight continues in its session where its own journal says.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use serde::Serialize;

use super::gates::{self, Gates, OpenGate};
use super::integration;
use super::pipeline;
use super::plan::{self, Plan, PlanOptions, Planned};
use super::state::EpicState;
use super::story::{run_story, Job};
use super::Error;
use crate::bmad::project::Project;
use crate::config::Config;
use crate::session::schema::{Body, EpicBudget, EpicFinished, EpicStarted, StoryStage};
use crate::session::{self, closeout, Decision, NewEvent, Repo, Session, StartOptions};
use crate::supervisor::Answer;

/// What `run` needs besides the epic.
pub struct EpicOptions<'a> {
    /// The project configuration.
    pub config: &'a Config,
    /// Which stories, which era, how many rounds.
    pub plan: PlanOptions,
    /// Stories run at once.
    pub parallel: usize,
    /// Human checkpoints.
    pub gates: Gates,
    /// What the stories start from (default: HEAD of the main worktree).
    pub base: Option<String>,
    /// The remote pull requests go to.
    pub remote: String,
    /// Consecutive failed stories that stop the run (the circuit breaker).
    pub max_failures: u32,
    /// What the epic and each story may spend.
    pub budget: EpicBudget,
    /// A headless retrospective when every story is done.
    pub retro: bool,
    /// Called with every line of progress.
    pub progress: &'a (dyn Fn(&str) + Sync),
    /// Set when the user interrupts.
    pub interrupt: &'a AtomicBool,
    /// The policy every session of the run obeys (its hooks, what its checkpoints keep out).
    pub policy: &'a dyn session::Policy,
}

/// How an epic run ended.
#[derive(Debug, Serialize)]
pub struct EpicRun {
    /// The plan it followed.
    pub plan: Plan,
    /// The epic session that holds its journal.
    pub session: String,
    /// The state after the run.
    pub state: EpicState,
    /// Stories waiting at a gate of their own session (exit 3).
    pub gated: Vec<String>,
    /// The epic's own gate waiting for a human (exit 3): scope, integration, completion.
    pub gate: Option<OpenGate>,
    /// Stories that failed.
    pub failed: Vec<String>,
    /// Stories not started because a dependency ended badly or its checkpoint holds them.
    pub skipped: Vec<String>,
    /// Stories whose agent halted on a blocking condition: a human resolves it (exit 3).
    pub blocked: Vec<String>,
    /// The circuit breaker's reason, if it tripped.
    pub stopped: Option<String>,
    /// Interrupted: state saved, `epic resume` continues.
    pub interrupted: bool,
}

/// The epic session's name.
pub fn session_name(epic: &str) -> String {
    format!("epic-{}", story_session_name(epic))
}

/// The branch a story's session works on (`bmad/<key>` with the default prefix).
pub fn story_branch(config: &Config, key: &str) -> String {
    let branch = config.branch_for(&story_session_name(key));
    branch.trim_start_matches("refs/heads/").to_owned()
}

/// A story's session name: its key, with what a session name cannot hold (a stories-mode
/// key's `/`) made `-`.
pub(super) fn story_session_name(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Plan the epic from the main worktree's files.
pub fn plan_epic(repo: &Repo, epic: &str, options: &PlanOptions) -> Result<Plan, Error> {
    let main = repo.main_workdir().map_err(session::Error::from)?;
    let project = Project::load(&main, None)?;
    plan::plan(&project, epic, options)
}

/// A message from a story's worker.
pub(super) enum Message {
    Stage(String, StoryStage),
    /// The story's status moved in a step (signed into stories.json).
    Status(String, super::signatures::Change),
    End(String, End),
}

/// How a worker's story ended in this run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// Done; the sprint status it should now have, if it lags.
    Done(Option<crate::bmad::status::Status>),
    Gated,
    Failed,
    Blocked,
    /// Not started: a dependency ended badly.
    Skipped,
    Interrupted,
}

/// A story this invocation has still to take up: not running, not ended here, not finished
/// in an earlier one.
fn waiting(
    key: &str,
    running: &HashSet<String>,
    ended_here: &HashMap<String, End>,
    state: &EpicState,
) -> bool {
    !running.contains(key) && !ended_here.contains_key(key) && !state.story(key).is_terminal()
}

/// Run (or resume) an epic.
pub fn run(repo: &Repo, epic: &str, options: &EpicOptions<'_>) -> Result<EpicRun, Error> {
    let main = repo.main_workdir().map_err(session::Error::from)?;
    let plan = plan_epic(repo, epic, &options.plan)?;
    pipeline::preflight(&main, &plan, options.gates, options.retro, options.config)?;
    let epic_session = epic_session(repo, epic, options)?;
    let journal = session::read_journal(repo, &epic_session.id)?;
    let mut state = EpicState::replay(journal.events());
    let started = EpicStarted {
        epic: epic.to_owned(),
        era: plan.era.as_str().to_owned(),
        pipeline: plan.pipeline.clone(),
        base: epic_session.base.clone(),
        stories: plan.to_run().map(|s| s.key.clone()).collect(),
        parallel: options.parallel as u32,
        gates: options.gates.as_str().to_owned(),
        rounds: plan.rounds,
        remote: options.remote.clone(),
        max_failures: options.max_failures,
        budget: options.budget,
        retro: options.retro,
        // One reviewer is the default, and is left out of the record as it always was.
        reviewers: if plan.reviewers > 1 {
            plan.reviewers
        } else {
            0
        },
    };
    // A story that halted blocked runs again once a human has resolved it in its session
    // (its file there no longer says blocked): the journal then forgets the old stage.
    for key in unblocked(repo, &plan, &state)? {
        if let Some(story) = state.stories.get_mut(&key) {
            story.stage = UNBLOCKED.into();
        }
    }
    let all_settled = plan.to_run().all(|s| state.story(&s.key).is_terminal());
    // Run again after it finished: nothing to do, nothing written.
    if state.finished && all_settled {
        return Ok(finished_run(plan, epic_session, state, None, false));
    }
    if state.started.as_ref() != Some(&started) {
        record(
            repo,
            &epic_session,
            &mut state,
            None,
            Body::EpicStarted(started),
        )?;
    }
    // Scope confirmation: nothing starts before a human has seen the plan.
    match gates::scope(repo, &epic_session, &plan, &mut state, options.gates)? {
        gates::Scope::Confirmed => {}
        gates::Scope::Waiting => return Ok(finished_run(plan, epic_session, state, None, false)),
        gates::Scope::Cancelled(why) => {
            if !state.finished {
                finish(repo, &epic_session, &plan, &mut state, Some(why.clone()))?;
            }
            return Ok(finished_run(plan, epic_session, state, Some(why), false));
        }
    }
    // Each story's run gets its own budget, when the epic sets one.
    let mut story_config = options.config.clone();
    if let Some(usd) = options.budget.story_usd {
        story_config.orchestration.budget_usd = Some(usd);
    }
    let story_config = &story_config;
    let mut running: HashSet<String> = HashSet::new();
    let mut ended_here: HashMap<String, End> = HashMap::new();
    let mut checked_here: HashSet<String> = HashSet::new();
    // Stories whose dependency did not end well, waiting for a human (with gates).
    let mut asks: BTreeMap<String, String> = BTreeMap::new();
    let mut consecutive_failures = 0u32;
    let mut stopped: Option<String> = state.over_budget(&options.budget);
    let (tx, rx) = mpsc::channel::<Message>();
    std::thread::scope(|scope| -> Result<(), Error> {
        loop {
            // The integration checkpoint after every finished story with dependents.
            integration::check_due(
                repo,
                &epic_session,
                &plan,
                &mut state,
                &mut checked_here,
                options,
            )?;
            // Stories whose dependency ended badly in this run, or whose integration
            // checkpoint holds them back, are skipped, with the reason.
            for story in plan.to_run() {
                if !waiting(&story.key, &running, &ended_here, &state) {
                    continue;
                }
                let ended_badly = |d: &str| {
                    ended_here
                        .get(d)
                        .is_some_and(|e| !matches!(e, End::Done(_) | End::Interrupted))
                };
                let why =
                    match gates::dependencies(&plan, story, &state, ended_badly, options.gates) {
                        gates::Dependencies::Skip(why) => why,
                        gates::Dependencies::Ask(dep) => {
                            asks.insert(story.key.clone(), dep);
                            continue;
                        }
                        gates::Dependencies::Go => continue,
                    };
                (options.progress)(&format!("{}: skipped: {why}", story.key));
                let stage = StoryStage {
                    stage: "skipped".into(),
                    reason: Some(why),
                    ..Default::default()
                };
                record_stage(repo, &epic_session, &mut state, &story.key, stage)?;
                ended_here.insert(story.key.clone(), End::Skipped);
            }
            let interrupted = options.interrupt.load(Ordering::SeqCst);
            if stopped.is_none() && !interrupted {
                for story in plan.to_run() {
                    if running.len() >= options.parallel.max(1) {
                        break;
                    }
                    if !waiting(&story.key, &running, &ended_here, &state) {
                        continue;
                    }
                    let overlapping = story.overlaps.iter().any(|o| running.contains(o));
                    if !gates::ready(&plan, story, &state, options.gates) || overlapping {
                        continue;
                    }
                    running.insert(story.key.clone());
                    let base = story_base(story, &state, &epic_session);
                    let job = Job {
                        main: main.clone(),
                        story: story.clone(),
                        source: pipeline::story_playbook(&main, &plan, story, options.gates),
                        era: plan.era,
                        base,
                        merges: story
                            .merges
                            .iter()
                            .filter_map(|m| state.story(m).detail.branch.clone())
                            .collect(),
                        known: state.story(&story.key),
                        remote: options.remote.clone(),
                    };
                    let tx = tx.clone();
                    let progress = options.progress;
                    let interrupt = options.interrupt;
                    let policy = options.policy;
                    (options.progress)(&format!("{}: starting", story.key));
                    scope.spawn(move || {
                        let key = job.story.key.clone();
                        let end = run_story(&job, story_config, progress, interrupt, policy, &tx)
                            .unwrap_or_else(|e| {
                                let _ = tx.send(Message::Stage(
                                    key.clone(),
                                    StoryStage {
                                        stage: "failed".into(),
                                        reason: Some(e.to_string()),
                                        ..Default::default()
                                    },
                                ));
                                End::Failed
                            });
                        let _ = tx.send(Message::End(key, end));
                    });
                }
            }
            if running.is_empty() {
                return Ok(());
            }
            let Ok(message) = rx.recv() else {
                return Ok(());
            };
            match message {
                Message::Stage(key, stage) => {
                    (options.progress)(&stage_line(&key, &stage));
                    record_stage(repo, &epic_session, &mut state, &key, stage)?;
                }
                Message::Status(key, change) => {
                    super::signatures::sign(repo, &epic_session, &key, &change)?;
                }
                Message::End(key, end) => {
                    running.remove(&key);
                    match end.clone() {
                        End::Failed => consecutive_failures += 1,
                        End::Done(Some(to)) => {
                            consecutive_failures = 0;
                            super::status::sync_sprint_status(repo, &epic_session, &key, to)?;
                        }
                        End::Done(None) => consecutive_failures = 0,
                        _ => {}
                    }
                    if stopped.is_none() {
                        stopped = if consecutive_failures >= options.max_failures.max(1) {
                            Some(format!(
                                "circuit breaker: {consecutive_failures} stories failed in a row; nothing new is started"
                            ))
                        } else {
                            state.over_budget(&options.budget)
                        };
                        if let Some(why) = &stopped {
                            (options.progress)(why);
                        }
                    }
                    ended_here.insert(key, end);
                }
            }
        }
    })?;
    let mut interrupted = options.interrupt.load(Ordering::SeqCst)
        || ended_here.values().any(|e| *e == End::Interrupted);
    let mut gated: Vec<String> = keys_with(&ended_here, &[End::Gated]);
    if !interrupted && gated.is_empty() && state.gate.is_none() && stopped.is_none() {
        let after = super::close::close_out(repo, &epic_session, &plan, &mut state, options)?;
        if let Some(why) = after.gated {
            (options.progress)(&format!(
                "{}: gated: {why}",
                super::close::session_name(epic)
            ));
            gated.push(super::close::session_name(epic));
        }
        stopped = after.stopped;
        interrupted = after.interrupted;
    }
    let settled = plan.to_run().all(|s| {
        let st = state.story(&s.key);
        st.is_terminal() || matches!(st.stage.as_str(), "failed" | "skipped")
    });
    if !interrupted && state.gate.is_none() && options.gates != Gates::None {
        let complete = gated.is_empty() && settled && stopped.is_none();
        gates::open_next(
            repo,
            &epic_session,
            &plan,
            &mut state,
            options.gates,
            &asks,
            complete,
        )?;
    }
    if !interrupted && gated.is_empty() && state.gate.is_none() && (settled || stopped.is_some()) {
        if state.answers.get(gates::COMPLETION) == Some(&Answer::Abort) && stopped.is_none() {
            stopped = Some("a human did not sign the epic off at its completion gate".into());
        }
        finish(repo, &epic_session, &plan, &mut state, stopped.clone())?;
    }
    super::progress::write(repo, &epic_session, &plan, &state)?;
    let mut out = finished_run(plan, epic_session, state, stopped, interrupted);
    out.gated = gated;
    out.failed = keys_with(&ended_here, &[End::Failed]);
    out.skipped = keys_with(&ended_here, &[End::Skipped]);
    // Blocked in this run or before, and not yet resolved: still waiting for a human.
    out.blocked = out
        .plan
        .to_run()
        .filter(|s| out.state.story(&s.key).stage == "blocked")
        .map(|s| s.key.clone())
        .collect();
    Ok(out)
}

/// Record the end of the run, with each story's stage counted.
fn finish(
    repo: &Repo,
    epic: &Session,
    plan: &Plan,
    state: &mut EpicState,
    stopped: Option<String>,
) -> Result<(), Error> {
    let mut counts = BTreeMap::new();
    for s in plan.to_run() {
        *counts.entry(state.story(&s.key).stage).or_insert(0) += 1;
    }
    record(
        repo,
        epic,
        state,
        None,
        Body::EpicFinished(EpicFinished { counts, stopped }),
    )
}

fn keys_with(ended: &HashMap<String, End>, ends: &[End]) -> Vec<String> {
    let mut keys: Vec<String> = ended
        .iter()
        .filter(|(_, e)| ends.contains(e))
        .map(|(k, _)| k.clone())
        .collect();
    keys.sort();
    keys
}

fn finished_run(
    plan: Plan,
    session: Session,
    state: EpicState,
    stopped: Option<String>,
    interrupted: bool,
) -> EpicRun {
    EpicRun {
        plan,
        session: session.id.to_string(),
        gate: state.gate.clone(),
        state,
        gated: Vec::new(),
        failed: Vec::new(),
        skipped: Vec::new(),
        blocked: Vec::new(),
        stopped,
        interrupted,
    }
}

/// The in-memory stage of a story the journal says blocked and a human has since unblocked:
/// it runs its pipeline anew.
pub(super) const UNBLOCKED: &str = "unblocked";

/// The stories the journal says blocked whose file in their own session no longer does.
fn unblocked(repo: &Repo, plan: &Plan, state: &EpicState) -> Result<Vec<String>, Error> {
    let mut keys = Vec::new();
    for s in plan.to_run() {
        if state.story(&s.key).stage != "blocked" {
            continue;
        }
        let Some(session) = closeout::find_by_name(repo, &story_session_name(&s.key))? else {
            continue;
        };
        let project = Project::load(&session.worktree, None)?;
        let still = project
            .stories
            .iter()
            .find(|v| v.key == s.key)
            .is_none_or(|v| v.is_blocked());
        if !still {
            keys.push(s.key.clone());
        }
    }
    Ok(keys)
}

/// The epic's session: found by name, or started from `base`.
fn epic_session(repo: &Repo, epic: &str, options: &EpicOptions<'_>) -> Result<Session, Error> {
    let name = session_name(epic);
    if let Some(s) = closeout::find_by_name(repo, &name)? {
        return Ok(s);
    }
    // A branch name, so story PRs have a base to target.
    let base = match options.base.as_deref() {
        Some(b) => b.to_owned(),
        None => repo
            .head_branch()
            .map_err(session::Error::from)?
            .map(|b| b.trim_start_matches("refs/heads/").to_owned())
            .unwrap_or_else(|| "HEAD".into()),
    };
    let start = StartOptions {
        name,
        base: Some(base),
        playbook: None,
    };
    super::session_named(repo, &start, options.policy, options.progress)
}

/// What a story's branch starts from: the branch of the dependency it is stacked on, or the
/// epic's base.
fn story_base(story: &Planned, state: &EpicState, epic: &Session) -> String {
    story
        .stacked_on
        .as_ref()
        .and_then(|d| state.story(d).detail.branch.clone())
        .unwrap_or_else(|| epic.base.clone())
}

pub(super) fn record(
    repo: &Repo,
    session: &Session,
    state: &mut EpicState,
    step: Option<String>,
    body: Body,
) -> Result<(), Error> {
    let event = session::record(
        repo,
        session,
        NewEvent::new(body)
            .step(step)
            .decision(Some(Decision::Auto)),
    )?;
    state.apply(&event);
    Ok(())
}

fn record_stage(
    repo: &Repo,
    session: &Session,
    state: &mut EpicState,
    key: &str,
    stage: StoryStage,
) -> Result<(), Error> {
    record(
        repo,
        session,
        state,
        Some(key.to_owned()),
        Body::StoryStage(stage),
    )
}

fn stage_line(key: &str, stage: &StoryStage) -> String {
    let mut line = format!("{key}: {}", stage.stage);
    if let Some(branch) = &stage.branch {
        if stage.stage == "started" {
            line.push_str(&format!(" on {branch}"));
        }
    }
    if let Some(pr) = &stage.pr {
        line.push_str(&format!(" ({pr})"));
    }
    if let Some(reason) = &stage.reason {
        line.push_str(&format!(": {reason}"));
    }
    line
}

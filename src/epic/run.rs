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
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc;

use serde::Serialize;

use super::actions;
use super::gates;
use super::integration;
use super::job::job;
use super::names::{self, close_session_name, session_name, story_session_name, COMPLETION};
use super::options::{EpicOptions, On};
use super::plan::{plan_epic, Plan};
use super::playbooks;
use super::scope;
use super::state::{record, Cap, EpicState, OpenGate};
use super::story::{fail, run_story, stage_line, End, Message};
use super::Error;
use crate::bmad::project::Project;
use crate::session::run_state::Answer;
use crate::session::schema::{Body, EpicBudget, EpicFinished, EpicStarted, Stage, StoryStage};
use crate::session::{self, closeout, Repo, Session, StartOptions};

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
    /// Why nothing new was started (the circuit breaker, a budget), if so.
    pub stopped: Option<String>,
    /// The budget the stories reached, where the run stopped at it: more goes on.
    pub reached: Option<Cap>,
    /// Interrupted: state saved, `epic resume` continues.
    pub interrupted: bool,
}

/// What this invocation did with the stories so far: the scheduler's own state, beside the
/// journal's ([`EpicState`]).
#[derive(Default)]
struct Schedule {
    running: HashSet<String>,
    ended_here: HashMap<String, End>,
    checked_here: HashSet<String>,
    /// Stories whose dependency did not end well, waiting for a human (with gates).
    asks: BTreeMap<String, String>,
    /// Stories git-bmad's judge asks a human about.
    judge_asks: BTreeMap<String, super::judge::Concern>,
    consecutive_failures: u32,
    /// Why nothing new starts.
    stopped: Option<Halt>,
}

/// Why an epic run starts nothing new.
enum Halt {
    /// The circuit breaker tripped: why.
    Breaker(String),
    /// The budget is spent: why, when it was found so.
    Budget(String),
}

impl Halt {
    /// Why, as the run's end records it. What the budget says is counted again then, so the
    /// total holds what the stories still running when it was reached went on to spend.
    fn why(self, state: &EpicState, budget: &EpicBudget) -> String {
        match self {
            Halt::Breaker(why) => why,
            Halt::Budget(then) => state.over_budget(budget).unwrap_or(then),
        }
    }

    /// Why, as it was said when nothing new started.
    fn said(&self) -> &str {
        match self {
            Halt::Breaker(why) | Halt::Budget(why) => why,
        }
    }
}

impl Schedule {
    /// A story this invocation has still to take up: not running, not ended here, not
    /// finished in an earlier one, not waiting for a human's answer at its judge gate.
    fn waiting(&self, key: &str, state: &EpicState) -> bool {
        !self.running.contains(key)
            && !self.ended_here.contains_key(key)
            && !state.story(key).is_terminal()
            && state
                .gate
                .as_ref()
                .is_none_or(|g| g.id != names::judge(key))
    }
}

/// What every part of one run reads.
struct Epic<'a> {
    repo: &'a Repo,
    session: Session,
    plan: Plan,
    options: &'a EpicOptions<'a>,
    main: PathBuf,
}

/// Run (or resume) an epic.
pub fn run(repo: &Repo, epic: &str, options: &EpicOptions<'_>) -> Result<EpicRun, Error> {
    if options.on != On::Actions {
        return run_epic(repo, epic, options);
    }
    let repo = &actions::here(repo)?;
    let run = run_epic(repo, epic, options)?;
    // Handed off wherever it stopped: the next coordinator (a job, another machine) takes it
    // up from the remote, and the epic's worktree here is brought up to date when it comes
    // back.
    actions::hand_back(repo, &options.remote, &session_name(epic), options.policy)?;
    Ok(run)
}

fn run_epic(repo: &Repo, epic: &str, options: &EpicOptions<'_>) -> Result<EpicRun, Error> {
    let main = repo.main_workdir()?;
    let plan = plan_epic(repo, epic, &options.plan)?;
    playbooks::preflight(&main, &plan, options.gates, options.retro, options.config)?;
    if options.on == On::Actions {
        actions::preflight(repo, &main, &plan, options)?;
    }
    let session = epic_session(repo, epic, options)?;
    // The run's record is the epic session's journal: only as git-bmad wrote it.
    session::ref_record::ensure_vouched(repo, &session.id)?;
    let journal = session::read_journal(repo, &session.id)?;
    let mut state = EpicState::replay(journal.events());
    let started = epic_started(epic, &plan, &session, options);
    // A story that halted blocked runs again once a human has resolved it in its session
    // (its file there no longer says blocked): the journal then forgets the old stage.
    for key in unblocked(repo, &plan, &state)? {
        if let Some(story) = state.stories.get_mut(&key) {
            story.stage = Stage::Unblocked;
        }
    }
    let all_settled = plan.to_run().all(|s| state.story(&s.key).is_terminal());
    // Run again after it finished: nothing to do, nothing written.
    if state.finished && all_settled {
        return Ok(finished_run(plan, session, state, None, false));
    }
    if state.started.as_ref() != Some(&started) {
        record(repo, &session, &mut state, None, Body::EpicStarted(started))?;
    }
    // Scope confirmation: nothing starts before a human has seen the plan, nor runs its
    // agents with no walls that the configuration did not turn off.
    let unwalled = scope::unwalled(options.config)?;
    match scope::scope(repo, &session, &plan, &mut state, options.gates, unwalled)? {
        scope::Scope::Confirmed => {}
        scope::Scope::Waiting => return Ok(finished_run(plan, session, state, None, false)),
        scope::Scope::Cancelled(why) => {
            if !state.finished {
                finish(repo, &session, &plan, &mut state, Some(why.clone()))?;
            }
            return Ok(finished_run(plan, session, state, Some(why), false));
        }
    }
    let epic = Epic {
        repo,
        session,
        plan,
        options,
        main,
    };
    let mut schedule = Schedule {
        stopped: state.over_budget(&options.budget).map(Halt::Budget),
        ..Schedule::default()
    };
    epic.schedule(&mut schedule, &mut state)?;
    epic.wind_up(schedule, state)
}

/// The run as `epic_started` records it: a run with other options is a new run.
fn epic_started(
    epic: &str,
    plan: &Plan,
    session: &Session,
    options: &EpicOptions<'_>,
) -> EpicStarted {
    EpicStarted {
        epic: epic.to_owned(),
        era: plan.era.as_str().to_owned(),
        pipeline: plan.pipeline.clone(),
        base: session.base.clone(),
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
        on: match options.on {
            super::options::On::Here => String::new(),
            on => on.as_str().to_owned(),
        },
    }
}

impl Epic<'_> {
    /// Start every story that may start, one thread each, and record what they report,
    /// until none runs.
    fn schedule(&self, schedule: &mut Schedule, state: &mut EpicState) -> Result<(), Error> {
        let options = self.options;
        // Each story's run gets its own budget, when the epic sets one.
        let mut story_config = options.config.clone();
        if let Some(usd) = options.budget.story_usd {
            story_config.orchestration.budget_usd = Some(usd);
        }
        let story_config = &story_config;
        // What the stories running at once spend together: each step draws its share.
        let purse = &super::state::purse(state, &options.budget, options.parallel);
        let (tx, rx) = mpsc::channel::<Message>();
        // On GitHub Actions, a follower per story in place of its worker.
        let follow = (options.on == On::Actions).then(|| actions::Follow {
            branch_prefix: &options.config.sessions.branch_prefix,
            dispatch_ref: &self.session.base,
            progress: options.progress,
            interrupt: options.interrupt,
            policy: options.policy,
            minutes: actions::takes_minutes(self.repo, &options.remote, &self.session.base),
        });
        let follow = follow.as_ref();
        std::thread::scope(|scope| -> Result<(), Error> {
            loop {
                // The integration checkpoint after every finished story with dependents.
                integration::check_due(
                    self.repo,
                    &self.session,
                    &self.plan,
                    state,
                    &mut schedule.checked_here,
                    options,
                )?;
                self.skip_unreachable(schedule, state)?;
                let interrupted = options.interrupt.load(Ordering::SeqCst);
                if schedule.stopped.is_none() && !interrupted {
                    for story in self.plan.to_run() {
                        if schedule.running.len() >= options.parallel.max(1) {
                            break;
                        }
                        if !schedule.waiting(&story.key, state) {
                            continue;
                        }
                        let overlapping =
                            story.overlaps.iter().any(|o| schedule.running.contains(o));
                        if !gates::ready(&self.plan, story, state, options.gates) || overlapping {
                            continue;
                        }
                        if follow.is_some() {
                            // The runner reads the run from the remote, as of now.
                            actions::publish_run(self.repo, &self.session, &options.remote)?;
                        }
                        schedule.running.insert(story.key.clone());
                        let job = job(
                            &self.main,
                            &self.plan,
                            story,
                            state,
                            &self.session.base,
                            options,
                        );
                        let tx = tx.clone();
                        let (progress, interrupt) = (options.progress, options.interrupt);
                        let policy = options.policy;
                        (options.progress)(&format!("{}: starting", story.key));
                        scope.spawn(move || {
                            let key = job.story.key.clone();
                            let end = match follow {
                                Some(follow) => actions::follow_story(&job, follow, &tx),
                                None => run_story(
                                    &job,
                                    story_config,
                                    progress,
                                    interrupt,
                                    policy,
                                    purse,
                                    &tx,
                                ),
                            }
                            .unwrap_or_else(|e| fail(&key, e.to_string(), &tx));
                            let _ = tx.send(Message::End(key, end));
                        });
                    }
                }
                if schedule.running.is_empty() {
                    return Ok(());
                }
                let Ok(message) = rx.recv() else {
                    return Ok(());
                };
                self.receive(schedule, state, message)?;
            }
        })
    }

    /// Skip, with the reason, the stories whose dependency ended badly in this run or whose
    /// integration checkpoint holds them back; note those whose dependency waits for a human.
    fn skip_unreachable(
        &self,
        schedule: &mut Schedule,
        state: &mut EpicState,
    ) -> Result<(), Error> {
        for story in self.plan.to_run() {
            if !schedule.waiting(&story.key, state) {
                continue;
            }
            let ended_here = &schedule.ended_here;
            let ended_badly = |d: &str| {
                ended_here
                    .get(d)
                    .is_some_and(|e| !matches!(e, End::Done(_) | End::Interrupted))
            };
            let mode = self.options.gates;
            let why = match gates::dependencies(&self.plan, story, state, ended_badly, mode) {
                gates::Dependencies::Skip(why) => why,
                gates::Dependencies::Ask(dep) => {
                    schedule.asks.insert(story.key.clone(), dep);
                    continue;
                }
                gates::Dependencies::Go => continue,
            };
            (self.options.progress)(&format!("{}: skipped: {why}", story.key));
            let stage = StoryStage {
                stage: Stage::Skipped,
                reason: Some(why),
                ..Default::default()
            };
            record_stage(self.repo, &self.session, state, &story.key, stage)?;
            schedule.ended_here.insert(story.key.clone(), End::Skipped);
        }
        Ok(())
    }

    /// Record what a worker reported; at a story's end, trip the circuit breaker or the
    /// budget if it is time.
    fn receive(
        &self,
        schedule: &mut Schedule,
        state: &mut EpicState,
        message: Message,
    ) -> Result<(), Error> {
        let options = self.options;
        match message {
            Message::Stage(key, stage) => {
                (options.progress)(&stage_line(&key, &stage));
                record_stage(self.repo, &self.session, state, &key, *stage)?;
            }
            Message::Status(key, change) => {
                super::signatures::sign(self.repo, &self.session, &key, &change)?;
            }
            Message::Step(_) => {}
            Message::End(key, end) => {
                schedule.running.remove(&key);
                if let End::Asked(concern) = &end {
                    schedule.judge_asks.insert(key.clone(), concern.clone());
                }
                match end.clone() {
                    End::Failed => schedule.consecutive_failures += 1,
                    End::Done(Some(to)) => {
                        schedule.consecutive_failures = 0;
                        super::status::sync_sprint_status(self.repo, &self.session, &key, to)?;
                    }
                    End::Done(None) => schedule.consecutive_failures = 0,
                    _ => {}
                }
                if schedule.stopped.is_none() {
                    let failures = schedule.consecutive_failures;
                    schedule.stopped = if failures >= options.max_failures.max(1) {
                        Some(Halt::Breaker(format!(
                            "circuit breaker: {failures} stories failed in a row; nothing new is started"
                        )))
                    } else {
                        state.over_budget(&options.budget).map(Halt::Budget)
                    };
                    if let Some(halt) = &schedule.stopped {
                        (options.progress)(halt.said());
                    }
                }
                schedule.ended_here.insert(key, end);
            }
        }
        Ok(())
    }

    /// After the last story of this invocation: the close-out, the epic's next gate, the
    /// end record and the progress page, and what the run came to.
    fn wind_up(self, schedule: Schedule, mut state: EpicState) -> Result<EpicRun, Error> {
        let Epic {
            repo,
            session,
            plan,
            options,
            ..
        } = self;
        let Schedule {
            ended_here,
            asks,
            judge_asks,
            stopped,
            ..
        } = schedule;
        let mut stopped = stopped.map(|halt| halt.why(&state, &options.budget));
        let epic = plan.epic.clone();
        let mut interrupted = options.interrupt.load(Ordering::SeqCst)
            || ended_here.values().any(|e| *e == End::Interrupted);
        let mut gated: Vec<String> = keys_with(&ended_here, &[End::Gated]);
        if !interrupted && gated.is_empty() && state.gate.is_none() && stopped.is_none() {
            let after = super::close::close_out(repo, &session, &plan, &mut state, options)?;
            if let Some(why) = after.gated {
                (options.progress)(&format!("{}: gated: {why}", close_session_name(&epic)));
                gated.push(close_session_name(&epic));
            }
            stopped = after.stopped;
            interrupted = after.interrupted;
        }
        let settled = plan.to_run().all(|s| {
            let st = state.story(&s.key);
            st.is_terminal() || matches!(st.stage, Stage::Failed | Stage::Skipped)
        });
        if !interrupted && state.gate.is_none() {
            let complete = gated.is_empty() && settled && stopped.is_none();
            let waiting = gates::Waiting {
                dependencies: &asks,
                judge: &judge_asks,
                complete,
            };
            gates::open_next(repo, &session, &plan, &mut state, options.gates, &waiting)?;
        }
        if !interrupted
            && gated.is_empty()
            && state.gate.is_none()
            && (settled || stopped.is_some())
        {
            if state.answers.get(COMPLETION) == Some(&Answer::Abort) && stopped.is_none() {
                stopped = Some("a human did not sign the epic off at its completion gate".into());
            }
            finish(repo, &session, &plan, &mut state, stopped.clone())?;
        }
        super::progress::write(repo, &session, &plan, &state)?;
        let mut out = finished_run(plan, session, state, stopped, interrupted);
        if out.stopped.is_some() {
            out.reached = out.state.spent_cap(&options.budget);
        }
        out.gated = gated;
        out.failed = keys_with(&ended_here, &[End::Failed]);
        out.skipped = keys_with(&ended_here, &[End::Skipped]);
        // Blocked in this run or before, and not yet resolved: still waiting for a human.
        out.blocked = out
            .plan
            .to_run()
            .filter(|s| out.state.story(&s.key).stage == Stage::Blocked)
            .map(|s| s.key.clone())
            .collect();
        Ok(out)
    }
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
        *counts
            .entry(state.story(&s.key).stage.as_str().to_owned())
            .or_insert(0) += 1;
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
        reached: None,
        stopped,
        interrupted,
    }
}

/// The stories the journal says blocked whose file in their own session no longer does.
fn unblocked(repo: &Repo, plan: &Plan, state: &EpicState) -> Result<Vec<String>, Error> {
    let mut keys = Vec::new();
    for s in plan.to_run() {
        if state.story(&s.key).stage != Stage::Blocked {
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
    let base =
        super::options::new_base(repo, options.base.as_deref())?.unwrap_or_else(|| "HEAD".into());
    let start = StartOptions {
        name,
        base: Some(base),
        playbook: None,
    };
    super::start_session(repo, &start, options.policy, options.progress)
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

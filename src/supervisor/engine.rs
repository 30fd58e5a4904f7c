//! The run loop: find the next thing to do from the replayed state, do it, journal it, repeat
//! until the playbook is done, a gate parks the run, or something stops it.
//!
//! Every decision is an event first and an effect second, so the loop can be re-entered at
//! any point (by `run`, `resume` or `answer`) and continues where the journal says.

use std::collections::BTreeMap;

mod budget;
mod prompt;
mod round;
mod walls;
mod watchdog;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::attempt::Attempt;
use super::checks::evaluate;
use super::decide::{self, GateRequest, Settlement};
use super::error::{Error, Result};
use super::library::{validate, Source};
use super::outcome::{Outcome, Report};
use super::playbook::{self, Autonomy, Playbook, Step};
use crate::config::Config;
use crate::runner::{self, Kind};
use crate::session::run_state::{Ended, RunState, StepStatus};
use crate::session::schema::{Body, Next, RunStarted};
use crate::session::{self, Decision, Event, NewEvent, Repo, Session, Status};

/// What the caller wants.
#[derive(Clone, Debug)]
pub enum Request {
    /// Run a playbook (or, if this session already runs it, continue).
    Start {
        /// The playbook.
        source: Source,
        /// Arguments for its steps.
        args: Vec<String>,
    },
    /// Run a playbook anew from its first step when this session's run of it completed,
    /// was aborted or waits at a gate; otherwise the same as [`Request::Start`]. The epic
    /// runner asks this for a story a human unblocked after its agent halted.
    Restart {
        /// The playbook.
        source: Source,
        /// Arguments for its steps.
        args: Vec<String>,
    },
    /// Continue after a crash, a stop or an answered gate.
    Resume {
        /// The dollar budget to go on with, over the configuration's (a run stopped at its
        /// budget goes on with more).
        budget_usd: Option<f64>,
    },
    /// Answer the open gate, then continue.
    Answer {
        /// The reply (continue, retry, skip, abort, or a synonym).
        reply: String,
        /// What the human wants the journal to say.
        message: Option<String>,
    },
}

/// What a run needs from its surroundings.
pub struct RunOptions<'a> {
    /// The project configuration (runners, test command).
    pub config: &'a Config,
    /// `SPECIFY_FEATURE_DIRECTORY` and `SPECIFY_FEATURE`.
    pub feature_env: crate::bmad::speckit::FeatureEnv,
    /// Called with every event as it is journaled (for progress output).
    pub observer: &'a mut dyn FnMut(&Event),
    /// Set when the user interrupts (see [`runner::interrupt`]).
    pub interrupt: &'a AtomicBool,
    /// The most time in steps the session's runs may spend, when less than the playbook's
    /// `limits.max_run_time` (an epic's `--max-time`): no step's timeout runs past it.
    pub time_limit: Option<std::time::Duration>,
    /// What this run shares with others going on at once (an epic's stories): each round
    /// draws its allowance from it first.
    pub purse: Option<&'a super::Purse>,
}

/// Run, resume or answer: the supervisor's one entry point.
pub fn supervise(
    repo: &Repo,
    session: &Session,
    request: Request,
    options: RunOptions<'_>,
) -> Result<Report> {
    session.ensure_lives_here("its run goes on there")?;
    // Nothing runs, and no gate is answered, in a worktree git no longer tracks.
    session::ensure_worktree_intact(repo, session)?;
    let git_dir = session.worktree_git_dir(repo)?;
    let _lock = super::lock::RunLock::acquire(&git_dir, session.id.as_str())?;
    // What a git killed with an earlier run left locked, with no git running now.
    for cleared in session::clear_abandoned_worktree_locks(repo, &git_dir) {
        tracing::warn!("{cleared}");
    }
    let moved = session::ref_record::foreign_moves(repo, &session.id)?;
    let journal = session::read_journal(repo, &session.id)?;
    let state = RunState::replay(journal.events());
    // A budget goes with a run that stopped; given to any other, it would be dropped unseen.
    if let Request::Resume {
        budget_usd: Some(_),
    } = &request
    {
        if state.manifest.is_some() && decide::stopped_by(&state).is_none() {
            let where_it_stands = match (&state.ended, &state.gate) {
                (_, Some(gate)) => format!("it waits at a gate at {}", gate.step),
                (Some(Ended::Completed), _) => "it completed".to_owned(),
                (Some(Ended::Aborted), _) => "it was aborted".to_owned(),
                _ => "it has not stopped".to_owned(),
            };
            return Err(Error::BudgetNotResumed {
                session: session.id.to_string(),
                state: where_it_stands,
            });
        }
    }
    let root = session.worktree.clone();
    // A run parked at a gate is over too for a restart: the story's halt that parked it
    // was resolved by a human outside it.
    let fresh = matches!(request, Request::Restart { .. })
        && (matches!(state.ended, Some(Ended::Completed | Ended::Aborted)) || state.gate.is_some());
    let request = match request {
        Request::Restart { source, args } => Request::Start { source, args },
        other => other,
    };
    let (playbook, args, new_run) = match (&request, &state.manifest) {
        (Request::Start { source, .. }, Some(m)) if m.playbook != source.name => {
            return Err(Error::OtherPlaybook {
                session: session.id.to_string(),
                running: m.playbook.clone(),
                requested: source.name.clone(),
            })
        }
        // A restart of a run that ended: a new run, from its first step.
        (Request::Start { source, args }, Some(_)) if fresh => {
            let playbook = validate(source, &root, options.config)?;
            (playbook, args.clone(), Some(source.clone()))
        }
        (_, Some(m)) => match stored_playbook(repo, session, m) {
            Ok(playbook) => (playbook, m.args.clone(), None),
            // Ending a run needs none of its steps: a run whose playbook is gone can still be
            // aborted at its gate instead of blocking the session for good.
            Err(e) => match &request {
                Request::Answer { reply, message }
                    if crate::session::run_state::Answer::parse(reply)
                        == Some(crate::session::run_state::Answer::Abort)
                        && state.gate.is_some() =>
                {
                    let manifest = m.clone();
                    return abort_without_playbook(repo, session, state, reply, message, &manifest);
                }
                _ => return Err(e),
            },
        },
        (Request::Start { source, args }, None) => {
            let playbook = validate(source, &root, options.config)?;
            (playbook, args.clone(), Some(source.clone()))
        }
        (_, None) => {
            return Err(Error::NoRun {
                session: session.id.to_string(),
            })
        }
    };
    // A new run needs the programs of every step, whatever an earlier run finished.
    let fresh = RunState::default();
    let before = if new_run.is_some() { &fresh } else { &state };
    let programs = preflight(&playbook, before, options.config, &root)?;
    let containment = super::contain::decide(options.config)?;
    let hidden = crate::policy::hidden_from_steps(repo);
    let check_walls =
        super::contain::command(&containment, &root, repo, options.config.checks.network)?;
    let mut playbook = playbook;
    if let Some(limit) = options.time_limit {
        playbook.limits.max_run_time = playbook.limits.max_run_time.min(limit);
    }
    let mut engine = Engine {
        repo,
        session,
        root,
        playbook,
        args,
        config: options.config,
        feature_env: options.feature_env,
        programs,
        state,
        observer: options.observer,
        interrupt: options.interrupt,
        moved,
        purse: options.purse,
        containment,
        check_walls,
        hidden,
        crashed_from: None,
    };
    if let Some(source) = new_run {
        let blob = session::store_text(repo, &session.id, &source.text)?;
        engine.record(
            NewEvent::new(Body::RunStarted(RunStarted {
                playbook: source.name,
                origin: source.origin,
                blob,
                args: engine.args.clone(),
                limits: serde_json::to_value(&engine.playbook.limits).unwrap_or_default(),
                steps: engine.playbook.steps().map(|s| s.id.clone()).collect(),
            }))
            .decision(Some(Decision::Human)),
        )?;
    }
    if let Request::Answer { reply, message } = &request {
        let event = decide::answer(
            &engine.state,
            session.id.as_str(),
            reply,
            message.as_deref(),
        )?;
        engine.record(event)?;
    }
    let budget_usd = match &request {
        Request::Resume { budget_usd } => *budget_usd,
        _ => None,
    };
    let outcome = engine.drive(budget_usd)?;
    Ok(Report {
        outcome,
        playbook: engine.playbook,
        state: engine.state,
    })
}

/// Journal a person's answer at the run's open gate and go no further: the run goes on
/// from it wherever it is taken up next (a story whose pipeline runs on a runner).
pub fn record_answer(
    repo: &Repo,
    session: &Session,
    reply: &str,
    message: Option<&str>,
) -> Result<()> {
    let git_dir = session.worktree_git_dir(repo)?;
    let _lock = super::lock::RunLock::acquire(&git_dir, session.id.as_str())?;
    let journal = session::read_journal(repo, &session.id)?;
    let state = RunState::replay(journal.events());
    let event = decide::answer(&state, session.id.as_str(), reply, message)?;
    session::record(repo, session, event)?;
    Ok(())
}

/// Answer `abort` at the open gate of a run whose playbook cannot be read: the answer and
/// the run's end are journaled as the engine would, and nothing runs.
fn abort_without_playbook(
    repo: &Repo,
    session: &Session,
    mut state: RunState,
    reply: &str,
    message: &Option<String>,
    manifest: &crate::session::run_state::Manifest,
) -> Result<Report> {
    let answered = decide::answer(&state, session.id.as_str(), reply, message.as_deref())?;
    let step = state.gate.as_ref().map(|g| g.step.clone());
    let aborted = NewEvent::new(Body::RunAborted(Default::default()))
        .step(step)
        .decision(Some(Decision::Human));
    for event in [answered, aborted] {
        let event = session::record(repo, session, event)?;
        state.apply(&event);
    }
    Ok(Report {
        outcome: Outcome::Aborted,
        playbook: Playbook {
            name: manifest.playbook.clone(),
            description: None,
            limits: Default::default(),
            phases: Vec::new(),
        },
        state,
    })
}

/// The exact playbook text the run started with, from git.
fn stored_playbook(
    repo: &Repo,
    session: &Session,
    m: &crate::session::run_state::Manifest,
) -> Result<Playbook> {
    let failure = |why: String| Error::StoredPlaybook {
        session: session.id.to_string(),
        blob: m.blob.clone(),
        why,
    };
    let text = session::read_stored_text(repo, &m.blob).map_err(|e| failure(e.to_string()))?;
    let (playbook, diagnostics) = playbook::parse(&text, &m.playbook);
    playbook.ok_or_else(|| {
        failure(
            diagnostics
                .first()
                .map(|d| d.render("playbook"))
                .unwrap_or_default(),
        )
    })
}

/// Find every runner the unfinished steps need, so a missing CLI stops the run before it
/// starts rather than at step 6.
fn preflight(
    playbook: &Playbook,
    state: &RunState,
    config: &Config,
    root: &Path,
) -> Result<BTreeMap<Kind, PathBuf>> {
    let mut programs = BTreeMap::new();
    for step in playbook.steps().filter(|s| !state.finished(&s.id)) {
        if step.autonomy == Autonomy::Skip {
            continue;
        }
        let agent = runner::agent(config, step.runner.as_deref(), step.role.as_deref())?;
        if let Some(why) = runner::budget_problem(config, &agent) {
            return Err(runner::Error::BudgetCannotCount {
                step: step.id.clone(),
                why,
            }
            .into());
        }
        if let Some(var) = &agent.api_key_env {
            if crate::env::named(var).is_none_or(|v| v.is_empty()) {
                return Err(runner::Error::KeyNotSet {
                    role: step.role.clone().unwrap_or_default(),
                    variable: var.clone(),
                }
                .into());
            }
        }
        if let std::collections::btree_map::Entry::Vacant(slot) = programs.entry(agent.kind) {
            slot.insert(runner::locate(config, agent.kind, root)?);
        }
    }
    Ok(programs)
}

struct Engine<'a> {
    repo: &'a Repo,
    session: &'a Session,
    root: PathBuf,
    playbook: Playbook,
    args: Vec<String>,
    config: &'a Config,
    feature_env: crate::bmad::speckit::FeatureEnv,
    programs: BTreeMap<Kind, PathBuf>,
    state: RunState,
    observer: &'a mut dyn FnMut(&Event),
    interrupt: &'a AtomicBool,
    /// Refs of the session's record something else moved, as found before this run wrote
    /// anything (its first write makes the journal git-bmad's again).
    moved: Vec<session::ref_record::ForeignMove>,
    /// Shared with runs going on at once.
    purse: Option<&'a super::Purse>,
    /// Whether steps run contained.
    containment: super::contain::Containment,
    /// The walls of test runs, when contained (their private home lives as long as the run).
    check_walls: Option<super::contain::Scratch>,
    /// The main worktree, shown read-only to contained steps (asked once: it may take git).
    hidden: crate::runner::sandbox::Hidden,
    /// The checkpoint before a round a crash interrupted, and its steps: what their next
    /// round changed counts from there (the work the killed attempt left is theirs).
    crashed_from: Option<(Vec<String>, session::Checkpoint)>,
}

impl Engine<'_> {
    /// Journal an event (which renders it), fold it into the state, show it.
    fn record(&mut self, event: NewEvent) -> Result<Event> {
        let event = session::record(self.repo, self.session, event)?;
        self.fold(&event);
        Ok(event)
    }

    fn record_all(&mut self, events: Vec<NewEvent>) -> Result<()> {
        for event in events {
            self.record(event)?;
        }
        Ok(())
    }

    /// Fold a journaled event into the state and show it; checkpoints come here straight
    /// from the session layer, which journaled them itself.
    fn fold(&mut self, event: &Event) {
        self.state.apply(event);
        (self.observer)(event);
    }

    /// Record a change of the session's status on its checkpoint chain.
    fn mark(&mut self, label: &str, status: Status, step: &str) -> Result<()> {
        let (_, event) = session::mark_status(
            self.repo,
            self.session,
            label,
            status,
            Some(step.to_owned()),
        )?;
        self.fold(&event);
        Ok(())
    }

    /// Run the playbook on from where it stands; a stopped run is resumed, with
    /// `budget_usd` when given.
    fn drive(&mut self, budget_usd: Option<f64>) -> Result<Outcome> {
        match self.state.ended {
            Some(Ended::Completed) => return Ok(Outcome::Completed),
            Some(Ended::Aborted) => {
                return Err(Error::Aborted {
                    session: self.session.id.to_string(),
                })
            }
            _ => {}
        }
        let resumed = decide::resume(&self.playbook, &self.state, budget_usd);
        self.record_all(resumed)?;
        self.park_on_a_record_not_ours()?;
        loop {
            if self.interrupt.load(Ordering::SeqCst) {
                return self.interrupted();
            }
            if let Some(gate) = &self.state.gate {
                return Ok(Outcome::Gated { gate: gate.clone() });
            }
            let playbook = self.playbook.clone();
            let Some(phase) = playbook
                .phases
                .iter()
                .find(|p| p.steps.iter().any(|s| !self.state.finished(&s.id)))
            else {
                let event = decide::completed(&self.playbook, &self.state);
                self.record(event)?;
                return Ok(Outcome::Completed);
            };
            let pending: Vec<&Step> = phase
                .steps
                .iter()
                .filter(|s| !self.state.finished(&s.id))
                .collect();
            // A step a crash left running: what its round changed shows whether it worked.
            let crashed_round = self.changed_by_crashed_round(&pending)?;
            let settlement = {
                let _shadow = self.checks_shadow()?;
                let left = self.shares(1, None).0;
                let mut evaluate = |step: &Step, check: &playbook::Check| {
                    evaluate(check, &self.check_env(step, crashed_round.as_deref(), left))
                };
                decide::settle(&playbook, &self.state, &pending, &mut evaluate)
            };
            match settlement {
                Settlement::Run => {}
                // Something changed (a skip, a recovery, an answer): look again from the top.
                Settlement::Record(events) => {
                    self.record_all(events)?;
                    continue;
                }
                Settlement::Gate(gate) => {
                    self.open_gate(&gate)?;
                    continue;
                }
                Settlement::Abort(event) => {
                    self.record(*event)?;
                    return Ok(Outcome::Aborted);
                }
                Settlement::Stop(steps) => {
                    self.record(decide::stopped(&steps))?;
                    return Ok(Outcome::Failed { steps });
                }
            }
            let runnable: Vec<&Step> = pending
                .iter()
                .copied()
                .filter(|s| {
                    matches!(
                        self.state.step(&s.id).status,
                        StepStatus::Pending | StepStatus::Failed { next: Next::Retry }
                    )
                })
                .collect();
            if runnable.is_empty() {
                // settle() handles every other status; reaching this is a bug, not a reason
                // to spin.
                let stuck: Vec<String> = pending
                    .iter()
                    .map(|s| format!("{} ({:?})", s.id, self.state.step(&s.id).status))
                    .collect();
                return Err(Error::Stuck {
                    session: self.session.id.to_string(),
                    steps: stuck.join(", "),
                });
            }
            let budgets = &self.config.orchestration;
            if let Some((event, outcome)) =
                decide::limit_reached(&playbook.limits, budgets, &self.state, runnable.len())
            {
                self.record(event)?;
                return Ok(outcome);
            }
            let draw = match self.draw(runnable.len())? {
                Ok(draw) => draw,
                Err(outcome) => return Ok(outcome),
            };
            let before = self.spent();
            let judged = self
                .run_round(&phase.id, &runnable, draw.as_ref())
                .and_then(|attempts| {
                    let stopped = self.record_verdicts(&attempts)?;
                    Ok((attempts, stopped))
                });
            // What a step spent is counted once its verdict is recorded: the purse is
            // settled after that, on every path, or the stories sharing it never see it.
            if let (Some(purse), Some(draw)) = (self.purse, draw) {
                purse.settle(draw, self.spent().since(before));
            }
            let (attempts, stopped) = judged?;
            if self.interrupt.load(Ordering::SeqCst) {
                return self.interrupted();
            }
            if !stopped.is_empty() {
                // A step stopped at the run's budget as it ran (a CLI given what was left
                // stops itself there) stops the run at that limit, and says so.
                let shared = attempts.iter().any(|a| a.budget_spent());
                if let Some((event, outcome)) =
                    decide::limit_reached(&playbook.limits, budgets, &self.state, 0)
                        .or_else(|| shared.then(|| self.shared_budget_stop()).flatten())
                {
                    self.record(event)?;
                    return Ok(outcome);
                }
                let label = format!("run stopped: {} failed", stopped.join(", "));
                self.mark(&label, Status::Failed, &stopped[0])?;
                self.record(decide::stopped(&stopped).trigger(Some("stop".into())))?;
                return Ok(Outcome::Failed { steps: stopped });
            }
        }
    }

    /// Record each attempt's verdict (what it did and spent): the steps that stop the run.
    fn record_verdicts(&mut self, attempts: &[Attempt<'_>]) -> Result<Vec<String>> {
        let mut stopped = Vec::new();
        for attempt in attempts {
            let verdict = decide::judge(attempt, &self.state.step(&attempt.step.id));
            self.record_all(verdict.events)?;
            if verdict.stops {
                stopped.push(attempt.step.id.clone());
            }
        }
        Ok(stopped)
    }

    fn interrupted(&mut self) -> Result<Outcome> {
        self.record(
            NewEvent::new(Body::RunInterrupted(Default::default())).decision(Some(Decision::Human)),
        )?;
        Ok(Outcome::Interrupted)
    }

    fn open_gate(&mut self, gate: &GateRequest) -> Result<()> {
        self.mark(&format!("gate at {}", gate.step), Status::Gated, &gate.step)?;
        self.record(gate.opened(self.config.orchestration.escalation_threshold))?;
        Ok(())
    }
}

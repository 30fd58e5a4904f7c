//! The run loop: find the next thing to do from the replayed state, do it, journal it, repeat
//! until the playbook is done, a gate parks the run, or something stops it.
//!
//! Every decision is an event first and an effect second, so the loop can be re-entered at
//! any point (by `run`, `resume` or `answer`) and continues where the journal says.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::checks::{evaluate, CheckEnv, CheckOutcome};
use super::commands::missing_commands;
use super::error::{Error, Result};
use super::kind;
use super::playbook::{self, Autonomy, ErrorPolicy, Playbook, Severity, Step, Trigger};
use super::state::{Answer, Ended, Gate, GateKind, RunState, StepState, StepStatus};
use super::Source;
use crate::bmad::analysis::confidence;
use crate::config::Config;
use crate::policy::secrets::redact;
use crate::runner::{self, AgentResult, Captured, Exit, Invocation, Kind};
use crate::session::{self, Decision, Event, NewEvent, Repo, Session, Status};
use crate::text::{first_line_within, last_chars};

/// How much of an agent's stdout and stderr the journal keeps.
const STDOUT_LIMIT: usize = 64 << 10;
const STDERR_LIMIT: usize = 16 << 10;
/// How much of an agent's final answer an event and a gate show.
const FINAL_TEXT_LIMIT: usize = 4000;
const EVIDENCE_LIMIT: usize = 1500;

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
    /// Continue after a crash, a stop or an answered gate.
    Resume,
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
    /// `SPECIFY_FEATURE_DIRECTORY`, if set.
    pub feature_env: Option<String>,
    /// Called with every event as it is journaled (for progress output).
    pub observer: &'a mut dyn FnMut(&Event),
    /// Set when the user interrupts (see [`runner::interrupt`]).
    pub interrupt: &'a std::sync::atomic::AtomicBool,
}

/// Where a run stopped this time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    /// Every step is done or skipped.
    Completed,
    /// Parked at a gate, waiting for `git bmad answer`.
    Gated {
        /// The gate.
        gate: Gate,
    },
    /// Steps failed under their `stop` policy.
    Failed {
        /// The steps.
        steps: Vec<String>,
    },
    /// The cap on invocations was reached.
    InvocationLimit {
        /// The cap.
        limit: u32,
    },
    /// The budget was spent.
    BudgetLimit {
        /// The budget, in millionths of a dollar.
        limit_micro_usd: u64,
        /// Spent, in millionths of a dollar.
        spent_micro_usd: u64,
    },
    /// The run's time limit was reached.
    RunTimeLimit {
        /// The limit in seconds.
        limit_secs: u64,
    },
    /// Interrupted; the state is saved.
    Interrupted,
    /// A human aborted the run.
    Aborted,
}

/// The outcome, with the playbook and the state it left.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Where it stopped.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The playbook.
    pub playbook: Playbook,
    /// The run's state.
    pub state: RunState,
}

/// Run, resume or answer: the supervisor's one entry point.
pub fn supervise(
    repo: &Repo,
    session: &Session,
    request: Request,
    options: RunOptions<'_>,
) -> Result<Report> {
    if !session.worktree_exists {
        return Err(session::Error::WorktreeMissing {
            session: session.id.to_string(),
            path: session.worktree.clone(),
        }
        .into());
    }
    let worktree = session.open_worktree(repo)?;
    let git_dir = worktree.as_ref().unwrap_or(repo).git_dir().to_path_buf();
    let _lock = super::lock::RunLock::acquire(&git_dir, session.id.as_str())?;
    let journal = session::read_journal(repo, &session.id)?;
    let state = RunState::replay(journal.events());
    let root = session.worktree.clone();
    let (playbook, args, new_run) = match (&request, &state.manifest) {
        (Request::Start { source, .. }, Some(m)) if m.playbook != source.name => {
            return Err(Error::OtherPlaybook {
                session: session.id.to_string(),
                running: m.playbook.clone(),
                requested: source.name.clone(),
            })
        }
        (_, Some(m)) => (stored_playbook(repo, session, m)?, m.args.clone(), None),
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
    let programs = preflight(&playbook, &state, options.config, &root)?;
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
        recorded: 0,
    };
    if let Some(source) = new_run {
        let blob = session::store_text(repo, &source.text)?;
        engine.record(
            NewEvent::new(kind::RUN_STARTED)
                .decision(Some(Decision::Human))
                .detail(json!({
                    "playbook": source.name,
                    "origin": source.origin,
                    "blob": blob.to_string(),
                    "args": engine.args,
                    "limits": engine.playbook.limits,
                    "steps": engine.playbook.steps().map(|s| s.id.clone()).collect::<Vec<_>>(),
                })),
        )?;
    }
    if let Request::Answer { reply, message } = &request {
        engine.answer(reply, message.as_deref())?;
    }
    let outcome = engine.drive()?;
    Ok(Report {
        outcome,
        playbook: engine.playbook,
        state: engine.state,
    })
}

/// Parse a playbook and check its commands against the session worktree; any error stops
/// everything before the first step.
pub fn validate(source: &Source, root: &Path, config: &Config) -> Result<Playbook> {
    let (playbook, mut diagnostics) = playbook::parse(&source.text, &source.name);
    if let Some(p) = &playbook {
        diagnostics.extend(missing_commands(p, root, config));
    }
    match playbook {
        Some(p) if !diagnostics.iter().any(|d| d.severity == Severity::Error) => Ok(p),
        _ => Err(Error::Invalid {
            origin: source.origin.clone(),
            diagnostics,
        }),
    }
}

/// The exact playbook text the run started with, from git.
fn stored_playbook(repo: &Repo, session: &Session, m: &super::state::Manifest) -> Result<Playbook> {
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
        if let Some(var) = &agent.api_key_env {
            if std::env::var_os(var).is_none_or(|v| v.is_empty()) {
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
    feature_env: Option<String>,
    programs: BTreeMap<Kind, PathBuf>,
    state: RunState,
    observer: &'a mut dyn FnMut(&Event),
    interrupt: &'a std::sync::atomic::AtomicBool,
    /// Events journaled by this engine, to tell a loop that progresses from one that cannot.
    recorded: u64,
}

/// One attempt of one step, finished.
struct Attempt<'s> {
    step: &'s Step,
    number: u32,
    result: std::result::Result<AgentResult, runner::Error>,
    checks: Vec<CheckOutcome>,
    hash: String,
    changed: usize,
}

impl<'a> Engine<'a> {
    /// Journal an event, render it, fold it into the state, show it.
    fn record(&mut self, event: NewEvent) -> Result<Event> {
        let event = session::record(self.repo, self.session, event)?;
        self.fold(&event);
        Ok(event)
    }

    /// An event the session layer recorded for us (a checkpoint): render it, then fold it.
    fn seen(&mut self, event: &Event) -> Result<()> {
        session::update_rendered(self.repo, self.session, event)?;
        self.fold(event);
        Ok(())
    }

    fn fold(&mut self, event: &Event) {
        self.state.apply(event);
        self.recorded += 1;
        (self.observer)(event);
    }

    fn answer(&mut self, reply: &str, message: Option<&str>) -> Result<()> {
        let Some(gate) = self.state.gate.clone() else {
            return Err(Error::NoGate {
                session: self.session.id.to_string(),
            });
        };
        let Some(answer) = Answer::parse(reply).filter(|a| gate.kind.options().contains(a)) else {
            return Err(Error::UnknownAnswer {
                answer: reply.to_owned(),
                gate: Box::new(gate),
            });
        };
        self.record(
            NewEvent::new(session::kind::GATE_ANSWERED)
                .step(Some(gate.step.clone()))
                .decision(Some(Decision::Human))
                .trigger(Some(gate.trigger.clone()))
                .response(Some(message.unwrap_or(answer.as_str()).to_owned()))
                .detail(json!({"answer": answer.as_str(), "kind": gate.kind.as_str(), "gate_seq": gate.seq})),
        )?;
        Ok(())
    }

    fn drive(&mut self) -> Result<Outcome> {
        match self.state.ended.clone() {
            Some(Ended::Completed) => return Ok(Outcome::Completed),
            Some(Ended::Aborted) => {
                return Err(Error::Aborted {
                    session: self.session.id.to_string(),
                })
            }
            Some(Ended::Stopped(reason)) if self.state.gate.is_none() => {
                self.record(
                    NewEvent::new(kind::RUN_RESUMED)
                        .decision(Some(Decision::Human))
                        .detail(json!({"after": reason})),
                )?;
                let stopped: Vec<String> = self
                    .playbook
                    .steps()
                    .filter(|s| self.state.step(&s.id).status == failed("stop"))
                    .map(|s| s.id.clone())
                    .collect();
                for id in stopped {
                    self.record(
                        NewEvent::new(kind::RETRY)
                            .step(Some(id))
                            .decision(Some(Decision::Human))
                            .trigger(Some("resume".into())),
                    )?;
                }
            }
            _ => {}
        }
        loop {
            if self.interrupt.load(std::sync::atomic::Ordering::SeqCst) {
                self.record(NewEvent::new(kind::RUN_INTERRUPTED).decision(Some(Decision::Human)))?;
                return Ok(Outcome::Interrupted);
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
                return self.complete();
            };
            let pending: Vec<&Step> = phase
                .steps
                .iter()
                .filter(|s| !self.state.finished(&s.id))
                .collect();
            let before = self.recorded;
            if let Some(outcome) = self.settle(&pending)? {
                return Ok(outcome);
            }
            if self.recorded != before {
                // Something changed (a skip, a recovery, a gate): look again from the top.
                continue;
            }
            let runnable: Vec<&Step> = pending
                .iter()
                .copied()
                .filter(|s| {
                    matches!(self.state.step(&s.id).status, StepStatus::Pending)
                        || self.state.step(&s.id).status == failed("retry")
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
            if let Some(outcome) = self.limits(runnable.len())? {
                return Ok(outcome);
            }
            let attempts = self.run_round(&phase.id, &runnable)?;
            let mut stopped = Vec::new();
            for attempt in &attempts {
                if self.judge(attempt)? {
                    stopped.push(attempt.step.id.clone());
                }
            }
            if self.interrupt.load(std::sync::atomic::Ordering::SeqCst) {
                self.record(NewEvent::new(kind::RUN_INTERRUPTED).decision(Some(Decision::Human)))?;
                return Ok(Outcome::Interrupted);
            }
            if !stopped.is_empty() {
                let label = format!("run stopped: {} failed", stopped.join(", "));
                let (_, ev) = session::mark_status(
                    self.repo,
                    self.session,
                    &label,
                    Status::Failed,
                    Some(stopped[0].clone()),
                )?;
                self.seen(&ev)?;
                self.record(
                    NewEvent::new(kind::RUN_FAILED)
                        .decision(Some(Decision::Auto))
                        .trigger(Some("stop".into()))
                        .detail(json!({"steps": stopped})),
                )?;
                return Ok(Outcome::Failed { steps: stopped });
            }
        }
    }

    /// Everything in a phase that is not "run these steps": answers to act on, gates to open,
    /// crashed steps to recover, steps to skip. `Some` ends this call of the run.
    fn settle(&mut self, pending: &[&Step]) -> Result<Option<Outcome>> {
        for step in pending {
            let record = self.state.step(&step.id);
            if let Some((gate_kind, answer)) = record.pending_answer {
                let id = Some(step.id.clone());
                match (gate_kind, answer) {
                    (_, Answer::Abort) => {
                        self.record(
                            NewEvent::new(kind::RUN_ABORTED)
                                .step(id)
                                .decision(Some(Decision::Human)),
                        )?;
                        return Ok(Some(Outcome::Aborted));
                    }
                    (_, Answer::Skip) => {
                        self.record(
                            NewEvent::new(session::kind::STEP_SKIPPED)
                                .step(id)
                                .decision(Some(Decision::Human))
                                .detail(json!({"reason": "skipped by a human at a gate"})),
                        )?;
                    }
                    (GateKind::After, Answer::Continue) => {
                        self.record(
                            NewEvent::new(session::kind::STEP_COMPLETED)
                                .step(id)
                                .decision(Some(Decision::Human))
                                .detail(json!({"accepted_by": "human", "after": record.last_failure.map(|f| f.1)})),
                        )?;
                    }
                    (GateKind::After | GateKind::Precondition, Answer::Retry) => {
                        self.record(
                            NewEvent::new(kind::RETRY)
                                .step(id)
                                .decision(Some(Decision::Human))
                                .trigger(Some("human".into())),
                        )?;
                    }
                    // Approved or waived: the step runs next, which clears the answer.
                    _ => continue,
                }
                return Ok(None);
            }
            match record.status {
                StepStatus::Failed { ref next } if next == "gate" => {
                    let (trigger, reason, evidence) =
                        record.last_failure.clone().unwrap_or_default();
                    let question = format!(
                        "Step `{}` ({}) {reason}. Fix what is needed and answer `continue` to accept the step as done, `retry` to run it again, `skip` it, or `abort` the run.",
                        step.id,
                        first_line_within(&step.command, 60)
                    );
                    self.open_gate(step, GateKind::After, &trigger, question, evidence)?;
                    return Ok(None);
                }
                StepStatus::Failed { ref next } if next == "stop" => {
                    // Only reachable when a stop was journaled and the run record was lost
                    // (a crash between the two events): stop again.
                    self.record(
                        NewEvent::new(kind::RUN_FAILED)
                            .decision(Some(Decision::Auto))
                            .detail(json!({"steps": [step.id]})),
                    )?;
                    return Ok(Some(Outcome::Failed {
                        steps: vec![step.id.clone()],
                    }));
                }
                StepStatus::Running => {
                    self.recover(step)?;
                    return Ok(None);
                }
                _ => {}
            }
            if step.autonomy == Autonomy::Skip && record.status == StepStatus::Pending {
                self.record(
                    NewEvent::new(session::kind::STEP_SKIPPED)
                        .step(Some(step.id.clone()))
                        .decision(Some(Decision::Auto))
                        .detail(json!({"reason": "autonomy: skip"})),
                )?;
                return Ok(None);
            }
            if step.autonomy == Autonomy::AlwaysGate && !record.approved {
                let done = self
                    .playbook
                    .steps()
                    .filter(|s| self.state.finished(&s.id))
                    .count();
                let total = self.playbook.steps().count();
                let question = format!(
                    "Step `{}` ({}) needs your approval before it runs{}. {done}/{total} steps are done. Answer `continue` to run it, `skip` it, or `abort` the run.",
                    step.id,
                    first_line_within(&step.command, 60),
                    step.description.as_deref().map(|d| format!(": {d}")).unwrap_or_default(),
                );
                let evidence = self.summary();
                self.open_gate(step, GateKind::Before, "always_gate", question, evidence)?;
                return Ok(None);
            }
            if !record.preconditions_waived && record.status == StepStatus::Pending {
                let unmet: Vec<CheckOutcome> = step
                    .preconditions
                    .iter()
                    .map(|c| evaluate(c, &self.check_env(step, None)))
                    .filter(|o| !o.ok)
                    .collect();
                if let Some(first) = unmet.first() {
                    let producer = self.producer_of(step, &first.check);
                    let question = format!(
                        "Step `{}` cannot start: precondition {} is not met ({}){producer}. Create it and answer `retry`, `continue` to run the step anyway, `skip` it, or `abort` the run.",
                        step.id, first.check, first.detail
                    );
                    let evidence = unmet
                        .iter()
                        .map(|o| format!("{}: {}", o.check, o.detail))
                        .collect::<Vec<_>>()
                        .join("\n");
                    self.open_gate(
                        step,
                        GateKind::Precondition,
                        "precondition_unmet",
                        question,
                        evidence,
                    )?;
                    return Ok(None);
                }
            }
        }
        Ok(None)
    }

    /// Which earlier step should have produced what a precondition wants, and what became of it.
    fn producer_of(&self, step: &Step, check: &str) -> String {
        let producer = self
            .playbook
            .steps()
            .take_while(|s| s.id != step.id)
            .filter(|s| s.postconditions.iter().any(|c| c.to_string() == check))
            .last();
        match producer {
            Some(p) => {
                let what = match &self.state.step(&p.id).status {
                    StepStatus::Skipped => "it was skipped".to_owned(),
                    StepStatus::Done => "it ran, but the artifact is gone".to_owned(),
                    other => format!("it is {}", status_word(other)),
                };
                format!("; step `{}` should have produced it, and {what}", p.id)
            }
            None => "; no earlier step produces it, so it must exist before the run".to_owned(),
        }
    }

    fn open_gate(
        &mut self,
        step: &Step,
        gate_kind: GateKind,
        trigger: &str,
        question: String,
        evidence: String,
    ) -> Result<()> {
        let (_, ev) = session::mark_status(
            self.repo,
            self.session,
            &format!("gate at {}", step.id),
            Status::Gated,
            Some(step.id.clone()),
        )?;
        self.seen(&ev)?;
        let decision = if gate_kind == GateKind::Before {
            Decision::Auto
        } else {
            Decision::Escalated
        };
        let mut confidence = confidence::confidence(&self.gate_signals(step, gate_kind));
        // Below the project's escalation threshold a gate is shown in full.
        if confidence.score < self.config.orchestration.escalation_threshold * 100.0 {
            confidence.checkpoint_format = confidence::Format::Full;
        }
        self.record(
            NewEvent::new(session::kind::GATE_OPENED)
                .step(Some(step.id.clone()))
                .decision(Some(decision))
                .trigger(Some(trigger.to_owned()))
                .detail(json!({
                    "kind": gate_kind.as_str(),
                    "question": redact(&question),
                    "evidence": redact(&evidence),
                    "options": gate_kind.options().iter().map(|a| a.as_str()).collect::<Vec<_>>(),
                    "confidence": confidence,
                })),
        )?;
        Ok(())
    }

    /// What the run knows that bears on going on past a gate, as confidence signals (seed
    /// 2b.11), which choose how the gate is shown (2b.7). Verdict: a failure is 0; before a
    /// step, the share of finished steps that finished cleanly; for preconditions, the share
    /// met. Memory: the share of the human's earlier answers in this run that were
    /// `continue` — a human who keeps approving needs less shown. One signal alone is capped
    /// at 60, so a gate is never shown minimally on the run's word only.
    fn gate_signals(&self, step: &Step, gate_kind: GateKind) -> Vec<(confidence::Signal, f64)> {
        let verdict = match gate_kind {
            GateKind::After => 0.0,
            GateKind::Before => {
                let finished: Vec<StepState> = self
                    .playbook
                    .steps()
                    .filter(|s| self.state.finished(&s.id))
                    .map(|s| self.state.step(&s.id))
                    .collect();
                let clean = finished
                    .iter()
                    .filter(|s| s.status == StepStatus::Done && s.last_failure.is_none())
                    .count();
                if finished.is_empty() {
                    1.0
                } else {
                    clean as f64 / finished.len() as f64
                }
            }
            GateKind::Precondition => {
                let met = step
                    .preconditions
                    .iter()
                    .filter(|c| evaluate(c, &self.check_env(step, None)).ok)
                    .count();
                met as f64 / step.preconditions.len().max(1) as f64
            }
        };
        let mut signals = vec![(confidence::Signal::Verdict, verdict)];
        let answers = &self.state.answers;
        if !answers.is_empty() {
            let approved = answers.iter().filter(|a| **a == Answer::Continue).count();
            signals.push((
                confidence::Signal::Memory,
                approved as f64 / answers.len() as f64,
            ));
        }
        signals
    }

    /// A step found started but not finished: its postconditions say whether the crashed
    /// attempt did its work.
    fn recover(&mut self, step: &Step) -> Result<()> {
        let checks: Vec<CheckOutcome> = step
            .postconditions
            .iter()
            .filter(|c| **c != playbook::Check::DiffNonempty)
            .map(|c| evaluate(c, &self.check_env(step, None)))
            .collect();
        let met = !checks.is_empty() && checks.iter().all(|c| c.ok);
        if met {
            self.record(
                NewEvent::new(session::kind::STEP_COMPLETED)
                    .step(Some(step.id.clone()))
                    .decision(Some(Decision::Auto))
                    .trigger(Some("crash_recovery".into()))
                    .detail(json!({"recovered": true, "checks": checks})),
            )?;
        } else {
            let why = if checks.is_empty() {
                "the step has no postcondition to show its work was done"
            } else {
                "its postconditions are not met"
            };
            self.record(
                NewEvent::new(kind::RETRY)
                    .step(Some(step.id.clone()))
                    .decision(Some(Decision::Auto))
                    .trigger(Some("crash_recovery".into()))
                    .detail(json!({"reason": format!("an attempt was interrupted and {why}"), "checks": checks})),
            )?;
        }
        Ok(())
    }

    fn limits(&mut self, starting: usize) -> Result<Option<Outcome>> {
        let limits = self.playbook.limits.clone();
        if self.state.invocations as usize + starting > limits.max_invocations as usize {
            self.record(
                NewEvent::new(kind::LIMIT_INVOCATIONS)
                    .decision(Some(Decision::Auto))
                    .detail(json!({"limit": limits.max_invocations, "used": self.state.invocations, "wanted": starting})),
            )?;
            return Ok(Some(Outcome::InvocationLimit {
                limit: limits.max_invocations,
            }));
        }
        if let Some(budget) = self.config.orchestration.budget_usd {
            let limit_micro_usd = (budget * 1e6).round() as u64;
            let spent_micro_usd = self.state.cost_micro_usd;
            if spent_micro_usd >= limit_micro_usd {
                self.record(
                    NewEvent::new(kind::LIMIT_BUDGET)
                        .decision(Some(Decision::Auto))
                        .detail(json!({"budget_usd": budget, "spent_usd": spent_micro_usd as f64 / 1e6})),
                )?;
                return Ok(Some(Outcome::BudgetLimit {
                    limit_micro_usd,
                    spent_micro_usd,
                }));
            }
        }
        if self.state.run_time_ms >= limits.max_run_time.as_millis() as u64 {
            self.record(
                NewEvent::new(kind::LIMIT_RUN_TIME)
                    .decision(Some(Decision::Auto))
                    .detail(json!({"limit_secs": limits.max_run_time.as_secs(), "used_ms": self.state.run_time_ms})),
            )?;
            return Ok(Some(Outcome::RunTimeLimit {
                limit_secs: limits.max_run_time.as_secs(),
            }));
        }
        Ok(None)
    }

    fn complete(&mut self) -> Result<Outcome> {
        let done = self
            .playbook
            .steps()
            .filter(|s| self.state.step(&s.id).status == StepStatus::Done)
            .count();
        let skipped = self
            .playbook
            .steps()
            .filter(|s| self.state.step(&s.id).status == StepStatus::Skipped)
            .count();
        self.record(
            NewEvent::new(kind::RUN_COMPLETED)
                .decision(Some(Decision::Auto))
                .duration_ms(Some(self.state.run_time_ms))
                .detail(json!({"done": done, "skipped": skipped, "invocations": self.state.invocations})),
        )?;
        Ok(Outcome::Completed)
    }

    fn check_env<'e>(&'e self, step: &Step, changed: Option<&'e [String]>) -> CheckEnv<'e> {
        CheckEnv {
            root: &self.root,
            feature_env: self.feature_env.as_deref(),
            branch: Some(self.session.short_branch()),
            test_command: self.config.checks.test_command.as_deref(),
            timeout: step.timeout,
            changed,
            interrupt: self.interrupt,
        }
    }

    fn prompt(&self, step: &Step, kind: Kind) -> String {
        let args = self.args.join(" ");
        if step.command.contains("{args}") {
            step.command.replace("{args}", &args)
        } else if kind.is_agent() && !args.is_empty() {
            format!("{} {args}", step.command)
        } else {
            step.command.clone()
        }
    }

    /// Run steps at the same time (one, for a plain step), between two checkpoints.
    fn run_round<'s>(&mut self, phase: &str, steps: &[&'s Step]) -> Result<Vec<Attempt<'s>>> {
        let ids: Vec<&str> = steps.iter().map(|s| s.id.as_str()).collect();
        let tag = if steps.len() == 1 {
            steps[0].id.clone()
        } else {
            phase.to_owned()
        };
        let (before, ev) = session::checkpoint(
            self.repo,
            self.session,
            &format!("before {}", ids.join(", ")),
            Some(Status::Running),
            Some(tag.clone()),
        )?;
        self.seen(&ev)?;
        let mut invocations = Vec::new();
        for step in steps {
            let agent = runner::agent(self.config, step.runner.as_deref(), step.role.as_deref())?;
            let kind = agent.kind;
            let number = self.state.step(&step.id).attempts + 1;
            let prompt = self.prompt(step, kind);
            self.record(
                NewEvent::new(session::kind::STEP_STARTED)
                    .step(Some(step.id.clone()))
                    .decision(Some(Decision::Auto))
                    .detail(json!({
                        "attempt": number,
                        "runner": kind.as_str(),
                        "model": agent.model,
                        "command": redact(&prompt),
                        "autonomy": step.autonomy.as_str(),
                        "phase": (steps.len() > 1).then_some(phase),
                    })),
            )?;
            let program =
                self.programs
                    .get(&kind)
                    .cloned()
                    .ok_or_else(|| runner::Error::NotInstalled {
                        runner: kind.as_str().to_owned(),
                        program: kind.as_str().to_owned(),
                    })?;
            let mut env = vec![
                ("BMAD_SESSION".into(), self.session.id.to_string()),
                ("BMAD_STEP".into(), step.id.clone()),
                ("BMAD_ATTEMPT".into(), number.to_string()),
                ("BMAD_PLAYBOOK".into(), self.playbook.name.clone()),
                ("BMAD_ARGS".into(), self.args.join(" ")),
            ];
            // The role's key, under the name its CLI reads; only ever in the agent's
            // environment, never in an event.
            if let (Some(var), Some(target)) = (&agent.api_key_env, kind.adapter().key_variable()) {
                if let Ok(key) = std::env::var(var) {
                    env.push((target.to_owned(), key));
                }
            }
            invocations.push((
                *step,
                number,
                Invocation {
                    kind,
                    program,
                    prompt,
                    model: agent.model.clone(),
                    cwd: self.root.clone(),
                    env,
                    timeout: step.timeout,
                },
            ));
        }
        let runners = &self.config.runners;
        let interrupt = self.interrupt;
        // A phase runs at most `max_concurrent_agents` agents at once, in document order.
        let width = self.config.orchestration.max_concurrent_agents.max(1) as usize;
        let mut results: Vec<std::result::Result<AgentResult, runner::Error>> = Vec::new();
        for batch in invocations.chunks(width) {
            std::thread::scope(|scope| {
                let handles: Vec<_> = batch
                    .iter()
                    .map(|(_, _, inv)| scope.spawn(move || runner::invoke(runners, inv, interrupt)))
                    .collect();
                results.extend(handles.into_iter().map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(runner::Error::Wait {
                            program: "agent".into(),
                            source: std::io::Error::other("the thread running it panicked"),
                        })
                    })
                }));
            });
        }
        let (after, ev) = session::checkpoint(
            self.repo,
            self.session,
            &format!("after {}", ids.join(", ")),
            Some(Status::Running),
            Some(tag),
        )?;
        self.seen(&ev)?;
        let changes = before.work_changed_to(self.repo, &after)?;
        let changed_paths: Vec<String> = changes.iter().map(|(p, _)| p.clone()).collect();
        let mut attempts = Vec::new();
        for ((step, number, _), result) in invocations.into_iter().zip(results) {
            let checks = step
                .postconditions
                .iter()
                .map(|c| evaluate(c, &self.check_env(step, Some(&changed_paths))))
                .collect();
            let hash = stall_hash(result.as_ref().ok().map(|r| &r.stdout), &changes);
            attempts.push(Attempt {
                step,
                number,
                result,
                checks,
                hash,
                changed: changes.len(),
            });
        }
        Ok(attempts)
    }

    /// Journal what an attempt came to and what follows; `true` if it stops the run.
    fn judge(&mut self, attempt: &Attempt<'_>) -> Result<bool> {
        let step = attempt.step;
        let id = Some(step.id.clone());
        let mut detail = attempt_detail(attempt);
        let duration = attempt.result.as_ref().map(|r| r.duration_ms).unwrap_or(0);
        let mut reasons: Vec<(Trigger, String)> = Vec::new();
        let mut interrupted = false;
        match &attempt.result {
            Ok(r) => {
                interrupted = r.exit == Exit::Interrupted;
                if let Some(why) = r.failure() {
                    reasons.push((Trigger::SubagentError, why));
                }
                if r.verdict == Some(runner::Verdict::Fail) {
                    reasons.push((
                        Trigger::VerdictFailure,
                        "the agent's verdict is FAIL".into(),
                    ));
                }
            }
            Err(e) => reasons.push((Trigger::SubagentError, format!("could not run: {e}"))),
        }
        for check in attempt.checks.iter().filter(|c| !c.ok) {
            reasons.push((
                Trigger::PostconditionFailure,
                format!(
                    "postcondition {} failed: {}",
                    check.check,
                    first_line(&check.detail)
                ),
            ));
        }
        let breaking = attempt.result.as_ref().is_ok_and(|r| r.breaking_change);
        let evidence = self.evidence(attempt, &reasons);
        let base = |name: &str| {
            NewEvent::new(name.to_owned())
                .step(id.clone())
                .duration_ms(Some(duration))
        };
        if interrupted {
            detail["next"] = json!("retry");
            detail["reason"] = json!("interrupted");
            self.record(
                base(session::kind::STEP_FAILED)
                    .decision(Some(Decision::Human))
                    .trigger(Some("interrupted".into()))
                    .detail(detail),
            )?;
            return Ok(false);
        }
        if reasons.is_empty() {
            let gate_breaking = breaking
                && (step.autonomy == Autonomy::GateOnBreaking
                    || step.escalate_on.contains(&Trigger::AgreementBreakingChange));
            if !gate_breaking {
                self.record(
                    base(session::kind::STEP_COMPLETED)
                        .decision(Some(Decision::Auto))
                        .detail(detail),
                )?;
                return Ok(false);
            }
            detail["next"] = json!("gate");
            detail["reason"] = json!("reported a breaking change");
            detail["evidence"] = json!(evidence);
            self.record(
                base(kind::ESCALATED)
                    .decision(Some(Decision::Escalated))
                    .trigger(Some(Trigger::AgreementBreakingChange.as_str().into()))
                    .detail(detail),
            )?;
            return Ok(false);
        }
        let reason = reasons
            .iter()
            .map(|(_, r)| r.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        detail["reason"] = json!(format!("failed: {reason}"));
        detail["evidence"] = json!(evidence);
        if let Some((trigger, _)) = reasons.iter().find(|(t, _)| step.escalate_on.contains(t)) {
            detail["next"] = json!("gate");
            self.record(
                base(kind::ESCALATED)
                    .decision(Some(Decision::Escalated))
                    .trigger(Some(trigger.as_str().into()))
                    .detail(detail),
            )?;
            return Ok(false);
        }
        let record = self.state.step(&step.id);
        let first_trigger = reasons[0].0.as_str().to_owned();
        if record.last_hash.as_deref() == Some(attempt.hash.as_str()) {
            detail["next"] = json!("gate");
            detail["reason"] = json!(format!("failed twice in a row with the same output and the same changes (a stall): {reason}"));
            self.record(
                base(session::kind::STEP_FAILED)
                    .decision(Some(Decision::Escalated))
                    .trigger(Some("stall".into()))
                    .detail(detail),
            )?;
            self.record(
                NewEvent::new(kind::STALL_DETECTED)
                    .step(id)
                    .decision(Some(Decision::Escalated))
                    .detail(json!({"hash": attempt.hash, "attempt": attempt.number})),
            )?;
            return Ok(false);
        }
        let next = match step.on_error {
            ErrorPolicy::Stop => "stop",
            ErrorPolicy::RetryOnce if record.auto_retries == 0 => "retry",
            ErrorPolicy::RetryOnce => "stop",
            ErrorPolicy::Gate => "gate",
        };
        detail["next"] = json!(next);
        detail["policy"] = json!(step.on_error.as_str());
        let decision = if next == "gate" {
            Decision::Escalated
        } else {
            Decision::Auto
        };
        self.record(
            base(session::kind::STEP_FAILED)
                .decision(Some(decision))
                .trigger(Some(first_trigger))
                .detail(detail),
        )?;
        if next == "retry" {
            self.record(
                NewEvent::new(kind::RETRY)
                    .step(id)
                    .decision(Some(Decision::Auto))
                    .trigger(Some("retry_once".into())),
            )?;
        }
        Ok(next == "stop")
    }

    /// What a human needs to judge a failure: the reasons, then the end of the agent's answer.
    fn evidence(&self, attempt: &Attempt<'_>, reasons: &[(Trigger, String)]) -> String {
        let mut text = reasons
            .iter()
            .map(|(t, r)| format!("{}: {r}", t.as_str()))
            .collect::<Vec<_>>()
            .join("\n");
        for check in attempt
            .checks
            .iter()
            .filter(|c| !c.ok && c.detail.contains('\n'))
        {
            text.push_str(&format!("\n--- {} ---\n{}", check.check, check.detail));
        }
        if let Ok(r) = &attempt.result {
            let answer = r.final_text.trim();
            if !answer.is_empty() {
                text.push_str("\n--- the agent's last words ---\n");
                text.push_str(answer);
            }
        }
        redact(&last_chars(&text, EVIDENCE_LIMIT))
    }

    /// Done steps, one line each.
    fn summary(&self) -> String {
        self.playbook
            .steps()
            .map(|s| format!("{}: {}", s.id, status_word(&self.state.step(&s.id).status)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn failed(next: &str) -> StepStatus {
    StepStatus::Failed {
        next: next.to_owned(),
    }
}

fn status_word(status: &StepStatus) -> String {
    match status {
        StepStatus::Pending => "pending".into(),
        StepStatus::Running => "in progress".into(),
        StepStatus::Done => "done".into(),
        StepStatus::Skipped => "skipped".into(),
        StepStatus::Failed { next } => format!("failed ({next})"),
    }
}

/// What the journal keeps of an attempt: the result shape, redacted and capped.
fn attempt_detail(attempt: &Attempt<'_>) -> Value {
    let mut detail = json!({
        "attempt": attempt.number,
        "checks": attempt.checks,
        "changed_files": attempt.changed,
        "hash": attempt.hash,
    });
    match &attempt.result {
        Ok(r) => {
            detail["runner"] = json!(r.runner);
            detail["exit"] = json!(r.exit);
            detail["final_text"] = json!(redact(&last_chars(&r.final_text, FINAL_TEXT_LIMIT)));
            detail["verdict"] = json!(r.verdict);
            detail["breaking_change"] = json!(r.breaking_change);
            detail["agent_session_id"] = json!(r.agent_session_id);
            detail["tokens_in"] = json!(r.tokens_in);
            detail["tokens_out"] = json!(r.tokens_out);
            detail["cost_usd"] = json!(r.cost_usd);
            detail["permission_denials"] = json!(r
                .permission_denials
                .iter()
                .map(|d| redact(d))
                .collect::<Vec<_>>());
            detail["reported_error"] = json!(r.reported_error.as_deref().map(redact));
            detail["stdout"] = json!(journal_text(&r.stdout, "stdout", STDOUT_LIMIT));
            detail["stderr"] = json!(journal_text(&r.stderr, "stderr", STDERR_LIMIT));
            detail["stdout_bytes"] = json!(r.stdout.total());
            // An agent that stopped at a menu did not finish: say so, with the choice the
            // decision engine would make.
            let menu = crate::bmad::analysis::menu::analyze(&r.final_text, "continue");
            if menu.detected {
                detail["menu"] = json!(menu);
            }
            detail["stderr_bytes"] = json!(r.stderr.total());
        }
        Err(e) => detail["error"] = json!(redact(&e.to_string())),
    }
    detail
}

/// A stream as the journal keeps it: redacted, then capped at `limit` bytes. The excerpt
/// taken for redaction is wider than the cap, so a secret cut by the cap's edge is still seen
/// whole and redacted before any of it is kept.
fn journal_text(captured: &Captured, name: &str, limit: usize) -> String {
    if captured.complete() && captured.total() as usize <= limit {
        return redact(&captured.excerpt(name, limit));
    }
    let wide = redact(&captured.excerpt(name, limit + 1024));
    // Drop the excerpt's own marker line; the kept size changes below.
    let body = match wide.split_once('\n') {
        Some((marker, body)) if marker.starts_with("[git-bmad:") => body,
        _ => wide.as_str(),
    };
    let mut start = body.len().saturating_sub(limit);
    while !body.is_char_boundary(start) {
        start += 1;
    }
    let kept = &body[start..];
    format!(
        "[git-bmad: {name} truncated: {} bytes in all, the last {} kept]\n{kept}",
        captured.total(),
        kept.len()
    )
}

/// SHA-256 over an attempt's output and its changes: the same hash twice in a row is a stall.
fn stall_hash(stdout: Option<&Captured>, changes: &[(String, String)]) -> String {
    let mut hasher = Sha256::new();
    if let Some(out) = stdout {
        hasher.update(out.head());
        hasher.update(out.total().to_le_bytes());
        if !out.complete() {
            hasher.update(out.tail());
        }
    }
    hasher.update(b"\0diff\0");
    for (path, id) in changes {
        hasher.update(path.as_bytes());
        hasher.update(b"\0");
        hasher.update(id.as_bytes());
        hasher.update(b"\0");
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_text_is_capped_and_redacted() {
        let key = format!("AKIA{}", "Q7ZK2M4XW6RT5PLN");
        let mut big = vec![b'x'; 200_000];
        big.extend_from_slice(format!("\nkey={key}\nend\n").as_bytes());
        let text = journal_text(&Captured::from_bytes(&big), "stdout", STDOUT_LIMIT);
        assert!(
            text.starts_with(
                "[git-bmad: stdout truncated: 200030 bytes in all, the last 65536 kept]"
            ),
            "{}",
            &text[..80]
        );
        assert!(text.len() <= STDOUT_LIMIT + 120, "{}", text.len());
        assert!(!text.contains(&key), "the key leaked");
        assert!(text.ends_with("end\n"));
        let small = journal_text(
            &Captured::from_bytes(format!("token {key}").as_bytes()),
            "stdout",
            STDOUT_LIMIT,
        );
        assert!(
            !small.contains(&key) && small.starts_with("token "),
            "{small}"
        );
    }

    #[test]
    fn stall_hash_sees_output_and_changes() {
        let out = Captured::from_bytes(b"same");
        let a = stall_hash(Some(&out), &[("a.rs".into(), "1".into())]);
        assert_eq!(a, stall_hash(Some(&out), &[("a.rs".into(), "1".into())]));
        assert_ne!(a, stall_hash(Some(&out), &[("a.rs".into(), "2".into())]));
        assert_ne!(
            a,
            stall_hash(
                Some(&Captured::from_bytes(b"other")),
                &[("a.rs".into(), "1".into())]
            )
        );
        assert_eq!(a.len(), 64);
    }
}

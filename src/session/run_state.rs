//! Where a playbook run stands, replayed from the session's journal.
//!
//! Like [`crate::session::SessionState`], a pure fold over events: the run keeps no state of
//! its own, so a crash at any instant leaves exactly what the journal says, and `resume`
//! continues from there.

use std::collections::BTreeMap;

use serde::Serialize;

pub use super::schema::{Answer, GateKind, Next};
use super::schema::{Body, ModelSpent, StepOutcome};
use super::{Decision, Event};
use crate::text::dollars;

/// What a step has come to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum StepStatus {
    /// Not run yet (or due to run again after a retry).
    Pending,
    /// Started and not finished: a crash, if no run is going on.
    Running,
    /// Finished well (or a human said so).
    Done,
    /// Skipped by its autonomy level or a human.
    Skipped,
    /// Failed; `next` is what the failure leads to.
    Failed {
        /// Run again, ask a human, or stop.
        next: Next,
    },
}

impl Answer {
    /// Read a human's reply: the answer words, their first letters, and a few synonyms.
    pub fn parse(text: &str) -> Option<Answer> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "continue" | "c" | "yes" | "y" | "approve" | "ok" | "proceed" => Answer::Continue,
            "retry" | "r" | "rerun" | "again" => Answer::Retry,
            "skip" | "s" => Answer::Skip,
            "abort" | "a" | "no" | "n" | "stop" | "quit" => Answer::Abort,
            _ => return None,
        })
    }
}

impl GateKind {
    /// The answers a gate of this kind takes.
    pub fn options(&self) -> &'static [Answer] {
        match self {
            GateKind::Before => &[Answer::Continue, Answer::Skip, Answer::Abort],
            GateKind::Precondition => {
                &[Answer::Retry, Answer::Continue, Answer::Skip, Answer::Abort]
            }
            GateKind::After => &[Answer::Continue, Answer::Retry, Answer::Skip, Answer::Abort],
        }
    }
}

/// An open gate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Gate {
    /// The step.
    pub step: String,
    /// Why it is open.
    pub kind: GateKind,
    /// What caused it.
    pub trigger: String,
    /// The question for the human.
    pub question: String,
    /// What happened, for the human.
    pub evidence: String,
    /// The `seq` of the `gate_opened` event.
    pub seq: u64,
    /// How sure the run is that going on is right, 0–100, when recorded.
    pub confidence: Option<u32>,
    /// How to show it (`minimal`, `summary`, `full`); `None` for gates journaled before
    /// formats existed, which are shown in full.
    pub format: Option<String>,
    /// When it opened.
    pub opened: String,
    /// The answers it takes, as recorded.
    pub options: Vec<Answer>,
}

/// One step's record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepState {
    /// Where it stands.
    #[serde(flatten)]
    pub status: StepStatus,
    /// Attempts started.
    pub attempts: u32,
    /// The stall hash of its last failed attempt.
    pub last_hash: Option<String>,
    /// A human approved running it (an `always_gate` step).
    pub approved: bool,
    /// A human said to run it despite unmet preconditions.
    pub preconditions_waived: bool,
    /// An answer not yet acted on, with the kind of gate it answered.
    pub pending_answer: Option<(GateKind, Answer)>,
    /// Automatic retries (`retry_once`) since a human last answered for it.
    pub auto_retries: u32,
    /// Its last failure or escalation: (trigger, reason, evidence).
    pub last_failure: Option<(String, String, String)>,
    /// Open MUST-FIX findings its last completed attempt reported (a review).
    pub must_fix: Option<u32>,
    /// Those findings.
    pub findings: Vec<String>,
}

impl Default for StepState {
    fn default() -> Self {
        StepState {
            status: StepStatus::Pending,
            attempts: 0,
            last_hash: None,
            approved: false,
            preconditions_waived: false,
            pending_answer: None,
            auto_retries: 0,
            last_failure: None,
            must_fix: None,
            findings: Vec::new(),
        }
    }
}

/// How a run ended (for now: a stopped run can be resumed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// Every step is done or skipped.
    Completed,
    /// A human aborted it.
    Aborted,
    /// It stopped; the event name says why (`run_failed`, `limit_invocations_reached`, …).
    Stopped(String),
}

/// The playbook a run executes, as `run_started` recorded it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Manifest {
    /// Its name.
    pub playbook: String,
    /// Where it was read from.
    pub origin: String,
    /// The blob holding the exact text the run started with.
    pub blob: String,
    /// The run's arguments.
    pub args: Vec<String>,
    /// Its step ids, in order.
    pub steps: Vec<String>,
}

/// GitHub's premium requests in thousandths, as the run counts them; an amount that is not
/// a positive number counts as nothing.
pub fn milli_requests(requests: f64) -> u64 {
    if requests.is_finite() && requests > 0.0 {
        (requests * 1e3).round() as u64
    } else {
        0
    }
}

/// US dollars in millionths, as the run counts money; an amount that is not a positive
/// number counts as nothing.
pub fn micro_usd(usd: f64) -> u64 {
    if usd.is_finite() && usd > 0.0 {
        (usd * 1e6).round() as u64
    } else {
        0
    }
}

/// A run, replayed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunState {
    /// The playbook; `None` when no run was started in this session.
    pub manifest: Option<Manifest>,
    /// Steps by id (those never mentioned are pending).
    pub steps: BTreeMap<String, StepState>,
    /// The open gate.
    pub gate: Option<Gate>,
    /// How it ended, if it did.
    pub ended: Option<Ended>,
    /// Steps started, retries included.
    pub invocations: u32,
    /// Time spent in steps.
    pub run_time_ms: u64,
    /// The newest event that recorded a decision on a step: (step, decision, event).
    pub last_decision: Option<(String, Decision, String)>,
    /// Every answer a human gave at a gate, oldest first.
    pub answers: Vec<Answer>,
    /// What the agents spent, as reported or priced, in millionths of a US dollar.
    pub cost_micro_usd: u64,
    /// The dollar budget a resume set (`resume --budget-usd`), newest; over the
    /// configuration's, in millionths of a US dollar.
    pub budget_micro_usd: Option<u64>,
    /// The tokens of models that had no price when they ran, by the model's name (which a
    /// price given since can count).
    pub unpriced: Vec<ModelSpent>,
    /// The tokens the agents reported using.
    pub tokens: u64,
    /// GitHub's premium requests the agents reported spending, in thousandths (a model's
    /// multiplier makes a request cost a part of one).
    pub premium_milli: u64,
    /// Why the run stopped, when it did and has not been resumed.
    pub stop: Option<Stop>,
}

/// What stopped a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    /// A step failed under its `stop` policy.
    Failed,
    /// A human aborted it at a gate.
    Aborted,
    /// A limit (budget, tokens, invocations, run time) was reached.
    Limit,
    /// The supervisor was interrupted; `resume` continues it.
    Interrupted,
}

/// Why a run stopped, in words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stop {
    /// What kind of stop.
    pub kind: StopKind,
    /// Why, for a human.
    pub why: String,
}

impl Stop {
    fn new(kind: StopKind, why: impl Into<String>) -> Option<Stop> {
        Some(Stop {
            kind,
            why: why.into(),
        })
    }
}

/// A limit event in words.
pub fn limit_text(body: &Body) -> String {
    match body {
        Body::LimitBudget(l) if !l.unpriced.is_empty() => {
            format!("budget cannot count {}: no price", l.unpriced.join(", "))
        }
        Body::LimitBudget(l) => {
            format!(
                "budget spent: {} of {}",
                dollars(l.spent_usd),
                dollars(l.budget_usd)
            )
        }
        Body::LimitTokens(l) => format!(
            "token budget spent: {} of {}",
            l.spent_tokens, l.budget_tokens
        ),
        Body::LimitPremiumRequests(l) => format!(
            "premium request budget spent: {} of {}",
            l.spent_premium_requests, l.budget_premium_requests
        ),
        Body::LimitInvocations(l) => format!("invocation cap reached: {} of {}", l.used, l.limit),
        Body::LimitRunTime(l) => format!(
            "run time limit reached: {} of {}",
            crate::text::duration(l.used_ms),
            crate::text::duration(l.limit_secs * 1000)
        ),
        _ => String::new(),
    }
}

impl RunState {
    /// Replay a session's events.
    pub fn replay<'a>(events: impl IntoIterator<Item = &'a Event>) -> RunState {
        let mut state = RunState::default();
        for event in events {
            state.apply(event);
        }
        state
    }

    /// An attempt's reported cost and tokens, added up.
    fn add_cost(&mut self, outcome: &StepOutcome) {
        match outcome.cost_usd {
            Some(usd) => self.cost_micro_usd += micro_usd(usd),
            // Not counted as a whole: a priced model's part is counted now, an unpriced one's
            // tokens are kept for a price given later.
            None => {
                for model in &outcome.usage {
                    match model.cost_usd {
                        Some(usd) => self.cost_micro_usd += micro_usd(usd),
                        None => self.unpriced.push(model.clone()),
                    }
                }
            }
        }
        let tokens = outcome.tokens_in.unwrap_or(0) + outcome.tokens_out.unwrap_or(0);
        self.tokens = self.tokens.saturating_add(tokens);
        let premium = outcome.premium_requests.map(milli_requests).unwrap_or(0);
        self.premium_milli = self.premium_milli.saturating_add(premium);
    }

    /// The record of a step.
    pub fn step(&self, id: &str) -> StepState {
        self.steps.get(id).cloned().unwrap_or_default()
    }

    /// How many of the run's steps are finished, and how many it has.
    pub fn progress(&self) -> (usize, usize) {
        let steps = self
            .manifest
            .as_ref()
            .map(|m| m.steps.as_slice())
            .unwrap_or_default();
        (
            steps.iter().filter(|s| self.finished(s)).count(),
            steps.len(),
        )
    }

    /// Whether a step is finished (done or skipped).
    pub fn finished(&self, id: &str) -> bool {
        matches!(
            self.steps.get(id).map(|s| &s.status),
            Some(StepStatus::Done | StepStatus::Skipped)
        )
    }

    /// Fold one event in.
    pub fn apply(&mut self, event: &Event) {
        if let (Some(step), Some(decision)) = (&event.step, event.decision) {
            if !matches!(event.body, Body::Checkpoint(_)) {
                self.last_decision = Some((step.clone(), decision, event.kind().to_owned()));
            }
        }
        let step_id = event.step.clone().unwrap_or_default();
        match &event.body {
            Body::RunStarted(run) => {
                self.manifest = Some(Manifest {
                    playbook: run.playbook.clone(),
                    origin: run.origin.clone(),
                    blob: run.blob.clone(),
                    args: run.args.clone(),
                    steps: run.steps.clone(),
                });
                // A new run (after one that ended) starts its steps afresh; counters of
                // invocations, time and cost go on adding up over the session.
                self.steps.clear();
                self.gate = None;
                self.ended = None;
                self.stop = None;
            }
            Body::RunResumed(resumed) => {
                self.ended = None;
                self.stop = None;
                if let Some(usd) = resumed.budget_usd.map(micro_usd).filter(|m| *m > 0) {
                    self.budget_micro_usd = Some(usd);
                }
            }
            Body::StepStarted(started) => {
                self.invocations += 1;
                let s = self.steps.entry(step_id).or_default();
                s.status = StepStatus::Running;
                s.attempts = match started.attempt {
                    0 => s.attempts + 1,
                    n => n,
                };
                s.pending_answer = None;
            }
            Body::StepCompleted(outcome) => {
                self.run_time_ms += event.duration_ms.unwrap_or(0);
                self.add_cost(outcome);
                let s = self.steps.entry(step_id).or_default();
                s.status = StepStatus::Done;
                s.pending_answer = None;
                s.must_fix = outcome.must_fix;
                s.findings = outcome.findings.clone();
            }
            Body::StepFailed(outcome) | Body::Escalated(outcome) => {
                self.run_time_ms += event.duration_ms.unwrap_or(0);
                self.add_cost(outcome);
                let s = self.steps.entry(step_id).or_default();
                s.status = StepStatus::Failed {
                    next: outcome.next.unwrap_or(Next::Stop),
                };
                s.last_hash = outcome.hash.clone();
                s.last_failure = Some((
                    event.trigger.clone().unwrap_or_default(),
                    outcome.reason.clone().unwrap_or_default(),
                    outcome.evidence.clone().unwrap_or_default(),
                ));
            }
            Body::StepSkipped(_) => {
                let s = self.steps.entry(step_id).or_default();
                s.status = StepStatus::Skipped;
                s.pending_answer = None;
            }
            Body::Retry(_) => {
                let s = self.steps.entry(step_id).or_default();
                s.status = StepStatus::Pending;
                s.pending_answer = None;
                if event.trigger.as_deref() == Some("retry_once") {
                    s.auto_retries += 1;
                }
            }
            Body::GateOpened(gate) => {
                self.gate = Some(Gate {
                    step: step_id,
                    kind: gate.kind,
                    trigger: event.trigger.clone().unwrap_or_default(),
                    question: gate.question.clone(),
                    evidence: gate.evidence.clone(),
                    seq: event.seq,
                    confidence: gate.confidence_score().map(|s| s.round() as u32),
                    format: gate.checkpoint_format().map(str::to_owned),
                    opened: event.ts.clone(),
                    options: gate.options.clone(),
                });
            }
            Body::GateAnswered(answered) => {
                let Some(gate) = self.gate.take() else {
                    return;
                };
                let Some(answer) = answered.answer else {
                    return;
                };
                self.answers.push(answer);
                let s = self.steps.entry(gate.step).or_default();
                s.pending_answer = Some((gate.kind, answer));
                s.auto_retries = 0;
                match (gate.kind, answer) {
                    (GateKind::Before, Answer::Continue | Answer::Retry) => s.approved = true,
                    (GateKind::Precondition, Answer::Continue) => s.preconditions_waived = true,
                    _ => {}
                }
            }
            Body::RunCompleted(_) => self.ended = Some(Ended::Completed),
            Body::RunAborted(_) => {
                self.ended = Some(Ended::Aborted);
                self.stop = Stop::new(StopKind::Aborted, "aborted by a human");
            }
            Body::RunFailed(_)
            | Body::LimitInvocations(_)
            | Body::LimitBudget(_)
            | Body::LimitTokens(_)
            | Body::LimitPremiumRequests(_)
            | Body::LimitRunTime(_)
            | Body::RunInterrupted(_) => self.ended = Some(Ended::Stopped(event.kind().to_owned())),
            _ => {}
        }
        self.note_stop(event);
    }

    /// Why the run stopped: the failed step says it first; the run's own end says it when
    /// no step did.
    fn note_stop(&mut self, event: &Event) {
        match &event.body {
            Body::StepFailed(outcome) if outcome.next == Some(Next::Stop) => {
                let why = outcome
                    .error
                    .clone()
                    .or_else(|| outcome.reason.clone())
                    .unwrap_or_else(|| "failed".into());
                let step = event.step.as_deref().unwrap_or_default();
                self.stop = Stop::new(StopKind::Failed, format!("step {step} failed: {why}"));
            }
            Body::RunFailed(failed) if self.stop.is_none() => {
                let steps = failed.steps.join(", ");
                self.stop = Stop::new(StopKind::Failed, format!("failed steps: {steps}"));
            }
            Body::RunInterrupted(_) => {
                self.stop = Stop::new(
                    StopKind::Interrupted,
                    "interrupted (`git bmad resume` continues it)",
                );
            }
            Body::LimitBudget(_)
            | Body::LimitTokens(_)
            | Body::LimitPremiumRequests(_)
            | Body::LimitInvocations(_)
            | Body::LimitRunTime(_) => {
                self.stop = Stop::new(StopKind::Limit, limit_text(&event.body));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(seq: u64, event: &str, step: &str, detail: serde_json::Value) -> Event {
        Event {
            step: (!step.is_empty()).then(|| step.to_owned()),
            decision: Some(Decision::Auto),
            duration_ms: Some(10),
            ..Event::for_test(seq, event, detail)
        }
    }

    #[test]
    fn a_run_replayed() {
        let events = vec![
            ev(
                1,
                "run_started",
                "",
                json!({"playbook": "p", "blob": "b", "args": ["x"]}),
            ),
            ev(2, "step_started", "plan", json!({"attempt": 1})),
            ev(3, "step_completed", "plan", json!({})),
            ev(4, "step_started", "impl", json!({"attempt": 1})),
            ev(
                5,
                "step_failed",
                "impl",
                json!({"next": "gate", "hash": "h1"}),
            ),
            ev(
                6,
                "gate_opened",
                "impl",
                json!({"kind": "after", "question": "q?"}),
            ),
        ];
        let state = RunState::replay(&events);
        assert_eq!(state.manifest.as_ref().unwrap().args, ["x"]);
        assert!(state.finished("plan"));
        assert_eq!(state.gate.as_ref().unwrap().step, "impl");
        assert_eq!(state.invocations, 2);
        assert_eq!(state.run_time_ms, 20);
        assert_eq!(state.step("impl").last_hash.as_deref(), Some("h1"));

        let mut more = events.clone();
        more.push(ev(
            7,
            "gate_answered",
            "impl",
            json!({"answer": "continue"}),
        ));
        let state = RunState::replay(&more);
        assert_eq!(state.gate, None);
        assert_eq!(
            state.step("impl").pending_answer,
            Some((GateKind::After, Answer::Continue))
        );
        more.push(ev(8, "step_completed", "impl", json!({})));
        let state = RunState::replay(&more);
        assert!(state.finished("impl"));
        assert_eq!(state.step("impl").pending_answer, None);
        assert_eq!(state, RunState::replay(&more));
    }

    #[test]
    fn premium_requests_are_added_up_from_every_attempt() {
        let events = vec![
            ev(1, "step_started", "a", json!({"attempt": 1})),
            ev(
                2,
                "step_failed",
                "a",
                json!({"next": "retry", "premium_requests": 0.33}),
            ),
            ev(3, "step_started", "a", json!({"attempt": 2})),
            ev(4, "step_completed", "a", json!({"premium_requests": 1.0})),
            ev(5, "step_completed", "b", json!({"tokens_in": 10})),
        ];
        let state = RunState::replay(&events);
        assert_eq!(state.premium_milli, 1_330);
        let limit = ev(
            6,
            "limit_premium_requests_reached",
            "",
            json!({"budget_premium_requests": 1.0, "spent_premium_requests": 1.33}),
        );
        let stopped = RunState::replay(events.iter().chain([&limit]));
        assert_eq!(
            stopped.stop.map(|s| s.why).as_deref(),
            Some("premium request budget spent: 1.33 of 1")
        );
    }

    #[test]
    fn answers() {
        assert_eq!(Answer::parse(" Continue "), Some(Answer::Continue));
        assert_eq!(Answer::parse("y"), Some(Answer::Continue));
        assert_eq!(Answer::parse("s"), Some(Answer::Skip));
        assert_eq!(Answer::parse("maybe"), None);
    }
}

//! An epic run's state, replayed from the epic session's journal: the options it runs with,
//! where each story stands, the gate that waits. Nothing else is kept anywhere; the epic
//! runner, `epic status` and the morning report all read it from here.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::schema::{
    Answer, Body, EpicBudget, EpicClosed, EpicStarted, IntegrationChecked, Stage, StoryStage,
};
use super::Event;
use crate::text::dollars;

/// The scope confirmation's gate id.
pub const SCOPE_GATE: &str = "scope";

/// The completion gate's id.
pub const COMPLETION_GATE: &str = "completion";

const INTEGRATION_GATE_PREFIX: &str = "integration:";

/// The id of the integration checkpoint's gate after story `key`.
pub fn integration_gate(key: &str) -> String {
    format!("{INTEGRATION_GATE_PREFIX}{key}")
}

/// Where one story stands.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StoryState {
    /// The last stage it reached.
    pub stage: Stage,
    /// Everything its stages recorded, newest value of each field.
    #[serde(flatten)]
    pub detail: StoryStage,
    /// When it started and when it last moved (RFC 3339).
    pub started_at: Option<String>,
    /// When it reached its last stage.
    pub updated_at: Option<String>,
    /// How many times it was started (1 plus resumes after a failure or gate).
    pub attempts: u32,
    /// The newest integration checkpoint after it (stories with dependents).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integration: Option<IntegrationChecked>,
}

impl StoryState {
    /// A story that needs nothing more from this run: done, or blocked for a human.
    pub fn is_terminal(&self) -> bool {
        matches!(self.stage, Stage::Done | Stage::Blocked)
    }
}

/// A human's answer to an epic gate.
#[derive(Clone, Debug, Serialize)]
pub struct GateDecision {
    /// The gate (`scope`, `integration:<key>`, `completion`).
    pub gate: String,
    /// The answer.
    pub answer: Answer,
    /// What the human wrote with it.
    pub message: Option<String>,
    /// When (RFC 3339).
    pub at: String,
}

/// The epic run, replayed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EpicState {
    /// The newest `epic_started`.
    pub started: Option<EpicStarted>,
    /// Stories by key.
    pub stories: BTreeMap<String, StoryState>,
    /// The newest `epic_finished` came after the newest stage: nothing moved since.
    pub finished: bool,
    /// Why the newest `epic_finished` says the run stopped early (a breaker, a budget, a
    /// human), if it does.
    pub stopped: Option<String>,
    /// The epic gate waiting for a human.
    pub gate: Option<OpenGate>,
    /// Epic gates answered since they were last opened, by id.
    pub answers: BTreeMap<String, Answer>,
    /// Every answer to an epic gate, oldest first, for the report.
    pub decisions: Vec<GateDecision>,
    /// The close-out, once it ran (the SM's completion signal, the retrospective).
    pub closed: Option<EpicClosed>,
    /// Events replayed.
    pub events: usize,
}

impl EpicState {
    /// Replay an epic session's journal.
    pub fn replay<'a>(events: impl IntoIterator<Item = &'a Event>) -> EpicState {
        let mut state = EpicState::default();
        for event in events {
            state.apply(event);
        }
        state
    }

    /// Fold one more event in.
    pub fn apply(&mut self, event: &Event) {
        self.events += 1;
        match &event.body {
            Body::EpicStarted(started) => {
                // Other options are another run: its scope and completion are asked anew.
                self.started = Some(started.clone());
                self.finished = false;
                self.gate = None;
                self.answers.remove(SCOPE_GATE);
                self.answers.remove(COMPLETION_GATE);
            }
            Body::GateOpened(opened) => {
                let Some(id) = &event.step else { return };
                self.answers.remove(id);
                self.gate = Some(OpenGate {
                    id: id.clone(),
                    question: opened.question.clone(),
                    evidence: opened.evidence.clone(),
                    options: opened.options.clone(),
                    seq: event.seq,
                });
            }
            Body::GateAnswered(answered) => {
                let Some(gate) = self.gate.take() else { return };
                let Some(answer) = answered.answer else {
                    return;
                };
                self.decisions.push(GateDecision {
                    gate: gate.id.clone(),
                    answer,
                    message: event.response.clone(),
                    at: event.ts.clone(),
                });
                if answer == Answer::Retry {
                    // Check again: the checkpoint runs anew, and gates anew if it must.
                    if let Some(key) = gate.id.strip_prefix(INTEGRATION_GATE_PREFIX) {
                        if let Some(story) = self.stories.get_mut(key) {
                            story.integration = None;
                        }
                    }
                } else {
                    self.answers.insert(gate.id, answer);
                }
            }
            Body::IntegrationChecked(checked) => {
                let Some(key) = &event.step else { return };
                self.answers.remove(&integration_gate(key));
                self.stories.entry(key.clone()).or_default().integration = Some(checked.clone());
            }
            Body::EpicFinished(finished) => {
                self.finished = true;
                self.stopped = finished.stopped.clone();
            }
            Body::EpicClosed(closed) => self.closed = Some(closed.clone()),
            Body::StoryStage(stage) => {
                let Some(key) = &event.step else { return };
                let story = self.stories.entry(key.clone()).or_default();
                if stage.stage == Stage::Started {
                    story.attempts += 1;
                    story.started_at.get_or_insert_with(|| event.ts.clone());
                }
                story.stage = stage.stage;
                story.updated_at = Some(event.ts.clone());
                merge(&mut story.detail, stage);
                self.finished = false;
            }
            _ => {}
        }
    }

    /// Past a budget: why, for the run's `stopped`. What stories spent is what their
    /// stages recorded (the newest value of each, so a story's resumed run counts once).
    pub fn over_budget(&self, budget: &EpicBudget) -> Option<String> {
        let spent = self.spent();
        let why = match self.spent_cap(budget)? {
            Cap::Usd => format!(
                "budget: {} spent of {}",
                dollars(spent.usd),
                dollars(budget.usd?)
            ),
            Cap::Tokens => format!(
                "budget: {} tokens spent of {}",
                spent.tokens, budget.tokens?
            ),
            Cap::PremiumRequests => format!(
                "budget: {} premium requests spent of {}",
                spent.premium_requests, budget.premium_requests?
            ),
            Cap::Invocations => format!(
                "budget: {} invocations of {}",
                spent.invocations, budget.invocations?
            ),
            Cap::Time => format!(
                "budget: {}s in steps of {}s",
                spent.ms / 1000,
                budget.time_secs?
            ),
        };
        Some(format!(
            "{why}; nothing new is started (give it more with git bmad epic resume's budget options to go on)"
        ))
    }

    /// Which of `budget`'s limits the stories have reached, dollars first.
    pub fn spent_cap(&self, budget: &EpicBudget) -> Option<Cap> {
        let spent = self.spent();
        if budget.usd.is_some_and(|b| spent.usd >= b) {
            Some(Cap::Usd)
        } else if budget.tokens.is_some_and(|b| spent.tokens >= b) {
            Some(Cap::Tokens)
        } else if budget
            .premium_requests
            .is_some_and(|b| spent.premium_requests >= b)
        {
            Some(Cap::PremiumRequests)
        } else if budget.invocations.is_some_and(|b| spent.invocations >= b) {
            Some(Cap::Invocations)
        } else if budget.time_secs.is_some_and(|b| spent.ms / 1000 >= b) {
            Some(Cap::Time)
        } else {
            None
        }
    }

    /// What the stories spent.
    pub fn spent(&self) -> Spent {
        let mut spent = Spent::default();
        for s in self.stories.values() {
            spent.usd += s.detail.cost_usd.unwrap_or(0.0);
            spent.invocations += s.detail.invocations.unwrap_or(0);
            spent.ms += s.detail.run_time_ms.unwrap_or(0);
            spent.tokens += s.detail.tokens.unwrap_or(0);
            spent.premium_requests += s.detail.premium_requests.unwrap_or(0.0);
        }
        spent
    }

    /// What story `key`'s session may spend in all, as far as the epic's budget goes: what
    /// it spent already plus what is left of the epic's; `None` where the epic sets no
    /// budget.
    pub fn story_limits(&self, key: &str, budget: &EpicBudget) -> StoryLimits {
        let spent = self.spent();
        let own = self.story(key).detail;
        StoryLimits {
            usd: budget
                .usd
                .map(|b| own.cost_usd.unwrap_or(0.0) + (b - spent.usd).max(0.0)),
            time: budget.time_secs.map(|b| {
                let left = (b * 1000).saturating_sub(spent.ms);
                Duration::from_millis(own.run_time_ms.unwrap_or(0) + left)
            }),
            tokens: budget
                .tokens
                .map(|b| own.tokens.unwrap_or(0) + b.saturating_sub(spent.tokens)),
            premium_requests: budget.premium_requests.map(|b| {
                own.premium_requests.unwrap_or(0.0) + (b - spent.premium_requests).max(0.0)
            }),
        }
    }

    /// A story's state (a default, not started, for one never started).
    pub fn story(&self, key: &str) -> StoryState {
        self.stories.get(key).cloned().unwrap_or_default()
    }
}

/// Keep the newest value of every field a stage sets.
fn merge(into: &mut StoryStage, from: &StoryStage) {
    into.stage = from.stage;
    macro_rules! newest {
        ($($field:ident),*) => { $( if from.$field.is_some() { into.$field = from.$field.clone(); } )* };
    }
    newest!(
        session,
        branch,
        base,
        baseline,
        pr,
        tests,
        acceptance,
        rounds,
        findings_fixed,
        invocations,
        cost_usd,
        tokens,
        premium_requests,
        run_time_ms,
        runner
    );
    // A reason belongs to the stage that gave it.
    into.reason = from.reason.clone();
}

/// One of an epic's budgets ([`EpicBudget`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cap {
    /// US dollars.
    Usd,
    /// Tokens, in and out.
    Tokens,
    /// GitHub's premium requests.
    PremiumRequests,
    /// Agent invocations.
    Invocations,
    /// Time in steps.
    Time,
}

/// What an epic's stories spent, together.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spent {
    /// US dollars, as the runners report them or their tokens are priced.
    pub usd: f64,
    /// Agent invocations.
    pub invocations: u32,
    /// Milliseconds in steps.
    pub ms: u64,
    /// Tokens, in and out.
    pub tokens: u64,
    /// GitHub's premium requests.
    pub premium_requests: f64,
}

/// What one story's session may spend in all ([`EpicState::story_limits`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StoryLimits {
    /// US dollars.
    pub usd: Option<f64>,
    /// Time in steps.
    pub time: Option<Duration>,
    /// Tokens.
    pub tokens: Option<u64>,
    /// GitHub's premium requests.
    pub premium_requests: Option<f64>,
}

/// An epic gate that is open.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OpenGate {
    /// `scope`, `integration:<key>`, `completion`.
    pub id: String,
    /// The question.
    pub question: String,
    /// What the human needs to judge it.
    pub evidence: String,
    /// The answers it takes.
    pub options: Vec<Answer>,
    /// The `seq` of its `gate_opened`.
    pub seq: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_story_may_spend_what_it_spent_and_what_is_left_of_the_epic() {
        let mut state = EpicState::default();
        let spend = |state: &mut EpicState, key: &str, usd: f64, ms: u64| {
            let s = state.stories.entry(key.into()).or_default();
            s.detail.cost_usd = Some(usd);
            s.detail.run_time_ms = Some(ms);
            s.detail.tokens = Some(ms * 10);
        };
        spend(&mut state, "a", 2.0, 4_000);
        spend(&mut state, "b", 0.5, 1_000);
        let budget = EpicBudget {
            usd: Some(3.0),
            time_secs: Some(10),
            tokens: Some(100_000),
            ..EpicBudget::default()
        };
        let limits = state.story_limits("b", &budget);
        assert_eq!(limits.usd, Some(0.5 + 0.5));
        assert_eq!(limits.time, Some(Duration::from_millis(1_000 + 5_000)));
        assert_eq!(limits.tokens, Some(10_000 + 50_000));
        // Spent already: nothing more, never a negative budget.
        spend(&mut state, "a", 9.0, 20_000);
        assert_eq!(
            state.story_limits("b", &budget),
            StoryLimits {
                usd: Some(0.5),
                time: Some(Duration::from_millis(1_000)),
                tokens: Some(10_000),
                premium_requests: None,
            }
        );
        assert_eq!(
            state.story_limits("b", &EpicBudget::default()),
            StoryLimits::default()
        );
    }

    #[test]
    fn the_budget_reached_is_named_with_what_was_spent_of_it() {
        let mut state = EpicState::default();
        let s = state.stories.entry("a".into()).or_default();
        s.detail.cost_usd = Some(1.0);
        s.detail.tokens = Some(5_000);
        s.detail.invocations = Some(3);
        s.detail.run_time_ms = Some(60_000);
        let budget = |usd, tokens, invocations, time_secs| EpicBudget {
            usd: Some(usd),
            tokens: Some(tokens),
            invocations: Some(invocations),
            time_secs: Some(time_secs),
            ..EpicBudget::default()
        };
        assert_eq!(state.spent_cap(&budget(2.0, 9_000, 9, 90)), None);
        assert_eq!(state.over_budget(&budget(2.0, 9_000, 9, 90)), None);
        assert_eq!(state.spent_cap(&EpicBudget::default()), None);
        // Reached exactly is reached; dollars are named first, time last.
        assert_eq!(state.spent_cap(&budget(1.0, 5_000, 3, 60)), Some(Cap::Usd));
        assert_eq!(
            state.spent_cap(&budget(2.0, 5_000, 3, 60)),
            Some(Cap::Tokens)
        );
        assert_eq!(
            state.spent_cap(&budget(2.0, 9_000, 3, 60)),
            Some(Cap::Invocations)
        );
        assert_eq!(state.spent_cap(&budget(2.0, 9_000, 9, 60)), Some(Cap::Time));
        let why = state
            .over_budget(&budget(2.0, 4_000, 9, 90))
            .unwrap_or_default();
        assert!(
            why.starts_with("budget: 5000 tokens spent of 4000; nothing new is started"),
            "{why}"
        );
        assert_eq!(
            state.over_budget(&budget(0.5, 9_000, 9, 90)).as_deref(),
            Some("budget: $1.00 spent of $0.50; nothing new is started (give it more with git bmad epic resume's budget options to go on)")
        );
        // GitHub's premium requests, named after tokens.
        state
            .stories
            .entry("b".into())
            .or_default()
            .detail
            .premium_requests = Some(1.5);
        state
            .stories
            .entry("a".into())
            .or_default()
            .detail
            .premium_requests = Some(1.0);
        let premium = |limit| EpicBudget {
            premium_requests: Some(limit),
            ..budget(2.0, 9_000, 9, 90)
        };
        assert_eq!(state.spent_cap(&premium(3.0)), None);
        assert_eq!(state.spent_cap(&premium(2.5)), Some(Cap::PremiumRequests));
        assert!(state
            .over_budget(&premium(2.0))
            .unwrap_or_default()
            .starts_with("budget: 2.5 premium requests spent of 2; nothing new"));
        assert_eq!(
            state.story_limits("b", &premium(3.0)).premium_requests,
            Some(1.5 + 0.5)
        );
    }
}

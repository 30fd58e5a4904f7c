//! The supervisor's decisions, apart from the loop that acts on them.
//!
//! Every function here is pure: it reads the playbook and the replayed [`RunState`] (and,
//! where a decision needs the worktree, check results the loop passes in) and returns the
//! events to journal. Only the loop in `engine.rs` records them, spawns agents and takes
//! checkpoints, so every rule of the run can be tested here in microseconds.

mod gate;
mod limits;
mod settle;
mod verdict;

pub use gate::{forged_journal, moved_record, GateRequest};
pub use limits::{budget_micro_usd, reached as limit_reached, spent_usd, stop as limit_stop};
pub use settle::{settle, stopped, Settlement};
pub use verdict::judge;

use super::error::{Error, Result};
use super::playbook::Playbook;
use crate::policy::secrets::redact;
use crate::session::run_state::{Answer, Ended, RunState, StepStatus};
use crate::session::schema::{Body, GateAnswered, Next, Retry, RunCompleted, RunResumed};
use crate::session::{Decision, NewEvent};

/// A human's reply to the open gate, as the event that records it.
pub fn answer(
    state: &RunState,
    session: &str,
    reply: &str,
    message: Option<&str>,
) -> Result<NewEvent> {
    let Some(gate) = state.gate.clone() else {
        return Err(Error::NoGate {
            session: session.to_owned(),
        });
    };
    let Some(answer) = Answer::parse(reply).filter(|a| gate.kind.options().contains(a)) else {
        return Err(Error::UnknownAnswer {
            answer: reply.to_owned(),
            gate: Box::new(gate),
        });
    };
    Ok(NewEvent::new(Body::GateAnswered(GateAnswered {
        answer: Some(answer),
        kind: Some(gate.kind),
        gate_seq: Some(gate.seq),
    }))
    .step(Some(gate.step.clone()))
    .decision(Some(Decision::Human))
    .trigger(Some(gate.trigger.clone()))
    // What a human types can hold a token as well as anything else bound for the journal.
    .response(Some(redact(message.unwrap_or(answer.as_str())))))
}

/// What stopped the run (a failure, a limit, an interrupt: the event's kind), when it
/// stopped and does not wait at a gate: what a resume takes up.
pub fn stopped_by(state: &RunState) -> Option<&str> {
    match &state.ended {
        Some(Ended::Stopped(after)) if state.gate.is_none() => Some(after),
        _ => None,
    }
}

/// Taking up a run that stopped: the resume, and a retry of every step whose failure
/// stopped it. Nothing for a run that did not stop, or that waits at a gate.
pub fn resume(playbook: &Playbook, state: &RunState, budget_usd: Option<f64>) -> Vec<NewEvent> {
    let Some(after) = stopped_by(state) else {
        return Vec::new();
    };
    let mut events = vec![NewEvent::new(Body::RunResumed(RunResumed {
        after: after.to_owned(),
        budget_usd,
    }))
    .decision(Some(Decision::Human))];
    events.extend(
        playbook
            .steps()
            .filter(|s| state.step(&s.id).status == StepStatus::Failed { next: Next::Stop })
            .map(|s| {
                NewEvent::new(Body::Retry(Retry::default()))
                    .step(Some(s.id.clone()))
                    .decision(Some(Decision::Human))
                    .trigger(Some("resume".into()))
            }),
    );
    events
}

/// The run's last event: every step is done or skipped.
pub fn completed(playbook: &Playbook, state: &RunState) -> NewEvent {
    let count = |status: StepStatus| {
        playbook
            .steps()
            .filter(|s| state.step(&s.id).status == status)
            .count()
    };
    NewEvent::new(Body::RunCompleted(RunCompleted {
        done: count(StepStatus::Done),
        skipped: count(StepStatus::Skipped),
        invocations: state.invocations,
    }))
    .decision(Some(Decision::Auto))
    .duration_ms(Some(state.run_time_ms))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::session::{Event, SessionId};
    use crate::supervisor::playbook::Step;
    use serde_json::{json, Value};

    /// A playbook from YAML that must parse.
    pub fn playbook(yaml: &str) -> Playbook {
        let (playbook, diagnostics) = crate::supervisor::parse_playbook(yaml, "t");
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        playbook.unwrap()
    }

    /// A one-step playbook's step `s`, with `fields` (YAML lines) added.
    pub fn step(fields: &str) -> Step {
        let mut yaml = "steps:\n  - id: s\n    command: x\n    runner: shell\n".to_owned();
        for line in fields.lines() {
            yaml.push_str(&format!("    {line}\n"));
        }
        playbook(&yaml).step("s").cloned().unwrap()
    }

    /// A run state replayed from (kind, step, detail) as they would be stored.
    pub fn replay(events: &[(&str, &str, Value)]) -> RunState {
        let id = SessionId::parse("20261122-101500-abcdef").unwrap();
        let stored: Vec<Event> = events
            .iter()
            .enumerate()
            .map(|(n, (kind, step, detail))| {
                let line = json!({"seq": n + 1, "ts": "2026-11-22T10:15:00Z", "session": id.as_str(),
                    "event": kind, "step": step, "duration_ms": 10, "detail": detail});
                serde_json::from_value(line).unwrap()
            })
            .collect();
        RunState::replay(&stored)
    }

    #[test]
    fn answers_must_fit_the_gate() {
        let state = replay(&[("gate_opened", "pr", json!({"kind": "before"}))]);
        let event = answer(&state, "s", "y", Some("ship it")).unwrap();
        assert_eq!(event.name(), "gate_answered");
        assert_eq!(event.body().detail()["answer"], "continue");
        // A gate before a step has nothing to retry.
        assert!(matches!(
            answer(&state, "s", "retry", None),
            Err(Error::UnknownAnswer { .. })
        ));
        assert!(matches!(
            answer(&RunState::default(), "s", "continue", None),
            Err(Error::NoGate { .. })
        ));
    }

    #[test]
    fn a_token_in_an_answers_message_never_reaches_the_journal() {
        let state = replay(&[("gate_opened", "pr", json!({"kind": "before"}))]);
        let token = format!("ghp_{}", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8");
        let event = answer(&state, "s", "continue", Some(&format!("use {token}"))).unwrap();
        let stored = format!("{event:?}");
        assert!(!stored.contains(&token), "{stored}");
        assert!(stored.contains("use "), "{stored}");
    }

    #[test]
    fn a_stopped_run_resumes_by_retrying_what_stopped_it() {
        let p = playbook("steps:\n  - {id: a, command: x, runner: shell}\n  - {id: b, command: y, runner: shell}\n");
        let stopped = replay(&[
            ("step_completed", "a", json!({})),
            ("step_failed", "b", json!({"next": "stop"})),
            ("run_failed", "", json!({"steps": ["b"]})),
        ]);
        let events = resume(&p, &stopped, None);
        let names: Vec<&str> = events.iter().map(|e| e.name()).collect();
        assert_eq!(names, ["run_resumed", "retry"]);
        assert_eq!(events[0].body().detail()["after"], "run_failed");
        assert!(events[0].body().detail().get("budget_usd").is_none());
        assert!(resume(&p, &replay(&[("step_completed", "a", json!({}))]), None).is_empty());
        // With more money: the budget goes on with the run, over the configuration's.
        let more = resume(&p, &stopped, Some(7.5));
        assert_eq!(more[0].body().detail()["budget_usd"], 7.5);
        let state = replay(&[
            ("step_failed", "b", json!({"next": "stop"})),
            ("run_failed", "", json!({"steps": ["b"]})),
            ("run_resumed", "", more[0].body().detail()),
        ]);
        assert_eq!(state.budget_micro_usd, Some(7_500_000));
    }
}

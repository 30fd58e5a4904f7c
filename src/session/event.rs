//! Journal events: one JSON object per line in a checkpoint's note.
//!
//! Optional fields are left out when empty, so a note stays short; readers treat a missing
//! field as null. Unknown event names are kept and shown as they are: later layers (the
//! supervisor, the BMAD runner) add their own without changing this one.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::id::SessionId;
use crate::time::Timestamp;

/// Event names this layer writes or interprets.
pub mod kind {
    /// A session was created; `detail` carries its manifest.
    pub const SESSION_STARTED: &str = "session_started";
    /// A checkpoint commit was written; `detail.commit`, `detail.tree`, `detail.label`.
    pub const CHECKPOINT: &str = "checkpoint";
    /// The worktree was restored to a checkpoint; `detail.target`, `detail.target_seq`,
    /// `detail.safety`, and `detail.undo_of` when it reversed an earlier rollback.
    pub const ROLLBACK: &str = "rollback";
    /// The session was finished.
    pub const SESSION_FINISHED: &str = "session_finished";
    /// The session's worktree was found deleted and pruned.
    pub const WORKTREE_PRUNED: &str = "worktree_pruned";
    /// A step began.
    pub const STEP_STARTED: &str = "step_started";
    /// A step ended well.
    pub const STEP_COMPLETED: &str = "step_completed";
    /// A step ended badly.
    pub const STEP_FAILED: &str = "step_failed";
    /// A step was skipped.
    pub const STEP_SKIPPED: &str = "step_skipped";
    /// A human gate opened.
    pub const GATE_OPENED: &str = "gate_opened";
    /// A human answered a gate.
    pub const GATE_ANSWERED: &str = "gate_answered";
    /// A policy refused something.
    pub const POLICY_VIOLATION: &str = "policy_violation";
    /// A BMAD story's status was set (`git bmad stories set`) in the session.
    pub const STORY_STATUS: &str = "story_status";
}

/// Who decided what an event records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// git-bmad or the agent, within its autonomy.
    Auto,
    /// Handed up to a human.
    Escalated,
    /// A human.
    Human,
}

impl Decision {
    /// The name used in JSON and on the command line.
    pub fn as_str(&self) -> &'static str {
        match self {
            Decision::Auto => "auto",
            Decision::Escalated => "escalated",
            Decision::Human => "human",
        }
    }
}

/// One journal event, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the session's journal: 1, 2, 3, … with no gaps.
    pub seq: u64,
    /// When it was written, RFC 3339 UTC.
    pub ts: String,
    /// The session id.
    pub session: String,
    /// What happened (see [`kind`]).
    pub event: String,
    /// The playbook step it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Who decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// What caused it (for escalations and retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// How long the thing took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// A human's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    /// Anything else, event-specific.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub detail: Value,
}

/// An event before the journal has given it a `seq` and a time.
#[derive(Clone, Debug, Default)]
pub struct NewEvent {
    event: String,
    step: Option<String>,
    decision: Option<Decision>,
    trigger: Option<String>,
    duration_ms: Option<u64>,
    response: Option<String>,
    detail: Value,
}

impl NewEvent {
    /// An event named `event` with nothing else set.
    pub fn new(event: impl Into<String>) -> Self {
        NewEvent {
            event: event.into(),
            ..Default::default()
        }
    }

    /// Set the step.
    pub fn step(mut self, step: Option<String>) -> Self {
        self.step = step;
        self
    }

    /// Set who decided.
    pub fn decision(mut self, decision: Option<Decision>) -> Self {
        self.decision = decision;
        self
    }

    /// Set the trigger.
    pub fn trigger(mut self, trigger: Option<String>) -> Self {
        self.trigger = trigger;
        self
    }

    /// Set the duration.
    pub fn duration_ms(mut self, duration_ms: Option<u64>) -> Self {
        self.duration_ms = duration_ms;
        self
    }

    /// Set a human's response.
    pub fn response(mut self, response: Option<String>) -> Self {
        self.response = response;
        self
    }

    /// Set the event-specific detail.
    pub fn detail(mut self, detail: Value) -> Self {
        self.detail = detail;
        self
    }

    /// The event name.
    pub fn name(&self) -> &str {
        &self.event
    }

    /// The stored event, with its place in the journal.
    pub(crate) fn into_event(self, seq: u64, session: &SessionId, now: Timestamp) -> Event {
        Event {
            seq,
            ts: now.rfc3339(),
            session: session.to_string(),
            event: self.event,
            step: self.step,
            decision: self.decision,
            trigger: self.trigger,
            duration_ms: self.duration_ms,
            response: self.response,
            detail: self.detail,
        }
    }
}

impl Event {
    /// A string field of `detail`.
    pub fn detail_str(&self, key: &str) -> Option<&str> {
        self.detail.get(key).and_then(Value::as_str)
    }

    /// An integer field of `detail`.
    pub fn detail_u64(&self, key: &str) -> Option<u64> {
        self.detail.get(key).and_then(Value::as_u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_omits_empty_fields() {
        let id = SessionId::parse("20261122-101500-abcdef").unwrap();
        let event = NewEvent::new(kind::CHECKPOINT)
            .decision(Some(Decision::Auto))
            .detail(serde_json::json!({"label": "after plan"}))
            .into_event(7, &id, Timestamp::from_secs(1_795_342_500));
        let line = serde_json::to_string(&event).unwrap();
        assert_eq!(
            line,
            r#"{"seq":7,"ts":"2026-11-22T10:15:00Z","session":"20261122-101500-abcdef","event":"checkpoint","decision":"auto","detail":{"label":"after plan"}}"#
        );
        let back: Event = serde_json::from_str(&line).unwrap();
        assert_eq!(back, event);
    }
}

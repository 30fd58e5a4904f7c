//! Journal events: one JSON object per line in a checkpoint's note.
//!
//! An event is an envelope (its place, time, step, who decided) around a [`Body`], the typed
//! kind and detail from [`super::schema`]. Optional fields are left out when empty, so a note
//! stays short; readers treat a missing field as null.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::id::SessionId;
use super::schema::Body;
use crate::time::Timestamp;

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
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Position in the session's journal: 1, 2, 3, … with no gaps.
    pub seq: u64,
    /// When it was written, RFC 3339 UTC.
    pub ts: String,
    /// The session id.
    pub session: String,
    /// The playbook step it belongs to.
    pub step: Option<String>,
    /// Who decided.
    pub decision: Option<Decision>,
    /// What caused it (for escalations and retries).
    pub trigger: Option<String>,
    /// How long the thing took.
    pub duration_ms: Option<u64>,
    /// A human's answer.
    pub response: Option<String>,
    /// What happened.
    pub body: Body,
    /// The journal's hash chain before this event (see [`super::journal`]); `None` only in
    /// journals written before the chain existed, or in a line git-bmad did not write.
    pub prev: Option<String>,
    /// For an event copied from another machine's journal by `sync`: its id there (see
    /// [`super::sync`]).
    pub origin: Option<String>,
    /// For a copy: the clone that wrote it, as its journal says (information, not proof).
    pub from: Option<String>,
    /// For a copy: the allowed signer whose signature over the other journal covered it when
    /// this clone copied it (see [`super::trust`]). A copy without one is information only.
    pub signer: Option<String>,
}

/// An event as it is written: the kind's name in `event`, its detail as JSON. Read with
/// owned strings, written from borrowed ones (`T` is `String` or `&str`).
#[derive(Serialize, Deserialize)]
struct Wire<T> {
    seq: u64,
    ts: T,
    session: T,
    event: T,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step: Option<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    decision: Option<Decision>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    trigger: Option<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    response: Option<T>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    detail: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prev: Option<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    origin: Option<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signer: Option<T>,
}

impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire {
            seq: self.seq,
            ts: self.ts.as_str(),
            session: self.session.as_str(),
            event: self.body.name(),
            step: self.step.as_deref(),
            decision: self.decision,
            trigger: self.trigger.as_deref(),
            duration_ms: self.duration_ms,
            response: self.response.as_deref(),
            detail: self.body.detail(),
            prev: self.prev.as_deref(),
            origin: self.origin.as_deref(),
            from: self.from.as_deref(),
            signer: self.signer.as_deref(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::<String>::deserialize(deserializer)?;
        Ok(Event {
            seq: wire.seq,
            ts: wire.ts,
            session: wire.session,
            step: wire.step,
            decision: wire.decision,
            trigger: wire.trigger,
            duration_ms: wire.duration_ms,
            response: wire.response,
            body: Body::from_parts(wire.event, wire.detail),
            prev: wire.prev,
            origin: wire.origin,
            from: wire.from,
            signer: wire.signer,
        })
    }
}

impl Event {
    /// The kind's name.
    pub fn kind(&self) -> &str {
        self.body.name()
    }

    /// Whether replays may take it as state: written in this clone, or copied from another
    /// with an allowed signer's signature over it.
    pub fn is_trusted(&self) -> bool {
        self.origin.is_none() || self.signer.is_some()
    }

    /// How it is named when copied from another clone and no allowed signer vouched for it.
    pub fn untrusted_note(&self) -> String {
        format!(
            "from {}, not trusted",
            self.from.as_deref().unwrap_or("another clone")
        )
    }
}

/// Where a copied event came from and who vouched for it, as this clone judged it.
#[derive(Clone, Debug, Default)]
pub struct Provenance {
    /// Its id where it was first written.
    pub id: String,
    /// The clone that wrote it, as its journal says.
    pub from: Option<String>,
    /// The allowed signer that vouched for it, if one did.
    pub signer: Option<String>,
}

/// An event before the journal has given it a `seq` and a time.
#[derive(Clone, Debug)]
pub struct NewEvent {
    body: Body,
    step: Option<String>,
    decision: Option<Decision>,
    trigger: Option<String>,
    duration_ms: Option<u64>,
    response: Option<String>,
    /// A copy's provenance and its time on the machine it comes from.
    origin: Option<(Provenance, String)>,
}

impl NewEvent {
    /// An event of this kind and detail, with nothing else set.
    pub fn new(body: Body) -> Self {
        NewEvent {
            body,
            step: None,
            decision: None,
            trigger: None,
            duration_ms: None,
            response: None,
            origin: None,
        }
    }

    /// A policy violation `hook` found (`rule`, what it is about, why), decided by git-bmad
    /// itself.
    pub fn violation(
        hook: &str,
        rule: impl AsRef<str>,
        subject: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        NewEvent::new(Body::PolicyViolation(super::schema::PolicyViolation {
            hook: hook.to_owned(),
            rule: rule.as_ref().to_owned(),
            subject: subject.into(),
            reason: reason.into(),
            paths: Vec::new(),
        }))
        .decision(Some(Decision::Auto))
    }

    /// A policy violation that concerns several paths: named one by one (a path may hold
    /// ", ", which the subject joins them with).
    pub fn violation_of_paths(
        hook: &str,
        rule: impl AsRef<str>,
        paths: Vec<String>,
        reason: impl Into<String>,
    ) -> Self {
        let mut event = NewEvent::violation(hook, rule, paths.join(", "), reason);
        if let Body::PolicyViolation(violation) = &mut event.body {
            violation.paths = paths;
        }
        event
    }

    /// A copy of another journal's event (`sync` merging journals): the same kind, detail,
    /// step and time, with where it came from and who vouched for it.
    pub fn copy_of(event: &Event, provenance: Provenance) -> Self {
        NewEvent {
            body: event.body.clone(),
            step: event.step.clone(),
            decision: event.decision,
            trigger: event.trigger.clone(),
            duration_ms: event.duration_ms,
            response: event.response.clone(),
            origin: Some((provenance, event.ts.clone())),
        }
    }

    /// Whether it is this clone's own, or a copy an allowed signer vouched for.
    pub(crate) fn is_vouched(&self) -> bool {
        self.origin.as_ref().is_none_or(|(p, _)| p.signer.is_some())
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

    /// The kind's name.
    pub fn name(&self) -> &str {
        self.body.name()
    }

    /// What it records.
    pub fn body(&self) -> &Body {
        &self.body
    }

    /// The stored event, with its place in the journal and the chain before it.
    pub(crate) fn into_event(
        self,
        seq: u64,
        session: &SessionId,
        now: Timestamp,
        prev: Option<String>,
    ) -> Event {
        let (provenance, ts) = match self.origin {
            Some((p, ts)) => (Some(p), ts),
            None => (None, now.rfc3339()),
        };
        let (origin, from, signer) = match provenance {
            Some(p) => (Some(p.id), p.from, p.signer),
            None => (None, None, None),
        };
        Event {
            seq,
            ts,
            session: session.to_string(),
            step: self.step,
            decision: self.decision,
            trigger: self.trigger,
            duration_ms: self.duration_ms,
            response: self.response,
            body: self.body,
            prev,
            origin,
            from,
            signer,
        }
    }
}

/// Events for tests of the folds above the journal.
#[cfg(test)]
impl Event {
    /// Event number `seq`, `kind` with `detail`, of one fixed session at one fixed time;
    /// every other field empty.
    pub(crate) fn for_test(seq: u64, kind: &str, detail: Value) -> Event {
        Event {
            seq,
            ts: "2026-11-22T10:15:00Z".into(),
            session: "20261122-101500-abcdef".into(),
            step: None,
            decision: None,
            trigger: None,
            duration_ms: None,
            response: None,
            body: Body::from_parts(kind.into(), detail),
            prev: None,
            origin: None,
            from: None,
            signer: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_omits_empty_fields() {
        let id = SessionId::parse("20261122-101500-abcdef").unwrap();
        let event = NewEvent::new(Body::Checkpoint(super::super::schema::CheckpointTaken {
            label: "after plan".into(),
            ..Default::default()
        }))
        .decision(Some(Decision::Auto))
        .into_event(
            7,
            &id,
            Timestamp::from_secs(1_795_342_500),
            Some("ab".into()),
        );
        let line = serde_json::to_string(&event).unwrap();
        assert_eq!(
            line,
            r#"{"seq":7,"ts":"2026-11-22T10:15:00Z","session":"20261122-101500-abcdef","event":"checkpoint","decision":"auto","detail":{"label":"after plan"},"prev":"ab"}"#
        );
        let back: Event = serde_json::from_str(&line).unwrap();
        assert_eq!(back, event);
    }
}

//! The state of a session, derived from its journal and nothing else.
//!
//! [`SessionState::replay`] is a pure function: the same events give the same state, every
//! time, on every machine. Nothing about a session is stored that the journal cannot rebuild.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use super::event::Event;
use super::schema::Body;

/// Where a session is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Work is going on.
    Running,
    /// Waiting for a human at a gate.
    Gated,
    /// A step failed and stopped the run.
    Failed,
    /// Finished with `git bmad finish`.
    Completed,
    /// Its worktree was deleted by hand and pruned.
    Pruned,
}

impl Status {
    /// The name used in trailers, JSON and tables.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Gated => "gated",
            Status::Failed => "failed",
            Status::Completed => "completed",
            Status::Pruned => "pruned",
        }
    }

    /// Parse a trailer value; unknown values (from newer versions) read as running.
    pub fn parse(text: &str) -> Status {
        match text {
            "gated" => Status::Gated,
            "failed" => Status::Failed,
            "completed" => Status::Completed,
            "pruned" => Status::Pruned,
            _ => Status::Running,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rollback as the journal records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RollbackRecord {
    /// The `seq` of the rollback event.
    pub seq: u64,
    /// The checkpoint restored.
    pub target: String,
    /// The safety checkpoint taken just before (what `undo` returns to).
    pub safety: String,
    /// The rollback this one reversed, if it was an undo.
    pub undo_of: Option<u64>,
    /// Whether only files were restored (the index and branch left as they were).
    pub files_only: bool,
}

/// Everything known about a session, replayed from its journal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionState {
    /// The session's name.
    pub name: Option<String>,
    /// Its branch (full ref name).
    pub branch: Option<String>,
    /// What it started from, as the user named it.
    pub base: Option<String>,
    /// The worktree directory recorded at start.
    pub worktree: Option<String>,
    /// The playbook named at start.
    pub playbook: Option<String>,
    /// Where it is in its life.
    pub status: Status,
    /// The step of the most recent event that named one.
    pub current_step: Option<String>,
    /// How many events.
    pub events: u64,
    /// How many checkpoint events.
    pub checkpoints: u64,
    /// The rollbacks, oldest first.
    pub rollbacks: Vec<RollbackRecord>,
    /// The `seq`s of events whose effects were rolled back (and not undone).
    pub rolled_back: BTreeSet<u64>,
}

impl SessionState {
    /// Replay events, in `seq` order, into a state.
    pub fn replay<'a>(events: impl IntoIterator<Item = &'a Event>) -> SessionState {
        let mut state = SessionState {
            name: None,
            branch: None,
            base: None,
            worktree: None,
            playbook: None,
            status: Status::Running,
            current_step: None,
            events: 0,
            checkpoints: 0,
            rollbacks: Vec::new(),
            rolled_back: BTreeSet::new(),
        };
        // Which seqs each rollback marked, so an undo can unmark exactly those.
        let mut marked_by: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
        let mut seen: Vec<u64> = Vec::new();
        for event in events {
            state.events += 1;
            if event.step.is_some() {
                state.current_step = event.step.clone();
            }
            match &event.body {
                Body::SessionStarted(started) => {
                    let s = |v: &str| (!v.is_empty()).then(|| v.to_owned());
                    state.name = s(&started.name);
                    state.branch = s(&started.branch);
                    state.base = s(&started.base);
                    state.worktree = s(&started.worktree);
                    state.playbook = started.playbook.clone();
                    state.status = Status::Running;
                }
                Body::Checkpoint(_) => state.checkpoints += 1,
                Body::Rollback(rollback) => {
                    if let Some(undone) = rollback.undo_of.and_then(|u| marked_by.get(&u)) {
                        for seq in undone {
                            state.rolled_back.remove(seq);
                        }
                    }
                    let marked: BTreeSet<u64> = seen
                        .iter()
                        .copied()
                        .filter(|s| *s > rollback.target_seq && *s < event.seq)
                        .collect();
                    state.rolled_back.extend(marked.iter().copied());
                    marked_by.insert(event.seq, marked);
                    state.rollbacks.push(RollbackRecord {
                        seq: event.seq,
                        target: rollback.target.clone(),
                        safety: rollback.safety.clone(),
                        undo_of: rollback.undo_of,
                        files_only: rollback.files_only,
                    });
                }
                Body::SessionFinished(_) => state.status = Status::Completed,
                Body::WorktreePruned(_) => state.status = Status::Pruned,
                Body::WorktreeMoved(moved) => state.worktree = Some(moved.to.clone()),
                Body::SessionRestored(restored) => state.status = Status::parse(&restored.status),
                Body::GateOpened(_) => state.status = Status::Gated,
                Body::GateAnswered(_) | Body::StepStarted(_) => {
                    if matches!(state.status, Status::Gated | Status::Failed) {
                        state.status = Status::Running;
                    }
                }
                Body::StepFailed(_) => state.status = Status::Failed,
                _ => {}
            }
            seen.push(event.seq);
        }
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(seq: u64, event: &str, detail: serde_json::Value) -> Event {
        Event::for_test(seq, event, detail)
    }

    #[test]
    fn rollback_marks_and_undo_unmarks() {
        let events = vec![
            ev(
                1,
                "session_started",
                json!({"name": "x", "branch": "refs/heads/bmad/x"}),
            ),
            ev(2, "checkpoint", json!({})),
            ev(3, "step_started", json!({})),
            ev(4, "checkpoint", json!({})),
            ev(5, "checkpoint", json!({"label": "safety"})),
            ev(
                6,
                "rollback",
                json!({"target": "a", "target_seq": 2, "safety": "s1"}),
            ),
        ];
        let state = SessionState::replay(&events);
        assert_eq!(state.rolled_back, BTreeSet::from([3, 4, 5]));
        assert_eq!(state.checkpoints, 3);
        assert_eq!(state.name.as_deref(), Some("x"));

        let mut more = events.clone();
        more.push(ev(7, "checkpoint", json!({"label": "safety"})));
        more.push(ev(
            8,
            "rollback",
            json!({"target": "s1", "target_seq": 5, "safety": "s2", "undo_of": 6}),
        ));
        let state = SessionState::replay(&more);
        // The undo restores 3..5 and rolls back the first rollback and its safety checkpoint.
        assert_eq!(state.rolled_back, BTreeSet::from([6, 7]));
        assert_eq!(state.rollbacks.len(), 2);
        // Replaying twice gives the same state.
        assert_eq!(state, SessionState::replay(&more));
    }

    #[test]
    fn lifecycle_statuses() {
        let events = vec![
            ev(1, "session_started", json!({})),
            ev(2, "session_finished", json!({})),
        ];
        assert_eq!(SessionState::replay(&events).status, Status::Completed);
        let events = vec![
            ev(1, "session_started", json!({})),
            ev(2, "worktree_pruned", json!({})),
        ];
        assert_eq!(SessionState::replay(&events).status, Status::Pruned);
    }
}

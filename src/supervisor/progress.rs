//! A run's progress as a person watching it wants it: the step now running, how far along,
//! how long so far, and an estimate of what is left from the steps already done. Replayed
//! from the journal like everything else, so `status --watch` on any machine that synced the
//! session shows the same.

use serde::Serialize;

use crate::session::run_state::{Ended, RunState};
use crate::session::{Body, Event};
use crate::time::Timestamp;

/// Where a run stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunProgress {
    /// The playbook.
    pub playbook: String,
    /// Steps finished (done or skipped).
    pub done: usize,
    /// Steps in the playbook.
    pub total: usize,
    /// `done` as a percentage of `total`.
    pub percent: usize,
    /// The step running now.
    pub running: Option<String>,
    /// Since the run (or its last resume) began, milliseconds.
    pub elapsed_ms: u64,
    /// What is left, from the mean time of the steps this run finished; `None` before the
    /// first one.
    pub eta_ms: Option<u64>,
    /// The step whose gate waits for an answer.
    pub gated_at: Option<String>,
    /// How the run ended (`completed`, `aborted`, or the event that stopped it).
    pub ended: Option<String>,
}

impl RunProgress {
    /// Whether watching can stop: the run ended or waits for a human.
    pub fn settled(&self) -> bool {
        self.ended.is_some() || self.gated_at.is_some()
    }
}

/// The progress of a session's newest run at `now`; `None` when it never ran a playbook.
pub fn run_progress(events: &[Event], now: Timestamp) -> Option<RunProgress> {
    let state = RunState::replay(events);
    let manifest = state.manifest.as_ref()?;
    let (done, total) = state.progress();
    // The run's own events: from its newest start or resume on.
    let begin = events
        .iter()
        .rposition(|e| matches!(e.body, Body::RunStarted(_) | Body::RunResumed(_)))
        .unwrap_or(0);
    let since = events
        .get(begin)
        .and_then(|e| Timestamp::parse_rfc3339(&e.ts))
        .unwrap_or(now);
    let durations: Vec<u64> = events[begin..]
        .iter()
        .filter(|e| matches!(e.body, Body::StepCompleted(_)))
        .filter_map(|e| e.duration_ms)
        .collect();
    let eta_ms = (!durations.is_empty()).then(|| {
        let mean = durations.iter().sum::<u64>() / durations.len() as u64;
        mean * (total.saturating_sub(done)) as u64
    });
    let running = manifest
        .steps
        .iter()
        .find(|s| state.step(s).status == crate::session::run_state::StepStatus::Running)
        .cloned();
    Some(RunProgress {
        playbook: manifest.playbook.clone(),
        done,
        total,
        percent: (done * 100).checked_div(total).unwrap_or(100),
        running,
        elapsed_ms: now.millis().saturating_sub(since.millis()),
        eta_ms: if state.ended.is_some() {
            Some(0)
        } else {
            eta_ms
        },
        gated_at: state.gate.as_ref().map(|g| g.step.clone()),
        ended: state.ended.as_ref().map(|e| match e {
            Ended::Completed => "completed".to_owned(),
            Ended::Aborted => "aborted".to_owned(),
            Ended::Stopped(why) => why.clone(),
        }),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ev(seq: u64, secs: u64, kind: &str, step: Option<&str>, ms: Option<u64>) -> Event {
        let detail = match kind {
            "run_started" => json!({"playbook": "p", "steps": ["a", "b", "c", "d"]}),
            _ => json!({}),
        };
        Event {
            ts: Timestamp::from_secs(1_795_342_500 + secs).rfc3339(),
            step: step.map(str::to_owned),
            duration_ms: ms,
            ..Event::for_test(seq, kind, detail)
        }
    }

    #[test]
    fn the_estimate_comes_from_the_steps_done() {
        let events = vec![
            ev(1, 0, "run_started", None, None),
            ev(2, 0, "step_started", Some("a"), None),
            ev(3, 60, "step_completed", Some("a"), Some(60_000)),
            ev(4, 60, "step_started", Some("b"), None),
            ev(5, 180, "step_completed", Some("b"), Some(120_000)),
            ev(6, 180, "step_started", Some("c"), None),
        ];
        let now = Timestamp::from_secs(1_795_342_500 + 200);
        let p = run_progress(&events, now).unwrap();
        assert_eq!((p.done, p.total, p.percent), (2, 4, 50));
        assert_eq!(p.running.as_deref(), Some("c"));
        assert_eq!(p.elapsed_ms, 200_000);
        // Two steps left at the mean of 90 s.
        assert_eq!(p.eta_ms, Some(180_000));
        assert!(!p.settled());
        assert_eq!(run_progress(&events[..0], now), None);
        // Before any step is done there is no estimate.
        assert_eq!(run_progress(&events[..2], now).unwrap().eta_ms, None);
    }
}

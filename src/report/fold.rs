//! One session's journal, read into its part of the report. Pure: the same events, period
//! and clock give the same report.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{
    CheckRun, Evidence, GateReport, ModelLine, Outcome, Problem, Progress, SessionReport,
    TimelineEntry,
};
use crate::session::run_state::{limit_text, Ended, RunState, Stop, StopKind};
use crate::session::schema::{Answer, GateKind, StepOutcome};
use crate::session::{self, Body, Event, SessionState, Status};
use crate::time::Timestamp;

/// The period and the clock a report is folded against.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// Events before this are history: they shape the state, not the period's numbers.
    pub since: Timestamp,
    /// Now.
    pub now: Timestamp,
    /// A running session with nothing journaled for this long is stalled.
    pub stall_after: Duration,
}

/// Read one session's events into its report; `None` when nothing of it falls in the period
/// and nothing about it waits for anyone.
pub fn fold(session: &session::Session, events: &[Event], window: Window) -> Option<SessionReport> {
    let state = SessionState::replay(events);
    let run = RunState::replay(events);
    let mut report = SessionReport {
        id: session.id.as_str().to_owned(),
        name: session.name.clone(),
        branch: session.short_branch().to_owned(),
        worktree: session.worktree.display().to_string(),
        outcome: Outcome::Running,
        status: state.status.as_str().to_owned(),
        last_activity: String::new(),
        started: None,
        playbook: None,
        progress: None,
        step: state.current_step.clone(),
        gate: None,
        stopped_by: None,
        evidence: Evidence::default(),
        problems: Vec::new(),
        agent_time_ms: 0,
        tokens: 0,
        cost_usd: 0.0,
        premium_requests: 0.0,
        models: Vec::new(),
        timeline: Vec::new(),
    };
    let mut checks: BTreeMap<(Option<String>, String), CheckRun> = BTreeMap::new();
    let mut last_activity = None;
    for event in events {
        let at = Timestamp::parse_rfc3339(&event.ts);
        last_activity = last_activity.max(at);
        let in_period = at.is_some_and(|at| at >= window.since);
        if !in_period {
            continue;
        }
        if matches!(event.body, Body::SessionStarted(_)) {
            report.started = Some(event.ts.clone());
        }
        if let Some(outcome) = step_outcome(&event.body) {
            report.agent_time_ms += event.duration_ms.unwrap_or(0);
            add_spend(&mut report, outcome);
            for check in &outcome.checks {
                let run = CheckRun {
                    step: event.step.clone(),
                    check: check.check.clone(),
                    ok: check.ok,
                    detail: check.detail.clone(),
                };
                checks.insert((event.step.clone(), check.check.clone()), run);
            }
        }
        if let Some(problem) = problem(event) {
            report.problems.push(problem);
        }
        report.timeline.push(TimelineEntry {
            seq: event.seq,
            at: event.ts.clone(),
            event: event.body.name().to_owned(),
            step: event.step.clone(),
            decision: event.decision.map(|d| d.as_str().to_owned()),
            summary: session::event_summary(event),
        });
    }
    report.problems.reverse();
    report.evidence.checks = checks.into_values().collect();
    report.last_activity = last_activity.map(|t| t.rfc3339()).unwrap_or_default();
    report.playbook = run.manifest.as_ref().map(|m| m.playbook.clone());
    let (done, total) = run.progress();
    report.progress = (total > 0).then_some(Progress { done, total });
    let stopped = run.stop.as_ref().map(|Stop { kind, why }| {
        let outcome = match kind {
            StopKind::Failed | StopKind::Aborted => Outcome::Failed,
            StopKind::Limit => Outcome::OverBudget,
            StopKind::Interrupted => Outcome::Interrupted,
        };
        (outcome, why.clone())
    });

    let idle = last_activity.map_or(Duration::ZERO, |last| {
        Duration::from_millis(window.now.millis().saturating_sub(last.millis()))
    });
    let (outcome, stopped_by) = match state.status {
        Status::Gated if run.gate.is_some() => (Outcome::Parked, None),
        Status::Completed => (Outcome::Done, None),
        Status::Pruned => (
            Outcome::Failed,
            Some("its worktree was deleted (`git bmad restore` brings it back)".to_owned()),
        ),
        _ if run.ended == Some(Ended::Completed) => (Outcome::Done, None),
        _ => match stopped.clone() {
            Some((outcome, why)) => (outcome, Some(why)),
            None if state.status == Status::Failed => {
                (Outcome::Failed, Some("a step failed".to_owned()))
            }
            // A session without a run is a human's: quiet is not stalled.
            None if run.manifest.is_some() && idle >= window.stall_after => (
                Outcome::Stalled,
                Some(format!(
                    "nothing journaled for {}",
                    crate::text::duration(idle.as_millis() as u64)
                )),
            ),
            None => (Outcome::Running, None),
        },
    };
    report.outcome = outcome;
    report.stopped_by = stopped_by;
    if outcome == Outcome::Stalled && stopped.is_none() {
        report.problems.insert(
            0,
            Problem {
                at: window.now.rfc3339(),
                kind: "stalled".into(),
                step: report.step.clone(),
                what: report.stopped_by.clone().unwrap_or_default(),
            },
        );
    }
    if outcome == Outcome::Parked {
        report.gate = run.gate.as_ref().map(|gate| {
            let options: Vec<String> = gate.options.iter().map(|a| a.as_str().to_owned()).collect();
            // After a step that failed or was escalated, `continue` would accept it as it is:
            // the command offered is `retry`, where the gate takes it.
            let suggested = if gate.kind == GateKind::After && gate.options.contains(&Answer::Retry)
            {
                "retry"
            } else {
                options.first().map_or("continue", String::as_str)
            };
            GateReport {
                step: (!gate.step.is_empty()).then(|| gate.step.clone()),
                kind: gate.kind.as_str().to_owned(),
                question: gate.question.clone(),
                evidence: gate.evidence.clone(),
                answer: format!(
                    "git bmad answer {suggested} -s {}",
                    crate::text::shell_quote(&session.name)
                ),
                options,
                opened: gate.opened.clone(),
            }
        });
    }
    let waits = outcome.is_problem() || outcome == Outcome::Running;
    (!report.timeline.is_empty() || waits).then_some(report)
}

/// The outcome a step event carries, for time, tokens, cost and checks.
fn step_outcome(body: &Body) -> Option<&StepOutcome> {
    match body {
        Body::StepCompleted(o) | Body::StepFailed(o) | Body::Escalated(o) => Some(o),
        _ => None,
    }
}

/// An event that is a problem, as the report lists it.
fn problem(event: &Event) -> Option<Problem> {
    let (kind, what) = match &event.body {
        Body::StepFailed(outcome) => (
            "step_failed",
            outcome
                .error
                .clone()
                .or_else(|| outcome.reason.clone())
                .unwrap_or_else(|| session::event_summary(event)),
        ),
        Body::PolicyViolation(v) => {
            // Secrets are refused by the `secret` rule in hooks, and kept out by checkpoints
            // under the secret rule that matched.
            let secret = v.rule == "secret" || v.hook == "checkpoint";
            let kind = if secret { "secret" } else { "policy_violation" };
            (
                kind,
                format!("{} refused by {}: {}", v.rule, v.hook, v.reason),
            )
        }
        Body::StallDetected(_) => ("stall_detected", session::event_summary(event)),
        Body::StepStarted(started) => match (&started.uncontained, &started.walls_lack) {
            (Some(why), _) => ("uncontained", format!("ran uncontained: {why}")),
            (None, Some(lack)) => (
                "walls",
                format!(
                    "ran in walls of {}: {lack}",
                    started.walls.as_deref().unwrap_or("one layer")
                ),
            ),
            (None, None) => return None,
        },
        Body::RunFailed(_) => ("run_failed", session::event_summary(event)),
        Body::LimitBudget(_)
        | Body::LimitTokens(_)
        | Body::LimitPremiumRequests(_)
        | Body::LimitInvocations(_)
        | Body::LimitRunTime(_) => ("limit", limit_text(&event.body)),
        _ => return None,
    };
    Some(Problem {
        at: event.ts.clone(),
        kind: kind.to_owned(),
        step: event.step.clone(),
        what,
    })
}

/// A step's tokens and cost, in all and per model.
fn add_spend(report: &mut SessionReport, outcome: &StepOutcome) {
    report.tokens += outcome.tokens_in.unwrap_or(0) + outcome.tokens_out.unwrap_or(0);
    report.cost_usd += outcome.cost_usd.unwrap_or(0.0);
    report.premium_requests += outcome.premium_requests.unwrap_or(0.0);
    for used in &outcome.usage {
        let line = ModelLine {
            model: used.model.clone(),
            tokens_in: used.tokens_in,
            tokens_cached: used.tokens_cached,
            tokens_out: used.tokens_out,
            cost_usd: used.cost_usd.unwrap_or(0.0),
            unpriced: used.cost_usd.is_none() && outcome.cost_usd.is_none(),
        };
        ModelLine::add_to(&mut report.models, &line);
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;
    use crate::session::SessionId;

    const START: u64 = 1_795_342_500; // 2026-11-22T10:15:00Z

    fn session() -> session::Session {
        session::Session {
            id: SessionId::parse("20261122-101500-abcdef").unwrap(),
            name: "feat".into(),
            branch: "refs/heads/bmad/feat".into(),
            worktree: PathBuf::from("/w/feat"),
            base: "main".into(),
            worktree_exists: true,
            status: Status::Running,
            step: None,
            seq: 0,
            head: "0".repeat(40).parse().unwrap(),
            updated: 0,
            clone: None,
            elsewhere: false,
            released: false,
        }
    }

    /// Events one minute apart from START.
    fn events(kinds: &[(&str, Option<&str>, serde_json::Value)]) -> Vec<Event> {
        kinds
            .iter()
            .enumerate()
            .map(|(i, (kind, step, detail))| Event {
                ts: Timestamp::from_secs(START + 60 * i as u64).rfc3339(),
                step: step.map(str::to_owned),
                duration_ms: Some(1000),
                ..Event::for_test(i as u64 + 1, kind, detail.clone())
            })
            .collect()
    }

    fn window(since_min: u64, now_min: u64) -> Window {
        Window {
            since: Timestamp::from_secs(START + 60 * since_min),
            now: Timestamp::from_secs(START + 60 * now_min),
            stall_after: Duration::from_secs(3600),
        }
    }

    fn run(extra: &[(&str, Option<&str>, serde_json::Value)]) -> Vec<Event> {
        let mut all = vec![
            (
                "session_started",
                None,
                json!({"name": "feat", "base_commit": "ab"}),
            ),
            (
                "run_started",
                None,
                json!({"playbook": "p", "steps": ["a", "b"]}),
            ),
        ];
        all.extend(extra.iter().cloned());
        events(&all)
    }

    #[test]
    fn spend_is_told_per_model_with_what_had_no_price() {
        let used = |model: &str, cost: Option<f64>| json!({"model": model, "tokens_in": 100, "tokens_cached": 1000, "tokens_out": 20, "cost_usd": cost});
        let ran = run(&[
            (
                "step_completed",
                Some("a"),
                json!({"cost_usd": 0.5, "cost_priced": true, "usage": [used("gpt-5", Some(0.5))]}),
            ),
            (
                "step_failed",
                Some("b"),
                json!({"usage": [used("gpt-5", Some(0.25)), used("my-model", None)]}),
            ),
        ]);
        let report = fold(&session(), &ran, window(0, 10)).unwrap();
        let [gpt, mine] = report.models.as_slice() else {
            panic!("{:?}", report.models)
        };
        assert_eq!(
            (
                gpt.model.as_str(),
                gpt.tokens_in,
                gpt.tokens_cached,
                gpt.tokens_out
            ),
            ("gpt-5", 200, 2000, 40)
        );
        assert!(
            (gpt.cost_usd - 0.75).abs() < 1e-9 && !gpt.unpriced,
            "{gpt:?}"
        );
        assert!(mine.unpriced, "{mine:?}");
        let text = super::super::text::models_line(&report.models).unwrap_or_default();
        assert_eq!(
            text,
            "by model: gpt-5 $0.75 (200 in, 2000 cached, 40 out); my-model $0.00 and unpriced tokens (100 in, 1000 cached, 20 out)"
        );
    }

    #[test]
    fn a_gate_parks_until_answered() {
        let gate = (
            "gate_opened",
            Some("b"),
            json!({"kind": "before", "question": "Ship it?", "evidence": "", "options": ["continue", "abort"]}),
        );
        let parked = run(&[
            (
                "step_completed",
                Some("a"),
                json!({"tokens_in": 7, "tokens_out": 3, "cost_usd": 0.5}),
            ),
            gate.clone(),
        ]);
        let report = fold(&session(), &parked, window(0, 10)).unwrap();
        assert_eq!(report.outcome, Outcome::Parked);
        let g = report.gate.unwrap();
        assert_eq!(g.answer, "git bmad answer continue -s feat");
        assert_eq!(g.question, "Ship it?");
        assert_eq!(report.progress, Some(Progress { done: 1, total: 2 }));
        assert_eq!((report.tokens, report.cost_usd), (10, 0.5));

        let answered = run(&[
            gate,
            ("gate_answered", Some("b"), json!({"answer": "continue"})),
            ("step_started", Some("b"), json!({})),
        ]);
        let report = fold(&session(), &answered, window(0, 10)).unwrap();
        assert_eq!(report.outcome, Outcome::Running);
        assert!(report.gate.is_none());
    }

    /// A gate after a failed step offers `retry`: `continue` would accept the failing step.
    #[test]
    fn a_gate_after_a_failed_step_offers_retry_not_continue() {
        let failed = run(&[
            ("step_failed", Some("a"), json!({"error": "tests failed"})),
            (
                "gate_opened",
                Some("a"),
                json!({"kind": "after", "question": "Tests fail. Go on?", "evidence": "", "options": ["continue", "retry", "skip", "abort"]}),
            ),
        ]);
        let report = fold(&session(), &failed, window(0, 10)).unwrap();
        assert_eq!(report.outcome, Outcome::Parked);
        assert_eq!(report.gate.unwrap().answer, "git bmad answer retry -s feat");
    }

    /// The report reads the run as the supervisor does: an interrupted run waits for
    /// `resume`, it has not stalled; resumed, it runs again.
    #[test]
    fn an_interrupted_run_is_interrupted_not_stalled_until_resumed() {
        let interrupted = run(&[
            ("step_started", Some("a"), json!({})),
            ("run_interrupted", None, json!({})),
        ]);
        let report = fold(&session(), &interrupted, window(0, 600)).unwrap();
        assert_eq!(report.outcome, Outcome::Interrupted);
        assert!(report.outcome.is_problem());
        assert!(
            report
                .stopped_by
                .as_deref()
                .unwrap()
                .contains("git bmad resume"),
            "{:?}",
            report.stopped_by
        );
        let resumed = run(&[
            ("step_started", Some("a"), json!({})),
            ("run_interrupted", None, json!({})),
            ("run_resumed", None, json!({})),
        ]);
        let report = fold(&session(), &resumed, window(0, 10)).unwrap();
        assert_eq!(report.outcome, Outcome::Running);
    }

    #[test]
    fn a_limit_is_over_budget_until_the_run_is_resumed() {
        let limited = run(&[(
            "limit_budget_reached",
            None,
            json!({"budget_usd": 2.0, "spent_usd": 2.5}),
        )]);
        let report = fold(&session(), &limited, window(0, 10)).unwrap();
        assert_eq!(report.outcome, Outcome::OverBudget);
        assert_eq!(
            report.stopped_by.as_deref(),
            Some("budget spent: $2.50 of $2.00")
        );
        assert_eq!(report.problems[0].kind, "limit");

        let mut resumed = limited.clone();
        resumed.extend(
            events(&[("run_resumed", None, json!({}))])
                .into_iter()
                .map(|mut e| {
                    e.seq = 4;
                    e
                }),
        );
        let report = fold(&session(), &resumed, window(0, 10)).unwrap();
        assert_eq!(report.outcome, Outcome::Running);
    }

    #[test]
    fn quiet_runs_stall_and_old_finished_sessions_leave_the_report() {
        let quiet = run(&[("step_started", Some("a"), json!({}))]);
        // The last event is at minute 2; an hour later the run is stalled.
        let report = fold(&session(), &quiet, window(0, 62)).unwrap();
        assert_eq!(report.outcome, Outcome::Stalled);
        assert_eq!(report.problems[0].kind, "stalled");
        assert_eq!(
            fold(&session(), &quiet, window(0, 30)).unwrap().outcome,
            Outcome::Running
        );
        // Without a run, quiet is a human's pace.
        let manual = events(&[("session_started", None, json!({"name": "feat"}))]);
        assert_eq!(
            fold(&session(), &manual, window(0, 600)).unwrap().outcome,
            Outcome::Running
        );

        let done = run(&[("run_completed", None, json!({"done": 2}))]);
        assert_eq!(
            fold(&session(), &done, window(0, 10)).unwrap().outcome,
            Outcome::Done
        );
        // A period after everything: nothing of it, and it waits for nobody.
        assert!(fold(&session(), &done, window(100, 110)).is_none());
        // Events before the period shape the state but are not counted or listed.
        let report = fold(&session(), &quiet, window(2, 10)).unwrap();
        assert_eq!(report.timeline.len(), 1);
        assert_eq!(report.agent_time_ms, 0);
    }

    #[test]
    fn secrets_are_told_from_other_refusals() {
        let refused = run(&[
            (
                "policy_violation",
                Some("a"),
                json!({"hook": "checkpoint", "rule": "aws-access-key-id", "ref": "x:1", "reason": "kept out"}),
            ),
            (
                "policy_violation",
                None,
                json!({"hook": "pre-push", "rule": "force-push", "ref": "main", "reason": "no"}),
            ),
        ]);
        let report = fold(&session(), &refused, window(0, 10)).unwrap();
        let kinds: Vec<&str> = report.problems.iter().map(|p| p.kind.as_str()).collect();
        // Newest first.
        assert_eq!(kinds, ["policy_violation", "secret"]);
    }
}

//! Everything in a phase that is not "run these steps": answers to act on, gates to open,
//! crashed steps to recover, steps to skip.

use super::super::checks::CheckOutcome;
use super::super::playbook::{Autonomy, Check, Playbook, Step, When};
use super::gate::{self, GateRequest};
use crate::session::run_state::{Answer, GateKind, RunState, StepStatus};
use crate::session::schema::{Body, Next, Retry, RunFailed, StepOutcome, StepSkipped};
use crate::session::{Decision, NewEvent};
use crate::supervisor::findings;

/// What a phase needs before its steps can run.
#[derive(Debug)]
pub enum Settlement {
    /// Nothing: run the steps that are pending.
    Run,
    /// Journal these, then look again.
    Record(Vec<NewEvent>),
    /// Open this gate (the run parks there).
    Gate(Box<GateRequest>),
    /// A human aborted the run: journal this and end it.
    Abort(Box<NewEvent>),
    /// A step's failure stops the run (journaled before a crash lost the run's record).
    Stop(Vec<String>),
}

/// Settle the first step of `pending` that needs it. `evaluate` checks one condition of a
/// step against the worktree (passed in, so deciding stays apart from looking).
pub fn settle(
    playbook: &Playbook,
    state: &RunState,
    pending: &[&Step],
    evaluate: &mut dyn FnMut(&Step, &Check) -> CheckOutcome,
) -> Settlement {
    for step in pending {
        let record = state.step(&step.id);
        let id = Some(step.id.clone());
        if let Some((gate_kind, answer)) = record.pending_answer {
            let event = match (gate_kind, answer) {
                (_, Answer::Abort) => {
                    return Settlement::Abort(Box::new(
                        NewEvent::new(Body::RunAborted(Default::default()))
                            .step(id)
                            .decision(Some(Decision::Human)),
                    ))
                }
                (_, Answer::Skip) => NewEvent::new(Body::StepSkipped(StepSkipped {
                    reason: "skipped by a human at a gate".into(),
                })),
                (GateKind::After, Answer::Continue) => {
                    NewEvent::new(Body::StepCompleted(StepOutcome {
                        accepted_by: Some("human".into()),
                        after: record.last_failure.map(|f| f.1),
                        ..Default::default()
                    }))
                }
                (GateKind::After | GateKind::Precondition, Answer::Retry) => {
                    NewEvent::new(Body::Retry(Retry::default())).trigger(Some("human".into()))
                }
                // Approved or waived: the step runs next, which clears the answer.
                _ => continue,
            };
            return Settlement::Record(vec![event.step(id).decision(Some(Decision::Human))]);
        }
        match record.status {
            StepStatus::Failed { next: Next::Gate } => {
                return Settlement::Gate(Box::new(gate::after_failure(step, &record, state)))
            }
            // A second failure under `on_error: skip` whose skip a crash lost: skip it now.
            StepStatus::Failed { next: Next::Skip } => {
                return Settlement::Record(vec![super::verdict::skipped_after_failure(&step.id)])
            }
            // Only reachable when a stop was journaled and the run's record was lost (a
            // crash between the two events): stop again.
            StepStatus::Failed { next: Next::Stop } => {
                return Settlement::Stop(vec![step.id.clone()])
            }
            StepStatus::Running => {
                let checks: Vec<CheckOutcome> = step
                    .postconditions
                    .iter()
                    .map(|c| evaluate(step, c))
                    .collect();
                return Settlement::Record(vec![recover(step, checks)]);
            }
            _ => {}
        }
        if let (Some(When::Findings(of)), StepStatus::Pending) = (&step.when, &record.status) {
            let source = findings::found(state, playbook, of);
            if source.phase && source.must_fix == 0 && source.finished == 0 && source.failed > 0 {
                let why = format!(
                    "No reviewer of `{of}` finished, so nothing says whether findings remain"
                );
                let evidence = format!("{} reviewer(s) of {of} failed", source.failed);
                return findings_gate(step, "no_review", &why, evidence);
            }
            // The fix before this review left the same findings: another round would too. A
            // step that always asks first (the last round's gate) needs no second question.
            if step.autonomy != Autonomy::AlwaysGate {
                if let Some(earlier) = findings::earlier_review(playbook, of) {
                    let before = findings::found(state, playbook, &earlier);
                    if findings::same(&before, &source) {
                        let why = format!("A stall across rounds: `{of}` found the same MUST-FIX findings as `{earlier}`, after a fix round");
                        return findings_gate(
                            step,
                            "stall_across_rounds",
                            &why,
                            before.findings.join("\n"),
                        );
                    }
                }
            }
            if source.must_fix == 0 {
                let reason = match source.finished {
                    0 => format!("{of} did not run"),
                    _ => format!("{of} left no open MUST-FIX finding"),
                };
                return Settlement::Record(vec![NewEvent::new(Body::StepSkipped(StepSkipped {
                    reason,
                }))
                .step(id)
                .decision(Some(Decision::Auto))]);
            }
        }
        if step.autonomy == Autonomy::Skip && record.status == StepStatus::Pending {
            return Settlement::Record(vec![NewEvent::new(Body::StepSkipped(StepSkipped {
                reason: "autonomy: skip".into(),
            }))
            .step(id)
            .decision(Some(Decision::Auto))]);
        }
        if step.autonomy == Autonomy::AlwaysGate && !record.approved {
            return Settlement::Gate(Box::new(gate::before(step, playbook, state)));
        }
        if !record.preconditions_waived && record.status == StepStatus::Pending {
            let checks: Vec<CheckOutcome> = step
                .preconditions
                .iter()
                .map(|c| evaluate(step, c))
                .collect();
            if let Some(gate) = gate::precondition(step, &checks, playbook, state) {
                return Settlement::Gate(Box::new(gate));
            }
        }
    }
    Settlement::Run
}

/// A gate before a step that reads findings, when they cannot decide for it: a human runs it
/// anyway (`continue`), skips it, looks again, or ends the run.
fn findings_gate(step: &Step, trigger: &str, why: &str, evidence: String) -> Settlement {
    Settlement::Gate(Box::new(GateRequest {
        step: step.id.clone(),
        kind: GateKind::Precondition,
        trigger: trigger.into(),
        question: format!(
            "{why}. Answer `continue` to run `{}` anyway, `skip` it, `retry` to look again, or `abort` the run.",
            step.id
        ),
        evidence,
        signals: Vec::new(),
    }))
}

/// The run's record of a stop, when the failure that caused it was journaled without it.
pub fn stopped(steps: &[String]) -> NewEvent {
    NewEvent::new(Body::RunFailed(RunFailed {
        steps: steps.to_vec(),
    }))
    .decision(Some(Decision::Auto))
}

/// A step found started but not finished (a crash) runs again: only its journaled end says
/// an attempt was done, and a killed one can leave work that passes its checks half made
/// (the module written, its tests not). What the checks found of the crashed attempt's work
/// (`diff_nonempty` on what changed since the checkpoint before its round, which the loop
/// passes in) is kept with the retry; the work stays in the worktree for the next attempt.
fn recover(step: &Step, checks: Vec<CheckOutcome>) -> NewEvent {
    let left = if checks.is_empty() {
        "it has no postcondition to show what it left"
    } else if checks.iter().all(|c| c.ok) {
        "its postconditions hold on what it left, which is no evidence it finished"
    } else {
        "its postconditions are not met"
    };
    let body = Body::Retry(Retry {
        reason: Some(format!(
            "an attempt was interrupted before its end was journaled: it runs again ({left})"
        )),
        checks,
    });
    NewEvent::new(body)
        .step(Some(step.id.clone()))
        .decision(Some(Decision::Auto))
        .trigger(Some("crash_recovery".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::decide::tests::{playbook, replay};
    use serde_json::json;

    fn everything_holds(_: &Step, check: &Check) -> CheckOutcome {
        CheckOutcome {
            check: check.to_string(),
            ok: true,
            artifact: String::new(),
            detail: "found".into(),
        }
    }

    fn nothing_holds(_: &Step, check: &Check) -> CheckOutcome {
        CheckOutcome {
            ok: false,
            detail: "missing".into(),
            ..everything_holds(&dummy(), check)
        }
    }

    fn dummy() -> Step {
        playbook("steps:\n  - {id: d, command: x, runner: shell}\n")
            .step("d")
            .cloned()
            .unwrap()
    }

    /// Settle the first unfinished phase, as the loop does.
    fn settle_all(p: &Playbook, state: &RunState, holds: bool) -> Settlement {
        let phase = p
            .phases
            .iter()
            .find(|phase| phase.steps.iter().any(|s| !state.finished(&s.id)))
            .unwrap();
        let pending: Vec<&Step> = phase
            .steps
            .iter()
            .filter(|s| !state.finished(&s.id))
            .collect();
        let mut evaluate = if holds {
            everything_holds
        } else {
            nothing_holds
        };
        settle(p, state, &pending, &mut evaluate)
    }

    fn names(events: &[NewEvent]) -> Vec<&str> {
        events.iter().map(|e| e.name()).collect()
    }

    const FAN_OUT: &str = "steps:\n  - phase: review-1\n    parallel:\n      - {id: review-1-a, command: a, runner: shell, on_error: skip}\n      - {id: review-1-b, command: b, runner: shell, on_error: skip}\n  - {id: fix-1, command: fix, runner: shell, when: {findings: review-1}}\n";

    #[test]
    fn a_round_no_reviewer_finished_goes_to_a_human_and_one_that_did_decides() {
        let p = playbook(FAN_OUT);
        let failed = |id: &'static str| {
            [
                (
                    "step_failed",
                    id,
                    json!({"reason": "exit 1", "next": "skip"}),
                ),
                ("step_skipped", id, json!({"reason": "failed twice"})),
            ]
        };
        let none: Vec<_> = failed("review-1-a")
            .into_iter()
            .chain(failed("review-1-b"))
            .collect();
        match settle_all(&p, &replay(&none), true) {
            Settlement::Gate(g) => {
                assert_eq!(g.step, "fix-1");
                assert_eq!(g.trigger, "no_review");
            }
            other => panic!("{other:?}"),
        }
        // One reviewer finished with no finding: the fix is skipped, as for one reviewer.
        let mut one: Vec<_> = failed("review-1-a").into_iter().collect();
        one.push(("step_completed", "review-1-b", json!({"must_fix": 0})));
        match settle_all(&p, &replay(&one), true) {
            Settlement::Record(events) => assert_eq!(names(&events), ["step_skipped"]),
            other => panic!("{other:?}"),
        }
        // A second failure whose skip a crash lost is skipped on resume.
        let lost = [(
            "step_failed",
            "review-1-a",
            json!({"reason": "exit 1", "next": "skip"}),
        )];
        match settle_all(&p, &replay(&lost), true) {
            Settlement::Record(events) => assert_eq!(names(&events), ["step_skipped"]),
            other => panic!("{other:?}"),
        }
    }

    const ROUNDS: &str = "steps:\n  - {id: review-1, command: r, runner: shell}\n  - {id: fix-1, command: f, runner: shell, when: {findings: review-1}}\n  - {id: review-2, command: r, runner: shell, when: {findings: review-1}}\n  - {id: fix-2, command: f, runner: shell, when: {findings: review-2}}\n";

    #[test]
    fn the_same_findings_after_a_fix_round_are_a_stall_a_human_looks_at() {
        let p = playbook(ROUNDS);
        let rounds = |second: &str| {
            replay(&[
                (
                    "step_completed",
                    "review-1",
                    json!({"must_fix": 1, "findings": ["- [ ] [High] no timeout"]}),
                ),
                ("step_completed", "fix-1", json!({})),
                (
                    "step_completed",
                    "review-2",
                    json!({"must_fix": 1, "findings": [second]}),
                ),
            ])
        };
        match settle_all(&p, &rounds("[high]  No timeout"), true) {
            Settlement::Gate(g) => {
                assert_eq!(g.step, "fix-2");
                assert_eq!(g.trigger, "stall_across_rounds");
                assert!(g.evidence.contains("no timeout"), "{g:?}");
            }
            other => panic!("{other:?}"),
        }
        // Other findings: the next fix round runs.
        assert!(matches!(
            settle_all(&p, &rounds("[High] retries unbounded"), true),
            Settlement::Run
        ));
    }

    const TWO_STEPS: &str = "steps:\n  - {id: plan, command: x, runner: shell, preconditions: [spec_exists], postconditions: [plan_exists]}\n  - {id: pr, command: y, runner: shell, autonomy: always_gate}\n";

    #[test]
    fn a_fresh_run_with_its_preconditions_met_runs() {
        let p = playbook(TWO_STEPS);
        assert!(matches!(
            settle_all(&p, &RunState::default(), true),
            Settlement::Run
        ));
    }

    #[test]
    fn an_unmet_precondition_opens_a_gate_before_anything_runs() {
        let p = playbook(TWO_STEPS);
        let Settlement::Gate(gate) = settle_all(&p, &RunState::default(), false) else {
            panic!("no gate")
        };
        assert_eq!(
            (gate.step.as_str(), gate.kind),
            ("plan", GateKind::Precondition)
        );
    }

    #[test]
    fn an_always_gate_step_waits_for_approval_and_runs_after_it() {
        let p = playbook(TWO_STEPS);
        let plan_done = [
            ("step_started", "plan", json!({"attempt": 1})),
            ("step_completed", "plan", json!({})),
        ];
        let Settlement::Gate(gate) = settle_all(&p, &replay(&plan_done), true) else {
            panic!("no gate")
        };
        assert_eq!((gate.step.as_str(), gate.kind), ("pr", GateKind::Before));
        let mut approved = plan_done.to_vec();
        approved.push(("gate_opened", "pr", json!({"kind": "before"})));
        approved.push(("gate_answered", "pr", json!({"answer": "continue"})));
        assert!(matches!(
            settle_all(&p, &replay(&approved), true),
            Settlement::Run
        ));
    }

    #[test]
    fn answers_become_events() {
        let p = playbook(TWO_STEPS);
        let failed = [
            ("step_started", "plan", json!({"attempt": 1})),
            (
                "step_failed",
                "plan",
                json!({"next": "gate", "reason": "failed: x"}),
            ),
            ("gate_opened", "plan", json!({"kind": "after"})),
        ];
        let answered = |answer: &str| {
            let mut events = failed.to_vec();
            events.push(("gate_answered", "plan", json!({"answer": answer})));
            settle_all(&p, &replay(&events), true)
        };
        let Settlement::Record(events) = answered("continue") else {
            panic!()
        };
        assert_eq!(names(&events), ["step_completed"]);
        assert_eq!(events[0].body().detail()["after"], "failed: x");
        let Settlement::Record(events) = answered("retry") else {
            panic!()
        };
        assert_eq!(names(&events), ["retry"]);
        let Settlement::Record(events) = answered("skip") else {
            panic!()
        };
        assert_eq!(names(&events), ["step_skipped"]);
        assert!(matches!(answered("abort"), Settlement::Abort(_)));
        // Unanswered, the failure opens the gate (again, after a crash).
        assert!(matches!(
            settle_all(&p, &replay(&failed[..2]), true),
            Settlement::Gate(gate) if gate.kind == GateKind::After
        ));
    }

    #[test]
    fn a_crashed_step_runs_again_whatever_its_postconditions_say() {
        let p = playbook(TWO_STEPS);
        let crashed = replay(&[("step_started", "plan", json!({"attempt": 1}))]);
        for holds in [true, false] {
            let Settlement::Record(events) = settle_all(&p, &crashed, holds) else {
                panic!()
            };
            assert_eq!(names(&events), ["retry"]);
            let reason = events[0].body().detail()["reason"].clone();
            assert!(
                reason.as_str().unwrap().contains("it runs again"),
                "{reason}"
            );
        }
    }

    #[test]
    fn skip_steps_are_skipped_and_stops_stop_again() {
        let p = playbook("steps:\n  - {id: lint, command: x, runner: shell, autonomy: skip}\n");
        let Settlement::Record(events) = settle_all(&p, &RunState::default(), true) else {
            panic!()
        };
        assert_eq!(names(&events), ["step_skipped"]);
        let stopped = replay(&[("step_failed", "lint", json!({"next": "stop"}))]);
        assert!(matches!(settle_all(&p, &stopped, true), Settlement::Stop(s) if s == ["lint"]));
    }
}

//! What an attempt came to: done, failed (and what follows from the step's error policy),
//! or handed to a human by one of its escalation triggers.

use super::super::attempt::Attempt;
use super::super::playbook::{Autonomy, ErrorPolicy, Trigger};
use crate::policy::secrets::redact;
use crate::session::run_state::StepState;
use crate::session::schema::{Body, Next, Retry, StallDetected};
use crate::session::{Decision, NewEvent};

/// The events that record an attempt, in order, and whether they stop the run.
#[derive(Debug)]
pub struct Verdict {
    /// What to journal.
    pub events: Vec<NewEvent>,
    /// The step failed under a `stop` policy.
    pub stops: bool,
}

/// Judge an attempt against its step's policy and the step's record before it.
pub fn judge(attempt: &Attempt<'_>, record: &StepState) -> Verdict {
    let step = attempt.step;
    let mut outcome = attempt.outcome();
    let event = |body: Body| {
        NewEvent::new(body)
            .step(Some(step.id.clone()))
            .duration_ms(Some(attempt.duration_ms()))
    };
    let goes_on = |events: Vec<NewEvent>| Verdict {
        events,
        stops: false,
    };
    if attempt.interrupted() {
        outcome.next = Some(Next::Retry);
        outcome.reason = Some("interrupted".into());
        return goes_on(vec![event(Body::StepFailed(outcome))
            .decision(Some(Decision::Human))
            .trigger(Some("interrupted".into()))]);
    }
    let reasons = attempt.failures();
    let evidence = attempt.evidence(&reasons);
    // Stopped at the dollars it was given: the run stops at its budget, and the step runs
    // again when there is more; there is nothing for a human to accept as done.
    if attempt.budget_spent() {
        outcome.next = Some(Next::Retry);
        outcome.reason = Some("stopped at its share of the budget".into());
        outcome.evidence = Some(redact(&evidence));
        return Verdict {
            events: vec![event(Body::StepFailed(outcome))
                .decision(Some(Decision::Auto))
                .trigger(Some("budget".into()))],
            stops: true,
        };
    }
    if reasons.is_empty() {
        let gate_breaking = attempt.breaking_change()
            && (step.autonomy == Autonomy::GateOnBreaking
                || step.escalate_on.contains(&Trigger::AgreementBreakingChange));
        if !gate_breaking {
            return goes_on(vec![
                event(Body::StepCompleted(outcome)).decision(Some(Decision::Auto))
            ]);
        }
        outcome.next = Some(Next::Gate);
        outcome.reason = Some("reported a breaking change".into());
        outcome.evidence = Some(evidence);
        return goes_on(vec![event(Body::Escalated(outcome))
            .decision(Some(Decision::Escalated))
            .trigger(Some(Trigger::AgreementBreakingChange.as_str().into()))]);
    }
    // A reason quotes what the agent did (a denied command, with its arguments): redacted,
    // like everything bound for the journal.
    let reason = redact(
        &reasons
            .iter()
            .map(|(_, r)| r.as_str())
            .collect::<Vec<_>>()
            .join("; "),
    );
    outcome.reason = Some(format!("failed: {reason}"));
    outcome.evidence = Some(redact(&evidence));
    if let Some((trigger, _)) = reasons
        .iter()
        .find(|(t, _)| *t == Trigger::PolicyViolation || step.escalate_on.contains(t))
    {
        outcome.next = Some(Next::Gate);
        return goes_on(vec![event(Body::Escalated(outcome))
            .decision(Some(Decision::Escalated))
            .trigger(Some(trigger.as_str().into()))]);
    }
    // A stall escalates, except under `skip`, whose second failure ends in a skip anyway.
    if step.on_error != ErrorPolicy::Skip
        && record.last_hash.as_deref() == Some(attempt.hash.as_str())
    {
        outcome.next = Some(Next::Gate);
        outcome.reason = Some(format!(
            "failed twice in a row with the same output and the same changes (a stall): {reason}"
        ));
        return goes_on(vec![
            event(Body::StepFailed(outcome))
                .decision(Some(Decision::Escalated))
                .trigger(Some("stall".into())),
            NewEvent::new(Body::StallDetected(StallDetected {
                hash: attempt.hash.clone(),
                attempt: attempt.number,
            }))
            .step(Some(step.id.clone()))
            .decision(Some(Decision::Escalated)),
        ]);
    }
    let next = match step.on_error {
        ErrorPolicy::Stop => Next::Stop,
        ErrorPolicy::RetryOnce if record.auto_retries == 0 => Next::Retry,
        ErrorPolicy::RetryOnce => Next::Stop,
        ErrorPolicy::Gate => Next::Gate,
        ErrorPolicy::Skip if record.auto_retries == 0 => Next::Retry,
        ErrorPolicy::Skip => Next::Skip,
    };
    outcome.next = Some(next);
    outcome.policy = Some(step.on_error.as_str().to_owned());
    let decision = match next {
        Next::Gate => Decision::Escalated,
        _ => Decision::Auto,
    };
    let mut events = vec![event(Body::StepFailed(outcome))
        .decision(Some(decision))
        .trigger(Some(reasons[0].0.as_str().to_owned()))];
    if next == Next::Retry {
        events.push(
            NewEvent::new(Body::Retry(Retry::default()))
                .step(Some(step.id.clone()))
                .decision(Some(Decision::Auto))
                .trigger(Some("retry_once".into())),
        );
    }
    if next == Next::Skip {
        events.push(skipped_after_failure(&step.id));
    }
    Verdict {
        events,
        stops: next == Next::Stop,
    }
}

/// The skip that follows a second failure under `on_error: skip`.
pub fn skipped_after_failure(step: &str) -> NewEvent {
    NewEvent::new(Body::StepSkipped(crate::session::schema::StepSkipped {
        reason: "failed twice; skipped by its error policy (on_error: skip)".into(),
    }))
    .step(Some(step.to_owned()))
    .decision(Some(Decision::Auto))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{AgentResult, Captured, Exit, Kind};
    use crate::supervisor::checks::CheckOutcome;
    use crate::supervisor::decide::tests::step;

    /// A shell step that printed `stdout` and ended with `exit`, read as the runner reads it.
    fn ran(exit: Exit, stdout: &str) -> AgentResult {
        let shell = Kind::parse("shell").unwrap();
        let stdout = Captured::from_bytes(stdout.as_bytes());
        crate::runner::interpret(shell, exit, stdout, Captured::default(), 5)
    }

    fn attempt<'s>(
        step: &'s crate::supervisor::playbook::Step,
        result: AgentResult,
        checks: Vec<CheckOutcome>,
    ) -> Attempt<'s> {
        Attempt {
            step,
            number: 1,
            result: Ok(result),
            checks,
            hash: "h".into(),
            changed: 1,
            violations: Vec::new(),
            spend: Default::default(),
        }
    }

    #[test]
    fn a_step_stopped_at_its_budget_stops_the_run_and_is_run_again_never_gated() {
        let gated = step("on_error: gate");
        let claude = Kind::parse("claude").unwrap();
        let stdout = r#"{"type":"result","subtype":"error_max_budget_usd","is_error":true,"total_cost_usd":0.01}"#;
        let result = crate::runner::interpret(
            claude,
            Exit::Code(1),
            Captured::from_bytes(stdout.as_bytes()),
            Captured::default(),
            5,
        );
        let verdict = judge(&attempt(&gated, result, Vec::new()), &StepState::default());
        assert!(verdict.stops);
        assert_eq!(verdict.events.len(), 1);
        let Body::StepFailed(failed) = verdict.events[0].body() else {
            panic!("{:?}", verdict.events[0]);
        };
        assert_eq!(failed.next, Some(Next::Retry));
        assert_eq!(
            failed.reason.as_deref(),
            Some("stopped at its share of the budget")
        );
    }

    #[test]
    fn a_token_in_what_the_agent_did_is_redacted_from_the_reason_and_the_evidence() {
        let token = format!("ghp_{}", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8");
        let gated = step("escalate_on: [policy_violation]");
        let mut tried = attempt(&gated, ran(Exit::Code(0), "ok"), Vec::new());
        tried.violations = vec![format!(
            "guard refused `gh auth login --with-token {token}`"
        )];
        let verdict = judge(&tried, &StepState::default());
        let stored = format!("{:?}", verdict.events);
        assert!(stored.contains("guard refused"), "{stored}");
        assert!(!stored.contains(&token), "{stored}");
    }

    fn kinds(verdict: &Verdict) -> Vec<&str> {
        verdict.events.iter().map(|e| e.name()).collect()
    }

    fn missing(check: &str) -> CheckOutcome {
        CheckOutcome {
            check: check.into(),
            ok: false,
            artifact: "plan.md".into(),
            detail: "missing".into(),
        }
    }

    #[test]
    fn a_clean_attempt_is_done() {
        let s = step("");
        let verdict = judge(
            &attempt(&s, ran(Exit::Code(0), "ok"), vec![]),
            &StepState::default(),
        );
        assert_eq!(kinds(&verdict), ["step_completed"]);
        assert!(!verdict.stops);
    }

    #[test]
    fn a_zero_exit_with_an_unmet_postcondition_is_not_done() {
        let s = step("on_error: stop");
        let a = attempt(
            &s,
            ran(Exit::Code(0), "all done!"),
            vec![missing("plan_exists")],
        );
        let verdict = judge(&a, &StepState::default());
        assert_eq!(kinds(&verdict), ["step_failed"]);
        assert!(verdict.stops);
        let detail = verdict.events[0].body().detail();
        assert_eq!(detail["next"], "stop");
        assert!(detail["reason"]
            .as_str()
            .is_some_and(|r| r.contains("postcondition plan_exists failed: missing")));
    }

    #[test]
    fn retry_once_retries_once_then_stops() {
        let s = step("on_error: retry_once");
        let a = attempt(&s, ran(Exit::Code(1), ""), vec![]);
        let first = judge(&a, &StepState::default());
        assert_eq!(kinds(&first), ["step_failed", "retry"]);
        assert!(!first.stops);
        let retried = StepState {
            auto_retries: 1,
            ..Default::default()
        };
        let second = judge(&a, &retried);
        assert_eq!(kinds(&second), ["step_failed"]);
        assert!(second.stops);
    }

    #[test]
    fn the_same_failure_twice_is_a_stall_for_a_human() {
        let s = step("on_error: retry_once");
        let a = attempt(&s, ran(Exit::Code(1), ""), vec![]);
        let before = StepState {
            last_hash: Some("h".into()),
            ..Default::default()
        };
        let verdict = judge(&a, &before);
        assert_eq!(kinds(&verdict), ["step_failed", "stall_detected"]);
        assert_eq!(verdict.events[0].body().detail()["next"], "gate");
    }

    #[test]
    fn escalation_triggers_and_breaking_changes_open_gates() {
        let s = step("escalate_on: [subagent_error]");
        let verdict = judge(
            &attempt(&s, ran(Exit::Code(2), ""), vec![]),
            &StepState::default(),
        );
        assert_eq!(kinds(&verdict), ["escalated"]);

        let s = step("autonomy: gate_on_breaking");
        let mut r = ran(Exit::Code(0), "changed the API");
        r.breaking_change = true;
        let verdict = judge(&attempt(&s, r, vec![]), &StepState::default());
        assert_eq!(kinds(&verdict), ["escalated"]);
        assert_eq!(
            verdict.events[0].body().detail()["reason"],
            "reported a breaking change"
        );
    }

    #[test]
    fn a_step_that_must_judge_fails_without_a_verdict() {
        let s = step("verdict: required\nescalate_on: [verdict_missing]");
        let silent = judge(
            &attempt(&s, ran(Exit::Code(0), "all good"), vec![]),
            &StepState::default(),
        );
        assert_eq!(kinds(&silent), ["escalated"]);
        assert_eq!(silent.events[0].body().detail()["next"], "gate");
        let judged = judge(
            &attempt(&s, ran(Exit::Code(0), "all good\nVERDICT: PASS"), vec![]),
            &StepState::default(),
        );
        assert_eq!(kinds(&judged), ["step_completed"]);
        // Without `verdict: required`, silence is no failure.
        let plain = step("");
        let quiet = judge(
            &attempt(&plain, ran(Exit::Code(0), "ok"), vec![]),
            &StepState::default(),
        );
        assert_eq!(kinds(&quiet), ["step_completed"]);
    }

    #[test]
    fn a_policy_violation_gates_whatever_the_error_policy() {
        let s = step("on_error: stop");
        let mut a = attempt(&s, ran(Exit::Code(0), "done\n"), vec![]);
        a.violations = vec!["pre-push refused refs/heads/main (no-force-push)".into()];
        let v = judge(&a, &StepState::default());
        assert_eq!(kinds(&v), ["escalated"]);
        assert!(!v.stops);
        let Body::Escalated(outcome) = v.events[0].body() else {
            panic!("not an escalation");
        };
        assert!(outcome.reason.as_deref().unwrap().contains("no-force-push"));
    }

    #[test]
    fn an_interrupted_attempt_runs_again() {
        let s = step("");
        let verdict = judge(
            &attempt(&s, ran(Exit::Interrupted, ""), vec![]),
            &StepState::default(),
        );
        assert_eq!(kinds(&verdict), ["step_failed"]);
        assert_eq!(verdict.events[0].body().detail()["next"], "retry");
        assert!(!verdict.stops);
    }
}

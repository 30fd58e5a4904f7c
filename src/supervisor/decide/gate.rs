//! Gates: the question a human is asked, what they are shown, and how sure the run is that
//! going on is right.

use super::super::playbook::{Playbook, Step};
use crate::bmad::analysis::confidence;
use crate::policy::secrets::redact;
use crate::session::run_state::{Answer, GateKind, RunState, StepState, StepStatus};
use crate::session::schema::{Body, GateOpened};
use crate::session::{Decision, NewEvent};
use crate::text::first_line_within;

/// A gate to open at a step.
#[derive(Clone, Debug, PartialEq)]
pub struct GateRequest {
    /// The step.
    pub step: String,
    /// Why it opens.
    pub kind: GateKind,
    /// What caused it.
    pub trigger: String,
    /// The question for the human.
    pub question: String,
    /// What happened, for the human.
    pub evidence: String,
    /// What bears on going on, for the confidence score.
    pub signals: Vec<(confidence::Signal, f64)>,
}

impl GateRequest {
    /// The `gate_opened` event. Below the project's escalation threshold (0–1) a gate is
    /// shown in full, whatever the score's own format says.
    pub fn opened(&self, escalation_threshold: f64) -> NewEvent {
        let mut confidence = confidence::confidence(&self.signals);
        if confidence.score < escalation_threshold * 100.0 {
            confidence.checkpoint_format = confidence::Format::Full;
        }
        let decision = if self.kind == GateKind::Before {
            Decision::Auto
        } else {
            Decision::Escalated
        };
        NewEvent::new(Body::GateOpened(GateOpened {
            kind: self.kind,
            question: redact(&self.question),
            evidence: redact(&self.evidence),
            options: self.kind.options().to_vec(),
            confidence: serde_json::to_value(&confidence).unwrap_or_default(),
        }))
        .step(Some(self.step.clone()))
        .decision(Some(decision))
        .trigger(Some(self.trigger.clone()))
    }
}

/// After a failure or escalation: the human decides whether the step is done.
pub fn after_failure(step: &Step, record: &StepState, state: &RunState) -> GateRequest {
    let (trigger, reason, evidence) = record.last_failure.clone().unwrap_or_default();
    GateRequest {
        step: step.id.clone(),
        kind: GateKind::After,
        trigger,
        question: format!(
            "Step `{}` ({}) {reason}. Fix what is needed and answer `continue` to accept the step as done, `retry` to run it again, `skip` it, or `abort` the run.",
            step.id,
            first_line_within(&step.command, 60)
        ),
        evidence,
        signals: signals(0.0, state),
    }
}

/// Before an `always_gate` step: the human approves running it.
pub fn before(step: &Step, playbook: &Playbook, state: &RunState) -> GateRequest {
    let finished: Vec<StepState> = playbook
        .steps()
        .filter(|s| state.finished(&s.id))
        .map(|s| state.step(&s.id))
        .collect();
    let total = playbook.steps().count();
    // The share of finished steps that finished cleanly.
    let clean = finished
        .iter()
        .filter(|s| s.status == StepStatus::Done && s.last_failure.is_none())
        .count();
    let verdict = if finished.is_empty() {
        1.0
    } else {
        clean as f64 / finished.len() as f64
    };
    GateRequest {
        step: step.id.clone(),
        kind: GateKind::Before,
        trigger: "always_gate".into(),
        question: format!(
            "Step `{}` ({}) needs your approval before it runs{}. {}/{total} steps are done. Answer `continue` to run it, `skip` it, or `abort` the run.",
            step.id,
            first_line_within(&step.command, 60),
            step.description.as_deref().map(|d| format!(": {d}")).unwrap_or_default(),
            finished.len(),
        ),
        evidence: summary(playbook, state),
        signals: signals(verdict, state),
    }
}

/// The journal holds events git-bmad did not write (`forged`, one line each): before the
/// next step runs, a human looks. The forged events are already ignored by every replay.
pub fn forged_journal(step: &Step, forged: &[String], state: &RunState) -> GateRequest {
    GateRequest {
        step: step.id.clone(),
        kind: GateKind::Before,
        trigger: "policy_violation".into(),
        question: format!(
            "The journal holds {} event(s) git-bmad did not write (something wrote its notes behind its back); they are ignored. Check the session (`git bmad doctor`), then answer `continue` to run step `{}`, `skip` it, or `abort` the run.",
            forged.len(),
            step.id
        ),
        evidence: forged.join("\n"),
        signals: signals(0.0, state),
    }
}

/// Refs of the session's record (`moved`) hold what git-bmad did not write, perhaps with
/// journal lines it did not write either (`forged`): the run waits for a human before `step`.
pub fn moved_record(
    step: &Step,
    moved: &[String],
    forged: &[String],
    state: &RunState,
) -> GateRequest {
    GateRequest {
        step: step.id.clone(),
        kind: GateKind::Before,
        trigger: "policy_violation".into(),
        question: format!(
            "Something other than git-bmad moved {} ref(s) of this session's record (its journal or checkpoints).{} Put git-bmad's record back with the command shown, or check the session (`git bmad doctor`); then answer `continue` to run step `{}` on the record as it is, `skip` it, or `abort` the run.",
            moved.len(),
            if forged.is_empty() {
                String::new()
            } else {
                format!(
                    " The journal holds {} event(s) git-bmad did not write; they are ignored.",
                    forged.len()
                )
            },
            step.id
        ),
        evidence: moved.iter().chain(forged).cloned().collect::<Vec<_>>().join("\n"),
        signals: signals(0.0, state),
    }
}

/// A precondition is not met: the human creates it, waives it, or skips the step.
/// `checks` are the step's preconditions, evaluated; at least one is unmet.
pub fn precondition(
    step: &Step,
    checks: &[crate::supervisor::CheckOutcome],
    playbook: &Playbook,
    state: &RunState,
) -> Option<GateRequest> {
    let unmet: Vec<_> = checks.iter().filter(|c| !c.ok).collect();
    let first = unmet.first()?;
    let met = checks.len() - unmet.len();
    Some(GateRequest {
        step: step.id.clone(),
        kind: GateKind::Precondition,
        trigger: "precondition_unmet".into(),
        question: format!(
            "Step `{}` cannot start: precondition {} is not met ({}){}. Create it and answer `retry`, `continue` to run the step anyway, `skip` it, or `abort` the run.",
            step.id,
            first.check,
            first.detail,
            producer_of(playbook, state, step, &first.check)
        ),
        evidence: unmet
            .iter()
            .map(|o| format!("{}: {}", o.check, o.detail))
            .collect::<Vec<_>>()
            .join("\n"),
        signals: signals(met as f64 / checks.len().max(1) as f64, state),
    })
}

/// What the run knows that bears on going on past a gate, as confidence signals (seed
/// 2b.11), which choose how the gate is shown. Verdict: a failure is 0; before a
/// step, the share of finished steps that finished cleanly; for preconditions, the share
/// met. Memory: the share of the human's earlier answers in this run that were `continue` —
/// a human who keeps approving needs less shown. One signal alone is capped at 60, so a gate
/// is never shown minimally on the run's word only.
fn signals(verdict: f64, state: &RunState) -> Vec<(confidence::Signal, f64)> {
    let mut signals = vec![(confidence::Signal::Verdict, verdict)];
    let answers = &state.answers;
    if !answers.is_empty() {
        let approved = answers.iter().filter(|a| **a == Answer::Continue).count();
        signals.push((
            confidence::Signal::Memory,
            approved as f64 / answers.len() as f64,
        ));
    }
    signals
}

/// Which earlier step should have produced what a precondition wants, and what became of it.
fn producer_of(playbook: &Playbook, state: &RunState, step: &Step, check: &str) -> String {
    let producer = playbook
        .steps()
        .take_while(|s| s.id != step.id)
        .filter(|s| s.postconditions.iter().any(|c| c.to_string() == check))
        .last();
    match producer {
        Some(p) => {
            let what = match &state.step(&p.id).status {
                StepStatus::Skipped => "it was skipped".to_owned(),
                StepStatus::Done => "it ran, but the artifact is gone".to_owned(),
                other => format!("it is {}", status_word(other)),
            };
            format!("; step `{}` should have produced it, and {what}", p.id)
        }
        None => "; no earlier step produces it, so it must exist before the run".to_owned(),
    }
}

/// Every step and where it stands, one line each.
fn summary(playbook: &Playbook, state: &RunState) -> String {
    playbook
        .steps()
        .map(|s| format!("{}: {}", s.id, status_word(&state.step(&s.id).status)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn status_word(status: &StepStatus) -> String {
    match status {
        StepStatus::Pending => "pending".into(),
        StepStatus::Running => "in progress".into(),
        StepStatus::Done => "done".into(),
        StepStatus::Skipped => "skipped".into(),
        StepStatus::Failed { next } => format!("failed ({})", next.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::decide::tests::{playbook, replay};
    use crate::supervisor::CheckOutcome;

    fn check(name: &str, ok: bool) -> CheckOutcome {
        CheckOutcome {
            check: name.into(),
            ok,
            artifact: String::new(),
            detail: if ok { "found" } else { "missing" }.into(),
        }
    }

    #[test]
    fn a_precondition_gate_names_the_step_that_should_have_made_it() {
        let p = playbook(
            "steps:\n  - {id: plan, command: x, runner: shell, postconditions: [plan_exists]}\n  - {id: tasks, command: y, runner: shell, preconditions: [spec_exists, plan_exists]}\n",
        );
        let state = replay(&[("step_skipped", "plan", serde_json::json!({}))]);
        let tasks = p.step("tasks").unwrap();
        let gate = precondition(
            tasks,
            &[check("spec_exists", true), check("plan_exists", false)],
            &p,
            &state,
        )
        .unwrap();
        assert_eq!(gate.kind, GateKind::Precondition);
        assert!(
            gate.question
                .contains("step `plan` should have produced it, and it was skipped"),
            "{}",
            gate.question
        );
        assert_eq!(gate.signals, [(confidence::Signal::Verdict, 0.5)]);
        assert!(precondition(tasks, &[check("spec_exists", true)], &p, &state).is_none());
    }

    #[test]
    fn a_low_score_is_shown_in_full_and_a_human_who_approves_earns_trust() {
        let p =
            playbook("steps:\n  - {id: pr, command: x, runner: shell, autonomy: always_gate}\n");
        let fresh = before(p.step("pr").unwrap(), &p, &RunState::default());
        // One signal alone is capped at 60: below an 0.8 threshold, in full.
        let event = fresh.opened(0.8);
        let detail = event.body().detail();
        assert_eq!(detail["confidence"]["checkpoint_format"], "full");
        assert_eq!(
            detail["options"],
            serde_json::json!(["continue", "skip", "abort"])
        );

        let trusting = RunState {
            answers: vec![Answer::Continue, Answer::Continue],
            ..Default::default()
        };
        let gate = before(p.step("pr").unwrap(), &p, &trusting);
        assert!(gate.signals.contains(&(confidence::Signal::Memory, 1.0)));
        assert_ne!(
            gate.opened(0.0).body().detail()["confidence"]["checkpoint_format"],
            "full"
        );
    }
}

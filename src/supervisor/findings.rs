//! What a step that reads findings (`when: {findings: X}`) is given: the MUST-FIX findings
//! of step X, or, when X is a parallel phase (several reviewers at once, each on its own),
//! those of every reviewer that finished, merged, a finding several reviewers report
//! counted once.

use std::collections::HashSet;

use super::playbook::Playbook;
use crate::session::run_state::{RunState, StepStatus};

/// The findings of a step or a phase.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// It is a parallel phase of several reviewers.
    pub phase: bool,
    /// Reviewers (steps) that finished.
    pub finished: usize,
    /// Reviewers that failed (and so were skipped or wait for a human).
    pub failed: usize,
    /// Open MUST-FIX findings, duplicates counted once.
    pub must_fix: u32,
    /// Those findings, in the reviewers' order.
    pub findings: Vec<String>,
}

/// The findings of `of`: a step, or a parallel phase of the playbook.
pub fn found(state: &RunState, playbook: &Playbook, of: &str) -> Found {
    let phase = playbook.phases.iter().find(|p| p.parallel && p.id == of);
    let ids: Vec<&str> = match phase {
        Some(phase) => phase.steps.iter().map(|s| s.id.as_str()).collect(),
        None => vec![of],
    };
    let mut out = Found {
        phase: phase.is_some(),
        ..Found::default()
    };
    let mut seen = HashSet::new();
    let mut reported = 0u32;
    let mut duplicates = 0u32;
    for id in ids {
        let step = state.step(id);
        match step.status {
            StepStatus::Done => {
                out.finished += 1;
                reported += step.must_fix.unwrap_or(0);
                for finding in step.findings {
                    if seen.insert(normalise(&finding)) {
                        out.findings.push(finding);
                    } else {
                        duplicates += 1;
                    }
                }
            }
            StepStatus::Skipped | StepStatus::Failed { .. } if step.last_failure.is_some() => {
                out.failed += 1;
            }
            _ => {}
        }
    }
    out.must_fix = reported.saturating_sub(duplicates);
    out
}

/// The step or phase whose findings `of` was run on, when `of` itself runs only while an
/// earlier one has findings (a re-review after a fix round): the earlier review.
pub fn earlier_review(playbook: &Playbook, of: &str) -> Option<String> {
    let when = match playbook.phases.iter().find(|p| p.parallel && p.id == of) {
        Some(phase) => phase.steps.first()?.when.clone(),
        None => playbook.step(of)?.when.clone(),
    };
    let super::playbook::When::Findings(earlier) = when?;
    Some(earlier)
}

/// Two reviews found the same MUST-FIX findings (as compared: checkbox, case and spacing
/// aside), and at least one.
pub fn same(a: &Found, b: &Found) -> bool {
    let set = |f: &Found| {
        f.findings
            .iter()
            .map(|x| normalise(x))
            .collect::<HashSet<_>>()
    };
    !a.findings.is_empty() && set(a) == set(b)
}

/// A finding as compared: case, spacing and its list checkbox (`- [ ]`, `- [x]`) left out.
fn normalise(finding: &str) -> String {
    let text = finding.trim_start().trim_start_matches("- ").trim_start();
    let text = ["[ ]", "[x]", "[X]"]
        .iter()
        .find_map(|b| text.strip_prefix(b))
        .unwrap_or(text);
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::decide::tests::{playbook, replay};
    use serde_json::json;

    const FAN_OUT: &str = "steps:\n  - phase: review-1\n    parallel:\n      - {id: review-1-a, command: a, on_error: skip}\n      - {id: review-1-b, command: b, on_error: skip}\n      - {id: review-1-c, command: c, on_error: skip}\n  - {id: fix-1, command: fix, when: {findings: review-1}}\n";

    #[test]
    fn a_phase_of_reviewers_merges_their_findings_and_counts_a_shared_one_once() {
        let p = playbook(FAN_OUT);
        let state = replay(&[
            (
                "step_completed",
                "review-1-a",
                json!({"must_fix": 2, "findings": ["[High] no timeout [a.rs:1]", "[Med] naming"]}),
            ),
            (
                "step_completed",
                "review-1-b",
                json!({"must_fix": 1, "findings": ["[high]  no timeout [a.rs:1]"]}),
            ),
            (
                "step_failed",
                "review-1-c",
                json!({"reason": "exit 1", "next": "skip"}),
            ),
            (
                "step_skipped",
                "review-1-c",
                json!({"reason": "failed twice"}),
            ),
        ]);
        let f = found(&state, &p, "review-1");
        assert_eq!(f.finished, 2);
        assert_eq!(f.failed, 1);
        assert_eq!(f.must_fix, 2);
        assert_eq!(f.findings, ["[High] no timeout [a.rs:1]", "[Med] naming"]);
        // A plain step is read as it is.
        assert_eq!(found(&state, &p, "review-1-b").must_fix, 1);
    }

    #[test]
    fn findings_compare_without_their_checkbox_case_or_spacing() {
        assert_eq!(
            normalise("- [ ] [High] XSS  in the form"),
            normalise("[high] xss in the form")
        );
        assert_eq!(normalise("- [x] xss"), "xss");
        assert_ne!(normalise("[High] a"), normalise("[High] b"));
    }
}

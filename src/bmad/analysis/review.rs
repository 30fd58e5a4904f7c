//! A BMAD Senior Developer Review, read into a verdict and findings (seed 000, story 5.13).
//!
//! Outcome: Approve → go on; Changes Requested → fix and review again; Blocked → a human.
//! Findings come from `[AI-Review][Severity]` follow-ups and `[Severity]` action items, with
//! `[file:line]` locations; Critical and Important are MUST-FIX. The code-review workflow
//! asks for 3–10 specific problems and a 19-item checklist: both are reported.

use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

/// The review's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Approve.
    Approve,
    /// Changes Requested.
    ChangesRequested,
    /// Blocked.
    Blocked,
    /// No outcome line.
    Unknown,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// As written: Critical, High, Important, Medium, Low…
    pub severity: String,
    /// Critical or Important.
    pub must_fix: bool,
    /// What is wrong (and the fix, when the reviewer wrote one).
    pub text: String,
    /// `file:line`.
    pub location: Option<String>,
    /// Already fixed (checked).
    pub done: bool,
}

/// A review, read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Review {
    /// The outcome.
    pub outcome: Outcome,
    /// What follows from it.
    pub next: &'static str,
    /// The findings.
    pub findings: Vec<Finding>,
    /// Open MUST-FIX findings.
    pub must_fix_open: usize,
    /// Whether the reviewer found 3–10 specific problems, as the workflow demands.
    pub adversarial_count_ok: bool,
    /// Checked and total items of the review checklist, if the review has one.
    pub checklist: Option<(usize, usize)>,
    /// Whether that checklist has the 19 items of BMAD's code-review checklist.
    pub checklist_complete: bool,
}

/// The number of items in BMAD's code-review checklist.
pub const CHECKLIST_ITEMS: usize = 19;

/// Read a review document.
pub fn parse(text: &str) -> Review {
    static ITEM: OnceLock<Regex> = OnceLock::new();
    let item = ITEM.get_or_init(|| {
        Regex::new(r"^\s*[-*]\s+\[( |x|X)\]\s+(?:\[AI-Review\])?\[(Critical|High|Important|Medium|Med|Low|Minor)\]\s*(.*?)\s*(?:\[([^\]\s]+:\d+(?:-\d+)?)\])?\s*$").expect("item")
    });
    let mut outcome = Outcome::Unknown;
    let mut findings = Vec::new();
    let mut checklist_lines = String::new();
    for line in text.lines() {
        let plain = line.replace("**", "");
        if let Some(rest) = plain
            .trim_start_matches(['-', '*', ' '])
            .strip_prefix("Outcome:")
        {
            let word = rest.trim().to_lowercase();
            outcome = if word.starts_with("approve") {
                Outcome::Approve
            } else if word.starts_with("changes requested") {
                Outcome::ChangesRequested
            } else if word.starts_with("blocked") {
                Outcome::Blocked
            } else {
                outcome
            };
            continue;
        }
        if let Some(c) = item.captures(line) {
            let severity = c[2].to_owned();
            findings.push(Finding {
                must_fix: matches!(severity.as_str(), "Critical" | "Important"),
                severity,
                text: c[3].to_owned(),
                location: c.get(4).map(|m| m.as_str().to_owned()),
                done: &c[1] != " ",
            });
            continue;
        }
        checklist_lines.push_str(line);
        checklist_lines.push('\n');
    }
    let (done, total) = crate::bmad::speckit::task_progress(&checklist_lines);
    let checklist = (total > 0).then_some((done, total));
    Review {
        next: match outcome {
            Outcome::Approve => "proceed to the next story",
            Outcome::ChangesRequested => "apply the fixes, then review again",
            Outcome::Blocked => "escalate to a human with the blocking findings",
            Outcome::Unknown => "no outcome: ask the reviewer to decide",
        },
        must_fix_open: findings.iter().filter(|f| f.must_fix && !f.done).count(),
        adversarial_count_ok: (3..=10).contains(&findings.len()),
        checklist_complete: checklist.is_some_and(|(d, t)| t == CHECKLIST_ITEMS && d == t),
        checklist,
        outcome,
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_is_read() {
        let text = "## Senior Developer Review (AI)\n\n- **Reviewer:** Ada\n- **Outcome:** Changes Requested\n\n### Action Items\n\n- [ ] [AI-Review][Critical] SQL built by string concatenation [src/db.rs:42]\n- [ ] [AI-Review][Important] No test for the empty cart [tests/cart.rs:10-14]\n- [x] [Low] Typo in a message [src/msg.rs:3]\n- [ ] [Medium] Long function\n\n### Checklist\n- [x] Story file loaded\n- [ ] Sprint status synced\n";
        let r = parse(text);
        assert_eq!(r.outcome, Outcome::ChangesRequested);
        assert_eq!(r.findings.len(), 4);
        assert_eq!(r.findings[0].location.as_deref(), Some("src/db.rs:42"));
        assert_eq!(r.must_fix_open, 2);
        assert!(r.adversarial_count_ok);
        assert_eq!((r.checklist, r.checklist_complete), (Some((1, 2)), false));
        assert_eq!(parse("**Outcome:** Approve").outcome, Outcome::Approve);
        assert_eq!(
            parse("Outcome: Blocked — needs a schema decision").next,
            "escalate to a human with the blocking findings"
        );
        assert_eq!(parse("").outcome, Outcome::Unknown);
    }
}

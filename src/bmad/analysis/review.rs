//! A BMAD code review, read into a verdict and findings, in every
//! form real reviews take.
//!
//! Verdicts: `Outcome: Approve`, decorated (`**Outcome:** ✅ **APPROVE**`), or on the line
//! after an `### Outcome` heading; a review appended to an earlier one carries both, and the
//! last verdict is the one that holds. Findings: `[AI-Review][Severity]` follow-ups (v6.0–6.2,
//! the severity in any case: about half of real ones write `[HIGH]`), `[Severity]` action
//! items, and v6.3+'s `[Review][Patch|Defer|Decision]` (`bmad-code-review`'s step-04), each
//! with an optional `[path:line]` or `[file: path:line]`. MUST-FIX: Critical, High and
//! Important (v6 code-review: "HIGH (must fix)"), and every Patch; a Decision waits for a
//! human; a Defer is pre-existing and never blocks. The code-review workflow asks for 3–10
//! specific problems and a 19-item checklist: both are reported, the checklist counted under
//! its own heading only.

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
    /// As written: Critical, HIGH, Important, Medium, Low…, or v6.3+'s Patch, Defer, Decision.
    pub severity: String,
    /// Must be fixed before the story is done.
    pub must_fix: bool,
    /// A human must decide (`[Review][Decision]`).
    pub decision: bool,
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
    /// Open findings that wait for a human's decision.
    pub decisions_open: usize,
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
    let mut outcome = Outcome::Unknown;
    let mut findings = Vec::new();
    let mut checklist = (0, 0);
    let mut in_checklist = false;
    let mut verdict_next = false;
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if verdict_next && !line.trim().is_empty() {
            verdict_next = false;
            if let Some(o) = verdict_word(line) {
                outcome = o;
                continue;
            }
        }
        if let Some(heading) = heading(line) {
            verdict_next = is_verdict_label(&heading);
            if let Some(o) = verdict_line(&heading) {
                outcome = o;
            }
            in_checklist = heading.contains("checklist");
            continue;
        }
        if let Some(o) = verdict_line(line) {
            outcome = o;
            continue;
        }
        if let Some(f) = finding(line) {
            findings.push(f);
            continue;
        }
        if in_checklist {
            let (done, total) = crate::bmad::speckit::task_progress(line);
            checklist = (checklist.0 + done, checklist.1 + total);
        }
    }
    let checklist = (checklist.1 > 0).then_some(checklist);
    Review {
        next: match outcome {
            Outcome::Approve => "proceed to the next story",
            Outcome::ChangesRequested => "apply the fixes, then review again",
            Outcome::Blocked => "escalate to a human with the blocking findings",
            Outcome::Unknown => "no outcome: ask the reviewer to decide",
        },
        must_fix_open: findings.iter().filter(|f| f.must_fix && !f.done).count(),
        decisions_open: findings.iter().filter(|f| f.decision && !f.done).count(),
        adversarial_count_ok: (3..=10).contains(&findings.len()),
        checklist_complete: checklist.is_some_and(|(d, t)| t == CHECKLIST_ITEMS && d == t),
        checklist,
        outcome,
        findings,
    }
}

/// A markdown heading's text, lowercased and stripped of emphasis and colons.
fn heading(line: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix('#')?;
    let text = rest.trim_start_matches('#');
    (text.starts_with(' ') || text.is_empty())
        .then(|| plain(text).trim_end_matches(':').trim().to_lowercase())
}

/// The line without emphasis and emoji, trimmed.
fn plain(line: &str) -> String {
    line.replace("**", "")
        .replace("__", "")
        .chars()
        .filter(|c| c.is_ascii() || c.is_alphanumeric())
        .collect::<String>()
        .trim()
        .to_owned()
}

fn is_verdict_label(label: &str) -> bool {
    matches!(
        label,
        "outcome" | "review outcome" | "verdict" | "review verdict" | "decision" | "final verdict"
    )
}

/// `Outcome: …` (and its labels and decorations), the verdict it gives.
pub fn verdict_line(line: &str) -> Option<Outcome> {
    let plain = plain(line);
    let (label, value) = plain.trim_start_matches(['-', '*', ' ']).split_once(':')?;
    if !is_verdict_label(&label.trim().to_lowercase()) {
        return None;
    }
    verdict_word(value)
}

/// The verdict a phrase starts with: `✅ **APPROVE**`, `Approved with notes`, `Changes
/// Requested`, `BLOCKED — needs a schema decision`.
pub fn verdict_word(phrase: &str) -> Option<Outcome> {
    let word = plain(phrase)
        .trim_start_matches(['-', '*', ' ', '_'])
        .to_lowercase();
    const APPROVE: &[&str] = &["approve", "accept", "pass", "lgtm"];
    const CHANGES: &[&str] = &[
        "changes requested",
        "request changes",
        "changes required",
        "changes needed",
        "needs changes",
        "needs work",
        "rework",
        "fail",
    ];
    const BLOCKED: &[&str] = &["blocked", "block", "reject"];
    if CHANGES.iter().any(|w| word.starts_with(w)) {
        Some(Outcome::ChangesRequested)
    } else if APPROVE.iter().any(|w| word.starts_with(w)) {
        Some(Outcome::Approve)
    } else if BLOCKED.iter().any(|w| word.starts_with(w)) {
        Some(Outcome::Blocked)
    } else {
        None
    }
}

/// A finding on one line: `- [ ] [AI-Review][HIGH] text [file: src/a.rs:42]`, `- [x] [Low]
/// text`, `- [ ] [Review][Patch] Title [src/a.rs:42]`, `- [ ] [Review][Decision] Title —
/// Detail`. A bare `[Tag]` counts only when it is a severity.
pub fn finding(line: &str) -> Option<Finding> {
    static ITEM: OnceLock<Regex> = OnceLock::new();
    static PLACE: OnceLock<Regex> = OnceLock::new();
    let item = ITEM.get_or_init(|| {
        Regex::new(r"^\s*[-*]\s+\[( |x|X)\]\s+(\[(?:AI[- ]?Review|Review)\])?\s*\[([A-Za-z][A-Za-z -]*)\]\s*(.*)$")
            .expect("finding")
    });
    let place = PLACE.get_or_init(|| {
        Regex::new(r"\s*\[(?:file:\s*)?([^\]\s]+:\d+(?:[-–]\d+)?)\]").expect("location")
    });
    let c = item.captures(line)?;
    let tag = c[3].trim();
    let lower = tag.to_lowercase();
    let severity = matches!(
        lower.as_str(),
        "critical" | "blocker" | "high" | "important" | "medium" | "med" | "low" | "minor"
    );
    let kind = matches!(lower.as_str(), "patch" | "defer" | "decision");
    if !(severity || kind && c.get(2).is_some()) {
        return None;
    }
    let rest = &c[4];
    let location = place.captures(rest).map(|p| p[1].to_owned());
    let text = place.replace(rest, "");
    Some(Finding {
        must_fix: matches!(
            lower.as_str(),
            "critical" | "blocker" | "high" | "important" | "patch"
        ),
        decision: lower == "decision",
        severity: tag.to_owned(),
        text: text.trim().to_owned(),
        location,
        done: &c[1] != " ",
    })
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

    #[test]
    fn decorated_verdicts_headings_and_the_last_verdict_win() {
        assert_eq!(
            parse("**Outcome:** ✅ **APPROVE**").outcome,
            Outcome::Approve
        );
        assert_eq!(
            parse("- **Outcome**: ❌ CHANGES REQUESTED").outcome,
            Outcome::ChangesRequested
        );
        assert_eq!(
            parse("### Outcome\n\n**Approved** with notes\n").outcome,
            Outcome::Approve
        );
        assert_eq!(
            parse("## Review Outcome: BLOCKED\n").outcome,
            Outcome::Blocked
        );
        assert_eq!(
            parse("**Verdict:** Request changes").outcome,
            Outcome::ChangesRequested
        );
        let appended = "## Senior Developer Review (AI)\n\n**Outcome:** Changes Requested\n\n- [x] [AI-Review][HIGH] Fixed it\n\n## Senior Developer Review (AI) - Round 2\n\n**Outcome:** Approve\n";
        assert_eq!(parse(appended).outcome, Outcome::Approve);
        assert_eq!(parse("**Outcome:** pending\n").outcome, Outcome::Unknown);
        assert_eq!(
            parse("```\nOutcome: Approve\n```\n").outcome,
            Outcome::Unknown
        );
    }

    #[test]
    fn every_finding_form_with_its_weight() {
        let text = "- [ ] [AI-Review][HIGH] Missing auth check [file: src/api.rs:10]\n- [ ] [AI-Review][MEDIUM] Long handler\n- [ ] [Review][Patch] Off-by-one in pager [src/page.rs:7-9]\n- [x] [Review][Defer] Legacy retry loop [src/net.rs:3] — deferred, pre-existing\n- [ ] [Review][Decision] Cache or not — both are defensible\n- [ ] [Docs] Not a finding\n- [ ] [Patch] Not a finding without [Review]\n";
        let r = parse(text);
        let seen: Vec<_> = r
            .findings
            .iter()
            .map(|f| {
                (
                    f.severity.as_str(),
                    f.must_fix,
                    f.decision,
                    f.location.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("HIGH", true, false, Some("src/api.rs:10")),
                ("MEDIUM", false, false, None),
                ("Patch", true, false, Some("src/page.rs:7-9")),
                ("Defer", false, false, Some("src/net.rs:3")),
                ("Decision", false, true, None),
            ]
        );
        assert_eq!(r.findings[0].text, "Missing auth check");
        assert_eq!(
            r.findings[3].text,
            "Legacy retry loop — deferred, pre-existing"
        );
        assert_eq!((r.must_fix_open, r.decisions_open), (2, 1));
    }

    #[test]
    fn the_checklist_is_counted_under_its_heading_only() {
        let text = "## Tasks\n- [x] Task 1\n- [ ] Task 2\n\n## Review Checklist\n- [x] Story file loaded\n- [x] ACs checked\n\n## Dev Notes\n- [ ] unrelated\n";
        assert_eq!(parse(text).checklist, Some((2, 2)));
        assert_eq!(parse("## Tasks\n- [x] Task 1\n").checklist, None);
    }
}

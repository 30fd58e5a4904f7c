//! One attempt of one step, finished: what the runner returned and what the checks found,
//! and how the journal keeps it (redacted and capped before anything is written).

use sha2::{Digest, Sha256};

use super::checks::CheckOutcome;
use super::playbook::{Step, Trigger, VerdictRule};
use crate::policy::secrets::redact;
use crate::runner::prices::Spend;
use crate::runner::{self, AgentResult, Captured, Exit};
use crate::session::schema::StepOutcome;
use crate::text::last_chars;

/// How much of an agent's stdout and stderr the journal keeps.
pub(super) const STDOUT_LIMIT: usize = 64 << 10;
const STDERR_LIMIT: usize = 16 << 10;
/// How much of an agent's final answer an event and a gate show.
const FINAL_TEXT_LIMIT: usize = 4000;
const EVIDENCE_LIMIT: usize = 1500;

/// One attempt of one step, finished.
pub(super) struct Attempt<'s> {
    /// The step.
    pub step: &'s Step,
    /// 1 for the first attempt.
    pub number: u32,
    /// What the runner returned, or why it could not run.
    pub result: Result<AgentResult, runner::Error>,
    /// The step's postconditions, evaluated after the round.
    pub checks: Vec<CheckOutcome>,
    /// See [`stall_hash`].
    pub hash: String,
    /// Files the round changed.
    pub changed: usize,
    /// What the policy refused during the attempt (hooks, the guard, the secret scan).
    pub violations: Vec<String>,
    /// What it cost, per model, reported or priced; nothing when it did not run.
    pub spend: Spend,
}

impl Attempt<'_> {
    /// How long the runner ran.
    pub fn duration_ms(&self) -> u64 {
        self.result.as_ref().map_or(0, |r| r.duration_ms)
    }

    /// The user interrupted it.
    pub fn interrupted(&self) -> bool {
        self.result
            .as_ref()
            .is_ok_and(|r| r.exit == Exit::Interrupted)
    }

    /// The CLI stopped itself at the dollars it was given.
    pub fn budget_spent(&self) -> bool {
        self.result.as_ref().is_ok_and(|r| r.budget_spent)
    }

    /// The agent reported a breaking change.
    pub fn breaking_change(&self) -> bool {
        self.result.as_ref().is_ok_and(|r| r.breaking_change)
    }

    /// Everything that says the attempt failed, each with the trigger it counts as.
    pub fn failures(&self) -> Vec<(Trigger, String)> {
        let mut reasons = Vec::new();
        match &self.result {
            Ok(r) => {
                if let Some(why) = r.failure() {
                    reasons.push((Trigger::SubagentError, why));
                }
                match r.verdict {
                    Some(runner::Verdict::Fail) => reasons.push((
                        Trigger::VerdictFailure,
                        "the agent's verdict is FAIL".into(),
                    )),
                    None if self.step.verdict == VerdictRule::Required => reasons.push((
                        Trigger::VerdictMissing,
                        "the step must end with a verdict (VERDICT: PASS or VERDICT: FAIL) and the agent gave none".into(),
                    )),
                    _ => {}
                }
            }
            Err(e) => reasons.push((Trigger::SubagentError, format!("could not run: {e}"))),
        }
        for violation in &self.violations {
            reasons.push((Trigger::PolicyViolation, violation.clone()));
        }
        for check in self.checks.iter().filter(|c| !c.ok) {
            let first_line = check.detail.lines().next().unwrap_or_default();
            reasons.push((
                Trigger::PostconditionFailure,
                format!("postcondition {} failed: {first_line}", check.check),
            ));
        }
        reasons
    }

    /// What a human needs to judge a failure: the reasons, then the end of the agent's answer.
    pub fn evidence(&self, reasons: &[(Trigger, String)]) -> String {
        let mut text = reasons
            .iter()
            .map(|(t, r)| format!("{}: {r}", t.as_str()))
            .collect::<Vec<_>>()
            .join("\n");
        for check in self
            .checks
            .iter()
            .filter(|c| !c.ok && c.detail.contains('\n'))
        {
            text.push_str(&format!("\n--- {} ---\n{}", check.check, check.detail));
        }
        if let Ok(r) = &self.result {
            let answer = r.final_text.trim();
            if !answer.is_empty() {
                text.push_str("\n--- the agent's last words ---\n");
                text.push_str(answer);
            }
        }
        redact(&last_chars(&text, EVIDENCE_LIMIT))
    }

    /// What the journal keeps of the attempt: the result shape, redacted and capped.
    pub fn outcome(&self) -> StepOutcome {
        let mut outcome = StepOutcome {
            attempt: Some(self.number),
            checks: self.checks.clone(),
            changed_files: Some(self.changed),
            hash: Some(self.hash.clone()),
            ..Default::default()
        };
        match &self.result {
            Ok(r) => {
                // An agent that stopped at a menu did not finish: say so, with the choice
                // the decision engine would make.
                let menu = crate::bmad::analysis::menu::analyze(&r.final_text, "continue");
                let (must_fix, findings) = review_findings(&r.final_text);
                outcome = StepOutcome {
                    runner: Some(r.runner.as_str().to_owned()),
                    exit: serde_json::to_value(r.exit).unwrap_or_default(),
                    final_text: Some(redact(&last_chars(&r.final_text, FINAL_TEXT_LIMIT))),
                    verdict: r.verdict.map(|v| match v {
                        runner::Verdict::Pass => "pass".to_owned(),
                        runner::Verdict::Fail => "fail".to_owned(),
                    }),
                    breaking_change: r.breaking_change,
                    agent_session_id: r.agent_session_id.clone(),
                    tokens_in: r.tokens_in(),
                    tokens_out: r.tokens_out(),
                    cost_usd: self.spend.usd,
                    cost_priced: self.spend.usd.is_some() && !self.spend.reported,
                    premium_requests: r.premium_requests,
                    usage: self
                        .spend
                        .models
                        .iter()
                        .map(super::ledger::record)
                        .collect(),
                    permission_denials: r.permission_denials.iter().map(|d| redact(d)).collect(),
                    reported_error: r.reported_error.as_deref().map(redact),
                    stdout: Some(journal_text(&r.stdout, "stdout", STDOUT_LIMIT)),
                    stderr: Some(journal_text(&r.stderr, "stderr", STDERR_LIMIT)),
                    stdout_bytes: Some(r.stdout.total()),
                    stderr_bytes: Some(r.stderr.total()),
                    menu: if menu.detected {
                        serde_json::to_value(&menu).unwrap_or_default()
                    } else {
                        serde_json::Value::Null
                    },
                    must_fix,
                    findings,
                    ..outcome
                };
            }
            Err(e) => outcome.error = Some(redact(&e.to_string())),
        }
        outcome
    }
}

/// A stream as the journal keeps it: redacted, then capped at `limit` bytes. The excerpt
/// taken for redaction is wider than the cap, so a secret cut by the cap's edge is still seen
/// whole and redacted before any of it is kept.
pub(super) fn journal_text(captured: &Captured, name: &str, limit: usize) -> String {
    if captured.complete() && captured.total() as usize <= limit {
        return redact(&captured.excerpt(name, limit));
    }
    let wide = redact(&captured.excerpt(name, limit + 1024));
    // Drop the excerpt's own marker line; the kept size changes below.
    let body = match wide.split_once('\n') {
        Some((marker, body)) if marker.starts_with("[git-bmad:") => body,
        _ => wide.as_str(),
    };
    let mut start = body.len().saturating_sub(limit);
    while !body.is_char_boundary(start) {
        start += 1;
    }
    let kept = &body[start..];
    format!(
        "[git-bmad: {name} truncated: {} bytes in all, the last {} kept]\n{kept}",
        captured.total(),
        kept.len()
    )
}

/// SHA-256 over what an attempt said and what it changed: the same hash twice in a row is a
/// stall. What it said is the agent's final answer when its CLI gives one (else its output),
/// normalised: a real CLI's raw output holds a new session id, uuids, timings and token
/// counts every run, so two identical failures would never hash the same.
pub(super) fn stall_hash(
    result: Option<&AgentResult>,
    error: Option<&str>,
    changes: &[(String, String)],
) -> String {
    let mut hasher = Sha256::new();
    let said = match (result, error) {
        (Some(r), _) if !r.final_text.is_empty() => r.final_text.clone(),
        (Some(r), _) => {
            let mut text = String::from_utf8_lossy(r.stdout.head()).into_owned();
            if !r.stdout.complete() {
                text.push_str(&String::from_utf8_lossy(&r.stdout.tail()));
            }
            text
        }
        (None, Some(error)) => error.to_owned(),
        (None, None) => String::new(),
    };
    hasher.update(normalise(&said).as_bytes());
    hasher.update(b"\0diff\0");
    for (path, id) in changes {
        hasher.update(path.as_bytes());
        hasher.update(b"\0");
        hasher.update(id.as_bytes());
        hasher.update(b"\0");
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Text with what changes between two runs of the same failure taken out: numbers, hex ids
/// and uuids become `#`, whitespace runs one space, case folded.
fn normalise(text: &str) -> String {
    static VOLATILE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let volatile = VOLATILE.get_or_init(|| {
        regex::Regex::new(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}|\b[0-9a-fA-F]*[0-9][0-9a-fA-F]*\b|[0-9]+(?:\.[0-9]+)?")
            .expect("a valid pattern")
    });
    let replaced = volatile.replace_all(text, "#");
    replaced
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Findings kept per attempt: enough for a fixer's prompt and a human's gate.
const FINDINGS_KEPT: usize = 20;

/// The open MUST-FIX findings of an answer that reads as a review (a verdict or findings in
/// any form the decision engine knows); `None` for an answer that is not one.
fn review_findings(answer: &str) -> (Option<u32>, Vec<String>) {
    use crate::bmad::analysis::review;
    let read = review::parse(answer);
    if read.outcome == review::Outcome::Unknown && read.findings.is_empty() {
        return (None, Vec::new());
    }
    let open: Vec<String> = read
        .findings
        .iter()
        .filter(|f| f.must_fix && !f.done)
        .take(FINDINGS_KEPT)
        .map(|f| {
            let at = f
                .location
                .as_deref()
                .map(|l| format!(" [{l}]"))
                .unwrap_or_default();
            redact(&format!("[{}] {}{at}", f.severity, f.text))
        })
        .collect();
    (Some(read.must_fix_open as u32), open)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_text_ignores_ids_timings_and_spacing() {
        let a = "Session 3f2a9c1e-1b2c-4d5e-8f90-123456789abc: tests failed after 12.5s (run 41)\n";
        let b = "session 0a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d:  tests failed after 9.1s (run 42)";
        assert_eq!(normalise(a), normalise(b));
        assert_ne!(normalise("tests failed"), normalise("tests passed"));
        assert_eq!(
            normalise("commit deadbeef1 failed"),
            normalise("commit 0badc0de2 failed")
        );
    }

    #[test]
    fn journal_text_is_capped_and_redacted() {
        let key = format!("AKIA{}", "Q7ZK2M4XW6RT5PLN");
        let mut big = vec![b'x'; 200_000];
        big.extend_from_slice(format!("\nkey={key}\nend\n").as_bytes());
        let text = journal_text(&Captured::from_bytes(&big), "stdout", STDOUT_LIMIT);
        assert!(
            text.starts_with(
                "[git-bmad: stdout truncated: 200030 bytes in all, the last 65536 kept]"
            ),
            "{}",
            &text[..80]
        );
        assert!(text.len() <= STDOUT_LIMIT + 120, "{}", text.len());
        assert!(!text.contains(&key), "the key leaked");
        assert!(text.ends_with("end\n"));
        let small = journal_text(
            &Captured::from_bytes(format!("token {key}").as_bytes()),
            "stdout",
            STDOUT_LIMIT,
        );
        assert!(
            !small.contains(&key) && small.starts_with("token "),
            "{small}"
        );
    }

    #[test]
    fn stall_hash_sees_the_answer_the_error_and_the_changes() {
        let said = |text: &str| {
            runner::interpret(
                runner::Kind::parse("shell").expect("shell runner"),
                Exit::Code(1),
                Captured::from_bytes(text.as_bytes()),
                Captured::default(),
                5,
            )
        };
        let same = said("run 7f3a21b0: 3 tests failed in 1.2s");
        let again = said("run 09c4d2e1: 3 tests failed in 0.9s");
        let change = [("a.rs".to_owned(), "1".to_owned())];
        let a = stall_hash(Some(&same), None, &change);
        assert_eq!(a, stall_hash(Some(&again), None, &change));
        assert_ne!(
            a,
            stall_hash(Some(&same), None, &[("a.rs".into(), "2".into())])
        );
        assert_ne!(a, stall_hash(Some(&said("all tests pass")), None, &change));
        assert_ne!(
            stall_hash(None, Some("claude was not found"), &change),
            stall_hash(None, Some("claude timed out"), &change)
        );
        assert_eq!(a.len(), 64);
    }
}

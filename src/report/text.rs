//! The report for a terminal: at most [`WIDTH`] columns, colour only through the painter the
//! caller passes (so `NO_COLOR` and pipes are the CLI's business).

use super::{EpicCard, Outcome, Report, SessionReport};
use crate::text::{duration, first_line_within, wrap};

/// The widest line the text report writes.
pub const WIDTH: usize = 100;

/// How a piece of text is meant to look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Good news.
    Good,
    /// Needs attention.
    Warn,
    /// Bad news.
    Bad,
    /// Less important.
    Dim,
    /// Emphasis.
    Strong,
}

/// Render the report; `paint` styles a piece of text (returning it unchanged means no
/// colour). `timeline` adds each session's events of the period.
pub fn render(report: &Report, timeline: bool, paint: &dyn Fn(&str, Tone) -> String) -> String {
    let mut out = Vec::new();
    out.push(paint(
        &first_line_within(&format!("git bmad report: {}", report.repository), WIDTH),
        Tone::Strong,
    ));
    out.push(format!(
        "since {}, generated {}",
        report.since, report.generated
    ));
    out.push(String::new());
    let s = &report.summary;
    if s.sessions == 0 {
        out.push("No session had any activity in this period, and none waits for you.".into());
        return join(out);
    }
    let mut counts = Vec::new();
    for (n, word, tone) in [
        (s.parked, "parked at a gate", Tone::Warn),
        (s.failed, "failed", Tone::Bad),
        (s.over_budget, "over budget", Tone::Bad),
        (s.interrupted, "interrupted", Tone::Warn),
        (s.stalled, "stalled", Tone::Warn),
        (s.running, "running", Tone::Good),
        (s.done, "done", Tone::Good),
    ] {
        if n > 0 {
            counts.push(paint(&format!("{n} {word}"), tone));
        }
    }
    out.push(format!(
        "{} session{}: {}",
        s.sessions,
        plural(s.sessions),
        counts.join(", ")
    ));
    let violations = if s.policy_violations == 0 {
        "no policy violation".to_owned()
    } else {
        paint(
            &format!(
                "{} policy violation{} ({} secret{} caught)",
                s.policy_violations,
                plural(s.policy_violations),
                s.secrets_caught,
                plural(s.secrets_caught)
            ),
            Tone::Bad,
        )
    };
    out.push(format!(
        "{violations}; agent time {}, {}",
        duration(s.agent_time_ms),
        super::spend_text(s.tokens, s.cost_usd, s.premium_requests)
    ));
    if let Some(models) = models_line(&s.models) {
        out.push(models);
    }
    for card in &report.epics {
        out.push(String::new());
        epic_lines(card, paint, &mut out);
    }
    for session in &report.sessions {
        out.push(String::new());
        session_lines(session, timeline, paint, &mut out);
    }
    join(out)
}

/// One epic run's card: its state, what waits for whom, a line per story.
fn epic_lines(card: &EpicCard, paint: &dyn Fn(&str, Tone) -> String, out: &mut Vec<String>) {
    let (word, tone) = epic_word(card);
    let counts: Vec<String> = card
        .counts
        .iter()
        .map(|(stage, n)| format!("{n} {stage}"))
        .collect();
    out.push(format!(
        "{}  {}",
        paint(&word.to_uppercase(), tone),
        paint(
            &first_line_within(
                &format!(
                    "epic {} ({}): {}",
                    card.epic,
                    card.session,
                    counts.join(", ")
                ),
                WIDTH - word.len() - 2
            ),
            Tone::Strong
        )
    ));
    let indent = |text: &str, prefix: &str, out: &mut Vec<String>| {
        for line in wrap(text, WIDTH - prefix.chars().count()) {
            out.push(format!("{prefix}{line}"));
        }
    };
    if let Some(why) = &card.stopped {
        indent(why, "  ", out);
    }
    for waiting in &card.waiting {
        indent(&format!("? {waiting}"), "  ", out);
    }
    let width = card.stories.iter().map(|s| s.key.len()).max().unwrap_or(0);
    for story in &card.stories {
        let said = story
            .pr
            .as_deref()
            .or(story.reason.as_deref())
            .map(|s| s.lines().next().unwrap_or_default())
            .unwrap_or_default();
        let line = format!("  {:<width$}  {:<8}  {said}", story.key, story.stage);
        out.push(first_line_within(&line, WIDTH));
    }
}

/// The word for where an epic run stands: a run that stopped early is `stopped`.
pub fn epic_word(card: &EpicCard) -> (&'static str, Tone) {
    match card.outcome {
        Outcome::Failed if card.stopped.is_some() => ("stopped", Tone::Bad),
        Outcome::Parked | Outcome::Stalled | Outcome::Interrupted => {
            (card.outcome.as_str(), Tone::Warn)
        }
        Outcome::Failed | Outcome::OverBudget => (card.outcome.as_str(), Tone::Bad),
        Outcome::Running | Outcome::Done => (card.outcome.as_str(), Tone::Good),
    }
}

/// One session's block.
fn session_lines(
    s: &SessionReport,
    timeline: bool,
    paint: &dyn Fn(&str, Tone) -> String,
    out: &mut Vec<String>,
) {
    let tone = match s.outcome {
        Outcome::Parked | Outcome::Stalled | Outcome::Interrupted => Tone::Warn,
        Outcome::Failed | Outcome::OverBudget => Tone::Bad,
        Outcome::Running | Outcome::Done => Tone::Good,
    };
    let mut head = format!("{} ({})", s.name, s.branch);
    if let Some(p) = s.progress {
        head.push_str(&format!(", {}/{} steps", p.done, p.total));
    }
    if let Some(step) = &s.step {
        head.push_str(&format!(", step {step}"));
    }
    let outcome = s.outcome.as_str().to_uppercase();
    let head = first_line_within(&head, WIDTH - outcome.len() - 2);
    out.push(format!(
        "{}  {}",
        paint(&outcome, tone),
        paint(&head, Tone::Strong)
    ));
    let indent = |text: &str, prefix: &str, out: &mut Vec<String>| {
        for line in wrap(text, WIDTH - prefix.chars().count()) {
            out.push(format!("{prefix}{line}"));
        }
    };
    if let Some(why) = &s.stopped_by {
        indent(why, "  ", out);
    }
    if let Some(gate) = &s.gate {
        indent(&format!("? {}", gate.question), "  ", out);
        if !gate.evidence.is_empty() {
            let evidence: Vec<&str> = gate.evidence.lines().take(6).collect();
            indent(&evidence.join("\n"), "    ", out);
        }
        indent(
            &format!("answer: {}   ({})", gate.answer, gate.options.join("|")),
            "  ",
            out,
        );
    }
    // The line above already says what stopped it.
    let problems: Vec<_> = s
        .problems
        .iter()
        .filter(|p| s.stopped_by.as_deref() != Some(p.what.as_str()))
        .collect();
    for p in problems.iter().take(5) {
        let line = format!("{} {}: {}", short_time(&p.at), p.kind, p.what);
        out.push(format!(
            "  {}",
            paint(&first_line_within(&line, WIDTH - 3), Tone::Bad)
        ));
    }
    if problems.len() > 5 {
        out.push(format!(
            "  … {} more problem(s): git bmad report --json",
            problems.len() - 5
        ));
    }
    let evidence = evidence_line(s);
    if !evidence.is_empty() {
        indent(&evidence, "  ", out);
    }
    out.push(paint(
        &format!(
            "  agent time {}, {}; last activity {}",
            duration(s.agent_time_ms),
            super::spend_text(s.tokens, s.cost_usd, s.premium_requests),
            s.last_activity
        ),
        Tone::Dim,
    ));
    if let Some(models) = models_line(&s.models) {
        out.push(paint(&format!("  {models}"), Tone::Dim));
    }
    if timeline {
        for entry in &s.timeline {
            let step = entry
                .step
                .as_deref()
                .map(|st| format!(" [{st}]"))
                .unwrap_or_default();
            let line = format!(
                "    {} #{} {}{step} {}",
                short_time(&entry.at),
                entry.seq,
                entry.event,
                entry.summary
            );
            out.push(first_line_within(&line, WIDTH - 1));
        }
    }
}

/// `tests_pass ok (dev), 3 commits (1 pushed), 5 files +120 -30, PR …`.
pub fn evidence_line(s: &SessionReport) -> String {
    let e = &s.evidence;
    let mut parts: Vec<String> = e
        .checks
        .iter()
        .map(|c| {
            let step = c
                .step
                .as_deref()
                .map(|st| format!(" ({st})"))
                .unwrap_or_default();
            format!("{} {}{step}", c.check, if c.ok { "ok" } else { "FAILED" })
        })
        .collect();
    match e.commits {
        Some(0) => parts.push("no commits yet".into()),
        Some(commits) => parts.push(format!(
            "{commits} commit{} ({} pushed)",
            plural(commits),
            e.pushed.unwrap_or(0)
        )),
        None => {}
    }
    if let (Some(files @ 1..), Some(ins), Some(del)) = (e.files_changed, e.insertions, e.deletions)
    {
        parts.push(format!("{files} file{} +{ins} -{del}", plural(files)));
    }
    if let Some(pr) = &e.pr {
        parts.push(format!("PR {pr}"));
    }
    parts.join(", ")
}

/// `2026-11-22 10:15` from an RFC 3339 time.
fn short_time(at: &str) -> String {
    at.get(..16).unwrap_or(at).replace('T', " ")
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn join(lines: Vec<String>) -> String {
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

/// What each model used and cost, in a line: `by model: gpt-5 $0.18 (1.2k in, 40k cached,
/// 300 out); …`; a model whose spend is not all known says so.
pub(super) fn models_line(models: &[super::ModelLine]) -> Option<String> {
    let parts: Vec<String> = models
        .iter()
        .map(|m| {
            format!(
                "{} {} ({} in, {} cached, {} out)",
                m.name(),
                m.cost_text(),
                m.tokens_in,
                m.tokens_cached,
                m.tokens_out
            )
        })
        .collect();
    (!parts.is_empty()).then(|| format!("by model: {}", parts.join("; ")))
}

//! The report as one self-contained page: inline CSS, no script, no network, no external
//! asset, so it can be mailed, attached to a ticket or opened from a CI artifact. Light and
//! dark follow the reader's setting; the layout is one column that reads on a phone.

use std::fmt::Write;

use super::{EpicCard, Outcome, Report, SessionReport};
use crate::text::{duration, html_escape};

const STYLE: &str = r#"
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1f2328; --muted: #59636e;
  --card: #f6f8fa; --line: #d1d9e0; --good: #1a7f37; --warn: #9a6700; --bad: #cf222e; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --card: #151b23;
    --line: #3d444d; --good: #3fb950; --warn: #d29922; --bad: #f85149; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 16px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; }
main { max-width: 960px; margin: 0 auto; padding: 16px; }
h1 { font-size: 1.4em; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 1.1em; margin: 0; overflow-wrap: anywhere; }
.muted { color: var(--muted); font-size: 0.9em; }
.summary { display: grid; grid-template-columns: repeat(auto-fill, minmax(104px, 1fr));
  gap: 6px; margin: 12px 0; padding: 0; }
.summary li { list-style: none; background: var(--card); border: 1px solid var(--line);
  border-radius: 6px; padding: 4px 8px; font-size: 0.8em; color: var(--muted); }
.summary b { display: block; font-size: 1.5em; color: var(--fg); }
.summary li.hot b { color: var(--bad); }
section { background: var(--card); border: 1px solid var(--line); border-left-width: 6px;
  border-radius: 6px; padding: 12px 16px; margin: 12px 0; }
section.good { border-left-color: var(--good); } section.warn { border-left-color: var(--warn); }
section.bad { border-left-color: var(--bad); }
.badge { display: inline-block; font-size: 0.8em; font-weight: 600; text-transform: uppercase;
  border-radius: 4px; padding: 1px 6px; margin-right: 6px; color: var(--bg); }
.badge.good { background: var(--good); } .badge.warn { background: var(--warn); }
.badge.bad { background: var(--bad); }
.gate { border: 1px dashed var(--warn); border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
pre, code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.85em; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; }
ul.problems { color: var(--bad); padding-left: 20px; }
table { border-collapse: collapse; width: 100%; font-size: 0.85em; }
td { border-top: 1px solid var(--line); padding: 4px 6px; vertical-align: top;
  overflow-wrap: anywhere; }
td.t { white-space: nowrap; color: var(--muted); }
details { margin-top: 8px; }
"#;

/// The page for `report`.
pub fn render(report: &Report) -> String {
    let mut page = String::from("<main>\n");
    let title = format!("git bmad report: {}", report.repository);
    let _ = write!(
        page,
        "<h1>{}</h1>\n<p class=\"muted\">since {} &middot; generated {}</p>\n",
        html_escape(&title),
        html_escape(&report.since),
        html_escape(&report.generated)
    );
    let s = &report.summary;
    page.push_str("<ul class=\"summary\">\n");
    // Counts of things that need a human are red when not zero.
    for (n, word, hot) in [
        (s.sessions.to_string(), "sessions", false),
        (s.parked.to_string(), "parked at a gate", s.parked > 0),
        (s.failed.to_string(), "failed", s.failed > 0),
        (s.over_budget.to_string(), "over budget", s.over_budget > 0),
        (s.interrupted.to_string(), "interrupted", s.interrupted > 0),
        (s.stalled.to_string(), "stalled", s.stalled > 0),
        (s.running.to_string(), "running", false),
        (s.done.to_string(), "done", false),
        (
            s.policy_violations.to_string(),
            "policy violations",
            s.policy_violations > 0,
        ),
        (
            s.secrets_caught.to_string(),
            "secrets caught",
            s.secrets_caught > 0,
        ),
        (duration(s.agent_time_ms), "agent time", false),
        (s.tokens.to_string(), "tokens", false),
        (format!("${:.2}", s.cost_usd), "cost", false),
    ] {
        let class = if hot { " class=\"hot\"" } else { "" };
        let _ = writeln!(page, "<li{class}><b>{}</b>{word}</li>", html_escape(&n));
    }
    if s.premium_requests > 0.0 {
        let _ = writeln!(
            page,
            "<li><b>{}</b>premium requests</li>",
            s.premium_requests
        );
    }
    page.push_str("</ul>\n");
    models_table(&mut page, &s.models);
    if report.sessions.is_empty() {
        page.push_str(
            "<p>No session had any activity in this period, and none waits for you.</p>\n",
        );
    }
    for card in &report.epics {
        epic_section(&mut page, card);
    }
    for session in &report.sessions {
        section(&mut page, session);
    }
    page.push_str("</main>\n");
    crate::text::html_page(&title, STYLE, &page)
}

/// One epic run's card: its state, what waits for whom, a row per story.
fn epic_section(page: &mut String, card: &EpicCard) {
    let (word, tone) = super::text::epic_word(card);
    let tone = match tone {
        super::text::Tone::Bad => "bad",
        super::text::Tone::Warn => "warn",
        _ => "good",
    };
    let _ = write!(
        page,
        "<section class=\"{tone}\" id=\"e-{}\">\n<h2><span class=\"badge {tone}\">{word}</span>epic {}</h2>\n",
        html_escape(&card.session),
        html_escape(&card.epic)
    );
    if let Some(why) = &card.stopped {
        let _ = writeln!(page, "<p>{}</p>", html_escape(why));
    }
    for waiting in &card.waiting {
        let _ = writeln!(
            page,
            "<div class=\"gate\"><p>{}</p></div>",
            html_escape(waiting)
        );
    }
    page.push_str(
        "<table>\n<tr><th>story</th><th>stage</th><th>pull request or reason</th></tr>\n",
    );
    for story in &card.stories {
        let said = story
            .pr
            .as_deref()
            .or(story.reason.as_deref())
            .unwrap_or("");
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            html_escape(&story.key),
            html_escape(&story.stage),
            html_escape(said)
        );
    }
    page.push_str("</table>\n</section>\n");
}

/// One session's section.
fn section(page: &mut String, s: &SessionReport) {
    let tone = match s.outcome {
        Outcome::Parked | Outcome::Stalled | Outcome::Interrupted => "warn",
        Outcome::Failed | Outcome::OverBudget => "bad",
        Outcome::Running | Outcome::Done => "good",
    };
    let _ = write!(
        page,
        "<section class=\"{tone}\" id=\"s-{}\">\n<h2><span class=\"badge {tone}\">{}</span>{}</h2>\n",
        html_escape(&s.id),
        s.outcome.as_str(),
        html_escape(&s.name)
    );
    let mut facts = vec![
        format!("branch <code>{}</code>", html_escape(&s.branch)),
        format!("session <code>{}</code>", html_escape(&s.id)),
    ];
    if let (Some(playbook), Some(p)) = (&s.playbook, s.progress) {
        facts.push(format!(
            "{} {}/{} steps",
            html_escape(playbook),
            p.done,
            p.total
        ));
    }
    if let Some(step) = &s.step {
        facts.push(format!("step <code>{}</code>", html_escape(step)));
    }
    facts.push(format!("last activity {}", html_escape(&s.last_activity)));
    let _ = writeln!(page, "<p class=\"muted\">{}</p>", facts.join(" &middot; "));
    if let Some(why) = &s.stopped_by {
        let _ = writeln!(page, "<p>{}</p>", html_escape(why));
    }
    if let Some(gate) = &s.gate {
        let _ = writeln!(
            page,
            "<div class=\"gate\"><p><b>{}</b></p>",
            html_escape(&gate.question)
        );
        if !gate.evidence.is_empty() {
            let _ = writeln!(page, "<pre>{}</pre>", html_escape(&gate.evidence));
        }
        let _ = writeln!(
            page,
            "<p>Answer ({}):</p><pre>{}</pre></div>",
            html_escape(&gate.options.join(", ")),
            html_escape(&gate.answer)
        );
    }
    if !s.problems.is_empty() {
        page.push_str("<ul class=\"problems\">\n");
        for p in &s.problems {
            let _ = writeln!(
                page,
                "<li><span class=\"muted\">{}</span> {}: {}</li>",
                html_escape(&p.at),
                html_escape(&p.kind),
                html_escape(&p.what)
            );
        }
        page.push_str("</ul>\n");
    }
    let evidence = super::text::evidence_line(s);
    if !evidence.is_empty() {
        let _ = writeln!(page, "<p>Evidence: {}</p>", html_escape(&evidence));
    }
    let _ = writeln!(
        page,
        "<p class=\"muted\">agent time {} &middot; {}</p>",
        duration(s.agent_time_ms),
        html_escape(&super::spend_text(s.tokens, s.cost_usd, s.premium_requests))
    );
    models_table(page, &s.models);
    if !s.timeline.is_empty() {
        let _ = writeln!(
            page,
            "<details><summary>Timeline: {} event(s)</summary>\n<table>",
            s.timeline.len()
        );
        for e in &s.timeline {
            let step = e.step.as_deref().map(html_escape).unwrap_or_default();
            let _ = writeln!(
                page,
                "<tr><td class=\"t\">{}</td><td>#{} {}</td><td>{}</td><td>{}</td></tr>",
                html_escape(&e.at.get(5..16).unwrap_or(&e.at).replace('T', " ")),
                e.seq,
                html_escape(&e.event),
                step,
                html_escape(&e.summary)
            );
        }
        page.push_str("</table></details>\n");
    }
    page.push_str("</section>\n");
}

/// What each model used and cost, a row per model; a model whose spend is not all known
/// says so.
fn models_table(page: &mut String, models: &[super::ModelLine]) {
    if models.is_empty() {
        return;
    }
    page.push_str("<table class=\"models\">\n<tr><th>model</th><th>tokens in</th><th>cached</th><th>out</th><th>cost</th></tr>\n");
    for m in models {
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            html_escape(m.name()),
            m.tokens_in,
            m.tokens_cached,
            m.tokens_out,
            html_escape(&m.cost_text())
        );
    }
    page.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::super::ModelLine;
    use super::*;

    #[test]
    fn each_model_is_a_row_and_unpriced_tokens_are_said() {
        let mut page = String::new();
        models_table(&mut page, &[]);
        assert!(page.is_empty());
        let models = [
            ModelLine {
                model: "gpt-5".into(),
                tokens_in: 200,
                tokens_cached: 2000,
                tokens_out: 40,
                cost_usd: 0.75,
                unpriced: false,
            },
            ModelLine {
                model: "<mine>".into(),
                unpriced: true,
                ..ModelLine::default()
            },
        ];
        models_table(&mut page, &models);
        assert!(
            page.contains(
                "<tr><td>gpt-5</td><td>200</td><td>2000</td><td>40</td><td>$0.75</td></tr>"
            ),
            "{page}"
        );
        assert!(
            page.contains("<td>&lt;mine&gt;</td><td>0</td><td>0</td><td>0</td><td>$0.00 and unpriced tokens</td>"),
            "{page}"
        );
    }
}

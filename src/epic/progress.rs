//! The epic's report: where every story stands (stage, integration checkpoint, review
//! rounds, findings fixed, time, cost, pull request), the gates and the answers humans gave,
//! and the blockers with what to do next. As markdown it is committed on the epic's branch
//! as `docs/progress/epic-<id>-auto-run.md` whenever a run stops, so reviewers read it in
//! the same diff as the sprint status; `epic status --html` writes the same as one HTML
//! page. A pure rendering of the plan and the state replayed from the epic journal.

use super::names;
use super::plan::{Action, Plan};
use super::state::EpicState;
use super::Error;
use crate::session::run_state::Answer;
use crate::session::schema::Stage;
use crate::session::{closeout, Repo, Session};

/// Where the progress document goes in the epic's worktree.
pub fn path(epic: &str) -> String {
    format!("docs/progress/epic-{epic}-auto-run.md")
}

/// Write the progress document on the epic's branch and commit it, when it changed.
pub(super) fn write(
    repo: &Repo,
    epic: &Session,
    plan: &Plan,
    state: &EpicState,
) -> Result<(), Error> {
    let text = render(plan, state);
    let path = epic.worktree.join(path(&plan.epic));
    if std::fs::read_to_string(&path).is_ok_and(|now| now == text) {
        return Ok(());
    }
    // `write_atomically` makes `docs/progress/` when it is missing.
    crate::fs::write_atomically(&path, text.as_bytes(), None).map_err(|source| Error::Write {
        path: path.clone(),
        source,
    })?;
    closeout::commit_work(repo, epic, &format!("epic {}: progress", plan.epic))?;
    Ok(())
}

/// One story's row.
struct Row {
    key: String,
    stage: String,
    checkpoint: String,
    rounds: String,
    fixed: String,
    time: String,
    cost: String,
    pr: String,
}

const HEADER: [&str; 8] = [
    "story",
    "stage",
    "checkpoint",
    "rounds",
    "findings fixed",
    "time",
    "cost",
    "pull request",
];

impl Row {
    fn cells(&self) -> [&str; 8] {
        [
            &self.key,
            &self.stage,
            &self.checkpoint,
            &self.rounds,
            &self.fixed,
            &self.time,
            &self.cost,
            &self.pr,
        ]
    }
}

/// What the report says, before it is rendered.
struct Report {
    title: String,
    facts: Vec<String>,
    rows: Vec<Row>,
    decisions: Vec<String>,
    blockers: Vec<String>,
}

fn report(plan: &Plan, state: &EpicState) -> Report {
    let mut facts = Vec::new();
    if let Some(started) = &state.started {
        facts.push(format!(
            "era {}, pipeline `{}`, {} review round(s) at most per story",
            started.era, started.pipeline, started.rounds
        ));
        facts.push(format!(
            "base `{}`, {} at once, gates: {}",
            started.base, started.parallel, started.gates
        ));
    }
    let state_line = if let (true, Some(why)) = (state.finished, &state.stopped) {
        format!("finished early: {why}")
    } else if state.finished {
        "finished".to_owned()
    } else if let Some(gate) = &state.gate {
        format!("waiting at the epic's {} gate", gate.id)
    } else {
        "in progress (or stopped: `git bmad epic resume` continues)".to_owned()
    };
    facts.push(format!("state: {state_line}"));
    let (mut ms, mut usd) = (0u64, 0.0f64);
    let mut rows = Vec::new();
    let mut blockers = Vec::new();
    let dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    for s in &plan.stories {
        let st = state.story(&s.key);
        let stage = match (&s.action, st.stage) {
            (Action::Run, Stage::NotStarted) => "queued".to_owned(),
            (Action::Done, Stage::NotStarted) => "done before this run".to_owned(),
            (Action::Hold(why), Stage::NotStarted) => format!("held: {why}"),
            (_, stage) => stage.to_string(),
        };
        let d = &st.detail;
        ms += d.run_time_ms.unwrap_or(0);
        usd += d.cost_usd.unwrap_or(0.0);
        rows.push(Row {
            key: s.key.clone(),
            stage,
            checkpoint: dash(st.integration.as_ref().map(|c| c.light.clone())),
            rounds: dash(d.rounds.map(|r| r.to_string())),
            fixed: dash(d.findings_fixed.map(|r| r.to_string())),
            time: dash(d.run_time_ms.map(crate::text::duration)),
            cost: dash(d.cost_usd.map(|c| format!("${c:.2}"))),
            pr: dash(d.pr.clone()),
        });
        if st.stage.ended_badly() {
            blockers.push(format!(
                "**{}** ({}): {}",
                s.key,
                st.stage,
                d.reason.as_deref().unwrap_or("see `git bmad epic status`")
            ));
        }
        let passed = state.answers.get(&names::integration(&s.key)) == Some(&Answer::Continue);
        if let Some(c) = st
            .integration
            .as_ref()
            .filter(|c| c.light != "green" && !passed)
        {
            blockers.push(format!(
                "**{}** integration checkpoint: {}",
                s.key,
                super::integration::summary(c)
            ));
        }
    }
    facts.push(format!(
        "time in steps {}, cost ${usd:.2} where runners report it",
        crate::text::duration(ms)
    ));
    if let Some(closed) = &state.closed {
        match closed.complete {
            Some(true) => facts.push("the SM says the epic is complete".into()),
            Some(false) => facts.push("the SM says the epic needs more stories".into()),
            None if closed.answer.is_some() => {
                facts.push("the SM gave no completion signal".into())
            }
            None => {}
        }
        if let Some(pr) = &closed.retrospective {
            facts.push(format!("retrospective: {pr}"));
        }
    }
    let mut decisions: Vec<String> = state
        .decisions
        .iter()
        .map(|d| {
            let mut line = format!("{}: {} ({})", d.gate, d.answer.as_str(), d.at);
            if let Some(m) = d.message.as_deref().filter(|m| *m != d.answer.as_str()) {
                line.push_str(&format!(": {m}"));
            }
            line
        })
        .collect();
    if let Some(gate) = &state.gate {
        decisions.push(format!("{}: waiting: {}", gate.id, gate.question));
        blockers.push(format!(
            "the epic waits at its **{}** gate: `git bmad answer <{}> -s {}`",
            gate.id,
            gate.options
                .iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join("|"),
            names::session_name(&plan.epic)
        ));
    }
    if !blockers.is_empty() {
        blockers.push(format!(
            "Answer a story's gate in its session (`git bmad answer … -s <story>`), then `git bmad epic resume {}`.",
            plan.epic
        ));
    }
    Report {
        title: format!("Epic {}: auto-run progress", plan.epic),
        facts,
        rows,
        decisions,
        blockers,
    }
}

/// The report as markdown (the progress document).
pub fn render(plan: &Plan, state: &EpicState) -> String {
    let r = report(plan, state);
    let mut md = format!(
        "# {}

",
        r.title
    );
    md.push_str("Written by `git bmad epic run`; `git bmad epic status` shows the same.\n\n");
    for fact in &r.facts {
        md.push_str(&format!("- {fact}\n"));
    }
    md.push_str(&format!("\n| {} |\n", HEADER.join(" | ")));
    md.push_str(&format!("|{}\n", "---|".repeat(HEADER.len())));
    for row in &r.rows {
        let cells: Vec<String> = row.cells().iter().map(|c| escape(c)).collect();
        md.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    if !r.decisions.is_empty() {
        md.push_str("\n## Gates and answers\n\n");
        for line in &r.decisions {
            md.push_str(&format!("- {}\n", escape(line)));
        }
    }
    if !r.blockers.is_empty() {
        md.push_str("\n## Blockers and next steps\n\n");
        for line in &r.blockers {
            md.push_str(&format!("- {line}\n"));
        }
    }
    md
}

/// The report as one self-contained HTML page (no script, nothing fetched).
pub fn render_html(plan: &Plan, state: &EpicState) -> String {
    let r = report(plan, state);
    let h = |t: &str| crate::text::html_escape(&t.replace("**", "").replace('`', ""));
    let mut out = format!("<h1>{}</h1>\n<ul>", h(&r.title));
    for fact in &r.facts {
        out.push_str(&format!("<li>{}</li>", h(fact)));
    }
    out.push_str("</ul>\n<table><thead><tr>");
    for cell in HEADER {
        out.push_str(&format!("<th>{}</th>", h(cell)));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in &r.rows {
        out.push_str("<tr>");
        for (i, cell) in row.cells().iter().enumerate() {
            let class = match (i, *cell) {
                (1, "done") | (2, "green") => " class=\"good\"",
                (1, "failed" | "blocked" | "skipped" | "gated") | (2, "red") => " class=\"bad\"",
                (2, "yellow") => " class=\"warn\"",
                _ => "",
            };
            out.push_str(&format!("<td{class}>{}</td>", h(cell)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    for (title, lines) in [
        ("Gates and answers", &r.decisions),
        ("Blockers and next steps", &r.blockers),
    ] {
        if lines.is_empty() {
            continue;
        }
        out.push_str(&format!("<h2>{title}</h2>\n<ul>"));
        for line in lines {
            out.push_str(&format!("<li>{}</li>", h(line)));
        }
        out.push_str("</ul>\n");
    }
    let title = r.title.replace("**", "").replace('`', "");
    crate::text::html_page(&title, STYLE, &out)
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:1.5rem;max-width:70rem;color:#1b1b1b;background:#fff}table{border-collapse:collapse;width:100%;display:block;overflow-x:auto}th,td{border:1px solid #ccc;padding:.3rem .5rem;text-align:left;vertical-align:top}.good{background:#dff5e1}.bad{background:#fbe0e0}.warn{background:#fff4cc}@media (prefers-color-scheme:dark){body{color:#e8e8e8;background:#161616}th,td{border-color:#444}.good{background:#173d1f}.bad{background:#4a1c1c}.warn{background:#4a3f12}}";

fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

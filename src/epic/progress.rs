//! The epic's progress as markdown, committed on the epic's branch as
//! `docs/progress/epic-<id>-auto-run.md` whenever a run stops: reviewers read where every
//! story stands, with its PR, rounds and cost, in the same diff as the sprint status.
//! A pure rendering of the plan and the state replayed from the epic journal.

use super::plan::{Action, Plan};
use super::state::EpicState;

/// Where the progress document goes in the epic's worktree.
pub fn path(epic: &str) -> String {
    format!("docs/progress/epic-{epic}-auto-run.md")
}

/// The progress document.
pub fn render(plan: &Plan, state: &EpicState) -> String {
    let mut md = format!("# Epic {}: auto-run progress\n\n", plan.epic);
    md.push_str("Written by `git bmad epic run`; `git bmad epic status` shows the same.\n\n");
    if let Some(started) = &state.started {
        md.push_str(&format!(
            "- era {}, pipeline `{}`, {} review round(s) at most per story\n",
            started.era, started.pipeline, started.rounds
        ));
        md.push_str(&format!(
            "- base `{}`, {} at once, gates: {}\n",
            started.base, started.parallel, started.gates
        ));
    }
    md.push_str(&format!(
        "- state: {}\n\n",
        if state.finished {
            "finished"
        } else {
            "in progress (or stopped: `git bmad epic resume` continues)"
        }
    ));
    md.push_str("| story | stage | rounds | findings fixed | time | cost | pull request |\n");
    md.push_str("|---|---|---|---|---|---|---|\n");
    let mut open = Vec::new();
    for s in &plan.stories {
        let st = state.story(&s.key);
        let stage = match (&s.action, st.stage.as_str()) {
            (Action::Run, "") => "queued".to_owned(),
            (Action::Done, "") => "done before this run".to_owned(),
            (Action::Hold(why), "") => format!("held: {why}"),
            (_, stage) => stage.to_owned(),
        };
        let d = &st.detail;
        let cell = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            s.key,
            escape(&stage),
            cell(d.rounds.map(|r| r.to_string())),
            cell(d.findings_fixed.map(|r| r.to_string())),
            cell(d.run_time_ms.map(crate::text::duration)),
            cell(d.cost_usd.map(|c| format!("${c:.2}"))),
            cell(d.pr.clone()),
        ));
        if matches!(
            st.stage.as_str(),
            "blocked" | "failed" | "gated" | "skipped"
        ) {
            open.push(format!(
                "- **{}** ({}): {}",
                s.key,
                st.stage,
                d.reason.as_deref().unwrap_or("see `git bmad epic status`")
            ));
        }
    }
    if !open.is_empty() {
        md.push_str("\n## Blockers and next steps\n\n");
        for line in open {
            md.push_str(&line);
            md.push('\n');
        }
        md.push_str(&format!(
            "\nAnswer a story's gate in its session (`git bmad answer … -s <story>`), then `git bmad epic resume {}`.\n",
            plan.epic
        ));
    }
    md
}

/// A table cell: a `|` would end it.
fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

//! How `epic` prints a plan, the run's state and the epic's gate.

use serde_json::json;

use crate::cli::ui::Style;
use crate::cli::Context;
use crate::epic::plan::{Action, Plan};
use crate::epic::{self, EpicState};
use crate::session::schema::Stage;

/// An epic gate: the question, what bears on it, and the command that answers it.
pub(super) fn print_epic_gate(ctx: &Context, session: &str, gate: &epic::state::OpenGate) {
    let ui = &ctx.ui;
    ui.line(ui.paint(
        format!("Waiting for a human at the epic's {} gate", gate.id),
        Style::Bold,
    ));
    ui.line(format!("  {}", gate.question));
    for line in gate.evidence.lines() {
        ui.line(format!("    {line}"));
    }
    let options: Vec<&str> = gate.options.iter().map(|a| a.as_str()).collect();
    ui.status(format!(
        "Next: git bmad answer <{}> -s {session} (it continues the run)",
        options.join("|")
    ));
}

/// What a dry run shows besides the plan.
pub(super) struct DryRun<'a> {
    pub(super) config: &'a crate::config::Config,
    /// What the epic run does besides each story's pipeline.
    pub(super) actions: &'a [String],
    /// On GitHub Actions: the branch the story jobs are dispatched on.
    pub(super) dispatch_ref: Option<String>,
}

/// The plan; with the configuration, a dry run's actions too.
pub(super) fn print_plan(ctx: &Context, plan: &Plan, dry_run: Option<&DryRun<'_>>) {
    let ui = &ctx.ui;
    if ui.json() {
        let actions = dry_run.map(|d| d.actions);
        let dispatches: Option<Vec<String>> =
            dry_run.and_then(|d| d.dispatch_ref.as_deref()).map(|r| {
                plan.to_run()
                    .map(|s| dispatch_command(plan, r, &s.key))
                    .collect()
            });
        ui.print_json(&json!({
            "plan": plan,
            "dry_run": dry_run.is_some(),
            "epic_actions": actions,
            "dispatches": dispatches,
        }));
        return;
    }
    ui.line(format!(
        "Epic {}: {} stories, era {} (pipeline {}, up to {} review rounds)",
        ui.paint(&plan.epic, Style::Bold),
        plan.stories.len(),
        plan.era.as_str(),
        plan.pipeline,
        plan.rounds
    ));
    ui.line(format!(
        "  era {}: {}",
        plan.era.as_str(),
        plan.era_evidence
    ));
    for (i, wave) in plan.waves.iter().enumerate() {
        ui.line(format!("  wave {}: {}", i + 1, wave.join(", ")));
    }
    for s in &plan.stories {
        let what = match &s.action {
            Action::Run => "run".to_owned(),
            Action::Done => "done already".to_owned(),
            Action::Hold(why) => format!("held: {why}"),
        };
        ui.line(format!("  {}  [{}]  {what}", s.key, s.status));
        if s.action != Action::Run {
            continue;
        }
        if !s.depends_on.is_empty() {
            ui.line(format!("      depends on {}", s.depends_on.join(", ")));
        }
        match &s.stacked_on {
            Some(d) => ui.line(format!(
                "      branch stacked on {d}'s; its PR targets that branch"
            )),
            None => ui.line("      branch from the epic's base"),
        }
        if !s.merges.is_empty() {
            ui.line(format!(
                "      merges {} before it starts",
                s.merges.join(", ")
            ));
        }
        if !s.overlaps.is_empty() {
            ui.line(format!(
                "      never at the same time as {} (touches overlap)",
                s.overlaps.join(", ")
            ));
        }
        if s.integration_checkpoint {
            ui.line("      integration checkpoint after it (it has dependents)");
        }
        if let Some(why) = &s.asks_first {
            ui.line(format!(
                "      waits for a person before it starts ({why}): the epic's gate {}",
                epic::names::person_first(&s.key)
            ));
        }
        if s.pauses_after {
            ui.line(format!(
                "      work pauses after it until a person says continue (done_checkpoint): the epic's gate {}",
                epic::names::done_checkpoint(&s.key)
            ));
        }
        ui.line(format!("      pipeline: {}", s.stages.join(" → ")));
        if let Some(dry) = dry_run {
            let branch = epic::names::story_branch(dry.config, &s.key);
            let target = match &s.stacked_on {
                Some(d) => epic::names::story_branch(dry.config, d),
                None => "the epic's base".to_owned(),
            };
            if epic::acceptance_tests_planned(dry.config) {
                ui.line(
                    "      would first: have an agent of its own write failing acceptance tests from its criteria, kept out of its agents' reach (epic.acceptance_tests)",
                );
            }
            match &dry.dispatch_ref {
                None => ui.line(format!(
                    "      would: start session {} on branch {branch}, run {} with args {}, verify the story file, commit, then push and open a draft PR against {target} (when a remote and gh are set up)",
                    s.key, plan.pipeline, s.key
                )),
                Some(dispatch_ref) => ui.line(format!(
                    "      would: dispatch it to GitHub Actions ({}); its runner starts session {} on branch {branch}, runs {}, pushes the session after every step and opens a draft PR against {target}; the session comes back here when it ends",
                    dispatch_command(plan, dispatch_ref, &s.key),
                    s.key,
                    plan.pipeline
                )),
            }
        }
    }
    if let Some(dry) = dry_run {
        ui.line("  the epic run would also:");
        for action in dry.actions {
            ui.line(format!("      {action}"));
        }
        ui.status("Dry run: no agent was invoked, no session started, nothing pushed.");
    }
}

/// The `gh` command that dispatches story `key`'s first job.
fn dispatch_command(plan: &Plan, dispatch_ref: &str, key: &str) -> String {
    format!(
        "gh workflow run {} --ref {dispatch_ref} -f epic={} -f story={key} -f attempt=1",
        epic::actions::STORY_WORKFLOW,
        plan.epic
    )
}

pub(super) fn print_status(ctx: &Context, plan: &Plan, state: &EpicState) {
    let ui = &ctx.ui;
    if ui.json() {
        let stories: Vec<_> = plan
            .stories
            .iter()
            .map(|s| {
                let st = state.story(&s.key);
                json!({
                    "key": s.key,
                    "title": s.title,
                    "action": s.action,
                    "stage": (st.stage != Stage::NotStarted).then_some(st.stage),
                    "state": st,
                })
            })
            .collect();
        ui.print_json(&json!({
            "epic": plan.epic,
            "era": plan.era,
            "started": state.started,
            "finished": state.finished,
            "stopped": state.stopped,
            "gate": state.gate,
            "closed": state.closed,
            "stories": stories,
        }));
        return;
    }
    ui.line(format!(
        "Epic {}{}",
        ui.paint(&plan.epic, Style::Bold),
        match (state.finished, &state.stopped) {
            (true, Some(why)) => format!(" (finished early: {why})"),
            (true, None) => " (finished)".to_owned(),
            _ => String::new(),
        }
    ));
    for s in &plan.stories {
        let st = state.story(&s.key);
        let stage = match (&s.action, st.stage) {
            (Action::Run, Stage::NotStarted) => "queued".to_owned(),
            (Action::Done, Stage::NotStarted) => "done already".to_owned(),
            (Action::Hold(why), Stage::NotStarted) => format!("held: {why}"),
            (_, stage) => stage.to_string(),
        };
        let mut line = format!("  {:<28} {stage}", s.key);
        let d = &st.detail;
        if let Some(r) = d.rounds {
            line.push_str(&format!("  rounds {r}"));
        }
        if let Some(c) = d.cost_usd {
            line.push_str(&format!("  ${c:.2}"));
        }
        if let Some(pr) = &d.pr {
            line.push_str(&format!("  {pr}"));
        }
        ui.line(line);
        if let Some(runner) = &d.runner {
            ui.line(format!("      on GitHub Actions, {runner}"));
        }
        if let Some(reason) = &d.reason {
            ui.line(format!("      {reason}"));
        }
        if let Some(acceptance) = &d.acceptance {
            ui.line(format!("      acceptance tests: {acceptance}"));
        }
        if let Some(tests) = d.tests.as_ref().filter(|_| st.stage == Stage::Done) {
            ui.line(format!("      {tests}"));
        }
        if let Some(checked) = &st.integration {
            ui.line(format!(
                "      integration checkpoint: {}",
                epic::integration::summary(checked)
            ));
        }
    }
    if let Some(closed) = &state.closed {
        let signal = match closed.complete {
            Some(true) => Some("the SM says the epic is complete"),
            Some(false) => Some("the SM says the epic needs more stories"),
            None => closed
                .answer
                .as_ref()
                .map(|_| "the SM gave no completion signal"),
        };
        if let Some(signal) = signal {
            ui.line(format!("  close-out: {signal}"));
        }
        if let Some(pr) = &closed.retrospective {
            ui.line(format!("  retrospective: {pr}"));
        }
    }
    if let Some(gate) = &state.gate {
        print_epic_gate(ctx, &epic::names::session_name(&plan.epic), gate);
    }
}

//! `git bmad run`, and the printing that `resume` and `answer` share with it.

use clap::Args;
use serde_json::json;

use crate::bmad::analysis::confidence::Format;
use crate::cli::error::{exit, CommandError};
use crate::cli::progress::Progress;
use crate::cli::ui::{Style, Ui};
use crate::cli::Context;
use crate::config::ProgressMode;
use crate::runner::interrupt;
use crate::session::schema::Next;
use crate::session::{self, Body, Event, Session};
use crate::supervisor::{self, Outcome, Request, RunOptions};
use crate::text::{dollars, duration, first_line_within};

/// Run a playbook in the current session: its steps one after the other, each in a fresh
/// agent process, until a gate, a failure or the end.
///
/// The playbook is validated first; nothing runs if it has an error. A gate parks the run
/// (exit 3) until `git bmad answer`; a crash or Ctrl-C is continued by `git bmad resume`.
/// Exit codes: 0 done, 3 waiting at a gate, 5 a step failed under `stop`, 6 the invocation
/// cap was reached, 7 the run's time limit was reached, 130 interrupted.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The playbook: a name in .bmad/playbooks/, a built-in (auto-feature, auto-validate), or
    /// a file (default: the one named by `start --playbook`)
    pub playbook: Option<String>,
    /// Arguments for the steps ({args} in commands; appended to agent prompts)
    #[arg(trailing_var_arg = true)]
    pub args: Vec<String>,
    /// Session id, id prefix or name (default: the current worktree's session)
    #[arg(long, short = 's')]
    pub session: Option<String>,
    #[command(flatten)]
    pub progress: ProgressArg,
}

/// `--progress`, shared by `run`, `resume` and `answer`.
#[derive(Debug, Args)]
pub struct ProgressArg {
    /// How to show progress: verbose (every step), summary (a line every 5 operations or
    /// 30 s), silent (only the end), streaming (a live line while a step runs over 30 s);
    /// default: orchestration.progress (git config bmad.progress), else verbose
    #[arg(long, value_name = "MODE", value_parser = ["verbose", "summary", "silent", "streaming"])]
    pub progress: Option<String>,
}

/// Run `run`.
pub fn cmd_run(ctx: &Context, args: &RunArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let sessions = session::Repo::of(&repo);
    let s = session::locate(sessions, args.session.as_deref())?;
    let source = match &args.playbook {
        Some(query) => {
            let dirs = supervisor::playbook_dirs(sessions, &s)?;
            supervisor::resolve(query, &ctx.cwd, &dirs)?
        }
        None => supervisor::playbook_of_session(sessions, &s, &ctx.cwd)?,
    };
    supervise_and_report(
        ctx,
        &repo,
        &s,
        Request::Start {
            source,
            args: args.args.clone(),
        },
        &args.progress,
    )
}

/// Drive the supervisor with progress on stderr, then print where the run stopped.
pub(super) fn supervise_and_report(
    ctx: &Context,
    repo: &crate::git::Repo,
    s: &Session,
    request: Request,
    progress_arg: &ProgressArg,
) -> Result<u8, CommandError> {
    let interrupt = interrupt::install()
        .map_err(|e| CommandError::failed(format!("could not catch Ctrl-C: {e}")))?;
    let config = ctx.config(repo)?;
    if let Ok(worktree) = s.open_worktree(repo) {
        super::hooks::warn_if_unguarded(ctx, worktree.as_ref().unwrap_or(repo));
    }
    let ui = &ctx.ui;
    let mode = match &progress_arg.progress {
        _ if !ui.chatty() => ProgressMode::Silent,
        Some(mode) => ProgressMode::parse(mode).unwrap_or_default(),
        None => config.orchestration.progress,
    };
    let journal = session::read_journal(session::Repo::of(repo), &s.id)?;
    let events: Vec<Event> = journal.events().cloned().collect();
    let mut printer = Progress::new(mode, &events);
    let mut observer = |event: &Event| printer.event(event, || progress(ui, event));
    let report = supervisor::supervise(
        session::Repo::of(repo),
        s,
        request,
        RunOptions {
            time_limit: None,
            purse: None,
            config: &config,
            feature_env: crate::bmad::speckit::FeatureEnv::from_process(),
            observer: &mut observer,
            interrupt: &interrupt,
        },
    );
    printer.finish();
    let report = report?;
    let code = match &report.outcome {
        Outcome::Completed | Outcome::Aborted => exit::OK,
        Outcome::Gated { .. } => exit::GATED,
        Outcome::Failed { .. } => exit::STEP_FAILED,
        Outcome::InvocationLimit { .. }
        | Outcome::BudgetLimit { .. }
        | Outcome::TokenLimit { .. }
        | Outcome::PremiumRequestLimit { .. } => exit::INVOCATION_LIMIT,
        Outcome::RunTimeLimit { .. } => exit::RUN_TIME_LIMIT,
        Outcome::Interrupted => exit::INTERRUPTED,
    };
    if ui.json() {
        ui.print_json(&json!({
            "session": s.id,
            "playbook": report.playbook.name,
            "result": report.outcome,
            "state": report.state,
            "exit_code": code,
        }));
        return Ok(code);
    }
    let total = report.playbook.steps().count();
    let done = report
        .playbook
        .steps()
        .filter(|st| report.state.finished(&st.id))
        .count();
    match &report.outcome {
        Outcome::Completed => {
            ui.line(format!(
                "{} playbook {}: {done}/{total} steps finished, {} invocation(s), {} in steps.",
                ui.paint("Completed", Style::Green),
                report.playbook.name,
                report.state.invocations,
                duration(report.state.run_time_ms)
            ));
            ui.status("Next: review the work and the journal (git bmad journal), then git bmad finish");
        }
        Outcome::Gated { gate } => print_gate(ui, gate, done, total, false),
        Outcome::Failed { steps } => {
            ui.line(format!(
                "{} step(s) {} failed under on_error: stop ({done}/{total} steps finished).",
                ui.paint("Stopped:", Style::Red),
                steps.join(", ")
            ));
            ui.status("Next: read why (git bmad journal), fix it, then `git bmad resume` runs the failed step(s) again; `git bmad rollback --step <id>` undoes a step's changes");
        }
        Outcome::InvocationLimit { limit } => {
            ui.line(format!("{} the run reached its cap of {limit} invocations ({done}/{total} steps finished).", ui.paint("Stopped:", Style::Red)));
            ui.status("Next: look at why steps repeat (git bmad journal); raise limits.max_invocations in the playbook only if the work needs it");
        }
        Outcome::BudgetLimit { unpriced, .. } if !unpriced.is_empty() => {
            ui.line(format!("{} the agents ran {}, which git-bmad has no price for, so the budget cannot count what they spent ({done}/{total} steps finished).", ui.paint("Stopped:", Style::Red), unpriced.join(", ")));
            ui.status("Next: price each under orchestration.prices in .bmad/config.yaml (US dollars per million tokens: {input, output, cached_input}), then git bmad resume");
        }
        Outcome::BudgetLimit { limit_micro_usd, spent_micro_usd, .. } => {
            ui.line(format!("{} the agents have spent {} of the {} budget ({done}/{total} steps finished).", ui.paint("Stopped:", Style::Red), dollars(*spent_micro_usd as f64 / 1e6), dollars(*limit_micro_usd as f64 / 1e6)));
            ui.status("Next: git bmad journal shows each step's cost; to go on with more, git bmad resume --budget-usd <total>, or raise orchestration.budget_usd in .bmad/config.yaml");
        }
        Outcome::TokenLimit { limit, spent } => {
            ui.line(format!("{} the agents have used {spent} of the {limit} tokens budgeted ({done}/{total} steps finished).", ui.paint("Stopped:", Style::Red)));
            ui.status("Next: git bmad journal shows each step's tokens; raise orchestration.budget_tokens in .bmad/config.yaml to go on");
        }
        Outcome::PremiumRequestLimit { limit_milli, spent_milli } => {
            ui.line(format!("{} the agents have spent {} of the {} premium requests budgeted ({done}/{total} steps finished).", ui.paint("Stopped:", Style::Red), *spent_milli as f64 / 1e3, *limit_milli as f64 / 1e3));
            ui.status("Next: git bmad journal shows each step's premium requests; raise orchestration.budget_premium_requests in .bmad/config.yaml, then git bmad resume");
        }
        Outcome::RunTimeLimit { limit_secs } => {
            ui.line(format!("{} the run reached its time limit of {} ({done}/{total} steps finished).", ui.paint("Stopped:", Style::Red), duration(limit_secs * 1000)));
            ui.status("Next: git bmad journal shows where the time went; raise limits.max_run_time in the playbook to go on");
        }
        Outcome::Interrupted => {
            ui.line(format!("{} the running step was stopped; its state is saved ({done}/{total} steps finished).", ui.paint("Interrupted:", Style::Yellow)));
            ui.status("Next: git bmad resume");
        }
        Outcome::Aborted => ui.line(format!("Run aborted ({done}/{total} steps finished). The session's work and journal stay; git bmad finish or remove ends it.")),
    }
    Ok(code)
}

/// Evidence lines a Summary gate shows before pointing at the rest.
const SUMMARY_LINES: usize = 8;

/// Show a gate in the format its confidence chose (seed 2b.7): Minimal (≥ 80) is one line
/// and the confirming answer; Summary (50–79) adds the first lines of what happened; Full
/// (< 50, and gates journaled without a confidence) shows everything and asks for a reason.
/// `full` forces the full form, which `git bmad status --gate` offers for every gate.
pub(super) fn print_gate(
    ui: &Ui,
    gate: &crate::session::run_state::Gate,
    done: usize,
    total: usize,
    full: bool,
) {
    let format = if full {
        Format::Full
    } else {
        gate.format
            .as_deref()
            .and_then(|f| serde_json::from_value(f.into()).ok())
            .unwrap_or(Format::Full)
    };
    let confidence = gate
        .confidence
        .map(|c| format!(", confidence {c}"))
        .unwrap_or_default();
    ui.line(format!(
        "{} at step `{}` ({}, {done}/{total} steps finished{confidence})\n",
        ui.paint("Waiting for you", Style::Yellow),
        gate.step,
        gate.trigger
    ));
    ui.line(format!("  {}", gate.question));
    let options: Vec<&str> = gate.kind.options().iter().map(|a| a.as_str()).collect();
    let details = "  Details: git bmad status --gate (everything), git bmad journal (the log)";
    if format == Format::Minimal {
        ui.line(format!(
            "\n  Confirm: git bmad answer continue   (or <{}>)",
            options.join("|")
        ));
        ui.line(details);
        return;
    }
    let lines: Vec<&str> = gate.evidence.lines().collect();
    if !gate.evidence.trim().is_empty() {
        ui.line("\n  What happened:");
        let shown = if format == Format::Summary {
            SUMMARY_LINES.min(lines.len())
        } else {
            lines.len()
        };
        for line in &lines[..shown] {
            ui.line(format!("    {line}"));
        }
        if shown < lines.len() {
            ui.line(format!("    … {} more line(s)", lines.len() - shown));
        }
    }
    if format == Format::Full {
        ui.line(format!(
            "\n  Answer explicitly: git bmad answer <{}> -m \"what you checked and why\"",
            options.join("|")
        ));
        ui.line("  The complete log: git bmad journal");
    } else {
        ui.line(format!(
            "\n  Answer with: git bmad answer <{}> [-m \"what you did or why\"]",
            options.join("|")
        ));
        ui.line(details);
    }
}

/// One line per journaled step event while a run goes on.
fn progress(ui: &Ui, event: &Event) -> Option<String> {
    let step = event.step.as_deref().unwrap_or("");
    let text = match &event.body {
        Body::RunStarted(run) => format!(
            "Running playbook {} ({} steps)",
            run.playbook,
            run.steps.len()
        ),
        Body::RunResumed(_) => "Resuming the run".into(),
        Body::StepStarted(started) => format!(
            "▸ {step}  {} ({}, attempt {})",
            first_line_within(&started.command, 70),
            started.runner,
            started.attempt.max(1)
        ),
        Body::StepCompleted(_) => format!(
            "  {} {step}{}",
            ui.paint("✓", Style::Green),
            match event.decision {
                Some(session::Decision::Human) => " accepted by a human".to_owned(),
                _ if event.trigger.as_deref() == Some("crash_recovery") =>
                    " found done after the crash (postconditions met)".to_owned(),
                _ => format!(" done in {}", duration(event.duration_ms.unwrap_or(0))),
            }
        ),
        Body::StepFailed(failed) => format!(
            "  {} {step} {} → {}",
            ui.paint("✗", Style::Red),
            failed.reason.as_deref().unwrap_or("failed"),
            failed.next.unwrap_or(Next::Stop).as_str()
        ),
        Body::Escalated(escalated) => format!(
            "  {} {step} escalated ({}): {}",
            ui.paint("!", Style::Yellow),
            event.trigger.as_deref().unwrap_or_default(),
            escalated.reason.as_deref().unwrap_or_default()
        ),
        Body::StepSkipped(skipped) => format!("  – {step} skipped ({})", skipped.reason),
        Body::Retry(_) => format!(
            "  ↻ {step} runs again ({})",
            event.trigger.as_deref().unwrap_or_default()
        ),
        Body::StallDetected(_) => format!(
            "  {} {step}: same output and same changes as the attempt before: a stall",
            ui.paint("!", Style::Yellow)
        ),
        Body::GateAnswered(answered) => format!(
            "Answered `{}` at {step}",
            answered.answer.map(|a| a.as_str()).unwrap_or_default()
        ),
        _ => return None,
    };
    Some(text)
}

//! `git bmad status`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::{ago, Style};
use crate::cli::Context;
use crate::session::{self, SessionState};
use crate::supervisor;

/// Show one session: status, step, checkpoints, last event.
///
/// Without an argument, shows the session of the worktree you are in; outside any session,
/// the only one, or where every session stands when there are several.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub session: super::SessionArg,
    /// Show every checkpoint, not just the newest ten
    #[arg(long)]
    pub all: bool,
    /// Show the open gate in full, whatever format its confidence chose
    #[arg(long)]
    pub gate: bool,
    /// Follow the run live until it ends or waits at a gate: the step, %, elapsed time and
    /// an estimate of what is left (a live line on a terminal, a line per change otherwise,
    /// a JSON object per change with --json); exits 3 at a gate, 5 when the run stopped
    #[arg(long, conflicts_with_all = ["gate", "all"])]
    pub watch: bool,
    /// How often --watch reads the journal
    #[arg(
        long,
        default_value = "1s",
        value_name = "DURATION",
        requires = "watch"
    )]
    pub interval: String,
}

/// Run `status`.
pub fn cmd_status(ctx: &Context, args: &StatusArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let sessions = session::Repo::of(&repo);
    let s = match session::locate(sessions, args.session.query()) {
        // Outside any session, with just one session in the repository: that one is meant;
        // with none or several, where each stands.
        Err(session::LocateError::NotInSession { workdir }) => {
            let mut all = session::list(sessions)?;
            if all.len() != 1 {
                if args.watch || args.gate {
                    return Err(session::LocateError::NotInSession { workdir }.into());
                }
                return overview(ctx, &all);
            }
            all.remove(0)
        }
        other => other?,
    };
    if args.watch {
        return watch(ctx, sessions, &s, &args.interval);
    }
    let journal = session::read_journal(sessions, &s.id)?;
    let state = SessionState::replay(journal.events());
    let run = crate::session::run_state::RunState::replay(journal.events());
    let chain = session::chain(sessions, &s)?;
    let moved = session::ref_record::foreign_moves(sessions, &s.id)?;
    let last = journal.events().last();
    if args.gate {
        let Some(gate) = &run.gate else {
            return Err(CommandError::failed(format!(
                "session {} is not waiting at a gate",
                s.name
            )));
        };
        if ctx.ui.json() {
            ctx.ui.print_json(gate);
            return Ok(exit::OK);
        }
        let steps = run.manifest.as_ref().map_or(&[][..], |m| &m.steps[..]);
        let done = steps.iter().filter(|id| run.finished(id)).count();
        super::run::print_gate(&ctx.ui, gate, done, steps.len(), true);
        return Ok(exit::OK);
    }
    if ctx.ui.json() {
        ctx.ui.print_json(&json!({
            "session": s,
            "state": state,
            "run": run.manifest.is_some().then_some(&run),
            "checkpoints": chain.iter().enumerate().map(|(i, c)| json!({
                "number": chain.len() - i,
                "checkpoint": c,
            })).collect::<Vec<_>>(),
            "last_event": last,
            "not_written_by_git_bmad": journal.unsealed,
            "moved_outside_git_bmad": moved.iter().map(|m| json!({
                "what": m.describe(), "fix": m.fix(),
            })).collect::<Vec<_>>(),
            "not_trusted": journal.untrusted().map(|e| serde_json::json!({
                "seq": e.seq, "event": e.kind(), "step": e.step, "from": e.from,
            })).collect::<Vec<_>>(),
        }));
        return Ok(exit::OK);
    }
    print_text(ctx, args, &s, &journal, &state, &run, &chain);
    for m in &moved {
        ctx.ui.line(ctx.ui.paint(
            format!(
                "  record       {}: the next run parks at a gate before its next step; to put it back: {}",
                m.describe(),
                m.fix()
            ),
            Style::Red,
        ));
    }
    Ok(exit::OK)
}

/// Every session, as `list` shows them, when `status` is asked outside any.
fn overview(ctx: &Context, all: &[session::Session]) -> Result<u8, CommandError> {
    if ctx.ui.json() {
        ctx.ui.print_json(&json!({ "sessions": all }));
        return Ok(exit::OK);
    }
    let code = super::list::cmd_list(
        ctx,
        &super::list::ListArgs {
            disk: false,
            removed: false,
            remote: None,
        },
    )?;
    if !all.is_empty() {
        ctx.ui
            .status("git bmad status <session> shows one; inside its worktree, that one");
    }
    Ok(code)
}

/// The session, its run and its checkpoints, for a human.
fn print_text(
    ctx: &Context,
    args: &StatusArgs,
    s: &session::Session,
    journal: &session::Journal,
    state: &SessionState,
    run: &crate::session::run_state::RunState,
    chain: &[session::Checkpoint],
) {
    let last = journal.events().last();
    let ui = &ctx.ui;
    let status_style = match state.status {
        session::Status::Running | session::Status::Completed => Style::Green,
        session::Status::Gated => Style::Yellow,
        session::Status::Failed | session::Status::Pruned => Style::Red,
    };
    ui.line(format!(
        "Session {} ({})  {}",
        ui.paint(s.id.as_str(), Style::Bold),
        s.name,
        ui.paint(state.status.as_str(), status_style)
    ));
    ui.line(format!("  branch       {}", s.short_branch()));
    ui.line(format!(
        "  worktree     {}{}",
        s.worktree.display(),
        match (s.worktree_exists, s.elsewhere) {
            (_, true) => "  (on another machine: git bmad sync brings its progress here)",
            (true, false) => "",
            (false, false) => "  (missing: run git bmad prune)",
        }
    ));
    ui.line(format!(
        "  step         {}",
        state.current_step.as_deref().unwrap_or("-")
    ));
    if let Some(manifest) = &run.manifest {
        print_run(ui, run, manifest);
    }
    match last {
        Some(e) => ui.line(format!(
            "  journal      {} events; last #{} {} at {}",
            state.events,
            e.seq,
            e.kind(),
            e.ts
        )),
        None => ui.line("  journal      empty"),
    }
    for forged in &journal.unsealed {
        ui.line(ui.paint(
            format!(
                "  journal      {} was NOT written by git-bmad and is ignored; `git bmad doctor` says more",
                forged.describe()
            ),
            Style::Red,
        ));
    }
    let untrusted: Vec<&session::Event> = journal.untrusted().collect();
    if let Some(first) = untrusted.first() {
        ui.line(ui.paint(
            format!(
                "  journal      {} event(s) {}: shown, never acted on (`git bmad doctor` says how to trust another machine)",
                untrusted.len(),
                first.untrusted_note()
            ),
            Style::Yellow,
        ));
    }
    if !state.rolled_back.is_empty() {
        ui.line(format!(
            "  rollbacks    {} ({} events rolled back; `git bmad undo` reverses the last)",
            state.rollbacks.len(),
            state.rolled_back.len()
        ));
    }
    ui.line(format!(
        "  checkpoints  {} (newest first; roll back with `git bmad rollback <#>`)",
        chain.len()
    ));
    let shown = if args.all {
        chain.len()
    } else {
        chain.len().min(10)
    };
    for (i, c) in chain.iter().take(shown).enumerate() {
        ui.line(format!(
            "    {:>4}  {}  {:>8}  {}{}",
            chain.len() - i,
            ui.paint(c.id.to_hex_with_len(10).to_string(), Style::Yellow),
            ago(c.time),
            c.label,
            c.trailers
                .step
                .as_deref()
                .map(|s| format!("  [step {s}]"))
                .unwrap_or_default()
        ));
    }
    if shown < chain.len() {
        ui.line(ui.paint(
            format!("    … {} older (--all shows them)", chain.len() - shown),
            Style::Dim,
        ));
    }
}

/// `status --watch`: follow the run by reading its journal until it settles.
fn watch(
    ctx: &Context,
    repo: &session::Repo,
    s: &session::Session,
    interval: &str,
) -> Result<u8, CommandError> {
    use std::io::{IsTerminal, Write};
    let every = crate::time::parse_duration(interval).ok_or_else(|| {
        CommandError::usage(format!("--interval {interval:?} is not a duration"))
            .hinted("write it as 1s, 5s or 1m")
    })?;
    let live = std::io::stdout().is_terminal() && !ctx.ui.json();
    let mut last_shown = String::new();
    loop {
        let journal = session::read_journal(repo, &s.id)?;
        let events: Vec<session::Event> = journal.events().cloned().collect();
        let Some(progress) = supervisor::run_progress(&events, crate::time::Timestamp::now())
        else {
            return Err(CommandError::failed(format!(
                "session {} has no playbook run to watch",
                s.name
            ))
            .hinted(format!("start one: git bmad run <playbook> -s {}", s.name)));
        };
        let line = progress_line(&progress);
        // Off a terminal, a line per change; elapsed time alone is no change.
        let key = format!(
            "{:?}{:?}{:?}{}",
            progress.running, progress.gated_at, progress.ended, progress.done
        );
        if ctx.ui.json() {
            if key != last_shown {
                let _ = writeln!(
                    std::io::stdout(),
                    "{}",
                    serde_json::to_string(&progress).unwrap_or_default()
                );
            }
        } else if live {
            let line = crate::cli::ui::safe_for_terminal(&line);
            let _ = write!(std::io::stdout(), "\r\x1b[K{line}");
            let _ = std::io::stdout().flush();
        } else if key != last_shown {
            ctx.ui.line(&line);
        }
        last_shown = key;
        if progress.settled() {
            if live {
                let _ = writeln!(std::io::stdout());
            }
            return Ok(match (&progress.gated_at, progress.ended.as_deref()) {
                (Some(_), _) => exit::GATED,
                (None, Some("completed")) => exit::OK,
                _ => exit::STEP_FAILED,
            });
        }
        std::thread::sleep(every);
    }
}

/// `[implement] 3/7 steps (42%), 5m10s elapsed, about 7m00s left`.
fn progress_line(p: &supervisor::RunProgress) -> String {
    let what = match (&p.ended, &p.gated_at, &p.running) {
        (Some(how), _, _) => format!("run {how}"),
        (None, Some(step), _) => format!("waiting at the gate of {step}: git bmad answer"),
        (None, None, Some(step)) => format!("[{step}]"),
        (None, None, None) => "between steps".to_owned(),
    };
    let left = match (p.settled(), p.eta_ms) {
        (false, Some(ms)) => format!(", about {} left", crate::text::duration(ms)),
        _ => String::new(),
    };
    format!(
        "{}: {what} {}/{} steps ({}%), {} elapsed{left}",
        p.playbook,
        p.done,
        p.total,
        p.percent,
        crate::text::duration(p.elapsed_ms)
    )
}

/// The run's lines of `status`: progress, what remains, the last decision, the gate.
fn print_run(
    ui: &crate::cli::ui::Ui,
    run: &crate::session::run_state::RunState,
    manifest: &crate::session::run_state::Manifest,
) {
    let (done, total) = run.progress();
    let remaining: Vec<&str> = manifest
        .steps
        .iter()
        .filter(|st| !run.finished(st))
        .map(String::as_str)
        .collect();
    let pct = (done * 100).checked_div(total).unwrap_or(100);
    ui.line(format!(
        "  playbook     {}: {done}/{total} steps finished ({pct}%), {} invocation(s){}",
        manifest.playbook,
        run.invocations,
        match &run.ended {
            Some(crate::session::run_state::Ended::Completed) => ", completed".to_owned(),
            Some(crate::session::run_state::Ended::Aborted) => ", aborted".to_owned(),
            Some(crate::session::run_state::Ended::Stopped(why)) =>
                format!(", stopped ({why}; `git bmad resume` goes on)"),
            None => String::new(),
        }
    ));
    if !remaining.is_empty() {
        ui.line(format!("  remaining    {}", remaining.join(", ")));
    }
    if let Some((step, decision, event)) = &run.last_decision {
        ui.line(format!(
            "  last         {event} at {step} ({})",
            decision.as_str()
        ));
    }
    if let Some(gate) = &run.gate {
        ui.line(format!(
            "  gate         {} at `{}`: {}",
            ui.paint("waiting for you", Style::Yellow),
            gate.step,
            gate.question
        ));
        ui.line(format!(
            "               answer with: git bmad answer <{}>",
            gate.kind
                .options()
                .iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join("|")
        ));
    }
}

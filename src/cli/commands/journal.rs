//! `git bmad journal`: show, export, append.

use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::Style;
use crate::cli::Context;
use crate::policy::secrets::{redact, redact_json};
use crate::session::{self, Body, Decision, NewEvent, SessionState};

/// Show a session's journal, oldest event first.
///
/// The journal lives in git notes on the checkpoint commits (refs/notes/bmad/<id>); plain git
/// shows it too: git log --notes='bmad/*' refs/bmad/sessions/<id>/checkpoints
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct JournalArgs {
    #[command(flatten)]
    pub session: super::SessionArg,
    /// Output format (--json is the same as --format json)
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Export or append instead of showing
    #[command(subcommand)]
    pub action: Option<JournalAction>,
}

/// How to show the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for the terminal
    Text,
    /// The Markdown of journal.md
    Md,
    /// A JSON array of events
    Json,
}

/// What else `journal` can do.
#[derive(Debug, Subcommand)]
pub enum JournalAction {
    /// Write the rendered journal to .bmad/sessions/<id>/journal.md in the session worktree
    Export {
        #[command(flatten)]
        session: super::SessionArg,
    },
    /// Append an event (for scripts and agents' hooks)
    Append(AppendArgs),
    /// Journal the events the reference-transaction hook kept for later (the hook runs this)
    #[command(hide = true)]
    Flush {
        #[command(flatten)]
        session: super::SessionArg,
    },
}

/// Arguments of `journal append`.
#[derive(Debug, Args)]
pub struct AppendArgs {
    /// The event name, for example step_started or note
    pub event: String,
    /// The step it belongs to
    #[arg(long)]
    pub step: Option<String>,
    /// Who decided
    #[arg(long, value_parser = ["auto", "escalated", "human"])]
    pub decision: Option<String>,
    /// What caused it
    #[arg(long)]
    pub trigger: Option<String>,
    /// How long it took, in milliseconds
    #[arg(long, value_name = "MS")]
    pub duration_ms: Option<u64>,
    /// A human's answer
    #[arg(long)]
    pub response: Option<String>,
    /// Event-specific detail, a JSON value
    #[arg(long, value_name = "JSON")]
    pub detail: Option<String>,
    /// Session id, id prefix or name (default: the current worktree's session)
    #[arg(long, short = 's')]
    pub session: Option<String>,
}

/// Run `journal`.
pub fn cmd_journal(ctx: &Context, args: &JournalArgs) -> Result<u8, CommandError> {
    match &args.action {
        None => show(ctx, args),
        Some(JournalAction::Export { session }) => export(ctx, session.query()),
        Some(JournalAction::Append(append)) => cmd_append(ctx, append),
        Some(JournalAction::Flush { session }) => {
            let repo = ctx.repo()?;
            let sessions = session::Repo::of(&repo);
            let s = session::locate(sessions, session.query())?;
            session::flush_deferred(sessions, &s)?;
            Ok(exit::OK)
        }
    }
}

fn show(ctx: &Context, args: &JournalArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let sessions = session::Repo::of(&repo);
    let s = session::locate(sessions, args.session.query())?;
    let journal = session::read_journal(sessions, &s.id)?;
    let state = SessionState::replay(journal.events());
    let format = if ctx.ui.json() {
        Format::Json
    } else {
        args.format
    };
    match format {
        Format::Json => {
            let events: Vec<_> = journal
                .entries
                .iter()
                .map(|e| {
                    let mut v = json!(e.event);
                    v["checkpoint"] = json!(e.checkpoint.to_string());
                    v["rolled_back"] = json!(state.rolled_back.contains(&e.event.seq));
                    v["trusted"] = json!(e.event.is_trusted());
                    v
                })
                .collect();
            ctx.ui.print_json(&events);
        }
        Format::Md => ctx
            .ui
            .line(session::render_markdown(&s, &journal).trim_end()),
        Format::Text => {
            let rows: Vec<Vec<String>> = journal
                .entries
                .iter()
                .map(|e| &e.event)
                .map(|e| {
                    let rolled_back = state.rolled_back.contains(&e.seq);
                    let name = if !e.is_trusted() {
                        ctx.ui.paint(
                            format!("{} ({})", e.kind(), e.untrusted_note()),
                            Style::Yellow,
                        )
                    } else if rolled_back {
                        ctx.ui
                            .paint(format!("{} (rolled back)", e.kind()), Style::Dim)
                    } else {
                        e.kind().to_owned()
                    };
                    vec![
                        e.seq.to_string(),
                        e.ts.clone(),
                        name,
                        e.step.clone().unwrap_or_else(|| "-".into()),
                        e.decision
                            .map(|d| d.as_str().to_owned())
                            .unwrap_or_else(|| "-".into()),
                        session_details(e),
                    ]
                })
                .collect();
            ctx.ui.table(
                &["#", "TIME", "EVENT", "STEP", "DECISION", "DETAILS"],
                &rows,
            );
        }
    }
    for bad in &journal.malformed {
        ctx.ui.status(format!(
            "warning: skipped a journal line that is not an event: {bad}"
        ));
    }
    Ok(exit::OK)
}

/// The DETAILS column: duration, response, then the same summary journal.md shows.
fn session_details(e: &session::Event) -> String {
    let mut parts = Vec::new();
    if let Some(ms) = e.duration_ms {
        parts.push(format!("{ms} ms"));
    }
    if let Some(r) = &e.response {
        parts.push(format!("response: {r}"));
    }
    let summary = session::event_summary(e);
    if !summary.is_empty() {
        parts.push(summary.replace('`', ""));
    }
    parts.join("; ")
}

fn export(ctx: &Context, query: Option<&str>) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let sessions = session::Repo::of(&repo);
    let s = session::locate(sessions, query)?;
    session::write_rendered(&s, &session::read_journal(sessions, &s.id)?)?;
    let path = s.worktree.join(session::journal_md_path(&s.id));
    if ctx.ui.json() {
        ctx.ui.print_json(&json!({"path": path}));
    } else {
        ctx.ui.line(format!("Wrote {}", path.display()));
    }
    Ok(exit::OK)
}

fn cmd_append(ctx: &Context, args: &AppendArgs) -> Result<u8, CommandError> {
    let detail = match &args.detail {
        None => serde_json::Value::Null,
        Some(text) => serde_json::from_str(text)
            .map_err(|e| CommandError::usage(format!("--detail is not valid JSON: {e}")))?,
    };
    if args.event.trim().is_empty() || args.event.contains(char::is_whitespace) {
        return Err(CommandError::usage(format!(
            "invalid event name {:?}: use a single word such as step_started",
            args.event
        )));
    }
    if Body::is_reserved(&args.event) {
        return Err(CommandError::policy(format!(
            "{} is one of git-bmad's own event kinds; only git-bmad writes those",
            args.event
        ))
        .hinted("journal a kind of your own, for example note or review_note"));
    }
    let decision = args.decision.as_deref().map(|d| match d {
        "auto" => Decision::Auto,
        "escalated" => Decision::Escalated,
        _ => Decision::Human,
    });
    let repo = ctx.repo()?;
    let sessions = session::Repo::of(&repo);
    let s = session::locate(sessions, args.session.as_deref())?;
    let event = session::record(
        sessions,
        &s,
        // Nothing a script hands over is stored unredacted.
        NewEvent::new(Body::from_parts(args.event.clone(), redact_json(detail)))
            .step(args.step.as_deref().map(redact))
            .decision(decision)
            .trigger(args.trigger.as_deref().map(redact))
            .duration_ms(args.duration_ms)
            .response(args.response.as_deref().map(redact)),
    )?;
    if ctx.ui.json() {
        ctx.ui.print_json(&event);
    } else {
        ctx.ui.line(format!("#{} {}", event.seq, event.kind()));
    }
    Ok(exit::OK)
}

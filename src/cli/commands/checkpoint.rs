//! `git bmad checkpoint`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::Style;
use crate::cli::Context;
use crate::policy::secrets::{redact, Finding};
use crate::session;

/// Snapshot the session worktree as a checkpoint.
///
/// Records tracked and untracked (not ignored) files as a commit on
/// refs/bmad/sessions/<id>/checkpoints; the index, HEAD and branch are not touched.
/// Changed files are scanned first: one holding a secret is kept out of the checkpoint
/// (exit 4), so the secret never enters the object database.
#[derive(Debug, Args)]
pub struct CheckpointArgs {
    /// A one-line label
    #[arg(short, long, value_name = "LABEL", default_value = "manual checkpoint")]
    pub message: String,
    /// Tag the checkpoint with a step id (`rollback --step` finds it)
    #[arg(long)]
    pub step: Option<String>,
    /// Session id, id prefix or name (default: the current worktree's session)
    #[arg(long, short = 's')]
    pub session: Option<String>,
}

/// Run `checkpoint`.
pub fn cmd_checkpoint(ctx: &Context, args: &CheckpointArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let sessions = session::Repo::of(&repo);
    let s = session::locate(sessions, args.session.as_deref())?;
    // The label goes into a commit message and a note: no secret in it is ever stored.
    let label = redact(&args.message);
    // Every changed file is scanned first: a secret never enters the object database.
    let taken = session::checkpoint(sessions, &s, &label, None, args.step.clone(), &ctx.policy)?;
    let (cp, event, refused) = (taken.checkpoint, taken.event, taken.kept_out);
    let secrets = ctx.policy.take_found();
    let code = if refused.is_empty() {
        exit::OK
    } else {
        exit::POLICY
    };
    // The number `rollback` and `status` use (1 = the first).
    let number = cp.trailers.number;
    if ctx.ui.json() {
        ctx.ui.print_json(
            &json!({"checkpoint": cp, "number": number, "event": event, "kept_out": refused, "secrets": secrets}),
        );
        return Ok(code);
    }
    report_secrets(
        &secrets,
        ": kept out of the checkpoint; remove it, then checkpoint again",
    );
    ctx.ui.line(format!(
        "Checkpoint {number} ({}) of session {}: {}",
        ctx.ui
            .paint(cp.id.to_hex_with_len(10).to_string(), Style::Yellow),
        s.id,
        cp.label
    ));
    ctx.ui.status(format!(
        "Back to this state at any time: git bmad rollback {number}"
    ));
    Ok(code)
}

/// Name each secret a session operation refused, redacted, on stderr even with --quiet (what
/// was stored is not what was asked for); `then` says what happened to it.
pub fn report_secrets(secrets: &[Finding], then: &str) {
    for finding in secrets {
        eprintln!(
            "{}",
            crate::cli::ui::safe_for_terminal(&format!(
                "{}: {} ({}, {}){then}",
                finding.location(),
                finding.description,
                finding.rule,
                finding.excerpt
            ))
        );
    }
}

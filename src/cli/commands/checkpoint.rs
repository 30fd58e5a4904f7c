//! `git bmad checkpoint`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::Style;
use crate::cli::Context;
use crate::policy::secrets::redact;
use crate::session;

/// Snapshot the session worktree as a checkpoint.
///
/// Records tracked and untracked (not ignored) files as a commit on
/// refs/bmad/sessions/<id>/checkpoints; the index, HEAD and branch are not touched.
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
    let s = session::locate(&repo, args.session.as_deref())?;
    // The label goes into a commit message and a note: no secret in it is ever stored.
    let label = redact(&args.message);
    let (cp, event) = session::checkpoint(&repo, &s, &label, None, args.step.clone())?;
    if ctx.ui.json() {
        ctx.ui
            .print_json(&json!({"checkpoint": cp, "event": event}));
        return Ok(exit::OK);
    }
    ctx.ui.line(format!(
        "Checkpoint {} of session {}: {}",
        ctx.ui
            .paint(cp.id.to_hex_with_len(10).to_string(), Style::Yellow),
        s.id,
        cp.label
    ));
    Ok(exit::OK)
}

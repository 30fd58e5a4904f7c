//! `git bmad finish`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session::{self, Status};

/// Mark a session completed.
///
/// Takes a final checkpoint and journals session_finished. The worktree and branch stay so
/// the work can be reviewed and pushed; `git bmad remove` deletes them afterwards.
#[derive(Debug, Args)]
pub struct FinishArgs {
    /// Session id, id prefix or name (default: the current worktree's session)
    pub session: Option<String>,
}

/// Run `finish`.
pub fn cmd_finish(ctx: &Context, args: &FinishArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let s = session::locate(&repo, args.session.as_deref())?;
    if s.status == Status::Completed {
        if ctx.ui.json() {
            ctx.ui
                .print_json(&json!({"session": s, "already_finished": true}));
        } else {
            ctx.ui.line(format!(
                "Session {} ({}) is already finished.",
                s.id, s.name
            ));
        }
        return Ok(exit::OK);
    }
    let cp = session::finish(&repo, &s)?;
    if ctx.ui.json() {
        ctx.ui
            .print_json(&json!({"session": s, "checkpoint": cp, "already_finished": false}));
        return Ok(exit::OK);
    }
    ctx.ui
        .line(format!("Finished session {} ({}).", s.id, s.name));
    ctx.ui.status(format!(
        "Next: commit the work and its journal in {}, push the branch {} and open a pull request; then `git bmad remove {}`.",
        s.worktree.display(),
        s.short_branch(),
        s.id
    ));
    Ok(exit::OK)
}

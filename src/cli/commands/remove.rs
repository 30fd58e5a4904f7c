//! `git bmad remove`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session::{self, RemoveOptions};

/// Delete a session: its worktree, branch, checkpoints and journal.
///
/// Refuses when the worktree has uncommitted changes, or when the branch has commits that are
/// neither merged into another branch nor pushed, unless --force is given.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// Session id, id prefix or name
    pub session: String,
    /// Remove even if work would be lost
    #[arg(long, short = 'f')]
    pub force: bool,
}

/// Run `remove`.
pub fn cmd_remove(ctx: &Context, args: &RemoveArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let s = session::locate(&repo, Some(&args.session))?;
    session::remove(&repo, &s, RemoveOptions { force: args.force })?;
    if ctx.ui.json() {
        ctx.ui.print_json(&json!({"removed": s}));
    } else {
        ctx.ui.line(format!(
            "Removed session {} ({}): worktree {}, branch {}, checkpoints and journal.",
            s.id,
            s.name,
            s.worktree.display(),
            s.short_branch()
        ));
    }
    Ok(exit::OK)
}

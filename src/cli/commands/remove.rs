//! `git bmad remove`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session::{self, RemoveOptions};
use crate::time::Timestamp;

/// Delete a session: its worktree, branch, checkpoints and journal.
///
/// Everything is kept first, restorable with `git bmad restore <name>` for
/// sessions.keep_removed_days (14 by default): the worktree's files, untracked files and
/// index as a last checkpoint, and every ref of the session. Ignored files are not kept.
/// `git bmad gc` deletes what has expired.
///
/// Refuses when the worktree has uncommitted changes, or when the branch has commits that are
/// neither merged into another branch nor pushed, unless --force is given.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    #[command(flatten)]
    pub session: super::NamedSessionArg,
    /// Remove even if the worktree is dirty or the work is unmerged (it is still kept)
    #[arg(long, short = 'f')]
    pub force: bool,
}

/// Run `remove`.
pub fn cmd_remove(ctx: &Context, args: &RemoveArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let s = session::locate(session::Repo::of(&repo), Some(args.session.name()))?;
    // A secret in a changed file stays out of the last checkpoint, as in any checkpoint.
    let (kept, warnings) =
        session::remove(&repo, &s, RemoveOptions { force: args.force }, &ctx.policy)?;
    if ctx.ui.json() {
        ctx.ui
            .print_json(&json!({"removed": s, "kept": kept, "warnings": warnings}));
        return Ok(exit::OK);
    }
    for warning in &warnings {
        ctx.ui.status(warning);
    }
    ctx.ui.line(format!(
        "Removed session {} ({}): worktree {}, branch {}, checkpoints and journal.",
        s.id,
        s.name,
        s.worktree.display(),
        s.short_branch()
    ));
    for path in &kept.left_out {
        eprintln!(
            "{}",
            crate::cli::ui::safe_for_terminal(&format!(
                "{path}: holds a secret, so it was not kept (it is gone with the worktree)"
            ))
        );
    }
    ctx.ui.status(format!(
        "Kept until {}: git bmad restore {} (git bmad gc deletes it after)",
        Timestamp::from_secs(kept.keep_until.max(0) as u64).rfc3339(),
        s.name
    ));
    Ok(exit::OK)
}

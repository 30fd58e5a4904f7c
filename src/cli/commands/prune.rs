//! `git bmad prune`.

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session;

/// Record sessions whose worktrees were deleted by hand, and let git forget those worktrees.
///
/// Their branches, checkpoints and journals are kept: the work is still there. To bring a
/// worktree back: git worktree add <path> <branch>. To delete the session: git bmad remove.
#[derive(Debug, Args)]
pub struct PruneArgs {}

/// Run `prune`.
pub fn cmd_prune(ctx: &Context, _args: &PruneArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let pruned = session::prune(&repo)?;
    if ctx.ui.json() {
        ctx.ui.print_json(&pruned);
        return Ok(exit::OK);
    }
    if pruned.is_empty() {
        ctx.ui
            .line("Nothing to prune: every session's worktree is there.");
    }
    for p in &pruned {
        ctx.ui.line(format!(
            "Pruned session {} ({}): worktree {} is gone; its branch, checkpoints and journal are kept.",
            p.session,
            p.name,
            p.worktree.display()
        ));
    }
    if !pruned.is_empty() {
        ctx.ui.status("To delete such a session: git bmad remove <id>. To restore its worktree: git worktree add <path> <branch>.");
    }
    Ok(exit::OK)
}

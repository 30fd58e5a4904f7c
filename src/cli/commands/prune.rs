//! `git bmad prune`.

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session;

/// Record sessions whose worktrees were deleted by hand, and let git forget those worktrees.
///
/// Their branches, checkpoints and journals are kept: the work is still there. To bring a
/// worktree back with its last checkpoint's files: git bmad restore <name>. To delete the
/// session: git bmad remove. A worktree moved with `git worktree move` is not pruned: the
/// session records its new path.
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
        if let Some(to) = &p.moved_to {
            ctx.ui.line(format!(
                "Session {} ({}): worktree moved from {} to {}; recorded.",
                p.session,
                p.name,
                p.worktree.display(),
                to.display()
            ));
            continue;
        }
        ctx.ui.line(format!(
            "Pruned session {} ({}): worktree {} is gone; its branch, checkpoints and journal are kept.",
            p.session,
            p.name,
            p.worktree.display()
        ));
    }
    if pruned.iter().any(|p| p.moved_to.is_none()) {
        ctx.ui.status("To bring a worktree back: git bmad restore <name>. To delete such a session: git bmad remove <id>.");
    }
    Ok(exit::OK)
}

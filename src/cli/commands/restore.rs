//! `git bmad restore`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session;

/// Bring back a removed session, or the worktree of a pruned one.
///
/// A removed session gets back its checkpoints, journal and branch, and its worktree at the
/// same path with the files, untracked files and index it had when it was removed. A pruned
/// session (its worktree deleted by hand) gets its worktree back with its last checkpoint's
/// files and index, and the status it had before. `git bmad list --removed` shows what can be
/// restored.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub session: super::NamedSessionArg,
}

/// Run `restore`.
pub fn cmd_restore(ctx: &Context, args: &RestoreArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let restored = session::restore(&repo, args.session.name(), &ctx.policy)?;
    for warning in &restored.warnings {
        ctx.ui.warn(warning);
    }
    if ctx.ui.json() {
        ctx.ui.print_json(&json!({"restored": restored}));
        return Ok(exit::OK);
    }
    let s = &restored.session;
    ctx.ui.line(format!(
        "Restored session {} ({}, was {}): worktree {}, branch {}, status {}.",
        s.id,
        s.name,
        restored.from,
        s.worktree.display(),
        s.short_branch(),
        s.status
    ));
    for path in &restored.protected {
        ctx.ui.status(format!("  keep   {path} (ignored)"));
    }
    ctx.ui.status(format!("cd {}", s.worktree.display()));
    Ok(exit::OK)
}

//! `git bmad undo`.

use clap::Args;

use crate::cli::error::CommandError;
use crate::cli::Context;
use crate::session;

/// Reverse the last rollback: back to exactly the state before it.
///
/// The state being left is saved first, like any rollback; running undo again redoes.
#[derive(Debug, Args)]
pub struct UndoArgs {
    /// Session id, id prefix or name (default: the current worktree's session)
    #[arg(long, short = 's')]
    pub session: Option<String>,
}

/// Run `undo`.
pub fn cmd_undo(ctx: &Context, args: &UndoArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let s = session::locate(session::Repo::of(&repo), args.session.as_deref())?;
    let outcome = session::undo(&repo, &s, &ctx.policy);
    super::checkpoint::report_secrets(&ctx.policy.take_found(), "");
    super::rollback::report(ctx, &outcome?, "Undid the last rollback: back to")
}

//! `git bmad list`.

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::ago;
use crate::cli::Context;
use crate::session;

/// List all sessions of the repository, oldest first.
#[derive(Debug, Args)]
pub struct ListArgs {}

/// Run `list`.
pub fn cmd_list(ctx: &Context, _args: &ListArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let sessions = session::list(&repo)?;
    if ctx.ui.json() {
        ctx.ui.print_json(&sessions);
        return Ok(exit::OK);
    }
    if sessions.is_empty() {
        ctx.ui
            .status("No sessions yet. Start one with: git bmad start <name>");
        return Ok(exit::OK);
    }
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            vec![
                s.id.to_string(),
                s.name.clone(),
                s.status.to_string(),
                s.step.clone().unwrap_or_else(|| "-".into()),
                ago(s.updated),
                s.short_branch().to_owned(),
                format!(
                    "{}{}",
                    s.worktree.display(),
                    if s.worktree_exists { "" } else { " (missing)" }
                ),
            ]
        })
        .collect();
    ctx.ui.table(
        &[
            "ID", "NAME", "STATUS", "STEP", "UPDATED", "BRANCH", "WORKTREE",
        ],
        &rows,
    );
    Ok(exit::OK)
}

//! `git bmad sync`.

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session;
use crate::session::sync::{self, SyncOutcome};

/// Fetch every session's journal, checkpoints and branch from a remote and bring the local
/// sessions up to date.
///
/// Checkpoints that only moved there are fast-forwarded here; the journal never is: the
/// remote's events this clone lacks are copied in after a `journal_merged` event (no event
/// lost or doubled, no local event ever dropped). A copied event counts as state only when
/// an allowed signer (`.bmad/allowed_signers` on main) signed it; others are shown as
/// "not trusted" and never replayed. A remote checkpoint that would re-point a session that
/// lives here (another name, branch, worktree or clone, with no trusted lease) is refused.
/// Sessions that exist only on the remote are listed: `git bmad list --remote` shows them.
/// Branches land in `refs/remotes/<remote>/`, as `git fetch` puts them; your own branches
/// and worktrees are never touched.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// The remote
    #[arg(long, default_value = "origin")]
    pub remote: String,
}

/// Run `sync`.
pub fn cmd_sync(ctx: &Context, args: &SyncArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let config = session::load_config(&repo)?;
    let synced = sync::sync(
        session::Repo::of(&repo),
        &args.remote,
        &config.sessions.branch_prefix,
    )?;
    if ctx.ui.json() {
        ctx.ui.print_json(&synced);
        return Ok(exit::OK);
    }
    if synced.is_empty() {
        ctx.ui.status(format!(
            "{} has no sessions (git bmad push sends one)",
            args.remote
        ));
        return Ok(exit::OK);
    }
    let rows: Vec<Vec<String>> = synced
        .iter()
        .map(|s| {
            let what = match s.outcome {
                SyncOutcome::New => "only there (git bmad list --remote)".to_owned(),
                SyncOutcome::Merged => {
                    format!("journals merged, {} event(s) added", s.events_added)
                }
                SyncOutcome::Refused => format!(
                    "refused: {}",
                    s.refused
                        .as_deref()
                        .unwrap_or("the remote's copy is not trusted")
                ),
                SyncOutcome::FastForwarded => "brought up to date".to_owned(),
                SyncOutcome::Ahead => "ahead here (git bmad push publishes it)".to_owned(),
                SyncOutcome::Diverged => {
                    "checkpoints taken on both machines: left as they are".to_owned()
                }
                SyncOutcome::UpToDate => "up to date".to_owned(),
            };
            vec![
                s.session.clone(),
                s.name.clone().unwrap_or_else(|| "-".into()),
                what,
            ]
        })
        .collect();
    ctx.ui.table(&["ID", "NAME", "SYNC"], &rows);
    if synced.iter().any(|s| s.outcome == SyncOutcome::Refused) {
        ctx.ui.warn(
            "the remote holds what this clone would not have written for a session; nothing \
             of it was taken but its events, kept as information (git bmad journal shows them)",
        );
    }
    if synced.iter().any(|s| s.outcome == SyncOutcome::Diverged) {
        ctx.ui.warn(
            "a session's checkpoints moved on both machines; pick one machine to go on \
             (git bmad rollback there), nothing was lost: the remote's chain is kept under \
             refs/bmad/remotes/",
        );
    }
    Ok(exit::OK)
}

//! `git bmad push`.

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session::{self, sync};

/// Push a session to a remote: its branch, and its journal and checkpoints where the remote
/// opted in.
///
/// One atomic push (every ref moves or none does), never forced, through the policy hooks:
/// the secret scan reads every commit that leaves, checkpoints included. A remote that moved
/// in a way a fast-forward cannot take refuses it (exit 4): `git bmad sync` first.
///
/// Journals and checkpoints go only to a remote that opted in, because checkpoints hold the
/// worktree's untracked files: `git config bmad.<remote>.pushSessions true`. A journal that
/// leaves is signed with this clone's key first; with no run live here, the push also hands
/// the session off, so another machine resumes it at once.
#[derive(Debug, Args)]
pub struct PushArgs {
    #[command(flatten)]
    pub session: super::SessionArg,
    /// The remote
    #[arg(long, default_value = "origin")]
    pub remote: String,
}

/// Run `push`.
pub fn cmd_push(ctx: &Context, args: &PushArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let sessions = session::Repo::of(&repo);
    let s = session::locate(sessions, args.session.query())?;
    // A run live in this clone keeps its lease; otherwise the push hands the session off.
    let live = crate::policy::live_run::live_runs(repo.common_dir())
        .iter()
        .any(|dir| dir == &s.worktree || std::fs::canonicalize(dir).is_ok_and(|d| d == s.worktree));
    let pushed = sync::push(sessions, &s, &args.remote, !live)?;
    if ctx.ui.json() {
        ctx.ui.print_json(&pushed);
        return Ok(exit::OK);
    }
    if let Some(why) = &pushed.unsigned {
        ctx.ui.warn(format!(
            "the journal went unsigned ({why}): other machines show its new events and act on none of them"
        ));
    }
    for name in &pushed.refs {
        ctx.ui.line(format!("pushed {name} to {}", pushed.remote));
    }
    for name in &pushed.up_to_date {
        ctx.ui
            .line(format!("{name}: {} has it already", pushed.remote));
    }
    if !pushed.state {
        ctx.ui.status(format!(
            "Only the branch went: {} has not opted in to journals and checkpoints \
             (they hold untracked files). To send them: git config {} true",
            pushed.remote,
            sync::opt_in_key(&pushed.remote)
        ));
    }
    Ok(exit::OK)
}

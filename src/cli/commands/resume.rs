//! `git bmad resume`.

use clap::Args;

use crate::cli::error::CommandError;
use crate::cli::Context;
use crate::session;
use crate::supervisor::Request;

/// Continue the playbook run of the current session, after a crash, Ctrl-C, a stop or an
/// answered gate.
///
/// Needs no arguments: the session is the one whose worktree you are in. The journal says
/// where the run stands; a step that was running when it crashed is marked done if its
/// postconditions are met, else run again. Finished steps never run twice.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// Session id, id prefix or name (default: the current worktree's session)
    #[arg(long, short = 's')]
    pub session: Option<String>,
}

/// Run `resume`.
pub fn cmd_resume(ctx: &Context, args: &ResumeArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let s = session::locate(&repo, args.session.as_deref()).map_err(|e| match e {
        session::Error::NotInSession { workdir } => CommandError::failed(format!(
            "no active session here: {} is not a git-bmad session worktree",
            workdir.display()
        ))
        .hinted(
            "cd into the session's worktree (git bmad list shows them), or pass --session <id>",
        ),
        other => other.into(),
    })?;
    super::run::supervise_and_report(ctx, &repo, &s, Request::Resume)
}

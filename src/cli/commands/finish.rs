//! `git bmad finish`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session::{self, Status};

/// Mark a session completed.
///
/// Takes a final checkpoint and journals session_finished. The worktree and branch stay so
/// the work can be reviewed and pushed; `git bmad remove` deletes them afterwards.
#[derive(Debug, Args)]
pub struct FinishArgs {
    #[command(flatten)]
    pub session: super::SessionArg,
}

/// Run `finish`.
pub fn cmd_finish(ctx: &Context, args: &FinishArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let s = session::locate(session::Repo::of(&repo), args.session.query())?;
    if s.status == Status::Completed {
        if ctx.ui.json() {
            ctx.ui
                .print_json(&json!({"session": s, "already_finished": true}));
        } else {
            ctx.ui.line(format!(
                "Session {} ({}) is already finished.",
                s.id, s.name
            ));
        }
        return Ok(exit::OK);
    }
    let taken = session::finish(&repo, &s, &ctx.policy)?;
    let secrets = ctx.policy.take_found();
    let code = if taken.kept_out.is_empty() {
        exit::OK
    } else {
        exit::POLICY
    };
    if ctx.ui.json() {
        ctx.ui.print_json(&json!({
            "session": s,
            "checkpoint": taken.checkpoint,
            "already_finished": false,
            "kept_out": taken.kept_out,
            "secrets": secrets,
        }));
        return Ok(code);
    }
    super::checkpoint::report_secrets(
        &secrets,
        ": kept out of the last checkpoint; remove it before you commit",
    );
    ctx.ui
        .line(format!("Finished session {} ({}).", s.id, s.name));
    ctx.ui.status(format!(
        "Next: commit the work and its journal in {}, push the branch {} and open a pull request; then `git bmad remove {}`.",
        s.worktree.display(),
        s.short_branch(),
        s.id
    ));
    Ok(code)
}

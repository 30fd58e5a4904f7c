//! `git bmad gc`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session;
use crate::time::Timestamp;

/// Delete removed sessions whose keep time has passed.
///
/// `remove` keeps a session restorable for sessions.keep_removed_days (git config
/// bmad.keepRemovedDays; 14 by default). Nothing deletes it on its own: this command does,
/// once that time has passed. After it, `git gc` frees the space.
#[derive(Debug, Args)]
pub struct GcArgs {
    /// Delete every removed session, expired or not
    #[arg(long)]
    pub all: bool,
    /// Show what would be deleted, delete nothing
    #[arg(long, short = 'n')]
    pub dry_run: bool,
}

/// Run `gc`.
pub fn cmd_gc(ctx: &Context, args: &GcArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let now = Timestamp::now().secs() as i64;
    let deleted = session::gc(&repo, now, args.all, args.dry_run)?;
    let kept = session::list_removed(&repo)?.len();
    if ctx.ui.json() {
        ctx.ui.print_json(&json!({
            "dry_run": args.dry_run,
            "deleted": deleted,
            "kept": kept,
        }));
        return Ok(exit::OK);
    }
    let verb = if args.dry_run {
        "would be deleted"
    } else {
        "deleted"
    };
    for r in &deleted {
        ctx.ui.line(format!(
            "removed session {} ({}), removed {}: {verb}",
            r.id,
            r.name,
            Timestamp::from_secs(r.removed.max(0) as u64).rfc3339()
        ));
    }
    ctx.ui.status(format!(
        "{} removed session(s) {verb}; {kept} still kept (git bmad list --removed)",
        deleted.len()
    ));
    Ok(exit::OK)
}

//! `git bmad init`.

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session;

/// Set up git-bmad in this repository.
///
/// Writes a commented .bmad/config.yaml (never overwriting one) and sets notes.displayRef and
/// notes.rewriteRef so `git log` shows the journal and amend/rebase keep it. Safe to re-run.
#[derive(Debug, Args)]
pub struct InitArgs {}

/// Run `init`.
pub fn cmd_init(ctx: &Context, _args: &InitArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let outcome = session::init(&repo)?;
    if ctx.ui.json() {
        ctx.ui.print_json(&outcome);
        return Ok(exit::OK);
    }
    let ui = &ctx.ui;
    if outcome.config_written {
        ui.line(format!("Wrote {}", outcome.config_path.display()));
    } else {
        ui.line(format!(
            "Kept the existing {}",
            outcome.config_path.display()
        ));
    }
    for entry in &outcome.git_config_added {
        ui.line(format!("Set git config {entry}"));
    }
    if outcome.config_written {
        ui.status("Next: commit it (git add .bmad && git commit -m 'Set up git-bmad'), then: git bmad start <name>");
    } else {
        ui.status("Next: git bmad start <name>");
    }
    Ok(exit::OK)
}

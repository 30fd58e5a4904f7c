//! `git bmad watch <worktree>` (hidden): the change feed's watcher, which snapshots start in
//! the background (see `git::watch`). Not for people: it prints nothing and exits quietly
//! when it cannot watch, since a snapshot then scans the worktree itself.

use std::path::PathBuf;

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;

/// Watch a worktree's directories and tell snapshots what changed (started by snapshots)
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The worktree's root directory
    pub worktree: PathBuf,
    /// Where to say why, if the watcher cannot start
    #[arg(long, value_name = "FILE")]
    pub failed: Option<PathBuf>,
}

/// Run `watch` until the watcher ends.
pub fn cmd_watch(_ctx: &Context, args: &WatchArgs) -> Result<u8, CommandError> {
    #[cfg(target_os = "linux")]
    if let Err(e) = crate::git::run_watcher(&args.worktree, args.failed.as_deref()) {
        tracing::debug!("watcher of {}: {e}", args.worktree.display());
    }
    #[cfg(not(target_os = "linux"))]
    let _ = args;
    Ok(exit::OK)
}

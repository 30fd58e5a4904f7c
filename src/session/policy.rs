//! What the session layer asks of the policy above it, injected by the composition root: the
//! session layer knows when bytes are about to enter git and when a worktree is made; the
//! policy decides what may enter and what a new worktree needs to be guarded. Every
//! operation that stores a worktree's files or makes a worktree takes one, so no caller can
//! forget the policy and there is no unvetted path.

use std::path::Path;

use crate::git::Repo;

/// The rules a session's operations obey.
pub trait Policy: Sync {
    /// Whether the changed file `path`, holding `bytes` (its first [`crate::git::VET_LIMIT`]),
    /// may be stored in git. A refused file stays out of the object database; the policy
    /// keeps why, for its caller to report.
    fn admit(&self, path: &str, bytes: &[u8]) -> bool;

    /// Guard the session worktree just made at `worktree` (the policy hooks); what could not
    /// be done, as warnings for the user.
    fn prepare_worktree(&self, main: &Repo, worktree: &Path) -> Vec<String>;
}

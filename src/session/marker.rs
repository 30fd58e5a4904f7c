//! The marker in a session worktree's private git dir: which session the worktree is, read
//! by the hooks' shell shims as well as here.

use super::id::SessionId;
use super::{Error, Result};
use crate::git::Repo;

/// The file in a session worktree's private git dir that names its session: its id on the
/// first line, its branch (full ref name) on the second.
///
/// Hooks run on every commit and ref update; this lets them tell a session worktree from the
/// user's own, and the session's own branch from others, with shell builtins alone, without
/// starting a process. `git worktree prune` and `remove` delete it with the worktree's git dir.
pub const SESSION_MARKER: &str = "bmad-session";

/// Mark the worktree at `worktree` as `id`'s, on `branch`.
pub(super) fn mark_session_worktree(
    repo: &Repo,
    worktree: &std::path::Path,
    id: &SessionId,
    branch: &str,
) -> Result<()> {
    let wt = repo.open_worktree(worktree)?;
    let path = wt.git_dir().join(SESSION_MARKER);
    std::fs::write(&path, format!("{id}\n{branch}\n"))
        .map_err(|e| Error::io("could not write", path, e))
}

/// The session the marker in this worktree's git dir names.
pub(super) fn marked_session(wt: &Repo) -> Option<SessionId> {
    let bytes = crate::fs::read_private(&wt.git_dir().join(SESSION_MARKER)).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    SessionId::parse(text.lines().next()?.trim())
}

//! Scratch folders in a worktree's git dir: where git writes what git-bmad must compare or
//! vet before anything reaches the repository (the forms git's checkout writes, a file git
//! converts from its encoding). Each goes when its work is done; one a killed git-bmad left
//! is cleared by the next rollback.

use super::error::{Error, Result};
use super::repo::Repo;

/// The prefix of a scratch folder's name.
const SCRATCH_PREFIX: &str = "bmad-scratch-";

impl Repo {
    /// A new scratch folder in this worktree's git dir, for `what` (part of its name), gone
    /// when dropped.
    pub(super) fn scratch_dir(&self, what: &str) -> Result<tempfile::TempDir> {
        tempfile::Builder::new()
            .prefix(&format!("{SCRATCH_PREFIX}{what}-"))
            .tempdir_in(self.git_dir())
            .map_err(|e| Error::io("make a scratch folder in", self.git_dir(), e))
    }

    /// Whether a scratch folder is in this worktree's git dir.
    pub fn has_scratch_left(&self) -> bool {
        std::fs::read_dir(self.git_dir())
            .is_ok_and(|mut entries| entries.any(|e| e.is_ok_and(|e| is_scratch(&e))))
    }

    /// Remove the scratch folders a killed git-bmad left in this worktree's git dir; the
    /// caller knows that no git-bmad works here now.
    pub fn clear_abandoned_scratch(&self) {
        let Ok(entries) = std::fs::read_dir(self.git_dir()) else {
            return;
        };
        for entry in entries.flatten().filter(is_scratch) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn is_scratch(entry: &std::fs::DirEntry) -> bool {
    entry
        .file_name()
        .to_string_lossy()
        .starts_with(SCRATCH_PREFIX)
        && entry.file_type().is_ok_and(|t| t.is_dir())
}

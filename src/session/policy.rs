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
    /// keeps why, for its caller to report. `committed` says whether a commit the session
    /// stands on holds exactly these bytes already (asked only when the policy would refuse
    /// them): what was judged when it was committed is not judged again.
    fn admit(&self, path: &str, bytes: &[u8], committed: &dyn Fn() -> bool) -> bool;

    /// Guard the session worktree just made at `worktree` (the policy hooks); what could not
    /// be done, as warnings for the user.
    fn prepare_worktree(&self, main: &Repo, worktree: &Path) -> Vec<String>;
}

/// Content the session's `HEAD` already holds, for [`Policy::admit`]: the blob ids of its
/// tree, read once, and only when first asked (most checkpoints never ask, so `HEAD` is not
/// even resolved for them).
pub(crate) struct Committed<'a> {
    repo: &'a Repo,
    /// The tree, when the caller has it already; else `HEAD`'s, resolved when first asked.
    tree: Option<crate::git::ObjectId>,
    ids: std::sync::OnceLock<std::collections::HashSet<crate::git::ObjectId>>,
}

impl<'a> Committed<'a> {
    /// What `HEAD` of worktree `repo` holds (nothing, on an unborn branch).
    pub(crate) fn at_head(repo: &'a Repo) -> Committed<'a> {
        Committed {
            repo,
            tree: None,
            ids: std::sync::OnceLock::new(),
        }
    }

    /// What `tree` (`HEAD`'s, read by the caller already) holds.
    pub(crate) fn in_tree(repo: &'a Repo, tree: crate::git::ObjectId) -> Committed<'a> {
        Committed {
            tree: Some(tree),
            ..Committed::at_head(repo)
        }
    }

    /// Whether `bytes` are a blob the tree holds.
    pub(crate) fn holds(&self, bytes: &[u8]) -> bool {
        let Ok(id) = self.repo.blob_id_of(bytes) else {
            return false;
        };
        self.ids
            .get_or_init(|| {
                let head_tree = || {
                    let head = self.repo.head_id().ok()??;
                    self.repo.tree_of(head).ok()
                };
                self.tree
                    .or_else(head_tree)
                    .and_then(|tree| self.repo.blob_ids_under(tree).ok())
                    .unwrap_or_default()
            })
            .contains(&id)
    }
}

//! What the layers above sessions need of the repository itself, as session operations:
//! files and differences between commits, remotes, a clean checkout for a judge, the
//! fence a contained round runs in. The handle they hold ([`super::Repo`]) has no git
//! operation, so these are the only ways they reach one.

use std::path::Path;

use super::{Result, Session};
use crate::git::{Fence, FenceKind, ObjectId, TreeChange};

/// The bytes of `path` as `rev` holds it; `None` when it holds no such file.
pub fn file_at(repo: &super::Repo, rev: &str, path: &str) -> Result<Option<Vec<u8>>> {
    Ok(repo.git.file_at(rev, path)?)
}

/// Every path that differs between two commits' trees.
pub fn diff_trees(repo: &super::Repo, from: ObjectId, to: ObjectId) -> Result<Vec<TreeChange>> {
    Ok(repo.git.diff_trees(from, to)?)
}

/// The patch between two commits, limited to `paths`.
pub fn diff_paths(
    repo: &super::Repo,
    from: ObjectId,
    to: ObjectId,
    paths: &[&str],
) -> Result<String> {
    Ok(repo.git.diff_paths(from, to, paths)?)
}

/// Check `commit` out into the new folder `dir`, apart from every worktree, with no hook
/// or filter of the repository run.
pub fn clean_checkout(repo: &super::Repo, commit: ObjectId, dir: &Path) -> Result<()> {
    Ok(repo.git.clean_checkout(commit, dir)?)
}

/// The branch checked out in `repo`'s worktree (its short name); `None` on a detached `HEAD`.
pub fn checked_out_branch(repo: &super::Repo) -> Result<Option<String>> {
    Ok(repo
        .git
        .head_branch()?
        .map(|b| b.trim_start_matches("refs/heads/").to_owned()))
}

/// The git identity (`user.name`, `user.email`) the repository's config names: what a
/// contained step's private home is given.
pub fn identity(repo: &super::Repo) -> [Option<String>; 2] {
    repo.git.identity()
}

/// Whether the repository has a remote named `name`.
pub fn has_remote(repo: &super::Repo, name: &str) -> Result<bool> {
    Ok(repo.git.has_remote(name)?)
}

/// The repository's remotes, by name.
pub fn remote_names(repo: &super::Repo) -> Vec<String> {
    repo.git.remote_names()
}

/// Fetch `branch` from `remote` into its remote-tracking ref; whether the remote has it.
pub fn fetch_branch(repo: &super::Repo, remote: &str, branch: &str) -> Result<bool> {
    Ok(repo.git.fetch_branch(remote, branch)?)
}

/// The fence a contained round of `session` runs in, around its worktree at `root`.
pub fn fence(repo: &super::Repo, session: &Session, root: &Path, kind: FenceKind) -> Result<Fence> {
    Ok(repo
        .git
        .fence(session.id.as_str(), root, &session.branch, kind)?)
}

/// Settle a round's fence: take the branch's new commits in; what the round tried beyond
/// its walls, one line each.
pub fn settle_fence(repo: &super::Repo, fence: Fence) -> Result<Vec<String>> {
    Ok(fence.settle(&repo.git)?)
}

//! git's lock files and whether a git works in the repository: a lock no live git holds
//! was left by a killed one, and blocks every later command until it is removed.

use std::path::{Path, PathBuf};

use crate::git::{Repo, WorktreeInfo};

/// Remove those of `locks` that exist while no git process works in the repository: a
/// killed git left them, and the operation about to run would fail on them. One line for
/// each removed, to say so.
pub(super) fn clear_abandoned_locks(repo: &Repo, locks: &[PathBuf]) -> Vec<String> {
    let present: Vec<&PathBuf> = locks.iter().filter(|lock| lock.is_file()).collect();
    if present.is_empty() {
        return Vec::new();
    }
    match repo.worktrees() {
        Ok(worktrees) if git_running_in(repo, &worktrees).is_none() => {}
        _ => return Vec::new(),
    }
    present
        .into_iter()
        .filter(|lock| std::fs::remove_file(lock).is_ok())
        .map(|lock| {
            format!(
                "removed {}, left by a git process that was killed",
                lock.display()
            )
        })
        .collect()
}

/// Clear the scratch folders a killed git-bmad left in the git dir of worktree `wt` (see
/// [`crate::git::Repo::clear_abandoned_scratch`]) while no git works in the repository.
pub(super) fn clear_abandoned_scratch(repo: &Repo, wt: &Repo) {
    if !wt.has_scratch_left() {
        return;
    }
    if let Ok(worktrees) = repo.worktrees() {
        if git_running_in(repo, &worktrees).is_none() {
            wt.clear_abandoned_scratch();
        }
    }
}

/// Clear the lock files a killed git left in `session`'s worktree (its `index.lock`,
/// `HEAD.lock`) while no git works in the repository: a run killed in the middle of a step
/// must not fail every resume on them. One line for each removed.
pub fn clear_abandoned_worktree_locks(repo: &super::Repo, git_dir: &Path) -> Vec<String> {
    let repo = &repo.git;
    clear_abandoned_locks(
        repo,
        &[git_dir.join("index.lock"), git_dir.join("HEAD.lock")],
    )
}

/// A live `git` or other git-bmad process working in this repository (its current
/// directory in one of the worktrees or the git dir), if there is one: a lock may be its.
/// Linux `/proc` only; elsewhere `Some(0)` is returned, so the lock's age alone decides.
pub(super) fn git_running_in(repo: &Repo, worktrees: &[WorktreeInfo]) -> Option<u32> {
    let roots: Vec<PathBuf> = std::iter::once(repo.common_dir())
        .chain(worktrees.iter().map(|w| w.path.as_path()))
        .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.to_owned()))
        .collect();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Some(0);
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = entry.path();
        // git's helpers are `git-*` processes, and so is git-bmad (which writes an index
        // when a rollback restores one).
        let is_git = std::fs::read_to_string(dir.join("comm"))
            .is_ok_and(|comm| comm.trim() == "git" || comm.trim().starts_with("git-"));
        if !is_git || pid == std::process::id() {
            continue;
        }
        let cwd = std::fs::read_link(dir.join("cwd")).unwrap_or_default();
        if roots.iter().any(|root| inside(&cwd, root)) {
            return Some(pid);
        }
    }
    None
}

fn inside(path: &Path, root: &Path) -> bool {
    !path.as_os_str().is_empty() && path.starts_with(root)
}

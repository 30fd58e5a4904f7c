//! The repairs `git bmad doctor --fix` applies: only the safe ones, each finishing what a
//! command began or clearing what a dead process left. Anything that needs a choice
//! (restore a deleted worktree or record it gone; finish a removal or undo it) is left to the
//! fix `doctor` prints.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::{Error, Result};
use super::id::SessionId;
use crate::git::{Repo, WorktreeInfo};

/// A repair `doctor --fix` may apply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Repair {
    /// Delete a git lock file whose process is gone.
    RemoveLock {
        /// The lock file.
        path: PathBuf,
    },
    /// Finish an interrupted rollback (`git bmad rollback --continue`).
    ContinueRollback {
        /// The session.
        session: String,
    },
    /// Record that a session's worktree was moved (`git worktree move`), as `prune` does.
    FollowMove {
        /// The session.
        session: String,
    },
    /// Let git forget deleted worktrees of finished or pruned sessions (`git worktree prune`,
    /// after repairing any live session's link it would break).
    ForgetWorktrees,
    /// Rewrite worktrees' `.git` files (`git worktree repair`).
    RepairWorktrees,
    /// Show the journal in `git log` (the notes config `git bmad init` sets).
    NotesConfig,
}

impl Repair {
    /// What it does, for the report.
    pub fn describe(&self) -> String {
        match self {
            Repair::RemoveLock { path } => format!("removed {}", path.display()),
            Repair::ContinueRollback { session } => {
                format!("finished the interrupted rollback of {session}")
            }
            Repair::FollowMove { session } => {
                format!("recorded where the worktree of {session} was moved")
            }
            Repair::ForgetWorktrees => "git worktree prune".into(),
            Repair::RepairWorktrees => "git worktree repair".into(),
            Repair::NotesConfig => "set notes.displayRef and notes.rewriteRef".into(),
        }
    }
}

/// Apply one repair.
pub fn apply_repair(repo: &Repo, repair: &Repair) -> Result<()> {
    match repair {
        Repair::RemoveLock { path } => {
            // Checked again now: a git command may have started since doctor looked.
            if let Some(pid) = git_running_in(repo, &repo.worktrees()?) {
                return Err(Error::InvalidInput(format!(
                    "git (pid {pid}) is running in this repository; {} may be its lock",
                    path.display()
                )));
            }
            std::fs::remove_file(path).or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Ok(()),
                _ => Err(Error::io("could not remove", path.clone(), e)),
            })
        }
        Repair::ContinueRollback { session } => {
            super::rollback::continue_rollback(repo, &session_of(repo, session)?).map(drop)
        }
        Repair::FollowMove { session } => {
            super::lifecycle::follow_move_of(repo, session_of(repo, session)?)
        }
        Repair::ForgetWorktrees => super::worktree::forget_vanished_worktrees(repo, None),
        // From the main worktree: run in a linked one, git repairs that one only.
        Repair::RepairWorktrees => Ok(repo
            .open_worktree(&repo.main_workdir()?)?
            .repair_worktrees()?),
        Repair::NotesConfig => super::init::ensure_notes_config(repo).map(drop),
    }
}

fn session_of(repo: &Repo, id: &str) -> Result<super::store::Session> {
    let unknown = || Error::UnknownSession {
        query: id.to_owned(),
    };
    let id = SessionId::parse(id).ok_or_else(unknown)?;
    super::store::get(repo, &id)?.ok_or_else(unknown)
}

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

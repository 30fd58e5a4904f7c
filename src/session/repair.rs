//! The repairs `git bmad doctor --fix` applies: only the safe ones, each finishing what a
//! command began or clearing what a dead process left. Anything that needs a choice
//! (restore a deleted worktree or record it gone; finish a removal or undo it) is left to the
//! fix `doctor` prints.

use std::path::PathBuf;

use serde::Serialize;

use super::error::{Error, Result};
use super::git_locks::git_running_in;
use super::id::SessionId;
use super::policy::Policy;
use crate::git::Repo;

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
    /// Remove (restorably) a session whose start was killed before its worktree was whole.
    RemoveInterruptedStart {
        /// The session.
        session: String,
    },
    /// Delete a worktree a killed `git worktree add` left half made, which no session owns.
    RemoveHalfAdded {
        /// The worktree.
        worktree: PathBuf,
    },
    /// Point a worktree whose contained step was killed back at the repository (its
    /// `commondir` still names the step's shadow of it).
    PutBackShadow {
        /// The worktree.
        worktree: PathBuf,
    },
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
            Repair::PutBackShadow { worktree } => {
                format!("pointed {} back at the repository", worktree.display())
            }
            Repair::RemoveHalfAdded { worktree } => {
                format!("removed the half-made worktree {}", worktree.display())
            }
            Repair::RemoveInterruptedStart { session } => {
                format!("removed {session}, whose start was interrupted (git bmad restore brings it back)")
            }
        }
    }
}

/// Apply one repair; `policy` sees what a removal keeps.
pub fn apply_repair(repo: &Repo, repair: &Repair, policy: &dyn Policy) -> Result<()> {
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
            super::prune::follow_move_of(repo, session_of(repo, session)?)
        }
        Repair::ForgetWorktrees => super::worktree::forget_vanished_worktrees(repo, None),
        // From the main worktree: run in a linked one, git repairs that one only.
        Repair::RepairWorktrees => Ok(repo
            .open_worktree(&repo.main_workdir()?)?
            .repair_worktrees()?),
        Repair::NotesConfig => super::init::ensure_notes_config(repo).map(drop),
        Repair::PutBackShadow { worktree } => {
            Ok(crate::git::put_back_abandoned_shadow(worktree).map(drop)?)
        }
        Repair::RemoveInterruptedStart { session } => {
            let options = super::remove::RemoveOptions { force: true };
            super::remove::remove(repo, &session_of(repo, session)?, options, policy).map(drop)
        }
        Repair::RemoveHalfAdded { worktree } => {
            // Checked again now: a `start` may have begun making it since doctor looked.
            if let Some(pid) = git_running_in(repo, &repo.worktrees()?) {
                return Err(Error::InvalidInput(format!(
                    "git (pid {pid}) is running in this repository; {} may be the worktree it is adding",
                    worktree.display()
                )));
            }
            Ok(repo.remove_half_added_worktree(worktree)?)
        }
    }
}

fn session_of(repo: &Repo, id: &str) -> Result<super::store::Session> {
    let unknown = || {
        Error::from(super::LocateError::Unknown {
            query: id.to_owned(),
        })
    };
    let id = SessionId::parse(id).ok_or_else(unknown)?;
    super::store::get(repo, &id)?.ok_or_else(unknown)
}

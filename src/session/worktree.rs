//! Whether a session's worktree is still the session's. An agent with a shell can delete the
//! directory, delete or replace its `.git` file, or make git forget the worktree; each must
//! fail the step that did it and be explained by `doctor` with the repair, because the usual
//! advice for a worktree git calls prunable (`git worktree prune`) would unlink the one
//! directory that holds the work.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::id::SessionId;
use super::{Error, Result, Session};
use crate::git::{Repo, WorktreeInfo};
use crate::text::shell_quote;

/// What happened to a session's worktree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Damage {
    /// The directory is gone.
    Deleted,
    /// The directory is there, its `.git` file is gone: git run in it no longer reaches
    /// this repository.
    GitFileMissing,
    /// The `.git` file was replaced (by a repository of its own, or one pointing elsewhere).
    GitFileReplaced,
    /// The directory is gone, and git lists the session branch's worktree elsewhere
    /// (`git worktree move`): the session only needs to learn the new path.
    Moved {
        /// Where the worktree is now.
        to: PathBuf,
    },
    /// git no longer lists the directory as a worktree: its administrative files were
    /// removed (`git worktree prune` after the `.git` file went, or by hand).
    Unregistered,
}

/// A damaged session worktree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorktreeDamage {
    /// The session's id.
    pub session: String,
    /// The worktree directory.
    pub path: PathBuf,
    /// The session's branch, a full ref name.
    pub branch: String,
    /// What happened.
    pub damage: Damage,
}

impl WorktreeDamage {
    /// What happened, in a sentence.
    pub fn describe(&self) -> String {
        let path = self.path.display();
        match self.damage {
            Damage::Deleted => format!("the session worktree {path} was deleted"),
            Damage::Moved { ref to } => format!(
                "the session worktree {path} was moved to {} (git worktree move); the session still names the old path",
                to.display()
            ),
            Damage::GitFileMissing => format!(
                "the .git file of the session worktree {path} was deleted: git no longer sees it as a worktree of this repository"
            ),
            Damage::GitFileReplaced => format!(
                "the .git file of the session worktree {path} was replaced (by a repository of its own, or a link elsewhere)"
            ),
            Damage::Unregistered => format!(
                "git no longer lists {path} as a worktree (its administrative files were removed); the files in it are untouched"
            ),
        }
    }

    /// The commands that repair it, for a human to run in the main worktree: the command,
    /// the other ways, and what each does.
    pub fn fix(&self) -> String {
        let mut text = std::iter::once(self.command())
            .chain(self.alternatives())
            .collect::<Vec<_>>()
            .join(", or ");
        if let Some(note) = self.note() {
            text.push_str(&format!(" ({note})"));
        }
        text
    }

    /// The one command that repairs it, in the main worktree.
    pub fn command(&self) -> String {
        let path = shell_quote(&self.path.to_string_lossy());
        let branch = self
            .branch
            .strip_prefix("refs/heads/")
            .unwrap_or(&self.branch);
        match self.damage {
            Damage::Deleted => format!("git bmad restore {}", self.session),
            Damage::Moved { .. } => "git bmad prune".to_owned(),
            // Run without a path: `repair <path>` rewrites the file but exits 1 (git 2.47).
            Damage::GitFileMissing => "git worktree repair".to_owned(),
            Damage::GitFileReplaced => {
                let aside = shell_quote(&format!("{}.replaced", self.path.join(".git").display()));
                format!("mv {path}/.git {aside} && git worktree repair")
            }
            Damage::Unregistered => {
                let relink = shell_quote(&format!("{}.relink", self.path.display()));
                format!(
                    "git worktree prune && git worktree add --no-checkout {relink} {} && mv {relink}/.git {path}/.git && rmdir {relink} && git worktree repair {path} && git -C {path} reset -q",
                    shell_quote(branch)
                )
            }
        }
    }

    /// Other commands that repair it another way.
    pub fn alternatives(&self) -> Vec<String> {
        match self.damage {
            Damage::Deleted => vec!["git bmad prune".to_owned()],
            _ => Vec::new(),
        }
    }

    /// What the commands do, when that is not plain.
    pub fn note(&self) -> Option<&'static str> {
        match self.damage {
            Damage::Deleted => Some(
                "restore makes a new worktree with the last checkpoint's files and index (the branch and checkpoints kept the work); prune records it gone",
            ),
            Damage::Moved { .. } => Some("prune records the new path"),
            _ => None,
        }
    }
}

/// An error naming the damage and its repair when the session's worktree is damaged: what
/// every command that would run or record something there checks first.
pub fn ensure_worktree_intact(repo: &super::Repo, session: &Session) -> Result<()> {
    let repo = &repo.git;
    intact_among(&repo.worktrees()?, repo, session)
}

/// [`ensure_worktree_intact`] against `worktrees`, read once for many sessions.
pub(super) fn intact_among(
    worktrees: &[WorktreeInfo],
    repo: &Repo,
    session: &Session,
) -> Result<()> {
    match damage_among(
        worktrees,
        repo,
        session.id.as_str(),
        &session.worktree,
        &session.branch,
    )? {
        Some(damage) => Err(Error::WorktreeDamaged {
            session: session.id.to_string(),
            what: damage.describe(),
            fix: damage.fix(),
        }),
        None => Ok(()),
    }
}

/// What is wrong with the session's worktree, if anything.
pub fn worktree_damage(repo: &super::Repo, session: &Session) -> Result<Option<WorktreeDamage>> {
    let repo = &repo.git;
    damage_among(
        &repo.worktrees()?,
        repo,
        session.id.as_str(),
        &session.worktree,
        &session.branch,
    )
}

/// [`worktree_damage`] against `worktrees` (`git worktree list`, read once by a caller that
/// checks every session).
pub(super) fn damage_among(
    worktrees: &[WorktreeInfo],
    repo: &Repo,
    session: &str,
    path: &Path,
    branch: &str,
) -> Result<Option<WorktreeDamage>> {
    let damaged = |damage| {
        Some(WorktreeDamage {
            session: session.to_owned(),
            path: path.to_owned(),
            branch: branch.to_owned(),
            damage,
        })
    };
    if !path.is_dir() {
        let moved = worktrees.iter().find(|w| {
            !w.is_main && !w.prunable && w.branch.as_deref() == Some(branch) && w.path.is_dir()
        });
        return Ok(damaged(match moved {
            Some(w) => Damage::Moved { to: w.path.clone() },
            None => Damage::Deleted,
        }));
    }
    let here = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let listed = worktrees
        .iter()
        .find(|w| w.path == here || std::fs::canonicalize(&w.path).is_ok_and(|p| p == here));
    let dot_git = path.join(".git");
    let meta = match std::fs::symlink_metadata(&dot_git) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(damaged(match listed {
                Some(_) => Damage::GitFileMissing,
                None => Damage::Unregistered,
            }))
        }
        Err(_) => return Ok(damaged(Damage::GitFileReplaced)),
    };
    let target = meta
        .is_file()
        .then(|| std::fs::read_to_string(&dot_git).ok())
        .flatten()
        .and_then(|text| text.strip_prefix("gitdir:").map(|t| path.join(t.trim())));
    let Some(target) = target else {
        return Ok(damaged(Damage::GitFileReplaced));
    };
    let admin_root = repo.common_dir().join("worktrees");
    let ours = |p: &Path| {
        p.starts_with(&admin_root)
            || std::fs::canonicalize(&admin_root).is_ok_and(|root| p.starts_with(root))
    };
    let points_home = std::fs::canonicalize(&target).is_ok_and(|admin| ours(&admin));
    Ok(match listed {
        _ if !points_home && !ours(&target) => damaged(Damage::GitFileReplaced),
        Some(w) if points_home && !w.prunable => None,
        // Our file, naming administrative files that were removed: git forgot the worktree.
        _ => damaged(Damage::Unregistered),
    })
}

/// Whether the worktree at `path` is marked as `id`'s (an interrupted `remove` left it).
pub(super) fn marks_session(repo: &Repo, path: &std::path::Path, id: &SessionId) -> bool {
    repo.open_worktree(path)
        .ok()
        .and_then(|wt| super::marker::marked_session(&wt))
        .is_some_and(|marked| &marked == id)
}

/// `git worktree prune`, when git still lists one of our sessions' worktrees whose directory
/// is gone (or the one at `path`): only those are this tool's business.
pub(super) fn forget_vanished_worktrees(repo: &Repo, path: Option<&std::path::Path>) -> Result<()> {
    let sessions = super::store::list(super::Repo::of(repo))?;
    let worktrees = repo.worktrees()?;
    let ours_gone_for_git = worktrees.iter().any(|w| {
        w.prunable
            && (path.is_some_and(|p| w.path == p)
                || w.branch.as_ref().is_some_and(|b| {
                    sessions
                        .iter()
                        .any(|s| !s.worktree_exists && &s.branch == b)
                }))
    });
    if ours_gone_for_git {
        // git prunes every worktree whose `.git` file is gone, directory or not: one of ours
        // that still holds the work must be repaired first, or it is unlinked with the rest.
        for session in sessions.iter().filter(|s| s.worktree_exists) {
            intact_among(&worktrees, repo, session)?;
        }
        repo.prune_worktrees()?;
    }
    Ok(())
}

//! Finding sessions: all of them for `list`, one for every other command.
//!
//! A session exists when its checkpoint ref exists; the newest checkpoint's trailers say
//! everything `list` shows, so listing N sessions reads N commits and no journal.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::{Error, LocateError, Result};
use super::id::SessionId;
use super::record::Checkpoint;
use super::state::Status;
use crate::git::{ObjectId, Repo};

const SESSIONS_PREFIX: &str = "refs/bmad/sessions/";

/// A session, as its newest checkpoint describes it.
#[derive(Clone, Debug, Serialize)]
pub struct Session {
    /// Its id.
    pub id: SessionId,
    /// Its name.
    pub name: String,
    /// Its branch, as a full ref name.
    pub branch: String,
    /// Its worktree directory.
    pub worktree: PathBuf,
    /// What it started from, as the user named it.
    pub base: String,
    /// Whether that directory exists.
    pub worktree_exists: bool,
    /// Its status at the newest checkpoint.
    pub status: Status,
    /// Its step at the newest checkpoint.
    pub step: Option<String>,
    /// The journal's last `seq` at the newest checkpoint.
    pub seq: u64,
    /// The newest checkpoint.
    #[serde(serialize_with = "crate::git::serialize_id")]
    pub head: ObjectId,
    /// When the newest checkpoint was taken, seconds since the epoch.
    pub updated: i64,
    /// The clone its worktree is in, once it has travelled (see [`super::sync`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clone: Option<String>,
    /// Whether it lives in another clone of the repository (resumed on another machine):
    /// its worktree path is that machine's, so nothing here checks or prunes it.
    pub elsewhere: bool,
    /// Whether its newest checkpoint hands it off (`Bmad-Lease: released`): another clone
    /// may take it at once.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub released: bool,
}

impl Session {
    /// The branch without `refs/heads/`.
    pub fn short_branch(&self) -> &str {
        self.branch
            .strip_prefix("refs/heads/")
            .unwrap_or(&self.branch)
    }

    /// Refuse, saying `what` that means, when the session lives in another clone: only the
    /// clone it lives in runs it or hands it on.
    pub fn ensure_lives_here(&self, what: &'static str) -> Result<()> {
        if self.elsewhere {
            return Err(Error::LivesElsewhere {
                name: self.name.clone(),
                what,
            });
        }
        Ok(())
    }

    /// A handle on the session's worktree, or `None` when `repo` already is that worktree.
    pub fn worktree_handle(&self, repo: &super::Repo) -> Result<Option<super::Repo>> {
        Ok(self.open_worktree(&repo.git)?.map(super::Repo::from))
    }

    /// The git dir of the session's worktree (where its run lock lives).
    pub fn worktree_git_dir(&self, repo: &super::Repo) -> Result<PathBuf> {
        let worktree = self.open_worktree(&repo.git)?;
        Ok(worktree
            .as_ref()
            .unwrap_or(&repo.git)
            .git_dir()
            .to_path_buf())
    }

    /// [`Session::worktree_handle`], for the layers that call git.
    pub fn open_worktree(&self, repo: &Repo) -> Result<Option<Repo>> {
        if same_dir(repo.workdir(), &self.worktree) {
            return Ok(None);
        }
        if !self.worktree.exists() {
            return Err(Error::WorktreeMissing {
                session: self.id.to_string(),
                path: self.worktree.clone(),
            });
        }
        Ok(Some(repo.open_worktree(&self.worktree)?))
    }

    /// The session its newest checkpoint describes, seen from the clone `here` (this
    /// repository's `bmad.cloneId`, if it has one).
    pub(super) fn from_checkpoint(id: SessionId, cp: Checkpoint, here: Option<&str>) -> Session {
        let worktree = PathBuf::from(&cp.trailers.worktree);
        let elsewhere = cp.trailers.clone.is_some() && cp.trailers.clone.as_deref() != here;
        Session {
            worktree_exists: !elsewhere && worktree.is_dir(),
            elsewhere,
            clone: cp.trailers.clone,
            released: cp.trailers.released,
            worktree,
            id,
            name: cp.trailers.name,
            base: cp.trailers.base,
            branch: cp.trailers.branch,
            status: cp.trailers.status,
            step: cp.trailers.step,
            seq: cp.trailers.seq,
            head: cp.id,
            updated: cp.time,
        }
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || std::fs::canonicalize(b).is_ok_and(|b| a == b)
}

/// Every session of the repository, oldest first.
pub fn list(repo: &super::Repo) -> Result<Vec<Session>> {
    let repo = &repo.git;
    let here = super::id::clone_id(repo);
    let mut sessions = Vec::new();
    for (name, head) in repo.refs_with_prefix(SESSIONS_PREFIX)? {
        let Some(id) = session_id_of_ref(&name) else {
            continue;
        };
        // A checkpoint ref that does not point to a checkpoint is for `doctor` to report.
        if let Some(cp) = Checkpoint::read(repo, head)? {
            sessions.push(Session::from_checkpoint(id, cp, here.as_deref()));
        }
    }
    Ok(sessions)
}

/// The session id in `refs/bmad/sessions/<id>/checkpoints`.
pub(crate) fn session_id_of_ref(name: &str) -> Option<SessionId> {
    let rest = name.strip_prefix(SESSIONS_PREFIX)?;
    let id = rest.strip_suffix("/checkpoints")?;
    SessionId::parse(id)
}

/// One session by its exact id, reading only its newest checkpoint.
pub fn get(repo: &Repo, id: &SessionId) -> Result<Option<Session>> {
    let Some(head) = repo.read_ref(&super::checkpoints_ref(id))? else {
        return Ok(None);
    };
    let here = super::id::clone_id(repo);
    Ok(Checkpoint::read(repo, head)?
        .map(|cp| Session::from_checkpoint(id.clone(), cp, here.as_deref())))
}

/// Find one session: by id, unique id prefix or name when `query` is given, otherwise the
/// session whose worktree `repo` was opened in.
///
/// An exact id, or the marker `start` leaves in a session worktree, is looked up directly
/// (hooks do this on every commit); everything else scans the sessions.
pub fn locate(repo: &super::Repo, query: Option<&str>) -> Result<Session, LocateError> {
    let repo = &repo.git;
    let direct = match query {
        Some(query) => SessionId::parse(query),
        None => super::marker::marked_session(repo),
    };
    if let Some(session) = direct.map(|id| get(repo, &id)).transpose()?.flatten() {
        if query.is_some() || same_dir(repo.workdir(), &session.worktree) {
            return Ok(session);
        }
    }
    let sessions = list(super::Repo::of(repo))?;
    let Some(query) = query else {
        let here = repo.workdir();
        return sessions
            .into_iter()
            .find(|s| same_dir(here, &s.worktree))
            .ok_or_else(|| LocateError::NotInSession {
                workdir: here.to_path_buf(),
            });
    };
    if let Some(exact) = sessions.iter().find(|s| s.id.as_str() == query) {
        return Ok(exact.clone());
    }
    // Names are reusable once a session is finished: prefer the newest with that name.
    if let Some(named) = sessions.iter().rev().find(|s| s.name == query) {
        return Ok(named.clone());
    }
    let matches: Vec<&Session> = sessions
        .iter()
        .filter(|s| query.len() >= 4 && s.id.as_str().starts_with(query))
        .collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(LocateError::Unknown {
            query: query.to_owned(),
        }),
        many => Err(LocateError::Ambiguous {
            query: query.to_owned(),
            candidates: many.iter().map(|s| s.id.to_string()).collect(),
        }),
    }
}

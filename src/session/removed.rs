//! Removed sessions stay restorable: `remove` first keeps every ref of the session in one
//! commit on `refs/bmad/removed/<id>`, and `restore` brings it all back.
//!
//! That commit (the "keep") lists each ref it stands for (`Bmad-Ref: <object> <name>`) and
//! has every commit among them as a parent, blobs (a run's playbook) in its tree, so nothing
//! the session had is unreachable while it exists: not the checkpoints (whose newest one is
//! taken by `remove` itself, so it holds the worktree's last files and index), not the
//! journal, not the branch. One ref is written in one compare-and-swap: a `remove` killed
//! after it leaves a session that is both live and kept, which `remove` finishes and
//! `restore` takes back. Keeps are deleted only by `git bmad gc`, once expired
//! (`sessions.keep_removed_days`, 14 days by default).

use std::path::PathBuf;

use serde::Serialize;

use super::checkpoint::{chain, extend_chain, Checkpoint, Recorded};
use super::checkpoints_ref;
use super::error::{Error, Result};
use super::event::{Decision, NewEvent};
use super::id::SessionId;
use super::journal;
use super::policy::Policy;
use super::schema::{Body, SessionRestored};
use super::state::Status;
use super::store::{self, Session};
use super::trailers::{trailer, trailers};
use crate::git::{CasOutcome, ObjectId, Repo};

const REMOVED_PREFIX: &str = "refs/bmad/removed/";

/// The ref that keeps a removed session.
pub fn removed_ref(id: &SessionId) -> String {
    format!("{REMOVED_PREFIX}{id}")
}

/// A removed session, as its keep commit describes it.
#[derive(Clone, Debug, Serialize)]
pub struct RemovedSession {
    /// Its id.
    pub id: SessionId,
    /// Its name.
    pub name: String,
    /// Its branch (full ref name).
    pub branch: String,
    /// Where its worktree was.
    pub worktree: PathBuf,
    /// When it was removed, seconds since the epoch.
    pub removed: i64,
    /// Until when it is kept, seconds since the epoch; `gc` deletes it after.
    pub keep_until: i64,
    /// Whether `--force` removed it.
    pub forced: bool,
    /// Changed files its snapshot could not keep (a secret in them).
    pub left_out: Vec<String>,
    /// The keep commit.
    #[serde(serialize_with = "crate::git::serialize_id")]
    pub keep: ObjectId,
    /// The refs it stands for, and their objects.
    #[serde(skip)]
    refs: Vec<(String, ObjectId)>,
}

impl RemovedSession {
    /// Whether `gc` may delete it at `now` (seconds since the epoch).
    pub fn expired(&self, now: i64) -> bool {
        self.keep_until <= now
    }

    fn read(repo: &Repo, keep: ObjectId) -> Result<Option<RemovedSession>> {
        let info = repo.commit_info(keep)?;
        let message = info.message.as_str();
        let one = |key| trailer(message, key).map(str::to_owned);
        let Some(id) = one("Bmad-Removed-Session").and_then(|v| SessionId::parse(&v)) else {
            return Ok(None);
        };
        let refs = trailers(message, "Bmad-Ref")
            .filter_map(|v| {
                let (object, name) = v.split_once(' ')?;
                Some((name.to_owned(), ObjectId::from_hex(object.as_bytes()).ok()?))
            })
            .collect();
        Ok(Some(RemovedSession {
            id,
            name: one("Bmad-Name").unwrap_or_default(),
            branch: one("Bmad-Branch").unwrap_or_default(),
            worktree: PathBuf::from(one("Bmad-Worktree").unwrap_or_default()),
            removed: info.time,
            keep_until: one("Bmad-Keep-Until")
                .and_then(|v| v.parse().ok())
                .unwrap_or(info.time),
            forced: one("Bmad-Forced").as_deref() == Some("yes"),
            left_out: trailers(message, "Bmad-Left-Out")
                .filter_map(|v| serde_json::from_str(v).ok())
                .collect(),
            keep,
            refs,
        }))
    }
}

/// Keep `refs` (every ref of `session`, see [`super::session_refs`]) in one commit on its
/// [`removed_ref`], until `keep_until` (seconds since the epoch). Called by `remove` after
/// its last checkpoint and before it deletes anything; a keep left by an interrupted
/// `remove` is extended with the refs it named that are gone since, and the files it left
/// out stay named.
pub(crate) fn keep(
    repo: &Repo,
    session: &Session,
    refs: &[(String, ObjectId)],
    forced: bool,
    keep_until: u64,
    left_out: &[String],
) -> Result<RemovedSession> {
    let name = removed_ref(&session.id);
    let mut refs = refs.to_vec();
    let mut left_out = left_out.to_vec();
    let earlier = repo.read_ref(&name)?;
    if let Some(earlier) = earlier
        .map(|id| RemovedSession::read(repo, id))
        .transpose()?
        .flatten()
    {
        for (old, object) in earlier.refs {
            if !refs.iter().any(|(n, _)| *n == old) {
                refs.push((old, object));
            }
        }
        for path in earlier.left_out {
            if !left_out.contains(&path) {
                left_out.push(path);
            }
        }
    }
    let mut parents: Vec<ObjectId> = Vec::new();
    let mut blobs = Vec::new();
    for (_, object) in &refs {
        if repo.is_commit(*object) {
            if !parents.contains(object) {
                parents.push(*object);
            }
        } else {
            blobs.push((object.to_string(), *object));
        }
    }
    let tree = repo.tree_of_blobs(&blobs)?;
    let mut message = format!(
        "removed session {} ({})\n\nBmad-Removed-Session: {}\nBmad-Name: {}\nBmad-Branch: {}\nBmad-Worktree: {}\nBmad-Forced: {}\nBmad-Keep-Until: {keep_until}\n",
        session.name,
        session.id,
        session.id,
        session.name,
        session.branch,
        session.worktree.display(),
        if forced { "yes" } else { "no" },
    );
    for (ref_name, object) in &refs {
        message.push_str(&format!("Bmad-Ref: {object} {ref_name}\n"));
    }
    for path in &left_out {
        message.push_str(&format!(
            "Bmad-Left-Out: {}\n",
            serde_json::Value::from(path.as_str())
        ));
    }
    let commit = repo.write_commit(tree, &parents, &message)?;
    if repo.cas_ref_waiting(&name, earlier, commit, "bmad remove: keep the session")?
        != CasOutcome::Updated
    {
        return Err(repo.contention(&name, 1).into());
    }
    RemovedSession::read(repo, commit)?.ok_or_else(|| {
        crate::git::Error::Corrupt(format!(
            "the keep {commit} of {} cannot be read back",
            session.id
        ))
        .into()
    })
}

/// Every removed session still kept, oldest removal first.
pub fn list_removed(repo: &Repo) -> Result<Vec<RemovedSession>> {
    let mut removed = Vec::new();
    for (_, keep) in repo.refs_with_prefix(REMOVED_PREFIX)? {
        // A ref that does not hold a keep is for `doctor` to report.
        if repo.is_commit(keep) {
            removed.extend(RemovedSession::read(repo, keep)?);
        }
    }
    removed.sort_by_key(|r| r.removed);
    Ok(removed)
}

/// The removed session a user means: by id, name (the most recently removed) or id prefix.
fn find_removed(repo: &Repo, query: &str) -> Result<Option<RemovedSession>> {
    let removed = list_removed(repo)?;
    if let Some(exact) = removed.iter().find(|r| r.id.as_str() == query) {
        return Ok(Some(exact.clone()));
    }
    if let Some(named) = removed.iter().rev().find(|r| r.name == query) {
        return Ok(Some(named.clone()));
    }
    let matches: Vec<&RemovedSession> = removed
        .iter()
        .filter(|r| query.len() >= 4 && r.id.as_str().starts_with(query))
        .collect();
    match matches.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some((*one).clone())),
        many => Err(super::LocateError::Ambiguous {
            query: query.to_owned(),
            candidates: many.iter().map(|r| r.id.to_string()).collect(),
        }
        .into()),
    }
}

/// What `restore` did.
#[derive(Clone, Debug, Serialize)]
pub struct Restored {
    /// The session, live again.
    pub session: Session,
    /// What it came back from: `removed` or `pruned`.
    pub from: &'static str,
    /// The checkpoint whose files and index the worktree has again.
    pub checkpoint: Checkpoint,
    /// Files left alone because ignore rules cover them.
    pub protected: Vec<String>,
    /// What the policy could not do to guard the worktree made again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Bring back a removed session (its refs, then its worktree with the files and index of its
/// last checkpoint), or give a pruned one its worktree again. Running it again after a crash
/// goes on from where it stopped.
pub fn restore(repo: &Repo, query: &str, policy: &dyn Policy) -> Result<Restored> {
    if let Some(removed) = find_removed(repo, query)? {
        return restore_removed(repo, removed, policy);
    }
    let session = match store::locate(super::Repo::of(repo), Some(query)) {
        Err(super::LocateError::Unknown { query }) => {
            return Err(Error::NothingToRestore { query })
        }
        other => other?,
    };
    if session.worktree_exists {
        return Err(Error::InvalidInput(format!(
            "session {} ({}) is not removed: its worktree is {}",
            session.name,
            session.id,
            session.worktree.display()
        )));
    }
    restore_worktree(repo, session, "pruned", policy)
}

fn restore_removed(repo: &Repo, removed: RemovedSession, policy: &dyn Policy) -> Result<Restored> {
    // Another session took the branch or the directory since: refuse before writing.
    if let Some(other) = store::list(super::Repo::of(repo))?.into_iter().find(|s| {
        s.id != removed.id && (s.branch == removed.branch || s.worktree == removed.worktree)
    }) {
        return Err(Error::RestoreBlocked {
            session: removed.id.to_string(),
            by: format!("{} ({})", other.name, other.id),
            what: format!("{} and {}", other.short_branch(), other.worktree.display()),
        });
    }
    if std::fs::symlink_metadata(&removed.worktree).is_ok()
        && !super::worktree::marks_session(repo, &removed.worktree, &removed.id)
    {
        return Err(Error::RestorePathExists {
            session: removed.id.to_string(),
            path: removed.worktree.clone(),
        });
    }
    let mut missing = Vec::new();
    for (name, object) in &removed.refs {
        match repo.read_ref(name)? {
            None => missing.push((name, *object)),
            Some(now) if now == *object => {}
            Some(now) => {
                return Err(Error::RestoreConflict {
                    session: removed.id.to_string(),
                    reference: name.clone(),
                    now: now.to_hex_with_len(10).to_string(),
                    kept: object.to_hex_with_len(10).to_string(),
                })
            }
        }
    }
    let chain = checkpoints_ref(&removed.id);
    // The checkpoint ref last: until it exists, the session is not listed as live.
    missing.sort_by_key(|(name, _)| **name == chain);
    for (name, object) in missing {
        if repo.cas_ref_waiting(name, None, object, "bmad restore")? != CasOutcome::Updated
            && repo.read_ref(name)? != Some(object)
        {
            return Err(repo.contention(name, 1).into());
        }
    }
    let session = store::get(repo, &removed.id)?.ok_or_else(|| Error::NoCheckpoint {
        session: removed.id.to_string(),
    })?;
    let restored = if session.worktree_exists && restored_already(repo, &session)? {
        let checkpoint = chain_head(repo, &session)?;
        Restored {
            session,
            from: "removed",
            checkpoint,
            protected: Vec::new(),
            warnings: Vec::new(),
        }
    } else {
        restore_worktree(repo, session, "removed", policy)?
    };
    // The keep goes last: until then, `restore` can be run again.
    let keep = removed_ref(&removed.id);
    if repo.delete_ref_waiting(&keep, removed.keep)? != CasOutcome::Updated {
        return Err(repo.contention(&keep, 1).into());
    }
    Ok(restored)
}

/// Whether the newest checkpoint is the one `restore` ends with.
fn restored_already(repo: &Repo, session: &Session) -> Result<bool> {
    Ok(chain_head(repo, session)?.label.starts_with(RESTORED_LABEL))
}

const RESTORED_LABEL: &str = "session restored";

fn chain_head(repo: &Repo, session: &Session) -> Result<Checkpoint> {
    chain(super::Repo::of(repo), session)?
        .into_iter()
        .next()
        .ok_or_else(|| Error::NoCheckpoint {
            session: session.id.to_string(),
        })
}

/// Give `session` its worktree back, on its branch, with the files and index of its newest
/// checkpoint; record that, with the status it had before it was removed or pruned.
fn restore_worktree(
    repo: &Repo,
    session: Session,
    from: &'static str,
    policy: &dyn Policy,
) -> Result<Restored> {
    let checkpoints = chain(super::Repo::of(repo), &session)?;
    let target = checkpoints
        .first()
        .cloned()
        .ok_or_else(|| Error::NoCheckpoint {
            session: session.id.to_string(),
        })?;
    let mut warnings = Vec::new();
    if !session.worktree_exists {
        if std::fs::symlink_metadata(&session.worktree).is_ok() {
            return Err(Error::RestorePathExists {
                session: session.id.to_string(),
                path: session.worktree.clone(),
            });
        }
        super::worktree::forget_vanished_worktrees(repo, Some(&session.worktree))?;
        if repo.read_ref(&session.branch)?.is_none() {
            // The branch was deleted since: it starts again where the session left it.
            let head = target.session_head().ok_or_else(|| Error::NoCheckpoint {
                session: session.id.to_string(),
            })?;
            if repo.cas_ref_waiting(&session.branch, None, head, "bmad restore: branch")?
                != CasOutcome::Updated
            {
                return Err(repo.contention(&session.branch, 1).into());
            }
        }
        repo.add_worktree_on(&session.worktree, session.short_branch())?;
        super::marker::mark_session_worktree(
            repo,
            &session.worktree,
            &session.id,
            &session.branch,
        )?;
        warnings = policy.prepare_worktree(repo, &session.worktree);
    }
    let wt = repo.open_worktree(&session.worktree)?;
    let protected = super::rollback::restore_state(repo, &wt, &target)?;
    // The status before removal or pruning: a pruned session is running again.
    let status = checkpoints
        .iter()
        .map(|c| c.trailers.status)
        .find(|s| *s != Status::Pruned)
        .unwrap_or(Status::Running);
    journal::append(
        repo,
        &session.id,
        NewEvent::new(Body::SessionRestored(SessionRestored {
            from: from.to_owned(),
            worktree: session.worktree.to_string_lossy().into_owned(),
            status: status.as_str().to_owned(),
        }))
        .decision(Some(Decision::Human)),
    )?;
    let (checkpoint, _) = extend_chain(
        repo,
        &session,
        Recorded::Same,
        &format!("{RESTORED_LABEL} (was {from})"),
        Some(status),
        None,
    )?;
    let session = store::get(repo, &session.id)?.unwrap_or(session);
    Ok(Restored {
        session,
        from,
        checkpoint,
        protected,
        warnings,
    })
}

/// Delete the keeps that expired by `now` (seconds since the epoch), or all of them; the
/// ones deleted (or, with `dry_run`, that would be).
pub fn gc(repo: &Repo, now: i64, all: bool, dry_run: bool) -> Result<Vec<RemovedSession>> {
    let due: Vec<RemovedSession> = list_removed(repo)?
        .into_iter()
        .filter(|r| all || r.expired(now))
        .collect();
    if !dry_run {
        for removed in &due {
            let name = removed_ref(&removed.id);
            if repo.delete_ref_waiting(&name, removed.keep)? != CasOutcome::Updated {
                return Err(repo.contention(&name, 1).into());
            }
        }
    }
    Ok(due)
}

//! Bringing a session to this clone (`resume`): one that exists only on a remote, or one
//! that lives in another clone and is taken back. Its journal comes in as copies (trusted
//! where an allowed signer vouched, see [`super::trust`]), its checkpoints and branch as the
//! remote has them once their trailers are what this clone would have written, and its
//! worktree where this clone's config puts it.

use super::checkpoint::Checkpoint;
use super::checkpoints_ref;
use super::error::{Error, Result};
use super::event::NewEvent;
use super::id::ensure_clone_id;
use super::journal;
use super::policy::Policy;
use super::remote_checks::check_remote_trailers;
use super::schema::Body;
use super::store::Session;
use super::sync::{cas, list_remote, merge_journals, tracking_prefix};
use crate::git::Repo;

/// How recent the newest checkpoint of a running session in another clone must be for it
/// to count as someone's live work there (the lease): `resume` here refuses it without
/// `--steal`. The lease itself is the journal's record of where the session lives: the
/// `worktree_moved` event and the `Bmad-Clone` trailer written when a clone takes it.
pub const LEASE: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Bring a session to this clone: one that exists only on `remote` (as of the last sync),
/// or one that exists here but lives in another clone (taking it back). Its checkpoints,
/// journal and stored texts become local, its branch is made (or fast-forwarded) from the
/// remote's, and a worktree is made with the files and index of its newest checkpoint
/// (untracked files included). The journal records where it lives now.
///
/// Refuses a session that looks live in the other clone (running, newest checkpoint under
/// [`LEASE`] ago) unless `steal`. A session that already lives here is returned as it is.
pub fn adopt(
    repo: &super::Repo,
    remote: &str,
    query: &str,
    steal: bool,
    policy: &dyn Policy,
) -> Result<(Session, Vec<String>)> {
    let repo = &repo.git;
    let local = match super::store::locate(super::Repo::of(repo), Some(query)) {
        Ok(s) => Some(s),
        Err(super::LocateError::Unknown { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let (session, imported) = match local {
        Some(here) if !here.elsewhere => return Ok((here, Vec::new())),
        Some(here) => (here, true),
        None => (find_remote(repo, remote, query)?, false),
    };
    // Checked before anything is written here: a refusal leaves this clone as it was.
    let lease = vouched_lease(repo, remote, &session)?;
    let age = crate::time::Timestamp::now().secs() as i64 - lease.updated;
    let live =
        lease.status == super::Status::Running && !lease.released && age < LEASE.as_secs() as i64;
    if live && !steal {
        return Err(Error::LeaseHeld {
            session: session.name.clone(),
            remote: remote.to_owned(),
            minutes: (LEASE.as_secs() as i64 - age).max(60) / 60,
        });
    }
    if !imported {
        import_refs(repo, remote, &session)?;
    }
    settle_here(repo, remote, session, policy)
}

/// Where a session stands as to its lease: running or not, released or not, and since when.
struct Lease {
    status: super::Status,
    released: bool,
    updated: i64,
}

/// The lease as the newest checkpoint that an allowed signer vouched for tells it (the
/// remote's journal records each checkpoint by its commit). A checkpoint nobody signed is
/// anyone's to write: its `Bmad-Lease: released`, its status and its date count for
/// nothing, so a teammate's forged release or back-dated checkpoint cannot hand a live
/// session to a third clone. With no vouched checkpoint at all, the newest one counts, but
/// never as released.
fn vouched_lease(repo: &Repo, remote: &str, session: &Session) -> Result<Lease> {
    let vouched: Vec<crate::git::ObjectId> =
        super::sync::remote_entries(super::Repo::of(repo), remote, &session.id)?
            .into_iter()
            .filter(|(_, vouched)| *vouched)
            .filter_map(|(entry, _)| match &entry.event.body {
                Body::Checkpoint(c) => crate::git::ObjectId::from_hex(c.commit.as_bytes()).ok(),
                _ => None,
            })
            .collect();
    for id in vouched.iter().rev() {
        if let Some(cp) = Checkpoint::read(repo, *id)? {
            return Ok(Lease {
                status: cp.trailers.status,
                released: cp.trailers.released,
                updated: cp.time,
            });
        }
    }
    Ok(Lease {
        status: session.status,
        released: false,
        updated: session.updated,
    })
}

/// The one session of `remote` (as of the last sync) that `query` names, once its
/// trailers are what this clone would have written.
fn find_remote(repo: &Repo, remote: &str, query: &str) -> Result<Session> {
    let mut candidates: Vec<Session> = list_remote(super::Repo::of(repo), remote)?
        .into_iter()
        .map(|r| r.session)
        .filter(|s| s.id.as_str() == query || s.name == query || s.id.as_str().starts_with(query))
        .collect();
    let session = match candidates.len() {
        0 => {
            return Err(super::LocateError::Unknown {
                query: query.to_owned(),
            }
            .into())
        }
        1 => candidates.remove(0),
        _ => {
            return Err(super::LocateError::Ambiguous {
                query: query.to_owned(),
                candidates: candidates.iter().map(|s| s.id.to_string()).collect(),
            }
            .into())
        }
    };
    let prefix = super::load_config(repo)?.sessions.branch_prefix;
    if let Some(cp) = Checkpoint::read(repo, session.head)? {
        check_remote_trailers(&cp.trailers, &session.id, &prefix).map_err(|reason| {
            Error::RemoteRefused {
                remote: remote.to_owned(),
                session: session.id.to_string(),
                reason,
            }
        })?;
    }
    Ok(session)
}

/// Copy a remote session's journal, stored texts and checkpoints into the local refs; the
/// checkpoint ref last, so `list` sees the session only once the rest is there.
fn import_refs(repo: &Repo, remote: &str, session: &Session) -> Result<()> {
    let id = &session.id;
    let track = tracking_prefix(remote);
    // Their journal comes in as copies, trusted where an allowed signer vouched for them.
    if let Some(notes) = repo.read_ref(&format!("{track}notes/{id}"))? {
        merge_journals(repo, id, notes, remote, Some(session.head))?;
    }
    let mut copies = Vec::new();
    let texts = format!("{track}sessions/{id}/texts/");
    for (name, value) in repo.refs_with_prefix(&texts)? {
        let rest = name.strip_prefix(&texts).unwrap_or_default();
        copies.push((super::session_ref(id, &format!("texts/{rest}")), value));
    }
    copies.push((checkpoints_ref(id), session.head));
    for (name, value) in &copies {
        match repo.read_ref(name)? {
            None => cas(repo, name, None, *value)?,
            Some(now) if now == *value => {}
            // Left by an interrupted resume: moved forward only, never over other history.
            Some(now) if repo.is_ancestor(now, *value)? == Some(true) => {
                cas(repo, name, Some(now), *value)?
            }
            Some(now) => {
                return Err(Error::Diverged {
                    reference: name.clone(),
                    here: now.to_string(),
                    remote: remote.to_owned(),
                    theirs: value.to_string(),
                })
            }
        }
    }
    Ok(())
}

/// Give the session its branch and a worktree in this clone, from its newest checkpoint,
/// and record that it lives here now.
fn settle_here(
    repo: &Repo,
    remote: &str,
    mut session: Session,
    policy: &dyn Policy,
) -> Result<(Session, Vec<String>)> {
    let id = session.id.clone();
    let config = super::load_config(repo)?;
    let worktree = config.worktree_for(&repo.main_workdir()?, &session.name);
    // An old worktree of this clone whose directory was deleted by hand still holds the
    // branch for git: let git forget it first.
    super::worktree::forget_vanished_worktrees(repo, Some(&worktree))?;
    let head_id = repo
        .read_ref(&checkpoints_ref(&id))?
        .ok_or_else(|| Error::NoCheckpoint {
            session: id.to_string(),
        })?;
    let head = Checkpoint::read(repo, head_id)?.ok_or_else(|| Error::NoCheckpoint {
        session: id.to_string(),
    })?;
    // This clone's own worktree of the session from before it left is brought up to date
    // only when it was handed off and holds just that; anything else there stays.
    let in_place = std::fs::symlink_metadata(&worktree).is_ok();
    if in_place && !super::hand_off::may_update_in_place(repo, &worktree, &id, &head)? {
        return Err(if super::worktree::marks_session(repo, &worktree, &id) {
            Error::LeftWorktree {
                session: session.name.clone(),
                path: worktree,
            }
        } else {
            Error::PathExists { path: worktree }
        });
    }
    // The branch: the remote's, or where the newest checkpoint saw it; an existing one here
    // only moves forward to it.
    let tracking_branch = format!("refs/remotes/{remote}/{}", session.short_branch());
    let branch_at = match repo.read_ref(&tracking_branch)? {
        Some(at) => at,
        None => head.session_head().ok_or_else(|| Error::NoCheckpoint {
            session: id.to_string(),
        })?,
    };
    match repo.read_ref(&session.branch)? {
        None => cas(repo, &session.branch, None, branch_at)?,
        Some(at) if at == branch_at => {}
        Some(at) if repo.is_ancestor(at, branch_at)? == Some(true) => {
            cas(repo, &session.branch, Some(at), branch_at)?
        }
        Some(_) => {
            return Err(Error::BranchExists {
                branch: session.short_branch().to_owned(),
            })
        }
    }
    if !in_place {
        repo.add_worktree_on(&worktree, session.short_branch())?;
    }
    let worktree = std::fs::canonicalize(&worktree).unwrap_or(worktree);
    super::marker::mark_session_worktree(repo, &worktree, &id, &session.branch)?;
    let warnings = policy.prepare_worktree(repo, &worktree);
    let wt = repo.open_worktree(&worktree)?;
    super::rollback::restore_state(repo, &wt, &head)?;
    super::hand_off::forget(&wt)?;
    let from = std::mem::replace(&mut session.worktree, worktree.clone());
    session.worktree_exists = true;
    session.elsewhere = false;
    session.clone = Some(ensure_clone_id(super::Repo::of(repo))?);
    journal::append(
        repo,
        &id,
        NewEvent::new(Body::WorktreeMoved(super::schema::WorktreeMoved {
            from: from.to_string_lossy().into_owned(),
            to: worktree.to_string_lossy().into_owned(),
            clone: session.clone.clone(),
        }))
        .decision(Some(super::Decision::Human)),
    )?;
    let label = format!("resumed from {remote} at {}", worktree.display());
    super::checkpoint::extend_chain(
        repo,
        &session,
        super::checkpoint::Recorded::Same,
        &label,
        None,
        None,
    )?;
    // This process read its config before the clone id was written: the session is here.
    let mut settled = super::store::get(repo, &id)?.unwrap_or(session);
    settled.elsewhere = false;
    settled.worktree_exists = settled.worktree.is_dir();
    Ok((settled, warnings))
}

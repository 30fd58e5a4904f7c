//! `prune`: sessions whose worktrees were deleted by hand are recorded so, and those moved by
//! hand (`git worktree move`) are followed to where they went.

use std::path::PathBuf;

use serde::Serialize;

use super::checkpoint::{extend_chain, Recorded};
use super::error::Result;
use super::event::{Decision, NewEvent};
use super::id::SessionId;
use super::journal;
use super::schema::{self, Body};
use super::state::Status;
use super::store::{self, Session};
use super::worktree::{self, Damage};
use crate::git::Repo;

/// A session whose worktree was found deleted.
#[derive(Clone, Debug, Serialize)]
pub struct PruneOutcome {
    /// The session.
    pub session: SessionId,
    /// Its name.
    pub name: String,
    /// Where its worktree was.
    pub worktree: PathBuf,
    /// Whether the journal now records it (false for finished sessions, which stay finished).
    pub recorded: bool,
    /// Where the worktree was found moved to, if it was moved rather than deleted: the
    /// session now names that path and is not pruned.
    pub moved_to: Option<PathBuf>,
}

/// Record sessions whose worktrees were deleted by hand, and let git forget those worktrees.
///
/// The session's refs stay: its checkpoints still hold the work.
pub fn prune(repo: &Repo) -> Result<Vec<PruneOutcome>> {
    let gone: Vec<Session> = store::list(super::Repo::of(repo))?
        .into_iter()
        .filter(|s| !s.worktree_exists && !s.elsewhere && s.status != Status::Pruned)
        .collect();
    let worktrees = repo.worktrees()?;
    let mut outcomes = Vec::new();
    let mut deleted = Vec::new();
    for session in gone {
        let damage = worktree::damage_among(
            &worktrees,
            repo,
            session.id.as_str(),
            &session.worktree,
            &session.branch,
        )?;
        match damage.map(|d| d.damage) {
            Some(Damage::Moved { to }) => {
                outcomes.push(follow_move(repo, session, to)?);
            }
            _ => deleted.push(session),
        }
    }
    worktree::forget_vanished_worktrees(repo, None)?;
    for session in deleted {
        let record = session.status != Status::Completed;
        if record {
            let label = format!(
                "worktree {} was deleted; pruned",
                session.worktree.display()
            );
            extend_chain(
                repo,
                &session,
                Recorded::Head(repo.read_ref(&session.branch)?),
                &label,
                Some(Status::Pruned),
                None,
            )?;
            journal::append(
                repo,
                &session.id,
                NewEvent::new(Body::WorktreePruned(schema::WorktreePruned {
                    worktree: session.worktree.to_string_lossy().into_owned(),
                }))
                .decision(Some(Decision::Human)),
            )?;
        }
        outcomes.push(PruneOutcome {
            session: session.id.clone(),
            name: session.name.clone(),
            worktree: session.worktree.clone(),
            recorded: record,
            moved_to: None,
        });
    }
    Ok(outcomes)
}

/// Record where `session`'s worktree was moved, if git lists it moved (`doctor --fix`).
pub(super) fn follow_move_of(repo: &Repo, session: Session) -> Result<()> {
    let damage = worktree::damage_among(
        &repo.worktrees()?,
        repo,
        session.id.as_str(),
        &session.worktree,
        &session.branch,
    )?;
    if let Some(Damage::Moved { to }) = damage.map(|d| d.damage) {
        follow_move(repo, session, to)?;
    }
    Ok(())
}

/// Record that `session`'s worktree is now at `to` (`git worktree move`).
fn follow_move(repo: &Repo, mut session: Session, to: PathBuf) -> Result<PruneOutcome> {
    let from = std::mem::replace(&mut session.worktree, to.clone());
    journal::append(
        repo,
        &session.id,
        NewEvent::new(Body::WorktreeMoved(schema::WorktreeMoved {
            from: from.to_string_lossy().into_owned(),
            to: to.to_string_lossy().into_owned(),
            clone: None,
        }))
        .decision(Some(Decision::Human)),
    )?;
    let label = format!("worktree moved to {}", to.display());
    extend_chain(repo, &session, Recorded::Same, &label, None, None)?;
    Ok(PruneOutcome {
        session: session.id,
        name: session.name,
        worktree: from,
        recorded: true,
        moved_to: Some(to),
    })
}

//! `remove`: a session's worktree, branch, checkpoints and journal deleted, once all of it is
//! kept restorable ([`super::removed`] keeps and restores).

use super::checkpoint::{self, Checkpoint};
use super::error::{Error, Result};
use super::event::{Decision, NewEvent};
use super::journal;
use super::notes_ref;
use super::policy::Policy;
use super::removed::{self, RemovedSession};
use super::schema::{self, Body};
use super::store::Session;
use super::worktree;
use crate::git::{CasOutcome, ObjectId, Repo};
use crate::time::Timestamp;

/// What `remove` may do.
#[derive(Clone, Copy, Debug, Default)]
pub struct RemoveOptions {
    /// Remove even a dirty worktree or an unmerged, unpushed branch.
    pub force: bool,
}

/// Delete a session: worktree, branch, checkpoints and journal, after keeping all of it
/// restorable for `sessions.keep_removed_days` (see [`super::removed`]).
///
/// Refuses, unless forced, when the worktree has uncommitted changes or the branch has
/// commits that no other branch or remote-tracking ref contains. `policy` sees the worktree's
/// changed files before the last checkpoint takes them; the ones it refuses (a secret) are
/// not kept, and [`RemovedSession::left_out`] names them. Also returns what it cleared on
/// the way (locks a killed git left), one line each.
pub fn remove(
    repo: &Repo,
    session: &Session,
    options: RemoveOptions,
    policy: &dyn Policy,
) -> Result<(RemovedSession, Vec<String>)> {
    if repo.workdir().starts_with(&session.worktree) {
        return Err(Error::InsideSession {
            main: repo.main_workdir()?,
        });
    }
    // What a killed git left would fail this remove: its branch's lock, `packed-refs.lock`,
    // the worktree's index lock.
    let mut locks = vec![
        repo.lock_path(&session.branch),
        repo.common_path("packed-refs.lock"),
    ];
    if let Ok(wt) = repo.open_worktree(&session.worktree) {
        locks.push(wt.git_dir().join("index.lock"));
    }
    let warnings = super::git_locks::clear_abandoned_locks(repo, &locks);
    // A `start` killed inside `git worktree add` leaves a worktree git keeps locked and that
    // may not open as one; no journal was begun, so nothing was ever done in it, and a forced
    // remove goes on without a last snapshot.
    let half_added = session.worktree_exists
        && repo.read_ref(&notes_ref(&session.id))?.is_none()
        && repo.is_half_added_worktree(&session.worktree)?;
    // A `remove` killed after its keep was written: the keep holds the worktree as it was
    // before git began deleting it. Finishing takes no new snapshot, which would record the
    // half-deleted files as the session's last state.
    let finishing = repo.read_ref(&removed::removed_ref(&session.id))?.is_some();
    let reasons = if (half_added && options.force) || finishing {
        Vec::new()
    } else {
        work_remove_would_lose(repo, session)?
    };
    if !reasons.is_empty() && !options.force {
        return Err(Error::WouldLoseWork {
            session: session.id.to_string(),
            reasons,
        });
    }
    let keep_days = super::load_config(repo)?.sessions.keep_removed_days;
    let keep_until = Timestamp::now().secs() + u64::from(keep_days) * 24 * 60 * 60;
    let mut left_out = Vec::new();
    if !finishing {
        // The worktree's last state (files, untracked files, index) becomes the newest
        // checkpoint, so the keep holds it.
        if session.worktree_exists && !half_added {
            left_out = checkpoint::checkpoint(
                super::Repo::of(repo),
                session,
                "session removed",
                None,
                None,
                policy,
            )?
            .kept_out;
        }
        journal::append(
            repo,
            &session.id,
            NewEvent::new(Body::SessionRemoved(schema::SessionRemoved {
                forced: options.force,
                keep_until: Timestamp::from_secs(keep_until).rfc3339(),
                left_out: left_out.clone(),
            }))
            .decision(Some(Decision::Human)),
        )?;
    }
    let refs = super::session_refs(repo, session)?;
    let kept = removed::keep(repo, session, &refs, options.force, keep_until, &left_out)?;
    if half_added {
        repo.remove_half_added_worktree(&session.worktree)?;
    } else if finishing && session.worktree_exists {
        // git may no longer take it for a worktree (its `.git` file went first).
        repo.remove_worktree_files(&session.worktree)?;
    } else if session.worktree_exists {
        repo.remove_worktree(&session.worktree, options.force)?;
    } else {
        worktree::forget_vanished_worktrees(repo, Some(&session.worktree))?;
    }
    for (name, tip) in refs {
        if repo.delete_ref_waiting(&name, tip)? != CasOutcome::Updated {
            return Err(repo.contention(&name, 1).into());
        }
    }
    Ok((kept, warnings))
}

/// Why removing `session` would lose work no other ref has (empty: nothing would be lost).
fn work_remove_would_lose(repo: &Repo, session: &Session) -> Result<Vec<String>> {
    let mut reasons = Vec::new();
    if session.worktree_exists {
        let wt = repo.open_worktree(&session.worktree)?;
        let dirt = wt.dirt(3)?;
        if !dirt.is_clean() {
            reasons.push(format!(
                "its worktree has {} uncommitted change(s) ({}{})",
                dirt.count,
                dirt.sample.join(", "),
                if dirt.count > dirt.sample.len() {
                    ", …"
                } else {
                    ""
                }
            ));
        }
        for path in repo.changed_submodules(&session.worktree)? {
            reasons.push(format!(
                "its submodule {path} holds commits, edits or untracked files of its own, which no checkpoint keeps (commit and push them in the submodule)"
            ));
        }
    }
    if let Some(tip) = repo.read_ref(&session.branch)? {
        if repo.refs_containing(tip, &session.branch)?.is_empty() {
            reasons.push(format!(
                "branch {} has commits that are neither merged into another branch nor pushed",
                session.short_branch()
            ));
        }
    }
    // A rollback that moved the branch back left the dropped commits in its safety
    // checkpoint alone: deleting the chain would lose them.
    let heads: Vec<ObjectId> = checkpoint::chain(super::Repo::of(repo), session)?
        .iter()
        .filter_map(Checkpoint::session_head)
        .collect();
    let orphans = repo.commits_on_no_ref(&heads)?;
    if orphans > 0 {
        reasons.push(format!(
            "its checkpoints keep {orphans} commit(s) that no branch has (a rollback took them off {}; `git bmad undo` brings them back)",
            session.short_branch()
        ));
    }
    Ok(reasons)
}

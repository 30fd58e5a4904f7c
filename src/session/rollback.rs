//! Rollback: restore a session worktree to a checkpoint, and `undo` to reverse that.
//!
//! The state being left is always saved first as a safety checkpoint, so a rollback never
//! loses anything and can itself be undone. The restore is git's own two-way merge
//! (`read-tree -m -u <now> <target>`) through a temporary index: it only touches paths that
//! are in one of the two snapshots (ignored files are in neither), and it refuses, before
//! writing anything, if a file changed after the safety snapshot was taken. A worktree with
//! a secret in a changed file cannot be saved (a secret never enters the repository), so it
//! is not rolled back either until the secret is gone.

use serde::Serialize;

use super::checkpoint::{chain, extend_chain, Checkpoint};
use super::error::{Error, Result};
use super::event::{Decision, Event, NewEvent};
use super::journal::{self, Journal};
use super::journal_md_path;
use super::schema::{Body, RolledBack};
use super::state::SessionState;
use super::store::Session;
use crate::git::{ObjectId, Repo, TreeChange, Vet};

/// Which checkpoint to go back to.
#[derive(Clone, Debug)]
pub enum Target {
    /// A checkpoint number (1 = the first) or a commit id prefix.
    Checkpoint(String),
    /// The first checkpoint taken in this step.
    Step(String),
}

/// What a rollback would do.
#[derive(Clone, Debug, Serialize)]
pub struct RollbackPlan {
    /// The checkpoint to restore.
    pub target: Checkpoint,
    /// Its number in the chain (1 = first).
    pub number: usize,
    /// The files that would change, from the current state to the target's.
    pub changes: Vec<TreeChange>,
}

/// What a rollback did.
#[derive(Clone, Debug, Serialize)]
pub struct RollbackOutcome {
    /// The checkpoint restored.
    pub target: Checkpoint,
    /// The checkpoint of the state before, which `undo` returns to.
    pub safety: Checkpoint,
    /// The files that changed.
    pub changes: Vec<TreeChange>,
    /// The journal event.
    pub event: Event,
}

/// Work out a rollback without doing it (`--dry-run`).
pub fn plan_rollback(repo: &Repo, session: &Session, target: &Target) -> Result<RollbackPlan> {
    let (target, number) = resolve(repo, session, target)?;
    let worktree = session.open_worktree(repo)?;
    let wt = worktree.as_ref().unwrap_or(repo);
    let now = wt.snapshot_tree()?;
    let changes = visible_changes(session, wt.diff_trees(now, target.tree)?);
    Ok(RollbackPlan {
        target,
        number,
        changes,
    })
}

/// Restore the session worktree to a checkpoint, after a safety checkpoint of the current state.
///
/// `vet` sees every changed file first (see [`crate::git::Repo::vet_changes`]); one it refuses
/// stops the rollback before anything is written.
pub fn rollback(
    repo: &Repo,
    session: &Session,
    target: &Target,
    vet: Vet<'_>,
) -> Result<RollbackOutcome> {
    let (target, _) = resolve(repo, session, target)?;
    restore(repo, session, target, None, vet)
}

/// Reverse the most recent rollback (running it again redoes it).
pub fn undo(repo: &Repo, session: &Session, vet: Vet<'_>) -> Result<RollbackOutcome> {
    let journal = journal::read(repo, &session.id)?;
    let state = SessionState::replay(journal.events());
    let last = state.rollbacks.last().ok_or_else(|| Error::NothingToUndo {
        session: session.id.to_string(),
    })?;
    let safety = ObjectId::from_hex(last.safety.as_bytes())
        .ok()
        .and_then(|id| Checkpoint::read(repo, id).transpose())
        .transpose()?
        .ok_or_else(|| {
            crate::git::Error::Corrupt(format!(
                "rollback #{} names safety checkpoint {:?}, which cannot be read",
                last.seq, last.safety
            ))
        })?;
    restore(repo, session, safety, Some(last.seq), vet)
}

fn restore(
    repo: &Repo,
    session: &Session,
    target: Checkpoint,
    undo_of: Option<u64>,
    vet: Vet<'_>,
) -> Result<RollbackOutcome> {
    let worktree = session.open_worktree(repo)?;
    let wt = worktree.as_ref().unwrap_or(repo);
    let refused = wt.vet_changes(vet)?;
    if !refused.is_empty() {
        return Err(Error::SecretInWorktree { paths: refused });
    }

    // A private copy of the worktree's index keeps its stat cache (so `add -A` is cheap and
    // read-tree can tell which files changed since) while the real index stays untouched.
    let tmp = tempfile::Builder::new()
        .prefix("bmad-rollback-index-")
        .tempfile_in(wt.git_dir())
        .map_err(|e| Error::io("could not create a temporary index in", wt.git_dir(), e))?;
    let real_index = wt.git_dir().join("index");
    if real_index.exists() {
        std::fs::copy(&real_index, tmp.path())
            .map_err(|e| Error::io("could not copy the index", &real_index, e))?;
    }
    let now = wt.write_tree_of_worktree(tmp.path())?;
    let short = target.id.to_hex_with_len(10).to_string();
    let label = match undo_of {
        Some(seq) => format!("before undoing rollback #{seq}"),
        None => format!("before rollback to {short}"),
    };
    let (safety, _) = extend_chain(repo, session, Some(now), wt.head_id()?, &label, None, None)?;
    let changes = visible_changes(session, wt.diff_trees(now, target.tree)?);
    if let Err(e) = wt.read_tree_update(tmp.path(), now, target.tree) {
        return Err(Error::WorktreeChanged {
            safety: safety.id.to_hex_with_len(10).to_string(),
            detail: match e {
                crate::git::Error::Command { stderr, .. } => stderr.trim().replace('\n', "; "),
                other => other.to_string(),
            },
        });
    }
    drop(tmp);

    let journal = journal::read(repo, &session.id)?;
    let detail = RolledBack {
        target: target.id.to_string(),
        target_seq: checkpoint_seq(&journal, &target),
        safety: safety.id.to_string(),
        files: changes.len(),
        undo_of,
    };
    let event = journal::append(
        repo,
        &session.id,
        NewEvent::new(Body::Rollback(detail)).decision(Some(Decision::Human)),
    )?;
    Ok(RollbackOutcome {
        target,
        safety,
        changes,
        event,
    })
}

/// The changes a user cares about: the session's own journal.md is rendered at the next
/// commit, so listing it would only be noise.
fn visible_changes(session: &Session, mut changes: Vec<TreeChange>) -> Vec<TreeChange> {
    let journal_md = journal_md_path(&session.id);
    changes.retain(|c| c.path != journal_md);
    changes
}

/// The `seq` of a checkpoint's own event; its trailer's `seq` if the event is missing
/// (a crash between the two writes).
fn checkpoint_seq(journal: &Journal, cp: &Checkpoint) -> u64 {
    let id = cp.id.to_string();
    journal
        .events()
        .find(|e| matches!(&e.body, Body::Checkpoint(c) if c.commit == id))
        .map_or(cp.trailers.seq, |e| e.seq)
}

/// Find the checkpoint a user means; returns it and its number (1 = first).
fn resolve(repo: &Repo, session: &Session, target: &Target) -> Result<(Checkpoint, usize)> {
    let mut checkpoints = chain(repo, session)?;
    checkpoints.reverse();
    let unknown = |query: &str| Error::UnknownCheckpoint {
        session: session.id.to_string(),
        query: query.to_owned(),
    };
    let found = match target {
        Target::Step(step) => checkpoints
            .iter()
            .position(|c| c.trailers.step.as_deref() == Some(step.as_str())),
        Target::Checkpoint(query) => {
            let query = query.trim();
            if !query.is_empty() && query.len() < 7 && query.bytes().all(|b| b.is_ascii_digit()) {
                query
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=checkpoints.len()).contains(n))
                    .map(|n| n - 1)
            } else {
                let query = query.to_ascii_lowercase();
                if query.len() < 4 || !query.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(unknown(&query));
                }
                let matches: Vec<usize> = checkpoints
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.id.to_string().starts_with(&query))
                    .map(|(i, _)| i)
                    .collect();
                match matches.as_slice() {
                    [one] => Some(*one),
                    [] => None,
                    _ => {
                        return Err(Error::InvalidInput(format!(
                            "{query:?} matches {} checkpoints; give more of the id",
                            matches.len()
                        )))
                    }
                }
            }
        }
    };
    let query = match target {
        Target::Step(s) => format!("step {s}"),
        Target::Checkpoint(q) => q.clone(),
    };
    let index = found.ok_or_else(|| unknown(&query))?;
    Ok((checkpoints.swap_remove(index), index + 1))
}

//! Checkpoints: commits on `refs/bmad/sessions/<id>/checkpoints` that snapshot the session
//! worktree without touching its index, HEAD or branch.
//!
//! Parents are `[previous checkpoint, session HEAD]` (the first checkpoint has only the session
//! HEAD), so `git log` of the chain reaches the agent's own commits. When the index differs
//! from HEAD, the saved index (see [`crate::git::SavedIndex`]) is a last parent, named by a
//! `Bmad-Index` trailer: a checkpoint is the whole session state, files, index and HEAD. The
//! message is a one-line label and trailers that summarise the session, so `git bmad list`
//! reads one commit per session instead of replaying journals.

use super::error::{Error, Result};
use super::event::{Decision, Event, NewEvent};
use super::journal::{self, backoff};
use super::policy::Policy;
pub use super::record::{Checkpoint, Trailers};
use super::record::{INDEX_TRAILER, RAW_TRAILER};
use super::schema::{Body, CheckpointTaken};
use super::state::Status;
use super::store::Session;
use super::trailers::seq_trailer;
use super::{checkpoints_ref, notes_ref};
use crate::git::{CasOutcome, ObjectId, Repo, SavedIndex, Staged};

const MAX_ATTEMPTS: u32 = 500;

/// What a new checkpoint records of the session.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Recorded {
    /// The previous checkpoint's files, index and HEAD (a change of status only).
    Same,
    /// The same, and the lease released: no run is live in this clone (`push`).
    Released,
    /// The previous checkpoint's files and index, with this session HEAD (a pruned session:
    /// its worktree is gone, its branch is not).
    Head(Option<ObjectId>),
    /// A snapshot: the worktree's tree, its HEAD, and its saved index when that differs
    /// from HEAD.
    /// With a rollback's state left, the bytes on disk its tree does not give back (see
    /// [`Checkpoint::raw`]).
    State {
        tree: ObjectId,
        head: Option<ObjectId>,
        index: Option<ObjectId>,
        raw: Option<ObjectId>,
    },
}

impl Recorded {
    /// The session state of `wt` now; `tree` is its snapshot, `staged` whether its index
    /// differs from HEAD (`None`: find out by saving it). Every staged file is shown to
    /// `policy` first: one it refuses is saved as HEAD has it, and named in the list.
    pub(crate) fn of(
        wt: &Repo,
        tree: ObjectId,
        staged: Option<Staged>,
        policy: &dyn Policy,
    ) -> Result<(Recorded, Vec<String>)> {
        let head = wt.head_id()?;
        let without_index = || {
            let state = Recorded::State {
                tree,
                head,
                index: None,
                raw: None,
            };
            Ok((state, Vec::new()))
        };
        // Intent-to-add entries (`git add -N`) are in no tree: such an index is kept whole.
        let intent_to_add = match staged {
            Some(Staged {
                intent_to_add: false,
                ..
            }) => None,
            _ => wt.index_with_intent_to_add()?,
        };
        if staged.is_some_and(|s| !s.changes) && intent_to_add.is_none() {
            return without_index();
        }
        let head_tree = match head {
            Some(head) => wt.tree_of(head)?,
            None => wt.empty_tree(),
        };
        let saved = match staged.and_then(|s| s.tree) {
            Some(tree) => SavedIndex::Tree(tree),
            None => wt.save_index()?,
        };
        if staged.is_none() && saved == SavedIndex::Tree(head_tree) && intent_to_add.is_none() {
            return without_index();
        }
        let committed = super::policy::Committed::in_tree(wt, head_tree);
        let mut vet =
            |path: &str, bytes: &[u8]| policy.admit(path, bytes, &|| committed.holds(bytes));
        let (saved, kept_out) = wt.vet_saved_index(saved, head_tree, tree, &mut vet)?;
        // Whole only when every staged file passed: one kept out is saved as HEAD has it,
        // which only the tree form can say (the intent-to-add marks are lost then).
        let saved = match intent_to_add {
            Some(raw) if kept_out.is_empty() => raw,
            _ => saved,
        };
        let index = Some(wt.write_saved_index(saved)?);
        let state = Recorded::State {
            tree,
            head,
            index,
            raw: None,
        };
        Ok((state, kept_out))
    }
}

/// Write a checkpoint commit (objects only; no ref moves); a saved index and then the raw
/// bytes become its last parents, each named by its trailer.
pub(crate) fn write_commit(
    repo: &Repo,
    tree: ObjectId,
    parents: &[ObjectId],
    (index, raw): (Option<ObjectId>, Option<ObjectId>),
    label: &str,
    trailers: &Trailers,
) -> Result<ObjectId> {
    let label = one_line(label);
    let mut message = format!("{label}\n\n{}", trailers.format());
    let mut parents = parents.to_vec();
    for (name, extra) in [(INDEX_TRAILER, index), (RAW_TRAILER, raw)] {
        if let Some(id) = extra {
            message.push_str(&format!("{name}: {id}\n"));
            parents.push(id);
        }
    }
    Ok(repo.write_commit(tree, &parents, &message)?)
}

/// A label that fits the first line of a commit message.
pub(crate) fn one_line(label: &str) -> String {
    let line = label
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("checkpoint");
    line.chars().take(200).collect()
}

/// A checkpoint just taken.
#[derive(Clone, Debug)]
pub struct Taken {
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// Its journal event.
    pub event: Event,
    /// Changed files the policy refused: the checkpoint has them as `HEAD` has them.
    pub kept_out: Vec<String>,
}

/// Take a checkpoint of a session: snapshot its worktree, extend the chain, journal it.
///
/// Every changed file is shown to `policy` first: what it refuses is kept out of the object
/// database (the snapshot has the path as `HEAD` has it) and named in [`Taken::kept_out`].
/// `status` and `step` default to those of the previous checkpoint. `repo` may be any
/// worktree of the repository; the session's own worktree is snapshotted.
pub fn checkpoint(
    repo: &super::Repo,
    session: &Session,
    label: &str,
    status: Option<Status>,
    step: Option<String>,
    policy: &dyn Policy,
) -> Result<Taken> {
    let repo = &repo.git;
    let worktree = session.open_worktree(repo)?;
    // The snapshot's objects are held and written with the checkpoint commit, as one pack.
    let wt = worktree.as_ref().unwrap_or(repo).holding_objects();
    let wt = &wt;
    // A killed snapshot's scratch (a file git stored for it), with no git working here.
    super::git_locks::clear_abandoned_scratch(repo, wt);
    // The last checkpoint's tree: what the worktree's snapshot cache may describe.
    let since = match repo.read_ref(&checkpoints_ref(&session.id))? {
        Some(tip) => Some(repo.tree_of(tip)?),
        None => None,
    };
    let committed = super::policy::Committed::at_head(wt);
    let mut vet = |path: &str, bytes: &[u8]| policy.admit(path, bytes, &|| committed.holds(bytes));
    let snapshot = wt.snapshot_tree_vetted(Some(&mut vet), since)?;
    let (state, staged_out) = Recorded::of(wt, snapshot.tree, Some(snapshot.staged), policy)?;
    let (checkpoint, event) = extend_chain_with(repo, &[wt], session, state, label, status, step)?;
    let mut kept_out = snapshot.refused;
    for path in staged_out {
        if !kept_out.contains(&path) {
            kept_out.push(path);
        }
    }
    Ok(Taken {
        checkpoint,
        event,
        kept_out,
    })
}

/// Record a change of status (a gate opened, a run stopped) on the chain without taking a
/// snapshot: the new checkpoint reuses the previous one's tree, so `list` shows the status
/// from one commit.
pub fn mark_status(
    repo: &super::Repo,
    session: &Session,
    label: &str,
    status: Status,
    step: Option<String>,
) -> Result<(Checkpoint, Event)> {
    let repo = &repo.git;
    extend_chain(repo, session, Recorded::Same, label, Some(status), step)
}

/// Add a checkpoint commit to the chain by compare-and-swap, then journal it.
pub(crate) fn extend_chain(
    repo: &Repo,
    session: &Session,
    recorded: Recorded,
    label: &str,
    status: Option<Status>,
    step: Option<String>,
) -> Result<(Checkpoint, Event)> {
    extend_chain_with(repo, &[], session, recorded, label, status, step)
}

/// [`extend_chain`], writing the commit and its journal note in one go with what the
/// `held` handles hold (the snapshot's objects): one pack for the whole checkpoint.
fn extend_chain_with(
    repo: &Repo,
    held: &[&Repo],
    session: &Session,
    recorded: Recorded,
    label: &str,
    status: Option<Status>,
    step: Option<String>,
) -> Result<(Checkpoint, Event)> {
    let chain = checkpoints_ref(&session.id);
    let label = one_line(label);
    let started = std::time::Instant::now();
    for attempt in (0..MAX_ATTEMPTS).take_while(|_| started.elapsed() < journal::MAX_WAIT) {
        let prev_id = repo.read_ref(&chain)?.ok_or_else(|| Error::NoCheckpoint {
            session: session.id.to_string(),
        })?;
        let prev = Checkpoint::read(repo, prev_id)?.ok_or_else(|| {
            crate::git::Error::Corrupt(format!(
                "{chain} points to {prev_id}, which is not a checkpoint"
            ))
        })?;
        let trailers = Trailers {
            session: session.id.to_string(),
            seq: seq_trailer(&repo.notes_tip(&notes_ref(&session.id))?.message)
                .unwrap_or(prev.trailers.seq),
            status: status.unwrap_or(prev.trailers.status),
            step: step.clone().or_else(|| prev.trailers.step.clone()),
            // The caller's idea of where the worktree is: a moved one is recorded this way.
            worktree: session.worktree.to_string_lossy().into_owned(),
            clone: session.clone.clone(),
            number: match prev.trailers.number {
                0 => self::chain(super::Repo::of(repo), session)?.len() as u64 + 1,
                n => n + 1,
            },
            released: matches!(recorded, Recorded::Released),
            ..prev.trailers.clone()
        };
        let (tree, head, index, raw) = match recorded {
            Recorded::Same | Recorded::Released => {
                (prev.tree, prev.session_head(), prev.index, None)
            }
            Recorded::Head(head) => (prev.tree, head.or(prev.session_head()), prev.index, None),
            Recorded::State {
                tree,
                head,
                index,
                raw,
            } => (tree, head.or(prev.session_head()), index, raw),
        };
        let parents: Vec<ObjectId> = std::iter::once(prev_id).chain(head).collect();
        // The commit and its journal note are written with the snapshot, before the chain
        // moves; the note is published once it has.
        let writer = repo.holding_objects();
        let id = write_commit(&writer, tree, &parents, (index, raw), &label, &trailers)?;
        let event = NewEvent::new(Body::Checkpoint(CheckpointTaken {
            commit: id.to_string(),
            tree: tree.to_string(),
            label: label.clone(),
        }))
        .step(trailers.step.clone())
        .decision(Some(Decision::Auto));
        let note = journal::prepare(&writer, &session.id, std::slice::from_ref(&event), id)?;
        writer.write_held(held)?;
        match repo.cas_ref(
            &chain,
            Some(prev_id),
            id,
            &format!("bmad checkpoint: {label}"),
        )? {
            CasOutcome::Updated => {
                let mut stored = match journal::publish(repo, &session.id, note)? {
                    Some(stored) => stored,
                    // Another event came first: journaled after it.
                    None => journal::append_all(repo, &session.id, vec![event], Some(id))?,
                };
                let event = stored
                    .pop()
                    .ok_or_else(|| Error::InvalidInput("no event to journal".into()))?;
                let checkpoint = Checkpoint {
                    id,
                    tree,
                    parents: parents.into_iter().chain(index).chain(raw).collect(),
                    label,
                    trailers,
                    index,
                    raw,
                    time: crate::time::Timestamp::now().secs() as i64,
                };
                return Ok((checkpoint, event));
            }
            CasOutcome::Conflict => backoff(attempt),
        }
    }
    Err(repo.contention(&chain, MAX_ATTEMPTS).into())
}

/// The session's checkpoints, newest first, following the chain's first parents.
pub fn chain(repo: &super::Repo, session: &Session) -> Result<Vec<Checkpoint>> {
    let repo = &repo.git;
    let mut out = Vec::new();
    let mut next = repo.read_ref(&checkpoints_ref(&session.id))?;
    while let Some(id) = next {
        let Some(cp) = Checkpoint::read(repo, id)? else {
            break;
        };
        if cp.trailers.session != session.id.as_str() {
            break;
        }
        next = cp.previous();
        out.push(cp);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailers_round_trip() {
        let t = Trailers {
            session: "20261122-101500-abcdef".into(),
            seq: 42,
            status: Status::Gated,
            step: Some("plan".into()),
            name: "feature-x".into(),
            branch: "refs/heads/bmad/feature-x".into(),
            worktree: "/tmp/repo dir.feature-x".into(),
            base: "main".into(),
            number: 7,
            clone: None,
            released: false,
        };
        let message = format!("after plan\n\n{}", t.format());
        assert_eq!(Trailers::parse(&message), Some(t.clone()));
        let travelled = Trailers {
            clone: Some("20261124-010101-abcdef".into()),
            released: true,
            ..t.clone()
        };
        let message = format!("resumed\n\n{}", travelled.format());
        assert_eq!(Trailers::parse(&message), Some(travelled));
        let none = Trailers { step: None, ..t };
        let message = format!("x\n\n{}", none.format());
        assert_eq!(Trailers::parse(&message).unwrap().step, None);
        assert_eq!(Trailers::parse("an ordinary commit\n"), None);
    }

    #[test]
    fn labels_are_one_line() {
        assert_eq!(one_line("\n  after plan \nmore"), "after plan");
        assert_eq!(one_line(""), "checkpoint");
    }
}

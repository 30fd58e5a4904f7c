//! Rollback: restore a session to a checkpoint, and `undo` to reverse that.
//!
//! A checkpoint is the whole session state (files, index, HEAD); a rollback restores all of
//! it: the files, the index, and the session branch moved back when the commits it drops are
//! on no remote (pushed commits stay, and the outcome says so). `files_only` restores the
//! files alone.
//!
//! The state being left is always saved first as a safety checkpoint, so a rollback never
//! loses anything and can itself be undone. Before a file is touched, an intent ref names the
//! target and the safety checkpoint; a rollback killed half-way leaves it, and `rollback
//! --continue` finishes the job or `undo` returns to exactly the state before (see
//! [`interrupted`]). The files are restored by git's own two-way merge (`read-tree -m -u
//! <now> <target>`) through a temporary index: it only touches paths in one of the two
//! snapshots, and it refuses, before writing anything, if a file changed after the safety
//! snapshot was taken. Ignored files are in neither snapshot; and a file that became
//! visible because the agent edited `.gitignore`, or that the target has but today's rules
//! ignore, is left alone too. A worktree with a secret in a changed file cannot be saved (a
//! secret never enters the repository), so it is not rolled back either until the secret is
//! gone.

use serde::Serialize;

use super::checkpoint::{chain, extend_chain, Checkpoint, Recorded};
use super::error::{Error, Result};
use super::event::{Decision, Event, NewEvent};
use super::id::SessionId;
use super::journal::{self, Journal};
use super::journal_md_path;
use super::schema::{Body, BranchOutcome, RolledBack};
use super::state::SessionState;
use super::store::Session;
use super::trailers::trailer;
use crate::git::{CasOutcome, ObjectId, Repo, TreeChange, Vet};

use super::policy::Policy;
use super::raw_bytes;
use super::submodule_moves;

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
    /// Files left alone because ignore rules cover them.
    pub protected: Vec<String>,
    /// Nested repositories left alone (see [`RolledBack::nested`]).
    pub nested: Vec<String>,
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
    /// The journal event (its detail says what became of the index and the branch).
    pub event: Event,
    /// What it cleared on the way (a lock a killed git left), one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Work out a rollback without doing it (`--dry-run`).
pub fn plan_rollback(repo: &Repo, session: &Session, target: &Target) -> Result<RollbackPlan> {
    let (target, number) = resolve(repo, session, target)?;
    let worktree = session.open_worktree(repo)?;
    let wt = worktree.as_ref().unwrap_or(repo);
    let leaving = Leaving::take(wt, target.tree, None)?;
    let diff = wt.diff_trees(leaving.tree, target.tree)?;
    let (changes, protected) = changes_to(wt, diff, leaving.uncovered)?;
    let changes = visible_changes(session, changes, &protected);
    Ok(RollbackPlan {
        target,
        number,
        changes,
        protected,
        nested: leaving.nested,
    })
}

/// Restore the session to a checkpoint, after a safety checkpoint of the current state.
///
/// `policy` sees every changed file first (see [`crate::git::Repo::vet_changes`]); one it
/// refuses stops the rollback before anything is written.
pub fn rollback(
    repo: &Repo,
    session: &Session,
    target: &Target,
    files_only: bool,
    policy: &dyn Policy,
) -> Result<RollbackOutcome> {
    refuse_if_interrupted(repo, session)?;
    let (target, _) = resolve(repo, session, target)?;
    let worktree = session.open_worktree(repo)?;
    let wt = worktree.as_ref().unwrap_or(repo);
    let (intent, leaving) = begin(repo, wt, session, target, None, files_only, policy)?;
    finish(repo, wt, session, intent, Some(leaving))
}

/// Reverse the most recent rollback (running it again redoes it). A rollback that was
/// interrupted is finished first, then reversed: the result is exactly the state before it.
pub fn undo(repo: &Repo, session: &Session, policy: &dyn Policy) -> Result<RollbackOutcome> {
    let worktree = session.open_worktree(repo)?;
    let wt = worktree.as_ref().unwrap_or(repo);
    if let Some(intent) = interrupted(repo, &session.id)? {
        finish(repo, wt, session, intent, None)?;
    }
    let journal = journal::read(super::Repo::of(repo), &session.id)?;
    let state = SessionState::replay(journal.events());
    let last = state.rollbacks.last().ok_or_else(|| Error::NothingToUndo {
        session: session.id.to_string(),
    })?;
    let safety = read_checkpoint(repo, &last.safety, || {
        format!("rollback #{} names safety checkpoint", last.seq)
    })?;
    let (intent, leaving) = begin(
        repo,
        wt,
        session,
        safety,
        Some(last.seq),
        last.files_only,
        policy,
    )?;
    finish(repo, wt, session, intent, Some(leaving))
}

/// Finish a rollback that was interrupted (`rollback --continue`).
pub fn continue_rollback(repo: &Repo, session: &Session) -> Result<RollbackOutcome> {
    let intent = interrupted(repo, &session.id)?.ok_or_else(|| Error::NothingToContinue {
        session: session.id.to_string(),
    })?;
    let worktree = session.open_worktree(repo)?;
    let wt = worktree.as_ref().unwrap_or(repo);
    finish(repo, wt, session, intent, None)
}

/// A rollback that was started and not finished: the intent ref `begin` left.
#[derive(Clone, Debug)]
pub struct Intent {
    /// The intent commit (parents: safety checkpoint, target checkpoint).
    id: ObjectId,
    /// The checkpoint being restored.
    pub target: Checkpoint,
    /// The state before, saved.
    pub safety: Checkpoint,
    /// The rollback an undo reverses.
    pub undo_of: Option<u64>,
    /// Files only.
    pub files_only: bool,
}

/// The ref a rollback holds while it changes files.
pub(crate) fn intent_ref(id: &SessionId) -> String {
    super::session_ref(id, "rollback-intent")
}

/// The rollback of a session that was interrupted, if one was.
pub fn interrupted(repo: &Repo, session: &SessionId) -> Result<Option<Intent>> {
    let Some(id) = repo.read_ref(&intent_ref(session))? else {
        return Ok(None);
    };
    let info = repo.commit_info(id)?;
    let corrupt = || {
        crate::git::Error::Corrupt(format!(
            "{} points to {id}, which is not a rollback intent",
            intent_ref(session)
        ))
    };
    let [safety, target] = info.parents.as_slice() else {
        return Err(corrupt().into());
    };
    let read = |id: &ObjectId| -> Result<Checkpoint> {
        Ok(Checkpoint::read(repo, *id)?.ok_or_else(corrupt)?)
    };
    Ok(Some(Intent {
        id,
        target: read(target)?,
        safety: read(safety)?,
        undo_of: trailer(&info.message, "Bmad-Undo-Of").and_then(|v| v.parse().ok()),
        files_only: trailer(&info.message, "Bmad-Files-Only") == Some("yes"),
    }))
}

fn refuse_if_interrupted(repo: &Repo, session: &Session) -> Result<()> {
    match interrupted(repo, &session.id)? {
        Some(intent) => Err(Error::RollbackInterrupted {
            session: session.id.to_string(),
            target: intent.target.id.to_hex_with_len(10).to_string(),
        }),
        None => Ok(()),
    }
}

/// Save the state being left as a safety checkpoint, then write the intent ref: from here on
/// a crash is recoverable. The state left, staged, goes on to [`finish`].
fn begin(
    repo: &Repo,
    wt: &Repo,
    session: &Session,
    target: Checkpoint,
    undo_of: Option<u64>,
    files_only: bool,
    policy: &dyn Policy,
) -> Result<(Intent, Leaving)> {
    let committed = super::policy::Committed::at_head(wt);
    let mut vet = |path: &str, bytes: &[u8]| policy.admit(path, bytes, &|| committed.holds(bytes));
    let mut leaving = Leaving::take(wt, target.tree, Some(&mut vet))?;
    let changes = wt.diff_trees(leaving.tree, target.tree)?;
    submodule_moves::refuse_if_held(wt, &submodule_moves::moves(&changes))?;
    let short = target.id.to_hex_with_len(10).to_string();
    let label = match undo_of {
        Some(seq) => format!("before undoing rollback #{seq}"),
        None => format!("before rollback to {short}"),
    };
    let (mut state, staged_secrets) = Recorded::of(wt, leaving.tree, None, policy)?;
    if !staged_secrets.is_empty() {
        return Err(Error::SecretInWorktree {
            paths: staged_secrets,
        });
    }
    // What the files the rollback rewrites held on disk, where their tree does not say.
    if let Recorded::State { raw, .. } = &mut state {
        *raw = raw_bytes::keep(wt, leaving.tree, &changes, &mut vet)?;
    }
    leaving.to_target = Some(changes);
    let (safety, _) = extend_chain(repo, session, state, &label, None, None)?;
    let message = format!(
        "rollback intent: {short}\n\nBmad-Files-Only: {}\n{}",
        if files_only { "yes" } else { "no" },
        undo_of
            .map(|seq| format!("Bmad-Undo-Of: {seq}\n"))
            .unwrap_or_default()
    );
    let id = repo.write_commit(target.tree, &[safety.id, target.id], &message)?;
    let name = intent_ref(&session.id);
    // A lock a killed rollback left on the intent ref clears once stale: wait that long.
    let started = std::time::Instant::now();
    let mut attempt = 0;
    while repo.cas_ref(&name, None, id, "bmad rollback: intent")? != CasOutcome::Updated {
        if repo.read_ref(&name)?.is_some() {
            return Err(Error::RollbackInterrupted {
                session: session.id.to_string(),
                target: short,
            });
        }
        if started.elapsed() > crate::git::STALE_LOCK_AGE * 2 {
            return Err(repo.contention(&name, attempt).into());
        }
        journal::backoff(attempt);
        attempt += 1;
    }
    let intent = Intent {
        id,
        target,
        safety,
        undo_of,
        files_only,
    };
    Ok((intent, leaving))
}

/// Restore files, then index and branch; journal it; drop the intent. Each part brings the
/// worktree to the target from wherever it is, so running it again after a crash is exact:
/// `leaving` is the state `begin` staged, or `None` to stage the worktree as a crash left it.
fn finish(
    repo: &Repo,
    wt: &Repo,
    session: &Session,
    intent: Intent,
    leaving: Option<Leaving>,
) -> Result<RollbackOutcome> {
    // A killed rollback's git left the index locked: with no git running here, clear it.
    let mut warnings =
        super::git_locks::clear_abandoned_locks(repo, &[wt.git_dir().join("index.lock")]);
    super::git_locks::clear_abandoned_scratch(repo, wt);
    let Intent {
        id: intent_id,
        target,
        safety,
        undo_of,
        files_only,
    } = intent;
    let Leaving {
        scratch,
        tree: from,
        uncovered,
        nested,
        to_target,
    } = match leaving {
        Some(leaving) => leaving,
        None => Leaving::take(wt, target.tree, None)?,
    };
    let diff = match to_target {
        Some(diff) => diff,
        None => wt.diff_trees(from, target.tree)?,
    };
    let (all_changes, protected) = changes_to(wt, diff, uncovered)?;
    // Out of both sides of the merge, a path is out of its reach.
    let to = wt.tree_without(target.tree, &protected)?;
    if let Err(e) = wt.read_tree_update(scratch.path(), from, to) {
        // git refused before writing anything: the rollback did not happen.
        let _ = repo.delete_ref(&intent_ref(&session.id), intent_id);
        return Err(Error::WorktreeChanged {
            safety: safety.id.to_hex_with_len(10).to_string(),
            detail: match e {
                crate::git::Error::Command { stderr, .. } => stderr.trim().replace('\n', "; "),
                other => other.to_string(),
            },
        });
    }
    drop(scratch);
    if let Some(raw) = target.raw {
        raw_bytes::give_back(wt, raw, to)?;
    }
    warnings.extend(submodule_moves::apply(
        wt,
        &submodule_moves::moves(&all_changes),
    ));
    let branch = if files_only {
        None
    } else {
        let branch = move_branch(wt, session, &target)?;
        wt.restore_index(target.saved_index(repo)?)?;
        Some(branch)
    };

    let changes = visible_changes(session, all_changes, &protected);
    let journal = journal::read(super::Repo::of(repo), &session.id)?;
    let detail = RolledBack {
        target: target.id.to_string(),
        target_seq: checkpoint_seq(&journal, &target),
        safety: safety.id.to_string(),
        files: changes.len(),
        undo_of,
        files_only,
        branch,
        protected,
        nested,
    };
    let event = journal::append(
        repo,
        &session.id,
        NewEvent::new(Body::Rollback(detail)).decision(Some(Decision::Human)),
    )?;
    // A killed rollback's lock on the intent ref clears once stale: wait that long, or the
    // rollback would report done and doctor still call it interrupted.
    let name = intent_ref(&session.id);
    if repo.delete_ref_waiting(&name, intent_id)? != CasOutcome::Updated
        && repo.read_ref(&name)? == Some(intent_id)
    {
        return Err(repo.contention(&name, 1).into());
    }
    Ok(RollbackOutcome {
        target,
        safety,
        changes,
        event,
        warnings,
    })
}

/// Bring a worktree's files and index to `target` (a restored session's newest checkpoint),
/// from whatever state it is in, leaving ignored files alone as a rollback does; the paths
/// left alone. No safety checkpoint, no journal: the caller records what it did.
pub(crate) fn restore_state(repo: &Repo, wt: &Repo, target: &Checkpoint) -> Result<Vec<String>> {
    let leaving = Leaving::take(wt, target.tree, None)?;
    let diff = wt.diff_trees(leaving.tree, target.tree)?;
    let (_, protected) = changes_to(wt, diff, leaving.uncovered)?;
    let to = wt.tree_without(target.tree, &protected)?;
    wt.read_tree_update(leaving.scratch.path(), leaving.tree, to)?;
    wt.restore_index(target.saved_index(repo)?)?;
    Ok(protected)
}

/// Move the session branch to the target's session HEAD, unless that drops commits a remote
/// has (then it stays, and the outcome says so) or HEAD is elsewhere.
fn move_branch(wt: &Repo, session: &Session, target: &Checkpoint) -> Result<BranchOutcome> {
    let (Some(to), Some(from)) = (target.session_head(), wt.head_id()?) else {
        return Ok(BranchOutcome::LeftDetached);
    };
    if wt.head_branch()?.as_deref() != Some(session.branch.as_str()) {
        return Ok(BranchOutcome::LeftDetached);
    }
    let moved = BranchOutcome::Moved {
        branch: session.branch.clone(),
        from: from.to_string(),
        to: to.to_string(),
        dropped: 0,
    };
    if from == to {
        return Ok(moved);
    }
    let (dropped, pushed) = wt.commits_after(to, from)?;
    if pushed > 0 {
        return Ok(BranchOutcome::LeftPushed {
            branch: session.branch.clone(),
            pushed,
        });
    }
    let message = format!("bmad rollback to {}", target.id.to_hex_with_len(10));
    match wt.cas_ref(&session.branch, Some(from), to, &message)? {
        CasOutcome::Updated => Ok(BranchOutcome::Moved {
            branch: session.branch.clone(),
            from: from.to_string(),
            to: to.to_string(),
            dropped,
        }),
        CasOutcome::Conflict => Err(Error::WorktreeChanged {
            safety: target.id.to_hex_with_len(10).to_string(),
            detail: format!("{} moved while the rollback ran", session.short_branch()),
        }),
    }
}

/// The `untracked` files the target's own ignore rules exclude: visible today only because a
/// `.gitignore` changed since (a `.env`, build output). A rollback leaves them alone.
fn uncovered_by_target(wt: &Repo, target: ObjectId, untracked: &[String]) -> Result<Vec<String>> {
    Ok(wt.ignored_under(target, untracked)?)
}

/// The `changes` from the state left to the target, and the paths a rollback leaves alone:
/// `uncovered` (see [`uncovered_by_target`]), and the ones the target has that exist on disk
/// outside today's snapshot (ignored today).
fn changes_to(
    wt: &Repo,
    changes: Vec<TreeChange>,
    mut uncovered: Vec<String>,
) -> Result<(Vec<TreeChange>, Vec<String>)> {
    for change in &changes {
        // What is found through a symlinked directory is not there, as git sees it.
        let on_disk = || {
            !wt.beyond_symlink(&change.path)
                && std::fs::symlink_metadata(wt.workdir().join(&change.path))
                    .is_ok_and(|m| !m.is_dir())
        };
        if change.status == 'A' && on_disk() {
            uncovered.push(change.path.clone());
        }
    }
    uncovered.sort();
    uncovered.dedup();
    Ok((changes, uncovered))
}

/// The state a rollback leaves, staged in a private copy of the index (see
/// [`crate::git::Repo::copy_index`]), less what the target's ignore rules leave alone.
struct Leaving {
    scratch: tempfile::NamedTempFile,
    /// The tree of that state.
    tree: ObjectId,
    /// See [`uncovered_by_target`].
    uncovered: Vec<String>,
    /// Nested repositories: `add -A` stages each as a gitlink, which no checkpoint records
    /// and no rollback can restore, so they are left out of the state and left alone.
    nested: Vec<String>,
    /// The changes from it to the target, once `begin` worked them out.
    to_target: Option<Vec<TreeChange>>,
}

impl Leaving {
    /// Stage the worktree as `add -A` sees it. `vet` sees every changed file first (one it
    /// refuses stops here, before any object is written); files the target's rules ignore
    /// are neither vetted nor staged: a `.env` revealed by a deleted `.gitignore` must not
    /// stop the rollback or enter a commit.
    fn take(wt: &Repo, target: ObjectId, vet: Option<Vet<'_>>) -> Result<Leaving> {
        let untracked = wt.untracked_files()?;
        // git lists a directory holding a repository of its own as `dir/`.
        let nested: Vec<String> = untracked
            .iter()
            .filter_map(|path| path.strip_suffix('/'))
            .map(str::to_owned)
            .collect();
        let uncovered = uncovered_by_target(wt, target, &untracked)?;
        if let Some(vet) = vet {
            let refused = wt.vet_changes(&mut |path, bytes| {
                uncovered.iter().any(|u| u == path) || vet(path, bytes)
            })?;
            if !refused.is_empty() {
                return Err(Error::SecretInWorktree { paths: refused });
            }
        }
        let scratch = wt.copy_index()?;
        let mut tree = wt.write_tree_of_worktree(scratch.path())?;
        if !uncovered.is_empty() || !nested.is_empty() {
            wt.forget_paths(scratch.path(), &[&uncovered[..], &nested[..]].concat())?;
            tree = wt.write_tree_of_index(scratch.path())?;
        }
        Ok(Leaving {
            scratch,
            tree,
            uncovered,
            nested,
            to_target: None,
        })
    }
}

fn read_checkpoint(repo: &Repo, hex: &str, what: impl Fn() -> String) -> Result<Checkpoint> {
    ObjectId::from_hex(hex.as_bytes())
        .ok()
        .and_then(|id| Checkpoint::read(repo, id).transpose())
        .transpose()?
        .ok_or_else(|| {
            crate::git::Error::Corrupt(format!("{} {hex:?}, which cannot be read", what())).into()
        })
}

/// The changes a rollback makes that a user cares about: not the protected paths it leaves
/// alone, nor the session's own journal.md (rendered at the next commit).
fn visible_changes(
    session: &Session,
    mut changes: Vec<TreeChange>,
    protected: &[String],
) -> Vec<TreeChange> {
    let journal_md = journal_md_path(&session.id);
    changes.retain(|c| c.path != journal_md && protected.binary_search(&c.path).is_err());
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
    let mut checkpoints = chain(super::Repo::of(repo), session)?;
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

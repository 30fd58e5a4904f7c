//! A session's life: `start`, `finish`, `remove`, and `prune` for worktrees deleted by hand.

use std::path::PathBuf;

use serde::Serialize;

use super::checkpoint::{self, extend_chain, write_commit, Checkpoint, Recorded, Taken, Trailers};
use super::error::{Error, Result};
use super::event::{Decision, NewEvent};
use super::id::SessionId;
use super::init::ensure_notes_config;
use super::journal;
use super::policy::Policy;
use super::removed::{self, RemovedSession};
use super::schema::{self, Body, CheckpointTaken, NoDetail};
use super::state::Status;
use super::store::{self, Session};
use super::worktree;
use super::{checkpoints_ref, notes_ref};
use crate::git::{CasOutcome, ObjectId, Repo};
use crate::time::Timestamp;

/// How many fresh session ids `start` tries to claim before it blames a lock.
const CLAIM_ATTEMPTS: u32 = 20;

/// What `start` needs.
#[derive(Clone, Debug, Default)]
pub struct StartOptions {
    /// The session name: becomes the branch `<prefix><name>` and the directory `<repo>.<name>`.
    pub name: String,
    /// What to start from (default: the current HEAD).
    pub base: Option<String>,
    /// The playbook `git bmad run` runs in this session when named no other.
    pub playbook: Option<String>,
}

/// A session that was just started.
#[derive(Clone, Debug, Serialize)]
pub struct Started {
    /// The session.
    pub session: Session,
    /// Its first checkpoint.
    pub checkpoint: Checkpoint,
    /// What the policy could not do to guard the new worktree.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Start a session: branch, linked worktree, first checkpoint, `session_started` event.
///
/// A session starts from a commit. Without `--base`, uncommitted changes to tracked files
/// refuse the start, so no one believes they went along; untracked files never do (they stay
/// where they are, like any other file outside the commit). `policy` guards the new worktree
/// before anything runs in it.
pub fn start(repo: &Repo, options: &StartOptions, policy: &dyn Policy) -> Result<Started> {
    let name = options.name.as_str();
    validate_name(name)?;
    let main = repo.main_workdir()?;
    let config = super::load_config(repo)?;
    if options.base.is_none() {
        let dirt = repo.tracked_dirt(5)?;
        if !dirt.is_clean() {
            return Err(Error::DirtyTree {
                count: dirt.count,
                sample: dirt.sample,
            });
        }
    }
    let (base_commit, base_label) = resolve_base(repo, options.base.as_deref())?;
    let branch = config.branch_for(name);
    if repo.read_ref(&branch)?.is_some() {
        return Err(Error::BranchExists {
            branch: branch.trim_start_matches("refs/heads/").to_owned(),
        });
    }
    if let Some(live) = store::list(repo)?
        .into_iter()
        .find(|s| s.name == name && s.status != Status::Pruned && s.worktree_exists)
    {
        return Err(Error::NameTaken {
            name: name.to_owned(),
            id: live.id.to_string(),
        });
    }
    let worktree = config.worktree_for(&main, name);
    if worktree.exists() {
        return Err(Error::PathExists { path: worktree });
    }
    let worktree_text = worktree.to_string_lossy().into_owned();
    if worktree_text.contains('\n') {
        return Err(Error::InvalidInput(format!(
            "the worktree path {worktree_text:?} contains a newline; set sessions.worktree_root to a plainer directory"
        )));
    }

    // What a killed start left would fail this one: the branch's lock, `packed-refs.lock`.
    let mut warnings = super::git_locks::clear_abandoned_locks(
        repo,
        &[
            repo.lock_path(&branch),
            repo.common_path("packed-refs.lock"),
        ],
    );
    // Claim an id: its checkpoint ref must not exist yet.
    let tree = repo.tree_of(base_commit)?;
    let label = format!("session {name} started from {base_label}");
    let mut claimed = None;
    for attempt in 0..CLAIM_ATTEMPTS {
        let id = SessionId::generate(Timestamp::now());
        let trailers = Trailers {
            session: id.to_string(),
            seq: 0,
            status: Status::Running,
            step: None,
            name: name.to_owned(),
            branch: branch.clone(),
            worktree: worktree_text.clone(),
            base: base_label.clone(),
            number: 1,
            clone: None,
            released: false,
        };
        let commit = write_commit(repo, tree, &[base_commit], (None, None), &label, &trailers)?;
        match repo.cas_ref(&checkpoints_ref(&id), None, commit, "bmad session started")? {
            CasOutcome::Updated => {
                claimed = Some((id, commit));
                break;
            }
            CasOutcome::Conflict => journal::backoff(attempt),
        }
    }
    // Ids are random: failing to claim one means something blocks every ref write.
    let (id, first) = claimed.ok_or_else(|| {
        repo.contention("refs/bmad/sessions/<new id>/checkpoints", CLAIM_ATTEMPTS)
    })?;

    let short_branch = branch.trim_start_matches("refs/heads/");
    if let Err(e) = repo.add_worktree(&worktree, short_branch, base_commit) {
        // Leave nothing half-made behind: the id is released again.
        let _ = repo.delete_ref(&checkpoints_ref(&id), first);
        return Err(e.into());
    }
    ensure_notes_config(repo)?;
    let worktree = std::fs::canonicalize(&worktree).unwrap_or(worktree);
    super::marker::mark_session_worktree(repo, &worktree, &id, &branch)?;
    warnings.extend(policy.prepare_worktree(repo, &worktree));
    journal::append(
        repo,
        &id,
        NewEvent::new(Body::SessionStarted(schema::SessionStarted {
            name: name.to_owned(),
            branch: branch.clone(),
            base: base_label.clone(),
            base_commit: base_commit.to_string(),
            worktree: worktree.to_string_lossy().into_owned(),
            playbook: options.playbook.clone(),
            args: Vec::new(),
            runner: None,
        }))
        .decision(Some(Decision::Human)),
    )?;
    journal::append(
        repo,
        &id,
        NewEvent::new(Body::Checkpoint(CheckpointTaken {
            commit: first.to_string(),
            tree: tree.to_string(),
            label: label.to_string(),
        }))
        .decision(Some(Decision::Auto)),
    )?;
    // Best effort: without a watcher the first checkpoints scan the whole worktree, and
    // without the primed cache the first one reads every file git just checked out.
    if let Ok(wt) = repo.open_worktree(&worktree) {
        wt.start_watching();
        if let Err(e) = wt.prime_snapshot_cache() {
            tracing::debug!(
                "could not prime the snapshot cache of {}: {e}",
                worktree.display()
            );
        }
    }
    let session = store::locate(repo, Some(id.as_str()))?;
    let checkpoint = Checkpoint::read(repo, first)?.ok_or_else(|| {
        crate::git::Error::Corrupt(format!(
            "the first checkpoint {first} of {id} cannot be read back"
        ))
    })?;
    Ok(Started {
        session,
        checkpoint,
        warnings,
    })
}

/// The longest session name.
const MAX_NAME: usize = 160;

/// Session names become branch and directory names: keep them plain.
pub(crate) fn validate_name(name: &str) -> Result<()> {
    let bad = |reason| Error::InvalidName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(bad("it is empty"));
    }
    // A BMAD story key names a session as it is, and real ones run past 64 characters; the
    // worktree's folder (`<repository>.<name>`) must still fit a file name's 255 bytes.
    if name.len() > MAX_NAME {
        return Err(bad("it is longer than 160 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(bad("use letters, digits, '-', '_' and '.' only"));
    }
    if name.starts_with(['.', '-'])
        || name.ends_with('.')
        || name.contains("..")
        || name.ends_with(".lock")
    {
        return Err(bad(
            "it cannot start with '.' or '-', end with '.' or '.lock', or contain '..'",
        ));
    }
    Ok(())
}

fn resolve_base(repo: &Repo, base: Option<&str>) -> Result<(ObjectId, String)> {
    match base {
        Some(rev) => {
            let id = repo
                .resolve_commit(rev)?
                .ok_or_else(|| Error::UnknownRevision {
                    rev: rev.to_owned(),
                })?;
            Ok((id, rev.to_owned()))
        }
        None => {
            let id = repo.head_id()?.ok_or(Error::NoCommits)?;
            let label = repo
                .head_branch()?
                .map(|b| b.trim_start_matches("refs/heads/").to_owned())
                .unwrap_or_else(|| id.to_hex_with_len(12).to_string());
            Ok((id, label))
        }
    }
}

/// Finish a session: a final checkpoint marked completed, and `session_finished`.
///
/// The worktree and branch stay, for review and pushing; `remove` ends them. `policy` sees
/// every changed file before the last checkpoint takes it.
pub fn finish(repo: &Repo, session: &Session, policy: &dyn Policy) -> Result<Taken> {
    let taken = checkpoint::checkpoint(
        repo,
        session,
        "session finished",
        Some(Status::Completed),
        None,
        policy,
    )?;
    journal::record(
        repo,
        session,
        NewEvent::new(Body::SessionFinished(NoDetail)).decision(Some(Decision::Human)),
    )?;
    Ok(taken)
}

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
            left_out =
                checkpoint::checkpoint(repo, session, "session removed", None, None, policy)?
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
    let heads: Vec<ObjectId> = checkpoint::chain(repo, session)?
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
    let gone: Vec<Session> = store::list(repo)?
        .into_iter()
        .filter(|s| !s.worktree_exists && !s.elsewhere && s.status != Status::Pruned)
        .collect();
    let worktrees = repo.worktrees()?;
    let mut outcomes = Vec::new();
    let mut deleted = Vec::new();
    for session in gone {
        let damage = super::worktree::damage_among(
            &worktrees,
            repo,
            session.id.as_str(),
            &session.worktree,
            &session.branch,
        )?;
        match damage.map(|d| d.damage) {
            Some(super::worktree::Damage::Moved { to }) => {
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
    let damage = super::worktree::damage_among(
        &repo.worktrees()?,
        repo,
        session.id.as_str(),
        &session.worktree,
        &session.branch,
    )?;
    if let Some(super::worktree::Damage::Moved { to }) = damage.map(|d| d.damage) {
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

#[cfg(test)]
mod tests {
    use super::validate_name;

    #[test]
    fn names() {
        let story =
            "1-2-a-user-can-reset-their-password-through-the-emailed-link-before-it-expires";
        assert!(story.len() > 64);
        for ok in ["feature-x", "fix_1", "v1.2", story] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
        assert!(validate_name(&"a".repeat(161)).is_err());
        for bad in ["", "a b", "a/b", ".x", "-x", "x.", "a..b", "x.lock", "é"] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }
}

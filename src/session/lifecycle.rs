//! A session's life begins and ends: `start` and `finish` (its removal is [`super::remove`]'s,
//! worktrees deleted by hand [`super::prune`]'s).

use serde::Serialize;

use super::checkpoint::{self, write_commit, Checkpoint, Taken, Trailers};
use super::checkpoints_ref;
use super::error::{Error, Result};
use super::event::{Decision, NewEvent};
use super::id::SessionId;
use super::init::ensure_notes_config;
use super::journal;
use super::policy::Policy;
use super::schema::{self, Body, CheckpointTaken, NoDetail};
use super::state::Status;
use super::store::{self, Session};
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
pub fn start(repo: &super::Repo, options: &StartOptions, policy: &dyn Policy) -> Result<Started> {
    let repo = &repo.git;
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
    if let Some(live) = store::list(super::Repo::of(repo))?
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
    let session = store::locate(super::Repo::of(repo), Some(id.as_str()))?;
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
        super::Repo::of(repo),
        session,
        "session finished",
        Some(Status::Completed),
        None,
        policy,
    )?;
    journal::record(
        super::Repo::of(repo),
        session,
        NewEvent::new(Body::SessionFinished(NoDetail)).decision(Some(Decision::Human)),
    )?;
    Ok(taken)
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

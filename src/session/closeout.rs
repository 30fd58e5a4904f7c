//! What a session's work becomes when it is handed on: a commit on its branch, other
//! branches merged in (a story stacked on two), the branch pushed for a pull request. Never
//! forced, always through the repository's hooks.

use super::error::Result;
use super::store::Session;
pub use crate::git::ChangedFile;
use crate::git::{DiffStat, ObjectId, Repo};

/// The live session (worktree present) of this name, if any.
pub fn find_by_name(repo: &super::Repo, name: &str) -> Result<Option<Session>> {
    let repo = &repo.git;
    Ok(super::store::list(super::Repo::of(repo))?
        .into_iter()
        .find(|s| s.name == name && s.worktree_exists))
}

/// The live session of this name that lives in this clone, if any: one resumed in another
/// clone is that clone's to run and hand on.
pub fn find_living_here(repo: &super::Repo, name: &str) -> Result<Option<Session>> {
    let repo = &repo.git;
    Ok(find_by_name(super::Repo::of(repo), name)?.filter(|s| !s.elsewhere))
}

/// Make branch `short` here from `remote`'s (as the last fetch saw it) when there is none
/// here: a runner's fresh clone stacks a story on the branch another runner pushed. `false`
/// when the branch was here already, or the remote has none.
pub fn branch_from_remote(repo: &super::Repo, remote: &str, short: &str) -> Result<bool> {
    let repo = &repo.git;
    let local = format!("refs/heads/{short}");
    if repo.read_ref(&local)?.is_some() {
        return Ok(false);
    }
    let Some(theirs) = repo.read_ref(&format!("refs/remotes/{remote}/{short}"))? else {
        return Ok(false);
    };
    let message = format!("git-bmad: {short} from {remote}");
    Ok(repo.cas_ref(&local, None, theirs, &message)? == crate::git::CasOutcome::Updated)
}

/// The commit the session's branch points at.
pub fn branch_head(repo: &super::Repo, session: &Session) -> Result<Option<ObjectId>> {
    let repo = &repo.git;
    Ok(repo.read_ref(&session.branch)?)
}

/// Commit everything in the session's worktree onto its branch; `false` if nothing changed.
pub fn commit_work(repo: &super::Repo, session: &Session, message: &str) -> Result<bool> {
    let repo = &repo.git;
    let worktree = session.open_worktree(repo)?;
    let wt = worktree.as_ref().unwrap_or(repo);
    let committed = wt.commit_all(message)?;
    if committed {
        record_head(repo, session, wt, message)?;
    }
    Ok(committed)
}

/// Extend the session's chain with the state a commit or merge in its worktree `wt` left:
/// its files and index are the new HEAD's (ignored files aside), so wherever the session is
/// taken up next (another clone, a runner) it is made of what it is here.
fn record_head(repo: &Repo, session: &Session, wt: &Repo, label: &str) -> Result<()> {
    let Some(head) = wt.head_id()? else {
        return Ok(());
    };
    let recorded = super::checkpoint::Recorded::State {
        tree: repo.tree_of(head)?,
        head: Some(head),
        index: None,
        raw: None,
    };
    super::checkpoint::extend_chain(repo, session, recorded, label, None, None)?;
    Ok(())
}

/// Merge `short_branch` into the session's branch, in its worktree; `resolve` merges the
/// conflicted files it knows (see [`crate::git::Repo::merge_branch`]).
pub fn merge_into(
    repo: &super::Repo,
    session: &Session,
    short_branch: &str,
    resolve: &dyn Fn(&str, &str, &str, &str) -> Option<String>,
) -> Result<()> {
    let repo = &repo.git;
    let worktree = session.open_worktree(repo)?;
    let wt = worktree.as_ref().unwrap_or(repo);
    let message = format!("Merge {short_branch} into {}", session.short_branch());
    let before = wt.head_id()?;
    wt.merge_branch(short_branch, &message, resolve)?;
    if wt.head_id()? != before {
        record_head(repo, session, wt, &message)?;
    }
    Ok(())
}

/// Push the session's branch to `remote`; `false` when no such remote is configured.
pub fn publish(repo: &super::Repo, session: &Session, remote: &str) -> Result<bool> {
    let repo = &repo.git;
    if !repo.has_remote(remote)? {
        return Ok(false);
    }
    let worktree = session.open_worktree(repo)?;
    worktree
        .as_ref()
        .unwrap_or(repo)
        .push_branch(remote, session.short_branch())?;
    Ok(true)
}

/// The files and lines the session's branch changed since `base_commit`; `None` when the
/// commit or the branch is gone.
pub fn changes_since(
    repo: &super::Repo,
    session: &Session,
    base_commit: &str,
) -> Result<Option<Vec<ChangedFile>>> {
    let repo = &repo.git;
    let Some((base, head)) = since(repo, session, base_commit)? else {
        return Ok(None);
    };
    Ok(Some(repo.changed_lines(base, head)?))
}

/// `base_commit` and the session's branch head, when both still exist.
fn since(
    repo: &Repo,
    session: &Session,
    base_commit: &str,
) -> Result<Option<(ObjectId, ObjectId)>> {
    let Ok(base) = ObjectId::from_hex(base_commit.as_bytes()) else {
        return Ok(None);
    };
    let Some(head) = branch_head(super::Repo::of(repo), session)? else {
        return Ok(None);
    };
    Ok(repo.has_object(base).then_some((base, head)))
}

/// What a session's branch holds beyond the commit it started from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorkDone {
    /// Commits on the branch since the base.
    pub commits: usize,
    /// Of those, how many a remote-tracking ref already has.
    pub pushed: usize,
    /// The diff from the base to the branch.
    #[serde(flatten)]
    pub diff: DiffStat,
}

/// The work on the session's branch since `base_commit` (the commit `start` recorded);
/// `None` when either is gone (a removed branch, a base pruned away).
pub fn work_done(
    repo: &super::Repo,
    session: &Session,
    base_commit: &str,
) -> Result<Option<WorkDone>> {
    let repo = &repo.git;
    let Some((base, head)) = since(repo, session, base_commit)? else {
        return Ok(None);
    };
    let (commits, pushed) = repo.commits_after(base, head)?;
    let diff = repo.diff_stat(base, head)?;
    Ok(Some(WorkDone {
        commits,
        pushed,
        diff,
    }))
}

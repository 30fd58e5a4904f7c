//! Handing a session that lives here to another clone on purpose (a story's job on a
//! runner): its worktree is checkpointed first, so what a person changed there goes with
//! it, then it is pushed released, and the worktree stays, marked as left at that
//! checkpoint. When the session comes back, `resume` brings that worktree up to date in
//! place, but only while it holds exactly what was handed off: nothing in it can be lost
//! then (ignored files, which no checkpoint keeps, stay as they are). A worktree left
//! without a hand-off is never overwritten.

use std::path::Path;

use super::checkpoint::{checkpoint, Checkpoint};
use super::error::{Error, Result};
use super::policy::Policy;
use super::record::SESSION_FILES;
use super::store::Session;
use super::sync::{push, Pushed};
use crate::git::{ObjectId, Repo};

/// The file in a handed-off worktree's private git dir naming the checkpoint it was left
/// at. It is this clone's own record, never pushed: nothing a remote says can make a
/// worktree here be overwritten.
const HANDED_OFF_MARKER: &str = "bmad-handed-off";

/// What a hand-off did.
#[derive(Clone, Debug)]
pub struct HandedOff {
    /// The push.
    pub pushed: Pushed,
    /// Changed files the policy kept out of the hand-off's checkpoint: they stay here only.
    pub kept_out: Vec<String>,
}

/// Hand `session`, which lives here, to `remote` for another clone to take up: its worktree
/// checkpointed, the session pushed released, the worktree marked as left at that
/// checkpoint (see the module's documentation).
pub fn hand_off(
    repo: &super::Repo,
    session: &Session,
    remote: &str,
    policy: &dyn Policy,
) -> Result<HandedOff> {
    let repo = &repo.git;
    session.ensure_lives_here("only the clone it lives in hands it off")?;
    let mut left_at = None;
    let mut kept_out = Vec::new();
    let mut session = session.clone();
    if session.worktree_exists {
        let label = format!("handed off to {remote}");
        let taken = checkpoint(super::Repo::of(repo), &session, &label, None, None, policy)?;
        kept_out = taken.kept_out;
        left_at = Some(taken.checkpoint.id);
        session = super::store::get(repo, &session.id)?.unwrap_or(session);
    }
    // Marked before it leaves: a hand-off killed after its push still has its worktree
    // brought up to date on the return. A mark whose session never left changes nothing:
    // only a session coming back from elsewhere is brought into it.
    if let Some(at) = left_at {
        let wt = repo.open_worktree(&session.worktree)?;
        let path = wt.git_dir().join(HANDED_OFF_MARKER);
        crate::fs::write_atomically(&path, format!("{at}\n").as_bytes(), None)
            .map_err(|e| Error::io("could not write", path, e))?;
    }
    let pushed = push(super::Repo::of(repo), &session, remote, true)?;
    Ok(HandedOff { pushed, kept_out })
}

/// Whether the worktree at `path`, this clone's worktree of session `id`, may be brought to
/// `back` (the session's newest checkpoint, come back) in place: it was handed off, and
/// holds exactly the state it was handed off at, or already `back`'s (a resume interrupted
/// after it brought it there).
pub(super) fn may_update_in_place(
    repo: &Repo,
    path: &Path,
    id: &super::SessionId,
    back: &Checkpoint,
) -> Result<bool> {
    if !super::worktree::marks_session(repo, path, id) {
        return Ok(false);
    }
    let wt = repo.open_worktree(path)?;
    let Some(left) = left_at(&wt)? else {
        return Ok(false);
    };
    let Some(left) = Checkpoint::read(repo, left)? else {
        return Ok(false);
    };
    let now = wt.snapshot_tree_vetted(None, None)?.tree;
    let head = wt.head_id()?;
    let index = wt.save_index()?;
    for state in [&left, back] {
        let same_files = repo
            .diff_trees(state.tree, now)?
            .iter()
            .all(|c| c.path.starts_with(SESSION_FILES));
        if same_files && head == state.session_head() && index == state.saved_index(repo)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Forget that the worktree `wt` was handed off: the session is back in it.
pub(super) fn forget(wt: &Repo) -> Result<()> {
    let path = wt.git_dir().join(HANDED_OFF_MARKER);
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io("could not remove", path, e))
        }
        _ => Ok(()),
    }
}

/// The checkpoint the worktree `wt` was handed off at, if it was.
fn left_at(wt: &Repo) -> Result<Option<ObjectId>> {
    let path = wt.git_dir().join(HANDED_OFF_MARKER);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(ObjectId::from_hex(text.trim().as_bytes()).ok()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("could not read", path, e)),
    }
}

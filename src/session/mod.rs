//! Sessions: a branch and a linked worktree per piece of agent work, a chain of checkpoint
//! commits on a hidden ref, and a journal of events in git notes.
//!
//! Everything is stored in the repository's own git database (see `docs/architecture.md` §3, "What lives where"):
//! - `refs/bmad/sessions/<id>/checkpoints`: the head of the session's checkpoint chain;
//! - `refs/notes/bmad/<id>`: the journal, JSON lines in notes on the checkpoint commits;
//! - `.bmad/sessions/<id>/journal.md` in the session worktree: the journal, rendered into
//!   each commit the session makes.
//!
//! The state of a session is a pure function of its journal ([`state::SessionState::replay`]);
//! the trailers on the newest checkpoint summarise it so listing sessions reads one commit each.

mod adopt;
mod agent_settings;
mod checkpoint;
pub mod closeout;
mod deferred;
mod doctor;
pub mod epic_state;
mod error;
mod event;
mod git_locks;
mod hand_off;
mod handle;
mod id;
mod init;
mod journal;
mod lifecycle;
mod marker;
mod policy;
mod prune;
mod raw_bytes;
mod record;
pub mod ref_record;
mod remote_checks;
mod remove;
mod removed;
mod render;
mod repair;
pub mod repository;
mod rollback;
pub mod run_state;
pub mod schema;
mod state;
mod store;
mod submodule_moves;
pub mod sync;
mod tips;
mod trailers;
pub mod trust;
mod worktree;

pub use adopt::{adopt, LEASE};
pub use agent_settings::{held as hold_agent_settings, HeldSettings};
pub use checkpoint::{chain, checkpoint, mark_status, Checkpoint, Taken, Trailers};
pub use deferred::{defer, violations_kept_in, ReportChannel, REPORT_SOCKET};
pub use doctor::{doctor, Finding, Severity};
pub use error::{Error, LocateError, Result};
pub use event::{Decision, Event, NewEvent};
pub use git_locks::clear_abandoned_worktree_locks;
pub use hand_off::{hand_off, HandedOff};
pub use id::{clone_id, ensure_clone_id, SessionId};
pub use init::{init, InitOutcome};
pub use journal::{
    append, flush_deferred, read as read_journal, record, Journal, JournalEntry, Unsealed,
};
pub use lifecycle::{finish, start, StartOptions, Started};
pub use marker::SESSION_MARKER;
pub use policy::Policy;
pub use prune::{prune, PruneOutcome};
pub use remove::{remove, RemoveOptions};
pub use removed::{gc, list_removed, removed_ref, restore, RemovedSession, Restored};
pub use render::{event_summary, render_markdown, stage_for_commit, write_rendered};
pub use repair::{apply_repair, Repair};
pub use rollback::{
    continue_rollback, interrupted, plan_rollback, rollback, undo, Intent, RollbackOutcome,
    RollbackPlan, Target,
};
pub use schema::Body;
pub use state::{SessionState, Status};
pub use store::{list, locate, Session};
pub use tips::{MovedRef, RefTips};
pub use worktree::{ensure_worktree_intact, worktree_damage, Damage, WorktreeDamage};

/// The git values session operations take and give (plain data: ids, changes, a fence's
/// paths); none of them can run a git operation without a git `Repo`.
pub use crate::git::{CommandShadow, Fence, FenceKind, ObjectId, TreeChange, View, RUN_LOCK};
pub use handle::Repo;

/// Store a text (a run's playbook) in the object database for `session`; its id names it in
/// the journal. A ref (`refs/bmad/sessions/<id>/texts/<blob>`) keeps it reachable: a run
/// parked at a gate for weeks must survive `git gc --prune=now`.
pub fn store_text(repo: &Repo, session: &SessionId, text: &str) -> Result<String> {
    let repo = &repo.git;
    let blob = repo.write_blob(text.as_bytes())?;
    let name = session_ref(session, &format!("texts/{blob}"));
    // Created once, never moved: after a conflict, another writer may have made it.
    if repo.read_ref(&name)? != Some(blob)
        && repo.cas_ref_waiting(&name, None, blob, "bmad: keep a run's playbook")?
            != crate::git::CasOutcome::Updated
        && repo.read_ref(&name)? != Some(blob)
    {
        return Err(repo.contention(&name, 1).into());
    }
    Ok(blob.to_string())
}

/// A text stored with [`store_text`], by the id the journal recorded.
pub fn read_stored_text(repo: &Repo, id: &str) -> Result<String> {
    let repo = &repo.git;
    let object = crate::git::ObjectId::from_hex(id.as_bytes())
        .map_err(|e| Error::InvalidInput(format!("{id:?} is not an object id: {e}")))?;
    let bytes = repo.read_blob(object)?;
    String::from_utf8(bytes)
        .map_err(|e| Error::InvalidInput(format!("object {id} is not UTF-8 text: {e}")))
}

/// The project configuration, with this clone's `git config bmad.*` overrides.
pub fn load_config(repo: &crate::git::Repo) -> Result<crate::config::Config> {
    let main = repo.main_workdir()?;
    Ok(crate::config::Config::load(&main, &|key| {
        repo.config_string(key)
    })?)
}

/// A ref of a session's own, under `refs/bmad/sessions/<id>/` (`rest` empty: the prefix).
pub(crate) fn session_ref(id: &SessionId, rest: &str) -> String {
    format!("refs/bmad/sessions/{id}/{rest}")
}

/// The ref holding the head of a session's checkpoint chain.
pub fn checkpoints_ref(id: &SessionId) -> String {
    session_ref(id, "checkpoints")
}

/// Every ref a session has, with its object: its branch, its side refs (rollback intent,
/// stored texts), its journal, and its checkpoint chain last (the ref that makes it a
/// session, so deleting in this order keeps it listed until the end).
pub(crate) fn session_refs(
    repo: &crate::git::Repo,
    session: &Session,
) -> Result<Vec<(String, crate::git::ObjectId)>> {
    let chain = checkpoints_ref(&session.id);
    let notes = notes_ref(&session.id);
    let mut refs: Vec<_> = repo
        .read_ref(&session.branch)?
        .map(|tip| (session.branch.clone(), tip))
        .into_iter()
        .collect();
    let mut chain_tip = None;
    for (name, tip) in repo.refs_with_prefix(&session_ref(&session.id, ""))? {
        if name == chain {
            chain_tip = Some((name, tip));
        } else {
            refs.push((name, tip));
        }
    }
    refs.extend(repo.read_ref(&notes)?.map(|tip| (notes, tip)));
    refs.extend(chain_tip);
    Ok(refs)
}

/// The notes ref holding a session's journal.
pub fn notes_ref(id: &SessionId) -> String {
    format!("refs/notes/bmad/{id}")
}

/// Where the rendered journal lives, relative to the session worktree.
pub fn journal_md_path(id: &SessionId) -> String {
    format!(".bmad/sessions/{id}/journal.md")
}

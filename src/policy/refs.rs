//! The reference-transaction check: a session worktree may not write git-bmad's own refs
//! (`refs/bmad/*`, `refs/notes/bmad/*`), nor move, delete or create a protected branch
//! locally (`git branch -f main`, `git push . HEAD:main`, `update-ref`, a merge while main is
//! checked out elsewhere). While an agent run is live ([`super::live_run`]) no process moves
//! a protected branch, wherever it runs from: an agent can leave its worktree.
//!
//! The shim only starts us in the `prepared` phase, in a session worktree or while a run is
//! live. What must keep working: `git gc` / `pack-refs` (a packed create,
//! then a loose delete of the same value), no-op updates, and everything in the user's own
//! worktree while no agent runs.

use super::rules::{self, Refusal};
use crate::git::Repo;

/// One line of reference-transaction input: `<old> <new> <ref>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefUpdate {
    /// The old value as the caller gave it (zeros when it gave none).
    pub old: String,
    /// The new value (zeros for a deletion; `ref:<target>` for a symref).
    pub new: String,
    /// The ref.
    pub name: String,
}

/// Parse the hook's stdin.
pub fn parse(stdin: &str) -> Vec<RefUpdate> {
    stdin
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ' ');
            Some(RefUpdate {
                old: parts.next()?.to_owned(),
                new: parts.next()?.to_owned(),
                name: parts.next()?.to_owned(),
            })
        })
        .collect()
}

fn is_zero(oid: &str) -> bool {
    !oid.is_empty() && oid.bytes().all(|b| b == b'0')
}

/// git-bmad's own refs: it writes them itself (without git, so without this hook), and a
/// git command that writes them from a session worktree is a step rewriting its record.
fn is_bmad_state(name: &str) -> bool {
    name.starts_with("refs/bmad/") || name.starts_with("refs/notes/bmad/")
}

/// Where a transaction happens, for the rules that bind it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// In a session worktree: every rule.
    Session,
    /// Elsewhere, while agents run in these worktrees: protected branches only.
    WhileAgentsRun(Vec<std::path::PathBuf>),
}

/// The refusals for a transaction made at `place`.
pub fn check(
    repo: &Repo,
    updates: &[RefUpdate],
    protected: &[String],
    place: &Place,
) -> Vec<Refusal> {
    let mut refusals = Vec::new();
    let from = match place {
        Place::Session => "from a session worktree".to_owned(),
        Place::WhileAgentsRun(dirs) => format!(
            "while an agent runs (in {}); wait for the run to end or stop it",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    for u in updates {
        let bmad_state = is_bmad_state(&u.name) && *place == Place::Session;
        if !bmad_state && !super::is_protected(&u.name, protected) {
            continue;
        }
        if !bmad_state && (u.old.starts_with("ref:") || u.new.starts_with("ref:")) {
            refusals.push(rules::PROTECTED_SYMREF.refuse(
                &u.name,
                format!("{} is protected and cannot become a symbolic ref", u.name),
            ));
            continue;
        }
        let current = repo
            .read_ref(&u.name)
            .ok()
            .flatten()
            .map(|id| id.to_string());
        if current.as_deref() == Some(u.new.as_str()) {
            continue; // a no-op, or pack-refs writing the packed copy
        }
        if is_zero(&u.new)
            && !is_zero(&u.old)
            && current.as_deref() == Some(u.old.as_str())
            && pack_refs_prune(repo, u)
        {
            continue;
        }
        let refusal = if bmad_state {
            rules::BMAD_STATE.refuse(
                &u.name,
                format!(
                    "{} is git-bmad's record of the session and cannot be written from a session worktree",
                    u.name
                ),
            )
        } else if is_zero(&u.new) {
            rules::DELETE_PROTECTED.refuse(
                &u.name,
                format!("{} is protected and cannot be deleted {from}", u.name),
            )
        } else {
            rules::MOVE_PROTECTED.refuse(
                &u.name,
                format!("{} is protected and cannot be moved {from}", u.name),
            )
        };
        refusals.push(refusal);
    }
    refusals
}

/// pack-refs deletes a loose ref after writing the same value into packed-refs.
fn pack_refs_prune(repo: &Repo, u: &RefUpdate) -> bool {
    repo.is_packed_at(&u.name, &u.old)
}

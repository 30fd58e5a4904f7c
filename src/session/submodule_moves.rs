//! The submodules a rollback moves: each whose recorded commit differs between the state
//! left and the target is checked out at the target's, as `git submodule update` would
//! (git's own two-way merge records the new commit and leaves the checkout where it was).
//! One that holds work of its own, or lacks the commit, refuses the rollback before
//! anything is written.

use super::error::{Error, Result};
use crate::git::{ObjectId, Repo, TreeChange};

/// A gitlink's mode.
const GITLINK: &str = "160000";

/// The submodules `changes` move: each path, and the commit it goes to.
pub(super) fn moves(changes: &[TreeChange]) -> Vec<(String, ObjectId)> {
    changes
        .iter()
        .filter(|c| c.old_mode == GITLINK && c.new_mode == GITLINK)
        .filter_map(|c| {
            Some((
                c.path.clone(),
                ObjectId::from_hex(c.new_id.as_bytes()).ok()?,
            ))
        })
        .collect()
}

/// Refuse, with the reasons, when a submodule of `moves` cannot move.
pub(super) fn refuse_if_held(wt: &Repo, moves: &[(String, ObjectId)]) -> Result<()> {
    let mut reasons = Vec::new();
    for (path, commit) in moves {
        reasons.extend(wt.submodule_move_refused(path, *commit)?);
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(Error::SubmoduleHoldsWork { reasons })
    }
}

/// Move each submodule of `moves`; one that cannot move now (its checkout changed since
/// the check) is named in a line of its own, and the rest still move.
pub(super) fn apply(wt: &Repo, moves: &[(String, ObjectId)]) -> Vec<String> {
    moves
        .iter()
        .filter_map(|(path, commit)| {
            wt.move_submodule(path, *commit)
                .err()
                .map(|e| format!("submodule {path} stayed where it was: {e}"))
        })
        .collect()
}

//! The files agents read their grants from (permission rules, hooks, tools), held across a
//! step: they lie in the worktree the agent writes, so what a step changes there is put back
//! before any other step's CLI reads it.
//!
//! They are held as the bytes on disk, with ignore rules set aside (`add -A -f`): a
//! `.claude/settings.local.json` that `.gitignore` hides from every checkpoint is read by
//! the CLI all the same.

use crate::git::{ObjectId, Repo};

use super::error::Result;
use super::store::Session;

/// The agents' settings in a session's worktree as they were when [`held`] took them.
pub struct HeldSettings {
    /// The entries (`.claude`, `opencode.json`): files, or folders with all under them.
    entries: Vec<String>,
    tree: ObjectId,
}

/// Take what `entries` (files; folders end in `/`) hold in the session's worktree now.
pub fn held(repo: &Repo, session: &Session, entries: &[&str]) -> Result<HeldSettings> {
    let entries: Vec<String> = entries
        .iter()
        .map(|e| crate::paths::trimmed(e).to_owned())
        .collect();
    let tree = taken(repo, session, &entries)?.1;
    Ok(HeldSettings { entries, tree })
}

impl HeldSettings {
    /// The same, but with `paths` as `tree` has them: what a step interrupted by a crash
    /// changed there, so the next [`Self::put_back`] restores them from before that step.
    pub fn as_before(
        self,
        repo: &Repo,
        session: &Session,
        tree: ObjectId,
        paths: &[String],
    ) -> Result<HeldSettings> {
        if paths.is_empty() {
            return Ok(self);
        }
        let worktree = session.open_worktree(repo)?;
        let wt = worktree.as_ref().unwrap_or(repo);
        let tree = wt.tree_taking(self.tree, tree, paths)?;
        Ok(HeldSettings { tree, ..self })
    }

    /// Put back every path under the entries that changed since they were held (changed,
    /// added or removed, ignored or not), on disk and in the worktree's index where it tracks
    /// them: the paths put back. The state being left is the caller's to keep (a checkpoint
    /// taken before).
    pub fn put_back(&self, repo: &Repo, session: &Session) -> Result<Vec<String>> {
        let (scratch, now) = taken(repo, session, &self.entries)?;
        if now == self.tree {
            return Ok(Vec::new());
        }
        let worktree = session.open_worktree(repo)?;
        let wt = worktree.as_ref().unwrap_or(repo);
        let changed: Vec<String> = wt
            .diff_trees(self.tree, now)?
            .into_iter()
            .map(|change| change.path)
            .collect();
        if changed.is_empty() {
            return Ok(changed);
        }
        let to = wt.tree_taking(now, self.tree, &changed)?;
        wt.read_tree_update_as_they_are(scratch.path(), now, to)?;
        // A grant the agent staged would come back with its next `git checkout -- .` or
        // `git commit`. The disk is what CLIs read: an index a killed git left locked only
        // costs this.
        if let Err(e) = wt.restage_tracked(&changed) {
            tracing::warn!("agent settings put back on disk, not in the index: {e}");
        }
        Ok(changed)
    }
}

/// A private index of the entries alone, staged from disk, and its tree: what they hold
/// costs what they are, whatever the size of the repository.
fn taken(
    repo: &Repo,
    session: &Session,
    entries: &[String],
) -> Result<(tempfile::NamedTempFile, ObjectId)> {
    let worktree = session.open_worktree(repo)?;
    let wt = worktree.as_ref().unwrap_or(repo);
    let scratch = wt.empty_index()?;
    let tree = wt.write_tree_forcing(scratch.path(), entries)?;
    Ok((scratch, tree))
}

//! Trees checked as `git fsck` checks them, before a branch takes commits someone else made
//! (a contained step's, a remote's): no entry may be empty, `.` or `..`, hold a `/`, be
//! `.git` in any spelling a filesystem folds to it (HFS+ ignorables, NTFS short names and
//! streams), or be a `.gitmodules` that is a symlink. git itself refuses to check such trees
//! out, and a remote with `receive.fsckObjects` refuses them; a checkout by an older git
//! or another tool writes outside the worktree or into `.git/hooks`.

use std::collections::HashMap;
use std::collections::HashSet;

use gix::bstr::{BStr, ByteSlice};
use gix::validate::path::component;

use super::error::{Error, Result};
use super::{ObjectId, Repo};

/// How many findings are named: one is enough to refuse, a few help the reader.
const FINDINGS_SHOWN: usize = 5;

impl Repo {
    /// The entries git would refuse in the commits reachable from `tip` and from none of
    /// `known` (the branch before, whose trees were already taken; what a remote already
    /// has), each as `path: why`; empty when there is none. Each commit's tree is compared
    /// with its first parent's, so the cost follows what changed, not the size of the tree.
    pub fn refused_tree_entries(
        &self,
        tip: ObjectId,
        known: impl IntoIterator<Item = ObjectId>,
    ) -> Result<Vec<String>> {
        let walk = self
            .gix()
            .rev_walk([tip])
            .with_hidden(known)
            .all()
            .map_err(|e| Error::gix(format!("could not walk the history of {tip}"), e))?;
        let mut checker = Checker {
            repo: self,
            seen: HashSet::new(),
            found: Vec::new(),
        };
        for info in walk {
            let info = info.map_err(|e| Error::gix(format!("could not walk from {tip}"), e))?;
            let commit = self.commit_info(info.id)?;
            let parent_tree = match commit.parents.first() {
                Some(parent) if self.has_object(*parent) => Some(self.tree_of(*parent)?),
                _ => None,
            };
            checker.tree(commit.tree, parent_tree, &mut Vec::new())?;
            if checker.found.len() >= FINDINGS_SHOWN {
                break;
            }
        }
        Ok(checker.found)
    }
}

struct Checker<'r> {
    repo: &'r Repo,
    /// Trees already checked (a tree is the same wherever it appears).
    seen: HashSet<ObjectId>,
    found: Vec<String>,
}

impl Checker<'_> {
    /// Check tree `id` at `path` (its parts), descending only where it differs from `old`.
    fn tree(&mut self, id: ObjectId, old: Option<ObjectId>, path: &mut Vec<Vec<u8>>) -> Result<()> {
        if Some(id) == old || !self.seen.insert(id) || self.found.len() >= FINDINGS_SHOWN {
            return Ok(());
        }
        let shown_path = |path: &[Vec<u8>]| path.join(&b'/').as_bstr().to_string();
        // A tree that cannot be read is refused as one git cannot check out.
        let Ok(entries) = self.entries(id) else {
            let at = shown_path(path);
            self.found.push(format!("{at:?}: tree {id} cannot be read"));
            return Ok(());
        };
        let before: HashMap<Vec<u8>, ObjectId> = match old.and_then(|old| self.entries(old).ok()) {
            Some(entries) => entries
                .into_iter()
                .filter(|(_, kind, _)| *kind == gix::object::tree::EntryKind::Tree)
                .map(|(name, _, id)| (name, id))
                .collect(),
            None => HashMap::new(),
        };
        for (name, kind, child) in entries {
            let mode =
                (kind == gix::object::tree::EntryKind::Link).then_some(component::Mode::Symlink);
            // Git's own rules on every platform (core.protectHFS and core.protectNTFS, as
            // fsck applies them), without Windows' reserved names, which are fine here.
            let options = component::Options {
                protect_windows: false,
                protect_hfs: true,
                protect_ntfs: true,
            };
            if let Err(why) = gix::validate::path::component(name.as_bstr(), mode, options) {
                path.push(name);
                let shown = shown_path(path);
                path.pop();
                self.found.push(format!("{shown:?}: {why}"));
                if self.found.len() >= FINDINGS_SHOWN {
                    return Ok(());
                }
                continue;
            }
            if kind == gix::object::tree::EntryKind::Tree {
                let old_child = before.get(&name).copied();
                path.push(name);
                self.tree(child, old_child, path)?;
                path.pop();
            }
        }
        Ok(())
    }

    fn entries(
        &self,
        id: ObjectId,
    ) -> Result<Vec<(Vec<u8>, gix::object::tree::EntryKind, ObjectId)>> {
        let tree = self
            .repo
            .gix()
            .find_tree(id)
            .map_err(|e| Error::gix(format!("could not read tree {id}"), e))?;
        let decoded = tree
            .decode()
            .map_err(|e| Error::gix(format!("could not decode tree {id}"), e))?;
        Ok(decoded
            .entries
            .iter()
            .map(|e| {
                let name: &BStr = e.filename;
                (name.to_vec(), e.mode.kind(), e.oid.to_owned())
            })
            .collect())
    }
}

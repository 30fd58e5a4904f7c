//! What the index records besides `HEAD`'s tree (staged changes, conflicts), which decides
//! whether a checkpoint saves it, and the tree it describes. git keeps a cache of the
//! index's trees and marks out of date only the folders on the way to what changed, so both
//! cost the folders a change touched, not the repository: a folder the cache still knows is
//! its cached tree id, and only the folders it marks changed are built again (as `git
//! write-tree` does, without writing the index back).

use std::collections::HashMap;
use std::ops::Range;

use gix::bstr::ByteSlice;
use gix::index::entry::Flags;
use gix::index::extension::Tree as CachedTree;
use gix::index::State;
use gix::objs::tree::{Entry, EntryKind};

use crate::git::error::{Error, Result};
use crate::git::repo::Repo;
use crate::git::snapshot_cache::tree_kind;
use crate::git::ObjectId;

impl Repo {
    /// Whether `index` records anything other than `tree`, and the tree it describes where
    /// its cache of trees tells it (`None`: a conflict, an intent-to-add entry, a sparse
    /// index, or a folder the cache does not know; the checkpoint then asks git).
    pub(super) fn index_against(
        &self,
        tree: ObjectId,
        index: &State,
    ) -> Result<(bool, Option<ObjectId>)> {
        if index.entries().iter().any(|e| e.stage_raw() != 0) {
            return Ok((true, None));
        }
        let cached = index.tree().filter(|_| !index.is_sparse());
        let all = 0..index.entries().len();
        let built = match cached {
            Some(cached) => self.folder_tree(cached, index, b"", all)?,
            None => None,
        };
        if let Some(id) = built {
            return Ok((id != tree, Some(id)));
        }
        Ok((self.index_differs_entry_by_entry(tree, index)?, None))
    }

    /// The tree of the entries `range` of `index` (those under `prefix`, the folder `cached`
    /// describes): the cached id where it is valid, counts those entries and its object is
    /// there, else built from its files and its folders' trees and written; `None` where
    /// the cache does not cover the folder, or an entry has no place in a tree or names an
    /// object that is not there (git says which).
    fn folder_tree(
        &self,
        cached: &CachedTree,
        index: &State,
        prefix: &[u8],
        range: Range<usize>,
    ) -> Result<Option<ObjectId>> {
        // As git, a cached tree counts only while its object is there.
        let has = |id: &ObjectId| self.gix().has_object(id);
        if let Some(count) = cached.num_entries {
            return Ok((count as usize == range.len() && has(&cached.id)).then_some(cached.id));
        }
        let entries = index.entries();
        let children: HashMap<&[u8], &CachedTree> = cached
            .children
            .iter()
            .map(|c| (c.name.as_slice(), c))
            .collect();
        let mut tree = gix::objs::Tree::empty();
        let mut at = range.start;
        while at < range.end {
            let entry = &entries[at];
            let path = entry.path(index);
            let rest = &path[prefix.len()..];
            let Some(slash) = rest.find_byte(b'/') else {
                // No place in a tree, or an object git's write-tree would refuse to name.
                let missing = !entry.mode.is_submodule() && !has(&entry.id);
                if entry.flags.contains(Flags::INTENT_TO_ADD) || entry.mode.is_sparse() || missing {
                    return Ok(None);
                }
                tree.entries.push(Entry {
                    mode: tree_kind(entry.mode).into(),
                    filename: rest.into(),
                    oid: entry.id,
                });
                at += 1;
                continue;
            };
            // A folder: its entries come together.
            let name = &rest[..slash];
            let folder = &path[..prefix.len() + slash + 1];
            let Some(child) = children.get(name.as_bytes()) else {
                return Ok(None);
            };
            let end = folder_end(index, folder, at..range.end, child.num_entries);
            let Some(id) = self.folder_tree(child, index, folder, at..end)? else {
                return Ok(None);
            };
            // As git, a folder left with nothing is no entry.
            if id != self.empty_tree() {
                tree.entries.push(Entry {
                    mode: EntryKind::Tree.into(),
                    filename: name.into(),
                    oid: id,
                });
            }
            at = end;
        }
        tree.entries.sort();
        let id = self.gix().write_object(&tree).map_err(|e| {
            Error::gix(
                format!("could not write the tree of {}", prefix.as_bstr()),
                e,
            )
        })?;
        Ok(Some(id.detach()))
    }

    /// Whether `index` records anything other than `tree`, read entry by entry.
    fn index_differs_entry_by_entry(&self, tree: ObjectId, index: &State) -> Result<bool> {
        let mut differs = false;
        let repo = self.gix();
        // The whole index, wherever the process runs (no pathspec would mean the current
        // directory only).
        let mut everything = repo
            .pathspec(
                false,
                None::<&str>,
                false,
                index,
                gix::worktree::stack::state::attributes::Source::IdMapping,
            )
            .map_err(|e| Error::gix("could not set up a pathspec", e))?;
        repo.tree_index_status(
            &tree,
            index,
            Some(&mut everything),
            gix::status::tree_index::TrackRenames::Disabled,
            |_, _, _| {
                differs = true;
                Ok(gix::diff::index::Action::Break(()))
            },
        )
        .map_err(|e| Error::gix(format!("could not compare the index with tree {tree}"), e))?;
        Ok(differs)
    }
}

/// Where the entries of `folder` (the first of `range`'s) end: `count` on, if the cache
/// counts them so, else wherever they stop.
fn folder_end(index: &State, folder: &[u8], range: Range<usize>, count: Option<u32>) -> usize {
    let entries = index.entries();
    let within = |at: usize| entries[at].path(index).starts_with(folder);
    if let Some(end) = count.map(|n| range.start + n as usize) {
        if end > range.start
            && end <= range.end
            && within(end - 1)
            && (end == range.end || !within(end))
        {
            return end;
        }
    }
    range.start
        + (range.start..range.end)
            .take_while(|&at| within(at))
            .count()
}

//! Big files put into an index before git's own `add -A` stages the rest of the worktree
//! there. git reads a file it converts (line endings, a clean filter) whole and holds its
//! converted form besides, so staging a 1 GB such file takes 2 GB. git-bmad's snapshot
//! stores the file in bounded memory; its blob is set in the index with the stat data the
//! file was read under, which git takes as proof that the file has not changed since, so
//! neither `add -A` nor the `read-tree -u` that follows reads it again.

use std::path::Path;

use gix::bstr::{BStr, ByteSlice};
use gix::index::entry::{Flags, Stage, Stat};

use super::error::{Error, Result};
use super::repo::Repo;
use super::snapshot::VET_LIMIT;
use super::snapshot_cache::{Cached, StoredCache};
use super::worktree_scan::trusted;

impl Repo {
    /// Set in the index file `index` each file of the worktree past [`VET_LIMIT`] bytes as
    /// git-bmad's snapshot stores it, with the stat data it was read under. Left to git:
    /// everything in an index git-bmad does not write (split or sparse), a file whose stat
    /// data proves nothing yet (written within a clock tick of the read), and one the index
    /// holds its own way (intent-to-add, skip-worktree, a conflict).
    pub(super) fn prestage_big_files(&self, index: &Path) -> Result<()> {
        let hash = self.gix().object_hash();
        let tree = self.snapshot_tree_vetted(None, None)?.tree;
        let Some(cache) = StoredCache::open(&self.snapshot_cache_dir(), hash, tree)
            .and_then(|stored| stored.decode())
        else {
            return Ok(());
        };
        let state = &cache.state;
        let big: Vec<(&BStr, Cached)> = state
            .entries()
            .iter()
            .filter(|e| u64::from(e.stat.size) > VET_LIMIT && trusted(&e.stat, cache.verified))
            .map(|e| (e.path(state), (e.id, e.mode, e.stat)))
            .collect();
        if big.is_empty() {
            return Ok(());
        }
        let Ok(mut file) = gix::index::File::at(index, hash, false, Default::default()) else {
            return Ok(());
        };
        if file.is_sparse() || file.link().is_some() {
            return Ok(());
        }
        smudge_racy_entries(&mut file);
        let mut set = Vec::new();
        for (path, (id, mode, stat)) in big {
            let holds = file.entry_range(path).map(|range| {
                let entries = &file.entries()[range];
                let own = Flags::INTENT_TO_ADD | Flags::SKIP_WORKTREE;
                match entries {
                    [entry]
                        if entry.stage() == Stage::Unconflicted && !entry.flags.intersects(own) =>
                    {
                        Some((entry.id, entry.mode, entry.stat) == (id, mode, stat))
                    }
                    // Its own way, or a conflict: git's to stage.
                    _ => None,
                }
            });
            match holds {
                None => file.dangerously_push_entry(stat, id, Flags::empty(), mode, path),
                Some(Some(false)) => {
                    if let Some(entry) = file.entry_mut_by_path_and_stage(path, Stage::Unconflicted)
                    {
                        (entry.id, entry.mode, entry.stat) = (id, mode, stat);
                    }
                }
                Some(_) => continue,
            }
            set.push(path);
        }
        if set.is_empty() {
            return Ok(());
        }
        file.sort_entries();
        if let Some(tree) = file.tree_mut() {
            for path in &set {
                invalidate(tree, path);
            }
        }
        let mut bytes = Vec::new();
        file.write_to(&mut bytes, Default::default())
            .map_err(|e| Error::gix(format!("could not write the index {}", index.display()), e))?;
        crate::fs::write_atomically(index, &bytes, None)
            .map_err(|e| Error::io("could not write the index", index, e))
    }
}

/// Mark every entry git would take as racily clean under the index's own time as changed
/// (its size zero), as git does when it writes an index: the index written now is stamped
/// later, and git would then trust the stat data of a file rewritten, same size, within the
/// clock tick it was staged in.
fn smudge_racy_entries(file: &mut gix::index::File) {
    let written = file.timestamp();
    let at = (written.unix_seconds(), written.nanoseconds());
    for entry in file.entries_mut() {
        let mtime = (i64::from(entry.stat.mtime.secs), entry.stat.mtime.nsecs);
        if mtime >= at {
            entry.stat = Stat {
                size: 0,
                ..entry.stat
            };
        }
    }
}

/// Mark the cached trees on the way to `path` as out of date.
fn invalidate(tree: &mut gix::index::extension::Tree, path: &BStr) {
    tree.num_entries = None;
    let mut at = tree;
    let folders = path.split_str("/").collect::<Vec<_>>();
    for name in &folders[..folders.len().saturating_sub(1)] {
        let Some(child) = at.children.iter_mut().find(|c| c.name.as_slice() == *name) else {
            return;
        };
        child.num_entries = None;
        at = child;
    }
}

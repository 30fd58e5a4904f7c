//! Snapshots of a worktree as a tree object, without touching the index, HEAD or any branch.
//!
//! The tree starts from `HEAD^{tree}` and only the paths that `status` reports as different
//! (staged, modified, deleted, untracked-not-ignored) are re-read from disk. With a valid stat
//! cache the cost follows the number of changed files, not the size of the repository, and
//! ignored files are never read. The index is only ever read: its stat cache is what makes
//! status cheap, and writing it would race with the agent's own `git add`.

use std::collections::BTreeSet;
use std::path::Path;

use gix::bstr::BStr;
use gix::bstr::{BString, ByteSlice};
use gix::status::{self, UntrackedFiles};

use super::error::{Error, Result};
use super::repo::Repo;
use super::ObjectId;

/// What makes a worktree dirty: a few of the paths, and how many there are in all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dirt {
    /// Up to the requested number of paths, the first in path order.
    pub sample: Vec<String>,
    /// How many paths differ from HEAD (untracked directories count once).
    pub count: usize,
}

impl Dirt {
    /// Whether nothing differs.
    pub fn is_clean(&self) -> bool {
        self.count == 0
    }
}

/// Judges one changed file (its path, its bytes) before it may enter the object database.
pub type Vet<'a> = &'a mut dyn FnMut(&str, &[u8]) -> bool;

/// How much of a file a vet sees: a secret past the first 8 MiB of a file is not looked for.
pub const VET_LIMIT: u64 = 8 << 20;

/// A snapshot and the files that were kept out of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vetted {
    /// The snapshot's tree.
    pub tree: ObjectId,
    /// Changed files the vet refused, as `HEAD` has them in `tree`.
    pub refused: Vec<String>,
    /// Whether the index differs from `HEAD` (staged changes, conflicts), so a checkpoint
    /// must save it too.
    pub staged: bool,
}

impl Repo {
    /// The tree of this worktree as it is on disk: tracked and untracked files, `.gitignore`d
    /// ones left out; executable bits, symlinks and clean filters as `git add -A` would record.
    pub fn snapshot_tree(&self) -> Result<ObjectId> {
        Ok(self.snapshot_tree_vetted(None)?.tree)
    }

    /// [`snapshot_tree`](Self::snapshot_tree), showing every changed file's bytes on disk
    /// (the first [`VET_LIMIT`] of them) to `vet` before any object is written. A file `vet`
    /// refuses never enters the object database: the snapshot keeps the path as `HEAD` has
    /// it (absent, for a new file) and names it in [`Vetted::refused`].
    pub fn snapshot_tree_vetted(&self, mut vet: Option<Vet<'_>>) -> Result<Vetted> {
        let repo = self.gix();
        let base = repo
            .head_tree_id_or_empty()
            .map_err(|e| Error::gix("could not read HEAD's tree", e))?
            .detach();
        let (mut changed, staged) = self.changed_paths()?;
        let mut refused = Vec::new();
        if let Some(vet) = vet.as_mut() {
            refused = self.vet_paths(&changed, *vet)?;
            for path in &refused {
                changed.remove(path);
            }
        }
        if changed.is_empty() {
            return Ok(Vetted {
                tree: base,
                refused,
                staged,
            });
        }
        let (mut pipeline, index) = repo
            .filter_pipeline(None)
            .map_err(|e| Error::gix("could not set up the filter pipeline", e))?;
        let mut editor = repo
            .edit_tree(base)
            .map_err(|e| Error::gix(format!("could not edit tree {base}"), e))?;
        for path in &changed {
            let found = pipeline
                .worktree_file_to_object(BStr::new(path.as_bytes()), &index)
                .map_err(|e| Error::gix(format!("could not read {path} from the worktree"), e))?;
            let result = match found {
                Some((id, kind, _)) => editor.upsert(path, kind, id).map(|_| ()),
                None => match gitlink(&index, path) {
                    // A submodule is a directory on disk; keep the commit the index records.
                    Some(id) => editor
                        .upsert(path, gix::object::tree::EntryKind::Commit, id)
                        .map(|_| ()),
                    None => editor.remove(path).map(|_| ()),
                },
            };
            result
                .map_err(|e| Error::gix(format!("could not record {path} in the snapshot"), e))?;
        }
        let tree = editor
            .write()
            .map(|id| id.detach())
            .map_err(|e| Error::gix("could not write the snapshot tree", e))?;
        Ok(Vetted {
            tree,
            refused,
            staged,
        })
    }

    /// Show every file that differs from `HEAD` to `vet`, writing nothing; the ones it
    /// refused. For what must store the whole worktree or nothing (a rollback's safety
    /// snapshot).
    pub fn vet_changes(&self, vet: Vet<'_>) -> Result<Vec<String>> {
        self.vet_paths(&self.changed_paths()?.0, vet)
    }

    fn vet_paths(&self, paths: &BTreeSet<String>, vet: Vet<'_>) -> Result<Vec<String>> {
        let mut refused = Vec::new();
        for path in paths {
            let Some(bytes) = self.file_head(path)? else {
                continue;
            };
            if !vet(path, &bytes) {
                refused.push(path.clone());
            }
        }
        Ok(refused)
    }

    /// The first [`VET_LIMIT`] bytes of a regular file of the worktree (a symlink: its
    /// target); `None` for what is gone or is a directory (a submodule).
    fn file_head(&self, path: &str) -> Result<Option<Vec<u8>>> {
        use std::io::Read;
        let full = self.workdir().join(path);
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            return Ok(None);
        };
        if meta.file_type().is_symlink() {
            return Ok(std::fs::read_link(&full)
                .ok()
                .map(|t| t.to_string_lossy().into_owned().into_bytes()));
        }
        if !meta.is_file() {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        std::fs::File::open(&full)
            .and_then(|f| f.take(VET_LIMIT).read_to_end(&mut bytes))
            .map_err(|e| Error::io("could not read (to check it)", &full, e))?;
        Ok(Some(bytes))
    }

    /// `tree` without `paths` (a path absent from it is no error).
    pub fn tree_without(&self, tree: ObjectId, paths: &[String]) -> Result<ObjectId> {
        if paths.is_empty() {
            return Ok(tree);
        }
        let mut editor = self
            .gix()
            .edit_tree(tree)
            .map_err(|e| Error::gix(format!("could not edit tree {tree}"), e))?;
        for path in paths {
            editor
                .remove(path)
                .map_err(|e| Error::gix(format!("could not drop {path} from tree {tree}"), e))?;
        }
        editor
            .write()
            .map(|id| id.detach())
            .map_err(|e| Error::gix(format!("could not write tree {tree} without some paths"), e))
    }

    /// A tree holding `blobs`, each at its path.
    pub fn tree_of_blobs(&self, blobs: &[(String, ObjectId)]) -> Result<ObjectId> {
        let empty = self.empty_tree();
        let mut editor = self
            .gix()
            .edit_tree(empty)
            .map_err(|e| Error::gix("could not start a tree", e))?;
        for (path, id) in blobs {
            editor
                .upsert(path, gix::object::tree::EntryKind::Blob, *id)
                .map_err(|e| Error::gix(format!("could not add {path} ({id}) to a tree"), e))?;
        }
        editor
            .write()
            .map(|id| id.detach())
            .map_err(|e| Error::gix("could not write a tree of blobs", e))
    }

    /// Those of `paths` (files, relative to the worktree root) that the ignore rules of
    /// `tree` exclude: its `.gitignore` files as the tree has them (not as they are on
    /// disk), plus `info/exclude` and `core.excludesFile`. A file inside an excluded
    /// directory is excluded, as git has it.
    pub fn ignored_under(&self, tree: ObjectId, paths: &[String]) -> Result<Vec<String>> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        use gix::index::entry::Mode;
        let repo = self.gix();
        let index = repo
            .index_from_tree(&tree)
            .map_err(|e| Error::gix(format!("could not read tree {tree} as an index"), e))?;
        let mut stack = repo
            .excludes(
                &index,
                None,
                gix::worktree::stack::state::ignore::Source::IdMapping,
            )
            .map_err(|e| {
                Error::gix(format!("could not load the ignore rules of tree {tree}"), e)
            })?;
        let mut excluded_dirs = BTreeSet::new();
        let mut ignored = Vec::new();
        for path in paths {
            let mut hit = false;
            for (end, _) in path.match_indices('/') {
                let dir = &path[..end];
                if excluded_dirs.contains(dir) {
                    hit = true;
                    break;
                }
                let platform = stack
                    .at_path(Path::new(dir), Some(Mode::DIR))
                    .map_err(|e| {
                        Error::gix(format!("could not check {dir} against the ignore rules"), e)
                    })?;
                if platform.is_excluded() {
                    excluded_dirs.insert(dir.to_owned());
                    hit = true;
                    break;
                }
            }
            if !hit {
                hit = stack
                    .at_path(Path::new(path), Some(Mode::FILE))
                    .map_err(|e| {
                        Error::gix(
                            format!("could not check {path} against the ignore rules"),
                            e,
                        )
                    })?
                    .is_excluded();
            }
            if hit {
                ignored.push(path.clone());
            }
        }
        Ok(ignored)
    }

    /// Whether the worktree differs from HEAD, untracked files included.
    pub fn dirt(&self, sample: usize) -> Result<Dirt> {
        self.dirt_of(UntrackedFiles::Collapsed, sample)
    }

    /// Whether tracked files differ from HEAD (staged or not); untracked files do not count.
    pub fn tracked_dirt(&self, sample: usize) -> Result<Dirt> {
        self.dirt_of(UntrackedFiles::None, sample)
    }

    fn dirt_of(&self, untracked: UntrackedFiles, sample: usize) -> Result<Dirt> {
        let iter = self
            .status_platform(untracked)?
            .into_iter(Vec::<BString>::new())
            .map_err(|e| Error::gix("could not compute the status", e))?;
        let mut seen = BTreeSet::new();
        for item in iter {
            let item = item.map_err(|e| Error::gix("could not compute the status", e))?;
            seen.extend(relevant_path(&item));
        }
        // Sorted: status reports in no fixed order, and a message should not change between
        // two runs on the same worktree.
        Ok(Dirt {
            count: seen.len(),
            sample: seen.into_iter().take(sample).collect(),
        })
    }

    /// Every path that may differ between HEAD, the index and the worktree; and whether the
    /// index differs from HEAD.
    fn changed_paths(&self) -> Result<(BTreeSet<String>, bool)> {
        let iter = self
            .status_platform(UntrackedFiles::Files)?
            .into_iter(Vec::<BString>::new())
            .map_err(|e| Error::gix("could not compute the status", e))?;
        let mut paths = BTreeSet::new();
        let mut staged = false;
        for item in iter {
            let item = item.map_err(|e| Error::gix("could not compute the status", e))?;
            staged |= match &item {
                status::Item::TreeIndex(_) => true,
                status::Item::IndexWorktree(change) => matches!(
                    change.summary(),
                    Some(status::index_worktree::iter::Summary::Conflict)
                ),
            };
            if let Some(path) = relevant_path(&item) {
                paths.insert(path);
            }
        }
        Ok((paths, staged))
    }

    fn status_platform(
        &self,
        untracked: UntrackedFiles,
    ) -> Result<status::Platform<'_, gix::progress::Discard>> {
        Ok(self
            .gix()
            .status(gix::progress::Discard)
            .map_err(|e| Error::gix("could not start a status", e))?
            .untracked_files(untracked)
            // No rename pairing: a rename is its source deleted and its destination added,
            // and both paths must be re-read (`git mv a b` staged shows only `b` otherwise).
            .tree_index_track_renames(gix::status::tree_index::TrackRenames::Disabled)
            .index_worktree_rewrites(None))
    }
}

/// The path a status item is about, if it reports a difference.
fn relevant_path(item: &status::Item) -> Option<String> {
    match item {
        status::Item::TreeIndex(change) => Some(change.location().to_str_lossy().into_owned()),
        status::Item::IndexWorktree(change) => change
            .summary()
            .map(|_| change.rela_path().to_str_lossy().into_owned()),
    }
}

/// The commit a submodule entry records, if `path` is one in the index.
fn gitlink(index: &gix::worktree::IndexPersistedOrInMemory, path: &str) -> Option<ObjectId> {
    let entry = index.entry_by_path(path.as_bytes().as_bstr())?;
    (entry.mode == gix::index::entry::Mode::COMMIT).then_some(entry.id)
}

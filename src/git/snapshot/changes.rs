//! What differs between HEAD, the index and the worktree, as git's status has it: how dirty
//! a worktree is, and the changed files shown to a vet before a whole-worktree store.

use std::collections::BTreeSet;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::status::{self, UntrackedFiles};

use super::by_git::ByGit;
use super::{Vet, VET_LIMIT};
use crate::git::error::{Error, Result};
use crate::git::repo::Repo;
use crate::git::worktree_scan::on_disk;

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

impl Repo {
    /// Show every file that differs from `HEAD` to `vet`, writing nothing; the ones it
    /// refused. For what must store the whole worktree or nothing (a rollback's safety
    /// snapshot).
    pub fn vet_changes(&self, vet: Vet<'_>) -> Result<Vec<String>> {
        self.vet_paths(&self.changed_paths()?.0, vet)
    }

    fn vet_paths(&self, paths: &BTreeSet<BString>, vet: Vet<'_>) -> Result<Vec<String>> {
        let mut refused = Vec::new();
        for path in paths {
            let Some(bytes) = self.file_head(path.as_bstr())? else {
                continue;
            };
            let shown = path.to_str_lossy();
            if !vet(&shown, &bytes) {
                refused.push(shown.into_owned());
            }
        }
        Ok(refused)
    }

    /// The first [`VET_LIMIT`] bytes of a regular file of the worktree (a symlink: its
    /// target); `None` for what is gone or is a directory (a submodule).
    pub(super) fn file_head(&self, path: &BStr) -> Result<Option<Vec<u8>>> {
        use std::io::Read;
        let full = on_disk(self.workdir(), path);
        if self.beyond_symlink(path) {
            return Ok(None);
        }
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

    /// Whether the worktree differs from HEAD, untracked files included.
    pub fn dirt(&self, sample: usize) -> Result<Dirt> {
        self.dirt_of(UntrackedFiles::Collapsed, sample)
    }

    /// Whether tracked files differ from HEAD (staged or not); untracked files do not count.
    pub fn tracked_dirt(&self, sample: usize) -> Result<Dirt> {
        self.dirt_of(UntrackedFiles::None, sample)
    }

    fn dirt_of(&self, untracked: UntrackedFiles, sample: usize) -> Result<Dirt> {
        // A set: sorted, as status reports in no fixed order and a message should not change
        // between two runs on the same worktree.
        let (seen, _) = self.status(untracked)?;
        Ok(Dirt {
            count: seen.len(),
            sample: seen
                .into_iter()
                .take(sample)
                .map(|p| p.to_str_lossy().into_owned())
                .collect(),
        })
    }

    /// Every path that may differ between HEAD, the index and the worktree; and whether the
    /// index differs from HEAD.
    fn changed_paths(&self) -> Result<(BTreeSet<BString>, bool)> {
        self.status(UntrackedFiles::Files)
    }

    /// The paths that differ between HEAD, the index and the worktree (untracked ones as
    /// `untracked` says), and whether the index differs from HEAD: gix's status, or git's
    /// where gix cannot read the index (a sparse one) or convert a file as git does (an
    /// encoding it does not know; git is then the one to say what is wrong).
    fn status(&self, untracked: UntrackedFiles) -> Result<(BTreeSet<BString>, bool)> {
        if !self.index_is_sparse()? {
            match self.status_by_gix(untracked) {
                Ok(Some(status)) => return Ok(status),
                Ok(None) => tracing::debug!("git computes the status of an encoded file"),
                Err(e) => tracing::debug!(%e, "git computes the status"),
            }
        }
        let untracked = match untracked {
            UntrackedFiles::None => crate::git::sparse::Untracked::No,
            UntrackedFiles::Collapsed => crate::git::sparse::Untracked::Collapsed,
            UntrackedFiles::Files => crate::git::sparse::Untracked::All,
        };
        let (paths, staged) = self.status_by_git(untracked)?;
        Ok((paths.into_iter().collect(), staged))
    }

    /// gix's status; `None` when it found a file changed that git converts from an
    /// encoding, which gix reads otherwise (git may have it unchanged: that would keep a
    /// session from starting).
    fn status_by_gix(
        &self,
        untracked: UntrackedFiles,
    ) -> Result<Option<(BTreeSet<BString>, bool)>> {
        let iter = self
            .status_platform(untracked)?
            .into_iter(Vec::<BString>::new())
            .map_err(|e| Error::gix("could not compute the status", e))?;
        let mut paths = BTreeSet::new();
        let mut staged = false;
        let mut modified = Vec::new();
        for item in iter {
            let item = item.map_err(|e| Error::gix("could not compute the status", e))?;
            use status::index_worktree::iter::Summary;
            match &item {
                status::Item::TreeIndex(_) => staged = true,
                status::Item::IndexWorktree(change) => match change.summary() {
                    Some(Summary::Conflict) => staged = true,
                    Some(Summary::Modified | Summary::TypeChange) => {
                        modified.push(change.rela_path().to_owned())
                    }
                    _ => {}
                },
            }
            if let Some(path) = relevant_path(&item) {
                paths.insert(path);
            }
        }
        if !modified.is_empty() {
            let no_index = gix::index::State::new(self.gix().object_hash());
            let mut by_git = ByGit::of(self, &no_index)?;
            for path in &modified {
                if by_git.encoded(path.as_bstr())? {
                    return Ok(None);
                }
            }
        }
        Ok(Some((paths, staged)))
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
fn relevant_path(item: &status::Item) -> Option<BString> {
    match item {
        status::Item::TreeIndex(change) => Some(change.location().to_owned()),
        status::Item::IndexWorktree(change) => {
            change.summary().map(|_| change.rela_path().to_owned())
        }
    }
}

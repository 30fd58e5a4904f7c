//! A scan of only the paths a change feed reports (see [`crate::git::watch`]): each judged as
//! a scan of its directory would judge it.

use std::collections::BTreeSet;
use std::ops::Range;

use gix::bstr::BString;
use gix::index::entry::{Flags, Mode};

use super::{kind_of, Kind, Scan, Scanner};
use crate::git::error::Result;

impl Scanner<'_> {
    /// Look only at `paths` (relative to the root; files or directories), the paths a change
    /// feed reports as changed since the cache was stored: each is judged as a scan of its
    /// directory would judge it, without reading that directory; a directory that appeared,
    /// went or moved is scanned whole. A file the snapshot has that has other names (hard
    /// links) changed under those too, which no feed names: then the whole worktree is
    /// scanned.
    pub fn run_targeted(&self, paths: &[String]) -> Result<Scan> {
        if self.links_elsewhere(paths) {
            tracing::debug!(
                "change feed: a changed file has other names, scanning the whole worktree"
            );
            return self.run();
        }
        self.run_on(paths)
    }

    /// Whether one of `paths` is a file the snapshot has under other names too (hard
    /// links), which a change feed would not name. Only a name the snapshot has can go
    /// stale unread: a package manager's hard-linked store under an ignored folder (pnpm's
    /// node_modules) is none of its business.
    pub fn links_elsewhere(&self, paths: &[String]) -> bool {
        paths
            .iter()
            .filter(|path| in_worktree(path))
            .any(|path| self.entry(path).is_some() && has_other_names(&self.root.join(path)))
    }

    /// [`Self::run_targeted`] with no look at other names: the caller asked
    /// [`Self::links_elsewhere`].
    pub fn run_on(&self, paths: &[String]) -> Result<Scan> {
        let paths = paths.iter().filter(|path| in_worktree(path));
        let mut scan = Scan::default();
        let mut subtrees = Vec::new();
        // Directories reported whole already: thousands of new files under one new directory
        // are one walk of it, not thousands.
        let mut new_dirs = BTreeSet::new();
        'paths: for path in paths {
            // Up to the first directory the cache knows nothing under: the scan of its
            // parent would report it as a new directory, and go no further.
            for (end, _) in path.match_indices('/') {
                let dir = &path[..end];
                if new_dirs.contains(dir) {
                    continue 'paths;
                }
                if let Some(entry) = self.entry(dir) {
                    if !self.outside(entry) {
                        // A file (or link) that became a directory.
                        scan.changed.insert(dir.into());
                        self.new_dir(dir, &mut new_dirs, &mut scan);
                    }
                    continue 'paths;
                }
                if self.range_under(dir).is_empty() {
                    self.new_dir(dir, &mut new_dirs, &mut scan);
                    continue 'paths;
                }
            }
            let entry = self.entry(path);
            if entry.is_some_and(|e| self.outside(e)) {
                continue;
            }
            if entry.is_some() {
                scan.changed.insert(path.as_str().into());
            }
            let under = self.range_under(path);
            if !under.is_empty() {
                subtrees.push((BString::from(format!("{path}/")), under.clone()));
            }
            match kind_of(&self.root.join(path)) {
                Kind::Dir if under.is_empty() => self.new_dir(path, &mut new_dirs, &mut scan),
                Kind::File if entry.is_none() => scan.unknown.push((path.as_str().into(), false)),
                _ => {}
            }
        }
        if !subtrees.is_empty() {
            let whole = self.run_from(subtrees)?;
            scan.changed.extend(whole.changed);
            scan.unknown.extend(whole.unknown);
        }
        Ok(scan)
    }

    /// Report `dir` as a directory the cache knows nothing in, once, if it is one on disk.
    fn new_dir(&self, dir: &str, reported: &mut BTreeSet<String>, scan: &mut Scan) {
        if !reported.contains(dir) && kind_of(&self.root.join(dir)) == Kind::Dir {
            reported.insert(dir.to_owned());
            scan.unknown.push((dir.into(), true));
        }
    }

    /// The cache entry of `path`, if it has one.
    fn entry(&self, path: &str) -> Option<&gix::index::Entry> {
        self.cache
            .entry_by_path_and_stage(path.into(), gix::index::entry::Stage::Unconflicted)
    }

    /// Whether a scan leaves the entry's file alone: outside the sparse checkout, or a
    /// submodule (its own repository, recorded by the commit in the index).
    pub(super) fn outside(&self, entry: &gix::index::Entry) -> bool {
        entry.flags.contains(Flags::SKIP_WORKTREE) || entry.mode == Mode::COMMIT
    }

    /// The range of cache entries under the directory `dir` (`dir/…`).
    fn range_under(&self, dir: &str) -> Range<usize> {
        let prefix = format!("{dir}/");
        self.cache
            .prefixed_entries_range(prefix.as_str().into())
            .unwrap_or(0..0)
    }
}

/// Whether a path a feed named is one of the worktree's own (not `..`, not git's).
fn in_worktree(path: &str) -> bool {
    !path
        .split('/')
        .any(|part| matches!(part, "" | "." | ".." | ".git"))
}

/// Whether `path` is a file with more than one name.
fn has_other_names(path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_file() && meta.nlink() > 1)
}

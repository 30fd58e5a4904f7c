//! Where a snapshot starts: the last snapshot's cache brought in line with the worktree's
//! index, and the paths to read again. Quick when the index is the one the last snapshot
//! read (see [`IndexSeen`]) and a change feed names what changed: then neither the index
//! nor more of the cache than the entries around those paths is read, and the cost follows
//! the changes, not the repository.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use gix::bstr::{BString, ByteSlice};
use gix::index::entry::{Flags, Stat};

use super::{now, Modes, Staged};
use crate::git::error::{Error, Result};
use crate::git::repo::Repo;
use crate::git::snapshot_cache::index_seen::{FileStamp, IndexSeen};
use crate::git::snapshot_cache::{mode_of, SnapshotCache, StoredCache};
use crate::git::watch::Feed;
use crate::git::worktree_scan::Scanner;
use crate::git::ObjectId;

/// Where a snapshot starts: the last one's cache (in line with the index, when it was
/// read), the paths to read again, and what the index says.
pub(super) struct Start {
    /// The last snapshot's cache: whole, or the entries around the feed's paths.
    pub(super) cache: SnapshotCache,
    /// The worktree's index; `None` when it is the one the last snapshot saw, not read.
    pub(super) index: Option<gix::worktree::Index>,
    /// Paths to read again: changed on disk, or new in the index.
    pub(super) changed: BTreeSet<BString>,
    /// Names on disk the cache does not have (`true` for a directory), for the ignore rules.
    pub(super) unknown: Vec<(BString, bool)>,
    /// Paths the snapshot has and the index does not, for the ignore rules.
    pub(super) untracked: Vec<BString>,
    /// What the index holds besides `HEAD`'s tree.
    pub(super) staged: Staged,
    /// The index as this snapshot saw it, for the next.
    pub(super) seen: Option<IndexSeen>,
    /// When the scan began: stat data taken after it is good from then.
    pub(super) verified: Duration,
}

/// Whether `path` is an ignore or attributes file (any case: a case-insensitive disk reads
/// it so).
fn names_rules(path: &[u8]) -> bool {
    file_name(path).eq_ignore_ascii_case(b".gitignore") || names_attributes(path)
}

/// Whether `path` is an attributes file (any case).
fn names_attributes(path: &[u8]) -> bool {
    file_name(path).eq_ignore_ascii_case(b".gitattributes")
}

/// The last name of `path`.
fn file_name(path: &[u8]) -> &[u8] {
    path.rsplit(|b| *b == b'/').next().unwrap_or(path)
}

impl Repo {
    /// Where a snapshot of this worktree starts, given the stored cache of the last one
    /// (if it describes the tree expected) and the change feed's answer.
    pub(super) fn snapshot_start(
        &self,
        stored: Option<Arc<StoredCache>>,
        feed: &Feed,
        head_tree: ObjectId,
    ) -> Result<Start> {
        match self.quick_start(stored.as_ref(), feed, head_tree)? {
            Some(start) => Ok(start),
            None => self.full_start(stored, feed, head_tree),
        }
    }

    /// A start that reads neither the index nor the whole snapshot cache, whose cost
    /// follows the changes, not the repository: when the index is the one the last
    /// snapshot saw (and was plain, see [`IndexSeen`]), the change feed names what changed,
    /// those paths are few, none has other names, and none is an ignore or attributes file
    /// (which decide again what the untracked paths are, or may leave git to read the
    /// index's copy).
    fn quick_start(
        &self,
        stored: Option<&Arc<StoredCache>>,
        feed: &Feed,
        head_tree: ObjectId,
    ) -> Result<Option<Start>> {
        let (Some(stored), Some(paths)) = (stored, &feed.changed) else {
            return Ok(None);
        };
        let Some(seen) = stored.seen().filter(|seen| seen.holds(self, head_tree)) else {
            return Ok(None);
        };
        if paths.iter().any(|path| names_rules(path.as_bytes())) {
            return Ok(None);
        }
        let Some(cache) = stored.around(paths) else {
            return Ok(None);
        };
        let verified = now();
        let scanner = self.scanner_of(&cache);
        if scanner.links_elsewhere(paths) {
            return Ok(None);
        }
        let scan = scanner.run_on(paths)?;
        let mut found = scan
            .changed
            .iter()
            .chain(scan.unknown.iter().map(|(path, _)| path));
        if found.any(|path| names_rules(path)) {
            return Ok(None);
        }
        tracing::debug!("snapshot: the index is as the last snapshot saw it, not read");
        Ok(Some(Start {
            cache,
            index: None,
            changed: scan.changed,
            unknown: scan.unknown,
            untracked: Vec::new(),
            staged: Staged::default(),
            seen: Some(seen.clone()),
            verified,
        }))
    }

    /// The worktree's scanner against what `cache` last saw, with this repository's modes
    /// (both starts read the worktree the same way).
    fn scanner_of<'a>(&'a self, cache: &'a SnapshotCache) -> Scanner<'a> {
        let modes = Modes::of(self.gix());
        Scanner::new(
            self.workdir(),
            &cache.state,
            cache.verified,
            modes.file_mode,
            modes.trust_ctime,
        )
    }

    /// A start from the worktree's index and the whole snapshot cache (or, without one,
    /// `HEAD` and the index's stat data).
    fn full_start(
        &self,
        stored: Option<Arc<StoredCache>>,
        feed: &Feed,
        head_tree: ObjectId,
    ) -> Result<Start> {
        // Before the read: an index replaced meanwhile then has another checksum than the
        // one read, and is not taken as seen.
        let stamp = FileStamp::of(self);
        let (index, cached) = self.index_and_snapshot_cache(stored)?;
        // The feed's paths are what changed since the stored cache: without it, anything
        // may differ from `HEAD`.
        let paths = feed.changed.as_ref().filter(|_| cached.is_some());
        let mut cache = match cached {
            Some(cache) => cache,
            None => SnapshotCache::from_head(self, head_tree, &index)?,
        };
        let (tracked_elsewhere, untracked) = cache.reconcile(&index);
        tracing::debug!("snapshot: index read, cache reconciled");
        let verified = now();
        let scanner = self.scanner_of(&cache);
        let scan = match paths {
            Some(paths) => {
                tracing::debug!("change feed: {} paths changed", paths.len());
                scanner.run_targeted(paths)?
            }
            None => {
                tracing::debug!("change feed: none, scanning the whole worktree");
                scanner.run()?
            }
        };
        let mut changed = scan.changed;
        // What git stores of a file it does not track follows the attributes as they are:
        // one that changed, came or went has each such file read again.
        let attributes_moved = changed
            .iter()
            .chain(scan.unknown.iter().map(|(path, _)| path))
            .any(|path| names_attributes(path));
        if attributes_moved {
            changed.extend(untracked.iter().cloned());
        }
        changed.extend(tracked_elsewhere);
        changed.extend(self.moved_submodules(&cache));
        let (changes, tree) = self.index_against(head_tree, &index)?;
        let staged = Staged {
            changes,
            tree,
            intent_to_add: index
                .entries()
                .iter()
                .any(|e| e.flags.contains(Flags::INTENT_TO_ADD)),
        };
        let seen = IndexSeen::of(self, stamp, &index, head_tree, staged.changes);
        Ok(Start {
            cache,
            index: Some(index),
            changed,
            unknown: scan.unknown,
            untracked,
            staged,
            seen,
            verified,
        })
    }

    /// The worktree's index, and the stored snapshot cache decoded: two large reads,
    /// independent, so on two cores at once.
    fn index_and_snapshot_cache(
        &self,
        stored: Option<Arc<StoredCache>>,
    ) -> Result<(gix::worktree::Index, Option<SnapshotCache>)> {
        let repo = self.gix();
        let decode = |stored: &StoredCache| {
            let began = std::time::Instant::now();
            let cache = stored.decode();
            let ms = began.elapsed().as_secs_f64() * 1e3;
            tracing::debug!(ms, "snapshot cache read");
            cache
        };
        let (index, cached) = std::thread::scope(|scope| {
            let reading = stored.as_deref().map(|stored| {
                let thread =
                    std::thread::Builder::new().spawn_scoped(scope, move || decode(stored));
                (stored, thread)
            });
            let began = std::time::Instant::now();
            let index = repo.index_or_empty();
            let ms = began.elapsed().as_secs_f64() * 1e3;
            tracing::debug!(ms, "index read");
            // A cache that could not be read is rebuilt, like one that is not there.
            let cached = reading.and_then(|(stored, thread)| match thread {
                Ok(thread) => thread.join().ok().flatten(),
                // No second thread to be had: read here.
                Err(_) => decode(stored),
            });
            (index, cached)
        });
        let index = index.map_err(|e| Error::gix("could not read the index", e))?;
        Ok((index, cached))
    }

    /// The entries `tree` has for `paths` (files, links and submodules), as an index holds
    /// them: each tree on the way read once, however many of the paths pass through it.
    pub(super) fn entries_in(
        &self,
        tree: ObjectId,
        paths: &BTreeSet<BString>,
    ) -> Result<gix::index::State> {
        let mut state = gix::index::State::new(self.gix().object_hash());
        let paths: Vec<&[u8]> = paths.iter().map(|path| path.as_slice()).collect();
        self.push_entries(tree, 0, &paths, &mut state)?;
        Ok(state)
    }

    /// Push to `state`, in order, the entries of `paths` (sorted; the first `depth` bytes of
    /// each name the folder whose tree is `tree`) that `tree` has.
    fn push_entries(
        &self,
        tree: ObjectId,
        depth: usize,
        paths: &[&[u8]],
        state: &mut gix::index::State,
    ) -> Result<()> {
        let object = self
            .gix()
            .find_tree(tree)
            .map_err(|e| Error::gix(format!("could not read tree {tree}"), e))?;
        let decoded = object
            .decode()
            .map_err(|e| Error::gix(format!("could not decode tree {tree}"), e))?;
        let by_name: std::collections::HashMap<&[u8], _> = decoded
            .entries
            .iter()
            .map(|e| (e.filename.as_bytes(), e))
            .collect();
        let mut rest = paths;
        while let Some(first) = rest.first() {
            let tail = &first[depth..];
            let Some(slash) = tail.find_byte(b'/') else {
                let found = by_name.get(tail).filter(|e| !e.mode.is_tree());
                if let Some(e) = found {
                    let (mode, id) = (mode_of(e.mode.kind()), e.oid.to_owned());
                    let flags = gix::index::entry::Flags::empty();
                    state.dangerously_push_entry(Stat::default(), id, flags, mode, first.as_bstr());
                }
                rest = &rest[1..];
                continue;
            };
            // Sorted, the paths under one folder come together.
            let folder = &tail[..=slash];
            let under = rest
                .iter()
                .take_while(|p| p[depth..].starts_with(folder))
                .count();
            let subtree = by_name.get(&folder[..slash]).filter(|e| e.mode.is_tree());
            if let Some(e) = subtree {
                let id = e.oid.to_owned();
                self.push_entries(id, depth + folder.len(), &rest[..under], state)?;
            }
            rest = &rest[under..];
        }
        Ok(())
    }

    /// The submodules whose checked-out commit is not the one the snapshot has: `git add -A`
    /// records what is checked out, and no scan looks inside a submodule.
    fn moved_submodules(&self, cache: &SnapshotCache) -> Vec<gix::bstr::BString> {
        use gix::index::entry::{Flags, Mode};
        let state = &cache.state;
        state
            .entries()
            .iter()
            .filter(|e| e.mode == Mode::COMMIT && !e.flags.contains(Flags::SKIP_WORKTREE))
            .filter(|e| {
                self.submodule_head(e.path(state))
                    .is_some_and(|head| head != e.id)
            })
            .map(|e| e.path(state).to_owned())
            .collect()
    }
}

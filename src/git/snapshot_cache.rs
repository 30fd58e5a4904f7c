//! The snapshot cache: a private index of a worktree's last snapshot, so the next snapshot
//! reads only the files that changed since.
//!
//! Why not the worktree's own index: it is the agent's, so git-bmad never writes it, and its
//! stat cache is often of no use. Right after git checks files out (a `start`, a rollback,
//! an agent's `git checkout`) it writes the index in the same second as the files: every
//! entry is "racy" and must be read again, and stays so until something rewrites the index.
//! It also knows nothing of untracked files, which every snapshot would read again.
//!
//! The cache holds every entry of the last snapshot's tree (untracked files included) with
//! the stat data seen when that file was read, and is rewritten after each snapshot, so it
//! settles within a second whatever git did. It is only a cache: it is used when its tree is
//! the one the caller expects (the last checkpoint's), an entry whose file may have changed
//! is read again, and a missing, torn or foreign file is rebuilt from `HEAD` and the
//! worktree's index. It never decides what a snapshot holds, only what must be re-read.
//!
//! File: `<worktree git dir>/bmad-snapshot-index`: a header line
//! `bmad-snapshot-index 2 <tree> <verified> <length>` (`verified`: when its stat data was
//! known good, as `<seconds>.<nanoseconds>`), then a git index (version 2) of `length` bytes.

use std::path::PathBuf;
use std::time::Duration;

use gix::bstr::BStr;
use gix::index::entry::{Flags, Mode, Stat};

use super::error::{Error, Result};
use super::repo::Repo;
use super::ObjectId;

const FILE: &str = "bmad-snapshot-index";
const MAGIC: &str = "bmad-snapshot-index 2";

/// The entries of a snapshot's tree, with the stat data of the files they were read from.
pub(super) struct SnapshotCache {
    /// The snapshot tree the entries describe.
    pub tree: ObjectId,
    /// When the stat data was known good (since the Unix epoch); see
    /// [`super::worktree_scan::trusted`].
    pub verified: Duration,
    /// One stage-0 entry per file, link and submodule of `tree`, sorted by path.
    pub state: gix::index::State,
    /// Entries for paths `state` lacks, added in one sort when the cache is stored.
    added: Vec<(String, ObjectId, Mode, Stat)>,
}

impl SnapshotCache {
    fn path(repo: &Repo) -> PathBuf {
        repo.git_dir().join(FILE)
    }

    /// The cache of this worktree, if it describes `tree` and can be read.
    pub fn load(repo: &Repo, tree: ObjectId) -> Option<SnapshotCache> {
        let path = Self::path(repo);
        let bytes = std::fs::read(&path).ok()?;
        let newline = bytes.iter().position(|b| *b == b'\n')?;
        let header = std::str::from_utf8(&bytes[..newline]).ok()?;
        let rest = header.strip_prefix(MAGIC)?;
        let mut fields = rest.split_whitespace();
        let cached = ObjectId::from_hex(fields.next()?.as_bytes()).ok()?;
        let (secs, nanos) = fields.next()?.split_once('.')?;
        let verified = Duration::new(secs.parse().ok()?, nanos.parse().ok()?);
        let length: usize = fields.next()?.parse().ok()?;
        let body = &bytes[newline + 1..];
        if cached != tree || body.len() != length {
            return None;
        }
        let decoded = gix::index::State::from_bytes(
            body,
            filetime::FileTime::from_unix_time(verified.as_secs() as i64, verified.subsec_nanos()),
            repo.gix().object_hash(),
            Default::default(),
        );
        let (state, _) = match decoded {
            Ok(decoded) => decoded,
            Err(e) => {
                tracing::debug!("snapshot cache {}: unreadable: {e}", path.display());
                return None;
            }
        };
        let sound = state.entries().iter().all(|e| e.stage_raw() == 0)
            && state
                .entries()
                .windows(2)
                .all(|w| w[0].path(&state).cmp(w[1].path(&state)) == std::cmp::Ordering::Less);
        sound.then_some(SnapshotCache {
            tree,
            verified,
            state,
            added: Vec::new(),
        })
    }

    /// A cache for `HEAD`'s tree, taking the stat data of the worktree index's entries
    /// that record the same content, as known good when git wrote that index. Files the
    /// index marks as outside the sparse checkout stay so.
    pub fn from_head(repo: &Repo, head_tree: ObjectId, index: &gix::index::State) -> Result<Self> {
        let mut state: gix::index::State = repo
            .gix()
            .index_from_tree(&head_tree)
            .map_err(|e| Error::gix(format!("could not read tree {head_tree} as an index"), e))?
            .into();
        let (entries, paths) = state.entries_mut_and_pathbacking();
        for entry in entries.iter_mut() {
            let path = entry.path_in(paths);
            entry.stat = Stat::default();
            let Some(theirs) = index
                .entry_index_by_path_and_stage(path, gix::index::entry::Stage::Unconflicted)
                .map(|i| &index.entries()[i])
            else {
                continue;
            };
            if theirs.id == entry.id && theirs.mode == entry.mode {
                entry.stat = theirs.stat;
            }
            entry.flags.set(
                Flags::SKIP_WORKTREE,
                theirs.flags.contains(Flags::SKIP_WORKTREE),
            );
        }
        let stamp = index.timestamp();
        Ok(SnapshotCache {
            tree: head_tree,
            verified: Duration::new(
                u64::try_from(stamp.unix_seconds()).unwrap_or(0),
                stamp.nanoseconds(),
            ),
            state,
            added: Vec::new(),
        })
    }

    /// Bring the cache in line with the worktree's index: the sparse checkout's bounds, and
    /// which of its paths the index tracks. Returns the paths the index has and the snapshot
    /// lacks (to be read) and the paths the snapshot has that the index does not (to be
    /// checked against the ignore rules).
    pub fn reconcile(&mut self, index: &gix::index::State) -> (Vec<String>, Vec<String>) {
        let mut seen = vec![false; self.state.entries().len()];
        let mut missing = Vec::new();
        // Both lists are sorted by path: one pass over each.
        let mut cursor = 0;
        for theirs in index.entries() {
            let path = theirs.path(index);
            if theirs.mode == Mode::DIR {
                // A sparse index: one entry for a whole directory outside the cone.
                let range = self.state.prefixed_entries_range(path);
                for i in range.unwrap_or(0..0) {
                    seen[i] = true;
                    self.state.entries_mut()[i]
                        .flags
                        .insert(Flags::SKIP_WORKTREE);
                }
                continue;
            }
            let (state, entries) = (&self.state, self.state.entries());
            while cursor < entries.len() && entries[cursor].path(state) < path {
                cursor += 1;
            }
            let found = (cursor < entries.len() && entries[cursor].path(state) == path)
                .then_some(cursor)
                .ok_or(());
            match found {
                Ok(i) => {
                    seen[i] = true;
                    let skip = theirs.flags.contains(Flags::SKIP_WORKTREE);
                    self.state.entries_mut()[i]
                        .flags
                        .set(Flags::SKIP_WORKTREE, skip);
                    let ours = &self.state.entries()[i];
                    let submodule_moved = theirs.mode == Mode::COMMIT
                        && (ours.mode != Mode::COMMIT || ours.id != theirs.id);
                    if theirs.stage_raw() != 0 || submodule_moved {
                        missing.push(path.to_string());
                    }
                }
                Err(_) if theirs.flags.contains(Flags::SKIP_WORKTREE) => {}
                Err(_) => missing.push(path.to_string()),
            }
        }
        missing.dedup();
        let untracked = self
            .state
            .entries()
            .iter()
            .zip(seen)
            .filter(|(_, seen)| !seen)
            .map(|(e, _)| e.path(&self.state).to_string())
            .collect();
        (missing, untracked)
    }

    /// What the snapshot has at `path`.
    pub fn entry(&self, path: &str) -> Option<(ObjectId, Mode)> {
        let i = self.state.entry_index_by_path(BStr::new(path)).ok()?;
        let e = &self.state.entries()[i];
        Some((e.id, e.mode))
    }

    /// Record `path` as holding `id` (`mode`), read from a file with `stat`; or drop it.
    pub fn set(&mut self, path: &str, entry: Option<(ObjectId, Mode, Stat)>) {
        let at = self.state.entry_index_by_path(BStr::new(path));
        match (at, entry) {
            (Ok(i), Some((id, mode, stat))) => {
                let e = &mut self.state.entries_mut()[i];
                (e.id, e.mode, e.stat) = (id, mode, stat);
                e.flags.remove(Flags::SKIP_WORKTREE);
            }
            (Ok(i), None) => {
                self.state.remove_entry_at_index(i);
            }
            (Err(_), Some((id, mode, stat))) => self.added.push((path.to_owned(), id, mode, stat)),
            (Err(_), None) => {}
        }
    }

    /// Write the cache for `tree`, its stat data known good at `verified`; no fsync: a cache
    /// a crash tears is found torn and rebuilt.
    pub fn store(mut self, repo: &Repo, tree: ObjectId, verified: Duration) -> Result<()> {
        if !self.added.is_empty() {
            for (path, id, mode, stat) in std::mem::take(&mut self.added) {
                self.state
                    .dangerously_push_entry(stat, id, Flags::empty(), mode, BStr::new(&path));
            }
            self.state.sort_entries();
        }
        let mut body = Vec::new();
        self.state
            .write_to(
                &mut body,
                gix::index::write::Options {
                    extensions: gix::index::write::Extensions::None,
                    skip_hash: true,
                },
            )
            .map_err(|e| Error::gix("could not encode the snapshot cache", e))?;
        // The trailing checksum, all zeros as with `index.skipHash`: the header's length
        // catches a torn file, and hashing 1 MB on every checkpoint would cost more than it finds.
        body.resize(body.len() + repo.gix().object_hash().len_in_bytes(), 0);
        let mut bytes = format!(
            "{MAGIC} {tree} {}.{:09} {}\n",
            verified.as_secs(),
            verified.subsec_nanos(),
            body.len()
        )
        .into_bytes();
        bytes.extend_from_slice(&body);
        let path = Self::path(repo);
        crate::fs::replace_unsynced(&path, &bytes)
            .map_err(|e| Error::io("could not write the snapshot cache", &path, e))
    }
}

/// The index mode of a tree entry kind.
pub(super) fn mode_of(kind: gix::object::tree::EntryKind) -> Mode {
    use gix::object::tree::EntryKind;
    match kind {
        EntryKind::Tree => Mode::DIR,
        EntryKind::Blob => Mode::FILE,
        EntryKind::BlobExecutable => Mode::FILE_EXECUTABLE,
        EntryKind::Link => Mode::SYMLINK,
        EntryKind::Commit => Mode::COMMIT,
    }
}

/// The tree entry kind of an index mode.
pub(super) fn tree_kind(mode: Mode) -> gix::object::tree::EntryKind {
    use gix::object::tree::EntryKind;
    match mode {
        Mode::SYMLINK => EntryKind::Link,
        Mode::FILE_EXECUTABLE => EntryKind::BlobExecutable,
        Mode::COMMIT => EntryKind::Commit,
        Mode::DIR => EntryKind::Tree,
        _ => EntryKind::Blob,
    }
}

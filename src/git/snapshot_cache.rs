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
//! File: `bmad-snapshot-index` in the worktree's folder of caches (see
//! [`Repo::snapshot_cache_dir`], out of a contained step's reach): a header line
//! `bmad-snapshot-index 3 <tree> <verified> <length> <index> [<feed>]` (`verified`: when its
//! stat data was known good, as `<seconds>.<nanoseconds>`; `index`: the worktree's index as
//! that snapshot saw it, or `-`, see [`index_seen`]; `feed`: the change feed's token taken
//! before the snapshot was read, see [`super::watch`]), then a git index (version 2 or 3)
//! of `length` bytes, then the offset of every 64th of its entries (8 bytes each,
//! little-endian), so that a snapshot of a few changed paths decodes only the entries
//! around them (see [`entries`]).
//!
//! Rewriting the whole index after every snapshot cost as much as reading it (3 MB on a
//! 40,000-file worktree), so most snapshots write only what changed since that file, to
//! `bmad-snapshot-index.delta`: a header line
//! `bmad-snapshot-delta 3 <tree> <verified> <length> <crc32> <index> [<feed>]`, then `length`
//! bytes (whose CRC-32 is `crc32`): the base file's header line and one record per changed
//! path, NUL-terminated: `<mode> <id> <mtime> <ctime> <dev> <ino> <uid> <gid> <size> <path>`
//! (times as `<seconds>.<nanoseconds>`), or `- <path>` for a path the snapshot no longer
//! has. It is overwritten in place, so no checkpoint creates or deletes a file for it; the
//! length and checksum catch what a crash or two writers at once leave half-written. A
//! delta counts only with the base it names; once it holds more than a sixteenth of the
//! entries the whole index is written again and the delta removed.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::index::entry::{Flags, Mode, Stat};

use super::error::{Error, Result};
use super::repo::Repo;
use super::ObjectId;

mod delta;
mod entries;
pub(super) mod index_seen;

use delta::Delta;
use entries::Entries;
use index_seen::IndexSeen;

const FILE: &str = "bmad-snapshot-index";
const DELTA_FILE: &str = "bmad-snapshot-index.delta";
const MAGIC: &str = "bmad-snapshot-index 3";
const DELTA_MAGIC: &str = "bmad-snapshot-delta 3";
/// Up to this many changed paths a delta is written whatever the cache's size.
const DELTA_MIN: usize = 64;

/// What the cache keeps for one path: the object, its mode, and the stat data of the file
/// it was read from.
pub(super) type Cached = (ObjectId, Mode, Stat);

/// The entries of a snapshot's tree, with the stat data of the files they were read from.
pub(super) struct SnapshotCache {
    /// The snapshot tree the entries describe.
    pub tree: ObjectId,
    /// When the stat data was known good (since the Unix epoch); see
    /// [`super::worktree_scan::trusted`].
    pub verified: Duration,
    /// One stage-0 entry per file, link and submodule of `tree`, sorted by path; only
    /// those around the paths a snapshot looks at when the cache is `partial`.
    pub state: gix::index::State,
    /// Entries for paths `state` lacks, added in one sort when the cache is stored.
    added: Vec<(BString, Cached)>,
    /// The header line of the full file `state` was read from, and the paths changed since
    /// (in its delta, or by [`Self::set`]): what a delta must hold. `None` when there is no
    /// full file to build on.
    base: Option<(String, BTreeSet<BString>)>,
    /// When `state` holds only some entries: the stored cache they were taken from, whose
    /// others a full write takes from there.
    partial: Option<Arc<StoredCache>>,
}

/// The cache as stored: the full file mapped, not decoded, and its delta read.
pub(super) struct StoredCache {
    bytes: memmap2::Mmap,
    /// The full file's header line, which a delta names.
    header: String,
    body: Range<usize>,
    table: Range<usize>,
    hash: gix::hash::Kind,
    /// The snapshot tree it describes (the delta's, when there is one).
    tree: ObjectId,
    verified: Duration,
    seen: Option<IndexSeen>,
    /// The change feed's token saved with the snapshot, as [`super::watch::Token::field`]
    /// wrote it.
    feed: Option<String>,
    /// The delta's records, to apply over the full file's entries.
    records: Vec<(BString, Option<Cached>)>,
}

impl StoredCache {
    /// The cache in `dir` (see [`Repo::snapshot_cache_dir`]), if it describes `tree` and is
    /// whole.
    pub fn open(dir: &Path, hash: gix::hash::Kind, tree: ObjectId) -> Option<StoredCache> {
        let bytes = map(&dir.join(FILE))?;
        let newline = bytes.iter().position(|b| *b == b'\n')?;
        let header = std::str::from_utf8(&bytes[..newline]).ok()?.to_owned();
        let mut fields = header.strip_prefix(MAGIC)?.split_whitespace();
        let cached = ObjectId::from_hex(fields.next()?.as_bytes()).ok()?;
        let verified = parse_time(fields.next()?)?;
        let length: usize = fields.next()?.parse().ok()?;
        let seen = IndexSeen::parse(fields.next()?);
        let feed = fields.next().map(str::to_owned);
        let body = newline + 1..(newline + 1).checked_add(length)?;
        let table = body.end..bytes.len();
        Entries::new(bytes.get(body.clone())?, &bytes[table.clone()], hash)?;
        let mut stored = StoredCache {
            header,
            body,
            table,
            hash,
            tree: cached,
            verified,
            seen,
            feed,
            records: Vec::new(),
            bytes,
        };
        let delta = crate::fs::read_private(&dir.join(DELTA_FILE))
            .ok()
            .and_then(|delta| Delta::parse(&delta, &stored.header));
        if let Some(delta) = delta {
            stored.tree = delta.tree;
            stored.verified = delta.verified;
            stored.seen = delta.seen;
            stored.feed = delta.feed;
            stored.records = delta.records;
        }
        (stored.tree == tree).then_some(stored)
    }

    /// The change feed's token saved with the last snapshot.
    pub fn feed(&self) -> Option<&str> {
        self.feed.as_deref()
    }

    /// The worktree's index as the last snapshot saw it.
    pub fn seen(&self) -> Option<&IndexSeen> {
        self.seen.as_ref()
    }

    fn entries(&self) -> Option<Entries<'_>> {
        Entries::new(
            &self.bytes[self.body.clone()],
            &self.bytes[self.table.clone()],
            self.hash,
        )
    }

    /// Every entry, decoded.
    pub fn decode(&self) -> Option<SnapshotCache> {
        // Read ahead of the decode, as one sequential read (ignored where not supported).
        let _ = self.bytes.advise(memmap2::Advice::PopulateRead);
        let state = self.decode_body(&self.bytes[self.body.clone()])?;
        Some(self.with_records(state, None))
    }

    /// The entries around `paths` (the paths a change feed named), if not too many:
    /// each path's own and every entry under it, and for each folder on the way its own
    /// entry (a file it replaced) and one under it that is still there (that it has any):
    /// all a scan of those paths looks up.
    pub fn around(self: &Arc<Self>, paths: &[String]) -> Option<SnapshotCache> {
        // More would be as many as a delta may hold: then the whole is read.
        let limit = DELTA_MIN.max(self.len() / 16);
        let body = &self.bytes[self.body.clone()];
        let entries = self.entries()?;
        let gone: BTreeSet<&[u8]> = self
            .records
            .iter()
            .filter(|(_, entry)| entry.is_none())
            .map(|(path, _)| path.as_slice())
            .collect();
        let mut picked = std::collections::BTreeMap::new();
        let mut pick = |(_, raw): (&[u8], Range<usize>)| {
            picked.insert(raw.start, raw);
            picked.len() <= limit
        };
        let mut under = Vec::new();
        for path in paths {
            let path = path.as_bytes();
            if let Some(raw) = entries.find(path) {
                pick(raw);
            }
            under.clear();
            under.extend_from_slice(path);
            under.push(b'/');
            if !entries.under(&under).all(&mut pick) {
                return None;
            }
            for end in path.find_iter("/") {
                let dir = &path[..end];
                if let Some(raw) = entries.find(dir) {
                    pick(raw);
                }
                under.clear();
                under.extend_from_slice(dir);
                under.push(b'/');
                if let Some(raw) = entries.under(&under).find(|(p, _)| !gone.contains(p)) {
                    pick(raw);
                }
            }
        }
        if picked.len() > limit {
            return None;
        }
        let raws: Vec<Range<usize>> = picked.into_values().collect();
        let state = self.decode_body(&entries::body_of(body, &raws, self.hash))?;
        Some(self.with_records(state, Some(Arc::clone(self))))
    }

    /// The entries of an index body, if it decodes and is as the cache writes them: one
    /// stage-0 entry per path, sorted.
    fn decode_body(&self, body: &[u8]) -> Option<gix::index::State> {
        let stamp = filetime::FileTime::from_unix_time(
            self.verified.as_secs() as i64,
            self.verified.subsec_nanos(),
        );
        let (state, _) =
            match gix::index::State::from_bytes(body, stamp, self.hash, Default::default()) {
                Ok(decoded) => decoded,
                Err(e) => {
                    tracing::debug!("snapshot cache: unreadable: {e}");
                    return None;
                }
            };
        let sound = state.entries().iter().all(|e| e.stage_raw() == 0)
            && state
                .entries()
                .windows(2)
                .all(|w| w[0].path(&state).cmp(w[1].path(&state)) == std::cmp::Ordering::Less);
        sound.then_some(state)
    }

    /// The cache of `state` (the full file's entries, or some) with the delta applied.
    fn with_records(
        &self,
        state: gix::index::State,
        partial: Option<Arc<StoredCache>>,
    ) -> SnapshotCache {
        let mut cache = SnapshotCache {
            tree: self.tree,
            verified: self.verified,
            state,
            added: Vec::new(),
            base: Some((self.header.clone(), BTreeSet::new())),
            partial,
        };
        for (path, entry) in &self.records {
            cache.set(path.as_bstr(), *entry);
        }
        cache.settle_added();
        cache
    }

    /// How many entries the full file has.
    fn len(&self) -> usize {
        self.entries().map_or(0, |e| e.len())
    }
}

impl SnapshotCache {
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
            base: None,
            partial: None,
        })
    }

    /// Bring the cache in line with the worktree's index: the sparse checkout's bounds, and
    /// which of its paths the index tracks. Returns the paths the index has and the snapshot
    /// lacks (to be read) and the paths the snapshot has that the index does not (to be
    /// checked against the ignore rules).
    pub fn reconcile(&mut self, index: &gix::index::State) -> (Vec<BString>, Vec<BString>) {
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
                    // Assume-unchanged: the index holds it too.
                    let assumed = theirs.flags.contains(Flags::ASSUME_VALID);
                    let ours = &self.state.entries()[i];
                    // Marked skip-worktree, a path is what the index holds; unmarked, what
                    // the disk does. A mark set or cleared changes which with no write a
                    // feed could hear: held by the index, the content is compared; on disk,
                    // an entry with no stat data (one the index held) cannot be vouched for.
                    let held_by_index =
                        (skip || assumed) && (ours.id, ours.mode) != (theirs.id, theirs.mode);
                    let unvouched =
                        !skip && ours.mode != Mode::COMMIT && ours.stat == Stat::default();
                    let submodule_moved = theirs.mode == Mode::COMMIT
                        && (ours.mode != Mode::COMMIT || ours.id != theirs.id);
                    if (skip || assumed) && ours.stat != Stat::default() {
                        // Its file may change unread from now on: its stat data is void.
                        let (id, mode) = (ours.id, ours.mode);
                        self.set(path, Some((id, mode, Stat::default())));
                    }
                    self.state.entries_mut()[i]
                        .flags
                        .set(Flags::SKIP_WORKTREE, skip);
                    if theirs.stage_raw() != 0 || submodule_moved || held_by_index || unvouched {
                        missing.push(path.to_owned());
                    }
                }
                Err(_) if theirs.flags.contains(Flags::SKIP_WORKTREE) => {}
                Err(_) => missing.push(path.to_owned()),
            }
        }
        missing.dedup();
        let untracked = self
            .state
            .entries()
            .iter()
            .zip(seen)
            .filter(|(_, seen)| !seen)
            .map(|(e, _)| e.path(&self.state).to_owned())
            .collect();
        (missing, untracked)
    }

    /// What the snapshot has at `path`.
    pub fn entry(&self, path: &BStr) -> Option<(ObjectId, Mode)> {
        let i = self.state.entry_index_by_path(path).ok()?;
        let e = &self.state.entries()[i];
        Some((e.id, e.mode))
    }

    /// Record `path` as holding `id` (`mode`), read from a file with `stat`; or drop it.
    pub fn set(&mut self, path: &BStr, entry: Option<Cached>) {
        if let Some((_, changed)) = &mut self.base {
            changed.insert(path.to_owned());
        }
        let at = self.state.entry_index_by_path(path);
        match (at, entry) {
            (Ok(i), Some((id, mode, stat))) => {
                let e = &mut self.state.entries_mut()[i];
                (e.id, e.mode, e.stat) = (id, mode, stat);
                e.flags.remove(Flags::SKIP_WORKTREE);
            }
            (Ok(i), None) => {
                self.state.remove_entry_at_index(i);
            }
            (Err(_), Some(entry)) => self.added.push((path.to_owned(), entry)),
            (Err(_), None) => self.added.retain(|(queued, _)| queued != path),
        }
    }

    /// Entries [`Self::set`] queued for paths `state` lacked, merged in. Not a sort of the
    /// whole, which on each load and store compared every entry and took a scratch copy of
    /// them all (0.9 MB at 10,000 files): a merge moves only those after the first new one.
    fn settle_added(&mut self) {
        if self.added.is_empty() {
            return;
        }
        let mut added = std::mem::take(&mut self.added);
        // The last entry set for a path is the one that counts.
        added.reverse();
        added.sort_by(|a, b| a.0.cmp(&b.0));
        added.dedup_by(|later, kept| later.0 == kept.0);
        let state = &self.state;
        let slots: Vec<usize> = added
            .iter()
            .map(|(path, _)| {
                let path = path.as_bstr();
                state.entries().partition_point(|e| e.path(state) < path)
            })
            .collect();
        let head = state.entries().len();
        for (path, (id, mode, stat)) in added {
            self.state
                .dangerously_push_entry(stat, id, Flags::empty(), mode, path.as_bstr());
        }
        merge_sorted_tail(self.state.entries_mut(), head, &slots);
    }

    /// Write the cache for `tree`, its stat data known good at `verified`, with the index
    /// as this snapshot saw it and the change feed's token `feed`: only the paths changed
    /// since the full file while they are few, else the full file. No fsync: a cache a
    /// crash tears is found torn and rebuilt.
    pub fn store(
        mut self,
        repo: &Repo,
        tree: ObjectId,
        verified: Duration,
        seen: Option<&IndexSeen>,
        feed: Option<&str>,
    ) -> Result<()> {
        self.settle_added();
        let dir = repo.snapshot_cache_dir();
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io("could not make the snapshot cache's folder", &dir, e))?;
        let delta_path = dir.join(DELTA_FILE);
        // A field of a header line: one word.
        let feed = feed.filter(|f| !f.is_empty() && !f.contains(char::is_whitespace));
        let feed = feed.map(|f| format!(" {f}")).unwrap_or_default();
        let tail = format!(" {}{feed}", IndexSeen::field(seen));
        let entries = match &self.partial {
            Some(stored) => stored.len(),
            None => self.state.entries().len(),
        };
        if let Some((base, changed)) = &self.base {
            if changed.len() <= DELTA_MIN.max(entries / 16) {
                let head = format!("{DELTA_MAGIC} {tree} {}", format_time(verified));
                let bytes = Delta::encode(&self.state, &head, &tail, base, changed);
                return crate::fs::overwrite_unsynced(&delta_path, &bytes)
                    .map_err(|e| Error::io("could not write the snapshot cache", &delta_path, e));
            }
        }
        let state = self.into_whole()?;
        let mut body = Vec::new();
        state
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
        let hash = repo.gix().object_hash();
        body.resize(body.len() + hash.len_in_bytes(), 0);
        let table = Entries::table_of(&body, hash).ok_or_else(|| {
            Error::Corrupt("the snapshot cache just encoded cannot be walked".into())
        })?;
        let mut bytes = format!(
            "{MAGIC} {tree} {} {}{tail}\n",
            format_time(verified),
            body.len()
        )
        .into_bytes();
        bytes.extend_from_slice(&body);
        bytes.extend_from_slice(&table);
        let path = dir.join(FILE);
        crate::fs::replace_unsynced(&path, &bytes)
            .map_err(|e| Error::io("could not write the snapshot cache", &path, e))?;
        // A delta names the full file it builds on, so a stale one left by a crash here is
        // ignored; removing it is tidiness.
        match std::fs::remove_file(&delta_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(
                "could not remove the snapshot cache delta",
                &delta_path,
                e,
            )),
            _ => Ok(()),
        }
    }

    /// Every entry: `state`, or when it holds only some, the stored file's with every path
    /// changed since (its delta's and this snapshot's) as `state` has it.
    fn into_whole(self) -> Result<gix::index::State> {
        let SnapshotCache {
            tree,
            verified,
            state,
            base,
            partial,
            ..
        } = self;
        let Some(stored) = partial else {
            return Ok(state);
        };
        let decoded = stored.decode_body(&stored.bytes[stored.body.clone()]);
        let mut whole = SnapshotCache {
            tree,
            verified,
            state: decoded.ok_or_else(|| {
                Error::Corrupt("the snapshot cache read a moment ago is unreadable".into())
            })?,
            added: Vec::new(),
            base: None,
            partial: None,
        };
        for path in base.iter().flat_map(|(_, changed)| changed) {
            let entry = state.entry_by_path(path.as_bstr());
            whole.set(path.as_bstr(), entry.map(|e| (e.id, e.mode, e.stat)));
        }
        whole.settle_added();
        Ok(whole.state)
    }
}

/// Where caches live: one folder per worktree, named as its git dir is under the common
/// dir (the main worktree's is the top one).
const CACHES: &str = "bmad/snapshot";
/// Beside a cache: the way in it was made under (see [`Repo::way_in`]).
const WAY_IN: &str = "bmad-snapshot-way-in";

impl Repo {
    /// The folder of this worktree's snapshot cache: in the common git dir, which a
    /// contained step cannot write (its own git dir it can), so that what decides which
    /// files a checkpoint reads again is git-bmad's own, as it saw the files.
    pub(super) fn snapshot_cache_dir(&self) -> PathBuf {
        let caches = self.common_dir().join(CACHES);
        match self.git_dir().strip_prefix(self.common_dir()) {
            Ok(own) => caches.join(own),
            // A git dir outside the common one (not git's layout): its own, as before.
            Err(_) => self.git_dir().to_owned(),
        }
    }

    /// What decides how a file goes in besides the worktree's own attributes files, as
    /// text: the settings of line endings, file modes, links and filters, and the
    /// attributes files outside the worktree (each by its stamp). A cache made under other
    /// ones is not trusted: git would store its files otherwise now.
    pub(super) fn way_in(&self) -> String {
        use std::fmt::Write as _;
        use std::os::unix::fs::MetadataExt;
        let repo = self.gix();
        let config = repo.config_snapshot();
        let mut out = String::new();
        for key in [
            "core.autocrlf",
            "core.eol",
            "core.safecrlf",
            "core.checkRoundtripEncoding",
            "core.attributesFile",
            "core.fileMode",
            "core.symlinks",
            "core.ignoreCase",
        ] {
            let _ = writeln!(out, "{key}={:?}", config.string(key));
        }
        for section in config
            .plumbing()
            .sections_by_name("filter")
            .into_iter()
            .flatten()
        {
            let _ = writeln!(out, "{}", section.to_bstring());
        }
        let mut files = repo.attribute_global_paths().unwrap_or_default();
        files.push(self.common_dir().join("info/attributes"));
        for file in files {
            let stamp =
                std::fs::metadata(&file).map(|m| (m.ino(), m.mtime(), m.mtime_nsec(), m.size()));
            let _ = writeln!(out, "{}: {:?}", file.display(), stamp.ok());
        }
        out
    }

    /// Whether the snapshot cache was made under `way_in` (see [`Repo::way_in`]).
    pub(super) fn cache_made_under(&self, way_in: &str) -> bool {
        std::fs::read(self.snapshot_cache_dir().join(WAY_IN)).is_ok_and(|b| b == way_in.as_bytes())
    }

    /// Record that the snapshot cache now stored was made under `way_in`. Written after the
    /// cache: a kill between the two has the next snapshot read everything again.
    pub(super) fn remember_way_in(&self, way_in: &str) {
        let path = self.snapshot_cache_dir().join(WAY_IN);
        if let Err(e) = crate::fs::write_atomically(&path, way_in.as_bytes(), None) {
            tracing::warn!("{}: {e}", path.display());
        }
    }

    /// Remove the snapshot caches of worktrees git no longer has (removed, pruned): each is
    /// as large as the worktree's index. Only tidiness: a cache is never trusted for a tree
    /// other than its own.
    pub(super) fn forget_caches_of_gone_worktrees(&self) {
        let caches = self.common_dir().join(CACHES).join("worktrees");
        let Ok(entries) = std::fs::read_dir(&caches) else {
            return;
        };
        for entry in entries.flatten() {
            let gone = !self
                .common_dir()
                .join("worktrees")
                .join(entry.file_name())
                .exists();
            if gone {
                if let Err(e) = std::fs::remove_dir_all(entry.path()) {
                    tracing::warn!("{}: {e}", entry.path().display());
                }
            }
        }
    }
}

/// The bytes of the full cache file, mapped rather than copied: a quick snapshot reads a
/// few pages of it, a full one all once (see [`StoredCache::decode`]), and neither keeps any.
fn map(path: &Path) -> Option<memmap2::Mmap> {
    let file = crate::fs::open_private(path).ok()?;
    // SAFETY: the file is only ever replaced by a rename, never written in place, so the
    // mapped bytes do not change under the decode; a file a process truncates while it is
    // read is the same risk gix takes with every index it maps.
    unsafe { memmap2::MmapOptions::new().map(&file) }.ok()
}

/// Merge the sorted `items[head..]` in among the sorted `items[..head]`, in place, where
/// `slots[j]` is how many of the first `head` items sort before `items[head + j]`: from the
/// back, so only the items after the first slot move.
fn merge_sorted_tail<T: Clone>(items: &mut [T], head: usize, slots: &[usize]) {
    let tail = items[head..].to_vec();
    let (mut before, mut left, mut write) = (head, tail.len(), items.len());
    while left > 0 {
        write -= 1;
        if before > slots[left - 1] {
            before -= 1;
            items[write] = items[before].clone();
        } else {
            left -= 1;
            items[write] = tail[left].clone();
        }
    }
}

/// `<seconds>.<nanoseconds>`, as the headers keep `verified`.
fn format_time(t: Duration) -> String {
    format!("{}.{:09}", t.as_secs(), t.subsec_nanos())
}

fn parse_time(text: &str) -> Option<Duration> {
    let (secs, nanos) = text.split_once('.')?;
    let nanos: u32 = nanos.parse().ok()?;
    (nanos < 1_000_000_000).then_some(Duration::new(secs.parse().ok()?, nanos))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The merge gives what a sort would, wherever the new items fall.
    #[test]
    fn a_sorted_tail_merges_in_as_a_sort_would() {
        let heads: [&[u32]; 4] = [&[], &[10], &[10, 20, 30], &[10, 20, 30, 40, 50, 60]];
        let tails: [&[u32]; 6] = [
            &[5],
            &[15],
            &[70],
            &[5, 25, 65],
            &[11, 12, 13],
            &[1, 2, 45, 99],
        ];
        for head in heads {
            for tail in tails {
                let mut items: Vec<u32> = head.iter().chain(tail).copied().collect();
                let slots: Vec<usize> = tail
                    .iter()
                    .map(|t| head.partition_point(|h| h < t))
                    .collect();
                merge_sorted_tail(&mut items, head.len(), &slots);
                let mut sorted: Vec<u32> = head.iter().chain(tail).copied().collect();
                sorted.sort();
                assert_eq!(items, sorted, "{head:?} + {tail:?}");
            }
        }
    }

    /// Paths set in any order land sorted among the cached ones, as the index lookups need;
    /// a path set twice keeps the last entry, and one set then dropped is gone.
    #[test]
    fn paths_set_in_any_order_settle_sorted_and_the_last_setting_counts() {
        let id = |n: u8| ObjectId::from_bytes_or_panic(&[n; 20]);
        let mut state = gix::index::State::new(gix::hash::Kind::Sha1);
        for path in ["b/one", "d/two", "f"] {
            state.dangerously_push_entry(
                Stat::default(),
                id(0),
                Flags::empty(),
                Mode::FILE,
                path.into(),
            );
        }
        let mut cache = SnapshotCache {
            tree: id(0),
            verified: Duration::ZERO,
            state,
            added: Vec::new(),
            base: None,
            partial: None,
        };
        let file = |n| Some((id(n), Mode::FILE, Stat::default()));
        cache.set("z".into(), file(1));
        cache.set("a".into(), file(2));
        cache.set("c/new".into(), file(3));
        cache.set("a".into(), file(4));
        cache.set("e".into(), file(5));
        cache.set("e".into(), None);
        cache.set("d/two".into(), None);
        cache.settle_added();
        let state = &cache.state;
        let paths: Vec<_> = state
            .entries()
            .iter()
            .map(|e| e.path(state).to_string())
            .collect();
        assert_eq!(paths, ["a", "b/one", "c/new", "f", "z"]);
        assert_eq!(cache.entry("a".into()), Some((id(4), Mode::FILE)));
        assert_eq!(cache.entry("c/new".into()), Some((id(3), Mode::FILE)));
        assert_eq!(cache.entry("z".into()), Some((id(1), Mode::FILE)));
        assert_eq!(cache.entry("e".into()), None);
    }
}

//! Snapshots of a worktree as a tree object, without touching the index, HEAD or any branch.
//!
//! The tree starts from `HEAD^{tree}` and only the paths that `status` reports as different
//! (staged, modified, deleted, untracked-not-ignored) are re-read from disk. With a valid stat
//! cache the cost follows the number of changed files, not the size of the repository, and
//! ignored files are never read. The index is only ever read: its stat cache is what makes
//! status cheap, and writing it would race with the agent's own `git add`.

use std::sync::Arc;

use gix::bstr::{BStr, ByteSlice};
use gix::index::entry::Stat;
use gix::object::tree::EntryKind;

use super::error::{Error, Result};
use super::ignores::Ignores;
use super::repo::Repo;
use super::snapshot_cache::{mode_of, tree_kind, StoredCache};
use super::worktree_scan::{new_files, on_disk, stat_of};
use super::ObjectId;

mod by_git;
mod changes;
mod staged;
mod start;

use by_git::ByGit;
use start::Start;

pub use changes::Dirt;

/// Judges one changed file (its path, its bytes) before it may enter the object database.
pub type Vet<'a> = &'a mut dyn FnMut(&str, &[u8]) -> bool;

/// How files go in, as `git add` converts them: gix's pipeline, and git itself where gix
/// would store otherwise or cannot (see [`by_git`]).
struct Converters<'r> {
    pipeline: gix::filter::Pipeline<'r>,
    by_git: ByGit<'r>,
}

/// How much of a file a vet sees: a secret past the first 8 MiB of a file is not looked for.
pub const VET_LIMIT: u64 = 8 << 20;

/// A snapshot and the files that were kept out of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vetted {
    /// The snapshot's tree.
    pub tree: ObjectId,
    /// Changed files the vet refused, as `HEAD` has them in `tree`.
    pub refused: Vec<String>,
    /// What the index holds besides `HEAD`'s tree.
    pub staged: Staged,
}

/// What the worktree's index holds besides `HEAD`'s tree, as a snapshot found it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Staged {
    /// Whether the index differs from `HEAD` (staged changes, conflicts), so a checkpoint
    /// must save it too.
    pub changes: bool,
    /// Whether it has intent-to-add entries (`git add -N`), which no tree can hold, so a
    /// checkpoint keeps the index whole.
    pub intent_to_add: bool,
    /// The tree the index describes, where its cache of trees told it (written; a
    /// checkpoint then saves the index without asking git).
    pub tree: Option<ObjectId>,
}

impl Repo {
    /// The tree of this worktree as it is on disk: tracked and untracked files, `.gitignore`d
    /// ones left out; executable bits, symlinks and clean filters as `git add -A` would
    /// record. Every changed file's bytes (the first [`VET_LIMIT`] of them) are shown to `vet`
    /// before any object is written. A file `vet`
    /// refuses never enters the object database: the snapshot keeps the path as `HEAD` has
    /// it (absent, for a new file) and names it in [`Vetted::refused`].
    ///
    /// `since` is the tree of this worktree's previous snapshot, if the caller knows it (the
    /// last checkpoint's): then only what changed since is read, through the snapshot cache
    /// (see [`super::snapshot_cache`]); otherwise what differs from `HEAD` is.
    pub fn snapshot_tree_vetted(
        &self,
        mut vet: Option<Vet<'_>>,
        since: Option<ObjectId>,
    ) -> Result<Vetted> {
        let mut phases = Phases::start();
        let repo = self.gix();
        let head_tree = repo
            .head_tree_id_or_empty()
            .map_err(|e| Error::gix("could not read HEAD's tree", e))?
            .detach();
        let way_in = self.way_in();
        let made_under = self.cache_made_under(&way_in);
        let stored = since
            .filter(|_| made_under)
            .and_then(|tree| {
                StoredCache::open(&self.snapshot_cache_dir(), repo.object_hash(), tree)
            })
            .map(Arc::new);
        // The change feed is asked before the worktree is read: whatever changes from here
        // on is in its next answer.
        let feed = self
            .feed_setting()
            .ask(self, stored.as_deref().and_then(StoredCache::feed));
        phases.done("change feed asked");
        let start = self.snapshot_start(stored, &feed, head_tree)?;
        phases.done("worktree scanned");
        let Start {
            mut cache,
            index,
            mut changed,
            unknown,
            untracked,
            staged,
            seen,
            verified,
        } = start;
        let no_index = gix::index::State::new(repo.object_hash());
        // A quick start reads no index: every ignore file the index has is on disk, where
        // these rules read them first.
        let read = index.as_ref().map(|index| -> &gix::index::State { index });
        let mut ignores = Ignores::of_worktree(repo, read.unwrap_or(&no_index))?;
        changed.extend(new_files(self.workdir(), &mut ignores, unknown)?);
        // A file only the snapshot had (untracked) that the ignore rules now exclude leaves
        // it, as `add -A` on a copy of the index would leave it out.
        let mut now_ignored = Vec::new();
        for path in untracked {
            if ignores.is_ignored(path.as_bstr(), false)? {
                changed.remove(&path);
                now_ignored.push(path);
            }
        }
        phases.done("new files listed");
        // Without the index, what it holds for the paths to store: `HEAD`'s entries, which
        // a quick start's index records exactly.
        let head_entries;
        let index: &gix::index::State = match &index {
            Some(index) => index,
            None => {
                head_entries = self.entries_in(head_tree, &changed)?;
                &head_entries
            }
        };
        let mut converters = Converters {
            pipeline: self.filter_pipeline_with(index)?,
            by_git: ByGit::of(self, index)?,
        };
        let modes = Modes::of(repo);
        phases.done("index entries and filters ready");
        // The new blobs and trees are written together, as one pack when many: at the end,
        // or by the caller when it holds objects itself.
        let own = (!self.is_holding()).then(|| self.holding_objects());
        let held = own.as_ref().unwrap_or(self);
        let mut edits = Vec::new();
        let mut refused = Vec::new();
        for path in &changed {
            let path = path.as_bstr();
            let before = cache.entry(path);
            if let Some((id, mode)) = held_by_index(index, path) {
                if Some((id, mode)) != before {
                    edits.push((path.to_owned(), Some((tree_kind(mode), id))));
                }
                // No stat data: the disk is not what it holds.
                cache.set(path, Some((id, mode, Stat::default())));
                continue;
            }
            let (stored, stat) =
                self.store_file(held, &mut converters, index, path, before, &mut vet)?;
            let entry = match stored {
                Stored::Object(kind, id) => Some((modes.as_git_has_it(kind, index, path), id)),
                Stored::Refused => {
                    refused.push(path.to_owned());
                    continue;
                }
                // A submodule is a directory on disk: the commit checked out in it, or the
                // one the index records while none is.
                Stored::Nothing => gitlink(index, path).map(|recorded| {
                    let checked_out = self.submodule_head(path);
                    (EntryKind::Commit, checked_out.unwrap_or(recorded))
                }),
            };
            let entry = entry.map(|(kind, id)| (id, mode_of(kind), stat));
            if entry.map(|(id, mode, _)| (id, mode)) != before {
                edits.push((
                    path.to_owned(),
                    entry.map(|(id, mode, _)| (tree_kind(mode), id)),
                ));
            }
            cache.set(path, entry);
        }
        for path in now_ignored {
            cache.set(path.as_bstr(), None);
            edits.push((path, None));
        }
        for path in &refused {
            // As HEAD has it, and read again next time (no stat data is trusted for it).
            let entry = self.entry_in(head_tree, path.as_bstr())?;
            edits.push((path.clone(), entry));
            cache.set(
                path.as_bstr(),
                entry.map(|(kind, id)| (id, mode_of(kind), Default::default())),
            );
        }
        phases.done("changed files stored");
        let tree = held.edit_tree_with(cache.tree, &edits)?;
        phases.done("tree edited");
        if let Some(own) = &own {
            own.write_held(&[])?;
        }
        phases.done("objects written");
        // A refused file must be shown to the vet again next time, changed or not (the feed
        // would not name it): no token, so the next snapshot scans everything.
        let token = feed.token_field().filter(|_| refused.is_empty());
        match cache.store(self, tree, verified, seen.as_ref(), token.as_deref()) {
            Ok(()) if !made_under => self.remember_way_in(&way_in),
            Ok(()) => {}
            // Only a cache: this snapshot is whole without it, the next reads more.
            Err(e) => tracing::warn!("{e}"),
        }
        phases.done("snapshot cache stored");
        Ok(Vetted {
            tree,
            refused: refused
                .iter()
                .map(|p| p.to_str_lossy().into_owned())
                .collect(),
            staged,
        })
    }

    /// How `git add` converts files (clean filters, line endings, encodings), with the
    /// attributes read from the worktree and, for a file missing there, from `index`.
    fn filter_pipeline_with(&self, index: &gix::index::State) -> Result<gix::filter::Pipeline<'_>> {
        let repo = self.gix();
        let attributes = repo
            .attributes_only(
                index,
                gix::worktree::stack::state::attributes::Source::WorktreeThenIdMapping,
            )
            .map_err(|e| Error::gix("could not read the attributes", e))?;
        gix::filter::Pipeline::new(repo, attributes.detach())
            .map_err(|e| Error::gix("could not set up the filter pipeline", e))
    }

    /// Read the whole worktree once, so that the next snapshot starts from a settled
    /// snapshot cache and the change feed's token instead of a fresh checkout's index,
    /// whose stat data proves nothing (git wrote it in the same instant as the files).
    /// No file's content is stored: one that differs from `HEAD` is refused, so the next
    /// snapshot reads it again and shows it to its own vet.
    pub fn prime_snapshot_cache(&self) -> Result<()> {
        let mut refuse_all = |_: &str, _: &[u8]| false;
        self.snapshot_tree_vetted(Some(&mut refuse_all), None)
            .map(drop)
    }

    /// `tree` with `edits` made (a path to an entry, or `None` to remove it), written. Each
    /// edited name is checked as git checks a tree's names; the others were when their
    /// trees were written. (gix's own editor checks every entry of every tree it writes,
    /// and that each object exists: 10,000 lookups for a root of 10,000 folders, a third of
    /// a settled checkpoint at 1,000,000 files.)
    fn edit_tree_with(
        &self,
        tree: ObjectId,
        edits: &[(gix::bstr::BString, Option<(EntryKind, ObjectId)>)],
    ) -> Result<ObjectId> {
        if edits.is_empty() {
            return Ok(tree);
        }
        let repo = self.gix();
        let root = repo
            .find_tree(tree)
            .and_then(|root| root.decode().map(gix::objs::Tree::from))
            .map_err(|e| Error::gix(format!("could not edit tree {tree}"), e))?;
        let mut editor = gix::objs::tree::Editor::new(root, &repo.objects, repo.object_hash());
        let protect = self.protected_names();
        for (path, entry) in edits {
            let names = || path.split(|b| *b == b'/');
            match entry {
                Some((kind, id)) => {
                    Self::check_names(path.as_bstr(), *kind == EntryKind::Link, protect)?;
                    editor.upsert(names(), *kind, *id).map(drop)
                }
                // What is removed needs no check: the tree will not have it.
                None => editor.remove(names()).map(drop),
            }
            .map_err(|e| Error::gix(format!("could not record {path} in tree {tree}"), e))?;
        }
        editor
            .write(|tree| repo.write_object(tree).map(|id| id.detach()))
            .map_err(|e| Error::gix(format!("could not write the edit of tree {tree}"), e))
    }

    /// Refuse `path` if git would refuse one of its names in a tree (`link`: the last is a
    /// symbolic link's, which has rules of its own).
    fn check_names(
        path: &BStr,
        link: bool,
        protect: gix::validate::path::component::Options,
    ) -> Result<()> {
        let mut names = path.split(|b| *b == b'/').peekable();
        while let Some(name) = names.next() {
            let last = names.peek().is_none();
            let mode = (last && link).then_some(gix::validate::path::component::Mode::Symlink);
            gix::validate::path::component(name.as_bstr(), mode, protect).map_err(|source| {
                Error::UnrecordableName {
                    path: path.to_str_lossy().into_owned(),
                    source,
                }
            })?;
        }
        Ok(())
    }

    /// Which names git refuses in a tree here: `core.protectNTFS` (on unless turned off),
    /// `core.protectHFS` (on macOS), Windows' reserved names (on Windows).
    fn protected_names(&self) -> gix::validate::path::component::Options {
        let config = self.gix().config_snapshot();
        gix::validate::path::component::Options {
            protect_windows: config
                .boolean("gitoxide.core.protectWindows")
                .unwrap_or(cfg!(windows)),
            protect_hfs: config
                .boolean("core.protectHFS")
                .unwrap_or(cfg!(target_os = "macos")),
            protect_ntfs: config.boolean("core.protectNTFS").unwrap_or(true),
        }
    }

    /// Store what the worktree file `path` holds, as `git add` would (filters applied, a
    /// symlink's target), unless `vet` refuses it; with the file's stat data, taken before
    /// the read (a write in between shows next time). Content the last snapshot had
    /// (`before`) is neither vetted again nor written again.
    fn store_file(
        &self,
        held: &Repo,
        converters: &mut Converters<'_>,
        index: &gix::index::State,
        path: &BStr,
        before: Option<(ObjectId, gix::index::entry::Mode)>,
        vet: &mut Option<Vet<'_>>,
    ) -> Result<(Stored, Stat)> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::PermissionsExt;
        let full = on_disk(self.workdir(), path);
        // What the vet and the errors name: the path as text (a name need not be UTF-8).
        let shown = path.to_str_lossy();
        // Below a symlink is outside the worktree, as git sees it (a directory swapped for a
        // link to one): the link is what is recorded, not what it leads to.
        if self.beyond_symlink(path) {
            return Ok((Stored::Nothing, Stat::default()));
        }
        let meta = match std::fs::symlink_metadata(&full) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((Stored::Nothing, Stat::default()))
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                return Ok((Stored::Nothing, Stat::default()))
            }
            Err(e) => return Err(Error::io("could not read", full, e)),
        };
        let stat = stat_of(&meta);
        let (kind, bytes) = if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&full)
                .map_err(|e| Error::io("could not read the link", &full, e))?;
            (EntryKind::Link, target.as_os_str().as_bytes().to_vec())
        } else if meta.is_file() {
            let kind = if meta.permissions().mode() & 0o100 != 0 {
                EntryKind::BlobExecutable
            } else {
                EntryKind::Blob
            };
            let encoded = converters.by_git.encoded(path)?;
            if meta.len() > VET_LIMIT {
                // Too big to hold in memory: vetted by its head, then streamed to the store.
                if let Some(vet) = vet.as_mut() {
                    if let Some(head) = self.file_head(path)? {
                        if !vet(&shown, &head) {
                            return Ok((Stored::Refused, stat));
                        }
                    }
                }
                // What gix cannot convert, git does, or says why it will not.
                let stored = if encoded {
                    Some(converters.by_git.big_blob(path)?)
                } else {
                    let len = meta.len();
                    match self.stream_big_file(held, &mut converters.pipeline, index, path, len) {
                        Err(Error::Gix { .. }) => Some(converters.by_git.big_blob(path)?),
                        stored => stored?,
                    }
                };
                let stored = stored.map_or(Stored::Nothing, |id| Stored::Object(kind, id));
                return Ok((stored, stat));
            }
            let bytes = if encoded {
                converters.by_git.bytes(path)?
            } else {
                match self.filtered(&mut converters.pipeline, index, path, meta.len()) {
                    Err(Error::Gix { .. }) => converters.by_git.bytes(path)?,
                    bytes => bytes?,
                }
            };
            (kind, bytes)
        } else {
            return Ok((Stored::Nothing, stat));
        };
        let repo = self.gix();
        let id = gix::objs::compute_hash(repo.object_hash(), gix::object::Kind::Blob, &bytes)
            .map_err(|e| Error::gix(format!("could not hash {path}"), e))?;
        if before.map(|(id, _)| id) == Some(id) {
            return Ok((Stored::Object(kind, id), stat));
        }
        if let Some(vet) = vet.as_mut() {
            if !vet(&shown, &bytes) {
                return Ok((Stored::Refused, stat));
            }
        }
        let written = held.write_blob(&bytes)?;
        Ok((Stored::Object(kind, written), stat))
    }

    /// The bytes of the worktree file `path` (`len` on disk) as gix's pipeline stores them.
    fn filtered(
        &self,
        pipeline: &mut gix::filter::Pipeline<'_>,
        index: &gix::index::State,
        path: &BStr,
        len: u64,
    ) -> Result<Vec<u8>> {
        use gix::filter::plumbing::pipeline::convert::ToGitOutcome;
        use std::io::Read;
        use std::os::unix::ffi::OsStrExt;
        let full = on_disk(self.workdir(), path);
        let file = std::fs::File::open(&full).map_err(|e| Error::io("could not read", &full, e))?;
        let mut bytes = Vec::with_capacity(len as usize);
        let read = match pipeline
            .convert_to_git(file, std::ffi::OsStr::from_bytes(path).as_ref(), index)
            .map_err(|e| Error::gix(format!("could not filter {path}"), e))?
        {
            ToGitOutcome::Unchanged(mut file) => file.read_to_end(&mut bytes).map(drop),
            ToGitOutcome::Process(mut out) => {
                out.read_to_end(&mut bytes)
                    .map_err(|e| filter_failed(&full, e))?;
                Ok(())
            }
            ToGitOutcome::Buffer(buf) => {
                bytes.extend_from_slice(buf);
                Ok(())
            }
        };
        read.map_err(|e| Error::io("could not read", &full, e))?;
        Ok(bytes)
    }

    /// The blob of a worktree file too big to hold in memory: streamed when git stores its
    /// bytes as they are (see [`Repo::stream_blob`]), else converted as git converts it.
    fn stream_big_file(
        &self,
        held: &Repo,
        pipeline: &mut gix::filter::Pipeline<'_>,
        index: &gix::index::State,
        path: &BStr,
        len: u64,
    ) -> Result<Option<ObjectId>> {
        use gix::filter::plumbing::pipeline::convert::ToGitOutcome;
        use std::io::Read;
        use std::os::unix::ffi::OsStrExt;
        let full = on_disk(self.workdir(), path);
        // Line endings alone: converted a block at a time, never held whole.
        if let Some(id) = self.stream_blob_with_line_endings(pipeline, &full, path, len, index)? {
            return Ok(Some(id));
        }
        let Ok(file) = std::fs::File::open(&full) else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        let read = match pipeline
            .convert_to_git(file, std::ffi::OsStr::from_bytes(path).as_ref(), index)
            .map_err(|e| Error::gix(format!("could not filter {path}"), e))?
        {
            ToGitOutcome::Unchanged(_) => {
                if let Some(id) = self.stream_blob(&full, len)? {
                    return Ok(Some(id));
                }
                // It changed as it was read: read as it is now.
                std::fs::File::open(&full).and_then(|mut f| f.read_to_end(&mut bytes))
            }
            ToGitOutcome::Process(out) => {
                return self.store_spooled(out, |e| filter_failed(&full, e));
            }
            // Held once (gix's converted form), not copied again.
            ToGitOutcome::Buffer(buf) => return Ok(Some(held.store_big_bytes(buf)?)),
        };
        read.map_err(|e| Error::io("could not read", &full, e))?;
        Ok(Some(held.write_blob(&bytes)?))
    }

    /// The commit checked out in the submodule at `path`, if one is.
    fn submodule_head(&self, path: &BStr) -> Option<ObjectId> {
        let submodule = gix::open(on_disk(self.workdir(), path)).ok()?;
        submodule.head_id().ok().map(|id| id.detach())
    }

    /// The kind and id of `path` in `tree`, if it has it.
    pub(super) fn entry_in(
        &self,
        tree: ObjectId,
        path: impl AsRef<[u8]>,
    ) -> Result<Option<(gix::object::tree::EntryKind, ObjectId)>> {
        use std::os::unix::ffi::OsStrExt;
        let path = path.as_ref();
        let tree_object = self
            .gix()
            .find_tree(tree)
            .map_err(|e| Error::gix(format!("could not read tree {tree}"), e))?;
        let entry = tree_object
            .lookup_entry_by_path(std::ffi::OsStr::from_bytes(path))
            .map_err(|e| {
                let path = path.as_bstr();
                Error::gix(format!("could not look up {path} in tree {tree}"), e)
            })?;
        Ok(entry.map(|e| (e.mode().kind(), e.object_id())))
    }

    /// Whether a directory on the way to `path` (relative to the worktree) is a symlink:
    /// then `path` is not in the worktree as git sees it, whatever is found through the link.
    pub fn beyond_symlink(&self, path: impl AsRef<[u8]>) -> bool {
        use std::os::unix::ffi::OsStrExt;
        let mut dir = self.workdir().to_path_buf();
        let mut parts = path.as_ref().split(|b| *b == b'/').peekable();
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                return false;
            }
            dir.push(std::ffi::OsStr::from_bytes(part));
            if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
                return true;
            }
        }
        false
    }

    /// `tree` without `paths` (a path absent from it is no error).
    pub fn tree_without(&self, tree: ObjectId, paths: &[String]) -> Result<ObjectId> {
        let edits: Vec<_> = paths.iter().map(|p| (p.as_str().into(), None)).collect();
        self.edit_tree_with(tree, &edits)
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
}

/// How long each part of a snapshot took, at debug level (`GIT_BMAD_LOG=debug`): where
/// the time of a large repository goes.
struct Phases {
    last: std::time::Instant,
}

impl Phases {
    fn start() -> Phases {
        Phases {
            last: std::time::Instant::now(),
        }
    }

    fn done(&mut self, phase: &str) {
        let now = std::time::Instant::now();
        let ms = (now - self.last).as_secs_f64() * 1e3;
        tracing::debug!(phase, ms, "snapshot");
        self.last = now;
    }
}

/// What the disk says of a file's mode, as git takes it. `core.fileMode`: whether the disk's
/// exec bit is the file's; without it, git keeps the mode a tracked file's index entry has
/// and records a new file plain. `core.symlinks`: whether a link is one on disk; without it,
/// a tracked link is a plain file holding its target, and git keeps it a link.
#[derive(Clone, Copy, Debug)]
struct Modes {
    file_mode: bool,
    symlinks: bool,
    /// `core.trustCTime`: whether a file's change time counts in its stat data.
    trust_ctime: bool,
}

impl Modes {
    fn of(repo: &gix::Repository) -> Modes {
        let config = repo.config_snapshot();
        Modes {
            file_mode: config.boolean("core.fileMode").unwrap_or(true),
            symlinks: config.boolean("core.symlinks").unwrap_or(true),
            trust_ctime: config.boolean("core.trustCTime").unwrap_or(true),
        }
    }

    /// The kind git records for a file `path` read from disk as `kind`.
    fn as_git_has_it(self, kind: EntryKind, index: &gix::index::State, path: &BStr) -> EntryKind {
        if !matches!(kind, EntryKind::Blob | EntryKind::BlobExecutable) {
            return kind;
        }
        let recorded = index.entry_by_path(path).map(|entry| entry.mode);
        if !self.symlinks && recorded == Some(gix::index::entry::Mode::SYMLINK) {
            return EntryKind::Link;
        }
        if self.file_mode {
            return kind;
        }
        match recorded {
            Some(gix::index::entry::Mode::FILE_EXECUTABLE) => EntryKind::BlobExecutable,
            _ => EntryKind::Blob,
        }
    }
}

/// What [`Repo::store_file`] made of a worktree path.
enum Stored {
    /// The content is in the object database.
    Object(EntryKind, ObjectId),
    /// The vet refused it: nothing was written.
    Refused,
    /// No file there (gone, a directory, a fifo).
    Nothing,
}

/// The time since the Unix epoch.
fn now() -> std::time::Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

/// What the index holds for `path` if git takes that for the path's content whatever the
/// disk has, as `git add -A` leaves it.
fn held_by_index(
    index: &gix::index::State,
    path: &BStr,
) -> Option<(ObjectId, gix::index::entry::Mode)> {
    use gix::index::entry::Flags;
    let entry = index.entry_by_path(path)?;
    // git reads no file marked skip-worktree, and believes one marked assume-unchanged
    // (`update-index --assume-unchanged`, `core.ignoreStat`) unchanged, even gone.
    let held = entry
        .flags
        .intersects(Flags::SKIP_WORKTREE | Flags::ASSUME_VALID);
    held.then_some((entry.id, entry.mode))
}

/// The commit a submodule entry records, if `path` is one in the index.
fn gitlink(index: &gix::index::State, path: &BStr) -> Option<ObjectId> {
    let entry = index.entry_by_path(path)?;
    (entry.mode == gix::index::entry::Mode::COMMIT).then_some(entry.id)
}

/// A filter's process that failed as its output was read: gix lets a driver that is not
/// required fail quietly (the bytes are stored as they are, as git does), so one that fails
/// here is required.
fn filter_failed(file: &std::path::Path, source: std::io::Error) -> Error {
    Error::RequiredFilterFailed {
        path: file.to_path_buf(),
        source,
    }
}

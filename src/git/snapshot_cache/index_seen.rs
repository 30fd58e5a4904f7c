//! The worktree's index as the last snapshot saw it, so the next can tell it is unchanged
//! without reading it: on a large repository, reading and walking the index was most of a
//! settled snapshot's cost, whatever changed.
//!
//! What a snapshot takes from the index: which paths are tracked (the rest are checked
//! against the ignore rules again), the mode and content each tracked path has there (how
//! `core.fileMode=false`, `core.symlinks=false` and `text=auto` treat a file), which are
//! held by the index (skip-worktree) or are submodules, and whether anything is staged. All
//! of it holds while the index file is the one that snapshot read and `HEAD` has the same
//! tree, when the index records `HEAD`'s tree exactly: then each path holds what `HEAD`
//! has. So an index is only marked seen when it is that plain (see [`IndexSeen::of`]).

use std::path::Path;

use gix::index::entry::{Flags, Mode};

use super::super::repo::Repo;
use super::super::ObjectId;

/// An index read by a snapshot, plain enough that the next may trust it unread while
/// [`IndexSeen::holds`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IndexSeen {
    file: FileStamp,
    /// The tree of `HEAD`, which the index recorded exactly.
    head_tree: ObjectId,
}

/// Which index file it was: git replaces the file on every write (a new inode), and its
/// trailing checksum is of its content. Its change time too: a process can write a file in
/// place, end it with any checksum and set its modification time back, but every such
/// write moves the change time, which no process can set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileStamp {
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    checksum: ObjectId,
}

impl FileStamp {
    /// The stamp of the worktree's index file as it is now; `None` when there is none, or
    /// it has no checksum (`index.skipHash`), which leaves two versions of the same size
    /// written in the same instant indistinguishable.
    pub fn of(repo: &Repo) -> Option<FileStamp> {
        Self::of_file(&repo.gix().index_path(), repo.gix().object_hash())
    }

    fn of_file(path: &Path, hash: gix::hash::Kind) -> Option<FileStamp> {
        use std::os::unix::fs::{FileExt, MetadataExt};
        let file = std::fs::File::open(path).ok()?;
        let meta = file.metadata().ok()?;
        let len = hash.len_in_bytes();
        let mut trailer = vec![0; len];
        file.read_exact_at(&mut trailer, meta.len().checked_sub(len as u64)?)
            .ok()?;
        let checksum = ObjectId::from_bytes_or_panic(&trailer);
        if checksum.is_null() {
            return None;
        }
        Some(FileStamp {
            ino: meta.ino(),
            size: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            checksum,
        })
    }
}

impl IndexSeen {
    /// What the next snapshot may take from `index` unread, if it is plain: read from the
    /// file stamped `stamp` (taken before the read; the checksums agree), recording
    /// `head_tree` exactly (`staged` is false), with no path marked skip-worktree or
    /// intent-to-add, no submodule, no sparse directory, and every `.gitignore` and
    /// `.gitattributes` it tracks a file on disk (git reads a missing one from the index).
    pub fn of(
        repo: &Repo,
        stamp: Option<FileStamp>,
        index: &gix::worktree::Index,
        head_tree: ObjectId,
        staged: bool,
    ) -> Option<IndexSeen> {
        let stamp = stamp?;
        if staged || index.checksum() != Some(stamp.checksum) {
            return None;
        }
        let root = repo.workdir();
        let plain = index.entries().iter().all(|e| {
            let path = e.path(index);
            let rules = path.rsplit(|b| *b == b'/').next().is_some_and(|name| {
                name.eq_ignore_ascii_case(b".gitignore")
                    || name.eq_ignore_ascii_case(b".gitattributes")
            });
            !e.flags.intersects(
                Flags::EXTENDED | Flags::SKIP_WORKTREE | Flags::INTENT_TO_ADD | Flags::ASSUME_VALID,
            ) && !matches!(e.mode, Mode::COMMIT | Mode::DIR)
                && e.stage_raw() == 0
                && (!rules || is_file(root, path))
        });
        plain.then_some(IndexSeen {
            file: stamp,
            head_tree,
        })
    }

    /// Whether the index this describes is still the worktree's and `HEAD` still has its
    /// tree. (The ignore rules outside the worktree are the change feed's to watch: when
    /// they change it names no paths, and every snapshot that reads no index has its
    /// paths. Case-insensitive matching is left to the index's reader.)
    pub fn holds(&self, repo: &Repo, head_tree: ObjectId) -> bool {
        let ignore_case = repo.gix().config_snapshot().boolean("core.ignoreCase");
        self.head_tree == head_tree
            && ignore_case != Some(true)
            && FileStamp::of(repo).as_ref() == Some(&self.file)
    }

    /// As a header field: one word.
    pub fn field(seen: Option<&IndexSeen>) -> String {
        match seen {
            None => "-".into(),
            Some(s) => {
                let f = &s.file;
                format!(
                    "{},{},{}.{},{}.{},{},{}",
                    f.ino,
                    f.size,
                    f.mtime.0,
                    f.mtime.1,
                    f.ctime.0,
                    f.ctime.1,
                    f.checksum,
                    s.head_tree
                )
            }
        }
    }

    /// What [`Self::field`] wrote; `None` for `-` or anything else.
    pub fn parse(field: &str) -> Option<IndexSeen> {
        let mut parts = field.split(',');
        let mut next = || parts.next();
        let ino = next()?.parse().ok()?;
        let size = next()?.parse().ok()?;
        let mut time = || -> Option<(i64, i64)> {
            let (secs, nanos) = next()?.split_once('.')?;
            Some((secs.parse().ok()?, nanos.parse().ok()?))
        };
        let mtime = time()?;
        let ctime = time()?;
        let checksum = ObjectId::from_hex(next()?.as_bytes()).ok()?;
        let head_tree = ObjectId::from_hex(next()?.as_bytes()).ok()?;
        next().is_none().then_some(IndexSeen {
            file: FileStamp {
                ino,
                size,
                mtime,
                ctime,
                checksum,
            },
            head_tree,
        })
    }
}

/// Whether `path` (relative) is a regular file in the worktree at `root`.
fn is_file(root: &Path, path: &gix::bstr::BStr) -> bool {
    let full = super::super::worktree_scan::on_disk(root, path);
    std::fs::symlink_metadata(full).is_ok_and(|meta| meta.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header field reads back as written; anything else reads as nothing seen.
    #[test]
    fn a_seen_index_reads_back_and_anything_else_is_nothing() {
        let id = |n: u8| ObjectId::from_bytes_or_panic(&[n; 20]);
        let seen = IndexSeen {
            file: FileStamp {
                ino: 7,
                size: 80_000_000,
                mtime: (1_790_000_000, 123_456_789),
                ctime: (1_790_000_001, 5),
                checksum: id(1),
            },
            head_tree: id(2),
        };
        let field = IndexSeen::field(Some(&seen));
        assert!(!field.contains(char::is_whitespace), "{field}");
        assert_eq!(IndexSeen::parse(&field), Some(seen));
        assert_eq!(IndexSeen::field(None), "-");
        for other in ["-", "", "1,2,3.4", &format!("{field},more"), "a,b,c,d,e,f"] {
            assert_eq!(IndexSeen::parse(other), None, "{other}");
        }
    }
}

//! Which files of a worktree may have changed since its last snapshot: one pass over its
//! directories, each file stat'ed relative to its open directory and compared with the
//! snapshot cache (see [`super::snapshot_cache`]).
//!
//! Why not gix's status: it stats every file by its full path (a path walk per file) and
//! reads every directory a second time to find untracked files; on a 40,000-file worktree
//! that was most of a checkpoint. Here each directory is read once, and the answer is
//! conservative: a file whose stat data does not prove it unchanged is reported, and the
//! snapshot reads it again.

use std::collections::BTreeSet;
use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::time::Duration;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::index::entry::{Flags, Mode, Stat};
use rustix::fs::{AtFlags, FileType, OFlags, RawDir};

use super::error::{Error, Result};
use super::ignores::Ignores;

mod targeted;

/// How far a file's modification time may lag the clock: the kernel stamps files from a
/// coarse clock, one tick (at most 10 ms) behind.
const CLOCK_LAG: Duration = Duration::from_millis(20);
/// The same, on a filesystem that keeps whole seconds (FAT keeps two).
const COARSE_CLOCK_LAG: Duration = Duration::from_secs(2);

/// What a scan found: paths to read again (changed, new, or gone), and the names the cache
/// does not know, for the caller to check against the ignore rules. Paths are bytes, as git
/// keeps them: a name need not be UTF-8.
#[derive(Debug, Default)]
pub(super) struct Scan {
    /// Cached paths whose file changed, went, or cannot be trusted unchanged.
    pub changed: BTreeSet<BString>,
    /// Files and directories (`is_dir`) on disk that the cache does not have.
    pub unknown: Vec<(BString, bool)>,
}

/// Where the worktree path `path` (relative, bytes) is under `root`.
pub(super) fn on_disk(root: &Path, path: &BStr) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    root.join(std::ffi::OsStr::from_bytes(path))
}

/// Compares a worktree with a snapshot cache.
pub(super) struct Scanner<'a> {
    root: &'a Path,
    cache: &'a gix::index::State,
    /// When the cache's stat data was known good: an entry modified close to it may have
    /// changed again in the same clock tick, so it is not trusted.
    verified: Duration,
    /// `core.fileMode`: whether the executable bit counts.
    file_mode: bool,
    options: gix::index::entry::stat::Options,
}

/// What one thread of a scan found.
struct Part {
    seen: Vec<bool>,
    scan: Scan,
}

/// Directories waiting to be scanned (each with the range of cache entries under it), and
/// how many are queued or being scanned.
struct Queue {
    dirs: std::sync::Mutex<Vec<(BString, Range<usize>)>>,
    pending: std::sync::atomic::AtomicUsize,
}

impl Queue {
    fn push(&self, dir: BString, entries: Range<usize>) {
        self.pending
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.dirs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((dir, entries));
    }

    fn pop(&self) -> Option<(BString, Range<usize>)> {
        self.dirs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop()
    }

    fn done(&self) {
        self.pending
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn is_drained(&self) -> bool {
        self.pending.load(std::sync::atomic::Ordering::SeqCst) == 0
    }
}

impl<'a> Scanner<'a> {
    pub fn new(
        root: &'a Path,
        cache: &'a gix::index::State,
        verified: Duration,
        file_mode: bool,
        trust_ctime: bool,
    ) -> Self {
        Scanner {
            root,
            cache,
            verified,
            file_mode,
            options: gix::index::entry::stat::Options {
                trust_ctime,
                check_stat: true,
                use_nsec: true,
                use_stdev: false,
            },
        }
    }

    /// Scan the whole worktree, directories spread over the cores (stat calls wait on the
    /// kernel, not on each other).
    pub fn run(&self) -> Result<Scan> {
        self.run_from(vec![(BString::default(), 0..self.cache.entries().len())])
    }

    /// Scan the directories `starts` (each `""` or ending with `/`, with the range of cache
    /// entries under it) and everything under them, spread over the cores (stat calls wait
    /// on the kernel, not on each other). A cached entry in those ranges not seen is
    /// reported as changed.
    fn run_from(&self, starts: Vec<(BString, Range<usize>)>) -> Result<Scan> {
        let queue = Queue {
            dirs: std::sync::Mutex::new(Vec::new()),
            pending: std::sync::atomic::AtomicUsize::new(0),
        };
        let ranges: Vec<Range<usize>> = starts.iter().map(|(_, r)| r.clone()).collect();
        for (dir, entries) in starts {
            queue.push(dir, entries);
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        let parts: Vec<Result<Part>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| scope.spawn(|| self.worker(&queue)))
                .collect();
            workers
                .into_iter()
                .map(|w| {
                    w.join().unwrap_or_else(|_| {
                        Err(Error::Corrupt("a worktree scan thread panicked".into()))
                    })
                })
                .collect()
        });
        let mut seen = vec![false; self.cache.entries().len()];
        let mut scan = Scan::default();
        for part in parts {
            let part = part?;
            for (all, one) in seen.iter_mut().zip(part.seen) {
                *all |= one;
            }
            scan.changed.extend(part.scan.changed);
            scan.unknown.extend(part.scan.unknown);
        }
        for i in ranges.into_iter().flatten() {
            let entry = &self.cache.entries()[i];
            if !seen[i] && !self.outside(entry) {
                scan.changed.insert(entry.path(self.cache).to_owned());
            }
        }
        Ok(scan)
    }

    /// Scan queued directories until none is left anywhere.
    fn worker(&self, queue: &Queue) -> Result<Part> {
        let mut part = Part {
            seen: vec![false; self.cache.entries().len()],
            scan: Scan::default(),
        };
        loop {
            match queue.pop() {
                Some((prefix, entries)) => {
                    let scanned = self.directory(prefix.as_bstr(), entries, &mut part, queue);
                    queue.done();
                    scanned?;
                }
                None if queue.is_drained() => return Ok(part),
                None => std::thread::yield_now(),
            }
        }
    }

    /// Scan one directory the cache has entries in (`prefix` is `""` or ends with `/`;
    /// `entries` is the range of cache entries under it); its subdirectories the cache knows
    /// are queued. Names are looked up in that range only, and a path is made only for what
    /// is reported: this loop runs once per file of the worktree.
    fn directory(
        &self,
        prefix: &BStr,
        entries: Range<usize>,
        part: &mut Part,
        queue: &Queue,
    ) -> Result<()> {
        let path = on_disk(self.root, prefix);
        let mut dir = match Dir::open(&path) {
            Ok(dir) => dir,
            // Gone, or a file now: its cached entries are reported as unseen.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
                return Ok(())
            }
            Err(e) => return Err(Error::io("could not open directory", path, e)),
        };
        let all = self.cache.entries();
        let start = entries.start;
        let under = &all[entries];
        // The part of a cached path below this directory.
        let rest = |e: &gix::index::Entry| -> &[u8] {
            let path: &[u8] = e.path(self.cache);
            path.get(prefix.len()..).unwrap_or_default()
        };
        let mut bound = Vec::new();
        dir.for_each(|fd, name, kind| {
            let bytes = name.to_bytes();
            if bytes == b".git" {
                return;
            }
            let rela = || {
                let mut rela = BString::from(prefix);
                rela.extend_from_slice(bytes);
                rela
            };
            let cached = under
                .binary_search_by(|e| rest(e).cmp(bytes))
                .ok()
                .map(|i| start + i);
            if let Some(i) = cached {
                part.seen[i] = true;
            }
            let kind = match kind {
                Kind::Unknown => kind_at(fd, name),
                known => known,
            };
            match kind {
                Kind::Dir => {
                    match cached.map(|i| &all[i]) {
                        // A submodule: its own repository, recorded by the commit in the index.
                        Some(e) if e.mode == Mode::COMMIT => return,
                        // A file that became a directory.
                        Some(_) => {
                            part.scan.changed.insert(rela());
                        }
                        None => {}
                    }
                    // The cached paths under `name/` sort from `name/` to just before `name0`
                    // ('0' follows '/').
                    bound.clear();
                    bound.extend_from_slice(bytes);
                    bound.push(b'/');
                    let first = under.partition_point(|e| rest(e) < bound.as_slice());
                    bound.pop();
                    bound.push(b'0');
                    let end = under.partition_point(|e| rest(e) < bound.as_slice());
                    if first < end {
                        let mut dir = rela();
                        dir.push(b'/');
                        queue.push(dir, start + first..start + end);
                    } else {
                        part.scan.unknown.push((rela(), true));
                    }
                }
                Kind::File => match cached {
                    Some(i) => {
                        if !self.unchanged(&all[i], fd, name) {
                            part.scan.changed.insert(rela());
                        }
                    }
                    None => part.scan.unknown.push((rela(), false)),
                },
                // Sockets, fifos, devices: git does not track them either.
                Kind::Other | Kind::Unknown => {}
            }
        });
        Ok(())
    }

    /// Whether the file `name` in the directory `dir` provably still holds what `entry`
    /// records: same kind and mode, same stat data, and that data trustworthy.
    fn unchanged(&self, entry: &gix::index::Entry, dir: BorrowedFd<'_>, name: &CStr) -> bool {
        if entry.flags.contains(Flags::SKIP_WORKTREE) {
            return true;
        }
        let Some(st) = stat_at(dir, name) else {
            return false;
        };
        let kind_matches = match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink => entry.mode == Mode::SYMLINK,
            FileType::RegularFile if self.file_mode => {
                let executable = st.st_mode & 0o100 != 0;
                entry.mode
                    == if executable {
                        Mode::FILE_EXECUTABLE
                    } else {
                        Mode::FILE
                    }
            }
            FileType::RegularFile => {
                entry.mode == Mode::FILE || entry.mode == Mode::FILE_EXECUTABLE
            }
            _ => false,
        };
        kind_matches
            && trusted(&entry.stat, self.verified)
            && entry.stat.matches(&stat_data(&st), self.options)
    }
}

/// The files among `unknown` (paths the snapshot does not have; `true` for a directory)
/// that the ignore rules leave in, the contents of new directories included; a nested
/// repository is left out, as its files are not this worktree's.
pub(super) fn new_files(
    root: &Path,
    ignores: &mut Ignores<'_>,
    mut unknown: Vec<(BString, bool)>,
) -> Result<Vec<BString>> {
    let mut files = Vec::new();
    while let Some((path, is_dir)) = unknown.pop() {
        if ignores.is_ignored(path.as_bstr(), is_dir)? {
            continue;
        }
        if !is_dir {
            files.push(path);
            continue;
        }
        let dir = on_disk(root, path.as_bstr());
        if dir.join(".git").exists() {
            continue;
        }
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            // As `git add -A` does: a directory it cannot open (no permission, a path too
            // long to name) is left out with a warning, not the whole snapshot.
            Err(e) => {
                tracing::warn!(dir = %path, error = %e, "could not open a new directory: it is left out, as git leaves it");
                continue;
            }
        };
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("could not read directory", &dir, e))?;
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let mut inner = path.clone();
            inner.push(b'/');
            inner.extend_from_slice(std::os::unix::ffi::OsStrExt::as_bytes(&*entry.file_name()));
            if kind.is_dir() {
                unknown.push((inner, true));
            } else if kind.is_file() || kind.is_symlink() {
                unknown.push((inner, false));
            }
        }
    }
    Ok(files)
}

/// Whether stat data verified at `verified` still proves its file unchanged when it matches:
/// a later write would stamp the file with a later time, unless the file was written within a
/// clock tick of the check.
pub(super) fn trusted(stat: &Stat, verified: Duration) -> bool {
    let mtime = Duration::new(u64::from(stat.mtime.secs), stat.mtime.nsecs);
    let lag = if stat.mtime.nsecs == 0 {
        COARSE_CLOCK_LAG
    } else {
        CLOCK_LAG
    };
    mtime + lag < verified
}

/// `lstat` of `name` in the open directory `dir`.
fn stat_at(dir: BorrowedFd<'_>, name: &CStr) -> Option<rustix::fs::Stat> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()
}

/// What a directory entry is, as far as a snapshot cares: a symlink counts as a file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Other,
    /// The filesystem did not say (`DT_UNKNOWN`): ask `lstat`.
    Unknown,
}

/// The kind of `name` in the open directory `dir`, by `lstat`; a name gone meanwhile is
/// `Other`, which the scan skips (and a cached entry not seen is reported as changed).
fn kind_at(dir: BorrowedFd<'_>, name: &CStr) -> Kind {
    match stat_at(dir, name).map(|st| FileType::from_raw_mode(st.st_mode)) {
        Some(FileType::Directory) => Kind::Dir,
        Some(FileType::RegularFile | FileType::Symlink) => Kind::File,
        _ => Kind::Other,
    }
}

/// The kind of the file at `path`, by `lstat`; a missing file is `Other`.
fn kind_of(path: &Path) -> Kind {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Kind::Dir,
        Ok(meta) if meta.is_file() || meta.file_type().is_symlink() => Kind::File,
        _ => Kind::Other,
    }
}

/// A directory open for reading its names and for stat calls relative to it.
///
/// Why not `std::fs::read_dir`: it allocates a name and an `Arc` per entry and keeps no
/// descriptor to stat relative to; this runs once per file of the worktree.
struct Dir {
    fd: OwnedFd,
}

impl Dir {
    fn open(path: &Path) -> std::io::Result<Dir> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rustix::fs::open(path, flags, rustix::fs::Mode::empty())?;
        Ok(Dir { fd })
    }

    /// Call `f(directory fd, name, kind)` for each entry but `.` and `..`. A read error ends
    /// the listing early, which is safe here: an entry not seen is read again.
    fn for_each(&mut self, mut f: impl FnMut(BorrowedFd<'_>, &CStr, Kind)) {
        let mut buf = [MaybeUninit::<u8>::uninit(); 16 * 1024];
        let mut entries = RawDir::new(&self.fd, &mut buf);
        while let Some(Ok(entry)) = entries.next() {
            let name = entry.file_name();
            if matches!(name.to_bytes(), b"." | b"..") {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::RegularFile | FileType::Symlink => Kind::File,
                FileType::Directory => Kind::Dir,
                FileType::Unknown => Kind::Unknown,
                _ => Kind::Other,
            };
            f(self.fd.as_fd(), name, kind);
        }
    }
}

/// The stat data an index entry keeps, from `symlink_metadata`'s answer.
pub(super) fn stat_of(meta: &std::fs::Metadata) -> Stat {
    use std::os::unix::fs::MetadataExt;
    Stat {
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        ctime: time(meta.ctime(), meta.ctime_nsec()),
        dev: meta.dev() as u32,
        ino: meta.ino() as u32,
        uid: meta.uid(),
        gid: meta.gid(),
        // Truncated to 32 bits, as git does.
        size: meta.size() as u32,
    }
}

/// The stat data an index entry keeps, from `lstat`'s answer.
fn stat_data(st: &rustix::fs::Stat) -> Stat {
    // The fields' integer types differ between architectures.
    fn wide<T: TryInto<i64>>(v: T) -> i64 {
        v.try_into().unwrap_or(0)
    }
    // Truncated to 32 bits, as git does.
    fn low32<T: TryInto<u64>>(v: T) -> u32 {
        v.try_into().map_or(0, |v: u64| v as u32)
    }
    Stat {
        mtime: time(wide(st.st_mtime), wide(st.st_mtime_nsec)),
        ctime: time(wide(st.st_ctime), wide(st.st_ctime_nsec)),
        dev: low32(st.st_dev),
        ino: low32(st.st_ino),
        uid: st.st_uid,
        gid: st.st_gid,
        size: low32(st.st_size),
    }
}

fn time(secs: i64, nsecs: i64) -> gix::index::entry::stat::Time {
    gix::index::entry::stat::Time {
        secs: secs.clamp(0, i64::from(u32::MAX)) as u32,
        nsecs: nsecs.clamp(0, 999_999_999) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_data_taken_close_to_its_check_proves_nothing() {
        let modified = |secs, nsecs| Stat {
            mtime: gix::index::entry::stat::Time { secs, nsecs },
            ..Stat::default()
        };
        let verified = Duration::new(100, 500_000_000);
        assert!(trusted(&modified(100, 400_000_000), verified));
        // Within a clock tick of the check, or after it: a later write may look the same.
        assert!(!trusted(&modified(100, 490_000_000), verified));
        assert!(!trusted(&modified(101, 1), verified));
        // Whole seconds only: a coarse filesystem, two seconds of doubt.
        assert!(!trusted(&modified(99, 0), verified));
        assert!(trusted(&modified(98, 0), verified));
    }
}

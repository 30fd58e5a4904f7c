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
use std::ffi::{CStr, CString};
use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use gix::index::entry::{Flags, Mode, Stat};

use super::error::{Error, Result};
use super::ignores::Ignores;

mod targeted;

/// How far a file's modification time may lag the clock: the kernel stamps files from a
/// coarse clock, one tick (at most 10 ms) behind.
const CLOCK_LAG: Duration = Duration::from_millis(20);
/// The same, on a filesystem that keeps whole seconds (FAT keeps two).
const COARSE_CLOCK_LAG: Duration = Duration::from_secs(2);

/// What a scan found: paths to read again (changed, new, or gone), and the names the cache
/// does not know, for the caller to check against the ignore rules.
#[derive(Debug, Default)]
pub(super) struct Scan {
    /// Cached paths whose file changed, went, or cannot be trusted unchanged.
    pub changed: BTreeSet<String>,
    /// Files and directories (`is_dir`) on disk that the cache does not have.
    pub unknown: Vec<(String, bool)>,
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
    dirs: std::sync::Mutex<Vec<(String, Range<usize>)>>,
    pending: std::sync::atomic::AtomicUsize,
}

impl Queue {
    fn push(&self, dir: String, entries: Range<usize>) {
        self.pending
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.dirs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((dir, entries));
    }

    fn pop(&self) -> Option<(String, Range<usize>)> {
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
        self.run_from(vec![(String::new(), 0..self.cache.entries().len())])
    }

    /// Scan the directories `starts` (each `""` or ending with `/`, with the range of cache
    /// entries under it) and everything under them, spread over the cores (stat calls wait
    /// on the kernel, not on each other). A cached entry in those ranges not seen is
    /// reported as changed.
    fn run_from(&self, starts: Vec<(String, Range<usize>)>) -> Result<Scan> {
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
                scan.changed.insert(entry.path(self.cache).to_string());
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
                    let scanned = self.directory(&prefix, entries, &mut part, queue);
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
        prefix: &str,
        entries: Range<usize>,
        part: &mut Part,
        queue: &Queue,
    ) -> Result<()> {
        let path = self.root.join(prefix);
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
            let rela = || format!("{prefix}{}", String::from_utf8_lossy(bytes));
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
                        queue.push(format!("{}/", rela()), start + first..start + end);
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
    fn unchanged(&self, entry: &gix::index::Entry, dir: i32, name: &CStr) -> bool {
        if entry.flags.contains(Flags::SKIP_WORKTREE) {
            return true;
        }
        let Some(st) = stat_at(dir, name) else {
            return false;
        };
        let kind_matches = match st.st_mode & libc::S_IFMT {
            libc::S_IFLNK => entry.mode == Mode::SYMLINK,
            libc::S_IFREG if self.file_mode => {
                let executable = st.st_mode & 0o100 != 0;
                entry.mode
                    == if executable {
                        Mode::FILE_EXECUTABLE
                    } else {
                        Mode::FILE
                    }
            }
            libc::S_IFREG => entry.mode == Mode::FILE || entry.mode == Mode::FILE_EXECUTABLE,
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
    mut unknown: Vec<(String, bool)>,
) -> Result<Vec<String>> {
    let mut files = Vec::new();
    while let Some((path, is_dir)) = unknown.pop() {
        if ignores.is_ignored(&path, is_dir)? {
            continue;
        }
        if !is_dir {
            files.push(path);
            continue;
        }
        let dir = root.join(&path);
        if dir.join(".git").exists() {
            continue;
        }
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io("could not read directory", dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("could not read directory", &dir, e))?;
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let inner = format!("{path}/{}", entry.file_name().to_string_lossy());
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
fn stat_at(dir: i32, name: &CStr) -> Option<libc::stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated, `st` is written by fstatat before it is read.
    let rc = unsafe {
        libc::fstatat(
            dir,
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    // SAFETY: fstatat filled `st` when it returned 0.
    (rc == 0).then(|| unsafe { st.assume_init() })
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
fn kind_at(dir: i32, name: &CStr) -> Kind {
    match stat_at(dir, name).map(|st| st.st_mode & libc::S_IFMT) {
        Some(libc::S_IFDIR) => Kind::Dir,
        Some(libc::S_IFREG | libc::S_IFLNK) => Kind::File,
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
    stream: std::ptr::NonNull<libc::DIR>,
}

impl Dir {
    fn open(path: &Path) -> std::io::Result<Dir> {
        let path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: `path` is NUL-terminated.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is an open directory descriptor, owned by the stream from here on.
        match std::ptr::NonNull::new(unsafe { libc::fdopendir(fd) }) {
            Some(stream) => Ok(Dir { stream }),
            None => {
                let e = std::io::Error::last_os_error();
                // SAFETY: the stream did not take `fd`.
                unsafe { libc::close(fd) };
                Err(e)
            }
        }
    }

    /// Call `f(directory fd, name, kind)` for each entry but `.` and `..`. A read error ends
    /// the listing early, which is safe here: an entry not seen is read again.
    fn for_each(&mut self, mut f: impl FnMut(i32, &CStr, Kind)) {
        // SAFETY: the stream is open until `drop`.
        let fd = unsafe { libc::dirfd(self.stream.as_ptr()) };
        loop {
            // SAFETY: as above; the entry is valid until the next readdir on this stream,
            // and `f` gets it only for this iteration.
            let entry = unsafe { libc::readdir(self.stream.as_ptr()) };
            if entry.is_null() {
                return;
            }
            // SAFETY: readdir returned a valid entry whose name is NUL-terminated.
            let (name, d_type) =
                unsafe { (CStr::from_ptr((*entry).d_name.as_ptr()), (*entry).d_type) };
            if matches!(name.to_bytes(), b"." | b"..") {
                continue;
            }
            let kind = match d_type {
                libc::DT_REG | libc::DT_LNK => Kind::File,
                libc::DT_DIR => Kind::Dir,
                libc::DT_UNKNOWN => Kind::Unknown,
                _ => Kind::Other,
            };
            f(fd, name, kind);
        }
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: the stream is open, and closed only here.
        unsafe { libc::closedir(self.stream.as_ptr()) };
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
fn stat_data(st: &libc::stat) -> Stat {
    Stat {
        mtime: time(st.st_mtime, st.st_mtime_nsec),
        ctime: time(st.st_ctime, st.st_ctime_nsec),
        dev: st.st_dev as u32,
        ino: st.st_ino as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        size: st.st_size as u32,
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

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
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use gix::bstr::BStr;
use gix::index::entry::{Flags, Mode, Stat};

use super::error::{Error, Result};
use super::ignores::Ignores;

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

/// Directories waiting to be scanned, and how many are queued or being scanned.
struct Queue {
    dirs: std::sync::Mutex<Vec<String>>,
    pending: std::sync::atomic::AtomicUsize,
}

impl Queue {
    fn push(&self, dir: String) {
        self.pending
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.dirs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(dir);
    }

    fn pop(&self) -> Option<String> {
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
        let queue = Queue {
            dirs: std::sync::Mutex::new(Vec::new()),
            pending: std::sync::atomic::AtomicUsize::new(0),
        };
        queue.push(String::new());
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
        for (i, entry) in self.cache.entries().iter().enumerate() {
            let outside = entry.flags.contains(Flags::SKIP_WORKTREE) || entry.mode == Mode::COMMIT;
            if !seen[i] && !outside {
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
                Some(prefix) => {
                    let scanned = self.directory(&prefix, &mut part, queue);
                    queue.done();
                    scanned?;
                }
                None if queue.is_drained() => return Ok(part),
                None => std::thread::yield_now(),
            }
        }
    }

    /// Scan one directory the cache has entries in (`prefix` is `""` or ends with `/`);
    /// its subdirectories the cache knows are queued.
    fn directory(&self, prefix: &str, part: &mut Part, queue: &Queue) -> Result<()> {
        let path = self.root.join(prefix);
        let dir = match std::fs::File::open(&path) {
            Ok(dir) => dir,
            // Gone, or a file now: its cached entries are reported as unseen.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
                return Ok(())
            }
            Err(e) => return Err(Error::io("could not open directory", path, e)),
        };
        let entries = std::fs::read_dir(&path)
            .map_err(|e| Error::io("could not read directory", &path, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("could not read directory", &path, e))?;
            let name = entry.file_name();
            if name.as_bytes() == b".git" {
                continue;
            }
            let rela = format!("{prefix}{}", name.to_string_lossy());
            let Ok(kind) = entry.file_type() else {
                continue; // gone since the directory was read
            };
            let cached = self
                .cache
                .entry_index_by_path(BStr::new(rela.as_bytes()))
                .ok();
            if let Some(i) = cached {
                part.seen[i] = true;
            }
            if kind.is_dir() {
                match cached.map(|i| &self.cache.entries()[i]) {
                    // A submodule: its own repository, recorded by the commit in the index.
                    Some(e) if e.mode == Mode::COMMIT => continue,
                    // A file that became a directory.
                    Some(_) => {
                        part.scan.changed.insert(rela.clone());
                    }
                    None => {}
                }
                let inner = format!("{rela}/");
                let known = self
                    .cache
                    .prefixed_entries_range(BStr::new(inner.as_bytes()))
                    .is_some_and(|r| !r.is_empty());
                if known {
                    queue.push(inner);
                } else {
                    part.scan.unknown.push((rela, true));
                }
            } else if kind.is_file() || kind.is_symlink() {
                match cached {
                    Some(i) => {
                        if !self.unchanged(&self.cache.entries()[i], dir.as_raw_fd(), &name) {
                            part.scan.changed.insert(rela);
                        }
                    }
                    None => part.scan.unknown.push((rela, false)),
                }
            }
            // Sockets, fifos, devices: git does not track them either.
        }
        Ok(())
    }

    /// Whether the file `name` in the directory `dir` provably still holds what `entry`
    /// records: same kind and mode, same stat data, and that data trustworthy.
    fn unchanged(&self, entry: &gix::index::Entry, dir: i32, name: &std::ffi::OsStr) -> bool {
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
fn stat_at(dir: i32, name: &std::ffi::OsStr) -> Option<libc::stat> {
    let name = CString::new(name.as_bytes()).ok()?;
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

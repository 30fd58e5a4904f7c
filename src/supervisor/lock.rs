//! One supervisor per session at a time.
//!
//! Two `git bmad run`s in one worktree would run the same step twice, into the same files. The
//! lock is an advisory lock (`flock`) on a file in the session worktree's private git dir:
//! the kernel holds it for exactly as long as the process lives, so a `kill -9` or a crash
//! releases it and two supervisors can never both hold it (a pidfile checked and taken over
//! by hand had that race). The file keeps the owner's pid, for the message only.
//!
//! Holding it also marks the run live for the policy ([`live_run`]): while a supervisor
//! runs, the push and ref rules bind every process, not only this worktree's.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

use super::error::{Error, Result};
use crate::policy::live_run::{self, LiveRun};

/// The lock file's name in the worktree's git dir.
const LOCK_FILE: &str = crate::session::RUN_LOCK;

/// A held run lock; released when dropped (or when the process dies).
#[derive(Debug)]
pub struct RunLock {
    // Dropped first: the marker goes before the lock is released.
    _live: LiveRun,
    _file: File,
}

impl RunLock {
    /// Take the lock of the worktree whose private git dir is `git_dir`.
    pub fn acquire(git_dir: &Path, session: &str) -> Result<RunLock> {
        let path = git_dir.join(LOCK_FILE);
        let read_error = |source| Error::Read {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(read_error)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut owner = String::new();
                let _ = file.read_to_string(&mut owner);
                return Err(Error::RunInProgress {
                    session: session.to_owned(),
                    pid: owner.trim().parse().unwrap_or(0),
                });
            }
            Err(TryLockError::Error(e)) => return Err(read_error(e)),
        }
        // Ours now: record who holds it.
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = writeln!(file, "{}", std::process::id());
        let live = LiveRun::mark(git_dir).map_err(|source| Error::Read {
            path: git_dir.join(live_run::MARKER),
            source,
        })?;
        Ok(RunLock {
            _live: live,
            _file: file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_then_released_and_a_dead_owners_file_is_no_lock() {
        let dir = tempfile::tempdir().unwrap();
        let lock = RunLock::acquire(dir.path(), "s").unwrap();
        match RunLock::acquire(dir.path(), "s") {
            Err(Error::RunInProgress { pid, .. }) => assert_eq!(pid, std::process::id() as i32),
            other => panic!("expected the lock to be held: {other:?}"),
        }
        drop(lock);
        // A file left by a process that no longer exists holds no lock.
        std::fs::write(dir.path().join(LOCK_FILE), "999999999\n").unwrap();
        let _lock = RunLock::acquire(dir.path(), "s").unwrap();
    }
}

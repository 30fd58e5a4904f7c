//! One supervisor per session at a time.
//!
//! Two `git bmad run`s in one worktree would run the same step twice, into the same files. The
//! lock is a file in the session worktree's private git dir holding the owner's pid, created
//! with `O_EXCL`; a lock whose process is gone (a `kill -9`, a crash) is taken over, so resume
//! never needs a manual cleanup.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::error::{Error, Result};

/// The lock file's name in the worktree's git dir.
const LOCK_FILE: &str = "bmad-run.lock";

/// A held run lock; released when dropped.
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
}

impl RunLock {
    /// Take the lock of the worktree whose private git dir is `git_dir`.
    pub fn acquire(git_dir: &Path, session: &str) -> Result<RunLock> {
        let path = git_dir.join(LOCK_FILE);
        for _ in 0..3 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut file) => {
                    let _ = writeln!(file, "{}", std::process::id());
                    return Ok(RunLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let owner = std::fs::read_to_string(&path)
                        .ok()
                        .and_then(|t| t.trim().parse::<i32>().ok());
                    match owner {
                        Some(pid) if alive(pid) => {
                            return Err(Error::RunInProgress {
                                session: session.to_owned(),
                                pid,
                            })
                        }
                        // Its owner is gone (or it is being written this instant): take over.
                        _ => {
                            let _ = std::fs::remove_file(&path);
                        }
                    }
                }
                Err(e) => return Err(Error::Read { path, source: e }),
            }
        }
        Err(Error::RunInProgress {
            session: session.to_owned(),
            pid: 0,
        })
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn alive(pid: i32) -> bool {
    if pid <= 0 || pid as u32 == std::process::id() {
        return pid > 0;
    }
    // SAFETY: signal 0 only asks whether the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_then_released_and_stale_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let lock = RunLock::acquire(dir.path(), "s").unwrap();
        assert!(matches!(
            RunLock::acquire(dir.path(), "s"),
            Err(Error::RunInProgress { .. })
        ));
        drop(lock);
        // A lock left by a process that no longer exists.
        std::fs::write(dir.path().join(LOCK_FILE), "999999999\n").unwrap();
        let _lock = RunLock::acquire(dir.path(), "s").unwrap();
    }
}

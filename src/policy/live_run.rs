//! Whether an agent run is live: the rules that bind agents then bind every process that
//! updates a ref or pushes, wherever it runs from (an agent can `cd` out of its worktree,
//! or point `GIT_DIR` at the repository from a directory outside it).
//!
//! The supervisor holds [`LiveRun`] for as long as it runs: a marker file in the session
//! worktree's private git dir, `flock`ed. The hook shim sees the marker with a shell glob
//! alone; git-bmad then asks the kernel whether its lock is still held, so a marker left by
//! a `kill -9` never binds anyone.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

/// The marker's name in a worktree's private git dir.
pub const MARKER: &str = "bmad-agent-live";

/// Held by a running supervisor; the marker goes when it is dropped (or the process dies).
#[derive(Debug)]
pub struct LiveRun {
    path: PathBuf,
    _file: File,
}

impl LiveRun {
    /// Mark the worktree whose private git dir is `git_dir` as running an agent.
    pub fn mark(git_dir: &Path) -> std::io::Result<LiveRun> {
        let path = git_dir.join(MARKER);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        file.lock()?;
        Ok(LiveRun { path, _file: file })
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        // Before the lock goes with the file: a reader that opened it first sees it unlocked,
        // which is the truth by then.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The worktrees where an agent run is live now (each named by its directory, or by its
/// private git dir under `<common dir>/worktrees/` when git's link to it is unreadable).
pub fn live_runs(common_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(common_dir.join("worktrees")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|dir| is_live(&dir.join(MARKER)))
        .map(|dir| {
            // git's `gitdir` file names the worktree's `.git`.
            std::fs::read_to_string(dir.join("gitdir"))
                .ok()
                .and_then(|gitdir| Path::new(gitdir.trim_end()).parent().map(Path::to_path_buf))
                .unwrap_or(dir)
        })
        .collect()
}

fn is_live(marker: &Path) -> bool {
    let Ok(file) = File::open(marker) else {
        return false;
    };
    matches!(file.try_lock_shared(), Err(TryLockError::WouldBlock))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_live_while_its_marker_is_held_and_a_left_marker_binds_no_one() {
        let common = tempfile::tempdir().expect("temp dir");
        let git_dir = common.path().join("worktrees/proj.a");
        std::fs::create_dir_all(&git_dir).expect("dir");
        assert!(live_runs(common.path()).is_empty());
        let live = LiveRun::mark(&git_dir).expect("mark");
        assert_eq!(live_runs(common.path()), vec![git_dir.clone()]);
        drop(live);
        assert!(live_runs(common.path()).is_empty());
        assert!(!git_dir.join(MARKER).exists());
        // What a `kill -9` leaves: the file, with no one holding its lock.
        std::fs::write(git_dir.join(MARKER), "").expect("write");
        assert!(live_runs(common.path()).is_empty());
    }
}

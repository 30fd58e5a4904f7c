//! A step's `no_progress` limit: while its agent runs, the worktree is looked at now and
//! then (every eighth of the limit, between 50 ms and a minute); when nothing in it changed
//! for the whole limit, the agent is killed and the attempt ends `Abandoned`, a failure its
//! error policy handles: work that stopped moving is abandoned and escalated, never waited
//! on forever. A Ctrl-C still interrupts as it always did.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::config::RunnersConfig as Runners;
use crate::runner::{self, AgentResult, Exit, Invocation};

/// Run `invocation`, abandoning it when the worktree at `root` shows no change for `limit`.
pub(super) fn invoke(
    runners: &Runners,
    invocation: &Invocation,
    interrupt: &AtomicBool,
    limit: Option<Duration>,
    root: &Path,
) -> runner::Result<AgentResult> {
    let Some(limit) = limit else {
        return runner::invoke(runners, invocation, interrupt);
    };
    let stop = AtomicBool::new(false);
    let abandoned = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let poll = (limit / 8).clamp(Duration::from_millis(50), Duration::from_secs(60));
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut seen = fingerprint(root);
            let mut since = Instant::now();
            let mut next_look = Instant::now() + poll;
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(25).min(poll));
                if interrupt.load(Ordering::SeqCst) {
                    stop.store(true, Ordering::SeqCst);
                    continue;
                }
                if Instant::now() < next_look {
                    continue;
                }
                next_look = Instant::now() + poll;
                let now = fingerprint(root);
                if now != seen {
                    seen = now;
                    since = Instant::now();
                } else if since.elapsed() >= limit {
                    abandoned.store(true, Ordering::SeqCst);
                    stop.store(true, Ordering::SeqCst);
                    return;
                }
            }
        });
        let result = runner::invoke(runners, invocation, &stop);
        done.store(true, Ordering::SeqCst);
        result.map(|mut r| {
            let ours = abandoned.load(Ordering::SeqCst) && !interrupt.load(Ordering::SeqCst);
            if ours && r.exit == Exit::Interrupted {
                r.exit = Exit::Abandoned;
            }
            r
        })
    })
}

/// What the worktree looks like, in one number: every file's path, size and modification
/// time under `root` (`.git` left out). Any write an agent makes changes it.
fn fingerprint(root: &Path) -> u64 {
    let mut hasher = DefaultHasher::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            if entry.file_name() == ".git" {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            entry.file_name().hash(&mut hasher);
            if meta.is_dir() {
                dirs.push(entry.path());
                continue;
            }
            meta.len().hash(&mut hasher);
            if let Ok(modified) = meta.modified() {
                modified.hash(&mut hasher);
            }
        }
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_write_changes_the_fingerprint_and_git_does_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join("a.txt"), "1").unwrap();
        let first = fingerprint(dir.path());
        assert_eq!(first, fingerprint(dir.path()));
        std::fs::write(dir.path().join(".git/index"), "x").unwrap();
        assert_eq!(first, fingerprint(dir.path()));
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/b.rs"), "fn b() {}").unwrap();
        let second = fingerprint(dir.path());
        assert_ne!(first, second);
        std::fs::write(dir.path().join("src/b.rs"), "fn c() {}").unwrap();
        assert_ne!(second, fingerprint(dir.path()));
    }
}

//! Commit-time checks: the secret scan of what is staged (pre-commit), and the detection of
//! `git commit --no-verify` in session worktrees.
//!
//! `--no-verify` skips pre-commit but never prepare-commit-msg, and both run inside the same
//! `git commit` process. So pre-commit leaves a stamp named after that process, and
//! prepare-commit-msg refuses a `commit` or `merge` whose stamp is missing. Sequencer commands
//! (rebase, cherry-pick, revert, am) skip pre-commit by design and are exempt.
//!
//! Process ids are predictable, so a stamp only counts when the file was made after that
//! git process started: its ctime, which no one can set, against the process's start time.
//! Stamps written ahead for the next few hundred pids count for nothing.

use std::path::{Path, PathBuf};

use super::scan::{self, Source};
use super::secrets::{Confidence, Finding, Options};
use super::{current_session, git_subcommand, Error};
use crate::git::Repo;

/// The stamp pre-commit leaves for the git process `git_pid`.
fn stamp_path(repo: &Repo, git_pid: u32) -> PathBuf {
    repo.git_dir().join(format!("bmad-verified.{git_pid}"))
}

/// What pre-commit decided.
#[derive(Debug, Default)]
pub struct PreCommit {
    /// Secrets that block the commit.
    pub blocking: Vec<Finding>,
    /// Lower-confidence findings, reported only.
    pub warnings: Vec<Finding>,
    /// Whether the run was in a session worktree (agents: allow comments not honoured).
    pub in_session: bool,
}

/// Scan the staged changes; when nothing blocks, stamp the commit as verified.
pub fn pre_commit(repo: &Repo, git_pid: u32) -> Result<PreCommit, Error> {
    let in_session = current_session(repo).is_some();
    // git commits this index, which for `commit -a` / `commit <paths>` is not .git/index.
    let source = match crate::env::Var::GitIndexFile.os() {
        Some(index) => Source::StagedIn(repo.workdir().join(index)),
        None => Source::Staged,
    };
    let findings = scan::scan(
        repo,
        &source,
        Options {
            honour_allow_comments: !in_session,
        },
    )
    .map_err(|e| match e {
        scan::Error::Git(g) => Error::Git(g),
        other => Error::Io {
            op: "could not scan the staged changes of",
            path: repo.workdir().to_path_buf(),
            source: std::io::Error::other(other.to_string()),
        },
    })?;
    let (blocking, warnings): (Vec<_>, Vec<_>) = findings
        .into_iter()
        .partition(|f| f.confidence == Confidence::High);
    if blocking.is_empty() {
        stamp(repo, git_pid)?;
    }
    Ok(PreCommit {
        blocking,
        warnings,
        in_session,
    })
}

/// pre-merge-commit has nothing to scan (the merged commits were scanned when they were
/// made); it only stamps, so a `git merge --no-verify` is told apart from a plain merge.
pub fn stamp(repo: &Repo, git_pid: u32) -> Result<(), Error> {
    let path = stamp_path(repo, git_pid);
    std::fs::write(&path, b"").map_err(|e| Error::io("could not write", path, e))
}

/// The outcome of prepare-commit-msg.
#[derive(Debug, PartialEq, Eq)]
pub enum Prepared {
    /// Not a session worktree: nothing to do.
    NotASession,
    /// The commit went through the hooks; its message now names the session.
    Verified,
    /// pre-commit did not run: `--no-verify`.
    Bypassed {
        /// The git subcommand (`commit` or `merge`).
        command: String,
    },
}

/// Refuse a commit that skipped pre-commit, and add `Bmad-Session: <id>` to the message.
pub fn prepare_commit_msg(
    repo: &Repo,
    git_pid: u32,
    argv: Option<&[String]>,
    message_file: &Path,
) -> Result<Prepared, Error> {
    keep_squashed_sessions(repo, message_file)?;
    let Some(session) = current_session(repo) else {
        return Ok(Prepared::NotASession);
    };
    let stamp = stamp_path(repo, git_pid);
    let stamped = made_after_start(&stamp, git_pid);
    let _ = std::fs::remove_file(&stamp);
    let command = argv.and_then(git_subcommand).unwrap_or("commit").to_owned();
    if !stamped && matches!(command.as_str(), "commit" | "merge") {
        return Ok(Prepared::Bypassed { command });
    }
    repo.add_trailer(message_file, &format!("Bmad-Session: {}", session.id))?;
    Ok(Prepared::Verified)
}

/// `git merge --squash` quotes each squashed commit's message, indented, so their
/// `Bmad-Session` trailers stop being trailers: lift each session named that way into a
/// trailer of the squash commit, so the merged work can still be traced to its sessions.
fn keep_squashed_sessions(repo: &Repo, message_file: &Path) -> Result<(), Error> {
    let Ok(message) = std::fs::read_to_string(message_file) else {
        return Ok(());
    };
    for id in squashed_sessions(&message) {
        repo.add_trailer(message_file, &format!("Bmad-Session: {id}"))?;
    }
    Ok(())
}

/// The sessions named by indented `Bmad-Session:` lines (quoted commit messages) that the
/// message's own trailers do not name yet, in order, once each.
fn squashed_sessions(message: &str) -> Vec<String> {
    let own: Vec<&str> = message
        .lines()
        .filter_map(|l| l.strip_prefix("Bmad-Session: "))
        .map(str::trim)
        .collect();
    let mut ids: Vec<String> = Vec::new();
    for line in message.lines() {
        let quoted = line.starts_with([' ', '\t']);
        if let Some(id) = line
            .trim_start()
            .strip_prefix("Bmad-Session: ")
            .map(str::trim)
        {
            if quoted && !own.contains(&id) && !ids.iter().any(|i| i == id) {
                ids.push(id.to_owned());
            }
        }
    }
    ids
}

/// Whether `file` was created (its ctime) after process `pid` started. Both are put on the
/// clock that counts from boot, the one `/proc/<pid>/stat` gives start times in (10 ms
/// ticks); anything that cannot be read is "no".
fn made_after_start(file: &Path, pid: u32) -> bool {
    use rustix::time::ClockId;
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(file) else {
        return false;
    };
    let Some(started) = process_start_since_boot(pid) else {
        return false;
    };
    let (real_now, boot_now) = (clock_secs(ClockId::Realtime), clock_secs(ClockId::Boottime));
    let ctime = meta.ctime() as f64 + meta.ctime_nsec() as f64 / 1e9;
    let made = boot_now - (real_now - ctime);
    made >= started
}

/// When process `pid` started, in seconds since boot (field 22 of `/proc/<pid>/stat`).
fn process_start_since_boot(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after the last `)`.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let ticks: f64 = after_name.split_whitespace().nth(19)?.parse().ok()?;
    let per_second = rustix::param::clock_ticks_per_second();
    (per_second > 0).then(|| ticks / per_second as f64)
}

fn clock_secs(clock: rustix::time::ClockId) -> f64 {
    let ts = rustix::time::clock_gettime(clock);
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_quoted_by_a_squash_become_trailers_once() {
        let message = "Squashed commit of the following:\n\ncommit 1\n\n    add lib\n\n    Bmad-Session: 20261124-010101-aaaaaa\n\ncommit 2\n\n    fix\n\n    Bmad-Session: 20261124-010101-aaaaaa\n\n    Bmad-Session: 20261124-020202-bbbbbb\n\nBmad-Session: 20261124-020202-bbbbbb\n";
        assert_eq!(squashed_sessions(message), ["20261124-010101-aaaaaa"]);
        assert!(squashed_sessions("plain\n\nBmad-Session: x\n").is_empty());
    }

    #[test]
    fn a_stamp_counts_only_when_made_after_the_process_started() {
        let dir = tempfile::tempdir().expect("temp dir");
        let early = dir.path().join("early");
        std::fs::write(&early, b"").expect("write");
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("spawn sleep");
        std::thread::sleep(std::time::Duration::from_millis(50));
        let late = dir.path().join("late");
        std::fs::write(&late, b"").expect("write");
        let pid = child.id();
        let (early_counts, late_counts) =
            (made_after_start(&early, pid), made_after_start(&late, pid));
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            !early_counts,
            "a stamp written before the process started counted"
        );
        assert!(
            late_counts,
            "a stamp written after the process started did not count"
        );
        assert!(!made_after_start(&dir.path().join("none"), pid));
    }
}

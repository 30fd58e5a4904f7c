//! Commit-time checks: the secret scan of what is staged (pre-commit), and the detection of
//! `git commit --no-verify` in session worktrees.
//!
//! `--no-verify` skips pre-commit but never prepare-commit-msg, and both run inside the same
//! `git commit` process. So pre-commit leaves a stamp named after that process, and
//! prepare-commit-msg refuses a `commit` or `merge` whose stamp is missing. Sequencer commands
//! (rebase, cherry-pick, revert, am) skip pre-commit by design and are exempt.

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
    let source = match std::env::var_os("GIT_INDEX_FILE") {
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
    let Some(session) = current_session(repo) else {
        return Ok(Prepared::NotASession);
    };
    let stamp = stamp_path(repo, git_pid);
    let stamped = stamp.exists();
    let _ = std::fs::remove_file(&stamp);
    let command = argv.and_then(git_subcommand).unwrap_or("commit").to_owned();
    if !stamped && matches!(command.as_str(), "commit" | "merge") {
        return Ok(Prepared::Bypassed { command });
    }
    repo.add_trailer(message_file, &format!("Bmad-Session: {}", session.id))?;
    Ok(Prepared::Verified)
}

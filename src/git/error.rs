//! Errors of the git layer: each names the object or path and the operation that failed.

use std::path::PathBuf;

/// A result of the git layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong while talking to git.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No repository at or above the directory.
    #[error("not inside a git repository: {}", path.display())]
    NotARepository {
        /// Where discovery started.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: Box<gix::Error>,
    },
    /// git itself would refuse this repository (`safe.directory`).
    #[error("refusing to use {}: it is owned by someone else (git calls this dubious ownership); if you trust it, run: git config --global --add safe.directory {}", path.display(), path.display())]
    DubiousOwnership {
        /// The repository's git dir.
        path: PathBuf,
    },
    /// A repository format git-bmad cannot read yet.
    #[error("{} {what}, which git-bmad cannot read yet; {next}", path.display())]
    UnsupportedFormat {
        /// Where the repository is.
        path: PathBuf,
        /// The format, with the config that names it.
        what: &'static str,
        /// What the user can do.
        next: &'static str,
    },
    /// A bare repository has no worktree to put sessions beside.
    #[error("{} is a bare repository; git-bmad needs a repository with a working tree", path.display())]
    Bare {
        /// The repository's git dir.
        path: PathBuf,
    },
    /// A filter the file's attributes name failed, and git's setting makes it required.
    #[error("{}: its clean filter failed, and the filter is required (`filter.<driver>.required`), so git would not store the file either; install the filter's program, or unset that setting to store the file as it is", path.display())]
    RequiredFilterFailed {
        /// The file.
        path: PathBuf,
        /// What the filter's process did.
        #[source]
        source: std::io::Error,
    },
    /// git would not store a file either (a required filter that cannot run, text its
    /// encoding does not hold): its own words, which say what to change.
    #[error("git refuses to store {what}: {reason}")]
    RefusedByGit {
        /// The file, or what of the worktree.
        what: String,
        /// What git said.
        reason: String,
    },
    /// A gix operation failed.
    #[error("{op}")]
    Gix {
        /// The operation, naming its object.
        op: String,
        /// What gix reported.
        #[source]
        source: Box<gix::Error>,
    },
    /// A compare-and-swap kept losing to other writers.
    #[error("could not update {name}: it kept changing under us ({attempts} attempts); another git-bmad process is writing to it, try again")]
    Contended {
        /// The reference.
        name: String,
        /// How many times we tried.
        attempts: u32,
    },
    /// A lock file blocks updates of a ref, and its owner may be dead.
    #[error("could not update {name}: {} has been locking it for {}s; if no git command is running, remove it: rm '{}'", lock.display(), age.as_secs(), lock.display())]
    Locked {
        /// The reference.
        name: String,
        /// The lock file.
        lock: std::path::PathBuf,
        /// How long it has existed.
        age: std::time::Duration,
    },
    /// A path given for this worktree lies outside it.
    #[error("{} is outside this repository's worktree ({}); name paths inside it, or run the command in the repository that holds them", path.display(), workdir.display())]
    OutsideWorktree {
        /// The path.
        path: PathBuf,
        /// The worktree.
        workdir: PathBuf,
    },
    /// An SSH signature could not be made or read.
    #[error("SSH signing: {what}")]
    Signing {
        /// What failed, and why.
        what: String,
    },
    /// The `git` executable is not on PATH.
    #[error("the `git` executable was not found on PATH; install git 2.38 or newer")]
    GitNotFound,
    /// A `git` command failed.
    #[error("`git {args}` failed{}: {}", code.map(|c| format!(" (exit {c})")).unwrap_or_default(), stderr.trim())]
    Command {
        /// The arguments, space-separated.
        args: String,
        /// Its exit code, if it exited.
        code: Option<i32>,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A file-system operation failed.
    #[error("{op} {}", path.display())]
    Io {
        /// The operation.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A stored object is not what it should be.
    #[error("{0}")]
    Corrupt(String),
    /// A worktree path has a name git refuses in a tree (`.git`, or one NTFS or HFS+ would
    /// read as such where those are protected).
    #[error("{path} cannot be recorded in a tree: {source}; rename it, as git refuses it too")]
    UnrecordableName {
        /// The path.
        path: String,
        /// What is wrong with a name of it.
        #[source]
        source: gix::validate::path::component::Error,
    },
    /// A merge met conflicts nothing could resolve; it was undone.
    #[error("merging {branch} conflicts in {}: the merge was undone; merge it by hand in {}, then resume", paths.join(", "), worktree.display())]
    MergeConflict {
        /// The branch merged.
        branch: String,
        /// The conflicted paths.
        paths: Vec<String>,
        /// Where the merge ran.
        worktree: PathBuf,
    },
}

impl Error {
    /// A git command that failed storing `what`, as git's refusal in its own words; any
    /// other error as it is.
    pub(super) fn refused_by_git(self, what: impl std::fmt::Display) -> Error {
        match self {
            Error::Command { stderr, .. } => Error::RefusedByGit {
                what: what.to_string(),
                reason: stderr.trim().to_owned(),
            },
            e => e,
        }
    }

    /// Wrap a gix error with the operation it interrupted.
    pub(crate) fn gix(op: impl Into<String>, source: impl Into<gix::Error>) -> Self {
        Error::Gix {
            op: op.into(),
            source: Box::new(source.into()),
        }
    }

    /// Wrap an I/O error with its operation and path.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

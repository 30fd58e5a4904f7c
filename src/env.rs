//! Environment variables every child process is cleared of.
//!
//! git exports these to hooks; inherited by a child git (ours, or an agent's), they would
//! point it at another repository, index or worktree. One list, used by the git layer for
//! its own commands and by the runner layer for agents.

/// Variables that would make a child git act on another repository, index or worktree.
pub const REPO_REDIRECTING_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_QUARANTINE_PATH",
];

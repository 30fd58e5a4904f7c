//! git-bmad: run autonomous AI coding agents on a git repository safely.
//!
//! Layers, lowest first (each only calls the ones below it):
//! - [`git`]: one `Repo` handle; gix in-process, the `git` binary for the rest;
//! - [`session`]: sessions, checkpoints, the journal in git notes, rollback;
//! - [`policy`]: what agents may not do; so far the secret scanner;
//! - [`cli`]: argument parsing, printing, exit codes.
#![warn(missing_docs)]

pub mod cli;
pub mod fs;
pub mod git;
pub mod policy;
pub mod session;
pub mod time;

//! git-bmad: run autonomous AI coding agents on a git repository safely.
//!
//! Layers, lowest first (each only calls the ones below it; `docs/architecture.md` §2, checked by
//! `tests/test_layers.rs`):
//! - [`config`]: `.bmad/config.yaml` and `git config bmad.*`, and bounded YAML reading;
//! - [`git`]: one `Repo` handle; gix in-process, the `git` binary for the rest;
//! - [`session`]: sessions, checkpoints, the journal in git notes, rollback, the fold of a
//!   run;
//! - [`runner`]: agent CLIs and other programs as processes with timeouts and output caps
//!   (with [`git`], the only layer that starts processes);
//! - [`policy`]: what agents may not do: hooks, the tool-call guard, the secret scanner, and
//!   the policy session operations obey;
//! - [`bmad`]: the BMAD-Method and spec-kit file formats;
//! - [`supervisor`]: playbook runs: steps, gates, error policies, parallel phases, resume;
//! - [`epic`]: an epic's stories in parallel sessions, verified and offered as pull requests;
//! - [`report`]: the morning report;
//! - [`cli`]: argument parsing, printing, exit codes; the composition root.
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod bmad;
pub mod cli;
pub mod config;
pub mod diagnostic;
pub mod env;
pub mod epic;
pub mod fs;
pub mod git;
pub mod paths;
pub mod policy;
pub mod report;
pub mod runner;
pub mod session;
pub mod supervisor;
pub mod text;
pub mod time;

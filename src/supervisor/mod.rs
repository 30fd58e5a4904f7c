//! The playbook supervisor: runs a playbook's steps in a session, one fresh agent process per
//! step, with checkpoints around every step, artifact checks before and after, gates that
//! park the run for a human, error policies, parallel phases, limits, stall detection and
//! resume after a crash.
//!
//! The run has no state of its own: everything is a journal event (the kinds are in
//! [`crate::session::schema`]), and [`state::RunState`] replays them. The rules live in
//! [`decide`], pure functions from the replayed state to the events that follow; the loop in
//! `engine.rs` records those events, spawns agents and takes checkpoints. A crash at any instant leaves the journal as it was after
//! its last complete event; `resume` reads it and goes on, re-running only a step that was
//! in flight and whose postconditions are not met.

mod attempt;
mod builtin;
mod checks;
mod commands;
mod decide;
mod engine;
mod error;
mod lock;
mod outcome;
pub mod playbook;
pub mod state;

pub use builtin::{builtin, scaffold, Scaffolded, BUILTINS, INDEX, TEMPLATE};
pub use checks::{evaluate, CheckEnv, CheckOutcome};
pub use commands::missing_commands;
pub use engine::{supervise, validate, Request, RunOptions};
pub use error::{Error, Result};
pub use outcome::{Outcome, Report};
pub use playbook::{parse as parse_playbook, Diagnostic, Playbook, Severity};
pub use state::{Answer, Gate, GateKind, RunState};

use std::path::{Path, PathBuf};

/// Where playbooks are looked up, and where `init` writes them.
pub const PLAYBOOK_DIR: &str = ".bmad/playbooks";

/// A playbook's text and where it came from.
#[derive(Clone, Debug)]
pub struct Source {
    /// Its name (the file stem, or the built-in's name).
    pub name: String,
    /// The file it was read from, or `built-in`.
    pub origin: String,
    /// Its text.
    pub text: String,
}

/// Find a playbook: a file path, else `<name>.yaml` in the session worktree's and then the
/// main worktree's `.bmad/playbooks/`, else a built-in.
pub fn resolve(query: &str, cwd: &Path, dirs: &[PathBuf]) -> Result<Source> {
    let as_path = cwd.join(query);
    let looks_like_path =
        query.contains('/') || query.ends_with(".yaml") || query.ends_with(".yml");
    let mut searched = Vec::new();
    let mut candidates = Vec::new();
    if looks_like_path {
        candidates.push(as_path);
    }
    if !query.contains('/') {
        for dir in dirs {
            let dir = dir.join(PLAYBOOK_DIR);
            for ext in ["yaml", "yml"] {
                let stem = query.trim_end_matches(".yaml").trim_end_matches(".yml");
                candidates.push(dir.join(format!("{stem}.{ext}")));
            }
        }
    }
    // The session worktree and the main one may be the same directory.
    let mut unique: Vec<PathBuf> = Vec::new();
    for path in candidates {
        if !unique.contains(&path) {
            unique.push(path);
        }
    }
    for path in unique {
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let name = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| query.to_owned());
                return Ok(Source {
                    name,
                    origin: path.display().to_string(),
                    text,
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                searched.push(path.display().to_string())
            }
            Err(e) => return Err(Error::Read { path, source: e }),
        }
    }
    if let Some(text) = builtin(query) {
        return Ok(Source {
            name: query.to_owned(),
            origin: "built-in".into(),
            text: text.to_owned(),
        });
    }
    Err(Error::UnknownPlaybook {
        query: query.to_owned(),
        searched,
    })
}

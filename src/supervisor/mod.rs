//! The playbook supervisor: runs a playbook's steps in a session, one fresh agent process per
//! step, with checkpoints around every step, artifact checks before and after, gates that
//! park the run for a human, error policies, parallel phases, limits, stall detection and
//! resume after a crash.
//!
//! The run has no state of its own: everything is a journal event (the kinds are in
//! [`crate::session::schema`]), and [`state::RunState`] replays them. The rules live in
//! `decide/`, pure functions from the replayed state to the events that follow; the loop in
//! `engine.rs` records those events, spawns agents and takes checkpoints. A crash at any
//! instant leaves the journal as it was after its last complete event; `resume` reads it and goes on, re-running only a step that was
//! in flight and whose postconditions are not met.

mod attempt;
mod builtin;
mod checks;
mod commands;
pub mod contain;
mod decide;
mod engine;
mod error;
mod evidence;
pub mod findings;
mod ledger;
mod library;
mod lock;
mod outcome;
pub mod playbook;
mod progress;
pub mod purse;

pub use builtin::{builtin, scaffold, Scaffolded, BUILTINS, INDEX, TEMPLATE};
pub use checks::{evaluate, CheckEnv, CheckOutcome};
pub use commands::missing_commands;
pub use engine::{record_answer, supervise, Request, RunOptions};
pub use error::{Error, Result};
pub use library::{
    check, compare_untrusted_playbook, list, playbook_dirs, playbook_of_session, resolve,
    reviewed_playbook, validate, Checked, Listed, Source, UntrustedPlaybook, PLAYBOOK_DIR,
};
pub use outcome::{Outcome, Report};
pub use playbook::{parse as parse_playbook, Diagnostic, Playbook, Severity};
pub use progress::{run_progress, RunProgress};
pub use purse::Purse;

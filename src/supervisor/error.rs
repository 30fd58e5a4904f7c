//! Errors of the supervisor.

use std::path::PathBuf;

use super::playbook::{Diagnostic, Severity};
use crate::session::run_state::Gate;

/// Why the supervisor could not do what was asked (a step that fails is an outcome, not this).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The session layer failed.
    #[error(transparent)]
    Session(#[from] crate::session::Error),
    /// An agent could not be started.
    #[error(transparent)]
    Runner(#[from] crate::runner::Error),
    /// The policy could not be read (its protected branches).
    #[error(transparent)]
    Policy(#[from] crate::policy::Error),
    /// A playbook file could not be read.
    #[error("could not read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No playbook by that name.
    #[error("no playbook {query:?}: not a file, not in .bmad/playbooks/ ({}), not built in (auto-feature, auto-validate)", searched.join(", "))]
    UnknownPlaybook {
        /// What the user typed.
        query: String,
        /// Where it was looked for.
        searched: Vec<String>,
    },
    /// The playbook has errors; nothing was run.
    #[error(
        "{origin} is not a valid playbook ({} error(s)); nothing was run:\n{}",
        count_errors(diagnostics),
        render(origin, diagnostics)
    )]
    Invalid {
        /// Where it came from.
        origin: String,
        /// Every finding.
        diagnostics: Vec<Diagnostic>,
    },
    /// `resume` or `answer` in a session where no run was started.
    #[error("session {session} has no playbook run; start one with `git bmad run <playbook>`")]
    NoRun {
        /// The session.
        session: String,
    },
    /// `resume --budget-usd` of a run that did not stop: there is nothing for the budget to
    /// go on from, and it would be dropped unseen.
    #[error("the run of session {session} did not stop ({state}): a budget is given to a run resumed after it stopped")]
    BudgetNotResumed {
        /// The session.
        session: String,
        /// Where the run stands.
        state: String,
    },
    /// `run` without a playbook in a session that names none.
    #[error("session {session} has no playbook; name one")]
    NoPlaybook {
        /// The session.
        session: String,
    },
    /// `run <other playbook>` in a session already running one.
    #[error("session {session} already runs playbook {running}; `git bmad resume` continues it (start another session for {requested})")]
    OtherPlaybook {
        /// The session.
        session: String,
        /// The playbook it runs.
        running: String,
        /// The one asked for.
        requested: String,
    },
    /// The run was aborted by a human.
    #[error("the run in session {session} was aborted; start a new session to run again")]
    Aborted {
        /// The session.
        session: String,
    },
    /// `answer` with no open gate.
    #[error("session {session} is not waiting at a gate; `git bmad status` shows where it is")]
    NoGate {
        /// The session.
        session: String,
    },
    /// An answer the open gate does not take; the gate is shown again.
    #[error("{answer:?} is not an answer to this gate")]
    UnknownAnswer {
        /// What the human typed.
        answer: String,
        /// The gate, still open.
        gate: Box<Gate>,
    },
    /// No step of the current phase can run and none waits on anything: a bug, reported
    /// rather than looped on.
    #[error("the run in session {session} cannot go on: {steps}; please report this with `git bmad journal --json`")]
    Stuck {
        /// The session.
        session: String,
        /// The steps and their states.
        steps: String,
    },
    /// Another supervisor is running this session's playbook.
    #[error("a run is already going on in session {session} (process {pid}); wait for it, or stop it with Ctrl-C / kill {pid}")]
    RunInProgress {
        /// The session.
        session: String,
        /// The process holding the lock.
        pid: i32,
    },
    /// `runners.sandbox` requires walls this machine cannot raise.
    #[error("agents cannot be contained as runners.sandbox requires: {why}")]
    Uncontained {
        /// Why not.
        why: String,
    },
    /// The playbook the run started with cannot be read back from git.
    #[error("the playbook of session {session} (blob {blob}) cannot be read back: {why}")]
    StoredPlaybook {
        /// The session.
        session: String,
        /// The blob.
        blob: String,
        /// Why.
        why: String,
    },
}

fn count_errors(diagnostics: &[Diagnostic]) -> usize {
    diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count()
}

fn render(origin: &str, diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(|d| format!("  {}", d.render(origin)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The supervisor's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

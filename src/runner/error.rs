//! Errors of the runner layer.

use std::path::PathBuf;

/// Why an agent or command could not be run (a run that fails is a result, not an error).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The program is not installed.
    #[error("runner `{runner}` needs `{program}`, which is not on PATH")]
    NotInstalled {
        /// The runner.
        runner: String,
        /// The program looked for.
        program: String,
    },
    /// The runner name is not one git-bmad knows.
    #[error("unknown runner `{runner}`; known runners: {known}")]
    UnknownRunner {
        /// The name.
        runner: String,
        /// The names git-bmad knows.
        known: String,
    },
    /// A role's API key variable is not set.
    #[error("role `{role}` takes its API key from ${variable}, which is not set; export it (the key is never stored in the config)")]
    KeyNotSet {
        /// The role.
        role: String,
        /// The variable.
        variable: String,
    },
    /// A dollar budget could not count what a step's agent spends.
    #[error("step `{step}`: {why}")]
    BudgetCannotCount {
        /// The step.
        step: String,
        /// Why, and what to configure.
        why: String,
    },
    /// The generic runner has no command configured.
    #[error("runner `generic` has no command: set runners.generic.command in .bmad/config.yaml (e.g. [\"my-agent\", \"--prompt\", \"{{prompt}}\"])")]
    GenericUnconfigured,
    /// The process could not be started.
    #[error("could not start {program}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A folder for what the process reports could not be made.
    #[error(
        "could not make a temporary folder for the agent's usage report (is $TMPDIR writable?)"
    )]
    Scratch {
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for the process failed.
    #[error("could not wait for {program}")]
    Wait {
        /// The program.
        program: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The runner layer's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

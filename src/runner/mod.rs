//! Invoking agent CLIs and shell commands: a fresh process per invocation, in a process group
//! of its own, with a timeout that kills the group and output captured with a cap; and
//! reading each CLI's output into one result shape.
//!
//! This layer knows nothing of sessions or journals: the supervisor decides what a result
//! means, redacts secrets and journals it.

mod agent;
mod error;
pub mod interrupt;
pub mod orchestration;
mod process;

pub use agent::{
    breaking_change_in, default_args, interpret, invoke, verdict_in, AgentResult, CliConfig,
    GenericConfig, Invocation, Kind, RunnersConfig, Verdict, GIT_ENV_TO_CLEAR,
};
pub use error::{Error, Result};
pub use orchestration::OrchestrationConfig;
pub use process::{run as run_process, Captured, Exit, Output, Spec};

//! Invoking agent CLIs and shell commands: a fresh process per invocation, in a process group
//! of its own, with a timeout that kills the group and output captured with a cap; and
//! reading each CLI's output into one result shape.
//!
//! One adapter file per CLI under [`adapter`]. This layer knows nothing of sessions or
//! journals: the supervisor decides what a result means, redacts secrets and journals it.

mod acp;
mod adapter;
mod agent;
mod error;
pub mod interrupt;
pub mod meter;
pub mod prices;
mod process;
pub mod sandbox;
mod select;
mod spawn;
mod usage_log;

pub use adapter::{
    agent_settings, is_agent_settings, is_guard_group, Adapter, AgentResult, Kind, ModelUsage,
    Verdict, CLAUDE_SETTINGS, GUARD_COMMAND,
};
pub use agent::{breaking_change_in, interpret, invoke, verdict_in, Invocation};
pub use error::{Error, Result};
pub use process::{run as run_process, Captured, Exit, Output, Spec};
pub use sandbox::Contained;
pub use select::{agent, budget_problem, config_problems, locate, Agent};
pub use spawn::Program;

//! Where a run stopped, as the supervisor reports it to its caller.

use serde::Serialize;

use super::playbook::Playbook;
use crate::session::run_state::{Gate, RunState};

/// Where a run stopped this time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    /// Every step is done or skipped.
    Completed,
    /// Parked at a gate, waiting for `git bmad answer`.
    Gated {
        /// The gate.
        gate: Gate,
    },
    /// Steps failed under their `stop` policy.
    Failed {
        /// The steps.
        steps: Vec<String>,
    },
    /// The cap on invocations was reached.
    InvocationLimit {
        /// The cap.
        limit: u32,
    },
    /// The budget was spent.
    BudgetLimit {
        /// The budget, in millionths of a dollar.
        limit_micro_usd: u64,
        /// Spent, in millionths of a dollar, as far as it can be counted.
        spent_micro_usd: u64,
        /// Models the agents ran that have no price: what they spent cannot be counted.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        unpriced: Vec<String>,
    },
    /// The token budget was spent.
    TokenLimit {
        /// The budget, in tokens.
        limit: u64,
        /// Used so far.
        spent: u64,
    },
    /// The premium request budget was spent.
    PremiumRequestLimit {
        /// The budget, in thousandths of a premium request.
        limit_milli: u64,
        /// Spent so far, in thousandths.
        spent_milli: u64,
    },
    /// The run's time limit was reached.
    RunTimeLimit {
        /// The limit in seconds.
        limit_secs: u64,
    },
    /// Interrupted; the state is saved.
    Interrupted,
    /// A human aborted the run.
    Aborted,
}

/// The outcome, with the playbook and the state it left.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Where it stopped.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The playbook.
    pub playbook: Playbook,
    /// The run's state.
    pub state: RunState,
}

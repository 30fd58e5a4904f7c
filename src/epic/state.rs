//! An epic run's state is the epic session's journal replayed
//! ([`crate::session::epic_state`]); this is how the run's record grows, and what its
//! stories may still spend together.

use super::Error;
use crate::session::schema::{Body, EpicBudget};
use crate::session::{self, Decision, NewEvent, Repo, Session};
use crate::supervisor::purse::{Amounts, Limits, Purse};

pub use crate::session::epic_state::{
    Cap, EpicState, GateDecision, OpenGate, StoryLimits, StoryState,
};

/// Journal `body` in the epic's session and fold it into `state`: the one way the run's
/// record grows, so the state in memory is always the journal's.
pub(super) fn record(
    repo: &Repo,
    session: &Session,
    state: &mut EpicState,
    step: Option<String>,
    body: Body,
) -> Result<(), Error> {
    let event = session::record(
        repo,
        session,
        NewEvent::new(body)
            .step(step)
            .decision(Some(Decision::Auto)),
    )?;
    state.apply(&event);
    Ok(())
}

/// The purse the run's stories share: the epic's budget, less what its stories spent.
pub(super) fn purse(state: &EpicState, budget: &EpicBudget, parallel: usize) -> Purse {
    let micro = crate::session::run_state::micro_usd;
    let milli_requests = crate::session::run_state::milli_requests;
    let spent = state.spent();
    let limits = Limits {
        micro_usd: budget.usd.map(micro),
        invocations: budget.invocations,
        ms: budget.time_secs.map(|s| s * 1000),
        tokens: budget.tokens,
        premium_milli: budget.premium_requests.map(milli_requests),
    };
    let spent = Amounts {
        micro_usd: micro(spent.usd),
        invocations: spent.invocations,
        ms: spent.ms,
        tokens: spent.tokens,
        premium_milli: milli_requests(spent.premium_requests),
    };
    Purse::new(limits, spent, parallel)
}

//! An epic run's state is the epic session's journal replayed
//! ([`crate::session::epic_state`]); this is how the run's record grows.

use super::Error;
use crate::session::schema::Body;
use crate::session::{self, Decision, NewEvent, Repo, Session};

pub use crate::session::epic_state::{EpicState, GateDecision, OpenGate, StoryState};

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

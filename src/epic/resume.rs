//! How an epic run goes on: the options its start recorded, read only as git-bmad wrote
//! them, with the defaults of the versions that did not record one; and the run's state
//! wherever it lives (here, or another clone as the last sync brought it).

use super::options::On;
use super::{names, EpicState, Error};
use crate::session::schema::EpicStarted;
use crate::session::{self, closeout, Repo, Session};

/// The remote pull requests go to when a run names none.
pub const DEFAULT_REMOTE: &str = "origin";
/// Stories that may fail in a row before the run stops starting more (the circuit breaker).
pub const DEFAULT_MAX_FAILURES: u32 = 3;

/// The epic's session, live here; `None` when it never ran.
pub fn session(repo: &Repo, epic: &str) -> Result<Option<Session>, Error> {
    Ok(closeout::find_by_name(repo, &names::session_name(epic))?)
}

/// The epic's state from its session's journal; a run that lives in another clone (a
/// coordinator job's) as the last sync brought it; `None` when it never ran.
pub fn state(repo: &Repo, epic: &str) -> Result<Option<EpicState>, Error> {
    let here = session(repo, epic)?;
    if here.as_ref().is_none_or(|s| s.elsewhere) {
        if let Some(state) = super::actions::remote_state(repo, epic)? {
            return Ok(Some(state));
        }
    }
    let Some(s) = here else {
        return Ok(None);
    };
    let journal = session::read_journal(repo, &s.id)?;
    Ok(Some(EpicState::replay(journal.events())))
}

/// The options `epic`'s run started with, to go on with: its record must be as git-bmad
/// wrote it (a record something else moved could widen what the run may do), and `on`,
/// when given, moves the stories elsewhere.
pub fn resume_options(repo: &Repo, epic: &str, on: Option<&str>) -> Result<EpicStarted, Error> {
    let no_run = || Error::NoRun(epic.to_owned());
    let session = session(repo, epic)?.ok_or_else(no_run)?;
    session::ref_record::ensure_vouched(repo, &session.id)?;
    let journal = session::read_journal(repo, &session.id)?;
    let started = EpicState::replay(journal.events())
        .started
        .ok_or_else(no_run)?;
    Ok(with_defaults(started, on))
}

/// `started` with what runs journaled before an option was recorded used, and `on` where
/// the stories run from now on.
fn with_defaults(mut started: EpicStarted, on: Option<&str>) -> EpicStarted {
    started.parallel = started.parallel.max(1);
    started.reviewers = started.reviewers.max(1);
    if let Some(on) = on {
        started.on = on.to_owned();
    } else if started.on.is_empty() {
        started.on = On::Here.as_str().to_owned();
    }
    if started.remote.is_empty() {
        started.remote = DEFAULT_REMOTE.to_owned();
    }
    if started.max_failures == 0 {
        started.max_failures = DEFAULT_MAX_FAILURES;
    }
    started
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_without_an_option_goes_on_with_its_default_and_on_moves_the_stories() {
        let options = |s: &EpicStarted| {
            let (on, remote) = (s.on.clone(), s.remote.clone());
            (s.parallel, s.reviewers, on, remote, s.max_failures)
        };
        let old = with_defaults(EpicStarted::default(), None);
        assert_eq!(options(&old), (1, 1, "here".into(), "origin".into(), 3));
        let recorded = EpicStarted {
            parallel: 4,
            reviewers: 2,
            on: "actions".into(),
            remote: "upstream".into(),
            max_failures: 7,
            ..EpicStarted::default()
        };
        let kept = with_defaults(recorded.clone(), None);
        assert_eq!(options(&kept), options(&recorded));
        assert_eq!(with_defaults(recorded, Some("here")).on, "here");
    }
}

//! An epic's stories on GitHub Actions runners (`epic run --on actions`): the coordinator
//! plans and journals the run where the user starts it and dispatches one job per ready
//! story; each job runs its story on a fresh runner from the pushed state
//! (`git bmad epic job`) and pushes its session after every step; the coordinator takes the
//! runner's reports from the remote, signed by a key the repository trusts, and dispatches
//! again when a runner is lost. The workflows are the user's files, written once by
//! `git bmad ci init github`.

mod api;
mod coordinator;
mod preflight;
mod runner;
pub mod workflows;

pub use coordinator::MAX_ATTEMPTS;
pub(super) use coordinator::{follow_story, publish_run, takes_minutes, Follow};
pub use preflight::dispatch_base;
pub(super) use preflight::preflight;
pub use runner::{run_job, JobOptions, JobOutcome};

use crate::session::{sync, JournalEntry, Repo, SessionId};

/// The story job's workflow, under `.github/workflows/`.
pub const STORY_WORKFLOW: &str = "bmad-story.yml";

/// The coordinator's workflow, under `.github/workflows/`.
pub const EPIC_WORKFLOW: &str = "bmad-epic.yml";

/// The name a story job's run gets (the workflow's `run-name`): how the coordinator finds
/// the runs of a story among the repository's.
pub fn run_name(epic: &str, key: &str, attempt: u32) -> String {
    format!("{}{attempt}", run_prefix(epic, key))
}

fn run_prefix(epic: &str, key: &str) -> String {
    format!("bmad epic {epic} story {key} attempt ")
}

/// A session's id and journal entries, each with whether a trusted key vouched for it.
type Record = (SessionId, Vec<(JournalEntry, bool)>);

/// The record of the session named `name` that `remote` had at the last sync: its id and
/// journal entries, each with whether a key this repository trusts vouched for it. Of
/// several sessions of that name, the newest with a vouched entry: one anybody else pushed
/// under the name, unsigned, hides nothing (else the newest, for what it says).
fn remote_record(repo: &Repo, remote: &str, name: &str) -> Result<Option<Record>, super::Error> {
    let mut ids: Vec<SessionId> = sync::list_remote(repo, remote)
        .map_err(super::Error::from)?
        .into_iter()
        .filter(|r| r.session.name == name)
        .map(|r| r.session.id)
        .collect();
    ids.sort_unstable_by(|a, b| b.cmp(a));
    let mut newest = None;
    for id in ids {
        let entries = sync::remote_entries(repo, remote, &id).map_err(super::Error::from)?;
        if entries.iter().any(|(_, vouched)| *vouched) {
            return Ok(Some((id, entries)));
        }
        newest.get_or_insert((id, entries));
    }
    Ok(newest)
}

/// The run of `epic` as the remotes had it at the last sync, for a run that lives in
/// another clone (a coordinator job's, another machine's) or never ran here: the entries a
/// key this repository trusts vouched for. `None` when no remote holds such a run.
pub fn remote_state(repo: &Repo, epic: &str) -> Result<Option<super::EpicState>, super::Error> {
    let name = super::names::session_name(epic);
    for remote in crate::session::repository::remote_names(repo) {
        let Some((_, entries)) = remote_record(repo, &remote, &name)? else {
            continue;
        };
        if entries.iter().any(|(_, vouched)| *vouched) {
            let vouched = entries.iter().filter(|(_, v)| *v).map(|(e, _)| &e.event);
            return Ok(Some(super::EpicState::replay(vouched)));
        }
    }
    Ok(None)
}

/// When story session `story` (its journal `journal`) last ran on a runner: the epic whose run took it there
/// (`?` when no epic session here names it). A person's answer at its gate is then only
/// journaled; `epic resume` hands the story to a runner, which goes on from it.
pub fn ran_on_actions(
    repo: &Repo,
    story: &crate::session::Session,
    journal: &crate::session::Journal,
) -> Result<Option<String>, super::Error> {
    // Where it last started: a runner names itself there.
    let last_start = journal
        .events()
        .filter_map(|e| match &e.body {
            crate::session::Body::StoryStage(s)
                if s.stage == crate::session::schema::Stage::Started =>
            {
                Some(s.runner.is_some())
            }
            _ => None,
        })
        .last();
    if last_start != Some(true) {
        return Ok(None);
    }
    for epic in crate::session::list(repo)? {
        if !epic.name.starts_with("epic-") {
            continue;
        }
        let journal = crate::session::read_journal(repo, &epic.id)?;
        let state = super::EpicState::replay(journal.events());
        let names_it = state
            .stories
            .keys()
            .any(|key| super::names::story_session_name(key) == story.name);
        if let (true, Some(started)) = (names_it, state.started) {
            return Ok(Some(started.epic));
        }
    }
    Ok(Some("?".into()))
}

/// `repo` with this clone's id made: a session that moves between clones is told apart
/// from one that lives here by it, and a handle opened before it was written would take
/// every session for another clone's. The handle returned is opened after.
pub(super) fn here(repo: &Repo) -> Result<Repo, super::Error> {
    crate::session::ensure_clone_id(repo)?;
    Ok(Repo::discover(repo.workdir())?)
}

/// Take the epic's session `name` over from `remote` for a coordinator in a CI job: the one
/// here, or the one the last coordinator handed back (taken even if its lease still runs:
/// one coordinator per epic runs at a time). Whether a run of the epic exists.
pub fn take_over(
    repo: &Repo,
    remote: &str,
    branch_prefix: &str,
    name: &str,
    policy: &dyn crate::session::Policy,
) -> Result<bool, super::Error> {
    let repo = &here(repo)?;
    sync::sync(repo, remote, branch_prefix)?;
    if crate::session::closeout::find_by_name(repo, name)?.is_some() {
        return Ok(true);
    }
    // Only a run a trusted key signed is taken over.
    let record = remote_record(repo, remote, name)?;
    let Some((id, _)) = record.filter(|(_, entries)| entries.iter().any(|(_, v)| *v)) else {
        return Ok(false);
    };
    crate::session::adopt(repo, remote, id.as_str(), true, policy)?;
    Ok(true)
}

/// Hand the epic's session `name` to `remote` (see [`crate::session::hand_off`]), when it
/// lives here: the next coordinator, or a person answering its gate, takes it from there.
pub(super) fn hand_back(
    repo: &Repo,
    remote: &str,
    name: &str,
    policy: &dyn crate::session::Policy,
) -> Result<(), super::Error> {
    if let Some(session) = crate::session::closeout::find_living_here(repo, name)? {
        crate::session::hand_off(repo, &session, remote, policy)?;
    }
    Ok(())
}

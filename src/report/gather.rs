//! Reading the repository for a report: every session's journal, and the evidence git-bmad
//! can check for itself (commits and diff on the branch since its base, PR links an epic
//! run recorded).

use std::collections::BTreeMap;
use std::time::Duration;

use super::fold::{fold, Window};
use super::{sort_sessions, summarise, Report, VERSION};
use crate::session::{self, Body, Repo};
use crate::time::Timestamp;

/// What a report covers.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The period's start.
    pub since: Timestamp,
    /// Now (a parameter, so a report over a fixture is the same on every run).
    pub now: Timestamp,
    /// A running session with nothing journaled for this long is stalled.
    pub stall_after: Duration,
}

/// Build the report over every session of the repository.
pub fn gather(repo: &Repo, options: Options) -> session::Result<Report> {
    let window = Window {
        since: options.since,
        now: options.now,
        stall_after: options.stall_after,
    };
    let sessions = session::list(repo)?;
    let mut journals = Vec::with_capacity(sessions.len());
    let mut untrusted = BTreeMap::new();
    for s in sessions {
        let journal = session::read_journal(repo, &s.id)?;
        let events: Vec<session::Event> = journal.events().cloned().collect();
        if let Some(problem) = not_trusted(&journal) {
            untrusted.insert(s.id.to_string(), problem);
        }
        journals.push((s, events));
    }
    // An epic run records each story's PR in its own journal, naming the story's session.
    let mut prs: BTreeMap<String, String> = BTreeMap::new();
    for event in journals.iter().flat_map(|(_, events)| events) {
        if let Body::StoryStage(stage) = &event.body {
            if let (Some(session), Some(pr)) = (&stage.session, &stage.pr) {
                prs.insert(session.clone(), pr.clone());
            }
        }
    }
    let mut reports = Vec::new();
    let mut epics = Vec::new();
    for (s, events) in &journals {
        let Some(mut report) = fold(s, events, window) else {
            continue;
        };
        // An epic session runs no playbook of its own: where it stands is its run's.
        if let Some(card) = super::epic::card(&s.name, events) {
            report.outcome = card.outcome;
            report.stopped_by = card.stopped.clone();
            epics.push(card);
        }
        report.evidence.pr = prs.get(s.id.as_str()).cloned();
        if let Some(problem) = untrusted.remove(s.id.as_str()) {
            report.problems.insert(0, problem);
        }
        let base_commit = events.iter().find_map(|e| match &e.body {
            Body::SessionStarted(started) => Some(started.base_commit.clone()),
            _ => None,
        });
        if let Some(work) = base_commit
            .map(|base| session::closeout::work_done(repo, s, &base))
            .transpose()?
            .flatten()
        {
            report.evidence.commits = Some(work.commits);
            report.evidence.pushed = Some(work.pushed);
            report.evidence.files_changed = Some(work.diff.files);
            report.evidence.insertions = Some(work.diff.insertions);
            report.evidence.deletions = Some(work.diff.deletions);
        }
        reports.push(report);
    }
    sort_sessions(&mut reports);
    let repository = repo.main_workdir()?.display().to_string();
    Ok(Report {
        version: VERSION,
        generated: options.now.rfc3339(),
        since: options.since.rfc3339(),
        repository,
        summary: summarise(&reports),
        epics,
        sessions: reports,
    })
}

/// Copies from another clone that no allowed signer vouched for: shown as a problem (no
/// replay, so no fold, ever sees them).
fn not_trusted(journal: &session::Journal) -> Option<super::Problem> {
    let events: Vec<&session::Event> = journal.untrusted().collect();
    let newest = events.last()?;
    Some(super::Problem {
        at: newest.ts.clone(),
        kind: "not_trusted".into(),
        step: None,
        what: format!(
            "{}{} {}: never acted on (git bmad doctor says how to trust it)",
            newest.kind(),
            match events.len() {
                1 => String::new(),
                n => format!(" and {} more", n - 1),
            },
            newest.untrusted_note(),
        ),
    })
}

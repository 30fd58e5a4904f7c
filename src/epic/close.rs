//! The epic's close-out, once every story is done, in a session of its own
//! (`epic-<id>-close`, branched from the epic's branch, so it sees the sprint status and
//! the progress document), supervised like any story:
//!
//! - v4: the SM is asked whether the epic needs more stories;
//!   its answer is read for the completion signal (`EPIC COMPLETE`, or `MORE STORIES:` with
//!   the stories it drafted). New stories are scope a human takes in: they wait on the
//!   close-out branch, and the run asks at its completion gate.
//! - With `--retro`: BMAD's headless retrospective (`/bmad-retrospective -H <epic>`, its
//!   stable orchestrator interface), whose document is offered as a draft pull request.

use super::gates;
use super::names::{self, close_session_name};
use super::options::EpicOptions;
use super::pipeline::{self};
use super::plan::Plan;
use super::state::{record, EpicState};
use super::Error;
use crate::policy::secrets::redact;
use crate::session::schema::Stage;
use crate::session::schema::{Body, EpicClosed};
use crate::session::{self, closeout, Repo, Session, StartOptions};
use crate::supervisor::{self, Outcome, Request};

/// How the close-out went.
pub(super) enum Closed {
    /// It ran to the end; what it found, and the close-out session's branch.
    Done(EpicClosed, String),
    /// Its run waits at a gate of the close-out session: answer there, then resume.
    Gated(String),
    /// It failed, and why.
    Failed(String),
    /// Interrupted; resume continues it.
    Interrupted,
}

/// Where the run stands after its close-out (or none).
pub(super) struct After {
    /// A close-out session waits at a gate (its name).
    pub gated: Option<String>,
    /// Why the run stops, if the close-out failed.
    pub stopped: Option<String>,
    /// Interrupted.
    pub interrupted: bool,
}

/// Close the epic out when it has one and every story is done, once: journal what it
/// found, and when the SM wants more stories (or gave no signal), open the completion gate
/// with its answer, whatever the gates mode (new scope is a human's call).
pub(super) fn close_out(
    repo: &Repo,
    epic: &Session,
    plan: &Plan,
    state: &mut EpicState,
    options: &EpicOptions<'_>,
) -> Result<After, Error> {
    let mut after = After {
        gated: None,
        stopped: None,
        interrupted: false,
    };
    let all_done = plan
        .to_run()
        .all(|s| state.story(&s.key).stage == Stage::Done);
    if !all_done || state.closed.is_some() || !pipeline::close_wanted(plan.era, options.retro) {
        return Ok(after);
    }
    // The close-out's agent draws on what the stories left of the epic's budget.
    let purse = super::state::purse(state, &options.budget, 1);
    match run(repo, epic, plan, options, &purse)? {
        Closed::Done(closed, branch) => {
            let asked = closed.answer.clone();
            let complete = closed.complete;
            record(repo, epic, state, None, Body::EpicClosed(closed))?;
            if let (Some(answer), false) = (asked, complete == Some(true)) {
                let what = if complete == Some(false) {
                    "needs more stories"
                } else {
                    "gave no completion signal"
                };
                let question = format!(
                    "The SM says epic {} {what}. What it drafted waits on branch {}: review and merge it, then git bmad epic run {} takes new stories up. continue finishes the epic as it is; abort records it unfinished.",
                    plan.epic, branch, plan.epic
                );
                gates::open(repo, epic, state, names::COMPLETION, &question, &answer)?;
            }
        }
        Closed::Gated(why) => after.gated = Some(why),
        Closed::Failed(why) => after.stopped = Some(why),
        Closed::Interrupted => after.interrupted = true,
    }
    Ok(after)
}

/// Run (or continue) the close-out of `plan`'s epic, based on the epic session's branch,
/// its agents drawing on `purse`.
fn run(
    repo: &Repo,
    epic: &Session,
    plan: &Plan,
    options: &EpicOptions<'_>,
    purse: &supervisor::Purse,
) -> Result<Closed, Error> {
    let name = close_session_name(&plan.epic);
    let session = match closeout::find_by_name(repo, &name)? {
        Some(s) => s,
        None => {
            let start = StartOptions {
                name,
                base: Some(epic.short_branch().to_owned()),
                playbook: Some("bmad-epic-close".into()),
            };
            super::start_session(repo, &start, options.policy, options.progress)?
        }
    };
    let report = supervisor::supervise(
        repo,
        &session,
        Request::Start {
            source: pipeline::close_playbook(plan.era, options.retro),
            args: vec![plan.epic.clone()],
        },
        supervisor::RunOptions {
            time_limit: None,
            purse: Some(purse),
            config: options.config,
            feature_env: Default::default(),
            observer: &mut |_| {},
            interrupt: options.interrupt,
        },
    )?;
    match &report.outcome {
        Outcome::Completed => {}
        Outcome::Gated { gate } => {
            return Ok(Closed::Gated(format!(
                "{} (at {}; answer with git bmad answer -s {}, then git bmad epic resume {})",
                gate.question, gate.step, session.name, plan.epic
            )))
        }
        Outcome::Interrupted => return Ok(Closed::Interrupted),
        other => {
            let why = match super::story::pipeline_end(other, None) {
                Some((Some((_, why)), _)) => why,
                _ => format!("ended: {other:?}"),
            };
            return Ok(Closed::Failed(format!("the close-out {why}")));
        }
    }
    let journal = session::read_journal(repo, &session.id)?;
    let answer: Option<String> = journal
        .events()
        .filter_map(|e| match &e.body {
            Body::StepCompleted(o) if e.step.as_deref() == Some("more-stories") => {
                Some(o.final_text.clone().unwrap_or_default())
            }
            _ => None,
        })
        .last();
    let complete = answer.as_deref().map(completion_signal);
    closeout::commit_work(
        repo,
        &session,
        &format!(
            "epic {}: close-out\n\nBmad-Session: {}",
            plan.epic, session.id
        ),
    )?;
    // Commits of its own, beyond the epic's branch (which moves on with its progress).
    let epic_head = closeout::branch_head(repo, epic)?
        .map(|h| h.to_string())
        .unwrap_or_default();
    let worked = closeout::work_done(repo, &session, &epic_head)?.is_some_and(|w| w.commits > 0);
    let retrospective = if options.retro && worked {
        Some(super::closeout::pull_request(
            repo,
            &session,
            epic.short_branch(),
            &format!("Epic {} close-out", plan.epic),
            &format!("epic-{}", plan.epic),
            &options.remote,
            options.interrupt,
        )?)
    } else {
        None
    };
    let branch = session.short_branch().to_owned();
    Ok(Closed::Done(
        EpicClosed {
            session: session.id.to_string(),
            complete: complete.flatten(),
            answer: answer.map(|a| redact(crate::text::last_chars(&a, 600).trim())),
            retrospective,
        },
        branch,
    ))
}

/// The SM's completion signal: `Some(true)` complete, `Some(false)` more stories, `None`
/// when the answer gives neither (a human reads it).
fn completion_signal(answer: &str) -> Option<bool> {
    let upper = answer.to_uppercase();
    let more = upper.rfind("MORE STORIES");
    let complete = upper.rfind("EPIC COMPLETE");
    match (more, complete) {
        (Some(m), Some(c)) => Some(c > m),
        (Some(_), None) => Some(false),
        (None, Some(_)) => Some(true),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_signal_in_the_answer_counts() {
        assert_eq!(completion_signal("All done.\nEPIC COMPLETE"), Some(true));
        assert_eq!(
            completion_signal("Epic complete? No.\nMORE STORIES: 4.5.export.md"),
            Some(false)
        );
        assert_eq!(
            completion_signal("I considered MORE STORIES but no.\n**Epic complete**"),
            Some(true)
        );
        assert_eq!(completion_signal("I am not sure."), None);
    }
}

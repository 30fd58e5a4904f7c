//! A story's status, set in the project files and, inside a session, in its journal.

use super::Error;
use crate::bmad::project::Project;
use crate::bmad::status::Status;
use crate::bmad::status_change::StatusChange;
use crate::session::schema::{Body, StoryStatus};
use crate::session::{self, closeout, Decision, NewEvent, Repo, Session};

/// Set `key`'s status (see [`Project::set_status`]), signed by `by`. When `repo` is a session
/// worktree, the change is journaled there too, so the session's record says which stories
/// it moved and who signed.
pub fn set_story_status(
    project: &Project,
    repo: Option<&Repo>,
    key: &str,
    to: &Status,
    by: &str,
    force: bool,
) -> Result<StatusChange, Error> {
    let change = project.set_status(key, to, by, force)?;
    if let Some(repo) = repo {
        if let Ok(s) = session::locate(repo, None) {
            let body = Body::StoryStatus(StoryStatus {
                key: change.key.clone(),
                to: change.to.clone(),
                by: change.by.clone(),
                at: change.at.clone(),
                sprint: serde_json::to_value(&change.sprint).unwrap_or_default(),
                // v7: the ticket's plan is the file its status lives in.
                story_file: change
                    .story_file
                    .clone()
                    .or_else(|| change.plan.as_ref().map(|p| p.file.clone())),
                stories_json: change.stories_json.clone(),
            });
            session::record(
                repo,
                &s,
                NewEvent::new(body)
                    .step(Some(change.key.clone()))
                    .decision(Some(Decision::Human))
                    .response(Some(format!("{} by {}", change.to, change.by))),
            )?;
        }
    }
    Ok(change)
}

/// v7: a built ticket git-bmad verified is `done`, the orchestrator's word (no skill writes
/// it), set in the plan the story's commit carries, signed and journaled in its session.
pub(super) fn mark_ticket_done(
    repo: &Repo,
    session: &Session,
    worktree: &std::path::Path,
    key: &str,
) -> Result<(), Error> {
    let handle = session.worktree_handle(repo)?;
    let project = Project::load(worktree, None)?;
    let by = "git-bmad epic runner";
    set_story_status(&project, handle.as_ref(), key, &Status::Done, by, true)?;
    Ok(())
}

/// Move a finished story's sprint status on the epic's branch, signed and committed. The
/// story branches never touch sprint-status.yaml, so branches stacked on two stories merge
/// without a conflict on its adjacent lines.
pub(super) fn sync_sprint_status(
    repo: &Repo,
    epic: &Session,
    key: &str,
    to: crate::bmad::status::Status,
) -> Result<(), Error> {
    let worktree = epic.worktree_handle(repo)?;
    let handle = worktree.as_ref().unwrap_or(repo);
    let project = Project::load(handle.workdir(), None)?;
    set_story_status(
        &project,
        Some(handle),
        key,
        &to,
        "git-bmad epic runner",
        true,
    )?;
    closeout::commit_work(
        repo,
        epic,
        &format!("sprint-status: {key} is {to}\n\nBmad-Story: {key}"),
    )?;
    Ok(())
}

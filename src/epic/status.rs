//! A story's status, set in the project files and, inside a session, in its journal.

use super::Error;
use crate::bmad::project::{Project, StatusChange};
use crate::bmad::status::Status;
use crate::session::schema::{Body, StoryStatus};
use crate::session::{self, Decision, NewEvent, Repo};

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
                story_file: change.story_file.clone(),
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

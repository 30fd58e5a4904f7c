//! What git-bmad checks itself before a story counts as done, whatever its agents said: the
//! story's status in its own files, the spec's `baseline_revision` against the commit the
//! story started at, and a blocking condition the agent halted on.

use std::path::Path;

use super::pipeline::Era;
use super::Error;
use crate::bmad::project::Project;
use crate::bmad::status::Status;

/// The verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Good; the sprint status should move to this (it lags the story file).
    Good {
        /// The status to write, if the sprint status is behind.
        set_status: Option<Status>,
    },
    /// The agent halted on this condition: a human must answer it.
    Blocked(String),
    /// Not done, and why.
    Bad(String),
}

/// Check story `key` in the session worktree `root`.
pub fn story(root: &Path, key: &str, era: Era, baseline: &str) -> Result<Verdict, Error> {
    let project = Project::load(root, None)?;
    let Some(view) = project.stories.iter().find(|s| s.key == key) else {
        return Ok(Verdict::Bad(format!(
            "story {key} is no longer in the project's files after its pipeline ran"
        )));
    };
    if view.is_blocked() {
        return Ok(Verdict::Blocked(
            view.blocking_condition
                .clone()
                .unwrap_or_else(|| "the story halted as blocked, with no condition written".into()),
        ));
    }
    let file_status = view.file_status.clone().unwrap_or(view.status.clone());
    let finished = match era {
        // bmad-build-auto ends a finished story at `done` in the spec's frontmatter.
        Era::V611 => file_status == Status::Done,
        // dev-story ends at `review`; code-review moves it to `done`.
        Era::V6 | Era::V4 => matches!(file_status, Status::Review | Status::Done),
    };
    if !finished {
        return Ok(Verdict::Bad(format!(
            "the agents said they were done, but story {key}'s file says {file_status}"
        )));
    }
    if era == Era::V611 {
        let spec = view.file.as_deref().and_then(|f| {
            project
                .files
                .iter()
                .find(|s| project.layout.shown(&s.path) == f)
        });
        if let Some(recorded) = spec.and_then(|s| s.baseline_revision.as_deref()) {
            let matches = !baseline.is_empty()
                && (baseline.starts_with(recorded) || recorded.starts_with(baseline));
            if !matches {
                return Ok(Verdict::Bad(format!(
                    "the spec's baseline_revision {recorded} is not the commit the story started at ({baseline})"
                )));
            }
        }
    }
    let set_status = (view.status.rank() < file_status.rank() && view.sprint_line.is_some())
        .then_some(file_status);
    Ok(Verdict::Good { set_status })
}

//! What git-bmad checks itself before a story counts as done, whatever its agents said: the
//! story's status in its own files, the spec's `baseline_revision` against the commit the
//! story started at, a blocking condition the agent halted on, and work beyond BMAD's own
//! bookkeeping.

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
    // A ticket the run started was not done: no BMAD skill writes `done`, only a person or
    // the orchestrator, after its own verification. An agent that wrote it claims what it
    // may not.
    if era == Era::V7 && view.raw_status == "done" {
        return Ok(Verdict::Bad(format!(
            "an agent marked ticket {key} done, which only a person or git-bmad (after verifying it) writes; a build ends at built"
        )));
    }
    let finished = match era {
        // bmad-build-auto ends a ticket at `built` in its plan; `done` is the orchestrator's.
        Era::V7 => view.raw_status == "built",
        // bmad-build-auto ends a finished story at `done` in the spec's frontmatter.
        Era::V611 => file_status == Status::Done,
        // dev-story ends at `review`; code-review moves it to `done`.
        Era::V6 | Era::V4 => matches!(file_status, Status::Review | Status::Done),
    };
    if !finished {
        let says = match era {
            Era::V7 => view.raw_status.clone(),
            _ => file_status.to_string(),
        };
        return Ok(Verdict::Bad(format!(
            "the agents said they were done, but story {key}'s file says {says}"
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

/// Why a story's branch holds no work, when all it changed (`changed`, since the story
/// started) is BMAD's bookkeeping: a sprint status, a `stories.json`, git-bmad's own files
/// under `.bmad/`, and the story's own file (`story_file`), whose status line moving is
/// what an agent that did nothing would write.
pub fn bookkeeping_only(changed: &[&str], story_file: Option<&str>) -> Option<String> {
    let bookkeeping = |path: &str| is_bookkeeping(path, story_file);
    (!changed.is_empty() && changed.iter().all(|p| bookkeeping(p))).then(|| {
        format!(
            "the story's branch changes only BMAD's bookkeeping ({}): nothing was implemented",
            changed.join(", ")
        )
    })
}

pub use crate::bmad::bookkeeping::is_bookkeeping;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_branch_that_moves_only_statuses_holds_no_work() {
        let story = Some("_bmad-output/implementation-artifacts/3-1-api.md");
        let only_status = [
            "_bmad-output/implementation-artifacts/3-1-api.md",
            "_bmad-output/implementation-artifacts/sprint-status.yaml",
            ".bmad/sessions/x/journal.md",
        ];
        let why = bookkeeping_only(&only_status, story).unwrap();
        assert!(why.contains("sprint-status.yaml"), "{why}");
        assert_eq!(
            bookkeeping_only(&["src/api/client.rs", only_status[0]], story),
            None
        );
        assert_eq!(
            bookkeeping_only(
                &["_bmad-output/implementation-artifacts/3-2-other.md"],
                story
            ),
            None,
            "another story's file is not this story's bookkeeping"
        );
        assert_eq!(
            bookkeeping_only(&[], story),
            None,
            "no change is judged elsewhere"
        );
    }
}

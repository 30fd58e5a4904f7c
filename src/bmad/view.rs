//! What a project's stories look like to everyone who reads them, and what was wrong on the
//! way: the records the loaders (`project`, `spec_folder`) fill and the matchers read.

use serde::Serialize;

use super::status::Status;
use super::{Error, Finding};

/// One story, from wherever it is known.
#[derive(Clone, Debug, Serialize)]
pub struct StoryView {
    /// The sprint-status key, or the file's stem for a story only on disk.
    pub key: String,
    /// The title from the story file.
    pub title: Option<String>,
    /// The status: the sprint status's when it has the story, else the file's.
    pub status: Status,
    /// The status as written where it was read.
    pub raw_status: String,
    /// The epic number.
    pub epic: Option<u32>,
    /// The story file, relative to the project root.
    pub file: Option<String>,
    /// The status the story file writes, when it differs in meaning from the sprint status.
    pub file_status: Option<Status>,
    /// Keys it depends on.
    pub depends_on: Vec<String>,
    /// Paths it expects to change (`touches` in its frontmatter).
    pub touches: Vec<String>,
    /// It says it changes no behaviour (a refactor): new tests that pass on its base are
    /// what it should have.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub refactor: bool,
    /// Line in sprint-status.yaml.
    pub sprint_line: Option<usize>,
    /// What bmad-build-auto halted on, for a blocked story.
    pub blocking_condition: Option<String>,
    /// Files that could each be this story's: none is tied to it, none is ever written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ambiguous: Vec<String>,
    /// Whether its key follows BMAD's grammar; `next` skips those that do not, as BMAD does.
    pub recognised: bool,
    /// Whether its file is a bmad-build spec (v6.11), whose status leads the sprint's.
    #[serde(skip)]
    pub spec_lifecycle: bool,
    /// A v7 ticket: what depends on it may start once it is in review (`tickets.py` counts a
    /// prerequisite met when done or in review), and its blocking condition says in full what
    /// it waits for.
    #[serde(skip)]
    pub v7_ticket: bool,
}

impl StoryView {
    /// Whether what depends on it may start.
    pub fn meets_dependents(&self) -> bool {
        let reviewed = self.status == Status::Review || self.status.is_built();
        self.status == Status::Done || self.v7_ticket && reviewed
    }

    /// Whether its sprint-status word is one only git-bmad reads as work to do (`in
    /// progress`, `Ready`): BMAD's sprint tools call it illegal and would reset it, so the
    /// story is left to a person rather than recommended on a guess.
    pub fn word_unread_by_bmad(&self) -> bool {
        self.sprint_line.is_some()
            && self.status.priority().is_some()
            && !super::status::Lifecycle::Story.reads_word(&self.raw_status)
    }

    /// Why it is blocked, as a person reads it.
    pub fn why_blocked(&self) -> Option<String> {
        let condition = self.blocking_condition.as_deref()?;
        Some(if self.v7_ticket {
            condition.to_owned()
        } else {
            format!("bmad-build-auto halted: {condition}")
        })
    }

    /// Halted (bmad-build-auto's `blocked`), by either file.
    pub fn is_blocked(&self) -> bool {
        self.status == Status::Blocked || self.file_status == Some(Status::Blocked)
    }

    /// Whether its file's status and the sprint's tell the same story. bmad-build (v6.11)
    /// writes its spec first and brings the sprint along only when implementing starts
    /// (in-progress) and when it presents the result (review): a spec in review beside a
    /// sprint still in progress, or done beside a sprint in review until code review closes
    /// it, is bmad-build between two steps, not drift.
    pub fn file_agrees(&self) -> bool {
        let Some(file) = &self.file_status else {
            return true;
        };
        *file == self.status
            || self.spec_lifecycle
                && matches!(
                    (file, &self.status),
                    (Status::Review, Status::InProgress) | (Status::Done, Status::Review)
                )
    }
}

/// One problem `check` reports.
#[derive(Clone, Debug, Serialize)]
pub struct Problem {
    /// `error` or `warning`.
    pub severity: &'static str,
    /// The file, relative to the root.
    pub file: String,
    /// 1-based line (0: the whole file).
    pub line: usize,
    /// What is wrong and what to do.
    pub message: String,
}

impl Problem {
    /// A file that could not be loaded, as an error at its line; the message does not
    /// repeat the file and line the problem already names.
    pub(super) fn of_error(file: String, error: &Error) -> Problem {
        let (line, message) = match error {
            Error::Parse { line, message, .. } => (*line, message.clone()),
            other => (0, other.to_string()),
        };
        Problem {
            severity: "error",
            file,
            line,
            message,
        }
    }

    /// A file's finding as a problem.
    pub(super) fn of(file: &str, finding: &Finding) -> Problem {
        Problem {
            severity: finding.severity.as_str(),
            file: file.to_owned(),
            line: finding.line,
            message: finding.message.clone(),
        }
    }
}

//! The BMAD-Method and spec-kit file formats, read as their tools write them, and written
//! back so that a diff shows only what changed.
//!
//! - [`analysis`]: menus, confidence, loop and stall limits (the decision engine);
//! - [`layout`]: where the BMAD install, its config, the sprint status and the stories are;
//! - [`sprint`]: `sprint-status.yaml`, every era, edited in place;
//! - [`story`]: story files (v4, v6, v6.11 specs), their status and Change Log;
//! - [`spec_folder`]: v6.11 stories mode (`stories.yaml` and `stories/<id>-*.md`);
//! - [`status`]: the status words of every era, normalised;
//! - [`project`]: the stories of a project as one list, checked and changed together;
//! - [`queue`]: dependency order and what to work on next;
//! - [`stories_json`]: the `stories.json` index;
//! - [`ticket_tree`]: v7's ticket tree (`tickets.toml`, leaf and plan files);
//! - [`speckit`]: the spec-kit feature and its `tasks.md`;
//! - [`workflow`]: workflows (`workflow.yaml`, instructions, step files) and templates.

pub mod analysis;
pub mod bookkeeping;
mod change_log;
mod key;
pub mod layout;
pub mod project;
mod prose_dependencies;
pub mod queue;
pub mod spec_folder;
pub mod speckit;
pub mod sprint;
pub mod sprint_merge;
pub mod status;
pub mod status_change;
mod status_field;
pub mod stories_json;
pub mod story;
mod story_files;
mod story_match;
pub mod ticket_tree;
mod view;
pub mod workflow;
mod write;
mod yaml_lines;

use std::path::{Path, PathBuf};

/// Something odd in a file that does not stop it loading: a finding like any validator's.
pub use crate::diagnostic::{Diagnostic as Finding, Severity};

/// Errors of the BMAD layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{action} {}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file is not in the format it should be.
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A sprint-status file git-bmad can read but not edit in place.
    #[error("{} is laid out in a way git-bmad cannot edit without rewriting it (flow style, multi-line values); change it by hand", path.display())]
    NotEditable {
        /// The file.
        path: PathBuf,
    },
    /// No entry for a key.
    #[error("no story or epic `{key}` in {}; `git bmad stories list` shows the keys", path.display())]
    UnknownKey {
        /// The key.
        key: String,
        /// The file.
        path: PathBuf,
    },
    /// A status change that is not allowed.
    #[error("refused to move `{key}`: {why}")]
    IllegalTransition {
        /// The key.
        key: String,
        /// Why.
        why: String,
    },
    /// The file changed between reading and writing.
    #[error("{} changed while git-bmad was updating it; nothing was written. Run the command again", path.display())]
    ChangedMeanwhile {
        /// The file.
        path: PathBuf,
    },
    /// Nothing to work on: no sprint status and no stories directory.
    #[error("no BMAD sprint status or stories found here (looked for {}); run BMAD's sprint-planning first, or pass --dir", searched.join(", "))]
    NothingFound {
        /// Where it looked.
        searched: Vec<String>,
    },
    /// Stories depend on each other in a circle.
    #[error("stories depend on each other in a cycle: {}", cycle.join(" → "))]
    Cycle {
        /// The stories in the cycle, the first repeated at the end.
        cycle: Vec<String>,
    },
}

impl Error {
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    /// Whether the error is the user's input rather than a failure.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::Parse { .. }
                | Error::UnknownKey { .. }
                | Error::IllegalTransition { .. }
                | Error::Cycle { .. }
        )
    }
}

/// The BMAD layer's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod robustness {
    use std::path::Path;

    /// Texts built from the characters these formats care about, by a fixed-seed generator:
    /// the same cases every run, thousands of them.
    fn texts(count: usize) -> Vec<String> {
        const PIECES: &[&str] = &[
            "development_status:",
            "\n",
            "  ",
            "epic-1",
            "1-2-x",
            ": ",
            "backlog",
            "'",
            "\"",
            "#",
            "---",
            "Status:",
            "## Status",
            "- [ ]",
            "- [x]",
            "[AI-Review][High]",
            "{",
            "}",
            "[",
            "]",
            "é",
            "\t",
            "|",
            "## Change Log",
            "last_updated: 01-02-2026 10:00",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        (0..count)
            .map(|_| {
                let mut text = String::new();
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let len = (seed >> 59) as usize + 1;
                for _ in 0..len * 3 {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    text.push_str(PIECES[(seed >> 33) as usize % PIECES.len()]);
                }
                text
            })
            .collect()
    }

    #[test]
    fn parsers_never_panic() {
        let now = crate::time::Timestamp::from_secs(0);
        for text in texts(3000) {
            if let Ok(s) = super::sprint::SprintStatus::parse(Path::new("s.yaml"), text.clone()) {
                for e in s.entries.clone() {
                    let _ = s.with_status(&e.key, &super::status::Status::Done, true, &now);
                }
            }
            let story = super::story::Story::parse(Path::new("1-1-x.md"), text.clone());
            let _ = story.with_status(&super::status::Status::Review, "t", &now, true);
            let _ = super::speckit::phases(&text);
            let _ = super::stories_json::parse(Path::new("s.json"), &text);
        }
    }

    #[test]
    fn a_file_changed_between_read_and_write_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sprint-status.yaml");
        std::fs::write(&path, "development_status:\n  1-1-a: backlog\n").unwrap();
        let s = super::sprint::SprintStatus::load(&path).unwrap();
        let (text, _) = s
            .with_status(
                "1-1-a",
                &super::status::Status::ReadyForDev,
                false,
                &crate::time::Timestamp::from_secs(0),
            )
            .unwrap();
        std::fs::write(
            &path,
            "development_status:\n  1-1-a: backlog\n  1-2-b: backlog\n",
        )
        .unwrap();
        let err = s.write(&text).unwrap_err().to_string();
        assert!(
            err.contains("changed while git-bmad was updating it"),
            "{err}"
        );
        assert!(std::fs::read_to_string(&path).unwrap().contains("1-2-b"));
    }
}

//! A status change written to every file that holds the story's status: the sprint
//! status, the story file and `stories.json`, signed, all or nothing.

use serde::Serialize;

use super::project::Project;
use super::sprint::SprintChange;
use super::status::Status;
use super::stories_json;
use super::{Error, Result};

impl Project {
    /// Set a story's status in the sprint status and its story file (and stories.json),
    /// signed; all or nothing.
    pub fn set_status(
        &self,
        key: &str,
        to: &Status,
        by: &str,
        force: bool,
    ) -> Result<StatusChange> {
        let now = crate::time::Timestamp::now();
        if let Some(tree) = &self.tickets {
            let marked = tree.mark(key, to, force)?;
            return Ok(StatusChange {
                key: marked.reference,
                from: marked.from,
                to: marked.to,
                by: by.to_owned(),
                at: now.rfc3339(),
                sprint: None,
                story_file: None,
                plan: Some(Plan {
                    file: self.layout.shown(&marked.plan),
                    created: marked.created,
                }),
                stories_json: None,
            });
        }
        let view = self.stories.iter().find(|s| {
            s.key == key
                || s.file
                    .as_deref()
                    .is_some_and(|f| f.ends_with(&format!("/{key}")) || f == key)
        });
        if let Some(v) = view.filter(|v| !v.ambiguous.is_empty()) {
            return Err(Error::IllegalTransition {
                key: v.key.clone(),
                why: format!(
                    "it matches more than one file ({}); rename or remove the extra ones first, git-bmad never guesses which to change",
                    v.ambiguous.join(", ")
                ),
            });
        }
        let story = view
            .and_then(|v| v.file.as_ref())
            .and_then(|f| self.files.iter().find(|s| self.layout.shown(&s.path) == *f));
        let in_sprint = view.is_some_and(|v| v.sprint_line.is_some());
        let key = view.map_or(key, |v| v.key.as_str());
        // When the two files disagree, a refusal names which holds what.
        if let (Some(v), Some(s), false) = (view, story, force) {
            let file_status = s.status.clone().unwrap_or(Status::Other("unknown".into()));
            if in_sprint && file_status != v.status {
                let sprint_ok = super::status::legal_transition(&v.status, to);
                let file_ok = super::status::legal_transition(&file_status, to);
                if sprint_ok.is_err() || file_ok.is_err() {
                    let verdict = |from: &Status, r: &std::result::Result<(), String>| match r {
                        Ok(()) => format!("{from} → {to} is allowed"),
                        Err(why) => why.split(" (pass").next().unwrap_or(why).to_owned(),
                    };
                    return Err(Error::IllegalTransition {
                        key: key.to_owned(),
                        why: format!(
                            "the files disagree: {} says {}, {} says {file_status}; {} but {}. Pass --force to set both to {to}",
                            self.sprint.as_ref().map(|sp| self.layout.shown(&sp.path)).unwrap_or_default(),
                            v.status,
                            self.layout.shown(&s.path),
                            verdict(&v.status, &sprint_ok),
                            verdict(&file_status, &file_ok),
                        ),
                    });
                }
            }
        }
        let sprint_edit = match (&self.sprint, in_sprint) {
            (Some(sprint), true) => Some((sprint, sprint.with_status(key, to, force, &now)?)),
            (Some(sprint), false) if story.is_none() => {
                // Epics and retrospectives live only in the sprint status.
                Some((sprint, sprint.with_status(key, to, force, &now)?))
            }
            _ => None,
        };
        let story_edit = story
            .map(|s| s.with_status(to, by, &now, force).map(|t| (s, t)))
            .transpose()?;
        if sprint_edit.is_none() && story_edit.is_none() {
            return Err(Error::UnknownKey {
                key: key.to_owned(),
                path: self
                    .sprint
                    .as_ref()
                    .map(|s| s.path.clone())
                    .unwrap_or_else(|| self.layout.root.clone()),
            });
        }
        let mut change = StatusChange {
            key: key.to_owned(),
            from: view.map(|v| v.raw_status.clone()).unwrap_or_default(),
            to: to.as_str().to_owned(),
            by: by.to_owned(),
            at: now.rfc3339(),
            sprint: None,
            story_file: None,
            plan: None,
            stories_json: None,
        };
        if let Some((sprint, (text, sprint_change))) = &sprint_edit {
            sprint.write(text)?;
            change.sprint = Some(sprint_change.clone());
        }
        if let Some((story, text)) = &story_edit {
            if let Err(e) = story.write(text) {
                // All or nothing: put the sprint status back as it was.
                if let Some((sprint, _)) = &sprint_edit {
                    let _ = crate::fs::write_atomically(
                        &sprint.path,
                        sprint.original().as_bytes(),
                        None,
                    );
                }
                return Err(e);
            }
            change.story_file = Some(self.layout.shown(&story.path));
        }
        if let (Some((path, entries)), Some((story, _))) = (&self.stories_json, &story_edit) {
            let name = story
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut entries = entries.clone();
            if let Some(entry) = entries.iter_mut().find(|e| e.name == name) {
                entry.signatures.push(stories_json::Signature {
                    agent: by.to_owned(),
                    timestamp: now.rfc3339(),
                    action: Some(format!("status {} → {}", entry.status, to)),
                });
                entry.status = to.as_str().to_owned();
                stories_json::write(path, &entries)?;
                change.stories_json = Some(self.layout.shown(path));
            }
        }
        Ok(change)
    }
}

/// What `set_status` wrote.
#[derive(Clone, Debug, Serialize)]
pub struct StatusChange {
    /// The story or epic.
    pub key: String,
    /// Its status before, as written.
    pub from: String,
    /// The new status.
    pub to: String,
    /// Who.
    pub by: String,
    /// When (RFC 3339).
    pub at: String,
    /// The sprint-status change.
    pub sprint: Option<SprintChange>,
    /// The story file changed.
    pub story_file: Option<String>,
    /// v7: the ticket's plan, whose `status` line was set (or which was created).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// stories.json, if it was updated.
    pub stories_json: Option<String>,
}

/// The plan a v7 status change wrote.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The plan file.
    pub file: String,
    /// Whether it was created (a frontmatter-only plan, as `tickets.py mark` writes one).
    pub created: bool,
}

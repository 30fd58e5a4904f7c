//! A project's stories as one list: the sprint status and the story files side by side, with
//! dependencies from `stories.json` and story frontmatter; drift between them found, and a
//! status change written to both.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::layout::Layout;
use super::queue::{self, Item};
use super::sprint::{KeyKind, SprintChange, SprintStatus};
use super::status::Status;
use super::stories_json;
use super::story::{self, Story};
use super::{Error, Finding, Result};

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
    /// Line in sprint-status.yaml.
    pub sprint_line: Option<usize>,
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
    /// A file's finding as a problem.
    fn of(file: &str, finding: &Finding) -> Problem {
        Problem {
            severity: finding.severity,
            file: file.to_owned(),
            line: finding.line,
            message: finding.message.clone(),
        }
    }
}

/// Everything loaded.
#[derive(Debug)]
pub struct Project {
    /// Where things are.
    pub layout: Layout,
    /// The sprint status, if there is one.
    pub sprint: Option<SprintStatus>,
    /// The story files, in file order.
    pub files: Vec<Story>,
    /// `stories.json`, if there is one: its path and entries.
    pub stories_json: Option<(PathBuf, Vec<stories_json::Entry>)>,
    /// The stories, sprint-status order first, then files it does not list.
    pub stories: Vec<StoryView>,
    /// Problems found while loading (never fatal).
    pub problems: Vec<Problem>,
}

impl Project {
    /// Load a project's BMAD state from `root` (`stories_dir` overrides the stories folder).
    pub fn load(root: &Path, stories_dir: Option<&Path>) -> Result<Project> {
        let layout = Layout::discover(root);
        let sprint = layout
            .sprint_status
            .as_deref()
            .map(SprintStatus::load)
            .transpose()?;
        let dir = stories_dir.map(Path::to_path_buf).or_else(|| {
            layout.stories_dir(sprint.as_ref().and_then(|s| s.story_location.as_deref()))
        });
        if sprint.is_none() && dir.is_none() {
            return Err(Error::NothingFound {
                searched: layout.searched.clone(),
            });
        }
        let mut project = Project {
            layout,
            sprint,
            files: Vec::new(),
            stories_json: None,
            stories: Vec::new(),
            problems: Vec::new(),
        };
        if let Some(dir) = &dir {
            project.read_dir(dir)?;
        }
        project.merge();
        Ok(project)
    }

    fn read_dir(&mut self, dir: &Path) -> Result<()> {
        let entries = std::fs::read_dir(dir).map_err(|e| Error::io("could not list", dir, e))?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
            .collect();
        paths.sort_by_key(|p| natural_key(p));
        for path in paths {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let story = Story::load(&path)?;
            let titled = story.title.is_some() && story.status.is_some();
            if story::is_story_name(&name) || titled {
                self.files.push(story);
            }
        }
        let json = dir.join(stories_json::FILE_NAME);
        if json.is_file() {
            match stories_json::load(&json) {
                Ok(entries) => self.stories_json = Some((json, entries)),
                Err(e) => self.problems.push(Problem {
                    severity: "error",
                    file: self.layout.shown(&json),
                    line: match &e {
                        Error::Parse { line, .. } => *line,
                        _ => 0,
                    },
                    message: e.to_string(),
                }),
            }
        }
        Ok(())
    }

    /// Build the one list and record what disagrees.
    fn merge(&mut self) {
        let mut used = vec![false; self.files.len()];
        let by_key: HashMap<&str, usize> = self
            .files
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.key.as_deref().map(|k| (k, i)))
            .collect();
        let by_number: HashMap<(u32, String), usize> = self
            .files
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.number.clone().map(|n| (n, i)))
            .collect();
        let mut stories = Vec::new();
        if let Some(sprint) = &self.sprint {
            let file = self.layout.shown(&sprint.path);
            self.problems
                .extend(sprint.warnings.iter().map(|w| Problem::of(&file, w)));
            for entry in sprint.stories() {
                let KeyKind::Story { epic, number } = &entry.kind else {
                    continue;
                };
                let file = by_key
                    .get(entry.key.as_str())
                    .or_else(|| by_number.get(&(*epic, number.clone())))
                    .copied();
                if let Some(i) = file {
                    used[i] = true;
                }
                let story = file.map(|i| &self.files[i]);
                stories.push(StoryView {
                    key: entry.key.clone(),
                    title: story.and_then(|s| s.title.clone()),
                    status: entry.status.clone(),
                    raw_status: entry.raw_status.clone(),
                    epic: Some(*epic),
                    file: story.map(|s| self.layout.shown(&s.path)),
                    file_status: story.and_then(|s| s.status.clone()),
                    depends_on: story.map(|s| s.depends_on.clone()).unwrap_or_default(),
                    sprint_line: Some(entry.line),
                });
            }
        }
        for (i, story) in self.files.iter().enumerate() {
            let file = self.layout.shown(&story.path);
            self.problems
                .extend(story.findings.iter().map(|f| Problem::of(&file, f)));
            if used[i] {
                continue;
            }
            let stem = story
                .path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let status = story
                .status
                .clone()
                .unwrap_or(Status::Other("unknown".into()));
            stories.push(StoryView {
                key: story.key.clone().unwrap_or(stem),
                title: story.title.clone(),
                raw_status: story.raw_status.clone().unwrap_or_default(),
                status: status.clone(),
                epic: story.number.as_ref().map(|n| n.0),
                file: Some(self.layout.shown(&story.path)),
                file_status: Some(status),
                depends_on: story.depends_on.clone(),
                sprint_line: None,
            });
        }
        // Dependencies named in stories.json (by file name) join those from frontmatter.
        if let Some((_, entries)) = &self.stories_json {
            for entry in entries {
                let Some(view) = stories
                    .iter_mut()
                    .find(|v| v.file.as_deref().is_some_and(|f| f.ends_with(&entry.name)))
                else {
                    continue;
                };
                for dep in &entry.dependencies {
                    if !view.depends_on.contains(dep) {
                        view.depends_on.push(dep.clone());
                    }
                }
            }
        }
        // Name dependencies by key, whatever form they were written in.
        let aliases: HashMap<String, String> = stories
            .iter()
            .flat_map(|v| {
                let mut names = vec![(v.key.clone(), v.key.clone())];
                if let Some(file) = &v.file {
                    let name = Path::new(file)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    names.push((name.trim_end_matches(".md").to_owned(), v.key.clone()));
                    names.push((name, v.key.clone()));
                }
                names
            })
            .collect();
        for view in &mut stories {
            for dep in &mut view.depends_on {
                if let Some(key) = aliases.get(dep.as_str()) {
                    *dep = key.clone();
                }
            }
        }
        self.stories = stories;
    }

    /// The queue's view of the stories.
    pub fn items(&self) -> Vec<Item> {
        self.stories
            .iter()
            .map(|s| Item {
                key: s.key.clone(),
                status: s.status.clone(),
                depends_on: s.depends_on.clone(),
            })
            .collect()
    }

    /// Drift, missing files, bad keys, malformed files, missing dependencies and cycles.
    pub fn check(&self) -> Vec<Problem> {
        let mut problems = self.problems.clone();
        let sprint_file = self
            .sprint
            .as_ref()
            .map(|s| self.layout.shown(&s.path))
            .unwrap_or_default();
        for view in &self.stories {
            match (&view.sprint_line, &view.file, &view.file_status) {
                (Some(line), Some(file), Some(file_status)) if *file_status != view.status => problems.push(Problem {
                    severity: "error",
                    file: sprint_file.clone(),
                    line: *line,
                    message: format!(
                        "drift: `{}` is {} here but {file_status} in {file}; `git bmad stories set {} <status>` writes both",
                        view.key, view.status, view.key
                    ),
                }),
                (Some(line), None, _) if view.status.rank().is_some_and(|r| r >= 1) => problems.push(Problem {
                    severity: "error",
                    file: sprint_file.clone(),
                    line: *line,
                    message: format!("`{}` is {} but has no story file; create-story writes it", view.key, view.status),
                }),
                (None, Some(file), _) if self.sprint.is_some() => problems.push(Problem {
                    severity: "warning",
                    file: file.clone(),
                    line: 0,
                    message: format!("story `{}` is not in {sprint_file}", view.key),
                }),
                _ => {}
            }
        }
        match queue::order(&self.items()) {
            Ok((_, missing)) => {
                for m in missing {
                    problems.push(Problem {
                        severity: "error",
                        file: self
                            .stories
                            .iter()
                            .find(|s| s.key == m.story)
                            .and_then(|s| s.file.clone())
                            .unwrap_or_default(),
                        line: 0,
                        message: format!(
                            "`{}` depends on `{}`, which is no story here",
                            m.story, m.dependency
                        ),
                    });
                }
            }
            Err(e) => problems.push(Problem {
                severity: "error",
                file: String::new(),
                line: 0,
                message: e.to_string(),
            }),
        }
        problems
    }

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
        let view = self.stories.iter().find(|s| {
            s.key == key
                || s.file
                    .as_deref()
                    .is_some_and(|f| f.ends_with(&format!("/{key}")) || f == key)
        });
        let story = view
            .and_then(|v| v.file.as_ref())
            .and_then(|f| self.files.iter().find(|s| self.layout.shown(&s.path) == *f));
        let in_sprint = view.is_some_and(|v| v.sprint_line.is_some());
        let key = view.map_or(key, |v| v.key.as_str());
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
            to: to.as_str().to_owned(),
            by: by.to_owned(),
            at: now.rfc3339(),
            sprint: None,
            story_file: None,
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
    /// stories.json, if it was updated.
    pub stories_json: Option<String>,
}

/// `1-10-x` after `1-9-x`: digit runs compare as numbers.
fn natural_key(path: &Path) -> Vec<(u64, String)> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut digits = String::new();
    let mut text = String::new();
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !text.is_empty() {
                out.push((u64::MAX, std::mem::take(&mut text)));
            }
            digits.push(c);
        } else {
            if !digits.is_empty() {
                out.push((digits.parse().unwrap_or(u64::MAX), String::new()));
                digits.clear();
            }
            text.push(c);
        }
    }
    if !digits.is_empty() {
        out.push((digits.parse().unwrap_or(u64::MAX), String::new()));
    }
    if !text.is_empty() {
        out.push((u64::MAX, text));
    }
    out
}

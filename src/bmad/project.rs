//! A project's stories as one list: the sprint status and the story files side by side, with
//! dependencies from `stories.json` and story frontmatter; drift between them found, and a
//! status change written to both.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::layout::Layout;
use super::queue::{self, Item};
use super::spec_folder::{self, SpecFolder};
use super::sprint::{KeyKind, SprintStatus};
use super::status::Status;
use super::stories_json;
use super::story::{self, Story};
use super::story_match;
use super::ticket_tree::{self, TicketTree};
pub use super::view::{Problem, StoryView};
use super::{Error, Result};

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
    /// v6.11 spec folders (stories mode).
    pub spec_folders: Vec<SpecFolder>,
    /// The stories, sprint-status order first, then files it does not list.
    pub stories: Vec<StoryView>,
    /// Problems found while loading (never fatal).
    pub problems: Vec<Problem>,
    /// v7's ticket tree, when the project has one: then it alone holds the stories.
    pub tickets: Option<TicketTree>,
}

impl Project {
    /// Load a project's BMAD state from `root` (`stories_dir` overrides the stories folder).
    pub fn load(root: &Path, stories_dir: Option<&Path>) -> Result<Project> {
        let layout = Layout::discover(root);
        if let Some(folder) = ticket_tree::discover(root) {
            return Ok(Project::of_tickets(layout, TicketTree::load(&folder)));
        }
        let sprint = layout
            .sprint_status
            .as_deref()
            .map(SprintStatus::load)
            .transpose()?;
        let dir = stories_dir.map(Path::to_path_buf).or_else(|| {
            layout.stories_dir(sprint.as_ref().and_then(|s| s.story_location.as_deref()))
        });
        let spec_roots: Vec<PathBuf> = [
            layout.path("output_folder").map(|o| o.join("specs")),
            layout.path("planning_artifacts").map(Path::to_path_buf),
            layout
                .path("implementation_artifacts")
                .map(Path::to_path_buf),
            Some(root.join("_bmad-output/specs")),
        ]
        .into_iter()
        .flatten()
        .collect();
        let roots: Vec<&Path> = spec_roots.iter().map(PathBuf::as_path).collect();
        let spec_dirs = spec_folder::discover(&roots);
        if sprint.is_none() && dir.is_none() && spec_dirs.is_empty() {
            return Err(Error::NothingFound {
                searched: layout.searched.clone(),
            });
        }
        let mut project = Project {
            layout,
            sprint,
            files: Vec::new(),
            stories_json: None,
            spec_folders: Vec::new(),
            stories: Vec::new(),
            problems: Vec::new(),
            tickets: None,
        };
        if let Some(dir) = &dir {
            project.read_dir(dir)?;
        }
        for folder in spec_dirs {
            match spec_folder::load(&folder) {
                Ok(f) => project.spec_folders.push(f),
                Err(e) => project.problems.push(Problem::of_error(
                    project
                        .layout
                        .shown(&folder.join(spec_folder::STORIES_FILE)),
                    &e,
                )),
            }
        }
        project.merge();
        Ok(project)
    }

    /// A v7 project: its tickets are its stories. A sprint status beside the tree is v6's,
    /// left by a migration or by hand, and is not read.
    fn of_tickets(layout: Layout, tree: TicketTree) -> Project {
        let shown = |p: &Path| layout.shown(p);
        let mut problems = tree.reported(&shown);
        if let Some(sprint) = &layout.sprint_status {
            problems.push(Problem {
                severity: "warning",
                file: layout.shown(sprint),
                line: 0,
                message: format!(
                    "v6's sprint status beside v7's ticket tree ({}); git-bmad reads the tree, as BMAD v7 does (`bmad migrate method` archives this file)",
                    layout.shown(&tree.folder)
                ),
            });
        }
        Project {
            stories: tree.views(&shown),
            problems,
            sprint: None,
            files: Vec::new(),
            stories_json: None,
            spec_folders: Vec::new(),
            tickets: Some(tree),
            layout,
        }
    }

    /// Read the story files under `dir`, sub-folders included (`epic3/stories/3-1-x.md`),
    /// but not spec folders, which are read from their `stories.yaml`.
    fn read_dir(&mut self, dir: &Path) -> Result<()> {
        // v4 (no sprint status, BMAD's `.bmad-core`): a story is a file of the SM's template,
        // in the stories folder itself, as v4's tasks read it (not its `backlog/`).
        let v4 = self.sprint.is_none() && self.layout.root.join(".bmad-core").is_dir();
        let paths = super::story_files::story_files(dir, !v4)
            .map_err(|e| Error::io("could not list", dir, e))?;
        let sprint_keys: std::collections::HashSet<&str> = self
            .sprint
            .as_ref()
            .map(|s| s.entries.iter().map(|e| e.key.as_str()).collect())
            .unwrap_or_default();
        for path in paths {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let story = Story::load(&path)?;
            if v4 && !story_match::follows_v4_template(&story.text) {
                continue;
            }
            let titled = story.title.is_some() && story.status.is_some();
            // BMAD ties a key to `{key}.md` (or `spec-<key>.md`), whatever the key looks like.
            let named = sprint_keys.contains(story::stem_key(&name))
                || story::is_story_name(&name) && story.says_it_is_a_story();
            if named || titled {
                self.files.push(story);
            }
        }
        let json = dir.join(stories_json::FILE_NAME);
        if json.is_file() {
            match stories_json::load(&json) {
                Ok(entries) => self.stories_json = Some((json, entries)),
                Err(e) => self
                    .problems
                    .push(Problem::of_error(self.layout.shown(&json), &e)),
            }
        }
        Ok(())
    }

    /// Build the one list and record what disagrees.
    fn merge(&mut self) {
        let mut used = vec![false; self.files.len()];
        // By key, or by name for a key outside the grammar (`15-TD-1-cleanup.md`).
        let mut by_key: HashMap<String, Vec<usize>> = HashMap::new();
        let mut by_number: HashMap<(u32, String), Vec<usize>> = HashMap::new();
        for (i, s) in self.files.iter().enumerate() {
            let key = s.key.clone().unwrap_or_else(|| stem_of(&s.path));
            by_key.entry(key).or_default().push(i);
            if let Some(n) = s.number.clone() {
                by_number.entry(n).or_default().push(i);
            }
        }
        let mut stories = Vec::new();
        if let Some(sprint) = &self.sprint {
            let sprint_file = self.layout.shown(&sprint.path);
            self.problems
                .extend(sprint.warnings.iter().map(|w| Problem::of(&sprint_file, w)));
            for entry in &sprint.entries {
                let epic = match &entry.kind {
                    KeyKind::Story { epic, .. } => Some(*epic),
                    KeyKind::Unknown => None,
                    _ => continue,
                };
                let mut candidates = by_key.get(entry.key.as_str()).cloned().unwrap_or_default();
                if candidates.is_empty() {
                    if let KeyKind::Story { epic, number } = &entry.kind {
                        for &i in by_number
                            .get(&(*epic, number.clone()))
                            .into_iter()
                            .flatten()
                        {
                            let file = &self.files[i];
                            let stem = file.key.clone().unwrap_or_else(|| stem_of(&file.path));
                            if story_match::agree(&entry.key, &stem, file.title.as_deref()) {
                                candidates.push(i);
                            } else {
                                self.problems.push(Problem {
                                    severity: "warning",
                                    file: self.layout.shown(&file.path),
                                    line: 0,
                                    message: format!(
                                        "has story number {epic}.{number} like `{}` in {sprint_file}, but its name and title say another story; it is not tied to that key and never changed with it",
                                        entry.key
                                    ),
                                });
                            }
                        }
                    }
                }
                let (story, ambiguous) = match candidates.as_slice() {
                    [i] => (Some(&self.files[*i]), Vec::new()),
                    many => (
                        None,
                        many.iter()
                            .map(|i| self.layout.shown(&self.files[*i].path))
                            .collect(),
                    ),
                };
                for i in &candidates {
                    used[*i] = true;
                }
                stories.push(StoryView {
                    key: entry.key.clone(),
                    title: story.and_then(|s| s.title.clone()),
                    status: entry.status.clone(),
                    raw_status: entry.raw_status.clone(),
                    epic,
                    file: story.map(|s| self.layout.shown(&s.path)),
                    file_status: story.and_then(|s| s.status.clone()),
                    depends_on: story.map(|s| s.depends_on.clone()).unwrap_or_default(),
                    touches: story.map(|s| s.touches.clone()).unwrap_or_default(),
                    refactor: story.is_some_and(|s| s.refactor),
                    sprint_line: Some(entry.line),
                    blocking_condition: story.and_then(|s| s.blocking_condition.clone()),
                    ambiguous,
                    recognised: epic.is_some(),
                    spec_lifecycle: story.is_some_and(|s| s.spec_lifecycle),
                    v7_ticket: false,
                });
            }
        }
        stories.extend(self.unclaimed_files(&used));
        stories.extend(spec_folder::stories(
            &self.spec_folders,
            &self.layout,
            &mut self.files,
            &mut self.problems,
        ));
        // BMAD's order (`sprint_plan.py` `_story_sort_key`): epic, story number, letter; a
        // key outside the grammar, and stories mode's list order, after them as found.
        let sort_key = |v: &StoryView| {
            let number = match super::key::classify(&v.key) {
                KeyKind::Story { number, .. } => Some(number),
                _ => None,
            };
            match (v.epic, number, v.sprint_line.is_some() || v.file.is_some()) {
                (Some(epic), Some(number), true) => {
                    let digits: String = number.chars().take_while(char::is_ascii_digit).collect();
                    (0, epic, digits.parse::<u32>().unwrap_or(u32::MAX), number)
                }
                _ => (1, 0, 0, String::new()),
            }
        };
        stories.sort_by_cached_key(sort_key);
        // Stories from stories.json (by file name) add their dependencies.
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
        story_match::resolve_dependencies(&mut stories);
        self.stories = stories;
    }

    /// The story files no sprint entry claimed (`used`), as stories of their own where no
    /// sprint lists stories; where one does, a problem says why they are not. Every story
    /// file's own findings go to the problems here too.
    fn unclaimed_files(&mut self, used: &[bool]) -> Vec<StoryView> {
        // BMAD's rule, where a sprint lists stories: the stories are its keys, and a key's
        // file is `{key}.md`. A file no key claims (an implementation summary beside a story,
        // a result file of another runner) is not one, whatever its name says.
        let keyed = self.sprint.as_ref().is_some_and(|s| {
            s.entries
                .iter()
                .any(|e| matches!(e.kind, KeyKind::Story { .. }))
        });
        let mut stories = Vec::new();
        for (i, story) in self.files.iter().enumerate() {
            let file = self.layout.shown(&story.path);
            self.problems
                .extend(story.findings.iter().map(|f| Problem::of(&file, f)));
            if used[i] {
                continue;
            }
            if keyed {
                self.problems.push(Problem {
                    severity: "warning",
                    file,
                    line: 0,
                    message: "no development_status key names this file, so it is not a story (BMAD's stories are the sprint's keys); if it is one, add its key to the sprint status".into(),
                });
                continue;
            }
            let status = story
                .status
                .clone()
                .unwrap_or(Status::Other("unknown".into()));
            stories.push(StoryView {
                key: story.key.clone().unwrap_or_else(|| stem_of(&story.path)),
                title: story.title.clone(),
                raw_status: story.raw_status.clone().unwrap_or_default(),
                status: status.clone(),
                epic: story.number.as_ref().map(|n| n.0),
                file: Some(file),
                file_status: Some(status),
                depends_on: story.depends_on.clone(),
                touches: story.touches.clone(),
                refactor: story.refactor,
                sprint_line: None,
                blocking_condition: story.blocking_condition.clone(),
                ambiguous: Vec::new(),
                recognised: story.number.is_some(),
                spec_lifecycle: story.spec_lifecycle,
                v7_ticket: false,
            });
        }
        stories
    }

    /// The queue's view of the stories. A key outside BMAD's grammar is shown by `list` but
    /// never recommended, as `sprint_plan.py` skips it; its status is hidden from the queue.
    pub fn items(&self) -> Vec<Item> {
        self.stories
            .iter()
            .map(|s| Item {
                key: s.key.clone(),
                status: if !s.recognised || !s.ambiguous.is_empty() {
                    Status::Other(s.raw_status.clone())
                } else if s.is_blocked() {
                    // The sprint status may still say in-progress; the spec says it halted.
                    Status::Blocked
                } else if s.word_unread_by_bmad() {
                    Status::Other(s.raw_status.clone())
                } else {
                    s.status.clone()
                },
                depends_on: s.depends_on.clone(),
                met: s.meets_dependents(),
            })
            .collect()
    }

    /// What to work on next (BMAD's rule, see [`queue::next`]); when no story is left to do,
    /// the first open optional retrospective, as `sprint_plan.py` recommends it.
    pub fn next(&self) -> Result<Recommendation> {
        let items = self.items();
        let (story, mut waiting) = queue::next(&items)?;
        for (s, item) in self.stories.iter().zip(&items) {
            if !s.recognised {
                waiting.push(format!(
                    "{} is not a BMAD story key (N-M-slug); BMAD skips it too",
                    s.key
                ));
            } else if s.word_unread_by_bmad() {
                waiting.push(format!(
                    "{} has status `{}`, no word BMAD's sprint tools know (they would reset it); `git bmad stories set {} <status>` writes one",
                    s.key, s.raw_status, s.key
                ));
            } else if !s.ambiguous.is_empty() {
                waiting.push(format!(
                    "{} has more than one file ({}); never guessed",
                    s.key,
                    s.ambiguous.join(", ")
                ));
            } else if item.status == Status::Blocked {
                waiting.push(format!(
                    "{} is blocked{}",
                    s.key,
                    s.blocking_condition
                        .as_deref()
                        .map(|c| format!(": {c}"))
                        .unwrap_or_default()
                ));
            }
        }
        let open_work = items.iter().any(|i| i.status.priority().is_some());
        let retrospective = if story.is_none() && !open_work {
            self.sprint.as_ref().and_then(|sprint| {
                sprint
                    .entries
                    .iter()
                    .filter_map(|e| match e.kind {
                        KeyKind::Retrospective { epic } if e.status == Status::Optional => {
                            Some((epic, e.key.clone()))
                        }
                        _ => None,
                    })
                    .min()
                    .map(|(_, key)| key)
            })
        } else {
            None
        };
        Ok(Recommendation {
            story,
            retrospective,
            waiting,
        })
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
            if !view.ambiguous.is_empty() {
                problems.push(Problem {
                    severity: "error",
                    file: view.ambiguous[0].clone(),
                    line: 0,
                    message: format!(
                        "`{}` matches more than one file ({}); git-bmad ties it to none and changes none. Rename or remove the extra ones",
                        view.key,
                        view.ambiguous.join(", ")
                    ),
                });
            }
            if view.is_blocked() {
                problems.push(Problem {
                    severity: "warning",
                    file: view.file.clone().unwrap_or_default(),
                    line: 0,
                    message: format!(
                        "`{}` is blocked{}; it waits for a human",
                        view.key,
                        view.why_blocked()
                            .map(|c| format!(" ({c})"))
                            .unwrap_or_default()
                    ),
                });
                continue;
            }
            match (&view.sprint_line, &view.file, &view.file_status) {
                (Some(line), Some(file), Some(file_status)) if !view.file_agrees() => problems.push(Problem {
                    severity: "error",
                    file: sprint_file.clone(),
                    line: *line,
                    message: format!(
                        "drift: `{}` is {} here but {file_status} in {file}; `git bmad stories set {} <status>` writes both",
                        view.key, view.status, view.key
                    ),
                }),
                (Some(line), None, _) if view.ambiguous.is_empty() && view.recognised && view.status.rank().is_some_and(|r| r >= 1) => problems.push(Problem {
                    severity: "error",
                    file: sprint_file.clone(),
                    line: *line,
                    message: format!("`{}` is {} but has no story file (BMAD writes it: bmad-build from v6.11, create-story before)", view.key, view.status),
                }),
                (None, Some(file), _) if self.sprint.is_some() && view.epic.is_some() => problems.push(Problem {
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
}

/// What `stories next` recommends.
#[derive(Clone, Debug, Serialize)]
pub struct Recommendation {
    /// The story, if any is ready.
    #[serde(rename = "next")]
    pub story: Option<queue::Next>,
    /// An open optional retrospective, when no story is left to do.
    pub retrospective: Option<String>,
    /// Why other stories wait.
    #[serde(rename = "blocked")]
    pub waiting: Vec<String>,
}

/// A file's stem, as a key.
fn stem_of(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    story::stem_key(&name).to_owned()
}

//! v6.11 "stories mode": an epic as a spec folder holding `SPEC.md`, an ordered
//! `stories.yaml` and one artifact per story, `stories/<id>-*.md`, whose frontmatter carries
//! the status. There is no sprint status.
//!
//! Rules followed, from BMAD HEAD (`ship/bmad-build-auto/step-01-clarify-and-route.md`,
//! `ship/bmad-retrospective/SKILL.md`):
//! - the spec roots are `{output_folder}/specs`, `{planning_artifacts}` and
//!   `{implementation_artifacts}`;
//! - `stories.yaml` in list order is the story list ("list order is authoritative, filename
//!   sort is not"); an entry is found by its `id`;
//! - a story's artifact is the file matching `stories/{id}-*.md`; more than one match is
//!   "ambiguous story file match" and none means the story was never dispatched.

use std::path::{Path, PathBuf};

use super::layout::Layout;
use super::status::Status;
use super::story::Story;
use super::view::{Problem, StoryView};
use super::yaml_lines::{names, scalar};
use super::{Error, Result};

/// The list file of a spec folder.
pub const STORIES_FILE: &str = "stories.yaml";

/// One `stories.yaml` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `id`.
    pub id: String,
    /// `title`.
    pub title: Option<String>,
    /// `depends_on`, if the entry names any (ids of the same folder).
    pub depends_on: Vec<String>,
    /// The artifacts matching `stories/{id}-*.md` (one, normally).
    pub files: Vec<PathBuf>,
}

/// A spec folder, read.
#[derive(Clone, Debug)]
pub struct SpecFolder {
    /// The folder.
    pub path: PathBuf,
    /// Its name, which prefixes its stories' keys (`<name>/<id>`).
    pub name: String,
    /// The entries, in list order.
    pub entries: Vec<Entry>,
}

/// Spec folders directly under `roots` or one level below them (`specs/<epic>/`), each a
/// directory holding `stories.yaml`.
pub fn discover(roots: &[&Path]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut look = |dir: &Path| {
        if dir.join(STORIES_FILE).is_file() && !out.iter().any(|o| o == dir) {
            out.push(dir.to_path_buf());
        }
    };
    for root in roots {
        look(root);
        let Ok(children) = std::fs::read_dir(root) else {
            continue;
        };
        let mut children: Vec<PathBuf> = children
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        children.sort();
        for child in children {
            look(&child);
        }
    }
    out
}

/// Read a spec folder's `stories.yaml` and find each entry's artifact.
pub fn load(folder: &Path) -> Result<SpecFolder> {
    let path = folder.join(STORIES_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io("could not read", &path, e))?;
    let doc: crate::config::yaml::Data =
        crate::config::yaml::from_str(&text).map_err(|e| Error::Parse {
            path: path.clone(),
            line: e.location.map_or(1, |l| l.0),
            message: e.to_string(),
        })?;
    // A list of entries, or a mapping with the list under `stories:`.
    let list = doc
        .as_sequence()
        .or_else(|| doc.get("stories").and_then(|s| s.as_sequence()))
        .ok_or_else(|| Error::Parse {
            path: path.clone(),
            line: 1,
            message:
                "stories.yaml is a list of stories (each with an `id`), or has one under `stories:`"
                    .into(),
        })?;
    let artifacts = artifact_names(&folder.join("stories"));
    let mut entries = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let id = item
            .get("id")
            .and_then(scalar)
            .ok_or_else(|| Error::Parse {
                path: path.clone(),
                line: 1,
                message: format!("entry {} has no `id`", i + 1),
            })?;
        let depends_on = names(item.get("depends_on"));
        let prefix = format!("{id}-");
        let files = artifacts
            .iter()
            .filter(|n| n.starts_with(&prefix))
            .map(|n| folder.join("stories").join(n))
            .collect();
        entries.push(Entry {
            title: item.get("title").and_then(scalar),
            id,
            depends_on,
            files,
        });
    }
    Ok(SpecFolder {
        name: folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: folder.to_path_buf(),
        entries,
    })
}

/// The stories of v6.11 spec folders, keyed `<folder>/<id>`, in list order; their story
/// files join `files`, what was wrong joins `problems`.
pub(super) fn stories(
    spec_folders: &[SpecFolder],
    layout: &Layout,
    files: &mut Vec<Story>,
    problems: &mut Vec<Problem>,
) -> Vec<StoryView> {
    let mut out = Vec::new();
    for folder in spec_folders {
        for entry in &folder.entries {
            let key = format!("{}/{}", folder.name, entry.id);
            let mut story = None;
            let mut ambiguous = Vec::new();
            match entry.files.as_slice() {
                [] => {}
                [path] => match Story::load(path) {
                    Ok(mut s) => {
                        s.spec_lifecycle = true;
                        story = Some(s)
                    }
                    Err(e) => problems.push(Problem::of_error(layout.shown(path), &e)),
                },
                many => ambiguous = many.iter().map(|p| layout.shown(p)).collect(),
            }
            // Not dispatched yet: BMAD treats it as still to do.
            let status = story.as_ref().map_or(Status::Backlog, |s| {
                s.status.clone().unwrap_or(Status::Other("unknown".into()))
            });
            out.push(StoryView {
                key,
                title: story
                    .as_ref()
                    .and_then(|s| s.title.clone())
                    .or_else(|| entry.title.clone()),
                raw_status: story
                    .as_ref()
                    .and_then(|s| s.raw_status.clone())
                    .unwrap_or_default(),
                status: status.clone(),
                epic: None,
                file: story.as_ref().map(|s| layout.shown(&s.path)),
                file_status: story.as_ref().map(|_| status),
                depends_on: entry
                    .depends_on
                    .iter()
                    .map(|d| format!("{}/{d}", folder.name))
                    .collect(),
                touches: story
                    .as_ref()
                    .map(|s| s.touches.clone())
                    .unwrap_or_default(),
                refactor: story.as_ref().is_some_and(|s| s.refactor),
                sprint_line: None,
                blocking_condition: story.as_ref().and_then(|s| s.blocking_condition.clone()),
                ambiguous,
                recognised: true,
                spec_lifecycle: true,
                v7_ticket: false,
            });
            if let Some(s) = story {
                let file = layout.shown(&s.path);
                problems.extend(s.findings.iter().map(|f| Problem::of(&file, f)));
                files.push(s);
            }
        }
    }
    out
}

/// The `*.md` names in a folder, sorted.
fn artifact_names(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_order_id_prefix_and_ambiguity() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("specs/auth");
        std::fs::create_dir_all(folder.join("stories")).unwrap();
        std::fs::write(
            folder.join(STORIES_FILE),
            "- id: s2\n  title: Second\n- id: s1\n  title: First\n  depends_on: [s2]\n- id: 3\n",
        )
        .unwrap();
        for name in ["s1-login.md", "s2-a.md", "s2-b.md", "s10-x.md"] {
            std::fs::write(
                folder.join("stories").join(name),
                "---\nstatus: draft\n---\n",
            )
            .unwrap();
        }
        let found = discover(&[&dir.path().join("specs")]);
        assert_eq!(found, std::slice::from_ref(&folder));
        let f = load(&folder).unwrap();
        assert_eq!(f.name, "auth");
        let ids: Vec<&str> = f.entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["s2", "s1", "3"], "list order, not file order");
        assert_eq!(f.entries[0].files.len(), 2, "s2 is ambiguous");
        assert_eq!(f.entries[1].files, [folder.join("stories/s1-login.md")]);
        assert_eq!(f.entries[1].depends_on, ["s2"]);
        assert!(f.entries[2].files.is_empty());
        std::fs::write(folder.join(STORIES_FILE), "stories:\n  - title: no id\n").unwrap();
        assert!(load(&folder).unwrap_err().to_string().contains("no `id`"));
    }
}

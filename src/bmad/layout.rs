//! Where a project's BMAD files are: the install (`_bmad/`, `bmad/`, an older `.bmad/`), its
//! module config, the sprint status and the stories, with the fallbacks of older layouts.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// Install directories, newest layout first. `.bmad/` counts only when it holds BMAD's
/// module folders: git-bmad's own `.bmad/` (config.yaml, playbooks/, sessions/) is not one.
const INSTALL_DIRS: &[&str] = &["_bmad", "bmad", ".bmad"];
const MODULE_DIRS: &[&str] = &["core", "bmm", "_cfg"];

/// What was found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Layout {
    /// The project root.
    pub root: PathBuf,
    /// The BMAD install directory.
    pub install: Option<PathBuf>,
    /// `{install}/bmm/config.yaml`.
    pub config_file: Option<PathBuf>,
    /// Its path-valued keys, resolved (`implementation_artifacts`, `planning_artifacts`, …).
    pub paths: Vec<(String, PathBuf)>,
    /// `user_name` from the config.
    pub user_name: Option<String>,
    /// The sprint status file.
    pub sprint_status: Option<PathBuf>,
    /// Where the story files are.
    pub stories_dir: Option<PathBuf>,
    /// Where it looked, for messages.
    pub searched: Vec<String>,
}

impl Layout {
    /// Find everything under `root`.
    pub fn discover(root: &Path) -> Layout {
        let mut layout = Layout {
            root: root.to_path_buf(),
            ..Default::default()
        };
        layout.install = INSTALL_DIRS
            .iter()
            .map(|d| root.join(d))
            .find(|dir| MODULE_DIRS.iter().any(|m| dir.join(m).is_dir()));
        if let Some(install) = &layout.install {
            let config = install.join("bmm/config.yaml");
            if let Ok(text) = std::fs::read_to_string(&config) {
                layout.read_config(&text);
                layout.config_file = Some(config);
            }
        }
        // v4 (`.bmad-core/`) names its stories folder in core-config.yaml, camelCase.
        let core_config = root.join(".bmad-core/core-config.yaml");
        if let Ok(text) = std::fs::read_to_string(&core_config) {
            if let Ok(crate::config::yaml::Data::Mapping(map)) =
                crate::config::yaml::from_str::<crate::config::yaml::Data>(&text)
            {
                if let Some(loc) = map.get("devStoryLocation").and_then(|v| v.as_str()) {
                    let path = layout.resolve(loc, None);
                    layout.paths.push(("dev_story_location".into(), path));
                }
            }
            layout
                .install
                .get_or_insert_with(|| root.join(".bmad-core"));
            layout.config_file.get_or_insert(core_config);
        }
        let sprint_candidates = layout.sprint_candidates();
        layout.sprint_status = sprint_candidates.iter().find(|p| p.is_file()).cloned();
        layout.searched = sprint_candidates.iter().map(|p| layout.shown(p)).collect();
        layout
    }

    fn read_config(&mut self, text: &str) {
        let Ok(crate::config::yaml::Data::Mapping(map)) =
            crate::config::yaml::from_str::<crate::config::yaml::Data>(text)
        else {
            return;
        };
        let get = |k: &str| map.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        self.user_name = get("user_name");
        let output = get("output_folder").map(|o| self.resolve(&o, None));
        for key in [
            "implementation_artifacts",
            "planning_artifacts",
            "sprint_artifacts",
            "dev_story_location",
            "output_folder",
            "project_knowledge",
        ] {
            if let Some(value) = get(key) {
                let path = self.resolve(&value, output.as_deref());
                self.paths.push((key.to_owned(), path));
            }
        }
    }

    /// A config path value: `{project-root}/x`, `'{project-root}/x'`, bare `docs`, absolute.
    pub fn resolve(&self, value: &str, output_folder: Option<&Path>) -> PathBuf {
        let value = value.trim().trim_matches(['"', '\'']);
        let mut text = value.replace("{project-root}", &self.root.to_string_lossy());
        if let Some(out) = output_folder {
            text = text.replace("{output_folder}", &out.to_string_lossy());
        }
        let path = PathBuf::from(text);
        if path.is_absolute() {
            path
        } else {
            self.root.join(path)
        }
    }

    /// A configured path.
    pub fn path(&self, key: &str) -> Option<&Path> {
        self.paths
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, p)| p.as_path())
    }

    fn sprint_candidates(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for key in [
            "implementation_artifacts",
            "sprint_artifacts",
            "output_folder",
        ] {
            if let Some(dir) = self.path(key) {
                out.push(dir.join("sprint-status.yaml"));
                if key == "output_folder" {
                    out.push(dir.join("implementation-artifacts/sprint-status.yaml"));
                }
            }
        }
        for rel in [
            "_bmad-output/implementation-artifacts/sprint-status.yaml",
            "docs/sprint-artifacts/sprint-status.yaml",
            "docs/sprint-status.yaml",
        ] {
            out.push(self.root.join(rel));
        }
        out.dedup();
        out
    }

    /// Where the stories are: the sprint status's `story_location` when it exists here, else
    /// the configured artifacts folder, else the older fallbacks.
    pub fn stories_dir(&self, story_location: Option<&str>) -> Option<PathBuf> {
        let mut candidates = Vec::new();
        if let Some(loc) = story_location.filter(|l| !l.contains("{story_location}")) {
            let output = self.path("output_folder");
            candidates.push(self.resolve(loc, output));
        }
        for key in [
            "implementation_artifacts",
            "sprint_artifacts",
            "dev_story_location",
        ] {
            if let Some(dir) = self.path(key) {
                candidates.push(dir.to_path_buf());
            }
        }
        if let Some(sprint) = &self.sprint_status {
            if let Some(dir) = sprint.parent() {
                candidates.push(dir.to_path_buf());
            }
        }
        for rel in [
            "docs/stories",
            "docs/sprint-artifacts",
            "_bmad-output/implementation-artifacts",
        ] {
            candidates.push(self.root.join(rel));
        }
        candidates.into_iter().find(|d| d.is_dir())
    }

    /// A path as the user would write it: relative to the root when inside it.
    pub fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn v6_install_with_config() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        touch(root, "_bmad/bmm/config.yaml", "user_name: Ada\noutput_folder: \"{project-root}/_bmad-output\"\nimplementation_artifacts: '{project-root}/_bmad-output/implementation-artifacts'\nplanning_artifacts: \"{output_folder}/planning\"\n");
        touch(
            root,
            "_bmad-output/implementation-artifacts/sprint-status.yaml",
            "development_status: {}\n",
        );
        let l = Layout::discover(root);
        assert_eq!(l.install.as_deref(), Some(root.join("_bmad").as_path()));
        assert_eq!(l.user_name.as_deref(), Some("Ada"));
        assert_eq!(
            l.path("planning_artifacts"),
            Some(root.join("_bmad-output/planning").as_path())
        );
        assert_eq!(
            l.sprint_status,
            Some(root.join("_bmad-output/implementation-artifacts/sprint-status.yaml"))
        );
        assert_eq!(
            l.stories_dir(Some("{project-root}/nowhere")),
            Some(root.join("_bmad-output/implementation-artifacts"))
        );
    }

    #[test]
    fn git_bmad_own_dir_is_not_an_install_and_old_layouts_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        touch(root, ".bmad/config.yaml", "version: 1\n");
        touch(root, ".bmad/playbooks/x.yaml", "steps: []\n");
        touch(root, "docs/sprint-status.yaml", "development_status: {}\n");
        touch(root, "docs/stories/1.1.x.md", "## Status\nDraft\n");
        let l = Layout::discover(root);
        assert_eq!(l.install, None);
        assert_eq!(l.sprint_status, Some(root.join("docs/sprint-status.yaml")));
        assert_eq!(l.stories_dir(Some("docs")), Some(root.join("docs")));
        assert_eq!(l.stories_dir(None), Some(root.join("docs")));
        touch(
            root,
            ".bmad/bmm/config.yaml",
            "dev_story_location: docs/stories\n",
        );
        let v4 = tempfile::tempdir().unwrap();
        touch(
            v4.path(),
            ".bmad-core/core-config.yaml",
            "devStoryLocation: docs/dev/stories\n",
        );
        touch(v4.path(), "docs/dev/stories/1.1.x.md", "## Status\nDraft\n");
        touch(v4.path(), "docs/stories/1.1.old.md", "## Status\nDraft\n");
        let l4 = Layout::discover(v4.path());
        assert_eq!(l4.install, Some(v4.path().join(".bmad-core")));
        assert_eq!(
            l4.stories_dir(None),
            Some(v4.path().join("docs/dev/stories"))
        );
        let l = Layout::discover(root);
        assert_eq!(l.install, Some(root.join(".bmad")));
        assert_eq!(l.stories_dir(None), Some(root.join("docs/stories")));
    }
}

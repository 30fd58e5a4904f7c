//! spec-kit: the current feature directory and the progress of its `tasks.md`.
//!
//! spec-kit finds the feature from `SPECIFY_FEATURE_DIRECTORY`, then `.specify/feature.json`
//! (`{"feature_directory": "specs/003-user-auth"}`); v0.0.76 used the branch name, whose
//! leading number names `specs/<NNN>-*`. A repository with exactly one feature under `specs/`
//! needs none of these.

use std::path::{Path, PathBuf};

/// Where the current feature was found, and how.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Feature {
    /// The feature directory, relative to the worktree.
    pub dir: PathBuf,
    /// How it was found (`SPECIFY_FEATURE_DIRECTORY`, `.specify/feature.json`, `branch`, `only feature`).
    pub source: &'static str,
}

/// Find the current feature of the worktree `root`.
///
/// `env_dir` is the value of `SPECIFY_FEATURE_DIRECTORY`; `branch` the short branch name.
pub fn feature(root: &Path, env_dir: Option<&str>, branch: Option<&str>) -> Option<Feature> {
    if let Some(dir) = env_dir.filter(|d| !d.trim().is_empty()) {
        return Some(Feature {
            dir: relative_to(root, Path::new(dir.trim())),
            source: "SPECIFY_FEATURE_DIRECTORY",
        });
    }
    if let Ok(text) = std::fs::read_to_string(root.join(".specify/feature.json")) {
        let dir = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v["feature_directory"].as_str().map(str::to_owned));
        if let Some(dir) = dir {
            return Some(Feature {
                dir: relative_to(root, Path::new(&dir)),
                source: ".specify/feature.json",
            });
        }
    }
    let features = feature_dirs(root);
    if let Some(number) = branch.and_then(leading_number) {
        if let Some(dir) = features.iter().find(|d| {
            d.file_name()
                .and_then(|n| n.to_str())
                .and_then(leading_number)
                .is_some_and(|n| n == number)
        }) {
            return Some(Feature {
                dir: dir.clone(),
                source: "branch",
            });
        }
    }
    match features.as_slice() {
        [only] => Some(Feature {
            dir: only.clone(),
            source: "only feature",
        }),
        _ => None,
    }
}

fn relative_to(root: &Path, dir: &Path) -> PathBuf {
    dir.strip_prefix(root).unwrap_or(dir).to_path_buf()
}

/// `specs/<dir>` entries, sorted.
fn feature_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join("specs")) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| Path::new("specs").join(e.file_name()))
        .collect();
    dirs.sort();
    dirs
}

/// `001` from `001-user-auth` or `bmad/001-user-auth`, as a number.
fn leading_number(name: &str) -> Option<u64> {
    let last = name.rsplit('/').next()?;
    let digits: String = last.chars().take_while(|c| c.is_ascii_digit()).collect();
    if digits.is_empty() || !last[digits.len()..].starts_with('-') {
        return None;
    }
    digits.parse().ok()
}

/// Checked and total tasks of a `tasks.md`: checkbox list items `- [ ]`, `- [x]`, `- [X]`,
/// indented or not (a wrapped line is not a task).
pub fn task_progress(text: &str) -> (usize, usize) {
    let mut done = 0;
    let mut total = 0;
    for line in text.lines() {
        let item = line.trim_start();
        let Some(rest) = item
            .strip_prefix("- [")
            .or_else(|| item.strip_prefix("* ["))
        else {
            continue;
        };
        match rest.get(..2) {
            Some(" ]") => total += 1,
            Some("x]") | Some("X]") => {
                total += 1;
                done += 1;
            }
            _ => {}
        }
    }
    (done, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress() {
        let text = "## Phase 1: Setup\n- [X] T001 Create project\n- [x] T002 [P] Init\n  - [ ] T002a nested\n- [ ] T003 [P] [US1] Create User model in\n  src/models/user.py\n* [ ] T004\n- [-] not a task\n";
        assert_eq!(task_progress(text), (2, 5));
        assert_eq!(task_progress(""), (0, 0));
    }

    #[test]
    fn finding_the_feature() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(feature(root, None, None), None);
        std::fs::create_dir_all(root.join("specs/001-auth")).unwrap();
        assert_eq!(feature(root, None, None).unwrap().source, "only feature");
        std::fs::create_dir_all(root.join("specs/002-billing")).unwrap();
        assert_eq!(feature(root, None, Some("main")), None);
        let by_branch = feature(root, None, Some("bmad/002-billing")).unwrap();
        assert_eq!(by_branch.dir, Path::new("specs/002-billing"));
        std::fs::create_dir_all(root.join(".specify")).unwrap();
        std::fs::write(
            root.join(".specify/feature.json"),
            r#"{"feature_directory": "specs/001-auth"}"#,
        )
        .unwrap();
        assert_eq!(
            feature(root, None, Some("bmad/002-billing")).unwrap().dir,
            Path::new("specs/001-auth")
        );
        let env = feature(root, Some("specs/002-billing"), None).unwrap();
        assert_eq!(
            (env.dir.as_path(), env.source),
            (Path::new("specs/002-billing"), "SPECIFY_FEATURE_DIRECTORY")
        );
    }
}

//! spec-kit: the current feature directory and the progress of its `tasks.md`.
//!
//! spec-kit finds the feature from `SPECIFY_FEATURE_DIRECTORY`, then `.specify/feature.json`
//! (`{"feature_directory": "specs/003-user-auth"}`); before those (v0.0.76 on) its scripts
//! took a feature name, `SPECIFY_FEATURE` or else the branch, and looked it up in `specs/`
//! (`common.sh`, `find_feature_dir_by_prefix`): the directory of exactly that name, else the
//! one directory with the name's number prefix, and when several share the prefix, the exact
//! name again. A repository with exactly one feature under `specs/` needs none of these.

use std::path::{Path, PathBuf};

/// Where the current feature was found, and how.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Feature {
    /// The feature directory, relative to the worktree.
    pub dir: PathBuf,
    /// How it was found (`SPECIFY_FEATURE_DIRECTORY`, `.specify/feature.json`,
    /// `SPECIFY_FEATURE`, `branch`, `only feature`).
    pub source: &'static str,
}

/// What the environment says about the current feature, as spec-kit's scripts read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureEnv {
    /// `SPECIFY_FEATURE_DIRECTORY`: the directory itself.
    pub directory: Option<String>,
    /// `SPECIFY_FEATURE`: a feature name that stands in for the branch's.
    pub feature: Option<String>,
}

impl FeatureEnv {
    /// The variables of this process.
    pub fn from_process() -> FeatureEnv {
        use crate::env::Var;
        let var = |var: Var| var.get().filter(|v| !v.trim().is_empty());
        FeatureEnv {
            directory: var(Var::SpecifyFeatureDirectory),
            feature: var(Var::SpecifyFeature),
        }
    }
}

/// Find the current feature of the worktree `root`; `branch` is the short branch name.
pub fn feature(root: &Path, env: &FeatureEnv, branch: Option<&str>) -> Option<Feature> {
    if let Some(dir) = &env.directory {
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
    let named = match env.feature.as_deref() {
        Some(name) => Some((name, "SPECIFY_FEATURE")),
        None => branch.map(|b| (b, "branch")),
    };
    if let Some((name, source)) = named {
        if let Some(dir) = by_name(&features, name) {
            return Some(Feature { dir, source });
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

/// The feature directory a feature or branch name (`003-review`, `bmad/003-review`) names:
/// the exact one, else the only one with its number.
fn by_name(features: &[PathBuf], name: &str) -> Option<PathBuf> {
    let last = name.rsplit('/').next()?;
    let file_name = |d: &PathBuf| d.file_name().and_then(|n| n.to_str()).map(str::to_owned);
    if let Some(exact) = features
        .iter()
        .find(|d| file_name(d).as_deref() == Some(last))
    {
        return Some(exact.clone());
    }
    let number = leading_number(last)?;
    match features
        .iter()
        .filter(|d| file_name(d).as_deref().and_then(leading_number) == Some(number))
        .collect::<Vec<_>>()
        .as_slice()
    {
        [only] => Some((*only).clone()),
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
        let none = FeatureEnv::default();
        assert_eq!(feature(root, &none, None), None);
        std::fs::create_dir_all(root.join("specs/001-auth")).unwrap();
        assert_eq!(feature(root, &none, None).unwrap().source, "only feature");
        std::fs::create_dir_all(root.join("specs/002-billing")).unwrap();
        assert_eq!(feature(root, &none, Some("main")), None);
        let by_branch = feature(root, &none, Some("bmad/002-billing")).unwrap();
        assert_eq!(by_branch.dir, Path::new("specs/002-billing"));
        assert_eq!(
            feature(root, &none, Some("002-other-name")).unwrap().dir,
            Path::new("specs/002-billing"),
            "the only feature with the number"
        );
        // Two features share a prefix: spec-kit falls back to the exact branch name.
        std::fs::create_dir_all(root.join("specs/003-annotation")).unwrap();
        std::fs::create_dir_all(root.join("specs/003-detection-review")).unwrap();
        assert_eq!(
            feature(root, &none, Some("003-detection-review"))
                .unwrap()
                .dir,
            Path::new("specs/003-detection-review")
        );
        assert_eq!(feature(root, &none, Some("003-something-else")), None);
        let named = FeatureEnv {
            feature: Some("001-auth".into()),
            ..FeatureEnv::default()
        };
        let by_env = feature(root, &named, Some("003-detection-review")).unwrap();
        assert_eq!(
            (by_env.dir.as_path(), by_env.source),
            (Path::new("specs/001-auth"), "SPECIFY_FEATURE")
        );
        std::fs::create_dir_all(root.join(".specify")).unwrap();
        std::fs::write(
            root.join(".specify/feature.json"),
            r#"{"feature_directory": "specs/001-auth"}"#,
        )
        .unwrap();
        assert_eq!(
            feature(root, &none, Some("bmad/002-billing")).unwrap().dir,
            Path::new("specs/001-auth")
        );
        let directory = FeatureEnv {
            directory: Some("specs/002-billing".into()),
            ..FeatureEnv::default()
        };
        let env = feature(root, &directory, None).unwrap();
        assert_eq!(
            (env.dir.as_path(), env.source),
            (Path::new("specs/002-billing"), "SPECIFY_FEATURE_DIRECTORY")
        );
    }
}

/// Files and folders a spec-kit feature may hold, in the order spec-kit writes them.
pub const ARTIFACTS: &[&str] = &[
    "spec.md",
    "plan.md",
    "tasks.md",
    "research.md",
    "data-model.md",
    "quickstart.md",
    "contracts",
    "checklists",
];

/// One `## Phase …` of a tasks.md and its progress.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Phase {
    /// The heading text.
    pub name: String,
    /// Checked tasks.
    pub done: usize,
    /// All tasks.
    pub total: usize,
}

/// Progress per `## Phase` heading (tasks before any heading go under "(no phase)").
pub fn phases(text: &str) -> Vec<Phase> {
    let mut out: Vec<Phase> = Vec::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            out.push(Phase {
                name: heading.trim().to_owned(),
                done: 0,
                total: 0,
            });
            continue;
        }
        let (done, total) = task_progress(line);
        if total == 0 {
            continue;
        }
        if out.is_empty() {
            out.push(Phase {
                name: "(no phase)".into(),
                done: 0,
                total: 0,
            });
        }
        let last = out.last_mut().expect("pushed above");
        last.done += done;
        last.total += total;
    }
    out.retain(|p| p.total > 0);
    out
}

/// A feature's state, for `git bmad speckit status`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FeatureStatus {
    /// Where the feature is.
    pub feature: Feature,
    /// Which of [`ARTIFACTS`] exist.
    pub artifacts: Vec<(String, bool)>,
    /// Checked and total tasks.
    pub tasks: Option<(usize, usize)>,
    /// Per phase.
    pub phases: Vec<Phase>,
}

/// The state of the current feature, if one is found.
pub fn status(root: &Path, env: &FeatureEnv, branch: Option<&str>) -> Option<FeatureStatus> {
    let feature = feature(root, env, branch)?;
    let dir = root.join(&feature.dir);
    let artifacts = ARTIFACTS
        .iter()
        .map(|a| (a.to_string(), dir.join(a).exists()))
        .collect();
    let tasks_text = std::fs::read_to_string(dir.join("tasks.md")).ok();
    Some(FeatureStatus {
        feature,
        artifacts,
        tasks: tasks_text.as_deref().map(task_progress),
        phases: tasks_text.as_deref().map(phases).unwrap_or_default(),
    })
}

#[cfg(test)]
mod phase_tests {
    use super::*;

    #[test]
    fn progress_per_phase() {
        let text = "# Tasks\n\n## Phase 1: Setup\n- [X] T001 a\n- [x] T002 [P] b\n\n## Phase 2: Foundational\n- [ ] T003 [US1] c\n  wrapped line\n  - [x] T003a nested\n\n## Notes\nnone\n";
        assert_eq!(
            phases(text),
            [
                Phase {
                    name: "Phase 1: Setup".into(),
                    done: 2,
                    total: 2
                },
                Phase {
                    name: "Phase 2: Foundational".into(),
                    done: 1,
                    total: 2
                },
            ]
        );
    }
}

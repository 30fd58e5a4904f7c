//! BMAD's bookkeeping: the files its workflows write to record where stories stand (sprint
//! statuses, v4's `stories.json`, a story's own file) and git-bmad's own `.bmad/`. Changing
//! them is not work: a branch or a step that changed only these implemented nothing.

/// BMAD's bookkeeping, as path patterns ([`crate::paths::names`]): sprint statuses, v4's
/// `stories.json`, git-bmad's own `.bmad/`. A story's own file is bookkeeping too.
pub const BOOKKEEPING: &[&str] = &[
    ".bmad",
    "sprint-status.yaml",
    "*/sprint-status.yaml",
    "stories.json",
    "*/stories.json",
];

/// Whether `path` is BMAD's bookkeeping rather than work: [`BOOKKEEPING`], or the story's
/// own file (`story_file`).
pub fn is_bookkeeping(path: &str, story_file: Option<&str>) -> bool {
    BOOKKEEPING.iter().any(|p| crate::paths::names(p, path))
        || story_file.is_some_and(|f| crate::paths::trimmed(f) == path)
}

//! [`FeedSetting`]: where snapshots learn what changed. A leaf of its own: the handle holds
//! one and the change feed acts on it, so neither imports the other's module for it.

/// Where a snapshot learns which paths changed since the last one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeedSetting {
    /// The worktree's watcher, started on demand (Linux, `bmad.watch` true, the default).
    Watcher,
    /// Told, not watched: every snapshot is handed exactly these paths, as a watcher would
    /// name them. For tests of what a snapshot does with a feed, with no daemon to wait for.
    Test {
        /// The paths (files or directories, relative to the worktree root).
        changed: Vec<String>,
    },
    /// No feed: every snapshot scans the whole worktree.
    None,
}

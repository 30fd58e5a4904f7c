//! Where a shadow of the common git dir (a contained step's, a walled command's) keeps
//! what it stands in for: read by the fence that makes one and by every opening of a
//! worktree that may name one.

use std::path::{Path, PathBuf};

/// Where a shadow's place keeps the worktree's `commondir` while the shadow stands in for it.
pub(super) const COMMONDIR_KEPT: &str = "commondir.kept";
/// The lock each walled command holds shared for as long as it uses a worktree's command
/// shadow.
pub(super) const HOLDERS: &str = "holders.lock";
/// Where walled commands' shadows lie in the common dir, one place per worktree.
pub(super) const COMMAND_SHADOWS: &str = "bmad/shadow";

/// The common dir of the repository whose worktree git dir is `git_dir`, when `common` (what
/// its `commondir` names) is a walled command's shadow standing in for it (live or left by a
/// kill): what the shadow's place kept. Otherwise `common` itself. Git-bmad beside a walled
/// command reads and writes the repository itself, not the command's view of it. (A step's
/// fence is what git-bmad inside the step must see: its hooks report into its layer.)
pub(super) fn real_common_dir(git_dir: &Path, common: PathBuf) -> PathBuf {
    let Some(place) = common.parent().filter(|_| common.ends_with("copies")) else {
        return common;
    };
    let stands_in = place.parent().is_some_and(|p| p.ends_with(COMMAND_SHADOWS));
    let kept = stands_in
        .then(|| std::fs::read_to_string(place.join(COMMONDIR_KEPT)).ok())
        .flatten();
    kept.and_then(|kept| std::fs::canonicalize(git_dir.join(kept.trim())).ok())
        .unwrap_or(common)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_shadow_is_seen_through_and_nothing_else_is() {
        let root = tempfile::tempdir().unwrap();
        let common = root.path().join("repo/.git");
        let git_dir = common.join("worktrees/wt");
        std::fs::create_dir_all(&git_dir).unwrap();
        let common = std::fs::canonicalize(&common).unwrap();
        for (place, seen_through) in [
            (common.join(COMMAND_SHADOWS).join("wt"), true),
            (common.join("bmad/fence/wt"), false),
            (root.path().join("elsewhere/wt"), false),
        ] {
            std::fs::create_dir_all(place.join("copies")).unwrap();
            std::fs::write(place.join(COMMONDIR_KEPT), "../..\n").unwrap();
            let shadow = place.join("copies");
            let expected = if seen_through { &common } else { &shadow };
            assert_eq!(
                &real_common_dir(&git_dir, shadow.clone()),
                expected,
                "{place:?}"
            );
        }
        // Nothing kept (a place half made): the path as it is.
        let bare = common.join(COMMAND_SHADOWS).join("other/copies");
        std::fs::create_dir_all(&bare).unwrap();
        assert_eq!(real_common_dir(&git_dir, bare.clone()), bare);
        assert_eq!(real_common_dir(&git_dir, common.clone()), common);
    }
}

//! The fence without mounts: the shadow of the common git dir that a worktree names for a
//! step's time, and the links between a worktree and its repository put back after it.

use std::path::{Path, PathBuf};

use super::{Fence, RUN_LOCK};
use crate::git::error::{Error, Result};
use crate::git::shadow_place::{COMMONDIR_KEPT, HOLDERS};

impl Fence {
    /// Put back each link of the worktree to the repository that is not as it was (the
    /// shadow's `commondir` without a word); what the step changed.
    pub(super) fn put_back_links(&self) -> Result<Vec<String>> {
        let mut changed = Vec::new();
        let shadow = format!("{}\n", self.layer.join("copies").display());
        for (path, before) in &self.links {
            let plain =
                std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() < 1 << 20);
            let now = plain.then(|| std::fs::read(path).ok()).flatten();
            if now.as_deref() == Some(before.as_slice()) {
                continue;
            }
            let ours = self.shadow
                && path.ends_with("commondir")
                && now.as_deref() == Some(shadow.as_bytes());
            if !ours {
                let name = path
                    .strip_prefix(&self.worktree)
                    .or_else(|_| path.strip_prefix(&self.common))
                    .unwrap_or(path);
                changed.push(format!("{}: changed; put back", name.display()));
            }
            put_back(path, before)?;
        }
        Ok(changed)
    }
}

/// When `start` lies in a linked worktree whose `commondir` still names a fence's shadow
/// though no run holds the worktree (git-bmad was killed during a contained step), or a
/// command shadow no walled command holds: the worktree's own `commondir` put back, so that
/// nothing of the dead step's layer is taken for the repository. Whether it was.
pub fn put_back_abandoned_shadow(start: &Path) -> Result<bool> {
    match abandoned_shadow(start) {
        Some((link, kept)) => put_back(&link, &kept).map(|()| true),
        None => Ok(false),
    }
}

/// The `commondir` of the worktree `start` lies in, and what it named before, when it names
/// a fence's shadow, or a walled command's, that nothing live holds (see
/// [`put_back_abandoned_shadow`]).
pub fn abandoned_shadow(start: &Path) -> Option<(PathBuf, Vec<u8>)> {
    let worktree = start
        .ancestors()
        .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())?;
    let link = std::fs::read_to_string(worktree.join(".git")).ok()?;
    let git_dir = worktree.join(link.strip_prefix("gitdir:")?.trim());
    let link = git_dir.join("commondir");
    let named = std::fs::read_to_string(&link).ok()?;
    let named = Path::new(named.trim());
    let layer = named
        .parent()
        .filter(|_| named.is_absolute() && named.ends_with("copies"))?;
    let kept = std::fs::read(layer.join(COMMONDIR_KEPT)).ok()?;
    // A live run holds its worktree's run lock for as long as it lives, and a walled
    // command the command shadow's.
    for lock in [git_dir.join(RUN_LOCK), layer.join(HOLDERS)] {
        if let Ok(lock) = std::fs::OpenOptions::new().read(true).open(lock) {
            lock.try_lock().ok()?;
        }
    }
    Some((link, kept))
}

/// Write `content` at `path` in place of whatever is there (a link made a folder or a
/// symlink included: its target is never written).
pub(super) fn put_back(path: &Path, content: &[u8]) -> Result<()> {
    let io = |e: std::io::Error| Error::Io {
        op: "could not put back",
        path: path.to_owned(),
        source: e,
    };
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path).map_err(io)?,
        Ok(_) => std::fs::remove_file(path).map_err(io)?,
        Err(_) => {}
    }
    crate::fs::write_atomically(path, content, None).map_err(io)
}

/// Make the layer's copies folder a shadow of the common dir `common`: beside the copies,
/// the layer's objects and logs, the layer's report folder where the hooks look for this
/// session's (`bmad/deferred/<name>`), and a link to everything else of the real one.
pub(super) fn shadow(common: &Path, layer: &Path, name: &str) -> std::io::Result<()> {
    use std::os::unix::fs::symlink;
    let shadow = layer.join("copies");
    let own: &[(&str, PathBuf)] = &[
        ("objects", layer.join("objects")),
        ("logs", layer.join("logs")),
    ];
    // Made again each round: the copies folder is kept between rounds.
    let relink = |target: &Path, at: &Path| -> std::io::Result<()> {
        match std::fs::symlink_metadata(at) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(at)?,
            Ok(_) => std::fs::remove_file(at)?,
            Err(_) => {}
        }
        symlink(target, at)
    };
    for (part, target) in own {
        relink(target, &shadow.join(part))?;
    }
    // Everything else of the real common dir, linked.
    link_entries(common, &shadow, &|f| {
        ["objects", "logs", "refs", "bmad"].contains(&f)
    })?;
    link_entries(&common.join("refs"), &shadow.join("refs"), &|f| {
        f == "heads"
    })?;
    link_entries(&common.join("bmad"), &shadow.join("bmad"), &|f| {
        f == "deferred"
    })?;
    std::fs::create_dir_all(shadow.join("bmad/deferred"))?;
    relink(
        &layer.join("deferred"),
        &shadow.join("bmad/deferred").join(name),
    )
}

/// A link in `to` (made if missing) to each entry of `from` but what `skip` names and what
/// `to` holds already.
pub(super) fn link_entries(
    from: &Path,
    to: &Path,
    skip: &dyn Fn(&str) -> bool,
) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let file = entry.file_name();
        let at = to.join(&file);
        if skip(&file.to_string_lossy()) || std::fs::symlink_metadata(&at).is_ok() {
            continue;
        }
        std::os::unix::fs::symlink(entry.path(), at)?;
    }
    Ok(())
}

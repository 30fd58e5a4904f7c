//! The files agents read their grants from (permission rules, hooks, tools), held across a
//! step: they lie in the worktree the agent writes, so what a step changes there is put back
//! before any other step's CLI reads it.
//!
//! They are held in memory as the bytes on disk, ignored files too (a
//! `.claude/settings.local.json` that `.gitignore` hides from every checkpoint is read by the
//! CLI all the same), and never written to the object database: such files hold API keys
//! and tokens, which no object may carry unvetted. A file a step adds is compared by size
//! before any byte of it is read, so what an agent writes costs no memory.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::git::ObjectId;

use super::error::{Error, Result};
use super::store::Session;

/// One file or link under the entries.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Held {
    /// A file's bytes and permission bits.
    File { bytes: Vec<u8>, mode: u32 },
    /// A symlink's target.
    Link(PathBuf),
}

/// The agents' settings in a session's worktree as they were when [`held`] took them.
pub struct HeldSettings {
    worktree: PathBuf,
    /// The entries (`.claude`, `opencode.json`): files, or folders with all under them.
    entries: Vec<String>,
    /// Every file and link under them, by path relative to the worktree.
    files: BTreeMap<String, Held>,
    /// Every folder under them: the empty ones stay.
    folders: BTreeSet<String>,
}

/// Take what `entries` (files; folders end in `/`) hold in the session's worktree now.
pub fn held(session: &Session, entries: &[&str]) -> Result<HeldSettings> {
    let entries: Vec<String> = entries
        .iter()
        .map(|e| crate::paths::trimmed(e).to_owned())
        .collect();
    let worktree = session.worktree.clone();
    let (found, folders) = on_disk(&worktree, &entries)?;
    let mut files = BTreeMap::new();
    for (path, kind) in found {
        let full = worktree.join(&path);
        let held = match kind {
            Kind::Link => Held::Link(read_link(&full)?),
            Kind::File { mode, .. } => Held::File {
                bytes: std::fs::read(&full).map_err(|e| Error::io("could not read", &full, e))?,
                mode,
            },
        };
        files.insert(path, held);
    }
    Ok(HeldSettings {
        worktree,
        entries,
        files,
        folders,
    })
}

impl HeldSettings {
    /// The same, but with `paths` as `checkpoint` has them, as files: what a step
    /// interrupted by a crash changed there, so the next [`Self::put_back`] restores them
    /// from before that step.
    pub fn as_before(
        mut self,
        repo: &super::Repo,
        checkpoint: ObjectId,
        paths: &[String],
    ) -> Result<Self> {
        let repo = &repo.git;
        for path in paths {
            match repo.file_at(&checkpoint.to_string(), path)? {
                Some(bytes) => {
                    self.files
                        .insert(path.clone(), Held::File { bytes, mode: 0o644 });
                }
                None => {
                    self.files.remove(path);
                }
            }
        }
        Ok(self)
    }

    /// Put back every file and link under the entries that changed since they were held
    /// (changed, added or removed, ignored or not): the paths put back. A link the step put
    /// where a folder was is removed, never written through. The state being left is the
    /// caller's to keep (a checkpoint taken before).
    pub fn put_back(&self, repo: &super::Repo, session: &Session) -> Result<Vec<String>> {
        let repo = &repo.git;
        let (now, folders_now) = on_disk(&self.worktree, &self.entries)?;
        let mut changed: Vec<String> = now
            .iter()
            .filter(|(path, kind)| !self.holds(path, kind))
            .map(|(path, _)| path.clone())
            .chain(
                self.files
                    .keys()
                    .filter(|path| !now.contains_key(*path))
                    .cloned(),
            )
            .collect();
        changed.sort();
        changed.dedup();
        for path in changed.iter().filter(|p| !self.files.contains_key(*p)) {
            remove(&self.worktree.join(path))?;
        }
        for path in &changed {
            if let Some(held) = self.files.get(path) {
                self.write_back(path, held)?;
            }
        }
        // Folders the step made, deepest first; only empty ones go.
        for folder in folders_now
            .iter()
            .rev()
            .filter(|f| !self.folders.contains(*f))
        {
            let _ = std::fs::remove_dir(self.worktree.join(folder));
        }
        if !changed.is_empty() {
            // A grant the agent staged would come back with its next `git checkout -- .`
            // or `git commit`. The disk is what CLIs read: an index a killed git left
            // locked only costs this.
            let worktree = session.open_worktree(repo)?;
            let wt = worktree.as_ref().unwrap_or(repo);
            if let Err(e) = wt.restage_tracked(&changed) {
                tracing::warn!("agent settings put back on disk, not in the index: {e}");
            }
        }
        Ok(changed)
    }

    /// Whether `path`, found on disk as `kind`, is what was held (its bytes read only when
    /// the size matches).
    fn holds(&self, path: &str, kind: &Kind) -> bool {
        let full = self.worktree.join(path);
        match (self.files.get(path), kind) {
            (Some(Held::Link(target)), Kind::Link) => read_link(&full).is_ok_and(|t| &t == target),
            (Some(Held::File { bytes, mode }), Kind::File { size, mode: now }) => {
                *size == bytes.len() as u64
                    && (mode & 0o111 != 0) == (now & 0o111 != 0)
                    && std::fs::read(&full).is_ok_and(|b| &b == bytes)
            }
            _ => false,
        }
    }

    /// Write `held` at `path`: whatever stands there is removed, and so is anything on the
    /// way that is not a folder (a link would take the write elsewhere).
    fn write_back(&self, path: &str, held: &Held) -> Result<()> {
        let full = self.worktree.join(path);
        let mut folder = self.worktree.clone();
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts[..parts.len() - 1] {
            folder.push(part);
            match std::fs::symlink_metadata(&folder) {
                Ok(meta) if meta.is_dir() => continue,
                Ok(_) => remove(&folder)?,
                Err(_) => {}
            }
            std::fs::create_dir(&folder).map_err(|e| Error::io("could not create", &folder, e))?;
        }
        remove(&full)?;
        match held {
            Held::Link(target) => std::os::unix::fs::symlink(target, &full)
                .map_err(|e| Error::io("could not link", &full, e)),
            Held::File { bytes, mode } => crate::fs::write_atomically(&full, bytes, Some(*mode))
                .map_err(|e| Error::io("could not write", &full, e)),
        }
    }
}

/// What a file or link under the entries is on disk.
#[derive(Clone, Copy, Debug)]
enum Kind {
    File { size: u64, mode: u32 },
    Link,
}

/// Every file and link under `entries` in `worktree`, and every folder. Nothing is followed
/// through a link: a link on the way to an entry is taken as itself. Fifos and sockets are
/// left out.
fn on_disk(
    worktree: &Path,
    entries: &[String],
) -> Result<(BTreeMap<String, Kind>, BTreeSet<String>)> {
    let mut found = BTreeMap::new();
    let mut folders = BTreeSet::new();
    for entry in entries {
        let mut path = String::new();
        for part in entry.split('/') {
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(part);
            match std::fs::symlink_metadata(worktree.join(&path)) {
                Ok(meta) if meta.is_dir() => continue,
                Ok(_) | Err(_) => break,
            }
        }
        walk(worktree, &path, &mut found, &mut folders)?;
    }
    Ok((found, folders))
}

fn walk(
    worktree: &Path,
    path: &str,
    found: &mut BTreeMap<String, Kind>,
    folders: &mut BTreeSet<String>,
) -> Result<()> {
    let full = worktree.join(path);
    let Ok(meta) = std::fs::symlink_metadata(&full) else {
        return Ok(());
    };
    let kind = meta.file_type();
    if kind.is_symlink() {
        found.insert(path.to_owned(), Kind::Link);
    } else if kind.is_file() {
        let mode = meta.permissions().mode() & 0o7777;
        found.insert(
            path.to_owned(),
            Kind::File {
                size: meta.len(),
                mode,
            },
        );
    } else if kind.is_dir() {
        folders.insert(path.to_owned());
        let children =
            std::fs::read_dir(&full).map_err(|e| Error::io("could not list", &full, e))?;
        for child in children {
            let child = child.map_err(|e| Error::io("could not list", &full, e))?;
            let name = child.file_name();
            let Some(name) = name.to_str() else {
                continue; // git-bmad's paths are UTF-8; no CLI reads such a name either
            };
            walk(worktree, &format!("{path}/{name}"), found, folders)?;
        }
    }
    Ok(())
}

fn read_link(path: &Path) -> Result<PathBuf> {
    std::fs::read_link(path).map_err(|e| Error::io("could not read the link", path, e))
}

/// Remove what stands at `path`, a folder with all in it; nothing there is no error.
fn remove(path: &Path) -> Result<()> {
    let removed = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(_) => return Ok(()),
    };
    removed.map_err(|e| Error::io("could not remove", path, e))
}

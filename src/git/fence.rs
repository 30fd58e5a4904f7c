//! The repository as a contained step sees it: everything readable, and writable only where
//! its work goes. Git keeps one folder for every branch and one object database for every
//! worktree, so the step writes into a layer of its own, and git-bmad takes from it, after
//! the step, what the step may change:
//!
//! - `objects/`: an empty database whose alternate is the real one (read-only). New objects
//!   land in the layer; each is hashed again and copied in, so nothing the step wrote can
//!   replace, corrupt or delete an object the repository has.
//! - `refs/heads/`: a copy. The session branch's new tip is set on the real branch with a
//!   compare-and-swap; any other branch the step wrote, made or deleted is reported and
//!   dropped.
//! - `logs/`: empty and writable (git refuses a ref update whose reflog it cannot write).
//! - everything else of the common git dir (config, hooks, packed-refs, notes, git-bmad's
//!   refs and state, other worktrees' git dirs): read-only.
//! - the session worktree and its own git dir (index, HEAD): writable, but for the links
//!   that name the repository (`.git`, `commondir`, `gitdir`) and its own config.
//!
//! Where mounts cannot be had (Landlock alone), the same layer is reached without them: its
//! copies folder becomes a shadow of the common git dir (the copies, the layer's objects and
//! logs, and a link to everything else of the real one), and the worktree's `commondir`
//! names it for the step's time. The links the step could rewrite (`.git`, `commondir`,
//! `gitdir`, its own config) are put back when it ends, whichever way it was walled.
//!
//! The layer lives under `<common>/bmad/fence/<name>/`. A settled round leaves its copies
//! (marked `settled`), which the session's next round refreshes rather than writes anew: a
//! file made and removed each round costs far more than one read. A step killed with git-bmad leaves
//! it behind: the next fence for the same name first puts the worktree's links back, copies
//! in its objects (the worktree's index may name them) and drops the rest, as a killed step
//! is never believed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gix::objs::Write as _;

use super::error::{Error, Result};
use super::{CasOutcome, ObjectId, Repo};

mod command;
mod files;
mod shadow;
use super::shadow_place::COMMONDIR_KEPT;
pub use command::CommandShadow;
use files::{clear_but_copies, files, watched};
pub use shadow::{abandoned_shadow, put_back_abandoned_shadow};
use shadow::{put_back, shadow};

/// A fence set up for one session worktree.
#[derive(Debug)]
pub struct Fence {
    name: String,
    local_remotes: Vec<PathBuf>,
    layer: PathBuf,
    common: PathBuf,
    worktree: PathBuf,
    worktree_git_dir: PathBuf,
    branch: String,
    branch_before: Option<ObjectId>,
    copies: Vec<Copy>,
    shadow: bool,
    links: Vec<(PathBuf, Vec<u8>)>,
}

/// How the step's view of the repository is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FenceKind {
    /// Mounts (bubblewrap): the layer's parts shown at the real paths.
    Mounts,
    /// A shadow of the common dir that the worktree names for the step's time (Landlock
    /// alone, which can only allow or deny paths as they are).
    Shadow,
}

/// The files that link a worktree to its repository, which the step must not change: the
/// worktree's `.git`, and its git dir's `commondir`, `gitdir` and own config.
const LINKS: &[&str] = &["commondir", "gitdir", "config.worktree"];
/// The file in a worktree's git dir that a live run holds locked (`flock`).
pub const RUN_LOCK: &str = "bmad-run.lock";
/// The mark of a layer its round settled: its copies are kept for the next round.
const SETTLED: &str = "settled";

/// A part of the common git dir the step sees as a writable copy, so that what it writes
/// there is seen (and dropped, but for its own branch).
#[derive(Debug)]
struct Copy {
    /// Its path in the common git dir (`refs/heads`, `hooks`, `config`).
    name: &'static str,
    /// Its files when copied, by path relative to it (`""` for a file).
    before: BTreeMap<String, Vec<u8>>,
    /// Each copy as written: a file whose stamp is the same after the step was not written
    /// (any write changes its ctime, which no process can set back).
    stamps: BTreeMap<String, Stamp>,
}

/// Inode, ctime (seconds, nanoseconds) and size of a file.
type Stamp = (u64, i64, i64, u64);

fn stamp(meta: &std::fs::Metadata) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    (meta.ino(), meta.ctime(), meta.ctime_nsec(), meta.size())
}

/// The report channel's socket, in a session's deferred folder (see `session::deferred`).
pub const REPORT_SOCKET: &str = "report.sock";

/// The copies: branches (the step's own is taken back), hooks and config (written, they
/// are reported; git's own `git config` cannot replace the file and fails).
const COPIED: &[&str] = &["refs/heads", "hooks", "config"];

/// One place the fence changes in the repository's view: `source` shown at `target`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// What is shown.
    pub source: PathBuf,
    /// Where.
    pub target: PathBuf,
    /// Whether the step may write there.
    pub writable: bool,
}

impl Repo {
    /// Set up a fence for the worktree at `worktree` (a linked worktree of this repository
    /// whose branch is `branch`, a full ref name), its layer named `name`.
    pub fn fence(
        &self,
        name: &str,
        worktree: &Path,
        branch: &str,
        kind: FenceKind,
    ) -> Result<Fence> {
        let common = self.common_dir().to_owned();
        let layer = common.join("bmad").join("fence").join(name);
        let (worktree, worktree_git_dir) = linked_git_dir(&common, worktree)?;
        if layer.join(SETTLED).exists() {
            clear_but_copies(&layer)?;
        } else if layer.exists() {
            self.recover_layer(&layer, &worktree_git_dir)?;
        }
        let io = |e: std::io::Error| Error::Io {
            op: "could not set up a fence in",
            path: layer.clone(),
            source: e,
        };
        for part in [
            "objects/info",
            "real-objects",
            "logs",
            "scratch",
            "deferred",
            "copies/refs/heads",
        ] {
            std::fs::create_dir_all(layer.join(part)).map_err(io)?;
        }
        // Its own config, read-only even when it has none: one the step made would be read by
        // every git git-bmad runs there later (with `extensions.worktreeConfig`).
        let own_config = worktree_git_dir.join("config.worktree");
        if !own_config.exists() {
            std::fs::write(&own_config, "").map_err(io)?;
        }
        // Where the step's hooks keep what they could not journal (a mount needs its place).
        std::fs::create_dir_all(common.join("bmad/deferred").join(name)).map_err(io)?;
        let objects = common.join("objects");
        // Mounted, the real database is shown inside the layer; a shadow names it as it is.
        let real_objects = match kind {
            FenceKind::Mounts => layer.join("real-objects"),
            FenceKind::Shadow => objects.clone(),
        };
        let mut alternates = format!("{}\n", real_objects.display());
        // The real database's own alternates, made absolute: they are read from elsewhere now.
        if let Ok(theirs) = std::fs::read_to_string(objects.join("info/alternates")) {
            for line in theirs
                .lines()
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
            {
                alternates.push_str(&format!("{}\n", objects.join(line).display()));
            }
        }
        std::fs::write(layer.join("objects/info/alternates"), alternates).map_err(io)?;
        let mut copies = Vec::new();
        for name in COPIED {
            let mut before = watched(
                name,
                files(&common.join(name), false, |_, _| None).map_err(io)?,
            );
            if *name == "config" {
                for content in before.values_mut() {
                    *content = files::without_credentials(content);
                }
            }
            let mode = |path: &Path| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::metadata(path).map(|m| m.permissions().mode()).ok()
            };
            files::refresh(
                &copy_path(&layer, name, ""),
                &before,
                // A hook is copied with its mode, so that it still runs.
                |file, copy| *name != "hooks" || mode(copy) == mode(&part(&common, name, file)),
                |file, copy| match *name {
                    "hooks" => std::fs::copy(part(&common, name, file), copy).map(drop),
                    _ => std::fs::write(copy, &before[file]),
                },
            )
            .map_err(io)?;
            let mut stamps = BTreeMap::new();
            for file in before.keys() {
                let copy = copy_path(&layer, name, file);
                stamps.insert(file.clone(), stamp(&std::fs::metadata(&copy).map_err(io)?));
            }
            copies.push(Copy {
                name,
                before,
                stamps,
            });
        }
        // Remotes on this machine stay readable: a push to one gets as far as its pre-push
        // hook (which refuses a contained step's push, on the record) and no further.
        let snapshot = self.gix().config_snapshot();
        let local_remotes = snapshot
            .plumbing()
            .sections_by_name("remote")
            .into_iter()
            .flatten()
            .flat_map(|section| {
                let mut urls = section.values("url");
                urls.extend(section.values("pushurl"));
                urls
            })
            .filter_map(|url| local_path(&url.to_string(), self.workdir()))
            .collect();
        let links = std::iter::once(worktree.join(".git"))
            .chain(LINKS.iter().map(|l| worktree_git_dir.join(l)))
            .filter_map(|path| Some((path.clone(), std::fs::read(&path).ok()?)))
            .collect();
        if kind == FenceKind::Shadow {
            shadow(&common, &layer, name).map_err(io)?;
            // Kept first: a kill between the two leaves the layer able to put it back.
            let link = worktree_git_dir.join("commondir");
            let kept = std::fs::read(&link).map_err(io)?;
            crate::fs::write_atomically(&layer.join(COMMONDIR_KEPT), &kept, None).map_err(io)?;
            let named = format!("{}\n", layer.join("copies").display());
            crate::fs::write_atomically(&link, named.as_bytes(), None).map_err(io)?;
        }
        Ok(Fence {
            shadow: kind == FenceKind::Shadow,
            links,
            name: name.to_owned(),
            local_remotes,
            branch_before: self.read_ref(branch)?,
            layer,
            common,
            worktree,
            worktree_git_dir,
            branch: branch.to_owned(),
            copies,
        })
    }

    /// A layer a killed step left: the worktree's `commondir` put back when the layer stood
    /// in for it, its objects copied in, the rest dropped.
    fn recover_layer(&self, layer: &Path, worktree_git_dir: &Path) -> Result<()> {
        let kept = layer.join(COMMONDIR_KEPT);
        if let Ok(content) = std::fs::read(&kept) {
            put_back(&worktree_git_dir.join("commondir"), &content)?;
        }
        self.adopt_objects(&layer.join("objects"))?;
        std::fs::remove_dir_all(layer).map_err(|e| Error::Io {
            op: "could not remove the fence",
            path: layer.to_owned(),
            source: e,
        })
    }

    /// Copy every object under `dir` (loose or packed) into the repository, each checked
    /// against its name; what was dropped (an object whose content is not what its name
    /// says, a pack git does not accept), which never stops the rest.
    fn adopt_objects(&self, dir: &Path) -> Result<Vec<String>> {
        let kind = self.gix().object_hash();
        let theirs = gix::odb::loose::Store::at(dir, kind);
        let ours = gix::odb::loose::Store::at(self.common_dir().join("objects"), kind);
        let mut buf = Vec::new();
        let mut dropped = Vec::new();
        for id in theirs.iter().filter_map(|id| id.ok()) {
            if self.has_object(id) {
                continue;
            }
            let hex = id.to_string();
            let file = dir.join(&hex[..2]).join(&hex[2..]);
            let plain = std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file());
            let sound = match plain.then(|| theirs.try_find(&id, &mut buf)) {
                Some(Ok(Some(object))) => gix::objs::compute_hash(kind, object.kind, object.data)
                    .is_ok_and(|hashed| hashed == id)
                    .then_some(object),
                _ => None,
            };
            let Some(object) = sound else {
                dropped.push(format!("objects: {id} does not hash to its name"));
                continue;
            };
            ours.write_buf(object.kind, object.data)
                .map_err(|e| Error::Corrupt(format!("could not store object {id}: {e}")))?;
        }
        if let Ok(entries) = std::fs::read_dir(dir.join("pack")) {
            for entry in entries.filter_map(|e| e.ok()) {
                let path = entry.path();
                // `index_pack` opens only a plain file: a fifo there would block it for good.
                if path.extension().is_some_and(|e| e == "pack")
                    && !path.to_string_lossy().contains("tmp_")
                    && self.git()?.index_pack(&path).is_err()
                {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    dropped.push(format!("objects/pack/{name}: not a sound pack"));
                }
            }
        }
        Ok(dropped)
    }
}

impl Fence {
    /// A folder of the layer for the step's own use, removed with it.
    pub fn scratch(&self) -> PathBuf {
        self.layer.join("scratch")
    }

    /// What the step's hooks kept for the journal (the step can write there too).
    pub fn deferred(&self) -> PathBuf {
        self.layer.join("deferred")
    }

    /// Where the step's hooks report to git-bmad (a socket it listens on, in
    /// [`Self::deferred`]): shown mounted over itself, so the step can neither remove nor
    /// replace it.
    pub fn report_socket(&self) -> PathBuf {
        self.deferred().join(REPORT_SOCKET)
    }

    /// How the step's view differs from the read-only system: the repository readable, the
    /// layer's parts at the real paths, the worktree and its git dir writable but for the
    /// files that link them to the repository. (The main worktree is not the repository:
    /// the walls hide it.)
    pub fn views(&self) -> Vec<View> {
        let shown = |source: PathBuf, target: PathBuf, writable| View {
            source,
            target,
            writable,
        };
        let same = |path: PathBuf, writable| shown(path.clone(), path, writable);
        let mut views = vec![same(self.common.clone(), false)];
        views.extend(self.local_remotes.iter().map(|r| same(r.clone(), false)));
        let socket = self.report_socket();
        let listening = std::fs::symlink_metadata(&socket).is_ok_and(|m| {
            use std::os::unix::fs::FileTypeExt;
            m.file_type().is_socket()
        });
        if self.shadow {
            // The shadow is read-only but for the parts the step writes (the socket's
            // folder too, when git-bmad does not listen: the hooks keep their reports there).
            views.extend([
                same(self.layer.join("objects"), true),
                same(self.layer.join("logs"), true),
                same(self.deferred(), !listening),
                same(self.worktree_git_dir.clone(), true),
                same(self.worktree.clone(), true),
            ]);
            views.extend(
                self.copies
                    .iter()
                    .map(|c| copy_path(&self.layer, c.name, ""))
                    .filter(|p| p.exists())
                    .map(|p| same(p, true)),
            );
            return views;
        }
        views.extend([
            shown(
                self.layer.join("objects"),
                self.common.join("objects"),
                true,
            ),
            shown(
                self.common.join("objects"),
                self.layer.join("real-objects"),
                false,
            ),
            shown(self.layer.join("logs"), self.common.join("logs"), true),
            shown(
                self.deferred(),
                self.common.join("bmad/deferred").join(&self.name),
                true,
            ),
            same(self.worktree_git_dir.clone(), true),
            same(self.worktree.clone(), true),
            same(self.worktree.join(".git"), false),
        ]);
        // The report channel, when git-bmad listens on it: mounted over itself, so that the
        // step can neither remove nor replace it.
        if listening {
            views.push(shown(
                socket,
                self.common
                    .join("bmad/deferred")
                    .join(&self.name)
                    .join(REPORT_SOCKET),
                true,
            ));
        }
        for copy in &self.copies {
            if copy_path(&self.layer, copy.name, "").exists() {
                views.push(shown(
                    copy_path(&self.layer, copy.name, ""),
                    self.common.join(copy.name),
                    true,
                ));
            }
        }
        for link in ["commondir", "gitdir", "config.worktree"] {
            let path = self.worktree_git_dir.join(link);
            if path.exists() {
                views.push(same(path, false));
            }
        }
        views
    }

    /// Take from the layer what the step may change, and remove the layer; what the step
    /// wrote beyond that, none of it kept (`refs/heads/main: changed`).
    pub fn settle(self, repo: &Repo) -> Result<Vec<String>> {
        // The links first: nothing of the worktree is read while one names another place.
        let mut beyond = self.put_back_links()?;
        beyond.extend(repo.adopt_objects(&self.layer.join("objects"))?);
        let short = self
            .branch
            .strip_prefix("refs/heads/")
            .unwrap_or(&self.branch);
        let mut own_branch = None;
        for copy in &self.copies {
            let unchanged = |file: &str, meta: &std::fs::Metadata| {
                (copy.stamps.get(file) == Some(&stamp(meta)))
                    .then(|| copy.before.get(file).cloned())
                    .flatten()
            };
            let after = watched(
                copy.name,
                files(&copy_path(&self.layer, copy.name, ""), true, unchanged).unwrap_or_default(),
            );
            let own = |file: &str| copy.name == "refs/heads" && file == short;
            let path = |file: &str| match file {
                "" => copy.name.to_owned(),
                file => format!("{}/{file}", copy.name),
            };
            for (file, before) in &copy.before {
                match after.get(file) {
                    None => beyond.push(format!("{}: deleted", path(file))),
                    Some(now) if now != before && !own(file) => {
                        beyond.push(format!("{}: changed", path(file)))
                    }
                    _ => {}
                }
            }
            for file in after.keys().filter(|f| !copy.before.contains_key(*f)) {
                if !own(file) {
                    beyond.push(format!("{}: created", path(file)));
                }
            }
            if copy.name == "refs/heads" {
                own_branch = after.get(short).cloned();
            }
        }
        if let Some(content) = own_branch {
            let text = String::from_utf8_lossy(&content);
            let tip = ObjectId::from_hex(text.trim().as_bytes())
                .ok()
                .filter(|tip| repo.is_commit(*tip));
            // Trees git refuses (`..`, `.git`, a symlinked `.gitmodules`) never reach the
            // branch, whence a push or another tool's checkout would carry them further.
            let refused = match tip.filter(|tip| Some(*tip) != self.branch_before) {
                Some(tip) => repo.refused_tree_entries(tip, self.branch_before)?,
                None => Vec::new(),
            };
            match tip {
                Some(_) if !refused.is_empty() => beyond.push(format!(
                    "{}: set to commits whose trees git refuses ({}); the branch stays where it was",
                    self.branch,
                    refused.join("; ")
                )),
                Some(tip) => {
                    if Some(tip) != self.branch_before {
                        let moved = repo.cas_ref_waiting(
                            &self.branch,
                            self.branch_before,
                            tip,
                            "git-bmad: the contained step's commits",
                        )?;
                        if moved != CasOutcome::Updated {
                            beyond.push(format!("{}: moved by another meanwhile", self.branch));
                        }
                    }
                }
                // What it holds is not shown: it is the step's to choose.
                None => beyond.push(format!(
                    "{}: set to something that is not a commit of this repository",
                    self.branch
                )),
            }
        }
        let head = self.worktree_git_dir.join("HEAD");
        let wanted = format!("ref: {}\n", self.branch);
        let plain = std::fs::symlink_metadata(&head).is_ok_and(|m| m.is_file() && m.len() < 4096);
        let now = if plain {
            std::fs::read_to_string(&head).unwrap_or_default()
        } else {
            String::new()
        };
        if now.trim_end() != wanted.trim_end() {
            // Named only when it names a ref: anything else is the step's to choose.
            let to = now
                .trim()
                .strip_prefix("ref: refs/")
                .filter(|r| r.chars().all(|c| c.is_ascii_graphic()) && r.len() < 200)
                .map_or("something else".to_owned(), |r| format!("`refs/{r}`"));
            beyond.push(format!("HEAD: switched to {to}"));
            // Unlinked first: a HEAD made a symlink must not have its target replaced.
            let _ = std::fs::remove_file(&head);
            crate::fs::write_atomically(&head, wanted.as_bytes(), None).map_err(|e| Error::Io {
                op: "could not put back",
                path: head.clone(),
                source: e,
            })?;
        }
        // The copies stay for the session's next round, which refreshes them.
        clear_but_copies(&self.layer)?;
        std::fs::write(self.layer.join(SETTLED), b"").map_err(|e| Error::Io {
            op: "could not mark the fence settled",
            path: self.layer.clone(),
            source: e,
        })?;
        Ok(beyond)
    }
}

/// The worktree at `worktree` (canonical) and its git dir, which must be one of the common
/// dir's `worktrees/`: read from its `.git` file, as git does, without opening it.
fn linked_git_dir(common: &Path, worktree: &Path) -> Result<(PathBuf, PathBuf)> {
    let not_ours = |why: String| {
        Error::Corrupt(format!(
            "{} is not a linked worktree of this repository: {why}",
            worktree.display()
        ))
    };
    let worktree = std::fs::canonicalize(worktree).map_err(|e| not_ours(e.to_string()))?;
    let link =
        std::fs::read_to_string(worktree.join(".git")).map_err(|e| not_ours(e.to_string()))?;
    let named = link
        .strip_prefix("gitdir:")
        .map(str::trim)
        .ok_or_else(|| not_ours("its .git file names no gitdir".into()))?;
    let git_dir =
        std::fs::canonicalize(worktree.join(named)).map_err(|e| not_ours(e.to_string()))?;
    if git_dir.parent() != Some(&common.join("worktrees")) {
        return Err(not_ours(format!("its git dir is {}", git_dir.display())));
    }
    Ok((worktree, git_dir))
}

/// The directory a remote URL names on this machine (`/srv/r.git`, `file:///srv/r.git`,
/// `../r.git`), if it is one that exists.
fn local_path(url: &str, workdir: &Path) -> Option<PathBuf> {
    let path = url.strip_prefix("file://").unwrap_or(url);
    if path.contains("://") || (path.contains(':') && !path.starts_with('/')) {
        return None;
    }
    std::fs::canonicalize(workdir.join(path))
        .ok()
        .filter(|p| p.is_dir())
}

/// Where the layer keeps its copy of `file` of the common dir's `name`.
fn copy_path(layer: &Path, name: &str, file: &str) -> PathBuf {
    part(&layer.join("copies"), name, file)
}

/// `file` (relative to `name`, `""` for `name` itself) under `root`.
fn part(root: &Path, name: &str, file: &str) -> PathBuf {
    match file {
        "" => root.join(name),
        file => root.join(name).join(file),
    }
}

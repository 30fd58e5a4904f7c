//! [`Repo`]: the repository handle, opened once per process.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gix::bstr::ByteSlice;

use super::cli::GitCli;
use super::error::{Error, Result};
use super::ObjectId;

/// The repository, seen from the worktree the process runs in.
///
/// Paths are canonical, so comparing a worktree path from `git worktree list` with ours is
/// a plain `==` (gix hands out `…/worktrees/x/../..`-style paths otherwise).
pub struct Repo {
    inner: gix::Repository,
    workdir: PathBuf,
    git_dir: PathBuf,
    common_dir: PathBuf,
    git: GitCli,
    /// The change feed snapshots ask, when not the repository's own setting.
    pub(super) feed: Option<super::feed_setting::FeedSetting>,
    /// Set on a handle whose new objects stay in memory (see [`super::pack`]): the bytes of
    /// blobs held so far.
    held: Option<std::cell::Cell<u64>>,
    /// When the handle was opened (seconds since the epoch): the time its commits and
    /// reflog entries carry, so that what a command records agrees with times it reckons
    /// from later (a removed session's keep time).
    opened: i64,
}

/// A decoded commit, as far as git-bmad needs it.
#[derive(Clone, Debug)]
pub struct CommitInfo {
    /// The commit's id.
    pub id: ObjectId,
    /// Its tree.
    pub tree: ObjectId,
    /// Its parents, in order.
    pub parents: Vec<ObjectId>,
    /// Its full message.
    pub message: String,
    /// Committer time, seconds since the epoch.
    pub time: i64,
}

/// A worktree as `git worktree list` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorktreeInfo {
    /// Its directory (canonical when it exists).
    pub path: PathBuf,
    /// The checked-out branch, a full ref name, if not detached.
    pub branch: Option<String>,
    /// Set when git considers the worktree gone (its directory was deleted).
    pub prunable: bool,
    /// Whether this is the main worktree.
    pub is_main: bool,
    /// The lock reason when the worktree is locked (`initializing`: a `git worktree add`
    /// that was interrupted).
    pub locked: Option<String>,
}

impl Repo {
    /// Open the repository containing `cwd`, from any worktree or subdirectory.
    ///
    /// Honours `GIT_DIR` and friends, as git does inside hooks. Refuses bare repositories and
    /// repositories git itself would refuse for dubious ownership.
    pub fn discover(cwd: &Path) -> Result<Repo> {
        let inner = gix::ThreadSafeRepository::discover_with_environment_overrides(cwd)
            .map_err(|e| {
                // A repository gix refuses to open (a format it does not know): git itself
                // names its format.
                super::format::unsupported(cwd, |key| super::format::git_config_in(cwd, key))
                    .unwrap_or_else(|| Error::NotARepository {
                        path: cwd.to_path_buf(),
                        source: Box::new(e),
                    })
            })?
            .to_thread_local();
        Self::from_gix(inner)
    }

    /// Open another worktree of the same repository (for example a session's, from the main one).
    pub fn open_worktree(&self, workdir: &Path) -> Result<Repo> {
        let inner = gix::open(workdir).map_err(|e| Error::NotARepository {
            path: workdir.to_path_buf(),
            source: Box::new(e),
        })?;
        let repo = Self::from_gix(inner)?;
        if repo.common_dir != self.common_dir {
            return Err(Error::Corrupt(format!(
                "{} belongs to another repository ({})",
                workdir.display(),
                repo.common_dir.display()
            )));
        }
        Ok(repo)
    }

    fn from_gix(mut inner: gix::Repository) -> Result<Repo> {
        let git_dir = canonical(inner.git_dir())?;
        let extension = |key: &str| inner.config_snapshot().string(key).map(|v| v.to_string());
        let place = inner.workdir().unwrap_or(&git_dir);
        if let Some(unsupported) = super::format::unsupported(place, extension) {
            return Err(unsupported);
        }
        if inner.git_dir_trust() != gix::sec::Trust::Full {
            return Err(Error::DubiousOwnership { path: git_dir });
        }
        let Some(workdir) = inner.workdir() else {
            return Err(Error::Bare { path: git_dir });
        };
        let workdir = canonical(workdir)?;
        let common_dir =
            super::shadow_place::real_common_dir(&git_dir, canonical(inner.common_dir())?);
        // Checkpoints and notes must never fail for a missing user.name.
        let no_identity = super::identity::install_fallback(&mut inner)?;
        // Git checks the index's checksum only in `fsck`; gix on every read, which costs a
        // copy and a hash of the whole file on every snapshot. Read it as git does.
        inner
            .config_snapshot_mut()
            .set_value(&gix::config::tree::Index::SKIP_HASH, "true")
            .map_err(|e| Error::gix("could not set up reading the index", e))?;
        let mut git = GitCli::new(git_dir.clone(), workdir.clone())?;
        if no_identity {
            git = git.with_fallback_identity();
        }
        Ok(Repo {
            inner,
            workdir,
            git_dir,
            common_dir,
            git,
            feed: None,
            held: None,
            opened: crate::time::Timestamp::now().secs() as i64,
        })
    }

    /// This handle over `inner` (a clone of its own gix handle), holding its new objects in
    /// memory when `holding` (see [`super::pack`]).
    pub(super) fn with_gix(&self, inner: gix::Repository, holding: bool) -> Repo {
        Repo {
            inner,
            workdir: self.workdir.clone(),
            git_dir: self.git_dir.clone(),
            common_dir: self.common_dir.clone(),
            git: self.git.clone(),
            feed: self.feed.clone(),
            held: holding.then(|| std::cell::Cell::new(0)),
            opened: self.opened,
        }
    }

    /// The bytes of blobs held so far, on a handle that holds its new objects.
    pub(super) fn held_bytes(&self) -> Option<&std::cell::Cell<u64>> {
        self.held.as_ref()
    }

    /// The gix repository, for the other modules of this layer.
    pub(crate) fn gix(&self) -> &gix::Repository {
        &self.inner
    }

    /// The root of the worktree this handle was opened in.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// This worktree's private git dir (`.git`, or `.git/worktrees/<id>` for a linked one).
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// The git dir shared by all worktrees; refs and objects live here.
    pub fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// Whether this handle was opened in a linked worktree rather than the main one.
    pub fn is_linked_worktree(&self) -> bool {
        self.git_dir != self.common_dir
    }

    /// The `git` binary, bound to this worktree; private to this layer (see `commands.rs`).
    pub(super) fn git(&self) -> Result<&GitCli> {
        // A git process sees none of what a holding handle keeps in memory: written first.
        self.write_held(&[])?;
        Ok(&self.git)
    }

    /// The root of the main worktree.
    pub fn main_workdir(&self) -> Result<PathBuf> {
        if !self.is_linked_worktree() {
            return Ok(self.workdir.clone());
        }
        for wt in self.worktrees()? {
            if wt.is_main {
                return Ok(wt.path);
            }
        }
        // The common dir of a non-bare repository sits in its main worktree.
        match self.common_dir.parent() {
            Some(parent) => Ok(parent.to_path_buf()),
            None => Err(Error::Corrupt(format!(
                "cannot find the main worktree of {}",
                self.common_dir.display()
            ))),
        }
    }

    /// All worktrees, main first.
    ///
    /// A `git worktree add` killed between creating its administrative `commondir` file and
    /// writing it leaves an empty file that makes every `git worktree` command die ("failed
    /// to read …/commondir"). Such a directory is still locked `initializing`, so git-bmad
    /// finishes that one write the way git would (`../..`, the only content git writes
    /// there) and asks again; the worktree is then listed as half-added, which `doctor`
    /// names and `remove --force` clears.
    pub fn worktrees(&self) -> Result<Vec<WorktreeInfo>> {
        let list = || self.git.run(["worktree", "list", "--porcelain", "-z"]);
        // A `git worktree add` running now writes its administrative directory file by file,
        // and a listing that reads it half-made dies; a moment later it is whole. One that
        // stays torn was left by a killed add, and is completed here.
        let mut wait = Duration::from_millis(20);
        let out = loop {
            match list() {
                Ok(out) => break out,
                Err(error) if !reads_an_admin_dir(&error) => return Err(error),
                Err(_) if wait <= Duration::from_millis(320) => {
                    std::thread::sleep(wait);
                    wait *= 2;
                }
                Err(error) => {
                    if self.complete_torn_worktree_admin_dirs() == 0 {
                        return Err(error);
                    }
                    break list()?;
                }
            }
        };
        Ok(parse_worktree_list(&out))
    }

    /// Write `commondir` into every administrative directory locked `initializing` whose
    /// `commondir` is empty; returns how many were completed.
    fn complete_torn_worktree_admin_dirs(&self) -> usize {
        let Ok(dirs) = std::fs::read_dir(self.common_dir.join("worktrees")) else {
            return 0;
        };
        let mut completed = 0;
        for admin in dirs.flatten().map(|d| d.path()) {
            let commondir = admin.join("commondir");
            let torn = std::fs::metadata(&commondir).is_ok_and(|m| m.len() == 0);
            let initializing = std::fs::read_to_string(admin.join("locked"))
                .is_ok_and(|l| l.trim_end() == INITIALIZING);
            if torn && initializing && std::fs::write(&commondir, "../..\n").is_ok() {
                tracing::warn!(admin = %admin.display(), "completed a torn `git worktree add`");
                completed += 1;
            }
        }
        completed
    }

    /// The commit HEAD points to in this worktree, if HEAD is born.
    pub fn head_id(&self) -> Result<Option<ObjectId>> {
        match self.inner.head_id() {
            Ok(id) => Ok(Some(id.detach())),
            Err(_) => {
                let head = self
                    .inner
                    .head()
                    .map_err(|e| Error::gix("could not read HEAD", e))?;
                if head.is_unborn() {
                    Ok(None)
                } else {
                    Err(Error::Corrupt("HEAD does not point to a commit".into()))
                }
            }
        }
    }

    /// The full name of the branch HEAD points to here, if not detached.
    pub fn head_branch(&self) -> Result<Option<String>> {
        let name = self
            .inner
            .head_name()
            .map_err(|e| Error::gix("could not read HEAD", e))?;
        Ok(name.map(|n| n.as_bstr().to_str_lossy().into_owned()))
    }

    /// Resolve a revision (`main`, `HEAD~2`, an abbreviated id) to a commit id.
    pub fn resolve_commit(&self, rev: &str) -> Result<Option<ObjectId>> {
        let Ok(id) = self.inner.rev_parse_single(rev) else {
            return Ok(None);
        };
        let object = id
            .object()
            .map_err(|e| Error::gix(format!("could not read {rev}"), e))?;
        match object.peel_to_commit() {
            Ok(commit) => Ok(Some(commit.id)),
            Err(_) => Ok(None),
        }
    }

    /// The bytes of the file at `path` in the tree of commit `rev` (`None`: no such commit,
    /// or no such file in it, or not a file).
    pub fn file_at(&self, rev: &str, path: &str) -> Result<Option<Vec<u8>>> {
        let Some(commit) = self.resolve_commit(rev)? else {
            return Ok(None);
        };
        let Ok(id) = self
            .inner
            .rev_parse_single(format!("{commit}:{path}").as_str())
        else {
            return Ok(None);
        };
        match id.object() {
            Ok(object) if object.kind == gix::object::Kind::Blob => Ok(Some(object.detach().data)),
            _ => Ok(None),
        }
    }

    /// Decode a commit.
    pub fn commit_info(&self, id: ObjectId) -> Result<CommitInfo> {
        let commit = self
            .inner
            .find_commit(id)
            .map_err(|e| Error::gix(format!("could not read commit {id}"), e))?;
        let decoded = commit
            .decode()
            .map_err(|e| Error::gix(format!("could not decode commit {id}"), e))?;
        Ok(CommitInfo {
            id,
            tree: decoded.tree(),
            parents: decoded.parents().collect(),
            message: decoded.message.to_str_lossy().into_owned(),
            time: decoded.committer().map(|c| c.seconds()).unwrap_or_default(),
        })
    }

    /// Whether `ancestor` is reachable from `descendant`; `None` when the history here cannot
    /// tell (a shallow clone whose walk ended without finding it, or unreadable commits).
    ///
    /// A fast-forward is found in a step or two; a negative answer walks all of history,
    /// which only happens when a push is being refused anyway.
    pub fn is_ancestor(&self, ancestor: ObjectId, descendant: ObjectId) -> Result<Option<bool>> {
        let walk = match self.inner.rev_walk([descendant]).all() {
            Ok(walk) => walk,
            Err(_) => return Ok(None),
        };
        for info in walk {
            match info {
                Ok(info) if info.id == ancestor => return Ok(Some(true)),
                Ok(_) => {}
                Err(_) => return Ok(None),
            }
        }
        let shallow = self
            .inner
            .is_shallow()
            .map_err(|e| Error::gix("could not tell whether the repository is shallow", e))?;
        Ok(if shallow { None } else { Some(false) })
    }

    /// The messages of an annotated tag and of the tags it points to, outermost first; empty
    /// for anything that is not a tag.
    pub fn tag_messages(&self, id: ObjectId) -> Result<Vec<String>> {
        let mut messages = Vec::new();
        let mut next = id;
        // A tag of a tag of… is legal; a bound keeps a crafted chain from running forever.
        for _ in 0..64 {
            let object = self
                .inner
                .find_object(next)
                .map_err(|e| Error::gix(format!("could not read object {next}"), e))?;
            if object.kind != gix::object::Kind::Tag {
                break;
            }
            let tag = object.into_tag();
            let decoded = tag
                .decode()
                .map_err(|e| Error::gix(format!("could not decode tag {next}"), e))?;
            messages.push(decoded.message.to_str_lossy().into_owned());
            next = decoded.target();
        }
        Ok(messages)
    }

    /// Whether an object exists in the object database.
    pub fn has_object(&self, id: ObjectId) -> bool {
        self.inner.has_object(id)
    }

    /// Whether `id` names a commit (and not a blob, tree or tag).
    pub fn is_commit(&self, id: ObjectId) -> bool {
        self.inner
            .find_header(id)
            .is_ok_and(|h| h.kind() == gix::object::Kind::Commit)
    }

    /// The size of object `id` without reading it, if it is here.
    pub fn object_size(&self, id: ObjectId) -> Option<u64> {
        self.inner.find_header(id).ok().map(|h| h.size())
    }

    /// The bytes of a blob.
    pub fn read_blob(&self, id: ObjectId) -> Result<Vec<u8>> {
        let mut blob = self
            .inner
            .find_blob(id)
            .map_err(|e| Error::gix(format!("could not read blob {id}"), e))?;
        Ok(blob.take_data())
    }

    /// Write a blob.
    pub fn write_blob(&self, data: &[u8]) -> Result<ObjectId> {
        self.hold_bytes(data.len())?;
        self.inner
            .write_blob(data)
            .map(|id| id.detach())
            .map_err(|e| Error::gix("could not write a blob", e))
    }

    /// The tree of a commit.
    pub fn tree_of(&self, commit: ObjectId) -> Result<ObjectId> {
        Ok(self.commit_info(commit)?.tree)
    }

    /// Write a commit as the user (or the git-bmad fallback identity); no ref moves.
    pub fn write_commit(
        &self,
        tree: ObjectId,
        parents: &[ObjectId],
        message: &str,
    ) -> Result<ObjectId> {
        use super::identity::Role;
        let committer = self.signature(Role::Committer)?;
        let author = self.signature(Role::Author)?;
        let (mut committed, mut authored) = Default::default();
        self.inner
            .new_commit_as(
                committer.to_ref(&mut committed),
                author.to_ref(&mut authored),
                message,
                tree,
                parents.iter().copied(),
            )
            .map(|c| c.id)
            .map_err(|e| Error::gix(format!("could not write a commit for tree {tree}"), e))
    }

    /// The committer or author of a commit or ref update made through this handle.
    pub(super) fn signature(&self, role: super::identity::Role) -> Result<gix::actor::Signature> {
        super::identity::signature(&self.inner, role, self.opened)
    }

    /// The empty tree's id.
    pub fn empty_tree(&self) -> ObjectId {
        ObjectId::empty_tree(self.inner.object_hash())
    }

    /// A config value as git would resolve it (local, global, system), if set.
    pub fn config_string(&self, key: &str) -> Option<String> {
        self.inner
            .config_snapshot()
            .string(key)
            .map(|v| v.to_str_lossy().into_owned())
    }

    /// A boolean config value as git would resolve it, if set.
    pub fn config_bool(&self, key: &str) -> Option<bool> {
        self.inner.config_snapshot().boolean(key)
    }

    /// The names of the configured remotes.
    pub fn remote_names(&self) -> Vec<String> {
        self.inner
            .remote_names()
            .iter()
            .map(|name| name.to_string())
            .collect()
    }

    /// The user's identity as git resolves it: `user.name`, `user.email`.
    pub fn identity(&self) -> [Option<String>; 2] {
        [
            self.config_string("user.name"),
            self.config_string("user.email"),
        ]
    }

    /// Path of a file in the common dir (for lock files and reflogs of shared refs).
    pub(crate) fn common_path(&self, rela: &str) -> PathBuf {
        self.common_dir.join(rela)
    }
}

fn canonical(path: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(path).map_err(|e| Error::io("could not resolve", path, e))
}

/// Whether a `git worktree list` failed reading a worktree's administrative directory
/// (`.git/worktrees/<name>/…`), as it does while a `git worktree add` is making one.
fn reads_an_admin_dir(error: &Error) -> bool {
    matches!(error, Error::Command { stderr, .. } if stderr.contains("/worktrees/"))
}

/// Parse `git worktree list --porcelain -z`: records of NUL-terminated fields, each record
/// ending with an empty field.
fn parse_worktree_list(out: &[u8]) -> Vec<WorktreeInfo> {
    let mut list = Vec::new();
    let mut current: Option<WorktreeInfo> = None;
    for field in out.split(|b| *b == 0) {
        let field = String::from_utf8_lossy(field);
        if field.is_empty() {
            if let Some(wt) = current.take() {
                list.push(wt);
            }
            continue;
        }
        if let Some(path) = field.strip_prefix("worktree ") {
            let path = PathBuf::from(path);
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            current = Some(WorktreeInfo {
                path,
                branch: None,
                prunable: false,
                is_main: list.is_empty(),
                locked: None,
            });
        } else if let Some(wt) = current.as_mut() {
            if let Some(branch) = field.strip_prefix("branch ") {
                wt.branch = Some(branch.to_string());
            } else if field == "prunable" || field.starts_with("prunable ") {
                wt.prunable = true;
            } else if field == "locked" || field.starts_with("locked ") {
                wt.locked = Some(field.trim_start_matches("locked").trim().to_owned());
            }
        }
    }
    list.extend(current);
    list
}

/// The lock reason `git worktree add` writes while it builds a worktree.
pub(super) const INITIALIZING: &str = "initializing";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_worktree_list() {
        let out = b"worktree /nonexistent/a\0HEAD 1111111111111111111111111111111111111111\0branch refs/heads/main\0\0worktree /nonexistent/a.x\0HEAD 2222222222222222222222222222222222222222\0branch refs/heads/bmad/x\0prunable gitdir file points to non-existent location\0locked initializing\0\0worktree /nonexistent/d\0HEAD 3333333333333333333333333333333333333333\0detached\0\0";
        let list = parse_worktree_list(out);
        assert_eq!(list.len(), 3);
        assert!(list[0].is_main && !list[1].is_main);
        assert_eq!(list[1].branch.as_deref(), Some("refs/heads/bmad/x"));
        assert!(list[1].prunable && !list[0].prunable);
        assert_eq!(list[2].branch, None);
        assert_eq!(list[1].locked.as_deref(), Some("initializing"));
        assert_eq!(list[0].locked, None);
    }
}

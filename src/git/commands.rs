//! Named operations that run the `git` binary: the only way other layers reach it.
//!
//! The raw runner ([`GitCli`](super::cli::GitCli)) is private to this layer, so every git
//! command line git-bmad runs is written in this folder, with its environment cleared the
//! same way, and can be audited here.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use super::error::{Error, Result};
use super::push::PushOutcome;
use super::repo::Repo;
use super::repo::INITIALIZING;
use super::ObjectId;

/// One of git's config files, by the scope that reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigFile {
    /// The repository's own (`.git/config`).
    Local,
    /// The user's (`~/.gitconfig` or `$XDG_CONFIG_HOME/git/config`).
    Global,
    /// The machine's (`/etc/gitconfig`), read only here.
    System,
}

impl ConfigFile {
    fn flag(self) -> &'static str {
        match self {
            ConfigFile::Local => "--local",
            ConfigFile::Global => "--global",
            ConfigFile::System => "--system",
        }
    }
}

impl Repo {
    /// The effective hooks directory of this worktree (`core.hooksPath` honoured).
    pub fn hooks_dir(&self) -> Result<PathBuf> {
        let out =
            self.git()?
                .run(["rev-parse", "--path-format=absolute", "--git-path", "hooks"])?;
        Ok(PathBuf::from(String::from_utf8_lossy(&out).trim()))
    }

    /// All values of a key in the repository's own config file (`--local`).
    pub fn local_config_values(&self, key: &str) -> Result<Vec<String>> {
        self.git()?.config_get_all(key)
    }

    /// A boolean setting as the git running us sees it: every config file and the settings
    /// its command line gave (`git -c key=value …` reaches hooks through the environment).
    pub fn effective_config_bool(&self, key: &str) -> Result<Option<bool>> {
        self.git()?.config_get_bool(key)
    }

    /// The scope (`local`, `worktree`, `global`, `system`, `command`) that sets `key` for
    /// this worktree, and its value: where a setting comes from decides who else it touches.
    pub fn config_scope(&self, key: &str) -> Result<Option<(String, String)>> {
        self.git()?.config_get_with_scope(key)
    }

    /// Whether git tracks any file under `dir` (a directory of this worktree).
    pub fn tracks_files_under(&self, dir: &Path) -> Result<bool> {
        let out = self
            .git()?
            .run([OsStr::new("ls-files"), OsStr::new("--"), dir.as_os_str()])?;
        Ok(!out.is_empty())
    }

    /// Every setting whose key matches the regular expression `pattern`, in the order git
    /// reads them, with the config file that sets it (`command` and `worktree` settings are
    /// left out): one git call for several keys.
    pub fn config_entries(&self, pattern: &str) -> Result<Vec<(ConfigFile, String, String)>> {
        Ok(self
            .git()?
            .config_get_regexp_with_scope(pattern)?
            .into_iter()
            .filter_map(|(scope, key, value)| {
                let file = match scope.as_str() {
                    "local" => ConfigFile::Local,
                    "global" => ConfigFile::Global,
                    "system" => ConfigFile::System,
                    _ => return None,
                };
                Some((file, key, value))
            })
            .collect())
    }

    /// Set (`Some`) or remove (`None`) `key` in one config file.
    pub fn set_config_in(&self, file: ConfigFile, key: &str, value: Option<&str>) -> Result<()> {
        self.git()?.config_put_in(file.flag(), key, value)
    }

    /// Add `value` to a multi-valued key of the repository's own config file, unless it is
    /// there already; whether it was added.
    pub fn add_local_config(&self, key: &str, value: &str) -> Result<bool> {
        let _turn = turn(self.common_dir(), "bmad/config.lock")?;
        if self.local_config_values(key)?.iter().any(|v| v == value) {
            return Ok(false);
        }
        self.git()?.config_add(key, value).map(|()| true)
    }

    /// What `key` is set to (git's word, whatever the scope), or else `value`, added to the
    /// repository's own config file now. git-bmad processes take turns: two that found it
    /// unset at once (the first stories of an epic, starting together) would both write,
    /// and git's config lock refuses the second.
    pub fn config_or_add(&self, key: &str, value: &str) -> Result<String> {
        let _turn = turn(self.common_dir(), "bmad/config.lock")?;
        if let Some((_, set)) = self.config_scope(key)? {
            return Ok(set);
        }
        self.git()?.config_add(key, value)?;
        Ok(value.to_owned())
    }

    /// Add `Key: value` to the trailers of a commit message file, unless that exact trailer
    /// is there already (`git interpret-trailers --if-exists addIfDifferent`).
    pub fn add_trailer(&self, message_file: &Path, trailer: &str) -> Result<()> {
        self.git()?
            .run([
                std::ffi::OsStr::new("interpret-trailers"),
                "--in-place".as_ref(),
                "--if-exists".as_ref(),
                "addIfDifferent".as_ref(),
                "--trailer".as_ref(),
                trailer.as_ref(),
                message_file.as_os_str(),
            ])
            .map(drop)
    }

    /// What an index would add to HEAD, as a zero-context patch (for secret scanning).
    /// `index` names another index file than this worktree's.
    pub fn staged_patch(&self, index: Option<&Path>) -> Result<Vec<u8>> {
        self.git()?.staged_patch(index)
    }

    /// The commits of `range` as zero-context patches, each introduced by `commit <id>`.
    pub fn log_patch(&self, range: &str) -> Result<Vec<u8>> {
        self.git()?.log_patch(range)
    }

    /// Start `git log -p` of `revs` in the background (see [`Self::log_patch`]); dropping the
    /// handle stops it.
    pub fn start_log_patch(&self, revs: &[&str]) -> Result<PatchStream> {
        let mut cmd = self.git()?.log_patch_command(revs);
        cmd.stdout(Stdio::piped()).stderr(Stdio::null());
        let child = cmd.spawn().map_err(|e| Error::Command {
            args: "log -p".into(),
            code: None,
            stderr: e.to_string(),
        })?;
        Ok(PatchStream { child: Some(child) })
    }

    /// Untracked files that the ignore rules on disk do not exclude.
    pub fn untracked_files(&self) -> Result<Vec<String>> {
        self.git()?.untracked_files()
    }

    /// Tracked and untracked-not-ignored files under `paths`, relative to the worktree root.
    pub fn list_files(&self, paths: &[PathBuf]) -> Result<Vec<String>> {
        for path in paths {
            // Resolved as git would (symlinks, `..`), or as written when it does not exist.
            let full = self.workdir().join(path);
            let full = std::fs::canonicalize(&full).unwrap_or_else(|_| lexically_normal(&full));
            if !full.starts_with(self.workdir()) {
                return Err(Error::OutsideWorktree {
                    path: path.clone(),
                    workdir: self.workdir().to_owned(),
                });
            }
        }
        self.git()?.list_files(paths)
    }

    /// Whether `index` (this worktree's own when `None`) stages a change to any path but
    /// `except`.
    pub fn staged_besides(&self, index: Option<&Path>, except: &str) -> Result<bool> {
        self.git()?.staged_besides(index, except)
    }

    /// Stage one file of this worktree into `index` (its own when `None`); ignore rules hold.
    pub fn stage_path(&self, index: Option<&Path>, path: &str) -> Result<()> {
        self.git()?.stage_path(index, path)
    }

    /// Stage this whole worktree (`add -A`) into the index file `index` and return its tree.
    /// Big files go in first, as git-bmad stores them (see [`super::prestage`]).
    pub fn write_tree_of_worktree(&self, index: &Path) -> Result<ObjectId> {
        let git = self.git()?;
        // Only memory is at stake: git's own `add -A` stages whatever this left out.
        if let Err(e) = self.prestage_big_files(index) {
            tracing::warn!("big files left to git's add -A: {e}");
        }
        self.stage_all(git, Some(index))
            .map_err(|e| e.refused_by_git("the worktree as it is on disk"))?;
        git.write_tree_of_index(index)
    }

    /// `add -A` into `index` (the worktree's own when `None`), as git holds every file.
    ///
    /// Under `core.ignorecase` on a disk that keeps case, one pass drops a file or directory
    /// renamed by case alone: the old name is gone from disk, and the new one stays hidden
    /// behind the old entry until that entry is gone. The pass drops every such entry at once,
    /// so a second one holds every new name, as git's own next `add -A` does.
    fn stage_all(&self, git: &super::cli::GitCli, index: Option<&Path>) -> Result<()> {
        let passes = if self.config_bool("core.ignoreCase") == Some(true) {
            2
        } else {
            1
        };
        for _ in 0..passes {
            git.stage_all(index)?;
        }
        Ok(())
    }

    /// Bring this worktree's own index in line with the disk for those of `paths` it
    /// tracks (a changed file staged, a deleted one removed); the others stay untracked.
    pub fn restage_tracked(&self, paths: &[String]) -> Result<()> {
        if paths.is_empty() {
            return Ok(());
        }
        let git = self.git()?;
        let literal: Vec<String> = paths.iter().map(|p| format!(":(literal){p}")).collect();
        let mut args = vec!["ls-files", "-z", "--cached", "--"];
        args.extend(literal.iter().map(String::as_str));
        let listed = git.run(args)?;
        let tracked: Vec<String> = listed
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| format!(":(literal){}", String::from_utf8_lossy(p)))
            .collect();
        if tracked.is_empty() {
            return Ok(());
        }
        git.stage_pathspecs(&tracked)
    }

    /// The tree the index file `index` describes.
    pub fn write_tree_of_index(&self, index: &Path) -> Result<ObjectId> {
        self.git()?.write_tree_of_index(index)
    }

    /// Two-way merge `from` → `to` through `index`, updating this worktree (`read-tree -m
    /// -u`). git refuses, before touching anything, when a file differs from what `index`
    /// records: that is how a rollback detects a worktree that changed under it.
    pub fn read_tree_update(&self, index: &Path, from: ObjectId, to: ObjectId) -> Result<()> {
        self.git()?.read_tree_update(index, from, to)
    }

    /// The commits reachable from `to` but not from `from`: how many, and how many of those
    /// some remote-tracking ref already has (pushed or fetched).
    pub fn commits_after(&self, from: ObjectId, to: ObjectId) -> Result<(usize, usize)> {
        let count = |extra: &[&str]| -> Result<usize> {
            let (from, to) = (format!("^{from}"), to.to_string());
            let mut args = vec!["rev-list", "--count", to.as_str(), from.as_str()];
            args.extend_from_slice(extra);
            let out = self.git()?.run(args)?;
            Ok(String::from_utf8_lossy(&out).trim().parse().unwrap_or(0))
        };
        let total = count(&[])?;
        if total == 0 {
            return Ok((0, 0));
        }
        let unpushed = count(&["--not", "--remotes"])?;
        Ok((total, total - unpushed.min(total)))
    }

    /// Files changed and lines added and deleted from `from` to `to` (binary files count as
    /// changed, with no lines).
    pub fn diff_stat(&self, from: ObjectId, to: ObjectId) -> Result<DiffStat> {
        let out = self.git()?.run([
            "diff",
            "--numstat",
            "-z",
            "--no-renames",
            &from.to_string(),
            &to.to_string(),
        ])?;
        Ok(DiffStat::from_numstat(&out))
    }

    /// How many commits reachable from `heads` no branch, remote-tracking ref or tag has.
    pub fn commits_on_no_ref(&self, heads: &[ObjectId]) -> Result<usize> {
        if heads.is_empty() {
            return Ok(0);
        }
        let heads: Vec<String> = heads.iter().map(ToString::to_string).collect();
        let mut args = vec!["rev-list", "--count"];
        args.extend(heads.iter().map(String::as_str));
        args.extend(["--not", "--branches", "--remotes", "--tags"]);
        let out = self.git()?.run(args)?;
        Ok(String::from_utf8_lossy(&out).trim().parse().unwrap_or(0))
    }

    /// Local branches and remote-tracking refs that contain `commit`, except `except`.
    pub fn refs_containing(&self, commit: ObjectId, except: &str) -> Result<Vec<String>> {
        self.git()?.refs_containing(commit, except)
    }

    /// Stage everything in this worktree and commit it with `message` (the repository's
    /// hooks run, so the policy applies to git-bmad's own commits too). `false` when there
    /// was nothing to commit.
    pub fn commit_all(&self, message: &str) -> Result<bool> {
        let git = self.git()?;
        self.stage_all(git, None)?;
        if git.run(["diff", "--cached", "--name-only"])?.is_empty() {
            return Ok(false);
        }
        git.run(["commit", "--quiet", "-m", message]).map(|_| true)
    }

    /// Whether a remote of this name is configured.
    pub fn has_remote(&self, name: &str) -> Result<bool> {
        let out = self.git()?.run(["remote"])?;
        Ok(String::from_utf8_lossy(&out).lines().any(|l| l == name))
    }

    /// `git push <remote> refs/heads/<b>:refs/heads/<b>`: never forced, through the hooks.
    pub fn push_branch(&self, remote: &str, short_branch: &str) -> Result<()> {
        let spec = format!("refs/heads/{short_branch}:refs/heads/{short_branch}");
        self.git()?
            .run(["push", "--quiet", remote, &spec])
            .map(drop)
    }

    /// Push `specs` (`src:dst`, never `+`-forced) to `remote` in one atomic push through the
    /// hooks: every ref moves or none does. Each `(ref, expected)` lease makes the push fail
    /// unless the remote's ref still is what this clone last saw there (`None`: that it does
    /// not exist). A lease lets git skip its fast-forward check, so the pre-push policy, which
    /// refuses every update that is not a fast-forward, stays the check that nothing is ever
    /// overwritten. Refused refs (not a fast-forward, stale lease, declined by the remote)
    /// mean nothing moved; a hook refusing the push is an error.
    pub fn push_atomic(
        &self,
        remote: &str,
        specs: &[String],
        leases: &[(String, Option<ObjectId>)],
    ) -> Result<PushOutcome> {
        debug_assert!(specs.iter().all(|s| !s.starts_with('+')));
        let mut args: Vec<String> = leases
            .iter()
            .map(|(name, expected)| {
                let expected = expected.map(|id| id.to_string()).unwrap_or_default();
                format!("--force-with-lease={name}:{expected}")
            })
            .collect();
        args.push(remote.to_owned());
        args.extend(specs.iter().cloned());
        self.git()?.push_atomic(&args)
    }

    /// Fetch `specs` from `remote` without tags or FETCH_HEAD.
    pub fn fetch(&self, remote: &str, specs: &[String]) -> Result<()> {
        self.git()?.fetch(remote, specs)
    }

    /// Fetch `branch` (a short name) from `remote` into its remote-tracking ref; `false`
    /// when the remote has no such branch (git says so only in its message, read here once).
    pub fn fetch_branch(&self, remote: &str, branch: &str) -> Result<bool> {
        let spec = format!("+refs/heads/{branch}:refs/remotes/{remote}/{branch}");
        match self.fetch(remote, &[spec]) {
            Ok(()) => Ok(true),
            Err(Error::Command { stderr, .. }) if stderr.contains("couldn't find remote ref") => {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// A checkout of exactly `commit` in `dir` (empty or absent): a repository of its own
    /// that borrows this one's objects and has none of its remotes, hooks or configuration.
    pub fn clean_checkout(&self, commit: ObjectId, dir: &Path) -> Result<()> {
        self.git()?.clean_checkout(self.common_dir(), commit, dir)
    }

    /// `git worktree add -b <branch> <path> <base>`, with the submodules checked out.
    pub fn add_worktree(&self, path: &Path, branch: &str, base: ObjectId) -> Result<()> {
        let _turn = turn(self.common_dir(), "bmad/worktree-add.lock")?;
        self.git()?.worktree_add(path, branch, base)?;
        self.unsparse_index_in(path);
        self.check_out_submodules_in(path);
        Ok(())
    }

    /// `git worktree add <path> <branch>`: a worktree on a branch that exists (short name),
    /// with the submodules checked out.
    pub fn add_worktree_on(&self, path: &Path, short_branch: &str) -> Result<()> {
        let _turn = turn(self.common_dir(), "bmad/worktree-add.lock")?;
        self.git()?.worktree_add_existing(path, short_branch)?;
        self.unsparse_index_in(path);
        self.check_out_submodules_in(path);
        Ok(())
    }

    /// `git worktree remove [--force] <path>`. git refuses any worktree with submodules
    /// checked out, changed or not; one whose submodules hold nothing uncommitted or
    /// untracked loses nothing, and is removed. Forced, it also takes a worktree git still
    /// marks as being added (a killed `git worktree add` left it locked `initializing`),
    /// which git would remove only with `-f -f`; a lock a person set stays in the way.
    pub fn remove_worktree(&self, path: &Path, force: bool) -> Result<()> {
        if force && matches!(self.half_added(path)?, Some(HalfAdded::Listed)) {
            self.git()?.worktree_unlock(path)?;
        }
        let removed = match self.git()?.worktree_remove(path, force) {
            Err(e) if !force && e.to_string().contains("containing submodules") => {
                if !self.changed_submodules(path)?.is_empty() {
                    return Err(e);
                }
                self.git()?.worktree_remove(path, true)
            }
            other => other,
        };
        self.forget_caches_of_gone_worktrees();
        removed
    }

    /// Whether the worktree at `path` is one whose `git worktree add` was killed: git lists
    /// it locked `initializing`, or does not list it at all because the kill came before
    /// git wrote its `gitdir` file (then only a locked administrative directory of the
    /// path's name says the directory is git's half-made checkout).
    pub fn is_half_added_worktree(&self, path: &Path) -> Result<bool> {
        Ok(self.half_added(path)?.is_some())
    }

    /// Remove a worktree whose `git worktree add` was killed, which `worktree remove`
    /// refuses: unlock it, delete the directory git made, and let git forget it. Refuses
    /// any other worktree.
    pub fn remove_half_added_worktree(&self, path: &Path) -> Result<()> {
        let Some(half) = self.half_added(path)? else {
            return Err(Error::Corrupt(format!(
                "{} is not a worktree whose `git worktree add` was interrupted",
                path.display()
            )));
        };
        match half {
            HalfAdded::Listed => self.git()?.worktree_unlock(path)?,
            // git cannot name an unlisted worktree to unlock it; its lock is this file.
            HalfAdded::Unlisted { admin } => {
                let lock = admin.join("locked");
                std::fs::remove_file(&lock)
                    .map_err(|e| Error::io("could not unlock the half-added worktree", &lock, e))?;
            }
        }
        if path.exists() {
            std::fs::remove_dir_all(path)
                .map_err(|e| Error::io("could not delete the half-added worktree", path, e))?;
        }
        self.prune_worktrees()
    }

    fn half_added(&self, path: &Path) -> Result<Option<HalfAdded>> {
        let here = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        let worktrees = self.worktrees()?;
        if let Some(listed) = worktrees.iter().find(|w| w.path == here) {
            let initializing = listed.locked.as_deref() == Some(INITIALIZING);
            return Ok(initializing.then_some(HalfAdded::Listed));
        }
        // git names the administrative directory after the path's last component, with a
        // number appended when that name is taken.
        let Some(name) = here.file_name().and_then(|n| n.to_str()) else {
            return Ok(None);
        };
        let admin_root = self.common_dir().join("worktrees");
        let Ok(entries) = std::fs::read_dir(&admin_root) else {
            return Ok(None);
        };
        for entry in entries.flatten() {
            let admin = entry.path();
            let entry_name = entry.file_name();
            let Some(suffix) = entry_name.to_str().and_then(|n| n.strip_prefix(name)) else {
                continue;
            };
            if !suffix.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let locked = std::fs::read_to_string(admin.join("locked")).unwrap_or_default();
            if locked.trim_end() != INITIALIZING {
                continue;
            }
            // No `gitdir` yet, or one naming this path: either way git's add of it died.
            // (Empty: killed while git wrote it.)
            let ours = match std::fs::read_to_string(admin.join("gitdir")) {
                Ok(gitdir) if gitdir.trim().is_empty() => true,
                Ok(gitdir) => Path::new(gitdir.trim_end()).parent() == Some(here.as_path()),
                Err(e) => e.kind() == std::io::ErrorKind::NotFound,
            };
            if ours {
                return Ok(Some(HalfAdded::Unlisted { admin }));
            }
        }
        Ok(None)
    }

    /// Delete a worktree's directory whatever state it is in, then let git forget it: for a
    /// removal already under way, which `git worktree remove` refuses once the `.git` file
    /// is gone.
    pub fn remove_worktree_files(&self, path: &Path) -> Result<()> {
        if self.git()?.worktree_remove(path, true).is_ok() {
            self.forget_caches_of_gone_worktrees();
            return Ok(());
        }
        match std::fs::remove_dir_all(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("could not delete the worktree", path, e)),
        }
        self.prune_worktrees()
    }

    /// `git worktree repair`: rewrite the links between worktrees and the repository.
    pub fn repair_worktrees(&self) -> Result<()> {
        self.git()?.worktree_repair()
    }

    /// `git worktree prune`: forget worktrees whose directories are gone.
    pub fn prune_worktrees(&self) -> Result<()> {
        self.git()?.worktree_prune()?;
        self.forget_caches_of_gone_worktrees();
        Ok(())
    }

    /// `git branch -D <name>` (the caller has already decided it is safe).
    pub fn delete_branch(&self, short_name: &str) -> Result<()> {
        self.git()?.delete_branch(short_name)
    }
}

/// A `git log -p` running in the background.
#[derive(Debug)]
pub struct PatchStream {
    child: Option<Child>,
}

impl PatchStream {
    /// Wait for the whole patch.
    pub fn finish(mut self) -> Result<Vec<u8>> {
        let Some(mut child) = self.child.take() else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        if let Some(mut stdout) = child.stdout.take() {
            stdout
                .read_to_end(&mut out)
                .map_err(|e| Error::io("could not read the output of", "git log -p", e))?;
        }
        let status = child
            .wait()
            .map_err(|e| Error::io("could not wait for", "git log -p", e))?;
        if status.success() {
            Ok(out)
        } else {
            Err(Error::Command {
                args: "log -p (outgoing commits)".into(),
                code: status.code(),
                stderr: String::new(),
            })
        }
    }
}

impl Drop for PatchStream {
    /// A patch nobody waits for is not needed: stop it.
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `path` with `.` and `..` resolved by name alone (for a path that does not exist).
fn lexically_normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// What a diff adds up to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiffStat {
    /// Paths changed.
    pub files: usize,
    /// Lines added.
    pub insertions: u64,
    /// Lines deleted.
    pub deletions: u64,
}

impl DiffStat {
    /// Sum `git diff --numstat -z` output: `added<TAB>deleted<TAB>path<NUL>`, `-` for binary.
    fn from_numstat(out: &[u8]) -> DiffStat {
        let mut stat = DiffStat::default();
        for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let text = String::from_utf8_lossy(record);
            let mut fields = text.splitn(3, '\t');
            let (Some(added), Some(deleted)) = (fields.next(), fields.next()) else {
                continue;
            };
            stat.files += 1;
            stat.insertions += added.parse::<u64>().unwrap_or(0);
            stat.deletions += deleted.parse::<u64>().unwrap_or(0);
        }
        stat
    }
}

/// Work that two git-bmad processes must not do at once in one repository: each process
/// and thread takes turns, holding an advisory lock on `<common dir>/<lock>` (released by
/// the kernel if the holder dies). `git worktree add` reads every other worktree's
/// administrative files while it writes its own, so two at once can read a half-written
/// `commondir` and fail; a config write takes git's lock on the file.
fn turn(common_dir: &Path, lock: &str) -> Result<std::fs::File> {
    let path = common_dir.join(lock);
    let io = |op, e| Error::io(op, &path, e);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io("create the directory of", e))?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| io("open", e))?;
    file.lock().map_err(|e| io("lock", e))?;
    Ok(file)
}

/// How a worktree whose `git worktree add` was killed looks to git.
enum HalfAdded {
    /// `git worktree list` shows it, locked `initializing`.
    Listed,
    /// git does not list it (no `gitdir` file yet); `admin` is its locked directory under
    /// `<common dir>/worktrees/`.
    Unlisted { admin: PathBuf },
}

#[cfg(test)]
mod tests {
    use super::DiffStat;

    #[test]
    fn numstat_sums_lines_and_counts_binary_files() {
        let out = b"3\t1\tsrc/a.rs\x002\t0\tpath with\ttab.md\x00-\t-\tlogo.png\x00";
        assert_eq!(
            DiffStat::from_numstat(out),
            DiffStat {
                files: 3,
                insertions: 5,
                deletions: 1
            }
        );
        assert_eq!(DiffStat::from_numstat(b""), DiffStat::default());
    }
}

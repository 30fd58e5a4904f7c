//! The `git` binary, for what gix does not do (or not maturely): worktree add/remove/prune,
//! `read-tree -m -u`, tree diffs and config writes.
//!
//! Every call gets an explicit environment: the repository is named with `--git-dir` and
//! `--work-tree`, and the variables git exports to hooks (`GIT_DIR`, `GIT_INDEX_FILE`, …) are
//! removed so a hook's context never redirects our commands. Messages are forced to English
//! because some callers read them.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::error::{Error, Result};
use super::push::{PushOutcome, Refused};
use super::ObjectId;
use crate::env::child::REPO_REDIRECTING_VARS;

mod config;
mod hash_paths;

pub(super) use hash_paths::HashPaths;

/// Options of every patch read for secret scanning: no context, colour, external diff,
/// textconv or rename pairing, so added lines are exactly what was added; binary files as
/// text, because a key in a `.sqlite` is still a key.
const PATCH_ARGS: [&str; 6] = [
    "-U0",
    "--text",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-renames",
];

/// Who git-bmad's own commits are by when git knows no identity.
pub const FALLBACK_NAME: &str = "git-bmad";
/// The fallback identity's email.
pub const FALLBACK_EMAIL: &str = "git-bmad@localhost";

/// The `git` executable, bound to one worktree.
#[derive(Clone, Debug)]
pub(super) struct GitCli {
    program: PathBuf,
    git_dir: PathBuf,
    pub(super) workdir: PathBuf,
    /// git knows no identity here: its commits are git-bmad's fallback one.
    fallback_identity: bool,
}

impl GitCli {
    /// Find `git` on PATH and bind it to a worktree.
    pub(super) fn new(git_dir: PathBuf, workdir: PathBuf) -> Result<GitCli> {
        let program = which::which("git").map_err(|_| Error::GitNotFound)?;
        Ok(GitCli {
            program,
            git_dir,
            workdir,
            fallback_identity: false,
        })
    }

    /// The same, committing as git-bmad's fallback identity (where git knows none).
    pub(super) fn with_fallback_identity(mut self) -> GitCli {
        self.fallback_identity = true;
        self
    }

    /// A `git` command with the explicit environment described in the module docs.
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        for var in REPO_REDIRECTING_VARS {
            cmd.env_remove(var);
        }
        cmd.env("LC_ALL", "C")
            .env(crate::env::OWN_GIT, "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .arg("--git-dir")
            .arg(&self.git_dir)
            .arg("--work-tree")
            .arg(&self.workdir)
            .arg("-c")
            .arg("core.fsmonitor=false")
            .args(if self.fallback_identity {
                vec![
                    "-c".to_owned(),
                    format!("user.name={FALLBACK_NAME}"),
                    "-c".to_owned(),
                    format!("user.email={FALLBACK_EMAIL}"),
                ]
            } else {
                Vec::new()
            })
            .current_dir(&self.workdir)
            .stdin(Stdio::null());
        cmd
    }

    /// Run git with `args`; its stdout on success, an error carrying stderr otherwise.
    pub(super) fn run<I, S>(&self, args: I) -> Result<Vec<u8>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.command();
        cmd.args(args);
        run_checked(cmd)
    }

    /// Start git with `args` on its own and return: no streams, a process group of its own
    /// (a step's cleanup or a Ctrl-C leaves it be), reaped in the background if this
    /// process still runs then. For upkeep nothing waits on, as `gc --auto` detaches. Its
    /// process id.
    pub(super) fn start_detached<I, S>(&self, args: I) -> Result<u32>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        use std::os::unix::process::CommandExt;
        let mut cmd = self.command();
        cmd.args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        tracing::debug!(?cmd, "starting git on its own");
        let mut child = cmd.spawn().map_err(|e| Error::Command {
            args: describe(&cmd),
            code: None,
            stderr: e.to_string(),
        })?;
        let pid = child.id();
        // With no thread to be had, it stays a zombie until this process exits: no panic.
        let _ = std::thread::Builder::new().spawn(move || child.wait());
        Ok(pid)
    }

    /// `git cat-file blob <id>` into `file`: git streams a blob it stores whole (loose, or
    /// packed undeltified) without holding it.
    pub(super) fn cat_blob_into(&self, id: ObjectId, file: std::fs::File) -> Result<()> {
        let mut cmd = self.command();
        cmd.args(["cat-file", "blob", &id.to_string()]).stdout(file);
        run_checked(cmd).map(drop)
    }

    /// The first `limit` bytes of `git cat-file blob <id>`; git is stopped there.
    pub(super) fn cat_blob_head(&self, id: ObjectId, limit: u64) -> Result<Vec<u8>> {
        use std::io::Read;
        let mut cmd = self.command();
        cmd.args(["cat-file", "blob", &id.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let args = describe(&cmd);
        let failed = |e: std::io::Error| Error::Command {
            args: args.clone(),
            code: None,
            stderr: e.to_string(),
        };
        let mut child = cmd.spawn().map_err(failed)?;
        let mut head = Vec::new();
        let read = match child.stdout.take() {
            Some(out) => out.take(limit).read_to_end(&mut head).map(drop),
            None => Ok(()),
        };
        let _ = child.kill();
        let _ = child.wait();
        read.map_err(failed)?;
        Ok(head)
    }

    /// `git hash-object -w` of the worktree file `path`, converted by its attributes as
    /// `git add` converts it; stored in the object folder `scratch` when given (converting
    /// a file reads no object), else in the repository.
    pub(super) fn hash_file_into(&self, path: &Path, scratch: Option<&Path>) -> Result<ObjectId> {
        let mut cmd = self.command();
        if let Some(scratch) = scratch {
            cmd.env("GIT_OBJECT_DIRECTORY", scratch);
        }
        let mut at = std::ffi::OsString::from("--path=");
        at.push(path);
        cmd.args(["hash-object", "-w"]).arg(at).arg("--").arg(path);
        parse_id(&run_checked(cmd)?)
    }

    /// Run git with a temporary index (`GIT_INDEX_FILE`).
    fn run_with_index<I, S>(&self, index: &Path, args: I) -> Result<Vec<u8>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.command();
        cmd.env("GIT_INDEX_FILE", index).args(args);
        run_checked(cmd)
    }

    /// `git index-pack --stdin` from `pack`: the pack checked, indexed and stored in this
    /// repository's database.
    /// Only a plain file is read: a step's layer may hold a fifo or a link in its place.
    pub(super) fn index_pack(&self, pack: &Path) -> Result<()> {
        let file = crate::fs::open_private(pack).map_err(|e| Error::Io {
            op: "could not read the pack",
            path: pack.to_owned(),
            source: e,
        })?;
        let mut cmd = self.command();
        cmd.args(["index-pack", "--stdin"]).stdin(file);
        run_checked(cmd).map(drop)
    }

    /// `git push --atomic --porcelain <leases> <remote> <specs>` (`args`: the leases, the
    /// remote, then the specs), through the hooks: what git reports per ref (all or none
    /// move). A push that fails with no ref refused (a hook, no network) is an error.
    pub(super) fn push_atomic(&self, args: &[String]) -> Result<PushOutcome> {
        let mut cmd = self.command();
        cmd.args(["push", "--atomic", "--porcelain"]).args(args);
        let described = describe(&cmd);
        let out = output(cmd)?;
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        let mut outcome = PushOutcome::default();
        // `<flag>TAB<from>:<to>TAB<summary>` per ref: `!` refused, `=` already there.
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let mut fields = line.splitn(3, '\t');
            let (Some(flag), Some(spec)) = (fields.next(), fields.next()) else {
                continue;
            };
            let remote_ref = spec.rsplit(':').next().unwrap_or(spec).to_owned();
            match flag {
                "!" => outcome.refused.push(Refused {
                    remote_ref,
                    reason: fields.next().unwrap_or_default().to_owned(),
                    stderr: stderr.clone(),
                }),
                "=" => outcome.up_to_date.push(remote_ref),
                _ => {}
            }
        }
        if !out.status.success() && outcome.refused.is_empty() {
            let code = out.status.code();
            return Err(Error::Command {
                args: described,
                code,
                stderr,
            });
        }
        Ok(outcome)
    }

    /// `git fetch --no-tags <remote> <specs>` (forced specs into tracking namespaces only).
    pub(super) fn fetch(&self, remote: &str, specs: &[String]) -> Result<()> {
        let mut cmd = self.command();
        cmd.args([
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            remote,
        ])
        .args(specs);
        run_checked(cmd).map(drop)
    }

    /// `git worktree add -b <branch> <path> <base>`.
    pub(super) fn worktree_add(&self, path: &Path, branch: &str, base: ObjectId) -> Result<()> {
        let mut cmd = self.command();
        cmd.args(["worktree", "add", "--quiet", "-b", branch])
            .arg(path)
            .arg(base.to_string());
        run_checked(cmd).map(drop)
    }

    /// A repository of its own in `dir` (empty or absent) with exactly `commit` checked out,
    /// borrowing the objects of `source` (`git clone --shared`): no remote, no hooks, none
    /// of `source`'s configuration.
    pub(super) fn clean_checkout(&self, source: &Path, commit: ObjectId, dir: &Path) -> Result<()> {
        let mut clone = Command::new(&self.program);
        for var in REPO_REDIRECTING_VARS {
            clone.env_remove(var);
        }
        clone
            .env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .args([
                "clone",
                "--shared",
                "--no-checkout",
                "--quiet",
                "--template=",
            ])
            .arg(source)
            .arg(dir)
            .stdin(Stdio::null());
        run_checked(clone)?;
        let inside = GitCli::new(dir.join(".git"), dir.to_owned())?;
        // Checked out while `origin` still names the source: a filter that fetches content
        // (Git LFS) finds it there. Then no way back to it is left.
        inside.run([
            "-c",
            "core.hooksPath=/dev/null",
            "checkout",
            "--detach",
            "--quiet",
            &commit.to_string(),
        ])?;
        inside.check_out_submodules(source)?;
        inside.run(["remote", "remove", "origin"]).map(drop)
    }

    /// `git worktree add <path> <branch>`: a worktree on a branch that exists.
    pub(super) fn worktree_add_existing(&self, path: &Path, short_branch: &str) -> Result<()> {
        let mut cmd = self.command();
        cmd.args(["worktree", "add", "--quiet"])
            .arg(path)
            .arg(short_branch);
        run_checked(cmd).map(drop)
    }

    /// `git worktree remove [--force] <path>`.
    pub(super) fn worktree_remove(&self, path: &Path, force: bool) -> Result<()> {
        let mut cmd = self.command();
        cmd.args(["worktree", "remove"]);
        if force {
            cmd.arg("--force");
        }
        cmd.arg(path);
        run_checked(cmd).map(drop)
    }

    /// `git worktree repair`, run without paths: with one, git 2.47 rewrites the `.git`
    /// file and still exits 1.
    pub(super) fn worktree_repair(&self) -> Result<()> {
        self.run(["worktree", "repair"]).map(drop)
    }

    /// `git worktree unlock <path>`.
    pub(super) fn worktree_unlock(&self, path: &Path) -> Result<()> {
        let mut cmd = self.command();
        cmd.args(["worktree", "unlock"]).arg(path);
        run_checked(cmd).map(drop)
    }

    /// `git worktree prune`: forget worktrees whose directories are gone.
    pub(super) fn worktree_prune(&self) -> Result<()> {
        self.run(["worktree", "prune"]).map(drop)
    }

    /// A command on `index`, or on this worktree's own index when `None`.
    pub(super) fn run_on_index<I, S>(&self, index: Option<&Path>, args: I) -> Result<Vec<u8>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        match index {
            Some(index) => self.run_with_index(index, args),
            None => self.run(args),
        }
    }

    /// Whether `index` records a change from `HEAD` to any path but `except`.
    pub(super) fn staged_besides(&self, index: Option<&Path>, except: &str) -> Result<bool> {
        let exclude = format!(":(exclude,literal){except}");
        let out = self.run_on_index(
            index,
            [
                "diff-index",
                "--cached",
                "--name-only",
                "-z",
                "HEAD",
                "--",
                ".",
                &exclude,
            ],
        );
        match out {
            Ok(names) => Ok(!names.is_empty()),
            // No HEAD yet (an unborn branch): anything in the index is a change.
            Err(_) => Ok(!self.run_on_index(index, ["ls-files", "-z"])?.is_empty()),
        }
    }

    /// `git add -- <path>` into `index` (ignore rules respected).
    pub(super) fn stage_path(&self, index: Option<&Path>, path: &str) -> Result<()> {
        let literal = format!(":(literal){path}");
        let mut args = vec!["add"];
        args.extend(self.sparse_flag());
        args.extend(["--", &literal]);
        self.run_on_index(index, args).map(drop)
    }

    /// `--sparse` in a sparse checkout, so `add` takes files outside the cone (the journal,
    /// an agent's file) instead of failing; entries outside the cone that are not on disk
    /// keep their skip-worktree bit either way.
    fn sparse_flag(&self) -> Option<&'static str> {
        self.git_dir
            .join("info")
            .join("sparse-checkout")
            .exists()
            .then_some("--sparse")
    }

    /// The tree `index` describes (`write-tree`).
    pub(super) fn write_tree_of_index(&self, index: &Path) -> Result<ObjectId> {
        parse_id(&self.run_with_index(index, ["write-tree"])?)
    }

    /// Stage everything (`add -A`) into `index`, the worktree's own when `None`.
    pub(super) fn stage_all(&self, index: Option<&Path>) -> Result<()> {
        let mut args = vec!["add", "-A"];
        args.extend(self.sparse_flag());
        args.extend(["--", "."]);
        self.run_on_index(index, args).map(drop)
    }

    /// `add -A` of `pathspecs` into this worktree's own index.
    pub(super) fn stage_pathspecs(&self, pathspecs: &[String]) -> Result<()> {
        let mut args = vec!["add", "-A"];
        args.extend(self.sparse_flag());
        args.push("--");
        args.extend(pathspecs.iter().map(String::as_str));
        self.run(args).map(drop)
    }

    /// Two-way merge `from` → `to` through `index`, updating the worktree (`read-tree -m -u`).
    ///
    /// git refuses, before touching anything, when a file differs from what `index` records:
    /// that is how a rollback detects a worktree that changed under it.
    pub(super) fn read_tree_update(
        &self,
        index: &Path,
        from: ObjectId,
        to: ObjectId,
    ) -> Result<()> {
        // Sparse rules off for the merge: a changed path outside the cone (a file an agent
        // wrote there) is restored to disk like any other, not left as a skip-worktree entry
        // no file holds. Unchanged entries keep their skip-worktree bit.
        let mut args = Vec::new();
        if self.sparse_flag().is_some() {
            args.extend(["-c", "core.sparseCheckout=false"]);
        }
        let (from, to) = (from.to_string(), to.to_string());
        args.extend(["read-tree", "-m", "-u", &from, &to]);
        self.run_with_index(index, args).map(drop)
    }

    /// Local branches and remote-tracking refs that contain `commit`, excluding `except`.
    pub(super) fn refs_containing(&self, commit: ObjectId, except: &str) -> Result<Vec<String>> {
        let out = self.run([
            "for-each-ref",
            "--format=%(refname)",
            "--contains",
            &commit.to_string(),
            "refs/heads/",
            "refs/remotes/",
        ])?;
        Ok(String::from_utf8_lossy(&out)
            .lines()
            .filter(|r| *r != except && !r.ends_with("/HEAD"))
            .map(str::to_owned)
            .collect())
    }

    /// What the index would add to HEAD, as a zero-context patch (for secret scanning).
    ///
    /// `index` names another index file: inside pre-commit, git points `GIT_INDEX_FILE` at the
    /// index it is about to commit (`commit -a` and `commit <paths>` build a temporary one).
    pub(super) fn staged_patch(&self, index: Option<&Path>) -> Result<Vec<u8>> {
        let mut cmd = self.command();
        cmd.args(["-c", "core.quotePath=false", "diff", "--cached"])
            .args(PATCH_ARGS);
        if let Some(index) = index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        run_checked(cmd)
    }

    /// `git log -p` of `revs` as zero-context patches, each commit introduced by
    /// `commit <id>` and its message indented by four spaces, merges as dense combined diffs
    /// (plain `-p` shows a merge no diff at all); returned unstarted so a caller can run it
    /// in the background. Never fetches missing objects (a partial clone would go to the
    /// network).
    pub(super) fn log_patch_command(&self, revs: &[&str]) -> Command {
        let mut cmd = self.command();
        cmd.args([
            "-c",
            "core.quotePath=false",
            "log",
            "-p",
            "--cc",
            "--format=commit %H%n%w(0,4,4)%B",
        ])
        .args(PATCH_ARGS)
        .args(revs)
        .arg("--")
        .env("GIT_NO_LAZY_FETCH", "1");
        cmd
    }

    /// The commits of `range` as patches (see [`Self::log_patch_command`]).
    pub(super) fn log_patch(&self, range: &str) -> Result<Vec<u8>> {
        run_checked(self.log_patch_command(&[range]))
    }

    /// Untracked files that the ignore rules on disk do not exclude.
    pub(super) fn untracked_files(&self) -> Result<Vec<String>> {
        let out = self.run([
            "-c",
            "core.quotePath=false",
            "ls-files",
            "-z",
            "--others",
            "--exclude-standard",
        ])?;
        Ok(out
            .split(|b| *b == 0)
            .filter(|f| !f.is_empty())
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect())
    }

    /// Tracked and untracked-not-ignored files under `paths`, relative to the worktree root.
    pub(super) fn list_files(&self, paths: &[std::path::PathBuf]) -> Result<Vec<String>> {
        let mut cmd = self.command();
        cmd.args([
            "-c",
            "core.quotePath=false",
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
            "--",
        ])
        .args(paths);
        let out = run_checked(cmd)?;
        let mut files: Vec<String> = out
            .split(|b| *b == 0)
            .filter(|f| !f.is_empty())
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        files.dedup();
        Ok(files)
    }

    /// `git branch -D <name>` (the caller has already decided it is safe).
    pub(super) fn delete_branch(&self, short_name: &str) -> Result<()> {
        self.run(["branch", "-D", "--quiet", short_name]).map(drop)
    }
}

fn output(mut cmd: Command) -> Result<Output> {
    tracing::debug!(?cmd, "spawning git");
    cmd.output().map_err(|e| Error::Command {
        args: describe(&cmd),
        code: None,
        stderr: e.to_string(),
    })
}

fn run_checked(cmd: Command) -> Result<Vec<u8>> {
    let args = describe(&cmd);
    let out = output(cmd)?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(Error::Command {
            args,
            code: out.status.code(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

fn check(args: &[&str], out: &Output) -> Result<()> {
    if out.status.success() {
        return Ok(());
    }
    Err(Error::Command {
        args: args.join(" "),
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// The user-facing part of a command line: what follows our fixed prefix.
fn describe(cmd: &Command) -> String {
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // Skip `--git-dir X --work-tree Y -c core.fsmonitor=false`.
    args.iter().skip(6).cloned().collect::<Vec<_>>().join(" ")
}

pub(super) fn parse_id(out: &[u8]) -> Result<ObjectId> {
    let text = String::from_utf8_lossy(out);
    ObjectId::from_hex(text.trim().as_bytes()).map_err(|_| {
        Error::Corrupt(format!(
            "git printed {:?} where an object id was expected",
            text.trim()
        ))
    })
}

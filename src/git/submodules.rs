//! Submodules in the checkouts git-bmad makes: a session's worktree and the judge's clean
//! checkout get each submodule the repository holds a copy of, from that copy (git's own
//! `worktree add` and `clone` leave them empty); a removal never loses what one holds.

use std::path::Path;

use super::cli::GitCli;
use super::error::Result;
use super::{ObjectId, Repo};

impl GitCli {
    /// Check out, in a clean checkout, each submodule the source repository holds a copy of
    /// (`<source>/modules/<name>`), at the commit the checked-out tree records, from that
    /// copy: no network, and nothing of the source's worktrees. One that has no copy there
    /// stays empty, as it is in the source.
    pub(super) fn check_out_submodules(&self, source: &Path) -> Result<()> {
        if !self.workdir.join(".gitmodules").is_file() {
            return Ok(());
        }
        let listed = self
            .run([
                "config",
                "--file",
                ".gitmodules",
                "--get-regexp",
                r"^submodule\..*\.path$",
            ])
            .unwrap_or_default();
        let (mut paths, mut urls) = (Vec::new(), Vec::new());
        for line in String::from_utf8_lossy(&listed).lines() {
            let Some((name, path)) = line.split_once(' ').and_then(|(key, path)| {
                let name = key.strip_prefix("submodule.")?.strip_suffix(".path")?;
                Some((name, path))
            }) else {
                continue;
            };
            let copy = source.join("modules").join(name);
            if !copy.join("HEAD").is_file() {
                continue;
            }
            // On the command line, not in a config file: a linked worktree shares its
            // repository's, which stays the user's.
            urls.push(format!("submodule.{name}.url={}", copy.display()));
            paths.push(path.to_owned());
        }
        if paths.is_empty() {
            return Ok(());
        }
        let mut args: Vec<String> = Vec::new();
        for url in urls {
            args.extend(["-c".to_owned(), url]);
        }
        // Only those with a copy: any other would be fetched from its own URL.
        args.extend(
            [
                "-c",
                "protocol.file.allow=always",
                "-c",
                "core.hooksPath=/dev/null",
                "submodule",
                "update",
                "--init",
                "--quiet",
                "--",
            ]
            .map(str::to_owned),
        );
        args.extend(paths);
        self.run(args).map(drop)
    }
}

impl Repo {
    /// The submodules of the worktree at `path` that hold something of their own a removal
    /// would lose: a checked-out commit other than the recorded one, edits, untracked files.
    pub fn changed_submodules(&self, path: &Path) -> Result<Vec<String>> {
        if !path.join(".gitmodules").is_file() {
            return Ok(Vec::new());
        }
        let inside = GitCli::new(path.join(".git"), path.to_owned())?;
        let out = inside.run(["status", "--porcelain=v2", "--ignore-submodules=none"])?;
        Ok(String::from_utf8_lossy(&out)
            .lines()
            .filter_map(|line| {
                // `1 <XY> <sub> <mH> <mI> <mW> <hH> <hI> <path>`; `<sub>` is `S<c><m><u>`
                // for a submodule, each letter set when it holds that kind of change.
                let fields: Vec<&str> = line.splitn(9, ' ').collect();
                let sub = fields.get(2)?;
                (fields[0] == "1" && sub.starts_with('S') && *sub != "S...")
                    .then(|| fields.get(8).map(|p| p.to_string()))
                    .flatten()
            })
            .collect())
    }

    /// Check out the submodules of the new worktree at `path` from the repository's own
    /// copies, as `git worktree add` does not. Best effort: a worktree without them is what
    /// git itself makes, and the session is still whole.
    pub(super) fn check_out_submodules_in(&self, path: &Path) {
        let checked = GitCli::new(path.join(".git"), path.to_owned())
            .and_then(|git| git.check_out_submodules(self.common_dir()));
        if let Err(e) = checked {
            tracing::warn!(worktree = %path.display(), error = %e, "could not check out the submodules");
        }
    }
}

impl Repo {
    /// Why the submodule checked out at `path` in this worktree cannot be moved to `commit`:
    /// it holds edits or untracked files of its own, or lacks the commit. `None` when it can
    /// be, or when nothing is checked out there (git leaves such a one as it is).
    pub fn submodule_move_refused(&self, path: &str, commit: ObjectId) -> Result<Option<String>> {
        let Some(inside) = self.submodule_git(path)? else {
            return Ok(None);
        };
        let status = inside.run(["status", "--porcelain", "--untracked-files=normal"])?;
        if !status.is_empty() {
            return Ok(Some(format!(
                "submodule {path} holds changes of its own: commit or stash them there first"
            )));
        }
        let wanted = format!("{commit}^{{commit}}");
        if inside.run(["cat-file", "-e", wanted.as_str()]).is_err() {
            return Ok(Some(format!(
                "submodule {path} does not have commit {}: fetch it there first",
                commit.to_hex_with_len(10)
            )));
        }
        Ok(None)
    }

    /// Check out `commit`, detached, in the submodule checked out at `path` in this
    /// worktree, as `git submodule update` does; nothing when none is checked out there.
    pub fn move_submodule(&self, path: &str, commit: ObjectId) -> Result<()> {
        match self.submodule_git(path)? {
            Some(inside) => inside
                .run(["checkout", "-q", "--detach", commit.to_string().as_str()])
                .map(drop),
            None => Ok(()),
        }
    }

    /// git bound to the submodule checked out at `path`, if one is.
    fn submodule_git(&self, path: &str) -> Result<Option<GitCli>> {
        let dir = self.workdir().join(path);
        if self.beyond_symlink(path) || !dir.join(".git").exists() {
            return Ok(None);
        }
        Ok(Some(GitCli::new(dir.join(".git"), dir)?))
    }
}

//! Sparse indexes (`index.sparse`, as Scalar and `sparse-checkout --sparse-index` set): an
//! index that holds whole directories outside the sparse cone as single entries. gix cannot
//! compare such an index with a tree, so git-bmad keeps them out of the worktrees it reads
//! closely (a session's worktree gets a full index, its sparse checkout unchanged), and asks
//! git itself for the status of a worktree whose index is sparse (the main one).

use std::path::Path;

use super::cli::GitCli;
use super::error::{Error, Result};
use super::Repo;

/// Which untracked files a status counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Untracked {
    /// None.
    No,
    /// Each untracked directory once.
    Collapsed,
    /// Every untracked file.
    All,
}

impl Repo {
    /// Whether this worktree's index is sparse.
    pub(super) fn index_is_sparse(&self) -> Result<bool> {
        let index = self
            .gix()
            .index_or_empty()
            .map_err(|e| Error::gix("could not read the index", e))?;
        Ok(index.is_sparse())
    }

    /// The paths that differ between HEAD, the index and the worktree, and whether the index
    /// differs from HEAD, as `git status` sees them (it reads a sparse index).
    pub(super) fn status_by_git(&self, untracked: Untracked) -> Result<(Vec<String>, bool)> {
        let mode = match untracked {
            Untracked::No => "--untracked-files=no",
            Untracked::Collapsed => "--untracked-files=normal",
            Untracked::All => "--untracked-files=all",
        };
        let out = self
            .git()?
            .run(["status", "--porcelain=v2", "-z", "--no-renames", mode])?;
        Ok(parse_status(&out))
    }

    /// Give the new worktree at `path` a full index when git gave it a sparse one: its
    /// own `index.sparse=false` (in its worktree configuration, which the repository's
    /// sparse checkout already turned on), then the index rewritten. Its sparse checkout,
    /// and every other worktree, stay as they are. Best effort: git-bmad says what fails
    /// when it reads the index.
    pub(super) fn unsparse_index_in(&self, path: &Path) {
        let result = GitCli::new(path.join(".git"), path.to_owned()).and_then(|git| {
            let sparse = git
                .run(["config", "--get", "--type=bool", "index.sparse"])
                .map(|out| String::from_utf8_lossy(&out).trim() == "true")
                .unwrap_or(false);
            if !sparse {
                return Ok(());
            }
            git.run(["config", "--worktree", "index.sparse", "false"])?;
            git.run(["sparse-checkout", "reapply"]).map(drop)
        });
        if let Err(e) = result {
            tracing::warn!(worktree = %path.display(), error = %e, "could not give the worktree a full index");
        }
    }
}

/// The paths of `git status --porcelain=v2 -z` output, and whether any is staged (or in
/// conflict).
fn parse_status(out: &[u8]) -> (Vec<String>, bool) {
    let text = String::from_utf8_lossy(out);
    let mut paths = Vec::new();
    let mut staged = false;
    for record in text.split('\0').filter(|r| !r.is_empty()) {
        let (kind, rest) = record.split_at(1);
        let fields = |n: usize| rest.trim_start().splitn(n, ' ').collect::<Vec<&str>>();
        match kind {
            // `1 XY sub mH mI mW hH hI path`
            "1" => {
                let f = fields(8);
                if let (Some(xy), Some(path)) = (f.first(), f.get(7)) {
                    staged |= !xy.starts_with('.');
                    paths.push((*path).to_owned());
                }
            }
            // `u XY sub m1 m2 m3 mW h1 h2 h3 path`
            "u" => {
                let f = fields(10);
                if let Some(path) = f.get(9) {
                    staged = true;
                    paths.push((*path).to_owned());
                }
            }
            "?" => paths.push(rest.trim_start().to_owned()),
            _ => {}
        }
    }
    (paths, staged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_status_records_are_read_into_paths_and_whether_anything_is_staged() {
        let out = b"1 .M N... 100644 100644 100644 aaa aaa c/y\x001 A. N... 000000 100644 100644 000 bbb c/new file\x00? c/untracked\x00";
        let (paths, staged) = parse_status(out);
        assert_eq!(paths, ["c/y", "c/new file", "c/untracked"]);
        assert!(staged);
        let (paths, staged) = parse_status(b"1 .M N... 100644 100644 100644 aaa aaa top\x00");
        assert_eq!(paths, ["top"]);
        assert!(!staged);
        let conflict = b"u UU N... 100644 100644 100644 100644 a b c both\x00";
        assert_eq!(parse_status(conflict), (vec!["both".to_owned()], true));
    }
}

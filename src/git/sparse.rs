//! Sparse indexes (`index.sparse`, as Scalar and `sparse-checkout --sparse-index` set): an
//! index that holds whole directories outside the sparse cone as single entries. gix cannot
//! compare such an index with a tree, so git-bmad keeps them out of the worktrees it reads
//! closely (a session's worktree gets a full index, its sparse checkout unchanged), and asks
//! git itself for the status of a worktree whose index is sparse (the main one).

use std::path::Path;

use gix::bstr::BString;

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
    /// differs from HEAD, as `git status` sees them (it reads a sparse index, and converts
    /// every file as it stores it).
    pub(super) fn status_by_git(&self, untracked: Untracked) -> Result<(Vec<BString>, bool)> {
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

/// The paths of `git status --porcelain=v2 -z` output, as bytes (a name need not be UTF-8),
/// and whether any is staged (or in conflict).
fn parse_status(out: &[u8]) -> (Vec<BString>, bool) {
    let mut paths = Vec::new();
    let mut staged = false;
    for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        // How many fields come before the path, which holds what spaces it has.
        let before_path = match record[0] {
            // `1 XY sub mH mI mW hH hI path`
            b'1' => 8,
            // `u XY sub m1 m2 m3 mW h1 h2 h3 path`
            b'u' => 10,
            // `? path`
            b'?' => 1,
            _ => continue,
        };
        let mut parts = record.splitn(before_path + 1, |b| *b == b' ');
        let head: Vec<&[u8]> = parts.by_ref().take(before_path).collect();
        let Some(path) = parts.next() else {
            continue;
        };
        // A conflict, or an `X` of `XY` that is not `.`: the index differs from HEAD.
        staged |= record[0] == b'u'
            || (record[0] == b'1' && head.get(1).is_some_and(|xy| !xy.starts_with(b".")));
        paths.push(BString::from(path));
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
        assert_eq!(parse_status(conflict), (vec![BString::from("both")], true));
        let not_utf8 = b"? caf\xe9 au lait\x00";
        assert_eq!(
            parse_status(not_utf8),
            (vec![BString::from(&b"caf\xe9 au lait"[..])], false)
        );
    }
}

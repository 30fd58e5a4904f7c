//! Merging a branch into a worktree's branch, with conflicts a caller knows how to merge
//! (BMAD's bookkeeping) resolved and any other undone.

use super::error::{Error, Result};
use super::repo::Repo;

impl Repo {
    /// Merge another branch (short name) into this worktree's branch. A conflicted path
    /// `resolve` can merge (given its path and the base, our and their texts) takes its text;
    /// any other conflict aborts the merge and is an error naming the paths, so the worktree
    /// is left as it was.
    pub fn merge_branch(
        &self,
        short_branch: &str,
        message: &str,
        resolve: &dyn Fn(&str, &str, &str, &str) -> Option<String>,
    ) -> Result<()> {
        let git = self.git()?;
        let Err(failed) = git.run(["merge", "--no-ff", "--quiet", "-m", message, short_branch])
        else {
            return Ok(());
        };
        let abort = |error: Error| {
            let _ = git.run(["merge", "--abort"]);
            Err(error)
        };
        let conflicted: Vec<String> =
            match git.run(["diff", "--name-only", "-z", "--diff-filter=U"]) {
                Ok(out) => out
                    .split(|b| *b == 0)
                    .filter(|p| !p.is_empty())
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect(),
                Err(_) => Vec::new(),
            };
        if conflicted.is_empty() {
            return abort(failed);
        }
        let mut unresolved = Vec::new();
        for path in &conflicted {
            let stage = |n: u8| {
                git.run(["show", &format!(":{n}:{path}")])
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
            };
            let merged = match (stage(1), stage(2), stage(3)) {
                (Some(base), Some(ours), Some(theirs)) => resolve(path, &base, &ours, &theirs),
                _ => None,
            };
            let Some(merged) = merged else {
                unresolved.push(path.clone());
                continue;
            };
            let file = self.workdir().join(path);
            if let Err(e) = std::fs::write(&file, merged) {
                return abort(Error::io("could not write", file, e));
            }
            if let Err(e) = git.run(["add", "--", path]) {
                return abort(e);
            }
        }
        if !unresolved.is_empty() {
            return abort(Error::MergeConflict {
                branch: short_branch.to_owned(),
                paths: unresolved,
                worktree: self.workdir().to_owned(),
            });
        }
        match git.run(["commit", "--no-edit", "--quiet"]) {
            Ok(_) => Ok(()),
            Err(e) => abort(e),
        }
    }
}

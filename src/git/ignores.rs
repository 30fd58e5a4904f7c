//! Ignore rules: which paths `.gitignore`, `info/exclude` and `core.excludesFile` leave out,
//! as the worktree has them or as a tree has them.

use std::collections::BTreeSet;

use gix::bstr::{BStr, BString, ByteSlice};

use super::error::{Error, Result};
use super::repo::Repo;
use super::ObjectId;

impl Repo {
    /// Those of `paths` (files, relative to the worktree root) that the ignore rules of
    /// `tree` exclude: its `.gitignore` files as the tree has them (not as they are on
    /// disk), plus `info/exclude` and `core.excludesFile`. A file inside an excluded
    /// directory is excluded, as git has it.
    pub fn ignored_under(&self, tree: ObjectId, paths: &[String]) -> Result<Vec<String>> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let repo = self.gix();
        let index = repo
            .index_from_tree(&tree)
            .map_err(|e| Error::gix(format!("could not read tree {tree} as an index"), e))?;
        let stack = repo
            .excludes(
                &index,
                None,
                gix::worktree::stack::state::ignore::Source::IdMapping,
            )
            .map_err(|e| {
                Error::gix(format!("could not load the ignore rules of tree {tree}"), e)
            })?;
        excluded(stack, paths)
    }
}

/// Those of `paths` (files) that `stack`'s ignore rules exclude.
fn excluded(stack: gix::AttributeStack<'_>, paths: &[String]) -> Result<Vec<String>> {
    let mut ignores = Ignores {
        stack,
        excluded_dirs: BTreeSet::new(),
    };
    let mut ignored = Vec::new();
    for path in paths {
        if ignores.is_ignored(path.as_str().into(), false)? {
            ignored.push(path.clone());
        }
    }
    Ok(ignored)
}

/// A set of ignore rules, remembering the directories they exclude.
pub(super) struct Ignores<'repo> {
    stack: gix::AttributeStack<'repo>,
    excluded_dirs: BTreeSet<BString>,
}

impl<'repo> Ignores<'repo> {
    /// The rules on disk (as `git status` reads them).
    pub fn of_worktree(repo: &'repo gix::Repository, index: &gix::index::State) -> Result<Self> {
        let stack = repo
            .excludes(
                index,
                None,
                gix::worktree::stack::state::ignore::Source::WorktreeThenIdMappingIfNotSkipped,
            )
            .map_err(|e| Error::gix("could not load the ignore rules of the worktree", e))?;
        Ok(Ignores {
            stack,
            excluded_dirs: BTreeSet::new(),
        })
    }

    /// Whether the rules exclude `path`; anything inside an excluded directory is excluded,
    /// as git has it.
    pub fn is_ignored(&mut self, path: &BStr, is_dir: bool) -> Result<bool> {
        use gix::index::entry::Mode;
        for end in path.find_iter("/") {
            let dir = path[..end].as_bstr();
            if self.excluded_dirs.contains(dir) || self.check(dir, Mode::DIR)? {
                self.excluded_dirs.insert(dir.to_owned());
                return Ok(true);
            }
        }
        self.check(path, if is_dir { Mode::DIR } else { Mode::FILE })
    }

    fn check(&mut self, path: &BStr, mode: gix::index::entry::Mode) -> Result<bool> {
        Ok(self
            .stack
            .at_entry(path, Some(mode))
            .map_err(|e| {
                Error::gix(
                    format!("could not check {path} against the ignore rules"),
                    e,
                )
            })?
            .is_excluded())
    }
}

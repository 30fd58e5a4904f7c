//! Files stored by git itself, where gix would not store what `git add` stores:
//! - a file git converts from a working-tree encoding (`working-tree-encoding=UTF-16LE-BOM`,
//!   …): gix converts through the web's encodings, which git's iconv names and maps
//!   otherwise (ISO-8859-1 is read as windows-1252, `UTF-16` as little-endian whatever its
//!   byte-order mark; `UTF-16LE-BOM` and UTF-32 are unknown);
//! - a file gix could not convert at all (a required filter whose program cannot start):
//!   git stores it, or says in its own words why it will not.

use std::path::Path;

use gix::bstr::BStr;

use crate::git::cli::HashPaths;
use crate::git::error::{Error, Result};
use crate::git::repo::Repo;
use crate::git::ObjectId;

/// Which files git converts from a working-tree encoding, by their attributes; and a scratch
/// object folder, made at the first file git stores, where git puts what it made of it
/// before the vet has seen it (the repository gets it only once vetted).
pub(super) struct ByGit<'r> {
    repo: &'r Repo,
    attributes: gix::AttributeStack<'r>,
    found: gix::attrs::search::Outcome,
    /// One git for every file stored into the scratch folder (a process a file took 10 s
    /// for 2,000 changed files). Declared before the folder: it ends before that goes.
    git: Option<HashPaths>,
    scratch: Option<tempfile::TempDir>,
}

impl<'r> ByGit<'r> {
    /// The attributes of `repo`'s worktree, and for a file missing there of `index`.
    pub(super) fn of(repo: &'r Repo, index: &gix::index::State) -> Result<Self> {
        let attributes = repo
            .gix()
            .attributes_only(
                index,
                gix::worktree::stack::state::attributes::Source::WorktreeThenIdMapping,
            )
            .map_err(|e| Error::gix("could not read the attributes", e))?;
        let found = attributes.selected_attribute_matches(["working-tree-encoding"]);
        Ok(ByGit {
            repo,
            attributes,
            found,
            git: None,
            scratch: None,
        })
    }

    /// Whether git converts `path` from an encoding: its attribute has a value, or is set
    /// (which git refuses, and so then does the snapshot, with git's words).
    pub(super) fn encoded(&mut self, path: &BStr) -> Result<bool> {
        use gix::attrs::StateRef;
        let at = self
            .attributes
            .at_entry(path, None)
            .map_err(|e| Error::gix(format!("could not read the attributes of {path}"), e))?;
        at.matching_attributes(&mut self.found);
        Ok(self
            .found
            .iter_selected()
            .any(|m| matches!(m.assignment.state, StateRef::Value(_) | StateRef::Set)))
    }

    /// The bytes git stores for the worktree file `path`, put in the scratch folder only.
    pub(super) fn bytes(&mut self, path: &BStr) -> Result<Vec<u8>> {
        let repo = self.repo;
        let scratch = match &mut self.scratch {
            Some(scratch) => scratch,
            none => none.insert(repo.scratch_dir("by-git")?),
        };
        let folder = scratch.path();
        // A name `--stdin-paths` would cut at a line's end or unquote (one that starts with
        // a double quote) gets a git of its own.
        let own = path.iter().any(|b| matches!(b, b'\n' | b'\r')) || path.starts_with(b"\"");
        let id = if own {
            repo.store_by_git(path, Some(folder))?
        } else {
            let git = match &mut self.git {
                Some(git) => git,
                none => {
                    let said = tempfile::tempfile_in(folder)
                        .map_err(|e| Error::io("could not make a file in", folder, e))?;
                    none.insert(HashPaths::start(repo.git()?, folder, said)?)
                }
            };
            match git.hash(path) {
                Ok(id) => id,
                Err(e) => {
                    self.git = None;
                    return Err(e.refused_by_git(path));
                }
            }
        };
        let mut bytes = Vec::new();
        gix::odb::loose::Store::at(folder, repo.gix().object_hash())
            .try_find(&id, &mut bytes)
            .map_err(|e| Error::gix(format!("could not read blob {id}"), e))?
            .ok_or_else(|| Error::Corrupt(format!("git stored no blob {id} for {path}")))?;
        Ok(bytes)
    }

    /// The blob git stores for the worktree file `path`, stored in the repository: for a
    /// file too big to hold, which the caller vetted by its head on disk.
    pub(super) fn big_blob(&self, path: &BStr) -> Result<ObjectId> {
        self.repo.store_by_git(path, None)
    }
}

impl Repo {
    /// `git hash-object -w` of the worktree file `path`, which git converts by its
    /// attributes as `git add` does; into the object folder `scratch` when given, else into
    /// the repository.
    fn store_by_git(&self, path: &BStr, scratch: Option<&Path>) -> Result<ObjectId> {
        use std::os::unix::ffi::OsStrExt;
        let rela = Path::new(std::ffi::OsStr::from_bytes(path));
        self.git()?
            .hash_file_into(rela, scratch)
            .map_err(|e| e.refused_by_git(path))
    }
}

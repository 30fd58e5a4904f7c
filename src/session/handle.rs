//! The repository as the layers above sessions hold it: a handle they pass to session
//! operations and nothing more. It has no git operation of its own, so what those layers
//! need of the repository is a session operation, and every git call stays in the layers
//! the contract lets call git (`docs/architecture.md` §2).

use std::path::Path;

use ref_cast::RefCast;

use crate::git::Direct;

/// A repository handle that exposes no git operation.
#[derive(RefCast)]
#[repr(transparent)]
pub struct Repo {
    pub(in crate::session) git: crate::git::Repo,
}

impl Repo {
    /// The repository holding `cwd` (a linked worktree or the main checkout).
    pub fn discover(cwd: &Path) -> super::Result<Repo> {
        Ok(Repo::from(crate::git::Repo::discover(cwd)?))
    }

    /// The handle of a repository the git layer opened.
    pub fn of(git: &crate::git::Repo) -> &Repo {
        Repo::ref_cast(git)
    }

    /// The worktree the handle was opened in.
    pub fn workdir(&self) -> &Path {
        self.git.workdir()
    }

    /// The main worktree (the user's checkout).
    pub fn main_workdir(&self) -> super::Result<std::path::PathBuf> {
        Ok(self.git.main_workdir()?)
    }

    /// The git dir every worktree shares.
    pub fn common_dir(&self) -> &Path {
        self.git.common_dir()
    }

    /// The git repository, for a layer that may call git itself ([`Direct`] says so).
    pub fn git(&self, _: Direct) -> &crate::git::Repo {
        &self.git
    }
}

impl From<crate::git::Repo> for Repo {
    fn from(git: crate::git::Repo) -> Repo {
        Repo { git }
    }
}

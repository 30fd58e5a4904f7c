//! Which walls an agent step, and each command git-bmad runs for one (its checks, the
//! judge's tests), gets: `runners.sandbox` applied once per run, and the walls built from the
//! session's fence, a private home and the tools on `PATH`.
//!
//! The private home holds copies of what the step's CLI needs from the real one (its login
//! and settings, named by its adapter) and a git identity; whatever the step writes there
//! goes with the step. Tools installed under the home or `/tmp` (the directories on `PATH`,
//! the CLI's own package) are shown read-only; nothing else of the home is.

use std::path::Path;

use crate::config::{Config, Network};
use crate::runner::sandbox::{self, Hidden, Mount, Walls};
use crate::session::{self, Repo, View};

pub use crate::runner::sandbox::{Containment, Scratch};

use super::error::{Error, Result};

/// `runners.sandbox` of `config` on this machine: `required` (or the layer it names) that
/// cannot be had here refuses.
pub fn decide(config: &Config) -> Result<Containment> {
    Containment::decide(config.runners.sandbox).map_err(|why| Error::Uncontained { why })
}

/// The walls of an agent step: what is `hidden` hidden, the fence's views of the
/// repository, a private home at `home`, the tools it runs.
pub fn step_walls(
    views: &[View],
    hidden: &Hidden,
    home: &Path,
    program: &Path,
    network: bool,
) -> Walls {
    let mut mounts = sandbox::home_and_tools(home, Some(program), hidden);
    mounts.extend(hidden.mounts());
    mounts.extend(views.iter().map(|v| {
        if v.writable {
            Mount::Writable {
                source: v.source.clone(),
                target: v.target.clone(),
            }
        } else {
            Mount::ReadOnly {
                source: v.source.clone(),
                target: v.target.clone(),
            }
        }
    }));
    Walls { mounts, network }
}

/// Contain a command run in `dir` for a step (its tests), when the run is contained: `dir`
/// writable, the repository (its common dir) readable, what
/// [`crate::policy::hidden_from_steps`] names hidden, a
/// private home.
pub fn command(
    containment: &Containment,
    dir: &Path,
    repo: &Repo,
    network: Network,
) -> Result<Option<Scratch>> {
    let Some(layers) = containment.layers() else {
        return Ok(None);
    };
    let readable = [repo.common_dir().to_owned()];
    sandbox::scratch(
        layers,
        dir,
        &crate::policy::hidden_from_steps(repo),
        &readable,
        session::repository::identity(repo),
        network == Network::Full,
        None,
    )
    .map(Some)
    .map_err(|e| Error::Uncontained {
        why: format!("could not make a private home: {e}"),
    })
}

/// Contain an agent git-bmad runs in `dir` for a step of its own (the acceptance tests
/// written before a story's dev), when the run is contained: `dir` writable, the network
/// its CLI needs, what [`crate::policy::hidden_from_steps`] names hidden, and a private home
/// holding the copies of what `kind`'s CLI reads there (its login).
pub fn agent(
    containment: &Containment,
    dir: &Path,
    repo: &Repo,
    kind: crate::runner::Kind,
    program: &Path,
) -> Result<Option<Scratch>> {
    let Some(layers) = containment.layers() else {
        return Ok(None);
    };
    let why = |e: std::io::Error| Error::Uncontained {
        why: format!("could not make a private home: {e}"),
    };
    let scratch = sandbox::scratch(
        layers,
        dir,
        &crate::policy::hidden_from_steps(repo),
        &[],
        session::repository::identity(repo),
        true,
        Some(program),
    )
    .map_err(why)?;
    private_home(scratch.home(), kind.adapter().home_files(), repo).map_err(why)?;
    Ok(Some(scratch))
}

/// Fill the private home at `home` with copies of the user's `files` and the repository's
/// git identity.
pub fn private_home(home: &Path, files: &[&str], repo: &Repo) -> std::io::Result<()> {
    sandbox::private_home(
        home,
        crate::env::Var::Home
            .os()
            .map(std::path::PathBuf::from)
            .as_deref(),
        files,
        session::repository::identity(repo),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_walls_show_the_fence_and_hide_the_rest() {
        let views = [
            View {
                source: "/r/.git/bmad/fence/s/copies/refs/heads".into(),
                target: "/r/.git/refs/heads".into(),
                writable: true,
            },
            View {
                source: "/r/.git".into(),
                target: "/r/.git".into(),
                writable: false,
            },
        ];
        let walls = step_walls(
            &views,
            &Hidden::default(),
            Path::new("/r/.git/bmad/fence/s/home"),
            Path::new("/usr/bin/claude"),
            true,
        );
        assert!(walls.network);
        assert!(walls.mounts.contains(&Mount::Hide("/tmp".into())));
        assert!(walls.mounts.contains(&Mount::Writable {
            source: "/r/.git/bmad/fence/s/copies/refs/heads".into(),
            target: "/r/.git/refs/heads".into()
        }));
        assert!(walls.mounts.contains(&Mount::read_only("/r/.git")));
        // A program outside the hidden places needs nothing shown again.
        assert!(!walls.mounts.contains(&Mount::read_only("/usr/bin")));
    }
}

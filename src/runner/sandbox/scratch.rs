//! A command's walls with a private home of its own (a test run, a hook an agent could have
//! written, `git bmad contain`), and the worktree link they put back when it is done.

use std::path::{Path, PathBuf};

use super::{command_walls, private_home, Hidden, Layers};

/// A command's walls ready to run, with the temporary folder of its private home, removed
/// when this is dropped.
pub struct Scratch {
    /// The walls and their layers.
    pub contained: super::Contained,
    home: tempfile::TempDir,
    /// `dir`'s `.git` link and what it said: where no mount holds it read-only (Landlock
    /// alone), a command could rewrite it, so it is put back when the command is done.
    link: Option<(PathBuf, Vec<u8>)>,
}

impl Scratch {
    /// Its private home.
    pub fn home(&self) -> &Path {
        self.home.path()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let Some((path, before)) = &self.link else {
            return;
        };
        let plain = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
        if plain && std::fs::read(path).is_ok_and(|now| &now == before) {
            return;
        }
        tracing::warn!(
            "a contained command changed {}; it is put back",
            path.display()
        );
        let removed = match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
            Ok(_) => std::fs::remove_file(path),
            Err(_) => Ok(()),
        };
        if let Err(e) = removed.and_then(|()| crate::fs::write_atomically(path, before, None)) {
            tracing::error!("could not put back {}: {e}", path.display());
        }
    }
}

/// The walls of a command run in `dir` ([`command_walls`]) with a fresh private home that
/// holds only a git `identity`; `program`'s install shown when it lies where they hide.
pub fn scratch(
    layers: &Layers,
    dir: &Path,
    hidden: &Hidden,
    readable: &[PathBuf],
    identity: [Option<String>; 2],
    network: bool,
    program: Option<&Path>,
) -> std::io::Result<Scratch> {
    let home = tempfile::Builder::new()
        .prefix("git-bmad-home-")
        .tempdir()?;
    private_home(home.path(), None, &[], identity)?;
    Ok(Scratch {
        contained: super::Contained {
            layers: layers.clone(),
            walls: command_walls(dir, hidden, readable, home.path(), network, program),
        },
        home,
        link: std::fs::read(dir.join(".git"))
            .ok()
            .map(|content| (dir.join(".git"), content)),
    })
}

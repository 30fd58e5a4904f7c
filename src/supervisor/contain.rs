//! Which walls an agent step, and each command git-bmad runs for one (its checks, the
//! judge's tests), gets: `runners.sandbox` applied once per run, and the walls built from the
//! session's fence, a private home and the tools on `PATH`.
//!
//! The private home holds copies of what the step's CLI needs from the real one (its login
//! and settings, named by its adapter) and a git identity; whatever the step writes there
//! goes with the step. Tools installed under the home or `/tmp` (the directories on `PATH`,
//! the CLI's own package) are shown read-only; nothing else of the home is.

use std::path::{Path, PathBuf};

use crate::config::{Config, Network, Sandbox};
use crate::runner::sandbox::{self, Mount, Walls};
use crate::runner::Contained;
use crate::session::{Repo, View};

use super::error::{Error, Result};

/// Whether this run's steps are contained.
#[derive(Clone, Debug)]
pub enum Containment {
    /// Contained by bubblewrap at this path.
    On(PathBuf),
    /// Not contained, for this reason (journaled with every step).
    Off(String),
}

impl Containment {
    /// `runners.sandbox` on this machine: `required` without a working bubblewrap refuses.
    pub fn decide(config: &Config) -> Result<Containment> {
        match config.runners.sandbox {
            Sandbox::Off => Ok(Containment::Off("runners.sandbox is off".into())),
            Sandbox::Auto => Ok(match sandbox::available() {
                Ok(bwrap) => Containment::On(bwrap),
                Err(why) => Containment::Off(why),
            }),
            Sandbox::Required => sandbox::available()
                .map(Containment::On)
                .map_err(|why| Error::Uncontained { why }),
        }
    }

    /// Bubblewrap, when on.
    pub fn bwrap(&self) -> Option<&Path> {
        match self {
            Containment::On(bwrap) => Some(bwrap),
            Containment::Off(_) => None,
        }
    }
}

/// The walls of an agent step: the fence's views of the repository, a private home at
/// `home`, the tools it runs.
pub fn step_walls(views: &[View], home: &Path, program: &Path, network: bool) -> Walls {
    let mut mounts = places_with_home(home);
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
    mounts.extend(tools(Some(program)));
    Walls { mounts, network }
}

/// The walls of a command run in `dir` for a step (its tests): `dir` writable, the
/// repository readable, a private home at `home`.
pub fn command_walls(dir: &Path, repo: &Repo, home: &Path, network: Network) -> Walls {
    let mut mounts = places_with_home(home);
    mounts.push(Mount::read_only(repo.common_dir()));
    if let Ok(main) = repo.main_workdir() {
        mounts.push(Mount::read_only(main));
    }
    mounts.push(Mount::writable(dir));
    if dir.join(".git").exists() {
        mounts.push(Mount::read_only(dir.join(".git")));
    }
    mounts.extend(tools(None));
    Walls {
        mounts,
        network: network == Network::Full,
    }
}

/// A command's walls ready to run, its private home in a temporary folder kept with it.
pub struct Scratch {
    /// The walls and bubblewrap.
    pub contained: Contained,
    _home: tempfile::TempDir,
}

/// Contain a command run in `dir`, when the run is contained.
pub fn command(
    containment: &Containment,
    dir: &Path,
    repo: &Repo,
    network: Network,
) -> Result<Option<Scratch>> {
    let Some(bwrap) = containment.bwrap() else {
        return Ok(None);
    };
    let home = tempfile::Builder::new()
        .prefix("git-bmad-home-")
        .tempdir()
        .and_then(|home| private_home(home.path(), &[], repo).map(|()| home))
        .map_err(|e| Error::Uncontained {
            why: format!("could not make a private home: {e}"),
        })?;
    Ok(Some(Scratch {
        contained: Contained {
            bwrap: bwrap.to_owned(),
            walls: command_walls(dir, repo, home.path(), network),
        },
        _home: home,
    }))
}

fn places_with_home(home: &Path) -> Vec<Mount> {
    let real_home = std::env::var_os("HOME").map(PathBuf::from);
    let mut mounts = sandbox::private_places(real_home.as_deref());
    if let Some(real) = real_home.filter(|h| h.is_absolute() && *h != Path::new("/")) {
        mounts.push(Mount::Writable {
            source: home.to_owned(),
            target: real,
        });
    }
    mounts
}

/// Fill the private home at `home`: copies of the user's `files` (relative to the real
/// home) that exist, and a git configuration with the repository's identity alone.
pub fn private_home(home: &Path, files: &[&str], repo: &Repo) -> std::io::Result<()> {
    if let Some(real) = std::env::var_os("HOME").map(PathBuf::from) {
        for file in files {
            let from = real.join(file);
            if from.is_file() {
                let to = home.join(file);
                if let Some(dir) = to.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                std::fs::copy(&from, &to)?;
            }
        }
    }
    let quoted = |v: String| {
        let clean: String = v.chars().filter(|c| !c.is_control()).collect();
        format!("\"{}\"", clean.replace('\\', "\\\\").replace('"', "\\\""))
    };
    let mut config = String::from("[user]\n");
    for key in ["name", "email"] {
        if let Some(value) = repo.config_string(&format!("user.{key}")) {
            config.push_str(&format!("\t{key} = {}\n", quoted(value)));
        }
    }
    std::fs::write(home.join(".gitconfig"), config)
}

/// Tools installed where the walls hide (under the home or `/tmp`), shown read-only: each
/// directory on `PATH` there, and `program`'s own folder (for a Node CLI, the
/// `node_modules` it lives in).
fn tools(program: Option<&Path>) -> Vec<Mount> {
    let hidden: Vec<PathBuf> =
        sandbox::private_places(std::env::var_os("HOME").map(PathBuf::from).as_deref())
            .into_iter()
            .filter_map(|m| match m {
                Mount::Hide(path) => Some(path),
                _ => None,
            })
            .collect();
    let inside_hidden = |p: &Path| hidden.iter().any(|h| p.starts_with(h) && p != h);
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    if let Some(program) = program {
        dirs.extend(program.parent().map(Path::to_owned));
        if let Ok(real) = std::fs::canonicalize(program) {
            let package = real
                .ancestors()
                .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
                .last()
                .map(Path::to_owned)
                .or_else(|| real.parent().map(Path::to_owned));
            dirs.extend(package);
        }
    }
    let mut mounts: Vec<Mount> = Vec::new();
    for dir in dirs {
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        let mount = Mount::read_only(&dir);
        if dir.is_absolute() && dir.is_dir() && inside_hidden(&dir) && !mounts.contains(&mount) {
            mounts.push(mount);
        }
    }
    mounts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_walls_show_the_fence_and_hide_the_rest() {
        let views = [
            View {
                source: "/r/.git/bmad/fence/s/heads".into(),
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
            Path::new("/r/.git/bmad/fence/s/home"),
            Path::new("/usr/bin/claude"),
            true,
        );
        assert!(walls.network);
        assert!(walls.mounts.contains(&Mount::Hide("/tmp".into())));
        assert!(walls.mounts.contains(&Mount::Writable {
            source: "/r/.git/bmad/fence/s/heads".into(),
            target: "/r/.git/refs/heads".into()
        }));
        assert!(walls.mounts.contains(&Mount::read_only("/r/.git")));
        // A program outside the hidden places needs nothing shown again.
        assert!(!walls.mounts.contains(&Mount::read_only("/usr/bin")));
    }
}

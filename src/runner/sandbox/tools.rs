//! The tools a contained process is shown again read-only: toolchains kept in a home, the
//! folders on `PATH` that lie where the walls hide, and its own program's folder.

use std::path::{Path, PathBuf};

use super::{private_places, Mount};

/// Where toolchains live in a home (rustup, cargo, nvm, pyenv, go, maven's and gradle's
/// caches): shown read-only when there, so an agent's `cargo test` or `npm test` works in
/// its walls; the credentials some keep there are blanked.
const TOOLCHAINS: &[&str] = &[
    ".rustup",
    ".cargo",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".pyenv",
    ".rbenv",
    ".asdf",
    ".sdkman",
    ".local/bin",
    ".local/lib",
    "go",
    ".m2/repository",
    ".gradle/caches",
    ".gradle/wrapper",
];
/// Credentials inside [`TOOLCHAINS`] (crates.io's token).
const TOOLCHAIN_CREDENTIALS: &[&str] = &[".cargo/credentials", ".cargo/credentials.toml"];

/// The toolchains of the home `real`, read-only, their credentials blanked.
pub(super) fn toolchains(real: &Path) -> Vec<Mount> {
    let mut mounts: Vec<Mount> = TOOLCHAINS
        .iter()
        .map(|t| real.join(t))
        .filter(|p| p.is_dir())
        .map(Mount::read_only)
        .collect();
    mounts.extend(
        TOOLCHAIN_CREDENTIALS
            .iter()
            .map(|c| real.join(c))
            .filter(|p| p.is_file())
            .map(Mount::Blank),
    );
    mounts
}

/// Tools installed where the walls hide (under the home or `/tmp`), shown read-only: each
/// directory on `PATH` there, and `program`'s own folder (for a Node CLI, the
/// `node_modules` it lives in).
pub(super) fn tools(program: Option<&Path>) -> Vec<Mount> {
    let hidden: Vec<PathBuf> =
        private_places(std::env::var_os("HOME").map(PathBuf::from).as_deref())
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
    use super::super::{command_line, Walls};
    use super::*;

    #[test]
    fn toolchains_in_the_home_are_shown_and_their_credentials_are_not() {
        let real = tempfile::tempdir().unwrap();
        for dir in [".rustup/toolchains", ".cargo/bin", ".ssh", ".config/gh"] {
            std::fs::create_dir_all(real.path().join(dir)).unwrap();
        }
        std::fs::write(real.path().join(".cargo/credentials.toml"), "token").unwrap();
        let mounts = toolchains(real.path());
        assert_eq!(
            mounts,
            [
                Mount::read_only(real.path().join(".rustup")),
                Mount::read_only(real.path().join(".cargo")),
                Mount::Blank(real.path().join(".cargo/credentials.toml")),
            ]
        );
        let args = command_line(
            &Walls {
                mounts,
                network: false,
            },
            Path::new("/"),
            Path::new("/bin/true"),
            &[],
        );
        let blank = args.windows(3).any(|w| {
            w[0] == "--ro-bind" && w[1] == "/dev/null" && w[2].ends_with(".cargo/credentials.toml")
        });
        assert!(blank, "{args:?}");
    }
}

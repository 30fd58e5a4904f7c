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
/// Where a home keeps credentials: a folder that holds one of these, or lies in one, is
/// never shown for a tool, whatever a wrapper or `PATH` names there.
const CREDENTIAL_PLACES: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config",
    ".docker",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".password-store",
    ".local/share/keyrings",
];
/// What a GitHub Actions runner keeps in its install folder that lets it take jobs, and so
/// every job's secrets: its registration (`config.sh` writes these).
const RUNNER_CREDENTIALS: &[&str] = &[".credentials", ".credentials_rsaparams", ".env"];

/// The credentials of the CI runner this process runs under, when it runs under one: the
/// files of [`RUNNER_CREDENTIALS`] in the install folder of the `Runner.Worker` (or
/// `Runner.Listener`) among its ancestors. A self-hosted runner's folder lies wherever its
/// owner unpacked it, outside `HOME` and `/tmp`, where the walls would show it.
pub fn ci_runner_credentials() -> Vec<PathBuf> {
    let mut pid = std::process::id();
    for _ in 0..64 {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        let runner = exe.as_ref().filter(|exe| {
            exe.file_name()
                .is_some_and(|n| n == "Runner.Worker" || n == "Runner.Listener")
        });
        // `<root>/bin/Runner.Worker`.
        if let Some(root) = runner.and_then(|exe| exe.parent()?.parent()) {
            return RUNNER_CREDENTIALS
                .iter()
                .map(|name| root.join(name))
                .filter(|path| path.exists())
                .collect();
        }
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let parent = status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .and_then(|v| v.trim().parse::<u32>().ok());
        match parent {
            Some(parent) if parent > 1 => pid = parent,
            _ => break,
        }
    }
    Vec::new()
}

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

/// Tools installed where the walls hide (under the home or `/tmp`, not in the user's `main`
/// worktree), shown read-only: each directory on `PATH` there, and `program`'s own folder (for a Node CLI, the
/// `node_modules` it lives in).
pub(super) fn tools(program: Option<&Path>, main: Option<&Path>) -> Vec<Mount> {
    let hidden: Vec<PathBuf> = private_places(crate::env::Var::Home.path().as_deref())
        .into_iter()
        .filter_map(|m| match m {
            Mount::Hide(path) => Some(path),
            _ => None,
        })
        .collect();
    let home = crate::env::Var::Home.path();
    let near_credentials = |p: &Path| {
        home.as_deref().is_some_and(|home| {
            CREDENTIAL_PLACES
                .iter()
                .map(|c| home.join(c))
                .any(|c| c.starts_with(p) || p.starts_with(&c))
        })
    };
    let inside_hidden = |p: &Path| {
        hidden.iter().any(|h| p.starts_with(h) && p != h)
            && !main.is_some_and(|m| p.starts_with(m))
            && !near_credentials(p)
    };
    let dirs: Vec<PathBuf> = crate::env::Var::Path
        .os()
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    let mut dirs: Vec<PathBuf> = dirs
        .into_iter()
        .map(|d| std::fs::canonicalize(&d).unwrap_or(d))
        .collect();
    // A program, a wrapper's target, a shim's: the folder as named (the links on the way
    // are followed inside) and, for what it leads to, its install.
    if let Some(program) = program {
        for need in std::iter::once(program.to_owned()).chain(needs(program)) {
            dirs.extend(need.parent().map(Path::to_owned));
            dirs.extend(std::fs::canonicalize(&need).ok().and_then(|n| package(&n)));
        }
    }
    // git-bmad itself: the hooks it installed name it, links followed.
    dirs.extend(super::own_executable().and_then(|exe| exe.parent().map(Path::to_owned)));
    let mut mounts: Vec<Mount> = Vec::new();
    for dir in dirs {
        let mount = Mount::read_only(&dir);
        if dir.is_absolute() && dir.is_dir() && inside_hidden(&dir) && !mounts.contains(&mount) {
            mounts.push(mount);
        }
    }
    mounts
}

/// The folder that holds an install: for a Node CLI, the outermost `node_modules` it lives
/// in; else its own folder.
fn package(real: &Path) -> Option<PathBuf> {
    real.ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .last()
        .map(Path::to_owned)
        .or_else(|| real.parent().map(Path::to_owned))
}

/// What `program` needs to run, links followed: its own file, the interpreter its first line
/// names (`#!/usr/bin/env node` names `node` on `PATH`), and what a wrapper script or a shim
/// names that exists (`exec "$HOME/.claude/local/claude" "$@"`, asdf's and mise's
/// installs), `$HOME` and `~` read as the home.
pub fn needs(program: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for path in named(program) {
        let real = std::fs::canonicalize(&path).ok();
        for p in std::iter::once(path).chain(real) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    // Only what is run: a file a wrapper reads (a token's, say) is not shown for it.
    out.retain(|p| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    });
    out
}

/// Every path `program`'s script names that exists, as named, see [`needs`].
fn named(program: &Path) -> Vec<PathBuf> {
    let Ok(real) = std::fs::canonicalize(program) else {
        return Vec::new();
    };
    let mut out = vec![program.to_owned()];
    // A script is small; a binary is not read.
    let text = match std::fs::metadata(&real) {
        Ok(m) if m.len() <= 64 << 10 => std::fs::read(&real).unwrap_or_default(),
        _ => Vec::new(),
    };
    if !text.starts_with(b"#!") {
        return out;
    }
    let text = String::from_utf8_lossy(&text);
    let home = crate::env::Var::Home.path();
    let mut lines = text.lines();
    if let Some(first) = lines.next() {
        let mut words = first[2..].split_whitespace();
        match (words.next(), words.next()) {
            (Some(env), Some(name)) if env.ends_with("/env") => {
                let name = if name == "-S" {
                    words.next().unwrap_or("")
                } else {
                    name
                };
                out.extend(which::which(name).ok());
            }
            (Some(interpreter), _) => out.push(PathBuf::from(interpreter)),
            _ => {}
        }
    }
    for word in lines
        .flat_map(|l| l.split(|c: char| c.is_whitespace() || "\"'`;=():".contains(c)))
        .filter(|w| !w.is_empty())
    {
        let path = match (
            word.strip_prefix("$HOME/"),
            word.strip_prefix("${HOME}/"),
            word.strip_prefix("~/"),
        ) {
            (Some(rest), _, _) | (_, Some(rest), _) | (_, _, Some(rest)) => match &home {
                Some(home) => home.join(rest),
                None => continue,
            },
            _ if word.starts_with('/') => PathBuf::from(word),
            _ => continue,
        };
        if path.exists() && !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{command_line, Walls};
    use super::*;

    #[test]
    fn a_wrapper_and_its_interpreter_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(dir.path()).unwrap();
        let real = dir.join("local/node_modules/.bin/claude");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "binary").unwrap();
        let wrapper = dir.join("claude");
        std::fs::write(
            &wrapper,
            format!("#!/bin/sh\nexec \"{}\" \"$@\"\n", real.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        for file in [&real, &wrapper] {
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        // A file the wrapper reads but does not run is not what it needs to run.
        let token = dir.join("token");
        std::fs::write(&token, "secret").unwrap();
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nKEY=$(cat {})\nexec \"{}\" \"$@\"\n",
                token.display(),
                real.display()
            ),
        )
        .unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&wrapper, &link).unwrap();
        let needed = needs(&link);
        assert_eq!(needed[..2], [link.clone(), wrapper.clone()]);
        assert!(needed.contains(&std::fs::canonicalize("/bin/sh").unwrap()));
        assert!(needed.contains(&real));
        assert!(!needed.contains(&token));
        assert_eq!(package(&real), Some(dir.join("local/node_modules")));
    }

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

//! Containment: a process run inside bubblewrap (`bwrap`), in its own mount, pid, ipc and uts
//! namespaces, so that what it may write, read and signal is what its [`Walls`] say and
//! nothing it does can widen them (no hook, no config, no flag of git's lifts a mount).
//!
//! The view: the whole system read-only; `/tmp`, the user's home and `/run/user` replaced by
//! empty places (so no credential file, agent socket or keyring is there to read), then the
//! paths the step needs shown again (read-only or writable), deepest last so that a
//! read-only file inside a writable folder stays read-only. Its own process tree: git-bmad's
//! processes and other sessions' are not there to see or signal; it dies with its parent.
//!
//! Why bubblewrap and not Landlock: git keeps a branch in a folder that holds every branch,
//! so "its own branch writable, no other ref" needs a different folder at the same path,
//! which only a mount namespace gives; Landlock can only allow or deny paths as they are.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What a contained process may see and touch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Walls {
    /// The mounts on top of a read-only system, in the order given (sorted by depth when
    /// applied).
    pub mounts: Vec<Mount>,
    /// Whether it keeps the network (agent CLIs need their model API).
    pub network: bool,
}

/// One change to the read-only view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mount {
    /// An empty, private, writable place at this path (what was there is not seen).
    Hide(PathBuf),
    /// `source` shown read-only at `target`.
    ReadOnly {
        /// What is shown.
        source: PathBuf,
        /// Where.
        target: PathBuf,
    },
    /// `source` shown writable at `target`.
    Writable {
        /// What is shown.
        source: PathBuf,
        /// Where.
        target: PathBuf,
    },
}

impl Mount {
    /// `path` read-only where it is.
    pub fn read_only(path: impl Into<PathBuf>) -> Mount {
        let path = path.into();
        Mount::ReadOnly {
            source: path.clone(),
            target: path,
        }
    }

    /// `path` writable where it is.
    pub fn writable(path: impl Into<PathBuf>) -> Mount {
        let path = path.into();
        Mount::Writable {
            source: path.clone(),
            target: path,
        }
    }

    fn target(&self) -> &Path {
        match self {
            Mount::Hide(t) => t,
            Mount::ReadOnly { target, .. } | Mount::Writable { target, .. } => target,
        }
    }
}

/// The places a contained process never sees as they are: temporary files (other users'
/// sockets, an SSH agent's), the user's home (keys, tokens, browser profiles) and the
/// per-user runtime folder (the session bus, keyrings, gpg and ssh agents).
pub fn private_places(home: Option<&Path>) -> Vec<Mount> {
    let mut places = vec![Mount::Hide("/tmp".into()), Mount::Hide("/var/tmp".into())];
    if Path::new("/run/user").is_dir() {
        places.push(Mount::Hide("/run/user".into()));
    }
    if let Some(home) = home.filter(|h| h.is_absolute() && *h != Path::new("/")) {
        places.push(Mount::Hide(home.to_owned()));
    }
    places
}

/// The inherited variables a contained process is cleared of: every credential but those in
/// `keep` (its CLI's own key), and every variable that leads to a place it must not use (the
/// session bus, the runtime folder, configuration homes outside its private home).
pub fn hidden_variables(keep: &[&str]) -> Vec<String> {
    const PLACES: &[&str] = &[
        "DBUS_SESSION_BUS_ADDRESS",
        "XDG_RUNTIME_DIR",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "GH_CONFIG_DIR",
        "GNUPGHOME",
        "KRB5CCNAME",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "GIT_CONFIG_GLOBAL",
    ];
    std::env::vars_os()
        .filter_map(|(key, _)| key.into_string().ok())
        .filter(|key| crate::env::is_credential(key) && !keep.contains(&key.as_str()))
        .chain(PLACES.iter().map(|s| s.to_string()))
        .collect()
}

/// The `bwrap` arguments that run `program` with `args` in `cwd` inside `walls`.
pub fn command_line(walls: &Walls, cwd: &Path, program: &Path, args: &[String]) -> Vec<String> {
    let mut out: Vec<String> = [
        "--die-with-parent",
        "--new-session",
        "--unshare-all",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if walls.network {
        out.push("--share-net".into());
    }
    // Parents before children: a later mount covers part of an earlier one.
    let mut mounts: Vec<&Mount> = walls.mounts.iter().collect();
    mounts.sort_by_key(|m| m.target().components().count());
    for mount in mounts {
        match mount {
            Mount::Hide(target) => {
                out.extend(["--tmpfs".into(), text(target)]);
            }
            Mount::ReadOnly { source, target } => {
                out.extend(["--ro-bind".into(), text(source), text(target)]);
            }
            Mount::Writable { source, target } => {
                out.extend(["--bind".into(), text(source), text(target)]);
            }
        }
    }
    out.extend(["--chdir".into(), text(cwd), "--".into(), text(program)]);
    out.extend(args.iter().cloned());
    out
}

fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Why containment cannot work here, or `Ok` with bubblewrap's path. Asked once per process:
/// bubblewrap is looked for on `PATH` and run once in the walls every step gets.
pub fn available() -> Result<PathBuf, String> {
    static ANSWER: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    ANSWER.get_or_init(probe).clone()
}

fn probe() -> Result<PathBuf, String> {
    let program = which::which("bwrap").map_err(|_| {
        "bubblewrap is not installed (`bwrap` is not on PATH; Debian and Ubuntu: \
         `apt install bubblewrap`, Fedora: `dnf install bubblewrap`)"
            .to_owned()
    })?;
    let walls = Walls {
        mounts: private_places(None),
        network: false,
    };
    let args = command_line(&walls, Path::new("/"), Path::new("/bin/true"), &[]);
    let out = std::process::Command::new(&program)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{} cannot be run: {e}", program.display()))?;
    if out.status.success() {
        return Ok(program);
    }
    let why = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    Err(format!(
        "{} cannot make a sandbox here: {why} (unprivileged user namespaces may be off: \
         `sysctl kernel.unprivileged_userns_clone=1`, or on Ubuntu 24.04 and later an \
         AppArmor profile for bwrap)",
        program.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(args: &[String], flag: &str) -> Vec<String> {
        args.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].clone())
            .collect()
    }

    #[test]
    fn mounts_go_parents_first_and_the_command_last() {
        let walls = Walls {
            mounts: vec![
                Mount::read_only("/w/repo/.git/worktrees/x/commondir"),
                Mount::writable("/w/repo/.git/worktrees/x"),
                Mount::Hide("/home/u".into()),
                Mount::read_only("/home/u/.cargo/bin"),
            ],
            network: true,
        };
        let args = command_line(
            &walls,
            Path::new("/w/x"),
            Path::new("/bin/sh"),
            &["-c".into()],
        );
        let order: Vec<&str> = args
            .iter()
            .map(String::as_str)
            .filter(|a| a.starts_with('/') && *a != "/")
            .collect();
        assert_eq!(
            order,
            [
                "/dev",
                "/proc",
                "/home/u",
                "/home/u/.cargo/bin",
                "/home/u/.cargo/bin",
                "/w/repo/.git/worktrees/x",
                "/w/repo/.git/worktrees/x",
                "/w/repo/.git/worktrees/x/commondir",
                "/w/repo/.git/worktrees/x/commondir",
                "/w/x",
                "/bin/sh"
            ]
        );
        assert!(args.contains(&"--share-net".to_owned()));
        assert_eq!(&args[args.len() - 3..], ["--", "/bin/sh", "-c"]);
        assert_eq!(pairs(&args, "--tmpfs"), ["/home/u"]);
        let no_net = command_line(
            &Walls::default(),
            Path::new("/"),
            Path::new("/bin/true"),
            &[],
        );
        assert!(!no_net.contains(&"--share-net".to_owned()));
        assert!(no_net.contains(&"--unshare-all".to_owned()));
    }

    #[test]
    fn the_home_and_the_runtime_folder_are_private() {
        let places = private_places(Some(Path::new("/home/u")));
        assert!(places.contains(&Mount::Hide("/home/u".into())));
        assert!(places.contains(&Mount::Hide("/tmp".into())));
        // A home of `/` (some service users) cannot be hidden without hiding everything.
        assert!(!private_places(Some(Path::new("/"))).contains(&Mount::Hide("/".into())));
    }
}

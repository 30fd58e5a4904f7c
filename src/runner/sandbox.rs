//! Containment: a process run inside walls that say what it may write, read and signal,
//! raised by up to two layers that stack:
//!
//! - bubblewrap (`bwrap`): its own mount, pid, ipc and uts namespaces. The view: the whole
//!   system read-only; `/tmp`, the user's home and `/run/user` replaced by empty places (so
//!   no credential file, agent socket or keyring is there to read), then the paths the step
//!   needs shown again (read-only or writable), deepest last so that a read-only file inside a
//!   writable folder stays read-only. Its own process tree; it dies with its parent. Git keeps
//!   a branch in a folder that holds every branch, so "its own branch writable, no other ref"
//!   needs a different folder at the same path, which only a mount namespace gives.
//! - Landlock and a seccomp filter ([`landlock`]): no user namespace needed, so it holds where
//!   bubblewrap is refused (Ubuntu 24.04 and later, GitHub's runners). Inside bubblewrap it
//!   adds what mounts cannot (no signals out, no new namespaces, no `ptrace`); alone, it is
//!   the walls, and the fence gives the step a shadow of the repository instead of mounts.

use std::path::{Path, PathBuf};

mod keeper;
mod landlock;
mod layers;
mod scratch;
mod tools;
pub use landlock::{enter_if_asked, Rules};
pub use layers::{
    apparmor_profile, available, enable_bubblewrap_here, own_executable, Containment, Enable,
    Landlock, Layers,
};
pub use scratch::{scratch, Scratch};
pub use tools::{ci_runner_credentials, needs};
use tools::{toolchains, tools};

/// A process run inside walls: the layers that raise them (from [`Layers::here`]) and the
/// walls.
#[derive(Clone, Debug)]
pub struct Contained {
    /// The layers.
    pub layers: Layers,
    /// What the process may see and touch.
    pub walls: Walls,
}

/// What a contained process may see and touch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Walls {
    /// The mounts on top of a read-only system, in the order given (sorted by depth when
    /// applied).
    pub mounts: Vec<Mount>,
    /// Whether it keeps the network (agent CLIs need their model API).
    pub network: bool,
}

impl Walls {
    /// Whether `path` (canonical) is seen inside as it is: the deepest mount over it says.
    pub fn shows(&self, path: &Path) -> bool {
        let deepest = self
            .mounts
            .iter()
            .filter(|m| path.starts_with(m.target()))
            .max_by_key(|m| m.target().components().count());
        match deepest {
            None => true,
            Some(Mount::Hide(_) | Mount::Blank(_)) => false,
            Some(Mount::ReadOnly { source, target } | Mount::Writable { source, target }) => {
                source == target
            }
        }
    }

    /// Where the home a walled process runs with lies outside: its private home, shown in
    /// place of the user's, when it has one.
    pub fn private_home(&self) -> Option<&Path> {
        let real = crate::env::Var::Home.path()?;
        self.mounts.iter().find_map(|mount| match mount {
            Mount::Writable { source, target } if *target == real && *source != real => {
                Some(source.as_path())
            }
            _ => None,
        })
    }

    /// What `program` needs to run that these walls hide (see [`needs`]).
    pub fn hide_from(&self, program: &Path) -> Vec<PathBuf> {
        needs(program)
            .into_iter()
            .filter(|p| !self.shows(p))
            .collect()
    }
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
    /// An empty file shown read-only in place of this one (a credential inside a folder that
    /// is shown).
    Blank(PathBuf),
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
            Mount::Hide(t) | Mount::Blank(t) => t,
            Mount::ReadOnly { target, .. } | Mount::Writable { target, .. } => target,
        }
    }
}

/// The places a contained process never sees as they are: temporary files (other users'
/// sockets, an SSH agent's), the user's home (keys, tokens, browser profiles), the
/// per-user runtime folder (the session bus, keyrings, gpg and ssh agents), and git-bmad's
/// sealed stores (keys, acceptance tests) wherever they lie (inside the home or not:
/// `XDG_CONFIG_HOME` may name any place).
pub fn private_places(home: Option<&Path>) -> Vec<Mount> {
    // A mount needs its place: bubblewrap cannot make one in the read-only system.
    let mut places: Vec<Mount> = ["/tmp", "/var/tmp", "/run/user"]
        .iter()
        .map(Path::new)
        .filter(|p| p.is_dir())
        .map(|p| Mount::Hide(p.to_owned()))
        .collect();
    if let Some(home) = home.filter(|h| is_home(h)) {
        places.push(Mount::Hide(home.to_owned()));
    }
    // Hidden again below a shown place, however deep: mounts go parents first.
    for store in crate::env::sealed_stores() {
        if store.is_dir() {
            places.push(Mount::Hide(store));
        }
    }
    places
}

/// Whether `path` can be a home the walls replace: a folder of its own, not `/`.
fn is_home(path: &Path) -> bool {
    path.is_absolute() && path != Path::new("/") && path.is_dir()
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
    crate::env::all()
        .filter_map(|(key, _)| key.into_string().ok())
        .filter(|key| crate::env::child::is_credential(key) && !keep.contains(&key.as_str()))
        .chain(PLACES.iter().map(|s| s.to_string()))
        .collect()
}

/// What starts a program inside walls: the program to run, its arguments, and the variables
/// it is given (its private home and temporary folder, where Landlock alone holds the walls).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// What is started.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set on top of its environment.
    pub env: Vec<(String, String)>,
}

/// Run `program` with `args` in `cwd` inside `walls`, raised by `layers`: bubblewrap's mounts
/// then Landlock, or Landlock alone.
pub fn launch(
    layers: &Layers,
    walls: &Walls,
    cwd: &Path,
    program: &Path,
    args: &[String],
) -> std::io::Result<Launch> {
    match (&layers.bwrap, &layers.landlock) {
        (Some(bwrap), landlock) => {
            let inner = match landlock {
                Some(l) => {
                    let line =
                        landlock::command_line(&l.helper, &landlock::stacked(walls), program, args);
                    command_line(walls, cwd, Path::new(&line[0]), &line[1..])
                }
                None => command_line(walls, cwd, program, args),
            };
            Ok(Launch {
                program: bwrap.clone(),
                args: inner,
                env: Vec::new(),
            })
        }
        (None, Some(l)) => {
            let home = crate::env::Var::Home.path();
            let plan = landlock::alone(walls, home.as_deref());
            for dir in &plan.make {
                std::fs::create_dir_all(dir)?;
            }
            for (link, target) in &plan.links {
                // A copy the CLI keeps there (its settings) stays what it is.
                if std::fs::symlink_metadata(link).is_ok() {
                    continue;
                }
                if let Some(dir) = link.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                std::os::unix::fs::symlink(target, link)?;
            }
            let mut line = landlock::command_line(&l.helper, &plan.rules, program, args);
            Ok(Launch {
                program: PathBuf::from(line.remove(0)),
                args: line,
                env: plan.env,
            })
        }
        (None, None) => Err(std::io::Error::other("no layer of walls is here")),
    }
}

/// The user's main worktree at `main`, which no step sees (an ignored `.env` with a live key,
/// the user's own unfinished work), wherever it lies: hidden, but for git-bmad's project
/// folder (`.bmad`: the configuration and playbooks the hooks read), read-only. What lies
/// inside it and is shown (the repository's git dir, a session worktree) is shown again by
/// deeper mounts. A main worktree that holds the home, or is `/`, is not hidden: the home is.
pub fn main_worktree(main: &Path) -> Vec<Mount> {
    let home = crate::env::Var::Home.path();
    let holds_home = home.is_some_and(|h| h.starts_with(main));
    if !main.is_absolute() || main == Path::new("/") || holds_home || !main.is_dir() {
        return Vec::new();
    }
    let mut mounts = vec![Mount::Hide(main.to_owned())];
    let project = main.join(".bmad");
    if std::fs::symlink_metadata(&project).is_ok_and(|m| m.is_dir()) {
        mounts.push(Mount::read_only(project));
    }
    mounts
}

/// What of the user's the walls hide though it lies where they would show it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hidden {
    /// The user's main worktree ([`main_worktree`]).
    pub main: Option<PathBuf>,
    /// Files no step may read wherever they lie (a `user.signingKey` that signs the
    /// journals other clones trust): blanked in place.
    pub files: Vec<PathBuf>,
    /// Places shown all the same (`runners.sandbox_paths`, the git-bmad the hooks run), each
    /// with whether it is writable.
    pub shown: Vec<(PathBuf, bool)>,
    /// Files shown in another's place (a copy, then the file it stands in for): the
    /// repository's config without the credentials it carries.
    pub stand_ins: Vec<(PathBuf, PathBuf)>,
}

impl Hidden {
    /// The mounts that hide it.
    pub fn mounts(&self) -> Vec<Mount> {
        let mut mounts = self.main.as_deref().map(main_worktree).unwrap_or_default();
        mounts.extend(self.shown.iter().filter(|(path, _)| path.exists()).map(
            |(path, writable)| match writable {
                true => Mount::writable(path),
                false => Mount::read_only(path),
            },
        ));
        mounts.extend(
            self.stand_ins
                .iter()
                .map(|(source, target)| Mount::ReadOnly {
                    source: source.clone(),
                    target: target.clone(),
                }),
        );
        for file in &self.files {
            // The file itself, and where a link to it leads.
            let real = std::fs::canonicalize(file).ok();
            for path in std::iter::once(file.clone()).chain(real) {
                let blank = Mount::Blank(path);
                if blank.target().is_file() && !mounts.contains(&blank) {
                    mounts.push(blank);
                }
            }
        }
        mounts
    }
}

/// The walls of a command run in `dir` (a test run, a hook an agent could have written):
/// `dir` writable (but a `.git` link in it), what is `hidden` hidden, `readable` shown again
/// read-only, a private home at `home`, the tools on `PATH`.
pub fn command_walls(
    dir: &Path,
    hidden: &Hidden,
    readable: &[PathBuf],
    home: &Path,
    network: bool,
    program: Option<&Path>,
) -> Walls {
    let mut mounts = home_and_tools(home, program, hidden);
    mounts.extend(hidden.mounts());
    mounts.extend(readable.iter().map(Mount::read_only));
    mounts.push(Mount::writable(dir));
    if dir.join(".git").exists() {
        mounts.push(Mount::read_only(dir.join(".git")));
    }
    Walls { mounts, network }
}

/// The private places, the private home at `home` in the real one's place, and the tools
/// installed where they hide (and `program`'s own folder) shown read-only, but for what lies
/// in the main worktree `hidden` names (what to show of it is the user's to say).
pub fn home_and_tools(home: &Path, program: Option<&Path>, hidden: &Hidden) -> Vec<Mount> {
    let real_home = crate::env::Var::Home.path();
    let mut mounts = private_places(real_home.as_deref());
    if let Some(real) = real_home.filter(|h| is_home(h)) {
        mounts.push(Mount::Writable {
            source: home.to_owned(),
            target: real.clone(),
        });
        mounts.extend(toolchains(&real));
    }
    mounts.extend(tools(program, hidden.main.as_deref()));
    mounts
}

/// Fill the private home at `home`: copies of the user's `files` (relative to `real`, the
/// real home) that exist, and a git configuration with `identity` (user.name, user.email)
/// alone.
pub fn private_home(
    home: &Path,
    real: Option<&Path>,
    files: &[&str],
    identity: [Option<String>; 2],
) -> std::io::Result<()> {
    if let Some(real) = real {
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
    let quoted = |v: &str| {
        let clean: String = v.chars().filter(|c| !c.is_control()).collect();
        format!("\"{}\"", clean.replace('\\', "\\\\").replace('"', "\\\""))
    };
    let mut config = String::from("[user]\n");
    for (key, value) in ["name", "email"].iter().zip(identity) {
        if let Some(value) = value {
            config.push_str(&format!("\t{key} = {}\n", quoted(&value)));
        }
    }
    std::fs::write(home.join(".gitconfig"), config)
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
            Mount::Blank(target) => {
                out.extend(["--ro-bind".into(), "/dev/null".into(), text(target)]);
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
    fn a_private_home_holds_the_clis_own_files_and_nothing_else() {
        let real = tempfile::tempdir().unwrap();
        for file in [
            ".ssh/id_ed25519",
            ".config/gh/hosts.yml",
            ".git-credentials",
            ".gitconfig",
            ".claude.json",
            ".claude/.credentials.json",
            ".claude/settings.json",
            ".claude/projects/old/transcript.jsonl",
            ".codex/auth.json",
            ".codex/config.toml",
            ".gemini/settings.json",
            ".gemini/oauth_creds.json",
        ] {
            let path = real.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, file).unwrap();
        }
        for kind in crate::runner::Kind::all() {
            let home = tempfile::tempdir().unwrap();
            let files = kind.adapter().home_files();
            let identity = [Some("A \"B\"".to_owned()), Some("a@b".to_owned())];
            private_home(home.path(), Some(real.path()), files, identity).unwrap();
            let mut found = Vec::new();
            let mut dirs = vec![home.path().to_owned()];
            while let Some(dir) = dirs.pop() {
                for entry in std::fs::read_dir(dir).unwrap() {
                    let path = entry.unwrap().path();
                    if path.is_dir() {
                        dirs.push(path);
                    } else {
                        let name = path.strip_prefix(home.path()).unwrap();
                        found.push(name.to_string_lossy().into_owned());
                    }
                }
            }
            found.sort();
            let mut wanted: Vec<String> = files
                .iter()
                .filter(|f| real.path().join(f).exists())
                .map(|f| f.to_string())
                .chain([".gitconfig".to_owned()])
                .collect();
            wanted.sort();
            assert_eq!(found, wanted, "{kind}");
            let config = std::fs::read_to_string(home.path().join(".gitconfig")).unwrap();
            assert_eq!(
                config,
                "[user]\n\tname = \"A \\\"B\\\"\"\n\temail = \"a@b\"\n"
            );
        }
        // Each agent CLI keeps its login; none gets another's, or the user's keys.
        let claude = crate::runner::Kind::parse("claude")
            .unwrap()
            .adapter()
            .home_files();
        assert!(claude.contains(&".claude/.credentials.json"));
        let codex = crate::runner::Kind::parse("codex")
            .unwrap()
            .adapter()
            .home_files();
        assert!(codex.contains(&".codex/auth.json") && !codex.iter().any(|f| f.contains("claude")));
    }

    #[test]
    fn credentials_are_hidden_but_the_clis_own_key() {
        let hidden = hidden_variables(&["ANTHROPIC_API_KEY"]);
        for place in [
            "DBUS_SESSION_BUS_ADDRESS",
            "XDG_CONFIG_HOME",
            "GIT_CONFIG_GLOBAL",
        ] {
            assert!(hidden.contains(&place.to_owned()), "{place}");
        }
        assert!(!hidden.contains(&"ANTHROPIC_API_KEY".to_owned()));
    }

    #[test]
    fn the_home_and_the_runtime_folder_are_private() {
        let home = tempfile::tempdir().unwrap();
        let places = private_places(Some(home.path()));
        assert!(places.contains(&Mount::Hide(home.path().to_owned())));
        assert!(places.contains(&Mount::Hide("/tmp".into())));
        // A home of `/` (some service users) cannot be hidden without hiding everything,
        // and one that is not there has nothing to hide (nor a place for a mount).
        assert!(!private_places(Some(Path::new("/"))).contains(&Mount::Hide("/".into())));
        let gone = Path::new("/nonexistent/home");
        assert!(!private_places(Some(gone)).contains(&Mount::Hide(gone.to_owned())));
    }
}

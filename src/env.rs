//! git-bmad's own environment: every variable it reads ([`Var`], one entry each), the
//! waits a test may shorten ([`millis`]), the variables it sets for its children to read
//! ([`CONTAINED`], [`OWN_GIT`]), and the per-user places it keeps what no step may read
//! ([`key_store`], hidden by every wall). What a child gets of it is [`child`]'s.

pub mod child;

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// This process's environment, read once: the first read takes all of it (`cli::run` makes
/// that the command's first act), and every read after comes from it, so a command sees one
/// environment from its start to its end, whatever a library does to the live one.
fn environment() -> &'static BTreeMap<OsString, OsString> {
    static READ: OnceLock<BTreeMap<OsString, OsString>> = OnceLock::new();
    READ.get_or_init(|| std::env::vars_os().collect())
}

/// Read the environment now, before the command does anything else.
pub fn read_once() {
    environment();
}

/// A variable of this process's environment that git-bmad reads: one entry each, so that
/// what it reads is listed, and read, in one place. Children's environments are built apart
/// ([`child::passed`], [`child::untrusted`]); variables a configuration names are read with
/// [`named`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Var {
    /// Where `~/` leads: the user's configuration, keys and CLI homes.
    Home,
    /// Where programs are found.
    Path,
    /// The user's configuration folder, before `~/.config`.
    XdgConfigHome,
    /// The user's runtime folder: the change feed's sockets.
    XdgRuntimeDir,
    /// The index git hands a hook (a `commit -a`, a partial commit).
    GitIndexFile,
    /// The session an agent's step runs in (set by the supervisor).
    BmadSession,
    /// The step an agent runs (set by the supervisor).
    BmadStep,
    /// Set in every contained process ([`CONTAINED`]).
    Contained,
    /// Set on every git command git-bmad runs itself ([`OWN_GIT`]).
    OwnGit,
    /// The user's hook a shim found and goes on to after its check (unset: none).
    ChainedHook,
    /// No colours in human output, when set and not empty.
    NoColor,
    /// The log filter, before `RUST_LOG`.
    GitBmadLog,
    /// The log filter.
    RustLog,
    /// The program `report --open` opens a page with.
    Browser,
    /// The SSH agent a signing key may live in.
    SshAuthSock,
    /// `true` in a GitHub Actions job.
    GithubActions,
    /// A GitHub Actions job's server, repository and run: the run a story's job reports.
    GithubServerUrl,
    /// See [`Var::GithubServerUrl`].
    GithubRepository,
    /// See [`Var::GithubServerUrl`].
    GithubRunId,
    /// spec-kit's current feature folder.
    SpecifyFeatureDirectory,
    /// spec-kit's current feature.
    SpecifyFeature,
    /// A test's knob (debug builds only): how often an epic on Actions looks at its runs.
    ActionsPollMs,
    /// A test's knob (debug builds only): the pause before `gh` is asked again.
    GhBackoffMs,
}

impl Var {
    /// Every entry, for the contract's test.
    pub const ALL: [Var; 23] = [
        Var::Home,
        Var::Path,
        Var::XdgConfigHome,
        Var::XdgRuntimeDir,
        Var::GitIndexFile,
        Var::BmadSession,
        Var::BmadStep,
        Var::Contained,
        Var::OwnGit,
        Var::ChainedHook,
        Var::NoColor,
        Var::GitBmadLog,
        Var::RustLog,
        Var::Browser,
        Var::SshAuthSock,
        Var::GithubActions,
        Var::GithubServerUrl,
        Var::GithubRepository,
        Var::GithubRunId,
        Var::SpecifyFeatureDirectory,
        Var::SpecifyFeature,
        Var::ActionsPollMs,
        Var::GhBackoffMs,
    ];

    /// Its name.
    pub const fn name(self) -> &'static str {
        match self {
            Var::Home => "HOME",
            Var::Path => "PATH",
            Var::XdgConfigHome => "XDG_CONFIG_HOME",
            Var::XdgRuntimeDir => "XDG_RUNTIME_DIR",
            Var::GitIndexFile => "GIT_INDEX_FILE",
            Var::BmadSession => "BMAD_SESSION",
            Var::BmadStep => "BMAD_STEP",
            Var::Contained => CONTAINED,
            Var::OwnGit => OWN_GIT,
            Var::ChainedHook => "GIT_BMAD_CHAINED_HOOK",
            Var::NoColor => "NO_COLOR",
            Var::GitBmadLog => "GIT_BMAD_LOG",
            Var::RustLog => "RUST_LOG",
            Var::Browser => "BROWSER",
            Var::SshAuthSock => "SSH_AUTH_SOCK",
            Var::GithubActions => "GITHUB_ACTIONS",
            Var::GithubServerUrl => "GITHUB_SERVER_URL",
            Var::GithubRepository => "GITHUB_REPOSITORY",
            Var::GithubRunId => "GITHUB_RUN_ID",
            Var::SpecifyFeatureDirectory => "SPECIFY_FEATURE_DIRECTORY",
            Var::SpecifyFeature => "SPECIFY_FEATURE",
            Var::ActionsPollMs => "BMAD_ACTIONS_POLL_MS",
            Var::GhBackoffMs => "BMAD_GH_BACKOFF_MS",
        }
    }

    /// Its value as the system holds it, if set.
    pub fn os(self) -> Option<OsString> {
        environment().get(OsStr::new(self.name())).cloned()
    }

    /// Its value, if set and Unicode.
    pub fn get(self) -> Option<String> {
        self.os()?.into_string().ok()
    }

    /// Its value as a path, if set.
    pub fn path(self) -> Option<PathBuf> {
        self.os().map(PathBuf::from)
    }

    /// Whether it is set (to anything, empty included).
    pub fn is_set(self) -> bool {
        self.os().is_some()
    }
}

/// The variable `name` a configuration or a CLI's adapter names (an API key's, a runner's
/// `env`), if set and Unicode.
pub fn named(name: &str) -> Option<String> {
    environment()
        .get(OsStr::new(name))?
        .clone()
        .into_string()
        .ok()
}

/// A wait of `default_ms` milliseconds; in a debug build (the tests'), what `knob` sets in
/// milliseconds. A release build reads no test knob.
pub fn millis(knob: Var, default_ms: u64) -> Duration {
    let set = if cfg!(debug_assertions) {
        knob.get().and_then(|v| v.trim().parse().ok())
    } else {
        None
    };
    Duration::from_millis(set.unwrap_or(default_ms))
}

/// Set in the environment of every contained process: its hooks and guard run in its walls
/// (they keep what they refuse for the supervisor, and never build walls again).
pub const CONTAINED: &str = "BMAD_CONTAINED";

/// Set on every git command git-bmad runs itself: a hook it fires knows that git-bmad, not
/// a person, acts (a push with the user's credentials, a merge of an agent's branch).
pub const OWN_GIT: &str = "GIT_BMAD_OWN_GIT";

/// git-bmad's per-user store of what no step may read, each clone's signing key in a folder
/// named by its clone id: `$XDG_CONFIG_HOME/git-bmad/keys`, else `~/.config/git-bmad/keys`;
/// `None` when neither names an absolute place. Outside every repository, so a step that
/// reads its repository reads no key; hidden by the walls wherever it lies.
pub fn key_store() -> Option<PathBuf> {
    Some(sealed_root()?.join("keys"))
}

/// git-bmad's per-user store of the acceptance tests written for stories before their dev
/// began, by clone and story: `keys`' sibling, hidden by the walls as it is, so no step of
/// the story (nor the code it runs) reads the tests it will be judged by.
pub fn acceptance_store() -> Option<PathBuf> {
    Some(sealed_root()?.join("acceptance"))
}

/// The stores no step may read: [`key_store`] and [`acceptance_store`].
pub fn sealed_stores() -> Vec<PathBuf> {
    [key_store(), acceptance_store()]
        .into_iter()
        .flatten()
        .collect()
}

/// The user's configuration folder as git finds it (its global `ignore`, git-bmad's global
/// hooks): `$XDG_CONFIG_HOME` when set and not empty, else `~/.config`.
pub fn config_home() -> Option<PathBuf> {
    Var::XdgConfigHome
        .path()
        .filter(|p| !p.as_os_str().is_empty())
        .or_else(|| Some(Var::Home.path()?.join(".config")))
}

/// `$XDG_CONFIG_HOME/git-bmad`, else `~/.config/git-bmad`; each only when absolute, so no
/// secret is ever kept in a place relative to where a command runs.
fn sealed_root() -> Option<PathBuf> {
    let absolute = |var: Var| {
        var.path()
            .filter(|p| p.is_absolute() && p.as_os_str().len() > 1)
    };
    let config =
        absolute(Var::XdgConfigHome).or_else(|| absolute(Var::Home).map(|h| h.join(".config")))?;
    Some(config.join("git-bmad"))
}

/// Where git-bmad keeps the sockets of its own processes (the change feed's watchers): the
/// user's runtime folder (`$XDG_RUNTIME_DIR/git-bmad`), else `/tmp/git-bmad-<uid>`. Both lie
/// where the walls hide, so no contained step reaches them; the caller makes the folder and
/// checks it is the user's alone.
pub fn runtime_dir(uid: u32) -> PathBuf {
    Var::XdgRuntimeDir
        .path()
        .filter(|p| p.is_absolute() && p.is_dir())
        .map(|p| p.join("git-bmad"))
        // A socket's path has room for 107 bytes.
        .filter(|p| p.as_os_str().len() < 48)
        .unwrap_or_else(|| PathBuf::from(format!("/tmp/git-bmad-{uid}")))
}

/// Every variable of this process's environment, to pass or hide by name.
pub fn all() -> impl Iterator<Item = (OsString, OsString)> {
    environment().iter().map(|(k, v)| (k.clone(), v.clone()))
}

//! Environment variables children are cleared of.
//!
//! - Every child: git exports the repository-redirecting variables to hooks; inherited by a
//!   child git (ours, or an agent's), they would point it at another repository, index or
//!   worktree. One list, used by the git layer for its own commands and by the runner layer
//!   for agents.
//! - The tests git-bmad runs to judge work: they run code an agent wrote, so they get no
//!   credential of the user's ([`untrusted`]).
//!
//! And the one per-user place git-bmad keeps secrets in ([`key_store`]), which every wall
//! hides; every variable git-bmad reads itself ([`Var`]), and the waits a test may shorten
//! ([`millis`]).

use std::path::PathBuf;
use std::time::Duration;

/// A variable of this process's environment that git-bmad reads: one entry each, so that
/// what it reads is listed, and read, in one place. Children's environments are built apart
/// ([`passed`], [`untrusted`]); variables a configuration names are read with [`named`].
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
    pub fn os(self) -> Option<std::ffi::OsString> {
        std::env::var_os(self.name())
    }

    /// Its value, if set and Unicode.
    pub fn get(self) -> Option<String> {
        std::env::var(self.name()).ok()
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
    std::env::var(name).ok()
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

/// Variables that would make a child git act on another repository, index or worktree.
pub const REPO_REDIRECTING_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_QUARANTINE_PATH",
];

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

/// Whether variable `key` names a credential: a token, a secret, a password, an API or
/// access key, the SSH agent, git's ways to ask for one or reach a host.
pub fn is_credential(key: &str) -> bool {
    let upper = key.to_uppercase();
    let words: Vec<&str> = upper.split('_').collect();
    [
        "TOKEN",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTH",
        "ASKPASS",
        "APIKEY",
    ]
    .iter()
    .any(|w| words.contains(w))
        || [
            "SECRET",
            "PASSWORD",
            "PASSWD",
            "API_KEY",
            "ACCESS_KEY",
            "PRIVATE_KEY",
        ]
        .iter()
        .any(|p| upper.contains(p))
        || upper.starts_with("GIT_SSH")
}

/// What an agent or a test process gets of this process's environment, by name: the
/// command search path and home, who the user is, the terminal, locale and time zone,
/// proxies and certificate stores, git's identity and editor (and the two variables that
/// only narrow what git reads), toolchains' homes, CI's marker. Nothing else but what its CLI
/// needs and what the configuration names: a credential no name gives away (`GH_PAT`,
/// `DATABASE_URL` with a password, `GIT_CONFIG_VALUE_0` with an `http.extraheader`) is not
/// passed, contained or not.
const PASSED: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "LANG",
    "LANGUAGE",
    "LC_",
    "TZ",
    "TMPDIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_EDITOR",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_GLOBAL",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "GOMODCACHE",
    "GOCACHE",
    "JAVA_HOME",
    "NVM_DIR",
    "NVM_BIN",
    "VOLTA_HOME",
    "PYENV_ROOT",
    "VIRTUAL_ENV",
    "BUN_INSTALL",
    "DENO_DIR",
    "ASDF_DIR",
    "ASDF_DATA_DIR",
    "MISE_DATA_DIR",
    "SDKMAN_DIR",
    "GRADLE_USER_HOME",
    "CI",
];

/// Whether `key` is named by `pattern`: the same name, or a prefix ending in `_` (`LC_`,
/// `ANTHROPIC_`).
fn names(pattern: &str, key: &str) -> bool {
    match pattern.strip_suffix('_') {
        Some(_) => key.starts_with(pattern),
        None => key == pattern,
    }
}

/// The environment of an agent or a test process, whole (it is started with a cleared
/// one): the variables of this process's own that [`PASSED`], `also` (its CLI's names) or
/// `configured` (the names the configuration gives) name. A name ending in `_` names every
/// variable it begins.
pub fn passed(also: &[&str], configured: &[String]) -> Vec<(String, String)> {
    all()
        .filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(key, _)| {
            PASSED.iter().chain(also).any(|p| names(p, key))
                || configured.iter().any(|p| names(p, key))
        })
        .filter(|(key, _)| !REPO_REDIRECTING_VARS.contains(&key.as_str()))
        .collect()
}

/// Every variable of this process's environment, to pass or hide by name.
pub fn all() -> std::env::VarsOs {
    std::env::vars_os()
}

/// The environment of a process that runs code an agent wrote (a test run), whole: what
/// [`passed`] passes of the `configured` names, no git configuration but the repository's (so
/// no credential helper), no `gh` login, no prompt.
pub fn untrusted(configured: &[String]) -> Vec<(String, String)> {
    let fixed = [
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GH_CONFIG_DIR", "/dev/null"),
    ];
    let mut env: Vec<(String, String)> = passed(&[], configured)
        .into_iter()
        .filter(|(key, _)| !fixed.iter().any(|(k, _)| k == key))
        .collect();
    env.extend(fixed.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_known_by_name_and_identities_are_not_credentials() {
        for key in [
            "GH_TOKEN",
            "GITHUB_TOKEN",
            "NODE_AUTH_TOKEN",
            "SSH_AUTH_SOCK",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "ANTHROPIC_API_KEY",
            "OPENAI_APIKEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "GIT_ASKPASS",
            "SSH_ASKPASS",
            "GIT_SSH_COMMAND",
            "PGPASSWORD",
            "DB_PASSWORD",
        ] {
            assert!(is_credential(key), "{key}");
        }
        for key in [
            "PATH",
            "HOME",
            "GIT_AUTHOR_NAME",
            "GIT_COMMITTER_EMAIL",
            "CARGO_HOME",
            "KEYMAP",
            "AUTHORITY_URL",
        ] {
            assert!(!is_credential(key), "{key}");
        }
    }

    #[test]
    fn names_are_names_and_prefixes_end_in_an_underscore() {
        assert!(names("PATH", "PATH"));
        assert!(!names("PATH", "PATHEXT"));
        assert!(names("LC_", "LC_ALL"));
        assert!(names("ANTHROPIC_", "ANTHROPIC_BASE_URL"));
        assert!(!names("ANTHROPIC_", "ANTHROPIC"));
        assert!(!names("CI", "CIRCLE_TOKEN"));
        // Nothing the allow-list passes is a credential by name, nor one that is not by name.
        for key in PASSED {
            assert!(!is_credential(key), "{key}");
        }
        for key in [
            "GH_PAT",
            "OPENAI_KEY_DEV",
            "DATABASE_URL",
            "GIT_CONFIG_VALUE_0",
            "SENTRY_DSN",
        ] {
            assert!(!PASSED.iter().any(|p| names(p, key)), "{key}");
        }
    }
}

//! What a child process gets of git-bmad's environment.
//!
//! - Every child: git exports the repository-redirecting variables to hooks; inherited by a
//!   child git (ours, or an agent's), they would point it at another repository, index or
//!   worktree. One list, used by the git layer for its own commands and by the runner layer
//!   for agents.
//! - Agents and the commands run for them: an allow-list ([`passed`]); no credential but
//!   their CLI's own.
//! - The tests git-bmad runs to judge work: they run code an agent wrote, so they get no
//!   credential of the user's ([`untrusted`]).

use super::all;

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

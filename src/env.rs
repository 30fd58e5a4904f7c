//! Environment variables children are cleared of.
//!
//! - Every child: git exports the repository-redirecting variables to hooks; inherited by a
//!   child git (ours, or an agent's), they would point it at another repository, index or
//!   worktree. One list, used by the git layer for its own commands and by the runner layer
//!   for agents.
//! - The tests git-bmad runs to judge work: they run code an agent wrote, so they get no
//!   credential of the user's ([`untrusted`]).

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

/// The environment of a process that runs code an agent wrote: the variables to set and
/// those to remove from this process's own. No credential variable, no git configuration
/// but the repository's (so no credential helper), no `gh` login, no prompt.
pub fn untrusted() -> (Vec<(String, String)>, Vec<String>) {
    let set = [
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GH_CONFIG_DIR", "/dev/null"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let remove = std::env::vars_os()
        .filter_map(|(key, _)| key.into_string().ok())
        .filter(|key| is_credential(key))
        .chain(REPO_REDIRECTING_VARS.iter().map(|s| s.to_string()))
        .collect();
    (set, remove)
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
}

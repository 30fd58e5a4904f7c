//! Project configuration: `.bmad/config.yaml` in the main worktree (committed, shared by the
//! team), overridden per clone by `git config bmad.*`.
//!
//! This is the lowest layer: every other layer reads its own section from here, so the
//! session layer never names a runner type and the runner layer never opens a repository.
//! Loading takes the git config values as a lookup function for the same reason.
//!
//! Unknown keys are errors with their line and column: a misspelt key that is silently
//! ignored is a setting the user believes in and does not have.

mod detect;
mod epic;
mod error;
mod orchestration;
mod runners;
mod template;
pub mod yaml;

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use detect::{detect_test_command, DetectedTests};
pub use epic::{EpicConfig, Switch};
pub use error::{Error, Result};
pub use orchestration::{Assignment, ModelPrice, OrchestrationConfig, ProgressMode};
pub use runners::{CliConfig, Protocol, RunnersConfig, Sandbox, SandboxPaths};
pub use template::{template_for, TEMPLATE};

/// Where the project configuration lives, relative to the main worktree.
pub const CONFIG_PATH: &str = ".bmad/config.yaml";

/// The project configuration.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The format version (1).
    pub version: u32,
    /// Where sessions go.
    pub sessions: SessionsConfig,
    /// What agents may not do.
    pub policy: PolicyConfig,
    /// Which agent CLI runs a step, and how it is called.
    pub runners: RunnersConfig,
    /// How the supervisor's artifact checks run.
    pub checks: ChecksConfig,
    /// Agents per role, concurrency, budget, escalation.
    pub orchestration: OrchestrationConfig,
    /// How epic runs judge their stories.
    pub epic: EpicConfig,
}

/// The `checks:` section.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct ChecksConfig {
    /// The command behind a bare `tests_pass` check (run with `sh -c` in the worktree).
    pub test_command: Option<String>,
    /// The network of contained test runs and shell steps.
    pub network: Network,
}

/// `checks.network`: whether contained test runs and shell steps reach the network.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// The machine's network.
    #[default]
    Full,
    /// None (not even loopback of the host).
    None,
}

/// The `policy:` section. It can only add protection: `main`, `master` and every session's
/// base are always protected, and keys that would switch a safety rule off are refused.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// More branches (short names) that no push or session may move, rewrite or delete.
    pub protected_branches: Vec<String>,
    /// Whom the push rules bind (git config `bmad.policyScope`).
    pub scope: PolicyScope,
}

/// Whom the push rules (force, protected branches, tags) bind. Agents and session
/// worktrees are bound whatever the scope; the secret scan binds everyone.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PolicyScope {
    /// Sessions and agents only: people in the main worktree push as they always did.
    #[default]
    Sessions,
    /// Everyone, the main worktree included.
    Everywhere,
}

/// Branches that are protected whatever the configuration says.
pub const ALWAYS_PROTECTED: &[&str] = &["main", "master"];

/// Keys that would turn a safety rule off, and why they cannot exist.
const SAFETY_OVERRIDES: &[(&str, &str)] = &[
    (
        "allow_force_push",
        "force pushes rewrite shared history; agents never get to do that",
    ),
    (
        "allow_push_to_protected",
        "protected branches change only through reviewed pull requests",
    ),
    (
        "allow_protected_push",
        "protected branches change only through reviewed pull requests",
    ),
    (
        "allow_delete_protected",
        "protected branches are never deleted by an agent",
    ),
    (
        "allow_no_verify",
        "hooks are the guardrail; bypassing them is what they exist to stop",
    ),
    (
        "disable_hooks",
        "hooks are the guardrail; bypassing them is what they exist to stop",
    ),
    ("skip_secret_scan", "committed secrets cannot be taken back"),
    (
        "disable_secret_scan",
        "committed secrets cannot be taken back",
    ),
    (
        "unprotect",
        "main, master and session bases are always protected",
    ),
    ("auto_merge", "no agent merges its own work"),
];

/// The `sessions:` section.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct SessionsConfig {
    /// Session branches are `<branch_prefix><name>` (git config `bmad.branchPrefix`).
    pub branch_prefix: String,
    /// Session worktrees go in this directory, relative to the main worktree
    /// (git config `bmad.worktreeRoot`).
    pub worktree_root: String,
    /// How many days `remove` and `prune` keep a session restorable (`git bmad restore`)
    /// before `git bmad gc` may delete it (git config `bmad.keepRemovedDays`).
    pub keep_removed_days: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            version: 1,
            sessions: SessionsConfig::default(),
            policy: PolicyConfig::default(),
            runners: RunnersConfig::default(),
            checks: ChecksConfig::default(),
            orchestration: OrchestrationConfig::default(),
            epic: EpicConfig::default(),
        }
    }
}

impl Default for SessionsConfig {
    fn default() -> Self {
        SessionsConfig {
            branch_prefix: "bmad/".into(),
            worktree_root: "..".into(),
            keep_removed_days: 14,
        }
    }
}

impl Config {
    /// Load the configuration of a project: file, then git config overrides, then checks.
    ///
    /// `git_value` answers a git config key (`bmad.branchPrefix`) as git would resolve it.
    pub fn load(main_workdir: &Path, git_value: &dyn Fn(&str) -> Option<String>) -> Result<Config> {
        let path = main_workdir.join(CONFIG_PATH);
        let mut config = match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text, &path)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config::default(),
            Err(source) => return Err(Error::Read { path, source }),
        };
        if let Some(prefix) = git_value("bmad.branchPrefix") {
            config.sessions.branch_prefix = prefix;
        }
        if let Some(root) = git_value("bmad.worktreeRoot") {
            config.sessions.worktree_root = root;
        }
        if let Some(days) = git_value("bmad.keepRemovedDays") {
            config.sessions.keep_removed_days =
                days.trim().parse().map_err(|_| Error::Invalid {
                    path: path.clone(),
                    location: None,
                    message: format!(
                    "git config bmad.keepRemovedDays is {days:?}; it must be a whole number of days"
                ),
                })?;
        }
        if let Some(scope) = git_value("bmad.policyScope") {
            config.policy.scope = match scope.trim() {
                "sessions" => PolicyScope::Sessions,
                "everywhere" => PolicyScope::Everywhere,
                other => {
                    return Err(Error::Invalid {
                        path: path.clone(),
                        location: None,
                        message: format!(
                            "git config bmad.policyScope is {other:?}; it must be `sessions` or `everywhere`"
                        ),
                    })
                }
            };
        }
        if let Some(mode) = git_value("bmad.sandbox") {
            config.runners.sandbox = match mode.trim() {
                "auto" => Sandbox::Auto,
                "required" => Sandbox::Required,
                "bubblewrap" => Sandbox::Bubblewrap,
                "landlock" => Sandbox::Landlock,
                "off" => Sandbox::Off,
                other => {
                    return Err(Error::Invalid {
                        path: path.clone(),
                        location: None,
                        message: format!(
                            "git config bmad.sandbox is {other:?}; it must be auto, required, bubblewrap, landlock or off"
                        ),
                    })
                }
            };
        }
        if let Some(mode) = git_value("bmad.progress") {
            config.orchestration.progress =
                ProgressMode::parse(&mode).ok_or_else(|| Error::Invalid {
                    path: path.clone(),
                    location: None,
                    message: format!(
                        "git config bmad.progress is {mode:?}; it must be verbose, summary, silent or streaming"
                    ),
                })?;
        }
        config.check(&path)?;
        Ok(config)
    }

    /// Parse the YAML text of a config file.
    pub fn parse(text: &str, path: &Path) -> Result<Config> {
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        refuse_safety_overrides(text, path)?;
        yaml::from_str(text).map_err(|e| Error::Invalid {
            path: path.to_path_buf(),
            location: e.location,
            message: e.message,
        })
    }

    fn check(&mut self, path: &Path) -> Result<()> {
        let bad = |message: String| Error::Invalid {
            path: path.to_path_buf(),
            location: None,
            message,
        };
        if self.version != 1 {
            return Err(bad(format!(
                "version {} is not supported by this git-bmad (it reads version 1)",
                self.version
            )));
        }
        let prefix = &mut self.sessions.branch_prefix;
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        if prefix.len() < 2
            || !prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
            || prefix.starts_with('/')
            || prefix.contains("//")
            || prefix.contains("..")
        {
            return Err(bad(format!(
                "sessions.branch_prefix {prefix:?} must be letters, digits, '-', '_', '.' and '/' (for example \"bmad/\")"
            )));
        }
        let mut problems = self.orchestration.problems();
        problems.extend(self.runners.env_problems());
        if !problems.is_empty() {
            return Err(bad(problems.join("; ")));
        }
        if self.sessions.worktree_root.trim().is_empty() {
            return Err(bad(
                "sessions.worktree_root must not be empty (the default is \"..\")".into(),
            ));
        }
        Ok(())
    }

    /// Every protected branch, as full ref names: the built-in ones, then the configured ones.
    pub fn protected_refs(&self) -> Vec<String> {
        let mut refs: Vec<String> = ALWAYS_PROTECTED
            .iter()
            .map(|b| b.to_string())
            .chain(self.policy.protected_branches.iter().cloned())
            .map(|b| {
                if b.starts_with("refs/") {
                    b
                } else {
                    format!("refs/heads/{b}")
                }
            })
            .collect();
        refs.dedup();
        refs
    }

    /// The full branch name of a session.
    pub fn branch_for(&self, name: &str) -> String {
        format!("refs/heads/{}{name}", self.sessions.branch_prefix)
    }

    /// The worktree directory of a session: `<root>/<main dir name>.<name>`.
    pub fn worktree_for(&self, main_workdir: &Path, name: &str) -> PathBuf {
        let root = Path::new(&self.sessions.worktree_root);
        let root = if root.is_absolute() {
            root.to_path_buf()
        } else {
            main_workdir.join(root)
        };
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        let repo_dir = main_workdir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "repo".into());
        // Beside a submodule, a session would be inside its superproject's worktree, whose
        // `git add -A` would record it as an embedded repository: it goes beside the
        // superproject instead, named by the path down to the submodule.
        if let Some(superproject) = self.default_root_in_superproject(main_workdir) {
            let down = main_workdir
                .strip_prefix(&superproject)
                .map(|p| p.to_string_lossy().replace('/', "-"))
                .unwrap_or(repo_dir);
            let top = superproject
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "repo".into());
            let beside = superproject.parent().unwrap_or(&superproject);
            return beside.join(format!("{top}.{down}.{name}"));
        }
        root.join(format!("{repo_dir}.{name}"))
    }

    /// The worktree of the superproject `main_workdir` is a submodule of, when sessions go
    /// in the default place (beside the repository) and that is inside it: the submodule's
    /// `.git` file names a git dir under `<superproject>/.git/modules/`.
    fn default_root_in_superproject(&self, main_workdir: &Path) -> Option<PathBuf> {
        if self.sessions.worktree_root.trim() != ".." {
            return None;
        }
        let gitfile = std::fs::read_to_string(main_workdir.join(".git")).ok()?;
        let git_dir = Path::new(gitfile.strip_prefix("gitdir:")?.trim());
        let git_dir = std::fs::canonicalize(main_workdir.join(git_dir)).ok()?;
        let text = git_dir.to_string_lossy();
        let (top, _) = text.split_once("/.git/modules/")?;
        let top = PathBuf::from(top);
        main_workdir.starts_with(&top).then_some(top)
    }
}

/// Reject, by name and with the reason, any key anywhere in the file that would switch a
/// safety rule off: such a setting must fail loudly, not be ignored quietly.
fn refuse_safety_overrides(text: &str, path: &Path) -> Result<()> {
    for (n, line) in text.lines().enumerate() {
        let key = line
            .trim_start()
            .trim_start_matches("- ")
            .split(':')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches(['"', '\'']);
        if line.trim_start().starts_with('#') {
            continue;
        }
        if let Some((key, why)) = SAFETY_OVERRIDES.iter().find(|(k, _)| *k == key) {
            let column = line.len() - line.trim_start().len() + 1;
            return Err(Error::Invalid {
                path: path.to_path_buf(),
                location: Some((n + 1, column)),
                message: format!("safety_override_blocked: `{key}` cannot be configured: {why}"),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safety_cannot_be_configured_away() {
        let err = Config::parse(
            "version: 1\npolicy:\n  allow_force_push: true\n",
            Path::new("c.yaml"),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("c.yaml:3:3: safety_override_blocked: `allow_force_push`"),
            "{text}"
        );
        let config = Config::parse(
            "policy:\n  protected_branches: [release, refs/heads/prod]\n",
            Path::new("c.yaml"),
        )
        .unwrap();
        assert_eq!(
            config.protected_refs(),
            [
                "refs/heads/main",
                "refs/heads/master",
                "refs/heads/release",
                "refs/heads/prod"
            ]
        );
        // An empty list still protects main and master.
        let config =
            Config::parse("policy:\n  protected_branches: []\n", Path::new("c.yaml")).unwrap();
        assert_eq!(config.protected_refs().len(), 2);
    }

    #[test]
    fn runner_sections_are_kept_for_the_runner_layer() {
        let mut config = Config::parse(
            "runners:\n  default: codex\n  generic: {command: [agent, \"{prompt}\"]}\nchecks: {test_command: cargo test}\n",
            Path::new("c.yaml"),
        )
        .unwrap();
        config.check(Path::new("c.yaml")).unwrap();
        assert_eq!(config.checks.test_command.as_deref(), Some("cargo test"));
        assert_eq!(config.runners.default, "codex");
        assert_eq!(config.runners.cli("generic").command, ["agent", "{prompt}"]);
        // A misspelt field inside a CLI's section is still an error.
        let err = Config::parse("runners:\n  claude: {progam: x}\n", Path::new("c.yaml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("progam"), "{err}");
    }

    #[test]
    fn deep_nesting_fails_fast_with_its_line() {
        let text = format!("orchestration: {}", "{a: ".repeat(100_000));
        let err = Config::parse(&text, Path::new("c.yaml"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("c.yaml:1:"), "{err}");
        assert!(err.contains("nested"), "{err}");
    }

    #[test]
    fn unknown_keys_are_located() {
        let err = Config::parse(
            "version: 1\nsessions:\n  branch_prefx: x/\n",
            Path::new("c.yaml"),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("c.yaml:3:"), "{text}");
        assert!(
            text.contains("branch_prefix"),
            "names the allowed keys: {text}"
        );
    }
}

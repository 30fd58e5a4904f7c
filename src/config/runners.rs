//! The `runners:` section: which agent CLI runs a step, and how each CLI is called.
//!
//! ```yaml
//! runners:
//!   default: claude
//!   roles: {dev: codex}
//!   claude: {args: ["--permission-mode", "acceptEdits", "--max-turns", "40"]}
//!   generic: {command: ["my-agent", "--task", "{prompt}"]}
//! ```
//!
//! Every key besides `default` and `roles` names a runner. This layer does not know which
//! runners exist (the runner layer registers one adapter per CLI), so the names are checked
//! there; a misspelt field inside a runner's section is still refused here, with its place.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The section.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct RunnersConfig {
    /// The runner of steps that name neither a runner nor a role with one.
    pub default: String,
    /// Runner per role (`dev: codex`, `qa: claude`).
    pub roles: BTreeMap<String, String>,
    /// Whether agent steps and the commands run for them are contained.
    pub sandbox: Sandbox,
    /// How each runner is called, by runner name.
    #[serde(flatten)]
    pub clis: BTreeMap<String, CliConfig>,
}

impl Default for RunnersConfig {
    fn default() -> Self {
        RunnersConfig {
            default: "claude".into(),
            roles: BTreeMap::new(),
            sandbox: Sandbox::Auto,
            clis: BTreeMap::new(),
        }
    }
}

impl RunnersConfig {
    /// The section of one runner (empty when not configured).
    pub fn cli(&self, runner: &str) -> &CliConfig {
        static UNCONFIGURED: CliConfig = CliConfig {
            program: None,
            args: None,
            command: Vec::new(),
        };
        self.clis.get(runner).unwrap_or(&UNCONFIGURED)
    }

    /// The runner name a step gets: its own, else its role's, else the default.
    pub fn choose<'a>(&'a self, runner: Option<&'a str>, role: Option<&str>) -> &'a str {
        runner
            .or_else(|| role.and_then(|r| self.roles.get(r)).map(String::as_str))
            .unwrap_or(&self.default)
    }
}

/// `runners.sandbox`: whether agents run contained (bubblewrap).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Sandbox {
    /// Contained where this machine can; a step that cannot be is journaled as uncontained.
    #[default]
    Auto,
    /// Contained or not run: a run refuses to start without containment.
    Required,
    /// Never contained (the hooks and the guard are all the policy has).
    Off,
}

/// How to call one agent CLI.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct CliConfig {
    /// The program (default: the runner's own, found on PATH).
    pub program: Option<String>,
    /// Arguments that replace the adapter's default permission arguments.
    pub args: Option<Vec<String>>,
    /// The whole command line, for a runner that has no adapter of its own (`generic`):
    /// `{prompt}` is replaced by the prompt, else the prompt goes on stdin.
    pub command: Vec<String>,
}

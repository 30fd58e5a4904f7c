//! The `runners:` section: which agent CLI runs a step, and how each CLI is called.
//!
//! ```yaml
//! runners:
//!   default: claude
//!   roles: {dev: codex}
//!   claude: {args: ["--permission-mode", "acceptEdits", "--max-turns", "40"]}
//!   generic: {command: ["my-agent", "--task", "{prompt}"], env: [MY_AGENT_KEY]}
//!   qwen: {protocol: acp}
//!   env: [DATABASE_URL]
//! ```
//!
//! Agents and the commands run for them get an allow-listed environment (`crate::env`):
//! `env` names more variables for all of them, `<runner>.env` for that runner's steps (a name
//! ending in `_` names every variable it begins).
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
    /// More variables every agent and test process gets, by name, beyond the built-in list.
    pub env: Vec<String>,
    /// More places the walls show (`~/` is the home): what a CLI's install needs where the
    /// walls hide it, a cache every step may write.
    pub sandbox_paths: SandboxPaths,
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
            env: Vec::new(),
            sandbox_paths: SandboxPaths::default(),
            clis: BTreeMap::new(),
        }
    }
}

/// `runners.sandbox_paths`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxPaths {
    /// Shown read-only.
    pub read: Vec<String>,
    /// Shown writable.
    pub write: Vec<String>,
}

impl SandboxPaths {
    /// The places, `~/` read as `home`, each with whether it is writable; relative paths and
    /// `~/` without a home are left out (nothing to show).
    pub fn places(&self, home: Option<&std::path::Path>) -> Vec<(std::path::PathBuf, bool)> {
        let place = |p: &String| -> Option<std::path::PathBuf> {
            let path = match p.strip_prefix("~/") {
                Some(rest) => home?.join(rest),
                None => std::path::PathBuf::from(p),
            };
            path.is_absolute().then_some(path)
        };
        let read = self.read.iter().filter_map(place).map(|p| (p, false));
        read.chain(self.write.iter().filter_map(place).map(|p| (p, true)))
            .collect()
    }
}

impl RunnersConfig {
    /// The section of one runner (empty when not configured).
    pub fn cli(&self, runner: &str) -> &CliConfig {
        static UNCONFIGURED: CliConfig = CliConfig {
            program: None,
            args: None,
            command: Vec::new(),
            env: Vec::new(),
            protocol: Protocol::Headless,
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

/// `runners.sandbox`: whether agents run contained, and by which layer.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Sandbox {
    /// Contained where this machine can; a step that cannot be is journaled as uncontained.
    #[default]
    Auto,
    /// Contained or not run: a run refuses to start without a layer of walls.
    Required,
    /// Contained by bubblewrap (and Landlock where the kernel has it) or not run.
    Bubblewrap,
    /// Contained by Landlock (and bubblewrap where it works) or not run.
    Landlock,
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
    /// More variables its steps get, by name (its own API key, say).
    pub env: Vec<String>,
    /// How git-bmad talks to it: its headless mode, or the Agent Client Protocol.
    pub protocol: Protocol,
}

/// `runners.<name>.protocol`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// One prompt on its command line, one result on its stdout.
    #[default]
    Headless,
    /// The Agent Client Protocol over its stdin and stdout: git-bmad answers each of its
    /// permission requests.
    Acp,
}

impl RunnersConfig {
    /// Every `env` name that is not a variable's name (or a prefix ending in `_`), with its
    /// place.
    pub fn env_problems(&self) -> Vec<String> {
        let bad = |name: &String| {
            name.is_empty()
                || name.starts_with(|c: char| c.is_ascii_digit())
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        let mut out: Vec<String> = self
            .env
            .iter()
            .filter(|n| bad(n))
            .map(|n| format!("runners.env: {n:?} is not a variable's name"))
            .collect();
        for (runner, cli) in &self.clis {
            out.extend(
                cli.env
                    .iter()
                    .filter(|n| bad(n))
                    .map(|n| format!("runners.{runner}.env: {n:?} is not a variable's name")),
            );
        }
        out
    }
}

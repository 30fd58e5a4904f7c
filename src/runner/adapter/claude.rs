//! Claude Code, headless: `claude -p --output-format json … -- <prompt>`.
//!
//! Output: its result message (see [`result_message`]).
//!
//! Permissions: `acceptEdits` lets the agent edit files but asks before every shell command,
//! and headless nobody answers, so an honest agent could not run the tests it must pass.
//! The defaults therefore allow the commands the step's checks run, read-only commands and
//! `git add`/`git commit`, and put the guard in front of every shell command through
//! `--settings` (unless the project's settings already run it), which leaves the project's
//! own settings file untouched.

use std::path::PathBuf;

use super::AgentResult;
use super::{
    agent_args, allowed_prefixes, configured_value, dashed, nested, result_message,
    whole_command_problem, Adapter, Call,
};
use crate::config::CliConfig;

/// The adapter.
pub struct Claude;

/// The guard as a project's settings name it when git-bmad installs it there.
pub const GUARD_COMMAND: &str = "git bmad guard";

/// The project's shared settings, where `hooks install --agent` puts the guard.
pub const SETTINGS: &str = ".claude/settings.json";

impl Adapter for Claude {
    fn name(&self) -> &'static str {
        "claude"
    }

    /// Shared or local settings whose `PreToolUse` hooks run the guard (as installed, or by
    /// a path to git-bmad written by hand).
    fn guard_hooked(&self, worktree: &std::path::Path) -> bool {
        [SETTINGS, ".claude/settings.local.json"]
            .iter()
            .filter_map(|rela| std::fs::read_to_string(worktree.join(rela)).ok())
            .filter_map(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .any(|settings| {
                settings["hooks"]["PreToolUse"]
                    .as_array()
                    .is_some_and(|groups| groups.iter().any(is_guard_group))
            })
    }

    fn key_variable(&self) -> Option<&'static str> {
        Some("ANTHROPIC_API_KEY")
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("@anthropic-ai/claude-code@2.1.330")
    }

    fn contained_env(&self) -> &'static [(&'static str, &'static str)] {
        // As root it refuses bypassed permissions outside a sandbox it is told of: the walls
        // are that sandbox.
        &[("IS_SANDBOX", "1")]
    }

    fn env_names(&self) -> &'static [&'static str] {
        &[
            "ANTHROPIC_",
            "CLAUDE_CODE_",
            "CLAUDE_CONFIG_DIR",
            "DISABLE_",
            "MAX_THINKING_TOKENS",
            "MCP_TIMEOUT",
            "MCP_TOOL_TIMEOUT",
            "BASH_DEFAULT_TIMEOUT_MS",
            "BASH_MAX_TIMEOUT_MS",
            "CLOUD_ML_REGION",
        ]
    }

    fn credential_variables(&self) -> &'static [&'static str] {
        &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
        ]
    }

    fn home_files(&self) -> &'static [&'static str] {
        &[
            ".claude.json",
            ".claude/.credentials.json",
            ".claude/settings.json",
        ]
    }

    fn project_settings(&self) -> &'static [&'static str] {
        // Settings (permission rules, `disableAllHooks`), subagents, skills' and commands'
        // `allowed-tools`, and the project's MCP servers.
        &[".claude/", ".mcp.json"]
    }

    fn default_args(&self) -> &'static [&'static str] {
        &["--permission-mode", "acceptEdits"]
    }

    fn command_line(&self, cli: &CliConfig, call: &Call) -> (Vec<String>, Option<Vec<u8>>) {
        let mut args = agent_args(&["-p", "--output-format", "json"], self, cli, call);
        if cli.args.is_none() {
            args.push("--allowedTools".into());
            args.extend(allowed_tools(call.allowed_commands));
        }
        // Claude stops itself once a request takes it past the amount. A lower amount the
        // user configured stands; a higher one would outspend the run's budget, so the share
        // is given after it (the last one wins).
        let configured = configured_value(cli, &["--max-budget-usd"]).map(str::parse::<f64>);
        if let Some(usd) = call.budget_usd {
            if !matches!(configured, Some(Ok(theirs)) if theirs <= usd) {
                args.extend(["--max-budget-usd".into(), format!("{:.4}", usd.max(0.0001))]);
            }
        }
        if let (Some(guard), false, None) = (
            call.guard,
            call.guard_hooked,
            configured_value(cli, &["--settings"]),
        ) {
            args.extend(["--settings".into(), guard_settings(guard)]);
        }
        // `stream-json` headless needs `--verbose`; it changes nothing else.
        if configured_value(cli, &["--output-format"]) == Some("stream-json")
            && !args.iter().any(|a| a == "--verbose")
        {
            args.push("--verbose".into());
        }
        args.extend(["--".into(), call.prompt.to_owned()]);
        (args, None)
    }

    fn structured(&self) -> bool {
        true
    }

    fn reports_cost(&self) -> bool {
        true
    }

    fn names_models(&self) -> bool {
        true
    }

    fn read_output(&self, result: &mut AgentResult) -> bool {
        let messages = result_message::messages(result);
        result_message::read(result, &messages)
    }

    fn config_problems(&self, cli: &CliConfig) -> Vec<String> {
        let mut problems: Vec<String> = whole_command_problem(self.name(), cli)
            .into_iter()
            .collect();
        if let Some(format) = configured_value(cli, &["--output-format"])
            .filter(|f| !matches!(*f, "json" | "stream-json"))
        {
            problems.push(format!(
                "runners.claude.args: `--output-format {format}` would hide Claude's errors, denials and cost from git-bmad; use json (the default) or stream-json"
            ));
        }
        problems
    }

    fn command_files(&self, name: &str) -> Vec<PathBuf> {
        vec![
            PathBuf::from(format!(".claude/commands/{}.md", nested(name))),
            PathBuf::from(format!(".claude/skills/{name}/SKILL.md")),
            PathBuf::from(format!(".claude/skills/{}/SKILL.md", dashed(name))),
        ]
    }
}

/// Permission rules for the allowed prefixes: each command as given and with arguments
/// (`pwd`, `Bash(cargo test:*)`).
fn allowed_tools(tests: &[String]) -> Vec<String> {
    allowed_prefixes(tests)
        .into_iter()
        .flat_map(|p| [format!("Bash({p})"), format!("Bash({p}:*)")])
        .collect()
}

/// Settings that run `guard` before every shell command.
fn guard_settings(guard: &str) -> String {
    serde_json::json!({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": guard}]}
    ]}})
    .to_string()
}

/// Whether a settings' `PreToolUse` group runs git-bmad's guard.
pub fn is_guard_group(group: &serde_json::Value) -> bool {
    group["hooks"].as_array().is_some_and(|hooks| {
        hooks.iter().any(|h| {
            h["command"].as_str().is_some_and(|c| {
                c == GUARD_COMMAND
                    || c.ends_with("git-bmad guard")
                    || c.ends_with("git-bmad' guard")
            })
        })
    })
}

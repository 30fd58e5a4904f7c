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

use serde_json::Value;

use super::{
    agent_args, allowed_prefixes, configured_value, dashed, nested, result_message,
    whole_command_problem, Adapter, Call,
};
use super::{AgentResult, ModelUsage};
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
        // Where a token budget meters it, each request's tokens as it runs (its stream's
        // raw events: `message_start` what it read, `message_delta` what it wrote), unless
        // the configuration chose one result (it refuses those events then).
        let format = configured_value(cli, &["--output-format"]);
        let head: &[&str] = if call.metered_tokens && format.is_none_or(|f| f == "stream-json") {
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
            ]
        } else {
            &["-p", "--output-format", "json"]
        };
        let mut args = agent_args(head, self, cli, call);
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

    fn request_usage(&self, event: &Value) -> Option<ModelUsage> {
        if event["type"] != "stream_event" {
            return None;
        }
        let raw = &event["event"];
        let n = |usage: &Value, key: &str| usage[key].as_u64().unwrap_or(0);
        match raw["type"].as_str()? {
            // What the request read (a cache write is read fresh)...
            "message_start" => {
                let usage = &raw["message"]["usage"];
                Some(ModelUsage {
                    model: raw["message"]["model"].as_str().map(str::to_owned),
                    input: n(usage, "input_tokens") + n(usage, "cache_creation_input_tokens"),
                    cached: n(usage, "cache_read_input_tokens"),
                    output: 0,
                    usd: None,
                })
            }
            // ...and, as it ends, what it wrote.
            "message_delta" => Some(ModelUsage {
                output: n(&raw["usage"], "output_tokens"),
                ..ModelUsage::default()
            }),
            _ => None,
        }
    }

    fn read_output(&self, result: &mut AgentResult) -> bool {
        let messages = result_message::messages(result);
        if result_message::read(result, &messages) {
            return true;
        }
        // Stopped before its result (by a budget): what each request its stream showed
        // read and wrote, under the model that request named.
        let mut usage = Vec::new();
        let mut model = None;
        for message in &messages {
            let Some(mut request) = self.request_usage(message) else {
                continue;
            };
            model = request.model.clone().or(model);
            request.model = model.clone();
            super::add_request(&mut usage, Some(request));
        }
        result.usage = usage;
        result.agent_session_id = messages
            .iter()
            .find_map(|m| m["session_id"].as_str().map(str::to_owned));
        false
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Claude Code 2.1.330's stream where a token budget meters it (`stream-json
    /// --include-partial-messages`, from a run against a scripted Anthropic API), stopped
    /// after two requests, the second's end unseen.
    const STOPPED: &str = r#"{"type":"system","subtype":"init","session_id":"s-1","model":"claude-opus-5-5"}
{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","model":"claude-opus-5-5","usage":{"input_tokens":100,"cache_read_input_tokens":1000,"cache_creation_input_tokens":500,"output_tokens":1}}},"session_id":"s-1"}
{"type":"assistant","message":{"id":"msg_1","model":"claude-opus-5-5","content":[{"type":"text","text":"I'll write it."}],"usage":{"input_tokens":100,"cache_read_input_tokens":1000,"cache_creation_input_tokens":500,"output_tokens":1}},"session_id":"s-1"}
{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}},"session_id":"s-1"}
{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_3","model":"claude-opus-5-5","usage":{"input_tokens":100,"cache_read_input_tokens":1000,"cache_creation_input_tokens":500,"output_tokens":1}}},"session_id":"s-1"}
"#;

    #[test]
    fn a_metered_stream_shows_what_each_request_read_and_wrote() {
        let events: Vec<Value> = STOPPED
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let seen: Vec<(u64, u64, u64)> = events
            .iter()
            .filter_map(|e| Claude.request_usage(e))
            .map(|u| (u.input, u.cached, u.output))
            .collect();
        // The assistant message repeats the start's counts: not a request of its own.
        assert_eq!(seen, [(600, 1000, 0), (0, 0, 20), (600, 1000, 0)]);
        let result = crate::runner::interpret(
            crate::runner::Kind::parse("claude").unwrap(),
            crate::runner::Exit::Spent,
            crate::runner::Captured::from_bytes(STOPPED.as_bytes()),
            crate::runner::Captured::default(),
            10,
        );
        let usage: Vec<_> = result
            .usage
            .iter()
            .map(|u| (u.model.as_deref(), u.input, u.cached, u.output))
            .collect();
        assert_eq!(usage, [(Some("claude-opus-5-5"), 1200, 2000, 20)]);
        assert_eq!(result.agent_session_id.as_deref(), Some("s-1"));
        // Metered, it prints that stream; else one result.
        let metered = Call {
            prompt: "p",
            metered_tokens: true,
            ..Call::default()
        };
        let (args, _) = Claude.command_line(&CliConfig::default(), &metered);
        assert!(args
            .windows(2)
            .any(|w| w == ["--output-format", "stream-json"]));
        assert!(args.contains(&"--include-partial-messages".to_owned()));
        let (args, _) = Claude.command_line(&CliConfig::default(), &Call::default());
        assert!(args.windows(2).any(|w| w == ["--output-format", "json"]));
        // One result the configuration chose stands (Claude Code refuses its raw events
        // then: "--include-partial-messages requires --print and --output-format=stream-json").
        let chosen = CliConfig {
            args: Some(vec!["--output-format".into(), "json".into()]),
            ..CliConfig::default()
        };
        let (args, _) = Claude.command_line(&chosen, &metered);
        assert!(!args.contains(&"--include-partial-messages".to_owned()));
    }
}

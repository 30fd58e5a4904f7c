//! Claude Code, headless: `claude -p --output-format json … -- <prompt>`.
//!
//! Output: one JSON object, `{"type":"result", "subtype":"success"|"error_…",
//! "is_error":bool, "result":"<final text>", "session_id":…, "total_cost_usd":…,
//! "usage":{…}, "modelUsage":{<model>:{…}}, "permission_denials":[{"tool_name":…,
//! "tool_input":{…}}], "structured_output":{…}}`. With `--verbose` some versions print the
//! whole message array, and `--output-format stream-json` prints one message per line; the
//! last `result` element is the one read either way.
//!
//! An API failure is `is_error: true` with `subtype: "success"`: the message is in `result`
//! (and `api_error`), which is what gets journaled.
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
    agent_args, allowed_prefixes, configured_value, dashed, json_values, nested,
    whole_command_problem, whole_stdout, Adapter, Call,
};
use super::{verdict_word, AgentResult, ModelUsage};
use crate::config::CliConfig;
use crate::text::last_chars;

/// The adapter.
pub struct Claude;

impl Adapter for Claude {
    fn name(&self) -> &'static str {
        "claude"
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
        if let (Some(guard), None) = (call.guard, configured_value(cli, &["--settings"])) {
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
        let Some(text) = whole_stdout(result) else {
            return false;
        };
        let Some(value) = json_values(&text)
            .into_iter()
            .flat_map(|v| match v {
                Value::Array(items) => items,
                other => vec![other],
            })
            .rev()
            .find(|v| v["type"] == "result")
        else {
            return false;
        };
        result.final_text = value["result"].as_str().unwrap_or_default().to_owned();
        result.agent_session_id = value["session_id"].as_str().map(str::to_owned);
        result.cost_usd = value["total_cost_usd"].as_f64();
        result.set_usage(usage(&value));
        if value["is_error"].as_bool() == Some(true) {
            result.reported_error = Some(error_message(&value));
        }
        result.budget_spent = value["subtype"] == "error_max_budget_usd";
        if let Some(denials) = value["permission_denials"].as_array() {
            result.permission_denials = denials.iter().map(describe_denial).collect();
        }
        result.verdict = value["structured_output"]["verdict"]
            .as_str()
            .and_then(verdict_word);
        true
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

/// The tokens of every model the session used (subagents included, in `modelUsage`, with
/// what each cost), else the top-level `usage` of a model it does not name. A cache write is
/// input read fresh.
fn usage(value: &Value) -> Vec<ModelUsage> {
    let n = |v: &Value, key: &str| v[key].as_u64().unwrap_or(0);
    match value["modelUsage"].as_object().filter(|m| !m.is_empty()) {
        Some(models) => models
            .iter()
            .map(|(model, m)| ModelUsage {
                model: Some(model.clone()),
                input: n(m, "inputTokens") + n(m, "cacheCreationInputTokens"),
                cached: n(m, "cacheReadInputTokens"),
                output: n(m, "outputTokens"),
                usd: m["costUSD"].as_f64(),
            })
            .collect(),
        None if value["usage"].is_object() => {
            let usage = &value["usage"];
            vec![ModelUsage {
                model: None,
                input: n(usage, "input_tokens") + n(usage, "cache_creation_input_tokens"),
                cached: n(usage, "cache_read_input_tokens"),
                output: n(usage, "output_tokens"),
                usd: None,
            }]
        }
        None => Vec::new(),
    }
}

/// What went wrong, in words: the API's message when there is one (Claude reports an API
/// failure with `subtype: "success"`), else the subtype (`error_max_turns`).
fn error_message(value: &Value) -> String {
    let subtype = value["subtype"].as_str().unwrap_or("error");
    let text = value["result"]
        .as_str()
        .filter(|t| !t.trim().is_empty())
        .or_else(|| value["api_error"].as_str())
        .or_else(|| value["errors"][0].as_str());
    match (subtype, text) {
        ("success", Some(text)) => last_chars(text.trim(), 500),
        (_, Some(text)) => format!("{subtype}: {}", last_chars(text.trim(), 500)),
        (_, None) => subtype.to_owned(),
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

fn describe_denial(denial: &Value) -> String {
    let tool = denial["tool_name"].as_str().unwrap_or("a tool");
    let input = &denial["tool_input"];
    let what = input["command"]
        .as_str()
        .or_else(|| input["file_path"].as_str())
        .map(|s| format!(" ({})", last_chars(s, 200)))
        .unwrap_or_default();
    format!("{tool}{what}")
}

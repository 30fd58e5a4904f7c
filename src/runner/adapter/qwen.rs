//! Qwen Code, headless: `qwen --output-format stream-json … --prompt=<prompt>`.
//!
//! Output: the messages of Claude Code's headless format (see [`result_message`]), one a
//! line as they happen, ending in its result message, whose `stats` are Gemini CLI's (tokens
//! per model); the `init` message names the model, which the result's `usage` does not. An
//! API failure exits 0 with `is_error: true` and the message in `error.message`, so the
//! result is what decides. Each model request's tokens come on the last `assistant` message
//! of its response (a response split by block type leaves the others at zero), so a budget
//! stops it within a request.
//!
//! Qwen Code is a fork of Gemini CLI and keeps its tools and approval modes: `auto-edit`
//! approves file edits and, headless, leaves out every tool that would ask (the shell
//! among them), so the defaults allow the step's test commands, read-only commands and
//! `git add`/`git commit` (`--allowed-tools`), as for Gemini CLI. It reads its provider's
//! key and endpoint from the environment (`OPENAI_*` for an OpenAI-compatible one such as
//! DashScope, `ANTHROPIC_*`, `GEMINI_*`) or its settings in `~/.qwen`.

use std::path::PathBuf;

use serde_json::Value;

use super::{
    agent_args, configured_value, nested, result_message, whole_command_problem, Adapter, Call,
};
use super::{AgentResult, ModelUsage};
use crate::config::CliConfig;

/// The flags that choose its output format.
const OUTPUT_FLAGS: &[&str] = &["--output-format", "-o"];

/// The adapter.
pub struct Qwen;

impl Adapter for Qwen {
    fn name(&self) -> &'static str {
        "qwen"
    }

    fn project_settings(&self) -> &'static [&'static str] {
        // Settings (allowed tools, permissions), commands and extensions.
        &[".qwen/"]
    }

    fn key_variable(&self) -> Option<&'static str> {
        Some("OPENAI_API_KEY")
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("@qwen-code/qwen-code@0.24.4")
    }

    fn env_names(&self) -> &'static [&'static str] {
        &[
            "QWEN_",
            "OPENAI_",
            "DASHSCOPE_",
            "ANTHROPIC_",
            "GEMINI_",
            "GOOGLE_",
        ]
    }

    fn credential_variables(&self) -> &'static [&'static str] {
        &[
            "OPENAI_API_KEY",
            "DASHSCOPE_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
        ]
    }

    fn home_files(&self) -> &'static [&'static str] {
        &[".qwen/settings.json", ".qwen/oauth_creds.json"]
    }

    fn own_sandbox(&self, cli: &CliConfig) -> Option<String> {
        super::gemini_sandbox_flag(cli)
    }

    fn default_args(&self) -> &'static [&'static str] {
        &["--approval-mode", "auto-edit"]
    }

    fn command_line(&self, cli: &CliConfig, call: &Call) -> (Vec<String>, Option<Vec<u8>>) {
        let mut args = agent_args(
            super::output_format(cli, OUTPUT_FLAGS, &["--output-format", "stream-json"]),
            self,
            cli,
            call,
        );
        if cli.args.is_none() {
            args.extend(
                super::gemini::allowed_tools(call.allowed_commands)
                    .into_iter()
                    .map(|rule| format!("--allowed-tools={rule}")),
            );
        }
        // One argument, `--prompt=…`: a prompt starting with `-` stays a prompt (after `--`
        // it would be no prompt at all: it reads stdin then).
        args.push(format!("--prompt={}", call.prompt));
        (args, None)
    }

    fn acp_args(&self, cli: &CliConfig) -> Option<Vec<String>> {
        super::acp_with(&["--acp"], cli)
    }

    fn acp_model_flag(&self) -> Option<&'static str> {
        Some("--model")
    }

    fn acp_uncounted(&self) -> Option<&'static str> {
        Some("Qwen Code extracts memories in the background after each turn and reports those tokens to no client")
    }

    fn structured(&self) -> bool {
        true
    }

    fn names_models(&self) -> bool {
        true
    }

    /// The usage of an `assistant` message: its input counts the cached part. Zero is no
    /// request (the earlier part of a split response, or a subagent's message: those carry
    /// none, and the result counts their tokens).
    fn request_usage(&self, event: &Value) -> Option<ModelUsage> {
        let message = &event["message"];
        if event["type"] != "assistant" {
            return None;
        }
        let n = |key: &str| message["usage"][key].as_u64().unwrap_or(0);
        let (input, cached, output) = (
            n("input_tokens"),
            n("cache_read_input_tokens"),
            n("output_tokens"),
        );
        (input + output > 0).then(|| ModelUsage {
            model: message["model"].as_str().map(str::to_owned),
            input: input.saturating_sub(cached),
            cached,
            output,
            usd: None,
        })
    }

    fn read_output(&self, result: &mut AgentResult) -> bool {
        let messages = result_message::messages(result);
        if !result_message::read(result, &messages) {
            // Stopped before its result (by a budget): what each request reported. Still no
            // result: ended so on its own, it did not say whether it succeeded.
            let mut usage = Vec::new();
            for message in &messages {
                super::add_request(&mut usage, self.request_usage(message));
            }
            result.agent_session_id = messages
                .iter()
                .find_map(|m| m["session_id"].as_str().map(str::to_owned));
            result.usage = usage;
            return false;
        }
        // Its `usage` counts the cached part in `input_tokens`, unlike Claude Code's; its
        // `stats` (Gemini CLI's) has the tokens per model.
        let last = messages.iter().rev().find(|m| m["type"] == "result");
        match last.and_then(|m| super::gemini::stats_usage(&m["stats"])) {
            Some(usage) => result.usage = usage,
            None => {
                for model in &mut result.usage {
                    model.input = model.input.saturating_sub(model.cached);
                }
            }
        }
        result.name_usage(result_message::init_model(&messages).as_deref());
        true
    }

    fn command_files(&self, name: &str) -> Vec<PathBuf> {
        vec![
            PathBuf::from(format!(".qwen/commands/{}.toml", nested(name))),
            PathBuf::from(format!(".qwen/commands/{}.md", nested(name))),
            PathBuf::from(format!(".qwen/skills/{name}/SKILL.md")),
        ]
    }

    fn config_problems(&self, cli: &CliConfig) -> Vec<String> {
        let mut problems: Vec<String> = whole_command_problem(self.name(), cli)
            .into_iter()
            .collect();
        if let Some(format) =
            configured_value(cli, OUTPUT_FLAGS).filter(|f| !matches!(*f, "json" | "stream-json"))
        {
            problems.push(format!(
                "runners.qwen.args: `--output-format {format}` would hide Qwen Code's errors, denials and tokens from git-bmad; leave the output format to it (stream-json)"
            ));
        }
        problems
    }
}

//! Pi (`@mariozechner/pi-coding-agent`), headless: `pi -p --mode json …`, the prompt on
//! stdin (as an argument, one starting with `-` would be an option and one starting with
//! `@` a file to attach).
//!
//! Output: one JSON event per line. Each assistant message ends with `message_end`, naming
//! its provider and model, its `usage` (`input`, `output`, `cacheRead`, `cacheWrite`) and
//! `stopReason`; a failed request is `stopReason: "error"` with `errorMessage`, retried by
//! itself (`auto_retry_start`), and the process exits 0 either way, so the last assistant
//! message is what decides.
//!
//! Pi has no permission prompts: every tool (read, bash, edit, write) runs. What stands
//! between it and the repository is git-bmad's walls and hooks.

use std::path::PathBuf;

use serde_json::Value;

use super::{agent_args, whole_command_problem, Adapter, Call};
use super::{AgentResult, ModelUsage};
use crate::config::CliConfig;

/// The adapter.
pub struct Pi;

impl Adapter for Pi {
    fn name(&self) -> &'static str {
        "pi"
    }

    fn project_settings(&self) -> &'static [&'static str] {
        // Settings and extensions (code it loads).
        &[".pi/"]
    }

    fn key_variable(&self) -> Option<&'static str> {
        Some("ANTHROPIC_API_KEY")
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("@mariozechner/pi-coding-agent@0.73.1")
    }

    fn env_names(&self) -> &'static [&'static str] {
        any_provider!(env "PI_")
    }

    fn credential_variables(&self) -> &'static [&'static str] {
        any_provider!(keys "ANTHROPIC_OAUTH_TOKEN")
    }

    fn home_files(&self) -> &'static [&'static str] {
        &[
            ".pi/agent/settings.json",
            ".pi/agent/models.json",
            ".pi/agent/auth.json",
        ]
    }

    fn command_line(&self, cli: &CliConfig, call: &Call) -> (Vec<String>, Option<Vec<u8>>) {
        let args = agent_args(&["-p", "--mode", "json"], self, cli, call);
        (args, Some(call.prompt.as_bytes().to_vec()))
    }

    fn env(&self) -> &'static [(&'static str, &'static str)] {
        // No version check or other startup request: nothing but the model is reached.
        &[("PI_OFFLINE", "1"), ("PI_SKIP_VERSION_CHECK", "1")]
    }

    fn structured(&self) -> bool {
        true
    }

    fn names_models(&self) -> bool {
        true
    }

    /// Each assistant message is one model request, with its model and tokens: a cache
    /// write is read fresh.
    fn request_usage(&self, event: &Value) -> Option<ModelUsage> {
        let message = &event["message"];
        if event["type"] != "message_end" || message["role"] != "assistant" {
            return None;
        }
        let n = |key: &str| message["usage"][key].as_u64().unwrap_or(0);
        Some(ModelUsage {
            model: message["model"].as_str().map(str::to_owned),
            input: n("input") + n("cacheWrite"),
            cached: n("cacheRead"),
            output: n("output"),
            usd: None,
        })
    }

    fn read_output(&self, result: &mut AgentResult) -> bool {
        let events = super::json_events(result);
        if events.is_empty() {
            return false;
        }
        let mut usage: Vec<ModelUsage> = Vec::new();
        for event in &events {
            match event["type"].as_str().unwrap_or_default() {
                "session" => result.agent_session_id = event["id"].as_str().map(str::to_owned),
                "message_end" if event["message"]["role"] == "assistant" => {
                    let message = &event["message"];
                    super::add_request(&mut usage, self.request_usage(event));
                    result.final_text = text_of(message);
                    // A later answer means a failed request was retried and recovered.
                    result.reported_error = (message["stopReason"] == "error").then(|| {
                        let said = message["errorMessage"].as_str().unwrap_or("error");
                        said.to_owned()
                    });
                }
                _ => {}
            }
        }
        result.usage = usage;
        true
    }

    fn command_files(&self, name: &str) -> Vec<PathBuf> {
        vec![
            PathBuf::from(format!(".pi/prompts/{name}.md")),
            PathBuf::from(format!(".pi/skills/{name}/SKILL.md")),
        ]
    }

    fn config_problems(&self, cli: &CliConfig) -> Vec<String> {
        let mut problems: Vec<String> = whole_command_problem(self.name(), cli)
            .into_iter()
            .collect();
        if let Some(mode) = super::configured_value(cli, &["--mode"]).filter(|m| *m != "json") {
            problems.push(format!(
                "runners.pi.args: `--mode {mode}` would hide Pi's errors and tokens from git-bmad; leave the mode to it (json)"
            ));
        }
        problems
    }
}

/// The text blocks of a message, joined.
fn text_of(message: &Value) -> String {
    let blocks = message["content"].as_array().into_iter().flatten();
    blocks
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

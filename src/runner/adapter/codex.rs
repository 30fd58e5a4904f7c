//! OpenAI Codex CLI, headless: `codex exec --json … -- <prompt>`.
//!
//! Output: JSON lines, `{"type":"thread.started","thread_id":…}`,
//! `{"type":"item.completed","item":{"type":"agent_message","text":…}}`,
//! `{"type":"turn.completed","usage":{"input_tokens":…,"output_tokens":…}}`,
//! `{"type":"turn.failed","error":{"message":…}}`, `{"type":"error","message":…}`.
//!
//! Uncontained, its default sandbox, `workspace-write`, keeps every `.git` read-only, so an
//! agent cannot commit in a session worktree (`--add-dir` of the git directory does not lift
//! that); git-bmad's checkpoints keep its work. Contained by git-bmad, it runs without its
//! own sandbox (which cannot start inside another) and commits like the others.
//!
//! An `error` line is not always the end: while Codex retries a dropped stream it prints
//! `{"type":"error","message":"Reconnecting... 1/5 …"}` and may then finish the turn. So an
//! error counts only when no turn completed after it.

use std::path::PathBuf;

use serde_json::Value;

use super::{agent_args, dashed, Adapter, Call};
use super::{AgentResult, ModelUsage};
use crate::config::CliConfig;

/// The adapter.
pub struct Codex;

impl Adapter for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn project_settings(&self) -> &'static [&'static str] {
        // Its project `config.toml` (approval and sandbox policy).
        &[".codex/"]
    }

    fn key_variable(&self) -> Option<&'static str> {
        Some("OPENAI_API_KEY")
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("@openai/codex@0.169.0")
    }

    fn default_args(&self) -> &'static [&'static str] {
        &["--sandbox", "workspace-write"]
    }

    fn contained_args(&self) -> &'static [&'static str] {
        // Its own sandbox (bubblewrap or Landlock) cannot start inside git-bmad's: every
        // tool call would fail while the model still reports done.
        &["--sandbox", "danger-full-access"]
    }

    fn env_names(&self) -> &'static [&'static str] {
        &["OPENAI_", "CODEX_"]
    }

    fn credential_variables(&self) -> &'static [&'static str] {
        &["OPENAI_API_KEY", "CODEX_API_KEY"]
    }

    fn own_sandbox(&self, cli: &CliConfig) -> Option<String> {
        let args = cli.args.as_deref().unwrap_or_default();
        if args.iter().any(|a| a == "--full-auto") {
            return Some("--full-auto".into());
        }
        super::configured_value(cli, &["--sandbox", "-s"])
            .filter(|mode| *mode != "danger-full-access")
            .map(|mode| format!("--sandbox {mode}"))
    }

    fn home_files(&self) -> &'static [&'static str] {
        &[".codex/auth.json", ".codex/config.toml"]
    }

    fn command_line(&self, cli: &CliConfig, call: &Call) -> (Vec<String>, Option<Vec<u8>>) {
        let mut args = agent_args(&["exec", "--json"], self, cli, call);
        args.extend(["--".into(), call.prompt.to_owned()]);
        (args, None)
    }

    fn structured(&self) -> bool {
        true
    }

    fn configured_model<'c>(&self, cli: &'c CliConfig) -> Option<&'c str> {
        // `-c model=…` (a TOML value) sets it too; the last setting wins, as in the CLI.
        let args = cli.args.as_deref().unwrap_or_default();
        let mut model = None;
        for (i, arg) in args.iter().enumerate() {
            let next = args.get(i + 1).map(String::as_str);
            let value = match arg.as_str() {
                "--model" | "-m" => next,
                "-c" | "--config" => next.and_then(model_setting),
                other => other
                    .strip_prefix("--model=")
                    .or_else(|| other.strip_prefix("--config=").and_then(model_setting)),
            };
            model = value.or(model);
        }
        model
    }

    fn read_output(&self, result: &mut AgentResult) -> bool {
        let events = super::json_events(result);
        // Summed over its turns; it names no model.
        let mut usage: Option<ModelUsage> = None;
        for event in &events {
            match event["type"].as_str().unwrap_or_default() {
                "thread.started" => {
                    result.agent_session_id = event["thread_id"].as_str().map(str::to_owned);
                }
                "item.completed" if event["item"]["type"] == "agent_message" => {
                    if let Some(text) = event["item"]["text"].as_str() {
                        result.final_text = text.to_owned();
                    }
                }
                "turn.completed" => {
                    // Whatever failed before was retried and recovered.
                    result.reported_error = None;
                    // Its input counts the cached part too.
                    let n = |key: &str| event["usage"][key].as_u64().unwrap_or(0);
                    let cached = n("cached_input_tokens");
                    let usage = usage.get_or_insert_with(ModelUsage::default);
                    usage.input += n("input_tokens").saturating_sub(cached);
                    usage.cached += cached;
                    usage.output += n("output_tokens");
                }
                "turn.failed" => {
                    result.reported_error = event["error"]["message"]
                        .as_str()
                        .map(str::to_owned)
                        .or(Some("turn failed".into()));
                }
                "error" if is_reconnecting(event) => {}
                "error" => {
                    result.reported_error = event["message"]
                        .as_str()
                        .map(str::to_owned)
                        .or(Some("error".into()));
                }
                _ => {}
            }
        }
        result.usage.extend(usage);
        !events.is_empty()
    }

    fn command_files(&self, name: &str) -> Vec<PathBuf> {
        let prompt = name.strip_prefix("prompts:").unwrap_or(name);
        vec![
            PathBuf::from(format!(".codex/prompts/{prompt}.md")),
            PathBuf::from(format!(".agents/skills/{name}/SKILL.md")),
            PathBuf::from(format!(".agents/skills/{}/SKILL.md", dashed(name))),
        ]
    }
}

/// `Reconnecting... 2/5 (…)`: a retry in progress, not a failure.
fn is_reconnecting(event: &Value) -> bool {
    event["message"]
        .as_str()
        .is_some_and(|m| m.trim_start().starts_with("Reconnecting"))
}

/// The model a `-c` setting names (`model="gpt-5"`), if it is that setting.
fn model_setting(setting: &str) -> Option<&str> {
    let value = setting
        .strip_prefix("model")?
        .trim_start()
        .strip_prefix('=')?;
    Some(value.trim().trim_matches(['"', '\'']))
}

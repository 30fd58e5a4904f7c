//! Claude Code, headless: `claude -p <prompt> --output-format json`.
//!
//! Output: one JSON object, `{"type":"result", "subtype":"success"|"error_…",
//! "is_error":bool, "result":"<final text>", "session_id":…, "total_cost_usd":…,
//! "usage":{"input_tokens":…,"output_tokens":…}, "permission_denials":[{"tool_name":…,
//! "tool_input":{…}}], "structured_output":{…}}`; with `--verbose` some versions print the
//! whole message array, whose last `result` element is the one read.

use std::path::PathBuf;

use serde_json::Value;

use super::{agent_args, dashed, nested, whole_stdout, Adapter};
use crate::config::CliConfig;
use crate::runner::agent::{verdict_word, AgentResult};
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

    fn default_args(&self) -> &'static [&'static str] {
        &["--permission-mode", "acceptEdits"]
    }

    fn command_line(
        &self,
        cli: &CliConfig,
        prompt: &str,
        model: Option<&str>,
    ) -> (Vec<String>, Option<Vec<u8>>) {
        (
            agent_args(&["-p", prompt, "--output-format", "json"], self, cli, model),
            None,
        )
    }

    fn read_output(&self, result: &mut AgentResult) -> bool {
        let Some(text) = whole_stdout(result) else {
            return false;
        };
        let value: Value = match serde_json::from_str(text.trim()) {
            Ok(Value::Array(items)) => {
                match items.into_iter().rev().find(|v| v["type"] == "result") {
                    Some(v) => v,
                    None => return false,
                }
            }
            Ok(v @ Value::Object(_)) => v,
            _ => return false,
        };
        result.final_text = value["result"].as_str().unwrap_or_default().to_owned();
        result.agent_session_id = value["session_id"].as_str().map(str::to_owned);
        result.cost_usd = value["total_cost_usd"].as_f64();
        result.tokens_in = value["usage"]["input_tokens"].as_u64();
        result.tokens_out = value["usage"]["output_tokens"].as_u64();
        if value["is_error"].as_bool() == Some(true) {
            let subtype = value["subtype"].as_str().unwrap_or("error");
            result.reported_error = Some(subtype.to_owned());
        }
        if let Some(denials) = value["permission_denials"].as_array() {
            result.permission_denials = denials.iter().map(describe_denial).collect();
        }
        result.verdict = value["structured_output"]["verdict"]
            .as_str()
            .and_then(verdict_word);
        true
    }

    fn command_files(&self, name: &str) -> Vec<PathBuf> {
        vec![
            PathBuf::from(format!(".claude/commands/{}.md", nested(name))),
            PathBuf::from(format!(".claude/skills/{name}/SKILL.md")),
            PathBuf::from(format!(".claude/skills/{}/SKILL.md", dashed(name))),
        ]
    }
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

//! Gemini CLI, headless: `gemini -p <prompt> --output-format json`.
//!
//! Output: one JSON object, `{"response":…, "stats":{"models":{"<model>":{"tokens":
//! {"prompt":…,"candidates":…}}}}, "error":{…}}`; exit 42 is bad input, 53 the turn limit.

use std::path::PathBuf;

use serde_json::Value;

use super::{agent_args, nested, whole_stdout, Adapter};
use crate::config::CliConfig;
use crate::runner::agent::AgentResult;

/// The adapter.
pub struct Gemini;

impl Adapter for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn key_variable(&self) -> Option<&'static str> {
        Some("GEMINI_API_KEY")
    }

    fn default_args(&self) -> &'static [&'static str] {
        &["--approval-mode", "auto_edit"]
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
        let Ok(value) = serde_json::from_str::<Value>(text.trim()) else {
            return false;
        };
        if !value.is_object() {
            return false;
        }
        result.final_text = value["response"].as_str().unwrap_or_default().to_owned();
        if let Some(models) = value["stats"]["models"].as_object() {
            let sum = |field: &str| {
                models
                    .values()
                    .filter_map(|m| m["tokens"][field].as_u64())
                    .sum::<u64>()
            };
            result.tokens_in = Some(sum("prompt"));
            result.tokens_out = Some(sum("candidates"));
        }
        if value["error"].is_object() {
            result.reported_error = Some(
                value["error"]["message"]
                    .as_str()
                    .unwrap_or("error")
                    .to_owned(),
            );
        }
        true
    }

    fn command_files(&self, name: &str) -> Vec<PathBuf> {
        vec![PathBuf::from(format!(
            ".gemini/commands/{}.toml",
            nested(name)
        ))]
    }
}

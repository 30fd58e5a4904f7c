//! Gemini CLI, headless: `gemini --prompt=<prompt> --output-format json`.
//!
//! Output: one JSON object, `{"response":…, "stats":{"models":{"<model>":{"tokens":
//! {"prompt":…,"candidates":…}}}}, "error":{…}}`; exit 42 is bad input, 53 the turn limit.
//! When it fails before the model answers (authentication, a bad flag) the error object is
//! printed on stderr instead, so that is read too.
//!
//! That object comes at its end only; each request's tokens it records, as the request
//! ends, to the file `--record-responses` names (a line each: `{"method":
//! "generateContentStream","response":[{…,"usageMetadata":{"promptTokenCount",
//! "cachedContentTokenCount","candidatesTokenCount","thoughtsTokenCount"}}]}`), which
//! git-bmad reads as it grows: a budget stops it within a request.
//!
//! `auto_edit` approves file edits and refuses every other tool call headless, silently, so
//! the defaults allow the step's test commands, read-only commands and `git add`/`git
//! commit` (`--allowed-tools`), as for Claude Code.
//!
//! Gemini CLI refuses to act in a folder the user has not trusted (exit 55, or approval
//! mode forced back to `default`), and every session worktree is a new folder: git-bmad
//! trusts the worktree it made for this one run (`GEMINI_CLI_TRUST_WORKSPACE`), which
//! writes nothing to the user's trusted-folders list.

use std::path::PathBuf;

use serde_json::Value;

use super::{
    agent_args, allowed_prefixes, configured_value, json_values, nested, whole_command_problem,
    whole_stdout, Adapter, Call,
};
use super::{AgentResult, ModelUsage};
use crate::config::CliConfig;

/// The flags that choose its output format.
const OUTPUT_FLAGS: &[&str] = &["--output-format", "-o"];

/// The adapter.
pub struct Gemini;

impl Adapter for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn project_settings(&self) -> &'static [&'static str] {
        // Settings (allowed tools, hooks, MCP servers), commands and extensions.
        &[".gemini/"]
    }

    fn key_variable(&self) -> Option<&'static str> {
        Some("GEMINI_API_KEY")
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("@google/gemini-cli@0.61.0")
    }

    fn env_names(&self) -> &'static [&'static str] {
        &["GEMINI_", "GOOGLE_"]
    }

    fn credential_variables(&self) -> &'static [&'static str] {
        &["GEMINI_API_KEY", "GOOGLE_API_KEY"]
    }

    fn own_sandbox(&self, cli: &CliConfig) -> Option<String> {
        super::gemini_sandbox_flag(cli)
    }

    fn home_files(&self) -> &'static [&'static str] {
        &[
            ".gemini/settings.json",
            ".gemini/oauth_creds.json",
            ".gemini/google_accounts.json",
        ]
    }

    fn default_args(&self) -> &'static [&'static str] {
        &["--approval-mode", "auto_edit"]
    }

    fn command_line(&self, cli: &CliConfig, call: &Call) -> (Vec<String>, Option<Vec<u8>>) {
        let mut args = agent_args(
            super::output_format(cli, OUTPUT_FLAGS, &["--output-format", "json"]),
            self,
            cli,
            call,
        );
        if let Some(log) = call.usage_log {
            args.push(format!("--record-responses={}", log.display()));
        }
        // One `--allowed-tools=…` per rule: a bare value after the flag can be read as the
        // positional prompt.
        if cli.args.is_none() {
            args.extend(
                allowed_tools(call.allowed_commands)
                    .into_iter()
                    .map(|rule| format!("--allowed-tools={rule}")),
            );
        }
        // One argument, `--prompt=…`: a prompt starting with `-` stays a prompt.
        args.push(format!("--prompt={}", call.prompt));
        (args, None)
    }

    fn env(&self) -> &'static [(&'static str, &'static str)] {
        &[("GEMINI_CLI_TRUST_WORKSPACE", "true")]
    }

    fn acp_args(&self, cli: &CliConfig) -> Option<Vec<String>> {
        super::acp_with(&["--acp"], cli)
    }

    fn acp_model_flag(&self) -> Option<&'static str> {
        Some("--model")
    }

    fn acp_uncounted(&self) -> Option<&'static str> {
        None
    }

    fn structured(&self) -> bool {
        true
    }

    fn names_models(&self) -> bool {
        true
    }

    fn logs_usage(&self) -> Option<super::LogsUsage> {
        // Its final `stats` are its account; the record is read where a budget meters it.
        Some(super::LogsUsage::ToNamedFile {
            its_only_account: false,
        })
    }

    fn request_usage(&self, record: &Value) -> Option<ModelUsage> {
        let method = record["method"].as_str()?;
        if !method.starts_with("generateContent") {
            return None;
        }
        // A stream's chunks each carry the counts so far; the last that has them, all.
        let chunks = match &record["response"] {
            Value::Array(chunks) => chunks.iter().collect(),
            one => vec![one],
        };
        let counts = chunks
            .into_iter()
            .rev()
            .map(|c| &c["usageMetadata"])
            .find(|u| u.is_object())?;
        let n = |key: &str| counts[key].as_u64().unwrap_or(0);
        Some(ModelUsage {
            model: None,
            input: n("promptTokenCount").saturating_sub(n("cachedContentTokenCount")),
            cached: n("cachedContentTokenCount"),
            output: n("candidatesTokenCount") + n("thoughtsTokenCount"),
            usd: None,
        })
    }

    fn read_output(&self, result: &mut AgentResult) -> bool {
        let object = |text: &str| json_values(text).into_iter().find(Value::is_object);
        let said = String::from_utf8_lossy(&result.stderr.tail()).into_owned();
        let value = match whole_stdout(result).and_then(|t| object(&t)) {
            Some(value) => value,
            None => match object(&said) {
                Some(value) if value["error"].is_object() => value,
                _ => {
                    if said.contains("Unknown arguments: record-responses") {
                        result.reported_error = Some(format!(
                            "Gemini CLI is older than 0.12, the first to record each request's tokens (`--record-responses`), which a budget reads as it runs; update it: npm install -g {}",
                            self.npm_package().unwrap_or("@google/gemini-cli")
                        ));
                    }
                    return false;
                }
            },
        };
        result.final_text = value["response"].as_str().unwrap_or_default().to_owned();
        if let Some(usage) = stats_usage(&value["stats"]) {
            result.usage = usage;
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

    fn config_problems(&self, cli: &CliConfig) -> Vec<String> {
        let mut problems: Vec<String> = whole_command_problem(self.name(), cli)
            .into_iter()
            .collect();
        if let Some(format) = configured_value(cli, OUTPUT_FLAGS).filter(|f| *f != "json") {
            problems.push(format!(
                "runners.gemini.args: `--output-format {format}` would hide Gemini's errors and denials from git-bmad; leave the output format to it (json)"
            ));
        }
        let headless = cli.protocol != crate::config::Protocol::Acp;
        if configured_value(cli, &["--record-responses"]).is_some() && headless {
            problems.push(
                "runners.gemini.args: `--record-responses` is git-bmad's: it names the file each request's tokens are read from as Gemini CLI runs; drop it".to_owned(),
            );
        }
        problems
    }
}

/// Gemini CLI's rules for the allowed prefixes (it matches a shell command by prefix), which
/// Qwen Code takes too.
pub(super) fn allowed_tools(tests: &[String]) -> Vec<String> {
    allowed_prefixes(tests)
        .into_iter()
        .map(|p| format!("run_shell_command({p})"))
        .collect()
}

/// The tokens per model of Gemini CLI's `stats` (which Qwen Code prints too): its prompt
/// counts the cached part; thoughts are billed as output.
pub(super) fn stats_usage(stats: &Value) -> Option<Vec<ModelUsage>> {
    let models = stats["models"].as_object()?;
    let usage = models.iter().map(|(model, m)| {
        let n = |key: &str| m["tokens"][key].as_u64().unwrap_or(0);
        ModelUsage {
            model: Some(model.clone()),
            input: n("prompt").saturating_sub(n("cached")),
            cached: n("cached"),
            output: n("candidates") + n("thoughts"),
            usd: None,
        }
    });
    Some(usage.collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Gemini CLI 0.61.0 records of a streamed request: each chunk with the counts so
    /// far (100 fresh, 1,000 cached, 20 out, 5 thoughts at the end).
    #[test]
    fn each_request_comes_from_its_recorded_responses() {
        let record = serde_json::json!({"method": "generateContentStream", "response": [
            {"candidates": [{"content": {"parts": [{"text": "I'll"}]}}],
             "usageMetadata": {"promptTokenCount": 1100, "cachedContentTokenCount": 1000}},
            {"candidates": [{"content": {"parts": [{"text": " write it."}]}}]},
            {"candidates": [], "usageMetadata": {"promptTokenCount": 1100,
                "cachedContentTokenCount": 1000, "candidatesTokenCount": 20,
                "thoughtsTokenCount": 5, "totalTokenCount": 1125}}]});
        let request = Gemini.request_usage(&record).unwrap();
        assert_eq!(
            (request.model, request.input, request.cached, request.output),
            (None, 100, 1000, 25)
        );
        let single = serde_json::json!({"method": "generateContent", "response":
            {"usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3}}});
        assert_eq!(Gemini.request_usage(&single).unwrap().output, 3);
        // Counting tokens is no model request; nor is its final JSON.
        let count = serde_json::json!({"method": "countTokens", "response": {"totalTokens": 9}});
        assert!(Gemini.request_usage(&count).is_none());
        let end = serde_json::json!({"response": "ok", "stats": {"models": {}}});
        assert!(Gemini.request_usage(&end).is_none());
    }

    /// What Gemini CLI 0.10.0 says to `--record-responses` (exit 1, on stderr, its usage
    /// after it).
    #[test]
    fn a_gemini_cli_too_old_to_record_its_requests_is_told_to_update() {
        let result = crate::runner::interpret(
            crate::runner::Kind::parse("gemini").unwrap(),
            crate::runner::Exit::Code(1),
            crate::runner::Captured::default(),
            crate::runner::Captured::from_bytes(
                b"Unknown arguments: record-responses, recordResponses\nUsage: gemini [options] [command]\n",
            ),
            10,
        );
        let error = result.reported_error.unwrap_or_default();
        assert!(
            error.starts_with("Gemini CLI is older than 0.12")
                && error.ends_with("npm install -g @google/gemini-cli@0.61.0"),
            "{error}"
        );
    }

    #[test]
    fn its_record_of_responses_is_git_bmads_to_name() {
        let call = Call {
            prompt: "p",
            usage_log: Some(std::path::Path::new("/tmp/bmad-usage-x/usage.jsonl")),
            ..Call::default()
        };
        let (args, _) = Gemini.command_line(&CliConfig::default(), &call);
        assert!(args.contains(&"--record-responses=/tmp/bmad-usage-x/usage.jsonl".to_owned()));
        assert_eq!(args.last().unwrap(), "--prompt=p");
        let cli = CliConfig {
            args: Some(vec!["--record-responses".into(), "/tmp/mine".into()]),
            ..CliConfig::default()
        };
        let problems = Gemini.config_problems(&cli);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let acp = CliConfig {
            protocol: crate::config::Protocol::Acp,
            ..cli
        };
        assert!(Gemini.config_problems(&acp).is_empty());
    }
}

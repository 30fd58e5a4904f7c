//! GitHub Copilot CLI, headless: `copilot --output-format json --no-ask-user … --prompt=<prompt>`;
//! and over ACP (`copilot --acp`), where it asks git-bmad before every command.
//!
//! Output: one JSON event per line. `assistant.message` carries each model turn's text and
//! model; `session.error` an error; the last line, `result`, the session id, the exit code
//! and `usage.premiumRequests` (GitHub's own unit). It prints no token counts, but announces
//! each model request (`model.call_final_result`); what each used it exports, as the request
//! ends, to the OpenTelemetry file `COPILOT_OTEL_FILE_EXPORTER_PATH` names (a `chat` span a
//! line: `gen_ai.usage.input_tokens` with the cache's reads and writes in it,
//! `…cache_read.input_tokens`, `…output_tokens`, `gen_ai.response.model`), so headless a
//! budget stops it within a request, as OpenCode's. Over ACP it reports every request's
//! tokens in the prompt's `usage`.
//!
//! Headless it runs no tool that would ask unless told: its defaults allow every tool
//! (`--allow-all-tools`, which its prompt mode requires) except pushing, which git-bmad does
//! itself; the walls and hooks hold the rest. It reads GitHub's login (`~/.copilot`,
//! `COPILOT_GITHUB_TOKEN`), or a provider of the user's own (`COPILOT_PROVIDER_*`,
//! `COPILOT_MODEL`; `COPILOT_OFFLINE` keeps it off GitHub's servers).

use std::path::PathBuf;

use serde_json::Value;

use super::{agent_args, whole_command_problem, Adapter, AgentResult, Call, ModelUsage};
use crate::config::{CliConfig, Protocol};

/// The adapter.
pub struct Copilot;

impl Adapter for Copilot {
    fn name(&self) -> &'static str {
        "copilot"
    }

    fn project_settings(&self) -> &'static [&'static str] {
        // Hooks (which may allow a tool call), agents and skills (their tool lists), MCP
        // servers; it reads `.claude/`'s skills, commands and agents too.
        &[
            ".github/hooks/",
            ".github/agents/",
            ".github/skills/",
            ".agents/skills/",
            ".mcp.json",
            ".vscode/mcp.json",
        ]
    }

    fn key_variable(&self) -> Option<&'static str> {
        Some("COPILOT_GITHUB_TOKEN")
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("@github/copilot@1.0.102")
    }

    fn env_names(&self) -> &'static [&'static str] {
        &["COPILOT_"]
    }

    fn credential_variables(&self) -> &'static [&'static str] {
        &[
            "COPILOT_GITHUB_TOKEN",
            "COPILOT_PROVIDER_API_KEY",
            "COPILOT_PROVIDER_BEARER_TOKEN",
        ]
    }

    fn home_files(&self) -> &'static [&'static str] {
        &[".copilot/config.json"]
    }

    fn default_args(&self) -> &'static [&'static str] {
        &["--allow-all-tools", "--deny-tool=shell(git push)"]
    }

    fn command_line(&self, cli: &CliConfig, call: &Call) -> (Vec<String>, Option<Vec<u8>>) {
        let head = [
            "--output-format",
            "json",
            "--no-ask-user",
            "--no-auto-update",
        ];
        let mut args = agent_args(&head, self, cli, call);
        // One argument: a prompt starting with `-` stays a prompt.
        args.push(format!("--prompt={}", call.prompt));
        (args, None)
    }

    /// A project's skills, where it loads them from (its `/skills` help: `.github/skills/`,
    /// `.agents/skills/`, `.claude/skills/`); it reads no `.claude/commands/`.
    fn command_files(&self, name: &str) -> Vec<PathBuf> {
        [".github/skills", ".agents/skills", ".claude/skills"]
            .iter()
            .map(|dir| PathBuf::from(format!("{dir}/{name}/SKILL.md")))
            .collect()
    }

    fn acp_args(&self, cli: &CliConfig) -> Option<Vec<String>> {
        super::acp_with(&["--acp", "--no-auto-update"], cli)
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

    fn logs_usage(&self) -> Option<super::LogsUsage> {
        Some(super::LogsUsage::ToNamedFile {
            its_only_account: true,
        })
    }

    fn call_env(&self, _cli: &CliConfig, call: &Call) -> Vec<(String, String)> {
        // Its file exporter, in place of any exporter the user's environment chose: the
        // budget reads this one.
        let Some(log) = call.usage_log else {
            return Vec::new();
        };
        [
            ("COPILOT_OTEL_ENABLED", "true".to_owned()),
            ("COPILOT_OTEL_EXPORTER_TYPE", "file".to_owned()),
            ("COPILOT_OTEL_FILE_EXPORTER_PATH", log.display().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    fn request_usage(&self, event: &Value) -> Option<ModelUsage> {
        let span = &event["attributes"];
        if event["type"] != "span" || span["gen_ai.operation.name"] != "chat" {
            return None;
        }
        let count = |key: &str| span[key].as_u64().unwrap_or(0);
        let cached = count("gen_ai.usage.cache_read.input_tokens");
        let model = span["gen_ai.response.model"]
            .as_str()
            .or(span["gen_ai.request.model"].as_str());
        Some(ModelUsage {
            model: model.map(str::to_owned),
            input: count("gen_ai.usage.input_tokens").saturating_sub(cached),
            cached,
            output: count("gen_ai.usage.output_tokens"),
            usd: None,
        })
    }

    fn requests_announced(&self, result: &AgentResult) -> Option<usize> {
        let events = super::json_events(result);
        let announced = events
            .iter()
            .filter(|e| e["type"] == "model.call_final_result");
        Some(announced.count())
    }

    fn names_models(&self) -> bool {
        true
    }

    fn spends_premium_requests(&self) -> bool {
        true
    }

    fn read_output(&self, result: &mut AgentResult) -> bool {
        let events = super::json_events(result);
        let Some(end) = events.iter().rev().find(|e| e["type"] == "result") else {
            return false;
        };
        result.agent_session_id = end["sessionId"].as_str().map(str::to_owned);
        result.premium_requests = end["usage"]["premiumRequests"].as_f64();
        let said = |e: &&Value| e["data"]["content"].as_str().is_some_and(|t| !t.is_empty());
        if let Some(last) = events
            .iter()
            .filter(|e| e["type"] == "assistant.message")
            .rfind(said)
        {
            result.final_text =
                crate::text::last_chars(last["data"]["content"].as_str().unwrap_or_default(), 4000);
        }
        if let Some(error) = events.iter().rev().find(|e| e["type"] == "session.error") {
            result.reported_error = Some(
                error["data"]["message"]
                    .as_str()
                    .unwrap_or("an error with no message")
                    .to_owned(),
            );
        }
        for denied in events.iter().filter(|e| {
            e["type"] == "tool.execution_complete" && e["data"]["success"] == false && {
                let said = e["data"]["error"].to_string().to_ascii_lowercase();
                said.contains("denied") || said.contains("not permitted")
            }
        }) {
            result
                .permission_denials
                .push(denied["data"]["error"].to_string());
        }
        true
    }

    fn config_problems(&self, cli: &CliConfig) -> Vec<String> {
        let mut problems: Vec<String> = whole_command_problem(self.name(), cli)
            .into_iter()
            .collect();
        if let Some(format) =
            super::configured_value(cli, &["--output-format"]).filter(|f| *f != "json")
        {
            problems.push(format!(
                "runners.copilot.args: `--output-format {format}` would hide Copilot CLI's errors from git-bmad; leave the output format to it (json)"
            ));
        }
        // Over ACP it asks git-bmad before each tool call, unless told ahead that it may.
        let ahead = given_flag(
            cli,
            &["--allow-all-tools", "--allow-all", "--yolo", "--allow-tool"],
        );
        if let Some(flag) = ahead.filter(|_| cli.protocol == Protocol::Acp) {
            problems.push(format!(
                "runners.copilot.args: `{flag}` approves tools ahead, so over ACP Copilot CLI would run them without asking git-bmad's policy; drop it (git-bmad answers each request)"
            ));
        }
        problems
    }
}

/// The first configured argument that is one of `flags`, alone or with `=value`.
fn given_flag<'c>(cli: &'c CliConfig, flags: &[&str]) -> Option<&'c String> {
    cli.args.iter().flatten().find(|arg| {
        flags.iter().any(|flag| {
            arg.strip_prefix(flag)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `chat` span as Copilot CLI 1.0.102 exports it with a provider of the user's own
    /// (its shape, from a run against a scripted Anthropic API: 100 fresh input tokens,
    /// 1,000 cache reads, 500 cache writes, 20 out).
    fn chat_span(model: &str) -> Value {
        serde_json::json!({"type": "span", "name": format!("chat {model}"), "kind": 2,
            "attributes": {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
                "gen_ai.request.model": model, "gen_ai.response.model": model,
                "gen_ai.usage.input_tokens": 1600, "gen_ai.usage.output_tokens": 20,
                "gen_ai.usage.cache_read.input_tokens": 1000,
                "gen_ai.usage.cache_write.input_tokens": 500, "github.copilot.cost": 0.0}})
    }

    #[test]
    fn each_request_comes_from_its_telemetry_and_its_premium_requests_from_its_result() {
        let request = Copilot
            .request_usage(&chat_span("claude-sonnet-4.5"))
            .unwrap();
        assert_eq!(
            (
                request.model.as_deref(),
                request.input,
                request.cached,
                request.output
            ),
            (Some("claude-sonnet-4.5"), 600, 1000, 20)
        );
        // The agent's span sums its requests; a metric is no request.
        let agent = serde_json::json!({"type": "span", "name": "invoke_agent",
            "attributes": {"gen_ai.operation.name": "invoke_agent",
                "gen_ai.usage.input_tokens": 1600, "gen_ai.usage.output_tokens": 20}});
        let metric = serde_json::json!({"type": "metric",
            "name": "gen_ai.client.inference.usage.input_tokens"});
        assert!(Copilot.request_usage(&agent).is_none());
        assert!(Copilot.request_usage(&metric).is_none());
        let result = crate::runner::interpret(
            crate::runner::Kind::parse("copilot").unwrap(),
            crate::runner::Exit::Code(0),
            crate::runner::Captured::from_bytes(
                "{\"type\":\"model.call_final_result\",\"data\":{\"model\":\"m\",\"result\":\"success\"}}\n\
                 {\"type\":\"assistant.message\",\"data\":{\"content\":\"Done.\"}}\n\
                 {\"type\":\"model.call_final_result\",\"data\":{\"model\":\"m\",\"result\":\"success\"}}\n\
                 {\"type\":\"result\",\"sessionId\":\"s-1\",\"exitCode\":0,\"usage\":{\"premiumRequests\":1}}\n"
                    .as_bytes(),
            ),
            crate::runner::Captured::default(),
            10,
        );
        assert_eq!(result.premium_requests, Some(1.0));
        assert_eq!(result.final_text, "Done.");
        assert_eq!(Copilot.requests_announced(&result), Some(2));
    }

    #[test]
    fn its_usage_log_is_git_bmads_file_exporter() {
        let call = Call {
            prompt: "p",
            usage_log: Some(std::path::Path::new("/tmp/bmad-usage-x/usage.jsonl")),
            ..Call::default()
        };
        let env = Copilot.call_env(&CliConfig::default(), &call);
        assert!(env.contains(&(
            "COPILOT_OTEL_FILE_EXPORTER_PATH".to_owned(),
            "/tmp/bmad-usage-x/usage.jsonl".to_owned()
        )));
        assert!(env.contains(&("COPILOT_OTEL_EXPORTER_TYPE".to_owned(), "file".to_owned())));
        assert!(Copilot
            .call_env(&CliConfig::default(), &Call::default())
            .is_empty());
        let (args, _) = Copilot.command_line(&CliConfig::default(), &call);
        assert_eq!(args.last().unwrap(), "--prompt=p");
    }

    #[test]
    fn over_acp_no_tool_is_approved_ahead() {
        let cli = |args: &[&str], protocol: Protocol| CliConfig {
            args: Some(args.iter().map(|a| a.to_string()).collect()),
            protocol,
            ..CliConfig::default()
        };
        let problems = Copilot.config_problems(&cli(&["--allow-all-tools"], Protocol::Acp));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0]
            .starts_with("runners.copilot.args: `--allow-all-tools` approves tools ahead"));
        assert_eq!(
            Copilot
                .config_problems(&cli(&["--allow-tool=write"], Protocol::Acp))
                .len(),
            1
        );
        // Headless, its prompt mode needs them.
        assert!(Copilot
            .config_problems(&cli(&["--allow-all-tools"], Protocol::Headless))
            .is_empty());
        assert!(Copilot
            .config_problems(&cli(&["--model", "gpt-5"], Protocol::Acp))
            .is_empty());
    }
}

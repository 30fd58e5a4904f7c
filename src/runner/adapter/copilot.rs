//! GitHub Copilot CLI, headless: `copilot --output-format json --no-ask-user … --prompt=<prompt>`;
//! and over ACP (`copilot --acp`), where it asks git-bmad before every command.
//!
//! Output: one JSON event per line. `assistant.message` carries each model turn's text and
//! model; `session.error` an error; the last line, `result`, the session id, the exit code
//! and `usage.premiumRequests` (GitHub's own unit). It prints no token counts; what it used,
//! per model, it writes when it ends to the file `--usage-output-file` names
//! (`modelMetrics.<model>.usage`: `inputTokens` with the cache's reads and writes in it,
//! `cacheReadTokens`, `outputTokens`), so headless it is budgeted at its end, as Claude Code
//! and Codex are. Over ACP it reports every request's tokens in the prompt's `usage`.
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
        if let Some(file) = call.usage_file {
            args.push(format!("--usage-output-file={}", file.display()));
        }
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

    fn writes_usage_file(&self) -> bool {
        true
    }

    fn names_models(&self) -> bool {
        true
    }

    fn spends_premium_requests(&self) -> bool {
        true
    }

    fn read_usage_file(&self, report: &Value, result: &mut AgentResult) {
        let count = |v: &Value| v.as_u64().unwrap_or(0);
        for (model, metrics) in report["modelMetrics"].as_object().into_iter().flatten() {
            let usage = &metrics["usage"];
            let cached = count(&usage["cacheReadTokens"]);
            result.usage.push(ModelUsage {
                model: Some(model.clone()),
                input: count(&usage["inputTokens"]).saturating_sub(cached),
                cached,
                output: count(&usage["outputTokens"]),
                usd: None,
            });
        }
        if let Some(premium) = report["totalPremiumRequestCost"].as_f64() {
            result.premium_requests = Some(premium);
        }
    }

    fn read_output(&self, result: &mut AgentResult) -> bool {
        let events = super::json_events(result);
        let Some(end) = events.iter().rev().find(|e| e["type"] == "result") else {
            let said = String::from_utf8_lossy(&result.stderr.tail()).into_owned();
            if said.contains("unknown option '--usage-output-file") {
                result.reported_error = Some(format!(
                    "Copilot CLI is older than 1.0.80, the first to write the usage report git-bmad reads its tokens from (`--usage-output-file`); update it: npm install -g {}",
                    self.npm_package().unwrap_or("@github/copilot")
                ));
            }
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
        // Headless, its usage report is git-bmad's to name (the budget reads it), and
        // Copilot CLI refuses one beside its debug flags.
        let usage_flags = [
            "--usage-output-file",
            "--print-debug-info",
            "--collect-debug-logs",
        ];
        let headless = cli.protocol != Protocol::Acp;
        if let Some(flag) = given_flag(cli, &usage_flags).filter(|_| headless) {
            problems.push(format!(
                "runners.copilot.args: `{flag}` is refused: headless, git-bmad gives Copilot CLI a `--usage-output-file` of its own and reads its tokens from it (Copilot CLI takes one such file, and none beside its debug flags); drop it"
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

    /// What Copilot CLI 1.0.102 writes to its usage file and prints last, as it does with a
    /// provider of the user's own (its shape, from a run against a scripted Anthropic API).
    #[test]
    fn its_tokens_come_from_its_usage_file_and_its_premium_requests_from_its_result() {
        let report = serde_json::json!({
            "totalPremiumRequestCost": 2.5,
            "totalUserRequests": 1,
            "modelMetrics": {
                "claude-sonnet-4.5": {"requests": {"count": 3, "cost": 2.5},
                    "usage": {"inputTokens": 1600, "outputTokens": 20,
                              "cacheReadTokens": 1000, "cacheWriteTokens": 500}},
                "gpt-5-mini": {"requests": {"count": 1, "cost": 0},
                    "usage": {"inputTokens": 300, "outputTokens": 7,
                              "cacheReadTokens": 0, "cacheWriteTokens": 0}}
            },
            "agentMetrics": {"main": {"modelMetrics": {}}}
        });
        let mut result = crate::runner::interpret(
            crate::runner::Kind::parse("copilot").unwrap(),
            crate::runner::Exit::Code(0),
            crate::runner::Captured::from_bytes(
                "{\"type\":\"assistant.message\",\"data\":{\"content\":\"Done.\"}}\n\
                 {\"type\":\"result\",\"sessionId\":\"s-1\",\"exitCode\":0,\"usage\":{\"premiumRequests\":1}}\n"
                    .as_bytes(),
            ),
            crate::runner::Captured::default(),
            10,
        );
        assert_eq!(result.premium_requests, Some(1.0));
        Copilot.read_usage_file(&report, &mut result);
        // The report's figure is the whole session's.
        assert_eq!(result.premium_requests, Some(2.5));
        let usage: Vec<_> = result
            .usage
            .iter()
            .map(|u| (u.model.as_deref().unwrap(), u.input, u.cached, u.output))
            .collect();
        assert_eq!(
            usage,
            [
                ("claude-sonnet-4.5", 600, 1000, 20),
                ("gpt-5-mini", 300, 0, 7)
            ]
        );
        // A report that is not Copilot CLI's adds nothing.
        let mut empty = result.clone();
        empty.usage.clear();
        Copilot.read_usage_file(&serde_json::json!({"modelMetrics": 3}), &mut empty);
        assert!(empty.usage.is_empty());
    }

    /// What Copilot CLI 1.0.79 says to `--usage-output-file` (exit 1, on stderr).
    #[test]
    fn a_copilot_cli_too_old_for_its_usage_file_is_told_to_update() {
        let result = crate::runner::interpret(
            crate::runner::Kind::parse("copilot").unwrap(),
            crate::runner::Exit::Code(1),
            crate::runner::Captured::default(),
            crate::runner::Captured::from_bytes(
                b"error: unknown option '--usage-output-file=/tmp/bmad-usage-x/usage.json'\n\nTry 'copilot --help' for more information.\n",
            ),
            10,
        );
        let error = result.reported_error.unwrap_or_default();
        assert!(
            error.starts_with("Copilot CLI is older than 1.0.80")
                && error.ends_with("npm install -g @github/copilot@1.0.102"),
            "{error}"
        );
    }

    #[test]
    fn its_usage_file_is_git_bmads_to_name() {
        for flag in [
            "--usage-output-file=/tmp/u.json",
            "--usage-output-file",
            "--print-debug-info",
            "--collect-debug-logs",
        ] {
            let cli = CliConfig {
                args: Some(vec![flag.to_owned()]),
                ..CliConfig::default()
            };
            let problems = Copilot.config_problems(&cli);
            assert_eq!(problems.len(), 1, "{flag}: {problems:?}");
            assert!(problems[0].contains("--usage-output-file"), "{problems:?}");
            // Over ACP git-bmad names no report: the user's own may stand.
            let acp = CliConfig {
                protocol: Protocol::Acp,
                ..cli
            };
            assert!(Copilot.config_problems(&acp).is_empty(), "{flag}");
        }
        let call = Call {
            prompt: "p",
            usage_file: Some(std::path::Path::new("/tmp/bmad-usage-x/usage.json")),
            ..Call::default()
        };
        let (args, _) = Copilot.command_line(&CliConfig::default(), &call);
        assert!(args.contains(&"--usage-output-file=/tmp/bmad-usage-x/usage.json".to_owned()));
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

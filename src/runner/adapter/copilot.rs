//! GitHub Copilot CLI, headless: `copilot --output-format json --no-ask-user … --prompt=<prompt>`;
//! and over ACP (`copilot --acp`), where it asks git-bmad before every command.
//!
//! Output: one JSON event per line. `assistant.message` carries each model turn's text and
//! model; `session.error` an error; the last line, `result`, the session id, the exit code
//! and `usage.premiumRequests` (GitHub's own unit). It prints no token counts, so headless it
//! cannot be budgeted; over ACP it reports every request's tokens in the prompt's `usage`.
//!
//! Headless it runs no tool that would ask unless told: its defaults allow every tool
//! (`--allow-all-tools`, which its prompt mode requires) except pushing, which git-bmad does
//! itself; the walls and hooks hold the rest. It reads GitHub's login (`~/.copilot`,
//! `COPILOT_GITHUB_TOKEN`), or a provider of the user's own (`COPILOT_PROVIDER_*`,
//! `COPILOT_MODEL`; `COPILOT_OFFLINE` keeps it off GitHub's servers).

use serde_json::Value;

use super::{agent_args, whole_command_problem, Adapter, AgentResult, Call};
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

    /// Headless, it prints premium requests, never tokens.
    fn reports_tokens(&self) -> bool {
        false
    }

    fn read_output(&self, result: &mut AgentResult) -> bool {
        let events = super::json_events(result);
        let Some(end) = events.iter().rev().find(|e| e["type"] == "result") else {
            return false;
        };
        result.agent_session_id = end["sessionId"].as_str().map(str::to_owned);
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
        let ahead = cli.args.iter().flatten().find(|a| {
            ["--allow-all-tools", "--allow-all", "--yolo", "--allow-tool"]
                .iter()
                .any(|flag| a == flag || a.starts_with(&format!("{flag}=")))
        });
        if let Some(flag) = ahead.filter(|_| cli.protocol == Protocol::Acp) {
            problems.push(format!(
                "runners.copilot.args: `{flag}` approves tools ahead, so over ACP Copilot CLI would run them without asking git-bmad's policy; drop it (git-bmad answers each request)"
            ));
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

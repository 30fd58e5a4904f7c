//! OpenCode, headless: `opencode run --format json … -- <prompt>`.
//!
//! Output: one JSON event per line (`step_start`, `text`, `tool_use`, `step_finish`,
//! `error`), each with the session's id.
//!
//! Permissions come from its configuration, which `OPENCODE_PERMISSION` overrides for one
//! run: edits are allowed, the shell only for the step's test commands, read-only commands
//! and `git add`/`git commit` (every other command is denied, never asked: headless nobody
//! answers).

use std::path::PathBuf;

use serde_json::{json, Value};

use super::{agent_args, allowed_prefixes, whole_command_problem, Adapter, Call};
use super::{AgentResult, ModelUsage};
use crate::config::CliConfig;

/// The adapter.
pub struct OpenCode;

impl Adapter for OpenCode {
    fn name(&self) -> &'static str {
        "opencode"
    }

    fn project_settings(&self) -> &'static [&'static str] {
        // Its config (permissions merged under git-bmad's), agents, commands and plugins.
        &["opencode.json", "opencode.jsonc", ".opencode/"]
    }

    fn key_variable(&self) -> Option<&'static str> {
        Some("ANTHROPIC_API_KEY")
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("opencode-ai@1.18.33")
    }

    fn env_names(&self) -> &'static [&'static str] {
        any_provider!(env "OPENCODE_")
    }

    fn credential_variables(&self) -> &'static [&'static str] {
        any_provider!(keys "OPENCODE_API_KEY")
    }

    fn home_files(&self) -> &'static [&'static str] {
        &[
            ".config/opencode/opencode.json",
            ".config/opencode/opencode.jsonc",
            ".local/share/opencode/auth.json",
        ]
    }

    fn command_line(&self, cli: &CliConfig, call: &Call) -> (Vec<String>, Option<Vec<u8>>) {
        // A title given: else a model request names the session, whose tokens its events
        // never report (a budget could not count them).
        let mut args = agent_args(
            &["run", "--format", "json", "--title", "git-bmad step"],
            self,
            cli,
            call,
        );
        args.extend(["--".into(), call.prompt.to_owned()]);
        (args, None)
    }

    fn call_env(&self, cli: &CliConfig, call: &Call) -> Vec<(String, String)> {
        if cli.args.is_some() {
            return Vec::new();
        }
        let mut bash = serde_json::Map::new();
        bash.insert("*".into(), json!("deny"));
        for prefix in allowed_prefixes(call.allowed_commands) {
            bash.insert(prefix.clone(), json!("allow"));
            bash.insert(format!("{prefix} *"), json!("allow"));
        }
        let permission = json!({"*": "deny", "read": "allow", "list": "allow", "glob": "allow",
            "grep": "allow", "edit": "allow", "bash": bash});
        vec![("OPENCODE_PERMISSION".into(), permission.to_string())]
    }

    fn env(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("OPENCODE_DISABLE_AUTOUPDATE", "true"),
            ("OPENCODE_DISABLE_SHARE", "true"),
        ]
    }

    fn acp_args(&self, cli: &CliConfig) -> Option<Vec<String>> {
        super::acp_with(&["acp"], cli)
    }

    fn acp_env(&self, passed: &[(String, String)]) -> Vec<(String, String)> {
        // Every edit, command and fetch is asked of git-bmad; reading is not. The permissions
        // replace the user's; the inline config is a layer over theirs (their providers,
        // say), with no title request of its own.
        let permission =
            r#"{"*":"ask","read":"allow","list":"allow","glob":"allow","grep":"allow"}"#;
        let ours = json!({"agent": {"title": {"disable": true}}});
        let theirs = passed
            .iter()
            .find(|(name, _)| name == CONFIG_CONTENT)
            .map(|(_, value)| value.as_str());
        let config = match theirs {
            None => ours.to_string(),
            Some(theirs) => layered(theirs, ours),
        };
        vec![
            ("OPENCODE_PERMISSION".into(), permission.into()),
            (CONFIG_CONTENT.into(), config),
        ]
    }

    fn acp_uncounted(&self) -> Option<&'static str> {
        Some("OpenCode reports only its last request's tokens over ACP")
    }

    fn structured(&self) -> bool {
        true
    }

    /// Each model request ends a step (`step_finish`), with its tokens: its input leaves
    /// the cache out; a cache write is read fresh, reasoning is output.
    fn request_usage(&self, event: &Value) -> Option<ModelUsage> {
        if event["type"] != "step_finish" {
            return None;
        }
        let tokens = &event["part"]["tokens"];
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        Some(ModelUsage {
            input: n(&tokens["input"]) + n(&tokens["cache"]["write"]),
            cached: n(&tokens["cache"]["read"]),
            output: n(&tokens["output"]) + n(&tokens["reasoning"]),
            ..ModelUsage::default()
        })
    }

    fn read_output(&self, result: &mut AgentResult) -> bool {
        let events = super::json_events(result);
        if events.is_empty() {
            return false;
        }
        let mut usage = ModelUsage::default();
        for event in &events {
            let part = &event["part"];
            result.agent_session_id = event["sessionID"].as_str().map(str::to_owned);
            match event["type"].as_str().unwrap_or_default() {
                "text" => {
                    result.final_text = part["text"].as_str().unwrap_or_default().to_owned();
                }
                "step_finish" => {
                    let step = self.request_usage(event).unwrap_or_default();
                    usage.input += step.input;
                    usage.cached += step.cached;
                    usage.output += step.output;
                }
                "tool_use" if is_denied(part) => {
                    let said = super::describe_call(part["tool"].as_str(), &part["state"]["input"]);
                    result.permission_denials.push(said);
                }
                "error" => {
                    let error = &event["error"];
                    let message = error["data"]["message"]
                        .as_str()
                        .or_else(|| error["message"].as_str())
                        .or_else(|| error["name"].as_str())
                        .unwrap_or("error");
                    result.reported_error = Some(message.to_owned());
                }
                _ => {}
            }
        }
        result.usage = vec![usage];
        true
    }

    fn command_files(&self, name: &str) -> Vec<PathBuf> {
        vec![
            PathBuf::from(format!(".opencode/command/{name}.md")),
            PathBuf::from(format!(".opencode/commands/{name}.md")),
        ]
    }

    fn config_problems(&self, cli: &CliConfig) -> Vec<String> {
        whole_command_problem(self.name(), cli)
            .into_iter()
            .collect()
    }
}

/// The variable OpenCode reads as the last layer of its configuration.
const CONFIG_CONTENT: &str = "OPENCODE_CONFIG_CONTENT";

/// The user's inline configuration with git-bmad's laid over it, key by key, less its
/// permissions: OpenCode merges `OPENCODE_PERMISSION` into theirs rather than replacing it,
/// and git-bmad's policy answers every call. One that is not a JSON object (OpenCode also
/// reads comments) is passed as the user wrote it: what it would lose matters more than the
/// title request git-bmad's layer saves.
fn layered(theirs: &str, ours: Value) -> String {
    fn lay(under: &mut Value, over: Value) {
        match (under, over) {
            (Value::Object(under), Value::Object(over)) => {
                for (key, value) in over {
                    lay(under.entry(key).or_insert(Value::Null), value);
                }
            }
            (under, over) => *under = over,
        }
    }
    match serde_json::from_str::<Value>(theirs) {
        Ok(Value::Object(mut config)) => {
            config.remove("permission");
            let mut config = Value::Object(config);
            lay(&mut config, ours);
            config.to_string()
        }
        _ => theirs.to_owned(),
    }
}

/// Whether a tool call was refused by its permissions, not failing as it ran (a command's
/// own "permission denied" is the agent's business): OpenCode's refusals, by a rule ("…a
/// rule which prevents you from using this specific tool call") or by a rejected request
/// ("…rejected permission to use this specific tool call"), end alike.
fn is_denied(part: &Value) -> bool {
    let state = &part["state"];
    let error = state["error"].as_str().unwrap_or_default();
    state["status"] == "error" && error.contains("this specific tool call")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_inline_config_is_kept_under_git_bmads_layer() {
        let ours = || json!({"agent": {"title": {"disable": true}}});
        let theirs = r#"{"provider":{"corp":{"options":{"baseURL":"https://llm.corp"}}},"agent":{"build":{"model":"corp/m"},"title":{"disable":false,"model":"x"}}}"#;
        let config: Value = serde_json::from_str(&layered(theirs, ours())).unwrap_or_default();
        assert_eq!(
            config,
            json!({"provider": {"corp": {"options": {"baseURL": "https://llm.corp"}}},
                "agent": {"build": {"model": "corp/m"}, "title": {"disable": true, "model": "x"}}})
        );
        // Not a JSON object (comments, a typo): passed on as written.
        for odd in ["{ // corp\n \"model\": \"m\" }", "[1]", ""] {
            assert_eq!(layered(odd, ours()), odd);
        }
    }

    #[test]
    fn over_acp_the_users_inline_config_reaches_opencode_with_its_permissions_replaced() {
        let user = vec![
            (
                CONFIG_CONTENT.to_owned(),
                r#"{"model":"corp/m","permission":{"bash":"allow"}}"#.to_owned(),
            ),
            (
                "OPENCODE_PERMISSION".to_owned(),
                r#"{"*":"allow"}"#.to_owned(),
            ),
        ];
        let env = OpenCode.acp_env(&user);
        let get = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        let config: Value =
            serde_json::from_str(&get(CONFIG_CONTENT).unwrap_or_default()).unwrap_or_default();
        assert_eq!(config["model"], "corp/m");
        assert_eq!(config["agent"]["title"]["disable"], true);
        assert!(config.get("permission").is_none(), "{config}");
        let permission = get("OPENCODE_PERMISSION").unwrap_or_default();
        assert!(permission.starts_with(r#"{"*":"ask""#), "{permission}");
        // With none of the user's, git-bmad's own layer.
        let alone = OpenCode.acp_env(&[]);
        assert!(alone.contains(&(
            CONFIG_CONTENT.to_owned(),
            r#"{"agent":{"title":{"disable":true}}}"#.to_owned()
        )));
    }
}

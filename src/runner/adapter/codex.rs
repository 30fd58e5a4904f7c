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
//! It prints its tokens at its end only (`turn.completed`); each request's it records, as the
//! request ends, in its rollout of the session (`$CODEX_HOME/sessions/YYYY/MM/DD/
//! rollout-<time>-<thread id>.jsonl`, a `token_usage_record` line each), which git-bmad reads
//! as it grows once the thread is announced: a budget stops it within a request.
//!
//! An `error` line is not always the end: while Codex retries a dropped stream it prints
//! `{"type":"error","message":"Reconnecting... 1/5 …"}` and may then finish the turn. So an
//! error counts only when no turn completed after it.

use std::path::{Path, PathBuf};

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

    fn logs_usage(&self) -> Option<super::LogsUsage> {
        Some(super::LogsUsage::InItsSession)
    }

    fn announced_session(&self, event: &Value) -> Option<String> {
        (event["type"] == "thread.started")
            .then(|| event["thread_id"].as_str().map(str::to_owned))
            .flatten()
    }

    fn session_log(&self, home: &Path, env: &[(String, String)], session: &str) -> Option<PathBuf> {
        let codex_home = env
            .iter()
            .find(|(key, value)| key == "CODEX_HOME" && Path::new(value).is_absolute())
            .map(|(_, value)| PathBuf::from(value))
            .unwrap_or_else(|| home.join(".codex"));
        rollout(&codex_home.join("sessions"), session)
    }

    fn request_usage(&self, record: &Value) -> Option<ModelUsage> {
        if record["type"] != "token_usage_record" {
            return None;
        }
        Some(turn_usage(&record["payload"]["usage"]))
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
                    let turn = turn_usage(&event["usage"]);
                    let usage = usage.get_or_insert_with(ModelUsage::default);
                    usage.input += turn.input;
                    usage.cached += turn.cached;
                    usage.output += turn.output;
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

/// Its token counts (a turn's or a request's): its input counts the cached part too.
fn turn_usage(counts: &Value) -> ModelUsage {
    let n = |key: &str| counts[key].as_u64().unwrap_or(0);
    let cached = n("cached_input_tokens");
    ModelUsage {
        model: None,
        input: n("input_tokens").saturating_sub(cached),
        cached,
        output: n("output_tokens"),
        usd: None,
    }
}

/// The rollout of thread `id` under `sessions` (`YYYY/MM/DD/rollout-<time>-<id>.jsonl`),
/// in the newest two days' folders: a thread just started is there (the day before when it
/// started at midnight), and a user's years of sessions are not read again at each look.
fn rollout(sessions: &Path, id: &str) -> Option<PathBuf> {
    let newest_first = |dir: &Path| -> Vec<PathBuf> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort_unstable_by(|a, b| b.cmp(a));
        entries
    };
    let suffix = format!("-{id}.jsonl");
    let days = newest_first(sessions)
        .into_iter()
        .flat_map(|year| newest_first(&year))
        .flat_map(|month| newest_first(&month))
        .take(2);
    days.flat_map(|day| newest_first(&day)).find(|file| {
        file.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(&suffix))
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A request as Codex 0.169.0 records it in its rollout (from a run against a scripted
    /// Responses API), and the rollout found by the thread its output announced.
    #[test]
    fn each_request_comes_from_its_rollout_of_the_thread_it_announced() {
        let record = serde_json::json!({"timestamp": "2026-12-07T20:51:59.067Z", "ordinal": 10,
            "type": "token_usage_record", "payload": {"thread_id": "t-1", "response_id": "r1",
                "usage": {"input_tokens": 1100, "cached_input_tokens": 1000,
                    "cache_write_input_tokens": 0, "output_tokens": 20,
                    "reasoning_output_tokens": 0, "total_tokens": 1120},
                "turn_token_usage": {"input_tokens": 2200}}});
        let request = Codex.request_usage(&record).unwrap();
        assert_eq!(
            (request.input, request.cached, request.output),
            (100, 1000, 20)
        );
        // Its running totals and its printed turn are no request.
        let totals = serde_json::json!({"type": "event_msg", "payload": {"type": "token_count"}});
        let turn = serde_json::json!({"type": "turn.completed", "usage": {"input_tokens": 5}});
        assert!(Codex.request_usage(&totals).is_none());
        assert!(Codex.request_usage(&turn).is_none());
        let started = serde_json::json!({"type": "thread.started", "thread_id": "t-1"});
        assert_eq!(Codex.announced_session(&started).as_deref(), Some("t-1"));
        assert_eq!(Codex.announced_session(&turn), None);

        let home = tempfile::tempdir().unwrap();
        let day = home.path().join(".codex/sessions/2026/12/07");
        std::fs::create_dir_all(&day).unwrap();
        let ours = day.join("rollout-2026-12-07T20-51-57-t-1.jsonl");
        std::fs::write(&ours, "").unwrap();
        std::fs::write(day.join("rollout-2026-12-07T20-50-00-t-2.jsonl"), "").unwrap();
        // Two newer days: the one a week back is not looked in again.
        for newer in ["2026/12/08", "2026/12/09"] {
            std::fs::create_dir_all(home.path().join(".codex/sessions").join(newer)).unwrap();
        }
        assert_eq!(Codex.session_log(home.path(), &[], "t-1"), None);
        std::fs::remove_dir(home.path().join(".codex/sessions/2026/12/09")).unwrap();
        assert_eq!(Codex.session_log(home.path(), &[], "t-1"), Some(ours));
        assert_eq!(Codex.session_log(home.path(), &[], "t-3"), None);
        // A home of its own the user names.
        let elsewhere = tempfile::tempdir().unwrap();
        let env = [(
            "CODEX_HOME".to_owned(),
            elsewhere.path().display().to_string(),
        )];
        assert_eq!(Codex.session_log(home.path(), &env, "t-1"), None);
    }
}

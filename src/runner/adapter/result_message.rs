//! The messages Claude Code prints headless, which Qwen Code prints too.
//!
//! `--output-format json` prints one result object, `{"type":"result",
//! "subtype":"success"|"error_…", "is_error":bool, "result":"<final text>", "session_id":…,
//! "total_cost_usd":…, "usage":{…}, "modelUsage":{<model>:{…}}, "permission_denials":
//! [{"tool_name":…, "tool_input":{…}}], "structured_output":{…}}`, or (with `--verbose`, and
//! always for Qwen Code) the whole message array; `stream-json` prints one message per line.
//! The last `result` message is the one read either way; the `system` `init` message names
//! the model.
//!
//! An API failure is `is_error: true`, the message in `result` (Claude Code, which says
//! `subtype: "success"` then, and `api_error`) or in `error.message` (Qwen Code).

use serde_json::Value;

use super::{json_values, verdict_word, whole_stdout, AgentResult, ModelUsage};
use crate::text::last_chars;

/// Every message the CLI printed, in order. Where its output was too long to keep whole (a
/// stream of every request's events), the whole lines of its end, where its result is.
pub(super) fn messages(result: &AgentResult) -> Vec<Value> {
    let text = whole_stdout(result).unwrap_or_else(|| {
        let tail = String::from_utf8_lossy(&result.stdout.tail()).into_owned();
        // The first line is cut.
        tail.split_once('\n')
            .map(|(_, whole)| whole.to_owned())
            .unwrap_or_default()
    });
    json_values(&text)
        .into_iter()
        .flat_map(|v| match v {
            Value::Array(items) => items,
            other => vec![other],
        })
        .collect()
}

/// The model the session started with, as its `init` message names it.
pub(super) fn init_model(messages: &[Value]) -> Option<String> {
    let init = messages
        .iter()
        .find(|m| m["type"] == "system" && m["subtype"] == "init")?;
    init["model"].as_str().map(str::to_owned)
}

/// Read the last result message into `result`; `false` when there is none.
pub(super) fn read(result: &mut AgentResult, messages: &[Value]) -> bool {
    let Some(value) = messages.iter().rev().find(|v| v["type"] == "result") else {
        return false;
    };
    result.final_text = value["result"].as_str().unwrap_or_default().to_owned();
    result.agent_session_id = value["session_id"].as_str().map(str::to_owned);
    result.cost_usd = value["total_cost_usd"].as_f64();
    result.usage = usage(value);
    if value["is_error"].as_bool() == Some(true) {
        result.reported_error = Some(error_message(value));
    }
    result.budget_spent = value["subtype"] == "error_max_budget_usd";
    if let Some(denials) = value["permission_denials"].as_array() {
        result.permission_denials = denials
            .iter()
            .map(|d| super::describe_call(d["tool_name"].as_str(), &d["tool_input"]))
            .collect();
    }
    result.verdict = value["structured_output"]["verdict"]
        .as_str()
        .and_then(verdict_word);
    true
}

/// The tokens of every model the session used (subagents included, in `modelUsage`, with
/// what each cost), else the top-level `usage` of a model it does not name. A cache write is
/// input read fresh.
fn usage(value: &Value) -> Vec<ModelUsage> {
    let n = |v: &Value, key: &str| v[key].as_u64().unwrap_or(0);
    match value["modelUsage"].as_object().filter(|m| !m.is_empty()) {
        Some(models) => models
            .iter()
            .map(|(model, m)| ModelUsage {
                model: Some(model.clone()),
                input: n(m, "inputTokens") + n(m, "cacheCreationInputTokens"),
                cached: n(m, "cacheReadInputTokens"),
                output: n(m, "outputTokens"),
                usd: m["costUSD"].as_f64(),
            })
            .collect(),
        None if value["usage"].is_object() => {
            let usage = &value["usage"];
            vec![ModelUsage {
                model: None,
                input: n(usage, "input_tokens") + n(usage, "cache_creation_input_tokens"),
                cached: n(usage, "cache_read_input_tokens"),
                output: n(usage, "output_tokens"),
                usd: None,
            }]
        }
        None => Vec::new(),
    }
}

/// What went wrong, in words: the API's message when there is one, else the subtype
/// (`error_max_turns`).
fn error_message(value: &Value) -> String {
    let subtype = value["subtype"].as_str().unwrap_or("error");
    let text = value["result"]
        .as_str()
        .filter(|t| !t.trim().is_empty())
        .or_else(|| value["api_error"].as_str())
        .or_else(|| value["errors"][0].as_str())
        .or_else(|| value["error"]["message"].as_str());
    match (subtype, text) {
        ("success", Some(text)) => last_chars(text.trim(), 500),
        (_, Some(text)) => format!("{subtype}: {}", last_chars(text.trim(), 500)),
        (_, None) => subtype.to_owned(),
    }
}

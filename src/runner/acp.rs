//! An ACP client: git-bmad drives any agent that speaks the Agent Client Protocol (JSON-RPC
//! 2.0, one message per line on the agent's stdin and stdout) through one prompt turn.
//!
//! `initialize` (no file system or terminal is offered: the agent reads and writes its own
//! files, inside its walls), `session/new` in the worktree, the agent's `default` mode where it
//! has one (so it asks before every edit and command), the step's model where one is named,
//! then `session/prompt`. Each `session/request_permission` is answered by git-bmad's policy,
//! never by the agent: a command goes to the guard, an edit must stay in the worktree and out
//! of `.git`, a mode switch is refused. A timeout sends `session/cancel`. A command the agent
//! reports run that it never asked about (an argument or setting of its own approved it
//! ahead) is put to the guard then, and one it refuses fails the turn.
//!
//! Tokens are read where each agent puts them: the prompt's `usage` (the protocol's own;
//! its total says whether the input counts the cache), Gemini CLI's `_meta.quota` (per model), or
//! Qwen Code's `_meta.usage` on message chunks (per request, its input counting the cached
//! part, as Gemini's API counts it).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Component, Path, PathBuf};

use serde_json::{json, Value};

use super::adapter::{AgentResult, ModelUsage};
use super::process::Dialogue;

/// The protocol version git-bmad speaks.
const PROTOCOL_VERSION: u64 = 1;

/// JSON-RPC's "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// Judges a shell command before the agent runs it: why it is refused, if it is.
pub type Judge<'a> = dyn FnMut(&str) -> Option<String> + Send + 'a;

/// One prompt turn with one agent.
pub struct Client<'a> {
    prompt: String,
    cwd: PathBuf,
    model: Option<String>,
    judge: Box<Judge<'a>>,
    next_id: u64,
    /// Our requests still to send, in order, the prompt last.
    queue: VecDeque<(Ours, &'static str, Value)>,
    /// The request we wait for: its id and what it was.
    waiting: Option<(u64, Ours, &'static str)>,
    agent: String,
    session: Option<String>,
    session_model: Option<String>,
    /// What the agent said since its last tool call.
    text: String,
    /// Per-request token counts on message chunks (Qwen Code's).
    chunk_usage: Option<ModelUsage>,
    answer: Option<Value>,
    denials: Vec<String>,
    /// The tool calls the agent asked about, by id.
    asked_about: BTreeSet<String>,
    /// The command calls it announced, by tool call id.
    commands: BTreeMap<String, Value>,
    /// Commands the guard refuses that it ran without asking, with why.
    unasked: Vec<String>,
    error: Option<String>,
    over: bool,
}

/// Which of our requests an answer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ours {
    Initialize,
    NewSession,
    Setup,
    Prompt,
}

/// What git-bmad answers a permission request.
#[derive(Debug, PartialEq, Eq)]
enum Decision {
    Allow,
    Refuse(String),
}

impl<'a> Client<'a> {
    /// A turn that sends `prompt` to an agent working in `cwd`, on `model` when one is named.
    pub fn new(prompt: &str, cwd: &Path, model: Option<&str>, judge: Box<Judge<'a>>) -> Self {
        Client {
            prompt: prompt.to_owned(),
            cwd: cwd.to_path_buf(),
            model: model.map(str::to_owned),
            judge,
            next_id: 0,
            queue: VecDeque::new(),
            waiting: None,
            agent: "the ACP agent".into(),
            session: None,
            session_model: None,
            text: String::new(),
            chunk_usage: None,
            answer: None,
            denials: Vec::new(),
            asked_about: BTreeSet::new(),
            commands: BTreeMap::new(),
            unasked: Vec::new(),
            error: None,
            over: false,
        }
    }

    /// Write what the turn left into `result`: the final text, tokens, refusals and errors.
    pub fn read_into(self, result: &mut AgentResult) {
        result.final_text = crate::text::last_chars(self.text.trim(), 4000);
        result.agent_session_id = self.session;
        result.permission_denials = self.denials;
        result.usage = match &self.answer {
            Some(answer) => usage(answer, self.chunk_usage, self.session_model.as_deref()),
            None => Vec::new(),
        };
        let unasked = self.unasked.first().map(|first| {
            format!(
                "{} ran {} command(s) the guard refuses without asking git-bmad (first: {first}); an argument or setting of the agent's own approves tools ahead: drop it (runners.<runner>.args, or the project's agent settings)",
                self.agent,
                self.unasked.len()
            )
        });
        result.reported_error = unasked.or(self.error).or_else(|| match &self.answer {
            None if result.exit.success() => Some(format!(
                "{} ended before it answered the prompt",
                self.agent
            )),
            None => None,
            Some(answer) => stop_problem(answer["stopReason"].as_str()),
        });
    }

    fn request(&mut self, ours: Ours, method: &'static str, params: Value) -> Vec<u8> {
        self.next_id += 1;
        self.waiting = Some((self.next_id, ours, method));
        line(&json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}))
    }

    fn send_next(&mut self) -> Vec<u8> {
        match self.queue.pop_front() {
            Some((ours, method, params)) => self.request(ours, method, params),
            None => Vec::new(),
        }
    }

    fn fail(&mut self, why: String) -> Vec<u8> {
        self.error.get_or_insert(why);
        self.over = true;
        Vec::new()
    }

    /// An answer to one of our requests.
    fn answered(&mut self, message: &Value) -> Vec<u8> {
        let Some((id, ours, method)) = self.waiting else {
            return Vec::new();
        };
        if message["id"].as_u64() != Some(id) {
            return Vec::new();
        }
        self.waiting = None;
        if let Some(error) = message.get("error") {
            let why = error["message"].as_str().unwrap_or("no message");
            // Its details say more than a generic "Internal error".
            let details = error["data"]["details"]
                .as_str()
                .or(error["data"].as_str())
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            return self.fail(format!("{} refused `{method}`: {why}{details}", self.agent));
        }
        let result = &message["result"];
        match ours {
            Ours::Initialize => {
                if let Some(name) = result["agentInfo"]["name"].as_str() {
                    self.agent = name.to_owned();
                }
                let params = json!({"cwd": self.cwd, "mcpServers": []});
                self.request(Ours::NewSession, "session/new", params)
            }
            Ours::NewSession => {
                let Some(session) = result["sessionId"].as_str() else {
                    return self.fail(format!("{} started no session", self.agent));
                };
                self.session = Some(session.to_owned());
                self.session_model = session_model(result);
                self.plan_turn(result, session.to_owned())
            }
            Ours::Setup => self.send_next(),
            Ours::Prompt => {
                self.answer = Some(result.clone());
                self.over = true;
                Vec::new()
            }
        }
    }

    /// The requests of the turn: the mode that asks, the step's model, the prompt.
    fn plan_turn(&mut self, session: &Value, id: String) -> Vec<u8> {
        let modes = &session["modes"];
        let asks = modes["availableModes"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["id"] == "default"));
        if asks && modes["currentModeId"] != "default" {
            let params = json!({"sessionId": id, "modeId": "default"});
            self.queue
                .push_back((Ours::Setup, "session/set_mode", params));
        }
        let current = self.session_model.as_deref();
        if let Some(model) = self.model.clone().filter(|m| Some(m.as_str()) != current) {
            match model_setting(session, &model) {
                Some(ModelSetting::Model(model_id)) => {
                    let params = json!({"sessionId": id, "modelId": model_id});
                    self.queue.push_back((Ours::Setup, "session/set_model", params));
                }
                Some(ModelSetting::Option(config)) => {
                    let params = json!({"sessionId": id, "configId": config, "value": model});
                    self.queue
                        .push_back((Ours::Setup, "session/set_config_option", params));
                }
                None => {
                    return self.fail(format!(
                        "{} offers no model to choose, so the step's model {model} cannot be set; name it in the agent's own settings",
                        self.agent
                    ))
                }
            }
        }
        if self.model.is_some() {
            self.session_model = self.model.clone();
        }
        let prompt = json!({"sessionId": id, "prompt": [{"type": "text", "text": self.prompt}]});
        self.queue
            .push_back((Ours::Prompt, "session/prompt", prompt));
        self.send_next()
    }

    /// A request of the agent's.
    fn asked(&mut self, message: &Value) -> Vec<u8> {
        let id = message["id"].clone();
        let params = &message["params"];
        match message["method"].as_str().unwrap_or_default() {
            "session/request_permission" => {
                let call = &params["toolCall"];
                if let Some(id) = call["toolCallId"].as_str() {
                    self.asked_about.insert(id.to_owned());
                }
                let decision = self.decide(call);
                if let Decision::Refuse(why) = &decision {
                    self.denials.push(format!("{}: {why}", describe(call)));
                }
                let outcome = choose(&params["options"], &decision);
                line(&json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": outcome}}))
            }
            method => line(&json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": METHOD_NOT_FOUND,
                "message": format!("git-bmad does not offer `{method}`: the agent works on its own files and shell"),
            }})),
        }
    }

    /// Whether the tool call goes ahead: git-bmad's policy, whatever the agent's own is.
    fn decide(&mut self, call: &Value) -> Decision {
        match call["kind"].as_str().unwrap_or("other") {
            "execute" => self.judge_command(call),
            "edit" | "delete" | "move" => {
                let paths = touched_paths(call);
                if paths.is_empty() {
                    return Decision::Refuse("the edit names no file git-bmad can check".into());
                }
                match paths.iter().find(|p| !inside_worktree(&self.cwd, p)) {
                    Some(outside) => Decision::Refuse(format!(
                        "{} is outside the session's worktree (or inside .git)",
                        outside.display()
                    )),
                    None => Decision::Allow,
                }
            }
            "switch_mode" => {
                Decision::Refuse("git-bmad keeps the agent in the mode that asks".into())
            }
            _ => Decision::Allow,
        }
    }

    /// The guard's word on the command a call runs.
    fn judge_command(&mut self, call: &Value) -> Decision {
        // The command as the agent will run it; Gemini CLI names it only in the title.
        let command = call["rawInput"]["command"]
            .as_str()
            .or(call["title"].as_str())
            .unwrap_or_default();
        if command.trim().is_empty() {
            return Decision::Refuse("the call names no command git-bmad can judge".into());
        }
        match (self.judge)(command) {
            Some(why) => Decision::Refuse(why),
            None => Decision::Allow,
        }
    }

    /// A notification of the agent's.
    fn told(&mut self, message: &Value) {
        if message["method"] != "session/update" {
            return;
        }
        let update = &message["params"]["update"];
        match update["sessionUpdate"].as_str().unwrap_or_default() {
            "agent_message_chunk" => {
                if let Some(text) = update["content"]["text"].as_str() {
                    self.text.push_str(text);
                }
                let counts = &update["_meta"]["usage"];
                if counts.is_object() {
                    let total = self.chunk_usage.get_or_insert_with(ModelUsage::default);
                    let input = count(&counts["inputTokens"]);
                    let cached = count(&counts["cachedReadTokens"]).min(input);
                    total.input += input - cached;
                    total.cached += cached;
                    total.output +=
                        count(&counts["outputTokens"]) + count(&counts["thoughtTokens"]);
                }
            }
            "tool_call" => {
                self.text.clear();
                self.track_command(update);
            }
            "tool_call_update" => self.track_command(update),
            _ => {}
        }
    }

    /// Note a command the agent announces; one it reports run without asking is put to
    /// the guard then, and one the guard refuses is kept (an agent may run what its own
    /// rules hold safe unasked, as Claude Code runs read-only commands). Only a finished run
    /// counts: a call its own rules refused fails unasked.
    fn track_command(&mut self, update: &Value) {
        let Some(id) = update["toolCallId"].as_str() else {
            return;
        };
        // An update says only what changed: what it leaves out stays as announced.
        if update["kind"] == "execute" || self.commands.contains_key(id) {
            let call = self
                .commands
                .entry(id.to_owned())
                .or_insert_with(|| json!({}));
            if let (Some(call), Some(fields)) = (call.as_object_mut(), update.as_object()) {
                call.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        let ran = update["status"] == "completed";
        if ran && !self.asked_about.contains(id) {
            if let Some(call) = self.commands.remove(id) {
                if let Decision::Refuse(why) = self.judge_command(&call) {
                    self.unasked.push(format!("{}: {why}", describe(&call)));
                }
            }
        }
    }
}

impl Dialogue for Client<'_> {
    fn opening(&mut self) -> Vec<u8> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
            "clientInfo": {"name": "git-bmad", "version": env!("CARGO_PKG_VERSION")},
        });
        self.request(Ours::Initialize, "initialize", params)
    }

    fn hear(&mut self, line: &[u8]) -> Vec<u8> {
        if self.over {
            return Vec::new();
        }
        // Anything else on stdout (a log line) is not the protocol's.
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            return Vec::new();
        };
        match (message.get("method").is_some(), message.get("id").is_some()) {
            (true, true) => self.asked(&message),
            (true, false) => {
                self.told(&message);
                Vec::new()
            }
            (false, true) => self.answered(&message),
            (false, false) => Vec::new(),
        }
    }

    fn over(&self) -> bool {
        self.over
    }

    fn cancel(&mut self) -> Vec<u8> {
        match &self.session {
            Some(id) => line(&json!({"jsonrpc": "2.0", "method": "session/cancel",
                "params": {"sessionId": id}})),
            None => Vec::new(),
        }
    }
}

/// How a session lets its model be chosen.
enum ModelSetting {
    /// `session/set_model` with the id the agent knows the model by.
    Model(String),
    /// `session/set_config_option` with this option's id.
    Option(String),
}

fn model_setting(session: &Value, model: &str) -> Option<ModelSetting> {
    if session["models"].is_object() {
        // An id the agent lists under the model's name (Qwen Code's `name(authType)`), else
        // the name itself.
        let listed = session["models"]["availableModels"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["modelId"].as_str())
            .find(|id| *id == model || bare_model(id) == model);
        return Some(ModelSetting::Model(listed.unwrap_or(model).to_owned()));
    }
    model_option(session)
        .and_then(|o| o["id"].as_str())
        .map(|id| ModelSetting::Option(id.to_owned()))
}

fn model_option(session: &Value) -> Option<&Value> {
    session["configOptions"]
        .as_array()?
        .iter()
        .find(|o| o["category"] == "model")
}

/// The model a new session runs: its current model (Qwen Code adds its auth type,
/// `name(gemini)`), or its model option's value.
fn session_model(session: &Value) -> Option<String> {
    let current = session["models"]["currentModelId"]
        .as_str()
        .or_else(|| model_option(session).and_then(|o| o["currentValue"].as_str()))?;
    Some(bare_model(current).to_owned())
}

/// A model id without the qualifier an agent adds to it (`test-model(gemini)`).
fn bare_model(id: &str) -> &str {
    match id.strip_suffix(')').and_then(|s| s.rsplit_once('(')) {
        Some((name, _)) if !name.is_empty() => name,
        _ => id,
    }
}

/// The tokens of the turn, from the first place that has them.
fn usage(answer: &Value, chunks: Option<ModelUsage>, model: Option<&str>) -> Vec<ModelUsage> {
    let named = |mut usage: ModelUsage| {
        usage.model = model.map(str::to_owned);
        usage
    };
    let counts = &answer["usage"];
    if counts.is_object() {
        let (input, output) = (
            count(&counts["inputTokens"]),
            count(&counts["outputTokens"]) + count(&counts["thoughtTokens"]),
        );
        let (read, written) = (
            count(&counts["cachedReadTokens"]),
            count(&counts["cachedWriteTokens"]),
        );
        // Agents differ on whether the input counts the cache: its total says which
        // (Copilot CLI's total is input and output; OpenCode's adds the cache to them).
        let cache_in_input = read + written > 0
            && count(&counts["totalTokens"]) == input + output
            && input >= read + written;
        let fresh = if cache_in_input {
            input - read
        } else {
            input + written
        };
        return vec![named(ModelUsage {
            input: fresh,
            cached: read,
            output,
            ..ModelUsage::default()
        })];
    }
    if let Some(models) = answer["_meta"]["quota"]["model_usage"].as_array() {
        let per_model: Vec<ModelUsage> = models
            .iter()
            .map(|m| ModelUsage {
                model: m["model"].as_str().map(str::to_owned),
                input: count(&m["token_count"]["input_tokens"]),
                output: count(&m["token_count"]["output_tokens"]),
                ..ModelUsage::default()
            })
            .filter(|m| m.input + m.output > 0)
            .collect();
        if !per_model.is_empty() {
            return per_model;
        }
    }
    chunks.map(named).into_iter().collect()
}

fn count(value: &Value) -> u64 {
    value.as_u64().unwrap_or(0)
}

/// Why a turn that ended this way did not do its work, if it did not.
fn stop_problem(reason: Option<&str>) -> Option<String> {
    match reason {
        Some("end_turn") => None,
        Some("refusal") => Some("the agent refused the prompt".into()),
        Some("max_tokens") => Some("the agent ran out of tokens (max_tokens)".into()),
        Some("max_turn_requests") => Some("the agent reached its turn limit".into()),
        Some("cancelled") => Some("the turn was cancelled".into()),
        Some(other) => Some(format!("the turn stopped: {other}")),
        None => Some("the prompt's answer has no stopReason".into()),
    }
}

/// The option that carries out `decision`, as the outcome to send.
fn choose(options: &Value, decision: &Decision) -> Value {
    let kinds: &[&str] = match decision {
        Decision::Allow => &["allow_once", "allow_always"],
        Decision::Refuse(_) => &["reject_once", "reject_always"],
    };
    let options = options.as_array().map(Vec::as_slice).unwrap_or_default();
    kinds
        .iter()
        .find_map(|kind| options.iter().find(|o| o["kind"] == *kind))
        .and_then(|o| o["optionId"].as_str())
        .map(|id| json!({"outcome": "selected", "optionId": id}))
        .unwrap_or_else(|| json!({"outcome": "cancelled"}))
}

/// Every file a tool call names: its locations, its diffs, its input's paths.
fn touched_paths(call: &Value) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let mut add = |value: &Value| {
        if let Some(p) = value.as_str().filter(|p| !p.is_empty()) {
            paths.push(PathBuf::from(p));
        }
    };
    for location in call["locations"].as_array().into_iter().flatten() {
        add(&location["path"]);
    }
    for content in call["content"].as_array().into_iter().flatten() {
        add(&content["path"]);
    }
    let input = &call["rawInput"];
    for key in ["file_path", "filePath", "path", "destination", "new_path"] {
        add(&input[key]);
    }
    paths
}

/// Whether `path` (relative ones from `worktree`) names a place in the worktree, outside
/// its `.git`, read as the path is written (`..` taken back).
fn inside_worktree(worktree: &Path, path: &Path) -> bool {
    let mut resolved = PathBuf::new();
    for component in worktree.join(path).components() {
        match component {
            Component::ParentDir => {
                resolved.pop();
            }
            Component::CurDir => {}
            other => resolved.push(other),
        }
    }
    match resolved.strip_prefix(worktree) {
        Ok(rest) => !rest.components().any(|c| c.as_os_str() == ".git"),
        Err(_) => false,
    }
}

/// A tool call in words: its kind, and the command or file it names.
fn describe(call: &Value) -> String {
    let kind = call["kind"].as_str().unwrap_or("a tool call");
    let what = call["rawInput"]["command"]
        .as_str()
        .or(call["title"].as_str())
        .map(|s| format!(" ({})", crate::text::last_chars(s, 200)))
        .unwrap_or_default();
    format!("{kind}{what}")
}

fn line(message: &Value) -> Vec<u8> {
    let mut bytes = message.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::adapter::Kind;
    use crate::runner::process::{Captured, Exit};

    fn talk(client: &mut Client, line: Value) -> Option<Value> {
        let reply = client.hear(line.to_string().as_bytes());
        (!reply.is_empty()).then(|| serde_json::from_slice(&reply).unwrap())
    }

    fn result(exit: Exit) -> AgentResult {
        crate::runner::agent::interpret(
            Kind::parse("generic").unwrap(),
            exit,
            Captured::default(),
            Captured::default(),
            0,
        )
    }

    /// The guard, as a list of refused words.
    fn refusing(word: &'static str) -> Box<Judge<'static>> {
        Box::new(move |command: &str| command.contains(word).then(|| format!("{word} is refused")))
    }

    #[test]
    fn a_turn_asks_for_the_mode_that_asks_and_the_model_then_prompts() {
        let mut client = Client::new("do it", Path::new("/w"), Some("m2"), refusing("--force"));
        let init: Value = serde_json::from_slice(&client.opening()).unwrap();
        assert_eq!(init["method"], "initialize");
        assert_eq!(
            init["params"]["clientCapabilities"]["fs"]["writeTextFile"],
            false
        );
        let new = talk(
            &mut client,
            json!({"jsonrpc": "2.0", "id": 1,
            "result": {"agentInfo": {"name": "qwen-code"}}}),
        )
        .unwrap();
        assert_eq!(new["method"], "session/new");
        assert_eq!(new["params"]["cwd"], "/w");
        let mode = talk(&mut client, json!({"jsonrpc": "2.0", "id": 2, "result": {
            "sessionId": "s1",
            "models": {"currentModelId": "m1(gemini)", "availableModels": []},
            "modes": {"currentModeId": "auto", "availableModes": [{"id": "default"}, {"id": "yolo"}]},
        }}))
        .unwrap();
        assert_eq!(mode["method"], "session/set_mode");
        assert_eq!(mode["params"]["modeId"], "default");
        let model = talk(
            &mut client,
            json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
        )
        .unwrap();
        assert_eq!(model["method"], "session/set_model");
        assert_eq!(model["params"]["modelId"], "m2");
        let prompt = talk(
            &mut client,
            json!({"jsonrpc": "2.0", "id": 4, "result": {}}),
        )
        .unwrap();
        assert_eq!(prompt["method"], "session/prompt");
        assert_eq!(prompt["params"]["prompt"][0]["text"], "do it");
        assert!(!client.over());
        // The agent's own request ids run apart from ours: a request with id 4 is a request.
        let asked = talk(
            &mut client,
            json!({"jsonrpc": "2.0", "id": 5,
            "method": "session/request_permission", "params": {"sessionId": "s1",
            "options": [{"optionId": "always", "kind": "allow_always"},
                        {"optionId": "once", "kind": "allow_once"},
                        {"optionId": "no", "kind": "reject_once"}],
            "toolCall": {"kind": "execute", "title": "git push --force origin main"}}}),
        )
        .unwrap();
        assert_eq!(asked["id"], 5);
        assert_eq!(asked["result"]["outcome"]["optionId"], "no");
        assert!(!client.over(), "a refused call does not end the turn");
        talk(
            &mut client,
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "Done."},
            "_meta": {"usage": {"inputTokens": 1100, "cachedReadTokens": 1000, "outputTokens": 20}}}}}),
        );
        talk(
            &mut client,
            json!({"jsonrpc": "2.0", "id": 5, "result": {"stopReason": "end_turn"}}),
        );
        assert!(client.over());
        let mut read = result(Exit::Code(0));
        client.read_into(&mut read);
        assert_eq!(read.final_text, "Done.");
        assert_eq!(read.agent_session_id.as_deref(), Some("s1"));
        assert_eq!(read.reported_error, None);
        assert_eq!(
            read.permission_denials,
            ["execute (git push --force origin main): --force is refused"]
        );
        assert_eq!(
            read.usage,
            [ModelUsage {
                model: Some("m2".into()),
                input: 100,
                cached: 1000,
                output: 20,
                usd: None
            }]
        );
    }

    #[test]
    fn edits_stay_in_the_worktree_and_out_of_git() {
        let mut client = Client::new("x", Path::new("/w/project"), None, refusing("never"));
        let edit = |path: &str| json!({"kind": "edit", "locations": [{"path": path}]});
        assert_eq!(client.decide(&edit("/w/project/src/a.rs")), Decision::Allow);
        assert_eq!(client.decide(&edit("src/a.rs")), Decision::Allow);
        for outside in [
            "/w/project/../other/a.rs",
            "/w/project2/a.rs",
            "/etc/passwd",
            "/w/project/.git/hooks/pre-push",
            "../project/.git/config",
            "sub/.git/config",
        ] {
            assert!(
                matches!(client.decide(&edit(outside)), Decision::Refuse(_)),
                "{outside}"
            );
        }
        // Every path it names counts: a diff elsewhere than its location is refused.
        let split = json!({"kind": "edit", "locations": [{"path": "/w/project/a"}],
            "content": [{"type": "diff", "path": "/w/elsewhere"}]});
        assert!(matches!(client.decide(&split), Decision::Refuse(_)));
        assert!(matches!(
            client.decide(&json!({"kind": "delete", "locations": []})),
            Decision::Refuse(_)
        ));
        assert!(matches!(
            client.decide(&json!({"kind": "switch_mode", "title": "yolo"})),
            Decision::Refuse(_)
        ));
        assert_eq!(client.decide(&json!({"kind": "read"})), Decision::Allow);
        // A command it does not show is not run blind.
        assert!(matches!(
            client.decide(&json!({"kind": "execute", "rawInput": {}})),
            Decision::Refuse(_)
        ));
    }

    /// Commands an agent reports run: those it asked about pass, one its own rules refused
    /// does not count, one it ran unasked is put to the guard, and one the guard refuses
    /// (or cannot judge) fails the turn, whichever way it was announced.
    #[test]
    fn a_command_the_guard_refuses_run_without_asking_fails_the_turn() {
        let mut client = Client::new("x", Path::new("/w"), None, refusing("push"));
        let update = |kind: &str, id: &str, extra: Value| {
            let mut update = json!({"sessionUpdate": kind, "toolCallId": id});
            update
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().cloned().unwrap_or_default());
            json!({"jsonrpc": "2.0", "method": "session/update",
                   "params": {"sessionId": "s", "update": update}})
        };
        let command =
            |c: &str| json!({"kind": "execute", "status": "pending", "rawInput": {"command": c}});
        let completed = json!({"status": "completed"});
        // Asked, then run.
        talk(
            &mut client,
            update("tool_call", "t1", command("sh test.sh")),
        );
        let ask = json!({"jsonrpc": "2.0", "id": 9, "method": "session/request_permission",
            "params": {"sessionId": "s", "toolCall": {"toolCallId": "t1", "kind": "execute",
                "rawInput": {"command": "sh test.sh"}},
                "options": [{"optionId": "ok", "kind": "allow_once"}]}});
        assert!(talk(&mut client, ask).is_some());
        talk(
            &mut client,
            update("tool_call_update", "t1", completed.clone()),
        );
        // Refused by its own rules, unasked: it did not run.
        talk(&mut client, update("tool_call", "t2", command("git push")));
        talk(
            &mut client,
            update("tool_call_update", "t2", json!({"status": "failed"})),
        );
        // Reads are not commands; what the guard allows may run unasked.
        let read = json!({"kind": "read", "status": "completed"});
        talk(&mut client, update("tool_call", "t3", read));
        talk(
            &mut client,
            update("tool_call", "t4", command("git status")),
        );
        talk(
            &mut client,
            update("tool_call_update", "t4", completed.clone()),
        );
        assert!(client.unasked.is_empty(), "{:?}", client.unasked);
        // Run unasked, announced whole in its last update, and one it does not show.
        let pushed = json!({"kind": "execute", "status": "completed",
            "rawInput": {"command": "git push --force origin main"}});
        talk(&mut client, update("tool_call_update", "t5", pushed));
        // An update that names its kind again but not its command keeps the command.
        talk(&mut client, update("tool_call", "t7", command("ls")));
        let again = json!({"kind": "execute", "status": "completed"});
        talk(&mut client, update("tool_call_update", "t7", again));
        talk(
            &mut client,
            update("tool_call", "t6", json!({"kind": "execute"})),
        );
        talk(&mut client, update("tool_call_update", "t6", completed));
        client.answer = Some(json!({"stopReason": "end_turn"}));
        let mut turn = result(Exit::Code(0));
        client.read_into(&mut turn);
        let error = turn.reported_error.unwrap_or_default();
        assert!(
            error.starts_with("the ACP agent ran 2 command(s) the guard refuses without asking git-bmad (first: execute (git push --force origin main): push is refused)"),
            "{error}"
        );
    }

    #[test]
    fn a_refusal_with_no_reject_option_cancels_the_call() {
        let allow_only = json!([{"optionId": "ok", "kind": "allow_once"}]);
        assert_eq!(
            choose(&allow_only, &Decision::Refuse("no".into())),
            json!({"outcome": "cancelled"})
        );
        assert_eq!(
            choose(&allow_only, &Decision::Allow),
            json!({"outcome": "selected", "optionId": "ok"})
        );
    }

    #[test]
    fn tokens_are_read_where_each_agent_puts_them() {
        // The protocol's own: cache reads and writes apart from the input.
        let spec = json!({"stopReason": "end_turn", "usage": {"inputTokens": 100,
            "outputTokens": 20, "cachedReadTokens": 1000, "cachedWriteTokens": 500,
            "thoughtTokens": 5, "totalTokens": 1625}});
        assert_eq!(
            usage(&spec, None, Some("anthropic/m")),
            [ModelUsage {
                model: Some("anthropic/m".into()),
                input: 600,
                cached: 1000,
                output: 25,
                usd: None
            }]
        );
        // Copilot CLI's input holds the cache, as its total shows.
        let copilot = json!({"stopReason": "end_turn", "usage": {"inputTokens": 6400,
            "outputTokens": 80, "totalTokens": 6480, "cachedReadTokens": 4000,
            "cachedWriteTokens": 2000}});
        let read = usage(&copilot, None, Some("m"));
        assert_eq!(
            (read[0].input, read[0].cached, read[0].output),
            (2400, 4000, 80)
        );
        // Gemini CLI's, per model.
        let quota = json!({"stopReason": "end_turn", "_meta": {"quota": {"model_usage": [
            {"model": "g1", "token_count": {"input_tokens": 3, "output_tokens": 1}},
            {"model": "g2", "token_count": {"input_tokens": 0, "output_tokens": 0}}]}}});
        let read = usage(&quota, None, Some("other"));
        assert_eq!(read.len(), 1);
        assert_eq!((read[0].model.as_deref(), read[0].input), (Some("g1"), 3));
        // None at all: nothing is made up.
        assert!(usage(&json!({"stopReason": "end_turn"}), None, Some("m")).is_empty());
    }

    #[test]
    fn errors_and_early_ends_are_the_agents_own_words() {
        let mut client = Client::new("x", Path::new("/w"), None, refusing("never"));
        client.opening();
        talk(
            &mut client,
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        );
        talk(
            &mut client,
            json!({"jsonrpc": "2.0", "id": 2,
            "error": {"code": -32000, "message": "Authentication required"}}),
        );
        assert!(client.over());
        let mut read = result(Exit::Code(0));
        client.read_into(&mut read);
        assert_eq!(
            read.reported_error.as_deref(),
            Some("the ACP agent refused `session/new`: Authentication required")
        );

        let mut client = Client::new("x", Path::new("/w"), None, refusing("never"));
        client.opening();
        let mut read = result(Exit::Code(0));
        client.read_into(&mut read);
        assert_eq!(
            read.reported_error.as_deref(),
            Some("the ACP agent ended before it answered the prompt")
        );
        assert_eq!(
            stop_problem(Some("max_turn_requests")).as_deref(),
            Some("the agent reached its turn limit")
        );
        assert_eq!(
            session_model(
                &json!({"configOptions": [{"id": "model", "category": "model",
                "currentValue": "anthropic/test-model"}]})
            )
            .as_deref(),
            Some("anthropic/test-model")
        );
    }

    #[test]
    fn a_model_is_chosen_by_the_id_the_agent_lists_and_not_again_when_current() {
        let session = json!({"sessionId": "s", "models": {"currentModelId": "a(gemini)",
            "availableModels": [{"modelId": "a(gemini)"}, {"modelId": "b(openai)"}]}});
        for (wanted, sent) in [("a", None), ("b", Some("b(openai)")), ("c", Some("c"))] {
            let mut client = Client::new("x", Path::new("/w"), Some(wanted), refusing("never"));
            client.opening();
            talk(
                &mut client,
                json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            );
            let mut reply = json!({"jsonrpc": "2.0", "id": 2, "result": session});
            reply["result"]["sessionId"] = json!("s");
            let next = talk(&mut client, reply).unwrap();
            match sent {
                None => assert_eq!(next["method"], "session/prompt", "{wanted}"),
                Some(id) => assert_eq!(next["params"]["modelId"], id, "{wanted}"),
            }
        }
    }

    #[test]
    fn a_model_the_agent_cannot_choose_fails_before_the_prompt() {
        let mut client = Client::new("x", Path::new("/w"), Some("m"), refusing("never"));
        client.opening();
        talk(
            &mut client,
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        );
        let reply = talk(
            &mut client,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s"}}),
        );
        assert_eq!(reply, None);
        assert!(client.over());
    }
}

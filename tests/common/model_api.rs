//! A scripted model API on 127.0.0.1, so the real agent CLIs run against a model whose every
//! answer the test chose: Anthropic's Messages API (Claude Code, `ANTHROPIC_BASE_URL`),
//! OpenAI's Responses API (Codex, a custom provider) and Gemini's `generateContent`
//! (`GOOGLE_GEMINI_BASE_URL`), each streamed the way the real service streams it.
//!
//! The script is one list of [`Turn`]s. Which turn a request gets is read from the request
//! itself — the number of tool results already in the conversation — so the server keeps no
//! conversation state and a CLI's retry of a request gets the same turn again. Requests that
//! are not the agent's conversation (Gemini's model router, a title or a next-speaker check:
//! they carry no tools) get a small answer of their own and never use up a turn.
//!
//! Bounded: at most [`MAX_REQUESTS`] requests, each connection read with a timeout; the
//! server stops when the `ModelApi` is dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// The most requests one server answers; after that it answers 500 (a runaway loop ends).
pub const MAX_REQUESTS: usize = 400;

/// What the model does at one point of the conversation.
#[derive(Clone, Debug)]
pub enum Turn {
    /// Run a shell command with the CLI's shell tool.
    Shell(String),
    /// Write a file with the CLI's file tool (Codex has none: a shell heredoc).
    Write { path: String, content: String },
    /// Claude Code only: run a shell command inside a subagent (the Task tool).
    SubagentShell(String),
    /// The final answer; the conversation ends.
    Answer(String),
    /// The final answer, as a model that follows instructions gives it: with a last line
    /// `VERDICT: PASS` when the conversation asks for a verdict, without one when not.
    Reply(String),
    /// Answer this HTTP status and error message, `times` times, then go on to the next
    /// turn (`u32::MAX`: always).
    Fail {
        status: u16,
        message: String,
        times: u32,
    },
    /// Never answer (the CLI hangs until it is killed).
    Hang,
}

/// One request the server saw.
#[derive(Clone, Debug)]
pub struct Seen {
    /// `POST /v1/messages?beta=true`.
    pub line: String,
    /// The parsed body (`Null` if it was not JSON).
    pub body: Value,
}

/// A running server.
pub struct ModelApi {
    port: u16,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

struct Shared {
    script: Vec<Turn>,
    /// Scripts chosen by the conversation's first message: the first whose marker it holds
    /// (each invocation of a multi-step run gets its own).
    by_prompt: Vec<(String, Vec<Turn>)>,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// How often each failing turn has been answered.
    failures: Mutex<Vec<u32>>,
    /// How long the model takes over each answer.
    latency: Duration,
    stop: Arc<AtomicBool>,
}

impl ModelApi {
    /// Serve `script` on an ephemeral port of 127.0.0.1.
    pub fn start(script: Vec<Turn>) -> ModelApi {
        ModelApi::serve_scripts(script, Vec::new(), Duration::ZERO)
    }

    /// Serve `script` as a model that takes `latency` over each answer, as a real one does
    /// (a CLI's output then has the time to be read between its requests).
    pub fn start_paced(script: Vec<Turn>, latency: Duration) -> ModelApi {
        ModelApi::serve_scripts(script, Vec::new(), latency)
    }

    /// Serve one script per kind of conversation: each `(marker, script)` answers the
    /// conversations whose first message holds `marker` (a slash command's own text, a
    /// step's prompt); any other gets a bare answer.
    pub fn start_by_prompt(scripts: Vec<(&str, Vec<Turn>)>) -> ModelApi {
        let by_prompt = scripts
            .into_iter()
            .map(|(marker, script)| (marker.to_owned(), script))
            .collect();
        ModelApi::serve_scripts(Vec::new(), by_prompt, Duration::ZERO)
    }

    fn serve_scripts(
        script: Vec<Turn>,
        by_prompt: Vec<(String, Vec<Turn>)>,
        latency: Duration,
    ) -> ModelApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            failures: Mutex::new(vec![0; script.len()]),
            script,
            by_prompt,
            seen: seen.clone(),
            stop: stop.clone(),
            latency,
        });
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let shared = shared.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &shared);
                });
            }
        });
        ModelApi { port, stop, seen }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }
}

impl Drop for ModelApi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// The three APIs, told apart by path.
#[derive(Clone, Copy, PartialEq)]
enum Api {
    Anthropic,
    OpenAi,
    Gemini,
}

fn serve(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let line = line.trim_end().to_owned();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let count = {
        let mut seen = shared.seen.lock().expect("lock");
        seen.push(Seen {
            line: line.clone(),
            body: body.clone(),
        });
        seen.len()
    };
    if count > MAX_REQUESTS || shared.stop.load(Ordering::SeqCst) {
        return respond_json(&mut stream, 500, &json!({"error": "request limit"}));
    }
    let path = line.split_whitespace().nth(1).unwrap_or_default();
    // Token counting (Anthropic's and Gemini's) needs no script.
    if path.contains("count_tokens") || path.contains("countTokens") {
        return respond_json(
            &mut stream,
            200,
            &json!({"input_tokens": 10, "totalTokens": 10}),
        );
    }
    let api = if path.contains("/messages") {
        Api::Anthropic
    } else if path.contains("/responses") {
        Api::OpenAi
    } else if path.to_ascii_lowercase().contains("generatecontent") {
        Api::Gemini
    } else {
        return respond_json(
            &mut stream,
            404,
            &json!({"error": format!("the scripted model API has no {path}")}),
        );
    };
    // The model that serves, as the real APIs name it in their answers: the one asked for.
    let model = match api {
        Api::Gemini => path
            .split("/models/")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .unwrap_or("gemini-test")
            .to_owned(),
        _ => body["model"].as_str().unwrap_or("model-test").to_owned(),
    };
    let streamed = match api {
        Api::Gemini => path.contains(":streamGenerateContent"),
        _ => body["stream"].as_bool().unwrap_or(false),
    };
    // Every answer goes back in the API's shape, from the model asked for, once it is
    // thought of.
    std::thread::sleep(shared.latency);
    let send = |stream: &mut TcpStream, parts: &[Part], tool: bool| {
        reply(stream, api, &model, streamed, parts, tool)
    };
    if !has_tools(api, &body) {
        let text = side_answer(api, &body);
        return send(&mut stream, &[Part::Text(text)], false);
    }
    if api == Api::Anthropic {
        if let Some(command) = subagent_command(&body) {
            let ran = tool_results(api, &body) > 0;
            let part = if ran {
                Part::Text("ran it".into())
            } else {
                shell_call(api, &body, &command)
            };
            return send(&mut stream, &[part], !ran);
        }
    }
    let index = tool_results(api, &body);
    let turn = if shared.by_prompt.is_empty() {
        turn_at(shared, index)
    } else {
        let first = first_message(api, &body);
        shared
            .by_prompt
            .iter()
            .find(|(marker, _)| first.contains(marker.as_str()))
            .and_then(|(_, script)| script.get(index).cloned())
            .unwrap_or_else(|| Turn::Answer("done".into()))
    };
    match turn {
        Turn::Fail {
            status, message, ..
        } => respond_error(&mut stream, api, status, &message),
        Turn::Hang => {
            std::thread::sleep(Duration::from_secs(3600));
            Ok(())
        }
        Turn::Answer(text) => send(&mut stream, &[Part::Text(text)], false),
        Turn::Reply(text) => {
            let asked = body.to_string().contains("VERDICT: PASS or VERDICT: FAIL");
            let text = if asked {
                format!("{text}\nVERDICT: PASS")
            } else {
                text
            };
            send(&mut stream, &[Part::Text(text)], false)
        }
        Turn::Shell(command) => {
            let call = shell_call(api, &body, &command);
            send(&mut stream, &[call], true)
        }
        Turn::Write { path, content } => {
            let tools = offered(api, &body);
            let write = ["Write", "write", "write_file"]
                .into_iter()
                .find_map(|name| tools.iter().find(|(n, _)| n == name));
            let call = match write {
                Some((name, schema)) => {
                    let (key, path) = path_as_asked(&body, schema, &path);
                    Part::Call(name.clone(), json!({key: path, "content": content}))
                }
                // No file tool (Codex): a heredoc, which ends every file with a newline, so
                // it is given one to end with.
                None => shell_call(
                    api,
                    &body,
                    &format!(
                        "mkdir -p \"$(dirname '{path}')\" && cat > '{path}' <<'BMAD_EOF'\n{}\nBMAD_EOF",
                        content.strip_suffix('\n').unwrap_or(&content)
                    ),
                ),
            };
            send(&mut stream, &[call], true)
        }
        Turn::SubagentShell(command) => {
            let call = Part::Call(
                "Task".into(),
                json!({
                    "description": "run a command",
                    "prompt": format!("{SUBAGENT_PROMPT}{command}"),
                    "subagent_type": "general-purpose"
                }),
            );
            send(&mut stream, &[call], true)
        }
    }
}

/// The tools the request offers, each with its parameters' schema, as a model sees them.
fn offered(api: Api, body: &Value) -> Vec<(String, Value)> {
    let tools = body["tools"].as_array().into_iter().flatten();
    let declared: Vec<&Value> = match api {
        Api::Gemini => tools
            .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
            .collect(),
        _ => tools.collect(),
    };
    declared
        .into_iter()
        .filter_map(|tool| {
            let name = tool["name"].as_str()?.to_owned();
            let schema = ["input_schema", "parameters", "parametersJsonSchema"]
                .into_iter()
                .map(|key| &tool[key])
                .find(|s| s.is_object())
                .cloned()
                .unwrap_or(Value::Null);
            Some((name, schema))
        })
        .collect()
}

/// The name a file tool's path parameter has, and `path` as it asks for it: absolute, under
/// the directory the conversation says it works in, when its description says so (Qwen
/// Code's, OpenCode's), as a model reading both would write it.
fn path_as_asked(body: &Value, schema: &Value, path: &str) -> (String, String) {
    let properties = &schema["properties"];
    let key = ["file_path", "filePath", "path"]
        .into_iter()
        .find(|k| properties.get(*k).is_some())
        .unwrap_or("file_path");
    let said = properties[key]["description"].as_str().unwrap_or_default();
    let absolute = said.to_ascii_lowercase().contains("absolute");
    let text = body.to_string();
    let dir = ["working in the directory: ", "Working directory: "]
        .into_iter()
        .find_map(|marker| {
            let at = text.find(marker)?;
            let rest = &text[at + marker.len()..];
            let end = rest.find("\\n").unwrap_or(rest.len());
            Some(rest[..end].trim().to_owned())
        });
    let path = match dir {
        Some(dir) if absolute => format!("{dir}/{path}"),
        _ => path.to_owned(),
    };
    (key.to_owned(), path)
}

/// The turn for a conversation with `index` tool results, counting failures.
fn turn_at(shared: &Shared, index: usize) -> Turn {
    let mut failures = shared.failures.lock().expect("lock");
    let mut at = 0usize;
    let mut results = index;
    // A `Fail` turn that has failed its times is skipped over without using up a tool result.
    loop {
        let Some(turn) = shared.script.get(at) else {
            return Turn::Answer("done".into());
        };
        if let Turn::Fail { times, .. } = turn {
            if failures[at] < *times {
                failures[at] += 1;
                return turn.clone();
            }
            at += 1;
            continue;
        }
        if results == 0 {
            return turn.clone();
        }
        results -= 1;
        at += 1;
    }
}

/// The CLI's shell tool called with `command`.
fn shell_call(api: Api, body: &Value, command: &str) -> Part {
    // The shell tool the CLI offers, by the name it gives it.
    let tools = offered(api, body);
    let has = |name: &str| tools.iter().any(|(n, _)| n == name);
    if has("Bash") || has("bash") {
        let name = if has("Bash") { "Bash" } else { "bash" };
        return Part::Call(
            name.into(),
            json!({"command": command, "description": "run a command"}),
        );
    }
    match api {
        Api::Anthropic => Part::Call(
            "Bash".into(),
            json!({"command": command, "description": "run a command"}),
        ),
        Api::OpenAi => Part::Call("exec_command".into(), json!({"cmd": command})),
        Api::Gemini => Part::Call("run_shell_command".into(), json!({"command": command})),
    }
}

fn has_tools(api: Api, body: &Value) -> bool {
    match api {
        Api::Gemini => body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["functionDeclarations"].is_array())),
        _ => body["tools"].as_array().is_some_and(|t| !t.is_empty()),
    }
}

/// The text of the conversation's first message (the prompt, with what the CLI put
/// around it), as JSON text.
fn first_message(api: Api, body: &Value) -> String {
    let list = match api {
        Api::Anthropic => "messages",
        Api::OpenAi => "input",
        Api::Gemini => "contents",
    };
    body[list][0].to_string()
}

/// How many tool results the conversation holds so far.
fn tool_results(api: Api, body: &Value) -> usize {
    // Where each API keeps its conversation, and what a tool result looks like in it.
    let (list, parts, is_result): (&str, Option<&str>, fn(&Value) -> bool) = match api {
        Api::Anthropic => ("messages", Some("content"), |b| b["type"] == "tool_result"),
        Api::OpenAi => ("input", None, |i| {
            i["type"]
                .as_str()
                .is_some_and(|t| t.ends_with("call_output"))
        }),
        Api::Gemini => ("contents", Some("parts"), |p| {
            p.get("functionResponse").is_some()
        }),
    };
    let items = body[list].as_array().into_iter().flatten();
    match parts {
        Some(key) => items
            .filter_map(|m| m[key].as_array())
            .flatten()
            .filter(|b| is_result(b))
            .count(),
        None => items.filter(|i| is_result(i)).count(),
    }
}

/// The command a Claude subagent was sent to run, when `body` is that subagent's own
/// conversation (its first message is the prompt of a [`Turn::SubagentShell`]).
fn subagent_command(body: &Value) -> Option<String> {
    let first = &body["messages"][0]["content"];
    let text = match first {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    text.split_once(SUBAGENT_PROMPT)
        .map(|(_, command)| command.trim().to_owned())
}

const SUBAGENT_PROMPT: &str = "Run exactly this shell command with the Bash tool: ";

/// An answer to a request that is not the agent's conversation: a value fitting the JSON
/// schema asked for (Gemini's router and next-speaker check), else a short text.
fn side_answer(api: Api, body: &Value) -> String {
    let schema = &body["generationConfig"]["responseJsonSchema"];
    let schema = if schema.is_object() {
        schema
    } else {
        &body["generationConfig"]["responseSchema"]
    };
    if api == Api::Gemini && schema.is_object() {
        return fake_value(schema).to_string();
    }
    "ok".into()
}

/// The simplest value of a JSON schema; an enum prefers "user" (the next speaker is the
/// user: the turn ends).
fn fake_value(schema: &Value) -> Value {
    if let Some(options) = schema["enum"].as_array() {
        return options
            .iter()
            .find(|o| *o == "user")
            .or(options.first())
            .cloned()
            .unwrap_or(Value::Null);
    }
    match schema["type"]
        .as_str()
        .unwrap_or("object")
        .to_ascii_lowercase()
        .as_str()
    {
        "object" => {
            let mut out = serde_json::Map::new();
            if let Some(properties) = schema["properties"].as_object() {
                for (name, property) in properties {
                    out.insert(name.clone(), fake_value(property));
                }
            }
            Value::Object(out)
        }
        "array" => json!([]),
        "integer" | "number" => json!(10),
        "boolean" => json!(false),
        _ => json!("simple"),
    }
}

/// One piece of a model message.
enum Part {
    Text(String),
    Call(String, Value),
}

/// Usage every reply reports: the Anthropic one with cache reads and writes, so a tool that
/// leaves them out is caught.
const INPUT: u64 = 100;
const CACHE_READ: u64 = 1000;
const CACHE_WRITE: u64 = 500;
const OUTPUT: u64 = 20;

fn reply(
    stream: &mut TcpStream,
    api: Api,
    model: &str,
    streamed: bool,
    parts: &[Part],
    tool: bool,
) -> std::io::Result<()> {
    match api {
        Api::Anthropic => anthropic(stream, model, streamed, parts, tool),
        Api::OpenAi => openai(stream, model, parts),
        Api::Gemini => gemini(stream, model, streamed, parts),
    }
}

fn anthropic(
    stream: &mut TcpStream,
    model: &str,
    streamed: bool,
    parts: &[Part],
    tool: bool,
) -> std::io::Result<()> {
    let id = unique("msg");
    let stop = if tool { "tool_use" } else { "end_turn" };
    let blocks: Vec<Value> = parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => json!({"type": "text", "text": t}),
            Part::Call(name, input) => {
                json!({"type": "tool_use", "id": unique("toolu"), "name": name, "input": input})
            }
        })
        .collect();
    let usage = json!({
        "input_tokens": INPUT,
        "cache_read_input_tokens": CACHE_READ,
        "cache_creation_input_tokens": CACHE_WRITE,
        "output_tokens": OUTPUT
    });
    if !streamed {
        return respond_json(
            stream,
            200,
            &json!({"id": id, "type": "message", "role": "assistant", "model": model,
                    "content": blocks, "stop_reason": stop, "stop_sequence": null, "usage": usage}),
        );
    }
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {"id": id, "type": "message",
            "role": "assistant", "model": model, "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": INPUT,
            "cache_read_input_tokens": CACHE_READ, "cache_creation_input_tokens": CACHE_WRITE,
            "output_tokens": 1}}}),
    )];
    for (index, block) in blocks.iter().enumerate() {
        if block["type"] == "text" {
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": index,
                       "content_block": {"type": "text", "text": ""}}),
            ));
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "text_delta", "text": block["text"]}}),
            ));
        } else {
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": index,
                       "content_block": {"type": "tool_use", "id": block["id"],
                                         "name": block["name"], "input": {}}}),
            ));
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "input_json_delta",
                                 "partial_json": block["input"].to_string()}}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": OUTPUT}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    respond_sse(stream, &events)
}

fn openai(stream: &mut TcpStream, model: &str, parts: &[Part]) -> std::io::Result<()> {
    let id = unique("resp");
    let mut events = vec![(
        "response.created",
        json!({"type": "response.created", "response": {"id": id, "model": model}}),
    )];
    for part in parts {
        let item = match part {
            Part::Text(t) => json!({"type": "message", "role": "assistant", "id": unique("msg"),
                                    "content": [{"type": "output_text", "text": t}]}),
            Part::Call(name, args) => json!({"type": "function_call", "id": unique("fc"),
                                             "call_id": unique("call"), "name": name,
                                             "arguments": args.to_string()}),
        };
        events.push((
            "response.output_item.done",
            json!({"type": "response.output_item.done", "item": item}),
        ));
    }
    events.push((
        "response.completed",
        json!({"type": "response.completed", "response": {"id": id, "model": model, "usage": {
            "input_tokens": INPUT + CACHE_READ,
            "input_tokens_details": {"cached_tokens": CACHE_READ},
            "output_tokens": OUTPUT,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": INPUT + CACHE_READ + OUTPUT}}}),
    ));
    respond_sse(stream, &events)
}

fn gemini(
    stream: &mut TcpStream,
    model: &str,
    streamed: bool,
    parts: &[Part],
) -> std::io::Result<()> {
    let parts: Vec<Value> = parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => json!({"text": t}),
            Part::Call(name, args) => json!({"functionCall": {"name": name, "args": args}}),
        })
        .collect();
    let response = json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                        "index": 0}],
        "usageMetadata": {"promptTokenCount": INPUT + CACHE_READ,
                          "cachedContentTokenCount": CACHE_READ,
                          "candidatesTokenCount": OUTPUT,
                          "totalTokenCount": INPUT + CACHE_READ + OUTPUT},
        "modelVersion": model
    });
    if streamed {
        respond_sse(stream, &[("", response)])
    } else {
        respond_json(stream, 200, &response)
    }
}

fn respond_error(
    stream: &mut TcpStream,
    api: Api,
    status: u16,
    message: &str,
) -> std::io::Result<()> {
    let body = match api {
        Api::Anthropic => {
            json!({"type": "error", "error": {"type": error_type(status), "message": message}})
        }
        Api::OpenAi => {
            json!({"error": {"type": error_type(status), "message": message, "code": error_type(status)}})
        }
        Api::Gemini => {
            json!({"error": {"code": status, "message": message, "status": error_type(status)}})
        }
    };
    respond_json(stream, status, &body)
}

fn error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

fn respond_json(stream: &mut TcpStream, status: u16, body: &Value) -> std::io::Result<()> {
    let body = body.to_string();
    write!(
        stream,
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

fn respond_sse(stream: &mut TcpStream, events: &[(&str, Value)]) -> std::io::Result<()> {
    let mut body = String::new();
    for (name, data) in events {
        if !name.is_empty() {
            body.push_str(&format!("event: {name}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    }
    write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

fn unique(prefix: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    format!("{prefix}_{}", NEXT.fetch_add(1, Ordering::SeqCst))
}

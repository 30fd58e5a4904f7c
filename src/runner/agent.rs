//! Adapters for the agent CLIs: how each is invoked headless, and how its output is read
//! into one [`AgentResult`].
//!
//! Output shapes (what the parsers below expect):
//! - `claude -p <prompt> --output-format json`: one JSON object, `{"type":"result",
//!   "subtype":"success"|"error_…", "is_error":bool, "result":"<final text>", "session_id":…,
//!   "total_cost_usd":…, "usage":{"input_tokens":…,"output_tokens":…},
//!   "permission_denials":[{"tool_name":…,"tool_input":{…}}], "structured_output":{…}}`;
//! - `codex exec --json <prompt>`: JSON lines, `{"type":"thread.started","thread_id":…}`,
//!   `{"type":"item.completed","item":{"type":"agent_message","text":…}}`,
//!   `{"type":"turn.completed","usage":{"input_tokens":…,"output_tokens":…}}`,
//!   `{"type":"turn.failed","error":{"message":…}}`, `{"type":"error","message":…}`;
//! - `gemini -p <prompt> --output-format json`: one JSON object, `{"response":…,
//!   "stats":{"models":{"<model>":{"tokens":{"prompt":…,"candidates":…}}}},"error":{…}}`;
//!   exit 42 is bad input, 53 the turn limit;
//! - `shell` and `generic`: plain text; the final text is the end of stdout.
//!
//! Exit 0 alone is never success: a denied tool call or an error the CLI reports in its JSON
//! fails the invocation, and the supervisor's postconditions decide whether the step did
//! its job. The verdict is the agent's own claim (`VERDICT: PASS|FAIL` as a line of its final
//! text, or `structured_output.verdict`); a breaking change is claimed with a
//! `BREAKING CHANGE:` line, the Conventional Commits footer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{Error, Result};
use super::process::{self, Captured, Exit, Spec};
use crate::text::last_chars;

/// The runners git-bmad knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Claude Code.
    Claude,
    /// OpenAI Codex CLI.
    Codex,
    /// Gemini CLI.
    Gemini,
    /// `sh -c <command>`.
    Shell,
    /// Any command, configured in `runners.generic.command`.
    Generic,
}

impl Kind {
    /// Every runner, for messages.
    pub const ALL: [Kind; 5] = [
        Kind::Claude,
        Kind::Codex,
        Kind::Gemini,
        Kind::Shell,
        Kind::Generic,
    ];

    /// Parse a runner name.
    pub fn parse(name: &str) -> Result<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| Error::UnknownRunner {
                runner: name.to_owned(),
                known: Kind::names(),
            })
    }

    /// The runner's name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Kind::Claude => "claude",
            Kind::Codex => "codex",
            Kind::Gemini => "gemini",
            Kind::Shell => "shell",
            Kind::Generic => "generic",
        }
    }

    /// `claude, codex, …`.
    pub fn names() -> String {
        Kind::ALL.map(|k| k.as_str()).join(", ")
    }

    /// Whether the runner is an AI agent (so a slash command means something to it).
    pub fn is_agent(&self) -> bool {
        !matches!(self, Kind::Shell)
    }
}

/// The `runners:` section of `.bmad/config.yaml`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct RunnersConfig {
    /// The runner of steps that name neither a runner nor a role with one.
    pub default: String,
    /// Runner per role (`dev: codex`, `qa: claude`).
    pub roles: BTreeMap<String, String>,
    /// Claude Code.
    pub claude: CliConfig,
    /// Codex.
    pub codex: CliConfig,
    /// Gemini.
    pub gemini: CliConfig,
    /// Any other agent.
    pub generic: GenericConfig,
}

impl Default for RunnersConfig {
    fn default() -> Self {
        RunnersConfig {
            default: "claude".into(),
            roles: BTreeMap::new(),
            claude: CliConfig::default(),
            codex: CliConfig::default(),
            gemini: CliConfig::default(),
            generic: GenericConfig::default(),
        }
    }
}

/// How to call one of the known agent CLIs.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct CliConfig {
    /// The program (default: the runner's name, found on PATH).
    pub program: Option<String>,
    /// Arguments that replace git-bmad's default permission arguments (see [`default_args`]).
    pub args: Option<Vec<String>>,
}

/// How to call an agent git-bmad has no adapter for.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct GenericConfig {
    /// Program and arguments; `{prompt}` is replaced by the prompt, else it goes on stdin.
    pub command: Vec<String>,
}

/// The permission arguments each agent gets unless configured otherwise: edits inside the
/// worktree allowed, nothing else granted. The guard hook and git hooks still apply.
pub fn default_args(kind: Kind) -> Vec<String> {
    let args: &[&str] = match kind {
        Kind::Claude => &["--permission-mode", "acceptEdits"],
        Kind::Codex => &["--sandbox", "workspace-write"],
        Kind::Gemini => &["--approval-mode", "auto_edit"],
        Kind::Shell | Kind::Generic => &[],
    };
    args.iter().map(|s| s.to_string()).collect()
}

impl RunnersConfig {
    /// The runner for a step: its own, else its role's, else the default.
    pub fn choose(&self, runner: Option<&str>, role: Option<&str>) -> Result<Kind> {
        let name = runner
            .or_else(|| role.and_then(|r| self.roles.get(r)).map(String::as_str))
            .unwrap_or(&self.default);
        Kind::parse(name)
    }

    fn program(&self, kind: Kind) -> Result<String> {
        let configured = match kind {
            Kind::Claude => self.claude.program.clone(),
            Kind::Codex => self.codex.program.clone(),
            Kind::Gemini => self.gemini.program.clone(),
            Kind::Shell => Some("sh".into()),
            Kind::Generic => Some(
                self.generic
                    .command
                    .first()
                    .cloned()
                    .ok_or(Error::GenericUnconfigured)?,
            ),
        };
        Ok(configured.unwrap_or_else(|| kind.as_str().to_owned()))
    }

    /// Find the runner's program now, so a missing CLI stops a run before its first step.
    pub fn locate(&self, kind: Kind, cwd: &Path) -> Result<PathBuf> {
        let program = self.program(kind)?;
        which::which_in(&program, std::env::var_os("PATH"), cwd).map_err(|_| Error::NotInstalled {
            runner: kind.as_str().to_owned(),
            program,
        })
    }

    /// The argument list for one invocation, and the bytes for stdin. A model goes in as
    /// `--model`, which Claude Code, Codex and Gemini CLI all take.
    pub fn arguments(
        &self,
        kind: Kind,
        prompt: &str,
        model: Option<&str>,
    ) -> (Vec<String>, Option<Vec<u8>>) {
        let (mut args, stdin) = self.base_arguments(kind, prompt);
        if let Some(m) = model.filter(|_| matches!(kind, Kind::Claude | Kind::Codex | Kind::Gemini))
        {
            // Before codex's trailing prompt; anywhere for the others.
            let at = if kind == Kind::Codex {
                args.len().saturating_sub(1)
            } else {
                args.len()
            };
            args.splice(at..at, ["--model".to_owned(), m.to_owned()]);
        }
        (args, stdin)
    }

    fn base_arguments(&self, kind: Kind, prompt: &str) -> (Vec<String>, Option<Vec<u8>>) {
        let extra = |c: &CliConfig| c.args.clone().unwrap_or_else(|| default_args(kind));
        let strings = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match kind {
            Kind::Claude => {
                let mut args = strings(&["-p", prompt, "--output-format", "json"]);
                args.extend(extra(&self.claude));
                (args, None)
            }
            Kind::Codex => {
                let mut args = strings(&["exec", "--json"]);
                args.extend(extra(&self.codex));
                args.push(prompt.to_owned());
                (args, None)
            }
            Kind::Gemini => {
                let mut args = strings(&["-p", prompt, "--output-format", "json"]);
                args.extend(extra(&self.gemini));
                (args, None)
            }
            Kind::Shell => (strings(&["-c", prompt]), None),
            Kind::Generic => {
                let rest = self.generic.command.get(1..).unwrap_or_default();
                let templated = rest.iter().any(|a| a.contains("{prompt}"));
                let args = rest.iter().map(|a| a.replace("{prompt}", prompt)).collect();
                (args, (!templated).then(|| prompt.as_bytes().to_vec()))
            }
        }
    }
}

/// What the agent said it thought of its own work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// It passed.
    Pass,
    /// It failed.
    Fail,
}

/// One invocation of one runner, in the shape every adapter returns.
#[derive(Clone, Debug, Serialize)]
pub struct AgentResult {
    /// The runner.
    pub runner: Kind,
    /// How the process ended.
    pub exit: Exit,
    /// The agent's final answer (or the end of stdout).
    pub final_text: String,
    /// The agent's verdict, if it gave one.
    pub verdict: Option<Verdict>,
    /// Whether the agent reported a breaking change.
    pub breaking_change: bool,
    /// The agent CLI's own session id (to inspect its transcript).
    pub agent_session_id: Option<String>,
    /// Input tokens, when the CLI reports them.
    pub tokens_in: Option<u64>,
    /// Output tokens, when the CLI reports them.
    pub tokens_out: Option<u64>,
    /// Cost in US dollars, when the CLI reports it.
    pub cost_usd: Option<f64>,
    /// Tool calls the agent was refused.
    pub permission_denials: Vec<String>,
    /// An error the CLI reported in its output, exit code aside.
    pub reported_error: Option<String>,
    /// Wall-clock time.
    pub duration_ms: u64,
    /// Raw stdout.
    #[serde(skip)]
    pub stdout: Captured,
    /// Raw stderr.
    #[serde(skip)]
    pub stderr: Captured,
}

impl AgentResult {
    /// Why the invocation failed as a process, if it did: exit status, an error the CLI
    /// reported, or refused tool calls. `None` does not mean the step succeeded.
    pub fn failure(&self) -> Option<String> {
        if !self.exit.success() {
            return Some(format!("{} {}", self.runner.as_str(), self.exit));
        }
        if let Some(error) = &self.reported_error {
            return Some(format!(
                "{} reported an error: {error}",
                self.runner.as_str()
            ));
        }
        if !self.permission_denials.is_empty() {
            return Some(format!(
                "{} was refused {} tool call(s): {}",
                self.runner.as_str(),
                self.permission_denials.len(),
                self.permission_denials.join("; ")
            ));
        }
        None
    }
}

/// What to run, and where.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// The runner.
    pub kind: Kind,
    /// Its program, found with [`RunnersConfig::locate`].
    pub program: PathBuf,
    /// The prompt (or shell command).
    pub prompt: String,
    /// `--model`, if the step's role has one.
    pub model: Option<String>,
    /// The worktree.
    pub cwd: PathBuf,
    /// Extra environment (the session and step, for hooks and the agent).
    pub env: Vec<(String, String)>,
    /// Wall-clock limit.
    pub timeout: Duration,
}

/// Variables that must not leak from a hook's environment into an agent's: they would point
/// its git at another repository or index.
pub const GIT_ENV_TO_CLEAR: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_PREFIX",
];

/// Run one invocation (a fresh process, so a fresh context) and read its result.
pub fn invoke(config: &RunnersConfig, invocation: &Invocation) -> Result<AgentResult> {
    let (args, stdin) = config.arguments(
        invocation.kind,
        &invocation.prompt,
        invocation.model.as_deref(),
    );
    let output = process::run(&Spec {
        program: invocation.program.clone(),
        args,
        cwd: invocation.cwd.clone(),
        env: invocation.env.clone(),
        env_remove: GIT_ENV_TO_CLEAR.iter().map(|s| s.to_string()).collect(),
        stdin,
        timeout: invocation.timeout,
    })?;
    Ok(interpret(
        invocation.kind,
        output.exit,
        output.stdout,
        output.stderr,
        output.duration.as_millis() as u64,
    ))
}

/// Read a finished process's output into the common shape.
pub fn interpret(
    kind: Kind,
    exit: Exit,
    stdout: Captured,
    stderr: Captured,
    duration_ms: u64,
) -> AgentResult {
    let mut result = AgentResult {
        runner: kind,
        exit,
        final_text: String::new(),
        verdict: None,
        breaking_change: false,
        agent_session_id: None,
        tokens_in: None,
        tokens_out: None,
        cost_usd: None,
        permission_denials: Vec::new(),
        reported_error: None,
        duration_ms,
        stdout,
        stderr,
    };
    let parsed = match kind {
        Kind::Claude => read_claude(&mut result),
        Kind::Codex => read_codex(&mut result),
        Kind::Gemini => read_gemini(&mut result),
        Kind::Shell | Kind::Generic => false,
    };
    if !parsed {
        let tail = result.stdout.tail();
        let text = String::from_utf8_lossy(&tail);
        result.final_text = last_chars(text.trim_end(), 4000);
    }
    result.verdict = result.verdict.or_else(|| verdict_in(&result.final_text));
    result.breaking_change = breaking_change_in(&result.final_text);
    result
}

/// The whole of stdout when it was kept whole; a parser reads nothing from a torn JSON.
fn whole_stdout(result: &AgentResult) -> Option<String> {
    result
        .stdout
        .complete()
        .then(|| String::from_utf8_lossy(result.stdout.head()).into_owned())
}

fn read_claude(result: &mut AgentResult) -> bool {
    let Some(text) = whole_stdout(result) else {
        return false;
    };
    // `--output-format json` prints one object; with `--verbose` some versions print the
    // whole message array, whose last element is the result.
    let value: Value = match serde_json::from_str(text.trim()) {
        Ok(Value::Array(items)) => match items.into_iter().rev().find(|v| v["type"] == "result") {
            Some(v) => v,
            None => return false,
        },
        Ok(v @ Value::Object(_)) => v,
        _ => return false,
    };
    result.final_text = value["result"].as_str().unwrap_or_default().to_owned();
    result.agent_session_id = value["session_id"].as_str().map(str::to_owned);
    result.cost_usd = value["total_cost_usd"].as_f64();
    result.tokens_in = value["usage"]["input_tokens"].as_u64();
    result.tokens_out = value["usage"]["output_tokens"].as_u64();
    if value["is_error"].as_bool() == Some(true) {
        let subtype = value["subtype"].as_str().unwrap_or("error");
        result.reported_error = Some(subtype.to_owned());
    }
    if let Some(denials) = value["permission_denials"].as_array() {
        result.permission_denials = denials.iter().map(describe_denial).collect();
    }
    result.verdict = match value["structured_output"]["verdict"].as_str() {
        Some(v) => verdict_word(v),
        None => None,
    };
    true
}

fn describe_denial(denial: &Value) -> String {
    let tool = denial["tool_name"].as_str().unwrap_or("a tool");
    let input = &denial["tool_input"];
    let what = input["command"]
        .as_str()
        .or_else(|| input["file_path"].as_str())
        .map(|s| format!(" ({})", last_chars(s, 200)))
        .unwrap_or_default();
    format!("{tool}{what}")
}

fn read_codex(result: &mut AgentResult) -> bool {
    // JSON lines: a torn first line is skipped, so a long run is read from its end.
    let text = whole_stdout(result)
        .unwrap_or_else(|| String::from_utf8_lossy(&result.stdout.tail()).into_owned());
    let mut any = false;
    let (mut tokens_in, mut tokens_out) = (0u64, 0u64);
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        any = true;
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
                tokens_in += event["usage"]["input_tokens"].as_u64().unwrap_or(0);
                tokens_out += event["usage"]["output_tokens"].as_u64().unwrap_or(0);
                result.tokens_in = Some(tokens_in);
                result.tokens_out = Some(tokens_out);
            }
            "turn.failed" => {
                result.reported_error = event["error"]["message"]
                    .as_str()
                    .map(str::to_owned)
                    .or(Some("turn failed".into()));
            }
            "error" => {
                result.reported_error = event["message"]
                    .as_str()
                    .map(str::to_owned)
                    .or(Some("error".into()));
            }
            _ => {}
        }
    }
    any
}

fn read_gemini(result: &mut AgentResult) -> bool {
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

fn verdict_word(word: &str) -> Option<Verdict> {
    match word.trim().to_ascii_lowercase().as_str() {
        "pass" | "passed" | "approve" | "approved" | "ok" | "success" => Some(Verdict::Pass),
        "fail" | "failed" | "reject" | "rejected" | "blocked" | "changes requested" => {
            Some(Verdict::Fail)
        }
        _ => None,
    }
}

/// The last `VERDICT: …` line of a text.
pub fn verdict_in(text: &str) -> Option<Verdict> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"(?im)^[\s>*_#-]*verdict[\s*_]*[:=][\s*_]*([a-z][a-z ]*?)[\s*_.]*$")
            .expect("verdict pattern")
    });
    re.captures_iter(text)
        .filter_map(|c| verdict_word(&c[1]))
        .last()
}

/// Whether a text has a `BREAKING CHANGE:` (or `BREAKING-CHANGE:`) line.
pub fn breaking_change_in(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim_start_matches(|c: char| c.is_whitespace() || c == '*' || c == '-');
        l.starts_with("BREAKING CHANGE:") || l.starts_with("BREAKING-CHANGE:")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(kind: Kind, stdout: &str) -> AgentResult {
        interpret(
            kind,
            Exit::Code(0),
            Captured::from_bytes(stdout.as_bytes()),
            Captured::default(),
            5,
        )
    }

    #[test]
    fn claude_json() {
        let r = result(
            Kind::Claude,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"Plan written.\nVERDICT: PASS","session_id":"abc","total_cost_usd":0.12,"usage":{"input_tokens":10,"output_tokens":20},"permission_denials":[]}"#,
        );
        assert_eq!(r.final_text, "Plan written.\nVERDICT: PASS");
        assert_eq!(r.verdict, Some(Verdict::Pass));
        assert_eq!(r.agent_session_id.as_deref(), Some("abc"));
        assert_eq!(
            (r.tokens_in, r.tokens_out, r.cost_usd),
            (Some(10), Some(20), Some(0.12))
        );
        assert_eq!(r.failure(), None);

        let denied = result(
            Kind::Claude,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"done","permission_denials":[{"tool_name":"Bash","tool_input":{"command":"rm -rf build"}}]}"#,
        );
        assert_eq!(denied.permission_denials, vec!["Bash (rm -rf build)"]);
        assert!(denied.failure().unwrap().contains("refused 1 tool call"));

        let error = result(
            Kind::Claude,
            r#"{"type":"result","subtype":"error_max_turns","is_error":true,"result":""}"#,
        );
        assert!(error.failure().unwrap().contains("error_max_turns"));
    }

    #[test]
    fn codex_jsonl() {
        let out = [
            r#"{"type":"thread.started","thread_id":"th_1"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"first"}}"#,
            r#"{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"All done.\nBREAKING CHANGE: the API moved"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":5,"output_tokens":7}}"#,
        ]
        .join("\n");
        let r = result(Kind::Codex, &out);
        assert_eq!(r.agent_session_id.as_deref(), Some("th_1"));
        assert!(r.final_text.starts_with("All done."));
        assert!(r.breaking_change);
        assert_eq!((r.tokens_in, r.tokens_out), (Some(100), Some(7)));
        let failed = result(
            Kind::Codex,
            r#"{"type":"turn.failed","error":{"message":"quota exceeded"}}"#,
        );
        assert_eq!(failed.reported_error.as_deref(), Some("quota exceeded"));
    }

    #[test]
    fn gemini_json() {
        let r = result(
            Kind::Gemini,
            r#"{"response":"ok\n**Verdict:** FAIL","stats":{"models":{"gemini-2.5-pro":{"tokens":{"prompt":50,"candidates":5,"total":55}},"flash":{"tokens":{"prompt":1,"candidates":1}}}}}"#,
        );
        assert_eq!(r.verdict, Some(Verdict::Fail));
        assert_eq!((r.tokens_in, r.tokens_out), (Some(51), Some(6)));
        let e = result(
            Kind::Gemini,
            r#"{"response":null,"error":{"type":"ApiError","message":"bad key","code":1}}"#,
        );
        assert_eq!(e.reported_error.as_deref(), Some("bad key"));
    }

    #[test]
    fn plain_text_and_garbage() {
        let r = result(Kind::Shell, "building\nverdict = passed\n");
        assert_eq!(r.verdict, Some(Verdict::Pass));
        // A CLI that prints something else is read as text, never a panic.
        let r = result(Kind::Claude, "not json at all\n");
        assert_eq!(r.final_text, "not json at all");
        assert_eq!(result(Kind::Gemini, "[1,2]").final_text, "[1,2]");
        assert_eq!(verdict_in("the verdict: maybe"), None);
        assert!(!breaking_change_in("no BREAKING CHANGE: here"));
    }

    #[test]
    fn arguments_per_runner() {
        let mut config = RunnersConfig::default();
        let (args, stdin) = config.arguments(Kind::Codex, "/speckit.plan x", None);
        assert_eq!(
            args,
            [
                "exec",
                "--json",
                "--sandbox",
                "workspace-write",
                "/speckit.plan x"
            ]
        );
        // A role's model: before codex's prompt, after the others' flags.
        let (args, _) = config.arguments(Kind::Codex, "go", Some("gpt-5-codex"));
        assert_eq!(args[args.len() - 3..], ["--model", "gpt-5-codex", "go"]);
        let (args, _) = config.arguments(Kind::Claude, "go", Some("claude-haiku"));
        assert_eq!(args[args.len() - 2..], ["--model", "claude-haiku"]);
        assert_eq!(
            config.arguments(Kind::Shell, "ls", Some("m")).0,
            ["-c", "ls"]
        );
        assert!(stdin.is_none());
        config.generic.command = vec!["agent".into(), "--task".into()];
        let (args, stdin) = config.arguments(Kind::Generic, "do it", None);
        assert_eq!(args, ["--task"]);
        assert_eq!(stdin.as_deref(), Some(&b"do it"[..]));
        config.claude.args = Some(vec!["--max-turns".into(), "3".into()]);
        let (args, _) = config.arguments(Kind::Claude, "p", None);
        assert_eq!(
            args,
            ["-p", "p", "--output-format", "json", "--max-turns", "3"]
        );
        config.roles.insert("dev".into(), "codex".into());
        assert_eq!(config.choose(None, Some("dev")).unwrap(), Kind::Codex);
        assert_eq!(
            config.choose(Some("shell"), Some("dev")).unwrap(),
            Kind::Shell
        );
        assert!(config.choose(Some("cursor"), None).is_err());
    }
}

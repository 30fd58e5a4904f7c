//! One adapter per agent CLI: everything git-bmad knows about a CLI lives in its file.
//!
//! An adapter says how to build the command line (prompt, permissions, model), which
//! variable the CLI reads its API key from, how to read its stdout into the one
//! [`AgentResult`] shape, and where it looks for a project's slash commands. Adding a CLI
//! (OpenHands, Aider, opencode, Copilot CLI) is one new file here and one line in
//! [`ADAPTERS`]; one that prints Claude Code's result messages (Qwen Code) reads them with
//! [`result_message`].

/// What a CLI that speaks to any provider reads (OpenCode, Pi), with its own `$extra`:
/// `env` the providers' variables, by prefix; `keys` their credentials, which a contained
/// step keeps.
macro_rules! any_provider {
    (env $($extra:literal),*) => {
        &[$($extra,)* "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "OPENROUTER_", "GROQ_",
          "XAI_", "DEEPSEEK_", "MISTRAL_", "CEREBRAS_"]
    };
    (keys $($extra:literal),*) => {
        &[$($extra,)* "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY",
          "GOOGLE_GENERATIVE_AI_API_KEY", "OPENROUTER_API_KEY", "GROQ_API_KEY", "XAI_API_KEY",
          "DEEPSEEK_API_KEY", "MISTRAL_API_KEY", "CEREBRAS_API_KEY"]
    };
}

mod claude;
pub use claude::{is_guard_group, GUARD_COMMAND, SETTINGS as CLAUDE_SETTINGS};
mod codex;
mod copilot;
mod gemini;
mod generic;
mod opencode;
mod pi;
mod qwen;
mod result_message;
mod shell;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::{Error, Result};
use super::process::{Captured, Exit};
use crate::config::CliConfig;

/// Every runner git-bmad knows, in the order messages list them.
static ADAPTERS: &[&dyn Adapter] = &[
    &claude::Claude,
    &codex::Codex,
    &gemini::Gemini,
    &qwen::Qwen,
    &opencode::OpenCode,
    &pi::Pi,
    &copilot::Copilot,
    &shell::Shell,
    &generic::Generic,
];

/// Whether `path` (relative to a worktree) is one of the files an agent CLI reads its
/// grants from (see [`Adapter::project_settings`]), any CLI's: a step of one CLI can write
/// what the next step's CLI reads. Compared without case, as a case-insensitive disk does.
pub fn is_agent_settings(path: &str) -> bool {
    let path = path.to_ascii_lowercase();
    agent_settings()
        .iter()
        .any(|entry| crate::paths::names(entry, &path))
}

/// Every CLI's [`Adapter::project_settings`], once each.
pub fn agent_settings() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = ADAPTERS
        .iter()
        .flat_map(|a| a.project_settings())
        .copied()
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// What git-bmad needs to know about one agent CLI.
pub trait Adapter: Sync {
    /// The runner's name in configs and playbooks (`claude`).
    fn name(&self) -> &'static str;

    /// Whether it is an AI agent (so a slash command or trailing arguments mean something).
    fn is_agent(&self) -> bool {
        true
    }

    /// The variable the CLI reads its API key from, if it reads one.
    fn key_variable(&self) -> Option<&'static str> {
        None
    }

    /// Its npm package at the version git-bmad's own suite drives it
    /// (`scripts/install-agent-clis.sh`): what a fresh machine, an Actions runner, installs.
    fn npm_package(&self) -> Option<&'static str> {
        None
    }

    /// The permission arguments it gets unless `runners.<name>.args` replaces them.
    fn default_args(&self) -> &'static [&'static str] {
        &[]
    }

    /// The permission arguments it gets instead when git-bmad contains it: a CLI whose own
    /// sandbox cannot start inside another leaves the walls to git-bmad's.
    fn contained_args(&self) -> &'static [&'static str] {
        self.default_args()
    }

    /// The configured arguments that turn on the CLI's own sandbox, which cannot start inside
    /// git-bmad's walls (its every command would fail while the model says it is done).
    fn own_sandbox(&self, _cli: &CliConfig) -> Option<String> {
        None
    }

    /// Every variable it may read a credential of its own from (its API key, a login
    /// token): the only credentials a contained step keeps.
    fn credential_variables(&self) -> &'static [&'static str] {
        &[]
    }

    /// The files of its own it needs from the user's home (login, settings), relative to
    /// it: a contained step gets copies of these in a private home, and nothing else.
    fn home_files(&self) -> &'static [&'static str] {
        &[]
    }

    /// What it reads from the project that can grant it tools, permissions or hooks (its
    /// settings, agents, skills, plugins): files, and folders ending in `/`. They sit in
    /// the worktree the agent writes, so git-bmad puts back whatever a step changes there.
    fn project_settings(&self) -> &'static [&'static str] {
        &[]
    }

    /// The model its configured arguments name (`--model x`, `-m x`), if they name one.
    fn configured_model<'c>(&self, cli: &'c CliConfig) -> Option<&'c str> {
        configured_value(cli, &["--model", "-m"])
    }

    /// The program to look for on PATH.
    fn program(&self, cli: &CliConfig) -> Result<String> {
        Ok(cli
            .program
            .clone()
            .unwrap_or_else(|| self.name().to_owned()))
    }

    /// The argument list for one invocation, and the bytes for its stdin. The prompt is
    /// always passed so that the CLI cannot read it as an option (`--help`, `-v`).
    fn command_line(&self, cli: &CliConfig, call: &Call) -> (Vec<String>, Option<Vec<u8>>);

    /// The variables of the user's environment the CLI reads (its key, its endpoint, its
    /// switches), by name or by a prefix ending in `_`: it gets these beside the allow-list
    /// of `crate::env`, and nothing else of the user's.
    fn env_names(&self) -> &'static [&'static str] {
        &[]
    }

    /// Variables the CLI needs to run unattended in a fresh session worktree.
    fn env(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Variables for one call: a CLI that takes its permissions from the environment
    /// rather than its arguments gets them here.
    fn call_env(&self, _cli: &CliConfig, _call: &Call) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Variables it gets on top of those when git-bmad contains it.
    fn contained_env(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Its arguments for a turn over the Agent Client Protocol (`runners.<name>.protocol:
    /// acp`): what starts its ACP server, then the configured arguments, never the
    /// permission defaults (git-bmad answers each request itself). `None`: it speaks no ACP.
    fn acp_args(&self, _cli: &CliConfig) -> Option<Vec<String>> {
        None
    }

    /// The flag that names its model when its ACP server starts (`--model`); without one,
    /// the step's model is chosen over the protocol.
    fn acp_model_flag(&self) -> Option<&'static str> {
        None
    }

    /// Variables for a turn over ACP, given what is passed from the user's environment: a
    /// CLI that takes its permissions from the environment is told to ask git-bmad.
    fn acp_env(&self, _passed: &[(String, String)]) -> Vec<(String, String)> {
        Vec::new()
    }

    /// What it leaves out of the tokens it reports over ACP, if anything: a budget cannot
    /// count such a turn. An agent without an adapter of its own is not known to report them.
    fn acp_uncounted(&self) -> Option<&'static str> {
        Some("an agent git-bmad has no adapter for is not known to report every request's tokens")
    }

    /// Read the CLI's output into `result`; `false` when it printed nothing the adapter
    /// understands (the end of stdout then becomes the final text).
    fn read_output(&self, _result: &mut AgentResult) -> bool {
        false
    }

    /// The tokens of one model request, when `event` (a line of its headless output, read
    /// as it is printed) reports them: a budget then stops the CLI within a request of
    /// reaching it, not at the step's end.
    fn request_usage(&self, _event: &serde_json::Value) -> Option<ModelUsage> {
        None
    }

    /// Whether it logs each model request's usage as it runs, one record a line, when its
    /// printed output holds no tokens until its end (or none): each record is read with
    /// [`Adapter::request_usage`], as it is written (a budget stops it within a request) and
    /// once more when it has ended.
    fn logs_usage(&self) -> Option<LogsUsage> {
        None
    }

    /// Where it logs each model request of session `session` as it runs, under `home` (its
    /// home as git-bmad sees it) with the variables `env`, when it keeps such a log of its
    /// own ([`LogsUsage::InItsSession`]), once its output announced the
    /// session ([`Adapter::announced_session`]).
    fn session_log(
        &self,
        _home: &Path,
        _env: &[(String, String)],
        _session: &str,
    ) -> Option<PathBuf> {
        None
    }

    /// The session a line of its output announces, if it does.
    fn announced_session(&self, _event: &serde_json::Value) -> Option<String> {
        None
    }

    /// How many model requests its printed output says it made (each announced where it
    /// prints no tokens), if it says: its usage log must show as many.
    fn requests_announced(&self, _result: &AgentResult) -> Option<usize> {
        None
    }

    /// Whether it spends GitHub's premium requests, and reports them headless (so
    /// `orchestration.budget_premium_requests` can count it).
    fn spends_premium_requests(&self) -> bool {
        false
    }

    /// Whether the CLI reports what an invocation cost (so a dollar budget can apply).
    fn reports_cost(&self) -> bool {
        false
    }

    /// Whether the project's own settings in `worktree` already run git-bmad's guard as the
    /// CLI's hook, so a run need not add it a second time (only a CLI that takes the guard
    /// as a hook has such settings).
    fn guard_hooked(&self, worktree: &std::path::Path) -> bool {
        let _ = worktree;
        false
    }

    /// Whether the CLI reports the tokens an invocation used (so a token budget can apply):
    /// every structured result the adapters read (Claude, Codex, Gemini) carries its usage.
    fn reports_tokens(&self) -> bool {
        self.structured()
    }

    /// Whether it names the model of the tokens it reports (so they can be priced without
    /// the call naming one).
    fn names_models(&self) -> bool {
        false
    }

    /// Whether the CLI always prints a result the adapter reads: when it prints none, every
    /// check on its output (errors, denials, cost) would be blind, so the call fails.
    fn structured(&self) -> bool {
        false
    }

    /// Where the CLI looks for a project command or skill called `name` (relative paths).
    fn command_files(&self, _name: &str) -> Vec<PathBuf> {
        Vec::new()
    }

    /// What is wrong with its section of `runners:` (field path first).
    fn config_problems(&self, cli: &CliConfig) -> Vec<String> {
        whole_command_problem(self.name(), cli)
            .into_iter()
            .collect()
    }
}

/// One call of a runner: what its command line is built from.
#[derive(Clone, Copy, Debug, Default)]
pub struct Call<'a> {
    /// The prompt (or, for `shell`, the command).
    pub prompt: &'a str,
    /// `--model`, if the step's role has one.
    pub model: Option<&'a str>,
    /// Commands the step's own checks run (the project's tests): an agent may run them
    /// too, so a CLI that asks before each shell command is told they are allowed.
    pub allowed_commands: &'a [String],
    /// The command that judges each shell call before it runs (`git-bmad guard`): a CLI that
    /// takes such a hook gets it, and an ACP turn asks it about each command.
    pub guard: Option<&'a str>,
    /// Whether the project's own settings already run the guard as the CLI's hook.
    pub guard_hooked: bool,
    /// What the invocation may spend, in US dollars, for a CLI that stops itself there.
    pub budget_usd: Option<f64>,
    /// Whether a token budget meters the invocation as it runs: a CLI that can print each
    /// request's tokens then does.
    pub metered_tokens: bool,
    /// Whether git-bmad runs it contained.
    pub contained: bool,
    /// Where a CLI that [logs its usage](Adapter::logs_usage) to a named file logs it.
    pub usage_log: Option<&'a std::path::Path>,
}

/// `command:` in the section of a runner that takes `program:` and `args:`.
fn whole_command_problem(runner: &str, cli: &CliConfig) -> Option<String> {
    (!cli.command.is_empty()).then(|| {
        format!(
            "runners.{runner}.command: only `generic` takes a whole command line; use `program:` and `args:`"
        )
    })
}

/// A registered runner, by its name: small, copyable, ordered, and serialized as the name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Kind(&'static str);

impl Kind {
    /// The runner called `name`.
    pub fn parse(name: &str) -> Result<Kind> {
        ADAPTERS
            .iter()
            .find(|a| a.name() == name)
            .map(|a| Kind(a.name()))
            .ok_or_else(|| Error::UnknownRunner {
                runner: name.to_owned(),
                known: Kind::names(),
            })
    }

    /// Every registered runner, in registration order.
    pub fn all() -> impl Iterator<Item = Kind> {
        ADAPTERS.iter().map(|a| Kind(a.name()))
    }

    /// `claude, codex, …`, for messages.
    pub fn names() -> String {
        ADAPTERS
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The runner's name.
    pub fn as_str(&self) -> &'static str {
        self.0
    }

    /// Its adapter (a `Kind` is only ever made from a registered name).
    pub fn adapter(&self) -> &'static dyn Adapter {
        ADAPTERS
            .iter()
            .copied()
            .find(|a| a.name() == self.0)
            .unwrap_or(ADAPTERS[0])
    }

    /// Whether it is an AI agent.
    pub fn is_agent(&self) -> bool {
        self.adapter().is_agent()
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// `head`, then the adapter's permission arguments (unless the config replaces them), then
/// `--model`, which every agent CLI here takes.
fn agent_args(head: &[&str], adapter: &dyn Adapter, cli: &CliConfig, call: &Call) -> Vec<String> {
    let mut args = strings(head);
    match &cli.args {
        Some(configured) => args.extend(configured.iter().cloned()),
        None if call.contained => args.extend(strings(adapter.contained_args())),
        None => args.extend(strings(adapter.default_args())),
    }
    if let Some(m) = call.model {
        args.extend(strings(&["--model", m]));
    }
    args
}

/// `ours`, the arguments that choose the output format git-bmad reads, unless the
/// configured arguments choose one by `flags`: Gemini CLI and Qwen Code read a flag given
/// twice as a list of values, and then print plain text.
fn output_format<'a>(cli: &CliConfig, flags: &[&str], ours: &'a [&'a str]) -> &'a [&'a str] {
    if configured_value(cli, flags).is_some() {
        &[]
    } else {
        ours
    }
}

/// The value that follows `flag` in configured arguments (`--output-format json` or
/// `--output-format=json`), the last one winning as it does for the CLIs.
fn configured_value<'c>(cli: &'c CliConfig, flags: &[&str]) -> Option<&'c str> {
    let args = cli.args.as_deref().unwrap_or_default();
    let mut found = None;
    for (i, arg) in args.iter().enumerate() {
        for flag in flags {
            if arg == flag {
                found = args.get(i + 1).map(String::as_str);
            } else if let Some(value) = arg.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
                found = Some(value);
            }
        }
    }
    found
}

/// Commands an honest agent runs besides the tests: reading, and committing (never pushing).
const SAFE_COMMANDS: &[&str] = &[
    "git status",
    "git diff",
    "git log",
    "git show",
    "git add",
    "git commit",
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "rg",
    "pwd",
];

/// What a CLI that asks before each shell command is told to allow, as command prefixes:
/// [`SAFE_COMMANDS`], then each test command and each part of its `&&`/`||`/`;` chain (the
/// CLIs judge the parts of a chain one by one), each once.
fn allowed_prefixes(tests: &[String]) -> Vec<String> {
    let mut prefixes: Vec<String> = SAFE_COMMANDS.iter().map(|c| c.to_string()).collect();
    for command in tests {
        let parts = command
            .split("&&")
            .flat_map(|p| p.split("||"))
            .flat_map(|p| p.split(';'));
        for part in std::iter::once(command.as_str()).chain(parts) {
            let part = part.trim();
            if !part.is_empty() && !prefixes.iter().any(|p| p == part) {
                prefixes.push(part.to_owned());
            }
        }
    }
    prefixes
}

/// The JSON values in a CLI's output: one document; else one per line (`stream-json`);
/// else one document from the first line that opens an object on (warnings before it).
fn json_values(text: &str) -> Vec<serde_json::Value> {
    let text = text.trim();
    if let Ok(value) = serde_json::from_str(text) {
        return vec![value];
    }
    let lines: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str(line.trim()).ok())
        .collect();
    if !lines.is_empty() {
        return lines;
    }
    text.find("\n{")
        .and_then(|at| serde_json::from_str(&text[at + 1..]).ok())
        .into_iter()
        .collect()
}

/// The events of a CLI that prints one JSON object per line with a `type`, in order: from
/// the whole of stdout, else from its kept end (a torn first line is skipped), so a long
/// run is read from its end.
fn json_events(result: &AgentResult) -> Vec<serde_json::Value> {
    let text = whole_stdout(result)
        .unwrap_or_else(|| String::from_utf8_lossy(&result.stdout.tail()).into_owned());
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| event["type"].is_string())
        .collect()
}

/// What starts an ACP server (`--acp`), then the configured arguments.
fn acp_with(head: &[&str], cli: &CliConfig) -> Option<Vec<String>> {
    let mut args = strings(head);
    args.extend(cli.args.iter().flatten().cloned());
    Some(args)
}

/// The configured argument that turns on the sandbox of Gemini CLI or its fork Qwen Code
/// (`-s`, `--sandbox`, `--sandbox=true`).
fn gemini_sandbox_flag(cli: &CliConfig) -> Option<String> {
    let args = cli.args.as_deref().unwrap_or_default();
    args.iter()
        .find(|a| {
            *a == "-s" || *a == "--sandbox" || a.starts_with("--sandbox=") && !a.ends_with("=false")
        })
        .cloned()
}

/// A refused tool call in words, as the journal and the gate show it: the tool, and the
/// command or file it was given (`Bash (git push --force)`).
fn describe_call(tool: Option<&str>, input: &serde_json::Value) -> String {
    let what = ["command", "file_path", "filePath", "path"]
        .iter()
        .find_map(|key| input[*key].as_str())
        .map(|s| format!(" ({})", crate::text::last_chars(s, 200)))
        .unwrap_or_default();
    format!("{}{what}", tool.unwrap_or("a tool"))
}

/// Owned strings from literals.
fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The whole of stdout when it was kept whole; a parser reads nothing from a torn JSON.
fn whole_stdout(result: &AgentResult) -> Option<String> {
    result
        .stdout
        .complete()
        .then(|| String::from_utf8_lossy(result.stdout.head()).into_owned())
}

/// Namespaced command names as paths: `bmad:bmm:dev-story` → `bmad/bmm/dev-story`; skills
/// use dashes (`speckit-plan`).
fn nested(name: &str) -> String {
    name.replace(':', "/")
}

fn dashed(name: &str) -> String {
    name.replace([':', '.'], "-")
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
    /// Cost in US dollars, when the CLI reports it.
    pub cost_usd: Option<f64>,
    /// GitHub's premium requests, for a CLI that counts in them (Copilot CLI): what a
    /// GitHub Copilot plan bills, which a provider of the user's own leaves at 0.
    pub premium_requests: Option<f64>,
    /// The tokens of each model it used, as it reports them.
    pub usage: Vec<ModelUsage>,
    /// Tool calls the agent was refused.
    pub permission_denials: Vec<String>,
    /// An error the CLI reported in its output, exit code aside.
    pub reported_error: Option<String>,
    /// The CLI stopped itself at the dollar amount it was given.
    pub budget_spent: bool,
    /// Wall-clock time.
    pub duration_ms: u64,
    /// Raw stdout.
    #[serde(skip)]
    pub stdout: Captured,
    /// Raw stderr.
    #[serde(skip)]
    pub stderr: Captured,
}

/// The tokens one model used in one invocation, as its CLI reports them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelUsage {
    /// The model; `None` when the CLI does not say (nor the call's `--model`).
    pub model: Option<String>,
    /// Input tokens read fresh (cache writes included).
    pub input: u64,
    /// Input tokens read from the prompt cache.
    pub cached: u64,
    /// Output tokens (reasoning included).
    pub output: u64,
    /// What the CLI says this model cost, when it does.
    pub usd: Option<f64>,
}

/// Where a CLI logs each request's usage as it runs ([`Adapter::logs_usage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogsUsage {
    /// To the file git-bmad names ([`Call::usage_log`]): named for every call where the log
    /// is its only account of what it used, else only where a budget meters the call (an
    /// older CLI may not take the file).
    ToNamedFile {
        /// Whether it prints no account of its own.
        its_only_account: bool,
    },
    /// In its own log of the session its output announces ([`Adapter::session_log`]).
    InItsSession,
}

/// Add one request's tokens to those of its model in `usage`.
pub(super) fn add_request(usage: &mut Vec<ModelUsage>, request: Option<ModelUsage>) {
    let Some(request) = request else {
        return;
    };
    match usage.iter_mut().find(|u| u.model == request.model) {
        Some(entry) => {
            entry.input += request.input;
            entry.cached += request.cached;
            entry.output += request.output;
        }
        None => usage.push(request),
    }
}

impl AgentResult {
    /// Input tokens of every model, cached or not, when the CLI reports them.
    pub fn tokens_in(&self) -> Option<u64> {
        (!self.usage.is_empty()).then(|| self.usage.iter().map(|u| u.input + u.cached).sum())
    }

    /// Output tokens of every model, when the CLI reports them.
    pub fn tokens_out(&self) -> Option<u64> {
        (!self.usage.is_empty()).then(|| self.usage.iter().map(|u| u.output).sum())
    }

    /// Name the model of the usage the CLI did not name: the one the call asked for.
    pub fn name_usage(&mut self, model: Option<&str>) {
        for usage in self.usage.iter_mut().filter(|u| u.model.is_none()) {
            usage.model = model.map(str::to_owned);
        }
    }

    /// Why the invocation failed as a process, if it did: exit status, an error the CLI
    /// reported, or refused tool calls. `None` does not mean the step succeeded.
    pub fn failure(&self) -> Option<String> {
        if !self.exit.success() {
            // The CLI's own words first: "exited with code 1" alone says nothing.
            return Some(match &self.reported_error {
                Some(error) => format!("{} {}: {error}", self.runner.as_str(), self.exit),
                None => format!("{} {}", self.runner.as_str(), self.exit),
            });
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

/// A verdict word (`pass`, `rejected`, …) as a verdict.
pub(crate) fn verdict_word(word: &str) -> Option<Verdict> {
    match word.trim().to_ascii_lowercase().as_str() {
        "pass" | "passed" | "approve" | "approved" | "ok" | "success" => Some(Verdict::Pass),
        "fail" | "failed" | "reject" | "rejected" | "blocked" | "changes requested" => {
            Some(Verdict::Fail)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_packages_a_fresh_machine_installs_are_the_versions_the_suite_drives() {
        let script = include_str!("../../../scripts/install-agent-clis.sh");
        let packages: Vec<&str> = Kind::all()
            .filter_map(|kind| kind.adapter().npm_package())
            .collect();
        assert_eq!(packages.len(), 7, "{packages:?}");
        for package in packages {
            assert!(script.contains(package), "{package}");
        }
    }

    #[test]
    fn agent_settings_are_each_clis_grants_and_nothing_else() {
        for grants in [
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".claude/skills/bmad-dev/SKILL.md",
            ".claude",
            ".Claude/Settings.json",
            ".mcp.json",
            "opencode.json",
            "opencode.jsonc",
            ".opencode/plugin/allow.ts",
            ".qwen/settings.json",
            ".gemini/settings.json",
            ".codex/config.toml",
            ".pi/extensions/x.ts",
            ".github/hooks/allow.json",
            ".github/agents/dev.agent.md",
            ".vscode/mcp.json",
        ] {
            assert!(is_agent_settings(grants), "{grants}");
        }
        for work in [
            "src/.claude.rs",
            "docs/.claude/settings.json",
            ".claudeignore",
            "opencode.json.md",
            "CLAUDE.md",
            "AGENTS.md",
            ".github/workflows/ci.yml",
            ".vscode/settings.json",
        ] {
            assert!(!is_agent_settings(work), "{work}");
        }
    }
}

//! One invocation of one agent CLI: the command line from its adapter, a fresh process, and
//! its output read into one [`AgentResult`].
//!
//! Exit 0 alone is never success: a denied tool call or an error the CLI reports in its JSON
//! fails the invocation, and the supervisor's postconditions decide whether the step did
//! its job. The verdict is the agent's own claim (`VERDICT: PASS|FAIL` as a line of its final
//! text, or `structured_output.verdict`); a breaking change is claimed with a
//! `BREAKING CHANGE:` line, the Conventional Commits footer.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use regex::Regex;

use super::acp;
use super::adapter::{verdict_word, AgentResult, Call, Kind, LogsUsage, Verdict};
use super::error::Result;
use super::meter::{Allowance, Meter};
use super::prices::Prices;
use super::process::{self, Captured, Exit, Spec};
use super::sandbox;
use super::sandbox::Contained;
use super::usage_log::UsageLog;
use crate::config::{ModelPrice, Protocol, RunnersConfig};
use crate::text::last_chars;

/// What to run, and where.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// The runner.
    pub kind: Kind,
    /// Its program, found with [`locate`](super::locate).
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
    /// What it may spend: a CLI that stops itself at a dollar figure is given it, and one
    /// that reports each request as it runs is stopped once that reaches it.
    pub allowance: Allowance,
    /// The configuration's prices (over git-bmad's table), which count a dollar allowance.
    pub prices: BTreeMap<String, ModelPrice>,
    /// Commands the step's checks run, which the agent may run too.
    pub allowed_commands: Vec<String>,
    /// The guard's command (`git-bmad guard`), which judges each shell command.
    pub guard: Option<String>,
    /// The walls it runs inside, when contained.
    pub sandbox: Option<Contained>,
}

/// Run one invocation (a fresh process, so a fresh context) and read its result.
pub fn invoke(
    config: &RunnersConfig,
    invocation: &Invocation,
    interrupt: &std::sync::atomic::AtomicBool,
) -> Result<AgentResult> {
    let adapter = invocation.kind.adapter();
    let cli = config.cli(invocation.kind.as_str());
    let over_acp = cli.protocol == Protocol::Acp;
    let logs_usage = adapter.logs_usage().filter(|_| !over_acp);
    let named = match logs_usage {
        Some(LogsUsage::ToNamedFile { its_only_account }) => {
            its_only_account || invocation.allowance.limits()
        }
        _ => false,
    };
    let named_log = named.then(UsageLog::named).transpose()?;
    let call = Call {
        prompt: &invocation.prompt,
        model: invocation.model.as_deref(),
        allowed_commands: &invocation.allowed_commands,
        guard: invocation.guard.as_deref(),
        guard_hooked: adapter.guard_hooked(&invocation.cwd),
        budget_usd: invocation.allowance.usd,
        metered_tokens: invocation.allowance.tokens.is_some(),
        contained: invocation.sandbox.is_some(),
        usage_log: named_log.as_ref().and_then(UsageLog::named_file),
    };
    // Over ACP, the step's model goes on the command line where the CLI takes it there,
    // else over the protocol.
    let mut model_over_protocol = None;
    let (args, stdin) = match adapter.acp_args(cli).filter(|_| over_acp) {
        Some(mut args) => {
            match (adapter.acp_model_flag(), call.model) {
                (Some(flag), Some(model)) => args.extend([flag.to_owned(), model.to_owned()]),
                (None, model) => model_over_protocol = model,
                (Some(_), None) => {}
            }
            (args, None)
        }
        None => adapter.command_line(cli, &call),
    };
    // An allow-list, contained or not: what every process needs, what its CLI reads, what
    // the configuration names; in walls, without the places they hide.
    let configured: Vec<String> = config
        .env
        .iter()
        .chain(&config.cli(invocation.kind.as_str()).env)
        .cloned()
        .collect();
    let mut env = crate::env::child::passed(adapter.env_names(), &configured);
    if invocation.sandbox.is_some() {
        // In walls a credential goes only to the CLI that reads it: its own, and one the
        // user names whole for that runner (an agent git-bmad has no adapter for has no
        // other way to its key).
        let named = cli.env.iter().filter(|name| !name.ends_with('_'));
        let keep: Vec<&str> = adapter
            .credential_variables()
            .iter()
            .copied()
            .chain(named.map(String::as_str))
            .collect();
        let hidden = sandbox::hidden_variables(&keep);
        env.retain(|(key, _)| !hidden.contains(key));
    }
    let owned = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    env.extend(owned(adapter.env()));
    if over_acp {
        let acp = adapter.acp_env(&env);
        env.extend(acp);
    } else {
        env.extend(adapter.call_env(cli, &call));
    }
    env.extend(invocation.env.iter().cloned());
    if invocation.sandbox.is_some() {
        env.extend(owned(adapter.contained_env()));
    }
    let session = (logs_usage == Some(LogsUsage::InItsSession))
        .then(|| session_log(invocation, &env))
        .flatten();
    let usage_log = named_log.as_ref().or(session.as_ref());
    let spec = Spec {
        program: invocation.program.clone(),
        args,
        cwd: invocation.cwd.clone(),
        env,
        env_remove: Vec::new(),
        clear_env: true,
        stdin,
        timeout: invocation.timeout,
        sandbox: match &usage_log {
            Some(log) => log.shown_in(invocation.sandbox.clone()),
            None => invocation.sandbox.clone(),
        },
    };
    // The requests its log showed, read once, as it grew: what a step of the agent does to
    // the file afterwards (it is in the walls) changes nothing read.
    let mut logged = Vec::new();
    let mut result = if over_acp {
        turn(invocation, model_over_protocol, &spec, interrupt)?
    } else {
        let output = if invocation.allowance.limits() || usage_log.is_some() {
            let model = invocation
                .model
                .as_deref()
                .or(adapter.configured_model(cli));
            let mut meter =
                Meter::new(invocation.allowance, Prices::new(&invocation.prices), model);
            let log = || usage_log?.file(adapter);
            let place = usage_log.map(|_| &log as &process::LogPlace<'_>);
            process::run_watching(&spec, interrupt, place, &mut |source, line| {
                let event = serde_json::from_slice::<serde_json::Value>(line).ok();
                if let (Some(log), Some(event)) = (usage_log, &event) {
                    log.hear(adapter, event);
                }
                let request = event.and_then(|e| adapter.request_usage(&e));
                if source == process::Source::Log {
                    logged.extend(request.clone());
                }
                request.is_some_and(|r| meter.count(&r))
            })?
        } else {
            process::run(&spec, interrupt)?
        };
        interpret(
            invocation.kind,
            output.exit,
            output.stdout,
            output.stderr,
            output.duration.as_millis() as u64,
        )
    };
    if let Some(log) = usage_log {
        log.read_into(adapter, invocation.allowance.limits(), logged, &mut result);
    }
    // The call's `--model` comes after the configured arguments: it is the one the CLI uses.
    result.name_usage(
        invocation
            .model
            .as_deref()
            .or(adapter.configured_model(cli)),
    );
    Ok(result)
}

/// The log a CLI keeps of its session, under the home it runs with as git-bmad sees it:
/// its private home in walls (where a home elsewhere the user names does not reach),
/// else the user's.
fn session_log(invocation: &Invocation, env: &[(String, String)]) -> Option<UsageLog> {
    match &invocation.sandbox {
        Some(contained) => {
            let home = contained.walls.private_home()?;
            Some(UsageLog::of_session(home.to_owned(), Vec::new()))
        }
        None => {
            let home = crate::env::Var::Home.path()?;
            Some(UsageLog::of_session(home, env.to_vec()))
        }
    }
}

/// One prompt turn over the Agent Client Protocol, each shell command the agent asks to run
/// put to the guard first: outside the walls, where the agent cannot reach it.
fn turn(
    invocation: &Invocation,
    model: Option<&str>,
    spec: &Spec,
    interrupt: &std::sync::atomic::AtomicBool,
) -> Result<AgentResult> {
    let guard = invocation.guard.clone();
    let (cwd, env) = (invocation.cwd.clone(), invocation.env.clone());
    let judge = Box::new(move |command: &str| match &guard {
        Some(guard) => ask_guard(guard, command, &cwd, &env),
        None => Some("git-bmad cannot find its own guard to judge the command".to_owned()),
    });
    let mut client = acp::Client::new(&invocation.prompt, &invocation.cwd, model, judge);
    let output = process::converse(spec, &mut client, interrupt)?;
    let mut result = shaped(
        invocation.kind,
        output.exit,
        output.stdout,
        output.stderr,
        output.duration.as_millis() as u64,
    );
    client.read_into(&mut result);
    judged(&mut result);
    Ok(result)
}

/// What the guard says of `command`, asked as an agent CLI's hook asks it: why it is
/// refused, if it is. A guard that cannot answer refuses.
fn ask_guard(
    guard: &str,
    command: &str,
    cwd: &std::path::Path,
    env: &[(String, String)],
) -> Option<String> {
    let call =
        serde_json::json!({"tool_name": "Bash", "tool_input": {"command": command}, "cwd": cwd});
    let asked = process::run(
        &Spec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), guard.to_owned()],
            cwd: cwd.to_path_buf(),
            env: env.to_vec(),
            env_remove: Vec::new(),
            clear_env: false,
            stdin: Some(call.to_string().into_bytes()),
            timeout: Duration::from_secs(60),
            sandbox: None,
        },
        &std::sync::atomic::AtomicBool::new(false),
    );
    match asked {
        Ok(out) if out.exit.success() => None,
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr.tail())
                .trim()
                .to_owned();
            Some(match out.exit {
                Exit::Code(2) if !said.is_empty() => said,
                exit => format!("the guard {exit}: {said}"),
            })
        }
        Err(e) => Some(format!("the guard could not run: {e}")),
    }
}

/// Read a finished process's output into the common shape.
pub fn interpret(
    kind: Kind,
    exit: Exit,
    stdout: Captured,
    stderr: Captured,
    duration_ms: u64,
) -> AgentResult {
    let mut result = shaped(kind, exit, stdout, stderr, duration_ms);
    if !kind.adapter().read_output(&mut result) {
        let tail = result.stdout.tail();
        let text = String::from_utf8_lossy(&tail);
        result.final_text = last_chars(text.trim_end(), 4000);
        // Blind to its errors, denials and cost: never a success on exit 0 alone.
        if kind.adapter().structured() && result.exit.success() {
            result.reported_error = Some(format!(
                "{kind} printed no result git-bmad can read (check `runners.{kind}.args`)"
            ));
        }
    }
    // Stopped at what it was given, as its requests were counted.
    result.budget_spent |= result.exit == Exit::Spent;
    judged(&mut result);
    result
}

/// The agent's own verdict and breaking-change claim, from its final text where its output
/// had none.
fn judged(result: &mut AgentResult) {
    result.verdict = result.verdict.or_else(|| verdict_in(&result.final_text));
    result.breaking_change = breaking_change_in(&result.final_text);
}

/// A result with nothing read yet.
fn shaped(
    kind: Kind,
    exit: Exit,
    stdout: Captured,
    stderr: Captured,
    duration_ms: u64,
) -> AgentResult {
    AgentResult {
        runner: kind,
        exit,
        final_text: String::new(),
        verdict: None,
        breaking_change: false,
        agent_session_id: None,
        cost_usd: None,
        premium_requests: None,
        usage: Vec::new(),
        permission_denials: Vec::new(),
        reported_error: None,
        budget_spent: false,
        duration_ms,
        stdout,
        stderr,
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
    use crate::runner::adapter::ModelUsage;

    fn k(name: &str) -> Kind {
        Kind::parse(name).unwrap()
    }

    fn result(kind: &str, stdout: &str) -> AgentResult {
        interpret(
            k(kind),
            Exit::Code(0),
            Captured::from_bytes(stdout.as_bytes()),
            Captured::default(),
            5,
        )
    }

    #[test]
    fn claude_json() {
        let r = result(
            "claude",
            r#"{"type":"result","subtype":"success","is_error":false,"result":"Plan written.\nVERDICT: PASS","session_id":"abc","total_cost_usd":0.12,"usage":{"input_tokens":10,"output_tokens":20},"permission_denials":[]}"#,
        );
        assert_eq!(r.final_text, "Plan written.\nVERDICT: PASS");
        assert_eq!(r.verdict, Some(Verdict::Pass));
        assert_eq!(r.agent_session_id.as_deref(), Some("abc"));
        assert_eq!(
            (r.tokens_in(), r.tokens_out(), r.cost_usd),
            (Some(10), Some(20), Some(0.12))
        );
        assert_eq!(r.failure(), None);

        let denied = result(
            "claude",
            r#"{"type":"result","subtype":"success","is_error":false,"result":"done","permission_denials":[{"tool_name":"Bash","tool_input":{"command":"rm -rf build"}}]}"#,
        );
        assert_eq!(denied.permission_denials, vec!["Bash (rm -rf build)"]);
        assert!(denied.failure().unwrap().contains("refused 1 tool call"));

        let error = result(
            "claude",
            r#"{"type":"result","subtype":"error_max_turns","is_error":true,"result":""}"#,
        );
        assert!(error.failure().unwrap().contains("error_max_turns"));
        assert!(!error.budget_spent);
        // Stopped at the dollars it was given (the shape Claude Code prints).
        let spent = result(
            "claude",
            r#"{"type":"result","subtype":"error_max_budget_usd","is_error":true,"total_cost_usd":0.0105,"errors":["Reached maximum budget ($0.01)"]}"#,
        );
        assert!(spent.budget_spent);
        assert_eq!(spent.cost_usd, Some(0.0105));

        // An API failure says "success" in `subtype`; its message is what counts.
        let api = result(
            "claude",
            r#"{"type":"result","subtype":"success","is_error":true,"api_error":"overloaded","result":"API Error: 529 Overloaded"}"#,
        );
        assert_eq!(
            api.reported_error.as_deref(),
            Some("API Error: 529 Overloaded")
        );
        // stream-json: one message per line, the `result` line read; cache tokens count.
        let stream = result(
            "claude",
            "{\"type\":\"system\",\"subtype\":\"init\"}\n{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"ok\",\"usage\":{\"input_tokens\":12,\"cache_read_input_tokens\":61000,\"cache_creation_input_tokens\":500,\"output_tokens\":3}}\n",
        );
        assert_eq!(stream.final_text, "ok");
        assert_eq!(
            (stream.tokens_in(), stream.tokens_out()),
            (Some(61_512), Some(3))
        );
        assert_eq!(stream.failure(), None);
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
        let r = result("codex", &out);
        assert_eq!(r.agent_session_id.as_deref(), Some("th_1"));
        assert!(r.final_text.starts_with("All done."));
        assert!(r.breaking_change);
        assert_eq!((r.tokens_in(), r.tokens_out()), (Some(100), Some(7)));
        let failed = result(
            "codex",
            r#"{"type":"turn.failed","error":{"message":"quota exceeded"}}"#,
        );
        assert_eq!(failed.reported_error.as_deref(), Some("quota exceeded"));
    }

    #[test]
    fn gemini_json() {
        let r = result(
            "gemini",
            r#"{"response":"ok\n**Verdict:** FAIL","stats":{"models":{"gemini-2.5-pro":{"tokens":{"prompt":50,"candidates":5,"total":55}},"flash":{"tokens":{"prompt":1,"candidates":1}}}}}"#,
        );
        assert_eq!(r.verdict, Some(Verdict::Fail));
        assert_eq!((r.tokens_in(), r.tokens_out()), (Some(51), Some(6)));
        let e = result(
            "gemini",
            r#"{"response":null,"error":{"type":"ApiError","message":"bad key","code":1}}"#,
        );
        assert_eq!(e.reported_error.as_deref(), Some("bad key"));
    }

    #[test]
    fn each_cli_reports_its_tokens_per_model_with_the_cached_part_apart() {
        // Claude: per model, a cache write counted as fresh input, with its own dollars.
        let claude = result(
            "claude",
            r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.2,"usage":{"input_tokens":1},"modelUsage":{"claude-sonnet-4-5-20250929":{"inputTokens":10,"outputTokens":20,"cacheReadInputTokens":300,"cacheCreationInputTokens":40,"costUSD":0.15},"claude-haiku-4-5":{"inputTokens":5,"outputTokens":1,"costUSD":0.05}}}"#,
        );
        let sonnet = claude
            .usage
            .iter()
            .find(|u| u.model.as_deref() != Some("claude-haiku-4-5"));
        let sonnet = sonnet.expect("two models");
        assert_eq!(
            (
                sonnet.model.as_deref(),
                sonnet.input,
                sonnet.cached,
                sonnet.output,
                sonnet.usd
            ),
            (Some("claude-sonnet-4-5-20250929"), 50, 300, 20, Some(0.15))
        );
        assert_eq!(
            (claude.tokens_in(), claude.tokens_out()),
            (Some(355), Some(21))
        );
        // Codex: input counts the cached part; no model named, summed over turns.
        let turn = r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":60,"output_tokens":7}}"#;
        let codex = result("codex", &format!("{turn}\n{turn}"));
        assert_eq!(codex.usage.len(), 1);
        let all = &codex.usage[0];
        assert_eq!(
            (all.model.as_deref(), all.input, all.cached, all.output),
            (None, 80, 120, 14)
        );
        assert_eq!(
            (codex.tokens_in(), codex.tokens_out()),
            (Some(200), Some(14))
        );
        // Gemini: per model, the prompt counts the cached part; thoughts are output.
        let gemini = result(
            "gemini",
            r#"{"response":"ok","stats":{"models":{"gemini-2.5-pro":{"tokens":{"prompt":500,"candidates":5,"cached":400,"thoughts":30}}}}}"#,
        );
        let pro = &gemini.usage[0];
        assert_eq!(
            (pro.model.as_deref(), pro.input, pro.cached, pro.output),
            (Some("gemini-2.5-pro"), 100, 400, 35)
        );
    }

    #[test]
    fn qwen_messages_are_read_as_claude_codes_with_gemini_clis_token_counts() {
        let init =
            r#"{"type":"system","subtype":"init","session_id":"s1","model":"qwen3-coder-plus"}"#;
        let done = r#"{"type":"result","subtype":"success","session_id":"s1","is_error":false,"result":"Done.\nVERDICT: PASS","usage":{"input_tokens":1100,"output_tokens":20,"cache_read_input_tokens":1000},"permission_denials":[],"stats":{"models":{"qwen3-coder-plus":{"tokens":{"prompt":1100,"candidates":20,"cached":1000,"thoughts":5}}}}}"#;
        let r = result("qwen", &format!("[{init},{done}]"));
        assert_eq!(r.failure(), None);
        assert_eq!(
            (r.final_text.as_str(), r.verdict),
            ("Done.\nVERDICT: PASS", Some(Verdict::Pass))
        );
        assert_eq!(r.agent_session_id.as_deref(), Some("s1"));
        let used = &r.usage[0];
        assert_eq!(
            (used.model.as_deref(), used.input, used.cached, used.output),
            (Some("qwen3-coder-plus"), 100, 1000, 25)
        );
        // Without stats: its usage counts the cached part in the input; the model is init's.
        let plain = done.replace(r#","stats":{"models":{"qwen3-coder-plus":{"tokens":{"prompt":1100,"candidates":20,"cached":1000,"thoughts":5}}}}"#, "");
        let r = result("qwen", &format!("[{init},{plain}]"));
        let used = &r.usage[0];
        assert_eq!(
            (used.model.as_deref(), used.input, used.cached, used.output),
            (Some("qwen3-coder-plus"), 100, 1000, 20)
        );
        // An API failure exits 0: the result says it, and a denial fails it too.
        let failed = r#"[{"type":"result","subtype":"error_during_execution","is_error":true,"usage":{"input_tokens":0,"output_tokens":0},"permission_denials":[{"tool_name":"run_shell_command","tool_input":{"command":"git push"}}],"error":{"message":"[API Error: 401 invalid key]"}}]"#;
        let r = result("qwen", failed);
        assert_eq!(
            r.reported_error.as_deref(),
            Some("error_during_execution: [API Error: 401 invalid key]")
        );
        assert_eq!(r.permission_denials, ["run_shell_command (git push)"]);
        assert!(r.failure().is_some());
        // No result: killed at a budget, its requests count; ended so by itself, it said
        // nothing of success, and is no success.
        let request = r#"{"type":"assistant","session_id":"s1","message":{"model":"q-1","content":[{"type":"text","text":"VERDICT: PASS"}],"usage":{"input_tokens":1000,"output_tokens":20,"cache_read_input_tokens":400}}}"#;
        let stream = format!("{init}\n{request}\n{request}\n");
        for exit in [Exit::Spent, Exit::Code(0)] {
            let r = interpret(
                k("qwen"),
                exit,
                Captured::from_bytes(stream.as_bytes()),
                Captured::default(),
                5,
            );
            let used = &r.usage[0];
            assert_eq!(
                (used.model.as_deref(), used.input, used.cached, used.output),
                (Some("q-1"), 1200, 800, 40)
            );
            assert_eq!(r.agent_session_id.as_deref(), Some("s1"));
            assert!(r.failure().is_some(), "{exit:?}");
        }
    }

    #[test]
    fn opencode_events_give_the_last_text_the_tokens_of_every_step_and_the_refusals() {
        let step = r#"{"type":"step_finish","sessionID":"ses_1","part":{"tokens":{"input":100,"output":20,"reasoning":5,"cache":{"write":500,"read":1000}},"cost":0}}"#;
        let denied = r#"{"type":"tool_use","sessionID":"ses_1","part":{"tool":"bash","state":{"status":"error","input":{"command":"git push --force"},"error":"The user has specified a rule which prevents you from using this specific tool call."}}}"#;
        let failed_run = r#"{"type":"tool_use","sessionID":"ses_1","part":{"tool":"bash","state":{"status":"error","input":{"command":"cargo test"},"error":"exit 101"}}}"#;
        let no_access = r#"{"type":"tool_use","sessionID":"ses_1","part":{"tool":"write","state":{"status":"error","input":{"filePath":"/etc/x"},"error":"EACCES: permission denied, open '/etc/x'"}}}"#;
        let text = r#"{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"All done.\nVERDICT: PASS"}}"#;
        let r = result(
            "opencode",
            &[step, failed_run, no_access, denied, step, text].join("\n"),
        );
        assert_eq!(r.agent_session_id.as_deref(), Some("ses_1"));
        assert_eq!(
            (r.final_text.as_str(), r.verdict),
            ("All done.\nVERDICT: PASS", Some(Verdict::Pass))
        );
        let used = &r.usage[0];
        assert_eq!(
            (used.model.as_deref(), used.input, used.cached, used.output),
            (None, 1200, 2000, 50)
        );
        // A command that failed as it ran is the agent's business; a refused one fails it.
        assert_eq!(r.permission_denials, ["bash (git push --force)"]);
        let error = r#"{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Cannot connect to API"}}}"#;
        let r = result("opencode", error);
        assert_eq!(r.reported_error.as_deref(), Some("Cannot connect to API"));
    }

    #[test]
    fn pi_events_give_each_models_tokens_and_the_last_answer_decides() {
        let answer = |model: &str, stop: &str, text: &str| {
            serde_json::json!({"type": "message_end", "message": {"role": "assistant",
                "model": model, "stopReason": stop, "errorMessage": "overloaded",
                "content": [{"type": "text", "text": text}],
                "usage": {"input": 100, "output": 20, "cacheRead": 1000, "cacheWrite": 500}}})
            .to_string()
        };
        let session = r#"{"type":"session","id":"pi-1"}"#;
        let retried = [
            session.to_owned(),
            answer("claude-sonnet-4-5", "error", ""),
            r#"{"type":"auto_retry_start","attempt":1}"#.to_owned(),
            answer("claude-sonnet-4-5", "toolUse", ""),
            answer("claude-haiku-4-5", "stop", "Done.\nVERDICT: FAIL"),
        ];
        let r = result("pi", &retried.join("\n"));
        assert_eq!(
            r.failure(),
            None,
            "a retried request that recovered is no error"
        );
        assert_eq!(
            (r.final_text.as_str(), r.verdict),
            ("Done.\nVERDICT: FAIL", Some(Verdict::Fail))
        );
        assert_eq!(r.agent_session_id.as_deref(), Some("pi-1"));
        let sonnet = &r.usage[0];
        assert_eq!(
            (
                sonnet.model.as_deref(),
                sonnet.input,
                sonnet.cached,
                sonnet.output
            ),
            (Some("claude-sonnet-4-5"), 1200, 2000, 40)
        );
        assert_eq!(r.usage[1].model.as_deref(), Some("claude-haiku-4-5"));
        // It exits 0 when the last request failed: the message says so.
        let failed = [session.to_owned(), answer("m", "error", "")].join("\n");
        assert_eq!(
            result("pi", &failed).reported_error.as_deref(),
            Some("overloaded")
        );
    }

    #[test]
    fn the_requests_a_cli_reports_as_it_runs_add_up_to_what_it_reports_in_all() {
        let pi = |model: &str| {
            serde_json::json!({"type": "message_end", "message": {"role": "assistant",
                "model": model, "stopReason": "toolUse", "content": [],
                "usage": {"input": 100, "output": 20, "cacheRead": 1000, "cacheWrite": 500}}})
            .to_string()
        };
        let opencode = r#"{"type":"step_finish","sessionID":"ses_1","part":{"tokens":{"input":100,"output":20,"reasoning":5,"cache":{"write":500,"read":1000}},"cost":0}}"#;
        let user = r#"{"type":"message_end","message":{"role":"user","usage":{"input":9}}}"#;
        let text = r#"{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"Done."}}"#;
        // Qwen Code splits a response by block type; its tokens come on the last part.
        let qwen = |blocks: &str, input: u64| {
            serde_json::json!({"type": "assistant", "session_id": "s-1", "message": {
                "role": "assistant", "model": "q-1", "content": [{"type": blocks}],
                "usage": {"input_tokens": input, "output_tokens": input / 50,
                    "cache_read_input_tokens": input / 2}}})
            .to_string()
        };
        let runs = [
            ("pi", vec![pi("m-1"), user.to_owned(), pi("m-2"), pi("m-1")]),
            (
                "qwen",
                vec![qwen("text", 0), qwen("tool_use", 1600), qwen("text", 1800)],
            ),
            (
                "opencode",
                vec![opencode.to_owned(), text.to_owned(), opencode.to_owned()],
            ),
        ];
        for (kind, lines) in runs {
            let adapter = k(kind).adapter();
            let requests: Vec<ModelUsage> = lines
                .iter()
                .filter_map(|l| adapter.request_usage(&serde_json::from_str(l).unwrap()))
                .collect();
            let whole = result(kind, &lines.join("\n")).usage;
            let sum = |usage: &[ModelUsage]| {
                usage.iter().fold((0, 0, 0), |(i, c, o), u| {
                    (i + u.input, c + u.cached, o + u.output)
                })
            };
            assert_eq!(sum(&requests), sum(&whole), "{kind}");
            assert_eq!(requests.len(), lines.len() - 1, "{kind}: one a request");
        }
        // The others print no request as it ends (Copilot CLI logs each to its own file).
        for kind in ["claude", "codex", "gemini", "copilot"] {
            let line = r#"{"type":"result","usage":{"input_tokens":5}}"#;
            let event = serde_json::from_str(line).unwrap();
            assert!(k(kind).adapter().request_usage(&event).is_none(), "{kind}");
        }
    }

    #[test]
    fn a_cli_stopped_at_its_allowance_spent_it_and_did_not_succeed() {
        let step = r#"{"type":"step_finish","sessionID":"ses_1","part":{"tokens":{"input":100,"output":20}}}"#;
        let r = interpret(
            k("opencode"),
            Exit::Spent,
            Captured::from_bytes(step.as_bytes()),
            Captured::default(),
            5,
        );
        assert!(r.budget_spent);
        assert_eq!(
            r.failure().as_deref(),
            Some("opencode reached what it was given to spend and was stopped")
        );
        assert!(!result("opencode", step).budget_spent);
    }

    #[test]
    fn the_model_a_codex_configuration_names_is_the_last_one_set() {
        let codex = Kind::parse("codex").unwrap().adapter();
        let cli = |args: &[&str]| crate::config::CliConfig {
            args: Some(args.iter().map(|a| a.to_string()).collect()),
            ..Default::default()
        };
        let model = |args: &[&str]| codex.configured_model(&cli(args)).map(str::to_owned);
        assert_eq!(model(&["--yolo"]), None);
        assert_eq!(model(&["-m", "gpt-5"]).as_deref(), Some("gpt-5"));
        assert_eq!(
            model(&["-c", "model=\"o4-mini\""]).as_deref(),
            Some("o4-mini")
        );
        assert_eq!(
            model(&["--model=gpt-5", "-c", "model = 'gpt-5-mini'"]).as_deref(),
            Some("gpt-5-mini")
        );
        assert_eq!(
            model(&["-c", "model_reasoning_effort=high", "-m", "gpt-5"]).as_deref(),
            Some("gpt-5")
        );
        assert_eq!(model(&["-c", "model_provider=x"]), None);
    }

    #[test]
    fn plain_text_and_garbage() {
        let r = result("shell", "building\nverdict = passed\n");
        assert_eq!(r.verdict, Some(Verdict::Pass));
        // A CLI that prints something else is read as text, never a panic.
        let r = result("claude", "not json at all\n");
        assert_eq!(r.final_text, "not json at all");
        // ...but an agent CLI whose result cannot be read never passes on exit 0 alone.
        assert!(r
            .failure()
            .unwrap()
            .contains("printed no result git-bmad can read"));
        assert_eq!(result("gemini", "[1,2]").final_text, "[1,2]");
        assert_eq!(verdict_in("the verdict: maybe"), None);
        assert!(!breaking_change_in("no BREAKING CHANGE: here"));
    }

    #[test]
    fn arguments_per_runner() {
        use super::super::adapter::Call;
        let mut config = RunnersConfig::default();
        let tests = vec!["cargo test && npm test".to_owned()];
        let args = |config: &RunnersConfig, kind: &str, prompt: &str, model: Option<&str>| {
            k(kind).adapter().command_line(
                config.cli(kind),
                &Call {
                    prompt,
                    model,
                    allowed_commands: &tests,
                    guard: Some("'/opt/git-bmad' guard"),
                    guard_hooked: false,
                    budget_usd: None,
                    metered_tokens: false,
                    contained: false,
                    usage_log: None,
                },
            )
        };
        // What is left of a dollar budget: Claude stops itself there; the others report no
        // cost to stop at.
        let spend = |config: &RunnersConfig, kind: &str| {
            let call = Call {
                prompt: "p",
                model: None,
                allowed_commands: &tests,
                guard: None,
                guard_hooked: false,
                budget_usd: Some(1.25),
                metered_tokens: false,
                contained: false,
                usage_log: None,
            };
            k(kind).adapter().command_line(config.cli(kind), &call).0
        };
        assert!(spend(&config, "claude")
            .windows(2)
            .any(|w| w == ["--max-budget-usd", "1.2500"]));
        assert!(!spend(&config, "codex").iter().any(|a| a.contains("budget")));
        // Contained, Codex leaves the walls to git-bmad: its own sandbox cannot start inside.
        let contained = Call {
            prompt: "p",
            contained: true,
            ..Call::default()
        };
        let codex = k("codex")
            .adapter()
            .command_line(config.cli("codex"), &contained)
            .0;
        assert!(codex
            .windows(2)
            .any(|w| w == ["--sandbox", "danger-full-access"]));
        let (codex, stdin) = args(&config, "codex", "/speckit.plan x", None);
        assert_eq!(
            codex,
            [
                "exec",
                "--json",
                "--sandbox",
                "workspace-write",
                "--",
                "/speckit.plan x"
            ]
        );
        // A role's model: before the prompt; the prompt after `--`, so `--help` is a prompt.
        let (codex, _) = args(&config, "codex", "--help", Some("gpt-5-codex"));
        assert_eq!(
            codex[codex.len() - 4..],
            ["--model", "gpt-5-codex", "--", "--help"]
        );
        let (claude, _) = args(&config, "claude", "-v", Some("claude-haiku"));
        assert_eq!(claude[claude.len() - 2..], ["--", "-v"]);
        assert!(claude.windows(2).any(|w| w == ["--model", "claude-haiku"]));
        // Claude may run the step's tests (each part of the chain) and commit, not push.
        for rule in [
            "Bash(cargo test && npm test)",
            "Bash(npm test:*)",
            "Bash(git commit:*)",
        ] {
            assert!(claude.iter().any(|a| a == rule), "{rule} in {claude:?}");
        }
        assert!(!claude.iter().any(|a| a.contains("push")));
        assert!(claude.iter().any(|a| a == "--settings"));
        let (gemini, _) = args(&config, "gemini", "--help", None);
        assert_eq!(gemini.last().map(String::as_str), Some("--prompt=--help"));
        assert!(gemini
            .iter()
            .any(|a| a == "--allowed-tools=run_shell_command(npm test)"));
        assert_eq!(args(&config, "shell", "ls", Some("m")).0, ["-c", "ls"]);
        assert!(stdin.is_none());
        config.clis.insert(
            "generic".into(),
            crate::config::CliConfig {
                command: vec!["agent".into(), "--task".into()],
                ..Default::default()
            },
        );
        let (generic, stdin) = args(&config, "generic", "do it", None);
        assert_eq!(generic, ["--task"]);
        assert_eq!(stdin.as_deref(), Some(&b"do it"[..]));
        config.clis.insert(
            "claude".into(),
            crate::config::CliConfig {
                args: Some(vec!["--max-turns".into(), "3".into()]),
                ..Default::default()
            },
        );
        // Configured arguments replace the permissions; the guard stays.
        let (claude, _) = args(&config, "claude", "p", None);
        assert_eq!(
            claude[..6],
            [
                "-p",
                "--output-format",
                "json",
                "--max-turns",
                "3",
                "--settings"
            ]
        );
        assert_eq!(claude[claude.len() - 2..], ["--", "p"]);
        // A lower budget the user configured is theirs; a higher one yields to what is left
        // of the run's (given after it: the last one wins).
        let configured = |config: &mut RunnersConfig, usd: &str| {
            config.clis.insert(
                "claude".into(),
                crate::config::CliConfig {
                    args: Some(vec!["--max-budget-usd".into(), usd.into()]),
                    ..Default::default()
                },
            );
            spend(config, "claude")
        };
        let lower = configured(&mut config, "0.5");
        assert_eq!(lower.iter().filter(|a| *a == "--max-budget-usd").count(), 1);
        assert!(lower.iter().any(|a| a == "0.5"));
        for higher in ["5", "lots"] {
            let claude = configured(&mut config, higher);
            let last = claude
                .iter()
                .rposition(|a| a == "--max-budget-usd")
                .unwrap();
            assert_eq!(claude[last + 1], "1.2500", "{claude:?}");
            assert!(last > claude.iter().position(|a| a == higher).unwrap());
        }
    }

    /// An output format the configuration chooses is given once: Gemini CLI and Qwen Code
    /// read a flag given twice as a list, and print plain text.
    #[test]
    fn an_output_format_the_configuration_chooses_is_given_once() {
        use super::super::adapter::Call;
        let mut config = RunnersConfig::default();
        let args = |config: &RunnersConfig, kind: &str| {
            let call = Call {
                prompt: "p",
                ..Call::default()
            };
            k(kind).adapter().command_line(config.cli(kind), &call).0
        };
        for (kind, ours) in [("gemini", "json"), ("qwen", "stream-json")] {
            for chosen in [
                &["--output-format", "json"][..],
                &["-o", "json"],
                &["--output-format=json"],
            ] {
                config.clis.insert(
                    kind.into(),
                    crate::config::CliConfig {
                        args: Some(chosen.iter().map(|a| a.to_string()).collect()),
                        ..Default::default()
                    },
                );
                let line = args(&config, kind);
                let formats = line
                    .iter()
                    .filter(|a| {
                        ["--output-format", "-o"].contains(&a.split('=').next().unwrap_or_default())
                    })
                    .count();
                assert_eq!(formats, 1, "{kind}: {line:?}");
            }
            config.clis.remove(kind);
            let line = args(&config, kind);
            assert!(
                line.windows(2).any(|w| w == ["--output-format", ours]),
                "{kind}: {line:?}"
            );
        }
    }
}

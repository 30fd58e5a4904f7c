//! Which runner, model and key a step gets, and whether the runners the config names exist.
//!
//! The config layer holds the `runners:` and `orchestration:` sections as written; only this
//! layer knows which runners are registered, so their names are checked here.

use std::path::{Path, PathBuf};

use super::adapter::Kind;
use super::error::{Error, Result};
use crate::config::Config;

/// What runs a step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agent {
    /// The runner.
    pub kind: Kind,
    /// `--model`, if assigned.
    pub model: Option<String>,
    /// The variable holding its API key, if assigned.
    pub api_key_env: Option<String>,
}

/// The agent of a step: its own runner, else its role's assignment, else the runners' role
/// table, else the default. The model and key follow the role's assignment.
pub fn agent(config: &Config, runner: Option<&str>, role: Option<&str>) -> Result<Agent> {
    let assigned = role.and_then(|r| config.orchestration.agents.get(r));
    let name = match (runner, assigned.and_then(|a| a.runner.as_deref())) {
        (Some(r), _) | (None, Some(r)) => r,
        (None, None) => config.runners.choose(None, role),
    };
    Ok(Agent {
        kind: Kind::parse(name)?,
        model: assigned.and_then(|a| a.model.clone()),
        api_key_env: assigned.and_then(|a| a.api_key_env.clone()),
    })
}

/// Find a runner's program now, so a missing CLI stops a run before its first step.
pub fn locate(config: &Config, kind: Kind, cwd: &Path) -> Result<PathBuf> {
    let program = kind.adapter().program(config.runners.cli(kind.as_str()))?;
    which::which_in(&program, crate::env::Var::Path.os(), cwd).map_err(|_| Error::NotInstalled {
        runner: kind.as_str().to_owned(),
        program,
    })
}

/// The agent runners whose CLI reports what `reports` asks, by name, for messages.
fn reporters(reports: fn(&Kind) -> bool) -> String {
    Kind::all()
        .filter(|k| k.is_agent() && reports(k))
        .map(|k| k.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why the configuration's dollar budget cannot count what `agent` spends, if it has one
/// and cannot.
pub fn budget_problem(config: &Config, agent: &Agent) -> Option<String> {
    config.orchestration.budget_usd?;
    // A command spends nothing.
    if !agent.kind.is_agent() {
        return None;
    }
    let configured = agent
        .kind
        .adapter()
        .configured_model(config.runners.cli(agent.kind.as_str()));
    let model = agent.model.as_deref().or(configured);
    let prices = super::prices::Prices::new(&config.orchestration.prices);
    let cli = config.runners.cli(agent.kind.as_str());
    dollar_budget_problem(agent.kind, cli, model, &prices)
}

/// A budget of the run's: in dollars or in tokens.
#[derive(Clone, Copy)]
enum Budget {
    Usd,
    Tokens,
}

impl Budget {
    /// Its key in the configuration.
    fn key(self) -> &'static str {
        match self {
            Budget::Usd => "orchestration.budget_usd",
            Budget::Tokens => "orchestration.budget_tokens",
        }
    }
}

/// Why `budget` cannot count what `kind` spends as `cli` calls it, if it cannot: over ACP,
/// what the agent leaves out of its reports; headless, a CLI that reports no tokens.
fn uncounted(kind: Kind, cli: &crate::config::CliConfig, budget: Budget) -> Option<String> {
    let adapter = kind.adapter();
    let key = budget.key();
    if cli.protocol == crate::config::Protocol::Acp {
        return adapter.acp_uncounted().map(|why| {
            format!("{kind} over ACP cannot be counted by {key}: {why}; run it headless for a budgeted run (drop runners.{kind}.protocol), or drop the budget and cap the run with limits.max_invocations")
        });
    }
    let reports = match budget {
        Budget::Usd => "neither cost nor tokens",
        Budget::Tokens => "no token counts",
    };
    (!adapter.reports_tokens()).then(|| {
        format!(
            "{kind} reports {reports}, so {key} cannot limit it; use {} for that role, or drop the budget and cap the run with limits.max_invocations",
            reporters(|k| k.adapter().reports_tokens())
        )
    })
}

/// Why a dollar budget cannot count what `kind` spends running `model` (`None`: the one the
/// CLI picks), if it cannot: a budget counts only what is reported or priced, and one that
/// could not count a step would let it run past unseen.
fn dollar_budget_problem(
    kind: Kind,
    cli: &crate::config::CliConfig,
    model: Option<&str>,
    prices: &super::prices::Prices<'_>,
) -> Option<String> {
    let adapter = kind.adapter();
    let acp = cli.protocol == crate::config::Protocol::Acp;
    if adapter.reports_cost() && !acp {
        return None;
    }
    if let Some(why) = uncounted(kind, cli, Budget::Usd) {
        return Some(why);
    }
    match model {
        Some(model) if prices.of(model).is_none() => Some(format!(
            "{model} has no price in git-bmad's table (of {}), so orchestration.budget_usd cannot count what {kind} spends; price it: orchestration.prices.{model}: {{input: …, output: …, cached_input: …}} (US dollars per million tokens)",
            super::prices::PRICED_ON
        )),
        None if !adapter.names_models() => Some(format!(
            "{kind} does not say which model it ran, so orchestration.budget_usd cannot price its tokens; name the model (orchestration.agents.<role>.model, or --model in runners.{kind}.args)"
        )),
        _ => None,
    }
}

/// Everything wrong with the runner names and runner sections of a config, field path first.
pub fn config_problems(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let runners = &config.runners;
    // Each runner named, with its field and the model its role is assigned, if any.
    let model_of = |role: &str| {
        let assigned = config.orchestration.agents.get(role);
        assigned.and_then(|a| a.model.as_deref())
    };
    let named = std::iter::once(("runners.default".to_owned(), &runners.default, None))
        .chain(
            runners
                .roles
                .iter()
                .map(|(role, r)| (format!("runners.roles.{role}"), r, model_of(role))),
        )
        .chain(config.orchestration.agents.iter().filter_map(|(role, a)| {
            a.runner.as_ref().map(|r| {
                let field = format!("orchestration.agents.{role}.runner");
                (field, r, a.model.as_deref())
            })
        }));
    let budget_usd = config.orchestration.budget_usd.is_some();
    let budget_tokens = config.orchestration.budget_tokens.is_some();
    let budget_premium = config.orchestration.budget_premium_requests.is_some();
    let prices = super::prices::Prices::new(&config.orchestration.prices);
    for (field, name, model) in named {
        let kind = match Kind::parse(name) {
            Err(e) => {
                out.push(format!("{field}: {e}"));
                continue;
            }
            Ok(kind) if kind.is_agent() => kind,
            Ok(_) => continue,
        };
        let adapter = kind.adapter();
        let model = model.or(adapter.configured_model(runners.cli(name)));
        // The default runner's model is each step's role's: whether it is named is checked
        // for each step when a run starts (see `budget_problem`).
        let cli = runners.cli(name);
        let unseen = uncounted(kind, cli, Budget::Tokens);
        let deferred = field == "runners.default" && model.is_none() && unseen.is_none();
        if budget_usd && !deferred {
            out.extend(
                dollar_budget_problem(kind, cli, model, &prices)
                    .map(|why| format!("{field}: {why}")),
            );
        }
        if let Some(why) = unseen.filter(|_| budget_tokens) {
            out.push(format!("{field}: {why}"));
        }
        let acp = cli.protocol == crate::config::Protocol::Acp;
        if budget_premium && adapter.spends_premium_requests() && acp {
            out.push(format!("{field}: {kind} over ACP does not report the premium requests it spends, so orchestration.budget_premium_requests cannot count them; run it headless for that budget (drop runners.{kind}.protocol)"));
        }
    }
    for (name, cli) in &runners.clis {
        match Kind::parse(name) {
            Ok(kind) => {
                out.extend(kind.adapter().config_problems(cli));
                if cli.protocol == crate::config::Protocol::Acp
                    && kind.adapter().acp_args(cli).is_none()
                {
                    out.push(format!(
                        "runners.{name}.protocol: {kind} speaks no ACP of its own ({} do); run its ACP adapter as runners.generic: {{command: [adapter, args…], protocol: acp}}",
                        Kind::all()
                            .filter(|k| k.as_str() != "generic" && k.adapter().acp_args(runners.cli(k.as_str())).is_some())
                            .map(|k| k.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if let Some(flag) = kind
                    .adapter()
                    .own_sandbox(cli)
                    .filter(|_| runners.sandbox != crate::config::Sandbox::Off)
                {
                    out.push(format!(
                        "runners.{name}.args: `{flag}` turns on {kind}'s own sandbox, which cannot start inside git-bmad's (runners.sandbox): every command it ran would fail while it said it was done; leave the walls to git-bmad (remove `{flag}`), or set runners.sandbox: off"
                    ));
                }
            }
            Err(_) => out.push(format!(
                "runners.{name}: not a runner git-bmad knows ({}); an agent without an adapter goes under runners.generic.command",
                Kind::names()
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> Config {
        Config::parse(yaml, Path::new("c.yaml")).unwrap()
    }

    #[test]
    fn a_budget_over_acp_counts_only_agents_that_report_every_request() {
        let budgeted = |runner: &str| {
            config_problems(&config(&format!(
                "runners:\n  default: {runner}\n  {runner}: {{protocol: acp}}\norchestration:\n  budget_usd: 5\n  agents:\n    dev: {{model: gemini-2.5-pro}}\n"
            )))
        };
        assert!(budgeted("gemini").is_empty(), "{:?}", budgeted("gemini"));
        let p = budgeted("opencode");
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with("runners.default: opencode over ACP cannot be counted by orchestration.budget_usd: OpenCode reports only its last request's tokens")
                && p[0].contains("drop runners.opencode.protocol"),
            "{p:?}"
        );
        let c = config("runners:\n  default: qwen\n  qwen: {protocol: acp}\norchestration:\n  budget_tokens: 1000\n");
        let p = config_problems(&c);
        assert!(
            p.len() == 1 && p[0].contains("Qwen Code extracts memories in the background"),
            "{p:?}"
        );
        // Headless, the same CLIs count.
        let c = config("runners:\n  default: qwen\norchestration:\n  budget_tokens: 1000\n");
        assert!(config_problems(&c).is_empty());
        // Copilot CLI's premium requests are reported headless only.
        let premium = |protocol: &str| {
            config_problems(&config(&format!(
                "runners:\n  default: claude\n  roles: {{dev: copilot}}\n  copilot: {{protocol: {protocol}}}\norchestration:\n  budget_premium_requests: 30\n"
            )))
        };
        assert!(premium("headless").is_empty(), "{:?}", premium("headless"));
        let p = premium("acp");
        assert!(
            p.len() == 1
                && p[0].starts_with(
                    "runners.roles.dev: copilot over ACP does not report the premium requests"
                ),
            "{p:?}"
        );
    }

    #[test]
    fn acp_is_refused_for_a_cli_that_does_not_speak_it() {
        let problems = config_problems(&config("runners:\n  claude: {protocol: acp}\n"));
        assert_eq!(
            problems,
            ["runners.claude.protocol: claude speaks no ACP of its own (gemini, qwen, opencode, copilot do); run its ACP adapter as runners.generic: {command: [adapter, args…], protocol: acp}"]
        );
        for fine in [
            "gemini: {protocol: acp}",
            "generic: {command: [claude-code-acp], protocol: acp}",
        ] {
            assert!(
                config_problems(&config(&format!("runners:\n  {fine}\n"))).is_empty(),
                "{fine}"
            );
        }
        assert_eq!(
            config_problems(&config("runners:\n  generic: {command: [agent, \"{prompt}\"], protocol: acp}\n")),
            ["runners.generic.command: an ACP agent gets its prompt over the protocol; drop `{prompt}`"]
        );
    }

    #[test]
    fn a_clis_own_sandbox_is_refused_inside_git_bmads() {
        for (args, flag) in [
            (
                "codex: {args: [--sandbox, workspace-write]}",
                Some("--sandbox workspace-write"),
            ),
            (
                "codex: {args: [\"--sandbox=read-only\"]}",
                Some("--sandbox read-only"),
            ),
            ("codex: {args: [--full-auto]}", Some("--full-auto")),
            ("codex: {args: [--sandbox, danger-full-access]}", None),
            ("gemini: {args: [-s]}", Some("-s")),
            ("gemini: {args: [--approval-mode, yolo]}", None),
        ] {
            let problems = config_problems(&config(&format!("runners:\n  {args}\n")));
            let found = problems.iter().find(|p| p.contains("own sandbox"));
            match flag {
                Some(flag) => assert!(
                    found.is_some_and(|p| p.contains(&format!("`{flag}`"))),
                    "{args}: {problems:?}"
                ),
                None => assert!(found.is_none(), "{args}: {problems:?}"),
            }
            let off = config(&format!("runners:\n  sandbox: off\n  {args}\n"));
            assert!(!config_problems(&off)
                .iter()
                .any(|p| p.contains("own sandbox")));
        }
    }

    #[test]
    fn agents_are_assigned_by_role() {
        let c = config("orchestration:\n  agents:\n    dev: {runner: codex, model: gpt-5-codex, api_key_env: OPENAI_KEY_DEV}\n    qa: {model: claude-haiku}\n");
        assert!(config_problems(&c).is_empty());
        let dev = agent(&c, None, Some("dev")).unwrap();
        assert_eq!(dev.kind.as_str(), "codex");
        assert_eq!(dev.model.as_deref(), Some("gpt-5-codex"));
        assert_eq!(dev.api_key_env.as_deref(), Some("OPENAI_KEY_DEV"));
        // No runner for qa: the default, with qa's model.
        let qa = agent(&c, None, Some("qa")).unwrap();
        assert_eq!(
            (qa.kind.as_str(), qa.model.as_deref()),
            ("claude", Some("claude-haiku"))
        );
        // A step's own runner wins.
        assert_eq!(
            agent(&c, Some("shell"), Some("dev")).unwrap().kind.as_str(),
            "shell"
        );
    }

    #[test]
    fn unknown_runners_are_named_with_their_field() {
        let c = config("runners:\n  roles: {dev: cursor}\n  aider: {program: aider}\n  shell: {program: bash}\n  claude: {command: [x]}\norchestration:\n  agents:\n    Dev: {runner: gpt}\n");
        let p = config_problems(&c);
        assert_eq!(p.len(), 5, "{p:#?}");
        assert!(
            p[0].starts_with("runners.roles.dev: unknown runner `cursor`"),
            "{p:?}"
        );
        assert!(p[1].starts_with("orchestration.agents.Dev.runner: unknown runner `gpt`"));
        assert!(p
            .iter()
            .any(|m| m.starts_with("runners.aider: not a runner")));
        assert!(p.iter().any(|m| m.starts_with("runners.shell:")));
        assert!(p.iter().any(|m| m.starts_with("runners.claude.command:")));
    }

    #[test]
    fn a_dollar_budget_needs_runners_whose_spend_it_can_count() {
        // Claude reports dollars; Gemini names its models, priced at run time; Codex names
        // none, so its model must be named, and priced.
        let c = config("runners:\n  default: claude\n  roles: {dev: codex, qa: gemini}\norchestration:\n  budget_usd: 5\n");
        let p = config_problems(&c);
        assert_eq!(p.len(), 1, "{p:#?}");
        assert!(
            p[0].starts_with("runners.roles.dev: codex does not say which model it ran"),
            "{p:?}"
        );
        let named = "runners:\n  roles: {dev: codex, qa: gemini}\norchestration:\n  budget_usd: 5\n  agents:\n    dev: {model: gpt-5-codex}\n    qa: {model: gemini-2.5-flash}\n";
        assert!(
            config_problems(&config(named)).is_empty(),
            "{:?}",
            config_problems(&config(named))
        );
        let in_args = "runners:\n  default: codex\n  codex: {args: [--yolo, -c, 'model=\"gpt-5\"']}\norchestration:\n  budget_usd: 5\n";
        assert!(
            config_problems(&config(in_args)).is_empty(),
            "{:?}",
            config_problems(&config(in_args))
        );
        let unpriced = "runners:\n  default: codex\norchestration:\n  budget_usd: 5\n  agents:\n    dev: {runner: codex, model: gpt-9}\n";
        let p = config_problems(&config(unpriced));
        assert!(
            p.iter().any(
                |m| m.starts_with("orchestration.agents.dev.runner: gpt-9 has no price")
                    && m.contains("orchestration.prices.gpt-9")
            ),
            "{p:?}"
        );
        let priced = "orchestration:\n  budget_usd: 5\n  prices:\n    gpt-9: {input: 1, output: 2}\n  agents:\n    dev: {runner: codex, model: gpt-9}\n";
        assert!(
            config_problems(&config(priced)).is_empty(),
            "{:?}",
            config_problems(&config(priced))
        );
        let c = config("runners:\n  roles: {dev: codex}\n");
        assert!(config_problems(&c).is_empty());
        // The default runner's model is each step's: checked step by step when a run starts.
        let c = config("runners:\n  default: codex\norchestration:\n  budget_usd: 5\n  agents:\n    dev: {model: gpt-5}\n");
        assert!(config_problems(&c).is_empty(), "{:?}", config_problems(&c));
        let dev = agent(&c, None, Some("dev")).unwrap();
        assert_eq!(budget_problem(&c, &dev), None);
        let qa = agent(&c, None, Some("qa")).unwrap();
        let why = budget_problem(&c, &qa).unwrap_or_default();
        assert!(
            why.starts_with("codex does not say which model it ran"),
            "{why}"
        );
        let shell = agent(&c, Some("shell"), None).unwrap();
        assert_eq!(budget_problem(&c, &shell), None);
    }

    #[test]
    fn a_token_budget_applies_to_every_agent_cli_but_not_to_a_generic_one() {
        let c = config("runners:\n  default: claude\n  roles: {dev: codex, qa: gemini}\norchestration:\n  budget_tokens: 100000\n");
        assert!(config_problems(&c).is_empty(), "{:?}", config_problems(&c));
        let c = config("runners:\n  default: claude\n  roles: {dev: generic}\n  generic: {command: [my-agent]}\norchestration:\n  budget_tokens: 100000\n");
        let p = config_problems(&c);
        assert_eq!(p.len(), 1, "{p:#?}");
        assert!(
            p[0].starts_with("runners.roles.dev: generic reports no token counts"),
            "{p:?}"
        );
        assert!(
            p[0].contains("use claude, codex, gemini, qwen, opencode, pi, copilot for that role"),
            "{p:?}"
        );
    }
}

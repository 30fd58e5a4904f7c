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

/// Everything wrong with the runner names and runner sections of a config, field path first.
pub fn config_problems(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let runners = &config.runners;
    let named = std::iter::once(("runners.default".to_owned(), &runners.default))
        .chain(
            runners
                .roles
                .iter()
                .map(|(role, r)| (format!("runners.roles.{role}"), r)),
        )
        .chain(config.orchestration.agents.iter().filter_map(|(role, a)| {
            a.runner
                .as_ref()
                .map(|r| (format!("orchestration.agents.{role}.runner"), r))
        }));
    let budget_usd = config.orchestration.budget_usd.is_some();
    let budget_tokens = config.orchestration.budget_tokens.is_some();
    for (field, name) in named {
        let kind = match Kind::parse(name) {
            Err(e) => {
                out.push(format!("{field}: {e}"));
                continue;
            }
            Ok(kind) if kind.is_agent() => kind,
            Ok(_) => continue,
        };
        // A budget counts only what a CLI reports: one that reports nothing would run past
        // it unseen.
        if budget_usd && !kind.adapter().reports_cost() {
            out.push(format!(
                "{field}: {kind} reports no cost, so orchestration.budget_usd cannot limit it; use {} for that role, or replace budget_usd with orchestration.budget_tokens",
                reporters(|k| k.adapter().reports_cost())
            ))
        }
        if budget_tokens && !kind.adapter().reports_tokens() {
            out.push(format!(
                "{field}: {kind} reports no token counts, so orchestration.budget_tokens cannot limit it; use {} for that role, or drop the budget and cap the run with limits.max_invocations",
                reporters(|k| k.adapter().reports_tokens())
            ))
        }
    }
    for (name, cli) in &runners.clis {
        match Kind::parse(name) {
            Ok(kind) => {
                out.extend(kind.adapter().config_problems(cli));
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
    fn a_dollar_budget_needs_runners_that_report_cost() {
        let c = config("runners:\n  default: claude\n  roles: {dev: codex, qa: gemini}\norchestration:\n  budget_usd: 5\n");
        let p = config_problems(&c);
        assert_eq!(p.len(), 2, "{p:#?}");
        assert!(
            p[0].starts_with("runners.roles.dev: codex reports no cost"),
            "{p:?}"
        );
        assert!(p[1].contains("use claude for that role"), "{p:?}");
        let c = config("runners:\n  roles: {dev: codex}\n");
        assert!(config_problems(&c).is_empty());
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
            p[0].contains("use claude, codex, gemini for that role"),
            "{p:?}"
        );
    }
}

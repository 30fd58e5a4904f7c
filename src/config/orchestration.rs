//! The `orchestration:` section of `.bmad/config.yaml`: which agent
//! and model plays each BMAD role, how many agents run at once, the budget, and when a
//! decision goes to a human.
//!
//! ```yaml
//! orchestration:
//!   agents:
//!     sm:  {runner: claude, model: claude-sonnet-4-5}
//!     dev: {runner: codex, model: gpt-5-codex, api_key_env: OPENAI_API_KEY_DEV}
//!   max_concurrent_agents: 2
//!   budget_usd: 20        # what the CLIs report, or their tokens at the models' prices
//!   budget_tokens: 2000000  # for any that reports tokens (Claude, Codex, Gemini)
//!   escalation_threshold: 0.5
//!   prices:               # US dollars per million tokens, over git-bmad's own table
//!     my-fine-tune: {input: 3, output: 12, cached_input: 0.3}
//! ```
//!
//! API keys are named by environment variable, never written here: a config file is
//! committed and journaled runs are shared, so a key in it would leak. A literal `api_key`
//! is refused (its value is never echoed), and the variable's value goes only into the
//! agent's environment, under the name its CLI reads.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The section.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct OrchestrationConfig {
    /// Agent per role (`sm`, `dev`, `qa`, `reviewer`, `architect`, `pm`, `analyst`, …).
    pub agents: BTreeMap<String, Assignment>,
    /// Steps of a parallel phase running at once, at most (1–16).
    pub max_concurrent_agents: u32,
    /// Stop the run once agents have spent this much, in US dollars: the cost a CLI reports,
    /// else the tokens it reports at their model's price.
    pub budget_usd: Option<f64>,
    /// Stop the run once agents have reported this many tokens (input, cache and output):
    /// the budget that applies to CLIs that report no cost.
    pub budget_tokens: Option<u64>,
    /// Stop the run once its agents have spent this many of GitHub's premium requests, as
    /// Copilot CLI counts them (a provider of the user's own spends none).
    pub budget_premium_requests: Option<f64>,
    /// Confidence (0–1) below which a gate is shown in full, whatever its format.
    pub escalation_threshold: f64,
    /// How `run`, `resume` and `answer` show progress (git config `bmad.progress`).
    pub progress: ProgressMode,
    /// Prices of models, by model name, over git-bmad's own table (`runner::prices`).
    pub prices: BTreeMap<String, ModelPrice>,
}

/// What a model's tokens cost, in US dollars per million.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Each input token read fresh (a cache write counts as one).
    pub input: f64,
    /// Each output token (reasoning included).
    pub output: f64,
    /// Each input token read from the prompt cache; the input price when not given.
    #[serde(default)]
    pub cached_input: Option<f64>,
}

/// How a run shows its progress.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ProgressMode {
    /// Every step's start and end, as it happens.
    #[default]
    Verbose,
    /// A line every 5 operations or 30 seconds: steps done, current step, %, time left.
    Summary,
    /// Nothing until the run stops; then its summary.
    Silent,
    /// A live line with the current step and % while a step runs longer than 30 seconds
    /// (on a terminal; a line every 30 seconds otherwise).
    Streaming,
}

impl ProgressMode {
    /// Parse a `bmad.progress` value.
    pub fn parse(text: &str) -> Option<ProgressMode> {
        match text.trim() {
            "verbose" => Some(ProgressMode::Verbose),
            "summary" => Some(ProgressMode::Summary),
            "silent" => Some(ProgressMode::Silent),
            "streaming" => Some(ProgressMode::Streaming),
            _ => None,
        }
    }
}

impl Default for OrchestrationConfig {
    fn default() -> Self {
        OrchestrationConfig {
            agents: BTreeMap::new(),
            max_concurrent_agents: 4,
            budget_usd: None,
            budget_tokens: None,
            budget_premium_requests: None,
            escalation_threshold: 0.5,
            progress: ProgressMode::Verbose,
            prices: BTreeMap::new(),
        }
    }
}

/// One role's agent.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct Assignment {
    /// `claude`, `codex`, `gemini`, `qwen`, `opencode`, `pi`, `shell` or `generic`.
    pub runner: Option<String>,
    /// The model, passed as `--model`.
    pub model: Option<String>,
    /// The environment variable holding this agent's API key.
    pub api_key_env: Option<String>,
    /// Refused: present only to say so clearly.
    #[serde(default, deserialize_with = "present")]
    pub api_key: bool,
}

/// Records that a field was written, without keeping its value.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

impl OrchestrationConfig {
    /// Everything wrong with the section, one message per problem (field path first).
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (role, a) in &self.agents {
            let field = format!("orchestration.agents.{role}");
            if role.is_empty()
                || !role
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
            {
                out.push(format!("{field}: a role is lowercase letters, digits, '-' and '_' (sm, dev, qa, reviewer, architect, …)"));
            }
            if a.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
                out.push(format!(
                    "{field}.model: empty; name a model or leave the field out"
                ));
            }
            if a.api_key {
                out.push(format!("{field}.api_key: API keys are never stored in the config (it is committed and shared); export the key and name the variable: api_key_env: MY_KEY_VARIABLE"));
            }
            if let Some(v) = &a.api_key_env {
                let valid = !v.is_empty()
                    && !v.starts_with(|c: char| c.is_ascii_digit())
                    && v.chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
                if !valid {
                    out.push(format!("{field}.api_key_env: {v:?} is not an environment variable name (UPPER_CASE_WITH_UNDERSCORES); write the variable's name, not the key"));
                }
            }
        }
        if !(1..=16).contains(&self.max_concurrent_agents) {
            out.push(format!(
                "orchestration.max_concurrent_agents: {} is outside 1–16",
                self.max_concurrent_agents
            ));
        }
        if let Some(b) = self.budget_usd {
            if !(b.is_finite() && b > 0.0) {
                out.push(format!(
                    "orchestration.budget_usd: {b} must be a positive amount in US dollars"
                ));
            }
        }
        if let Some(b) = self.budget_premium_requests {
            if !(b.is_finite() && b > 0.0) {
                out.push(format!(
                    "orchestration.budget_premium_requests: {b} must be a positive number of premium requests"
                ));
            }
        }
        if self.budget_tokens == Some(0) {
            out.push("orchestration.budget_tokens: 0 would stop the run before its first step; give a positive number of tokens".into());
        }
        for (model, price) in &self.prices {
            let amounts = [Some(price.input), Some(price.output), price.cached_input];
            if model.trim().is_empty() {
                out.push("orchestration.prices: a price needs the model's name as its key".into());
            }
            if amounts
                .iter()
                .flatten()
                .any(|a| !(a.is_finite() && *a >= 0.0))
            {
                out.push(format!(
                    "orchestration.prices.{model}: input, output and cached_input are US dollars per million tokens, 0 or more"
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.escalation_threshold) {
            out.push(format!(
                "orchestration.escalation_threshold: {} is outside 0–1 (0.5 shows gates below 50% confidence in full)",
                self.escalation_threshold
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> OrchestrationConfig {
        super::super::yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn a_valid_section_assigns_agents_by_role() {
        let o = parse("agents:\n  dev: {runner: codex, model: gpt-5-codex, api_key_env: OPENAI_KEY_DEV}\n  qa: {model: claude-haiku}\nmax_concurrent_agents: 2\nbudget_usd: 12.5\nescalation_threshold: 0.7\n");
        assert!(o.problems().is_empty(), "{:?}", o.problems());
        assert_eq!(o.agents["dev"].model.as_deref(), Some("gpt-5-codex"));
        assert_eq!(o.max_concurrent_agents, 2);
    }

    #[test]
    fn every_problem_is_named_and_keys_are_never_echoed() {
        let o = parse("agents:\n  Dev: {runner: gpt}\n  qa: {api_key: sk-ant-SECRET123, api_key_env: sk-live}\nmax_concurrent_agents: 0\nbudget_usd: -1\nescalation_threshold: 2\n");
        let p = o.problems();
        // The runner's name is the runner layer's to check (it knows which exist).
        assert_eq!(p.len(), 6, "{p:#?}");
        assert!(p[0].starts_with("orchestration.agents.Dev: a role is lowercase"));
        assert!(p[1].starts_with("orchestration.agents.qa.api_key: API keys are never stored"));
        assert!(p[2].starts_with(
            "orchestration.agents.qa.api_key_env: \"sk-live\" is not an environment variable name"
        ));
        assert!(!p.join("\n").contains("SECRET123"));
        let e = super::super::yaml::from_str::<OrchestrationConfig>("agents:\n  dev: {modle: x}\n")
            .unwrap_err();
        assert!(e.message.contains("unknown field `modle`"), "{e}");
    }

    #[test]
    fn prices_are_dollars_per_million_tokens_and_nothing_else() {
        let o = parse("prices:\n  my-model: {input: 3, output: 15}\n  other: {input: 1, output: 2, cached_input: 0.1}\n");
        assert!(o.problems().is_empty(), "{:?}", o.problems());
        assert_eq!(o.prices["my-model"].cached_input, None);
        let bad = parse("prices:\n  my-model: {input: -3, output: 15}\n");
        assert_eq!(bad.problems().len(), 1, "{:?}", bad.problems());
        assert!(bad.problems()[0].starts_with("orchestration.prices.my-model: "));
        let e = super::super::yaml::from_str::<OrchestrationConfig>(
            "prices:\n  m: {input: 1, outptu: 2}\n",
        )
        .unwrap_err();
        assert!(e.message.contains("unknown field `outptu`"), "{e}");
    }
}

//! What an invocation cost: the dollars its CLI reports, else the tokens it reports per model
//! at that model's price, from a table git-bmad keeps (dated) under the prices a
//! configuration gives (`orchestration.prices`).
//!
//! A model with no price is named, never guessed: a dollar budget cannot count what it
//! cannot price, so the run stops there until the configuration prices it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::adapter::{AgentResult, ModelUsage};
use crate::config::ModelPrice;

/// When the providers' list prices below were read.
pub const PRICED_ON: &str = "2026-12-01";

/// List prices in US dollars per million tokens: (model, input, cached input, output). Gemini
/// 2.5 Pro's are those of prompts up to 200,000 tokens (longer ones cost twice as much: a
/// project that sends them prices the model itself).
const TABLE: &[(&str, f64, f64, f64)] = &[
    // Anthropic
    ("claude-opus-4-5", 5.0, 0.5, 25.0),
    ("claude-opus-4-1", 15.0, 1.5, 75.0),
    ("claude-opus-4", 15.0, 1.5, 75.0),
    ("claude-sonnet-4-5", 3.0, 0.3, 15.0),
    ("claude-sonnet-4", 3.0, 0.3, 15.0),
    ("claude-3-7-sonnet", 3.0, 0.3, 15.0),
    ("claude-haiku-4-5", 1.0, 0.1, 5.0),
    ("claude-3-5-haiku", 0.8, 0.08, 4.0),
    // OpenAI
    ("gpt-5.1-codex-max", 1.25, 0.125, 10.0),
    ("gpt-5.1-codex-mini", 0.25, 0.025, 2.0),
    ("gpt-5.1-codex", 1.25, 0.125, 10.0),
    ("gpt-5.1", 1.25, 0.125, 10.0),
    ("gpt-5-codex", 1.25, 0.125, 10.0),
    ("gpt-5-mini", 0.25, 0.025, 2.0),
    ("gpt-5-nano", 0.05, 0.005, 0.4),
    ("gpt-5", 1.25, 0.125, 10.0),
    ("gpt-4.1", 2.0, 0.5, 8.0),
    ("o4-mini", 1.1, 0.275, 4.4),
    // Google
    ("gemini-3-pro-preview", 2.0, 0.2, 12.0),
    ("gemini-2.5-pro", 1.25, 0.125, 10.0),
    ("gemini-2.5-flash-lite", 0.1, 0.01, 0.4),
    ("gemini-2.5-flash", 0.3, 0.03, 2.5),
];

/// The prices a run counts with: the configuration's over the table.
#[derive(Clone, Copy, Debug)]
pub struct Prices<'c> {
    configured: &'c BTreeMap<String, ModelPrice>,
}

/// What one invocation cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Spend {
    /// In US dollars: the CLI's own figure, else every model's tokens at its price; `None`
    /// when the CLI gave no figure and a model it used has no price.
    pub usd: Option<f64>,
    /// Whether `usd` is the CLI's own figure.
    pub reported: bool,
    /// Per model, as the CLI reported them, each with its cost (`usd`): the CLI's figure,
    /// else its tokens at its price; `None` when it has no price.
    pub models: Vec<ModelUsage>,
}

impl Spend {
    /// The models with no price that the cost rests on (`None`: one nobody named).
    pub fn unpriced(&self) -> Vec<Option<&str>> {
        let unknown = self
            .models
            .iter()
            .filter(|m| m.usd.is_none() && !self.reported);
        unknown.map(|m| m.model.as_deref()).collect()
    }
}

impl<'c> Prices<'c> {
    /// The table, under the prices `configured` gives.
    pub fn new(configured: &'c BTreeMap<String, ModelPrice>) -> Prices<'c> {
        Prices { configured }
    }

    /// The price of `model`: the configuration's, else the table's. A dated release
    /// (`claude-sonnet-4-5-20250929`, `gpt-5-2025-08-07`) and a provider's prefix
    /// (`openai/gpt-5`, `models/gemini-2.5-pro`) have the price of the model they name.
    pub fn of(&self, model: &str) -> Option<ModelPrice> {
        let configured = self
            .configured
            .iter()
            .map(|(name, price)| (name.as_str(), *price));
        let table = TABLE.iter().map(|(name, input, cached, output)| {
            let price = ModelPrice {
                input: *input,
                output: *output,
                cached_input: Some(*cached),
            };
            (*name, price)
        });
        let named = |(name, _): &(&str, ModelPrice)| names(model, name);
        // The configuration's exact name first, then the table's (whose order puts a
        // longer name before its prefix), then a configured base name.
        self.configured
            .get(model)
            .copied()
            .or_else(|| {
                table
                    .clone()
                    .find(|(name, _)| *name == bare(model))
                    .map(|(_, p)| p)
            })
            .or_else(|| configured.clone().find(named).map(|(_, p)| p))
            .or_else(|| table.clone().find(named).map(|(_, p)| p))
    }

    /// What `result` cost, and per model.
    pub fn spend(&self, result: &AgentResult) -> Spend {
        let models: Vec<ModelUsage> = result
            .usage
            .iter()
            .map(|usage| ModelUsage {
                usd: usage.usd.or_else(|| self.cost(usage)),
                ..usage.clone()
            })
            .collect();
        let priced = || models.iter().map(|m| m.usd).sum::<Option<f64>>();
        Spend {
            usd: result.cost_usd.or_else(priced),
            reported: result.cost_usd.is_some(),
            models,
        }
    }

    /// `usage` at its model's price; `None` when that has none (nothing used costs nothing).
    pub fn cost(&self, usage: &ModelUsage) -> Option<f64> {
        if usage.input + usage.cached + usage.output == 0 {
            return Some(0.0);
        }
        let price = self.of(usage.model.as_deref()?)?;
        let cached = price.cached_input.unwrap_or(price.input);
        let millions = |tokens: u64| tokens as f64 / 1e6;
        Some(
            millions(usage.input) * price.input
                + millions(usage.cached) * cached
                + millions(usage.output) * price.output,
        )
    }
}

/// `model` without a provider's prefix.
fn bare(model: &str) -> &str {
    model.rsplit('/').next().unwrap_or(model)
}

/// Whether `model` is `name`, or a dated release of it: `name-20250929`, `name-2025-08-07`,
/// `name-latest`.
fn names(model: &str, name: &str) -> bool {
    let Some(rest) = bare(model).strip_prefix(name) else {
        return false;
    };
    let Some(suffix) = rest.strip_prefix('-') else {
        return rest.is_empty();
    };
    suffix == "latest" || is_date(suffix)
}

/// `20250929` or `2025-08-07`, and nothing else: a version after the name
/// (`claude-opus-4-7-20260101` after `claude-opus-4`) is another model, never priced as
/// this one.
fn is_date(text: &str) -> bool {
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    match text.len() {
        8 => digits(text),
        10 => {
            let b = text.as_bytes();
            b[4] == b'-'
                && b[7] == b'-'
                && digits(&text[..4])
                && digits(&text[5..7])
                && digits(&text[8..])
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{Captured, Exit, Kind};

    fn result(runner: &str, cost: Option<f64>, usage: Vec<ModelUsage>) -> AgentResult {
        let mut r = crate::runner::interpret(
            Kind::parse(runner).unwrap(),
            Exit::Code(0),
            Captured::default(),
            Captured::default(),
            0,
        );
        r.cost_usd = cost;
        r.usage = usage;
        r
    }

    fn usage(model: Option<&str>, input: u64, cached: u64, output: u64) -> ModelUsage {
        ModelUsage {
            model: model.map(str::to_owned),
            input,
            cached,
            output,
            usd: None,
        }
    }

    #[test]
    fn a_model_is_priced_by_its_name_its_dated_releases_and_a_providers_prefix() {
        let none = BTreeMap::new();
        let prices = Prices::new(&none);
        let sonnet = prices.of("claude-sonnet-4-5").unwrap();
        assert_eq!(prices.of("claude-sonnet-4-5-20250929"), Some(sonnet));
        assert_eq!(prices.of("openai/gpt-5").unwrap().output, 10.0);
        assert_eq!(prices.of("gpt-5-2025-08-07").unwrap().input, 1.25);
        // A longer name is its own model, not a release of a shorter one.
        assert_eq!(prices.of("gpt-5-mini").unwrap().input, 0.25);
        assert_eq!(prices.of("gemini-2.5-flash-lite").unwrap().output, 0.4);
        assert_eq!(prices.of("gpt-5-turbo-ultra"), None);
        // A newer version of a priced model is not that model.
        assert_eq!(prices.of("claude-opus-4-7-20260101"), None);
        assert_eq!(prices.of("claude-sonnet-4-5-1-20260101"), None);
        assert_eq!(prices.of("gemini-2.5-pro-2026"), None);
        assert_eq!(prices.of("claude-sonnet-4-5x"), None);
        assert_eq!(prices.of(""), None);
    }

    #[test]
    fn the_configuration_prices_a_model_the_table_lacks_and_overrides_one_it_has() {
        let mut configured = BTreeMap::new();
        let mine = ModelPrice {
            input: 2.0,
            output: 4.0,
            cached_input: None,
        };
        configured.insert("my-fine-tune".to_owned(), mine);
        configured.insert("gpt-5".to_owned(), mine);
        let prices = Prices::new(&configured);
        assert_eq!(prices.of("my-fine-tune"), Some(mine));
        assert_eq!(prices.of("my-fine-tune-20260101"), Some(mine));
        assert_eq!(prices.of("gpt-5"), Some(mine));
        assert_eq!(prices.of("gpt-5-mini").unwrap().input, 0.25);
    }

    #[test]
    fn tokens_are_priced_per_model_and_an_unpriced_one_leaves_the_cost_unknown() {
        let none = BTreeMap::new();
        let prices = Prices::new(&none);
        // 1M fresh, 2M cached, 0.5M out of gpt-5: 1.25 + 0.25 + 5.
        let one = result(
            "codex",
            None,
            vec![usage(Some("gpt-5"), 1_000_000, 2_000_000, 500_000)],
        );
        let spend = prices.spend(&one);
        assert!((spend.usd.unwrap() - 6.5).abs() < 1e-9, "{spend:?}");
        assert!(!spend.reported);
        let two = result(
            "gemini",
            None,
            vec![
                usage(Some("gemini-2.5-flash"), 1_000_000, 0, 0),
                usage(Some("gemini-9-ultra"), 10, 0, 10),
            ],
        );
        let spend = prices.spend(&two);
        assert_eq!(spend.usd, None);
        assert_eq!(spend.unpriced(), [Some("gemini-9-ultra")]);
        assert_eq!(spend.models[0].usd, Some(0.3));
        let unnamed = prices.spend(&result("codex", None, vec![usage(None, 1, 0, 1)]));
        assert_eq!(unnamed.unpriced(), [None]);
    }

    #[test]
    fn the_clis_own_figure_wins_over_the_table() {
        let none = BTreeMap::new();
        let prices = Prices::new(&none);
        let spend = prices.spend(&result(
            "claude",
            Some(0.5),
            vec![usage(Some("claude-unreleased"), 1, 0, 1)],
        ));
        assert_eq!((spend.usd, spend.reported), (Some(0.5), true));
        assert!(spend.unpriced().is_empty());
        assert_eq!(spend.models[0].usd, None);
    }

    #[test]
    fn every_table_row_is_reachable_by_its_own_name() {
        let none = BTreeMap::new();
        let prices = Prices::new(&none);
        for (name, input, cached, output) in TABLE {
            let price = prices.of(name).unwrap();
            assert_eq!(
                (price.input, price.cached_input, price.output),
                (*input, Some(*cached), *output),
                "{name}"
            );
        }
    }
}

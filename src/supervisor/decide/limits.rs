//! The run's caps: invocations, money, tokens, time. Checked before a round starts, so a cap stops
//! the run between steps rather than killing one.

use super::super::ledger;
use super::super::outcome::Outcome;
use super::super::playbook::Limits;
use super::super::purse::Exhausted;
use crate::config::OrchestrationConfig;
use crate::runner::prices::Prices;
use crate::session::run_state::milli_requests;
use crate::session::run_state::{micro_usd, RunState};
use crate::session::schema::{
    Body, BudgetLimit, InvocationLimit, PremiumRequestLimit, RunTimeLimit, TokenLimit,
};
use crate::session::{Decision, NewEvent};

/// The cap that starting `starting` more steps would break, as an event and an outcome.
pub fn reached(
    limits: &Limits,
    budgets: &OrchestrationConfig,
    state: &RunState,
    starting: usize,
) -> Option<(NewEvent, Outcome)> {
    if state.invocations as usize + starting > limits.max_invocations as usize {
        return Some(stop(Exhausted::Invocations {
            limit: limits.max_invocations,
            used: state.invocations,
            wanted: starting,
        }));
    }
    if let Some(limit) = budget_micro_usd(budgets, state) {
        let (spent, unpriced) = spent_usd(state, &Prices::new(&budgets.prices));
        if !unpriced.is_empty() {
            return Some(budget_stop(limit, spent, unpriced));
        }
        if spent >= limit {
            return Some(stop(Exhausted::Usd { limit, spent }));
        }
    }
    if let Some(limit) = budgets.budget_tokens.filter(|b| state.tokens >= *b) {
        return Some(stop(Exhausted::Tokens {
            limit,
            spent: state.tokens,
        }));
    }
    let premium = budgets.budget_premium_requests.map(milli_requests);
    if let Some(limit) = premium.filter(|l| state.premium_milli >= *l) {
        return Some(stop(Exhausted::PremiumRequests {
            limit,
            spent: state.premium_milli,
        }));
    }
    let limit = limits.max_run_time.as_millis() as u64;
    if state.run_time_ms >= limit {
        return Some(stop(Exhausted::Time {
            limit,
            spent: state.run_time_ms,
        }));
    }
    None
}

/// The run's dollar budget, in millionths: the one its newest resume set, else the
/// configuration's.
pub fn budget_micro_usd(budgets: &OrchestrationConfig, state: &RunState) -> Option<u64> {
    let configured = budgets.budget_usd.map(micro_usd);
    state.budget_micro_usd.or(configured)
}

/// What the run spent, in millionths of a dollar, as `prices` count it now (tokens of a model
/// priced since they were spent included), and the models still without a price.
pub fn spent_usd(state: &RunState, prices: &Prices<'_>) -> (u64, Vec<String>) {
    let mut spent = state.cost_micro_usd;
    let mut unpriced: Vec<String> = Vec::new();
    for tokens in &state.unpriced {
        match prices.cost(&ledger::usage(tokens)) {
            Some(usd) => spent += micro_usd(usd),
            None => {
                let name = match tokens.model.as_str() {
                    "" => "a model its CLI did not name".to_owned(),
                    model => model.to_owned(),
                };
                if !unpriced.contains(&name) {
                    unpriced.push(name);
                }
            }
        }
    }
    (spent, unpriced)
}

/// A run stopped at its dollar budget: spent, or not countable (`unpriced` models ran).
fn budget_stop(limit: u64, spent: u64, unpriced: Vec<String>) -> (NewEvent, Outcome) {
    let event = NewEvent::new(Body::LimitBudget(BudgetLimit {
        budget_usd: limit as f64 / 1e6,
        spent_usd: spent as f64 / 1e6,
        unpriced: unpriced.clone(),
    }));
    let outcome = Outcome::BudgetLimit {
        limit_micro_usd: limit,
        spent_micro_usd: spent,
        unpriced,
    };
    (event.decision(Some(Decision::Auto)), outcome)
}

/// The event and outcome of a run stopped at `limit` (its own, or one it shares through a
/// [`Purse`](super::super::purse::Purse)).
pub fn stop(limit: Exhausted) -> (NewEvent, Outcome) {
    let (body, outcome) = match limit {
        Exhausted::Invocations {
            limit,
            used,
            wanted,
        } => (
            Body::LimitInvocations(InvocationLimit {
                limit,
                used,
                wanted,
            }),
            Outcome::InvocationLimit { limit },
        ),
        Exhausted::Usd { limit, spent } => return budget_stop(limit, spent, Vec::new()),
        Exhausted::Tokens { limit, spent } => (
            Body::LimitTokens(TokenLimit {
                budget_tokens: limit,
                spent_tokens: spent,
            }),
            Outcome::TokenLimit { limit, spent },
        ),
        Exhausted::PremiumRequests { limit, spent } => (
            Body::LimitPremiumRequests(PremiumRequestLimit {
                budget_premium_requests: limit as f64 / 1e3,
                spent_premium_requests: spent as f64 / 1e3,
            }),
            Outcome::PremiumRequestLimit {
                limit_milli: limit,
                spent_milli: spent,
            },
        ),
        Exhausted::Time { limit, spent } => (
            Body::LimitRunTime(RunTimeLimit {
                limit_secs: limit / 1000,
                used_ms: spent,
            }),
            Outcome::RunTimeLimit {
                limit_secs: limit / 1000,
            },
        ),
    };
    (NewEvent::new(body).decision(Some(Decision::Auto)), outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn budgets(usd: Option<f64>, tokens: Option<u64>) -> OrchestrationConfig {
        OrchestrationConfig {
            budget_usd: usd,
            budget_tokens: tokens,
            ..Default::default()
        }
    }

    #[test]
    fn each_cap_stops_the_run_before_it_is_broken() {
        let limits = Limits {
            max_invocations: 3,
            max_run_time: Duration::from_secs(60),
        };
        let none = budgets(None, None);
        let state = RunState {
            invocations: 2,
            ..Default::default()
        };
        assert!(reached(&limits, &none, &state, 1).is_none());
        let (event, outcome) = reached(&limits, &none, &state, 2).unwrap();
        assert_eq!(event.name(), "limit_invocations_reached");
        assert_eq!(outcome, Outcome::InvocationLimit { limit: 3 });

        let spent = RunState {
            cost_micro_usd: 30_000,
            tokens: 5_000,
            ..Default::default()
        };
        assert!(reached(&limits, &budgets(Some(0.05), Some(6_000)), &spent, 1).is_none());
        let (event, _) = reached(&limits, &budgets(Some(0.025), None), &spent, 1).unwrap();
        assert_eq!(event.name(), "limit_budget_reached");
        let (event, outcome) = reached(&limits, &budgets(None, Some(5_000)), &spent, 1).unwrap();
        assert_eq!(event.name(), "limit_tokens_reached");
        assert_eq!(
            outcome,
            Outcome::TokenLimit {
                limit: 5_000,
                spent: 5_000
            }
        );

        // GitHub's premium requests, a part of one at a time (a model's multiplier).
        let premium = |limit: f64| OrchestrationConfig {
            budget_premium_requests: Some(limit),
            ..Default::default()
        };
        let copilot = RunState {
            premium_milli: 2_330,
            ..Default::default()
        };
        assert!(reached(&limits, &premium(2.5), &copilot, 1).is_none());
        let (event, outcome) = reached(&limits, &premium(2.33), &copilot, 1).unwrap();
        assert_eq!(event.name(), "limit_premium_requests_reached");
        assert_eq!(
            outcome,
            Outcome::PremiumRequestLimit {
                limit_milli: 2_330,
                spent_milli: 2_330
            }
        );

        let late = RunState {
            run_time_ms: 60_000,
            ..Default::default()
        };
        let (event, outcome) = reached(&limits, &none, &late, 1).unwrap();
        assert_eq!(event.name(), "limit_run_time_reached");
        assert_eq!(outcome, Outcome::RunTimeLimit { limit_secs: 60 });
    }

    #[test]
    fn a_dollar_budget_counts_priced_tokens_and_stops_at_a_model_it_cannot_price() {
        let limits = Limits {
            max_invocations: 10,
            max_run_time: Duration::from_secs(60),
        };
        let tokens = |model: &str| crate::session::schema::ModelSpent {
            model: model.to_owned(),
            tokens_in: 1_000_000,
            tokens_cached: 0,
            tokens_out: 100_000,
            cost_usd: None,
        };
        let state = RunState {
            cost_micro_usd: 500_000,
            unpriced: vec![tokens("my-fine-tune"), tokens("")],
            ..Default::default()
        };
        let (event, outcome) = reached(&limits, &budgets(Some(10.0), None), &state, 1).unwrap();
        assert_eq!(event.name(), "limit_budget_reached");
        let Outcome::BudgetLimit {
            unpriced,
            spent_micro_usd,
            ..
        } = outcome
        else {
            panic!("{outcome:?}")
        };
        assert_eq!(unpriced, ["my-fine-tune", "a model its CLI did not name"]);
        assert_eq!(spent_micro_usd, 500_000);
        // Priced since: its tokens count now (1M in at $2, 0.1M out at $10: $3).
        let mut priced = budgets(Some(10.0), None);
        priced.prices.insert(
            "my-fine-tune".into(),
            crate::config::ModelPrice {
                input: 2.0,
                output: 10.0,
                cached_input: None,
            },
        );
        let one = RunState {
            unpriced: vec![tokens("my-fine-tune")],
            ..state.clone()
        };
        assert!(reached(&limits, &priced, &one, 1).is_none());
        assert_eq!(
            spent_usd(&one, &Prices::new(&priced.prices)),
            (3_500_000, Vec::new())
        );
        priced.budget_usd = Some(3.5);
        let (_, outcome) = reached(&limits, &priced, &one, 1).unwrap();
        assert!(
            matches!(outcome, Outcome::BudgetLimit { spent_micro_usd: 3_500_000, ref unpriced, .. } if unpriced.is_empty()),
            "{outcome:?}"
        );
        // No dollar budget: nothing to count, nothing stops.
        assert!(reached(&limits, &budgets(None, None), &state, 1).is_none());
    }
}

//! The run's caps: invocations, money, tokens, time. Checked before a round starts, so a cap stops
//! the run between steps rather than killing one.

use super::super::outcome::Outcome;
use super::super::playbook::Limits;
use super::super::purse::Exhausted;
use crate::config::OrchestrationConfig;
use crate::session::run_state::RunState;
use crate::session::schema::{Body, BudgetLimit, InvocationLimit, RunTimeLimit, TokenLimit};
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
    if let Some(budget) = budgets.budget_usd {
        let limit = (budget * 1e6).round() as u64;
        if state.cost_micro_usd >= limit {
            return Some(stop(Exhausted::Usd {
                limit,
                spent: state.cost_micro_usd,
            }));
        }
    }
    if let Some(budget) = budgets.budget_tokens.filter(|b| state.tokens >= *b) {
        return Some((
            NewEvent::new(Body::LimitTokens(TokenLimit {
                budget_tokens: budget,
                spent_tokens: state.tokens,
            }))
            .decision(Some(Decision::Auto)),
            Outcome::TokenLimit {
                limit: budget,
                spent: state.tokens,
            },
        ));
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
        Exhausted::Usd { limit, spent } => (
            Body::LimitBudget(BudgetLimit {
                budget_usd: limit as f64 / 1e6,
                spent_usd: spent as f64 / 1e6,
            }),
            Outcome::BudgetLimit {
                limit_micro_usd: limit,
                spent_micro_usd: spent,
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

        let late = RunState {
            run_time_ms: 60_000,
            ..Default::default()
        };
        let (event, outcome) = reached(&limits, &none, &late, 1).unwrap();
        assert_eq!(event.name(), "limit_run_time_reached");
        assert_eq!(outcome, Outcome::RunTimeLimit { limit_secs: 60 });
    }
}

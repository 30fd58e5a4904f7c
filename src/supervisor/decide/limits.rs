//! The run's caps: invocations, money, tokens, time. Checked before a round starts, so a cap stops
//! the run between steps rather than killing one.

use super::super::outcome::Outcome;
use super::super::playbook::Limits;
use super::super::state::RunState;
use crate::config::OrchestrationConfig;
use crate::session::schema::{Body, BudgetLimit, InvocationLimit, RunTimeLimit, TokenLimit};
use crate::session::{Decision, NewEvent};

/// The cap that starting `starting` more steps would break, as an event and an outcome.
pub fn reached(
    limits: &Limits,
    budgets: &OrchestrationConfig,
    state: &RunState,
    starting: usize,
) -> Option<(NewEvent, Outcome)> {
    let hit = |body: Body, outcome: Outcome| {
        Some((NewEvent::new(body).decision(Some(Decision::Auto)), outcome))
    };
    if state.invocations as usize + starting > limits.max_invocations as usize {
        return hit(
            Body::LimitInvocations(InvocationLimit {
                limit: limits.max_invocations,
                used: state.invocations,
                wanted: starting,
            }),
            Outcome::InvocationLimit {
                limit: limits.max_invocations,
            },
        );
    }
    if let Some(budget) = budgets.budget_usd {
        let limit_micro_usd = (budget * 1e6).round() as u64;
        let spent_micro_usd = state.cost_micro_usd;
        if spent_micro_usd >= limit_micro_usd {
            return hit(
                Body::LimitBudget(BudgetLimit {
                    budget_usd: budget,
                    spent_usd: spent_micro_usd as f64 / 1e6,
                }),
                Outcome::BudgetLimit {
                    limit_micro_usd,
                    spent_micro_usd,
                },
            );
        }
    }
    if let Some(budget) = budgets.budget_tokens.filter(|b| state.tokens >= *b) {
        return hit(
            Body::LimitTokens(TokenLimit {
                budget_tokens: budget,
                spent_tokens: state.tokens,
            }),
            Outcome::TokenLimit {
                limit: budget,
                spent: state.tokens,
            },
        );
    }
    if state.run_time_ms >= limits.max_run_time.as_millis() as u64 {
        return hit(
            Body::LimitRunTime(RunTimeLimit {
                limit_secs: limits.max_run_time.as_secs(),
                used_ms: state.run_time_ms,
            }),
            Outcome::RunTimeLimit {
                limit_secs: limits.max_run_time.as_secs(),
            },
        );
    }
    None
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

//! The run's caps: invocations, money, time. Checked before a round starts, so a cap stops
//! the run between steps rather than killing one.

use super::super::outcome::Outcome;
use super::super::playbook::Limits;
use super::super::state::RunState;
use crate::session::schema::{Body, BudgetLimit, InvocationLimit, RunTimeLimit};
use crate::session::{Decision, NewEvent};

/// The cap that starting `starting` more steps would break, as an event and an outcome.
pub fn reached(
    limits: &Limits,
    budget_usd: Option<f64>,
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
    if let Some(budget) = budget_usd {
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

    #[test]
    fn each_cap_stops_the_run_before_it_is_broken() {
        let limits = Limits {
            max_invocations: 3,
            max_run_time: Duration::from_secs(60),
        };
        let state = RunState {
            invocations: 2,
            ..Default::default()
        };
        assert!(reached(&limits, None, &state, 1).is_none());
        let (event, outcome) = reached(&limits, None, &state, 2).unwrap();
        assert_eq!(event.name(), "limit_invocations_reached");
        assert_eq!(outcome, Outcome::InvocationLimit { limit: 3 });

        let spent = RunState {
            cost_micro_usd: 30_000,
            ..Default::default()
        };
        assert!(reached(&limits, Some(0.05), &spent, 1).is_none());
        let (event, _) = reached(&limits, Some(0.025), &spent, 1).unwrap();
        assert_eq!(event.name(), "limit_budget_reached");

        let late = RunState {
            run_time_ms: 60_000,
            ..Default::default()
        };
        let (event, outcome) = reached(&limits, None, &late, 1).unwrap();
        assert_eq!(event.name(), "limit_run_time_reached");
        assert_eq!(outcome, Outcome::RunTimeLimit { limit_secs: 60 });
    }
}

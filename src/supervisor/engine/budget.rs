//! The run's money and time, shared: what a round's steps may spend and take, and the
//! purse a run shares with others going on at once (an epic's stories).

use std::time::Duration;

use super::Engine;
use crate::runner::meter::Allowance;
use crate::session::NewEvent;
use crate::supervisor::decide;
use crate::supervisor::error::Result;
use crate::supervisor::outcome::Outcome;
use crate::supervisor::purse::{Amounts, Draw, Exhausted};

impl Engine<'_> {
    /// What each of a round's `steps` steps may take and spend: the run's limit is on time
    /// in steps, summed, so they share what is left of it, and no step runs past it however
    /// its own timeout is set; dollars and tokens likewise (a CLI that can stop itself at an
    /// amount is given its share, and one that reports each request as it runs is stopped at
    /// it, so a running step stops at the budget, one request over at most). `draw` is the
    /// round's allowance from a shared purse, which may be less.
    pub(super) fn shares(&self, steps: usize, draw: Option<&Draw>) -> (Duration, Allowance) {
        let n = steps.max(1);
        let spent = Duration::from_millis(self.state.run_time_ms);
        let left = self.playbook.limits.max_run_time.saturating_sub(spent);
        let mut time = left / n as u32;
        if let Some(ms) = draw.and_then(|d| d.ms) {
            time = time.min(Duration::from_millis(ms));
        }
        let budget = decide::budget_micro_usd(&self.config.orchestration, &self.state);
        let own = budget.map(|budget| {
            let prices = crate::runner::prices::Prices::new(&self.config.orchestration.prices);
            let (spent, _) = decide::spent_usd(&self.state, &prices);
            let left = budget.saturating_sub(spent) as f64 / 1e6;
            left / n as f64
        });
        let money = tighter(own, draw.and_then(|d| d.micro_usd).map(|m| m as f64 / 1e6));
        let own = self.config.orchestration.budget_tokens.map(|budget| {
            let left = budget.saturating_sub(self.state.tokens);
            left.div_ceil(n as u64)
        });
        let tokens = tighter(own, draw.and_then(|d| d.tokens));
        let allowance = Allowance { usd: money, tokens };
        (time.max(Duration::from_secs(1)), allowance)
    }

    /// Draw a round of `steps` steps' allowance from the purse the run shares, if it shares
    /// one: `Err(outcome)` when a shared limit is spent (journaled).
    pub(super) fn draw(
        &mut self,
        steps: usize,
    ) -> Result<std::result::Result<Option<Draw>, Outcome>> {
        match self.purse.map(|p| p.draw(steps)) {
            None => Ok(Ok(None)),
            Some(Ok(draw)) => Ok(Ok(Some(draw))),
            Some(Err(limit)) => {
                let (event, outcome) = decide::limit_stop(limit);
                self.record(event)?;
                Ok(Err(outcome))
            }
        }
    }

    /// A step was stopped at its share of the dollars or tokens the run shares with others:
    /// the purse's limit it came nearest to (the share of each is taken alike) and what all
    /// of them spent.
    pub(super) fn shared_budget_stop(&self) -> Option<(NewEvent, Outcome)> {
        let purse = self.purse?;
        let (limits, spent) = (purse.limits(), purse.spent());
        let dollars = limits.micro_usd.map(|limit| Exhausted::Usd {
            limit,
            spent: spent.micro_usd,
        });
        let tokens = limits.tokens.map(|limit| Exhausted::Tokens {
            limit,
            spent: spent.tokens,
        });
        let nearer = match (dollars, tokens) {
            (Some(d), Some(t)) => Some(if t.spent_part() > d.spent_part() {
                t
            } else {
                d
            }),
            (d, t) => d.or(t),
        };
        Some(decide::limit_stop(nearer?))
    }

    /// What this run spent so far, as a purse counts it.
    pub(super) fn spent(&self) -> Amounts {
        Amounts {
            micro_usd: self.state.cost_micro_usd,
            invocations: self.state.invocations,
            ms: self.state.run_time_ms,
            tokens: self.state.tokens,
            premium_milli: self.state.premium_milli,
        }
    }
}

/// The tighter of two limits, either of which may be none.
fn tighter<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b < a { b } else { a }),
        (a, b) => a.or(b),
    }
}

//! What a running agent has spent, request by request as its output reports it, against
//! what its step was given: reaching that stops the agent within one request of it, not at
//! the step's end. Only a CLI that reports each request as it runs can be metered so
//! ([`Adapter::request_usage`](super::adapter::Adapter::request_usage)); the others stop
//! between steps.

use super::adapter::ModelUsage;
use super::prices::Prices;

/// What one invocation may spend.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Allowance {
    /// In US dollars: tokens at their model's price, or the CLI's own figure.
    pub usd: Option<f64>,
    /// In tokens, read fresh, cached and written alike.
    pub tokens: Option<u64>,
}

impl Allowance {
    /// Whether anything is limited.
    pub fn limits(&self) -> bool {
        self.usd.is_some() || self.tokens.is_some()
    }
}

/// The running count of one invocation's requests.
#[derive(Debug)]
pub struct Meter<'c> {
    allowance: Allowance,
    prices: Prices<'c>,
    /// The model a request that names none ran: the call's.
    model: Option<&'c str>,
    usd: f64,
    tokens: u64,
}

impl<'c> Meter<'c> {
    /// A meter at zero.
    pub fn new(allowance: Allowance, prices: Prices<'c>, model: Option<&'c str>) -> Meter<'c> {
        Meter {
            allowance,
            prices,
            model,
            usd: 0.0,
            tokens: 0,
        }
    }

    /// Count one request; whether the allowance is now spent.
    pub fn count(&mut self, request: &ModelUsage) -> bool {
        self.tokens += request.input + request.cached + request.output;
        let named = ModelUsage {
            model: request.model.clone().or(self.model.map(str::to_owned)),
            ..request.clone()
        };
        // A request whose model has no price cannot be counted here; the run's check
        // after the step stops on it and names the model unpriced (`limit_budget_reached`).
        self.usd += named
            .usd
            .or_else(|| self.prices.cost(&named))
            .unwrap_or(0.0);
        self.allowance.usd.is_some_and(|usd| self.usd >= usd)
            || self
                .allowance
                .tokens
                .is_some_and(|tokens| self.tokens >= tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelPrice;
    use std::collections::BTreeMap;

    fn request(model: Option<&str>) -> ModelUsage {
        ModelUsage {
            model: model.map(str::to_owned),
            input: 600,
            cached: 1000,
            output: 20,
            usd: None,
        }
    }

    #[test]
    fn the_request_that_reaches_the_allowance_is_the_one_that_stops() {
        let mut configured = BTreeMap::new();
        // $0.06 + $0.01 + $0.02 a request.
        configured.insert(
            "test-model".to_owned(),
            ModelPrice {
                input: 100.0,
                output: 1000.0,
                cached_input: Some(10.0),
            },
        );
        let prices = Prices::new(&configured);
        let dollars = Allowance {
            usd: Some(0.225),
            tokens: None,
        };
        // A request that names no model ran the call's.
        let mut meter = Meter::new(dollars, prices, Some("test-model"));
        assert!(!meter.count(&request(None)));
        assert!(!meter.count(&request(Some("test-model"))));
        assert!(meter.count(&request(None)));

        let tokens = Allowance {
            usd: None,
            tokens: Some(3240),
        };
        let mut meter = Meter::new(tokens, prices, None);
        assert!(!meter.count(&request(None)));
        assert!(meter.count(&request(Some("unpriced"))));

        // The CLI's own figure counts as it is.
        let mut meter = Meter::new(dollars, prices, None);
        let reported = ModelUsage {
            usd: Some(0.3),
            ..request(Some("unpriced"))
        };
        assert!(meter.count(&reported));
        assert!(!Allowance::default().limits());
    }
}

//! The ledger's two shapes, converted in one place: what a runner reports of a model
//! ([`ModelUsage`], the model unnamed as `None`) and what the journal keeps of it
//! ([`ModelSpent`], unnamed as an empty name).

use crate::runner::ModelUsage;
use crate::session::schema::ModelSpent;

/// A model's tokens and cost, as the journal keeps them.
pub fn record(usage: &ModelUsage) -> ModelSpent {
    ModelSpent {
        model: usage.model.clone().unwrap_or_default(),
        tokens_in: usage.input,
        tokens_cached: usage.cached,
        tokens_out: usage.output,
        cost_usd: usage.usd,
    }
}

/// A journaled model's tokens, to be priced again.
pub fn usage(spent: &ModelSpent) -> ModelUsage {
    ModelUsage {
        model: Some(spent.model.clone()).filter(|m| !m.is_empty()),
        input: spent.tokens_in,
        cached: spent.tokens_cached,
        output: spent.tokens_out,
        usd: spent.cost_usd,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_goes_to_the_journal_and_back_unchanged() {
        for model in [Some("gpt-5".to_owned()), None] {
            let used = ModelUsage {
                model,
                input: 1,
                cached: 2,
                output: 3,
                usd: Some(0.5),
            };
            assert_eq!(usage(&record(&used)), used);
        }
    }
}

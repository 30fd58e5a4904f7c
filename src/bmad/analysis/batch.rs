//! What to do with a Continue menu: take it, batch it, or stop for a checkpoint, and where a BMB validation result sends the workflow instead.
//!
//! Batching keeps the menu history short: a run of continues becomes one history
//! entry with a count, not one entry per menu, so a resumed workflow replays less.

use serde::Serialize;

use super::menu::HistoryEntry;
use super::tiers::Settings;

/// What happens after a Continue menu.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "next")]
pub enum Next {
    /// Continue without a human.
    Continue {
        /// Continues in the current batch, this one included.
        batched: u32,
    },
    /// The batch is full: show a checkpoint.
    Checkpoint(Summary),
}

/// The checkpoint after a batch: what was continued, with the details on request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// How many continues.
    pub count: u32,
    /// What each continued past, oldest first (the details a reviewer can expand).
    pub operations: Vec<String>,
}

/// Continues taken since the last checkpoint.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Batch {
    operations: Vec<String>,
}

impl Batch {
    /// A Continue menu after `operation`, under `settings`.
    pub fn continue_after(&mut self, operation: &str, settings: &Settings) -> Next {
        self.operations.push(operation.to_owned());
        let count = self.operations.len() as u32;
        match settings.batch_size {
            Some(size) if count >= size => Next::Checkpoint(Summary {
                count,
                operations: std::mem::take(&mut self.operations),
            }),
            _ => Next::Continue { batched: count },
        }
    }

    /// The history entry for a finished batch: one line for all its continues.
    pub fn history_entry(summary: &Summary, at: u64, confidence: u32) -> HistoryEntry {
        HistoryEntry {
            at,
            menu_id: format!(
                "batch of {} continue(s): {}",
                summary.count,
                summary.operations.first().map_or("", String::as_str)
            ),
            selection: "continue".into(),
            confidence,
        }
    }
}

/// A BMB (BMAD Builder) validation result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BmbResult {
    /// Errors that block.
    pub blocking_errors: u32,
    /// Major issues.
    pub major_issues: u32,
    /// Compliance, 0–100.
    pub compliance_score: u32,
}

/// Where a BMB result sends the workflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// More than 3 blocking errors or more than 5 major issues.
    PartyMode,
    /// Compliance below 70.
    AdvancedElicitation,
    /// Within every threshold.
    Continue,
}

/// The most blocking errors that still continue.
pub const MAX_BLOCKING_ERRORS: u32 = 3;
/// The most major issues that still continue.
pub const MAX_MAJOR_ISSUES: u32 = 5;
/// The least compliance that still continues.
pub const MIN_COMPLIANCE: u32 = 70;

/// Route a BMB result, with the reason. Party mode comes first: a result that is
/// both broken and non-compliant needs the wider review.
pub fn route_bmb(r: &BmbResult) -> (Route, String) {
    if r.blocking_errors > MAX_BLOCKING_ERRORS {
        (
            Route::PartyMode,
            format!(
                "{} blocking errors (more than {MAX_BLOCKING_ERRORS})",
                r.blocking_errors
            ),
        )
    } else if r.major_issues > MAX_MAJOR_ISSUES {
        (
            Route::PartyMode,
            format!(
                "{} major issues (more than {MAX_MAJOR_ISSUES})",
                r.major_issues
            ),
        )
    } else if r.compliance_score < MIN_COMPLIANCE {
        (
            Route::AdvancedElicitation,
            format!("compliance {} (below {MIN_COMPLIANCE})", r.compliance_score),
        )
    } else {
        (Route::Continue, "within every BMB threshold".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoints_in(tier: u8, menus: u32) -> Vec<u32> {
        let settings = Settings::for_tier(tier);
        let mut batch = Batch::default();
        (0..menus)
            .filter_map(
                |i| match batch.continue_after(&format!("step {i}"), &settings) {
                    Next::Checkpoint(s) => Some(s.count),
                    Next::Continue { .. } => None,
                },
            )
            .collect()
    }

    #[test]
    fn batch_sizes_follow_the_tier() {
        assert_eq!(checkpoints_in(0, 12), Vec::<u32>::new());
        assert_eq!(checkpoints_in(1, 12), Vec::<u32>::new());
        assert_eq!(checkpoints_in(2, 12), [5, 5]);
        assert_eq!(checkpoints_in(3, 7), [3, 3]);
        assert_eq!(checkpoints_in(4, 3), [1, 1, 1]);
    }

    #[test]
    fn a_checkpoint_lists_the_batch_and_is_one_history_entry() {
        let settings = Settings::for_tier(3);
        let mut batch = Batch::default();
        batch.continue_after("PRD goals", &settings);
        batch.continue_after("PRD scope", &settings);
        let Next::Checkpoint(s) = batch.continue_after("PRD risks", &settings) else {
            panic!("tier 3 checkpoints after 3");
        };
        assert_eq!(s.operations, ["PRD goals", "PRD scope", "PRD risks"]);
        let mut tracker = super::super::menu::Tracker::default();
        tracker.record(Batch::history_entry(&s, 1, 90));
        assert_eq!(tracker.history.len(), 1);
        assert_eq!(
            tracker.history[0].menu_id,
            "batch of 3 continue(s): PRD goals"
        );
        // The next batch starts empty.
        assert_eq!(
            batch.continue_after("epics", &settings),
            Next::Continue { batched: 1 }
        );
    }

    #[test]
    fn bmb_thresholds() {
        let r = |b, m, c| {
            route_bmb(&BmbResult {
                blocking_errors: b,
                major_issues: m,
                compliance_score: c,
            })
            .0
        };
        assert_eq!(r(4, 0, 100), Route::PartyMode);
        assert_eq!(r(0, 6, 100), Route::PartyMode);
        assert_eq!(r(0, 0, 69), Route::AdvancedElicitation);
        assert_eq!(r(3, 5, 70), Route::Continue);
        // Both broken and non-compliant: party mode.
        assert_eq!(r(9, 0, 10), Route::PartyMode);
    }
}

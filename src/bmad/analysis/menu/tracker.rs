//! Menus over time: the history of choices, how deeply menus nest, and how often one may be
//! put in front of a human.

use std::collections::VecDeque;

use serde::Serialize;

/// One menu shown and answered, for history and recovery.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HistoryEntry {
    /// When, seconds since the epoch.
    pub at: u64,
    /// Which menu (its first line, or a caller's id).
    pub menu_id: String,
    /// The option chosen.
    pub selection: String,
    /// How sure.
    pub confidence: u32,
}

/// The most menus kept in history; older ones go first.
pub const HISTORY_LIMIT: usize = 100;
/// The deepest nesting handled without a human.
pub const MAX_DEPTH: usize = 3;
/// Minimum spacing of menus shown to a human, in milliseconds.
pub const MIN_SPACING_MS: u64 = 2000;
/// Menus in a row before a forced pause.
pub const PAUSE_AFTER: usize = 10;

/// Menu history, nesting and the rate of menus shown to a human.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Tracker {
    /// Chronological, at most [`HISTORY_LIMIT`].
    pub history: VecDeque<HistoryEntry>,
    /// Open nested menus (party mode inside a workflow, …).
    pub depth: usize,
    /// When the last menu was shown to a human, milliseconds.
    last_shown_ms: Option<u64>,
    /// Menus shown since the last acknowledged pause.
    shown_in_a_row: usize,
}

/// What the rate limit says about showing a menu now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RateLimit {
    /// Whether showing must wait.
    pub rate_limited: bool,
    /// When it may be shown, milliseconds.
    pub next_available_at: u64,
    /// Ten in a row: a forced pause until the human acknowledges.
    pub forced_pause: bool,
}

impl Tracker {
    /// Record a selection; the oldest entry goes when there are more than 100.
    pub fn record(&mut self, entry: HistoryEntry) {
        self.history.push_back(entry);
        while self.history.len() > HISTORY_LIMIT {
            self.history.pop_front();
        }
    }

    /// Enter a nested menu; `Err` when deeper than 3 levels (escalate to a human).
    pub fn enter(&mut self) -> Result<usize, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!(
                "menus nested {} levels deep (more than {MAX_DEPTH}): a human navigates from here",
                self.depth
            ));
        }
        Ok(self.depth)
    }

    /// Leave a nested menu.
    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Whether a menu may be shown to a human at `now_ms`.
    pub fn check_rate(&self, now_ms: u64) -> RateLimit {
        let next = self.last_shown_ms.map_or(now_ms, |t| t + MIN_SPACING_MS);
        let forced_pause = self.shown_in_a_row >= PAUSE_AFTER;
        RateLimit {
            rate_limited: forced_pause || next > now_ms,
            next_available_at: next.max(now_ms),
            forced_pause,
        }
    }

    /// A menu was shown to a human.
    pub fn shown(&mut self, now_ms: u64) {
        self.last_shown_ms = Some(now_ms);
        self.shown_in_a_row += 1;
    }

    /// The human acknowledged the forced pause.
    pub fn acknowledge(&mut self) {
        self.shown_in_a_row = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_depth_and_rate() {
        let mut t = Tracker::default();
        for i in 0..105 {
            t.record(HistoryEntry {
                at: i,
                menu_id: format!("m{i}"),
                selection: "C".into(),
                confidence: 90,
            });
        }
        assert_eq!(t.history.len(), 100);
        assert_eq!(t.history.front().unwrap().menu_id, "m5");
        assert!(t.enter().is_ok() && t.enter().is_ok() && t.enter().is_ok());
        assert!(t.enter().unwrap_err().contains("4 levels"));
        let mut r = Tracker::default();
        assert!(!r.check_rate(1000).rate_limited);
        r.shown(1000);
        assert_eq!(
            r.check_rate(1500),
            RateLimit {
                rate_limited: true,
                next_available_at: 3000,
                forced_pause: false
            }
        );
        assert!(!r.check_rate(3000).rate_limited);
        for i in 1..10 {
            r.shown(1000 + i * 2000);
        }
        let p = r.check_rate(100_000);
        assert!(p.forced_pause && p.rate_limited);
        r.acknowledge();
        assert!(!r.check_rate(100_000).rate_limited);
    }
}

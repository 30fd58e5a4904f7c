//! Iteration limits, oscillation, infinite loops and stalls (seed 000, stories 2b.10, 2b.12,
//! 5.9, 5.10). Each outcome is a named terminal reason.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use sha2::{Digest, Sha256};

/// MAX_VALIDATION_ITERATIONS.
pub const MAX_VALIDATION_ITERATIONS: u32 = 10;
/// MAX_SAME_ERROR_RETRIES.
pub const MAX_SAME_ERROR_RETRIES: u32 = 3;
/// The sliding window for oscillation.
pub const OSCILLATION_WINDOW: usize = 5;
/// Appearances of one error signature in the window that make an oscillation.
pub const OSCILLATION_REPEATS: usize = 3;
/// Visits of one state that make an infinite loop.
pub const LOOP_VISITS: u32 = 5;

/// Why a loop ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum Terminal {
    /// Ten iterations.
    MaxIterationsExceeded {
        /// Error signatures by iteration.
        errors_by_iteration: Vec<Option<String>>,
    },
    /// The same error three times in a row.
    PersistentError {
        /// The error.
        error: String,
    },
    /// One error 3+ times within 5 consecutive iterations.
    OscillationDetected {
        /// The error.
        error: String,
        /// The window.
        window: Vec<Option<String>>,
    },
    /// One state visited 5+ times.
    InfiniteLoopDetected {
        /// The state.
        state: String,
    },
}

/// What one more iteration leads to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "verdict", content = "detail")]
pub enum Next {
    /// Go on.
    Continue,
    /// Go on; the next iteration is the last (9 of 10).
    Warning {
        /// The message for the human.
        message: String,
    },
    /// Stop.
    Stop(Terminal),
}

/// The validate → edit → revalidate loop of one workflow.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Iterations {
    /// Iterations done.
    pub current_iteration: u32,
    /// The error signature of each iteration (`None`: it passed).
    pub errors_by_iteration: Vec<Option<String>>,
    /// The same error in consecutive iterations.
    pub same_error_count: u32,
    visits: HashMap<String, u32>,
}

impl Iterations {
    /// The limit.
    pub fn max_iterations(&self) -> u32 {
        MAX_VALIDATION_ITERATIONS
    }

    /// Record an iteration's result (`None`: no error).
    pub fn record(&mut self, error: Option<&str>) -> Next {
        let previous = self.errors_by_iteration.last().cloned().flatten();
        self.current_iteration += 1;
        self.errors_by_iteration.push(error.map(str::to_owned));
        self.same_error_count = match (error, previous.as_deref()) {
            (Some(e), Some(p)) if e == p => self.same_error_count + 1,
            (Some(_), _) => 1,
            (None, _) => 0,
        };
        if let Some(e) = error {
            if self.same_error_count >= MAX_SAME_ERROR_RETRIES {
                return Next::Stop(Terminal::PersistentError {
                    error: e.to_owned(),
                });
            }
            let window: Vec<Option<String>> = self
                .errors_by_iteration
                .iter()
                .rev()
                .take(OSCILLATION_WINDOW)
                .rev()
                .cloned()
                .collect();
            if window.iter().filter(|w| w.as_deref() == Some(e)).count() >= OSCILLATION_REPEATS {
                return Next::Stop(Terminal::OscillationDetected {
                    error: e.to_owned(),
                    window,
                });
            }
        }
        if self.current_iteration >= MAX_VALIDATION_ITERATIONS {
            return Next::Stop(Terminal::MaxIterationsExceeded {
                errors_by_iteration: self.errors_by_iteration.clone(),
            });
        }
        if self.current_iteration == MAX_VALIDATION_ITERATIONS - 1 {
            return Next::Warning {
                message: format!(
                    "iteration {} of {MAX_VALIDATION_ITERATIONS} begins next: the limit is near",
                    self.current_iteration + 1
                ),
            };
        }
        Next::Continue
    }

    /// Record a visit to a state; five visits are an infinite loop.
    pub fn visit(&mut self, state: &str) -> Option<Terminal> {
        let n = self.visits.entry(state.to_owned()).or_insert(0);
        *n += 1;
        (*n >= LOOP_VISITS).then(|| Terminal::InfiniteLoopDetected {
            state: state.to_owned(),
        })
    }
}

/// What a stall check says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum StallAction {
    /// Not a stall.
    None,
    /// A stall with fewer than 2 attempts: retry with the memory-first fix strategy.
    RetryMemoryFirst,
    /// A stall with 2+ attempts: escalate to party mode.
    EscalatePartyMode {
        /// The stalled output's hash.
        hash: String,
    },
    /// This stall already escalated and failed: a human takes over (no re-escalation loop).
    EscalateHuman {
        /// The hash.
        hash: String,
    },
}

/// Two consecutive outputs with the same SHA-256 are a stall.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stalls {
    last: Option<String>,
    failed_escalations: HashSet<String>,
}

/// SHA-256 of a text, in hex.
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Stalls {
    /// Look at a validation output after `attempts` attempts.
    pub fn observe(&mut self, output: &str, attempts: u32) -> StallAction {
        let hash = sha256_hex(output);
        let stalled = self.last.as_deref() == Some(hash.as_str());
        self.last = Some(hash.clone());
        if !stalled {
            return StallAction::None;
        }
        if self.failed_escalations.contains(&hash) {
            return StallAction::EscalateHuman { hash };
        }
        if attempts >= 2 {
            StallAction::EscalatePartyMode { hash }
        } else {
            StallAction::RetryMemoryFirst
        }
    }

    /// Party mode did not resolve the stall with this hash: never escalate it there again.
    pub fn escalation_failed(&mut self, hash: &str) {
        self.failed_escalations.insert(hash.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_iterations_with_a_warning_at_nine() {
        let mut it = Iterations::default();
        let errors = ["a", "b", "c", "d", "e", "f", "g", "h"];
        for e in errors {
            assert_eq!(it.record(Some(e)), Next::Continue);
        }
        assert!(matches!(it.record(Some("i")), Next::Warning { .. }));
        assert!(matches!(
            it.record(Some("j")),
            Next::Stop(Terminal::MaxIterationsExceeded { .. })
        ));
        assert_eq!(it.current_iteration, 10);
    }

    #[test]
    fn the_same_error_three_times_in_a_row() {
        let mut it = Iterations::default();
        assert_eq!(it.record(Some("E1")), Next::Continue);
        assert_eq!(it.record(Some("E1")), Next::Continue);
        assert_eq!(it.same_error_count, 2);
        assert_eq!(
            it.record(Some("E1")),
            Next::Stop(Terminal::PersistentError { error: "E1".into() })
        );
    }

    #[test]
    fn oscillation_in_a_five_wide_window() {
        let mut it = Iterations::default();
        for e in ["A", "B", "A", "B"] {
            assert_eq!(it.record(Some(e)), Next::Continue);
        }
        let Next::Stop(Terminal::OscillationDetected { error, window }) = it.record(Some("A"))
        else {
            panic!("no oscillation")
        };
        assert_eq!(error, "A");
        assert_eq!(window.len(), 5);
        // Spread wider than five iterations, it is not an oscillation.
        let mut it = Iterations::default();
        for e in ["A", "x", "y", "A", "z", "w"] {
            assert!(!matches!(it.record(Some(e)), Next::Stop(_)));
        }
    }

    #[test]
    fn a_state_visited_five_times() {
        let mut it = Iterations::default();
        for _ in 0..4 {
            assert_eq!(it.visit("step-3"), None);
        }
        assert_eq!(
            it.visit("step-3"),
            Some(Terminal::InfiniteLoopDetected {
                state: "step-3".into()
            })
        );
    }

    #[test]
    fn stalls_escalate_once() {
        let mut s = Stalls::default();
        assert_eq!(s.observe("out", 1), StallAction::None);
        assert_eq!(s.observe("out", 1), StallAction::RetryMemoryFirst);
        let StallAction::EscalatePartyMode { hash } = s.observe("out", 2) else {
            panic!("no escalation")
        };
        s.escalation_failed(&hash);
        assert_eq!(s.observe("out", 3), StallAction::EscalateHuman { hash });
        assert_eq!(s.observe("other", 4), StallAction::None);
    }
}

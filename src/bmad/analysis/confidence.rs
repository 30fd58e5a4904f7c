//! Confidence from several signals, and what a score means for a
//! decision and for how a checkpoint is shown.
//!
//! Numbers, exactly as specified: verdict 0–35 points, memory match 0–25, reviewer agreement
//! 0–25, party-mode outcome 0–15; an optional model-selection signal (0–10) scales every
//! weight by 100/110 (so it adds at most 9.1 and the total stays 0–100); no signal gives 25,
//! one signal is capped at 60; signals more than 30 points apart (each normalised to 0–100)
//! are resolved with priority multipliers 1.5 / 1.25 / 1.0 / 0.75 (the model signal 1.0);
//! a calculation that cannot be done gives 30. Classification: High ≥ 70, Medium 40–69,
//! Low < 40, which is not the decision threshold (≥ 80 autonomous).
//!
//! Note: the conflict rule switches formulas at the 30-point boundary, so the score is
//! monotone in each signal on either side of it but can step at the boundary itself.

use serde::{Deserialize, Serialize};

/// A signal source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// The validation verdict.
    Verdict,
    /// A match in memory.
    Memory,
    /// Agreement between reviewers.
    Reviewer,
    /// The outcome of party mode.
    Party,
    /// Model selection (the optional fifth signal).
    Model,
}

impl Signal {
    /// Parse a signal name (`verdict`, `memory`, `reviewer`, `party`, `model`).
    pub fn parse(name: &str) -> Option<Signal> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "verdict" | "validation" => Signal::Verdict,
            "memory" => Signal::Memory,
            "reviewer" | "review" | "reviewers" => Signal::Reviewer,
            "party" | "party_mode" | "party-mode" => Signal::Party,
            "model" => Signal::Model,
            _ => return None,
        })
    }

    /// `NAME=VALUE` with a value from 0 to 1 (`verdict=0.9`), as the command line gives it.
    pub fn parse_assignment(text: &str) -> Result<(Signal, f64), String> {
        let (name, value) = text
            .split_once('=')
            .ok_or_else(|| format!("{text:?}: write NAME=VALUE, e.g. verdict=0.9"))?;
        let signal = Signal::parse(name).ok_or_else(|| {
            format!("{text:?}: unknown signal {name:?}; signals: verdict, memory, reviewer, party, model")
        })?;
        let value = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| (0.0..=1.0).contains(v))
            .ok_or_else(|| format!("{text:?}: the value is a number from 0 to 1"))?;
        Ok((signal, value))
    }

    /// Points at most, before the 100/110 scaling.
    pub fn base_weight(&self) -> f64 {
        match self {
            Signal::Verdict => 35.0,
            Signal::Memory => 25.0,
            Signal::Reviewer => 25.0,
            Signal::Party => 15.0,
            Signal::Model => 10.0,
        }
    }

    /// Priority when signals conflict.
    pub fn priority(&self) -> f64 {
        match self {
            Signal::Verdict => 1.5,
            Signal::Memory => 1.25,
            Signal::Reviewer | Signal::Model => 1.0,
            Signal::Party => 0.75,
        }
    }
}

/// High ≥ 70, Medium 40–69, Low < 40.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// ≥ 70.
    High,
    /// 40–69.
    Medium,
    /// < 40.
    Low,
}

/// What a score lets the automation do (≥ 80 alone, 50–79 with a recommendation, < 50 not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Decide without asking.
    Auto,
    /// Ask, recommending a choice.
    AskWithHint,
    /// Ask without a recommendation.
    Ask,
}

/// How a checkpoint is shown (Minimal ≥ 80, Summary 50–79, Full < 50).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// One or two lines, a single confirmation.
    Minimal,
    /// Key decisions, details on request.
    Summary,
    /// The complete log, explicit approval.
    Full,
}

/// The decision thresholds (≥ 80, 50–79, < 50), shared by actions and checkpoint formats.
const DECISION_BANDS: (f64, f64) = (80.0, 50.0);
/// The classification thresholds (≥ 70, 40–69, < 40).
const CLASS_BANDS: (f64, f64) = (70.0, 40.0);

/// Which of three bands a score is in: 0 at or above the top, 1 at or above the bottom, else 2.
fn band(score: f64, (top, bottom): (f64, f64)) -> usize {
    if score >= top {
        0
    } else if score >= bottom {
        1
    } else {
        2
    }
}

/// Action for a score.
pub fn action(score: f64) -> Action {
    [Action::Auto, Action::AskWithHint, Action::Ask][band(score, DECISION_BANDS)]
}

/// Checkpoint format for a score.
pub fn format(score: f64) -> Format {
    [Format::Minimal, Format::Summary, Format::Full][band(score, DECISION_BANDS)]
}

/// Classification of a score.
pub fn class(score: f64) -> Class {
    [Class::High, Class::Medium, Class::Low][band(score, CLASS_BANDS)]
}

/// One signal's part in a score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Part {
    /// The signal.
    pub signal: Signal,
    /// Its value, 0–100.
    pub value: f64,
    /// Its weight in points (scaled when the model signal is there).
    pub weight: f64,
    /// Points it contributes at face value (value × weight / 100).
    pub points: f64,
}

/// A computed confidence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Confidence {
    /// 0–100, one decimal.
    pub score: f64,
    /// High, Medium, Low.
    pub class: Class,
    /// Auto, ask with a hint, ask.
    pub action: Action,
    /// Minimal, Summary, Full.
    pub checkpoint_format: Format,
    /// Each signal's part.
    pub parts: Vec<Part>,
    /// Signals more than 30 points apart: priority multipliers were applied.
    pub conflict: bool,
    /// One signal only: capped at 60.
    pub capped: bool,
    /// Why the default (25) or the fallback (30) was used instead of the signals.
    pub fallback: Option<String>,
}

const DEFAULT: f64 = 25.0;
const FALLBACK: f64 = 30.0;
const SINGLE_SOURCE_CAP: f64 = 60.0;
const CONFLICT_SPREAD: f64 = 30.0;

/// Compute a confidence from signal values in 0–1.
pub fn confidence(signals: &[(Signal, f64)]) -> Confidence {
    let done = |score: f64, parts, conflict, capped, fallback| {
        let score = (score.clamp(0.0, 100.0) * 10.0).round() / 10.0;
        Confidence {
            score,
            class: class(score),
            action: action(score),
            checkpoint_format: format(score),
            parts,
            conflict,
            capped,
            fallback,
        }
    };
    if signals.is_empty() {
        return done(
            DEFAULT,
            Vec::new(),
            false,
            false,
            Some("no signal: default confidence".into()),
        );
    }
    let mut seen = Vec::new();
    for (signal, value) in signals {
        let invalid = if !value.is_finite() || !(0.0..=1.0).contains(value) {
            Some(format!("signal {signal:?} has value {value}, outside 0–1"))
        } else if seen.contains(signal) {
            Some(format!("signal {signal:?} given twice"))
        } else {
            None
        };
        if let Some(why) = invalid {
            return done(
                FALLBACK,
                Vec::new(),
                false,
                false,
                Some(format!("{why}: fallback confidence")),
            );
        }
        seen.push(*signal);
    }
    let scale = if seen.contains(&Signal::Model) {
        100.0 / 110.0
    } else {
        1.0
    };
    let parts: Vec<Part> = signals
        .iter()
        .map(|(signal, value)| {
            let weight = signal.base_weight() * scale;
            Part {
                signal: *signal,
                value: value * 100.0,
                weight,
                points: value * weight,
            }
        })
        .collect();
    let max = parts.iter().map(|p| p.value).fold(f64::MIN, f64::max);
    let min = parts.iter().map(|p| p.value).fold(f64::MAX, f64::min);
    let conflict = parts.len() > 1 && max - min > CONFLICT_SPREAD;
    let multiplier = |p: &Part| if conflict { p.signal.priority() } else { 1.0 };
    let total: f64 = parts.iter().map(|p| multiplier(p) * p.weight).sum();
    let score = parts
        .iter()
        .map(|p| p.value * multiplier(p) * p.weight)
        .sum::<f64>()
        / total;
    let capped = parts.len() == 1 && score > SINGLE_SOURCE_CAP;
    let score = if parts.len() == 1 {
        score.min(SINGLE_SOURCE_CAP)
    } else {
        score
    };
    done(score, parts, conflict, capped, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Signal::*;

    #[test]
    fn the_seed_numbers() {
        // All four at full strength: 35 + 25 + 25 + 15 = 100.
        let c = confidence(&[(Verdict, 1.0), (Memory, 1.0), (Reviewer, 1.0), (Party, 1.0)]);
        assert_eq!(c.score, 100.0);
        let points: Vec<f64> = c.parts.iter().map(|p| p.points).collect();
        assert_eq!(points, [35.0, 25.0, 25.0, 15.0]);
        // The fifth signal scales every weight by 100/110; the model adds at most 9.1.
        let c = confidence(&[
            (Verdict, 1.0),
            (Memory, 1.0),
            (Reviewer, 1.0),
            (Party, 1.0),
            (Model, 1.0),
        ]);
        assert_eq!(c.score, 100.0);
        assert!((c.parts[4].weight - 9.0909).abs() < 1e-3);
        assert!((c.parts[0].weight - 31.818).abs() < 1e-3);
        // No signal: 25. One signal: capped at 60.
        assert_eq!(confidence(&[]).score, 25.0);
        let one = confidence(&[(Verdict, 0.9)]);
        assert_eq!((one.score, one.capped), (60.0, true));
        assert_eq!(confidence(&[(Memory, 0.4)]).score, 40.0);
        // Failure: 30.
        assert_eq!(confidence(&[(Verdict, f64::NAN)]).score, 30.0);
        assert_eq!(confidence(&[(Verdict, 1.5)]).score, 30.0);
        assert_eq!(confidence(&[(Verdict, 0.5), (Verdict, 0.6)]).score, 30.0);
    }

    #[test]
    fn conflicts_use_priority_multipliers() {
        // 90 vs 40: 50 apart. (90·1.5·35 + 40·1.25·25) / (1.5·35 + 1.25·25) = 71.34…
        let c = confidence(&[(Verdict, 0.9), (Memory, 0.4)]);
        assert!(c.conflict);
        assert_eq!(c.score, 71.3);
        // 90 vs 70: 20 apart, simple weighted average (90·35 + 70·25) / 60 = 81.67.
        let c = confidence(&[(Verdict, 0.9), (Memory, 0.7)]);
        assert!(!c.conflict);
        assert_eq!(c.score, 81.7);
    }

    #[test]
    fn classes_actions_and_formats() {
        for (score, class_, action_, format_) in [
            (85.0, Class::High, Action::Auto, Format::Minimal),
            (80.0, Class::High, Action::Auto, Format::Minimal),
            (79.9, Class::High, Action::AskWithHint, Format::Summary),
            (70.0, Class::High, Action::AskWithHint, Format::Summary),
            (69.9, Class::Medium, Action::AskWithHint, Format::Summary),
            (50.0, Class::Medium, Action::AskWithHint, Format::Summary),
            (49.9, Class::Medium, Action::Ask, Format::Full),
            (40.0, Class::Medium, Action::Ask, Format::Full),
            (39.9, Class::Low, Action::Ask, Format::Full),
        ] {
            assert_eq!(
                (class(score), action(score), format(score)),
                (class_, action_, format_),
                "{score}"
            );
        }
    }

    /// Property: within 0–100 for every input, and monotone in each signal while the conflict
    /// state does not change (the spec's formula switch is the one allowed step).
    #[test]
    fn bounded_and_monotone() {
        let grid: Vec<f64> = (0..=20).map(|i| i as f64 / 20.0).collect();
        let all = [Verdict, Memory, Reviewer, Party, Model];
        let mut seed: u64 = 7;
        for _ in 0..4000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let count = (seed >> 60) as usize % 5 + 1;
            let signals: Vec<(Signal, f64)> = all[..count]
                .iter()
                .enumerate()
                .map(|(i, s)| (*s, grid[((seed >> (i * 5)) % 21) as usize]))
                .collect();
            let base = confidence(&signals);
            assert!((0.0..=100.0).contains(&base.score), "{signals:?}");
            for i in 0..signals.len() {
                let mut up = signals.clone();
                up[i].1 = (up[i].1 + 0.05).min(1.0);
                let higher = confidence(&up);
                if higher.conflict == base.conflict {
                    assert!(
                        higher.score >= base.score,
                        "{signals:?} → {up:?}: {} < {}",
                        higher.score,
                        base.score
                    );
                }
            }
        }
    }
}

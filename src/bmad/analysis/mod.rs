//! Deterministic judgements that let a BMAD workflow run unattended: menus in an agent's
//! output and which option to take, confidence from several signals, validation types,
//! review verdicts, cross-references, project type and tier, pre-flight checks, tier
//! settings, batching and overrides, BMB thresholds. (What ends a stuck run, the supervisor
//! decides: attempts, the same failure twice, review rounds that do not converge.)

pub mod batch;
pub mod confidence;
pub mod menu;
pub mod preflight;
pub mod project;
pub mod review;
pub mod tiers;
pub mod validation;
pub mod xref;

//! Deterministic judgements that let a BMAD workflow run unattended (seed 000): menus in an
//! agent's output and which option to take, confidence from several signals, and the loop
//! and stall limits that end a stuck workflow with a named reason.
//!
//! Menus (2b.1–2b.5, 7.6), confidence (2b.7, 2b.11), loops and stalls (2b.10, 2b.12, 5.9,
//! 5.10), validation types (1.1, 1.4), review verdicts (5.13), cross-references (1.3),
//! project type and tier (2a.3, 2a.4), pre-flight checks (1.2), tier settings, batching and
//! overrides (2b.6, 7.1, 7.2), BMB thresholds (2b.3).

pub mod batch;
pub mod confidence;
pub mod loops;
pub mod menu;
pub mod preflight;
pub mod project;
pub mod review;
pub mod tiers;
pub mod validation;
pub mod xref;

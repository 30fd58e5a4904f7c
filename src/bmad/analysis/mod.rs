//! Deterministic judgements that let a BMAD workflow run unattended (seed 000): menus in an
//! agent's output and which option to take, confidence from several signals, and the loop
//! and stall limits that end a stuck workflow with a named reason.
//!
//! So far: menus (2b.1–2b.5, 7.6), confidence (2b.7, 2b.11), loops and stalls (2b.10, 2b.12,
//! 5.9, 5.10). Validation and review verdicts, cross-references and project tiers are to come.

pub mod confidence;
pub mod loops;
pub mod menu;

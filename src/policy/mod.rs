//! Policy: what agents may not do to a repository, and the checks that enforce it.
//!
//! So far: [`secrets`], the scanner behind `git bmad scan` (and, later, the pre-commit and
//! pre-push hooks and the redaction of agent output before it reaches a journal note).

pub mod scan;
pub mod secrets;

//! Where a playbook run stands: the session layer's fold of the journal
//! ([`crate::session::run_state`]), the one every reader of a run uses.

pub use crate::session::run_state::*;

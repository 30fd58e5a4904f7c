//! All end-to-end tests, in one binary (one link step, one shared build).

// Tests and fixtures: a panic is how an assertion fails.
#![allow(clippy::unwrap_used)]

mod common;

mod test_acp;
mod test_actions;
mod test_agent_settings;
mod test_analyze;
mod test_bmad_releases;
mod test_checkpoint;
mod test_contain;
mod test_contract;
mod test_corpus;
mod test_crash;
mod test_docs;
mod test_epic;
mod test_epic_acceptance;
mod test_epic_crash;
mod test_epic_gates;
mod test_epic_judge;
mod test_epic_stack;
mod test_epic_v4;
mod test_epic_v7;
mod test_guard;
mod test_hook_managers;
mod test_hooks;
mod test_journal;
mod test_json;
mod test_layers;
mod test_lifecycle;
mod test_man;
mod test_misbehaving;
mod test_policy_scope;
mod test_push_policy;
mod test_real_cli;
mod test_removed;
mod test_report;
mod test_rollback;
mod test_root_of_trust;
mod test_scan;
mod test_session_state;
mod test_shapes;
mod test_snapshots;
mod test_start;
mod test_stories;
mod test_stories_v7;
mod test_supervisor;
mod test_sync;
mod test_trust;
mod test_watch;
mod test_workflow;

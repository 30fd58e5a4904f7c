//! The names an epic run gives what it makes and asks: its sessions, their branches, its
//! gates. Every other file of the epic takes them from here.

use crate::config::Config;

/// The epic session's name.
pub fn session_name(epic: &str) -> String {
    format!("epic-{}", story_session_name(epic))
}

/// The branch a story's session works on (`bmad/<key>` with the default prefix).
pub fn story_branch(config: &Config, key: &str) -> String {
    let branch = config.branch_for(&story_session_name(key));
    branch.trim_start_matches("refs/heads/").to_owned()
}

/// A story's session name: its key, with what a session name cannot hold (a stories-mode
/// key's `/`) made `-`.
pub fn story_session_name(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The close-out session's name.
pub fn close_session_name(epic: &str) -> String {
    format!("{}-close", session_name(epic))
}

pub use crate::session::epic_state::{COMPLETION_GATE as COMPLETION, SCOPE_GATE as SCOPE};

/// The gate's id that asks whether story `key` runs though a dependency did not end well.
pub fn dependency(key: &str) -> String {
    format!("dependency:{key}")
}

/// The gate's id that asks a human about what git-bmad's judge found on story `key`'s
/// branch.
pub fn judge(key: &str) -> String {
    format!("judge:{key}")
}

/// The gate's id where a person says go before v7 ticket `key` starts (its `hitl`,
/// `plan_checkpoint` or high `risk`).
pub fn person_first(key: &str) -> String {
    format!("person:{key}")
}

/// The gate's id where work pauses after v7 ticket `key` is done (its `done_checkpoint`).
pub fn done_checkpoint(key: &str) -> String {
    format!("done-checkpoint:{key}")
}

/// The integration checkpoint gate's id after story `key`.
pub fn integration(key: &str) -> String {
    crate::session::epic_state::integration_gate(key)
}

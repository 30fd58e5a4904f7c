//! The git layer: one [`Repo`] handle per process.
//!
//! Everything above this module talks to git through it. gix does objects, refs, notes and
//! status in-process (fast, no fork); the `git` binary does what gix does not do or does not
//! do maturely: worktree add/remove/prune, `read-tree -m -u`, tree diffs, config writes.
//! The binary's runner is private: other layers call named operations (`commands.rs`), so
//! every git command line git-bmad runs is written, and can be audited, in this folder.

mod big_blob;
mod blobs;
mod checkout_form;
mod cli;
mod commands;
mod diff;
mod error;
mod feed_setting;
mod fence;
mod format;
mod identity;
mod ignores;
mod index;
mod merge;
mod notes;
mod pack;
mod prestage;
mod push;
mod refs;
mod repo;
mod scratch;
mod shadow_place;
mod signing;
mod snapshot;
mod snapshot_cache;
mod sparse;
mod submodules;
mod tree_check;
mod watch;
mod worktree_scan;

pub use commands::{ConfigFile, DiffStat, PatchStream};
pub use diff::ChangedFile;
pub use diff::TreeChange;
pub use error::{Error, Result};
pub use feed_setting::FeedSetting;
pub use fence::{
    abandoned_shadow, put_back_abandoned_shadow, CommandShadow, Fence, FenceKind, View,
    REPORT_SOCKET, RUN_LOCK,
};
pub use gix::ObjectId;
pub use index::SavedIndex;
pub use notes::NotesTip;
pub use push::{PushOutcome, Refused};
pub use refs::{lock_age, CasOutcome, ABANDONED_GIT_LOCK, STALE_LOCK_AGE};
pub use repo::{CommitInfo, Repo, WorktreeInfo};
pub use signing::{precheck, Precheck, SshSigner};
pub use snapshot::{Dirt, Staged, Vet, Vetted, VET_LIMIT};
pub use watch::enable_watcher;
#[cfg(target_os = "linux")]
pub use watch::run_watcher;

/// Serialize an object id as its full hex string (for `--json` output).
pub fn serialize_id<S: serde::Serializer>(
    id: &ObjectId,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&id.to_string())
}

/// Serialize a list of object ids as hex strings.
pub fn serialize_ids<S: serde::Serializer>(
    ids: &[ObjectId],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(ids.iter().map(ToString::to_string))
}

/// Proof that the caller's layer may call git itself (the git layer's neighbours below the
/// session layer, and the CLI): a session handle gives up its git repository only for one.
/// The layer test keeps this name out of every layer above sessions, so those layers can
/// reach the repository through session operations only.
#[derive(Clone, Copy, Debug)]
pub struct Direct;

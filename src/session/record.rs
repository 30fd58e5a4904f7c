//! A checkpoint as git holds it: a commit whose trailers summarise the session, read back
//! and written out. The operations that make checkpoints are in `checkpoint.rs`; what lists
//! sessions reads them from here.

use serde::Serialize;

use super::error::Result;
use super::state::Status;
use super::trailers::{seq_trailer, trailer};
use crate::git::{ObjectId, Repo, SavedIndex};

/// The session summary carried by every checkpoint commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Trailers {
    /// `Bmad-Session`.
    pub session: String,
    /// `Bmad-Seq`: the journal's last `seq` when the checkpoint was written.
    pub seq: u64,
    /// `Bmad-Status`.
    pub status: Status,
    /// `Bmad-Step` (`-` for none).
    pub step: Option<String>,
    /// `Bmad-Name`.
    pub name: String,
    /// `Bmad-Branch` (full ref name).
    pub branch: String,
    /// `Bmad-Worktree`.
    pub worktree: String,
    /// `Bmad-Base`: what the session started from, as the user named it (a branch is protected).
    pub base: String,
    /// `Bmad-Number`: the checkpoint's place on the chain, 1 for the first — the number
    /// `rollback` takes, known without walking the chain. 0 on chains older than it.
    pub number: u64,
    /// `Bmad-Clone`: the clone of the repository the session's worktree is in, once the
    /// session has travelled (`resume` on another machine); absent: the clone it started in.
    pub clone: Option<String>,
    /// `Bmad-Lease: released`: pushed with no run live in its clone, so another clone may
    /// take it at once (`resume` needs no `--steal`).
    pub released: bool,
}

impl Trailers {
    pub(super) fn format(&self) -> String {
        format!(
            "Bmad-Session: {}\nBmad-Seq: {}\nBmad-Status: {}\nBmad-Step: {}\nBmad-Name: {}\nBmad-Branch: {}\nBmad-Worktree: {}\nBmad-Base: {}\nBmad-Number: {}\n",
            self.session,
            self.seq,
            self.status,
            self.step.as_deref().unwrap_or("-"),
            self.name,
            self.branch,
            self.worktree,
            self.base,
            self.number
        ) + &self
            .clone
            .as_deref()
            .map(|c| format!("Bmad-Clone: {c}\n"))
            .unwrap_or_default()
            + if self.released {
                "Bmad-Lease: released\n"
            } else {
                ""
            }
    }

    /// Read the trailers from a commit message; `None` if it is not a checkpoint.
    pub fn parse(message: &str) -> Option<Trailers> {
        let get = |key| trailer(message, key).map(str::to_owned);
        Some(Trailers {
            session: get("Bmad-Session")?,
            seq: seq_trailer(message).unwrap_or(0),
            status: Status::parse(&get("Bmad-Status").unwrap_or_default()),
            step: get("Bmad-Step").filter(|s| s != "-" && !s.is_empty()),
            name: get("Bmad-Name").unwrap_or_default(),
            branch: get("Bmad-Branch").unwrap_or_default(),
            worktree: get("Bmad-Worktree").unwrap_or_default(),
            base: get("Bmad-Base").unwrap_or_default(),
            number: get("Bmad-Number").and_then(|n| n.parse().ok()).unwrap_or(0),
            clone: get("Bmad-Clone"),
            released: get("Bmad-Lease").as_deref() == Some("released"),
        })
    }
}

/// One checkpoint commit.
#[derive(Clone, Debug, Serialize)]
pub struct Checkpoint {
    /// The commit.
    #[serde(serialize_with = "crate::git::serialize_id")]
    pub id: ObjectId,
    /// The snapshot of the worktree.
    #[serde(serialize_with = "crate::git::serialize_id")]
    pub tree: ObjectId,
    /// `[previous checkpoint, session HEAD]`, or `[session HEAD]` for the first.
    #[serde(serialize_with = "crate::git::serialize_ids")]
    pub parents: Vec<ObjectId>,
    /// The one-line label.
    pub label: String,
    /// The session summary.
    pub trailers: Trailers,
    /// The saved index, when it differed from the session HEAD (one of `parents`).
    #[serde(serialize_with = "serialize_optional_id")]
    pub index: Option<ObjectId>,
    /// The bytes on disk that git's checkout of `tree` would not give back (a CRLF file
    /// under `text=auto`, a lossy filter's input), as a commit of a tree of them at their
    /// paths: the last of `parents`. Only a rollback's safety checkpoint has it.
    #[serde(serialize_with = "serialize_optional_id")]
    pub raw: Option<ObjectId>,
    /// Commit time, seconds since the epoch.
    pub time: i64,
}

/// Where git-bmad's own per-session files live in a worktree.
pub(crate) const SESSION_FILES: &str = ".bmad/sessions/";

impl Checkpoint {
    /// The work that changed from `self` to `later`: each changed path with its new blob
    /// (all zeros when deleted). git-bmad's own files (the rendered journals) are left out:
    /// they change with every event and are no step's work.
    pub fn work_changed_to(
        &self,
        repo: &super::Repo,
        later: &Checkpoint,
    ) -> Result<Vec<(String, String)>> {
        let repo = &repo.git;
        if self.tree == later.tree {
            return Ok(Vec::new());
        }
        Ok(repo
            .diff_trees(self.tree, later.tree)?
            .into_iter()
            .filter(|c| !c.path.starts_with(SESSION_FILES))
            .map(|c| (c.path, c.new_id))
            .collect())
    }

    /// Read a checkpoint commit; `None` if the object is not one (not a commit, or a commit
    /// without checkpoint trailers: a ref a remote filled with something else, say).
    pub fn read(repo: &Repo, id: ObjectId) -> Result<Option<Checkpoint>> {
        let info = match repo.commit_info(id) {
            Ok(info) => info,
            // Asked only on failure: the common case reads the object once.
            Err(_) if !repo.is_commit(id) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let Some(trailers) = Trailers::parse(&info.message) else {
            return Ok(None);
        };
        // Each extra parent is named by its trailer, the raw bytes last, the index before.
        let named = |name: &str| {
            trailer(&info.message, name).and_then(|hex| ObjectId::from_hex(hex.as_bytes()).ok())
        };
        let raw = named(RAW_TRAILER).filter(|id| info.parents.last() == Some(id));
        let before_raw = &info.parents[..info.parents.len() - usize::from(raw.is_some())];
        let index = named(INDEX_TRAILER).filter(|id| before_raw.last() == Some(id));
        Ok(Some(Checkpoint {
            id,
            tree: info.tree,
            parents: info.parents,
            label: info.message.lines().next().unwrap_or_default().to_owned(),
            trailers,
            index,
            raw,
            time: info.time,
        }))
    }

    /// The parents that are checkpoints or session commits (the saved index and the raw
    /// bytes left out).
    fn chain_parents(&self) -> &[ObjectId] {
        let extras = usize::from(self.index.is_some()) + usize::from(self.raw.is_some());
        &self.parents[..self.parents.len().saturating_sub(extras)]
    }

    /// The previous checkpoint in the chain, if this is not the first.
    pub fn previous(&self) -> Option<ObjectId> {
        let parents = self.chain_parents();
        (parents.len() == 2).then(|| parents[0])
    }

    /// The session HEAD recorded when the checkpoint was taken.
    pub fn session_head(&self) -> Option<ObjectId> {
        self.chain_parents().last().copied()
    }

    /// The index recorded with the checkpoint: the saved one, or else the session HEAD's
    /// tree (nothing was staged).
    pub fn saved_index(&self, repo: &Repo) -> Result<SavedIndex> {
        Ok(match (self.index, self.session_head()) {
            (Some(commit), _) => repo.read_saved_index(commit)?,
            (None, Some(head)) => SavedIndex::Tree(repo.tree_of(head)?),
            (None, None) => SavedIndex::Tree(repo.empty_tree()),
        })
    }
}

/// The trailer naming a checkpoint's saved index.
pub(super) const INDEX_TRAILER: &str = "Bmad-Index";
/// The trailer naming a checkpoint's raw bytes.
pub(super) const RAW_TRAILER: &str = "Bmad-Raw";

fn serialize_optional_id<S: serde::Serializer>(
    id: &Option<ObjectId>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match id {
        Some(id) => s.serialize_str(&id.to_string()),
        None => s.serialize_none(),
    }
}

//! git notes, read and written in-process with gix's notes-tree plumbing.
//!
//! gix has no "append", and its `replace` re-reads the ref itself, so a caller cannot tie what
//! it read to what it writes. git-bmad needs exactly that tie (the journal's next `seq` comes
//! from the tip it read), so this module splits the operation: read a [`NotesTip`], build the
//! next notes commit from it, and let the caller CAS the ref from that tip to the new commit.

use gix::bstr::ByteSlice;
use gix::note::plumbing::State;

use super::error::{Error, Result};
use super::repo::Repo;
use super::ObjectId;

/// The state of a notes ref at one moment.
#[derive(Clone, Debug)]
pub struct NotesTip {
    /// The notes commit, or `None` if the ref does not exist yet.
    pub commit: Option<ObjectId>,
    /// The notes tree (the empty tree for a missing ref).
    pub tree: ObjectId,
    /// The notes commit's message (empty for a missing ref).
    pub message: String,
}

impl Repo {
    /// Read the current tip of a notes ref.
    pub fn notes_tip(&self, notes_ref: &str) -> Result<NotesTip> {
        match self.read_ref(notes_ref)? {
            None => Ok(NotesTip {
                commit: None,
                tree: self.empty_tree(),
                message: String::new(),
            }),
            Some(commit) => {
                let info = self.commit_info(commit)?;
                Ok(NotesTip {
                    commit: Some(commit),
                    tree: info.tree,
                    message: info.message,
                })
            }
        }
    }

    /// The note on `annotated` in the notes tree `tree`, if any.
    pub fn note_in(&self, tree: ObjectId, annotated: ObjectId) -> Result<Option<Vec<u8>>> {
        let mut state = State::new(tree, self.gix())
            .map_err(|e| Error::gix(format!("could not read notes tree {tree}"), e))?;
        let blob = state
            .get(&annotated, self.gix())
            .map_err(|e| Error::gix(format!("could not look up the note of {annotated}"), e))?;
        blob.map(|id| self.read_blob(id)).transpose()
    }

    /// Write the notes commit that follows `tip` with `data` as the note of `annotated`.
    ///
    /// Only objects are written; moving the ref (CAS from `tip.commit`) is the caller's job.
    pub fn notes_commit_with(
        &self,
        tip: &NotesTip,
        annotated: ObjectId,
        data: &[u8],
        message: &str,
    ) -> Result<ObjectId> {
        let blob = self.write_blob(data)?;
        let mut state = State::new(tip.tree, self.gix())
            .map_err(|e| Error::gix(format!("could not read notes tree {}", tip.tree), e))?;
        let edit = state
            .replace(annotated, blob, self.gix())
            .map_err(|e| Error::gix(format!("could not write the note of {annotated}"), e))?;
        let parents: Vec<ObjectId> = tip.commit.into_iter().collect();
        self.write_commit(edit.tree, &parents, message)
    }

    /// Every note in a notes tree: (annotated object, note blob), in tree order.
    ///
    /// Walks any fanout (`ab/cd…`, `ab/cd/ef…`), as git does; entries that are not notes are
    /// skipped.
    pub fn notes_list(&self, tree: ObjectId) -> Result<Vec<(ObjectId, ObjectId)>> {
        let mut out = Vec::new();
        self.collect_notes(tree, String::new(), &mut out)?;
        Ok(out)
    }

    fn collect_notes(
        &self,
        tree: ObjectId,
        prefix: String,
        out: &mut Vec<(ObjectId, ObjectId)>,
    ) -> Result<()> {
        let object = self
            .gix()
            .find_tree(tree)
            .map_err(|e| Error::gix(format!("could not read notes tree {tree}"), e))?;
        let decoded = object
            .decode()
            .map_err(|e| Error::gix(format!("could not decode notes tree {tree}"), e))?;
        let hex_len = tree.kind().len_in_hex();
        for entry in &decoded.entries {
            let Ok(name) = entry.filename.to_str() else {
                continue;
            };
            if !name.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let path = format!("{prefix}{name}");
            if entry.mode.is_tree() && path.len() < hex_len {
                self.collect_notes(entry.oid.to_owned(), path, out)?;
            } else if entry.mode.is_blob() && path.len() == hex_len {
                if let Ok(annotated) = ObjectId::from_hex(path.as_bytes()) {
                    out.push((annotated, entry.oid.to_owned()));
                }
            }
        }
        Ok(())
    }
}

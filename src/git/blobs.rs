//! Blob ids: of bytes, and of everything a tree holds.

use std::collections::HashSet;

use super::error::{Error, Result};
use super::repo::Repo;
use super::ObjectId;

impl Repo {
    /// The id `bytes` have (or would have) as a blob.
    pub fn blob_id_of(&self, bytes: &[u8]) -> Result<ObjectId> {
        let repo = self.gix();
        gix::objs::compute_hash(repo.object_hash(), gix::object::Kind::Blob, bytes)
            .map_err(|e| Error::gix("could not hash a file", e))
    }

    /// Every file `tree` holds, at any depth: its path and its blob.
    pub fn files_under(&self, tree: ObjectId) -> Result<Vec<(String, ObjectId)>> {
        let out = self.git()?.run([
            "ls-tree",
            "-r",
            "-z",
            "--format=%(objecttype) %(objectname) %(path)",
            &tree.to_string(),
        ])?;
        Ok(out
            .split(|b| *b == 0)
            .filter_map(|entry| {
                let entry = std::str::from_utf8(entry).ok()?;
                let (id, path) = entry.strip_prefix("blob ")?.split_once(' ')?;
                Some((path.to_owned(), ObjectId::from_hex(id.as_bytes()).ok()?))
            })
            .collect())
    }

    /// Every blob `tree` holds, at any depth.
    pub fn blob_ids_under(&self, tree: ObjectId) -> Result<HashSet<ObjectId>> {
        let out = self.git()?.run([
            "ls-tree",
            "-r",
            "-z",
            "--format=%(objecttype) %(objectname)",
            &tree.to_string(),
        ])?;
        Ok(out
            .split(|b| *b == 0)
            .filter_map(|entry| {
                let entry = std::str::from_utf8(entry).ok()?;
                let id = entry.strip_prefix("blob ")?;
                ObjectId::from_hex(id.as_bytes()).ok()
            })
            .collect())
    }
}

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

    /// Every file `tree` holds, at any depth: its path and its blob (a path that is not
    /// UTF-8 is left out).
    pub fn files_under(&self, tree: ObjectId) -> Result<Vec<(String, ObjectId)>> {
        Ok(self
            .blobs_under(tree)?
            .into_iter()
            .filter_map(|(path, id)| Some((String::from_utf8(path).ok()?, id)))
            .collect())
    }

    /// Every blob `tree` holds, at any depth.
    pub fn blob_ids_under(&self, tree: ObjectId) -> Result<HashSet<ObjectId>> {
        Ok(self
            .blobs_under(tree)?
            .into_iter()
            .map(|(_, id)| id)
            .collect())
    }

    /// Each blob `tree` holds, at any depth, with its path's bytes (`ls-tree -r`).
    fn blobs_under(&self, tree: ObjectId) -> Result<Vec<(Vec<u8>, ObjectId)>> {
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
                let rest = entry.strip_prefix(b"blob ")?;
                let space = rest.iter().position(|b| *b == b' ')?;
                let id = ObjectId::from_hex(&rest[..space]).ok()?;
                Some((rest[space + 1..].to_vec(), id))
            })
            .collect())
    }
}

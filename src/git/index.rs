//! A worktree's index as part of its state: saved with a checkpoint, put back by a rollback.
//!
//! The index is saved as the tree it describes (`write-tree` of a copy, so the real one is
//! never written while an agent may be staging). An index in the middle of a merge has
//! conflict stages no tree can hold; it is saved whole, as a blob of the index file.

use std::path::Path;

use super::cli::parse_id;
use super::error::{Error, Result};
use super::repo::Repo;
use super::snapshot::{Vet, VET_LIMIT};
use super::ObjectId;

/// A saved index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SavedIndex {
    /// The tree the index describes.
    Tree(ObjectId),
    /// The index file itself, as a blob: it has unmerged or intent-to-add entries.
    Raw(ObjectId),
}

/// The trailer that tells a saved index's kind.
const KIND_TRAILER: &str = "Bmad-Index-Kind: ";

/// The entry holding a raw index file in a saved index's tree.
const RAW_ENTRY: &str = "index";

impl Repo {
    /// The saved index `saved` with every staged file `vet` refuses put back as `head_tree`
    /// has it (absent, for a new file), and the paths refused: what `git add` wrote stays
    /// unreachable, so a checkpoint never keeps a staged secret alive. A staged file that
    /// `snapshot` (the worktree's vetted tree) holds as it is was vetted there, and is not
    /// read again. A raw index (one with unmerged entries) is kept as it is.
    pub fn vet_saved_index(
        &self,
        saved: SavedIndex,
        head_tree: ObjectId,
        snapshot: ObjectId,
        vet: Vet<'_>,
    ) -> Result<(SavedIndex, Vec<String>)> {
        let SavedIndex::Tree(staged) = saved else {
            return Ok((saved, Vec::new()));
        };
        let mut refused = Vec::new();
        for change in self.diff_trees(head_tree, staged)? {
            // Gitlinks are another repository's commits, not bytes of this one.
            if change.status == 'D' || change.new_mode == "160000" {
                continue;
            }
            let id = ObjectId::from_hex(change.new_id.as_bytes())
                .map_err(|e| Error::Corrupt(format!("{}: {e}", change.new_id)))?;
            if self
                .entry_in(snapshot, &change.path)?
                .is_some_and(|(_, vetted)| vetted == id)
            {
                continue;
            }
            let bytes = self.blob_head(id, VET_LIMIT)?;
            if !vet(&change.path, &bytes) {
                refused.push(change.path);
            }
        }
        if refused.is_empty() {
            return Ok((SavedIndex::Tree(staged), refused));
        }
        let mut editor = self
            .gix()
            .edit_tree(staged)
            .map_err(|e| Error::gix(format!("could not edit tree {staged}"), e))?;
        for path in &refused {
            match self.entry_in(head_tree, path)? {
                Some((kind, id)) => editor.upsert(path, kind, id).map(drop),
                None => editor.remove(path).map(drop),
            }
            .map_err(|e| Error::gix(format!("could not keep {path} out of the index"), e))?;
        }
        let tree = editor
            .write()
            .map(|id| id.detach())
            .map_err(|e| Error::gix("could not write the vetted index tree", e))?;
        Ok((SavedIndex::Tree(tree), refused))
    }

    /// A private copy of this worktree's index in its git dir (no file when there is no
    /// index, which git reads as an empty one; an empty file it refuses):
    /// its stat cache keeps `add -A` and `read-tree -u` cheap, and the real index, which an
    /// agent may be staging into, is never written. Deleted when dropped.
    ///
    /// The copy keeps the index's modification time: git re-reads a file stamped no earlier
    /// than its index (racy git), and a copy stamped now would have it trust the stat data
    /// of a file rewritten, same size, in the second git checked it out, and miss the edit.
    pub fn copy_index(&self) -> Result<tempfile::NamedTempFile> {
        let copy = tempfile::Builder::new()
            .prefix("bmad-index-")
            .tempfile_in(self.git_dir())
            .map_err(|e| Error::io("could not create a temporary index in", self.git_dir(), e))?;
        let real = self.git_dir().join("index");
        if real.exists() {
            std::fs::copy(&real, copy.path())
                .map_err(|e| Error::io("could not copy the index", &real, e))?;
            let written = std::fs::metadata(&real)
                .and_then(|meta| meta.modified())
                .map_err(|e| Error::io("could not read the time of", &real, e))?;
            copy.as_file()
                .set_modified(written)
                .map_err(|e| Error::io("could not keep the index's time on", copy.path(), e))?;
        } else {
            // A worktree whose checkout was interrupted; the name stays reserved by `copy`,
            // which deletes whatever git writes there when dropped.
            std::fs::remove_file(copy.path())
                .map_err(|e| Error::io("could not clear", copy.path(), e))?;
        }
        Ok(copy)
    }

    /// The index of this worktree, saved (see the module docs).
    pub fn save_index(&self) -> Result<SavedIndex> {
        let copy = self.copy_index()?;
        match self.git()?.run_on_index(Some(copy.path()), ["write-tree"]) {
            Ok(out) => Ok(SavedIndex::Tree(parse_id(&out)?)),
            Err(Error::Command { stderr, .. }) if stderr.contains("unmerged") => {
                let bytes = std::fs::read(copy.path())
                    .map_err(|e| Error::io("could not read the index copy", copy.path(), e))?;
                Ok(SavedIndex::Raw(self.write_blob(&bytes)?))
            }
            Err(e) => Err(e),
        }
    }

    /// This worktree's index file, saved whole, when it holds intent-to-add entries (`git
    /// add -N`), which no tree can hold; `None` when it holds none.
    pub fn index_with_intent_to_add(&self) -> Result<Option<SavedIndex>> {
        let index = self
            .gix()
            .index_or_empty()
            .map_err(|e| Error::gix("could not read the index", e))?;
        let intent = index
            .entries()
            .iter()
            .any(|e| e.flags.contains(gix::index::entry::Flags::INTENT_TO_ADD));
        if !intent {
            return Ok(None);
        }
        let copy = self.copy_index()?;
        let bytes = std::fs::read(copy.path())
            .map_err(|e| Error::io("could not read the index copy", copy.path(), e))?;
        Ok(Some(SavedIndex::Raw(self.write_blob(&bytes)?)))
    }

    /// Make this worktree's index what `saved` describes; files on disk are not touched.
    /// Entries whose content did not change keep their stat data, so `status` stays cheap.
    pub fn restore_index(&self, saved: SavedIndex) -> Result<()> {
        match saved {
            SavedIndex::Tree(tree) => self
                .git()?
                .run(["read-tree", "--reset", &tree.to_string()])
                .map(drop),
            SavedIndex::Raw(blob) => {
                let bytes = self.read_blob(blob)?;
                self.check_index_paths(&bytes)?;
                let index = self.git_dir().join("index");
                write_locked(&index, &bytes)?;
                // The saved stat data describes files as they were: refresh it (a failure
                // only means some entries stay marked as changed).
                let _ = self.git()?.run(["update-index", "-q", "--refresh"]);
                Ok(())
            }
        }
    }

    /// Keep a saved index in the object database as a commit (so a checkpoint can name it as
    /// a parent and it stays reachable): its tree is the index's tree, or holds the raw index
    /// file as `index`.
    pub fn write_saved_index(&self, saved: SavedIndex) -> Result<ObjectId> {
        let (tree, kind) = match saved {
            SavedIndex::Tree(tree) => (tree, "tree"),
            SavedIndex::Raw(blob) => {
                let mut editor = self
                    .gix()
                    .edit_tree(self.empty_tree())
                    .map_err(|e| Error::gix("could not start a tree for a saved index", e))?;
                editor
                    .upsert(RAW_ENTRY, gix::object::tree::EntryKind::Blob, blob)
                    .map_err(|e| Error::gix("could not record a saved index", e))?;
                let tree = editor
                    .write()
                    .map_err(|e| Error::gix("could not write a saved index's tree", e))?
                    .detach();
                (tree, "raw")
            }
        };
        self.write_commit(
            tree,
            &[],
            &format!("git-bmad: saved index\n\n{KIND_TRAILER}{kind}\n"),
        )
    }

    /// A saved index written by [`Self::write_saved_index`].
    pub fn read_saved_index(&self, commit: ObjectId) -> Result<SavedIndex> {
        let info = self.commit_info(commit)?;
        if !info.message.contains(&format!("{KIND_TRAILER}raw")) {
            return Ok(SavedIndex::Tree(info.tree));
        }
        let tree = self
            .gix()
            .find_tree(info.tree)
            .map_err(|e| Error::gix(format!("could not read the saved index {commit}"), e))?;
        let entry = tree
            .find_entry(RAW_ENTRY)
            .ok_or_else(|| Error::Corrupt(format!("saved index {commit} has no `{RAW_ENTRY}`")))?;
        Ok(SavedIndex::Raw(entry.oid().to_owned()))
    }

    /// Refuse an index file (one that came from another clone, say) with an entry git would
    /// never write: outside the tree (`..`, an absolute path), or into a `.git`.
    fn check_index_paths(&self, bytes: &[u8]) -> Result<()> {
        let scratch = tempfile::Builder::new()
            .prefix("bmad-index-check-")
            .tempfile_in(self.git_dir())
            .map_err(|e| Error::io("could not create a temporary index in", self.git_dir(), e))?;
        std::fs::write(scratch.path(), bytes)
            .map_err(|e| Error::io("could not write", scratch.path(), e))?;
        let listed = self
            .git()?
            .run_on_index(Some(scratch.path()), ["ls-files", "--stage", "-z"])?;
        for record in listed.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            // `<mode> <object> <stage>\t<path>`
            let path = record
                .iter()
                .position(|b| *b == b'\t')
                .map_or(record, |tab| &record[tab + 1..]);
            if !is_plain_tree_path(path) {
                return Err(Error::Corrupt(format!(
                    "the saved index names {:?}, a path outside the worktree; it is not installed",
                    String::from_utf8_lossy(path)
                )));
            }
        }
        Ok(())
    }

    /// Remove `paths` from the index file `index` (not from disk).
    pub fn forget_paths(&self, index: &Path, paths: &[String]) -> Result<()> {
        for chunk in paths.chunks(500) {
            let mut args = vec!["update-index", "--force-remove", "--"];
            args.extend(chunk.iter().map(String::as_str));
            self.git()?.run_on_index(Some(index), args)?;
        }
        Ok(())
    }
}

/// Replace a file the way git does: through `<file>.lock`, created exclusively, so a git
/// command holding the lock is never overwritten under it.
/// A path git would keep in a tree: relative, no empty, `.` or `..` component, no `.git`.
fn is_plain_tree_path(path: &[u8]) -> bool {
    !path.is_empty()
        && !path.starts_with(b"/")
        && path.split(|b| *b == b'/').all(|part| {
            !part.is_empty() && part != b"." && part != b".." && !part.eq_ignore_ascii_case(b".git")
        })
}

fn write_locked(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock = std::path::PathBuf::from(lock_name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lock)
        .map_err(|e| Error::io("could not take the lock", &lock, e))?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&lock, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&lock);
        return Err(Error::io("could not write", path, e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_paths_inside_the_tree_are_plain() {
        for good in [
            "a",
            "src/main.rs",
            ".gitignore",
            "a/.github/x",
            "x..y",
            "a\\b",
        ] {
            assert!(super::is_plain_tree_path(good.as_bytes()), "{good}");
        }
        for bad in [
            "",
            "../x",
            "a/../../x",
            "/etc/passwd",
            "a//b",
            "./a",
            ".git/hooks/pre-commit",
            "a/.GIT/config",
        ] {
            assert!(!super::is_plain_tree_path(bad.as_bytes()), "{bad}");
        }
    }
}

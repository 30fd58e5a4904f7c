//! The bytes on disk a rollback's safety checkpoint keeps beside its tree, and an undo gives
//! back: a checkpoint's tree holds files as git stores them, and git's checkout of those
//! does not always write what the user had (CRLF under `text=auto` or `eol`, an expanded
//! `$Id$`, the input of a lossy clean filter).

use super::error::{Error, Result};
use crate::git::{ObjectId, Repo, TreeChange};

/// A file's bytes, vetted before they enter the object database: `false` refuses them.
pub(super) type Vet<'a> = crate::git::Vet<'a>;

/// Of the files a rollback from `leaving` rewrites or deletes (`changes`), those whose bytes
/// git's checkout of `leaving` would not give back, kept as a commit of a tree of them;
/// `None` when there are none. Each is shown to `vet` first: one it refuses stops the
/// rollback, as a secret in any changed file does.
pub(super) fn keep(
    wt: &Repo,
    leaving: ObjectId,
    changes: &[TreeChange],
    vet: Vet<'_>,
) -> Result<Option<ObjectId>> {
    let rewritten: Vec<String> = changes
        .iter()
        .filter(|c| is_file_mode(&c.old_mode))
        .map(|c| c.path.clone())
        .collect();
    let unlike = wt.unlike_checkout(leaving, &rewritten)?;
    if unlike.is_empty() {
        return Ok(None);
    }
    // Written together, in one pack when they are many.
    let writer = wt.holding_objects();
    let mut blobs = Vec::new();
    let mut refused = Vec::new();
    for path in unlike {
        match writer.store_file_as_is(&path, vet)? {
            Some(blob) => blobs.push((path, blob)),
            None => refused.push(path),
        }
    }
    if !refused.is_empty() {
        return Err(Error::SecretInWorktree { paths: refused });
    }
    let tree = writer.tree_of_blobs(&blobs)?;
    let message = format!(
        "bytes on disk that the checkout of {} does not give back",
        leaving.to_hex_with_len(10)
    );
    let commit = writer.write_commit(tree, &[], &message)?;
    writer.write_held(&[])?;
    Ok(Some(commit))
}

/// After the files of `to` were written, the bytes `raw` kept where a file holds exactly
/// what git's checkout of `to` writes (so nobody wrote it since): run again after a crash,
/// it finishes the job and touches nothing done. The paths given back.
pub(super) fn give_back(wt: &Repo, raw: ObjectId, to: ObjectId) -> Result<Vec<String>> {
    let kept = wt.files_under(wt.tree_of(raw)?)?;
    let paths: Vec<String> = kept.iter().map(|(p, _)| p.clone()).collect();
    let unlike = wt.unlike_checkout(to, &paths)?;
    let mut given = Vec::new();
    for (path, blob) in kept {
        let on_disk = wt.workdir().join(&path);
        let plain = std::fs::symlink_metadata(&on_disk).is_ok_and(|m| m.is_file());
        if !plain || unlike.contains(&path) {
            continue;
        }
        // Not waited onto disk, as git's checkout does not: a crash leaves the file whole,
        // old or new, and the next run gives back what is still missing.
        wt.write_blob_over(blob, &on_disk)?;
        given.push(path);
    }
    Ok(given)
}

fn is_file_mode(mode: &str) -> bool {
    matches!(mode, "100644" | "100755")
}

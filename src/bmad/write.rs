//! How git-bmad writes a BMAD file it read: atomically, only if nobody changed it since, and
//! never through a symbolic link.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::{Error, Result};

/// Replace a file atomically, refusing when its bytes are no longer those read
/// (`fingerprint`): someone else wrote it in between, and their change must not be lost. A
/// symbolic link is never written through: whoever can edit the project (an agent) could
/// point one at a file outside it, which git-bmad would then rewrite.
pub(super) fn write_unless_changed(path: &Path, fingerprint: &[u8; 32], text: &str) -> Result<()> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Error::Io {
            action: "refused to write through the symbolic link",
            path: path.to_path_buf(),
            source: std::io::Error::other(
                "a BMAD file git-bmad changes must be a plain file; replace the link with the file",
            ),
        });
    }
    let now = std::fs::read(path).map_err(|e| Error::io("could not re-read", path, e))?;
    let now: [u8; 32] = Sha256::digest(&now).into();
    if &now != fingerprint {
        return Err(Error::ChangedMeanwhile {
            path: path.to_path_buf(),
        });
    }
    crate::fs::write_atomically(path, text.as_bytes(), None)
        .map_err(|e| Error::io("could not write", path, e))
}

//! File writes that a crash cannot tear: a temporary file in the same directory, renamed over
//! the target in one step. Readers see the old content or the new, never half of either.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The prefix of the temporary files; a crash between create and rename leaves one behind.
pub const TEMP_PREFIX: &str = ".bmad-tmp-";

/// Replace `path` with `bytes`, creating its directory; `mode` sets permissions (for hooks).
pub fn write_atomically(path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    if let Some(mode) = mode {
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(mode))?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

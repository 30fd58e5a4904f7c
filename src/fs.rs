//! File writes that a crash cannot tear: a temporary file in the same directory, renamed over
//! the target in one step. Readers see the old content or the new, never half of either.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The prefix of the temporary files; a crash between create and rename leaves one behind.
pub const TEMP_PREFIX: &str = ".bmad-tmp-";

/// Replace `path` with `bytes`, creating its directory; `mode` sets permissions (for hooks).
///
/// Without `mode`, an existing file keeps its permissions and a new one gets what the umask
/// gives any new file (not the 0600 of a private temporary file). A symlink stays a symlink:
/// the file it points to is replaced.
pub fn write_atomically(path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    let path = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(path)?,
        _ => path.to_path_buf(),
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let existing = std::fs::metadata(&path).ok().map(|m| m.permissions());
    let (tmp_path, mut file) = create_temporary(dir)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| match (mode, existing) {
            (Some(mode), _) => {
                std::fs::set_permissions(&tmp_path, std::fs::Permissions::from_mode(mode))
            }
            (None, Some(perms)) => std::fs::set_permissions(&tmp_path, perms),
            (None, None) => Ok(()),
        })
        .and_then(|()| std::fs::rename(&tmp_path, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp_path);
    }
    written
}

/// Replace `path` with `bytes` as [`write_atomically`] does, without waiting for the disk:
/// for caches, which a reader checks and rebuilds when a crash tore them or they are missing.
///
/// The old file is unlinked first: ext4 flushes a file renamed over an existing one
/// (`auto_da_alloc`), which cost a checkpoint a millisecond for a cache nobody needs durable.
pub fn replace_unsynced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let (tmp_path, mut file) = create_temporary(dir)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        })
        .and_then(|()| std::fs::rename(&tmp_path, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp_path);
    }
    written
}

/// Replace the file at `path` with `bytes` as a rename (readers see the old or the new
/// content), keeping its permissions, without waiting for the disk: for a worktree file,
/// which git's own checkout does not wait for either.
pub fn replace_keeping_mode(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_keeping_mode_with(path, |mut file| file.write_all(bytes))
}

/// [`replace_keeping_mode`] with what `write` writes into the new file.
pub fn replace_keeping_mode_with(
    path: &Path,
    write: impl FnOnce(std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let permissions = std::fs::symlink_metadata(path)?.permissions();
    let (tmp_path, file) = create_temporary(dir)?;
    let written = write(file)
        .and_then(|()| std::fs::set_permissions(&tmp_path, permissions))
        .and_then(|()| std::fs::rename(&tmp_path, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp_path);
    }
    written
}

/// Make `path` hold `bytes`, writing over the file in place (created if missing), not
/// waiting for the disk: for a cache whose content says whether it is whole, since a crash
/// or a second writer can leave it half old, half new. No file is created or deleted for it
/// (each costs more than the write on some filesystems).
pub fn overwrite_unsynced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(PRIVATE_FILE_FLAGS)
        .open(path)
        .and_then(regular)?;
    file.write_all_at(bytes, 0)?;
    file.set_len(bytes.len() as u64)
}

/// Open one of git-bmad's own files in a git dir for reading, if it is a regular file. What
/// else may stand in its place must not stop the command: a FIFO would block the open and
/// a device would feed bytes without end, and a symlink is never git-bmad's.
pub fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(PRIVATE_FILE_FLAGS)
        .open(path)
        .and_then(regular)
}

/// The bytes of one of git-bmad's own files, read as [`open_private`] opens it.
pub fn read_private(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open_private(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Not waiting on a FIFO, not following a symlink.
const PRIVATE_FILE_FLAGS: i32 = libc::O_NONBLOCK | libc::O_NOFOLLOW;

/// `file`, if it is a regular file.
fn regular(file: std::fs::File) -> std::io::Result<std::fs::File> {
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ))
    }
}

/// Put `bytes` at `path` read-only, as git puts a pack file: written under a name starting
/// `tmp_` (which `git gc` clears when a crash leaves one behind), then renamed into place.
/// Not waited onto disk, as loose objects are not.
pub fn place_read_only(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let (tmp_path, mut file) = create_temporary_as(dir, "tmp_bmad_")?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.set_permissions(std::fs::Permissions::from_mode(0o444)))
        .and_then(|()| std::fs::rename(&tmp_path, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp_path);
    }
    written
}

/// A new file named `TEMP_PREFIX…` in `dir`, created exclusively with the default mode
/// (0666 less the umask).
fn create_temporary(dir: &Path) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    create_temporary_as(dir, TEMP_PREFIX)
}

fn create_temporary_as(
    dir: &Path,
    prefix: &str,
) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    let mut last = None;
    for attempt in 0..100u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let name = format!("{prefix}{}-{nanos:x}-{attempt}", std::process::id());
        let path = dir.join(name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary file name")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_modes_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("shared.md");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&file, b"new", None).unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            (std::fs::read_to_string(&file).unwrap().as_str(), mode),
            ("new", 0o640)
        );

        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink("shared.md", &link).unwrap();
        write_atomically(&link, b"through the link", None).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "through the link");

        // A new file gets the mode any new file gets under the umask (as `std::fs::write`
        // makes one), never the 0600 of a private temporary file.
        let fresh = dir.path().join("fresh.md");
        write_atomically(&fresh, b"x", None).unwrap();
        let probe = dir.path().join("probe");
        std::fs::write(&probe, "x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&fresh), mode(&probe));
        std::fs::remove_file(&probe).unwrap();
        assert!(std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().starts_with(TEMP_PREFIX)));
    }
}

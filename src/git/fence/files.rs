//! What a fence reads of the common dir and of its layer: the files of a copied part, read
//! without following or blocking on anything the step left.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The files of `name` worth a copy: git never runs a hook's `.sample`.
pub(super) fn watched(
    name: &str,
    mut files: BTreeMap<String, Vec<u8>>,
) -> BTreeMap<String, Vec<u8>> {
    if name == "hooks" {
        files.retain(|file, _| !file.ends_with(".sample"));
    }
    files
}

/// The largest file of the layer's copies that is read (a ref is 41 bytes).
const LAYER_FILE_LIMIT: u64 = 1 << 20;
/// What stands for a layer file that is not read: differs from any file's content.
const NOT_PLAIN: &[u8] = b"\0not a plain file";

/// The files at `path` (lock files aside), by path relative to it: `""` for a file itself;
/// none when nothing is there. `known` gives a file's content without reading it, when it
/// can tell from its metadata.
pub(super) fn files(
    path: &Path,
    layer: bool,
    known: impl Fn(&str, &std::fs::Metadata) -> Option<Vec<u8>>,
) -> std::io::Result<BTreeMap<String, Vec<u8>>> {
    let read = |relative: &str, path: &Path| -> std::io::Result<Option<Vec<u8>>> {
        // In the step's layer nothing is followed or opened but a plain file of a ref's or a
        // config's size: a symlink there could name any file of the user's (which would
        // then be read, and shown), a fifo would block git-bmad.
        let meta = if layer {
            std::fs::symlink_metadata(path)
        } else {
            std::fs::metadata(path)
        };
        match meta {
            Ok(meta) if layer && !(meta.is_file() && meta.len() <= LAYER_FILE_LIMIT) => {
                Ok(Some(NOT_PLAIN.to_vec()))
            }
            Ok(meta) => match known(relative, &meta) {
                Some(content) => Ok(Some(content)),
                None => std::fs::read(path).map(Some),
            },
            // A dangling symlink (a hook manager's, say) has nothing to copy.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    };
    let mut seen = BTreeMap::new();
    if path.is_file() {
        seen.extend(read("", path)?.map(|c| (String::new(), c)));
        return Ok(seen);
    }
    let mut pending = vec![(path.to_owned(), String::new())];
    let walk = |seen: &mut BTreeMap<String, Vec<u8>>, pending: &mut Vec<(PathBuf, String)>| {
        while let Some((dir, prefix)) = pending.pop() {
            for entry in std::fs::read_dir(&dir)? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let relative = format!("{prefix}{name}");
                if entry.file_type()?.is_dir() {
                    pending.push((entry.path(), format!("{relative}/")));
                } else if !name.ends_with(".lock") {
                    if let Some(content) = read(&relative, &entry.path())? {
                        seen.insert(relative, content);
                    }
                }
            }
        }
        Ok::<(), std::io::Error>(())
    };
    match walk(&mut seen, &mut pending) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && seen.is_empty() => Ok(seen),
        other => other.map(|()| seen),
    }
}

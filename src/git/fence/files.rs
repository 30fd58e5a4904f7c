//! What a fence reads of the common dir and of its layer: the files of a copied part, read
//! without following or blocking on anything the step left.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::git::error::{Error, Result};

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

impl crate::git::Repo {
    /// Where a copy of the repository's config without its credentials is kept, when the
    /// config carries one (see [`without_credentials`]): what every wall shows in its place.
    /// Written only when it is not already what it must be.
    pub fn config_without_credentials(&self) -> Result<Option<PathBuf>> {
        let real = self.common_dir().join("config");
        let Ok(config) = std::fs::read(&real) else {
            return Ok(None);
        };
        let clean = without_credentials(&config);
        if clean == config {
            return Ok(None);
        }
        let copy = self.common_dir().join("bmad/config-without-credentials");
        if std::fs::read(&copy).ok().as_ref() != Some(&clean) {
            let io = |e| Error::Io {
                op: "could not write",
                path: copy.clone(),
                source: e,
            };
            std::fs::create_dir_all(self.common_dir().join("bmad")).map_err(io)?;
            crate::fs::write_atomically(&copy, &clean, Some(0o644)).map_err(io)?;
        }
        Ok(Some(copy))
    }
}

/// A repository config as a step's copy holds it: without the credentials a config can
/// carry (an `http.<url>.extraheader`, as actions/checkout persists the job's token; a
/// password in a remote's URL), so that the step's git, and the step, never read them.
pub(super) fn without_credentials(config: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(config);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let key: String = trimmed
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect::<String>()
            .to_ascii_lowercase();
        if key == "extraheader" {
            continue;
        }
        match (key.as_str(), line.find("://"), line.rfind('@')) {
            // A password (`user:secret@`), not a user alone (`ssh://git@host`).
            ("url" | "pushurl", Some(scheme), Some(at))
                if at > scheme && line[scheme + 3..at].contains(':') =>
            {
                out.push_str(&line[..scheme + 3]);
                out.push_str(&line[at + 1..]);
            }
            _ => out.push_str(line),
        }
    }
    out.into_bytes()
}

/// Make `root` (a copied part of the common dir: a folder, or one file) hold exactly
/// `before`, each file written as `write` makes it; what is there already and right stays
/// (a file made and removed each round costs far more than one read). Anything else there,
/// whatever the last step left (a lock, a fifo, a symlink, a folder where a ref goes), is
/// removed without being followed.
pub(super) fn refresh(
    root: &Path,
    before: &BTreeMap<String, Vec<u8>>,
    right: impl Fn(&str, &Path) -> bool,
    write: impl Fn(&str, &Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut kept = std::collections::BTreeSet::new();
    let mut pending = vec![(root.to_owned(), String::new())];
    while let Some((path, relative)) = pending.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if before.contains_key(&relative) {
                std::fs::remove_dir_all(&path)?;
                continue;
            }
            for entry in std::fs::read_dir(&path)? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let child = match relative.as_str() {
                    "" => name,
                    prefix => format!("{prefix}/{name}"),
                };
                pending.push((entry.path(), child));
            }
            continue;
        }
        let plain = meta.is_file() && meta.len() <= LAYER_FILE_LIMIT;
        let same = plain
            && before
                .get(&relative)
                .is_some_and(|content| std::fs::read(&path).is_ok_and(|now| &now == content))
            && right(&relative, &path);
        if same {
            kept.insert(relative);
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    for file in before.keys().filter(|f| !kept.contains(*f)) {
        let path = match file.as_str() {
            "" => root.to_owned(),
            file => root.join(file),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        write(file, &path)?;
    }
    Ok(())
}

/// Remove all of the layer at `layer` but its copies.
pub(super) fn clear_but_copies(layer: &Path) -> Result<()> {
    let io = |e: std::io::Error| Error::Io {
        op: "could not remove the fence",
        path: layer.to_owned(),
        source: e,
    };
    for entry in std::fs::read_dir(layer).map_err(io)? {
        let entry = entry.map_err(io)?;
        if entry.file_name() == "copies" {
            continue;
        }
        match entry.file_type().map_err(io)?.is_dir() {
            true => std::fs::remove_dir_all(entry.path()).map_err(io)?,
            false => std::fs::remove_file(entry.path()).map_err(io)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_configs_copy_keeps_no_credential() {
        let config = b"[core]\n\tbare = false\n[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA==\n[remote \"origin\"]\n\turl = https://x-access-token:ghs_secret@github.com/o/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[remote \"mirror\"]\n\turl = git@github.com:o/r.git\n";
        let copy = String::from_utf8(without_credentials(config)).unwrap();
        assert!(
            !copy.contains("ghs_secret") && !copy.contains("eC1hY2Nl"),
            "{copy}"
        );
        assert!(
            copy.contains("\turl = https://github.com/o/r.git\n"),
            "{copy}"
        );
        // An ssh remote names a user, not a secret: kept as it is.
        assert!(copy.contains("\turl = git@github.com:o/r.git\n"), "{copy}");
        let ssh = without_credentials(b"\turl = ssh://git@example.com/r.git\n");
        assert_eq!(ssh, b"\turl = ssh://git@example.com/r.git\n");
        assert!(copy.contains("[core]\n\tbare = false\n") && copy.contains("fetch = +refs"));
    }

    #[test]
    fn a_refreshed_copy_holds_exactly_what_it_should_and_keeps_what_was_right() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("heads");
        let outside = dir.path().join("secret");
        std::fs::write(&outside, "key").unwrap();
        std::fs::create_dir_all(root.join("feature")).unwrap();
        std::fs::write(root.join("main"), "a\n").unwrap();
        std::fs::write(root.join("stale"), "b\n").unwrap();
        std::fs::write(root.join("topic.lock"), "c\n").unwrap();
        std::fs::create_dir_all(root.join("dir-where-a-ref-goes")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("feature/x")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let main_inode = std::fs::metadata(root.join("main")).unwrap().ino();
        let before: BTreeMap<String, Vec<u8>> = [
            ("main", "a\n"),
            ("feature/x", "d\n"),
            ("dir-where-a-ref-goes", "e\n"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect();
        refresh(
            &root,
            &before,
            |_, _| true,
            |file, path| std::fs::write(path, &before[file]),
        )
        .unwrap();
        let now = files(&root, true, |_, _| None).unwrap();
        assert_eq!(now, before);
        assert!(!root.join("topic.lock").exists() && !root.join("fifo").exists());
        assert_eq!(
            std::fs::metadata(root.join("main")).unwrap().ino(),
            main_inode
        );
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "key");
    }
}
